/*
 * dma_desc.c: the NEFF DMA descriptors (engine JSON "dma" list) that a
 * dma_trigger instruction starts (see dma_desc.h).
 *
 * A descriptor moves the elements of its source pattern(s) to its "to"
 * pattern; patterns are byte walks over variables (the state-buffer
 * variable is the core's SBUF), read as elements of from_dtype/to_dtype:
 *   copy/cast       to = from (bit copy for equal types, else via fp32, RNE)
 *   add/fma         one source: to = fmaf(from, scale, to) (scale 1 for add);
 *                   CCE (from_arr): to = sum of scale * from_i, in order
 *   min/max         with a constant: to = min/max(constant, sources...);
 *                   one source without: to = min/max(to, from);
 *                   CCE without: to = min/max(sources...)
 *   transpose       the source's innermost dimension holds one row of a
 *                   matrix; to receives the transposed matrix in order
 *                   (elements of transpose_element_size bytes, moved bit-exactly)
 * When a descriptor completes, its semaphore is incremented by one and its
 * event set. Not emulated (clear errors): transpose_shape, and
 * remote_semaphores (peer cores of LNC=2).
 */
#include "emu/engines/dma_desc.h"

#include <inttypes.h>
#include <string.h>

#include "emu/engines/dma_xfer.h"

/* Resolve the variable of one pattern and check the bytes it touches. */
static emu_status desc_mem(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d,
                           const struct neff_dma_ap *ap, uint8_t **mem)
{
    const struct core_program *p = ctx->prog;
    if (ap->var_index < 0 || (size_t)ap->var_index >= p->nvar_index ||
        p->var_by_index[ap->var_index].va == NULL)
        return core_fail(ctx, EMU_INVALID, "DMA descriptor %u: variable '%s' has no memory",
                         d->id, ap->var ? ap->var : "?");
    const struct core_var *v = &p->var_by_index[ap->var_index];
    uint64_t lo, hi;
    if (!neff_ap_range(ap, &lo, &hi) || hi > v->size)
        return core_fail(ctx, EMU_EXEC_OOB, "DMA descriptor %u reaches bytes [%" PRIu64 ", %"
                         PRIu64 ") of variable '%s' (%" PRIu64 " bytes)", d->id, lo, hi,
                         ap->var ? ap->var : "?", v->size);
    *mem = v->va;
    return EMU_OK;
}

static emu_status desc_stream(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d,
                              const struct neff_dma_ap *ap, uint32_t esize, struct dma_stream *s)
{
    uint8_t *mem = NULL;
    emu_status st = desc_mem(ctx, d, ap, &mem);
    return st != EMU_OK ? st : dma_stream_from_desc(ctx, s, ap, mem, esize);
}

/* Element operation of a non-transpose descriptor. */
static emu_status desc_job(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d,
                           struct dma_job *job)
{
    bool one = !d->cce && d->n_from == 1;
    float scale = d->op == NEFF_DMA_FMA ? (float)d->scale : 1.0f;
    memset(job, 0, sizeof *job);
    job->nsrc = d->n_from;
    for (uint32_t i = 0; i < d->n_from; i++)
        job->scale[i] = scale;
    switch (d->op) {
    case NEFF_DMA_COPY:
    case NEFF_DMA_CAST:
        job->kind = DMA_K_COPY;
        if (d->n_from != 1)
            return core_fail(ctx, EMU_EXEC_ERR, "DMA descriptor %u: %s takes "
                             "one source, not %u", d->id, neff_dma_op_name(d->op), d->n_from);
        return EMU_OK;
    case NEFF_DMA_ADD:
    case NEFF_DMA_FMA:
        job->kind = DMA_K_ADD;
        job->rmw = one;
        return EMU_OK;
    case NEFF_DMA_MIN:
    case NEFF_DMA_MAX:
        job->kind = d->op == NEFF_DMA_MIN ? DMA_K_MIN : DMA_K_MAX;
        job->has_init = d->constant_dtype != NEFF_DTYPE_NONE;
        job->init = d->constant;
        job->rmw = one && !job->has_init;
        return EMU_OK;
    default:
        return core_fail(ctx, EMU_EXEC_ERR, "DMA descriptor %u: op %d is "
                         "unknown", d->id, (int)d->op);
    }
}

static emu_status desc_transpose(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d)
{
    if (d->has_transpose_shape || d->n_from != 1)
        return core_fail(ctx, EMU_EXEC_ERR, "DMA descriptor %u: a transpose "
                         "takes one source and no transpose_shape (trnemu does not run other forms)", d->id);
    uint32_t es = d->transpose_element_size;
    if (es == 0)
        es = (uint32_t)num_dtype_size(d->from[0].dtype);
    struct dma_stream to, from;
    emu_status s = desc_stream(ctx, d, &d->to, es, &to);
    if (s == EMU_OK)
        s = desc_stream(ctx, d, &d->from[0], es, &from);
    if (s != EMU_OK || from.total == 0)
        return s;
    uint64_t cols = from.count[from.ndims - 1];
    return dma_transpose_run(ctx, &to, &from, from.total / cols, cols);
}

static emu_status desc_compute(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d)
{
    struct dma_job job;
    struct dma_stream to, from[DMA_MAX_SRC];
    emu_status s = desc_job(ctx, d, &job);
    if (s == EMU_OK)
        s = desc_stream(ctx, d, &d->to, 0, &to);
    for (uint32_t i = 0; s == EMU_OK && i < d->n_from; i++) {
        s = desc_stream(ctx, d, &d->from[i], 0, &from[i]);
        job.src[i] = &from[i];
    }
    if (s != EMU_OK)
        return s;
    job.dst = &to;
    return dma_job_run(ctx, &job);
}

/* The parts of a descriptor that are checked before it moves anything. */
static emu_status desc_check(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d)
{
    if (d->n_remote_semaphores != 0)
        return core_fail(ctx, EMU_EXEC_ERR, "DMA descriptor %u: "
                         "remote_semaphores (peer cores of LNC=2) are not supported by trnemu", d->id);
    if (d->n_from == 0 || d->n_from > DMA_MAX_SRC)
        return core_fail(ctx, EMU_EXEC_ERR, "DMA descriptor %u has %u sources; "
                         "1..%u", d->id, d->n_from, DMA_MAX_SRC);
    if ((d->has_semaphore && d->semaphore >= ISA_NUM_SEMS) ||
        (d->has_event && d->event >= ISA_NUM_EVENTS))
        return core_fail(ctx, EMU_EXEC_ERR, "DMA descriptor %u: semaphore %u or "
                         "event %u out of range", d->id, d->semaphore, d->event);
    return EMU_OK;
}

static emu_status desc_run(struct isa_exec_ctx *ctx, const struct neff_dma_desc *d)
{
    emu_status s = desc_check(ctx, d);
    if (s == EMU_OK)
        s = d->op == NEFF_DMA_TRANSPOSE ? desc_transpose(ctx, d) : desc_compute(ctx, d);
    if (s != EMU_OK)
        return s;
    if (d->has_semaphore)
        ctx->core->sem[d->semaphore]++;
    if (d->has_event)
        ctx->core->event[d->event] = 1;
    return EMU_OK;
}

emu_status dma_desc_trigger(struct isa_exec_ctx *ctx, uint32_t id)
{
    const struct neff_dma_desc *list = ctx->prog->descs[ctx->engine];
    size_t n = ctx->prog->ndescs[ctx->engine], ran = 0;
    for (size_t i = 0; i < n; i++) {
        if (list[i].id != id)
            continue;
        emu_status s = desc_run(ctx, &list[i]);
        if (s != EMU_OK)
            return s;
        ran++;
    }
    if (ran == 0)
        return core_fail(ctx, EMU_EXEC_ERR, "dma_trigger queue=%u: engine %s has "
                         "no DMA descriptor with id %u", id, isa_engine_name(ctx->engine), id);
    return EMU_OK;
}
