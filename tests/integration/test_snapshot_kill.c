/*
 * test_snapshot_kill.c: SIGKILL at many points of repeated saves. A child
 * changes a device tensor and saves, over and over, reporting each
 * committed snapshot through a pipe; the test kills it after a delay drawn
 * from a fixed seed (20 times, into the same file; most delays start at
 * the child's first committed save). After every kill the
 * file must pass PRAGMA integrity_check, hold every reported snapshot, and
 * the newest reported one and an older one must restore with the right
 * bytes.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "it_common.h"
#include "trnemu/trnemu.h"

#define SK_ROUNDS 20
#define SK_BYTES (2u << 20)      /* the tensor the child rewrites */
#define SK_MAX_DELAY_MS 120      /* kills land within the first few saves */

static char sk_dir[256];         /* temporary directory of this run */

/* What the child reports after each committed save. */
struct sk_report {
    int64_t id;         /* snapshot id */
    uint64_t handle;    /* the tensor's handle in the child */
    uint32_t seed;      /* pattern it held */
};

static struct sk_report sk_done[SK_ROUNDS * 64]; /* every reported snapshot */
static size_t sk_ndone;

static uint32_t sk_rand(uint32_t *s)
{
    *s = *s * 1103515245u + 12345u;
    return *s >> 8;
}

/* The child: save forever, one changed pattern per snapshot. */
static void sk_child(const char *db, int fd, uint32_t round)
{
    char name[64];
    snprintf(name, sizeof name, "%s-k%u", getenv("TRNEMU_INSTANCE_NAME") ?
             getenv("TRNEMU_INSTANCE_NAME") : "sk", round);
    setenv("TRNEMU_INSTANCE_NAME", name, 1);
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        _exit(10);
    nrt_tensor_t *t;
    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, SK_BYTES, "x", &t) != NRT_SUCCESS)
        _exit(11);
    uint8_t *buf = malloc(SK_BYTES);
    for (uint32_t i = 0;; i++) {
        uint32_t seed = round * 1000 + i;
        it_pattern(buf, SK_BYTES, seed);
        nrt_tensor_write(t, buf, 0, SK_BYTES);
        struct sk_report r = {-1, (uint64_t)(uintptr_t)t, seed};
        if (trnemu_snapshot_save(db, "kill test", &r.id) != NRT_SUCCESS)
            _exit(12);
        if (write(fd, &r, sizeof r) != (ssize_t)sizeof r)
            _exit(13);
    }
}

/* One integer from a query. */
static int64_t sk_query(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* The file passes integrity_check and holds every reported snapshot. */
static void sk_integrity(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    /* Killed while the file was being made: no schema yet, no snapshot. */
    bool made = sk_query(db, "SELECT count(*) FROM sqlite_master WHERE name = 'snapshot'") > 0;
    assert_true(made || sk_ndone == 0);
    for (size_t i = 0; made && i < sk_ndone; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT count(*) FROM snapshot WHERE id = %lld",
                 (long long)sk_done[i].id);
        assert_int_equal(sk_query(db, sql), 1);
    }
    sqlite3_close(db);
}

/* Restore one reported snapshot and check the tensor's bytes. */
static void sk_verify(const char *db, const struct sk_report *r)
{
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(trnemu_snapshot_restore(db, r->id), NRT_SUCCESS);
    nrt_tensor_t *t = trnemu_snapshot_lookup(r->handle);
    assert_non_null(t);
    uint8_t *want = malloc(SK_BYTES);
    it_pattern(want, SK_BYTES, r->seed);
    it_expect_bytes(t, want, SK_BYTES);
    free(want);
    nrt_close();
}

/* Wait (up to 60 s) for the child's first report and keep it. */
static void sk_wait_first(int fd, pid_t pid)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct sk_report r;
    if (poll(&p, 1, 60000) == 1 && read(fd, &r, sizeof r) == (ssize_t)sizeof r) {
        sk_done[sk_ndone++] = r;
        return;
    }
    kill(pid, SIGKILL);
    fail_msg("the saving child reported no snapshot within 60 s");
}

/* Run one child, kill it after delay_ms, collect its reports. */
static void sk_round(const char *db, uint32_t round, uint32_t delay_ms)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        sk_child(db, fds[1], round);
    }
    close(fds[1]);
    /* Most rounds count the delay from the child's first committed save,
     * so that kills land inside later saves however slow the host is;
     * every fourth counts from the fork and may hit start-up or the very
     * first save (the file being made). */
    if (round % 4 != 0)
        sk_wait_first(fds[0], pid);
    struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    kill(pid, SIGKILL);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* Killed, or never got that far; an error exit of the child is a failure. */
    assert_true(WIFSIGNALED(status));
    struct sk_report r;
    while (read(fds[0], &r, sizeof r) == (ssize_t)sizeof r && sk_ndone < SK_ROUNDS * 64)
        sk_done[sk_ndone++] = r;
    close(fds[0]);
}

static void test_kill_during_saves(void **state)
{
    (void)state;
    char db[512], shm[300];
    snprintf(db, sizeof db, "%s/kill.db", sk_dir);
    snprintf(shm, sizeof shm, "%s/shm", sk_dir);
    mkdir(shm, 0700);
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    uint32_t seed = 20261122;
    size_t saved = 0;
    for (uint32_t k = 0; k < SK_ROUNDS; k++) {
        uint32_t delay = sk_rand(&seed) % SK_MAX_DELAY_MS;
        /* The children's instances die with them: keep them out of /dev/shm. */
        const char *old_shm = getenv("TRNEMU_SHM_DIR");
        char keep[300] = "";
        if (old_shm)
            snprintf(keep, sizeof keep, "%s", old_shm);
        setenv("TRNEMU_SHM_DIR", shm, 1);
        sk_round(db, k, delay);
        if (keep[0])
            setenv("TRNEMU_SHM_DIR", keep, 1);
        else
            unsetenv("TRNEMU_SHM_DIR");
        if (access(db, F_OK) != 0)
            continue;  /* killed before the first save created the file */
        sk_integrity(db);
        if (sk_ndone > saved) {
            sk_verify(db, &sk_done[sk_ndone - 1]);
            sk_verify(db, &sk_done[sk_rand(&seed) % sk_ndone]);
        }
        saved = sk_ndone;
    }
    printf("# %zu snapshots committed and reported over %d kills\n", sk_ndone, SK_ROUNDS);
    assert_true(sk_ndone > 0);
    for (size_t i = 0; i < sk_ndone; i += 7)
        sk_verify(db, &sk_done[i]);
}

static int sk_setup(void **state)
{
    (void)state;
    snprintf(sk_dir, sizeof sk_dir, "%s/trnemu-it-kill-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(sk_dir) != NULL ? 0 : -1;
}

static int sk_teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sk_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_during_saves),
    };
    return cmocka_run_group_tests(tests, sk_setup, sk_teardown);
}
