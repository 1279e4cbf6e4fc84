/*
 * bench_mx.c: the NeuronCore-v4 MX instructions against baselines measured
 * in the same run:
 *   nc_matmul_mx  K 128 (x4 = 512 contraction rows) x M 128 x N 512,
 *                 fp8 e4m3fn x4, fp32 PSUM, REPS instructions on one
 *                 emulated core, vs OpenBLAS cblas_sgemm on the same
 *                 logical shape (512 x 128 x 512, one thread); target >= 0.5
 *   quantize_mx   a [128 x 4096] bf16 tile (1 MiB) into fp8 e4m3fn x4 and
 *                 scales, vs memcpy of the 1 MiB input; target >= 0.25
 * Figures are this thread's CPU time, best of ROUNDS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench/bench_core.h"
#include "emu/core/core.h"
#include "emu/core/par.h"
#include "emu/isa/isa.h"
#include "emu/num/numerics.h"

#define REPS 64          /* instructions per timed program */
#define ROUNDS 5         /* timed programs; the best counts */
#define MM_K 128u        /* partitions */
#define MM_M 128u
#define MM_N 512u
#define Q_F 4096u        /* quantize_mx src elements per partition */

static struct isa_ap tile(uint8_t mem, uint64_t off, uint32_t dtype, uint32_t n)
{
    struct isa_ap ap = {0};
    ap.mem = mem;
    ap.dtype = (uint8_t)dtype;
    ap.start_part = 0;
    ap.num_part = 128;
    ap.part_step = 1;
    ap.offset = off;
    ap.ndims = 1;
    ap.dim[0].step = 1;
    ap.dim[0].count = n;
    return ap;
}

/* CPU seconds of one run of the n instructions at code on engine e. */
static double run(struct core *core, struct isa_insn *code, size_t n, enum isa_engine e)
{
    return bench_core_best(core, code, n, e, 1, "bench-mx");
}

static void fill_sbuf(struct core *core)
{
    uint32_t seed = 1;
    for (size_t i = 0; i < (size_t)128 * core->sbuf_part_bytes; i++) {
        seed = seed * 1103515245u + 12345u;
        uint8_t b = (uint8_t)(seed >> 16);
        core->sbuf[i] = (b & 0x7f) == 0x7f ? 0x30 : b; /* finite fp8 codes / bf16 halves */
    }
}

static double time_matmul(struct core *core, struct isa_insn *code)
{
    for (int i = 0; i < REPS; i++) {
        struct isa_insn *q = &code[i];
        if (isa_insn_init(q, ISA_ENG_PE, ISA_OP_nc_matmul_mx) != EMU_OK)
            bench_die("bench-mx", "isa_insn_init");
        q->ap[0] = tile(ISA_MEM_PSUM, 0, ISA_DT_F32, MM_N);
        q->ap[1] = tile(ISA_MEM_SBUF, 0, ISA_DT_FP8E4FNX4, MM_M);
        q->ap[2] = tile(ISA_MEM_SBUF, 4096, ISA_DT_FP8E4FNX4, MM_N);
        q->ap[3] = tile(ISA_MEM_SBUF, 8192, ISA_DT_U8, MM_M);
        q->ap[4] = tile(ISA_MEM_SBUF, 8192 + 512, ISA_DT_U8, MM_N);
        for (uint32_t p = 0; p < 128; p++) /* moderate scales: finite products */
            memset(core->sbuf + (size_t)p * core->sbuf_part_bytes + 8192, 127, 1024);
    }
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t = run(core, code, REPS, ISA_ENG_PE);
        best = t < best ? t : best;
    }
    return best / REPS;
}

static double time_sgemm(void)
{
    const int k = 4 * MM_K;
    float *a = malloc((size_t)k * MM_M * 4), *b = malloc((size_t)k * MM_N * 4),
          *c = malloc((size_t)MM_M * MM_N * 4);
    for (size_t i = 0; i < (size_t)k * MM_N; i++) {
        b[i] = (float)(i % 13) - 6.0f;
        if (i < (size_t)k * MM_M)
            a[i] = (float)(i % 7) - 3.0f;
    }
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = bench_cpu_s();
        for (int i = 0; i < REPS; i++)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, MM_M, MM_N, k, 1.0f, a, MM_M, b,
                        MM_N, 0.0f, c, MM_N);
        double t = bench_cpu_s() - t0;
        best = t < best ? t : best;
    }
    free(a), free(b), free(c);
    return best / REPS;
}

static double time_quantize(struct core *core, struct isa_insn *code)
{
    uint32_t seed = 3; /* bf16 source: values in [-4, 4), as activations are */
    for (uint32_t p = 0; p < 128; p++) {
        uint16_t *row = (uint16_t *)(void *)(core->sbuf + (size_t)p * core->sbuf_part_bytes + 32768);
        for (uint32_t i = 0; i < Q_F; i++) {
            seed = seed * 1103515245u + 12345u;
            row[i] = num_f32_to_bf16(((float)(seed >> 9) / 4194304.0f - 1.0f) * 4.0f);
        }
    }
    for (int i = 0; i < REPS; i++) {
        struct isa_insn *q = &code[i];
        if (isa_insn_init(q, ISA_ENG_DVE, ISA_OP_quantize_mx) != EMU_OK)
            bench_die("bench-mx", "isa_insn_init");
        q->ap[0] = tile(ISA_MEM_SBUF, 16384, ISA_DT_FP8E4FNX4, Q_F / 4);
        q->ap[1] = tile(ISA_MEM_SBUF, 16384 + 4 * Q_F / 4, ISA_DT_U8, Q_F / 4);
        q->ap[2] = tile(ISA_MEM_SBUF, 32768, ISA_DT_BF16, Q_F);
    }
    double best = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double t = run(core, code, REPS, ISA_ENG_DVE);
        best = t < best ? t : best;
    }
    return best / REPS;
}

int main(void)
{
    openblas_set_num_threads(1);
    par_configure(1); /* one host thread, as OpenBLAS (thread CPU time is measured) */
    struct core *core = NULL;
    struct isa_insn *code = calloc(REPS, sizeof *code);
    if (code == NULL || core_create(4, &core) != EMU_OK)
        bench_die("bench-mx", "out of memory");
    fill_sbuf(core);
    double flops = 2.0 * (4.0 * MM_K) * MM_M * MM_N;
    double tm = time_matmul(core, code), ts = time_sgemm();
    printf("bench-mx: nc_matmul_mx %u(K x4) x %u(M) x %u(N) fp8e4fn x4 -> f32\n", MM_K, MM_M, MM_N);
    printf("  nc_matmul_mx   %9.1f us  %6.1f GFLOP/s\n", tm * 1e6, flops / tm * 1e-9);
    printf("  OpenBLAS sgemm %9.1f us  %6.1f GFLOP/s (same logical shape, 1 thread)\n", ts * 1e6,
           flops / ts * 1e-9);
    printf("  ratio nc_matmul_mx / sgemm: %.2f (target >= 0.5)\n", ts / tm);
    size_t bytes = (size_t)128 * Q_F * 2;
    double tq = time_quantize(core, code), tc = bench_memcpy_best(bytes, 20);
    printf("bench-mx: quantize_mx [128 x %u] bf16 -> fp8e4fn x4 + scales\n", Q_F);
    printf("  quantize_mx    %9.1f us  %6.2f GB/s of input\n", tq * 1e6, bytes / tq * 1e-9);
    printf("  memcpy         %9.1f us  %6.2f GB/s\n", tc * 1e6, bytes / tc * 1e-9);
    printf("  ratio memcpy / quantize_mx: %.2f (target >= 0.25)\n", tc / tq);
    core_destroy(core);
    free(code);
    return 0;
}
