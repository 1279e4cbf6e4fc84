/*
 * mx_quant.c: the quantize_mx kernels for a flat bf16 source (mx_quant.h).
 *
 * The scalar kernel is the reference. A group's scale code comes from the
 * largest |bits| of its 32 values (bf16 magnitudes order as their bits);
 * each value is then divided by the scale (exact) and rounded to the fp8
 * type, to nearest even, saturating to the largest finite code. A table of
 * the fp8 code of every bf16 pattern does that when the quotient is still
 * a normal bf16; the general conversion does the rest.
 *
 * The AVX-512 kernel (x86-64 with AVX-512 F/BW) takes 8 x4 columns of the
 * 8 rows at once (32 bf16 values a row, one register). The group maxima
 * are a packed 16-bit max of |bits| over the rows, then over the 4 lanes
 * of each column (two 64-bit rotations), so every lane holds its group's
 * maximum; its exponent field E gives the code max(0, E - (emax - 1)) by a
 * saturating subtraction, 0xff when the maximum is inf or NaN. A value of
 * exponent field e >= 1 and significand M = 0x80 | mantissa is
 * M * 2^(e - 134) and its quotient M * 2^(e - 7 - c) for code c; in an fp8
 * type of k mantissa bits and bias B its biased exponent is t = e - c + B.
 * Its code is x = ((t - 1) << 7) + M (the bits with the exponent field
 * rebiased) when t >= 1, else x = M, shifted right by
 * d = 7 - k + max(0, 1 - t) bits and rounded to nearest even: a carry out
 * of the significand moves into the exponent field, as it must, and d
 * needs no cap, as a shift of 16 or more gives 0. Integer arithmetic in
 * 16-bit lanes throughout; then the saturation and the sign. A NaN group's lanes take
 * M = 0x7fff and a cap of 0x7f, so that every code comes out 0x7f. Zero
 * and subnormal inputs go through the same arithmetic as if normal, with
 * exponent field 0: that gives the right 0 when the group's code is at
 * least B + k + 1, and an all-zero group computes with c = 254. A chunk
 * with a nonzero group of a smaller code (a maximum under 2^-109 for
 * e4m3fn, 2^-95 for e5m2) is left to the scalar kernel.
 *
 * The AVX2 kernel does the same on 4 x4 columns (16 values a row, one ymm
 * register), its variable shifts widened to 32-bit lanes (AVX2 has none
 * for 16 bits); a partial chunk at a row's end takes the scalar kernel.
 */
#include "emu/engines/mx_quant.h"

#include <math.h>
#include <pthread.h>

#include "emu/num/mx.h"
#include "emu/num/numerics.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MXQ_X86 1
#else
#define MXQ_X86 0
#endif

#define MXQ_LANES 4 /* values of one x4 element */

/* The two output types as the vector kernels take them: mantissa bits k,
 * exponent bias, largest finite code, and emax as in mxq_scale_code. */
#define MXQ_E4M3 3, 7, 0x7e, 8
#define MXQ_E5M2 2, 15, 0x7b, 15

uint8_t mxq_scale_code(float amax, int emax)
{
    if (!isfinite(amax))
        return NUM_E8M0_NAN;
    if (amax == 0.0f)
        return 0x00;
    int e = ilogbf(amax) - (emax - 1);
    return (uint8_t)(e < -127 ? 0 : e > 127 ? 254 : e + 127);
}

/* ---- scalar reference ---------------------------------------------------------- */

/* fp8 code (saturating RNE) of every bf16 bit pattern, per output type. */
static uint8_t mxq_bf16_e4m3fn[65536], mxq_bf16_e5m2[65536];
static pthread_once_t mxq_lut_once = PTHREAD_ONCE_INIT;

/* fp32 -> fp8_e5, RNE, saturating. */
static uint8_t mxq_e5m2_sat(float x)
{
    uint8_t c = 0;
    (void)num_from_f32(NUM_DT_FP8_E5, &c, x, &(struct num_round){NUM_ROUND_RNE, true, 0, 0}, 0);
    return c;
}

static void mxq_lut_init(void)
{
    for (uint32_t b = 0; b < 65536; b++) {
        float x = num_bf16_to_f32((uint16_t)b);
        mxq_bf16_e4m3fn[b] = num_f32_to_e4m3fn(x, true);
        mxq_bf16_e5m2[b] = mxq_e5m2_sat(x);
    }
}

/* Code of bf16 bits b divided by 2^shift, by the general conversion. */
static uint8_t mxq_q_slow(uint16_t b, int shift, bool e4)
{
    float q = ldexpf(num_bf16_to_f32(b), -shift);
    return e4 ? num_f32_to_e4m3fn(q, true) : mxq_e5m2_sat(q);
}

/* Code of bf16 bits b in a group of scale code `code`: a table lookup
 * when the quotient stays a normal bf16, else the general conversion. */
static inline uint8_t mxq_q(uint16_t b, uint8_t code, const uint8_t *lut, bool e4)
{
    if (code == NUM_E8M0_NAN)
        return (uint8_t)(0x7fu | ((b >> 8) & 0x80u));
    int shift = (int)code - 127;
    int e = (b >> 7) & 0xff, ne = e - shift;
    if (e != 0 && e != 0xff && ne >= 1 && ne <= 254)
        return lut[(b & 0x807fu) | ((uint32_t)ne << 7)];
    return mxq_q_slow(b, shift, e4);
}

/* Scale code of x4 column f of the block. */
static uint8_t mxq_group_code(const struct mxq_block *b, uint64_t f)
{
    uint16_t amax = 0;
    for (unsigned i = 0; i < MXQ_ROWS; i++)
        for (unsigned j = 0; j < MXQ_LANES; j++) {
            uint16_t a = b->src[i][4 * f + j] & 0x7fffu;
            amax = a > amax ? a : amax;
        }
    return amax >= 0x7f80u ? NUM_E8M0_NAN
                           : mxq_scale_code(num_bf16_to_f32(amax), b->e4 ? 8 : 15);
}

static void mxq_block_scalar(const struct mxq_block *b)
{
    pthread_once(&mxq_lut_once, mxq_lut_init);
    const uint8_t *lut = b->e4 ? mxq_bf16_e4m3fn : mxq_bf16_e5m2;
    for (uint64_t f = 0; f < b->nf; f++) {
        uint8_t code = mxq_group_code(b, f);
        b->scale[f] = code;
        for (unsigned i = 0; i < MXQ_ROWS; i++)
            for (unsigned j = 0; j < MXQ_LANES; j++)
                b->dst[i][4 * f + j] = mxq_q(b->src[i][4 * f + j], code, lut, b->e4);
    }
}

#if MXQ_X86
/* The chunk of x4 columns f0 .. f0 + n - 1 by the scalar kernel (its
 * scales again included), for the vector kernels. Out of line and cold:
 * the vector loops keep their constants in registers. */
__attribute__((noinline, cold)) static void mxq_chunk_scalar(const struct mxq_block *b,
                                                             uint64_t f0, uint64_t n)
{
    struct mxq_block s = {.scale = b->scale + f0, .nf = n, .e4 = b->e4};
    for (unsigned i = 0; i < MXQ_ROWS; i++) {
        s.src[i] = b->src[i] + 4 * f0;
        s.dst[i] = b->dst[i] + 4 * f0;
    }
    mxq_block_scalar(&s);
}

/* ---- AVX-512 ----------------------------------------------------------------------- */

#define MXQ_X512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2")))
#define MXQ_X512_INLINE static inline __attribute__((always_inline)) MXQ_X512
#define MXQ_CHUNK 8 /* x4 columns per register (32 bf16 values) */

/* The per-lane constants of one chunk, from its groups' scale codes; a
 * NaN group's lanes get values that make every code 0x7f. */
struct mxq_v {
    __m512i c1;  /* (c - B) << 7: a - c1 is ((t - 1) << 7) + M when t >= 1 (NaN: 0) */
    __m512i d1;  /* 7 - k + c - (B - 1): the shift is d1 - e, at least 7 - k (NaN: 0) */
    __m512i hi;  /* 0x80, the implicit bit, or'ed into M (NaN: 0x7fff) */
    __m512i cap; /* largest finite code (NaN: 0x7f) */
};

/* fp8 codes of one row's 32 values v (a: their |bits|), NaN groups and
 * signs included, for an fp8 type of k mantissa bits. */
MXQ_X512_INLINE __m512i mxq_x512_row(__m512i v, __m512i a, const struct mxq_v *c, int k)
{
    const __m512i dmin = _mm512_set1_epi16((short)(7 - k));
    __m512i e = _mm512_srli_epi16(a, 7);
    /* M = (a & 0x7f) | hi; x = max(a - c1, M): ((t - 1) << 7) + M when
     * t >= 1, else M (then a - c1 < M); 0x7fff in a NaN group */
    __m512i m = _mm512_ternarylogic_epi32(a, _mm512_set1_epi16(0x7f), c->hi, 0xea);
    __m512i x = _mm512_max_epi16(_mm512_sub_epi16(a, c->c1), m);
    /* d = max(d1 - e, 7 - k); from 16 on a shift gives 0, and from 11 on
     * half is 0 too, so x >> d rounds to the 0 it must be */
    __m512i d = _mm512_max_epi16(_mm512_sub_epi16(c->d1, e), dmin);
    /* x >> d, to nearest even: (x + 2^(d-1) - 1 + odd) >> d */
    __m512i odd = _mm512_and_si512(_mm512_srlv_epi16(x, d), _mm512_set1_epi16(1));
    __m512i half = _mm512_srlv_epi16(_mm512_set1_epi16(0x3ff),
                                     _mm512_sub_epi16(_mm512_set1_epi16(11), d));
    __m512i code = _mm512_srlv_epi16(_mm512_add_epi16(_mm512_add_epi16(x, half), odd), d);
    code = _mm512_min_epu16(code, c->cap);
    /* code | ((v >> 8) & 0x80) */
    return _mm512_ternarylogic_epi32(code, _mm512_srli_epi16(v, 8), _mm512_set1_epi16(0x80),
                                     0xf8);
}

/* Store the codes of two rows (16-bit lanes): packed to bytes, the
 * first row's in the low half, the second's in the high half, whose
 * masked store starts 32 bytes before its row (only the high bytes are
 * written). */
MXQ_X512_INLINE void mxq_x512_store2(uint8_t *d0, uint8_t *d1, __mmask32 lm, __m512i c0,
                                     __m512i c1)
{
    __m512i p = _mm512_packus_epi16(c0, c1); /* qwords: c0 lane 0, c1 lane 0, c0 lane 1, ... */
    p = _mm512_permutexvar_epi64(_mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0), p);
    _mm512_mask_storeu_epi8(d0, lm, p);
    _mm512_mask_storeu_epi8((void *)((uintptr_t)d1 - 32), (__mmask64)lm << 32, p);
}

/* x4 columns f0 .. f0 + n - 1 (n <= 8) of the block, for an fp8 type of
 * k mantissa bits, bias `bias`, largest finite code maxc and emax as in
 * mxq_scale_code. Writes the scales; false (no data written) when the
 * chunk needs the scalar kernel. */
MXQ_X512_INLINE bool mxq_x512_chunk(const struct mxq_block *b, uint64_t f0, unsigned n, int k,
                                    int bias, short maxc, int emax)
{
    const __m512i mag = _mm512_set1_epi16(0x7fff);
    __mmask32 lm = n == MXQ_CHUNK ? ~(__mmask32)0 : ((__mmask32)1 << (4 * n)) - 1;
    __m512i a[MXQ_ROWS], amax = _mm512_setzero_si512();
    for (unsigned i = 0; i < MXQ_ROWS; i++) {
        a[i] = _mm512_and_si512(_mm512_maskz_loadu_epi16(lm, b->src[i] + 4 * f0), mag);
        amax = _mm512_max_epu16(amax, a[i]);
    }
    /* every lane: its group's maximum */
    amax = _mm512_max_epu16(amax, _mm512_rol_epi64(amax, 16));
    amax = _mm512_max_epu16(amax, _mm512_rol_epi64(amax, 32));
    __mmask32 nanm = _mm512_cmpge_epu16_mask(amax, _mm512_set1_epi16(0x7f80));
    __m512i code = _mm512_subs_epu16(_mm512_srli_epi16(amax, 7),
                                     _mm512_set1_epi16((short)(emax - 1)));
    code = _mm512_mask_mov_epi16(code, nanm, _mm512_set1_epi16(0xff));
    _mm_mask_storeu_epi8(b->scale + f0, (__mmask16)((1u << n) - 1), _mm512_cvtepi64_epi8(code));
    /* The row arithmetic takes every input as normal (a zero or subnormal
     * as significand 0x80 | mantissa, exponent field 0); that rounds to
     * the 0 it must give when every nonzero group has a code of at least
     * bias + k + 1 (then the quotient of a subnormal is below a quarter of
     * the smallest fp8 subnormal). Tiny groups take the scalar kernel. */
    __mmask32 zero = _mm512_testn_epi16_mask(amax, amax);
    __mmask32 tiny = _mm512_mask_cmplt_epu16_mask(~zero, code,
                                                  _mm512_set1_epi16((short)(bias + k + 1)));
    if ((tiny & lm) != 0)
        return false;
    code = _mm512_mask_mov_epi16(code, zero, _mm512_set1_epi16(254)); /* zeros stay 0 */
    __m512i c1 = _mm512_slli_epi16(_mm512_sub_epi16(code, _mm512_set1_epi16((short)bias)), 7);
    __m512i d1 = _mm512_sub_epi16(code, _mm512_set1_epi16((short)(bias - 1 - (7 - k))));
    struct mxq_v c = {
        .c1 = _mm512_mask_mov_epi16(c1, nanm, _mm512_setzero_si512()),
        .d1 = _mm512_mask_mov_epi16(d1, nanm, _mm512_setzero_si512()),
        .hi = _mm512_mask_mov_epi16(_mm512_set1_epi16(0x80), nanm, mag),
        .cap = _mm512_mask_mov_epi16(_mm512_set1_epi16(maxc), nanm, _mm512_set1_epi16(0x7f))};
    for (unsigned i = 0; i < MXQ_ROWS; i += 2) {
        __m512i v0 = _mm512_maskz_loadu_epi16(lm, b->src[i] + 4 * f0);
        __m512i v1 = _mm512_maskz_loadu_epi16(lm, b->src[i + 1] + 4 * f0);
        mxq_x512_store2(b->dst[i] + 4 * f0, b->dst[i + 1] + 4 * f0, lm,
                        mxq_x512_row(v0, a[i], &c, k), mxq_x512_row(v1, a[i + 1], &c, k));
    }
    return true;
}

/* The block for one output type (the constants of mxq_x512_chunk), chunk
 * by chunk in order (so that a source the destination overlaps is read
 * as the scalar kernel reads it). */
MXQ_X512_INLINE void mxq_x512_type(const struct mxq_block *b, int k, int bias, short maxc,
                                   int emax)
{
    for (uint64_t f = 0; f < b->nf; f += MXQ_CHUNK) {
        uint64_t rest = b->nf - f;
        unsigned n = rest < MXQ_CHUNK ? (unsigned)rest : MXQ_CHUNK;
        if (__builtin_expect(!mxq_x512_chunk(b, f, n, k, bias, maxc, emax), 0))
            mxq_chunk_scalar(b, f, n);
    }
}

MXQ_X512 static void mxq_block_x512(const struct mxq_block *b)
{
    if (b->e4)
        mxq_x512_type(b, MXQ_E4M3);
    else
        mxq_x512_type(b, MXQ_E5M2);
}

/* ---- AVX2 ---------------------------------------------------------------------------- */

#define MXQ_X2 __attribute__((target("avx2")))
#define MXQ_X2_INLINE static inline __attribute__((always_inline)) MXQ_X2
#define MXQ_CHUNK2 4 /* x4 columns per register (16 bf16 values) */

/* As struct mxq_v, for 16 lanes. */
struct mxq_v2 {
    __m256i c1;  /* (c - B) << 7 (NaN: 0) */
    __m256i d1;  /* 7 - k + c - (B - 1) (NaN: 0) */
    __m256i hi;  /* 0x80 (NaN: 0x7fff) */
    __m256i cap; /* largest finite code (NaN: 0x7f) */
};

/* x >> d in 16-bit lanes, d given widened to 32 bits (dl: lanes 0-3 of
 * each half, dh: lanes 4-7); a count of 16 or more gives 0. */
MXQ_X2_INLINE __m256i mxq_x2_srlv(__m256i x, __m256i dl, __m256i dh)
{
    const __m256i z = _mm256_setzero_si256();
    return _mm256_packus_epi32(_mm256_srlv_epi32(_mm256_unpacklo_epi16(x, z), dl),
                               _mm256_srlv_epi32(_mm256_unpackhi_epi16(x, z), dh));
}

/* fp8 codes of one row's 16 values v (a: their |bits|), as mxq_x512_row. */
MXQ_X2_INLINE __m256i mxq_x2_row(__m256i v, __m256i a, const struct mxq_v2 *c, int k)
{
    const __m256i z = _mm256_setzero_si256(), k11 = _mm256_set1_epi32(11);
    const __m256i k3ff = _mm256_set1_epi32(0x3ff);
    __m256i e = _mm256_srli_epi16(a, 7);
    __m256i m = _mm256_or_si256(_mm256_and_si256(a, _mm256_set1_epi16(0x7f)), c->hi);
    __m256i x = _mm256_max_epi16(_mm256_sub_epi16(a, c->c1), m);
    __m256i d = _mm256_max_epi16(_mm256_sub_epi16(c->d1, e), _mm256_set1_epi16((short)(7 - k)));
    __m256i dl = _mm256_unpacklo_epi16(d, z), dh = _mm256_unpackhi_epi16(d, z);
    __m256i odd = _mm256_and_si256(mxq_x2_srlv(x, dl, dh), _mm256_set1_epi16(1));
    __m256i half = _mm256_packus_epi32(_mm256_srlv_epi32(k3ff, _mm256_sub_epi32(k11, dl)),
                                       _mm256_srlv_epi32(k3ff, _mm256_sub_epi32(k11, dh)));
    __m256i code = mxq_x2_srlv(_mm256_add_epi16(_mm256_add_epi16(x, half), odd), dl, dh);
    code = _mm256_min_epu16(code, c->cap);
    return _mm256_or_si256(code, _mm256_and_si256(_mm256_srli_epi16(v, 8),
                                                  _mm256_set1_epi16(0x80)));
}

/* The 4 x4 columns from f0 of the block, as mxq_x512_chunk. */
MXQ_X2_INLINE bool mxq_x2_chunk(const struct mxq_block *b, uint64_t f0, int k, int bias,
                                short maxc, int emax)
{
    const __m256i mag = _mm256_set1_epi16(0x7fff);
    __m256i a[MXQ_ROWS], amax = _mm256_setzero_si256();
    for (unsigned i = 0; i < MXQ_ROWS; i++) {
        a[i] = _mm256_and_si256(
            _mm256_loadu_si256((const __m256i *)(const void *)(b->src[i] + 4 * f0)), mag);
        amax = _mm256_max_epu16(amax, a[i]);
    }
    /* every lane: its group's maximum (swap neighbours, then pairs) */
    amax = _mm256_max_epu16(amax, _mm256_shuffle_epi8(amax, _mm256_set_epi8(
        13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2,
        13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2)));
    amax = _mm256_max_epu16(amax, _mm256_shuffle_epi8(amax, _mm256_set_epi8(
        11, 10, 9, 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5, 4,
        11, 10, 9, 8, 15, 14, 13, 12, 3, 2, 1, 0, 7, 6, 5, 4)));
    __m256i nan = _mm256_cmpgt_epi16(amax, _mm256_set1_epi16(0x7f7f)); /* amax <= 0x7fff */
    __m256i code = _mm256_subs_epu16(_mm256_srli_epi16(amax, 7),
                                     _mm256_set1_epi16((short)(emax - 1)));
    code = _mm256_or_si256(code, _mm256_and_si256(nan, _mm256_set1_epi16(0xff)));
    uint16_t codes[16];
    _mm256_storeu_si256((__m256i *)(void *)codes, code);
    for (unsigned g = 0; g < MXQ_CHUNK2; g++)
        b->scale[f0 + g] = (uint8_t)codes[4 * g];
    __m256i zero = _mm256_cmpeq_epi16(amax, _mm256_setzero_si256());
    __m256i tiny = _mm256_andnot_si256(
        zero, _mm256_cmpgt_epi16(_mm256_set1_epi16((short)(bias + k + 1)), code));
    if (_mm256_movemask_epi8(tiny) != 0)
        return false;
    code = _mm256_or_si256(code, _mm256_and_si256(zero, _mm256_set1_epi16(254)));
    __m256i c1 = _mm256_slli_epi16(_mm256_sub_epi16(code, _mm256_set1_epi16((short)bias)), 7);
    __m256i d1 = _mm256_sub_epi16(code, _mm256_set1_epi16((short)(bias - 1 - (7 - k))));
    struct mxq_v2 c = {
        .c1 = _mm256_andnot_si256(nan, c1),
        .d1 = _mm256_andnot_si256(nan, d1),
        .hi = _mm256_blendv_epi8(_mm256_set1_epi16(0x80), mag, nan),
        .cap = _mm256_blendv_epi8(_mm256_set1_epi16(maxc), _mm256_set1_epi16(0x7f), nan)};
    for (unsigned i = 0; i < MXQ_ROWS; i += 2) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)(b->src[i] + 4 * f0));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(b->src[i + 1] + 4 * f0));
        /* qwords: row i lane 0, row i+1 lane 0, row i lane 1, row i+1 lane 1 */
        __m256i p = _mm256_packus_epi16(mxq_x2_row(v0, a[i], &c, k),
                                        mxq_x2_row(v1, a[i + 1], &c, k));
        p = _mm256_permute4x64_epi64(p, 0xd8);
        _mm_storeu_si128((__m128i *)(void *)(b->dst[i] + 4 * f0), _mm256_castsi256_si128(p));
        _mm_storeu_si128((__m128i *)(void *)(b->dst[i + 1] + 4 * f0),
                         _mm256_extracti128_si256(p, 1));
    }
    return true;
}

/* The block for one output type, chunk by chunk in order. */
MXQ_X2_INLINE void mxq_x2_type(const struct mxq_block *b, int k, int bias, short maxc, int emax)
{
    uint64_t f = 0;
    for (; f + MXQ_CHUNK2 <= b->nf; f += MXQ_CHUNK2)
        if (__builtin_expect(!mxq_x2_chunk(b, f, k, bias, maxc, emax), 0))
            mxq_chunk_scalar(b, f, MXQ_CHUNK2);
    if (f < b->nf)
        mxq_chunk_scalar(b, f, b->nf - f);
}

MXQ_X2 static void mxq_block_x2(const struct mxq_block *b)
{
    if (b->e4)
        mxq_x2_type(b, MXQ_E4M3);
    else
        mxq_x2_type(b, MXQ_E5M2);
}
#endif

/* ---- dispatch ----------------------------------------------------------------------- */

void mxq_block_at(const struct mxq_block *b, int level)
{
    int cpu = num_isa_level();
    level = level < cpu ? level : cpu;
#if MXQ_X86
    if (level >= NUM_ISA_AVX512) {
        mxq_block_x512(b);
        return;
    }
    if (level == NUM_ISA_AVX2) {
        mxq_block_x2(b);
        return;
    }
#endif
    (void)level;
    mxq_block_scalar(b);
}

void mxq_block_run(const struct mxq_block *b)
{
    mxq_block_at(b, num_isa_level());
}
