/*
 * test_exec_act.c: the activation-engine instructions (activation,
 * activation_reduce, activate2), the Vector Engine's exponential and
 * reciprocal, and the random-number ops: the math library against long
 * double references, special values, identical bits at every ISA level,
 * scale/bias as immediates and [P,1] operands, the accumulator commands,
 * dtypes, partitions, strided and aliased operands, large jobs split
 * across host threads (same bits with 1 and 3), errors, and the
 * determinism and statistics of the random streams.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/par.h"
#include "emu/engines/act_math.h"
#include "emu/num/numerics.h"
#include "exec_harness.h"

typedef long double ld;

static int setup(void **state)
{
    *state = harness_new(3);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    return 0;
}

/* ---- helpers ---------------------------------------------------------------- */

static uint64_t lcg_state = 1;

static uint32_t lcg(void)
{
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(lcg_state >> 32);
}

/* Uniform in [lo, hi). */
static float unif(float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)lcg() / 4294967296.0);
}

static uint8_t *mem_ptr(struct harness *h, uint8_t mem, uint32_t p, uint64_t off)
{
    return mem == ISA_MEM_PSUM ? harness_psum_ptr(h, p, off) : harness_sbuf_ptr(h, p, off);
}

/* Element i of a contiguous row of dtype dt at partition p, byte offset off. */
static void put(struct harness *h, uint8_t mem, uint32_t p, uint64_t off, uint32_t dt, size_t i,
                float v)
{
    size_t es = num_dtype_size(dt);
    assert_int_equal(num_from_f32(dt, mem_ptr(h, mem, p, off + i * es), v, NULL, 0),
                     EMU_OK);
}

static float get(struct harness *h, uint8_t mem, uint32_t p, uint64_t off, uint32_t dt, size_t i)
{
    return num_to_f32(dt, mem_ptr(h, mem, p, off + i * num_dtype_size(dt)));
}

/* v rounded to dtype dt (RNE) and back. */
static float rnd(uint32_t dt, float v)
{
    uint8_t b[8];
    assert_int_equal(num_from_f32(dt, b, v, NULL, 0), EMU_OK);
    return num_to_f32(dt, b);
}

/* Bit-equal floats, NaNs included (their sign and payload). */
static void assert_bits(float got, float want)
{
    uint32_t a, b;
    memcpy(&a, &got, 4);
    memcpy(&b, &want, 4);
    if (a != b)
        fail_msg("got %a (0x%08x), want %a (0x%08x)", (double)got, a, (double)want, b);
}

/* Bit-equal floats (NaNs equal to NaNs). */
static void assert_same(float got, float want)
{
    if (isnan(want) && isnan(got))
        return;
    uint32_t a, b;
    memcpy(&a, &got, 4);
    memcpy(&b, &want, 4);
    if (a != b)
        fail_msg("got %a, want %a", (double)got, (double)want);
}

/* The documented semantics of one element: func(x * scale + bias). */
static float ref_act(unsigned func, float x, float scale, float bias, float alpha)
{
    float t = x * scale;
    t = t + bias;
    return act_math_one(func, t, alpha);
}

/* ---- the math library ---------------------------------------------------------- */

static ld ref_sig(ld x)
{
    return 1.0L / (1.0L + expl(-x));
}

static ld ref_softplus(ld x)
{
    return x > 0 ? x + log1pl(expl(-x)) : log1pl(expl(x));
}

/* Long double references of the transcendental functions. */
static ld ref_math(unsigned f, ld x)
{
    ld phi = 0.5L * erfcl(-x / sqrtl(2.0L));
    switch (f) {
    case ISA_ACT_exp: return expl(x);
    case ISA_ACT_log: return logl(x);
    case ISA_ACT_tanh: return tanhl(x);
    case ISA_ACT_sigmoid: return ref_sig(x);
    case ISA_ACT_gelu: return x * phi;
    case ISA_ACT_gelu_dx: return phi + x * expl(-x * x / 2) / sqrtl(2 * M_PIl);
    case ISA_ACT_gelu_apprx_tanh:
        return x * ref_sig(2 * sqrtl(2 / M_PIl) * (x + 0.044715L * x * x * x));
    case ISA_ACT_gelu_apprx_sigmoid: return x * ref_sig(1.702L * x);
    case ISA_ACT_silu: return x * ref_sig(x);
    case ISA_ACT_silu_dx: return ref_sig(x) * (1 + x * ref_sig(-x));
    case ISA_ACT_softplus: return ref_softplus(x);
    case ISA_ACT_mish: return x * tanhl(ref_softplus(x));
    case ISA_ACT_erf: return erfl(x);
    case ISA_ACT_erf_dx: return 2 / sqrtl(M_PIl) * expl(-x * x);
    case ISA_ACT_sqrt: return sqrtl(x);
    case ISA_ACT_rsqrt: return 1 / sqrtl(x);
    case ISA_ACT_reciprocal: return 1 / x;
    case ISA_ACT_sin: return sinl(x);
    case ISA_ACT_arctan: return atanl(x);
    }
    return 0;
}

/* |got - want| in units of the binary32 ulp at want (subnormal spacing
 * below 2^-126); 1e9 for a wrong NaN or infinity. */
static double ulp_err(float got, ld want)
{
    if (isnan(want))
        return isnan(got) ? 0 : 1e9;
    float wf = (float)want;
    if (isinf(wf))
        return isinf(got) && (got > 0) == (wf > 0) ? 0 : 1e9;
    ld a = fabsl(want);
    double ulp = 0x1p-149;
    if (a >= 0x1p-126L) {
        int e;
        frexpl(a, &e);
        ulp = ldexp(1.0, e - 24);
    }
    return (double)(fabsl((ld)got - want) / ulp);
}

/* n inputs: half random bit patterns (every magnitude), half uniform in
 * [-range, range]. */
static void math_inputs(float *x, size_t n, float range)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t b = lcg();
        if (i % 2 == 0)
            memcpy(&x[i], &b, 4);
        else
            x[i] = unif(-range, range);
    }
}

/* Every transcendental function within its documented bound of the long
 * double reference (docs/numerics.md) on many points: half random bit
 * patterns (every magnitude, subnormals, huge values), half uniform in
 * [-range, range]. The largest error seen is printed. */
static void test_math_accuracy(void **state)
{
    (void)state;
    static const struct {
        unsigned func;  /* ISA_ACT_* */
        size_t n;       /* points */
        float range;    /* uniform half of the points in [-range, range] */
        double bound;   /* max error in ulp */
        double abs;     /* or at most this absolute error (near a zero), 0: none */
    } cases[] = {
        {ISA_ACT_exp, 1000000, 90, 1.0, 0}, {ISA_ACT_log, 500000, 1e6f, 1.0, 0},
        {ISA_ACT_tanh, 500000, 12, 3.0, 0}, {ISA_ACT_sigmoid, 500000, 40, 2.5, 0},
        {ISA_ACT_erf, 500000, 6, 3.0, 0}, {ISA_ACT_gelu, 500000, 20, 5.0, 0},
        {ISA_ACT_gelu_dx, 500000, 20, 5.0, 0}, {ISA_ACT_gelu_apprx_tanh, 300000, 20, 5.5, 0},
        {ISA_ACT_gelu_apprx_sigmoid, 300000, 20, 4.0, 0}, {ISA_ACT_silu, 300000, 40, 3.0, 0},
        {ISA_ACT_silu_dx, 500000, 40, 4.0, 1e-9}, {ISA_ACT_softplus, 500000, 40, 3.0, 0},
        {ISA_ACT_mish, 500000, 40, 5.0, 0}, {ISA_ACT_erf_dx, 500000, 12, 2.0, 0},
        {ISA_ACT_sqrt, 150000, 1e4f, 0.5, 0}, {ISA_ACT_rsqrt, 300000, 1e4f, 0.51, 0},
        {ISA_ACT_reciprocal, 150000, 1e4f, 0.5, 0}, {ISA_ACT_sin, 500000, 1e6f, 2.5, 0},
        {ISA_ACT_sin, 500000, 1024, 2.5, 0},
        {ISA_ACT_arctan, 500000, 100, 3.0, 0},
    };
    float *x = malloc(1000000 * sizeof(float)), *y = malloc(1000000 * sizeof(float));
    assert_non_null(x);
    assert_non_null(y);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *name = isa_enum_name(ISA_ET_ACT, cases[c].func);
        lcg_state = 1000 + c;
        math_inputs(x, cases[c].n, cases[c].range);
        assert_true(act_math_row(cases[c].func, y, x, cases[c].n, 1.0f, -0.0f, 0.0f));
        double worst = 0;
        for (size_t i = 0; i < cases[c].n; i++) {
            if (isnan(x[i]))
                continue;
            ld want = ref_math(cases[c].func, x[i]);
            if (fabsl((ld)y[i] - want) <= cases[c].abs)
                continue; /* within the absolute allowance: not counted in ulp */
            double e = ulp_err(y[i], want);
            if (e > cases[c].bound)
                fail_msg("%s(%a) = %a: %.3f ulp from %La (bound %.2f)", name, (double)x[i],
                         (double)y[i], e, ref_math(cases[c].func, x[i]), cases[c].bound);
            worst = e > worst ? e : worst;
        }
        print_message("%-20s max %.3f ulp (bound %.2f)\n", name, worst, cases[c].bound);
    }
    free(x);
    free(y);
}

/* Infinities, NaN, signed zeros and saturation of every function. */
static void test_math_specials(void **state)
{
    (void)state;
    const float inf = INFINITY, nan = NAN;
    static const struct {
        unsigned func;  /* ISA_ACT_* */
        float x;        /* input */
        float want;     /* result (NaN: any NaN) */
    } cases[] = {
        {ISA_ACT_copy, -0.0f, -0.0f}, {ISA_ACT_exp, INFINITY, INFINITY},
        {ISA_ACT_exp, -INFINITY, 0}, {ISA_ACT_exp, 0, 1}, {ISA_ACT_exp, 89, INFINITY},
        {ISA_ACT_exp, -104, 0}, {ISA_ACT_exp, -103, 0x1p-149f},
        {ISA_ACT_log, 0, -INFINITY}, {ISA_ACT_log, -0.0f, -INFINITY}, {ISA_ACT_log, -1, NAN},
        {ISA_ACT_log, INFINITY, INFINITY}, {ISA_ACT_log, 1, 0},
        {ISA_ACT_tanh, INFINITY, 1}, {ISA_ACT_tanh, -INFINITY, -1}, {ISA_ACT_tanh, -0.0f, -0.0f},
        {ISA_ACT_sigmoid, INFINITY, 1}, {ISA_ACT_sigmoid, -INFINITY, 0},
        {ISA_ACT_sigmoid, 0, 0.5f}, {ISA_ACT_relu, -1, 0}, {ISA_ACT_relu, -0.0f, 0},
        {ISA_ACT_relu, 3, 3}, {ISA_ACT_relu, -INFINITY, 0}, {ISA_ACT_relu, NAN, NAN},
        {ISA_ACT_gelu, INFINITY, INFINITY}, {ISA_ACT_gelu, -INFINITY, -0.0f},
        {ISA_ACT_gelu, 0, 0}, {ISA_ACT_gelu, -0.0f, -0.0f}, {ISA_ACT_gelu, 0x1p-149f, 0x1p-149f},
        {ISA_ACT_gelu, -0x1p-149f, -0.0f}, {ISA_ACT_gelu, 20, 20}, {ISA_ACT_gelu, -20, -0.0f},
        {ISA_ACT_gelu, 0x1.fffffep127f, 0x1.fffffep127f}, {ISA_ACT_gelu, -0x1.fffffep127f, -0.0f},
        {ISA_ACT_gelu_dx, INFINITY, 1}, {ISA_ACT_gelu_dx, 0, 0.5f}, {ISA_ACT_gelu_dx, -0.0f, 0.5f},
        {ISA_ACT_gelu_dx, -INFINITY, -0.0f}, {ISA_ACT_gelu_dx, 0x1p-149f, 0.5f},
        {ISA_ACT_gelu_dx, -0x1p-149f, 0.5f}, {ISA_ACT_gelu_dx, 20, 1}, {ISA_ACT_gelu_dx, -20, -0.0f},
        {ISA_ACT_gelu_apprx_tanh, -INFINITY, -0.0f}, {ISA_ACT_gelu_apprx_tanh, INFINITY, INFINITY},
        {ISA_ACT_gelu_apprx_sigmoid, -INFINITY, -0.0f}, {ISA_ACT_silu, -INFINITY, -0.0f},
        {ISA_ACT_silu, INFINITY, INFINITY}, {ISA_ACT_silu_dx, INFINITY, 1},
        {ISA_ACT_silu_dx, 0, 0.5f}, {ISA_ACT_softplus, INFINITY, INFINITY},
        {ISA_ACT_softplus, -INFINITY, 0}, {ISA_ACT_mish, INFINITY, INFINITY},
        {ISA_ACT_mish, -INFINITY, -0.0f}, {ISA_ACT_mish, 0, 0}, {ISA_ACT_erf, INFINITY, 1},
        {ISA_ACT_erf, -INFINITY, -1}, {ISA_ACT_erf, -0.0f, -0.0f}, {ISA_ACT_erf_dx, INFINITY, 0},
        {ISA_ACT_sqrt, -1, NAN}, {ISA_ACT_sqrt, -0.0f, -0.0f}, {ISA_ACT_sqrt, INFINITY, INFINITY},
        {ISA_ACT_rsqrt, 0, INFINITY}, {ISA_ACT_rsqrt, INFINITY, 0}, {ISA_ACT_rsqrt, -4, NAN},
        {ISA_ACT_reciprocal, -0.0f, -INFINITY}, {ISA_ACT_reciprocal, INFINITY, 0},
        {ISA_ACT_sin, INFINITY, NAN}, {ISA_ACT_sin, -0.0f, -0.0f},
        {ISA_ACT_arctan, INFINITY, 0x1.921fb6p+0f}, {ISA_ACT_arctan, -INFINITY, -0x1.921fb6p+0f},
        {ISA_ACT_square, -3, 9}, {ISA_ACT_abs, -0.0f, 0}, {ISA_ACT_sign, -2, -1},
        {ISA_ACT_sign, 0.5f, 1}, {ISA_ACT_sign, -0.0f, -0.0f}, {ISA_ACT_sign, INFINITY, 1},
        {ISA_ACT_sign, NAN, NAN},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float got = act_math_one(cases[c].func, cases[c].x, 0.0f);
        if (isnan(cases[c].want) ? !isnan(got) : memcmp(&got, &cases[c].want, 4) != 0)
            fail_msg("%s(%a) = %a, want %a", isa_enum_name(ISA_ET_ACT, cases[c].func),
                     (double)cases[c].x, (double)got, (double)cases[c].want);
    }
    for (unsigned f = 0; f <= ISA_ACT_sign; f++)
        assert_true(isnan(act_math_one(f, nan, 0.0f)));
    /* softplus, mish, erf, silu_dx, gelu, gelu_apprx_tanh and log have no
     * NaN guard: their kernels pass a NaN on, quieted (log by its fixupimm
     * at AVX-512) */
    uint32_t snan_bits = 0xff800123u, snanp_bits = 0x7f800321u;
    float snan, snanp;
    memcpy(&snan, &snan_bits, 4);
    memcpy(&snanp, &snanp_bits, 4);
    for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl);
        assert_same(act_math_one(ISA_ACT_softplus, snan, 0.0f), snan + snan);
        assert_same(act_math_one(ISA_ACT_mish, snan, 0.0f), snan + snan);
        assert_same(act_math_one(ISA_ACT_erf, snan, 0.0f), snan + snan);
        assert_same(act_math_one(ISA_ACT_silu_dx, snan, 0.0f), snan + snan);
        assert_same(act_math_one(ISA_ACT_silu_dx, snanp, 0.0f), snanp + snanp);
        assert_bits(act_math_one(ISA_ACT_gelu, snan, 0.0f), snan + snan);
        assert_bits(act_math_one(ISA_ACT_gelu, snanp, 0.0f), snanp + snanp);
        assert_bits(act_math_one(ISA_ACT_log, snan, 0.0f), snan + snan);
        assert_bits(act_math_one(ISA_ACT_log, snanp, 0.0f), snanp + snanp);
        assert_bits(act_math_one(ISA_ACT_log, -1.0f, 0.0f), -NAN); /* x86 default NaN */
        assert_bits(act_math_one(ISA_ACT_log, -INFINITY, 0.0f), -NAN);
        assert_bits(act_math_one(ISA_ACT_log, -0x1p-149f, 0.0f), -NAN);
        assert_bits(act_math_one(ISA_ACT_log, -0.0f, 0.0f), -INFINITY);
        assert_bits(act_math_one(ISA_ACT_gelu_apprx_tanh, snan, 0.0f), snan + snan);
        assert_bits(act_math_one(ISA_ACT_gelu_apprx_tanh, snanp, 0.0f), snanp + snanp);
        assert_bits(act_math_one(ISA_ACT_gelu_apprx_tanh, -nan, 0.0f), -nan);
        assert_bits(act_math_one(ISA_ACT_silu_dx, -nan, 0.0f), -nan);
        assert_bits(act_math_one(ISA_ACT_gelu_dx, snan, 0.0f), snan + snan); /* guarded */
        assert_bits(act_math_one(ISA_ACT_gelu_dx, snanp, 0.0f), snanp + snanp);
    }
    num_set_isa_limit(NUM_ISA_AVX512);
    assert_same(act_math_one(ISA_ACT_prelu, -2, 0.25f), -0.5f);
    assert_same(act_math_one(ISA_ACT_prelu, 2, 0.25f), 2);
    assert_same(act_math_one(ISA_ACT_sin, 0x1p30f, 0), (float)sin(0x1p30)); /* libm past 2^20 */
    assert_false(act_math_known(ISA_ACT_sign + 1));
    float sink = 1.0f;
    assert_false(act_math_row(99, &sink, &sink, 1, 1, 0, 0));
    assert_same(sink, 1.0f);
    (void)inf;
}

/* Inputs for the level checks: the specials (signed zeros, infinities,
 * NaNs, subnormals, the extremes of the finite range, the clamps of the
 * kernels), then random bit patterns and values in [-40, 40). */
static size_t level_inputs(float *x, size_t n)
{
    static const float specials[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 0x1p-149f, -0x1p-149f, 0x1.fffffcp-127f,
        -0x1.fffffcp-127f, 0x1p-126f, -0x1p-126f, 0x1.fffffep127f, -0x1.fffffep127f, 1.0f, -1.0f,
        0.5f, 89.0f, 88.72f, -104.0f, -103.0f, -87.4f, -150.0f, -200.0f, 15.0f, -15.0f, 14.9f,
        -14.9f, 0x1p20f, -0x1p20f, 0x1p64f, 0x1p-64f, 0x1p126f, 1e-30f, -1e-30f, 9.01f, -9.01f};
    size_t k = 0;
    for (; k < sizeof specials / sizeof specials[0] && k < n; k++)
        x[k] = specials[k];
    for (; k < n; k++) {
        uint32_t b = lcg();
        if (k % 2 == 0)
            memcpy(&x[k], &b, 4);
        else
            x[k] = unif(-40, 40);
    }
    return k;
}

/* The same bits at every ISA level on many inputs, with a tail, with and
 * without a scale and a bias (the identity has its own fast path). */
static void test_math_levels_many(void **state)
{
    (void)state;
    enum { N = 100003 };
    float *x = malloc(N * sizeof(float)), *y0 = malloc(N * sizeof(float));
    float *y1 = malloc(N * sizeof(float)), *y2 = malloc(N * sizeof(float));
    assert_true(x != NULL && y0 != NULL && y1 != NULL && y2 != NULL);
    lcg_state = 99;
    level_inputs(x, N);
    /* identity, add only (+0 turns -0 into +0), multiply only, both */
    static const float affine[][2] = {{1.0f, -0.0f}, {1.0f, 0.0f},   {1.0f, 0.5f},
                                      {-2.0f, -0.0f}, {0.75f, 0.125f}, {-2.0f, 0.0f}};
    for (unsigned f = 0; f <= ISA_ACT_sign; f++) {
        for (size_t a = 0; a < sizeof affine / sizeof affine[0]; a++) {
            float sc = affine[a][0], bi = affine[a][1];
            num_set_isa_limit(NUM_ISA_PORTABLE);
            assert_true(act_math_row(f, y0, x, N, sc, bi, 0.3f));
            num_set_isa_limit(NUM_ISA_AVX2);
            assert_true(act_math_row(f, y1, x, N, sc, bi, 0.3f));
            num_set_isa_limit(NUM_ISA_AVX512);
            assert_true(act_math_row(f, y2, x, N, sc, bi, 0.3f));
            for (size_t i = 0; i < N; i++) {
                if (memcmp(&y1[i], &y0[i], 4) != 0 || memcmp(&y2[i], &y0[i], 4) != 0)
                    fail_msg("%s(%a * %g + %g): portable %a, avx2 %a, avx512 %a",
                             isa_enum_name(ISA_ET_ACT, f), (double)x[i], (double)sc, (double)bi,
                             (double)y0[i], (double)y1[i], (double)y2[i]);
            }
        }
    }
    free(x);
    free(y0);
    free(y1);
    free(y2);
}

/* The same bits at every ISA level, with a tail, a scale and a bias. */
static void test_math_levels(void **state)
{
    (void)state;
    enum { N = 1237 };
    static float x[N], y0[N], y1[N], y2[N];
    lcg_state = 7;
    for (size_t i = 0; i < N; i++)
        x[i] = i % 3 == 0 ? unif(-200, 200) : unif(-5, 5);
    x[5] = INFINITY;
    x[6] = -INFINITY;
    x[7] = NAN;
    x[8] = 0x1p25f;
    for (unsigned f = 0; f <= ISA_ACT_sign; f++) {
        num_set_isa_limit(NUM_ISA_PORTABLE);
        assert_true(act_math_row(f, y0, x, N, 0.75f, 0.125f, 0.3f));
        num_set_isa_limit(NUM_ISA_AVX2);
        assert_true(act_math_row(f, y1, x, N, 0.75f, 0.125f, 0.3f));
        num_set_isa_limit(NUM_ISA_AVX512);
        assert_true(act_math_row(f, y2, x, N, 0.75f, 0.125f, 0.3f));
        for (size_t i = 0; i < N; i++) {
            assert_same(y1[i], y0[i]);
            assert_same(y2[i], y0[i]);
            assert_same(y0[i], ref_act(f, x[i], 0.75f, 0.125f, 0.3f));
        }
    }
    memcpy(y0, x, sizeof x); /* in place */
    assert_true(act_math_row(ISA_ACT_gelu, y0, y0, N, 1.0f, -0.0f, 0));
    for (size_t i = 0; i < N; i++)
        assert_same(y0[i], act_math_one(ISA_ACT_gelu, x[i], 0));
}

/* Accumulator folds: sums in binary64, max/min with NaN, identities. */
static void test_math_reduce(void **state)
{
    (void)state;
    enum { N = 1001 };
    static float x[N];
    lcg_state = 9;
    double sum = 3.5;
    float mx = -INFINITY, mn = INFINITY, amx = 0, amn = INFINITY;
    for (size_t i = 0; i < N; i++) {
        x[i] = unif(-10, 10);
        sum += x[i];
        mx = fmaxf(mx, x[i]);
        mn = fminf(mn, x[i]);
        amx = fmaxf(amx, fabsf(x[i]));
        amn = fminf(amn, fabsf(x[i]));
    }
    float acc = 3.5f;
    act_math_reduce(ISA_ALU_add, x, N, &acc);
    assert_true(fabs(acc - sum) <= 1e-6 * fabs(sum) + 1e-6);
    acc = act_math_reduce_identity(ISA_ALU_max);
    act_math_reduce(ISA_ALU_max, x, N, &acc);
    assert_same(acc, mx);
    acc = act_math_reduce_identity(ISA_ALU_min);
    act_math_reduce(ISA_ALU_min, x, N, &acc);
    assert_same(acc, mn);
    acc = act_math_reduce_identity(ISA_ALU_abs_max);
    act_math_reduce(ISA_ALU_abs_max, x, N, &acc);
    assert_same(acc, amx);
    acc = act_math_reduce_identity(ISA_ALU_abs_min);
    act_math_reduce(ISA_ALU_abs_min, x, N, &acc);
    assert_same(acc, amn);
    x[500] = NAN;
    acc = 0;
    act_math_reduce(ISA_ALU_max, x, N, &acc);
    assert_true(isnan(acc));
    assert_true(act_math_reduce_known(ISA_ALU_add));
    assert_false(act_math_reduce_known(ISA_ALU_bitwise_and));
    assert_same(act_math_reduce_identity(ISA_ALU_add), 0);
}

/* ---- instructions ----------------------------------------------------------------- */

static struct isa_insn *add_op(struct harness *h, enum isa_engine e, unsigned op,
                               struct isa_ap dst, struct isa_ap src)
{
    struct isa_insn *i = harness_add(h, e, op);
    i->ap[0] = dst;
    i->ap[1] = src;
    return i;
}

static struct isa_insn *add_act(struct harness *h, unsigned func, struct isa_ap dst,
                                struct isa_ap data)
{
    struct isa_insn *i = add_op(h, ISA_ENG_ACT, ISA_OP_activation, dst, data);
    i->enums[0] = (uint8_t)func;
    return i;
}

/* A [nparts, 1] column. */
static struct isa_ap col(uint8_t mem, uint32_t part, uint32_t nparts, uint64_t off, uint32_t dt)
{
    return harness_tile(mem, part, nparts, off, dt, 1);
}

/* Fill [part .. part+nparts) x n of dtype dt at off with uniform values. */
static void fill(struct harness *h, uint8_t mem, uint32_t part, uint32_t nparts, uint64_t off,
                 uint32_t dt, size_t n, float lo, float hi)
{
    for (uint32_t p = part; p < part + nparts; p++)
        for (size_t i = 0; i < n; i++)
            put(h, mem, p, off, dt, i, unif(lo, hi));
}

/* Scale and bias as immediates and as [P,1] operands, on 128 partitions. */
static void test_activation_scale_bias(void **state)
{
    struct harness *h = *state;
    enum { N = 333 };
    lcg_state = 11;
    fill(h, ISA_MEM_SBUF, 0, 128, 0, ISA_DT_F32, N, -4, 4);
    fill(h, ISA_MEM_SBUF, 0, 128, 8192, ISA_DT_F32, 1, -1, 1);  /* bias column */
    fill(h, ISA_MEM_SBUF, 0, 128, 8196, ISA_DT_BF16, 1, 0, 2);  /* scale column, bf16 */
    struct isa_insn *a = add_act(h, ISA_ACT_tanh, harness_tile(ISA_MEM_SBUF, 0, 128, 4096,
                                                               ISA_DT_F32, N),
                                 harness_tile(ISA_MEM_SBUF, 0, 128, 0, ISA_DT_F32, N));
    a->fimm[1] = 0.7f;
    a->ap[2] = col(ISA_MEM_SBUF, 0, 128, 8192, ISA_DT_F32);
    a = add_act(h, ISA_ACT_silu, harness_tile(ISA_MEM_PSUM, 0, 128, 0, ISA_DT_F32, N),
                harness_tile(ISA_MEM_SBUF, 0, 128, 0, ISA_DT_F32, N));
    a->fimm[0] = -0.25f;
    a->ap[3] = col(ISA_MEM_SBUF, 0, 128, 8196, ISA_DT_BF16);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < 128; p++) {
        float b = get(h, ISA_MEM_SBUF, p, 8192, ISA_DT_F32, 0);
        float s = get(h, ISA_MEM_SBUF, p, 8196, ISA_DT_BF16, 0);
        for (size_t i = 0; i < N; i++) {
            float x = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, i);
            assert_same(get(h, ISA_MEM_SBUF, p, 4096, ISA_DT_F32, i),
                        ref_act(ISA_ACT_tanh, x, 0.7f, b, 0));
            assert_same(get(h, ISA_MEM_PSUM, p, 0, ISA_DT_F32, i),
                        ref_act(ISA_ACT_silu, x, s, -0.25f, 0));
        }
    }
}

/* Large activations split across host threads (emu/core/par.h): tanh of
 * [128 x 4096] fp32 with a bias column into bf16, and exp in place over
 * [128 x 2048] fp32, give the same bytes with 1 and 3 threads, and the
 * definition's values. */
enum { BIG_P = 128, BIG_N = 4096 };

static void big_act(struct harness *h, unsigned threads, uint8_t *out)
{
    par_configure(threads);
    lcg_state = 77;
    harness_clear(h);
    fill(h, ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_F32, BIG_N, -4, 4);
    fill(h, ISA_MEM_SBUF, 0, BIG_P, 40960, ISA_DT_F32, 1, -1, 1);
    fill(h, ISA_MEM_SBUF, 0, BIG_P, 24576, ISA_DT_F32, BIG_N / 2, -3, 3);
    struct isa_insn *a = add_act(h, ISA_ACT_tanh,
                                 harness_tile(ISA_MEM_SBUF, 0, BIG_P, 16384, ISA_DT_BF16, BIG_N),
                                 harness_tile(ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_F32, BIG_N));
    a->fimm[1] = 0.5f;
    a->ap[2] = col(ISA_MEM_SBUF, 0, BIG_P, 40960, ISA_DT_F32);
    struct isa_ap inplace = harness_tile(ISA_MEM_SBUF, 0, BIG_P, 24576, ISA_DT_F32, BIG_N / 2);
    add_act(h, ISA_ACT_exp, inplace, inplace);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < BIG_P; p++) {
        memcpy(out, harness_sbuf_ptr(h, p, 16384), 2 * BIG_N), out += 2 * BIG_N;
        memcpy(out, harness_sbuf_ptr(h, p, 24576), 2 * BIG_N), out += 2 * BIG_N;
    }
    par_configure(0);
}

static void test_activation_split_threads(void **state)
{
    struct harness *h = *state;
    size_t bytes = (size_t)BIG_P * BIG_N * 4;
    uint8_t *one = malloc(bytes), *three = malloc(bytes);
    assert_true(one != NULL && three != NULL);
    big_act(h, 1, one);
    big_act(h, 3, three);
    assert_memory_equal(one, three, bytes);
    for (uint32_t p = 0; p < BIG_P; p += 9)
        for (size_t i = 0; i < BIG_N; i += 257) {
            float x = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, i);
            float b = get(h, ISA_MEM_SBUF, p, 40960, ISA_DT_F32, 0);
            uint16_t got;
            memcpy(&got, one + (size_t)p * 4 * BIG_N + 2 * i, 2);
            assert_same(num_to_f32(ISA_DT_BF16, (const uint8_t *)&got),
                        rnd(ISA_DT_BF16, ref_act(ISA_ACT_tanh, x, 0.5f, b, 0)));
        }
    free(one);
    free(three);
}

/* Every input dtype into every output dtype: compute in fp32, store RNE. */
static void test_activation_dtypes(void **state)
{
    struct harness *h = *state;
    static const uint32_t ins[] = {ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_FP8E4,
                                   ISA_DT_FP8E5, ISA_DT_I8, ISA_DT_I32, ISA_DT_U16};
    static const uint32_t outs[] = {ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_FP8E3,
                                    ISA_DT_FP8E4, ISA_DT_FP8E5, ISA_DT_I16, ISA_DT_U8};
    enum { N = 37, P = 3 };
    lcg_state = 13;
    for (size_t a = 0; a < sizeof ins / sizeof ins[0]; a++) {
        for (size_t b = 0; b < sizeof outs / sizeof outs[0]; b++) {
            harness_clear(h);
            fill(h, ISA_MEM_SBUF, 5, P, 0, ins[a], N, 0, 3);
            struct isa_insn *i = add_act(h, ISA_ACT_exp,
                                         harness_tile(ISA_MEM_SBUF, 5, P, 1024, outs[b], N),
                                         harness_tile(ISA_MEM_SBUF, 5, P, 0, ins[a], N));
            i->fimm[1] = 1.5f;
            i->fimm[0] = -1.0f;
            assert_int_equal(harness_run(h), EMU_OK);
            for (uint32_t p = 5; p < 5 + P; p++)
                for (size_t k = 0; k < N; k++) {
                    float x = get(h, ISA_MEM_SBUF, p, 0, ins[a], k);
                    assert_same(get(h, ISA_MEM_SBUF, p, 1024, outs[b], k),
                                rnd(outs[b], ref_act(ISA_ACT_exp, x, 1.5f, -1.0f, 0)));
                }
        }
    }
}

/* One partition, odd sizes, strided and negative-step patterns, a
 * partition step, PSUM. */
static void test_activation_shapes(void **state)
{
    struct harness *h = *state;
    lcg_state = 17;
    fill(h, ISA_MEM_SBUF, 0, 128, 0, ISA_DT_F32, 512, -3, 3);
    /* 1 partition (77), 1 element. */
    add_act(h, ISA_ACT_sigmoid, harness_tile(ISA_MEM_SBUF, 77, 1, 4096, ISA_DT_F32, 1),
            harness_tile(ISA_MEM_SBUF, 77, 1, 0, ISA_DT_F32, 1));
    /* 64 partitions 0, 2, 4 .. by part_step 2; 2-D input [7 x 5] at step 3
     * into a reversed 1-D output of 35. */
    const int32_t in_dims[2][2] = {{20, 7}, {3, 5}};
    const int32_t out_dims[1][2] = {{-1, 35}};
    struct isa_ap in = harness_sbuf(0, 64, 0, ISA_DT_F32, 2, in_dims);
    struct isa_ap out = harness_sbuf(0, 64, 8192 + 34 * 4, ISA_DT_F32, 1, out_dims);
    in.part_step = 2;
    out.part_step = 2;
    add_act(h, ISA_ACT_gelu_apprx_tanh, out, in);
    /* PSUM in, bf16 SBUF out, 17 elements on 128 partitions. */
    fill(h, ISA_MEM_PSUM, 0, 128, 64, ISA_DT_F32, 17, -3, 3);
    add_act(h, ISA_ACT_softplus, harness_tile(ISA_MEM_SBUF, 0, 128, 12288, ISA_DT_BF16, 17),
            harness_tile(ISA_MEM_PSUM, 0, 128, 64, ISA_DT_F32, 17));
    assert_int_equal(harness_run(h), EMU_OK);
    assert_same(get(h, ISA_MEM_SBUF, 77, 4096, ISA_DT_F32, 0),
                ref_act(ISA_ACT_sigmoid, get(h, ISA_MEM_SBUF, 77, 0, ISA_DT_F32, 0), 1, 0, 0));
    for (uint32_t p = 0; p < 128; p += 2)
        for (int a = 0; a < 7; a++)
            for (int b = 0; b < 5; b++) {
                float x = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, (size_t)(20 * a + 3 * b));
                size_t k = (size_t)(5 * a + b);
                assert_same(get(h, ISA_MEM_SBUF, p, 8192, ISA_DT_F32, 34 - k),
                            ref_act(ISA_ACT_gelu_apprx_tanh, x, 1, 0, 0));
            }
    assert_same(get(h, ISA_MEM_SBUF, 1, 8192, ISA_DT_F32, 0), 0); /* odd partitions untouched */
    for (uint32_t p = 0; p < 128; p++)
        for (size_t i = 0; i < 17; i++)
            assert_same(get(h, ISA_MEM_SBUF, p, 12288, ISA_DT_BF16, i),
                        rnd(ISA_DT_BF16, ref_act(ISA_ACT_softplus,
                                                 get(h, ISA_MEM_PSUM, p, 64, ISA_DT_F32, i), 1,
                                                 0, 0)));
}

/* In place (fp32 and bf16) and a dst overlapping data one element ahead. */
static void test_activation_alias(void **state)
{
    struct harness *h = *state;
    enum { N = 100 };
    static float x0[4][N + 1], x1[4][N];
    lcg_state = 19;
    fill(h, ISA_MEM_SBUF, 0, 4, 0, ISA_DT_F32, N + 1, -2, 2);
    fill(h, ISA_MEM_SBUF, 0, 4, 2048, ISA_DT_BF16, N, -2, 2);
    for (uint32_t p = 0; p < 4; p++) {
        for (size_t i = 0; i <= N; i++)
            x0[p][i] = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, i);
        for (size_t i = 0; i < N; i++)
            x1[p][i] = get(h, ISA_MEM_SBUF, p, 2048, ISA_DT_BF16, i);
    }
    /* dst = elements 0..N-1, data = elements 1..N: every output overwrites
     * an input the next one needs. */
    add_act(h, ISA_ACT_exp, harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_F32, N),
            harness_tile(ISA_MEM_SBUF, 0, 4, 4, ISA_DT_F32, N));
    struct isa_ap t = harness_tile(ISA_MEM_SBUF, 0, 4, 2048, ISA_DT_BF16, N);
    add_act(h, ISA_ACT_erf, t, t);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < 4; p++)
        for (size_t i = 0; i < N; i++) {
            assert_same(get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, i),
                        ref_act(ISA_ACT_exp, x0[p][i + 1], 1, 0, 0));
            assert_same(get(h, ISA_MEM_SBUF, p, 2048, ISA_DT_BF16, i),
                        rnd(ISA_DT_BF16, ref_act(ISA_ACT_erf, x1[p][i], 1, 0, 0)));
        }
    /* fp32 in place, through act_math directly into SBUF */
    harness_clear(h);
    struct isa_ap f = harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_F32, N);
    add_act(h, ISA_ACT_square, f, f);
    float before = get(h, ISA_MEM_SBUF, 2, 0, ISA_DT_F32, 7);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_same(get(h, ISA_MEM_SBUF, 2, 0, ISA_DT_F32, 7), before * before);
}

/* The binary64 sum of the fp32 results func(x) of row p (n elements). */
static double row_sum(struct harness *h, uint32_t p, uint64_t off, size_t n, unsigned func)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += act_math_one(func, get(h, ISA_MEM_SBUF, p, off, ISA_DT_F32, i), 0);
    return s;
}

/* Within 2 ulp of the reference (sums may round in another order). */
static void assert_close(float got, double want)
{
    double tol = 2.0 * (fabs(want) * 0x1p-23 + 0x1p-149);
    if (fabs((double)got - want) > tol)
        fail_msg("got %.9g, want %.9g", (double)got, want);
}

/* reset_reduce, reduce, idle + reduce_res, reset, activation_reduce, per lane. */
static void test_activation_accumulator(void **state)
{
    struct harness *h = *state;
    enum { N = 50 };
    lcg_state = 23;
    fill(h, ISA_MEM_SBUF, 0, 8, 0, ISA_DT_F32, N, -2, 2);
    fill(h, ISA_MEM_SBUF, 0, 8, 1024, ISA_DT_F32, N, -2, 2);
    struct isa_ap a = harness_tile(ISA_MEM_SBUF, 0, 8, 0, ISA_DT_F32, N);
    struct isa_ap b = harness_tile(ISA_MEM_SBUF, 0, 8, 1024, ISA_DT_F32, N);
    struct isa_ap junk = harness_tile(ISA_MEM_SBUF, 0, 8, 2048, ISA_DT_BF16, N);
    struct isa_insn *i = add_act(h, ISA_ACT_exp, junk, a);
    i->enums[2] = ISA_RCMD_reset_reduce;
    i = add_act(h, ISA_ACT_exp, junk, b);
    i->enums[2] = ISA_RCMD_reduce;
    i = add_act(h, ISA_ACT_copy, junk, b); /* idle: registers unchanged, read out */
    i->ap[4] = col(ISA_MEM_SBUF, 0, 8, 4096, ISA_DT_F32);
    /* lanes 4..7 reset; lanes 0..3 keep their sums */
    i = add_act(h, ISA_ACT_copy, harness_tile(ISA_MEM_SBUF, 4, 4, 2048, ISA_DT_F32, N),
                harness_tile(ISA_MEM_SBUF, 4, 4, 0, ISA_DT_F32, N));
    i->enums[2] = ISA_RCMD_reset;
    i = add_act(h, ISA_ACT_copy, junk, b);
    i->ap[4] = col(ISA_MEM_PSUM, 0, 8, 0, ISA_DT_F32);
    i = add_op(h, ISA_ENG_ACT, ISA_OP_activation_reduce, junk, a);
    i->enums[0] = ISA_ACT_relu;
    i->enums[1] = ISA_ALU_add;
    i->ap[4] = col(ISA_MEM_SBUF, 0, 8, 4100, ISA_DT_BF16);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < 8; p++) {
        float first = (float)row_sum(h, p, 0, N, ISA_ACT_exp);
        double both = (double)first + row_sum(h, p, 1024, N, ISA_ACT_exp);
        assert_close(get(h, ISA_MEM_SBUF, p, 4096, ISA_DT_F32, 0), both);
        if (p < 4)
            assert_close(get(h, ISA_MEM_PSUM, p, 0, ISA_DT_F32, 0), both);
        else
            assert_same(get(h, ISA_MEM_PSUM, p, 0, ISA_DT_F32, 0), 0);
        assert_same(get(h, ISA_MEM_SBUF, p, 4100, ISA_DT_BF16, 0),
                    rnd(ISA_DT_BF16, get(h, ISA_MEM_SBUF, p, 4100, ISA_DT_BF16, 0)));
        double relu = row_sum(h, p, 0, N, ISA_ACT_relu);
        assert_true(fabs(get(h, ISA_MEM_SBUF, p, 4100, ISA_DT_BF16, 0) - relu) <=
                    fabs(relu) * 0x1p-8 + 1e-30);
    }
}

/* activate2: scale/bias forms, reversed operands, the general stage,
 * relu_param, and max accumulation. */
static void test_activate2(void **state)
{
    struct harness *h = *state;
    enum { N = 64, P = 16 };
    lcg_state = 29;
    fill(h, ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N, -3, 3);
    fill(h, ISA_MEM_SBUF, 0, P, 1024, ISA_DT_F32, 1, 0.5f, 2); /* imm column */
    fill(h, ISA_MEM_SBUF, 0, P, 1028, ISA_DT_F32, 1, 0, 0.5f); /* relu_param column */
    struct isa_ap x = harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N);
    static const struct {
        unsigned func, op0, op1;   /* function, stage ops */
        bool rev0, rev1, vec0;     /* reverse flags, imm0 from the column */
    } cases[] = {
        {ISA_ACT_gelu, ISA_ALU_multiply, ISA_ALU_add, false, false, false},
        {ISA_ACT_tanh, ISA_ALU_multiply, ISA_ALU_subtract, false, true, true},
        {ISA_ACT_exp, ISA_ALU_subtract, ISA_ALU_bypass, true, false, false},
        {ISA_ACT_copy, ISA_ALU_bypass, ISA_ALU_multiply, false, false, false},
        {ISA_ACT_sigmoid, ISA_ALU_divide, ISA_ALU_add, false, false, true},
        {ISA_ACT_silu, ISA_ALU_add, ISA_ALU_multiply, false, true, false},
        {ISA_ACT_relu, ISA_ALU_max, ISA_ALU_min, true, false, false},
        {ISA_ACT_prelu, ISA_ALU_bypass, ISA_ALU_bypass, false, false, false},
    };
    enum { C = sizeof cases / sizeof cases[0] };
    for (size_t c = 0; c < C; c++) {
        struct isa_insn *i = add_op(h, ISA_ENG_ACT, ISA_OP_activate2,
                                    harness_tile(ISA_MEM_SBUF, 0, P, 2048 + 256 * c, ISA_DT_F32,
                                                 N), x);
        i->enums[0] = (uint8_t)cases[c].func;
        i->enums[1] = (uint8_t)cases[c].op0;
        i->enums[2] = (uint8_t)cases[c].op1;
        i->flags = (uint8_t)((cases[c].rev0 ? 1 : 0) | (cases[c].rev1 ? 2 : 0));
        i->fimm[0] = 1.25f;
        i->fimm[1] = -0.5f;
        if (cases[c].vec0)
            i->ap[2] = col(ISA_MEM_SBUF, 0, P, 1024, ISA_DT_F32);
        i->ap[5] = col(ISA_MEM_SBUF, 0, P, 1028, ISA_DT_F32);
        i->enums[3] = ISA_ALU_max;
        i->enums[4] = c == 0 ? ISA_RCMD_reset_reduce : ISA_RCMD_reduce;
        if (c == C - 1)
            i->ap[4] = col(ISA_MEM_SBUF, 0, P, 4096, ISA_DT_F32);
    }
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < P; p++) {
        float best = -INFINITY;
        for (size_t c = 0; c < C; c++) {
            float a = cases[c].vec0 ? get(h, ISA_MEM_SBUF, p, 1024, ISA_DT_F32, 0) : 1.25f;
            float b = -0.5f, alpha = get(h, ISA_MEM_SBUF, p, 1028, ISA_DT_F32, 0);
            for (size_t k = 0; k < N; k++) {
                float v = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, k), t = v;
                switch (cases[c].op0) {
                case ISA_ALU_multiply: t = v * a; break;
                case ISA_ALU_subtract: t = cases[c].rev0 ? a - v : v - a; break;
                case ISA_ALU_divide: t = v / a; break;
                case ISA_ALU_add: t = v + a; break;
                case ISA_ALU_max: t = fmaxf(v, a); break;
                }
                switch (cases[c].op1) {
                case ISA_ALU_add: t = t + b; break;
                case ISA_ALU_subtract: t = cases[c].rev1 ? b - t : t - b; break;
                case ISA_ALU_multiply: t = t * b; break;
                case ISA_ALU_min: t = fminf(t, b); break;
                }
                float want = act_math_one(cases[c].func, t, alpha);
                assert_same(get(h, ISA_MEM_SBUF, p, 2048 + 256 * c, ISA_DT_F32, k), want);
                best = fmaxf(best, want);
            }
        }
        assert_same(get(h, ISA_MEM_SBUF, p, 4096, ISA_DT_F32, 0), best);
    }
}

/* exponential: exp(src - max_value) with the row max, the DVE accumulator
 * (reset_reduce, reduce, load_reduce), reciprocal. */
static void test_exponential_reciprocal(void **state)
{
    struct harness *h = *state;
    enum { N = 200, P = 32 };
    lcg_state = 31;
    fill(h, ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N, -20, 20);
    for (uint32_t p = 0; p < P; p++) {
        float m = -INFINITY;
        for (size_t i = 0; i < N; i++)
            m = fmaxf(m, get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, i));
        put(h, ISA_MEM_SBUF, p, 1024, ISA_DT_F32, 0, m);
        put(h, ISA_MEM_SBUF, p, 1028, ISA_DT_F32, 0, (float)p);
    }
    struct isa_ap src = harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N);
    struct isa_insn *i = add_op(h, ISA_ENG_DVE, ISA_OP_exponential,
                                harness_tile(ISA_MEM_SBUF, 0, P, 2048, ISA_DT_F32, N), src);
    i->ap[2] = col(ISA_MEM_SBUF, 0, P, 1024, ISA_DT_F32);
    i->enums[0] = ISA_RCMD_reset_reduce;
    i->ap[3] = col(ISA_MEM_SBUF, 0, P, 4096, ISA_DT_F32);
    i = add_op(h, ISA_ENG_DVE, ISA_OP_exponential,
               harness_tile(ISA_MEM_SBUF, 0, P, 5000, ISA_DT_BF16, N), src);
    i->fimm[0] = 3.0f;
    i->enums[0] = ISA_RCMD_load_reduce;
    i->ap[4] = col(ISA_MEM_SBUF, 0, P, 1028, ISA_DT_F32);
    i->ap[3] = col(ISA_MEM_SBUF, 0, P, 4100, ISA_DT_F32);
    add_op(h, ISA_ENG_DVE, ISA_OP_reciprocal,
           harness_tile(ISA_MEM_PSUM, 0, P, 0, ISA_DT_F32, N),
           harness_tile(ISA_MEM_SBUF, 0, P, 5000, ISA_DT_BF16, N));
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < P; p++) {
        float m = get(h, ISA_MEM_SBUF, p, 1024, ISA_DT_F32, 0);
        double s1 = 0, s2 = p;
        for (size_t k = 0; k < N; k++) {
            float x = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, k);
            float e1 = act_math_one(ISA_ACT_exp, x - m, 0);
            float e2 = act_math_one(ISA_ACT_exp, x - 3.0f, 0);
            assert_same(get(h, ISA_MEM_SBUF, p, 2048, ISA_DT_F32, k), e1);
            assert_same(get(h, ISA_MEM_SBUF, p, 5000, ISA_DT_BF16, k), rnd(ISA_DT_BF16, e2));
            assert_same(get(h, ISA_MEM_PSUM, p, 0, ISA_DT_F32, k), 1.0f / rnd(ISA_DT_BF16, e2));
            assert_true(e1 <= 1.0f);
            s1 += e1;
            s2 += e2;
        }
        assert_close(get(h, ISA_MEM_SBUF, p, 4096, ISA_DT_F32, 0), s1);
        assert_close(get(h, ISA_MEM_SBUF, p, 4100, ISA_DT_F32, 0), s2);
    }
}

/* Run a one-instruction program expecting status want (line: the caller's). */
static void expect_status_at(struct harness *h, emu_status want, int line)
{
    emu_status got = harness_run(h);
    if (got != want)
        fail_msg("line %d: status %d, want %d (%s)", line, (int)got, (int)want, h->report);
    harness_clear(h);
}

#define expect_status(h, want) expect_status_at((h), (want), __LINE__)

static void test_errors(void **state)
{
    struct harness *h = *state;
    struct isa_ap t10 = harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_F32, 10);
    struct isa_ap t11 = harness_tile(ISA_MEM_SBUF, 0, 4, 64, ISA_DT_F32, 11);
    harness_clear(h);
    add_act(h, ISA_ACT_exp, t10, t11);
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, ISA_ACT_exp, t10, harness_tile(ISA_MEM_SBUF, 0, 5, 64, ISA_DT_F32, 10));
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, ISA_ACT_exp, t10, t10)->ap[2] = harness_tile(ISA_MEM_SBUF, 0, 4, 256, ISA_DT_F32, 2);
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, ISA_ACT_exp, t10, t10)->ap[3] = col(ISA_MEM_SBUF, 0, 3, 256, ISA_DT_F32);
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, ISA_ACT_exp, t10, t10)->ap[4] = harness_tile(ISA_MEM_SBUF, 0, 4, 256, ISA_DT_F32, 2);
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, 77, t10, t10);
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, ISA_ACT_exp, t10, t10)->enums[2] = ISA_RCMD_load_reduce;
    expect_status(h, EMU_EXEC_ERR);
    struct isa_insn *i = add_act(h, ISA_ACT_exp, t10, t10);
    i->enums[1] = ISA_ALU_bitwise_and;
    i->enums[2] = ISA_RCMD_reset_reduce;
    expect_status(h, EMU_EXEC_ERR);
    i = add_op(h, ISA_ENG_ACT, ISA_OP_activate2, t10, t10);
    i->enums[1] = ISA_ALU_bitwise_and;
    expect_status(h, EMU_EXEC_ERR);
    add_act(h, ISA_ACT_exp, harness_tile(ISA_MEM_SBUF, 0, 4, 224 * 1024 - 8, ISA_DT_F32, 10), t10);
    expect_status(h, EMU_EXEC_OOB);
    add_act(h, ISA_ACT_exp, t10, harness_tile(ISA_MEM_PSUM, 120, 9, 0, ISA_DT_F32, 10));
    expect_status(h, EMU_EXEC_OOB);
    add_op(h, ISA_ENG_DVE, ISA_OP_reciprocal, t10, t11);
    expect_status(h, EMU_EXEC_ERR);
    /* rng ops */
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] = t10; /* fp32: not an integer type */
    expect_status(h, EMU_EXEC_ERR);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rand_get_state)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_U32, 1);
    expect_status(h, EMU_EXEC_ERR);
    harness_add(h, ISA_ENG_DVE, ISA_OP_set_rng_seed)->ap[1] =
        harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_U32, 2);
    expect_status(h, EMU_EXEC_ERR);
    harness_add(h, ISA_ENG_POOL, ISA_OP_rand_set_state)->ap[1] =
        harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_U16, 6);
    expect_status(h, EMU_EXEC_ERR);
    i = add_op(h, ISA_ENG_DVE, ISA_OP_dropout, t10, t11);
    expect_status(h, EMU_EXEC_ERR);
}

/* ---- random numbers ---------------------------------------------------------------- */

/* uint32 words of row p at off. */
static uint32_t word(struct harness *h, uint32_t p, uint64_t off, size_t i)
{
    uint32_t w;
    memcpy(&w, harness_sbuf_ptr(h, p, off + 4 * i), 4);
    return w;
}

/* rng: the same bits every run, balanced bits, truncation to the low
 * bytes, distinct engine streams. */
static void test_rng_bits(void **state)
{
    struct harness *h = *state;
    enum { N = 256, P = 128 };
    struct isa_ap u32 = harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_U32, N);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] = u32;
    harness_add(h, ISA_ENG_POOL, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, P, 4096, ISA_DT_U32, N);
    assert_int_equal(harness_run(h), EMU_OK);
    static uint32_t first[P][N];
    size_t ones[32] = {0}, same_as_pool = 0;
    for (uint32_t p = 0; p < P; p++)
        for (size_t i = 0; i < N; i++) {
            first[p][i] = word(h, p, 0, i);
            same_as_pool += first[p][i] == word(h, p, 4096, i);
            for (int b = 0; b < 32; b++)
                ones[b] += (first[p][i] >> b) & 1u;
        }
    assert_true(same_as_pool < 4);
    for (int b = 0; b < 32; b++) /* 32768 draws: sd 90 */
        assert_true(ones[b] > 16384 - 600 && ones[b] < 16384 + 600);
    /* a second run repeats the stream; narrower dtypes keep the low bits */
    harness_clear(h);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, P, 8192, ISA_DT_U8, N);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, P, 12288, ISA_DT_I16, N);
    assert_int_equal(harness_run(h), EMU_OK);
    harness_clear(h);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] = u32;
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, P, 16384, ISA_DT_U32, N);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < P; p++)
        for (size_t i = 0; i < N; i++) {
            assert_int_equal(word(h, p, 0, i), first[p][i]);
            assert_int_equal(*harness_sbuf_ptr(h, p, 8192 + i), first[p][i] & 0xFFu);
            uint16_t v;
            memcpy(&v, harness_sbuf_ptr(h, p, 12288 + 2 * i), 2);
            assert_int_equal(v, word(h, p, 16384, i) & 0xFFFFu);
        }
}

/* rand2: uniform in [min, max): range, mean and variance; per-row bounds. */
static void test_rand2(void **state)
{
    struct harness *h = *state;
    enum { N = 1024, P = 128 };
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_rand2);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N);
    i->fimm[0] = -2.0f;
    i->fimm[1] = 3.0f;
    for (uint32_t p = 0; p < P; p++) {
        put(h, ISA_MEM_SBUF, p, 8192, ISA_DT_F32, 0, (float)p);
        put(h, ISA_MEM_SBUF, p, 8196, ISA_DT_F32, 0, (float)p + 0.5f);
    }
    i = harness_add(h, ISA_ENG_DVE, ISA_OP_rand2);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, P, 4096, ISA_DT_BF16, N);
    i->ap[1] = col(ISA_MEM_SBUF, 0, P, 8192, ISA_DT_F32);
    i->ap[2] = col(ISA_MEM_SBUF, 0, P, 8196, ISA_DT_F32);
    assert_int_equal(harness_run(h), EMU_OK);
    double s = 0, s2 = 0;
    for (uint32_t p = 0; p < P; p++)
        for (size_t k = 0; k < N; k++) {
            float v = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, k);
            assert_true(v >= -2.0f && v < 3.0f);
            s += v;
            s2 += (double)v * v;
            float w = get(h, ISA_MEM_SBUF, p, 4096, ISA_DT_BF16, k);
            assert_true(w >= rnd(ISA_DT_BF16, (float)p) && w <= rnd(ISA_DT_BF16, p + 0.5f));
        }
    double n = (double)N * P, mean = s / n, var = s2 / n - mean * mean;
    assert_true(fabs(mean - 0.5) < 0.02);
    assert_true(fabs(var - 25.0 / 12.0) < 0.05);
}

/* dropout: the rate, kept values bit-exact (also int32), p = 0 and 1,
 * per-row probabilities, a dtype change. */
static void test_dropout(void **state)
{
    struct harness *h = *state;
    enum { N = 2048, P = 128 };
    lcg_state = 37;
    fill(h, ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N, 1, 2);
    for (uint32_t p = 0; p < P; p++) {
        for (size_t k = 0; k < 16; k++) {
            uint32_t v = 0x7FFFFF00u + (uint32_t)k;
            memcpy(harness_sbuf_ptr(h, p, 40000 + 4 * k), &v, 4);
        }
        put(h, ISA_MEM_SBUF, p, 40064, ISA_DT_F32, 0, (float)p / 127.0f);
    }
    struct isa_ap x = harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N);
    add_op(h, ISA_ENG_DVE, ISA_OP_dropout, harness_tile(ISA_MEM_SBUF, 0, P, 8192, ISA_DT_F32, N),
           x)->fimm[0] = 0.3f;
    add_op(h, ISA_ENG_DVE, ISA_OP_dropout, harness_tile(ISA_MEM_SBUF, 0, P, 16384, ISA_DT_F32, N),
           x)->fimm[0] = 0.0f;
    add_op(h, ISA_ENG_DVE, ISA_OP_dropout,
           harness_tile(ISA_MEM_SBUF, 0, P, 24576, ISA_DT_BF16, N), x)->fimm[0] = 1.0f;
    add_op(h, ISA_ENG_DVE, ISA_OP_dropout, harness_tile(ISA_MEM_SBUF, 0, P, 30000, ISA_DT_I32, 16),
           harness_tile(ISA_MEM_SBUF, 0, P, 40000, ISA_DT_I32, 16))->fimm[0] = 0.5f;
    add_op(h, ISA_ENG_DVE, ISA_OP_dropout, harness_tile(ISA_MEM_SBUF, 0, P, 50000, ISA_DT_F32, N),
           x)->ap[2] = col(ISA_MEM_SBUF, 0, P, 40064, ISA_DT_F32);
    assert_int_equal(harness_run(h), EMU_OK);
    size_t dropped = 0, kept_ints = 0;
    for (uint32_t p = 0; p < P; p++) {
        size_t row_drop = 0;
        for (size_t k = 0; k < N; k++) {
            float v = get(h, ISA_MEM_SBUF, p, 0, ISA_DT_F32, k);
            float d = get(h, ISA_MEM_SBUF, p, 8192, ISA_DT_F32, k);
            assert_true(d == 0.0f || d == v);
            dropped += d == 0.0f;
            assert_same(get(h, ISA_MEM_SBUF, p, 16384, ISA_DT_F32, k), v);
            assert_same(get(h, ISA_MEM_SBUF, p, 24576, ISA_DT_BF16, k), 0);
            row_drop += get(h, ISA_MEM_SBUF, p, 50000, ISA_DT_F32, k) == 0.0f;
        }
        double pr = (double)p / 127.0, frac = (double)row_drop / N;
        assert_true(fabs(frac - pr) < 0.05); /* sd <= 0.011 */
        for (size_t k = 0; k < 16; k++) {
            uint32_t w = word(h, p, 30000, k);
            assert_true(w == 0 || w == 0x7FFFFF00u + k);
            kept_ints += w != 0;
        }
    }
    double rate = (double)dropped / ((double)N * P); /* sd 0.0009 */
    assert_true(fabs(rate - 0.3) < 0.005);
    assert_true(kept_ints > 900 && kept_ints < 1148);
}

/* Reference XORWOW (Marsaglia 2003, xorshift plus a Weyl counter), written
 * here from the algorithm: w = x0..x4, d; returns the next output. */
static uint32_t ref_xorwow(uint32_t w[6])
{
    uint32_t t = w[0] ^ (w[0] >> 2);
    memmove(w, w + 1, 4 * sizeof w[0]);
    w[4] = w[4] ^ (w[4] << 4) ^ t ^ (t << 1);
    w[5] += 362437u;
    return w[4] + w[5];
}

/* State words of lane p, generator j, known to the test. */
static uint32_t xw_word(uint32_t p, uint32_t j, uint32_t k)
{
    return 0x9E3779B9u * (p * 24u + j * 6u + k + 1u) ^ (k == 5 ? 0u : 0x5bd1e995u);
}

/* rand_set_state loads lanes' states, rng then draws the XORWOW sequence
 * of each (element i from generator i mod 1 on GpSimd, i mod 4 on the
 * Vector engine), rand_get_state stores the advanced states. */
static void xw_check_engine(struct harness *h, unsigned engine, uint32_t nst)
{
    enum { P = 5, N = 11 };
    uint32_t words = nst * 6;
    harness_clear(h);
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t k = 0; k < words; k++) {
            uint32_t w = xw_word(p + 2, k / 6, k % 6);
            memcpy(harness_sbuf_ptr(h, p + 2, 4 * k), &w, 4);
        }
    harness_add(h, engine, ISA_OP_rand_set_state)->ap[1] =
        harness_tile(ISA_MEM_SBUF, 2, P, 0, ISA_DT_U32, words);
    harness_add(h, engine, ISA_OP_rng)->ap[0] = harness_tile(ISA_MEM_SBUF, 2, P, 1024, ISA_DT_U32, N);
    harness_add(h, engine, ISA_OP_rand_get_state)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 2, P, 2048, ISA_DT_U32, words);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 2; p < 2 + P; p++) {
        uint32_t ref[4][6];
        for (uint32_t j = 0; j < nst; j++)
            for (uint32_t k = 0; k < 6; k++)
                ref[j][k] = xw_word(p, j, k);
        for (uint32_t i = 0; i < N; i++)
            assert_int_equal(word(h, p, 1024, i), ref_xorwow(ref[i % nst]));
        for (uint32_t k = 0; k < words; k++)
            assert_int_equal(word(h, p, 2048, k), ref[k / 6][k % 6]);
    }
}

static void test_xorwow_reference(void **state)
{
    (void)state;
    struct harness *h = harness_new(4);
    xw_check_engine(h, ISA_ENG_POOL, 1);
    xw_check_engine(h, ISA_ENG_DVE, 4);
    /* rand2 and dropout use the same draws: u = (bits >> 8) * 2^-24 */
    harness_clear(h);
    uint32_t st[24];
    for (uint32_t k = 0; k < 24; k++) {
        st[k] = xw_word(0, k / 6, k % 6);
        memcpy(harness_sbuf_ptr(h, 0, 4 * k), &st[k], 4);
    }
    harness_add(h, ISA_ENG_DVE, ISA_OP_rand_set_state)->ap[1] =
        harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_U32, 24);
    struct isa_insn *r2 = harness_add(h, ISA_ENG_DVE, ISA_OP_rand2);
    r2->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 1024, ISA_DT_F32, 9);
    r2->fimm[0] = 0.0f;
    r2->fimm[1] = 1.0f;
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t i = 0; i < 9; i++)
        assert_same(get(h, ISA_MEM_SBUF, 0, 1024, ISA_DT_F32, i),
                    (float)(ref_xorwow(&st[6 * (i % 4)]) >> 8) * 0x1p-24f);
    harness_free(h);
}

/* Save, draw, restore, draw again: the same values; the documented sizes;
 * set_rng_seed repeats a stream and differs from the reset seeding. */
static void test_rng_state(void **state)
{
    struct harness *h = *state;
    enum { N = 100 };
    struct isa_ap st = harness_tile(ISA_MEM_SBUF, 0, 2, 0, ISA_DT_U32, 6);
    harness_add(h, ISA_ENG_POOL, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, 2, 1024, ISA_DT_U32, N);
    harness_add(h, ISA_ENG_POOL, ISA_OP_rand_get_state)->ap[0] = st;
    harness_add(h, ISA_ENG_POOL, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, 2, 2048, ISA_DT_U32, N);
    harness_add(h, ISA_ENG_POOL, ISA_OP_rand_set_state)->ap[1] = st;
    harness_add(h, ISA_ENG_POOL, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, 2, 3072, ISA_DT_U32, N);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < 2; p++)
        for (size_t k = 0; k < N; k++) {
            assert_int_equal(word(h, p, 2048, k), word(h, p, 3072, k));
            assert_int_not_equal(word(h, p, 1024, k), word(h, p, 2048, k));
        }
    /* 24 words on the Vector engine, 6 on GpSimd; nothing else */
    harness_clear(h);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rand_get_state)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_U32, 6);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "24 values"));
    harness_clear(h);
    harness_add(h, ISA_ENG_POOL, ISA_OP_rand_set_state)->ap[1] =
        harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_U32, 24);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    /* set_rng_seed: the same seed repeats */
    harness_clear(h);
    uint32_t seed = 0xC0FFEE;
    memcpy(harness_sbuf_ptr(h, 3, 0), &seed, 4);
    struct isa_ap s1 = harness_tile(ISA_MEM_SBUF, 3, 1, 0, ISA_DT_U32, 1);
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 3, 1, 512, ISA_DT_U32, N);
    harness_add(h, ISA_ENG_DVE, ISA_OP_set_rng_seed)->ap[1] = s1;
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 3, 1, 1024, ISA_DT_U32, N);
    harness_add(h, ISA_ENG_DVE, ISA_OP_set_rng_seed)->ap[1] = s1;
    harness_add(h, ISA_ENG_DVE, ISA_OP_rng)->ap[0] =
        harness_tile(ISA_MEM_SBUF, 3, 1, 2048, ISA_DT_U32, N);
    assert_int_equal(harness_run(h), EMU_OK);
    size_t same = 0;
    for (size_t k = 0; k < N; k++) {
        assert_int_equal(word(h, 3, 1024, k), word(h, 3, 2048, k));
        same += word(h, 3, 512, k) == word(h, 3, 1024, k);
    }
    assert_true(same < 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_math_accuracy),
        cmocka_unit_test(test_math_specials),
        cmocka_unit_test(test_math_levels),
        cmocka_unit_test(test_math_levels_many),
        cmocka_unit_test(test_math_reduce),
        cmocka_unit_test_setup_teardown(test_activation_scale_bias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activation_split_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activation_dtypes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activation_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activation_alias, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activation_accumulator, setup, teardown),
        cmocka_unit_test_setup_teardown(test_activate2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exponential_reciprocal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rng_bits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rand2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dropout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rng_state, setup, teardown),
        cmocka_unit_test(test_xorwow_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
