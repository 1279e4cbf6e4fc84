/*
 * bench_store.c: the snapshot store against SQLite's own blob rates.
 *
 *   1. codecs: compression ratio and speed of LZ4 with and without the
 *      byte shuffle, on float32 and bf16 data (smooth and random-normal);
 *   2. chunk-size sweep: save and restore of 256 MiB of touched HBM, as
 *      ratios of SQLite inserting / reading the same bytes as blobs of the
 *      same size (same pragmas, same disk, same run);
 *   3. the headline: the same for 1 GiB at the default chunk size
 *      (targets: 0.8 and 0.8);
 *   4. dedup: bytes a second snapshot adds after 1% of the memory changed
 *      (target: at most 2% of the first), for a contiguous 1% (one tensor
 *      rewritten) and a scattered one (4 KiB runs).
 * Wall-clock times (the disk is part of the cost), best of two runs.
 * Usage: bench-store [DIR [dedup|headline]] (files go to DIR, default the
 * current one; `dedup`: part 4 only; `headline`: part 3 only).
 * BENCH_STORE_MIB sets the 1 GiB.
 */
#include <inttypes.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench_util.h"
#include "devices/runtime/rt_life.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/state.h"
#include "store/chunk.h"
#include "store/calllog.h"
#include "store/snapshot.h"

#define MIB (1024.0 * 1024.0)

static char bs_dir[512];

static double bs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *bs_path(const char *name)
{
    static char p[2][700];
    static int k;
    k ^= 1;
    snprintf(p[k], sizeof p[k], "%s/%s", bs_dir, name);
    return p[k];
}

/* ---- data -------------------------------------------------------------- */

static uint64_t bs_rng = 0x9E3779B97F4A7C15ull;

static double bs_uniform(void)
{
    bs_rng ^= bs_rng << 13;
    bs_rng ^= bs_rng >> 7;
    bs_rng ^= bs_rng << 17;
    return (double)(bs_rng >> 11) * (1.0 / 9007199254740992.0);
}

static float bs_gauss(void)
{
    double u = bs_uniform() + 1e-12, v = bs_uniform();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

static uint16_t bs_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

enum bs_kind { BS_F32_SMOOTH, BS_F32_GAUSS, BS_BF16_SMOOTH, BS_BF16_GAUSS, BS_KINDS };
static const char *const bs_kind_name[BS_KINDS] = {
    "float32 smooth", "float32 normal(0,0.02)", "bf16 smooth", "bf16 normal(0,0.02)"};

/* Fill n bytes with data of a kind (smooth: a slow sine, as activations;
 * normal: as freshly initialised weights). */
static void bs_fill(uint8_t *p, size_t n, enum bs_kind k, uint64_t phase)
{
    if (k == BS_F32_SMOOTH || k == BS_F32_GAUSS) {
        float *f = (float *)(void *)p;
        for (size_t i = 0; i < n / 4; i++)
            f[i] = k == BS_F32_SMOOTH ? 3.0f * sinf((float)(i + phase) * 1e-3f) : 0.02f * bs_gauss();
    } else {
        uint16_t *h = (uint16_t *)(void *)p;
        for (size_t i = 0; i < n / 2; i++)
            h[i] = bs_bf16(k == BS_BF16_SMOOTH ? 3.0f * sinf((float)(i + phase) * 1e-3f)
                                               : 0.02f * bs_gauss());
    }
}

/* The benchmark's memory: a mix of the four kinds in 16 MiB blocks. */
static void bs_fill_mix(uint8_t *p, size_t n)
{
    size_t blk = 16u << 20;
    for (size_t off = 0, i = 0; off < n; off += blk, i++)
        bs_fill(p + off, n - off < blk ? n - off : blk, (enum bs_kind)(i % BS_KINDS), off);
}

/* ---- 1. codecs --------------------------------------------------------- */

static void bs_codecs(void)
{
    size_t n = 64u << 20, cs = SNAP_CHUNK_DEFAULT;
    uint8_t *buf = malloc(n), *enc = malloc(chunk_bound(cs)), *tmp = malloc(cs);
    printf("## codecs (64 MiB, %zu KiB chunks): encoded/raw and encode speed\n", cs >> 10);
    printf("%-24s %16s %16s %16s\n", "data", "lz4", "shuffle+lz4", "auto (kept)");
    static const enum chunk_policy pol[3] = {CHUNK_POLICY_LZ4, CHUNK_POLICY_SHUF4,
                                             CHUNK_POLICY_AUTO};
    for (int k = 0; k < BS_KINDS; k++) {
        bs_fill(buf, n, (enum bs_kind)k, 0);
        printf("%-24s", bs_kind_name[k]);
        for (int p = 0; p < 3; p++) {
            size_t total = 0;
            int codec = 0;
            double t0 = bs_now();
            for (size_t off = 0; off < n; off += cs)
                total += chunk_encode(buf + off, cs, pol[p], enc, chunk_bound(cs), tmp, &codec);
            double t = bs_now() - t0;
            printf("  %5.3f %5.2f GB/s", (double)total / (double)n, (double)n / t / 1e9);
        }
        printf("\n");
    }
    free(buf);
    free(enc);
    free(tmp);
}

/* ---- SQLite baselines -------------------------------------------------- */

/* Insert the memory as blobs of cs bytes into a fresh file (the same
 * pragmas as a snapshot file); seconds. */
static double bs_sqlite_insert(const uint8_t *mem, size_t n, size_t cs, const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    cl_db_unlink(path);
    sqlite3_open(path, &db);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE b(id INTEGER PRIMARY KEY, data BLOB NOT NULL)", NULL, NULL, NULL);
    sqlite3_prepare_v2(db, "INSERT INTO b(data) VALUES(?1)", -1, &s, NULL);
    double t0 = bs_now();
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (size_t off = 0; off < n; off += cs) {
        sqlite3_bind_blob(s, 1, mem + off, (int)cs, SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE)
            bench_die("bench-store", "baseline insert failed");
        sqlite3_reset(s);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    double t = bs_now() - t0;
    sqlite3_finalize(s);
    sqlite3_close(db);
    return t;
}

/* Read every blob back (step + column_blob); seconds. mapped: through
 * SQLite's memory-mapped I/O, as a restore reads its file. */
static double bs_sqlite_read(const char *path, bool mapped)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    sqlite3_open(path, &db);
    char sql[48];
    snprintf(sql, sizeof sql, "PRAGMA mmap_size=%lld", (long long)SNAP_RESTORE_MMAP_BYTES);
    if (mapped)
        sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_prepare_v2(db, "SELECT data FROM b ORDER BY id", -1, &s, NULL);
    double t0 = bs_now();
    uint64_t sum = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        const uint8_t *p = sqlite3_column_blob(s, 0);
        sum += p[0] + (uint64_t)sqlite3_column_bytes(s, 0);
    }
    double t = bs_now() - t0;
    sqlite3_finalize(s);
    sqlite3_close(db);
    if (sum == 0)
        bench_die("bench-store", "baseline read nothing");
    return t;
}

/* A fresh shared-memory file of n bytes (where the HBM files live); its
 * descriptor, and its path in shm. */
static int bs_shm_open(size_t n, char *shm, size_t cap)
{
    const char *dir = getenv("TRNEMU_SHM_DIR") ? getenv("TRNEMU_SHM_DIR") : "/dev/shm";
    snprintf(shm, cap, "%s/bench-store-%d", dir, (int)getpid());
    int fd = open(shm, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)n) != 0)
        bench_die("bench-store", "cannot make a shared-memory file");
    return fd;
}

static void bs_shm_close(int fd, const char *shm)
{
    close(fd);
    unlink(shm);
}

/* Read every blob back and write it into a fresh shared-memory file, as
 * a restore must put the bytes into fresh HBM; seconds. */
static double bs_sqlite_read_write(const char *path, size_t n)
{
    char shm[128];
    int fd = bs_shm_open(n, shm, sizeof shm);
    sqlite3 *db;
    sqlite3_stmt *s;
    sqlite3_open(path, &db);
    sqlite3_prepare_v2(db, "SELECT data FROM b ORDER BY id", -1, &s, NULL);
    double t0 = bs_now();
    off_t off = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        int len = sqlite3_column_bytes(s, 0);
        if (pwrite(fd, sqlite3_column_blob(s, 0), (size_t)len, off) != len)
            bench_die("bench-store", "baseline write failed");
        off += len;
    }
    double t = bs_now() - t0;
    sqlite3_finalize(s);
    sqlite3_close(db);
    bs_shm_close(fd, shm);
    return t;
}

/* The fill bound: n bytes from one hot 1 MiB buffer written into a fresh
 * shared-memory file, 1 MiB per pwrite; no reading at all. A restore
 * writes every byte into fresh HBM pages, so it cannot beat this; seconds. */
static double bs_fresh_fill(size_t n)
{
    char shm[128];
    int fd = bs_shm_open(n, shm, sizeof shm);
    size_t piece = 1u << 20;
    uint8_t *buf = malloc(piece);
    if (buf == NULL)
        bench_die("bench-store", "out of memory");
    memset(buf, 0x5a, piece);
    double t0 = bs_now();
    for (size_t off = 0; off < n; off += piece) {
        size_t k = n - off < piece ? n - off : piece;
        if (pwrite(fd, buf, k, (off_t)off) != (ssize_t)k)
            bench_die("bench-store", "fill write failed");
    }
    double t = bs_now() - t0;
    free(buf);
    bs_shm_close(fd, shm);
    return t;
}

/* ---- the runtime ------------------------------------------------------- */

static void bs_init(void)
{
    if (rt_init(0) != NRT_SUCCESS)
        bench_die("bench-store", "rt_init failed");
}

/* A device tensor of n bytes filled with the mix; its host address. */
static uint8_t *bs_make_memory(size_t n, nrt_tensor_t **t)
{
    if (rt_enter() != NRT_SUCCESS ||
        tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, n, "mem", t) != NRT_SUCCESS)
        bench_die("bench-store", "cannot allocate the memory");
    uint8_t *p = tensor_va(*t);
    bs_fill_mix(p, n);
    rt_leave();
    return p;
}

static double bs_save(const char *path, uint32_t cs, int64_t *id)
{
    struct snap_db *db = NULL;
    if (rt_enter() != NRT_SUCCESS || snap_open(path, true, &db) != NRT_SUCCESS ||
        snap_set_chunk_size(db, cs) != NRT_SUCCESS)
        bench_die("bench-store", "cannot open the snapshot file");
    double t0 = bs_now();
    if (snap_save(db, "bench", -1, id) != NRT_SUCCESS)
        bench_die("bench-store", "save failed");
    double t = bs_now() - t0;
    snap_close(db);
    rt_leave();
    return t;
}

/* Restore into a fresh runtime; seconds of snap_restore, and in *cpu the
 * CPU seconds it took in all the process's threads. */
static double bs_restore(const char *path, int64_t id, double *cpu)
{
    rt_close();
    bs_init();
    struct snap_db *db = NULL;
    struct snap_handle_map map;
    if (rt_enter() != NRT_SUCCESS || snap_open(path, false, &db) != NRT_SUCCESS)
        bench_die("bench-store", "cannot open the snapshot file");
    double t0 = bs_now(), c0 = bench_proc_cpu_s();
    if (snap_restore(db, id, &map) != NRT_SUCCESS)
        bench_die("bench-store", "restore failed");
    double t = bs_now() - t0;
    *cpu = bench_proc_cpu_s() - c0;
    snap_handle_map_free(&map);
    snap_close(db);
    rt_leave();
    return t;
}

/* Save and restore n bytes at chunk size cs, and the SQLite baselines;
 * prints one row. Best of two runs each. */
static void bs_throughput(size_t n, uint32_t cs)
{
    nrt_tensor_t *t;
    uint8_t *mem = bs_make_memory(n, &t);
    double ins = 1e30, rd = 1e30, rm = 1e30, rw = 1e30, fl = 1e30, sv = 1e30, rs = 1e30;
    double rcpu = 0;
    for (int r = 0; r < 2; r++) {
        double x = bs_sqlite_insert(mem, n, cs, bs_path("baseline.db"));
        ins = x < ins ? x : ins;
        x = bs_sqlite_read(bs_path("baseline.db"), false);
        rd = x < rd ? x : rd;
        x = bs_sqlite_read(bs_path("baseline.db"), true);
        rm = x < rm ? x : rm;
        x = bs_sqlite_read_write(bs_path("baseline.db"), n);
        rw = x < rw ? x : rw;
        x = bs_fresh_fill(n);
        fl = x < fl ? x : fl;
    }
    cl_db_unlink(bs_path("baseline.db"));
    for (int r = 0; r < 2; r++) {
        int64_t id;
        cl_db_unlink(bs_path("snap.db"));
        double x = bs_save(bs_path("snap.db"), cs, &id);
        sv = x < sv ? x : sv;
        double cpu;
        x = bs_restore(bs_path("snap.db"), id, &cpu); /* the runtime is fresh afterwards */
        if (x < rs)
            rs = x, rcpu = cpu;
        if (r == 0)
            mem = bs_make_memory(n, &t);
    }
    cl_db_unlink(bs_path("snap.db"));
    printf("%5u KiB %5.0f MiB | insert %5.0f save %5.0f ratio %4.2f | read %5.0f mapped %5.0f "
           "(+write %5.0f) fill %5.0f | restore %5.0f ratio %4.2f mapped %4.2f (%4.2f) "
           "of fill %4.2f cores %4.2f\n",
           cs >> 10, n / MIB, n / ins / 1e6, n / sv / 1e6, ins / sv, n / rd / 1e6, n / rm / 1e6,
           n / rw / 1e6, n / fl / 1e6, n / rs / 1e6, rd / rs, rm / rs, rw / rs, fl / rs,
           rcpu / rs);
    fflush(stdout);
    rt_close();
    bs_init();
}

/* ---- 4. dedup ---------------------------------------------------------- */

/* Bytes of the file once its log is folded in. */
static int64_t bs_file_bytes(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    int64_t pages = 0, size = 0;
    sqlite3_open(path, &db);
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    sqlite3_prepare_v2(db, "SELECT page_count * page_size FROM pragma_page_count(), "
                           "pragma_page_size()", -1, &s, NULL);
    if (sqlite3_step(s) == SQLITE_ROW)
        size = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(db);
    (void)pages;
    return size;
}

static void bs_dedup(size_t n, bool scattered, uint32_t cs)
{
    nrt_tensor_t *t;
    uint8_t *mem = bs_make_memory(n, &t);
    const char *p = bs_path("dedup.db");
    cl_db_unlink(p);
    int64_t id;
    bs_save(p, cs, &id);
    int64_t first = bs_file_bytes(p);
    size_t change = n / 100;
    /* New values of the same kind as the old ones (bs_fill_mix's blocks). */
    size_t blk = 16u << 20;
    if (!scattered) {
        /* One tensor of each kind rewritten, a quarter of the 1% each. */
        for (size_t k = 0; k < BS_KINDS; k++) {
            size_t at = (n / 3 / blk + k) * blk;
            bs_fill(mem + at, change / BS_KINDS, (enum bs_kind)(at / blk % BS_KINDS), 12345);
        }
    } else {
        size_t runs = change / 4096, stride = n / runs;
        for (size_t i = 0; i < runs; i++) {
            size_t at = i * stride + (i * 7919 % 16) * 4096 % stride;
            bs_fill(mem + at, 4096, (enum bs_kind)(at / blk % BS_KINDS), 12345 + i);
        }
    }
    bs_save(p, cs, &id);
    int64_t second = bs_file_bytes(p) - first;
    printf("%-40s %4u KiB chunks: first %7.1f MiB, second %6.2f MiB = %5.2f%% of the first\n",
           scattered ? "1% changed in 4 KiB runs spread evenly:" : "1% changed in 4 tensors:",
           cs >> 10, first / MIB, second / MIB, 100.0 * (double)second / (double)first);
    fflush(stdout);
    cl_db_unlink(p);
    rt_close();
    bs_init();
}

int main(int argc, char **argv)
{
    snprintf(bs_dir, sizeof bs_dir, "%s", argc > 1 ? argv[1] : ".");
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    char name[64];
    snprintf(name, sizeof name, "bench-store-%d", (int)getpid());
    setenv("TRNEMU_INSTANCE_NAME", name, 1);
    size_t big = (size_t)(getenv("BENCH_STORE_MIB") ? atoi(getenv("BENCH_STORE_MIB")) : 1024) << 20;
    if (argc > 2 && strcmp(argv[2], "dedup") == 0) {  /* only part 4 */
        bs_init();
        bs_dedup(big, false, SNAP_CHUNK_DEFAULT);
        bs_dedup(big, true, SNAP_CHUNK_DEFAULT);
        bs_dedup(big, true, 16u << 10);
        rt_close();
        return 0;
    }
    if (argc > 2 && strcmp(argv[2], "headline") == 0) {  /* only part 3 */
        bs_init();
        bs_throughput(big, SNAP_CHUNK_DEFAULT);
        rt_close();
        return 0;
    }
    bs_codecs();
    fflush(stdout);
    bs_init();
    printf("\n## chunk-size sweep (256 MiB of touched HBM, float mix); MB/s, and ratios to "
           "SQLite's own blob rates\n# (in parentheses: to SQLite reading the blobs and writing "
           "them into a fresh shared-memory file, as a restore must;\n# fill: writing the bytes "
           "alone into a fresh shared-memory file, the bound of a restore;\n# cores: the "
           "restore's CPU time in all threads over its wall-clock time)\n");
    static const uint32_t sizes[] = {16u << 10, 64u << 10, 256u << 10, 1u << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        bs_throughput(256u << 20, sizes[i]);
    printf("\n## 1 GiB of touched HBM at the default chunk size (targets: ratios >= 0.8)\n");
    bs_throughput(big, SNAP_CHUNK_DEFAULT);
    printf("\n## second snapshot after 1%% of the memory changed (target <= 2%%)\n");
    bs_dedup(big, false, SNAP_CHUNK_DEFAULT);
    bs_dedup(big, true, SNAP_CHUNK_DEFAULT);
    bs_dedup(big, true, 16u << 10);
    rt_close();
    return 0;
}
