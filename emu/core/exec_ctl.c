/*
 * exec_ctl.c: semantics of the sequencer instructions every engine runs:
 * nop, halt, sem_wait, sem_signal, jump, branch and the register ops.
 */
#include <string.h>

#include "emu/core/ap.h"
#include "emu/isa/isa_args.h"

emu_status isa_exec_nop(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)ctx;
    (void)insn;
    return EMU_OK;
}

emu_status isa_exec_halt(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    ctx->halted = true;
    return EMU_OK;
}

/* Blocks (retried on a later turn) until sem <cmp> value. */
emu_status isa_exec_sem_wait(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    uint32_t have = ctx->core->sem[ISA_ARG_INT(insn, sem_wait, sem) % ISA_NUM_SEMS];
    ctx->blocked = !core_cmp(have, ISA_ARG_ENUM(insn, sem_wait, cmp),
                             (uint32_t)ISA_ARG_INT(insn, sem_wait, value));
    return EMU_OK;
}

emu_status isa_exec_sem_signal(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    uint32_t *sem = &ctx->core->sem[ISA_ARG_INT(insn, sem_signal, sem) % ISA_NUM_SEMS];
    uint32_t v = (uint32_t)ISA_ARG_INT(insn, sem_signal, value);
    switch (ISA_ARG_ENUM(insn, sem_signal, op)) {
    case ISA_SEMOP_set: *sem = v; break;
    case ISA_SEMOP_add: *sem += v; break;
    case ISA_SEMOP_sub: *sem -= v; break;
    }
    return EMU_OK;
}

emu_status isa_exec_jump(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    ctx->next_pc = (size_t)ISA_ARG_INT(insn, jump, target);
    return EMU_OK;
}

emu_status isa_exec_branch(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    int64_t r = ctx->core->reg[ctx->engine][ISA_ARG_INT(insn, branch, reg) % ISA_NUM_REGS];
    if (core_cmp(r, ISA_ARG_ENUM(insn, branch, cmp), ISA_ARG_INT(insn, branch, value)))
        ctx->next_pc = (size_t)ISA_ARG_INT(insn, branch, target);
    return EMU_OK;
}

emu_status isa_exec_reg_move(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    ctx->core->reg[ctx->engine][ISA_ARG_INT(insn, reg_move, rd) % ISA_NUM_REGS] =
        ISA_ARG_INT(insn, reg_move, value);
    return EMU_OK;
}

/* Integer ALU on registers: rd = rs <op> (rt, or imm when rt is -1). */
static int64_t ctl_alu(unsigned op, int64_t a, int64_t b, bool *ok)
{
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    *ok = true;
    switch (op) {
    case ISA_ALU_bypass: return a;
    case ISA_ALU_add: return (int64_t)(ua + ub);
    case ISA_ALU_subtract: return (int64_t)(ua - ub);
    case ISA_ALU_multiply: return (int64_t)(ua * ub);
    case ISA_ALU_divide: *ok = b != 0 && !(a == INT64_MIN && b == -1); return *ok ? a / b : 0;
    case ISA_ALU_mod: *ok = b != 0 && !(a == INT64_MIN && b == -1); return *ok ? a % b : 0;
    case ISA_ALU_max: return a > b ? a : b;
    case ISA_ALU_min: return a < b ? a : b;
    case ISA_ALU_bitwise_and: return a & b;
    case ISA_ALU_bitwise_or: return a | b;
    case ISA_ALU_bitwise_xor: return a ^ b;
    case ISA_ALU_left_shift: return (int64_t)(ua << (ub & 63));
    case ISA_ALU_right_shift: return (int64_t)(ua >> (ub & 63));
    case ISA_ALU_arith_shift_right: return a >> (ub & 63);
    case ISA_ALU_equal: return a == b;
    case ISA_ALU_not_equal: return a != b;
    case ISA_ALU_greater: return a > b;
    case ISA_ALU_greater_equal: return a >= b;
    case ISA_ALU_less: return a < b;
    case ISA_ALU_less_equal: return a <= b;
    }
    *ok = false;
    return 0;
}

emu_status isa_exec_reg_alu(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    int64_t *regs = ctx->core->reg[ctx->engine];
    int64_t rt = ISA_ARG_INT(insn, reg_alu, rt);
    int64_t a = regs[ISA_ARG_INT(insn, reg_alu, rs) % ISA_NUM_REGS];
    int64_t b = rt >= 0 ? regs[rt % ISA_NUM_REGS] : ISA_ARG_INT(insn, reg_alu, imm);
    unsigned op = ISA_ARG_ENUM(insn, reg_alu, op);
    bool ok;
    int64_t v = ctl_alu(op, a, b, &ok);
    if (!ok)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "register ALU op %u cannot be applied to %lld and %lld",
                         op, (long long)a, (long long)b);
    regs[ISA_ARG_INT(insn, reg_alu, rd) % ISA_NUM_REGS] = v;
    return EMU_OK;
}

/* Load the first element of src into a register (floats truncate). */
emu_status isa_exec_reg_load(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view v;
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(reg_load, src), &v);
    if (st != EMU_OK)
        return st;
    const uint8_t *p = v.base;
    int64_t x;
    switch (v.dtype) {
    case ISA_DT_I8: x = *(const int8_t *)p; break;
    case ISA_DT_U8: x = *p; break;
    case ISA_DT_I16: x = *(const int16_t *)(const void *)p; break;
    case ISA_DT_U16: x = *(const uint16_t *)(const void *)p; break;
    case ISA_DT_I32: x = *(const int32_t *)(const void *)p; break;
    case ISA_DT_U32: x = *(const uint32_t *)(const void *)p; break;
    case ISA_DT_I64: case ISA_DT_U64: x = *(const int64_t *)(const void *)p; break;
    default: {
        float f = num_to_f32(v.dtype, p);
        x = f != f ? 0 : f >= 9.2e18f ? INT64_MAX : f <= -9.2e18f ? INT64_MIN : (int64_t)f;
    }
    }
    ctx->core->reg[ctx->engine][ISA_ARG_INT(insn, reg_load, rd) % ISA_NUM_REGS] = x;
    return EMU_OK;
}

/* Store a register into the first element of dst (integer types wrap). */
emu_status isa_exec_reg_store(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view v;
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(reg_store, dst), &v);
    if (st != EMU_OK)
        return st;
    int64_t x = ctx->core->reg[ctx->engine][ISA_ARG_INT(insn, reg_store, rs) % ISA_NUM_REGS];
    uint8_t *p = v.base;
    switch (v.dtype) {
    case ISA_DT_I8: case ISA_DT_U8: *p = (uint8_t)x; break;
    case ISA_DT_I16: case ISA_DT_U16: { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); break; }
    case ISA_DT_I32: case ISA_DT_U32: { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); break; }
    case ISA_DT_I64: case ISA_DT_U64: memcpy(p, &x, 8); break;
    default: (void)num_from_f32(v.dtype, p, (float)x, NULL, 0);
    }
    return EMU_OK;
}
