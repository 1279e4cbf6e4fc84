/*
 * fuzz_snapshot_corrupt.c: libFuzzer entry checking the promise of issue 13:
 * no corruption of a snapshot file restores with NRT_SUCCESS and wrong
 * data. A valid file (built once per process: device, host and slice
 * tensors with known bytes, a tensor set, a model, a core with SBUF bytes
 * and a semaphore) is damaged as the input says, record by record (12
 * bytes each; the first byte picks the kind):
 *   0-1: set a column of a row to an integer or text (fuzz_snapshot.c's
 *        vocabulary, plus the manifest table);
 *   2:   swap one column between two rows of a table;
 *   3:   delete a row;
 *   4:   duplicate a row under a shifted key;
 *   5:   page damage: after SQLite has closed the file, overwrite up to 8
 *        bytes at a chosen page and offset of the file.
 * Then the newest snapshot is restored into a fresh runtime. A refusal is
 * fine; a success must give back exactly the saved bytes (tensors, SBUF,
 * semaphore), unless the snapshot predates manifests (snap_verify says
 * legacy: the mutations can turn the manifest off only by removing it and
 * rewriting meta, which restore reports with a warning).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fuzz_snap_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct fz_table fz_tables[] = {
    FZ_SNAPSHOT_TABLES,
    {"manifest", "snap", {"hash", "snap", NULL}},
};
#define FZ_NTABLES (sizeof fz_tables / sizeof *fz_tables)

/* What the valid file holds, to compare a successful restore with. */
static uint64_t fz_old_a, fz_old_h, fz_old_s;  /* saved tensor handles */
static uint8_t fz_want_a[200000];               /* device tensor a */
static uint8_t fz_want_h[5000];                 /* host tensor h */
static uint8_t fz_want_sbuf[3000];              /* core 0 SBUF bytes at 1000 */

/* Build the valid file once: a little of everything, bytes remembered. */
static void fz_make_base(void)
{
    struct fz_base b;
    fz_base_begin(&b, sizeof fz_want_a, sizeof fz_want_h);
    tensor_write(b.a, b.buf, 70000, sizeof b.buf);
    tensor_write(b.a, b.buf, 0, 4096);
    tensor_write(b.h, b.buf + 100, 0, sizeof fz_want_h);
    if (tensor_read(b.a, fz_want_a, 0, sizeof fz_want_a) != NRT_SUCCESS ||
        tensor_read(b.h, fz_want_h, 0, sizeof fz_want_h) != NRT_SUCCESS)
        abort();
    fz_old_a = (uint64_t)(uintptr_t)b.a;
    fz_old_h = (uint64_t)(uintptr_t)b.h;
    fz_old_s = (uint64_t)(uintptr_t)b.s;
    memcpy(fz_want_sbuf, b.buf + 7, sizeof fz_want_sbuf);
    fz_base_save(&b, fz_want_sbuf, sizeof fz_want_sbuf);
}

static void fz_init(void)
{
    fz_setup("snapcorrupt");
    fz_make_base();
    /* one file, no WAL beside it: page damage hits the real pages */
    sqlite3 *db;
    if (sqlite3_open(fz_base, &db) == SQLITE_OK)
        sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;", NULL,
                     NULL, NULL);
    sqlite3_close(db);
}

/* Run one statement with ?1 (integer or text) and ?2 (row index). */
static void fz_run(sqlite3 *db, const char *sql, const uint8_t *r, bool text)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) {
        sqlite3_finalize(s);
        return;
    }
    int64_t v;
    memcpy(&v, r + 4, 8);
    if (text)
        sqlite3_bind_text(s, 1, (const char *)r + 4, (int)(r[3] % 9), SQLITE_TRANSIENT);
    else
        sqlite3_bind_int64(s, 1, fz_int_value(v));
    sqlite3_bind_int64(s, 2, r[3] % 8);
    sqlite3_bind_int64(s, 3, r[2] % 8);
    sqlite3_step(s);
    sqlite3_finalize(s);
}

/* Apply one row-level record to the open file. */
static void fz_mutate(sqlite3 *db, const uint8_t *r)
{
    const struct fz_table *t;
    const char *col = fz_pick(fz_tables, FZ_NTABLES, r, &t);
    char sql[2048], where[400], where2[400];
    const char *pick = "WHERE (%s) IN (SELECT %s FROM %s ORDER BY %s LIMIT 1 OFFSET ?%d)";
    snprintf(where, sizeof where, pick, t->key, t->key, t->name, t->key, 2);
    snprintf(where2, sizeof where2, pick, t->key, t->key, t->name, t->key, 3);
    switch (r[0] % 6) {
    case 0:
    case 1:
        snprintf(sql, sizeof sql, "UPDATE OR IGNORE %s SET %s = ?1 %s", t->name, col, where);
        fz_run(db, sql, r, r[0] % 6 == 1);
        break;
    case 2: /* swap col between the rows ?2 and ?3 through a temporary table */
        snprintf(sql, sizeof sql,
                 "CREATE TEMP TABLE IF NOT EXISTS fz_sw(k INTEGER, v);"
                 "DELETE FROM fz_sw;"
                 "INSERT INTO fz_sw SELECT 0, %s FROM %s WHERE (%s) IN (SELECT %s FROM %s ORDER BY"
                 " %s LIMIT 1 OFFSET %d);"
                 "INSERT INTO fz_sw SELECT 1, %s FROM %s WHERE (%s) IN (SELECT %s FROM %s ORDER BY"
                 " %s LIMIT 1 OFFSET %d);"
                 "UPDATE OR IGNORE %s SET %s = (SELECT v FROM fz_sw WHERE k=1) WHERE (%s) IN"
                 " (SELECT %s FROM %s ORDER BY %s LIMIT 1 OFFSET %d);"
                 "UPDATE OR IGNORE %s SET %s = (SELECT v FROM fz_sw WHERE k=0) WHERE (%s) IN"
                 " (SELECT %s FROM %s ORDER BY %s LIMIT 1 OFFSET %d);",
                 col, t->name, t->key, t->key, t->name, t->key, r[3] % 8,
                 col, t->name, t->key, t->key, t->name, t->key, r[4] % 8,
                 t->name, col, t->key, t->key, t->name, t->key, r[3] % 8,
                 t->name, col, t->key, t->key, t->name, t->key, r[4] % 8);
        sqlite3_exec(db, sql, NULL, NULL, NULL);
        break;
    case 3:
        snprintf(sql, sizeof sql, "DELETE FROM %s %s", t->name, where);
        fz_run(db, sql, r, false);
        break;
    case 4: /* a copy of a row with col shifted (a duplicate under a new key) */
        snprintf(sql, sizeof sql,
                 "DROP TABLE IF EXISTS temp.fz_dup;"
                 "CREATE TEMP TABLE fz_dup AS SELECT * FROM %s WHERE (%s) IN (SELECT %s FROM %s"
                 " ORDER BY %s LIMIT 1 OFFSET %d);"
                 "UPDATE fz_dup SET %s = CASE typeof(%s) WHEN 'integer' THEN %s + %d ELSE %s END;"
                 "INSERT OR IGNORE INTO %s SELECT * FROM fz_dup;",
                 t->name, t->key, t->key, t->name, t->key, r[3] % 8, col, col, col,
                 (int)(r[4] % 4 == 0 ? 4096 : r[4] % 4 == 1 ? 1 : r[4] % 4 == 2 ? 65536 : -4096),
                 col, t->name);
        sqlite3_exec(db, sql, NULL, NULL, NULL);
        break;
    default:
        break; /* page damage: applied after closing */
    }
}

/* Overwrite up to 8 bytes of the closed file at page r[1..2], offset r[3]*16. */
static void fz_damage(const uint8_t *r)
{
    int fd = open(fz_in, O_RDWR);
    if (fd < 0)
        return;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && sb.st_size >= 4096) {
        uint64_t pages = (uint64_t)sb.st_size / 4096;
        uint64_t page = ((uint64_t)r[1] | (uint64_t)r[2] << 8) % pages;
        off_t at = (off_t)(page * 4096 + (uint64_t)r[3] * 16);
        if (pwrite(fd, r + 4, 1 + r[0] / 32, at) < 0)
            (void)0;
    }
    close(fd);
}

static void fz_make_input(const uint8_t *data, size_t size)
{
    cl_db_unlink(fz_in);
    fz_copy(fz_base, fz_in);
    sqlite3 *db;
    if (sqlite3_open(fz_in, &db) != SQLITE_OK) {
        sqlite3_close(db);
        return;
    }
    for (size_t i = 0; i + 12 <= size && i < 12 * 32; i += 12)
        if (data[i] % 6 != 5)
            fz_mutate(db, data + i);
    sqlite3_close(db);
    for (size_t i = 0; i + 12 <= size && i < 12 * 32; i += 12)
        if (data[i] % 6 == 5)
            fz_damage(data + i);
}

/* The restored object of an old handle. */
static void *fz_find(const struct snap_handle_map *m, uint64_t old)
{
    return snap_handle_map_find(m, old);
}

/* A restore that succeeded must have given back the saved bytes. */
static void fz_check(const struct snap_handle_map *m)
{
    static uint8_t got[200000];
    nrt_tensor_t *a = fz_find(m, fz_old_a), *h = fz_find(m, fz_old_h), *s = fz_find(m, fz_old_s);
    if (a == NULL || h == NULL || s == NULL)
        abort(); /* a tensor vanished and restore said success */
    if (tensor_read(a, got, 0, sizeof fz_want_a) != NRT_SUCCESS ||
        memcmp(got, fz_want_a, sizeof fz_want_a) != 0)
        abort();
    if (tensor_read(s, got, 0, 4096) != NRT_SUCCESS || memcmp(got, fz_want_a + 64, 4096) != 0)
        abort();
    if (tensor_read(h, got, 0, sizeof fz_want_h) != NRT_SUCCESS ||
        memcmp(got, fz_want_h, sizeof fz_want_h) != 0)
        abort();
    struct core *c = state_core_peek(rt_machine(), 0, 0);
    if (c == NULL || memcmp(c->sbuf + 1000, fz_want_sbuf, sizeof fz_want_sbuf) != 0 ||
        c->sem[3] != 9)
        abort();
}

/* What snap_verify said of the snapshot being restored. */
struct fz_verdict {
    bool verified;             /* it verified */
    bool legacy;               /* it predates manifests */
};

/* A successful restore must agree with verify and (unless legacy) give
 * back the saved bytes. */
static void fz_restore_check(NRT_STATUS st, const struct snap_handle_map *map, void *user)
{
    const struct fz_verdict *v = user;
    if (st == NRT_SUCCESS && !v->verified)
        abort(); /* verify and restore disagree */
    if (st == NRT_SUCCESS && !v->legacy)
        fz_check(map);
}

static void fz_restore(struct snap_db *db, bool must)
{
    struct fz_verdict v = {.legacy = false};
    int64_t id = -1;
    if (snap_latest(db, &id) != NRT_SUCCESS || id < 0)
        return;
    v.verified = snap_verify(db, id, &v.legacy) == NRT_SUCCESS;
    fz_restore_run(db, id, must, fz_restore_check, &v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct snap_db *db = fz_open_input(data, size);
    if (db != NULL) {
        fz_restore(db, size < 12);
        snap_close(db);
    }
    return 0;
}
