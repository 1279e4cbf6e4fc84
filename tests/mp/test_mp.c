/*
 * test_mp.c: multi-process tests of shared instances (docs/instance.md).
 * The processes under test are mp_rank (public API only); this driver
 * forks them with their environment, talks to them over pipes, and looks
 * at the instance from outside (`trnemu ls --stats`, the directory):
 *   - two processes on disjoint VNCs share one instance and one HBM;
 *   - a VNC owned by a live process is refused (NRT_RESOURCE), another
 *     profile or LNC too (NRT_INVALID), and the owner is not disturbed;
 *   - a SIGKILLed owner's VNCs are taken back, their HBM reads zero;
 *     a stale instance (every process dead) is made afresh, and stale
 *     instances beside the one being attached are swept;
 *   - the directory is gone once the last process closes;
 *   - a corrupt control file, a bad name or directory: a clean error.
 * usage: test_mp MP_RANK TRNEMU_TOOL
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "nrt/nrt_status.h"

static const char *rank_prog;   /* path of mp_rank */
static const char *tool_prog;   /* path of trnemu */
static char shm_base[256];      /* TRNEMU_SHM_DIR of every case */

/* A running mp_rank with pipes to its stdin and from its stdout. */
struct proc {
    pid_t pid;  /* the child */
    FILE *in;   /* its stdin */
    FILE *out;  /* its stdout */
};

/* Environment changes for one child: "NAME=value", or "NAME" to unset. */
static void apply_env(const char *const *env)
{
    for (; env != NULL && *env != NULL; env++) {
        const char *eq = strchr(*env, '=');
        if (eq == NULL) {
            unsetenv(*env);
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(eq - *env), *env);
        setenv(name, eq + 1, 1);
    }
}

static void spawn(struct proc *p, const char *const *env, const char *const *args, bool pipes)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipes) {
        assert_int_equal(pipe(in), 0);
        assert_int_equal(pipe(out), 0);
    }
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (pipes) {
            dup2(in[0], 0);
            dup2(out[1], 1);
            close(in[0]), close(in[1]), close(out[0]), close(out[1]);
        }
        apply_env(env);
        char *argv[8] = {(char *)rank_prog};
        for (int i = 0; args[i] != NULL && i < 6; i++)
            argv[i + 1] = (char *)args[i];
        execv(rank_prog, argv);
        _exit(127);
    }
    p->pid = pid;
    p->in = p->out = NULL;
    if (pipes) {
        close(in[0]);
        close(out[1]);
        p->in = fdopen(in[1], "w");
        p->out = fdopen(out[0], "r");
    }
}

static int wait_exit(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        assert_int_equal(errno, EINTR);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Run mp_rank to the end; its exit status. */
static int run(const char *const *env, const char *const *args)
{
    struct proc p;
    spawn(&p, env, args, false);
    return wait_exit(p.pid);
}

/* Run mp_rank expecting nrt_init to return want. */
static int run_expect(const char *const *env, NRT_STATUS want)
{
    char s[16];
    snprintf(s, sizeof s, "%d", (int)want);
    const char *args[] = {"expect", s, NULL};
    return run(env, args);
}

/* Start a holder on the visible cores; fills its first tensor's place. */
static void hold(struct proc *p, const char *visible, unsigned seed, int *idx,
                 unsigned long long *addr)
{
    char vis[64], sd[16], line[256];
    snprintf(vis, sizeof vis, "NEURON_RT_VISIBLE_CORES=%s", visible);
    snprintf(sd, sizeof sd, "%u", seed);
    const char *env[] = {vis, NULL};
    const char *args[] = {"hold", sd, NULL};
    spawn(p, env, args, true);
    assert_non_null(fgets(line, sizeof line, p->out));
    assert_int_equal(sscanf(line, "ready %d %llu", idx, addr), 2);
}

/* Send a command to a holder; true when it answers "ok". */
static bool ask(struct proc *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->in, fmt, ap);
    va_end(ap);
    fputc('\n', p->in);
    fflush(p->in);
    char line[64];
    return fgets(line, sizeof line, p->out) != NULL && strncmp(line, "ok", 2) == 0;
}

static void release(struct proc *p)
{
    fprintf(p->in, "close\n");
    fclose(p->in);
    fclose(p->out);
    assert_int_equal(wait_exit(p->pid), 0);
}

static void kill9(struct proc *p)
{
    kill(p->pid, SIGKILL);
    wait_exit(p->pid);
    fclose(p->in);
    fclose(p->out);
}

static void instance_dir(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/trnemu-%s", shm_base, name);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Remove a directory and its files (for cases that leave one on purpose). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* Is the base directory empty (nothing left by any case)? */
static bool base_empty(void)
{
    DIR *d = opendir(shm_base);
    assert_non_null(d);
    struct dirent *e;
    bool empty = true;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            fprintf(stderr, "left behind: %s/%s\n", shm_base, e->d_name);
            empty = false;
        }
    closedir(d);
    return empty;
}

/* The output of `trnemu ls ARGS` in this environment. */
static char *tool_output(const char *args, int *status)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s ls %s", tool_prog, args);
    fflush(NULL);
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    while (n + 1 < cap) {
        size_t r = fread(buf + n, 1, cap - 1 - n, f);
        if (r == 0)
            break;
        n += r;
    }
    buf[n] = '\0';
    int st = pclose(f);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

/* Does `ls --stats` list pid as the owner of exactly the VNCs "vncs"? */
static bool stats_owner(const char *out, pid_t pid, const char *vncs)
{
    for (const char *l = out; l != NULL && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        int p;
        if (sscanf(l, " pid %d", &p) != 1 || p != pid)
            continue;
        const char *owns = strstr(l, "VNCs: ");
        const char *eol = strchr(l, '\n');
        return owns != NULL && (eol == NULL || owns < eol) &&
               strncmp(owns + 6, vncs, strlen(vncs)) == 0 &&
               (owns[6 + strlen(vncs)] == '\n' || owns[6 + strlen(vncs)] == '\0');
    }
    return false;
}

/* Each case: its own instance name in the shared base directory. */
static int case_setup(void **state)
{
    static int n;
    char name[64];
    snprintf(name, sizeof name, "mp%d-%d", (int)getpid(), ++n);
    setenv("TRNEMU_INSTANCE_NAME", name, 1);
    setenv("TRNEMU_SHM_DIR", shm_base, 1);
    unsetenv("NEURON_RT_VISIBLE_CORES");
    unsetenv("NEURON_RT_NUM_CORES");
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    setenv("TRNEMU_INSTANCE", "trn2.48xlarge", 1);
    *state = NULL;
    return 0;
}

static int case_teardown(void **state)
{
    (void)state;
    return base_empty() ? 0 : -1;
}

/* (a) + (d): two processes, disjoint VNCs, one instance, one HBM. */
static void test_two_processes(void **state)
{
    (void)state;
    char dir[512];
    instance_dir(dir, sizeof dir, getenv("TRNEMU_INSTANCE_NAME"));
    struct proc a, b;
    int ia, ib;
    unsigned long long xa, xb;
    hold(&a, "0-1", 11, &ia, &xa);
    hold(&b, "2-3", 22, &ib, &xb);
    assert_true(exists(dir));
    int st;
    char *out = tool_output("--stats", &st);
    assert_int_equal(st, 0);
    assert_true(stats_owner(out, a.pid, "0-1"));
    assert_true(stats_owner(out, b.pid, "2-3"));
    free(out);
    /* Each sees the other's tensor bytes through its own HBM mapping
     * (trn2.48xlarge, LNC=2: VNCs 0-3 are on chip 0). */
    assert_true(ask(&b, "peek 0 %d %llu %u", ia, xa, 11));
    assert_true(ask(&a, "peek 0 %d %llu %u", ib, xb, 22));
    assert_false(ask(&a, "peek 0 %d %llu %u", ib, xb, 23));
    assert_true(ask(&a, "check"));
    assert_true(ask(&b, "check"));
    release(&a);
    assert_true(exists(dir));
    out = tool_output("--stats", &st);
    assert_false(stats_owner(out, a.pid, "0-1"));
    assert_true(stats_owner(out, b.pid, "2-3"));
    free(out);
    release(&b);
    assert_false(exists(dir));
    out = tool_output("--stats", &st);
    assert_int_equal(st, 0);
    assert_non_null(strstr(out, "no live instance"));
    free(out);
}

/* (b): a VNC owned by a live process; another profile or LNC. */
static void test_busy(void **state)
{
    (void)state;
    struct proc a;
    int ia;
    unsigned long long xa;
    hold(&a, "0-1", 5, &ia, &xa);
    const char *overlap[] = {"NEURON_RT_VISIBLE_CORES=1-2", NULL};
    assert_int_equal(run_expect(overlap, NRT_RESOURCE), 0);
    const char *all[] = {"NEURON_RT_VISIBLE_CORES", NULL};
    assert_int_equal(run_expect(all, NRT_RESOURCE), 0);
    const char *trn1[] = {"TRNEMU_INSTANCE=trn1.2xlarge", NULL};
    assert_int_equal(run_expect(trn1, NRT_INVALID), 0);
    const char *lnc1[] = {"NEURON_LOGICAL_NC_CONFIG=1", "NEURON_RT_VISIBLE_CORES=10", NULL};
    assert_int_equal(run_expect(lnc1, NRT_INVALID), 0);
    /* The refused processes took nothing: the owner is intact, the others free. */
    int st;
    char *out = tool_output("--stats", &st);
    assert_true(stats_owner(out, a.pid, "0-1"));
    assert_null(strstr(out, "owns 1 VNC"));
    free(out);
    assert_true(ask(&a, "check"));
    const char *free_cores[] = {"NEURON_RT_VISIBLE_CORES=2-63", NULL};
    assert_int_equal(run_expect(free_cores, NRT_SUCCESS), 0);
    release(&a);
    assert_int_equal(run_expect(overlap, NRT_SUCCESS), 0);
}

/* (c): a SIGKILLed owner's VNCs are taken back, their HBM punched out. */
static void test_killed_owner(void **state)
{
    (void)state;
    char dir[512];
    instance_dir(dir, sizeof dir, getenv("TRNEMU_INSTANCE_NAME"));
    struct proc a, b;
    int ia, ib;
    unsigned long long xa, xb;
    hold(&b, "4-5", 2, &ib, &xb);
    hold(&a, "0-1", 3, &ia, &xa);
    assert_true(ask(&b, "peek 0 %d %llu %u", ia, xa, 3));
    kill9(&a);
    char ci[16], ca[32];
    snprintf(ci, sizeof ci, "%d", ia);
    snprintf(ca, sizeof ca, "%llu", xa);
    const char *env[] = {"NEURON_RT_VISIBLE_CORES=0-1", NULL};
    const char *zero[] = {"zero", "0", ci, ca, NULL};
    assert_int_equal(run(env, zero), 0);
    assert_true(ask(&b, "check"));
    release(&b);
    assert_false(exists(dir));
    /* The only process killed: the instance is stale, and made afresh,
     * even for another profile. */
    hold(&a, "0", 4, &ia, &xa);
    kill9(&a);
    assert_true(exists(dir));
    const char *trn1[] = {"TRNEMU_INSTANCE=trn1.2xlarge", NULL};
    assert_int_equal(run_expect(trn1, NRT_SUCCESS), 0);
    assert_false(exists(dir));
}

/* Stale instances beside the one being attached are removed. */
static void test_sweep(void **state)
{
    (void)state;
    char stale[512], name[96];
    snprintf(name, sizeof name, "%s-stale", getenv("TRNEMU_INSTANCE_NAME"));
    instance_dir(stale, sizeof stale, name);
    char set[128];
    snprintf(set, sizeof set, "TRNEMU_INSTANCE_NAME=%s", name);
    struct proc a;
    char vis[] = "NEURON_RT_VISIBLE_CORES=3";
    const char *args[] = {"hold", "9", NULL};
    const char *env2[] = {set, vis, NULL};
    spawn(&a, env2, args, true);
    char line[128];
    assert_non_null(fgets(line, sizeof line, a.out));
    kill9(&a);
    assert_true(exists(stale));
    assert_int_equal(run_expect(NULL, NRT_SUCCESS), 0);
    assert_false(exists(stale));
}

/* Write bytes at off of a file. */
static void poke(const char *path, off_t off, const void *bytes, size_t n)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, n, off), (ssize_t)n);
    close(fd);
}

/* (e): a corrupt control file is a clean error and is left alone. */
static void test_corrupt_ctl(void **state)
{
    (void)state;
    char dir[512], ctl[600];
    instance_dir(dir, sizeof dir, getenv("TRNEMU_INSTANCE_NAME"));
    snprintf(ctl, sizeof ctl, "%s/ctl", dir);
    /* A leftover instance (its process killed), then damaged three ways. */
    const struct {
        off_t off;         /* where to write */
        const char *bytes; /* what */
        size_t n;          /* how many */
    } damage[] = {
        {0, "XXXXXXXX", 8},        /* magic */
        {8, "\x63\0\0\0", 4},      /* layout version */
        {16, "no-such-type\0", 13}, /* profile name */
    };
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        struct proc a;
        int ia;
        unsigned long long xa;
        hold(&a, "0", 1, &ia, &xa);
        kill9(&a);
        poke(ctl, damage[i].off, damage[i].bytes, damage[i].n);
        assert_int_equal(run_expect(NULL, NRT_INVALID), 0);
        assert_true(exists(ctl));
        int st;
        free(tool_output("--stats", &st));
        assert_int_equal(st, 1);
        remove_dir(dir);
    }
    /* Wrong size. */
    assert_int_equal(mkdir(dir, 0700), 0);
    int fd = open(ctl, O_WRONLY | O_CREAT, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "garbage", 7), 7);
    close(fd);
    assert_int_equal(run_expect(NULL, NRT_INVALID), 0);
    remove_dir(dir);
}

/* Bad names and directories: clean errors, nothing created. */
static void test_bad_env(void **state)
{
    (void)state;
    const char *slash[] = {"TRNEMU_INSTANCE_NAME=a/b", NULL};
    assert_int_equal(run_expect(slash, NRT_INVALID), 0);
    const char *dot[] = {"TRNEMU_INSTANCE_NAME=..", NULL};
    assert_int_equal(run_expect(dot, NRT_INVALID), 0);
    const char *nodir[] = {"TRNEMU_SHM_DIR=/nonexistent/trnemu-test", NULL};
    assert_int_equal(run_expect(nodir, NRT_RESOURCE), 0);
    /* A directory of that name open to others is not used. */
    char dir[512];
    instance_dir(dir, sizeof dir, getenv("TRNEMU_INSTANCE_NAME"));
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(run_expect(NULL, NRT_RESOURCE), 0);
    rmdir(dir);
}

/* issue 13: `trnemu ls` sweeps this user's dead instances too, saying so. */
static void test_sweep_ls(void **state)
{
    (void)state;
    char stale[512], name[96], set[128];
    snprintf(name, sizeof name, "%s-stale2", getenv("TRNEMU_INSTANCE_NAME"));
    instance_dir(stale, sizeof stale, name);
    snprintf(set, sizeof set, "TRNEMU_INSTANCE_NAME=%s", name);
    struct proc a;
    char vis[] = "NEURON_RT_VISIBLE_CORES=3";
    const char *args[] = {"hold", "9", NULL};
    const char *env[] = {set, vis, NULL};
    spawn(&a, env, args, true);
    char line[128];
    assert_non_null(fgets(line, sizeof line, a.out));
    kill9(&a);
    assert_true(exists(stale));
    int st;
    char *out = tool_output("--stats", &st);
    assert_non_null(strstr(out, "removed 1 stale instance"));
    free(out);
    assert_false(exists(stale));
}

/* issue 13: a live instance whose control file others can write is not
 * joined; nor is a world-writable TRNEMU_SHM_DIR without the sticky bit. */
static void test_open_ctl_and_dir(void **state)
{
    (void)state;
    char dir[512], ctl[600];
    instance_dir(dir, sizeof dir, getenv("TRNEMU_INSTANCE_NAME"));
    snprintf(ctl, sizeof ctl, "%s/ctl", dir);
    struct proc a;
    int ia;
    unsigned long long xa;
    hold(&a, "0", 1, &ia, &xa);
    assert_int_equal(chmod(ctl, 0644), 0);
    const char *vis1[] = {"NEURON_RT_VISIBLE_CORES=1", NULL};
    assert_int_equal(run_expect(vis1, NRT_INVALID), 0);
    assert_int_equal(chmod(ctl, 0600), 0);
    assert_int_equal(run_expect(vis1, NRT_SUCCESS), 0);
    release(&a);
    char open_dir[400], env_dir[450];
    snprintf(open_dir, sizeof open_dir, "%s/open", shm_base);
    assert_int_equal(mkdir(open_dir, 0700), 0);
    assert_int_equal(chmod(open_dir, 0777), 0);
    snprintf(env_dir, sizeof env_dir, "TRNEMU_SHM_DIR=%s", open_dir);
    const char *ww[] = {env_dir, NULL};
    assert_int_equal(run_expect(ww, NRT_INVALID), 0);
    assert_int_equal(chmod(open_dir, 01777), 0);  /* sticky: as /dev/shm */
    assert_int_equal(run_expect(ww, NRT_SUCCESS), 0);
    char made[600];
    snprintf(made, sizeof made, "%s/trnemu-%s", open_dir, getenv("TRNEMU_INSTANCE_NAME"));
    remove_dir(made);
    rmdir(open_dir);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_mp MP_RANK TRNEMU_TOOL\n");
        return 2;
    }
    rank_prog = argv[1];
    tool_prog = argv[2];
    const char *top = getenv("TRNEMU_TEST_SHM") ? getenv("TRNEMU_TEST_SHM") : "/dev/shm";
    snprintf(shm_base, sizeof shm_base, "%s/mp-test-XXXXXX", top);
    if (mkdtemp(shm_base) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    alarm(300);  /* a hang is a failure, never a stuck test run */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_two_processes, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_busy, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_killed_owner, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_sweep, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_ctl, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_bad_env, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_sweep_ls, case_setup, case_teardown),
        cmocka_unit_test_setup_teardown(test_open_ctl_and_dir, case_setup, case_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    DIR *d = opendir(shm_base);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", shm_base, e->d_name);
            remove_dir(path);
        }
    if (d != NULL)
        closedir(d);
    rmdir(shm_base);
    return rc;
}
