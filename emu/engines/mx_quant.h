/*
 * mx_quant.h: the row kernels of quantize_mx for flat bf16 sources
 * (exec_mx.c binds the operands and calls them): one block of 8
 * partitions at a time, giving every x4 column its E8M0 scale code and
 * every value its saturating round-to-nearest-even fp8 code. Written
 * once in plain C (the reference) and with AVX2 and AVX-512 intrinsics;
 * all give the same bits for every input (tests/unit/test_exec_mx.c
 * checks it over every bf16 pattern and every scale code that can occur).
 */
#ifndef TRNEMU_EMU_MX_QUANT_H
#define TRNEMU_EMU_MX_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#define MXQ_ROWS 8 /* partitions of one MX group */

/* One 8-partition block of a quantize_mx with a flat bf16 source. */
struct mxq_block {
    const uint16_t *src[MXQ_ROWS]; /* bf16 rows, 4 * nf values each */
    uint8_t *dst[MXQ_ROWS];        /* fp8 x4 rows, 4 * nf bytes each */
    uint8_t *scale;                /* nf scale codes, one per x4 column */
    uint64_t nf;                   /* x4 columns */
    bool e4;                       /* fp8 e4m3fn output (false: e5m2) */
};

/* Scale code of a group whose largest magnitude is amax, for an element
 * type whose largest finite value is below 2^(emax+1): NaN for inf or
 * NaN, 0x00 for zero, else floor(log2 amax) - (emax - 1) + 127 clamped
 * to 0..254. */
uint8_t mxq_scale_code(float amax, int emax);

/* Quantise the block with the kernel of the current ISA level
 * (num_isa_level()). */
void mxq_block_run(const struct mxq_block *b);

/* Quantise the block with the kernel of `level` (a NUM_ISA_* value; a
 * level above what the CPU has, or without a kernel of its own, falls
 * back to the next lower one). For tests. */
void mxq_block_at(const struct mxq_block *b, int level);

#endif
