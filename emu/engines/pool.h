/*
 * pool.h: building blocks of the selection, gather, sort and statistics
 * instructions (exec_pool.c), private to exec_pool.c and pool_*.c.
 *
 * pool_row.c moves element ranges of a row as raw bytes (whole rows, raw
 * or as int64, are dve_row.c's, shared with the Vector engine); it binds
 * and checks operands (shapes, dtypes, [P, 1] scalars) with one clear
 * message each, and holds the ranking order that every sort-like
 * instruction shares.
 */
#ifndef TRNEMU_EMU_POOL_H
#define TRNEMU_EMU_POOL_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/ap.h"
#include "emu/core/core.h"
#include "emu/num/num_minmax.h"

#define POOL_ERR EMU_EXEC_ERR

/* A set of dtypes as bits (1u << dtype). */
#define POOL_DT(d) (1u << (d))
#define POOL_DT_INTS                                                                       \
    (POOL_DT(ISA_DT_U64) | POOL_DT(ISA_DT_I8) | POOL_DT(ISA_DT_U8) | POOL_DT(ISA_DT_I16) | \
     POOL_DT(ISA_DT_U16) | POOL_DT(ISA_DT_I32) | POOL_DT(ISA_DT_U32) | POOL_DT(ISA_DT_I64))
#define POOL_DT_FLOATS                                                                      \
    (POOL_DT(ISA_DT_F32) | POOL_DT(ISA_DT_F32R) | POOL_DT(ISA_DT_BF16) | POOL_DT(ISA_DT_F16) | \
     POOL_DT(ISA_DT_FP8E3) | POOL_DT(ISA_DT_FP8E4) | POOL_DT(ISA_DT_FP8E5))

/* Does a rank above b? Larger values rank higher and NaN ranks above every
 * number (ties, including -0 and +0, are left to the caller). */
static inline bool pool_f32_above(float a, float b)
{
    return isnan(a) ? !isnan(b) : a > b;
}

/* ---- rows --------------------------------------------------------------- */
/* Whole rows as bytes or int64 values are dve_row_gather/scatter and
 * dve_row_load_i64/store_i64 (emu/engines/dve.h), shared with the Vector
 * engine. */
/* Copy the elements [first, first + n) of row r's bytes to / from a packed
 * array (v->esize each). */
void pool_range_gather(const struct ap_view *v, uint32_t r, uint64_t first, uint64_t n,
                       void *dst);
void pool_range_scatter(const struct ap_view *v, uint32_t r, uint64_t first, uint64_t n,
                        const void *src);

/* ---- operands ------------------------------------------------------------ */
/* Bind operand slot into v; an on-chip operand only (HBM is an error: its
 * rows may exceed the scratch rows these instructions stage through). */
emu_status pool_bind1(struct isa_exec_ctx *ctx, unsigned slot, struct ap_view *v);
/* Bind the on-chip operands in slots[0..n) into v[0..n). */
emu_status pool_bind(struct isa_exec_ctx *ctx, const unsigned *slots, unsigned n,
                     struct ap_view *v);
/* v (called name) must be rows x elems. */
emu_status pool_need_shape(struct isa_exec_ctx *ctx, const char *name, const struct ap_view *v,
                           uint32_t rows, uint64_t elems);
/* v's dtype must be in the set `dtypes` (POOL_DT bits), described by what. */
emu_status pool_need_dtype(struct isa_exec_ctx *ctx, const char *name, const struct ap_view *v,
                           uint32_t dtypes, const char *what);
/* v's rows must be a positive multiple of `group`. */
emu_status pool_need_groups(struct isa_exec_ctx *ctx, const char *name, const struct ap_view *v,
                            uint32_t group);
/* The core must be NeuronCore-v`gen` or newer for op. */
emu_status pool_need_gen(struct isa_exec_ctx *ctx, const char *op, uint32_t gen);

/* An operand that is either a [P, 1] access pattern or an fp32 immediate. */
struct pool_scalar {
    struct ap_view v;  /* the pattern, when ap */
    bool ap;           /* read from memory (else imm) */
    float imm;         /* the immediate */
};

/* Bind the APF operand (slot, fslot) of the current instruction for an
 * instruction of `rows` partitions: a pattern must be [rows, 1]. */
emu_status pool_scalar_bind(struct isa_exec_ctx *ctx, unsigned slot, unsigned fslot,
                            uint32_t rows, const char *what, struct pool_scalar *s);
/* Its value for row r. */
float pool_scalar_f32(const struct pool_scalar *s, uint32_t r);

/* ---- comparisons and the max accumulator ----------------------------------- */
/* Is op one of the ALU comparisons (equal .. less_equal)? */
bool pool_is_cmp(unsigned op);
/* a <op> b for an ALU comparison op (false for anything else). */
bool pool_cmp_f32(unsigned op, float a, float b);
bool pool_cmp_i64(unsigned op, int64_t a, int64_t b);
/* max that spreads NaN from either side as the default NaN: GpSimd's
 * rules of the one definition (emu/num/num_minmax.h). */
static inline float pool_fmax(float a, float b)
{
    return num_fmax(a, b, NUM_NAN_DEFAULT, NUM_ZERO_SECOND);
}

/* ---- row kernels (pool_kern.c) --------------------------------------------- */
/* bn_stats of one row of n fp32 values: count, mean and mean-centred sum
 * of squares (variance x count) of the even-indexed elements, then of the
 * odd-indexed ones. */
void pool_bn_stats_row(const float *x, size_t n, float out[6]);
/* bn_aggr of n / 3 (count, mean, variance x count) triples: mean, variance. */
void pool_bn_aggr_row(const float *x, size_t n, float out[2]);
/* The 8 highest-ranking of n >= 8 values, in descending order. */
void pool_top8(const float *x, size_t n, float top[8]);
/* Pair each of the 8 vals with a distinct position of data that holds an
 * equal value (fp32 ==): data is scanned in order and each position goes
 * to the first still-unmatched equal val, taking vals from slot 0 up
 * (from slot 7 down when desc). idx[i] is the position, or -1. */
void pool_match8(const float *data, size_t n, const float vals[8], bool desc, int64_t idx[8]);

/* A value and its index, for ranking. */
struct pool_rank {
    float v;        /* the value as fp32 */
    uint32_t i;     /* its index */
    uint16_t bits;  /* its bf16 encoding (topk) */
};
/* Sort n entries in rank order: higher values first (NaN highest), equal
 * values by ascending index. */
void pool_rank_sort(struct pool_rank *r, size_t n);

#endif
