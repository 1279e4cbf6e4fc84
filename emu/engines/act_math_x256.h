/*
 * act_math_x256.h: the AVX2 row loops of gelu and gelu_dx, whose per-piece
 * tables the generic loops of act_math_body.h could reach only by gathers
 * (GCC leaves those loops scalar instead). Each 16-entry table sits in two
 * registers; a lane's entry is two vpermps and a blend on bit 3 of its
 * piece index. The steps are those of am_gelu and am_gelu_dx in act_math.c
 * (same constants, same operations in the same order, FMA where they call
 * AM_FMA, am_scalef as two exact power-of-two products), so the bits are
 * those of the other levels; test_math_levels checks it. act_math.c
 * includes this file once, after its kernels. Not a normal header.
 */
#include <immintrin.h>

#define A2_ATTR __attribute__((target("avx2,fma")))
#define A2_INLINE static inline __attribute__((always_inline)) A2_ATTR

typedef __m256 a2_v; /* 8 binary32 lanes */

/* The tables of one function, two registers each (entries 0-7, 8-15). */
struct a2_gq {
    a2_v c[2];    /* am_gq_c: the pieces' centres */
    a2_v q[6][2]; /* the polynomial's coefficients, highest order first */
};

A2_INLINE a2_v a2_c(float v)
{
    return _mm256_set1_ps(v);
}

A2_INLINE struct a2_gq a2_gq_load(const float (*tab)[16])
{
    struct a2_gq t;
    t.c[0] = _mm256_loadu_ps(am_gq_c);
    t.c[1] = _mm256_loadu_ps(am_gq_c + 8);
#pragma GCC unroll 8
    for (int j = 0; j < 6; j++) {
        t.q[j][0] = _mm256_loadu_ps(tab[j]);
        t.q[j][1] = _mm256_loadu_ps(tab[j] + 8);
    }
    return t;
}

/* Entry idx of the table t in each lane (hi: bit 3 of idx as sign bits). */
A2_INLINE a2_v a2_pick(const a2_v *t, __m256i idx, a2_v hi)
{
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(t[0], idx),
                            _mm256_permutevar8x32_ps(t[1], idx), hi);
}

/* am_scalef: q 2^n as (q 2^k1) 2^k2, k1 = n >> 1, k2 = n - k1. */
A2_INLINE a2_v a2_scalef(a2_v q, a2_v n)
{
    __m256i k = _mm256_cvttps_epi32(n);
    __m256i k1 = _mm256_srai_epi32(k, 1);
    __m256i k2 = _mm256_sub_epi32(k, k1);
    __m256i bias = _mm256_set1_epi32(127);
    a2_v p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k1, bias), 23));
    a2_v p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(q, p1), p2);
}

/* min(|x|, AMF_GQ_AMAX), then am_gq_poly times am_gq_env scaled: the
 * e^(-a^2/2) F(a) of both functions. */
A2_INLINE a2_v a2_gq_value(const struct a2_gq *T, a2_v x)
{
    a2_v a = _mm256_andnot_ps(a2_c(-0.0f), x);
    a2_v ac = _mm256_min_ps(a, a2_c(AMF_GQ_AMAX)); /* a < M ? a : M */
    __m256i idx = _mm256_srli_epi32(_mm256_castps_si256(_mm256_add_ps(ac, a2_c(AMF_GQ_OFF))), 21);
    a2_v hi = _mm256_castsi256_ps(_mm256_slli_epi32(idx, 28));
    a2_v u = _mm256_sub_ps(ac, a2_pick(T->c, idx, hi));
    a2_v q = a2_pick(T->q[0], idx, hi);
#pragma GCC unroll 8
    for (int j = 1; j < 6; j++)
        q = _mm256_fmadd_ps(q, u, a2_pick(T->q[j], idx, hi));
    a2_v tt = _mm256_fmadd_ps(_mm256_mul_ps(ac, ac), a2_c(-0.5f * 1.44269502f),
                              a2_c(12582912.0f));
    a2_v nn = _mm256_sub_ps(tt, a2_c(12582912.0f));
    a2_v s = _mm256_fnmsub_ps(ac, ac, _mm256_mul_ps(nn, a2_c(AMF_GQ_L)));
    a2_v e = a2_c(am_gq_e[0]);
#pragma GCC unroll 8
    for (int j = 1; j < 6; j++)
        e = _mm256_fmadd_ps(e, s, a2_c(am_gq_e[j]));
    return a2_scalef(_mm256_mul_ps(q, e), nn);
}

/* am_is_neg on 8 lanes, as a blend mask. */
A2_INLINE a2_v a2_is_neg(a2_v x)
{
    __m256i lim = _mm256_set1_epi32((int)0xff800001u);
    return _mm256_castsi256_ps(_mm256_cmpgt_epi32(lim, _mm256_castps_si256(x)));
}

/* am_gelu. */
A2_INLINE a2_v a2_gelu(const struct a2_gq *T, a2_v x)
{
    a2_v g = a2_gq_value(T, x);
    return _mm256_blendv_ps(_mm256_add_ps(x, g), g, a2_is_neg(x));
}

/* am_gelu_dx, with the NaN guard of AM_LOOPN (x + x). */
A2_INLINE a2_v a2_gelu_dx(const struct a2_gq *T, a2_v x)
{
    a2_v h = a2_gq_value(T, x);
    a2_v v = _mm256_blendv_ps(_mm256_sub_ps(a2_c(1.0f), h), h, a2_is_neg(x));
    return _mm256_blendv_ps(v, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* dst = f(src * scale + bias) for f gelu (dx 0) or gelu_dx (dx 1), 8 lanes
 * at a time; returns how many elements it did (a multiple of 8), the rest
 * is left to the generic loop (the same bits). */
A2_ATTR static size_t a2_gq_rows(int dx, float *dst, const float *src, size_t n, float scale,
                                 float bias)
{
    const struct a2_gq T = a2_gq_load(dx ? am_gdx_q : am_gelu_q);
    a2_v sc = a2_c(scale), bi = a2_c(bias);
    size_t i = 0;
    if (dx)
        for (; i + 8 <= n; i += 8) {
            a2_v x = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(src + i), sc), bi);
            _mm256_storeu_ps(dst + i, a2_gelu_dx(&T, x));
        }
    else
        for (; i + 8 <= n; i += 8) {
            a2_v x = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(src + i), sc), bi);
            _mm256_storeu_ps(dst + i, a2_gelu(&T, x));
        }
    return i;
}

/* Run func if it is one of this file's (all but a tail of under 8
 * elements); how many elements were done, 0 to leave func to the generic
 * loop. */
static size_t a2_rows(unsigned func, float *dst, const float *src, size_t n, float scale,
                      float bias)
{
    switch (func) {
    case ISA_ACT_gelu: return a2_gq_rows(0, dst, src, n, scale, bias);
    case ISA_ACT_gelu_dx: return a2_gq_rows(1, dst, src, n, scale, bias);
    default: return 0;
    }
}
