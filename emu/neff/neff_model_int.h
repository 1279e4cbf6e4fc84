/*
 * neff_model_int.h: helpers shared by the NEFF model files (neff_model.c,
 * neff_build.c, neff_validate.c, neff_load*.c, neff_store.c); not for use
 * outside emu/neff/.
 */
#ifndef TRNEMU_EMU_NEFF_MODEL_INT_H
#define TRNEMU_EMU_NEFF_MODEL_INT_H

#include "emu/neff/neff_model.h"

/* Default member names of an engine's stream and JSON ("PE.bin", ...). */
const char *neff_engine_default_bin(enum neff_engine e);
const char *neff_engine_default_json(enum neff_engine e);

/* Name -> enum; false when unknown. */
bool neff_var_type_parse(const char *s, enum neff_var_type *t);
bool neff_queue_type_parse(const char *s, enum neff_queue_type *t);
bool neff_dma_op_parse(const char *s, enum neff_dma_op *op);

/* Free what the structure owns (not the structure) and zero it. */
void neff_io_clear(struct neff_io *io);
void neff_var_clear(struct neff_var *v);
void neff_queue_clear(struct neff_queue *q);
void neff_ap_clear(struct neff_dma_ap *ap);
void neff_desc_clear(struct neff_dma_desc *d);

/* Append *x to a list, taking ownership of what it owns (on success *x is
 * zeroed; on failure it is left for the caller to clear). EMU_RESOURCE
 * (logged) when out of memory. No duplicate checks. */
emu_status neff_sg_push_var(struct neff_subgraph *sg, struct neff_var *v);
emu_status neff_sg_push_queue(struct neff_subgraph *sg, struct neff_queue *q);
emu_status neff_sg_push_desc(struct neff_subgraph *sg, enum neff_engine e,
                             struct neff_dma_desc *d);
emu_status neff_model_push_io(struct neff_model *m, struct neff_io *io);
/* Append an empty subgraph with this name; NULL on OOM (logged). */
struct neff_subgraph *neff_model_push_sg(struct neff_model *m, const char *name);

/* For a file var holding `file`: set data_off/data_len (.npy payload when
 * file_name ends in ".npy", else all of it). `what` names the member in
 * the log line on error. */
emu_status neff_var_set_payload(struct neff_var *v, const char *what);

/* Does the name end in ".npy"? */
bool neff_is_npy_name(const char *name);

/* neff_model_validate without resolving var_index (the model is not
 * changed). */
emu_status neff_model_check_const(const struct neff_model *m);

/* prod(shape) * dtype size, false on overflow or an unknown dtype. */
bool neff_io_size(uint32_t dtype, const uint32_t *shape, uint32_t ndim, uint64_t *size);

/* strdup that passes NULL through; *ok cleared on OOM. */
char *neff_strdup_opt(const char *s, bool *ok);

#endif
