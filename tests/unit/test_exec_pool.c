/*
 * test_exec_pool.c: the selection, gather, sort and statistics
 * instructions (exec_pool.c) against plain-C references written here from
 * the NKI ISA reference and the choices of docs/isa.md: bn_stats/bn_aggr,
 * max8, nc_find_index8, nc_match_replace8, select_reduce, range_select,
 * affine_select, local_gather, nc_n_gather, nc_stream_shuffle,
 * sequence_bounds, nonzero_with_count, topk and the refused quantize_mx;
 * with several dtypes, strided and offset patterns, in-place operands,
 * accumulator commands, out-of-bounds and shape errors.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/num/numerics.h"
#include "exec_harness.h"

#define SB ISA_MEM_SBUF
#define PS ISA_MEM_PSUM
#define ERR EMU_EXEC_ERR

/* ---- helpers ------------------------------------------------------------ */

static int setup(void **state)
{
    *state = harness_new(3);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    return 0;
}

static uint64_t rng = 0x2545f4914f6cdd1du;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Small values with many repeats, plus specials now and then. */
static float rnd_f(bool specials)
{
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN};
    uint64_t r = rnd();
    if (specials && r % 16 == 0)
        return special[(r >> 8) % 5];
    return (float)((int64_t)(r >> 20) % 64 - 32) / 4.0f;
}

static uint8_t *mp(struct harness *h, uint8_t mem, uint32_t p, uint64_t off)
{
    return mem == PS ? harness_psum_ptr(h, p, off) : harness_sbuf_ptr(h, p, off);
}

/* Element i of partition p at byte offset off, as dtype dt. */
static void wr_f(struct harness *h, uint8_t mem, uint32_t p, uint64_t off, uint32_t dt,
                 uint64_t i, float v)
{
    (void)num_from_f32(dt, mp(h, mem, p, off + i * isa_dtype_size(dt)), v, NULL, 0);
}

static float rd_f(struct harness *h, uint8_t mem, uint32_t p, uint64_t off, uint32_t dt,
                  uint64_t i)
{
    return num_to_f32(dt, mp(h, mem, p, off + i * isa_dtype_size(dt)));
}

static void wr_i(struct harness *h, uint8_t mem, uint32_t p, uint64_t off, uint32_t dt,
                 uint64_t i, int64_t v)
{
    memcpy(mp(h, mem, p, off + i * isa_dtype_size(dt)), &v, isa_dtype_size(dt));
}

static uint64_t rd_u(struct harness *h, uint8_t mem, uint32_t p, uint64_t off, uint32_t dt,
                     uint64_t i)
{
    uint64_t v = 0;
    memcpy(&v, mp(h, mem, p, off + i * isa_dtype_size(dt)), isa_dtype_size(dt));
    return v;
}

static int32_t rd_i32(struct harness *h, uint32_t p, uint64_t off, uint64_t i)
{
    return (int32_t)(uint32_t)rd_u(h, SB, p, off, ISA_DT_I32, i);
}

/* x rounded into dt and read back. */
static float rt(uint32_t dt, float x)
{
    uint64_t b = 0;
    (void)num_from_f32(dt, &b, x, NULL, 0);
    return num_to_f32(dt, &b);
}

/* Equal floats, NaN equal to NaN, -0 equal to +0 only when loose. */
static void eq_f(float have, float want, const char *what, unsigned r, unsigned i)
{
    if ((isnan(have) && isnan(want)) || have == want)
        return;
    fail_msg("%s [%u][%u]: have %.9g want %.9g", what, r, i, (double)have, (double)want);
}

static void near_f(float have, double want, double tol, const char *what, unsigned r, unsigned i)
{
    if (fabs((double)have - want) <= tol * fmax(1.0, fabs(want)))
        return;
    fail_msg("%s [%u][%u]: have %.9g want %.9g", what, r, i, (double)have, want);
}

static struct isa_insn *add(struct harness *h, enum isa_engine e, unsigned op)
{
    harness_clear(h);
    return harness_add(h, e, op);
}

static emu_status run(struct harness *h)
{
    return harness_run(h);
}

/* ---- bn_stats / bn_aggr -------------------------------------------------------------- */

/* Double-precision reference of one half (even or odd elements). */
static void ref_half(const float *x, unsigned n, unsigned first, double out[3])
{
    double c = 0, s = 0, m2 = 0;
    for (unsigned i = first; i < n; i += 2) {
        s += x[i];
        c += 1;
    }
    double mean = c > 0 ? s / c : 0;
    for (unsigned i = first; i < n; i += 2)
        m2 += (x[i] - mean) * (x[i] - mean);
    out[0] = c;
    out[1] = mean;
    out[2] = m2;
}

static void test_bn_stats(void **state)
{
    struct harness *h = *state;
    static const unsigned sizes[] = {1, 2, 37, 512};
    static const uint32_t dts[] = {ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_I16};
    for (unsigned s = 0; s < 4; s++) {
        unsigned n = sizes[s], np = s == 3 ? 128 : 3;
        uint32_t dt = dts[s];
        static float x[128][512];
        for (unsigned p = 0; p < np; p++)
            for (unsigned i = 0; i < n; i++) {
                x[p][i] = rt(dt, rnd_f(false) * 3.0f + (float)p);
                wr_f(h, SB, p, 0, dt, i, x[p][i]);
            }
        struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_bn_stats);
        in->ap[0] = harness_tile(PS, 0, np, 64, ISA_DT_F32, 6);
        in->ap[1] = harness_tile(SB, 0, np, 0, dt, n);
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < np; p++) {
            double want[6];
            ref_half(x[p], n, 0, want);
            ref_half(x[p], n, 1, want + 3);
            for (unsigned k = 0; k < 6; k++)
                near_f(rd_f(h, PS, p, 64, ISA_DT_F32, k), want[k], 1e-5, "bn_stats", p, k);
        }
    }
}

/* bn_stats on three tiles of one long row, then bn_aggr over the 18 values. */
static void test_bn_aggr(void **state)
{
    struct harness *h = *state;
    enum { NP = 5, N = 1124 };
    static const unsigned cut[4] = {0, 512, 1024, N};
    static float x[NP][N];
    for (unsigned p = 0; p < NP; p++)
        for (unsigned i = 0; i < N; i++) {
            x[p][i] = rnd_f(false) + 10.0f * (float)p;
            wr_f(h, SB, p, 0, ISA_DT_F32, i, x[p][i]);
        }
    harness_clear(h);
    for (unsigned t = 0; t < 3; t++) {
        struct isa_insn *in = harness_add(h, ISA_ENG_DVE, ISA_OP_bn_stats);
        in->ap[0] = harness_tile(SB, 0, NP, 8192 + 24 * t, ISA_DT_F32, 6);
        in->ap[1] = harness_tile(SB, 0, NP, 4 * cut[t], ISA_DT_F32, cut[t + 1] - cut[t]);
    }
    struct isa_insn *ag = harness_add(h, ISA_ENG_DVE, ISA_OP_bn_aggr);
    ag->ap[0] = harness_tile(SB, 0, NP, 9000, ISA_DT_BF16, 2);
    ag->ap[1] = harness_tile(SB, 0, NP, 8192, ISA_DT_F32, 18);
    struct isa_insn *ag2 = harness_add(h, ISA_ENG_DVE, ISA_OP_bn_aggr);
    ag2->ap[0] = harness_tile(SB, 0, NP, 9100, ISA_DT_F32, 2);
    ag2->ap[1] = harness_tile(SB, 0, NP, 8192, ISA_DT_F32, 18);
    assert_int_equal(run(h), EMU_OK);
    for (unsigned p = 0; p < NP; p++) {
        double s = 0, m2 = 0;
        for (unsigned i = 0; i < N; i++)
            s += x[p][i];
        double mean = s / N;
        for (unsigned i = 0; i < N; i++)
            m2 += (x[p][i] - mean) * (x[p][i] - mean);
        near_f(rd_f(h, SB, p, 9100, ISA_DT_F32, 0), mean, 1e-5, "mean", p, 0);
        near_f(rd_f(h, SB, p, 9100, ISA_DT_F32, 1), m2 / N, 1e-4, "var", p, 1);
        eq_f(rd_f(h, SB, p, 9000, ISA_DT_BF16, 0), rt(ISA_DT_BF16, rd_f(h, SB, p, 9100,
             ISA_DT_F32, 0)), "bf16 mean", p, 0);
    }
    /* Zero counts contribute nothing; all zero gives 0, 0. */
    const float tri[6] = {0.0f, NAN, NAN, 2.0f, 3.0f, 8.0f};
    for (unsigned i = 0; i < 6; i++)
        wr_f(h, SB, 0, 0, ISA_DT_F32, i, tri[i]);
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_bn_aggr);
    in->ap[0] = harness_tile(SB, 0, 1, 100, ISA_DT_F32, 2);
    in->ap[1] = harness_tile(SB, 0, 1, 0, ISA_DT_F32, 6);
    assert_int_equal(run(h), EMU_OK);
    eq_f(rd_f(h, SB, 0, 100, ISA_DT_F32, 0), 3.0f, "mean", 0, 0);
    eq_f(rd_f(h, SB, 0, 100, ISA_DT_F32, 1), 4.0f, "var", 0, 1);
    in->ap[1] = harness_tile(SB, 0, 1, 0, ISA_DT_F32, 3);
    assert_int_equal(run(h), EMU_OK);
    eq_f(rd_f(h, SB, 0, 100, ISA_DT_F32, 0), 0.0f, "empty mean", 0, 0);
    eq_f(rd_f(h, SB, 0, 100, ISA_DT_F32, 1), 0.0f, "empty var", 0, 1);
}

static void test_bn_errors(void **state)
{
    struct harness *h = *state;
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_bn_stats);
    in->ap[0] = harness_tile(SB, 0, 2, 8192, ISA_DT_F32, 6);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 513);
    assert_int_equal(run(h), ERR);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 512);
    in->ap[0] = harness_tile(SB, 0, 2, 8192, ISA_DT_F32, 5);
    assert_int_equal(run(h), ERR);
    in->ap[0] = harness_tile(SB, 0, 3, 8192, ISA_DT_F32, 6);
    assert_int_equal(run(h), ERR);
    in->ap[0] = harness_tile(SB, 0, 2, 229376 - 8, ISA_DT_F32, 6);
    assert_int_equal(run(h), EMU_EXEC_OOB);
    in = add(h, ISA_ENG_DVE, ISA_OP_bn_aggr);
    in->ap[0] = harness_tile(SB, 0, 2, 8192, ISA_DT_F32, 2);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 7);
    assert_int_equal(run(h), ERR);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 6);
    in->ap[0] = harness_tile(SB, 0, 2, 8192, ISA_DT_F32, 3);
    assert_int_equal(run(h), ERR);
}

/* ---- max8 ---------------------------------------------------------------------------- */

static bool above(float a, float b)
{
    return isnan(a) ? !isnan(b) : a > b;
}

/* Stable descending insertion sort with NaN first. */
static void ref_sort_desc(float *x, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        float v = x[i];
        unsigned j = i;
        while (j > 0 && above(v, x[j - 1])) {
            x[j] = x[j - 1];
            j--;
        }
        x[j] = v;
    }
}

static void test_max8(void **state)
{
    struct harness *h = *state;
    static const uint32_t dts[] = {ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_FP8E4,
                                   ISA_DT_I32, ISA_DT_U8};
    static const unsigned sizes[] = {8, 9, 37, 200, 1000, 16384};
    static float x[16384];
    for (unsigned c = 0; c < 6; c++) {
        uint32_t dt = dts[c];
        unsigned n = sizes[c], np = c == 2 ? 128 : 3;
        bool ints = !isa_dtype_is_float(dt);
        uint32_t base = np == 128 ? 0 : 1;
        for (unsigned p = 0; p < np; p++)
            for (unsigned i = 0; i < n; i++)
                wr_f(h, SB, base + p, 0, dt, i, ints ? fabsf(rnd_f(false)) * 4 : rnd_f(true));
        struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_max8);
        in->ap[0] = harness_tile(SB, base, np, 100000, ISA_DT_F32, 8);
        in->ap[1] = harness_tile(SB, base, np, 0, dt, n);
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < np; p++) {
            for (unsigned i = 0; i < n; i++)
                x[i] = rd_f(h, SB, base + p, 0, dt, i);
            ref_sort_desc(x, n);
            for (unsigned k = 0; k < 8; k++)
                eq_f(rd_f(h, SB, base + p, 100000, ISA_DT_F32, k), x[k], "max8", p, k);
        }
    }
}

/* A 3-D source pattern with a negative step, bf16 output. */
static void test_max8_strided(void **state)
{
    struct harness *h = *state;
    const int32_t dims[3][2] = {{20, 3}, {-2, 5}, {1, 2}}; /* from element 10 */
    float x[30];
    for (unsigned p = 0; p < 4; p++) {
        for (unsigned i = 0; i < 80; i++)
            wr_f(h, SB, p, 0, ISA_DT_F32, i, rnd_f(true));
        unsigned k = 0;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 5; b++)
                for (int c = 0; c < 2; c++)
                    x[k++] = rd_f(h, SB, p, 0, ISA_DT_F32, (uint64_t)(10 + 20 * a - 2 * b + c));
        ref_sort_desc(x, 30);
        for (unsigned i = 0; i < 8; i++)
            x[i] = rt(ISA_DT_BF16, x[i]);
        struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_max8);
        in->ap[0] = harness_tile(PS, 0, 4, 0, ISA_DT_BF16, 8);
        in->ap[1] = harness_sbuf(0, 4, 40, ISA_DT_F32, 3, dims);
        assert_int_equal(run(h), EMU_OK);
        for (unsigned i = 0; i < 8; i++)
            eq_f(rd_f(h, PS, p, 0, ISA_DT_BF16, i), x[i], "max8 strided", p, i);
    }
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_max8);
    in->ap[0] = harness_tile(SB, 0, 2, 100000, ISA_DT_F32, 8);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 7);
    assert_int_equal(run(h), ERR);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 16385);
    assert_int_equal(run(h), ERR);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_F32, 16);
    in->ap[0] = harness_tile(SB, 0, 2, 100000, ISA_DT_F32, 9);
    assert_int_equal(run(h), ERR);
    in->ap[0] = harness_tile(SB, 127, 2, 100000, ISA_DT_F32, 8);
    assert_int_equal(run(h), EMU_EXEC_OOB);
    /* HBM operands are refused (the op table allows only SBUF and PSUM). */
    static float hbm[2 * 16];
    const int32_t hd[1][2] = {{1, 16}};
    harness_var(h, 7, "v", hbm, sizeof hbm);
    in->ap[0] = harness_tile(SB, 0, 2, 100000, ISA_DT_F32, 8);
    in->ap[1] = harness_hbm(7, 0, 2, 16, ISA_DT_F32, 1, hd);
    assert_int_equal(run(h), ERR);
}

/* ---- nc_find_index8 / nc_match_replace8 ------------------------------------------------ */

/* Sequential reference: vals taken in `order`, each claiming the first
 * unclaimed equal position. */
static void ref_match(const float *d, unsigned n, const float *vals, bool desc, int64_t *idx)
{
    bool used[16384] = {false};
    for (int k = 0; k < 8; k++) {
        int i = desc ? 7 - k : k;
        idx[i] = -1;
        for (unsigned j = 0; j < n; j++)
            if (!used[j] && d[j] == vals[i]) {
                idx[i] = j;
                used[j] = true;
                break;
            }
    }
}

static void fill_match(struct harness *h, unsigned np, unsigned n, float d[][300], float v[][8])
{
    for (unsigned p = 0; p < np; p++) {
        for (unsigned j = 0; j < n; j++) {
            d[p][j] = (float)(rnd() % 12);
            wr_f(h, SB, p, 0, ISA_DT_F32, j, d[p][j]);
        }
        for (unsigned i = 0; i < 8; i++) {
            v[p][i] = i == 7 ? NAN : (float)(rnd() % 14); /* 12, 13: absent */
            wr_f(h, SB, p, 4096, ISA_DT_BF16, i, v[p][i]);
        }
    }
}

static void test_find_index8(void **state)
{
    struct harness *h = *state;
    enum { NP = 6, N = 40 };
    static float d[NP][300], v[NP][8];
    for (unsigned u = 0; u < 2; u++) {
        uint32_t odt = u ? ISA_DT_U16 : ISA_DT_U32;
        fill_match(h, NP, N, d, v);
        struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_nc_find_index8);
        in->ap[0] = harness_tile(SB, 0, NP, 8192, odt, 8);
        in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_F32, N);
        in->ap[2] = harness_tile(SB, 0, NP, 4096, ISA_DT_BF16, 8);
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < NP; p++) {
            int64_t want[8];
            ref_match(d[p], N, v[p], false, want);
            for (unsigned i = 0; i < 8; i++) {
                uint64_t w = want[i] < 0 ? (u ? 0xffffu : 0xffffffffu) : (uint64_t)want[i];
                assert_int_equal(rd_u(h, SB, p, 8192, odt, i), w);
            }
        }
    }
    /* Duplicates in vals take successive occurrences in ascending columns. */
    const float dd[11] = {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8}, vv[8] = {3, 8, 8, 8, 8, 8, 8, 8};
    for (unsigned j = 0; j < 11; j++)
        wr_f(h, SB, 0, 0, ISA_DT_F32, j, dd[j]);
    for (unsigned i = 0; i < 8; i++)
        wr_f(h, SB, 0, 4096, ISA_DT_F32, i, vv[i]);
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_nc_find_index8);
    in->ap[0] = harness_tile(SB, 0, 1, 8192, ISA_DT_U32, 8);
    in->ap[1] = harness_tile(SB, 0, 1, 0, ISA_DT_F32, 11);
    in->ap[2] = harness_tile(SB, 0, 1, 4096, ISA_DT_F32, 8);
    assert_int_equal(run(h), EMU_OK);
    static const unsigned want[8] = {2, 4, 5, 6, 7, 8, 9, 10};
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(rd_u(h, SB, 0, 8192, ISA_DT_U32, i), want[i]);
    in->ap[0].dtype = ISA_DT_F32;
    assert_int_equal(run(h), ERR);
    in->ap[0].dtype = ISA_DT_U32;
    in->ap[2] = harness_tile(SB, 0, 1, 4096, ISA_DT_F32, 7);
    assert_int_equal(run(h), ERR);
    in->ap[2] = harness_tile(SB, 0, 1, 4096, ISA_DT_F32, 8);
    in->ap[1] = harness_tile(SB, 0, 1, 0, ISA_DT_F32, 7);
    assert_int_equal(run(h), ERR);
}

static void test_match_replace8(void **state)
{
    struct harness *h = *state;
    /* The reference's example. */
    const float dd[11] = {1, 2, 3, 4, 8, 8, 8, 8, 8, 8, 8}, vv[8] = {3, 8, 8, 8, 8, 8, 8, 8};
    for (unsigned j = 0; j < 11; j++)
        wr_f(h, SB, 2, 0, ISA_DT_F32, j, dd[j]);
    for (unsigned i = 0; i < 8; i++)
        wr_f(h, SB, 2, 4096, ISA_DT_F32, i, vv[i]);
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_nc_match_replace8);
    in->ap[0] = harness_tile(SB, 2, 1, 0, ISA_DT_F32, 11); /* in place */
    in->ap[1] = harness_tile(SB, 2, 1, 0, ISA_DT_F32, 11);
    in->ap[2] = harness_tile(SB, 2, 1, 4096, ISA_DT_F32, 8);
    in->ap[3] = harness_tile(SB, 2, 1, 8192, ISA_DT_U32, 8);
    in->fimm[0] = -1.5f;
    assert_int_equal(run(h), EMU_OK);
    static const unsigned want[8] = {2, 10, 9, 8, 7, 6, 5, 4};
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(rd_u(h, SB, 2, 8192, ISA_DT_U32, i), want[i]);
    static const float wd[11] = {1, 2, -1.5f, 4, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f, -1.5f};
    for (unsigned j = 0; j < 11; j++)
        eq_f(rd_f(h, SB, 2, 0, ISA_DT_F32, j), wd[j], "replaced", 0, j);

    /* Random rows, bf16 output, u16 indices. */
    enum { NP = 5, N = 300 };
    static float d[NP][300], v[NP][8];
    fill_match(h, NP, N, d, v);
    in = add(h, ISA_ENG_DVE, ISA_OP_nc_match_replace8);
    in->ap[0] = harness_tile(PS, 0, NP, 0, ISA_DT_BF16, N);
    in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_F32, N);
    in->ap[2] = harness_tile(SB, 0, NP, 4096, ISA_DT_BF16, 8);
    in->ap[3] = harness_tile(SB, 0, NP, 8192, ISA_DT_U16, 8);
    in->fimm[0] = 100.0f;
    assert_int_equal(run(h), EMU_OK);
    for (unsigned p = 0; p < NP; p++) {
        int64_t idx[8];
        ref_match(d[p], N, v[p], true, idx);
        for (unsigned i = 0; i < 8; i++) {
            assert_int_equal(rd_u(h, SB, p, 8192, ISA_DT_U16, i),
                             idx[i] < 0 ? 0xffffu : (uint64_t)idx[i]);
            if (idx[i] >= 0)
                d[p][idx[i]] = 100.0f;
        }
        for (unsigned j = 0; j < N; j++)
            eq_f(rd_f(h, PS, p, 0, ISA_DT_BF16, j), d[p][j], "replace row", p, j);
    }
    /* Without dst_idx; then errors. */
    in->ap[3] = (struct isa_ap){0};
    assert_int_equal(run(h), EMU_OK);
    in->ap[3] = harness_tile(SB, 0, NP, 8192, ISA_DT_I32, 8);
    assert_int_equal(run(h), ERR);
    in->ap[3] = harness_tile(SB, 0, NP, 8192, ISA_DT_U32, 9);
    assert_int_equal(run(h), ERR);
    in->ap[3] = (struct isa_ap){0};
    in->ap[0] = harness_tile(PS, 0, NP, 0, ISA_DT_BF16, N - 1);
    assert_int_equal(run(h), ERR);
}

/* ---- select_reduce ------------------------------------------------------------------- */

static void test_select_reduce(void **state)
{
    struct harness *h = *state;
    enum { NP = 4, N = 33 };
    static const uint32_t pdt[2] = {ISA_DT_U8, ISA_DT_I16};
    static const uint32_t tdt[2] = {ISA_DT_F32, ISA_DT_BF16};
    float acc[NP];
    for (unsigned c = 0; c < 4; c++) {
        bool rev = c & 1, tile_false = c & 2;
        float pred[NP][N], tv[NP][N], fv[NP];
        for (unsigned p = 0; p < NP; p++) {
            fv[p] = tile_false ? (float)p - 50.0f : -7.0f;
            wr_f(h, SB, p, 3000, ISA_DT_F32, 0, fv[p]);
            for (unsigned i = 0; i < N; i++) {
                pred[p][i] = (float)(rnd() % 3);
                tv[p][i] = rt(tdt[c & 1], rnd_f(false));
                wr_f(h, SB, p, 0, pdt[c & 1], i, pred[p][i] * (c == 1 ? -1.0f : 1.0f));
                wr_f(h, PS, p, 0, tdt[c & 1], i, tv[p][i]);
            }
        }
        struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_select_reduce);
        in->ap[0] = harness_tile(SB, 0, NP, 1000, ISA_DT_F32, N);
        in->ap[1] = harness_tile(SB, 0, NP, 0, pdt[c & 1], N);
        in->ap[2] = harness_tile(PS, 0, NP, 0, tdt[c & 1], N);
        if (tile_false)
            in->ap[3] = harness_tile(SB, 0, NP, 3000, ISA_DT_F32, 1);
        else
            in->fimm[0] = -7.0f;
        in->ap[4] = harness_tile(SB, 0, NP, 2000, ISA_DT_F32, 1);
        in->flags = rev ? 1 : 0;
        in->enums[0] = c == 0 ? ISA_RCMD_idle : c == 1 ? ISA_RCMD_reset_reduce : ISA_RCMD_reduce;
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < NP; p++) {
            float m = -INFINITY;
            for (unsigned i = 0; i < N; i++) {
                float want = ((pred[p][i] != 0) != rev) ? tv[p][i] : fv[p];
                m = fmaxf(m, want);
                eq_f(rd_f(h, SB, p, 1000, ISA_DT_F32, i), want, "select", p, i);
            }
            if (c == 1)
                acc[p] = m;
            else if (c > 1)
                acc[p] = fmaxf(acc[p], m);
            eq_f(rd_f(h, SB, p, 2000, ISA_DT_F32, 0), c == 0 ? m : acc[p], "reduce_res", p, 0);
        }
    }
    /* Without reduce_res the accumulator still moves: reset, then read it back. */
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_select_reduce);
    in->ap[0] = harness_tile(SB, 0, NP, 1000, ISA_DT_BF16, N);
    in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_I16, N);
    in->ap[2] = harness_tile(PS, 0, NP, 0, ISA_DT_BF16, N);
    in->enums[0] = ISA_RCMD_reset;
    struct isa_insn *rd = harness_add(h, ISA_ENG_DVE, ISA_OP_select_reduce);
    *rd = *in;
    rd->enums[0] = ISA_RCMD_reduce;
    rd->ap[4] = harness_tile(SB, 0, NP, 2000, ISA_DT_BF16, 1);
    rd->fimm[0] = -INFINITY;
    assert_int_equal(run(h), EMU_OK);
    for (unsigned p = 0; p < NP; p++) {
        float m = -INFINITY;
        for (unsigned i = 0; i < N; i++)
            m = fmaxf(m, rd_f(h, SB, p, 1000, ISA_DT_BF16, i));
        eq_f(rd_f(h, SB, p, 2000, ISA_DT_BF16, 0), m, "reset then reduce", p, 0);
    }
}

static void test_select_errors(void **state)
{
    struct harness *h = *state;
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_select_reduce);
    in->ap[0] = harness_tile(SB, 0, 2, 1000, ISA_DT_F32, 8);
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_U8, 8);
    in->ap[2] = harness_tile(SB, 0, 2, 100, ISA_DT_F32, 8);
    assert_int_equal(run(h), EMU_OK);
    struct isa_insn ok = *in;
    in->ap[1].dtype = ISA_DT_F32;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2].dtype = ISA_DT_I32;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[1].mem = PS;
    in->ap[2].mem = PS;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->enums[1] = ISA_ALU_add;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->enums[0] = ISA_RCMD_load_reduce;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2] = harness_tile(SB, 0, 2, 100, ISA_DT_F32, 9);
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[3] = harness_tile(SB, 0, 2, 100, ISA_DT_F32, 2);
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[4] = harness_tile(SB, 0, 2, 100, ISA_DT_I32, 1);
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2].offset = 229376 - 16;
    assert_int_equal(run(h), EMU_EXEC_OOB);
}

/* ---- range_select -------------------------------------------------------------------- */

static bool ref_cmp(unsigned op, float a, float b)
{
    switch (op) {
    case ISA_ALU_equal: return a == b;
    case ISA_ALU_greater: return a > b;
    case ISA_ALU_greater_equal: return a >= b;
    case ISA_ALU_less: return a < b;
    default: return a <= b;
    }
}

static void test_range_select(void **state)
{
    struct harness *h = *state;
    enum { NP = 3, N = 50 };
    static const unsigned ops[5] = {ISA_ALU_equal, ISA_ALU_greater, ISA_ALU_greater_equal,
                                    ISA_ALU_less, ISA_ALU_less_equal};
    float acc[NP] = {0};
    for (unsigned c = 0; c < 5; c++) {
        unsigned op0 = ops[c], op1 = ops[(c + 3) % 5];
        int64_t start = (int64_t)c * 7 - 10;
        uint32_t ddt = c == 2 ? ISA_DT_BF16 : ISA_DT_F32;
        float x[NP][N], b0[NP], b1[NP];
        for (unsigned p = 0; p < NP; p++) {
            b0[p] = (float)(rnd() % 40) - 5.0f;
            b1[p] = (float)(rnd() % 60);
            wr_f(h, SB, p, 4000, ISA_DT_F32, 0, b0[p]);
            wr_f(h, SB, p, 4004, ISA_DT_F32, 0, b1[p]);
            for (unsigned j = 0; j < N; j++) {
                x[p][j] = rt(ISA_DT_F16, rnd_f(false));
                wr_f(h, SB, p, 0, ISA_DT_F16, j, x[p][j]);
            }
        }
        struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_range_select);
        in->ap[0] = harness_tile(SB, 0, NP, 1000, ddt, N);
        in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_F16, N);
        in->ap[2] = harness_tile(SB, 0, NP, 4000, ISA_DT_F32, 1);
        in->ap[3] = harness_tile(SB, 0, NP, 4004, ISA_DT_F32, 1);
        in->ap[4] = harness_tile(SB, 0, NP, 3000, ISA_DT_F32, 1);
        in->enums[0] = (uint8_t)op0;
        in->enums[1] = (uint8_t)op1;
        in->enums[2] = c == 4 ? ISA_RCMD_reduce : ISA_RCMD_reset_reduce;
        in->imm[0].i = start;
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < NP; p++) {
            float m = -INFINITY;
            for (unsigned j = 0; j < N; j++) {
                float ix = (float)(start + (int64_t)j);
                bool keep = ref_cmp(op0, ix, b0[p]) && ref_cmp(op1, ix, b1[p]);
                float want = keep ? x[p][j] : -FLT_MAX;
                m = fmaxf(m, want);
                eq_f(rd_f(h, SB, p, 1000, ddt, j), rt(ddt, want), "range_select", p, j);
                if (!keep && ddt == ISA_DT_BF16)
                    assert_true(isinf(rd_f(h, SB, p, 1000, ddt, j)));
            }
            acc[p] = c == 4 ? fmaxf(acc[p], m) : m;
            eq_f(rd_f(h, SB, p, 3000, ISA_DT_F32, 0), acc[p], "range reduce", p, 0);
        }
    }
    struct isa_insn *in = &h->insns[ISA_ENG_DVE][0];
    struct isa_insn ok = *in;
    in->enums[0] = ISA_ALU_not_equal;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2].dtype = ISA_DT_BF16;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[1].dtype = ISA_DT_I16;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[3] = harness_tile(SB, 0, NP, 4004, ISA_DT_F32, 2);
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->enums[3] = ISA_ALU_min;
    assert_int_equal(run(h), ERR);
    /* NeuronCore-v2 has no range_select. */
    struct harness *h2 = harness_new(2);
    in = harness_add(h2, ISA_ENG_DVE, ISA_OP_range_select);
    *in = ok;
    assert_int_equal(harness_run(h2), ERR);
    harness_free(h2);
}

/* ---- affine_select ------------------------------------------------------------------- */

static void test_affine_select(void **state)
{
    struct harness *h = *state;
    enum { NP = 9, A = 3, B = 7 };
    for (unsigned c = 0; c < 3; c++) {
        uint32_t tdt = c == 0 ? ISA_DT_F32 : ISA_DT_BF16, ddt = c == 1 ? ISA_DT_BF16 : ISA_DT_F32;
        unsigned op = c == 0 ? ISA_ALU_greater_equal : c == 1 ? ISA_ALU_equal : ISA_ALU_less;
        int32_t off = c == 0 ? 0 : -3, cm = c == 2 ? -2 : 1, s0 = c == 0 ? 0 : 2, s1 = -1;
        float x[NP][A * B];
        for (unsigned p = 0; p < NP; p++)
            for (unsigned i = 0; i < A * B; i++) {
                x[p][i] = rt(tdt, rnd_f(true));
                wr_f(h, SB, 5 + p, 0, tdt, i, x[p][i]);
            }
        struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_affine_select);
        bool inplace = c == 1;
        in->ap[0] = harness_tile(SB, 5, NP, inplace ? 0 : 512, ddt, A * B);
        in->ap[1] = harness_tile(SB, 5, NP, 0, tdt, A * B);
        in->pattern.ndims = 2;
        in->pattern.dim[0] = (struct isa_dim){s0, A};
        in->pattern.dim[1] = (struct isa_dim){s1, B};
        in->imm[0].i = off;
        in->imm[1].i = cm;
        in->fimm[0] = -9999.0f;
        in->enums[0] = (uint8_t)op;
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < NP; p++)
            for (unsigned a = 0; a < A; a++)
                for (unsigned b = 0; b < B; b++) {
                    int32_t v = off + (int32_t)p * cm + (int32_t)a * s0 + (int32_t)b * s1;
                    bool keep = op == ISA_ALU_greater_equal ? v >= 0 : op == ISA_ALU_equal
                                ? v == 0 : v < 0;
                    unsigned i = a * B + b;
                    float want = rt(ddt, keep ? x[p][i] : -9999.0f);
                    eq_f(rd_f(h, SB, 5 + p, inplace ? 0 : 512, ddt, i), want, "affine", p, i);
                }
    }
    /* Same dtypes copy bits: a NaN payload survives. */
    uint16_t nan_bits = 0x7fa1;
    memcpy(harness_sbuf_ptr(h, 0, 0), &nan_bits, 2);
    struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_affine_select);
    in->ap[0] = harness_tile(SB, 0, 1, 64, ISA_DT_BF16, 2);
    in->ap[1] = harness_tile(SB, 0, 1, 0, ISA_DT_BF16, 2);
    in->pattern.ndims = 1;
    in->pattern.dim[0] = (struct isa_dim){1, 2};
    in->fimm[0] = 1.0f;
    assert_int_equal(run(h), EMU_OK);
    assert_int_equal(rd_u(h, SB, 0, 64, ISA_DT_BF16, 0), 0x7fa1);
    eq_f(rd_f(h, SB, 0, 64, ISA_DT_BF16, 1), 1.0f, "false", 0, 1);
    in->pattern.dim[0] = (struct isa_dim){1, 3};
    assert_int_equal(run(h), ERR);
    in->pattern.dim[0] = (struct isa_dim){1, 2};
    in->enums[0] = ISA_ALU_add;
    assert_int_equal(run(h), ERR);
    in->enums[0] = ISA_ALU_equal;
    in->ap[1] = harness_tile(SB, 0, 2, 0, ISA_DT_BF16, 2);
    assert_int_equal(run(h), ERR);
}

/* ---- local_gather -------------------------------------------------------------------- */

static void test_local_gather(void **state)
{
    struct harness *h = *state;
    enum { NP = 32, F = 64, E = 4, COLS = 4, NVI = 50 };
    uint16_t idx[NP][COLS];
    for (unsigned p = 0; p < NP; p++) {
        for (unsigned i = 0; i < F * E; i++)
            wr_i(h, SB, p, 0, ISA_DT_U16, i, p * 1000 + i);
        for (unsigned c = 0; c < COLS; c++) {
            idx[p][c] = (uint16_t)((rnd() % F) * E);
            wr_i(h, SB, p, 4096, ISA_DT_U16, c, idx[p][c]);
        }
    }
    struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_local_gather);
    in->ap[0] = harness_tile(SB, 0, NP, 8192, ISA_DT_U16, NVI * E);
    in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_U16, F * E);
    in->ap[2] = harness_tile(SB, 0, NP, 4096, ISA_DT_U16, COLS);
    in->imm[0].i = E;
    in->imm[1].i = NVI;
    assert_int_equal(run(h), EMU_OK);
    for (unsigned p = 0; p < NP; p++) {
        unsigned g = p / 16;
        for (unsigned k = 0; k < NVI; k++) {
            unsigned o = idx[g * 16 + k % 16][k / 16];
            for (unsigned e = 0; e < E; e++)
                assert_int_equal(rd_u(h, SB, p, 8192, ISA_DT_U16, k * E + e), p * 1000 + o + e);
        }
    }
    /* num_valid_indices 0: all 64 indices. */
    in->imm[1].i = 0;
    in->ap[0] = harness_tile(SB, 0, NP, 8192, ISA_DT_U16, 64 * E);
    assert_int_equal(run(h), EMU_OK);
    assert_int_equal(rd_u(h, SB, 17, 8192, ISA_DT_U16, 63 * E), 17 * 1000 + idx[31][3]);
    struct isa_insn ok = *in;
    wr_i(h, SB, 20, 4096, ISA_DT_U16, 1, F * E - 3); /* 3 elements left, 4 read */
    assert_int_equal(run(h), EMU_EXEC_OOB);
    wr_i(h, SB, 20, 4096, ISA_DT_U16, 1, 0);
    in->imm[0].i = 3;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->imm[1].i = 65;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2].dtype = ISA_DT_U32;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0].dtype = ISA_DT_F16;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[1].num_part = 24;
    in->ap[2].num_part = 24;
    in->ap[0].num_part = 24;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2].num_part = 16;
    assert_int_equal(run(h), ERR);
}

/* ---- nc_n_gather --------------------------------------------------------------------- */

static void test_n_gather(void **state)
{
    struct harness *h = *state;
    static const uint32_t dts[3] = {ISA_DT_F32, ISA_DT_BF16, ISA_DT_U8};
    const int32_t ddims[2][2] = {{10, 4}, {1, 6}}; /* 24 of the 40 elements */
    for (unsigned c = 0; c < 3; c++) {
        uint32_t dt = dts[c];
        unsigned np = c == 2 ? 128 : 3, m = 17;
        uint32_t ix[128][17];
        for (unsigned p = 0; p < np; p++) {
            for (unsigned i = 0; i < 40; i++)
                wr_f(h, SB, p, 0, dt, i, (float)((p * 7 + i) % 200));
            for (unsigned j = 0; j < m; j++) {
                ix[p][j] = (uint32_t)(rnd() % 24);
                wr_i(h, SB, p, 4096, ISA_DT_U32, j, ix[p][j]);
            }
        }
        struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_nc_n_gather);
        in->ap[0] = harness_tile(SB, 0, np, 8192, dt, m);
        in->ap[1] = harness_sbuf(0, np, 0, dt, 2, ddims);
        in->ap[2] = harness_tile(SB, 0, np, 4096, ISA_DT_U32, m);
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < np; p++)
            for (unsigned j = 0; j < m; j++) {
                unsigned e = ix[p][j] / 6 * 10 + ix[p][j] % 6;
                eq_f(rd_f(h, SB, p, 8192, dt, j), (float)((p * 7 + e) % 200), "n_gather", p, j);
            }
    }
    struct isa_insn *in = &h->insns[ISA_ENG_POOL][0];
    struct isa_insn ok = *in;
    wr_i(h, SB, 77, 4096, ISA_DT_U32, 5, 24);
    assert_int_equal(run(h), EMU_EXEC_OOB);
    wr_i(h, SB, 77, 4096, ISA_DT_U32, 5, 0);
    in->ap[2].dtype = ISA_DT_I32;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0].dtype = ISA_DT_I8;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2] = harness_tile(SB, 0, 128, 4096, ISA_DT_U32, 16);
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0].num_part = 64;
    in->ap[2].num_part = 64;
    assert_int_equal(run(h), ERR);
}

/* ---- nc_stream_shuffle ------------------------------------------------------------------ */

static void test_stream_shuffle(void **state)
{
    struct harness *h = *state;
    /* 64 partitions in place, a mask with holes; 40000 fp32 per partition
     * forces the staging to work in pieces. */
    enum { NP = 64, N = 40000 };
    uint8_t mask[32];
    for (unsigned i = 0; i < 32; i++)
        mask[i] = i % 5 == 4 ? 255 : (uint8_t)((i * 7 + 3) % 32);
    for (unsigned p = 0; p < NP; p++)
        for (unsigned i = 0; i < N; i += 997)
            wr_f(h, SB, p, 0, ISA_DT_F32, i, (float)(p * 100000 + i));
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_nc_stream_shuffle);
    in->ap[0] = harness_tile(SB, 0, NP, 0, ISA_DT_F32, N);
    in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_F32, N);
    memcpy(in->mask, mask, 32);
    assert_int_equal(run(h), EMU_OK);
    for (unsigned p = 0; p < NP; p++) {
        unsigned m = mask[p % 32], s = m == 255 ? p : p / 32 * 32 + m;
        for (unsigned i = 0; i < N; i += 997)
            eq_f(rd_f(h, SB, p, 0, ISA_DT_F32, i), (float)(s * 100000 + i), "shuffle", p, i);
    }
    /* Reverse 32 partitions from PSUM into SBUF at partition 96, a strided row. */
    const int32_t dims[1][2] = {{-1, 5}};
    for (unsigned p = 0; p < 32; p++)
        for (unsigned i = 0; i < 5; i++)
            wr_i(h, PS, p, 0, ISA_DT_I16, i, (int64_t)(p * 10 + i));
    in = add(h, ISA_ENG_DVE, ISA_OP_nc_stream_shuffle);
    in->ap[0] = harness_tile(SB, 96, 32, 200000, ISA_DT_I16, 5);
    in->ap[1] = harness_psum(0, 32, 8, ISA_DT_I16, 1, dims);
    for (unsigned i = 0; i < 32; i++)
        in->mask[i] = (uint8_t)(31 - i);
    assert_int_equal(run(h), EMU_OK);
    for (unsigned p = 0; p < 32; p++)
        for (unsigned i = 0; i < 5; i++)
            assert_int_equal(rd_u(h, SB, 96 + p, 200000, ISA_DT_I16, i), (31 - p) * 10 + 4 - i);
    struct isa_insn ok = *in;
    in->ap[0].start_part = 80;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->mask[3] = 40;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0].dtype = ISA_DT_U16;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0] = harness_tile(SB, 64, 32, 0, ISA_DT_I16, 5);
    in->ap[1] = harness_psum(0, 16, 8, ISA_DT_I16, 1, dims); /* mask reads partition 31 */
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0] = harness_tile(SB, 64, 64, 0, ISA_DT_I16, 5); /* 64 active: start 0 or 64 */
    in->ap[1] = harness_psum(0, 64, 8, ISA_DT_I16, 1, dims);
    assert_int_equal(run(h), EMU_OK);
    in->ap[0].start_part = 32;
    assert_int_equal(run(h), ERR);
}

/* ---- sequence_bounds ------------------------------------------------------------------- */

static void ref_bounds(const float *s, unsigned n, int64_t *lo, int64_t *hi)
{
    lo[0] = s[0] != 0 ? 0 : n;
    for (unsigned i = 1; i < n; i++)
        lo[i] = s[i] == 0 ? (int64_t)n : s[i] == s[i - 1] ? lo[i - 1] : (int64_t)i;
    hi[n - 1] = s[n - 1] != 0 ? (int64_t)n : -1;
    for (unsigned i = n - 1; i-- > 0;)
        hi[i] = s[i] == 0 ? -1 : s[i] == s[i + 1] ? hi[i + 1] : (int64_t)i + 1;
}

static void test_sequence_bounds(void **state)
{
    struct harness *h = *state;
    /* The example: [1, 1, 2, 2, 0]. */
    static const int32_t seg[5] = {1, 1, 2, 2, 0};
    for (unsigned i = 0; i < 5; i++)
        wr_i(h, SB, 0, 0, ISA_DT_I32, i, seg[i]);
    struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_sequence_bounds);
    in->ap[0] = harness_tile(SB, 0, 1, 64, ISA_DT_I32, 10);
    in->ap[1] = harness_tile(SB, 0, 1, 0, ISA_DT_I32, 5);
    assert_int_equal(run(h), EMU_OK);
    static const int32_t want[10] = {0, 0, 2, 2, 5, 2, 2, 4, 4, -1};
    for (unsigned i = 0; i < 10; i++)
        assert_int_equal(rd_i32(h, 0, 64, i), want[i]);
    /* Sorted random ids with padding, fp32 in and out, and int32 out. */
    enum { N = 301 };
    float s[N];
    int64_t lo[N], hi[N];
    for (unsigned i = 0; i < N; i++)
        s[i] = (float)(i < 290 ? (i * 13 + rnd() % 9) / 40 : 0);
    s[0] = 0;
    s[100] = 0;
    for (unsigned i = 0; i < N; i++)
        wr_f(h, SB, 3, 0, ISA_DT_F32, i, s[i]);
    ref_bounds(s, N, lo, hi);
    for (unsigned o = 0; o < 2; o++) {
        uint32_t odt = o ? ISA_DT_I32 : ISA_DT_F32;
        in = add(h, ISA_ENG_POOL, ISA_OP_sequence_bounds);
        in->ap[0] = harness_tile(SB, 3, 1, 4096, odt, 2 * N);
        in->ap[1] = harness_tile(SB, 3, 1, 0, ISA_DT_F32, N);
        assert_int_equal(run(h), EMU_OK);
        for (unsigned i = 0; i < N; i++) {
            float l = o ? (float)rd_i32(h, 3, 4096, i) : rd_f(h, SB, 3, 4096, odt, i);
            float u = o ? (float)rd_i32(h, 3, 4096, N + i) : rd_f(h, SB, 3, 4096, odt, N + i);
            eq_f(l, (float)lo[i], "start", 0, i);
            eq_f(u, (float)hi[i], "end", 0, i);
        }
    }
    in->ap[0].dtype = ISA_DT_BF16;
    assert_int_equal(run(h), ERR);
    in->ap[0] = harness_tile(SB, 3, 1, 4096, ISA_DT_F32, 2 * N - 1);
    assert_int_equal(run(h), ERR);
    in->ap[0] = harness_tile(SB, 3, 1, 4096, ISA_DT_F32, 2 * N);
    in->ap[1].dtype = ISA_DT_U16;
    assert_int_equal(run(h), ERR);
}

/* ---- nonzero_with_count --------------------------------------------------------------- */

static void test_nonzero(void **state)
{
    struct harness *h = *state;
    enum { NP = 32, T = 8 };
    static const int32_t ex[T] = {0, 1, 1, 0, 0, 1, 0, 0};
    for (unsigned p = 0; p < NP; p++)
        for (unsigned i = 0; i <= T; i++) {
            wr_i(h, SB, p, 0, ISA_DT_I32, i, p == 16 ? ex[(i + 3) % T] : ex[i % T]);
            wr_i(h, SB, p, 1024, ISA_DT_I32, i, -99);
        }
    struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_nonzero_with_count);
    in->ap[0] = harness_tile(SB, 0, NP, 1024, ISA_DT_I32, T + 1);
    in->ap[1] = harness_tile(SB, 0, NP, 0, ISA_DT_I32, T);
    in->imm[0].i = 16;
    in->imm[1].i = -1;
    assert_int_equal(run(h), EMU_OK);
    static const int32_t want0[T + 1] = {17, 18, 21, -1, -1, -1, -1, -1, 3};
    static const int32_t want16[T + 1] = {18, 22, 23, -1, -1, -1, -1, -1, 3}; /* 2, 6, 7 */
    for (unsigned p = 0; p < NP; p++)
        for (unsigned i = 0; i <= T; i++)
            assert_int_equal(rd_i32(h, p, 1024, i),
                             p == 0 ? want0[i] : p == 16 ? want16[i] : -99);
    /* fp32: -0 is zero, NaN is not; a large negative offset. */
    static const float fx[5] = {-0.0f, NAN, 2.0f, 0.0f, -INFINITY};
    for (unsigned i = 0; i < 5; i++)
        wr_f(h, SB, 0, 2048, ISA_DT_F32, i, fx[i]);
    in = add(h, ISA_ENG_POOL, ISA_OP_nonzero_with_count);
    in->ap[0] = harness_tile(SB, 0, 1, 3072, ISA_DT_I32, 6);
    in->ap[1] = harness_tile(SB, 0, 1, 2048, ISA_DT_F32, 5);
    in->imm[0].i = -5;
    in->imm[1].i = 7;
    assert_int_equal(run(h), EMU_OK);
    static const int32_t wf[6] = {-4, -3, -1, 7, 7, 3};
    for (unsigned i = 0; i < 6; i++)
        assert_int_equal(rd_i32(h, 0, 3072, i), wf[i]);
    struct isa_insn ok = *in;
    in->ap[0] = harness_tile(SB, 0, 1, 3072, ISA_DT_I32, 5);
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[0].dtype = ISA_DT_F32;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[1].dtype = ISA_DT_BF16;
    assert_int_equal(run(h), ERR);
    struct harness *h2 = harness_new(2);
    *harness_add(h2, ISA_ENG_POOL, ISA_OP_nonzero_with_count) = ok;
    assert_int_equal(harness_run(h2), ERR);
    harness_free(h2);
}

/* ---- topk ----------------------------------------------------------------------------- */

struct ref_rank {
    float v;
    unsigned i;
};

static int ref_rank_cmp(const void *a, const void *b)
{
    const struct ref_rank *x = a, *y = b;
    if (above(x->v, y->v))
        return -1;
    if (above(y->v, x->v))
        return 1;
    return (int)x->i - (int)y->i;
}

static void test_topk(void **state)
{
    struct harness *h = *state;
    enum { NP = 32, N = 42, SX = 4 };
    static const unsigned ks[3] = {8, 20, 42};
    for (unsigned c = 0; c < 3; c++) {
        unsigned k = ks[c], cols = (k + 15) / 16;
        struct ref_rank r[2][N];
        for (unsigned p = 0; p < NP; p++)
            for (unsigned x = 0; x < SX; x++) {
                float v = rnd_f(true);
                wr_f(h, SB, p, 0, ISA_DT_BF16, x, v);
                unsigned i = x * 16 + p % 16;
                if (i < N)
                    r[p / 16][i] = (struct ref_rank){rt(ISA_DT_BF16, v), i};
            }
        for (unsigned p = 0; p < NP; p++)
            for (unsigned j = 0; j < 64; j++) {
                wr_i(h, SB, p, 1000, ISA_DT_BF16, j, 0x1234);
                wr_i(h, SB, p, 2000, ISA_DT_U32, j, 0x5555);
            }
        qsort(r[0], N, sizeof r[0][0], ref_rank_cmp);
        qsort(r[1], N, sizeof r[1][0], ref_rank_cmp);
        struct isa_insn *in = add(h, ISA_ENG_POOL, ISA_OP_topk);
        in->ap[0] = harness_tile(SB, 0, NP, 1000, ISA_DT_BF16, k);
        in->ap[1] = harness_tile(SB, 0, NP, 2000, ISA_DT_U32, k);
        in->ap[2] = harness_tile(SB, 0, NP, 0, ISA_DT_BF16, SX);
        in->imm[0].i = N;
        assert_int_equal(run(h), EMU_OK);
        for (unsigned p = 0; p < NP; p++)
            for (unsigned col = 0; col < k; col++) {
                unsigned j = col * 16 + p % 16;
                float v = rd_f(h, SB, p, 1000, ISA_DT_BF16, col);
                uint64_t ix = rd_u(h, SB, p, 2000, ISA_DT_U32, col);
                if (col >= cols) {
                    assert_int_equal(rd_u(h, SB, p, 1000, ISA_DT_BF16, col), 0x1234);
                    assert_int_equal(ix, 0x5555);
                } else if (j >= k) {
                    assert_true(isinf(v) && v < 0);
                    assert_int_equal(ix, 0xffffffffu);
                } else {
                    const struct ref_rank *want = &r[p / 16][k - 1 - j];
                    eq_f(v, want->v, "topk value", p, col);
                    assert_int_equal(ix, want->i);
                }
            }
    }
    struct isa_insn *in = &h->insns[ISA_ENG_POOL][0];
    struct isa_insn ok = *in;
    in->imm[0].i = 65; /* needs 5 columns */
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->imm[0].i = 41; /* K 42 > n */
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[2].dtype = ISA_DT_F16;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[1].dtype = ISA_DT_I32;
    assert_int_equal(run(h), ERR);
    *in = ok;
    for (unsigned s = 0; s < 3; s++)
        in->ap[s].num_part = 24;
    assert_int_equal(run(h), ERR);
    *in = ok;
    in->ap[1] = harness_tile(SB, 0, NP, 2000, ISA_DT_U32, 41);
    assert_int_equal(run(h), ERR);
}

/* ---- quantize_mx ---------------------------------------------------------------------- */

static void test_quantize_mx(void **state)
{
    struct harness *h = *state;
    struct isa_insn *in = add(h, ISA_ENG_DVE, ISA_OP_quantize_mx);
    in->ap[0] = harness_tile(SB, 0, 32, 0, ISA_DT_U32, 4);
    in->ap[1] = harness_tile(SB, 0, 32, 64, ISA_DT_U8, 4);
    in->ap[2] = harness_tile(SB, 0, 32, 128, ISA_DT_BF16, 16);
    assert_int_equal(run(h), ERR);
    assert_non_null(strstr(h->report, "NeuronCore-v4"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bn_stats, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bn_aggr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bn_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max8_strided, setup, teardown),
        cmocka_unit_test_setup_teardown(test_find_index8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_match_replace8, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_reduce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_select_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_range_select, setup, teardown),
        cmocka_unit_test_setup_teardown(test_affine_select, setup, teardown),
        cmocka_unit_test_setup_teardown(test_local_gather, setup, teardown),
        cmocka_unit_test_setup_teardown(test_n_gather, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stream_shuffle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sequence_bounds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nonzero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_topk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_quantize_mx, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
