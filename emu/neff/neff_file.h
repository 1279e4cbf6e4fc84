/*
 * neff_file.h: the NEFF container (reader and writer).
 *
 * A NEFF file is a 1024-byte little-endian header followed by a gzip'd tar
 * archive (the "data" part). This module turns bytes into a list of named
 * members (path -> bytes) plus the decoded header, and back. It knows
 * nothing about what the members mean; see neff_model.h for that and
 * docs/neff.md for the format.
 *
 * Member contents are held in reference-counted, immutable byte buffers
 * (struct neff_buf, 16-byte aligned) so that a model built from a file can
 * keep constants and instruction streams without copying them again.
 * Member names are relative printable-ASCII paths without empty, "." or
 * ".." components. An uncompressed tar is accepted as well as a gzip'd one.
 */
#ifndef TRNEMU_EMU_NEFF_FILE_H
#define TRNEMU_EMU_NEFF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/status.h"

/* ---- header ------------------------------------------------------------ */

#define NEFF_HEADER_SIZE 1024u          /* bytes of header before the tarball */
#define NEFF_BUILD_VERSION_SIZE 128u    /* neff_build_version[] */
#define NEFF_HASH_SIZE 32u              /* hash[] (md5 uses the first 16) */
#define NEFF_UUID_SIZE 16u              /* uuid[] */
#define NEFF_NAME_SIZE 256u             /* name[] */
#define NEFF_MAX_NODES 64u              /* tpb_per_node[] */
#define NEFF_HEADER_PAD_SIZE 468u       /* pad[] */

/* pkg_version decides how hash[] is computed over the data part. */
#define NEFF_PKG_VERSION_SHA256 1u      /* hash = sha256(data), 32 bytes */
#define NEFF_PKG_VERSION_MD5 2u         /* hash = md5(data) in bytes 0..15, rest 0 */

/* Newest neff_version_major this reader accepts; newer is
 * EMU_NEFF_VERSION. */
#define NEFF_VERSION_MAJOR_MAX 2u
/* Version written into NEFFs that trnemu creates. */
#define NEFF_VERSION_MAJOR_TRNEMU 2u
#define NEFF_VERSION_MINOR_TRNEMU 0u

/* feature_bits: the instruction streams use trnemu's own ISA (docs/isa.md). */
#define NEFF_FEATURE_TRNEMU_ISA (1ull << 63)

/* The header exactly as laid out on disk (offsets checked in neff_file.c).
 * Read and written field by field as little-endian, never by casting. */
struct neff_header {
    uint64_t pkg_version;               /* packager version; selects the hash */
    uint64_t header_size;               /* always NEFF_HEADER_SIZE */
    uint64_t data_size;                 /* bytes of gzip'd tar after the header */
    uint64_t neff_version_major;        /* format major version */
    uint64_t neff_version_minor;        /* format minor version */
    uint8_t neff_build_version[NEFF_BUILD_VERSION_SIZE]; /* producer build string, NUL padded */
    uint32_t num_tpb;                   /* NeuronCores wanted for efficient execution */
    uint8_t hash[NEFF_HASH_SIZE];       /* digest of the data part (see pkg_version) */
    uint8_t uuid[NEFF_UUID_SIZE];       /* unique id of this NEFF */
    char name[NEFF_NAME_SIZE];          /* NEFF name, NUL padded */
    uint32_t requested_tpb_count;       /* NeuronCores requested at compile time */
    uint8_t tpb_per_node[NEFF_MAX_NODES]; /* NeuronCores needed per graph node */
    uint64_t feature_bits;              /* incompatible features (NEFF_FEATURE_*) */
    uint32_t lnc_size;                  /* logical NeuronCore size required */
    uint8_t pad[NEFF_HEADER_PAD_SIZE];  /* zero on write, ignored on read */
};

/* ---- reference-counted bytes ------------------------------------------ */

/* Immutable once shared. Thread-safe reference counting. */
struct neff_buf;

/* A new buffer of `size` bytes (zeroed) with one reference; *data (if not
 * NULL) receives a writable pointer, to fill before the buffer is shared.
 * NULL when out of memory. */
struct neff_buf *neff_buf_new(size_t size, uint8_t **data);
/* A new buffer holding a copy of data[0..size). NULL when out of memory. */
struct neff_buf *neff_buf_copy(const void *data, size_t size);
/* Take one more reference; returns b (NULL stays NULL). */
struct neff_buf *neff_buf_ref(struct neff_buf *b);
/* Drop one reference; frees on the last one. NULL is fine. */
void neff_buf_unref(struct neff_buf *b);
/* The bytes and their count (NULL buffer: NULL and 0). */
const uint8_t *neff_buf_data(const struct neff_buf *b);
size_t neff_buf_size(const struct neff_buf *b);

/* ---- the container ----------------------------------------------------- */

/* One file of the tarball. */
struct neff_member {
    char *name;                         /* normalized relative path, e.g. "sg00/def.json" */
    struct neff_buf *data;              /* its bytes (one reference held) */
};

/* A NEFF in memory. Fields are read-only for users; change members with
 * neff_file_add*(). */
struct neff_file {
    struct neff_header hdr;             /* decoded header (sizes/hash as read) */
    struct neff_member *members;        /* in tar order (reading) or add order */
    size_t n_members;                   /* entries used in members[] */
    size_t cap_members;                 /* entries allocated in members[] */
    uint32_t *index;                    /* private: open-addressing name index */
    size_t index_cap;                   /* private: slots in index[] (power of 2) */
};

/* Limits applied while reading the tarball (defaults below). */
struct neff_limits {
    uint64_t max_members;               /* most regular files in the tar */
    uint64_t max_member_size;           /* largest single member, bytes */
    uint64_t max_total_size;            /* sum of all member sizes, bytes */
};

#define NEFF_DEFAULT_MAX_MEMBERS 65536u
#define NEFF_DEFAULT_MAX_MEMBER_SIZE (4ull << 30)   /* 4 GiB */
#define NEFF_DEFAULT_MAX_TOTAL_SIZE (16ull << 30)   /* 16 GiB */
#define NEFF_MAX_PATH 1024u                         /* longest member name */

/* The default limits. */
extern const struct neff_limits neff_default_limits;

/* Parse a NEFF. validate_hash: check hash[] against the data part (callers
 * derive it from NEURON_RT_VALIDATE_HASH). Errors: EMU_INVALID (bad or
 * truncated input, one NEFF log line), EMU_NEFF_VERSION,
 * EMU_RESOURCE (out of memory). *out is NULL on error. */
emu_status neff_file_read(const void *bytes, size_t size, bool validate_hash,
                          struct neff_file **out);
/* Same with explicit limits (NULL: defaults). */
emu_status neff_file_read_limited(const void *bytes, size_t size, bool validate_hash,
                                  const struct neff_limits *lim, struct neff_file **out);

/* Serialize: header (header_size, data_size and hash computed here; a
 * pkg_version of 0 is written as NEFF_PKG_VERSION_SHA256) + gzip'd tar of
 * the members in their order. Deterministic: same file, same bytes.
 * *bytes is malloc'd; free() it. */
emu_status neff_file_write(const struct neff_file *f, uint8_t **bytes, size_t *size);

/* An empty NEFF with trnemu's default header (pkg_version sha256, version
 * NEFF_VERSION_*_TRNEMU, header_size 1024). NULL when out of memory. */
struct neff_file *neff_file_new(void);
void neff_file_free(struct neff_file *f);

/* Add a member; takes a new reference on data. The name is normalized
 * ("./" prefixes dropped) and must be a sane relative path (see above) not
 * already present: else EMU_INVALID (logged). */
emu_status neff_file_add(struct neff_file *f, const char *name, struct neff_buf *data);
/* Add a member holding a copy of data[0..size). */
emu_status neff_file_add_copy(struct neff_file *f, const char *name, const void *data,
                              size_t size);
/* Look a member up by (normalized) name; NULL when absent. */
const struct neff_member *neff_file_find(const struct neff_file *f, const char *name);

/* Same header fields (except data_size and hash), same members in the same
 * order with the same bytes. For tests. */
bool neff_file_equal(const struct neff_file *a, const struct neff_file *b);

/* Compute the hash field for `data` per pkg_version. false when the
 * pkg_version has no known hash. */
bool neff_hash_compute(uint64_t pkg_version, const void *data, size_t size,
                       uint8_t hash[NEFF_HASH_SIZE]);

#endif
