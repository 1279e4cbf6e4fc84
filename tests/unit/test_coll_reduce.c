/*
 * test_coll_reduce.c: the element-wise reductions of the collectives
 * (devices/coll/coll_reduce.h), for every dtype and op, against references
 * built from the scalar conversions of emu/num/numerics.h; the fold of a
 * list (coll_fold_list, the direct all-reduce's one pass) against the
 * chain of pairwise folds, bit for bit.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "devices/coll/coll_reduce.h"
#include "emu/num/numerics.h"

#define N 1037  /* odd: exercises the vector tails */

static const uint32_t float_types[] = {NUM_DT_FP32, NUM_DT_FP32R, NUM_DT_BF16, NUM_DT_FP16,
                                       NUM_DT_FP8_E3, NUM_DT_FP8_E4, NUM_DT_FP8_E5};
static const uint32_t int_types[] = {NUM_DT_INT8, NUM_DT_UINT8, NUM_DT_INT16, NUM_DT_UINT16,
                                     NUM_DT_INT32, NUM_DT_UINT32, NUM_DT_INT64, NUM_DT_UINT64};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* n random finite values of a float dtype (via fp32, rounded to it). */
static void fill_float(uint8_t *p, uint32_t dt, size_t n, float scale)
{
    size_t es = num_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        float x = ((float)(int64_t)(rnd() % 2001) - 1000.0f) / 1000.0f * scale;
        num_from_f32(dt, p + i * es, x, NULL, 0);
    }
}

static float ref_ext(float a, float b, bool mx)
{
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == b && a != 0)
        return a;
    if (a == b) {
        bool neg = mx ? (signbit(a) && signbit(b)) : (signbit(a) || signbit(b));
        return neg ? -0.0f : 0.0f;
    }
    return (a > b) == mx ? a : b;
}

static void check_float(uint32_t dt, uint32_t op)
{
    size_t es = num_dtype_size(dt);
    uint8_t a[N * 4], b[N * 4], out[N * 4], want[N * 4];
    fill_float(a, dt, N, dt == NUM_DT_FP8_E3 ? 7.0f : 100.0f);
    fill_float(b, dt, N, dt == NUM_DT_FP8_E3 ? 7.0f : 100.0f);
    for (size_t i = 0; i < N; i++) {
        float x = num_to_f32(dt, a + i * es), y = num_to_f32(dt, b + i * es);
        float r = op == COLL_OP_MAX ? ref_ext(x, y, true)
                : op == COLL_OP_MIN ? ref_ext(x, y, false) : x + y;
        num_from_f32(dt, want + i * es, r, NULL, 0);
    }
    coll_fold(out, a, b, N, dt, op);
    assert_memory_equal(out, want, N * es);
    /* in place, out == a */
    coll_fold(a, a, b, N, dt, op);
    assert_memory_equal(a, want, N * es);
}

static void test_floats(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof float_types / sizeof float_types[0]; t++)
        for (uint32_t op = 0; op <= COLL_OP_FMA; op++)
            check_float(float_types[t], op);
}

/* Integer reference in 64 bits, wrapped to the type. */
static void check_int(uint32_t dt, uint32_t op)
{
    size_t es = num_dtype_size(dt);
    bool sgn = dt == NUM_DT_INT8 || dt == NUM_DT_INT16 || dt == NUM_DT_INT32 ||
               dt == NUM_DT_INT64;
    uint8_t a[N * 8], b[N * 8], out[N * 8], want[N * 8];
    for (size_t i = 0; i < N * es; i++) {
        a[i] = (uint8_t)rnd();
        b[i] = (uint8_t)rnd();
    }
    for (size_t i = 0; i < N; i++) {
        uint64_t x = 0, y = 0, r;
        memcpy(&x, a + i * es, es);
        memcpy(&y, b + i * es, es);
        unsigned sh = (unsigned)(64 - 8 * es);
        if (op == COLL_OP_ADD || op == COLL_OP_FMA) {
            r = x + y;
        } else if (sgn) {
            int64_t sx = (int64_t)(x << sh) >> sh, sy = (int64_t)(y << sh) >> sh;
            r = (uint64_t)((op == COLL_OP_MAX) == (sx > sy) ? sx : sy);
        } else {
            r = (op == COLL_OP_MAX) == (x > y) ? x : y;
        }
        memcpy(want + i * es, &r, es);  /* little-endian: the low bytes */
    }
    coll_fold(out, a, b, N, dt, op);
    assert_memory_equal(out, want, N * es);
}

static void test_ints(void **state)
{
    (void)state;
    for (size_t t = 0; t < sizeof int_types / sizeof int_types[0]; t++)
        for (uint32_t op = 0; op <= COLL_OP_FMA; op++)
            check_int(int_types[t], op);
}

/* Signed zeros, NaN and overflow, spelled out. */
static void test_specials(void **state)
{
    (void)state;
    float a[4] = {0.0f, -0.0f, NAN, 1.0f}, b[4] = {-0.0f, 0.0f, 1.0f, NAN}, o[4];
    coll_fold(o, a, b, 4, NUM_DT_FP32, COLL_OP_MAX);
    assert_false(signbit(o[0]));
    assert_false(signbit(o[1]));
    assert_true(isnan(o[2]) && isnan(o[3]));
    coll_fold(o, a, b, 4, NUM_DT_FP32, COLL_OP_MIN);
    assert_true(o[0] == 0 && signbit(o[0]));
    assert_true(o[1] == 0 && signbit(o[1]));
    /* bf16 overflow rounds to infinity; int8 wraps */
    uint16_t big = num_f32_to_bf16(3.0e38f), r;
    coll_fold(&r, &big, &big, 1, NUM_DT_BF16, COLL_OP_ADD);
    assert_int_equal(r, 0x7f80);
    int8_t x = 100, y = 100, z;
    coll_fold(&z, &x, &y, 1, NUM_DT_INT8, COLL_OP_ADD);
    assert_int_equal(z, -56);
    /* fma is add, bit for bit */
    float f[3] = {1e-8f, 1.0f, 3.3f}, g[3] = {1.0f, 1e-8f, -3.3f}, fa[3], ff[3];
    coll_fold(fa, f, g, 3, NUM_DT_FP32, COLL_OP_ADD);
    coll_fold(ff, f, g, 3, NUM_DT_FP32, COLL_OP_FMA);
    assert_memory_equal(fa, ff, sizeof fa);
}

/* bf16 is rounded once per step: ((x0 + x1) + x2) with a rounding after each. */
static void test_bf16_per_step(void **state)
{
    (void)state;
    uint16_t x0 = num_f32_to_bf16(1.0f), x1 = num_f32_to_bf16(0.00390625f),  /* 2^-8 */
             x2 = num_f32_to_bf16(0.00390625f), acc;
    coll_fold(&acc, &x0, &x1, 1, NUM_DT_BF16, COLL_OP_ADD);  /* 1 + 2^-8: a tie, stays 1 */
    coll_fold(&acc, &acc, &x2, 1, NUM_DT_BF16, COLL_OP_ADD);
    assert_true(num_bf16_to_f32(acc) == 1.0f);  /* not 1 + 2^-7 as fp32 accumulation gives */
}

/* coll_fold_list over k inputs gives the bits of k-1 pairwise folds in
 * order, for every type, op and k (also in place, when it makes one pass). */
static void check_list(uint32_t dt, uint32_t op, uint32_t k, bool is_float)
{
    enum { K = 16 };
    size_t es = num_dtype_size(dt), bytes = N * es;
    uint8_t *in[K] = {0}, *want = malloc(bytes), *got = malloc(bytes);
    const void *src[K] = {0};
    for (uint32_t r = 0; r < k; r++) {
        in[r] = malloc(bytes);
        if (is_float)  /* mixed magnitudes: the order of the steps shows */
            fill_float(in[r], dt, N, r % 3 == 0 ? 1e4f : 1.0f / (float)(r + 1));
        for (size_t i = 0; i < bytes && !is_float; i++)
            in[r][i] = (uint8_t)rnd();
        src[r] = in[r];
    }
    memcpy(want, in[0], bytes);
    for (uint32_t r = 1; r < k; r++)
        coll_fold(want, want, in[r], N, dt, op);
    coll_fold_list(got, src, k, N, dt, op);
    assert_memory_equal(got, want, bytes);
    if (coll_fold_list_one_pass(dt, op)) {  /* the output is one of the inputs */
        coll_fold_list(in[k - 1], src, k, N, dt, op);
        assert_memory_equal(in[k - 1], want, bytes);
    }
    for (uint32_t r = 0; r < k; r++)
        free(in[r]);
    free(want);
    free(got);
}

static void test_fold_list(void **state)
{
    (void)state;
    static const uint32_t ks[] = {1, 2, 3, 16};
    for (size_t t = 0; t < sizeof float_types / sizeof float_types[0]; t++)
        for (uint32_t op = 0; op <= COLL_OP_FMA; op++)
            for (size_t j = 0; j < 4; j++)
                check_list(float_types[t], op, ks[j], true);
    for (size_t t = 0; t < sizeof int_types / sizeof int_types[0]; t++)
        for (uint32_t op = 0; op <= COLL_OP_FMA; op++)
            check_list(int_types[t], op, 5, false);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(coll_op_name(COLL_OP_MIN), "min");
    assert_true(coll_op_ok(COLL_OP_FMA));
    assert_false(coll_op_ok(4));
    assert_true(coll_dtype_ok(NUM_DT_UINT64));
    assert_false(coll_dtype_ok(0));
    assert_false(coll_dtype_ok(99));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_floats),
        cmocka_unit_test(test_ints),
        cmocka_unit_test(test_specials),
        cmocka_unit_test(test_bf16_per_step),
        cmocka_unit_test(test_fold_list),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
