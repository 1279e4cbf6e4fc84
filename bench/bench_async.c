/*
 * bench_async.c: executions per second of many small executions through
 * the nrta_* queues, on 1 LNC and on 4 LNCs (on 4 chips), as a ratio of
 * the same executions done with nrt_execute one after the other in the
 * same run, and nrt_execute while a device profile records every
 * execution (the profiling overhead). The kernel copies a [128, 4] f32 tensor through SBUF: the
 * figures measure the runtime's per-execution cost, not the engines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_profile.h"
#include "trnemu/trnemu.h"

enum { EXECS = 4000, LNCS = 4 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    fprintf(stderr, "bench-async: %s\n", what);
    exit(1);
}

/* One model with its own tensors on one VNC. */
struct unit {
    nrt_model_t *m;              /* the copy kernel */
    nrt_tensor_t *x, *y;         /* its input and output */
    nrt_tensor_set_t *in, *out;  /* their sets */
};

static void unit_make(struct unit *u, const void *neff, size_t size, int vnc)
{
    if (nrt_load(neff, size, vnc, -1, &u->m) != NRT_SUCCESS ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 2048, "x", &u->x) != NRT_SUCCESS ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, 2048, "y", &u->y) != NRT_SUCCESS ||
        nrt_allocate_tensor_set(&u->in) != NRT_SUCCESS ||
        nrt_allocate_tensor_set(&u->out) != NRT_SUCCESS ||
        nrt_add_tensor_to_tensor_set(u->in, "x", u->x) != NRT_SUCCESS ||
        nrt_add_tensor_to_tensor_set(u->out, "y", u->y) != NRT_SUCCESS)
        die("setting up a model");
}

static void *build_kernel(size_t *size)
{
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    void *bytes = NULL;
    if (trnemu_kernel_create("copy", &k) != NRT_SUCCESS ||
        trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2) != NRT_SUCCESS ||
        trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2) != NRT_SUCCESS ||
        trnemu_kernel_append(k, "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 "
                                "src=hbm:x[[4,128], 0, [1,4]]:f32 signal=s0+=1") != NRT_SUCCESS ||
        trnemu_kernel_append(k, "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:f32 "
                                "src=sbuf[0:128, 0, [1,4]]:f32 wait=s0>=1") != NRT_SUCCESS ||
        trnemu_kernel_write(k, &bytes, size) != NRT_SUCCESS)
        die("building the copy kernel");
    trnemu_kernel_free(k);
    return bytes;
}

/* Schedule `per` executions on each of n units, round robin, retrying on
 * NRT_QUEUE_FULL; return once all are complete. */
static void run_async(struct unit *u, int n, int per)
{
    nrta_seq_t last[LNCS] = {0};
    for (int i = 0; i < per; i++)
        for (int k = 0; k < n; k++) {
            NRT_STATUS st;
            while ((st = nrta_execute_schedule(u[k].m, u[k].in, u[k].out, 0, NULL, &last[k])) ==
                   NRT_QUEUE_FULL)
                usleep(20);
            if (st != NRT_SUCCESS)
                die("nrta_execute_schedule failed");
        }
    for (int k = 0; k < n; k++) {
        bool done = false;
        while (nrta_is_completed(last[k], &done) == NRT_SUCCESS && !done)
            usleep(20);
    }
}

int main(void)
{
    setenv("NEURON_RT_LOG_LEVEL", "ERROR", 0);
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        die("nrt_init failed");
    size_t size;
    void *neff = build_kernel(&size);
    struct unit u[LNCS];
    const int vncs[LNCS] = {0, 4, 8, 12};  /* trn2.48xlarge, LNC=2: four chips */
    for (int k = 0; k < LNCS; k++)
        unit_make(&u[k], neff, size, vncs[k]);
    run_async(u, 1, 100);  /* warm up threads and pages */
    for (int i = 0; i < 100; i++)
        nrt_execute(u[0].m, u[0].in, u[0].out);

    double t0 = now_s();
    for (int i = 0; i < EXECS; i++)
        if (nrt_execute(u[0].m, u[0].in, u[0].out) != NRT_SUCCESS)
            die("nrt_execute failed");
    double sync = EXECS / (now_s() - t0);
    t0 = now_s();
    run_async(u, 1, EXECS);
    double one = EXECS / (now_s() - t0);
    t0 = now_s();
    run_async(u, LNCS, EXECS / LNCS);
    double four = EXECS / (now_s() - t0);

    /* The same nrt_execute loop with a device profile being recorded. */
    const char *prof = "/tmp/trnemu-bench-async-profile.json";
    if (nrt_profile_start(u[0].m, prof) != NRT_SUCCESS)
        die("nrt_profile_start failed");
    t0 = now_s();
    for (int i = 0; i < EXECS; i++)
        if (nrt_execute(u[0].m, u[0].in, u[0].out) != NRT_SUCCESS)
            die("nrt_execute failed");
    double profiled = EXECS / (now_s() - t0);
    if (nrt_profile_stop(prof) != NRT_SUCCESS)
        die("nrt_profile_stop failed");
    unlink(prof);

    printf("small executions ([128,4] f32 copy kernel), %d each:\n", EXECS);
    printf("  nrt_execute, one after another   %8.0f exec/s  (baseline)\n", sync);
    printf("  nrta_execute_schedule, 1 LNC     %8.0f exec/s  %.2fx nrt_execute\n", one,
           one / sync);
    printf("  nrta_execute_schedule, 4 LNCs    %8.0f exec/s  %.2fx nrt_execute\n", four,
           four / sync);
    printf("  nrt_execute, profile recording   %8.0f exec/s  %.2fx nrt_execute (overhead %.1f%%)\n",
           profiled, profiled / sync, 100.0 * (sync / profiled - 1.0));
    printf("  (host: %ld cores online)\n", sysconf(_SC_NPROCESSORS_ONLN));
    trnemu_kernel_buffer_free(neff);
    nrt_close();
    return 0;
}
