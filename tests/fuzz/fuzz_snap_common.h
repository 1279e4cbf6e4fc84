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

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/handle.h"
#include "devices/runtime.h"
#include "devices/state.h"
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
    {"snapshot", "id", {"created", "reason", "call_seq", "profile", "lnc", "visible", "chunk_size", \
                        "logical_bytes", "stored_bytes", NULL}},                                \
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

/* Remove an SQLite file and its -wal and -shm companions. */
static inline void fz_rm(const char *path)
{
    char b[400];
    unlink(path);
    snprintf(b, sizeof b, "%s-wal", path);
    unlink(b);
    snprintf(b, sizeof b, "%s-shm", path);
    unlink(b);
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
    fz_rm(fz_in);
    fz_rm(fz_base);
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
    fz_rm(fz_base);
    atexit(fz_cleanup);
}

#endif
