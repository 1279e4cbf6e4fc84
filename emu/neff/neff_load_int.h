/*
 * neff_load_int.h: what the parts of the NEFF loader share (private to
 * emu/neff/): the JSON getters of neff_json.c and the entry points of the
 * subgraph and descriptor readers. The public entry is neff_model_load.
 */
#ifndef TRNEMU_EMU_NEFF_LOAD_INT_H
#define TRNEMU_EMU_NEFF_LOAD_INT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"

/* Where a JSON value sits, for log lines. */
struct neff_jw {
    const char *member;                 /* tar member, e.g. "sg00/def.json" */
    const char *obj;                    /* object inside it, e.g. "var 'w'" */
};

/* ---- neff_json.c: typed getters ------------------------------------------ */

/* Log "member: object: key 'key': why"; returns EMU_INVALID. */
emu_status neff_jerr(const struct neff_jw *w, const char *key, const char *why);
/* Log an out-of-memory line for w; returns EMU_RESOURCE. */
emu_status neff_joom(const struct neff_jw *w);
/* EMU_OK when o (the value w describes) is a JSON object, else one line. */
emu_status neff_jobject(const struct neff_jw *w, json_t *o);
/* The value of key, or NULL when absent (JSON null counts as absent). */
json_t *neff_jfind(json_t *o, const char *key);
/* Unsigned integers; *present (may be NULL) says whether key was there. */
emu_status neff_jget_u64(const struct neff_jw *w, json_t *o, const char *key, bool req,
                         uint64_t *out, bool *present);
emu_status neff_jget_u32(const struct neff_jw *w, json_t *o, const char *key, bool req,
                         uint32_t *out, bool *present);
/* A boolean; absent leaves *out unchanged. */
emu_status neff_jget_bool(const struct neff_jw *w, json_t *o, const char *key, bool *out);
/* A number (integer or real). */
emu_status neff_jget_double(const struct neff_jw *w, json_t *o, const char *key, bool req,
                            double *out);
/* A string, copied into *out (which must be NULL on entry). */
emu_status neff_jget_str(const struct neff_jw *w, json_t *o, const char *key, bool req, char **out);
/* A dtype name; absent leaves *out unchanged. */
emu_status neff_jget_dtype(const struct neff_jw *w, json_t *o, const char *key, bool req,
                           uint32_t *out);
/* An object or array (typed), or NULL when absent. */
emu_status neff_jget_typed(const struct neff_jw *w, json_t *o, const char *key, bool req,
                           bool want_array, json_t **out);
/* Array of unsigned ints (each <= max) with at most max_n entries. */
emu_status neff_jget_uint_array(const struct neff_jw *w, json_t *o, const char *key, bool req,
                                uint64_t max, size_t max_n, uint64_t **out, uint32_t *n);
/* Arrays of u32 and of strings, malloc'd; absent gives NULL and 0. */
emu_status neff_jget_u32_array(const struct neff_jw *w, json_t *o, const char *key, bool req,
                               size_t max_n, uint32_t **out, uint32_t *n);
emu_status neff_jget_str_array(const struct neff_jw *w, json_t *o, const char *key, char ***out,
                               uint32_t *n);
/* Parse a member as a JSON object. Missing members are errors when req. */
emu_status neff_json_member(const struct neff_file *f, const char *name, bool req,
                            json_t **out);

/* ---- neff_load_sg.c, neff_load_desc.c ------------------------------------- */

/* Read subgraph `name` (its def.json and members) into a new subgraph of m. */
emu_status neff_sg_load(const struct neff_file *f, struct neff_model *m, const char *name);
/* Read descriptor object o (dma[index] of engine e's JSON member) and append it
 * to sg. */
emu_status neff_desc_load(struct neff_subgraph *sg, enum neff_engine e, const char *member,
                          size_t index, json_t *o);

#endif
