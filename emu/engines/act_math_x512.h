/*
 * act_math_x512.h: the AVX-512 row loops of the exp family (exp, tanh,
 * sigmoid, silu, silu_dx, gelu, gelu_apprx_tanh, gelu_apprx_sigmoid,
 * softplus, erf_dx, mish, gelu_dx), of erf, arctan, sin, rsqrt and log,
 * written with intrinsics so that the power-of-two scaling is one scalef,
 * log's reduction one getexp and one getmant, and each of gelu's
 * per-piece coefficients one permute. Each kernel repeats, step for step,
 * the binary32 kernel of act_math.c named in its comment (same constants, same
 * operations in the same order, FMA where that one calls AM_FMA), so the
 * bits are those of the portable and AVX2 loops; test_math_levels checks
 * it. act_math.c includes this file once, after its kernels. Not a normal
 * header.
 */
#include <immintrin.h>

#define AX_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define AX_INLINE static inline __attribute__((always_inline)) AX_ATTR

typedef __m512 ax_v; /* 16 binary32 lanes */

AX_INLINE ax_v ax_c(float v)
{
    return _mm512_set1_ps(v);
}

/* The sign bit of every lane. */
AX_INLINE ax_v ax_sign(void)
{
    return _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
}

/* am_expm1_poly. */
AX_INLINE ax_v ax_expm1_poly(ax_v r)
{
    ax_v q = ax_c(AMF_E5);
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_E4));
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_E3));
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_E2));
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_E1));
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_E0));
    return _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
}

/* am_expf_split on 16 lanes (xl ignored when has_xl is false, as adding
 * -0 changes nothing; the upper clamp skipped when hi is +inf, for callers
 * whose xh is never positive, and the lower one when lo is -inf, for
 * callers that clamped xh already: it changes nothing either). */
AX_INLINE ax_v ax_expf_split(ax_v xh, ax_v xl, int has_xl, float lo, float hi, ax_v *n)
{
    ax_v x = xh;
    if (hi != INFINITY)
        x = _mm512_min_ps(ax_c(hi), xh); /* xh > hi ? hi : xh */
    if (lo != -INFINITY)
        x = _mm512_max_ps(ax_c(lo), x); /* x < lo ? lo : x */
    ax_v t = _mm512_fmadd_ps(x, ax_c(1.44269502f), ax_c(12582912.0f));
    ax_v nn = _mm512_sub_ps(t, ax_c(12582912.0f));
    ax_v r = _mm512_fnmadd_ps(nn, ax_c(AMF_LN2_HI), x);
    r = _mm512_fnmadd_ps(nn, ax_c(AMF_LN2_LO), r);
    if (has_xl)
        r = _mm512_add_ps(r, xl);
    *n = nn;
    return ax_expm1_poly(r);
}

/* am_expf. */
AX_INLINE ax_v ax_expf(ax_v x, const struct am_env *E)
{
    ax_v n;
    ax_v pm = ax_expf_split(x, x, 0, E->expf_lo, E->expf_hi, &n);
    return _mm512_scalef_ps(_mm512_add_ps(ax_c(1.0f), pm), n);
}

/* am_tanh. */
AX_INLINE ax_v ax_tanh(ax_v x, const struct am_env *E)
{
    ax_v n;
    ax_v a = _mm512_mul_ps(ax_c(-2.0f), _mm512_andnot_ps(ax_sign(), x));
    ax_v pm = ax_expf_split(a, a, 0, E->expf_lo, INFINITY, &n); /* a <= 0 */
    ax_v s = _mm512_scalef_ps(ax_c(1.0f), n);
    ax_v m = _mm512_fmadd_ps(s, pm, _mm512_sub_ps(s, ax_c(1.0f)));
    ax_v t = _mm512_div_ps(_mm512_xor_ps(m, ax_sign()), _mm512_add_ps(ax_c(2.0f), m));
    return _mm512_or_ps(_mm512_andnot_ps(ax_sign(), t), _mm512_and_ps(ax_sign(), x));
}

/* am_sig_times. */
AX_INLINE ax_v ax_sig_times(ax_v x, ax_v v, const struct am_env *E)
{
    ax_v n;
    ax_v ah = _mm512_or_ps(v, ax_sign()); /* -|v| */
    __mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
    ax_v pm = ax_expf_split(ah, ah, 0, E->sig_lo, INFINITY, &n); /* ah <= 0 */
    ax_v p1 = _mm512_add_ps(ax_c(1.0f), pm);
    ax_v den = _mm512_add_ps(ax_c(1.0f), _mm512_scalef_ps(p1, n));
    ax_v xc = _mm512_max_ps(ax_c(-200.0f), x); /* x < -200 ? -200 : x */
    ax_v num = _mm512_mask_blend_ps(neg, x, _mm512_mul_ps(xc, p1));
    return _mm512_scalef_ps(_mm512_div_ps(num, den), _mm512_maskz_mov_ps(neg, n));
}

/* am_sig_finish. */
AX_INLINE ax_v ax_sig_finish(ax_v x, ax_v pm, ax_v nn)
{
    ax_v p1 = _mm512_add_ps(ax_c(1.0f), pm);
    ax_v den = _mm512_add_ps(ax_c(1.0f), _mm512_scalef_ps(p1, nn));
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    ax_v xc = _mm512_max_ps(ax_c(-200.0f), x); /* x < -200 ? -200 : x */
    ax_v num = _mm512_mask_blend_ps(neg, x, _mm512_mul_ps(xc, p1));
    return _mm512_scalef_ps(_mm512_div_ps(num, den), _mm512_maskz_mov_ps(neg, nn));
}

/* am_gt_finish. */
AX_INLINE ax_v ax_gt_finish(ax_v x, ax_v a, ax_v p1, ax_v nn)
{
    ax_v den = _mm512_add_ps(ax_c(1.0f), _mm512_scalef_ps(p1, nn));
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    ax_v num = _mm512_mask_blend_ps(neg, x, _mm512_fnmadd_ps(a, p1, ax_c(-0.0f))); /* -(a p1) */
    ax_v q = _mm512_div_ps(num, den);
    return _mm512_mask_scalef_ps(q, neg, q, nn); /* q itself where x >= 0 (scaling by 2^0) */
}

/* am_gelu_tanh, with am_exp2_poly. */
AX_INLINE ax_v ax_gelu_tanh(ax_v x)
{
    /* min(|x|, 11): 11 for a quiet NaN as in am_gelu_tanh, a quiet NaN for a
     * signalling one; either way the quotient gives x quieted (x / NaN is
     * the first operand's NaN on x86) */
    ax_v ac = _mm512_range_ps(x, ax_c(11.0f), 0x0A);
    ax_v x2 = _mm512_mul_ps(ac, ac);
    ax_v x2l = _mm512_fmsub_ps(ac, ac, x2);
    ax_v u = _mm512_fmadd_ps(ax_c(AMF_GT_C3), x2, ax_c(AMF_GT_C1H));
    ax_v ul = _mm512_fmadd_ps(ax_c(AMF_GT_C3), x2, _mm512_sub_ps(ax_c(AMF_GT_C1H), u));
    ax_v lo = _mm512_fmadd_ps(ax_c(AMF_GT_C3L), x2, ax_c(AMF_GT_C1L));
    ul = _mm512_add_ps(_mm512_fmadd_ps(ax_c(AMF_GT_C3), x2l, ul), lo);
    ax_v t = _mm512_fnmadd_ps(ac, u, ax_c(12582912.0f));
    ax_v nn = _mm512_sub_ps(t, ax_c(12582912.0f));
    ax_v f = _mm512_fnmsub_ps(ac, u, nn);
    f = _mm512_fnmadd_ps(ac, ul, f);
    ax_v p = ax_c(am_gt_p[0]);
    for (int i = 1; i < 5; i++)
        p = _mm512_fmadd_ps(p, f, ax_c(am_gt_p[i]));
    return ax_gt_finish(x, ac, _mm512_fmadd_ps(f, p, ax_c(1.0f)), nn);
}

/* am_gelu_sigmoid. */
AX_INLINE ax_v ax_gelu_sigmoid(ax_v x)
{
    ax_v ac = _mm512_min_ps(_mm512_andnot_ps(ax_sign(), x), ax_c(88.0f)); /* a < 88 ? a : 88 */
    ax_v t = _mm512_fmadd_ps(ac, ax_c(AMF_GS_L2E), ax_c(12582912.0f));
    ax_v nn = _mm512_sub_ps(t, ax_c(12582912.0f));
    ax_v r = _mm512_fnmsub_ps(ax_c(AMF_GS_C), ac, _mm512_mul_ps(nn, ax_c(AMF_LN2_HI)));
    r = _mm512_fnmadd_ps(nn, ax_c(AMF_LN2_LO), r);
    r = _mm512_fnmadd_ps(ax_c(AMF_GS_CL), ac, r);
    return ax_sig_finish(x, ax_expm1_poly(r), nn);
}

/* The 16-entry tables of gelu's or gelu_dx's pieces, one register each. */
struct ax_gq {
    ax_v c;    /* am_gq_c: the pieces' centres */
    ax_v q[6]; /* the polynomial's coefficients, highest order first */
    ax_v e[6]; /* am_gq_e, broadcast */
};

AX_INLINE struct ax_gq ax_gq_load(const float (*tab)[16])
{
    struct ax_gq t;
    t.c = _mm512_loadu_ps(am_gq_c);
#pragma GCC unroll 8
    for (int j = 0; j < 6; j++) {
        t.q[j] = _mm512_loadu_ps(tab[j]);
        t.e[j] = ax_c(am_gq_e[j]);
    }
    return t;
}

/* am_gq_index, am_gq_poly and am_gq_env on 16 lanes: *e and *n of the
 * envelope, the polynomial returned (each coefficient by one permute). */
AX_INLINE ax_v ax_gq_parts(const struct ax_gq *T, ax_v ac, ax_v *e, ax_v *n)
{
    __m512i idx = _mm512_srli_epi32(_mm512_castps_si512(_mm512_add_ps(ac, ax_c(AMF_GQ_OFF))), 21);
    ax_v u = _mm512_sub_ps(ac, _mm512_permutexvar_ps(idx, T->c));
    ax_v q = _mm512_permutexvar_ps(idx, T->q[0]);
#pragma GCC unroll 8
    for (int j = 1; j < 6; j++)
        q = _mm512_fmadd_ps(q, u, _mm512_permutexvar_ps(idx, T->q[j]));
    ax_v tt = _mm512_fmadd_ps(_mm512_mul_ps(ac, ac), ax_c(-0.5f * 1.44269502f),
                              ax_c(12582912.0f));
    ax_v nn = _mm512_sub_ps(tt, ax_c(12582912.0f));
    ax_v s = _mm512_fnmsub_ps(ac, ac, _mm512_mul_ps(nn, ax_c(AMF_GQ_L)));
    ax_v ee = T->e[0];
#pragma GCC unroll 8
    for (int j = 1; j < 6; j++)
        ee = _mm512_fmadd_ps(ee, s, T->e[j]);
    *e = ee;
    *n = nn;
    return q;
}

/* am_gelu (the sign by a compare: x = -0 takes x + g = -0 here, g there,
 * the same). */
AX_INLINE ax_v ax_gelu(ax_v x, const struct ax_gq *T)
{
    ax_v ac = _mm512_min_ps(_mm512_andnot_ps(ax_sign(), x), ax_c(AMF_GQ_AMAX)); /* a < M ? a : M */
    ax_v e, n;
    ax_v q = ax_gq_parts(T, ac, &e, &n);
    ax_v g = _mm512_scalef_ps(_mm512_mul_ps(q, e), n);
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    return _mm512_mask_add_ps(g, (__mmask16)~neg, x, g);
}

/* am_rsqrt. */
AX_INLINE ax_v ax_rsqrt(ax_v x)
{
    __mmask16 big = _mm512_cmp_ps_mask(x, ax_c(0x1p64f), _CMP_GT_OQ);
    __mmask16 small = _mm512_cmp_ps_mask(x, ax_c(0x1p-64f), _CMP_LT_OQ);
    ax_v xs = _mm512_mask_mul_ps(x, big, x, ax_c(0x1p-64f));
    xs = _mm512_mask_mul_ps(xs, small, xs, ax_c(0x1p64f));
    ax_v r = _mm512_div_ps(ax_c(1.0f), _mm512_sqrt_ps(xs));
    ax_v a = _mm512_mul_ps(r, r);
    ax_v ea = _mm512_fmsub_ps(r, r, a);
    ax_v e = _mm512_fnmadd_ps(xs, a, ax_c(1.0f));
    e = _mm512_fnmadd_ps(xs, ea, e);
    ax_v c = _mm512_fmadd_ps(r, _mm512_mul_ps(ax_c(0.5f), e), r);
    c = _mm512_mask_mul_ps(c, big, c, ax_c(0x1p-32f));
    c = _mm512_mask_mul_ps(c, small, c, ax_c(0x1p32f));
    __mmask16 fin = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GT_OQ) &
                    _mm512_cmp_ps_mask(x, ax_c(INFINITY), _CMP_LT_OQ);
    return _mm512_mask_blend_ps(fin, r, c);
}

/* am_log_reduced: e ln 2 + ln(1 + f). */
AX_INLINE ax_v ax_log_reduced(ax_v e, ax_v f)
{
    ax_v p = ax_c(am_log_p[0]);
    for (int k = 1; k < 9; k++)
        p = _mm512_fmadd_ps(p, f, ax_c(am_log_p[k]));
    ax_v f2 = _mm512_mul_ps(f, f);
    ax_v lm = _mm512_add_ps(f, _mm512_fmadd_ps(_mm512_mul_ps(f2, f), p,
                                               _mm512_mul_ps(ax_c(-0.5f), f2)));
    return _mm512_fmadd_ps(e, ax_c(AMF_LN2_HI), _mm512_fmadd_ps(e, ax_c(AMF_LN2_LO), lm));
}

/* am_log, with getexp/getmant for the exponent and the mantissa in [1, 2)
 * (the same numbers as am_log's bit fields, subnormals included), and its
 * special cases by one fixupimm, which picks a result by the class of x:
 * 4 bits per class, from the lowest: QNaN and SNaN -> x quieted (2),
 * +-0 -> -inf (4), +1 -> v (0), -inf -> the default NaN 0xffc00000 (3),
 * +inf -> +inf (5), negative -> default NaN (3), positive -> v (0). So
 * a NaN x needs no guard. */
#define AX_LOG_FIXUP 0x03530422
AX_INLINE ax_v ax_log(ax_v x)
{
    ax_v e = _mm512_getexp_ps(x);
    ax_v m = _mm512_getmant_ps(x, _MM_MANT_NORM_1_2, _MM_MANT_SIGN_zero);
    __mmask16 big = _mm512_cmp_ps_mask(m, ax_c(1.41421354f), _CMP_GT_OQ);
    m = _mm512_mask_mul_ps(m, big, m, ax_c(0.5f));
    e = _mm512_mask_add_ps(e, big, e, ax_c(1.0f));
    ax_v v = ax_log_reduced(e, _mm512_sub_ps(m, ax_c(1.0f)));
    return _mm512_fixupimm_ps(v, x, _mm512_set1_epi32(AX_LOG_FIXUP), 0);
}

/* am_softplus. */
AX_INLINE ax_v ax_softplus(ax_v x, const struct am_env *E)
{
    ax_v pos = _mm512_max_ps(_mm512_setzero_ps(), x); /* 0 > x ? 0 : x (NaN: x) */
    ax_v n, a = _mm512_or_ps(x, ax_sign());           /* -|x| */
    a = _mm512_max_ps(a, ax_c(E->expf_lo));           /* a > lo ? a : lo (NaN: lo) */
    ax_v pm = ax_expf_split(a, a, 0, E->expf_lo, INFINITY, &n); /* a <= 0 */
    ax_v e = _mm512_scalef_ps(_mm512_add_ps(ax_c(1.0f), pm), n);
    ax_v h = ax_c(am_sp_h[0]);
    for (int i = 1; i < 9; i++)
        h = _mm512_fmadd_ps(h, e, ax_c(am_sp_h[i]));
    return _mm512_fmadd_ps(e, h, pos);
}

/* am_silu_dx, with am_expm1_q4. */
AX_INLINE ax_v ax_silu_dx(ax_v x, const struct am_env *E)
{
    ax_v xc = _mm512_min_ps(ax_c(200.0f), _mm512_max_ps(ax_c(-200.0f), x));
    ax_v n;
    ax_v ah = _mm512_or_ps(xc, ax_sign());       /* -|xc| */
    ah = _mm512_max_ps(ah, ax_c(E->sig_lo));     /* ah > lo ? ah : lo (NaN: lo) */
    ax_v t = _mm512_fmadd_ps(ah, ax_c(1.44269502f), ax_c(12582912.0f));
    n = _mm512_sub_ps(t, ax_c(12582912.0f));
    ax_v r = _mm512_fnmadd_ps(n, ax_c(AMF_LN2_HI), ah);
    r = _mm512_fnmadd_ps(n, ax_c(AMF_LN2_LO), r);
    ax_v q = _mm512_fmadd_ps(ax_c(AMF_Q4_4), r, ax_c(AMF_Q4_3));
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_Q4_2));
    q = _mm512_fmadd_ps(q, r, ax_c(AMF_Q4_1));
    q = _mm512_fmadd_ps(q, r, ax_c(0.5f));
    ax_v pm = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, r);
    ax_v s = _mm512_scalef_ps(ax_c(1.0f), n);
    ax_v e = _mm512_fmadd_ps(s, pm, s);
    ax_v d2 = _mm512_fmadd_ps(e, _mm512_add_ps(ax_c(2.0f), e), ax_c(1.0f));
    ax_v x1 = _mm512_add_ps(ax_c(1.0f), xc);
    ax_v w = _mm512_fmadd_ps(s, pm, _mm512_add_ps(x1, s));
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    ax_v num = _mm512_mask_blend_ps(neg, _mm512_fmadd_ps(e, x1, ax_c(1.0f)),
                                    _mm512_fmadd_ps(pm, w, w));
    ax_v y = _mm512_div_ps(num, d2);
    return _mm512_mask_scalef_ps(y, neg, y, n); /* y itself where x >= 0 (scaling by 2^0) */
}

/* am_erf_dx. */
AX_INLINE ax_v ax_erf_dx(ax_v x, const struct am_env *E)
{
    ax_v ac = _mm512_min_ps(_mm512_andnot_ps(ax_sign(), x), ax_c(11.0f)); /* a < 11 ? a : 11 */
    ax_v sq = _mm512_mul_ps(ac, ac);
    ax_v sl = _mm512_fmsub_ps(ac, ac, sq);
    ax_v n;
    ax_v pm = ax_expf_split(_mm512_xor_ps(sq, ax_sign()), _mm512_xor_ps(sl, ax_sign()), 1,
                            E->sig_lo, INFINITY, &n); /* -sq <= 0 */
    ax_v lo = _mm512_fmadd_ps(ax_c(AMF_EDX_CL), pm, ax_c(AMF_EDX_CL));
    ax_v q = _mm512_add_ps(ax_c(AMF_EDX_CH), _mm512_fmadd_ps(ax_c(AMF_EDX_CH), pm, lo));
    return _mm512_scalef_ps(q, n);
}

/* am_mish. */
AX_INLINE ax_v ax_mish(ax_v x, const struct am_env *E)
{
    ax_v n;
    ax_v xe = _mm512_min_ps(x, ax_c(E->mish_hi)); /* x < hi ? x : hi (NaN: hi) */
    ax_v pm = ax_expf_split(xe, xe, 0, E->sig_lo, INFINITY, &n); /* xe <= hi already */
    ax_v e = _mm512_scalef_ps(_mm512_add_ps(ax_c(1.0f), pm), n);
    ax_v w = _mm512_add_ps(e, ax_c(2.0f));
    ax_v xc = _mm512_max_ps(ax_c(-200.0f), x); /* x < -200 ? -200 : x */
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LE_OQ);
    ax_v num = _mm512_mask_blend_ps(neg, ax_c(2.0f), _mm512_mul_ps(xc, _mm512_fmadd_ps(pm, w, w)));
    ax_v q = _mm512_scalef_ps(_mm512_div_ps(num, _mm512_fmadd_ps(e, w, ax_c(2.0f))),
                              _mm512_maskz_mov_ps(neg, n));
    ax_v xm = _mm512_min_ps(x, ax_c(0x1.fffffep127f)); /* x < max ? x : max (NaN: max) */
    ax_v pos = _mm512_fnmadd_ps(xm, q, x);
    return _mm512_mask_blend_ps(neg, pos, q);
}

/* am_erf. */
AX_INLINE ax_v ax_erf(ax_v x)
{
    ax_v a = _mm512_andnot_ps(ax_sign(), x);
    ax_v z = _mm512_min_ps(a, ax_c(4.0f)); /* a < 4 ? a : 4 */
    __mmask16 near = _mm512_cmp_ps_mask(a, ax_c(2.0f), _CMP_NGT_UQ); /* !(a > 2) */
    ax_v s = _mm512_fmadd_ps(ax_c(0.5f), _mm512_mul_ps(z, z), ax_c(-1.0f));
    ax_v v = _mm512_mask_blend_ps(near, _mm512_sub_ps(z, ax_c(3.0f)), s);
    ax_v p = _mm512_mask_blend_ps(near, ax_c(am_erfc_q[0]), ax_c(am_erf_p[0]));
#pragma GCC unroll 16
    for (int i = 1; i < 11; i++)
        p = _mm512_fmadd_ps(p, v, _mm512_mask_blend_ps(near, ax_c(am_erfc_q[i]), ax_c(am_erf_p[i])));
    ax_v r = _mm512_fmadd_ps(_mm512_mask_blend_ps(near, ax_c(-1.0f), x), p,
                             _mm512_mask_blend_ps(near, ax_c(1.0f), ax_c(-0.0f)));
    return _mm512_or_ps(r, _mm512_and_ps(x, ax_sign()));
}

/* am_gelu_dx (the sign by a compare: x = -0 takes 1 - h here, h there,
 * both 1/2), and the guard of AM_LOOPN (a NaN x gives x + x, x quieted)
 * by one fixupimm: QNaN and SNaN -> x quieted (token 2), any other class
 * -> the value (0). */
#define AX_NAN_FIXUP 0x00000022
AX_INLINE ax_v ax_gelu_dx(ax_v x, const struct ax_gq *T)
{
    ax_v ac = _mm512_min_ps(_mm512_andnot_ps(ax_sign(), x), ax_c(AMF_GQ_AMAX)); /* a < M ? a : M */
    ax_v e, n;
    ax_v q = ax_gq_parts(T, ac, &e, &n);
    ax_v h = _mm512_scalef_ps(_mm512_mul_ps(q, e), n);
    __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
    ax_v v = _mm512_mask_sub_ps(h, (__mmask16)~neg, ax_c(1.0f), h);
    return _mm512_fixupimm_ps(v, x, _mm512_set1_epi32(AX_NAN_FIXUP), 0);
}

/* am_atan. */
AX_INLINE ax_v ax_atan(ax_v x)
{
    ax_v a = _mm512_andnot_ps(ax_sign(), x);
    __mmask16 mid = _mm512_cmp_ps_mask(a, ax_c(0.414213568f), _CMP_GT_OQ);
    __mmask16 big = _mm512_cmp_ps_mask(a, ax_c(2.41421366f), _CMP_GT_OQ);
    ax_v n = _mm512_mask_blend_ps(mid, a, _mm512_sub_ps(a, ax_c(1.0f)));
    n = _mm512_mask_blend_ps(big, n, ax_c(-1.0f));
    ax_v d = _mm512_mask_blend_ps(mid, ax_c(1.0f), _mm512_add_ps(a, ax_c(1.0f)));
    d = _mm512_mask_blend_ps(big, d, a);
    ax_v oh = _mm512_maskz_mov_ps(mid, ax_c(AMF_PI4_HI));
    oh = _mm512_mask_blend_ps(big, oh, ax_c(AMF_PI2_HI));
    ax_v ol = _mm512_maskz_mov_ps(mid, ax_c(AMF_PI4_LO));
    ol = _mm512_mask_blend_ps(big, ol, ax_c(AMF_PI2_LO));
    ax_v v = _mm512_div_ps(n, d);
    ax_v z = _mm512_mul_ps(v, v);
    ax_v r = ax_c(am_atan_r[0]);
    for (int i = 1; i < 5; i++)
        r = _mm512_fmadd_ps(r, z, ax_c(am_atan_r[i]));
    ax_v at = _mm512_fmadd_ps(_mm512_mul_ps(v, z), r, v);
    ax_v res = _mm512_add_ps(oh, _mm512_add_ps(at, ol));
    return _mm512_or_ps(res, _mm512_and_ps(x, ax_sign()));
}

/* x * scale + bias, the steps that can change a number only: no multiply
 * for scale 1 (x * 1 is x), no add for bias -0 (v + -0 is v, zeros
 * included); bit 0 of mode asks for the multiply, bit 1 for the add. */
AX_INLINE ax_v ax_affine(ax_v x, int mode, ax_v sc, ax_v bi)
{
    if (mode & 1)
        x = _mm512_mul_ps(x, sc);
    if (mode & 2)
        x = _mm512_add_ps(x, bi);
    return x;
}

/* am_sinf_poly: r reduced, q holding the low bits of k. */
AX_INLINE ax_v ax_sinf_poly(ax_v r, __m512i q)
{
    ax_v z = _mm512_mul_ps(r, r);
    ax_v ps = ax_c(am_sin_s[0]), pc = ax_c(am_sin_c[0]);
    for (int i = 1; i < 4; i++) {
        ps = _mm512_fmadd_ps(ps, z, ax_c(am_sin_s[i]));
        pc = _mm512_fmadd_ps(pc, z, ax_c(am_sin_c[i]));
    }
    ax_v sn = _mm512_fmadd_ps(_mm512_mul_ps(r, z), ps, r);
    sn = _mm512_or_ps(_mm512_andnot_ps(ax_sign(), sn), _mm512_and_ps(ax_sign(), r));
    ax_v cs = _mm512_fmadd_ps(_mm512_mul_ps(z, z), pc,
                              _mm512_fmadd_ps(ax_c(-0.5f), z, ax_c(1.0f)));
    __mmask16 odd = _mm512_test_epi32_mask(q, _mm512_set1_epi32(1));
    ax_v v = _mm512_mask_blend_ps(odd, sn, cs);
    __m512i flip = _mm512_slli_epi32(_mm512_and_si512(q, _mm512_set1_epi32(2)), 30);
    return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), flip));
}

/* am_sinf_small: the reduction on two sets of 8 binary64 lanes. */
AX_INLINE ax_v ax_sinf_small(ax_v x)
{
    __m512d dh[2] = {_mm512_cvtps_pd(_mm512_castps512_ps256(x)),
                     _mm512_cvtps_pd(_mm512_extractf32x8_ps(x, 1))};
    __m256 rh[2];
    __m256i qh[2];
    for (int h = 0; h < 2; h++) {
        __m512d d = dh[h];
        __m512d t = _mm512_add_pd(_mm512_mul_pd(d, _mm512_set1_pd(0.63661977236758138)),
                                  _mm512_set1_pd(0x1.8p52));
        __m512d k = _mm512_sub_pd(t, _mm512_set1_pd(0x1.8p52));
        __m512d r = _mm512_sub_pd(d, _mm512_mul_pd(k, _mm512_set1_pd(AM_PIO2_1)));
        r = _mm512_sub_pd(r, _mm512_mul_pd(k, _mm512_set1_pd(AM_PIO2_2)));
        r = _mm512_sub_pd(r, _mm512_mul_pd(k, _mm512_set1_pd(AM_PIO2_3)));
        rh[h] = _mm512_cvtpd_ps(r);
        qh[h] = _mm512_cvtepi64_epi32(_mm512_castpd_si512(t));
    }
    ax_v r = _mm512_insertf32x8(_mm512_castps256_ps512(rh[0]), rh[1], 1);
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(qh[0]), qh[1], 1);
    return ax_sinf_poly(r, q);
}

/* am_sinf_fast. */
AX_INLINE ax_v ax_sinf_fast(ax_v x)
{
    ax_v t = _mm512_fmadd_ps(x, ax_c(0.636619747f), ax_c(12582912.0f));
    ax_v k = _mm512_sub_ps(t, ax_c(12582912.0f));
    ax_v r = _mm512_fnmadd_ps(k, ax_c(AMF_PIO2_1), x);
    r = _mm512_fnmadd_ps(k, ax_c(AMF_PIO2_2), r);
    r = _mm512_fnmadd_ps(k, ax_c(AMF_PIO2_3), r);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ), x);
    return ax_sinf_poly(r, _mm512_castps_si512(t));
}

/* y = ax_sinf_fast(x) on the lanes of km, corrected where |x| >= 2^10 (or
 * NaN): the binary64 reduction there, libm for |x| >= 2^20 or NaN. */
AX_INLINE ax_v ax_sin_fix(ax_v x, ax_v y, __mmask16 km, const struct am_env *E)
{
    ax_v a = _mm512_andnot_ps(ax_sign(), x);
    __mmask16 slow = (__mmask16)(~_mm512_cmp_ps_mask(a, ax_c(E->sin_fast), _CMP_LT_OQ) & km);
    if (__builtin_expect(slow == 0, 1))
        return y;
    y = _mm512_mask_blend_ps(slow, y, ax_sinf_small(x));
    __mmask16 far = (__mmask16)(~_mm512_cmp_ps_mask(a, ax_c((float)E->sin_big), _CMP_LT_OQ) & km);
    if (far) {
        float xs[16], ys[16];
        _mm512_storeu_ps(xs, x);
        _mm512_storeu_ps(ys, y);
        for (int j = 0; j < 16; j++)
            if (far >> j & 1)
                ys[j] = (float)sin((double)xs[j]);
        y = _mm512_loadu_ps(ys);
    }
    return y;
}

/* am_sin_rows on 16 lanes (two vectors a step, as AX_LOOPG): the binary32
 * kernel; only when some lane has |x| >= 2^10 (or NaN) the binary64
 * reduction for those lanes, and libm for |x| >= 2^20 or NaN as there. */
AX_ATTR static void ax_sin_rows(float *dst, const float *src, size_t n, float scale, float bias,
                                const struct am_env *E)
{
    int mode = (scale != 1.0f) | (am_fbits(bias) != 0x80000000u) << 1;
    ax_v sc = ax_c(scale), bi = ax_c(bias);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        ax_v xa = ax_affine(_mm512_loadu_ps(src + i), mode, sc, bi);
        ax_v xb = ax_affine(_mm512_loadu_ps(src + i + 16), mode, sc, bi);
        ax_v ya = ax_sin_fix(xa, ax_sinf_fast(xa), 0xFFFF, E);
        ax_v yb = ax_sin_fix(xb, ax_sinf_fast(xb), 0xFFFF, E);
        _mm512_storeu_ps(dst + i, ya);
        _mm512_storeu_ps(dst + i + 16, yb);
    }
    for (; i < n; i += 16) {
        size_t m = n - i < 16 ? n - i : 16;
        __mmask16 km = (__mmask16)((1u << m) - 1u);
        ax_v x = ax_affine(_mm512_maskz_loadu_ps(km, src + i), mode, sc, bi);
        _mm512_mask_storeu_ps(dst + i, km, ax_sin_fix(x, ax_sinf_fast(x), km, E));
    }
}

/* The loop: dst = f(src * scale + bias), 32 lanes at a time (two
 * independent vectors keep more work in flight), then 16, the tail
 * masked. The affine step skips what changes no number (ax_affine); a NaN
 * x gives x + x, as in AM_LOOP. */
#define AX_LOOPG(EXPR, GUARD)                                                          \
    do {                                                                               \
        int mode_ = (scale != 1.0f) | (am_fbits(bias) != 0x80000000u) << 1;            \
        ax_v sc_ = ax_c(scale), bi_ = ax_c(bias);                                      \
        size_t i_ = 0;                                                                 \
        for (; i_ + 32 <= n; i_ += 32) { /* two independent vectors per step */        \
            ax_v xa_ = _mm512_loadu_ps(src + i_);                                      \
            ax_v xb_ = _mm512_loadu_ps(src + i_ + 16);                                 \
            xa_ = ax_affine(xa_, mode_, sc_, bi_);                                     \
            xb_ = ax_affine(xb_, mode_, sc_, bi_);                                     \
            ax_v ya_, yb_;                                                             \
            {                                                                          \
                ax_v x = xa_;                                                          \
                ya_ = (EXPR);                                                          \
            }                                                                          \
            {                                                                          \
                ax_v x = xb_;                                                          \
                yb_ = (EXPR);                                                          \
            }                                                                          \
            if (GUARD) {                                                               \
                __mmask16 na_ = _mm512_cmp_ps_mask(xa_, xa_, _CMP_UNORD_Q);            \
                __mmask16 nb_ = _mm512_cmp_ps_mask(xb_, xb_, _CMP_UNORD_Q);            \
                ya_ = _mm512_mask_add_ps(ya_, na_, xa_, xa_);                          \
                yb_ = _mm512_mask_add_ps(yb_, nb_, xb_, xb_);                          \
            }                                                                          \
            _mm512_storeu_ps(dst + i_, ya_);                                           \
            _mm512_storeu_ps(dst + i_ + 16, yb_);                                      \
        }                                                                              \
        for (; i_ < n; i_ += 16) {                                                     \
            size_t m_ = n - i_ < 16 ? n - i_ : 16;                                     \
            __mmask16 k_ = (__mmask16)((1u << m_) - 1u);                               \
            ax_v x = _mm512_maskz_loadu_ps(k_, src + i_);                             \
            x = ax_affine(x, mode_, sc_, bi_);                                         \
            ax_v y_ = (EXPR);                                                          \
            if (GUARD)                                                                 \
                y_ = _mm512_mask_add_ps(y_, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x, x); \
            _mm512_mask_storeu_ps(dst + i_, k_, y_);                                   \
        }                                                                              \
    } while (0)
#define AX_LOOP(EXPR) AX_LOOPG(EXPR, 1)
#define AX_LOOPU(EXPR) AX_LOOPG(EXPR, 0) /* no guard: the kernel keeps x's NaN */

/* Run func if it is one of this file's; false to leave it to the generic
 * loops. */
AX_ATTR static bool ax_rows(unsigned func, float *dst, const float *src, size_t n, float scale,
                            float bias)
{
    struct am_env env = AM_ENV_INIT;
    __asm__ volatile("" : : "r"(&env) : "memory");
    const struct am_env *E = &env;
    switch (func) {
    case ISA_ACT_exp: AX_LOOPU(ax_expf(x, E)); return true;
    case ISA_ACT_tanh: AX_LOOPU(ax_tanh(x, E)); return true;
    case ISA_ACT_sigmoid: AX_LOOPU(ax_sig_times(ax_c(1.0f), x, E)); return true;
    case ISA_ACT_silu: AX_LOOPU(ax_sig_times(x, x, E)); return true;
    case ISA_ACT_gelu_apprx_tanh: AX_LOOPU(ax_gelu_tanh(x)); return true;
    case ISA_ACT_gelu_apprx_sigmoid: AX_LOOPU(ax_gelu_sigmoid(x)); return true;
    case ISA_ACT_gelu: {
        const struct ax_gq T = ax_gq_load(am_gelu_q);
        AX_LOOPU(ax_gelu(x, &T));
        return true;
    }
    case ISA_ACT_rsqrt: AX_LOOPU(ax_rsqrt(x)); return true;
    case ISA_ACT_log: AX_LOOPU(ax_log(x)); return true;
    case ISA_ACT_softplus: AX_LOOPU(ax_softplus(x, E)); return true;
    case ISA_ACT_silu_dx: AX_LOOPU(ax_silu_dx(x, E)); return true;
    case ISA_ACT_erf_dx: AX_LOOP(ax_erf_dx(x, E)); return true;
    case ISA_ACT_mish: AX_LOOPU(ax_mish(x, E)); return true;
    case ISA_ACT_erf: AX_LOOPU(ax_erf(x)); return true;
    case ISA_ACT_gelu_dx: {
        const struct ax_gq T = ax_gq_load(am_gdx_q);
        AX_LOOPU(ax_gelu_dx(x, &T));
        return true;
    }
    case ISA_ACT_arctan: AX_LOOP(ax_atan(x)); return true;
    case ISA_ACT_sin: ax_sin_rows(dst, src, n, scale, bias, E); return true;
    default: return false;
    }
}

#undef AX_LOOP
#undef AX_LOOPU
#undef AX_LOOPG
