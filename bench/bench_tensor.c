/*
 * bench_tensor.c: tensor data movement through the public API, as ratios of
 * memcpy measured in the same run, and the resident memory that nrt_init
 * costs on the largest emulated machines.
 *
 *   write  host buffer -> device tensor   (nrt_tensor_write)
 *   read   device tensor -> host buffer   (nrt_tensor_read)
 *   copy   device tensor -> device tensor (nrt_tensor_copy, same VNC)
 *
 * Each figure is the best of several timed rounds over buffers that were
 * touched once before (steady state); the first write into fresh device
 * memory, which pays the host page faults, is reported on its own line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nrt/nrt.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum op { OP_MEMCPY, OP_WRITE, OP_READ, OP_COPY };

struct bufs {
    char *h1, *h2;          /* host buffers */
    nrt_tensor_t *d1, *d2;  /* device tensors on VNC 0 */
    size_t size;            /* bytes per buffer */
};

static int run_op(struct bufs *b, enum op op)
{
    switch (op) {
    case OP_MEMCPY: memcpy(b->h2, b->h1, b->size); return 0;
    case OP_WRITE: return nrt_tensor_write(b->d1, b->h1, 0, b->size) != NRT_SUCCESS;
    case OP_READ: return nrt_tensor_read(b->d1, b->h2, 0, b->size) != NRT_SUCCESS;
    case OP_COPY: return nrt_tensor_copy(b->d1, 0, b->d2, 0, b->size) != NRT_SUCCESS;
    }
    return 1;
}

/* Bytes per second: best of 5 rounds of enough repetitions for ~40 ms. */
static double measure(struct bufs *b, enum op op)
{
    size_t reps = 1;
    while (reps < (1u << 20)) {
        double t0 = now_s();
        for (size_t i = 0; i < reps; i++)
            run_op(b, op);
        if (now_s() - t0 > 0.04)
            break;
        reps *= 2;
    }
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = now_s();
        for (size_t i = 0; i < reps; i++)
            if (run_op(b, op))
                return 0;
        double t = (now_s() - t0) / (double)reps;
        if (t < best)
            best = t;
    }
    return (double)b->size / best;
}

static int bench_size(size_t size)
{
    struct bufs b = {malloc(size), malloc(size), NULL, NULL, size};
    if (b.h1 == NULL || b.h2 == NULL ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, "d1", &b.d1) != NRT_SUCCESS ||
        nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, size, "d2", &b.d2) != NRT_SUCCESS)
        return 1;
    memset(b.h1, 0x5a, size);
    memset(b.h2, 0xa5, size);
    double t0 = now_s();
    run_op(&b, OP_WRITE);
    double first = (double)size / (now_s() - t0);
    run_op(&b, OP_COPY);
    double base = measure(&b, OP_MEMCPY);
    const char *names[] = {"memcpy", "write", "read", "copy"};
    for (int op = OP_MEMCPY; op <= OP_COPY; op++) {
        double bw = op == OP_MEMCPY ? base : measure(&b, (enum op)op);
        printf("  %-9zu %-7s %8.2f GB/s   ratio to memcpy %.2f\n", size, names[op], bw / 1e9,
               bw / base);
    }
    printf("  %-9zu %-7s %8.2f GB/s   ratio to memcpy %.2f (first touch of fresh device pages)\n",
           size, "write0", first / 1e9, first / base);
    nrt_tensor_free(&b.d1);
    nrt_tensor_free(&b.d2);
    free(b.h1);
    free(b.h2);
    return 0;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

static int bench_rss(const char *instance)
{
    setenv("TRNEMU_INSTANCE", instance, 1);
    long before = rss_kib();
    double t0 = now_s();
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        return 1;
    double t = now_s() - t0;
    long after = rss_kib();
    printf("  %-15s nrt_init %.1f ms, resident memory +%.1f MiB (total %.1f MiB)\n", instance,
           t * 1e3, (double)(after - before) / 1024.0, (double)after / 1024.0);
    nrt_close();
    return 0;
}

int main(void)
{
    int bad = 0;
    printf("resident memory after nrt_init (target: under 64 MiB for trn2u.48xlarge)\n");
    bad |= bench_rss("trn2.48xlarge");
    bad |= bench_rss("trn2u.48xlarge");
    setenv("TRNEMU_INSTANCE", "trn2.48xlarge", 1);
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        return 1;
    printf("tensor data movement (target: copy paths >= 0.8 of memcpy from 1 MiB up)\n");
    size_t sizes[] = {4096, 1u << 20, 256u << 20};
    for (size_t i = 0; i < 3; i++)
        bad |= bench_size(sizes[i]);
    nrt_close();
    return bad;
}
