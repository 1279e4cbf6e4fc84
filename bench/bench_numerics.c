/*
 * bench_numerics.c: throughput of the numerics hot paths on 32 MiB fp32
 * arrays (8 Mi elements): f32->bf16, bf16->f32, f32->fp16, fp16->f32,
 * f32->fp8_e4, fp8_e4->f32, and stochastic f32->bf16, at every ISA level
 * the CPU has (numerics.h: portable C, AVX2, AVX-512). Each figure is
 * (bytes read + bytes written) / time, best of several runs, printed with
 * its ratio to memcpy of 32 MiB (32 MiB read + 32 MiB written) measured in
 * the same run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu/num/numerics.h"

#define N_ELEMS ((size_t)8 << 20) /* 32 MiB of fp32 */
#define REPS 7

/* One conversion to time. */
struct bench_case {
    const char *name;   /* printed label */
    uint32_t src_dt;    /* source dtype */
    uint32_t dst_dt;    /* destination dtype */
    bool stochastic;    /* store with stochastic rounding */
};

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Best time of REPS memcpy calls of n bytes. */
static double time_memcpy(void *dst, const void *src, size_t n)
{
    double best = 1e30;
    for (int r = 0; r < REPS; r++) {
        double t0 = now_sec();
        memcpy(dst, src, n);
        double t = now_sec() - t0;
        best = t < best ? t : best;
    }
    return best;
}

/* Best time of REPS conversions of N_ELEMS elements. */
static double time_case(const struct bench_case *c, int isa, void *dst, const void *src)
{
    struct num_round rnd = {.mode = NUM_ROUND_STOCHASTIC, .seed = 1};
    double best = 1e30;
    num_set_isa_limit(isa);
    for (int r = 0; r < REPS; r++) {
        double t0 = now_sec();
        emu_status st = num_convert_ex(dst, c->dst_dt, 1, src, c->src_dt, 1, N_ELEMS,
                                       c->stochastic ? &rnd : NULL);
        double t = now_sec() - t0;
        if (st != EMU_OK) {
            fprintf(stderr, "bench-numerics: %s failed\n", c->name);
            exit(1);
        }
        best = t < best ? t : best;
    }
    num_set_isa_limit(NUM_ISA_AVX512);
    return best;
}

int main(void)
{
    size_t bytes = N_ELEMS * 4;
    float *f32 = malloc(bytes);
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    if (f32 == NULL || a == NULL || b == NULL) {
        fprintf(stderr, "bench-numerics: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < N_ELEMS; i++)
        f32[i] = (float)((double)(i % 100003) * 0.0137 - 600.0);
    memset(a, 0, bytes);
    memset(b, 0, bytes);
    /* sources of the narrow types, made once */
    unsigned char *bf16 = malloc(bytes / 2), *f16 = malloc(bytes / 2), *e4 = malloc(bytes / 4);
    if (bf16 == NULL || f16 == NULL || e4 == NULL)
        return 1;
    num_convert(bf16, NUM_DT_BF16, f32, NUM_DT_FP32, N_ELEMS);
    num_convert(f16, NUM_DT_FP16, f32, NUM_DT_FP32, N_ELEMS);
    num_convert(e4, NUM_DT_FP8_E4, f32, NUM_DT_FP32, N_ELEMS);

    double t_mc = time_memcpy(a, f32, bytes);
    double gbs_mc = 2.0 * (double)bytes / t_mc / 1e9;
    printf("bench-numerics: %zu elements (32 MiB fp32), best of %d; best ISA level: %s\n",
           N_ELEMS, REPS, num_impl_name());
    printf("  %-31s %7.2f GB/s  (1.00x)\n", "memcpy 32 MiB", gbs_mc);

    const struct bench_case cases[] = {
        {"f32 -> bf16", NUM_DT_FP32, NUM_DT_BF16, false},
        {"bf16 -> f32", NUM_DT_BF16, NUM_DT_FP32, false},
        {"f32 -> fp16", NUM_DT_FP32, NUM_DT_FP16, false},
        {"fp16 -> f32", NUM_DT_FP16, NUM_DT_FP32, false},
        {"f32 -> fp8_e4", NUM_DT_FP32, NUM_DT_FP8_E4, false},
        {"fp8_e4 -> f32", NUM_DT_FP8_E4, NUM_DT_FP32, false},
        {"f32 -> bf16 stochastic", NUM_DT_FP32, NUM_DT_BF16, true},
    };
    static const char *const isa_names[] = {"portable", "avx2", "avx512"};
    int top = num_isa_level();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bench_case *c = &cases[i];
        const void *src = c->src_dt == NUM_DT_FP32 ? (const void *)f32
                          : c->src_dt == NUM_DT_BF16 ? (const void *)bf16
                          : c->src_dt == NUM_DT_FP16 ? (const void *)f16
                                                     : (const void *)e4;
        double moved = (double)N_ELEMS *
                       (double)(num_dtype_size(c->src_dt) + num_dtype_size(c->dst_dt));
        for (int isa = c->stochastic ? top : NUM_ISA_PORTABLE; isa <= top; isa++) {
            double t = time_case(c, isa, b, src);
            double gbs = moved / t / 1e9;
            printf("  %-22s %-8s %7.2f GB/s  (%.2fx memcpy)  %6.2f ms\n", c->name,
                   isa_names[isa], gbs, gbs / gbs_mc, t * 1e3);
        }
    }
    free(f32);
    free(a);
    free(b);
    free(bf16);
    free(f16);
    free(e4);
    return 0;
}
