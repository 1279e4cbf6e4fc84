/*
 * bench_matmul.c: the Tensor engine on a 4096 x 4096 x 4096 bf16 matmul,
 * against OpenBLAS cblas_sgemm (fp32, same shape) in the same run, with 1,
 * 2, 4, 8 and 16 host threads on each side where the host has them
 * (bench_thread_counts; par_configure for the emulator,
 * openblas_set_num_threads for OpenBLAS), and the OpenBLAS kernel that ran
 * (OPENBLAS_CORETYPE names it on hosts whose virtual CPU hides its model).
 *
 * The kernel is a hand-built core program (emu/core/core.h) on one emulated
 * NeuronCore-v2, run by the real scheduler. HBM holds lhsT [K x M] and
 * rhs [K x N] in bf16 and C [M x N] in fp32. The PE stream, for each
 * 512-column panel of rhs, DMAs the panel into SBUF, then for each
 * 128-row panel of lhsT DMAs it into SBUF, issues 32 nc_matmul
 * (K 128 x M 128 x N 512, accumulating in one PSUM bank) and DMAs the
 * [128 x 512] result from PSUM to C: 8192 matmuls in all. Every matrix,
 * OpenBLAS's too, sits on huge pages, as device HBM does. Figures:
 *   program     the whole program (DMAs included), GFLOP/s
 *   matmuls     the same 8192 nc_matmul alone on SBUF-resident tiles
 *   no groups   the same with each nc_matmul its own job (pe_groups_set),
 *               as before accumulation groups ran as one
 *   convert     packing the operands of 8192 matmuls into fp32 panels only
 *   hand-off    par_for calls of as many parts as a matmul is cut into,
 *               each part the same fixed work: the N-thread time less 1/N
 *               of the 1-thread time is what a hand-off and join costs
 *   sgemm       OpenBLAS, and the ratios program/sgemm and matmuls/sgemm.
 * Each is the best of REPS runs, shown as wall-clock and as the process's
 * CPU time (all its threads). With one thread the CPU ratio is what to
 * compare on a loaded machine; with two, only the wall-clock ratio says
 * whether the second thread helped, and load from other processes blurs it.
 * A sample of C is checked bit-exactly against the fmaf definition, and C
 * computed with N threads must be bit-identical to C with 1. A table at
 * the end puts every count side by side.
 * BENCH_MATMUL_THREADS=N measures that count only (for profiling).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/mman.h>

#include <cblas.h>

#include "emu/core/ap.h"
#include "emu/core/core.h"
#include "emu/core/par.h"
#include "emu/num/numerics.h"
#include "emu/engines/pe_matmul.h"
#include "bench/bench_util.h"

#define DIM 4096u              /* M = N = K */
#define TK 128u                /* contraction per nc_matmul */
#define TM 128u                /* stationary columns per nc_matmul */
#define TN 512u                /* moving columns per nc_matmul */
#define SB_B 0u                /* SBUF byte offset of the rhs panel */
#define SB_A (DIM / TK * TN * 2u) /* SBUF byte offset of the lhsT panel */
#define VAR_A 1u
#define VAR_B 2u
#define VAR_C 3u
#define SAMPLES 64             /* entries of C checked against the definition */
#define REPS 3                 /* measurements of each figure; the best is kept */

/* Wall-clock and calling-thread CPU seconds of one measurement. */
struct span {
    double wall;  /* elapsed time */
    double cpu;   /* CPU time of the whole process (every thread) */
};

static double clock_sec(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct span span_now(void)
{
    return (struct span){clock_sec(CLOCK_MONOTONIC), clock_sec(CLOCK_PROCESS_CPUTIME_ID)};
}

static struct span span_since(struct span t0)
{
    struct span t = span_now();
    return (struct span){t.wall - t0.wall, t.cpu - t0.cpu};
}

/* The better of two measurements, each figure on its own. */
static struct span span_best(struct span a, struct span b)
{
    return (struct span){a.wall <= b.wall ? a.wall : b.wall, a.cpu <= b.cpu ? a.cpu : b.cpu};
}

static double gflops(double sec)
{
    return 2.0 * DIM * DIM * (double)DIM / sec * 1e-9;
}

/* An access pattern: dims {step, count} outermost first. */
static struct isa_ap bench_ap(uint8_t mem, uint32_t var, uint32_t parts, int32_t part_step,
                              uint64_t off, uint32_t dtype, uint32_t ndims, const int32_t d[][2])
{
    struct isa_ap ap;
    memset(&ap, 0, sizeof ap);
    ap.mem = mem;
    ap.var_id = var;
    ap.dtype = (uint8_t)dtype;
    ap.num_part = (uint8_t)parts;
    ap.part_step = part_step;
    ap.offset = off;
    ap.ndims = (uint8_t)ndims;
    for (uint32_t i = 0; i < ndims; i++)
        ap.dim[i] = (struct isa_dim){d[i][0], (uint32_t)d[i][1]};
    return ap;
}

/* HBM [K x w] panel at column col of a K x DIM bf16 matrix -> SBUF at sb. */
static void emit_load(struct isa_insn *in, uint32_t var, uint32_t col, uint32_t w, uint32_t sb)
{
    const int32_t hd[2][2] = {{(int32_t)(TK * DIM), (int32_t)(DIM / TK)}, {1, (int32_t)w}};
    const int32_t sd[2][2] = {{(int32_t)w, (int32_t)(DIM / TK)}, {1, (int32_t)w}};
    isa_insn_init(in, ISA_ENG_PE, ISA_OP_dma_copy);
    in->ap[0] = bench_ap(ISA_MEM_SBUF, 0, TK, 1, sb, ISA_DT_BF16, 2, sd);
    in->ap[1] = bench_ap(ISA_MEM_HBM, var, TK, (int32_t)DIM, (uint64_t)col * 2, ISA_DT_BF16, 2, hd);
}

static void emit_matmul(struct isa_insn *in, uint32_t kt, bool acc)
{
    const int32_t a[1][2] = {{1, (int32_t)TM}}, b[1][2] = {{1, (int32_t)TN}};
    isa_insn_init(in, ISA_ENG_PE, ISA_OP_nc_matmul);
    in->ap[0] = bench_ap(ISA_MEM_PSUM, 0, TM, 1, 0, ISA_DT_F32, 1, b);
    in->ap[1] = bench_ap(ISA_MEM_SBUF, 0, TK, 1, SB_A + kt * TM * 2, ISA_DT_BF16, 1, a);
    in->ap[2] = bench_ap(ISA_MEM_SBUF, 0, TK, 1, SB_B + kt * TN * 2, ISA_DT_BF16, 1, b);
    in->flags = acc ? 1u : 0u;
}

static void emit_store(struct isa_insn *in, uint32_t mt, uint32_t nt)
{
    const int32_t d[1][2] = {{1, (int32_t)TN}};
    isa_insn_init(in, ISA_ENG_PE, ISA_OP_dma_copy);
    in->ap[0] = bench_ap(ISA_MEM_HBM, VAR_C, TM, (int32_t)DIM,
                         ((uint64_t)mt * TM * DIM + (uint64_t)nt * TN) * 4, ISA_DT_F32, 1, d);
    in->ap[1] = bench_ap(ISA_MEM_PSUM, 0, TM, 1, 0, ISA_DT_F32, 1, d);
}

/* The whole kernel (with_dma) or its matmuls alone; returns the count. */
static size_t build(struct isa_insn *code, bool with_dma)
{
    size_t n = 0;
    for (uint32_t nt = 0; nt < DIM / TN; nt++) {
        if (with_dma)
            emit_load(&code[n++], VAR_B, nt * TN, TN, SB_B);
        for (uint32_t mt = 0; mt < DIM / TM; mt++) {
            if (with_dma)
                emit_load(&code[n++], VAR_A, mt * TM, TM, SB_A);
            for (uint32_t kt = 0; kt < DIM / TK; kt++)
                emit_matmul(&code[n++], kt, kt > 0);
            if (with_dma)
                emit_store(&code[n++], mt, nt);
        }
    }
    return n;
}

static struct span run(struct core *core, struct core_program *prog, struct isa_insn *code,
                       size_t n)
{
    char report[4096] = "";
    struct core_run_opts opts = {0};
    struct core *cores[1] = {core};
    const struct core_program *progs[1] = {prog};
    prog->code[ISA_ENG_PE] = code;
    prog->n[ISA_ENG_PE] = n;
    struct span t0 = span_now();
    emu_status st = core_run(cores, progs, 1, &opts, report, sizeof report);
    struct span t = span_since(t0);
    if (st != EMU_OK) {
        fprintf(stderr, "bench-matmul: core_run failed (%d): %s\n", (int)st, report);
        exit(1);
    }
    return t;
}

/* Time only the packing of 8192 matmuls' operands. */
static struct span time_convert(struct core *core, struct core_program *prog)
{
    struct isa_insn in;
    emit_matmul(&in, 0, false);
    struct isa_exec_ctx ctx = {.core = core, .prog = prog, .engine = ISA_ENG_PE, .insn = &in};
    struct ap_view st, mv;
    struct span t0 = span_now();
    for (uint32_t i = 0; i < (DIM / TN) * (DIM / TM) * (DIM / TK); i++) {
        in.ap[1].offset = SB_A + (i % (DIM / TK)) * TM * 2;
        in.ap[2].offset = SB_B + (i % (DIM / TK)) * TN * 2;
        if (ap_bind(&ctx, 1, &st) != EMU_OK || ap_bind(&ctx, 2, &mv) != EMU_OK)
            exit(1);
        struct pe_mm mm = {.k = TK, .m = TM, .n = TN, .b_src = &mv, .b_groups = 1};
        pe_pack_a(&st, 1, TM, core_scratch(&ctx, 0), core_scratch(&ctx, 2));
        for (uint32_t n0 = 0; n0 < TN; n0 += PE_PANEL_COLS)
            pe_pack_panels(&mm, n0, n0 + PE_PANEL_COLS, core_scratch(&ctx, 1));
    }
    return span_since(t0);
}

/* Check SAMPLES entries of C against the fmaf chain over k in order. */
static int check(const uint16_t *a, const uint16_t *b, const float *c)
{
    int bad = 0;
    for (int s = 0; s < SAMPLES; s++) {
        uint32_t m = (uint32_t)(s * 977u + 13u) % DIM, n = (uint32_t)(s * 1531u + 7u) % DIM;
        float acc = 0.0f;
        for (uint32_t k = 0; k < DIM; k++)
            acc = fmaf(num_bf16_to_f32(a[(size_t)k * DIM + m]),
                       num_bf16_to_f32(b[(size_t)k * DIM + n]), acc);
        float got = c[(size_t)m * DIM + n];
        bad += memcmp(&acc, &got, sizeof acc) != 0;
    }
    return bad;
}

/* A large zeroed array on huge pages where the kernel has them, as the
 * runtime maps device HBM (devices/machine/instance.c); NULL when out of memory. */
static void *bench_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static void bench_unmap(void *p, size_t bytes)
{
    if (p != NULL)
        munmap(p, bytes);
}

static void fill(uint16_t *bf, float *f32, size_t count, uint64_t seed)
{
    for (size_t i = 0; i < count; i++) {
        double u = (double)(num_rng_u64(seed, i) >> 11) * 0x1p-53;
        bf[i] = num_f32_to_bf16((float)(2.0 * u - 1.0));
        f32[i] = num_bf16_to_f32(bf[i]);
    }
}

static struct span time_sgemm(const float *a, const float *b, float *c)
{
    struct span t0 = span_now();
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, DIM, DIM, DIM, 1.0f, a, DIM, b, DIM,
                0.0f, c, DIM);
    return span_since(t0);
}

static void say(const char *what, struct span t)
{
    printf("  %-24s %7.3f s wall %6.1f GFLOP/s | %7.3f s cpu %6.1f GFLOP/s\n", what, t.wall,
           gflops(t.wall), t.cpu, gflops(t.cpu));
}

#define HANDOFF_CALLS 1024u   /* par_for calls timed by time_handoffs */
#define HANDOFF_WORK 20000     /* steps of a dependent chain per part, about 20 us */

static void fixed_part(void *arg, size_t part)
{
    volatile uint64_t *sink = arg;
    uint64_t x = part;
    for (int i = 0; i < HANDOFF_WORK; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    sink[part] = x;
}

/* Time HANDOFF_CALLS par_for calls of as many parts as one matmul is cut
 * into, each part the same fixed work: with 2 threads against 1, what
 * handing a matmul's parts to the helper and joining them costs when the
 * parts are perfectly balanced. */
static struct span time_handoffs(void)
{
    uint64_t sink[TN / PE_PANEL_PAR_COLS];
    par_force_split(true);
    struct span t0 = span_now();
    for (uint32_t i = 0; i < HANDOFF_CALLS; i++)
        par_for(TN / PE_PANEL_PAR_COLS, fixed_part, sink);
    struct span t = span_since(t0);
    par_force_split(false);
    return t;
}

/* Best-of-REPS figures at one thread count. */
struct figures {
    struct span program; /* DMA + matmuls */
    struct span matmuls; /* matmuls alone */
    struct span single;  /* matmuls alone, each instruction its own job (no groups) */
    struct span handoff; /* par_for calls of balanced fixed-work parts */
    struct span sgemm;   /* OpenBLAS */
    uint64_t handoffs;   /* par_for calls handed to helpers by one run of the matmuls */
    int bad;             /* sampled entries of C that differ from the definition */
};

static void measure(unsigned threads, struct core *core, struct core_program *prog,
                    struct isa_insn *code, const uint16_t *a, const uint16_t *b, const float *af,
                    const float *bf, float *c, float *cb, struct figures *f)
{
    par_configure(threads);
    openblas_set_num_threads((int)threads);
    struct span inf = {1e30, 1e30};
    *f = (struct figures){inf, inf, inf, inf, inf, 0, 0};
    for (int r = 0; r < REPS; r++) {
        f->program = span_best(f->program, run(core, prog, code, build(code, true)));
        if (r == 0)
            f->bad = check(a, b, c);
        uint64_t h0 = par_handoffs();
        f->matmuls = span_best(f->matmuls, run(core, prog, code, build(code, false)));
        f->handoffs = par_handoffs() - h0;
        pe_groups_set(false);
        f->single = span_best(f->single, run(core, prog, code, build(code, false)));
        pe_groups_set(true);
        f->handoff = span_best(f->handoff, time_handoffs());
        f->sgemm = span_best(f->sgemm, time_sgemm(af, bf, cb));
    }
}

static void report(unsigned threads, const struct figures *f)
{
    printf(" %u thread%s, best of %d runs; GFLOP/s of the whole 4096^3 product\n", threads,
           threads == 1 ? "" : "s", REPS);
    say("program (DMA + matmul)", f->program);
    say("matmuls alone", f->matmuls);
    say("matmuls, no groups", f->single);
    say("OpenBLAS sgemm", f->sgemm);
    printf("  ratio to sgemm (target >= 0.9): program %.2f wall, %.2f cpu; matmuls %.2f wall, "
           "%.2f cpu\n", f->sgemm.wall / f->program.wall, f->sgemm.cpu / f->program.cpu,
           f->sgemm.wall / f->matmuls.wall, f->sgemm.cpu / f->matmuls.cpu);
    printf("  bit-exact sample: %d of %d differ; hand-offs to helper threads in one run of the "
           "8192 matmuls: %llu\n", f->bad, SAMPLES, (unsigned long long)f->handoffs);
}

/* What one hand-off and join costs with `threads` threads (balanced
 * parts: the time less 1/threads of the 1-thread time), and that times
 * the kernel's hand-offs as a share of the matmuls at that count. */
static void report_handoffs(unsigned threads, const struct figures *f1, const struct figures *f)
{
    double per = (f->handoff.wall - f1->handoff.wall / threads) / HANDOFF_CALLS;
    double all = per * (double)f->handoffs;
    printf("  hand-off and join of %u parts (balanced fixed work, %u threads less 1/%u of 1): "
           "%.1f us; for the matmuls' %llu hand-offs %.3f s = %.1f%% of the matmuls\n",
           TN / PE_PANEL_PAR_COLS, threads, threads, per * 1e6, (unsigned long long)f->handoffs,
           all, 100.0 * all / f->matmuls.wall);
}

/* The table of every thread count against 1 thread and against sgemm. */
static void report_scaling(const unsigned *counts, int n, const struct figures *f)
{
    printf("scaling (wall clock; ratios to OpenBLAS sgemm at the same thread count, and to "
           "1 thread)\n");
    printf("  %-7s %9s %9s %9s %9s %10s %10s %10s %9s %9s %9s\n", "threads", "program",
           "matmuls", "no groups", "sgemm", "prog/sgemm", "mm/sgemm", "nogr/sgemm", "prog xN",
           "mm xN", "sgemm xN");
    for (int i = 0; i < n; i++)
        printf("  %-7u %9.1f %9.1f %9.1f %9.1f %10.2f %10.2f %10.2f %9.2f %9.2f %9.2f\n",
               counts[i], gflops(f[i].program.wall), gflops(f[i].matmuls.wall),
               gflops(f[i].single.wall), gflops(f[i].sgemm.wall),
               f[i].sgemm.wall / f[i].program.wall, f[i].sgemm.wall / f[i].matmuls.wall,
               f[i].sgemm.wall / f[i].single.wall, f[0].program.wall / f[i].program.wall,
               f[0].matmuls.wall / f[i].matmuls.wall, f[0].sgemm.wall / f[i].sgemm.wall);
}

/* Which OpenBLAS kernel runs, and what OPENBLAS_CORETYPE asked for. */
static void report_openblas(void)
{
    const char *ct = getenv("OPENBLAS_CORETYPE");
    printf("OpenBLAS kernel %s (OPENBLAS_CORETYPE=%s); host %ld online CPUs\n",
           openblas_get_corename(), ct != NULL ? ct : "(unset)",
           sysconf(_SC_NPROCESSORS_ONLN));
}

int main(void)
{
    size_t el = (size_t)DIM * DIM, ninsn = (DIM / TN) * (2 + (DIM / TM) * (DIM / TK + 2));
    uint16_t *a = bench_map(el * 2), *b = bench_map(el * 2);
    float *af = bench_map(el * 4), *bf = bench_map(el * 4), *c = bench_map(el * 4);
    float *cb = bench_map(el * 4), *c1 = bench_map(el * 4);
    struct isa_insn *code = calloc(ninsn, sizeof *code);
    struct core *core = NULL;
    if (!a || !b || !af || !bf || !c || !cb || !c1 || !code || core_create(2, &core) != EMU_OK) {
        fprintf(stderr, "bench-matmul: out of memory\n");
        return 1;
    }
    fill(a, af, el, 1);
    fill(b, bf, el, 2);
    struct core_var vars[3] = {{VAR_A, "lhsT", (uint8_t *)a, el * 2},
                               {VAR_B, "rhs", (uint8_t *)b, el * 2},
                               {VAR_C, "out", (uint8_t *)c, el * 4}};
    struct core_program prog = {.name = "bench-matmul", .vars = vars, .nvars = 3};
    printf("bench-matmul: %u x %u x %u bf16 as nc_matmul %u(K) x %u(M) x %u(N), kernel %s\n",
           DIM, DIM, DIM, TK, TM, TN, pe_mm_impl_name());
    report_openblas();
    const char *only = getenv("BENCH_MATMUL_THREADS"); /* profiling: one count only */
    if (only != NULL && atoi(only) >= 1) {
        struct figures f;
        measure((unsigned)atoi(only), core, &prog, code, a, b, af, bf, c, cb, &f);
        report((unsigned)atoi(only), &f);
        return f.bad != 0;
    }
    unsigned counts[BENCH_MAX_COUNTS];
    int nc = bench_thread_counts("bench-matmul", "threads", 1, counts);
    struct figures f[BENCH_MAX_COUNTS];
    par_configure(1);
    struct span tc = {1e30, 1e30};
    for (int r = 0; r < REPS; r++)
        tc = span_best(tc, time_convert(core, &prog));
    int bad = 0, differ = 0;
    for (int i = 0; i < nc; i++) {
        measure(counts[i], core, &prog, code, a, b, af, bf, c, cb, &f[i]);
        if (i == 0)
            memcpy(c1, c, el * 4);
        bool same = memcmp(c1, c, el * 4) == 0;
        differ += !same;
        bad += f[i].bad;
        report(counts[i], &f[i]);
        if (i == 0)
            printf("  %-24s %7.3f s wall (%4.1f%%)        | %7.3f s cpu (%4.1f%% of the "
                   "matmuls)\n", "convert/pack only", tc.wall, 100.0 * tc.wall /
                   f[0].matmuls.wall, tc.cpu, 100.0 * tc.cpu / f[0].matmuls.cpu);
        else {
            report_handoffs(counts[i], &f[0], &f[i]);
            printf("  C with %u threads %s C with 1\n", counts[i],
                   same ? "is bit-identical to" : "DIFFERS from");
        }
        fflush(stdout);
    }
    report_scaling(counts, nc, f);
    par_shutdown();
    core_destroy(core);
    free(code);
    bench_unmap(a, el * 2), bench_unmap(b, el * 2), bench_unmap(af, el * 4);
    bench_unmap(bf, el * 4), bench_unmap(c, el * 4), bench_unmap(cb, el * 4);
    bench_unmap(c1, el * 4);
    return bad != 0 || differ != 0;
}
