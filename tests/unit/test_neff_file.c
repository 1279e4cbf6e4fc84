/*
 * test_neff_file.c: unit tests of the NEFF container (emu/neff/neff_file.c):
 * header layout, round trips, determinism, hashes, limits, path sanity,
 * and every error path (truncation at every byte, flipped bytes, bad
 * sizes, corrupt gzip/tar, gzip CRC-32 and length trailers that do not
 * match the data), each giving one log line.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "devices/config/log_env.h"
#include "emu/log.h"
#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"
#include "test_neff_util.h"

static char logbuf[65536];

/* Read expecting status `want` and exactly one log line (zero on success). */
static void expect_read(const uint8_t *b, size_t n, bool validate, emu_status want)
{
    struct neff_file *f = NULL;
    tu_log_begin();
    emu_status st = neff_file_read(b, n, validate, &f);
    int lines = tu_log_end(logbuf, sizeof logbuf);
    if (st != want || lines != (want == EMU_OK ? 0 : 1))
        print_error("status %d (want %d), %d log lines: %s\n", st, want, lines, logbuf);
    assert_int_equal(st, want);
    assert_int_equal(lines, want == EMU_OK ? 0 : 1);
    if (want == EMU_OK)
        assert_non_null(f);
    else
        assert_null(f);
    neff_file_free(f);
}

static struct neff_file *three_members(void)
{
    struct neff_file *f = neff_file_new();
    assert_non_null(f);
    assert_int_equal(neff_file_add_copy(f, "neff.json", "{}", 2), EMU_OK);
    assert_int_equal(neff_file_add_copy(f, "sg00/def.json", "{\"var\":{}}", 10), EMU_OK);
    assert_int_equal(neff_file_add_copy(f, "./sg00/empty.bin", "", 0), EMU_OK);
    snprintf(f->hdr.name, sizeof f->hdr.name, "three");
    f->hdr.num_tpb = 1;
    f->hdr.lnc_size = 1;
    f->hdr.feature_bits = 0x5;
    f->hdr.tpb_per_node[0] = 1;
    memcpy(f->hdr.neff_build_version, "1.2.3", 5);
    for (int i = 0; i < 16; i++)
        f->hdr.uuid[i] = (uint8_t)i;
    return f;
}

static void test_header_layout(void **state)
{
    (void)state;
    struct neff_file *f = three_members();
    uint8_t *b;
    size_t n;
    assert_int_equal(neff_file_write(f, &b, &n), EMU_OK);
    assert_true(n > NEFF_HEADER_SIZE);
    assert_int_equal(tu_get_u64(b + 0), NEFF_PKG_VERSION_SHA256);
    assert_int_equal(tu_get_u64(b + 8), 1024);
    assert_int_equal(tu_get_u64(b + 16), n - 1024);
    assert_int_equal(tu_get_u64(b + 24), NEFF_VERSION_MAJOR_TRNEMU);
    assert_memory_equal(b + 40, "1.2.3", 6);
    assert_int_equal(b[168], 1);                       /* num_tpb */
    uint8_t h[32];
    assert_true(neff_hash_compute(1, b + 1024, n - 1024, h));
    assert_memory_equal(b + 172, h, 32);
    assert_int_equal(b[204 + 5], 5);                   /* uuid */
    assert_string_equal((const char *)b + 220, "three");
    assert_int_equal(b[480], 1);                       /* tpb_per_node */
    assert_int_equal(tu_get_u64(b + 544), 0x5);        /* feature_bits */
    assert_int_equal(b[552], 1);                       /* lnc_size */
    for (size_t i = 556; i < 1024; i++)
        assert_int_equal(b[i], 0);
    /* gzip header: magic and a zero mtime */
    assert_int_equal(b[1024], 0x1f);
    assert_int_equal(b[1025], 0x8b);
    assert_int_equal(b[1028] | b[1029] | b[1030] | b[1031], 0);
    free(b);
    neff_file_free(f);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct neff_file *f = three_members();
    uint8_t *b1, *b2, *b3;
    size_t n1, n2, n3;
    assert_int_equal(neff_file_write(f, &b1, &n1), EMU_OK);
    assert_int_equal(neff_file_write(f, &b2, &n2), EMU_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    struct neff_file *g = NULL;
    assert_int_equal(neff_file_read(b1, n1, true, &g), EMU_OK);
    assert_true(neff_file_equal(f, g));
    assert_int_equal(g->n_members, 3);
    assert_string_equal(g->members[2].name, "sg00/empty.bin");
    assert_non_null(neff_file_find(g, "sg00/def.json"));
    assert_non_null(neff_file_find(g, "./sg00/def.json"));
    assert_null(neff_file_find(g, "sg00/nothing"));
    assert_int_equal(neff_file_write(g, &b3, &n3), EMU_OK);
    assert_int_equal(n1, n3);
    assert_memory_equal(b1, b3, n1);
    free(b1);
    free(b2);
    free(b3);
    neff_file_free(f);
    neff_file_free(g);
}

static void test_many_members(void **state)
{
    (void)state;
    struct neff_file *f = neff_file_new();
    char name[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "sg%02d/const_%d.bin", i % 7, i);
        assert_int_equal(neff_file_add_copy(f, name, name, strlen(name)), EMU_OK);
    }
    /* a long path needs a pax extended header */
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    memcpy(longname, "sg00/", 5);
    assert_int_equal(neff_file_add_copy(f, longname, "L", 1), EMU_OK);
    uint8_t *b, *b2;
    size_t n, n2;
    assert_int_equal(neff_file_write(f, &b, &n), EMU_OK);
    assert_int_equal(neff_file_write(f, &b2, &n2), EMU_OK);
    assert_int_equal(n, n2);
    assert_memory_equal(b, b2, n);
    struct neff_file *g = NULL;
    assert_int_equal(neff_file_read(b, n, true, &g), EMU_OK);
    assert_true(neff_file_equal(f, g));
    const struct neff_member *m = neff_file_find(g, "sg03/const_1998.bin");
    assert_non_null(m);
    assert_int_equal(neff_buf_size(m->data), strlen("sg03/const_1998.bin"));
    assert_non_null(neff_file_find(g, longname));
    free(b);
    free(b2);
    neff_file_free(f);
    neff_file_free(g);
}

static void test_md5_and_unknown_pkg(void **state)
{
    (void)state;
    struct neff_file *f = three_members();
    f->hdr.pkg_version = NEFF_PKG_VERSION_MD5;
    uint8_t *b;
    size_t n;
    assert_int_equal(neff_file_write(f, &b, &n), EMU_OK);
    for (int i = 172 + 16; i < 172 + 32; i++)
        assert_int_equal(b[i], 0);
    expect_read(b, n, true, EMU_OK);
    b[172] ^= 1;
    expect_read(b, n, true, EMU_INVALID);
    expect_read(b, n, false, EMU_OK);
    tu_put_u64(b, 7);               /* unknown pkg_version: no hash to check */
    expect_read(b, n, true, EMU_INVALID);
    expect_read(b, n, false, EMU_OK);
    free(b);
    f->hdr.pkg_version = 7;
    tu_log_begin();
    assert_int_equal(neff_file_write(f, &b, &n), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    neff_file_free(f);
}

static void test_truncated_everywhere(void **state)
{
    (void)state;
    uint8_t *b;
    size_t n;
    tu_small_neff(&b, &n);
    for (size_t len = 0; len < n; len++) {
        expect_read(b, len, false, EMU_INVALID);
        /* fix the header so that only the tarball is short */
        if (len >= NEFF_HEADER_SIZE) {
            uint8_t *c = malloc(len + 1);
            memcpy(c, b, len);
            tu_put_u64(c + 16, len - NEFF_HEADER_SIZE);
            struct neff_file *f = NULL;
            tu_quiet(true);
            emu_status st = neff_file_read(c, len, false, &f);
            if (st == EMU_OK) {
                struct neff_model *m = NULL;
                if (neff_model_load(f, &m) == EMU_OK)
                    neff_model_free(m);
                neff_file_free(f);
            } else {
                assert_int_equal(st, EMU_INVALID);
            }
            tu_quiet(false);
            free(c);
        }
    }
    expect_read(b, n, true, EMU_OK);
    free(b);
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    uint8_t *b;
    size_t n;
    tu_small_neff(&b, &n);
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            b[i] ^= (uint8_t)(1u << bit);
            bool in_data = i >= NEFF_HEADER_SIZE;
            bool in_hash = i >= 172 && i < 204;
            if (in_data || in_hash) {
                expect_read(b, n, true, EMU_INVALID);
            }
            struct neff_file *f = NULL;
            tu_quiet(true);
            emu_status st = neff_file_read(b, n, false, &f);
            if (st == EMU_OK) {
                struct neff_model *m = NULL;
                if (neff_model_load(f, &m) == EMU_OK)
                    neff_model_free(m);
                neff_file_free(f);
            }
            tu_quiet(false);
            b[i] ^= (uint8_t)(1u << bit);
        }
    }
    free(b);
}

static void test_bad_sizes(void **state)
{
    (void)state;
    uint8_t *b;
    size_t n;
    tu_small_neff(&b, &n);
    tu_put_u64(b + 8, 1023);
    expect_read(b, n, false, EMU_INVALID);
    tu_put_u64(b + 8, 1024);
    tu_put_u64(b + 16, n - 1024 + 1);
    expect_read(b, n, false, EMU_INVALID);
    tu_put_u64(b + 16, n - 1024 - 1);
    expect_read(b, n, false, EMU_INVALID);
    tu_put_u64(b + 16, UINT64_MAX);
    expect_read(b, n, false, EMU_INVALID);
    tu_put_u64(b + 16, n - 1024);
    expect_read(b, n, true, EMU_OK);
    /* trailing garbage */
    uint8_t *c = malloc(n + 10);
    memcpy(c, b, n);
    memset(c + n, 0, 10);
    expect_read(c, n + 10, false, EMU_INVALID);
    free(c);
    /* newer major version */
    tu_put_u64(b + 24, NEFF_VERSION_MAJOR_MAX + 1);
    expect_read(b, n, false, EMU_NEFF_VERSION);
    tu_put_u64(b + 24, NEFF_VERSION_MAJOR_MAX);
    expect_read(b, n, false, EMU_OK);
    expect_read(NULL, 0, false, EMU_INVALID);
    free(b);
}

static void test_corrupt_data(void **state)
{
    (void)state;
    uint8_t *b;
    size_t n;
    static const char junk[] = "this is not a gzip'd tarball at all, just some text......";
    tu_neff_wrap(junk, sizeof junk, &b, &n);
    expect_read(b, n, true, EMU_INVALID);
    free(b);
    tu_neff_wrap("", 0, &b, &n);
    expect_read(b, n, true, EMU_INVALID);
    free(b);
    /* valid gzip, but the tar inside is cut short */
    uint8_t *t;
    size_t tn;
    const char *names[] = {"neff.json"};
    tu_raw_tar(names, "f", 1, &t, &tn);
    tu_neff_wrap(t, tn, &b, &n);
    expect_read(b, n, true, EMU_OK);
    free(b);
    tu_neff_wrap(t, tn / 2, &b, &n);
    expect_read(b, n, true, EMU_INVALID);
    free(b);
    free(t);
}

/* zlib in one call: gzip (windowBits 31) or gunzip `in`, into a malloc'd buffer. */
static uint8_t *gz_code(bool pack, const uint8_t *in, size_t n, size_t *out_n)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    int r = pack ? deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY)
                 : inflateInit2(&z, 31);
    assert_int_equal(r, Z_OK);
    size_t cap = 4u << 20;
    uint8_t *out = malloc(cap);
    assert_non_null(out);
    z.next_in = (Bytef *)(uintptr_t)in;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    r = pack ? deflate(&z, Z_FINISH) : inflate(&z, Z_FINISH);
    assert_int_equal(r, Z_STREAM_END);
    *out_n = z.total_out;
    if (pack)
        deflateEnd(&z);
    else
        inflateEnd(&z);
    return out;
}

/* A NEFF with a constant .npy member whose gzip data part is rewritten by
 * `edit`: mode 'c' flips one bit of the constant and recompresses, keeping
 * the original trailer (a CRC-32 that no longer matches); mode 'l' keeps
 * the data and changes the length in the trailer. */
static void crc_case(char mode, uint8_t **bytes, size_t *size)
{
    struct neff_file *f = three_members();
    uint8_t npy[4096];
    for (size_t i = 0; i < sizeof npy; i++)
        npy[i] = (uint8_t)(0xA5 ^ (i * 7));
    memcpy(npy, "PATTERN-OF-THE-CONSTANT", 23);
    assert_int_equal(neff_file_add_copy(f, "sg00/const.npy", npy, sizeof npy), EMU_OK);
    uint8_t *b;
    size_t n;
    assert_int_equal(neff_file_write(f, &b, &n), EMU_OK);
    neff_file_free(f);
    const uint8_t *gz = b + NEFF_HEADER_SIZE;
    size_t gzn = n - NEFF_HEADER_SIZE, tn, nn;
    uint8_t *tar = gz_code(false, gz, gzn, &tn);
    uint8_t *edited;
    if (mode == 'c') {
        uint8_t *at = memmem(tar, tn, "PATTERN-OF-THE-CONSTANT", 23);
        assert_non_null(at);
        at[30] ^= 0x10;
        edited = gz_code(true, tar, tn, &nn);
        memcpy(edited + nn - 8, gz + gzn - 8, 8);
    } else {
        edited = malloc(gzn);
        assert_non_null(edited);
        memcpy(edited, gz, gzn);
        nn = gzn;
        edited[nn - 1] ^= 0x01;
    }
    tu_neff_wrap(edited, nn, bytes, size);
    free(edited);
    free(tar);
    free(b);
}

/* A bad gzip CRC-32 or length is refused with one line, with or without
 * the header hash check (issue 13: it used to load with wrong data). */
static void test_gzip_trailer(void **state)
{
    (void)state;
    uint8_t *b;
    size_t n;
    crc_case('c', &b, &n);
    expect_read(b, n, false, EMU_INVALID);
    assert_non_null(strstr(logbuf, "incorrect data check"));
    expect_read(b, n, true, EMU_INVALID);
    free(b);
    crc_case('l', &b, &n);
    expect_read(b, n, false, EMU_INVALID);
    assert_non_null(strstr(logbuf, "incorrect length check"));
    free(b);
}

static void test_paths(void **state)
{
    (void)state;
    static const struct {
        const char *name;               /* entry name */
        char type;                      /* entry type (see tu_raw_tar) */
        emu_status want;                /* expected result */
    } cases[] = {
        {"neff.json", 'f', EMU_OK},      {"./sg00/def.json", 'f', EMU_OK},
        {"sg00", 'd', EMU_OK},           {"/etc/passwd", 'f', EMU_INVALID},
        {"../evil", 'f', EMU_INVALID},        {"sg00/../../evil", 'f', EMU_INVALID},
        {"sg00//x", 'f', EMU_INVALID},        {"sg00/./x", 'f', EMU_INVALID},
        {"link", 'l', EMU_INVALID},           {"hard", 'h', EMU_INVALID},
        {"sg00/caf\xc3\xa9", 'f', EMU_INVALID},  {"sg00/a\tb", 'f', EMU_INVALID},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *t, *b;
        size_t tn, n;
        const char *names[2] = {"neff.json", cases[i].name};
        char types[2] = {'f', cases[i].type};
        size_t count = strcmp(cases[i].name, "neff.json") == 0 ? 1 : 2;
        tu_raw_tar(names, types, count, &t, &tn);
        tu_neff_wrap(t, tn, &b, &n);
        expect_read(b, n, true, cases[i].want);
        if (cases[i].want != EMU_OK)
            assert_non_null(strstr(logbuf, cases[i].type == 'f' ? "member '" : "regular file"));
        if (strstr(cases[i].name, "caf") != NULL || strchr(cases[i].name, '\t') != NULL)
            assert_non_null(strstr(logbuf, "not printable ASCII"));
        free(t);
        free(b);
    }
    /* the same name twice */
    uint8_t *t, *b;
    size_t tn, n;
    const char *dup[2] = {"neff.json", "./neff.json"};
    tu_raw_tar(dup, "ff", 2, &t, &tn);
    tu_neff_wrap(t, tn, &b, &n);
    expect_read(b, n, true, EMU_INVALID);
    free(t);
    free(b);
}

static void test_add_errors(void **state)
{
    (void)state;
    struct neff_file *f = neff_file_new();
    static const char *bad[] = {"", "/abs", "a/../b", "..", "a/", "./", "a//b", "a\x7f",
                                "\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tu_log_begin();
        assert_int_equal(neff_file_add_copy(f, bad[i], "x", 1), EMU_INVALID);
        assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    }
    assert_int_equal(neff_file_add_copy(f, "x", "x", 1), EMU_OK);
    tu_log_begin();
    assert_int_equal(neff_file_add_copy(f, "./x", "y", 1), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    assert_int_equal(f->n_members, 1);
    neff_file_free(f);
}

static void test_limits(void **state)
{
    (void)state;
    struct neff_file *f = three_members();
    uint8_t *b;
    size_t n;
    assert_int_equal(neff_file_write(f, &b, &n), EMU_OK);
    struct neff_limits lim = neff_default_limits;
    struct neff_file *g = NULL;
    lim.max_members = 2;
    tu_log_begin();
    assert_int_equal(neff_file_read_limited(b, n, true, &lim, &g), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    assert_non_null(strstr(logbuf, "more than 2 members"));
    lim = neff_default_limits;
    lim.max_member_size = 9;
    tu_log_begin();
    assert_int_equal(neff_file_read_limited(b, n, true, &lim, &g), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    assert_non_null(strstr(logbuf, "sg00/def.json"));
    lim = neff_default_limits;
    lim.max_total_size = 11;
    tu_log_begin();
    assert_int_equal(neff_file_read_limited(b, n, true, &lim, &g), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    lim.max_total_size = 12;
    assert_int_equal(neff_file_read_limited(b, n, true, &lim, &g), EMU_OK);
    neff_file_free(g);
    free(b);
    neff_file_free(f);
}

/* A member far larger than the compressed data could hold is rejected
 * before anything is allocated for it. */
static void test_inflate_ratio(void **state)
{
    (void)state;
    struct neff_file *f = neff_file_new();
    size_t big = 8u << 20;
    uint8_t *zeros = calloc(1, big);
    assert_int_equal(neff_file_add_copy(f, "zeros.bin", zeros, big), EMU_OK);
    free(zeros);
    uint8_t *b;
    size_t n;
    assert_int_equal(neff_file_write(f, &b, &n), EMU_OK);
    assert_true(n < big / 100);
    struct neff_file *g = NULL;
    assert_int_equal(neff_file_read(b, n, true, &g), EMU_OK);
    assert_int_equal(neff_buf_size(g->members[0].data), big);
    neff_file_free(g);
    free(b);
    neff_file_free(f);
}

static void test_buf(void **state)
{
    (void)state;
    uint8_t *p;
    struct neff_buf *b = neff_buf_new(4, &p);
    assert_non_null(b);
    assert_int_equal(p[0] | p[1] | p[2] | p[3], 0);
    p[1] = 5;
    assert_ptr_equal(neff_buf_ref(b), b);
    neff_buf_unref(b);
    assert_int_equal(neff_buf_data(b)[1], 5);
    assert_int_equal(neff_buf_size(b), 4);
    neff_buf_unref(b);
    neff_buf_unref(NULL);
    assert_null(neff_buf_data(NULL));
    assert_int_equal(neff_buf_size(NULL), 0);
}

int main(void)
{
    unsetenv("NEURON_RT_LOG_LEVEL");
    unsetenv("NEURON_RT_LOG_LEVEL_NEFF");
    log_env_load();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_layout),  cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_many_members),   cmocka_unit_test(test_md5_and_unknown_pkg),
        cmocka_unit_test(test_truncated_everywhere), cmocka_unit_test(test_flipped_bytes),
        cmocka_unit_test(test_bad_sizes),      cmocka_unit_test(test_corrupt_data),
        cmocka_unit_test(test_paths),          cmocka_unit_test(test_add_errors),
        cmocka_unit_test(test_limits),         cmocka_unit_test(test_inflate_ratio),
        cmocka_unit_test(test_buf),            cmocka_unit_test(test_gzip_trailer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
