/*
 * numerics_vec.c: the vector conversions of numerics.h, the engines' hot
 * path: load any dtype into fp32, store fp32 into any dtype (RNE or
 * stochastic), casts, and the one-element num_to_f32/num_from_f32.
 *
 * Loops are plain C built from the branch-free kernels of numerics_int.h.
 * Contiguous runs go in fixed blocks of NUM_BLK elements so that GCC's
 * -O2 vectoriser (which will not add scalar epilogues) turns each block
 * into SIMD code. The contiguous loops are compiled once per ISA level
 * (numerics_runs.h.inc) and picked at run time from cpuid; contiguous fp16
 * uses the F16C instructions where present. Every level gives the same bits.
 */
#include <stdatomic.h>
#include <string.h>

#include "emu/log.h"
#include "emu/num/numerics.h"
#include "emu/num/numerics_int.h"
#include "emu/num/mx.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define NUM_X86 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define NUM_X86 0
#endif

/* Integer elements are written with memcpy from a uint64_t. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "numerics assumes a little-endian host");

#define NUM_BLK 32     /* elements per vectorised block */
#define NUM_CHUNK 1024 /* fp32 staging elements of a two-step cast */

/* ---- element access ------------------------------------------------------- */

NUMI_INLINE uint32_t ld16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

NUMI_INLINE void st16(unsigned char *p, uint32_t v)
{
    uint16_t h = (uint16_t)v;
    memcpy(p, &h, 2);
}

/* Read one element of dtype dt (a constant after inlining) as fp32. */
NUMI_INLINE float ld_one(const unsigned char *p, uint32_t dt)
{
    uint32_t u32;
    uint64_t u64;
    switch (dt) {
    case NUM_DT_FP32:
    case NUM_DT_FP32R: memcpy(&u32, p, 4); return numi_float(u32);
    case NUM_DT_BF16: return numi_float(ld16(p) << 16);
    case NUM_DT_FP16: return numi_float(numi_dec(ld16(p), 5, 10));
    case NUM_DT_FP8_E3: return numi_float(numi_dec(p[0], 3, 4));
    case NUM_DT_FP8_E4: return numi_float(numi_dec(p[0], 4, 3));
    case NUM_DT_FP8_E5: return numi_float(numi_dec(p[0], 5, 2));
    case NUM_DT_INT8: return (float)(int8_t)p[0];
    case NUM_DT_UINT8: return (float)p[0];
    case NUM_DT_INT16: return (float)(int16_t)ld16(p);
    case NUM_DT_UINT16: return (float)ld16(p);
    case NUM_DT_INT32: memcpy(&u32, p, 4); return (float)(int32_t)u32;
    case NUM_DT_UINT32: memcpy(&u32, p, 4); return (float)u32;
    case NUM_DT_INT64: memcpy(&u64, p, 8); return (float)(int64_t)u64;
    case NUM_DT_UINT64: memcpy(&u64, p, 8); return (float)u64;
    default: return 0.0f;
    }
}

/* Write x as one element of dtype dt with RNE (sat: see struct num_round). */
NUMI_INLINE void st_one(unsigned char *p, float x, uint32_t dt, bool sat)
{
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    switch (dt) {
    case NUM_DT_FP32:
    case NUM_DT_FP32R: memcpy(p, &x, 4); return;
    case NUM_DT_BF16: st16(p, numi_enc_bf16(numi_bits(x), sat)); return;
    case NUM_DT_FP16: st16(p, numi_enc_rne(numi_bits(x), 5, 10, sat)); return;
    case NUM_DT_FP8_E3: p[0] = (uint8_t)numi_enc_rne(numi_bits(x), 3, 4, sat); return;
    case NUM_DT_FP8_E4: p[0] = (uint8_t)numi_enc_rne(numi_bits(x), 4, 3, sat); return;
    case NUM_DT_FP8_E5: p[0] = (uint8_t)numi_enc_rne(numi_bits(x), 5, 2, sat); return;
    case NUM_DT_INT8: p[0] = (uint8_t)numi_to_small_int(x, -128.0f, 127.0f); return;
    case NUM_DT_UINT8: p[0] = (uint8_t)numi_to_small_int(x, 0.0f, 255.0f); return;
    case NUM_DT_INT16: st16(p, (uint32_t)numi_to_small_int(x, -32768.0f, 32767.0f)); return;
    case NUM_DT_UINT16: st16(p, (uint32_t)numi_to_small_int(x, 0.0f, 65535.0f)); return;
    case NUM_DT_INT32: u32 = (uint32_t)numi_to_i32(x); memcpy(p, &u32, 4); return;
    case NUM_DT_UINT32: u32 = numi_to_u32(x); memcpy(p, &u32, 4); return;
    case NUM_DT_INT64:
        i64 = numi_sat_i64(numi_rint(x), -0x1p63f, 0x1p63f, INT64_MIN, INT64_MAX);
        memcpy(p, &i64, 8);
        return;
    case NUM_DT_UINT64:
        u64 = numi_sat_u64(numi_rint(x), 0x1p64f, UINT64_MAX);
        memcpy(p, &u64, 8);
        return;
    default: return;
    }
}

/* ---- runs ------------------------------------------------------------------ */

/* d[i] = element i of s, step bytes apart. */
NUMI_INLINE void ld_run(float *restrict d, const unsigned char *restrict s, ptrdiff_t step,
                        size_t n, uint32_t dt)
{
    size_t i = 0;
    for (; i + NUM_BLK <= n; i += NUM_BLK) {
        const unsigned char *b = s + (ptrdiff_t)i * step;
        for (size_t j = 0; j < NUM_BLK; j++)
            d[i + j] = ld_one(b + (ptrdiff_t)j * step, dt);
    }
    for (; i < n; i++)
        d[i] = ld_one(s + (ptrdiff_t)i * step, dt);
}

/* Element i of d, step bytes apart, = s[i] rounded to nearest even. */
NUMI_INLINE void st_run(unsigned char *restrict d, ptrdiff_t step, const float *restrict s,
                        size_t n, uint32_t dt, bool sat)
{
    size_t i = 0;
    for (; i + NUM_BLK <= n; i += NUM_BLK) {
        unsigned char *b = d + (ptrdiff_t)i * step;
        for (size_t j = 0; j < NUM_BLK; j++)
            st_one(b + (ptrdiff_t)j * step, s[i + j], dt, sat);
    }
    for (; i < n; i++)
        st_one(d + (ptrdiff_t)i * step, s[i], dt, sat);
}

/* Element i of d, step bytes apart, = s[i] rounded stochastically; the
 * random bits of element i are numi_rng(key, index + i). */
NUMI_INLINE void sr_run(unsigned char *restrict d, ptrdiff_t step, const float *restrict s,
                        size_t n, uint32_t dt, bool sat, uint64_t key, uint64_t index)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char *p = d + (ptrdiff_t)i * step;
        uint64_t R = numi_rng(key, index + i);
        uint32_t u = numi_bits(s[i]);
        uint64_t v;
        switch (dt) {
        case NUM_DT_FP32:
        case NUM_DT_FP32R: memcpy(p, &s[i], 4); break;
        case NUM_DT_BF16: st16(p, numi_enc_sr(u, 8, 7, sat, R)); break;
        case NUM_DT_FP16: st16(p, numi_enc_sr(u, 5, 10, sat, R)); break;
        case NUM_DT_FP8_E3: p[0] = (uint8_t)numi_enc_sr(u, 3, 4, sat, R); break;
        case NUM_DT_FP8_E4: p[0] = (uint8_t)numi_enc_sr(u, 4, 3, sat, R); break;
        case NUM_DT_FP8_E5: p[0] = (uint8_t)numi_enc_sr(u, 5, 2, sat, R); break;
        case NUM_DT_INT8:
        case NUM_DT_INT16:
        case NUM_DT_INT32:
        case NUM_DT_INT64:
            v = (uint64_t)numi_sat_signed(dt, numi_int_sr(s[i], R));
            memcpy(p, &v, num_dtype_size(dt)); /* little-endian host */
            break;
        default:
            v = numi_sat_unsigned(dt, numi_int_sr(s[i], R));
            memcpy(p, &v, num_dtype_size(dt));
            break;
        }
    }
}

#define NUM_SR_CASE(DT)                                             \
    case DT:                                                        \
        if (sat)                                                    \
            sr_run(d, step, s, n, DT, true, key, rnd->index);       \
        else                                                        \
            sr_run(d, step, s, n, DT, false, key, rnd->index);      \
        break;

/* The stochastic store loop for dtype dt (known valid). */
static void num_store_sr(unsigned char *d, uint32_t dt, ptrdiff_t step, const float *s,
                         size_t n, const struct num_round *rnd)
{
    uint64_t key = numi_mix64(rnd->seed);
    bool sat = rnd->saturate;
    switch (dt) {
        NUM_SR_CASE(NUM_DT_FP32)
        NUM_SR_CASE(NUM_DT_FP32R)
        NUM_SR_CASE(NUM_DT_BF16)
        NUM_SR_CASE(NUM_DT_FP16)
        NUM_SR_CASE(NUM_DT_FP8_E3)
        NUM_SR_CASE(NUM_DT_FP8_E4)
        NUM_SR_CASE(NUM_DT_FP8_E5)
    default: sr_run(d, step, s, n, dt, false, key, rnd->index); break;
    }
}

/* ---- one copy of the contiguous loops per ISA level ---------------------------- */

#define NUM_RUNS_SUFFIX base
#define NUM_RUNS_ATTR
#include "emu/num/numerics_runs.h.inc"
#undef NUM_RUNS_SUFFIX
#undef NUM_RUNS_ATTR

#if NUM_X86
#define NUM_RUNS_SUFFIX avx2
#define NUM_RUNS_ATTR __attribute__((target("avx2,f16c")))
#include "emu/num/numerics_runs.h.inc"
#undef NUM_RUNS_SUFFIX
#undef NUM_RUNS_ATTR

#define NUM_RUNS_SUFFIX avx512
#define NUM_RUNS_ATTR __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c")))
#include "emu/num/numerics_runs.h.inc"
#undef NUM_RUNS_SUFFIX
#undef NUM_RUNS_ATTR

/* fp32 -> fp16 with vcvtps2ph (RNE); returns how many were done. */
__attribute__((target("avx,f16c"))) static size_t f16c_store(unsigned char *d, const float *s,
                                                           size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(void *)(d + 2 * i), h);
    }
    return i;
}

/* fp16 -> fp32 with vcvtph2ps; returns how many were done. */
__attribute__((target("avx,f16c"))) static size_t f16c_load(float *d, const unsigned char *s,
                                                          size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + 2 * i));
        _mm256_storeu_ps(d + i, _mm256_cvtph_ps(h));
    }
    return i;
}

/* The highest level this CPU and OS support. */
static int num_cpu_level(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return NUM_ISA_PORTABLE;
    if (!(c & bit_F16C) || !(c & bit_AVX) || !(c & bit_OSXSAVE) || !(c & bit_FMA))
        return NUM_ISA_PORTABLE;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & 0x6u) != 0x6u || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & bit_AVX2))
        return NUM_ISA_PORTABLE;
    const unsigned avx512 = bit_AVX512F | bit_AVX512BW | bit_AVX512VL | bit_AVX512DQ;
    if ((b & avx512) == avx512 && (xlo & 0xe6u) == 0xe6u)
        return NUM_ISA_AVX512;
    return NUM_ISA_AVX2;
}
#else
static int num_cpu_level(void)
{
    return NUM_ISA_PORTABLE;
}
#endif

static atomic_int num_cpu_level_cache = -1;        /* num_cpu_level(), -1: not probed */
static atomic_int num_isa_limit = NUM_ISA_AVX512;  /* set by num_set_isa_limit() */

int num_isa_level(void)
{
    int cpu = atomic_load_explicit(&num_cpu_level_cache, memory_order_relaxed);
    if (cpu < 0) {
        cpu = num_cpu_level();
        atomic_store_explicit(&num_cpu_level_cache, cpu, memory_order_relaxed);
    }
    int lim = atomic_load_explicit(&num_isa_limit, memory_order_relaxed);
    return cpu < lim ? cpu : lim;
}

const char *num_impl_name(void)
{
    static const char *const names[] = {"portable", "avx2", "avx512"};
    return names[num_isa_level()];
}

void num_set_isa_limit(int level)
{
    level = level < NUM_ISA_PORTABLE ? NUM_ISA_PORTABLE : level;
    level = level > NUM_ISA_AVX512 ? NUM_ISA_AVX512 : level;
    atomic_store(&num_isa_limit, level);
}

/* ---- dispatch -------------------------------------------------------------- */

/* Contiguous load at the best level. */
static void num_load_contig(float *d, const unsigned char *s, uint32_t dt, size_t n)
{
#if NUM_X86
    int lvl = num_isa_level();
    if (lvl >= NUM_ISA_AVX2 && dt == NUM_DT_FP16) {
        size_t done = f16c_load(d, s, n);
        d += done;
        s += 2 * done;
        n -= done;
    }
    if (lvl == NUM_ISA_AVX512)
        ld_contig_avx512(d, s, dt, n);
    else if (lvl == NUM_ISA_AVX2)
        ld_contig_avx2(d, s, dt, n);
    else
        ld_contig_base(d, s, dt, n);
#else
    ld_contig_base(d, s, dt, n);
#endif
}

/* Contiguous RNE store at the best level. */
static void num_store_contig(unsigned char *d, uint32_t dt, const float *s, size_t n, bool sat)
{
#if NUM_X86
    int lvl = num_isa_level();
    if (lvl >= NUM_ISA_AVX2 && dt == NUM_DT_FP16 && !sat) {
        size_t done = f16c_store(d, s, n);
        d += 2 * done;
        s += done;
        n -= done;
    }
    if (lvl == NUM_ISA_AVX512)
        st_contig_avx512(d, s, dt, n, sat);
    else if (lvl == NUM_ISA_AVX2)
        st_contig_avx2(d, s, dt, n, sat);
    else
        st_contig_base(d, s, dt, n, sat);
#else
    st_contig_base(d, s, dt, n, sat);
#endif
}

#define NUM_LD_CASE(DT) \
    case DT: ld_run(d, s, step, n, DT); break;

/* The load loop for dtype dt (known valid), step bytes apart. */
static void num_load_any(float *d, const unsigned char *s, uint32_t dt, ptrdiff_t step,
                         size_t n)
{
    if (step == (ptrdiff_t)num_dtype_size(dt)) {
        num_load_contig(d, s, dt, n);
        return;
    }
    switch (dt) {
        NUM_LD_CASE(NUM_DT_FP32)
        NUM_LD_CASE(NUM_DT_FP32R)
        NUM_LD_CASE(NUM_DT_BF16)
        NUM_LD_CASE(NUM_DT_FP16)
        NUM_LD_CASE(NUM_DT_FP8_E3)
        NUM_LD_CASE(NUM_DT_FP8_E4)
        NUM_LD_CASE(NUM_DT_FP8_E5)
        NUM_LD_CASE(NUM_DT_INT8)
        NUM_LD_CASE(NUM_DT_UINT8)
        NUM_LD_CASE(NUM_DT_INT16)
        NUM_LD_CASE(NUM_DT_UINT16)
        NUM_LD_CASE(NUM_DT_INT32)
        NUM_LD_CASE(NUM_DT_UINT32)
        NUM_LD_CASE(NUM_DT_INT64)
        NUM_LD_CASE(NUM_DT_UINT64)
    default: break;
    }
}

#define NUM_ST_CASE(DT) \
    case DT: st_run(d, step, s, n, DT, sat); break;

/* The RNE store loop for dtype dt (known valid), step bytes apart. */
static void num_store_any(unsigned char *d, uint32_t dt, ptrdiff_t step, const float *s,
                          size_t n, bool sat)
{
    if (step == (ptrdiff_t)num_dtype_size(dt)) {
        num_store_contig(d, dt, s, n, sat);
        return;
    }
    switch (dt) {
        NUM_ST_CASE(NUM_DT_FP32)
        NUM_ST_CASE(NUM_DT_FP32R)
        NUM_ST_CASE(NUM_DT_BF16)
        NUM_ST_CASE(NUM_DT_FP16)
        NUM_ST_CASE(NUM_DT_FP8_E3)
        NUM_ST_CASE(NUM_DT_FP8_E4)
        NUM_ST_CASE(NUM_DT_FP8_E5)
        NUM_ST_CASE(NUM_DT_INT8)
        NUM_ST_CASE(NUM_DT_UINT8)
        NUM_ST_CASE(NUM_DT_INT16)
        NUM_ST_CASE(NUM_DT_UINT16)
        NUM_ST_CASE(NUM_DT_INT32)
        NUM_ST_CASE(NUM_DT_UINT32)
        NUM_ST_CASE(NUM_DT_INT64)
        NUM_ST_CASE(NUM_DT_UINT64)
    default: break;
    }
}

/* ---- validation -------------------------------------------------------------- */

/* A known dtype? Logs one line naming the bad value otherwise. */
static bool num_dtype_ok(uint32_t dt, const char *what)
{
    if (num_dtype_size(dt))
        return true;
    LOG_ERROR("EMU", "unknown %s dtype %u", what, dt);
    return false;
}

/* A known rounding mode (or NULL)? */
static bool num_round_ok(const struct num_round *rnd)
{
    if (rnd == NULL || rnd->mode == NUM_ROUND_RNE || rnd->mode == NUM_ROUND_STOCHASTIC)
        return true;
    LOG_ERROR("EMU", "unknown rounding mode %u", rnd->mode);
    return false;
}

/* Buffers present unless there is nothing to do? */
static bool num_ptrs_ok(const void *dst, const void *src, size_t n)
{
    if (n == 0 || (dst != NULL && src != NULL))
        return true;
    LOG_ERROR("EMU", "NULL buffer for %zu elements", n);
    return false;
}

/* ---- public entry points ----------------------------------------------------- */

emu_status num_load_f32(float *dst, const void *src, uint32_t src_dtype,
                        ptrdiff_t src_stride_elems, size_t n)
{
    if (!num_dtype_ok(src_dtype, "source") || !num_ptrs_ok(dst, src, n))
        return EMU_INVALID;
    ptrdiff_t step = src_stride_elems * (ptrdiff_t)num_dtype_size(src_dtype);
    if (num_dtype_is_mx(src_dtype))
        return num_mx_load_f32(dst, src, src_dtype, step, n);
    num_load_any(dst, src, src_dtype, step, n);
    return EMU_OK;
}

emu_status num_store_f32(void *dst, uint32_t dst_dtype, ptrdiff_t dst_stride_elems,
                         const float *src, size_t n, const struct num_round *rnd)
{
    if (!num_dtype_ok(dst_dtype, "destination") || !num_round_ok(rnd) ||
        !num_ptrs_ok(dst, src, n))
        return EMU_INVALID;
    ptrdiff_t step = dst_stride_elems * (ptrdiff_t)num_dtype_size(dst_dtype);
    if (num_dtype_is_mx(dst_dtype))
        return num_mx_store_f32(dst, dst_dtype, step, src, n, rnd);
    if (rnd != NULL && rnd->mode == NUM_ROUND_STOCHASTIC)
        num_store_sr(dst, dst_dtype, step, src, n, rnd);
    else
        num_store_any(dst, dst_dtype, step, src, n, rnd != NULL && rnd->saturate);
    return EMU_OK;
}

/* ---- one element (the scalar API's loads and stores) ------------------- */

float num_to_f32(uint32_t dtype, const void *src)
{
    float x = 0.0f;
    if (num_dtype_size(dtype) && src != NULL)
        num_load_f32(&x, src, dtype, 1, 1);
    return x;
}

emu_status num_from_f32(uint32_t dtype, void *dst, float x, const struct num_round *rnd,
                        uint64_t i)
{
    if (rnd == NULL)
        return num_store_f32(dst, dtype, 1, &x, 1, NULL);
    struct num_round one = *rnd;
    one.index += i;
    return num_store_f32(dst, dtype, 1, &x, 1, &one);
}

/* Both dtypes store the same bits (equal, or fp32 and fp32r). */
static bool num_same_storage(uint32_t a, uint32_t b)
{
    bool fa = a == NUM_DT_FP32 || a == NUM_DT_FP32R;
    bool fb = b == NUM_DT_FP32 || b == NUM_DT_FP32R;
    return a == b || (fa && fb);
}

/* Bit-exact copy of n elements of sz bytes. */
static void num_copy(unsigned char *d, ptrdiff_t dstep, const unsigned char *s,
                     ptrdiff_t sstep, size_t n, size_t sz)
{
    if (dstep == (ptrdiff_t)sz && sstep == (ptrdiff_t)sz) {
        memmove(d, s, n * sz);
        return;
    }
    for (size_t i = 0; i < n; i++)
        memcpy(d + (ptrdiff_t)i * dstep, s + (ptrdiff_t)i * sstep, sz);
}

/* A contiguous fp32 array that may be used as a float pointer? */
static bool num_is_f32_aligned(uint32_t dt, ptrdiff_t stride, const void *p)
{
    return (dt == NUM_DT_FP32 || dt == NUM_DT_FP32R) && stride == 1 &&
           ((uintptr_t)p & (_Alignof(float) - 1)) == 0;
}

emu_status num_convert_ex(void *dst, uint32_t dst_dtype, ptrdiff_t dst_stride_elems,
                          const void *src, uint32_t src_dtype, ptrdiff_t src_stride_elems,
                          size_t n, const struct num_round *rnd)
{
    if (!num_dtype_ok(dst_dtype, "destination") || !num_dtype_ok(src_dtype, "source") ||
        !num_round_ok(rnd) || !num_ptrs_ok(dst, src, n))
        return EMU_INVALID;
    size_t dsz = num_dtype_size(dst_dtype), ssz = num_dtype_size(src_dtype);
    ptrdiff_t dstep = dst_stride_elems * (ptrdiff_t)dsz;
    ptrdiff_t sstep = src_stride_elems * (ptrdiff_t)ssz;
    if (num_same_storage(dst_dtype, src_dtype)) {
        num_copy(dst, dstep, src, sstep, n, dsz);
        return EMU_OK;
    }
    if (num_is_f32_aligned(src_dtype, src_stride_elems, src))
        return num_store_f32(dst, dst_dtype, dst_stride_elems, src, n, rnd);
    if (num_is_f32_aligned(dst_dtype, dst_stride_elems, dst))
        return num_load_f32(dst, src, src_dtype, src_stride_elems, n);
    float tmp[NUM_CHUNK];
    struct num_round r = rnd ? *rnd : (struct num_round){.mode = NUM_ROUND_RNE};
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (size_t i = 0; i < n; i += NUM_CHUNK) {
        size_t k = n - i < NUM_CHUNK ? n - i : NUM_CHUNK;
        emu_status st = num_load_f32(tmp, s + (ptrdiff_t)i * sstep, src_dtype,
                                     src_stride_elems, k);
        r.index = (rnd ? rnd->index : 0) + i;
        if (st == EMU_OK)
            st = num_store_f32(d + (ptrdiff_t)i * dstep, dst_dtype, dst_stride_elems, tmp, k, &r);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}

emu_status num_convert(void *dst, uint32_t dst_dtype, const void *src, uint32_t src_dtype,
                       size_t n)
{
    return num_convert_ex(dst, dst_dtype, 1, src, src_dtype, 1, n, NULL);
}

emu_status num_convert_strided(void *dst, uint32_t dst_dtype, ptrdiff_t dst_stride_elems,
                               const void *src, uint32_t src_dtype,
                               ptrdiff_t src_stride_elems, size_t n)
{
    return num_convert_ex(dst, dst_dtype, dst_stride_elems, src, src_dtype, src_stride_elems,
                          n, NULL);
}

/* ---- scans ----------------------------------------------------------------- */

/* One block of NUM_CHUNK patterns at the best level. */
static bool num_scan_block(const uint32_t *u, bool nan_only)
{
#if NUM_X86
    int lvl = num_isa_level();
    if (lvl == NUM_ISA_AVX512)
        return scan_block_avx512(u, nan_only);
    if (lvl == NUM_ISA_AVX2)
        return scan_block_avx2(u, nan_only);
#endif
    return scan_block_base(u, nan_only);
}

size_t num_first_nonfinite_f32(const float *x, size_t n, bool nan_only)
{
    const uint32_t *u = (const uint32_t *)(const void *)x;
    size_t i = 0;
    for (; i + NUM_CHUNK <= n; i += NUM_CHUNK)
        if (num_scan_block(u + i, nan_only))
            break;
    for (; i < n; i++) {
        uint32_t m = u[i] & 0x7fffffffu;
        if (nan_only ? m > 0x7f800000u : m >= 0x7f800000u)
            return i;
    }
    return n;
}
