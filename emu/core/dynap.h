/*
 * dynap.h: on-chip operands addressed at run time (docs/isa.md, "Run-time
 * offsets" and "Tensor indirection"). Before an instruction runs, each
 * access pattern with a register offset gets its engine's register added
 * to its byte offset, after a check against the shift the pattern allows;
 * each pattern with tensor indirection has its columns gathered into rows
 * of their own (a stage), which the semantics read and write in place of
 * the memory (ap_bind), and after it ran the staged outputs are scattered
 * back to their columns.
 */
#ifndef TRNEMU_EMU_CORE_DYNAP_H
#define TRNEMU_EMU_CORE_DYNAP_H

#include "emu/core/core.h"

/* The gathered operands of one instruction: for each slot with tensor
 * indirection, its rows (num_part rows of its dim[0].count columns,
 * packed), the element offset of each column and its pattern as encoded;
 * NULL elsewhere. */
struct dynap_stage {
    uint8_t *buf[ISA_MAX_AP];      /* the gathered rows */
    uint32_t *off[ISA_MAX_AP];     /* each column's element offset */
    struct isa_ap ap[ISA_MAX_AP];  /* the operand's pattern as encoded */
};

/* *live = insn when no operand of insn moves at run time; else a copy of
 * insn in *buf with every register offset applied (and cleared) and each
 * indirect operand made static for the race checker: from its smallest
 * offset, dyn_max the span of offsets it reached, its index still named
 * in ix; its columns gathered into *stage. A register value outside 0..dyn_max (or
 * not a whole number of the operand's elements), or an index value
 * outside 0..dyn_max, fails with EMU_EXEC_OOB and the cause in ctx->err;
 * a host out of memory with EMU_RESOURCE. The caller then calls
 * dynap_finish, whatever the result. */
emu_status dynap_resolve(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                         struct isa_insn *buf, const struct isa_insn **live,
                         struct dynap_stage *stage);

/* After the semantics ran (ran: it completed, neither failed nor waits to
 * retry): scatter the staged operands it writes back to their columns, in
 * column order (a repeated offset keeps its last column's value); free
 * the stage. */
void dynap_finish(struct isa_exec_ctx *ctx, struct dynap_stage *stage, bool ran);

#endif /* TRNEMU_EMU_CORE_DYNAP_H */
