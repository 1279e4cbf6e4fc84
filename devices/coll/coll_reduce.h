/*
 * coll_reduce.h: the element-wise reductions of the collectives.
 *
 * coll_fold(out, a, b) computes out[i] = a[i] (op) b[i] for n elements of
 * one dtype; out may be a or b. A collective reduces the inputs of ranks
 * 0..N-1 left to right: acc = x0, then acc = coll_fold(acc, x_r) for
 * r = 1..N-1, whatever algorithm moves the data, so every algorithm gives
 * the same bits (docs/collectives.md).
 *
 * Per step, per type:
 *  - fp32, fp32r: IEEE fp32 arithmetic (round to nearest even).
 *  - bf16, fp16, fp8_e3/e4/e5: both operands widened to fp32 (exact), the
 *    operation in fp32, the result rounded to the type (RNE; overflow gives
 *    infinity) - so a narrow float is rounded once per step.
 *  - integers (int8..int64, uint8..uint64): exact; add wraps around
 *    modulo 2^bits.
 *  - add: a + b. fma: a multiply-add with multiplier 1 (the collective
 *    instructions and nrt_op_type carry no scale), fmaf(b, 1, a), which is
 *    bit-identical to add. max, min: the larger / smaller; -0 < +0; any
 *    NaN operand gives the type's default quiet NaN.
 */
#ifndef TRNEMU_DEVICES_COLL_REDUCE_H
#define TRNEMU_DEVICES_COLL_REDUCE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/isa/isa.h"

/* Reduction operations: the values of the ISA's collective enum
 * (ISA_COLL_*, emu/isa/isa_ops.h), tied by the static_asserts below. */
enum coll_op {
    COLL_OP_ADD = 0, /* sum */
    COLL_OP_MAX = 1, /* maximum */
    COLL_OP_MIN = 2, /* minimum */
    COLL_OP_FMA = 3, /* multiply-add with multiplier 1 (= add) */
};
static_assert(COLL_OP_ADD == (int)ISA_COLL_add && COLL_OP_MAX == (int)ISA_COLL_max &&
                  COLL_OP_MIN == (int)ISA_COLL_min && COLL_OP_FMA == (int)ISA_COLL_fma,
              "enum coll_op must keep the ISA's collective reduce values");

/* Can dtype be reduced (every float and integer type)? */
bool coll_dtype_ok(uint32_t dtype);
/* Is op one of enum coll_op? */
bool coll_op_ok(uint32_t op);
/* Name of an op ("add", ...) for messages. */
const char *coll_op_name(uint32_t op);

/* out[i] = a[i] op b[i], i < n (dtype and op checked by the caller). */
void coll_fold(void *out, const void *a, const void *b, size_t n, uint32_t dtype, uint32_t op);

/* out[i] = src[0][i] op src[1][i] op ... op src[k-1][i], left to right, i < n,
 * k >= 1: the same bits as k-1 coll_folds, in one pass when the type and op
 * allow (fp32 add and fma: every input read once, out written once, no
 * accumulator going back and forth). In one pass out may be one of the src
 * (the same elements: each is read before it is written); otherwise out
 * must not overlap any src. */
void coll_fold_list(void *out, const void *const *src, uint32_t k, size_t n, uint32_t dtype,
                    uint32_t op);
/* Does coll_fold_list make one pass (so out may be the destination in
 * memory, not a buffer in cache)? */
bool coll_fold_list_one_pass(uint32_t dtype, uint32_t op);

#endif
