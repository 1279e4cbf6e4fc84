/*
 * test_coll_threads.c: collectives between ranks that are threads of one
 * process, each on its own local VNC on its own chip of a trn2.48xlarge.
 * Across processes ThreadSanitizer sees only one side of the shared
 * memory; here it sees both ends of every channel, doorbell, post and
 * peer HBM read, so the threads suite (run under TSan) checks the
 * collectives' memory ordering. Every rank checks its own results:
 *   host  nrt_build_global_comm, nrt_barrier, nrt_all_gather, and
 *         nrta_cc_prepare/_schedule: all-reduce small (mesh) and large
 *         (chain), reduce-scatter, all-gather, two replica groups at once
 *   switch  the same host collectives on a trn3.48xlarge (NeuronSwitch):
 *         direct all-gather and the sharded switch all-reduce
 *   mismatch  ranks disagree on a size: NRT_INVALID on every rank
 *   neff  a kernel with an all_reduce and an all_gather (both directly in HBM),
 *         loaded with nrt_load_collectives and run twice (on each VNC's
 *         worker thread); also with the four ranks on the four VNCs of one
 *         chip and TRNEMU_THREADS=1: each rank leaves the compute gate
 *         while it waits for the others (devices/thread/gate.h), so one place is
 *         enough for four ranks
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include <poll.h>
#include <unistd.h>

#include "it_common.h"
#include "nrt/nrt_async.h"
#include "trnemu/trnemu_build.h"

#define CT_WORLD 4      /* ranks (threads) */
#define CT_K 64         /* elements per rank part in the kernel */

static _Atomic int ct_fails;          /* failed checks over every thread */
static void *ct_neff;                 /* the collectives kernel (shared, read-only) */
static size_t ct_neff_size;           /* its bytes */

#define CT_CHECK(r, cond, ...)                           \
    do {                                                 \
        if (!(cond)) {                                   \
            fprintf(stderr, "rank %u: ", (unsigned)(r)); \
            fprintf(stderr, __VA_ARGS__);                \
            fputc('\n', stderr);                         \
            atomic_fetch_add(&ct_fails, 1);              \
        }                                                \
    } while (0)

/* Input element i of rank r: small integers, so f32 sums are exact. */
static float ct_val(uint32_t r, size_t i)
{
    return (float)((int)((r * 131u + i * 7u) % 97u) - 48);
}

static nrt_tensor_t *ct_tensor(uint32_t r, size_t bytes, const void *data)
{
    nrt_tensor_t *t = NULL;
    NRT_STATUS st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)r, bytes, "ct", &t);
    CT_CHECK(r, st == NRT_SUCCESS, "nrt_tensor_allocate(%zu): %d", bytes, (int)st);
    if (st == NRT_SUCCESS && data != NULL)
        CT_CHECK(r, nrt_tensor_write(t, data, 0, bytes) == NRT_SUCCESS, "nrt_tensor_write");
    return t;
}

/* Wait for request seq through its completion descriptor; its status
 * from the error tracker (NRT_SUCCESS when it recorded nothing). */
static NRT_STATUS ct_wait(nrta_seq_t seq, nrta_error_tracker_t *trk)
{
    int fd = -1;
    NRT_STATUS st = nrta_get_completion_handle(seq, &fd);
    if (st != NRT_SUCCESS)
        return st;
    struct pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0)
        ;
    close(fd);
    const nrta_error_t *errs = NULL;
    size_t n = 0;
    st = nrta_error_tracker_get_list(trk, &errs, &n);
    for (size_t i = 0; st == NRT_SUCCESS && i < n; i++)
        if (errs[i].seq_id == seq)
            st = (NRT_STATUS)errs[i].error_code;
    return st;
}

/* One prepared f32 collective of rank r over group g (ng ranks). */
static NRT_STATUS ct_cc(uint32_t r, nrt_cc_op_type_t cc, const float *in, size_t in_n, float *out,
                        size_t out_n, const uint32_t *g, uint32_t ng)
{
    uint32_t pos = 0;
    while (pos < ng && g[pos] != r)
        pos++;
    nrt_tensor_t *ti = ct_tensor(r, in_n * 4, in), *to = ct_tensor(r, out_n * 4, NULL);
    nrt_cc_comm_t comm = {(uint32_t *)g, pos, ng, r, CT_WORLD, r};
    nrt_tensor_list_t li = {&ti, 1}, lo = {&to, 1};
    nrt_cc_context_t *ctx = NULL;
    nrta_seq_t seq = 0;
    nrta_error_tracker_t *trk = NULL;
    NRT_STATUS st = nrta_cc_prepare(&comm, &li, &lo, NRT_DTYPE_FLOAT32, NRT_OP_ADD, cc, &ctx);
    if (st == NRT_SUCCESS)
        st = nrta_error_tracker_create(r, &trk);
    if (st == NRT_SUCCESS)
        st = nrta_cc_schedule(&ctx, 0, trk, &seq);
    if (st == NRT_SUCCESS)  /* queued on the LNC's collectives unit: wait, then its status */
        st = ct_wait(seq, trk);
    nrta_error_tracker_destroy(trk);
    if (st == NRT_SUCCESS)
        CT_CHECK(r, nrt_tensor_read(to, out, 0, out_n * 4) == NRT_SUCCESS, "nrt_tensor_read");
    nrt_tensor_free(&ti);
    nrt_tensor_free(&to);
    return st;
}

/* All-reduce (add) of n elements over group g; checked. */
static void ct_all_reduce(uint32_t r, size_t n, const uint32_t *g, uint32_t ng)
{
    float *x = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = ct_val(r, i);
    NRT_STATUS st = ct_cc(r, NRT_CC_ALLREDUCE, x, n, y, n, g, ng);
    CT_CHECK(r, st == NRT_SUCCESS, "all-reduce of %zu over %u ranks: %d", n, ng, (int)st);
    size_t bad = 0;
    for (size_t i = 0; st == NRT_SUCCESS && i < n; i++) {
        float want = 0;
        for (uint32_t k = 0; k < ng; k++)
            want += ct_val(g[k], i);
        bad += y[i] != want;
    }
    CT_CHECK(r, bad == 0, "all-reduce of %zu over %u ranks: %zu wrong elements", n, ng, bad);
    free(x);
    free(y);
}

/* Reduce-scatter and all-gather over every rank; checked. */
static void ct_scatter_gather(uint32_t r, const uint32_t *all)
{
    enum { N = 4000 };
    float *x = malloc(N * 4), *y = malloc((size_t)N * CT_WORLD * 4);
    for (size_t i = 0; i < N; i++)
        x[i] = ct_val(r, i);
    NRT_STATUS st = ct_cc(r, NRT_CC_REDUCESCATTER, x, N, y, N / CT_WORLD, all, CT_WORLD);
    CT_CHECK(r, st == NRT_SUCCESS, "reduce-scatter: %d", (int)st);
    for (size_t i = 0; st == NRT_SUCCESS && i < N / CT_WORLD; i++) {
        float want = 0;
        for (uint32_t k = 0; k < CT_WORLD; k++)
            want += ct_val(k, r * (N / CT_WORLD) + i);
        CT_CHECK(r, y[i] == want, "reduce-scatter [%zu] = %g, want %g", i, y[i], want);
        if (y[i] != want)
            break;
    }
    st = ct_cc(r, NRT_CC_ALLGATHER, x, N, y, (size_t)N * CT_WORLD, all, CT_WORLD);
    CT_CHECK(r, st == NRT_SUCCESS, "all-gather: %d", (int)st);
    size_t bad = 0;
    for (size_t i = 0; st == NRT_SUCCESS && i < (size_t)N * CT_WORLD; i++)
        bad += y[i] != ct_val((uint32_t)(i / N), i % N);
    CT_CHECK(r, bad == 0, "all-gather: %zu wrong elements", bad);
    free(x);
    free(y);
}

/* nrt_barrier and nrt_all_gather (bytes, outside any tensor). */
static void ct_host_basic(uint32_t r)
{
    enum { B = 1000 };
    uint8_t in[B], out[B * CT_WORLD];
    CT_CHECK(r, nrt_barrier((int32_t)r, r, CT_WORLD) == NRT_SUCCESS, "nrt_barrier");
    for (size_t i = 0; i < B; i++)
        in[i] = (uint8_t)(r * 31u + i);
    NRT_STATUS st = nrt_all_gather((int32_t)r, r, CT_WORLD, B, in, out);
    CT_CHECK(r, st == NRT_SUCCESS, "nrt_all_gather: %d", (int)st);
    size_t bad = 0;
    for (size_t i = 0; st == NRT_SUCCESS && i < (size_t)B * CT_WORLD; i++)
        bad += out[i] != (uint8_t)((i / B) * 31u + i % B);
    CT_CHECK(r, bad == 0, "nrt_all_gather: %zu wrong bytes", bad);
}

static void *ct_host_rank(void *arg)
{
    uint32_t r = (uint32_t)(uintptr_t)arg;
    static const uint32_t all[CT_WORLD] = {0, 1, 2, 3};
    static const uint32_t pairs[2][2] = {{0, 1}, {2, 3}};
    NRT_STATUS st = nrt_build_global_comm((int32_t)r, r, CT_WORLD);
    CT_CHECK(r, st == NRT_SUCCESS, "nrt_build_global_comm: %d", (int)st);
    if (st != NRT_SUCCESS)
        return NULL;
    ct_host_basic(r);
    ct_all_reduce(r, 1000, all, CT_WORLD);    /* mesh */
    ct_all_reduce(r, 100000, all, CT_WORLD);  /* 400 KB: chain (switch: shards) */
    ct_all_reduce(r, 100003, all, CT_WORLD);  /* shards of unequal size */
    ct_scatter_gather(r, all);
    ct_all_reduce(r, 3000, pairs[r / 2], 2);  /* two groups at once */
    CT_CHECK(r, nrt_barrier((int32_t)r, r, CT_WORLD) == NRT_SUCCESS, "final nrt_barrier");
    return NULL;
}

/* Rank 0 all-gathers another size: every rank fails with NRT_INVALID (the
 * shared abort word and the bells wake the waiting ones), and the broken
 * communicator refuses the next operation at once. */
static void *ct_mismatch_rank(void *arg)
{
    uint32_t r = (uint32_t)(uintptr_t)arg;
    CT_CHECK(r, nrt_build_global_comm((int32_t)r, r, CT_WORLD) == NRT_SUCCESS,
             "nrt_build_global_comm");
    uint32_t n = r == 0 ? 100 : 200;
    uint8_t in[200] = {0}, out[200 * CT_WORLD];
    NRT_STATUS st = nrt_all_gather((int32_t)r, r, CT_WORLD, n, in, out);
    CT_CHECK(r, st == NRT_INVALID, "all-gather of %u bytes on rank 0, 200 elsewhere: %d, want "
             "NRT_INVALID", n, (int)st);
    st = nrt_barrier((int32_t)r, r, CT_WORLD);
    CT_CHECK(r, st == NRT_INVALID, "barrier on the broken communicator: %d, want NRT_INVALID",
             (int)st);
    return NULL;
}

/* ---- in-NEFF ------------------------------------------------------------------ */

static void ct_build_kernel(void)
{
    uint32_t c = CT_K * CT_WORLD, ag = c * CT_WORLD;
    trnemu_kernel_t *k = NULL;
    assert_int_equal(trnemu_kernel_create("ct_kernel", &k), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, &c, 1), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "ar", NRT_DTYPE_FLOAT32, &c, 1), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "ag", NRT_DTYPE_FLOAT32, &ag, 1), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_appendf(k, "sp.all_reduce dst=hbm:ar[[%u,1], 0, [1,%u]]:f32 "
                                           "src=hbm:x[[%u,1], 0, [1,%u]]:f32 op=add", c, c, c, c),
                     NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_appendf(k, "pool.all_gather dst=hbm:ag[[%u,1], 0, [1,%u]]:f32 "
                                           "src=hbm:x[[%u,1], 0, [1,%u]]:f32", ag, ag, c, c),
                     NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_write(k, &ct_neff, &ct_neff_size), NRT_SUCCESS);
    trnemu_kernel_free(k);
}

static nrt_tensor_t *ct_io(uint32_t r, nrt_tensor_set_t *set, const char *name, size_t bytes)
{
    nrt_tensor_t *t = ct_tensor(r, bytes, NULL);
    CT_CHECK(r, nrt_add_tensor_to_tensor_set(set, name, t) == NRT_SUCCESS, "add %s", name);
    return t;
}

static void ct_check_neff(uint32_t r, nrt_tensor_t *ar, nrt_tensor_t *ag)
{
    enum { C = CT_K * CT_WORLD };
    float v[C * CT_WORLD];
    size_t bad = 0;
    CT_CHECK(r, nrt_tensor_read(ar, v, 0, C * 4) == NRT_SUCCESS, "read ar");
    for (size_t i = 0; i < C; i++) {
        float want = 0;
        for (uint32_t k = 0; k < CT_WORLD; k++)
            want += ct_val(k, i);
        bad += v[i] != want;
    }
    CT_CHECK(r, nrt_tensor_read(ag, v, 0, sizeof v) == NRT_SUCCESS, "read ag");
    for (size_t i = 0; i < (size_t)C * CT_WORLD; i++)
        bad += v[i] != ct_val((uint32_t)(i / C), i % C);
    CT_CHECK(r, bad == 0, "kernel outputs: %zu wrong elements", bad);
}

static void *ct_neff_rank(void *arg)
{
    uint32_t r = (uint32_t)(uintptr_t)arg;
    enum { C = CT_K * CT_WORLD };
    nrt_model_t *m = NULL;
    NRT_STATUS st = nrt_load_collectives(ct_neff, ct_neff_size, (int32_t)r, 1, r, CT_WORLD, &m);
    CT_CHECK(r, st == NRT_SUCCESS, "nrt_load_collectives: %d", (int)st);
    if (st != NRT_SUCCESS)
        return NULL;
    float x[C];
    for (size_t i = 0; i < C; i++)
        x[i] = ct_val(r, i);
    nrt_tensor_set_t *in = NULL, *out = NULL;
    nrt_allocate_tensor_set(&in);
    nrt_allocate_tensor_set(&out);
    nrt_tensor_t *tx = ct_io(r, in, "x", sizeof x);
    nrt_tensor_write(tx, x, 0, sizeof x);
    nrt_tensor_t *ar = ct_io(r, out, "ar", sizeof x), *ag = ct_io(r, out, "ag", sizeof x * CT_WORLD);
    for (int run = 0; run < 2; run++) {
        st = nrt_execute(m, in, out);
        CT_CHECK(r, st == NRT_SUCCESS, "nrt_execute #%d: %d", run, (int)st);
        if (st == NRT_SUCCESS)
            ct_check_neff(r, ar, ag);
    }
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    nrt_tensor_free(&tx);
    nrt_tensor_free(&ar);
    nrt_tensor_free(&ag);
    nrt_unload(m);
    return NULL;
}

/* examples/moe_a2av.neff on rank r: every rank sends slot k of its 160
 * tokens (40 each) to rank k; the chunk from rank s lands at 40 s. */
static void *ct_a2av_rank(void *arg)
{
    uint32_t r = (uint32_t)(uintptr_t)arg;
    enum { SLOT = 40, N = SLOT * CT_WORLD };
    nrt_model_t *m = NULL;
    NRT_STATUS st = nrt_load_collectives(ct_neff, ct_neff_size, (int32_t)r, 1, r, CT_WORLD, &m);
    CT_CHECK(r, st == NRT_SUCCESS, "nrt_load_collectives: %d", (int)st);
    if (st != NRT_SUCCESS)
        return NULL;
    float x[N], got[N];
    for (uint32_t i = 0; i < N; i++)
        x[i] = (float)(r * 1000 + i);
    uint32_t ma[3 * CT_WORLD] = {0}, mg[4 * CT_WORLD] = {0};
    for (uint32_t k = 0; k < CT_WORLD; k++) {
        ma[k] = SLOT;                    /* send counts */
        ma[CT_WORLD + k] = k * SLOT;     /* send offsets */
        mg[2 * CT_WORLD + k] = 8;        /* all_gather_v: counts known */
        mg[3 * CT_WORLD + k] = k * 8;    /* receive offsets */
    }
    mg[0] = 8;
    nrt_tensor_set_t *in = NULL, *out = NULL;
    nrt_allocate_tensor_set(&in);
    nrt_allocate_tensor_set(&out);
    nrt_tensor_t *t[7] = {ct_io(r, in, "x", sizeof x), ct_io(r, in, "meta_a", sizeof ma),
                          ct_io(r, in, "meta_g", sizeof mg), ct_io(r, out, "a2av", sizeof x),
                          ct_io(r, out, "agv", 8 * CT_WORLD * 4), ct_io(r, out, "ma", sizeof ma),
                          ct_io(r, out, "mg", sizeof mg)};
    nrt_tensor_write(t[0], x, 0, sizeof x);
    nrt_tensor_write(t[1], ma, 0, sizeof ma);
    nrt_tensor_write(t[2], mg, 0, sizeof mg);
    st = nrt_execute(m, in, out);
    CT_CHECK(r, st == NRT_SUCCESS, "nrt_execute: %d", (int)st);
    size_t bad = 0;
    if (st == NRT_SUCCESS && nrt_tensor_read(t[3], got, 0, sizeof got) == NRT_SUCCESS)
        for (uint32_t i = 0; i < N; i++)
            bad += got[i] != (float)((i / SLOT) * 1000 + r * SLOT + i % SLOT);
    CT_CHECK(r, bad == 0, "a2av: %zu wrong elements", bad);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    for (int i = 0; i < 7; i++)
        nrt_tensor_free(&t[i]);
    nrt_unload(m);
    return NULL;
}

/* ---- the cases ------------------------------------------------------------------ */

/* One VNC on each of four chips. */
static int ct_setup(void **state)
{
    (void)state;
    it_init("trn2.48xlarge", "2", "0,4,8,12", NULL);
    return 0;
}

/* The same on a Trainium3 machine: four chips behind NeuronSwitch. */
static int ct_setup_switch(void **state)
{
    (void)state;
    it_init("trn3.48xlarge", "2", "0,4,8,12", NULL);
    return 0;
}

/* The four VNCs of one chip, one execution computing at a time. */
static int ct_setup_one_chip(void **state)
{
    (void)state;
    setenv("TRNEMU_THREADS", "1", 1);
    it_init("trn2.48xlarge", "2", "0-3", NULL);
    unsetenv("TRNEMU_THREADS");
    return 0;
}

/* The four VNCs of one Trainium3 chip, one execution computing at a time:
 * the variable-count collectives leave the compute gate too. */
static int ct_setup_one_trn3_chip(void **state)
{
    (void)state;
    setenv("TRNEMU_THREADS", "1", 1);
    it_init("trn3.48xlarge", "2", "0-3", NULL);
    unsetenv("TRNEMU_THREADS");
    return 0;
}

static int ct_teardown(void **state)
{
    (void)state;
    nrt_close();
    return 0;
}

static void ct_run_ranks(void *(*fn)(void *))
{
    pthread_t th[CT_WORLD];
    atomic_store(&ct_fails, 0);
    for (uint32_t r = 0; r < CT_WORLD; r++)
        assert_int_equal(pthread_create(&th[r], NULL, fn, (void *)(uintptr_t)r), 0);
    for (uint32_t r = 0; r < CT_WORLD; r++)
        pthread_join(th[r], NULL);
    assert_int_equal(atomic_load(&ct_fails), 0);
}

/* The mesh algorithms for the small operations whatever the CPU count,
 * the chain for the 400 KB all-reduce. */
static void test_host_collectives(void **state)
{
    (void)state;
    setenv("TRNEMU_COLL_MESH_RANKS", "1024", 1);
    ct_run_ranks(ct_host_rank);
    unsetenv("TRNEMU_COLL_MESH_RANKS");
}

static void test_mismatch(void **state)
{
    (void)state;
    ct_run_ranks(ct_mismatch_rank);
}

static void test_neff_collectives_v(void **state)
{
    (void)state;
    ct_neff = it_read_example("moe_a2av.neff", &ct_neff_size);
    ct_run_ranks(ct_a2av_rank);
    free(ct_neff);
    ct_neff = NULL;
}

/* The kernel's all_reduce (1 KiB) and all_gather (4 KiB out) directly in
 * HBM: every rank reads the others' tensors in place (the one-pass fold of
 * fp32 add, and 256-byte parts or 1 KiB inputs gathered with streaming
 * stores). */
static void test_neff_collectives(void **state)
{
    (void)state;
    setenv("TRNEMU_COLL_DIRECT_MIN", "1024", 1);
    ct_build_kernel();
    ct_run_ranks(ct_neff_rank);
    trnemu_kernel_buffer_free(ct_neff);
    ct_neff = NULL;
    unsetenv("TRNEMU_COLL_DIRECT_MIN");
}

int main(void)
{
    /* A dead rank is noticed within seconds, never a hang of the suite. */
    setenv("NEURON_RT_EXEC_TIMEOUT", "60", 0);
    unsetenv("NEURON_RT_ROOT_COMM_ID");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_host_collectives, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_host_collectives, ct_setup_switch, ct_teardown),
        cmocka_unit_test_setup_teardown(test_neff_collectives, ct_setup_switch, ct_teardown),
        cmocka_unit_test_setup_teardown(test_mismatch, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_neff_collectives, ct_setup, ct_teardown),
        cmocka_unit_test_setup_teardown(test_neff_collectives, ct_setup_one_chip, ct_teardown),
        cmocka_unit_test_setup_teardown(test_neff_collectives_v, ct_setup_one_trn3_chip,
                                        ct_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
