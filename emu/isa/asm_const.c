/*
 * asm_const.c: the assembler's .const directive (see asm_int.h).
 *
 * A constant's bytes come from inline values (converted to its dtype),
 * a file (raw bytes or a .npy checked against the declared dtype and
 * shape) or hex text, and become a member of the subgraph.
 */
#include "emu/isa/asm_int.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/neff/npy.h"
#include "emu/num/numerics.h"

/* One inline value into element i of a constant. */
struct const_fill {
    uint32_t dtype;     /* element type */
    size_t esize;       /* its size */
    uint8_t *data;      /* the elements */
    uint64_t count;     /* elements wanted */
    uint64_t n;         /* elements written */
};

/* double -> float rounding to nearest, overflowing to infinity (without
 * the undefined behaviour of an out-of-range C conversion). */
static float f64_to_f32(double x)
{
    const double limit = 3.4028235677973366e38;  /* FLT_MAX + half an ulp */
    if (isfinite(x) && fabs(x) >= limit)
        return x > 0 ? INFINITY : -INFINITY;
    if (isfinite(x) && fabs(x) > FLT_MAX)
        return x > 0 ? FLT_MAX : -FLT_MAX;
    return (float)x;
}

static bool put_float(struct asm_ctx *a, const struct const_fill *f, const char *s, size_t n,
                      size_t off, uint8_t *dst)
{
    uint64_t bits;
    double x;
    if (isa_lex_bits(s, n, (unsigned)f->esize * 8, &bits)) {
        memcpy(dst, &bits, f->esize);  /* little-endian host */
        return true;
    }
    if (!isa_lex_f64(s, n, &x))
        return asm_err_at(a, off, "expected a number or bits:0x...");
    float v = f64_to_f32(x);
    uint16_t h;
    switch (f->dtype) {
    case ISA_DT_BF16: h = num_f32_to_bf16(v); memcpy(dst, &h, 2); return true;
    case ISA_DT_F16: h = num_f32_to_f16(v); memcpy(dst, &h, 2); return true;
    case ISA_DT_FP8E3: case ISA_DT_FP8E4: case ISA_DT_FP8E5:
        *dst = num_f32_to_fp8(f->dtype, v);
        return true;
    case ISA_DT_FP8E4FN: case ISA_DT_FP8E8M0:
        return num_from_f32(f->dtype, dst, v, NULL, 0) == EMU_OK;
    default: memcpy(dst, &v, 4); return true;
    }
}

static bool put_int(struct asm_ctx *a, const struct const_fill *f, const char *s, size_t n,
                    size_t off, uint8_t *dst)
{
    bool is_signed = f->dtype == ISA_DT_I8 || f->dtype == ISA_DT_I16 || f->dtype == ISA_DT_I32 ||
                     f->dtype == ISA_DT_I64;
    unsigned bits = (unsigned)f->esize * 8;
    uint64_t u;
    int64_t i;
    if (is_signed) {
        int64_t lo = bits == 64 ? INT64_MIN : -(1ll << (bits - 1));
        int64_t hi = bits == 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
        if (!isa_lex_i64(s, n, &i) || i < lo || i > hi)
            return asm_err_at(a, off, "expected an integer in %lld..%lld", (long long)lo,
                              (long long)hi);
        u = (uint64_t)i;
    } else {
        uint64_t hi = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
        if (!isa_lex_u64(s, n, &u) || u > hi)
            return asm_err_at(a, off, "expected an integer in 0..%llu", (unsigned long long)hi);
    }
    memcpy(dst, &u, f->esize);  /* little-endian host */
    return true;
}

static bool value_item(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off)
{
    struct const_fill *f = user;
    if (f->n == f->count)
        return asm_err_at(a, off, "more values than the %llu elements of the shape",
                          (unsigned long long)f->count);
    uint8_t *dst = f->data + f->n * f->esize;
    f->n++;
    return isa_dtype_is_float(f->dtype) ? put_float(a, f, s, n, off, dst)
                                        : put_int(a, f, s, n, off, dst);
}

/* "= v0, v1, ..." for a constant of dtype and count elements. */
static bool const_values(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                         struct const_fill *f)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(f->count, (uint64_t)f->esize, &bytes) || bytes > a->max_const ||
        bytes > SIZE_MAX)
        return asm_err_at(a, t->at, "constant of %llu elements is larger than the %llu-byte limit",
                          (unsigned long long)f->count, (unsigned long long)a->max_const);
    f->data = calloc(1, bytes ? (size_t)bytes : 1);
    if (f->data == NULL)
        return asm_oom_at(a, t->at);
    if (t->vn == 0 && f->count == 0)
        return true;
    if (t->vn == 0)
        return asm_err_at(a, t->at, "expected values after '='");
    if (!asm_split_list(a, d->s + t->vat, t->vn, t->vat, f, value_item))
        return false;
    if (f->n == 1 && f->count > 1) {
        for (uint64_t i = 1; i < f->count; i++)
            memcpy(f->data + i * f->esize, f->data, f->esize);
        f->n = f->count;
    }
    if (f->n != f->count)
        return asm_err_at(a, t->at, "%llu values for a shape of %llu elements (give all, or one)",
                          (unsigned long long)f->n, (unsigned long long)f->count);
    return true;
}

/* Locate a file= path: as given when absolute, else in base_dir, then in
 * the include directories. *out is malloc'd. */
static bool find_file(struct asm_ctx *a, const char *path, char **out)
{
    size_t ndirs = 1 + a->opts.n_include_dirs;
    if (path[0] == '/')
        ndirs = 1;
    for (size_t i = 0; i < ndirs; i++) {
        const char *dir = path[0] == '/' ? NULL : i == 0 ? a->opts.base_dir
                                                         : a->opts.include_dirs[i - 1];
        char *p = NULL;
        if (dir == NULL || dir[0] == '\0' ? (p = strdup(path)) == NULL
                                           : asprintf(&p, "%s/%s", dir, path) < 0)
            return false;
        FILE *fp = fopen(p, "rb");
        if (fp != NULL) {
            fclose(fp);
            *out = p;
            return true;
        }
        free(p);
    }
    *out = NULL;
    return true;
}

/* The bytes of file= into a buffer. */
static bool const_file(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       struct neff_buf **buf)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (a->opts.no_files)
        return asm_err_at(a, t->vat, "file= is not allowed here");
    char *name = asm_dup_n(s, n), *path = NULL;
    if (name == NULL || !find_file(a, name, &path)) {
        free(name);
        return asm_oom_at(a, t->vat);
    }
    if (path == NULL) {
        asm_err_at(a, t->vat, "cannot find '%s'%s", name,
                   a->opts.n_include_dirs ? " (searched the include directories too)" : "");
        free(name);
        return false;
    }
    uint8_t *data = NULL;
    size_t size = 0;
    emu_status st = asm_read_file(path, a->max_const, &data, &size);
    if (st != EMU_OK)
        asm_err_at(a, t->vat, "cannot read '%s' (%s)", path,
                   st == EMU_RESOURCE ? "out of memory" : "unreadable or too large");
    else if ((*buf = neff_buf_copy(data, size)) == NULL)
        asm_oom_at(a, t->vat);
    free(data);
    free(path);
    free(name);
    return st == EMU_OK && *buf != NULL;
}

/* bytes=HEX */
static bool const_hex(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      struct neff_buf **buf)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (t->str != NULL || n % 2 != 0)
        return asm_err_at(a, t->vat, "bytes= takes an even number of hexadecimal digits");
    if (n / 2 > a->max_const)
        return asm_err_at(a, t->vat, "constant larger than the %llu-byte limit",
                          (unsigned long long)a->max_const);
    uint8_t *p;
    *buf = neff_buf_new(n / 2, &p);
    if (*buf == NULL)
        return asm_oom_at(a, t->vat);
    for (size_t i = 0; i < n / 2; i++) {
        uint64_t x;
        if (!isa_lex_u64((char[]){'0', 'x', s[2 * i], s[2 * i + 1]}, 4, &x)) {
            neff_buf_unref(*buf);
            *buf = NULL;
            return asm_err_at(a, t->vat + 2 * i, "not a hexadecimal digit");
        }
        p[i] = (uint8_t)x;
    }
    return true;
}

/* A .npy file given with a dtype and shape must hold exactly that. */
static bool npy_matches(struct asm_ctx *a, size_t off, const struct neff_buf *buf,
                        uint32_t dtype, const uint64_t *shape, uint32_t ndim)
{
    struct npy_info info;
    if (npy_parse(neff_buf_data(buf), neff_buf_size(buf), "constant", &info) != EMU_OK)
        return asm_err_at(a, off, "the file is not a valid .npy file");
    const char *want = npy_descr_for_dtype(dtype);
    if (want == NULL || strcmp(want, info.descr) != 0)
        return asm_err_at(a, off, "the file holds '%s' data; %s needs '%s'", info.descr,
                          isa_dtype_name(dtype), want ? want : "?");
    if (info.ndim != ndim || (ndim && memcmp(info.shape, shape, ndim * sizeof *shape) != 0))
        return asm_err_at(a, off, "the file's shape differs from the declared one");
    return true;
}

/* Where a .const's bytes come from, and what they are. */
struct const_src {
    struct neff_buf *buf;  /* the member bytes */
    bool npy;              /* they are a .npy file */
};

static bool const_source(struct asm_ctx *a, struct asm_dir *d, bool typed, uint32_t dtype,
                         const uint64_t *shape, uint32_t ndim, struct const_src *c)
{
    struct asm_tok *rest = asm_take_rest(d), *tf = asm_take_opt(d, "file");
    struct asm_tok *tb = asm_take_opt(d, "bytes");
    if ((rest != NULL) + (tf != NULL) + (tb != NULL) != 1)
        return asm_err_at(a, d->name_at, ".const needs exactly one of '= values', file=, bytes=");
    if (rest != NULL) {
        if (!typed)
            return asm_err_at(a, rest->at, "inline values need a DTYPE and [SHAPE]");
        struct const_fill f = {.dtype = dtype, .esize = isa_dtype_size(dtype), .count = 1};
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(f.count, shape[i], &f.count))
                return asm_err_at(a, rest->at, "shape overflows");
        bool ok = const_values(a, d, rest, &f) &&
                  asm_npy_member(a, asm_line_pos(a, rest->at), dtype, shape, ndim, f.data,
                                 (size_t)(f.count * f.esize), &c->buf);
        free(f.data);
        c->npy = true;
        return ok;
    }
    if (tb != NULL) {
        if (typed)
            return asm_err_at(a, tb->at, "bytes= takes no DTYPE and [SHAPE]");
        return const_hex(a, d, tb, &c->buf);
    }
    if (!const_file(a, d, tf, &c->buf))
        return false;
    size_t n;
    const char *p = asm_tok_val(d, tf, &n);
    c->npy = n >= 4 && memcmp(p + n - 4, ".npy", 4) == 0;
    if (typed && c->npy)
        return npy_matches(a, tf->vat, c->buf, dtype, shape, ndim);
    if (typed) {
        uint64_t bytes = isa_dtype_size(dtype);
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(bytes, shape[i], &bytes))
                bytes = UINT64_MAX;
        if (bytes != neff_buf_size(c->buf))
            return asm_err_at(a, tf->vat, "the file has %zu bytes, the shape needs %llu",
                              neff_buf_size(c->buf), (unsigned long long)bytes);
    }
    return true;
}

bool asm_dir_const(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = asm_next_word(d), *td = asm_next_word(d), *ts = NULL, *t;
    uint64_t shape[NEFF_IO_MAX_DIMS], size = 0;
    uint32_t ndim = 0, dtype = 0;
    bool typed = td != NULL, has_size = false, ok = true;
    struct const_src c = {0};
    struct asm_var_opts o = {0};
    char *name = NULL, *member = NULL;
    if (tn == NULL)
        return asm_err_at(a, d->name_at, ".const needs a NAME");
    if (typed && ((ts = asm_next_word(d)) == NULL))
        return asm_err_at(a, td->at, "a DTYPE is followed by a [SHAPE]");
    if (typed && (!asm_tok_dtype(a, d, td, &dtype) ||
                  !asm_tok_shape(a, d, ts, UINT64_MAX, shape, &ndim)))
        return false;
    if ((name = asm_tok_name(a, d, tn, "constant name")) == NULL)
        return false;
    if ((t = asm_take_opt(d, "member")) != NULL)
        ok = (member = asm_tok_name(a, d, t, "member name")) != NULL;
    if (ok && (t = asm_take_opt(d, "size")) != NULL)
        ok = has_size = asm_tok_u64(a, d, t, INT64_MAX, &size);
    ok = ok && asm_take_var_opts(a, d, &o) && const_source(a, d, typed, dtype, shape, ndim, &c) &&
         asm_dir_done(a, d, ".const");
    if (ok && member == NULL && asprintf(&member, "%s%s", name, c.npy ? ".npy" : ".bin") < 0) {
        member = NULL;
        ok = asm_oom_at(a, tn->at);
    }
    if (ok && c.npy != (strlen(member) >= 4 && !strcmp(member + strlen(member) - 4, ".npy")))
        ok = asm_err_at(a, d->name_at, "member '%s': a .npy constant needs a name ending in .npy, "
                        "raw bytes a name that does not", member);
    ok = ok && asm_add_const(a, asm_line_pos(a, d->name_at), name, member, c.buf, has_size, size,
                             &o);
    asm_var_opts_clear(&o);
    neff_buf_unref(c.buf);
    free(member);
    free(name);
    return ok;
}
