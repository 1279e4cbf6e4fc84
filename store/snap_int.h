/*
 * snap_int.h: what the files of store/ share: the open file, SQL helpers
 * that turn SQLite results into NRT statuses (one log line each), checked
 * column readers for untrusted rows, and the chunk store.
 */
#ifndef TRNEMU_STORE_SNAP_INT_H
#define TRNEMU_STORE_SNAP_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "emu/progress.h"
#include "store/chunk.h"
#include "store/snapshot.h"

struct snap_db {
    sqlite3 *sql;          /* the connection */
    char *path;            /* file name, for messages */
    pthread_mutex_t lock;  /* snap_db_lock */
    uint32_t chunk_size;   /* chunk size of later saves */
    int policy;            /* enum chunk_policy of later saves */
    bool readonly;         /* opened without write access */
};

/* ---- SQL (sdb.c) ------------------------------------------------------- */

/* Map a failed SQLite result code to a status, with one log line naming
 * what was being done and SQLite's message. */
NRT_STATUS sdb_fail(struct snap_db *db, int rc, const char *what);
/* Step a query that reads the snapshot; false at its end or on an error
 * (then *st is set; nothing is done when *st already holds one). */
bool sdb_next(struct snap_db *db, sqlite3_stmt *s, NRT_STATUS *st);
/* Run statements without results. */
NRT_STATUS sdb_sql(struct snap_db *db, const char *sql, const char *what);
/* Prepare one statement; NULL on failure (logged). */
sqlite3_stmt *sdb_prepare(struct snap_db *db, const char *sql);
/* Step a statement that returns no row (INSERT, UPDATE ...), then reset it. */
NRT_STATUS sdb_done(struct snap_db *db, sqlite3_stmt *s, const char *what);
/* Create the schema in an empty file (inside a transaction). */
NRT_STATUS sdb_create_schema(struct snap_db *db);
/* Check an existing file: our format, a schema this build reads; a
 * writable schema-1 file is upgraded (the manifest table added). */
NRT_STATUS sdb_check_schema(struct snap_db *db);

/* Checked readers of untrusted columns: false (nothing logged) when the
 * column has another type or is out of range. */
bool sdb_int(sqlite3_stmt *s, int col, int64_t lo, int64_t hi, int64_t *out);
bool sdb_u64(sqlite3_stmt *s, int col, uint64_t hi, uint64_t *out);
/* A TEXT column of at most maxlen bytes, else NULL. */
const char *sdb_text(sqlite3_stmt *s, int col, size_t maxlen);
/* A BLOB column (an empty blob may read as NULL); *len its size. false when
 * the column is not a blob. */
bool sdb_blob(sqlite3_stmt *s, int col, const void **p, size_t *len);

/* ---- chunk store (cstore.c) -------------------------------------------- */

struct cpool;
struct cstore_set;
struct cstore_batch;

/* Reusable buffers, statements and workers of one save or read pass. */
struct cstore {
    struct snap_db *db;       /* the file */
    uint32_t chunk_size;      /* chunk size of this pass */
    uint8_t *enc;             /* chunk_bound(chunk_size) bytes */
    uint8_t *tmp;             /* chunk_size bytes of scratch */
    sqlite3_stmt *find;       /* SELECT id FROM chunk WHERE hash=? */
    sqlite3_stmt *put;        /* INSERT INTO chunk */
    sqlite3_stmt *link;       /* INSERT INTO region_chunk */
    sqlite3_stmt *get;        /* the chunks of a region, in offset order */
    sqlite3_stmt *list;       /* the same without their data (restores) */
    sqlite3_blob *blob;       /* restore: the chunk blob being read, or NULL */
    struct cpool *pool;       /* workers hashing, encoding, decoding */
    struct cpool *fpool;      /* decoders of restores through a file (a core left to its writer) */
    struct cstore_set *known; /* hash -> chunk id of the file's chunks (saves) */
    struct cstore_batch *b[2];/* double-buffered batches of chunks */
    const uint64_t *allow;    /* restore: [start, end) pairs a chunk must lie in, or NULL */
    size_t nallow;            /* pairs in allow */
    uint64_t budget;          /* restore: raw bytes the chunks may still write */
    bool restoring;           /* inside cstore_restore_region (budget applies) */
    uint64_t logical;         /* raw bytes of the non-zero chunks saved */
    uint64_t stored;          /* encoded bytes of the chunks this pass added */
    uint64_t chunks;          /* non-zero chunks saved */
    uint64_t new_chunks;      /* of which new to the file */
    struct progress *prog;    /* the terminal's progress line of this pass, or NULL */
};

NRT_STATUS cstore_open(struct cstore *cs, struct snap_db *db, uint32_t chunk_size);
void cstore_close(struct cstore *cs);

/* Save bytes [off, off+len) of memory base (size bytes; region of
 * snapshot snap) in chunks aligned to the chunk size from the region
 * start. touched: look at resident pages only (mincore; base must be
 * page-aligned). */
NRT_STATUS cstore_save_range(struct cstore *cs, int64_t snap, int64_t region, const uint8_t *base,
                             uint64_t size, uint64_t off, uint64_t len, bool touched);

/* Write the chunks of a region into base (size bytes), verifying each
 * chunk's hash; fd >= 0: into that file at the same offsets instead
 * (base unused). NRT_INVALID (one log line) on a bad row or hash. */
NRT_STATUS cstore_restore_region(struct cstore *cs, int64_t snap, int64_t region, uint8_t *base,
                                 uint64_t size, int fd);

/* Read bytes [off, off+len) of a region into buf (absent chunks read as
 * zero), verifying hashes. */
NRT_STATUS cstore_read(struct cstore *cs, int64_t snap, int64_t region, uint64_t size,
                       uint64_t off, uint64_t len, uint8_t *buf);

/* ---- integrity (snap_verify.c) ----------------------------------------- */

/* The manifest of a snapshot: XXH3-128 over all its rows (docs/snapshot.md). */
NRT_STATUS snap_manifest_compute(struct snap_db *db, int64_t snap, struct chunk_hash *out);
/* Compute and store it (the last step of a save). */
NRT_STATUS snap_manifest_write(struct snap_db *db, int64_t snap);
/* Check the manifest and every row of a snapshot; decode: also every
 * chunk against its hash. *legacy: no manifest (older snapshot). */
NRT_STATUS snap_verify_rows(struct snap_db *db, int64_t snap, bool decode, bool *legacy);

/* The kinds of object a snapshot holds, in the one order that saving and
 * restoring both walk them (X(kind) names snap_<kind> in snap_save.c and
 * in snap_restore.c). The order is the restore's: models first, so that
 * their HBM blocks are taken at their recorded places before any tensor
 * takes HBM, then storages, the tensors and sets that use them, and HBM
 * and core memory last, over whatever the re-created objects wrote. */
#define SNAP_KINDS(X) X(options) X(models) X(storages) X(tensors) X(sets) X(hbm) X(cores)

#endif
