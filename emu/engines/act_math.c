/*
 * act_math.c: the activation functions and accumulator reductions of
 * act_math.h.
 *
 * Each function is an always-inline kernel on one value, branch-free so
 * that GCC's -O2 vectoriser turns the fixed 16-element blocks of
 * act_math_body.h.inc into SIMD code. Numbers that must stay unknown to the
 * compiler (clamp limits) travel in struct am_env, hidden behind an empty
 * asm: if GCC knew them it would thread the clamps into branches and give
 * up vectorising. The kernels use IEEE add, sub, mul, div and sqrt, bit
 * moves, and fused multiply-adds written out as AM_FMA (fmaf: one
 * rounding, the FMA instruction at the AVX2 and AVX-512 levels); nothing is
 * contracted behind the code's back. So every ISA level, the scalar
 * act_math_one, and the intrinsic loops of act_math_x512.h.inc (AVX-512) and
 * act_math_x256.h.inc (AVX2: gelu, gelu_dx), which repeat the binary32 kernels
 * step for step, give the same bits.
 *
 * exp, log, tanh, sigmoid, silu, gelu and its two approximations, rsqrt,
 * softplus, silu_dx, erf_dx, mish, erf, gelu_dx, arctan and sin are
 * computed in binary32 (sin's argument reduction in binary64 from 2^10 up;
 * docs/numerics.md has each one's ulp bound). Polynomials: binary32
 * Chebyshev fits for exp and log (computed in double from the C library's
 * expm1 and log1p), erf, gelu_dx, arctan and sin (mpmath); near-minimax
 * binary32 fits for softplus, erf's erfc piece, gelu_apprx_tanh's 2^f and
 * gelu's pieces (scripts/act_fit.py, numpy). Each fit's interval and
 * error are noted beside it.
 */
#include "emu/engines/act_math.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "emu/isa/isa.h"
#include "emu/num/numerics.h"

/* No implicit fused multiply-add: clang contracts a * b + c by default
 * (GCC does not under -std=c17), which would change the bits by ISA. The
 * kernels fuse only where they say AM_FMA. */
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

#define AM_INLINE static inline __attribute__((always_inline))
#define AM_BLK 16 /* elements per vectorised block */

/* Constants the compiler must not see through (see the file comment). */
struct am_env {
    float expf_hi;   /* binary32 exp: inputs above give +inf (89) */
    float expf_lo;   /* binary32 exp: inputs below give 0 (-104) */
    float sig_lo;    /* binary32 e^-|v| of the sigmoid family: lower clamp (-150) */
    float mish_hi;   /* mish: e^x is taken at min(x, 20) */
    float sin_fast;  /* sin: |x| from which the reduction is binary64 (2^10) */
    double sin_big;  /* sin: |x| from which libm reduces the argument (2^20) */
};

#define AM_ENV_INIT                                                                  \
    {.expf_hi = 89.0f, .expf_lo = -104.0f, .sig_lo = -150.0f,                          \
     .mish_hi = 20.0f, .sin_fast = 0x1p10f, .sin_big = 0x1p20}

/* ---- bits ------------------------------------------------------------------ */

AM_INLINE uint32_t am_fbits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}

AM_INLINE float am_ffrom(uint32_t u)
{
    float x;
    memcpy(&x, &u, 4);
    return x;
}

AM_INLINE uint64_t am_dbits(double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}

/* ---- binary32 exp ----------------------------------------------------------- */

/* Fused multiply-add with one rounding: the FMA instruction at the AVX2 and
 * AVX-512 levels, libm's exact fmaf in the portable build, so every level
 * gives the same bits. */
#define AM_FMA(a, b, c) __builtin_fmaf((a), (b), (c))

/* (e^r - 1 - r) / r^2 on |r| <= ln2/2: degree-5 Chebyshev fit (error 4e-10)
 * rounded to binary32, evaluated with FMA; the whole function is within
 * 1 ulp of e^x (0.97 ulp at most over every 13th binary32 pattern). */
#define AMF_E0 0.5f
#define AMF_E1 0.166666672f
#define AMF_E2 0.0416664667f
#define AMF_E3 0.00833331048f
#define AMF_E4 0.00139336498f
#define AMF_E5 0.000198909911f
#define AMF_LN2_HI 0.693145751953125f /* 16 bits: n * AMF_LN2_HI is exact */
#define AMF_LN2_LO 1.42860677e-06f    /* ln2 - AMF_LN2_HI */

/* e^r - 1 for |r| <= ln2/2 (a little more is fine): r + r^2 q(r). */
AM_INLINE float am_expm1_poly(float r)
{
    float q = AMF_E5;
    q = AM_FMA(q, r, AMF_E4);
    q = AM_FMA(q, r, AMF_E3);
    q = AM_FMA(q, r, AMF_E2);
    q = AM_FMA(q, r, AMF_E1);
    q = AM_FMA(q, r, AMF_E0);
    return AM_FMA(r * r, q, r);
}

/* e^r - 1 for |r| <= ln2/2 as r + r^2 q(r) with q of degree 4 (silu_dx;
 * near-minimax relative fit, 1.3e-7 with the binary32 coefficients:
 * scripts/act_fit.py expm1_q4). */
#define AMF_Q4_1 1.666657925e-01f
#define AMF_Q4_2 4.166675359e-02f
#define AMF_Q4_3 8.362951688e-03f
#define AMF_Q4_4 1.390672871e-03f
AM_INLINE float am_expm1_q4(float r)
{
    float q = AM_FMA(AMF_Q4_4, r, AMF_Q4_3);
    q = AM_FMA(q, r, AMF_Q4_2);
    q = AM_FMA(q, r, AMF_Q4_1);
    q = AM_FMA(q, r, 0.5f);
    return AM_FMA(r * r, q, r);
}

/* e^(xh + xl) = (1 + *pm) 2^*n, for xh clamped to [lo, hi] (xl is a small
 * correction, -0 for a plain argument): xh = n ln2 + r, then the polynomial
 * in r + xl. *pm is in [-0.3, 0.42], *n an integer in [lo/ln2 - 1,
 * hi/ln2 + 1] (NaN for a NaN xh). act_math_x512.h.inc has the same steps on 16
 * lanes. */
AM_INLINE void am_expf_split(float xh, float xl, float lo, float hi, float *pm, float *n)
{
    float x = xh > hi ? hi : xh;
    x = x < lo ? lo : x;
    float t = AM_FMA(x, 1.44269502f, 12582912.0f); /* 1.5 * 2^23: rounds x/ln2 */
    float nn = t - 12582912.0f;
    float r = AM_FMA(nn, -AMF_LN2_HI, x);
    r = AM_FMA(nn, -AMF_LN2_LO, r) + xl;
    *pm = am_expm1_poly(r);
    *n = nn;
}

/* 2^k as a binary32 for k in [-126, 127]. */
AM_INLINE float am_pow2f(int32_t k)
{
    return am_ffrom((uint32_t)(k + 127) << 23);
}

/* q 2^n, rounded once, for an integer-valued n in [-252, 254] (what the
 * AVX-512 scalef instruction computes): two exact power-of-two factors,
 * so that a subnormal result rounds once. A NaN n comes only with a NaN q. */
AM_INLINE float am_scalef(float q, float n)
{
    int32_t k = (int32_t)(n == n ? n : 0.0f);
    int32_t k1 = k >> 1, k2 = k - k1; /* arithmetic shift (GCC, clang) */
    return (q * am_pow2f(k1)) * am_pow2f(k2);
}

/* e^x in binary32. */
AM_INLINE float am_expf(float x, const struct am_env *E)
{
    float pm, n;
    am_expf_split(x, -0.0f, E->expf_lo, E->expf_hi, &pm, &n);
    return am_scalef(1.0f + pm, n);
}

/* ---- sin ----------------------------------------------------------------- */

#define AM_PIO2_1 1.5707963267341256  /* pi/2 in three 33-bit parts */
#define AM_PIO2_2 6.077100506303966e-11
#define AM_PIO2_3 2.0222662487959506e-21

/* sin x for 2^10 <= |x| < 2^20 (am_sinf_fast below 2^10, with the same
 * polynomials): x = k pi/2 + r in binary64 (k < 2^20, so k times
 * each 33-bit part of pi/2 is exact), r rounded to binary32 (|r| <= pi/4),
 * then by k mod 4 +-sin r = r + r z S(z) or +-cos r = 1 - z/2 + z^2 C(z),
 * z = r^2, S and C of degree 3 (Chebyshev fits with mpmath at 50 digits,
 * 0.06 and 0.01 ulp). sin r takes the sign of r (a zero r keeps its sign).
 * act_math_x512.h.inc has the same steps on 16 lanes. */
static const float am_sin_s[4] = {2.724992555e-06f, -1.984008704e-04f, 8.333331905e-03f,
                                  -1.666666716e-01f};
static const float am_sin_c[4] = {-2.730095900e-07f, 2.480059993e-05f, -1.388888806e-03f,
                                  4.166666791e-02f};

/* The binary32 part of am_sinf_small and am_sinf_fast: r reduced, q the
 * low bits of k. */
AM_INLINE float am_sinf_poly(float r, uint32_t q)
{
    float z = r * r;
    float ps = am_sin_s[0], pc = am_sin_c[0];
#pragma GCC unroll 4
    for (int i = 1; i < 4; i++) {
        ps = AM_FMA(ps, z, am_sin_s[i]);
        pc = AM_FMA(pc, z, am_sin_c[i]);
    }
    float sn = AM_FMA(r * z, ps, r);
    sn = am_ffrom((am_fbits(sn) & 0x7FFFFFFFu) | (am_fbits(r) & 0x80000000u));
    float cs = AM_FMA(z * z, pc, AM_FMA(-0.5f, z, 1.0f));
    float v = (q & 1u) ? cs : sn;
    return am_ffrom(am_fbits(v) ^ ((q & 2u) << 30));
}

AM_INLINE float am_sinf_small(float x)
{
    double d = x;
    double t = d * 0.63661977236758138 + 0x1.8p52;
    double k = t - 0x1.8p52;
    uint32_t q = (uint32_t)am_dbits(t);
    double r = ((d - k * AM_PIO2_1) - k * AM_PIO2_2) - k * AM_PIO2_3;
    return am_sinf_poly((float)r, q);
}

/* sin x for |x| < 2^10, all in binary32: k = round(x 2/pi) (at most 652),
 * r = x - k pi/2 with pi/2 in three parts, each taken off by one FMA. The
 * first two parts have 12 and 13 significant bits, so k times each is
 * exact and x - k P1 is exact, and a tiny r (x close to a multiple of
 * pi/2) keeps its accuracy. A zero x is passed on as r
 * itself (the negative second part would turn -0 into +0). Then
 * am_sinf_poly as for the binary64 reduction: 2.41 ulp at most on every
 * binary32 below 2^10. */
#define AMF_PIO2_1 0x1.922p+0f
#define AMF_PIO2_2 (-0x1.2afp-18f)
#define AMF_PIO2_3 0x1.0b4612p-34f
AM_INLINE float am_sinf_fast(float x)
{
    float t = AM_FMA(x, 0.636619747f, 12582912.0f); /* 1.5 * 2^23: rounds x 2/pi */
    float k = t - 12582912.0f;
    float r = AM_FMA(-k, AMF_PIO2_1, x);
    r = AM_FMA(-k, AMF_PIO2_2, r);
    r = AM_FMA(-k, AMF_PIO2_3, r);
    r = x == 0.0f ? x : r;
    return am_sinf_poly(r, am_fbits(t));
}

/* ---- the activation functions on one binary32 value ------------------------------ */

/* ln x in binary32: x = 2^e m (subnormals scaled by 2^23 first), m in
 * [sqrt(1/2), sqrt(2)), f = m - 1 (exact), and ln(1 + f) = f + (f^3 P(f) -
 * f^2/2) with P of degree 8 (Chebyshev interpolation, 0.11 ulp). +-0 give
 * -inf, +inf +inf, and x < 0 the x86 default NaN (0xffc00000, what
 * ax_log's fixupimm gives). */
static const float am_log_p[9] = {
    7.149753720e-02f, -1.157120094e-01f, 1.166151091e-01f, -1.241105050e-01f,
    1.424993724e-01f, -1.666848063e-01f, 2.000070810e-01f, -2.499998957e-01f,
    3.333333135e-01f};

/* e ln 2 + ln(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1] (am_log's
 * polynomial part). */
AM_INLINE float am_log_reduced(float e, float f)
{
    float p = am_log_p[0];
#pragma GCC unroll 16
    for (int k = 1; k < 9; k++)
        p = AM_FMA(p, f, am_log_p[k]);
    float f2 = f * f;
    float lm = f + AM_FMA(f2 * f, p, -0.5f * f2);
    return AM_FMA(e, AMF_LN2_HI, AM_FMA(e, AMF_LN2_LO, lm));
}

AM_INLINE float am_log(float x)
{
    int sub = x < 0x1p-126f;
    float xs = sub ? x * 0x1p23f : x;
    uint32_t b = am_fbits(xs);
    float e = (float)((int32_t)(b >> 23) - 127) - (sub ? 23.0f : 0.0f);
    float m = am_ffrom((b & 0x007FFFFFu) | 0x3F800000u);
    int big = m > 1.41421354f;
    m = big ? m * 0.5f : m;
    e = big ? e + 1.0f : e;
    float v = am_log_reduced(e, m - 1.0f);
    v = x == INFINITY ? INFINITY : v;
    v = x > 0.0f ? v : am_ffrom(0xffc00000u);
    return x == 0.0f ? -INFINITY : v;
}

/* softplus x = max(x, 0) + ln(1 + e^-|x|) in binary32, as one FMA:
 * e h(e) + max(x, 0) with e = e^-|x| in [0, 1] and h(e) = ln(1 + e)/e,
 * h a degree-8 polynomial with h(0) = 1 exactly (near-minimax fit of the
 * relative error, scripts/act_fit.py softplus: 3.3e-8 relative with
 * the binary32 coefficients). A NaN x reaches the last FMA only as its
 * addend, so the result is x quieted with no guard. */
static const float am_sp_h[9] = {
    5.365422461e-03f, -3.006830066e-02f, 7.920882851e-02f, -1.375418752e-01f,
    1.915384829e-01f, -2.485721707e-01f, 3.332132995e-01f, -4.999964833e-01f, 1.0f};

AM_INLINE float am_softplus(float x, const struct am_env *E)
{
    float pos = 0.0f > x ? 0.0f : x; /* x itself for a NaN x */
    float a = -fabsf(x);
    a = a > E->expf_lo ? a : E->expf_lo; /* a NaN x acts as expf_lo here */
    float e = am_expf(a, E);
    float h = am_sp_h[0];
#pragma GCC unroll 16
    for (int i = 1; i < 9; i++)
        h = AM_FMA(h, e, am_sp_h[i]);
    return AM_FMA(e, h, pos);
}

/* tanh x = -m / (2 + m) with m = e^(-2|x|) - 1 (no cancellation: the
 * polynomial part of e^r - 1 is kept apart from 2^k - 1), sign of x. */
AM_INLINE float am_tanh(float x, const struct am_env *E)
{
    float pm, n;
    am_expf_split(-2.0f * fabsf(x), -0.0f, E->expf_lo, E->expf_hi, &pm, &n);
    float s = am_scalef(1.0f, n);
    float m = AM_FMA(s, pm, s - 1.0f);
    float t = -m / (2.0f + m);
    return am_ffrom((am_fbits(t) & 0x7FFFFFFFu) | (am_fbits(x) & 0x80000000u));
}

/* x / (1 + e^-v) as one quotient, from e^-|v| = (1 + pm) 2^n = e and
 * neg = (v < 0):
 *   v >= 0: x / (1 + e)
 *   v < 0:  x (1 + pm) / (1 + e) * 2^n   (the scaling rounds last)
 * x below -200 acts as -200 (the result is 0 from far above there). */
AM_INLINE float am_sig_quot(float x, float pm, float n, int neg)
{
    float p1 = 1.0f + pm;
    float den = 1.0f + am_scalef(p1, n);
    float xc = x < -200.0f ? -200.0f : x;
    float num = neg ? xc * p1 : x;
    return am_scalef(num / den, neg ? n : 0.0f);
}

/* x / (1 + e^-v) (sigmoid: x = 1; silu: v = x). */
AM_INLINE float am_sig_times(float x, float v, const struct am_env *E)
{
    float pm, n;
    am_expf_split(-fabsf(v), -0.0f, E->sig_lo, E->expf_hi, &pm, &n);
    return am_sig_quot(x, pm, n, v < 0.0f);
}

AM_INLINE float am_sigmoid(float x, const struct am_env *E)
{
    return am_sig_times(1.0f, x, E);
}

AM_INLINE float am_silu(float x, const struct am_env *E)
{
    return am_sig_times(x, x, E);
}

/* silu_dx x = s (1 + x (1 - s)), s = sigmoid(x), in binary32. With
 * e = e^-|x| = (1 + pm) 2^n = 2^n + 2^n pm (one FMA; the reduction of
 * am_expf_split, pm from am_expm1_q4) and d = 1 + e (x
 * clamped to [-200, 200]):
 *   x >= 0: (1 + (1 + x) e) / d^2   (one FMA on the 1 + x of the other side)
 *   x < 0:  (1 + pm)((1 + x) + e) / d^2 * 2^n   (the scaling rounds last)
 * with d^2 = 1 + e (2 + e) by FMA. (1 + x) + e cancels near the zero
 * x0 = -1.2784645 of the function, so it is taken as (1 + x + 2^n) +
 * 2^n pm, one FMA on an exact sum (1 + x is exact for x <= -1/2, and so
 * is adding 2^n there): its error is that of 2^n pm alone, which leaves an
 * absolute error under 1e-9 near the zero (docs/numerics.md). A NaN x
 * takes the exp's argument as sig_lo, so it is the only NaN operand of
 * its last FMA and comes out quieted, with no guard. */
AM_INLINE float am_silu_dx(float x, const struct am_env *E)
{
    float xc = x < -200.0f ? -200.0f : x;
    xc = xc > 200.0f ? 200.0f : xc;
    float a = -fabsf(xc);
    a = a > E->sig_lo ? a : E->sig_lo; /* a NaN x acts as sig_lo here */
    float t = AM_FMA(a, 1.44269502f, 12582912.0f); /* 1.5 * 2^23: rounds a/ln2 */
    float n = t - 12582912.0f;
    float r = AM_FMA(n, -AMF_LN2_HI, a);
    float pm = am_expm1_q4(AM_FMA(n, -AMF_LN2_LO, r));
    float s = am_scalef(1.0f, n);
    float e = AM_FMA(s, pm, s);
    float d2 = AM_FMA(e, 2.0f + e, 1.0f); /* (1 + e)^2 */
    float x1 = 1.0f + xc;
    float w = AM_FMA(s, pm, x1 + s);
    int neg = x < 0.0f;
    float num = neg ? AM_FMA(pm, w, w) : AM_FMA(e, x1, 1.0f);
    return am_scalef(num / d2, neg ? n : 0.0f);
}

/* mish x = x tanh(ln(1 + e^x)) = x m / (m + 2), m = e^x (e^x + 2), in
 * binary32. With e^x = (1 + pm) 2^n = e (x taken at most 20 there) and
 * w = e + 2, so that m + 2 = e w + 2 (one FMA):
 *   x <= 0: x (1 + pm) w / (m + 2) * 2^n   (the scaling rounds last)
 *   x > 0:  x - x (2 / (m + 2))            (one FMA; x itself past 20,
 *                                          where x 2/(m + 2) < 2^-56 x)
 * x below -200 acts as -200 (the result is -0 from far above there). In
 * the last FMA +inf is multiplied as the largest finite number, so it
 * stays +inf; a NaN x reaches that FMA only as its addend (the exp sees
 * 20), so the result is x quieted with no guard. */
AM_INLINE float am_mish(float x, const struct am_env *E)
{
    float pm, n;
    float xe = x < E->mish_hi ? x : E->mish_hi; /* a NaN x acts as mish_hi here */
    am_expf_split(xe, -0.0f, E->sig_lo, E->mish_hi, &pm, &n);
    float e = am_scalef(1.0f + pm, n);
    float w = e + 2.0f;
    float xc = x < -200.0f ? -200.0f : x;
    int neg = x <= 0.0f;
    float num = neg ? xc * AM_FMA(pm, w, w) : 2.0f;
    float q = am_scalef(num / AM_FMA(e, w, 2.0f), neg ? n : 0.0f);
    float xm = x < 0x1.fffffep127f ? x : 0x1.fffffep127f; /* +inf (and NaN) as the largest */
    float pos = AM_FMA(-xm, q, x);
    return neg ? q : pos;
}

/* ---- gelu and gelu_dx: piecewise polynomials times e^(-x^2/2) ------------ */

/* Both are e^(-a^2/2) F(a) on a = |x| (plus x or 1 for x >= 0), F smooth:
 * F is a degree-5 polynomial in u = a - c on each of 16 pieces of a in
 * [0, 14.875), the piece picked per lane by the bits of v = a + 1.125:
 * its exponent (four octaves) and its top two mantissa bits, i.e. bits(v)
 * >> 21 mod 16 (widths 0.125 and 0.25 up to a = 0.875, then 0.5, 1, 2;
 * the offset puts the zero of gelu_dx mid-piece). The tables are in that
 * index order: AVX-512 picks each coefficient with one permute over 16
 * lanes, AVX2 with two permutes over 8 and a blend, the portable level by
 * plain indexing, the same numbers. c is 0 on
 * the first piece, 0.7517915 (the zero of gelu_dx) on [0.625, 0.875) and
 * the middle elsewhere, so that u is exact. Fits: scripts/act_fit.py
 * gelu and gelu_dx (near-minimax). */
#define AMF_GQ_OFF 1.125f /* v = |x| + AMF_GQ_OFF picks the piece */
#define AMF_GQ_AMAX 14.75f /* |x| clamp: both are +-0 (or x, 1) from 14.55 up */
static const float am_gq_c[16] = {
    1.125000000e+00f, 1.625000000e+00f, 2.125000000e+00f, 2.625000000e+00f,
    3.375000000e+00f, 4.375000000e+00f, 5.375000000e+00f, 6.375000000e+00f,
    7.875000000e+00f, 9.875000000e+00f, 1.187500000e+01f, 1.387500000e+01f,
    0.000000000e+00f, 2.500000000e-01f, 5.000000000e-01f, 7.517915368e-01f};
static const float am_gelu_q[6][16] = {
    {-4.703572951e-03f, -1.762667787e-03f, -7.055685855e-04f, -3.088488884e-04f,
     -1.006294042e-04f, -2.714352195e-05f, -8.594470273e-06f, -3.152254067e-06f,
     -8.812330066e-07f, -2.037842961e-07f, -6.031854127e-08f, -2.125743848e-08f,
     -5.498309433e-02f, -3.402461857e-02f, -1.831018180e-02f, -1.031532791e-02f},
    {1.268091425e-02f, 5.138004664e-03f, 2.285320312e-03f, 1.064082608e-03f,
     4.070588038e-04f, 1.259139390e-04f, 4.725120016e-05f, 1.997304025e-05f,
     6.313431641e-06f, 1.827244205e-06f, 6.604921055e-07f, 2.383512765e-07f,
     1.322097033e-01f, 7.527352870e-02f, 4.387596995e-02f, 2.603846043e-02f},
    {-2.998037636e-02f, -1.359417103e-02f, -6.655330304e-03f, -3.481416032e-03f,
     -1.463626511e-03f, -5.408071447e-04f, -2.305523085e-04f, -1.097854401e-04f,
     -4.225498924e-05f, -1.470444568e-05f, -6.103230589e-06f, -2.877607812e-06f,
     -2.499688715e-01f, -1.490034610e-01f, -9.132166207e-02f, -5.725652725e-02f},
    {6.273990870e-02f, 3.187785670e-02f, 1.738945022e-02f, 1.008130889e-02f,
     4.889266565e-03f, 2.146582352e-03f, 1.065814518e-03f, 5.815331824e-04f,
     2.677129523e-04f, 1.137349755e-04f, 5.576226977e-05f, 3.030469088e-05f,
     3.989418745e-01f, 2.529110909e-01f, 1.647402495e-01f, 1.097418889e-01f},
    {-1.070196331e-01f, -6.172603741e-02f, -3.794893622e-02f, -2.460639179e-02f,
     -1.393518876e-02f, -7.347763982e-03f, -4.287223797e-03f, -2.698904369e-03f,
     -1.498838421e-03f, -7.892904105e-04f, -4.669769842e-04f, -3.011505469e-04f,
     -5.000000000e-01f, -3.401736319e-01f, -2.375526428e-01f, -1.695131809e-01f},
    {-2.759981453e-01f, -3.169134259e-01f, -3.412342966e-01f, -3.565709889e-01f,
     -3.705444634e-01f, -3.807372749e-01f, -3.863771856e-01f, -3.897903860e-01f,
     -3.928230405e-01f, -3.950107396e-01f, -3.962289393e-01f, -3.969802558e-01f,
     -0.000000000e+00f, -1.035080329e-01f, -1.748094559e-01f, -2.254785150e-01f}};
/* e^(s/2 (1 - eps/L)) for |s| <= 0.7 (see am_gq_env), degree 5 (near-minimax,
 * relative error 9.9e-8). */
static const float am_gq_e[6] = {
    2.591316006e-04f, 2.618865808e-03f, 2.083464153e-02f,
    1.249983311e-01f, 5.000008941e-01f, 1.000000000e+00f};

/* Is x negative (-0 and -inf included, a NaN not)? An integer compare of
 * the bits: clang turns x < 0 ? g : x + g into (x <= 0 ? -0 : x) + g,
 * which gives -0 for x = +0 and g = -0. */
AM_INLINE int am_is_neg(float x)
{
    return (int32_t)am_fbits(x) <= (int32_t)0xff800000u;
}

/* The piece of a in [0, AMF_GQ_AMAX]. */
AM_INLINE uint32_t am_gq_index(float a)
{
    return (am_fbits(a + AMF_GQ_OFF) >> 21) & 15u;
}

/* The degree-5 polynomial tab of piece i at a. */
AM_INLINE float am_gq_poly(const float (*tab)[16], float a, uint32_t i)
{
    float u = a - am_gq_c[i];
    float q = tab[0][i];
#pragma GCC unroll 8
    for (int j = 1; j < 6; j++)
        q = AM_FMA(q, u, tab[j][i]);
    return q;
}

/* e^(-a^2/2) as P(s) 2^n (P(s) returned, *n): n = round(-a^2/2 / ln2) and
 * s = -a^2 - n L by one FMA from the exact product a a, with L = 2 ln2 cut
 * to 16 bits (n L exact) and no low part: the missing factor
 * e^(n eps/2), eps = L - 2 ln2, is e^(-a^2 eps/(2L)) e^(-s eps/(2L)) as
 * n = -(a^2 + s)/L, so the pieces' fits take the first (smooth in a) and
 * P(s) = e^(s/2 (1 - eps/L)), degree 5, the second. */
#define AMF_GQ_L 1.38629150390625f /* 2 * AMF_LN2_HI */
AM_INLINE float am_gq_env(float a, float *n)
{
    float tt = AM_FMA(a * a, -0.5f * 1.44269502f, 12582912.0f); /* 1.5 * 2^23: rounds to n */
    float nn = tt - 12582912.0f;
    float s = AM_FMA(-a, a, -(nn * AMF_GQ_L));
    float e = am_gq_e[0];
#pragma GCC unroll 8
    for (int j = 1; j < 6; j++)
        e = AM_FMA(e, s, am_gq_e[j]);
    *n = nn;
    return e;
}

/* gelu x = x Phi(x) in binary32: with a = min(|x|, 14.75), g = -a Phi(-a)
 * = -e^(-a^2/2) Q(a) formed as (Q P(s)) 2^n (the scaling rounds last,
 * so a subnormal g rounds once); gelu = g for x < 0, x + g otherwise
 * (x Phi(x) = x - a Phi(-a) for x >= 0; -0 takes either form). The first
 * piece's constant term is -0, so g is -0 at a = 0 and gelu(+-0) = +-0. A
 * NaN x acts as a = 14.75 and takes x + g, its only NaN: quieted, no
 * guard. */
AM_INLINE float am_gelu(float x)
{
    float a = fabsf(x);
    float ac = a < AMF_GQ_AMAX ? a : AMF_GQ_AMAX;
    float q = am_gq_poly(am_gelu_q, ac, am_gq_index(ac));
    float n, e = am_gq_env(ac, &n);
    float g = am_scalef(q * e, n);
    return am_is_neg(x) ? g : x + g;
}

/* gelu_dx x = Phi(x) + x phi(x) in binary32, on gelu's pieces: with a =
 * min(|x|, 14.75), h = Phi(-a) - a phi(a) = e^(-a^2/2) D(a) formed as
 * (D P(s)) 2^n (the scaling rounds last); gelu_dx = h for x < 0 (-0
 * included: h(0) = 1/2), 1 - h otherwise. D of degree 5 per piece
 * (scripts/act_fit.py gelu_dx, relative error 4.7e-8 with the
 * binary32 coefficients); the piece [0.625, 0.875) is centred on the zero
 * a0 = 0.7517915 of D, rounded to binary32, with D there as its constant
 * term, so h keeps its relative accuracy next to the zero x0 = -a0 of
 * gelu_dx. A NaN x needs the guard (1 - h would lose it). */
static const float am_gdx_q[6][16] = {
    {-2.572694793e-03f, -1.004640711e-03f, -4.684516462e-04f, -2.126459003e-04f,
     -7.854451542e-05f, -2.451492219e-05f, -1.041312953e-05f, -3.677738732e-06f,
     -1.364286049e-06f, -3.191937026e-07f, -1.815535313e-07f, 3.777511637e-08f,
     -2.125346474e-02f, -1.444907021e-02f, -9.382681921e-03f, -5.783332977e-03f},
    {7.563888095e-03f, 3.445611335e-03f, 1.657158718e-03f, 8.770732675e-04f,
     3.776604426e-04f, 1.391867700e-04f, 5.356610200e-05f, 3.134883082e-05f,
     1.009697007e-05f, 4.176153652e-06f, 9.155141925e-07f, 1.955934067e-06f,
     6.148020178e-02f, 3.707441315e-02f, 2.299459651e-02f, 1.432881691e-02f},
    {-2.091248147e-02f, -1.062783971e-02f, -5.796334706e-03f, -3.360892180e-03f,
     -1.631101943e-03f, -7.162415422e-04f, -3.555782023e-04f, -1.944411051e-04f,
     -8.967464237e-05f, -3.850678331e-05f, -1.908943705e-05f, -1.073303520e-05f,
     -1.328953058e-01f, -8.431310207e-02f, -5.490339175e-02f, -3.657137975e-02f},
    {5.350653455e-02f, 3.085861541e-02f, 1.897189021e-02f, 1.229868550e-02f,
     6.960166153e-03f, 3.665980883e-03f, 2.135885181e-03f, 1.338027650e-03f,
     7.370834937e-04f, 3.779379185e-04f, 2.145773615e-04f, 1.265176688e-04f,
     2.499973774e-01f, 1.700908989e-01f, 1.187739298e-01f, 8.475553244e-02f},
    {-5.218878984e-01f, -4.809748232e-01f, -4.566569924e-01f, -4.413241744e-01f,
     -4.273580313e-01f, -4.171779752e-01f, -4.115540981e-01f, -4.081602097e-01f,
     -4.051627219e-01f, -4.030333757e-01f, -4.018867314e-01f, -4.012201130e-01f,
     -7.978845239e-01f, -6.943764091e-01f, -6.230751872e-01f, -5.724065304e-01f},
    {-2.034789324e-01f, -4.532593191e-01f, -6.871754527e-01f, -9.113943577e-01f,
     -1.236654997e+00f, -1.658381224e+00f, -2.072494507e+00f, -2.482219934e+00f,
     -3.091989040e+00f, -3.899949789e+00f, -4.704761505e+00f, -5.507811069e+00f,
     5.000000000e-01f, 3.142965436e-01f, 1.501477361e-01f, -6.934389951e-09f}};

AM_INLINE float am_gelu_dx(float x)
{
    float a = fabsf(x);
    float ac = a < AMF_GQ_AMAX ? a : AMF_GQ_AMAX;
    float q = am_gq_poly(am_gdx_q, ac, am_gq_index(ac));
    float n, e = am_gq_env(ac, &n);
    float h = am_scalef(q * e, n);
    return am_is_neg(x) ? h : 1.0f - h;
}

/* The end of gelu_apprx_tanh and gelu_apprx_sigmoid: am_sig_quot with v
 * of the sign of x. */
AM_INLINE float am_sig_finish(float x, float pm, float nn)
{
    return am_sig_quot(x, pm, nn, x < 0.0f);
}

/* x * sigmoid(v), v = 2 sqrt(2/pi) (x + 0.044715 x^3) = 0.5 x (1 + tanh(...)),
 * with a = min(|x|, 11) (past which e^-|v| is below 2^-160), and
 * e^-|v| = 2^-w taken in base 2: w = |v| / ln2 = a u, u = c1 + c3 a^2
 * (c1, c3 the coefficients of v over ln2) carried as u + ul. u = c1h +
 * c3 a^2 by one FMA, c1h being c1 cut to a multiple of 2^-20 (the rest,
 * c1l, goes to ul): u is below 16, so c1h - u is exact and c3 a^2 + (c1h -
 * u), one more FMA, is u's rounding error; ul adds c3 times the low part
 * of a^2 (by FMA) and c3l a^2 + c1l. Then n = round(-a u) and f = -a u - n
 * (one rounding each, from the exact product), f - a ul, and 2^f =
 * 1 + f P(f), P of degree 4, the last step one FMA (near-minimax on |f|
 * <= 0.51, relative error 1.0e-7 with the binary32 coefficients:
 * scripts/act_fit.py exp2); no ln2 in the reduction. Then
 * am_gt_finish. */
#define AMF_GT_C1H 0x1.26aecp+1f      /* 2 sqrt(2/pi) / ln2 cut to a multiple of 2^-20 */
#define AMF_GT_C1L 2.513669699e-07f   /* 2 sqrt(2/pi) / ln2 - AMF_GT_C1H */
#define AMF_GT_C3 1.029432416e-01f    /* 2 sqrt(2/pi) 0.044715 / ln2 */
#define AMF_GT_C3L (-2.016198541e-09f) /* 2 sqrt(2/pi) 0.044715 / ln2 - AMF_GT_C3 */
static const float am_gt_p[5] = {1.325851539e-03f, 9.673614055e-03f, 5.550771207e-02f,
                                  2.402220964e-01f, 6.931469440e-01f};

/* 2^f for |f| <= 0.51: 1 + f P(f). */
AM_INLINE float am_exp2_poly(float f)
{
    float p = am_gt_p[0];
#pragma GCC unroll 8
    for (int i = 1; i < 5; i++)
        p = AM_FMA(p, f, am_gt_p[i]);
    return AM_FMA(f, p, 1.0f);
}

/* The quotient of am_sig_quot for gelu_apprx_tanh, from a = min(|x|, 11)
 * and e^-|v| = p1 2^nn: x / (1 + e) for x >= 0, -(a p1) / (1 + e) * 2^nn
 * for x < 0 (the scaling rounds last; -a for x takes the place of the
 * clamp to -200: below -11 the result is -0 either way). */
AM_INLINE float am_gt_finish(float x, float a, float p1, float nn)
{
    float den = 1.0f + am_scalef(p1, nn);
    int neg = x < 0.0f;
    float num = neg ? -(a * p1) : x;
    return am_scalef(num / den, neg ? nn : 0.0f);
}

AM_INLINE float am_gelu_tanh(float x)
{
    float a = fabsf(x);
    float ac = a < 11.0f ? a : 11.0f;
    float x2 = ac * ac;
    float x2l = AM_FMA(ac, ac, -x2);
    float u = AM_FMA(AMF_GT_C3, x2, AMF_GT_C1H);
    float ul = AM_FMA(AMF_GT_C3, x2, AMF_GT_C1H - u);
    float lo = AM_FMA(AMF_GT_C3L, x2, AMF_GT_C1L);
    ul = AM_FMA(AMF_GT_C3, x2l, ul) + lo;
    float t = AM_FMA(-ac, u, 12582912.0f); /* 1.5 * 2^23: rounds to n */
    float nn = t - 12582912.0f;
    float f = AM_FMA(-ac, u, -nn);
    f = AM_FMA(-ac, ul, f);
    return am_gt_finish(x, ac, am_exp2_poly(f), nn);
}

/* x * sigmoid(1.702 x) = x / (1 + e^-v), v = 1.702 x, with 1.702 |x| never
 * rounded: with a = min(|x|, 88) (past which e^-|v| is 2^-216 or less),
 * n = round(-1.702 a / ln2) and r = -1.702 a - n ln2 by FMA from the exact
 * product (1.702 and ln2 each in two parts, n times the high part of ln2
 * exact), e^-|v| = (1 + pm) 2^n; then am_sig_finish. */
#define AMF_GS_C 1.70200002f        /* 1.702 */
#define AMF_GS_CL (-2.1934509e-08f) /* 1.702 - AMF_GS_C */
#define AMF_GS_L2E (-2.45546699f)   /* -1.702 / ln2 */
AM_INLINE float am_gelu_sigmoid(float x)
{
    float a = fabsf(x);
    float ac = a < 88.0f ? a : 88.0f;
    float t = AM_FMA(ac, AMF_GS_L2E, 12582912.0f); /* 1.5 * 2^23: rounds to n */
    float nn = t - 12582912.0f;
    float r = AM_FMA(-AMF_GS_C, ac, -(nn * AMF_LN2_HI));
    r = AM_FMA(-nn, AMF_LN2_LO, r);
    r = AM_FMA(-AMF_GS_CL, ac, r);
    return am_sig_finish(x, am_expm1_poly(r), nn);
}

/* erf x in binary32, with z = min(|x|, 4) (erf is 1 in binary32 past
 * 3.92), as one Horner chain whose coefficients and variable each lane
 * picks by its range:
 *   |x| <= 2: x P(z^2/2 - 1), P of degree 9 (Chebyshev fit of erf(x)/x,
 *             mpmath at 40 digits; 9e-9 relative, 0.75 ulp once rounded
 *             to binary32), run as degree 10 with a zero leading term
 *   above:    1 - Q(z - 3) with the sign of x, Q of degree 10 fitting
 *             erfc on [2, 4] (near-minimax, absolute error 9.3e-9 with
 *             the binary32 coefficients: scripts/act_fit.py erf)
 * and the last step x P or 1 - Q as one FMA. A NaN x takes the first form
 * with z = 4, so it reaches that FMA as the only NaN and comes out
 * quieted, with no guard. */
static const float am_erf_p[11] = {
    0.0f, -1.499333575e-05f, 7.824543718e-05f, -3.342172713e-04f, 1.399380621e-03f,
    -5.235208198e-03f, 1.713039540e-02f, -4.866273701e-02f, 1.194788814e-01f,
    -2.611118555e-01f, 6.749332547e-01f};
static const float am_erfc_q[11] = {
    -2.246526310e-05f, 1.408489061e-05f, 1.419961482e-04f, -4.177931987e-04f,
    7.342323079e-04f, -1.004848396e-03f, 1.045351848e-03f, -7.911610301e-04f,
    4.176681978e-04f, -1.391513360e-04f, 2.209196282e-05f};

AM_INLINE float am_erf(float x)
{
    float a = fabsf(x);
    float z = a < 4.0f ? a : 4.0f;
    int near = !(a > 2.0f); /* a NaN x takes the x P branch */
    float s = AM_FMA(0.5f, z * z, -1.0f);
    float v = near ? s : z - 3.0f;
    float p = near ? am_erf_p[0] : am_erfc_q[0];
#pragma GCC unroll 16
    for (int i = 1; i < 11; i++)
        p = AM_FMA(p, v, near ? am_erf_p[i] : am_erfc_q[i]);
    float r = AM_FMA(near ? x : -1.0f, p, near ? -0.0f : 1.0f);
    return am_ffrom(am_fbits(r) | (am_fbits(x) & 0x80000000u));
}

/* erf_dx x = (2/sqrt(pi)) e^(-x^2) in binary32: a = min(|x|, 11) (past
 * which the result is 0), a^2 split in two floats (exact, by FMA) for exp,
 * the constant in two parts: C (1 + pm) = Ch + (Ch pm + Cl (1 + pm)), then
 * the scaling by 2^n last. */
#define AMF_EDX_CH 1.12837923f      /* 2/sqrt(pi) */
#define AMF_EDX_CL (-5.86353828e-08f) /* 2/sqrt(pi) - AMF_EDX_CH */
AM_INLINE float am_erf_dx(float x, const struct am_env *E)
{
    float a = fabsf(x);
    float ac = a < 11.0f ? a : 11.0f;
    float sq = ac * ac;
    float sl = AM_FMA(ac, ac, -sq);
    float pm, n;
    am_expf_split(-sq, -sl, E->sig_lo, E->expf_hi, &pm, &n);
    float lo = AM_FMA(AMF_EDX_CL, pm, AMF_EDX_CL);
    float q = AMF_EDX_CH + AM_FMA(AMF_EDX_CH, pm, lo);
    return am_scalef(q, n);
}

/* arctan x in binary32, from a = |x| reduced by one quotient to v = n / d
 * with |v| <= tan(pi/8):
 *   a <= tan(pi/8):   v = a,                  offset 0
 *   a <= tan(3pi/8):  v = (a - 1) / (a + 1),  offset pi/4
 *   above:            v = -1 / a,             offset pi/2
 * atan v = v + v z R(z), z = v^2, R of degree 4 (Chebyshev fit of
 * (atan(v)/v - 1)/z with mpmath at 50 digits, 0.05 ulp), then the offset
 * in two parts is added and the sign of x put back. */
static const float am_atan_r[5] = {
    -6.451927871e-02f, 1.074373126e-01f, -1.426395625e-01f, 1.999953985e-01f,
    -3.333333135e-01f};
#define AMF_PI4_HI 0.785398185f
#define AMF_PI4_LO (-2.18556941e-08f)
#define AMF_PI2_HI 1.57079637f
#define AMF_PI2_LO (-4.37113883e-08f)

AM_INLINE float am_atan(float x)
{
    float a = fabsf(x);
    int mid = a > 0.414213568f, big = a > 2.41421366f;
    float n = big ? -1.0f : (mid ? a - 1.0f : a);
    float d = big ? a : (mid ? a + 1.0f : 1.0f);
    float oh = big ? AMF_PI2_HI : (mid ? AMF_PI4_HI : 0.0f);
    float ol = big ? AMF_PI2_LO : (mid ? AMF_PI4_LO : 0.0f);
    float v = n / d;
    float z = v * v;
    float r = am_atan_r[0];
#pragma GCC unroll 16
    for (int i = 1; i < 5; i++)
        r = AM_FMA(r, z, am_atan_r[i]);
    float at = AM_FMA(v * z, r, v);
    float res = oh + (at + ol);
    return am_ffrom(am_fbits(res) | (am_fbits(x) & 0x80000000u));
}

/* 1/sqrt(x): r = 1/sqrtf(x), then one correction r (1 + e/2) with
 * e = 1 - x r^2 computed exactly enough by FMA (r^2 split in two); x is
 * first scaled by 2^-64 or 2^64 so that r^2 stays normal. Zeros,
 * negatives, infinities and NaN take r as it is (the scalings keep them). */
AM_INLINE float am_rsqrt(float x)
{
    int big = x > 0x1p64f, small = x < 0x1p-64f;
    float xs = big ? x * 0x1p-64f : x;
    xs = small ? xs * 0x1p64f : xs;
    float r = 1.0f / sqrtf(xs);
    float a = r * r;
    float ea = AM_FMA(r, r, -a);
    float e = AM_FMA(-xs, a, 1.0f);
    e = AM_FMA(-xs, ea, e);
    float c = AM_FMA(r, 0.5f * e, r);
    c = big ? c * 0x1p-32f : c;
    c = small ? c * 0x1p32f : c;
    return x > 0.0f && x < INFINITY ? c : r;
}

AM_INLINE float am_sign(float x)
{
    float s = x > 0.0f ? 1.0f : x;
    return x < 0.0f ? -1.0f : s;
}

/* ---- one copy of the row loops per ISA level ------------------------------------- */

/* Let the vectoriser compute both sides of a select: the kernels never
 * rely on floating-point traps (the results are the same). sqrt becomes
 * the IEEE vector instruction because emu is built with -fno-math-errno. */
#if defined(__GNUC__) && !defined(__clang__)
#define AM_NOTRAP __attribute__((optimize("no-trapping-math")))
#else
#define AM_NOTRAP
#endif

#define AM_SUFFIX base
#define AM_ATTR AM_NOTRAP
#include "emu/engines/act_math_body.h.inc"
#undef AM_SUFFIX
#undef AM_ATTR

#if defined(__x86_64__) && defined(__GNUC__)
#define AM_SUFFIX avx2
#define AM_ATTR AM_NOTRAP __attribute__((target("avx2,fma")))
#include "emu/engines/act_math_body.h.inc"
#undef AM_SUFFIX
#undef AM_ATTR

#define AM_SUFFIX avx512
#define AM_ATTR AM_NOTRAP __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#include "emu/engines/act_math_body.h.inc"
#undef AM_SUFFIX
#undef AM_ATTR

#include "emu/engines/act_math_x512.h.inc"
#include "emu/engines/act_math_x256.h.inc"
#define AM_X86 1
#else
#define AM_X86 0
#endif

/* ---- public entry points ----------------------------------------------------------- */

bool act_math_known(unsigned func)
{
    return func <= ISA_ACT_sign;
}

bool act_math_row(unsigned func, float *dst, const float *src, size_t n, float scale,
                  float bias, float alpha)
{
    if (!act_math_known(func))
        return false;
#if AM_X86
    int lvl = num_isa_level();
    if (lvl == NUM_ISA_AVX512) {
        if (!ax_rows(func, dst, src, n, scale, bias))
            am_rows_avx512(func, dst, src, n, scale, bias, alpha);
    }
    else if (lvl == NUM_ISA_AVX2) {
        size_t done = a2_rows(func, dst, src, n, scale, bias);
        if (done < n)
            am_rows_avx2(func, dst + done, src + done, n - done, scale, bias, alpha);
    }
    else
        am_rows_base(func, dst, src, n, scale, bias, alpha);
#else
    am_rows_base(func, dst, src, n, scale, bias, alpha);
#endif
    return true;
}

float act_math_one(unsigned func, float x, float alpha)
{
    float y = x;
    (void)act_math_row(func, &y, &y, 1, 1.0f, -0.0f, alpha);
    return y;
}

bool act_math_reduce_known(unsigned op)
{
    return op == ISA_ALU_add || op == ISA_ALU_max || op == ISA_ALU_min ||
           op == ISA_ALU_abs_max || op == ISA_ALU_abs_min;
}

float act_math_reduce_identity(unsigned op)
{
    switch (op) {
    case ISA_ALU_max: return -INFINITY;
    case ISA_ALU_min:
    case ISA_ALU_abs_min: return INFINITY;
    default: return 0.0f;
    }
}

/* The larger (want_max) or smaller of a and b; a NaN in either wins. */
static float am_pick(float a, float b, bool want_max)
{
    if (a != a || b != b)
        return a != a ? a : b;
    if (want_max)
        return b > a ? b : a;
    return b < a ? b : a;
}

void act_math_reduce(unsigned op, const float *x, size_t n, float *acc)
{
    if (op == ISA_ALU_add) {
        double lanes[AM_BLK] = {0};
#if AM_X86
        int lvl = num_isa_level();
        if (lvl == NUM_ISA_AVX512)
            am_sum_avx512(x, n, lanes);
        else if (lvl == NUM_ISA_AVX2)
            am_sum_avx2(x, n, lanes);
        else
            am_sum_base(x, n, lanes);
#else
        am_sum_base(x, n, lanes);
#endif
        for (size_t w = AM_BLK / 2; w >= 1; w /= 2)
            for (size_t j = 0; j < w; j++)
                lanes[j] += lanes[j + w];
        *acc = (float)((double)*acc + lanes[0]);
        return;
    }
    bool want_max = op == ISA_ALU_max || op == ISA_ALU_abs_max;
    bool absval = op == ISA_ALU_abs_max || op == ISA_ALU_abs_min;
    float a = absval ? fabsf(*acc) : *acc;
    for (size_t i = 0; i < n; i++)
        a = am_pick(a, absval ? fabsf(x[i]) : x[i], want_max);
    *acc = a;
}
