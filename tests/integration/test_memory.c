/*
 * test_memory.c: integration tests of device memory through the public
 * ABI: per-VNC accounting (nrt_get_vnc_memory_stats) as tensors, slices and
 * attached buffers come and go; filling an HBM stack with multi-GiB tensors
 * (never touched, the emulated HBM is sparse) until NRT_RESOURCE; VNCs
 * that share a stack (LNC=1 on trn2: a half each) and VNCs that do not.
 */
#include "it_common.h"

/* Bytes used on local VNC vnc (asserting the call works). */
static size_t used(uint32_t vnc)
{
    nrt_vnc_memory_stats_t st;
    size_t n = 0;
    assert_int_equal(nrt_get_vnc_memory_stats(vnc, &st, sizeof st, &n), NRT_SUCCESS);
    assert_int_equal(n, sizeof st);
    return st.bytes_used;
}

static size_t limit(uint32_t vnc)
{
    nrt_vnc_memory_stats_t st;
    size_t n = 0;
    assert_int_equal(nrt_get_vnc_memory_stats(vnc, &st, sizeof st, &n), NRT_SUCCESS);
    return st.bytes_limit;
}

static void test_stats_accounting(void **state)
{
    (void)state;
    for (uint32_t v = 0; v < 64; v++)
        assert_int_equal(used(v), 0);
    assert_int_equal(limit(0), 24 * IT_GIB);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1000, "a");
    size_t ua = used(0);
    assert_true(ua >= 1000 && ua < 2000);
    nrt_tensor_t *b = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1 << 20, "b");
    assert_int_equal(used(0), ua + (1 << 20));
    /* Other VNCs are not charged; host and virtual tensors charge nobody. */
    assert_int_equal(used(1), 0);
    nrt_tensor_t *h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, 0, 4096, "h");
    nrt_tensor_t *v = it_tensor(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 4096, "v");
    assert_int_equal(used(0), ua + (1 << 20));
    nrt_tensor_t *c = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 63, 64, "c");
    assert_int_equal(used(63), 64);
    /* Slices share their source's storage: no charge, and the storage stays
     * charged until its last user is freed. */
    nrt_tensor_t *s = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(b, 4096, 4096, "s", &s), NRT_SUCCESS);
    assert_int_equal(used(0), ua + (1 << 20));
    nrt_tensor_free(&b);
    assert_int_equal(used(0), ua + (1 << 20));
    nrt_tensor_free(&s);
    assert_int_equal(used(0), ua);
    nrt_tensor_free(&a);
    assert_int_equal(used(0), 0);
    nrt_tensor_free(&h);
    nrt_tensor_free(&v);
    nrt_tensor_free(&c);
    assert_int_equal(used(63), 0);
    /* Tensors left at close are given back: the next instance starts at 0. */
    (void)it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 5, 1 << 20, "left");
    assert_int_equal(used(5), 1 << 20);
    nrt_close();
    it_init(NULL, NULL, NULL, NULL);
    assert_int_equal(used(5), 0);
}

static void test_stats_bad(void **state)
{
    (void)state;
    nrt_vnc_memory_stats_t st;
    size_t n = 99;
    assert_int_equal(nrt_get_vnc_memory_stats(64, &st, sizeof st, &n), NRT_INVALID);
    assert_int_equal(nrt_get_vnc_memory_stats(UINT32_MAX, &st, sizeof st, &n), NRT_INVALID);
    assert_int_equal(nrt_get_vnc_memory_stats(0x80000000u, &st, sizeof st, &n), NRT_INVALID);
    assert_int_equal(nrt_get_vnc_memory_stats(0, NULL, sizeof st, &n), NRT_INVALID);
    assert_int_equal(nrt_get_vnc_memory_stats(0, &st, sizeof st, NULL), NRT_INVALID);
    assert_int_equal(nrt_get_vnc_memory_stats(0, &st, 0, &n), NRT_INVALID);
    assert_int_equal(n, 99);
    /* An older, smaller struct receives its prefix; a newer, larger one
     * learns how much was filled. */
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 640, "t");
    size_t small[2] = {12345, 12345};
    assert_int_equal(nrt_get_vnc_memory_stats(0, (nrt_vnc_memory_stats_t *)small, sizeof(size_t),
                                              &n), NRT_SUCCESS);
    assert_int_equal(n, sizeof(size_t));
    assert_int_equal(small[0], 640);
    assert_int_equal(small[1], 12345);
    size_t big[4] = {1, 1, 1, 1};
    assert_int_equal(nrt_get_vnc_memory_stats(0, (nrt_vnc_memory_stats_t *)big, sizeof big, &n),
                     NRT_SUCCESS);
    assert_int_equal(n, sizeof(nrt_vnc_memory_stats_t));
    assert_int_equal(big[0], 640);
    assert_int_equal(big[2], 1);
    nrt_tensor_free(&t);
}

/* Stats are by local VNC: with visible cores 8-11, local 0 is global 8. */
static void test_stats_visible(void **state)
{
    (void)state;
    nrt_close();
    it_init("trn2.48xlarge", NULL, "8-11", NULL);
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 3, 4096, "t");
    assert_int_equal(used(3), 4096);
    assert_int_equal(used(0), 0);
    nrt_vnc_memory_stats_t st;
    size_t n;
    assert_int_equal(nrt_get_vnc_memory_stats(4, &st, sizeof st, &n), NRT_INVALID);
    nrt_tensor_free(&t);
}

/* Fill VNC 0's stack on trn1.2xlarge (two stacks of 16 GiB). */
static void test_hbm_full_trn1(void **state)
{
    (void)state;
    const size_t chunk = 4 * IT_GIB;
    nrt_tensor_t *big[4];
    assert_int_equal(limit(0), 16 * IT_GIB);
    for (int i = 0; i < 4; i++)
        big[i] = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, chunk, "4GiB");
    assert_int_equal(used(0), 16 * IT_GIB);
    nrt_tensor_t *t = NULL;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1, "one more", &t),
                     NRT_RESOURCE);
    assert_null(t);
    /* The other VNC has its own stack. */
    nrt_tensor_t *other = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, chunk, "other");
    /* Host-side tensors do not come from HBM. */
    nrt_tensor_t *h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, 0, 4096, "host");
    nrt_tensor_free(&h);
    /* The far end of a huge untouched tensor is usable (sparse memory). */
    uint8_t w[64], r[64];
    it_pattern(w, sizeof w, 9);
    assert_int_equal(nrt_tensor_write(big[3], w, chunk - sizeof w, sizeof w), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(big[3], r, chunk - sizeof r, sizeof r), NRT_SUCCESS);
    assert_memory_equal(w, r, sizeof w);
    /* Freeing makes room again, exactly as much as was freed. */
    nrt_tensor_free(&big[1]);
    assert_int_equal(used(0), 12 * IT_GIB);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, chunk + 64, "too big",
                                         &t), NRT_RESOURCE);
    big[1] = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, chunk, "again");
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "x", &t),
                     NRT_RESOURCE);
    for (int i = 0; i < 4; i++)
        nrt_tensor_free(&big[i]);
    assert_int_equal(used(0), 0);
    /* One tensor the size of the whole stack fits; one byte more does not. */
    nrt_tensor_t *whole = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16 * IT_GIB, "whole");
    nrt_tensor_free(&whole);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16 * IT_GIB + 1, "over",
                                         &t), NRT_RESOURCE);
    /* Absurd sizes are out of resources too, never a crash. */
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, SIZE_MAX, "max", &t),
                     NRT_RESOURCE);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, SIZE_MAX - 63, "max", &t),
                     NRT_RESOURCE);
    assert_null(t);
    assert_int_equal(used(0), 0);
    nrt_tensor_free(&other);
}

/* trn2 at LNC=1: VNCs 0 and 1 share HBM stack 0 (24 GiB), each with a half
 * of its own (so that two processes never allocate the same bytes); VNC 2
 * uses stack 1. */
static void test_hbm_full_shared_stack(void **state)
{
    (void)state;
    nrt_close();
    it_init("trn2.48xlarge", "1", NULL, NULL);
    assert_int_equal(limit(0), 12 * IT_GIB);
    assert_int_equal(limit(1), 12 * IT_GIB);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 12 * IT_GIB, "a");
    nrt_tensor_t *b = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, 8 * IT_GIB, "b");
    assert_int_equal(used(0), 12 * IT_GIB);
    assert_int_equal(used(1), 8 * IT_GIB);
    nrt_tensor_t *t = NULL;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "x", &t), NRT_RESOURCE);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 4 * IT_GIB + 64, "x", &t),
                     NRT_RESOURCE);
    nrt_tensor_t *b2 = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, 4 * IT_GIB, "b2");
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "x", &t), NRT_RESOURCE);
    /* The halves are disjoint: VNC 1's half follows VNC 0's in stack 0. */
    nrt_tensor_device_allocation_info_t ia, ib;
    assert_int_equal(nrt_tensor_get_device_allocation_info(a, &ia), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_device_allocation_info(b, &ib), NRT_SUCCESS);
    assert_int_equal(ia.hbm_index, 0);
    assert_int_equal(ib.hbm_index, 0);
    assert_int_equal(ib.physical_address - ia.physical_address, 12 * IT_GIB);
    nrt_tensor_t *c = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 2, 12 * IT_GIB, "c");
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 2, 64, "x", &t), NRT_RESOURCE);
    /* The next chip is untouched. */
    nrt_tensor_t *d = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 8, 12 * IT_GIB, "d");
    nrt_tensor_free(&b);
    nrt_tensor_free(&b2);
    assert_int_equal(used(1), 0);
    t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, 12 * IT_GIB, "t");
    assert_int_equal(used(1), 12 * IT_GIB);
    nrt_tensor_free(&a);
    nrt_tensor_free(&c);
    nrt_tensor_free(&d);
    nrt_tensor_free(&t);
}

/* trn2 at LNC=2: every VNC has a stack of its own; fill them all on one
 * chip, and a whole trn2u chip row, without touching a page. */
static void test_hbm_full_lnc2(void **state)
{
    (void)state;
    nrt_tensor_t *t[8];
    for (int v = 0; v < 8; v++) {
        t[v] = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, v, 24 * IT_GIB, "full");
        assert_int_equal(used((uint32_t)v), 24 * IT_GIB);
    }
    nrt_tensor_t *x = NULL;
    for (int v = 0; v < 8; v++)
        assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, v, 64, "x", &x),
                         NRT_RESOURCE);
    /* Same offset in each stack: stacks are separate. */
    nrt_tensor_device_allocation_info_t i0, i1;
    assert_int_equal(nrt_tensor_get_device_allocation_info(t[0], &i0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_device_allocation_info(t[1], &i1), NRT_SUCCESS);
    assert_int_equal(i0.hbm_index, 0);
    assert_int_equal(i1.hbm_index, 1);
    assert_int_equal(i1.physical_address - i0.physical_address, 24 * IT_GIB);
    assert_int_equal(i0.size, 24 * IT_GIB);
    for (int v = 0; v < 8; v++)
        nrt_tensor_free(&t[v]);
    nrt_close();
    it_init("trn2u.48xlarge", NULL, NULL, NULL);
    nrt_tensor_t *u[4];
    for (int c = 0; c < 4; c++)
        u[c] = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 63 - c, 24 * IT_GIB, "u");
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 63, 64, "x", &x),
                     NRT_RESOURCE);
    for (int c = 0; c < 4; c++)
        nrt_tensor_free(&u[c]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stats_accounting, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_stats_bad, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_stats_visible, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_hbm_full_trn1, it_setup_trn1, it_teardown),
        cmocka_unit_test_setup_teardown(test_hbm_full_shared_stack, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_hbm_full_lnc2, it_setup_default, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
