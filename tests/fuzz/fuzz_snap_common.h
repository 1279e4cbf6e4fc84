/*
 * fuzz_snap_common.h: what the two snapshot fuzz targets share
 * (fuzz_snapshot.c, fuzz_snapshot_corrupt.c): the per-process directory
 * and file names, the tables and columns a record may change, the
 * integers worth trying, file helpers, the foreign NEFF of the valid file
 * and the process set-up. Each target includes it once; header only, as a
 * fuzz target is one source file.
 */
#ifndef TRNEMU_FUZZ_SNAP_COMMON_H
#define TRNEMU_FUZZ_SNAP_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/runtime/handle.h"
#include "devices/runtime/rt_life.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/state.h"
#include "store/calllog.h"
#include "store/snapshot.h"
#include "../unit/test_neff_util.h"

static char fz_dir[256];       /* per-process directory */
static char fz_base[300];      /* the valid file */
static char fz_in[300];        /* the file under test */

/* A table, the key that picks one of its rows, and its columns. */
struct fz_table {
    const char *name;          /* table */
    const char *key;           /* primary key columns */
    const char *cols[10];      /* columns a record may change (NULL-ended) */
};

/* The snapshot tables both targets change (a target may add rows). */
#define FZ_SNAPSHOT_TABLES                                                                      \
    {"snapshot", "id", {"created", "reason", "call_seq", "profile", "lnc", "visible",           \
                        "chunk_size", "logical_bytes", "stored_bytes", NULL}},                  \
    {"chunk", "id", {"hash", "raw_len", "codec", "data", "id", NULL}},                          \
    {"neff", "id", {"hash", "size", "data", "id", NULL}},                                       \
    {"region", "snap, id", {"id", "kind", "chip", "vnc", "core", "size", "snap", NULL}},        \
    {"region_chunk", "snap, region, off", {"off", "chunk", "region", NULL}},                    \
    {"storage", "snap, id", {"id", "kind", "size", "chip", "stack", "vnc", "off", "len", "region", \
                             NULL}},                                                            \
    {"tensor", "snap, handle", {"handle", "name", "placement", "vnc", "size", "storage", "off", \
                                "completions", NULL}},                                          \
    {"tensor_set", "snap, handle", {"handle", NULL}},                                           \
    {"tensor_set_entry", "snap, set_handle, pos", {"set_handle", "pos", "name", "tensor", NULL}}, \
    {"model", "snap, handle", {"handle", "name", "vnc", "gvnc", "neff", "executions", "cc_rank", \
                               "cc_world", NULL}},                                              \
    {"model_block", "snap, model, seq", {"seq", "chip", "stack", "vnc", "off", "len", "model",  \
                                         NULL}},                                                \
    {"model_io", "snap, model, idx", {"name", "is_output", "dtype", "size", "shape", NULL}},    \
    {"core", "snap, vnc, idx", {"vnc", "idx", "gen", "state", "sbuf", "psum", NULL}},           \
    {"option", "snap, name", {"name", "value", NULL}},                                          \
    {"meta", "key", {"value", "key", NULL}}

/* The table (by r[1]) and the column of it (by r[2]) a record names. */
static inline const char *fz_pick(const struct fz_table *tables, size_t ntables, const uint8_t *r,
                                  const struct fz_table **t)
{
    *t = &tables[r[1] % ntables];
    size_t ncols = 0;
    while ((*t)->cols[ncols] != NULL)
        ncols++;
    return (*t)->cols[r[2] % ncols];
}

/* Integers worth trying; a record's value picks one, or is used as is. */
static const int64_t fz_ints[] = {
    0, 1, -1, 2, 3, 7, 63, 64, 65, 4095, 4096, 65536, 1 << 20, 16 << 20, (16 << 20) + 1,
    INT32_MAX, (int64_t)1 << 32, (int64_t)32 << 30, ((int64_t)32 << 30) - 64, (int64_t)1 << 40,
    (int64_t)1 << 62, INT64_MAX, INT64_MIN,
};

/* A record's integer: v itself when odd, else one of fz_ints. */
static inline int64_t fz_int_value(int64_t v)
{
    return (v & 1) ? v : fz_ints[(uint64_t)v % (sizeof fz_ints / sizeof *fz_ints)];
}

static inline void fz_copy(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb"), *g = fopen(to, "wb");
    char buf[65536];
    size_t n;
    while (f && g && (n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, g);
    if (f)
        fclose(f);
    if (g)
        fclose(g);
}

/* tu_small_model as a foreign NEFF (its variables are placed, its fake
 * code never decoded). */
static inline void fz_neff(uint8_t **bytes, size_t *size)
{
    struct neff_model *m = tu_small_model();
    m->info.feature_bits &= ~(uint64_t)NEFF_FEATURE_TRNEMU_ISA;
    for (uint32_t i = 0; i < m->n_sgs; i++)
        m->sgs[i]->isa_version = 0;
    struct neff_file *f = NULL;
    if (neff_model_store(m, &f) != EMU_OK || neff_file_write(f, bytes, size) != EMU_OK)
        abort();
    neff_file_free(f);
    neff_model_free(m);
}

static inline void fz_cleanup(void)
{
    cl_db_unlink(fz_in);
    cl_db_unlink(fz_base);
    rmdir(fz_dir);
}

/* Per-process names (tag: "snapshot", "snapcorrupt"), a trn1.2xlarge
 * runtime from the environment, and the files removed at exit. */
static inline void fz_setup(const char *tag)
{
    snprintf(fz_dir, sizeof fz_dir, "/tmp/trnemu-fuzz-%s-%d", tag, (int)getpid());
    mkdir(fz_dir, 0700);
    snprintf(fz_base, sizeof fz_base, "%s/base.db", fz_dir);
    snprintf(fz_in, sizeof fz_in, "%s/in.db", fz_dir);
    char name[64];
    snprintf(name, sizeof name, "fuzz-%s-%d", tag, (int)getpid());
    setenv("TRNEMU_INSTANCE_NAME", name, 1);
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    unsetenv("NEURON_RT_NUM_CORES");
    snap_set_host_limit(64u << 20);
    cl_db_unlink(fz_base);
    atexit(fz_cleanup);
}

/* The valid file under construction: a runtime entered, pattern bytes,
 * device tensor a, host tensor h, slice s (4096 bytes at 64 of a), an
 * empty tensor e and a set holding a and s. */
struct fz_base {
    nrt_tensor_t *a, *h, *s, *e;   /* the tensors */
    nrt_tensor_set_t *set;         /* {"a": a, "b": s} */
    uint8_t buf[8192];             /* pattern bytes to write */
};

static inline void fz_base_begin(struct fz_base *b, size_t a_size, size_t h_size)
{
    if (rt_init(0) != NRT_SUCCESS || rt_enter() != NRT_SUCCESS)
        abort();
    for (size_t i = 0; i < sizeof b->buf; i++)
        b->buf[i] = (uint8_t)(i * 7 + i / 100);
    if (tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, a_size, "a", &b->a) != NRT_SUCCESS ||
        tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, h_size, "h", &b->h) != NRT_SUCCESS ||
        tensor_allocate_slice(b->a, 64, 4096, "s", &b->s) != NRT_SUCCESS ||
        tensor_allocate_empty("e", &b->e) != NRT_SUCCESS ||
        tensor_set_allocate(&b->set) != NRT_SUCCESS)
        abort();
}

/* Add a model and core 0 (sbuf_n bytes of sbuf at SBUF offset 1000,
 * semaphore 3 at 9), save the file fz_base and close the runtime. */
static inline void fz_base_save(struct fz_base *b, const uint8_t *sbuf, size_t sbuf_n)
{
    tensor_set_add(b->set, "a", b->a);
    tensor_set_add(b->set, "b", b->s);
    nrt_model_t *m;
    uint8_t *neff;
    size_t n;
    fz_neff(&neff, &n);
    if (model_load(neff, n, 1, &m) != NRT_SUCCESS)
        abort();
    free(neff);
    struct core *c;
    if (state_core_make(rt_machine(), 0, 0, &c) != NRT_SUCCESS)
        abort();
    memcpy(c->sbuf + 1000, sbuf, sbuf_n);
    c->sem[3] = 9;
    struct snap_db *db;
    if (snap_open(fz_base, true, &db) != NRT_SUCCESS ||
        snap_set_chunk_size(db, 4096) != NRT_SUCCESS ||
        snap_save(db, "fuzz", 3, NULL) != NRT_SUCCESS)
        abort();
    snap_close(db);
    tensor_set_destroy(b->set);
    rt_leave();
    rt_close();
}

/* What a target checks after a restore: its status and handle map. */
typedef void (*fz_check_fn)(NRT_STATUS st, const struct snap_handle_map *map, void *user);

/* Restore snapshot id (-1: the newest) into a fresh runtime; abort when
 * must and it fails; check (may be NULL) sees the outcome. The restored
 * tensor sets, which outlive nrt_close, are freed. */
static inline void fz_restore_run(struct snap_db *db, int64_t id, bool must, fz_check_fn check,
                                  void *user)
{
    if (rt_init(0) != NRT_SUCCESS)
        abort();
    if (rt_enter() == NRT_SUCCESS) {
        struct snap_handle_map map;
        NRT_STATUS st = snap_restore(db, id, &map);
        if (must && st != NRT_SUCCESS)
            abort();
        if (check != NULL)
            check(st, &map, user);
        for (size_t i = 0; i < map.n; i++)
            if (map.v[i].kind == HANDLE_TENSOR_SET)
                tensor_set_destroy(map.v[i].obj);
        snap_handle_map_free(&map);
        rt_leave();
    }
    rt_close();
}

/* Each target defines these: its one-time set-up, and the file under
 * test made from the input. */
static void fz_init(void);
static void fz_make_input(const uint8_t *data, size_t size);

/* Set up on first use, make the file under test and open it (NULL when
 * it does not open). */
static inline struct snap_db *fz_open_input(const uint8_t *data, size_t size)
{
    static bool ready;
    if (!ready) {
        fz_init();
        ready = true;
    }
    fz_make_input(data, size);
    struct snap_db *db;
    return snap_open(fz_in, false, &db) == NRT_SUCCESS ? db : NULL;
}

#endif
