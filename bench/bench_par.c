/*
 * bench_par.c: executions on several VNCs at once. The softmax example's
 * executions per second, through the public API, from host threads that
 * each drive one VNC of a trn2.48xlarge (LNC=2, four VNCs per chip):
 *   1 VNC, 1 thread               the baseline
 *   2 VNCs of one chip, 2 threads target: at least 1.8x on 2 host cores
 *   2 VNCs on 2 chips, 2 threads  for comparison
 *   2 VNCs of one chip, TRNEMU_THREADS=1  one execution computing at a
 *                                 time (a second runtime), near what one
 *                                 thread per chip gave
 * The cases take turns, round by round (BP_ROUNDS rounds of BP_SECONDS
 * each), so a change in the host's load touches them alike; the best
 * round counts, the worst is printed beside it, and so is the CPU time
 * per execution (every thread of the process), which a loaded host
 * disturbs less than the rate.
 *
 * Then N VNCs from N threads against 1 VNC, for N = 1, 2, 4, 8, 16 where
 * the host has the cores (bench_thread_counts).
 *
 * Then softmax and layernorm on one VNC from one thread with the core's
 * engines interleaved, as a team of threads and as the measured choice
 * picks (core_set_engine_threads), round by round.
 *
 * Then the LNC=2 case: the matmul_lnc2 example (each physical core of VNC
 * 0 computes half of a 1024 x 512 x 512 matmul, then they swap a tile and
 * meet at a barrier), executed from one thread, with the two cores
 * interleaved on the VNC's worker vs each on its own host thread
 * (exec_set_core_threads, the one internal call: this program links the
 * runtime's libraries rather than libnrt.so.1), rounds alternating the
 * same way, and for reference with TRNEMU_THREADS=1 (no thread splits
 * anything).
 *
 * Usage: bench-par EXAMPLES_DIR
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_util.h"
#include "devices/runtime/exec.h"
#include "emu/core/core.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#define BP_ROUNDS 10      /* rounds per case */
#define BP_SECONDS 0.5    /* length of one round */
#define BP_MAX_VNCS 16    /* VNCs one case uses at most */

static void *bp_neff;         /* softmax.neff */
static size_t bp_neff_size;   /* its bytes */

static double bp_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *bp_read(const char *dir, const char *name, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf != NULL && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The softmax model on one VNC, with its tensors. */
struct bp_vnc {
    int vnc;                      /* where it lives */
    nrt_model_t *m;               /* the model */
    nrt_tensor_info_array_t *info; /* its inputs and outputs */
    nrt_tensor_t *t[8];           /* their device tensors */
    nrt_tensor_set_t *in, *out;   /* the sets */
};

static bool bp_setup_neff(struct bp_vnc *b, int vnc, const void *neff, size_t neff_size)
{
    memset(b, 0, sizeof *b);
    b->vnc = vnc;
    if (nrt_load(neff, neff_size, vnc, -1, &b->m) != NRT_SUCCESS ||
        nrt_get_model_tensor_info(b->m, &b->info) != NRT_SUCCESS || b->info->tensor_count > 8 ||
        nrt_allocate_tensor_set(&b->in) != NRT_SUCCESS ||
        nrt_allocate_tensor_set(&b->out) != NRT_SUCCESS)
        return false;
    for (uint64_t i = 0; i < b->info->tensor_count; i++) {
        nrt_tensor_info_t *ti = &b->info->tensor_array[i];
        if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, ti->size, ti->name, &b->t[i]) !=
            NRT_SUCCESS)
            return false;
        nrt_tensor_memset(b->t[i], 0, 0x3c, ti->size); /* finite, nonzero data */
        nrt_add_tensor_to_tensor_set(ti->usage == NRT_TENSOR_USAGE_INPUT ? b->in : b->out,
                                     ti->name, b->t[i]);
    }
    return nrt_execute(b->m, b->in, b->out) == NRT_SUCCESS;  /* cores made, pages touched */
}

static bool bp_setup(struct bp_vnc *b, int vnc)
{
    return bp_setup_neff(b, vnc, bp_neff, bp_neff_size);
}

static void bp_teardown(struct bp_vnc *b)
{
    for (int i = 0; i < 8; i++)
        nrt_tensor_free(&b->t[i]);
    nrt_destroy_tensor_set(&b->in);
    nrt_destroy_tensor_set(&b->out);
    if (b->info != NULL)
        nrt_free_model_tensor_info(b->info);
    if (b->m != NULL)
        nrt_unload(b->m);
}

/* One thread of one round: execute until the deadline. */
struct bp_thread {
    struct bp_vnc *b;        /* its VNC */
    double deadline;         /* when to stop */
    long done;               /* executions finished */
    bool failed;             /* an execution failed */
};

static void *bp_loop(void *arg)
{
    struct bp_thread *t = arg;
    while (bp_now() < t->deadline) {
        if (nrt_execute(t->b->m, t->b->in, t->b->out) != NRT_SUCCESS) {
            t->failed = true;
            break;
        }
        t->done++;
    }
    return NULL;
}

/* Executions per second of one round over n VNCs, one thread each; < 0
 * on failure. */
static double bp_round(struct bp_vnc *bs, int n, long *execs)
{
    pthread_t th[BP_MAX_VNCS];
    struct bp_thread ts[BP_MAX_VNCS];
    double t0 = bp_now();
    for (int i = 0; i < n; i++) {
        ts[i] = (struct bp_thread){&bs[i], t0 + BP_SECONDS, 0, false};
        if (pthread_create(&th[i], NULL, bp_loop, &ts[i]) != 0)
            return -1;
    }
    long total = 0;
    bool failed = false;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        total += ts[i].done;
        failed |= ts[i].failed;
    }
    *execs = total;
    return failed ? -1 : (double)total / (bp_now() - t0);
}

/* The cases: which of the loaded VNCs (bp_vncs) each drives. */
#define BP_CASES 3
static const int bp_vncs[] = {0, 1, 4};  /* chip 0, chip 0, chip 1 */
static const struct {
    const char *what;       /* the case */
    int idx[BP_MAX_VNCS];   /* entries of bp_vncs used */
    int n;                  /* how many */
} bp_cases[BP_CASES] = {
    {"1 VNC, 1 thread", {0}, 1},
    {"2 VNCs of one chip (0, 1), 2 threads", {0, 1}, 2},
    {"2 VNCs on two chips (0, 4), 2 threads", {0, 2}, 2},
};

/* Best and worst rate of a case, and its CPU seconds per execution. */
struct bp_stat {
    double best, worst;     /* executions per second */
    double cpu_per_exec;    /* at the best round */
};

static void bp_note(struct bp_stat *st, double rate, double cpu_per_exec)
{
    if (st->best <= 0 || rate > st->best) {
        st->best = rate;
        st->cpu_per_exec = cpu_per_exec;
    }
    if (st->worst <= 0 || rate < st->worst)
        st->worst = rate;
}

/* Start the runtime with TRNEMU_THREADS=threads (NULL: unset). */
static bool bp_init(const char *threads)
{
    if (threads != NULL)
        setenv("TRNEMU_THREADS", threads, 1);
    else
        unsetenv("TRNEMU_THREADS");
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS;
}

/* A runtime (threads NULL: TRNEMU_THREADS unset), the model on every VNC
 * of bp_vncs, then BP_ROUNDS rounds of each case in turn (the load of the
 * host drifts less between cases that alternate). false on a failure. */
static bool bp_run(const char *threads, int ncases, struct bp_stat *stat)
{
    enum { NV = sizeof bp_vncs / sizeof bp_vncs[0] };
    struct bp_vnc all[NV];
    bool ok = true;
    if (!bp_init(threads))
        return false;
    for (int v = 0; v < NV; v++)
        ok &= bp_setup(&all[v], bp_vncs[v]);
    for (int r = 0; ok && r < BP_ROUNDS; r++)
        for (int c = 0; ok && c < ncases; c++) {
            struct bp_vnc bs[BP_MAX_VNCS];
            for (int i = 0; i < bp_cases[c].n; i++)
                bs[i] = all[bp_cases[c].idx[i]];
            double cpu0 = bench_proc_cpu_s();
            long execs = 0;
            double rate = bp_round(bs, bp_cases[c].n, &execs);
            ok = rate >= 0;
            if (ok)
                bp_note(&stat[c], rate,
                        (bench_proc_cpu_s() - cpu0) / (double)(execs > 0 ? execs : 1));
        }
    for (int v = 0; v < NV; v++)
        bp_teardown(&all[v]);
    nrt_close();
    return ok;
}

static void bp_print(const char *what, const struct bp_stat *st, double base)
{
    printf("  %-40s %8.1f /s  %6.1f us CPU/exec  (worst round %3.0f%% of best)  %.2fx\n", what,
           st->best, st->cpu_per_exec * 1e6, 100 * st->worst / st->best, st->best / base);
}

/* ---- LNC=2: the two physical cores of one VNC --------------------------------- */

/* One round of matmul_lnc2 on b from one thread, noted in st. */
static bool bp_lnc2_round(struct bp_vnc *b, struct bp_stat *st)
{
    double cpu0 = bench_proc_cpu_s();
    long execs = 0;
    double rate = bp_round(b, 1, &execs);
    if (rate < 0)
        return false;
    bp_note(st, rate, (bench_proc_cpu_s() - cpu0) / (double)(execs > 0 ? execs : 1));
    return true;
}

/* A runtime with TRNEMU_THREADS=threads (NULL: unset) and matmul_lnc2 on
 * VNC 0; BP_ROUNDS rounds, alternating the cores on one thread (st[0])
 * and on two (st[1]), or only on one thread when one_only. */
static bool bp_lnc2_run(const char *threads, const void *neff, size_t size, bool one_only,
                        struct bp_stat *st)
{
    if (!bp_init(threads))
        return false;
    struct bp_vnc b;
    bool ok = bp_setup_neff(&b, 0, neff, size);
    for (int r = 0; ok && r < BP_ROUNDS; r++)
        for (int split = 0; ok && split <= (one_only ? 0 : 1); split++) {
            exec_set_core_threads(split);
            ok = bp_lnc2_round(&b, &st[split]);
        }
    exec_set_core_threads(true);
    bp_teardown(&b);
    nrt_close();
    return ok;
}

static bool bp_lnc2(const char *dir)
{
    size_t size;
    void *neff = bp_read(dir, "matmul_lnc2.neff", &size);
    if (neff == NULL) {
        fprintf(stderr, "cannot read %s/matmul_lnc2.neff\n", dir);
        return false;
    }
    struct bp_stat st[2] = {{0}}, one[1] = {{0}};
    bool ok = bp_lnc2_run(NULL, neff, size, false, st) && bp_lnc2_run("1", neff, size, true, one);
    free(neff);
    if (!ok)
        return false;
    printf("matmul_lnc2 example (LNC=2: each core 512 x 512 x 512 bf16, then a sendrecv and a "
           "core_barrier), one VNC from one thread, best of %d rounds of %.1f s\n", BP_ROUNDS,
           BP_SECONDS);
    bp_print("both cores on one thread", &st[0], st[0].best);
    bp_print("each core on its own thread", &st[1], st[0].best);
    bp_print("TRNEMU_THREADS=1 (nothing split)", &one[0], st[0].best);
    printf("ratio LNC=2 cores on two threads / on one: %.2fx\n", st[1].best / st[0].best);
    return true;
}

/* ---- N VNCs from N threads ------------------------------------------------------ */

/* VNCs 0 .. counts[n-1]-1 (four per chip), softmax on each; BP_ROUNDS
 * rounds, each of every count in turn (N VNCs from N threads). */
static bool bp_scale_run(const unsigned *counts, int n, struct bp_stat *st)
{
    struct bp_vnc all[BP_MAX_VNCS];
    int nv = (int)counts[n - 1];
    bool ok = bp_init(NULL);
    if (!ok)
        return false;
    int set = 0;
    for (; ok && set < nv; set++)
        ok = bp_setup(&all[set], set);
    for (int r = 0; ok && r < BP_ROUNDS; r++)
        for (int c = 0; ok && c < n; c++) {
            double cpu0 = bench_proc_cpu_s();
            long execs = 0;
            double rate = bp_round(all, (int)counts[c], &execs);
            ok = rate >= 0;
            if (ok)
                bp_note(&st[c], rate,
                        (bench_proc_cpu_s() - cpu0) / (double)(execs > 0 ? execs : 1));
        }
    for (int v = 0; v < set; v++)
        bp_teardown(&all[v]);
    nrt_close();
    return ok;
}

/* Softmax executions per second on N VNCs from N threads, N = 1, 2, 4,
 * 8, 16 where the host has the cores, each against 1 VNC in the same run;
 * "per VNC" is that ratio over N (1.0: perfect scaling). */
static bool bp_scale(void)
{
    unsigned counts[BENCH_MAX_COUNTS];
    int n = bench_thread_counts("bench-par", "VNCs", 1, counts);
    while (n > 0 && counts[n - 1] > BP_MAX_VNCS)
        n--;
    struct bp_stat st[BENCH_MAX_COUNTS] = {{0}};
    if (n == 0 || !bp_scale_run(counts, n, st))
        return false;
    printf("softmax example, N VNCs (0 .. N-1, four per chip) from N threads vs 1 VNC, best of "
           "%d rounds of %.1f s (counts alternate round by round)\n", BP_ROUNDS, BP_SECONDS);
    for (int c = 0; c < n; c++) {
        char what[64];
        snprintf(what, sizeof what, "%u VNC%s, %u thread%s", counts[c], counts[c] > 1 ? "s" : "",
                 counts[c], counts[c] > 1 ? "s" : "");
        bp_print(what, &st[c], st[0].best);
    }
    printf("scaling N VNCs / 1 VNC:");
    for (int c = 0; c < n; c++)
        printf(" %u: %.2fx (%.2f per VNC)%s", counts[c], st[c].best / st[0].best,
               st[c].best / st[0].best / counts[c], c + 1 < n ? ";" : "\n");
    return true;
}

/* ---- one core's engines: interleaved, as a team, or as measured --------------- */

#define BP_MODES 3
static const int bp_modes[BP_MODES] = {CORE_ENGINES_INTERLEAVED, CORE_ENGINES_TEAM,
                                       CORE_ENGINES_AUTO};
static const char *const bp_mode_names[BP_MODES] = {
    "engines interleaved on one thread", "engines as a team of threads",
    "measured choice (the default)"};

/* name.neff on VNC 0 from one thread, TRNEMU_THREADS unset (every CPU),
 * the three ways of placing the core's engines taking turns round by
 * round; printed against the interleaved way. */
static bool bp_team(const char *dir, const char *name)
{
    char file[64];
    size_t size;
    snprintf(file, sizeof file, "%s.neff", name);
    void *neff = bp_read(dir, file, &size);
    struct bp_stat st[BP_MODES] = {{0}};
    struct bp_vnc b;
    bool ok = neff != NULL && bp_init(NULL);
    if (!ok) {
        free(neff);
        return false;
    }
    ok = bp_setup_neff(&b, 0, neff, size);
    for (int r = 0; ok && r < BP_ROUNDS; r++)
        for (int m = 0; ok && m < BP_MODES; m++) {
            core_set_engine_threads(bp_modes[m]);
            ok = bp_lnc2_round(&b, &st[m]);
        }
    core_set_engine_threads(CORE_ENGINES_AUTO);
    bp_teardown(&b);
    nrt_close();
    free(neff);
    if (!ok)
        return false;
    printf("%s example, one VNC (LNC=2: one core has work) from one thread, every CPU, best "
           "of %d rounds of %.1f s\n", name, BP_ROUNDS, BP_SECONDS);
    for (int m = 0; m < BP_MODES; m++)
        bp_print(bp_mode_names[m], &st[m], st[0].best);
    return true;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s EXAMPLES_DIR\n", argv[0]);
        return 2;
    }
    bp_neff = bp_read(argv[1], "softmax.neff", &bp_neff_size);
    if (bp_neff == NULL) {
        fprintf(stderr, "cannot read %s/softmax.neff\n", argv[1]);
        return 1;
    }
    setenv("TRNEMU_INSTANCE", "trn2.48xlarge", 1);
    setenv("NEURON_LOGICAL_NC_CONFIG", "2", 1);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    unsetenv("NEURON_RT_NUM_CORES");
    struct bp_stat stat[BP_CASES] = {{0}}, gate1[BP_CASES] = {{0}};
    if (!bp_run(NULL, BP_CASES, stat) || !bp_run("1", 2, gate1)) {
        fprintf(stderr, "an execution failed\n");
        return 1;
    }
    printf("softmax example (128 x 1024 f32), executions per second, best of %d rounds of "
           "%.1f s (cases alternate round by round)\n", BP_ROUNDS, BP_SECONDS);
    for (int c = 0; c < BP_CASES; c++)
        bp_print(bp_cases[c].what, &stat[c], stat[0].best);
    bp_print("2 VNCs of one chip, TRNEMU_THREADS=1", &gate1[1], stat[0].best);
    printf("ratio 2 VNCs of one chip / 1 VNC: %.2fx (target 1.8x); 2 chips / 1 VNC: %.2fx\n",
           stat[1].best / stat[0].best, stat[2].best / stat[0].best);
    if (!bp_scale()) {
        fprintf(stderr, "an execution of the scaling case failed\n");
        return 1;
    }
    free(bp_neff);
    if (!bp_team(argv[1], "softmax") || !bp_team(argv[1], "layernorm")) {
        fprintf(stderr, "an execution with engine teams failed\n");
        return 1;
    }
    if (!bp_lnc2(argv[1])) {
        fprintf(stderr, "an LNC=2 execution failed\n");
        return 1;
    }
    return 0;
}
