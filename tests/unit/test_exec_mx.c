/*
 * test_exec_mx.c: quantize_mx and nc_matmul_mx on a NeuronCore-v4
 * (emu/engines/exec_mx.c) against references written here: the scale
 * formula and the quadrant placement of scales, all-zero and NaN groups,
 * and a dequantise-then-multiply reference in double for every pair of
 * packed types (exact where the sums are exact), bf16 PSUM results and
 * accumulation, moving sizes beyond one bank, and the refusals (v3 core,
 * shapes, scale placement, fp4 output). The quantize_mx kernels
 * (emu/engines/mx_quant.c): AVX2 and AVX-512 against scalar for every
 * bf16 pattern and scale code at every group position, and whole
 * instructions (also in place) at every ISA level.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/engines/mx_quant.h"
#include "emu/num/mx.h"
#include "exec_harness.h"

#define SB_SRC 0          /* SBUF byte offsets of the operands */
#define SB_DST 65536
#define SB_SCALE 98304
#define SB_ST 131072
#define SB_MV 139264
#define SB_STS 200000
#define SB_MVS 201000

static uint32_t rnd_state;

static uint32_t rnd(void)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return rnd_state >> 8;
}

static int setup_v4(void **state)
{
    *state = harness_new(4);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    return 0;
}

/* ---- quantize_mx --------------------------------------------------------------- */

static uint16_t bf16_of(float x)
{
    return num_f32_to_bf16(x);
}

/* One quantize_mx of a [p x 4f] bf16 tile at partition 0 into dst (same
 * partitions) and scales at partition sc_part with sc_rows rows. */
static void add_quantize(struct harness *h, uint32_t p, uint32_t f, uint32_t dst_dt,
                         uint32_t sc_part, uint32_t sc_rows)
{
    struct isa_insn *q = harness_add(h, ISA_ENG_DVE, ISA_OP_quantize_mx);
    q->ap[0] = harness_tile(ISA_MEM_SBUF, 0, p, SB_DST, dst_dt, f);
    q->ap[1] = harness_tile(ISA_MEM_SBUF, sc_part, sc_rows, SB_SCALE, ISA_DT_U8, f);
    q->ap[2] = harness_tile(ISA_MEM_SBUF, 0, p, SB_SRC, ISA_DT_BF16, 4 * f);
}

/* Reference scale byte of a group with largest magnitude amax. */
static uint8_t ref_scale(double amax, int emax)
{
    if (amax == 0)
        return 0;
    int e = (int)floor(log2(amax)) - (emax - 1);
    return (uint8_t)(e < -127 ? 0 : e + 127);
}

static void check_quantize(struct harness *h, uint32_t p, uint32_t f, bool e4, uint32_t sc_part,
                           uint32_t sc_rows)
{
    int emax = e4 ? 8 : 15;
    for (uint32_t g0 = 0; g0 < p; g0 += 8)
        for (uint32_t c = 0; c < f; c++) {
            double amax = 0;
            for (uint32_t i = 0; i < 8; i++)
                for (uint32_t j = 0; j < 4; j++) {
                    uint16_t b;
                    memcpy(&b, harness_sbuf_ptr(h, g0 + i, SB_SRC + 2 * (4 * c + j)), 2);
                    amax = fmax(amax, fabs((double)num_bf16_to_f32(b)));
                }
            uint8_t want = ref_scale(amax, emax);
            uint32_t row = (g0 / 32) * 32 + (g0 % 32) / 8; /* one quadrant: 0..3 */
            assert_true(row < sc_rows);
            assert_int_equal(*harness_sbuf_ptr(h, sc_part + row, SB_SCALE + c), want);
            for (uint32_t i = 0; i < 8; i++)
                for (uint32_t j = 0; j < 4; j++) {
                    uint16_t b;
                    memcpy(&b, harness_sbuf_ptr(h, g0 + i, SB_SRC + 2 * (4 * c + j)), 2);
                    float x = ldexpf(num_bf16_to_f32(b), 127 - want);
                    uint8_t code = e4 ? num_f32_to_e4m3fn(x, true)
                                      : num_f32_to_fp8(NUM_DT_FP8_E5, x);
                    assert_int_equal(*harness_sbuf_ptr(h, g0 + i, SB_DST + 4 * c + j), code);
                    /* the MX promise: dequantising gives the value back within half an
                     * fp8 ulp of the group's largest binade (in double: the largest bf16
                     * values may round up to 2^128) */
                    double back = ldexp(e4 ? num_e4m3fn_to_f32(code)
                                           : num_fp8_to_f32(NUM_DT_FP8_E5, code), want - 127);
                    assert_true(fabs(back - num_bf16_to_f32(b)) <= (e4 ? 0.0625 : 0.125) * amax);
                }
        }
}

/* Random bf16 values spanning several binades per group, one all-zero group. */
static void fill_src(struct harness *h, uint32_t p, uint32_t f)
{
    for (uint32_t r = 0; r < p; r++)
        for (uint32_t c = 0; c < 4 * f; c++) {
            float x = ((float)(rnd() % 2001) - 1000.0f) * ldexpf(1.0f, (int)(rnd() % 12) - 20);
            if (c / 4 == 1 && r < 8)
                x = 0.0f; /* group (0, column 1) is all zero */
            uint16_t b = bf16_of(x);
            memcpy(harness_sbuf_ptr(h, r, SB_SRC + 2 * c), &b, 2);
        }
}

static void test_quantize_formula(void **state)
{
    struct harness *h = *state;
    rnd_state = 1;
    const struct { uint32_t p, f, dt, sc_part, sc_rows; } cases[] = {
        {128, 16, ISA_DT_FP8E4FNX4, 0, 128}, {64, 8, ISA_DT_FP8E5X4, 0, 64},
        {32, 5, ISA_DT_FP8E4FNX4, 8, 4},     {32, 3, ISA_DT_FP8E5X4, 0, 32},
        {64, 6, ISA_DT_FP8E5X4, 0, 128}, /* more scale rows than read */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        harness_clear(h);
        fill_src(h, cases[i].p, cases[i].f);
        add_quantize(h, cases[i].p, cases[i].f, cases[i].dt, cases[i].sc_part, cases[i].sc_rows);
        assert_int_equal(harness_run(h), EMU_OK);
        check_quantize(h, cases[i].p, cases[i].f, cases[i].dt == ISA_DT_FP8E4FNX4,
                       cases[i].sc_part, cases[i].sc_rows);
    }
    /* the all-zero group: scale 2^-127 (0x00) and zero data */
    assert_int_equal(*harness_sbuf_ptr(h, 0, SB_SCALE + 1), 0x00);
    assert_int_equal(*harness_sbuf_ptr(h, 3, SB_DST + 4 + 2), 0x00);
}

/* A group holding inf or NaN gets the NaN scale and NaN data; the largest
 * bf16 values quantise without saturating (448 is never needed). */
static void test_quantize_specials(void **state)
{
    struct harness *h = *state;
    harness_clear(h);
    for (uint32_t r = 0; r < 32; r++)
        for (uint32_t c = 0; c < 8; c++) {
            float x = c < 4 ? (r == 3 && c == 2 ? INFINITY : 1.0f) : 3.3895314e38f;
            uint16_t b = bf16_of(x);
            memcpy(harness_sbuf_ptr(h, r, SB_SRC + 2 * c), &b, 2);
        }
    add_quantize(h, 32, 2, ISA_DT_FP8E4FNX4, 0, 4);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_int_equal(*harness_sbuf_ptr(h, 0, SB_SCALE), NUM_E8M0_NAN);
    assert_int_equal(*harness_sbuf_ptr(h, 5, SB_DST) & 0x7f, 0x7f);
    uint8_t sc = *harness_sbuf_ptr(h, 0, SB_SCALE + 1);
    assert_int_equal(sc, 127 + 127 - 7); /* floor(log2 max bf16) = 127 */
    uint8_t code = *harness_sbuf_ptr(h, 9, SB_DST + 4);
    assert_int_equal(code, num_f32_to_e4m3fn(ldexpf(3.3895314e38f, 127 - sc), false));
    assert_true(code < 0x7e);
}

/* ---- the quantize_mx kernels: vector against scalar --------------------------------- */

/* One sweep of the exhaustive kernel test: groups of 31 tested values and
 * one setter (the largest magnitude that gives the group its code). */
struct sweep {
    uint16_t *vals;   /* 31 tested bf16 patterns per group */
    uint16_t *setter; /* the setter of each group */
    uint8_t *want;    /* scalar codes of vals (31 per group) */
    uint8_t *want_set;/* scalar code of each setter */
    uint8_t *scale;   /* scalar scale code of each group */
    uint64_t groups;  /* groups (x4 columns of the block) */
};

/* Every (pattern, scale code) pair that can occur for one output type:
 * for each code c the setter of exponent field c + emax - 1 (any field
 * up to emax - 1 for c = 0) and mantissa 0x7f, with every pattern of no
 * larger magnitude; then an inf setter with every pattern (NaN groups). */
static void sweep_build(struct sweep *sw, int emax)
{
    uint64_t cap = 0;
    for (uint32_t c = 0; c <= 255u - (uint32_t)emax; c++)
        cap += (2u * (((c + (uint32_t)emax - 1) << 7) | 0x7fu) + 2) / 31 + 1;
    cap += 65536 / 31 + 1;
    sw->vals = malloc(cap * 31 * sizeof *sw->vals);
    sw->setter = malloc(cap * sizeof *sw->setter);
    assert_non_null(sw->vals);
    assert_non_null(sw->setter);
    uint64_t g = 0;
    for (uint32_t c = 0; c <= 256u - (uint32_t)emax; c++) {
        bool nan = c == 256u - (uint32_t)emax;
        uint16_t set = nan ? 0x7f80u : (uint16_t)(((c + (uint32_t)emax - 1) << 7) | 0x7fu);
        /* eligible patterns: |bits| <= setter (any for NaN groups); the
         * subnormals last, as a block holding one takes the scalar path */
        uint32_t n = 0;
        uint16_t *first = sw->vals + g * 31;
        for (int subn = 0; subn < 2; subn++)
            for (uint32_t b = 0; b < 65536; b++) {
                bool is_sub = (b & 0x7f80u) == 0 && (b & 0x7fu) != 0;
                if (is_sub == (subn == 1) && (nan || (b & 0x7fffu) <= set))
                    first[n++] = (uint16_t)b;
            }
        uint64_t ng = (n + 30) / 31;
        for (uint32_t i = n; i < ng * 31; i++)
            first[i] = first[i - n]; /* the last group wraps round */
        for (uint64_t k = 0; k < ng; k++)
            sw->setter[g + k] = (uint16_t)(set | ((k & 1u) << 15));
        g += ng;
    }
    assert_true(g <= cap);
    sw->groups = g;
}

/* Block rows of pass p: tested value r of group g at position (p + r) % 32
 * (row / 4, lane % 4), the setter at position (p + 31) % 32. */
static void sweep_fill(const struct sweep *sw, unsigned p, uint16_t *rows)
{
    uint64_t w = 4 * sw->groups;
    for (uint64_t g = 0; g < sw->groups; g++)
        for (unsigned r = 0; r < 32; r++) {
            unsigned pos = (p + r) % 32;
            rows[(pos / 4) * w + 4 * g + pos % 4] = r < 31 ? sw->vals[g * 31 + r] : sw->setter[g];
        }
}

static void sweep_block(struct mxq_block *b, uint16_t *rows, uint8_t *out, uint8_t *scale,
                        uint64_t nf, bool e4)
{
    memset(b, 0, sizeof *b);
    for (unsigned i = 0; i < MXQ_ROWS; i++) {
        b->src[i] = rows + i * 4 * nf;
        b->dst[i] = out + i * 4 * nf;
    }
    b->scale = scale;
    b->nf = nf;
    b->e4 = e4;
}

/* Codes of pass p at the positions sweep_fill used, against the scalar
 * ones (kept from pass 0). */
static void sweep_check(const struct sweep *sw, unsigned p, int lvl, const uint8_t *out,
                        const uint8_t *scale)
{
    uint64_t w = 4 * sw->groups;
    assert_memory_equal(scale, sw->scale, sw->groups);
    for (uint64_t g = 0; g < sw->groups; g++)
        for (unsigned r = 0; r < 32; r++) {
            unsigned pos = (p + r) % 32;
            uint8_t got = out[(pos / 4) * w + 4 * g + pos % 4];
            uint8_t want = r < 31 ? sw->want[g * 31 + r] : sw->want_set[g];
            if (got != want)
                fail_msg("level %d pass %u group %llu value %04x (scale %02x): vector %02x, "
                         "scalar %02x", lvl, p, (unsigned long long)g,
                         r < 31 ? sw->vals[g * 31 + r] : sw->setter[g], sw->scale[g], got, want);
        }
}

/* The AVX2 and AVX-512 kernels against the scalar one: every bf16 pattern
 * with every scale code it can meet, at every one of the 32 positions of
 * a group, for both output types; the scalar scale codes are also checked
 * against the setters'. Skipped where the CPU has no AVX2. */
static void test_quantize_kernels_exhaustive(void **state)
{
    (void)state;
    if (num_isa_level() < NUM_ISA_AVX2)
        skip();
    for (int e4 = 1; e4 >= 0; e4--) {
        int emax = e4 ? 8 : 15;
        struct sweep sw;
        sweep_build(&sw, emax);
        uint64_t nf = sw.groups, n = 32 * nf;
        uint16_t *rows = malloc(n * sizeof *rows);
        uint8_t *out = malloc(n), *scale = malloc(nf);
        sw.want = malloc(31 * nf);
        sw.want_set = malloc(nf);
        sw.scale = malloc(nf);
        assert_true(rows && out && scale && sw.want && sw.want_set && sw.scale);
        struct mxq_block b;
        sweep_block(&b, rows, out, sw.scale, nf, e4);
        sweep_fill(&sw, 0, rows);
        mxq_block_at(&b, NUM_ISA_PORTABLE);
        for (uint64_t g = 0; g < nf; g++) {
            uint32_t e = (sw.setter[g] & 0x7fffu) >> 7;
            uint32_t c = e == 0xffu ? 0xffu : e - (uint32_t)(emax - 1);
            assert_int_equal(sw.scale[g], c);
            for (unsigned r = 0; r < 32; r++) {
                uint8_t code = out[(r / 4) * 4 * nf + 4 * g + r % 4];
                if (r < 31)
                    sw.want[g * 31 + r] = code;
                else
                    sw.want_set[g] = code;
            }
        }
        for (int lvl = NUM_ISA_AVX2; lvl <= num_isa_level(); lvl++)
            for (unsigned p = 0; p < 32; p++) {
                sweep_fill(&sw, p, rows);
                sweep_block(&b, rows, out, scale, nf, e4);
                mxq_block_at(&b, lvl);
                sweep_check(&sw, p, lvl, out, scale);
            }
        free(rows), free(out), free(scale);
        free(sw.vals), free(sw.setter), free(sw.want), free(sw.want_set), free(sw.scale);
    }
}

/* Source of the level test, one group at a time: values over a dozen
 * binades round a random exponent with some zeros and a rare subnormal, or an
 * all-zero group, a tiny group (subnormals and the smallest normals), a
 * group at the top of the range, and (with specials) one holding an inf
 * or a NaN. */
static void fill_src_mixed(struct harness *h, uint32_t p, uint32_t f, bool specials)
{
    for (uint32_t g0 = 0; g0 < p; g0 += 8)
        for (uint32_t c = 0; c < f; c++) {
            uint32_t mode = rnd() % 16, base = 1 + rnd() % 240;
            for (uint32_t i = 0; i < 32; i++) {
                uint32_t r = rnd(), sign = (r & 1u) << 15, mant = (r >> 1) & 0x7fu;
                uint32_t e = mode == 1 ? (r >> 8) % 3 : mode == 2 ? 254 - (r >> 8) % 3
                                                                  : base + (r >> 8) % 12;
                uint16_t b = (uint16_t)(sign | (e << 7) | mant);
                if (mode == 0 || (mode > 3 && (r >> 16) % 16 == 0))
                    b = (uint16_t)sign; /* zero */
                if (mode > 3 && (r >> 12) % 1024 == 0)
                    b = (uint16_t)(sign | mant); /* subnormal (or zero) */
                if (mode == 3 && i == (r >> 12) % 32)
                    b = (uint16_t)(sign | ((r >> 20) % 2 ? 0x7f80u : 0x7fc0u | mant));
                if (mode == 3 && !specials)
                    b = (uint16_t)(b & 0xbfffu); /* finite */
                memcpy(harness_sbuf_ptr(h, g0 + i / 4, SB_SRC + 2 * (4 * c + i % 4)), &b, 2);
            }
        }
}

/* quantize_mx at every ISA level gives the same bytes (dst and scales),
 * for 32, 64, 96 and 128 partitions, free sizes that leave a partial
 * vector, both output types, full, 4-row and strided (non-flat) scale
 * operands, with and without inf/NaN groups; without them the bytes also
 * match the reference of check_quantize. */
static void test_quantize_levels(void **state)
{
    struct harness *h = *state;
    const uint32_t parts[] = {32, 64, 96, 128}, frees[] = {1, 7, 9, 13, 40, 301};
    static uint8_t got[3][128 * 4 * 301], got_sc[3][128 * 301];
    unsigned ncase = 0;
    for (size_t pi = 0; pi < 4; pi++)
        for (size_t fi = 0; fi < 6; fi++)
            for (unsigned variant = 0; variant < 4; variant++, ncase++) {
                uint32_t p = parts[pi], f = frees[fi];
                bool e4 = variant % 2 == 0, specials = variant >= 2;
                bool short_sc = p == 32 && fi % 2 == 0, strided = !short_sc && fi % 3 == 1;
                uint32_t sc_rows = short_sc ? 4 : p, dt = e4 ? ISA_DT_FP8E4FNX4 : ISA_DT_FP8E5X4;
                for (int lvl = NUM_ISA_PORTABLE; lvl <= NUM_ISA_AVX512; lvl++) {
                    num_set_isa_limit(lvl);
                    harness_clear(h);
                    rnd_state = 100 + ncase;
                    fill_src_mixed(h, p, f, specials);
                    add_quantize(h, p, f, dt, 0, sc_rows);
                    if (strided) {
                        const int32_t dims[1][2] = {{2, (int32_t)f}};
                        h->insns[ISA_ENG_DVE][0].ap[1] =
                            harness_sbuf(0, sc_rows, SB_SCALE, ISA_DT_U8, 1, dims);
                    }
                    assert_int_equal(harness_run(h), EMU_OK);
                    for (uint32_t r = 0; r < p; r++) {
                        memcpy(got[lvl] + r * 4 * f, harness_sbuf_ptr(h, r, SB_DST), 4 * f);
                        for (uint32_t c = 0; c < f && r < sc_rows; c++)
                            got_sc[lvl][r * f + c] =
                                *harness_sbuf_ptr(h, r, SB_SCALE + (strided ? 2 : 1) * c);
                    }
                    if (lvl > NUM_ISA_PORTABLE) {
                        assert_memory_equal(got[lvl], got[0], (size_t)p * 4 * f);
                        assert_memory_equal(got_sc[lvl], got_sc[0], (size_t)sc_rows * f);
                    }
                    if (!specials && !strided)
                        check_quantize(h, p, f, e4, 0, sc_rows);
                }
            }
    num_set_isa_limit(NUM_ISA_AVX512);
}

/* A quantize_mx whose dst starts where its src does (each group is read
 * before its bytes are overwritten) gives the bytes of the out-of-place
 * one at every ISA level, tiny groups (the vector kernel's scalar chunks)
 * included. */
static void test_quantize_in_place(void **state)
{
    struct harness *h = *state;
    const uint32_t p = 64, f = 45;
    static uint8_t want[64 * 4 * 45], want_sc[64 * 45];
    for (int lvl = -1; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl < 0 ? NUM_ISA_PORTABLE : lvl);
        harness_clear(h);
        rnd_state = 77;
        fill_src_mixed(h, p, f, true);
        add_quantize(h, p, f, ISA_DT_FP8E4FNX4, 0, p);
        if (lvl >= 0)
            h->insns[ISA_ENG_DVE][0].ap[0] = harness_tile(ISA_MEM_SBUF, 0, p, SB_SRC,
                                                          ISA_DT_FP8E4FNX4, f);
        assert_int_equal(harness_run(h), EMU_OK);
        uint64_t off = lvl < 0 ? SB_DST : SB_SRC;
        for (uint32_t r = 0; r < p; r++) {
            uint8_t *d = harness_sbuf_ptr(h, r, off), *sc = harness_sbuf_ptr(h, r, SB_SCALE);
            if (lvl < 0) {
                memcpy(want + r * 4 * f, d, 4 * f);
                memcpy(want_sc + r * f, sc, f);
            }
            else {
                assert_memory_equal(d, want + r * 4 * f, 4 * f);
                assert_memory_equal(sc, want_sc + r * f, f);
            }
        }
    }
    num_set_isa_limit(NUM_ISA_AVX512);
}

/* ---- nc_matmul_mx -------------------------------------------------------------- */

/* Packed element type -> the value of lane j. */
static float lane_value(uint32_t dt, const uint8_t *p, unsigned j)
{
    float v[4];
    num_x4_unpack(dt == ISA_DT_FP8E5X4 ? NUM_DT_FP8_E5M2_X4
                  : dt == ISA_DT_FP8E4FNX4 ? NUM_DT_FP8_E4M3FN_X4 : NUM_DT_FP4_E2M1_X4, p, v);
    return v[j];
}

static uint32_t esize_of(uint32_t dt)
{
    return dt == ISA_DT_FP4X4 ? 2 : 4;
}

/* Random finite codes in SBUF for a [k x w] packed tile at byte off. */
static void fill_packed(struct harness *h, uint32_t k, uint32_t w, uint32_t dt, uint64_t off,
                        bool small_ints)
{
    for (uint32_t p = 0; p < k; p++)
        for (uint32_t i = 0; i < w * esize_of(dt); i++) {
            uint8_t b = (uint8_t)rnd();
            if (dt == ISA_DT_FP4X4)
                b &= small_ints ? 0x55 : 0xff;  /* small_ints: 0, 0.5, 1.5 ... */
            else if (small_ints)
                b = (uint8_t)((dt == ISA_DT_FP8E5X4 ? 0x3c : 0x38) + (b % 3) * 4) | (b & 0x80);
            else if ((b & 0x7f) == 0x7f || (dt == ISA_DT_FP8E5X4 && (b & 0x7c) == 0x7c))
                b = 0x11;                        /* no NaN or inf codes */
            *harness_sbuf_ptr(h, p, off + i) = b;
        }
}

static void fill_scales(struct harness *h, uint32_t k, uint32_t w, uint64_t off, int lo, int span)
{
    for (uint32_t r = 0; r < k; r++)
        for (uint32_t i = 0; i < w; i++)
            *harness_sbuf_ptr(h, r, off + i) = (uint8_t)(lo + (int)(rnd() % (uint32_t)span));
}

/* dst[m][n] in double from the SBUF operands (scale rows by the quadrant rule). */
static double ref_mx(struct harness *h, uint32_t k, uint32_t sdt, uint32_t mdt, uint32_t m,
                     uint32_t n, double *mag)
{
    double sum = 0;
    *mag = 0;
    for (uint32_t p = 0; p < k; p++) {
        uint32_t sr = (p / 32) * 32 + (p % 32) / 8;
        double ss = ldexp(1.0, *harness_sbuf_ptr(h, sr, SB_STS + m) - 127);
        double ms = ldexp(1.0, *harness_sbuf_ptr(h, sr, SB_MVS + n) - 127);
        for (unsigned j = 0; j < 4; j++) {
            double t = lane_value(sdt, harness_sbuf_ptr(h, p, SB_ST + (uint64_t)m * esize_of(sdt)), j) *
                       ss * lane_value(mdt, harness_sbuf_ptr(h, p, SB_MV + (uint64_t)n * esize_of(mdt)), j) * ms;
            sum += t;
            *mag += fabs(t);
        }
    }
    return sum;
}

static struct isa_insn *add_mx(struct harness *h, uint32_t k, uint32_t m, uint32_t n, uint32_t sdt,
                               uint32_t mdt, uint32_t ddt, bool acc)
{
    struct isa_insn *q = harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul_mx);
    q->ap[0] = harness_tile(ISA_MEM_PSUM, 0, m, 0, ddt, n);
    q->ap[1] = harness_tile(ISA_MEM_SBUF, 0, k, SB_ST, sdt, m);
    q->ap[2] = harness_tile(ISA_MEM_SBUF, 0, k, SB_MV, mdt, n);
    q->ap[3] = harness_tile(ISA_MEM_SBUF, 0, k, SB_STS, ISA_DT_U8, m);
    q->ap[4] = harness_tile(ISA_MEM_SBUF, 0, k, SB_MVS, ISA_DT_FP8E8M0, n);
    q->flags = acc ? 1u : 0u;
    return q;
}

static float psum_at(struct harness *h, uint32_t r, uint32_t c, uint32_t ddt)
{
    if (ddt == ISA_DT_BF16) {
        uint16_t b;
        memcpy(&b, harness_psum_ptr(h, r, 2 * (uint64_t)c), 2);
        return num_bf16_to_f32(b);
    }
    float f;
    memcpy(&f, harness_psum_ptr(h, r, 4 * (uint64_t)c), 4);
    return f;
}

static void check_mx(struct harness *h, uint32_t k, uint32_t m, uint32_t n, uint32_t sdt,
                     uint32_t mdt, uint32_t ddt, bool small_ints)
{
    harness_clear(h);
    fill_packed(h, k, m, sdt, SB_ST, small_ints);
    fill_packed(h, k, n, mdt, SB_MV, small_ints);
    fill_scales(h, k, m, SB_STS, small_ints ? 127 : 120, small_ints ? 3 : 14);
    fill_scales(h, k, n, SB_MVS, small_ints ? 126 : 122, small_ints ? 2 : 10);
    add_mx(h, k, m, n, sdt, mdt, ddt, false);
    assert_int_equal(harness_run(h), EMU_OK);
    double tol = ddt == ISA_DT_BF16 ? 1.0 / 256 : 1e-6;
    for (uint32_t r = 0; r < m; r++)
        for (uint32_t c = 0; c < n; c += 1 + c / 64) {
            double mag, want = ref_mx(h, k, sdt, mdt, r, c, &mag);
            float got = psum_at(h, r, c, ddt);
            if (small_ints && ddt == ISA_DT_F32)
                assert_true((double)got == want);
            else if (fabs(got - want) > tol * mag + 1e-30)
                fail_msg("nc_matmul_mx %ux%ux%u [%u][%u] = %.9g, reference %.9g", k, m, n, r, c,
                         (double)got, want);
        }
}

static void test_matmul_mx_reference(void **state)
{
    struct harness *h = *state;
    rnd_state = 7;
    const uint32_t types[] = {ISA_DT_FP8E5X4, ISA_DT_FP8E4FNX4, ISA_DT_FP4X4};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            check_mx(h, 64, 32, 96, types[a], types[b], ISA_DT_F32, a == b);
    check_mx(h, 128, 128, 512, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    check_mx(h, 32, 6, 40, ISA_DT_FP4X4, ISA_DT_FP8E5X4, ISA_DT_BF16, false);
    check_mx(h, 96, 16, 1100, ISA_DT_FP8E5X4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false); /* 3 chunks */
    /* 128-row scale tiles for 64-partition data (the NKI Library's
     * output_projection_cte): rows 0..3 and 32..35 are read, the rest not */
    harness_clear(h);
    fill_packed(h, 64, 16, ISA_DT_FP8E4FNX4, SB_ST, true);
    fill_packed(h, 64, 24, ISA_DT_FP8E4FNX4, SB_MV, true);
    fill_scales(h, 128, 16, SB_STS, 127, 3);
    fill_scales(h, 128, 24, SB_MVS, 126, 2);
    struct isa_insn *q = add_mx(h, 64, 16, 24, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    q->ap[3] = harness_tile(ISA_MEM_SBUF, 0, 128, SB_STS, ISA_DT_U8, 16);
    q->ap[4] = harness_tile(ISA_MEM_SBUF, 0, 128, SB_MVS, ISA_DT_FP8E8M0, 24);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t r = 0; r < 16; r++)
        for (uint32_t c = 0; c < 24; c++) {
            double mag;
            assert_true((double)psum_at(h, r, c, ISA_DT_F32) ==
                        ref_mx(h, 64, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, r, c, &mag));
        }
}

/* Accumulation into a bf16 PSUM tile: fp32 sum of the old value and the
 * products, rounded once. */
static void test_matmul_mx_bf16_accumulate(void **state)
{
    struct harness *h = *state;
    rnd_state = 11;
    harness_clear(h);
    fill_packed(h, 32, 4, ISA_DT_FP8E4FNX4, SB_ST, true);
    fill_packed(h, 32, 8, ISA_DT_FP8E4FNX4, SB_MV, true);
    fill_scales(h, 32, 4, SB_STS, 127, 1);
    fill_scales(h, 32, 8, SB_MVS, 127, 1);
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t c = 0; c < 8; c++) {
            uint16_t b = num_f32_to_bf16(0.5f * (float)(r + c));
            memcpy(harness_psum_ptr(h, r, 2 * c), &b, 2);
        }
    add_mx(h, 32, 4, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_BF16, true);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t c = 0; c < 8; c++) {
            double mag, want = ref_mx(h, 32, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, r, c, &mag);
            float exact = (float)(want + 0.5 * (r + c));
            assert_true(psum_at(h, r, c, ISA_DT_BF16) == num_bf16_to_f32(num_f32_to_bf16(exact)));
        }
}

/* Quantise a bf16 tile, multiply the MX result, compare with bf16 x bf16. */
static void test_quantize_then_matmul(void **state)
{
    struct harness *h = *state;
    rnd_state = 5;
    harness_clear(h);
    /* moving: quantised from bf16 [64 x 4*48]; stationary: exact small values */
    for (uint32_t r = 0; r < 64; r++)
        for (uint32_t c = 0; c < 192; c++) {
            uint16_t b = bf16_of(((float)(rnd() % 255) - 127.0f) / 64.0f);
            memcpy(harness_sbuf_ptr(h, r, SB_SRC + 2 * c), &b, 2);
        }
    struct isa_insn *q = harness_add(h, ISA_ENG_DVE, ISA_OP_quantize_mx);
    q->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 64, SB_MV, ISA_DT_FP8E4FNX4, 48);
    q->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 64, SB_MVS, ISA_DT_FP8E8M0, 48);
    q->ap[2] = harness_tile(ISA_MEM_SBUF, 0, 64, SB_SRC, ISA_DT_BF16, 192);
    q->signal[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_SEMOP_add, 1, 1};
    fill_packed(h, 64, 8, ISA_DT_FP8E4FNX4, SB_ST, true);
    fill_scales(h, 64, 8, SB_STS, 127, 1);
    struct isa_insn *mm = add_mx(h, 64, 8, 48, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32,
                                 false);
    mm->wait[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, 1, 1};
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t r = 0; r < 8; r++)
        for (uint32_t c = 0; c < 48; c++) {
            double want = 0, mag = 0;
            for (uint32_t p = 0; p < 64; p++)
                for (unsigned j = 0; j < 4; j++) {
                    uint16_t b;
                    memcpy(&b, harness_sbuf_ptr(h, p, SB_SRC + 2 * (4 * c + j)), 2);
                    double t = lane_value(ISA_DT_FP8E4FNX4, harness_sbuf_ptr(h, p, SB_ST + 4 * r), j) *
                               num_bf16_to_f32(b);
                    want += t;
                    mag += fabs(t);
                }
            assert_true(fabs(psum_at(h, r, c, ISA_DT_F32) - want) <= mag / 16 + 1e-6);
        }
}

/* nc_matmul on NeuronCore-v4: float8_e4m3fn stationary, bf16 moving,
 * bf16 PSUM result (fp32 sum rounded once), then accumulating into it. */
static void test_nc_matmul_v4_forms(void **state)
{
    struct harness *h = *state;
    enum { K = 32, M = 8, N = 16 };
    harness_clear(h);
    float a[K][M], b[K][N];
    for (int k = 0; k < K; k++) {
        for (int m = 0; m < M; m++) {
            a[k][m] = (float)((k * 3 + m) % 9) - 4.0f;
            *harness_sbuf_ptr(h, (uint32_t)k, SB_ST + (uint64_t)m) = num_f32_to_e4m3fn(a[k][m], false);
        }
        for (int n = 0; n < N; n++) {
            b[k][n] = ((float)((k + 5 * n) % 11) - 5.0f) * 1.0078125f; /* sums need rounding */
            uint16_t hb = num_f32_to_bf16(b[k][n]);
            b[k][n] = num_bf16_to_f32(hb);
            memcpy(harness_sbuf_ptr(h, (uint32_t)k, SB_MV + 2 * (uint64_t)n), &hb, 2);
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        struct isa_insn *q = harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul);
        q->ap[0] = harness_tile(ISA_MEM_PSUM, 0, M, 0, ISA_DT_BF16, N);
        q->ap[1] = harness_tile(ISA_MEM_SBUF, 0, K, SB_ST, ISA_DT_FP8E4FN, M);
        q->ap[2] = harness_tile(ISA_MEM_SBUF, 0, K, SB_MV, ISA_DT_BF16, N);
        q->flags = pass ? 1u : 0u;
    }
    assert_int_equal(harness_run(h), EMU_OK);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s = fmaf(a[k][m], b[k][n], s);
            float once = num_bf16_to_f32(num_f32_to_bf16(s));
            float acc = once;
            for (int k = 0; k < K; k++)
                acc = fmaf(a[k][m], b[k][n], acc);
            assert_true(psum_at(h, (uint32_t)m, (uint32_t)n, ISA_DT_BF16) ==
                        num_bf16_to_f32(num_f32_to_bf16(acc)));
        }
    /* legacy fp8 mixed with e4m3fn, and a bf16 dst on v3, are refused */
    harness_clear(h);
    struct isa_insn *q = harness_add(h, ISA_ENG_PE, ISA_OP_nc_matmul);
    q->ap[0] = harness_tile(ISA_MEM_PSUM, 0, M, 0, ISA_DT_F32, N);
    q->ap[1] = harness_tile(ISA_MEM_SBUF, 0, K, SB_ST, ISA_DT_FP8E4FN, M);
    q->ap[2] = harness_tile(ISA_MEM_SBUF, 0, K, SB_MV, ISA_DT_FP8E4, N);
    assert_int_not_equal(harness_run(h), EMU_OK);
    struct harness *v3 = harness_new(3);
    q = harness_add(v3, ISA_ENG_PE, ISA_OP_nc_matmul);
    q->ap[0] = harness_tile(ISA_MEM_PSUM, 0, M, 0, ISA_DT_BF16, N);
    q->ap[1] = harness_tile(ISA_MEM_SBUF, 0, K, SB_ST, ISA_DT_BF16, M);
    q->ap[2] = harness_tile(ISA_MEM_SBUF, 0, K, SB_MV, ISA_DT_BF16, N);
    assert_int_not_equal(harness_run(v3), EMU_OK);
    harness_free(v3);
}

/* ---- refusals ------------------------------------------------------------------- */

static void expect_fail(struct harness *h, const char *needle)
{
    assert_int_not_equal(harness_run(h), EMU_OK);
    if (strstr(h->report, needle) == NULL)
        fail_msg("report lacks '%s': %s", needle, h->report);
}

static void test_refusals(void **state)
{
    struct harness *h = *state;
    harness_clear(h);
    add_mx(h, 48, 8, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    expect_fail(h, "multiple of 32");
    harness_clear(h);
    add_mx(h, 32, 7, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    expect_fail(h, "M even");
    harness_clear(h);
    add_mx(h, 32, 8, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F16, false);
    expect_fail(h, "writes f32 or bf16");
    harness_clear(h);
    struct isa_insn *q = add_mx(h, 64, 8, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    q->ap[4] = harness_tile(ISA_MEM_SBUF, 32, 64, SB_MVS, ISA_DT_U8, 8);
    expect_fail(h, "quadrant");
    harness_clear(h); /* 64 partitions read scale rows up to 35 */
    q = add_mx(h, 64, 8, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    q->ap[4] = harness_tile(ISA_MEM_SBUF, 0, 35, SB_MVS, ISA_DT_U8, 8);
    expect_fail(h, "needs at least 36 rows");
    harness_clear(h);
    q = add_mx(h, 32, 8, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    q->imm[3].i = 64;
    expect_fail(h, "row tiling only");
    harness_clear(h);
    add_quantize(h, 32, 4, ISA_DT_FP4X4, 0, 4);
    expect_fail(h, "cannot write fp4");
    harness_clear(h);
    add_quantize(h, 40, 4, ISA_DT_FP8E4FNX4, 0, 40);
    expect_fail(h, "multiple of 32");
    /* A NeuronCore-v3 core refuses both. */
    struct harness *v3 = harness_new(3);
    add_quantize(v3, 32, 4, ISA_DT_FP8E4FNX4, 0, 4);
    expect_fail(v3, "needs NeuronCore-v4");
    harness_clear(v3);
    add_mx(v3, 32, 8, 8, ISA_DT_FP8E4FNX4, ISA_DT_FP8E4FNX4, ISA_DT_F32, false);
    expect_fail(v3, "needs NeuronCore-v4");
    harness_free(v3);
    /* Packed types are refused by other ops when the instruction is checked. */
    struct isa_insn bad;
    struct isa_fault f;
    assert_int_equal(isa_insn_init(&bad, ISA_ENG_DVE, ISA_OP_tensor_copy), EMU_OK);
    bad.ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_FP8E4FNX4, 4);
    bad.ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, 64, ISA_DT_FP8E4FNX4, 4);
    assert_int_equal(isa_validate(&bad, &f), EMU_INVALID);
    assert_non_null(strstr(f.msg, "packs four values"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_quantize_formula, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_quantize_specials, setup_v4, teardown),
        cmocka_unit_test(test_quantize_kernels_exhaustive),
        cmocka_unit_test_setup_teardown(test_quantize_levels, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_quantize_in_place, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_mx_reference, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_mx_bf16_accumulate, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_quantize_then_matmul, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_nc_matmul_v4_forms, setup_v4, teardown),
        cmocka_unit_test_setup_teardown(test_refusals, setup_v4, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
