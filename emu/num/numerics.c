/*
 * numerics.c: the dtype table (sizes, names, aliases), the counter-based
 * random generator, integer saturation, and the scalar conversions of
 * numerics.h. The vector loops (and stochastic stores) live in
 * numerics_vec.c; the per-element kernels in numerics_int.h.
 */
#include "emu/num/numerics.h"

#include <math.h>
#include <string.h>
#include <strings.h>

#include "emu/num/numerics_int.h"

/* One data type. */
struct num_type {
    size_t size;       /* bytes per element; 0 marks an unused value */
    bool is_float;     /* a floating-point format */
    const char *name;  /* canonical name */
};

static const struct num_type num_types[NUM_DT_COUNT] = {
    [NUM_DT_UINT64] = {8, false, "uint64"}, [NUM_DT_INT8] = {1, false, "int8"},
    [NUM_DT_UINT8] = {1, false, "uint8"},   [NUM_DT_INT16] = {2, false, "int16"},
    [NUM_DT_UINT16] = {2, false, "uint16"}, [NUM_DT_BF16] = {2, true, "bf16"},
    [NUM_DT_FP16] = {2, true, "fp16"},      [NUM_DT_INT32] = {4, false, "int32"},
    [NUM_DT_UINT32] = {4, false, "uint32"}, [NUM_DT_FP32] = {4, true, "fp32"},
    [NUM_DT_FP32R] = {4, true, "fp32r"},    [NUM_DT_INT64] = {8, false, "int64"},
    [NUM_DT_FP8_E3] = {1, true, "fp8_e3"},  [NUM_DT_FP8_E4] = {1, true, "fp8_e4"},
    [NUM_DT_FP8_E5] = {1, true, "fp8_e5"},
    [NUM_DT_FP8_E4M3FN] = {1, true, "fp8_e4m3fn"}, [NUM_DT_FP8_E8M0] = {1, true, "fp8_e8m0"},
    [NUM_DT_FP8_E5M2_X4] = {4, false, "fp8_e5m2_x4"},
    [NUM_DT_FP8_E4M3FN_X4] = {4, false, "fp8_e4m3fn_x4"},
    [NUM_DT_FP4_E2M1_X4] = {2, false, "fp4_e2m1fn_x4"},
};

/* Another accepted spelling of a dtype name. */
struct num_alias {
    const char *name;  /* the alias, compared without case */
    uint32_t dtype;    /* the dtype it names */
};

static const struct num_alias num_aliases[] = {
    {"float32", NUM_DT_FP32},      {"f32", NUM_DT_FP32},        {"float", NUM_DT_FP32},
    {"float32r", NUM_DT_FP32R},    {"f32r", NUM_DT_FP32R},      {"bfloat16", NUM_DT_BF16},
    {"float16", NUM_DT_FP16},      {"f16", NUM_DT_FP16},        {"half", NUM_DT_FP16},
    {"fp8e3", NUM_DT_FP8_E3},      {"float8_e3m4", NUM_DT_FP8_E3}, {"e3m4", NUM_DT_FP8_E3},
    {"fp8e4", NUM_DT_FP8_E4},      {"float8_e4m3", NUM_DT_FP8_E4}, {"e4m3", NUM_DT_FP8_E4},
    {"fp8e5", NUM_DT_FP8_E5},      {"float8_e5m2", NUM_DT_FP8_E5}, {"e5m2", NUM_DT_FP8_E5},
    {"i8", NUM_DT_INT8},           {"i16", NUM_DT_INT16},       {"i32", NUM_DT_INT32},
    {"i64", NUM_DT_INT64},         {"u8", NUM_DT_UINT8},        {"u16", NUM_DT_UINT16},
    {"u32", NUM_DT_UINT32},        {"u64", NUM_DT_UINT64},
    {"float8_e4m3fn", NUM_DT_FP8_E4M3FN}, {"e4m3fn", NUM_DT_FP8_E4M3FN},
    {"float8_e8m0fnu", NUM_DT_FP8_E8M0}, {"e8m0", NUM_DT_FP8_E8M0},
    {"float8_e5m2_x4", NUM_DT_FP8_E5M2_X4}, {"float8_e4m3fn_x4", NUM_DT_FP8_E4M3FN_X4},
    {"float4_e2m1fn_x4", NUM_DT_FP4_E2M1_X4},
};

size_t num_dtype_size(uint32_t dtype)
{
    return dtype < NUM_DT_COUNT ? num_types[dtype].size : 0;
}

const char *num_dtype_name(uint32_t dtype)
{
    return num_dtype_size(dtype) ? num_types[dtype].name : NULL;
}

int num_dtype_parse(const char *name)
{
    if (name == NULL)
        return -1;
    for (uint32_t d = 0; d < NUM_DT_COUNT; d++)
        if (num_types[d].size && strcasecmp(name, num_types[d].name) == 0)
            return (int)d;
    for (size_t i = 0; i < sizeof num_aliases / sizeof num_aliases[0]; i++)
        if (strcasecmp(name, num_aliases[i].name) == 0)
            return (int)num_aliases[i].dtype;
    return -1;
}

bool num_dtype_is_float(uint32_t dtype)
{
    return num_dtype_size(dtype) && num_types[dtype].is_float;
}

/* ---- random bits ---------------------------------------------------------- */

uint64_t num_rng_u64(uint64_t seed, uint64_t index)
{
    return numi_rng(numi_mix64(seed), index);
}

/* ---- scalar conversions --------------------------------------------------- */

float num_bf16_to_f32(uint16_t h)
{
    return numi_float((uint32_t)h << 16);
}

uint16_t num_f32_to_bf16(float x)
{
    return (uint16_t)numi_enc_bf16(numi_bits(x), false);
}

float num_f16_to_f32(uint16_t h)
{
    return numi_float(numi_dec(h, 5, 10));
}

uint16_t num_f32_to_f16(float x)
{
    return (uint16_t)numi_enc_rne(numi_bits(x), 5, 10, false);
}

float num_fp8_to_f32(uint32_t dtype, uint8_t v)
{
    switch (dtype) {
    case NUM_DT_FP8_E3: return numi_float(numi_dec(v, 3, 4));
    case NUM_DT_FP8_E4: return numi_float(numi_dec(v, 4, 3));
    case NUM_DT_FP8_E5: return numi_float(numi_dec(v, 5, 2));
    default: return NAN;
    }
}

uint8_t num_f32_to_fp8(uint32_t dtype, float x)
{
    switch (dtype) {
    case NUM_DT_FP8_E3: return (uint8_t)numi_enc_rne(numi_bits(x), 3, 4, false);
    case NUM_DT_FP8_E4: return (uint8_t)numi_enc_rne(numi_bits(x), 4, 3, false);
    case NUM_DT_FP8_E5: return (uint8_t)numi_enc_rne(numi_bits(x), 5, 2, false);
    default: return 0;
    }
}

int64_t numi_sat_signed(uint32_t dtype, float r)
{
    switch (dtype) {
    case NUM_DT_INT8: return numi_sat_i64(r, -128.0f, 128.0f, INT8_MIN, INT8_MAX);
    case NUM_DT_INT16: return numi_sat_i64(r, -32768.0f, 32768.0f, INT16_MIN, INT16_MAX);
    case NUM_DT_INT32:
        return numi_sat_i64(r, -0x1p31f, 0x1p31f, INT32_MIN, INT32_MAX);
    case NUM_DT_INT64:
        return numi_sat_i64(r, -0x1p63f, 0x1p63f, INT64_MIN, INT64_MAX);
    default: return 0;
    }
}

uint64_t numi_sat_unsigned(uint32_t dtype, float r)
{
    switch (dtype) {
    case NUM_DT_UINT8: return numi_sat_u64(r, 256.0f, UINT8_MAX);
    case NUM_DT_UINT16: return numi_sat_u64(r, 65536.0f, UINT16_MAX);
    case NUM_DT_UINT32: return numi_sat_u64(r, 0x1p32f, UINT32_MAX);
    case NUM_DT_UINT64: return numi_sat_u64(r, 0x1p64f, UINT64_MAX);
    default: return 0;
    }
}

int64_t num_f32_to_int(uint32_t dtype, float x)
{
    return numi_sat_signed(dtype, numi_rint(x));
}

uint64_t num_f32_to_uint(uint32_t dtype, float x)
{
    return numi_sat_unsigned(dtype, numi_rint(x));
}

float num_to_f32(uint32_t dtype, const void *src)
{
    float x = 0.0f;
    if (num_dtype_size(dtype) && src != NULL)
        num_load_f32(&x, src, dtype, 1, 1);
    return x;
}

emu_status num_from_f32(uint32_t dtype, void *dst, float x, const struct num_round *rnd,
                        uint64_t i)
{
    if (rnd == NULL)
        return num_store_f32(dst, dtype, 1, &x, 1, NULL);
    struct num_round one = *rnd;
    one.index += i;
    return num_store_f32(dst, dtype, 1, &x, 1, &one);
}
