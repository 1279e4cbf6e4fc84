/*
 * asm_word.c: typed values of directive words (see asm_int.h).
 *
 * Numbers, names, dtypes, comma lists of numbers or names, shapes, and
 * the options every variable directive takes (id=, align=, ref=, ...).
 */
#include "emu/isa/asm_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- typed values of words ----------------------------------------------- */

bool asm_tok_u64(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                 uint64_t max, uint64_t *v)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (t->str != NULL || !isa_lex_u64(s, n, v) || *v > max)
        return asm_err_at(a, t->vat, "expected an integer in 0..%llu", (unsigned long long)max);
    return true;
}

bool asm_tok_u32(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                 uint32_t max, uint32_t *v)
{
    uint64_t x;
    if (!asm_tok_u64(a, d, t, max, &x))
        return false;
    *v = (uint32_t)x;
    return true;
}

bool asm_tok_f64(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                 double *v)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (t->str != NULL || !isa_lex_f64(s, n, v) || !isfinite(*v))
        return asm_err_at(a, t->vat, "expected a finite number");
    return true;
}

/* A name: a bare word or a quoted string; malloc'd copy. */
char *asm_tok_name(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   const char *what)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    char *c = asm_dup_n(s, n);
    if (c == NULL) {
        asm_oom_at(a, t->vat);
        return NULL;
    }
    if (!asm_name_ok(c)) {
        asm_err_at(a, t->vat, "'%s' is not a usable %s", c, what);
        free(c);
        return NULL;
    }
    return c;
}

bool asm_tok_dtype(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   uint32_t *dtype)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    int dt = t->str ? -1 : isa_dtype_from_name(s, n);
    if (dt <= 0)
        return asm_err_at(a, t->vat, "unknown dtype '%.*s' (f32, bf16, f16, i32, u8, ...)",
                          (int)(n > 40 ? 40 : n), s);
    *dtype = (uint32_t)dt;
    return true;
}

bool asm_split_list(struct asm_ctx *a, const char *s, size_t n, size_t off, void *user,
                    asm_item_fn item)
{
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        size_t b = i, e = j;
        while (b < e && asm_is_blank(s[b]))
            b++;
        while (e > b && asm_is_blank(s[e - 1]))
            e--;
        if (b == e)
            return asm_err_at(a, off + b, "empty list item");
        if (!item(a, user, s + b, e - b, off + b))
            return false;
        if (j >= n)
            return true;
        i = j + 1;
    }
}

static bool u64_item(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off)
{
    struct asm_u64_list *l = user;
    uint64_t x;
    if (!isa_lex_u64(s, n, &x) || x > l->max)
        return asm_err_at(a, off, "expected an integer in 0..%llu", (unsigned long long)l->max);
    if (l->n == l->max_items)
        return asm_err_at(a, off, "more than %zu items", l->max_items);
    if (!grow_array((void **)&l->v, l->n + 1, &l->cap, sizeof *l->v, 16))
        return asm_oom_at(a, off);
    l->v[l->n++] = x;
    return true;
}

/* "a,b,c" (or "[a, b, c]" when brackets) as u64 values. */
bool asm_tok_u64_list(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      bool brackets, struct asm_u64_list *l)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    size_t off = t->vat;
    if (brackets) {
        if (t->str || n < 2 || s[0] != '[' || s[n - 1] != ']')
            return asm_err_at(a, t->vat, "expected [n, n, ...]");
        s++;
        n -= 2;
        off++;
        size_t k = 0;
        while (k < n && asm_is_blank(s[k]))
            k++;
        if (k == n)
            return true;  /* [] */
    }
    if (t->str)
        return asm_err_at(a, t->vat, "expected a list of integers");
    return asm_split_list(a, s, n, off, l, u64_item);
}

bool asm_tok_u32_array(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       uint32_t **out, uint32_t *count)
{
    struct asm_u64_list l = {.max = UINT32_MAX, .max_items = 1u << 20};
    bool ok = asm_tok_u64_list(a, d, t, false, &l);
    *out = NULL;
    *count = 0;
    if (ok && l.n > 0) {
        *out = malloc(l.n * sizeof **out);
        if (*out == NULL)
            ok = asm_oom_at(a, t->vat);
        for (size_t i = 0; ok && i < l.n; i++)
            (*out)[i] = (uint32_t)l.v[i];
        if (ok)
            *count = (uint32_t)l.n;
    }
    free(l.v);
    return ok;
}

static bool name_push(struct asm_ctx *a, struct asm_name_list *l, const char *s, size_t n,
                      size_t off)
{
    if (!grow_array((void **)&l->v, l->n + 1, &l->cap, sizeof *l->v, 16) ||
        (l->v[l->n] = asm_dup_n(s, n)) == NULL)
        return asm_oom_at(a, off);
    if (!asm_name_ok(l->v[l->n])) {
        free(l->v[l->n]);
        return asm_err_at(a, off, "'%.*s' is not a usable name", (int)n, s);
    }
    l->n++;
    return true;
}

/* One item of a comma list: a name without quotes, brackets or '='. */
static bool name_item(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++)
        if (strchr("\"\\[]=;#", s[i]) != NULL)
            return asm_err_at(a, off + i, "'%c' in a list item (quote a single name instead)",
                              s[i]);
    return name_push(a, user, s, n, off);
}

void asm_name_list_free(struct asm_name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

bool asm_tok_names(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   struct asm_name_list *l)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (t->str != NULL)
        return name_push(a, l, s, n, t->vat);
    return asm_split_list(a, s, n, t->vat, l, name_item);
}

/* ---- common variable options --------------------------------------------- */

static bool tok_ops_json(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                         char **out)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY, &je);
    if (j == NULL)
        return asm_err_at(a, t->vat, "ops is not JSON: %s", je.text);
    if (!json_is_array(j)) {
        json_decref(j);
        return asm_err_at(a, t->vat, "ops is a JSON array");
    }
    *out = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return *out != NULL || asm_oom_at(a, t->vat);
}

static bool var_ref_of(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       uint32_t *id)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    uint64_t x;
    if (t->str == NULL && isa_lex_u64(s, n, &x) && x <= UINT32_MAX) {
        *id = (uint32_t)x;
        return true;
    }
    char name[ASM_NAME_MAX + 1];
    if (n > ASM_NAME_MAX)
        return asm_err_at(a, t->vat, "name too long");
    memcpy(name, s, n);
    name[n] = '\0';
    const struct neff_var *v = neff_sg_find_var(asm_cur_sg(a)->sg, name);
    if (v == NULL)
        return asm_err_at(a, t->vat, "no variable '%s' declared before", name);
    *id = v->var_id;
    return true;
}

bool asm_take_var_opts(struct asm_ctx *a, struct asm_dir *d, struct asm_var_opts *o)
{
    struct asm_tok *t;
    uint64_t x;
    if ((t = asm_take_opt(d, "id")) != NULL) {
        if (!asm_tok_u32(a, d, t, UINT32_MAX, &o->id))
            return false;
        o->has_id = true;
    }
    if ((t = asm_take_opt(d, "align")) != NULL && !asm_tok_u64(a, d, t, INT64_MAX, &o->align))
        return false;
    if ((t = asm_take_opt(d, "fabric_path")) != NULL &&
        (o->fabric = asm_tok_name(a, d, t, "fabric path")) == NULL)
        return false;
    if ((t = asm_take_opt(d, "backing_off")) != NULL) {
        if (!asm_tok_u64(a, d, t, INT64_MAX, &x))
            return false;
        o->has_backing = true;
        o->backing = x;
    }
    if ((t = asm_take_opt(d, "ref")) != NULL) {
        if (!var_ref_of(a, d, t, &o->ref))
            return false;
        o->has_ref = true;
    }
    if ((t = asm_take_opt(d, "list")) != NULL && !asm_tok_u32_array(a, d, t, &o->list, &o->nlist))
        return false;
    if ((t = asm_take_opt(d, "ops")) != NULL && !tok_ops_json(a, d, t, &o->ops))
        return false;
    return true;
}

/* "[d0, d1, ...]" as a u64 shape (each dimension at most max). */
bool asm_tok_shape(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                   uint64_t max, uint64_t *shape, uint32_t *ndim)
{
    struct asm_u64_list l = {.max = max, .max_items = NEFF_IO_MAX_DIMS};
    bool ok = asm_tok_u64_list(a, d, t, true, &l);
    for (size_t i = 0; ok && i < l.n; i++)
        shape[i] = l.v[i];
    *ndim = (uint32_t)l.n;
    free(l.v);
    return ok;
}
