/*
 * mx.c: the NeuronCore-v4 number formats of mx.h: float8_e4m3fn,
 * float8_e8m0fnu, fp4 e2m1 and the packed x4 containers, and the vector
 * loads and stores numerics_vec.c hands over for them.
 *
 * The formats without infinities share one encoder (mx_enc): the fp32
 * significand is shifted down to the target's unit in the last place
 * (normal or subnormal), rounded to nearest even or stochastically, and
 * the code is rebuilt from exponent and significand, so a carry out of
 * the significand moves into the exponent by plain addition.
 */
#include "emu/num/mx.h"

#include <math.h>
#include <string.h>

#include "emu/log.h"
#include "emu/num/numerics_int.h"

#define MX_OVERFLOW 0xffffu /* mx_enc: the rounded value exceeds max_code */

/* A finite-only E/M format. */
struct mx_fmt {
    int e;              /* exponent bits */
    int m;              /* mantissa bits */
    uint32_t max_code;  /* largest finite magnitude code */
};

static const struct mx_fmt mx_e4m3fn = {4, 3, 0x7e};
static const struct mx_fmt mx_e2m1 = {2, 1, 0x7};

/* Magnitude code of |x| (finite) in format f, rounded to nearest even, or
 * stochastically when sr (R's low bits decide); MX_OVERFLOW above max. */
static uint32_t mx_enc(uint32_t u, const struct mx_fmt *f, bool sr, uint64_t R)
{
    int bias = (1 << (f->e - 1)) - 1, emin = 1 - bias;
    uint32_t fe = (u >> 23) & 0xffu;
    int e2 = fe ? (int)fe - 127 : -126;
    uint64_t mant = (u & 0x7fffffu) | (fe ? 0x800000u : 0u);
    if (mant == 0)
        return 0;
    int shift = 23 - f->m + (e2 < emin ? emin - e2 : 0);
    if (shift >= 64)
        return 0;
    uint64_t r = mant >> shift, rem = mant & ((1ull << shift) - 1ull);
    bool up;
    if (sr)
        up = (R & ((1ull << shift) - 1ull)) < rem;
    else
        up = shift > 0 && (rem > (1ull << (shift - 1)) ||
                           (rem == (1ull << (shift - 1)) && (r & 1u)));
    r += up;
    uint64_t code = e2 >= emin ? ((uint64_t)(e2 + bias) << f->m) + r - (1ull << f->m) : r;
    return code > f->max_code ? MX_OVERFLOW : (uint32_t)code;
}

/* ---- float8_e4m3fn ----------------------------------------------------------- */

float num_e4m3fn_to_f32(uint8_t v)
{
    uint32_t e = (v >> 3) & 0xfu, m = v & 7u;
    float mag;
    if (e == 15 && m == 7)
        mag = NAN;
    else if (e == 0)
        mag = ldexpf((float)m, -9);
    else
        mag = ldexpf((float)(8 + m), (int)e - 10);
    return (v & 0x80u) ? -mag : mag;
}

static uint8_t mx_e4m3fn_enc(float x, bool sat, bool sr, uint64_t R)
{
    uint32_t u = numi_bits(x), sign = (u >> 24) & 0x80u;
    if (isnan(x))
        return (uint8_t)(sign | 0x7fu);
    uint32_t c = isinf(x) ? MX_OVERFLOW : mx_enc(u & 0x7fffffffu, &mx_e4m3fn, sr, R);
    if (c == MX_OVERFLOW)
        c = sat ? mx_e4m3fn.max_code : 0x7fu;
    return (uint8_t)(sign | c);
}

uint8_t num_f32_to_e4m3fn(float x, bool sat)
{
    return mx_e4m3fn_enc(x, sat, false, 0);
}

uint8_t num_f32_to_e4m3fn_sr(float x, bool sat, uint64_t R)
{
    return mx_e4m3fn_enc(x, sat, true, R);
}

/* ---- float8_e8m0fnu ------------------------------------------------------------ */

float num_e8m0_to_f32(uint8_t v)
{
    return v == NUM_E8M0_NAN ? NAN : ldexpf(1.0f, (int)v - 127);
}

uint8_t num_f32_to_e8m0(float x, bool sat)
{
    if (isnan(x) || x < 0.0f)
        return NUM_E8M0_NAN;
    if (isinf(x))
        return sat ? 0xfe : NUM_E8M0_NAN;
    uint32_t u = numi_bits(x), fe = (u >> 23) & 0xffu, fm = u & 0x7fffffu;
    if (fe == 0)
        return 0x00; /* zero and fp32 subnormals: below 2^-126, the nearest code is 2^-127 */
    /* between 2^e and 2^(e+1) the midpoint is 1.5 * 2^e; ties go to the even code */
    int code = (int)fe - 127 + 127;
    if (fm > 0x400000u || (fm == 0x400000u && (code & 1)))
        code++;
    if (code > 0xfe)
        return sat ? 0xfe : NUM_E8M0_NAN;
    return (uint8_t)code;
}

/* ---- fp4 e2m1 ------------------------------------------------------------------ */

float num_fp4_to_f32(uint8_t nibble)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float v = mag[nibble & 7u];
    return (nibble & 8u) ? -v : v;
}

uint8_t num_f32_to_fp4(float x)
{
    uint32_t u = numi_bits(x), sign = (u >> 28) & 0x8u;
    if (isnan(x) || isinf(x))
        return (uint8_t)(sign | mx_e2m1.max_code);
    uint32_t c = mx_enc(u & 0x7fffffffu, &mx_e2m1, false, 0);
    return (uint8_t)(sign | (c == MX_OVERFLOW ? mx_e2m1.max_code : c));
}

/* ---- packed containers ------------------------------------------------------------ */

uint32_t num_packed_elem(uint32_t dtype)
{
    switch (dtype) {
    case NUM_DT_FP8_E5M2_X4: return NUM_DT_FP8_E5;
    case NUM_DT_FP8_E4M3FN_X4: return NUM_DT_FP8_E4M3FN;
    case NUM_DT_FP4_E2M1_X4: return NUM_ELEM_FP4_E2M1;
    default: return 0;
    }
}

void num_x4_unpack(uint32_t dtype, const uint8_t *p, float out[NUM_X4_LANES])
{
    for (int j = 0; j < NUM_X4_LANES; j++) {
        switch (dtype) {
        case NUM_DT_FP8_E5M2_X4: out[j] = num_fp8_to_f32(NUM_DT_FP8_E5, p[j]); break;
        case NUM_DT_FP8_E4M3FN_X4: out[j] = num_e4m3fn_to_f32(p[j]); break;
        case NUM_DT_FP4_E2M1_X4: out[j] = num_fp4_to_f32((uint8_t)(p[j / 2] >> (4 * (j % 2)))); break;
        default: out[j] = NAN; break;
        }
    }
}

void num_x4_pack(uint32_t dtype, const float in[NUM_X4_LANES], bool sat, uint8_t *p)
{
    if (dtype == NUM_DT_FP4_E2M1_X4) {
        p[0] = (uint8_t)(num_f32_to_fp4(in[0]) | (num_f32_to_fp4(in[1]) << 4));
        p[1] = (uint8_t)(num_f32_to_fp4(in[2]) | (num_f32_to_fp4(in[3]) << 4));
        return;
    }
    for (int j = 0; j < NUM_X4_LANES; j++) {
        if (dtype == NUM_DT_FP8_E4M3FN_X4)
            p[j] = num_f32_to_e4m3fn(in[j], sat);
        else
            p[j] = (uint8_t)numi_enc_rne(numi_bits(in[j]), 5, 2, sat);
    }
}

/* ---- the vector entry points ------------------------------------------------------ */

/* A packed type where numbers were expected: one log line. */
static emu_status mx_refuse_packed(uint32_t dtype)
{
    LOG_ERROR("EMU", "%s packs four values in one element: only nc_matmul_mx, quantize_mx "
              "and bit copies take it", num_dtype_name(dtype));
    return EMU_INVALID;
}

emu_status num_mx_load_f32(float *dst, const void *src, uint32_t dtype, ptrdiff_t stride,
                           size_t n)
{
    if (num_dtype_is_packed(dtype))
        return mx_refuse_packed(dtype);
    const uint8_t *s = src;
    for (size_t i = 0; i < n; i++) {
        uint8_t v = s[(ptrdiff_t)i * stride];
        dst[i] = dtype == NUM_DT_FP8_E8M0 ? num_e8m0_to_f32(v) : num_e4m3fn_to_f32(v);
    }
    return EMU_OK;
}

emu_status num_mx_store_f32(void *dst, uint32_t dtype, ptrdiff_t stride, const float *src,
                            size_t n, const struct num_round *rnd)
{
    if (num_dtype_is_packed(dtype))
        return mx_refuse_packed(dtype);
    uint8_t *d = dst;
    bool sat = rnd != NULL && rnd->saturate;
    bool sr = rnd != NULL && rnd->mode == NUM_ROUND_STOCHASTIC;
    uint64_t key = sr ? numi_mix64(rnd->seed) : 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = d + (ptrdiff_t)i * stride;
        if (dtype == NUM_DT_FP8_E8M0)
            *p = num_f32_to_e8m0(src[i], sat);
        else if (sr)
            *p = num_f32_to_e4m3fn_sr(src[i], sat, numi_rng(key, rnd->index + i));
        else
            *p = num_f32_to_e4m3fn(src[i], sat);
    }
    return EMU_OK;
}
