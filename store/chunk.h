/*
 * chunk.h: the encoding of one chunk of device memory in the snapshot
 * store: its content hash, the all-zero test, and the codecs.
 *
 * A chunk is a fixed-size piece of a memory (the last one of a memory may
 * be shorter). It is named by the XXH3-128 hash of its raw bytes and
 * stored once per file, encoded with one of the codecs below. The
 * byte-shuffle filter (as in Blosc) regroups byte k of every 4-byte
 * element together before LZ4, which turns the slowly varying sign and
 * exponent bytes of float data into runs LZ4 can match.
 */
#ifndef TRNEMU_STORE_CHUNK_H
#define TRNEMU_STORE_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#define CHUNK_HASH_LEN 16              /* bytes of a content hash */
#define CHUNK_MAX (16u << 20)          /* largest chunk accepted (encode and decode) */

/* A content hash, canonical (big-endian) byte order. */
struct chunk_hash {
    uint8_t b[CHUNK_HASH_LEN];  /* XXH3-128 of the raw bytes */
};

/* How a chunk's bytes are stored (the `codec` column). */
enum chunk_codec {
    CHUNK_RAW = 0,        /* as is */
    CHUNK_LZ4 = 1,        /* LZ4 block */
    CHUNK_SHUF4_LZ4 = 2,  /* byte shuffle of 4-byte elements, then LZ4 block */
};

/* Which codec the encoder uses. */
enum chunk_policy {
    CHUNK_POLICY_AUTO = 0,   /* probe a sample with each codec, keep the smallest */
    CHUNK_POLICY_RAW = 1,    /* never compress */
    CHUNK_POLICY_LZ4 = 2,    /* LZ4 only */
    CHUNK_POLICY_SHUF4 = 3,  /* shuffle + LZ4 only */
};

void chunk_hash_of(const void *p, size_t n, struct chunk_hash *out);

/* Are all n bytes zero? */
bool chunk_is_zero(const void *p, size_t n);

/* Worst-case encoded size of n raw bytes (dst capacity for chunk_encode). */
size_t chunk_bound(size_t n);

/* Encode src[0..n) into dst (capacity cap >= chunk_bound(n)) with the
 * policy; tmp is n bytes of scratch. Returns the encoded length and sets
 * *codec. A codec that does not shrink the chunk falls back to CHUNK_RAW. */
size_t chunk_encode(const void *src, size_t n, enum chunk_policy pol, void *dst, size_t cap,
                    void *tmp, int *codec);

/* Decode into dst, which must receive exactly n bytes; tmp is n bytes of
 * scratch. NRT_INVALID (no log line; the caller names the chunk) for an
 * unknown codec or bytes that do not decode to n bytes. */
NRT_STATUS chunk_decode(int codec, const void *src, size_t len, void *dst, size_t n, void *tmp);

/* The byte-shuffle filter and its inverse (n bytes; a tail of n % 4 bytes
 * is copied as is). dst and src must not overlap. */
void chunk_shuffle4(void *dst, const void *src, size_t n);
void chunk_unshuffle4(void *dst, const void *src, size_t n);

/* Name of a codec for listings ("raw", "lz4", "shuffle+lz4", "?"). */
const char *chunk_codec_name(int codec);

#endif
