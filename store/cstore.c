/*
 * cstore.c: the chunk store: saving memory ranges as deduplicated,
 * compressed chunks and reading them back with their hashes checked
 * (see snap_int.h).
 *
 * Saving walks a range chunk by chunk. With `touched`, mincore() first
 * tells which pages are resident: a chunk with none is never-written
 * memory and is skipped without reading it (reading would fault the pages
 * in). A chunk of zeros is skipped too: restore starts from zeroed memory.
 * Any other chunk is hashed; a hash the file already holds costs one
 * region_chunk row, a new one is encoded and inserted once.
 *
 * The work is split so that both cores stay busy: chunks go in batches of
 * a few MiB; worker threads (cpool.h) hash and encode one batch, or
 * decode and check it, while this thread does the SQLite work of the
 * batch before (saves) or reads the batch after (restores), then helps.
 * A save keeps the hashes of the file's chunks in memory (hash -> id), so
 * a chunk already stored is neither encoded nor looked up again.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu/log.h"
#include "store/cpool.h"
#include "store/cwriter.h"
#include "store/snap_int.h"

/* Bytes of memory whose page residency one mincore() call asks for. */
#define CSTORE_WINDOW (64ull << 20)
/* Raw bytes of one batch of chunks. */
#define CSTORE_BATCH_BYTES (4u << 20)
/* Most worker threads. */
#define CSTORE_WORKERS 3
/* Staging buffers of a restore through a file: one being filled, one
 * being decoded, one being written, one spare. */
#define CSTORE_STAGING 4

/* ---- the set of known chunks ------------------------------------------- */

struct cstore_slot {
    struct chunk_hash h;  /* content hash */
    int64_t id;           /* chunk row id; 0 marks an empty slot */
};

struct cstore_set {
    struct cstore_slot *s;  /* open addressing, power-of-two capacity */
    size_t cap;             /* slots */
    size_t used;            /* occupied slots */
};

static size_t cstore_slot_of(const struct chunk_hash *h, size_t cap)
{
    uint64_t x;
    memcpy(&x, h->b, 8);
    return (size_t)x & (cap - 1);
}

static void cstore_set_put(struct cstore_slot *s, size_t cap, const struct chunk_hash *h, int64_t id)
{
    size_t i = cstore_slot_of(h, cap);
    while (s[i].id != 0 && memcmp(s[i].h.b, h->b, CHUNK_HASH_LEN) != 0)
        i = (i + 1) & (cap - 1);
    s[i] = (struct cstore_slot){*h, id};
}

/* Add a hash (a row id > 0); false when out of memory. */
static bool cstore_set_add(struct cstore_set *set, const struct chunk_hash *h, int64_t id)
{
    if (id <= 0)
        return true;
    if (2 * (set->used + 1) > set->cap) {
        size_t ncap = set->cap ? set->cap * 2 : 1024;
        struct cstore_slot *n = calloc(ncap, sizeof *n);
        if (n == NULL)
            return false;
        for (size_t i = 0; i < set->cap; i++)
            if (set->s[i].id != 0)
                cstore_set_put(n, ncap, &set->s[i].h, set->s[i].id);
        free(set->s);
        set->s = n;
        set->cap = ncap;
    }
    cstore_set_put(set->s, set->cap, h, id);
    set->used++;
    return true;
}

static int64_t cstore_set_find(const struct cstore_set *set, const struct chunk_hash *h)
{
    if (set == NULL || set->cap == 0)
        return -1;
    for (size_t i = cstore_slot_of(h, set->cap);; i = (i + 1) & (set->cap - 1)) {
        if (set->s[i].id == 0)
            return -1;
        if (memcmp(set->s[i].h.b, h->b, CHUNK_HASH_LEN) == 0)
            return set->s[i].id;
    }
}

/* Every chunk the file holds. */
static NRT_STATUS cstore_set_load(struct cstore *cs)
{
    cs->known = calloc(1, sizeof *cs->known);
    sqlite3_stmt *s = cs->known ? sdb_prepare(cs->db, "SELECT id, hash FROM chunk") : NULL;
    if (s == NULL)
        return cs->known ? NRT_INVALID : NRT_RESOURCE;
    NRT_STATUS st = NRT_SUCCESS;
    int rc;
    while (st == NRT_SUCCESS && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        const void *h;
        size_t len;
        struct chunk_hash ch;
        if (!sdb_blob(s, 1, &h, &len) || len != CHUNK_HASH_LEN)
            continue;  /* a malformed row is never matched */
        memcpy(ch.b, h, CHUNK_HASH_LEN);
        if (!cstore_set_add(cs->known, &ch, sqlite3_column_int64(s, 0)))
            st = NRT_RESOURCE;
    }
    if (st == NRT_SUCCESS && rc != SQLITE_DONE)
        st = sdb_fail(cs->db, rc, "reading the chunk list");
    sqlite3_finalize(s);
    return st;
}

/* ---- batches ----------------------------------------------------------- */

/* One chunk in a batch. */
struct cstore_item {
    const uint8_t *src;    /* save: the chunk's bytes */
    uint8_t *dst;          /* restore: where its bytes go */
    uint64_t off;          /* offset in the region */
    size_t n;              /* raw bytes */
    struct chunk_hash h;   /* content hash */
    bool zero;             /* save: all zero, not stored */
    bool fresh;            /* save: inserted by this batch */
    int64_t id;            /* save: chunk row id, -1 while unknown */
    int codec;             /* encoding */
    size_t len;            /* encoded bytes */
    uint8_t *enc;          /* encoded bytes (in the batch's arena) */
    uint8_t *tmp;          /* scratch (in the batch's): restore n bytes, save 2n */
    bool placed;           /* restore: raw bytes read straight into dst, only checked */
    NRT_STATUS st;         /* restore: decode and hash check */
};

struct cstore_batch {
    struct cstore *cs;         /* owner */
    struct cstore_item *it;    /* items */
    size_t n;                  /* items used */
    size_t cap;                /* items allocated */
    uint8_t *arena;            /* encoded bytes of the items */
    size_t arena_used;         /* bytes used */
    size_t arena_cap;          /* bytes allocated */
    uint8_t *scratch;          /* scratch of the items */
    size_t scratch_used;       /* bytes used */
    size_t scratch_cap;        /* bytes allocated */
    struct cwriter_buf *out;   /* restore through a file: the items' staging buffer */
};

static struct cstore_batch *cstore_batch_new(struct cstore *cs)
{
    struct cstore_batch *b = calloc(1, sizeof *b);
    if (b == NULL)
        return NULL;
    b->cs = cs;
    b->cap = CSTORE_BATCH_BYTES / cs->chunk_size > 4 ? CSTORE_BATCH_BYTES / cs->chunk_size : 4;
    b->arena_cap = b->cap * chunk_bound(cs->chunk_size);
    b->scratch_cap = 2 * b->cap * (size_t)cs->chunk_size;
    b->it = calloc(b->cap, sizeof *b->it);
    b->arena = malloc(b->arena_cap);
    b->scratch = malloc(b->scratch_cap);
    if (b->it == NULL || b->arena == NULL || b->scratch == NULL) {
        free(b->it);
        free(b->arena);
        free(b->scratch);
        free(b);
        return NULL;
    }
    return b;
}

static void cstore_batch_free(struct cstore_batch *b)
{
    if (b == NULL)
        return;
    free(b->it);
    free(b->arena);
    free(b->scratch);
    free(b);
}

static void cstore_batch_clear(struct cstore_batch *b)
{
    b->n = 0;
    b->arena_used = 0;
    b->scratch_used = 0;
}

/* Room for one more item with enc and tmp bytes? Grows an empty batch
 * for an item larger than its arenas. */
static bool cstore_batch_fits(struct cstore_batch *b, size_t enc, size_t tmp)
{
    if (b->n < b->cap && b->arena_cap - b->arena_used >= enc && b->scratch_cap - b->scratch_used >= tmp)
        return true;
    if (b->n > 0)
        return false;
    uint8_t *a = enc > b->arena_cap ? realloc(b->arena, enc) : b->arena;
    if (a != NULL && enc > b->arena_cap) {
        b->arena = a;
        b->arena_cap = enc;
    }
    uint8_t *s = tmp > b->scratch_cap ? realloc(b->scratch, tmp) : b->scratch;
    if (s != NULL && tmp > b->scratch_cap) {
        b->scratch = s;
        b->scratch_cap = tmp;
    }
    return a != NULL && s != NULL;
}

/* Append an item reserving enc and tmp bytes (cstore_batch_fits first). */
static struct cstore_item *cstore_batch_add(struct cstore_batch *b, size_t enc, size_t tmp)
{
    struct cstore_item *it = &b->it[b->n++];
    memset(it, 0, sizeof *it);
    it->enc = b->arena + b->arena_used;
    it->tmp = b->scratch + b->scratch_used;
    b->arena_used += enc;
    b->scratch_used += tmp;
    it->id = -1;
    return it;
}

/* Workers and batches, made on first use. */
static NRT_STATUS cstore_parallel(struct cstore *cs)
{
    if (cs->pool == NULL)
        cs->pool = cpool_start(CSTORE_WORKERS, 0);
    for (int i = 0; i < 2; i++)
        if (cs->b[i] == NULL)
            cs->b[i] = cstore_batch_new(cs);
    return cs->pool && cs->b[0] && cs->b[1] ? NRT_SUCCESS : NRT_RESOURCE;
}

NRT_STATUS cstore_open(struct cstore *cs, struct snap_db *db, uint32_t chunk_size)
{
    memset(cs, 0, sizeof *cs);
    cs->db = db;
    cs->chunk_size = chunk_size;
    cs->enc = malloc(chunk_bound(chunk_size));
    cs->tmp = malloc(chunk_size);
    if (cs->enc == NULL || cs->tmp == NULL) {
        cstore_close(cs);
        return NRT_RESOURCE;
    }
    return NRT_SUCCESS;
}

void cstore_close(struct cstore *cs)
{
    cpool_stop(cs->pool);
    cpool_stop(cs->fpool);
    cstore_batch_free(cs->b[0]);
    cstore_batch_free(cs->b[1]);
    if (cs->known != NULL)
        free(cs->known->s);
    free(cs->known);
    sqlite3_finalize(cs->find);
    sqlite3_finalize(cs->put);
    sqlite3_finalize(cs->link);
    sqlite3_finalize(cs->get);
    sqlite3_finalize(cs->list);
    sqlite3_blob_close(cs->blob);
    free(cs->enc);
    free(cs->tmp);
    memset(cs, 0, sizeof *cs);
}

/* ---- saving ------------------------------------------------------------ */

static NRT_STATUS cstore_prepare_save(struct cstore *cs)
{
    if (cs->find != NULL)
        return NRT_SUCCESS;
    cs->find = sdb_prepare(cs->db, "SELECT id FROM chunk WHERE hash=?1");
    cs->put = sdb_prepare(cs->db, "INSERT INTO chunk(hash, raw_len, codec, data) "
                                  "VALUES(?1, ?2, ?3, ?4)");
    cs->link = sdb_prepare(cs->db, "INSERT OR REPLACE INTO region_chunk(snap, region, off, chunk) "
                                   "VALUES(?1, ?2, ?3, ?4)");
    if (cs->find == NULL || cs->put == NULL || cs->link == NULL)
        return NRT_INVALID;
    NRT_STATUS st = cstore_parallel(cs);
    return st == NRT_SUCCESS ? cstore_set_load(cs) : st;
}

/* Worker: zero test, hash, and (for a chunk the file lacks) encoding. A
 * chunk to store is hashed again and encoded from one private copy (the
 * item's tmp holds the copy, then n bytes of scratch): memory that changes
 * during the save (a program writing through a tensor's address, a host
 * collective on another thread, a tensor freed meanwhile) then still gives
 * stored bytes that are exactly those their hash names, never a chunk that
 * poisons the store. A chunk the file has is only linked by its hash. */
static void cstore_save_item(void *arg, size_t i)
{
    struct cstore_batch *b = arg;
    struct cstore_item *it = &b->it[i];
    it->zero = chunk_is_zero(it->src, it->n);
    if (it->zero)
        return;
    chunk_hash_of(it->src, it->n, &it->h);
    it->id = cstore_set_find(b->cs->known, &it->h);
    if (it->id >= 0)
        return;
    uint8_t *copy = it->tmp, *scratch = it->tmp + it->n;
    memcpy(copy, it->src, it->n);
    chunk_hash_of(copy, it->n, &it->h);
    it->id = cstore_set_find(b->cs->known, &it->h);
    if (it->id < 0)
        it->len = chunk_encode(copy, it->n, (enum chunk_policy)b->cs->db->policy, it->enc,
                               chunk_bound(it->n), scratch, &it->codec);
}

/* The row id of a chunk this batch found new: another item of the file
 * may have stored the same bytes since (SQL lookup), else insert it. */
static NRT_STATUS cstore_insert(struct cstore *cs, struct cstore_item *it)
{
    sqlite3_bind_blob(cs->find, 1, it->h.b, sizeof it->h.b, SQLITE_STATIC);
    int rc = sqlite3_step(cs->find);
    if (rc == SQLITE_ROW)
        it->id = sqlite3_column_int64(cs->find, 0);
    sqlite3_reset(cs->find);
    if (rc == SQLITE_ROW)
        return NRT_SUCCESS;
    if (rc != SQLITE_DONE)
        return sdb_fail(cs->db, rc, "looking up a chunk");
    sqlite3_bind_blob(cs->put, 1, it->h.b, sizeof it->h.b, SQLITE_STATIC);
    sqlite3_bind_int64(cs->put, 2, (sqlite3_int64)it->n);
    sqlite3_bind_int(cs->put, 3, it->codec);
    sqlite3_bind_blob(cs->put, 4, it->enc, (int)it->len, SQLITE_STATIC);
    NRT_STATUS st = sdb_done(cs->db, cs->put, "storing a chunk");
    if (st != NRT_SUCCESS)
        return st;
    it->id = sqlite3_last_insert_rowid(cs->db->sql);
    it->fresh = true;
    cs->stored += it->len;
    cs->new_chunks++;
    return NRT_SUCCESS;
}

/* This thread: the SQLite rows of a processed batch. */
static NRT_STATUS cstore_commit(struct cstore *cs, struct cstore_batch *b, int64_t snap,
                                int64_t region)
{
    NRT_STATUS st = NRT_SUCCESS;
    for (size_t i = 0; st == NRT_SUCCESS && i < b->n; i++) {
        struct cstore_item *it = &b->it[i];
        if (it->zero)
            continue;
        if (it->id < 0 && (st = cstore_insert(cs, it)) != NRT_SUCCESS)
            break;
        sqlite3_bind_int64(cs->link, 1, snap);
        sqlite3_bind_int64(cs->link, 2, region);
        sqlite3_bind_int64(cs->link, 3, (sqlite3_int64)it->off);
        sqlite3_bind_int64(cs->link, 4, it->id);
        st = sdb_done(cs->db, cs->link, "listing a chunk");
        cs->logical += it->n;
        cs->chunks++;
    }
    return st;
}

/* After a commit, with no batch running: the new chunks join the set. */
static NRT_STATUS cstore_learn(struct cstore *cs, struct cstore_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        if (b->it[i].fresh && !cstore_set_add(cs->known, &b->it[i].h, b->it[i].id))
            return NRT_RESOURCE;
    return NRT_SUCCESS;
}

/* The save pipeline of one range: batch `cur` is being filled; `prev`
 * (when pending) was processed and awaits its commit. */
struct cstore_saving {
    int64_t snap;     /* snapshot id */
    int64_t region;   /* region id */
    int cur;          /* batch being filled */
    bool pending;     /* the other batch awaits its commit */
};

/* Hand the full batch to the workers, commit the previous one meanwhile. */
static NRT_STATUS cstore_save_step(struct cstore *cs, struct cstore_saving *sv)
{
    struct cstore_batch *b = cs->b[sv->cur], *prev = cs->b[sv->cur ^ 1];
    cpool_submit(cs->pool, cstore_save_item, b, b->n);
    NRT_STATUS st = sv->pending ? cstore_commit(cs, prev, sv->snap, sv->region) : NRT_SUCCESS;
    cpool_wait(cs->pool);
    if (st == NRT_SUCCESS && sv->pending)
        st = cstore_learn(cs, prev);
    cstore_batch_clear(prev);
    sv->pending = true;
    sv->cur ^= 1;
    return st;
}

static NRT_STATUS cstore_save_finish(struct cstore *cs, struct cstore_saving *sv, NRT_STATUS st)
{
    if (st == NRT_SUCCESS && cs->b[sv->cur]->n > 0)
        st = cstore_save_step(cs, sv);
    if (st == NRT_SUCCESS && sv->pending) {
        st = cstore_commit(cs, cs->b[sv->cur ^ 1], sv->snap, sv->region);
        if (st == NRT_SUCCESS)
            st = cstore_learn(cs, cs->b[sv->cur ^ 1]);
    }
    cstore_batch_clear(cs->b[0]);
    cstore_batch_clear(cs->b[1]);
    return st;
}

/* Does any page of [p, p+n) appear in vec (one byte per page from vbase)? */
static bool cstore_resident(const unsigned char *vec, uintptr_t vbase, const uint8_t *p, size_t n,
                            uintptr_t pg)
{
    size_t first = ((uintptr_t)p - vbase) / pg, last = ((uintptr_t)p + n - 1 - vbase) / pg;
    for (size_t i = first; i <= last; i++)
        if (vec[i] & 1)
            return true;
    return false;
}

NRT_STATUS cstore_save_range(struct cstore *cs, int64_t snap, int64_t region, const uint8_t *base,
                             uint64_t size, uint64_t off, uint64_t len, bool touched)
{
    NRT_STATUS st = cstore_prepare_save(cs);
    struct cstore_saving sv = {snap, region, 0, false};
    uint64_t c = off / cs->chunk_size * cs->chunk_size;
    uint64_t end = off + len > size ? size : off + len;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    unsigned char *vec = touched ? malloc((CSTORE_WINDOW + cs->chunk_size) / pg + 2) : NULL;
    if (touched && vec == NULL)
        st = NRT_RESOURCE;
    while (st == NRT_SUCCESS && c < end) {
        /* One window: chunks [c, wend), their residency asked at once. */
        uint64_t wend = c + CSTORE_WINDOW < end ? c + CSTORE_WINDOW : end;
        uintptr_t vbase = ((uintptr_t)base + c) & ~(pg - 1);
        uint64_t wlast = (wend + cs->chunk_size - 1) / cs->chunk_size * cs->chunk_size;
        wlast = wlast < size ? wlast : size;
        if (touched && mincore((void *)vbase, (uintptr_t)base + wlast - vbase, vec) != 0) {
            LOG_ERROR("STORE", "cannot ask which pages of a memory are resident (mincore)");
            st = NRT_FAILURE;
            break;
        }
        for (; st == NRT_SUCCESS && c < wend; c += cs->chunk_size) {
            size_t n = (size_t)(size - c < cs->chunk_size ? size - c : cs->chunk_size);
            if (cs->prog != NULL)
                progress_add(cs->prog, n);
            if (touched && !cstore_resident(vec, vbase, base + c, n, pg))
                continue;
            struct cstore_batch *b = cs->b[sv.cur];
            if (!cstore_batch_fits(b, chunk_bound(n), 2 * n) &&
                (st = cstore_save_step(cs, &sv)) != NRT_SUCCESS)
                break;
            struct cstore_item *it = cstore_batch_add(cs->b[sv.cur], chunk_bound(n), 2 * n);
            it->src = base + c;
            it->off = c;
            it->n = n;
        }
    }
    free(vec);
    return cstore_save_finish(cs, &sv, st);
}

/* ---- reading ----------------------------------------------------------- */

static const char cstore_get_sql[] =
    "SELECT rc.off, c.raw_len, c.codec, c.data, c.hash, rc.chunk FROM region_chunk rc "
    "LEFT JOIN chunk c ON c.id = rc.chunk "
    "WHERE rc.snap=?1 AND rc.region=?2 AND rc.off >= ?3 AND rc.off < ?4 ORDER BY rc.off";

/* A restore lists the rows without their data (length() and typeof() do
 * not load a blob) and reads each blob with sqlite3_blob_read straight
 * into its place: no copy through SQLite's own buffer. */
static const char cstore_list_sql[] =
    "SELECT rc.off, c.raw_len, c.codec, length(c.data), c.hash, rc.chunk, typeof(c.data) "
    "FROM region_chunk rc LEFT JOIN chunk c ON c.id = rc.chunk "
    "WHERE rc.snap=?1 AND rc.region=?2 ORDER BY rc.off";

/* One chunk row, checked against the region size. */
struct cstore_row {
    uint64_t off;       /* offset in the region */
    uint64_t raw_len;   /* decoded bytes */
    int codec;          /* enum chunk_codec */
    const void *data;   /* encoded bytes (valid until the next step); NULL when listed */
    size_t len;         /* encoded length */
    const void *hash;   /* CHUNK_HASH_LEN bytes */
    int64_t chunk;      /* chunk row id */
};

/* The encoded bytes of a row: its blob (get) or its length (list). */
static bool cstore_row_data(sqlite3_stmt *s, bool listed, struct cstore_row *r)
{
    if (!listed)
        return sdb_blob(s, 3, &r->data, &r->len);
    const unsigned char *type = sqlite3_column_text(s, 6);
    uint64_t len;
    if (type == NULL || strcmp((const char *)type, "blob") != 0 ||
        !sdb_u64(s, 3, SIZE_MAX, &len))
        return false;
    r->data = NULL;
    r->len = (size_t)len;
    return true;
}

static NRT_STATUS cstore_row(struct cstore *cs, int64_t region, uint64_t size,
                             struct cstore_row *r)
{
    sqlite3_stmt *s = cs->restoring ? cs->list : cs->get;
    int64_t codec;
    size_t hlen;
    if (sqlite3_column_type(s, 1) == SQLITE_NULL) {
        LOG_ERROR("STORE", "%s: region %" PRId64 " names chunk %lld, which the file lacks",
                  cs->db->path, region, (long long)sqlite3_column_int64(s, 5));
        return NRT_INVALID;
    }
    if (!sdb_u64(s, 0, size - 1, &r->off) || !sdb_u64(s, 1, CHUNK_MAX, &r->raw_len) ||
        r->raw_len == 0 || r->raw_len > size - r->off || !sdb_int(s, 2, 0, 16, &codec) ||
        !cstore_row_data(s, cs->restoring, r) || r->len == 0 || !sdb_blob(s, 4, &r->hash, &hlen) ||
        hlen != CHUNK_HASH_LEN || r->len > 2 * (size_t)CHUNK_MAX ||
        r->off % cs->chunk_size != 0 || r->raw_len > cs->chunk_size) {
        LOG_ERROR("STORE", "%s: a chunk row of region %" PRId64 " is malformed or does not fit "
                  "the region (%" PRIu64 " bytes) and its %u-byte chunks", cs->db->path, region,
                  size, cs->chunk_size);
        return NRT_INVALID;
    }
    if (cs->restoring) {
        if (r->raw_len > cs->budget) {
            LOG_ERROR("STORE", "%s: the chunks of region %" PRId64 " add up to more than the "
                      "snapshot's recorded size", cs->db->path, region);
            return NRT_INVALID;
        }
        cs->budget -= r->raw_len;
    }
    r->codec = (int)codec;
    r->chunk = sqlite3_column_int64(s, 5);
    for (size_t i = 0; cs->allow != NULL; i++) {
        if (i == cs->nallow) {
            LOG_ERROR("STORE", "%s: the chunk at offset 0x%" PRIx64 " of region %" PRId64
                      " lies outside the memory this process owns", cs->db->path, r->off, region);
            return NRT_INVALID;
        }
        if (r->off >= cs->allow[2 * i] && r->off + r->raw_len <= cs->allow[2 * i + 1])
            break;
    }
    return NRT_SUCCESS;
}

/* Bytes in dst (n) against a chunk's hash. */
static NRT_STATUS cstore_check(const uint8_t *dst, size_t n, const void *hash)
{
    struct chunk_hash h;
    chunk_hash_of(dst, n, &h);
    return memcmp(h.b, hash, CHUNK_HASH_LEN) == 0 ? NRT_SUCCESS : NRT_INVALID;
}

/* Decode into dst (n bytes) and check the hash; no log line. */
static NRT_STATUS cstore_decode_raw(int codec, const void *data, size_t len, uint8_t *dst, size_t n,
                                    uint8_t *tmp, const void *hash)
{
    NRT_STATUS st = chunk_decode(codec, data, len, dst, n, tmp);
    return st == NRT_SUCCESS ? cstore_check(dst, n, hash) : st;
}

static NRT_STATUS cstore_bad_chunk(struct cstore *cs, int64_t region, uint64_t off, int codec,
                                   size_t len)
{
    LOG_ERROR("STORE", "%s: the chunk at offset 0x%" PRIx64 " of region %" PRId64
              " does not decode to its hash (%s, %zu bytes)", cs->db->path, off, region,
              chunk_codec_name(codec), len);
    return NRT_INVALID;
}

/* Start reading the chunks of [lo, hi) of a region. */
static NRT_STATUS cstore_query(struct cstore *cs, int64_t snap, int64_t region, uint64_t lo,
                               uint64_t hi)
{
    if (cs->get == NULL && (cs->get = sdb_prepare(cs->db, cstore_get_sql)) == NULL)
        return NRT_INVALID;
    sqlite3_reset(cs->get);
    sqlite3_bind_int64(cs->get, 1, snap);
    sqlite3_bind_int64(cs->get, 2, region);
    sqlite3_bind_int64(cs->get, 3, (sqlite3_int64)lo);
    sqlite3_bind_int64(cs->get, 4, hi > INT64_MAX ? INT64_MAX : (sqlite3_int64)hi);
    return NRT_SUCCESS;
}

/* Start listing every chunk row of a region (restores). */
static NRT_STATUS cstore_list(struct cstore *cs, int64_t snap, int64_t region)
{
    if (cs->list == NULL && (cs->list = sdb_prepare(cs->db, cstore_list_sql)) == NULL)
        return NRT_INVALID;
    sqlite3_reset(cs->list);
    sqlite3_bind_int64(cs->list, 1, snap);
    sqlite3_bind_int64(cs->list, 2, region);
    return NRT_SUCCESS;
}

/* One region being restored: where its bytes go, and the pipeline. */
struct cstore_restoring {
    int64_t region;      /* region id */
    uint8_t *base;       /* the memory written (no writer) */
    struct cpool *pool;  /* the decoders */
    struct cwriter *w;   /* writer of the region's file, or NULL: into base */
    int cur;             /* batch being filled */
    bool running;        /* the other batch is being decoded */
};

/* Worker: decode one chunk into place (memory or a staging buffer) and
 * check its hash. */
static void cstore_restore_item(void *arg, size_t i)
{
    struct cstore_batch *b = arg;
    struct cstore_item *it = &b->it[i];
    if (it->placed)
        it->st = cstore_check(it->dst, it->n, it->h.b);
    else
        it->st = cstore_decode_raw(it->codec, it->enc, it->len, it->dst, it->n, it->tmp, it->h.b);
}

/* Wait for the batch the workers decode; its first failure, logged. Its
 * staging buffer goes to the writer when every chunk checked out, else
 * back unwritten. */
static NRT_STATUS cstore_restore_join(struct cstore *cs, struct cstore_restoring *rr,
                                      struct cstore_batch *b)
{
    cpool_wait(rr->pool);
    NRT_STATUS st = NRT_SUCCESS;
    for (size_t i = 0; i < b->n && st == NRT_SUCCESS; i++) {
        const struct cstore_item *it = &b->it[i];
        if (it->st != NRT_SUCCESS)
            st = cstore_bad_chunk(cs, rr->region, it->off, it->codec, it->len);
    }
    if (b->out != NULL) {
        if (st == NRT_SUCCESS)
            cwriter_queue(rr->w, b->out);
        else
            cwriter_drop(rr->w, b->out);
        b->out = NULL;
    }
    cstore_batch_clear(b);
    return st;
}

/* The batch being filled is full: to the decoders, after the one before
 * it is done (it goes even when that one failed; the end joins it). */
static NRT_STATUS cstore_restore_step(struct cstore *cs, struct cstore_restoring *rr)
{
    NRT_STATUS st = rr->running ? cstore_restore_join(cs, rr, cs->b[rr->cur ^ 1]) : NRT_SUCCESS;
    struct cstore_batch *b = cs->b[rr->cur];
    cpool_submit(rr->pool, cstore_restore_item, b, b->n);
    rr->running = true;
    rr->cur ^= 1;
    return st;
}

/* Where a chunk's bytes go: into memory, or into the staging buffer of
 * its batch (taken from the writer with the batch's first chunk; this
 * waits while the writer is behind). */
static NRT_STATUS cstore_restore_dst(struct cstore_restoring *rr, struct cstore_batch *b,
                                     const struct cstore_row *r, uint8_t **dst)
{
    if (rr->w == NULL) {
        *dst = rr->base + r->off;
        return NRT_SUCCESS;
    }
    if (b->out == NULL) {
        NRT_STATUS st = cwriter_take(rr->w, &b->out);
        if (st != NRT_SUCCESS)
            return st;
    }
    *dst = cwriter_reserve(b->out, r->off, (size_t)r->raw_len);
    return *dst != NULL ? NRT_SUCCESS : NRT_RESOURCE;
}

/* Read a listed row's encoded bytes (len of them) into dst. */
static NRT_STATUS cstore_blob_read(struct cstore *cs, const struct cstore_row *r, void *dst)
{
    int rc = cs->blob == NULL ? sqlite3_blob_open(cs->db->sql, "main", "chunk", "data", r->chunk,
                                                  0, &cs->blob)
                              : sqlite3_blob_reopen(cs->blob, r->chunk);
    if (rc == SQLITE_OK && (size_t)sqlite3_blob_bytes(cs->blob) != r->len)
        rc = SQLITE_CORRUPT;
    if (rc == SQLITE_OK)
        rc = sqlite3_blob_read(cs->blob, dst, (int)r->len, 0);
    return rc == SQLITE_OK ? NRT_SUCCESS : sdb_fail(cs->db, rc, "reading a chunk");
}

/* Queue one checked row for decoding; a full batch goes to the workers.
 * A raw chunk is read straight into its place and only checked there. */
static NRT_STATUS cstore_restore_row(struct cstore *cs, struct cstore_restoring *rr,
                                     const struct cstore_row *r)
{
    bool placed = r->codec == CHUNK_RAW && r->len == r->raw_len;
    size_t tmp = placed ? 0 : (size_t)r->raw_len, enc = placed ? 0 : r->len;
    NRT_STATUS st = NRT_SUCCESS;
    if (!cstore_batch_fits(cs->b[rr->cur], enc, tmp)) {
        st = cstore_restore_step(cs, rr);
        if (st == NRT_SUCCESS && !cstore_batch_fits(cs->b[rr->cur], enc, tmp))
            st = NRT_RESOURCE;
        if (st != NRT_SUCCESS)
            return st;
    }
    struct cstore_batch *b = cs->b[rr->cur];
    uint8_t *dst;
    if ((st = cstore_restore_dst(rr, b, r, &dst)) != NRT_SUCCESS)
        return st;
    struct cstore_item *it = cstore_batch_add(b, enc, tmp);
    if ((st = cstore_blob_read(cs, r, placed ? dst : it->enc)) != NRT_SUCCESS) {
        b->n--;
        return st;
    }
    it->placed = placed;
    memcpy(it->h.b, r->hash, CHUNK_HASH_LEN);
    it->dst = dst;
    it->off = r->off;
    it->n = (size_t)r->raw_len;
    it->len = r->len;
    it->codec = r->codec;
    return NRT_SUCCESS;
}

/* Workers, batches, and for a file its writer (the decoders then leave
 * it a core). */
static NRT_STATUS cstore_restore_begin(struct cstore *cs, struct cstore_restoring *rr, int fd)
{
    NRT_STATUS st = cstore_parallel(cs);
    rr->pool = cs->pool;
    if (st != NRT_SUCCESS || fd < 0)
        return st;
    if (cs->fpool == NULL && (cs->fpool = cpool_start(CSTORE_WORKERS, 1)) == NULL)
        return NRT_RESOURCE;
    rr->pool = cs->fpool;
    rr->w = cwriter_start(fd, rr->region, cs->b[0]->cap * (size_t)cs->chunk_size, CSTORE_STAGING);
    return rr->w != NULL ? NRT_SUCCESS : NRT_RESOURCE;
}

/* Finish what is queued (when nothing failed), then stop the writer once
 * it wrote everything; the first failure of these. */
static NRT_STATUS cstore_restore_end(struct cstore *cs, struct cstore_restoring *rr, NRT_STATUS st)
{
    NRT_STATUS st2 = rr->running ? cstore_restore_join(cs, rr, cs->b[rr->cur ^ 1]) : NRT_SUCCESS;
    struct cstore_batch *b = cs->b[rr->cur];
    if (b != NULL && b->n > 0 && st == NRT_SUCCESS && st2 == NRT_SUCCESS) {
        cpool_submit(rr->pool, cstore_restore_item, b, b->n);
        st2 = cstore_restore_join(cs, rr, b);
    }
    if (b != NULL && b->out != NULL) {
        cwriter_drop(rr->w, b->out);
        b->out = NULL;
    }
    if (b != NULL)
        cstore_batch_clear(b);
    NRT_STATUS st3 = cwriter_finish(rr->w);
    return st2 != NRT_SUCCESS ? st2 : st3;
}

NRT_STATUS cstore_restore_region(struct cstore *cs, int64_t snap, int64_t region, uint8_t *base,
                                 uint64_t size, int fd)
{
    struct cstore_restoring rr = {region, base, NULL, NULL, 0, false};
    NRT_STATUS st = cstore_restore_begin(cs, &rr, fd);
    /* Every row of the region, so that one that does not fit is seen. */
    if (st == NRT_SUCCESS)
        st = cstore_list(cs, snap, region);
    cs->restoring = true;
    int rc = SQLITE_DONE;
    while (st == NRT_SUCCESS && (rc = sqlite3_step(cs->list)) == SQLITE_ROW) {
        struct cstore_row r;
        st = cstore_row(cs, region, size, &r);
        if (st == NRT_SUCCESS)
            st = cstore_restore_row(cs, &rr, &r);
        if (st == NRT_SUCCESS && cs->prog != NULL)
            progress_add(cs->prog, r.raw_len);
    }
    if (st == NRT_SUCCESS && rc != SQLITE_DONE)
        st = sdb_fail(cs->db, rc, "reading chunks");
    NRT_STATUS st2 = cstore_restore_end(cs, &rr, st);
    if (cs->list != NULL)
        sqlite3_reset(cs->list);
    sqlite3_blob_close(cs->blob);
    cs->blob = NULL;
    cs->restoring = false;
    return st != NRT_SUCCESS ? st : st2;
}

NRT_STATUS cstore_read(struct cstore *cs, int64_t snap, int64_t region, uint64_t size,
                       uint64_t off, uint64_t len, uint8_t *buf)
{
    memset(buf, 0, len);
    if (len == 0)
        return NRT_SUCCESS;
    if (off > size || len > size - off) {
        LOG_ERROR("STORE", "%s: bytes [0x%" PRIx64 ", +%" PRIu64 ") are outside region %" PRId64
                  " (%" PRIu64 " bytes)", cs->db->path, off, len, region, size);
        return NRT_INVALID;
    }
    /* A chunk is at most CHUNK_MAX long: any that overlaps starts after this. */
    uint64_t lo = off > CHUNK_MAX ? off - CHUNK_MAX + 1 : 0;
    NRT_STATUS st = cstore_query(cs, snap, region, lo, off + len);
    uint8_t *dec = NULL;
    int rc = SQLITE_DONE;
    while (st == NRT_SUCCESS && (rc = sqlite3_step(cs->get)) == SQLITE_ROW) {
        struct cstore_row r;
        st = cstore_row(cs, region, size, &r);
        if (st != NRT_SUCCESS || r.off + r.raw_len <= off)
            continue;
        free(dec);
        dec = malloc(2 * (size_t)r.raw_len);
        if (dec == NULL) {
            st = NRT_RESOURCE;
            break;
        }
        st = cstore_decode_raw(r.codec, r.data, r.len, dec, (size_t)r.raw_len, dec + r.raw_len,
                               r.hash);
        if (st != NRT_SUCCESS)
            st = cstore_bad_chunk(cs, region, r.off, r.codec, r.len);
        uint64_t a = r.off > off ? r.off : off;
        uint64_t b = r.off + r.raw_len < off + len ? r.off + r.raw_len : off + len;
        if (st == NRT_SUCCESS && b > a)
            memcpy(buf + (a - off), dec + (a - r.off), (size_t)(b - a));
    }
    free(dec);
    if (st == NRT_SUCCESS && rc != SQLITE_DONE)
        st = sdb_fail(cs->db, rc, "reading chunks");
    if (cs->get != NULL)
        sqlite3_reset(cs->get);
    return st;
}
