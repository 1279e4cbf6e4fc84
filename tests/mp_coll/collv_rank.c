/*
 * collv_rank.c: one rank of the variable-count collective tests
 * (test_collv.sh starts N of them with `trnemu launch` on an emulated Trn3
 * machine). Uses only the public API: nrt.h, nrt_experimental.h, trnemu.h
 * and trnemu's kernel builder. Rank and rank count come from RANK and
 * WORLD_SIZE; it uses local VNC 0.
 *
 *   collv_rank host   trnemu_all_to_all_v and trnemu_all_gather_v with
 *                     uneven sizes, zero sizes (a rank that sends nothing,
 *                     one that receives nothing from some rank), blocks at
 *                     scattered offsets; results against a reference
 *                     computed here; then sizes that disagree between two
 *                     ranks: NRT_INVALID on every rank, and the next
 *                     collective still works; equal sizes in equal slots
 *                     (no staging), the all-gather in place;
 *                     every size zero; each rank sending only to itself
 *   collv_rank neff   a kernel with all_to_all_v (equal slots, received
 *                     counts written back) and all_gather_v (receive
 *                     displacements, counts known) whose metadata is an
 *                     input; outputs and metadata checked, run twice; then
 *                     a send count larger than its receiver's slot: the
 *                     execution fails on every rank
 *   collv_rank example NEFF
 *                     the same checks on examples/moe_a2av.s (4 ranks),
 *                     whose metadata goes through SBUF
 * Exit status 0 when every check held; each failed check prints one line.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "trnemu/trnemu.h"
#include "trnemu/trnemu_build.h"

#define RANK_PROG "collv_rank"
#include "rank_common.h"

/* Byte i of rank s's input. */
static uint8_t in_byte(uint32_t s, uint64_t i)
{
    return (uint8_t)(s * 31u + i * 7u + 1u);
}

/* Bytes rank s sends rank r (all_to_all_v): uneven, some zero, and rank 1
 * sends nothing at all. */
static uint64_t a2a_size(uint32_t s, uint32_t r)
{
    return s == 1 ? 0 : (uint64_t)((s * 3u + r * 5u) % 7u) * 13u;
}

/* Bytes rank s contributes to all_gather_v (rank 0: none). */
static uint64_t ag_size(uint32_t s)
{
    return (uint64_t)((s * 5u) % 9u) * 11u;
}

#define GAP 3u  /* bytes left between blocks; they must keep their value */

/* Offsets of blocks of the given sizes: packed with GAP bytes between, in
 * reverse rank order when reverse. Returns the extent. */
static uint64_t lay_out(uint64_t *layout, uint32_t n, bool reverse)
{
    uint64_t at = GAP;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t r = reverse ? n - 1 - k : k;
        layout[n + r] = at;
        at += layout[r] + GAP;
    }
    return at;
}

/* ---- out-of-NEFF ------------------------------------------------------------- */

/* all_to_all_v: send block r = bytes [first, first + size) of a running
 * count over this rank's blocks, so the receiver can tell where it was. */
static NRT_STATUS host_a2a(int32_t skew_from)
{
    uint32_t n = world;
    uint64_t *sl = calloc(2 * n, 8), *rl = calloc(2 * n, 8);
    for (uint32_t r = 0; r < n; r++) {
        sl[r] = a2a_size(rank, r);
        rl[r] = a2a_size(r, rank) + (skew_from == (int32_t)r ? 1 : 0);
    }
    uint64_t ibytes = lay_out(sl, n, false), obytes = lay_out(rl, n, true);
    uint8_t *in = malloc(ibytes), *out = malloc(obytes);
    for (uint64_t i = 0; i < ibytes; i++)
        in[i] = in_byte(rank, i);
    memset(out, 0xee, obytes);
    NRT_STATUS st = trnemu_all_to_all_v(0, rank, n, in, sl, out, rl);
    if (st == NRT_SUCCESS) {
        uint64_t bad = 0;
        uint8_t *want = malloc(obytes);
        memset(want, 0xee, obytes);
        for (uint32_t s = 0; s < n; s++) {
            uint64_t from = GAP;  /* offset of block `rank` in sender s's input */
            for (uint32_t r = 0; r < rank; r++)
                from += a2a_size(s, r) + GAP;
            for (uint64_t i = 0; i < rl[s]; i++)
                want[rl[n + s] + i] = in_byte(s, from + i);
        }
        for (uint64_t i = 0; i < obytes; i++)
            bad += out[i] != want[i];
        CHECK(bad == 0, "trnemu_all_to_all_v: %" PRIu64 " of %" PRIu64 " bytes wrong", bad,
              obytes);
        free(want);
    }
    free(in);
    free(out);
    free(sl);
    free(rl);
    return st;
}

static NRT_STATUS host_ag(void)
{
    uint32_t n = world;
    uint64_t *rl = calloc(2 * n, 8);
    for (uint32_t s = 0; s < n; s++)
        rl[s] = ag_size(s);
    uint64_t obytes = lay_out(rl, n, rank % 2 == 1), ibytes = ag_size(rank);
    uint8_t *in = malloc(ibytes + 1), *out = malloc(obytes), *want = malloc(obytes);
    for (uint64_t i = 0; i < ibytes; i++)
        in[i] = in_byte(rank, i);
    memset(out, 0xee, obytes);
    memset(want, 0xee, obytes);
    for (uint32_t s = 0; s < n; s++)
        for (uint64_t i = 0; i < rl[s]; i++)
            want[rl[n + s] + i] = in_byte(s, i);
    NRT_STATUS st = trnemu_all_gather_v(0, rank, n, in, ibytes, out, rl);
    uint64_t bad = 0;
    for (uint64_t i = 0; st == NRT_SUCCESS && i < obytes; i++)
        bad += out[i] != want[i];
    CHECK(bad == 0, "trnemu_all_gather_v: %" PRIu64 " of %" PRIu64 " bytes wrong", bad, obytes);
    free(in);
    free(out);
    free(want);
    free(rl);
    return st;
}

/* Equal sizes in equal slots (the unstaged path): both operations, the
 * all-gather with its input in its own slot of the output. */
static void host_uniform(void)
{
    enum { M = 1000 };
    uint32_t n = world;
    uint64_t *l = calloc(2 * n, 8);
    for (uint32_t r = 0; r < n; r++) {
        l[r] = M;
        l[n + r] = (uint64_t)r * M;
    }
    uint8_t *in = malloc((size_t)M * n), *out = malloc((size_t)M * n);
    for (uint32_t i = 0; i < M * n; i++)
        in[i] = in_byte(rank, i);
    NRT_STATUS st = trnemu_all_to_all_v(0, rank, n, in, l, out, l);
    uint64_t bad = 0;
    for (uint32_t i = 0; st == NRT_SUCCESS && i < M * n; i++)  /* slot s: sender s's block `rank` */
        bad += out[i] != in_byte(i / M, (uint64_t)rank * M + i % M);
    CHECK(st == NRT_SUCCESS && bad == 0, "uniform trnemu_all_to_all_v: status %d, %" PRIu64
          " bytes wrong", (int)st, bad);
    for (uint32_t i = 0; i < M; i++)
        out[(size_t)rank * M + i] = in_byte(rank, i);
    st = trnemu_all_gather_v(0, rank, n, out + (size_t)rank * M, M, out, l);
    bad = 0;
    for (uint32_t i = 0; st == NRT_SUCCESS && i < M * n; i++)
        bad += out[i] != in_byte(i / M, i % M);
    CHECK(st == NRT_SUCCESS && bad == 0, "uniform in-place trnemu_all_gather_v: status %d, %"
          PRIu64 " bytes wrong", (int)st, bad);
    free(in);
    free(out);
    free(l);
}

/* Every size zero (nothing moves, the output keeps its bytes), then each
 * rank sending only to itself (no data step: a local copy). */
static void host_zero_and_self(void)
{
    uint32_t n = world;
    uint64_t *l = calloc(2 * n, 8);
    uint8_t in[64], out[64];
    for (uint32_t i = 0; i < 64; i++)
        in[i] = in_byte(rank, i);
    memset(out, 0xee, sizeof out);
    NRT_STATUS st = trnemu_all_to_all_v(0, rank, n, in, l, out, l);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < 64; i++)
        bad += out[i] != 0xee;
    CHECK(st == NRT_SUCCESS && bad == 0, "all-zero trnemu_all_to_all_v: status %d, %u bytes "
          "changed", (int)st, bad);
    st = trnemu_all_gather_v(0, rank, n, NULL, 0, out, l);
    CHECK(st == NRT_SUCCESS, "all-zero trnemu_all_gather_v: status %d", (int)st);
    l[rank] = 17;  /* 17 bytes to itself, from offset 5, landing at offset 40 */
    l[n + rank] = 5;
    uint64_t *rl = calloc(2 * n, 8);
    rl[rank] = 17;
    rl[n + rank] = 40;
    st = trnemu_all_to_all_v(0, rank, n, in, l, out, rl);
    bad = 0;
    for (uint32_t i = 0; i < 64; i++)
        bad += out[i] != (i >= 40 && i < 57 ? in_byte(rank, i - 35) : 0xee);
    CHECK(st == NRT_SUCCESS && bad == 0, "self-only trnemu_all_to_all_v: status %d, %u bytes "
          "wrong", (int)st, bad);
    free(l);
    free(rl);
}

static int run_host(void)
{
    CHECK(nrt_build_global_comm(0, rank, world) == NRT_SUCCESS, "nrt_build_global_comm");
    for (int round = 0; round < 2; round++) {
        NRT_STATUS st = host_a2a(-1);
        CHECK(st == NRT_SUCCESS, "trnemu_all_to_all_v #%d: %d", round, (int)st);
        st = host_ag();
        CHECK(st == NRT_SUCCESS, "trnemu_all_gather_v #%d: %d", round, (int)st);
        host_uniform();
        host_zero_and_self();
    }
    /* rank 0 expects one byte more from the last rank than it sends */
    NRT_STATUS st = host_a2a(rank == 0 ? (int32_t)world - 1 : -1);
    CHECK(st == NRT_INVALID, "disagreeing sizes: status %d, want NRT_INVALID", (int)st);
    st = host_a2a(-1);
    CHECK(st == NRT_SUCCESS, "trnemu_all_to_all_v after the disagreement: %d", (int)st);
    CHECK(nrt_barrier(0, rank, world) == NRT_SUCCESS, "final nrt_barrier");
    return 0;
}

/* ---- in-NEFF ------------------------------------------------------------------- */

#define SLOT 40u  /* all_to_all_v: dst elements per rank */

/* f32 elements rank s sends rank r in the kernel (at most SLOT; rank 1 none). */
static uint32_t k_count(uint32_t s, uint32_t r)
{
    return s == 1 ? 0 : (s * 7u + r * 3u) % 9u * 4u;
}

/* all_gather_v: elements rank s contributes, from which offset of x. */
static uint32_t kg_count(uint32_t s)
{
    return (s * 5u + 2u) % 7u;
}

static float x_val(uint32_t s, uint32_t i)
{
    return (float)(s * 1000u + i);
}

static NRT_STATUS build_kernel(void **neff, size_t *size)
{
    uint32_t n = world, xs = SLOT * n, ds = SLOT * n, gs = 8 * n, ma = 3 * n, mg = 4 * n;
    trnemu_kernel_t *k;
    NRT_STATUS st = trnemu_kernel_create("collv_kernel", &k);
    if (st != NRT_SUCCESS)
        return st;
    trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, &xs, 1);
    trnemu_kernel_add_input(k, "meta_a", NRT_DTYPE_UINT32, &ma, 1);
    trnemu_kernel_add_input(k, "meta_g", NRT_DTYPE_UINT32, &mg, 1);
    trnemu_kernel_add_output(k, "a2av", NRT_DTYPE_FLOAT32, &ds, 1);
    trnemu_kernel_add_output(k, "agv", NRT_DTYPE_FLOAT32, &gs, 1);
    trnemu_kernel_add_output(k, "ma", NRT_DTYPE_UINT32, &ma, 1);
    trnemu_kernel_add_output(k, "mg", NRT_DTYPE_UINT32, &mg, 1);
#define FLAT(name, dt) "hbm:" name "[[%u,1], 0, [1,%u]]:" dt
    trnemu_kernel_appendf(k, "sp.dma_copy dst=" FLAT("ma", "u32") " src=" FLAT("meta_a", "u32"),
                          ma, ma, ma, ma);
    trnemu_kernel_appendf(k, "sp.dma_copy dst=" FLAT("mg", "u32") " src=" FLAT("meta_g", "u32"),
                          mg, mg, mg, mg);
    trnemu_kernel_appendf(k, "sp.all_to_all_v dst=" FLAT("a2av", "f32") " src=" FLAT("x", "f32")
                          " metadata=" FLAT("ma", "u32"), ds, ds, xs, xs, ma, ma);
    trnemu_kernel_appendf(k, "sp.all_gather_v dst=" FLAT("agv", "f32") " src=" FLAT("x", "f32")
                          " metadata=" FLAT("mg", "u32") " recv_counts_known has_rdispls", gs,
                          gs, xs, xs, mg, mg);
    st = trnemu_kernel_write(k, neff, size);
    if (st != NRT_SUCCESS)
        fprintf(stderr, "kernel: %s\n", trnemu_kernel_error(k));
    trnemu_kernel_free(k);
    return st;
}

/* The metadata of this rank; skew: rank 0 sends the last rank more than
 * its slot holds. */
static void fill_meta(uint32_t *a, uint32_t *g, bool skew)
{
    uint32_t n = world, at = 0;
    for (uint32_t r = 0; r < n; r++) {
        a[r] = k_count(rank, r);
        a[n + r] = at;  /* packed */
        a[2 * n + r] = 0xdeadu;
        at += a[r];
    }
    if (skew && rank == 0)
        a[n - 1] = SLOT + 1;
    for (uint32_t r = 0; r < n; r++) {
        g[r] = r == 0 ? kg_count(rank) : 77;  /* only the first column counts */
        g[n + r] = r == 0 ? rank : 77;
        g[2 * n + r] = 0xbeefu;
        g[3 * n + r] = (n - 1 - r) * 8;  /* rank r's chunk: slots in reverse order */
    }
}

static void check_outputs(nrt_tensor_t *ta, nrt_tensor_t *tg, nrt_tensor_t *tma,
                          nrt_tensor_t *tmg)
{
    uint32_t n = world;
    float *a = malloc(SLOT * n * 4), *g = malloc(8 * n * 4);
    uint32_t *ma = malloc(3 * n * 4), *mg = malloc(4 * n * 4);
    nrt_tensor_read(ta, a, 0, SLOT * n * 4);
    nrt_tensor_read(tg, g, 0, 8 * n * 4);
    nrt_tensor_read(tma, ma, 0, 3 * n * 4);
    nrt_tensor_read(tmg, mg, 0, 4 * n * 4);
    uint32_t bad = 0;
    for (uint32_t s = 0; s < n; s++) {
        uint32_t from = 0;  /* where sender s's chunk for this rank starts */
        for (uint32_t r = 0; r < rank; r++)
            from += k_count(s, r);
        for (uint32_t i = 0; i < SLOT; i++) {
            float want = i < k_count(s, rank) ? x_val(s, from + i) : -1.0f;
            bad += a[s * SLOT + i] != want;
        }
        bad += ma[2 * n + s] != k_count(s, rank);
        for (uint32_t i = 0; i < 8; i++) {
            float want = i < kg_count(s) ? x_val(s, s + i) : -1.0f;
            bad += g[(n - 1 - s) * 8 + i] != want;
        }
        bad += mg[2 * n + s] != 0xbeefu;  /* recv_counts_known: left alone */
    }
    CHECK(bad == 0, "in-NEFF all_to_all_v / all_gather_v: %u values wrong", bad);
    free(a);
    free(g);
    free(ma);
    free(mg);
}

static nrt_tensor_t *add_tensor(nrt_tensor_set_t *set, const char *name, size_t bytes,
                                const void *data)
{
    nrt_tensor_t *t = NULL;
    NRT_STATUS st = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes, name, &t);
    CHECK(st == NRT_SUCCESS, "nrt_tensor_allocate %s: %d", name, (int)st);
    if (st != NRT_SUCCESS)
        return NULL;
    if (data != NULL)
        nrt_tensor_write(t, data, 0, bytes);
    CHECK(nrt_add_tensor_to_tensor_set(set, name, t) == NRT_SUCCESS, "add %s", name);
    return t;
}

/* Outputs start as -1.0f everywhere. */
static void reset_outputs(nrt_tensor_t *ta, nrt_tensor_t *tg)
{
    uint32_t n = world;
    float *f = malloc(SLOT * n * 4);
    for (uint32_t i = 0; i < SLOT * n; i++)
        f[i] = -1.0f;
    nrt_tensor_write(ta, f, 0, SLOT * n * 4);
    nrt_tensor_write(tg, f, 0, 8 * n * 4);
    free(f);
}

/* The bytes of file path (malloc'd), or NULL. */
static void *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    void *p = NULL;
    long n = -1;
    if (f != NULL && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0)
        p = malloc((size_t)n);
    if (p != NULL && fread(p, 1, (size_t)n, f) != (size_t)n) {
        free(p);
        p = NULL;
    }
    if (f != NULL)
        fclose(f);
    *size = p != NULL ? (size_t)n : 0;
    CHECK(p != NULL, "cannot read %s", path);
    return p;
}

/* The kernel built here (path NULL) or the NEFF at path. */
static int run_neff(const char *path)
{
    void *neff = NULL;
    size_t size;
    if (path == NULL && build_kernel(&neff, &size) != NRT_SUCCESS)
        return 1;
    if (path != NULL && (world != 4 || (neff = read_file(path, &size)) == NULL)) {
        CHECK(world == 4, "the example NEFF is for 4 ranks");
        return 1;
    }
    nrt_model_t *m = NULL;
    NRT_STATUS st = nrt_load_collectives(neff, size, 0, -1, rank, world, &m);
    if (path == NULL)
        trnemu_kernel_buffer_free(neff);
    else
        free(neff);
    CHECK(st == NRT_SUCCESS, "nrt_load_collectives: %d", (int)st);
    if (st != NRT_SUCCESS)
        return 1;
    uint32_t n = world;
    float *x = malloc(SLOT * n * 4);
    uint32_t *ma = malloc(3 * n * 4), *mg = malloc(4 * n * 4);
    for (uint32_t i = 0; i < SLOT * n; i++)
        x[i] = x_val(rank, i);
    fill_meta(ma, mg, false);
    nrt_tensor_set_t *in, *out;
    nrt_allocate_tensor_set(&in);
    nrt_allocate_tensor_set(&out);
    nrt_tensor_t *t[7] = {
        add_tensor(in, "x", SLOT * n * 4, x), add_tensor(in, "meta_a", 3 * n * 4, ma),
        add_tensor(in, "meta_g", 4 * n * 4, mg), add_tensor(out, "a2av", SLOT * n * 4, NULL),
        add_tensor(out, "agv", 8 * n * 4, NULL), add_tensor(out, "ma", 3 * n * 4, NULL),
        add_tensor(out, "mg", 4 * n * 4, NULL)};
    for (int run = 0; run < 2; run++) {
        reset_outputs(t[3], t[4]);
        st = nrt_execute(m, in, out);
        CHECK(st == NRT_SUCCESS, "nrt_execute #%d: %d", run, (int)st);
        if (st == NRT_SUCCESS)
            check_outputs(t[3], t[4], t[5], t[6]);
    }
    fill_meta(ma, mg, true);
    nrt_tensor_write(t[1], ma, 0, 3 * n * 4);
    st = nrt_execute(m, in, out);
    CHECK(st != NRT_SUCCESS, "a send count larger than its slot: nrt_execute succeeded");
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    for (int i = 0; i < 7; i++)
        nrt_tensor_free(&t[i]);
    nrt_unload(m);
    free(x);
    free(ma);
    free(mg);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: collv_rank host|neff|example NEFF\n");
        return 2;
    }
    rank = env_u32("RANK", 0);
    world = env_u32("WORLD_SIZE", 1);
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    if (st != NRT_SUCCESS) {
        fprintf(stderr, "collv_rank %u: nrt_init: %d\n", rank, (int)st);
        return 1;
    }
    const char *c = argv[1];
    int rc = strcmp(c, "host") == 0                 ? run_host()
             : strcmp(c, "neff") == 0               ? run_neff(NULL)
             : strcmp(c, "example") == 0 && argc > 2 ? run_neff(argv[2])
                                                     : 2;
    nrt_close();
    return rc != 0 ? rc : fails != 0;
}
