/*
 * bench_util.h: what the benchmarks share: thread and process CPU time (figures
 * stay meaningful on a busy host, where wall-clock time would count other
 * processes' slices), a fatal-error exit, the memcpy baseline, and the
 * thread counts a scaling benchmark measures.
 */
#ifndef TRNEMU_BENCH_UTIL_H
#define TRNEMU_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Seconds of CPU time of the calling thread. */
static inline double bench_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Seconds of CPU time of the whole process (every thread). */
static inline double bench_proc_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Print "prog: what" and exit 1. */
static inline void bench_die(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s\n", prog, what);
    exit(1);
}

/* Best seconds of one memcpy of n bytes over `rounds` rounds. */
static inline double bench_memcpy_best(size_t n, int rounds)
{
    char *a = malloc(n), *b = malloc(n);
    if (a == NULL || b == NULL)
        bench_die("bench", "out of memory");
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_cpu_s();
        memcpy(b, a, n);
        double t = bench_cpu_s() - t0;
        best = t < best ? t : best;
    }
    free(a);
    free(b);
    return best;
}

/* Most thread counts a scaling benchmark measures (1, 2, 4, ... 64). */
#define BENCH_MAX_COUNTS 7

/* The thread counts a scaling benchmark measures: 1, 2, 4, 8, 16 (and 32,
 * 64 when BENCH_MAX_THREADS asks for them), those from `first` up, each no
 * more than the host's online CPUs; BENCH_MAX_THREADS=N lowers the top
 * (or raises it past the CPUs, to oversubscribe on purpose). A line for
 * every count skipped says why (`what`: "threads", "ranks", ...). Returns how many went into out. */
static inline int bench_thread_counts(const char *prog, const char *what, unsigned first,
                                      unsigned *out)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("BENCH_MAX_THREADS");
    long top = env != NULL && atol(env) > 0 ? atol(env) : (cpus > 0 ? cpus : 1);
    unsigned last = top > 16 ? 64u : 16u;
    int n = 0;
    for (unsigned t = 1; t <= last && n < BENCH_MAX_COUNTS; t *= 2) {
        if (t < first)
            continue;
        if ((long)t > top) {
            printf("%s: %u %s skipped: the host has %ld online CPUs%s\n", prog, t, what, cpus,
                   env != NULL ? " (BENCH_MAX_THREADS caps the counts)" : "");
            continue;
        }
        out[n++] = t;
    }
    return n;
}

#endif
