/*
 * test_exec_status.c: what nrt_execute reports when a kernel goes wrong,
 * through the public API and trnemu's kernel builder (trnemu/trnemu.h):
 * NaN in an output (NRT_EXEC_COMPLETED_WITH_NUM_ERR, outputs written), an
 * out-of-bounds access (NRT_EXEC_OOB), a deadlock, a race under
 * TRNEMU_RACECHECK (any boolean spelling; a malformed value or
 * NEURON_RT_EXEC_TIMEOUT refuses the execution), a vendor-compiled NEFF (NRT_UNSUPPORTED_NEFF_VERSION,
 * or zero-filled outputs with TRNEMU_FOREIGN_NEFF=zeros), the tensor info a
 * loaded model reports, and stochastic rounding on request.
 */
#include <math.h>
#include <poll.h>
#include <stdio.h>

#include "it_common.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "trnemu/trnemu.h"

/* A kernel with input x and output y, both f32 [128, 4], plus body lines. */
static nrt_model_t *ex_build(const char *const *lines, size_t n)
{
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    assert_int_equal(trnemu_kernel_create("status", &k), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    for (size_t i = 0; i < n; i++)
        if (trnemu_kernel_append(k, lines[i]) != NRT_SUCCESS)
            fail_msg("line %zu: %s", i, trnemu_kernel_error(k));
    void *bytes = NULL;
    size_t size = 0;
    if (trnemu_kernel_write(k, &bytes, &size) != NRT_SUCCESS)
        fail_msg("assemble: %s", trnemu_kernel_error(k));
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(bytes, size, 0, -1, &m), NRT_SUCCESS);
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    return m;
}

struct io {
    nrt_tensor_t *x, *y;          /* the tensors */
    nrt_tensor_set_t *in, *out;   /* their sets */
};

static void io_make(struct io *io, float xval)
{
    float x[128 * 4];
    for (int i = 0; i < 128 * 4; i++)
        x[i] = xval;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof x, "x", &io->x), 0);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof x, "y", &io->y), 0);
    assert_int_equal(nrt_tensor_write(io->x, x, 0, sizeof x), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_memset(io->y, 0, 0x11, sizeof x), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&io->in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&io->out), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(io->in, "x", io->x), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(io->out, "y", io->y), NRT_SUCCESS);
}

static void io_free(struct io *io)
{
    nrt_tensor_free(&io->x);
    nrt_tensor_free(&io->y);
    nrt_destroy_tensor_set(&io->in);
    nrt_destroy_tensor_set(&io->out);
}

static const char *const load_x =
    "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 src=hbm:x[[4,128], 0, [1,4]]:f32 signal=s0+=1";
static const char *const store_y =
    "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:f32 src=sbuf[0:128, 16, [1,4]]:f32 wait=s1>=1";

static int setup(void **state)
{
    (void)state;
    it_env_clear();
    unsetenv("TRNEMU_RACECHECK");
    unsetenv("TRNEMU_FOREIGN_NEFF");
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    nrt_close();
    unsetenv("TRNEMU_RACECHECK");
    unsetenv("TRNEMU_FOREIGN_NEFF");
    return 0;
}

/* log(-1) is NaN: the execution completes, writes y, and says so. */
static void test_nan_output(void **state)
{
    (void)state;
    const char *lines[] = {
        load_x,
        "act.activation dst=sbuf[0:128, 16, [1,4]]:f32 data=sbuf[0:128, 0, [1,4]]:f32 "
        "func=log wait=s0>=1 signal=s1+=1",
        store_y,
    };
    nrt_model_t *m = ex_build(lines, 3);
    struct io io;
    io_make(&io, -1.0f);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_EXEC_COMPLETED_WITH_NUM_ERR);
    float y[4];
    assert_int_equal(nrt_tensor_read(io.y, y, 0, sizeof y), NRT_SUCCESS);
    assert_true(isnan(y[0]));
    io_free(&io);
    io_make(&io, 2.0f); /* a finite result is a plain success */
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(io.y, y, 0, sizeof y), NRT_SUCCESS);
    assert_true(fabsf(y[0] - logf(2.0f)) < 1e-6f);
    io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* Reading 8 floats per row from a 4-float-per-row input runs off its end. */
static void test_out_of_bounds(void **state)
{
    (void)state;
    const char *lines[] = {
        "sp.dma_copy dst=sbuf[0:128, 0, [1,8]]:f32 src=hbm:x[[8,128], 0, [1,8]]:f32",
    };
    nrt_model_t *m = ex_build(lines, 1);
    struct io io;
    io_make(&io, 1.0f);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_EXEC_OOB);
    io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* The store waits for a semaphore nothing signals. */
static void test_deadlock(void **state)
{
    (void)state;
    const char *lines[] = {load_x, store_y};
    nrt_model_t *m = ex_build(lines, 2);
    struct io io;
    io_make(&io, 1.0f);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_EXEC_COMPLETED_WITH_ERR);
    io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* ACT and DVE write the same SBUF bytes with nothing ordering them. */
static void test_race(void **state)
{
    (void)state;
    const char *lines[] = {
        load_x,
        "act.activation dst=sbuf[0:128, 16, [1,4]]:f32 data=sbuf[0:128, 0, [1,4]]:f32 "
        "func=copy wait=s0>=1 signal=s1+=1",
        "dve.tensor_copy dst=sbuf[0:128, 16, [1,4]]:f32 src=sbuf[0:128, 0, [1,4]]:f32 wait=s0>=1",
        store_y,
    };
    nrt_model_t *m = ex_build(lines, 4);
    struct io io;
    io_make(&io, 1.0f);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_SUCCESS); /* hidden by default */
    setenv("TRNEMU_RACECHECK", "1", 1);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_EXEC_COMPLETED_WITH_ERR);
    /* one boolean parser: false and no are off, TRUE and yes on */
    static const char *const off[] = {"0", "false", "no", "No"}, *const on[] = {"TRUE", "yes"};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        setenv("TRNEMU_RACECHECK", off[i], 1);
        assert_int_equal(nrt_execute(m, io.in, io.out), NRT_SUCCESS);
    }
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        setenv("TRNEMU_RACECHECK", on[i], 1);
        assert_int_equal(nrt_execute(m, io.in, io.out), NRT_EXEC_COMPLETED_WITH_ERR);
    }
    /* changed to a malformed value after nrt_init: the execution refuses it */
    setenv("TRNEMU_RACECHECK", "maybe", 1);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_INVALID);
    setenv("NEURON_RT_EXEC_TIMEOUT", "abc", 1);
    unsetenv("TRNEMU_RACECHECK");
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_INVALID);
    setenv("NEURON_RT_EXEC_TIMEOUT", "10s", 1);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_SUCCESS);
    unsetenv("NEURON_RT_EXEC_TIMEOUT");
    io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* Without trnemu's feature bit (.header feature_bits=0) the NEFF counts as
 * a vendor one: it loads and reports its tensors, but cannot be executed
 * unless a stand-in is asked for. */
static void test_foreign_neff_and_info(void **state)
{
    (void)state;
    static const char text[] =
        ".header feature_bits=0\n"
        ".input  x f32 [128, 4]\n"
        ".output y f32 [128, 4]\n"
        "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 src=hbm:x[[4,128], 0, [1,4]]:f32\n";
    trnemu_kernel_t *k = NULL;
    assert_int_equal(trnemu_kernel_create("foreign", &k), NRT_SUCCESS);
    if (trnemu_kernel_assemble(k, text, sizeof text - 1) != NRT_SUCCESS)
        fail_msg("assemble: %s", trnemu_kernel_error(k));
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(trnemu_kernel_write(k, &bytes, &size), NRT_SUCCESS);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(bytes, size, -1, -1, &m), NRT_SUCCESS);
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    nrt_tensor_info_array_t *info = NULL;
    assert_int_equal(nrt_get_model_tensor_info(m, &info), NRT_SUCCESS);
    assert_int_equal(info->tensor_count, 2);
    for (int i = 0; i < 2; i++) {
        const nrt_tensor_info_t *t = &info->tensor_array[i];
        assert_string_equal(t->name, i == 0 ? "x" : "y");
        assert_int_equal(t->usage, i == 0 ? NRT_TENSOR_USAGE_INPUT : NRT_TENSOR_USAGE_OUTPUT);
        assert_int_equal(t->dtype, NRT_DTYPE_FLOAT32);
        assert_int_equal(t->size, 128 * 4 * 4);
        assert_int_equal(t->ndim, 2);
        assert_int_equal(t->shape[0], 128);
        assert_int_equal(t->shape[1], 4);
    }
    assert_int_equal(nrt_free_model_tensor_info(info), NRT_SUCCESS);
    struct io io;
    io_make(&io, 1.0f);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_UNSUPPORTED_NEFF_VERSION);
    setenv("TRNEMU_FOREIGN_NEFF", "zeros", 1);
    assert_int_equal(nrt_execute(m, io.in, io.out), NRT_SUCCESS);
    float y[128 * 4], zero[128 * 4] = {0};
    assert_int_equal(nrt_tensor_read(io.y, y, 0, sizeof y), NRT_SUCCESS);
    assert_memory_equal(y, zero, sizeof y);
    io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* y = bf16(x): stochastic rounding on request, reproducible for a seed. */
static void sr_run(nrt_model_t *m, const char *seed, uint16_t *y)
{
    setenv("NEURON_RT_STOCHASTIC_ROUNDING_SEED", seed, 1);
    struct io io;
    io_make(&io, 1.0f + 1.0f / 1024.0f); /* between two bf16 neighbours */
    nrt_tensor_t *out = NULL;
    nrt_tensor_set_t *outs = NULL;
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 128 * 4 * 2, "y", &out),
                     NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&outs), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(outs, "y", out), NRT_SUCCESS);
    assert_int_equal(nrt_execute(m, io.in, outs), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(out, y, 0, 128 * 4 * 2), NRT_SUCCESS);
    nrt_tensor_free(&out);
    nrt_destroy_tensor_set(&outs);
    io_free(&io);
}

static void test_stochastic_rounding(void **state)
{
    (void)state;
    static const char text[] =
        ".input  x f32 [128, 4]\n"
        ".output y bf16 [128, 4]\n"
        "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 src=hbm:x[[4,128], 0, [1,4]]:f32 signal=s0+=1\n"
        "dve.tensor_copy dst=sbuf[0:128, 64, [1,4]]:bf16 src=sbuf[0:128, 0, [1,4]]:f32 "
        "wait=s0>=1 signal=s1+=1\n"
        "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:bf16 src=sbuf[0:128, 64, [1,4]]:bf16 "
        "wait=s1>=1\n";
    trnemu_kernel_t *k = NULL;
    assert_int_equal(trnemu_kernel_create("sr", &k), NRT_SUCCESS);
    if (trnemu_kernel_assemble(k, text, sizeof text - 1) != NRT_SUCCESS)
        fail_msg("assemble: %s", trnemu_kernel_error(k));
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(trnemu_kernel_write(k, &bytes, &size), NRT_SUCCESS);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(bytes, size, 0, -1, &m), NRT_SUCCESS);
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    uint16_t rne[512], a[512], b[512], c[512];
    unsetenv("NEURON_RT_STOCHASTIC_ROUNDING_EN");
    sr_run(m, "1", rne);
    for (int i = 0; i < 512; i++)
        assert_int_equal(rne[i], 0x3f80); /* 1 + 2^-10 rounds to nearest: 1.0 */
    setenv("NEURON_RT_STOCHASTIC_ROUNDING_EN", "1", 1);
    sr_run(m, "1", a);
    setenv("NEURON_RT_STOCHASTIC_ROUNDING_EN", "true", 1);  /* the same boolean */
    sr_run(m, "1", b);
    sr_run(m, "2", c);
    unsetenv("NEURON_RT_STOCHASTIC_ROUNDING_EN");
    unsetenv("NEURON_RT_STOCHASTIC_ROUNDING_SEED");
    int up = 0;
    for (int i = 0; i < 512; i++) {
        assert_true(a[i] == 0x3f80 || a[i] == 0x3f81); /* one of the two neighbours */
        up += a[i] == 0x3f81;
    }
    assert_true(up > 0 && up < 128); /* rounds up with probability 1/8 */
    assert_memory_equal(a, b, sizeof a);  /* same seed, same bits */
    assert_memory_not_equal(a, c, sizeof a);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* Executing with a freed input tensor: one line, saying it was freed. */
static void test_freed_input(void **state)
{
    (void)state;
    const char *lines[] = {load_x, "sp.nop signal=s1+=1", store_y};
    nrt_model_t *m = ex_build(lines, 3);
    struct io io;
    io_make(&io, 1.0f);
    nrt_tensor_free(&io.x);
    char buf[4096];
    it_log_begin();
    NRT_STATUS st = nrt_execute(m, io.in, io.out);
    int n = it_log_end(buf, sizeof buf);
    assert_int_not_equal(st, NRT_SUCCESS);
    assert_int_equal(n, 1);
    assert_non_null(strstr(buf, "freed"));
    io_free(&io);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* The builder refuses a DMA whose HBM offset is not a multiple of the
 * element size (issue 13), with one line naming the operand. */
static void test_unaligned_hbm_offset(void **state)
{
    (void)state;
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    assert_int_equal(trnemu_kernel_create("unaligned", &k), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    char buf[4096];
    it_log_begin();
    NRT_STATUS st = trnemu_kernel_append(k, "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 "
                                            "src=hbm:x[[4,128], 2, [1,4]]:f32");
    if (st == NRT_SUCCESS) {
        void *bytes = NULL;
        size_t size = 0;
        st = trnemu_kernel_write(k, &bytes, &size);
        trnemu_kernel_buffer_free(bytes);
    }
    int n = it_log_end(buf, sizeof buf);
    assert_int_not_equal(st, NRT_SUCCESS);
    assert_int_equal(n, 1);
    assert_non_null(strstr(trnemu_kernel_error(k), "not a multiple of the 4-byte element size"));
    trnemu_kernel_free(k);
}

/* A tensor name of 256 bytes or more cannot fit nrt_tensor_info_t: the
 * kernel is refused at build time rather than its name truncated. */
static void test_long_tensor_name(void **state)
{
    (void)state;
    char name[300];
    memset(name, 'n', sizeof name - 1);
    name[sizeof name - 1] = '\0';
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    assert_int_equal(trnemu_kernel_create("longname", &k), NRT_SUCCESS);
    char buf[4096];
    it_log_begin();
    NRT_STATUS st = trnemu_kernel_add_input(k, name, NRT_DTYPE_FLOAT32, shape, 2);
    if (st == NRT_SUCCESS) {
        assert_int_equal(trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
        void *bytes = NULL;
        size_t size = 0;
        st = trnemu_kernel_write(k, &bytes, &size);
        trnemu_kernel_buffer_free(bytes);
    }
    int n = it_log_end(buf, sizeof buf);
    assert_int_not_equal(st, NRT_SUCCESS);
    assert_int_equal(n, 1);
    trnemu_kernel_free(k);
}

/* Closing send/receive on an LNC that never connected is safe. */
static void test_sendrecv_close_unused(void **state)
{
    (void)state;
    char buf[4096];
    it_log_begin();
    NRT_STATUS st = nrt_async_sendrecv_close(0);
    int n = it_log_end(buf, sizeof buf);
    assert_int_equal(st, NRT_SUCCESS);
    assert_int_equal(n, 0);
}

/* The status details: nrta_cc_prepare refuses a communicator on a VNC
 * that does not exist, the sequence number nrta_get_sequence gives before
 * any request completed is one nrta_is_completed (and the completion
 * handle) accept, and closing send/receive with a communicator that never
 * connected fails as nrt_async_sendrecv.h says; one line per failure. */
static void test_status_details(void **state)
{
    (void)state;
    char buf[4096];
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "a");
    uint32_t group[2] = {0, 1};
    nrt_cc_comm_t comm = {group, 0, 2, 0, 2, 77};
    nrt_tensor_list_t l = {&a, 1};
    nrt_cc_context_t *ctx = NULL;
    it_log_begin();
    NRT_STATUS st = nrta_cc_prepare(&comm, &l, &l, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                    NRT_CC_ALLREDUCE, &ctx);
    int n = it_log_end(buf, sizeof buf);
    assert_int_equal(st, NRT_INVALID);
    assert_int_equal(n, 1);
    assert_null(ctx);

    nrta_seq_t seq;
    bool done = false;
    assert_int_equal(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &seq), NRT_SUCCESS);
    it_log_begin();
    st = nrta_is_completed(seq, &done);
    n = it_log_end(buf, sizeof buf);
    assert_int_equal(st, NRT_SUCCESS);
    assert_int_equal(n, 0);
    assert_true(done);
    int fd = -1;
    assert_int_equal(nrta_get_completion_handle(seq, &fd), NRT_SUCCESS);
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 1);
    close(fd);

    nrt_async_sendrecv_comm_t *c = NULL;
    assert_int_equal(nrt_async_sendrecv_init(0), NRT_SUCCESS);
    assert_int_equal(nrt_async_sendrecv_connect("127.0.0.1", 1, 0, &c), NRT_SUCCESS);
    it_log_begin();
    st = nrt_async_sendrecv_close(0);
    n = it_log_end(buf, sizeof buf);
    assert_int_equal(st, NRT_FAILURE);
    assert_int_equal(n, 1);
    nrt_tensor_free(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nan_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unaligned_hbm_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_tensor_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sendrecv_close_unused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_status_details, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_neff_and_info, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stochastic_rounding, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
