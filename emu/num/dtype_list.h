/*
 * dtype_list.h: the one list of the NeuronCore's data types, from which
 * both the numerics enum (NUM_DT_*, emu/num/numerics.h) and the ISA enum
 * (ISA_DT_*, emu/isa/isa.h) and their tables are made.
 *
 * A row: X(num, isa, code, size, is_float, is_mx, is_packed, name, asm)
 *   num, isa   the suffix of the NUM_DT_ and the ISA_DT_ constant
 *   code       the value: nrt_dtype_t's below 16, trnemu's own after it
 *   size       bytes per element (a packed container: the whole container)
 *   is_float   1 for a floating-point number format
 *   is_mx      1 for a NeuronCore-v4 format that emu/num/mx.c converts
 *   is_packed  1 for a packed x4 container (not a number: bit copies only)
 *   name       the numerics name (num_dtype_name; NKI and ml_dtypes style)
 *   asm        the assembly name (isa_dtype_name; docs/isa.md)
 * Rows are in code order, from 1 with no gap (code 0 is no dtype).
 */
#ifndef TRNEMU_EMU_NUM_DTYPE_LIST_H
#define TRNEMU_EMU_NUM_DTYPE_LIST_H

#define EMU_DTYPES(X)                                                                  \
    X(UINT64, U64, 1, 8, 0, 0, 0, "uint64", "u64")                                     \
    X(INT8, I8, 2, 1, 0, 0, 0, "int8", "i8")                                           \
    X(UINT8, U8, 3, 1, 0, 0, 0, "uint8", "u8")                                         \
    X(INT16, I16, 4, 2, 0, 0, 0, "int16", "i16")                                       \
    X(UINT16, U16, 5, 2, 0, 0, 0, "uint16", "u16")                                     \
    X(BF16, BF16, 6, 2, 1, 0, 0, "bf16", "bf16")                                       \
    X(FP16, F16, 7, 2, 1, 0, 0, "fp16", "f16")                                         \
    X(INT32, I32, 8, 4, 0, 0, 0, "int32", "i32")                                       \
    X(UINT32, U32, 9, 4, 0, 0, 0, "uint32", "u32")                                     \
    X(FP32, F32, 10, 4, 1, 0, 0, "fp32", "f32")                                        \
    X(FP32R, F32R, 11, 4, 1, 0, 0, "fp32r", "f32r")                                    \
    X(INT64, I64, 12, 8, 0, 0, 0, "int64", "i64")                                      \
    X(FP8_E3, FP8E3, 13, 1, 1, 0, 0, "fp8_e3", "fp8e3")                                \
    X(FP8_E4, FP8E4, 14, 1, 1, 0, 0, "fp8_e4", "fp8e4")                                \
    X(FP8_E5, FP8E5, 15, 1, 1, 0, 0, "fp8_e5", "fp8e5")                                \
    X(FP8_E4M3FN, FP8E4FN, 16, 1, 1, 1, 0, "fp8_e4m3fn", "fp8e4fn")                    \
    X(FP8_E8M0, FP8E8M0, 17, 1, 1, 1, 0, "fp8_e8m0", "fp8e8m0")                        \
    X(FP8_E5M2_X4, FP8E5X4, 18, 4, 0, 1, 1, "fp8_e5m2_x4", "fp8e5x4")                  \
    X(FP8_E4M3FN_X4, FP8E4FNX4, 19, 4, 0, 1, 1, "fp8_e4m3fn_x4", "fp8e4fnx4")          \
    X(FP4_E2M1_X4, FP4X4, 20, 2, 0, 1, 1, "fp4_e2m1fn_x4", "fp4x4")

/* Codes below this are the runtime's nrt_dtype_t values (I/O tensors). */
#define EMU_DTYPE_NRT_COUNT 16

#endif
