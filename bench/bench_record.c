/*
 * bench_record.c: what recording the call log (TRNEMU_RECORD) costs.
 *
 *   matmul   the 4096^3 bf16 matmul example end to end (init, load, write
 *            both 32 MiB inputs, execute, read the 64 MiB output, close):
 *            wall time with recording against without, same run, best of
 *            three alternating rounds (target: under 10% more)
 *   small    per-call cost of a 4 KiB nrt_tensor_write and of
 *            nrt_tensor_get_size, recording off and on
 *
 * Recording is switched by setting TRNEMU_RECORD before each nrt_init
 * (the configuration is read again there).
 *
 *   bench-record BUILD/examples
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../examples/example_file.h"
#include "nrt/nrt.h"

#define N 4096

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of every thread of the process so far. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void die(const char *what)
{
    fprintf(stderr, "bench-record: %s\n", what);
    exit(1);
}

static void check(NRT_STATUS st, const char *what)
{
    if (st != NRT_SUCCESS)
        die(what);
}

/* Switch recording for the next nrt_init. */
static void set_recording(const char *db)
{
    if (db != NULL) {
        setenv("TRNEMU_RECORD", db, 1);
    } else {
        unsetenv("TRNEMU_RECORD");
    }
}

/* One end-to-end run of the matmul; seconds of wall time (and of CPU
 * time in *cpu). Closing the log (its final checkpoint) is inside. */
static double matmul_once(const void *neff, size_t neff_size, const uint16_t *a, const uint16_t *b,
                          float *c, const char *db, double *cpu)
{
    set_recording(db);
    double t0 = now_s(), c0 = cpu_s();
    check(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), "nrt_init");
    nrt_model_t *m = NULL;
    check(nrt_load(neff, neff_size, 0, -1, &m), "nrt_load");
    nrt_tensor_t *ta = NULL, *tb = NULL, *tc = NULL;
    nrt_tensor_set_t *in = NULL, *out = NULL;
    size_t ab = (size_t)N * N * 2, cb = (size_t)N * N * 4;
    check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ab, "A", &ta), "allocate A");
    check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ab, "B", &tb), "allocate B");
    check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, cb, "C", &tc), "allocate C");
    check(nrt_tensor_write(ta, a, 0, ab), "write A");
    check(nrt_tensor_write(tb, b, 0, ab), "write B");
    check(nrt_allocate_tensor_set(&in), "set");
    check(nrt_allocate_tensor_set(&out), "set");
    check(nrt_add_tensor_to_tensor_set(in, "A", ta), "add A");
    check(nrt_add_tensor_to_tensor_set(in, "B", tb), "add B");
    check(nrt_add_tensor_to_tensor_set(out, "C", tc), "add C");
    check(nrt_execute(m, in, out), "execute");
    check(nrt_tensor_read(tc, c, 0, cb), "read C");
    nrt_tensor_free(&ta);
    nrt_tensor_free(&tb);
    nrt_tensor_free(&tc);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    check(nrt_unload(m), "unload");
    nrt_close();
    /* The next nrt_init without TRNEMU_RECORD closes the log: count it here. */
    set_recording(NULL);
    check(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), "nrt_init");
    nrt_close();
    *cpu = cpu_s() - c0;
    return now_s() - t0;
}

/* Per-call seconds of n small calls on an initialised runtime. */
static void small_calls(double *write_s, double *size_s)
{
    check(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), "nrt_init");
    nrt_tensor_t *t = NULL;
    char buf[4096];
    memset(buf, 7, sizeof buf);
    check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof buf, "t", &t), "allocate");
    const int nw = 20000, ns = 200000;
    double t0 = now_s();
    for (int i = 0; i < nw; i++)
        check(nrt_tensor_write(t, buf, 0, sizeof buf), "write");
    *write_s = (now_s() - t0) / nw;
    size_t sum = 0;
    t0 = now_s();
    for (int i = 0; i < ns; i++)
        sum += nrt_tensor_get_size(t);
    *size_s = (now_s() - t0) / ns;
    if (sum != (size_t)ns * sizeof buf)
        die("nrt_tensor_get_size");
    nrt_tensor_free(&t);
    nrt_close();
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: bench-record BUILD/examples");
    char path[4096], db[128];
    snprintf(path, sizeof path, "%s/matmul_4096.neff", argv[1]);
    snprintf(db, sizeof db, "/tmp/bench-record-%ld.db", (long)getpid());
    size_t neff_size = 0;
    void *neff = example_read_file(path, &neff_size);
    if (neff == NULL)
        die("cannot read matmul_4096.neff");
    uint16_t *a = malloc((size_t)N * N * 2), *b = malloc((size_t)N * N * 2);
    float *c = malloc((size_t)N * N * 4);
    if (a == NULL || b == NULL || c == NULL)
        die("out of memory");
    uint32_t x = 12345;
    for (size_t i = 0; i < (size_t)N * N; i++) {
        x = x * 1664525u + 1013904223u;
        a[i] = (uint16_t)(0x3c00 | (x >> 25));          /* bf16 in [0.0078, 0.0156) */
        b[i] = (uint16_t)(0x3f80 | ((x >> 9) & 0x7f));   /* bf16 in [1, 2) */
    }
    setenv("NEURON_RT_LOG_LEVEL", "ERROR", 0);
    double best_off = 1e30, best_on = 1e30, cpu_off = 1e30, cpu_on = 1e30, cpu;
    for (int round = 0; round < 3; round++) {
        double off = matmul_once(neff, neff_size, a, b, c, NULL, &cpu);
        cpu_off = cpu < cpu_off ? cpu : cpu_off;
        double on = matmul_once(neff, neff_size, a, b, c, db, &cpu);
        cpu_on = cpu < cpu_on ? cpu : cpu_on;
        best_off = off < best_off ? off : best_off;
        best_on = on < best_on ? on : best_on;
    }
    struct stat st;
    double mib = stat(db, &st) == 0 ? (double)st.st_size / (1 << 20) : 0;
    printf("matmul 4096 end to end: %.3f s; recording: %.3f s (%+.1f%%, target < +10%%); "
           "log %.1f MiB\n", best_off, best_on, 100.0 * (best_on / best_off - 1.0), mib);
    printf("  CPU time of all threads: %.3f s; recording: %.3f s (%+.1f%%)\n", cpu_off, cpu_on,
           100.0 * (cpu_on / cpu_off - 1.0));

    double w_off, s_off, w_on, s_on;
    set_recording(NULL);
    small_calls(&w_off, &s_off);
    set_recording(db);
    small_calls(&w_on, &s_on);
    set_recording(NULL);
    printf("4 KiB nrt_tensor_write: %.0f ns per call; recording: %.0f ns\n", w_off * 1e9,
           w_on * 1e9);
    printf("nrt_tensor_get_size: %.1f ns per call; recording: %.0f ns\n", s_off * 1e9,
           s_on * 1e9);
    char side[160];
    unlink(db);
    snprintf(side, sizeof side, "%s-wal", db);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", db);
    unlink(side);
    free(a);
    free(b);
    free(c);
    free(neff);
    return 0;
}
