/*
 * state.h: what the snapshot store (store/) sees of the runtime.
 *
 * The store saves and rebuilds the whole device state through this header
 * alone: it enumerates the live objects (tensors with their storages,
 * tensor sets, models with their NEFF bytes and HBM blocks, the cores that
 * exist) in a stable order, finds the HBM ranges that may hold bytes, and
 * re-creates objects at recorded places (an HBM block is re-taken exactly,
 * so the allocators end up as they were: their state is fully determined
 * by the set of live blocks). Callers hold state_enter().
 */
#ifndef TRNEMU_DEVICES_STATE_H
#define TRNEMU_DEVICES_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/runtime/handle.h"
#include "devices/machine/machine.h"
#include "devices/runtime/model.h"
#include "devices/runtime/tensor.h"
#include "devices/runtime/tensor_set.h"
#include "nrt/nrt_status.h"

/* A byte range of one memory (HBM of a chip, SBUF, ...). */
struct state_range {
    uint64_t off;  /* first byte */
    uint64_t len;  /* bytes */
};

/* One loaded model as a snapshot records it. */
struct state_model {
    nrt_model_t *m;            /* pinned until state_release */
    struct hbm_block *blocks;  /* its HBM blocks in load order */
    size_t nblocks;            /* entries in blocks */
};

/* Everything live in the runtime at one moment. */
struct state_view {
    struct machine *mach;              /* the open machine */
    struct tensor_record *tensors;     /* sorted by handle; storages referenced */
    size_t ntensors;                   /* entries in tensors */
    struct tensor_set_record *sets;    /* sorted by handle */
    size_t nsets;                      /* entries in sets */
    struct state_model *models;        /* sorted by handle */
    size_t nmodels;                    /* entries in models */
};

/* Hold the open runtime for a save or a restore (rt_enter: its status,
 * NRT_UNINITIALIZED before nrt_init), and let go (rt_leave). */
NRT_STATUS state_enter(void);
void state_leave(void);
/* Is this thread between state_enter and state_leave? For assert() only. */
bool state_held(void);

/* Is obj a live object of kind k (a handle the runtime still knows)? */
bool state_is_live(const void *obj, enum handle_kind k);

/* The open machine (between state_enter and state_leave). */
struct machine *state_machine(void);

/* Collect the live objects; NRT_RESOURCE when out of host memory. */
NRT_STATUS state_capture(struct state_view *v);
void state_release(struct state_view *v);

/* Stop executions: take the machine's quiesce lock for writing (every
 * execution holds it for reading), so that no execution changes memory
 * while a snapshot reads it; and let go again. */
void state_quiesce(struct machine *m);
void state_resume(struct machine *m);

/* Ranges of chip's HBM this process may have written: for each VNC it
 * owns on the chip, from the start of the VNC's slice up to the end of the
 * highest range its allocator ever handed out. Returns the count, filling
 * at most cap entries (chip-relative offsets). */
size_t state_hbm_ranges(struct machine *m, uint32_t chip, struct state_range *out, size_t cap);

/* The slices of chip's HBM owned by this process (one per owned VNC on
 * the chip): where a restore may write. Count returned, at most cap filled. */
size_t state_hbm_slices(struct machine *m, uint32_t chip, struct state_range *out, size_t cap);

/* A file descriptor (O_RDWR, close-on-exec; the caller closes it) of the
 * shared file behind chip's HBM, at offsets equal to chip addresses; -1
 * when the HBM has no such file. Writing through it skips the page faults
 * of first writes through the mapping. The chip's dma-buf exports end
 * first (their bytes back in the file), so what is written is what the
 * runtime sees. */
int state_hbm_fd(struct machine *m, uint32_t chip);

/* Is the runtime fresh: no tensor, no model, and no HBM ever handed out
 * (so every HBM byte and core is still zero)? Else one log line. */
bool state_is_fresh(struct machine *m);

/* Re-create a model from its NEFF bytes with its blocks at the recorded
 * places, on process-local VNC vnc, with its execution counter. */
NRT_STATUS state_model_restore(const void *neff, size_t size, int vnc,
                               const struct hbm_block *blocks, size_t nblocks,
                               uint64_t executions, nrt_model_t **out);

/* The i-th physical core of machine-wide VNC gvnc, if it was ever created
 * (NULL otherwise); state_core_make creates it. */
struct core *state_core_peek(struct machine *m, uint32_t gvnc, uint32_t i);
NRT_STATUS state_core_make(struct machine *m, uint32_t gvnc, uint32_t i, struct core **out);

/* ---- the runtime calls a restore makes, forwarded (the store calls
 * devices/ through this header alone) ---- */

/* Machine-wide VNC id of a process-local VNC index; -1 when not visible. */
int state_vnc_global(const struct machine *m, int local_vnc);
/* Record that a restored model was loaded by nrt_load_collectives as rank of world. */
void state_model_set_collectives(nrt_model_t *m, uint32_t rank, uint32_t world);
/* Unload a restored model (a failed restore); NRT_INVALID when m is not live. */
NRT_STATUS state_model_unload(nrt_model_t *m);
/* A storage to restore into: STORAGE_HBM takes exactly block b; any other kind becomes
 * zeroed runtime-owned host memory of size bytes. */
NRT_STATUS state_storage_restore(enum tensor_storage_kind kind, uint64_t size,
                                 const struct hbm_block *b, struct tensor_storage **out);
/* Drop a storage reference (from state_storage_restore). */
void state_storage_put(struct tensor_storage *s);
/* Re-create a tensor from a record (r->st: its storage, referenced anew). */
NRT_STATUS state_tensor_restore(const struct tensor_record *r, nrt_tensor_t **out);
/* Free a restored tensor; false when t is not live. */
bool state_tensor_free(nrt_tensor_t *t);
/* A new, empty tensor set to restore into. */
NRT_STATUS state_set_allocate(nrt_tensor_set_t **out);
/* Destroy a restored set (not its tensors); false when s is not live. */
bool state_set_destroy(nrt_tensor_set_t *s);
/* Append an entry without checking that t is live (an entry whose tensor had been
 * freed: a later lookup reports it as freed). */
NRT_STATUS state_set_restore_entry(nrt_tensor_set_t *s, const char *name,
                                   nrt_tensor_t *t);

/* Variable name as a whole number in [min, max] through the runtime's one
 * parser (devices/config/env.c): def when unset; NRT_INVALID with one log
 * line when malformed. */
NRT_STATUS state_env_uint(const char *name, uint64_t min, uint64_t max, uint64_t def,
                          uint64_t *out);

#endif
