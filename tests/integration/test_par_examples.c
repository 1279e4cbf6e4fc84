/*
 * test_par_examples.c: the bits of every example kernel do not depend on
 * how many executions run at once. Through the public API only, on the
 * four VNCs of chip 0 of a trn3.48xlarge (LNC=2; mx_matmul needs
 * Trainium3, the others run anywhere):
 *   reference  TRNEMU_THREADS=1, one host thread: every example on VNC 0
 *   gate of 1  TRNEMU_THREADS=1, four host threads, one per VNC, each
 *              running every example at the same time as the others
 *   default    the same with TRNEMU_THREADS unset (the host's CPUs)
 * Inputs depend only on the example and the iteration, so every thread
 * must reach the reference's xxHash of the outputs (and its status).
 * mlp_train holds an all-reduce across the four threads (ranks of one
 * job, nrt_load_collectives), so it has no single-thread reference: its
 * hashes must agree between the two concurrent runs and between ranks.
 * matmul_lnc2 has work on both physical cores of its VNC: one thread for
 * both in the reference and the gate-of-one run, a thread each by default
 * (on a host with two CPUs or more). The 4096^3 matmul runs once per thread, and is left out when
 * TRNEMU_TEST_QUICK=1 (sanitizer builds). In the 'threads' suite, so `make test` runs it under TSan.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include <xxhash.h>

#include "it_common.h"

#define PE_RANKS 4  /* host threads, one per VNC of chip 0 */
#define PE_ITERS 2  /* executions of each example per thread and run */

/* One example kernel. */
struct pe_example {
    const char *name;  /* examples/<name>.neff */
    bool coll;         /* holds a collective across the ranks */
    bool big;          /* left out in quick runs, else executed once per run */
};

static const struct pe_example pe_examples[] = {
    {"add", false, false},        {"matmul_512", false, false}, {"softmax", false, false},
    {"layernorm", false, false},  {"mx_matmul", false, false},  {"mlp_train", true, false},
    {"matmul_4096", false, true}, {"matmul_lnc2", false, false},
};
#define PE_N (sizeof pe_examples / sizeof pe_examples[0])

/* What one execution gave. */
struct pe_result {
    uint64_t hash;    /* xxHash of the outputs, in model order */
    NRT_STATUS st;    /* the execution's status */
    bool ran;         /* it ran (the slot is filled) */
};

enum { PE_REF, PE_GATE1, PE_DEFAULT, PE_RUNS };

static void *pe_neff[PE_N];         /* the NEFFs, read once */
static size_t pe_neff_size[PE_N];   /* their bytes */
static struct pe_result pe_res[PE_RUNS][PE_N][PE_RANKS][PE_ITERS];
static _Atomic int pe_fails;        /* API calls that failed, over every thread */

/* Executions of example e per thread and run. */
static int pe_iters(size_t e)
{
    return pe_examples[e].big ? 1 : PE_ITERS;
}

static bool pe_skip(size_t e)
{
    const char *quick = getenv("TRNEMU_TEST_QUICK");
    return pe_examples[e].big && quick != NULL && strcmp(quick, "1") == 0;
}

/* Deterministic values in [-1, 1): f32, or bf16 (the top half of one). */
static void pe_fill(uint8_t *p, size_t bytes, nrt_dtype_t dt, uint64_t seed)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    size_t es = dt == NRT_DTYPE_BFLOAT16 ? 2 : 4;
    for (size_t i = 0; i + es <= bytes; i += es) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float v = (float)(int64_t)(s >> 40) / (float)(1 << 23) - 1.0f;
        uint32_t u;
        memcpy(&u, &v, 4);
        if (es == 2) {
            uint16_t h = (uint16_t)(u >> 16);
            memcpy(p + i, &h, 2);
        } else {
            memcpy(p + i, &u, 4);
        }
    }
}

/* A model on one VNC with its tensors, host buffers and sets. */
struct pe_model {
    nrt_model_t *m;                 /* the loaded model */
    nrt_tensor_info_array_t *info;  /* its inputs and outputs */
    nrt_tensor_t **t;               /* one device tensor per entry of info */
    uint8_t **buf;                  /* one host buffer per entry */
    nrt_tensor_set_t *in, *out;     /* the sets */
};

static int pe_ok(NRT_STATUS st, const char *what, const char *name, int vnc)
{
    if (st == NRT_SUCCESS)
        return 1;
    fprintf(stderr, "%s of %s on VNC %d: status %d\n", what, name, vnc, (int)st);
    atomic_fetch_add(&pe_fails, 1);
    return 0;
}

static int pe_load(struct pe_model *pm, size_t e, int vnc)
{
    const char *name = pe_examples[e].name;
    memset(pm, 0, sizeof *pm);
    NRT_STATUS st = pe_examples[e].coll
        ? nrt_load_collectives(pe_neff[e], pe_neff_size[e], vnc, 1, (uint32_t)vnc, PE_RANKS, &pm->m)
        : nrt_load(pe_neff[e], pe_neff_size[e], vnc, 1, &pm->m);
    if (!pe_ok(st, "nrt_load", name, vnc) ||
        !pe_ok(nrt_get_model_tensor_info(pm->m, &pm->info), "tensor info", name, vnc) ||
        !pe_ok(nrt_allocate_tensor_set(&pm->in), "input set", name, vnc) ||
        !pe_ok(nrt_allocate_tensor_set(&pm->out), "output set", name, vnc))
        return 0;
    size_t n = pm->info->tensor_count;
    pm->t = calloc(n, sizeof *pm->t);
    pm->buf = calloc(n, sizeof *pm->buf);
    for (size_t i = 0; i < n; i++) {
        const nrt_tensor_info_t *ti = &pm->info->tensor_array[i];
        pm->buf[i] = malloc(ti->size);
        if (pm->buf[i] == NULL ||
            !pe_ok(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, ti->size, ti->name,
                                       &pm->t[i]), "tensor", name, vnc) ||
            !pe_ok(nrt_add_tensor_to_tensor_set(ti->usage == NRT_TENSOR_USAGE_INPUT ? pm->in
                                                : pm->out, ti->name, pm->t[i]), "set", name, vnc))
            return 0;
    }
    return 1;
}

static void pe_unload(struct pe_model *pm)
{
    size_t n = pm->info != NULL ? pm->info->tensor_count : 0;
    for (size_t i = 0; i < n; i++) {
        if (pm->t != NULL)
            nrt_tensor_free(&pm->t[i]);
        if (pm->buf != NULL)
            free(pm->buf[i]);
    }
    free(pm->t);
    free(pm->buf);
    nrt_destroy_tensor_set(&pm->in);
    nrt_destroy_tensor_set(&pm->out);
    if (pm->info != NULL)
        nrt_free_model_tensor_info(pm->info);
    if (pm->m != NULL)
        nrt_unload(pm->m);
}

/* Write the inputs of iteration it, execute, read and hash the outputs. */
static void pe_exec(struct pe_model *pm, size_t e, int vnc, int it, struct pe_result *r)
{
    const char *name = pe_examples[e].name;
    size_t n = pm->info->tensor_count;
    for (size_t i = 0; i < n; i++) {
        const nrt_tensor_info_t *ti = &pm->info->tensor_array[i];
        if (ti->usage != NRT_TENSOR_USAGE_INPUT)
            continue;
        pe_fill(pm->buf[i], ti->size, ti->dtype, e * 1000 + (size_t)it * 10 + i);
        if (!pe_ok(nrt_tensor_write(pm->t[i], pm->buf[i], 0, ti->size), "write", name, vnc))
            return;
    }
    r->st = nrt_execute(pm->m, pm->in, pm->out);
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++) {
        const nrt_tensor_info_t *ti = &pm->info->tensor_array[i];
        if (ti->usage != NRT_TENSOR_USAGE_OUTPUT)
            continue;
        if (!pe_ok(nrt_tensor_read(pm->t[i], pm->buf[i], 0, ti->size), "read", name, vnc))
            return;
        h = XXH3_64bits_withSeed(pm->buf[i], ti->size, h);
    }
    r->hash = h;
    r->ran = true;
}

/* One host thread: every example (but the collective ones when solo) on
 * its VNC, pe_iters(e) times each. */
struct pe_job {
    int run;    /* PE_REF, PE_GATE1 or PE_DEFAULT */
    int vnc;    /* its VNC (and rank) */
    bool solo;  /* the only thread: no collectives */
};

static void *pe_thread(void *arg)
{
    const struct pe_job *j = arg;
    for (size_t e = 0; e < PE_N; e++) {
        if (pe_skip(e) || (j->solo && pe_examples[e].coll))
            continue;
        struct pe_model pm;
        if (pe_load(&pm, e, j->vnc))
            for (int it = 0; it < pe_iters(e); it++)
                pe_exec(&pm, e, j->vnc, it, &pe_res[j->run][e][j->vnc][it]);
        pe_unload(&pm);
    }
    return NULL;
}

/* Start the runtime on chip 0's four VNCs; threads NULL: the default. */
static void pe_init(const char *threads)
{
    it_env("TRNEMU_THREADS", threads);
    it_init("trn3.48xlarge", "2", "0-3", NULL);
    unsetenv("TRNEMU_THREADS");
}

static void pe_concurrent(int run)
{
    pthread_t th[PE_RANKS];
    struct pe_job jobs[PE_RANKS];
    for (int r = 0; r < PE_RANKS; r++) {
        jobs[r] = (struct pe_job){run, r, false};
        assert_int_equal(pthread_create(&th[r], NULL, pe_thread, &jobs[r]), 0);
    }
    for (int r = 0; r < PE_RANKS; r++)
        pthread_join(th[r], NULL);
}

/* Same status and hash, or one line saying where not. */
static int pe_same(const struct pe_result *a, const struct pe_result *b, size_t e, int run,
                   int vnc, int it)
{
    if (a->ran && b->ran && a->st == b->st && a->hash == b->hash)
        return 1;
    fprintf(stderr, "%s run %d VNC %d iteration %d: status %d hash %016llx (ran %d), "
            "expected status %d hash %016llx (ran %d)\n", pe_examples[e].name, run, vnc, it,
            (int)b->st, (unsigned long long)b->hash, b->ran, (int)a->st,
            (unsigned long long)a->hash, a->ran);
    return 0;
}

/* Every concurrent result against the reference (collective examples:
 * against the gate-of-one run's rank 0). */
static int pe_compare(void)
{
    int bad = 0, n = 0;
    for (size_t e = 0; e < PE_N; e++) {
        if (pe_skip(e))
            continue;
        for (int it = 0; it < pe_iters(e); it++) {
            const struct pe_result *ref =
                pe_examples[e].coll ? &pe_res[PE_GATE1][e][0][it] : &pe_res[PE_REF][e][0][it];
            for (int run = PE_GATE1; run <= PE_DEFAULT; run++)
                for (int v = 0; v < PE_RANKS; v++, n++)
                    bad += !pe_same(ref, &pe_res[run][e][v][it], e, run, v, it);
            printf("%-12s iteration %d: status %d, outputs' xxh3 %016llx\n",
                   pe_examples[e].name, it, (int)ref->st, (unsigned long long)ref->hash);
        }
    }
    printf("%d concurrent executions compared, %d differ\n", n, bad);
    return bad;
}

static void test_par_examples(void **state)
{
    (void)state;
    for (size_t e = 0; e < PE_N; e++)
        if (!pe_skip(e))
            pe_neff[e] = it_read_example_neff(pe_examples[e].name, &pe_neff_size[e]);
    pe_init("1");
    struct pe_job solo = {PE_REF, 0, true};
    pe_thread(&solo);
    pe_concurrent(PE_GATE1);
    nrt_close();
    pe_init(NULL);
    pe_concurrent(PE_DEFAULT);
    nrt_close();
    assert_int_equal(atomic_load(&pe_fails), 0);
    assert_int_equal(pe_compare(), 0);
    for (size_t e = 0; e < PE_N; e++)
        free(pe_neff[e]);
}

/* A malformed TRNEMU_THREADS fails nrt_init with NRT_INVALID. */
static void test_bad_threads(void **state)
{
    (void)state;
    const char *bad[] = {"0", "-1", "two", "4x", "100000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        it_env_clear();
        setenv("TRNEMU_THREADS", bad[i], 1);
        char log[4096];
        it_log_begin();
        assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
        assert_true(it_log_end(log, sizeof log) >= 1);
        assert_non_null(strstr(log, "TRNEMU_THREADS"));
    }
    unsetenv("TRNEMU_THREADS");
}

int main(void)
{
    setenv("NEURON_RT_EXEC_TIMEOUT", "120", 0);
    unsetenv("NEURON_RT_ROOT_COMM_ID");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_threads),
        cmocka_unit_test(test_par_examples),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
