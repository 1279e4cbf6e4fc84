/*
 * num_minmax.h: float max and min, defined once for every engine and for
 * the collectives' reductions.
 *
 * The users agree on ordinary values and differ in two details, which each
 * names as a parameter (constants, so the inlined code is a plain select
 * that compilers vectorise):
 *   - what a NaN operand gives: the NaN itself (the Vector engine, as
 *     numpy.maximum does: the first operand when both are NaN), or the
 *     default quiet NaN 0x7fc00000 (GpSimd, DMA arithmetic, collectives);
 *   - how +0 and -0 compare: as equal (the second operand is returned), or
 *     ordered -0 < +0 (collectives, so that a reduction's result does not
 *     depend on the order of its operands).
 */
#ifndef TRNEMU_EMU_NUM_MINMAX_H
#define TRNEMU_EMU_NUM_MINMAX_H

#include <stdint.h>
#include <string.h>

/* What a NaN operand makes of the result. */
enum num_nan_rule {
    NUM_NAN_OPERAND = 0,  /* the NaN operand's own bits (the first one if both are) */
    NUM_NAN_DEFAULT = 1,  /* the default quiet NaN, 0x7fc00000 */
};

/* How equal operands (+0 and -0 among them) pick their result. */
enum num_zero_rule {
    NUM_ZERO_SECOND = 0,  /* the second operand */
    NUM_ZERO_SIGNED = 1,  /* -0 < +0: max keeps +0, min keeps -0 */
};

/* The default quiet NaN every NUM_NAN_DEFAULT user stores. */
#define NUM_DEFAULT_NAN_BITS 0x7fc00000u

static inline uint32_t num_f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static inline float num_f32_of(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* Apply the NaN rule to m, the select of two non-NaN operands. */
static inline float num_minmax_nan(float x, float y, float m, enum num_nan_rule nan)
{
    if (nan == NUM_NAN_OPERAND)
        return x != x ? x : m;  /* a NaN y already is m */
    return x != x || y != y ? num_f32_of(NUM_DEFAULT_NAN_BITS) : m;
}

/* The larger of x and y under the given rules. */
static inline float num_fmax(float x, float y, enum num_nan_rule nan, enum num_zero_rule zero)
{
    float m = x > y ? x : y;
    if (zero == NUM_ZERO_SIGNED && x == y)
        m = num_f32_of(num_f32_bits(x) & num_f32_bits(y));
    return num_minmax_nan(x, y, m, nan);
}

/* The smaller of x and y under the given rules. */
static inline float num_fmin(float x, float y, enum num_nan_rule nan, enum num_zero_rule zero)
{
    float m = x < y ? x : y;
    if (zero == NUM_ZERO_SIGNED && x == y)
        m = num_f32_of(num_f32_bits(x) | num_f32_bits(y));
    return num_minmax_nan(x, y, m, nan);
}

#endif
