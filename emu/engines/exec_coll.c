/*
 * exec_coll.c: semantics of the instructions between cores: sendrecv and
 * core_barrier between the physical cores of one logical core, and the
 * collectives between ranks (all_reduce, all_gather, reduce_scatter,
 * all_to_all, permute, and the variable-count all_to_all_v and
 * all_gather_v).
 *
 * Collectives bind src and dst, check that they hold the same dtype and
 * the element counts the operation needs for the group's size, stage a
 * non-contiguous operand through contiguous memory (core_coll scratch),
 * and hand the operation to core_coll.run, which blocks this engine (and
 * so the core's scheduler) until the operation is complete on this rank.
 * A failure there (a missing rank, a timeout, ranks that disagree) stops
 * the execution with its status.
 *
 * core_barrier and sendrecv meet the other cores of the run through the
 * shared core_lnc state, under its lock (the cores may run on different
 * host threads): an engine that must wait sets ctx->blocked and is retried
 * on its next turn, and every change another core may wait for goes
 * through core_lnc_changed, which wakes a core scheduler that sleeps. A
 * core that never arrives shows up as a deadlock report.
 */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "emu/core/core_coll.h"
#include "emu/engines/dma_xfer.h"
#include "emu/isa/isa_args.h"
#include "emu/num/numerics.h"

/* Every collective keeps dst, src and the replica group in the same slots
 * (checked below), so the shared helpers read them through all_reduce's. */
#define XCOLL_SLOT_DST ISA_AP_SLOT(all_reduce, dst)
#define XCOLL_SLOT_SRC ISA_AP_SLOT(all_reduce, src)
#define XCOLL_SAME_LAYOUT(op)                                                        \
    static_assert(ISA_AP_SLOT(op, dst) == XCOLL_SLOT_DST &&                          \
                      ISA_AP_SLOT(op, src) == XCOLL_SLOT_SRC &&                      \
                      ISA_SLOT(INT, op, group) == ISA_SLOT(INT, all_reduce, group),  \
                  #op ": the collectives' layout")
XCOLL_SAME_LAYOUT(all_gather);
XCOLL_SAME_LAYOUT(reduce_scatter);
XCOLL_SAME_LAYOUT(all_to_all);
XCOLL_SAME_LAYOUT(permute);
XCOLL_SAME_LAYOUT(all_to_all_v);
XCOLL_SAME_LAYOUT(all_gather_v);
static_assert(ISA_SLOT(ENUM, reduce_scatter, op) == ISA_SLOT(ENUM, all_reduce, op), "op");
static_assert(ISA_AP_SLOT(all_gather_v, metadata) == ISA_AP_SLOT(all_to_all_v, metadata) &&
                  ISA_SLOT(FLAG, all_gather_v, recv_counts_known) ==
                      ISA_SLOT(FLAG, all_to_all_v, recv_counts_known) &&
                  ISA_SLOT(FLAG, all_gather_v, has_rdispls) ==
                      ISA_SLOT(FLAG, all_to_all_v, has_rdispls),
              "the v-collectives' layout");
static_assert(ISA_AP_SLOT(sendrecv, dst) == XCOLL_SLOT_DST &&
                  ISA_AP_SLOT(sendrecv, src) == XCOLL_SLOT_SRC, "sendrecv's layout");
#define XCOLL_SCRATCH_DST 0   /* staging of a non-contiguous dst */
#define XCOLL_SCRATCH_SRC 1   /* staging of a non-contiguous (or overlapping) src */
#define XCOLL_SCRATCH_SEND 2  /* + core index: a posted sendrecv's data */
#define XCOLL_SLOT_META ISA_AP_SLOT(all_to_all_v, metadata)
#define XCOLL_SCRATCH_META 6  /* a v-collective's metadata, and its counts widened */

/* ---- contiguous staging ------------------------------------------------------ */

/* The bytes of a bound operand when they are one contiguous run, else NULL. */
static uint8_t *xcoll_contig(const struct ap_view *v)
{
    if (!v->flat)
        return NULL;
    if (v->rows == 1 || v->row_stride == (int64_t)(v->elems * v->esize))
        return v->base;
    return NULL;
}

/* A stream over n contiguous elements at p. */
static void xcoll_flat_stream(struct dma_stream *s, uint8_t *p, uint32_t dtype, uint32_t esize,
                             uint64_t n)
{
    memset(s, 0, sizeof *s);
    s->base = p;
    s->dtype = dtype;
    s->esize = esize;
    s->ndims = 1;
    s->count[0] = n;
    s->stride[0] = esize;
    s->total = n;
}

/* Copy a view's elements to contiguous buf (to_view false) or back (true). */
static emu_status xcoll_stage(struct isa_exec_ctx *ctx, const struct ap_view *v, uint8_t *buf,
                             bool to_view)
{
    struct dma_stream a, b;
    dma_stream_from_view(&a, v, 0, v->rows);
    xcoll_flat_stream(&b, buf, v->dtype, v->esize, (uint64_t)v->rows * v->elems);
    struct dma_job job = {.kind = DMA_K_COPY, .nsrc = 1};
    job.scale[0] = 1.0f;
    job.src[0] = to_view ? &b : &a;
    job.dst = to_view ? &a : &b;
    return dma_job_run(ctx, &job);
}

static uint8_t *xcoll_scratch(struct isa_exec_ctx *ctx, uint32_t slot, uint64_t bytes)
{
    const struct core_coll *ci = ctx->prog->coll;
    return ci->scratch != NULL ? ci->scratch(ci->user, slot, bytes ? bytes : 1) : NULL;
}

static emu_status xcoll_no_memory(struct isa_exec_ctx *ctx, uint64_t bytes)
{
    return core_fail(ctx, EMU_RESOURCE, "no host memory to stage %" PRIu64 " bytes of a "
                     "collective operand", bytes);
}

/* ---- collectives between ranks --------------------------------------------------- */

/* dst elements the operation needs for count src elements over n ranks; 0: none fits. */
static uint64_t xcoll_dst_count(enum core_coll_kind kind, uint64_t count, uint32_t n)
{
    switch (kind) {
    case CORE_COLL_ALL_GATHER: return count * n;
    case CORE_COLL_REDUCE_SCATTER: return count % n == 0 ? count / n : 0;
    case CORE_COLL_ALL_TO_ALL: return count % n == 0 ? count : 0;
    default: return count;
    }
}

static const char *xcoll_name(enum core_coll_kind kind)
{
    static const char *const names[] = {"?", "all_reduce", "all_gather", "reduce_scatter",
                                        "all_to_all", "permute", "barrier"};
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

/* Bind and check both operands; n: ranks in the group. */
static emu_status xcoll_bind(struct isa_exec_ctx *ctx, enum core_coll_kind kind, uint32_t n,
                            struct ap_view *dst, struct ap_view *src)
{
    emu_status s = ap_bind(ctx, XCOLL_SLOT_DST, dst);
    if (s == EMU_OK)
        s = ap_bind(ctx, XCOLL_SLOT_SRC, src);
    if (s != EMU_OK)
        return s;
    if (!dma_same_type(dst->dtype, src->dtype))
        return core_fail(ctx, EMU_EXEC_ERR, "%s: src is %s, dst %s; collectives "
                         "move elements without converting them", xcoll_name(kind),
                         isa_dtype_name(src->dtype), isa_dtype_name(dst->dtype));
    uint64_t cs = (uint64_t)src->rows * src->elems, cd = (uint64_t)dst->rows * dst->elems;
    uint64_t want = xcoll_dst_count(kind, cs, n);
    if (want == 0 || want != cd)
        return core_fail(ctx, EMU_EXEC_ERR, "%s over %u ranks: src has %" PRIu64
                         " elements, dst %" PRIu64 "; dst needs %s", xcoll_name(kind), n, cs, cd,
                         kind == CORE_COLL_ALL_GATHER ? "ranks x src" :
                         kind == CORE_COLL_REDUCE_SCATTER ? "src / ranks (src divisible by ranks)" :
                         kind == CORE_COLL_ALL_TO_ALL ? "as many as src, divisible by ranks"
                                                 : "as many as src");
    return EMU_OK;
}

/* Does [a, a+an) meet [b, b+bn)? */
static bool xcoll_meet(const uint8_t *a, uint64_t an, const uint8_t *b, uint64_t bn)
{
    return a < b + bn && b < a + an;
}

/* Contiguous input: the operand itself, or a staged copy (also when it
 * overlaps the output without being it). */
static emu_status xcoll_src_buf(struct isa_exec_ctx *ctx, const struct ap_view *src,
                               const uint8_t *out, uint64_t out_bytes, const uint8_t **buf)
{
    uint64_t bytes = (uint64_t)src->rows * src->elems * src->esize;
    uint8_t *p = xcoll_contig(src);
    if (p != NULL && (p == out || !xcoll_meet(p, bytes, out, out_bytes))) {
        *buf = p;
        return EMU_OK;
    }
    uint8_t *s = xcoll_scratch(ctx, XCOLL_SCRATCH_SRC, bytes);
    if (s == NULL)
        return xcoll_no_memory(ctx, bytes);
    *buf = s;
    return xcoll_stage(ctx, src, s, false);
}

static emu_status xcoll_cross(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                             enum core_coll_kind kind)
{
    const struct core_coll *ci = ctx->prog->coll;
    uint32_t group = (uint32_t)ISA_ARG_INT(insn, all_reduce, group);
    if (ci == NULL || ci->run == NULL)
        return core_fail(ctx, EMU_EXEC_ERR, "%s: this run has no other ranks to "
                         "talk to", xcoll_name(kind));
    uint32_t n = ci->group_size != NULL ? ci->group_size(ci->user, group) : 0;
    if (n == 0)
        return core_fail(ctx, EMU_INVALID, "%s: replica group %u has no ranks (trnemu NEFFs "
                         "have group 0, every rank; load the model with nrt_load_collectives "
                         "or call nrt_build_global_comm first)", xcoll_name(kind), group);
    struct ap_view dst, src;
    emu_status s = xcoll_bind(ctx, kind, n, &dst, &src);
    if (s != EMU_OK)
        return s;
    struct core_coll_call call = {kind, group, src.dtype, 0, NULL, (uint64_t)src.rows * src.elems,
                             NULL, (uint64_t)dst.rows * dst.elems, 0, 0};
    if (kind == CORE_COLL_ALL_REDUCE || kind == CORE_COLL_REDUCE_SCATTER)
        call.op = ISA_ARG_ENUM(insn, all_reduce, op);
    if (kind == CORE_COLL_PERMUTE) {
        call.send_to = (uint32_t)ISA_ARG_INT(insn, permute, send_to);
        call.recv_from = (uint32_t)ISA_ARG_INT(insn, permute, recv_from);
        if (call.send_to >= n || call.recv_from >= n)
            return core_fail(ctx, EMU_EXEC_ERR, "permute to rank %u from rank "
                             "%u: group %u has %u ranks", call.send_to, call.recv_from, group, n);
    }
    uint64_t dbytes = call.dst_count * dst.esize;
    uint8_t *out = xcoll_contig(&dst);
    uint8_t *staged = out == NULL ? xcoll_scratch(ctx, XCOLL_SCRATCH_DST, dbytes) : NULL;
    if (out == NULL && staged == NULL)
        return xcoll_no_memory(ctx, dbytes);
    call.dst = out != NULL ? out : staged;
    s = xcoll_src_buf(ctx, &src, call.dst, dbytes, (const uint8_t **)&call.src);
    if (s != EMU_OK)
        return s;
    char err[200] = "";
    s = ci->run(ci->user, &call, err, sizeof err);
    if (s != EMU_OK)
        return core_fail(ctx, s, "%s", err[0] ? err : "the collective failed");
    return staged != NULL ? xcoll_stage(ctx, &dst, staged, true) : EMU_OK;
}

emu_status isa_exec_all_reduce(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_cross(ctx, insn, CORE_COLL_ALL_REDUCE);
}

emu_status isa_exec_all_gather(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_cross(ctx, insn, CORE_COLL_ALL_GATHER);
}

emu_status isa_exec_reduce_scatter(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_cross(ctx, insn, CORE_COLL_REDUCE_SCATTER);
}

emu_status isa_exec_all_to_all(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_cross(ctx, insn, CORE_COLL_ALL_TO_ALL);
}

emu_status isa_exec_permute(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_cross(ctx, insn, CORE_COLL_PERMUTE);
}

/* ---- variable-count collectives ------------------------------------------------ */

/* The v-collectives' metadata is a uint32 (or int32) tensor of `rows` rows of
 * one entry per rank: send counts, send displacements, receive counts
 * (written back unless recv_counts_known), and with has_rdispls receive
 * displacements. Counts and displacements are in elements of src / dst. */
#define XCOLL_V_SEND_COUNTS 0
#define XCOLL_V_SEND_DISPLS 1
#define XCOLL_V_RECV_COUNTS 2
#define XCOLL_V_RECV_DISPLS 3

static const char *xcoll_v_name(enum core_coll_vkind kind)
{
    return kind == CORE_COLL_V_ALL_TO_ALL ? "all_to_all_v" : "all_gather_v";
}

/* Is the machine one the operation exists on? NeuronCore-v3 and later
 * (Trn2, Trn3); receive displacements for all_to_all_v on NeuronCore-v4 only. */
static emu_status xcoll_v_gen(struct isa_exec_ctx *ctx, enum core_coll_vkind kind, bool rdispls)
{
    uint32_t gen = ctx->core->gen;
    if (gen < 3)
        return core_fail(ctx, EMU_EXEC_ERR, "%s needs NeuronCore-v3 or later (Trn2, Trn3); "
                         "this core is NeuronCore-v%u", xcoll_v_name(kind), gen);
    if (kind == CORE_COLL_V_ALL_TO_ALL && rdispls && gen < 4)
        return core_fail(ctx, EMU_EXEC_ERR, "all_to_all_v has_rdispls needs NeuronCore-v4 "
                         "(NeuronSwitch machines); this core is NeuronCore-v%u", gen);
    return EMU_OK;
}

/* Bind dst, src and metadata; check the types and the metadata's shape. */
static emu_status xcoll_v_bind(struct isa_exec_ctx *ctx, enum core_coll_vkind kind, uint32_t n,
                              uint32_t rows, struct ap_view *dst, struct ap_view *src,
                              struct ap_view *meta)
{
    emu_status s = ap_bind(ctx, XCOLL_SLOT_DST, dst);
    if (s == EMU_OK)
        s = ap_bind(ctx, XCOLL_SLOT_SRC, src);
    if (s == EMU_OK)
        s = ap_bind(ctx, XCOLL_SLOT_META, meta);
    if (s != EMU_OK)
        return s;
    if (!dma_same_type(dst->dtype, src->dtype))
        return core_fail(ctx, EMU_EXEC_ERR, "%s: src is %s, dst %s; collectives move elements "
                         "without converting them", xcoll_v_name(kind),
                         isa_dtype_name(src->dtype), isa_dtype_name(dst->dtype));
    uint64_t have = (uint64_t)meta->rows * meta->elems;
    if ((meta->dtype != NUM_DT_UINT32 && meta->dtype != NUM_DT_INT32) ||
        have != (uint64_t)rows * n)
        return core_fail(ctx, EMU_EXEC_ERR, "%s over %u ranks: metadata is %" PRIu64 " %s; "
                         "it needs %u rows of %u u32 (%s)", xcoll_v_name(kind), n, have,
                         isa_dtype_name(meta->dtype), rows, n,
                         rows == 4 ? "has_rdispls" : "no has_rdispls");
    return EMU_OK;
}

/* The metadata words, contiguous in scratch, followed by four arrays of n
 * widened entries (send counts, send displacements, receive displacements,
 * receive counts). */
static emu_status xcoll_v_meta(struct isa_exec_ctx *ctx, const struct ap_view *meta, uint32_t n,
                              uint32_t rows, uint32_t **words, uint64_t **wide)
{
    uint64_t wbytes = ((uint64_t)rows * n * 4 + 7) / 8 * 8;
    uint64_t bytes = wbytes + 4ull * n * 8;
    uint8_t *p = xcoll_scratch(ctx, XCOLL_SCRATCH_META, bytes);
    if (p == NULL)
        return xcoll_no_memory(ctx, bytes);
    *words = (uint32_t *)p;
    *wide = (uint64_t *)(p + wbytes);
    emu_status s = xcoll_stage(ctx, meta, p, false);
    if (s != EMU_OK)
        return s;
    for (uint32_t r = 0; r < n; r++) {
        (*wide)[r] = (*words)[XCOLL_V_SEND_COUNTS * n + r];
        (*wide)[n + r] = (*words)[XCOLL_V_SEND_DISPLS * n + r];
        (*wide)[2 * n + r] = rows > XCOLL_V_RECV_DISPLS ? (*words)[XCOLL_V_RECV_DISPLS * n + r] : 0;
        (*wide)[3 * n + r] = 0;
    }
    return EMU_OK;
}

/* Contiguous output holding dst's current elements (a chunk covers only
 * part of it): dst itself, or a staged copy (*staged set). */
static emu_status xcoll_v_dst(struct isa_exec_ctx *ctx, const struct ap_view *dst, uint8_t **out,
                             bool *staged)
{
    uint64_t bytes = (uint64_t)dst->rows * dst->elems * dst->esize;
    *out = xcoll_contig(dst);
    *staged = *out == NULL;
    if (!*staged)
        return EMU_OK;
    *out = xcoll_scratch(ctx, XCOLL_SCRATCH_DST, bytes);
    if (*out == NULL)
        return xcoll_no_memory(ctx, bytes);
    return xcoll_stage(ctx, dst, *out, false);
}

/* Write the received counts into row 2 of the metadata. */
static emu_status xcoll_v_counts_back(struct isa_exec_ctx *ctx, const struct ap_view *meta,
                                     uint32_t *words, const uint64_t *counts, uint32_t n)
{
    for (uint32_t r = 0; r < n; r++)
        words[XCOLL_V_RECV_COUNTS * n + r] =
            counts[r] > UINT32_MAX ? UINT32_MAX : (uint32_t)counts[r];
    return xcoll_stage(ctx, meta, (uint8_t *)words, true);
}

static emu_status xcoll_v(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                         enum core_coll_vkind kind)
{
    const struct core_coll *ci = ctx->prog->coll;
    uint32_t group = (uint32_t)ISA_ARG_INT(insn, all_to_all_v, group);
    bool known = ISA_ARG_FLAG(insn, all_to_all_v, recv_counts_known);
    bool rdispls = ISA_ARG_FLAG(insn, all_to_all_v, has_rdispls);
    emu_status s = xcoll_v_gen(ctx, kind, rdispls);
    if (s != EMU_OK)
        return s;
    if (ci == NULL || ci->run_v == NULL)
        return core_fail(ctx, EMU_EXEC_ERR, "%s: this run has no other ranks to talk to",
                         xcoll_v_name(kind));
    uint32_t n = ci->group_size != NULL ? ci->group_size(ci->user, group) : 0;
    if (n == 0)
        return core_fail(ctx, EMU_INVALID, "%s: replica group %u has no ranks (load the model "
                         "with nrt_load_collectives or call nrt_build_global_comm first)",
                         xcoll_v_name(kind), group);
    uint32_t rows = rdispls ? 4 : 3;
    struct ap_view dst, src, meta;
    uint32_t *words = NULL;
    uint64_t *w = NULL;
    s = xcoll_v_bind(ctx, kind, n, rows, &dst, &src, &meta);
    if (s == EMU_OK)
        s = xcoll_v_meta(ctx, &meta, n, rows, &words, &w);
    if (s != EMU_OK)
        return s;
    uint8_t *out;
    bool staged;
    s = xcoll_v_dst(ctx, &dst, &out, &staged);
    if (s != EMU_OK)
        return s;
    struct core_coll_vcall call = {kind, group, src.dtype, NULL, (uint64_t)src.rows * src.elems,
                                   out, (uint64_t)dst.rows * dst.elems, w, w + n,
                                   rdispls ? w + 2 * n : NULL, w + 3 * n};
    s = xcoll_src_buf(ctx, &src, out, call.dst_count * dst.esize, (const uint8_t **)&call.src);
    if (s != EMU_OK)
        return s;
    char err[200] = "";
    s = ci->run_v(ci->user, &call, err, sizeof err);
    if (s != EMU_OK)
        return core_fail(ctx, s, "%s", err[0] ? err : "the collective failed");
    if (staged)
        s = xcoll_stage(ctx, &dst, out, true);
    if (s == EMU_OK && !known)
        s = xcoll_v_counts_back(ctx, &meta, words, w + 3 * n, n);
    return s;
}

emu_status isa_exec_all_to_all_v(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_v(ctx, insn, CORE_COLL_V_ALL_TO_ALL);
}

emu_status isa_exec_all_gather_v(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return xcoll_v(ctx, insn, CORE_COLL_V_ALL_GATHER);
}

/* ---- between the cores of one logical core ---------------------------------------- */

void core_lnc_init(struct core_lnc *l, uint32_t ncores)
{
    memset(l, 0, sizeof *l);
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->changed, NULL);
    atomic_init(&l->epoch, 0);
    l->ncores = ncores;
}

void core_lnc_fini(struct core_lnc *l)
{
    pthread_cond_destroy(&l->changed);
    pthread_mutex_destroy(&l->lock);
}

static _Thread_local const struct core_lnc *core_lnc_owner; /* the lnc whose lock this thread holds */

void core_lnc_lock(struct core_lnc *l)
{
    pthread_mutex_lock(&l->lock);
    core_lnc_owner = l;
}

void core_lnc_unlock(struct core_lnc *l)
{
    assert(core_lnc_owner == l);
    core_lnc_owner = NULL;
    pthread_mutex_unlock(&l->lock);
}

bool core_lnc_held(const struct core_lnc *l)
{
    return core_lnc_owner == l;
}

void core_lnc_changed(struct core_lnc *l)
{
    assert(core_lnc_held(l));
    atomic_store_explicit(&l->epoch, atomic_load_explicit(&l->epoch, memory_order_relaxed) + 1,
                          memory_order_release);
    pthread_cond_broadcast(&l->changed);
}

/* The shared state, and this core's index in it. A run without one is a
 * single core (index 0). */
static struct core_lnc *xcoll_lnc_of(struct isa_exec_ctx *ctx, uint32_t *me, uint32_t *ncores)
{
    const struct core_coll *ci = ctx->prog->coll;
    *me = ci != NULL ? ci->core_index : 0;
    *ncores = ci != NULL && ci->lnc != NULL ? ci->lnc->ncores : 1;
    return ci != NULL ? ci->lnc : NULL;
}

emu_status isa_exec_core_barrier(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view data;
    /* only data's bounds matter here */
    emu_status s = ap_bind(ctx, ISA_AP_SLOT(core_barrier, data), &data);
    if (s != EMU_OK)
        return s;
    uint32_t me, ncores;
    struct core_lnc *l = xcoll_lnc_of(ctx, &me, &ncores);
    uint64_t mask = (uint64_t)ISA_ARG_INT(insn, core_barrier, cores);
    if (mask >> ncores != 0 || !(mask >> me & 1))
        return core_fail(ctx, EMU_EXEC_ERR, "core_barrier cores=0x%" PRIx64
                         ": this logical core has %u physical cores (mask bits 0..%u), and the "
                         "mask must include this core (%u)", mask, ncores, ncores - 1, me);
    if (l == NULL || ncores == 1)
        return EMU_OK;
    core_lnc_lock(l);
    uint64_t *ticket = &l->barrier_ticket[me][ctx->engine];
    if (*ticket == 0) {
        *ticket = ++l->barrier_arrived[me];
        core_lnc_changed(l);
    }
    for (uint32_t c = 0; c < ncores; c++)
        if ((mask >> c & 1) && l->barrier_arrived[c] < *ticket) {
            ctx->blocked = true;
            break;
        }
    if (!ctx->blocked)
        *ticket = 0;
    core_lnc_unlock(l);
    return EMU_OK;
}

/* Post this core's half of a sendrecv: its data staged, its destination
 * bound, its partners named. */
static emu_status xcoll_post(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                            struct core_lnc_post *p, uint32_t me)
{
    struct ap_view src, dst;
    emu_status s = ap_bind(ctx, XCOLL_SLOT_SRC, &src);
    if (s == EMU_OK)
        s = ap_bind(ctx, XCOLL_SLOT_DST, &dst);
    if (s != EMU_OK)
        return s;
    uint64_t bytes = (uint64_t)src.rows * src.elems * src.esize;
    uint8_t *stage = xcoll_scratch(ctx, XCOLL_SCRATCH_SEND + me, bytes);
    if (stage == NULL)
        return xcoll_no_memory(ctx, bytes);
    s = xcoll_stage(ctx, &src, stage, false);
    if (s != EMU_OK)
        return s;
    *p = (struct core_lnc_post){true, false, false, (uint32_t)ISA_ARG_INT(insn, sendrecv, send_to),
                                (uint32_t)ISA_ARG_INT(insn, sendrecv, recv_from),
                                (uint32_t)ISA_ARG_INT(insn, sendrecv, pipe_id), src.dtype,
                                (uint64_t)src.rows * src.elems, stage, (uint32_t)ctx->engine,
                                dst};
    return EMU_OK;
}

/* Move from's staged data into to's destination, if from sends to core
 * `to_core` and to waits for it. */
static emu_status xcoll_deliver(struct isa_exec_ctx *ctx, struct core_lnc_post *from,
                               uint32_t from_core, struct core_lnc_post *to, uint32_t to_core)
{
    if (!from->active || !to->active || from->sent || to->received ||
        from->send_to != to_core || to->recv_from != from_core)
        return EMU_OK;
    if (from->pipe != to->pipe || !dma_same_type(from->dtype, to->dst.dtype) ||
        from->count != (uint64_t)to->dst.rows * to->dst.elems)
        return core_fail(ctx, EMU_EXEC_ERR, "sendrecv: core %u sends %" PRIu64
                         " %s on pipe %u, core %u receives %" PRIu64 " %s on pipe %u",
                         from_core, from->count, isa_dtype_name(from->dtype), from->pipe,
                         to_core, (uint64_t)to->dst.rows * to->dst.elems,
                         isa_dtype_name(to->dst.dtype), to->pipe);
    emu_status s = xcoll_stage(ctx, &to->dst, from->stage, true);
    from->sent = true;
    to->received = true;
    core_lnc_changed(ctx->prog->coll->lnc);
    return s;
}

/* One turn of a sendrecv between cores (l->lock held). */
static emu_status xcoll_sendrecv_locked(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                       struct core_lnc *l, uint32_t me, uint32_t to,
                                       uint32_t from)
{
    assert(core_lnc_held(l));
    struct core_lnc_post *p = &l->post[me];
    if (p->active && p->engine != (uint32_t)ctx->engine)
        return core_fail(ctx, EMU_EXEC_ERR, "sendrecv on engine %s while engine "
                         "%s of the same core has one under way", isa_engine_name(ctx->engine),
                         isa_engine_name((enum isa_engine)p->engine));
    /* Whoever arrives second moves both directions, so that the step that
     * completes the exchange is one that also finishes an instruction. */
    bool posted = !p->active;
    emu_status s = posted ? xcoll_post(ctx, insn, p, me) : EMU_OK;
    if (s == EMU_OK && posted)
        core_lnc_changed(l);
    if (s == EMU_OK)
        s = xcoll_deliver(ctx, &l->post[from], from, p, me);
    if (s == EMU_OK)
        s = xcoll_deliver(ctx, p, me, &l->post[to], to);
    if (s != EMU_OK)
        return s;
    if (p->received && p->sent)
        p->active = false;
    else
        ctx->blocked = true;
    return EMU_OK;
}

emu_status isa_exec_sendrecv(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    uint32_t me, ncores;
    struct core_lnc *l = xcoll_lnc_of(ctx, &me, &ncores);
    uint32_t to = (uint32_t)ISA_ARG_INT(insn, sendrecv, send_to);
    uint32_t from = (uint32_t)ISA_ARG_INT(insn, sendrecv, recv_from);
    if (to >= ncores || from >= ncores)
        return core_fail(ctx, EMU_EXEC_ERR, "sendrecv send_to=%u recv_from=%u: "
                         "this logical core has %u physical cores", to, from, ncores);
    if (l == NULL) {  /* one core alone: its own data comes back */
        struct ap_view dst, src;
        emu_status s = ap_bind(ctx, XCOLL_SLOT_DST, &dst);
        if (s == EMU_OK)
            s = ap_bind(ctx, XCOLL_SLOT_SRC, &src);
        if (s == EMU_OK && (!dma_same_type(dst.dtype, src.dtype) ||
                                 (uint64_t)dst.rows * dst.elems != (uint64_t)src.rows * src.elems))
            s = core_fail(ctx, EMU_EXEC_ERR, "sendrecv: dst and src differ in "
                          "type or size");
        if (s != EMU_OK)
            return s;
        struct dma_stream d, a;
        dma_stream_from_view(&d, &dst, 0, dst.rows);
        dma_stream_from_view(&a, &src, 0, src.rows);
        struct dma_job job = {.kind = DMA_K_COPY, .nsrc = 1, .dst = &d};
        job.scale[0] = 1.0f;
        job.src[0] = &a;
        return dma_job_run(ctx, &job);
    }
    core_lnc_lock(l);
    emu_status s = xcoll_sendrecv_locked(ctx, insn, l, me, to, from);
    core_lnc_unlock(l);
    return s;
}
