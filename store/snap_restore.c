/*
 * snap_restore.c: rebuilding a saved state into a fresh runtime (see
 * snapshot.h).
 *
 * Order: the snapshot row is checked against the running configuration;
 * models are loaded from their stored NEFFs with their blocks re-taken at
 * the recorded offsets; tensor storages are re-taken the same way (host
 * storages get their bytes back), then tensors and tensor sets; then each
 * chip's HBM and each core's SBUF, PSUM and registers. Every value read
 * is checked first. On any failure the objects made so far are freed.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/runtime/state.h"
#include "emu/core/core_state.h"
#include "emu/grow.h"
#include "emu/log.h"
#include "store/snap_int.h"

/* Largest host storage a restore accepts (snap_set_host_limit). */
static uint64_t snap_host_limit = 64ull << 30;

/* A set entry whose tensor was freed before the save points here: not a
 * live tensor, so a lookup reports it as freed, as it did. */
static const char snap_freed_tensor;

/* One restore in progress. */
struct snap_restorer {
    struct snap_db *db;                  /* the file */
    int64_t snap;                        /* snapshot id */
    struct machine *mach;                /* the open machine */
    struct progress *prog;               /* the terminal's progress line */
    struct cstore cs;                    /* chunk reads */
    struct snap_handle_map map;          /* restored objects */
    size_t cap;                          /* capacity of map.v */
    struct tensor_storage **storages;    /* by storage id (references held) */
    uint64_t *storage_size;              /* usable bytes of each */
    size_t nstorages;                    /* entries in storages */
};

void snap_set_host_limit(uint64_t bytes)
{
    snap_host_limit = bytes;
}

static NRT_STATUS snap_bad(struct snap_restorer *rs, const char *what)
{
    LOG_ERROR("STORE", "%s: snapshot %" PRId64 ": %s", rs->db->path, rs->snap, what);
    return NRT_INVALID;
}

static NRT_STATUS snap_map_add(struct snap_restorer *rs, uint64_t old, void *obj, int kind)
{
    if (!GROW_ARRAY(rs->map.v, rs->cap, rs->map.n + 1, 16))
        return NRT_RESOURCE;
    rs->map.v[rs->map.n++] = (struct snap_handle){old, obj, kind};
    return NRT_SUCCESS;
}

void *snap_handle_map_find(const struct snap_handle_map *map, uint64_t old_handle)
{
    for (size_t i = 0; map != NULL && i < map->n; i++)
        if (map->v[i].old_handle == old_handle)
            return map->v[i].obj;
    return NULL;
}

void snap_handle_map_free(struct snap_handle_map *map)
{
    if (map == NULL)
        return;
    free(map->v);
    map->v = NULL;
    map->n = 0;
}

/* Step a query (sdb_next). */
static bool snap_next(struct snap_restorer *rs, sqlite3_stmt *s, NRT_STATUS *st)
{
    return sdb_next(rs->db, s, st);
}

/* A query of this snapshot's rows (?1 = snapshot id). */
static sqlite3_stmt *snap_query(struct snap_restorer *rs, const char *sql)
{
    sqlite3_stmt *s = sdb_prepare(rs->db, sql);
    if (s != NULL)
        sqlite3_bind_int64(s, 1, rs->snap);
    return s;
}

/* Run one of this snapshot's queries and hand each row to fn, stopping at
 * the first status that is not NRT_SUCCESS. */
static NRT_STATUS snap_each(struct snap_restorer *rs, const char *sql,
                            NRT_STATUS (*fn)(struct snap_restorer *rs, sqlite3_stmt *s))
{
    sqlite3_stmt *s = snap_query(rs, sql);
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    while (snap_next(rs, s, &st))
        st = fn(rs, s);
    sqlite3_finalize(s);
    return st;
}

/* ---- the snapshot row -------------------------------------------------- */

static NRT_STATUS snap_check_config(struct snap_restorer *rs, const char *profile, int64_t lnc,
                                    const char *visible)
{
    const struct machine_config *cfg = &rs->mach->cfg;
    char mine[CONFIG_MAX_VNCS * 5 + 8];
    size_t n = 0;
    mine[0] = '\0';
    for (uint32_t i = 0; i < cfg->visible_count && n + 8 < sizeof mine; i++)
        n += (size_t)snprintf(mine + n, sizeof mine - n, "%s%u", i ? "," : "", cfg->visible[i]);
    if (strcmp(profile, cfg->profile->name) == 0 && lnc == cfg->lnc && strcmp(visible, mine) == 0)
        return NRT_SUCCESS;
    LOG_ERROR("STORE", "%s: snapshot %" PRId64 " was taken on %s LNC=%" PRId64 " with VNCs %.64s;"
              " this runtime is %s LNC=%u with VNCs %.64s (set TRNEMU_INSTANCE, "
              "NEURON_LOGICAL_NC_CONFIG and NEURON_RT_VISIBLE_CORES to match)", rs->db->path,
              rs->snap, profile, lnc, visible, cfg->profile->name, cfg->lnc, mine);
    return NRT_INVALID;
}

static NRT_STATUS snap_header(struct snap_restorer *rs)
{
    sqlite3_stmt *s = snap_query(rs, "SELECT profile, lnc, visible, chunk_size, logical_bytes "
                                     "FROM snapshot WHERE id=?1");
    if (s == NULL)
        return NRT_INVALID;
    NRT_STATUS st = NRT_SUCCESS;
    if (!snap_next(rs, s, &st)) {
        sqlite3_finalize(s);
        return st != NRT_SUCCESS ? st : snap_bad(rs, "no such snapshot in the file");
    }
    const char *profile = sdb_text(s, 0, 64), *visible = sdb_text(s, 2, CONFIG_MAX_VNCS * 5);
    int64_t lnc, cs;
    uint64_t logical = 0;
    if (profile == NULL || visible == NULL || !sdb_int(s, 1, 1, MACHINE_MAX_LNC, &lnc) ||
        !sdb_int(s, 3, 4096, CHUNK_MAX, &cs) || (cs & (cs - 1)) != 0 ||
        !sdb_u64(s, 4, INT64_MAX, &logical))
        st = snap_bad(rs, "the snapshot row is malformed");
    if (st == NRT_SUCCESS)
        st = snap_check_config(rs, profile, lnc, visible);
    if (st == NRT_SUCCESS)
        st = cstore_open(&rs->cs, rs->db, (uint32_t)cs);
    rs->cs.budget = logical; /* no restore writes more than the save recorded */
    rs->cs.prog = rs->prog;
    rs->prog->total = logical;
    sqlite3_finalize(s);
    return st;
}

/* Execution options: those the environment does not set are taken from
 * the snapshot, so that executions behave as they did. */
static NRT_STATUS snap_options(struct snap_restorer *rs)
{
    static const char *const exec_opts[] = {
        "NEURON_RT_EXEC_TIMEOUT", "TRNEMU_RACECHECK", "NEURON_RT_STOCHASTIC_ROUNDING_EN",
        "NEURON_RT_STOCHASTIC_ROUNDING_SEED", "TRNEMU_FOREIGN_NEFF", "NEURON_RT_VALIDATE_HASH",
    };
    sqlite3_stmt *s = snap_query(rs, "SELECT name, value FROM option WHERE snap=?1 ORDER BY name");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    while (snap_next(rs, s, &st)) {
        const char *name = sdb_text(s, 0, 64), *value = sdb_text(s, 1, 4096);
        if (name == NULL || value == NULL) {
            st = snap_bad(rs, "an option row is malformed");
            break;
        }
        for (size_t i = 0; i < sizeof exec_opts / sizeof *exec_opts; i++) {
            if (strcmp(name, exec_opts[i]) != 0)
                continue;
            const char *now = getenv(name);
            if (now == NULL)
                setenv(name, value, 0);
            else if (strcmp(now, value) != 0)
                LOG_WARN("STORE", "%s=%s here; the snapshot was taken with %s", name, now, value);
        }
    }
    sqlite3_finalize(s);
    return st;
}

/* ---- models ------------------------------------------------------------ */

/* The NEFF bytes of a neff row, hash checked (valid until s is reset). */
static NRT_STATUS snap_neff_bytes(struct snap_restorer *rs, sqlite3_stmt *s, int64_t id,
                                  const void **p, size_t *len)
{
    sqlite3_bind_int64(s, 1, id);
    NRT_STATUS st = NRT_SUCCESS;
    if (!snap_next(rs, s, &st))
        return st != NRT_SUCCESS ? st : snap_bad(rs, "a model names a NEFF the file lacks");
    const void *h;
    size_t hlen;
    int64_t size;
    struct chunk_hash mine;
    if (!sdb_int(s, 0, 0, INT32_MAX, &size) || !sdb_blob(s, 1, p, len) ||
        (size_t)size != *len || !sdb_blob(s, 2, &h, &hlen) || hlen != CHUNK_HASH_LEN)
        return snap_bad(rs, "a NEFF row is malformed");
    chunk_hash_of(*p, *len, &mine);
    if (memcmp(mine.b, h, CHUNK_HASH_LEN) != 0)
        return snap_bad(rs, "a stored NEFF does not match its hash");
    return NRT_SUCCESS;
}

/* A model's blocks in load order; *out malloc'd. */
static NRT_STATUS snap_model_blocks(struct snap_restorer *rs, sqlite3_stmt *s, uint64_t handle,
                                    struct hbm_block **out, size_t *n)
{
    size_t cap = 0;
    NRT_STATUS st = NRT_SUCCESS;
    *out = NULL;
    *n = 0;
    sqlite3_bind_int64(s, 2, (sqlite3_int64)handle);
    while (snap_next(rs, s, &st)) {
        int64_t chip, stack, vnc;
        uint64_t off, len;
        if (!sdb_int(s, 0, 0, UINT32_MAX, &chip) || !sdb_int(s, 1, 0, UINT32_MAX, &stack) ||
            !sdb_int(s, 2, 0, UINT32_MAX, &vnc) || !sdb_u64(s, 3, INT64_MAX, &off) ||
            !sdb_u64(s, 4, INT64_MAX, &len) || *n >= 1u << 20) {
            st = snap_bad(rs, "a model block row is malformed");
            break;
        }
        if (!GROW_ARRAY(*out, cap, *n + 1, 16)) {
            st = NRT_RESOURCE;
            break;
        }
        (*out)[(*n)++] = (struct hbm_block){(uint32_t)chip, (uint32_t)stack, (uint32_t)vnc, off, len};
    }
    sqlite3_reset(s);
    return st;
}

static NRT_STATUS snap_model_one(struct snap_restorer *rs, sqlite3_stmt *row, sqlite3_stmt *blk,
                                 sqlite3_stmt *neff)
{
    int64_t vnc, gvnc, neff_id, rank, world;
    uint64_t handle, executions;
    if (!sdb_u64(row, 0, UINT64_MAX, &handle) || !sdb_int(row, 1, 0, CONFIG_MAX_VNCS, &vnc) ||
        !sdb_int(row, 2, 0, CONFIG_MAX_VNCS, &gvnc) || !sdb_int(row, 3, 0, INT64_MAX, &neff_id) ||
        !sdb_u64(row, 4, INT64_MAX, &executions) || !sdb_int(row, 5, 0, UINT32_MAX, &world) ||
        !sdb_int(row, 6, 0, world > 0 ? world - 1 : 0, &rank))
        return snap_bad(rs, "a model row is malformed");
    if (state_vnc_global(rs->mach, (int)vnc) != gvnc)
        return snap_bad(rs, "a model's VNC is not visible to this process");
    struct hbm_block *blocks;
    size_t nblocks;
    const void *bytes;
    size_t size;
    NRT_STATUS st = snap_model_blocks(rs, blk, handle, &blocks, &nblocks);
    if (st == NRT_SUCCESS)
        st = snap_neff_bytes(rs, neff, neff_id, &bytes, &size);
    nrt_model_t *m = NULL;
    if (st == NRT_SUCCESS)
        st = state_model_restore(bytes, size, (int)vnc, blocks, nblocks, executions, &m);
    if (st == NRT_SUCCESS && world > 0)  /* loaded with nrt_load_collectives */
        state_model_set_collectives(m, (uint32_t)rank, (uint32_t)world);
    sqlite3_reset(neff);
    free(blocks);
    if (st == NRT_SUCCESS && (st = snap_map_add(rs, handle, m, HANDLE_MODEL)) != NRT_SUCCESS)
        state_model_unload(m);
    return st;
}

static NRT_STATUS snap_models(struct snap_restorer *rs)
{
    sqlite3_stmt *row = snap_query(rs, "SELECT handle, vnc, gvnc, neff, executions, cc_world,"
                                       " cc_rank FROM model WHERE snap=?1 ORDER BY handle");
    sqlite3_stmt *blk = snap_query(rs, "SELECT chip, stack, vnc, off, len FROM model_block "
                                       "WHERE snap=?1 AND model=?2 ORDER BY seq");
    sqlite3_stmt *neff = sdb_prepare(rs->db, "SELECT size, data, hash FROM neff WHERE id=?1");
    NRT_STATUS st = row && blk && neff ? NRT_SUCCESS : NRT_INVALID;
    while (snap_next(rs, row, &st))
        st = snap_model_one(rs, row, blk, neff);
    sqlite3_finalize(row);
    sqlite3_finalize(blk);
    sqlite3_finalize(neff);
    return st;
}

/* ---- storages and tensors ---------------------------------------------- */

/* The size of a region row of this snapshot, checking its kind. */
static NRT_STATUS snap_region_size(struct snap_restorer *rs, int64_t region, const char *kind,
                                   uint64_t *size)
{
    sqlite3_stmt *s = snap_query(rs, "SELECT kind, size FROM region WHERE snap=?1 AND id=?2");
    if (s == NULL)
        return NRT_INVALID;
    sqlite3_bind_int64(s, 2, region);
    NRT_STATUS st = NRT_SUCCESS;
    if (!snap_next(rs, s, &st)) {
        if (st == NRT_SUCCESS)
            st = snap_bad(rs, "a memory region is missing");
    } else {
        const char *k = sdb_text(s, 0, 16);
        if (k == NULL || strcmp(k, kind) != 0 || !sdb_u64(s, 1, INT64_MAX, size))
            st = snap_bad(rs, "a memory region row is malformed");
    }
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_storage_one(struct snap_restorer *rs, sqlite3_stmt *s, size_t idx)
{
    int64_t id, kind, chip, stack, vnc, region = -1;
    uint64_t size, off = 0, len = 0;
    if (!sdb_int(s, 0, (int64_t)idx, (int64_t)idx, &id) || !sdb_int(s, 1, 1, 3, &kind) ||
        !sdb_u64(s, 2, INT64_MAX, &size))
        return snap_bad(rs, "a storage row is malformed (or storage ids are not 0, 1, 2 ...)");
    struct hbm_block b = {0};
    if (kind == STORAGE_HBM) {
        if (!sdb_int(s, 3, 0, UINT32_MAX, &chip) || !sdb_int(s, 4, 0, UINT32_MAX, &stack) ||
            !sdb_int(s, 5, 0, UINT32_MAX, &vnc) || !sdb_u64(s, 6, INT64_MAX, &off) ||
            !sdb_u64(s, 7, INT64_MAX, &len) || size > len)
            return snap_bad(rs, "a device storage row is malformed");
        b = (struct hbm_block){(uint32_t)chip, (uint32_t)stack, (uint32_t)vnc, off, len};
    } else {
        uint64_t rsize;
        if (!sdb_int(s, 8, 0, INT64_MAX, &region))
            return snap_bad(rs, "a host storage row is malformed");
        if (size > snap_host_limit)
            return snap_bad(rs, "a host storage is larger than the restore limit");
        NRT_STATUS st = snap_region_size(rs, region, "host", &rsize);
        if (st == NRT_SUCCESS && rsize != size)
            st = snap_bad(rs, "a host storage and its memory region differ in size");
        if (st != NRT_SUCCESS)
            return st;
    }
    NRT_STATUS st = state_storage_restore((enum tensor_storage_kind)kind, size, &b,
                                           &rs->storages[idx]);
    if (st != NRT_SUCCESS)
        return st;
    rs->storage_size[idx] = size;
    rs->nstorages = idx + 1;
    if (kind != STORAGE_HBM)
        st = cstore_restore_region(&rs->cs, rs->snap, region, rs->storages[idx]->va, size, -1);
    return st;
}

static NRT_STATUS snap_storages(struct snap_restorer *rs)
{
    sqlite3_stmt *c = snap_query(rs, "SELECT count(*) FROM storage WHERE snap=?1");
    NRT_STATUS st = c ? NRT_SUCCESS : NRT_INVALID;
    int64_t n = 0;
    if (snap_next(rs, c, &st) && !sdb_int(c, 0, 0, 1 << 24, &n))
        st = snap_bad(rs, "too many storages");
    sqlite3_finalize(c);
    if (st != NRT_SUCCESS)
        return st;
    rs->storages = calloc(n ? (size_t)n : 1, sizeof *rs->storages);
    rs->storage_size = calloc(n ? (size_t)n : 1, sizeof *rs->storage_size);
    if (rs->storages == NULL || rs->storage_size == NULL)
        return NRT_RESOURCE;
    sqlite3_stmt *s = snap_query(rs, "SELECT id, kind, size, chip, stack, vnc, off, len, region "
                                     "FROM storage WHERE snap=?1 ORDER BY id");
    st = s ? NRT_SUCCESS : NRT_INVALID;
    for (size_t i = 0; snap_next(rs, s, &st); i++)
        st = i < (size_t)n ? snap_storage_one(rs, s, i) : snap_bad(rs, "storages changed");
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_tensor_one(struct snap_restorer *rs, sqlite3_stmt *s)
{
    struct tensor_record r = {0};
    uint64_t handle;
    int64_t placement, vnc, sid = -1;
    const char *name = sdb_text(s, 1, 4096);
    if (!sdb_u64(s, 0, UINT64_MAX, &handle) || name == NULL ||
        !sdb_int(s, 2, NRT_TENSOR_PLACEMENT_DEVICE, NRT_TENSOR_PLACEMENT_VIRTUAL, &placement) ||
        !sdb_int(s, 3, -1, (int64_t)rs->mach->cfg.visible_count - 1, &vnc) ||
        !sdb_u64(s, 4, INT64_MAX, &r.size) ||
        (sqlite3_column_type(s, 5) != SQLITE_NULL &&
         !sdb_int(s, 5, 0, (int64_t)rs->nstorages - 1, &sid)) ||
        !sdb_u64(s, 6, INT64_MAX, &r.off) || !sdb_u64(s, 7, INT64_MAX, &r.completions))
        return snap_bad(rs, "a tensor row is malformed or names a missing storage");
    r.st = sid >= 0 ? rs->storages[sid] : NULL;
    uint64_t have = sid >= 0 ? rs->storage_size[sid] : 0;
    if (r.off > have || r.size > have - r.off)
        return snap_bad(rs, "a tensor lies outside its storage");
    if (placement == NRT_TENSOR_PLACEMENT_DEVICE && (r.st == NULL || r.st->kind != STORAGE_HBM))
        return snap_bad(rs, "a device tensor has no device storage");
    r.placement = (nrt_tensor_placement_t)placement;
    r.vnc = (int)vnc;
    if (strlen(name) >= sizeof r.name)
        return snap_bad(rs, "a tensor name is longer than the runtime keeps");
    snprintf(r.name, sizeof r.name, "%s", name);
    nrt_tensor_t *t;
    NRT_STATUS st = state_tensor_restore(&r, &t);
    if (st == NRT_SUCCESS && (st = snap_map_add(rs, handle, t, HANDLE_TENSOR)) != NRT_SUCCESS)
        state_tensor_free(t);
    return st;
}

static NRT_STATUS snap_tensors(struct snap_restorer *rs)
{
    return snap_each(rs, "SELECT handle, name, placement, vnc, size, storage, off,"
                         " completions FROM tensor WHERE snap=?1 ORDER BY handle",
                     snap_tensor_one);
}

/* The restored tensor of an old handle, of kind HANDLE_TENSOR. */
static void *snap_find_kind(const struct snap_restorer *rs, uint64_t old, int kind)
{
    for (size_t i = 0; i < rs->map.n; i++)
        if (rs->map.v[i].old_handle == old && rs->map.v[i].kind == kind)
            return rs->map.v[i].obj;
    return NULL;
}

static NRT_STATUS snap_set_one(struct snap_restorer *rs, sqlite3_stmt *row, sqlite3_stmt *ent)
{
    uint64_t handle;
    if (!sdb_u64(row, 0, UINT64_MAX, &handle))
        return snap_bad(rs, "a tensor set row is malformed");
    nrt_tensor_set_t *set;
    NRT_STATUS st = state_set_allocate(&set);
    if (st != NRT_SUCCESS)
        return st;
    if ((st = snap_map_add(rs, handle, set, HANDLE_TENSOR_SET)) != NRT_SUCCESS) {
        state_set_destroy(set);
        return st;
    }
    sqlite3_bind_int64(ent, 2, (sqlite3_int64)handle);
    while (snap_next(rs, ent, &st)) {
        const char *name = sdb_text(ent, 0, 4096);
        uint64_t old;
        if (name == NULL || !sdb_u64(ent, 1, UINT64_MAX, &old)) {
            st = snap_bad(rs, "a tensor set entry is malformed");
            break;
        }
        void *t = old != 0 ? snap_find_kind(rs, old, HANDLE_TENSOR) : NULL;
        st = state_set_restore_entry(set, name, t ? t : (void *)&snap_freed_tensor);
    }
    sqlite3_reset(ent);
    return st;
}

static NRT_STATUS snap_sets(struct snap_restorer *rs)
{
    sqlite3_stmt *row = snap_query(rs, "SELECT handle FROM tensor_set WHERE snap=?1 ORDER BY handle");
    sqlite3_stmt *ent = snap_query(rs, "SELECT name, tensor FROM tensor_set_entry WHERE snap=?1 "
                                       "AND set_handle=?2 ORDER BY pos");
    NRT_STATUS st = row && ent ? NRT_SUCCESS : NRT_INVALID;
    while (snap_next(rs, row, &st))
        st = snap_set_one(rs, row, ent);
    sqlite3_finalize(row);
    sqlite3_finalize(ent);
    return st;
}

/* ---- memory ------------------------------------------------------------ */

static NRT_STATUS snap_hbm(struct snap_restorer *rs)
{
    sqlite3_stmt *s = snap_query(rs, "SELECT id, chip, size FROM region WHERE snap=?1 AND "
                                     "kind='hbm' ORDER BY id");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    while (snap_next(rs, s, &st)) {
        int64_t id, chip;
        uint64_t size;
        if (!sdb_int(s, 0, 0, INT64_MAX, &id) ||
            !sdb_int(s, 1, 0, (int64_t)rs->mach->cfg.profile->chips - 1, &chip) ||
            !sdb_u64(s, 2, INT64_MAX, &size) || size != rs->mach->chips[chip].hbm_size) {
            st = snap_bad(rs, "an HBM region does not fit the machine");
            break;
        }
        /* Only into the slices of the VNCs this process owns (others may
         * belong to other processes of the instance). */
        struct state_range sl[64];
        uint64_t allow[2 * 64];
        size_t n = state_hbm_slices(rs->mach, (uint32_t)chip, sl, 64);
        for (size_t i = 0; i < n && i < 64; i++) {
            allow[2 * i] = sl[i].off;
            allow[2 * i + 1] = sl[i].off + sl[i].len;
        }
        rs->cs.allow = allow;
        rs->cs.nallow = n < 64 ? n : 64;
        /* Through the HBM file when there is one: no page faults. */
        int fd = state_hbm_fd(rs->mach, (uint32_t)chip);
        st = cstore_restore_region(&rs->cs, rs->snap, id, rs->mach->chips[chip].hbm, size, fd);
        rs->cs.allow = NULL;
        if (fd >= 0)
            close(fd);
    }
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_core_one(struct snap_restorer *rs, sqlite3_stmt *s)
{
    int64_t vnc, idx, gen, rsb, rps;
    const void *blob;
    size_t len;
    if (!sdb_int(s, 0, 0, (int64_t)rs->mach->cfg.total_vncs - 1, &vnc) ||
        !sdb_int(s, 1, 0, (int64_t)rs->mach->cfg.lnc - 1, &idx) ||
        !sdb_int(s, 2, rs->mach->cfg.profile->gen, rs->mach->cfg.profile->gen, &gen) ||
        !sdb_blob(s, 3, &blob, &len) || !sdb_int(s, 4, 0, INT64_MAX, &rsb) ||
        !sdb_int(s, 5, 0, INT64_MAX, &rps))
        return snap_bad(rs, "a core row is malformed or does not fit the machine");
    struct core *c;
    NRT_STATUS st = state_core_make(rs->mach, (uint32_t)vnc, (uint32_t)idx, &c);
    if (st != NRT_SUCCESS)
        return st;
    if (core_state_load(c, blob, len) != EMU_OK)
        return snap_bad(rs, "a core's register blob is malformed");
    uint64_t sbuf = (uint64_t)ISA_NUM_PARTITIONS * c->sbuf_part_bytes, psum, have;
    psum = (uint64_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES;
    st = snap_region_size(rs, rsb, "sbuf", &have);
    if (st == NRT_SUCCESS && have != sbuf)
        st = snap_bad(rs, "an SBUF region has the wrong size");
    if (st == NRT_SUCCESS)
        st = cstore_restore_region(&rs->cs, rs->snap, rsb, c->sbuf, sbuf, -1);
    if (st == NRT_SUCCESS)
        st = snap_region_size(rs, rps, "psum", &have);
    if (st == NRT_SUCCESS && have != psum)
        st = snap_bad(rs, "a PSUM region has the wrong size");
    if (st == NRT_SUCCESS)
        st = cstore_restore_region(&rs->cs, rs->snap, rps, c->psum, psum, -1);
    return st;
}

static NRT_STATUS snap_cores(struct snap_restorer *rs)
{
    return snap_each(rs, "SELECT vnc, idx, gen, state, sbuf, psum FROM core "
                         "WHERE snap=?1 ORDER BY vnc, idx", snap_core_one);
}

/* ---- the whole restore ------------------------------------------------- */

/* Undo a failed restore: free what was made, newest first. */
static void snap_undo(struct snap_restorer *rs)
{
    for (size_t i = rs->map.n; i-- > 0;) {
        struct snap_handle *h = &rs->map.v[i];
        if (h->kind == HANDLE_TENSOR)
            state_tensor_free(h->obj);
        else if (h->kind == HANDLE_TENSOR_SET)
            state_set_destroy(h->obj);
        else if (h->kind == HANDLE_MODEL)
            state_model_unload(h->obj);
    }
    snap_handle_map_free(&rs->map);
}

/* Every kind of object, in the order of SNAP_KINDS (snap_int.h). */
#define SNAP_RESTORE_KIND(kind) snap_##kind,
static NRT_STATUS (*const snap_restore_kinds[])(struct snap_restorer *rs) = {
    SNAP_KINDS(SNAP_RESTORE_KIND)};
#undef SNAP_RESTORE_KIND

static NRT_STATUS snap_restore_all(struct snap_restorer *rs)
{
    bool legacy = false;
    NRT_STATUS st = snap_verify_rows(rs->db, rs->snap, false, &legacy);
    if (st == NRT_SUCCESS && legacy)
        LOG_WARN("STORE", "%s: snapshot %" PRId64 " predates manifests (schema 1): a deleted "
                 "or swapped row cannot be detected", rs->db->path, rs->snap);
    if (st == NRT_SUCCESS)
        st = snap_header(rs);
    if (st == NRT_SUCCESS && !state_is_fresh(rs->mach))
        st = NRT_INVALID;
    for (size_t i = 0;
         st == NRT_SUCCESS && i < sizeof snap_restore_kinds / sizeof *snap_restore_kinds; i++)
        st = snap_restore_kinds[i](rs);
    return st;
}

/* Read the file through SQLite's memory-mapped I/O while restoring (up to
 * the 2 GiB SQLite allows by default; the rest is read as usual): a
 * chunk's bytes are then copied once, from the page cache to their place,
 * instead of a read() per database page first. Only during a restore, so
 * that no mapping outlives it. A refusal only costs speed. */
static void snap_map_file(struct snap_db *db, bool on)
{
    char sql[48];
    snprintf(sql, sizeof sql, "PRAGMA mmap_size=%lld", on ? (long long)SNAP_RESTORE_MMAP_BYTES : 0ll);
    (void)sqlite3_exec(db->sql, sql, NULL, NULL, NULL);
}

NRT_STATUS snap_restore(struct snap_db *db, int64_t id, struct snap_handle_map *map)
{
    assert(state_held());
    struct snap_restorer rs = {.db = db, .snap = id, .mach = state_machine()};
    struct progress pg;
    map->v = NULL;
    map->n = 0;
    snap_db_lock(db);
    progress_begin(&pg, "restoring snapshot", "MiB", 0);
    rs.prog = &pg;
    NRT_STATUS st = id >= 0 ? NRT_SUCCESS : snap_latest(db, &rs.snap);
    if (st == NRT_SUCCESS && rs.snap < 0) {
        LOG_ERROR("STORE", "%s holds no snapshot", db->path);
        st = NRT_INVALID;
    }
    if (st == NRT_SUCCESS) {
        snap_map_file(db, true);
        st = snap_restore_all(&rs);
        snap_map_file(db, false);
    }
    for (size_t i = 0; i < rs.nstorages; i++)
        state_storage_put(rs.storages[i]);
    free(rs.storages);
    free(rs.storage_size);
    if (st != NRT_SUCCESS)
        snap_undo(&rs);
    else
        LOG_INFO("STORE", "%s: restored snapshot %" PRId64 ": %zu objects", db->path, rs.snap,
                 rs.map.n);
    progress_end(&pg);
    *map = rs.map;
    cstore_close(&rs.cs);
    snap_db_unlock(db);
    return st;
}
