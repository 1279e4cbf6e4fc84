/*
 * act_math_body.h: the row loops of act_math.c, one copy per ISA level.
 * act_math.c includes this file once per level after defining AM_SUFFIX
 * (a name suffix) and AM_ATTR (function attributes: the target ISA); the
 * kernels it calls are always_inline, so each copy is compiled and
 * vectorised for its level. Not a normal header.
 */
#define AM_CAT2(a, b) a##_##b
#define AM_CAT(a, b) AM_CAT2(a, b)
#define AM_FN(name) AM_CAT(name, AM_SUFFIX)

/* dst[i] = EXPR of x = src[i] * scale + bias, in fixed blocks the
 * vectoriser fills. Inputs are read in place; results go to a local block
 * first (dst may be src) and are then copied out. The tail runs through
 * the same block code. GUARD: a NaN x gives x quieted (x + x), whatever
 * EXPR's operand order would make of two NaNs (the functions that only
 * pass x on need no guard). */
#define AM_LOOPG(EXPR, GUARD)                                                     \
    do {                                                                          \
        size_t i_ = 0;                                                            \
        for (; i_ + AM_BLK <= n; i_ += AM_BLK) {                                  \
            float out_[AM_BLK];                                                   \
            const float *in_ = src + i_;                                          \
            for (size_t j_ = 0; j_ < AM_BLK; j_++) {                              \
                float x = in_[j_] * scale + bias;                                 \
                out_[j_] = (GUARD) && x != x ? x + x : (EXPR);                    \
            }                                                                     \
            memcpy(dst + i_, out_, sizeof out_);                                  \
        }                                                                         \
        if (i_ < n) {                                                             \
            float in_[AM_BLK] = {0}, out_[AM_BLK];                                \
            for (size_t j_ = 0; j_ < n - i_; j_++)                                \
                in_[j_] = src[i_ + j_];                                           \
            for (size_t j_ = 0; j_ < AM_BLK; j_++) {                              \
                float x = in_[j_] * scale + bias;                                 \
                out_[j_] = (GUARD) && x != x ? x + x : (EXPR);                    \
            }                                                                     \
            for (size_t j_ = 0; j_ < n - i_; j_++)                                \
                dst[i_ + j_] = out_[j_];                                          \
        }                                                                         \
    } while (0)
#define AM_LOOP(EXPR) AM_LOOPG(EXPR, 0)  /* x passed on: no guard */
#define AM_LOOPN(EXPR) AM_LOOPG(EXPR, 1) /* guarded */

/* sin: the binary32 block kernel, then for the rare |x| >= 2^10 the
 * binary64 reduction, and libm for |x| >= 2^20 or NaN (binary64 sin of a
 * binary32 input, rounded once). ax_sin_rows in act_math_x512.h does the
 * same. */
AM_ATTR static void AM_FN(am_sin_rows)(float *dst, const float *src, size_t n, float scale,
                                       float bias, const struct am_env *E)
{
    for (size_t i = 0; i < n; i += AM_BLK) {
        size_t m = n - i < AM_BLK ? n - i : AM_BLK;
        float in[AM_BLK] = {0}, out[AM_BLK];
        memcpy(in, src + i, m * sizeof(float));
        for (size_t j = 0; j < AM_BLK; j++) {
            in[j] = in[j] * scale + bias;
            out[j] = am_sinf_fast(in[j]);
        }
        for (size_t j = 0; j < m; j++) {
            float a = fabsf(in[j]);
            if (!(a < E->sin_fast))
                out[j] = a < (float)E->sin_big ? am_sinf_small(in[j]) : (float)sin((double)in[j]);
        }
        memcpy(dst + i, out, m * sizeof(float));
    }
}

AM_ATTR static void AM_FN(am_rows)(unsigned func, float *dst, const float *src, size_t n,
                                   float scale, float bias, float alpha)
{
    struct am_env env = AM_ENV_INIT;
    __asm__ volatile("" : : "r"(&env) : "memory");
    const struct am_env *E = &env;
    switch (func) {
    case ISA_ACT_copy: AM_LOOP(x); break;
    case ISA_ACT_exp: AM_LOOP(am_expf(x, E)); break;
    case ISA_ACT_log: AM_LOOPN(am_log(x)); break;
    case ISA_ACT_tanh: AM_LOOP(am_tanh(x, E)); break;
    case ISA_ACT_sigmoid: AM_LOOP(am_sigmoid(x, E)); break;
    case ISA_ACT_relu: AM_LOOP(x <= 0.0f ? 0.0f : x); break;
    case ISA_ACT_prelu: AM_LOOP(x > 0.0f ? x : alpha * x); break;
    case ISA_ACT_gelu: AM_LOOP(am_gelu(x)); break;
    case ISA_ACT_gelu_dx: AM_LOOPN(am_gelu_dx(x)); break;
    case ISA_ACT_gelu_apprx_tanh: AM_LOOP(am_gelu_tanh(x)); break;
    case ISA_ACT_gelu_apprx_sigmoid: AM_LOOP(am_gelu_sigmoid(x)); break;
    case ISA_ACT_silu: AM_LOOP(am_silu(x, E)); break;
    case ISA_ACT_silu_dx: AM_LOOP(am_silu_dx(x, E)); break;
    case ISA_ACT_softplus: AM_LOOP(am_softplus(x, E)); break;
    case ISA_ACT_mish: AM_LOOP(am_mish(x, E)); break;
    case ISA_ACT_erf: AM_LOOP(am_erf(x)); break;
    case ISA_ACT_erf_dx: AM_LOOPN(am_erf_dx(x, E)); break;
    case ISA_ACT_sqrt: AM_LOOP(sqrtf(x)); break;
    case ISA_ACT_rsqrt: AM_LOOP(am_rsqrt(x)); break;
    case ISA_ACT_reciprocal: AM_LOOP(1.0f / x); break;
    case ISA_ACT_sin: AM_FN(am_sin_rows)(dst, src, n, scale, bias, E); break;
    case ISA_ACT_arctan: AM_LOOPN(am_atan(x)); break;
    case ISA_ACT_square: AM_LOOP(x * x); break;
    case ISA_ACT_abs: AM_LOOP(fabsf(x)); break;
    case ISA_ACT_sign: AM_LOOP(am_sign(x)); break;
    default: break;
    }
}

/* lanes[j] += the sum of x[i] over i = j mod AM_BLK, in binary64. */
AM_ATTR static void AM_FN(am_sum)(const float *x, size_t n, double *lanes)
{
    double acc[AM_BLK];
    memcpy(acc, lanes, sizeof acc);
    size_t i = 0;
    for (; i + AM_BLK <= n; i += AM_BLK)
        for (size_t j = 0; j < AM_BLK; j++)
            acc[j] += (double)x[i + j];
    for (size_t j = 0; i + j < n; j++)
        acc[j] += (double)x[i + j];
    memcpy(lanes, acc, sizeof acc);
}

#undef AM_LOOP
#undef AM_LOOPN
#undef AM_LOOPG
#undef AM_FN
#undef AM_CAT
#undef AM_CAT2
