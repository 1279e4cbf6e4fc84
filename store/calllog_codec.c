/*
 * calllog_codec.c: the encoding of a call's arguments in the log (the
 * log_calls.args blob) and its decoder.
 *
 * The blob is the arguments in table order, each encoded by its role:
 * fixed-width little-endian integers, a presence byte before everything a
 * pointer leads to, strings inline, buffers by reference (their bytes or
 * hash go to log_call_buffers under the argument's index). The decoder
 * treats the blob as untrusted: every read is bounds-checked and a
 * malformed blob is one log line, never a crash.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/grow.h"
#include "emu/log.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "store/calllog.h"
#include "xxhash.h"

/* Inputs larger than this are taken for a bad size: not read. */
#define CL_INPUT_MAX (1ull << 40)
/* Longest string recorded. */
#define CL_STR_MAX (1u << 20)

void cl_hash(const void *data, size_t size, uint8_t out[16])
{
    XXH128_hash_t h = XXH3_128bits(data, size);
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out, c.digest, 16);
}

/* ---- writing ---- */

static void bytes_put(struct cl_bytes *b, const void *p, size_t n)
{
    if (b->failed)
        return;
    if (!GROW_ARRAY(b->p, b->cap, b->n + n, 256)) {
        b->failed = true;
        return;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void put_u8(struct cl_bytes *b, uint8_t v)
{
    bytes_put(b, &v, 1);
}

static void put_u32(struct cl_bytes *b, uint32_t v)
{
    uint8_t x[4];
    for (int i = 0; i < 4; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    bytes_put(b, x, 4);
}

static void put_u64(struct cl_bytes *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    bytes_put(b, x, 8);
}

void cl_bytes_free(struct cl_bytes *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

size_t cl_type_size(int t)
{
    switch (t) {
    case CL_T_BOOL: return 1;
    case CL_T_I32:
    case CL_T_U32: return 4;
    case CL_T_I64:
    case CL_T_U64:
    case CL_T_PTR: return 8;
    default: return 0;
    }
}

uint64_t cl_load(const void *p, int t)
{
    switch (t) {
    case CL_T_BOOL: return *(const bool *)p ? 1 : 0;
    case CL_T_I32: return (uint64_t)(int64_t)*(const int32_t *)p;
    case CL_T_U32: return *(const uint32_t *)p;
    case CL_T_I64:
    case CL_T_U64: return *(const uint64_t *)p;
    case CL_T_PTR: return (uint64_t)(uintptr_t)*(void *const *)p;
    default: return 0;
    }
}

/* The list of buffers a call refers to. */
struct buf_list {
    struct cl_buf *v; /* entries */
    size_t n;         /* used */
    size_t cap;       /* allocated */
    bool failed;      /* an allocation failed */
};

static struct cl_buf *buf_add(struct buf_list *l, uint32_t arg, uint32_t part, uint8_t dir,
                              const void *data, uint64_t size, bool keep_bytes)
{
    if (l->failed)
        return NULL;
    if (!GROW_ARRAY(l->v, l->cap, l->n + 1, 8)) {
        l->failed = true;
        return NULL;
    }
    struct cl_buf *b = &l->v[l->n++];
    b->arg = arg;
    b->part = part;
    b->dir = dir;
    b->size = size;
    cl_hash(data, (size_t)size, b->hash);
    b->data = keep_bytes ? data : NULL;
    b->owned = false;
    return b;
}

void cl_bufs_free(struct cl_buf *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bufs[i].owned)
            free((void *)bufs[i].data);
    free(bufs);
}

/* Dimensions a tensor info entry may claim before it is taken for garbage. */
#define CL_TINFO_NDIM_MAX 64

void *cl_tinfo_canon(const void *p, uint64_t *len)
{
    const nrt_tensor_info_array_t *a = p;
    size_t n = 8;
    for (uint64_t i = 0; i < a->tensor_count; i++) {
        uint32_t nd = a->tensor_array[i].ndim;
        n += NRT_TENSOR_NAME_MAX + 4 + 8 + 4 + 4 + 4 * (nd < CL_TINFO_NDIM_MAX ? nd : 0);
    }
    uint8_t *out = calloc(1, n), *q = out;
    if (out == NULL)
        return NULL;
    memcpy(q, &a->tensor_count, 8);
    q += 8;
    for (uint64_t i = 0; i < a->tensor_count; i++) {
        const nrt_tensor_info_t *t = &a->tensor_array[i];
        uint32_t usage = (uint32_t)t->usage, dtype = (uint32_t)t->dtype;
        uint32_t nd = t->ndim < CL_TINFO_NDIM_MAX && t->shape != NULL ? t->ndim : 0;
        memcpy(q, t->name, strnlen(t->name, NRT_TENSOR_NAME_MAX));
        q += NRT_TENSOR_NAME_MAX;
        memcpy(q, &usage, 4);
        memcpy(q + 4, &t->size, 8);
        memcpy(q + 12, &dtype, 4);
        memcpy(q + 16, &t->ndim, 4);
        q += 20;
        if (nd > 0)
            memcpy(q, t->shape, 4 * (size_t)nd);
        q += 4 * (t->ndim < CL_TINFO_NDIM_MAX ? t->ndim : 0);
    }
    *len = n;
    return out;
}

static void enc_str(struct cl_bytes *b, const char *s)
{
    put_u8(b, s != NULL);
    if (s == NULL)
        return;
    size_t n = strnlen(s, CL_STR_MAX);
    put_u32(b, (uint32_t)n);
    bytes_put(b, s, n);
}

static void enc_batch(struct cl_bytes *b, struct buf_list *bl, uint32_t i, const void *p,
                      uint64_t n, bool out, bool done, uint64_t keep_max)
{
    const nrt_tensor_batch_t *bt = p;
    put_u64(b, n);
    uint32_t part = 0;
    for (uint64_t k = 0; k < n; k++) {
        put_u64(b, (uint64_t)(uintptr_t)bt[k].tensor);
        put_u32(b, bt[k].num_ops);
        put_u8(b, bt[k].ops != NULL);
        for (uint32_t j = 0; bt[k].ops != NULL && j < bt[k].num_ops; j++) {
            const nrt_tensor_batch_op_t *op = &bt[k].ops[j];
            put_u64(b, op->offset);
            put_u64(b, op->size);
            put_u8(b, op->buffer != NULL);
            if (op->buffer != NULL && op->size <= CL_INPUT_MAX && (!out || done))
                buf_add(bl, i, part, out, op->buffer, op->size, !out || op->size <= keep_max);
            part++;
        }
    }
}

/* Roles whose argument is recorded as its 64-bit value alone (a plain
 * value, an input handle, raw bits, an opaque pointer, a callback). */
static bool cl_role_is_word(unsigned role)
{
    return role == CL_R_VAL || role == CL_R_HIN || role == CL_R_RAW || role == CL_R_OPAQUE ||
           role == CL_R_CB;
}

/* One argument. done: the outputs may be read (the call succeeded). */
static void enc_arg(struct cl_bytes *b, struct buf_list *bl, const struct cl_call *c,
                    const struct cl_arg *a, uint32_t i, bool done, uint64_t keep_max)
{
    uint64_t v = c->argv[i];
    const void *p = (const void *)(uintptr_t)v;
    if (cl_role_is_word(a->role)) {
        put_u64(b, v);
        return;
    }
    switch (a->role) {
    case CL_R_STR:
        enc_str(b, p);
        return;
    default:
        break;
    }
    put_u8(b, p != NULL);
    if (p == NULL)
        return;
    switch (a->role) {
    case CL_R_HOUT:
    case CL_R_OVAL: {
        int t = a->role == CL_R_HOUT ? CL_T_PTR : a->ptype;
        uint64_t post = done ? cl_load(p, t) : 0;
        put_u8(b, done);
        put_u64(b, post);
        if (done && a->kind == CL_K_TINFO && post != 0) {
            uint64_t len = 0;
            void *canon = cl_tinfo_canon((const void *)(uintptr_t)post, &len);
            struct cl_buf *cb = canon != NULL ? buf_add(bl, i, 0, 1, canon, len, true) : NULL;
            if (cb != NULL)
                cb->owned = true;
            else
                free(canon);
        }
        return;
    }
    case CL_R_HINOUT:
    case CL_R_IOVAL:
        put_u64(b, c->pre[i]);
        put_u8(b, done);
        put_u64(b, done ? cl_load(p, a->role == CL_R_HINOUT ? CL_T_PTR : a->ptype) : 0);
        return;
    case CL_R_IN: {
        bool rec = c->sizes[i] <= CL_INPUT_MAX;
        put_u64(b, c->sizes[i]);
        put_u8(b, rec);
        if (rec)
            buf_add(bl, i, 0, 0, p, c->sizes[i], true);
        return;
    }
    case CL_R_OUT: {
        bool rec = done && !(a->flags & CL_A_KEEP) && c->sizes[i] <= CL_INPUT_MAX;
        put_u64(b, c->sizes[i]);
        put_u8(b, rec);
        if (rec)
            buf_add(bl, i, 0, 1, p, c->sizes[i], c->sizes[i] <= keep_max);
        return;
    }
    case CL_R_BATCH_IN:
    case CL_R_BATCH_OUT:
        enc_batch(b, bl, i, p, c->sizes[i], a->role == CL_R_BATCH_OUT, done, keep_max);
        return;
    default:
        return;
    }
}

bool cl_encode(const struct cl_call *c, const struct cl_fn *fn, uint64_t ret, bool done,
               uint64_t keep_max, struct cl_bytes *out, struct cl_buf **bufs, size_t *nbufs)
{
    struct buf_list bl = {0};
    put_u8(out, CL_FORMAT_VERSION);
    put_u8(out, fn->nargs);
    for (uint32_t i = 0; i < fn->nargs; i++)
        enc_arg(out, &bl, c, &fn->args[i], i, done, keep_max);
    if (fn->ret == CL_RET_STR)
        enc_str(out, (const char *)(uintptr_t)ret);
    if (out->failed || bl.failed) {
        cl_bufs_free(bl.v, bl.n);
        return false;
    }
    *bufs = bl.v;
    *nbufs = bl.n;
    return true;
}

/* ---- reading ---- */

/* A bounds-checked cursor over a blob. */
struct cur {
    const uint8_t *p; /* next byte */
    const uint8_t *end; /* one past the last */
    bool bad;         /* a read ran past the end */
};

static bool get(struct cur *c, void *dst, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        memset(dst, 0, n);
        return false;
    }
    memcpy(dst, c->p, n);
    c->p += n;
    return true;
}

static uint8_t get_u8(struct cur *c)
{
    uint8_t v;
    get(c, &v, 1);
    return v;
}

static uint32_t get_u32(struct cur *c)
{
    uint8_t x[4];
    get(c, x, 4);
    return (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
}

static uint64_t get_u64(struct cur *c)
{
    uint8_t x[8];
    get(c, x, 8);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | x[i];
    return v;
}

static bool get_flag(struct cur *c)
{
    uint8_t v = get_u8(c);
    if (v > 1)
        c->bad = true;
    return v == 1;
}

static void get_str(struct cur *c, bool *present, const char **s, uint32_t *len)
{
    *present = get_flag(c);
    *s = NULL;
    *len = 0;
    if (!*present)
        return;
    uint32_t n = get_u32(c);
    if (c->bad || n > CL_STR_MAX || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return;
    }
    *s = (const char *)c->p;
    *len = n;
    c->p += n;
}

static bool dec_batch(struct cur *c, struct cl_dec_arg *d)
{
    d->nbatches = get_u64(c);
    /* Each entry takes at least 13 bytes: bound the count by the blob. */
    if (c->bad || d->nbatches > (uint64_t)(c->end - c->p) / 13)
        return false;
    d->batches = calloc(d->nbatches ? d->nbatches : 1, sizeof *d->batches);
    if (d->batches == NULL)
        return false;
    uint32_t part = 0;
    for (uint64_t k = 0; k < d->nbatches; k++) {
        struct cl_dec_batch *bt = &d->batches[k];
        bt->tensor = get_u64(c);
        bt->nops = get_u32(c);
        bt->ops_present = get_flag(c);
        if (!bt->ops_present)
            continue;
        if (c->bad || bt->nops > (uint64_t)(c->end - c->p) / 17)
            return false;
        bt->ops = calloc(bt->nops ? bt->nops : 1, sizeof *bt->ops);
        if (bt->ops == NULL)
            return false;
        for (uint32_t j = 0; j < bt->nops; j++) {
            bt->ops[j].offset = get_u64(c);
            bt->ops[j].size = get_u64(c);
            bt->ops[j].present = get_flag(c);
            bt->ops[j].part = part++;
        }
    }
    return !c->bad;
}

static bool dec_arg(struct cur *c, const struct cl_arg *a, struct cl_dec_arg *d)
{
    if (cl_role_is_word(a->role)) {
        d->value = get_u64(c);
        d->present = d->value != 0;
        return !c->bad;
    }
    switch (a->role) {
    case CL_R_STR:
        get_str(c, &d->present, &d->str, &d->len);
        return !c->bad;
    default:
        break;
    }
    d->present = get_flag(c);
    if (!d->present)
        return !c->bad;
    switch (a->role) {
    case CL_R_HINOUT:
    case CL_R_IOVAL:
        d->pre = get_u64(c);
        __attribute__((fallthrough)); /* then what an out value has */
    case CL_R_HOUT:
    case CL_R_OVAL:
        d->written = get_flag(c);
        d->post = get_u64(c);
        break;
    case CL_R_IN:
    case CL_R_OUT:
        d->size = get_u64(c);
        d->written = get_flag(c);
        break;
    case CL_R_BATCH_IN:
    case CL_R_BATCH_OUT:
        return dec_batch(c, d);
    default:
        c->bad = true;
    }
    return !c->bad;
}

bool cl_decode(const struct cl_fn *fn, const uint8_t *p, size_t n, struct cl_dec *out)
{
    memset(out, 0, sizeof *out);
    out->fn = fn;
    struct cur c = {p, p + n, false};
    uint8_t version = get_u8(&c), nargs = get_u8(&c);
    if (c.bad || version != CL_FORMAT_VERSION || nargs != fn->nargs) {
        LOG_ERROR("STORE", "%s: argument record of version %u with %u arguments (expected %u, %u)",
                  fn->name, version, nargs, CL_FORMAT_VERSION, fn->nargs);
        return false;
    }
    for (uint32_t i = 0; i < fn->nargs; i++) {
        if (!dec_arg(&c, &fn->args[i], &out->a[i])) {
            LOG_ERROR("STORE", "%s: argument %s is truncated or malformed", fn->name,
                      fn->args[i].name);
            cl_dec_free(out);
            return false;
        }
    }
    if (fn->ret == CL_RET_STR)
        get_str(&c, &out->ret_str_present, &out->ret_str, &out->ret_len);
    if (c.bad || c.p != c.end) {
        LOG_ERROR("STORE", "%s: argument record has %s", fn->name,
                  c.bad ? "a truncated return value" : "trailing bytes");
        cl_dec_free(out);
        return false;
    }
    return true;
}

void cl_dec_free(struct cl_dec *d)
{
    for (uint32_t i = 0; i < CL_MAX_ARGS; i++) {
        for (uint64_t k = 0; d->a[i].batches != NULL && k < d->a[i].nbatches; k++)
            free(d->a[i].batches[k].ops);
        free(d->a[i].batches);
        d->a[i].batches = NULL;
    }
}

/* ---- the table ---- */

int cl_fn_lookup(const char *name)
{
    for (int i = 0; i < CL_FN_COUNT; i++)
        if (strcmp(cl_fns[i].name, name) == 0)
            return i;
    return -1;
}

const char *cl_kind_name(int kind)
{
    static const char *const names[] = {
        "none", "tensor", "tensor set", "model", "tensor info", "sendrecv comm",
        "sendrecv request", "error tracker", "cc context", "inspect config",
        "profile options", "sys trace config", "sys trace fetch options", "memory",
    };
    return kind >= 0 && (size_t)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}
