/*
 * test_snapshot.c: snapshots through the public API: trnemu_snapshot_save
 * in a running program, TRNEMU_RESTORE at nrt_init (the same program,
 * restarted on the saved machine, finds its objects by their old handles
 * and executes again with the same results), a configuration that does
 * not match, a read-only file and a full disk (the program carries on).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "it_common.h"
#include "trnemu/trnemu.h"

#define SN_N (128 * 512)  /* elements of each add.neff tensor */

static char sn_dir[256];  /* temporary directory of this run */

static const char *sn_path(const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", sn_dir, name);
    return buf;
}

static void *sn_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc((size_t)n);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return p;
}

/* The add example loaded and bound, as a program would set it up. */
struct sn_prog {
    nrt_model_t *model;              /* add.neff */
    nrt_tensor_t *a, *b, *c;         /* its tensors */
    nrt_tensor_t *host;              /* a host tensor with a pattern */
    nrt_tensor_set_t *in, *out;      /* bound sets */
};

static void sn_inputs(float *a, float *b, float k)
{
    for (int i = 0; i < SN_N; i++) {
        a[i] = (float)i * 0.5f + k;
        b[i] = (float)(i % 97) - k;
    }
}

static void sn_setup(struct sn_prog *p)
{
    char path[512];
    snprintf(path, sizeof path, "%s/add.neff", getenv("TRNEMU_EXAMPLES_DIR"));
    size_t size;
    void *neff = sn_read_file(path, &size);
    assert_int_equal(nrt_load(neff, size, 0, 1, &p->model), NRT_SUCCESS);
    free(neff);
    p->a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, SN_N * 4, "a");
    p->b = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, SN_N * 4, "b");
    p->c = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, SN_N * 4, "c");
    p->host = it_tensor(NRT_TENSOR_PLACEMENT_HOST, -1, 4096, "host");
    uint8_t pat[4096];
    it_pattern(pat, sizeof pat, 7);
    assert_int_equal(nrt_tensor_write(p->host, pat, 0, sizeof pat), NRT_SUCCESS);
    static float a[SN_N], b[SN_N];
    sn_inputs(a, b, 1.0f);
    assert_int_equal(nrt_tensor_write(p->a, a, 0, sizeof a), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_write(p->b, b, 0, sizeof b), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&p->in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&p->out), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(p->in, "a", p->a), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(p->in, "b", p->b), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(p->out, "c", p->c), NRT_SUCCESS);
}

/* The objects of p as seen after a restore (by their old handles). */
static void sn_lookup(const struct sn_prog *old, struct sn_prog *p)
{
    p->model = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->model);
    p->a = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->a);
    p->b = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->b);
    p->c = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->c);
    p->host = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->host);
    p->in = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->in);
    p->out = trnemu_snapshot_lookup((uint64_t)(uintptr_t)old->out);
    assert_non_null(p->model);
    assert_non_null(p->a);
    assert_non_null(p->b);
    assert_non_null(p->c);
    assert_non_null(p->host);
    assert_non_null(p->in);
    assert_non_null(p->out);
}

static void test_restore_and_execute(void **state)
{
    (void)state;
    char db[512];
    sn_path("run.db", db, sizeof db);
    it_init("trn1.2xlarge", NULL, NULL, NULL);
    struct sn_prog p, q;
    sn_setup(&p);
    assert_int_equal(nrt_execute(p.model, p.in, p.out), NRT_SUCCESS);
    uint8_t *c1 = it_read_all(p.c);
    int64_t id = -1;
    assert_int_equal(trnemu_snapshot_save(db, "after the first add", &id), NRT_SUCCESS);
    assert_true(id >= 1);
    /* Later changes are not in the snapshot. */
    float zero[16] = {0};
    assert_int_equal(nrt_tensor_write(p.c, zero, 0, sizeof zero), NRT_SUCCESS);
    int64_t id2 = -1;
    assert_int_equal(trnemu_snapshot_save(db, NULL, &id2), NRT_SUCCESS);
    assert_int_equal(id2, id + 1);
    nrt_close();

    char spec[600];
    snprintf(spec, sizeof spec, "%s@%lld", db, (long long)id);
    setenv("TRNEMU_RESTORE", spec, 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    unsetenv("TRNEMU_RESTORE");
    sn_lookup(&p, &q);
    assert_null(trnemu_snapshot_lookup(12345));
    it_expect_bytes(q.c, c1, SN_N * 4);
    uint8_t pat[4096];
    it_pattern(pat, sizeof pat, 7);
    it_expect_bytes(q.host, pat, sizeof pat);
    /* The restored model runs on the restored sets: the same sum. */
    assert_int_equal(nrt_tensor_write(q.c, zero, 0, sizeof zero), NRT_SUCCESS);
    assert_int_equal(nrt_execute(q.model, q.in, q.out), NRT_SUCCESS);
    it_expect_bytes(q.c, c1, SN_N * 4);
    nrt_tensor_t *t;
    assert_int_equal(nrt_get_tensor_from_tensor_set(q.out, "c", &t), NRT_SUCCESS);
    assert_ptr_equal(t, q.c);
    /* A restore needs a fresh runtime. */
    assert_int_equal(trnemu_snapshot_restore(db, id), NRT_INVALID);
    nrt_close();

    /* The newest snapshot (no @ID) has the zeroed head of c. */
    setenv("TRNEMU_RESTORE", db, 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    unsetenv("TRNEMU_RESTORE");
    sn_lookup(&p, &q);
    float head[16];
    assert_int_equal(nrt_tensor_read(q.c, head, 0, sizeof head), NRT_SUCCESS);
    assert_memory_equal(head, zero, sizeof zero);
    nrt_close();
    free(c1);
}

static void test_restore_refused(void **state)
{
    (void)state;
    char db[512], spec[600];
    sn_path("refused.db", db, sizeof db);
    it_init("trn1.2xlarge", NULL, NULL, NULL);
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1000, "t");
    (void)t;
    assert_int_equal(trnemu_snapshot_save(db, "x", NULL), NRT_SUCCESS);
    nrt_close();
    /* Another machine: nrt_init fails, and the runtime is not left open. */
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.32xlarge", 1);
    setenv("TRNEMU_RESTORE", db, 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "x", &t), NRT_CLOSED);
    snprintf(spec, sizeof spec, "%s@99", db);
    setenv("TRNEMU_RESTORE", spec, 1);
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    setenv("TRNEMU_RESTORE", "/nonexistent/trnemu.db", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
    unsetenv("TRNEMU_RESTORE");
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(trnemu_snapshot_save(NULL, "x", NULL), NRT_INVALID);
    nrt_close();
    assert_int_equal(trnemu_snapshot_save(db, "closed", NULL), NRT_CLOSED);
}

/* In a child: make state, then try to save into path; the save must fail
 * and the program must carry on. Exit 0 when all that holds. */
static int sn_child_save_fails(const char *path, void (*before_save)(void))
{
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS)
        return 10;
    nrt_tensor_t *t;
    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 8u << 20, "big", &t) != NRT_SUCCESS)
        return 11;
    uint8_t *buf = malloc(8u << 20);
    it_pattern(buf, 8u << 20, 3);  /* incompressible */
    nrt_tensor_write(t, buf, 0, 8u << 20);
    if (before_save != NULL)
        before_save();
    NRT_STATUS st = trnemu_snapshot_save(path, "doomed", NULL);
    if (st == NRT_SUCCESS)
        return 12;
    /* The runtime still works. */
    uint8_t back[64];
    if (nrt_tensor_read(t, back, 0, sizeof back) != NRT_SUCCESS || memcmp(back, buf, 64) != 0)
        return 13;
    nrt_close();
    free(buf);
    return 0;
}

static int sn_wait(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Every earlier snapshot of the file is intact. */
static void sn_check_file(const char *path, int64_t want)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(s, 0), "ok");
    sqlite3_finalize(s);
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT count(*) FROM snapshot", -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(s, 0), want);
    sqlite3_finalize(s);
    sqlite3_close(db);
}

/* Files may not grow past 1 MiB from now on; writing further fails
 * (EFBIG, as on a full disk). */
static void sn_limit_files(void)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1u << 20, 1u << 20};
    setrlimit(RLIMIT_FSIZE, &rl);
}

static void test_disk_full(void **state)
{
    (void)state;
    char db[512];
    sn_path("full.db", db, sizeof db);
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(trnemu_snapshot_save(db, "small", NULL), NRT_SUCCESS);
    nrt_close();
    pid_t pid = fork();
    if (pid == 0)
        _exit(sn_child_save_fails(db, sn_limit_files));
    assert_int_equal(sn_wait(pid), 0);
    sn_check_file(db, 1);
}

/* A small tmpfs that fills up (needs the right to mount, in a private
 * mount namespace: skipped without it). */
static void test_tmpfs_full(void **state)
{
    (void)state;
    char dir[512], db[600];
    sn_path("tiny", dir, sizeof dir);
    mkdir(dir, 0700);
    snprintf(db, sizeof db, "%s/full.db", dir);
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    pid_t pid = fork();
    if (pid == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
            mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0)
            _exit(77);
        _exit(sn_child_save_fails(db, NULL));
    }
    int rc = sn_wait(pid);
    if (rc == 77)
        skip();
    assert_int_equal(rc, 0);
}

/* A read-only file: a read-only mount when we may mount (root ignores
 * file modes), else a file without write permission. */
static void test_read_only(void **state)
{
    (void)state;
    char dir[512], db[600];
    sn_path("ro", dir, sizeof dir);
    mkdir(dir, 0700);
    snprintf(db, sizeof db, "%s/ro.db", dir);
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(trnemu_snapshot_save(db, "first", NULL), NRT_SUCCESS);
    nrt_close();
    pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0) {
            if (unshare(CLONE_NEWNS) != 0 ||
                mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
                mount(dir, dir, NULL, MS_BIND, NULL) != 0 ||
                mount(NULL, dir, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) != 0)
                _exit(77);
        } else if (chmod(db, 0444) != 0) {
            _exit(14);
        }
        _exit(sn_child_save_fails(db, NULL));
    }
    int rc = sn_wait(pid);
    chmod(db, 0644);
    if (rc == 77)
        skip();
    assert_int_equal(rc, 0);
    sn_check_file(db, 1);
}

static int sn_setup_group(void **state)
{
    (void)state;
    snprintf(sn_dir, sizeof sn_dir, "%s/trnemu-it-snapshot-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    return mkdtemp(sn_dir) != NULL ? 0 : -1;
}

static int sn_teardown_group(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", sn_dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_restore_and_execute, it_teardown),
        cmocka_unit_test_teardown(test_restore_refused, it_teardown),
        cmocka_unit_test_teardown(test_disk_full, it_teardown),
        cmocka_unit_test_teardown(test_tmpfs_full, it_teardown),
        cmocka_unit_test_teardown(test_read_only, it_teardown),
    };
    return cmocka_run_group_tests(tests, sn_setup_group, sn_teardown_group);
}
