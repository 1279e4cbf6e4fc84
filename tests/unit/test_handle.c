/*
 * test_handle.c: unit tests of the live-object registry (devices/handle):
 * add/has/remove/each/count/list with many pointers, kinds, growth, and long
 * random operation sequences checked against a plain reference array, so
 * that the backward-shift deletion keeps every remaining key findable.
 *
 * The registry never dereferences what it stores, so the keys here are
 * made-up addresses.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "devices/runtime/handle.h"

#define NKEYS 4096

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* Key i: a mix of dense (allocator-like) and scattered addresses. */
static const void *key(size_t i)
{
    uint64_t v = (i % 2 == 0) ? 0x10000 + i * 16 : 0x7f0000000000ull + i * 4096 * 7;
    return (const void *)(uintptr_t)v;
}

/* The registry wants its lock held; each wrapper takes it for one call, so
 * a failing assertion (a longjmp) never leaves it locked. */
static NRT_STATUS h_add(const void *p, enum handle_kind k)
{
    handle_lock();
    NRT_STATUS st = handle_add(p, k);
    handle_unlock();
    return st;
}

static bool h_has(const void *p, enum handle_kind k)
{
    handle_lock();
    bool r = handle_has(p, k);
    handle_unlock();
    return r;
}

static void h_remove(const void *p)
{
    handle_lock();
    handle_remove(p);
    handle_unlock();
}

static size_t h_count(enum handle_kind k)
{
    handle_lock();
    size_t n = handle_count(k);
    handle_unlock();
    return n;
}

static void h_each(enum handle_kind k, void (*fn)(void *p, void *arg), void *arg)
{
    handle_lock();
    handle_each(k, fn, arg);
    handle_unlock();
}

/* Remove every key this test file may have added. */
static int reset(void **state)
{
    (void)state;
    for (size_t i = 0; i < NKEYS; i++)
        h_remove(key(i));
    return 0;
}

static void count_cb(void *p, void *arg)
{
    (void)p;
    (*(size_t *)arg)++;
}

static void test_basic(void **state)
{
    (void)state;
    const void *a = key(1), *b = key(2);
    assert_false(h_has(a, HANDLE_TENSOR));
    assert_false(h_has(NULL, HANDLE_TENSOR));
    assert_false(h_has(NULL, HANDLE_NONE));
    h_remove(NULL);  /* no-ops */
    h_remove(a);
    assert_int_equal(h_add(a, HANDLE_TENSOR), NRT_SUCCESS);
    assert_true(h_has(a, HANDLE_TENSOR));
    assert_false(h_has(a, HANDLE_TENSOR_SET));
    assert_false(h_has(a, HANDLE_MODEL));
    assert_false(h_has(b, HANDLE_TENSOR));
    assert_int_equal(h_add(b, HANDLE_TENSOR_SET), NRT_SUCCESS);
    assert_int_equal(h_count(HANDLE_TENSOR), 1);
    assert_int_equal(h_count(HANDLE_TENSOR_SET), 1);
    assert_int_equal(h_count(HANDLE_MODEL), 0);
    /* Adding again changes the kind, never duplicates. */
    assert_int_equal(h_add(a, HANDLE_MODEL), NRT_SUCCESS);
    assert_false(h_has(a, HANDLE_TENSOR));
    assert_true(h_has(a, HANDLE_MODEL));
    assert_int_equal(h_count(HANDLE_TENSOR), 0);
    assert_int_equal(h_count(HANDLE_MODEL), 1);
    h_remove(a);
    assert_false(h_has(a, HANDLE_MODEL));
    h_remove(a);
    assert_true(h_has(b, HANDLE_TENSOR_SET));
    h_remove(b);
    assert_int_equal(h_count(HANDLE_TENSOR_SET), 0);
}

/* handle_list: every live object of one kind, none of another. */
static void test_list(void **state)
{
    (void)state;
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(h_add(key(i), i % 3 == 0 ? HANDLE_MODEL : HANDLE_TENSOR), NRT_SUCCESS);
    handle_lock();
    size_t n;
    void **list = handle_list(HANDLE_MODEL, &n);
    handle_unlock();
    assert_non_null(list);
    assert_int_equal(n, 34);
    for (size_t i = 0; i < 100; i += 3) {
        size_t seen = 0;
        for (size_t j = 0; j < n; j++)
            seen += list[j] == key(i);
        assert_int_equal(seen, 1);
    }
    free(list);
    handle_lock();
    list = handle_list(HANDLE_TENSOR_SET, &n);
    handle_unlock();
    assert_non_null(list);
    assert_int_equal(n, 0);
    free(list);
}

static void test_many(void **state)
{
    (void)state;
    for (size_t i = 0; i < NKEYS; i++)
        assert_int_equal(h_add(key(i), (enum handle_kind)(1 + i % 3)), NRT_SUCCESS);
    for (size_t i = 0; i < NKEYS; i++) {
        assert_true(h_has(key(i), (enum handle_kind)(1 + i % 3)));
        assert_false(h_has(key(i), (enum handle_kind)(1 + (i + 1) % 3)));
    }
    size_t n = 0;
    h_each(HANDLE_TENSOR, count_cb, &n);
    assert_int_equal(n, h_count(HANDLE_TENSOR));
    assert_int_equal(h_count(HANDLE_TENSOR) + h_count(HANDLE_TENSOR_SET) +
                         h_count(HANDLE_MODEL), NKEYS);
    /* Remove in an order unrelated to insertion; the rest stays findable. */
    for (size_t i = 0; i < NKEYS; i += 3)
        h_remove(key(i));
    for (size_t i = 0; i < NKEYS; i++)
        assert_int_equal(h_has(key(i), (enum handle_kind)(1 + i % 3)), i % 3 != 0);
    for (size_t i = NKEYS; i-- > 0;)
        h_remove(key(i));
    for (size_t i = 0; i < NKEYS; i++)
        assert_false(h_has(key(i), (enum handle_kind)(1 + i % 3)));
    assert_int_equal(h_count(HANDLE_TENSOR), 0);
}

/* Random add/remove/has against a reference; full sweeps now and then. */
static void random_ops(uint64_t seed, size_t nkeys, int steps)
{
    enum handle_kind ref[NKEYS];
    memset(ref, 0, sizeof ref);
    for (int step = 0; step < steps; step++) {
        size_t i = (size_t)(rng_next(&seed) % nkeys);
        unsigned op = (unsigned)(rng_next(&seed) % 10);
        if (op < 5) {
            enum handle_kind k = (enum handle_kind)(1 + rng_next(&seed) % 3);
            assert_int_equal(h_add(key(i), k), NRT_SUCCESS);
            ref[i] = k;
        } else if (op < 9) {
            h_remove(key(i));
            ref[i] = HANDLE_NONE;
        }
        for (int k = HANDLE_TENSOR; k <= HANDLE_MODEL; k++)
            assert_int_equal(h_has(key(i), (enum handle_kind)k), (int)ref[i] == k);
        if (step % 997 == 0) {
            size_t cnt[4] = {0};
            for (size_t j = 0; j < nkeys; j++) {
                cnt[ref[j]]++;
                if (ref[j] != HANDLE_NONE && !h_has(key(j), ref[j]))
                    fail_msg("step %d: key %zu lost", step, j);
                if (ref[j] == HANDLE_NONE && h_has(key(j), HANDLE_TENSOR))
                    fail_msg("step %d: key %zu still present", step, j);
            }
            for (int k = HANDLE_TENSOR; k <= HANDLE_MODEL; k++)
                assert_int_equal(h_count((enum handle_kind)k), cnt[k]);
        }
    }
    for (size_t j = 0; j < nkeys; j++)
        if (ref[j] != HANDLE_NONE)
            assert_true(h_has(key(j), ref[j]));
}

/* The registry's hash (a copy, to build colliding keys on purpose; if the
 * registry changes its hash this test only gets less pointed). */
static size_t home_slot(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

/* Keys whose home slots sit at the end of a 64-slot table and wrap around:
 * deletions must shift members across the table's end correctly. Must run
 * first, while the table still has its initial 64 slots. */
static void test_wraparound_collisions(void **state)
{
    (void)state;
    enum { N = 24 };
    const void *keys[N];
    size_t n = 0;
    for (uint64_t v = 0x5000; n < N; v += 16) {
        size_t h = home_slot((const void *)(uintptr_t)v, 64);
        if (h >= 61 || h <= 1)
            keys[n++] = (const void *)(uintptr_t)v;
    }
    uint64_t seed = 4242;
    for (int round = 0; round < 300; round++) {
        bool in[N] = {false};
        for (size_t i = 0; i < N; i++) {
            assert_int_equal(h_add(keys[i], HANDLE_TENSOR), NRT_SUCCESS);
            in[i] = true;
        }
        for (size_t r = 0; r < N; r++) {
            size_t i = (size_t)(rng_next(&seed) % N);
            h_remove(keys[i]);
            in[i] = false;
            for (size_t j = 0; j < N; j++)
                if (h_has(keys[j], HANDLE_TENSOR) != in[j])
                    fail_msg("round %d: key %zu wrong after removing %zu", round, j, i);
        }
        for (size_t i = 0; i < N; i++)
            h_remove(keys[i]);
        assert_int_equal(h_count(HANDLE_TENSOR), 0);
    }
}

static void test_random_small(void **state)
{
    (void)state;
    /* Few keys: long probe runs are built and torn down over and over. */
    for (uint64_t s = 1; s <= 20; s++) {
        random_ops(s * 7919, 40, 5000);
        reset(NULL);
    }
}

static void test_random_large(void **state)
{
    (void)state;
    random_ops(12345, NKEYS, 200000);
    reset(NULL);
    random_ops(99, 1000, 100000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wraparound_collisions),
        cmocka_unit_test_setup_teardown(test_basic, reset, reset),
        cmocka_unit_test_setup_teardown(test_many, reset, reset),
        cmocka_unit_test_setup_teardown(test_list, reset, reset),
        cmocka_unit_test_setup_teardown(test_random_small, reset, reset),
        cmocka_unit_test_setup_teardown(test_random_large, reset, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
