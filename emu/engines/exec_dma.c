/*
 * exec_dma.c: semantics of the DMA instructions: dma_copy, dma_transpose,
 * dma_compute, dma_trigger. Any engine's queue starts them; the transfer
 * completes within the instruction. The element engine is dma_xfer.c, the
 * NEFF descriptors that dma_trigger runs are dma_desc.c.
 *
 * dma_copy op: copy/cast dst = src (bit copy for equal types, else through
 * fp32 with RNE); add dst += src; fma dst = fmaf(src, scale, dst); min/max
 * dst = min/max(dst, src); transpose as dma_transpose; accumulate is
 * NeuronCore-v4's SBUF read-add-write, dst += src into SBUF with src and
 * dst both bf16 or both fp32. Source and destination hold the same number
 * of elements, in any shapes. The priority field (v4 DMA quality of
 * service) is recorded in the instruction and changes nothing here.
 * Indirect (indirect=src|dst, indirect_dim=0): row r of the indexed HBM
 * operand is row index[r] (one integer per partition of the SBUF index);
 * an index reaching outside the variable is EMU_EXEC_OOB (oob=error) or
 * skips that row (oob=skip). An indexed operand of one row is a run-time
 * shift of its whole pattern by index[0] rows: the other operand may then
 * have any shape of the same element count, walked in order (NKI's
 * scalar_offset).
 */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "emu/engines/dma_desc.h"
#include "emu/engines/dma_xfer.h"
#include "emu/isa/isa_args.h"

/* dma_copy's operands; dma_transpose keeps dst and src in the same slots. */
#define DMA_SLOT_DST ISA_AP_SLOT(dma_copy, dst)
#define DMA_SLOT_SRC ISA_AP_SLOT(dma_copy, src)
#define DMA_SLOT_INDEX ISA_AP_SLOT(dma_copy, index)
static_assert(ISA_AP_SLOT(dma_transpose, dst) == DMA_SLOT_DST, "dma_transpose dst");
static_assert(ISA_AP_SLOT(dma_transpose, src) == DMA_SLOT_SRC, "dma_transpose src");
#define DMA_MAX_ROWS 256  /* rows an operand may have (num_part is 8 bits) */

static emu_status dma_bind2(struct isa_exec_ctx *ctx, struct ap_view *dst, struct ap_view *src)
{
    emu_status s = ap_bind(ctx, DMA_SLOT_DST, dst);
    return s != EMU_OK ? s : ap_bind(ctx, DMA_SLOT_SRC, src);
}

/* SBUF read-add-write (op=accumulate): NeuronCore-v4, dst in SBUF, src
 * and dst of one type, bf16 or fp32 (the Trainium3 guide). */
static emu_status dma_check_accumulate(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    const struct isa_ap *dst = &insn->ap[DMA_SLOT_DST], *src = &insn->ap[DMA_SLOT_SRC];
    bool type_ok = dst->dtype == src->dtype &&
                   (dst->dtype == ISA_DT_BF16 || dst->dtype == ISA_DT_F32);
    if (ctx->core->gen < 4)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy op=accumulate (SBUF read-add-write) "
                         "needs NeuronCore-v4 (this core is NeuronCore-v%u)", ctx->core->gen);
    if (dst->mem != ISA_MEM_SBUF || !type_ok)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy op=accumulate adds into SBUF with src "
                         "and dst both bf16 or both f32 (dst %s %s, src %s)",
                         isa_mem_name(dst->mem), isa_dtype_name(dst->dtype),
                         isa_dtype_name(src->dtype));
    return EMU_OK;
}

/* The job of a dma_copy op (not transpose) with one source. */
static emu_status dma_copy_job(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                               struct dma_job *job)
{
    unsigned op = ISA_ARG_ENUM(insn, dma_copy, op);
    float scale = ISA_ARG_F32(insn, dma_copy, scale);
    memset(job, 0, sizeof *job);
    job->nsrc = 1;
    job->scale[0] = 1.0f;
    job->rmw = op != ISA_DMAOP_copy && op != ISA_DMAOP_cast;
    switch (op) {
    case ISA_DMAOP_copy: case ISA_DMAOP_cast: job->kind = DMA_K_COPY; break;
    case ISA_DMAOP_add: job->kind = DMA_K_ADD; break;
    case ISA_DMAOP_accumulate: {
        emu_status s = dma_check_accumulate(ctx, insn);
        if (s != EMU_OK)
            return s;
        job->kind = DMA_K_ADD;
        break;
    }
    case ISA_DMAOP_fma: job->kind = DMA_K_ADD; job->scale[0] = scale; break;
    case ISA_DMAOP_min: job->kind = DMA_K_MIN; break;
    case ISA_DMAOP_max: job->kind = DMA_K_MAX; break;
    default:
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy op %u is unknown", op);
    }
    if (op != ISA_DMAOP_fma && scale != 1.0f)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy scale=%g applies only to "
                         "op=fma", (double)scale);
    return EMU_OK;
}

/* DMA transpose of bound views, permuted by the rank of src (partitions
 * included): [P, F] -> [F, P]; [P, A, B] -> [B, A, P];
 * [P, A, B, C] -> [C, A, B, P] (NKI dma_transpose). */
static emu_status dma_transpose_views(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                                      const struct ap_view *src)
{
    static const uint32_t perms[3][4] = {{1, 0}, {2, 1, 0}, {3, 1, 2, 0}};
    const struct isa_ap *ap = &ctx->insn->ap[DMA_SLOT_SRC];
    uint32_t rank = 1u + ap->ndims;
    uint64_t shape[DMA_MAX_DIMS] = {ap->num_part};
    for (uint32_t d = 0; d < ap->ndims && d + 1 < DMA_MAX_DIMS; d++)
        shape[d + 1] = ap->dim[d].count;
    if (rank > 4 || !dma_same_type(dst->dtype, src->dtype) ||
        dst->rows != shape[perms[rank - 2][0]])
        return core_fail(ctx, EMU_EXEC_ERR, "DMA transpose of a rank-%u %s "
                         "source into %u partitions of %s: the source has 2 to 4 dimensions "
                         "(partitions included), dst the transposed shape and the same type",
                         rank, isa_dtype_name(src->dtype), dst->rows,
                         isa_dtype_name(dst->dtype));
    struct dma_stream d, s;
    dma_stream_from_view(&d, dst, 0, dst->rows);
    dma_stream_from_view(&s, src, 0, src->rows);
    return dma_permute_run(ctx, &d, &s, rank, shape, perms[rank - 2]);
}

/* ---- indirect ----------------------------------------------------------------- */

/* Bind operand slot as one row (its first), for per-row relocation. */
static emu_status dma_bind_row(struct isa_exec_ctx *ctx, unsigned slot, struct ap_view *v,
                               struct isa_extent *ext)
{
    struct isa_insn one = *ctx->insn;
    one.ap[slot].num_part = 1;
    const struct isa_insn *saved = ctx->insn;
    ctx->insn = &one;
    emu_status s = ap_bind(ctx, slot, v);
    ctx->insn = saved;
    if (s == EMU_OK && isa_ap_extent(&one.ap[slot], ext) != EMU_OK)
        s = core_fail(ctx, EMU_EXEC_OOB, "operand %u has a malformed pattern", slot);
    return s;
}

/* An index of row r reaching outside var: the failure names the index and,
 * where it fits in 64 bits, the first element of the row outside the
 * variable, in its flat elements of the operand's type (the row's first
 * element, or the variable's end for a row that starts inside it), and
 * how many it has (the front end words that as NumPy's out-of-bounds
 * IndexError). */
static emu_status dma_index_oob(struct isa_exec_ctx *ctx, const struct isa_ap *ap,
                                const struct isa_extent *ext, const struct core_var *var,
                                int64_t i, uint32_t r)
{
    const char *name = var->name ? var->name : "?";
    int64_t esize = (int64_t)isa_dtype_size(ap->dtype), first;
    if (esize > 0 && !__builtin_mul_overflow(i, (int64_t)ap->part_step, &first) &&
        !__builtin_add_overflow(first, (int64_t)ext->lo / esize, &first)) {
        uint64_t elems = var->size / (uint64_t)esize;
        if (first >= 0 && (uint64_t)first < elems)
            first = (int64_t)elems;  /* the row runs past the end */
        return core_fail(ctx, EMU_EXEC_OOB, "dma_copy index %" PRId64 " of row %u reaches "
                         "outside variable '%s' (%" PRIu64 " bytes): element %" PRId64
                         " of %" PRIu64, i, r, name, var->size, first, elems);
    }
    return core_fail(ctx, EMU_EXEC_OOB, "dma_copy index %" PRId64 " of row %u reaches "
                     "outside variable '%s' (%" PRIu64 " bytes)", i, r, name, var->size);
}

/* Byte offset of each indexed row; skip[r] when out of bounds with oob=skip. */
static emu_status dma_index_rows(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                 unsigned slot, const struct isa_extent *ext, uint32_t rows,
                                 int64_t *off, bool *skip)
{
    const struct isa_ap *ap = &insn->ap[slot];
    const struct core_var *var = core_find_var(ctx->prog, ap->var_id);
    struct ap_view idx;
    emu_status s = ap_bind(ctx, DMA_SLOT_INDEX, &idx);
    if (s != EMU_OK)
        return s;
    if (!dma_dtype_is_int(idx.dtype) || idx.rows != rows)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy index: %u rows of %s; "
                         "need %u rows of an integer type", idx.rows,
                         isa_dtype_name(idx.dtype), rows);
    int64_t row_bytes = (int64_t)ap->part_step * (int64_t)isa_dtype_size(ap->dtype);
    for (uint32_t r = 0; r < rows; r++) {
        int64_t i = dma_int_get(ap_row_ptr(&idx, r), idx.dtype), lo, hi;
        bool in = !__builtin_mul_overflow(i, row_bytes, &off[r]) &&
                  !__builtin_add_overflow((int64_t)ext->lo, off[r], &lo) &&
                  !__builtin_add_overflow((int64_t)ext->hi, off[r], &hi) && lo >= 0 &&
                  (uint64_t)hi <= var->size;
        skip[r] = !in;
        if (!in && ISA_ARG_ENUM(insn, dma_copy, oob) != ISA_OOB_skip)
            return dma_index_oob(ctx, ap, ext, var, i, r);
    }
    return EMU_OK;
}

/* Check the indirect fields; *slot: the indexed operand. */
static emu_status dma_check_indirect(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                     unsigned *slot)
{
    unsigned indirect = ISA_ARG_ENUM(insn, dma_copy, indirect);
    int64_t dim = ISA_ARG_INT(insn, dma_copy, indirect_dim);
    *slot = indirect == ISA_INDIR_src ? DMA_SLOT_SRC : DMA_SLOT_DST;
    if (indirect != ISA_INDIR_src && indirect != ISA_INDIR_dst)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy indirect=%u is unknown", indirect);
    if (dim != 0)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy indirect_dim=%" PRId64
                         ": only 0 (one row index per partition) is emulated", dim);
    if (ISA_ARG_ENUM(insn, dma_copy, op) == ISA_DMAOP_transpose ||
        !ap_present(insn, DMA_SLOT_INDEX) ||
        insn->ap[*slot].mem != ISA_MEM_HBM)
        return core_fail(ctx, EMU_EXEC_ERR, "indirect dma_copy needs an index "
                         "operand, an HBM indexed operand and an op other than transpose");
    return EMU_OK;
}

/* Gather (indirect=src) or scatter (indirect=dst) by rows. */
static emu_status dma_copy_indirect(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    unsigned slot;
    struct ap_view ind, other;
    struct isa_extent ext;
    struct dma_job job;
    emu_status s = dma_check_indirect(ctx, insn, &slot);
    if (s == EMU_OK)
        s = ap_bind(ctx, slot == DMA_SLOT_SRC ? DMA_SLOT_DST : DMA_SLOT_SRC, &other);
    if (s == EMU_OK)
        s = dma_bind_row(ctx, slot, &ind, &ext);
    if (s == EMU_OK)
        s = dma_copy_job(ctx, insn, &job);
    if (s != EMU_OK)
        return s;
    uint32_t rows = insn->ap[slot].num_part;
    bool shift = rows == 1;   /* one indexed row: the other side walks all of its rows */
    if (shift ? ind.elems != (uint64_t)other.rows * other.elems
              : rows != other.rows || ind.elems != other.elems)
        return core_fail(ctx, EMU_EXEC_ERR, "indirect dma_copy: indexed operand "
                         "%u x %" PRIu64 ", other %u x %" PRIu64 "; the shapes must match "
                         "(or the indexed operand be one row of all the elements)", rows,
                         ind.elems, other.rows, other.elems);
    int64_t off[DMA_MAX_ROWS];
    bool skip[DMA_MAX_ROWS];
    s = dma_index_rows(ctx, insn, slot, &ext, rows, off, skip);
    for (uint32_t r = 0; s == EMU_OK && r < rows; r++) {
        if (skip[r])
            continue;
        struct dma_stream a, b;
        dma_stream_from_view(&a, &ind, 0, 1);
        a.base += off[r];
        dma_stream_from_view(&b, &other, r, shift ? other.rows : 1);
        job.dst = slot == DMA_SLOT_DST ? &a : &b;
        job.src[0] = slot == DMA_SLOT_DST ? &b : &a;
        s = dma_job_run(ctx, &job);
    }
    return s;
}

/* ---- instructions -------------------------------------------------------------- */

emu_status isa_exec_dma_copy(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    if (ISA_ARG_ENUM(insn, dma_copy, indirect) != ISA_INDIR_none)
        return dma_copy_indirect(ctx, insn);
    if (ap_present(insn, DMA_SLOT_INDEX))
        return core_fail(ctx, EMU_EXEC_ERR, "dma_copy has an index operand but "
                         "indirect=none");
    struct ap_view dst, src;
    emu_status s = dma_bind2(ctx, &dst, &src);
    if (s != EMU_OK)
        return s;
    if (ISA_ARG_ENUM(insn, dma_copy, op) == ISA_DMAOP_transpose)
        return dma_transpose_views(ctx, &dst, &src);
    struct dma_job job;
    struct dma_stream d, a;
    s = dma_copy_job(ctx, insn, &job);
    if (s != EMU_OK)
        return s;
    dma_stream_from_view(&d, &dst, 0, dst.rows);
    dma_stream_from_view(&a, &src, 0, src.rows);
    job.dst = &d;
    job.src[0] = &a;
    return dma_job_run(ctx, &job);
}

emu_status isa_exec_dma_transpose(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst, src;
    emu_status s = dma_bind2(ctx, &dst, &src);
    return s != EMU_OK ? s : dma_transpose_views(ctx, &dst, &src);
}

/* dst = reduce_op(src_i * scale_i) over the present sources (add, max, min). */
emu_status isa_exec_dma_compute(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view dst, src[4];
    struct dma_stream d, a[4];
    static const int src_slot[4] = {ISA_AP_SLOT(dma_compute, src0), ISA_AP_SLOT(dma_compute, src1),
                                    ISA_AP_SLOT(dma_compute, src2), ISA_AP_SLOT(dma_compute, src3)};
    static const int scale_slot[4] = {
        ISA_F32_SLOT(dma_compute, scale0), ISA_F32_SLOT(dma_compute, scale1),
        ISA_F32_SLOT(dma_compute, scale2), ISA_F32_SLOT(dma_compute, scale3)};
    struct dma_job job = {.kind = DMA_K_ADD};
    unsigned rop = ISA_ARG_ENUM(insn, dma_compute, reduce_op);
    switch (rop) {
    case ISA_ALU_add: break;
    case ISA_ALU_max: job.kind = DMA_K_MAX; break;
    case ISA_ALU_min: job.kind = DMA_K_MIN; break;
    default:
        return core_fail(ctx, EMU_EXEC_ERR, "dma_compute reduce_op %s: add, max "
                         "or min", isa_enum_name(ISA_ET_ALU, rop));
    }
    emu_status s = ap_bind(ctx, ISA_AP_SLOT(dma_compute, dst), &dst);
    for (unsigned i = 0; s == EMU_OK && i < 4; i++) {
        if (!ap_present(insn, src_slot[i]))
            continue;
        s = ap_bind(ctx, src_slot[i], &src[i]);
        if (s != EMU_OK)
            break;
        dma_stream_from_view(&a[job.nsrc], &src[i], 0, src[i].rows);
        job.scale[job.nsrc] = insn->fimm[scale_slot[i]];
        job.src[job.nsrc] = &a[job.nsrc];
        job.nsrc++;
    }
    if (s != EMU_OK)
        return s;
    dma_stream_from_view(&d, &dst, 0, dst.rows);
    job.dst = &d;
    return dma_job_run(ctx, &job);
}

emu_status isa_exec_dma_trigger(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    return dma_desc_trigger(ctx, (uint32_t)ISA_ARG_INT(insn, dma_trigger, queue));
}
