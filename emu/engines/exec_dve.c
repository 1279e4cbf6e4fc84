/*
 * exec_dve.c: semantics of the Vector/GpSimd elementwise, copy and reduce
 * instructions: tensor_tensor, tensor_scalar, scalar_tensor_tensor,
 * tensor_copy, tensor_copy_predicated, memset, tensor_reduce,
 * tensor_tensor_scan, tensor_scalar_reduce and tensor_scalar_cumulative,
 * after the NKI ISA reference (the GpSimd-only iota and
 * tensor_partition_reduce are in exec_pool.c). docs/isa.md has the table
 * of choices where the reference is silent.
 *
 * Every instruction works row by row (a row is one partition's free
 * elements in pattern order): rows go in increasing order, and each row
 * reads all of its inputs before it writes its outputs, so an output may
 * alias an input. Float math is fp32 (inputs converted from their dtype,
 * results rounded to nearest even into the output dtype). When every
 * tensor operand has an integer dtype and the operators allow it, the
 * instruction runs exactly in 64-bit integer arithmetic instead and
 * results keep the low bits of the output dtype (dve.h). Flat fp32 rows
 * are used in place, without copies. A float tensor_tensor or
 * tensor_scalar writing 1 MiB or more, with round-to-nearest stores and
 * no row reading bytes another row writes, runs its rows in parts of 16
 * on several host threads (emu/core/par.h): rows are independent there,
 * so the bits are those of the in-order run.
 */
#include <assert.h>
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "emu/core/par.h"
#include "emu/engines/act_acc.h"
#include "emu/engines/dve.h"
#include "emu/isa/isa_args.h"

#define DVE_ERR EMU_EXEC_ERR
#define DVE_PAR_MIN_BYTES (1u << 20) /* output bytes from which tensor_tensor/tensor_scalar split */
#define DVE_PAR_ROWS 16u             /* rows per part of a split pass */

static size_t dve_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* a must have b's shape (rows x elements). */
static emu_status dve_shape(struct isa_exec_ctx *ctx, const char *an, const struct ap_view *a,
                            const char *bn, const struct ap_view *b)
{
    if (a->rows == b->rows && a->elems == b->elems)
        return EMU_OK;
    return core_fail(ctx, DVE_ERR, "%s is [%u, %llu] but %s is [%u, %llu]", an, a->rows,
                     (unsigned long long)a->elems, bn, b->rows, (unsigned long long)b->elems);
}

/* The partition of row r of operand slot (accumulator registers are per partition). */
static uint32_t dve_part(const struct isa_insn *insn, unsigned slot, uint32_t r)
{
    return (insn->ap[slot].start_part + r * (uint32_t)insn->ap[slot].part_step) %
           ISA_NUM_PARTITIONS;
}

/* ---- splitting across host threads ---------------------------------------------- */

/* Scratch rows of one run of rows: the engine's, or a helper thread's. */
struct dve_rows {
    float *in0;  /* first input, converted */
    float *in1;  /* second input, converted */
    float *out;  /* output before its store */
};

static struct dve_rows dve_core_rows(struct isa_exec_ctx *ctx)
{
    return (struct dve_rows){core_scratch(ctx, 0), core_scratch(ctx, 1), core_scratch(ctx, 2)};
}

/* Is the pass over dst (inputs in[0..n)) large enough to split, and may
 * its rows run in any order (no stochastic rounding stream, no row
 * reading another row's output)? */
static bool dve_splittable(const struct ap_view *dst, const struct ap_view *in, unsigned n)
{
    if (dst->rnd != NULL || dst->rows < 2 ||
        (uint64_t)dst->rows * dst->elems * dst->esize < DVE_PAR_MIN_BYTES)
        return false;
    for (unsigned i = 0; i < n; i++)
        if (!ap_rows_independent(dst, &in[i]))
            return false;
    return true;
}

/* Rows [r0, r1) of an elementwise pass. */
typedef void (*dve_rows_fn)(const void *arg, uint32_t r0, uint32_t r1, const struct dve_rows *s);

/* One split pass: parts of DVE_PAR_ROWS rows. */
struct dve_split {
    dve_rows_fn fn;          /* the pass */
    const void *arg;         /* its operands */
    uint32_t rows;           /* rows in all */
    atomic_bool no_scratch;  /* a part found no scratch rows */
};

static void dve_split_part(void *arg, size_t part)
{
    struct dve_split *sp = arg;
    struct dve_rows s = {par_scratch(0), par_scratch(1), par_scratch(2)};
    if (s.in0 == NULL || s.in1 == NULL || s.out == NULL) {
        atomic_store(&sp->no_scratch, true);
        return;
    }
    uint32_t r0 = (uint32_t)part * DVE_PAR_ROWS, r1 = r0 + DVE_PAR_ROWS;
    sp->fn(sp->arg, r0, r1 < sp->rows ? r1 : sp->rows, &s);
}

/* Run fn over all rows: split across host threads (par.h) when `split`. */
static emu_status dve_run_rows(struct isa_exec_ctx *ctx, dve_rows_fn fn, const void *arg,
                               uint32_t rows, bool split)
{
    if (!split) {
        struct dve_rows s = dve_core_rows(ctx);
        fn(arg, 0, rows, &s);
        return EMU_OK;
    }
    struct dve_split sp = {.fn = fn, .arg = arg, .rows = rows};
    atomic_init(&sp.no_scratch, false);
    par_for((rows + DVE_PAR_ROWS - 1) / DVE_PAR_ROWS, dve_split_part, &sp);
    if (atomic_load(&sp.no_scratch))
        return core_fail(ctx, EMU_RESOURCE, "out of host memory for a helper thread's "
                         "scratch rows");
    return EMU_OK;
}

/* ---- tensor_tensor ------------------------------------------------------------ */

/* The operands of a float tensor_tensor. */
struct dve_tt {
    unsigned op;                /* the operator */
    const struct ap_view *v;    /* dst, data1, data2 */
};

static void dve_tt_f32_rows(const void *arg, uint32_t r0, uint32_t r1, const struct dve_rows *s)
{
    const struct dve_tt *t = arg;
    const struct ap_view *v = t->v;
    size_t n = v[0].elems;
    for (uint32_t r = r0; r < r1; r++) {
        float *o = ap_row_f32(&v[0], r);
        const float *x = dve_in_f32_buf(&v[1], r, o, n, s->in0);
        const float *y = dve_in_f32_buf(&v[2], r, o, n, s->in1);
        float *w = o != NULL ? o : s->out;
        dve_f32_vv(t->op, w, x, y, false, n);
        if (o == NULL)
            ap_row_store(&v[0], r, w);
    }
}

static emu_status dve_tt_f32(struct isa_exec_ctx *ctx, unsigned op, const struct ap_view *v)
{
    struct dve_tt t = {op, v};
    return dve_run_rows(ctx, dve_tt_f32_rows, &t, v[0].rows, dve_splittable(&v[0], &v[1], 2));
}

static emu_status dve_tt_int(struct isa_exec_ctx *ctx, unsigned op, const struct ap_view *v)
{
    int64_t *x = dve_wide(ctx, 0), *y = dve_wide(ctx, 2);
    unsigned bits = dve_dtype_bits(v[0].dtype);
    for (uint32_t r = 0; r < v[0].rows; r++) {
        dve_row_load_i64(&v[1], r, x);
        dve_row_load_i64(&v[2], r, y);
        dve_i64_vv(op, x, x, y, false, bits, v[0].elems);
        dve_row_store_i64(&v[0], r, x);
    }
    return EMU_OK;
}

/* dst = data1 <op> data2 */
emu_status isa_exec_tensor_tensor(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(tensor_tensor, dst),
                                      ISA_AP_SLOT(tensor_tensor, data1),
                                      ISA_AP_SLOT(tensor_tensor, data2)};
    struct ap_view v[3];
    unsigned op = ISA_ARG_ENUM(insn, tensor_tensor, op);
    emu_status st = dve_bind(ctx, slots, 3, v);
    if (st == EMU_OK)
        st = dve_shape(ctx, "data1", &v[1], "dst", &v[0]);
    if (st == EMU_OK)
        st = dve_shape(ctx, "data2", &v[2], "dst", &v[0]);
    if (st != EMU_OK)
        return st;
    if (dve_all_int(v, 3) && (dve_op_props(op) & DVE_OP_INT))
        return dve_tt_int(ctx, op, v);
    st = dve_op_check(ctx, "op", op, DVE_OP_F32);
    return st != EMU_OK ? st : dve_tt_f32(ctx, op, v);
}

/* ---- tensor_scalar -------------------------------------------------------------- */

/* What a tensor_scalar instruction applies: up to two operators with
 * scalar operands. */
struct dve_ts {
    unsigned op[2];            /* operators; op[1] bypass: only op[0] */
    unsigned props[2];         /* their DVE_OP_* bits */
    bool rev[2];               /* scalar on the left of op[i] */
    struct dve_scalar k[2];    /* the scalar operands */
};

/* The operands of a float tensor_scalar. */
struct dve_ts_run {
    const struct dve_ts *t;    /* operators and scalars */
    const struct ap_view *d;   /* dst */
    const struct ap_view *x;   /* data */
};

static void dve_ts_f32_rows(const void *arg, uint32_t r0, uint32_t r1, const struct dve_rows *s)
{
    const struct dve_ts_run *run = arg;
    const struct dve_ts *t = run->t;
    const struct ap_view *d = run->d;
    size_t n = d->elems;
    bool two = t->op[1] != ISA_ALU_bypass;
    for (uint32_t r = r0; r < r1; r++) {
        float k0 = dve_scalar_f32(&t->k[0], r), k1 = two ? dve_scalar_f32(&t->k[1], r) : 0.0f;
        float *o = ap_row_f32(d, r);
        const float *x = dve_in_f32_buf(run->x, r, o, n, s->in0);
        float *w = o != NULL ? o : s->in1;
        if (!two) {
            dve_f32_vk(t->op[0], w, x, k0, t->rev[0], n);
        } else if (!dve_f32_vk2(t->op, t->rev, k0, k1, w, x, n)) {
            float *tmp = s->out;
            for (size_t c = 0; c < n; c += DVE_CHUNK) {
                size_t m = dve_min(DVE_CHUNK, n - c);
                dve_f32_vk(t->op[0], tmp, x + c, k0, t->rev[0], m);
                dve_f32_vk(t->op[1], w + c, tmp, k1, t->rev[1], m);
            }
        }
        if (o == NULL)
            ap_row_store(d, r, w);
    }
}

static emu_status dve_ts_f32(struct isa_exec_ctx *ctx, const struct dve_ts *t,
                             const struct ap_view *d, const struct ap_view *x_v)
{
    struct dve_ts_run run = {t, d, x_v};
    bool split = dve_splittable(d, x_v, 1);
    for (int i = 0; i < 2 && split; i++)
        split = !t->k[i].ap || ap_rows_independent(d, &t->k[i].v);
    return dve_run_rows(ctx, dve_ts_f32_rows, &run, d->rows, split);
}

static emu_status dve_ts_int(struct isa_exec_ctx *ctx, const struct dve_ts *t,
                             const struct ap_view *d, const struct ap_view *x_v)
{
    int64_t *x = dve_wide(ctx, 0);
    unsigned bits = dve_dtype_bits(d->dtype);
    int steps = t->op[1] != ISA_ALU_bypass ? 2 : 1;
    for (uint32_t r = 0; r < d->rows; r++) {
        dve_row_load_i64(x_v, r, x);
        for (int i = 0; i < steps; i++) {
            int64_t k = (t->props[i] & DVE_OP_UNARY) ? 0 : dve_scalar_i64(&t->k[i], r);
            dve_i64_vk(t->op[i], x, x, k, t->rev[i], bits, d->elems);
        }
        dve_row_store_i64(d, r, x);
    }
    return EMU_OK;
}

/* May the operators run on integers: integer-capable, scalars integral? */
static bool dve_ts_int_ok(const struct dve_ts *t)
{
    for (int i = 0; i < 2; i++) {
        unsigned p = t->props[i];
        if (!(p & DVE_OP_INT) || (!(p & DVE_OP_UNARY) && !dve_scalar_is_int(&t->k[i])))
            return false;
    }
    return true;
}

/* Both operators valid and of one kind (bit-pattern or arithmetic). */
static emu_status dve_ts_ops_check(struct isa_exec_ctx *ctx, const struct dve_ts *t)
{
    unsigned p0 = t->props[0], p1 = t->props[1];
    if (p0 == 0 || p1 == 0)
        return core_fail(ctx, DVE_ERR, "%s (%u) is not an ALU operator",
                         p0 == 0 ? "op0" : "op1", p0 == 0 ? t->op[0] : t->op[1]);
    if (t->op[1] != ISA_ALU_bypass && (p0 & DVE_OP_BITVEC) != (p1 & DVE_OP_BITVEC))
        return core_fail(ctx, DVE_ERR, "op0 %s and op1 %s must both be bit-pattern or both "
                         "arithmetic operators", dve_op_name(t->op[0]), dve_op_name(t->op[1]));
    return EMU_OK;
}

/* dst = (data <op0> operand0) <op1> operand1 */
emu_status isa_exec_tensor_scalar(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_scalar, dst),
                                      ISA_AP_SLOT(tensor_scalar, data)};
    struct ap_view v[2];
    struct dve_ts t;
    t.op[0] = ISA_ARG_ENUM(insn, tensor_scalar, op0);
    t.op[1] = ISA_ARG_ENUM(insn, tensor_scalar, op1);
    t.rev[0] = ISA_ARG_FLAG(insn, tensor_scalar, reverse0);
    t.rev[1] = ISA_ARG_FLAG(insn, tensor_scalar, reverse1);
    for (int i = 0; i < 2; i++)
        t.props[i] = dve_op_props(t.op[i]);
    emu_status st = dve_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = dve_shape(ctx, "data", &v[1], "dst", &v[0]);
    if (st == EMU_OK)
        st = dve_ts_ops_check(ctx, &t);
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, ISA_AP_SLOT(tensor_scalar, operand0),
                             ISA_F32_SLOT(tensor_scalar, operand0), v[0].rows, "operand0",
                             &t.k[0]);
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, ISA_AP_SLOT(tensor_scalar, operand1),
                             ISA_F32_SLOT(tensor_scalar, operand1), v[0].rows, "operand1",
                             &t.k[1]);
    if (st != EMU_OK)
        return st;
    if (dve_all_int(v, 2) && dve_ts_int_ok(&t))
        return dve_ts_int(ctx, &t, &v[0], &v[1]);
    if ((t.props[0] | t.props[1]) & DVE_OP_BITVEC)
        return dve_op_check(ctx, (t.props[0] & DVE_OP_BITVEC) ? "op0" : "op1",
                            (t.props[0] & DVE_OP_BITVEC) ? t.op[0] : t.op[1], DVE_OP_F32);
    return dve_ts_f32(ctx, &t, &v[0], &v[1]);
}

/* ---- scalar_tensor_tensor ---------------------------------------------------------- */

/* The operands of a two-op fp32 instruction (scalar_tensor_tensor,
 * tensor_tensor_scan): dst and two tensors, two ops and a scalar per row. */
struct dve_two_ops {
    struct ap_view v[3];     /* dst, x, y */
    struct dve_scalar k;     /* the per-row scalar */
    unsigned op0, op1;       /* the ops (fields op0 and op1) */
    bool rev0, rev1;         /* their operands swapped (reverse0, reverse1) */
};

/* One row of a two-op instruction: its output and inputs. */
struct dve_two_row {
    float *o;                /* dst row in place, or NULL */
    const float *x, *y;      /* the two input rows */
    float *w;                /* where to write: o, or scratch to store */
};

/* Both two-op instructions keep their ops and their order flags where
 * scalar_tensor_tensor does. */
static_assert(ISA_SLOT(ENUM, tensor_tensor_scan, op0) ==
                      ISA_SLOT(ENUM, scalar_tensor_tensor, op0) &&
                  ISA_SLOT(ENUM, tensor_tensor_scan, op1) ==
                      ISA_SLOT(ENUM, scalar_tensor_tensor, op1) &&
                  ISA_SLOT(FLAG, tensor_tensor_scan, reverse0) ==
                      ISA_SLOT(FLAG, scalar_tensor_tensor, reverse0) &&
                  ISA_SLOT(FLAG, tensor_tensor_scan, reverse1) ==
                      ISA_SLOT(FLAG, scalar_tensor_tensor, reverse1),
              "the two-op instructions' ops");

/* Bind a two-op instruction (slots: dst, x, y; names x and y for
 * messages; the scalar in ap slot kslot or fimm slot kfslot, named kname)
 * into *t. */
static emu_status dve_bind_two_ops(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                   const unsigned slots[3], const char *xname,
                                   const char *yname, unsigned kslot, unsigned kfslot,
                                   const char *kname, struct dve_two_ops *t)
{
    t->op0 = ISA_ARG_ENUM(insn, scalar_tensor_tensor, op0);
    t->op1 = ISA_ARG_ENUM(insn, scalar_tensor_tensor, op1);
    t->rev0 = ISA_ARG_FLAG(insn, scalar_tensor_tensor, reverse0);
    t->rev1 = ISA_ARG_FLAG(insn, scalar_tensor_tensor, reverse1);
    emu_status st = dve_bind(ctx, slots, 3, t->v);
    if (st == EMU_OK)
        st = dve_shape(ctx, xname, &t->v[1], "dst", &t->v[0]);
    if (st == EMU_OK)
        st = dve_shape(ctx, yname, &t->v[2], "dst", &t->v[0]);
    if (st == EMU_OK)
        st = dve_op_check(ctx, "op0", t->op0, DVE_OP_F32);
    if (st == EMU_OK)
        st = dve_op_check(ctx, "op1", t->op1, DVE_OP_F32);
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, kslot, kfslot, t->v[0].rows, kname, &t->k);
    return st;
}

/* Row r of a bound two-op instruction. */
static void dve_two_row_get(struct isa_exec_ctx *ctx, struct dve_two_ops *t, uint32_t r,
                            struct dve_two_row *row)
{
    size_t n = t->v[0].elems;
    row->o = ap_row_f32(&t->v[0], r);
    row->x = dve_in_f32(ctx, 0, &t->v[1], r, row->o, n);
    row->y = dve_in_f32(ctx, 1, &t->v[2], r, row->o, n);
    row->w = row->o != NULL ? row->o : core_scratch(ctx, 2);
}

/* dst = (data <op0> operand0) <op1> operand1, in fp32 */
emu_status isa_exec_scalar_tensor_tensor(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(scalar_tensor_tensor, dst),
                                      ISA_AP_SLOT(scalar_tensor_tensor, data),
                                      ISA_AP_SLOT(scalar_tensor_tensor, operand1)};
    struct dve_two_ops t;
    emu_status st = dve_bind_two_ops(ctx, insn, slots, "data", "operand1",
                                     ISA_AP_SLOT(scalar_tensor_tensor, operand0),
                                     ISA_F32_SLOT(scalar_tensor_tensor, operand0), "operand0", &t);
    if (st != EMU_OK)
        return st;
    size_t n = t.v[0].elems;
    float *tmp = core_scratch(ctx, 3);
    for (uint32_t r = 0; r < t.v[0].rows; r++) {
        float k0 = dve_scalar_f32(&t.k, r);
        struct dve_two_row row;
        dve_two_row_get(ctx, &t, r, &row);
        for (size_t c = 0; c < n; c += DVE_CHUNK) {
            size_t m = dve_min(DVE_CHUNK, n - c);
            dve_f32_vk(t.op0, tmp, row.x + c, k0, t.rev0, m);
            dve_f32_vv(t.op1, row.w + c, tmp, row.y + c, t.rev1, m);
        }
        if (row.o == NULL)
            ap_row_store(&t.v[0], r, row.w);
    }
    return EMU_OK;
}

/* ---- tensor_copy ------------------------------------------------------------------- */

static bool dve_same_bits(uint32_t a, uint32_t b)
{
    bool fa = a == ISA_DT_F32 || a == ISA_DT_F32R, fb = b == ISA_DT_F32 || b == ISA_DT_F32R;
    return a == b || (fa && fb);
}

/* Do the byte ranges of row r of a and b intersect? */
static bool dve_rows_overlap(const struct ap_view *a, const struct ap_view *b, uint32_t r)
{
    const uint8_t *pa = ap_row_ptr(a, r), *pb = ap_row_ptr(b, r);
    return pa < pb + b->elems * b->esize && pb < pa + a->elems * a->esize;
}

/* Equal dtypes: the element bits move unchanged. */
static void dve_copy_bits(struct isa_exec_ctx *ctx, const struct ap_view *d,
                          const struct ap_view *s)
{
    void *buf = dve_wide(ctx, 0);
    for (uint32_t r = 0; r < d->rows; r++) {
        if (d->flat && s->flat) {
            memmove(ap_row_ptr(d, r), ap_row_ptr(s, r), d->elems * d->esize);
            continue;
        }
        dve_row_gather(s, r, buf);
        dve_row_scatter(d, r, buf);
    }
}

/* Different dtypes: through fp32, rounding to nearest even (or stochastically
 * when the execution asks for it: then always through ap_row_store). */
static void dve_copy_cast(struct isa_exec_ctx *ctx, const struct ap_view *d,
                          const struct ap_view *s)
{
    float *buf = core_scratch(ctx, 0);
    for (uint32_t r = 0; r < d->rows; r++) {
        if (d->flat && s->flat && d->rnd == NULL && !dve_rows_overlap(d, s, r)) {
            (void)num_convert(ap_row_ptr(d, r), d->dtype, ap_row_ptr(s, r), s->dtype, d->elems);
            continue;
        }
        ap_row_load(s, r, buf);
        ap_row_store(d, r, buf);
    }
}

emu_status isa_exec_tensor_copy(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_copy, dst),
                                      ISA_AP_SLOT(tensor_copy, src)};
    struct ap_view v[2];
    emu_status st = dve_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = dve_shape(ctx, "src", &v[1], "dst", &v[0]);
    if (st != EMU_OK)
        return st;
    if (dve_same_bits(v[0].dtype, v[1].dtype))
        dve_copy_bits(ctx, &v[0], &v[1]);
    else
        dve_copy_cast(ctx, &v[0], &v[1]);
    return EMU_OK;
}

/* ---- tensor_copy_predicated ---------------------------------------------------------- */

/* dst[i] = src[i] where keep[i] (packed elements of size es). */
#define DVE_SELECT(T, dst, src, sstep, keep, n)                                   \
    do {                                                                          \
        T *d_ = (T *)(void *)(dst);                                               \
        const T *s_ = (const T *)(const void *)(src);                             \
        for (size_t i = 0; i < (n); i++)                                          \
            d_[i] = (keep)[i] ? s_[i * (sstep)] : d_[i];                          \
    } while (0)

static void dve_select(void *dst, const void *src, size_t sstep, const uint8_t *keep,
                       size_t es, size_t n)
{
    switch (es) {
    case 1: DVE_SELECT(uint8_t, dst, src, sstep, keep, n); break;
    case 2: DVE_SELECT(uint16_t, dst, src, sstep, keep, n); break;
    case 4: DVE_SELECT(uint32_t, dst, src, sstep, keep, n); break;
    default: DVE_SELECT(uint64_t, dst, src, sstep, keep, n); break;
    }
}

/* Row r of the source as packed elements of the dst dtype (scratch 2-3;
 * slot 4 is a staging row). */
static const void *dve_pred_src(struct isa_exec_ctx *ctx, const struct ap_view *d,
                                const struct ap_view *s, uint32_t r)
{
    void *bytes = dve_wide(ctx, 2);
    if (dve_same_bits(d->dtype, s->dtype)) {
        dve_row_gather(s, r, bytes);
    } else {
        float *f = core_scratch(ctx, 4);
        ap_row_load(s, r, f);
        (void)num_store_f32(bytes, d->dtype, 1, f, d->elems, NULL);
    }
    return bytes;
}

/* dst = src where (predicate != 0) != reverse_pred; elsewhere dst keeps its value. */
emu_status isa_exec_tensor_copy_predicated(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_copy_predicated, dst),
                                      ISA_AP_SLOT(tensor_copy_predicated, predicate)};
    const unsigned src_slot = ISA_AP_SLOT(tensor_copy_predicated, src);
    struct ap_view v[3];
    bool has_src = ap_present(insn, src_slot);
    bool rev = ISA_ARG_FLAG(insn, tensor_copy_predicated, reverse_pred);
    emu_status st = dve_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = dve_shape(ctx, "predicate", &v[1], "dst", &v[0]);
    if (st == EMU_OK && has_src && (st = ap_bind(ctx, src_slot, &v[2])) == EMU_OK)
        st = dve_shape(ctx, "src", &v[2], "dst", &v[0]);
    if (st != EMU_OK)
        return st;
    uint64_t imm = 0;
    (void)num_from_f32(v[0].dtype, &imm, ISA_ARG_F32(insn, tensor_copy_predicated, src), NULL, 0);
    void *row = dve_wide(ctx, 0);
    float *pred = core_scratch(ctx, 4);
    uint8_t *keep = (uint8_t *)(void *)core_scratch(ctx, 5);
    for (uint32_t r = 0; r < v[0].rows; r++) {
        const void *src = has_src ? dve_pred_src(ctx, &v[0], &v[2], r) : (const void *)&imm;
        ap_row_load(&v[1], r, pred);
        for (size_t i = 0; i < v[0].elems; i++)
            keep[i] = (pred[i] != 0.0f) != rev;
        dve_row_gather(&v[0], r, row);
        dve_select(row, src, has_src ? 1 : 0, keep, v[0].esize, v[0].elems);
        dve_row_scatter(&v[0], r, row);
    }
    return EMU_OK;
}

/* ---- memset ---------------------------------------------------------------------------- */

/* The double x as one element of an integer dtype: RNE, saturated, NaN 0. */
static uint64_t dve_double_to_int(uint32_t dt, double x)
{
    unsigned bits = dve_dtype_bits(dt);
    bool sign = dt == ISA_DT_I8 || dt == ISA_DT_I16 || dt == ISA_DT_I32 || dt == ISA_DT_I64;
    x = nearbyint(x);
    if (x != x)
        return 0;
    if (sign) {
        double lim = ldexp(1.0, (int)bits - 1);
        int64_t max = (int64_t)(UINT64_MAX >> (65 - bits));
        return x >= lim ? (uint64_t)max : x < -lim ? (uint64_t)(-max - 1) : (uint64_t)(int64_t)x;
    }
    uint64_t umax = UINT64_MAX >> (64 - bits);
    return x >= ldexp(1.0, (int)bits) ? umax : x <= 0.0 ? 0u : (uint64_t)x;
}

/* The double x as one element of dtype dt (little-endian bytes in *out). */
static void dve_encode_double(uint32_t dt, double x, uint64_t *out)
{
    *out = 0;
    if (dve_dtype_is_int(dt)) {
        *out = dve_double_to_int(dt, x);
        return;
    }
    float f = fabs(x) >= 0x1p128 ? (float)copysign(INFINITY, x) : (float)x;
    (void)num_from_f32(dt, out, f, NULL, 0);
}

/* Every element of dst = value (a double, converted to dst's dtype). */
emu_status isa_exec_memset(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view d;
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(memset, dst), &d);
    if (st != EMU_OK)
        return st;
    uint64_t elem;
    dve_encode_double(d.dtype, ISA_ARG_F64(insn, memset, value), &elem);
    uint8_t *row = (uint8_t *)dve_wide(ctx, 0);
    for (size_t i = 0; i < d.elems; i++)
        memcpy(row + i * d.esize, &elem, d.esize);
    for (uint32_t r = 0; r < d.rows; r++)
        dve_row_scatter(&d, r, row);
    return EMU_OK;
}

/* ---- tensor_reduce ------------------------------------------------------------------------ */

/* Elements per reduced group: the product of the last axes dims of data. */
static emu_status dve_reduce_inner(struct isa_exec_ctx *ctx, const struct isa_ap *ap,
                                   int64_t axes, uint64_t *inner)
{
    if (axes < 1 || axes > ap->ndims)
        return core_fail(ctx, DVE_ERR, "axes %lld: data has %u free dimensions",
                         (long long)axes, ap->ndims);
    *inner = 1;
    for (unsigned d = ap->ndims - (unsigned)axes; d < ap->ndims; d++)
        *inner *= ap->dim[d].count;
    return EMU_OK;
}

static void dve_reduce_f32(struct isa_exec_ctx *ctx, unsigned op, bool neg,
                           const struct ap_view *d, const struct ap_view *x_v, uint64_t inner)
{
    float *res = core_scratch(ctx, 1);
    uint64_t groups = d->elems;
    for (uint32_t r = 0; r < d->rows; r++) {
        const float *x = dve_in_f32(ctx, 0, x_v, r, NULL, 0);
        for (uint64_t g = 0; g < groups; g++)
            res[g] = dve_f32_reduce(op, x + g * inner, inner);
        if (neg)
            for (uint64_t g = 0; g < groups; g++)
                res[g] *= -1.0f;
        ap_row_store(d, r, res);
    }
}

static void dve_reduce_int(struct isa_exec_ctx *ctx, unsigned op, bool neg,
                           const struct ap_view *d, const struct ap_view *x_v, uint64_t inner)
{
    int64_t *x = dve_wide(ctx, 0), *res = dve_wide(ctx, 2);
    unsigned bits = dve_dtype_bits(d->dtype);
    for (uint32_t r = 0; r < d->rows; r++) {
        dve_row_load_i64(x_v, r, x);
        for (uint64_t g = 0; g < d->elems; g++) {
            int64_t v = dve_i64_reduce(op, x + g * inner, inner, bits);
            res[g] = neg ? (int64_t)(0u - (uint64_t)v) : v;
        }
        dve_row_store_i64(d, r, res);
    }
}

/* dst[p, g] = op over group g of the last `axes` free dims of data (negated on request). */
emu_status isa_exec_tensor_reduce(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_reduce, dst),
                                      ISA_AP_SLOT(tensor_reduce, data)};
    struct ap_view v[2];
    unsigned op = ISA_ARG_ENUM(insn, tensor_reduce, op);
    bool neg = ISA_ARG_FLAG(insn, tensor_reduce, negate);
    uint64_t inner = 1;
    emu_status st = dve_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = dve_op_check(ctx, "op", op, DVE_OP_REDUCE);
    if (st == EMU_OK)
        st = dve_reduce_inner(ctx, ISA_ARG_AP(insn, tensor_reduce, data),
                              ISA_ARG_INT(insn, tensor_reduce, axes), &inner);
    if (st != EMU_OK)
        return st;
    if (v[0].rows != v[1].rows || v[0].elems * inner != v[1].elems)
        return core_fail(ctx, DVE_ERR, "dst is [%u, %llu] but reducing %llu of the data's [%u, "
                         "%llu] elements gives [%u, %llu]", v[0].rows,
                         (unsigned long long)v[0].elems, (unsigned long long)inner, v[1].rows,
                         (unsigned long long)v[1].elems, v[1].rows,
                         (unsigned long long)(v[1].elems / inner));
    if (neg && (dve_op_props(op) & DVE_OP_BITVEC))
        return core_fail(ctx, DVE_ERR, "negate needs an arithmetic operator, not %s",
                         dve_op_name(op));
    if (dve_all_int(v, 2) && (dve_op_props(op) & DVE_OP_INT)) {
        dve_reduce_int(ctx, op, neg, &v[0], &v[1], inner);
        return EMU_OK;
    }
    st = dve_op_check(ctx, "op", op, DVE_OP_F32);
    if (st == EMU_OK)
        dve_reduce_f32(ctx, op, neg, &v[0], &v[1], inner);
    return st;
}

/* ---- tensor_tensor_scan ---------------------------------------------------------------------- */

/* dst[i] = op1(op0(data0[i], dst[i-1]), data1[i]), dst[-1] = initial; in fp32. */
emu_status isa_exec_tensor_tensor_scan(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[3] = {ISA_AP_SLOT(tensor_tensor_scan, dst),
                                      ISA_AP_SLOT(tensor_tensor_scan, data0),
                                      ISA_AP_SLOT(tensor_tensor_scan, data1)};
    struct dve_two_ops t;
    emu_status st = dve_bind_two_ops(ctx, insn, slots, "data0", "data1",
                                     ISA_AP_SLOT(tensor_tensor_scan, initial),
                                     ISA_F32_SLOT(tensor_tensor_scan, initial), "initial", &t);
    if (st != EMU_OK)
        return st;
    size_t n = t.v[0].elems;
    for (uint32_t r = 0; r < t.v[0].rows; r++) {
        struct dve_two_row row;
        dve_two_row_get(ctx, &t, r, &row);
        float acc = dve_scalar_f32(&t.k, r);
        for (size_t i = 0; i < n; i++) {
            float u = dve_f32_one(t.op0, row.x[i], acc, t.rev0);
            row.w[i] = acc = dve_f32_one(t.op1, u, row.y[i], t.rev1);
        }
        if (row.o == NULL)
            ap_row_store(&t.v[0], r, row.w);
    }
    return EMU_OK;
}

/* ---- accumulating instructions ------------------------------------------------------------------ */

/* Apply reduce_cmd cmd to accumulator *acc with this instruction's row
 * result val (init: the load_reduce value). */
static void dve_acc_apply(unsigned op, unsigned cmd, float *acc, float val, float init)
{
    float id = 0.0f;
    (void)dve_f32_identity(op, &id);
    switch (cmd) {
    case ISA_RCMD_reset: *acc = id; break;
    case ISA_RCMD_reduce: *acc = dve_f32_one(op, *acc, val, false); break;
    case ISA_RCMD_reset_reduce: *acc = dve_f32_one(op, id, val, false); break;
    case ISA_RCMD_load_reduce: *acc = dve_f32_one(op, init, val, false); break;
    default: break; /* idle */
    }
}

/* op must be add, subtract (when allow_sub), multiply, max or min. */
static emu_status dve_acc_op_check(struct isa_exec_ctx *ctx, const char *field, unsigned op,
                                   bool allow_sub)
{
    float id;
    if (dve_f32_identity(op, &id) && (allow_sub || op != ISA_ALU_subtract))
        return EMU_OK;
    return core_fail(ctx, DVE_ERR, "%s %s (%u) is not add, %smultiply, max or min", field,
                     dve_op_name(op), op, allow_sub ? "subtract, " : "");
}

/* tensor_scalar_reduce's optional [P, 1] reduce_res operand. */
static emu_status dve_bind_res(struct isa_exec_ctx *ctx, uint32_t rows, struct ap_view *res,
                               bool *has)
{
    const unsigned slot = ISA_AP_SLOT(tensor_scalar_reduce, reduce_res);
    *has = ap_present(ctx->insn, slot);
    if (!*has)
        return EMU_OK;
    emu_status st = ap_bind(ctx, slot, res);
    if (st == EMU_OK && (res->rows != rows || res->elems != 1))
        st = core_fail(ctx, DVE_ERR, "reduce_res must be [%u, 1]; it is [%u, %llu]", rows,
                       res->rows, (unsigned long long)res->elems);
    return st;
}

/* The operands of tensor_scalar_reduce. */
struct dve_tsr {
    struct ap_view v[2];       /* dst, data */
    struct ap_view res;        /* reduce_res, when has_res */
    bool has_res;              /* reduce_res present */
    struct dve_scalar k;       /* operand0 */
    struct dve_scalar init;    /* reduce_init */
};

static emu_status dve_tsr_bind(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                               struct dve_tsr *t)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_scalar_reduce, dst),
                                      ISA_AP_SLOT(tensor_scalar_reduce, data)};
    emu_status st = dve_bind(ctx, slots, 2, t->v);
    if (st == EMU_OK)
        st = dve_shape(ctx, "data", &t->v[1], "dst", &t->v[0]);
    if (st == EMU_OK)
        st = dve_op_check(ctx, "op0", ISA_ARG_ENUM(insn, tensor_scalar_reduce, op0), DVE_OP_F32);
    if (st == EMU_OK)
        st = dve_acc_op_check(ctx, "reduce_op", ISA_ARG_ENUM(insn, tensor_scalar_reduce, reduce_op),
                              false);
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, ISA_AP_SLOT(tensor_scalar_reduce, operand0),
                             ISA_F32_SLOT(tensor_scalar_reduce, operand0), t->v[0].rows,
                             "operand0", &t->k);
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, ISA_AP_SLOT(tensor_scalar_reduce, reduce_init),
                             ISA_F32_SLOT(tensor_scalar_reduce, reduce_init), t->v[0].rows,
                             "reduce_init", &t->init);
    if (st == EMU_OK)
        st = dve_bind_res(ctx, t->v[0].rows, &t->res, &t->has_res);
    return st;
}

/* dst = data <op0> operand0; the accumulator of each partition takes
 * reduce_op over the row's fp32 results as reduce_cmd says, and
 * reduce_res (optional) receives the accumulator (negated on request). */
emu_status isa_exec_tensor_scalar_reduce(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct dve_tsr t;
    unsigned op0 = ISA_ARG_ENUM(insn, tensor_scalar_reduce, op0);
    unsigned rop = ISA_ARG_ENUM(insn, tensor_scalar_reduce, reduce_op);
    unsigned cmd = ISA_ARG_ENUM(insn, tensor_scalar_reduce, reduce_cmd);
    bool rev0 = ISA_ARG_FLAG(insn, tensor_scalar_reduce, reverse0);
    bool neg = ISA_ARG_FLAG(insn, tensor_scalar_reduce, reduce_res_negate);
    emu_status st = dve_tsr_bind(ctx, insn, &t);
    if (st != EMU_OK)
        return st;
    float *acc = act_acc_regs(ctx);
    size_t n = t.v[0].elems;
    for (uint32_t r = 0; r < t.v[0].rows; r++) {
        float *o = ap_row_f32(&t.v[0], r);
        const float *x = dve_in_f32(ctx, 0, &t.v[1], r, o, n);
        float *w = o != NULL ? o : core_scratch(ctx, 1);
        dve_f32_vk(op0, w, x, dve_scalar_f32(&t.k, r), rev0, n);
        float *a = &acc[dve_part(insn, ISA_AP_SLOT(tensor_scalar_reduce, data), r)];
        dve_acc_apply(rop, cmd, a, dve_f32_reduce(rop, w, n), dve_scalar_f32(&t.init, r));
        if (o == NULL)
            ap_row_store(&t.v[0], r, w);
        float out = neg ? *a * -1.0f : *a;
        if (t.has_res)
            ap_row_store(&t.res, r, &out);
    }
    return EMU_OK;
}

/* The starting register value of a cumulative row. */
static float dve_cum_start(unsigned op1, unsigned cmd, float acc, float imm1)
{
    float id = 0.0f;
    (void)dve_f32_identity(op1, &id);
    return cmd == ISA_RCMD_reset_reduce ? id : cmd == ISA_RCMD_reduce ? acc : imm1;
}

/* reg starts per reduce_cmd; for each element, reg = op1(op0(src, imm0), reg)
 * and dst = reg; the accumulator keeps the last reg. */
emu_status isa_exec_tensor_scalar_cumulative(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    static const unsigned slots[2] = {ISA_AP_SLOT(tensor_scalar_cumulative, dst),
                                      ISA_AP_SLOT(tensor_scalar_cumulative, src)};
    struct ap_view v[2];
    struct dve_scalar k0, k1;
    unsigned op0 = ISA_ARG_ENUM(insn, tensor_scalar_cumulative, op0);
    unsigned op1 = ISA_ARG_ENUM(insn, tensor_scalar_cumulative, op1);
    unsigned cmd = ISA_ARG_ENUM(insn, tensor_scalar_cumulative, reduce_cmd);
    bool rev0 = ISA_ARG_FLAG(insn, tensor_scalar_cumulative, reverse0);
    emu_status st = dve_bind(ctx, slots, 2, v);
    if (st == EMU_OK)
        st = dve_shape(ctx, "src", &v[1], "dst", &v[0]);
    if (st == EMU_OK)
        st = dve_op_check(ctx, "op0", op0, DVE_OP_F32);
    if (st == EMU_OK)
        st = dve_acc_op_check(ctx, "op1", op1, true);
    if (st == EMU_OK && cmd != ISA_RCMD_reset_reduce && cmd != ISA_RCMD_reduce &&
        cmd != ISA_RCMD_load_reduce)
        st = core_fail(ctx, DVE_ERR, "reduce_cmd must be reset_reduce, reduce or load_reduce");
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, ISA_AP_SLOT(tensor_scalar_cumulative, imm0),
                             ISA_F32_SLOT(tensor_scalar_cumulative, imm0), v[0].rows, "imm0", &k0);
    if (st == EMU_OK)
        st = dve_scalar_bind(ctx, ISA_AP_SLOT(tensor_scalar_cumulative, imm1),
                             ISA_F32_SLOT(tensor_scalar_cumulative, imm1), v[0].rows, "imm1", &k1);
    if (st != EMU_OK)
        return st;
    float *acc = act_acc_regs(ctx);
    size_t n = v[0].elems;
    for (uint32_t r = 0; r < v[0].rows; r++) {
        float *o = ap_row_f32(&v[0], r);
        const float *x = dve_in_f32(ctx, 0, &v[1], r, o, n);
        float *w = o != NULL ? o : core_scratch(ctx, 1);
        float *a = &acc[dve_part(insn, ISA_AP_SLOT(tensor_scalar_cumulative, src), r)];
        dve_f32_vk(op0, w, x, dve_scalar_f32(&k0, r), rev0, n);
        *a = dve_f32_scan(op1, w, dve_cum_start(op1, cmd, *a, dve_scalar_f32(&k1, r)), n);
        if (o == NULL)
            ap_row_store(&v[0], r, w);
    }
    return EMU_OK;
}
