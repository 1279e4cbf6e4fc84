/*
 * dynap.c: run-time offsets of on-chip access patterns (dynap.h): the
 * NKI views addressed by a run-time value (ap(scalar_offset=) and a
 * dynamic select() of an SBUF/PSUM tile) move their pattern by a register
 * of the engine that runs the instruction.
 */
#include "emu/core/dynap.h"

#include <inttypes.h>

/* The name of the operand in slot `slot` of insn's op, for messages. */
static const char *dynap_name(const struct isa_insn *insn, unsigned slot)
{
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    for (unsigned f = 0; op != NULL && f < op->nfields; f++)
        if ((op->fields[f].kind == ISA_FK_AP || op->fields[f].kind == ISA_FK_APF) &&
            op->fields[f].slot == slot)
            return op->fields[f].name;
    return "?";
}

/* Apply the register offset of ap (in place). */
static emu_status dynap_apply(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                              unsigned slot, struct isa_ap *ap)
{
    int64_t v = ctx->core->reg[ctx->engine][ap->dyn_reg % ISA_NUM_REGS];
    size_t es = isa_dtype_size(ap->dtype);
    if (v < 0 || v > (int64_t)ap->dyn_max)
        return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its run-time offset (register r%u "
                         "= %" PRId64 " bytes) is outside the 0..%" PRIu32 " bytes its view "
                         "allows", dynap_name(insn, slot), ap->dyn_reg, v, ap->dyn_max);
    if (es > 1 && v % (int64_t)es != 0)
        return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its run-time offset (register r%u "
                         "= %" PRId64 " bytes) is not a whole number of %zu-byte elements",
                         dynap_name(insn, slot), ap->dyn_reg, v, es);
    ap->offset += (uint64_t)v;
    ap->dyn = ISA_DYN_NONE;
    ap->dyn_reg = 0;
    ap->dyn_max = 0;
    return EMU_OK;
}

emu_status dynap_resolve(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                         struct isa_insn *buf, const struct isa_insn **live)
{
    *live = insn;
    if (!isa_insn_dynamic(insn))
        return EMU_OK;
    *buf = *insn;
    for (unsigned i = 0; i < ISA_MAX_AP; i++) {
        if (buf->ap[i].dyn == ISA_DYN_NONE)
            continue;
        emu_status st = dynap_apply(ctx, insn, i, &buf->ap[i]);
        if (st != EMU_OK)
            return st;
    }
    *live = buf;
    return EMU_OK;
}
