/*
 * test_exec_pe.c: the Tensor-engine instructions against plain C
 * references: nc_matmul bit-exact with the fmaf definition for every input
 * type, edge shapes, accumulation chains, PSUM partition and bank offsets
 * (also for moving operands packed inside the product, edges cut short),
 * strided operands, tiles, onezero hints, double-row fp8, transpose mode,
 * every kernel level and every host thread count giving the same bits;
 * nc_transpose on PE and DVE; nc_matmul_mx refused; shape, type and bound
 * errors; NeuronCore-v4's wide moving operands (4096 fp32 / 8192 bf16 dst
 * columns) and their gating; nc_matmul_sparse against
 * decompress-then-multiply for every M:N pattern.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/par.h"
#include "emu/isa/isa_args.h"
#include "emu/isa/isa_generation.h"
#include "emu/num/numerics.h"
#include "emu/engines/pe_matmul.h"
#include "exec_harness.h"

#define MAXK 256
#define MAXM 128
#define MAXN 8192 /* NeuronCore-v4: a bf16 dst row of the whole PSUM partition */
#define SB_A 0u        /* SBUF offset of the stationary operand */
#define SB_B 4096u     /* SBUF offset of the moving operand */

static float ta[MAXK * MAXM], tb[MAXK * MAXN], tc[MAXM * MAXN]; /* decoded operands, reference */

static int setup3(void **state)
{
    *state = harness_new(3);
    return 0;
}

static int setup2(void **state)
{
    *state = harness_new(2);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    num_set_isa_limit(NUM_ISA_AVX512);
    return 0;
}

static float rnd_val(uint64_t seed, uint64_t i)
{
    return (float)((double)(num_rng_u64(seed, i) >> 11) * 0x1p-53 * 4.0 - 2.0);
}

static float bits_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* Write rows x n random values of dt at SBUF (part, off) with element step
 * estep; out receives the decoded values (row-major). */
static void put_tile(struct harness *h, uint32_t part, uint32_t rows, uint64_t off, uint32_t dt,
                     uint32_t n, uint32_t estep, uint64_t seed, float *out)
{
    size_t es = num_dtype_size(dt);
    for (uint32_t p = 0; p < rows; p++)
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *q = harness_sbuf_ptr(h, part + p, off + (uint64_t)i * estep * es);
            num_from_f32(dt, q, rnd_val(seed, (uint64_t)p * n + i), NULL, 0);
            out[(size_t)p * n + i] = num_to_f32(dt, q);
        }
}

/* c (m x n) op= a^T b with the definition: fmaf over k in order. */
static void ref_mm(uint32_t k, uint32_t m, uint32_t n, bool acc)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            float x = acc ? tc[(size_t)i * n + j] : 0.0f;
            for (uint32_t kk = 0; kk < k; kk++)
                x = fmaf(ta[(size_t)kk * m + i], tb[(size_t)kk * n + j], x);
            tc[(size_t)i * n + j] = isnan(x) ? bits_f32(PE_CANON_NAN) : x;
        }
}

/* PSUM [m x n] fp32 at (part, off) equals tc bit for bit. */
static void expect_psum(struct harness *h, uint32_t part, uint64_t off, uint32_t m, uint32_t n)
{
    for (uint32_t i = 0; i < m; i++) {
        const uint8_t *row = harness_psum_ptr(h, part + i, off);
        for (uint32_t j = 0; j < n; j++) {
            uint32_t got, want = f32_bits(tc[(size_t)i * n + j]);
            memcpy(&got, row + 4 * j, 4);
            if (got != want)
                fail_msg("psum[%u][%u] = %08x, want %08x", i, j, got, want);
        }
    }
}

static struct isa_insn *add_mm(struct harness *h, uint32_t k, uint32_t m, uint32_t n,
                               uint32_t sdt, uint32_t mdt, uint32_t dpart, uint64_t doff, bool acc)
{
    struct isa_insn *in = harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul);
    in->ap[0] = harness_tile(ISA_MEM_PSUM, dpart, m, doff, ISA_DT_F32, n);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, k, SB_A, sdt, m);
    in->ap[2] = harness_tile(ISA_MEM_SBUF, 0, k, SB_B, mdt, n);
    in->flags = acc ? 1u : 0u;
    return in;
}

/* One matmul of the given shape and types, checked bit-exactly. */
static void check_mm(struct harness *h, uint32_t k, uint32_t m, uint32_t n, uint32_t sdt,
                     uint32_t mdt, uint64_t seed)
{
    harness_clear(h);
    put_tile(h, 0, k, SB_A, sdt, m, 1, seed, ta);
    put_tile(h, 0, k, SB_B, mdt, n, 1, seed + 1, tb);
    add_mm(h, k, m, n, sdt, mdt, 0, 0, false);
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(k, m, n, false);
    expect_psum(h, 0, 0, m, n);
}

static void test_matmul_dtypes(void **state)
{
    struct harness *h = *state;
    const uint32_t pairs[][2] = {
        {ISA_DT_F32, ISA_DT_F32},     {ISA_DT_F32R, ISA_DT_F32},    {ISA_DT_BF16, ISA_DT_BF16},
        {ISA_DT_F16, ISA_DT_F16},     {ISA_DT_BF16, ISA_DT_F16},    {ISA_DT_FP8E3, ISA_DT_FP8E3},
        {ISA_DT_FP8E4, ISA_DT_FP8E5}, {ISA_DT_FP8E5, ISA_DT_BF16},  {ISA_DT_FP8E4, ISA_DT_FP8E4},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        check_mm(h, 128, 128, 512, pairs[i][0], pairs[i][1], 10 + i);
}

static void test_matmul_edge_shapes(void **state)
{
    struct harness *h = *state;
    const uint32_t ks[] = {1, 7, 128}, ms[] = {1, 13, 128}, ns[] = {1, 33, 512};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 3; c++)
                check_mm(h, ks[a], ms[b], ns[c], ISA_DT_BF16, ISA_DT_BF16, 100 + a * 9 + b * 3 + c);
}

/* The PSUM bytes just outside an m x n fp32 tile at partition part, byte
 * off, still hold the 0x5a they were filled with. */
static void expect_psum_border(struct harness *h, uint32_t part, uint64_t off, uint32_t m,
                               uint32_t n)
{
    assert_int_equal(*harness_psum_ptr(h, part - 1, off), 0x5a);
    assert_int_equal(*harness_psum_ptr(h, part + m, off), 0x5a);
    assert_int_equal(*harness_psum_ptr(h, part, off - 1), 0x5a);
    assert_int_equal(*harness_psum_ptr(h, part, off + 4 * n), 0x5a);
}
/* Three matmuls into one PSUM tile at partition 5, bank 3 (+64 bytes):
 * overwrite, then accumulate twice; neighbours stay untouched. */
static void test_matmul_accumulate_offsets(void **state)
{
    struct harness *h = *state;
    const uint32_t k = 32, m = 40, n = 100, part = 5;
    const uint64_t off = 3 * ISA_PSUM_BANK_BYTES + 64;
    memset(h->core->psum, 0x5a, (size_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES);
    for (int step = 0; step < 3; step++) {
        harness_clear(h);
        put_tile(h, 0, k, SB_A, ISA_DT_BF16, m, 1, 200 + step, ta);
        put_tile(h, 0, k, SB_B, ISA_DT_F16, n, 1, 300 + step, tb);
        add_mm(h, k, m, n, ISA_DT_BF16, ISA_DT_F16, part, off, step > 0);
        assert_int_equal(harness_run(h), EMU_OK);
        ref_mm(k, m, n, step > 0);
    }
    expect_psum(h, part, off, m, n);
    expect_psum_border(h, part, off, m, n);
}

/* Moving operands packed inside the product (flat bf16 and fp32): row
 * blocks and column ranges cut short on both edges, dst at partition 5
 * and a bank offset, overwrite then accumulate twice, with 1 and 2 host
 * threads (13 rows: one thread; 121 rows: split); PSUM around the tile
 * stays untouched. */
static void test_matmul_panels_offsets(void **state)
{
    struct harness *h = *state;
    const uint32_t types[] = {ISA_DT_BF16, ISA_DT_F32}, ms[] = {13, 121};
    const uint32_t k = 128, n = 300, part = 5;
    const uint64_t off = ISA_PSUM_BANK_BYTES + 64;
    for (unsigned threads = 1; threads <= 2; threads++) {
        par_configure(threads);
        for (size_t t = 0; t < 2; t++)
            for (size_t mi = 0; mi < 2; mi++) {
                uint32_t m = ms[mi];
                memset(h->core->psum, 0x5a, (size_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES);
                for (int step = 0; step < 3; step++) {
                    harness_clear(h);
                    uint64_t seed = 800 + 10 * t + 3 * mi + (uint64_t)step;
                    put_tile(h, 0, k, SB_A, types[t], m, 1, seed, ta);
                    put_tile(h, 0, k, SB_B, types[t], n, 1, seed + 100, tb);
                    add_mm(h, k, m, n, types[t], types[t], part, off, step > 0);
                    assert_int_equal(harness_run(h), EMU_OK);
                    ref_mm(k, m, n, step > 0);
                }
                expect_psum(h, part, off, m, n);
                expect_psum_border(h, part, off, m, n);
            }
    }
    par_configure(0);
}

/* Strided free dims on the inputs and a strided (non-flat) dst. */
static void test_matmul_strided(void **state)
{
    struct harness *h = *state;
    const uint32_t k = 16, m = 10, n = 24;
    put_tile(h, 0, k, SB_A, ISA_DT_F32, m, 3, 7, ta);
    put_tile(h, 0, k, SB_B, ISA_DT_F32, n, 2, 8, tb);
    const int32_t sd[1][2] = {{3, (int32_t)m}}, md[1][2] = {{2, (int32_t)n}};
    const int32_t dd[2][2] = {{(int32_t)n, 2}, {2, (int32_t)n / 2}};
    struct isa_insn *in = add_mm(h, k, m, n, ISA_DT_F32, ISA_DT_F32, 0, 0, false);
    in->ap[1] = harness_sbuf(0, k, SB_A, ISA_DT_F32, 1, sd);
    in->ap[2] = harness_sbuf(0, k, SB_B, ISA_DT_F32, 1, md);
    in->ap[0] = harness_psum(0, m, 0, ISA_DT_F32, 2, dd);
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(k, m, n, false);
    /* dst element j of row i sits at float index (j / (n/2)) * n + (j % (n/2)) * 2 */
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            uint32_t at = (j / (n / 2)) * n + (j % (n / 2)) * 2;
            float got;
            memcpy(&got, harness_psum_ptr(h, i, 4 * at), 4);
            assert_int_equal(f32_bits(got), f32_bits(tc[i * n + j]));
        }
}

/* Every kernel level (what the CPU has) gives the same bits, NaN/inf/denormals too. */
static void test_matmul_levels_identical(void **state)
{
    struct harness *h = *state;
    const uint32_t k = 64, m = 72, n = 96;
    static uint8_t first[MAXM * MAXN * 4];
    put_tile(h, 0, k, SB_A, ISA_DT_F32, m, 1, 41, ta);
    put_tile(h, 0, k, SB_B, ISA_DT_F32, n, 1, 42, tb);
    const uint32_t specials[] = {0x7f800000u, 0xff800000u, 0x7fc01234u, 0x00000001u, 0x80000000u,
                                 0x7f7fffffu, 0x00800000u};
    for (uint32_t s = 0; s < 7; s++) {
        uint32_t p = (s * 13) % k, i = (s * 29) % m, j = (s * 31) % n;
        memcpy(harness_sbuf_ptr(h, p, SB_A + 4 * i), &specials[s], 4);
        memcpy(harness_sbuf_ptr(h, p, SB_B + 4 * j), &specials[6 - s], 4);
        ta[p * m + i] = bits_f32(specials[s]);
        tb[p * n + j] = bits_f32(specials[6 - s]);
    }
    ref_mm(k, m, n, false);
    for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl);
        harness_clear(h);
        memset(h->core->psum, 0, (size_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES);
        add_mm(h, k, m, n, ISA_DT_F32, ISA_DT_F32, 0, 0, false);
        assert_int_equal(harness_run(h), EMU_OK);
        expect_psum(h, 0, 0, m, n);
        for (uint32_t i = 0; i < m; i++) {
            uint8_t *row = harness_psum_ptr(h, i, 0);
            if (lvl == NUM_ISA_PORTABLE)
                memcpy(first + (size_t)i * n * 4, row, n * 4);
            else
                assert_memory_equal(first + (size_t)i * n * 4, row, n * 4);
        }
        printf("  kernel %s: bit-identical\n", pe_mm_impl_name());
    }
}

/* bf16 operands at every level: the AVX-512 stationary packer takes 8
 * partitions and 16 columns at a time, so shapes with partial blocks of
 * both (and exact ones) give the definition's bits, small and split. */
static void test_matmul_bf16_levels(void **state)
{
    struct harness *h = *state;
    const uint32_t shapes[][3] = {{128, 128, 512}, {77, 45, 40}, {8, 16, 32}, {15, 17, 33},
                                  {128, 100, 500}, {121, 8, 64}};
    for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            check_mm(h, shapes[s][0], shapes[s][1], shapes[s][2], ISA_DT_BF16, ISA_DT_BF16,
                     800 + s);
    }
}

/* Large matmuls split across 1, 2, 3 or 5 host threads (emu/core/par.h):
 * the bits are the definition's whatever the count, for bf16, fp32, fp16
 * and fp8 inputs (packed in parallel, whole rows or converted ones), on
 * shapes whose last part is short, overwriting and accumulating. */
static void test_matmul_threads_identical(void **state)
{
    struct harness *h = *state;
    const unsigned counts[] = {1, 2, 3, 5};
    const uint32_t types[][2] = {{ISA_DT_BF16, ISA_DT_BF16}, {ISA_DT_F32, ISA_DT_F32},
                                 {ISA_DT_F16, ISA_DT_F16}, {ISA_DT_FP8E4, ISA_DT_BF16}};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        par_configure(counts[c]);
        for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
            check_mm(h, 128, 128, 512, types[t][0], types[t][1], 500 + t);
            check_mm(h, 128, 100, 500, types[t][0], types[t][1], 600 + t);
        }
        put_tile(h, 0, 128, SB_B, ISA_DT_BF16, 330, 1, 700, tb);
        for (int step = 0; step < 3; step++) {
            harness_clear(h);
            put_tile(h, 0, 128, SB_A, ISA_DT_BF16, 120, 1, 710 + step, ta);
            add_mm(h, 128, 120, 330, ISA_DT_BF16, ISA_DT_BF16, 0, 0, step > 0);
            assert_int_equal(harness_run(h), EMU_OK);
            ref_mm(128, 120, 330, step > 0);
        }
        expect_psum(h, 0, 0, 120, 330);
    }
    par_configure(0);
}

static void test_matmul_tiles(void **state)
{
    struct harness *h = *state; /* NeuronCore-v3 */
    put_tile(h, 0, 64, SB_A, ISA_DT_BF16, 32, 1, 50, ta);
    put_tile(h, 0, 64, SB_B, ISA_DT_BF16, 40, 1, 51, tb);
    struct isa_insn *in = add_mm(h, 64, 32, 40, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
    in->imm[0].i = 64, in->imm[1].i = 96, in->imm[2].i = 64, in->imm[3].i = 32;
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(64, 32, 40, false);
    expect_psum(h, 0, 0, 32, 40);
    const int64_t bad[][4] = {{0, 0, 32, 128},  /* K = 64 exceeds 32 rows */
                              {32, 0, 64, 128}, /* position not a multiple */
                              {0, 0, 128, 16}}; /* tile size 16 */
    for (int t = 0; t < 3; t++) {
        harness_clear(h);
        in = add_mm(h, 64, 32, 40, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
        for (int f = 0; f < 4; f++)
            in->imm[f].i = bad[t][f];
        assert_int_equal(harness_run(h), EMU_EXEC_ERR);
        assert_non_null(strstr(h->report, "tile"));
    }
}

static void test_matmul_tiles_v2(void **state)
{
    struct harness *h = *state; /* NeuronCore-v2: no 32-row tiles */
    struct isa_insn *in = add_mm(h, 32, 32, 40, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
    in->imm[2].i = 32;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "32 needs NeuronCore-v3"));
}

static void test_matmul_onezero(void **state)
{
    struct harness *h = *state;
    const uint32_t k = 8, m = 8, n = 16;
    for (uint32_t p = 0; p < k; p++)
        for (uint32_t i = 0; i < m; i++) {
            ta[p * m + i] = (float)((p + i) & 1);
            memcpy(harness_sbuf_ptr(h, p, SB_A + 4 * i), &ta[p * m + i], 4);
        }
    put_tile(h, 0, k, SB_B, ISA_DT_F32, n, 1, 60, tb);
    struct isa_insn *in = add_mm(h, k, m, n, ISA_DT_F32, ISA_DT_F32, 0, 0, false);
    in->flags |= 1u << 2; /* stationary_onezero: true claim */
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(k, m, n, false);
    expect_psum(h, 0, 0, m, n);
    harness_clear(h);
    in = add_mm(h, k, m, n, ISA_DT_F32, ISA_DT_F32, 0, 0, false);
    in->flags |= 1u << 3; /* moving_onezero: false claim on fp32 */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "moving_onezero"));
    harness_clear(h); /* the hint has no effect on bf16 */
    put_tile(h, 0, k, SB_A, ISA_DT_BF16, m, 1, 61, ta);
    put_tile(h, 0, k, SB_B, ISA_DT_BF16, n, 1, 62, tb);
    in = add_mm(h, k, m, n, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
    in->flags |= 3u << 2;
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(k, m, n, false);
    expect_psum(h, 0, 0, m, n);
}

/* A double_row matmul of [p, 2, m] sdt and [p, 2, n] mdt random operands;
 * ta/tb receive them as [2p x m] and [2p x n] (row k = j * p + q). */
static struct isa_insn *add_double_row(struct harness *h, uint32_t p, uint32_t m, uint32_t n,
                                       uint32_t sdt, uint32_t mdt)
{
    static float sa[MAXK * MAXM], sb[MAXK * MAXN];
    harness_clear(h);
    put_tile(h, 0, p, SB_A, sdt, 2 * m, 1, 70, sa);
    put_tile(h, 0, p, SB_B, mdt, 2 * n, 1, 71, sb);
    for (uint32_t j = 0; j < 2; j++)
        for (uint32_t q = 0; q < p; q++) {
            memcpy(&ta[(j * p + q) * m], &sa[q * 2 * m + j * m], m * sizeof(float));
            memcpy(&tb[(j * p + q) * n], &sb[q * 2 * n + j * n], n * sizeof(float));
        }
    const int32_t ad[2][2] = {{(int32_t)m, 2}, {1, (int32_t)m}};
    const int32_t bd[2][2] = {{(int32_t)n, 2}, {1, (int32_t)n}};
    struct isa_insn *in = add_mm(h, p, m, n, sdt, mdt, 0, 0, false);
    in->ap[1] = harness_sbuf(0, p, SB_A, sdt, 2, ad);
    in->ap[2] = harness_sbuf(0, p, SB_B, mdt, 2, bd);
    in->enums[0] = ISA_PERF_double_row;
    return in;
}

/* double_row: [P, 2, x] fp8 operands; logical k = j * P + p. */
static void test_matmul_double_row(void **state)
{
    struct harness *h = *state;
    const uint32_t p = 96, m = 20, n = 50;
    struct isa_insn *in = add_double_row(h, p, m, n, ISA_DT_FP8E4, ISA_DT_FP8E5);
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(2 * p, m, n, false);
    expect_psum(h, 0, 0, m, n);
    in->ap[1].dtype = ISA_DT_BF16; /* double_row needs fp8 */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "double_row"));
    in->ap[1].dtype = ISA_DT_FP8E4FN; /* OCP e4m3 only from NeuronCore-v4 */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "double_row"));
}

/* NeuronCore-v4 double_row also takes float8_e4m3fn, mixed with fp8_e5 but
 * never with the legacy fp8_e4. */
static void test_matmul_double_row_v4(void **state)
{
    (void)state;
    struct harness *h = harness_new(4);
    const uint32_t p = 128, m = 16, n = 40;
    add_double_row(h, p, m, n, ISA_DT_FP8E4FN, ISA_DT_FP8E5);
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(2 * p, m, n, false);
    expect_psum(h, 0, 0, m, n);
    add_double_row(h, p, m, n, ISA_DT_FP8E4FN, ISA_DT_FP8E4);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "legacy fp8e4"));
    harness_free(h);
}

/* v3 transpose mode: bit-exact through NaN/inf, identity and permutation. */
static void test_matmul_transpose_mode(void **state)
{
    struct harness *h = *state;
    const uint32_t k = 12, m = 9;
    uint16_t v[12][9];
    for (uint32_t p = 0; p < k; p++)
        for (uint32_t i = 0; i < m; i++) {
            v[p][i] = (uint16_t)(num_rng_u64(80, p * m + i) & 0xffff);
            memcpy(harness_sbuf_ptr(h, p, SB_A + 2 * i), &v[p][i], 2);
        }
    v[3][4] = 0x7fc1, v[5][2] = 0xff80; /* NaN, -inf */
    memcpy(harness_sbuf_ptr(h, 3, SB_A + 8), &v[3][4], 2);
    memcpy(harness_sbuf_ptr(h, 5, SB_A + 4), &v[5][2], 2);
    for (uint32_t p = 0; p < k; p++)
        for (uint32_t n = 0; n < k; n++) {
            float one = (n == (p * 5) % k) ? 1.0f : 0.0f; /* permutation: column n picks k=p */
            num_from_f32(ISA_DT_BF16, harness_sbuf_ptr(h, p, SB_B + 2 * n), one, NULL, 0);
        }
    struct isa_insn *in = add_mm(h, k, m, k, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
    in->ap[0].dtype = ISA_DT_BF16;
    assert_int_equal(isa_insn_min_gen(in, NULL, 0), 4); /* a bf16 product: v4 */
    in->flags = 1u << 1;
    assert_int_equal(isa_insn_min_gen(in, NULL, 0), 3); /* a bf16 transpose: a v3 form */
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t p = 0; p < k; p++) {
            uint16_t got;
            memcpy(&got, harness_psum_ptr(h, i, 2 * ((p * 5) % k)), 2);
            assert_int_equal(got, v[p][i]);
        }
    num_from_f32(ISA_DT_BF16, harness_sbuf_ptr(h, 0, SB_B + 2), 0.5f, NULL, 0);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "permutation"));
}

/* v2: the transpose flag is an ordinary matmul; a NaN spreads. */
static void test_matmul_transpose_flag_v2(void **state)
{
    struct harness *h = *state;
    const uint32_t k = 4, m = 4;
    for (uint32_t p = 0; p < k; p++)
        for (uint32_t i = 0; i < m; i++) {
            float x = p == 1 && i == 2 ? NAN : (float)(p * 10 + i);
            memcpy(harness_sbuf_ptr(h, p, SB_A + 4 * i), &x, 4);
            float one = p == i ? 1.0f : 0.0f;
            memcpy(harness_sbuf_ptr(h, p, SB_B + 4 * i), &one, 4);
        }
    struct isa_insn *in = add_mm(h, k, m, k, ISA_DT_F32, ISA_DT_F32, 0, 0, false);
    in->flags = 1u << 1;
    assert_int_equal(harness_run(h), EMU_OK);
    float got;
    memcpy(&got, harness_psum_ptr(h, 2, 0), 4); /* row m=2 meets the NaN in every column */
    assert_true(isnan(got));
    memcpy(&got, harness_psum_ptr(h, 1, 3 * 4), 4);
    assert_true(got == 31.0f);
}

static void test_matmul_errors(void **state)
{
    struct harness *h = *state;
    struct {
        int what;
        emu_status want;
        const char *msg;
    } cases[] = {
        {0, EMU_EXEC_ERR, "writes dst in PSUM"},
        {1, EMU_EXEC_ERR, "writes fp32 PSUM"},
        {2, EMU_EXEC_ERR, "shapes"},
        {3, EMU_EXEC_ERR, "bank"},
        {4, EMU_EXEC_OOB, "PSUM"},
        {5, EMU_EXEC_ERR, "inputs"},
        {6, EMU_EXEC_ERR, "shapes"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        harness_clear(h);
        struct isa_insn *in = add_mm(h, 16, 16, 64, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
        switch (cases[c].what) {
        case 0: in->ap[0].mem = ISA_MEM_SBUF; break;
        case 1: in->ap[0].dtype = ISA_DT_BF16; break;
        case 2: in->ap[2].num_part = 15; break;
        case 3: in->ap[0].offset = ISA_PSUM_BANK_BYTES - 64; break;
        case 4: in->ap[0].offset = ISA_PSUM_PART_BYTES - 64; break;
        case 5: in->ap[1].dtype = ISA_DT_F32; break;
        case 6: in->ap[2].dim[0].count = 513, in->ap[0].dim[0].count = 513; break;
        }
        assert_int_equal(harness_run(h), cases[c].want);
        if (strstr(h->report, cases[c].msg) == NULL)
            fail_msg("case %zu: report '%s' lacks '%s'", c, h->report, cases[c].msg);
    }
    harness_clear(h);
    harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul_mx);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "NeuronCore-v4"));
}

/* PE nc_transpose (v3): [P x F] -> [F x P], bit-exact, any dtype. */
static void test_transpose_pe(void **state)
{
    struct harness *h = *state;
    const uint32_t p = 128, f = 70;
    for (uint32_t q = 0; q < p; q++)
        for (uint32_t i = 0; i < f; i++) {
            uint16_t x = (uint16_t)num_rng_u64(90, q * f + i);
            memcpy(harness_sbuf_ptr(h, q, 2 * i), &x, 2);
        }
    struct isa_insn *in = harness_add(h, ISA_ENG_PE, ISA_OP_nc_transpose);
    in->ap[0] = harness_tile(ISA_MEM_PSUM, 0, f, 128, ISA_DT_BF16, p);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, p, 0, ISA_DT_BF16, f);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t q = 0; q < p; q++)
        for (uint32_t i = 0; i < f; i++)
            assert_memory_equal(harness_psum_ptr(h, i, 128 + 2 * q),
                                harness_sbuf_ptr(h, q, 2 * i), 2);
    in->ap[0].dtype = ISA_DT_F16; /* type must match */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, f, 8192, ISA_DT_BF16, p); /* PE writes PSUM */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "writes PSUM"));
}

/* PE nc_transpose on v2 goes through the matmul: NaN/inf spread, -0 -> +0. */
static void test_transpose_pe_v2(void **state)
{
    struct harness *h = *state;
    const uint32_t p = 3, f = 3;
    float d[3][3] = {{1, 2, -0.0f}, {INFINITY, 5, 6}, {7, NAN, 9}};
    for (uint32_t q = 0; q < p; q++)
        memcpy(harness_sbuf_ptr(h, q, 0), d[q], sizeof d[q]);
    struct isa_insn *in = harness_add(h, ISA_ENG_PE, ISA_OP_nc_transpose);
    in->ap[0] = harness_tile(ISA_MEM_PSUM, 0, f, 0, ISA_DT_F32, p);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, p, 0, ISA_DT_F32, f);
    assert_int_equal(harness_run(h), EMU_OK);
    float out[3][3];
    for (uint32_t i = 0; i < f; i++)
        memcpy(out[i], harness_psum_ptr(h, i, 0), sizeof out[i]);
    /* column 0 holds inf at k=1: out[0][1] = inf, others NaN */
    assert_true(isnan(out[0][0]) && isinf(out[0][1]) && isnan(out[0][2]));
    /* column 1 holds NaN at k=2: every output NaN */
    assert_true(isnan(out[1][0]) && isnan(out[1][1]) && isnan(out[1][2]));
    /* column 2 is finite: plain transpose, -0 becomes +0 */
    assert_int_equal(f32_bits(out[2][0]), 0);
    assert_true(out[2][1] == 6.0f && out[2][2] == 9.0f);
}

/* DVE nc_transpose: in place on a 32 x 32 SBUF tile; larger is refused. */
static void test_transpose_dve(void **state)
{
    struct harness *h = *state;
    int32_t want[32][32];
    for (uint32_t q = 0; q < 32; q++)
        for (uint32_t i = 0; i < 32; i++) {
            int32_t x = (int32_t)(q * 100 + i);
            memcpy(harness_sbuf_ptr(h, q, 4 * i), &x, 4);
            want[i][q] = x;
        }
    struct isa_insn *in = harness_add(h, ISA_ENG_DVE, ISA_OP_nc_transpose);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 32, 0, ISA_DT_I32, 32);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 32, 0, ISA_DT_I32, 32);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t q = 0; q < 32; q++)
        assert_memory_equal(harness_sbuf_ptr(h, q, 0), want[q], sizeof want[q]);
    harness_clear(h);
    in = harness_add(h, ISA_ENG_DVE, ISA_OP_nc_transpose);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 33, 4096, ISA_DT_I32, 2);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 2, 0, ISA_DT_I32, 33);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "at most 32 x 32"));
}

/* NeuronCore-v4: moving operands up to a whole PSUM partition of dst
 * (4096 fp32, 8192 bf16 columns), rows across banks; the old limit before
 * v4 and in the loader's generation check. */
static void test_matmul_wide_v4(void **state)
{
    (void)state;
    enum { K = 24, M = 20 };
    struct harness *h = harness_new(4);
    /* fp32 dst of 4096 columns, then accumulate onto it */
    put_tile(h, 0, K, SB_A, ISA_DT_BF16, M, 1, 41, ta);
    put_tile(h, 0, K, SB_B, ISA_DT_BF16, 4096, 1, 42, tb);
    add_mm(h, K, M, 4096, ISA_DT_BF16, ISA_DT_BF16, 3, 0, false);
    add_mm(h, K, M, 4096, ISA_DT_BF16, ISA_DT_BF16, 3, 0, true);
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(K, M, 4096, false);
    ref_mm(K, M, 4096, true);
    expect_psum(h, 3, 0, M, 4096);
    /* bf16 dst of 8192 columns: fp32 sums rounded once (RNE) */
    harness_clear(h);
    put_tile(h, 0, K, SB_A, ISA_DT_BF16, M, 1, 43, ta);
    put_tile(h, 0, K, SB_B, ISA_DT_BF16, 8192, 1, 44, tb);
    add_mm(h, K, M, 8192, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false)->ap[0].dtype = ISA_DT_BF16;
    assert_int_equal(harness_run(h), EMU_OK);
    ref_mm(K, M, 8192, false);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < 8192; j++) {
            uint16_t got, want;
            memcpy(&got, harness_psum_ptr(h, i, 2 * j), 2);
            num_from_f32(ISA_DT_BF16, &want, tc[(size_t)i * 8192 + j], NULL, 0);
            if (got != want)
                fail_msg("bf16 psum[%u][%u] = %04x, want %04x", i, j, got, want);
        }
    /* past the partition: refused */
    harness_clear(h);
    add_mm(h, K, M, 4097, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false)->ap[0] =
        harness_tile(ISA_MEM_PSUM, 0, M, 0, ISA_DT_F32, 4097);
    assert_int_not_equal(harness_run(h), EMU_OK);
    harness_free(h);
    /* before v4: 512 columns in one bank */
    h = harness_new(3);
    add_mm(h, K, M, 1024, ISA_DT_BF16, ISA_DT_BF16, 0, 0, false);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "N <= 512"));
    harness_clear(h);
    add_mm(h, K, M, 512, ISA_DT_BF16, ISA_DT_BF16, 0, 1024, false);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "bank"));
    harness_free(h);
    struct isa_insn in;
    char what[96];
    assert_int_equal(isa_insn_init(&in, ISA_ENG_PE, ISA_OP_nc_matmul), EMU_OK);
    in.ap[2] = harness_tile(ISA_MEM_SBUF, 0, K, SB_B, ISA_DT_BF16, 1024);
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
    assert_non_null(strstr(what, "1024 moving columns"));
    in.ap[2] = harness_tile(ISA_MEM_SBUF, 0, K, SB_B, ISA_DT_BF16, 512);
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 2);
    /* a bf16 dst: v4's bf16 accumulation, but v3 in transpose mode */
    in.ap[0] = harness_tile(ISA_MEM_PSUM, 0, M, 0, ISA_DT_BF16, 512);
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
    in.flags |= 1u << ISA_SLOT_FLAG_nc_matmul_transpose;
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 3);
    assert_non_null(strstr(what, "transpose mode"));
}

/* ---- nc_matmul_sparse ------------------------------------------------------- */

#define SB_TAG 8192u /* SBUF offset of the tag operand */
enum { SPP = 32, SPM = 10, SPF = 37 };

static uint64_t sp_rng = 0x243f6a8885a308d3u;
static uint32_t sp_rand(uint32_t n)
{
    sp_rng ^= sp_rng << 13;
    sp_rng ^= sp_rng >> 7;
    sp_rng ^= sp_rng << 17;
    return (uint32_t)(sp_rng % n);
}

/* Compress a random keep:group stationary into SBUF (values, packed tags),
 * and return its decompressed form in full[k][m] with kept[k][m] marks. */
static void sp_put(struct harness *h, uint32_t keep, uint32_t group, float *full, bool *kept)
{
    uint32_t k_all = SPP / keep * group;
    memset(full, 0, sizeof(float) * k_all * SPM);
    memset(kept, 0, sizeof(bool) * k_all * SPM);
    uint16_t tags[SPP][3] = {{0}};
    for (uint32_t g = 0; g < SPP / keep; g++)
        for (uint32_t m = 0; m < SPM; m++) {
            uint32_t pos[16];
            for (uint32_t i = 0; i < group; i++)
                pos[i] = i;
            for (uint32_t i = 0; i < keep; i++) { /* keep distinct rows, in random order */
                uint32_t j = i + sp_rand(group - i), t = pos[i];
                pos[i] = pos[j], pos[j] = t;
            }
            for (uint32_t i = 0; i < keep; i++) {
                uint32_t p = g * keep + i, k = g * group + pos[i];
                uint8_t *q = harness_sbuf_ptr(h, p, SB_A + 2u * m);
                num_from_f32(ISA_DT_BF16, q, rnd_val(77, (uint64_t)p * SPM + m), NULL, 0);
                full[(size_t)k * SPM + m] = num_to_f32(ISA_DT_BF16, q);
                kept[(size_t)k * SPM + m] = true;
                tags[p][m / 4] |= (uint16_t)(pos[i] << (4 * (m % 4)));
            }
        }
    for (uint32_t p = 0; p < SPP; p++)
        memcpy(harness_sbuf_ptr(h, p, SB_TAG), tags[p], sizeof tags[p]);
}

static struct isa_insn *add_sparse(struct harness *h, uint32_t keep, uint32_t group, bool acc)
{
    struct isa_insn *in = harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul_sparse);
    in->ap[0] = harness_tile(ISA_MEM_PSUM, 2, SPM, 64, ISA_DT_F32, SPF);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, SPP, SB_A, ISA_DT_BF16, SPM);
    in->ap[2] = harness_tile(ISA_MEM_SBUF, 0, SPP, SB_B, ISA_DT_BF16, group / keep * SPF);
    in->ap[3] = harness_tile(ISA_MEM_SBUF, 0, SPP, SB_TAG, ISA_DT_U16, (SPM + 3) / 4);
    in->imm[0].i = keep;
    in->imm[1].i = group;
    in->flags = acc ? 1u : 0u;
    return in;
}

/* Every pattern: the product of the decompressed stationary and the dense
 * moving matrix (logical row k = partition k / ratio, slot k % ratio),
 * fmaf over the kept rows in increasing k, then accumulated once more. */
static void test_matmul_sparse(void **state)
{
    struct harness *h = *state;
    static const uint32_t pats[][2] = {{4, 8}, {4, 12}, {4, 16}, {2, 8}, {2, 4}, {1, 4}, {1, 2}};
    static float full[SPP * 16 * SPM];
    static bool kept[SPP * 16 * SPM];
    for (size_t t = 0; t < sizeof pats / sizeof pats[0]; t++) {
        uint32_t keep = pats[t][0], group = pats[t][1], ratio = group / keep;
        harness_clear(h);
        sp_put(h, keep, group, full, kept);
        put_tile(h, 0, SPP, SB_B, ISA_DT_BF16, ratio * SPF, 1, 90 + t, tb);
        add_sparse(h, keep, group, false);
        add_sparse(h, keep, group, true);
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t m = 0; m < SPM; m++)
            for (uint32_t f = 0; f < SPF; f++) {
                float acc = 0.0f;
                for (int pass = 0; pass < 2; pass++)
                    for (uint32_t k = 0; k < SPP * ratio; k++)
                        if (kept[(size_t)k * SPM + m])
                            acc = fmaf(full[(size_t)k * SPM + m],
                                       tb[(size_t)(k / ratio) * ratio * SPF + (k % ratio) * SPF + f], acc);
                uint32_t got;
                memcpy(&got, harness_psum_ptr(h, 2 + m, 64 + 4 * f), 4);
                if (got != f32_bits(acc))
                    fail_msg("%u:%u dst[%u][%u] = %08x, want %08x", keep, group, m, f, got,
                             f32_bits(acc));
            }
    }
    /* a pattern the engine lacks, a repeated tag, a tag past its group */
    harness_clear(h);
    add_sparse(h, 3, 12, false);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "pattern 3:12"));
    harness_clear(h);
    memset(harness_sbuf_ptr(h, 0, SB_TAG), 0, 6);
    memset(harness_sbuf_ptr(h, 1, SB_TAG), 0, 6);
    add_sparse(h, 2, 8, false);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "both tag"));
    harness_clear(h);
    uint16_t far = 13;
    for (uint32_t p = 0; p < SPP; p++)
        memcpy(harness_sbuf_ptr(h, p, SB_TAG), &far, 2);
    add_sparse(h, 4, 12, false);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "outside its group"));
    /* NeuronCore-v2 has no sparse matmul; the loader asks for v3 */
    struct harness *v2 = harness_new(2);
    add_sparse(v2, 4, 8, false);
    assert_int_equal(harness_run(v2), EMU_EXEC_ERR);
    assert_non_null(strstr(v2->report, "NeuronCore-v3"));
    harness_free(v2);
    struct isa_insn in;
    assert_int_equal(isa_insn_init(&in, ISA_ENG_PE, ISA_OP_nc_matmul_sparse), EMU_OK);
    assert_int_equal(isa_insn_min_gen(&in, NULL, 0), 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matmul_dtypes, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_edge_shapes, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_accumulate_offsets, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_panels_offsets, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_strided, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_levels_identical, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_threads_identical, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_tiles, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_tiles_v2, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_onezero, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_double_row, setup3, teardown),
        cmocka_unit_test(test_matmul_double_row_v4),
        cmocka_unit_test_setup_teardown(test_matmul_bf16_levels, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_transpose_mode, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_transpose_flag_v2, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_errors, setup3, teardown),
        cmocka_unit_test(test_matmul_wide_v4),
        cmocka_unit_test_setup_teardown(test_matmul_sparse, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_transpose_pe, setup3, teardown),
        cmocka_unit_test_setup_teardown(test_transpose_pe_v2, setup2, teardown),
        cmocka_unit_test_setup_teardown(test_transpose_dve, setup3, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
