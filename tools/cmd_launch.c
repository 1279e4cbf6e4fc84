/*
 * cmd_launch.c: `trnemu launch -n N [options] -- PROG ARGS...`: start N
 * ranks of a distributed program on one emulated instance, the way
 * torchrun or mpirun start one process per rank on a real machine.
 *
 * Rank i runs PROG with RANK=i, LOCAL_RANK=i, WORLD_SIZE=N,
 * NEURON_RT_VISIBLE_CORES=C+i*K..C+i*K+K-1 (C = --first-core, K =
 * --cores-per-rank) and, unless the caller set one, the instance name
 * TRNEMU_INSTANCE_NAME=launch-<launcher pid>, so all ranks attach to one
 * emulated machine that no other job shares. stdin, stdout and stderr are
 * inherited unchanged.
 *
 * The launcher waits for every rank, even after one has failed (the others
 * are expected to notice a dead peer and fail on their own), prints one
 * line per failed rank, and exits 0 only if every rank exited 0. With
 * --timeout it kills every rank still running (SIGKILL) when the time is
 * up and exits 124. SIGINT and SIGTERM sent to the launcher are passed on
 * to the ranks (a Ctrl-C from the terminal already reaches the whole
 * process group and is not sent twice).
 *
 * Signals are blocked and taken synchronously with sigtimedwait(), so the
 * launcher has no signal handlers and no races between reaping and waiting.
 *
 * Nodes (docs/nodes.md): `--nodes N -n M` starts N emulated nodes of M
 * ranks each on this host, each node its own instance
 * (TRNEMU_INSTANCE_NAME=<name>-n<k>), joined over libfabric: rank
 * RANK=k*M+i has LOCAL_RANK=i, WORLD_SIZE=N*M, LOCAL_WORLD_SIZE=M,
 * TRNEMU_NODES=N, TRNEMU_NODE=k and GROUP_RANK=k, and the cores of local
 * rank i. NEURON_RT_ROOT_COMM_ID (default 127.0.0.1 and a free port) and
 * TRNEMU_JOB_TOKEN (default: 32 random hex digits) are the same for all.
 * `--node K` starts only node K's ranks: one command per host, with the
 * bootstrap address and the token given by the caller.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/tool.h"

#define LAUNCH_MAX_RANKS 4096      /* more ranks than any emulated instance has VNCs */
#define LAUNCH_EXIT_TIMEOUT 124    /* as timeout(1) */

struct launch_opts {
    uint32_t nranks;       /* -n: number of ranks */
    uint32_t cores_per_rank; /* --cores-per-rank: VNCs per rank */
    uint32_t first_core;   /* --first-core: first VNC of rank 0 */
    double timeout_s;      /* --timeout: seconds, 0 = none */
    bool keep_going;       /* --keep-going: report every failure alike, exit 1 */
    uint32_t nodes;        /* --nodes: emulated nodes in the job (1: a plain launch) */
    int32_t node;          /* --node: the only node started here, -1: all of them */
    char **argv;           /* PROG ARGS..., NULL-terminated */
};

struct launch_rank {
    pid_t pid;             /* process id, 0 before start */
    bool done;             /* reaped */
    int status;            /* waitpid status once done */
};

struct launch_job {
    struct launch_opts opts;     /* what was asked */
    struct launch_rank *ranks;   /* one per rank */
    uint32_t running;            /* ranks started and not yet reaped */
    int first_failed;            /* rank that failed first, -1 if none */
    char instance[64];           /* instance name this launcher made, "" if inherited */
    uint32_t first_node;         /* node of local rank 0 */
    uint32_t local_nodes;        /* nodes started here */
    uint32_t total;              /* ranks started here (local_nodes * nranks) */
    sigset_t old_mask;           /* signal mask to restore in the ranks */
};

/* ---- options ---------------------------------------------------------- */

static int launch_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || *s == '-' || v < min || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int launch_parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v > 0.0) || v > 1e7)
        return -1;
    *out = v;
    return 0;
}

/* The value of option `name` at argv[*i] ("-n 4", "-n4", "--timeout=5",
 * "--timeout 5"), advancing *i past it; NULL if argv[*i] is another
 * option. *missing is set when the option is last and has no value. */
static const char *launch_opt_value(int argc, char **argv, int *i, const char *name,
                                    bool *missing)
{
    size_t len = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, len) != 0)
        return NULL;
    if (a[len] == '=' && name[1] == '-')
        return a + len + 1;
    if (a[len] != '\0')
        return name[1] == '-' ? NULL : a + len;     /* "-n4" */
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

/* Apply one option that takes a value; 0, or the usage error status. */
static int launch_opt_apply(struct launch_opts *o, const char *name, const char *v)
{
    uint32_t k;
    if (strcmp(name, "--nodes") == 0) {
        if (launch_parse_u32(v, 1, 256, &o->nodes) != 0)
            return tool_usage_error("launch", "--nodes needs a node count from 1 to 256");
    } else if (strcmp(name, "--node") == 0) {
        if (launch_parse_u32(v, 0, 255, &k) != 0)
            return tool_usage_error("launch", "--node needs a node index from 0 to 255");
        o->node = (int32_t)k;
    } else if (strcmp(name, "-n") == 0 || strcmp(name, "--nranks") == 0) {
        if (launch_parse_u32(v, 1, LAUNCH_MAX_RANKS, &o->nranks) != 0)
            return tool_usage_error("launch", "-n needs a rank count from 1 to 4096");
    } else if (strcmp(name, "--cores-per-rank") == 0) {
        if (launch_parse_u32(v, 1, 1024, &o->cores_per_rank) != 0)
            return tool_usage_error("launch", "--cores-per-rank needs a count from 1 to 1024");
    } else if (strcmp(name, "--first-core") == 0) {
        if (launch_parse_u32(v, 0, 1u << 20, &o->first_core) != 0)
            return tool_usage_error("launch", "--first-core needs a core number");
    } else if (launch_parse_seconds(v, &o->timeout_s) != 0) {
        return tool_usage_error("launch", "--timeout needs a positive number of seconds");
    }
    return 0;
}

static int launch_parse(int argc, char **argv, struct launch_opts *o)
{
    static const char *const valued[] = {"-n", "--nranks", "--cores-per-rank", "--first-core",
                                         "--timeout", "--nodes", "--node"};
    *o = (struct launch_opts){.cores_per_rank = 1, .nodes = 1, .node = -1};
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-')
            break;                       /* PROG without a "--" before it */
        if (tool_is_help(a))
            return -1;                   /* the caller prints the usage */
        if (strcmp(a, "--keep-going") == 0) {
            o->keep_going = true;
            continue;
        }
        bool known = false, missing = false;
        for (size_t k = 0; k < sizeof valued / sizeof valued[0] && !known && !missing; k++) {
            const char *v = launch_opt_value(argc, argv, &i, valued[k], &missing);
            if (v == NULL)
                continue;
            known = true;
            int rc = launch_opt_apply(o, valued[k], v);
            if (rc != 0)
                return rc;
        }
        if (missing) {
            fprintf(stderr, "trnemu launch: option %s needs a value (see 'trnemu launch --help')\n", a);
            return 2;
        }
        if (!known) {
            fprintf(stderr, "trnemu launch: unknown option '%s' (see 'trnemu launch --help')\n", a);
            return 2;
        }
    }
    if (o->nranks == 0)
        return tool_usage_error("launch", "missing -n N (the number of ranks)");
    if (i >= argc)
        return tool_usage_error("launch", "missing the program to run after '--'");
    if (o->node >= (int32_t)o->nodes)
        return tool_usage_error("launch", "--node must be below --nodes");
    if ((uint64_t)o->nodes * o->nranks > LAUNCH_MAX_RANKS)
        return tool_usage_error("launch", "--nodes times -n must be at most 4096");
    o->argv = &argv[i];
    return 0;
}

/* ---- ranks ------------------------------------------------------------ */

static int launch_setenv_u32(const char *var, uint32_t v)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%u", v);
    return setenv(var, buf, 1);
}

/* The instance name of node k started here ("" when inherited unchanged). */
static void launch_node_instance(const struct launch_job *job, uint32_t node, char *buf,
                                 size_t cap)
{
    const char *base = job->instance[0] ? job->instance : getenv("TRNEMU_INSTANCE_NAME");
    if (job->local_nodes > 1)
        snprintf(buf, cap, "%s-n%u", base, node);
    else
        snprintf(buf, cap, "%s", job->instance);
}

/* Say which instance each node started here runs on, so that the tools
 * can be pointed at it while the job runs (it is removed at the end). */
static void launch_announce(const struct launch_job *job)
{
    for (uint32_t k = 0; k < job->local_nodes; k++) {
        char inst[128];
        launch_node_instance(job, job->first_node + k, inst, sizeof inst);
        if (inst[0] == '\0') {
            const char *env = getenv("TRNEMU_INSTANCE_NAME");
            snprintf(inst, sizeof inst, "%s", env != NULL ? env : "");
        }
        fprintf(stderr, "trnemu launch: instance %s (watch it with 'trnemu top --instance %s' "
                        "or 'trnemu ls --stats --instance %s' while the job runs)\n",
                inst, inst, inst);
    }
}

/* In the child: the variables of the rank's node. */
static int launch_node_env(const struct launch_job *job, uint32_t node)
{
    char inst[128];
    launch_node_instance(job, node, inst, sizeof inst);
    if (inst[0] != '\0' && setenv("TRNEMU_INSTANCE_NAME", inst, 1) != 0)
        return -1;
    if (job->opts.nodes == 1 && job->opts.node < 0)
        return 0;
    return launch_setenv_u32("TRNEMU_NODES", job->opts.nodes) |
           launch_setenv_u32("TRNEMU_NODE", node) | launch_setenv_u32("GROUP_RANK", node) |
           launch_setenv_u32("LOCAL_WORLD_SIZE", job->opts.nranks);
}

/* In the child: the rank's environment, then PROG. Never returns. */
static void launch_rank_exec(const struct launch_job *job, uint32_t rank, pid_t launcher)
{
    /* Die with the launcher, whatever kills it (a test harness's SIGKILL). */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != launcher)
        _exit(127);
    const struct launch_opts *o = &job->opts;
    uint32_t node = job->first_node + rank / o->nranks, local = rank % o->nranks;
    if (launch_node_env(job, node) != 0) {
        fprintf(stderr, "trnemu launch: rank %u: cannot set its node's environment\n", rank);
        _exit(127);
    }
    rank = node * o->nranks + local;
    uint32_t first = o->first_core + local * o->cores_per_rank;
    char cores[32];
    if (o->cores_per_rank == 1)
        snprintf(cores, sizeof cores, "%u", first);
    else
        snprintf(cores, sizeof cores, "%u-%u", first, first + o->cores_per_rank - 1);
    if (setenv("NEURON_RT_VISIBLE_CORES", cores, 1) != 0 ||
        launch_setenv_u32("RANK", rank) != 0 || launch_setenv_u32("LOCAL_RANK", local) != 0 ||
        launch_setenv_u32("WORLD_SIZE", o->nranks * o->nodes) != 0) {
        fprintf(stderr, "trnemu launch: rank %u: cannot set its environment\n", rank);
        _exit(127);
    }
    sigprocmask(SIG_SETMASK, &job->old_mask, NULL);
    execvp(o->argv[0], o->argv);
    fprintf(stderr, "trnemu launch: rank %u: cannot run '%s': %s\n", rank, o->argv[0],
            strerror(errno));
    _exit(127);
}

static int launch_start(struct launch_job *job)
{
    pid_t self = getpid();
    fflush(NULL);
    for (uint32_t r = 0; r < job->total; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            fprintf(stderr, "trnemu launch: cannot start rank %u: %s\n", r, strerror(errno));
            return -1;
        }
        if (pid == 0)
            launch_rank_exec(job, r, self);
        job->ranks[r].pid = pid;
        job->running++;
    }
    return 0;
}

static void launch_signal_all(struct launch_job *job, int sig)
{
    for (uint32_t r = 0; r < job->total; r++)
        if (job->ranks[r].pid > 0 && !job->ranks[r].done)
            kill(job->ranks[r].pid, sig);
}

static bool launch_failed(int status)
{
    return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

static void launch_describe(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status))
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, cap, "was killed by signal %d (%s)%s", WTERMSIG(status),
                 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
    else
        snprintf(buf, cap, "ended with wait status 0x%x", (unsigned)status);
}

static int launch_find_rank(const struct launch_job *job, pid_t pid)
{
    for (uint32_t r = 0; r < job->total; r++)
        if (job->ranks[r].pid == pid)
            return (int)r;
    return -1;
}

/* Record one ended rank; the first failure is announced at once (unless
 * --keep-going) so a user watching a hang knows which rank went first. */
static void launch_record(struct launch_job *job, int rank, int status)
{
    struct launch_rank *rk = &job->ranks[rank];
    rk->done = true;
    rk->status = status;
    job->running--;
    if (!launch_failed(status) || job->first_failed >= 0)
        return;
    job->first_failed = rank;
    if (!job->opts.keep_going && job->running > 0) {
        char what[128];
        launch_describe(status, what, sizeof what);
        fprintf(stderr, "trnemu launch: rank %d (pid %d) %s; waiting for the other %u rank%s\n",
                rank, (int)rk->pid, what, job->running, job->running == 1 ? "" : "s");
    }
}

/* Reap every rank that has ended, without blocking. */
static void launch_reap(struct launch_job *job)
{
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0)
            return;
        int rank = launch_find_rank(job, pid);
        if (rank >= 0 && !job->ranks[rank].done)
            launch_record(job, rank, status);
    }
}

static double launch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Kill every rank still running and reap them all. */
static void launch_kill_all(struct launch_job *job)
{
    launch_signal_all(job, SIGKILL);
    for (uint32_t r = 0; r < job->total; r++) {
        struct launch_rank *rk = &job->ranks[r];
        if (rk->pid <= 0 || rk->done)
            continue;
        int status;
        while (waitpid(rk->pid, &status, 0) < 0 && errno == EINTR)
            ;
        rk->done = true;
        rk->status = status;
        job->running--;
    }
}

/* Wait until every rank has ended (0) or the timeout has passed (-1),
 * passing SIGINT/SIGTERM on to the ranks. */
static int launch_wait(struct launch_job *job, const sigset_t *set)
{
    double deadline = job->opts.timeout_s > 0 ? launch_now() + job->opts.timeout_s : 0;
    for (;;) {
        launch_reap(job);
        if (job->running == 0)
            return 0;
        struct timespec ts, *tsp = NULL;
        if (deadline > 0) {
            double left = deadline - launch_now();
            if (left <= 0)
                return -1;
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        siginfo_t info;
        int sig = sigtimedwait(set, &info, tsp);
        if (sig == SIGINT || sig == SIGTERM) {
            /* A terminal's signal (SI_KERNEL) already reached the ranks,
             * which share our process group; pass on only sent ones. */
            if (info.si_code != SI_KERNEL)
                launch_signal_all(job, sig);
        }
    }
}

/* ---- reporting and clean-up ------------------------------------------ */

/* Exit status of the launcher: 0 if every rank succeeded; otherwise that
 * of the first rank to fail (its exit status, or 128 + its signal), or 1
 * with --keep-going. */
static int launch_report(const struct launch_job *job)
{
    uint32_t failed = 0;
    for (uint32_t r = 0; r < job->total; r++) {
        const struct launch_rank *rk = &job->ranks[r];
        if (!launch_failed(rk->status))
            continue;
        char what[128];
        launch_describe(rk->status, what, sizeof what);
        fprintf(stderr, "trnemu launch: rank %u (pid %d) %s%s\n", r, (int)rk->pid, what,
                (int)r == job->first_failed && !job->opts.keep_going ? " (first failure)" : "");
        failed++;
    }
    if (failed == 0)
        return 0;
    fprintf(stderr, "trnemu launch: %u of %u rank%s failed\n", failed, job->total,
            job->total == 1 ? "" : "s");
    if (job->opts.keep_going)
        return 1;
    int st = job->ranks[job->first_failed].status;
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
}

/* One line naming the ranks a timeout is about to kill. */
static void launch_report_timeout(const struct launch_job *job)
{
    fprintf(stderr, "trnemu launch: timeout after %g s; killing rank%s", job->opts.timeout_s,
            job->running == 1 ? "" : "s");
    const char *sep = " ";
    for (uint32_t r = 0; r < job->total; r++) {
        if (job->ranks[r].pid > 0 && !job->ranks[r].done) {
            fprintf(stderr, "%s%u", sep, r);
            sep = ", ";
        }
    }
    fprintf(stderr, "\n");
}

/* Once every rank has ended, remove what is left of the instance this
 * launcher named (a rank killed by the timeout cannot clean up after
 * itself): the regular files of <TRNEMU_SHM_DIR>/trnemu-<name>/ and the
 * directory. Nothing else can be attached, since the name is ours. */
static void launch_remove_one(const char *name)
{
    const char *base = getenv("TRNEMU_SHM_DIR");
    if (base == NULL || *base == '\0')
        base = "/dev/shm";
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s/trnemu-%s", base, name) >= (int)sizeof dir)
        return;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        return;
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dfd, e->d_name, 0);
    closedir(d);
    rmdir(dir);
}

static void launch_remove_instance(const struct launch_job *job)
{
    if (job->instance[0] == '\0')
        return;
    for (uint32_t k = 0; k < job->local_nodes; k++) {
        char inst[128];
        launch_node_instance(job, job->first_node + k, inst, sizeof inst);
        launch_remove_one(inst);
    }
}

/* Multi-node defaults: a free port on loopback and a random job token. */
static int launch_job_defaults(const struct launch_opts *o)
{
    if (o->nodes == 1 && o->node < 0)
        return 0;
    const char *id = getenv("NEURON_RT_ROOT_COMM_ID");
    const char *tok = getenv("TRNEMU_JOB_TOKEN");
    if (o->node >= 0 && (id == NULL || !*id || tok == NULL || !*tok)) {
        fprintf(stderr, "trnemu launch: --node needs NEURON_RT_ROOT_COMM_ID=host:port and "
                        "TRNEMU_JOB_TOKEN, the same on every host (docs/nodes.md)\n");
        return -1;
    }
    if (id == NULL || !*id) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof sa;
        char buf[32];
        if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &sl) != 0)
            return -1;
        close(fd);
        snprintf(buf, sizeof buf, "127.0.0.1:%u", (unsigned)ntohs(sa.sin_port));
        setenv("NEURON_RT_ROOT_COMM_ID", buf, 1);
    }
    if (tok == NULL || !*tok) {
        unsigned char raw[16];
        char hex[33];
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read(fd, raw, sizeof raw) != (ssize_t)sizeof raw)
            return -1;
        close(fd);
        for (int i = 0; i < 16; i++)
            snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        setenv("TRNEMU_JOB_TOKEN", hex, 1);
    }
    return 0;
}

int cmd_launch(int argc, char **argv)
{
    struct launch_job job = {.first_failed = -1};
    int rc = launch_parse(argc, argv, &job.opts);
    if (rc < 0)
        return tool_usage("launch", stdout);
    if (rc != 0)
        return rc;
    const char *name = getenv("TRNEMU_INSTANCE_NAME");
    if (name == NULL || *name == '\0')
        snprintf(job.instance, sizeof job.instance, "launch-%d", (int)getpid());
    job.local_nodes = job.opts.node < 0 ? job.opts.nodes : 1;
    job.first_node = job.opts.node < 0 ? 0 : (uint32_t)job.opts.node;
    job.total = job.local_nodes * job.opts.nranks;
    if (launch_job_defaults(&job.opts) != 0)
        return 1;
    job.ranks = calloc(job.total, sizeof *job.ranks);
    if (job.ranks == NULL) {
        fprintf(stderr, "trnemu launch: out of memory\n");
        return 1;
    }
    signal(SIGCHLD, SIG_DFL);            /* an inherited SIG_IGN would reap the ranks for us */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, &job.old_mask);

    launch_announce(&job);
    int status;
    if (launch_start(&job) != 0) {
        launch_kill_all(&job);
        status = 1;
    } else if (launch_wait(&job, &set) != 0) {
        launch_report_timeout(&job);
        launch_kill_all(&job);
        status = LAUNCH_EXIT_TIMEOUT;
    } else {
        status = launch_report(&job);
    }
    launch_remove_instance(&job);
    sigprocmask(SIG_SETMASK, &job.old_mask, NULL);
    free(job.ranks);
    return status;
}
