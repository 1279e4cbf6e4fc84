/*
 * fuzz_snapshot.c: libFuzzer entry for the snapshot loader. The first
 * input byte picks how the rest becomes a snapshot file:
 *   even: the bytes are the file itself;
 *   odd:  a valid file (tensors, a tensor set, a model, core state, built
 *         once per process) is altered row by row: each 12-byte record
 *         sets a column of a row to a chosen integer, text or blob,
 *         truncates a blob, deletes a row, or sets the schema version.
 * The file is then opened, listed and read the way `trnemu snapshot`
 * does, and restored into a fresh trn1.2xlarge runtime. Any outcome but a
 * crash, a hang or a leak is fine; a good file must restore.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "store/snap_query.h"
#include "fuzz_snap_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct fz_table fz_tables[] = {
    FZ_SNAPSHOT_TABLES,
};
#define FZ_NTABLES (sizeof fz_tables / sizeof *fz_tables)

/* Build the valid file once: a little of everything. */
static void fz_make_base(void)
{
    struct fz_base b;
    fz_base_begin(&b, 200000, 5000);
    tensor_write(b.a, b.buf, 70000, sizeof b.buf);
    tensor_write(b.h, b.buf, 0, 5000);
    fz_base_save(&b, b.buf, 3000);
}

static void fz_init(void)
{
    fz_setup("snapshot");
    fz_make_base();
    if (getenv("FUZZ_SNAPSHOT_SEED") != NULL)  /* write the valid file as a seed */
        fz_copy(fz_base, getenv("FUZZ_SNAPSHOT_SEED"));
}

/* Apply one 12-byte record to the open file. */
static void fz_mutate(sqlite3 *db, const uint8_t *r)
{
    const struct fz_table *t;
    const char *col = fz_pick(fz_tables, FZ_NTABLES, r, &t);
    int64_t v;
    memcpy(&v, r + 4, 8);
    char sql[1024];
    const char *pick = "WHERE (%s) IN (SELECT %s FROM %s ORDER BY %s LIMIT 1 OFFSET ?2)";
    char where[400];
    snprintf(where, sizeof where, pick, t->key, t->key, t->name, t->key);
    switch (r[0] % 6) {
    case 0:
    case 1: snprintf(sql, sizeof sql, "UPDATE OR IGNORE %s SET %s = ?1 %s", t->name, col, where); break;
    case 2: snprintf(sql, sizeof sql, "UPDATE OR IGNORE %s SET %s = substr(%s, 1, ?1 & 65535) %s",
                     t->name, col, col, where); break;
    case 3: snprintf(sql, sizeof sql, "DELETE FROM %s %s", t->name, where); break;
    case 4: snprintf(sql, sizeof sql, "UPDATE OR IGNORE %s SET %s = randomblob(0) || ?1 %s",
                     t->name, col, where); break;
    default: snprintf(sql, sizeof sql, "PRAGMA user_version = %d", (int)(r[4] % 4)); break;
    }
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return;
    }
    if (r[0] % 6 == 0)
        sqlite3_bind_int64(s, 1, fz_int_value(v));
    else if (r[0] % 6 == 1)
        sqlite3_bind_text(s, 1, (const char *)r + 4, (int)(r[3] % 9), SQLITE_TRANSIENT);
    else if (r[0] % 6 == 2)
        sqlite3_bind_int64(s, 1, v);
    else
        sqlite3_bind_blob(s, 1, r + 4, (int)(r[3] % 9), SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, r[3] % 8);
    sqlite3_step(s);
    sqlite3_finalize(s);
}

static void fz_make_input(const uint8_t *data, size_t size)
{
    cl_db_unlink(fz_in);
    if (size > 0 && (data[0] & 1) == 0) {
        FILE *f = fopen(fz_in, "wb");
        if (f != NULL) {
            fwrite(data + 1, 1, size - 1, f);
            fclose(f);
        }
        return;
    }
    fz_copy(fz_base, fz_in);
    sqlite3 *db;
    if (sqlite3_open(fz_in, &db) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    for (size_t i = 1; i + 12 <= size && i < 1 + 12 * 64; i += 12)
        fz_mutate(db, data + i);
    sqlite3_close(db);
}

/* Everything `trnemu snapshot show` and `export` read. */
static void fz_query(struct snap_db *db)
{
    struct snapq_snapshot *s = NULL;
    size_t ns = 0;
    if (snapq_snapshots(db, &s, &ns) != NRT_SUCCESS)
        return;
    for (size_t i = 0; i < ns && i < 4; i++) {
        struct snapq_tensor *t = NULL;
        struct snapq_region *g = NULL;
        struct snapq_model *m = NULL;
        struct snapq_entry *e = NULL;
        size_t nt = 0, ng = 0, nm = 0, ne = 0;
        snapq_models(db, s[i].id, &m, &nm);
        snapq_entries(db, s[i].id, &e, &ne);
        if (snapq_regions(db, s[i].id, &g, &ng) == NRT_SUCCESS)
            for (size_t k = 0; k < ng; k++) {
                struct snapq_chunk *c = NULL;
                size_t nc = 0;
                snapq_chunks(db, s[i].id, g[k].id, &c, &nc);
                free(c);
            }
        if (snapq_tensors(db, s[i].id, &t, &nt) == NRT_SUCCESS)
            for (size_t k = 0; k < nt; k++) {
                uint64_t len = t[k].size < 65536 ? t[k].size : 65536;
                uint8_t *buf = malloc(len ? len : 1);
                if (buf != NULL && t[k].region >= 0)
                    snapq_read(db, s[i].id, t[k].region, t[k].region_size, t[k].region_off, len,
                               buf);
                free(buf);
            }
        free(t);
        free(g);
        free(m);
        free(e);
    }
    free(s);
}

static void fz_restore(struct snap_db *db, bool must)
{
    fz_restore_run(db, -1, must, NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct snap_db *db = fz_open_input(data, size);
    if (db != NULL) {
        fz_query(db);
        fz_restore(db, size <= 1 && (size == 0 || (data[0] & 1) == 1));
        snap_close(db);
    }
    return 0;
}
