/*
 * mx.h: the NeuronCore-v4 number formats (docs/numerics.md, "NeuronCore-v4
 * formats"): OCP float8_e4m3fn, the float8_e8m0fnu scale, and the packed
 * x4 containers nc_matmul_mx and quantize_mx use (four fp8 values in 32
 * bits, or four fp4 e2m1 values in 16 bits).
 *
 * float8_e4m3fn and float8_e8m0fnu are ordinary element types: num_load_f32
 * and num_store_f32 read and write them (numerics_vec.c hands them to the
 * functions here). The packed types are containers, not numbers: the
 * generic conversions refuse them (one log line) and a bit copy is the
 * only cast they take; num_x4_unpack/num_x4_pack open them.
 */
#ifndef TRNEMU_EMU_NUM_MX_H
#define TRNEMU_EMU_NUM_MX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/num/numerics.h"

/* Element values in one packed x4 container. */
#define NUM_X4_LANES 4
/* Values sharing one MX scale (OCP MX: 32). */
#define NUM_MX_GROUP 32
/* The float8_e8m0fnu bits of 2^0, and its NaN. */
#define NUM_E8M0_ONE 0x7fu
#define NUM_E8M0_NAN 0xffu

/* num_dtype_is_mx and num_dtype_is_packed (numerics.h) say which dtypes
 * this file handles. */
/* The 4-bit e2m1 element of fp4_e2m1fn_x4 (not a storage dtype). */
#define NUM_ELEM_FP4_E2M1 0x100u
/* The element type inside a packed type (NUM_DT_FP8_E5, NUM_DT_FP8_E4M3FN
 * or NUM_ELEM_FP4_E2M1); 0 for other dtypes. */
uint32_t num_packed_elem(uint32_t dtype);

/* float8_e4m3fn: bias 7, no infinity, NaN is S.1111.111, largest finite
 * 448. RNE; overflow (a result above 448, infinities) gives NaN, or +-448
 * when sat; NaN keeps its sign. */
float num_e4m3fn_to_f32(uint8_t v);
uint8_t num_f32_to_e4m3fn(float x, bool sat);
/* The same with stochastic rounding: R's low bits decide (round away from
 * zero when they are below the discarded fraction). */
uint8_t num_f32_to_e4m3fn_sr(float x, bool sat, uint64_t R);

/* float8_e8m0fnu: 2^(v - 127) for v < 255, NaN for 255; no sign, no zero.
 * From fp32: the nearest power of two (ties to the even code); zero and
 * values below 2^-127 give 0x00 (2^-127); above 2^127 gives NaN, or 0xfe
 * when sat; negative values and NaN give NaN. */
float num_e8m0_to_f32(uint8_t v);
uint8_t num_f32_to_e8m0(float x, bool sat);

/* float4_e2m1fn (4 bits: sign, 2 exponent bits with bias 1, 1 mantissa
 * bit): 0, 0.5, 1, 1.5, 2, 3, 4, 6; no infinity or NaN. RNE; overflow and
 * infinities saturate to +-6; NaN gives +6 with its sign (it has no
 * encoding). */
float num_fp4_to_f32(uint8_t nibble);
uint8_t num_f32_to_fp4(float x);

/* The four values of the packed element at p (lane j: byte j, or nibble j
 * from the low end of the little-endian 16-bit word). */
void num_x4_unpack(uint32_t dtype, const uint8_t *p, float out[NUM_X4_LANES]);
/* Pack four values (RNE; sat as the element type's conversion says). */
void num_x4_pack(uint32_t dtype, const float in[NUM_X4_LANES], bool sat, uint8_t *p);

/* The vector conversions of numerics.h for the dtypes of this file (the
 * packed ones give EMU_INVALID with one log line). */
emu_status num_mx_load_f32(float *dst, const void *src, uint32_t dtype, ptrdiff_t stride,
                           size_t n);
emu_status num_mx_store_f32(void *dst, uint32_t dtype, ptrdiff_t stride, const float *src,
                            size_t n, const struct num_round *rnd);

#endif
