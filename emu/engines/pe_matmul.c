/*
 * pe_matmul.c: packing of Tensor-engine operands into fp32 panels and the
 * register-blocked matmul kernel, once per ISA level (see pe_matmul.h).
 *
 * The output is cut into PE_MR x PE_NR blocks; a block's accumulators stay
 * in registers for the whole contraction: per k, one row of the moving
 * panel (PE_NR floats) and PE_MR broadcast stationary values feed
 * PE_MR x PE_NR fused multiply-adds. Blocks on the right or bottom edge
 * go through a small local tile. Each output element sees exactly the
 * fmaf sequence of the definition, whatever the level. A moving operand
 * stored as flat bf16 or fp32 rows may instead be packed inside the
 * product, PE_PANEL_COLS columns at a time, into the calling thread's own
 * buffer (pe_mm_run_panels): conversion only, so the bits are the same.
 * Stored rows of either operand lie in partitions a multiple of 4 KiB
 * apart and miss the cache, so they are asked for (into L2) PE_ROWS_AHEAD
 * rows before they are read; with AVX-512 a bf16 stationary operand is
 * packed 8 partitions at a time, so each panel is written in 256-byte
 * runs rather than 32-byte pieces 4 KiB apart. Blocks of one packed range
 * run row block by
 * row block (the panels, a few dozen KiB, stay in L2; each block's output
 * rows continue the previous block's), and the output rows of the next
 * block are asked for while a block runs (the order of blocks and the
 * prefetch hints change no result: each output element is one block's
 * own fmaf chain).
 */
#include "emu/engines/pe_matmul.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "emu/core/par.h"
#include "emu/num/numerics.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define PE_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define PE_X86 0
#endif

/* One full PE_MR x PE_NR block: c op= a-panel x b-panel over k. */
typedef void (*pe_kernel_fn)(uint32_t k, const float *a, const float *b, float *c,
                             ptrdiff_t ldc, bool acc);

/* ---- packing ------------------------------------------------------------------ */

size_t pe_pack_a_floats(uint32_t k, uint32_t m)
{
    return (size_t)((m + PE_MR - 1) / PE_MR) * PE_MR * k;
}

size_t pe_pack_b_floats(uint32_t k, uint32_t n)
{
    return (size_t)((n + PE_NR - 1) / PE_NR) * PE_NR * k;
}

/* Where logical row kk's chunk of panel `panel` starts (panels of width wr). */
static inline float *pe_panel_row(float *dst, uint32_t panel, uint32_t kt, uint32_t kk,
                                  uint32_t wr)
{
    return dst + ((size_t)panel * kt + kk) * wr;
}

void pe_scatter_row(const float *src, uint32_t w, uint32_t wr, uint32_t kt, uint32_t kk,
                           float *dst)
{
    for (uint32_t j0 = 0, panel = 0; j0 < w; j0 += wr, panel++) {
        float *d = pe_panel_row(dst, panel, kt, kk, wr);
        uint32_t len = w - j0 < wr ? w - j0 : wr;
        memcpy(d, src + j0, len * sizeof(float));
        if (len < wr)
            memset(d + len, 0, (wr - len) * sizeof(float));
    }
}

static inline float pe_bf16(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* The bf16 fast path of pe_scatter_row: convert straight into the panels
 * (full panels in fixed-width loops that GCC vectorises). */
static void pe_scatter_bf16(const uint8_t *src, uint32_t w, uint32_t wr, uint32_t kt,
                            uint32_t kk, float *dst)
{
    uint16_t h[PE_NR];
    for (uint32_t j0 = 0, panel = 0; j0 < w; j0 += wr, panel++) {
        float *d = pe_panel_row(dst, panel, kt, kk, wr);
        uint32_t len = w - j0 < wr ? w - j0 : wr;
        if (len == PE_NR) {
            memcpy(h, src + 2 * (size_t)j0, PE_NR * 2);
            for (uint32_t i = 0; i < PE_NR; i++)
                d[i] = pe_bf16(h[i]);
        } else if (len == PE_MR) {
            memcpy(h, src + 2 * (size_t)j0, PE_MR * 2);
            for (uint32_t i = 0; i < PE_MR; i++)
                d[i] = pe_bf16(h[i]);
        } else {
            memset(h, 0, sizeof h);
            memcpy(h, src + 2 * (size_t)j0, 2 * (size_t)len);
            for (uint32_t i = 0; i < wr; i++)
                d[i] = pe_bf16(h[i]);
        }
    }
}

/* Stored rows of an operand asked for ahead of the row being packed:
 * rows come from partitions 192 KiB apart, each a miss to L3 that the
 * hardware prefetcher does not foresee. */
#define PE_ROWS_AHEAD 8u

/* Ask for the bytes of a row that will be read soon, into L2: rows of
 * consecutive partitions share one L1 set (their stride is a multiple of
 * 4 KiB), so PE_ROWS_AHEAD of them would evict each other from L1. */
static void pe_prefetch_row(const uint8_t *p, size_t bytes)
{
    for (size_t off = 0; off < bytes; off += 64)
        __builtin_prefetch(p + off, 0, 2);
}

static int pe_level(void);

#if PE_X86
/* Rows of 8 stationary partitions at a time (bf16, panels PE_MR wide),
 * with AVX-512: panel i then gets its 8 x 8 values for these partitions
 * as one 256-byte run, where a row at a time writes 32-byte pieces 4 KiB
 * apart. Columns after the last full 16 go one row at a time. Returns
 * the first partition left (fewer than 8 remain). */
__attribute__((target("avx512f"))) static uint32_t pe_stat_rows_x512(const struct ap_view *v,
                                                                     uint32_t groups,
                                                                     uint32_t w, uint32_t p0,
                                                                     uint32_t p1, float *dst)
{
    uint32_t kt = groups * v->rows, wfull = w / 16 * 16;
    size_t run = (size_t)groups * w * 2;
    float *tail = dst + (size_t)(wfull / PE_MR) * kt * PE_MR; /* panels of the last columns */
    uint32_t p = p0;
    for (; p + 8 <= p1; p += 8) {
        for (uint32_t r = p + 8; r < p + 16 && r < p1; r++)
            pe_prefetch_row(ap_row_ptr(v, r), run);
        for (uint32_t j = 0; j < groups; j++) {
            uint32_t kk = j * v->rows + p;
            for (uint32_t j0 = 0; j0 < wfull; j0 += 16) {
                float *d0 = pe_panel_row(dst, j0 / PE_MR, kt, kk, PE_MR);
                float *d1 = d0 + (size_t)kt * PE_MR;
                for (uint32_t r = 0; r < 8; r++) {
                    const uint8_t *s = ap_row_ptr(v, p + r) + ((size_t)j * w + j0) * 2;
                    __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)s);
                    __m512i f = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
                    _mm256_storeu_si256((__m256i *)(void *)(d0 + r * PE_MR),
                                        _mm512_castsi512_si256(f));
                    _mm256_storeu_si256((__m256i *)(void *)(d1 + r * PE_MR),
                                        _mm512_extracti64x4_epi64(f, 1));
                }
            }
            for (uint32_t r = 0; wfull < w && r < 8; r++)
                pe_scatter_bf16(ap_row_ptr(v, p + r) + ((size_t)j * w + wfull) * 2, w - wfull,
                                PE_MR, kt, kk + r, tail);
        }
    }
    return p;
}
#endif

void pe_pack_rows(const struct ap_view *v, uint32_t groups, uint32_t w, uint32_t wr,
                  uint32_t p0, uint32_t p1, float *dst, float *tmp)
{
    uint32_t kt = groups * v->rows;
    bool bf16 = v->flat && v->dtype == NUM_DT_BF16;
    p1 = p1 < v->rows ? p1 : v->rows;
    size_t run = (size_t)groups * w * 2;
#if PE_X86
    if (bf16 && wr == PE_MR && pe_level() == NUM_ISA_AVX512)
        p0 = pe_stat_rows_x512(v, groups, w, p0, p1, dst);
#endif
    for (uint32_t p = p0; bf16 && p < p0 + PE_ROWS_AHEAD && p < p1; p++)
        pe_prefetch_row(ap_row_ptr(v, p), run);
    for (uint32_t p = p0; p < p1; p++) {
        if (bf16) {
            if (p + PE_ROWS_AHEAD < p1)
                pe_prefetch_row(ap_row_ptr(v, p + PE_ROWS_AHEAD), run);
            for (uint32_t j = 0; j < groups; j++)
                pe_scatter_bf16(ap_row_ptr(v, p) + (size_t)j * w * 2, w, wr, kt,
                                j * v->rows + p, dst);
            continue;
        }
        const float *row = ap_row_f32(v, p);
        if (row == NULL) {
            ap_row_load(v, p, tmp);
            row = tmp;
        }
        for (uint32_t j = 0; j < groups; j++)
            pe_scatter_row(row + (size_t)j * w, w, wr, kt, j * v->rows + p, dst);
    }
}

void pe_pack_a(const struct ap_view *v, uint32_t groups, uint32_t w, float *dst, float *tmp)
{
    pe_pack_rows(v, groups, w, PE_MR, 0, v->rows, dst, tmp);
}

void pe_pack_b(const struct ap_view *v, uint32_t groups, uint32_t w, float *dst, float *tmp)
{
    pe_pack_rows(v, groups, w, PE_NR, 0, v->rows, dst, tmp);
}

/* ---- packing moving panels inside the product --------------------------------------- */

bool pe_panel_src_ok(const struct ap_view *v, uint32_t groups)
{
    bool f32 = v->dtype == NUM_DT_FP32 || v->dtype == NUM_DT_FP32R;
    return v->flat && (v->dtype == NUM_DT_BF16 || f32) && groups * v->rows <= PE_PANEL_MAX_K;
}

/* len (<= PE_NR) bf16 values at src as fp32 into d, zero padded to PE_NR. */
static void pe_chunk_bf16(const uint8_t *src, uint32_t len, float *d)
{
    uint16_t h[PE_NR];
    if (len < PE_NR)
        memset(h, 0, sizeof h);
    memcpy(h, src, 2 * (size_t)len);
    for (uint32_t i = 0; i < PE_NR; i++)
        d[i] = pe_bf16(h[i]);
}


/* len (<= PE_NR) fp32 values at src into d, zero padded to PE_NR. */
static void pe_chunk_f32(const uint8_t *src, uint32_t len, float *d)
{
    memcpy(d, src, 4 * (size_t)len);
    if (len < PE_NR)
        memset(d + len, 0, (PE_NR - len) * sizeof(float));
}

/* Where the chunk of logical row j * rows + p for panel column n0 starts. */
static inline const uint8_t *pe_chunk_src(const struct pe_mm *mm, uint32_t p, uint32_t j,
                                          uint32_t n0)
{
    const struct ap_view *v = mm->b_src;
    return ap_row_ptr(v, p) + ((size_t)j * mm->n + n0) * v->esize;
}

/* Where the chunk of logical row kk for panel column n0 lands in panels
 * packed from column n_lo on. */
static inline float *pe_chunk_dst(const struct pe_mm *mm, float *dst, uint32_t kk, uint32_t n_lo,
                                  uint32_t n0)
{
    return dst + ((size_t)(n0 - n_lo) / PE_NR * mm->k + kk) * PE_NR;
}

/* Pack logical row kk of the moving operand, columns [n_lo, n_hi), into
 * the panels at dst (panel i holds columns n_lo + i * PE_NR on). One run
 * of the stored row is read in order: rows of many partitions at once
 * would share a few cache sets (partition strides are multiples of 4 KiB). */
static void pe_panels_row(const struct pe_mm *mm, uint32_t kk, uint32_t n_lo, uint32_t n_hi,
                          float *dst)
{
    bool bf16 = mm->b_src->dtype == NUM_DT_BF16;
    for (uint32_t n0 = n_lo; n0 < n_hi; n0 += PE_NR) {
        const uint8_t *s = pe_chunk_src(mm, kk % mm->b_src->rows, kk / mm->b_src->rows, n0);
        float *d = pe_chunk_dst(mm, dst, kk, n_lo, n0);
        uint32_t len = mm->n - n0 < PE_NR ? mm->n - n0 : PE_NR;
        if (bf16)
            pe_chunk_bf16(s, len, d);
        else
            pe_chunk_f32(s, len, d);
    }
}

#if PE_X86
/* pe_panels_row for bf16 with AVX-512: full chunks 32 values in two
 * registers, a partial last chunk as above. */
__attribute__((target("avx512f"))) static void pe_panels_row_x512(const struct pe_mm *mm,
                                                                  uint32_t kk, uint32_t n_lo,
                                                                  uint32_t n_hi, float *dst)
{
    uint32_t n0 = n_lo;
    for (; n0 + PE_NR <= n_hi; n0 += PE_NR) {
        const uint8_t *s = pe_chunk_src(mm, kk % mm->b_src->rows, kk / mm->b_src->rows, n0);
        float *d = pe_chunk_dst(mm, dst, kk, n_lo, n0);
        __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)s);
        __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(s + 32));
        _mm512_storeu_si512(d, _mm512_slli_epi32(_mm512_cvtepu16_epi32(lo), 16));
        _mm512_storeu_si512(d + 16, _mm512_slli_epi32(_mm512_cvtepu16_epi32(hi), 16));
    }
    if (n0 < n_hi) {
        uint32_t len = mm->n - n0 < PE_NR ? mm->n - n0 : PE_NR;
        pe_chunk_bf16(pe_chunk_src(mm, kk % mm->b_src->rows, kk / mm->b_src->rows, n0), len,
                      pe_chunk_dst(mm, dst, kk, n_lo, n0));
    }
}
#endif

/* ---- kernels ----------------------------------------------------------------- */

static inline float pe_canon(float x)
{
    if (isnan(x)) {
        uint32_t bits = PE_CANON_NAN;
        memcpy(&x, &bits, sizeof x);
    }
    return x;
}

/* Plain C: the definition itself, with fmaf. */
static void pe_kernel_portable(uint32_t k, const float *a, const float *b, float *c,
                               ptrdiff_t ldc, bool acc)
{
    float t[PE_MR][PE_NR];
    for (int r = 0; r < PE_MR; r++)
        for (int j = 0; j < PE_NR; j++)
            t[r][j] = acc ? c[r * ldc + j] : 0.0f;
    for (uint32_t kk = 0; kk < k; kk++) {
        const float *bk = b + (size_t)kk * PE_NR;
        for (int r = 0; r < PE_MR; r++) {
            float av = a[(size_t)kk * PE_MR + r];
            for (int j = 0; j < PE_NR; j++)
                t[r][j] = fmaf(av, bk[j], t[r][j]);
        }
    }
    for (int r = 0; r < PE_MR; r++)
        for (int j = 0; j < PE_NR; j++)
            c[r * ldc + j] = pe_canon(t[r][j]);
}

#if PE_X86
/* AVX2 + FMA: the block as four 4 x 16 sub-blocks (8 ymm accumulators). */
__attribute__((target("avx2,fma"))) static void pe_kernel_avx2(uint32_t k, const float *a,
                                                               const float *b, float *c,
                                                               ptrdiff_t ldc, bool acc)
{
    const __m256 canon = _mm256_castsi256_ps(_mm256_set1_epi32((int)PE_CANON_NAN));
    for (int r0 = 0; r0 < PE_MR; r0 += 4) {
        for (int j0 = 0; j0 < PE_NR; j0 += 16) {
            __m256 t[4][2];
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                float *cr = c + (r0 + r) * ldc + j0;
                t[r][0] = acc ? _mm256_loadu_ps(cr) : _mm256_setzero_ps();
                t[r][1] = acc ? _mm256_loadu_ps(cr + 8) : _mm256_setzero_ps();
            }
            for (uint32_t kk = 0; kk < k; kk++) {
                const float *bk = b + (size_t)kk * PE_NR + j0;
                __m256 b0 = _mm256_loadu_ps(bk), b1 = _mm256_loadu_ps(bk + 8);
                const float *ak = a + (size_t)kk * PE_MR + r0;
#pragma GCC unroll 4
                for (int r = 0; r < 4; r++) {
                    __m256 av = _mm256_broadcast_ss(ak + r);
                    t[r][0] = _mm256_fmadd_ps(av, b0, t[r][0]);
                    t[r][1] = _mm256_fmadd_ps(av, b1, t[r][1]);
                }
            }
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) {
                float *cr = c + (r0 + r) * ldc + j0;
                for (int h = 0; h < 2; h++) {
                    __m256 x = t[r][h];
                    x = _mm256_blendv_ps(x, canon, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
                    _mm256_storeu_ps(cr + 8 * h, x);
                }
            }
        }
    }
}

/* AVX-512F: the whole 8 x 32 block in 16 zmm accumulators. */
__attribute__((target("avx512f"))) static void pe_kernel_avx512(uint32_t k, const float *a,
                                                               const float *b, float *c,
                                                               ptrdiff_t ldc, bool acc)
{
    __m512 t[PE_MR][2];
#pragma GCC unroll 8
    for (int r = 0; r < PE_MR; r++) {
        t[r][0] = acc ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
        t[r][1] = acc ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
    }
    for (uint32_t kk = 0; kk < k; kk++) {
        const float *bk = b + (size_t)kk * PE_NR;
        const float *ak = a + (size_t)kk * PE_MR;
        __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);
#pragma GCC unroll 8
        for (int r = 0; r < PE_MR; r++) {
            __m512 av = _mm512_set1_ps(ak[r]);
            t[r][0] = _mm512_fmadd_ps(av, b0, t[r][0]);
            t[r][1] = _mm512_fmadd_ps(av, b1, t[r][1]);
        }
    }
    const __m512 canon = _mm512_castsi512_ps(_mm512_set1_epi32((int)PE_CANON_NAN));
#pragma GCC unroll 8
    for (int r = 0; r < PE_MR; r++) {
        for (int h = 0; h < 2; h++) {
            __m512 x = t[r][h];
            x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x, canon);
            _mm512_storeu_ps(c + r * ldc + 16 * h, x);
        }
    }
}

/* 0 portable, 1 AVX2+FMA, 2 AVX-512F: what this CPU and OS support. */
static int pe_cpu_level(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX) ||
        !(c & bit_FMA))
        return NUM_ISA_PORTABLE;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0x6u) != 0x6u || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX2))
        return NUM_ISA_PORTABLE;
    if ((b & bit_AVX512F) && (xlo & 0xe6u) == 0xe6u)
        return NUM_ISA_AVX512;
    return NUM_ISA_AVX2;
}
#else
static int pe_cpu_level(void)
{
    return NUM_ISA_PORTABLE;
}
#endif

static atomic_int pe_cpu_level_cache = -1; /* pe_cpu_level(), -1: not probed */

/* The level in use: the CPU's, capped by the numerics limit. */
static int pe_level(void)
{
    int cpu = atomic_load_explicit(&pe_cpu_level_cache, memory_order_relaxed);
    if (cpu < 0) {
        cpu = pe_cpu_level();
        atomic_store_explicit(&pe_cpu_level_cache, cpu, memory_order_relaxed);
    }
    int lim = num_isa_level();
    return cpu < lim ? cpu : lim;
}

const char *pe_mm_impl_name(void)
{
    static const char *const names[] = {"portable", "avx2", "avx512"};
    return names[pe_level()];
}

static pe_kernel_fn pe_kernel(void)
{
#if PE_X86
    switch (pe_level()) {
    case NUM_ISA_AVX512: return pe_kernel_avx512;
    case NUM_ISA_AVX2: return pe_kernel_avx2;
    default: break;
    }
#endif
    return pe_kernel_portable;
}

/* ---- driver ------------------------------------------------------------------ */

/* A block cut by the right or bottom edge: rows x cols valid outputs. */
static void pe_edge_block(pe_kernel_fn fn, const struct pe_mm *mm, const float *ap,
                          const float *bp, float *c, uint32_t rows, uint32_t cols)
{
    float t[PE_MR][PE_NR];
    memset(t, 0, sizeof t);
    if (mm->accumulate)
        for (uint32_t r = 0; r < rows; r++)
            memcpy(t[r], c + r * mm->ldc, cols * sizeof(float));
    fn(mm->k, ap, bp, &t[0][0], PE_NR, mm->accumulate);
    for (uint32_t r = 0; r < rows; r++)
        memcpy(c + r * mm->ldc, t[r], cols * sizeof(float));
}

/* The blocks of output rows [m0, m0 + PE_MR) and columns [n0, n0 + PE_NR)
 * (cut by the edges) over packed moving panel bp. */
static void pe_mm_block(pe_kernel_fn fn, const struct pe_mm *mm, const float *bp, uint32_t n0,
                        uint32_t m0)
{
    uint32_t cols = mm->n - n0 < PE_NR ? mm->n - n0 : PE_NR;
    const float *ap = mm->a + (size_t)(m0 / PE_MR) * mm->k * PE_MR;
    uint32_t rows = mm->m - m0 < PE_MR ? mm->m - m0 : PE_MR;
    float *c = mm->c + (ptrdiff_t)m0 * mm->ldc + n0;
    if (rows == PE_MR && cols == PE_NR)
        fn(mm->k, ap, bp, c, mm->ldc, mm->accumulate);
    else
        pe_edge_block(fn, mm, ap, bp, c, rows, cols);
}

/* Ask for the run of `bytes` bytes of logical row kk from column n_lo on. */
static void pe_prefetch_panel_row(const struct pe_mm *mm, uint32_t kk, uint32_t n_lo,
                                  size_t bytes)
{
    pe_prefetch_row(pe_chunk_src(mm, kk % mm->b_src->rows, kk / mm->b_src->rows, n_lo), bytes);
}

void pe_pack_panels(const struct pe_mm *mm, uint32_t n_lo, uint32_t n_hi, float *panels)
{
    bool x512 = PE_X86 && pe_level() == NUM_ISA_AVX512 && mm->b_src->dtype == NUM_DT_BF16;
    n_hi = n_hi < mm->n ? n_hi : mm->n;
    if (n_hi - n_lo > PE_PANEL_COLS)
        n_hi = n_lo + PE_PANEL_COLS;
    size_t run = (size_t)(n_hi - n_lo) * mm->b_src->esize;
    for (uint32_t kk = 0; kk < PE_ROWS_AHEAD && kk < mm->k; kk++)
        pe_prefetch_panel_row(mm, kk, n_lo, run);
    for (uint32_t kk = 0; kk < mm->k; kk++) {
        if (kk + PE_ROWS_AHEAD < mm->k)
            pe_prefetch_panel_row(mm, kk + PE_ROWS_AHEAD, n_lo, run);
#if PE_X86
        if (x512) {
            pe_panels_row_x512(mm, kk, n_lo, n_hi, panels);
            continue;
        }
#endif
        pe_panels_row(mm, kk, n_lo, n_hi, panels);
    }
}

/* Ask for the output rows of the block after (n0, m0) in the order of
 * pe_mm_run_panels (the next 32 columns of the same rows, or the next rows
 * from column lo) into L2 while this one runs. */
static void pe_prefetch_next_c(const struct pe_mm *mm, uint32_t n0, uint32_t m0, uint32_t lo,
                               uint32_t hi)
{
    uint32_t nm = m0, nn = n0 + PE_NR;
    if (nn >= hi) {
        nn = lo;
        nm = m0 + PE_MR;
        if (nm >= mm->m)
            return;
    }
    uint32_t rows = mm->m - nm < PE_MR ? mm->m - nm : PE_MR;
    for (uint32_t r = 0; r < rows; r++) {
        const char *row = (const char *)(mm->c + (ptrdiff_t)(nm + r) * mm->ldc + nn);
        for (size_t off = 0; off < PE_NR * sizeof(float); off += 64)
            __builtin_prefetch(row + off, 1, 2);
    }
}

void pe_mm_run_panels(const struct pe_mm *mm, uint32_t n_lo, uint32_t n_hi, float *panels)
{
    pe_kernel_fn fn = pe_kernel();
    n_hi = n_hi < mm->n ? n_hi : mm->n;
    for (uint32_t lo = n_lo; lo < n_hi; lo += PE_PANEL_COLS) {
        uint32_t hi = n_hi - lo < PE_PANEL_COLS ? n_hi : lo + PE_PANEL_COLS;
        pe_pack_panels(mm, lo, hi, panels);
        for (uint32_t m0 = 0; m0 < mm->m; m0 += PE_MR)
            for (uint32_t n0 = lo; n0 < hi; n0 += PE_NR) {
                const float *bp = panels + (size_t)(n0 - lo) / PE_NR * mm->k * PE_NR;
                pe_prefetch_next_c(mm, n0, m0, lo, hi);
                pe_mm_block(fn, mm, bp, n0, m0);
            }
    }
}

void pe_mm_run_cols(const struct pe_mm *mm, uint32_t n_lo, uint32_t n_hi)
{
    pe_kernel_fn fn = pe_kernel();
    n_hi = n_hi < mm->n ? n_hi : mm->n;
    for (uint32_t n0 = n_lo; n0 < n_hi; n0 += PE_NR) {
        const float *bp = mm->b + (size_t)(n0 / PE_NR) * mm->k * PE_NR;
        for (uint32_t m0 = 0; m0 < mm->m; m0 += PE_MR)
            pe_mm_block(fn, mm, bp, n0, m0);
    }
}

/* One part of a split pe_mm_run: PE_PAR_COLS output columns. */
static void pe_mm_part(void *arg, size_t part)
{
    const struct pe_mm *mm = arg;
    uint32_t n0 = (uint32_t)part * PE_PAR_COLS;
    pe_mm_run_cols(mm, n0, n0 + PE_PAR_COLS);
}

void pe_mm_run(const struct pe_mm *mm)
{
    uint64_t fmas = (uint64_t)mm->k * mm->m * mm->n;
    size_t parts = fmas >= PE_PAR_MIN_FMAS ? (mm->n + PE_PAR_COLS - 1) / PE_PAR_COLS : 1;
    if (parts <= 1) {
        pe_mm_run_cols(mm, 0, mm->n);
        return;
    }
    par_for(parts, pe_mm_part, (void *)mm);
}
