/*
 * test_npy.c: unit tests of the .npy reader and writer (emu/neff/npy.c):
 * versions 1.0/2.0/3.0, every supported descr, the exact bytes numpy
 * writes, and rejection of fortran order, big-endian data, broken headers
 * and payloads that do not match the shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "devices/config/log_env.h"
#include "emu/log.h"
#include "emu/neff/npy.h"
#include "test_neff_util.h"

static char logbuf[4096];

/* A .npy file as numpy lays it out: magic, version, header length, the
 * dict padded with spaces to a 64-byte boundary and ended by '\n'. */
static uint8_t *make_npy(int major, const char *dict, const void *payload, size_t plen,
                         size_t *size)
{
    size_t pre = major == 1 ? 10 : 12;
    size_t dlen = strlen(dict);
    size_t total = (pre + dlen + 1 + 63) / 64 * 64;
    uint8_t *b = malloc(total + plen + 1);
    memcpy(b, "\x93NUMPY", 6);
    b[6] = (uint8_t)major;
    b[7] = 0;
    size_t hlen = total - pre;
    for (size_t i = 0; i < pre - 8; i++)
        b[8 + i] = (uint8_t)(hlen >> (8 * i));
    memcpy(b + pre, dict, dlen);
    memset(b + pre + dlen, ' ', hlen - dlen - 1);
    b[total - 1] = '\n';
    if (plen)
        memcpy(b + total, payload, plen);
    *size = total + plen;
    return b;
}

static void expect_bad(const uint8_t *b, size_t n, const char *substr)
{
    struct npy_info info;
    tu_log_begin();
    emu_status st = npy_parse(b, n, "t.npy", &info);
    int lines = tu_log_end(logbuf, sizeof logbuf);
    if (st != EMU_INVALID || lines != 1 || (substr && !strstr(logbuf, substr)))
        fail_msg("status %d, %d lines, want '%s': %s", st, lines, substr ? substr : "", logbuf);
}

static void test_parse_versions(void **state)
{
    (void)state;
    float data[6] = {0, 1, 2, 3, 4, 5};
    for (int major = 1; major <= 3; major++) {
        size_t n;
        uint8_t *b = make_npy(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              data, sizeof data, &n);
        struct npy_info info;
        assert_int_equal(npy_parse(b, n, "x.npy", &info), EMU_OK);
        assert_string_equal(info.descr, "<f4");
        assert_int_equal(info.dtype, 10);
        assert_int_equal(info.itemsize, 4);
        assert_int_equal(info.ndim, 2);
        assert_int_equal(info.shape[0], 2);
        assert_int_equal(info.shape[1], 3);
        assert_int_equal(info.count, 6);
        assert_int_equal(info.data_off, 128);
        assert_int_equal(info.data_len, 24);
        assert_memory_equal(b + info.data_off, data, sizeof data);
        free(b);
    }
}

static void test_descrs(void **state)
{
    (void)state;
    static const struct {
        const char *descr;              /* as written */
        const char *norm;               /* as reported */
        uint32_t dtype;                 /* NRT dtype */
        size_t size;                    /* item size */
    } cases[] = {
        {"<f4", "<f4", 10, 4}, {"<f2", "<f2", 7, 2},  {"<f8", "<f8", 0, 8},
        {"|i1", "|i1", 2, 1},  {"<i2", "<i2", 4, 2},  {"<i4", "<i4", 8, 4},
        {"<i8", "<i8", 12, 8}, {"|u1", "|u1", 3, 1},  {"<u2", "<u2", 5, 2},
        {"<u4", "<u4", 9, 4},  {"<u8", "<u8", 1, 8},  {"|b1", "|b1", 3, 1},
        {"=f4", "<f4", 10, 4}, {"<u1", "|u1", 3, 1},  {">i1", "|i1", 2, 1},
    };
    uint8_t payload[24] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }",
                 cases[i].descr);
        size_t n;
        uint8_t *b = make_npy(1, dict, payload, 3 * cases[i].size, &n);
        struct npy_info info;
        assert_int_equal(npy_parse(b, n, "x.npy", &info), EMU_OK);
        assert_string_equal(info.descr, cases[i].norm);
        assert_int_equal(info.dtype, cases[i].dtype);
        assert_int_equal(info.itemsize, cases[i].size);
        assert_int_equal(info.data_len, 3 * cases[i].size);
        free(b);
    }
}

static void test_shapes(void **state)
{
    (void)state;
    static const struct {
        const char *shape;              /* tuple text */
        uint32_t ndim;                  /* dims */
        uint64_t count;                 /* elements */
    } cases[] = {
        {"()", 0, 1}, {"(5,)", 1, 5}, {"(0,)", 1, 0}, {"(2, 0, 3)", 3, 0}, {"(2,3,)", 2, 6},
        {"( 4 , 2 )", 2, 8}, {"(3L, 2L)", 2, 6},
    };
    uint8_t payload[64] = {0};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dict[128];
        snprintf(dict, sizeof dict, "{\"descr\": \"|u1\", \"fortran_order\": False, \"shape\": %s}",
                 cases[i].shape);
        size_t n;
        uint8_t *b = make_npy(1, dict, payload, cases[i].count, &n);
        struct npy_info info;
        assert_int_equal(npy_parse(b, n, "x.npy", &info), EMU_OK);
        assert_int_equal(info.ndim, cases[i].ndim);
        assert_int_equal(info.count, cases[i].count);
        free(b);
    }
}

static void test_rejects(void **state)
{
    (void)state;
    uint8_t payload[64] = {0};
    static const struct {
        const char *dict;               /* header dict text */
        size_t plen;                    /* payload bytes */
        const char *substr;             /* expected in the log line */
    } cases[] = {
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "fortran_order"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian"},
        {"{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", 16, "descr"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 7, "payload"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 9, "payload"},
        {"{'descr': '<f4', 'fortran_order': False}", 8, "lacks"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8, "unknown key"},
        {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
         "duplicate"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, "shape"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, "shape"},
        {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8, "fortran_order"},
        {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8, "descr"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } junk", 8, "junk"},
        {"{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", 8, "malformed"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4), }", 8,
         "overflows"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", 8,
         "shape"},
        {"{'descr: '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "malformed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n;
        uint8_t *b = make_npy(1, cases[i].dict, payload, cases[i].plen, &n);
        expect_bad(b, n, cases[i].substr);
        free(b);
    }
    /* broken framing */
    size_t n;
    uint8_t *b = make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }",
                          payload, 2, &n);
    for (size_t len = 0; len < n; len++)
        expect_bad(b, len, NULL);
    b[0] = 0x92;
    expect_bad(b, n, "magic");
    b[0] = 0x93;
    b[6] = 4;
    expect_bad(b, n, "version 4.0");
    b[6] = 1;
    b[7] = 1;
    expect_bad(b, n, "version 1.1");
    b[7] = 0;
    b[8] = 0xff;
    b[9] = 0xff;
    expect_bad(b, n, "truncated");
    free(b);
    expect_bad(NULL, 0, "magic");
}

/* The writer produces exactly numpy's layout and reads back. */
static void test_write(void **state)
{
    (void)state;
    float data[6] = {1, 2, 3, 4, 5, 6};
    uint64_t shape[2] = {2, 3};
    uint8_t *out;
    size_t n;
    assert_int_equal(npy_write("<f4", shape, 2, data, sizeof data, &out, &n), EMU_OK);
    size_t en;
    uint8_t *expect = make_npy(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                               data, sizeof data, &en);
    assert_int_equal(n, en);
    assert_memory_equal(out, expect, n);
    free(expect);
    free(out);
    uint64_t one = 5;
    assert_int_equal(npy_write("|u1", &one, 1, "abcde", 5, &out, &n), EMU_OK);
    expect = make_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }", "abcde", 5,
                      &en);
    assert_int_equal(n, en);
    assert_memory_equal(out, expect, n);
    free(expect);
    free(out);
    assert_int_equal(npy_write("<i8", NULL, 0, "12345678", 8, &out, &n), EMU_OK);
    struct npy_info info;
    assert_int_equal(npy_parse(out, n, "s.npy", &info), EMU_OK);
    assert_int_equal(info.ndim, 0);
    assert_int_equal(info.count, 1);
    free(out);
    /* many dims: still a valid file */
    uint64_t dims[NPY_MAX_DIMS];
    for (unsigned i = 0; i < NPY_MAX_DIMS; i++)
        dims[i] = 1;
    assert_int_equal(npy_write("<u2", dims, NPY_MAX_DIMS, "xy", 2, &out, &n), EMU_OK);
    assert_int_equal(n % 64, 2);
    assert_int_equal(npy_parse(out, n, "d.npy", &info), EMU_OK);
    assert_int_equal(info.ndim, NPY_MAX_DIMS);
    free(out);
    tu_log_begin();
    assert_int_equal(npy_write("<f4", shape, 2, data, 20, &out, &n), EMU_INVALID);
    assert_int_equal(npy_write(">f4", shape, 2, data, 24, &out, &n), EMU_INVALID);
    assert_int_equal(npy_write("<q9", shape, 2, data, 24, &out, &n), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 3);
}

static void test_descr_for_dtype(void **state)
{
    (void)state;
    assert_string_equal(npy_descr_for_dtype(10), "<f4");
    assert_string_equal(npy_descr_for_dtype(11), "<f4");
    assert_string_equal(npy_descr_for_dtype(6), "<u2");
    assert_string_equal(npy_descr_for_dtype(14), "|u1");
    assert_string_equal(npy_descr_for_dtype(12), "<i8");
    assert_string_equal(npy_descr_for_dtype(1), "<u8");
    assert_null(npy_descr_for_dtype(0));
    assert_null(npy_descr_for_dtype(99));
}

int main(void)
{
    unsetenv("NEURON_RT_LOG_LEVEL");
    unsetenv("NEURON_RT_LOG_LEVEL_NEFF");
    log_env_load();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_versions), cmocka_unit_test(test_descrs),
        cmocka_unit_test(test_shapes),         cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_write),          cmocka_unit_test(test_descr_for_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
