/*
 * test_mx.c: the NeuronCore-v4 number formats (emu/num/mx.h): every
 * special bit pattern of float8_e4m3fn, float8_e8m0fnu and fp4 e2m1 both
 * ways, the rounding ties, overflow with and without saturation, NaN,
 * signed zero, stochastic rounding, the packed x4 lanes, and the vector
 * entry points (which refuse packed containers).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "emu/isa/isa.h"
#include "emu/num/mx.h"

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Exact equality, -0 and +0 told apart. */
static void assert_same(float got, float want)
{
    if (isnan(want)) {
        assert_true(isnan(got));
        return;
    }
    assert_int_equal(bits_of(got), bits_of(want));
}

/* ---- float8_e4m3fn ---------------------------------------------------------- */

static void test_e4m3fn_decode(void **state)
{
    (void)state;
    assert_same(num_e4m3fn_to_f32(0x00), 0.0f);
    assert_same(num_e4m3fn_to_f32(0x80), -0.0f);
    assert_same(num_e4m3fn_to_f32(0x01), 0x1p-9f);   /* smallest subnormal */
    assert_same(num_e4m3fn_to_f32(0x07), 7 * 0x1p-9f); /* largest subnormal */
    assert_same(num_e4m3fn_to_f32(0x08), 0x1p-6f);   /* smallest normal */
    assert_same(num_e4m3fn_to_f32(0x38), 1.0f);
    assert_same(num_e4m3fn_to_f32(0x78), 256.0f);    /* exponent 15 is a finite binade */
    assert_same(num_e4m3fn_to_f32(0x7e), 448.0f);    /* largest finite */
    assert_same(num_e4m3fn_to_f32(0xfe), -448.0f);
    assert_true(isnan(num_e4m3fn_to_f32(0x7f)));     /* S.1111.111: NaN, no infinity */
    assert_true(isnan(num_e4m3fn_to_f32(0xff)));
    /* Every other code round-trips exactly, and the codes are monotonic. */
    float prev = -1.0f;
    for (unsigned v = 0; v < 0x7f; v++) {
        float x = num_e4m3fn_to_f32((uint8_t)v);
        assert_true(isfinite(x));
        assert_true(v == 0 || x > prev);
        prev = x;
        assert_int_equal(num_f32_to_e4m3fn(x, false), v);
        assert_int_equal(num_f32_to_e4m3fn(-x, true), v | 0x80);
    }
}

static void test_e4m3fn_encode(void **state)
{
    (void)state;
    assert_int_equal(num_f32_to_e4m3fn(-0.0f, false), 0x80);
    assert_int_equal(num_f32_to_e4m3fn(464.0f, false), 0x7e);   /* tie: even mantissa 110 */
    assert_int_equal(num_f32_to_e4m3fn(465.0f, false), 0x7f);   /* overflow: NaN */
    assert_int_equal(num_f32_to_e4m3fn(465.0f, true), 0x7e);    /* saturated */
    assert_int_equal(num_f32_to_e4m3fn(-1e6f, false), 0xff);
    assert_int_equal(num_f32_to_e4m3fn(-1e6f, true), 0xfe);
    assert_int_equal(num_f32_to_e4m3fn(INFINITY, false), 0x7f);
    assert_int_equal(num_f32_to_e4m3fn(INFINITY, true), 0x7e);
    assert_int_equal(num_f32_to_e4m3fn(-INFINITY, true), 0xfe);
    assert_int_equal(num_f32_to_e4m3fn(NAN, true), 0x7f);
    assert_int_equal(num_f32_to_e4m3fn(-NAN, false), 0xff);
    assert_int_equal(num_f32_to_e4m3fn(0x1p-10f, false), 0x00);     /* tie: to 0 (even) */
    assert_int_equal(num_f32_to_e4m3fn(0x1.8p-9f * 1.0f, false), 0x02); /* 1.5 ulp: to 2 */
    assert_int_equal(num_f32_to_e4m3fn(3 * 0x1p-10f, false), 0x02);
    assert_int_equal(num_f32_to_e4m3fn(0x1.1p-10f, false), 0x01);   /* above the tie */
    assert_int_equal(num_f32_to_e4m3fn(0x1p-149f, false), 0x00);    /* fp32 subnormal */
    assert_int_equal(num_f32_to_e4m3fn(0x1.ep-7f, false), 0x08);    /* subnormal rounds up to normal */
    assert_int_equal(num_f32_to_e4m3fn(1.0625f, false), 0x38);      /* tie to even: 1.0 */
    assert_int_equal(num_f32_to_e4m3fn(1.1875f, false), 0x3a);      /* tie to even: 1.25 */
    assert_int_equal(num_f32_to_e4m3fn(15.5f, false), 0x58);        /* carries to 16 */
}

/* Stochastic rounding: the random bits decide between the two neighbours;
 * representable values never move. */
static void test_e4m3fn_stochastic(void **state)
{
    (void)state;
    assert_int_equal(num_f32_to_e4m3fn_sr(1.0625f, false, 0), 0x39);
    assert_int_equal(num_f32_to_e4m3fn_sr(1.0625f, false, UINT64_MAX), 0x38);
    assert_int_equal(num_f32_to_e4m3fn_sr(1.0f, false, 0), 0x38);
    assert_int_equal(num_f32_to_e4m3fn_sr(448.0f, false, 0), 0x7e);
    assert_int_equal(num_f32_to_e4m3fn_sr(450.0f, false, 0), 0x7f);
    assert_int_equal(num_f32_to_e4m3fn_sr(450.0f, true, 0), 0x7e);
    /* A quarter of the way up rounds up about a quarter of the time. */
    unsigned ups = 0;
    for (uint64_t i = 0; i < 4096; i++)
        ups += num_f32_to_e4m3fn_sr(1.03125f, false, num_rng_u64(7, i)) == 0x39;
    assert_true(ups > 900 && ups < 1150);
}

/* ---- float8_e8m0fnu ------------------------------------------------------------ */

static void test_e8m0(void **state)
{
    (void)state;
    assert_same(num_e8m0_to_f32(0x00), 0x1p-127f);
    assert_same(num_e8m0_to_f32(NUM_E8M0_ONE), 1.0f);
    assert_same(num_e8m0_to_f32(0xfe), 0x1p127f);
    assert_true(isnan(num_e8m0_to_f32(NUM_E8M0_NAN)));
    for (unsigned v = 0; v < 0xff; v++)
        assert_int_equal(num_f32_to_e8m0(num_e8m0_to_f32((uint8_t)v), false), v);
    assert_int_equal(num_f32_to_e8m0(1.4f, false), 0x7f);
    assert_int_equal(num_f32_to_e8m0(1.6f, false), 0x80);
    assert_int_equal(num_f32_to_e8m0(1.5f, false), 0x80);   /* tie: 127 odd, 128 even */
    assert_int_equal(num_f32_to_e8m0(3.0f, false), 0x80);   /* tie: 128 even, 129 odd */
    assert_int_equal(num_f32_to_e8m0(0.0f, false), 0x00);
    assert_int_equal(num_f32_to_e8m0(-0.0f, false), 0x00);
    assert_int_equal(num_f32_to_e8m0(0x1p-140f, false), 0x00);
    assert_int_equal(num_f32_to_e8m0(-1.0f, true), NUM_E8M0_NAN);
    assert_int_equal(num_f32_to_e8m0(NAN, true), NUM_E8M0_NAN);
    assert_int_equal(num_f32_to_e8m0(INFINITY, false), NUM_E8M0_NAN);
    assert_int_equal(num_f32_to_e8m0(INFINITY, true), 0xfe);
    assert_int_equal(num_f32_to_e8m0(0x1.cp127f, false), NUM_E8M0_NAN); /* rounds past 2^127 */
    assert_int_equal(num_f32_to_e8m0(0x1.cp127f, true), 0xfe);
}

/* ---- fp4 e2m1 ------------------------------------------------------------------ */

static void test_fp4(void **state)
{
    (void)state;
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (unsigned v = 0; v < 16; v++) {
        float want = v & 8 ? -mag[v & 7] : mag[v & 7];
        assert_same(num_fp4_to_f32((uint8_t)v), want);
        assert_int_equal(num_f32_to_fp4(want), v);
    }
    /* Ties to the even code: 0.25 -> 0, 0.75 -> 1, 1.25 -> 1, 1.75 -> 2,
     * 2.5 -> 2, 3.5 -> 4, 5 -> 4. */
    static const struct { float x; uint8_t code; } ties[] = {
        {0.25f, 0x0}, {0.75f, 0x2}, {1.25f, 0x2}, {1.75f, 0x4}, {2.5f, 0x4}, {3.5f, 0x6},
        {5.0f, 0x6}, {5.1f, 0x7}, {7.0f, 0x7}, {1e30f, 0x7},
    };
    for (size_t i = 0; i < sizeof ties / sizeof ties[0]; i++) {
        assert_int_equal(num_f32_to_fp4(ties[i].x), ties[i].code);
        assert_int_equal(num_f32_to_fp4(-ties[i].x), ties[i].code | 8);
    }
    assert_int_equal(num_f32_to_fp4(INFINITY), 0x7);
    assert_int_equal(num_f32_to_fp4(-INFINITY), 0xf);
    assert_int_equal(num_f32_to_fp4(NAN), 0x7);
    assert_int_equal(num_f32_to_fp4(-0.0f), 0x8);
}

/* ---- packed containers and the vector entry points --------------------------------- */

static void test_x4(void **state)
{
    (void)state;
    const float in[4] = {1.0f, -2.0f, 0.5f, 448.0f};
    uint8_t p[4];
    float out[4];
    num_x4_pack(NUM_DT_FP8_E4M3FN_X4, in, false, p);
    assert_int_equal(p[0], 0x38);
    assert_int_equal(p[1], 0xc0);
    assert_int_equal(p[2], 0x30);
    assert_int_equal(p[3], 0x7e);
    num_x4_unpack(NUM_DT_FP8_E4M3FN_X4, p, out);
    for (int j = 0; j < 4; j++)
        assert_same(out[j], in[j]);
    const float e5[4] = {1.0f, -2.0f, 0.5f, 57344.0f};
    num_x4_pack(NUM_DT_FP8_E5M2_X4, e5, false, p);
    assert_int_equal(p[0], 0x3c);
    assert_int_equal(p[3], 0x7b);
    num_x4_unpack(NUM_DT_FP8_E5M2_X4, p, out);
    for (int j = 0; j < 4; j++)
        assert_same(out[j], e5[j]);
    const float f4[4] = {1.0f, -6.0f, 0.5f, 3.0f};
    uint8_t q[2];
    num_x4_pack(NUM_DT_FP4_E2M1_X4, f4, false, q);
    assert_int_equal(q[0], 0x2 | (0xf << 4)); /* lane 0 in the low nibble */
    assert_int_equal(q[1], 0x1 | (0x5 << 4));
    num_x4_unpack(NUM_DT_FP4_E2M1_X4, q, out);
    for (int j = 0; j < 4; j++)
        assert_same(out[j], f4[j]);
    assert_int_equal(num_dtype_size(NUM_DT_FP4_E2M1_X4), 2);
    assert_int_equal(num_dtype_size(NUM_DT_FP8_E5M2_X4), 4);
    assert_int_equal(num_packed_elem(NUM_DT_FP4_E2M1_X4), NUM_ELEM_FP4_E2M1);
    assert_int_equal(num_packed_elem(NUM_DT_BF16), 0);
}

static void test_vector(void **state)
{
    (void)state;
    const float x[5] = {1.0f, -0.0f, 500.0f, 0x1p-9f, NAN};
    uint8_t b[5];
    float y[5];
    assert_int_equal(num_store_f32(b, NUM_DT_FP8_E4M3FN, 1, x, 5, NULL), EMU_OK);
    assert_memory_equal(b, ((uint8_t[]){0x38, 0x80, 0x7f, 0x01, 0x7f}), 5);
    struct num_round sat = {NUM_ROUND_RNE, true, 0, 0};
    assert_int_equal(num_store_f32(b, NUM_DT_FP8_E4M3FN, 1, x, 5, &sat), EMU_OK);
    assert_int_equal(b[2], 0x7e);
    assert_int_equal(num_load_f32(y, b, NUM_DT_FP8_E4M3FN, 1, 4), EMU_OK);
    assert_same(y[2], 448.0f);
    assert_same(y[1], -0.0f);
    /* Through a cast: bf16 -> e8m0 -> fp32. */
    uint16_t h[2] = {0x3f80, 0x4000}; /* 1.0, 2.0 */
    assert_int_equal(num_convert(b, NUM_DT_FP8_E8M0, h, NUM_DT_BF16, 2), EMU_OK);
    assert_int_equal(b[0], 0x7f);
    assert_int_equal(b[1], 0x80);
    assert_int_equal(num_convert(y, NUM_DT_FP32, b, NUM_DT_FP8_E8M0, 2), EMU_OK);
    assert_same(y[1], 2.0f);
    /* Packed containers: bit copies only. */
    uint32_t w[2] = {0x11223344u, 0}, v2[2];
    assert_int_equal(num_load_f32(y, w, NUM_DT_FP8_E4M3FN_X4, 1, 1), EMU_INVALID);
    assert_int_equal(num_store_f32(w, NUM_DT_FP4_E2M1_X4, 1, y, 1, NULL), EMU_INVALID);
    assert_int_equal(num_convert(v2, NUM_DT_FP8_E4M3FN_X4, w, NUM_DT_FP8_E4M3FN_X4, 1), EMU_OK);
    assert_int_equal(v2[0], 0x11223344u);
    assert_int_equal(num_convert(y, NUM_DT_FP32, w, NUM_DT_FP8_E5M2_X4, 1), EMU_INVALID);
    /* Names. */
    assert_int_equal(num_dtype_parse("float8_e4m3fn"), NUM_DT_FP8_E4M3FN);
    assert_int_equal(num_dtype_parse("float8_e8m0fnu"), NUM_DT_FP8_E8M0);
    assert_int_equal(num_dtype_parse("float4_e2m1fn_x4"), NUM_DT_FP4_E2M1_X4);
    assert_true(num_dtype_is_float(NUM_DT_FP8_E4M3FN));
    assert_false(num_dtype_is_float(NUM_DT_FP8_E4M3FN_X4));
    assert_int_equal(isa_dtype_from_name("fp8e4fnx4", 9), ISA_DT_FP8E4FNX4);
    assert_int_equal(isa_dtype_size(ISA_DT_FP4X4), 2);
    assert_true(isa_dtype_is_packed(ISA_DT_FP8E5X4));
    assert_false(isa_dtype_is_packed(ISA_DT_FP8E4FN));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_e4m3fn_decode), cmocka_unit_test(test_e4m3fn_encode),
        cmocka_unit_test(test_e4m3fn_stochastic), cmocka_unit_test(test_e8m0),
        cmocka_unit_test(test_fp4), cmocka_unit_test(test_x4), cmocka_unit_test(test_vector),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
