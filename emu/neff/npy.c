/*
 * npy.c: parses and writes numpy .npy files (see npy.h): the magic, the
 * version, the header length, and the Python dict literal with 'descr',
 * 'fortran_order' and 'shape', with overflow-checked sizes.
 */
#include "emu/neff/npy.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* One supported element type. */
struct npy_type {
    char kind;                          /* 'f', 'i', 'u' or 'b' */
    size_t size;                        /* item size in bytes */
    uint32_t dtype;                     /* NRT dtype value (0: none) */
};

static const struct npy_type npy_types[] = {
    {'f', 4, 10}, {'f', 2, 7}, {'f', 8, 0},  {'i', 1, 2}, {'i', 2, 4}, {'i', 4, 8},
    {'i', 8, 12}, {'u', 1, 3}, {'u', 2, 5},  {'u', 4, 9}, {'u', 8, 1}, {'b', 1, 3},
};

/* Look descr up; fills info->descr/dtype/itemsize. *why on failure. */
static bool npy_descr_parse(const char *d, size_t len, struct npy_info *info, const char **why)
{
    *why = "unsupported descr";
    if (len != 3 || d[2] < '1' || d[2] > '8')
        return false;
    char order = d[0], kind = d[1];
    size_t size = (size_t)(d[2] - '0');
    if (order != '<' && order != '=' && order != '|' && order != '>')
        return false;
    if (order == '>' && size > 1) {
        *why = "big-endian data";
        return false;
    }
    for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) {
        if (npy_types[i].kind == kind && npy_types[i].size == size) {
            info->descr[0] = size == 1 ? '|' : '<';
            info->descr[1] = kind;
            info->descr[2] = d[2];
            info->descr[3] = '\0';
            info->dtype = npy_types[i].dtype;
            info->itemsize = size;
            return true;
        }
    }
    return false;
}

const char *npy_descr_for_dtype(uint32_t dtype)
{
    switch (dtype) {
    case 10: case 11: return "<f4";     /* FLOAT32, FP32R */
    case 7: return "<f2";               /* FLOAT16 */
    case 6: case 5: return "<u2";       /* BFLOAT16 (raw bits), UINT16 */
    case 13: case 14: case 15: case 3: return "|u1"; /* FP8 (raw bits), UINT8 */
    case 9: return "<u4";
    case 1: return "<u8";
    case 2: return "|i1";
    case 4: return "<i2";
    case 8: return "<i4";
    case 12: return "<i8";
    default: return NULL;
    }
}

/* ---- the header dict --------------------------------------------------- */

/* Cursor over the header text. */
struct dict_cur {
    const char *p;                      /* next character */
    const char *end;                    /* one past the header */
};

static void cur_skip_ws(struct dict_cur *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool cur_eat(struct dict_cur *c, char ch)
{
    cur_skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string; *s and *len point into the header. */
static bool cur_string(struct dict_cur *c, const char **s, size_t *len)
{
    cur_skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return false;
    char q = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\')
            return false;
        c->p++;
    }
    if (c->p >= c->end)
        return false;
    *s = start;
    *len = (size_t)(c->p - start);
    c->p++;
    return true;
}

static bool cur_word(struct dict_cur *c, const char *w)
{
    cur_skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

static bool cur_uint(struct dict_cur *c, uint64_t *v)
{
    cur_skip_ws(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
        return false;
    uint64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        uint64_t d = (uint64_t)(*c->p - '0');
        if (x > (UINT64_MAX - d) / 10)
            return false;
        x = x * 10 + d;
        c->p++;
    }
    if (c->p < c->end && *c->p == 'L')     /* Python 2 long literal */
        c->p++;
    *v = x;
    return true;
}

/* A tuple of non-negative integers: (), (n,), (a, b), (a, b,). */
static bool cur_shape(struct dict_cur *c, struct npy_info *info, const char **why)
{
    *why = "malformed 'shape'";
    if (!cur_eat(c, '('))
        return false;
    info->ndim = 0;
    while (!cur_eat(c, ')')) {
        if (info->ndim >= NPY_MAX_DIMS) {
            *why = "too many dimensions in 'shape'";
            return false;
        }
        if (!cur_uint(c, &info->shape[info->ndim]))
            return false;
        info->ndim++;
        if (!cur_eat(c, ',')) {
            if (!cur_eat(c, ')'))
                return false;
            if (info->ndim == 1)   /* "(5)" is an int, not a tuple */
                return false;
            break;
        }
    }
    return true;
}

/* One "key: value" pair; *seen collects the keys found (bit per key). */
static bool dict_pair(struct dict_cur *c, struct npy_info *info, unsigned *seen, const char **why)
{
    const char *key, *s;
    size_t klen, slen;
    *why = "malformed header dict";
    if (!cur_string(c, &key, &klen) || !cur_eat(c, ':'))
        return false;
    unsigned bit;
    if (klen == 5 && memcmp(key, "descr", 5) == 0) {
        bit = 1;
        if (!cur_string(c, &s, &slen)) {
            *why = "'descr' is not a plain string";
            return false;
        }
        if (!npy_descr_parse(s, slen, info, why))
            return false;
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
        bit = 2;
        if (cur_word(c, "True")) {
            *why = "fortran_order True is not supported";
            return false;
        }
        if (!cur_word(c, "False")) {
            *why = "'fortran_order' is not True or False";
            return false;
        }
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
        bit = 4;
        if (!cur_shape(c, info, why))
            return false;
    } else {
        *why = "unknown key in header dict";
        return false;
    }
    if (*seen & bit) {
        *why = "duplicate key in header dict";
        return false;
    }
    *seen |= bit;
    return true;
}

static bool dict_parse(const char *text, size_t len, struct npy_info *info, const char **why)
{
    struct dict_cur c = {.p = text, .end = text + len};
    unsigned seen = 0;
    *why = "malformed header dict";
    if (!cur_eat(&c, '{'))
        return false;
    while (!cur_eat(&c, '}')) {
        if (!dict_pair(&c, info, &seen, why))
            return false;
        if (!cur_eat(&c, ',')) {
            if (!cur_eat(&c, '}')) {
                *why = "malformed header dict";
                return false;
            }
            break;
        }
    }
    cur_skip_ws(&c);
    if (c.p != c.end) {
        *why = "junk after header dict";
        return false;
    }
    if (seen != 7) {
        *why = "header dict lacks 'descr', 'fortran_order' or 'shape'";
        return false;
    }
    return true;
}

/* count = prod(shape), len = count * itemsize, overflow-checked. */
static bool npy_sizes(struct npy_info *info)
{
    uint64_t count = 1;
    for (uint32_t i = 0; i < info->ndim; i++)
        if (__builtin_mul_overflow(count, info->shape[i], &count))
            return false;
    uint64_t len;
    if (__builtin_mul_overflow(count, (uint64_t)info->itemsize, &len) || len > SIZE_MAX)
        return false;
    info->count = count;
    info->data_len = (size_t)len;
    return true;
}

emu_status npy_parse(const void *bytes, size_t size, const char *what, struct npy_info *out)
{
    const uint8_t *b = bytes;
    if (what == NULL)
        what = ".npy";
    memset(out, 0, sizeof *out);
    if (b == NULL || size < 10 || memcmp(b, npy_magic, sizeof npy_magic) != 0) {
        LOG_ERROR("NEFF", "%s: not a .npy file (bad magic or truncated)", what);
        return EMU_INVALID;
    }
    uint8_t major = b[6], minor = b[7];
    size_t hlen, hoff;
    if (major == 1 && minor == 0) {
        hlen = (size_t)b[8] | (size_t)b[9] << 8;
        hoff = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (size < 12) {
            LOG_ERROR("NEFF", "%s: truncated .npy header", what);
            return EMU_INVALID;
        }
        hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hoff = 12;
    } else {
        LOG_ERROR("NEFF", "%s: unsupported .npy version %u.%u", what, major, minor);
        return EMU_INVALID;
    }
    if (hlen > size - hoff) {
        LOG_ERROR("NEFF", "%s: truncated .npy header (%zu bytes declared)", what, hlen);
        return EMU_INVALID;
    }
    const char *why = NULL;
    if (!dict_parse((const char *)b + hoff, hlen, out, &why)) {
        LOG_ERROR("NEFF", "%s: %s", what, why);
        return EMU_INVALID;
    }
    out->data_off = hoff + hlen;
    if (!npy_sizes(out)) {
        LOG_ERROR("NEFF", "%s: shape overflows the addressable size", what);
        return EMU_INVALID;
    }
    if (size - out->data_off != out->data_len) {
        LOG_ERROR("NEFF", "%s: payload is %zu bytes, shape and dtype need %zu", what,
                  size - out->data_off, out->data_len);
        return EMU_INVALID;
    }
    return EMU_OK;
}

/* ---- writing ----------------------------------------------------------- */

/* The dict text, without padding; NULL on OOM. */
static char *npy_dict_text(const struct npy_info *info)
{
    size_t cap = 64 + (size_t)info->ndim * 24;
    char *s = malloc(cap);
    if (s == NULL)
        return NULL;
    int n = snprintf(s, cap, "{'descr': '%s', 'fortran_order': False, 'shape': (", info->descr);
    size_t len = (size_t)n;
    for (uint32_t i = 0; i < info->ndim; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%llu", i ? ", " : "",
                                (unsigned long long)info->shape[i]);
    snprintf(s + len, cap - len, "%s), }", info->ndim == 1 ? "," : "");
    return s;
}

emu_status npy_write(const char *descr, const uint64_t *shape, uint32_t ndim, const void *data,
                     size_t len, uint8_t **out, size_t *out_len)
{
    struct npy_info info = {0};
    const char *why = NULL;
    if (out == NULL || out_len == NULL || descr == NULL || (shape == NULL && ndim > 0) ||
        (data == NULL && len > 0)) {
        LOG_ERROR("NEFF", "npy_write: NULL argument");
        return EMU_INVALID;
    }
    *out = NULL;
    *out_len = 0;
    if (!npy_descr_parse(descr, strlen(descr), &info, &why) || ndim > NPY_MAX_DIMS) {
        LOG_ERROR("NEFF", "npy_write: descr '%s' / %u dims: %s", descr, ndim,
                  why ? why : "too many dimensions");
        return EMU_INVALID;
    }
    info.ndim = ndim;
    if (ndim > 0)
        memcpy(info.shape, shape, ndim * sizeof *shape);
    if (!npy_sizes(&info) || info.data_len != len) {
        LOG_ERROR("NEFF", "npy_write: %zu data bytes do not match shape and descr '%s'", len,
                  descr);
        return EMU_INVALID;
    }
    char *dict = npy_dict_text(&info);
    if (dict == NULL) {
        LOG_ERROR("NEFF", "npy_write: out of memory");
        return EMU_RESOURCE;
    }
    size_t dlen = strlen(dict);
    size_t pre = dlen + 1 + 10 <= 65535 + 10 ? 10 : 12;   /* magic, version, length */
    size_t total_hdr = (pre + dlen + 1 + 63) / 64 * 64;
    size_t hlen = total_hdr - pre;
    if (pre == 10 && hlen > 65535) {
        pre = 12;
        total_hdr = (pre + dlen + 1 + 63) / 64 * 64;
        hlen = total_hdr - pre;
    }
    uint8_t *f = malloc(total_hdr + len);
    if (f == NULL) {
        free(dict);
        LOG_ERROR("NEFF", "npy_write: out of memory for %zu bytes", len);
        return EMU_RESOURCE;
    }
    memcpy(f, npy_magic, sizeof npy_magic);
    f[6] = pre == 10 ? 1 : 2;
    f[7] = 0;
    for (size_t i = 0; i < pre - 8; i++)
        f[8 + i] = (uint8_t)(hlen >> (8 * i));
    memcpy(f + pre, dict, dlen);
    memset(f + pre + dlen, ' ', hlen - dlen - 1);
    f[total_hdr - 1] = '\n';
    if (len > 0)
        memcpy(f + total_hdr, data, len);
    free(dict);
    *out = f;
    *out_len = total_hdr + len;
    return EMU_OK;
}
