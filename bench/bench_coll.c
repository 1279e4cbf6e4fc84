/*
 * bench_coll.c: collectives across processes on one emulated
 * trn2.48xlarge (docs/collectives.md has the figures).
 *
 *   bench-coll            all-reduce bus bandwidth for 1, 64 and 512 MiB
 *                         over 2, 16 and 64 ranks, as a ratio of this
 *                         machine's memcpy bandwidth measured in the same
 *                         run; the latency of a small all-reduce on 2 ranks
 *   bench-coll latency    only the small all-reduce latency (median and mean)
 *   bench-coll scale [MIB]
 *                         all-reduce, reduce-scatter and all-gather of MIB
 *                         (default 64) per rank on 2, 4, 8 and 16 ranks,
 *                         those the host has cores for, each through
 *                         nrta_cc_prepare (a replica group: the channel
 *                         algorithms) and as a one-instruction kernel of
 *                         the whole communicator (the direct algorithms),
 *                         each as a ratio of its memory-traffic bound, with
 *                         N cores at one core's memcpy and with the memcpy
 *                         N threads reach together (measured in the run)
 *   bench-coll one N MIB [RUNS]
 *                         one bandwidth case (N ranks, MIB per rank) RUNS
 *                         times (default 3): each run, then the best and spread
 *   bench-coll sweep      mesh against chain all-reduce, 2 and 16 ranks,
 *                         256 B .. 1 MiB (how TRNEMU_COLL_MESH_MAX was chosen)
 *   bench-coll nodes      2 ranks as 2 emulated nodes joined over libfabric's
 *                         tcp provider on loopback (docs/nodes.md): all-reduce
 *                         bus bandwidth as a ratio of a plain libfabric
 *                         transfer of the same bytes in the same run, and the
 *                         small all-reduce latency across the nodes
 *
 * The driver forks one process per rank (before it ever calls the runtime),
 * each with its own VNC and the same instance; ranks time their loop with
 * the wall clock between two barriers and write the time to a pipe.
 * Bus bandwidth is the usual figure: S * 2 (N-1) / N / time for an
 * all-reduce of S bytes per rank, S (N-1) / N / time for a reduce-scatter
 * of S bytes (input) or an all-gather to S bytes (output). Next to it the
 * memory-traffic bound, as a ratio of memcpy: every rank's input read once
 * and every output written once, each at memcpy speed, on min(N, CPUs)
 * cores. An all-reduce moves 2 N S bytes so, time >= 2 N S / (min(N, CPUs)
 * memcpy), and the ratio is at most (N-1) min(N, CPUs) / N^2 (0.117 for
 * 16 ranks on 2 CPUs); a reduce-scatter or all-gather moves (N+1) S (N
 * inputs of S and N outputs of S / N, or the reverse): at most (N-1)
 * min(N, CPUs) / (N (N+1)). "x bound" is the figure over that. On a host busy with other work
 * the wall clock counts their slices too; "from CPU time" is the same
 * figure with the time taken as the CPU seconds of all ranks' processes
 * spread over min(N, CPUs) cores (what the ranks would take with the
 * cores to themselves). The all-reduce
 * runs in place (one tensor per rank) so that big cases fit in memory; a
 * case that needs more than TRNEMU_BENCH_MEM_GIB (default 6) GiB of tensors
 * is reported as skipped.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "fabric_base.h"
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "trnemu/trnemu_build.h"

#define MIB (1024.0 * 1024.0)

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What a case runs. */
enum bench_kind {
    BK_ALL_REDUCE = 0,
    BK_REDUCE_SCATTER = 1,
    BK_ALL_GATHER = 2,
};

/* One case: `iters` f32 collectives of `bytes` (the full tensor: the
 * all-reduce's data, the reduce-scatter's input, the all-gather's output)
 * over `n` ranks. */
struct bench_case {
    uint32_t n;         /* ranks */
    uint64_t bytes;     /* per rank */
    int iters;          /* timed repetitions (0: pick from a first timing) */
    const char *mesh;   /* TRNEMU_COLL_MESH_MAX for the ranks, NULL: default */
    bool nodes;         /* each rank its own node (docs/nodes.md) */
    enum bench_kind kind; /* the operation */
    bool neff;          /* in a kernel of the whole communicator, not nrta_cc_prepare */
};

static const char *const bench_kind_name[] = {"all-reduce", "reduce-scatter", "all-gather"};

static double bench_spin_s;  /* BENCH_COLL_SPIN_US: polls of a request before sleeping */

/* Wait for a queued request (nrt_async.h) as an application would: poll
 * it for up to bench_spin_s, then sleep on its completion descriptor, so
 * that a rank's waiting thread does not take a CPU from the queue's
 * worker that runs the collective. */
static NRT_STATUS wait_done(nrta_seq_t seq)
{
    bool done = false;
    double until = wall_s() + bench_spin_s;
    NRT_STATUS st;
    while ((st = nrta_is_completed(seq, &done)) == NRT_SUCCESS && !done && wall_s() < until)
        ;
    if (st != NRT_SUCCESS || done)
        return st;
    int fd;
    st = nrta_get_completion_handle(seq, &fd);
    if (st != NRT_SUCCESS)
        return st;
    struct pollfd p = {fd, POLLIN, 0};
    while (poll(&p, 1, -1) < 0 && errno == EINTR)
        ;
    close(fd);
    return nrta_is_completed(seq, &done) == NRT_SUCCESS && done ? NRT_SUCCESS : NRT_FAILURE;
}

/* Bytes of one rank's input and output for a case. */
static uint64_t case_in_bytes(const struct bench_case *bc)
{
    return bc->kind == BK_ALL_GATHER ? bc->bytes / bc->n : bc->bytes;
}

static uint64_t case_out_bytes(const struct bench_case *bc)
{
    return bc->kind == BK_REDUCE_SCATTER ? bc->bytes / bc->n : bc->bytes;
}

/* One rank's buffers for its case, and its kernel for an in-NEFF one. */
struct bench_rank {
    const struct bench_case *bc;
    uint32_t rank;
    uint32_t group[64];          /* 0..n-1, for nrta_cc_prepare */
    nrt_tensor_t *in, *out;      /* out == in: the all-reduce in place */
    nrt_model_t *model;          /* in-NEFF: the one-instruction kernel */
    nrt_tensor_set_t *ins, *outs; /* and its tensor sets */
};

/* One operation through nrta_cc_prepare + nrta_cc_schedule. */
static NRT_STATUS rank_cc(struct bench_rank *br)
{
    static const nrt_cc_op_type_t cc[] = {NRT_CC_ALLREDUCE, NRT_CC_REDUCESCATTER,
                                          NRT_CC_ALLGATHER};
    uint32_t n = br->bc->n;
    nrt_cc_comm_t comm = {br->group, br->rank, n, br->rank, n, 0};
    nrt_tensor_list_t li = {&br->in, 1}, lo = {&br->out, 1};
    nrt_cc_context_t *ctx;
    NRT_STATUS st = nrta_cc_prepare(&comm, &li, &lo, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                    cc[br->bc->kind], &ctx);
    nrta_seq_t seq = 0;
    if (st == NRT_SUCCESS)
        st = nrta_cc_schedule(&ctx, 0, NULL, &seq);
    return st == NRT_SUCCESS ? wait_done(seq) : st;
}

/* One operation of the case. */
static NRT_STATUS rank_op(struct bench_rank *br)
{
    return br->bc->neff ? nrt_execute(br->model, br->ins, br->outs) : rank_cc(br);
}

/* A kernel of one f32 collective of the whole communicator, x to y. */
static NRT_STATUS case_kernel(const struct bench_case *bc, void **neff, size_t *size)
{
    static const char *const insn[] = {"all_reduce", "reduce_scatter", "all_gather"};
    uint32_t ci = (uint32_t)(case_in_bytes(bc) / 4), co = (uint32_t)(case_out_bytes(bc) / 4);
    trnemu_kernel_t *k;
    NRT_STATUS st = trnemu_kernel_create("bench_coll", &k);
    if (st != NRT_SUCCESS)
        return st;
    if ((st = trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, &ci, 1)) == NRT_SUCCESS &&
        (st = trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, &co, 1)) == NRT_SUCCESS)
        st = trnemu_kernel_appendf(k, "sp.%s dst=hbm:y[[%u,1], 0, [1,%u]]:f32 src=hbm:x[[%u,1], "
                                   "0, [1,%u]]:f32%s", insn[bc->kind], co, co, ci, ci,
                                   bc->kind == BK_ALL_GATHER ? "" : " op=add");
    if (st == NRT_SUCCESS)
        st = trnemu_kernel_write(k, neff, size);
    if (st != NRT_SUCCESS)
        fprintf(stderr, "bench-coll: kernel: %s\n", trnemu_kernel_error(k));
    trnemu_kernel_free(k);
    return st;
}

/* Load the case's kernel and bind br's tensors to it. */
static NRT_STATUS rank_load(struct bench_rank *br)
{
    void *neff;
    size_t size;
    NRT_STATUS st = case_kernel(br->bc, &neff, &size);
    if (st != NRT_SUCCESS)
        return st;
    st = nrt_load_collectives(neff, size, 0, -1, br->rank, br->bc->n, &br->model);
    trnemu_kernel_buffer_free(neff);
    if (st == NRT_SUCCESS)
        st = nrt_allocate_tensor_set(&br->ins);
    if (st == NRT_SUCCESS)
        st = nrt_allocate_tensor_set(&br->outs);
    if (st == NRT_SUCCESS)
        st = nrt_add_tensor_to_tensor_set(br->ins, "x", br->in);
    if (st == NRT_SUCCESS)
        st = nrt_add_tensor_to_tensor_set(br->outs, "y", br->out);
    return st;
}

/* A zeroed device tensor of bytes. */
static nrt_tensor_t *zero_tensor(uint64_t bytes)
{
    nrt_tensor_t *t = NULL;
    if (nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, bytes, "x", &t) != NRT_SUCCESS)
        return NULL;
    nrt_tensor_memset(t, 0, 0, bytes);
    return t;
}

/* The rank's tensors (and kernel); false on failure. */
static bool rank_setup(struct bench_rank *br)
{
    const struct bench_case *bc = br->bc;
    for (uint32_t i = 0; i < bc->n; i++)
        br->group[i] = i;
    br->in = zero_tensor(case_in_bytes(bc));
    bool in_place = bc->kind == BK_ALL_REDUCE && !bc->neff;
    br->out = in_place ? br->in : zero_tensor(case_out_bytes(bc));
    if (br->in == NULL || br->out == NULL)
        return false;
    return !bc->neff || rank_load(br) == NRT_SUCCESS;
}

static void rank_teardown(struct bench_rank *br)
{
    if (br->ins != NULL)
        nrt_destroy_tensor_set(&br->ins);
    if (br->outs != NULL)
        nrt_destroy_tensor_set(&br->outs);
    if (br->model != NULL)
        nrt_unload(br->model);
    if (br->out != NULL && br->out != br->in)
        nrt_tensor_free(&br->out);
    if (br->in != NULL)
        nrt_tensor_free(&br->in);
}

/* What one rank measured: seconds per all-reduce, mean and median. */
struct bench_time {
    double mean;   /* wall time of the loop over the repetitions (< 0: failed) */
    double median; /* median of the repetitions timed one by one */
    double cpu;    /* CPU time of the rank's process per repetition (all threads) */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* iters operations, each timed; their median into *median. */
static bool timed_loop(struct bench_rank *br, int iters, double *median)
{
    double *each = malloc((size_t)iters * sizeof *each);
    bool ok = each != NULL;
    for (int i = 0; ok && i < iters; i++) {
        double t0 = wall_s();
        ok = rank_op(br) == NRT_SUCCESS;
        each[i] = wall_s() - t0;
    }
    if (ok) {
        qsort(each, (size_t)iters, sizeof *each, cmp_double);
        *median = each[iters / 2];
    }
    free(each);
    return ok;
}

/* Repetitions for about a second of work (2 .. 20), from one timed
 * operation; every rank must run the same count: rank 0's, via all-gather. */
static int agreed_iters(struct bench_rank *br)
{
    uint32_t rank = br->rank, n = br->bc->n;
    nrt_barrier(0, rank, n);
    double t0 = wall_s();
    rank_op(br);
    double one = wall_s() - t0;
    uint32_t mine = (uint32_t)(1.0 / (one > 1e-6 ? one : 1e-6)), all[64];
    nrt_all_gather(0, rank, n, sizeof mine, &mine, all);
    return all[0] < 2 ? 2 : all[0] > 20 ? 20 : (int)all[0];
}

/* The body of one rank: seconds per operation (< 0 on failure). */
static struct bench_time rank_run(const struct bench_case *bc, uint32_t rank)
{
    if (nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS ||
        nrt_build_global_comm(0, rank, bc->n) != NRT_SUCCESS)
        return (struct bench_time){-1, -1, -1};
    struct bench_rank br = {.bc = bc, .rank = rank};
    struct bench_time per = {-1, -1, -1};
    if (rank_setup(&br) && rank_op(&br) == NRT_SUCCESS) {  /* warm: pages, rings */
        int iters = bc->iters > 0 ? bc->iters : agreed_iters(&br);
        bool ok = nrt_barrier(0, rank, bc->n) == NRT_SUCCESS;
        double t0 = wall_s(), c0 = bench_proc_cpu_s(), median = -1;
        ok = ok && timed_loop(&br, iters, &median);
        double cpu = bench_proc_cpu_s() - c0;
        ok = ok && nrt_barrier(0, rank, bc->n) == NRT_SUCCESS;
        if (ok)
            per = (struct bench_time){(wall_s() - t0) / iters, median, cpu / iters};
    }
    rank_teardown(&br);
    nrt_close();
    return per;
}

/* Fork the ranks of a case; the slowest rank's seconds per all-reduce
 * (mean and median), and the CPU seconds of all ranks together per
 * all-reduce; negative on failure. */
static struct bench_time run_case_times(const struct bench_case *bc, const char *instance)
{
    int fds[2];
    if (pipe(fds) != 0)
        bench_die("bench-coll", "pipe");
    for (uint32_t r = 0; r < bc->n; r++) {
        pid_t pid = fork();
        if (pid < 0)
            bench_die("bench-coll", "fork");
        if (pid > 0)
            continue;
        close(fds[0]);
        char core[16];
        snprintf(core, sizeof core, "%u", r);
        setenv("NEURON_RT_VISIBLE_CORES", core, 1);
        setenv("TRNEMU_INSTANCE_NAME", instance, 1);
        if (bc->nodes) {  /* rank r is node r, its own instance */
            char name[96], node[16];
            snprintf(name, sizeof name, "%s-n%u", instance, r);
            snprintf(node, sizeof node, "%u", r);
            setenv("TRNEMU_INSTANCE_NAME", name, 1);
            setenv("TRNEMU_NODE", node, 1);
            setenv("NEURON_RT_VISIBLE_CORES", "0", 1);
        }
        if (bc->mesh != NULL) {  /* force one algorithm, whatever the CPUs */
            setenv("TRNEMU_COLL_MESH_MAX", bc->mesh, 1);
            setenv("TRNEMU_COLL_MESH_RANKS", "1024", 1);
            setenv("TRNEMU_COLL_DIRECT_MIN", "0x7fffffffffff", 1);
        }
        struct bench_time per = rank_run(bc, r);
        if (write(fds[1], &per, sizeof per) != (ssize_t)sizeof per)
            _exit(1);
        _exit(per.mean < 0);
    }
    close(fds[1]);
    struct bench_time worst = {0, 0, 0}, per;
    bool failed = false;
    while (read(fds[0], &per, sizeof per) == (ssize_t)sizeof per) {
        failed = failed || per.mean < 0;
        worst.mean = per.mean > worst.mean ? per.mean : worst.mean;
        worst.median = per.median > worst.median ? per.median : worst.median;
        worst.cpu += per.cpu;
    }
    close(fds[0]);
    int status;
    while (wait(&status) > 0)
        failed = failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    return failed ? (struct bench_time){-1, -1, -1} : worst;
}

/* The slowest rank's mean seconds per all-reduce (< 0 on failure). */
static double run_case(const struct bench_case *bc, const char *instance)
{
    return run_case_times(bc, instance).mean;
}

/* Cores n ranks can run on at once: min(n, CPUs). */
static double rank_cores(uint32_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return (double)(cpus < 1 ? 1 : (long)n < cpus ? (long)n : cpus);
}

/* Bus bytes per byte of the full tensor S: 2 (N-1) / N for an
 * all-reduce, (N-1) / N for a reduce-scatter or all-gather. */
static double bus_factor(enum bench_kind k, uint32_t n)
{
    return (k == BK_ALL_REDUCE ? 2.0 : 1.0) * (n - 1) / n;
}

/* Bytes that must go through memory, over all ranks, per byte of S:
 * every input read once and every output written once (all-reduce: N
 * inputs and N outputs of S; reduce-scatter: N inputs of S, N outputs of
 * S / N; all-gather the reverse). */
static double traffic_factor(enum bench_kind k, uint32_t n)
{
    return k == BK_ALL_REDUCE ? 2.0 * n : n + 1.0;
}

/* The memory-traffic bound on bus bandwidth, as a ratio of the memcpy
 * that `cores` cores reach together (cores x memcpy moves the traffic). */
static double bound_over(enum bench_kind k, uint32_t n, double cores)
{
    return bus_factor(k, n) * cores / traffic_factor(k, n);
}

/* The same with min(N, CPUs) cores at one core's memcpy each. */
static double bound_ratio(enum bench_kind k, uint32_t n)
{
    return bound_over(k, n, rank_cores(n));
}

/* Bus bandwidth of one case in GB/s, from seconds per operation. */
static double bus_gbs(const struct bench_case *bc, double t)
{
    return (double)bc->bytes * bus_factor(bc->kind, bc->n) / t / 1e9;
}

static double memcpy_gbs(void)
{
    size_t n = 64u << 20;
    return (double)n / bench_memcpy_best(n, 5) / 1e9;
}

static void bandwidth(const char *instance, double mem_gbs, double budget)
{
    static const uint32_t ranks[] = {2, 16, 64};
    static const uint64_t sizes[] = {1u << 20, 64u << 20, 512u << 20};
    printf("%-6s %-9s %12s %12s %10s %8s %8s %10s\n", "ranks", "size", "ms/op", "busbw GB/s",
           "x memcpy", "bound", "x bound", "cpu xbound");
    for (size_t i = 0; i < 3; i++)
        for (size_t j = 0; j < 3; j++) {
            struct bench_case bc = {ranks[i], sizes[j], 0, NULL, false, BK_ALL_REDUCE, false};
            double need = (double)bc.n * (double)bc.bytes;
            printf("%-6u %5.0f MiB ", bc.n, (double)bc.bytes / MIB);
            if (need > budget) {
                printf("  skipped: %.0f GiB of tensors, over TRNEMU_BENCH_MEM_GIB\n",
                       need / (MIB * 1024));
                fflush(stdout);
                continue;
            }
            fflush(stdout);
            struct bench_time t = run_case_times(&bc, instance);
            if (t.mean < 0) {
                printf("  FAILED\n");
                continue;
            }
            double bus = bus_gbs(&bc, t.mean), bound = bound_ratio(bc.kind, bc.n);
            double bus_cpu = bus_gbs(&bc, t.cpu / rank_cores(bc.n));
            printf("%12.2f %12.3f %10.3f %8.3f %8.2f %10.2f\n", t.mean * 1e3, bus, bus / mem_gbs,
                   bound, bus / mem_gbs / bound, bus_cpu / mem_gbs / bound);
            fflush(stdout);
        }
}

static void latency(const char *instance)
{
    struct bench_case one = {1, 256, 2000, NULL, false, BK_ALL_REDUCE, false};
    struct bench_case two = {2, 256, 2000, NULL, false, BK_ALL_REDUCE, false};
    struct bench_time t1 = run_case_times(&one, instance), t2 = run_case_times(&two, instance);
    printf("small all-reduce (256 B f32, nrta_cc_prepare + nrta_cc_schedule): ");
    if (t1.mean < 0 || t2.mean < 0)
        printf("FAILED\n");
    else
        printf("%.1f us median (mean %.1f) per operation on 2 ranks (target < 25 median); "
               "the calls alone (1 rank) %.1f us median\n", t2.median * 1e6, t2.mean * 1e6,
               t1.median * 1e6);
}

/* One bandwidth case, several runs: each, then the best and the spread. */
static void one_case(const char *instance, uint32_t n, double mib, int runs)
{
    struct bench_case bc = {n, (uint64_t)(mib * MIB), 0, NULL, false, BK_ALL_REDUCE, false};
    double mem = memcpy_gbs(), bound = bound_ratio(BK_ALL_REDUCE, n), best = 0, worst = 1e30;
    printf("%u ranks, %.0f MiB: memcpy %.2f GB/s, bound %.3f x memcpy\n", n, mib, mem, bound);
    double best_cpu = 0;
    for (int i = 0; i < runs; i++) {
        struct bench_time t = run_case_times(&bc, instance);
        if (t.mean < 0) {
            printf("run %d: FAILED\n", i);
            continue;
        }
        double x = bus_gbs(&bc, t.mean) / mem, xc = bus_gbs(&bc, t.cpu / rank_cores(n)) / mem;
        printf("run %d: %.2f ms/op, %.3f x memcpy, %.2f x bound; CPU %.1f ms/op over all "
               "ranks: %.3f x memcpy, %.2f x bound\n", i, t.mean * 1e3, x, x / bound,
               t.cpu * 1e3, xc, xc / bound);
        fflush(stdout);
        best = x > best ? x : best;
        worst = x < worst ? x : worst;
        best_cpu = xc > best_cpu ? xc : best_cpu;
    }
    if (best > 0)
        printf("best %.3f x memcpy (%.2f x bound), worst %.3f; from CPU time, best %.3f "
               "(%.2f x bound)\n", best, best / bound, worst, best_cpu, best_cpu / bound);
}

/* One thread of memcpy_gbs_par: copy its own buffers, BC_PAR_ROUNDS times. */
struct bc_copier {
    pthread_barrier_t *start;  /* all threads begin together */
    char *src, *dst;           /* its own buffers */
    size_t bytes;              /* their size */
    double secs;               /* its best round */
};

#define BC_PAR_ROUNDS 3

static void *bc_copy_main(void *arg)
{
    struct bc_copier *c = arg;
    memset(c->src, 1, c->bytes);
    memset(c->dst, 2, c->bytes);
    c->secs = 1e30;
    for (int r = 0; r < BC_PAR_ROUNDS; r++) {
        pthread_barrier_wait(c->start);
        double t0 = wall_s();
        memcpy(c->dst, c->src, c->bytes);
        double t = wall_s() - t0;
        c->secs = t < c->secs ? t : c->secs;
    }
    return NULL;
}

/* Aggregate memcpy GB/s of n threads copying 64 MiB each at once: what
 * the host's memory gives n ranks together (a many-core host's memory is
 * rarely n times one core's); < 0 when out of memory or threads. */
static double memcpy_gbs_par(uint32_t n)
{
    size_t bytes = 64u << 20;
    struct bc_copier *c = calloc(n, sizeof *c);
    pthread_t *th = calloc(n, sizeof *th);
    pthread_barrier_t start;
    double worst = 0;
    bool ok = c != NULL && th != NULL && pthread_barrier_init(&start, NULL, n) == 0;
    uint32_t made = 0;
    for (; ok && made < n; made++) {
        c[made] = (struct bc_copier){&start, malloc(bytes), malloc(bytes), bytes, 0};
        ok = c[made].src != NULL && c[made].dst != NULL &&
             pthread_create(&th[made], NULL, bc_copy_main, &c[made]) == 0;
        if (!ok) {
            free(c[made].src);
            free(c[made].dst);
        }
    }
    if (!ok && made > 0)
        bench_die("bench-coll", "cannot start the memcpy threads");
    for (uint32_t i = 0; i < made; i++) {
        pthread_join(th[i], NULL);
        worst = c[i].secs > worst ? c[i].secs : worst;
        free(c[i].src);
        free(c[i].dst);
    }
    if (made > 0)
        pthread_barrier_destroy(&start);
    free(c);
    free(th);
    return ok && worst > 0 ? (double)n * (double)bytes / worst / 1e9 : -1;
}

/* One line of the scale table: case bc, with the aggregate memcpy agg of
 * its N threads and the one-thread memcpy mem. */
static void scale_case(const struct bench_case *bc, const char *instance, double mem, double agg)
{
    printf("  %-6u %-14s %-5s ", bc->n, bench_kind_name[bc->kind], bc->neff ? "neff" : "cc");
    fflush(stdout);
    struct bench_time t = run_case_times(bc, instance);
    if (t.mean < 0 || agg < 0) {
        printf("FAILED\n");
        return;
    }
    double bus = bus_gbs(bc, t.mean), bound = bound_ratio(bc->kind, bc->n);
    double bus_cpu = bus_gbs(bc, t.cpu / rank_cores(bc->n));
    double mbound = bound_over(bc->kind, bc->n, agg / mem);
    printf("%10.2f %12.3f %10.3f %8.3f %8.2f %10.2f %12.2f %9.3f %10.2f\n", t.mean * 1e3, bus,
           bus / mem, bound, bus / mem / bound, bus_cpu / mem / bound, agg, mbound,
           bus / mem / mbound);
    fflush(stdout);
}

/* All-reduce, reduce-scatter and all-gather of `mib` MiB per rank (the
 * full tensor) over N = 2, 4, 8, 16 ranks (those the host has cores for:
 * one rank per core), each through nrta_cc_prepare ("cc": a replica
 * group, the channel algorithms) and as a kernel of the whole
 * communicator ("neff": the direct algorithms), each as a ratio of its
 * memory-traffic bound with the memcpy of the same run: "bound" counts N
 * cores at one core's memcpy, "mbound" the memcpy that N threads reach
 * together, measured just before the rank count's cases (the tighter,
 * real bound where the cores share a memory bus). */
static void scale(const char *instance, double mib)
{
    unsigned counts[BENCH_MAX_COUNTS];
    int n = bench_thread_counts("bench-coll", "ranks", 2, counts);
    double mem = memcpy_gbs();
    printf("collectives of %.0f MiB per rank (the full tensor), N ranks on N cores; memcpy "
           "%.2f GB/s on one thread\n", mib, mem);
    printf("  %-6s %-14s %-5s %10s %12s %10s %8s %8s %10s %12s %9s %10s\n", "ranks", "op", "via",
           "ms/op", "busbw GB/s", "x memcpy", "bound", "x bound", "cpu xbound", "N-thr memcpy",
           "mbound", "x mbound");
    for (int i = 0; i < n; i++) {
        double agg = memcpy_gbs_par(counts[i]);
        for (int k = BK_ALL_REDUCE; k <= BK_ALL_GATHER; k++)
            for (int neff = 0; neff < 2; neff++) {
                struct bench_case bc = {counts[i], (uint64_t)(mib * MIB), 0, NULL, false,
                                        (enum bench_kind)k, neff != 0};
                scale_case(&bc, instance, mem, agg);
            }
    }
}

static void sweep(const char *instance)
{
    printf("%-6s %-9s %12s %12s\n", "ranks", "bytes", "mesh us", "chain us");
    static const uint32_t ranks[] = {2, 16};
    for (size_t i = 0; i < 2; i++)
        for (uint64_t b = 256; b <= (1u << 20); b *= 4) {
            struct bench_case mesh = {ranks[i], b, 200, "1099511627776", false, BK_ALL_REDUCE,
                                      false};
            struct bench_case chain = {ranks[i], b, 200, "0", false, BK_ALL_REDUCE, false};
            if (b >= (256u << 10))
                mesh.iters = chain.iters = 20;
            double tm = run_case(&mesh, instance), tc = run_case(&chain, instance);
            printf("%-6u %-9" PRIu64 " %12.1f %12.1f\n", ranks[i], b, tm * 1e6, tc * 1e6);
            fflush(stdout);
        }
}

/* 2 nodes on this host over tcp: bandwidth against plain libfabric, latency. */
static void nodes(void)
{
    char instance[64], port[64];
    snprintf(instance, sizeof instance, "bench-nodes-%d", (int)getpid());
    snprintf(port, sizeof port, "127.0.0.1:%d", 20000 + (int)(getpid() % 20000));
    setenv("TRNEMU_NODES", "2", 1);
    setenv("NEURON_RT_ROOT_COMM_ID", port, 1);
    setenv("TRNEMU_JOB_TOKEN", "bench-nodes-token", 1);
    printf("2 nodes on this host, libfabric tcp on loopback\n");
    printf("%-9s %10s %12s %14s %8s\n", "size", "ms/op", "busbw GB/s", "plain GB/s", "ratio");
    static const uint64_t sizes[] = {1u << 20, 16u << 20, 64u << 20};
    for (size_t i = 0; i < 3; i++) {
        struct bench_case bc = {2, sizes[i], 0, NULL, true, BK_ALL_REDUCE, false};
        double plain = fabric_base_transfer(sizes[i], 5);
        double t = run_case(&bc, instance);
        printf("%5.0f MiB ", (double)sizes[i] / MIB);
        if (t < 0 || plain < 0) {
            printf("  FAILED\n");
            continue;
        }
        double bus = (double)sizes[i] / t / 1e9, base = (double)sizes[i] / plain / 1e9;
        printf("%10.2f %12.3f %14.3f %8.2f\n", t * 1e3, bus, base, bus / base);
        fflush(stdout);
    }
    struct bench_case small = {2, 256, 500, NULL, true, BK_ALL_REDUCE, false};
    double t = run_case(&small, instance);
    if (t < 0)
        printf("small all-reduce across 2 nodes: FAILED\n");
    else
        printf("small all-reduce (256 B f32) across 2 nodes: %.1f us per operation\n", t * 1e6);
}

int main(int argc, char **argv)
{
    char instance[64];
    snprintf(instance, sizeof instance, "bench-coll-%d", (int)getpid());
    setenv("TRNEMU_INSTANCE", "trn2.48xlarge", 1);
    if (getenv("NEURON_RT_EXEC_TIMEOUT") == NULL)
        setenv("NEURON_RT_EXEC_TIMEOUT", "300", 1);
    const char *b = getenv("TRNEMU_BENCH_MEM_GIB"), *spin = getenv("BENCH_COLL_SPIN_US");
    bench_spin_s = spin != NULL ? atof(spin) * 1e-6 : 0;
    double budget = (b != NULL ? atof(b) : 6.0) * 1024 * MIB;
    if (argc > 1 && strcmp(argv[1], "sweep") == 0) {
        sweep(instance);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "nodes") == 0) {
        nodes();
        return 0;
    }
    if (argc > 3 && strcmp(argv[1], "one") == 0) {
        int runs = argc > 4 ? atoi(argv[4]) : 3;
        one_case(instance, (uint32_t)atoi(argv[2]), atof(argv[3]), runs < 1 ? 1 : runs);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "scale") == 0) {
        scale(instance, argc > 2 ? atof(argv[2]) : 64.0);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "latency") == 0) {
        latency(instance);
        return 0;
    }
    double mem = memcpy_gbs();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    printf("collectives on an emulated trn2.48xlarge, %ld CPUs; memcpy %.2f GB/s\n", cpus, mem);
    latency(instance);
    bandwidth(instance, mem, budget);
    return 0;
}
