/*
 * test_record.c: the call log end to end, across processes: programs run
 * with TRNEMU_RECORD (or under libnrt-record.so, or with the snapshot
 * triggers), then `trnemu replay` re-runs the log in a fresh process.
 * Covered: the examples (tensor_demo, kernel_demo on the softmax, add and
 * matmul_512 kernels) and a failing kernel replay bit-exactly; a changed
 * input or status shows the first divergence; the record shim in front of
 * trnemu's libnrt gives a replayable log; TRNEMU_SNAPSHOT_ON_ERROR keeps
 * the failing execution and replays it alone; TRNEMU_SNAPSHOT_AT and
 * SIGUSR1 add snapshots a replay can start from; bad or corrupt files are
 * clear errors, never crashes; an unwritable log leaves the program alone.
 *
 * The programs and paths come from the environment (tests/integration/
 * meson.build): TRNEMU_TOOL, TRNEMU_RECORD_SHIM, RECORD_PROG, TENSOR_DEMO,
 * KERNEL_DEMO, TRNEMU_EXAMPLES_DIR.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <xxhash.h>

static char tmpdir[256]; /* scratch directory of this run */
static char outbuf[65536]; /* output of the last program run */
static int serial;        /* numbers the instances of the programs run */

static const char *need(const char *var)
{
    const char *v = getenv(var);
    if (v == NULL || *v == '\0')
        fail_msg("%s is not set (run through meson test)", var);
    return v;
}

static const char *tmp(const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

/* Run argv with extra NAME=VALUE variables (NULL-terminated), output into
 * outbuf; the exit status, or 128 + signal. */
static int run(const char *const *env, const char *const *argv)
{
    char out[512];
    snprintf(out, sizeof out, "%s/out.txt", tmpdir);
    pid_t pid = fork();
    if (pid == 0) {
        char inst[64];
        snprintf(inst, sizeof inst, "rec-test-%ld-%d", (long)getppid(), serial);
        setenv("TRNEMU_INSTANCE_NAME", inst, 1);
        unsetenv("TRNEMU_RECORD");
        unsetenv("TRNEMU_SNAPSHOT_ON_ERROR");
        unsetenv("TRNEMU_SNAPSHOT_AT");
        unsetenv("TRNEMU_SNAPSHOT_FILE");
        unsetenv("LD_PRELOAD");
        for (const char *const *e = env; e != NULL && *e != NULL; e++)
            putenv((char *)*e);
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    serial++;
    int status = 0;
    waitpid(pid, &status, 0);
    FILE *f = fopen(out, "r");
    size_t n = f ? fread(outbuf, 1, sizeof outbuf - 1, f) : 0;
    outbuf[n] = '\0';
    if (f)
        fclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int replay(const char *db, const char *extra1, const char *extra2)
{
    const char *argv[] = {need("TRNEMU_TOOL"), "replay", db, extra1, extra2, NULL};
    return run(NULL, argv);
}

static void expect_output(const char *what)
{
    if (strstr(outbuf, what) == NULL)
        fail_msg("expected \"%s\" in:\n%s", what, outbuf);
}

/* Record argv into db with the extra variables. */
static void record(const char *db, const char *extra, const char *const *argv)
{
    char rec[600];
    snprintf(rec, sizeof rec, "TRNEMU_RECORD=%s", db);
    const char *env[] = {rec, extra, NULL};
    int rc = run(env, argv);
    if (rc != 0)
        fail_msg("%s exited with %d:\n%s", argv[0], rc, outbuf);
}

static void replay_identical(const char *db)
{
    int rc = replay(db, NULL, NULL);
    if (rc != 0)
        fail_msg("replay of %s exited with %d:\n%s", db, rc, outbuf);
    expect_output("identical");
}

/* ---- SQL on the recorded files ---- */

static sqlite3 *db_open(const char *path)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    return db;
}

static int64_t db_int(const char *path, const char *sql)
{
    sqlite3 *db = db_open(path);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static void db_exec(const char *path, const char *sql)
{
    sqlite3 *db = db_open(path);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
        fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

static void copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    assert_non_null(a);
    assert_non_null(b);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, a)) > 0)
        assert_int_equal(fwrite(buf, 1, n, b), n);
    fclose(a);
    fclose(b);
}

/* Change one float of the first buffer nrt_tensor_write read, keeping the
 * content addressing consistent (new hash everywhere it is named). */
static void edit_first_write(const char *path, float value)
{
    sqlite3 *db = db_open(path);
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
        "SELECT p.data, p.hash FROM log_call_buffers cb JOIN log_calls c ON c.seq = cb.seq "
        "JOIN log_buffer_parts p ON p.hash = cb.hash WHERE c.fn = 'nrt_tensor_write' "
        "AND cb.dir = 0 ORDER BY c.seq LIMIT 1", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    size_t n = (size_t)sqlite3_column_bytes(st, 0);
    unsigned char *data = malloc(n), oldh[16], newh[16];
    memcpy(data, sqlite3_column_blob(st, 0), n);
    memcpy(oldh, sqlite3_column_blob(st, 1), 16);
    sqlite3_finalize(st);
    memcpy(data + 64, &value, 4); /* element 16 */
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(data, n));
    memcpy(newh, c.digest, 16);
    static const char *const sql[] = {
        "UPDATE log_buffer_parts SET data = ?3, hash = ?1 WHERE hash = ?2",
        "UPDATE log_buffers SET hash = ?1 WHERE hash = ?2",
        "UPDATE log_call_buffers SET hash = ?1 WHERE hash = ?2",
    };
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sqlite3_prepare_v2(db, sql[i], -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_blob(st, 1, newh, 16, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, oldh, 16, SQLITE_STATIC);
        if (i == 0)
            sqlite3_bind_blob(st, 3, data, (int)n, SQLITE_STATIC);
        assert_int_equal(sqlite3_step(st), SQLITE_DONE);
        sqlite3_finalize(st);
    }
    free(data);
    sqlite3_close(db);
}

/* ---- the tests ---- */

static void test_tensor_demo(void **state)
{
    (void)state;
    const char *db = tmp("tensor_demo.db");
    const char *argv[] = {need("TENSOR_DEMO"), NULL};
    record(db, NULL, argv);
    assert_true(db_int(db, "SELECT count(*) FROM log_calls") > 15);
    replay_identical(db);
    assert_int_equal(replay(db, "--list", NULL), 0);
    expect_output("nrt_tensor_write(tensor=");
}

static void test_kernels(void **state)
{
    (void)state;
    static const char *const kernels[] = {"softmax", "add", "matmul_512"};
    for (size_t i = 0; i < 3; i++) {
        char neff[512], name[64];
        snprintf(neff, sizeof neff, "%s/%s.neff", need("TRNEMU_EXAMPLES_DIR"), kernels[i]);
        snprintf(name, sizeof name, "%s.db", kernels[i]);
        const char *db = tmp(name);
        const char *argv[] = {need("KERNEL_DEMO"), neff, NULL};
        record(db, NULL, argv);
        assert_int_equal(db_int(db, "SELECT count(*) FROM log_calls WHERE fn = 'nrt_execute' "
                                    "AND ret = 0"), 1);
        replay_identical(db);
    }
}

static void test_failing_kernel(void **state)
{
    (void)state;
    const char *db = tmp("nan.db");
    const char *argv[] = {need("RECORD_PROG"), "nan", NULL};
    record(db, NULL, argv);
    assert_int_equal(db_int(db, "SELECT ret FROM log_calls WHERE fn = 'nrt_execute'"), 1003);
    replay_identical(db);
    /* The same log claiming the execution succeeded no longer replays. */
    const char *bad = tmp("nan-edited.db");
    copy_file(db, bad);
    db_exec(bad, "UPDATE log_calls SET ret = 0 WHERE fn = 'nrt_execute'");
    assert_int_equal(replay(bad, NULL, NULL), 1);
    expect_output("first divergence at call");
    expect_output("status: recorded 0");
}

static void test_changed_input_diverges(void **state)
{
    (void)state;
    char neff[512];
    snprintf(neff, sizeof neff, "%s/softmax.neff", need("TRNEMU_EXAMPLES_DIR"));
    const char *db = tmp("softmax-edit.db");
    const char *argv[] = {need("KERNEL_DEMO"), neff, NULL};
    record(db, NULL, argv);
    edit_first_write(db, 100.0f);
    assert_int_equal(replay(db, NULL, NULL), 1);
    expect_output("first divergence at call");
    expect_output("(nrt_tensor_read");
    expect_output("tensor: 'y'");
    expect_output("first difference at byte");
}

static void test_misc_and_threads(void **state)
{
    (void)state;
    const char *db = tmp("misc.db");
    const char *argv[] = {need("RECORD_PROG"), "misc", NULL};
    record(db, NULL, argv);
    assert_true(strstr(outbuf, "record_prog:") == NULL);
    replay_identical(db);
    const char *tdb = tmp("threads.db");
    const char *targv[] = {need("RECORD_PROG"), "threads", NULL};
    record(tdb, NULL, targv);
    assert_int_equal(db_int(tdb, "SELECT count(DISTINCT thread) FROM log_calls"), 3);
    assert_int_equal(db_int(tdb, "SELECT max(seq) + 1 - count(*) FROM log_calls"), 0);
    replay_identical(tdb);
}

static void test_record_shim(void **state)
{
    (void)state;
    const char *db = tmp("shim.db");
    char preload[600];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", need("TRNEMU_RECORD_SHIM"));
    const char *argv[] = {need("TENSOR_DEMO"), NULL};
    record(db, preload, argv);
    assert_int_equal(db_int(db, "SELECT count(*) FROM log_meta WHERE key = 'recorder' AND "
                                "value = 'libnrt-record.so'"), 1);
    /* trnemu's own recorder stood aside: every call once. */
    assert_int_equal(db_int(db, "SELECT count(*) FROM log_calls WHERE fn = 'nrt_init'"), 1);
    replay_identical(db);
}

static void test_snapshot_on_error(void **state)
{
    (void)state;
    const char *bug = tmp("bug.db");
    char var[600];
    snprintf(var, sizeof var, "TRNEMU_SNAPSHOT_ON_ERROR=%s", bug);
    const char *env[] = {var, NULL};
    const char *nan[] = {need("RECORD_PROG"), "nan", NULL};
    assert_int_equal(run(env, nan), 0);
    expect_output("trnemu replay");
    assert_int_equal(db_int(bug, "SELECT count(*) FROM snapshot WHERE reason = 'error'"), 1);
    assert_int_equal(db_int(bug, "SELECT count(*) FROM log_calls"), 1);
    replay_identical(bug);
    expect_output("from snapshot");
    /* A run without failures leaves no file behind. */
    const char *none = tmp("nobug.db");
    snprintf(var, sizeof var, "TRNEMU_SNAPSHOT_ON_ERROR=%s", none);
    const char *ok[] = {need("RECORD_PROG"), "ok", NULL};
    assert_int_equal(run(env, ok), 0);
    assert_int_equal(access(none, F_OK), -1);
}

static void test_snapshot_at_and_signal(void **state)
{
    (void)state;
    const char *db = tmp("signal.db");
    const char *argv[] = {need("RECORD_PROG"), "signal", NULL};
    record(db, "TRNEMU_SNAPSHOT_AT=2", argv);
    assert_int_equal(db_int(db, "SELECT count(*) FROM snapshot WHERE reason = 'signal'"), 2);
    assert_int_equal(db_int(db, "SELECT count(*) FROM snapshot WHERE reason = 'at'"), 1);
    /* each asked-for snapshot says where it went, at the ERROR log level */
    char said[600];
    snprintf(said, sizeof said, "(TRNEMU_SNAPSHOT_AT) before call");
    expect_output(said);
    snprintf(said, sizeof said, "written to %s (trnemu snapshot list %s)", db, db);
    expect_output(said);
    const char *p = outbuf;
    int sig = 0;
    for (; (p = strstr(p, "(SIGUSR1) before call")) != NULL; p++)
        sig++;
    assert_int_equal(sig, 2);
    replay_identical(db);
    char id[32];
    snprintf(id, sizeof id, "%lld",
             (long long)db_int(db, "SELECT id FROM snapshot WHERE reason = 'at'"));
    if (replay(db, "--from", id) != 0)
        fail_msg("replay --from %s:\n%s", id, outbuf);
    expect_output("from snapshot");
}

static void expect_bad(const char *db, const char *why)
{
    int rc = replay(db, NULL, NULL);
    if (rc != 2)
        fail_msg("%s: replay exited with %d, expected 2:\n%s", why, rc, outbuf);
}

static void test_bad_files(void **state)
{
    (void)state;
    expect_bad(tmp("missing.db"), "missing file");
    FILE *f = fopen(tmp("empty.db"), "w");
    fclose(f);
    expect_bad(tmp("empty.db"), "empty file");
    f = fopen(tmp("junk.db"), "w");
    for (int i = 0; i < 5000; i++)
        fputc((i * 7919) & 0xff, f);
    fclose(f);
    expect_bad(tmp("junk.db"), "junk");
    char good[512];
    snprintf(good, sizeof good, "%s", tmp("good.db"));
    const char *argv[] = {need("RECORD_PROG"), "misc", NULL};
    record(good, NULL, argv);
    static const char *const edits[] = {
        "UPDATE log_meta SET value = '99' WHERE key = 'format'",
        "UPDATE log_calls SET args = substr(args, 1, 3) WHERE seq = 3",
        "UPDATE log_calls SET args = args || x'00' WHERE seq = 3",
        "UPDATE log_calls SET args = zeroblob(40) WHERE fn = 'nrt_tensor_write_batch'",
        "UPDATE log_calls SET fn = 'nrt_does_not_exist' WHERE seq = 2",
        "UPDATE log_buffer_parts SET data = zeroblob(length(data))",
        "UPDATE log_buffer_parts SET data = substr(data, 1, 10)",
        "DELETE FROM log_call_buffers",
        "DROP TABLE log_calls",
        "DELETE FROM log_calls",
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "bad%zu.db", i);
        const char *bad = tmp(name);
        copy_file(good, bad);
        db_exec(bad, edits[i]);
        expect_bad(bad, edits[i]);
    }
    const char *noarg[] = {need("TRNEMU_TOOL"), "replay", NULL};
    assert_int_equal(run(NULL, noarg), 2);
}

/* A log that cannot be made is one log line; the program runs to its end
 * as if nothing was recorded. */
static void test_unwritable_log(void **state)
{
    (void)state;
    const char *argv[] = {need("TENSOR_DEMO"), NULL};
    const char *env[] = {"TRNEMU_RECORD=/nonexistent-dir/run.db", NULL};
    assert_int_equal(run(env, argv), 0);
    expect_output("not recording");
    expect_output("intact");
}

static int setup(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/trnemu-record-XXXXXX");
    return mkdtemp(tmpdir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_demo),
        cmocka_unit_test(test_kernels),
        cmocka_unit_test(test_failing_kernel),
        cmocka_unit_test(test_changed_input_diverges),
        cmocka_unit_test(test_misc_and_threads),
        cmocka_unit_test(test_record_shim),
        cmocka_unit_test(test_snapshot_on_error),
        cmocka_unit_test(test_snapshot_at_and_signal),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_unwritable_log),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
