/*
 * sdb.c: SQL helpers and the schema of the snapshot file (see snap_int.h;
 * docs/snapshot.md documents every table).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "emu/log.h"
#include "store/snap_int.h"

/* The schema (version 2: version 1 plus the manifest table). Tables are WITHOUT ROWID where rows are small
 * and keyed; chunk and neff keep a rowid (their rows hold large blobs).
 * The call log (store/calllog*) adds its own tables to the same file. */
static const char sdb_schema_v1[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE chunk(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    " raw_len INTEGER NOT NULL, codec INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE TABLE neff(id INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE,"
    " size INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE TABLE snapshot(id INTEGER PRIMARY KEY, created TEXT NOT NULL,"
    " reason TEXT NOT NULL, call_seq INTEGER NOT NULL, pid INTEGER NOT NULL,"
    " profile TEXT NOT NULL, lnc INTEGER NOT NULL, visible TEXT NOT NULL,"
    " chunk_size INTEGER NOT NULL, logical_bytes INTEGER NOT NULL,"
    " stored_bytes INTEGER NOT NULL);"
    "CREATE TABLE option(snap INTEGER NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY(snap, name)) WITHOUT ROWID;"
    "CREATE TABLE region(snap INTEGER NOT NULL, id INTEGER NOT NULL, kind TEXT NOT NULL,"
    " chip INTEGER NOT NULL, vnc INTEGER NOT NULL, core INTEGER NOT NULL,"
    " size INTEGER NOT NULL, PRIMARY KEY(snap, id)) WITHOUT ROWID;"
    "CREATE TABLE region_chunk(snap INTEGER NOT NULL, region INTEGER NOT NULL,"
    " off INTEGER NOT NULL, chunk INTEGER NOT NULL,"
    " PRIMARY KEY(snap, region, off)) WITHOUT ROWID;"
    "CREATE TABLE storage(snap INTEGER NOT NULL, id INTEGER NOT NULL, kind INTEGER NOT NULL,"
    " size INTEGER NOT NULL, chip INTEGER, stack INTEGER, vnc INTEGER, off INTEGER,"
    " len INTEGER, region INTEGER, PRIMARY KEY(snap, id)) WITHOUT ROWID;"
    "CREATE TABLE tensor(snap INTEGER NOT NULL, handle INTEGER NOT NULL, name TEXT NOT NULL,"
    " placement INTEGER NOT NULL, vnc INTEGER NOT NULL, size INTEGER NOT NULL,"
    " storage INTEGER, off INTEGER NOT NULL, completions INTEGER NOT NULL,"
    " PRIMARY KEY(snap, handle)) WITHOUT ROWID;"
    "CREATE TABLE tensor_set(snap INTEGER NOT NULL, handle INTEGER NOT NULL,"
    " PRIMARY KEY(snap, handle)) WITHOUT ROWID;"
    "CREATE TABLE tensor_set_entry(snap INTEGER NOT NULL, set_handle INTEGER NOT NULL,"
    " pos INTEGER NOT NULL, name TEXT NOT NULL, tensor INTEGER NOT NULL,"
    " PRIMARY KEY(snap, set_handle, pos)) WITHOUT ROWID;"
    "CREATE TABLE model(snap INTEGER NOT NULL, handle INTEGER NOT NULL, name TEXT NOT NULL,"
    " vnc INTEGER NOT NULL, gvnc INTEGER NOT NULL, neff INTEGER NOT NULL,"
    " executions INTEGER NOT NULL, cc_rank INTEGER NOT NULL, cc_world INTEGER NOT NULL,"
    " PRIMARY KEY(snap, handle)) WITHOUT ROWID;"
    "CREATE TABLE model_block(snap INTEGER NOT NULL, model INTEGER NOT NULL, seq INTEGER NOT NULL,"
    " chip INTEGER NOT NULL, stack INTEGER NOT NULL, vnc INTEGER NOT NULL, off INTEGER NOT NULL,"
    " len INTEGER NOT NULL, PRIMARY KEY(snap, model, seq)) WITHOUT ROWID;"
    "CREATE TABLE model_io(snap INTEGER NOT NULL, model INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " name TEXT NOT NULL, is_output INTEGER NOT NULL, dtype INTEGER NOT NULL,"
    " size INTEGER NOT NULL, shape TEXT NOT NULL,"
    " PRIMARY KEY(snap, model, idx)) WITHOUT ROWID;"
    "CREATE TABLE core(snap INTEGER NOT NULL, vnc INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " gen INTEGER NOT NULL, state BLOB NOT NULL, sbuf INTEGER NOT NULL, psum INTEGER NOT NULL,"
    " PRIMARY KEY(snap, vnc, idx)) WITHOUT ROWID;"
    "CREATE TABLE manifest(snap INTEGER PRIMARY KEY, hash BLOB NOT NULL);";

/* Upgrading a version-1 file: snapshots it already holds keep no manifest
 * (manifest_from names the first snapshot that must have one). */
static const char sdb_upgrade_v2[] =
    "BEGIN IMMEDIATE;"
    "CREATE TABLE IF NOT EXISTS manifest(snap INTEGER PRIMARY KEY, hash BLOB NOT NULL);"
    "INSERT OR REPLACE INTO meta VALUES('manifest_from',"
    " (SELECT coalesce(max(id), 0) + 1 FROM snapshot));"
    "UPDATE meta SET value='2' WHERE key='schema';"
    "PRAGMA user_version=2;"
    "COMMIT;";

NRT_STATUS sdb_fail(struct snap_db *db, int rc, const char *what)
{
    int prim = rc & 0xff;
    LOG_ERROR("STORE", "%s: %s: %s%s", db->path, what,
              db->sql ? sqlite3_errmsg(db->sql) : sqlite3_errstr(rc),
              db->readonly ? " (the file could only be opened read-only)" : "");
    switch (prim) {
    case SQLITE_FULL:
    case SQLITE_NOMEM:
        return NRT_RESOURCE;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_MISMATCH:
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_ERROR:
        return NRT_INVALID;
    default:
        return NRT_FAILURE;
    }
}

bool sdb_next(struct snap_db *db, sqlite3_stmt *s, NRT_STATUS *st)
{
    if (*st != NRT_SUCCESS)
        return false;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        return true;
    if (rc != SQLITE_DONE)
        *st = sdb_fail(db, rc, "reading the snapshot");
    return false;
}

NRT_STATUS sdb_sql(struct snap_db *db, const char *sql, const char *what)
{
    int rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? NRT_SUCCESS : sdb_fail(db, rc, what);
}

sqlite3_stmt *sdb_prepare(struct snap_db *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL);
    if (rc != SQLITE_OK) {
        (void)sdb_fail(db, rc, "querying the file");
        sqlite3_finalize(s);
        return NULL;
    }
    return s;
}

NRT_STATUS sdb_done(struct snap_db *db, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return NRT_SUCCESS;
    return sdb_fail(db, rc, what);
}

NRT_STATUS sdb_create_schema(struct snap_db *db)
{
    char meta[512];
    snprintf(meta, sizeof meta,
             "INSERT INTO meta VALUES('format','trnemu-snapshot'),('schema','%d'),"
             "('chunk_hash','xxh3-128'),('created_by','trnemu'),('manifest_from','0');"
             "PRAGMA user_version=%d;", SNAP_SCHEMA_VERSION, SNAP_SCHEMA_VERSION);
    NRT_STATUS st = sdb_sql(db, "BEGIN IMMEDIATE", "starting the schema");
    if (st != NRT_SUCCESS)
        return st;
    st = sdb_sql(db, sdb_schema_v1, "creating the schema");
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, meta, "writing the schema version");
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "COMMIT", "creating the schema");
    if (st != NRT_SUCCESS)
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

/* One integer from a query; false when it gave none. */
static bool sdb_query_int(struct snap_db *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    bool ok = sqlite3_prepare_v2(db->sql, sql, -1, &s, NULL) == SQLITE_OK &&
              sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER;
    if (ok)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return ok;
}

NRT_STATUS sdb_check_schema(struct snap_db *db)
{
    int64_t ver = 0, fmt = 0;
    if (!sdb_query_int(db, "PRAGMA user_version", &ver))
        return sdb_fail(db, sqlite3_errcode(db->sql), "reading the schema version");
    if (ver > SNAP_SCHEMA_VERSION) {
        LOG_ERROR("STORE", "%s: schema version %" PRId64 " is newer than this trnemu reads (%d)",
                  db->path, ver, SNAP_SCHEMA_VERSION);
        return NRT_INVALID;
    }
    if (ver < 1 ||
        !sdb_query_int(db, "SELECT count(*) FROM meta WHERE key='format' AND "
                           "value='trnemu-snapshot'", &fmt) || fmt != 1) {
        LOG_ERROR("STORE", "%s is not a trnemu snapshot file (schema version %" PRId64
                  ", no format row)", db->path, ver);
        return NRT_INVALID;
    }
    if (ver == 1 && !db->readonly) {
        NRT_STATUS st = sdb_sql(db, sdb_upgrade_v2, "upgrading the file to schema 2");
        if (st != NRT_SUCCESS)
            sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
        return st;
    }
    return NRT_SUCCESS;
}

bool sdb_int(sqlite3_stmt *s, int col, int64_t lo, int64_t hi, int64_t *out)
{
    if (sqlite3_column_type(s, col) != SQLITE_INTEGER)
        return false;
    int64_t v = sqlite3_column_int64(s, col);
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

bool sdb_u64(sqlite3_stmt *s, int col, uint64_t hi, uint64_t *out)
{
    int64_t v;
    if (!sdb_int(s, col, 0, hi > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)hi, &v))
        return false;
    *out = (uint64_t)v;
    return true;
}

const char *sdb_text(sqlite3_stmt *s, int col, size_t maxlen)
{
    if (sqlite3_column_type(s, col) != SQLITE_TEXT)
        return NULL;
    const char *t = (const char *)sqlite3_column_text(s, col);
    if (t == NULL || (size_t)sqlite3_column_bytes(s, col) > maxlen ||
        strlen(t) != (size_t)sqlite3_column_bytes(s, col))
        return NULL;
    return t;
}

bool sdb_blob(sqlite3_stmt *s, int col, const void **p, size_t *len)
{
    if (sqlite3_column_type(s, col) != SQLITE_BLOB)
        return false;
    *p = sqlite3_column_blob(s, col);
    int n = sqlite3_column_bytes(s, col);
    *len = n > 0 ? (size_t)n : 0;
    return *p != NULL || *len == 0;
}
