/*
 * dma_xfer.h: the element engine shared by the DMA instructions and the
 * NEFF DMA descriptors (internal to emu/).
 *
 * A transfer walks element streams: each side is a pattern of up to five
 * dimensions with byte strides (an instruction operand's partitions plus
 * its free dimensions, or a descriptor's byte access pattern) read in
 * order, so sides of different shapes but the same element count line up
 * element by element. A job combines up to 16 source streams into the
 * destination stream chunk by chunk:
 *   copy      dst = src (a bit copy for equal types; else src -> fp32 ->
 *             dst, round to nearest even)
 *   add       acc = (rmw ? dst : -0.0); acc = fmaf(src_i, scale_i, acc)
 *             for each source in order (so fma is add with a scale)
 *   min/max   acc = (rmw ? dst : init, or the first scaled source), then
 *             acc = min/max(acc, src_i * scale_i); any NaN gives NaN
 * Arithmetic runs in fp32 (the DMA engines compute in fp32), except
 * min/max over one integer type throughout, which is exact. A NaN result
 * is stored as the default quiet NaN.
 */
#ifndef TRNEMU_EMU_DMA_XFER_H
#define TRNEMU_EMU_DMA_XFER_H

#include <stdbool.h>
#include <stdint.h>

#include "emu/core/ap.h"
#include "emu/neff/neff_model.h"

#define DMA_MAX_DIMS 5   /* rows plus four free dimensions */
#define DMA_MAX_SRC 16   /* sources of one job (CCE descriptors) */

/* One side of a transfer, with its read/write cursor. */
struct dma_stream {
    uint8_t *base;                 /* address of element 0 */
    uint32_t ndims;                /* dimensions in use, outermost first (1..5) */
    uint64_t count[DMA_MAX_DIMS];  /* elements along each dimension */
    int64_t stride[DMA_MAX_DIMS];  /* bytes between neighbours along it */
    uint32_t dtype;                /* element type (nrt_dtype_t value) */
    uint32_t esize;                /* bytes per element */
    uint64_t total;                /* elements in the whole stream */
    uint64_t idx[DMA_MAX_DIMS];    /* cursor: position along each dimension */
};

/* What a job does with each element. */
enum dma_kind {
    DMA_K_COPY = 0,  /* dst = src */
    DMA_K_ADD = 1,   /* sum of scaled operands */
    DMA_K_MIN = 2,   /* smallest operand */
    DMA_K_MAX = 3,   /* largest operand */
};

/* One transfer: dst <- kind(sources). */
struct dma_job {
    enum dma_kind kind;                /* the element operation */
    bool rmw;                          /* the destination's old value is operand 0 */
    bool has_init;                     /* min/max: start from init */
    double init;                       /* min/max starting value */
    uint32_t nsrc;                     /* sources in src (1..DMA_MAX_SRC) */
    struct dma_stream *src[DMA_MAX_SRC]; /* source streams */
    float scale[DMA_MAX_SRC];          /* multiplier of each source (1: none) */
    struct dma_stream *dst;            /* destination stream */
};

/* Rows [row, row + nrows) of a bound view as a stream. */
void dma_stream_from_view(struct dma_stream *s, const struct ap_view *v, uint32_t row,
                          uint32_t nrows);

/* A descriptor access pattern over memory mem (its variable's bytes) as a
 * stream of dtype elements of esize bytes (esize 0: the dtype's size).
 * EMU_EXEC_ERR when the innermost dimension does not hold
 * whole contiguous elements. */
emu_status dma_stream_from_desc(struct isa_exec_ctx *ctx, struct dma_stream *s,
                                const struct neff_dma_ap *ap, uint8_t *mem, uint32_t esize);

/* Run a job. Every source must hold as many elements as the destination
 * (else EMU_EXEC_ERR). */
emu_status dma_job_run(struct isa_exec_ctx *ctx, struct dma_job *job);

/* Bit-exact 2-D transpose: src, read in order, is a rows x cols matrix;
 * dst receives its cols x rows transpose in order. Both sides must have
 * equal element sizes and rows * cols elements. */
emu_status dma_transpose_run(struct isa_exec_ctx *ctx, struct dma_stream *dst,
                             struct dma_stream *src, uint64_t rows, uint64_t cols);

/* Bit-exact permutation: src, read in order, is a row-major tensor of
 * the given shape (rank <= DMA_MAX_DIMS); dst receives, in order, the
 * tensor whose axis d is source axis perm[d]. */
emu_status dma_permute_run(struct isa_exec_ctx *ctx, struct dma_stream *dst,
                           struct dma_stream *src, uint32_t rank, const uint64_t *shape,
                           const uint32_t *perm);

/* Equal types for a bit copy (fp32 and fp32r are one format). */
bool dma_same_type(uint32_t a, uint32_t b);

/* Integer dtypes: element at p as int64 (uint64 keeps its bits). */
bool dma_dtype_is_int(uint32_t dtype);
int64_t dma_int_get(const uint8_t *p, uint32_t dtype);

#endif
