/*
 * record_prog.c: a program for the call-log tests (test_record.c) to record
 * and replay: `record_prog SCENARIO`, linked against libnrt.so.1 like any
 * user program. Scenarios:
 *   nan      a kernel computing log(-1): NRT_EXEC_COMPLETED_WITH_NUM_ERR
 *   ok       the same kernel on 2.0: success
 *   signal   raises SIGUSR1 between calls and executes twice
 *   threads  two threads writing, copying and reading their own tensors
 *   exec_threads  two threads executing the kernel (on VNCs 0 and 1, one
 *            run of log(-1) among them) while the main thread raises
 *            SIGUSR1 and saves snapshots (trnemu_snapshot_save into the
 *            file in argv[2]): snapshots stop executions (the threads
 *            suite runs it under TSan, with TRNEMU_RECORD,
 *            TRNEMU_SNAPSHOT_AT and TRNEMU_SNAPSHOT_ON_ERROR set)
 *   misc     batches, memset, slices, host tensors, queries, failing calls
 * Exit 0 when every call returned what the scenario expects.
 */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_experimental.h"
#include "trnemu/trnemu.h"

static _Atomic int failures; /* threads count theirs too */

static void expect(NRT_STATUS got, NRT_STATUS want, const char *what)
{
    if (got != want) {
        fprintf(stderr, "record_prog: %s returned %d, expected %d\n", what, (int)got, (int)want);
        failures++;
    }
}

/* A [128, 4] f32 kernel y = log(x), loaded on VNCs vnc.. (count, -1: all). */
static nrt_model_t *build_log_kernel_on(int32_t vnc, int32_t count)
{
    static const char *const lines[] = {
        "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 src=hbm:x[[4,128], 0, [1,4]]:f32 signal=s0+=1",
        ("act.activation dst=sbuf[0:128, 16, [1,4]]:f32 data=sbuf[0:128, 0, [1,4]]:f32 "
         "func=log wait=s0>=1 signal=s1+=1"),
        "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:f32 src=sbuf[0:128, 16, [1,4]]:f32 wait=s1>=1",
    };
    const uint32_t shape[2] = {128, 4};
    trnemu_kernel_t *k = NULL;
    void *bytes = NULL;
    size_t size = 0;
    nrt_model_t *m = NULL;
    if (trnemu_kernel_create("log", &k) != NRT_SUCCESS ||
        trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2) != NRT_SUCCESS ||
        trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2) != NRT_SUCCESS)
        exit(2);
    for (size_t i = 0; i < 3; i++)
        if (trnemu_kernel_append(k, lines[i]) != NRT_SUCCESS)
            exit(2);
    if (trnemu_kernel_write(k, &bytes, &size) != NRT_SUCCESS)
        exit(2);
    expect(nrt_load(bytes, size, vnc, count, &m), NRT_SUCCESS, "nrt_load");
    /* a buffer larger than the struct, full of garbage: the call writes
     * only the struct, and replay must compare only that */
    static unsigned char info[4096];
    memset(info, 0xab, sizeof info);
    size_t info_out = 0;
    expect(nrt_get_model_info(m, (nrt_model_info_t *)(void *)info, sizeof info, &info_out),
           NRT_SUCCESS, "model info");
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    return m;
}

static nrt_model_t *build_log_kernel(void)
{
    return build_log_kernel_on(0, -1);
}

/* Run the log kernel (tensors on VNC vnc) on x = xval; return the status. */
static NRT_STATUS run_log_on(nrt_model_t *m, int vnc, float xval, float *y0)
{
    float x[128 * 4], y[128 * 4];
    for (int i = 0; i < 128 * 4; i++)
        x[i] = xval + (float)i * 0.001f;
    nrt_tensor_t *tx = NULL, *ty = NULL;
    nrt_tensor_set_t *in = NULL, *out = NULL;
    expect(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, sizeof x, "x", &tx), NRT_SUCCESS, "alloc x");
    expect(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, sizeof y, "y", &ty), NRT_SUCCESS, "alloc y");
    expect(nrt_tensor_write(tx, x, 0, sizeof x), NRT_SUCCESS, "write x");
    expect(nrt_allocate_tensor_set(&in), NRT_SUCCESS, "set in");
    expect(nrt_allocate_tensor_set(&out), NRT_SUCCESS, "set out");
    expect(nrt_add_tensor_to_tensor_set(in, "x", tx), NRT_SUCCESS, "add x");
    expect(nrt_add_tensor_to_tensor_set(out, "y", ty), NRT_SUCCESS, "add y");
    NRT_STATUS st = nrt_execute(m, in, out);
    expect(nrt_tensor_read(ty, y, 0, sizeof y), NRT_SUCCESS, "read y");
    *y0 = y[0];
    nrt_tensor_free(&tx);
    nrt_tensor_free(&ty);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    return st;
}

static NRT_STATUS run_log(nrt_model_t *m, float xval, float *y0)
{
    return run_log_on(m, 0, xval, y0);
}

static void scenario_kernel(float xval, NRT_STATUS want, int signal_between)
{
    nrt_model_t *m = build_log_kernel();
    float y0 = 0;
    if (signal_between)
        raise(SIGUSR1);
    expect(run_log(m, xval, &y0), want, "nrt_execute");
    if (signal_between) {
        raise(SIGUSR1);
        expect(run_log(m, 3.0f, &y0), NRT_SUCCESS, "second nrt_execute");
    }
    if (want == NRT_SUCCESS && !(fabsf(y0 - logf(xval)) < 1e-5f) && !signal_between)
        failures++;
    expect(nrt_unload(m), NRT_SUCCESS, "nrt_unload");
}

static void *thread_body(void *arg)
{
    int id = (int)(intptr_t)arg;
    char buf[4096], back[4096];
    for (int round = 0; round < 20; round++) {
        nrt_tensor_t *a = NULL, *b = NULL;
        memset(buf, id * 16 + round, sizeof buf);
        expect(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof buf, "t", &a), NRT_SUCCESS, "alloc");
        expect(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof buf, "u", &b), NRT_SUCCESS, "alloc");
        expect(nrt_tensor_write(a, buf, 0, sizeof buf), NRT_SUCCESS, "write");
        expect(nrt_tensor_copy(a, 0, b, 0, sizeof buf), NRT_SUCCESS, "copy");
        expect(nrt_tensor_read(b, back, 0, sizeof back), NRT_SUCCESS, "read");
        if (memcmp(buf, back, sizeof buf) != 0)
            failures++;
        nrt_tensor_free(&a);
        nrt_tensor_free(&b);
    }
    return NULL;
}

static void scenario_threads(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_body, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

/* One executing thread: its own model on VNC id - 1, four runs. */
static void *exec_body(void *arg)
{
    int id = (int)(intptr_t)arg;
    nrt_model_t *m = build_log_kernel_on(id - 1, 1);
    for (int round = 0; round < 4; round++) {
        bool bad = id == 2 && round == 1;  /* one failing execution */
        float y0 = 0;
        expect(run_log_on(m, id - 1, bad ? -1.0f : 2.0f, &y0),
               bad ? NRT_EXEC_COMPLETED_WITH_NUM_ERR : NRT_SUCCESS, "threaded nrt_execute");
        if (!bad && !(fabsf(y0 - logf(2.0f)) < 1e-5f))
            failures++;
    }
    expect(nrt_unload(m), NRT_SUCCESS, "nrt_unload");
    return NULL;
}

static void scenario_exec_threads(const char *snap_file)
{
    pthread_t t[2];
    remove(snap_file);  /* a new file each run */
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, exec_body, (void *)(intptr_t)(i + 1));
    for (int i = 0; i < 2; i++) {
        raise(SIGUSR1);  /* a snapshot at the next call of some thread */
        int64_t id = -1;
        expect(trnemu_snapshot_save(snap_file, "threads", &id), NRT_SUCCESS,
               "trnemu_snapshot_save");
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
}

static void scenario_misc(void)
{
    uint32_t n = 0;
    expect(nrt_get_visible_vnc_count(&n), NRT_SUCCESS, "visible count");
    nrt_tensor_t *t = NULL, *h = NULL, *s = NULL;
    expect(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8192, "dev", &t), NRT_SUCCESS, "alloc dev");
    expect(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 4096, "host", &h), NRT_SUCCESS, "alloc host");
    expect(nrt_tensor_memset(t, 0, 0x5a, 8192), NRT_SUCCESS, "memset");
    expect(nrt_tensor_allocate_slice(t, 1024, 2048, "slice", &s), NRT_SUCCESS, "slice");
    char w1[512], w2[256], r1[512], r2[1024];
    memset(w1, 1, sizeof w1);
    memset(w2, 2, sizeof w2);
    nrt_tensor_batch_op_t wops[2] = {{0, sizeof w1, w1}, {4096, sizeof w2, w2}};
    nrt_tensor_batch_op_t rops[2] = {{0, sizeof r1, r1}, {3968, sizeof r2, r2}};
    nrt_tensor_batch_t wb = {t, wops, 2}, rb = {t, rops, 2};
    expect(nrt_tensor_write_batch(&wb, 1, false), NRT_SUCCESS, "write batch");
    expect(nrt_tensor_read_batch(&rb, 1, false), NRT_SUCCESS, "read batch");
    expect(nrt_tensor_copy(s, 0, h, 0, 2048), NRT_SUCCESS, "copy slice to host");
    if (nrt_tensor_get_size(s) != 2048)
        failures++;
    char big[64];
    expect(nrt_tensor_write(h, big, 4090, sizeof big), NRT_INVALID, "write past the end");
    expect(nrt_tensor_read(NULL, big, 0, 8), NRT_INVALID, "read from NULL");
    /* a huge size fails; replay must re-issue it and see the same failure */
    expect(nrt_tensor_read(t, big, 0, SIZE_MAX), NRT_INVALID, "read SIZE_MAX bytes");
    nrt_tensor_free(&s);
    nrt_tensor_free(&h);
    nrt_tensor_free(&t);
}

int main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && strcmp(argv[1], "exec_threads") == 0)) {
        fprintf(stderr, "usage: record_prog nan|ok|signal|threads|misc|exec_threads FILE\n");
        return 2;
    }
    expect(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS, "nrt_init");
    if (strcmp(argv[1], "nan") == 0)
        scenario_kernel(-1.0f, NRT_EXEC_COMPLETED_WITH_NUM_ERR, 0);
    else if (strcmp(argv[1], "ok") == 0)
        scenario_kernel(2.0f, NRT_SUCCESS, 0);
    else if (strcmp(argv[1], "signal") == 0)
        scenario_kernel(2.0f, NRT_SUCCESS, 1);
    else if (strcmp(argv[1], "threads") == 0)
        scenario_threads();
    else if (strcmp(argv[1], "misc") == 0)
        scenario_misc();
    else if (strcmp(argv[1], "exec_threads") == 0)
        scenario_exec_threads(argv[2]);
    else
        return 2;
    nrt_close();
    return failures == 0 ? 0 : 1;
}
