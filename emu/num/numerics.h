/*
 * numerics.h: the data types of the emulated NeuronCore and every
 * conversion between them (docs/numerics.md has the rules and sources).
 *
 * Types are named by their nrt_dtype_t values. Floating-point formats:
 * fp32 (and fp32r, stored as fp32), bf16, IEEE fp16, and three IEEE-style
 * 8-bit formats fp8_e3 (e3m4, bias 3), fp8_e4 (e4m3, bias 7, max 240) and
 * fp8_e5 (e5m2, bias 15); all three fp8 formats have infinities and NaNs.
 * Integers: int8..int64, uint8..uint64. NeuronCore-v4 adds float8_e4m3fn,
 * float8_e8m0fnu and three packed x4 containers (emu/num/mx.h).
 *
 * Engines compute in fp32: they read any type with num_load_f32() and
 * write with num_store_f32(), which rounds to nearest even (default) or
 * stochastically with a deterministic counter-based generator. A cast
 * between two different types goes through fp32, as the hardware does;
 * a copy between equal types is bit-exact.
 */
#ifndef TRNEMU_EMU_NUMERICS_H
#define TRNEMU_EMU_NUMERICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/num/dtype_list.h"
#include "emu/status.h"

/* ---- data types: the values of nrt_dtype_t ------------------------------ */
/* One constant per row of emu/num/dtype_list.h; codes 16..20 are the
 * NeuronCore-v4 formats (emu/num/mx.h), trnemu's own values after the
 * runtime's nrt_dtype_t range, which has no names for them. */
enum num_dtype {
    NUM_DT_INVALID = 0,
#define NUM_DT_ROW(num, isa, code, ...) NUM_DT_##num = code,
    EMU_DTYPES(NUM_DT_ROW)
#undef NUM_DT_ROW
    NUM_DT_COUNT  /* one past the last code */
};
#define NUM_DT_NRT_COUNT EMU_DTYPE_NRT_COUNT /* dtypes below this are nrt_dtype_t values */

/* Element size in bytes; 0 for an unknown dtype. */
size_t num_dtype_size(uint32_t dtype);
/* Canonical name ("fp32", "bf16", "fp8_e4", "int32", ...); NULL if unknown. */
const char *num_dtype_name(uint32_t dtype);
/* The dtype named name (canonical names and aliases such as float32,
 * bfloat16, float16, float8_e4m3, f32, i32, u8; any case), or -1. */
int num_dtype_parse(const char *name);
/* True for fp32, fp32r, bf16, fp16 and the fp8 types. */
bool num_dtype_is_float(uint32_t dtype);
/* A dtype emu/num/mx.c converts (fp8_e4m3fn, fp8_e8m0 or a packed x4 type). */
bool num_dtype_is_mx(uint32_t dtype);
/* A packed x4 container type. */
bool num_dtype_is_packed(uint32_t dtype);

/* ---- rounding ------------------------------------------------------------ */
#define NUM_ROUND_RNE 0        /* round to nearest, ties to even */
#define NUM_ROUND_STOCHASTIC 1 /* round up with probability = discarded fraction */

/* How a store rounds. A NULL pointer means RNE without saturation. */
struct num_round {
    uint32_t mode;   /* NUM_ROUND_RNE or NUM_ROUND_STOCHASTIC */
    bool saturate;   /* float targets: overflow and +-inf give +-max finite */
    uint64_t seed;   /* stochastic: the random stream */
    uint64_t index;  /* stochastic: counter of the first element (i-th uses index+i) */
};

/* 64 random bits for element index of stream seed (splitmix64-style hash;
 * the same (seed, index) always gives the same bits). */
uint64_t num_rng_u64(uint64_t seed, uint64_t index);

/* ---- scalar conversions --------------------------------------------------- */
float num_bf16_to_f32(uint16_t h);
uint16_t num_f32_to_bf16(float x);            /* RNE; NaN stays a quiet NaN */
float num_f16_to_f32(uint16_t h);
uint16_t num_f32_to_f16(float x);             /* RNE; overflow gives inf */
/* fp8: dtype is NUM_DT_FP8_E3, _E4 or _E5 (others give NaN / 0). */
float num_fp8_to_f32(uint32_t dtype, uint8_t v);
uint8_t num_f32_to_fp8(uint32_t dtype, float x); /* RNE; overflow gives inf */
/* float -> signed (int8..int64) or unsigned (uint8..uint64) integer: RNE,
 * saturated to the type's range, NaN gives 0; 0 for other dtypes. */
int64_t num_f32_to_int(uint32_t dtype, float x);
uint64_t num_f32_to_uint(uint32_t dtype, float x);
/* One element of any dtype at src, read as fp32 (int32/int64 round RNE). */
float num_to_f32(uint32_t dtype, const void *src);
/* Write x as one element of dtype at dst, rounded as rnd says for element
 * number rnd->index + i (rnd may be NULL). */
emu_status num_from_f32(uint32_t dtype, void *dst, float x, const struct num_round *rnd,
                        uint64_t i);

/* ---- vector conversions (the hot path) -------------------------------- */
/* Strides count elements and may be negative; dst and src must not overlap
 * (except a same-dtype contiguous copy). n == 0 is a no-op. Unknown dtypes
 * give EMU_INVALID with one log line. */

/* dst[i] = src element i (at src + i*stride elements) as fp32. */
emu_status num_load_f32(float *dst, const void *src, uint32_t src_dtype,
                        ptrdiff_t src_stride_elems, size_t n);
/* dst element i (at dst + i*stride) = src[i], rounded as rnd says. */
emu_status num_store_f32(void *dst, uint32_t dst_dtype, ptrdiff_t dst_stride_elems,
                         const float *src, size_t n, const struct num_round *rnd);
/* Cast n contiguous elements: bit copy for equal types (fp32 == fp32r),
 * otherwise src -> fp32 -> dst with RNE. */
emu_status num_convert(void *dst, uint32_t dst_dtype, const void *src, uint32_t src_dtype,
                       size_t n);
emu_status num_convert_strided(void *dst, uint32_t dst_dtype, ptrdiff_t dst_stride_elems,
                               const void *src, uint32_t src_dtype,
                               ptrdiff_t src_stride_elems, size_t n);
/* The general form: strided, with a rounding choice for the final store. */
emu_status num_convert_ex(void *dst, uint32_t dst_dtype, ptrdiff_t dst_stride_elems,
                          const void *src, uint32_t src_dtype, ptrdiff_t src_stride_elems,
                          size_t n, const struct num_round *rnd);

/* ---- scans ------------------------------------------------------------- */

/* Index of the first NaN or infinity among the n fp32 values at x (with
 * nan_only: the first NaN, infinities pass), or n when there is none. */
size_t num_first_nonfinite_f32(const float *x, size_t n, bool nan_only);

/* ---- implementation choice (tests and benchmarks) --------------------- */
/* The contiguous loops exist once per level and are picked at run time
 * from the CPU's features; every level gives bit-identical results. */
#define NUM_ISA_PORTABLE 0 /* plain C for the compiler's baseline target */
#define NUM_ISA_AVX2 1     /* x86: AVX2, FMA and F16C */
#define NUM_ISA_AVX512 2   /* x86: AVX-512 F/BW/VL/DQ, AVX2, FMA and F16C */

/* Use at most this level (the default is the highest: the best the CPU has). */
void num_set_isa_limit(int level);
/* The level in use, and its name: "portable", "avx2" or "avx512". */
int num_isa_level(void);
const char *num_impl_name(void);

#endif
