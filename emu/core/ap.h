/*
 * ap.h: access patterns bound to memory: where an operand's elements are,
 * checked against the bounds of its memory, and the row-wise fp32 load and
 * store that instruction semantics build on.
 *
 * A bound pattern is a set of rows (the partitions on SBUF/PSUM; the outer
 * partition dimension in HBM), each row a walk over up to four free
 * dimensions. Semantics work row by row: load a row into fp32 scratch,
 * compute, store it back with rounding. When a row is plain contiguous
 * fp32, ap_row_f32() hands out the memory itself, with no copy.
 */
#ifndef TRNEMU_EMU_AP_H
#define TRNEMU_EMU_AP_H

#include <stdbool.h>
#include <stdint.h>

#include "emu/core/core.h"
#include "emu/num/numerics.h"

struct ap_view {
    uint8_t *base;                 /* element 0 of row 0 */
    uint32_t rows;                 /* partitions (rows) touched */
    int64_t row_stride;            /* bytes from one row to the next */
    uint32_t ndims;                /* free dimensions, 1..4, outermost first */
    uint32_t count[ISA_MAX_DIMS];  /* elements along each dimension */
    int64_t stride[ISA_MAX_DIMS];  /* bytes between neighbours along it */
    uint64_t elems;                /* elements per row (product of counts) */
    uint32_t dtype;                /* element type (nrt_dtype_t value) */
    uint32_t esize;                /* bytes per element */
    bool flat;                     /* a row is one run with stride esize */
    uint8_t mem;                   /* enum isa_mem */
    uint32_t first_part;           /* SBUF/PSUM: first partition touched */
    struct num_round *rnd;         /* stores: the engine's stochastic stream, NULL for RNE */
};

/* Bind operand slot of the current instruction. EMU_EXEC_OOB (with the
 * cause in ctx->err) when the pattern leaves its memory or variable,
 * EMU_INVALID when the slot is empty or names an unknown variable. An
 * on-chip row fits a scratch row (CORE_SCRATCH_ELEMS); an HBM row may be
 * longer, so code that stages HBM rows in scratch works in pieces. */
emu_status ap_bind(struct isa_exec_ctx *ctx, unsigned slot, struct ap_view *v);

/* Is operand slot present in the instruction? */
bool ap_present(const struct isa_insn *insn, unsigned slot);

/* Address of row r's first element. */
static inline uint8_t *ap_row_ptr(const struct ap_view *v, uint32_t r)
{
    return v->base + (int64_t)r * v->row_stride;
}

/* Address of element i (in pattern order) of row r. */
static inline uint8_t *ap_elem_ptr(const struct ap_view *v, uint32_t r, uint64_t i)
{
    int64_t off = 0;
    for (int d = (int)v->ndims - 1; d >= 0; d--) {
        off += (int64_t)(i % v->count[d]) * v->stride[d];
        i /= v->count[d];
    }
    return ap_row_ptr(v, r) + off;
}

/* Run BODY for each innermost run of row r of view v, with run_ptr
 * (uint8_t *: its first element), run_n (size_t: its elements), run_step
 * (int64_t: bytes from one element to the next) and run_first (size_t:
 * the index of its first element in the row). The one walk over a row's
 * runs: ap.c's fp32 loads and stores and the Vector engine's integer and
 * raw-byte rows use it. */
#define AP_FOR_RUNS(v, r, BODY)                                                   \
    do {                                                                          \
        uint32_t ap_in_ = (v)->ndims - 1;                                         \
        uint32_t ap_idx_[ISA_MAX_DIMS] = {0};                                     \
        uint64_t ap_runs_ = (v)->elems / (v)->count[ap_in_];                      \
        for (uint64_t ap_k_ = 0; ap_k_ < ap_runs_; ap_k_++) {                     \
            int64_t ap_off_ = 0;                                                  \
            for (uint32_t ap_d_ = 0; ap_d_ < ap_in_; ap_d_++)                     \
                ap_off_ += (int64_t)ap_idx_[ap_d_] * (v)->stride[ap_d_];          \
            uint8_t *run_ptr = ap_row_ptr((v), (r)) + ap_off_;                    \
            size_t run_n = (v)->count[ap_in_];                                    \
            int64_t run_step = (v)->stride[ap_in_];                               \
            size_t run_first = (size_t)(ap_k_ * run_n);                           \
            BODY;                                                                 \
            for (int ap_d_ = (int)ap_in_ - 1; ap_d_ >= 0; ap_d_--) {              \
                if (++ap_idx_[ap_d_] < (v)->count[ap_d_])                         \
                    break;                                                        \
                ap_idx_[ap_d_] = 0;                                               \
            }                                                                     \
        }                                                                         \
    } while (0)

/* Row r as a writable fp32 array when it is flat fp32 memory, else NULL. */
float *ap_row_f32(const struct ap_view *v, uint32_t r);

/* Load row r (v->elems elements, flattened in pattern order) into dst. */
void ap_row_load(const struct ap_view *v, uint32_t r, float *dst);

/* Store src (v->elems floats) into row r, rounding to nearest even (or
 * stochastically, when the execution asked for it). */
void ap_row_store(const struct ap_view *v, uint32_t r, const float *src);

/* Row r as fp32: the memory itself when flat fp32 (then *direct is true),
 * else a copy loaded into scratch. */
float *ap_row_get(const struct ap_view *v, uint32_t r, float *scratch, bool *direct);

/* Finish a row obtained for writing: store scratch unless it was direct. */
void ap_row_put(const struct ap_view *v, uint32_t r, const float *row, bool direct);

/* Two views cover the same rows and elements per row (for elementwise ops). */
bool ap_same_shape(const struct ap_view *a, const struct ap_view *b);

/* May rows of dst be computed in any order from rows of src (an input of
 * the same instruction)? True when dst's rows do not overlap each other
 * and src either touches none of dst's bytes or is laid out exactly as
 * dst (each row then reads only the row it writes). */
bool ap_rows_independent(const struct ap_view *dst, const struct ap_view *src);

#endif
