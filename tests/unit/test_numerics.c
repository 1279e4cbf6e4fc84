/*
 * test_numerics.c: unit tests of emu/numerics (dtype table, every
 * conversion, rounding, saturation, NaN rules, strided and stochastic
 * paths). The fast paths are checked against a small reference
 * implementation written here from the format definitions (value tables
 * built with ldexp, nearest-value search with ties to even), exhaustively
 * for every 8- and 16-bit pattern and on every rounding midpoint.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#if defined(__SSE__) || defined(__x86_64__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#else
#define HAVE_MXCSR 0
#endif

#include "devices/config/log_env.h"
#include "emu/log.h"
#include "emu/num/numerics.h"
#include "emu/num/mx.h"
#include "emu/num/num_minmax.h"

/* ---- reference implementation ------------------------------------------- */

/* An IEEE-style binary format: E exponent bits, M mantissa bits. */
struct ref_fmt {
    uint32_t dtype; /* NUM_DT_* */
    int E;          /* exponent bits */
    int M;          /* mantissa bits */
    int bias;       /* exponent bias */
    uint32_t inf;   /* bit pattern of +inf */
    double *tab;    /* tab[k]: value of positive pattern k (k < inf); tab[inf] = 2^(emax+1) */
};

static struct ref_fmt ref_fmts[] = {
    {NUM_DT_BF16, 8, 7, 0, 0, NULL},   {NUM_DT_FP16, 5, 10, 0, 0, NULL},
    {NUM_DT_FP8_E3, 3, 4, 0, 0, NULL}, {NUM_DT_FP8_E4, 4, 3, 0, 0, NULL},
    {NUM_DT_FP8_E5, 5, 2, 0, 0, NULL},
};
#define N_FMTS (sizeof ref_fmts / sizeof ref_fmts[0])

static uint64_t rng_state = 0x1234567887654321ull;

static uint64_t rnd64(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Value of pattern h straight from the definition; NaN for NaN patterns. */
static double ref_decode(const struct ref_fmt *f, uint32_t h)
{
    uint32_t emax = (1u << f->E) - 1u;
    uint32_t e = (h >> f->M) & emax, m = h & ((1u << f->M) - 1u);
    int neg = (h >> (f->E + f->M)) & 1u;
    double v;
    if (e == emax)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, 1 - f->bias - f->M);
    else
        v = ldexp((double)(m + (1u << f->M)), (int)e - f->bias - f->M);
    return neg ? -v : v;
}

static void ref_init(void)
{
    for (size_t i = 0; i < N_FMTS; i++) {
        struct ref_fmt *f = &ref_fmts[i];
        if (f->tab)
            continue;
        f->bias = (1 << (f->E - 1)) - 1;
        f->inf = ((1u << f->E) - 1u) << f->M;
        f->tab = malloc(sizeof(double) * (f->inf + 1u));
        for (uint32_t k = 0; k < f->inf; k++)
            f->tab[k] = ref_decode(f, k);
        f->tab[f->inf] = ldexp(1.0, (1 << f->E) - 1 - f->bias);
    }
}

static const struct ref_fmt *ref_get(uint32_t dtype)
{
    ref_init();
    for (size_t i = 0; i < N_FMTS; i++)
        if (ref_fmts[i].dtype == dtype)
            return &ref_fmts[i];
    return NULL;
}

/* Largest k <= inf with tab[k] <= a (a >= 0, finite). */
static uint32_t ref_floor_idx(const struct ref_fmt *f, double a)
{
    uint32_t lo = 0, hi = f->inf;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (f->tab[mid] <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Nearest pattern to finite-or-inf non-NaN x, ties to even. */
static uint32_t ref_encode(const struct ref_fmt *f, float x, int sat)
{
    uint32_t sign = (f2u(x) >> 31) << (f->E + f->M);
    double a = fabs((double)x);
    uint32_t k;
    if (isinf(a)) {
        k = f->inf;
    } else {
        k = ref_floor_idx(f, a);
        if (k < f->inf && a != f->tab[k]) {
            double d1 = a - f->tab[k], d2 = f->tab[k + 1] - a;
            if (d2 < d1 || (d1 == d2 && (k & 1u)))
                k++;
        }
    }
    if (k == f->inf && sat)
        k--;
    return sign | k;
}

/* The documented NaN result: quiet, top payload bits, sign kept. */
static uint32_t ref_nan(const struct ref_fmt *f, float x)
{
    uint32_t u = f2u(x), sh = 23u - (uint32_t)f->M;
    uint32_t sign = (u >> 31) << (f->E + f->M);
    return sign | f->inf | (1u << (f->M - 1)) | ((u >> sh) & ((1u << f->M) - 1u));
}

static int is_nan_pat(const struct ref_fmt *f, uint32_t h)
{
    return (h & f->inf) == f->inf && (h & ((1u << f->M) - 1u)) != 0;
}

/* Read / write a pattern of a 1- or 2-byte element at p. */
static uint32_t get_pat(const struct ref_fmt *f, const void *p)
{
    if (f->E + f->M + 1 == 8)
        return *(const uint8_t *)p;
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

static void put_pat(const struct ref_fmt *f, void *p, uint32_t h)
{
    if (f->E + f->M + 1 == 8) {
        *(uint8_t *)p = (uint8_t)h;
    } else {
        uint16_t v = (uint16_t)h;
        memcpy(p, &v, 2);
    }
}

/* ---- dtype table ----------------------------------------------------------- */

static void test_dtype_table(void **state)
{
    (void)state;
    static const struct {
        uint32_t dt;
        size_t size;
        const char *name;
        bool is_float;
    } want[] = {
        {NUM_DT_FP32, 4, "fp32", true},     {NUM_DT_FP32R, 4, "fp32r", true},
        {NUM_DT_BF16, 2, "bf16", true},     {NUM_DT_FP16, 2, "fp16", true},
        {NUM_DT_FP8_E3, 1, "fp8_e3", true}, {NUM_DT_FP8_E4, 1, "fp8_e4", true},
        {NUM_DT_FP8_E5, 1, "fp8_e5", true}, {NUM_DT_INT8, 1, "int8", false},
        {NUM_DT_INT16, 2, "int16", false},  {NUM_DT_INT32, 4, "int32", false},
        {NUM_DT_INT64, 8, "int64", false},  {NUM_DT_UINT8, 1, "uint8", false},
        {NUM_DT_UINT16, 2, "uint16", false}, {NUM_DT_UINT32, 4, "uint32", false},
        {NUM_DT_UINT64, 8, "uint64", false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_int_equal(num_dtype_size(want[i].dt), want[i].size);
        assert_string_equal(num_dtype_name(want[i].dt), want[i].name);
        assert_int_equal(num_dtype_parse(want[i].name), (int)want[i].dt);
        assert_int_equal(num_dtype_is_float(want[i].dt), want[i].is_float);
    }
    /* the values are those of nrt_dtype_t */
    assert_int_equal(NUM_DT_FP32, 10);
    assert_int_equal(NUM_DT_FP8_E3, 13);
    assert_int_equal(NUM_DT_UINT64, 1);
    assert_int_equal(num_dtype_parse("float32"), NUM_DT_FP32);
    assert_int_equal(num_dtype_parse("BFloat16"), NUM_DT_BF16);
    assert_int_equal(num_dtype_parse("float16"), NUM_DT_FP16);
    assert_int_equal(num_dtype_parse("float8_e4m3"), NUM_DT_FP8_E4);
    assert_int_equal(num_dtype_parse("float8_e5m2"), NUM_DT_FP8_E5);
    assert_int_equal(num_dtype_parse("float8_e3m4"), NUM_DT_FP8_E3);
    assert_int_equal(num_dtype_parse("fp8e4"), NUM_DT_FP8_E4);
    assert_int_equal(num_dtype_parse("i32"), NUM_DT_INT32);
    assert_int_equal(num_dtype_parse("u8"), NUM_DT_UINT8);
    assert_int_equal(num_dtype_parse("float8_e4m3fn"), NUM_DT_FP8_E4M3FN); /* not fp8_e4 */
    assert_int_equal(num_dtype_parse("complex64"), -1);
    assert_int_equal(num_dtype_parse(""), -1);
    assert_int_equal(num_dtype_parse(NULL), -1);
    uint32_t bad[] = {0, NUM_DT_COUNT, 99, 0xffffffffu};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(num_dtype_size(bad[i]), 0);
        assert_null(num_dtype_name(bad[i]));
        assert_false(num_dtype_is_float(bad[i]));
    }
}

/* ---- exhaustive decode and round trip -------------------------------------- */

/* Every pattern of format f: decode (vector and scalar) matches the
 * reference, and encoding the result gives the pattern back. */
static void check_all_patterns(uint32_t dtype)
{
    const struct ref_fmt *f = ref_get(dtype);
    uint32_t count = 1u << (f->E + f->M + 1);
    size_t sz = num_dtype_size(dtype);
    unsigned char *pats = malloc(count * sz), *back = malloc(count * sz);
    float *vals = malloc(count * sizeof(float));
    for (uint32_t h = 0; h < count; h++)
        put_pat(f, pats + h * sz, h);
    for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl);
        assert_int_equal(num_load_f32(vals, pats, dtype, 1, count), EMU_OK);
        assert_int_equal(num_store_f32(back, dtype, 1, vals, count, NULL), EMU_OK);
        for (uint32_t h = 0; h < count; h++) {
            double want = ref_decode(f, h);
            float s = num_to_f32(dtype, pats + h * sz);
            uint32_t b = get_pat(f, back + h * sz);
            if (isnan(want)) {
                assert_true(isnan(vals[h]) && isnan(s));
                assert_int_equal(f2u(vals[h]) >> 31, h >> (f->E + f->M));
                assert_true(is_nan_pat(f, b));
            } else {
                assert_true((double)vals[h] == want);
                assert_int_equal(f2u(vals[h]), f2u((float)want)); /* sign of zero too */
                assert_int_equal(f2u(s), f2u(vals[h]));
                assert_int_equal(b, h);
            }
        }
    }
    num_set_isa_limit(NUM_ISA_AVX512);
    free(pats);
    free(back);
    free(vals);
}

static void test_bf16_all(void **state)
{
    (void)state;
    check_all_patterns(NUM_DT_BF16);
    for (uint32_t h = 0; h < 65536; h++) {
        float v = num_bf16_to_f32((uint16_t)h);
        assert_int_equal(f2u(v), h << 16); /* bf16 -> fp32 is exact, NaN bits kept */
        if (!isnan(v))
            assert_int_equal(num_f32_to_bf16(v), h);
    }
}

static void test_fp16_all(void **state)
{
    (void)state;
    check_all_patterns(NUM_DT_FP16);
    const struct ref_fmt *f = ref_get(NUM_DT_FP16);
    for (uint32_t h = 0; h < 65536; h++) {
        float v = num_f16_to_f32((uint16_t)h);
        if (isnan(v))
            assert_int_equal(f2u(v), ((h >> 15) << 31) | 0x7fc00000u | ((h & 0x3ffu) << 13));
        else
            assert_int_equal(num_f32_to_f16(v), h);
        assert_true(isnan(v) || (double)v == ref_decode(f, h));
    }
}

static void test_fp8_all(void **state)
{
    (void)state;
    uint32_t dts[] = {NUM_DT_FP8_E3, NUM_DT_FP8_E4, NUM_DT_FP8_E5};
    for (int i = 0; i < 3; i++) {
        check_all_patterns(dts[i]);
        const struct ref_fmt *f = ref_get(dts[i]);
        for (uint32_t h = 0; h < 256; h++) {
            float v = num_fp8_to_f32(dts[i], (uint8_t)h);
            if (isnan(v))
                assert_true(is_nan_pat(f, h));
            else
                assert_int_equal(num_f32_to_fp8(dts[i], v), h);
        }
    }
    /* the documented extremes */
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E4, 0x77) == 240.0f);
    assert_true(isinf(num_fp8_to_f32(NUM_DT_FP8_E4, 0x78)));
    assert_true(isnan(num_fp8_to_f32(NUM_DT_FP8_E4, 0x7f)));
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E4, 0x01) == 0x1p-9f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E5, 0x7b) == 57344.0f);
    assert_true(isinf(num_fp8_to_f32(NUM_DT_FP8_E5, 0xfc)));
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E5, 0x01) == 0x1p-16f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E3, 0x6f) == 15.5f);
    assert_true(isinf(num_fp8_to_f32(NUM_DT_FP8_E3, 0x70)));
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E3, 0x01) == 0x1p-6f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E3, 0x10) == 0.25f);
}

/* ---- encoding against the reference ---------------------------------------- */

/* Inputs that exercise every rounding decision of format f: every value,
 * every midpoint and their fp32 neighbours, both signs, specials, and
 * random bit patterns. */
static float *encode_inputs(const struct ref_fmt *f, size_t *n_out)
{
    size_t cap = (size_t)(f->inf + 1u) * 12u + (1u << 18) + 64u, n = 0;
    float *xs = malloc(cap * sizeof(float));
    for (uint32_t k = 0; k <= f->inf; k++) {
        float v = (float)f->tab[k];
        float pts[5] = {v, nextafterf(v, 0.0f), nextafterf(v, INFINITY)};
        int np = 3;
        if (k < f->inf) {
            float mid = (float)((f->tab[k] + f->tab[k + 1]) / 2.0); /* exact */
            pts[np++] = mid;
            pts[np++] = nextafterf(mid, 0.0f);
        }
        for (int j = 0; j < np; j++) {
            xs[n++] = pts[j];
            xs[n++] = -pts[j];
        }
        if (k < f->inf) {
            float mid = (float)((f->tab[k] + f->tab[k + 1]) / 2.0);
            xs[n++] = nextafterf(mid, INFINITY);
            xs[n++] = -nextafterf(mid, INFINITY);
        }
    }
    float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MAX, -FLT_MAX,
                        FLT_MIN, 0x1p-149f, -0x1p-149f, 1e-30f, 1e30f, 65504.0f, 65520.0f,
                        240.0f, 248.0f, 256.0f, 15.5f, 15.75f, 16.0f, 57344.0f, 61440.0f,
                        u2f(0x7f800001u), u2f(0xffbfffffu), u2f(0x7fc12345u)};
    for (size_t j = 0; j < sizeof specials / sizeof specials[0]; j++)
        xs[n++] = specials[j];
    for (int j = 0; j < (1 << 18); j++)
        xs[n++] = u2f((uint32_t)rnd64());
    assert_true(n <= cap);
    *n_out = n;
    return xs;
}

/* Check one encoded result r of x against the reference. */
static void check_encoded(const struct ref_fmt *f, float x, uint32_t r, int sat)
{
    uint32_t want = isnan(x) ? ref_nan(f, x) : ref_encode(f, x, sat);
    if (r != want)
        fail_msg("dtype %u sat %d: x=%a (0x%08x) gave 0x%x, want 0x%x", f->dtype, sat, (double)x,
                 f2u(x), r, want);
}

static void check_encoder(uint32_t dtype)
{
    const struct ref_fmt *f = ref_get(dtype);
    size_t n, sz = num_dtype_size(dtype);
    float *xs = encode_inputs(f, &n);
    unsigned char *out = malloc(n * sz), *out2 = malloc(n * sz);
    for (int sat = 0; sat < 2; sat++) {
        struct num_round rnd = {.mode = NUM_ROUND_RNE, .saturate = sat};
        for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
            num_set_isa_limit(lvl);
            assert_int_equal(num_store_f32(out, dtype, 1, xs, n, &rnd), EMU_OK);
            for (size_t i = 0; i < n; i++)
                check_encoded(f, xs[i], get_pat(f, out + i * sz), sat);
        }
        /* the scalar entry points agree */
        for (size_t i = 0; i < n; i += 7) {
            assert_int_equal(num_from_f32(dtype, out2, xs[i], &rnd, 0), EMU_OK);
            check_encoded(f, xs[i], get_pat(f, out2), sat);
        }
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t s = dtype == NUM_DT_BF16   ? num_f32_to_bf16(xs[i])
                     : dtype == NUM_DT_FP16 ? num_f32_to_f16(xs[i])
                                            : num_f32_to_fp8(dtype, xs[i]);
        check_encoded(f, xs[i], s, 0);
    }
    num_set_isa_limit(NUM_ISA_AVX512);
    free(xs);
    free(out);
    free(out2);
}

static void test_encode_bf16(void **state)
{
    (void)state;
    check_encoder(NUM_DT_BF16);
}

static void test_encode_fp16(void **state)
{
    (void)state;
    check_encoder(NUM_DT_FP16);
}

static void test_encode_fp8(void **state)
{
    (void)state;
    check_encoder(NUM_DT_FP8_E3);
    check_encoder(NUM_DT_FP8_E4);
    check_encoder(NUM_DT_FP8_E5);
}

/* Every ISA level gives the same bits as the portable one, for every
 * dtype, load and store (with and without saturation), on random bits
 * and at lengths that leave partial blocks. */
static void test_isa_levels_agree(void **state)
{
    (void)state;
    size_t n = (1u << 16) + 37;
    float *xs = malloc(n * 4), *l0 = malloc(n * 4), *l1 = malloc(n * 4);
    unsigned char *raw = malloc(n * 8), *s0 = malloc(n * 8), *s1 = malloc(n * 8);
    for (size_t i = 0; i < n; i++)
        xs[i] = u2f((uint32_t)rnd64());
    for (size_t i = 0; i < n * 8; i++)
        raw[i] = (unsigned char)rnd64();
    print_message("best level here: %s\n", num_impl_name());
    for (uint32_t dt = 1; dt < NUM_DT_COUNT; dt++) {
        size_t sz = num_dtype_size(dt);
        for (int sat = 0; sat < 2; sat++) {
            struct num_round rnd = {.mode = NUM_ROUND_RNE, .saturate = sat};
            num_set_isa_limit(NUM_ISA_PORTABLE);
            assert_string_equal(num_impl_name(), "portable");
            num_store_f32(s0, dt, 1, xs, n, &rnd);
            num_load_f32(l0, raw, dt, 1, n);
            for (int lvl = NUM_ISA_AVX2; lvl <= NUM_ISA_AVX512; lvl++) {
                num_set_isa_limit(lvl);
                num_store_f32(s1, dt, 1, xs, n, &rnd);
                num_load_f32(l1, raw, dt, 1, n);
                if (memcmp(s0, s1, n * sz) != 0 || memcmp(l0, l1, n * 4) != 0)
                    fail_msg("%s differs at level %d (sat %d)", num_dtype_name(dt), lvl, sat);
            }
        }
    }
    num_set_isa_limit(NUM_ISA_AVX512);
    free(xs);
    free(l0);
    free(l1);
    free(raw);
    free(s0);
    free(s1);
}

/* Programs built with -ffast-math set DAZ/FTZ for the whole process; the
 * conversions must give the same bits anyway, at every ISA level. (The
 * expected bits come from a run without DAZ/FTZ, as the reference's own
 * double arithmetic would be affected.) */
static void test_daz_ftz(void **state)
{
    (void)state;
#if HAVE_MXCSR
    uint32_t dts[] = {NUM_DT_BF16, NUM_DT_FP16, NUM_DT_FP8_E3, NUM_DT_FP8_E4, NUM_DT_FP8_E5,
                      NUM_DT_INT8, NUM_DT_INT32};
    unsigned saved = _mm_getcsr();
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        uint32_t dt = dts[t];
        bool is_int = dt == NUM_DT_INT8 || dt == NUM_DT_INT32;
        const struct ref_fmt *f = ref_get(is_int ? NUM_DT_FP16 : dt);
        size_t n, sz = num_dtype_size(dt);
        float *xs = encode_inputs(f, &n), *l0 = malloc(n * 4), *l1 = malloc(n * 4);
        unsigned char *s0 = malloc(n * sz), *s1 = malloc(n * sz);
        num_store_f32(s0, dt, 1, xs, n, NULL);
        num_load_f32(l0, s0, dt, 1, n);
        for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
            num_set_isa_limit(lvl);
            _mm_setcsr(saved | 0x8040u); /* FTZ | DAZ */
            num_store_f32(s1, dt, 1, xs, n, NULL);
            num_load_f32(l1, s0, dt, 1, n);
            _mm_setcsr(saved);
            if (memcmp(s0, s1, n * sz) != 0 || memcmp(l0, l1, n * 4) != 0)
                fail_msg("%s changes under DAZ/FTZ at level %d", num_dtype_name(dt), lvl);
        }
        num_set_isa_limit(NUM_ISA_AVX512);
        free(xs);
        free(l0);
        free(l1);
        free(s0);
        free(s1);
    }
#else
    skip();
#endif
}

/* ---- hand-picked rounding cases ------------------------------------------- */

static void test_rne_ties(void **state)
{
    (void)state;
    /* bf16: step 2^-7 at 1.0 */
    assert_int_equal(num_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);        /* tie -> even (down) */
    assert_int_equal(num_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);    /* tie -> even (up) */
    assert_int_equal(num_f32_to_bf16(nextafterf(1.0f + 0x1p-8f, 2)), 0x3f81);
    assert_int_equal(num_f32_to_bf16(-1.0f - 0x1p-8f), 0xbf80);
    /* fp16: step 1 at 1024, 2 at 2048 */
    assert_int_equal(num_f32_to_f16(2049.0f), num_f32_to_f16(2048.0f));
    assert_true(num_f16_to_f32(num_f32_to_f16(2051.0f)) == 2052.0f);
    assert_true(num_f16_to_f32(num_f32_to_f16(1024.5f)) == 1024.0f);
    assert_true(num_f16_to_f32(num_f32_to_f16(1025.5f)) == 1026.0f);
    /* fp8_e4: step 1/8 at 1.0 */
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E4, num_f32_to_fp8(NUM_DT_FP8_E4, 1.0625f)) == 1.0f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E4, num_f32_to_fp8(NUM_DT_FP8_E4, 1.1875f)) == 1.25f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E4, num_f32_to_fp8(NUM_DT_FP8_E4, 1.07f)) == 1.125f);
    /* fp8_e5: step 1/4 at 1.0; fp8_e3: step 1/16 */
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E5, num_f32_to_fp8(NUM_DT_FP8_E5, 1.125f)) == 1.0f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E5, num_f32_to_fp8(NUM_DT_FP8_E5, 1.375f)) == 1.5f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E3, num_f32_to_fp8(NUM_DT_FP8_E3, 1.03125f)) == 1.0f);
    assert_true(num_fp8_to_f32(NUM_DT_FP8_E3, num_f32_to_fp8(NUM_DT_FP8_E3, 1.09375f)) ==
                1.125f);
}

static void test_overflow_saturation(void **state)
{
    (void)state;
    struct num_round sat = {.mode = NUM_ROUND_RNE, .saturate = true};
    uint16_t h;
    uint8_t b;
    /* fp16: max 65504; 65520 is the midpoint to 2^16 and goes to inf */
    assert_int_equal(num_f32_to_f16(65519.0f), 0x7bff);
    assert_int_equal(num_f32_to_f16(65520.0f), 0x7c00);
    assert_int_equal(num_f32_to_f16(-1e9f), 0xfc00);
    num_from_f32(NUM_DT_FP16, &h, 1e9f, &sat, 0);
    assert_int_equal(h, 0x7bff);
    num_from_f32(NUM_DT_FP16, &h, -INFINITY, &sat, 0);
    assert_int_equal(h, 0xfbff);
    num_from_f32(NUM_DT_FP16, &h, NAN, &sat, 0);
    assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff));
    /* bf16: FLT_MAX rounds to inf, or to the largest bf16 */
    assert_int_equal(num_f32_to_bf16(FLT_MAX), 0x7f80);
    assert_int_equal(num_f32_to_bf16(-FLT_MAX), 0xff80);
    num_from_f32(NUM_DT_BF16, &h, -FLT_MAX, &sat, 0);
    assert_int_equal(h, 0xff7f);
    num_from_f32(NUM_DT_BF16, &h, INFINITY, &sat, 0);
    assert_int_equal(h, 0x7f7f);
    /* fp8_e4: max 240; 248 is the midpoint to 256 (inf) */
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, 247.9f), 0x77);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, 248.0f), 0x78);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, -1000.0f), 0xf8);
    num_from_f32(NUM_DT_FP8_E4, &b, 1000.0f, &sat, 0);
    assert_int_equal(b, 0x77);
    num_from_f32(NUM_DT_FP8_E4, &b, -INFINITY, &sat, 0);
    assert_int_equal(b, 0xf7);
    /* fp8_e5: max 57344; fp8_e3: max 15.5 */
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E5, 61439.0f), 0x7b);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E5, 61440.0f), 0x7c);
    num_from_f32(NUM_DT_FP8_E5, &b, 1e6f, &sat, 0);
    assert_int_equal(b, 0x7b);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E3, 15.74f), 0x6f);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E3, 15.75f), 0x70);
    num_from_f32(NUM_DT_FP8_E3, &b, 100.0f, &sat, 0);
    assert_int_equal(b, 0x6f);
    /* NaN stays NaN, sign kept */
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, -NAN), 0xfc);
    assert_int_equal(num_f32_to_bf16(u2f(0x7f800001u)), 0x7fc0);
    assert_int_equal(num_f32_to_f16(u2f(0xff802000u)), 0xfe01);
}

static void test_subnormals(void **state)
{
    (void)state;
    /* fp16: smallest subnormal 2^-24; 2^-25 is a tie with 0 -> 0 */
    assert_int_equal(num_f32_to_f16(0x1p-24f), 0x0001);
    assert_int_equal(num_f32_to_f16(0x1p-25f), 0x0000);
    assert_int_equal(num_f32_to_f16(-0x1p-25f), 0x8000);
    assert_int_equal(num_f32_to_f16(nextafterf(0x1p-25f, 1)), 0x0001);
    assert_int_equal(num_f32_to_f16(3 * 0x1p-25f), 0x0002); /* tie 1.5 units -> 2 */
    assert_int_equal(num_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400); /* rounds into normals */
    assert_true(num_f16_to_f32(0x03ff) == 1023 * 0x1p-24f);
    /* bf16 keeps fp32 subnormals */
    assert_int_equal(num_f32_to_bf16(0x1p-149f), 0x0000); /* 2^-149 < half of 2^-133 */
    assert_int_equal(num_f32_to_bf16(0x1p-133f), 0x0001);
    assert_int_equal(num_f32_to_bf16(0x1p-134f), 0x0000);
    assert_int_equal(num_f32_to_bf16(3 * 0x1p-134f), 0x0002);
    assert_true(num_bf16_to_f32(0x0001) == 0x1p-133f);
    /* fp8 */
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, 0x1p-10f), 0x00);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, 0x1.8p-10f), 0x01);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E4, 0x1p-9f), 0x01);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E5, 0x1p-17f), 0x00);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E5, 0x1p-16f), 0x01);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E3, 0x1p-6f), 0x01);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E3, 0x1.8p-6f), 0x02);
    assert_int_equal(num_f32_to_fp8(NUM_DT_FP8_E3, -0x1p-30f), 0x80);
}

/* ---- integers ------------------------------------------------------------- */

/* Reference float -> integer: RNE in double, clamp, NaN -> 0. */
static double ref_int(float x, double lo, double hi_excl)
{
    if (isnan(x))
        return 0;
    double r = nearbyint((double)x);
    if (r >= hi_excl)
        return hi_excl - 1; /* callers compare with care for 64-bit */
    if (r < lo)
        return lo;
    return r;
}

static void test_float_to_int(void **state)
{
    (void)state;
    float xs[] = {0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -2.5f, -0.5f, -1.5f, 0.49999997f, 127.5f,
                  128.5f, -128.5f, -129.0f, 255.5f, 256.0f, 254.5f, 32767.5f, -32768.5f,
                  65535.5f, 65534.5f, 2147483520.0f, 0x1p31f, -0x1p31f, -2147483904.0f,
                  4294967040.0f, 0x1p32f, 0x1p62f, 0x1p63f, -0x1p63f, -0x1p64f, 0x1p64f,
                  1e30f, -1e30f, INFINITY, -INFINITY, NAN, 8388607.5f, 8388608.5f,
                  -8388607.5f, 12345.678f, -9876.5f, 3e-40f, -1.0f};
    size_t n = sizeof xs / sizeof xs[0];
    int8_t i8[64];
    uint8_t u8[64];
    int16_t i16[64];
    uint16_t u16[64];
    int32_t i32[64];
    uint32_t u32[64];
    int64_t i64[64];
    uint64_t u64[64];
    num_store_f32(i8, NUM_DT_INT8, 1, xs, n, NULL);
    num_store_f32(u8, NUM_DT_UINT8, 1, xs, n, NULL);
    num_store_f32(i16, NUM_DT_INT16, 1, xs, n, NULL);
    num_store_f32(u16, NUM_DT_UINT16, 1, xs, n, NULL);
    num_store_f32(i32, NUM_DT_INT32, 1, xs, n, NULL);
    num_store_f32(u32, NUM_DT_UINT32, 1, xs, n, NULL);
    num_store_f32(i64, NUM_DT_INT64, 1, xs, n, NULL);
    num_store_f32(u64, NUM_DT_UINT64, 1, xs, n, NULL);
    for (size_t i = 0; i < n; i++) {
        float x = xs[i];
        assert_int_equal(i8[i], (int8_t)ref_int(x, -128, 128));
        assert_int_equal(u8[i], (uint8_t)ref_int(x, 0, 256));
        assert_int_equal(i16[i], (int16_t)ref_int(x, -32768, 32768));
        assert_int_equal(u16[i], (uint16_t)ref_int(x, 0, 65536));
        assert_int_equal(i32[i], (int32_t)ref_int(x, -0x1p31, 0x1p31));
        assert_int_equal(u32[i], (uint32_t)ref_int(x, 0, 0x1p32));
        double r = isnan(x) ? 0 : nearbyint((double)x);
        int64_t w64 = r >= 0x1p63 ? INT64_MAX : r < -0x1p63 ? INT64_MIN : (int64_t)r;
        uint64_t wu64 = r <= 0 ? 0 : r >= 0x1p64 ? UINT64_MAX : (uint64_t)r;
        assert_true(i64[i] == w64);
        assert_true(u64[i] == wu64);
        assert_true(num_f32_to_int(NUM_DT_INT32, x) == i32[i]);
        assert_true(num_f32_to_uint(NUM_DT_UINT8, x) == u8[i]);
        assert_true(num_f32_to_int(NUM_DT_INT64, x) == i64[i]);
        assert_true(num_f32_to_uint(NUM_DT_UINT64, x) == u64[i]);
    }
    /* hand checks of the rules */
    assert_int_equal(num_f32_to_int(NUM_DT_INT8, 2.5f), 2);
    assert_int_equal(num_f32_to_int(NUM_DT_INT8, 3.5f), 4);
    assert_int_equal(num_f32_to_int(NUM_DT_INT8, -2.5f), -2);
    assert_int_equal(num_f32_to_int(NUM_DT_INT8, 300.0f), 127);
    assert_int_equal(num_f32_to_int(NUM_DT_INT8, -300.0f), -128);
    assert_int_equal(num_f32_to_uint(NUM_DT_UINT8, -5.0f), 0);
    assert_int_equal(num_f32_to_int(NUM_DT_INT32, NAN), 0);
    assert_true(num_f32_to_int(NUM_DT_INT32, INFINITY) == INT32_MAX);
    assert_true(num_f32_to_int(NUM_DT_INT64, -INFINITY) == INT64_MIN);
    assert_true(num_f32_to_uint(NUM_DT_UINT64, INFINITY) == UINT64_MAX);
    assert_true(num_f32_to_uint(NUM_DT_UINT32, 0x1p32f) == UINT32_MAX);
    assert_int_equal(num_f32_to_int(NUM_DT_FP32, 1.0f), 0);
}

static void test_int_to_float(void **state)
{
    (void)state;
    int32_t i32[] = {0, 1, -1, 16777216, 16777217, 16777219, -16777219, INT32_MAX, INT32_MIN};
    float w32[] = {0, 1, -1, 16777216.0f, 16777216.0f, 16777220.0f, -16777220.0f, 0x1p31f,
                   -0x1p31f};
    float out[16];
    num_load_f32(out, i32, NUM_DT_INT32, 1, 9);
    for (int i = 0; i < 9; i++)
        assert_true(out[i] == w32[i]);
    uint32_t u32[] = {UINT32_MAX, 16777217u, 0x80000080u, 0x80000081u};
    float wu32[] = {0x1p32f, 16777216.0f, 0x1p31f, 2147483904.0f};
    num_load_f32(out, u32, NUM_DT_UINT32, 1, 4);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == wu32[i]);
    int64_t i64[] = {INT64_MAX, INT64_MIN, ((int64_t)1 << 40) + 1,
                     -(((int64_t)1 << 40) + 3 * ((int64_t)1 << 16))};
    float wi64[] = {0x1p63f, -0x1p63f, 0x1p40f, -(0x1p40f + 0x1p18f)};
    num_load_f32(out, i64, NUM_DT_INT64, 1, 4);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == wi64[i]);
    uint64_t u64[] = {UINT64_MAX, 1};
    num_load_f32(out, u64, NUM_DT_UINT64, 1, 2);
    assert_true(out[0] == 0x1p64f && out[1] == 1.0f);
    int8_t i8[] = {-128, 127, -1};
    uint16_t u16[] = {65535, 0};
    int16_t i16[] = {-32768, 32767};
    uint8_t u8[] = {255, 0};
    num_load_f32(out, i8, NUM_DT_INT8, 1, 3);
    assert_true(out[0] == -128 && out[1] == 127 && out[2] == -1);
    num_load_f32(out, u16, NUM_DT_UINT16, 1, 2);
    assert_true(out[0] == 65535 && out[1] == 0);
    num_load_f32(out, i16, NUM_DT_INT16, 1, 2);
    assert_true(out[0] == -32768 && out[1] == 32767);
    num_load_f32(out, u8, NUM_DT_UINT8, 1, 2);
    assert_true(out[0] == 255 && out[1] == 0);
    assert_true(num_to_f32(NUM_DT_INT16, &i16[0]) == -32768.0f);
}

/* ---- strided and cast paths ---------------------------------------------- */

static void test_strided(void **state)
{
    (void)state;
    enum { N = 1000 };
    uint16_t src[3 * N];
    float got[N], vals[N];
    for (int i = 0; i < 3 * N; i++)
        src[i] = (uint16_t)rnd64();
    uint32_t dts[] = {NUM_DT_BF16, NUM_DT_FP16};
    for (int t = 0; t < 2; t++) {
        /* stride 3 */
        num_load_f32(got, src, dts[t], 3, N);
        for (int i = 0; i < N; i++) {
            float w = num_to_f32(dts[t], &src[3 * i]);
            assert_true(f2u(got[i]) == f2u(w));
        }
        /* stride -1 from the end */
        num_load_f32(got, &src[3 * N - 1], dts[t], -1, N);
        for (int i = 0; i < N; i++) {
            float w = num_to_f32(dts[t], &src[3 * N - 1 - i]);
            assert_true(f2u(got[i]) == f2u(w));
        }
    }
    /* strided store leaves the gaps alone */
    for (int i = 0; i < N; i++)
        vals[i] = (float)(i - N / 2) * 0.37f;
    uint8_t d8[2 * N];
    memset(d8, 0xa5, sizeof d8);
    num_store_f32(d8, NUM_DT_FP8_E4, 2, vals, N, NULL);
    for (int i = 0; i < N; i++) {
        assert_int_equal(d8[2 * i], num_f32_to_fp8(NUM_DT_FP8_E4, vals[i]));
        assert_int_equal(d8[2 * i + 1], 0xa5);
    }
    uint16_t d16[3 * N];
    memset(d16, 0x5a, sizeof d16);
    num_store_f32(&d16[3 * N - 1], NUM_DT_BF16, -3, vals, N, NULL);
    for (int i = 0; i < N; i++)
        assert_int_equal(d16[3 * N - 1 - 3 * i], num_f32_to_bf16(vals[i]));
    assert_int_equal(d16[0], 0x5a5a);
    /* convert_strided bf16 (stride 3) -> fp16 (stride 2) */
    uint16_t c16[2 * N];
    memset(c16, 0, sizeof c16);
    assert_int_equal(num_convert_strided(c16, NUM_DT_FP16, 2, src, NUM_DT_BF16, 3, N),
                     EMU_OK);
    for (int i = 0; i < N; i++) {
        uint16_t w = num_f32_to_f16(num_bf16_to_f32(src[3 * i]));
        if (isnan(num_bf16_to_f32(src[3 * i])))
            assert_true((c16[2 * i] & 0x7c00) == 0x7c00 && (c16[2 * i] & 0x3ff));
        else
            assert_int_equal(c16[2 * i], w);
        assert_int_equal(c16[2 * i + 1], 0);
    }
}

/* A value of each dtype's range-ish scale from a random source. */
static void fill_random(void *buf, uint32_t dt, size_t n)
{
    float *tmp = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        double v = ((double)(rnd64() % 200001) - 100000.0) / 97.0;
        tmp[i] = num_dtype_is_float(dt) ? (float)v : (float)(int)v;
    }
    tmp[0] = NAN;
    tmp[1] = INFINITY;
    tmp[2] = -0.0f;
    num_store_f32(buf, dt, 1, tmp, n, NULL);
    free(tmp);
}

static bool same_storage(uint32_t a, uint32_t b)
{
    bool fa = a == NUM_DT_FP32 || a == NUM_DT_FP32R, fb = b == NUM_DT_FP32 || b == NUM_DT_FP32R;
    return a == b || (fa && fb);
}

/* Every (src, dst) pair: num_convert equals the scalar two-step cast, also
 * from and to unaligned addresses. */
static void test_convert_all_pairs(void **state)
{
    (void)state;
    enum { N = 2500 };
    unsigned char *src = malloc(8 * N + 8), *dst = malloc(8 * N + 8), *want = malloc(8 * N);
    for (uint32_t st = 1; st < NUM_DT_COUNT; st++) {
        size_t ssz = num_dtype_size(st);
        if (num_dtype_is_packed(st))
            continue; /* containers: bit copies only (test_mx.c) */
        for (int off = 0; off < 2; off++) {
            fill_random(src + off, st, N);
            for (uint32_t dt = 1; dt < NUM_DT_COUNT; dt++) {
                size_t dsz = num_dtype_size(dt);
                if (num_dtype_is_packed(dt))
                    continue;
                for (size_t i = 0; i < N; i++) {
                    if (same_storage(st, dt))
                        memcpy(want + i * dsz, src + off + i * ssz, dsz);
                    else
                        num_from_f32(dt, want + i * dsz, num_to_f32(st, src + off + i * ssz),
                                     NULL, 0);
                }
                assert_int_equal(num_convert(dst + off, dt, src + off, st, N), EMU_OK);
                if (memcmp(dst + off, want, N * dsz) != 0)
                    fail_msg("convert %s -> %s (offset %d) differs", num_dtype_name(st),
                             num_dtype_name(dt), off);
            }
        }
    }
    /* the two-step rule: int32 -> int64 goes through fp32 */
    int32_t big = 16777217;
    int64_t out64;
    num_convert(&out64, NUM_DT_INT64, &big, NUM_DT_INT32, 1);
    assert_true(out64 == 16777216);
    /* equal types copy bits, NaN payloads included */
    uint32_t nan_in = 0x7f800001u, nan_out = 0;
    num_convert(&nan_out, NUM_DT_FP32R, &nan_in, NUM_DT_FP32, 1);
    assert_int_equal(nan_out, nan_in);
    free(src);
    free(dst);
    free(want);
}

/* ---- stochastic rounding --------------------------------------------------- */

static struct num_round sr_mode(uint64_t seed, uint64_t index)
{
    return (struct num_round){.mode = NUM_ROUND_STOCHASTIC, .seed = seed, .index = index};
}

static void test_sr_reproducible(void **state)
{
    (void)state;
    enum { N = 4096 };
    float xs[N];
    uint16_t a[N], b[N], c[N];
    for (int i = 0; i < N; i++)
        xs[i] = 1.0f + (float)i * 0x1p-13f;
    struct num_round r1 = sr_mode(42, 0), r2 = sr_mode(43, 0);
    num_store_f32(a, NUM_DT_BF16, 1, xs, N, &r1);
    num_store_f32(b, NUM_DT_BF16, 1, xs, N, &r1);
    assert_memory_equal(a, b, sizeof a);
    num_store_f32(c, NUM_DT_BF16, 1, xs, N, &r2);
    assert_true(memcmp(a, c, sizeof a) != 0);
    /* splitting the call with a matching index gives the same bits */
    struct num_round h1 = sr_mode(42, 0), h2 = sr_mode(42, N / 2);
    num_store_f32(b, NUM_DT_BF16, 1, xs, N / 2, &h1);
    num_store_f32(b + N / 2, NUM_DT_BF16, 1, xs + N / 2, N / 2, &h2);
    assert_memory_equal(a, b, sizeof a);
    /* so does the two-step cast and the scalar entry point */
    num_convert_ex(c, NUM_DT_BF16, 1, xs, NUM_DT_FP32, 1, N, &r1);
    assert_memory_equal(a, c, sizeof a);
    for (int i = 0; i < N; i += 97) {
        uint16_t one;
        num_from_f32(NUM_DT_BF16, &one, xs[i], &r1, (uint64_t)i);
        assert_int_equal(one, a[i]);
    }
    assert_true(num_rng_u64(1, 2) == num_rng_u64(1, 2));
    assert_true(num_rng_u64(1, 2) != num_rng_u64(2, 1));
    assert_true(num_rng_u64(0, 0) != num_rng_u64(0, 1));
}

/* For dtype dt and input x: every SR result is one of the two neighbours,
 * the mean is x within tol, and the up-fraction matches. */
static void check_sr_mean(uint32_t dt, float x, double tol)
{
    enum { N = 200000 };
    float *xs = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    unsigned char *out = malloc(N * 8);
    for (int i = 0; i < N; i++)
        xs[i] = x;
    struct num_round r = sr_mode(7, 1000);
    num_store_f32(out, dt, 1, xs, N, &r);
    num_load_f32(back, out, dt, 1, N);
    double lo, hi;
    const struct ref_fmt *f = ref_get(dt);
    if (f) {
        uint32_t k = ref_floor_idx(f, fabs((double)x));
        lo = f->tab[k];
        hi = f->tab[k] == fabs((double)x) ? lo : f->tab[k + 1];
        if (x < 0) {
            double t = -lo;
            lo = -hi;
            hi = t;
        }
    } else {
        lo = floor((double)x);
        hi = ceil((double)x);
    }
    double sum = 0;
    for (int i = 0; i < N; i++) {
        double v = back[i];
        if (v != lo && v != hi)
            fail_msg("SR %s of %a gave %a, not %a or %a", num_dtype_name(dt), (double)x, v, lo,
                     hi);
        sum += v;
    }
    double mean = sum / N;
    if (fabs(mean - (double)x) > tol)
        fail_msg("SR %s of %a: mean %a off by %g", num_dtype_name(dt), (double)x, mean,
                 mean - (double)x);
    free(xs);
    free(back);
    free(out);
}

static void test_sr_unbiased(void **state)
{
    (void)state;
    /* tolerances ~ 6 standard deviations of the mean over 200000 draws */
    check_sr_mean(NUM_DT_BF16, 1.0f + 0x1p-9f, 6 * 0x1p-7 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_BF16, -3.3f, 6 * 0x1p-6 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_BF16, 1e-39f, 6 * 0x1p-133 * 0.5 / 447.0); /* subnormal */
    check_sr_mean(NUM_DT_FP16, 0.1f, 6 * 0x1p-14 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_FP16, 0x1.4p-25f, 6 * 0x1p-24 * 0.5 / 447.0); /* below min subnormal */
    check_sr_mean(NUM_DT_FP8_E4, 1.03f, 6 * 0.125 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_FP8_E4, -200.0f, 6 * 16 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_FP8_E5, 3.3f, 6 * 0.5 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_FP8_E3, 0.3f, 6 * 0.0625 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_FP8_E3, 0.01f, 6 * 0x1p-6 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_INT8, 2.3f, 6 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_INT32, -7.75f, 6 * 0.5 / 447.0);
    check_sr_mean(NUM_DT_UINT16, 1000.5f, 6 * 0.5 / 447.0);
    /* exact values never move */
    check_sr_mean(NUM_DT_BF16, 1.5f, 0.0);
    check_sr_mean(NUM_DT_FP8_E4, 240.0f, 0.0);
    check_sr_mean(NUM_DT_INT16, -12.0f, 0.0);
}

/* Random inputs of every magnitude: each SR result is one of the two
 * neighbours of the input (or the input itself when representable). */
static void test_sr_neighbours(void **state)
{
    (void)state;
    enum { N = 1 << 16 };
    float *xs = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
    unsigned char *out = malloc(N * 2);
    uint32_t dts[] = {NUM_DT_BF16, NUM_DT_FP16, NUM_DT_FP8_E3, NUM_DT_FP8_E4, NUM_DT_FP8_E5};
    for (int t = 0; t < 5; t++) {
        const struct ref_fmt *f = ref_get(dts[t]);
        double top = f->tab[f->inf - 1]; /* largest finite */
        for (int i = 0; i < N; i++) {
            uint32_t u = (uint32_t)rnd64();
            xs[i] = u2f(u);
            if (!(fabsf(xs[i]) <= top)) /* keep finite values inside the range */
                xs[i] = (float)(top * (double)(u >> 8) / 16777216.0) * (u & 1 ? -1.0f : 1.0f);
        }
        struct num_round r = sr_mode(99, (uint64_t)t << 32);
        num_store_f32(out, dts[t], 1, xs, N, &r);
        num_load_f32(back, out, dts[t], 1, N);
        for (int i = 0; i < N; i++) {
            double a = fabs((double)xs[i]);
            uint32_t k = ref_floor_idx(f, a);
            double lo = f->tab[k], hi = f->tab[k] == a ? lo : f->tab[k + 1];
            double got = fabs((double)back[i]);
            if ((got != lo && got != hi) || signbit(back[i]) != signbit(xs[i]))
                fail_msg("SR %s of %a gave %a", num_dtype_name(dts[t]), (double)xs[i],
                         (double)back[i]);
        }
    }
    free(xs);
    free(back);
    free(out);
}

static void test_sr_specials(void **state)
{
    (void)state;
    enum { N = 1000 };
    float xs[N];
    uint8_t out[N];
    struct num_round r = sr_mode(3, 0);
    /* 250 lies between 240 (max) and 256 (inf): without saturation both
     * occur, with saturation always 240 */
    for (int i = 0; i < N; i++)
        xs[i] = 250.0f;
    num_store_f32(out, NUM_DT_FP8_E4, 1, xs, N, &r);
    int ups = 0;
    for (int i = 0; i < N; i++) {
        assert_true(out[i] == 0x77 || out[i] == 0x78);
        ups += out[i] == 0x78;
    }
    assert_true(ups > 0 && ups < N);
    r.saturate = true;
    num_store_f32(out, NUM_DT_FP8_E4, 1, xs, N, &r);
    for (int i = 0; i < N; i++)
        assert_int_equal(out[i], 0x77);
    /* NaN and inf */
    xs[0] = NAN;
    xs[1] = -INFINITY;
    xs[2] = INFINITY;
    r.saturate = false;
    num_store_f32(out, NUM_DT_FP8_E5, 1, xs, 3, &r);
    assert_true((out[0] & 0x7c) == 0x7c && (out[0] & 3));
    assert_int_equal(out[1], 0xfc);
    assert_int_equal(out[2], 0x7c);
    int32_t i32[3];
    num_store_f32(i32, NUM_DT_INT32, 1, xs, 3, &r);
    assert_true(i32[0] == 0 && i32[1] == INT32_MIN && i32[2] == INT32_MAX);
    /* fp32 destinations are never rounded */
    float f = 1.0f + 0x1p-20f, g = 0;
    num_store_f32(&g, NUM_DT_FP32, 1, &f, 1, &r);
    assert_true(f == g);
}

/* ---- bad input --------------------------------------------------------------- */

static void test_bad_input(void **state)
{
    (void)state;
    setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
    log_env_load();
    float f[4] = {0};
    uint8_t b[16];
    struct num_round bad = {.mode = 9};
    assert_int_equal(num_load_f32(f, b, 0, 1, 4), EMU_INVALID);
    assert_int_equal(num_load_f32(f, b, NUM_DT_COUNT, 1, 4), EMU_INVALID);
    assert_int_equal(num_store_f32(b, 99, 1, f, 4, NULL), EMU_INVALID);
    assert_int_equal(num_store_f32(b, NUM_DT_INT8, 1, f, 4, &bad), EMU_INVALID);
    assert_int_equal(num_convert(b, NUM_DT_INT8, f, 42, 4), EMU_INVALID);
    assert_int_equal(num_convert(b, 0, f, NUM_DT_FP32, 4), EMU_INVALID);
    assert_int_equal(num_convert(NULL, NUM_DT_INT8, f, NUM_DT_FP32, 4), EMU_INVALID);
    assert_int_equal(num_load_f32(NULL, b, NUM_DT_INT8, 1, 4), EMU_INVALID);
    assert_int_equal(num_from_f32(77, b, 1.0f, NULL, 0), EMU_INVALID);
    assert_int_equal(num_convert(NULL, NUM_DT_INT8, NULL, NUM_DT_FP32, 0), EMU_OK);
    assert_int_equal(num_load_f32(NULL, NULL, NUM_DT_BF16, 1, 0), EMU_OK);
    assert_true(num_to_f32(0, b) == 0.0f);
    assert_true(isnan(num_fp8_to_f32(NUM_DT_BF16, 0)));
    assert_int_equal(num_f32_to_fp8(NUM_DT_INT8, 1.0f), 0);
    unsetenv("NEURON_RT_LOG_LEVEL");
    log_env_load();
}

static int teardown_all(void **state)
{
    (void)state;
    for (size_t i = 0; i < N_FMTS; i++) {
        free(ref_fmts[i].tab);
        ref_fmts[i].tab = NULL;
    }
    return 0;
}

/* ---- max and min (num_minmax.h) --------------------------------------------- */

/* The rules, spelled out case by case: what each must give. */
static uint32_t mm_want(float x, float y, bool want_max, enum num_nan_rule nan,
                        enum num_zero_rule zero)
{
    if (isnan(x) || isnan(y)) {
        if (nan == NUM_NAN_DEFAULT)
            return 0x7fc00000u;
        return isnan(x) ? f2u(x) : f2u(y);
    }
    if (x != y)
        return f2u((x > y) == want_max ? x : y);
    if (zero == NUM_ZERO_SECOND)
        return f2u(y);
    bool either_neg = (f2u(x) | f2u(y)) >> 31, both_neg = (f2u(x) & f2u(y)) >> 31;
    return f2u(x) & 0x7fffffffu ? f2u(x)
           : (want_max ? both_neg : either_neg) ? 0x80000000u : 0;
}

static void test_minmax_rules(void **state)
{
    (void)state;
    static const uint32_t v[] = {0x00000000u, 0x80000000u, 0x3f800000u, 0xbf800000u,
                                 0x00000001u, 0x80000001u, 0x7f7fffffu, 0xff7fffffu,
                                 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
                                 0x7f800001u, 0x40490fdbu};
    size_t n = sizeof v / sizeof v[0];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            for (int r = 0; r < 4; r++) {
                enum num_nan_rule nan = (enum num_nan_rule)(r & 1);
                enum num_zero_rule zero = (enum num_zero_rule)(r >> 1);
                float x = u2f(v[i]), y = u2f(v[j]);
                assert_int_equal(f2u(num_fmax(x, y, nan, zero)),
                                 mm_want(x, y, true, nan, zero));
                assert_int_equal(f2u(num_fmin(x, y, nan, zero)),
                                 mm_want(x, y, false, nan, zero));
            }
}

/* The first NaN / non-finite value is found wherever it sits (inside a
 * scanned block or in the tail, first or last), at every ISA level;
 * infinities pass the NaN-only scan, and so do the largest finite
 * values, subnormals and zeros of either sign. */
static void test_first_nonfinite(void **state)
{
    (void)state;
    enum { N = 3 * 1024 + 77 };
    static float x[N];
    static const uint32_t finite[] = {0x7f7fffffu, 0xff7fffffu, 0x00000001u, 0x80000000u,
                                      0x007fffffu, 0x3f800000u};
    static const uint32_t nan[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xffffffffu};
    static const size_t pos[] = {0, 1, 1023, 1024, 2047, 2500, 3 * 1024, N - 1};
    for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl);
        for (size_t i = 0; i < N; i++)
            x[i] = u2f(finite[i % 6]);
        assert_int_equal(num_first_nonfinite_f32(x, N, false), N);
        assert_int_equal(num_first_nonfinite_f32(x, N, true), N);
        assert_int_equal(num_first_nonfinite_f32(x, 0, false), 0);
        for (size_t k = 0; k < sizeof pos / sizeof pos[0]; k++) {
            size_t p = pos[k];
            x[p] = u2f(k % 2 ? 0xff800000u : 0x7f800000u);  /* an infinity */
            assert_int_equal(num_first_nonfinite_f32(x, N, false), p);
            assert_int_equal(num_first_nonfinite_f32(x, N, true), N);
            assert_int_equal(num_first_nonfinite_f32(x, p, false), p);  /* just before it */
            x[p] = u2f(nan[k % 4]);
            assert_int_equal(num_first_nonfinite_f32(x, N, false), p);
            assert_int_equal(num_first_nonfinite_f32(x, N, true), p);
            if (p + 1 < N) {  /* an infinity before a later NaN */
                x[p] = u2f(0x7f800000u);
                x[N - 1] = u2f(0x7fc00000u);
                assert_int_equal(num_first_nonfinite_f32(x, N, true), N - 1);
                x[N - 1] = u2f(finite[(N - 1) % 6]);
            }
            x[p] = u2f(finite[p % 6]);
        }
    }
    num_set_isa_limit(NUM_ISA_AVX512);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_table),
        cmocka_unit_test(test_minmax_rules),
        cmocka_unit_test(test_first_nonfinite),
        cmocka_unit_test(test_bf16_all),
        cmocka_unit_test(test_fp16_all),
        cmocka_unit_test(test_fp8_all),
        cmocka_unit_test(test_encode_bf16),
        cmocka_unit_test(test_encode_fp16),
        cmocka_unit_test(test_encode_fp8),
        cmocka_unit_test(test_isa_levels_agree),
        cmocka_unit_test(test_daz_ftz),
        cmocka_unit_test(test_rne_ties),
        cmocka_unit_test(test_overflow_saturation),
        cmocka_unit_test(test_subnormals),
        cmocka_unit_test(test_float_to_int),
        cmocka_unit_test(test_int_to_float),
        cmocka_unit_test(test_strided),
        cmocka_unit_test(test_convert_all_pairs),
        cmocka_unit_test(test_sr_reproducible),
        cmocka_unit_test(test_sr_unbiased),
        cmocka_unit_test(test_sr_neighbours),
        cmocka_unit_test(test_sr_specials),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, teardown_all);
}
