/*
 * bench_act.c: the Scalar Engine's activation instruction on one emulated
 * NeuronCore, run through the real scheduler (core_run) from hand-built
 * programs, as ratios of memcpy measured in the same run.
 *
 * Every case reads a [128 x 8192] SBUF tile and writes another: 4 MiB read
 * plus 4 MiB written in fp32 (half of that for the bf16 case). Bandwidth
 * counts bytes read plus bytes written; the baseline is memcpy of 4 MiB
 * (4 MiB read, 4 MiB written). The targets of the activation engine are exp
 * at 0.4x memcpy and every other function at 0.2x or better. exp runs at
 * every ISA level the CPU has; every function of the ACT table runs at the
 * best level, inputs in [-8, 8). Times are the calling thread's CPU time
 * (the figures stay meaningful on a busy host), best of several rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_core.h"
#include "emu/core/core.h"
#include "emu/core/par.h"
#include "emu/num/numerics.h"

#define ROWS 128
#define COLS 8192
#define TILE_BYTES ((size_t)ROWS * COLS * 4) /* 4 MiB */
#define REPS 7                               /* timed rounds; the best counts */
#define INSNS 4                              /* instructions per timed program */
#define TARGET_EXP 0.4                       /* exp vs memcpy */
#define TARGET_ALL 0.2                       /* every other function vs memcpy */

/* A [ROWS x COLS] SBUF tile of dtype dt at byte offset off. */
static struct isa_ap tile(uint64_t off, uint32_t dt)
{
    struct isa_ap ap;
    memset(&ap, 0, sizeof ap);
    ap.mem = ISA_MEM_SBUF;
    ap.dtype = (uint8_t)dt;
    ap.num_part = ROWS;
    ap.part_step = 1;
    ap.ndims = 1;
    ap.offset = off;
    ap.dim[0] = (struct isa_dim){1, COLS};
    return ap;
}

/* Best seconds per instruction of INSNS copies of insn on engine e. */
static double time_insn(struct core *c, const struct isa_insn *insn, enum isa_engine e)
{
    struct isa_insn code[INSNS];
    for (size_t i = 0; i < INSNS; i++)
        code[i] = *insn;
    return bench_core_best(c, code, INSNS, e, REPS, "bench-act") / INSNS;
}

/* Inputs in [-8, 8): fp32 tile at byte 0, bf16 copy at 64 KiB. */
static void fill_inputs(struct core *c)
{
    for (uint32_t p = 0; p < ROWS; p++) {
        float *row = (float *)(void *)(c->sbuf + (size_t)p * c->sbuf_part_bytes);
        for (uint32_t i = 0; i < COLS; i++)
            row[i] = (float)((p * 131u + i * 7919u) % 16384u) / 1024.0f - 8.0f;
        if (num_convert(c->sbuf + (size_t)p * c->sbuf_part_bytes + 65536, NUM_DT_BF16, row,
                        NUM_DT_FP32, COLS) != EMU_OK)
            bench_die("bench-act", "conversion failed");
    }
}

/* One timed case: prints and returns its ratio to memcpy. */
static double run_case(struct core *c, const char *name, const char *level,
                       const struct isa_insn *insn, enum isa_engine e, double bytes, double t_mc)
{
    double t = time_insn(c, insn, e);
    double gbs = bytes / t / 1e9, gbs_mc = 2.0 * TILE_BYTES / t_mc / 1e9;
    printf("  %-36s %-8s %7.2f GB/s  %7.3f Gelem/s  (%.2fx memcpy)  %6.2f ms\n", name, level,
           gbs, (double)ROWS * COLS / t / 1e9, gbs / gbs_mc, t * 1e3);
    return gbs / gbs_mc;
}

static struct isa_insn act_insn(unsigned func, uint32_t in_dt, uint32_t out_dt)
{
    struct isa_insn i;
    if (isa_insn_init(&i, ISA_ENG_ACT, ISA_OP_activation) != EMU_OK)
        bench_die("bench-act", "no activation op");
    i.ap[0] = tile(in_dt == ISA_DT_BF16 ? 98304 : 32768, out_dt);
    i.ap[1] = tile(in_dt == ISA_DT_BF16 ? 65536 : 0, in_dt);
    i.enums[0] = (uint8_t)func;
    return i;
}

int main(void)
{
    struct core *c;
    par_configure(1); /* one host thread: thread CPU time would not see helpers' work */
    if (core_create(3, &c) != EMU_OK)
        bench_die("bench-act", "no core");
    fill_inputs(c);
    double t_mc = bench_memcpy_best(TILE_BYTES, REPS * 3);
    double fp32 = 2.0 * TILE_BYTES, bf16 = (double)TILE_BYTES;
    static const char *const levels[] = {"portable", "avx2", "avx512"};
    int top = num_isa_level();
    printf("bench-act: activation on [%d x %d] SBUF tiles, best of %d; best ISA level: %s\n",
           ROWS, COLS, REPS, num_impl_name());
    printf("  %-36s %-8s %7.2f GB/s  (1.00x)\n", "memcpy 4 MiB", "", 2.0 * TILE_BYTES / t_mc / 1e9);

    struct isa_insn i;
    double exp_ratio = 0;
    for (int lvl = NUM_ISA_PORTABLE; lvl <= top; lvl++) {
        num_set_isa_limit(lvl);
        i = act_insn(ISA_ACT_exp, ISA_DT_F32, ISA_DT_F32);
        exp_ratio = run_case(c, "activation exp f32", levels[lvl], &i, ISA_ENG_ACT, fp32, t_mc);
    }
    num_set_isa_limit(NUM_ISA_AVX512);
    i.fimm[1] = 0.5f; /* scale */
    i.fimm[0] = 1.0f; /* bias */
    i.enums[2] = ISA_RCMD_reset_reduce;
    run_case(c, "activation exp*0.5+1 + sum", levels[top], &i, ISA_ENG_ACT, fp32, t_mc);
    i = act_insn(ISA_ACT_exp, ISA_DT_BF16, ISA_DT_BF16);
    run_case(c, "activation exp bf16", levels[top], &i, ISA_ENG_ACT, bf16, t_mc);
    double worst = 1e30;
    unsigned worst_f = 0;
    for (unsigned f = 0; f <= ISA_ACT_sign; f++) {
        char name[64];
        snprintf(name, sizeof name, "activation %s f32", isa_enum_name(ISA_ET_ACT, f));
        i = act_insn(f, ISA_DT_F32, ISA_DT_F32);
        double r = run_case(c, name, levels[top], &i, ISA_ENG_ACT, fp32, t_mc);
        if (r < worst) {
            worst = r;
            worst_f = f;
        }
    }
    if (isa_insn_init(&i, ISA_ENG_DVE, ISA_OP_exponential) != EMU_OK)
        bench_die("bench-act", "no exponential op");
    i.ap[0] = tile(32768, ISA_DT_F32);
    i.ap[1] = tile(0, ISA_DT_F32);
    i.fimm[0] = 8.0f;
    run_case(c, "exponential (DVE) f32", levels[top], &i, ISA_ENG_DVE, fp32, t_mc);
    printf("bench-act: exp at the best level is %.2fx memcpy (target %.2fx): %s\n", exp_ratio,
           TARGET_EXP, exp_ratio >= TARGET_EXP ? "met" : "NOT MET");
    printf("bench-act: slowest function %s at %.2fx memcpy (target %.2fx): %s\n",
           isa_enum_name(ISA_ET_ACT, worst_f), worst, TARGET_ALL,
           worst >= TARGET_ALL ? "met" : "NOT MET");
    core_destroy(c);
    return 0;
}
