/*
 * exec_stub.h: EXEC_NOT_EMULATED(op) defines the semantics function of an
 * op that trnemu does not emulate yet: it stops the execution with
 * EMU_EXEC_ERR and a report that names the op.
 */
#ifndef TRNEMU_EMU_EXEC_STUB_H
#define TRNEMU_EMU_EXEC_STUB_H

#include "emu/core/core.h"

#define EXEC_NOT_EMULATED(op)                                                        \
    emu_status isa_exec_##op(struct isa_exec_ctx *ctx, const struct isa_insn *insn);  \
    emu_status isa_exec_##op(struct isa_exec_ctx *ctx, const struct isa_insn *insn)   \
    {                                                                                \
        (void)insn;                                                                  \
        return core_fail(ctx, EMU_EXEC_ERR,                           \
                         "the semantics of " #op " are not emulated yet");           \
    }

#endif
