/*
 * pe_matmul.h: the arithmetic core of the Tensor engine: operand tiles
 * packed into fp32 panels and the matrix-multiply kernel over them
 * (internal to emu/; exec_pe.c and the benchmarks use it).
 *
 * Numerics (docs/isa.md, nc_matmul): each output element starts from
 * the PSUM value (accumulate) or +0.0, then for k = 0..K-1 in order
 * acc = fmaf(a[k][m], b[k][n], acc), one rounding per step; a NaN result
 * is stored as the default quiet NaN 0x7fc00000. The kernel exists once
 * per ISA level (portable C with fmaf, AVX2+FMA, AVX-512F); vector lanes
 * are distinct outputs, so every level gives the same bits.
 */
#ifndef TRNEMU_EMU_PE_MATMUL_H
#define TRNEMU_EMU_PE_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/ap.h"

#define PE_MR 8   /* output rows (m) per register block */
#define PE_NR 32  /* output columns (n) per register block */
#define PE_CANON_NAN 0x7fc00000u /* the NaN a matmul stores */

/* Splitting one multiplication across host threads (emu/core/par.h): a
 * product of at least PE_PAR_MIN_FMAS multiply-adds is cut into parts of
 * PE_PAR_COLS output columns (a multiple of PE_NR, so every part runs the
 * same blocks as an unsplit run), its packing into parts of PE_PAR_ROWS
 * partitions; both depend on the shape only. */
#define PE_PAR_MIN_FMAS (1u << 20)
#define PE_PAR_COLS 64u
#define PE_PAR_ROWS 32u
#define PE_PANEL_PAR_COLS 128u /* columns per part when moving panels are packed inside */

/* One multiplication over packed panels. */
struct pe_mm {
    uint32_t k;          /* contraction length */
    uint32_t m;          /* output rows */
    uint32_t n;          /* output columns */
    const float *a;      /* stationary: ceil(m/PE_MR) panels of k x PE_MR (zero padded) */
    const float *b;      /* moving: ceil(n/PE_NR) panels of k x PE_NR (zero padded),
                          * unused by pe_mm_run_panels, which reads b_src */
    const struct ap_view *b_src; /* the moving operand as stored, when b is NULL */
    uint32_t b_groups;   /* contraction rows per partition of b_src (2: double row) */
    float *c;            /* output row 0 */
    ptrdiff_t ldc;       /* floats from one output row to the next */
    bool accumulate;     /* start from c (true) or from +0.0 */
};

/* Floats a packed stationary / moving operand needs. */
size_t pe_pack_a_floats(uint32_t k, uint32_t m);
size_t pe_pack_b_floats(uint32_t k, uint32_t n);

/* Pack operand v (rows = partitions) as the stationary (a) or moving (b)
 * panels of width w (m or n): logical contraction row j*rows + p is
 * elements [j*w, (j+1)*w) of partition p, for j < groups (2 in double-row
 * mode, else 1). tmp holds one row of v as fp32. */
void pe_pack_a(const struct ap_view *v, uint32_t groups, uint32_t w, float *dst, float *tmp);
void pe_pack_b(const struct ap_view *v, uint32_t groups, uint32_t w, float *dst, float *tmp);

/* pe_pack_a / pe_pack_b for partitions [p0, p1) of v only, panels of
 * width wr (PE_MR: stationary, PE_NR: moving): ranges that do not overlap
 * write disjoint floats of dst. */
void pe_pack_rows(const struct ap_view *v, uint32_t groups, uint32_t w, uint32_t wr,
                  uint32_t p0, uint32_t p1, float *dst, float *tmp);

/* Packing the moving operand inside the product (pe_mm_run_panels): at
 * most PE_PANEL_MAX_K contraction rows, PE_PANEL_COLS columns at a time. */
#define PE_PANEL_MAX_K 256u
#define PE_PANEL_COLS 256u
#define PE_PANEL_FLOATS (PE_PANEL_MAX_K * PE_PANEL_COLS) /* room pe_mm_run_panels needs */

/* Whether pe_mm_run_panels can read moving operand v as stored (b_src):
 * flat bf16 or flat fp32 rows, k at most PE_PANEL_MAX_K. */
bool pe_panel_src_ok(const struct ap_view *v, uint32_t groups);

/* Copy w floats of one logical contraction row (index kk of kt) into the
 * panels of width wr (PE_MR: stationary, PE_NR: moving), zero padded. */
void pe_scatter_row(const float *src, uint32_t w, uint32_t wr, uint32_t kt, uint32_t kk,
                    float *dst);

/* c (m x n, row stride ldc) op= a x b with the kernel of the current ISA
 * level (num_isa_level(), at most what this CPU has); split across host
 * threads when large (PE_PAR_MIN_FMAS), same bits either way. */
void pe_mm_run(const struct pe_mm *mm);

/* pe_mm_run for output columns [n_lo, n_hi) only, on the calling thread;
 * n_lo is a multiple of PE_NR. */
void pe_mm_run_cols(const struct pe_mm *mm, uint32_t n_lo, uint32_t n_hi);

/* pe_mm_run_cols for a product whose moving operand is mm->b_src (b
 * unused): PE_PANEL_COLS columns at a time, their panels packed into
 * `panels` (PE_PANEL_FLOATS floats, the calling thread's own) by reading
 * each stored row in order, then multiplied while they are in cache. */
void pe_mm_run_panels(const struct pe_mm *mm, uint32_t n_lo, uint32_t n_hi, float *panels);

/* The packing step of pe_mm_run_panels alone: columns [n_lo, n_hi) of
 * mm->b_src (at most PE_PANEL_COLS of them) into panels. */
void pe_pack_panels(const struct pe_mm *mm, uint32_t n_lo, uint32_t n_hi, float *panels);

/* Run nc_matmul accumulation groups as one job (exec_pe.c, on by
 * default) or each instruction alone: for benchmarks that compare them. */
void pe_groups_set(bool on);

/* Name of the kernel pe_mm_run uses now: "portable", "avx2" or "avx512". */
const char *pe_mm_impl_name(void);

#endif
