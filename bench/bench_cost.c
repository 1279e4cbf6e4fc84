/*
 * bench_cost.c: what the device-time estimate (emu/core/cost.c) costs the
 * emulator. One NeuronCore runs a pipelined program through the real
 * scheduler (core_run), once with the cost model off and once with it on
 * (cost_begin before each run, as every execution does), then the cost
 * model alone replays the same instructions (no execution): its time over
 * the run's is what the estimate costs, which must stay under 5%; the
 * replay must give the run's device time.
 *
 *   the sync engine's queue copies tiles SBUF -> SBUF (dma_copy), one
 *   signal per tile; the Vector engine scales each tile once it landed
 *   (tensor_scalar, waiting on the copy's count), GpSimd adds it to an
 *   accumulator (tensor_tensor, waiting on the Vector count).
 *
 * Two tile widths: 64 fp32 per partition (tiny instructions, the worst
 * case for a per-instruction overhead) and 512 (a matmul tile's width).
 * Times are the calling thread's CPU time, best of several rounds, with
 * splitting across host threads off. Prints the estimated device time too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench_util.h"
#include "emu/core/core.h"
#include "emu/core/cost.h"
#include "emu/core/par.h"

#define TILES 2000  /* tiles per program */
#define SLOTS 8     /* SBUF slots the copies rotate through */
#define REPS 15     /* timed rounds of each; the best counts */

static struct isa_ap tile(uint64_t off, uint32_t cols)
{
    struct isa_ap ap;
    memset(&ap, 0, sizeof ap);
    ap.mem = ISA_MEM_SBUF;
    ap.dtype = ISA_DT_F32;
    ap.num_part = 128;
    ap.part_step = 1;
    ap.ndims = 1;
    ap.offset = off;
    ap.dim[0] = (struct isa_dim){1, cols};
    return ap;
}

static struct isa_sync sync_of(uint8_t kind, uint8_t op, uint16_t id, uint32_t value)
{
    return (struct isa_sync){kind, op, id, value};
}

/* The three streams of the program for tiles of `cols` fp32 per partition. */
static void build(struct isa_insn *sp, struct isa_insn *dve, struct isa_insn *pool, uint32_t cols)
{
    uint64_t bytes = (uint64_t)cols * 4, src = 0, acc = bytes, slot0 = 2 * bytes;
    for (uint32_t i = 0; i < TILES; i++) {
        uint64_t slot = slot0 + (i % SLOTS) * bytes;
        struct isa_insn *c = &sp[i], *v = &dve[i], *a = &pool[i];
        memset(c, 0, sizeof *c);
        c->opcode = ISA_OP_dma_copy;
        c->engine = ISA_ENG_SP;
        c->ap[0] = tile(slot, cols);
        c->ap[1] = tile(src, cols);
        c->fimm[0] = 1.0f;  /* scale: the default of a plain copy */
        c->signal[0] = sync_of(ISA_SYNC_SEM, ISA_SEMOP_add, 0, 1);
        if (i >= SLOTS)  /* the slot is free once GpSimd read it */
            c->wait[0] = sync_of(ISA_SYNC_SEM, ISA_CMP_ge, 2, i - SLOTS + 1);
        memset(v, 0, sizeof *v);
        v->opcode = ISA_OP_tensor_scalar;
        v->engine = ISA_ENG_DVE;
        v->ap[0] = tile(slot, cols);
        v->ap[1] = tile(slot, cols);
        v->enums[0] = ISA_ALU_multiply;
        v->fimm[0] = 0.5f;
        v->enums[1] = ISA_ALU_bypass;
        v->wait[0] = sync_of(ISA_SYNC_SEM, ISA_CMP_ge, 0, i + 1);
        v->signal[0] = sync_of(ISA_SYNC_SEM, ISA_SEMOP_add, 1, 1);
        memset(a, 0, sizeof *a);
        a->opcode = ISA_OP_tensor_tensor;
        a->engine = ISA_ENG_POOL;
        a->enums[0] = ISA_ALU_add;
        a->ap[0] = tile(acc, cols);
        a->ap[1] = tile(acc, cols);
        a->ap[2] = tile(slot, cols);
        a->wait[0] = sync_of(ISA_SYNC_SEM, ISA_CMP_ge, 1, i + 1);
        a->signal[0] = sync_of(ISA_SYNC_SEM, ISA_SEMOP_add, 2, 1);
    }
}

/* CPU seconds of one run of prog on c, with the cost model when r. */
static double one_run(struct core *c, const struct core_program *prog, struct cost_run *r)
{
    const struct core_program *progs[1] = {prog};
    struct core_run_opts opts = {0};
    char report[1024] = "";
    double t0 = bench_cpu_s();
    if (r != NULL) {
        cost_begin(r, 2, NULL, 0);
        opts.cost = r;
    }
    if (core_run(&c, progs, 1, &opts, report, sizeof report) != EMU_OK) {
        fprintf(stderr, "%s", report);
        bench_die("bench-cost", "core_run failed");
    }
    return bench_cpu_s() - t0;
}

/* Best CPU seconds without (*off) and with (*on) the cost model, the runs
 * alternating so that a noisy neighbour hits both alike. */
static void best_runs(struct core *c, const struct core_program *prog, struct cost_run *r,
                      double *off, double *on)
{
    *off = *on = 1e30;
    for (int k = 0; k < REPS; k++) {
        double a = one_run(c, prog, NULL), b = one_run(c, prog, r);
        *off = a < *off ? a : *off;
        *on = b < *on ? b : *on;
    }
}

/* Best CPU seconds of the cost model alone on the program: every
 * instruction costed and its signals stamped, in an order the semaphores
 * allow (tile by tile), without executing anything. */
static double model_only(const struct isa_insn *code, struct cost_run *r)
{
    double best = 1e30;
    for (int k = 0; k < REPS; k++) {
        double t0 = bench_cpu_s();
        cost_begin(r, 2, NULL, 0);
        for (uint32_t i = 0; i < TILES; i++)
            for (int e = 0; e < 3; e++) {
                const struct isa_insn *in = &code[(size_t)e * TILES + i];
                double t = cost_insn(r, 0, (enum isa_engine)in->engine, i, in);
                cost_signal(r, 0, &in->signal[0], t);
            }
        double t = bench_cpu_s() - t0;
        best = t < best ? t : best;
    }
    return best;
}

static double measure(struct core *c, uint32_t cols, struct cost_run *r)
{
    struct isa_insn *code = calloc(3 * TILES, sizeof *code);
    if (code == NULL)
        bench_die("bench-cost", "out of memory");
    build(code, code + TILES, code + 2 * TILES, cols);
    struct core_program prog = {.name = "bench-cost"};
    prog.code[ISA_ENG_SP] = code;
    prog.code[ISA_ENG_DVE] = code + TILES;
    prog.code[ISA_ENG_POOL] = code + 2 * TILES;
    prog.n[ISA_ENG_SP] = prog.n[ISA_ENG_DVE] = prog.n[ISA_ENG_POOL] = TILES;
    double off, on;
    best_runs(c, &prog, r, &off, &on);
    double dev = r->end_ns, alone = model_only(code, r);
    double over = alone / off * 100.0;
    printf("bench-cost: %4u fp32 per partition, %d instructions: %.2f ms without the estimate, "
           "%.2f ms with it; the model alone %.3f ms (%.1f%% of execution, %.0f ns per "
           "instruction); estimated device time %.1f us\n",
           cols, 3 * TILES, off * 1e3, on * 1e3, alone * 1e3, over, alone / (3 * TILES) * 1e9,
           dev / 1000.0);
    if (r->end_ns != dev)
        bench_die("bench-cost", "the model alone gave another device time");
    free(code);
    return over;
}

int main(void)
{
    struct core *c;
    par_configure(1);
    if (core_create(2, &c) != EMU_OK)
        bench_die("bench-cost", "core_create failed");
    struct cost_run *r = calloc(1, sizeof *r);
    if (r == NULL)
        bench_die("bench-cost", "out of memory");
    double small = measure(c, 64, r), wide = measure(c, 512, r);
    printf("bench-cost: the estimate costs %.1f%% (tiny tiles) and %.1f%% (matmul-width tiles) "
           "of execution time (target: under 5%%)\n", small, wide);
    free(r);
    core_destroy(c);
    return 0;
}
