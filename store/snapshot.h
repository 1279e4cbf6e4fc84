/*
 * snapshot.h: the snapshot store: one SQLite file holding any number of
 * snapshots of the whole device state (docs/snapshot.md has the schema).
 *
 * A snapshot is everything needed to resume: the machine configuration,
 * each chip's touched HBM and its live blocks, the loaded NEFFs, models,
 * tensors (by the handle values the saving process used), tensor sets,
 * each core's SBUF, PSUM and registers, and the execution options. Memory
 * is stored in fixed-size chunks, LZ4-compressed, named by their XXH3-128
 * hash and shared between snapshots of the file; all-zero chunks and
 * never-written HBM are not stored at all. Every save is one transaction:
 * a process killed during a save leaves the earlier snapshots intact.
 *
 * A file is untrusted input: every value read is checked, and a file
 * that is not a snapshot file, comes from a newer schema, or holds rows
 * that do not fit the machine gives NRT_INVALID with one log line.
 */
#ifndef TRNEMU_STORE_SNAPSHOT_H
#define TRNEMU_STORE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

/* Version of the schema this build writes (PRAGMA user_version). It reads
 * this version and refuses newer ones. */
#define SNAP_SCHEMA_VERSION 2
/* Default chunk size in bytes (from the sweep in bench/bench_store.c). */
#define SNAP_CHUNK_DEFAULT (64u << 10)

struct snap_db;                                   /* an open snapshot file */
struct sqlite3;

/* Open a snapshot file; create: make it (and its schema) when missing.
 * NRT_INVALID when it is not a snapshot file or has a newer schema,
 * NRT_FAILURE when it cannot be opened. */
NRT_STATUS snap_open(const char *path, bool create, struct snap_db **out);
void snap_close(struct snap_db *db);

/* Save the whole state of the open runtime (caller holds state_enter()).
 * reason: "error", "at", "signal", "api", ...; call_seq: index of the call in the
 * call log this snapshot precedes (-1 if none). Executions running at the
 * same time are not stopped (see snap_save_quiesced). */
NRT_STATUS snap_save(struct snap_db *db, const char *reason, int64_t call_seq, int64_t *id_out);
/* snap_save with executions stopped (state_quiesce: it waits for the
 * running ones to end): no execution changes memory during the save. Not
 * from inside an execution. */
NRT_STATUS snap_save_quiesced(struct snap_db *db, const char *reason, int64_t call_seq,
                              int64_t *id_out);

/* Bytes of the file a restore reads through SQLite's memory-mapped I/O
 * (SQLite's default ceiling). */
#define SNAP_RESTORE_MMAP_BYTES 2147418112

/* Rebuild the saved state into the open runtime (freshly initialised with the same
 * profile/config). Fills map: for every restored tensor/tensor set/model, the handle
 * value it had in the saved process -> the new live pointer. id < 0: the newest. */
struct snap_handle { uint64_t old_handle; void *obj; int kind; /* enum handle_kind */ };
struct snap_handle_map { struct snap_handle *v; size_t n; };
NRT_STATUS snap_restore(struct snap_db *db, int64_t id, struct snap_handle_map *map);
void snap_handle_map_free(struct snap_handle_map *map);
/* The new object of an old handle value, NULL when the map has none. */
void *snap_handle_map_find(const struct snap_handle_map *map, uint64_t old_handle);

/* Low-level access to the same SQLite db, for the call log (helper D): */
struct sqlite3 *snap_sqlite(struct snap_db *db);
/* The file's lock: snap_save/snap_restore hold it; hold it around other
 * use of snap_sqlite from several threads. */
void snap_db_lock(struct snap_db *db);
void snap_db_unlock(struct snap_db *db);

/* Tuning (tests and benchmarks): chunk size of later saves (a power of two
 * from 4 KiB to 16 MiB) and the codec policy (enum chunk_policy). */
NRT_STATUS snap_set_chunk_size(struct snap_db *db, uint32_t bytes);
void snap_set_policy(struct snap_db *db, int policy);
/* Largest host-memory tensor storage a restore accepts (default 64 GiB;
 * the fuzzer lowers it). */
void snap_set_host_limit(uint64_t bytes);

/* Newest snapshot id of the file, -1 when it has none. */
NRT_STATUS snap_latest(struct snap_db *db, int64_t *id);

/* Check snapshot id without restoring it: its manifest, every row, and
 * every chunk decoded against its hash (store/snap_verify.c). *legacy is
 * set for a snapshot saved before manifests (schema 1), which only the
 * row checks cover. NRT_INVALID with one log line naming the row. */
NRT_STATUS snap_verify(struct snap_db *db, int64_t id, bool *legacy);

/* ---- the library's triggers (store/snap_env.c) ------------------------- */

/* nrt_init: when TRNEMU_RESTORE=FILE[@ID] is set, restore that snapshot
 * (the newest without @ID) into the runtime just initialised. */
NRT_STATUS snap_env_restore(void);
/* trnemu_snapshot_save / _restore / _lookup (abi/trnemu/trnemu.h). */
NRT_STATUS snap_api_save(const char *path, const char *reason, int64_t *id);
NRT_STATUS snap_api_restore(const char *path, int64_t id);
void *snap_api_lookup(uint64_t old_handle);

#endif
