/*
 * snap_verify.c: checking a snapshot before anything is restored from it
 * (see snap_int.h and docs/snapshot.md, "Integrity"):
 *
 * - the manifest: an XXH3-128 hash over every row of the snapshot, in a
 *   fixed order and typed encoding, with each chunk reference standing
 *   for the chunk's content hash and each model for its NEFF's hash. It is
 *   written as the last step of a save, so a row deleted, added, changed
 *   or two chunk references swapped no longer match it;
 * - every row on its own: types, ranges, alignment, sizes, references
 *   (regions, chunks, storages, tensors) and that each region is used
 *   exactly once, and that the chunks add up to no more than the
 *   snapshot's recorded logical size;
 * - with `decode`, every chunk decoded and checked against its hash.
 *
 * Each refusal is one log line naming the table and the row.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "emu/log.h"
#include "store/snap_int.h"

/* Longest tensor name a snapshot row may hold (the runtime keeps 63). */
#define SNAP_TENSOR_NAME_MAX 63

/* ---- the manifest ------------------------------------------------------ */

/* The rows the manifest covers, table by table, in a fixed order. */
static const char *const manifest_sql[] = {
    "SELECT id, created, reason, call_seq, pid, profile, lnc, visible, chunk_size,"
    " logical_bytes, stored_bytes FROM snapshot WHERE id=?1",
    "SELECT name, value FROM option WHERE snap=?1 ORDER BY name",
    "SELECT id, kind, chip, vnc, core, size FROM region WHERE snap=?1 ORDER BY id",
    "SELECT rc.region, rc.off, rc.chunk, c.hash, c.raw_len FROM region_chunk rc"
    " LEFT JOIN chunk c ON c.id=rc.chunk WHERE rc.snap=?1 ORDER BY rc.region, rc.off",
    "SELECT id, kind, size, chip, stack, vnc, off, len, region FROM storage WHERE snap=?1"
    " ORDER BY id",
    "SELECT handle, name, placement, vnc, size, storage, off, completions FROM tensor"
    " WHERE snap=?1 ORDER BY handle",
    "SELECT handle FROM tensor_set WHERE snap=?1 ORDER BY handle",
    "SELECT set_handle, pos, name, tensor FROM tensor_set_entry WHERE snap=?1"
    " ORDER BY set_handle, pos",
    "SELECT m.handle, m.name, m.vnc, m.gvnc, m.neff, n.hash, m.executions, m.cc_rank,"
    " m.cc_world FROM model m LEFT JOIN neff n ON n.id=m.neff WHERE m.snap=?1 ORDER BY m.handle",
    "SELECT model, seq, chip, stack, vnc, off, len FROM model_block WHERE snap=?1"
    " ORDER BY model, seq",
    "SELECT model, idx, name, is_output, dtype, size, shape FROM model_io WHERE snap=?1"
    " ORDER BY model, idx",
    "SELECT vnc, idx, gen, state, sbuf, psum FROM core WHERE snap=?1 ORDER BY vnc, idx",
};

/* Feed one column, tagged with its SQLite type, to the hash. */
static void manifest_column(XXH3_state_t *h, sqlite3_stmt *s, int col)
{
    uint8_t tag = (uint8_t)sqlite3_column_type(s, col);
    XXH3_128bits_update(h, &tag, 1);
    if (tag == SQLITE_INTEGER) {
        int64_t v = sqlite3_column_int64(s, col);
        XXH3_128bits_update(h, &v, sizeof v);
    } else if (tag == SQLITE_FLOAT) {
        double v = sqlite3_column_double(s, col);
        XXH3_128bits_update(h, &v, sizeof v);
    } else if (tag == SQLITE_TEXT || tag == SQLITE_BLOB) {
        const void *p = tag == SQLITE_TEXT ? (const void *)sqlite3_column_text(s, col)
                                           : sqlite3_column_blob(s, col);
        uint64_t n = (uint64_t)sqlite3_column_bytes(s, col);
        XXH3_128bits_update(h, &n, sizeof n);
        if (p != NULL && n > 0)
            XXH3_128bits_update(h, p, (size_t)n);
    }
}

/* Hash every row of one table of the snapshot. */
static NRT_STATUS manifest_table(struct snap_db *db, int64_t snap, size_t t, XXH3_state_t *h)
{
    sqlite3_stmt *s = sdb_prepare(db, manifest_sql[t]);
    if (s == NULL)
        return NRT_INVALID;
    sqlite3_bind_int64(s, 1, snap);
    uint64_t rows = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(s); c++)
            manifest_column(h, s, c);
        rows++;
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_DONE)
        return sdb_fail(db, rc, "reading the snapshot for its manifest");
    uint64_t tag[2] = {t, rows};
    XXH3_128bits_update(h, tag, sizeof tag);
    return NRT_SUCCESS;
}

NRT_STATUS snap_manifest_compute(struct snap_db *db, int64_t snap, struct chunk_hash *out)
{
    XXH3_state_t *h = XXH3_createState();
    if (h == NULL)
        return NRT_RESOURCE;
    XXH3_128bits_reset(h);
    static const char version[] = "trnemu-manifest-1";
    XXH3_128bits_update(h, version, sizeof version);
    NRT_STATUS st = NRT_SUCCESS;
    for (size_t t = 0; st == NRT_SUCCESS && t < sizeof manifest_sql / sizeof *manifest_sql; t++)
        st = manifest_table(db, snap, t, h);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(h));
    XXH3_freeState(h);
    memcpy(out->b, c.digest, CHUNK_HASH_LEN);
    return st;
}

NRT_STATUS snap_manifest_write(struct snap_db *db, int64_t snap)
{
    struct chunk_hash m;
    NRT_STATUS st = snap_manifest_compute(db, snap, &m);
    if (st != NRT_SUCCESS)
        return st;
    sqlite3_stmt *s = sdb_prepare(db, "INSERT INTO manifest(snap, hash) VALUES(?1, ?2)");
    if (s == NULL)
        return NRT_INVALID;
    sqlite3_bind_int64(s, 1, snap);
    sqlite3_bind_blob(s, 2, m.b, CHUNK_HASH_LEN, SQLITE_STATIC);
    st = sdb_done(db, s, "writing the snapshot's manifest");
    sqlite3_finalize(s);
    return st;
}

/* ---- one verification pass --------------------------------------------- */

/* A region row, as far as the checks need it. */
struct vregion {
    int kind;            /* 0 hbm, 1 host, 2 sbuf, 3 psum */
    uint64_t size;       /* bytes */
    uint32_t uses;       /* storages/cores naming it */
};

/* State of one verification. */
struct verifier {
    struct snap_db *db;          /* the file */
    int64_t snap;                /* snapshot id */
    bool decode;                 /* decode every chunk too */
    bool legacy;                 /* predates manifests (schema 1) */
    uint32_t chunk_size;         /* from the snapshot row */
    uint64_t logical;            /* recorded logical bytes */
    struct vregion *regions;     /* by region id */
    size_t nregions;             /* regions */
    uint64_t *storage_size;      /* usable bytes of each storage, by id */
    size_t nstorages;            /* storages */
    uint64_t *tensors;           /* tensor handles, ascending */
    size_t ntensors;             /* tensors */
};

static const char *const vkinds[] = {"hbm", "host", "sbuf", "psum"};

/* Refuse: one line naming the snapshot and the row. */
__attribute__((format(printf, 2, 3)))
static NRT_STATUS vbad(struct verifier *v, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    LOG_ERROR("STORE", "%s: snapshot %" PRId64 ": %s", v->db->path, v->snap, why);
    return NRT_INVALID;
}

/* Step a query (sdb_next). */
static bool vnext(struct verifier *v, sqlite3_stmt *s, NRT_STATUS *st)
{
    return sdb_next(v->db, s, st);
}

/* Run sql (?1 = snapshot) and give each row to fn. */
static NRT_STATUS veach(struct verifier *v, const char *sql,
                        NRT_STATUS (*fn)(struct verifier *v, sqlite3_stmt *s, size_t i))
{
    sqlite3_stmt *s = sdb_prepare(v->db, sql);
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    if (s != NULL)
        sqlite3_bind_int64(s, 1, v->snap);
    for (size_t i = 0; vnext(v, s, &st); i++)
        st = fn(v, s, i);
    sqlite3_finalize(s);
    return st;
}

/* One integer of a query, or -1 when there is none. */
static int64_t vcount(struct verifier *v, const char *sql)
{
    sqlite3_stmt *s = sdb_prepare(v->db, sql);
    int64_t n = -1;
    if (s == NULL)
        return -1;
    sqlite3_bind_int64(s, 1, v->snap);
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) == SQLITE_INTEGER)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
}

static NRT_STATUS vsnapshot(struct verifier *v)
{
    sqlite3_stmt *s = sdb_prepare(v->db, "SELECT chunk_size, logical_bytes FROM snapshot WHERE id=?1");
    if (s == NULL)
        return NRT_INVALID;
    sqlite3_bind_int64(s, 1, v->snap);
    NRT_STATUS st = NRT_SUCCESS;
    int64_t cs;
    uint64_t logical;
    if (!vnext(v, s, &st))
        st = st != NRT_SUCCESS ? st : vbad(v, "no such snapshot in the file");
    else if (!sdb_int(s, 0, 4096, CHUNK_MAX, &cs) || (cs & (cs - 1)) != 0 ||
             !sdb_u64(s, 1, INT64_MAX, &logical))
        st = vbad(v, "the snapshot row is malformed (chunk_size or logical_bytes)");
    else {
        v->chunk_size = (uint32_t)cs;
        v->logical = logical;
    }
    sqlite3_finalize(s);
    return st;
}

/* Schema 1 files and snapshots saved before a file was upgraded have no
 * manifest: accepted, with a warning, by the row checks alone. */
static NRT_STATUS vmanifest(struct verifier *v)
{
    int64_t has_table = vcount(v, "SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                                  "name='manifest' AND ?1 IS NOT NULL");
    int64_t from = has_table == 1 ? vcount(v, "SELECT CAST(value AS INTEGER) FROM meta WHERE "
                                              "key='manifest_from' AND ?1 IS NOT NULL") : -1;
    sqlite3_stmt *s = has_table == 1 ? sdb_prepare(v->db, "SELECT hash FROM manifest WHERE snap=?1")
                                     : NULL;
    NRT_STATUS st = NRT_SUCCESS;
    const void *want = NULL;
    size_t len = 0;
    bool found = false;
    if (s != NULL) {
        sqlite3_bind_int64(s, 1, v->snap);
        found = vnext(v, s, &st);
        if (found && (!sdb_blob(s, 0, &want, &len) || len != CHUNK_HASH_LEN))
            st = vbad(v, "its manifest row is malformed");
    }
    if (st == NRT_SUCCESS && !found) {
        if (has_table == 1 && (from < 0 || v->snap >= from))
            st = vbad(v, "its manifest row is missing");
        else
            v->legacy = true;
    }
    if (st == NRT_SUCCESS && found) {
        struct chunk_hash mine;
        st = snap_manifest_compute(v->db, v->snap, &mine);
        if (st == NRT_SUCCESS && memcmp(mine.b, want, CHUNK_HASH_LEN) != 0)
            st = vbad(v, "its rows do not match its manifest (a row was added, deleted, "
                         "changed or two rows were swapped)");
    }
    sqlite3_finalize(s);
    return st;
}

/* ---- the rows ---------------------------------------------------------- */

static NRT_STATUS vregion_row(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    int64_t id, chip, vnc, core;
    uint64_t size;
    const char *kind = sdb_text(s, 1, 16);
    if (!sdb_int(s, 0, (int64_t)i, (int64_t)i, &id))
        return vbad(v, "region row %zu: region ids are not 0, 1, 2 ...", i);
    int k = -1;
    for (int j = 0; kind != NULL && j < 4; j++)
        if (strcmp(kind, vkinds[j]) == 0)
            k = j;
    if (k < 0)
        return vbad(v, "region %zu: unknown kind", i);
    if (!sdb_int(s, 2, -1, UINT32_MAX, &chip) || !sdb_int(s, 3, -1, UINT32_MAX, &vnc) ||
        !sdb_int(s, 4, -1, UINT32_MAX, &core) || !sdb_u64(s, 5, INT64_MAX, &size) || size == 0)
        return vbad(v, "region %zu: malformed chip, vnc, core or size", i);
    if (i >= v->nregions)
        return vbad(v, "region %zu: regions changed while reading", i);
    v->regions[i] = (struct vregion){k, size, 0};
    return NRT_SUCCESS;
}

static NRT_STATUS vregions(struct verifier *v)
{
    int64_t n = vcount(v, "SELECT count(*) FROM region WHERE snap=?1");
    if (n < 0 || n > (1 << 24))
        return vbad(v, "cannot count its regions");
    v->nregions = (size_t)n;
    v->regions = calloc(n ? (size_t)n : 1, sizeof *v->regions);
    if (v->regions == NULL)
        return NRT_RESOURCE;
    return veach(v, "SELECT id, kind, chip, vnc, core, size FROM region WHERE snap=?1 ORDER BY id",
                 vregion_row);
}

/* Decode one chunk and check it against its hash. */
static NRT_STATUS vdecode(struct verifier *v, sqlite3_stmt *s, int64_t region, uint64_t off,
                          int codec, size_t n)
{
    const void *data, *hash;
    size_t len, hlen;
    if (!sdb_blob(s, 4, &data, &len) || !sdb_blob(s, 5, &hash, &hlen) || hlen != CHUNK_HASH_LEN)
        return vbad(v, "region_chunk (region %" PRId64 ", off 0x%" PRIx64 "): malformed chunk",
                    region, off);
    uint8_t *buf = malloc(2 * n);
    if (buf == NULL)
        return NRT_RESOURCE;
    NRT_STATUS st = chunk_decode(codec, data, len, buf, n, buf + n);
    struct chunk_hash h;
    if (st == NRT_SUCCESS) {
        chunk_hash_of(buf, n, &h);
        if (memcmp(h.b, hash, CHUNK_HASH_LEN) != 0)
            st = NRT_INVALID;
    }
    free(buf);
    if (st != NRT_SUCCESS)
        return vbad(v, "region_chunk (region %" PRId64 ", off 0x%" PRIx64 "): the chunk does "
                    "not decode to its hash", region, off);
    return NRT_SUCCESS;
}

static NRT_STATUS vchunk_row(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    int64_t region, codec;
    uint64_t off, raw;
    if (!sdb_int(s, 0, 0, (int64_t)v->nregions - 1, &region))
        return vbad(v, "region_chunk row %zu: names no region of the snapshot", i);
    const struct vregion *r = &v->regions[region];
    if (!sdb_u64(s, 1, r->size - 1, &off))
        return vbad(v, "region_chunk (region %" PRId64 ", row %zu): offset is not an integer "
                    "inside the region (%" PRIu64 " bytes)", region, i, r->size);
    if (off % v->chunk_size != 0)
        return vbad(v, "region_chunk (region %" PRId64 ", off 0x%" PRIx64 "): offset is not a "
                    "multiple of the chunk size %u", region, off, v->chunk_size);
    if (sqlite3_column_type(s, 2) == SQLITE_NULL)
        return vbad(v, "region_chunk (region %" PRId64 ", off 0x%" PRIx64 "): names a chunk "
                    "the file lacks", region, off);
    uint64_t want = r->size - off < v->chunk_size ? r->size - off : v->chunk_size;
    if (!sdb_u64(s, 2, CHUNK_MAX, &raw) || raw != want)
        return vbad(v, "region_chunk (region %" PRId64 ", off 0x%" PRIx64 "): the chunk holds "
                    "%lld bytes where the chunk size gives %" PRIu64, region, off,
                    (long long)sqlite3_column_int64(s, 2), want);
    if (!sdb_int(s, 3, 0, 16, &codec) || sqlite3_column_bytes(s, 4) <= 0)
        return vbad(v, "region_chunk (region %" PRId64 ", off 0x%" PRIx64 "): the chunk row is "
                    "malformed (codec or empty data)", region, off);
    if (raw > v->logical)
        return vbad(v, "its chunks add up to more than its recorded size of %" PRIu64 " bytes",
                    v->logical);
    v->logical -= raw;
    return v->decode ? vdecode(v, s, region, off, (int)codec, (size_t)raw) : NRT_SUCCESS;
}

static NRT_STATUS vchunks(struct verifier *v)
{
    return veach(v, "SELECT rc.region, rc.off, c.raw_len, c.codec, c.data, c.hash FROM region_chunk"
                    " rc LEFT JOIN chunk c ON c.id=rc.chunk WHERE rc.snap=?1 ORDER BY rc.region,"
                    " rc.off", vchunk_row);
}

/* A storage or core names region `col` of kind k: mark it used. */
static NRT_STATUS vuse_region(struct verifier *v, sqlite3_stmt *s, int col, int k,
                              const char *row, uint64_t *size)
{
    int64_t id;
    if (!sdb_int(s, col, 0, (int64_t)v->nregions - 1, &id) || v->regions[id].kind != k)
        return vbad(v, "%s: names no %s region of the snapshot", row, vkinds[k]);
    if (v->regions[id].uses++ > 0)
        return vbad(v, "%s: region %" PRId64 " is used twice", row, id);
    *size = v->regions[id].size;
    return NRT_SUCCESS;
}

static NRT_STATUS vstorage_row(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    int64_t id, kind, x;
    uint64_t size, off, len;
    char row[64];
    snprintf(row, sizeof row, "storage %zu", i);
    if (!sdb_int(s, 0, (int64_t)i, (int64_t)i, &id) || i >= v->nstorages)
        return vbad(v, "storage row %zu: storage ids are not 0, 1, 2 ...", i);
    if (!sdb_int(s, 1, 1, 3, &kind) || !sdb_u64(s, 2, INT64_MAX, &size))
        return vbad(v, "%s: malformed kind or size", row);
    if (kind == 1) {
        if (!sdb_int(s, 3, 0, UINT32_MAX, &x) || !sdb_int(s, 4, 0, UINT32_MAX, &x) ||
            !sdb_int(s, 5, 0, UINT32_MAX, &x) || !sdb_u64(s, 6, INT64_MAX, &off) ||
            !sdb_u64(s, 7, INT64_MAX, &len) || size > len || off > INT64_MAX - len)
            return vbad(v, "%s: malformed device block (chip, stack, vnc, off, len)", row);
    } else {
        uint64_t rsize;
        NRT_STATUS st = vuse_region(v, s, 8, 1, row, &rsize);
        if (st != NRT_SUCCESS)
            return st;
        if (rsize != size)
            return vbad(v, "%s: %" PRIu64 " bytes, its region %" PRIu64, row, size, rsize);
    }
    v->storage_size[i] = size;
    return NRT_SUCCESS;
}

static NRT_STATUS vstorages(struct verifier *v)
{
    int64_t n = vcount(v, "SELECT count(*) FROM storage WHERE snap=?1");
    if (n < 0 || n > (1 << 24))
        return vbad(v, "cannot count its storages");
    v->nstorages = (size_t)n;
    v->storage_size = calloc(n ? (size_t)n : 1, sizeof *v->storage_size);
    if (v->storage_size == NULL)
        return NRT_RESOURCE;
    return veach(v, "SELECT id, kind, size, chip, stack, vnc, off, len, region FROM storage"
                    " WHERE snap=?1 ORDER BY id", vstorage_row);
}

static NRT_STATUS vtensor_row(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    uint64_t handle, size, off, x;
    int64_t placement, vnc, sid = -1;
    if (!sdb_u64(s, 0, UINT64_MAX, &handle) || handle == 0 || i >= v->ntensors ||
        (i > 0 && handle <= v->tensors[i - 1]))
        return vbad(v, "tensor row %zu: malformed handle", i);
    const char *name = sdb_text(s, 1, SNAP_TENSOR_NAME_MAX);
    if (name == NULL || !sdb_int(s, 2, 0, 2, &placement) || !sdb_int(s, 3, -1, 1 << 16, &vnc) ||
        !sdb_u64(s, 4, INT64_MAX, &size) || !sdb_u64(s, 6, INT64_MAX, &off) ||
        !sdb_u64(s, 7, INT64_MAX, &x) ||
        (sqlite3_column_type(s, 5) != SQLITE_NULL &&
         !sdb_int(s, 5, 0, (int64_t)v->nstorages - 1, &sid)))
        return vbad(v, "tensor 0x%" PRIx64 ": malformed name, placement, vnc, size, offset or "
                    "storage", handle);
    uint64_t have = sid >= 0 ? v->storage_size[sid] : 0;
    if (off > have || size > have - off)
        return vbad(v, "tensor 0x%" PRIx64 ": bytes [%" PRIu64 ", +%" PRIu64 ") lie outside its "
                    "storage of %" PRIu64 " bytes", handle, off, size, have);
    v->tensors[i] = handle;
    return NRT_SUCCESS;
}

static NRT_STATUS vtensors(struct verifier *v)
{
    int64_t n = vcount(v, "SELECT count(*) FROM tensor WHERE snap=?1");
    if (n < 0 || n > (1 << 24))
        return vbad(v, "cannot count its tensors");
    v->ntensors = (size_t)n;
    v->tensors = calloc(n ? (size_t)n : 1, sizeof *v->tensors);
    if (v->tensors == NULL)
        return NRT_RESOURCE;
    return veach(v, "SELECT handle, name, placement, vnc, size, storage, off, completions"
                    " FROM tensor WHERE snap=?1 ORDER BY handle", vtensor_row);
}

static int vu64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static NRT_STATUS vset_entry(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    uint64_t set, tensor;
    int64_t pos;
    if (!sdb_u64(s, 0, UINT64_MAX, &set) || !sdb_int(s, 1, 0, INT32_MAX, &pos) ||
        sdb_text(s, 2, 4096) == NULL || !sdb_u64(s, 3, UINT64_MAX, &tensor))
        return vbad(v, "tensor_set_entry row %zu: malformed", i);
    if (sqlite3_column_type(s, 4) == SQLITE_NULL)
        return vbad(v, "tensor_set_entry (set 0x%" PRIx64 ", pos %" PRId64 "): names no tensor "
                    "set of the snapshot", set, pos);
    /* 0 is a tensor freed before the save; older snapshots kept its handle */
    if (tensor != 0 && !v->legacy &&
        bsearch(&tensor, v->tensors, v->ntensors, sizeof *v->tensors, vu64_cmp) == NULL)
        return vbad(v, "tensor_set_entry (set 0x%" PRIx64 ", pos %" PRId64 "): names tensor 0x%"
                    PRIx64 ", which the snapshot lacks", set, pos, tensor);
    return NRT_SUCCESS;
}

static NRT_STATUS vsets(struct verifier *v)
{
    return veach(v, "SELECT e.set_handle, e.pos, e.name, e.tensor, t.handle FROM tensor_set_entry e"
                    " LEFT JOIN tensor_set t ON t.snap=e.snap AND t.handle=e.set_handle"
                    " WHERE e.snap=?1 ORDER BY e.set_handle, e.pos", vset_entry);
}

static NRT_STATUS vcore_row(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    int64_t vnc, idx;
    char row[64];
    if (!sdb_int(s, 0, 0, 1 << 16, &vnc) || !sdb_int(s, 1, 0, 64, &idx))
        return vbad(v, "core row %zu: malformed vnc or index", i);
    snprintf(row, sizeof row, "core (vnc %" PRId64 ", idx %" PRId64 ")", vnc, idx);
    uint64_t size;
    NRT_STATUS st = vuse_region(v, s, 2, 2, row, &size);
    if (st == NRT_SUCCESS)
        st = vuse_region(v, s, 3, 3, row, &size);
    return st;
}

static NRT_STATUS vcores(struct verifier *v)
{
    return veach(v, "SELECT vnc, idx, sbuf, psum FROM core WHERE snap=?1 ORDER BY vnc, idx",
                 vcore_row);
}

static NRT_STATUS vmodel_row(struct verifier *v, sqlite3_stmt *s, size_t i)
{
    uint64_t handle;
    if (!sdb_u64(s, 0, UINT64_MAX, &handle) || sqlite3_column_type(s, 1) != SQLITE_INTEGER)
        return vbad(v, "model row %zu: malformed handle", i);
    if (sqlite3_column_type(s, 2) == SQLITE_NULL)
        return vbad(v, "model 0x%" PRIx64 ": names a NEFF the file lacks", handle);
    return NRT_SUCCESS;
}

/* Every region but HBM (restored by kind) is named exactly once. */
static NRT_STATUS vregions_used(struct verifier *v)
{
    for (size_t i = 0; i < v->nregions; i++)
        if (v->regions[i].kind != 0 && v->regions[i].uses != 1)
            return vbad(v, "region %zu (%s): no storage or core names it", i,
                        vkinds[v->regions[i].kind]);
    return NRT_SUCCESS;
}

NRT_STATUS snap_verify_rows(struct snap_db *db, int64_t snap, bool decode, bool *legacy)
{
    struct verifier v = {.db = db, .snap = snap, .decode = decode};
    NRT_STATUS st = vsnapshot(&v);
    if (st == NRT_SUCCESS)
        st = vmanifest(&v);
    if (st == NRT_SUCCESS)
        st = vregions(&v);
    if (st == NRT_SUCCESS)
        st = vchunks(&v);
    if (st == NRT_SUCCESS)
        st = vstorages(&v);
    if (st == NRT_SUCCESS)
        st = vtensors(&v);
    if (st == NRT_SUCCESS)
        qsort(v.tensors, v.ntensors, sizeof *v.tensors, vu64_cmp);
    if (st == NRT_SUCCESS)
        st = vsets(&v);
    if (st == NRT_SUCCESS)
        st = vcores(&v);
    if (st == NRT_SUCCESS)
        st = veach(&v, "SELECT m.handle, m.neff, n.id FROM model m LEFT JOIN neff n ON "
                       "n.id=m.neff WHERE m.snap=?1 ORDER BY m.handle", vmodel_row);
    if (st == NRT_SUCCESS)
        st = vregions_used(&v);
    if (legacy != NULL)
        *legacy = v.legacy;
    free(v.regions);
    free(v.storage_size);
    free(v.tensors);
    return st;
}

NRT_STATUS snap_verify(struct snap_db *db, int64_t id, bool *legacy)
{
    snap_db_lock(db);
    NRT_STATUS st = snap_verify_rows(db, id, true, legacy);
    snap_db_unlock(db);
    return st;
}
