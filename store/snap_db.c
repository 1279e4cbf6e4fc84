/*
 * snap_db.c: opening and closing a snapshot file, its lock and tuning
 * (see snapshot.h).
 *
 * Files are opened in WAL mode with synchronous=NORMAL: a commit is one
 * append to the write-ahead log, and a process killed at any point loses
 * at most the transaction it was in. Files may come from anywhere, so the
 * connection runs in SQLite's defensive mode with an untrusted schema.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/log.h"
#include "store/snap_int.h"

/* How long a writer waits for another process holding the file. */
#define SNAP_BUSY_MS 10000

static NRT_STATUS snap_open_sql(struct snap_db *db, const char *path, bool create)
{
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    if (!create && access(path, F_OK) != 0) {
        LOG_ERROR("STORE", "%s: no such snapshot file", path);
        return NRT_FAILURE;
    }
    int rc = sqlite3_open_v2(path, &db->sql, flags, NULL);
    if (rc != SQLITE_OK && !create) {
        sqlite3_close(db->sql);
        db->sql = NULL;
        rc = sqlite3_open_v2(path, &db->sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, NULL);
    }
    if (rc != SQLITE_OK)
        return sdb_fail(db, rc, "cannot open");
    sqlite3_extended_result_codes(db->sql, 1);
    sqlite3_busy_timeout(db->sql, SNAP_BUSY_MS);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
    sqlite3_db_config(db->sql, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
    db->readonly = sqlite3_db_readonly(db->sql, "main") == 1;
    return NRT_SUCCESS;
}

/* Is the file still empty (no table at all)? */
static NRT_STATUS snap_is_empty(struct snap_db *db, bool *empty)
{
    sqlite3_stmt *s = sdb_prepare(db, "SELECT count(*) FROM sqlite_master");
    if (s == NULL)
        return NRT_INVALID;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *empty = sqlite3_column_int64(s, 0) == 0;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? NRT_SUCCESS : sdb_fail(db, rc, "reading the file");
}

static NRT_STATUS snap_prepare_file(struct snap_db *db, bool create)
{
    bool empty = false;
    NRT_STATUS st = snap_is_empty(db, &empty);
    if (st != NRT_SUCCESS)
        return st;
    if (!db->readonly) {
        st = sdb_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                      "switching to WAL mode");
        if (st != NRT_SUCCESS)
            return st;
    }
    if (!empty)
        return sdb_check_schema(db);
    if (!create || db->readonly) {
        LOG_ERROR("STORE", "%s is empty: not a snapshot file", db->path);
        return NRT_INVALID;
    }
    return sdb_create_schema(db);
}

NRT_STATUS snap_open(const char *path, bool create, struct snap_db **out)
{
    if (path == NULL || *path == '\0') {
        LOG_ERROR("STORE", "no snapshot file name given");
        return NRT_INVALID;
    }
    struct snap_db *db = calloc(1, sizeof *db);
    if (db == NULL || (db->path = strdup(path)) == NULL) {
        free(db);
        return NRT_RESOURCE;
    }
    pthread_mutex_init(&db->lock, NULL);
    db->chunk_size = SNAP_CHUNK_DEFAULT;
    db->policy = CHUNK_POLICY_AUTO;
    NRT_STATUS st = snap_open_sql(db, path, create);
    if (st == NRT_SUCCESS)
        st = snap_prepare_file(db, create);
    if (st != NRT_SUCCESS) {
        snap_close(db);
        return st;
    }
    *out = db;
    return NRT_SUCCESS;
}

void snap_close(struct snap_db *db)
{
    if (db == NULL)
        return;
    if (db->sql != NULL)
        sqlite3_close_v2(db->sql);
    pthread_mutex_destroy(&db->lock);
    free(db->path);
    free(db);
}

struct sqlite3 *snap_sqlite(struct snap_db *db)
{
    return db->sql;
}

void snap_db_lock(struct snap_db *db)
{
    pthread_mutex_lock(&db->lock);
}

void snap_db_unlock(struct snap_db *db)
{
    pthread_mutex_unlock(&db->lock);
}

NRT_STATUS snap_set_chunk_size(struct snap_db *db, uint32_t bytes)
{
    if (bytes < 4096 || bytes > CHUNK_MAX || (bytes & (bytes - 1)) != 0) {
        LOG_ERROR("STORE", "chunk size %u is not a power of two from 4 KiB to 16 MiB", bytes);
        return NRT_INVALID;
    }
    db->chunk_size = bytes;
    return NRT_SUCCESS;
}

void snap_set_policy(struct snap_db *db, int policy)
{
    db->policy = policy;
}

NRT_STATUS snap_latest(struct snap_db *db, int64_t *id)
{
    sqlite3_stmt *s = sdb_prepare(db, "SELECT max(id) FROM snapshot");
    if (s == NULL)
        return NRT_INVALID;
    int rc = sqlite3_step(s);
    *id = -1;
    if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER)
        *id = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? NRT_SUCCESS : sdb_fail(db, rc, "listing snapshots");
}
