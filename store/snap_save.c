/*
 * snap_save.c: saving the whole device state as one snapshot (see
 * snapshot.h). Everything is written in one transaction, so a snapshot
 * is either wholly in the file or not at all.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices/runtime/state.h"
#include "emu/core/core_state.h"
#include "emu/log.h"
#include "store/snap_int.h"

/* The execution and configuration options a snapshot records. */
static const char *const snap_option_names[] = {
    "TRNEMU_INSTANCE", "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VISIBLE_CORES",
    "NEURON_RT_NUM_CORES", "NEURON_RT_EXEC_TIMEOUT", "TRNEMU_RACECHECK",
    "NEURON_RT_STOCHASTIC_ROUNDING_EN", "NEURON_RT_STOCHASTIC_ROUNDING_SEED",
    "TRNEMU_FOREIGN_NEFF", "NEURON_RT_VALIDATE_HASH",
};

/* One save in progress. */
struct snap_saver {
    struct snap_db *db;          /* the file */
    int64_t snap;                /* id of the snapshot being written */
    struct state_view v;         /* the runtime's objects */
    struct cstore cs;            /* chunk store pass */
    int64_t next_region;         /* id of the next region row */
    uint64_t neff_bytes;         /* NEFF bytes new to the file */
    const struct tensor_storage **storages; /* distinct storages, sorted by address */
    size_t nstorages;            /* entries in storages */
};

/* Bind a uint64 handle or size (stored as the same 64 bits, signed). */
static void snap_bind_u64(sqlite3_stmt *s, int i, uint64_t v)
{
    sqlite3_bind_int64(s, i, (sqlite3_int64)v);
}

/* ---- the snapshot row -------------------------------------------------- */

static void snap_visible_text(const struct machine_config *cfg, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < cfg->visible_count && n + 8 < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%u", i ? "," : "", cfg->visible[i]);
}

static void snap_now_text(char *out, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

static NRT_STATUS snap_row(struct snap_saver *sv, const char *reason, int64_t call_seq)
{
    const struct machine_config *cfg = &sv->v.mach->cfg;
    char visible[CONFIG_MAX_VNCS * 5 + 8];
    char now[40];
    snap_visible_text(cfg, visible, sizeof visible);
    snap_now_text(now, sizeof now);
    sqlite3_stmt *s = sdb_prepare(sv->db,
        "INSERT INTO snapshot(created, reason, call_seq, pid, profile, lnc, visible, chunk_size,"
        " logical_bytes, stored_bytes) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, 0)");
    if (s == NULL)
        return NRT_INVALID;
    sqlite3_bind_text(s, 1, now, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, 2, reason ? reason : "api", -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 3, call_seq);
    sqlite3_bind_int64(s, 4, (sqlite3_int64)getpid());
    sqlite3_bind_text(s, 5, cfg->profile->name, -1, SQLITE_STATIC);
    sqlite3_bind_int(s, 6, (int)cfg->lnc);
    sqlite3_bind_text(s, 7, visible, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 8, (int)sv->cs.chunk_size);
    NRT_STATUS st = sdb_done(sv->db, s, "adding the snapshot");
    sqlite3_finalize(s);
    sv->snap = sqlite3_last_insert_rowid(sv->db->sql);
    return st;
}

static NRT_STATUS snap_row_sizes(struct snap_saver *sv)
{
    sqlite3_stmt *s = sdb_prepare(sv->db, "UPDATE snapshot SET logical_bytes=?1, stored_bytes=?2 "
                                          "WHERE id=?3");
    if (s == NULL)
        return NRT_INVALID;
    snap_bind_u64(s, 1, sv->cs.logical);
    snap_bind_u64(s, 2, sv->cs.stored + sv->neff_bytes);
    sqlite3_bind_int64(s, 3, sv->snap);
    NRT_STATUS st = sdb_done(sv->db, s, "sizing the snapshot");
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_options(struct snap_saver *sv)
{
    sqlite3_stmt *s = sdb_prepare(sv->db, "INSERT INTO option(snap, name, value) VALUES(?1,?2,?3)");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    for (size_t i = 0; st == NRT_SUCCESS && i < sizeof snap_option_names / sizeof *snap_option_names;
         i++) {
        const char *v = getenv(snap_option_names[i]);
        if (v == NULL)
            continue;
        sqlite3_bind_int64(s, 1, sv->snap);
        sqlite3_bind_text(s, 2, snap_option_names[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(s, 3, v, -1, SQLITE_TRANSIENT);
        st = sdb_done(sv->db, s, "saving the options");
    }
    sqlite3_finalize(s);
    return st;
}

/* ---- memory ------------------------------------------------------------ */

/* Add a region row; its id in *id. */
static NRT_STATUS snap_region(struct snap_saver *sv, const char *kind, int64_t chip, int64_t vnc,
                              int64_t core, uint64_t size, int64_t *id)
{
    sqlite3_stmt *s = sdb_prepare(sv->db, "INSERT INTO region(snap, id, kind, chip, vnc, core, size)"
                                          " VALUES(?1,?2,?3,?4,?5,?6,?7)");
    if (s == NULL)
        return NRT_INVALID;
    *id = sv->next_region++;
    sqlite3_bind_int64(s, 1, sv->snap);
    sqlite3_bind_int64(s, 2, *id);
    sqlite3_bind_text(s, 3, kind, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 4, chip);
    sqlite3_bind_int64(s, 5, vnc);
    sqlite3_bind_int64(s, 6, core);
    snap_bind_u64(s, 7, size);
    NRT_STATUS st = sdb_done(sv->db, s, "adding a memory region");
    sqlite3_finalize(s);
    return st;
}

/* The bytes of HBM a save goes through (the progress line's total). */
static uint64_t snap_hbm_bytes(struct machine *m)
{
    struct state_range r[64];
    uint64_t total = 0;
    for (uint32_t c = 0; c < m->cfg.profile->chips; c++) {
        size_t n = state_hbm_ranges(m, c, r, sizeof r / sizeof *r);
        for (size_t i = 0; i < n && i < sizeof r / sizeof *r; i++)
            total += r[i].len;
    }
    return total;
}

/* Each chip's HBM: the ranges its allocators ever handed out. */
static NRT_STATUS snap_hbm(struct snap_saver *sv)
{
    struct machine *m = sv->v.mach;
    struct state_range r[64]; /* one per VNC of the chip this process owns */
    sv->cs.prog->total = snap_hbm_bytes(m);
    for (uint32_t c = 0; c < m->cfg.profile->chips; c++) {
        size_t n = state_hbm_ranges(m, c, r, sizeof r / sizeof *r);
        if (n == 0)
            continue;
        if (n > sizeof r / sizeof *r)
            n = sizeof r / sizeof *r;
        int64_t id;
        NRT_STATUS st = snap_region(sv, "hbm", c, -1, -1, m->chips[c].hbm_size, &id);
        for (size_t i = 0; st == NRT_SUCCESS && i < n; i++)
            st = cstore_save_range(&sv->cs, sv->snap, id, m->chips[c].hbm, m->chips[c].hbm_size,
                                   r[i].off, r[i].len, true);
        if (st != NRT_SUCCESS)
            return st;
    }
    return NRT_SUCCESS;
}

/* Every core that exists: registers, SBUF and PSUM. */
static NRT_STATUS snap_cores(struct snap_saver *sv)
{
    struct machine *m = sv->v.mach;
    sqlite3_stmt *s = sdb_prepare(sv->db, "INSERT INTO core(snap, vnc, idx, gen, state, sbuf, psum)"
                                          " VALUES(?1,?2,?3,?4,?5,?6,?7)");
    uint8_t *blob = malloc(core_state_size());
    NRT_STATUS st = s == NULL ? NRT_INVALID : blob == NULL ? NRT_RESOURCE : NRT_SUCCESS;
    for (uint32_t g = 0; st == NRT_SUCCESS && g < m->cfg.total_vncs; g++)
        for (uint32_t i = 0; st == NRT_SUCCESS && i < m->cfg.lnc; i++) {
            struct core *c = state_core_peek(m, g, i);
            if (c == NULL)
                continue;
            uint64_t sbuf = (uint64_t)ISA_NUM_PARTITIONS * c->sbuf_part_bytes;
            uint64_t psum = (uint64_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES;
            int64_t rs, rp;
            st = snap_region(sv, "sbuf", m->vncs[g].chip, g, i, sbuf, &rs);
            if (st == NRT_SUCCESS)
                st = cstore_save_range(&sv->cs, sv->snap, rs, c->sbuf, sbuf, 0, sbuf, true);
            if (st == NRT_SUCCESS)
                st = snap_region(sv, "psum", m->vncs[g].chip, g, i, psum, &rp);
            if (st == NRT_SUCCESS)
                st = cstore_save_range(&sv->cs, sv->snap, rp, c->psum, psum, 0, psum, true);
            if (st != NRT_SUCCESS)
                break;
            core_state_save(c, blob);
            sqlite3_bind_int64(s, 1, sv->snap);
            sqlite3_bind_int64(s, 2, g);
            sqlite3_bind_int64(s, 3, i);
            sqlite3_bind_int64(s, 4, c->gen);
            sqlite3_bind_blob(s, 5, blob, (int)core_state_size(), SQLITE_STATIC);
            sqlite3_bind_int64(s, 6, rs);
            sqlite3_bind_int64(s, 7, rp);
            st = sdb_done(sv->db, s, "saving a core");
        }
    free(blob);
    sqlite3_finalize(s);
    return st;
}

/* ---- tensors ----------------------------------------------------------- */

static int snap_ptr_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const void *const *)a, y = (uintptr_t) * (const void *const *)b;
    return x < y ? -1 : x > y;
}

/* The distinct storages of the tensors, sorted by address (a slice shares
 * its source's). */
static NRT_STATUS snap_collect_storages(struct snap_saver *sv)
{
    sv->storages = calloc(sv->v.ntensors ? sv->v.ntensors : 1, sizeof *sv->storages);
    if (sv->storages == NULL)
        return NRT_RESOURCE;
    size_t n = 0;
    for (size_t i = 0; i < sv->v.ntensors; i++)
        if (sv->v.tensors[i].st != NULL)
            sv->storages[n++] = sv->v.tensors[i].st;
    qsort(sv->storages, n, sizeof *sv->storages, snap_ptr_cmp);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || sv->storages[u - 1] != sv->storages[i])
            sv->storages[u++] = sv->storages[i];
    sv->nstorages = u;
    return NRT_SUCCESS;
}

static int64_t snap_storage_id(const struct snap_saver *sv, const struct tensor_storage *st)
{
    const struct tensor_storage **hit =
        bsearch(&st, sv->storages, sv->nstorages, sizeof *sv->storages, snap_ptr_cmp);
    return hit ? (int64_t)(hit - sv->storages) : -1;
}

static NRT_STATUS snap_storage_row(struct snap_saver *sv, sqlite3_stmt *s, int64_t id,
                                   const struct tensor_storage *ts)
{
    int64_t region = -1;
    NRT_STATUS st = NRT_SUCCESS;
    if (ts->kind != STORAGE_HBM) {
        st = snap_region(sv, "host", -1, -1, -1, ts->size, &region);
        if (st == NRT_SUCCESS)
            st = cstore_save_range(&sv->cs, sv->snap, region, ts->va, ts->size, 0, ts->size,
                                   false);
        if (st != NRT_SUCCESS)
            return st;
    }
    sqlite3_bind_int64(s, 1, sv->snap);
    sqlite3_bind_int64(s, 2, id);
    sqlite3_bind_int(s, 3, (int)ts->kind);
    snap_bind_u64(s, 4, ts->size);
    for (int k = 5; k <= 10; k++)
        sqlite3_bind_null(s, k);
    if (ts->kind == STORAGE_HBM) {
        sqlite3_bind_int64(s, 5, ts->block.chip);
        sqlite3_bind_int64(s, 6, ts->block.stack);
        sqlite3_bind_int64(s, 7, ts->block.vnc);
        snap_bind_u64(s, 8, ts->block.off);
        snap_bind_u64(s, 9, ts->block.len);
    } else {
        sqlite3_bind_int64(s, 10, region);
    }
    return sdb_done(sv->db, s, "saving a tensor storage");
}

static NRT_STATUS snap_storages(struct snap_saver *sv)
{
    NRT_STATUS st = snap_collect_storages(sv);
    sqlite3_stmt *s = st == NRT_SUCCESS ? sdb_prepare(sv->db,
        "INSERT INTO storage(snap, id, kind, size, chip, stack, vnc, off, len, region)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)") : NULL;
    if (st == NRT_SUCCESS && s == NULL)
        st = NRT_INVALID;
    for (size_t i = 0; st == NRT_SUCCESS && i < sv->nstorages; i++)
        st = snap_storage_row(sv, s, (int64_t)i, sv->storages[i]);
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_tensors(struct snap_saver *sv)
{
    sqlite3_stmt *s = sdb_prepare(sv->db,
        "INSERT INTO tensor(snap, handle, name, placement, vnc, size, storage, off, completions)"
        " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    for (size_t i = 0; st == NRT_SUCCESS && i < sv->v.ntensors; i++) {
        const struct tensor_record *t = &sv->v.tensors[i];
        sqlite3_bind_int64(s, 1, sv->snap);
        snap_bind_u64(s, 2, (uint64_t)(uintptr_t)t->handle);
        sqlite3_bind_text(s, 3, t->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 4, (int)t->placement);
        sqlite3_bind_int(s, 5, t->vnc);
        snap_bind_u64(s, 6, t->size);
        if (t->st != NULL)
            sqlite3_bind_int64(s, 7, snap_storage_id(sv, t->st));
        else
            sqlite3_bind_null(s, 7);
        snap_bind_u64(s, 8, t->off);
        snap_bind_u64(s, 9, t->completions);
        st = sdb_done(sv->db, s, "saving a tensor");
    }
    sqlite3_finalize(s);
    return st;
}

/* The handle a set entry records: its tensor's, or 0 for a tensor freed
 * before the save (so that any other handle must name a saved tensor). */
static uint64_t snap_live_tensor(const struct snap_saver *sv, const nrt_tensor_t *t)
{
    size_t lo = 0, hi = sv->v.ntensors; /* the records are sorted by handle */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t h = (uintptr_t)sv->v.tensors[mid].handle;
        if (h == (uintptr_t)t)
            return (uint64_t)h;
        if (h < (uintptr_t)t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static NRT_STATUS snap_sets(struct snap_saver *sv)
{
    sqlite3_stmt *a = sdb_prepare(sv->db, "INSERT INTO tensor_set(snap, handle) VALUES(?1,?2)");
    sqlite3_stmt *e = sdb_prepare(sv->db, "INSERT INTO tensor_set_entry(snap, set_handle, pos, name,"
                                          " tensor) VALUES(?1,?2,?3,?4,?5)");
    NRT_STATUS st = a && e ? NRT_SUCCESS : NRT_INVALID;
    for (size_t i = 0; st == NRT_SUCCESS && i < sv->v.nsets; i++) {
        const struct tensor_set_record *r = &sv->v.sets[i];
        uint64_t h = (uint64_t)(uintptr_t)r->handle;
        sqlite3_bind_int64(a, 1, sv->snap);
        snap_bind_u64(a, 2, h);
        st = sdb_done(sv->db, a, "saving a tensor set");
        for (size_t k = 0; st == NRT_SUCCESS && k < r->n; k++) {
            sqlite3_bind_int64(e, 1, sv->snap);
            snap_bind_u64(e, 2, h);
            sqlite3_bind_int64(e, 3, (sqlite3_int64)k);
            sqlite3_bind_text(e, 4, r->names[k], -1, SQLITE_STATIC);
            snap_bind_u64(e, 5, snap_live_tensor(sv, r->tensors[k]));
            st = sdb_done(sv->db, e, "saving a tensor set entry");
        }
    }
    sqlite3_finalize(a);
    sqlite3_finalize(e);
    return st;
}

/* ---- models ------------------------------------------------------------ */

/* The neff row holding these bytes, added when new. */
static NRT_STATUS snap_neff(struct snap_saver *sv, const void *bytes, size_t size, int64_t *id)
{
    struct chunk_hash h;
    chunk_hash_of(bytes, size, &h);
    sqlite3_stmt *ins = sdb_prepare(sv->db, "INSERT OR IGNORE INTO neff(hash, size, data) "
                                            "VALUES(?1,?2,?3)");
    sqlite3_stmt *get = sdb_prepare(sv->db, "SELECT id FROM neff WHERE hash=?1");
    NRT_STATUS st = ins && get ? NRT_SUCCESS : NRT_INVALID;
    if (st == NRT_SUCCESS && size > INT32_MAX) {
        LOG_ERROR("STORE", "a NEFF of %zu bytes is too large for the snapshot store", size);
        st = NRT_INVALID;
    }
    if (st == NRT_SUCCESS) {
        sqlite3_bind_blob(ins, 1, h.b, sizeof h.b, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, (sqlite3_int64)size);
        sqlite3_bind_blob(ins, 3, bytes, (int)size, SQLITE_STATIC);
        st = sdb_done(sv->db, ins, "saving a NEFF");
    }
    if (st == NRT_SUCCESS && sqlite3_changes(sv->db->sql) > 0)
        sv->neff_bytes += size;
    if (st == NRT_SUCCESS) {
        sqlite3_bind_blob(get, 1, h.b, sizeof h.b, SQLITE_STATIC);
        if (sqlite3_step(get) == SQLITE_ROW)
            *id = sqlite3_column_int64(get, 0);
        else
            st = sdb_fail(sv->db, sqlite3_errcode(sv->db->sql), "finding a NEFF");
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(get);
    return st;
}

static NRT_STATUS snap_model_blocks(struct snap_saver *sv, uint64_t h, const struct state_model *sm)
{
    sqlite3_stmt *s = sdb_prepare(sv->db, "INSERT INTO model_block(snap, model, seq, chip, stack,"
                                          " vnc, off, len) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    for (size_t k = 0; st == NRT_SUCCESS && k < sm->nblocks; k++) {
        const struct hbm_block *b = &sm->blocks[k];
        sqlite3_bind_int64(s, 1, sv->snap);
        snap_bind_u64(s, 2, h);
        sqlite3_bind_int64(s, 3, (sqlite3_int64)k);
        sqlite3_bind_int64(s, 4, b->chip);
        sqlite3_bind_int64(s, 5, b->stack);
        sqlite3_bind_int64(s, 6, b->vnc);
        snap_bind_u64(s, 7, b->off);
        snap_bind_u64(s, 8, b->len);
        st = sdb_done(sv->db, s, "saving a model block");
    }
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_model_io(struct snap_saver *sv, uint64_t h, const struct neff_model *nm)
{
    sqlite3_stmt *s = sdb_prepare(sv->db, "INSERT INTO model_io(snap, model, idx, name, is_output,"
                                          " dtype, size, shape) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    for (uint32_t i = 0; st == NRT_SUCCESS && i < nm->n_io; i++) {
        const struct neff_io *io = &nm->io[i];
        char shape[512] = "";
        size_t n = 0;
        for (uint32_t d = 0; d < io->ndim && n + 24 < sizeof shape; d++)
            n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%u", d ? "," : "", io->shape[d]);
        sqlite3_bind_int64(s, 1, sv->snap);
        snap_bind_u64(s, 2, h);
        sqlite3_bind_int64(s, 3, i);
        sqlite3_bind_text(s, 4, io->name, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 5, io->is_output);
        sqlite3_bind_int64(s, 6, io->dtype);
        snap_bind_u64(s, 7, io->size);
        sqlite3_bind_text(s, 8, shape, -1, SQLITE_TRANSIENT);
        st = sdb_done(sv->db, s, "saving a model's tensor list");
    }
    sqlite3_finalize(s);
    return st;
}

static NRT_STATUS snap_models(struct snap_saver *sv)
{
    sqlite3_stmt *s = sdb_prepare(sv->db, "INSERT INTO model(snap, handle, name, vnc, gvnc, neff,"
                                          " executions, cc_rank, cc_world)"
                                          " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)");
    NRT_STATUS st = s ? NRT_SUCCESS : NRT_INVALID;
    for (size_t i = 0; st == NRT_SUCCESS && i < sv->v.nmodels; i++) {
        const struct state_model *sm = &sv->v.models[i];
        const struct nrt_model *m = sm->m;
        uint64_t h = (uint64_t)(uintptr_t)m;
        int64_t neff = -1;
        st = snap_neff(sv, m->neff_bytes, m->neff_size, &neff);
        if (st != NRT_SUCCESS)
            break;
        sqlite3_bind_int64(s, 1, sv->snap);
        snap_bind_u64(s, 2, h);
        sqlite3_bind_text(s, 3, m->neff->info.name, -1, SQLITE_STATIC);
        sqlite3_bind_int(s, 4, m->vnc);
        sqlite3_bind_int64(s, 5, m->gvnc);
        sqlite3_bind_int64(s, 6, neff);
        snap_bind_u64(s, 7, atomic_load(&m->executions));
        sqlite3_bind_int64(s, 8, m->cc_rank);
        sqlite3_bind_int64(s, 9, m->cc_world);
        st = sdb_done(sv->db, s, "saving a model");
        if (st == NRT_SUCCESS)
            st = snap_model_blocks(sv, h, sm);
        if (st == NRT_SUCCESS)
            st = snap_model_io(sv, h, m->neff);
    }
    sqlite3_finalize(s);
    return st;
}

/* ---- the whole save ---------------------------------------------------- */

/* Every kind of object, in the order of SNAP_KINDS (snap_int.h). */
#define SNAP_SAVE_KIND(kind) snap_##kind,
static NRT_STATUS (*const snap_save_kinds[])(struct snap_saver *sv) = {SNAP_KINDS(SNAP_SAVE_KIND)};
#undef SNAP_SAVE_KIND

static NRT_STATUS snap_save_all(struct snap_saver *sv, const char *reason, int64_t call_seq)
{
    NRT_STATUS st = snap_row(sv, reason, call_seq);
    for (size_t i = 0; st == NRT_SUCCESS && i < sizeof snap_save_kinds / sizeof *snap_save_kinds;
         i++)
        st = snap_save_kinds[i](sv);
    if (st == NRT_SUCCESS)
        st = snap_row_sizes(sv);
    if (st == NRT_SUCCESS)
        st = snap_manifest_write(sv->db, sv->snap);
    return st;
}

NRT_STATUS snap_save(struct snap_db *db, const char *reason, int64_t call_seq, int64_t *id_out)
{
    assert(state_held());
    if (db == NULL || db->readonly) {
        LOG_ERROR("STORE", "%s: the snapshot file is not writable", db ? db->path : "(none)");
        return NRT_FAILURE;
    }
    struct snap_saver sv = {.db = db};
    struct progress pg;
    snap_db_lock(db);
    progress_begin(&pg, "saving snapshot", "MiB", 0);
    NRT_STATUS st = cstore_open(&sv.cs, db, db->chunk_size);
    sv.cs.prog = &pg;
    bool began = false;
    if (st == NRT_SUCCESS)
        st = state_capture(&sv.v);
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "BEGIN IMMEDIATE", "starting a snapshot");
    began = st == NRT_SUCCESS;
    if (st == NRT_SUCCESS)
        st = snap_save_all(&sv, reason, call_seq);
    if (st == NRT_SUCCESS)
        st = sdb_sql(db, "COMMIT", "committing the snapshot");
    if (st != NRT_SUCCESS && began)
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    if (st == NRT_SUCCESS) {
        LOG_INFO("STORE", "%s: snapshot %" PRId64 " (%s): %" PRIu64 " bytes of memory in %" PRIu64
                 " chunks, %" PRIu64 " new bytes stored", db->path, sv.snap, reason ? reason : "api",
                 sv.cs.logical, sv.cs.chunks, sv.cs.stored + sv.neff_bytes);
        if (id_out != NULL)
            *id_out = sv.snap;
    }
    progress_end(&pg);
    free(sv.storages);
    if (sv.v.mach != NULL)
        state_release(&sv.v);
    cstore_close(&sv.cs);
    snap_db_unlock(db);
    return st;
}

NRT_STATUS snap_save_quiesced(struct snap_db *db, const char *reason, int64_t call_seq,
                              int64_t *id_out)
{
    struct machine *m = state_machine();
    state_quiesce(m);
    NRT_STATUS st = snap_save(db, reason, call_seq, id_out);
    state_resume(m);
    return st;
}
