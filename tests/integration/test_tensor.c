/*
 * test_tensor.c: integration tests of the tensor API through the public
 * ABI: allocation at every placement, empty tensors and attached buffers,
 * slices (of slices, outliving their source), read / write / copy / memset,
 * batched reads and writes, queries (size, va, device allocation info,
 * HBM mappings), output completion, and every bad input: NULL pointers,
 * zero sizes, out-of-range and overflowing offsets, freed tensors. A
 * rejected call must return NRT_INVALID and leave every byte as it was.
 */
#include "it_common.h"

#define N 4096

/* A device tensor of N bytes on VNC vnc filled with pattern seed. */
static nrt_tensor_t *filled(nrt_tensor_placement_t where, int vnc, uint32_t seed, uint8_t *copy)
{
    nrt_tensor_t *t = it_tensor(where, vnc, N, "filled");
    uint8_t buf[N];
    it_pattern(buf, N, seed);
    assert_int_equal(nrt_tensor_write(t, buf, 0, N), NRT_SUCCESS);
    if (copy != NULL)
        memcpy(copy, buf, N);
    return t;
}

/* ---- allocation ------------------------------------------------------- */

static void test_allocate_placements(void **state)
{
    (void)state;
    uint32_t vis = 0;
    assert_int_equal(nrt_get_visible_vnc_count(&vis), NRT_SUCCESS);
    assert_int_equal(vis, 64);
    for (int vnc = 0; vnc < (int)vis; vnc += 7) {
        nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 1000, "dev");
        assert_int_equal(nrt_tensor_get_size(t), 1000);
        assert_non_null(nrt_tensor_get_va(t));
        nrt_tensor_free(&t);
        assert_null(t);
    }
    nrt_tensor_t *h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, 0, 4u << 20, "host-4MB");
    assert_int_equal(nrt_tensor_get_size(h), 4u << 20);
    nrt_tensor_free(&h);
    h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, -1, 1, "host-1");
    nrt_tensor_free(&h);
    nrt_tensor_t *v = it_tensor(NRT_TENSOR_PLACEMENT_VIRTUAL, 3, 64u << 20, "virt-64MB");
    assert_int_equal(nrt_tensor_get_size(v), 64u << 20);
    /* Fresh host-side tensors read as zeros. */
    uint8_t z[256], zero[256] = {0};
    assert_int_equal(nrt_tensor_read(v, z, (64u << 20) - sizeof z, sizeof z), NRT_SUCCESS);
    assert_memory_equal(z, zero, sizeof z);
    nrt_tensor_free(&v);
    v = it_tensor(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 10, NULL);
    nrt_tensor_free(&v);
    /* Names are optional and may be long. */
    char longname[5000];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    nrt_tensor_t *l = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, longname);
    nrt_tensor_free(&l);
    l = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8, NULL);
    nrt_tensor_free(&l);
}

static void test_allocate_bad(void **state)
{
    (void)state;
    nrt_tensor_t *const sentinel = (nrt_tensor_t *)(uintptr_t)0x1234;
    nrt_tensor_t *t = sentinel;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "x", NULL),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 0, "zero", &t),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, 0, 0, "zero", &t), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 0, "zero", &t),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, 0, (4u << 20) + 1, "big", &t),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, 0, SIZE_MAX, "big", &t),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate((nrt_tensor_placement_t)3, 0, 64, "p", &t), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate((nrt_tensor_placement_t)-1, 0, 64, "p", &t), NRT_INVALID);
    /* Device tensors need a visible VNC. */
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, -1, 64, "v", &t), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, -2, 64, "v", &t), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 64, 64, "v", &t), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, INT32_MAX, 64, "v", &t),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, INT32_MIN, 64, "v", &t),
                     NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 64, 64, "v", &t), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate_empty("e", NULL), NRT_INVALID);
    /* A failed allocation leaves the output alone. */
    assert_ptr_equal(t, sentinel);
}

/* ---- read / write ----------------------------------------------------- */

static void roundtrip(nrt_tensor_placement_t where, int vnc)
{
    uint8_t want[N];
    nrt_tensor_t *t = filled(where, vnc, 11, want);
    it_expect_bytes(t, want, N);
    /* Partial writes at odd offsets. */
    uint8_t part[100];
    it_pattern(part, sizeof part, 99);
    assert_int_equal(nrt_tensor_write(t, part, 1, sizeof part), NRT_SUCCESS);
    memcpy(want + 1, part, sizeof part);
    assert_int_equal(nrt_tensor_write(t, part, N - sizeof part, sizeof part), NRT_SUCCESS);
    memcpy(want + N - sizeof part, part, sizeof part);
    it_expect_bytes(t, want, N);
    uint8_t got[7];
    assert_int_equal(nrt_tensor_read(t, got, 1234, sizeof got), NRT_SUCCESS);
    assert_memory_equal(got, want + 1234, sizeof got);
    /* The last byte alone. */
    assert_int_equal(nrt_tensor_read(t, got, N - 1, 1), NRT_SUCCESS);
    assert_int_equal(got[0], want[N - 1]);
    /* Zero bytes anywhere inside, or at the very end. */
    assert_int_equal(nrt_tensor_read(t, got, 0, 0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(t, got, N, 0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_write(t, got, N, 0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(t, NULL, 5, 0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_write(t, NULL, 5, 0), NRT_SUCCESS);
    it_expect_bytes(t, want, N);
    /* The va shows the same bytes. */
    uint8_t *va = nrt_tensor_get_va(t);
    assert_non_null(va);
    assert_memory_equal(va, want, N);
    nrt_tensor_free(&t);
}

static void test_read_write(void **state)
{
    (void)state;
    roundtrip(NRT_TENSOR_PLACEMENT_DEVICE, 0);
    roundtrip(NRT_TENSOR_PLACEMENT_DEVICE, 63);
    roundtrip(NRT_TENSOR_PLACEMENT_HOST, 0);
    roundtrip(NRT_TENSOR_PLACEMENT_VIRTUAL, 5);
}

/* Offsets and sizes that do not fit a tensor of N bytes. */
static const struct {
    size_t off;   /* offset */
    size_t size;  /* size */
} bad_ranges[] = {
    {0, N + 1}, {1, N}, {N, 1}, {N + 1, 0}, {N - 1, 2}, {SIZE_MAX, 1}, {SIZE_MAX, 0},
    {1, SIZE_MAX}, {0, SIZE_MAX}, {SIZE_MAX, SIZE_MAX}, {SIZE_MAX - 10, 20}, {20, SIZE_MAX - 10},
    {(size_t)1 << 63, (size_t)1 << 63}, {N / 2, SIZE_MAX - N / 2 + 1},
};
#define NBAD (sizeof bad_ranges / sizeof bad_ranges[0])

static void test_bounds(void **state)
{
    (void)state;
    uint8_t want[N];
    nrt_tensor_t *t = filled(NRT_TENSOR_PLACEMENT_DEVICE, 0, 3, want);
    nrt_tensor_t *u = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, N, "u");
    uint8_t uwant[N];
    it_pattern(uwant, N, 4);
    assert_int_equal(nrt_tensor_write(u, uwant, 0, N), NRT_SUCCESS);
    /* Big enough to be a legal source for any size the tensor could take. */
    uint8_t *buf = malloc(2 * N);
    assert_non_null(buf);
    for (size_t i = 0; i < NBAD; i++) {
        size_t off = bad_ranges[i].off, sz = bad_ranges[i].size;
        memset(buf, 0xee, 2 * N);
        assert_int_equal(nrt_tensor_read(t, buf, off, sz), NRT_INVALID);
        for (size_t k = 0; k < 2 * N; k++)
            assert_int_equal(buf[k], 0xee);
        assert_int_equal(nrt_tensor_write(t, buf, off, sz), NRT_INVALID);
        assert_int_equal(nrt_tensor_memset(t, off, 0x77, sz), NRT_INVALID);
        assert_int_equal(nrt_tensor_copy(t, off, u, 0, sz), NRT_INVALID);
        assert_int_equal(nrt_tensor_copy(u, 0, t, off, sz), NRT_INVALID);
        assert_int_equal(nrt_tensor_copy(t, 0, u, off, sz), NRT_INVALID);
        assert_int_equal(nrt_tensor_copy(u, off, t, 0, sz), NRT_INVALID);
        nrt_tensor_t *s = NULL;
        if (sz != 0)
            assert_int_equal(nrt_tensor_allocate_slice(t, off, sz, "s", &s), NRT_INVALID);
        assert_null(s);
        nrt_tensor_batch_op_t op = {off, sz, buf};
        nrt_tensor_batch_t b = {t, &op, 1};
        assert_int_equal(nrt_tensor_write_batch(&b, 1, false), NRT_INVALID);
        assert_int_equal(nrt_tensor_read_batch(&b, 1, false), NRT_INVALID);
        for (size_t k = 0; k < 2 * N; k++)
            assert_int_equal(buf[k], 0xee);
    }
    /* memset's offset is 64-bit on every platform. */
    assert_int_equal(nrt_tensor_memset(t, UINT64_MAX, 0, 1), NRT_INVALID);
    it_expect_bytes(t, want, N);
    it_expect_bytes(u, uwant, N);
    free(buf);
    nrt_tensor_free(&t);
    nrt_tensor_free(&u);
}

static void test_null_arguments(void **state)
{
    (void)state;
    uint8_t want[N], buf[16];
    nrt_tensor_t *t = filled(NRT_TENSOR_PLACEMENT_DEVICE, 0, 5, want);
    assert_int_equal(nrt_tensor_read(NULL, buf, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_read(t, NULL, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_write(NULL, buf, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_write(t, NULL, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_copy(NULL, 0, t, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_copy(t, 0, NULL, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_memset(NULL, 0, 0, 1), NRT_INVALID);
    nrt_tensor_t *s = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(NULL, 0, 1, "s", &s), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate_slice(t, 0, 1, "s", NULL), NRT_INVALID);
    assert_int_equal(nrt_tensor_attach_buffer(NULL, buf, sizeof buf), NRT_INVALID);
    nrt_tensor_device_allocation_info_t info;
    assert_int_equal(nrt_tensor_get_device_allocation_info(NULL, &info), NRT_INVALID);
    assert_int_equal(nrt_tensor_get_device_allocation_info(t, NULL), NRT_INVALID);
    assert_int_equal(nrt_tensor_get_size(NULL), 0);
    assert_null(nrt_tensor_get_va(NULL));
    assert_int_equal(nrt_tensor_check_output_completion(NULL, 0, 0), NRT_INVALID);
    assert_int_equal(nrt_tensor_reset_output_completion(NULL), NRT_INVALID);
    nrt_tensor_free(NULL);
    nrt_tensor_t *nul = NULL;
    nrt_tensor_free(&nul);
    assert_null(nul);
    it_expect_bytes(t, want, N);
    nrt_tensor_free(&t);
}

/* Pointers that are not live tensors: freed ones, other objects. */
static void test_not_a_tensor(void **state)
{
    (void)state;
    uint8_t buf[64] = {0};
    /* Allocated first: a tensor allocated after the free below could reuse
     * the freed tensor's address and make the stale pointer live again. */
    nrt_tensor_t *live = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "live");
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "gone");
    nrt_tensor_t *stale = t;
    nrt_tensor_free(&t);
    assert_null(t);
    nrt_tensor_t *set_as_tensor = NULL;
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    set_as_tensor = (nrt_tensor_t *)set;
    uint8_t junk[256];
    memset(junk, 0x42, sizeof junk);
    nrt_tensor_t *const bad[] = {stale, set_as_tensor, (nrt_tensor_t *)junk};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        nrt_tensor_t *b = bad[i], *s = NULL;
        assert_int_equal(nrt_tensor_read(b, buf, 0, 1), NRT_INVALID);
        assert_int_equal(nrt_tensor_write(b, buf, 0, 1), NRT_INVALID);
        assert_int_equal(nrt_tensor_memset(b, 0, 1, 1), NRT_INVALID);
        assert_int_equal(nrt_tensor_copy(b, 0, live, 0, 1), NRT_INVALID);
        assert_int_equal(nrt_tensor_copy(live, 0, b, 0, 1), NRT_INVALID);
        assert_int_equal(nrt_tensor_allocate_slice(b, 0, 1, "s", &s), NRT_INVALID);
        assert_null(s);
        assert_int_equal(nrt_tensor_attach_buffer(b, buf, sizeof buf), NRT_INVALID);
        nrt_tensor_device_allocation_info_t info;
        assert_int_equal(nrt_tensor_get_device_allocation_info(b, &info), NRT_INVALID);
        assert_int_equal(nrt_tensor_get_size(b), 0);
        assert_null(nrt_tensor_get_va(b));
        assert_int_equal(nrt_tensor_check_output_completion(b, 0, 0), NRT_INVALID);
        assert_int_equal(nrt_tensor_reset_output_completion(b), NRT_INVALID);
        nrt_tensor_batch_op_t op = {0, 1, buf};
        nrt_tensor_batch_t bb = {b, &op, 1};
        assert_int_equal(nrt_tensor_read_batch(&bb, 1, false), NRT_INVALID);
        /* Freeing a non-tensor does nothing but clear the pointer. */
        nrt_tensor_free(&b);
        assert_null(b);
    }
    for (size_t i = 0; i < sizeof junk; i++)
        assert_int_equal(junk[i], 0x42);
    /* The set survived being passed as a tensor. */
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "live", live), NRT_SUCCESS);
    nrt_destroy_tensor_set(&set);
    nrt_tensor_free(&live);
}

/* ---- memset ----------------------------------------------------------- */

static void test_memset(void **state)
{
    (void)state;
    nrt_tensor_placement_t where[] = {NRT_TENSOR_PLACEMENT_DEVICE, NRT_TENSOR_PLACEMENT_HOST,
                                      NRT_TENSOR_PLACEMENT_VIRTUAL};
    for (size_t w = 0; w < 3; w++) {
        uint8_t want[N];
        nrt_tensor_t *t = filled(where[w], 1, 8, want);
        assert_int_equal(nrt_tensor_memset(t, 10, 0xab, 100), NRT_SUCCESS);
        memset(want + 10, 0xab, 100);
        /* Only the low byte of the value counts, as with memset(3). */
        assert_int_equal(nrt_tensor_memset(t, N - 5, 0x1cd, 5), NRT_SUCCESS);
        memset(want + N - 5, 0xcd, 5);
        assert_int_equal(nrt_tensor_memset(t, 200, -1, 3), NRT_SUCCESS);
        memset(want + 200, 0xff, 3);
        assert_int_equal(nrt_tensor_memset(t, N, 0x11, 0), NRT_SUCCESS);
        it_expect_bytes(t, want, N);
        assert_int_equal(nrt_tensor_memset(t, 0, 0, N), NRT_SUCCESS);
        memset(want, 0, N);
        it_expect_bytes(t, want, N);
        nrt_tensor_free(&t);
    }
}

/* ---- copy ------------------------------------------------------------- */

static void test_copy(void **state)
{
    (void)state;
    uint8_t a_want[N], b_want[N];
    nrt_tensor_t *a = filled(NRT_TENSOR_PLACEMENT_DEVICE, 2, 21, a_want);
    nrt_tensor_t *b = filled(NRT_TENSOR_PLACEMENT_DEVICE, 2, 22, b_want);
    /* Device to device on one VNC. */
    assert_int_equal(nrt_tensor_copy(a, 100, b, 3000, 500), NRT_SUCCESS);
    memcpy(b_want + 3000, a_want + 100, 500);
    it_expect_bytes(b, b_want, N);
    it_expect_bytes(a, a_want, N);
    /* Zero bytes at the ends. */
    assert_int_equal(nrt_tensor_copy(a, N, b, N, 0), NRT_SUCCESS);
    /* Device and host in both directions, host to virtual. */
    nrt_tensor_t *h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, -1, N, "h");
    nrt_tensor_t *v = it_tensor(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, N, "v");
    assert_int_equal(nrt_tensor_copy(a, 0, h, 0, N), NRT_SUCCESS);
    it_expect_bytes(h, a_want, N);
    assert_int_equal(nrt_tensor_copy(h, 0, v, 0, N), NRT_SUCCESS);
    it_expect_bytes(v, a_want, N);
    assert_int_equal(nrt_tensor_copy(b, 0, v, 0, N), NRT_SUCCESS);
    it_expect_bytes(v, b_want, N);
    /* Host side to a device tensor on another VNC. */
    nrt_tensor_t *c = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 9, N, "c");
    assert_int_equal(nrt_tensor_copy(v, 0, c, 0, N), NRT_SUCCESS);
    it_expect_bytes(c, b_want, N);
    assert_int_equal(nrt_tensor_copy(c, 0, h, 0, N), NRT_SUCCESS);
    it_expect_bytes(h, b_want, N);
    /* Device to device across VNCs is refused and moves nothing. */
    uint8_t c_want[N];
    it_pattern(c_want, N, 33);
    assert_int_equal(nrt_tensor_write(c, c_want, 0, N), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_copy(a, 0, c, 0, N), NRT_INVALID);
    assert_int_equal(nrt_tensor_copy(c, 0, a, 0, 1), NRT_INVALID);
    it_expect_bytes(c, c_want, N);
    it_expect_bytes(a, a_want, N);
    /* Within one tensor, overlapping ranges copy as if through a buffer. */
    assert_int_equal(nrt_tensor_copy(a, 0, a, 10, 1000), NRT_SUCCESS);
    memmove(a_want + 10, a_want, 1000);
    it_expect_bytes(a, a_want, N);
    assert_int_equal(nrt_tensor_copy(a, 10, a, 0, 1000), NRT_SUCCESS);
    memmove(a_want, a_want + 10, 1000);
    it_expect_bytes(a, a_want, N);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    nrt_tensor_free(&c);
    nrt_tensor_free(&h);
    nrt_tensor_free(&v);
}

/* With LNC=1 two VNCs share one HBM stack; a copy between them is still a
 * copy between NeuronCores and is refused. */
static void test_copy_lnc1(void **state)
{
    (void)state;
    nrt_close();
    it_init("trn2.48xlarge", "1", NULL, NULL);
    uint8_t w[N];
    nrt_tensor_t *a = filled(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1, w);
    nrt_tensor_t *b = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, N, "b");
    nrt_tensor_t *c = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, N, "c");
    assert_int_equal(nrt_tensor_copy(a, 0, b, 0, N), NRT_INVALID);
    assert_int_equal(nrt_tensor_copy(a, 0, c, 0, N), NRT_SUCCESS);
    it_expect_bytes(c, w, N);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
    nrt_tensor_free(&c);
}

/* ---- empty tensors and attached buffers ------------------------------- */

static void test_empty_and_attach(void **state)
{
    (void)state;
    nrt_tensor_t *e = NULL;
    assert_int_equal(nrt_tensor_allocate_empty("empty", &e), NRT_SUCCESS);
    assert_non_null(e);
    assert_int_equal(nrt_tensor_get_size(e), 0);
    assert_null(nrt_tensor_get_va(e));
    uint8_t b1[N];
    assert_int_equal(nrt_tensor_read(e, b1, 0, 0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(e, b1, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_write(e, b1, 0, 1), NRT_INVALID);
    assert_int_equal(nrt_tensor_memset(e, 0, 0, 1), NRT_INVALID);
    nrt_tensor_t *s = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(e, 0, 1, "s", &s), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate_slice(e, 0, 0, "s", &s), NRT_INVALID);
    nrt_tensor_device_allocation_info_t info;
    assert_int_equal(nrt_tensor_get_device_allocation_info(e, &info), NRT_INVALID);
    /* Bad attachments leave the tensor empty. */
    assert_int_equal(nrt_tensor_attach_buffer(e, NULL, 16), NRT_INVALID);
    assert_int_equal(nrt_tensor_attach_buffer(e, b1, 0), NRT_INVALID);
    assert_int_equal(nrt_tensor_get_size(e), 0);
    /* Attach: reads and writes go straight to the caller's buffer. */
    it_pattern(b1, N, 1);
    assert_int_equal(nrt_tensor_attach_buffer(e, b1, N), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_size(e), N);
    assert_ptr_equal(nrt_tensor_get_va(e), b1);
    it_expect_bytes(e, b1, N);
    assert_int_equal(nrt_tensor_memset(e, 0, 0x5c, 8), NRT_SUCCESS);
    for (int i = 0; i < 8; i++)
        assert_int_equal(b1[i], 0x5c);
    assert_int_equal(nrt_tensor_get_device_allocation_info(e, &info), NRT_INVALID);
    /* Attach again: the first buffer is let go, not freed (it is on the stack). */
    uint8_t b2[100];
    it_pattern(b2, sizeof b2, 2);
    uint8_t b1_copy[N];
    memcpy(b1_copy, b1, N);
    assert_int_equal(nrt_tensor_attach_buffer(e, b2, sizeof b2), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_size(e), sizeof b2);
    assert_int_equal(nrt_tensor_write(e, b1, 0, sizeof b2), NRT_SUCCESS);
    assert_memory_equal(b2, b1, sizeof b2);
    assert_int_equal(nrt_tensor_write(e, b1, 0, sizeof b2 + 1), NRT_INVALID);
    assert_memory_equal(b1, b1_copy, N);
    /* Copies in and out of an attached buffer, to and from device. */
    nrt_tensor_t *d = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 4, sizeof b2, "d");
    assert_int_equal(nrt_tensor_copy(e, 0, d, 0, sizeof b2), NRT_SUCCESS);
    it_expect_bytes(d, b2, sizeof b2);
    /* Slices of an attached buffer view it too. */
    assert_int_equal(nrt_tensor_allocate_slice(e, 10, 20, "s", &s), NRT_SUCCESS);
    assert_ptr_equal(nrt_tensor_get_va(s), b2 + 10);
    nrt_tensor_free(&s);
    nrt_tensor_free(&e);
    assert_null(e);
    /* The buffers still belong to the test and hold their bytes. */
    assert_memory_equal(b2, b1, sizeof b2);
    nrt_tensor_free(&d);
}

/* Attaching to a device tensor gives its HBM back and makes it virtual. */
static void test_attach_to_device(void **state)
{
    (void)state;
    nrt_vnc_memory_stats_t st;
    size_t n;
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 6, 1 << 20, "dev");
    assert_int_equal(nrt_get_vnc_memory_stats(6, &st, sizeof st, &n), NRT_SUCCESS);
    assert_int_equal(st.bytes_used, 1 << 20);
    uint8_t buf[256];
    it_pattern(buf, sizeof buf, 6);
    assert_int_equal(nrt_tensor_attach_buffer(t, buf, sizeof buf), NRT_SUCCESS);
    assert_int_equal(nrt_get_vnc_memory_stats(6, &st, sizeof st, &n), NRT_SUCCESS);
    assert_int_equal(st.bytes_used, 0);
    nrt_tensor_device_allocation_info_t info;
    assert_int_equal(nrt_tensor_get_device_allocation_info(t, &info), NRT_INVALID);
    it_expect_bytes(t, buf, sizeof buf);
    /* Now virtual: copies to a device tensor on any VNC are allowed. */
    nrt_tensor_t *d = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 7, sizeof buf, "d7");
    assert_int_equal(nrt_tensor_copy(t, 0, d, 0, sizeof buf), NRT_SUCCESS);
    it_expect_bytes(d, buf, sizeof buf);
    nrt_tensor_free(&t);
    nrt_tensor_free(&d);
}

/* ---- slices ----------------------------------------------------------- */

static void test_slices(void **state)
{
    (void)state;
    uint8_t want[N];
    nrt_tensor_t *t = filled(NRT_TENSOR_PLACEMENT_DEVICE, 3, 40, want);
    nrt_tensor_t *s = NULL, *ss = NULL, *sss = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(t, 1000, 2000, "s", &s), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_size(s), 2000);
    assert_ptr_equal(nrt_tensor_get_va(s), (uint8_t *)nrt_tensor_get_va(t) + 1000);
    it_expect_bytes(s, want + 1000, 2000);
    /* Slice of a slice: offsets add up. */
    assert_int_equal(nrt_tensor_allocate_slice(s, 500, 1000, NULL, &ss), NRT_SUCCESS);
    assert_ptr_equal(nrt_tensor_get_va(ss), (uint8_t *)nrt_tensor_get_va(t) + 1500);
    it_expect_bytes(ss, want + 1500, 1000);
    assert_int_equal(nrt_tensor_allocate_slice(ss, 999, 1, "last", &sss), NRT_SUCCESS);
    it_expect_bytes(sss, want + 2499, 1);
    /* Bounds are those of the slice, not of the storage. */
    nrt_tensor_t *bad = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(ss, 999, 2, "b", &bad), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate_slice(ss, 1000, 1, "b", &bad), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate_slice(ss, 0, 0, "b", &bad), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate_slice(t, 0, N + 1, "b", &bad), NRT_INVALID);
    assert_null(bad);
    uint8_t x[2] = {1, 2};
    assert_int_equal(nrt_tensor_write(ss, x, 999, 2), NRT_INVALID);
    assert_int_equal(nrt_tensor_read(sss, x, 0, 2), NRT_INVALID);
    it_expect_bytes(t, want, N);
    /* Writes through a slice land in the source, and the other way round. */
    uint8_t p[300];
    it_pattern(p, sizeof p, 41);
    assert_int_equal(nrt_tensor_write(ss, p, 100, sizeof p), NRT_SUCCESS);
    memcpy(want + 1600, p, sizeof p);
    it_expect_bytes(t, want, N);
    assert_int_equal(nrt_tensor_memset(t, 2000, 0x3c, 10), NRT_SUCCESS);
    memset(want + 2000, 0x3c, 10);
    it_expect_bytes(s, want + 1000, 2000);
    /* A whole-size slice is allowed. */
    nrt_tensor_t *whole = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(t, 0, N, "whole", &whole), NRT_SUCCESS);
    it_expect_bytes(whole, want, N);
    /* Copies between slices of one device tensor (same VNC). */
    assert_int_equal(nrt_tensor_copy(ss, 0, whole, 0, 100), NRT_SUCCESS);
    memmove(want, want + 1500, 100);
    it_expect_bytes(t, want, N);
    /* The slice outlives its source: storage is reference counted. */
    nrt_tensor_free(&t);
    assert_null(t);
    it_expect_bytes(s, want + 1000, 2000);
    it_expect_bytes(ss, want + 1500, 1000);
    nrt_tensor_free(&s);
    it_expect_bytes(ss, want + 1500, 1000);
    assert_int_equal(nrt_tensor_memset(ss, 0, 0x99, 1000), NRT_SUCCESS);
    memset(want + 1500, 0x99, 1000);
    it_expect_bytes(whole, want, N);
    it_expect_bytes(sss, want + 2499, 1);
    nrt_tensor_free(&ss);
    nrt_tensor_free(&whole);
    it_expect_bytes(sss, want + 2499, 1);
    /* A slice of a slice whose sources are all gone still slices. */
    nrt_tensor_t *last = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(sss, 0, 1, "again", &last), NRT_SUCCESS);
    nrt_tensor_free(&sss);
    it_expect_bytes(last, want + 2499, 1);
    nrt_tensor_free(&last);
}

static void test_slices_host(void **state)
{
    (void)state;
    nrt_tensor_placement_t where[] = {NRT_TENSOR_PLACEMENT_HOST, NRT_TENSOR_PLACEMENT_VIRTUAL};
    for (size_t w = 0; w < 2; w++) {
        uint8_t want[N];
        nrt_tensor_t *t = filled(where[w], 0, 50, want);
        nrt_tensor_t *s = NULL;
        assert_int_equal(nrt_tensor_allocate_slice(t, N - 64, 64, "tail", &s), NRT_SUCCESS);
        nrt_tensor_free(&t);
        it_expect_bytes(s, want + N - 64, 64);
        nrt_tensor_device_allocation_info_t info;
        assert_int_equal(nrt_tensor_get_device_allocation_info(s, &info), NRT_INVALID);
        nrt_tensor_free(&s);
    }
}

/* ---- batches ---------------------------------------------------------- */

static void test_batches(void **state)
{
    (void)state;
    uint8_t aw[N], bw[N];
    nrt_tensor_t *a = filled(NRT_TENSOR_PLACEMENT_DEVICE, 0, 60, aw);
    nrt_tensor_t *b = filled(NRT_TENSOR_PLACEMENT_VIRTUAL, 1, 61, bw);
    uint8_t s1[100], s2[200], s3[50];
    it_pattern(s1, sizeof s1, 1);
    it_pattern(s2, sizeof s2, 2);
    it_pattern(s3, sizeof s3, 3);
    nrt_tensor_batch_op_t aops[] = {{0, sizeof s1, s1}, {N - sizeof s2, sizeof s2, s2},
                                    {500, 0, NULL}};
    nrt_tensor_batch_op_t bops[] = {{7, sizeof s3, s3}};
    nrt_tensor_batch_t bt[] = {{a, aops, 3}, {b, bops, 1}, {a, NULL, 0}};
    assert_int_equal(nrt_tensor_write_batch(bt, 3, false), NRT_SUCCESS);
    memcpy(aw, s1, sizeof s1);
    memcpy(aw + N - sizeof s2, s2, sizeof s2);
    memcpy(bw + 7, s3, sizeof s3);
    it_expect_bytes(a, aw, N);
    it_expect_bytes(b, bw, N);
    /* Read them back in one batch. */
    uint8_t r1[100], r2[200], r3[50];
    nrt_tensor_batch_op_t raops[] = {{0, sizeof r1, r1}, {N - sizeof r2, sizeof r2, r2}};
    nrt_tensor_batch_op_t rbops[] = {{7, sizeof r3, r3}};
    nrt_tensor_batch_t rb[] = {{a, raops, 2}, {b, rbops, 1}};
    assert_int_equal(nrt_tensor_read_batch(rb, 2, true), NRT_SUCCESS);
    assert_memory_equal(r1, s1, sizeof s1);
    assert_memory_equal(r2, s2, sizeof s2);
    assert_memory_equal(r3, s3, sizeof s3);
    /* Nothing to do. */
    assert_int_equal(nrt_tensor_write_batch(NULL, 0, false), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read_batch(bt, 0, false), NRT_SUCCESS);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
}

/* A bad entry anywhere in the batch: nothing at all is moved. */
static void test_batches_all_or_nothing(void **state)
{
    (void)state;
    uint8_t aw[N], bw[N];
    nrt_tensor_t *a = filled(NRT_TENSOR_PLACEMENT_DEVICE, 0, 70, aw);
    nrt_tensor_t *b = filled(NRT_TENSOR_PLACEMENT_DEVICE, 0, 71, bw);
    nrt_tensor_t *gone = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, N, "gone");
    nrt_tensor_t *stale = gone;
    nrt_tensor_free(&gone);
    uint8_t src[64], dst[64], dst2[64], dst3[64];
    memset(src, 0x11, sizeof src);
    nrt_tensor_batch_op_t good = {0, sizeof src, src};
    nrt_tensor_batch_op_t good_r = {0, sizeof dst, dst};
    nrt_tensor_batch_op_t good_r2 = {64, sizeof dst2, dst2};
    struct {
        nrt_tensor_batch_op_t op;     /* the second operation of the second batch */
        const nrt_tensor_t *tensor;   /* the second batch's tensor */
        uint32_t nops;                /* its op count */
        int ops_null;                 /* its ops pointer is NULL */
    } cases[] = {
        {{N - 10, 11, src}, NULL, 2, 0},          /* past the end */
        {{SIZE_MAX, 1, src}, NULL, 2, 0},         /* overflowing offset */
        {{1, UINT64_MAX, src}, NULL, 2, 0},       /* overflowing size */
        {{0, 8, NULL}, NULL, 2, 0},               /* NULL buffer */
        {{0, 8, src}, NULL, 2, 1},                /* NULL ops */
        {{0, 8, src}, (const nrt_tensor_t *)1, 2, 0}, /* stale tensor (set below) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nrt_tensor_batch_op_t wops[2] = {good, cases[i].op};
        nrt_tensor_batch_op_t rops[2] = {good_r2, cases[i].op};
        if (rops[1].buffer == src)
            rops[1].buffer = dst3;
        const nrt_tensor_t *second = cases[i].tensor ? stale : b;
        nrt_tensor_batch_t wb[3] = {{a, &good, 1},
                                    {second, cases[i].ops_null ? NULL : wops, cases[i].nops},
                                    {b, &good, 1}};
        assert_int_equal(nrt_tensor_write_batch(wb, 3, false), NRT_INVALID);
        it_expect_bytes(a, aw, N);
        it_expect_bytes(b, bw, N);
        memset(dst, 0xee, sizeof dst);
        memset(dst2, 0xee, sizeof dst2);
        memset(dst3, 0xee, sizeof dst3);
        nrt_tensor_batch_t rb[3] = {{a, &good_r, 1},
                                    {second, cases[i].ops_null ? NULL : rops, cases[i].nops},
                                    {b, &good_r2, 1}};
        assert_int_equal(nrt_tensor_read_batch(rb, 3, true), NRT_INVALID);
        for (size_t k = 0; k < sizeof dst; k++) {
            assert_int_equal(dst[k], 0xee);
            assert_int_equal(dst2[k], 0xee);
            assert_int_equal(dst3[k], 0xee);
        }
    }
    /* A NULL tensor in a batch, a NULL batch array. */
    nrt_tensor_batch_t nb[2] = {{a, &good, 1}, {NULL, &good, 1}};
    assert_int_equal(nrt_tensor_write_batch(nb, 2, false), NRT_INVALID);
    assert_int_equal(nrt_tensor_write_batch(NULL, 1, false), NRT_INVALID);
    assert_int_equal(nrt_tensor_read_batch(NULL, 2, false), NRT_INVALID);
    /* A count no memory could hold. */
    assert_int_equal(nrt_tensor_read_batch(nb, UINT64_MAX, false), NRT_INVALID);
    it_expect_bytes(a, aw, N);
    it_expect_bytes(b, bw, N);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
}

/* ---- queries ---------------------------------------------------------- */

/* Device tensors on several VNCs of one machine configuration: the
 * physical address, HBM index and va agree with nrt_get_hbm_mmap_va. */
static void check_alloc_info(int vnc, uint32_t vncs_per_chip, uint32_t first_global,
                             uint32_t cores_per_chip, uint32_t lnc, uint32_t stacks)
{
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 1000, "info");
    nrt_tensor_device_allocation_info_t info;
    memset(&info, 0xcc, sizeof info);
    assert_int_equal(nrt_tensor_get_device_allocation_info(t, &info), NRT_SUCCESS);
    uint32_t global = first_global + (uint32_t)vnc;
    int chip = (int)(global / vncs_per_chip);
    int want_stack = (int)((global % vncs_per_chip) * lnc * stacks / cores_per_chip);
    assert_int_equal(info.hbm_index, want_stack);
    assert_true(info.size >= 1000);
    void *stack_va = NULL;
    size_t stack_size = 0;
    assert_int_equal(nrt_get_hbm_mmap_va(chip, info.hbm_index, &stack_va, &stack_size),
                     NRT_SUCCESS);
    /* Chip-relative physical address: stack i starts at i * stack_size. */
    assert_true(info.physical_address >= (uint64_t)info.hbm_index * stack_size);
    uint64_t in_stack = info.physical_address - (uint64_t)info.hbm_index * stack_size;
    assert_true(in_stack + info.size <= stack_size);
    uint8_t *va = nrt_tensor_get_va(t);
    assert_ptr_equal(va, (uint8_t *)stack_va + in_stack);
    /* The mapping and the tensor are one memory. */
    uint8_t w[1000];
    it_pattern(w, sizeof w, (uint32_t)vnc);
    assert_int_equal(nrt_tensor_write(t, w, 0, sizeof w), NRT_SUCCESS);
    assert_memory_equal((uint8_t *)stack_va + in_stack, w, sizeof w);
    /* A slice reports its own place inside the same allocation. */
    nrt_tensor_t *s = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(t, 128, 256, "slice", &s), NRT_SUCCESS);
    nrt_tensor_device_allocation_info_t si;
    assert_int_equal(nrt_tensor_get_device_allocation_info(s, &si), NRT_SUCCESS);
    assert_int_equal(si.physical_address, info.physical_address + 128);
    assert_int_equal(si.size, 256);
    assert_int_equal(si.hbm_index, info.hbm_index);
    nrt_tensor_free(&s);
    nrt_tensor_free(&t);
}

/* One configuration for check_alloc_info. */
struct info_case {
    const char *instance;  /* TRNEMU_INSTANCE */
    const char *lnc;       /* NEURON_LOGICAL_NC_CONFIG */
    const char *visible;   /* NEURON_RT_VISIBLE_CORES */
    uint32_t first_global; /* global id of local VNC 0 */
    uint32_t vncs_per_chip;/* VNCs per chip */
    uint32_t cores;        /* physical cores per chip */
    uint32_t lnc_val;      /* LNC */
    uint32_t stacks;       /* HBM stacks per chip */
    uint32_t nvis;         /* visible VNCs */
};

static void test_alloc_info(void **state)
{
    (void)state;
    static const struct info_case cases[] = {
        {"trn1.2xlarge", NULL, NULL, 0, 2, 2, 1, 2, 2},
        {"trn1.32xlarge", NULL, "5-9", 5, 2, 2, 1, 2, 5},
        {"inf2.48xlarge", NULL, NULL, 0, 2, 2, 1, 2, 24},
        {"trn2.48xlarge", "2", NULL, 0, 4, 8, 2, 4, 64},
        {"trn2.48xlarge", "1", NULL, 0, 8, 8, 1, 4, 128},
        {"trn2.48xlarge", "2", "8-15", 8, 4, 8, 2, 4, 8},
        {"trn2u.48xlarge", "1", "100-109", 100, 8, 8, 1, 4, 10},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct info_case *c = &cases[i];
        nrt_close();
        it_init(c->instance, c->lnc, c->visible, NULL);
        for (uint32_t v = 0; v < c->nvis; v += (c->nvis > 16 ? 5 : 1))
            check_alloc_info((int)v, c->vncs_per_chip, c->first_global, c->cores, c->lnc_val,
                             c->stacks);
    }
}

static void test_hbm_mmap_va(void **state)
{
    (void)state;
    /* trn2.48xlarge: 16 devices, 4 stacks of 24 GiB each. */
    for (int dev = 0; dev < 16; dev += 5) {
        uint8_t *prev = NULL;
        for (int i = 0; i < 4; i++) {
            void *va = NULL;
            size_t sz = 0;
            assert_int_equal(nrt_get_hbm_mmap_va(dev, i, &va, &sz), NRT_SUCCESS);
            assert_non_null(va);
            assert_int_equal(sz, 24 * IT_GIB);
            if (prev != NULL)
                assert_ptr_equal(va, prev + sz);
            prev = va;
        }
        void *va = (void *)1;
        size_t sz = 7;
        assert_int_equal(nrt_get_hbm_mmap_va(dev, 4, &va, &sz), NRT_INVALID_HANDLE);
        assert_int_equal(nrt_get_hbm_mmap_va(dev, 1000, &va, &sz), NRT_INVALID_HANDLE);
        assert_ptr_equal(va, (void *)1);
        assert_int_equal(sz, 7);
    }
    void *va;
    size_t sz;
    assert_int_equal(nrt_get_hbm_mmap_va(16, 0, &va, &sz), NRT_INVALID);
    assert_int_equal(nrt_get_hbm_mmap_va(-1, 0, &va, &sz), NRT_INVALID);
    assert_int_equal(nrt_get_hbm_mmap_va(0, -1, &va, &sz), NRT_INVALID);
    assert_int_equal(nrt_get_hbm_mmap_va(0, 0, NULL, &sz), NRT_INVALID);
    assert_int_equal(nrt_get_hbm_mmap_va(0, 0, &va, NULL), NRT_INVALID);
    /* trn1.2xlarge: 1 device, 2 stacks of 16 GiB. */
    nrt_close();
    it_init("trn1.2xlarge", NULL, NULL, NULL);
    assert_int_equal(nrt_get_hbm_mmap_va(0, 1, &va, &sz), NRT_SUCCESS);
    assert_int_equal(sz, 16 * IT_GIB);
    assert_int_equal(nrt_get_hbm_mmap_va(0, 2, &va, &sz), NRT_INVALID_HANDLE);
    assert_int_equal(nrt_get_hbm_mmap_va(1, 0, &va, &sz), NRT_INVALID);
}

static void test_host_device_ids(void **state)
{
    (void)state;
    uint32_t id = 99;
    assert_int_equal(nrt_host_device_id_get(15, &id), NRT_SUCCESS);
    assert_int_equal(id, 15);
    assert_int_equal(nrt_host_device_id_get(16, &id), NRT_INVALID);
    assert_int_equal(nrt_host_device_id_get(-1, &id), NRT_INVALID);
    assert_int_equal(nrt_host_device_id_get(0, NULL), NRT_INVALID);
    uint32_t map[20], count = 20;
    assert_int_equal(nrt_host_device_id_rid_map_get(&count, map), NRT_SUCCESS);
    assert_int_equal(count, 16);
    count = 15;
    assert_int_equal(nrt_host_device_id_rid_map_get(&count, map), NRT_INVALID);
    assert_int_equal(nrt_host_device_id_rid_map_get(NULL, map), NRT_INVALID);
    assert_int_equal(nrt_host_device_id_rid_map_get(&count, NULL), NRT_INVALID);
}

static void test_output_completion(void **state)
{
    (void)state;
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "out");
    assert_int_equal(nrt_tensor_check_output_completion(t, 0, 0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_check_output_completion(t, 0, 1), NRT_TIMEOUT);
    assert_int_equal(nrt_tensor_check_output_completion(t, 2000, 1), NRT_TIMEOUT);
    assert_int_equal(nrt_tensor_reset_output_completion(t), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_check_output_completion(t, 100, 0), NRT_SUCCESS);
    nrt_tensor_free(&t);
}

/* A tensor still allocated at the end of a case is freed by nrt_close in
 * the teardown; the next case starts clean. */
static void test_left_allocated(void **state)
{
    (void)state;
    for (int i = 0; i < 100; i++)
        (void)it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, i % 64, 4096, "leak?");
    nrt_tensor_t *h = it_tensor(NRT_TENSOR_PLACEMENT_HOST, -1, 4096, "leak?");
    nrt_tensor_t *s = NULL;
    assert_int_equal(nrt_tensor_allocate_slice(h, 0, 8, "slice", &s), NRT_SUCCESS);
    (void)s;
}

int main(void)
{
#define CASE(f) cmocka_unit_test_setup_teardown(f, it_setup_default, it_teardown)
    const struct CMUnitTest tests[] = {
        CASE(test_allocate_placements),
        CASE(test_allocate_bad),
        CASE(test_read_write),
        CASE(test_bounds),
        CASE(test_null_arguments),
        CASE(test_not_a_tensor),
        CASE(test_memset),
        CASE(test_copy),
        CASE(test_copy_lnc1),
        CASE(test_empty_and_attach),
        CASE(test_attach_to_device),
        CASE(test_slices),
        CASE(test_slices_host),
        CASE(test_batches),
        CASE(test_batches_all_or_nothing),
        CASE(test_alloc_info),
        CASE(test_hbm_mmap_va),
        CASE(test_host_device_ids),
        CASE(test_output_completion),
        CASE(test_left_allocated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
