/*
 * snap_query.h: reading a snapshot file without a runtime, for the
 * `trnemu snapshot` tool: the list of snapshots, one snapshot's objects
 * and memory regions, tensor bytes, the chunk list of a region (for
 * diffs), and removing snapshots and unreferenced chunks.
 *
 * Rows are checked as in a restore; a malformed one gives NRT_INVALID with
 * one log line. Strings are copied (truncated to the field sizes).
 */
#ifndef TRNEMU_STORE_SNAP_QUERY_H
#define TRNEMU_STORE_SNAP_QUERY_H

#include <stddef.h>
#include <stdint.h>

#include "store/chunk.h"
#include "store/snapshot.h"

/* One row of the snapshot table. */
struct snapq_snapshot {
    int64_t id;              /* snapshot id */
    char created[40];        /* UTC time, ISO 8601 */
    char reason[128];        /* why it was taken */
    int64_t call_seq;        /* call it precedes in the call log, -1 if none */
    int64_t pid;             /* process that saved it */
    char profile[64];        /* instance type */
    int64_t lnc;             /* LNC size */
    char visible[256];       /* machine-wide VNC ids, "0,1,..." (truncated) */
    uint64_t chunk_size;     /* chunk size of its memory */
    uint64_t logical;        /* bytes of non-zero memory chunks it holds */
    uint64_t stored;         /* bytes it added to the file */
};

/* One memory region of a snapshot. */
struct snapq_region {
    int64_t id;              /* region id within the snapshot */
    char kind[8];            /* "hbm", "sbuf", "psum", "host" */
    int64_t chip;            /* chip (-1 for host) */
    int64_t vnc;             /* machine-wide VNC of a core's memory, else -1 */
    int64_t core;            /* physical core within the VNC, else -1 */
    uint64_t size;           /* bytes the memory holds */
    uint64_t chunks;         /* chunks stored for it */
    uint64_t bytes;          /* their raw bytes */
    uint64_t encoded;        /* their encoded bytes (shared ones counted too) */
};

/* One tensor, with where its bytes are and what type they hold. */
struct snapq_tensor {
    uint64_t handle;         /* pointer value in the saving process */
    char name[128];          /* its name */
    int64_t placement;       /* nrt_tensor_placement_t */
    int64_t vnc;             /* process-local VNC, -1 for none */
    uint64_t size;           /* bytes */
    int64_t storage_kind;    /* 1 HBM, 2 host, 3 user buffer; 0 for none */
    int64_t chip;            /* HBM: chip */
    uint64_t addr;           /* HBM: chip-relative address of byte 0 */
    int64_t region;          /* region holding the bytes, -1 for none */
    uint64_t region_off;     /* offset of byte 0 in that region */
    uint64_t region_size;    /* size of that region */
    uint32_t dtype;          /* NRT dtype from a model I/O it is bound to, 0 if unknown */
    char shape[128];         /* that I/O's shape ("128,512"), "" if unknown */
    char bound_as[128];      /* the I/O name, "" if unknown */
};

/* One model. */
struct snapq_model {
    uint64_t handle;         /* pointer value in the saving process */
    char name[128];          /* NEFF name */
    int64_t vnc;             /* process-local VNC */
    uint64_t executions;     /* completed executions */
    uint64_t neff_size;      /* NEFF bytes */
    uint64_t hbm_bytes;      /* device memory it holds */
    uint64_t nio;            /* inputs and outputs */
};

/* One tensor set entry. */
struct snapq_entry {
    uint64_t set;            /* the set's handle */
    char name[128];          /* entry name */
    uint64_t tensor;         /* tensor handle it names */
};

/* One stored chunk of a region (for diffs). */
struct snapq_chunk {
    uint64_t off;            /* offset in the region */
    uint64_t len;            /* raw bytes */
    struct chunk_hash hash;  /* content hash */
};

NRT_STATUS snapq_snapshots(struct snap_db *db, struct snapq_snapshot **out, size_t *n);
NRT_STATUS snapq_snapshot(struct snap_db *db, int64_t id, struct snapq_snapshot *out);
NRT_STATUS snapq_regions(struct snap_db *db, int64_t id, struct snapq_region **out, size_t *n);
NRT_STATUS snapq_tensors(struct snap_db *db, int64_t id, struct snapq_tensor **out, size_t *n);
NRT_STATUS snapq_models(struct snap_db *db, int64_t id, struct snapq_model **out, size_t *n);
NRT_STATUS snapq_entries(struct snap_db *db, int64_t id, struct snapq_entry **out, size_t *n);
NRT_STATUS snapq_chunks(struct snap_db *db, int64_t id, int64_t region, struct snapq_chunk **out,
                        size_t *n);

/* Bytes [off, off+len) of a region (absent chunks read as zero), hashes
 * checked. */
NRT_STATUS snapq_read(struct snap_db *db, int64_t id, int64_t region, uint64_t size,
                      uint64_t off, uint64_t len, uint8_t *buf);

/* Remove snapshot id (all its rows; chunks stay until snapq_gc). */
NRT_STATUS snapq_remove(struct snap_db *db, int64_t id);
/* Drop chunks and NEFFs no snapshot references, then compact the file.
 * Reports what was dropped. */
NRT_STATUS snapq_gc(struct snap_db *db, uint64_t *chunks, uint64_t *bytes);

#endif
