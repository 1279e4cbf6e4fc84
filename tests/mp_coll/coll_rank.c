/*
 * coll_rank.c: one rank of the multi-process collective tests
 * (test_coll.sh starts N of them with `trnemu launch`). Uses only the
 * public API: nrt.h, nrt_experimental.h, nrt_async.h and trnemu's kernel
 * builder. Its rank and the number of ranks come from RANK and WORLD_SIZE;
 * it uses local VNC 0 (the launcher gives each rank one core).
 *
 *   coll_rank host      out-of-NEFF: nrt_build_global_comm, nrt_barrier,
 *                       nrt_all_gather, nrta_cc_prepare/_schedule (all-reduce
 *                       of f32/bf16/int32/int8/fp16 with add/max/min, small
 *                       and large, all-gather, reduce-scatter, two replica
 *                       groups at once), every result checked
 *   coll_rank neff      in-NEFF: a kernel built for this rank (all_reduce
 *                       from HBM and through SBUF, all_gather, reduce_scatter,
 *                       all_to_all, permute) loaded with nrt_load_collectives,
 *                       run twice, checked
 *   coll_rank kill      rank KILL_RANK (default N-1) dies during a run of
 *                       all-reduces (KILL_MODE=loop) or while the others wait
 *                       in one (KILL_MODE=idle); every other rank must see
 *                       NRT_EXEC_HW_ERR_COLLECTIVES within 10 s
 *   coll_rank late      rank N-1 never starts; the others must see NRT_TIMEOUT
 *                       (host: nrt_build_global_comm; LATE_NEFF=1: nrt_execute)
 *   coll_rank mismatch  rank 0 all-gathers another size; every rank must see
 *                       NRT_INVALID
 *   coll_rank p2p       nrt_async_sendrecv_* between ranks 2k and 2k+1
 *   coll_rank direct DIR
 *                       in-NEFF reduce_scatter (fp32 add, bf16 add, fp32 max)
 *                       and all_gather (fp32, bf16) of DIRECT_PART elements
 *                       per rank part (default 1001), then nrt_all_gather
 *                       of device tensors (out of place, in place, and with
 *                       an input that overlaps the output elsewhere); every
 *                       result checked against the rank-order fold and
 *                       every output written to DIR/rank-R.bin, which
 *                       test_coll.sh compares between the direct and the
 *                       channel algorithms
 * Exit status 0 when every check held; each failed check prints one line.
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_experimental.h"
#include "trnemu/trnemu_build.h"

#define RANK_PROG "coll_rank"
#include "rank_common.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Input element i of rank r: small integers, so f32 sums are exact. */
static float in_val(uint32_t r, size_t i)
{
    return (float)((int)((r * 131u + i * 7u) % 97u) - 48);
}

static uint16_t bf16_rne(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* ---- out-of-NEFF ------------------------------------------------------------- */

static nrt_tensor_placement_t placement = NRT_TENSOR_PLACEMENT_DEVICE;

static nrt_tensor_t *dev_tensor(size_t bytes, const void *data)
{
    nrt_tensor_t *t = NULL;
    NRT_STATUS st = nrt_tensor_allocate(placement, 0, bytes, "cc", &t);
    CHECK(st == NRT_SUCCESS, "nrt_tensor_allocate(%zu): %d", bytes, (int)st);
    if (st == NRT_SUCCESS && data != NULL)
        CHECK(nrt_tensor_write(t, data, 0, bytes) == NRT_SUCCESS, "nrt_tensor_write");
    return t;
}

/* Wait for request seq (poll on its completion descriptor); its status
 * as the error tracker recorded it. */
static NRT_STATUS cc_wait(nrta_seq_t seq, nrta_error_tracker_t *trk)
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

/* One prepared collective over tensors, on group g (NULL: all ranks). */
static NRT_STATUS cc_run(nrt_cc_op_type_t cc, nrt_dtype_t dt, nrt_op_type_t op, const void *in,
                         size_t in_bytes, void *out, size_t out_bytes, const uint32_t *g,
                         uint32_t ng)
{
    uint32_t all[1024];
    for (uint32_t i = 0; i < world; i++)
        all[i] = i;
    if (g == NULL) {
        g = all;
        ng = world;
    }
    uint32_t pos = 0;
    while (pos < ng && g[pos] != rank)
        pos++;
    nrt_tensor_t *ti = dev_tensor(in_bytes, in), *to = dev_tensor(out_bytes, NULL);
    nrt_cc_comm_t comm = {(uint32_t *)g, pos, ng, rank, world, 0};
    nrt_tensor_list_t li = {&ti, 1}, lo = {&to, 1};
    nrt_cc_context_t *ctx = NULL;
    nrta_seq_t seq = 0;
    nrta_error_tracker_t *trk = NULL;
    NRT_STATUS st = nrta_cc_prepare(&comm, &li, &lo, dt, op, cc, &ctx);
    if (st == NRT_SUCCESS)
        st = nrta_error_tracker_create(0, &trk);
    if (st == NRT_SUCCESS)
        st = nrta_cc_schedule(&ctx, 0, trk, &seq);
    if (st == NRT_SUCCESS)  /* queued: wait for it, then take its status */
        st = cc_wait(seq, trk);
    nrta_error_tracker_destroy(trk);
    if (st == NRT_SUCCESS)
        CHECK(nrt_tensor_read(to, out, 0, out_bytes) == NRT_SUCCESS, "nrt_tensor_read");
    nrt_tensor_free(&ti);
    nrt_tensor_free(&to);
    return st;
}

static void host_all_reduce_f32(size_t n)
{
    float *x = malloc(n * 4), *y = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = in_val(rank, i);
    NRT_STATUS st = cc_run(NRT_CC_ALLREDUCE, NRT_DTYPE_FLOAT32, NRT_OP_ADD, x, n * 4, y, n * 4,
                           NULL, 0);
    CHECK(st == NRT_SUCCESS, "all-reduce f32 add of %zu: status %d", n, (int)st);
    size_t bad = 0;
    for (size_t i = 0; st == NRT_SUCCESS && i < n; i++) {
        float want = 0;
        for (uint32_t r = 0; r < world; r++)
            want += in_val(r, i);
        bad += y[i] != want;
    }
    CHECK(bad == 0, "all-reduce f32 add of %zu: %zu wrong elements", n, bad);
    free(x);
    free(y);
}

/* bf16: rounded once per step, ranks in order, by every algorithm. */
static void host_all_reduce_bf16(size_t n)
{
    uint16_t *x = malloc(n * 2), *y = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        x[i] = bf16_rne(in_val(rank, i) * 1.0078125f + 0.001f * (float)rank);
    NRT_STATUS st = cc_run(NRT_CC_ALLREDUCE, NRT_DTYPE_BFLOAT16, NRT_OP_ADD, x, n * 2, y, n * 2,
                           NULL, 0);
    CHECK(st == NRT_SUCCESS, "all-reduce bf16 add of %zu: status %d", n, (int)st);
    size_t bad = 0;
    for (size_t i = 0; st == NRT_SUCCESS && i < n; i++) {
        uint16_t acc = bf16_rne(in_val(0, i) * 1.0078125f);
        for (uint32_t r = 1; r < world; r++)
            acc = bf16_rne(bf16_f32(acc) +
                           bf16_f32(bf16_rne(in_val(r, i) * 1.0078125f + 0.001f * (float)r)));
        bad += y[i] != acc;
    }
    CHECK(bad == 0, "all-reduce bf16 add of %zu: %zu elements differ from the rank-order fold",
          n, bad);
    free(x);
    free(y);
}

static void host_all_reduce_int(void)
{
    enum { N = 3001 };
    static int32_t x[N], y[N];
    static int8_t a[N], b[N];
    for (size_t i = 0; i < N; i++) {
        x[i] = (int32_t)(rank * 1000003u + i * 7919u) - 500000000;
        a[i] = (int8_t)(rank * 37u + i);
    }
    NRT_STATUS st = cc_run(NRT_CC_ALLREDUCE, NRT_DTYPE_INT32, NRT_OP_MAX, x, sizeof x, y,
                           sizeof y, NULL, 0);
    CHECK(st == NRT_SUCCESS, "all-reduce int32 max: %d", (int)st);
    for (size_t i = 0; st == NRT_SUCCESS && i < N; i++) {
        int32_t want = INT32_MIN;
        for (uint32_t r = 0; r < world; r++) {
            int32_t v = (int32_t)(r * 1000003u + i * 7919u) - 500000000;
            want = v > want ? v : want;
        }
        if (y[i] != want) {
            CHECK(0, "all-reduce int32 max [%zu] = %d, want %d", i, y[i], want);
            break;
        }
    }
    st = cc_run(NRT_CC_ALLREDUCE, NRT_DTYPE_INT8, NRT_OP_MIN, a, sizeof a, b, sizeof b, NULL, 0);
    CHECK(st == NRT_SUCCESS, "all-reduce int8 min: %d", (int)st);
    for (size_t i = 0; st == NRT_SUCCESS && i < N; i++) {
        int8_t want = INT8_MAX;
        for (uint32_t r = 0; r < world; r++) {
            int8_t v = (int8_t)(r * 37u + i);
            want = v < want ? v : want;
        }
        if (b[i] != want) {
            CHECK(0, "all-reduce int8 min [%zu] = %d, want %d", i, b[i], want);
            break;
        }
    }
}

static void host_gather_scatter(void)
{
    enum { N = 300 };
    float x[N], *g = malloc(N * 4 * world);
    for (size_t i = 0; i < N; i++)
        x[i] = in_val(rank, i);
    NRT_STATUS st = cc_run(NRT_CC_ALLGATHER, NRT_DTYPE_FLOAT32, NRT_OP_ADD, x, sizeof x, g,
                           N * 4 * world, NULL, 0);
    CHECK(st == NRT_SUCCESS, "all-gather f32: %d", (int)st);
    for (uint32_t r = 0; st == NRT_SUCCESS && r < world; r++)
        for (size_t i = 0; i < N; i++)
            if (g[r * N + i] != in_val(r, i)) {
                CHECK(0, "all-gather [%u][%zu] = %g", r, i, (double)g[r * N + i]);
                r = world;
                break;
            }
    free(g);
    size_t n = (size_t)world * 500;
    float *s = malloc(n * 4), part[500];
    for (size_t i = 0; i < n; i++)
        s[i] = in_val(rank, i);
    st = cc_run(NRT_CC_REDUCESCATTER, NRT_DTYPE_FLOAT32, NRT_OP_ADD, s, n * 4, part,
                sizeof part, NULL, 0);
    CHECK(st == NRT_SUCCESS, "reduce-scatter f32: %d", (int)st);
    for (size_t i = 0; st == NRT_SUCCESS && i < 500; i++) {
        float want = 0;
        for (uint32_t r = 0; r < world; r++)
            want += in_val(r, rank * 500 + i);
        if (part[i] != want) {
            CHECK(0, "reduce-scatter [%zu] = %g, want %g", i, (double)part[i], (double)want);
            break;
        }
    }
    free(s);
}

/* Even and odd ranks reduce in two groups at the same time. */
static void host_groups(void)
{
    if (world < 2)
        return;
    uint32_t g[1024], ng = 0;
    for (uint32_t r = rank % 2; r < world; r += 2)
        g[ng++] = r;
    float x[64], y[64];
    for (size_t i = 0; i < 64; i++)
        x[i] = in_val(rank, i);
    NRT_STATUS st = cc_run(NRT_CC_ALLREDUCE, NRT_DTYPE_FLOAT32, NRT_OP_ADD, x, sizeof x, y,
                           sizeof y, g, ng);
    CHECK(st == NRT_SUCCESS, "group all-reduce: %d", (int)st);
    for (size_t i = 0; st == NRT_SUCCESS && i < 64; i++) {
        float want = 0;
        for (uint32_t k = 0; k < ng; k++)
            want += in_val(g[k], i);
        if (y[i] != want) {
            CHECK(0, "group all-reduce [%zu] = %g, want %g", i, (double)y[i], (double)want);
            break;
        }
    }
}

static int run_host(void)
{
    NRT_STATUS st = nrt_build_global_comm(0, rank, world);
    CHECK(st == NRT_SUCCESS, "nrt_build_global_comm: %d", (int)st);
    if (st != NRT_SUCCESS)
        return 1;
    CHECK(nrt_barrier(0, rank, world) == NRT_SUCCESS, "nrt_barrier");
    enum { B = 1000 };
    uint8_t in[B], *out = malloc((size_t)B * world);
    for (size_t i = 0; i < B; i++)
        in[i] = (uint8_t)(rank * 31u + i);
    st = nrt_all_gather(0, rank, world, B, in, out);
    CHECK(st == NRT_SUCCESS, "nrt_all_gather: %d", (int)st);
    for (uint32_t r = 0; st == NRT_SUCCESS && r < world; r++)
        for (size_t i = 0; i < B; i++)
            if (out[r * B + i] != (uint8_t)(r * 31u + i)) {
                CHECK(0, "nrt_all_gather [%u][%zu]", r, i);
                r = world;
                break;
            }
    free(out);
    size_t big = world > 16 ? 40000 : 200000;  /* above the mesh limit: chain */
    host_all_reduce_f32(1000);
    host_all_reduce_f32(big);
    /* rank 0's tensors in host memory: no rank can go through device memory */
    placement = rank == 0 ? NRT_TENSOR_PLACEMENT_HOST : NRT_TENSOR_PLACEMENT_DEVICE;
    host_all_reduce_f32(big);
    placement = NRT_TENSOR_PLACEMENT_DEVICE;
    host_all_reduce_bf16(1000);
    host_all_reduce_bf16(big);
    host_all_reduce_int();
    host_gather_scatter();
    host_groups();
    CHECK(nrt_barrier(0, rank, world) == NRT_SUCCESS, "final nrt_barrier");
    return 0;
}

/* ---- in-NEFF ------------------------------------------------------------------- */

#define K_PER 64  /* elements per rank part */

static NRT_STATUS build_kernel(void **neff, size_t *size)
{
    uint32_t c = K_PER * world, w = world;
    trnemu_kernel_t *k;
    NRT_STATUS st = trnemu_kernel_create("coll_kernel", &k);
    if (st != NRT_SUCCESS)
        return st;
    uint32_t sc = c, sag = c * w, srs = c / w;
    trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, &sc, 1);
    trnemu_kernel_add_output(k, "ar", NRT_DTYPE_FLOAT32, &sc, 1);
    trnemu_kernel_add_output(k, "mx", NRT_DTYPE_FLOAT32, &sc, 1);
    trnemu_kernel_add_output(k, "ag", NRT_DTYPE_FLOAT32, &sag, 1);
    trnemu_kernel_add_output(k, "rs", NRT_DTYPE_FLOAT32, &srs, 1);
    trnemu_kernel_add_output(k, "a2a", NRT_DTYPE_FLOAT32, &sc, 1);
    trnemu_kernel_add_output(k, "pm", NRT_DTYPE_FLOAT32, &sc, 1);
    trnemu_kernel_append(k, ".sem loaded");
    trnemu_kernel_append(k, ".sem reduced");
#define X_AP "hbm:x[[%u,1], 0, [1,%u]]:f32"
    trnemu_kernel_appendf(k, "sp.all_reduce dst=hbm:ar[[%u,1], 0, [1,%u]]:f32 src=" X_AP
                          " op=add", c, c, c, c);
    /* max through SBUF: one part per partition, so the operands are not contiguous */
    trnemu_kernel_appendf(k, "sp.dma_copy dst=sbuf[0:%u, 0, [1,%u]]:f32 src=hbm:x[[%u,%u], 0, "
                          "[1,%u]]:f32 signal=loaded+=1", w, K_PER, K_PER, w, K_PER);
    trnemu_kernel_appendf(k, "act.all_reduce dst=sbuf[0:%u, 1024, [1,%u]]:f32 src=sbuf[0:%u, 0, "
                          "[1,%u]]:f32 op=max wait=loaded>=1 signal=reduced+=1", w, K_PER, w,
                          K_PER);
    trnemu_kernel_appendf(k, "act.dma_copy dst=hbm:mx[[%u,%u], 0, [1,%u]]:f32 src=sbuf[0:%u, "
                          "1024, [1,%u]]:f32 wait=reduced>=1", K_PER, w, K_PER, w, K_PER);
    trnemu_kernel_appendf(k, "pool.all_gather dst=hbm:ag[[%u,1], 0, [1,%u]]:f32 src=" X_AP,
                          c * w, c * w, c, c);
    trnemu_kernel_appendf(k, "dve.reduce_scatter dst=hbm:rs[[%u,1], 0, [1,%u]]:f32 src=" X_AP
                          " op=add", srs, srs, c, c);
    trnemu_kernel_appendf(k, "sp.all_to_all dst=hbm:a2a[[%u,1], 0, [1,%u]]:f32 src=" X_AP, c,
                          c, c, c);
    trnemu_kernel_appendf(k, "sp.permute dst=hbm:pm[[%u,1], 0, [1,%u]]:f32 src=" X_AP
                          " send_to=%u recv_from=%u", c, c, c, c, (rank + 1) % w,
                          (rank + w - 1) % w);
    st = trnemu_kernel_write(k, neff, size);
    if (st != NRT_SUCCESS)
        fprintf(stderr, "kernel: %s\n", trnemu_kernel_error(k));
    trnemu_kernel_free(k);
    return st;
}

static nrt_tensor_t *io_tensor(nrt_tensor_set_t *set, const char *name, size_t bytes)
{
    nrt_tensor_t *t = dev_tensor(bytes, NULL);
    CHECK(nrt_add_tensor_to_tensor_set(set, name, t) == NRT_SUCCESS, "add %s", name);
    return t;
}

static void check_neff_outputs(nrt_tensor_t *const *t)
{
    uint32_t c = K_PER * world;
    float *v = malloc((size_t)c * world * 4);
    const char *names[] = {"ar", "mx", "ag", "rs", "a2a", "pm"};
    size_t sizes[] = {c, c, (size_t)c * world, c / world, c, c};
    for (int o = 0; o < 6; o++) {
        CHECK(nrt_tensor_read(t[o], v, 0, sizes[o] * 4) == NRT_SUCCESS, "read %s", names[o]);
        size_t bad = 0;
        for (size_t i = 0; i < sizes[o]; i++) {
            float want = 0;
            switch (o) {
            case 0:
                for (uint32_t r = 0; r < world; r++)
                    want += in_val(r, i);
                break;
            case 1:
                want = -1e30f;
                for (uint32_t r = 0; r < world; r++)
                    want = in_val(r, i) > want ? in_val(r, i) : want;
                break;
            case 2: want = in_val((uint32_t)(i / c), i % c); break;
            case 3:
                for (uint32_t r = 0; r < world; r++)
                    want += in_val(r, rank * (c / world) + i);
                break;
            case 4: want = in_val((uint32_t)(i / K_PER), rank * K_PER + i % K_PER); break;
            default: want = in_val((rank + world - 1) % world, i); break;
            }
            bad += v[i] != want;
        }
        CHECK(bad == 0, "in-NEFF %s: %zu of %zu elements wrong", names[o], bad, sizes[o]);
    }
    free(v);
}

static int run_neff(void)
{
    void *neff;
    size_t size;
    if (build_kernel(&neff, &size) != NRT_SUCCESS)
        return 1;
    nrt_model_t *m = NULL;
    NRT_STATUS st = nrt_load_collectives(neff, size, 0, -1, rank, world, &m);
    trnemu_kernel_buffer_free(neff);
    CHECK(st == NRT_SUCCESS, "nrt_load_collectives: %d", (int)st);
    if (st != NRT_SUCCESS)
        return 1;
    uint32_t c = K_PER * world;
    float *x = malloc(c * 4);
    for (size_t i = 0; i < c; i++)
        x[i] = in_val(rank, i);
    nrt_tensor_set_t *in, *out;
    nrt_allocate_tensor_set(&in);
    nrt_allocate_tensor_set(&out);
    nrt_tensor_t *tx = io_tensor(in, "x", c * 4);
    nrt_tensor_write(tx, x, 0, c * 4);
    nrt_tensor_t *t[6] = {io_tensor(out, "ar", c * 4), io_tensor(out, "mx", c * 4),
                          io_tensor(out, "ag", (size_t)c * world * 4),
                          io_tensor(out, "rs", c / world * 4), io_tensor(out, "a2a", c * 4),
                          io_tensor(out, "pm", c * 4)};
    for (int run = 0; run < 2; run++) {
        st = nrt_execute(m, in, out);
        CHECK(st == NRT_SUCCESS, "nrt_execute #%d: %d", run, (int)st);
        if (st == NRT_SUCCESS)
            check_neff_outputs(t);
    }
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    nrt_tensor_free(&tx);
    for (int o = 0; o < 6; o++)
        nrt_tensor_free(&t[o]);
    nrt_unload(m);
    free(x);
    return 0;
}

/* ---- direct against channels ------------------------------------------------------ */

/* Input element i of rank r for the direct test: fractions, so that sums
 * round and a fold in another order would show. */
static float dv(uint32_t r, size_t i)
{
    return in_val(r, i) * 0.37f + (float)r * 0.011f;
}

/* Outputs of the direct test, in the order they are written out: the
 * kernel's, then the host all-gathers' (out of place, in place, and with
 * the input in block 0 of the output on every rank). */
enum { DO_RSA, DO_RSB, DO_RSM, DO_AGF, DO_AGB, DO_KERNEL, DO_HAG = DO_KERNEL, DO_HIP, DO_HOV,
       DO_N };
static const char *const direct_names[DO_N] = {"rsa", "rsb", "rsm", "agf", "agb", "host",
                                               "host in place", "host overlapping"};

static NRT_STATUS build_direct_kernel(uint32_t p, void **neff, size_t *size)
{
    uint32_t c = p * world, g = c * world;
    trnemu_kernel_t *k;
    NRT_STATUS st = trnemu_kernel_create("direct_kernel", &k);
    if (st != NRT_SUCCESS)
        return st;
    trnemu_kernel_add_input(k, "xf", NRT_DTYPE_FLOAT32, &c, 1);
    trnemu_kernel_add_input(k, "xb", NRT_DTYPE_BFLOAT16, &c, 1);
    trnemu_kernel_add_output(k, "rsa", NRT_DTYPE_FLOAT32, &p, 1);
    trnemu_kernel_add_output(k, "rsb", NRT_DTYPE_BFLOAT16, &p, 1);
    trnemu_kernel_add_output(k, "rsm", NRT_DTYPE_FLOAT32, &p, 1);
    trnemu_kernel_add_output(k, "agf", NRT_DTYPE_FLOAT32, &g, 1);
    trnemu_kernel_add_output(k, "agb", NRT_DTYPE_BFLOAT16, &g, 1);
    /* an HBM operand of n elements */
#define DAP(name, dt) "hbm:" name "[[%u,1], 0, [1,%u]]:" dt
    trnemu_kernel_appendf(k, "sp.reduce_scatter dst=" DAP("rsa", "f32") " src="
                          DAP("xf", "f32") " op=add", p, p, c, c);
    trnemu_kernel_appendf(k, "sp.reduce_scatter dst=" DAP("rsb", "bf16") " src="
                          DAP("xb", "bf16") " op=add", p, p, c, c);
    trnemu_kernel_appendf(k, "sp.reduce_scatter dst=" DAP("rsm", "f32") " src="
                          DAP("xf", "f32") " op=max", p, p, c, c);
    trnemu_kernel_appendf(k, "sp.all_gather dst=" DAP("agf", "f32") " src=" DAP("xf", "f32"),
                          g, g, c, c);
    trnemu_kernel_appendf(k, "sp.all_gather dst=" DAP("agb", "bf16") " src=" DAP("xb", "bf16"),
                          g, g, c, c);
#undef DAP
    st = trnemu_kernel_write(k, neff, size);
    if (st != NRT_SUCCESS)
        fprintf(stderr, "kernel: %s\n", trnemu_kernel_error(k));
    trnemu_kernel_free(k);
    return st;
}

/* Element i of the reduce-scatter of rank part `rank`: the rank-order fold
 * of fp32 add, bf16 add (rounded at every step) or fp32 max. */
static float direct_want_rs(int which, uint32_t p, size_t i)
{
    size_t e = (size_t)rank * p + i;
    float acc = which == DO_RSB ? bf16_f32(bf16_rne(dv(0, e))) : dv(0, e);
    for (uint32_t r = 1; r < world; r++) {
        float x = dv(r, e);
        if (which == DO_RSA)
            acc = acc + x;
        else if (which == DO_RSB)
            acc = bf16_f32(bf16_rne(acc + bf16_f32(bf16_rne(x))));
        else
            acc = x > acc ? x : acc;
    }
    return acc;
}

/* Element i of output o (as fp32; bf16 outputs widened). */
static float direct_want(int o, uint32_t p, size_t i)
{
    uint32_t c = p * world;
    switch (o) {
    case DO_RSA: case DO_RSB: case DO_RSM: return direct_want_rs(o, p, i);
    case DO_AGB: return bf16_f32(bf16_rne(dv((uint32_t)(i / c), i % c)));
    default: return dv((uint32_t)(i / c), i % c);
    }
}

/* Check output o (n elements of es bytes at v) and append it to f. */
static void direct_check(int o, uint32_t p, const uint8_t *v, size_t n, size_t es, FILE *f)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float got;
        if (es == 2) {
            uint16_t h;
            memcpy(&h, v + i * 2, 2);
            got = bf16_f32(h);
        } else {
            memcpy(&got, v + i * 4, 4);
        }
        bad += got != direct_want(o, p, i);
    }
    CHECK(bad == 0, "direct %s: %zu of %zu elements differ from the rank-order fold",
          direct_names[o], bad, n);
    CHECK(f == NULL || fwrite(v, es, n, f) == n, "write %s", direct_names[o]);
}

/* Run the kernel's collectives; its outputs into t[0 .. DO_KERNEL). */
static NRT_STATUS direct_kernel_run(uint32_t p, const float *xf, const uint16_t *xb,
                                    nrt_tensor_t **t, const size_t *bytes)
{
    uint32_t c = p * world;
    void *neff;
    size_t size;
    NRT_STATUS st = build_direct_kernel(p, &neff, &size);
    if (st != NRT_SUCCESS)
        return st;
    nrt_model_t *m = NULL;
    st = nrt_load_collectives(neff, size, 0, -1, rank, world, &m);
    trnemu_kernel_buffer_free(neff);
    CHECK(st == NRT_SUCCESS, "nrt_load_collectives: %d", (int)st);
    if (st != NRT_SUCCESS)
        return st;
    nrt_tensor_set_t *in, *out;
    nrt_allocate_tensor_set(&in);
    nrt_allocate_tensor_set(&out);
    nrt_tensor_t *tf = io_tensor(in, "xf", (size_t)c * 4), *tb = io_tensor(in, "xb", (size_t)c * 2);
    nrt_tensor_write(tf, xf, 0, (size_t)c * 4);
    nrt_tensor_write(tb, xb, 0, (size_t)c * 2);
    for (int o = 0; o < DO_KERNEL; o++)
        t[o] = io_tensor(out, direct_names[o], bytes[o]);
    st = nrt_execute(m, in, out);
    CHECK(st == NRT_SUCCESS, "nrt_execute: %d", (int)st);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    nrt_tensor_free(&tf);
    nrt_tensor_free(&tb);
    nrt_unload(m);
    return st;
}

/* nrt_all_gather between device tensors (their addresses from
 * nrt_tensor_get_va): out of place into t[DO_HAG], in place in t[DO_HIP]
 * (the input is this rank's block), and in t[DO_HOV] with the input in
 * block 0 on every rank (overlapping the output elsewhere on the others). */
static NRT_STATUS direct_host_run(uint32_t p, const float *xf, nrt_tensor_t **t,
                                  const size_t *bytes)
{
    size_t blk = (size_t)p * world * 4;
    nrt_tensor_t *src = dev_tensor(blk, xf);
    for (int o = DO_HAG; o < DO_N; o++)
        t[o] = dev_tensor(bytes[o], NULL);
    nrt_tensor_write(t[DO_HIP], xf, rank * blk, blk);
    nrt_tensor_write(t[DO_HOV], xf, 0, blk);
    uint8_t *ip = nrt_tensor_get_va(t[DO_HIP]), *ov = nrt_tensor_get_va(t[DO_HOV]);
    NRT_STATUS st = nrt_all_gather(0, rank, world, (uint32_t)blk, nrt_tensor_get_va(src),
                                   nrt_tensor_get_va(t[DO_HAG]));
    if (st == NRT_SUCCESS)
        st = nrt_all_gather(0, rank, world, (uint32_t)blk, ip + rank * blk, ip);
    if (st == NRT_SUCCESS)
        st = nrt_all_gather(0, rank, world, (uint32_t)blk, ov, ov);
    CHECK(st == NRT_SUCCESS, "nrt_all_gather of device tensors: %d", (int)st);
    nrt_tensor_free(&src);
    return st;
}

static int run_direct(const char *dir)
{
    uint32_t p = env_u32("DIRECT_PART", 1001), c = p * world, g = c * world;
    size_t counts[DO_N] = {p, p, p, g, g, g, g, g}, es[DO_N] = {4, 2, 4, 4, 2, 4, 4, 4};
    size_t bytes[DO_N];
    for (int o = 0; o < DO_N; o++)
        bytes[o] = counts[o] * es[o];
    float *xf = malloc((size_t)g * 4);
    uint16_t *xb = malloc((size_t)c * 2);
    for (size_t i = 0; i < c; i++) {
        xf[i] = dv(rank, i);
        xb[i] = bf16_rne(xf[i]);
    }
    nrt_tensor_t *t[DO_N] = {NULL};
    NRT_STATUS st = direct_kernel_run(p, xf, xb, t, bytes);
    if (st == NRT_SUCCESS)
        st = direct_host_run(p, xf, t, bytes);
    char path[512];
    snprintf(path, sizeof path, "%s/rank-%u.bin", dir, rank);
    FILE *f = st == NRT_SUCCESS ? fopen(path, "wb") : NULL;
    CHECK(st != NRT_SUCCESS || f != NULL, "cannot write %s", path);
    for (int o = 0; f != NULL && o < DO_N; o++) {
        CHECK(nrt_tensor_read(t[o], xf, 0, bytes[o]) == NRT_SUCCESS, "read %s",
              direct_names[o]);
        direct_check(o, p, (const uint8_t *)xf, counts[o], es[o], f);
    }
    if (f != NULL)
        fclose(f);
    for (int o = 0; o < DO_N; o++)
        if (t[o] != NULL)
            nrt_tensor_free(&t[o]);
    free(xf);
    free(xb);
    return st != NRT_SUCCESS;
}

/* ---- faults ---------------------------------------------------------------------- */

static void *killer(void *arg)
{
    usleep((useconds_t)(uintptr_t)arg);
    raise(SIGKILL);
    return NULL;
}

static int run_kill(void)
{
    uint32_t victim = env_u32("KILL_RANK", world - 1);
    const char *mode = getenv("KILL_MODE");
    bool idle = mode != NULL && strcmp(mode, "idle") == 0;
    NRT_STATUS st = nrt_build_global_comm(0, rank, world);
    CHECK(st == NRT_SUCCESS, "nrt_build_global_comm: %d", (int)st);
    CHECK(nrt_barrier(0, rank, world) == NRT_SUCCESS, "nrt_barrier");
    if (rank == victim) {
        if (idle) {
            usleep(300000);
            raise(SIGKILL);
        }
        pthread_t th;
        pthread_create(&th, NULL, killer, (void *)(uintptr_t)150000);
    }
    enum { N = 64 << 10 };
    static float x[N], y[N];
    double t0 = now_s(), t_fail = 0;
    st = NRT_SUCCESS;
    for (int i = 0; st == NRT_SUCCESS && now_s() - t0 < 30; i++) {
        st = cc_run(NRT_CC_ALLREDUCE, NRT_DTYPE_FLOAT32, NRT_OP_ADD, x, sizeof x, y, sizeof y,
                    NULL, 0);
        t_fail = now_s() - t0;
    }
    CHECK(st == NRT_EXEC_HW_ERR_COLLECTIVES, "after rank %u died: status %d, want %d", victim,
          (int)st, (int)NRT_EXEC_HW_ERR_COLLECTIVES);
    CHECK(t_fail < 10, "the failure took %.1f s", t_fail);
    /* the communicator stays broken: the next call fails at once */
    double t1 = now_s();
    CHECK(nrt_barrier(0, rank, world) != NRT_SUCCESS, "barrier after the failure succeeded");
    CHECK(now_s() - t1 < 1, "barrier after the failure took %.1f s", now_s() - t1);
    return 0;
}

static int run_late(void)
{
    if (rank == world - 1)
        return 0;  /* never turns up */
    double t0 = now_s();
    NRT_STATUS st;
    if (env_u32("LATE_NEFF", 0)) {
        void *neff;
        size_t size;
        nrt_model_t *m = NULL;
        if (build_kernel(&neff, &size) != NRT_SUCCESS)
            return 1;
        st = nrt_load_collectives(neff, size, 0, -1, rank, world, &m);
        trnemu_kernel_buffer_free(neff);
        CHECK(st == NRT_SUCCESS, "nrt_load_collectives: %d", (int)st);
        uint32_t c = K_PER * world;
        nrt_tensor_set_t *in, *out;
        nrt_allocate_tensor_set(&in);
        nrt_allocate_tensor_set(&out);
        nrt_tensor_t *t[7] = {io_tensor(in, "x", c * 4), io_tensor(out, "ar", c * 4),
                              io_tensor(out, "mx", c * 4),
                              io_tensor(out, "ag", (size_t)c * world * 4),
                              io_tensor(out, "rs", c / world * 4), io_tensor(out, "a2a", c * 4),
                              io_tensor(out, "pm", c * 4)};
        st = nrt_execute(m, in, out);
        nrt_destroy_tensor_set(&in);
        nrt_destroy_tensor_set(&out);
        for (int i = 0; i < 7; i++)
            nrt_tensor_free(&t[i]);
        nrt_unload(m);
    } else {
        st = nrt_build_global_comm(0, rank, world);
    }
    double dt = now_s() - t0;
    CHECK(st == NRT_TIMEOUT, "rank %u never came: status %d, want NRT_TIMEOUT", world - 1,
          (int)st);
    CHECK(dt > 1 && dt < 15, "the timeout came after %.1f s", dt);
    return 0;
}

static int run_mismatch(void)
{
    CHECK(nrt_build_global_comm(0, rank, world) == NRT_SUCCESS, "nrt_build_global_comm");
    uint32_t n = rank == 0 ? 100 : 200;
    uint8_t in[200] = {0}, *out = calloc(world, 200);
    NRT_STATUS st = nrt_all_gather(0, rank, world, n, in, out);
    CHECK(st == NRT_INVALID, "all-gather of %u bytes on rank 0, 200 elsewhere: status %d, want "
          "NRT_INVALID", n, (int)st);
    free(out);
    return 0;
}

/* Every other rank leaves after a barrier (its process ends): rank 0's
 * next nrta_cc_prepare on the communicator fails with
 * NRT_EXEC_HW_ERR_COLLECTIVES instead of preparing work no peer will do. */
static int run_left(void)
{
    CHECK(nrt_build_global_comm(0, rank, world) == NRT_SUCCESS, "nrt_build_global_comm");
    CHECK(nrt_barrier(0, rank, world) == NRT_SUCCESS, "nrt_barrier");
    if (rank != 0)
        return 0;
    uint32_t all[64];
    for (uint32_t i = 0; i < world && i < 64; i++)
        all[i] = i;
    float x[16] = {0};
    nrt_tensor_t *ti = dev_tensor(sizeof x, x), *to = dev_tensor(sizeof x, NULL);
    nrt_cc_comm_t comm = {all, 0, world, rank, world, 0};
    nrt_tensor_list_t li = {&ti, 1}, lo = {&to, 1};
    NRT_STATUS st = NRT_SUCCESS;
    double t0 = now_s();
    /* contexts prepared while the peers are still exiting are freed by nrt_close */
    while (st == NRT_SUCCESS && now_s() - t0 < 20) {
        nrt_cc_context_t *ctx = NULL;
        st = nrta_cc_prepare(&comm, &li, &lo, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE,
                             &ctx);
        if (st == NRT_SUCCESS)
            usleep(50000);
    }
    CHECK(st == NRT_EXEC_HW_ERR_COLLECTIVES, "nrta_cc_prepare after the peers left: status %d, "
          "want %d", (int)st, (int)NRT_EXEC_HW_ERR_COLLECTIVES);
    nrt_tensor_free(&ti);
    nrt_tensor_free(&to);
    return 0;
}

/* ---- point to point ------------------------------------------------------------ */

static int run_p2p(void)
{
    const char *vis = getenv("NEURON_RT_VISIBLE_CORES");
    int lnc = vis != NULL ? atoi(vis) : (int)rank;  /* this rank's absolute VNC */
    int per = (int)env_u32("CORES_PER_RANK", 1);
    int peer_lnc = rank % 2 == 0 ? lnc + per : lnc - per;
    if (rank % 2 == 0 && rank + 1 >= world)
        return 0;
    CHECK(nrt_async_sendrecv_init(lnc) == NRT_SUCCESS, "sendrecv_init");
    enum { B = 3u << 20 };
    uint8_t *buf = malloc(B);
    nrt_tensor_t *t = dev_tensor(B, NULL);
    nrt_async_sendrecv_comm_t *comm = NULL;
    bool sender = rank % 2 == 0;
    NRT_STATUS st = sender ? nrt_async_sendrecv_connect("127.0.0.1", peer_lnc, lnc, &comm)
                           : nrt_async_sendrecv_accept("localhost", peer_lnc, lnc, &comm);
    CHECK(st == NRT_SUCCESS, "connect/accept: %d", (int)st);
    bool done = false;
    double t0 = now_s();
    while (st == NRT_SUCCESS && !done && now_s() - t0 < 20)
        st = nrt_async_sendrecv_test_comm(comm, &done);
    CHECK(st == NRT_SUCCESS && done, "test_comm: %d", (int)st);
    for (int round = 0; round < 3 && st == NRT_SUCCESS; round++) {
        size_t off = (size_t)round * 1000, len = B - (size_t)round * 5000;
        if (sender) {
            for (size_t i = 0; i < len; i++)
                buf[i] = (uint8_t)(i * 7 + (size_t)round + rank);
            nrt_tensor_write(t, buf, off, len);
        }
        nrt_async_sendrecv_request_t *req = NULL;
        st = sender ? nrt_async_sendrecv_send_tensor(t, off, len, comm, &req)
                    : nrt_async_sendrecv_recv_tensor(t, off, len, comm, &req);
        CHECK(st == NRT_SUCCESS, "send/recv #%d: %d", round, (int)st);
        size_t got = 0;
        done = false;
        while (st == NRT_SUCCESS && !done && now_s() - t0 < 20)
            st = nrt_async_sendrecv_test_request(req, &done, &got);
        CHECK(st == NRT_SUCCESS && done && got == len, "request #%d: status %d, %zu of %zu bytes",
              round, (int)st, got, len);
        if (!sender && st == NRT_SUCCESS) {
            nrt_tensor_read(t, buf, off, len);
            size_t bad = 0;
            for (size_t i = 0; i < len; i++)
                bad += buf[i] != (uint8_t)(i * 7 + (size_t)round + rank - 1);
            CHECK(bad == 0, "received #%d: %zu bytes wrong", round, bad);
        }
    }
    CHECK(nrt_async_sendrecv_flush(lnc) == NRT_SUCCESS, "flush");
    CHECK(nrt_async_sendrecv_close(lnc) == NRT_SUCCESS, "close");
    nrt_tensor_free(&t);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: coll_rank host|neff|kill|late|mismatch|p2p|left|direct DIR\n");
        return 2;
    }
    rank = env_u32("RANK", 0);
    world = env_u32("WORLD_SIZE", 1);
    const char *c = argv[1];
    if (strcmp(c, "late") == 0 && rank == world - 1)
        return 0;
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    if (st != NRT_SUCCESS) {
        fprintf(stderr, "coll_rank %u: nrt_init: %d\n", rank, (int)st);
        return 1;
    }
    int rc = strcmp(c, "host") == 0       ? run_host()
             : strcmp(c, "neff") == 0     ? run_neff()
             : strcmp(c, "kill") == 0     ? run_kill()
             : strcmp(c, "late") == 0     ? run_late()
             : strcmp(c, "mismatch") == 0 ? run_mismatch()
             : strcmp(c, "p2p") == 0      ? run_p2p()
             : strcmp(c, "left") == 0     ? run_left()
             : strcmp(c, "direct") == 0   ? run_direct(argc > 2 ? argv[2] : ".")
                                          : 2;
    nrt_close();
    return rc != 0 ? rc : fails != 0;
}
