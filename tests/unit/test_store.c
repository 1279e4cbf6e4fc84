/*
 * test_store.c: the snapshot store (store/): chunk codecs, the file's
 * schema checks, and save/restore of a runtime's whole state in this
 * process (trn1.2xlarge), including files altered row by row: each bad
 * file must give NRT_INVALID and leave the runtime as it was.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "devices/runtime/handle.h"
#include "emu/log.h"
#include "devices/machine/hbm_alloc.h"
#include "devices/config/log_env.h"
#include "devices/runtime/rt_life.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/state.h"
#include "store/chunk.h"
#include "store/snap_int.h"
#include "store/calllog.h"
#include "store/snapshot.h"
#include "test_neff_util.h"

static char ts_dir[256];  /* per-run temporary directory */

static const char *ts_path(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", ts_dir, name);
    return p[k];
}

/* ---- codecs ------------------------------------------------------------ */

static void fill_floats(uint8_t *p, size_t n, int kind)
{
    float *f = (float *)(void *)p;
    for (size_t i = 0; i < n / 4; i++)
        f[i] = kind == 0 ? (float)i * 0.001f : (float)((i * 2654435761u) % 1000) / 7.0f;
    for (size_t i = n / 4 * 4; i < n; i++)
        p[i] = (uint8_t)i;
}

static void test_shuffle_roundtrip(void **state)
{
    (void)state;
    static const size_t sizes[] = {0, 1, 3, 4, 5, 63, 64, 65, 127, 4096, 65536 + 7};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t n = sizes[k];
        uint8_t *a = malloc(n + 1), *b = malloc(n + 1), *c = malloc(n + 1);
        for (size_t i = 0; i < n; i++)
            a[i] = (uint8_t)(i * 31 + 7);
        chunk_shuffle4(b, a, n);
        if (n >= 8)  /* byte 0 of element 1 sits right after byte 0 of element 0 */
            assert_int_equal(b[1], a[4]);
        chunk_unshuffle4(c, b, n);
        assert_memory_equal(a, c, n);
        free(a);
        free(b);
        free(c);
    }
}

static void test_codec_roundtrip(void **state)
{
    (void)state;
    size_t n = 65536;
    uint8_t *src = malloc(n), *enc = malloc(chunk_bound(n)), *tmp = malloc(n), *out = malloc(n);
    for (int kind = 0; kind < 3; kind++) {
        if (kind < 2)
            fill_floats(src, n, kind);
        else
            for (size_t i = 0; i < n; i++)
                src[i] = (uint8_t)((i * 2654435761u) >> 13);
        for (int pol = CHUNK_POLICY_AUTO; pol <= CHUNK_POLICY_SHUF4; pol++) {
            int codec = -1;
            size_t len = chunk_encode(src, n, (enum chunk_policy)pol, enc, chunk_bound(n), tmp,
                                      &codec);
            assert_true(len <= n);
            assert_int_equal(chunk_decode(codec, enc, len, out, n, tmp), NRT_SUCCESS);
            assert_memory_equal(src, out, n);
            if (pol == CHUNK_POLICY_RAW)
                assert_int_equal(codec, CHUNK_RAW);
            /* A wrong length or a damaged stream is refused, never a crash. */
            if (codec != CHUNK_RAW) {
                assert_int_equal(chunk_decode(codec, enc, len, out, n - 1, tmp), NRT_INVALID);
                assert_int_equal(chunk_decode(codec, enc, len / 2, out, n, tmp), NRT_INVALID);
            }
        }
    }
    /* A ramp of floats shrinks with the shuffle (the AUTO choice). */
    fill_floats(src, n, 0);
    int codec;
    size_t len = chunk_encode(src, n, CHUNK_POLICY_AUTO, enc, chunk_bound(n), tmp, &codec);
    assert_int_equal(codec, CHUNK_SHUF4_LZ4);
    assert_true(len < n / 2);
    assert_int_equal(chunk_decode(9, enc, len, out, n, tmp), NRT_INVALID);
    free(src);
    free(enc);
    free(tmp);
    free(out);
}

static void test_zero_and_hash(void **state)
{
    (void)state;
    uint8_t b[300] = {0};
    assert_true(chunk_is_zero(b, sizeof b));
    assert_true(chunk_is_zero(b, 0));
    b[299] = 1;
    assert_false(chunk_is_zero(b, sizeof b));
    b[299] = 0;
    b[10] = 1;
    assert_false(chunk_is_zero(b, sizeof b));
    struct chunk_hash h1, h2;
    chunk_hash_of(b, sizeof b, &h1);
    chunk_hash_of(b, sizeof b, &h2);
    assert_memory_equal(h1.b, h2.b, CHUNK_HASH_LEN);
    b[11] = 1;
    chunk_hash_of(b, sizeof b, &h2);
    assert_memory_not_equal(h1.b, h2.b, CHUNK_HASH_LEN);
}

/* ---- re-taking HBM blocks --------------------------------------------- */

static void test_alloc_take_at(void **state)
{
    (void)state;
    struct hbm_alloc a;
    assert_int_equal(hbm_alloc_init(&a, 1u << 20), NRT_SUCCESS);
    assert_int_equal(hbm_alloc_high(&a), 0);
    assert_int_equal(hbm_alloc_take_at(&a, 4096, 8192), NRT_SUCCESS);
    assert_int_equal(hbm_alloc_take_at(&a, 0, 4096), NRT_SUCCESS);
    assert_int_equal(hbm_alloc_take_at(&a, 8192, 64), NRT_INVALID);      /* taken */
    assert_int_equal(hbm_alloc_take_at(&a, 12288 + 1, 64), NRT_INVALID); /* misaligned */
    assert_int_equal(hbm_alloc_take_at(&a, 12288, 100), NRT_INVALID);    /* odd length */
    assert_int_equal(hbm_alloc_take_at(&a, (1u << 20) - 64, 128), NRT_INVALID); /* past the end */
    assert_int_equal(hbm_alloc_take_at(&a, (1u << 20) - 64, 64), NRT_SUCCESS);
    assert_true(hbm_alloc_sane(&a));
    assert_int_equal(hbm_alloc_used(&a), 4096 + 8192 + 64);
    assert_int_equal(hbm_alloc_high(&a), 1u << 20);
    /* First fit continues after the re-taken blocks. */
    uint64_t off, taken;
    assert_int_equal(hbm_alloc_take(&a, 100, 64, &off, &taken), NRT_SUCCESS);
    assert_int_equal(off, 12288);
    hbm_alloc_give(&a, 4096, 8192);
    assert_int_equal(hbm_alloc_take_at(&a, 4096, 8192), NRT_SUCCESS);
    assert_true(hbm_alloc_sane(&a));
    hbm_alloc_fini(&a);
}

/* ---- the file ---------------------------------------------------------- */

static void ts_sql(const char *path, const char *sql)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

static void test_schema(void **state)
{
    (void)state;
    struct snap_db *db;
    const char *p = ts_path("schema.db");
    cl_db_unlink(p);
    assert_int_equal(snap_open(p, false, &db), NRT_FAILURE);  /* missing */
    assert_int_equal(snap_open(p, true, &db), NRT_SUCCESS);
    int64_t id;
    assert_int_equal(snap_latest(db, &id), NRT_SUCCESS);
    assert_int_equal(id, -1);
    snap_close(db);
    assert_int_equal(snap_open(p, false, &db), NRT_SUCCESS);
    snap_close(db);
    /* A newer schema is refused, with its version named. */
    ts_sql(p, "PRAGMA user_version=99");
    tu_log_begin();
    assert_int_equal(snap_open(p, false, &db), NRT_INVALID);
    char log[2048];
    assert_int_equal(tu_log_end(log, sizeof log), 1);
    assert_non_null(strstr(log, "99"));
    /* Another SQLite file, a non-database, an empty file. */
    const char *q = ts_path("other.db");
    cl_db_unlink(q);
    ts_sql(q, "CREATE TABLE t(x)");
    assert_int_equal(snap_open(q, true, &db), NRT_INVALID);
    FILE *f = fopen(q, "wb");
    fputs("this is not a database, not at all, no. ", f);
    for (int i = 0; i < 100; i++)
        fputs("padding padding padding ", f);
    fclose(f);
    cl_db_unlink(ts_path("other.db-wal"));
    assert_int_equal(snap_open(q, false, &db), NRT_INVALID);
    f = fopen(q, "wb");
    fclose(f);
    assert_int_equal(snap_open(q, false, &db), NRT_INVALID);
    assert_int_equal(snap_open("", true, &db), NRT_INVALID);
}

/* ---- save and restore -------------------------------------------------- */

/* What the test builds in the runtime, and the handles it got. */
struct ts_world {
    nrt_tensor_t *dev;     /* 3 MiB device tensor, a float ramp */
    nrt_tensor_t *dev2;    /* 1 MiB device tensor, mostly zero */
    nrt_tensor_t *host;    /* host tensor */
    nrt_tensor_t *virt;    /* virtual tensor */
    nrt_tensor_t *slice;   /* slice of dev */
    nrt_tensor_t *empty;   /* empty tensor */
    nrt_tensor_set_t *set; /* holds dev (as "a") and slice (as "b") */
    nrt_model_t *model;    /* tu_small_neff on VNC 1 */
};

static const size_t TS_DEV = 3u << 20, TS_DEV2 = 1u << 20;

static void ts_init(void)
{
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    unsetenv("NEURON_RT_VISIBLE_CORES");
    unsetenv("NEURON_RT_NUM_CORES");
    assert_int_equal(rt_init(0), NRT_SUCCESS);
}

static void ts_fini(void)
{
    rt_close();
}

/* Run f inside the gate, as an ABI call would. */
#define TS_ENTER() assert_int_equal(rt_enter(), NRT_SUCCESS)
#define TS_LEAVE() rt_leave()

/* tu_small_model as a foreign NEFF: its fake code is never decoded, its
 * variables are placed as usual. */
static void ts_neff(uint8_t **bytes, size_t *size)
{
    struct neff_model *m = tu_small_model();
    m->info.feature_bits &= ~(uint64_t)NEFF_FEATURE_TRNEMU_ISA;
    for (uint32_t i = 0; i < m->n_sgs; i++)
        m->sgs[i]->isa_version = 0;
    struct neff_file *f = NULL;
    assert_int_equal(neff_model_store(m, &f), NRT_SUCCESS);
    assert_int_equal(neff_file_write(f, bytes, size), NRT_SUCCESS);
    neff_file_free(f);
    neff_model_free(m);
}

static void ts_build(struct ts_world *w)
{
    TS_ENTER();
    uint8_t *buf = malloc(TS_DEV);
    fill_floats(buf, TS_DEV, 0);
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, TS_DEV, "dev", &w->dev),
                     NRT_SUCCESS);
    assert_int_equal(tensor_write(w->dev, buf, 0, TS_DEV), NRT_SUCCESS);
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, TS_DEV2, "dev2", &w->dev2),
                     NRT_SUCCESS);
    assert_int_equal(tensor_write(w->dev2, "hello", 4096, 5), NRT_SUCCESS);
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 100000, "host", &w->host),
                     NRT_SUCCESS);
    assert_int_equal(tensor_write(w->host, buf + 1000, 0, 100000), NRT_SUCCESS);
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 5u << 20, "virt", &w->virt),
                     NRT_SUCCESS);
    assert_int_equal(tensor_write(w->virt, buf, 4u << 20, 1000), NRT_SUCCESS);
    assert_int_equal(tensor_allocate_slice(w->dev, 4096, 8192, "slice", &w->slice), NRT_SUCCESS);
    assert_int_equal(tensor_allocate_empty("empty", &w->empty), NRT_SUCCESS);
    assert_int_equal(tensor_set_allocate(&w->set), NRT_SUCCESS);
    assert_int_equal(tensor_set_add(w->set, "a", w->dev), NRT_SUCCESS);
    assert_int_equal(tensor_set_add(w->set, "b", w->slice), NRT_SUCCESS);
    uint8_t *neff;
    size_t neff_size;
    ts_neff(&neff, &neff_size);
    assert_int_equal(model_load(neff, neff_size, 1, &w->model), NRT_SUCCESS);
    model_set_collectives(w->model, 1, 4);  /* as nrt_load_collectives does */
    free(neff);
    /* Core state: SBUF bytes and a semaphore of VNC 0's core. */
    struct core *c;
    assert_int_equal(state_core_make(rt_machine(), 0, 0, &c), NRT_SUCCESS);
    memcpy(c->sbuf + 123456, "sbuf bytes", 10);
    c->psum[77] = 9;
    c->sem[5] = 42;
    c->rng_seed = 0x1234;
    free(buf);
    TS_LEAVE();
}

static int64_t ts_save(const char *path, const char *reason)
{
    struct snap_db *db;
    int64_t id = -1;
    TS_ENTER();
    assert_int_equal(snap_open(path, true, &db), NRT_SUCCESS);
    assert_int_equal(snap_save(db, reason, 7, &id), NRT_SUCCESS);
    snap_close(db);
    TS_LEAVE();
    return id;
}

static NRT_STATUS ts_restore(const char *path, int64_t id, struct snap_handle_map *map)
{
    struct snap_db *db;
    TS_ENTER();
    NRT_STATUS st = snap_open(path, false, &db);
    if (st == NRT_SUCCESS) {
        st = snap_restore(db, id, map);
        snap_close(db);
    }
    TS_LEAVE();
    return st;
}

static void *ts_find(const struct snap_handle_map *m, const void *old)
{
    void *p = snap_handle_map_find(m, (uint64_t)(uintptr_t)old);
    assert_non_null(p);
    return p;
}

/* The restored world must read back exactly as the original. */
static void ts_check(const struct ts_world *w, const struct snap_handle_map *m)
{
    TS_ENTER();
    uint8_t *want = malloc(TS_DEV), *got = malloc(TS_DEV);
    fill_floats(want, TS_DEV, 0);
    nrt_tensor_t *dev = ts_find(m, w->dev), *dev2 = ts_find(m, w->dev2);
    nrt_tensor_t *host = ts_find(m, w->host), *virt = ts_find(m, w->virt);
    nrt_tensor_t *slice = ts_find(m, w->slice), *empty = ts_find(m, w->empty);
    assert_int_equal(tensor_read(dev, got, 0, TS_DEV), NRT_SUCCESS);
    assert_memory_equal(want, got, TS_DEV);
    assert_int_equal(tensor_read(dev2, got, 4096, 5), NRT_SUCCESS);
    assert_memory_equal(got, "hello", 5);
    assert_int_equal(tensor_read(host, got, 0, 100000), NRT_SUCCESS);
    assert_memory_equal(got, want + 1000, 100000);
    assert_int_equal(tensor_read(virt, got, 4u << 20, 1000), NRT_SUCCESS);
    assert_memory_equal(got, want, 1000);
    assert_int_equal(tensor_size(virt), 5u << 20);
    assert_int_equal(tensor_read(slice, got, 0, 8192), NRT_SUCCESS);
    assert_memory_equal(got, want + 4096, 8192);
    /* The slice shares the restored storage of dev. */
    assert_ptr_equal((uint8_t *)tensor_va(slice), (uint8_t *)tensor_va(dev) + 4096);
    assert_int_equal(tensor_size(empty), 0);
    nrt_tensor_set_t *set = ts_find(m, w->set);
    nrt_tensor_t *t;
    assert_int_equal(tensor_set_get(set, "a", &t), NRT_SUCCESS);
    assert_ptr_equal(t, dev);
    assert_int_equal(tensor_set_get(set, "b", &t), NRT_SUCCESS);
    assert_ptr_equal(t, slice);
    nrt_model_t *model = ts_find(m, w->model);
    assert_int_equal(model->vnc, 1);
    assert_int_equal(model->cc_rank, 1);
    assert_int_equal(model->cc_world, 4);
    struct core *c = state_core_peek(rt_machine(), 0, 0);
    assert_non_null(c);
    assert_memory_equal(c->sbuf + 123456, "sbuf bytes", 10);
    assert_int_equal(c->psum[77], 9);
    assert_int_equal(c->sem[5], 42);
    assert_int_equal(c->rng_seed, 0x1234);
    free(want);
    free(got);
    TS_LEAVE();
}

/* Device addresses and the next allocation's address, which the
 * allocators' state decides. */
struct ts_addrs {
    uint64_t dev, dev2, next0, next1;  /* physical addresses */
};

static void ts_addrs(const struct snap_handle_map *m, const struct ts_world *w, struct ts_addrs *a)
{
    TS_ENTER();
    nrt_tensor_device_allocation_info_t info;
    nrt_tensor_t *dev = m ? ts_find(m, w->dev) : w->dev, *dev2 = m ? ts_find(m, w->dev2) : w->dev2;
    assert_int_equal(tensor_alloc_info(dev, &info), NRT_SUCCESS);
    a->dev = info.physical_address;
    assert_int_equal(tensor_alloc_info(dev2, &info), NRT_SUCCESS);
    a->dev2 = info.physical_address;
    nrt_tensor_t *n0, *n1;
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1000, "n0", &n0), NRT_SUCCESS);
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, 1000, "n1", &n1), NRT_SUCCESS);
    assert_int_equal(tensor_alloc_info(n0, &info), NRT_SUCCESS);
    a->next0 = info.physical_address;
    assert_int_equal(tensor_alloc_info(n1, &info), NRT_SUCCESS);
    a->next1 = info.physical_address;
    tensor_free(n0);
    tensor_free(n1);
    TS_LEAVE();
}

static void test_save_restore(void **state)
{
    (void)state;
    const char *p = ts_path("world.db");
    cl_db_unlink(p);
    struct ts_world w;
    ts_init();
    ts_build(&w);
    int64_t id = ts_save(p, "test");
    assert_true(id >= 1);
    struct ts_addrs before, after;
    ts_addrs(NULL, &w, &before);
    ts_fini();

    ts_init();
    struct snap_handle_map m;
    assert_int_equal(ts_restore(p, id, &m), NRT_SUCCESS);
    assert_int_equal(m.n, 8);
    ts_check(&w, &m);
    ts_addrs(&m, &w, &after);
    assert_memory_equal(&before, &after, sizeof before);
    /* Only a fresh runtime takes a restore. */
    struct snap_handle_map m2;
    assert_int_equal(ts_restore(p, id, &m2), NRT_INVALID);
    snap_handle_map_free(&m);
    ts_fini();

    /* Another machine: refused, naming both. */
    setenv("TRNEMU_INSTANCE", "trn1.32xlarge", 1);
    assert_int_equal(rt_init(0), NRT_SUCCESS);
    tu_log_begin();
    assert_int_equal(ts_restore(p, -1, &m2), NRT_INVALID);
    char log[2048];
    assert_int_equal(tu_log_end(log, sizeof log), 1);
    assert_non_null(strstr(log, "trn1.2xlarge"));
    rt_close();
}

/* Bytes a snapshot added to the file, from its row. */
static int64_t ts_stored(const char *path, int64_t id)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT stored_bytes FROM snapshot WHERE id=?", -1, &s,
                                        NULL), SQLITE_OK);
    sqlite3_bind_int64(s, 1, id);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return v;
}

static void test_dedup(void **state)
{
    (void)state;
    const char *p = ts_path("dedup.db");
    cl_db_unlink(p);
    struct ts_world w;
    ts_init();
    ts_build(&w);
    int64_t a = ts_save(p, "first");
    int64_t b = ts_save(p, "second");
    /* Nothing changed: no chunk is stored twice, nor the NEFF. */
    assert_true(ts_stored(p, a) > 100000);
    assert_int_equal(ts_stored(p, b), 0);
    TS_ENTER();
    uint8_t x[64];
    memset(x, 0x5a, sizeof x);
    assert_int_equal(tensor_write(w.dev, x, 200000, sizeof x), NRT_SUCCESS);
    TS_LEAVE();
    int64_t c = ts_save(p, "third");
    int64_t sc = ts_stored(p, c);
    assert_true(sc > 0 && sc <= (int64_t)SNAP_CHUNK_DEFAULT);
    ts_fini();
}

/* Restore after an SQL change to a good file: must be NRT_INVALID and
 * leave the runtime fresh. */
/* Recompute the manifests of a file after an edit, as a forger would, so
 * that only the row checks stand between the edit and a restore. */
static void ts_remanifest(const char *path)
{
    struct snap_db *db;
    if (snap_open(path, false, &db) != NRT_SUCCESS)
        return; /* the edit broke the file itself */
    sqlite3 *q = snap_sqlite(db);
    sqlite3_stmt *ids, *up;
    if (sqlite3_prepare_v2(q, "SELECT snap FROM manifest", -1, &ids, NULL) != SQLITE_OK) {
        snap_close(db);
        return;
    }
    assert_int_equal(sqlite3_prepare_v2(q, "UPDATE manifest SET hash=?2 WHERE snap=?1", -1, &up,
                                        NULL), SQLITE_OK);
    while (sqlite3_step(ids) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(ids, 0);
        struct chunk_hash h;
        if (snap_manifest_compute(db, id, &h) != NRT_SUCCESS)
            continue;
        sqlite3_bind_int64(up, 1, id);
        sqlite3_bind_blob(up, 2, h.b, CHUNK_HASH_LEN, SQLITE_TRANSIENT);
        assert_int_equal(sqlite3_step(up), SQLITE_DONE);
        sqlite3_reset(up);
    }
    sqlite3_finalize(ids);
    sqlite3_finalize(up);
    snap_close(db);
}

/* One corrupted copy of good must be refused with exactly one line and
 * leave nothing behind; forged: with the manifests recomputed. */
static void ts_bad_case_mode(const char *good, const char *sql, const char *what, bool forged)
{
    const char *p = ts_path("bad.db");
    cl_db_unlink(p);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", good, p);
    assert_int_equal(system(cmd), 0);
    ts_sql(p, sql);
    if (forged)
        ts_remanifest(p);
    ts_init();
    handle_lock();
    size_t sets = handle_count(HANDLE_TENSOR_SET);  /* sets outlive nrt_close */
    handle_unlock();
    struct snap_handle_map m;
    tu_log_begin();
    NRT_STATUS st = ts_restore(p, -1, &m);
    char log[4096];
    int lines = tu_log_end(log, sizeof log);
    if (st != NRT_INVALID || lines != 1)
        fail_msg("%s%s: status %d, %d lines: %s", what, forged ? " (forged manifest)" : "",
                 (int)st, lines, log);
    if (getenv("TS_VERBOSE") != NULL)
        printf("--- %s%s (%d lines)\n%s", what, forged ? " (forged)" : "", lines, log);
    assert_int_equal(m.n, 0);
    handle_lock();
    assert_int_equal(handle_count(HANDLE_TENSOR) + handle_count(HANDLE_MODEL), 0);
    assert_int_equal(handle_count(HANDLE_TENSOR_SET), sets);
    handle_unlock();
    ts_fini();
}

static void ts_bad_case(const char *good, const char *sql, const char *what)
{
    ts_bad_case_mode(good, sql, what, false);
    /* edits that remove or move data are a different, consistent snapshot
     * once the manifest is forged: only the manifest can see them */
    if (strncmp(what, "manifest: ", 10) != 0)
        ts_bad_case_mode(good, sql, what, true);
}

static void test_bad_files(void **state)
{
    (void)state;
    char good[512];
    snprintf(good, sizeof good, "%s", ts_path("good.db"));
    cl_db_unlink(good);
    struct ts_world w;
    ts_init();
    ts_build(&w);
    ts_save(good, "good");
    ts_fini();
    ts_sql(good, "PRAGMA wal_checkpoint(TRUNCATE)");
    static const char *const cases[][2] = {
        {"UPDATE chunk SET data = zeroblob(length(data)) WHERE id = 3", "chunk bytes"},
        {"UPDATE chunk SET hash = zeroblob(16) WHERE id = 2", "chunk hash"},
        {"UPDATE chunk SET raw_len = raw_len + 1 WHERE id = 1", "chunk length"},
        {"UPDATE chunk SET codec = 7", "codec"},
        {"DELETE FROM chunk WHERE id = 4", "missing chunk"},
        {"UPDATE region_chunk SET off = off + (1 << 40)", "chunk offset"},
        {"UPDATE region SET size = 12345 WHERE kind = 'hbm'", "HBM size"},
        {"UPDATE region SET size = 12345 WHERE kind = 'sbuf'", "SBUF size"},
        {"UPDATE snapshot SET profile = 'trn2.48xlarge'", "profile"},
        {"UPDATE snapshot SET lnc = 2", "lnc"},
        {"UPDATE snapshot SET chunk_size = 1000", "chunk size"},
        {"UPDATE snapshot SET visible = 'x'", "visible"},
        {"UPDATE tensor SET size = size + 1 WHERE name = 'dev'", "tensor beyond storage"},
        {"UPDATE tensor SET off = 1 << 50 WHERE name = 'slice'", "slice offset"},
        {"UPDATE tensor SET placement = 9", "placement"},
        {"UPDATE tensor SET vnc = 5 WHERE name = 'dev'", "tensor vnc"},
        {"UPDATE tensor SET name = x'00ff'", "tensor name blob"},
        {"UPDATE tensor SET storage = 99 WHERE name = 'dev'", "missing storage"},
        {"UPDATE storage SET off = off + 64 WHERE kind = 1", "overlapping block"},
        {"UPDATE storage SET vnc = 1, chip = 0 WHERE kind = 1 AND vnc = 0", "block vnc"},
        {"UPDATE storage SET id = id + 100", "storage ids"},
        {"UPDATE storage SET size = 1 << 62 WHERE kind = 2", "host size"},
        {"DELETE FROM region WHERE kind = 'host'", "missing host region"},
        {"UPDATE model_block SET len = len + 64 WHERE seq = 1", "model block"},
        {"DELETE FROM model_block WHERE seq = 0", "missing model block"},
        {"UPDATE neff SET data = zeroblob(size)", "neff bytes"},
        {"DELETE FROM neff", "missing neff"},
        {"UPDATE model SET vnc = 0", "model vnc"},
        {"UPDATE core SET state = x'00'", "core blob"},
        {"UPDATE core SET gen = 3", "core gen"},
        {"UPDATE core SET idx = 1", "core index"},
        {"DROP TABLE tensor", "missing table"},
        {"UPDATE tensor SET handle = 'text' WHERE name = 'dev'", "handle type"},
        {"DELETE FROM snapshot", "no snapshot"},
        /* issue 13: rows restore used to skip or take */
        {"UPDATE region SET kind = 'xyz' WHERE kind = 'sbuf'", "unknown region kind"},
        {"DELETE FROM region WHERE kind = 'psum'", "missing region row"},
        {"UPDATE region_chunk SET off = -65536 WHERE off = (SELECT max(off) FROM region_chunk)",
         "negative chunk offset"},
        {"UPDATE region_chunk SET off = 'abc' WHERE off = (SELECT max(off) FROM region_chunk)",
         "text chunk offset"},
        {"UPDATE region_chunk SET off = off + 0.5 WHERE off = (SELECT max(off) FROM region_chunk)",
         "real chunk offset"},
        {"UPDATE region_chunk SET off = off + 8 WHERE off = (SELECT max(off) FROM region_chunk)",
         "unaligned chunk offset"},
        {"UPDATE region_chunk SET region = 999 WHERE off = (SELECT max(off) FROM region_chunk)",
         "chunk of no region"},
        {"DELETE FROM region_chunk WHERE off = (SELECT max(off) FROM region_chunk)",
         "manifest: deleted chunk row"},
        {"UPDATE region_chunk SET chunk = CASE chunk WHEN (SELECT min(chunk) FROM region_chunk)"
         " THEN (SELECT max(chunk) FROM region_chunk) ELSE (SELECT min(chunk) FROM region_chunk)"
         " END WHERE chunk IN ((SELECT min(chunk) FROM region_chunk),"
         " (SELECT max(chunk) FROM region_chunk))", "manifest: swapped chunk references"},
        {"UPDATE tensor_set_entry SET tensor = 12345", "set entry naming no tensor"},
        {"UPDATE tensor_set_entry SET set_handle = set_handle + 1", "set entry of no set"},
        {"UPDATE tensor SET size = size * 64 WHERE name = 'slice'", "manifest: slice longer than parent"},
        {"UPDATE tensor SET handle = 0 WHERE name = 'slice'", "tensor handle 0"},
        {"UPDATE snapshot SET chunk_size = 4096", "chunk larger than the chunk size"},
        {"UPDATE chunk SET data = x'' WHERE id = 1", "empty chunk blob"},
        {"UPDATE chunk SET data = CAST(data AS TEXT) WHERE id = 1", "chunk data as text"},
        {"INSERT INTO region_chunk SELECT snap, region, off + (1 << 24), chunk FROM region_chunk"
         " WHERE region = (SELECT id FROM region WHERE kind = 'hbm' LIMIT 1)",
         "more chunks than the recorded size"},
        {"UPDATE snapshot SET logical_bytes = 4096", "recorded size too small"},
        {"DELETE FROM manifest", "manifest: missing manifest"},
        {"UPDATE manifest SET hash = zeroblob(16)", "manifest: wrong manifest"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        ts_bad_case(good, cases[i][0], cases[i][1]);
}

/* A process owning VNC 0 only may not have a file write into VNC 1's HBM
 * (another process's, in a shared instance). */
static void test_foreign_slice(void **state)
{
    (void)state;
    const char *p = ts_path("slice.db");
    cl_db_unlink(p);
    setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    assert_int_equal(rt_init(0), NRT_SUCCESS);
    TS_ENTER();
    nrt_tensor_t *t;
    assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "t", &t), NRT_SUCCESS);
    assert_int_equal(tensor_write(t, "data", 0, 4), NRT_SUCCESS);
    TS_LEAVE();
    int64_t id = ts_save(p, "vnc 0 only");
    rt_close();
    ts_sql(p, "UPDATE region_chunk SET off = off + (SELECT size / 2 FROM region WHERE kind = 'hbm')"
              " WHERE region = (SELECT id FROM region WHERE kind = 'hbm')");
    ts_remanifest(p);
    assert_int_equal(rt_init(0), NRT_SUCCESS);
    struct snap_handle_map m;
    tu_log_begin();
    assert_int_equal(ts_restore(p, id, &m), NRT_INVALID);
    char log[2048];
    assert_int_equal(tu_log_end(log, sizeof log), 1);
    assert_non_null(strstr(log, "outside the memory this process owns"));
    rt_close();
    unsetenv("NEURON_RT_VISIBLE_CORES");
}

static void test_tuning(void **state)
{
    (void)state;
    const char *p = ts_path("tune.db");
    cl_db_unlink(p);
    struct snap_db *db;
    assert_int_equal(snap_open(p, true, &db), NRT_SUCCESS);
    assert_int_equal(snap_set_chunk_size(db, 1000), NRT_INVALID);
    assert_int_equal(snap_set_chunk_size(db, 1u << 25), NRT_INVALID);
    assert_int_equal(snap_set_chunk_size(db, 16384), NRT_SUCCESS);
    snap_set_policy(db, CHUNK_POLICY_RAW);
    struct ts_world w;
    ts_init();
    ts_build(&w);
    TS_ENTER();
    int64_t id;
    assert_int_equal(snap_save(db, "small chunks", -1, &id), NRT_SUCCESS);
    TS_LEAVE();
    snap_close(db);
    ts_fini();
    ts_init();
    struct snap_handle_map m;
    assert_int_equal(ts_restore(p, id, &m), NRT_SUCCESS);
    ts_check(&w, &m);
    snap_handle_map_free(&m);
    ts_fini();
}

/* ---- restore through the HBM file, pipelined ---------------------------- */

/* Tensors of the pipeline test: sizes, VNCs and contents (0 smooth
 * floats, 1 incompressible bytes, 2 floats with zero pages and zero
 * chunks, 3 a few bytes at odd places). 22 MiB in all: several batches
 * and every staging buffer of the writer in use. */
static const struct {
    size_t size;  /* bytes */
    int vnc;      /* process-local VNC */
    int kind;     /* contents, above */
} ts_pipe_t[] = {
    {7u << 20, 0, 0}, {5u << 20, 1, 1}, {(6u << 20) + 12345, 0, 2}, {(3u << 20) + 1, 1, 3},
    {(1u << 20) - 7, 0, 1},
};
#define TS_PIPE_N (sizeof ts_pipe_t / sizeof *ts_pipe_t)

static void ts_pipe_fill(uint8_t *p, size_t n, int kind, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    memset(p, 0, n);
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        if (kind == 1)
            p[i] = (uint8_t)(x >> 24);
        else if (kind == 3 && i % 70001 == 0)
            p[i] = (uint8_t)(x >> 24) | 1;
    }
    if (kind == 0 || kind == 2)
        fill_floats(p, n, 0);
    for (size_t off = 0; kind == 2 && off < n; off += 4096)
        if ((off / 4096) % 3 == 1 || (off >> 16) % 5 == 2)  /* zero pages, whole zero chunks */
            memset(p + off, 0, n - off < 4096 ? n - off : 4096);
}

/* The hash of each tensor's bytes, read through the runtime. */
static void ts_pipe_hashes(nrt_tensor_t *const *t, struct chunk_hash *h)
{
    TS_ENTER();
    uint8_t *buf = malloc(ts_pipe_t[0].size);
    assert_non_null(buf);
    for (size_t i = 0; i < TS_PIPE_N; i++) {
        assert_int_equal(tensor_read(t[i], buf, 0, ts_pipe_t[i].size), NRT_SUCCESS);
        chunk_hash_of(buf, ts_pipe_t[i].size, &h[i]);
    }
    free(buf);
    TS_LEAVE();
}

/* One round: build, save at chunk size cs, restore into a fresh runtime
 * (through the HBM file: decoded batches go to the writer thread), and
 * compare every tensor's hash with the one before the save. */
static void ts_pipe_round(const char *p, uint32_t cs)
{
    cl_db_unlink(p);
    ts_init();
    nrt_tensor_t *t[TS_PIPE_N];
    struct chunk_hash before[TS_PIPE_N], after[TS_PIPE_N];
    TS_ENTER();
    int fd = state_hbm_fd(rt_machine(), 0);
    assert_true(fd >= 0);  /* the path under test */
    close(fd);
    uint8_t *buf = malloc(ts_pipe_t[0].size);
    for (size_t i = 0; i < TS_PIPE_N; i++) {
        assert_int_equal(tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, ts_pipe_t[i].vnc,
                                         ts_pipe_t[i].size, "pipe", &t[i]), NRT_SUCCESS);
        ts_pipe_fill(buf, ts_pipe_t[i].size, ts_pipe_t[i].kind, (uint32_t)i);
        assert_int_equal(tensor_write(t[i], buf, 0, ts_pipe_t[i].size), NRT_SUCCESS);
    }
    free(buf);
    struct snap_db *db;
    int64_t id;
    assert_int_equal(snap_open(p, true, &db), NRT_SUCCESS);
    assert_int_equal(snap_set_chunk_size(db, cs), NRT_SUCCESS);
    assert_int_equal(snap_save(db, "pipeline", -1, &id), NRT_SUCCESS);
    snap_close(db);
    TS_LEAVE();
    ts_pipe_hashes(t, before);
    ts_fini();

    ts_init();
    struct snap_handle_map m;
    assert_int_equal(ts_restore(p, id, &m), NRT_SUCCESS);
    nrt_tensor_t *r[TS_PIPE_N];
    for (size_t i = 0; i < TS_PIPE_N; i++)
        r[i] = ts_find(&m, t[i]);
    ts_pipe_hashes(r, after);
    for (size_t i = 0; i < TS_PIPE_N; i++)
        assert_memory_equal(before[i].b, after[i].b, CHUNK_HASH_LEN);
    snap_handle_map_free(&m);
    ts_fini();
}

/* A restore large enough for the pipeline gives the bytes saved, at the
 * default chunk size and at the smallest (many chunks per batch), with
 * one thread (decoding on the caller) and with several decoders. */
static void test_restore_pipeline(void **state)
{
    (void)state;
    const char *p = ts_path("pipe.db");
    ts_pipe_round(p, SNAP_CHUNK_DEFAULT);
    ts_pipe_round(p, 4096);
    const char *old = getenv("TRNEMU_SNAPSHOT_THREADS");
    char keep[32] = "";
    if (old != NULL)
        snprintf(keep, sizeof keep, "%s", old);
    setenv("TRNEMU_SNAPSHOT_THREADS", "4", 1);
    ts_pipe_round(p, SNAP_CHUNK_DEFAULT);
    setenv("TRNEMU_SNAPSHOT_THREADS", "1", 1);
    ts_pipe_round(p, 16384);
    if (old != NULL)
        setenv("TRNEMU_SNAPSHOT_THREADS", keep, 1);
    else
        unsetenv("TRNEMU_SNAPSHOT_THREADS");
}

static int ts_setup(void **state)
{
    (void)state;
    snprintf(ts_dir, sizeof ts_dir, "%s/trnemu-test-store-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(ts_dir) == NULL)
        return -1;
    if (getenv("TRNEMU_INSTANCE_NAME") == NULL) {
        char name[64];
        snprintf(name, sizeof name, "unit-store-%d", (int)getpid());
        setenv("TRNEMU_INSTANCE_NAME", name, 1);
    }
    return 0;
}

static int ts_teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ts_dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* snap_verify: a good file passes; a flipped chunk byte is named in one
 * line; a file from before manifests (schema 1) is upgraded on open, its
 * snapshot restores with one warning and verifies as legacy. */
static void test_verify(void **state)
{
    (void)state;
    const char *p = ts_path("verify.db");
    cl_db_unlink(p);
    struct ts_world w;
    ts_init();
    ts_build(&w);
    int64_t id = ts_save(p, "verify");
    ts_fini();
    struct snap_db *db;
    bool legacy = true;
    assert_int_equal(snap_open(p, false, &db), NRT_SUCCESS);
    assert_int_equal(snap_verify(db, id, &legacy), NRT_SUCCESS);
    assert_false(legacy);
    snap_close(db);
    ts_sql(p, "UPDATE chunk SET data = zeroblob(length(data)) WHERE id = 2");
    ts_remanifest(p);
    assert_int_equal(snap_open(p, false, &db), NRT_SUCCESS);
    char log[2048];
    tu_log_begin();
    assert_int_equal(snap_verify(db, id, &legacy), NRT_INVALID);
    assert_int_equal(tu_log_end(log, sizeof log), 1);
    assert_non_null(strstr(log, "does not decode to its hash"));
    snap_close(db);
    /* schema 1: no manifest table, no manifest_from */
    cl_db_unlink(p);
    ts_init();
    ts_build(&w);
    id = ts_save(p, "old");
    ts_fini();
    ts_sql(p, "DROP TABLE manifest; DELETE FROM meta WHERE key = 'manifest_from';"
              " UPDATE meta SET value = '1' WHERE key = 'schema'; PRAGMA user_version = 1");
    assert_int_equal(snap_open(p, false, &db), NRT_SUCCESS);
    assert_int_equal(snap_verify(db, id, &legacy), NRT_SUCCESS);
    assert_true(legacy);
    snap_close(db);
    ts_init();
    struct snap_handle_map m;
    setenv("NEURON_RT_LOG_LEVEL", "WARN", 1);
    log_env_load();
    tu_log_begin();
    assert_int_equal(ts_restore(p, id, &m), NRT_SUCCESS);
    int lines = tu_log_end(log, sizeof log);
    unsetenv("NEURON_RT_LOG_LEVEL");
    log_env_load();
    assert_int_equal(lines, 1);
    assert_non_null(strstr(log, "predates manifests"));
    snap_handle_map_free(&m);
    ts_fini();
    /* a new snapshot in the upgraded file has a manifest */
    ts_init();
    ts_build(&w);
    int64_t id2 = ts_save(p, "new");
    ts_fini();
    assert_int_equal(snap_open(p, false, &db), NRT_SUCCESS);
    assert_int_equal(snap_verify(db, id2, &legacy), NRT_SUCCESS);
    assert_false(legacy);
    snap_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shuffle_roundtrip),
        cmocka_unit_test(test_codec_roundtrip),
        cmocka_unit_test(test_zero_and_hash),
        cmocka_unit_test(test_alloc_take_at),
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_save_restore),
        cmocka_unit_test(test_dedup),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_foreign_slice),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_tuning),
        cmocka_unit_test(test_restore_pipeline),
    };
    return cmocka_run_group_tests(tests, ts_setup, ts_teardown);
}
