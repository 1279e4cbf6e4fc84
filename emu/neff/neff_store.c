/*
 * neff_store.c: turns a neff_model into a neff_file: neff.json, each
 * sgNN/def.json, each engine JSON (built with jansson, keys in a fixed
 * order, optional keys only when set), the instruction streams and the
 * constants. Same model, same members, same bytes.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_model.h"
#include "emu/neff/neff_model_int.h"

/* JSON building: every helper returns false when out of memory. */

static bool jset(json_t *o, const char *key, json_t *v)
{
    return v != NULL && json_object_set_new(o, key, v) == 0;
}

static bool jset_str(json_t *o, const char *key, const char *s)
{
    return s == NULL || jset(o, key, json_string(s));
}

static bool jset_uint(json_t *o, const char *key, uint64_t v)
{
    return jset(o, key, json_integer((json_int_t)v));
}

static json_t *j_u32_array(const uint32_t *a, uint32_t n)
{
    json_t *arr = json_array();
    for (uint32_t i = 0; arr != NULL && i < n; i++) {
        if (json_array_append_new(arr, json_integer(a[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static json_t *j_str_array(char *const *a, uint32_t n)
{
    json_t *arr = json_array();
    for (uint32_t i = 0; arr != NULL && i < n; i++) {
        if (json_array_append_new(arr, json_string(a[i])) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

/* Serialize o (consumed) and add it as a member. */
static emu_status add_json(struct neff_file *f, const char *name, json_t *o)
{
    char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(o);
    if (text == NULL) {
        LOG_ERROR("NEFF", "store: %s: out of memory", name);
        return EMU_RESOURCE;
    }
    emu_status st = neff_file_add_copy(f, name, text, strlen(text));
    free(text);
    return st;
}

/* "<sg>/<rel>" or NULL (logged) when too long. */
static bool member_path(char *buf, size_t cap, const char *sg, const char *rel)
{
    int n = snprintf(buf, cap, "%s/%s", sg, rel);
    if (n < 0 || (size_t)n >= cap) {
        LOG_ERROR("NEFF", "store: %s/%s: name too long", sg, rel);
        return false;
    }
    return true;
}

/* ---- neff.json --------------------------------------------------------- */

static json_t *io_json(const struct neff_io *io)
{
    json_t *o = json_object();
    if (o && jset_str(o, "name", io->name) && jset_str(o, "dtype", neff_dtype_name(io->dtype)) &&
        jset(o, "shape", j_u32_array(io->shape, io->ndim)) && jset_uint(o, "size", io->size))
        return o;
    json_decref(o);
    return NULL;
}

static json_t *neff_json(const struct neff_model *m)
{
    json_t *o = json_object(), *sgs = json_array(), *in = json_array(), *out = json_array();
    bool ok = o && sgs && in && out;
    for (uint32_t i = 0; ok && i < m->n_sgs; i++)
        ok = json_array_append_new(sgs, json_string(m->sgs[i]->name)) == 0;
    for (uint32_t i = 0; ok && i < m->n_io; i++)
        ok = json_array_append_new(m->io[i].is_output ? out : in, io_json(&m->io[i])) == 0;
    if (ok && jset(o, "subgraphs", json_incref(sgs)) && jset(o, "inputs", json_incref(in)) &&
        jset(o, "outputs", json_incref(out))) {
        json_decref(sgs);
        json_decref(in);
        json_decref(out);
        return o;
    }
    json_decref(sgs);
    json_decref(in);
    json_decref(out);
    json_decref(o);
    return NULL;
}

/* ---- def.json ---------------------------------------------------------- */

static json_t *var_json(const struct neff_var *v)
{
    json_t *o = json_object();
    bool ok = o && jset_str(o, "type", neff_var_type_name(v->type)) &&
              jset_uint(o, "var_id", v->var_id) && (v->no_size || jset_uint(o, "size", v->size)) &&
              (v->alignment == 0 || jset_uint(o, "alignment", v->alignment)) &&
              jset_str(o, "fabric_path", v->fabric_path) &&
              jset_str(o, "file_name", v->file_name) &&
              (!v->has_backing_off || jset_uint(o, "backing_variable_off",
                                                v->backing_variable_off)) &&
              (!v->has_referenced_var || jset_uint(o, "referenced_var_id",
                                                   v->referenced_var_id)) &&
              (v->n_list == 0 || jset(o, "list", j_u32_array(v->list, v->n_list)));
    if (ok && v->ops_json != NULL)
        ok = jset(o, "ops", json_loads(v->ops_json, JSON_DECODE_ANY, NULL));
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

static json_t *queue_json(const struct neff_queue *q)
{
    json_t *o = json_object();
    bool ok = o && jset_str(o, "type", neff_queue_type_name(q->type)) &&
              jset_uint(o, "num_queues", q->num_queues) && jset_str(o, "owner", q->owner) &&
              (!q->pinned || jset(o, "pinned", json_true())) &&
              (q->n_instances == 0 ||
               jset(o, "queue_instances", j_str_array(q->instances, q->n_instances))) &&
              (q->n_semaphore_set == 0 ||
               jset(o, "semaphore_set", j_u32_array(q->semaphore_set, q->n_semaphore_set))) &&
              (!q->has_semaphore || jset_uint(o, "semaphore", q->semaphore)) &&
              jset_str(o, "fabric_path", q->fabric_path);
    if (ok && q->dynamic_dma_json != NULL)
        ok = jset(o, "dynamic_dma", json_loads(q->dynamic_dma_json, 0, NULL));
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

static json_t *engine_sec_json(const struct neff_engine_sec *s)
{
    json_t *o = json_object();
    if (o && jset_str(o, "bin_file", s->bin_file) && jset_str(o, "json_file", s->json_file))
        return o;
    json_decref(o);
    return NULL;
}

/* trnemu layout: an object; vendor layout (by_ref): "pe": "PE.json" and
 * "pe_instr": "PE.bin". */
static bool engine_sec_put(json_t *def, int e, const struct neff_engine_sec *s)
{
    const char *name = neff_engine_name((enum neff_engine)e);
    if (!s->by_ref)
        return jset(def, name, engine_sec_json(s));
    char key[16];
    snprintf(key, sizeof key, "%s_instr", name);
    return jset_str(def, name, s->json_file) && jset_str(def, key, s->bin_file);
}

static json_t *def_json(const struct neff_subgraph *sg)
{
    json_t *o = json_object(), *vars = json_object(), *queues = json_object();
    bool ok = o && vars && queues;
    if (ok && sg->isa_version > 0) {
        json_t *isa = json_object();
        ok = isa && jset_uint(isa, "version", sg->isa_version);
        ok = jset(o, "trnemu_isa", isa) && ok;
    }
    for (uint32_t i = 0; ok && i < sg->n_vars; i++)
        ok = jset(vars, sg->vars[i].name, var_json(&sg->vars[i]));
    for (uint32_t i = 0; ok && i < sg->n_queues; i++)
        ok = jset(queues, sg->queues[i].name, queue_json(&sg->queues[i]));
    ok = ok && jset(o, "var", json_incref(vars)) && jset(o, "dma_queue", json_incref(queues));
    for (int e = 0; ok && e < NEFF_ENG_COUNT; e++)
        if (sg->eng[e].present)
            ok = engine_sec_put(o, e, &sg->eng[e]);
    json_decref(vars);
    json_decref(queues);
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

/* ---- engine JSON ------------------------------------------------------- */

/* Write "<p>", "<p>_off", "<p>_steps", "<p>_sizes", "<p>_dtype". */
static bool ap_json(json_t *o, const char *p, const struct neff_dma_ap *ap)
{
    char k[16];
    json_t *steps = json_array(), *sizes = json_array();
    bool ok = steps && sizes && ap->ndim <= NEFF_AP_MAX_DIMS;
    for (uint32_t i = 0; ok && i < ap->ndim; i++)
        ok = json_array_append_new(steps, json_integer((json_int_t)ap->steps[i])) == 0 &&
             json_array_append_new(sizes, json_integer((json_int_t)ap->sizes[i])) == 0;
    ok = ok && jset_str(o, p, ap->var);
    snprintf(k, sizeof k, "%s_off", p);
    ok = ok && jset_uint(o, k, ap->off);
    snprintf(k, sizeof k, "%s_steps", p);
    ok = ok && jset(o, k, json_incref(steps));
    snprintf(k, sizeof k, "%s_sizes", p);
    ok = ok && jset(o, k, json_incref(sizes));
    snprintf(k, sizeof k, "%s_dtype", p);
    ok = ok && jset_str(o, k, neff_dtype_name(ap->dtype));
    json_decref(steps);
    json_decref(sizes);
    return ok;
}

static bool desc_sources_json(json_t *o, const struct neff_dma_desc *d)
{
    if (!d->cce)
        return d->n_from == 1 && ap_json(o, "from", &d->from[0]);
    json_t *arr = json_array();
    bool ok = arr != NULL;
    for (uint32_t i = 0; ok && i < d->n_from; i++) {
        json_t *e = json_object();
        ok = e && ap_json(e, "from", &d->from[i]);
        ok = json_array_append_new(arr, e) == 0 && ok;
    }
    ok = ok && jset(o, "from_arr", json_incref(arr));
    json_decref(arr);
    return ok;
}

static bool desc_op_json(json_t *o, const struct neff_dma_desc *d)
{
    bool ok = true;
    if (d->op == NEFF_DMA_FMA)
        ok = jset(o, "scale", json_real(d->scale)) &&
             jset_str(o, "scale_dtype", neff_dtype_name(d->scale_dtype));
    if (ok && d->constant_dtype != NEFF_DTYPE_NONE) {
        json_t *c = d->constant_dtype == NEFF_DTYPE_FLOAT32 ? json_real(d->constant)
                                                            : json_integer((json_int_t)d->constant);
        ok = jset_str(o, "constant_dtype", neff_dtype_name(d->constant_dtype)) &&
             jset(o, "constant", c);
    }
    if (ok && d->has_transpose_shape)
        ok = jset(o, "transpose_shape", j_u32_array(d->transpose_shape, NEFF_AP_MAX_DIMS));
    if (ok && d->transpose_element_size != 0)
        ok = jset_uint(o, "transpose_element_size", d->transpose_element_size);
    return ok;
}

static json_t *desc_json(const struct neff_dma_desc *d)
{
    json_t *o = json_object(), *b = json_object();
    bool ok = o && b && jset_uint(o, "id", d->id) && jset_str(o, "queue", d->queue) &&
              jset_str(o, "instance_name", d->instance_name) &&
              jset_str(o, "function_start", d->function_start) &&
              (!d->section_start_desc || jset(o, "section_start_desc", json_true())) &&
              (!d->has_event || jset_uint(o, "event", d->event)) &&
              (!d->has_semaphore || jset_uint(o, "semaphore", d->semaphore)) &&
              (d->n_remote_semaphores == 0 ||
               jset(o, "remote_semaphores",
                    j_u32_array(d->remote_semaphores, d->n_remote_semaphores)));
    ok = ok && jset_str(b, "op", neff_dma_op_name(d->op)) && desc_sources_json(b, d) &&
         ap_json(b, "to", &d->to) &&
         (!d->has_tiling_dims || jset_uint(b, "num_tiling_dimensions", d->num_tiling_dimensions)) &&
         desc_op_json(b, d);
    ok = ok && jset(o, "desc", json_incref(b));
    json_decref(b);
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

static json_t *engine_json(const struct neff_engine_sec *s)
{
    json_t *o = json_object(), *dma = json_array();
    bool ok = o && dma;
    for (uint32_t i = 0; ok && i < s->n_descs; i++)
        ok = json_array_append_new(dma, desc_json(&s->descs[i])) == 0;
    ok = ok && jset(o, "dma", json_incref(dma));
    if (ok && s->n_act_func_sets > 0)
        ok = jset(o, "activation_function_sets",
                  j_str_array(s->act_func_sets, s->n_act_func_sets));
    if (ok && s->by_ref)
        ok = jset_str(o, "instr", s->bin_file) && jset_str(o, "name", s->json_file);
    json_decref(dma);
    if (ok)
        return o;
    json_decref(o);
    return NULL;
}

/* ---- members ----------------------------------------------------------- */

/* Add a blob unless the same name already holds the same bytes. */
static emu_status add_blob(struct neff_file *f, const char *sg, const char *rel,
                           struct neff_buf *b)
{
    char path[NEFF_MAX_PATH + 1];
    if (!member_path(path, sizeof path, sg, rel))
        return EMU_INVALID;
    const struct neff_member *old = neff_file_find(f, path);
    if (old != NULL) {
        size_t n = neff_buf_size(b);
        const uint8_t *x = neff_buf_data(old->data), *y = neff_buf_data(b);
        if (old->data == b ||
            (neff_buf_size(old->data) == n && (n == 0 || memcmp(x, y, n) == 0)))
            return EMU_OK;
        LOG_ERROR("NEFF", "store: member '%s': two different contents for one name", path);
        return EMU_INVALID;
    }
    return neff_file_add(f, path, b);
}

static emu_status sg_store(struct neff_file *f, const struct neff_subgraph *sg)
{
    char path[NEFF_MAX_PATH + 1];
    if (!member_path(path, sizeof path, sg->name, "def.json"))
        return EMU_INVALID;
    emu_status st = add_json(f, path, def_json(sg));
    for (int e = 0; st == EMU_OK && e < NEFF_ENG_COUNT; e++) {
        const struct neff_engine_sec *s = &sg->eng[e];
        if (!s->present || s->json_file == NULL)
            continue;
        if (!member_path(path, sizeof path, sg->name, s->json_file))
            return EMU_INVALID;
        st = add_json(f, path, engine_json(s));
    }
    for (int e = 0; st == EMU_OK && e < NEFF_ENG_COUNT; e++) {
        const struct neff_engine_sec *s = &sg->eng[e];
        if (s->present && s->bin_file != NULL)
            st = add_blob(f, sg->name, s->bin_file, s->code);
    }
    for (uint32_t i = 0; st == EMU_OK && i < sg->n_vars; i++) {
        const struct neff_var *v = &sg->vars[i];
        if (v->file != NULL)
            st = add_blob(f, sg->name, v->file_name, v->file);
    }
    return st;
}

static void header_from_info(struct neff_header *h, const struct neff_model_info *i)
{
    h->pkg_version = i->pkg_version ? i->pkg_version : NEFF_PKG_VERSION_SHA256;
    h->header_size = NEFF_HEADER_SIZE;
    h->neff_version_major = i->neff_version_major;
    h->neff_version_minor = i->neff_version_minor;
    memset(h->neff_build_version, 0, sizeof h->neff_build_version);
    memcpy(h->neff_build_version, i->build_version,
           strnlen(i->build_version, sizeof h->neff_build_version));
    h->num_tpb = i->num_tpb;
    memcpy(h->uuid, i->uuid, sizeof h->uuid);
    memset(h->name, 0, sizeof h->name);
    memcpy(h->name, i->name, strnlen(i->name, sizeof h->name));
    h->requested_tpb_count = i->requested_tpb_count;
    memcpy(h->tpb_per_node, i->tpb_per_node, sizeof h->tpb_per_node);
    h->feature_bits = i->feature_bits;
    h->lnc_size = i->lnc_size;
}

emu_status neff_model_store(const struct neff_model *m, struct neff_file **out)
{
    if (m == NULL || out == NULL) {
        LOG_ERROR("NEFF", "neff_model_store: NULL argument");
        return EMU_INVALID;
    }
    *out = NULL;
    emu_status st = neff_model_check_const(m);
    if (st != EMU_OK)
        return st;
    struct neff_file *f = neff_file_new();
    if (f == NULL) {
        LOG_ERROR("NEFF", "store: out of memory");
        return EMU_RESOURCE;
    }
    header_from_info(&f->hdr, &m->info);
    st = add_json(f, "neff.json", neff_json(m));
    for (uint32_t i = 0; st == EMU_OK && i < m->n_sgs; i++)
        st = sg_store(f, m->sgs[i]);
    if (st != EMU_OK) {
        neff_file_free(f);
        return st;
    }
    *out = f;
    return EMU_OK;
}
