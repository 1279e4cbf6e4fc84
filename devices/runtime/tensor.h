/*
 * tensor.h: runtime tensors: device (emulated HBM), host and virtual
 * placement, empty tensors, attached user buffers and slices.
 *
 * A tensor views a byte range of a storage. Storages are reference
 * counted: a slice keeps its source's storage alive, as the vendor
 * runtime documents. Every entry point validates the tensor pointer
 * against the handle registry and every offset and size against the
 * tensor, before any byte moves. Callers hold rt_enter().
 */
#ifndef TRNEMU_DEVICES_TENSOR_H
#define TRNEMU_DEVICES_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/machine/machine.h"
#include "nrt/nrt.h"

/* Largest NRT_TENSOR_PLACEMENT_HOST tensor (documented 4 MB limit). */
#define TENSOR_HOST_MAX (4u << 20)

/* Tensor names are kept (truncated) to this length, for messages only. */
#define TENSOR_NAME_LEN 64

enum tensor_storage_kind {
    STORAGE_HBM = 1,   /* a block of emulated HBM */
    STORAGE_HOST = 2,  /* host memory owned by the runtime */
    STORAGE_USER = 3,  /* a caller's buffer (attach_buffer); never freed here */
};

struct tensor_storage {
    _Atomic uint32_t refs;          /* tensors and pins using it */
    enum tensor_storage_kind kind;  /* where the bytes live */
    uint8_t *va;                    /* host address of byte 0 */
    uint64_t size;                  /* usable bytes */
    struct hbm_block block;         /* STORAGE_HBM: the HBM range */
    int32_t gvnc;                   /* STORAGE_HOST: machine-wide VNC charged, -1 none */
};

/* A pinned, consistent copy of what a tensor refers to. */
struct tensor_view {
    struct tensor_storage *st;      /* held reference; NULL for empty tensors */
    uint8_t *va;                    /* host address of the tensor's byte 0 */
    uint64_t size;                  /* tensor size in bytes */
    nrt_tensor_placement_t placement; /* current placement */
    int vnc;                        /* process-local VNC, -1 for none */
    char name[TENSOR_NAME_LEN];     /* the tensor's name, for messages */
};

NRT_STATUS tensor_allocate(nrt_tensor_placement_t placement, int vnc, size_t size,
                           const char *name, nrt_tensor_t **out);
NRT_STATUS tensor_allocate_empty(const char *name, nrt_tensor_t **out);
NRT_STATUS tensor_allocate_slice(const nrt_tensor_t *src, size_t offset, size_t size,
                                 const char *name, nrt_tensor_t **out);
NRT_STATUS tensor_attach_buffer(nrt_tensor_t *t, void *buf, size_t size);
/* Free a tensor; false when t is not a live tensor. */
bool tensor_free(nrt_tensor_t *t);

NRT_STATUS tensor_read(const nrt_tensor_t *t, void *buf, size_t offset, size_t size);
NRT_STATUS tensor_write(nrt_tensor_t *t, const void *buf, size_t offset, size_t size);
NRT_STATUS tensor_copy(const nrt_tensor_t *src, size_t src_off, nrt_tensor_t *dst,
                       size_t dst_off, size_t size);
NRT_STATUS tensor_memset(nrt_tensor_t *t, uint64_t offset, int value, size_t size);
NRT_STATUS tensor_batch(const nrt_tensor_batch_t *batches, uint64_t n, bool write);

size_t tensor_size(const nrt_tensor_t *t);
void *tensor_va(const nrt_tensor_t *t);
NRT_STATUS tensor_alloc_info(const nrt_tensor_t *t, nrt_tensor_device_allocation_info_t *info);

/* Output-completion counters (bumped by executions that write the tensor). */
NRT_STATUS tensor_completion_wait(const nrt_tensor_t *t, int64_t timeout_us, uint64_t expected);
NRT_STATUS tensor_completion_reset(nrt_tensor_t *t);
void tensor_completion_bump(nrt_tensor_t *t);

/* Pin a live tensor: its storage stays valid until tensor_unpin. */
NRT_STATUS tensor_pin(const nrt_tensor_t *t, struct tensor_view *v);
void tensor_unpin(struct tensor_view *v);
/* Is [off, off+size) inside the pinned tensor? NRT_INVALID and one log
 * line naming `what` otherwise. */
NRT_STATUS tensor_view_range(const struct tensor_view *v, const char *what, uint64_t off,
                             uint64_t size);
/* May bytes be copied from s to d (device tensors on one VNC)? */
NRT_STATUS tensor_view_copy_ok(const struct tensor_view *s, const struct tensor_view *d);
/* Is t a live tensor right now? */
bool tensor_is_live(const nrt_tensor_t *t);

/* Free every tensor (nrt_close). */
void tensor_destroy_all(void);

/* ---- snapshots (devices/runtime/state.c) --------------------------------------- */

/* One live tensor as a snapshot records it. */
struct tensor_record {
    const nrt_tensor_t *handle;       /* the tensor */
    char name[TENSOR_NAME_LEN];       /* its name */
    nrt_tensor_placement_t placement; /* current placement */
    int vnc;                          /* process-local VNC, -1 for none */
    uint64_t off;                     /* offset of byte 0 in the storage */
    uint64_t size;                    /* bytes */
    uint64_t completions;             /* output-completion counter */
    struct tensor_storage *st;        /* a held reference; NULL for an empty tensor */
};

/* Every live tensor, sorted by handle, each holding a storage reference.
 * Release with tensor_records_free. */
NRT_STATUS tensor_records(struct tensor_record **out, size_t *n);
void tensor_records_free(struct tensor_record *r, size_t n);
/* A storage to restore into: STORAGE_HBM takes exactly block b; any other
 * kind becomes zeroed runtime-owned host memory of size bytes. */
NRT_STATUS tensor_storage_restore(enum tensor_storage_kind kind, uint64_t size,
                                  const struct hbm_block *b, struct tensor_storage **out);
/* Drop a storage reference (from tensor_storage_restore). */
void tensor_storage_put(struct tensor_storage *s);
/* Re-create a tensor from a record (r->st: its storage, referenced anew). */
NRT_STATUS tensor_restore(const struct tensor_record *r, nrt_tensor_t **out);

#endif
