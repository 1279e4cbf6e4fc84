/*
 * dve.h: building blocks of the Vector/GpSimd elementwise, copy and reduce
 * instructions (exec_dve.c), private to those files.
 *
 * dve_alu.c holds the ALU operators of the ISA (enum ALU) as whole-array
 * kernels, in fp32 and in exact 64-bit integer arithmetic: the switch on
 * the operator happens once per call, every element loop is one operator
 * in fixed blocks that GCC's -O2 vectoriser turns into SIMD code. It also
 * holds the free-axis reductions.
 *
 * dve_row.c moves rows that the fp32 helpers of ap.h do not cover: integer
 * rows as int64, raw element bytes (bit-exact copies), single scalar
 * operands. The accumulator registers are act_acc.h's, shared with the
 * other engines' reducing instructions.
 *
 * Unary operators (bypass, abs, rsqrt, square, relu, invert, logical_not)
 * act on the "stream" argument of a kernel (the tensor flowing through the
 * instruction) and ignore the other operand and any reverse flag.
 */
#ifndef TRNEMU_EMU_DVE_H
#define TRNEMU_EMU_DVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/ap.h"
#include "emu/core/core.h"

/* Elements per chunk of a multi-step row computation (fits in L1). */
#define DVE_CHUNK 256u
/* Interleaved fp32 partial results of the add/multiply/max/min reductions. */
#define DVE_LANES 16u

/* ---- operator properties ------------------------------------------------ */
#define DVE_OP_F32 (1u << 0)    /* has fp32 semantics */
#define DVE_OP_INT (1u << 1)    /* runs exactly in integer arithmetic */
#define DVE_OP_BITVEC (1u << 2) /* bit-pattern operator: integer dtypes only */
#define DVE_OP_UNARY (1u << 3)  /* ignores its second operand */
#define DVE_OP_REDUCE (1u << 4) /* valid as a reduction operator */

/* DVE_OP_* bits of each ALU operator, by value (0: not an operator). */
extern const uint8_t dve_op_table[ISA_ENUM_SPACE];

/* DVE_OP_* bits of ALU operator op (0 when op is not an ALU operator). */
static inline unsigned dve_op_props(unsigned op)
{
    return op < ISA_ENUM_SPACE ? dve_op_table[op] : 0u;
}
/* Its name, for messages ("op 99" style text when unknown). */
const char *dve_op_name(unsigned op);
/* The error (core_fail) for an op that lacks a DVE_OP_* bit of need. */
emu_status dve_op_fail(struct isa_exec_ctx *ctx, const char *field, unsigned op, unsigned need);

/* EMU_OK when op is an ALU operator with every DVE_OP_* bit of need, else
 * the error naming the instruction's field. */
static inline emu_status dve_op_check(struct isa_exec_ctx *ctx, const char *field, unsigned op,
                                      unsigned need)
{
    unsigned p = dve_op_props(op);
    if (p != 0 && (p & need) == need)
        return EMU_OK;
    return dve_op_fail(ctx, field, op, need);
}

/* ---- fp32 kernels ----------------------------------------------------------
 * n elements; out may be the same array as an input (not a partial
 * overlap). rev puts the other operand on the left of op. */
/* out[i] = s[i] op o[i]  (rev: o[i] op s[i]) */
void dve_f32_vv(unsigned op, float *out, const float *s, const float *o, bool rev, size_t n);
/* out[i] = s[i] op k  (rev: k op s[i]) */
void dve_f32_vk(unsigned op, float *out, const float *s, float k, bool rev, size_t n);
/* out[i] = (s[i] op[0] k0) op[1] k1 in one pass (rev[j]: k on the left of
 * op[j]) when both operators are among add, subtract, multiply, divide,
 * max and min; false (nothing done) otherwise. */
bool dve_f32_vk2(const unsigned op[2], const bool rev[2], float k0, float k1, float *out,
                 const float *s, size_t n);
/* One element: stream op other (rev: other op stream). */
float dve_f32_one(unsigned op, float stream, float other, bool rev);

/* ---- integer kernels -------------------------------------------------------
 * Values are int64 (sign- or zero-extended from their dtype); arithmetic
 * wraps modulo 2^64. bits is the width of the destination dtype: the
 * logical and arithmetic right shifts see their left operand as a number
 * of that many bits. */
void dve_i64_vv(unsigned op, int64_t *out, const int64_t *s, const int64_t *o, bool rev,
                unsigned bits, size_t n);
void dve_i64_vk(unsigned op, int64_t *out, const int64_t *s, int64_t k, bool rev,
                unsigned bits, size_t n);

/* ---- reductions ------------------------------------------------------------ */
/* Reduce n >= 1 fp32 values with op (a DVE_OP_REDUCE operator): add,
 * multiply, max, min, abs_max, abs_min and average in DVE_LANES
 * interleaved partial results combined pairwise (dve_f32_reduce_lanes),
 * the others as a left fold from x[0]. */
float dve_f32_reduce(unsigned op, const float *x, size_t n);
/* The largest (want_max) or smallest of x[0..n) into *out when that
 * answer cannot depend on the order of comparison: true only when no
 * element is a NaN and the answer is not a zero (then the lane order of
 * dve_f32_reduce decides). Fast (wide registers) on AVX-512 hosts for
 * n >= 64; elsewhere it declines. */
bool dve_f32_extreme(const float *x, size_t n, bool want_max, float *out);
/* Running op in place: x[i] = reg = x[i] op reg for i = 0..n-1 (op a
 * binary fp32 operator); returns the final reg. */
float dve_f32_scan(unsigned op, float *x, float reg, size_t n);
/* The same over integers: always a left fold from x[0]. */
int64_t dve_i64_reduce(unsigned op, const int64_t *x, size_t n, unsigned bits);
/* The starting value of an accumulator for op: 0 (add, subtract), 1
 * (multiply), -inf (max), +inf (min); false when op has none. */
bool dve_f32_identity(unsigned op, float *out);

/* ---- dtypes and rows (dve_row.c) ------------------------------------------- */
/* The integer dtypes, int8..int64 and uint8..uint64, as a bit set. */
#define DVE_INT_DTYPES                                                            \
    ((1u << ISA_DT_I8) | (1u << ISA_DT_U8) | (1u << ISA_DT_I16) | (1u << ISA_DT_U16) | \
     (1u << ISA_DT_I32) | (1u << ISA_DT_U32) | (1u << ISA_DT_I64) | (1u << ISA_DT_U64))

static inline bool dve_dtype_is_int(uint32_t dtype)
{
    return dtype < 32 && ((DVE_INT_DTYPES >> dtype) & 1u);
}
/* Bits of an element of dtype. */
unsigned dve_dtype_bits(uint32_t dtype);
/* Two adjacent scratch slots (from slot, an even number) as one row of
 * CORE_SCRATCH_ELEMS int64 values or 8-byte elements. */
static inline int64_t *dve_wide(struct isa_exec_ctx *ctx, unsigned slot)
{
    return (int64_t *)(void *)core_scratch(ctx, slot);
}

/* Are all n views of integer dtypes? */
static inline bool dve_all_int(const struct ap_view *v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (!dve_dtype_is_int(v[i].dtype))
            return false;
    return true;
}

/* Bind the operands in slots[0..n) into v[0..n). */
static inline emu_status dve_bind(struct isa_exec_ctx *ctx, const unsigned *slots, unsigned n,
                                  struct ap_view *v)
{
    for (unsigned i = 0; i < n; i++) {
        emu_status st = ap_bind(ctx, slots[i], &v[i]);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}
/* Does the fp32 value hold an integer that int64 represents? */
bool dve_f32_is_int(float f);

/* Row r of v as int64 values (integer dtypes: sign/zero-extended; float
 * dtypes: converted through fp32 with RNE and saturation). */
void dve_row_load_i64(const struct ap_view *v, uint32_t r, int64_t *dst);
/* Store int64 values into row r: integer dtypes keep the low bits (wrap),
 * float dtypes round the value RNE. */
void dve_row_store_i64(const struct ap_view *v, uint32_t r, const int64_t *src);
/* Copy row r's element bytes to/from a packed array (v->esize each). */
void dve_row_gather(const struct ap_view *v, uint32_t r, void *dst);
void dve_row_scatter(const struct ap_view *v, uint32_t r, const void *src);

/* Row r of input v as fp32 for an output row `out` of n floats (NULL when
 * the output is not written in place): the memory itself when v is flat
 * fp32 and does not partly overlap out, else a copy loaded into the
 * engine's scratch row `slot`. */
const float *dve_in_f32_load(struct isa_exec_ctx *ctx, unsigned slot, const struct ap_view *v,
                             uint32_t r);

static inline const float *dve_in_f32(struct isa_exec_ctx *ctx, unsigned slot,
                                      const struct ap_view *v, uint32_t r, const float *out,
                                      size_t n)
{
    const float *p = (const float *)(const void *)ap_row_ptr(v, r);
    bool f32 = v->dtype == ISA_DT_F32 || v->dtype == ISA_DT_F32R;
    if (v->flat && f32 && (out == NULL || p == out || p + n <= out || out + n <= p))
        return p;
    return dve_in_f32_load(ctx, slot, v, r);
}

/* dve_in_f32 with the copy, when one is needed, loaded into buf. */
static inline const float *dve_in_f32_buf(const struct ap_view *v, uint32_t r, const float *out,
                                          size_t n, float *buf)
{
    const float *p = (const float *)(const void *)ap_row_ptr(v, r);
    bool f32 = v->dtype == ISA_DT_F32 || v->dtype == ISA_DT_F32R;
    if (v->flat && f32 && (out == NULL || p == out || p + n <= out || out + n <= p))
        return p;
    ap_row_load(v, r, buf);
    return buf;
}

/* ---- scalar operands --------------------------------------------------------- */
/* An operand that is either a [P, 1] access pattern or an fp32 immediate. */
struct dve_scalar {
    struct ap_view v;  /* the pattern, when ap */
    bool ap;           /* read from memory (else imm) */
    float imm;         /* the immediate */
};

/* Bind the APF operand (slot, fslot) of the current instruction for an
 * instruction of `rows` partitions. Fails (EMU_EXEC_ERR)
 * unless a pattern has `rows` rows of one element. */
emu_status dve_scalar_bind_ap(struct isa_exec_ctx *ctx, unsigned slot, uint32_t rows,
                              const char *what, struct dve_scalar *s);

static inline emu_status dve_scalar_bind(struct isa_exec_ctx *ctx, unsigned slot,
                                         unsigned fslot, uint32_t rows, const char *what,
                                         struct dve_scalar *s)
{
    s->imm = ctx->insn->fimm[fslot];
    s->ap = ctx->insn->ap[slot].mem != ISA_MEM_NONE;
    return s->ap ? dve_scalar_bind_ap(ctx, slot, rows, what, s) : EMU_OK;
}
/* Its value for row r. */
float dve_scalar_f32(const struct dve_scalar *s, uint32_t r);
int64_t dve_scalar_i64(const struct dve_scalar *s, uint32_t r);
/* Can the integer path use it exactly (integer dtype, or integral immediate)? */
bool dve_scalar_is_int(const struct dve_scalar *s);

#endif
