/*
 * act_util.c: operand helpers of the activation-engine and random-number
 * semantics (see act_int.h).
 */
#include "emu/engines/act_int.h"

#include <inttypes.h>

const char *act_op_name(const struct isa_exec_ctx *ctx)
{
    const struct isa_op_desc *op = isa_op_lookup(ctx->insn->opcode);
    return op != NULL ? op->name : "?";
}

emu_status act_scalar_bind(struct isa_exec_ctx *ctx, unsigned slot, unsigned fslot, uint32_t rows,
                           const char *what, struct act_scalar *s)
{
    s->vec = ap_present(ctx->insn, slot);
    s->imm = ctx->insn->fimm[fslot];
    if (!s->vec)
        return EMU_OK;
    emu_status st = ap_bind(ctx, slot, &s->view);
    if (st != EMU_OK)
        return st;
    if (s->view.rows != rows || s->view.elems != 1)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: %s must be [%u, 1] (one value per partition), not [%u, %" PRIu64 "]",
                         act_op_name(ctx), what, rows, s->view.rows, s->view.elems);
    return EMU_OK;
}

float act_scalar_at(const struct act_scalar *s, uint32_t r)
{
    if (!s->vec)
        return s->imm;
    float v;
    ap_row_load(&s->view, r, &v);
    return v;
}

emu_status act_check_row(struct isa_exec_ctx *ctx, const struct ap_view *v)
{
    if (v->elems <= CORE_SCRATCH_ELEMS)
        return EMU_OK;
    return core_fail(ctx, EMU_EXEC_ERR,
                     "%s: %" PRIu64 " elements per partition; the engine takes at most %u",
                     act_op_name(ctx), v->elems, CORE_SCRATCH_ELEMS);
}

emu_status act_bind_pair(struct isa_exec_ctx *ctx, unsigned dst_slot, unsigned src_slot,
                         struct ap_view *dst, struct ap_view *src)
{
    emu_status st = ap_bind(ctx, dst_slot, dst);
    if (st == EMU_OK)
        st = ap_bind(ctx, src_slot, src);
    if (st != EMU_OK)
        return st;
    if (!ap_same_shape(dst, src))
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: dst is [%u, %" PRIu64 "] but the input is [%u, %" PRIu64 "]",
                         act_op_name(ctx), dst->rows, dst->elems, src->rows, src->elems);
    return act_check_row(ctx, dst);
}

emu_status act_bind_column(struct isa_exec_ctx *ctx, unsigned slot, uint32_t rows,
                           const char *what, struct ap_view *v, bool *present)
{
    *present = ap_present(ctx->insn, slot);
    if (!*present)
        return EMU_OK;
    emu_status st = ap_bind(ctx, slot, v);
    if (st != EMU_OK)
        return st;
    if (v->rows != rows || v->elems != 1)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: %s must be [%u, 1], not [%u, %" PRIu64 "]", act_op_name(ctx), what,
                         rows, v->rows, v->elems);
    return EMU_OK;
}
