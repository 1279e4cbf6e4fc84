/*
 * hd_format.c: the table of host formats and their values: one element
 * to and from fp32 with trnemu's numerics (emu/num/numerics.h, mx.h), the
 * contiguous vector forms, and a double rounded once into a format.
 */
#include "hd.h"

#include <math.h>
#include <string.h>

#include "emu/num/mx.h"
#include "emu/num/numerics.h"

struct hd_type hd_types[HD_NKINDS] = {
    [HD_BF16] = {"bfloat16", "bfloat16: 1 sign, 8 exponent, 7 mantissa bits (fp32's top half)",
                 2, NUM_DT_BF16, 'E', NULL, -1, NULL},
    [HD_E4M3] = {"float8_e4m3", "float8_e4m3: IEEE-style e4m3, bias 7, max 240, with inf and NaN",
                 1, NUM_DT_FP8_E4, '7', NULL, -1, NULL},
    [HD_E5M2] = {"float8_e5m2", "float8_e5m2: e5m2, bias 15, max 57344, with inf and NaN",
                 1, NUM_DT_FP8_E5, '5', NULL, -1, NULL},
    [HD_E3M4] = {"float8_e3m4", "float8_e3m4: IEEE-style e3m4, bias 3, max 15.5, with inf and NaN",
                 1, NUM_DT_FP8_E3, '3', NULL, -1, NULL},
    [HD_E4M3FN] = {"float8_e4m3fn", "float8_e4m3fn: OCP e4m3, bias 7, max 448, NaN, no inf",
                   1, NUM_DT_FP8_E4M3FN, '4', NULL, -1, NULL},
    [HD_E8M0FNU] = {"float8_e8m0fnu", "float8_e8m0fnu: a power of two 2^-127..2^127, NaN",
                    1, NUM_DT_FP8_E8M0, '8', NULL, -1, NULL},
    [HD_E2M1FN] = {"float4_e2m1fn", "float4_e2m1fn: 4-bit e2m1 (0..6), one value per byte",
                   1, 0, '2', NULL, -1, NULL},
};

uint16_t hd_bits_at(const struct hd_type *t, const void *p)
{
    const uint8_t *b = p;
    return t->itemsize == 2 ? (uint16_t)(b[0] | (b[1] << 8)) : b[0];
}

void hd_put_bits(const struct hd_type *t, void *p, uint16_t bits)
{
    uint8_t *b = p;
    b[0] = (uint8_t)bits;
    if (t->itemsize == 2)
        b[1] = (uint8_t)(bits >> 8);
}

float hd_to_f32(const struct hd_type *t, uint16_t bits)
{
    switch (t->num_dtype) {
    case NUM_DT_BF16:
        return num_bf16_to_f32(bits);
    case NUM_DT_FP8_E4M3FN:
        return num_e4m3fn_to_f32((uint8_t)bits);
    case NUM_DT_FP8_E8M0:
        return num_e8m0_to_f32((uint8_t)bits);
    case 0:
        return num_fp4_to_f32((uint8_t)(bits & 0xf));
    default:
        return num_fp8_to_f32(t->num_dtype, (uint8_t)bits);
    }
}

uint16_t hd_from_f32(const struct hd_type *t, float x)
{
    switch (t->num_dtype) {
    case NUM_DT_BF16:
        return num_f32_to_bf16(x);
    case NUM_DT_FP8_E4M3FN:
        return num_f32_to_e4m3fn(x, false);
    case NUM_DT_FP8_E8M0:
        return num_f32_to_e8m0(x, false);
    case 0:
        return num_f32_to_fp4(x);
    default:
        return num_f32_to_fp8(t->num_dtype, x);
    }
}

/* Round-to-odd works because every format here has at least two
 * significand bits fewer than fp32. */
float hd_f64_to_f32_odd(double x)
{
    float f = (float)x;
    if ((double)f == x || isnan(x))
        return f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (fabs((double)f) > fabs(x))
        u -= 1u;                    /* one step toward zero: truncation (inf -> max) */
    u |= 1u;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t hd_from_f64(const struct hd_type *t, double x)
{
    return hd_from_f32(t, hd_f64_to_f32_odd(x));
}

void hd_load_f32(const struct hd_type *t, const void *src, float *dst, npy_intp n)
{
    if (n <= 0)
        return;
    if (t->num_dtype != 0) {
        (void)num_load_f32(dst, src, t->num_dtype, 1, (size_t)n);
        return;
    }
    const uint8_t *s = src;
    for (npy_intp i = 0; i < n; i++)
        dst[i] = hd_to_f32(t, s[i]);
}

void hd_store_f32(const struct hd_type *t, void *dst, const float *src, npy_intp n)
{
    if (n <= 0)
        return;
    if (t->num_dtype != 0) {
        (void)num_store_f32(dst, t->num_dtype, 1, src, (size_t)n, NULL);
        return;
    }
    uint8_t *d = dst;
    for (npy_intp i = 0; i < n; i++)
        d[i] = (uint8_t)hd_from_f32(t, src[i]);
}
