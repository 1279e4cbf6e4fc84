/*
 * neff_load.c: builds a neff_model from a neff_file by parsing neff.json,
 * each sgNN/def.json and each engine JSON with jansson. Unknown keys are
 * ignored; keys that are read must have the documented JSON type. Every
 * error is one "NEFF" log line naming the member, the object and the key.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_model.h"
#include "emu/neff/neff_model_int.h"

/* Where a JSON value sits, for log lines. */
struct jw {
    const char *member;                 /* tar member, e.g. "sg00/def.json" */
    const char *obj;                    /* object inside it, e.g. "var 'w'" */
};

static emu_status jerr(const struct jw *w, const char *key, const char *why)
{
    LOG_ERROR("NEFF", "%s: %s: key '%s': %s", w->member, w->obj, key, why);
    return EMU_INVALID;
}

static emu_status joom(const struct jw *w)
{
    LOG_ERROR("NEFF", "%s: %s: out of memory", w->member, w->obj);
    return EMU_RESOURCE;
}

/* The value of key, or NULL when absent (JSON null counts as absent). */
static json_t *jfind(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_null(v) ? NULL : v;
}

static emu_status jmissing(const struct jw *w, const char *key, bool req)
{
    return req ? jerr(w, key, "missing") : EMU_OK;
}

/* Unsigned integer no larger than max; *present (may be NULL) tells if found. */
static emu_status jget_uint(const struct jw *w, json_t *o, const char *key, bool req,
                            uint64_t max, uint64_t *out, bool *present)
{
    json_t *v = jfind(o, key);
    if (present)
        *present = v != NULL;
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_integer(v))
        return jerr(w, key, "must be an integer");
    json_int_t x = json_integer_value(v);
    if (x < 0 || (uint64_t)x > max)
        return jerr(w, key, "integer out of range");
    *out = (uint64_t)x;
    return EMU_OK;
}

static emu_status jget_u64(const struct jw *w, json_t *o, const char *key, bool req,
                           uint64_t *out, bool *present)
{
    return jget_uint(w, o, key, req, UINT64_MAX, out, present);
}

static emu_status jget_u32(const struct jw *w, json_t *o, const char *key, bool req,
                           uint32_t *out, bool *present)
{
    uint64_t x = *out;
    emu_status st = jget_uint(w, o, key, req, UINT32_MAX, &x, present);
    *out = (uint32_t)x;
    return st;
}

static emu_status jget_bool(const struct jw *w, json_t *o, const char *key, bool *out)
{
    json_t *v = jfind(o, key);
    if (v == NULL)
        return EMU_OK;
    if (!json_is_boolean(v))
        return jerr(w, key, "must be true or false");
    *out = json_is_true(v);
    return EMU_OK;
}

static emu_status jget_double(const struct jw *w, json_t *o, const char *key, bool req,
                              double *out)
{
    json_t *v = jfind(o, key);
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_number(v))
        return jerr(w, key, "must be a number");
    *out = json_number_value(v);
    return EMU_OK;
}

/* A string, copied into *out (which must be NULL on entry). */
static emu_status jget_str(const struct jw *w, json_t *o, const char *key, bool req, char **out)
{
    json_t *v = jfind(o, key);
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_string(v))
        return jerr(w, key, "must be a string");
    *out = strdup(json_string_value(v));
    return *out ? EMU_OK : joom(w);
}

/* A dtype name; absent leaves *out unchanged. */
static emu_status jget_dtype(const struct jw *w, json_t *o, const char *key, bool req,
                             uint32_t *out)
{
    json_t *v = jfind(o, key);
    if (v == NULL)
        return jmissing(w, key, req);
    if (!json_is_string(v))
        return jerr(w, key, "must be a string");
    if (!neff_dtype_parse(json_string_value(v), out))
        return jerr(w, key, "unknown dtype name");
    return EMU_OK;
}

/* An object or array (typed), or NULL when absent. */
static emu_status jget_typed(const struct jw *w, json_t *o, const char *key, bool req,
                             bool want_array, json_t **out)
{
    json_t *v = jfind(o, key);
    *out = NULL;
    if (v == NULL)
        return jmissing(w, key, req);
    if (want_array ? !json_is_array(v) : !json_is_object(v))
        return jerr(w, key, want_array ? "must be an array" : "must be an object");
    *out = v;
    return EMU_OK;
}

/* Array of unsigned ints (each <= max) with at most max_n entries. */
static emu_status jget_uint_array(const struct jw *w, json_t *o, const char *key, bool req,
                                  uint64_t max, size_t max_n, uint64_t **out, uint32_t *n)
{
    json_t *a;
    emu_status st = jget_typed(w, o, key, req, true, &a);
    *out = NULL;
    *n = 0;
    if (st != EMU_OK || a == NULL)
        return st;
    size_t len = json_array_size(a);
    if (len > max_n)
        return jerr(w, key, "array has too many entries");
    uint64_t *v = malloc((len + 1) * sizeof *v);
    if (v == NULL)
        return joom(w);
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(a, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 ||
            (uint64_t)json_integer_value(e) > max) {
            free(v);
            return jerr(w, key, "entries must be non-negative integers in range");
        }
        v[i] = (uint64_t)json_integer_value(e);
    }
    *out = v;
    *n = (uint32_t)len;
    return EMU_OK;
}

static emu_status jget_u32_array(const struct jw *w, json_t *o, const char *key, bool req,
                                 size_t max_n, uint32_t **out, uint32_t *n)
{
    uint64_t *v;
    emu_status st = jget_uint_array(w, o, key, req, UINT32_MAX, max_n, &v, n);
    *out = NULL;
    if (st != EMU_OK || v == NULL)
        return st;
    uint32_t *r = malloc((*n + 1) * sizeof *r);
    if (r == NULL) {
        free(v);
        *n = 0;
        return joom(w);
    }
    for (uint32_t i = 0; i < *n; i++)
        r[i] = (uint32_t)v[i];
    free(v);
    *out = r;
    return EMU_OK;
}

static emu_status jget_str_array(const struct jw *w, json_t *o, const char *key, char ***out,
                                 uint32_t *n)
{
    json_t *a;
    emu_status st = jget_typed(w, o, key, false, true, &a);
    *out = NULL;
    *n = 0;
    if (st != EMU_OK || a == NULL)
        return st;
    size_t len = json_array_size(a);
    if (len >= UINT32_MAX)
        return jerr(w, key, "array has too many entries");
    char **v = calloc(len + 1, sizeof *v);
    if (v == NULL)
        return joom(w);
    *out = v;
    for (size_t i = 0; i < len; i++) {
        json_t *e = json_array_get(a, i);
        if (!json_is_string(e))
            return jerr(w, key, "entries must be strings");
        if ((v[i] = strdup(json_string_value(e))) == NULL)
            return joom(w);
        *n = (uint32_t)(i + 1);
    }
    return EMU_OK;
}

/* Parse a member as a JSON object. Missing members are errors when req. */
static emu_status json_member(const struct neff_file *f, const char *name, bool req,
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
static bool sg_path(char *buf, size_t cap, const char *sg, const char *rel, const struct jw *w,
                    const char *key)
{
    int n = snprintf(buf, cap, "%s/%s", sg, rel);
    size_t len = strlen(rel);
    bool dotdot = strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0 ||
                  strstr(rel, "/../") != NULL || (len >= 3 && strcmp(rel + len - 3, "/..") == 0);
    if (n < 0 || (size_t)n >= cap || rel[0] == '/' || rel[0] == '\0' || dotdot) {
        jerr(w, key, "not a usable relative file name");
        return false;
    }
    return true;
}

/* Find "<sg>/<rel>"; NULL (logged) when absent. */
static const struct neff_member *sg_member(const struct neff_file *f, const char *sg,
                                           const char *rel, const struct jw *w, const char *key)
{
    char path[NEFF_MAX_PATH + 1];
    if (!sg_path(path, sizeof path, sg, rel, w, key))
        return NULL;
    const struct neff_member *m = neff_file_find(f, path);
    if (m == NULL)
        LOG_ERROR("NEFF", "%s: %s: key '%s': member '%s' is missing", w->member, w->obj, key,
                  path);
    return m;
}

/* ---- def.json: var ---------------------------------------------------- */

/* "size": vendor compilers leave it out for the state buffer and the DGE
 * table (their extent is the hardware's, not the NEFF's). */
static emu_status var_size(const struct jw *w, json_t *o, struct neff_var *v)
{
    bool present = false;
    emu_status st = jget_u64(w, o, "size", false, &v->size, &present);
    v->no_size = !present;
    if (st == EMU_OK && !present && v->type != NEFF_VAR_STATE_BUFFER &&
        v->type != NEFF_VAR_DGE_TABLE)
        st = jerr(w, "size", "missing (only state-buffer and dge-table variables may omit it)");
    return st;
}

static emu_status var_fields(const struct jw *w, json_t *o, struct neff_var *v)
{
    char *type = NULL;
    emu_status st = jget_str(w, o, "type", true, &type);
    if (st == EMU_OK && !neff_var_type_parse(type, &v->type))
        st = jerr(w, "type", "unknown variable type");
    free(type);
    if (st == EMU_OK)
        st = jget_u32(w, o, "var_id", true, &v->var_id, NULL);
    if (st == EMU_OK)
        st = var_size(w, o, v);
    if (st == EMU_OK)
        st = jget_u64(w, o, "alignment", false, &v->alignment, NULL);
    if (st == EMU_OK)
        st = jget_str(w, o, "fabric_path", false, &v->fabric_path);
    if (st == EMU_OK)
        st = jget_str(w, o, "file_name", false, &v->file_name);
    if (st == EMU_OK)
        st = jget_u64(w, o, "backing_variable_off", false, &v->backing_variable_off,
                      &v->has_backing_off);
    if (st == EMU_OK)
        st = jget_u32(w, o, "referenced_var_id", false, &v->referenced_var_id,
                      &v->has_referenced_var);
    if (st == EMU_OK)
        st = jget_u32_array(w, o, "list", false, SIZE_MAX, &v->list, &v->n_list);
    return st;
}

static emu_status var_ops(const struct jw *w, json_t *o, struct neff_var *v)
{
    json_t *ops;
    emu_status st = jget_typed(w, o, "ops", false, true, &ops);
    if (st != EMU_OK || ops == NULL)
        return st;
    v->ops_json = json_dumps(ops, JSON_COMPACT | JSON_ENCODE_ANY);
    return v->ops_json ? EMU_OK : joom(w);
}

static emu_status var_file(const struct neff_file *f, const struct neff_subgraph *sg,
                           const struct jw *w, struct neff_var *v)
{
    if (v->type != NEFF_VAR_FILE || v->file_name == NULL)
        return EMU_OK;
    const struct neff_member *mem = sg_member(f, sg->name, v->file_name, w, "file_name");
    if (mem == NULL)
        return EMU_INVALID;
    v->file = neff_buf_ref(mem->data);
    return neff_var_set_payload(v, mem->name);
}

static emu_status var_load(const struct neff_file *f, struct neff_subgraph *sg,
                           const char *member, const char *name, json_t *o)
{
    char obj[300];
    snprintf(obj, sizeof obj, "var '%s'", name);
    struct jw w = {.member = member, .obj = obj};
    if (!json_is_object(o)) {
        LOG_ERROR("NEFF", "%s: %s: must be an object", member, obj);
        return EMU_INVALID;
    }
    struct neff_var v = {0};
    v.name = strdup(name);
    emu_status st = v.name ? var_fields(&w, o, &v) : joom(&w);
    if (st == EMU_OK)
        st = var_ops(&w, o, &v);
    if (st == EMU_OK)
        st = var_file(f, sg, &w, &v);
    if (st == EMU_OK)
        st = neff_sg_push_var(sg, &v);
    neff_var_clear(&v);
    return st;
}

/* ---- def.json: dma_queue ---------------------------------------------- */

static emu_status queue_fields(const struct jw *w, json_t *o, struct neff_queue *q)
{
    char *type = NULL;
    emu_status st = jget_str(w, o, "type", true, &type);
    if (st == EMU_OK && !neff_queue_type_parse(type, &q->type))
        st = jerr(w, "type", "unknown queue set type");
    free(type);
    q->num_queues = 1;
    if (st == EMU_OK)
        st = jget_u32(w, o, "num_queues", false, &q->num_queues, NULL);
    if (st == EMU_OK)
        st = jget_str(w, o, "owner", false, &q->owner);
    if (st == EMU_OK)
        st = jget_bool(w, o, "pinned", &q->pinned);
    if (st == EMU_OK)
        st = jget_str_array(w, o, "queue_instances", &q->instances, &q->n_instances);
    if (st == EMU_OK)
        st = jget_u32_array(w, o, "semaphore_set", false, SIZE_MAX, &q->semaphore_set,
                            &q->n_semaphore_set);
    if (st == EMU_OK)
        st = jget_u32(w, o, "semaphore", false, &q->semaphore, &q->has_semaphore);
    if (st == EMU_OK)
        st = jget_str(w, o, "fabric_path", false, &q->fabric_path);
    json_t *dyn = NULL;
    if (st == EMU_OK)
        st = jget_typed(w, o, "dynamic_dma", false, false, &dyn);
    if (st == EMU_OK && dyn != NULL &&
        (q->dynamic_dma_json = json_dumps(dyn, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
        st = joom(w);
    return st;
}

static emu_status queue_load(struct neff_subgraph *sg, const char *member, const char *name,
                             json_t *o)
{
    char obj[300];
    snprintf(obj, sizeof obj, "dma_queue '%s'", name);
    struct jw w = {.member = member, .obj = obj};
    if (!json_is_object(o)) {
        LOG_ERROR("NEFF", "%s: %s: must be an object", member, obj);
        return EMU_INVALID;
    }
    struct neff_queue q = {0};
    q.name = strdup(name);
    emu_status st = q.name ? queue_fields(&w, o, &q) : joom(&w);
    if (st == EMU_OK)
        st = neff_sg_push_queue(sg, &q);
    neff_queue_clear(&q);
    return st;
}

/* ---- engine JSON: descriptors ----------------------------------------- */

/* Read "<p>", "<p>_off", "<p>_steps", "<p>_sizes", "<p>_dtype" from o. */
static emu_status ap_load(const struct jw *w, json_t *o, const char *p, struct neff_dma_ap *ap)
{
    char k_off[16], k_steps[16], k_sizes[16], k_dtype[16];
    snprintf(k_off, sizeof k_off, "%s_off", p);
    snprintf(k_steps, sizeof k_steps, "%s_steps", p);
    snprintf(k_sizes, sizeof k_sizes, "%s_sizes", p);
    snprintf(k_dtype, sizeof k_dtype, "%s_dtype", p);
    ap->var_index = -1;
    ap->dtype = NEFF_DTYPE_UINT8;
    emu_status st = jget_str(w, o, p, true, &ap->var);
    if (st == EMU_OK)
        st = jget_u64(w, o, k_off, true, &ap->off, NULL);
    json_t *steps = NULL;
    if (st == EMU_OK)
        st = jget_typed(w, o, k_steps, true, true, &steps);
    uint64_t *sizes = NULL;
    uint32_t n = 0;
    if (st == EMU_OK)
        st = jget_uint_array(w, o, k_sizes, true, UINT64_MAX, NEFF_AP_MAX_DIMS, &sizes, &n);
    if (st == EMU_OK && (n == 0 || json_array_size(steps) != n))
        st = jerr(w, k_steps, "steps and sizes need the same 1 to 4 entries");
    for (uint32_t i = 0; st == EMU_OK && i < n; i++) {
        json_t *e = json_array_get(steps, i);
        if (!json_is_integer(e))
            st = jerr(w, k_steps, "entries must be integers");
        else
            ap->steps[i] = (int64_t)json_integer_value(e);
        ap->sizes[i] = sizes[i];
    }
    free(sizes);
    ap->ndim = n;
    if (st == EMU_OK)
        st = jget_dtype(w, o, k_dtype, false, &ap->dtype);
    return st;
}

static emu_status desc_sources(const struct jw *w, json_t *dj, struct neff_dma_desc *d)
{
    json_t *arr;
    emu_status st = jget_typed(w, dj, "from_arr", false, true, &arr);
    if (st != EMU_OK)
        return st;
    size_t n = arr ? json_array_size(arr) : 1;
    if (arr && (n == 0 || n > NEFF_MAX_CCE_SOURCES))
        return jerr(w, "from_arr", "needs 1 to 16 entries");
    d->cce = arr != NULL;
    d->from = calloc(n, sizeof *d->from);
    if (d->from == NULL)
        return joom(w);
    for (size_t i = 0; i < n; i++)
        d->from[i].var_index = -1;
    d->n_from = (uint32_t)n;
    if (!arr)
        return ap_load(w, dj, "from", &d->from[0]);
    for (size_t i = 0; i < n && st == EMU_OK; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e))
            return jerr(w, "from_arr", "entries must be objects");
        st = ap_load(w, e, "from", &d->from[i]);
    }
    return st;
}

/* Op-specific desc fields: fma scale, min/max constant, transpose. */
static emu_status desc_op_fields(const struct jw *w, json_t *dj, struct neff_dma_desc *d)
{
    emu_status st = EMU_OK;
    d->scale = 1.0;
    d->scale_dtype = NEFF_DTYPE_FLOAT32;
    if (d->op == NEFF_DMA_FMA) {
        st = jget_double(w, dj, "scale", false, &d->scale);
        if (st == EMU_OK)
            st = jget_dtype(w, dj, "scale_dtype", false, &d->scale_dtype);
    }
    if (st == EMU_OK)
        st = jget_dtype(w, dj, "constant_dtype", false, &d->constant_dtype);
    if (st == EMU_OK && d->constant_dtype != NEFF_DTYPE_NONE)
        st = jget_double(w, dj, "constant", true, &d->constant);
    uint32_t *shape = NULL, n = 0;
    if (st == EMU_OK)
        st = jget_u32_array(w, dj, "transpose_shape", false, NEFF_AP_MAX_DIMS, &shape, &n);
    if (st == EMU_OK && shape != NULL) {
        if (n != NEFF_AP_MAX_DIMS)
            st = jerr(w, "transpose_shape", "needs exactly 4 entries");
        else
            memcpy(d->transpose_shape, shape, sizeof d->transpose_shape);
        d->has_transpose_shape = true;
    }
    free(shape);
    if (st == EMU_OK)
        st = jget_u32(w, dj, "transpose_element_size", false, &d->transpose_element_size, NULL);
    return st;
}

static emu_status desc_body(const struct jw *w, json_t *dj, struct neff_dma_desc *d)
{
    char *op = NULL;
    emu_status st = jget_str(w, dj, "op", false, &op);
    if (st == EMU_OK && op != NULL && !neff_dma_op_parse(op, &d->op))
        st = jerr(w, "op", "unknown DMA op");
    free(op);
    if (st == EMU_OK)
        st = desc_sources(w, dj, d);
    if (st == EMU_OK)
        st = ap_load(w, dj, "to", &d->to);
    if (st == EMU_OK)
        st = jget_u32(w, dj, "num_tiling_dimensions", false, &d->num_tiling_dimensions,
                      &d->has_tiling_dims);
    if (st == EMU_OK)
        st = desc_op_fields(w, dj, d);
    return st;
}

static emu_status desc_fields(const struct jw *w, json_t *o, struct neff_dma_desc *d)
{
    emu_status st = jget_u32(w, o, "id", true, &d->id, NULL);
    if (st == EMU_OK)
        st = jget_str(w, o, "queue", false, &d->queue);
    if (st == EMU_OK)
        st = jget_str(w, o, "instance_name", false, &d->instance_name);
    if (st == EMU_OK)
        st = jget_str(w, o, "function_start", false, &d->function_start);
    if (st == EMU_OK)
        st = jget_bool(w, o, "section_start_desc", &d->section_start_desc);
    if (st == EMU_OK)
        st = jget_u32(w, o, "event", false, &d->event, &d->has_event);
    if (st == EMU_OK)
        st = jget_u32(w, o, "semaphore", false, &d->semaphore, &d->has_semaphore);
    if (st == EMU_OK)
        st = jget_u32_array(w, o, "remote_semaphores", false, SIZE_MAX, &d->remote_semaphores,
                            &d->n_remote_semaphores);
    json_t *dj = NULL;
    if (st == EMU_OK)
        st = jget_typed(w, o, "desc", true, false, &dj);
    if (st == EMU_OK) {
        char obj[64];
        snprintf(obj, sizeof obj, "%s.desc", w->obj);
        struct jw wd = {.member = w->member, .obj = obj};
        st = desc_body(&wd, dj, d);
    }
    return st;
}

static emu_status desc_load(struct neff_subgraph *sg, enum neff_engine e, const char *member,
                            size_t index, json_t *o)
{
    char obj[48];
    snprintf(obj, sizeof obj, "dma[%zu]", index);
    struct jw w = {.member = member, .obj = obj};
    if (!json_is_object(o)) {
        LOG_ERROR("NEFF", "%s: %s: must be an object", member, obj);
        return EMU_INVALID;
    }
    struct neff_dma_desc d = {0};
    d.to.var_index = -1;
    emu_status st = desc_fields(&w, o, &d);
    if (st == EMU_OK)
        st = neff_sg_push_desc(sg, e, &d);
    neff_desc_clear(&d);
    return st;
}

/* ---- def.json: engine sections ---------------------------------------- */

/* The vendor engine JSON names its stream ("instr"); def.json's
 * "<engine>_instr" wins, and when both are given they must agree. */
static emu_status engine_json_instr(const struct jw *wj, json_t *j, struct neff_engine_sec *s)
{
    char *instr = NULL;
    emu_status st = jget_str(wj, j, "instr", false, &instr);
    if (st == EMU_OK && instr != NULL && s->bin_file != NULL &&
        strcmp(instr, s->bin_file) != 0)
        st = jerr(wj, "instr", "names another member than def.json's <engine>_instr");
    if (st == EMU_OK && instr != NULL && s->bin_file == NULL) {
        s->bin_file = instr;
        instr = NULL;
    }
    free(instr);
    return st;
}

static emu_status engine_json_load(const struct neff_file *f, struct neff_subgraph *sg,
                                   enum neff_engine e, const struct jw *w, const char *key)
{
    struct neff_engine_sec *s = &sg->eng[e];
    const struct neff_member *mem = sg_member(f, sg->name, s->json_file, w, key);
    if (mem == NULL)
        return EMU_INVALID;
    json_t *j;
    emu_status st = json_member(f, mem->name, true, &j);
    if (st != EMU_OK)
        return st;
    struct jw wj = {.member = mem->name, .obj = "top level"};
    json_t *dma;
    st = jget_typed(&wj, j, "dma", false, true, &dma);
    for (size_t i = 0; st == EMU_OK && dma != NULL && i < json_array_size(dma); i++)
        st = desc_load(sg, e, mem->name, i, json_array_get(dma, i));
    if (st == EMU_OK)
        st = jget_str_array(&wj, j, "activation_function_sets", &s->act_func_sets,
                            &s->n_act_func_sets);
    if (st == EMU_OK && s->by_ref)
        st = engine_json_instr(&wj, j, s);
    json_decref(j);
    return st;
}

/* The stream member named by bin_file, referenced into the section. */
static emu_status engine_code(const struct neff_file *f, struct neff_subgraph *sg,
                              struct neff_engine_sec *s, const struct jw *w, const char *key)
{
    if (s->bin_file == NULL)
        return EMU_OK;
    const struct neff_member *mem = sg_member(f, sg->name, s->bin_file, w, key);
    if (mem == NULL)
        return EMU_INVALID;
    s->code = neff_buf_ref(mem->data);
    return EMU_OK;
}

/* trnemu layout: "pe": {"bin_file": ..., "json_file": ...}. */
static emu_status engine_load_obj(const struct neff_file *f, struct neff_subgraph *sg,
                                  enum neff_engine e, const struct jw *w, json_t *o)
{
    struct neff_engine_sec *s = &sg->eng[e];
    emu_status st = jget_str(w, o, "bin_file", false, &s->bin_file);
    if (st == EMU_OK)
        st = jget_str(w, o, "json_file", false, &s->json_file);
    if (st == EMU_OK)
        st = engine_code(f, sg, s, w, "bin_file");
    if (st == EMU_OK && s->json_file != NULL)
        st = engine_json_load(f, sg, e, w, "json_file");
    return st;
}

/* Vendor layout: "pe": "PE.json" names the engine JSON, "pe_instr":
 * "PE.bin" the stream (or the engine JSON's "instr" does); the debug
 * members ("pe_dbg", "pe_asm_dbg") are not read. */
static emu_status engine_load_ref(const struct neff_file *f, struct neff_subgraph *sg,
                                  enum neff_engine e, const struct jw *w, json_t *def)
{
    struct neff_engine_sec *s = &sg->eng[e];
    char key[16];
    snprintf(key, sizeof key, "%s_instr", neff_engine_name(e));
    s->by_ref = true;
    s->json_file = strdup(json_string_value(json_object_get(def, neff_engine_name(e))));
    emu_status st = s->json_file ? jget_str(w, def, key, false, &s->bin_file) : joom(w);
    if (st == EMU_OK)
        st = engine_json_load(f, sg, e, w, neff_engine_name(e));
    if (st == EMU_OK)
        st = engine_code(f, sg, s, w, key);
    return st;
}

static emu_status engine_load(const struct neff_file *f, struct neff_subgraph *sg,
                              const char *member, enum neff_engine e, json_t *def)
{
    const char *name = neff_engine_name(e);
    json_t *sec = jfind(def, name);
    struct jw w = {.member = member, .obj = "top level"};
    if (sec == NULL)
        return EMU_OK;
    sg->eng[e].present = true;
    if (json_is_string(sec))
        return engine_load_ref(f, sg, e, &w, def);
    if (!json_is_object(sec))
        return jerr(&w, name, "must be an object or an engine JSON member name");
    char obj[32];
    snprintf(obj, sizeof obj, "section '%s'", name);
    w.obj = obj;
    return engine_load_obj(f, sg, e, &w, sec);
}

/* ---- def.json --------------------------------------------------------- */

static emu_status def_marker(struct neff_subgraph *sg, const struct jw *w, json_t *def)
{
    json_t *isa;
    emu_status st = jget_typed(w, def, "trnemu_isa", false, false, &isa);
    if (st != EMU_OK || isa == NULL)
        return st;
    struct jw wi = {.member = w->member, .obj = "trnemu_isa"};
    st = jget_u32(&wi, isa, "version", true, &sg->isa_version, NULL);
    if (st == EMU_OK && sg->isa_version == 0)
        st = jerr(&wi, "version", "must be at least 1");
    return st;
}

static emu_status def_maps(const struct neff_file *f, struct neff_subgraph *sg,
                           const struct jw *w, json_t *def)
{
    json_t *vars, *queues;
    emu_status st = jget_typed(w, def, "var", false, false, &vars);
    if (st == EMU_OK)
        st = jget_typed(w, def, "dma_queue", false, false, &queues);
    const char *key;
    json_t *val;
    if (st == EMU_OK && vars != NULL) {
        json_object_foreach(vars, key, val) {
            st = var_load(f, sg, w->member, key, val);
            if (st != EMU_OK)
                return st;
        }
    }
    if (st == EMU_OK && queues != NULL) {
        json_object_foreach(queues, key, val) {
            st = queue_load(sg, w->member, key, val);
            if (st != EMU_OK)
                return st;
        }
    }
    return st;
}

static emu_status sg_load(const struct neff_file *f, struct neff_model *m, const char *name)
{
    char member[NEFF_MAX_PATH + 16];
    snprintf(member, sizeof member, "%s/def.json", name);
    json_t *def;
    emu_status st = json_member(f, member, true, &def);
    if (st != EMU_OK)
        return st;
    struct neff_subgraph *sg = neff_model_push_sg(m, name);
    struct jw w = {.member = member, .obj = "top level"};
    st = sg ? def_marker(sg, &w, def) : EMU_RESOURCE;
    if (st == EMU_OK)
        st = def_maps(f, sg, &w, def);
    for (int e = 0; st == EMU_OK && e < NEFF_ENG_COUNT; e++)
        st = engine_load(f, sg, member, (enum neff_engine)e, def);
    json_decref(def);
    return st;
}

/* ---- neff.json: subgraph list and I/O tensors ------------------------- */

static int sg_name_cmp(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    size_t lx = strlen(x), ly = strlen(y);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(x, y);
}

/* Without a "subgraphs" list: every top-level "<dir>/def.json", sorted. */
static emu_status sg_scan(const struct neff_file *f, char ***names, uint32_t *n)
{
    char **v = calloc(f->n_members + 1, sizeof *v);
    if (v == NULL) {
        LOG_ERROR("NEFF", "out of memory");
        return EMU_RESOURCE;
    }
    *names = v;
    for (size_t i = 0; i < f->n_members; i++) {
        const char *nm = f->members[i].name;
        const char *slash = strchr(nm, '/');
        if (slash == NULL || strcmp(slash, "/def.json") != 0)
            continue;
        if ((v[*n] = strndup(nm, (size_t)(slash - nm))) == NULL) {
            LOG_ERROR("NEFF", "out of memory");
            return EMU_RESOURCE;
        }
        (*n)++;
    }
    qsort(v, *n, sizeof *v, sg_name_cmp);
    return EMU_OK;
}

/* Append a kelf graph's name to *names after checking that its
 * definition is "<name>/def.json" (the directory is the subgraph). */
static emu_status kelf_graph(const struct jw *w, json_t *g, char **names, uint32_t *n)
{
    char *name = NULL, *def = NULL;
    emu_status st = json_is_object(g) ? jget_str(w, g, "name", true, &name)
                                      : jerr(w, "graphs", "entries must be objects");
    if (st == EMU_OK)
        st = jget_str(w, g, "definition", true, &def);
    size_t ln = name ? strlen(name) : 0;
    if (st == EMU_OK && (strncmp(def, name, ln) != 0 || strcmp(def + ln, "/def.json") != 0))
        st = jerr(w, "definition", "must be \"<name>/def.json\"");
    if (st == EMU_OK) {
        names[(*n)++] = name;
        name = NULL;
    }
    free(name);
    free(def);
    return st;
}

/* Vendor layout: the subgraphs are the "graphs" of a kelf-N.json member. */
static emu_status kelf_list(const struct neff_file *f, const char *kelf, char ***names,
                            uint32_t *n)
{
    json_t *kj;
    emu_status st = json_member(f, kelf, true, &kj);
    if (st != EMU_OK)
        return st;
    struct jw w = {.member = kelf, .obj = "top level"};
    json_t *graphs;
    st = jget_typed(&w, kj, "graphs", true, true, &graphs);
    char **v = NULL;
    if (st == EMU_OK && (v = calloc(json_array_size(graphs) + 1, sizeof *v)) == NULL)
        st = joom(&w);
    *names = v;
    for (size_t i = 0; st == EMU_OK && i < json_array_size(graphs); i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "graphs[%zu]", i);
        struct jw wg = {.member = kelf, .obj = obj};
        st = kelf_graph(&wg, json_array_get(graphs, i), v, n);
    }
    json_decref(kj);
    return st;
}

/* The kelf member the neff.json graph's "tvm_op" node names, or NULL. */
static emu_status kelf_name(json_t *nj, const char **kelf)
{
    json_t *nodes = json_object_get(nj, "nodes"), *node;
    size_t i;
    *kelf = NULL;
    if (nodes != NULL && !json_is_array(nodes)) {
        LOG_ERROR("NEFF", "neff.json: top level: key 'nodes': must be an array");
        return EMU_INVALID;
    }
    json_array_foreach(nodes, i, node) {
        json_t *k = json_object_get(json_object_get(node, "attrs"), "kelf");
        if (k == NULL)
            continue;
        if (!json_is_string(k) || *kelf != NULL) {
            LOG_ERROR("NEFF", "neff.json: nodes[%zu]: key 'kelf': %s", i,
                      *kelf ? "a second kelf (one per NEFF is supported)" : "must be a string");
            return EMU_INVALID;
        }
        *kelf = json_string_value(k);
    }
    return EMU_OK;
}

/* The subgraphs in load order: neff.json "subgraphs" (trnemu layout),
 * else the kelf its graph names (vendor layout), else a directory scan. */
static emu_status sg_list(const struct neff_file *f, json_t *nj, char ***names, uint32_t *n)
{
    struct jw w = {.member = "neff.json", .obj = "top level"};
    json_t *list = NULL;
    const char *kelf = NULL;
    *names = NULL;
    *n = 0;
    if (nj != NULL) {
        emu_status st = jget_typed(&w, nj, "subgraphs", false, true, &list);
        if (st == EMU_OK && list == NULL)
            st = kelf_name(nj, &kelf);
        if (st != EMU_OK)
            return st;
    }
    if (list != NULL)
        return jget_str_array(&w, nj, "subgraphs", names, n);
    if (kelf != NULL)
        return kelf_list(f, kelf, names, n);
    return sg_scan(f, names, n);
}

static emu_status io_entry(const struct jw *w, json_t *o, bool is_output, struct neff_io *io)
{
    io->is_output = is_output;
    emu_status st = jget_str(w, o, "name", true, &io->name);
    if (st == EMU_OK)
        st = jget_dtype(w, o, "dtype", true, &io->dtype);
    if (st == EMU_OK)
        st = jget_u32_array(w, o, "shape", true, NEFF_IO_MAX_DIMS, &io->shape, &io->ndim);
    uint64_t size = neff_dtype_size(io->dtype);
    for (uint32_t i = 0; st == EMU_OK && i < io->ndim; i++)
        if (__builtin_mul_overflow(size, (uint64_t)io->shape[i], &size))
            st = jerr(w, "shape", "size overflows 64 bits");
    io->size = size;
    if (st == EMU_OK)
        st = jget_u64(w, o, "size", false, &io->size, NULL);
    return st;
}

static emu_status io_list(struct neff_model *m, json_t *arr, bool is_output)
{
    const char *key = is_output ? "outputs" : "inputs";
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "%s[%zu]", key, i);
        struct jw w = {.member = "neff.json", .obj = obj};
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) {
            LOG_ERROR("NEFF", "neff.json: %s: must be an object", obj);
            return EMU_INVALID;
        }
        struct neff_io io = {0};
        emu_status st = io_entry(&w, o, is_output, &io);
        if (st == EMU_OK)
            st = neff_model_push_io(m, &io);
        neff_io_clear(&io);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}

/* The dtype and shape a subgraph's tensor_map.json records for an I/O
 * variable (vendor layout: "kind", "dtype", "tf_shape"); false when the
 * map has no entry for it (the caller falls back to uint8 [size]). */
static emu_status tmap_entry(json_t *tmap, const char *member, const struct neff_var *v,
                             struct neff_io *io, bool *found)
{
    json_t *o = tmap ? json_object_get(tmap, v->name) : NULL;
    *found = o != NULL;
    if (o == NULL)
        return EMU_OK;
    char obj[300];
    snprintf(obj, sizeof obj, "tensor '%s'", v->name);
    struct jw w = {.member = member, .obj = obj};
    if (!json_is_object(o))
        return jerr(&w, v->name, "must be an object");
    char *kind = NULL;
    const char *want = io->is_output ? "output" : "input";
    emu_status st = jget_str(&w, o, "kind", true, &kind);
    if (st == EMU_OK && strcmp(kind, want) != 0)
        st = jerr(&w, "kind", io->is_output ? "must be \"output\" for an output variable"
                                            : "must be \"input\" for an input variable");
    free(kind);
    if (st == EMU_OK)
        st = jget_dtype(&w, o, "dtype", true, &io->dtype);
    if (st == EMU_OK)
        st = jget_u32_array(&w, o, "tf_shape", true, NEFF_IO_MAX_DIMS, &io->shape, &io->ndim);
    uint64_t size = neff_dtype_size(io->dtype);
    for (uint32_t i = 0; st == EMU_OK && i < io->ndim; i++)
        if (__builtin_mul_overflow(size, (uint64_t)io->shape[i], &size))
            st = jerr(&w, "tf_shape", "size overflows 64 bits");
    if (st == EMU_OK && size != v->size) {
        LOG_ERROR("NEFF", "%s: %s: dtype and tf_shape give %llu bytes but def.json's variable "
                  "has %llu", member, obj, (unsigned long long)size, (unsigned long long)v->size);
        st = EMU_INVALID;
    }
    io->size = size;
    return st;
}

/* One I/O tensor for variable v: from the tensor map when it has v, else
 * uint8 of shape [size]. */
static emu_status io_from_var(struct neff_model *m, json_t *tmap, const char *member,
                              const struct neff_var *v, bool is_output)
{
    struct neff_io io = {.is_output = is_output};
    bool found;
    emu_status st = tmap_entry(tmap, member, v, &io, &found);
    if (st == EMU_OK && found) {
        if ((io.name = strdup(v->name)) == NULL) {
            LOG_ERROR("NEFF", "out of memory");
            st = EMU_RESOURCE;
        } else {
            st = neff_model_push_io(m, &io);
        }
    } else if (st == EMU_OK && v->size > UINT32_MAX) {
        LOG_ERROR("NEFF", "%s/def.json: var '%s': %llu bytes is too large to describe "
                  "without neff.json or tensor_map.json", m->sgs[0]->name, v->name,
                  (unsigned long long)v->size);
        st = EMU_INVALID;
    } else if (st == EMU_OK) {
        uint32_t shape = (uint32_t)v->size;
        st = neff_model_add_io(m, v->name, is_output, NEFF_DTYPE_UINT8, &shape, 1);
    }
    neff_io_clear(&io);
    return st;
}

/* Without an I/O list: one tensor per input (or output) variable name, in
 * subgraph and variable order, typed by the subgraph's tensor_map.json. */
static emu_status io_derive(const struct neff_file *f, struct neff_model *m, bool is_output)
{
    enum neff_var_type want = is_output ? NEFF_VAR_OUTPUT : NEFF_VAR_INPUT;
    emu_status st = EMU_OK;
    for (uint32_t s = 0; st == EMU_OK && s < m->n_sgs; s++) {
        char member[NEFF_MAX_PATH + 24];
        snprintf(member, sizeof member, "%s/tensor_map.json", m->sgs[s]->name);
        json_t *tmap = NULL;
        st = json_member(f, member, false, &tmap);
        for (uint32_t i = 0; st == EMU_OK && i < m->sgs[s]->n_vars; i++) {
            const struct neff_var *v = &m->sgs[s]->vars[i];
            if (v->type == want && neff_model_find_io(m, v->name) == NULL)
                st = io_from_var(m, tmap, member, v, is_output);
        }
        json_decref(tmap);
    }
    return st;
}

static emu_status io_load(const struct neff_file *f, struct neff_model *m, json_t *nj)
{
    struct jw w = {.member = "neff.json", .obj = "top level"};
    for (int k = 0; k < 2; k++) {
        json_t *arr = NULL;
        emu_status st = nj ? jget_typed(&w, nj, k ? "outputs" : "inputs", false, true, &arr)
                           : EMU_OK;
        if (st == EMU_OK)
            st = arr ? io_list(m, arr, k == 1) : io_derive(f, m, k == 1);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}

/* info.json (vendor): only checked to be an object with the documented
 * types; the model keeps the header's copies of its counts. */
static emu_status info_check(const struct neff_file *f)
{
    json_t *ij;
    emu_status st = json_member(f, "info.json", false, &ij);
    if (st != EMU_OK || ij == NULL)
        return st;
    struct jw w = {.member = "info.json", .obj = "top level"};
    char *tool = NULL;
    uint32_t num_tpb = 0;
    st = jget_str(&w, ij, "tool_version", false, &tool);
    if (st == EMU_OK)
        st = jget_u32(&w, ij, "num_tpb", false, &num_tpb, NULL);
    free(tool);
    json_decref(ij);
    return st;
}

/* ---- the model -------------------------------------------------------- */

static void info_from_header(struct neff_model_info *i, const struct neff_header *h)
{
    i->neff_version_major = h->neff_version_major;
    i->neff_version_minor = h->neff_version_minor;
    /* A pkg_version without a known hash is stored back as sha256. */
    i->pkg_version = h->pkg_version == NEFF_PKG_VERSION_MD5 ? NEFF_PKG_VERSION_MD5
                                                            : NEFF_PKG_VERSION_SHA256;
    memcpy(i->build_version, h->neff_build_version, sizeof h->neff_build_version);
    i->build_version[NEFF_BUILD_VERSION_SIZE] = '\0';
    memcpy(i->name, h->name, sizeof h->name);
    i->name[NEFF_NAME_SIZE] = '\0';
    memcpy(i->uuid, h->uuid, sizeof i->uuid);
    i->num_tpb = h->num_tpb;
    i->requested_tpb_count = h->requested_tpb_count;
    memcpy(i->tpb_per_node, h->tpb_per_node, sizeof i->tpb_per_node);
    i->feature_bits = h->feature_bits;
    i->lnc_size = h->lnc_size;
}

static emu_status model_build(const struct neff_file *f, struct neff_model *m)
{
    json_t *nj = NULL;
    emu_status st = json_member(f, "neff.json", false, &nj);
    char **names = NULL;
    uint32_t n = 0;
    if (st == EMU_OK)
        st = sg_list(f, nj, &names, &n);
    if (st == EMU_OK && n == 0) {
        LOG_ERROR("NEFF", "neff.json: subgraphs: the NEFF has no subgraph (no sgNN/def.json)");
        st = EMU_INVALID;
    }
    for (uint32_t i = 0; st == EMU_OK && i < n; i++) {
        for (uint32_t j = 0; j < i; j++) {
            if (strcmp(names[i], names[j]) == 0) {
                LOG_ERROR("NEFF", "neff.json: subgraphs: '%s' is listed twice", names[i]);
                st = EMU_INVALID;
                break;
            }
        }
        if (st == EMU_OK && (names[i][0] == '\0' || strchr(names[i], '/') != NULL ||
                                  strlen(names[i]) > 255)) {
            LOG_ERROR("NEFF", "neff.json: subgraphs: '%s' is not a plain directory name",
                      names[i]);
            st = EMU_INVALID;
        }
        if (st == EMU_OK)
            st = sg_load(f, m, names[i]);
    }
    for (uint32_t i = 0; names != NULL && i <= n; i++)
        free(names[i]);
    free(names);
    if (st == EMU_OK)
        st = io_load(f, m, nj);
    if (st == EMU_OK)
        st = info_check(f);
    json_decref(nj);
    return st;
}

emu_status neff_model_load(const struct neff_file *f, struct neff_model **out)
{
    if (f == NULL || out == NULL) {
        LOG_ERROR("NEFF", "neff_model_load: NULL argument");
        return EMU_INVALID;
    }
    *out = NULL;
    struct neff_model *m = calloc(1, sizeof *m);
    if (m == NULL) {
        LOG_ERROR("NEFF", "out of memory");
        return EMU_RESOURCE;
    }
    info_from_header(&m->info, &f->hdr);
    emu_status st = model_build(f, m);
    if (st == EMU_OK)
        st = neff_model_validate(m);
    if (st != EMU_OK) {
        neff_model_free(m);
        return st;
    }
    *out = m;
    return EMU_OK;
}
