/*
 * test_exec_dma.c: the DMA instructions and NEFF descriptors against
 * plain C references: copies between SBUF, PSUM and HBM in different
 * shapes and strides, casts, add/fma/min/max (float and exact integer),
 * in-place operands, transposes, dma_compute reductions, indirect
 * gather/scatter with oob error/skip (by rows, and a one-row shift), dma_trigger over a hand-built
 * descriptor list (semaphores, events, CCE sources, constants), large
 * transfers split across host threads with the same bits, the error and
 * out-of-bounds cases, NeuronCore-v4's SBUF read-add-write
 * (op=accumulate) and DMA priority.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/par.h"
#include "emu/isa/isa_generation.h"
#include "emu/num/numerics.h"
#include "exec_harness.h"

static int setup(void **state)
{
    *state = harness_new(2);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    return 0;
}

static float rnd(uint64_t seed, uint64_t i)
{
    return (float)((double)(num_rng_u64(seed, i) >> 11) * 0x1p-53 * 200.0 - 100.0);
}

static uint32_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

static struct isa_insn *add_copy(struct harness *h, struct isa_ap dst, struct isa_ap src,
                                 unsigned op)
{
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_dma_copy);
    in->ap[0] = dst;
    in->ap[1] = src;
    in->enums[0] = (uint8_t)op;
    return in;
}

/* HBM [1 x 800] int32 -> SBUF [8 x 100] -> HBM [4 x 200] (row step 256): bit copies, reshaped. */
static void test_copy_shapes(void **state)
{
    struct harness *h = *state;
    static int32_t in[800], out[4 * 256];
    for (int i = 0; i < 800; i++)
        in[i] = (int32_t)(uint32_t)num_rng_u64(1, i);
    memset(out, 0, sizeof out);
    harness_var(h, 1, "in", in, sizeof in);
    harness_var(h, 2, "out", out, sizeof out);
    const int32_t one[1][2] = {{1, 800}}, row[1][2] = {{1, 200}};
    add_copy(h, harness_tile(ISA_MEM_SBUF, 4, 8, 64, ISA_DT_I32, 100),
             harness_hbm(1, 0, 1, 0, ISA_DT_I32, 1, one), ISA_DMAOP_copy);
    add_copy(h, harness_hbm(2, 0, 4, 256, ISA_DT_I32, 1, row),
             harness_tile(ISA_MEM_SBUF, 4, 8, 64, ISA_DT_I32, 100), ISA_DMAOP_copy);
    assert_int_equal(harness_run(h), EMU_OK);
    for (int p = 0; p < 8; p++)
        assert_memory_equal(harness_sbuf_ptr(h, 4 + p, 64), &in[p * 100], 400);
    for (int r = 0; r < 4; r++) {
        assert_memory_equal(&out[r * 256], &in[r * 200], 800);
        assert_int_equal(out[r * 256 + 200], 0);
    }
}

/* Casts through fp32 with RNE, a negative-step source, PSUM as a side. */
static void test_copy_casts(void **state)
{
    struct harness *h = *state;
    static float in[4 * 64];
    static uint16_t bf[4 * 64];
    static int32_t ints[4 * 64];
    for (int i = 0; i < 4 * 64; i++)
        in[i] = rnd(2, i) * (i % 7 == 0 ? 1e8f : 1.0f);
    harness_var(h, 1, "in", in, sizeof in);
    harness_var(h, 2, "bf", bf, sizeof bf);
    harness_var(h, 3, "ints", ints, sizeof ints);
    const int32_t fwd[1][2] = {{1, 64}}, rev[1][2] = {{-1, 64}};
    /* HBM fp32 -> PSUM fp32 (rows reversed in the free dim) -> SBUF bf16 -> HBM bf16 */
    add_copy(h, harness_tile(ISA_MEM_PSUM, 0, 4, 0, ISA_DT_F32, 64),
             harness_hbm(1, 63 * 4, 4, 64, ISA_DT_F32, 1, rev), ISA_DMAOP_copy);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_BF16, 64),
             harness_tile(ISA_MEM_PSUM, 0, 4, 0, ISA_DT_F32, 64), ISA_DMAOP_cast);
    add_copy(h, harness_hbm(2, 0, 4, 64, ISA_DT_BF16, 1, fwd),
             harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_BF16, 64), ISA_DMAOP_copy);
    add_copy(h, harness_hbm(3, 0, 4, 64, ISA_DT_I32, 1, fwd),
             harness_hbm(1, 0, 4, 64, ISA_DT_F32, 1, fwd), ISA_DMAOP_cast);
    assert_int_equal(harness_run(h), EMU_OK);
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 64; i++) {
            assert_int_equal(bf[r * 64 + i], num_f32_to_bf16(in[r * 64 + 63 - i]));
            assert_int_equal(ints[r * 64 + i], (int32_t)num_f32_to_int(ISA_DT_I32, in[r * 64 + i]));
        }
}

/* add, fma, min, max read-modify-write; in place; NaN gives the default NaN. */
static void test_copy_arith(void **state)
{
    struct harness *h = *state;
    const unsigned ops[] = {ISA_DMAOP_add, ISA_DMAOP_fma, ISA_DMAOP_min, ISA_DMAOP_max};
    float d0[64], s[64];
    uint16_t sb[64];
    for (int i = 0; i < 64; i++) {
        d0[i] = rnd(3, i);
        sb[i] = num_f32_to_bf16(rnd(4, i));
        s[i] = num_bf16_to_f32(sb[i]);
    }
    d0[5] = NAN;
    for (int o = 0; o < 4; o++) {
        harness_clear(h);
        memcpy(harness_sbuf_ptr(h, 1, 0), d0, sizeof d0);
        memcpy(harness_sbuf_ptr(h, 2, 0), sb, sizeof sb);
        struct isa_ap dst = harness_tile(ISA_MEM_SBUF, 1, 1, 0, ISA_DT_F32, 64);
        struct isa_ap src = harness_tile(ISA_MEM_SBUF, 2, 1, 0, ISA_DT_BF16, 64);
        struct isa_insn *in = add_copy(h, dst, src, ops[o]);
        if (ops[o] == ISA_DMAOP_fma)
            in->fimm[0] = 0.375f;
        assert_int_equal(harness_run(h), EMU_OK);
        for (int i = 0; i < 64; i++) {
            float want = ops[o] == ISA_DMAOP_add   ? d0[i] + s[i]
                         : ops[o] == ISA_DMAOP_fma ? fmaf(s[i], 0.375f, d0[i])
                         : ops[o] == ISA_DMAOP_min ? (s[i] < d0[i] ? s[i] : d0[i])
                                                   : (s[i] > d0[i] ? s[i] : d0[i]);
            uint32_t w = isnan(want) ? 0x7fc00000u : f32_bits(want), got;
            memcpy(&got, harness_sbuf_ptr(h, 1, 4 * i), 4);
            assert_int_equal(got, w);
        }
    }
    /* in place: x += x */
    harness_clear(h);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 2, 1, 0, ISA_DT_BF16, 64),
             harness_tile(ISA_MEM_SBUF, 2, 1, 0, ISA_DT_BF16, 64), ISA_DMAOP_add);
    assert_int_equal(harness_run(h), EMU_OK);
    for (int i = 0; i < 64; i++) {
        uint16_t got;
        memcpy(&got, harness_sbuf_ptr(h, 2, 2 * i), 2);
        assert_int_equal(got, num_f32_to_bf16(s[i] * 2.0f));
    }
}

/* Large transfers are split across host threads (emu/core/par.h): with
 * 1 and 3 threads, a cast HBM fp32 -> SBUF bf16, a bit copy back to HBM,
 * an add from HBM into HBM and an overlapping (so unsplit) shift within
 * HBM give the same bits, and the cast is the reference's. */
enum { BIG_P = 128, BIG_F = 4096, BIG_N = BIG_P * BIG_F };

static void big_run(struct harness *h, unsigned threads, float *in, uint16_t *bf, float *sum,
                    int32_t *shift)
{
    par_configure(threads);
    for (size_t i = 0; i < BIG_N; i++) {
        in[i] = rnd(20, i);
        sum[i] = rnd(21, i);
        shift[i] = (int32_t)i;
    }
    memset(bf, 0, BIG_N * 2);
    harness_clear(h);
    h->prog.nvars = 0; /* this run's buffers only */
    harness_var(h, 1, "in", in, BIG_N * 4);
    harness_var(h, 2, "bf", bf, BIG_N * 2);
    harness_var(h, 3, "sum", sum, BIG_N * 4);
    harness_var(h, 4, "shift", shift, BIG_N * 4);
    const int32_t row[1][2] = {{1, BIG_F}}, flat[1][2] = {{1, BIG_N - 1000}};
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_BF16, BIG_F),
             harness_hbm(1, 0, BIG_P, BIG_F, ISA_DT_F32, 1, row), ISA_DMAOP_cast);
    add_copy(h, harness_hbm(2, 0, BIG_P, BIG_F, ISA_DT_BF16, 1, row),
             harness_tile(ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_BF16, BIG_F), ISA_DMAOP_copy);
    add_copy(h, harness_hbm(3, 0, BIG_P, BIG_F, ISA_DT_F32, 1, row),
             harness_hbm(1, 0, BIG_P, BIG_F, ISA_DT_F32, 1, row), ISA_DMAOP_add);
    add_copy(h, harness_hbm(4, 1000 * 4, 1, 0, ISA_DT_I32, 1, flat),
             harness_hbm(4, 0, 1, 0, ISA_DT_I32, 1, flat), ISA_DMAOP_copy);
    assert_int_equal(harness_run(h), EMU_OK);
    par_configure(0);
}

static void test_copy_large_threads(void **state)
{
    struct harness *h = *state;
    float *in = malloc(BIG_N * 4), *sum[2] = {malloc(BIG_N * 4), malloc(BIG_N * 4)};
    uint16_t *bf[2] = {malloc(BIG_N * 2), malloc(BIG_N * 2)};
    int32_t *shift[2] = {malloc(BIG_N * 4), malloc(BIG_N * 4)};
    assert_non_null(in);
    for (int t = 0; t < 2; t++) {
        assert_true(sum[t] && bf[t] && shift[t]);
        big_run(h, t == 0 ? 1 : 3, in, bf[t], sum[t], shift[t]);
    }
    for (size_t i = 0; i < BIG_N; i += 997)
        assert_int_equal(bf[0][i], num_f32_to_bf16(in[i]));
    assert_memory_equal(bf[0], bf[1], BIG_N * 2);
    assert_memory_equal(sum[0], sum[1], BIG_N * 4);
    assert_memory_equal(shift[0], shift[1], BIG_N * 4);
    free(in);
    for (int t = 0; t < 2; t++)
        free(sum[t]), free(bf[t]), free(shift[t]);
}

/* int32 min/max stay exact beyond 2^24. */
static void test_copy_int_minmax(void **state)
{
    struct harness *h = *state;
    int32_t a[3] = {16777217, -2147483647 - 1, 5}, b[3] = {16777219, 2147483647, 5};
    memcpy(harness_sbuf_ptr(h, 0, 0), a, sizeof a);
    memcpy(harness_sbuf_ptr(h, 0, 64), b, sizeof b);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_I32, 3),
             harness_tile(ISA_MEM_SBUF, 0, 1, 64, ISA_DT_I32, 3), ISA_DMAOP_max);
    assert_int_equal(harness_run(h), EMU_OK);
    int32_t got[3];
    memcpy(got, harness_sbuf_ptr(h, 0, 0), sizeof got);
    assert_int_equal(got[0], 16777219);
    assert_int_equal(got[1], 2147483647);
    assert_int_equal(got[2], 5);
}

static void test_copy_errors(void **state)
{
    struct harness *h = *state;
    float mem[16] = {0};
    harness_var(h, 1, "small", mem, sizeof mem);
    const int32_t d17[1][2] = {{1, 17}};
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_F32, 17),
             harness_hbm(1, 0, 1, 0, ISA_DT_F32, 1, d17), ISA_DMAOP_copy);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "'small'"));
    harness_clear(h);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 2, 0, ISA_DT_F32, 8),
             harness_tile(ISA_MEM_SBUF, 4, 3, 0, ISA_DT_F32, 5), ISA_DMAOP_copy);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "element counts differ"));
    harness_clear(h);
    struct isa_insn *in = add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_F32, 8),
                                   harness_tile(ISA_MEM_SBUF, 1, 1, 0, ISA_DT_F32, 8),
                                   ISA_DMAOP_add);
    in->fimm[0] = 2.0f;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "op=fma"));
}

/* dma_transpose and dma_copy op=transpose: HBM [5 x 7] bf16 -> SBUF [7 x 5]. */
static void test_transpose(void **state)
{
    struct harness *h = *state;
    uint16_t m[5][7];
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 7; c++)
            m[r][c] = (uint16_t)num_rng_u64(5, r * 7 + c); /* any bits, NaNs included */
    harness_var(h, 1, "m", m, sizeof m);
    const int32_t d7[1][2] = {{1, 7}};
    struct isa_insn *in = harness_add(h, ISA_ENG_ACT, ISA_OP_dma_transpose);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 10, 7, 32, ISA_DT_BF16, 5);
    in->ap[1] = harness_hbm(1, 0, 5, 7, ISA_DT_BF16, 1, d7);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 5, 256, ISA_DT_BF16, 7),
             harness_tile(ISA_MEM_SBUF, 10, 7, 32, ISA_DT_BF16, 5), ISA_DMAOP_transpose)
        ->wait[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, 1, 1};
    in->signal[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_SEMOP_add, 1, 1};
    assert_int_equal(harness_run(h), EMU_OK);
    for (int r = 0; r < 5; r++)
        for (int c = 0; c < 7; c++) {
            assert_memory_equal(harness_sbuf_ptr(h, 10 + c, 32 + 2 * r), &m[r][c], 2);
            assert_memory_equal(harness_sbuf_ptr(h, r, 256 + 2 * c), &m[r][c], 2);
        }
    harness_clear(h);
    in = harness_add(h, ISA_ENG_SP, ISA_OP_dma_transpose);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 10, 7, 32, ISA_DT_F16, 5);
    in->ap[1] = harness_hbm(1, 0, 5, 7, ISA_DT_BF16, 1, d7);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 10, 5, 32, ISA_DT_BF16, 7);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "transposed shape"));
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 10, 7, 32, ISA_DT_BF16, 4); /* 28 of 35 elements */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "elements"));
}

/* dst = src0*s0 + src1*s1 + src2*s2 (fmaf in order), and max. */
static void test_compute(void **state)
{
    struct harness *h = *state;
    float a[40], b[40], c[40];
    for (int i = 0; i < 40; i++) {
        a[i] = rnd(6, i), b[i] = rnd(7, i), c[i] = rnd(8, i);
        memcpy(harness_sbuf_ptr(h, i % 4, 4 * (i / 4)), &a[i], 4);     /* [4 x 10] */
    }
    harness_var(h, 1, "b", b, sizeof b);
    harness_var(h, 2, "c", c, sizeof c);
    const int32_t d40[1][2] = {{1, 40}}, d20[1][2] = {{1, 20}};
    for (int op = 0; op < 2; op++) {
        harness_clear(h);
        struct isa_insn *in = harness_add(h, ISA_ENG_POOL, ISA_OP_dma_compute);
        in->ap[0] = harness_tile(ISA_MEM_SBUF, 20, 2, 0, ISA_DT_F32, 20);
        in->ap[1] = harness_sbuf(0, 4, 0, ISA_DT_F32, 1, (const int32_t[1][2]){{1, 10}});
        in->ap[2] = harness_hbm(1, 0, 1, 0, ISA_DT_F32, 1, d40);
        in->ap[4] = harness_hbm(2, 0, 2, 20, ISA_DT_F32, 1, d20);
        in->enums[0] = op == 0 ? ISA_ALU_add : ISA_ALU_max;
        in->fimm[0] = 0.5f, in->fimm[1] = -3.0f, in->fimm[3] = 1.25f;
        assert_int_equal(harness_run(h), EMU_OK);
        for (int i = 0; i < 40; i++) {
            /* source 0 in stream order: partition i/10, element i%10 */
            float a0 = a[(i % 10) * 4 + i / 10];
            float want;
            if (op == 0)
                want = fmaf(c[i], 1.25f, fmaf(b[i], -3.0f, fmaf(a0, 0.5f, -0.0f)));
            else {
                want = a0 * 0.5f;
                want = b[i] * -3.0f > want ? b[i] * -3.0f : want;
                want = c[i] * 1.25f > want ? c[i] * 1.25f : want;
            }
            float got;
            memcpy(&got, harness_sbuf_ptr(h, 20 + i / 20, 4 * (i % 20)), 4);
            assert_int_equal(f32_bits(got), f32_bits(want));
        }
    }
    harness_clear(h);
    struct isa_insn *in = harness_add(h, ISA_ENG_POOL, ISA_OP_dma_compute);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 20, 2, 0, ISA_DT_F32, 20);
    in->ap[1] = harness_hbm(1, 0, 1, 0, ISA_DT_F32, 1, (const int32_t[1][2]){{1, 39}});
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    in->ap[1] = harness_hbm(1, 0, 1, 0, ISA_DT_F32, 1, d40);
    in->enums[0] = ISA_ALU_multiply;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "reduce_op"));
}

/* Gather rows of HBM by an SBUF index, scatter them back; oob error/skip. */
static void test_indirect(void **state)
{
    struct harness *h = *state;
    static float data[10][8], back[10][8];
    for (int r = 0; r < 10; r++)
        for (int c = 0; c < 8; c++)
            data[r][c] = (float)(r * 100 + c);
    memset(back, 0, sizeof back);
    harness_var(h, 1, "data", data, sizeof data);
    harness_var(h, 2, "back", back, sizeof back);
    const uint32_t idx[4] = {7, 2, 9, 0};
    for (int p = 0; p < 4; p++)
        memcpy(harness_sbuf_ptr(h, 40 + p, 0), &idx[p], 4);
    const int32_t d8[1][2] = {{1, 8}};
    struct isa_insn *g = add_copy(h, harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_F32, 8),
                                  harness_hbm(1, 0, 4, 8, ISA_DT_F32, 1, d8), ISA_DMAOP_copy);
    g->ap[2] = harness_tile(ISA_MEM_SBUF, 40, 4, 0, ISA_DT_U32, 1);
    g->enums[1] = ISA_INDIR_src;
    struct isa_insn *s = add_copy(h, harness_hbm(2, 0, 4, 8, ISA_DT_F32, 1, d8),
                                  harness_tile(ISA_MEM_SBUF, 0, 4, 0, ISA_DT_F32, 8),
                                  ISA_DMAOP_copy);
    s->ap[2] = g->ap[2];
    s->enums[1] = ISA_INDIR_dst;
    assert_int_equal(harness_run(h), EMU_OK);
    for (int p = 0; p < 4; p++) {
        assert_memory_equal(harness_sbuf_ptr(h, p, 0), data[idx[p]], 32);
        assert_memory_equal(back[idx[p]], data[idx[p]], 32);
    }
    assert_true(back[1][0] == 0.0f);
    const uint32_t bad = 10;
    memcpy(harness_sbuf_ptr(h, 41, 0), &bad, 4);
    memset(harness_sbuf_ptr(h, 1, 0), 0, 32);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "index 10"));
    g->enums[2] = ISA_OOB_skip;
    s->enums[2] = ISA_OOB_skip;
    assert_int_equal(harness_run(h), EMU_OK);
    float zero[8] = {0};
    assert_memory_equal(harness_sbuf_ptr(h, 1, 0), zero, 32); /* skipped row untouched */
    assert_memory_equal(harness_sbuf_ptr(h, 2, 0), data[9], 32);
    g->imm[0].i = 1;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "indirect_dim"));
}

/* One indexed row shifts its whole pattern by index[0] x the row step, and
 * the other side walks all its rows (a run-time scalar offset): a gather of
 * a 3 x 4 block of data at element 42 (row step 1, so not a whole row of
 * data) into 3 partitions, its scatter back, and an index out of range. */
static void test_indirect_shift(void **state)
{
    struct harness *h = *state;
    static float data[10][8], back[10][8];
    for (int r = 0; r < 10; r++)
        for (int c = 0; c < 8; c++)
            data[r][c] = (float)(r * 100 + c);
    memset(back, 0, sizeof back);
    harness_var(h, 1, "data", data, sizeof data);
    harness_var(h, 2, "back", back, sizeof back);
    const int32_t at = 5 * 8 + 2;
    memcpy(harness_sbuf_ptr(h, 45, 0), &at, 4);
    const int32_t blk[2][2] = {{8, 3}, {1, 4}};
    struct isa_insn *g = add_copy(h, harness_tile(ISA_MEM_SBUF, 50, 3, 0, ISA_DT_F32, 4),
                                  harness_hbm(1, 0, 1, 1, ISA_DT_F32, 2, blk), ISA_DMAOP_copy);
    g->ap[2] = harness_tile(ISA_MEM_SBUF, 45, 1, 0, ISA_DT_I32, 1);
    g->enums[1] = ISA_INDIR_src;
    struct isa_insn *s = add_copy(h, harness_hbm(2, 0, 1, 1, ISA_DT_F32, 2, blk),
                                  harness_tile(ISA_MEM_SBUF, 50, 3, 0, ISA_DT_F32, 4),
                                  ISA_DMAOP_copy);
    s->ap[2] = g->ap[2];
    s->enums[1] = ISA_INDIR_dst;
    assert_int_equal(harness_run(h), EMU_OK);
    for (int p = 0; p < 3; p++) {
        assert_memory_equal(harness_sbuf_ptr(h, 50 + p, 0), &data[5 + p][2], 16);
        assert_memory_equal(&back[5 + p][2], &data[5 + p][2], 16);
    }
    assert_true(back[5][1] == 0.0f && back[5][6] == 0.0f && back[8][2] == 0.0f);
    const int32_t far = 8 * 8 + 2;  /* its last row would be row 10 */
    memcpy(harness_sbuf_ptr(h, 45, 0), &far, 4);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "index 66"));
    g->ap[0] = harness_tile(ISA_MEM_SBUF, 50, 2, 0, ISA_DT_F32, 4);   /* 8 elements, not 12 */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "one row of all the elements"));
}

/* ---- descriptors ------------------------------------------------------------ */

static char name_in[] = "in", name_in2[] = "in2", name_out[] = "out", name_sb[] = "sb";

static struct neff_dma_ap dap(char *var, int32_t index, uint64_t off, uint32_t dtype,
                              uint32_t ndim, const int64_t steps[], const uint64_t sizes[])
{
    struct neff_dma_ap a;
    memset(&a, 0, sizeof a);
    a.var = var, a.var_index = index, a.off = off, a.dtype = dtype, a.ndim = ndim;
    for (uint32_t d = 0; d < ndim; d++)
        a.steps[d] = steps[d], a.sizes[d] = sizes[d];
    return a;
}

static void test_trigger(void **state)
{
    struct harness *h = *state;
    static float in[64], in2[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = rnd(9, i), in2[i] = rnd(10, i);
    struct core_var byidx[4] = {
        {0, name_in, (uint8_t *)in, sizeof in},
        {1, name_sb, h->core->sbuf, (uint64_t)128 * h->core->sbuf_part_bytes},
        {2, name_out, (uint8_t *)out, sizeof out},
        {3, name_in2, (uint8_t *)in2, sizeof in2},
    };
    const int64_t st2[2] = {1, h->core->sbuf_part_bytes};
    const uint64_t sz2[2] = {64, 4}; /* 4 partitions x 16 floats */
    const int64_t st1[1] = {1};
    const uint64_t sz1[1] = {256};
    struct neff_dma_ap from[6] = {
        dap(name_in, 0, 0, NEFF_DTYPE_FLOAT32, 1, st1, sz1),
        dap(name_sb, 1, 128, NEFF_DTYPE_FLOAT32, 2, st2, sz2),
        dap(name_in, 0, 0, NEFF_DTYPE_FLOAT32, 1, st1, sz1),
        dap(name_in2, 3, 0, NEFF_DTYPE_FLOAT32, 1, st1, sz1),
        dap(name_in, 0, 0, NEFF_DTYPE_FLOAT32, 1, st1, sz1),
        dap(name_in, 0, 0, NEFF_DTYPE_FLOAT32, 2, (const int64_t[2]){1, 64},
            (const uint64_t[2]){64, 4}),
    };
    struct neff_dma_desc d[5];
    memset(d, 0, sizeof d);
    /* id 5: HBM in -> SBUF partitions 0..3 at byte 128, semaphore 3 */
    d[0].id = 5, d[0].op = NEFF_DMA_COPY, d[0].from = &from[0], d[0].n_from = 1;
    d[0].to = from[1], d[0].has_semaphore = true, d[0].semaphore = 3;
    /* id 5 again: SBUF back to out as a cast to fp32 (same), event 7 */
    d[1].id = 5, d[1].op = NEFF_DMA_CAST, d[1].from = &from[1], d[1].n_from = 1;
    d[1].to = dap(name_out, 2, 0, NEFF_DTYPE_FLOAT32, 1, st1, sz1);
    d[1].has_event = true, d[1].event = 7, d[1].has_semaphore = true, d[1].semaphore = 3;
    /* id 6: CCE fma: in2 = 2*in + 2*in2 */
    d[2].id = 6, d[2].op = NEFF_DMA_FMA, d[2].cce = true, d[2].from = &from[2], d[2].n_from = 2;
    d[2].scale = 2.0, d[2].to = from[3];
    /* id 7: max with constant 0: out = relu(in) */
    d[3].id = 7, d[3].op = NEFF_DMA_MAX, d[3].from = &from[4], d[3].n_from = 1;
    d[3].constant_dtype = NEFF_DTYPE_FLOAT32, d[3].constant = 0.0;
    d[3].to = dap(name_out, 2, 0, NEFF_DTYPE_FLOAT32, 1, st1, sz1);
    /* id 8: transpose [4 x 16] -> [16 x 4] */
    d[4].id = 8, d[4].op = NEFF_DMA_TRANSPOSE, d[4].from = &from[5], d[4].n_from = 1;
    d[4].to = dap(name_sb, 1, 512, NEFF_DTYPE_FLOAT32, 1, st1, sz1);
    h->prog.descs[ISA_ENG_SP] = d;
    h->prog.ndescs[ISA_ENG_SP] = 5;
    h->prog.var_by_index = byidx;
    h->prog.nvar_index = 4;
    static float in2_0[64];
    memcpy(in2_0, in2, sizeof in2);
    const uint32_t ids[] = {5, 6};
    for (int i = 0; i < 2; i++)
        harness_add(h, ISA_ENG_SP, ISA_OP_dma_trigger)->imm[0].i = ids[i];
    struct isa_insn *w = harness_add(h, ISA_ENG_ACT, ISA_OP_nop);
    w->wait[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, 3, 2};
    w->wait[1] = (struct isa_sync){ISA_SYNC_EVENT, ISA_CMP_ge, 7, 1};
    assert_int_equal(harness_run(h), EMU_OK);
    for (int p = 0; p < 4; p++)
        assert_memory_equal(harness_sbuf_ptr(h, p, 128), &in[p * 16], 64);
    assert_memory_equal(out, in, sizeof in);
    for (int i = 0; i < 64; i++)
        assert_int_equal(f32_bits(in2[i]),
                         f32_bits(fmaf(in2_0[i], 2.0f, fmaf(in[i], 2.0f, -0.0f))));
    assert_int_equal(h->core->sem[3], 2);
    harness_clear(h);
    harness_add(h, ISA_ENG_SP, ISA_OP_dma_trigger)->imm[0].i = 7;
    harness_add(h, ISA_ENG_SP, ISA_OP_dma_trigger)->imm[0].i = 8;
    assert_int_equal(harness_run(h), EMU_OK);
    for (int i = 0; i < 64; i++) {
        assert_true(out[i] == (in[i] > 0.0f ? in[i] : 0.0f));
        int r = i / 16, c = i % 16; /* element (r, c) lands at c * 4 + r */
        assert_memory_equal(harness_sbuf_ptr(h, 0, 512 + 4 * (c * 4 + r)), &in[i], 4);
    }
    /* no descriptor with that id on this engine; an OOB pattern; a strided typed pattern */
    harness_clear(h);
    harness_add(h, ISA_ENG_SP, ISA_OP_dma_trigger)->imm[0].i = 99;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "no DMA descriptor"));
    harness_clear(h);
    harness_add(h, ISA_ENG_SP, ISA_OP_dma_trigger)->imm[0].i = 7;
    d[3].to.off = 4;
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    d[3].to.off = 0;
    d[3].to.steps[0] = 2, d[3].to.sizes[0] = 128;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "contiguous"));
}

/* Rank 3 [P, A, B] -> [B, A, P] and rank 4 [P, A, B, C] -> [C, A, B, P]. */
static void test_transpose_rank(void **state)
{
    struct harness *h = *state;
    for (uint32_t p = 0; p < 3; p++)
        for (uint32_t e = 0; e < 60; e++) {
            int16_t x = (int16_t)(p * 1000 + e);
            memcpy(harness_sbuf_ptr(h, p, 2 * e), &x, 2);
        }
    const int32_t d3[2][2] = {{4, 2}, {1, 4}}, d4[3][2] = {{10, 3}, {5, 2}, {1, 5}};
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_dma_transpose);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 8, 4, 0, ISA_DT_I16, 6);
    in->ap[1] = harness_sbuf(0, 3, 0, ISA_DT_I16, 2, d3);
    in = harness_add(h, ISA_ENG_SP, ISA_OP_dma_transpose);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 16, 5, 0, ISA_DT_I16, 12);
    in->ap[1] = harness_sbuf(0, 2, 0, ISA_DT_I16, 3, d4);
    assert_int_equal(harness_run(h), EMU_OK);
    int16_t got;
    for (uint32_t p = 0; p < 3; p++)
        for (uint32_t a = 0; a < 2; a++)
            for (uint32_t b = 0; b < 4; b++) {
                memcpy(&got, harness_sbuf_ptr(h, 8 + b, 2 * (a * 3 + p)), 2);
                assert_int_equal(got, (int16_t)(p * 1000 + a * 4 + b));
            }
    for (uint32_t p = 0; p < 2; p++)
        for (uint32_t a = 0; a < 3; a++)
            for (uint32_t b = 0; b < 2; b++)
                for (uint32_t c = 0; c < 5; c++) {
                    memcpy(&got, harness_sbuf_ptr(h, 16 + c, 2 * ((a * 2 + b) * 2 + p)), 2);
                    assert_int_equal(got, (int16_t)(p * 1000 + a * 10 + b * 5 + c));
                }
}

/* NeuronCore-v4 SBUF read-add-write: dst += src into SBUF, bf16 + bf16
 * (fp32 sum rounded once, RNE) and f32 + f32, from HBM or SBUF; other
 * types, a non-SBUF dst and older cores refused; priority is recorded,
 * gated to v4 and changes no result. */
static void test_accumulate_v4(void **state)
{
    (void)state;
    enum { P = 6, N = 33 };
    struct harness *h = harness_new(4);
    static uint16_t hb[P * N];
    static float hf[P * N];
    for (int i = 0; i < P * N; i++) {
        hb[i] = num_f32_to_bf16(rnd(5, i));
        hf[i] = rnd(6, i);
    }
    harness_var(h, 1, "b", hb, sizeof hb);
    harness_var(h, 2, "f", hf, sizeof hf);
    const int32_t rowb[1][2] = {{1, N}};
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t i = 0; i < N; i++) {
            uint16_t b = num_f32_to_bf16(rnd(7, p * N + i));
            float f = rnd(8, p * N + i);
            memcpy(harness_sbuf_ptr(h, p, 2 * i), &b, 2);
            memcpy(harness_sbuf_ptr(h, p, 1024 + 4 * i), &f, 4);
            memcpy(harness_sbuf_ptr(h, p, 4096 + 4 * i), &f, 4);
        }
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_BF16, N),
             harness_hbm(1, 0, P, N, ISA_DT_BF16, 1, rowb), ISA_DMAOP_accumulate)->imm[1].i = 2;
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, P, 1024, ISA_DT_F32, N),
             harness_hbm(2, 0, P, N, ISA_DT_F32, 1, rowb), ISA_DMAOP_accumulate);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, P, 1024, ISA_DT_F32, N),
             harness_tile(ISA_MEM_SBUF, 0, P, 4096, ISA_DT_F32, N), ISA_DMAOP_accumulate);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < P; p++)
        for (uint32_t i = 0; i < N; i++) {
            uint16_t got_b;
            float got_f;
            memcpy(&got_b, harness_sbuf_ptr(h, p, 2 * i), 2);
            memcpy(&got_f, harness_sbuf_ptr(h, p, 1024 + 4 * i), 4);
            float b0 = num_bf16_to_f32(num_f32_to_bf16(rnd(7, p * N + i)));
            float sum_b = b0 + num_bf16_to_f32(hb[p * N + i]);
            float f0 = rnd(8, p * N + i), sum_f = (f0 + hf[p * N + i]) + f0;
            assert_int_equal(got_b, num_f32_to_bf16(sum_b));
            assert_int_equal(f32_bits(got_f), f32_bits(sum_f));
        }
    /* mixed or integer types, a PSUM dst: refused */
    static const struct { uint32_t dt_dst, dt_src; uint8_t mem; } bad[] = {
        {ISA_DT_F32, ISA_DT_BF16, ISA_MEM_SBUF},
        {ISA_DT_I32, ISA_DT_I32, ISA_MEM_SBUF},
        {ISA_DT_F32, ISA_DT_F32, ISA_MEM_PSUM},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        harness_clear(h);
        add_copy(h, harness_tile(bad[k].mem, 0, P, 0, bad[k].dt_dst, N),
                 harness_tile(ISA_MEM_SBUF, 0, P, 4096, bad[k].dt_src, N), ISA_DMAOP_accumulate);
        assert_int_equal(harness_run(h), EMU_EXEC_ERR);
        assert_non_null(strstr(h->report, "accumulate"));
    }
    harness_free(h);
    h = harness_new(3);
    add_copy(h, harness_tile(ISA_MEM_SBUF, 0, P, 0, ISA_DT_F32, N),
             harness_tile(ISA_MEM_SBUF, 0, P, 4096, ISA_DT_F32, N), ISA_DMAOP_accumulate);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "NeuronCore-v4"));
    harness_free(h);
    /* the loader's generation check */
    struct isa_insn in;
    char what[96];
    assert_int_equal(isa_insn_init(&in, ISA_ENG_SP, ISA_OP_dma_copy), EMU_OK);
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 2);
    in.imm[1].i = 3;
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
    assert_non_null(strstr(what, "priority=3"));
    in.imm[1].i = 0;
    in.enums[0] = ISA_DMAOP_accumulate;
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
    assert_int_equal(isa_insn_init(&in, ISA_ENG_ACT, ISA_OP_dma_transpose), EMU_OK);
    in.imm[0].i = 1;
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copy_shapes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_casts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_arith, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_large_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_int_minmax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transpose, setup, teardown),
        cmocka_unit_test_setup_teardown(test_transpose_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_compute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indirect, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indirect_shift, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trigger, setup, teardown),
        cmocka_unit_test(test_accumulate_v4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
