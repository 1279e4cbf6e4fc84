/*
 * dynap.h: on-chip operands addressed at run time (docs/isa.md, "Run-time
 * offsets"): before an instruction runs, each access pattern with a
 * register offset gets its engine's register added to its byte offset,
 * after a check against the shift the pattern allows.
 */
#ifndef TRNEMU_EMU_CORE_DYNAP_H
#define TRNEMU_EMU_CORE_DYNAP_H

#include "emu/core/core.h"

/* *live = insn when no operand of insn has a register offset; else a copy
 * of insn in *buf with every such offset applied (and cleared), *live =
 * buf. A register value outside 0..dyn_max, or not a whole number of the
 * operand's elements, fails with EMU_EXEC_OOB and the cause in ctx->err. */
emu_status dynap_resolve(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                         struct isa_insn *buf, const struct isa_insn **live);

#endif /* TRNEMU_EMU_CORE_DYNAP_H */
