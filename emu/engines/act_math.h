/*
 * act_math.h: the activation functions of the Scalar Engine (the ACT enum
 * of emu/isa/isa_ops.h) and the free-axis reductions of the engine
 * accumulators, as deterministic row kernels.
 *
 * Every function is trnemu's own code (no libm in the hot paths): plain C
 * that GCC vectorises, compiled once per ISA level (portable, AVX2,
 * AVX-512; chosen with the numerics.h level), plus AVX-512 intrinsic loops
 * for the busiest functions and AVX2 ones for gelu and gelu_dx (whose
 * table lookups GCC would not vectorise); fused multiply-adds only where the kernels
 * ask for them (fmaf in the portable build), so all levels and all x86-64
 * machines give the same bits. Every transcendental function is a
 * binary32 kernel (0.5 to 8 ulp; sin reduces an argument of 2^10 or more
 * in binary64).
 * docs/isa.md has the formulas, docs/numerics.md the ulp bounds.
 */
#ifndef TRNEMU_EMU_ACT_MATH_H
#define TRNEMU_EMU_ACT_MATH_H

#include <stdbool.h>
#include <stddef.h>

/* Is func a known activation function (an ISA_ACT_* value)? */
bool act_math_known(unsigned func);

/* dst[i] = func(src[i] * scale + bias) for i < n, the multiply and the add
 * each rounded to binary32 (no fused multiply-add); alpha is the slope of
 * prelu for negative inputs. dst may be src itself (no other overlap).
 * Pass scale 1 and bias -0.0f for func(src[i]) exactly. false (nothing
 * written) for an unknown func. */
bool act_math_row(unsigned func, float *dst, const float *src, size_t n, float scale,
                  float bias, float alpha);

/* func(x) for one value, the same bits as act_math_row. */
float act_math_one(unsigned func, float x, float alpha);

/* The reduce operators an accumulator accepts: ISA_ALU_add, max, min,
 * abs_max, abs_min. */
bool act_math_reduce_known(unsigned op);

/* The value a reset puts in an accumulator: 0 for add and abs_max, -inf
 * for max, +inf for min and abs_min. */
float act_math_reduce_identity(unsigned op);

/* Fold the n values of x into *acc with op (act_math_reduce_known). add
 * sums x in binary64 in a fixed order (16 interleaved partial sums, then
 * pairwise) and adds the total to *acc with one rounding; max/min keep a
 * NaN. */
void act_math_reduce(unsigned op, const float *x, size_t n, float *acc);

#endif
