/*
 * bench_kernels.c: the softmax and layernorm example kernels executed
 * through the public API (nrt_execute on device tensors already holding
 * their inputs), against the same operation sequence done op by op with
 * numpy, the approach of the Python NKI simulator (bench/numpy_kernels.py,
 * run in the same process tree, same shapes). Target: at least 5x faster.
 * Then the same executions with TRNEMU_THREADS=1, 2, 4, 8, 16 (those the
 * host has), each as a ratio to the 1-thread time of the same run; the
 * counts take turns over KB_PASSES passes and the best round of each
 * counts.
 *
 * Usage: bench-kernels EXAMPLES_DIR NUMPY_SCRIPT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../examples/example_file.h"
#include "bench_util.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#define KB_PASSES 4  /* passes over the thread counts, each a fresh runtime */
#define KB_ROUNDS 8  /* rounds of 20 executions per pass; the best counts */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds per nrt_execute of dir/name.neff (best of `rounds` rounds of 20). */
static double time_kernel(const char *dir, const char *name, int rounds)
{
    char path[4096];
    size_t size;
    snprintf(path, sizeof path, "%s/%s.neff", dir, name);
    void *neff = example_read_file(path, &size);
    nrt_model_t *m = NULL;
    nrt_tensor_info_array_t *info = NULL;
    nrt_tensor_set_t *in = NULL, *out = NULL;
    nrt_tensor_t *t[8] = {NULL};
    double best = -1;
    if (neff == NULL || nrt_load(neff, size, 0, -1, &m) != NRT_SUCCESS ||
        nrt_get_model_tensor_info(m, &info) != NRT_SUCCESS || info->tensor_count > 8)
        goto out;
    nrt_allocate_tensor_set(&in);
    nrt_allocate_tensor_set(&out);
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        nrt_tensor_info_t *ti = &info->tensor_array[i];
        if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name, &t[i]) !=
            NRT_SUCCESS)
            goto out;
        nrt_tensor_memset(t[i], 0, 0x3c, ti->size); /* finite, nonzero data */
        nrt_add_tensor_to_tensor_set(ti->usage == NRT_TENSOR_USAGE_INPUT ? in : out, ti->name,
                                     t[i]);
    }
    int reps = 20;
    for (int round = 0; round < rounds; round++) {
        double t0 = now_s();
        for (int r = 0; r < reps; r++)
            if (nrt_execute(m, in, out) != NRT_SUCCESS)
                goto out;
        double per = (now_s() - t0) / reps;
        if (best < 0 || per < best)
            best = per;
    }
out:
    for (int i = 0; i < 8; i++)
        nrt_tensor_free(&t[i]);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    if (info != NULL)
        nrt_free_model_tensor_info(info);
    if (m != NULL)
        nrt_unload(m);
    free(neff);
    return best;
}

/* Run the numpy script; fill the per-call times it prints. */
static int numpy_times(const char *script, double *softmax, double *layernorm)
{
    const char *pythons[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[4352];
        snprintf(cmd, sizeof cmd, "%s '%s' 50 2>/dev/null", pythons[i], script);
        FILE *p = popen(cmd, "r");
        if (p == NULL)
            continue;
        char name[32];
        double t;
        int got = 0;
        while (fscanf(p, "%31s %lf", name, &t) == 2) {
            if (strcmp(name, "softmax") == 0)
                *softmax = t, got |= 1;
            else if (strcmp(name, "layernorm") == 0)
                *layernorm = t, got |= 2;
        }
        if (pclose(p) == 0 && got == 3)
            return 0;
    }
    return -1;
}

/* Per-execution seconds of both kernels with TRNEMU_THREADS=threads (0:
 * as the environment has it). */
static int time_at(const char *dir, unsigned threads, int rounds, double *sm, double *ln)
{
    char v[16];
    snprintf(v, sizeof v, "%u", threads);
    if (threads > 0)
        setenv("TRNEMU_THREADS", v, 1);
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        return -1;
    *sm = time_kernel(dir, "softmax", rounds);
    *ln = time_kernel(dir, "layernorm", rounds);
    nrt_close();
    return *sm < 0 || *ln < 0 ? -1 : 0;
}

/* Per-execution times at every thread count against 1 thread (a split
 * must never make a kernel slower than one thread does). */
static void report_scaling(const unsigned *counts, int n, const double (*t)[2])
{
    printf("per execution with TRNEMU_THREADS=N, and 1-thread time / N-thread time "
           "(>= 1: no slower than one thread)\n");
    printf("  %-7s %12s %8s %12s %8s\n", "threads", "softmax us", "vs 1", "layernorm us",
           "vs 1");
    for (int i = 0; i < n; i++)
        printf("  %-7u %12.1f %8.2f %12.1f %8.2f\n", counts[i], t[i][0] * 1e6,
               t[0][0] / t[i][0], t[i][1] * 1e6, t[0][1] / t[i][1]);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench-kernels EXAMPLES_DIR NUMPY_SCRIPT\n");
        return 2;
    }
    unsigned counts[BENCH_MAX_COUNTS];
    double t[BENCH_MAX_COUNTS][2];
    int nc = bench_thread_counts("bench-kernels", "threads", 1, counts);
    for (int pass = 0; pass < KB_PASSES; pass++) /* counts alternate: load drifts alike */
        for (int i = 0; i < nc; i++) {
            double sm1, ln1;
            if (time_at(argv[1], counts[i], KB_ROUNDS, &sm1, &ln1) != 0) {
                printf("  %u threads: an execution failed\n", counts[i]);
                return 1;
            }
            t[i][0] = pass == 0 || sm1 < t[i][0] ? sm1 : t[i][0];
            t[i][1] = pass == 0 || ln1 < t[i][1] ? ln1 : t[i][1];
        }
    unsetenv("TRNEMU_THREADS");
    double sm = 0, ln = 0;
    if (time_at(argv[1], 0, 25, &sm, &ln) != 0)
        return 1;
    double np_sm = 0, np_ln = 0;
    int have_np = numpy_times(argv[2], &np_sm, &np_ln) == 0;
    printf("example kernels on trnemu (TRNEMU_THREADS unset) vs the same op sequence in "
           "numpy (target: >= 5x)\n");
    const char *names[2] = {"softmax", "layernorm"};
    double ours[2] = {sm, ln}, theirs[2] = {np_sm, np_ln};
    for (int i = 0; i < 2; i++) {
        printf("  %-10s trnemu %8.1f us", names[i], ours[i] * 1e6);
        if (have_np)
            printf("   numpy %8.1f us   speed-up %.1fx", theirs[i] * 1e6, theirs[i] / ours[i]);
        else
            printf("   (numpy not available)");
        printf("\n");
    }
    report_scaling(counts, nc, (const double (*)[2])t);
    return 0;
}
