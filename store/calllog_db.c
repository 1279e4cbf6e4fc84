/*
 * calllog_db.c: the call log's SQLite tables: writing a log (batched into
 * transactions) and reading one back.
 *
 * Tables (all IF NOT EXISTS, beside the snapshot tables of the same file):
 *   log_meta(key, value)            format version, recorder, start time, pid
 *   log_calls(seq, thread, fn, ret, args, ns)   one row per call
 *   log_env(seq, env)               NEURON_* / TRNEMU_* variables from seq on
 *   log_call_buffers(seq, arg, part, dir, size, hash)   buffers of a call
 *   log_buffers(hash, size)         content-addressed bytes, stored once ...
 *   log_buffer_parts(hash, part, data)  ... in parts of CL_PART_BYTES
 * A buffer read by a call always has its bytes stored; one written by a
 * call has its hash, and its bytes when small enough.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "emu/log.h"
#include "store/calllog.h"

/* Bytes per log_buffer_parts row (SQLite blobs stop at 1 GB). */
#define CL_PART_BYTES (16u << 20)

static const char cl_schema[] =
    "CREATE TABLE IF NOT EXISTS log_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS log_calls(seq INTEGER PRIMARY KEY, thread INTEGER NOT NULL,"
    " fn TEXT NOT NULL, ret INTEGER NOT NULL, args BLOB NOT NULL, ns INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS log_env(seq INTEGER PRIMARY KEY, env TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS log_call_buffers(seq INTEGER NOT NULL, arg INTEGER NOT NULL,"
    " part INTEGER NOT NULL, dir INTEGER NOT NULL, size INTEGER NOT NULL, hash BLOB NOT NULL,"
    " PRIMARY KEY(seq, arg, part));"
    "CREATE TABLE IF NOT EXISTS log_buffers(hash BLOB PRIMARY KEY, size INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS log_buffer_parts(hash BLOB NOT NULL, part INTEGER NOT NULL,"
    " data BLOB NOT NULL, PRIMARY KEY(hash, part));";

/* An open log file for writing. */
struct cl_log {
    sqlite3 *db;              /* the connection */
    char *path;               /* file name */
    sqlite3_stmt *ins_call;   /* INSERT INTO log_calls */
    sqlite3_stmt *ins_env;    /* INSERT INTO log_env */
    sqlite3_stmt *ins_cbuf;   /* INSERT INTO log_call_buffers */
    sqlite3_stmt *ins_buf;    /* INSERT OR IGNORE INTO log_buffers */
    sqlite3_stmt *ins_part;   /* INSERT INTO log_buffer_parts */
    bool in_tx;               /* a transaction is open */
    size_t pending;           /* calls written since the last commit */
    char err[256];            /* why the last write or commit failed ("" if none) */
};

static NRT_STATUS db_fail(sqlite3 *db, const char *path, const char *what)
{
    LOG_ERROR("STORE", "%s: %s: %s", path, what, db ? sqlite3_errmsg(db) : "out of memory");
    return NRT_FAILURE;
}

/* A failed write or commit: its cause kept for the caller's one line
 * (cl_log_error), not logged here. */
static NRT_STATUS log_write_fail(struct cl_log *l, const char *what)
{
    snprintf(l->err, sizeof l->err, "%s: %s", what, sqlite3_errmsg(l->db));
    return NRT_FAILURE;
}

static bool db_sql(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
}

void cl_db_unlink(const char *path)
{
    char side[4096];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

static bool meta_put(sqlite3 *db, const char *key, const char *value)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO log_meta(key, value) VALUES(?, ?)",
                                 -1, &st, NULL) == SQLITE_OK &&
              sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) == SQLITE_OK &&
              sqlite3_bind_text(st, 2, value, -1, SQLITE_TRANSIENT) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    return ok;
}

static bool log_meta_init(sqlite3 *db, const char *recorder, bool from_start)
{
    char buf[128], host[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    gethostname(host, sizeof host - 1);
    char ver[16], pid[24];
    snprintf(ver, sizeof ver, "%d", CL_FORMAT_VERSION);
    snprintf(pid, sizeof pid, "%ld", (long)getpid());
    return meta_put(db, "format", ver) && meta_put(db, "recorder", recorder) &&
           meta_put(db, "started", buf) && meta_put(db, "pid", pid) &&
           meta_put(db, "host", host) && meta_put(db, "from_start", from_start ? "1" : "0");
}

static void log_free(struct cl_log *l);

static bool log_prepare(struct cl_log *l)
{
    return sqlite3_prepare_v2(l->db, "INSERT INTO log_calls(seq, thread, fn, ret, args, ns) "
                              "VALUES(?, ?, ?, ?, ?, ?)", -1, &l->ins_call, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(l->db, "INSERT OR REPLACE INTO log_env(seq, env) VALUES(?, ?)", -1,
                              &l->ins_env, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(l->db, "INSERT INTO log_call_buffers(seq, arg, part, dir, size, "
                              "hash) VALUES(?, ?, ?, ?, ?, ?)", -1, &l->ins_cbuf, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(l->db, "INSERT OR IGNORE INTO log_buffers(hash, size) VALUES(?, ?)",
                              -1, &l->ins_buf, NULL) == SQLITE_OK &&
           sqlite3_prepare_v2(l->db, "INSERT INTO log_buffer_parts(hash, part, data) "
                              "VALUES(?, ?, ?)", -1, &l->ins_part, NULL) == SQLITE_OK;
}

long cl_log_owner(const char *path)
{
    if (access(path, F_OK) != 0)
        return 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long pid = 0;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT value FROM log_meta WHERE key = 'pid'", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        pid = strtol((const char *)sqlite3_column_text(st, 0), NULL, 10);
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (pid <= 0 || pid == (long)getpid() || (kill((pid_t)pid, 0) != 0 && errno != EPERM))
        return 0;
    return pid;
}

NRT_STATUS cl_log_open(const char *path, const char *recorder, bool from_start, bool replace,
                       struct cl_log **out)
{
    *out = NULL;
    struct cl_log *l = calloc(1, sizeof *l);
    if (l == NULL || (l->path = strdup(path)) == NULL) {
        free(l);
        LOG_ERROR("STORE", "%s: out of memory", path);
        return NRT_RESOURCE;
    }
    if (replace)
        cl_db_unlink(path);
    int rc = sqlite3_open_v2(path, &l->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc != SQLITE_OK || !db_sql(l->db, "PRAGMA journal_mode=WAL") ||
        !db_sql(l->db, "PRAGMA synchronous=NORMAL") ||
        sqlite3_busy_timeout(l->db, 10000) != SQLITE_OK || !db_sql(l->db, cl_schema) ||
        !log_meta_init(l->db, recorder, from_start) || !log_prepare(l)) {
        db_fail(l->db, path, "cannot create the call log");
        sqlite3 *db = l->db;
        l->db = NULL;
        log_free(l);
        sqlite3_close(db); /* a failed open still gives a handle to close */
        if (rc == SQLITE_OK && replace)
            cl_db_unlink(path);
        return NRT_FAILURE;
    }
    *out = l;
    return NRT_SUCCESS;
}

static void log_free(struct cl_log *l)
{
    sqlite3_finalize(l->ins_call);
    sqlite3_finalize(l->ins_env);
    sqlite3_finalize(l->ins_cbuf);
    sqlite3_finalize(l->ins_buf);
    sqlite3_finalize(l->ins_part);
    free(l->path);
    free(l);
}

void cl_log_abandon(struct cl_log *l)
{
    if (l == NULL)
        return;
    /* A forked child must not touch the parent's connection: leak it. */
    l->db = NULL;
    l->ins_call = l->ins_env = l->ins_cbuf = l->ins_buf = l->ins_part = NULL;
    log_free(l);
}

void cl_log_close(struct cl_log *l)
{
    if (l == NULL)
        return;
    cl_log_commit(l);
    sqlite3 *db = l->db;
    l->db = NULL;
    log_free(l);
    sqlite3_close(db);
}

const char *cl_log_path(const struct cl_log *l)
{
    return l->path;
}

const char *cl_log_error(const struct cl_log *l)
{
    return l->err[0] != '\0' ? l->err : "no error recorded";
}

size_t cl_log_pending(const struct cl_log *l)
{
    return l->pending;
}

NRT_STATUS cl_log_commit(struct cl_log *l)
{
    if (l == NULL || !l->in_tx)
        return NRT_SUCCESS;
    l->in_tx = false;
    l->pending = 0;
    if (!db_sql(l->db, "COMMIT")) {
        NRT_STATUS st = log_write_fail(l, "cannot commit the call log");
        db_sql(l->db, "ROLLBACK");
        return st;
    }
    return NRT_SUCCESS;
}

static bool step_reset(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE;
}

/* Store the bytes of a buffer once (content addressed). */
static bool log_put_bytes(struct cl_log *l, const struct cl_buf *b)
{
    sqlite3_bind_blob(l->ins_buf, 1, b->hash, 16, SQLITE_STATIC);
    sqlite3_bind_int64(l->ins_buf, 2, (sqlite3_int64)b->size);
    if (!step_reset(l->ins_buf))
        return false;
    if (sqlite3_changes(l->db) == 0)
        return true; /* already stored */
    uint64_t off = 0;
    int64_t part = 0;
    do {
        uint64_t n = b->size - off < CL_PART_BYTES ? b->size - off : CL_PART_BYTES;
        sqlite3_bind_blob(l->ins_part, 1, b->hash, 16, SQLITE_STATIC);
        sqlite3_bind_int64(l->ins_part, 2, part++);
        sqlite3_bind_blob64(l->ins_part, 3, (const char *)b->data + off, n, SQLITE_STATIC);
        if (!step_reset(l->ins_part))
            return false;
        off += n;
    } while (off < b->size);
    return true;
}

static bool log_put_buf(struct cl_log *l, int64_t seq, const struct cl_buf *b)
{
    sqlite3_bind_int64(l->ins_cbuf, 1, seq);
    sqlite3_bind_int64(l->ins_cbuf, 2, b->arg);
    sqlite3_bind_int64(l->ins_cbuf, 3, b->part);
    sqlite3_bind_int(l->ins_cbuf, 4, b->dir);
    sqlite3_bind_int64(l->ins_cbuf, 5, (sqlite3_int64)b->size);
    sqlite3_bind_blob(l->ins_cbuf, 6, b->hash, 16, SQLITE_STATIC);
    return step_reset(l->ins_cbuf) && (b->data == NULL || log_put_bytes(l, b));
}

NRT_STATUS cl_log_write(struct cl_log *l, const struct cl_row *r)
{
    if (!l->in_tx) {
        if (!db_sql(l->db, "BEGIN"))
            return log_write_fail(l, "cannot start a transaction");
        l->in_tx = true;
    }
    sqlite3_bind_int64(l->ins_call, 1, r->seq);
    sqlite3_bind_int64(l->ins_call, 2, r->thread);
    sqlite3_bind_text(l->ins_call, 3, r->fn, -1, SQLITE_STATIC);
    sqlite3_bind_int64(l->ins_call, 4, r->ret);
    sqlite3_bind_blob64(l->ins_call, 5, r->args, r->args_len, SQLITE_STATIC);
    sqlite3_bind_int64(l->ins_call, 6, (sqlite3_int64)r->ns);
    bool ok = step_reset(l->ins_call);
    if (ok && r->env != NULL) {
        sqlite3_bind_int64(l->ins_env, 1, r->seq);
        sqlite3_bind_text(l->ins_env, 2, r->env, -1, SQLITE_STATIC);
        ok = step_reset(l->ins_env);
    }
    for (size_t i = 0; ok && i < r->nbufs; i++)
        ok = log_put_buf(l, r->seq, &r->bufs[i]);
    if (!ok)
        return log_write_fail(l, "cannot record a call");
    l->pending++;
    return NRT_SUCCESS;
}

/* ---- reading ---- */

/* A log open for reading. */
struct cl_reader {
    sqlite3 *db;             /* read-only connection */
    char *path;              /* file name */
    sqlite3_stmt *calls;     /* the call cursor */
    sqlite3_stmt *meta;      /* SELECT value FROM log_meta */
    char *meta_value;        /* last value cl_reader_meta returned */
};

static NRT_STATUS reader_bad(struct cl_reader *r, const char *why)
{
    LOG_ERROR("STORE", "%s: %s", r->path, why);
    return NRT_INVALID;
}

NRT_STATUS cl_reader_open(const char *path, struct cl_reader **out)
{
    *out = NULL;
    if (access(path, R_OK) != 0) {
        LOG_ERROR("STORE", "%s: cannot read: %s", path, strerror(errno));
        return NRT_INVALID;
    }
    struct cl_reader *r = calloc(1, sizeof *r);
    if (r == NULL || (r->path = strdup(path)) == NULL) {
        free(r);
        return NRT_RESOURCE;
    }
    NRT_STATUS st = NRT_SUCCESS;
    if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        st = reader_bad(r, "not a SQLite database");
    else if (sqlite3_prepare_v2(r->db, "SELECT value FROM log_meta WHERE key = ?", -1, &r->meta,
                                NULL) != SQLITE_OK)
        st = reader_bad(r, sqlite3_errcode(r->db) == SQLITE_NOTADB
                               ? "not a SQLite database"
                               : "holds no call log (no log_meta table)");
    if (st == NRT_SUCCESS) {
        const char *fmt = cl_reader_meta(r, "format");
        char want[16];
        snprintf(want, sizeof want, "%d", CL_FORMAT_VERSION);
        if (fmt == NULL)
            st = reader_bad(r, "call log without a format version");
        else if (strcmp(fmt, want) != 0) {
            LOG_ERROR("STORE", "%s: call log format %s; this trnemu reads format %s", path, fmt,
                      want);
            st = NRT_INVALID;
        } else if (sqlite3_prepare_v2(r->db, "SELECT seq, thread, fn, ret, args, ns FROM "
                                      "log_calls WHERE seq >= ? ORDER BY seq", -1, &r->calls,
                                      NULL) != SQLITE_OK)
            st = reader_bad(r, "call log without a log_calls table");
    }
    if (st != NRT_SUCCESS) {
        cl_reader_close(r);
        return st;
    }
    *out = r;
    return NRT_SUCCESS;
}

void cl_reader_close(struct cl_reader *r)
{
    if (r == NULL)
        return;
    sqlite3_finalize(r->calls);
    sqlite3_finalize(r->meta);
    sqlite3_close(r->db);
    free(r->meta_value);
    free(r->path);
    free(r);
}

const char *cl_reader_meta(struct cl_reader *r, const char *key)
{
    free(r->meta_value);
    r->meta_value = NULL;
    sqlite3_bind_text(r->meta, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(r->meta) == SQLITE_ROW && sqlite3_column_text(r->meta, 0) != NULL)
        r->meta_value = strdup((const char *)sqlite3_column_text(r->meta, 0));
    sqlite3_reset(r->meta);
    return r->meta_value;
}

bool cl_reader_range(struct cl_reader *r, int64_t *first, int64_t *last)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(r->db, "SELECT min(seq), max(seq), count(*) FROM log_calls", -1,
                                 &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 2) > 0;
    if (ok) {
        *first = sqlite3_column_int64(st, 0);
        *last = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return ok;
}

NRT_STATUS cl_reader_rewind(struct cl_reader *r, int64_t from)
{
    sqlite3_reset(r->calls);
    return sqlite3_bind_int64(r->calls, 1, from) == SQLITE_OK ? NRT_SUCCESS : NRT_FAILURE;
}

int cl_reader_next(struct cl_reader *r, struct cl_read_row *row)
{
    int rc = sqlite3_step(r->calls);
    if (rc == SQLITE_DONE)
        return 0;
    if (rc != SQLITE_ROW) {
        LOG_ERROR("STORE", "%s: cannot read the call log: %s", r->path, sqlite3_errmsg(r->db));
        return -1;
    }
    sqlite3_stmt *s = r->calls;
    row->seq = sqlite3_column_int64(s, 0);
    row->thread = (uint32_t)sqlite3_column_int64(s, 1);
    row->fn = (const char *)sqlite3_column_text(s, 2);
    row->ret = sqlite3_column_int64(s, 3);
    row->args = sqlite3_column_blob(s, 4);
    row->args_len = (size_t)sqlite3_column_bytes(s, 4);
    row->ns = (uint64_t)sqlite3_column_int64(s, 5);
    if (row->fn == NULL || sqlite3_column_type(s, 4) != SQLITE_BLOB) {
        LOG_ERROR("STORE", "%s: call %lld has no function name or argument record", r->path,
                  (long long)row->seq);
        return -1;
    }
    return 1;
}

/* Read the stored bytes of hash into a new buffer of size bytes. */
static NRT_STATUS reader_bytes(struct cl_reader *r, const uint8_t hash[16], uint64_t size,
                               void **data)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT part, data FROM log_buffer_parts WHERE hash = ? "
                           "ORDER BY part", -1, &st, NULL) != SQLITE_OK)
        return reader_bad(r, "call log without a log_buffer_parts table");
    sqlite3_bind_blob(st, 1, hash, 16, SQLITE_STATIC);
    uint8_t *buf = malloc(size ? size : 1);
    uint64_t off = 0;
    int64_t want = 0;
    NRT_STATUS res = buf == NULL ? NRT_RESOURCE : NRT_SUCCESS;
    while (res == NRT_SUCCESS && sqlite3_step(st) == SQLITE_ROW) {
        uint64_t n = (uint64_t)sqlite3_column_bytes(st, 1);
        if (sqlite3_column_int64(st, 0) != want++ || n > size - off)
            res = NRT_INVALID;
        else if (n > 0)
            memcpy(buf + off, sqlite3_column_blob(st, 1), n);
        off += n;
    }
    sqlite3_finalize(st);
    uint8_t got[16];
    if (res == NRT_SUCCESS && off == size)
        cl_hash(buf, size, got);
    if (res == NRT_SUCCESS && (off != size || memcmp(got, hash, 16) != 0))
        res = NRT_INVALID;
    if (res != NRT_SUCCESS) {
        free(buf);
        if (res == NRT_INVALID)
            reader_bad(r, "a recorded buffer is truncated or does not match its hash");
        else
            LOG_ERROR("STORE", "%s: out of memory for a %llu-byte buffer", r->path,
                      (unsigned long long)size);
        return res;
    }
    *data = buf;
    return NRT_SUCCESS;
}

NRT_STATUS cl_reader_buffer(struct cl_reader *r, int64_t seq, uint32_t arg, uint32_t part,
                            uint64_t *size, uint8_t hash[16], void **data)
{
    if (data != NULL)
        *data = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT cb.size, cb.hash, b.size FROM log_call_buffers cb "
                           "LEFT JOIN log_buffers b ON b.hash = cb.hash "
                           "WHERE cb.seq = ? AND cb.arg = ? AND cb.part = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return reader_bad(r, "call log without its buffer tables");
    sqlite3_bind_int64(st, 1, seq);
    sqlite3_bind_int64(st, 2, arg);
    sqlite3_bind_int64(st, 3, part);
    NRT_STATUS res = NRT_SUCCESS;
    bool stored = false;
    if (sqlite3_step(st) != SQLITE_ROW) {
        LOG_ERROR("STORE", "%s: call %lld: buffer of argument %u (part %u) is missing", r->path,
                  (long long)seq, arg, part);
        res = NRT_INVALID;
    } else if (sqlite3_column_bytes(st, 1) != 16 || sqlite3_column_int64(st, 0) < 0) {
        res = reader_bad(r, "a buffer row has a bad hash or size");
    } else {
        *size = (uint64_t)sqlite3_column_int64(st, 0);
        memcpy(hash, sqlite3_column_blob(st, 1), 16);
        stored = sqlite3_column_type(st, 2) != SQLITE_NULL;
        if (stored && (uint64_t)sqlite3_column_int64(st, 2) != *size)
            res = reader_bad(r, "a stored buffer's size does not match its use");
    }
    sqlite3_finalize(st);
    if (res == NRT_SUCCESS && stored && data != NULL)
        res = reader_bytes(r, hash, *size, data);
    return res;
}

char *cl_reader_env(struct cl_reader *r, int64_t seq)
{
    sqlite3_stmt *st = NULL;
    char *env = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT env FROM log_env WHERE seq <= ? ORDER BY seq DESC "
                           "LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, seq);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
            env = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return env;
}

bool cl_reader_env_changes_at(struct cl_reader *r, int64_t seq)
{
    sqlite3_stmt *st = NULL;
    bool yes = false;
    if (sqlite3_prepare_v2(r->db, "SELECT 1 FROM log_env WHERE seq = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_int64(st, 1, seq);
        yes = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return yes;
}

NRT_STATUS cl_reader_snapshot(struct cl_reader *r, int64_t id, int64_t *id_out, int64_t *call_seq)
{
    /* The snapshot table belongs to the snapshot store (docs/snapshot.md). */
    const char *sql = id >= 0
        ? "SELECT id, call_seq FROM snapshot WHERE id = ?"
        : "SELECT s.id, s.call_seq FROM snapshot s WHERE EXISTS "
          "(SELECT 1 FROM log_calls c WHERE c.seq = s.call_seq) ORDER BY s.id LIMIT 1";
    sqlite3_stmt *st = NULL;
    NRT_STATUS res = NRT_INVALID;
    if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (id >= 0)
            sqlite3_bind_int64(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 1) == SQLITE_INTEGER) {
            *id_out = sqlite3_column_int64(st, 0);
            *call_seq = sqlite3_column_int64(st, 1);
            res = NRT_SUCCESS;
        }
    }
    sqlite3_finalize(st);
    return res;
}
