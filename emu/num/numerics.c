/*
 * numerics.c: the counter-based random generator, integer saturation,
 * and the scalar conversions of numerics.h that need no vector loop. The
 * dtype table is num_dtype.c; the vector loops (and stochastic stores,
 * and the one-element num_to_f32/num_from_f32 built on them) live in
 * numerics_vec.c; the per-element kernels in numerics_int.h.
 */
#include "emu/num/numerics.h"

#include <math.h>

#include "emu/num/numerics_int.h"

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
