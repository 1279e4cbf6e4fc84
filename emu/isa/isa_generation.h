/*
 * isa_generation.h: which NeuronCore generation an instruction needs.
 *
 * Some ops and forms exist only from a given generation on (the NKI ISA
 * reference marks them "NeuronCore-v4 and newer"): the MX instructions,
 * the v4 number formats, activate2, the Vector engine's exponential and
 * random-state access, the abs_max/abs_min/square/relu ALU operators, and
 * nc_matmul's bf16 PSUM results, float8_e4m3fn inputs and moving operands
 * wider than 512 columns; the structured-sparse matmul and the
 * variable-count collectives need NeuronCore-v3 (Trn2), all_to_all_v's
 * receive displacements v4 (the runtime release notes and the
 * nki.collectives reference). A loader checks every instruction against
 * the machine's generation and refuses the program, naming the op and the
 * instruction; the same program runs on a generation that has it.
 * docs/isa.md lists the rules.
 */
#ifndef TRNEMU_EMU_ISA_GENERATION_H
#define TRNEMU_EMU_ISA_GENERATION_H

#include <stddef.h>

#include "emu/isa/isa.h"

/* The lowest NeuronCore version (2, 3 or 4) that runs insn, and in *what
 * (when not NULL) what needs it, e.g. "quantize_mx" or "nc_matmul with a
 * bf16 dst"; writes at most cap bytes. */
unsigned isa_insn_min_gen(const struct isa_insn *insn, char *what, size_t cap);

#endif
