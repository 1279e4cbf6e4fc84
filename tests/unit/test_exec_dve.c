/*
 * test_exec_dve.c: the Vector/GpSimd elementwise, copy and reduce
 * instructions (exec_dve.c) against plain-C references written here from
 * the documented semantics: every ALU operator in fp32 and in integer
 * arithmetic, every dtype, broadcasting scalars, strided, negative-step
 * and partition-offset patterns, PSUM operands, in-place and overlapping
 * operands, reductions in their documented order, accumulator commands,
 * large passes split across host threads (same bits with 1 and 3), and the errors (out of bounds, shape mismatches, bad operators).
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
#include "emu/engines/dve.h"
#include "emu/num/numerics.h"
#include "emu/isa/isa_generation.h"
#include "emu/num/numerics.h"
#include "exec_harness.h"

#define NP 4   /* partitions in most tests */
#define NE 37  /* free elements in most tests (odd: exercises loop tails) */

static const uint32_t all_dtypes[] = {
    ISA_DT_F32, ISA_DT_BF16, ISA_DT_F16, ISA_DT_FP8E3, ISA_DT_FP8E4, ISA_DT_FP8E5, ISA_DT_I8,
    ISA_DT_U8, ISA_DT_I16, ISA_DT_U16, ISA_DT_I32, ISA_DT_U32, ISA_DT_I64, ISA_DT_U64,
};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

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

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static float rnd_f(void)
{
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -1.0f, 0.5f,
                                    3.0f, -2.0f};
    uint64_t r = rnd();
    if (r % 8 == 0)
        return special[(r >> 8) % 10];
    return (float)((int64_t)(r >> 20) % 20000) / 1000.0f;
}

static bool is_int(uint32_t dt)
{
    return !isa_dtype_is_float(dt);
}

static bool is_signed(uint32_t dt)
{
    return dt == ISA_DT_I8 || dt == ISA_DT_I16 || dt == ISA_DT_I32 || dt == ISA_DT_I64;
}

static unsigned bits_of(uint32_t dt)
{
    return (unsigned)isa_dtype_size(dt) * 8u;
}

/* v's low bits of dt, sign- or zero-extended. */
static int64_t ext(uint32_t dt, uint64_t v)
{
    unsigned b = bits_of(dt);
    if (b == 64)
        return (int64_t)v;
    v &= (UINT64_C(1) << b) - 1u;
    if (is_signed(dt) && (v >> (b - 1)))
        v |= ~((UINT64_C(1) << b) - 1u);
    return (int64_t)v;
}

static int64_t rnd_i(uint32_t dt)
{
    uint64_t r = rnd();
    if (r % 5 == 0)
        return ext(dt, (r >> 8) % 4 == 0 ? 0 : (r >> 8) % 4 == 1 ? UINT64_MAX
                       : (r >> 8) % 4 == 2 ? (UINT64_MAX >> 1) : (UINT64_C(1) << 63));
    if (r % 5 == 1)
        return ext(dt, rnd());
    return ext(dt, (uint64_t)((int64_t)(r >> 16) % 200 - 100));
}

static uint8_t *mem_ptr(struct harness *h, uint8_t mem, uint32_t p, uint64_t off)
{
    return mem == ISA_MEM_PSUM ? harness_psum_ptr(h, p, off) : harness_sbuf_ptr(h, p, off);
}

static float rd_f(uint32_t dt, const uint8_t *p)
{
    return num_to_f32(dt, p);
}

static int64_t rd_i(uint32_t dt, const uint8_t *p)
{
    uint64_t v = 0;
    memcpy(&v, p, isa_dtype_size(dt));
    return ext(dt, v);
}

static uint64_t enc_f(uint32_t dt, float v)
{
    uint64_t b = 0;
    (void)num_from_f32(dt, &b, v, NULL, 0);
    return b;
}

static uint64_t enc_i(uint32_t dt, int64_t v)
{
    unsigned b = bits_of(dt);
    return b == 64 ? (uint64_t)v : (uint64_t)v & ((UINT64_C(1) << b) - 1u);
}

/* Does the element at p hold the encoding want (NaN matches any NaN)? */
static bool same(uint32_t dt, const uint8_t *p, uint64_t want)
{
    uint64_t have = 0;
    memcpy(&have, p, isa_dtype_size(dt));
    if (have == want)
        return true;
    return !is_int(dt) && isnan(num_to_f32(dt, p)) && isnan(num_to_f32(dt, &want));
}

static void check(uint32_t dt, const uint8_t *p, uint64_t want, const char *what, unsigned i)
{
    if (!same(dt, p, want)) {
        uint64_t have = 0;
        memcpy(&have, p, isa_dtype_size(dt));
        fail_msg("%s element %u (%s): have 0x%llx want 0x%llx", what, i, isa_dtype_name(dt),
                 (unsigned long long)have, (unsigned long long)want);
    }
}

/* A contiguous [nparts x n] tile. */
struct tile {
    uint8_t mem;      /* ISA_MEM_SBUF or ISA_MEM_PSUM */
    uint32_t part;    /* first partition */
    uint32_t nparts;  /* partitions */
    uint64_t off;     /* byte offset in each partition */
    uint32_t dt;      /* dtype */
    uint32_t n;       /* elements per partition */
};

static struct isa_ap tap(const struct tile *t)
{
    return harness_tile(t->mem, t->part, t->nparts, t->off, t->dt, t->n);
}

static uint8_t *tptr(struct harness *h, const struct tile *t, uint32_t r, uint32_t i)
{
    return mem_ptr(h, t->mem, t->part + r, t->off + (uint64_t)i * isa_dtype_size(t->dt));
}

/* Random contents; shift amounts for integer shift operators stay small. */
static void tfill(struct harness *h, const struct tile *t, bool small)
{
    for (uint32_t r = 0; r < t->nparts; r++)
        for (uint32_t i = 0; i < t->n; i++) {
            uint8_t *p = tptr(h, t, r, i);
            if (is_int(t->dt)) {
                uint64_t v = enc_i(t->dt, small ? (int64_t)(rnd() % 72) - 3 : rnd_i(t->dt));
                memcpy(p, &v, isa_dtype_size(t->dt));
            } else {
                uint64_t v = enc_f(t->dt, rnd_f());
                memcpy(p, &v, isa_dtype_size(t->dt));
            }
        }
}

/* ---- reference operators ----------------------------------------------------- */

static bool ref_int_op(unsigned op)
{
    switch (op) {
    case ISA_ALU_divide:
    case ISA_ALU_power:
    case ISA_ALU_mod:
    case ISA_ALU_rsqrt:
    case ISA_ALU_average: return false;
    default: return true;
    }
}

static bool ref_bitvec(unsigned op)
{
    return op >= ISA_ALU_bitwise_and && op <= ISA_ALU_arith_shift_right;
}

static bool ref_unary(unsigned op)
{
    return op == ISA_ALU_bypass || op == ISA_ALU_abs || op == ISA_ALU_rsqrt ||
           op == ISA_ALU_square || op == ISA_ALU_relu || op == ISA_ALU_invert ||
           op == ISA_ALU_logical_not;
}

static const unsigned all_ops[] = {
    ISA_ALU_bypass, ISA_ALU_add, ISA_ALU_subtract, ISA_ALU_multiply, ISA_ALU_divide,
    ISA_ALU_max, ISA_ALU_min, ISA_ALU_abs_max, ISA_ALU_abs_min, ISA_ALU_power, ISA_ALU_mod,
    ISA_ALU_abs, ISA_ALU_rsqrt, ISA_ALU_average, ISA_ALU_bitwise_and, ISA_ALU_bitwise_or,
    ISA_ALU_bitwise_xor, ISA_ALU_invert, ISA_ALU_left_shift, ISA_ALU_right_shift,
    ISA_ALU_arith_shift_right, ISA_ALU_equal, ISA_ALU_not_equal, ISA_ALU_greater,
    ISA_ALU_greater_equal, ISA_ALU_less, ISA_ALU_less_equal, ISA_ALU_logical_and,
    ISA_ALU_logical_or, ISA_ALU_logical_xor, ISA_ALU_logical_not, ISA_ALU_square,
    ISA_ALU_relu,
};
#define N_OPS (sizeof all_ops / sizeof all_ops[0])

static float ref_f(unsigned op, float x, float y)
{
    switch (op) {
    case ISA_ALU_bypass: return x;
    case ISA_ALU_add: return x + y;
    case ISA_ALU_subtract: return x - y;
    case ISA_ALU_multiply: return x * y;
    case ISA_ALU_divide: return x / y;
    case ISA_ALU_max: return isnan(x) || isnan(y) ? NAN : x > y ? x : y;
    case ISA_ALU_min: return isnan(x) || isnan(y) ? NAN : x < y ? x : y;
    case ISA_ALU_abs_max: return fabsf(x) > fabsf(y) ? x : y;
    case ISA_ALU_abs_min: return fabsf(x) < fabsf(y) ? x : y;
    case ISA_ALU_power: return powf(x, y);
    case ISA_ALU_mod: {
        float r = fmodf(x, y);
        return r != 0.0f && (r < 0.0f) != (y < 0.0f) ? r + y : r;
    }
    case ISA_ALU_abs: return fabsf(x);
    case ISA_ALU_rsqrt: return 1.0f / sqrtf(x);
    case ISA_ALU_square: return x * x;
    case ISA_ALU_relu: return isnan(x) ? x : x > 0.0f ? x : 0.0f;
    case ISA_ALU_average: return (x + y) / 2.0f;
    case ISA_ALU_equal: return x == y;
    case ISA_ALU_not_equal: return x != y;
    case ISA_ALU_greater: return x > y;
    case ISA_ALU_greater_equal: return x >= y;
    case ISA_ALU_less: return x < y;
    case ISA_ALU_less_equal: return x <= y;
    case ISA_ALU_logical_and: return x != 0.0f && y != 0.0f;
    case ISA_ALU_logical_or: return x != 0.0f || y != 0.0f;
    case ISA_ALU_logical_xor: return (x != 0.0f) != (y != 0.0f);
    case ISA_ALU_logical_not: return x == 0.0f;
    }
    fail_msg("no fp32 reference for op %u", op);
    return 0.0f;
}

static uint64_t mag(int64_t x)
{
    return x < 0 ? 0u - (uint64_t)x : (uint64_t)x;
}

static int64_t ref_i(unsigned op, int64_t x, int64_t y, unsigned bits)
{
    uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
    uint64_t low = bits == 64 ? ux : ux & ((UINT64_C(1) << bits) - 1u);
    int64_t sx = bits == 64 ? x : (int64_t)(low << (64 - bits)) >> (64 - bits);
    bool big = y < 0 || y >= 64;
    switch (op) {
    case ISA_ALU_bypass: return x;
    case ISA_ALU_add: return (int64_t)(ux + uy);
    case ISA_ALU_subtract: return (int64_t)(ux - uy);
    case ISA_ALU_multiply: return (int64_t)(ux * uy);
    case ISA_ALU_max: return x > y ? x : y;
    case ISA_ALU_min: return x < y ? x : y;
    case ISA_ALU_abs_max: return mag(x) > mag(y) ? x : y;
    case ISA_ALU_abs_min: return mag(x) < mag(y) ? x : y;
    case ISA_ALU_abs: return (int64_t)mag(x);
    case ISA_ALU_square: return (int64_t)(ux * ux);
    case ISA_ALU_relu: return x > 0 ? x : 0;
    case ISA_ALU_bitwise_and: return x & y;
    case ISA_ALU_bitwise_or: return x | y;
    case ISA_ALU_bitwise_xor: return x ^ y;
    case ISA_ALU_invert: return ~x;
    case ISA_ALU_left_shift: return big ? 0 : (int64_t)(ux << y);
    case ISA_ALU_right_shift: return big ? 0 : (int64_t)(low >> y);
    case ISA_ALU_arith_shift_right: return sx >> (big ? 63 : y);
    case ISA_ALU_equal: return x == y;
    case ISA_ALU_not_equal: return x != y;
    case ISA_ALU_greater: return x > y;
    case ISA_ALU_greater_equal: return x >= y;
    case ISA_ALU_less: return x < y;
    case ISA_ALU_less_equal: return x <= y;
    case ISA_ALU_logical_and: return x != 0 && y != 0;
    case ISA_ALU_logical_or: return x != 0 || y != 0;
    case ISA_ALU_logical_xor: return (x != 0) != (y != 0);
    case ISA_ALU_logical_not: return x == 0;
    }
    fail_msg("no integer reference for op %u", op);
    return 0;
}

/* One step of a tensor_scalar-like chain: stream op k (rev: k op stream). */
static float step_f(unsigned op, float s, float k, bool rev)
{
    return ref_unary(op) ? ref_f(op, s, 0.0f) : rev ? ref_f(op, k, s) : ref_f(op, s, k);
}

static int64_t step_i(unsigned op, int64_t s, int64_t k, bool rev, unsigned bits)
{
    return ref_unary(op) ? ref_i(op, s, 0, bits) : rev ? ref_i(op, k, s, bits)
                                                       : ref_i(op, s, k, bits);
}

/* ---- tensor_tensor ------------------------------------------------------------- */

/* Run one tensor_tensor over random tiles of the given dtypes and check it. */
static void tt_case(struct harness *h, enum isa_engine eng, unsigned op, uint32_t dt1,
                    uint32_t dt2, uint32_t dtd)
{
    struct tile a = {ISA_MEM_SBUF, 3, NP, 0, dt1, NE};
    struct tile b = {ISA_MEM_PSUM, 9, NP, 512, dt2, NE};
    struct tile d = {ISA_MEM_SBUF, 3, NP, 1024, dtd, NE};
    bool ints = is_int(dt1) && is_int(dt2) && is_int(dtd) && ref_int_op(op);
    tfill(h, &a, false);
    tfill(h, &b, ints && op >= ISA_ALU_left_shift && op <= ISA_ALU_arith_shift_right);
    tfill(h, &d, false);
    harness_clear(h);
    struct isa_insn *i = harness_add(h, eng, ISA_OP_tensor_tensor);
    i->ap[0] = tap(&d);
    i->ap[1] = tap(&a);
    i->ap[2] = tap(&b);
    i->enums[0] = (uint8_t)op;
    emu_status st = harness_run(h);
    if (!ints && ref_bitvec(op)) {
        assert_int_equal(st, EMU_EXEC_ERR);
        assert_non_null(strstr(h->report, "integer"));
        return;
    }
    assert_int_equal(st, EMU_OK);
    for (uint32_t r = 0; r < NP; r++)
        for (uint32_t e = 0; e < NE; e++) {
            uint64_t want;
            if (ints)
                want = enc_i(dtd, ref_i(op, rd_i(dt1, tptr(h, &a, r, e)),
                                        rd_i(dt2, tptr(h, &b, r, e)), bits_of(dtd)));
            else
                want = enc_f(dtd, ref_f(op, rd_f(dt1, tptr(h, &a, r, e)),
                                        rd_f(dt2, tptr(h, &b, r, e))));
            check(dtd, tptr(h, &d, r, e), want, isa_enum_name(ISA_ET_ALU, op), e);
        }
}

static void test_tt_every_op_f32(void **state)
{
    for (size_t k = 0; k < N_OPS; k++)
        tt_case(*state, ISA_ENG_DVE, all_ops[k], ISA_DT_F32, ISA_DT_F32, ISA_DT_F32);
}

static void test_tt_every_op_int(void **state)
{
    static const uint32_t dts[][3] = {
        {ISA_DT_I32, ISA_DT_I32, ISA_DT_I32}, {ISA_DT_U32, ISA_DT_U32, ISA_DT_U32},
        {ISA_DT_I8, ISA_DT_I8, ISA_DT_I8},    {ISA_DT_U8, ISA_DT_U8, ISA_DT_U8},
        {ISA_DT_I16, ISA_DT_U16, ISA_DT_I16}, {ISA_DT_I64, ISA_DT_I64, ISA_DT_I64},
        {ISA_DT_U64, ISA_DT_U64, ISA_DT_U64}, {ISA_DT_I8, ISA_DT_I32, ISA_DT_I64},
        {ISA_DT_I64, ISA_DT_I8, ISA_DT_U16},
    };
    for (size_t c = 0; c < sizeof dts / sizeof dts[0]; c++)
        for (size_t k = 0; k < N_OPS; k++)
            tt_case(*state, ISA_ENG_POOL, all_ops[k], dts[c][0], dts[c][1], dts[c][2]);
}

static void test_tt_dtype_matrix(void **state)
{
    static const unsigned ops[] = {ISA_ALU_add, ISA_ALU_multiply, ISA_ALU_max, ISA_ALU_divide,
                                   ISA_ALU_greater, ISA_ALU_bitwise_and};
    for (size_t x = 0; x < N_DTYPES; x++)
        for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
            uint32_t y = all_dtypes[(x + 3) % N_DTYPES], z = all_dtypes[(x + 5) % N_DTYPES];
            tt_case(*state, ISA_ENG_DVE, ops[k], all_dtypes[x], all_dtypes[x], all_dtypes[x]);
            tt_case(*state, ISA_ENG_DVE, ops[k], all_dtypes[x], y, z);
            tt_case(*state, ISA_ENG_DVE, ops[k], ISA_DT_F32, all_dtypes[x], ISA_DT_BF16);
        }
}

/* data1 walks backwards, data2 with step 2, dst in a 2-D pattern, every
 * third partition from partition 2. */
static void test_tt_strided(void **state)
{
    struct harness *h = *state;
    const int32_t back[1][2] = {{-1, 35}}, two[1][2] = {{2, 35}}, grid[2][2] = {{8, 5}, {1, 7}};
    float a[5][35], b[5][70];
    for (uint32_t r = 0; r < 5; r++) {
        for (int e = 0; e < 35; e++) {
            a[r][e] = rnd_f();
            memcpy(harness_sbuf_ptr(h, 2 + 3 * r, (uint64_t)e * 4), &a[r][e], 4);
        }
        for (int e = 0; e < 70; e++) {
            uint16_t bits = num_f32_to_bf16(rnd_f());
            b[r][e] = num_bf16_to_f32(bits);
            memcpy(harness_sbuf_ptr(h, 2 + 3 * r, 1024 + (uint64_t)e * 2), &bits, 2);
        }
    }
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    i->ap[0] = harness_sbuf(2, 5, 4096, ISA_DT_F32, 2, grid);
    i->ap[1] = harness_sbuf(2, 5, 34 * 4, ISA_DT_F32, 1, back);
    i->ap[2] = harness_sbuf(2, 5, 1024, ISA_DT_BF16, 1, two);
    for (int s = 0; s < 3; s++)
        i->ap[s].part_step = 3;
    i->enums[0] = ISA_ALU_subtract;
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t r = 0; r < 5; r++)
        for (int e = 0; e < 35; e++) {
            float want = a[r][34 - e] - b[r][2 * e];
            uint8_t *p = harness_sbuf_ptr(h, 2 + 3 * r, 4096 + (uint64_t)((e / 7) * 8 + e % 7) * 4);
            check(ISA_DT_F32, p, enc_f(ISA_DT_F32, want), "strided", (unsigned)e);
        }
}

/* dst == data1 (in place) and dst one element ahead of data1 (partial
 * overlap): every input element is read before the row is written. */
static void test_tt_aliasing(void **state)
{
    struct harness *h = *state;
    for (int dtc = 0; dtc < 2; dtc++) {
        uint32_t dt = dtc ? ISA_DT_BF16 : ISA_DT_F32;
        for (int shift = -1; shift <= 1; shift++) {
            struct tile a = {ISA_MEM_SBUF, 0, NP, 64, dt, NE};
            struct tile b = {ISA_MEM_SBUF, 0, NP, 1024, ISA_DT_F32, NE};
            struct tile d = a;
            d.off = (uint64_t)((int64_t)a.off + shift * (int64_t)isa_dtype_size(dt));
            tfill(h, &a, false);
            tfill(h, &b, false);
            float x[NP][NE], y[NP][NE];
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++) {
                    x[r][e] = rd_f(dt, tptr(h, &a, r, e));
                    y[r][e] = rd_f(ISA_DT_F32, tptr(h, &b, r, e));
                }
            harness_clear(h);
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
            i->ap[0] = tap(&d);
            i->ap[1] = tap(&a);
            i->ap[2] = tap(&b);
            i->enums[0] = ISA_ALU_add;
            assert_int_equal(harness_run(h), EMU_OK);
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++)
                    check(dt, tptr(h, &d, r, e), enc_f(dt, x[r][e] + y[r][e]), "alias", e);
        }
    }
}

static void test_tt_errors(void **state)
{
    struct harness *h = *state;
    struct tile a = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, NE};
    struct tile d = {ISA_MEM_SBUF, 0, NP, 1024, ISA_DT_F32, NE};
    struct tile shorter = {ISA_MEM_SBUF, 0, NP, 512, ISA_DT_F32, NE - 1};
    struct tile fewer = {ISA_MEM_SBUF, 0, NP - 1, 512, ISA_DT_F32, NE};
    struct tile oob = {ISA_MEM_SBUF, 0, NP, h->core->sbuf_part_bytes - 8, ISA_DT_F32, NE};
    struct tile psum_oob = {ISA_MEM_PSUM, 0, NP, ISA_PSUM_PART_BYTES - 4, ISA_DT_F32, NE};
    const struct tile *bad[] = {&shorter, &fewer, &oob, &psum_oob};
    const emu_status want[] = {EMU_EXEC_ERR, EMU_EXEC_ERR,
                               EMU_EXEC_OOB, EMU_EXEC_OOB};
    for (int k = 0; k < 4; k++)
        for (int slot = 0; slot < 3; slot++) {
            harness_clear(h);
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
            i->ap[0] = tap(slot == 0 ? bad[k] : &d);
            i->ap[1] = tap(slot == 1 ? bad[k] : &a);
            i->ap[2] = tap(slot == 2 ? bad[k] : &a);
            i->enums[0] = ISA_ALU_add;
            assert_int_equal(harness_run(h), want[k]);
        }
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    i->ap[0] = tap(&d);
    i->ap[1] = tap(&a);
    i->ap[2] = tap(&a);
    i->enums[0] = 23; /* unassigned ALU value */
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "not an ALU operator"));
}

/* Broadcast along the free axis through a step-0 pattern. */
static void test_tt_step0_broadcast(void **state)
{
    struct harness *h = *state;
    const int32_t bc[1][2] = {{0, NE}};
    struct tile a = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, NE};
    struct tile d = {ISA_MEM_SBUF, 0, NP, 1024, ISA_DT_F32, NE};
    tfill(h, &a, false);
    float k[NP];
    for (uint32_t r = 0; r < NP; r++) {
        k[r] = (float)r + 0.25f;
        memcpy(harness_sbuf_ptr(h, r, 512), &k[r], 4);
    }
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    i->ap[0] = tap(&d);
    i->ap[1] = tap(&a);
    i->ap[2] = harness_sbuf(0, NP, 512, ISA_DT_F32, 1, bc);
    i->enums[0] = ISA_ALU_multiply;
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t r = 0; r < NP; r++)
        for (uint32_t e = 0; e < NE; e++)
            check(ISA_DT_F32, tptr(h, &d, r, e),
                  enc_f(ISA_DT_F32, rd_f(ISA_DT_F32, tptr(h, &a, r, e)) * k[r]), "bcast", e);
}

/* ---- tensor_scalar ----------------------------------------------------------------- */

/* One tensor_scalar: k_ap[i] puts operand i in a [P, 1] tile of dtype kdt. */
static void ts_case(struct harness *h, unsigned op0, unsigned op1, bool rev0, bool rev1,
                    bool k_ap0, bool k_ap1, uint32_t dt, uint32_t dtd, uint32_t kdt)
{
    struct tile x = {ISA_MEM_SBUF, 1, NP, 0, dt, NE};
    struct tile d = {ISA_MEM_PSUM, 1, NP, 1024, dtd, NE};
    struct tile k[2] = {{ISA_MEM_SBUF, 1, NP, 2048, kdt, 1}, {ISA_MEM_PSUM, 1, NP, 2048, kdt, 1}};
    bool kap[2] = {k_ap0, k_ap1};
    float imm[2] = {3.0f, -2.0f};
    unsigned ops[2] = {op0, op1};
    bool rev[2] = {rev0, rev1};
    bool shifts = ref_bitvec(op0) || ref_bitvec(op1);
    tfill(h, &x, false);
    for (int j = 0; j < 2; j++)
        tfill(h, &k[j], shifts);
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar);
    i->ap[0] = tap(&d);
    i->ap[1] = tap(&x);
    i->enums[0] = (uint8_t)op0;
    i->enums[1] = (uint8_t)op1;
    i->flags = (uint8_t)(rev0 | rev1 << 1);
    for (int j = 0; j < 2; j++) {
        i->fimm[j] = imm[j];
        if (kap[j])
            i->ap[2 + j] = tap(&k[j]);
    }
    bool ints = is_int(dt) && is_int(dtd) && ref_int_op(op0) && ref_int_op(op1) &&
                (!kap[0] || is_int(kdt) || ref_unary(op0)) &&
                (!kap[1] || is_int(kdt) || ref_unary(op1));
    emu_status st = harness_run(h);
    if (!ints && shifts) {
        assert_int_equal(st, EMU_EXEC_ERR);
        return;
    }
    assert_int_equal(st, EMU_OK);
    for (uint32_t r = 0; r < NP; r++)
        for (uint32_t e = 0; e < NE; e++) {
            uint64_t want;
            if (ints) {
                int64_t v = rd_i(dt, tptr(h, &x, r, e));
                for (int j = 0; j < 2; j++) {
                    int64_t kv = kap[j] ? rd_i(kdt, tptr(h, &k[j], r, 0)) : (int64_t)imm[j];
                    if (j == 0 || ops[1] != ISA_ALU_bypass)
                        v = step_i(ops[j], v, kv, rev[j], bits_of(dtd));
                }
                want = enc_i(dtd, v);
            } else {
                float v = rd_f(dt, tptr(h, &x, r, e));
                for (int j = 0; j < 2; j++) {
                    float kv = kap[j] ? rd_f(kdt, tptr(h, &k[j], r, 0)) : imm[j];
                    if (j == 0 || ops[1] != ISA_ALU_bypass)
                        v = step_f(ops[j], v, kv, rev[j]);
                }
                want = enc_f(dtd, v);
            }
            check(dtd, tptr(h, &d, r, e), want, "tensor_scalar", e);
        }
}

static void test_ts_pairs(void **state)
{
    static const unsigned pairs[][2] = {
        {ISA_ALU_multiply, ISA_ALU_add}, {ISA_ALU_subtract, ISA_ALU_divide},
        {ISA_ALU_max, ISA_ALU_min}, {ISA_ALU_add, ISA_ALU_bypass}, {ISA_ALU_abs, ISA_ALU_multiply},
        {ISA_ALU_greater, ISA_ALU_logical_and}, {ISA_ALU_mod, ISA_ALU_power},
        {ISA_ALU_rsqrt, ISA_ALU_abs_max}, {ISA_ALU_bypass, ISA_ALU_subtract},
        {ISA_ALU_bitwise_and, ISA_ALU_left_shift}, {ISA_ALU_arith_shift_right, ISA_ALU_bitwise_xor},
        {ISA_ALU_right_shift, ISA_ALU_bypass}, {ISA_ALU_invert, ISA_ALU_bitwise_or},
    };
    static const uint32_t dts[][3] = {
        {ISA_DT_F32, ISA_DT_F32, ISA_DT_F32}, {ISA_DT_BF16, ISA_DT_F32, ISA_DT_F32},
        {ISA_DT_F32, ISA_DT_FP8E4, ISA_DT_BF16}, {ISA_DT_I32, ISA_DT_I32, ISA_DT_I32},
        {ISA_DT_U8, ISA_DT_U8, ISA_DT_U16}, {ISA_DT_I16, ISA_DT_I64, ISA_DT_F32},
        {ISA_DT_I32, ISA_DT_F32, ISA_DT_I32},
    };
    for (size_t p = 0; p < sizeof pairs / sizeof pairs[0]; p++)
        for (size_t c = 0; c < sizeof dts / sizeof dts[0]; c++)
            for (int m = 0; m < 16; m++)
                ts_case(*state, pairs[p][0], pairs[p][1], m & 1, m & 2, m & 4, m & 8, dts[c][0],
                        dts[c][1], dts[c][2]);
}

static void test_ts_errors(void **state)
{
    struct harness *h = *state;
    struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_I32, NE};
    struct tile two = {ISA_MEM_SBUF, 0, NP, 2048, ISA_DT_I32, 2};
    struct tile rows = {ISA_MEM_SBUF, 0, NP - 1, 2048, ISA_DT_I32, 1};
    for (int k = 0; k < 3; k++) {
        harness_clear(h);
        struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar);
        i->ap[0] = tap(&x);
        i->ap[1] = tap(&x);
        i->enums[0] = k == 0 ? ISA_ALU_bitwise_and : ISA_ALU_add;
        i->enums[1] = k == 0 ? ISA_ALU_add : ISA_ALU_bypass;
        if (k > 0)
            i->ap[2] = tap(k == 1 ? &two : &rows);
        assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    }
    /* a fractional immediate sends integers through fp32: 5 * 0.5 = 2.5 -> 2 (RNE) */
    int32_t five = 5, out;
    memcpy(harness_sbuf_ptr(h, 0, 0), &five, 4);
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 64, ISA_DT_I32, 1);
    i->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_I32, 1);
    i->enums[0] = ISA_ALU_multiply;
    i->fimm[0] = 0.5f;
    assert_int_equal(harness_run(h), EMU_OK);
    memcpy(&out, harness_sbuf_ptr(h, 0, 64), 4);
    assert_int_equal(out, 2);
}

/* Large rows in place (several DVE chunks), on every engine that runs it. */
static void test_ts_large_in_place(void **state)
{
    struct harness *h = *state;
    static const enum isa_engine engs[] = {ISA_ENG_DVE, ISA_ENG_ACT, ISA_ENG_POOL};
    struct tile x = {ISA_MEM_SBUF, 0, 2, 0, ISA_DT_F32, 5000};
    for (int k = 0; k < 3; k++) {
        tfill(h, &x, false);
        float v[2][5000];
        for (uint32_t r = 0; r < 2; r++)
            for (uint32_t e = 0; e < 5000; e++)
                v[r][e] = rd_f(ISA_DT_F32, tptr(h, &x, r, e));
        harness_clear(h);
        struct isa_insn *i = harness_add(h, engs[k], ISA_OP_tensor_scalar);
        i->ap[0] = tap(&x);
        i->ap[1] = tap(&x);
        i->enums[0] = ISA_ALU_multiply;
        i->fimm[0] = 1.5f;
        i->enums[1] = ISA_ALU_add;
        i->fimm[1] = -0.75f;
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t r = 0; r < 2; r++)
            for (uint32_t e = 0; e < 5000; e++)
                check(ISA_DT_F32, tptr(h, &x, r, e), enc_f(ISA_DT_F32, v[r][e] * 1.5f + -0.75f),
                      "large", e);
    }
}

/* ---- scalar_tensor_tensor -------------------------------------------------------- */

static void test_stt(void **state)
{
    struct harness *h = *state;
    static const unsigned pairs[][2] = {{ISA_ALU_multiply, ISA_ALU_add},
                                        {ISA_ALU_subtract, ISA_ALU_divide},
                                        {ISA_ALU_max, ISA_ALU_subtract},
                                        {ISA_ALU_abs, ISA_ALU_bypass}};
    for (size_t p = 0; p < 4; p++)
        for (int m = 0; m < 8; m++) {
            bool rev0 = m & 1, rev1 = m & 2, kap = m & 4;
            uint32_t dtd = m & 1 ? ISA_DT_BF16 : ISA_DT_F32;
            struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F16, NE};
            struct tile y = {ISA_MEM_PSUM, 0, NP, 0, ISA_DT_F32, NE};
            struct tile k = {ISA_MEM_SBUF, 0, NP, 2048, ISA_DT_BF16, 1};
            struct tile d = {ISA_MEM_SBUF, 0, NP, 1024, dtd, NE};
            tfill(h, &x, false);
            tfill(h, &y, false);
            tfill(h, &k, false);
            harness_clear(h);
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_scalar_tensor_tensor);
            i->ap[0] = tap(&d);
            i->ap[1] = tap(&x);
            i->ap[3] = tap(&y);
            if (kap)
                i->ap[2] = tap(&k);
            i->fimm[0] = 1.25f;
            i->enums[0] = (uint8_t)pairs[p][0];
            i->enums[1] = (uint8_t)pairs[p][1];
            i->flags = (uint8_t)(rev0 | rev1 << 1);
            assert_int_equal(harness_run(h), EMU_OK);
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++) {
                    float kv = kap ? rd_f(k.dt, tptr(h, &k, r, 0)) : 1.25f;
                    float t = step_f(pairs[p][0], rd_f(x.dt, tptr(h, &x, r, e)), kv, rev0);
                    float v = step_f(pairs[p][1], t, rd_f(y.dt, tptr(h, &y, r, e)), rev1);
                    check(dtd, tptr(h, &d, r, e), enc_f(dtd, v), "stt", e);
                }
        }
    struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_I32, NE};
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_scalar_tensor_tensor);
    i->ap[0] = i->ap[1] = i->ap[3] = tap(&x);
    i->enums[0] = ISA_ALU_bitwise_or;
    i->enums[1] = ISA_ALU_add;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
}

/* ---- tensor_copy, tensor_copy_predicated, memset ------------------------------------------- */

static void test_copy(void **state)
{
    struct harness *h = *state;
    const int32_t back[1][2] = {{-1, NE}};
    for (size_t s = 0; s < N_DTYPES; s++)
        for (size_t t = 0; t < N_DTYPES; t++) {
            uint32_t sdt = all_dtypes[s], ddt = all_dtypes[t];
            struct tile x = {ISA_MEM_SBUF, 5, NP, 0, sdt, NE};
            struct tile d = {ISA_MEM_PSUM, 2, NP, 512, ddt, NE};
            tfill(h, &x, false);
            harness_clear(h);
            struct isa_insn *i = harness_add(h, (t & 1) ? ISA_ENG_POOL : ISA_ENG_DVE,
                                             ISA_OP_tensor_copy);
            i->ap[0] = tap(&d);
            i->ap[1] = (s & 1) ? harness_sbuf(5, NP, (NE - 1) * isa_dtype_size(sdt), sdt, 1, back)
                               : tap(&x);
            assert_int_equal(harness_run(h), EMU_OK);
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++) {
                    const uint8_t *src = tptr(h, &x, r, (s & 1) ? NE - 1 - e : e);
                    uint64_t want = 0;
                    if (sdt == ddt)
                        memcpy(&want, src, isa_dtype_size(sdt));
                    else
                        want = enc_f(ddt, rd_f(sdt, src));
                    check(ddt, tptr(h, &d, r, e), want, "copy", e);
                }
        }
}

/* NaN payloads and large integers survive an equal-dtype copy bit for bit;
 * overlapping rows copy as if read first. */
static void test_copy_exact_and_overlap(void **state)
{
    struct harness *h = *state;
    uint32_t nan = 0x7fa12345u;
    int64_t big = INT64_MAX - 3;
    memcpy(harness_sbuf_ptr(h, 0, 0), &nan, 4);
    memcpy(harness_sbuf_ptr(h, 0, 8), &big, 8);
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_copy);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 1, 1, 0, ISA_DT_F32R, 1);
    i->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_F32, 1);
    i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_copy);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 1, 1, 8, ISA_DT_I64, 1);
    i->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, 8, ISA_DT_I64, 1);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_memory_equal(harness_sbuf_ptr(h, 1, 0), &nan, 4);
    assert_memory_equal(harness_sbuf_ptr(h, 1, 8), &big, 8);
    for (int k = 0; k < 2; k++) {
        uint32_t dt = k ? ISA_DT_I32 : ISA_DT_BF16;
        struct tile x = {ISA_MEM_SBUF, 0, 1, 100, ISA_DT_I32, NE};
        tfill(h, &x, false);
        int32_t v[NE];
        memcpy(v, tptr(h, &x, 0, 0), sizeof v);
        harness_clear(h);
        i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_copy);
        i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 104, dt, NE);
        i->ap[1] = tap(&x);
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t e = 0; e < NE; e++) {
            uint64_t want = dt == ISA_DT_I32 ? enc_i(dt, v[e]) : enc_f(dt, (float)v[e]);
            check(dt, harness_sbuf_ptr(h, 0, 104 + e * isa_dtype_size(dt)), want, "overlap", e);
        }
    }
}

static void test_copy_predicated(void **state)
{
    struct harness *h = *state;
    static const uint32_t preds[] = {ISA_DT_U8, ISA_DT_U16, ISA_DT_U32};
    static const uint32_t dts[][2] = {{ISA_DT_F32, ISA_DT_F32}, {ISA_DT_BF16, ISA_DT_BF16},
                                      {ISA_DT_I64, ISA_DT_I64}, {ISA_DT_I32, ISA_DT_F32}};
    for (int c = 0; c < 4; c++)
        for (int m = 0; m < 12; m++) {
            bool rev = m & 1, imm = m & 2;
            uint32_t sdt = dts[c][0], ddt = dts[c][1];
            struct tile x = {ISA_MEM_SBUF, 0, NP, 0, sdt, NE};
            struct tile p = {ISA_MEM_PSUM, 0, NP, 0, preds[m / 4], NE};
            struct tile d = {ISA_MEM_SBUF, 0, NP, 1024, ddt, NE};
            tfill(h, &x, false);
            tfill(h, &d, false);
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++) {
                    uint32_t v = rnd() % 3 == 0 ? 0 : (uint32_t)rnd();
                    memcpy(tptr(h, &p, r, e), &v, isa_dtype_size(p.dt));
                }
            uint8_t before[NP][NE * 8];
            for (uint32_t r = 0; r < NP; r++)
                memcpy(before[r], tptr(h, &d, r, 0), NE * isa_dtype_size(ddt));
            harness_clear(h);
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_copy_predicated);
            i->ap[0] = tap(&d);
            i->ap[2] = tap(&p);
            if (!imm)
                i->ap[1] = tap(&x);
            i->fimm[0] = -7.5f;
            i->flags = rev;
            assert_int_equal(harness_run(h), EMU_OK);
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++) {
                    uint64_t pv = 0, want = 0;
                    memcpy(&pv, tptr(h, &p, r, e), isa_dtype_size(p.dt));
                    size_t es = isa_dtype_size(ddt);
                    if ((pv != 0) == rev)
                        memcpy(&want, before[r] + e * es, es);
                    else if (imm)
                        want = enc_f(ddt, -7.5f);
                    else if (sdt == ddt)
                        memcpy(&want, tptr(h, &x, r, e), es);
                    else
                        want = enc_f(ddt, rd_f(sdt, tptr(h, &x, r, e)));
                    check(ddt, tptr(h, &d, r, e), want, "predicated", e);
                }
        }
}

static void test_memset(void **state)
{
    struct harness *h = *state;
    static const double vals[] = {3.7, -300.0, 1e30, -1e30, 9007199254740994.0, 0.0, -2.5};
    const int32_t step2[1][2] = {{2, 9}};
    for (size_t t = 0; t < N_DTYPES; t++)
        for (size_t k = 0; k < sizeof vals / sizeof vals[0]; k++) {
            uint32_t dt = all_dtypes[t];
            size_t es = isa_dtype_size(dt);
            memset(harness_sbuf_ptr(h, 7, 0), 0x5a, 256);
            harness_clear(h);
            struct isa_insn *i = harness_add(h, (k & 1) ? ISA_ENG_POOL : ISA_ENG_DVE,
                                             ISA_OP_memset);
            i->ap[0] = harness_sbuf(7, 1, 0, dt, 1, step2);
            i->imm[0].f = vals[k];
            assert_int_equal(harness_run(h), EMU_OK);
            uint64_t want = 0;
            double v = vals[k];
            if (is_int(dt)) {
                double lo = is_signed(dt) ? -ldexp(1.0, (int)bits_of(dt) - 1) : 0.0;
                double hi = is_signed(dt) ? ldexp(1.0, (int)bits_of(dt) - 1)
                                          : ldexp(1.0, (int)bits_of(dt));
                double rv = nearbyint(v);
                if (rv >= hi)
                    want = is_signed(dt) ? (UINT64_MAX >> (65 - bits_of(dt)))
                                         : (UINT64_MAX >> (64 - bits_of(dt)));
                else if (rv < lo)
                    want = enc_i(dt, (int64_t)lo);
                else
                    want = enc_i(dt, is_signed(dt) ? (int64_t)rv : (int64_t)(uint64_t)rv);
            } else {
                want = enc_f(dt, (float)v);
            }
            for (uint32_t e = 0; e < 18; e++) {
                uint64_t filler = 0;
                memset(&filler, 0x5a, es);
                check(dt, harness_sbuf_ptr(h, 7, e * es), e % 2 ? filler : want, "memset", e);
            }
        }
}

/* ---- iota ------------------------------------------------------------------------------------ */

static void test_iota(void **state)
{
    struct harness *h = *state;
    static const uint32_t dts[] = {ISA_DT_I32, ISA_DT_F32, ISA_DT_BF16, ISA_DT_U8, ISA_DT_I64,
                                   ISA_DT_U32};
    for (size_t t = 0; t < sizeof dts / sizeof dts[0]; t++) {
        uint32_t dt = dts[t];
        harness_clear(h);
        struct isa_insn *i = harness_add(h, ISA_ENG_POOL, ISA_OP_iota);
        i->ap[0] = harness_tile(ISA_MEM_SBUF, 10, 6, 64, dt, 24);
        i->pattern.ndims = 3;
        i->pattern.dim[0] = (struct isa_dim){100, 2};
        i->pattern.dim[1] = (struct isa_dim){-7, 3};
        i->pattern.dim[2] = (struct isa_dim){1, 4};
        i->imm[0].i = t == 5 ? INT32_MAX - 50 : -20;
        i->imm[1].i = 1000;
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t r = 0; r < 6; r++)
            for (uint32_t e = 0; e < 24; e++) {
                uint32_t v = (uint32_t)i->imm[0].i + 1000u * r + 100u * (e / 12) -
                             7u * ((e / 4) % 3) + e % 4;
                int32_t sv = (int32_t)v;
                uint64_t want = is_int(dt) ? enc_i(dt, sv) : enc_f(dt, (float)sv);
                check(dt, harness_sbuf_ptr(h, 10 + r, 64 + e * isa_dtype_size(dt)), want, "iota", e);
            }
    }
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_POOL, ISA_OP_iota);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 2, 0, ISA_DT_I32, 5);
    i->pattern.ndims = 1;
    i->pattern.dim[0] = (struct isa_dim){1, 4};
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
}

/* ---- reductions --------------------------------------------------------------------------------- */

/* The documented order: lanes for add/multiply/max/min/abs_max/abs_min/average, else left fold. */
static float ref_reduce(unsigned op, const float *x, size_t n)
{
    unsigned base = op == ISA_ALU_average ? ISA_ALU_add : op;
    float id;
    switch (base) {
    case ISA_ALU_add: id = -0.0f; break;
    case ISA_ALU_multiply: id = 1.0f; break;
    case ISA_ALU_max: id = -INFINITY; break;
    case ISA_ALU_min:
    case ISA_ALU_abs_min: id = INFINITY; break;
    case ISA_ALU_abs_max: id = 0.0f; break;
    default: {
        float r = x[0];
        for (size_t i = 1; i < n; i++)
            r = ref_f(op, r, x[i]);
        return r;
    }
    }
    float lane[16];
    for (int l = 0; l < 16; l++)
        lane[l] = id;
    for (size_t i = 0; i < n; i++)
        lane[i % 16] = ref_f(base, lane[i % 16], x[i]);
    for (int w = 8; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            lane[l] = ref_f(base, lane[l], lane[l + w]);
    return op == ISA_ALU_average ? lane[0] / (float)n : lane[0];
}

static void test_tensor_reduce_f32(void **state)
{
    struct harness *h = *state;
    static const unsigned ops[] = {ISA_ALU_add, ISA_ALU_multiply, ISA_ALU_max, ISA_ALU_min,
                                   ISA_ALU_abs_max, ISA_ALU_abs_min, ISA_ALU_average,
                                   ISA_ALU_subtract, ISA_ALU_logical_or};
    /* data: [P, 2, 4, 5] with a gap after every row of 5 (step 6) */
    const int32_t dims[3][2] = {{24, 2}, {6, 4}, {1, 5}};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (int axes = 1; axes <= 3; axes++)
            for (int neg = 0; neg < 2; neg++) {
                uint32_t dtd = neg ? ISA_DT_BF16 : ISA_DT_F32;
                struct tile raw = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, 48};
                tfill(h, &raw, false);
                size_t inner = axes == 1 ? 5 : axes == 2 ? 20 : 40, outer = 40 / inner;
                harness_clear(h);
                struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_reduce);
                i->ap[0] = harness_tile(ISA_MEM_PSUM, 0, NP, 0, dtd, (uint32_t)outer);
                i->ap[1] = harness_sbuf(0, NP, 0, ISA_DT_F32, 3, dims);
                i->enums[0] = (uint8_t)ops[k];
                i->imm[0].i = axes;
                i->flags = (uint8_t)(neg | (axes & 1) << 1);
                assert_int_equal(harness_run(h), EMU_OK);
                for (uint32_t r = 0; r < NP; r++) {
                    float x[40];
                    for (int e = 0; e < 40; e++)
                        x[e] = rd_f(ISA_DT_F32, tptr(h, &raw, r, (uint32_t)((e / 20) * 24 +
                                                                    ((e / 5) % 4) * 6 + e % 5)));
                    for (size_t g = 0; g < outer; g++) {
                        float v = ref_reduce(ops[k], x + g * inner, inner);
                        check(dtd, harness_psum_ptr(h, r, g * isa_dtype_size(dtd)),
                              enc_f(dtd, neg ? v * -1.0f : v), "reduce", (unsigned)g);
                    }
                }
            }
}

/* The fp32 value of bit pattern u (NaN payloads kept). */
static float f32_of(uint32_t u)
{
    return rd_f(ISA_DT_F32, (const uint8_t *)&u);
}

/* dve_f32_reduce(op) at every ISA level: the same bits as at the portable
 * level (which always folds in lane order), and the documented value
 * (ref_reduce; any NaN where it gives a NaN). */
static void check_reduce_levels(unsigned op, const float *x, size_t n)
{
    num_set_isa_limit(NUM_ISA_PORTABLE);
    float want = dve_f32_reduce(op, x, n), ref = ref_reduce(op, x, n);
    if (isnan(ref))
        assert_true(isnan(want));
    else
        assert_memory_equal(&want, &ref, sizeof want);
    for (int lvl = NUM_ISA_AVX2; lvl <= NUM_ISA_AVX512; lvl++) {
        num_set_isa_limit(lvl);
        float got = dve_f32_reduce(op, x, n);
        assert_memory_equal(&got, &want, sizeof got);
    }
}

/* max and min over rows built to trip an order-free shortcut: several
 * NaNs with different payloads, answers of +0 or -0 with both zeros
 * present, duplicated answers, infinities, subnormals, all -inf; lengths
 * around the wide-register blocks. */
static void test_reduce_max_min_orders(void **state)
{
    (void)state;
    static const size_t lens[] = {1, 15, 63, 64, 65, 100, 128, 1003, 1024};
    static float x[1024];
    for (int kind = 0; kind < 8; kind++)
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            size_t n = lens[li];
            for (size_t i = 0; i < n; i++) {
                float v = (float)(int64_t)(rnd() % 2001) / 7.0f - 150.0f;
                float neg = -fabsf(v) - 1.0f, pos = fabsf(v) + 1.0f;
                float zero = rnd() % 2 ? 0.0f : -0.0f;
                switch (kind) {
                case 0: x[i] = v; break; /* plain */
                case 1: x[i] = i % 37 == 5 ? f32_of(0x7fc00000u + (uint32_t)i) : v; break;
                case 2: x[i] = i % 3 ? neg : zero; break; /* max is a zero */
                case 3: x[i] = i % 5 ? pos : zero; break; /* min is a zero */
                case 4: x[i] = i % 11 ? v : (i % 2 ? INFINITY : -INFINITY); break;
                case 5: x[i] = f32_of((uint32_t)(rnd() % 0x00800000u) | (i % 2 ? 0x80000000u : 0));
                    break; /* subnormals and zeros */
                case 6: x[i] = -INFINITY; break;
                default: x[i] = (float)(i % 4); break; /* duplicates */
                }
            }
            if (kind == 1 && n > 40)
                x[n - 1] = f32_of(0xffc00001u);
            check_reduce_levels(ISA_ALU_max, x, n);
            check_reduce_levels(ISA_ALU_min, x, n);
        }
    num_set_isa_limit(NUM_ISA_AVX512);
}

static void test_tensor_reduce_long_and_int(void **state)
{
    struct harness *h = *state;
    struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, 1003};
    for (int op = 0; op < 4; op++) {
        tfill(h, &x, false);
        for (uint32_t r = 0; r < NP; r++)
            for (uint32_t e = 0; e < 1003; e++)
                if (isnan(rd_f(ISA_DT_F32, tptr(h, &x, r, e))) && r > 0)
                    memcpy(tptr(h, &x, r, e), &(float){1.0f}, 4);
        harness_clear(h);
        struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_reduce);
        i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, NP, 8000, ISA_DT_F32, 1);
        i->ap[1] = tap(&x);
        i->enums[0] = (uint8_t)(op == 0 ? ISA_ALU_add : op == 1 ? ISA_ALU_max
                                : op == 2 ? ISA_ALU_min : ISA_ALU_multiply);
        i->imm[0].i = 1;
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t r = 0; r < NP; r++)
            check(ISA_DT_F32, harness_sbuf_ptr(h, r, 8000),
                  enc_f(ISA_DT_F32, ref_reduce(i->enums[0],
                                               (const float *)(void *)tptr(h, &x, r, 0), 1003)),
                  "long", r);
    }
    static const unsigned iops[] = {ISA_ALU_add, ISA_ALU_bitwise_or, ISA_ALU_bitwise_xor,
                                    ISA_ALU_max, ISA_ALU_multiply, ISA_ALU_subtract};
    struct tile xi = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_I32, 30};
    for (size_t k = 0; k < sizeof iops / sizeof iops[0]; k++) {
        tfill(h, &xi, false);
        harness_clear(h);
        struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_reduce);
        i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, NP, 8000, ISA_DT_I32, 1);
        i->ap[1] = tap(&xi);
        i->enums[0] = (uint8_t)iops[k];
        i->imm[0].i = 1;
        i->flags = iops[k] == ISA_ALU_add;
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t r = 0; r < NP; r++) {
            int64_t v = rd_i(ISA_DT_I32, tptr(h, &xi, r, 0));
            for (uint32_t e = 1; e < 30; e++)
                v = ref_i(iops[k], v, rd_i(ISA_DT_I32, tptr(h, &xi, r, e)), 32);
            if (iops[k] == ISA_ALU_add)
                v = (int64_t)(0u - (uint64_t)v);
            check(ISA_DT_I32, harness_sbuf_ptr(h, r, 8000), enc_i(ISA_DT_I32, v), "int reduce", r);
        }
    }
}

static void test_tensor_reduce_errors(void **state)
{
    struct harness *h = *state;
    struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, 12};
    struct tile xi = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_I32, 12};
    const struct { unsigned op; int axes; uint32_t out_n; bool neg; const struct tile *in; } bad[] = {
        {ISA_ALU_add, 2, 1, false, &x},           /* axes beyond the data's dims */
        {ISA_ALU_add, 1, 2, false, &x},           /* dst too big */
        {ISA_ALU_bypass, 1, 1, false, &x},        /* not a reduction operator */
        {ISA_ALU_bitwise_or, 1, 1, false, &x},    /* bit-pattern on floats */
        {ISA_ALU_bitwise_or, 1, 1, true, &xi},    /* negate with bit-pattern */
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        harness_clear(h);
        struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_reduce);
        i->ap[0] = harness_tile(ISA_MEM_SBUF, 0, NP, 4000, bad[k].in->dt, bad[k].out_n);
        i->ap[1] = tap(bad[k].in);
        i->enums[0] = (uint8_t)bad[k].op;
        i->imm[0].i = bad[k].axes;
        i->flags = bad[k].neg;
        assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    }
}

static void test_partition_reduce(void **state)
{
    struct harness *h = *state;
    static const unsigned ops[] = {ISA_ALU_add, ISA_ALU_max, ISA_ALU_average, ISA_ALU_bitwise_or,
                                   ISA_ALU_bitwise_and, ISA_ALU_min};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        for (int ints = 0; ints < 2; ints++) {
            if (!ints && (ops[k] == ISA_ALU_bitwise_or || ops[k] == ISA_ALU_bitwise_and))
                continue;
            uint32_t dt = ints ? ISA_DT_I32 : ISA_DT_F32;
            struct tile x = {ISA_MEM_SBUF, 0, 128, 0, dt, 20};
            tfill(h, &x, false);
            harness_clear(h);
            struct isa_insn *i = harness_add(h, ISA_ENG_POOL, ISA_OP_tensor_partition_reduce);
            i->ap[0] = harness_tile(ISA_MEM_SBUF, 64, 1, 1024, dt, 20);
            i->ap[1] = tap(&x);
            i->enums[0] = (uint8_t)ops[k];
            assert_int_equal(harness_run(h), EMU_OK);
            bool int_path = ints && ops[k] != ISA_ALU_average;
            for (uint32_t e = 0; e < 20; e++) {
                uint64_t want;
                if (int_path) {
                    int64_t v = rd_i(dt, tptr(h, &x, 0, e));
                    for (uint32_t r = 1; r < 128; r++)
                        v = ref_i(ops[k], v, rd_i(dt, tptr(h, &x, r, e)), 32);
                    want = enc_i(dt, v);
                } else {
                    unsigned op = ops[k] == ISA_ALU_average ? ISA_ALU_add : ops[k];
                    float v = rd_f(dt, tptr(h, &x, 0, e));
                    for (uint32_t r = 1; r < 128; r++)
                        v = ref_f(op, v, rd_f(dt, tptr(h, &x, r, e)));
                    want = enc_f(dt, ops[k] == ISA_ALU_average ? v / 128.0f : v);
                }
                check(dt, harness_sbuf_ptr(h, 64, 1024 + e * 4), want, "partition", e);
            }
        }
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_POOL, ISA_OP_tensor_partition_reduce);
    i->ap[0] = harness_tile(ISA_MEM_SBUF, 64, 2, 1024, ISA_DT_F32, 20);
    i->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 8, 0, ISA_DT_F32, 20);
    i->enums[0] = ISA_ALU_add;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
}

/* ---- scans and accumulators ------------------------------------------------------------------- */

static void test_tensor_tensor_scan(void **state)
{
    struct harness *h = *state;
    static const unsigned pairs[][2] = {{ISA_ALU_multiply, ISA_ALU_add},
                                        {ISA_ALU_subtract, ISA_ALU_max},
                                        {ISA_ALU_add, ISA_ALU_divide}};
    for (size_t p = 0; p < 3; p++)
        for (int m = 0; m < 8; m++) {
            bool rev0 = m & 1, rev1 = m & 2, iap = m & 4;
            struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_BF16, NE};
            struct tile y = {ISA_MEM_PSUM, 0, NP, 0, ISA_DT_F32, NE};
            struct tile init = {ISA_MEM_SBUF, 0, NP, 512, ISA_DT_F32, 1};
            struct tile d = {ISA_MEM_SBUF, 0, NP, 1024, ISA_DT_F32, NE};
            for (uint32_t r = 0; r < NP; r++)
                for (uint32_t e = 0; e < NE; e++) {
                    memcpy(tptr(h, &x, r, e), &(uint16_t){num_f32_to_bf16((float)(rnd() % 9) / 4.0f)}, 2);
                    memcpy(tptr(h, &y, r, e), &(float){(float)(rnd() % 7) - 3.0f}, 4);
                }
            tfill(h, &init, false);
            harness_clear(h);
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor_scan);
            i->ap[0] = tap(&d);
            i->ap[1] = tap(&x);
            i->ap[2] = tap(&y);
            if (iap)
                i->ap[3] = tap(&init);
            i->fimm[0] = 0.5f;
            i->enums[0] = (uint8_t)pairs[p][0];
            i->enums[1] = (uint8_t)pairs[p][1];
            i->flags = (uint8_t)(rev0 | rev1 << 1);
            assert_int_equal(harness_run(h), EMU_OK);
            for (uint32_t r = 0; r < NP; r++) {
                float acc = iap ? rd_f(ISA_DT_F32, tptr(h, &init, r, 0)) : 0.5f;
                for (uint32_t e = 0; e < NE; e++) {
                    float a = rd_f(x.dt, tptr(h, &x, r, e)), b = rd_f(y.dt, tptr(h, &y, r, e));
                    float t = rev0 ? ref_f(pairs[p][0], acc, a) : ref_f(pairs[p][0], a, acc);
                    acc = rev1 ? ref_f(pairs[p][1], b, t) : ref_f(pairs[p][1], t, b);
                    check(ISA_DT_F32, tptr(h, &d, r, e), enc_f(ISA_DT_F32, acc), "scan", e);
                }
            }
        }
}

/* tensor_scalar_reduce: reset_reduce, then reduce continuing in a second
 * instruction, then load_reduce with a [P, 1] init and negation. */
static void test_tensor_scalar_reduce(void **state)
{
    struct harness *h = *state;
    static const unsigned rops[] = {ISA_ALU_add, ISA_ALU_max, ISA_ALU_min, ISA_ALU_multiply};
    for (size_t k = 0; k < 4; k++) {
        struct tile x = {ISA_MEM_SBUF, 8, NP, 0, ISA_DT_F32, NE};
        struct tile d = {ISA_MEM_SBUF, 8, NP, 1024, ISA_DT_BF16, NE};
        struct tile res = {ISA_MEM_SBUF, 8, NP, 2048, ISA_DT_F32, 3};
        struct tile init = {ISA_MEM_PSUM, 8, NP, 0, ISA_DT_F32, 1};
        for (uint32_t r = 0; r < NP; r++)
            for (uint32_t e = 0; e < NE; e++)
                memcpy(tptr(h, &x, r, e), &(float){(float)(rnd() % 17) / 8.0f - 1.0f}, 4);
        tfill(h, &init, false);
        harness_clear(h);
        static const unsigned cmds[] = {ISA_RCMD_reset_reduce, ISA_RCMD_reduce,
                                        ISA_RCMD_load_reduce};
        for (int s = 0; s < 3; s++) {
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar_reduce);
            i->ap[0] = tap(&d);
            i->ap[1] = tap(&x);
            i->enums[0] = ISA_ALU_multiply;
            i->fimm[0] = 1.5f + (float)s;
            i->enums[1] = (uint8_t)rops[k];
            i->enums[2] = (uint8_t)cmds[s];
            i->flags = (uint8_t)(s == 2 ? 3 : 0); /* reverse0, and negate on the last */
            if (s != 0) {
                i->ap[3] = harness_tile(ISA_MEM_SBUF, 8, NP, 2048 + 4 * (uint64_t)s, ISA_DT_F32, 1);
            }
            if (s == 2)
                i->ap[4] = tap(&init);
        }
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t r = 0; r < NP; r++) {
            float red[3], row[NE];
            for (int s = 0; s < 3; s++) {
                for (uint32_t e = 0; e < NE; e++)
                    row[e] = rd_f(ISA_DT_F32, tptr(h, &x, r, e)) * (1.5f + (float)s);
                red[s] = ref_reduce(rops[k], row, NE);
                if (s == 2)
                    for (uint32_t e = 0; e < NE; e++)
                        check(d.dt, tptr(h, &d, r, e), enc_f(d.dt, row[e]), "tsr dst", e);
            }
            float id = rops[k] == ISA_ALU_multiply ? 1.0f : rops[k] == ISA_ALU_max ? -INFINITY
                       : rops[k] == ISA_ALU_min ? INFINITY : 0.0f;
            float acc1 = ref_f(rops[k], ref_f(rops[k], id, red[0]), red[1]);
            float acc2 = ref_f(rops[k], rd_f(ISA_DT_F32, tptr(h, &init, r, 0)), red[2]);
            check(ISA_DT_F32, tptr(h, &res, r, 1), enc_f(ISA_DT_F32, acc1), "tsr reduce", r);
            check(ISA_DT_F32, tptr(h, &res, r, 2), enc_f(ISA_DT_F32, acc2 * -1.0f), "tsr load", r);
        }
    }
    struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, NE};
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar_reduce);
    i->ap[0] = i->ap[1] = tap(&x);
    i->enums[0] = ISA_ALU_add;
    i->enums[1] = ISA_ALU_divide;
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
}

static void test_tensor_scalar_cumulative(void **state)
{
    struct harness *h = *state;
    static const unsigned op1s[] = {ISA_ALU_add, ISA_ALU_subtract, ISA_ALU_multiply, ISA_ALU_max,
                                    ISA_ALU_min};
    for (size_t k = 0; k < 5; k++) {
        struct tile x = {ISA_MEM_SBUF, 0, NP, 0, ISA_DT_F32, NE};
        struct tile d = {ISA_MEM_SBUF, 0, NP, 1024, ISA_DT_F32, NE};
        struct tile d2 = {ISA_MEM_SBUF, 0, NP, 2048, ISA_DT_F32, NE};
        struct tile d3 = {ISA_MEM_SBUF, 0, NP, 3072, ISA_DT_F32, NE};
        struct tile k1 = {ISA_MEM_SBUF, 0, NP, 4096, ISA_DT_F32, 1};
        for (uint32_t r = 0; r < NP; r++)
            for (uint32_t e = 0; e < NE; e++)
                memcpy(tptr(h, &x, r, e), &(float){(float)(rnd() % 9) / 8.0f + 0.5f}, 4);
        tfill(h, &k1, false);
        harness_clear(h);
        const struct tile *dsts[3] = {&d, &d2, &d3};
        static const unsigned cmds[] = {ISA_RCMD_reset_reduce, ISA_RCMD_reduce,
                                        ISA_RCMD_load_reduce};
        for (int s = 0; s < 3; s++) {
            struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar_cumulative);
            i->ap[0] = tap(dsts[s]);
            i->ap[1] = tap(&x);
            i->enums[0] = ISA_ALU_subtract;
            i->enums[1] = (uint8_t)op1s[k];
            i->fimm[0] = 0.25f;
            i->enums[2] = (uint8_t)cmds[s];
            i->flags = s == 1;
            if (s == 2)
                i->ap[3] = tap(&k1);
        }
        assert_int_equal(harness_run(h), EMU_OK);
        for (uint32_t r = 0; r < NP; r++) {
            float id = op1s[k] == ISA_ALU_multiply ? 1.0f : op1s[k] == ISA_ALU_max ? -INFINITY
                       : op1s[k] == ISA_ALU_min ? INFINITY : 0.0f;
            float reg = id;
            for (int s = 0; s < 3; s++) {
                if (s == 2)
                    reg = rd_f(ISA_DT_F32, tptr(h, &k1, r, 0));
                for (uint32_t e = 0; e < NE; e++) {
                    float v = rd_f(ISA_DT_F32, tptr(h, &x, r, e));
                    float t = s == 1 ? 0.25f - v : v - 0.25f;
                    reg = ref_f(op1s[k], t, reg);
                    check(ISA_DT_F32, tptr(h, dsts[s], r, e), enc_f(ISA_DT_F32, reg), "cumulative", e);
                }
            }
        }
    }
}

/* square and relu (like abs_max and abs_min) are NeuronCore-v4 operators:
 * a loader asks for generation 4 and names the operator. */
static void test_v4_alu_gating(void **state)
{
    (void)state;
    static const unsigned v4_ops[] = {ISA_ALU_square, ISA_ALU_relu, ISA_ALU_abs_max};
    struct isa_insn in;
    char what[96];
    for (size_t i = 0; i < sizeof v4_ops / sizeof v4_ops[0]; i++) {
        assert_int_equal(isa_insn_init(&in, ISA_ENG_DVE, ISA_OP_tensor_scalar), EMU_OK);
        in.enums[1] = (uint8_t)v4_ops[i];
        assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
        assert_non_null(strstr(what, isa_enum_name(ISA_ET_ALU, v4_ops[i])));
    }
    assert_int_equal(isa_insn_init(&in, ISA_ENG_POOL, ISA_OP_tensor_tensor), EMU_OK);
    in.enums[0] = ISA_ALU_relu;
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 4);
    in.enums[0] = ISA_ALU_multiply;
    assert_int_equal(isa_insn_min_gen(&in, what, sizeof what), 2);
}

/* ---- large passes split across host threads ------------------------------------- */

enum { BIG_P = 128, BIG_N = 2048 };

/* Run tensor_tensor d = x + y (1 MiB of fp32 output, split), tensor_scalar
 * e = (x * k[p]) + 0.5 into bf16 (split), and a shifted in-place
 * d2[p] = d2[p + 1] + y[p] whose rows overlap (not split) with `threads`
 * host threads; out receives the three outputs' bytes. */
static void big_dve(struct harness *h, unsigned threads, uint8_t *out)
{
    par_configure(threads);
    struct tile x = {ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_BF16, BIG_N};
    struct tile y = {ISA_MEM_SBUF, 0, BIG_P, 8192, ISA_DT_F32, BIG_N};
    struct tile d = {ISA_MEM_SBUF, 0, BIG_P, 16384, ISA_DT_F32, BIG_N};
    struct tile e = {ISA_MEM_SBUF, 0, BIG_P, 24576, ISA_DT_BF16, 2 * BIG_N};
    struct tile k = {ISA_MEM_SBUF, 0, BIG_P, 40960, ISA_DT_F32, 1};
    struct tile d2 = {ISA_MEM_SBUF, 0, BIG_P - 1, 49152, ISA_DT_F32, BIG_N};
    struct tile s2 = {ISA_MEM_SBUF, 1, BIG_P - 1, 49152, ISA_DT_F32, BIG_N};
    struct tile y2 = {ISA_MEM_SBUF, 0, BIG_P - 1, 8192, ISA_DT_F32, BIG_N};
    struct tile x2 = {ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_F32, 2 * BIG_N};
    rng = 0x1234567u;
    struct tile fills[] = {x, y, k, {ISA_MEM_SBUF, 0, BIG_P, 49152, ISA_DT_F32, BIG_N}};
    for (size_t i = 0; i < sizeof fills / sizeof fills[0]; i++)
        tfill(h, &fills[i], false);
    harness_clear(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    i->ap[0] = tap(&d), i->ap[1] = tap(&x), i->ap[2] = tap(&y);
    i->enums[0] = ISA_ALU_add;
    i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    i->ap[0] = tap(&d2), i->ap[1] = tap(&s2), i->ap[2] = tap(&y2);
    i->enums[0] = ISA_ALU_add;
    i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_scalar);
    i->ap[0] = tap(&e), i->ap[1] = tap(&x2), i->ap[2] = tap(&k);
    i->enums[0] = ISA_ALU_multiply;
    i->enums[1] = ISA_ALU_add;
    i->fimm[1] = 0.5f;
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t r = 0; r < BIG_P; r++) {
        memcpy(out, tptr(h, &d, r, 0), BIG_N * 4), out += BIG_N * 4;
        memcpy(out, tptr(h, &e, r, 0), BIG_N * 4), out += BIG_N * 4;
        memcpy(out, tptr(h, &fills[3], r, 0), BIG_N * 4), out += BIG_N * 4;
    }
    par_configure(0);
}

static void test_large_split_threads(void **state)
{
    struct harness *h = *state;
    size_t bytes = (size_t)BIG_P * BIG_N * 12;
    uint8_t *one = malloc(bytes), *three = malloc(bytes);
    assert_true(one != NULL && three != NULL);
    big_dve(h, 1, one);
    big_dve(h, 3, three);
    assert_memory_equal(one, three, bytes);
    /* spot checks against the definition (inputs refilled from the same seed) */
    rng = 0x1234567u;
    struct tile x = {ISA_MEM_SBUF, 0, BIG_P, 0, ISA_DT_BF16, BIG_N};
    struct tile y = {ISA_MEM_SBUF, 0, BIG_P, 8192, ISA_DT_F32, BIG_N};
    struct tile k = {ISA_MEM_SBUF, 0, BIG_P, 40960, ISA_DT_F32, 1};
    struct tile o = {ISA_MEM_SBUF, 0, BIG_P, 49152, ISA_DT_F32, BIG_N};
    tfill(h, &x, false), tfill(h, &y, false), tfill(h, &k, false), tfill(h, &o, false);
    for (uint32_t r = 0; r + 1 < BIG_P; r += 7)
        for (uint32_t c = 0; c < BIG_N; c += 331) {
            float xv = rd_f(ISA_DT_BF16, tptr(h, &x, r, c)), yv = rd_f(ISA_DT_F32, tptr(h, &y, r, c));
            float got, want = xv + yv;
            memcpy(&got, one + ((size_t)r * 3 * BIG_N + c) * 4, 4);
            assert_true(memcmp(&got, &want, 4) == 0);
            want = rd_f(ISA_DT_F32, tptr(h, &o, r + 1, c)) + yv; /* row r + 1 before its write */
            memcpy(&got, one + ((size_t)r * 3 * BIG_N + 2 * BIG_N + c) * 4, 4);
            assert_true(memcmp(&got, &want, 4) == 0);
        }
    free(one);
    free(three);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tt_every_op_f32, setup, teardown),
        cmocka_unit_test(test_v4_alu_gating),
        cmocka_unit_test_setup_teardown(test_large_split_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tt_every_op_int, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tt_dtype_matrix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tt_strided, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tt_aliasing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tt_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tt_step0_broadcast, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ts_pairs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ts_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ts_large_in_place, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_exact_and_overlap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copy_predicated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_iota, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_reduce_f32, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_reduce_long_and_int, setup, teardown),
        cmocka_unit_test(test_reduce_max_min_orders),
        cmocka_unit_test_setup_teardown(test_tensor_reduce_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partition_reduce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_tensor_scan, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_scalar_reduce, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tensor_scalar_cumulative, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
