/*
 * neff_json.c: the JSON reading the NEFF loader shares (see
 * neff_load_int.h): typed getters for keys of a jansson object and the
 * parsing of a JSON member of the tarball. Every error is one "NEFF" log
 * line naming the member, the object and the key.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_load_int.h"
#include "emu/neff/neff_model.h"

emu_status neff_jerr(const struct neff_jw *w, const char *key, const char *why)
{
    LOG_ERROR("NEFF", "%s: %s: key '%s': %s", w->member, w->obj, key, why);
    return EMU_INVALID;
}

emu_status neff_jobject(const struct neff_jw *w, json_t *o)
{
    if (json_is_object(o))
        return EMU_OK;
    LOG_ERROR("NEFF", "%s: %s: must be an object", w->member, w->obj);
    return EMU_INVALID;
}

emu_status neff_joom(const struct neff_jw *w)
{
    LOG_ERROR("NEFF", "%s: %s: out of memory", w->member, w->obj);
    return EMU_RESOURCE;
}

/* The value of key, or NULL when absent (JSON null counts as absent). */
json_t *neff_jfind(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static emu_status jmissing(const struct neff_jw *w, const char *key, bool req)
{
    return req ? neff_jerr(w, key, "missing") : EMU_OK;
}

/* Unsigned integer no larger than max; *present (may be NULL) tells if found. */
static emu_status jget_uint(const struct neff_jw *w, json_t *o, const char *key, bool req,
                            uint64_t max, uint64_t *out, bool *present)
{
    json_t *v = neff_jfind(o, key);
    if (present)
        *present = v != NULL;
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_integer(v))
        return neff_jerr(w, key, "must be an integer");
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x > max)
        return neff_jerr(w, key, "integer out of range");
    *out = (uint64_t)x;
    return EMU_OK;
}

emu_status neff_jget_u64(const struct neff_jw *w, json_t *o, const char *key, bool req,
                         uint64_t *out, bool *present)
{
    return jget_uint(w, o, key, req, UINT64_MAX, out, present);
}

emu_status neff_jget_u32(const struct neff_jw *w, json_t *o, const char *key, bool req,
                         uint32_t *out, bool *present)
{
    uint64_t x = *out;
    emu_status st = jget_uint(w, o, key, req, UINT32_MAX, &x, present);
    *out = (uint32_t)x;
    return st;
}

emu_status neff_jget_bool(const struct neff_jw *w, json_t *o, const char *key, bool *out)
{
    json_t *v = neff_jfind(o, key);
    if (v == NULL)
        return EMU_OK;
    if (!json_is_boolean(v))
        return neff_jerr(w, key, "must be true or false");
    *out = json_is_true(v);
    return EMU_OK;
}

emu_status neff_jget_double(const struct neff_jw *w, json_t *o, const char *key, bool req,
                            double *out)
{
    json_t *v = neff_jfind(o, key);
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_number(v))
        return neff_jerr(w, key, "must be a number");
    *out = json_number_value(v);
    return EMU_OK;
}

/* A string, copied into *out (which must be NULL on entry). */
emu_status neff_jget_str(const struct neff_jw *w, json_t *o, const char *key, bool req, char **out)
{
    json_t *v = neff_jfind(o, key);
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_string(v))
        return neff_jerr(w, key, "must be a string");
    *out = strdup(json_string_value(v));
    return *out ? EMU_OK : neff_joom(w);
}

/* A dtype name; absent leaves *out unchanged. */
emu_status neff_jget_dtype(const struct neff_jw *w, json_t *o, const char *key, bool req,
                           uint32_t *out)
{
    json_t *v = neff_jfind(o, key);
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_string(v))
        return neff_jerr(w, key, "must be a string");
    if (!neff_dtype_parse(json_string_value(v), out))
        return neff_jerr(w, key, "unknown dtype name");
    return EMU_OK;
}

/* An object or array (typed), or NULL when absent. */
emu_status neff_jget_typed(const struct neff_jw *w, json_t *o, const char *key, bool req,
                           bool want_array, json_t **out)
{
    json_t *v = neff_jfind(o, key);
    *out = NULL;
    if (v == NULL)
        return jmissing(w, key, req);
    if (want_array ? !json_is_array(v) : !json_is_object(v))
        return neff_jerr(w, key, want_array ? "must be an array" : "must be an object");
    *out = v;
    return EMU_OK;
}

/* Array of unsigned ints (each <= max) with at most max_n entries. */
emu_status neff_jget_uint_array(const struct neff_jw *w, json_t *o, const char *key, bool req,
                                uint64_t max, size_t max_n, uint64_t **out, uint32_t *n)
{
    json_t *a;
    emu_status st = neff_jget_typed(w, o, key, req, true, &a);
    *out = NULL;
    *n = 0;
    if (st != EMU_OK || a == NULL)
        return st;
    size_t len = json_array_size(a);
    if (len > max_n)
        return neff_jerr(w, key, "array has too many entries");
    uint64_t *v = malloc((len + 1) * sizeof *v);
    if (v == NULL)
        return neff_joom(w);
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(a, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 ||
            (uint64_t)json_integer_value(e) > max) {
            free(v);
            return neff_jerr(w, key, "entries must be non-negative integers in range");
        }
        v[i] = (uint64_t)json_integer_value(e);
    }
    *out = v;
    *n = (uint32_t)len;
    return EMU_OK;
}

emu_status neff_jget_u32_array(const struct neff_jw *w, json_t *o, const char *key, bool req,
                               size_t max_n, uint32_t **out, uint32_t *n)
{
    uint64_t *v;
    emu_status st = neff_jget_uint_array(w, o, key, req, UINT32_MAX, max_n, &v, n);
    *out = NULL;
    if (st != EMU_OK || v == NULL)
        return st;
    uint32_t *r = malloc((*n + 1) * sizeof *r);
    if (r == NULL) {
        free(v);
        *n = 0;
        return neff_joom(w);
    }
    for (uint32_t i = 0; i < *n; i++)
        r[i] = (uint32_t)v[i];
    free(v);
    *out = r;
    return EMU_OK;
}

emu_status neff_jget_str_array(const struct neff_jw *w, json_t *o, const char *key, char ***out,
                               uint32_t *n)
{
    json_t *a;
    emu_status st = neff_jget_typed(w, o, key, false, true, &a);
    *out = NULL;
    *n = 0;
    if (st != EMU_OK || a == NULL)
        return st;
    size_t len = json_array_size(a);
    if (len >= UINT32_MAX)
        return neff_jerr(w, key, "array has too many entries");
    char **v = calloc(len + 1, sizeof *v);
    if (v == NULL)
        return neff_joom(w);
    *out = v;
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(a, i);
        if (!json_is_string(e))
            return neff_jerr(w, key, "entries must be strings");
        if ((v[i] = strdup(json_string_value(e))) == NULL)
            return neff_joom(w);
        *n = (uint32_t)(i + 1);
    }
    return EMU_OK;
}

/* Parse a member as a JSON object. Missing members are errors when req. */
emu_status neff_json_member(const struct neff_file *f, const char *name, bool req,
                            json_t **out)
{
    *out = NULL;
    const struct neff_member *mem = neff_file_find(f, name);
    if (mem == NULL) {
        if (req)
            LOG_ERROR("NEFF", "%s: member is missing", name);
        return req ? EMU_INVALID : EMU_OK;
    }
    json_error_t err;
    json_t *j = json_loadb((const char *)neff_buf_data(mem->data), neff_buf_size(mem->data),
                           JSON_REJECT_DUPLICATES, &err);
    if (j == NULL) {
        LOG_ERROR("NEFF", "%s: bad JSON at line %d column %d: %s", name, err.line, err.column,
                  err.text);
        return EMU_INVALID;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        LOG_ERROR("NEFF", "%s: top level is not a JSON object", name);
        return EMU_INVALID;
    }
    *out = j;
    return EMU_OK;
}

/* "<sg>/<rel>" into buf; false (logged) when too long or not relative. */
