/*
 * test_vendor_neff.c: NEFFs shaped like vendor-compiled ones (written by
 * vendor_neff.py into TRNEMU_VENDOR_NEFF_DIR) through the public API:
 * nrt_load succeeds for the one-subgraph, two-subgraph (kelf) and scanned
 * layouts and nrt_get_model_tensor_info reports exactly the tensors the
 * tensor maps record; execution is refused, or with TRNEMU_FOREIGN_NEFF=zeros
 * runs as a stand-in that zero-fills the outputs and warns once per model;
 * every malformed variant is NRT_INVALID with exactly one log line naming
 * the cause.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "it_common.h"
#include "nrt/nrt_sys_trace.h"

/* The whole file; fails the test when it cannot be read. */
static uint8_t *vn_read(const char *name, size_t *size)
{
    const char *dir = getenv("TRNEMU_VENDOR_NEFF_DIR");
    char path[4096];
    assert_non_null(dir);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    uint8_t *b = malloc((size_t)n);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Runs of stderr into a temporary file, to count log lines. */
struct vn_capture {
    int saved;      /* the real stderr */
    FILE *tmp;      /* where stderr goes meanwhile */
};

static void vn_capture_begin(struct vn_capture *c)
{
    fflush(stderr);
    c->tmp = tmpfile();
    assert_non_null(c->tmp);
    c->saved = dup(2);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->tmp), 2) >= 0);
}

/* Restore stderr; the captured text goes into buf, the line count back. */
static int vn_capture_end(struct vn_capture *c, char *buf, size_t cap)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    rewind(c->tmp);
    size_t n = fread(buf, 1, cap - 1, c->tmp);
    buf[n] = '\0';
    fclose(c->tmp);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    return lines;
}

static nrt_model_t *vn_load(const char *name, NRT_STATUS want)
{
    size_t size;
    uint8_t *b = vn_read(name, &size);
    nrt_model_t *m = NULL;
    NRT_STATUS st = nrt_load(b, size, 0, -1, &m);
    free(b);
    if (st != want)
        fail_msg("%s: nrt_load gave %d, want %d", name, st, want);
    return m;
}

/* The tensors the fixtures' tensor maps record. */
static void vn_expect_info(nrt_model_t *m)
{
    static const struct {
        const char *name;
        nrt_tensor_usage_t usage;
        nrt_dtype_t dtype;
        uint32_t ndim, d0, d1;
        size_t size;
    } want[] = {
        {"x", NRT_TENSOR_USAGE_INPUT, NRT_DTYPE_FLOAT16, 2, 4, 8, 64},
        {"y", NRT_TENSOR_USAGE_INPUT, NRT_DTYPE_FLOAT32, 2, 8, 2, 64},
        {"output0", NRT_TENSOR_USAGE_OUTPUT, NRT_DTYPE_BFLOAT16, 2, 4, 2, 16},
    };
    nrt_tensor_info_array_t *info = NULL;
    assert_int_equal(nrt_get_model_tensor_info(m, &info), NRT_SUCCESS);
    assert_int_equal(info->tensor_count, 3);
    for (size_t i = 0; i < 3; i++) {
        const nrt_tensor_info_t *t = &info->tensor_array[i];
        assert_string_equal(t->name, want[i].name);
        assert_int_equal(t->usage, want[i].usage);
        assert_int_equal(t->dtype, want[i].dtype);
        assert_int_equal(t->size, want[i].size);
        assert_int_equal(t->ndim, want[i].ndim);
        assert_int_equal(t->shape[0], want[i].d0);
        assert_int_equal(t->shape[1], want[i].d1);
    }
    assert_int_equal(nrt_free_model_tensor_info(info), NRT_SUCCESS);
}

static void test_layouts_load(void **state)
{
    (void)state;
    static const char *const names[] = {"vendor_one.neff", "vendor_two.neff",
                                        "vendor_scan.neff"};
    for (size_t i = 0; i < 3; i++) {
        nrt_model_t *m = vn_load(names[i], NRT_SUCCESS);
        vn_expect_info(m);
        assert_int_equal(nrt_unload(m), NRT_SUCCESS);
    }
}

struct vn_io {
    nrt_tensor_t *t[3];           /* x, y, output0 */
    nrt_tensor_set_t *in, *out;   /* their sets */
};

static void vn_io_make(struct vn_io *io)
{
    static const char *const names[] = {"x", "y", "output0"};
    static const size_t sizes[] = {64, 64, 16};
    assert_int_equal(nrt_allocate_tensor_set(&io->in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&io->out), NRT_SUCCESS);
    for (int i = 0; i < 3; i++) {
        io->t[i] = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizes[i], names[i]);
        assert_int_equal(nrt_tensor_memset(io->t[i], 0, 0x5a, sizes[i]), NRT_SUCCESS);
        assert_int_equal(nrt_add_tensor_to_tensor_set(i < 2 ? io->in : io->out, names[i],
                                                      io->t[i]), NRT_SUCCESS);
    }
}

static void vn_io_free(struct vn_io *io)
{
    for (int i = 0; i < 3; i++)
        nrt_tensor_free(&io->t[i]);
    nrt_destroy_tensor_set(&io->in);
    nrt_destroy_tensor_set(&io->out);
}

/* Refused by default; a stand-in on request, with one warning per model. */
static void test_foreign_execution(void **state)
{
    (void)state;
    nrt_model_t *m = vn_load("vendor_one.neff", NRT_SUCCESS);
    struct vn_io io;
    vn_io_make(&io);
    char log[8192];
    struct vn_capture c;
    vn_capture_begin(&c);
    NRT_STATUS st = nrt_execute(m, io.in, io.out);
    int lines = vn_capture_end(&c, log, sizeof log);
    assert_int_equal(st, NRT_UNSUPPORTED_NEFF_VERSION);
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log, "TRNEMU_FOREIGN_NEFF"));
    /* The warning shows at the default level; each stand-in execution is
     * an nc_exec_running event of the system trace (a benchmark's clock). */
    setenv("TRNEMU_FOREIGN_NEFF", "zeros", 1);
    nrt_sys_trace_config_t *tc = NULL;
    assert_int_equal(nrt_sys_trace_config_allocate(&tc), NRT_SUCCESS);
    nrt_sys_trace_config_set_defaults(tc);
    assert_int_equal(nrt_sys_trace_start(tc), NRT_SUCCESS);
    nrt_sys_trace_config_free(tc);
    vn_capture_begin(&c);
    for (int r = 0; r < 3; r++)
        assert_int_equal(nrt_execute(m, io.in, io.out), NRT_SUCCESS);
    lines = vn_capture_end(&c, log, sizeof log);
    unsetenv("TRNEMU_FOREIGN_NEFF");
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log, "stand-in"));
    char *json = NULL;
    size_t jlen = 0;
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &jlen, NULL), NRT_SUCCESS);
    int running = 0;
    for (const char *p = json; (p = strstr(p, "\"nc_exec_running\"")) != NULL; p++)
        running++;
    nrt_sys_trace_buffer_free(json);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    assert_true(running >= 3);
    /* the shared instance marks the model as a stand-in for every tool */
    char cmd[4200], out[8192] = {0};
    snprintf(cmd, sizeof cmd, "'%s' ls --stats --json", getenv("TRNEMU_TOOL"));
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t got = fread(out, 1, sizeof out - 1, p);
    assert_int_equal(pclose(p), 0);
    assert_true(got > 0);
    const char *entry = strstr(out, "\"model\": \"file.neff\"");
    if (entry == NULL || strstr(entry, "\"stand_in\": true") == NULL)
        fail_msg("trnemu ls --stats --json does not mark the stand-in: %s", out);
    uint8_t *y = it_read_all(io.t[2]);
    for (int i = 0; i < 16; i++)
        assert_int_equal(y[i], 0);
    free(y);
    vn_io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *file;   /* fixture */
        const char *cause;  /* in the one log line */
    } cases[] = {
        {"bad_kelf_definition.neff", "definition"},
        {"bad_kelf_missing.neff", "kelf-0.json: member is missing"},
        {"bad_engine_member.neff", "sg00/Missing.json' is missing"},
        {"bad_instr_member.neff", "sg00/Activation.bin' is missing"},
        {"bad_instr_mismatch.neff", "key 'instr'"},
        {"bad_input_no_size.neff", "var 'x': key 'size'"},
        {"bad_tmap_shape.neff", "tensor 'y': dtype and tf_shape give 96 bytes"},
        {"bad_tmap_kind.neff", "tensor 'x': key 'kind'"},
        {"bad_tmap_dtype.neff", "tensor 'x': key 'dtype'"},
        {"bad_dynamic_dma.neff", "key 'dynamic_dma'"},
        {"bad_engine_type.neff", "key 'dve'"},
        {"bad_sb_size_type.neff", "var 'SB': key 'size'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char log[8192];
        struct vn_capture c;
        vn_capture_begin(&c);
        nrt_model_t *m = vn_load(cases[i].file, NRT_INVALID);
        int lines = vn_capture_end(&c, log, sizeof log);
        assert_null(m);
        if (lines != 1 || strstr(log, cases[i].cause) == NULL)
            fail_msg("%s: want one line with '%s', got %d: %s", cases[i].file, cases[i].cause,
                     lines, log);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_layouts_load, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_foreign_execution, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_malformed, it_setup_default, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
