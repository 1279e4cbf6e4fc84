/*
 * isa_text.h: trnemu assembly text for one instruction (docs/isa.md).
 *
 *   act.activation dst=sbuf[0:128, 0, [1,512]]:f32 data=psum[0:128, 0, [1,512]]:f32
 *       func=exp scale=0.5 wait=s3>=1 signal=s4+=1      ; comment
 *
 * isa_text_print writes the canonical form of an instruction and
 * isa_text_parse_line reads it back: parse(print(x)) == x for every valid
 * instruction. HBM operands name NEFF variables (hbm:input0[...]) through
 * callbacks, so an assembler can plug in its variable table; without one,
 * variables are written by number (hbm:$3[...]).
 */
#ifndef TRNEMU_EMU_ISA_TEXT_H
#define TRNEMU_EMU_ISA_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/isa/isa.h"

/* How HBM variable names map to var_ids. Any member may be NULL. */
struct isa_text_env {
    /* Resolve name (len bytes) to *var_id: EMU_OK, or EMU_INVALID
     * when there is no such variable. NULL: only hbm:$N is accepted. */
    emu_status (*var_lookup)(void *user, const char *name, size_t len, uint32_t *var_id);
    /* Name to print for var_id, or NULL to print hbm:$N. NULL: always $N. */
    const char *(*var_name)(void *user, uint32_t var_id);
    void *user;  /* passed to both callbacks */
};

/* Where and why a line did not parse. */
struct isa_text_error {
    unsigned column;    /* 1-based column of the offending character */
    char message[160];  /* the cause, one line, no trailing newline */
};

/* Parse one line (ended by NUL or newline; ';' or '#' start a comment)
 * into *out, validated as isa_validate does. EMU_OK, or EMU_INVALID
 * with *err filled (err may be NULL). Does not log: the caller reports
 * the error with its file name and line number. A blank or comment-only
 * line is an error ("empty line"); test with isa_text_is_blank first. */
emu_status isa_text_parse_line(const char *line, const struct isa_text_env *env,
                               struct isa_insn *out, struct isa_text_error *err);

/* True when line holds only blanks and/or a comment. */
bool isa_text_is_blank(const char *line);

/* Print insn in canonical assembly form into buf (NUL-terminated when cap
 * > 0, truncated to cap - 1 characters). Returns the length the full text
 * needs, as snprintf does. env may be NULL. Values an invalid instruction
 * holds that have no name are printed as numbers the parser refuses. */
size_t isa_text_print(const struct isa_insn *insn, const struct isa_text_env *env,
                      char *buf, size_t cap);

#endif
