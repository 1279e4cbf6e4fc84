/*
 * tensor_set.h: named collections of tensors (nrt_tensor_set_t).
 *
 * A set maps names to tensor pointers; it does not own the tensors.
 * Sets are plain host containers: they work before nrt_init and after
 * nrt_close. A tensor freed while still in a set is detected on lookup.
 */
#ifndef TRNEMU_DEVICES_TENSOR_SET_H
#define TRNEMU_DEVICES_TENSOR_SET_H

#include <stddef.h>

#include "nrt/nrt.h"

NRT_STATUS tensor_set_allocate(nrt_tensor_set_t **out);
/* Destroy a set (not its tensors); false when s is not a live set. */
bool tensor_set_destroy(nrt_tensor_set_t *s);
/* Add, or replace the tensor under an existing name. */
NRT_STATUS tensor_set_add(nrt_tensor_set_t *s, const char *name, nrt_tensor_t *t);
/* NRT_FAILURE when the name is absent (documented; not logged here: the
 * caller says what was missing), NRT_INVALID (logged) when the set is not
 * live or the tensor under that name has been freed. */
NRT_STATUS tensor_set_get(nrt_tensor_set_t *s, const char *name, nrt_tensor_t **out);

/* Iterate: number of entries, and the i-th name/tensor (for execute).
 * Both return 0/NULL-free answers only for a live set. */
NRT_STATUS tensor_set_size(const nrt_tensor_set_t *s, size_t *n);
NRT_STATUS tensor_set_entry(const nrt_tensor_set_t *s, size_t i, const char **name,
                            nrt_tensor_t **t);

/* ---- snapshots (devices/runtime/state.c) --------------------------------------- */

/* One live set as a snapshot records it. */
struct tensor_set_record {
    const nrt_tensor_set_t *handle;  /* the set */
    size_t n;                        /* entries */
    char **names;                    /* owned copies, insertion order */
    nrt_tensor_t **tensors;          /* the tensor of each entry (maybe freed since) */
};

/* Every live set, sorted by handle; free with tensor_set_records_free. */
NRT_STATUS tensor_set_records(struct tensor_set_record **out, size_t *n);
void tensor_set_records_free(struct tensor_set_record *r, size_t n);
/* Append an entry without checking that t is live (restore of an entry
 * whose tensor had been freed: a later lookup reports it as freed). */
NRT_STATUS tensor_set_restore_entry(nrt_tensor_set_t *s, const char *name, nrt_tensor_t *t);

#endif
