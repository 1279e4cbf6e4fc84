/*
 * bench_dve.c: the Vector engine's elementwise and reduce instructions on
 * one emulated NeuronCore, run through the real scheduler (core_run) from
 * hand-built programs, as ratios of memcpy measured in the same run.
 *
 *   tensor_tensor add        [128 x 8192] fp32 SBUF: 2 reads + 1 write of 4 MiB
 *   tensor_scalar mul-add    [128 x 8192] fp32 SBUF: 1 read + 1 write of 4 MiB
 *   tensor_reduce add        [128 x 8192] fp32 -> [128 x 1]: 1 read of 4 MiB
 *
 * Bandwidth counts bytes read plus bytes written; the baseline is memcpy
 * moving the same number of bytes (half read, half written). Then the
 * dispatch rate: a loop running one million single-element instructions
 * (1 partition x 1 element) on one core thread, next to the same loop of
 * nops, which measures the scheduler alone. An argument "bandwidth" or
 * "dispatch" runs only that part. Times are the calling thread's CPU
 * time, best of several rounds, with splitting across host threads off
 * (par_configure(1)): helpers' time would not be counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_core.h"
#include "emu/core/core.h"
#include "emu/core/par.h"

#define ROWS 128
#define COLS 8192
#define TILE_BYTES ((size_t)ROWS * COLS * 4)  /* 4 MiB */
#define REPS 7                                /* timed rounds; the best counts */
#define BIG_INSNS 8                           /* instructions per timed program */
#define LOOP_BODY 1000                        /* instructions in the dispatch loop */
#define LOOP_TRIPS 1000                       /* its iterations: 1M instructions */

/* A [128 x cols] fp32 SBUF tile at byte offset off of every partition. */
static struct isa_ap tile(uint64_t off, uint32_t rows, uint32_t cols)
{
    struct isa_ap ap;
    memset(&ap, 0, sizeof ap);
    ap.mem = ISA_MEM_SBUF;
    ap.dtype = ISA_DT_F32;
    ap.num_part = (uint8_t)rows;
    ap.part_step = 1;
    ap.ndims = 1;
    ap.offset = off;
    ap.dim[0] = (struct isa_dim){1, cols};
    return ap;
}

/* Best seconds per instruction of n copies of insn on the DVE stream. */
static double time_insns(struct core *c, const struct isa_insn *insn, size_t n)
{
    struct isa_insn *code = calloc(n, sizeof *code);
    if (code == NULL)
        bench_die("bench-dve", "out of memory");
    for (size_t i = 0; i < n; i++)
        code[i] = *insn;
    double best = bench_core_best(c, code, n, ISA_ENG_DVE, REPS, "bench-dve");
    free(code);
    return best / (double)n;
}

/* Seconds per instruction of LOOP_BODY copies of insn run LOOP_TRIPS times. */
static double time_loop(struct core *c, const struct isa_insn *insn)
{
    size_t n = LOOP_BODY + 2;
    struct isa_insn *code = calloc(n, sizeof *code);
    if (code == NULL)
        bench_die("bench-dve", "out of memory");
    for (size_t i = 0; i < LOOP_BODY; i++)
        code[i] = *insn;
    if (isa_insn_init(&code[LOOP_BODY], ISA_ENG_DVE, ISA_OP_reg_alu) != EMU_OK ||
        isa_insn_init(&code[LOOP_BODY + 1], ISA_ENG_DVE, ISA_OP_branch) != EMU_OK)
        bench_die("bench-dve", "no reg_alu/branch");
    code[LOOP_BODY].imm[0].i = 2; /* r2 = r2 + 1 */
    code[LOOP_BODY].imm[1].i = 2;
    code[LOOP_BODY].enums[0] = ISA_ALU_add;
    code[LOOP_BODY].imm[2].i = -1;
    code[LOOP_BODY].imm[3].i = 1;
    code[LOOP_BODY + 1].imm[0].i = 2; /* if r2 < LOOP_TRIPS goto 0 */
    code[LOOP_BODY + 1].enums[0] = ISA_CMP_lt;
    code[LOOP_BODY + 1].imm[1].i = LOOP_TRIPS;
    code[LOOP_BODY + 1].imm[2].i = 0;
    double best = bench_core_best(c, code, n, ISA_ENG_DVE, 3, "bench-dve");
    free(code);
    return best / ((double)LOOP_BODY * LOOP_TRIPS);
}

static struct isa_insn make(unsigned opcode)
{
    struct isa_insn insn;
    if (isa_insn_init(&insn, ISA_ENG_DVE, opcode) != EMU_OK)
        bench_die("bench-dve", "unknown opcode");
    return insn;
}

/* Print one bandwidth figure against memcpy of the same bytes. */
static void report_bw(const char *name, double sec, size_t bytes)
{
    double ref = bench_memcpy_best(bytes / 2, REPS * 3);
    double gbs = (double)bytes / sec / 1e9, ref_gbs = (double)bytes / ref / 1e9;
    printf("%-34s %7.3f ms %7.2f GB/s   memcpy %6.2f GB/s   ratio %.2f\n", name, sec * 1e3, gbs,
           ref_gbs, gbs / ref_gbs);
}

static void bench_bandwidth(struct core *c)
{
    float *row = malloc(COLS * sizeof *row);
    if (row == NULL)
        bench_die("bench-dve", "out of memory");
    for (uint32_t p = 0; p < ROWS; p++) {
        for (uint32_t i = 0; i < COLS; i++)
            row[i] = (float)((p * 131u + i * 7u) % 1000u) * 0.001f;
        for (int t = 0; t < 3; t++)
            memcpy(c->sbuf + (size_t)p * c->sbuf_part_bytes + (size_t)t * COLS * 4, row,
                   COLS * 4);
    }
    free(row);
    struct isa_insn tt = make(ISA_OP_tensor_tensor);
    tt.ap[0] = tile(2 * COLS * 4, ROWS, COLS);
    tt.ap[1] = tile(0, ROWS, COLS);
    tt.ap[2] = tile(COLS * 4, ROWS, COLS);
    tt.enums[0] = ISA_ALU_add;
    report_bw("tensor_tensor add 128x8192 f32", time_insns(c, &tt, BIG_INSNS), 3 * TILE_BYTES);
    struct isa_insn ts = make(ISA_OP_tensor_scalar);
    ts.ap[0] = tile(2 * COLS * 4, ROWS, COLS);
    ts.ap[1] = tile(0, ROWS, COLS);
    ts.enums[0] = ISA_ALU_multiply;
    ts.fimm[0] = 1.0001f;
    ts.enums[1] = ISA_ALU_add;
    ts.fimm[1] = 0.5f;
    report_bw("tensor_scalar mul-add 128x8192 f32", time_insns(c, &ts, BIG_INSNS),
              2 * TILE_BYTES);
    struct isa_insn tr = make(ISA_OP_tensor_reduce);
    tr.ap[0] = tile(2 * COLS * 4, ROWS, 1);
    tr.ap[1] = tile(0, ROWS, COLS);
    tr.enums[0] = ISA_ALU_add;
    tr.imm[0].i = 1;
    report_bw("tensor_reduce add 128x8192 f32", time_insns(c, &tr, BIG_INSNS), TILE_BYTES);
}

static void report_rate(const char *name, double sec)
{
    printf("%-34s %7.1f ns/insn  %6.2f M insn/s\n", name, sec * 1e9, 1e-6 / sec);
}

static void bench_dispatch(struct core *c)
{
    struct isa_insn nop = make(ISA_OP_nop);
    report_rate("nop (scheduler alone)", time_loop(c, &nop));
    struct isa_insn ts = make(ISA_OP_tensor_scalar);
    ts.ap[0] = tile(64, 1, 1);
    ts.ap[1] = tile(0, 1, 1);
    ts.enums[0] = ISA_ALU_multiply;
    ts.fimm[0] = 2.0f;
    ts.enums[1] = ISA_ALU_add;
    ts.fimm[1] = 1.0f;
    report_rate("tensor_scalar 1x1 f32", time_loop(c, &ts));
    struct isa_insn tt = make(ISA_OP_tensor_tensor);
    tt.ap[0] = tile(64, 1, 1);
    tt.ap[1] = tile(0, 1, 1);
    tt.ap[2] = tile(32, 1, 1);
    tt.enums[0] = ISA_ALU_add;
    report_rate("tensor_tensor 1x1 f32", time_loop(c, &tt));
    struct isa_insn cp = make(ISA_OP_tensor_copy);
    cp.ap[0] = tile(64, 1, 1);
    cp.ap[1] = tile(0, 1, 1);
    report_rate("tensor_copy 1x1 f32", time_loop(c, &cp));
}

/* Optional argument "bandwidth" or "dispatch" runs only that part (for profiling). */
int main(int argc, char **argv)
{
    struct core *c;
    const char *only = argc > 1 ? argv[1] : "";
    par_configure(1); /* one host thread: thread CPU time would not see helpers' work */
    if (core_create(3, &c) != EMU_OK)
        bench_die("bench-dve", "cannot create a core");
    if (strcmp(only, "dispatch") != 0)
        bench_bandwidth(c);
    if (strcmp(only, "bandwidth") != 0)
        bench_dispatch(c);
    core_destroy(c);
    return 0;
}
