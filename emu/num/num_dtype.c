/*
 * num_dtype.c: the numerics' dtype table, made from emu/num/dtype_list.h:
 * sizes, kinds, canonical names and the other spellings num_dtype_parse
 * accepts. The lowest file of emu/num: every other one uses it.
 */
#include "emu/num/numerics.h"

#include <assert.h>
#include <strings.h>

/* One data type. */
struct num_type {
    size_t size;       /* bytes per element; 0 marks an unused value */
    bool is_float;     /* a floating-point format */
    bool is_mx;        /* a NeuronCore-v4 format of emu/num/mx.c */
    bool is_packed;    /* a packed x4 container */
    const char *name;  /* canonical name */
};

#define NUM_TYPE_ROW(num, isa, code, size, fl, mx, packed, name, asm) \
    [NUM_DT_##num] = {size, fl, mx, packed, name},
static const struct num_type num_types[NUM_DT_COUNT] = {EMU_DTYPES(NUM_TYPE_ROW)};
#undef NUM_TYPE_ROW

/* The list's codes run from 1 with no gap: one row per code. */
#define NUM_TYPE_ONE(...) +1
static_assert(0 EMU_DTYPES(NUM_TYPE_ONE) == NUM_DT_COUNT - 1, "dtype_list.h has a gap");
#undef NUM_TYPE_ONE

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

bool num_dtype_is_mx(uint32_t dtype)
{
    return num_dtype_size(dtype) && num_types[dtype].is_mx;
}

bool num_dtype_is_packed(uint32_t dtype)
{
    return num_dtype_size(dtype) && num_types[dtype].is_packed;
}
