/*
 * exec_act.c: semantics of the activation-engine instructions
 * (activation, activation_reduce, activate2) and of the Vector Engine's
 * exponential and reciprocal. The random-number ops are in act_rng.c.
 *
 * Each is one pipeline per partition row (struct act_job): the input row
 * as fp32; activate2's op0/op1 stage when it is not a plain scale and bias;
 * func(x * scale + bias) by act_math.c (multiply and add each rounded to
 * fp32, no FMA); the fp32 results stored into dst with RNE; then the fp32
 * results folded into the engine's accumulator register of the row's
 * partition (act_acc.h) as reduce_cmd says:
 *
 *   reset:        reg = identity of reduce_op (0 for add)
 *   reduce:       reg = reduce_op(reg, reduce_op over the row)
 *   reset_reduce: reset, then reduce
 *   load_reduce:  reg = reduce_init (exponential only), then reduce
 *   idle:         reg unchanged
 *
 * and finally, when reduce_res is given, reduce_res[row] = reg.
 *
 * A job writing 1 MiB or more that leaves the accumulator idle, rounds
 * its stores to nearest, and whose rows read no bytes another row writes
 * runs its rows in parts of 16 on several host threads (emu/core/par.h):
 * each row is then computed alone, with the same bits.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <string.h>

#include "emu/core/par.h"
#include "emu/engines/act_acc.h"
#include "emu/engines/act_int.h"
#include "emu/engines/act_math.h"
#include "emu/isa/isa_args.h"

#define ACT_PAR_MIN_BYTES (1u << 20) /* output bytes from which a job is split */
#define ACT_PAR_ROWS 16u             /* rows per part of a split job */

/* Where a row's scale and bias come from. */
enum act_affine_src {
    ACT_AFF_OPERANDS = 0, /* the scale and bias operands (activation) */
    ACT_AFF_IMMS = 1,     /* activate2's op0/imm0, op1/imm1 folded into them */
    ACT_AFF_GENERAL = 2,  /* activate2's ops applied element-wise first */
};

/* One activation-type instruction, its fields decoded and bound. */
struct act_job {
    unsigned func;               /* ISA_ACT_* */
    struct ap_view dst;          /* output */
    struct ap_view data;         /* input */
    int32_t lane0;               /* partition of data row 0 */
    int32_t lane_step;           /* partitions between data rows */
    enum act_affine_src affine;  /* what scale and bias are */
    struct act_scalar scale;     /* multiplier (ACT_AFF_OPERANDS) */
    struct act_scalar bias;      /* addend (ACT_AFF_OPERANDS) */
    bool bias_neg;               /* bias is subtracted (exponential's max_value) */
    struct act_scalar alpha;     /* prelu slope (activate2's relu_param) */
    unsigned op[2];              /* activate2: op0, op1 (ISA_ALU_*) */
    bool rev[2];                 /* activate2: reverse0, reverse1 */
    struct act_scalar imm[2];    /* activate2: imm0, imm1 */
    unsigned reduce_op;          /* ISA_ALU_* of the accumulator */
    unsigned reduce_cmd;         /* ISA_RCMD_* */
    bool has_init;               /* the op has reduce_init (exponential) */
    struct act_scalar init;      /* reduce_init */
    bool has_res;                /* reduce_res given */
    struct ap_view res;          /* reduce_res, [rows, 1] */
};

/* A job with no operands bound yet: scale 1, bias -0 (x*1 + -0 == x),
 * alpha 0, accumulator idle. */
static void act_job_init(struct act_job *j, unsigned func)
{
    memset(j, 0, sizeof *j);
    j->func = func;
    j->scale.imm = 1.0f;
    j->bias.imm = -0.0f;
    j->reduce_op = ISA_ALU_add;
    j->reduce_cmd = ISA_RCMD_idle;
}

/* Every op here keeps dst and its input where activation does. */
#define ACT_SLOT_DST ISA_AP_SLOT(activation, dst)
#define ACT_SLOT_IN ISA_AP_SLOT(activation, data)
static_assert(ISA_AP_SLOT(activation_reduce, dst) == ACT_SLOT_DST &&
                  ISA_AP_SLOT(activation_reduce, data) == ACT_SLOT_IN &&
                  ISA_AP_SLOT(activate2, dst) == ACT_SLOT_DST &&
                  ISA_AP_SLOT(activate2, data) == ACT_SLOT_IN &&
                  ISA_AP_SLOT(exponential, dst) == ACT_SLOT_DST &&
                  ISA_AP_SLOT(exponential, src) == ACT_SLOT_IN &&
                  ISA_AP_SLOT(reciprocal, dst) == ACT_SLOT_DST &&
                  ISA_AP_SLOT(reciprocal, data) == ACT_SLOT_IN,
              "the activation ops' dst and input");
/* activation_reduce is activation with a reduction always on. */
static_assert(ISA_AP_SLOT(activation_reduce, bias) == ISA_AP_SLOT(activation, bias) &&
                  ISA_F32_SLOT(activation_reduce, bias) == ISA_F32_SLOT(activation, bias) &&
                  ISA_AP_SLOT(activation_reduce, scale) == ISA_AP_SLOT(activation, scale) &&
                  ISA_F32_SLOT(activation_reduce, scale) == ISA_F32_SLOT(activation, scale) &&
                  ISA_AP_SLOT(activation_reduce, reduce_res) ==
                      ISA_AP_SLOT(activation, reduce_res) &&
                  ISA_SLOT(ENUM, activation_reduce, func) == ISA_SLOT(ENUM, activation, func) &&
                  ISA_SLOT(ENUM, activation_reduce, reduce_op) ==
                      ISA_SLOT(ENUM, activation, reduce_op),
              "activation_reduce's layout");

/* Bind dst and the input and note the input's partitions. */
static emu_status act_job_bind_io(struct isa_exec_ctx *ctx, struct act_job *j)
{
    emu_status st = act_bind_pair(ctx, ACT_SLOT_DST, ACT_SLOT_IN, &j->dst, &j->data);
    j->lane0 = ctx->insn->ap[ACT_SLOT_IN].start_part;
    j->lane_step = ctx->insn->ap[ACT_SLOT_IN].part_step;
    return st;
}

/* Is the accumulator used at all? */
static bool act_job_uses_acc(const struct act_job *j)
{
    return j->reduce_cmd != ISA_RCMD_idle || j->has_res;
}

static const char *act_alu_name(unsigned op)
{
    const char *name = isa_enum_name(ISA_ET_ALU, op);
    return name != NULL ? name : "?";
}

static emu_status act_job_check(struct isa_exec_ctx *ctx, const struct act_job *j)
{
    const char *op = act_op_name(ctx);
    if (!act_math_known(j->func))
        return core_fail(ctx, EMU_EXEC_ERR, "%s: unknown activation function %u",
                         op, j->func);
    if (j->reduce_cmd > ISA_RCMD_load_reduce)
        return core_fail(ctx, EMU_EXEC_ERR, "%s: unknown reduce_cmd %u", op,
                         j->reduce_cmd);
    if (j->reduce_cmd != ISA_RCMD_idle && !act_math_reduce_known(j->reduce_op))
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: reduce_op %s cannot accumulate (add, max, min, abs_max, abs_min)",
                         op, act_alu_name(j->reduce_op));
    if (j->reduce_cmd == ISA_RCMD_load_reduce && !j->has_init)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: reduce_cmd load_reduce needs a reduce_init, which this op lacks", op);
    return EMU_OK;
}

/* ---- activate2's tensor-scalar stage ----------------------------------------- */

/* Fold (x op0 a) op1 b into x * scale + bias when that gives the same
 * bits (a multiply, then one add or subtract); false otherwise. */
static bool act2_affine(const unsigned op[2], const bool rev[2], float a, float b, float *scale,
                        float *bias)
{
    float s = 1.0f, c = -0.0f;
    bool has_add = false;
    switch (op[0]) {
    case ISA_ALU_bypass: break;
    case ISA_ALU_multiply: s = a; break;
    case ISA_ALU_add: c = a; has_add = true; break;
    case ISA_ALU_subtract: /* x - a, or a - x as x * -1 + a */
        s = rev[0] ? -1.0f : 1.0f;
        c = rev[0] ? a : -a;
        has_add = true;
        break;
    default: return false;
    }
    switch (op[1]) {
    case ISA_ALU_bypass: break;
    case ISA_ALU_add:
        if (has_add)
            return false;
        c = b;
        break;
    case ISA_ALU_subtract: /* v - b, or b - v as x * -s + b */
        if (has_add)
            return false;
        s = rev[1] ? -s : s;
        c = rev[1] ? b : -b;
        break;
    case ISA_ALU_multiply:
        if (op[0] != ISA_ALU_bypass)
            return false;
        s = b;
        break;
    default: return false;
    }
    *scale = s;
    *bias = c;
    return true;
}

/* The ALU operators activate2's general stage accepts. */
static bool act2_alu_known(unsigned op)
{
    return op == ISA_ALU_bypass || op == ISA_ALU_add || op == ISA_ALU_subtract ||
           op == ISA_ALU_multiply || op == ISA_ALU_divide || op == ISA_ALU_max ||
           op == ISA_ALU_min;
}

/* a op b in fp32; max and min return NaN when either input is NaN. */
static float act2_alu(unsigned op, float a, float b)
{
    switch (op) {
    case ISA_ALU_add: return a + b;
    case ISA_ALU_subtract: return a - b;
    case ISA_ALU_multiply: return a * b;
    case ISA_ALU_divide: return a / b;
    case ISA_ALU_max: return (a != a || b != b) ? a + b : (a > b ? a : b);
    case ISA_ALU_min: return (a != a || b != b) ? a + b : (a < b ? a : b);
    default: return a;
    }
}

/* y = (x op0 imm0) op1 imm1 for row r (y may be x). */
static void act2_stage(const struct act_job *j, uint32_t r, const float *x, float *y, size_t n)
{
    const float *src = x;
    for (int k = 0; k < 2; k++) {
        if (j->op[k] == ISA_ALU_bypass)
            continue;
        float c = act_scalar_at(&j->imm[k], r);
        for (size_t i = 0; i < n; i++)
            y[i] = j->rev[k] ? act2_alu(j->op[k], c, src[i]) : act2_alu(j->op[k], src[i], c);
        src = y;
    }
    if (src != y)
        memmove(y, src, n * sizeof(float));
}

/* ---- the row pipeline -------------------------------------------------------- */

/* Do n floats at a and b share memory? */
static bool act_overlap(const float *a, const float *b, size_t n)
{
    uintptr_t pa = (uintptr_t)a, pb = (uintptr_t)b, len = n * sizeof(float);
    return pa < pb + len && pb < pa + len;
}

/* Scale and bias of row r. */
static void act_job_affine(const struct act_job *j, uint32_t r, float *scale, float *bias)
{
    *scale = 1.0f;
    *bias = -0.0f;
    if (j->affine == ACT_AFF_OPERANDS) {
        *scale = act_scalar_at(&j->scale, r);
        *bias = act_scalar_at(&j->bias, r);
        *bias = j->bias_neg ? -*bias : *bias;
    } else if (j->affine == ACT_AFF_IMMS) {
        (void)act2_affine(j->op, j->rev, act_scalar_at(&j->imm[0], r),
                          act_scalar_at(&j->imm[1], r), scale, bias);
    }
}

/* Compute and store row r with scratch rows in_s and out_s; returns its
 * fp32 results (n floats). */
static const float *act_job_row(const struct act_job *j, uint32_t r, float *in_s, float *out_s)
{
    size_t n = j->data.elems;
    bool direct;
    float *x = ap_row_get(&j->data, r, in_s, &direct);
    float *out = ap_row_f32(&j->dst, r);
    if (out != NULL && direct && out != x && act_overlap(x, out, n)) {
        memcpy(in_s, x, n * sizeof(float));
        x = in_s;
    }
    if (out == NULL)
        out = out_s;
    if (j->affine == ACT_AFF_GENERAL) {
        act2_stage(j, r, x, in_s, n);
        x = in_s;
    }
    float scale, bias;
    act_job_affine(j, r, &scale, &bias);
    (void)act_math_row(j->func, out, x, n, scale, bias, act_scalar_at(&j->alpha, r));
    if (out == out_s)
        ap_row_store(&j->dst, r, out);
    return out;
}

/* The accumulator register of row r's partition. */
static float *act_job_reg(const struct act_job *j, float *regs, uint32_t r)
{
    int64_t lane = (int64_t)j->lane0 + (int64_t)r * j->lane_step;
    return &regs[(uint64_t)lane % ISA_NUM_PARTITIONS];
}

/* Apply reduce_cmd to row r's register with the row's results. */
static void act_job_fold(const struct act_job *j, float *regs, uint32_t r, const float *out)
{
    float *reg = act_job_reg(j, regs, r);
    unsigned cmd = j->reduce_cmd;
    if (cmd == ISA_RCMD_reset || cmd == ISA_RCMD_reset_reduce)
        *reg = act_math_reduce_identity(j->reduce_op);
    if (cmd == ISA_RCMD_load_reduce)
        *reg = act_scalar_at(&j->init, r);
    if (cmd == ISA_RCMD_reduce || cmd == ISA_RCMD_reset_reduce || cmd == ISA_RCMD_load_reduce)
        act_math_reduce(j->reduce_op, out, j->data.elems, reg);
}

/* ---- splitting across host threads ---------------------------------------------- */

/* Is the job large enough to split, and may its rows run in any order: no
 * accumulator, round-to-nearest stores, no row reading bytes another row
 * writes (through data or a per-partition scalar)? */
static bool act_job_splittable(const struct act_job *j)
{
    if (act_job_uses_acc(j) || j->dst.rnd != NULL || j->data.rows < 2 ||
        (uint64_t)j->dst.rows * j->dst.elems * j->dst.esize < ACT_PAR_MIN_BYTES ||
        !ap_rows_independent(&j->dst, &j->data))
        return false;
    const struct act_scalar *sc[5] = {&j->scale, &j->bias, &j->alpha, &j->imm[0], &j->imm[1]};
    for (int i = 0; i < 5; i++)
        if (sc[i]->vec && !ap_rows_independent(&j->dst, &sc[i]->view))
            return false;
    return true;
}

/* One split job: parts of ACT_PAR_ROWS rows. */
struct act_split {
    const struct act_job *job; /* the instruction */
    atomic_bool no_scratch;    /* a part found no scratch rows */
};

static void act_split_part(void *arg, size_t part)
{
    struct act_split *sp = arg;
    float *in_s = par_scratch(0), *out_s = par_scratch(1);
    if (in_s == NULL || out_s == NULL) {
        atomic_store(&sp->no_scratch, true);
        return;
    }
    uint32_t r0 = (uint32_t)part * ACT_PAR_ROWS, rows = sp->job->data.rows;
    for (uint32_t r = r0; r < r0 + ACT_PAR_ROWS && r < rows; r++)
        (void)act_job_row(sp->job, r, in_s, out_s);
}

static emu_status act_job_split(struct isa_exec_ctx *ctx, const struct act_job *j)
{
    struct act_split sp = {.job = j};
    atomic_init(&sp.no_scratch, false);
    par_for((j->data.rows + ACT_PAR_ROWS - 1) / ACT_PAR_ROWS, act_split_part, &sp);
    if (atomic_load(&sp.no_scratch))
        return core_fail(ctx, EMU_RESOURCE, "out of host memory for a helper thread's "
                         "scratch rows");
    return EMU_OK;
}

static emu_status act_job_run(struct isa_exec_ctx *ctx, const struct act_job *j)
{
    emu_status st = act_job_check(ctx, j);
    if (st != EMU_OK)
        return st;
    if (act_job_splittable(j))
        return act_job_split(ctx, j);
    float *regs = act_job_uses_acc(j) ? act_acc_regs(ctx) : NULL;
    float *in_s = core_scratch(ctx, 0), *out_s = core_scratch(ctx, 1);
    for (uint32_t r = 0; r < j->data.rows; r++) {
        const float *out = act_job_row(j, r, in_s, out_s);
        if (regs != NULL)
            act_job_fold(j, regs, r, out);
    }
    for (uint32_t r = 0; j->has_res && r < j->data.rows; r++)
        ap_row_store(&j->res, r, act_job_reg(j, regs, r));
    return EMU_OK;
}

/* ---- the instructions --------------------------------------------------------- */

/* activation and activation_reduce: dst, data, func, bias, scale; the
 * accumulator fields are set by the callers. */
static emu_status act_bind_activation(struct isa_exec_ctx *ctx, struct act_job *j)
{
    act_job_init(j, ISA_ARG_ENUM(ctx->insn, activation, func));
    emu_status st = act_job_bind_io(ctx, j);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(activation, bias), ISA_F32_SLOT(activation, bias),
                             j->data.rows, "bias", &j->bias);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(activation, scale),
                             ISA_F32_SLOT(activation, scale), j->data.rows, "scale", &j->scale);
    if (st == EMU_OK)
        st = act_bind_column(ctx, ISA_AP_SLOT(activation, reduce_res), j->data.rows,
                             "reduce_res", &j->res, &j->has_res);
    j->reduce_op = ISA_ARG_ENUM(ctx->insn, activation, reduce_op);
    return st;
}

emu_status isa_exec_activation(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct act_job j;
    emu_status st = act_bind_activation(ctx, &j);
    j.reduce_cmd = ISA_ARG_ENUM(insn, activation, reduce_cmd);
    return st != EMU_OK ? st : act_job_run(ctx, &j);
}

emu_status isa_exec_activation_reduce(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct act_job j;
    emu_status st = act_bind_activation(ctx, &j);
    j.reduce_cmd = ISA_RCMD_reset_reduce;
    return st != EMU_OK ? st : act_job_run(ctx, &j);
}

/* activate2's op0/op1 stage: check the operators, decide how to run it. */
static emu_status act2_bind_stage(struct isa_exec_ctx *ctx, struct act_job *j)
{
    const struct isa_insn *insn = ctx->insn;
    j->op[0] = ISA_ARG_ENUM(insn, activate2, op0);
    j->op[1] = ISA_ARG_ENUM(insn, activate2, op1);
    j->rev[0] = ISA_ARG_FLAG(insn, activate2, reverse0);
    j->rev[1] = ISA_ARG_FLAG(insn, activate2, reverse1);
    for (int k = 0; k < 2; k++)
        if (!act2_alu_known(j->op[k]))
            return core_fail(ctx, EMU_EXEC_ERR,
                             "activate2: op%d must be bypass, add, subtract, multiply, divide, "
                             "max or min",
                             k);
    float s, c;
    j->affine = act2_affine(j->op, j->rev, 1.0f, 1.0f, &s, &c) ? ACT_AFF_IMMS : ACT_AFF_GENERAL;
    emu_status st = act_scalar_bind(ctx, ISA_AP_SLOT(activate2, imm0),
                                    ISA_F32_SLOT(activate2, imm0), j->data.rows, "imm0",
                                    &j->imm[0]);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(activate2, imm1), ISA_F32_SLOT(activate2, imm1),
                             j->data.rows, "imm1", &j->imm[1]);
    return st;
}

emu_status isa_exec_activate2(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct act_job j;
    act_job_init(&j, ISA_ARG_ENUM(insn, activate2, func));
    emu_status st = act_job_bind_io(ctx, &j);
    if (st == EMU_OK)
        st = act2_bind_stage(ctx, &j);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(activate2, relu_param),
                             ISA_F32_SLOT(activate2, relu_param), j.data.rows, "relu_param",
                             &j.alpha);
    if (st == EMU_OK)
        st = act_bind_column(ctx, ISA_AP_SLOT(activate2, reduce_res), j.data.rows, "reduce_res",
                             &j.res, &j.has_res);
    j.reduce_op = ISA_ARG_ENUM(insn, activate2, reduce_op);
    j.reduce_cmd = ISA_ARG_ENUM(insn, activate2, reduce_cmd);
    return st != EMU_OK ? st : act_job_run(ctx, &j);
}

/* exponential: dst = exp(src - max_value), summed into the Vector Engine's
 * accumulator as reduce_cmd says. */
emu_status isa_exec_exponential(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct act_job j;
    act_job_init(&j, ISA_ACT_exp);
    emu_status st = act_job_bind_io(ctx, &j);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(exponential, max_value),
                             ISA_F32_SLOT(exponential, max_value), j.data.rows, "max_value",
                             &j.bias);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(exponential, reduce_init),
                             ISA_F32_SLOT(exponential, reduce_init), j.data.rows, "reduce_init",
                             &j.init);
    if (st == EMU_OK)
        st = act_bind_column(ctx, ISA_AP_SLOT(exponential, reduce_res), j.data.rows,
                             "reduce_res", &j.res, &j.has_res);
    j.bias_neg = true;
    j.has_init = true;
    j.reduce_cmd = ISA_ARG_ENUM(insn, exponential, reduce_cmd);
    return st != EMU_OK ? st : act_job_run(ctx, &j);
}

emu_status isa_exec_reciprocal(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct act_job j;
    act_job_init(&j, ISA_ACT_reciprocal);
    emu_status st = act_job_bind_io(ctx, &j);
    return st != EMU_OK ? st : act_job_run(ctx, &j);
}
