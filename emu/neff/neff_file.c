/*
 * neff_file.c: reads and writes the NEFF container (see neff_file.h and
 * docs/neff.md): the 1024-byte little-endian header, the md5/sha256 of the
 * data part, and the gzip'd tar of members, read with libarchive from
 * memory under size limits and written deterministically. The gzip
 * trailers (CRC-32 and length of every member) are checked with zlib,
 * because libarchive's gzip filter does not check them.
 */
#include "emu/neff/neff_file.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "emu/grow.h"
#include "emu/log.h"

/* ---- header layout, as documented ------------------------------------- */

_Static_assert(offsetof(struct neff_header, pkg_version) == 0, "pkg_version");
_Static_assert(offsetof(struct neff_header, header_size) == 8, "header_size");
_Static_assert(offsetof(struct neff_header, data_size) == 16, "data_size");
_Static_assert(offsetof(struct neff_header, neff_version_major) == 24, "major");
_Static_assert(offsetof(struct neff_header, neff_version_minor) == 32, "minor");
_Static_assert(offsetof(struct neff_header, neff_build_version) == 40, "build");
_Static_assert(offsetof(struct neff_header, num_tpb) == 168, "num_tpb");
_Static_assert(offsetof(struct neff_header, hash) == 172, "hash");
_Static_assert(offsetof(struct neff_header, uuid) == 204, "uuid");
_Static_assert(offsetof(struct neff_header, name) == 220, "name");
_Static_assert(offsetof(struct neff_header, requested_tpb_count) == 476, "req_tpb");
_Static_assert(offsetof(struct neff_header, tpb_per_node) == 480, "tpb_per_node");
_Static_assert(offsetof(struct neff_header, feature_bits) == 544, "feature_bits");
_Static_assert(offsetof(struct neff_header, lnc_size) == 552, "lnc_size");
_Static_assert(offsetof(struct neff_header, pad) == 556, "pad");
_Static_assert(sizeof(struct neff_header) == NEFF_HEADER_SIZE, "header size");

/* Deflate cannot expand data by more than about 1032:1; a tarball that
 * claims more than this ratio (plus slack) of uncompressed bytes is bogus. */
#define NEFF_MAX_INFLATE_RATIO 1100u
#define NEFF_INFLATE_SLACK (1u << 20)

const struct neff_limits neff_default_limits = {
    .max_members = NEFF_DEFAULT_MAX_MEMBERS,
    .max_member_size = NEFF_DEFAULT_MAX_MEMBER_SIZE,
    .max_total_size = NEFF_DEFAULT_MAX_TOTAL_SIZE,
};

/* ---- neff_buf ----------------------------------------------------------- */

struct neff_buf {
    _Atomic size_t refs;                /* references held */
    size_t size;                        /* bytes in data */
    uint8_t *data;                      /* the bytes (inline or separately malloc'd) */
    bool separate;                      /* data was malloc'd on its own */
    _Alignas(max_align_t) uint8_t inline_data[]; /* storage when !separate (aligned) */
};

static struct neff_buf *buf_alloc(size_t size, bool zero)
{
    if (size > SIZE_MAX - sizeof(struct neff_buf))
        return NULL;
    struct neff_buf *b = zero ? calloc(1, sizeof *b + size) : malloc(sizeof *b + size);
    if (b == NULL)
        return NULL;
    atomic_init(&b->refs, 1);
    b->size = size;
    b->data = b->inline_data;
    b->separate = false;
    return b;
}

/* Wrap a malloc'd block; on failure the block is freed. */
static struct neff_buf *buf_take(uint8_t *data, size_t size)
{
    struct neff_buf *b = malloc(sizeof *b);
    if (b == NULL) {
        free(data);
        return NULL;
    }
    atomic_init(&b->refs, 1);
    b->size = size;
    b->data = data;
    b->separate = true;
    return b;
}

struct neff_buf *neff_buf_new(size_t size, uint8_t **data)
{
    struct neff_buf *b = buf_alloc(size, true);
    if (b != NULL && data != NULL)
        *data = b->data;
    return b;
}

struct neff_buf *neff_buf_copy(const void *data, size_t size)
{
    struct neff_buf *b = buf_alloc(size, false);
    if (b != NULL && size > 0)
        memcpy(b->data, data, size);
    return b;
}

struct neff_buf *neff_buf_ref(struct neff_buf *b)
{
    if (b != NULL)
        atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
    return b;
}

void neff_buf_unref(struct neff_buf *b)
{
    if (b == NULL)
        return;
    if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (b->separate)
        free(b->data);
    free(b);
}

const uint8_t *neff_buf_data(const struct neff_buf *b)
{
    return b != NULL ? b->data : NULL;
}

size_t neff_buf_size(const struct neff_buf *b)
{
    return b != NULL ? b->size : 0;
}

/* ---- little-endian header codec ---------------------------------------- */

static uint64_t le_get(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void le_put(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

#define HDR_GET(h, raw, field) \
    ((h)->field = (__typeof__((h)->field))le_get((raw) + offsetof(struct neff_header, field), \
                                                 sizeof((h)->field)))
#define HDR_PUT(raw, h, field) \
    le_put((raw) + offsetof(struct neff_header, field), (h)->field, sizeof((h)->field))
#define HDR_GET_BYTES(h, raw, field) \
    memcpy((h)->field, (raw) + offsetof(struct neff_header, field), sizeof((h)->field))
#define HDR_PUT_BYTES(raw, h, field) \
    memcpy((raw) + offsetof(struct neff_header, field), (h)->field, sizeof((h)->field))

static void header_decode(const uint8_t *raw, struct neff_header *h)
{
    memset(h, 0, sizeof *h);
    HDR_GET(h, raw, pkg_version);
    HDR_GET(h, raw, header_size);
    HDR_GET(h, raw, data_size);
    HDR_GET(h, raw, neff_version_major);
    HDR_GET(h, raw, neff_version_minor);
    HDR_GET_BYTES(h, raw, neff_build_version);
    HDR_GET(h, raw, num_tpb);
    HDR_GET_BYTES(h, raw, hash);
    HDR_GET_BYTES(h, raw, uuid);
    HDR_GET_BYTES(h, raw, name);
    HDR_GET(h, raw, requested_tpb_count);
    HDR_GET_BYTES(h, raw, tpb_per_node);
    HDR_GET(h, raw, feature_bits);
    HDR_GET(h, raw, lnc_size);
}

static void header_encode(const struct neff_header *h, uint8_t *raw)
{
    memset(raw, 0, NEFF_HEADER_SIZE);
    HDR_PUT(raw, h, pkg_version);
    HDR_PUT(raw, h, header_size);
    HDR_PUT(raw, h, data_size);
    HDR_PUT(raw, h, neff_version_major);
    HDR_PUT(raw, h, neff_version_minor);
    HDR_PUT_BYTES(raw, h, neff_build_version);
    HDR_PUT(raw, h, num_tpb);
    HDR_PUT_BYTES(raw, h, hash);
    HDR_PUT_BYTES(raw, h, uuid);
    HDR_PUT_BYTES(raw, h, name);
    HDR_PUT(raw, h, requested_tpb_count);
    HDR_PUT_BYTES(raw, h, tpb_per_node);
    HDR_PUT(raw, h, feature_bits);
    HDR_PUT(raw, h, lnc_size);
}

/* ---- hash ------------------------------------------------------------- */

bool neff_hash_compute(uint64_t pkg_version, const void *data, size_t size,
                       uint8_t hash[NEFF_HASH_SIZE])
{
    const EVP_MD *md;
    if (pkg_version == NEFF_PKG_VERSION_SHA256)
        md = EVP_sha256();
    else if (pkg_version == NEFF_PKG_VERSION_MD5)
        md = EVP_md5();
    else
        return false;
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    static const uint8_t empty = 0;
    if (EVP_Digest(size > 0 ? data : &empty, size, out, &len, md, NULL) != 1 ||
        len > NEFF_HASH_SIZE)
        return false;
    memset(hash, 0, NEFF_HASH_SIZE);
    memcpy(hash, out, len);
    return true;
}

/* ---- member list and name index ---------------------------------------- */

static uint64_t name_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* Slot of `name` in the index, or of the empty slot where it would go. */
static size_t index_slot(const struct neff_file *f, const char *name)
{
    size_t mask = f->index_cap - 1;
    size_t i = (size_t)name_hash(name) & mask;
    while (f->index[i] != 0 && strcmp(f->members[f->index[i] - 1].name, name) != 0)
        i = (i + 1) & mask;
    return i;
}

static bool index_grow(struct neff_file *f)
{
    size_t cap = f->index_cap ? f->index_cap * 2 : 64;
    uint32_t *idx = calloc(cap, sizeof *idx);
    if (idx == NULL)
        return false;
    free(f->index);
    f->index = idx;
    f->index_cap = cap;
    for (size_t m = 0; m < f->n_members; m++)
        f->index[index_slot(f, f->members[m].name)] = (uint32_t)(m + 1);
    return true;
}

/* Drop "./" prefixes; check the rest is a sane relative path. Returns the
 * normalized start inside `name` or NULL with *why set. */
static const char *path_normalize(const char *name, const char **why)
{
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    size_t len = strlen(name);
    if (len == 0) {
        *why = "empty name";
        return NULL;
    }
    if (len > NEFF_MAX_PATH) {
        *why = "name too long";
        return NULL;
    }
    if (name[0] == '/') {
        *why = "absolute path";
        return NULL;
    }
    for (const char *c = name; *c; c++) {
        if (*c < 0x20 || *c > 0x7e) {
            *why = "not printable ASCII";
            return NULL;
        }
    }
    for (const char *c = name; *c;) {
        const char *end = strchr(c, '/');
        size_t n = end ? (size_t)(end - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) {
            *why = "empty, '.' or '..' path component";
            return NULL;
        }
        c += n;
        if (*c == '/')
            c++;
    }
    if (name[len - 1] == '/') {
        *why = "trailing '/'";
        return NULL;
    }
    return name;
}

const struct neff_member *neff_file_find(const struct neff_file *f, const char *name)
{
    if (f == NULL || name == NULL || f->index_cap == 0)
        return NULL;
    while (name[0] == '.' && name[1] == '/')
        name += 2;
    size_t i = index_slot(f, name);
    return f->index[i] ? &f->members[f->index[i] - 1] : NULL;
}

/* Append without logging; *why explains a EMU_INVALID. */
static emu_status member_append(struct neff_file *f, const char *name, struct neff_buf *data,
                                const char **why)
{
    const char *norm = path_normalize(name, why);
    if (norm == NULL)
        return EMU_INVALID;
    if (neff_file_find(f, norm) != NULL) {
        *why = "duplicate member";
        return EMU_INVALID;
    }
    if (f->n_members >= UINT32_MAX - 1) {
        *why = "too many members";
        return EMU_INVALID;
    }
    *why = "out of memory";
    if (!grow_array((void **)&f->members, f->n_members + 1, &f->cap_members, sizeof *f->members,
                    16))
        return EMU_RESOURCE;
    if ((f->n_members + 1) * 2 > f->index_cap && !index_grow(f))
        return EMU_RESOURCE;
    char *copy = strdup(norm);
    if (copy == NULL)
        return EMU_RESOURCE;
    f->members[f->n_members] = (struct neff_member){.name = copy, .data = neff_buf_ref(data)};
    f->n_members++;
    f->index[index_slot(f, copy)] = (uint32_t)f->n_members;
    return EMU_OK;
}

emu_status neff_file_add(struct neff_file *f, const char *name, struct neff_buf *data)
{
    if (f == NULL || name == NULL || data == NULL) {
        LOG_ERROR("NEFF", "neff_file_add: NULL argument");
        return EMU_INVALID;
    }
    const char *why = NULL;
    emu_status st = member_append(f, name, data, &why);
    if (st != EMU_OK)
        LOG_ERROR("NEFF", "member '%s': %s", name, why);
    return st;
}

emu_status neff_file_add_copy(struct neff_file *f, const char *name, const void *data,
                              size_t size)
{
    struct neff_buf *b = neff_buf_copy(data, size);
    if (b == NULL) {
        LOG_ERROR("NEFF", "member '%s': out of memory for %zu bytes", name ? name : "?", size);
        return EMU_RESOURCE;
    }
    emu_status st = neff_file_add(f, name, b);
    neff_buf_unref(b);
    return st;
}

struct neff_file *neff_file_new(void)
{
    struct neff_file *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->hdr.pkg_version = NEFF_PKG_VERSION_SHA256;
    f->hdr.header_size = NEFF_HEADER_SIZE;
    f->hdr.neff_version_major = NEFF_VERSION_MAJOR_TRNEMU;
    f->hdr.neff_version_minor = NEFF_VERSION_MINOR_TRNEMU;
    return f;
}

void neff_file_free(struct neff_file *f)
{
    if (f == NULL)
        return;
    for (size_t i = 0; i < f->n_members; i++) {
        free(f->members[i].name);
        neff_buf_unref(f->members[i].data);
    }
    free(f->members);
    free(f->index);
    free(f);
}

bool neff_file_equal(const struct neff_file *a, const struct neff_file *b)
{
    const struct neff_header *x = &a->hdr, *y = &b->hdr;
    if (x->pkg_version != y->pkg_version || x->header_size != y->header_size ||
        x->neff_version_major != y->neff_version_major ||
        x->neff_version_minor != y->neff_version_minor || x->num_tpb != y->num_tpb ||
        x->requested_tpb_count != y->requested_tpb_count ||
        x->feature_bits != y->feature_bits || x->lnc_size != y->lnc_size ||
        memcmp(x->neff_build_version, y->neff_build_version, sizeof x->neff_build_version) ||
        memcmp(x->uuid, y->uuid, sizeof x->uuid) || memcmp(x->name, y->name, sizeof x->name) ||
        memcmp(x->tpb_per_node, y->tpb_per_node, sizeof x->tpb_per_node))
        return false;
    if (a->n_members != b->n_members)
        return false;
    for (size_t i = 0; i < a->n_members; i++) {
        const struct neff_member *p = &a->members[i], *q = &b->members[i];
        size_t n = neff_buf_size(p->data);
        if (strcmp(p->name, q->name) != 0 || n != neff_buf_size(q->data) ||
            (n > 0 && memcmp(neff_buf_data(p->data), neff_buf_data(q->data), n) != 0))
            return false;
    }
    return true;
}

/* ---- reading the tarball ----------------------------------------------- */

/* libarchive's message for the last error, never NULL. */
static const char *ar_err(struct archive *a)
{
    const char *s = archive_error_string(a);
    return s != NULL ? s : "unexpected end of data";
}

/* State of one tar read. */
struct tar_reader {
    struct archive *ar;                 /* libarchive handle */
    const struct neff_limits *lim;      /* limits in force */
    uint64_t total_cap;                 /* min(max_total_size, ratio cap) */
    uint64_t total;                     /* member bytes read so far */
};

/* Read the body of a member whose size the header declares. */
static emu_status tar_read_sized(struct tar_reader *t, const char *name, uint64_t size,
                                 struct neff_buf **out)
{
    struct neff_buf *b = buf_alloc((size_t)size, false);
    if (b == NULL) {
        LOG_ERROR("NEFF", "member '%s': out of memory for %llu bytes", name,
                  (unsigned long long)size);
        return EMU_RESOURCE;
    }
    size_t got = 0;
    while (got < size) {
        la_ssize_t r = archive_read_data(t->ar, b->data + got, (size_t)size - got);
        if (r <= 0) {
            LOG_ERROR("NEFF", "member '%s': corrupt or truncated data after %zu of %llu bytes%s%s",
                      name, got, (unsigned long long)size, r < 0 ? ": " : "",
                      r < 0 ? ar_err(t->ar) : "");
            neff_buf_unref(b);
            return EMU_INVALID;
        }
        got += (size_t)r;
    }
    *out = b;
    return EMU_OK;
}

/* Read the body of a member of unknown size, growing under the limits. */
static emu_status tar_read_unsized(struct tar_reader *t, const char *name, struct neff_buf **out)
{
    size_t len = 0, cap = 0;
    uint8_t *data = NULL;
    for (;;) {
        if (!grow_array((void **)&data, len + 1, &cap, 1, 65536)) {
            free(data);
            LOG_ERROR("NEFF", "member '%s': out of memory", name);
            return EMU_RESOURCE;
        }
        la_ssize_t r = archive_read_data(t->ar, data + len, cap - len);
        if (r < 0) {
            LOG_ERROR("NEFF", "member '%s': corrupt data: %s", name, ar_err(t->ar));
            free(data);
            return EMU_INVALID;
        }
        if (r == 0)
            break;
        len += (size_t)r;
        if (len > t->lim->max_member_size || t->total + len > t->total_cap) {
            LOG_ERROR("NEFF", "member '%s': larger than the size limit", name);
            free(data);
            return EMU_INVALID;
        }
    }
    *out = buf_take(data, len);
    if (*out == NULL) {
        LOG_ERROR("NEFF", "member '%s': out of memory", name);
        return EMU_RESOURCE;
    }
    return EMU_OK;
}

/* Check size limits for a member declaring `size` bytes. */
static emu_status tar_check_size(struct tar_reader *t, const char *name, uint64_t size)
{
    if (size > t->lim->max_member_size) {
        LOG_ERROR("NEFF", "member '%s': size %llu exceeds the member limit %llu", name,
                  (unsigned long long)size, (unsigned long long)t->lim->max_member_size);
        return EMU_INVALID;
    }
    if (size > t->total_cap - t->total) {
        LOG_ERROR("NEFF", "member '%s': size %llu exceeds the total limit (%llu bytes left)",
                  name, (unsigned long long)size,
                  (unsigned long long)(t->total_cap - t->total));
        return EMU_INVALID;
    }
    return EMU_OK;
}

/* Read one tar entry into f (directories are skipped). */
static emu_status tar_read_entry(struct tar_reader *t, struct archive_entry *e,
                                 struct neff_file *f)
{
    const char *name = archive_entry_pathname(e);
    if (name == NULL) {
        LOG_ERROR("NEFF", "tar entry %zu: no usable path name", f->n_members);
        return EMU_INVALID;
    }
    mode_t type = archive_entry_filetype(e);
    if (type == AE_IFDIR)
        return EMU_OK;
    if (type != AE_IFREG || archive_entry_hardlink(e) != NULL) {
        LOG_ERROR("NEFF", "member '%s': not a regular file", name);
        return EMU_INVALID;
    }
    if (f->n_members >= t->lim->max_members) {
        LOG_ERROR("NEFF", "member '%s': more than %llu members", name,
                  (unsigned long long)t->lim->max_members);
        return EMU_INVALID;
    }
    const char *why = NULL;
    if (path_normalize(name, &why) == NULL) {
        LOG_ERROR("NEFF", "member '%s': %s", name, why);
        return EMU_INVALID;
    }
    struct neff_buf *b = NULL;
    emu_status st;
    if (archive_entry_size_is_set(e)) {
        int64_t size = archive_entry_size(e);
        if (size < 0) {
            LOG_ERROR("NEFF", "member '%s': negative size", name);
            return EMU_INVALID;
        }
        st = tar_check_size(t, name, (uint64_t)size);
        if (st == EMU_OK)
            st = tar_read_sized(t, name, (uint64_t)size, &b);
    } else {
        st = tar_read_unsized(t, name, &b);
    }
    if (st != EMU_OK)
        return st;
    t->total += b->size;
    st = member_append(f, name, b, &why);
    neff_buf_unref(b);
    if (st != EMU_OK)
        LOG_ERROR("NEFF", "member '%s': %s", name, why);
    return st;
}

/* Tar header bytes allowed per member (header, pax record, padding). */
#define NEFF_TAR_HEADER_ALLOWANCE 16384u

/* Most uncompressed bytes a data part of `size` bytes may hold. */
static uint64_t tar_total_cap(size_t size, const struct neff_limits *lim)
{
    uint64_t ratio_cap = (uint64_t)size * NEFF_MAX_INFLATE_RATIO + NEFF_INFLATE_SLACK;
    if (size > UINT64_MAX / NEFF_MAX_INFLATE_RATIO / 2)
        ratio_cap = UINT64_MAX;
    return ratio_cap < lim->max_total_size ? ratio_cap : lim->max_total_size;
}

/* True when only zero bytes remain (padding after the last gzip member). */
static bool gz_rest_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* Inflate every gzip member of the data part to its end, discarding the
 * output, so that zlib checks each member's CRC-32 and length trailer. A
 * data part that is not gzip (a plain tar) has no trailer to check. */
static emu_status gzip_check(const uint8_t *data, size_t size, uint64_t cap)
{
    if (size < 2 || data[0] != 0x1f || data[1] != 0x8b)
        return EMU_OK;
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
        LOG_ERROR("NEFF", "tarball: out of memory for the gzip check");
        return EMU_RESOURCE;
    }
    uint8_t out[16384];
    size_t pos = 0;
    uint64_t total = 0;
    unsigned member = 1;
    const char *why = NULL;
    for (;;) {
        if (z.avail_in == 0 && pos < size) {
            size_t n = size - pos < (1u << 30) ? size - pos : (1u << 30);
            z.next_in = (Bytef *)(uintptr_t)(data + pos);
            z.avail_in = (uInt)n;
            pos += n;
        }
        z.next_out = out;
        z.avail_out = sizeof out;
        int r = inflate(&z, Z_NO_FLUSH);
        total += sizeof out - z.avail_out;
        if (total > cap) {
            why = "inflates beyond the size limit";
            break;
        }
        if (r == Z_STREAM_END) {
            size_t left = z.avail_in + (size - pos);
            const uint8_t *next = data + (size - left);
            if (gz_rest_zero(next, left))
                break;
            if (left < 2 || next[0] != 0x1f || next[1] != 0x8b) {
                why = "stray bytes after the last gzip member";
                break;
            }
            member++;
            inflateReset(&z);
            continue;
        }
        if (r == Z_OK || (r == Z_BUF_ERROR && (z.avail_in > 0 || pos < size)))
            continue;
        why = r == Z_BUF_ERROR ? "truncated" : z.msg != NULL ? z.msg : "corrupt data";
        break;
    }
    inflateEnd(&z);
    if (why == NULL)
        return EMU_OK;
    LOG_ERROR("NEFF", "tarball: gzip member %u is corrupt: %s", member, why);
    return EMU_INVALID;
}

static emu_status tar_read_all(const uint8_t *data, size_t size, const struct neff_limits *lim,
                               struct neff_file *f)
{
    struct tar_reader t = {.lim = lim, .total_cap = tar_total_cap(size, lim)};
    /* the tar stream is the members plus headers and padding */
    uint64_t hdrs = lim->max_members > UINT64_MAX / 4 / NEFF_TAR_HEADER_ALLOWANCE
                        ? UINT64_MAX / 4 : lim->max_members * NEFF_TAR_HEADER_ALLOWANCE;
    uint64_t stream_cap = t.total_cap > UINT64_MAX / 2 ? UINT64_MAX : t.total_cap + hdrs +
                          NEFF_INFLATE_SLACK;
    emu_status gz = gzip_check(data, size, stream_cap);
    if (gz != EMU_OK)
        return gz;
    t.ar = archive_read_new();
    if (t.ar == NULL) {
        LOG_ERROR("NEFF", "tarball: out of memory");
        return EMU_RESOURCE;
    }
    archive_read_support_filter_gzip(t.ar);
    archive_read_support_format_tar(t.ar);
    emu_status st = EMU_OK;
    static const uint8_t empty = 0;
    if (archive_read_open_memory(t.ar, size ? data : &empty, size) != ARCHIVE_OK) {
        LOG_ERROR("NEFF", "tarball: corrupt gzip/tar data: %s", ar_err(t.ar));
        st = EMU_INVALID;
    }
    while (st == EMU_OK) {
        struct archive_entry *e = NULL;
        int r = archive_read_next_header(t.ar, &e);
        if (r == ARCHIVE_EOF)
            break;
        if (r < ARCHIVE_WARN) {
            LOG_ERROR("NEFF", "tarball: corrupt gzip/tar data after %zu members: %s",
                      f->n_members, ar_err(t.ar));
            st = EMU_INVALID;
            break;
        }
        st = tar_read_entry(&t, e, f);
    }
    archive_read_free(t.ar);
    return st;
}

/* ---- reading the file -------------------------------------------------- */

static emu_status header_check(const struct neff_header *h, size_t size)
{
    if (h->header_size != NEFF_HEADER_SIZE) {
        LOG_ERROR("NEFF", "header: header_size is %llu, expected %u",
                  (unsigned long long)h->header_size, NEFF_HEADER_SIZE);
        return EMU_INVALID;
    }
    if (h->neff_version_major > NEFF_VERSION_MAJOR_MAX) {
        LOG_ERROR("NEFF", "header: neff_version_major %llu is newer than the supported %u",
                  (unsigned long long)h->neff_version_major, NEFF_VERSION_MAJOR_MAX);
        return EMU_NEFF_VERSION;
    }
    size_t avail = size - NEFF_HEADER_SIZE;
    if (h->data_size > avail) {
        LOG_ERROR("NEFF", "header: data_size %llu but the file is truncated to %zu data bytes",
                  (unsigned long long)h->data_size, avail);
        return EMU_INVALID;
    }
    if (h->data_size < avail) {
        LOG_ERROR("NEFF", "header: data_size %llu does not match the %zu bytes after the header",
                  (unsigned long long)h->data_size, avail);
        return EMU_INVALID;
    }
    return EMU_OK;
}

static emu_status hash_check(const struct neff_header *h, const uint8_t *data, size_t size)
{
    uint8_t want[NEFF_HASH_SIZE];
    if (!neff_hash_compute(h->pkg_version, data, size, want)) {
        LOG_ERROR("NEFF", "header: hash: pkg_version %llu has no known hash algorithm",
                  (unsigned long long)h->pkg_version);
        return EMU_INVALID;
    }
    size_t n = h->pkg_version == NEFF_PKG_VERSION_MD5 ? 16 : NEFF_HASH_SIZE;
    if (memcmp(want, h->hash, n) != 0) {
        LOG_ERROR("NEFF", "header: hash does not match the data part (%s)",
                  h->pkg_version == NEFF_PKG_VERSION_MD5 ? "md5" : "sha256");
        return EMU_INVALID;
    }
    return EMU_OK;
}

emu_status neff_file_read_limited(const void *bytes, size_t size, bool validate_hash,
                                  const struct neff_limits *lim, struct neff_file **out)
{
    if (out == NULL || (bytes == NULL && size > 0)) {
        LOG_ERROR("NEFF", "neff_file_read: NULL argument");
        return EMU_INVALID;
    }
    *out = NULL;
    if (lim == NULL)
        lim = &neff_default_limits;
    if (size < NEFF_HEADER_SIZE) {
        LOG_ERROR("NEFF", "header: truncated file of %zu bytes (the header alone is %u)", size,
                  NEFF_HEADER_SIZE);
        return EMU_INVALID;
    }
    struct neff_header h;
    header_decode(bytes, &h);
    emu_status st = header_check(&h, size);
    const uint8_t *data = (const uint8_t *)bytes + NEFF_HEADER_SIZE;
    if (st == EMU_OK && validate_hash)
        st = hash_check(&h, data, (size_t)h.data_size);
    if (st != EMU_OK)
        return st;
    struct neff_file *f = calloc(1, sizeof *f);
    if (f == NULL) {
        LOG_ERROR("NEFF", "out of memory");
        return EMU_RESOURCE;
    }
    f->hdr = h;
    st = tar_read_all(data, (size_t)h.data_size, lim, f);
    if (st != EMU_OK) {
        neff_file_free(f);
        return st;
    }
    *out = f;
    return EMU_OK;
}

emu_status neff_file_read(const void *bytes, size_t size, bool validate_hash,
                          struct neff_file **out)
{
    return neff_file_read_limited(bytes, size, validate_hash, NULL, out);
}

/* ---- writing ----------------------------------------------------------- */

/* Growable output buffer; the header's bytes are reserved at the start. */
struct out_buf {
    uint8_t *data;                      /* malloc'd bytes */
    size_t len;                         /* bytes used */
    size_t cap;                         /* bytes allocated */
};

static bool out_append(struct out_buf *o, const void *buf, size_t n)
{
    if (n > SIZE_MAX / 2 - o->len)
        return false;
    if (!grow_array((void **)&o->data, o->len + n, &o->cap, 1, 65536))
        return false;
    memcpy(o->data + o->len, buf, n);
    o->len += n;
    return true;
}

static la_ssize_t out_write_cb(struct archive *a, void *ctx, const void *buf, size_t n)
{
    if (!out_append(ctx, buf, n)) {
        archive_set_error(a, ENOMEM, "out of memory");
        return -1;
    }
    return (la_ssize_t)n;
}

static bool tar_write_member(struct archive *a, const struct neff_member *m)
{
    struct archive_entry *e = archive_entry_new();
    if (e == NULL)
        return false;
    size_t size = neff_buf_size(m->data);
    archive_entry_set_pathname(e, m->name);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    archive_entry_set_mtime(e, 0, 0);
    archive_entry_set_uid(e, 0);
    archive_entry_set_gid(e, 0);
    bool ok = archive_write_header(a, e) == ARCHIVE_OK;
    archive_entry_free(e);
    const uint8_t *p = neff_buf_data(m->data);
    for (size_t done = 0; ok && done < size;) {
        la_ssize_t r = archive_write_data(a, p + done, size - done);
        if (r <= 0)
            ok = false;
        else
            done += (size_t)r;
    }
    return ok;
}

/* Write the gzip'd tar of all members after the reserved header bytes. */
static emu_status tar_write_all(const struct neff_file *f, struct out_buf *o)
{
    struct archive *a = archive_write_new();
    if (a == NULL) {
        LOG_ERROR("NEFF", "write: out of memory");
        return EMU_RESOURCE;
    }
    bool ok = archive_write_add_filter_gzip(a) == ARCHIVE_OK &&
              archive_write_set_filter_option(a, "gzip", "timestamp", NULL) == ARCHIVE_OK &&
              archive_write_set_filter_option(a, "gzip", "compression-level", "1") == ARCHIVE_OK &&
              archive_write_set_format_pax_restricted(a) == ARCHIVE_OK &&
              archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK &&
              archive_write_open(a, o, NULL, out_write_cb, NULL) == ARCHIVE_OK;
    const char *what = "tarball";
    for (size_t i = 0; ok && i < f->n_members; i++) {
        ok = tar_write_member(a, &f->members[i]);
        if (!ok)
            what = f->members[i].name;
    }
    if (ok && archive_write_close(a) != ARCHIVE_OK)
        ok = false;
    if (!ok)
        LOG_ERROR("NEFF", "write: member '%s': %s", what,
                  archive_error_string(a) ? archive_error_string(a) : "libarchive failed");
    archive_write_free(a);
    return ok ? EMU_OK : EMU_RESOURCE;
}

emu_status neff_file_write(const struct neff_file *f, uint8_t **bytes, size_t *size)
{
    if (f == NULL || bytes == NULL || size == NULL) {
        LOG_ERROR("NEFF", "neff_file_write: NULL argument");
        return EMU_INVALID;
    }
    *bytes = NULL;
    *size = 0;
    struct neff_header h = f->hdr;
    if (h.pkg_version == 0)
        h.pkg_version = NEFF_PKG_VERSION_SHA256;
    if (h.pkg_version != NEFF_PKG_VERSION_SHA256 && h.pkg_version != NEFF_PKG_VERSION_MD5) {
        LOG_ERROR("NEFF", "write: header: pkg_version %llu has no known hash algorithm",
                  (unsigned long long)h.pkg_version);
        return EMU_INVALID;
    }
    struct out_buf o = {0};
    uint8_t zeros[NEFF_HEADER_SIZE] = {0};
    if (!out_append(&o, zeros, sizeof zeros)) {
        LOG_ERROR("NEFF", "write: out of memory");
        return EMU_RESOURCE;
    }
    emu_status st = tar_write_all(f, &o);
    if (st != EMU_OK) {
        free(o.data);
        return st;
    }
    h.header_size = NEFF_HEADER_SIZE;
    h.data_size = o.len - NEFF_HEADER_SIZE;
    neff_hash_compute(h.pkg_version, o.data + NEFF_HEADER_SIZE, (size_t)h.data_size, h.hash);
    header_encode(&h, o.data);
    *bytes = o.data;
    *size = o.len;
    return EMU_OK;
}
