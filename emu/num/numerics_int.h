/*
 * numerics_int.h: the per-element kernels shared by numerics.c (scalar API)
 * and numerics_vec.c (vector loops, stochastic stores). Private to the
 * numerics module.
 *
 * Every small float format here is IEEE-style and described by two
 * compile-time numbers: E exponent bits and M mantissa bits (bias
 * 2^(E-1)-1, all-ones exponent = inf/NaN). The kernels are branch-free so
 * that loops over them vectorise.
 */
#ifndef TRNEMU_EMU_NUMERICS_INT_H
#define TRNEMU_EMU_NUMERICS_INT_H

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The fp32 tricks below need fp32 arithmetic done in fp32 (not x87). */
#if FLT_EVAL_METHOD != 0
#error "numerics needs FLT_EVAL_METHOD == 0 (SSE or other IEEE single arithmetic)"
#endif

#define NUMI_INLINE static inline __attribute__((always_inline))

NUMI_INLINE uint32_t numi_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

NUMI_INLINE float numi_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* All ones when c, else 0: selects written as masks stay branch-free, so
 * the fp32 operations feeding them are never made conditional (GCC will
 * not if-convert a conditional fp operation that may trap). */
NUMI_INLINE uint32_t numi_mask(bool c)
{
    return 0u - (uint32_t)c;
}

NUMI_INLINE uint32_t numi_sel(uint32_t mask, uint32_t a, uint32_t b)
{
    return (a & mask) | (b & ~mask);
}

/* fp32 bits -> bf16 bits, RNE; NaN keeps its top payload bits, made quiet.
 * Overflow carries into the exponent and gives inf, as IEEE says. */
NUMI_INLINE uint32_t numi_enc_bf16(uint32_t u, bool sat)
{
    uint32_t a = u & 0x7fffffffu;
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    if (sat)
        r = (r & 0x7fffu) == 0x7f80u ? r - 1u : r;
    return a > 0x7f800000u ? (u >> 16) | 0x40u : r;
}

/* fp32 bits -> E/M format bits, RNE. Overflow (and inf) give inf, or the
 * largest finite value when sat; NaN gives a quiet NaN with the top payload
 * bits. Needs the default rounding mode (round to nearest); DAZ/FTZ do not
 * change the results (fp32 subnormal inputs round to 0 in every E <= 5
 * format, and the fp32 sum below is always normal). Not for bf16 (E = 8). */
NUMI_INLINE uint32_t numi_enc_rne(uint32_t u, int E, int M, bool sat)
{
    const uint32_t bias = (1u << (E - 1)) - 1u;
    const uint32_t sh = 23u - (uint32_t)M;
    const uint32_t inf = ((1u << E) - 1u) << M;
    const uint32_t sign = (u >> 31) << (E + M);
    const uint32_t a = u & 0x7fffffffu;
    /* normal result: rebias the exponent, round the low sh bits away */
    uint32_t nb = a - ((127u - bias) << 23);
    uint32_t nr = (nb + ((1u << (sh - 1)) - 1u) + ((nb >> sh) & 1u)) >> sh;
    /* subnormal result: an fp32 add whose ulp is the format's smallest
     * subnormal does the rounding; the difference counts those units */
    const uint32_t magic = (151u - bias - (uint32_t)M) << 23;
    uint32_t sr = numi_bits(numi_float(a) + numi_float(magic)) - magic;
    uint32_t r = numi_sel(numi_mask(a < ((128u - bias) << 23)), sr, nr);
    r = numi_sel(numi_mask(r >= inf), sat ? inf - 1u : inf, r);
    uint32_t nan = inf | (1u << (M - 1)) | ((a >> sh) & ((1u << M) - 1u));
    return sign | numi_sel(numi_mask(a > 0x7f800000u), nan, r);
}

/* E/M format bits -> fp32 bits, exact; NaN comes back quiet with its payload.
 * For E <= 5 (every subnormal becomes a normal fp32). */
NUMI_INLINE uint32_t numi_dec(uint32_t h, int E, int M)
{
    const uint32_t bias = (1u << (E - 1)) - 1u;
    const uint32_t sh = 23u - (uint32_t)M;
    const uint32_t emax = (1u << E) - 1u;
    uint32_t sign = ((h >> (E + M)) & 1u) << 31;
    uint32_t e = (h >> M) & emax;
    uint32_t m = h & ((1u << M) - 1u);
    uint32_t norm = ((e + 127u - bias) << 23) | (m << sh);
    uint32_t spec = 0x7f800000u | (m << sh) | (m ? 0x400000u : 0u);
    /* subnormal: m units of 2^(1-bias-M); both factors exact in fp32 */
    uint32_t sub = numi_bits((float)m * numi_float((128u - bias - (uint32_t)M) << 23));
    uint32_t r = numi_sel(numi_mask(e == emax), spec, norm);
    return sign | numi_sel(numi_mask(e == 0), sub, r);
}

/* Round to nearest integer, ties to even, exact for every fp32 (NaN and
 * values >= 2^23 come back unchanged). */
NUMI_INLINE float numi_rint(float x)
{
    float ax = fabsf(x);
    float r = copysignf((ax + 8388608.0f) - 8388608.0f, x);
    return numi_float(numi_sel(numi_mask(ax < 8388608.0f), numi_bits(r), numi_bits(x)));
}

/* An fp32 to an 8- or 16-bit integer range [lo, hi] (both exact): RNE,
 * saturated, NaN -> 0. Branch-free. */
NUMI_INLINE int32_t numi_to_small_int(float x, float lo, float hi)
{
    float r = numi_rint(x);
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    r = r == r ? r : 0.0f;
    return (int32_t)r;
}

/* An fp32 to int32 / uint32: RNE, saturated, NaN -> 0. Branch-free: the
 * fp32 is clamped into the exactly convertible range first, and a mask
 * supplies the top value for inputs at or above 2^31 (2^32). */
NUMI_INLINE int32_t numi_to_i32(float x)
{
    float r = numi_rint(x);
    uint32_t big = numi_mask(r >= 0x1p31f);
    r = r < -0x1p31f ? -0x1p31f : r;
    r = r > 2147483520.0f ? 2147483520.0f : r;
    r = r == r ? r : 0.0f;
    return (int32_t)numi_sel(big, (uint32_t)INT32_MAX, (uint32_t)(int32_t)r);
}

NUMI_INLINE uint32_t numi_to_u32(float x)
{
    float r = numi_rint(x);
    uint32_t big = numi_mask(r >= 0x1p32f);
    r = r < 0.0f ? 0.0f : r;
    r = r > 4294967040.0f ? 4294967040.0f : r;
    r = r == r ? r : 0.0f;
    return numi_sel(big, UINT32_MAX, (uint32_t)r);
}

/* Saturate an already-integral fp32 to [ilo, ihi]; NaN -> 0. lo (== ilo)
 * and hi_excl (== ihi + 1) are powers of two (or 0), exact in fp32. */
NUMI_INLINE int64_t numi_sat_i64(float r, float lo, float hi_excl, int64_t ilo, int64_t ihi)
{
    if (!(r == r))
        return 0;
    if (r >= hi_excl)
        return ihi;
    if (r < lo)
        return ilo;
    return (int64_t)r;
}

NUMI_INLINE uint64_t numi_sat_u64(float r, float hi_excl, uint64_t ihi)
{
    if (!(r == r) || r <= 0.0f)
        return 0;
    if (r >= hi_excl)
        return ihi;
    return (uint64_t)r;
}

/* ---- stochastic rounding ------------------------------------------------- */

/* The splitmix64 output function: a bijective 64-bit mixer. */
NUMI_INLINE uint64_t numi_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random bits of element index for a stream whose key is numi_mix64(seed). */
NUMI_INLINE uint64_t numi_rng(uint64_t key, uint64_t index)
{
    return numi_mix64(key + (index + 1u) * 0x9e3779b97f4a7c15ull);
}

/* v / 2^s rounded up when (v mod 2^s) > (R mod 2^s): probability exactly
 * (v mod 2^s) / 2^s for uniform R. */
NUMI_INLINE uint64_t numi_shift_sr(uint64_t v, uint32_t s, uint64_t R)
{
    if (s >= 64)
        return 0; /* only for v < 2^24: the chance to round up is below 2^-40 */
    uint64_t mask = (1ull << s) - 1u;
    return (v >> s) + ((v & mask) > (R & mask));
}

/* fp32 bits -> E/M format bits, rounded stochastically with the random
 * bits R of this element; inf/NaN/overflow as in numi_enc_rne. */
NUMI_INLINE uint32_t numi_enc_sr(uint32_t u, int E, int M, bool sat, uint64_t R)
{
    const uint32_t bias = (1u << (E - 1)) - 1u;
    const uint32_t sh = 23u - (uint32_t)M;
    const uint32_t inf = ((1u << E) - 1u) << M;
    const uint32_t a = u & 0x7fffffffu;
    uint32_t r;
    if (__builtin_expect(a >= ((128u - bias) << 23), 1)) {
        /* normal result (or overflow): the pattern is linear in the value;
         * adding mask - (R mod 2^sh) carries exactly when rem > R mod 2^sh */
        uint32_t mask = (1u << sh) - 1u;
        r = (a - ((127u - bias) << 23) + (mask - ((uint32_t)R & mask))) >> sh;
    } else {
        /* subnormal result: count units of 2^(1-bias-M) */
        uint32_t e32 = a >> 23;
        uint64_t sig = e32 ? (a & 0x7fffffu) | 0x800000u : a;
        e32 = e32 ? e32 : 1u;
        r = (uint32_t)numi_shift_sr(sig, 151u - bias - (uint32_t)M - e32, R);
    }
    r = r >= inf ? (sat ? inf - 1u : inf) : r;
    uint32_t nan = inf | (1u << (M - 1)) | ((a >> sh) & ((1u << M) - 1u));
    return ((u >> 31) << (E + M)) | (a > 0x7f800000u ? nan : r);
}

/* fp32 -> integral fp32 with stochastic rounding: floor(x) + 1 when
 * frac(x) * 2^32 > the top 32 bits of R (probability frac(x) to within
 * 2^-32), else floor(x). Integral values, inf and NaN come back as they are. */
NUMI_INLINE float numi_int_sr(float x, uint64_t R)
{
    if (!(fabsf(x) < 8388608.0f))
        return x;
    float fl = floorf(x);
    double frac = (double)(x - fl); /* exact */
    return (double)(uint32_t)(R >> 32) < frac * 4294967296.0 ? fl + 1.0f : fl;
}

/* fp32 -> a signed or unsigned integer dtype's range (value already
 * integral or NaN): saturated, NaN -> 0. Other dtypes give 0. */
int64_t numi_sat_signed(uint32_t dtype, float r);
uint64_t numi_sat_unsigned(uint32_t dtype, float r);

#endif
