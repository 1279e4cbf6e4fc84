/*
 * dma_xfer.c: element streams and the chunked copy / arithmetic /
 * transpose engine behind the DMA instructions and descriptors (see
 * dma_xfer.h). A job of DMA_PAR_MIN_BYTES or more whose destination
 * overlaps none of its sources is split across host threads
 * (emu/core/par.h) in parts of DMA_PAR_ELEMS elements: every element is
 * computed from its own operands alone, so the bits stay the same.
 */
#include "emu/engines/dma_xfer.h"

#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "emu/core/par.h"
#include "emu/num/num_minmax.h"

#define DMA_CHUNK 4096u          /* elements staged in fp32 at a time */
#define DMA_CANON_NAN NUM_DEFAULT_NAN_BITS /* the NaN an arithmetic transfer stores */
#define DMA_PAR_MIN_BYTES (512u * 1024u) /* destination bytes from which a job is split */
#define DMA_PAR_ELEMS (64u * 1024u)      /* elements per part of a split job */

/* ---- streams ---------------------------------------------------------------- */

void dma_stream_from_view(struct dma_stream *s, const struct ap_view *v, uint32_t row,
                          uint32_t nrows)
{
    memset(s, 0, sizeof *s);
    s->base = ap_row_ptr(v, row);
    s->dtype = v->dtype;
    s->esize = v->esize;
    s->count[0] = nrows;
    s->stride[0] = v->row_stride;
    for (uint32_t d = 0; d < v->ndims; d++) {
        s->count[d + 1] = v->count[d];
        s->stride[d + 1] = v->stride[d];
    }
    s->ndims = v->ndims + 1;
    s->total = (uint64_t)nrows * v->elems;
}

emu_status dma_stream_from_desc(struct isa_exec_ctx *ctx, struct dma_stream *s,
                                const struct neff_dma_ap *ap, uint8_t *mem, uint32_t esize)
{
    memset(s, 0, sizeof *s);
    s->base = mem + ap->off;
    s->dtype = ap->dtype;
    s->esize = esize != 0 ? esize : (uint32_t)num_dtype_size(ap->dtype);
    if (s->esize == 0 || ap->ndim == 0 || ap->ndim > NEFF_AP_MAX_DIMS)
        return core_fail(ctx, EMU_EXEC_ERR, "descriptor pattern on '%s' has "
                         "dtype %u and %u dimensions", ap->var ? ap->var : "?", ap->dtype,
                         ap->ndim);
    s->ndims = ap->ndim;
    s->total = 1;
    for (uint32_t i = 0; i < ap->ndim; i++) {
        uint32_t d = ap->ndim - 1 - i; /* descriptor dim 0 is the innermost */
        s->count[i] = ap->sizes[d];
        s->stride[i] = ap->steps[d];
    }
    uint32_t in = ap->ndim - 1;
    if (s->esize > 1) {
        bool whole = s->count[in] % s->esize == 0 &&
                     (s->stride[in] == 1 || s->count[in] == s->esize);
        if (!whole)
            return core_fail(ctx, EMU_EXEC_ERR, "descriptor pattern on '%s': "
                             "the innermost dimension (%" PRIu64 " bytes, step %" PRId64 ") "
                             "must be contiguous whole %u-byte elements",
                             ap->var ? ap->var : "?", s->count[in], s->stride[in], s->esize);
        s->count[in] /= s->esize;
        s->stride[in] = s->esize;
    }
    for (uint32_t i = 0; i < ap->ndim; i++)
        s->total *= s->count[i];
    return EMU_OK;
}

/* Elements left in the current innermost run. */
static uint64_t dma_run_left(const struct dma_stream *s)
{
    uint32_t in = s->ndims - 1;
    return s->count[in] - s->idx[in];
}

/* Address of the element under the cursor. */
static uint8_t *dma_at(const struct dma_stream *s)
{
    int64_t off = 0;
    for (uint32_t d = 0; d < s->ndims; d++)
        off += (int64_t)s->idx[d] * s->stride[d];
    return s->base + off;
}

/* Stride of the innermost run in elements. */
static ptrdiff_t dma_run_step(const struct dma_stream *s)
{
    return (ptrdiff_t)(s->stride[s->ndims - 1] / (int64_t)s->esize);
}

/* Move the cursor n elements on (n <= dma_run_left). */
static void dma_advance(struct dma_stream *s, uint64_t n)
{
    int d = (int)s->ndims - 1;
    s->idx[d] += n;
    while (d > 0 && s->idx[d] >= s->count[d]) {
        s->idx[d] = 0;
        s->idx[--d]++;
    }
}

static void dma_rewind(struct dma_stream *s)
{
    memset(s->idx, 0, sizeof s->idx);
}

/* ---- element helpers ------------------------------------------------------------- */

bool dma_same_type(uint32_t a, uint32_t b)
{
    bool fa = a == NUM_DT_FP32 || a == NUM_DT_FP32R, fb = b == NUM_DT_FP32 || b == NUM_DT_FP32R;
    return a == b || (fa && fb);
}

bool dma_dtype_is_int(uint32_t dtype)
{
    switch (dtype) {
    case NUM_DT_INT8: case NUM_DT_UINT8: case NUM_DT_INT16: case NUM_DT_UINT16:
    case NUM_DT_INT32: case NUM_DT_UINT32: case NUM_DT_INT64: case NUM_DT_UINT64:
        return true;
    }
    return false;
}

int64_t dma_int_get(const uint8_t *p, uint32_t dtype)
{
    int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32; int64_t i64;
    switch (dtype) {
    case NUM_DT_INT8: memcpy(&i8, p, 1); return i8;
    case NUM_DT_UINT8: memcpy(&u8, p, 1); return u8;
    case NUM_DT_INT16: memcpy(&i16, p, 2); return i16;
    case NUM_DT_UINT16: memcpy(&u16, p, 2); return u16;
    case NUM_DT_INT32: memcpy(&i32, p, 4); return i32;
    case NUM_DT_UINT32: memcpy(&u32, p, 4); return u32;
    case NUM_DT_INT64: case NUM_DT_UINT64: memcpy(&i64, p, 8); return i64;
    }
    return 0;
}

/* Write v as an integer of dtype (the low bytes, little-endian). */
static void dma_int_put(uint8_t *p, uint32_t dtype, int64_t v)
{
    memcpy(p, &v, num_dtype_size(dtype));
}

static float dma_canon(float x)
{
    if (isnan(x)) {
        uint32_t bits = DMA_CANON_NAN;
        memcpy(&x, &bits, sizeof x);
    }
    return x;
}

/* max or min of the accumulated value and the next source: a NaN gives
 * the default NaN (emu/num/num_minmax.h). */
static float dma_pick(enum dma_kind k, float acc, float v)
{
    if (k == DMA_K_MAX)
        return num_fmax(v, acc, NUM_NAN_DEFAULT, NUM_ZERO_SECOND);
    return num_fmin(v, acc, NUM_NAN_DEFAULT, NUM_ZERO_SECOND);
}

/* ---- chunks ------------------------------------------------------------------- */

/* n elements of equal type: bytes only. */
static void dma_chunk_bits(struct dma_stream *d, struct dma_stream *s, uint64_t n)
{
    uint8_t *dp = dma_at(d);
    const uint8_t *sp = dma_at(s);
    size_t es = d->esize;
    int64_t ds = d->stride[d->ndims - 1], ss = s->stride[s->ndims - 1];
    if (ds == (int64_t)es && ss == (int64_t)es) {
        memmove(dp, sp, n * es);
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        memmove(dp + (int64_t)i * ds, sp + (int64_t)i * ss, es);
}

/* n elements of stream s as fp32 into out. */
static void dma_load(struct dma_stream *s, uint64_t n, float *out)
{
    (void)num_load_f32(out, dma_at(s), s->dtype, dma_run_step(s), n);
}

/* n elements converted src -> fp32 -> dst (RNE). */
static void dma_chunk_convert(struct dma_stream *d, struct dma_stream *s, uint64_t n, float *tmp)
{
    dma_load(s, n, tmp);
    (void)num_store_f32(dma_at(d), d->dtype, dma_run_step(d), tmp, n, NULL);
}

/* Float arithmetic over one chunk of n elements. */
static void dma_chunk_float(struct dma_job *job, uint64_t n, float *acc, float *tmp)
{
    uint32_t first = 0;
    if (job->rmw) {
        dma_load(job->dst, n, acc);
    } else if (job->kind == DMA_K_ADD || job->has_init) {
        float init = job->kind == DMA_K_ADD ? -0.0f : (float)job->init;
        for (uint64_t i = 0; i < n; i++)
            acc[i] = init;
    } else {
        dma_load(job->src[0], n, acc);
        for (uint64_t i = 0; i < n; i++)
            acc[i] = acc[i] * job->scale[0];
        first = 1;
    }
    for (uint32_t s = first; s < job->nsrc; s++) {
        dma_load(job->src[s], n, tmp);
        float sc = job->scale[s];
        if (job->kind == DMA_K_ADD)
            for (uint64_t i = 0; i < n; i++)
                acc[i] = fmaf(tmp[i], sc, acc[i]);
        else
            for (uint64_t i = 0; i < n; i++)
                acc[i] = dma_pick(job->kind, acc[i], tmp[i] * sc);
    }
    for (uint64_t i = 0; i < n; i++)
        acc[i] = dma_canon(acc[i]);
    (void)num_store_f32(dma_at(job->dst), job->dst->dtype, dma_run_step(job->dst), acc, n, NULL);
}

/* Load n integers of stream s into out. */
static void dma_load_int(struct dma_stream *s, uint64_t n, int64_t *out)
{
    const uint8_t *p = dma_at(s);
    int64_t st = s->stride[s->ndims - 1];
    for (uint64_t i = 0; i < n; i++)
        out[i] = dma_int_get(p + (int64_t)i * st, s->dtype);
}

static bool dma_int_less(int64_t a, int64_t b, bool u64)
{
    return u64 ? (uint64_t)a < (uint64_t)b : a < b;
}

/* Exact integer min/max over one chunk (every stream has one integer type). */
static void dma_chunk_int(struct dma_job *job, uint64_t n, int64_t *acc, int64_t *tmp)
{
    bool u64 = job->dst->dtype == NUM_DT_UINT64, max = job->kind == DMA_K_MAX;
    uint32_t first = 0;
    if (job->rmw) {
        dma_load_int(job->dst, n, acc);
    } else if (job->has_init) {
        for (uint64_t i = 0; i < n; i++)
            acc[i] = (int64_t)job->init;
    } else {
        dma_load_int(job->src[0], n, acc);
        first = 1;
    }
    for (uint32_t s = first; s < job->nsrc; s++) {
        dma_load_int(job->src[s], n, tmp);
        for (uint64_t i = 0; i < n; i++) {
            bool take = max ? dma_int_less(acc[i], tmp[i], u64) : dma_int_less(tmp[i], acc[i], u64);
            acc[i] = take ? tmp[i] : acc[i];
        }
    }
    uint8_t *p = dma_at(job->dst);
    int64_t st = job->dst->stride[job->dst->ndims - 1];
    for (uint64_t i = 0; i < n; i++)
        dma_int_put(p + (int64_t)i * st, job->dst->dtype, acc[i]);
}

/* Is the job a min/max over one integer type with unit scales? */
static bool dma_job_is_int(const struct dma_job *job)
{
    if ((job->kind != DMA_K_MIN && job->kind != DMA_K_MAX) || !dma_dtype_is_int(job->dst->dtype))
        return false;
    for (uint32_t s = 0; s < job->nsrc; s++)
        if (job->src[s]->dtype != job->dst->dtype || job->scale[s] != 1.0f)
            return false;
    return true;
}

/* Elements the next chunk may cover: up to the end of every current run. */
static uint64_t dma_chunk_len(const struct dma_job *job, uint64_t left)
{
    uint64_t n = left < DMA_CHUNK ? left : DMA_CHUNK;
    uint64_t r = dma_run_left(job->dst);
    n = r < n ? r : n;
    for (uint32_t s = 0; s < job->nsrc; s++) {
        r = dma_run_left(job->src[s]);
        n = r < n ? r : n;
    }
    return n;
}

static emu_status dma_job_check(struct isa_exec_ctx *ctx, const struct dma_job *job)
{
    if (job->nsrc == 0 || job->nsrc > DMA_MAX_SRC)
        return core_fail(ctx, EMU_EXEC_ERR, "a DMA needs 1..%u sources, not %u",
                         DMA_MAX_SRC, job->nsrc);
    if (job->kind == DMA_K_COPY && (job->nsrc != 1 || job->rmw))
        return core_fail(ctx, EMU_EXEC_ERR, "a DMA copy takes exactly one source");
    for (uint32_t s = 0; s < job->nsrc; s++)
        if (job->src[s]->total != job->dst->total)
            return core_fail(ctx, EMU_EXEC_ERR, "DMA element counts differ: "
                             "destination %" PRIu64 ", source %u %" PRIu64, job->dst->total, s,
                             job->src[s]->total);
    return EMU_OK;
}

/* Put the cursor on element e (in stream order). */
static void dma_seek(struct dma_stream *s, uint64_t e)
{
    for (int d = (int)s->ndims - 1; d >= 0; d--) {
        s->idx[d] = e % s->count[d];
        e /= s->count[d];
    }
}

/* Scratch rows of one run of chunks. */
struct dma_rows {
    float *acc;     /* fp32 accumulators */
    float *tmp;     /* one fp32 operand */
    int64_t *iacc;  /* integer accumulators */
    int64_t *itmp;  /* one integer operand */
};

/* Elements [e0, e1) of a checked job, chunk by chunk. */
static void dma_job_range(struct dma_job *job, uint64_t e0, uint64_t e1,
                          const struct dma_rows *r)
{
    bool bits = job->kind == DMA_K_COPY && dma_same_type(job->dst->dtype, job->src[0]->dtype) &&
                job->dst->esize == job->src[0]->esize;
    bool ints = dma_job_is_int(job);
    dma_seek(job->dst, e0);
    for (uint32_t s = 0; s < job->nsrc; s++)
        dma_seek(job->src[s], e0);
    for (uint64_t left = e1 - e0; left > 0;) {
        uint64_t n = dma_chunk_len(job, left);
        if (bits)
            dma_chunk_bits(job->dst, job->src[0], n);
        else if (job->kind == DMA_K_COPY)
            dma_chunk_convert(job->dst, job->src[0], n, r->acc);
        else if (ints)
            dma_chunk_int(job, n, r->iacc, r->itmp);
        else
            dma_chunk_float(job, n, r->acc, r->tmp);
        dma_advance(job->dst, n);
        for (uint32_t s = 0; s < job->nsrc; s++)
            dma_advance(job->src[s], n);
        left -= n;
    }
}

/* Bytes [lo, hi) a stream touches, relative to nothing (host addresses). */
static void dma_extent(const struct dma_stream *s, uintptr_t *lo, uintptr_t *hi)
{
    int64_t a = 0, b = 0;
    for (uint32_t d = 0; d < s->ndims; d++) {
        int64_t span = (int64_t)(s->count[d] - 1) * s->stride[d];
        if (span < 0)
            a += span;
        else
            b += span;
    }
    *lo = (uintptr_t)s->base + (uintptr_t)a;
    *hi = (uintptr_t)s->base + (uintptr_t)b + s->esize;
}

/* May the job's elements be done in any order? Each element's result
 * depends on its own operands only, so yes unless the destination
 * overlaps a source (then order decides what a later element reads). */
static bool dma_job_splittable(const struct dma_job *job)
{
    if ((uint64_t)job->dst->total * job->dst->esize < DMA_PAR_MIN_BYTES)
        return false;
    uintptr_t dlo, dhi;
    dma_extent(job->dst, &dlo, &dhi);
    for (uint32_t s = 0; s < job->nsrc; s++) {
        uintptr_t lo, hi;
        dma_extent(job->src[s], &lo, &hi);
        if (lo < dhi && dlo < hi)
            return false;
    }
    return true;
}

/* A large job cut into parts of DMA_PAR_ELEMS elements (emu/core/par.h). */
struct dma_split {
    const struct dma_job *job; /* the whole job (its cursors are not used) */
    atomic_bool no_scratch;    /* a part found no scratch rows */
};

static void dma_split_part(void *arg, size_t part)
{
    struct dma_split *sp = arg;
    const struct dma_job *whole = sp->job;
    struct dma_stream dst = *whole->dst, src[DMA_MAX_SRC];
    struct dma_job job = *whole;
    job.dst = &dst;
    for (uint32_t s = 0; s < job.nsrc; s++) {
        src[s] = *whole->src[s];
        job.src[s] = &src[s];
    }
    struct dma_rows r = {par_scratch(0), par_scratch(1), (int64_t *)(void *)par_scratch(2),
                         (int64_t *)(void *)par_scratch(3)};
    if (r.acc == NULL || r.tmp == NULL || r.iacc == NULL || r.itmp == NULL) {
        atomic_store(&sp->no_scratch, true);
        return;
    }
    uint64_t e0 = (uint64_t)part * DMA_PAR_ELEMS, e1 = e0 + DMA_PAR_ELEMS;
    dma_job_range(&job, e0, e1 < dst.total ? e1 : dst.total, &r);
}

emu_status dma_job_run(struct isa_exec_ctx *ctx, struct dma_job *job)
{
    emu_status st = dma_job_check(ctx, job);
    if (st != EMU_OK)
        return st;
    if (!dma_job_splittable(job)) {
        struct dma_rows r = {core_scratch(ctx, 0), core_scratch(ctx, 1),
                             (int64_t *)(void *)core_scratch(ctx, 2),
                             (int64_t *)(void *)core_scratch(ctx, 3)};
        dma_job_range(job, 0, job->dst->total, &r);
        return EMU_OK;
    }
    struct dma_split sp = {.job = job};
    atomic_init(&sp.no_scratch, false);
    par_for((job->dst->total + DMA_PAR_ELEMS - 1) / DMA_PAR_ELEMS, dma_split_part, &sp);
    if (atomic_load(&sp.no_scratch))
        return core_fail(ctx, EMU_RESOURCE, "DMA: out of host memory for a helper "
                         "thread's scratch rows");
    return EMU_OK;
}

/* ---- transpose --------------------------------------------------------------- */

/* Gather the whole of s, in order, into buf. */
static void dma_gather(struct dma_stream *s, uint8_t *buf)
{
    dma_rewind(s);
    size_t es = s->esize;
    for (uint64_t done = 0; done < s->total;) {
        uint64_t n = dma_run_left(s);
        const uint8_t *p = dma_at(s);
        int64_t st = s->stride[s->ndims - 1];
        for (uint64_t i = 0; i < n; i++)
            memcpy(buf + (done + i) * es, p + (int64_t)i * st, es);
        dma_advance(s, n);
        done += n;
    }
}

emu_status dma_permute_run(struct isa_exec_ctx *ctx, struct dma_stream *dst,
                           struct dma_stream *src, uint32_t rank, const uint64_t *shape,
                           const uint32_t *perm)
{
    size_t es = src->esize;
    uint64_t sstride[DMA_MAX_DIMS], total = 1;
    for (int d = (int)rank - 1; d >= 0; d--) {
        sstride[d] = total;
        total *= shape[d];
    }
    if (dst->esize != es)
        return core_fail(ctx, EMU_EXEC_ERR, "a DMA transpose moves elements "
                         "unchanged: source elements have %u bytes, destination %u",
                         src->esize, dst->esize);
    if (src->total != total || dst->total != total)
        return core_fail(ctx, EMU_EXEC_ERR, "DMA transpose of %" PRIu64
                         " elements: source has %" PRIu64 ", destination %" PRIu64, total,
                         src->total, dst->total);
    if (total * es > (uint64_t)CORE_SCRATCH_ELEMS * sizeof(float))
        return core_fail(ctx, EMU_EXEC_ERR, "DMA transpose of %" PRIu64
                         " bytes; at most %zu bytes per transpose", total * es,
                         (size_t)CORE_SCRATCH_ELEMS * sizeof(float));
    uint8_t *buf = (uint8_t *)core_scratch(ctx, 0);
    dma_gather(src, buf);
    dma_rewind(dst);
    uint64_t o[DMA_MAX_DIMS] = {0}, at = 0; /* output coordinates, source index */
    for (uint64_t done = 0; done < total;) {
        uint64_t n = dma_run_left(dst);
        uint8_t *p = dma_at(dst);
        int64_t st = dst->stride[dst->ndims - 1];
        for (uint64_t i = 0; i < n; i++) {
            memcpy(p + (int64_t)i * st, buf + at * es, es);
            for (int d = (int)rank - 1; d >= 0; d--) { /* next output coordinate */
                at += sstride[perm[d]];
                if (++o[d] < shape[perm[d]])
                    break;
                at -= sstride[perm[d]] * shape[perm[d]];
                o[d] = 0;
            }
        }
        dma_advance(dst, n);
        done += n;
    }
    return EMU_OK;
}

emu_status dma_transpose_run(struct isa_exec_ctx *ctx, struct dma_stream *dst,
                             struct dma_stream *src, uint64_t rows, uint64_t cols)
{
    const uint64_t shape[2] = {rows, cols};
    const uint32_t perm[2] = {1, 0};
    return dma_permute_run(ctx, dst, src, 2, shape, perm);
}
