/*
 * asm.h: the trnemu assembler: assembly text (docs/asm.md) -> neff_model.
 *
 * A source declares a NEFF: its name and header fields, its I/O tensors,
 * constants, scratch and other variables, DMA queues and descriptors, and
 * per engine its instructions in the docs/isa.md syntax (one per line,
 * parsed by isa_text_parse_line), with labels for jump/branch targets and
 * names for semaphores and events. The assembler is fed line by line (or a
 * whole buffer or file) and can be finished any number of times; each
 * finish yields a model that neff_model_store turns into a NEFF with
 * trnemu's marker (feature bit and "trnemu_isa"). Same text, same bytes.
 *
 * Errors never stop the caller: each is recorded as one line
 * "FILE:LINE:COLUMN: cause" (asm_error_text), the faulty line is skipped,
 * and the finish fails. Nothing is logged except by the one-call helpers.
 */
#ifndef TRNEMU_EMU_ASM_H
#define TRNEMU_EMU_ASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "emu/neff/neff_model.h"
#include "emu/status.h"

/* Default cap on the bytes of one constant (inline or from a file). */
#define ASM_DEFAULT_MAX_CONST_BYTES (4ull << 30)
/* Default number of errors recorded before the assembler gives up. */
#define ASM_DEFAULT_MAX_ERRORS 20u

/* How to assemble. Strings are borrowed: they must outlive the context. */
struct asm_opts {
    const char *source_name;         /* name in messages; NULL: "<input>" */
    const char *base_dir;            /* file= paths are relative to it; NULL: cwd */
    const char *const *include_dirs; /* then searched in these, in order */
    size_t n_include_dirs;           /* entries in include_dirs */
    bool no_files;                   /* refuse file= (untrusted input, fuzzing) */
    uint64_t max_const_bytes;        /* largest constant; 0: the default */
    unsigned max_errors;             /* errors kept; 0: the default */
};

struct asm_ctx;

/* A new assembler holding an empty NEFF with one subgraph. opts may be
 * NULL. EMU_RESOURCE when out of memory. */
emu_status asm_new(const struct asm_opts *opts, struct asm_ctx **out);
void asm_free(struct asm_ctx *a);

/* Feed one line (len bytes, no line break needed; a trailing '\n' or
 * "\r\n" is ignored). A line ending in '\' continues on the next one.
 * EMU_INVALID when this line (or the logical line it ends) had an error. */
emu_status asm_line(struct asm_ctx *a, const char *line, size_t len);
/* Feed text holding any number of lines. */
emu_status asm_text(struct asm_ctx *a, const char *text, size_t len);

/* The same declarations as .input/.output, .const and .scratch, for the C
 * builder API; they go into the current subgraph. The constant is stored
 * as a .npy member holding data[0..size), which must be exactly
 * prod(shape) * dtype size bytes. */
emu_status asm_declare_io(struct asm_ctx *a, const char *name, bool is_output, uint32_t dtype,
                          const uint32_t *shape, uint32_t ndim);
emu_status asm_declare_const(struct asm_ctx *a, const char *name, uint32_t dtype,
                             const uint32_t *shape, uint32_t ndim, const void *data,
                             size_t size);
emu_status asm_declare_scratch(struct asm_ctx *a, const char *name, uint64_t size);
/* The same as .neff NAME (at most 255 bytes). */
emu_status asm_declare_name(struct asm_ctx *a, const char *name);

/* Resolve labels, encode the engine streams, apply the header and check
 * the whole model. EMU_INVALID when any error was recorded (now or by an
 * earlier line), EMU_RESOURCE when out of memory. Feeding may go on after
 * a finish; the next finish sees everything. */
emu_status asm_finish(struct asm_ctx *a);
/* The model of the last successful finish (owned by the context, valid
 * until the next feed or asm_free), or NULL. */
const struct neff_model *asm_model(const struct asm_ctx *a);
/* Take the model of the last successful finish; the context can then only
 * be freed. NULL when there is none. */
struct neff_model *asm_take_model(struct asm_ctx *a);

/* Errors recorded so far, each one line "FILE:LINE:COLUMN: cause". */
size_t asm_error_count(const struct asm_ctx *a);
const char *asm_error_text(const struct asm_ctx *a, size_t i);

/* One call: assemble text or a file (opts->source_name and base_dir are
 * derived from path when NULL). Errors are printed to diag, one per line
 * (diag may be NULL). On success *out is a model the caller frees. */
emu_status asm_buffer(const char *text, size_t len, const struct asm_opts *opts, FILE *diag,
                      struct neff_model **out);
emu_status asm_file(const char *path, const struct asm_opts *opts, FILE *diag,
                    struct neff_model **out);

/* The header fields a finished assembly has for n_sgs subgraphs when the
 * source gives no .header (the disassembler prints only what differs). */
void asm_default_info(uint32_t n_sgs, struct neff_model_info *out);

/* Store a model as NEFF bytes (malloc'd, the caller frees). */
emu_status asm_neff_bytes(const struct neff_model *m, uint8_t **bytes, size_t *size);

/* Read a whole file into a malloc'd buffer (NUL-terminated, the NUL not
 * counted), at most max bytes (0: no limit). EMU_INVALID when it cannot be
 * read or is too large, EMU_RESOURCE when out of memory; no log. */
emu_status asm_read_file(const char *path, uint64_t max, uint8_t **data, size_t *size);

#endif
