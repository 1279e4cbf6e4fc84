/*
 * exec_pool.c: semantics of the selection, gather, sort and statistics
 * instructions, after the NKI ISA reference: bn_stats, bn_aggr, max8,
 * nc_find_index8, nc_match_replace8, select_reduce, range_select,
 * affine_select, local_gather, nc_n_gather, nc_stream_shuffle,
 * sequence_bounds, nonzero_with_count and topk, and the GpSimd-only
 * iota and tensor_partition_reduce (quantize_mx is in exec_mx.c).
 * docs/isa.md has the table of choices where the reference is silent.
 *
 * Rows are partitions, their free elements flattened in pattern order.
 * Values are compared and computed in fp32 and stored rounded to nearest
 * even, except where an instruction moves data (gathers, shuffles, a
 * select whose input and output types match): those copy element bytes.
 * Indices and counts are exact integers. Each row reads its inputs before
 * it writes its outputs; instructions that move data between partitions
 * (nc_stream_shuffle, local_gather, topk) stage what they read first.
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "emu/engines/act_acc.h"
#include "emu/num/numerics.h"
#include "emu/engines/dve.h"
#include "emu/engines/pool.h"
#include "emu/isa/isa_args.h"

#define POOL_GROUP 16u          /* partitions per GpSimd core */
#define POOL_QUADRANT 32u       /* partitions per shuffle quadrant */
#define POOL_BN_FMAX 512u       /* bn_stats: elements per partition at most */
#define POOL_MAX8_MIN 8u        /* max8 / nc_find_index8: elements per partition */
#define POOL_MAX8_MAX 16384u
#define POOL_MASK_KEEP 255u     /* nc_stream_shuffle: leave the partition alone */
#define POOL_ALL_DT (POOL_DT_INTS | POOL_DT_FLOATS)
#define POOL_IDX_DT (POOL_DT(ISA_DT_U16) | POOL_DT(ISA_DT_U32))

/* Scratch slot as raw bytes. */
static uint8_t *pool_bytes(struct isa_exec_ctx *ctx, unsigned slot)
{
    return (uint8_t *)core_scratch(ctx, slot);
}

/* The physical partition of row r of operand slot (accumulators are per partition). */
static uint32_t pool_part(const struct isa_insn *insn, unsigned slot, uint32_t r)
{
    const struct isa_ap *ap = &insn->ap[slot];
    return (uint32_t)(ap->start_part + (int64_t)r * ap->part_step) % ISA_NUM_PARTITIONS;
}

static emu_status pool_same_dtype(struct isa_exec_ctx *ctx, const char *a,
                                  const struct ap_view *va, const char *b,
                                  const struct ap_view *vb)
{
    if (va->dtype == vb->dtype)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s (%s) must have the dtype of %s (%s)", a,
                     isa_dtype_name(va->dtype), b, isa_dtype_name(vb->dtype));
}

/* ---- batch-norm statistics ------------------------------------------------------- */

/* Per partition: count, mean and variance x count of the even-indexed
 * elements of data, then of the odd-indexed ones (6 values). */
emu_status isa_exec_bn_stats(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(bn_stats, dst), ISA_AP_SLOT(bn_stats, data)};
    struct ap_view v[2];
    (void)insn;
    emu_status st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, 6);
    if (st == EMU_OK && v[1].elems > POOL_BN_FMAX)
        st = core_fail(ctx, POOL_ERR, "bn_stats reads at most %u elements per partition; data "
                       "has %llu", POOL_BN_FMAX, (unsigned long long)v[1].elems);
    if (st != EMU_OK)
        return st;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        bool direct;
        float out[6];
        const float *x = ap_row_get(&v[1], r, core_scratch(ctx, 0), &direct);
        pool_bn_stats_row(x, v[1].elems, out);
        ap_row_store(&v[0], r, out);
    }
    return EMU_OK;
}

/* Per partition: the mean and variance of everything the (count, mean,
 * variance x count) triples of data describe. */
emu_status isa_exec_bn_aggr(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(bn_aggr, dst), ISA_AP_SLOT(bn_aggr, data)};
    struct ap_view v[2];
    (void)insn;
    emu_status st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, 2);
    if (st == EMU_OK && v[1].elems % 3 != 0)
        st = core_fail(ctx, POOL_ERR, "bn_aggr reads (count, mean, variance x count) triples; "
                       "data has %llu elements per partition", (unsigned long long)v[1].elems);
    if (st != EMU_OK)
        return st;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        bool direct;
        float out[2];
        const float *x = ap_row_get(&v[1], r, core_scratch(ctx, 0), &direct);
        pool_bn_aggr_row(x, v[1].elems, out);
        ap_row_store(&v[0], r, out);
    }
    return EMU_OK;
}

/* ---- top 8, find and replace ----------------------------------------------------------- */

/* data must hold 8..16384 elements per partition. */
static emu_status pool_need_8_to_16k(struct isa_exec_ctx *ctx, const char *name,
                                     const struct ap_view *v)
{
    if (v->elems >= POOL_MAX8_MIN && v->elems <= POOL_MAX8_MAX)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s has %llu elements per partition; it needs %u to %u",
                     name, (unsigned long long)v->elems, POOL_MAX8_MIN, POOL_MAX8_MAX);
}

/* dst[p] = the 8 largest values of src[p], in descending order. */
emu_status isa_exec_max8(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(max8, dst), ISA_AP_SLOT(max8, src)};
    struct ap_view v[2];
    (void)insn;
    emu_status st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, 8);
    if (st == EMU_OK)
        st = pool_need_8_to_16k(ctx, "src", &v[1]);
    if (st != EMU_OK)
        return st;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        bool direct;
        float top[8];
        const float *x = ap_row_get(&v[1], r, core_scratch(ctx, 0), &direct);
        pool_top8(x, v[1].elems, top);
        ap_row_store(&v[0], r, top);
    }
    return EMU_OK;
}

/* The common operands of nc_find_index8 and nc_match_replace8: dst, data
 * and vals ([P, 8]). */
static emu_status pool_bind_match(struct isa_exec_ctx *ctx, struct ap_view v[3])
{
    static const unsigned slots[3] = {ISA_AP_SLOT(nc_find_index8, dst),
                                      ISA_AP_SLOT(nc_find_index8, data),
                                      ISA_AP_SLOT(nc_find_index8, vals)};
    emu_status st = pool_bind(ctx, slots, 3, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "vals", &v[2], v[1].rows, 8);
    return st;
}

/* dst[p][i] = index of the first occurrence of vals[p][i] in data[p]
 * (duplicates in vals take successive occurrences), all ones when absent. */
emu_status isa_exec_nc_find_index8(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view v[3];
    (void)insn;
    emu_status st = pool_bind_match(ctx, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, 8);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "dst", &v[0], POOL_IDX_DT, "uint16 or uint32");
    if (st == EMU_OK)
        st = pool_need_8_to_16k(ctx, "data", &v[1]);
    if (st != EMU_OK)
        return st;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        bool direct;
        float vals[8];
        int64_t idx[8];
        ap_row_load(&v[2], r, vals);
        const float *x = ap_row_get(&v[1], r, core_scratch(ctx, 0), &direct);
        pool_match8(x, v[1].elems, vals, false, idx);
        dve_row_store_i64(&v[0], r, idx);
    }
    return EMU_OK;
}

/* dst = data with the first occurrence of each vals[p][i] replaced by imm
 * (vals taken from slot 7 down); dst_idx (optional) gets the positions. */
emu_status isa_exec_nc_match_replace8(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view v[3], vi;
    bool has_idx = ap_present(insn, ISA_AP_SLOT(nc_match_replace8, dst_idx));
    emu_status st = pool_bind_match(ctx, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, v[1].elems);
    if (st == EMU_OK && has_idx)
        st = pool_bind1(ctx, ISA_AP_SLOT(nc_match_replace8, dst_idx), &vi);
    if (st == EMU_OK && has_idx)
        st = pool_need_shape(ctx, "dst_idx", &vi, v[1].rows, 8);
    if (st == EMU_OK && has_idx)
        st = pool_need_dtype(ctx, "dst_idx", &vi, POOL_IDX_DT, "uint16 or uint32");
    if (st != EMU_OK)
        return st;
    float *w = core_scratch(ctx, 0);
    for (uint32_t r = 0; r < v[0].rows; r++) {
        float vals[8];
        int64_t idx[8];
        ap_row_load(&v[2], r, vals);
        ap_row_load(&v[1], r, w);
        pool_match8(w, v[1].elems, vals, true, idx);
        for (int i = 0; i < 8; i++)
            if (idx[i] >= 0)
                w[idx[i]] = ISA_ARG_F32(insn, nc_match_replace8, imm);
        ap_row_store(&v[0], r, w);
        if (has_idx)
            dve_row_store_i64(&vi, r, idx);
    }
    return EMU_OK;
}

/* ---- selects with a max accumulator ----------------------------------------------------- */

/* reduce_op must be max; reduce_cmd idle, reset, reduce or reset_reduce. */
static emu_status pool_acc_check(struct isa_exec_ctx *ctx, unsigned cmd, unsigned op)
{
    if (op != ISA_ALU_max) {
        const char *name = isa_enum_name(ISA_ET_ALU, op);
        return core_fail(ctx, POOL_ERR, "reduce_op must be max; it is %s (%u)",
                         name ? name : "not an ALU operator", op);
    }
    if (cmd == ISA_RCMD_load_reduce || isa_enum_name(ISA_ET_RCMD, cmd) == NULL)
        return core_fail(ctx, POOL_ERR, "reduce_cmd must be idle, reset, reduce or "
                         "reset_reduce (load_reduce needs a starting value this op has not)");
    return EMU_OK;
}

/* Apply cmd to a partition's max accumulator with this row's max; returns
 * what reduce_res receives: the accumulator, or the row's own max (idle). */
static float pool_acc_max(float *acc, unsigned cmd, float rowmax)
{
    switch (cmd) {
    case ISA_RCMD_reset: *acc = -INFINITY; return *acc;
    case ISA_RCMD_reduce: *acc = pool_fmax(*acc, rowmax); return *acc;
    case ISA_RCMD_reset_reduce: *acc = rowmax; return *acc;
    default: return rowmax;
    }
}

/* The optional [P, 1] reduce_res in slot. */
static emu_status pool_bind_res(struct isa_exec_ctx *ctx, unsigned slot, uint32_t rows,
                                struct ap_view *res, bool *has)
{
    *has = ap_present(ctx->insn, slot);
    if (!*has)
        return EMU_OK;
    emu_status st = pool_bind1(ctx, slot, res);
    return st != EMU_OK ? st : pool_need_shape(ctx, "reduce_res", res, rows, 1);
}

/* The operands of select_reduce. */
struct pool_sel {
    struct ap_view v[3];     /* dst, predicate, on_true */
    struct pool_scalar f;    /* on_false */
    struct ap_view res;      /* reduce_res, when has_res */
    bool has_res;            /* reduce_res present */
};

static emu_status pool_sel_bind(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                struct pool_sel *s)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(select_reduce, dst),
                                      ISA_AP_SLOT(select_reduce, predicate),
                                      ISA_AP_SLOT(select_reduce, on_true)};
    static const uint32_t pred_dt = POOL_DT(ISA_DT_I8) | POOL_DT(ISA_DT_U8) |
                                    POOL_DT(ISA_DT_I16) | POOL_DT(ISA_DT_U16);
    static const uint32_t true_dt = POOL_ALL_DT & ~(POOL_DT(ISA_DT_F32R) | POOL_DT(ISA_DT_I32) |
                                                    POOL_DT(ISA_DT_U32));
    emu_status st = pool_bind(ctx, slots, 3, s->v);
    uint32_t rows = s->v[0].rows;
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "predicate", &s->v[1], rows, s->v[0].elems);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "on_true", &s->v[2], rows, s->v[0].elems);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "predicate", &s->v[1], pred_dt, "int8, uint8, int16 or uint16");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "on_true", &s->v[2], true_dt, "neither fp32r, int32 nor uint32");
    if (st == EMU_OK && s->v[1].mem == ISA_MEM_PSUM && s->v[2].mem == ISA_MEM_PSUM)
        st = core_fail(ctx, POOL_ERR, "predicate and on_true cannot both be in PSUM");
    if (st == EMU_OK)
        st = pool_acc_check(ctx, ISA_ARG_ENUM(insn, select_reduce, reduce_cmd),
                            ISA_ARG_ENUM(insn, select_reduce, reduce_op));
    if (st == EMU_OK)
        st = pool_scalar_bind(ctx, ISA_AP_SLOT(select_reduce, on_false),
                              ISA_F32_SLOT(select_reduce, on_false), rows, "on_false", &s->f);
    if (st == EMU_OK)
        st = pool_bind_res(ctx, ISA_AP_SLOT(select_reduce, reduce_res), rows, &s->res,
                           &s->has_res);
    if (st == EMU_OK && s->has_res)
        st = pool_need_dtype(ctx, "reduce_res", &s->res, POOL_DT_FLOATS, "a float dtype");
    return st;
}

/* dst = predicate ? on_true : on_false (reverse_pred inverts), the row's
 * max reduced into the Vector Engine accumulator as reduce_cmd says. */
emu_status isa_exec_select_reduce(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct pool_sel s;
    unsigned cmd = ISA_ARG_ENUM(insn, select_reduce, reduce_cmd);
    bool rev = ISA_ARG_FLAG(insn, select_reduce, reverse_pred);
    emu_status st = pool_sel_bind(ctx, insn, &s);
    if (st != EMU_OK)
        return st;
    float *acc = act_acc_regs(ctx), *w = core_scratch(ctx, 2);
    int64_t *pred = dve_wide(ctx, 0);
    for (uint32_t r = 0; r < s.v[0].rows; r++) {
        float k = pool_scalar_f32(&s.f, r), m = -INFINITY;
        dve_row_load_i64(&s.v[1], r, pred);
        ap_row_load(&s.v[2], r, w);
        for (uint64_t i = 0; i < s.v[0].elems; i++) {
            if ((pred[i] != 0) == rev)
                w[i] = k;
            m = pool_fmax(m, w[i]);
        }
        ap_row_store(&s.v[0], r, w);
        float out = pool_acc_max(&acc[pool_part(insn, ISA_AP_SLOT(select_reduce, dst), r)], cmd, m);
        if (s.has_res)
            ap_row_store(&s.res, r, &out);
    }
    return EMU_OK;
}

/* The comparisons range_select takes. */
static emu_status pool_range_op_check(struct isa_exec_ctx *ctx, const char *field, unsigned op)
{
    if (pool_is_cmp(op) && op != ISA_ALU_not_equal)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s (%u) must be equal, less, less_equal, greater or "
                     "greater_equal", field, op);
}

/* The operands of range_select. */
struct pool_rsel {
    struct ap_view v[4];     /* dst, on_true, bound0, bound1 */
    struct ap_view res;      /* reduce_res, when has_res */
    bool has_res;            /* reduce_res present */
};

static emu_status pool_rsel_bind(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                 struct pool_rsel *s)
{
    static const unsigned slots[4] = {ISA_AP_SLOT(range_select, dst),
                                      ISA_AP_SLOT(range_select, on_true),
                                      ISA_AP_SLOT(range_select, bound0),
                                      ISA_AP_SLOT(range_select, bound1)};
    static const uint32_t f32 = POOL_DT(ISA_DT_F32) | POOL_DT(ISA_DT_F32R);
    emu_status st = pool_need_gen(ctx, "range_select", 3);
    if (st == EMU_OK)
        st = pool_bind(ctx, slots, 4, s->v);
    uint32_t rows = s->v[0].rows;
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "on_true", &s->v[1], rows, s->v[0].elems);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "bound0", &s->v[2], rows, 1);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "bound1", &s->v[3], rows, 1);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "on_true", &s->v[1], POOL_DT_FLOATS, "a float dtype");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "bound0", &s->v[2], f32, "fp32");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "bound1", &s->v[3], f32, "fp32");
    if (st == EMU_OK)
        st = pool_range_op_check(ctx, "comp_op0", ISA_ARG_ENUM(insn, range_select, comp_op0));
    if (st == EMU_OK)
        st = pool_range_op_check(ctx, "comp_op1", ISA_ARG_ENUM(insn, range_select, comp_op1));
    if (st == EMU_OK)
        st = pool_acc_check(ctx, ISA_ARG_ENUM(insn, range_select, reduce_cmd),
                            ISA_ARG_ENUM(insn, range_select, reduce_op));
    if (st == EMU_OK)
        st = pool_bind_res(ctx, ISA_AP_SLOT(range_select, reduce_res), rows, &s->res,
                           &s->has_res);
    return st;
}

/* Element j is kept when (range_start + j) comp_op0 bound0 and comp_op1
 * bound1 (in fp32), else on_false; the row's max goes to the accumulator. */
emu_status isa_exec_range_select(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct pool_rsel s;
    unsigned op0 = ISA_ARG_ENUM(insn, range_select, comp_op0);
    unsigned op1 = ISA_ARG_ENUM(insn, range_select, comp_op1);
    unsigned cmd = ISA_ARG_ENUM(insn, range_select, reduce_cmd);
    int64_t start = ISA_ARG_INT(insn, range_select, range_start);
    float off = ISA_ARG_F32(insn, range_select, on_false);
    emu_status st = pool_rsel_bind(ctx, insn, &s);
    if (st != EMU_OK)
        return st;
    float *acc = act_acc_regs(ctx), *w = core_scratch(ctx, 0);
    for (uint32_t r = 0; r < s.v[0].rows; r++) {
        float b0, b1, m = -INFINITY;
        ap_row_load(&s.v[2], r, &b0);
        ap_row_load(&s.v[3], r, &b1);
        ap_row_load(&s.v[1], r, w);
        for (uint64_t j = 0; j < s.v[0].elems; j++) {
            float x = (float)(start + (int64_t)j);
            if (!pool_cmp_f32(op0, x, b0) || !pool_cmp_f32(op1, x, b1))
                w[j] = off;
            m = pool_fmax(m, w[j]);
        }
        ap_row_store(&s.v[0], r, w);
        float out = pool_acc_max(&acc[pool_part(insn, ISA_AP_SLOT(range_select, dst), r)], cmd, m);
        if (s.has_res)
            ap_row_store(&s.res, r, &out);
    }
    return EMU_OK;
}

/* ---- affine_select --------------------------------------------------------------------- */

/* Write the pattern's affine values, sum(idx_d * step_d) in int32
 * (wrapping) arithmetic and pattern order, into out; false when the
 * pattern does not have exactly n elements. affine_select and iota. */
static bool pool_pattern(const struct isa_pattern *pat, uint32_t *out, uint64_t n)
{
    uint64_t total = pat->ndims > 0 && pat->ndims <= ISA_MAX_DIMS;
    for (uint32_t d = 0; d < pat->ndims && d < ISA_MAX_DIMS && total <= n; d++)
        total *= pat->dim[d].count;
    if (total != n)
        return false;
    uint32_t idx[ISA_MAX_DIMS] = {0};
    for (uint64_t i = 0; i < n; i++) {
        uint32_t v = 0;
        for (uint32_t d = 0; d < pat->ndims; d++)
            v += idx[d] * (uint32_t)pat->dim[d].step;
        out[i] = v;
        for (int d = (int)pat->ndims - 1; d >= 0; d--) {
            if (++idx[d] < pat->dim[d].count)
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* Row r of affine_select: keep[i] is the predicate of element i; same
 * dtypes copy bytes, others go through fp32. */
static void pool_affine_row(struct isa_exec_ctx *ctx, const struct ap_view *v, uint32_t r,
                            const uint8_t *keep, float on_false)
{
    uint64_t n = v[0].elems;
    if (v[0].dtype != v[1].dtype) {
        float *w = core_scratch(ctx, 2);
        ap_row_load(&v[1], r, w);
        for (uint64_t i = 0; i < n; i++)
            if (!keep[i])
                w[i] = on_false;
        ap_row_store(&v[0], r, w);
        return;
    }
    uint8_t *b = pool_bytes(ctx, 2), fb[8];
    uint32_t es = v[0].esize;
    (void)num_from_f32(v[0].dtype, fb, on_false, NULL, 0);
    dve_row_gather(&v[1], r, b);
    for (uint64_t i = 0; i < n; i++)
        if (!keep[i])
            memcpy(b + i * es, fb, es);
    dve_row_scatter(&v[0], r, b);
}

/* dst = on_true where (offset + partition * channel_multiplier + pattern
 * value) cmp_op 0 holds, else on_false. */
emu_status isa_exec_affine_select(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(affine_select, dst),
                                      ISA_AP_SLOT(affine_select, on_true)};
    struct ap_view v[2];
    unsigned op = ISA_ARG_ENUM(insn, affine_select, cmp_op);
    uint32_t *pat = (uint32_t *)(void *)core_scratch(ctx, 0);
    uint8_t *keep = pool_bytes(ctx, 1);
    emu_status st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "on_true", &v[1], v[0].rows, v[0].elems);
    if (st == EMU_OK && !pool_is_cmp(op))
        st = core_fail(ctx, POOL_ERR, "cmp_op (%u) must be a comparison", op);
    if (st == EMU_OK && !pool_pattern(&insn->pattern, pat, v[0].elems))
        st = core_fail(ctx, POOL_ERR, "the pattern must have %u dims at most and as many "
                       "elements as dst has per partition (%llu)", ISA_MAX_DIMS,
                       (unsigned long long)v[0].elems);
    if (st != EMU_OK)
        return st;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        uint32_t base = (uint32_t)ISA_ARG_INT(insn, affine_select, offset) +
                        (uint32_t)ISA_ARG_INT(insn, affine_select, channel_multiplier) * r;
        for (uint64_t i = 0; i < v[0].elems; i++)
            keep[i] = pool_cmp_i64(op, (int32_t)(base + pat[i]), 0);
        pool_affine_row(ctx, v, r, keep, ISA_ARG_F32(insn, affine_select, on_false));
    }
    return EMU_OK;
}

/* ---- gathers --------------------------------------------------------------------------- */

/* The operands of local_gather, checked; *nvi: indices per group. */
static emu_status pool_lg_bind(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                               struct ap_view v[3], uint64_t *nvi)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(local_gather, dst),
                                      ISA_AP_SLOT(local_gather, src),
                                      ISA_AP_SLOT(local_gather, index)};
    int64_t per = ISA_ARG_INT(insn, local_gather, num_elem_per_idx);
    emu_status st = pool_bind(ctx, slots, 3, v);
    if (st == EMU_OK && (per < 1 || per > 32 || (per & (per - 1)) != 0))
        st = core_fail(ctx, POOL_ERR, "num_elem_per_idx is %lld; it must be 1, 2, 4, 8, 16 or "
                       "32", (long long)per);
    if (st == EMU_OK)
        st = pool_need_groups(ctx, "src", &v[1], POOL_GROUP);
    if (st == EMU_OK && v[2].rows != v[1].rows)
        st = core_fail(ctx, POOL_ERR, "index has %u partitions but src has %u", v[2].rows,
                       v[1].rows);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "index", &v[2], POOL_DT(ISA_DT_U16), "uint16");
    if (st == EMU_OK)
        st = pool_same_dtype(ctx, "dst", &v[0], "src", &v[1]);
    if (st != EMU_OK)
        return st;
    uint64_t avail = POOL_GROUP * v[2].elems;
    int64_t valid = ISA_ARG_INT(insn, local_gather, num_valid_indices);
    *nvi = valid > 0 ? (uint64_t)valid : avail;
    if (*nvi > avail || *nvi > 4096)
        return core_fail(ctx, POOL_ERR, "num_valid_indices is %llu; each group of 16 index "
                         "partitions holds %llu (at most 4096 are used)",
                         (unsigned long long)*nvi, (unsigned long long)avail);
    return pool_need_shape(ctx, "dst", &v[0], v[1].rows, *nvi * (uint64_t)per);
}

/* The index list of group g: list[k] = index[16g + k % 16][k / 16], each
 * checked to leave `per` elements inside a src row. */
static emu_status pool_lg_list(struct isa_exec_ctx *ctx, const struct ap_view *v, uint32_t g,
                               uint64_t nvi, uint64_t per, uint32_t *list)
{
    int64_t *row = dve_wide(ctx, 0);
    for (uint32_t p = 0; p < POOL_GROUP; p++) {
        dve_row_load_i64(&v[2], g * POOL_GROUP + p, row);
        for (uint64_t k = p; k < nvi; k += POOL_GROUP) {
            list[k] = (uint32_t)row[k / POOL_GROUP];
            if (list[k] + per > v[1].elems)
                return core_fail(ctx, EMU_EXEC_OOB, "local_gather index %u (partition %u, "
                                 "element %llu) reads past the %llu elements of a src "
                                 "partition", list[k], g * POOL_GROUP + p,
                                 (unsigned long long)(k / POOL_GROUP),
                                 (unsigned long long)v[1].elems);
        }
    }
    return EMU_OK;
}

/* Each group of 16 partitions shares one list of element offsets (its
 * index partitions read partition-major); every partition of the group
 * gathers num_elem_per_idx elements of its own src row at each offset. */
emu_status isa_exec_local_gather(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view v[3];
    uint64_t nvi = 0, per = (uint64_t)ISA_ARG_INT(insn, local_gather, num_elem_per_idx);
    emu_status st = pool_lg_bind(ctx, insn, v, &nvi);
    if (st != EMU_OK)
        return st;
    uint32_t *list = (uint32_t *)(void *)core_scratch(ctx, 2), es = v[0].esize;
    uint8_t *in = pool_bytes(ctx, 3), *out = pool_bytes(ctx, 4);
    for (uint32_t g = 0; g < v[1].rows / POOL_GROUP; g++) {
        st = pool_lg_list(ctx, v, g, nvi, per, list);
        if (st != EMU_OK)
            return st;
        for (uint32_t r = g * POOL_GROUP; r < (g + 1) * POOL_GROUP; r++) {
            dve_row_gather(&v[1], r, in);
            for (uint64_t k = 0; k < nvi; k++)
                memcpy(out + k * per * es, in + (uint64_t)list[k] * es, per * es);
            dve_row_scatter(&v[0], r, out);
        }
    }
    return EMU_OK;
}

/* dst[p][j] = data[p][indices[p][j]] over the flattened free axes of data. */
emu_status isa_exec_nc_n_gather(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(nc_n_gather, dst),
                                      ISA_AP_SLOT(nc_n_gather, data),
                                      ISA_AP_SLOT(nc_n_gather, indices)};
    struct ap_view v[3];
    (void)insn;
    emu_status st = pool_bind(ctx, slots, 3, v);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "indices", &v[2], v[1].rows, v[0].elems);
    if (st == EMU_OK && v[0].rows != v[1].rows)
        st = core_fail(ctx, POOL_ERR, "dst has %u partitions but data has %u", v[0].rows,
                       v[1].rows);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "indices", &v[2], POOL_DT(ISA_DT_U32), "uint32");
    if (st == EMU_OK)
        st = pool_same_dtype(ctx, "dst", &v[0], "data", &v[1]);
    if (st != EMU_OK)
        return st;
    int64_t *idx = dve_wide(ctx, 0);
    uint8_t *in = pool_bytes(ctx, 2), *out = pool_bytes(ctx, 3);
    uint32_t es = v[0].esize;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        dve_row_load_i64(&v[2], r, idx);
        dve_row_gather(&v[1], r, in);
        for (uint64_t j = 0; j < v[0].elems; j++) {
            if ((uint64_t)idx[j] >= v[1].elems)
                return core_fail(ctx, EMU_EXEC_OOB, "nc_n_gather index %lld (partition %u, "
                                 "element %llu) is past the %llu elements of data",
                                 (long long)idx[j], r, (unsigned long long)j,
                                 (unsigned long long)v[1].elems);
            memcpy(out + j * es, in + (uint64_t)idx[j] * es, es);
        }
        dve_row_scatter(&v[0], r, out);
    }
    return EMU_OK;
}

/* ---- nc_stream_shuffle ---------------------------------------------------------------- */

/* The start-partition rule for `active` partitions (a multiple of 32). */
static emu_status pool_shuffle_start(struct isa_exec_ctx *ctx, const char *name,
                                     const struct isa_ap *ap, uint32_t active)
{
    uint32_t s = ap->start_part;
    uint32_t align = active >= 96 ? ISA_NUM_PARTITIONS : active == 64 ? 64 : POOL_QUADRANT;
    if (s % align == 0)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s starts at partition %u; with %u active partitions it "
                     "must start at a multiple of %u", name, s, active, align);
}

static emu_status pool_shuffle_check(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                     const struct ap_view v[2])
{
    emu_status st = pool_same_dtype(ctx, "dst", &v[0], "src", &v[1]);
    if (st == EMU_OK && v[0].elems != v[1].elems)
        st = core_fail(ctx, POOL_ERR, "dst has %llu elements per partition but src has %llu",
                       (unsigned long long)v[0].elems, (unsigned long long)v[1].elems);
    uint32_t most = v[0].rows > v[1].rows ? v[0].rows : v[1].rows;
    uint32_t active = (most + POOL_QUADRANT - 1) / POOL_QUADRANT * POOL_QUADRANT;
    if (st == EMU_OK)
        st = pool_shuffle_start(ctx, "src", ISA_ARG_AP(insn, nc_stream_shuffle, src), active);
    if (st == EMU_OK)
        st = pool_shuffle_start(ctx, "dst", ISA_ARG_AP(insn, nc_stream_shuffle, dst), active);
    for (uint32_t d = 0; d < v[0].rows && st == EMU_OK; d++) {
        uint32_t m = insn->mask[d % POOL_QUADRANT], s = d / POOL_QUADRANT * POOL_QUADRANT + m;
        if (m != POOL_MASK_KEEP && (m >= POOL_QUADRANT || s >= v[1].rows))
            st = core_fail(ctx, POOL_ERR, "mask[%u] = %u: %s", d % POOL_QUADRANT, m,
                           m >= POOL_QUADRANT ? "entries are 0..31 or 255"
                                              : "src has no such partition");
    }
    return st;
}

/* Quadrant q of dst, elements [first, first + n): stage every source row
 * it reads, then write. */
static void pool_shuffle_chunk(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                               const struct ap_view v[2], uint32_t q, uint64_t first,
                               uint64_t n, uint64_t chunk)
{
    uint8_t *stage = pool_bytes(ctx, 0);
    uint64_t bytes = chunk * v[0].esize;
    bool loaded[POOL_QUADRANT] = {false};
    uint32_t base = q * POOL_QUADRANT;
    for (uint32_t i = 0; i < POOL_QUADRANT && base + i < v[0].rows; i++) {
        uint32_t m = insn->mask[i];
        if (m != POOL_MASK_KEEP && !loaded[m]) {
            pool_range_gather(&v[1], base + m, first, n, stage + m * bytes);
            loaded[m] = true;
        }
    }
    for (uint32_t i = 0; i < POOL_QUADRANT && base + i < v[0].rows; i++)
        if (insn->mask[i] != POOL_MASK_KEEP)
            pool_range_scatter(&v[0], base + i, first, n, stage + insn->mask[i] * bytes);
}

/* Within each quadrant of 32 partitions, dst partition i = src partition
 * mask[i] (255: dst partition i keeps its bytes). */
emu_status isa_exec_nc_stream_shuffle(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(nc_stream_shuffle, dst),
                                      ISA_AP_SLOT(nc_stream_shuffle, src)};
    struct ap_view v[2];
    emu_status st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_shuffle_check(ctx, insn, v);
    if (st != EMU_OK)
        return st;
    /* Slots 0..3 hold one chunk of up to 32 source rows. */
    uint64_t chunk = 4ull * CORE_SCRATCH_ELEMS * sizeof(float) / (POOL_QUADRANT * v[0].esize);
    for (uint32_t q = 0; q * POOL_QUADRANT < v[0].rows; q++)
        for (uint64_t first = 0; first < v[0].elems; first += chunk) {
            uint64_t n = v[0].elems - first < chunk ? v[0].elems - first : chunk;
            pool_shuffle_chunk(ctx, insn, v, q, first, n, chunk);
        }
    return EMU_OK;
}

/* ---- sequence_bounds and nonzero_with_count ------------------------------------------------ */

/* One row of segment ids, integer or fp32. */
struct pool_seg {
    const int64_t *ids;   /* integer ids, or NULL */
    const float *fids;    /* fp32 ids when ids is NULL */
};

static bool pool_seg_zero(const struct pool_seg *s, uint64_t i)
{
    return s->ids != NULL ? s->ids[i] == 0 : s->fids[i] == 0.0f;
}

static bool pool_seg_same(const struct pool_seg *s, uint64_t i, uint64_t j)
{
    return s->ids != NULL ? s->ids[i] == s->ids[j] : s->fids[i] == s->fids[j];
}

/* out[0..n) = segment starts, out[n..2n) = segment ends (exclusive);
 * padding (id 0) gets n and -1. */
static void pool_seg_bounds(const struct pool_seg *s, uint64_t n, int64_t *out)
{
    int64_t *lo = out, *hi = out + n, pad_lo = (int64_t)n, pad_hi = -1;
    for (uint64_t i = 0; i < n; i++)
        lo[i] = pool_seg_zero(s, i) ? pad_lo
                : i > 0 && pool_seg_same(s, i, i - 1) ? lo[i - 1] : (int64_t)i;
    for (uint64_t i = n; i-- > 0;)
        hi[i] = pool_seg_zero(s, i) ? pad_hi
                : i + 1 < n && pool_seg_same(s, i, i + 1) ? hi[i + 1] : (int64_t)i + 1;
}

/* Per partition, [start, end) of the segment of every element. */
emu_status isa_exec_sequence_bounds(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(sequence_bounds, dst),
                                      ISA_AP_SLOT(sequence_bounds, segment_ids)};
    static const uint32_t dts = POOL_DT(ISA_DT_F32) | POOL_DT(ISA_DT_F32R) | POOL_DT(ISA_DT_I32);
    struct ap_view v[2];
    (void)insn;
    emu_status st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "segment_ids", &v[1], dts, "fp32 or int32");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "dst", &v[0], dts, "fp32 or int32");
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, 2 * v[1].elems);
    if (st != EMU_OK)
        return st;
    int64_t *ids = dve_wide(ctx, 0), *out = dve_wide(ctx, 2);
    float *fids = core_scratch(ctx, 4);
    bool ints = v[1].dtype == ISA_DT_I32;
    struct pool_seg s = {ints ? ids : NULL, fids};
    for (uint32_t r = 0; r < v[0].rows; r++) {
        if (ints)
            dve_row_load_i64(&v[1], r, ids);
        else
            ap_row_load(&v[1], r, fids);
        pool_seg_bounds(&s, v[1].elems, out);
        dve_row_store_i64(&v[0], r, out);
    }
    return EMU_OK;
}

/* One row: indices of the non-zero elements (+ offset), padding, count. */
static void pool_nonzero_row(struct isa_exec_ctx *ctx, const struct ap_view *v, uint32_t r,
                             const struct isa_insn *insn)
{
    int64_t *ids = dve_wide(ctx, 0), *out = dve_wide(ctx, 2);
    float *f = core_scratch(ctx, 4);
    int64_t offset = ISA_ARG_INT(insn, nonzero_with_count, index_offset);
    int64_t pad = ISA_ARG_INT(insn, nonzero_with_count, padding_val);
    uint64_t n = v[1].elems, count = 0;
    bool ints = dve_dtype_is_int(v[1].dtype);
    if (ints)
        dve_row_load_i64(&v[1], r, ids);
    else
        ap_row_load(&v[1], r, f);
    for (uint64_t i = 0; i < n; i++)
        if (ints ? ids[i] != 0 : f[i] != 0.0f)
            out[count++] = (int32_t)((uint32_t)i + (uint32_t)offset);
    for (uint64_t i = count; i < n; i++)
        out[i] = (int32_t)pad;
    out[n] = (int64_t)count;
    dve_row_store_i64(&v[0], r, out);
}

/* On partitions 0, 16, ..., 112 of the tiles: the indices of src's
 * non-zero elements, padding_val to the input length, then their count. */
emu_status isa_exec_nonzero_with_count(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(nonzero_with_count, dst),
                                      ISA_AP_SLOT(nonzero_with_count, src)};
    static const uint32_t dts = POOL_DT(ISA_DT_F32) | POOL_DT(ISA_DT_F32R) | POOL_DT(ISA_DT_I32);
    struct ap_view v[2];
    emu_status st = pool_need_gen(ctx, "nonzero_with_count", 3);
    if (st == EMU_OK)
        st = pool_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "src", &v[1], dts, "fp32 or int32");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "dst", &v[0], POOL_DT(ISA_DT_I32), "int32");
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "dst", &v[0], v[1].rows, v[1].elems + 1);
    if (st != EMU_OK)
        return st;
    for (uint32_t r = 0; r < v[0].rows; r += POOL_GROUP)
        pool_nonzero_row(ctx, v, r, insn);
    return EMU_OK;
}

/* ---- topk ------------------------------------------------------------------------------- */

static emu_status pool_topk_check(struct isa_exec_ctx *ctx, const struct ap_view v[3],
                                  uint64_t n)
{
    uint64_t k = v[0].elems;
    emu_status st = pool_need_dtype(ctx, "src", &v[2], POOL_DT(ISA_DT_BF16), "bf16");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "val_dst", &v[0], POOL_DT(ISA_DT_BF16), "bf16");
    if (st == EMU_OK)
        st = pool_need_dtype(ctx, "idx_dst", &v[1], POOL_DT(ISA_DT_U32), "uint32");
    if (st == EMU_OK)
        st = pool_need_groups(ctx, "src", &v[2], POOL_GROUP);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "val_dst", &v[0], v[2].rows, k);
    if (st == EMU_OK)
        st = pool_need_shape(ctx, "idx_dst", &v[1], v[2].rows, k);
    if (st == EMU_OK && (n < 8 || n > 65535 || k >= 32768 || k > n))
        st = core_fail(ctx, POOL_ERR, "topk needs 8 <= n < 65536 and K <= n, K < 32768; n is "
                       "%llu and K (val_dst's free size) %llu", (unsigned long long)n,
                       (unsigned long long)k);
    if (st == EMU_OK && v[2].elems * POOL_GROUP < n)
        st = core_fail(ctx, POOL_ERR, "src holds %llu elements per partition; a snake of %llu "
                       "needs %llu", (unsigned long long)v[2].elems, (unsigned long long)n,
                       (unsigned long long)((n + POOL_GROUP - 1) / POOL_GROUP));
    return st;
}

/* Read group g's snake of n bf16 values: element i is in partition
 * 16g + i % 16, free position i / 16. */
static void pool_topk_read(struct isa_exec_ctx *ctx, const struct ap_view *src, uint32_t g,
                           uint64_t n, struct pool_rank *rk)
{
    uint16_t *raw = (uint16_t *)(void *)core_scratch(ctx, 2);
    for (uint32_t p = 0; p < POOL_GROUP; p++) {
        dve_row_gather(src, g * POOL_GROUP + p, raw);
        for (uint64_t i = p; i < n; i += POOL_GROUP)
            rk[i] = (struct pool_rank){num_bf16_to_f32(raw[i / POOL_GROUP]), (uint32_t)i,
                                       raw[i / POOL_GROUP]};
    }
}

/* Write group g's K results (rk[0] best) in ascending order, in the snake
 * layout: result j at partition 16g + j % 16, free position j / 16. The
 * last written position's slots past K get -inf and index 0xffffffff. */
static void pool_topk_write(struct isa_exec_ctx *ctx, const struct ap_view v[3], uint32_t g,
                            const struct pool_rank *rk)
{
    uint64_t k = v[0].elems, cols = (k + POOL_GROUP - 1) / POOL_GROUP;
    uint16_t *val = (uint16_t *)(void *)core_scratch(ctx, 2);
    uint32_t *idx = (uint32_t *)(void *)core_scratch(ctx, 3);
    for (uint32_t p = 0; p < POOL_GROUP; p++) {
        uint32_t r = g * POOL_GROUP + p;
        dve_row_gather(&v[0], r, val);
        dve_row_gather(&v[1], r, idx);
        for (uint64_t c = 0; c < cols; c++) {
            uint64_t j = c * POOL_GROUP + p;
            val[c] = j < k ? rk[k - 1 - j].bits : 0xff80u;
            idx[c] = j < k ? rk[k - 1 - j].i : 0xffffffffu;
        }
        dve_row_scatter(&v[0], r, val);
        dve_row_scatter(&v[1], r, idx);
    }
}

/* Per group of 16 partitions, the K largest of its n-element snake and
 * their snake indices. */
emu_status isa_exec_topk(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(topk, val_dst),
                                      ISA_AP_SLOT(topk, idx_dst),
                                      ISA_AP_SLOT(topk, src)};
    struct ap_view v[3];
    uint64_t n = (uint64_t)ISA_ARG_INT(insn, topk, n);
    emu_status st = pool_bind(ctx, slots, 3, v);
    if (st == EMU_OK)
        st = pool_topk_check(ctx, v, n);
    if (st != EMU_OK)
        return st;
    struct pool_rank *rk = (struct pool_rank *)(void *)core_scratch(ctx, 0);
    for (uint32_t g = 0; g < v[2].rows / POOL_GROUP; g++) {
        pool_topk_read(ctx, &v[2], g, n, rk);
        pool_rank_sort(rk, n);
        pool_topk_write(ctx, v, g, rk);
    }
    return EMU_OK;
}

/* ---- iota ------------------------------------------------------------------------------- */

/* Elements of the iota pattern (more than cap: cap + 1). */
static uint64_t pool_iota_count(const struct isa_pattern *pat, uint64_t cap)
{
    uint64_t n = pat->ndims > 0;
    for (unsigned d = 0; d < pat->ndims && n <= cap; d++)
        n *= pat->dim[d].count;
    return n > cap ? cap + 1 : n;
}

/* dst[p, i] = offset + channel_multiplier * p + pattern value i, computed
 * in int32 arithmetic, p counting the dst rows from 0. */
emu_status isa_exec_iota(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view d;
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(iota, dst), &d);
    if (st != EMU_OK)
        return st;
    uint32_t *pat = (uint32_t *)(void *)core_scratch(ctx, 0);
    int64_t *row = dve_wide(ctx, 2);
    float *frow = core_scratch(ctx, 4);
    uint64_t n = pool_iota_count(&insn->pattern, CORE_SCRATCH_ELEMS);
    if (n != d.elems || !pool_pattern(&insn->pattern, pat, n))
        return core_fail(ctx, POOL_ERR, "the iota pattern has %s%llu elements but dst has %llu "
                         "per partition", n > CORE_SCRATCH_ELEMS ? "over " : "",
                         (unsigned long long)(n > CORE_SCRATCH_ELEMS ? n - 1 : n),
                         (unsigned long long)d.elems);
    bool ints = dve_dtype_is_int(d.dtype);
    for (uint32_t r = 0; r < d.rows; r++) {
        uint32_t base = (uint32_t)ISA_ARG_INT(insn, iota, offset) +
                        (uint32_t)ISA_ARG_INT(insn, iota, channel_multiplier) * r;
        for (uint64_t i = 0; i < n; i++)
            row[i] = (int32_t)(base + pat[i]);
        if (ints) {
            dve_row_store_i64(&d, r, row);
            continue;
        }
        for (uint64_t i = 0; i < n; i++)
            frow[i] = (float)row[i];
        ap_row_store(&d, r, frow);
    }
    return EMU_OK;
}

/* ---- tensor_partition_reduce --------------------------------------------------------------- */

static void pool_preduce_f32(struct isa_exec_ctx *ctx, unsigned op, const struct ap_view *d,
                            const struct ap_view *x_v)
{
    float *acc = core_scratch(ctx, 0);
    size_t n = d->elems;
    unsigned fold = op == ISA_ALU_average ? ISA_ALU_add : op;
    ap_row_load(x_v, 0, acc);
    for (uint32_t r = 1; r < x_v->rows; r++)
        dve_f32_vv(fold, acc, acc, dve_in_f32(ctx, 1, x_v, r, NULL, 0), false, n);
    if (op == ISA_ALU_average)
        dve_f32_vk(ISA_ALU_divide, acc, acc, (float)x_v->rows, false, n);
    ap_row_store(d, 0, acc);
}

static void pool_preduce_int(struct isa_exec_ctx *ctx, unsigned op, const struct ap_view *d,
                            const struct ap_view *x_v)
{
    int64_t *acc = dve_wide(ctx, 0), *x = dve_wide(ctx, 2);
    unsigned bits = dve_dtype_bits(d->dtype);
    dve_row_load_i64(x_v, 0, acc);
    for (uint32_t r = 1; r < x_v->rows; r++) {
        dve_row_load_i64(x_v, r, x);
        dve_i64_vv(op, acc, acc, x, false, bits, d->elems);
    }
    dve_row_store_i64(d, 0, acc);
}

/* dst[0, i] = op over the partitions p of data[p, i], folded in partition order. */
emu_status isa_exec_tensor_partition_reduce(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_partition_reduce, dst),
                                      ISA_AP_SLOT(tensor_partition_reduce, data)};
    struct ap_view v[2];
    unsigned op = ISA_ARG_ENUM(insn, tensor_partition_reduce, op);
    emu_status st = dve_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = dve_op_check(ctx, "op", op, DVE_OP_REDUCE);
    if (st != EMU_OK)
        return st;
    if (v[0].rows != 1 || v[0].elems != v[1].elems)
        return core_fail(ctx, POOL_ERR, "dst is [%u, %llu]; reducing the partitions of data "
                         "[%u, %llu] gives [1, %llu]", v[0].rows, (unsigned long long)v[0].elems,
                         v[1].rows, (unsigned long long)v[1].elems,
                         (unsigned long long)v[1].elems);
    if (dve_all_int(v, 2) && (dve_op_props(op) & DVE_OP_INT)) {
        pool_preduce_int(ctx, op, &v[0], &v[1]);
        return EMU_OK;
    }
    st = dve_op_check(ctx, "op", op, DVE_OP_F32);
    if (st == EMU_OK)
        pool_preduce_f32(ctx, op, &v[0], &v[1]);
    return st;
}
