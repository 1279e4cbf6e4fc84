/*
 * test_hbm_alloc.c: unit tests of the HBM range allocator (devices/hbm_alloc):
 * granule rounding, alignment, exhaustion, merging of freed neighbours,
 * determinism, and long random take/give sequences checked against a
 * shadow bitmap with hbm_alloc_sane() after every step.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "devices/machine/hbm_alloc.h"

#define G HBM_ALLOC_MIN_ALIGN

/* A range handed out by the allocator, as the tests remember it. */
struct taken_range {
    uint64_t off;  /* start */
    uint64_t len;  /* rounded length */
};

/* Small deterministic generator (xorshift64*), so failures replay. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

static void test_round(void **state)
{
    (void)state;
    assert_int_equal(hbm_alloc_round(0), 0);
    assert_int_equal(hbm_alloc_round(1), G);
    assert_int_equal(hbm_alloc_round(G), G);
    assert_int_equal(hbm_alloc_round(G + 1), 2 * G);
    assert_int_equal(hbm_alloc_round(UINT64_MAX), 0);
    assert_int_equal(hbm_alloc_round(UINT64_MAX - G + 2), 0);
    assert_int_equal(hbm_alloc_round(UINT64_MAX - G + 1), UINT64_MAX - G + 1);
}

static void test_init_sizes(void **state)
{
    (void)state;
    struct hbm_alloc a;
    assert_int_equal(hbm_alloc_init(&a, 1000), NRT_SUCCESS);
    assert_int_equal(a.size, 1000 / G * G); /* a partial granule is dropped */
    assert_true(hbm_alloc_sane(&a));
    assert_int_equal(hbm_alloc_used(&a), 0);
    assert_int_equal(hbm_alloc_largest_free(&a), a.size);
    hbm_alloc_fini(&a);

    assert_int_equal(hbm_alloc_init(&a, 0), NRT_SUCCESS);
    assert_true(hbm_alloc_sane(&a));
    uint64_t off, taken;
    assert_int_equal(hbm_alloc_take(&a, 1, 0, &off, &taken), NRT_RESOURCE);
    assert_int_equal(hbm_alloc_largest_free(&a), 0);
    hbm_alloc_fini(&a);
}

static void test_bad_requests(void **state)
{
    (void)state;
    struct hbm_alloc a;
    uint64_t off = 777, taken = 777;
    assert_int_equal(hbm_alloc_init(&a, 1 << 20), NRT_SUCCESS);
    assert_int_equal(hbm_alloc_take(&a, 0, 0, &off, &taken), NRT_INVALID);
    assert_int_equal(hbm_alloc_take(&a, 64, 96, &off, &taken), NRT_INVALID);  /* not 2^n */
    assert_int_equal(hbm_alloc_take(&a, 64, 1ull << 41, &off, &taken), NRT_INVALID);
    assert_int_equal(hbm_alloc_take(&a, 64, UINT64_MAX, &off, &taken), NRT_INVALID);
    assert_int_equal(off, 777);
    assert_int_equal(taken, 777);
    /* More than the region: out of resources, not invalid, even when the
     * size does not survive rounding. */
    assert_int_equal(hbm_alloc_take(&a, (1 << 20) + 1, 0, &off, &taken), NRT_RESOURCE);
    assert_int_equal(hbm_alloc_take(&a, UINT64_MAX, 0, &off, &taken), NRT_RESOURCE);
    assert_int_equal(hbm_alloc_take(&a, UINT64_MAX - 1, 4096, &off, &taken), NRT_RESOURCE);
    assert_int_equal(off, 777);
    assert_int_equal(hbm_alloc_used(&a), 0);
    assert_true(hbm_alloc_sane(&a));
    /* A zero-length give is ignored. */
    hbm_alloc_give(&a, 0, 0);
    assert_true(hbm_alloc_sane(&a));
    hbm_alloc_fini(&a);
}

static void test_alignment(void **state)
{
    (void)state;
    struct hbm_alloc a;
    assert_int_equal(hbm_alloc_init(&a, 1 << 24), NRT_SUCCESS);
    uint64_t off, taken;
    /* Small alignments are raised to the granule. */
    for (uint64_t al = 0; al <= G; al = al ? al * 2 : 1) {
        assert_int_equal(hbm_alloc_take(&a, 3, al, &off, &taken), NRT_SUCCESS);
        assert_int_equal(off % G, 0);
        assert_int_equal(taken, G);
    }
    for (uint64_t al = 128; al <= (1u << 20); al *= 2) {
        assert_int_equal(hbm_alloc_take(&a, 100, al, &off, &taken), NRT_SUCCESS);
        assert_int_equal(off % al, 0);
        assert_int_equal(taken, 128);
        assert_true(hbm_alloc_sane(&a));
    }
    /* The gaps left by alignment are still usable. */
    uint64_t before = hbm_alloc_used(&a);
    assert_int_equal(hbm_alloc_take(&a, G, 0, &off, &taken), NRT_SUCCESS);
    assert_true(off < (1u << 20));
    assert_int_equal(hbm_alloc_used(&a), before + G);
    assert_true(hbm_alloc_sane(&a));
    /* An alignment as large as the region fits only at 0, which is taken. */
    assert_int_equal(hbm_alloc_take(&a, G, 1 << 24, &off, &taken), NRT_RESOURCE);
    hbm_alloc_fini(&a);
}

static void test_exhaustion(void **state)
{
    (void)state;
    struct hbm_alloc a;
    const uint64_t size = 64 * G;
    assert_int_equal(hbm_alloc_init(&a, size), NRT_SUCCESS);
    uint64_t off, taken;
    for (uint64_t i = 0; i < 64; i++) {
        assert_int_equal(hbm_alloc_take(&a, G, 0, &off, &taken), NRT_SUCCESS);
        assert_int_equal(off, i * G); /* first fit: in address order */
    }
    assert_int_equal(hbm_alloc_used(&a), size);
    assert_int_equal(hbm_alloc_largest_free(&a), 0);
    assert_int_equal(hbm_alloc_take(&a, 1, 0, &off, &taken), NRT_RESOURCE);
    assert_true(hbm_alloc_sane(&a));
    /* Free every other granule: 32 G free but no 2 G range. */
    for (uint64_t i = 0; i < 64; i += 2)
        hbm_alloc_give(&a, i * G, G);
    assert_true(hbm_alloc_sane(&a));
    assert_int_equal(hbm_alloc_used(&a), size / 2);
    assert_int_equal(hbm_alloc_largest_free(&a), G);
    assert_int_equal(hbm_alloc_take(&a, G + 1, 0, &off, &taken), NRT_RESOURCE);
    assert_int_equal(hbm_alloc_take(&a, G, 0, &off, &taken), NRT_SUCCESS);
    assert_int_equal(off, 0);
    hbm_alloc_give(&a, 0, G);
    for (uint64_t i = 1; i < 64; i += 2)
        hbm_alloc_give(&a, i * G, G);
    assert_true(hbm_alloc_sane(&a));
    assert_int_equal(hbm_alloc_used(&a), 0);
    assert_int_equal(a.nfree, 1);
    /* The whole region in one piece, exactly. */
    assert_int_equal(hbm_alloc_take(&a, size, 0, &off, &taken), NRT_SUCCESS);
    assert_int_equal(off, 0);
    assert_int_equal(taken, size);
    hbm_alloc_fini(&a);
}

static void test_merging(void **state)
{
    (void)state;
    struct hbm_alloc a;
    assert_int_equal(hbm_alloc_init(&a, 10 * G), NRT_SUCCESS);
    uint64_t off[10], taken;
    for (int i = 0; i < 10; i++)
        assert_int_equal(hbm_alloc_take(&a, G, 0, &off[i], &taken), NRT_SUCCESS);
    assert_int_equal(a.nfree, 0);
    hbm_alloc_give(&a, off[2], G);           /* alone */
    assert_int_equal(a.nfree, 1);
    hbm_alloc_give(&a, off[4], G);           /* alone */
    assert_int_equal(a.nfree, 2);
    hbm_alloc_give(&a, off[3], G);           /* joins both neighbours */
    assert_int_equal(a.nfree, 1);
    assert_int_equal(a.free[0].off, 2 * G);
    assert_int_equal(a.free[0].len, 3 * G);
    hbm_alloc_give(&a, off[5], G);           /* joins the previous range */
    assert_int_equal(a.nfree, 1);
    assert_int_equal(a.free[0].len, 4 * G);
    hbm_alloc_give(&a, off[1], G);           /* joins the next range */
    assert_int_equal(a.nfree, 1);
    assert_int_equal(a.free[0].off, G);
    hbm_alloc_give(&a, off[9], G);           /* at the very end */
    hbm_alloc_give(&a, off[0], G);           /* at the very start */
    assert_int_equal(a.nfree, 2);
    assert_true(hbm_alloc_sane(&a));
    hbm_alloc_give(&a, off[7], G);
    hbm_alloc_give(&a, off[6], G);
    hbm_alloc_give(&a, off[8], G);
    assert_int_equal(a.nfree, 1);
    assert_int_equal(a.free[0].off, 0);
    assert_int_equal(a.free[0].len, 10 * G);
    assert_true(hbm_alloc_sane(&a));
    hbm_alloc_fini(&a);
}

/* The free list grows past its initial capacity and shrinks back. */
static void test_many_fragments(void **state)
{
    (void)state;
    struct hbm_alloc a;
    const int n = 2000;
    assert_int_equal(hbm_alloc_init(&a, (uint64_t)n * G), NRT_SUCCESS);
    uint64_t off, taken;
    for (int i = 0; i < n; i++)
        assert_int_equal(hbm_alloc_take(&a, G, 0, &off, &taken), NRT_SUCCESS);
    for (int i = n - 2; i >= 0; i -= 2)  /* back to front: inserts at the head */
        hbm_alloc_give(&a, (uint64_t)i * G, G);
    assert_int_equal(a.nfree, (size_t)n / 2);
    assert_true(a.cap >= a.nfree);
    assert_true(hbm_alloc_sane(&a));
    for (int i = 1; i < n; i += 2)
        hbm_alloc_give(&a, (uint64_t)i * G, G);
    assert_int_equal(a.nfree, 1);
    assert_true(hbm_alloc_sane(&a));
    hbm_alloc_fini(&a);
}

/* Mark [off, off+len) in a byte-per-granule shadow; fail on overlap. */
static void shadow_mark(uint8_t *shadow, uint64_t off, uint64_t len, uint8_t v)
{
    for (uint64_t g = off / G; g < (off + len) / G; g++) {
        assert_int_not_equal(shadow[g], v);
        shadow[g] = v;
    }
}

/* One run of random operations; records the offsets it got in out. */
static void random_run(uint64_t seed, int steps, uint64_t *out, size_t *nout)
{
    const uint64_t size = 1 << 22;
    struct hbm_alloc a;
    assert_int_equal(hbm_alloc_init(&a, size), NRT_SUCCESS);
    uint8_t *shadow = calloc(size / G, 1);
    struct taken_range *live = calloc((size_t)steps, sizeof *live);
    assert_non_null(shadow);
    assert_non_null(live);
    size_t nlive = 0;
    uint64_t used = 0;
    *nout = 0;
    for (int step = 0; step < steps; step++) {
        uint64_t r = rng_next(&seed);
        if (nlive > 0 && (r % 100) < 45) {
            size_t k = (size_t)(rng_next(&seed) % nlive);
            shadow_mark(shadow, live[k].off, live[k].len, 0);
            hbm_alloc_give(&a, live[k].off, live[k].len);
            used -= live[k].len;
            live[k] = live[--nlive];
        } else {
            uint64_t sz = 1 + rng_next(&seed) % (r & 1 ? 300 : 40000);
            uint64_t al = 1ull << (rng_next(&seed) % 13);
            uint64_t off = 0, taken = 0;
            NRT_STATUS st = hbm_alloc_take(&a, sz, al, &off, &taken);
            if (st == NRT_SUCCESS) {
                assert_int_equal(off % (al < G ? G : al), 0);
                assert_int_equal(taken, hbm_alloc_round(sz));
                assert_true(off + taken <= size);
                shadow_mark(shadow, off, taken, 1);
                live[nlive++] = (struct taken_range){off, taken};
                used += taken;
                out[(*nout)++] = off;
            } else {
                assert_int_equal(st, NRT_RESOURCE);
                /* Exhaustion is honest: nothing that large is free. */
                if (al <= G)
                    assert_true(hbm_alloc_largest_free(&a) < hbm_alloc_round(sz));
                out[(*nout)++] = UINT64_MAX;
            }
        }
        assert_true(hbm_alloc_sane(&a));
        assert_int_equal(hbm_alloc_used(&a), used);
    }
    while (nlive > 0) {
        nlive--;
        hbm_alloc_give(&a, live[nlive].off, live[nlive].len);
    }
    assert_int_equal(hbm_alloc_used(&a), 0);
    assert_int_equal(a.nfree, 1);
    assert_true(hbm_alloc_sane(&a));
    free(live);
    free(shadow);
    hbm_alloc_fini(&a);
}

static void test_random_sequences(void **state)
{
    (void)state;
    enum { STEPS = 4000 };
    uint64_t *offs = calloc(STEPS, sizeof *offs);
    assert_non_null(offs);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        size_t n;
        random_run(seed * 0x9e3779b97f4a7c15ull, STEPS, offs, &n);
    }
    free(offs);
}

static void test_deterministic(void **state)
{
    (void)state;
    enum { STEPS = 3000 };
    uint64_t *a = calloc(STEPS, sizeof *a), *b = calloc(STEPS, sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    size_t na, nb;
    random_run(42, STEPS, a, &na);
    random_run(42, STEPS, b, &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    free(a);
    free(b);
}

/* hbm_alloc_sane notices a broken free list. */
static void test_sane_detects(void **state)
{
    (void)state;
    struct hbm_alloc a;
    assert_int_equal(hbm_alloc_init(&a, 8 * G), NRT_SUCCESS);
    a.used = G; /* used + free != size */
    assert_false(hbm_alloc_sane(&a));
    a.used = 0;
    assert_true(hbm_alloc_sane(&a));
    hbm_alloc_fini(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round),
        cmocka_unit_test(test_init_sizes),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_alignment),
        cmocka_unit_test(test_exhaustion),
        cmocka_unit_test(test_merging),
        cmocka_unit_test(test_many_fragments),
        cmocka_unit_test(test_random_sequences),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_sane_detects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
