/*
 * disasm.h: the trnemu disassembler: neff_model -> assembly text.
 *
 * The text opens with a comment block summarising the header and the I/O
 * tensors, then holds the directives and instructions of docs/asm.md, so
 * that assembling it gives back an equal model: for every trnemu NEFF,
 * neff_model_equal(asm(disasm(x)), x). Jump and branch targets become
 * labels; constants are written inline (or, through a callback, as files).
 * A NEFF whose streams are not trnemu ISA (a vendor NEFF) has its metadata
 * written and each stream described by a comment.
 */
#ifndef TRNEMU_EMU_DISASM_H
#define TRNEMU_EMU_DISASM_H

#include <stdbool.h>
#include <stdio.h>

#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"
#include "emu/status.h"

struct disasm_opts {
    const char *source_name;   /* shown in the first comment; NULL: none */
    bool no_index;             /* leave out the "; N" index after instructions */
    /* When set, called for every constant with data: return a path to
     * write as file="PATH" (having stored the member bytes there), or NULL
     * to write the data inline. */
    const char *(*const_file)(void *user, const struct neff_subgraph *sg,
                              const struct neff_var *v);
    void *user;                /* passed to const_file */
};

/* Write the assembly text of m to out. hdr (may be NULL) adds the
 * container's own fields (data size, hash) to the summary. EMU_OK,
 * EMU_INVALID (one log line) when a stream that claims to be trnemu ISA
 * does not decode (the text written so far says where), EMU_RESOURCE. */
emu_status disasm_model(FILE *out, const struct neff_model *m, const struct neff_header *hdr,
                        const struct disasm_opts *opts);

/* Write the outline of a NEFF that is not trnemu ISA (vendor-compiled):
 * header, I/O tensors, and per subgraph its variables, queue sets, engine
 * streams as byte counts and the members not read. f (may be NULL) gives
 * the container's fields and members. EMU_RESOURCE on a write error. */
emu_status disasm_outline(FILE *out, const struct neff_model *m, const struct neff_file *f,
                          const char *source_name);

/* Disassemble m and assemble the text again; true when the result equals
 * m (neff_model_equal). Only meaningful for trnemu NEFFs. When the check
 * fails and diag is not NULL, the reason is written there. */
bool disasm_round_trip(const struct neff_model *m, FILE *diag);

#endif
