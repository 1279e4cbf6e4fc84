/*
 * ap.c: binding access patterns to memory and moving rows (see ap.h).
 */
#include "emu/core/ap.h"

#include "emu/core/dynap.h"

#include <inttypes.h>
#include <string.h>

bool ap_present(const struct isa_insn *insn, unsigned slot)
{
    return slot < ISA_MAX_AP && insn->ap[slot].mem != ISA_MEM_NONE;
}

/* Merge neighbouring dimensions that form one run, drop count-1 ones. */
static void ap_collapse(struct ap_view *v)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < v->ndims; d++) {
        if (v->count[d] == 1 && v->ndims > 1)
            continue;
        if (n > 0 && v->stride[n - 1] == v->stride[d] * (int64_t)v->count[d]) {
            v->count[n - 1] *= v->count[d];
            v->stride[n - 1] = v->stride[d];
            continue;
        }
        v->count[n] = v->count[d];
        v->stride[n] = v->stride[d];
        n++;
    }
    if (n == 0) {
        v->count[0] = 1;
        v->stride[0] = v->esize;
        n = 1;
    }
    v->ndims = n;
    v->flat = n == 1 && (v->stride[0] == (int64_t)v->esize || v->count[0] == 1);
}

/* Byte range [lo, hi) of an on-chip pattern in 64-bit arithmetic; false
 * when a value is too large for that (then isa_ap_extent decides). */
static bool ap_chip_span(const struct isa_ap *ap, uint32_t esize, int64_t *lo, int64_t *hi)
{
    const int64_t lim = 1 << 20;
    if (ap->offset > (1ull << 40))
        return false;
    int64_t l = 0, h = 0;
    for (uint32_t d = 0; d < ap->ndims; d++) {
        int64_t c = ap->dim[d].count, st = ap->dim[d].step;
        if (c > lim || st > lim || st < -lim)
            return false;
        int64_t span = st * (c - 1);
        if (span < 0)
            l += span;
        else
            h += span;
    }
    *lo = (int64_t)ap->offset + l * esize;
    *hi = (int64_t)ap->offset + (h + 1) * esize;
    return true;
}

static emu_status ap_chip_oob(struct isa_exec_ctx *ctx, unsigned slot, const struct isa_ap *ap,
                              uint64_t part_bytes)
{
    struct isa_extent ext = {0};
    (void)isa_ap_extent(ap, &ext);
    return core_fail(ctx, EMU_EXEC_OOB, "operand %u reaches bytes [%" PRIu64 ", %" PRIu64
                     ") of partitions %u..%u; %s partitions hold %" PRIu64 " bytes", slot,
                     ext.lo, ext.hi, ext.part_first, ext.part_last,
                     ap->mem == ISA_MEM_SBUF ? "SBUF" : "PSUM", part_bytes);
}

static emu_status ap_bind_chip(struct isa_exec_ctx *ctx, unsigned slot, const struct isa_ap *ap,
                               struct ap_view *v)
{
    bool sbuf = ap->mem == ISA_MEM_SBUF;
    uint64_t part_bytes = sbuf ? ctx->core->sbuf_part_bytes : ISA_PSUM_PART_BYTES;
    uint8_t *mem = sbuf ? ctx->core->sbuf : ctx->core->psum;
    uint32_t last = ap->start_part + (uint32_t)(ap->num_part - 1) * (uint32_t)ap->part_step;
    int64_t lo, hi;
    if (ap_chip_span(ap, v->esize, &lo, &hi)) {
        if (lo < 0 || (uint64_t)hi > part_bytes || ap->part_step < 1 ||
            last >= ISA_NUM_PARTITIONS)
            return ap_chip_oob(ctx, slot, ap, part_bytes);
    } else {
        struct isa_extent ext;
        if (isa_ap_extent(ap, &ext) != EMU_OK || ext.part_last >= ISA_NUM_PARTITIONS ||
            ext.hi > part_bytes)
            return ap_chip_oob(ctx, slot, ap, part_bytes);
    }
    v->base = mem + (uint64_t)ap->start_part * part_bytes + ap->offset;
    v->row_stride = (int64_t)ap->part_step * (int64_t)part_bytes;
    v->first_part = ap->start_part;
    return EMU_OK;
}

static emu_status ap_bind_hbm(struct isa_exec_ctx *ctx, unsigned slot, const struct isa_ap *ap,
                              struct ap_view *v)
{
    const struct core_var *var = core_find_var(ctx->prog, ap->var_id);
    if (var == NULL || var->va == NULL)
        return core_fail(ctx, EMU_INVALID, "operand %u names var_id %u, which has no memory",
                         slot, ap->var_id);
    emu_status st = isa_ap_check_bounds(ap, var->size);
    if (st != EMU_OK) {
        struct isa_extent ext = {0};
        (void)isa_ap_extent(ap, &ext);
        return core_fail(ctx, EMU_EXEC_OOB, "operand %u reaches bytes [%" PRIu64 ", %" PRIu64
                         ") of variable '%s' (%" PRIu64 " bytes)", slot, ext.lo, ext.hi,
                         var->name ? var->name : "?", var->size);
    }
    v->base = var->va + ap->offset;
    v->row_stride = (int64_t)ap->part_step * (int64_t)v->esize;
    v->first_part = 0;
    return EMU_OK;
}

/* An operand with tensor indirection: its gathered rows (dynap.h), one
 * packed run of its columns each (ap's one dimension, set by ap_bind), in
 * place of the memory. */
static emu_status ap_bind_stage(const struct dynap_stage *sg, unsigned slot,
                                const struct isa_ap *ap, struct ap_view *v)
{
    v->stride[0] = v->esize;
    v->base = sg->buf[slot];
    v->row_stride = (int64_t)v->elems * v->esize;
    v->first_part = ap->start_part;
    return EMU_OK;
}

emu_status ap_bind(struct isa_exec_ctx *ctx, unsigned slot, struct ap_view *v)
{
    const struct isa_ap *ap = &ctx->insn->ap[slot];
    v->rnd = NULL;
    v->flat = false;
    if (ap->mem == ISA_MEM_NONE)
        return core_fail(ctx, EMU_INVALID, "operand %u is missing", slot);
    v->mem = ap->mem;
    v->dtype = ap->dtype;
    v->esize = (uint32_t)isa_dtype_size(ap->dtype);
    v->rows = ap->num_part;
    v->ndims = ap->ndims;
    v->elems = 1;
    for (uint32_t d = 0; d < ap->ndims; d++) {
        v->count[d] = ap->dim[d].count;
        v->stride[d] = (int64_t)ap->dim[d].step * v->esize;
        v->elems *= ap->dim[d].count;
    }
    emu_status st = ctx->stage != NULL && ctx->stage->buf[slot] != NULL
                        ? ap_bind_stage(ctx->stage, slot, ap, v)
                    : ap->mem == ISA_MEM_HBM ? ap_bind_hbm(ctx, slot, ap, v)
                                             : ap_bind_chip(ctx, slot, ap, v);
    if (st == EMU_OK)
        ap_collapse(v);
    if (ctx->core->stochastic && num_dtype_is_float(v->dtype) && v->esize < 4)
        v->rnd = &ctx->core->sr[ctx->engine];
    /* On chip a row never exceeds a partition; HBM rows (DMA operands) may,
     * and the DMA works through them in pieces. */
    if (st == EMU_OK && v->mem != ISA_MEM_HBM && v->elems > CORE_SCRATCH_ELEMS)
        return core_fail(ctx, EMU_EXEC_OOB, "operand %u has %" PRIu64 " elements per partition; "
                         "a partition holds at most %u", slot, v->elems, CORE_SCRATCH_ELEMS);
    return st;
}

float *ap_row_f32(const struct ap_view *v, uint32_t r)
{
    if (!v->flat || (v->dtype != ISA_DT_F32 && v->dtype != ISA_DT_F32R))
        return NULL;
    return (float *)(void *)ap_row_ptr(v, r);
}

void ap_row_load(const struct ap_view *v, uint32_t r, float *dst)
{
    AP_FOR_RUNS(v, r, (void)num_load_f32(dst + run_first, run_ptr, v->dtype,
                                         (ptrdiff_t)(run_step / (int64_t)v->esize), run_n));
}

void ap_row_store(const struct ap_view *v, uint32_t r, const float *src)
{
    AP_FOR_RUNS(v, r, (void)num_store_f32(run_ptr, v->dtype,
                                          (ptrdiff_t)(run_step / (int64_t)v->esize),
                                          src + run_first, run_n, v->rnd));
    if (v->rnd != NULL)
        v->rnd->index += v->elems;
}

float *ap_row_get(const struct ap_view *v, uint32_t r, float *scratch, bool *direct)
{
    float *p = ap_row_f32(v, r);
    *direct = p != NULL;
    if (p != NULL)
        return p;
    ap_row_load(v, r, scratch);
    return scratch;
}

void ap_row_put(const struct ap_view *v, uint32_t r, const float *row, bool direct)
{
    if (!direct)
        ap_row_store(v, r, row);
}

bool ap_same_shape(const struct ap_view *a, const struct ap_view *b)
{
    return a->rows == b->rows && a->elems == b->elems;
}

/* Bytes [lo, hi) that one row of v spans, from its row start. */
static void ap_row_span(const struct ap_view *v, int64_t *lo, int64_t *hi)
{
    *lo = 0;
    *hi = 0;
    for (uint32_t d = 0; d < v->ndims; d++) {
        int64_t span = (int64_t)(v->count[d] - 1) * v->stride[d];
        if (span < 0)
            *lo += span;
        else
            *hi += span;
    }
    *hi += v->esize;
}

/* Host bytes [lo, hi) that all of v spans. */
static void ap_extent(const struct ap_view *v, uintptr_t *lo, uintptr_t *hi)
{
    int64_t rlo, rhi, rows = (int64_t)(v->rows - 1) * v->row_stride;
    ap_row_span(v, &rlo, &rhi);
    *lo = (uintptr_t)v->base + (uintptr_t)(rlo + (rows < 0 ? rows : 0));
    *hi = (uintptr_t)v->base + (uintptr_t)(rhi + (rows > 0 ? rows : 0));
}

static bool ap_same_layout(const struct ap_view *a, const struct ap_view *b)
{
    if (a->base != b->base || a->row_stride != b->row_stride || a->ndims != b->ndims ||
        a->esize != b->esize || a->rows != b->rows)
        return false;
    for (uint32_t d = 0; d < a->ndims; d++)
        if (a->count[d] != b->count[d] || a->stride[d] != b->stride[d])
            return false;
    return true;
}

/* Do rows of a and b, both of positive row stride `step` and rows no
 * longer than step, never share a byte? Row i of a starts at
 * b->base + delta + i * step: it can only meet the rows of b near it. */
static bool ap_rows_apart(const struct ap_view *a, const struct ap_view *b, int64_t step)
{
    int64_t alo, ahi, blo, bhi;
    ap_row_span(a, &alo, &ahi);
    ap_row_span(b, &blo, &bhi);
    if (bhi - blo > step)
        return false;
    int64_t delta = (int64_t)((intptr_t)a->base - (intptr_t)b->base);
    int64_t rem = ((delta % step) + step) % step;
    for (int64_t k = -2; k <= 2; k++)
        if (rem - k * step + alo < bhi && blo < rem - k * step + ahi)
            return false;
    return true;
}

bool ap_rows_independent(const struct ap_view *dst, const struct ap_view *src)
{
    int64_t lo, hi;
    ap_row_span(dst, &lo, &hi);
    int64_t step = dst->row_stride < 0 ? -dst->row_stride : dst->row_stride;
    if (dst->rows > 1 && step < hi - lo)
        return false; /* rows of dst share bytes */
    if (ap_same_layout(dst, src))
        return true;
    uintptr_t dlo, dhi, slo, shi;
    ap_extent(dst, &dlo, &dhi);
    ap_extent(src, &slo, &shi);
    if (shi <= dlo || dhi <= slo)
        return true;
    return dst->row_stride > 0 && src->row_stride == dst->row_stride &&
           ap_rows_apart(dst, src, dst->row_stride);
}
