/*
 * snap_query.c: reading snapshot files for the tool (see snap_query.h).
 */
#include "store/snap_query.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/grow.h"
#include "emu/log.h"
#include "store/snap_int.h"

/* A growing array of rows of elem bytes. */
struct snapq_vec {
    void *v;       /* the rows */
    size_t n;      /* rows used */
    size_t cap;    /* rows allocated */
    size_t elem;   /* bytes per row */
};

/* A new zeroed row at the end, NULL when out of memory. */
static void *snapq_push(struct snapq_vec *a)
{
    if (!grow_array(&a->v, a->n + 1, &a->cap, a->elem, 16))
        return NULL;
    void *row = (char *)a->v + a->n++ * a->elem;
    memset(row, 0, a->elem);
    return row;
}

/* Copy a TEXT column (NULL or another type reads as ""). */
static void snapq_text(sqlite3_stmt *s, int col, char *out, size_t cap)
{
    const char *t = sdb_text(s, col, 1u << 20);
    snprintf(out, cap, "%s", t ? t : "");
}

static NRT_STATUS snapq_malformed(struct snap_db *db, const char *what)
{
    LOG_ERROR("STORE", "%s: a %s row is malformed", db->path, what);
    return NRT_INVALID;
}

/* Run a query (?1 = id, ?2 = arg) and turn each row into one element. */
static NRT_STATUS snapq_rows(struct snap_db *db, const char *sql, int64_t id, int64_t arg,
                             struct snapq_vec *a, bool (*row)(sqlite3_stmt *s, void *out),
                             const char *what)
{
    sqlite3_stmt *s = sdb_prepare(db, sql);
    if (s == NULL)
        return NRT_INVALID;
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, arg);
    NRT_STATUS st = NRT_SUCCESS;
    int rc;
    while (st == NRT_SUCCESS && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        void *out = snapq_push(a);
        if (out == NULL)
            st = NRT_RESOURCE;
        else if (!row(s, out))
            st = snapq_malformed(db, what);
    }
    if (st == NRT_SUCCESS && rc != SQLITE_DONE)
        st = sdb_fail(db, rc, "reading the file");
    sqlite3_finalize(s);
    if (st != NRT_SUCCESS) {
        free(a->v);
        a->v = NULL;
        a->n = 0;
    }
    return st;
}

/* ---- snapshots --------------------------------------------------------- */

static bool snapq_snapshot_row(sqlite3_stmt *s, void *p)
{
    struct snapq_snapshot *r = p;
    snapq_text(s, 1, r->created, sizeof r->created);
    snapq_text(s, 2, r->reason, sizeof r->reason);
    snapq_text(s, 5, r->profile, sizeof r->profile);
    snapq_text(s, 7, r->visible, sizeof r->visible);
    return sdb_int(s, 0, 0, INT64_MAX, &r->id) && sdb_int(s, 3, INT64_MIN, INT64_MAX, &r->call_seq) &&
           sdb_int(s, 4, INT64_MIN, INT64_MAX, &r->pid) && sdb_int(s, 6, 0, 64, &r->lnc) &&
           sdb_u64(s, 8, CHUNK_MAX, &r->chunk_size) && sdb_u64(s, 9, INT64_MAX, &r->logical) &&
           sdb_u64(s, 10, INT64_MAX, &r->stored);
}

static const char snapq_snapshot_sql[] =
    "SELECT id, created, reason, call_seq, pid, profile, lnc, visible, chunk_size, logical_bytes,"
    " stored_bytes FROM snapshot";

NRT_STATUS snapq_snapshots(struct snap_db *db, struct snapq_snapshot **out, size_t *n)
{
    char sql[512];
    snprintf(sql, sizeof sql, "%s WHERE ?1 = ?1 AND ?2 = ?2 ORDER BY id", snapq_snapshot_sql);
    struct snapq_vec a = {.elem = sizeof **out};
    NRT_STATUS st = snapq_rows(db, sql, 0, 0, &a, snapq_snapshot_row, "snapshot");
    *out = a.v;
    *n = a.n;
    return st;
}

NRT_STATUS snapq_snapshot(struct snap_db *db, int64_t id, struct snapq_snapshot *out)
{
    char sql[512];
    snprintf(sql, sizeof sql, "%s WHERE id = ?1 AND ?2 = ?2", snapq_snapshot_sql);
    struct snapq_vec a = {.elem = sizeof *out};
    NRT_STATUS st = snapq_rows(db, sql, id, 0, &a, snapq_snapshot_row, "snapshot");
    if (st == NRT_SUCCESS && a.n == 0) {
        LOG_ERROR("STORE", "%s has no snapshot %" PRId64, db->path, id);
        st = NRT_INVALID;
    }
    if (st == NRT_SUCCESS)
        *out = *(struct snapq_snapshot *)a.v;
    free(a.v);
    return st;
}

/* ---- regions, chunks --------------------------------------------------- */

static bool snapq_region_row(sqlite3_stmt *s, void *p)
{
    struct snapq_region *r = p;
    snapq_text(s, 1, r->kind, sizeof r->kind);
    return sdb_int(s, 0, 0, INT64_MAX, &r->id) && sdb_int(s, 2, -1, INT32_MAX, &r->chip) &&
           sdb_int(s, 3, -1, INT32_MAX, &r->vnc) && sdb_int(s, 4, -1, INT32_MAX, &r->core) &&
           sdb_u64(s, 5, INT64_MAX, &r->size) && sdb_u64(s, 6, INT64_MAX, &r->chunks) &&
           sdb_u64(s, 7, INT64_MAX, &r->bytes) && sdb_u64(s, 8, INT64_MAX, &r->encoded);
}

NRT_STATUS snapq_regions(struct snap_db *db, int64_t id, struct snapq_region **out, size_t *n)
{
    static const char sql[] =
        "SELECT r.id, r.kind, r.chip, r.vnc, r.core, r.size, count(c.id),"
        " coalesce(sum(c.raw_len), 0), coalesce(sum(length(c.data)), 0)"
        " FROM region r LEFT JOIN region_chunk rc ON rc.snap = r.snap AND rc.region = r.id"
        " LEFT JOIN chunk c ON c.id = rc.chunk WHERE r.snap = ?1 AND ?2 = ?2"
        " GROUP BY r.id ORDER BY r.id";
    struct snapq_vec a = {.elem = sizeof **out};
    NRT_STATUS st = snapq_rows(db, sql, id, 0, &a, snapq_region_row, "region");
    *out = a.v;
    *n = a.n;
    return st;
}

static bool snapq_chunk_row(sqlite3_stmt *s, void *p)
{
    struct snapq_chunk *r = p;
    const void *h;
    size_t hlen;
    if (!sdb_u64(s, 0, INT64_MAX, &r->off) || !sdb_u64(s, 1, CHUNK_MAX, &r->len) ||
        !sdb_blob(s, 2, &h, &hlen) || hlen != CHUNK_HASH_LEN)
        return false;
    memcpy(r->hash.b, h, CHUNK_HASH_LEN);
    return true;
}

NRT_STATUS snapq_chunks(struct snap_db *db, int64_t id, int64_t region, struct snapq_chunk **out,
                        size_t *n)
{
    static const char sql[] =
        "SELECT rc.off, c.raw_len, c.hash FROM region_chunk rc LEFT JOIN chunk c ON c.id = rc.chunk"
        " WHERE rc.snap = ?1 AND rc.region = ?2 ORDER BY rc.off";
    struct snapq_vec a = {.elem = sizeof **out};
    NRT_STATUS st = snapq_rows(db, sql, id, region, &a, snapq_chunk_row, "chunk");
    *out = a.v;
    *n = a.n;
    return st;
}

NRT_STATUS snapq_read(struct snap_db *db, int64_t id, int64_t region, uint64_t size,
                      uint64_t off, uint64_t len, uint8_t *buf)
{
    struct snapq_snapshot s;
    NRT_STATUS st = snapq_snapshot(db, id, &s);
    struct cstore cs;
    if (st == NRT_SUCCESS)
        st = cstore_open(&cs, db, (uint32_t)(s.chunk_size ? s.chunk_size : SNAP_CHUNK_DEFAULT));
    if (st != NRT_SUCCESS)
        return st;
    st = cstore_read(&cs, id, region, size, off, len, buf);
    cstore_close(&cs);
    return st;
}

/* ---- objects ----------------------------------------------------------- */

static bool snapq_tensor_row(sqlite3_stmt *s, void *p)
{
    struct snapq_tensor *r = p;
    int64_t dtype = 0;
    snapq_text(s, 1, r->name, sizeof r->name);
    snapq_text(s, 12, r->shape, sizeof r->shape);
    snapq_text(s, 13, r->bound_as, sizeof r->bound_as);
    r->storage_kind = 0;
    r->region = -1;
    r->chip = -1;
    if (!sdb_u64(s, 0, UINT64_MAX, &r->handle) || !sdb_int(s, 2, 0, 16, &r->placement) ||
        !sdb_int(s, 3, -1, INT32_MAX, &r->vnc) || !sdb_u64(s, 4, INT64_MAX, &r->size))
        return false;
    if (sqlite3_column_type(s, 11) == SQLITE_INTEGER && sdb_int(s, 11, 0, UINT32_MAX, &dtype))
        r->dtype = (uint32_t)dtype;
    if (sqlite3_column_type(s, 5) == SQLITE_NULL)
        return true;  /* an empty tensor */
    uint64_t toff, boff;
    if (!sdb_int(s, 5, 1, 3, &r->storage_kind) || !sdb_u64(s, 6, INT64_MAX, &toff))
        return false;
    if (r->storage_kind == 1) {
        if (!sdb_int(s, 7, 0, INT32_MAX, &r->chip) || !sdb_u64(s, 8, INT64_MAX, &boff) ||
            sqlite3_column_type(s, 9) != SQLITE_INTEGER || !sdb_u64(s, 10, INT64_MAX, &r->region_size))
            return r->region = -1, true;  /* no HBM region: memory never written */
        r->addr = boff + toff;
        r->region = sqlite3_column_int64(s, 9);
        r->region_off = r->addr;
    } else if (sqlite3_column_type(s, 9) == SQLITE_INTEGER && sdb_u64(s, 10, INT64_MAX, &r->region_size)) {
        r->region = sqlite3_column_int64(s, 9);
        r->region_off = toff;
    }
    return true;
}

NRT_STATUS snapq_tensors(struct snap_db *db, int64_t id, struct snapq_tensor **out, size_t *n)
{
    /* The region of a device tensor is its chip's HBM; of a host one, its
     * storage's. The dtype comes from a model I/O of the same size the
     * tensor is bound to by name (in a set, or by its own name). */
    static const char sql[] =
        "SELECT t.handle, t.name, t.placement, t.vnc, t.size, s.kind, t.off, s.chip, s.off,"
        " r.id, r.size,"
        " (SELECT io.dtype FROM model_io io WHERE io.snap = t.snap AND io.size = t.size AND"
        "   (io.name = t.name OR io.name IN (SELECT e.name FROM tensor_set_entry e"
        "    WHERE e.snap = t.snap AND e.tensor = t.handle)) ORDER BY io.model, io.idx LIMIT 1),"
        " (SELECT io.shape FROM model_io io WHERE io.snap = t.snap AND io.size = t.size AND"
        "   (io.name = t.name OR io.name IN (SELECT e.name FROM tensor_set_entry e"
        "    WHERE e.snap = t.snap AND e.tensor = t.handle)) ORDER BY io.model, io.idx LIMIT 1),"
        " (SELECT io.name FROM model_io io WHERE io.snap = t.snap AND io.size = t.size AND"
        "   (io.name = t.name OR io.name IN (SELECT e.name FROM tensor_set_entry e"
        "    WHERE e.snap = t.snap AND e.tensor = t.handle)) ORDER BY io.model, io.idx LIMIT 1)"
        " FROM tensor t LEFT JOIN storage s ON s.snap = t.snap AND s.id = t.storage"
        " LEFT JOIN region r ON r.snap = t.snap AND ((s.kind = 1 AND r.kind = 'hbm' AND"
        "   r.chip = s.chip) OR (s.kind <> 1 AND r.id = s.region))"
        " WHERE t.snap = ?1 AND ?2 = ?2 ORDER BY t.handle";
    struct snapq_vec a = {.elem = sizeof **out};
    NRT_STATUS st = snapq_rows(db, sql, id, 0, &a, snapq_tensor_row, "tensor");
    *out = a.v;
    *n = a.n;
    return st;
}

static bool snapq_model_row(sqlite3_stmt *s, void *p)
{
    struct snapq_model *r = p;
    snapq_text(s, 1, r->name, sizeof r->name);
    return sdb_u64(s, 0, UINT64_MAX, &r->handle) && sdb_int(s, 2, -1, INT32_MAX, &r->vnc) &&
           sdb_u64(s, 3, INT64_MAX, &r->executions) && sdb_u64(s, 4, INT64_MAX, &r->neff_size) &&
           sdb_u64(s, 5, INT64_MAX, &r->hbm_bytes) && sdb_u64(s, 6, INT64_MAX, &r->nio);
}

NRT_STATUS snapq_models(struct snap_db *db, int64_t id, struct snapq_model **out, size_t *n)
{
    static const char sql[] =
        "SELECT m.handle, m.name, m.vnc, m.executions, coalesce(f.size, 0),"
        " (SELECT coalesce(sum(b.len), 0) FROM model_block b WHERE b.snap = m.snap AND"
        "   b.model = m.handle),"
        " (SELECT count(*) FROM model_io io WHERE io.snap = m.snap AND io.model = m.handle)"
        " FROM model m LEFT JOIN neff f ON f.id = m.neff WHERE m.snap = ?1 AND ?2 = ?2"
        " ORDER BY m.handle";
    struct snapq_vec a = {.elem = sizeof **out};
    NRT_STATUS st = snapq_rows(db, sql, id, 0, &a, snapq_model_row, "model");
    *out = a.v;
    *n = a.n;
    return st;
}

static bool snapq_entry_row(sqlite3_stmt *s, void *p)
{
    struct snapq_entry *r = p;
    snapq_text(s, 1, r->name, sizeof r->name);
    return sdb_u64(s, 0, UINT64_MAX, &r->set) && sdb_u64(s, 2, UINT64_MAX, &r->tensor);
}

NRT_STATUS snapq_entries(struct snap_db *db, int64_t id, struct snapq_entry **out, size_t *n)
{
    static const char sql[] =
        "SELECT s.handle, e.name, e.tensor FROM tensor_set s JOIN tensor_set_entry e ON"
        " e.snap = s.snap AND e.set_handle = s.handle WHERE s.snap = ?1 AND ?2 = ?2"
        " ORDER BY s.handle, e.pos";
    struct snapq_vec a = {.elem = sizeof **out};
    NRT_STATUS st = snapq_rows(db, sql, id, 0, &a, snapq_entry_row, "tensor set");
    *out = a.v;
    *n = a.n;
    return st;
}

/* ---- maintenance ------------------------------------------------------- */

NRT_STATUS snapq_remove(struct snap_db *db, int64_t id)
{
    static const char *const tables[] = {
        "option", "region", "region_chunk", "storage", "tensor", "tensor_set",
        "tensor_set_entry", "model", "model_block", "model_io", "core", "manifest",
    };
    snap_db_lock(db);
    NRT_STATUS st = sdb_sql(db, "BEGIN IMMEDIATE", "removing a snapshot");
    bool began = st == NRT_SUCCESS;
    for (size_t i = 0; st == NRT_SUCCESS && i < sizeof tables / sizeof *tables; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "DELETE FROM %s WHERE snap = %" PRId64, tables[i], id);
        st = sdb_sql(db, sql, "removing a snapshot");
    }
    if (st == NRT_SUCCESS) {
        char sql[128];
        snprintf(sql, sizeof sql, "DELETE FROM snapshot WHERE id = %" PRId64, id);
        st = sdb_sql(db, sql, "removing a snapshot");
    }
    if (st == NRT_SUCCESS && sqlite3_changes(db->sql) == 0) {
        LOG_ERROR("STORE", "%s has no snapshot %" PRId64, db->path, id);
        st = NRT_INVALID;
    }
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "COMMIT", "removing a snapshot");
    if (st != NRT_SUCCESS && began)
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    snap_db_unlock(db);
    return st;
}

/* Count and size of the rows a WHERE clause selects in table t. */
static NRT_STATUS snapq_measure(struct snap_db *db, const char *sql, uint64_t *n, uint64_t *bytes)
{
    sqlite3_stmt *s = sdb_prepare(db, sql);
    if (s == NULL)
        return NRT_INVALID;
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        *n += (uint64_t)sqlite3_column_int64(s, 0);
        *bytes += (uint64_t)sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? NRT_SUCCESS : sdb_fail(db, rc, "measuring unreferenced chunks");
}

NRT_STATUS snapq_gc(struct snap_db *db, uint64_t *chunks, uint64_t *bytes)
{
    *chunks = *bytes = 0;
    snap_db_lock(db);
    NRT_STATUS st = sdb_sql(db, "BEGIN IMMEDIATE", "collecting garbage");
    bool began = st == NRT_SUCCESS;
    if (st == NRT_SUCCESS)
        st = snapq_measure(db, "SELECT count(*), coalesce(sum(length(data)), 0) FROM chunk WHERE id"
                               " NOT IN (SELECT chunk FROM region_chunk)", chunks, bytes);
    if (st == NRT_SUCCESS)
        st = snapq_measure(db, "SELECT count(*), coalesce(sum(length(data)), 0) FROM neff WHERE id"
                               " NOT IN (SELECT neff FROM model)", chunks, bytes);
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "DELETE FROM chunk WHERE id NOT IN (SELECT chunk FROM region_chunk);"
                          "DELETE FROM neff WHERE id NOT IN (SELECT neff FROM model);",
                      "collecting garbage");
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "COMMIT", "collecting garbage");
    if (st != NRT_SUCCESS && began)
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "VACUUM; PRAGMA wal_checkpoint(TRUNCATE);", "compacting the file");
    snap_db_unlock(db);
    return st;
}
