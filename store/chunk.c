/*
 * chunk.c: content hashing, zero test and codecs of stored chunks
 * (see chunk.h).
 *
 * The shuffle has an SSSE3 path (16 elements per step: a byte gather
 * inside each register, then a 4x4 transpose of 32-bit lanes) picked at
 * run time, and a portable one; both give the same bytes.
 */
#include "store/chunk.h"

#include <lz4.h>
#include <stdatomic.h>
#include <string.h>
#include <xxhash.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CHUNK_X86 1
#include <immintrin.h>
#else
#define CHUNK_X86 0
#endif

/* Bytes of the sample the AUTO policy compresses with each codec. */
#define CHUNK_PROBE 4096u
/* A codec must shrink the probe below this fraction (in 1/64) to be used. */
#define CHUNK_PROBE_KEEP 60u

void chunk_hash_of(const void *p, size_t n, struct chunk_hash *out)
{
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits(p, n));
    memcpy(out->b, c.digest, sizeof out->b);
}

bool chunk_is_zero(const void *p, size_t n)
{
    static const uint8_t zero[64];
    const uint8_t *b = p;
    if (n <= sizeof zero)
        return memcmp(b, zero, n) == 0;
    /* The head is zero and every byte equals the one 64 bytes before. */
    return memcmp(b, zero, sizeof zero) == 0 && memcmp(b, b + sizeof zero, n - sizeof zero) == 0;
}

size_t chunk_bound(size_t n)
{
    return (size_t)LZ4_compressBound((int)n) + 16;
}

/* ---- shuffle ----------------------------------------------------------- */

static void chunk_shuffle4_c(uint8_t *d, const uint8_t *s, size_t ne, size_t from)
{
    for (size_t i = from; i < ne; i++)
        for (size_t k = 0; k < 4; k++)
            d[k * ne + i] = s[i * 4 + k];
}

static void chunk_unshuffle4_c(uint8_t *d, const uint8_t *s, size_t ne, size_t from)
{
    for (size_t i = from; i < ne; i++)
        for (size_t k = 0; k < 4; k++)
            d[i * 4 + k] = s[k * ne + i];
}

#if CHUNK_X86
/* Transpose the 4x4 matrix of 32-bit lanes held in r[0..3]. */
__attribute__((target("ssse3"))) static inline void chunk_t4(__m128i r[4])
{
    __m128i a = _mm_unpacklo_epi32(r[0], r[1]), b = _mm_unpackhi_epi32(r[0], r[1]);
    __m128i c = _mm_unpacklo_epi32(r[2], r[3]), e = _mm_unpackhi_epi32(r[2], r[3]);
    r[0] = _mm_unpacklo_epi64(a, c);
    r[1] = _mm_unpackhi_epi64(a, c);
    r[2] = _mm_unpacklo_epi64(b, e);
    r[3] = _mm_unpackhi_epi64(b, e);
}

/* Gathers byte k of the four elements of a register into lane k (it is
 * its own inverse). */
#define CHUNK_GATHER _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)

__attribute__((target("ssse3"))) static size_t chunk_shuffle4_x86(uint8_t *d, const uint8_t *s,
                                                                  size_t ne)
{
    size_t i = 0;
    for (; i + 16 <= ne; i += 16) {
        __m128i r[4];
        for (int j = 0; j < 4; j++)
            r[j] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(s + 4 * i + 16 * j)),
                                    CHUNK_GATHER);
        chunk_t4(r);
        for (int k = 0; k < 4; k++)
            _mm_storeu_si128((__m128i *)(d + k * ne + i), r[k]);
    }
    return i;
}

__attribute__((target("ssse3"))) static size_t chunk_unshuffle4_x86(uint8_t *d, const uint8_t *s,
                                                                    size_t ne)
{
    size_t i = 0;
    for (; i + 16 <= ne; i += 16) {
        __m128i r[4];
        for (int k = 0; k < 4; k++)
            r[k] = _mm_loadu_si128((const __m128i *)(s + k * ne + i));
        chunk_t4(r);
        for (int j = 0; j < 4; j++)
            _mm_storeu_si128((__m128i *)(d + 4 * i + 16 * j), _mm_shuffle_epi8(r[j], CHUNK_GATHER));
    }
    return i;
}

/* Asked once, by whichever store worker thread gets there first: an atomic
 * (relaxed: every thread computes the same answer). */
static bool chunk_have_ssse3(void)
{
    static _Atomic int have = -1;
    int h = atomic_load_explicit(&have, memory_order_relaxed);
    if (h < 0) {
        h = __builtin_cpu_supports("ssse3") ? 1 : 0;
        atomic_store_explicit(&have, h, memory_order_relaxed);
    }
    return h == 1;
}
#endif

void chunk_shuffle4(void *dst, const void *src, size_t n)
{
    size_t ne = n / 4, done = 0;
#if CHUNK_X86
    if (chunk_have_ssse3())
        done = chunk_shuffle4_x86(dst, src, ne);
#endif
    chunk_shuffle4_c(dst, src, ne, done);
    memcpy((uint8_t *)dst + ne * 4, (const uint8_t *)src + ne * 4, n - ne * 4);
}

void chunk_unshuffle4(void *dst, const void *src, size_t n)
{
    size_t ne = n / 4, done = 0;
#if CHUNK_X86
    if (chunk_have_ssse3())
        done = chunk_unshuffle4_x86(dst, src, ne);
#endif
    chunk_unshuffle4_c(dst, src, ne, done);
    memcpy((uint8_t *)dst + ne * 4, (const uint8_t *)src + ne * 4, n - ne * 4);
}

/* ---- codecs ------------------------------------------------------------ */

static size_t chunk_lz4(const void *src, size_t n, void *dst, size_t cap)
{
    int r = LZ4_compress_default(src, dst, (int)n, (int)(cap > INT32_MAX ? INT32_MAX : cap));
    return r > 0 ? (size_t)r : 0;
}

/* AUTO: compress a sample from the middle with each codec; the smaller
 * wins if it shrinks the sample enough, else the chunk stays raw. */
static int chunk_probe(const uint8_t *src, size_t n, uint8_t *tmp, uint8_t *dst, size_t cap)
{
    size_t len = n < CHUNK_PROBE ? n & ~(size_t)3 : CHUNK_PROBE;
    const uint8_t *s = src + ((n - len) / 2 & ~(size_t)3);
    if (len < 64)
        return CHUNK_LZ4;
    size_t plain = chunk_lz4(s, len, dst, cap);
    chunk_shuffle4(tmp, s, len);
    size_t shuf = chunk_lz4(tmp, len, dst, cap);
    plain = plain ? plain : len;
    shuf = shuf ? shuf : len;
    size_t best = plain <= shuf ? plain : shuf;
    if (best * 64 > len * CHUNK_PROBE_KEEP)
        return CHUNK_RAW;
    return plain <= shuf ? CHUNK_LZ4 : CHUNK_SHUF4_LZ4;
}

size_t chunk_encode(const void *src, size_t n, enum chunk_policy pol, void *dst, size_t cap,
                    void *tmp, int *codec)
{
    int c = pol == CHUNK_POLICY_RAW     ? CHUNK_RAW
            : pol == CHUNK_POLICY_LZ4   ? CHUNK_LZ4
            : pol == CHUNK_POLICY_SHUF4 ? CHUNK_SHUF4_LZ4
                                        : chunk_probe(src, n, tmp, dst, cap);
    size_t len = 0;
    if (c == CHUNK_LZ4) {
        len = chunk_lz4(src, n, dst, cap);
    } else if (c == CHUNK_SHUF4_LZ4) {
        chunk_shuffle4(tmp, src, n);
        len = chunk_lz4(tmp, n, dst, cap);
    }
    if (c == CHUNK_RAW || len == 0 || len >= n) {
        memcpy(dst, src, n);
        *codec = CHUNK_RAW;
        return n;
    }
    *codec = c;
    return len;
}

NRT_STATUS chunk_decode(int codec, const void *src, size_t len, void *dst, size_t n, void *tmp)
{
    if (n > CHUNK_MAX || len > INT32_MAX)
        return NRT_INVALID;
    switch (codec) {
    case CHUNK_RAW:
        if (len != n)
            return NRT_INVALID;
        memcpy(dst, src, n);
        return NRT_SUCCESS;
    case CHUNK_LZ4:
        return LZ4_decompress_safe(src, dst, (int)len, (int)n) == (int)n ? NRT_SUCCESS
                                                                         : NRT_INVALID;
    case CHUNK_SHUF4_LZ4:
        if (LZ4_decompress_safe(src, tmp, (int)len, (int)n) != (int)n)
            return NRT_INVALID;
        chunk_unshuffle4(dst, tmp, n);
        return NRT_SUCCESS;
    default:
        return NRT_INVALID;
    }
}

const char *chunk_codec_name(int codec)
{
    switch (codec) {
    case CHUNK_RAW: return "raw";
    case CHUNK_LZ4: return "lz4";
    case CHUNK_SHUF4_LZ4: return "shuffle+lz4";
    default: return "?";
    }
}
