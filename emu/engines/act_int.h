/*
 * act_int.h: helpers shared by the activation-engine semantics
 * (exec_act.c) and the random-number ops (act_rng.c): scalar-or-[P,1]
 * operands, paired operand binding, raw element walks. Internal to emu/.
 */
#ifndef TRNEMU_EMU_ACT_INT_H
#define TRNEMU_EMU_ACT_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "emu/core/ap.h"
#include "emu/core/core.h"

/* An ISA_APF operand: a [P,1] access pattern (one value per row) when
 * present, else the fp32 immediate. */
struct act_scalar {
    bool vec;             /* the access pattern is present */
    float imm;            /* the immediate when !vec */
    struct ap_view view;  /* the pattern when vec */
};

/* The mnemonic of the current instruction, for messages. */
const char *act_op_name(const struct isa_exec_ctx *ctx);

/* Bind the APF field in ap[slot] / fimm[fslot] for an instruction of rows
 * rows; what names it in messages. EMU_EXEC_ERR unless the
 * pattern is [rows, 1]; errors of ap_bind. */
emu_status act_scalar_bind(struct isa_exec_ctx *ctx, unsigned slot, unsigned fslot, uint32_t rows,
                           const char *what, struct act_scalar *s);

/* The operand's value for row r, as fp32. */
float act_scalar_at(const struct act_scalar *s, uint32_t r);

/* EMU_EXEC_ERR when a row of v does not fit a scratch row
 * (only HBM rows can be that long). */
emu_status act_check_row(struct isa_exec_ctx *ctx, const struct ap_view *v);

/* Bind ap[dst_slot] and ap[src_slot], which must have the same rows and
 * elements per row, each row fitting a scratch row
 * (EMU_EXEC_ERR otherwise). */
emu_status act_bind_pair(struct isa_exec_ctx *ctx, unsigned dst_slot, unsigned src_slot,
                         struct ap_view *dst, struct ap_view *src);

/* Bind an optional [rows, 1] result pattern in ap[slot]; *present says
 * whether it was given. */
emu_status act_bind_column(struct isa_exec_ctx *ctx, unsigned slot, uint32_t rows,
                           const char *what, struct ap_view *v, bool *present);

/* Run BODY with P (uint8_t *) at each element of row R of view V, in
 * pattern order, and K (uint64_t) its index in the row: AP_FOR_RUNS
 * (emu/core/ap.h), one element at a time. */
#define ACT_EACH_ELEM(V, R, P, K, BODY)                                        \
    AP_FOR_RUNS((V), (R), {                                                  \
        for (uint64_t act_e_ = 0; act_e_ < run_n; act_e_++) {                \
            uint8_t *P = run_ptr + (int64_t)act_e_ * run_step;               \
            uint64_t K = run_first + act_e_;                                 \
            BODY;                                                            \
        }                                                                    \
    })

#endif
