/*
 * neff_load_sg.c: one subgraph of a NEFF from its sgNN/def.json (see
 * neff_load_int.h): variables (and their file members), DMA queues, the
 * engine sections with their code and engine JSON, and the def.json maps.
 * Descriptors of an engine JSON are read by neff_load_desc.c.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_load_int.h"
#include "emu/neff/neff_model.h"
#include "emu/neff/neff_model_int.h"

static bool sg_path(char *buf, size_t cap, const char *sg, const char *rel, const struct neff_jw *w,
                    const char *key)
{
    int n = snprintf(buf, cap, "%s/%s", sg, rel);
    size_t len = strlen(rel);
    bool dotdot = strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0 ||
                  strstr(rel, "/../") != NULL || (len >= 3 && strcmp(rel + len - 3, "/..") == 0);
    if (n < 0 || (size_t)n >= cap || rel[0] == '/' || rel[0] == '\0' || dotdot) {
        neff_jerr(w, key, "not a usable relative file name");
        return false;
    }
    return true;
}

/* Find "<sg>/<rel>"; NULL (logged) when absent. */
static const struct neff_member *sg_member(const struct neff_file *f, const char *sg,
                                           const char *rel, const struct neff_jw *w,
                                           const char *key)
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
static emu_status var_size(const struct neff_jw *w, json_t *o, struct neff_var *v)
{
    bool present = false;
    emu_status st = neff_jget_u64(w, o, "size", false, &v->size, &present);
    v->no_size = !present;
    if (st == EMU_OK && !present && v->type != NEFF_VAR_STATE_BUFFER &&
        v->type != NEFF_VAR_DGE_TABLE)
        st = neff_jerr(w, "size",
                       "missing (only state-buffer and dge-table variables may omit it)");
    return st;
}

static emu_status var_fields(const struct neff_jw *w, json_t *o, struct neff_var *v)
{
    char *type = NULL;
    emu_status st = neff_jget_str(w, o, "type", true, &type);
    if (st == EMU_OK && !neff_var_type_parse(type, &v->type))
        st = neff_jerr(w, "type", "unknown variable type");
    free(type);
    if (st == EMU_OK)
        st = neff_jget_u32(w, o, "var_id", true, &v->var_id, NULL);
    if (st == EMU_OK)
        st = var_size(w, o, v);
    if (st == EMU_OK)
        st = neff_jget_u64(w, o, "alignment", false, &v->alignment, NULL);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "fabric_path", false, &v->fabric_path);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "file_name", false, &v->file_name);
    if (st == EMU_OK)
        st = neff_jget_u64(w, o, "backing_variable_off", false, &v->backing_variable_off,
                           &v->has_backing_off);
    if (st == EMU_OK)
        st = neff_jget_u32(w, o, "referenced_var_id", false, &v->referenced_var_id,
                           &v->has_referenced_var);
    if (st == EMU_OK)
        st = neff_jget_u32_array(w, o, "list", false, SIZE_MAX, &v->list, &v->n_list);
    return st;
}

static emu_status var_ops(const struct neff_jw *w, json_t *o, struct neff_var *v)
{
    json_t *ops;
    emu_status st = neff_jget_typed(w, o, "ops", false, true, &ops);
    if (st != EMU_OK || ops == NULL)
        return st;
    v->ops_json = json_dumps(ops, JSON_COMPACT | JSON_ENCODE_ANY);
    return v->ops_json ? EMU_OK : neff_joom(w);
}

static emu_status var_file(const struct neff_file *f, const struct neff_subgraph *sg,
                           const struct neff_jw *w, struct neff_var *v)
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
    struct neff_jw w = {.member = member, .obj = obj};
    if (neff_jobject(&w, o) != EMU_OK)
        return EMU_INVALID;
    struct neff_var v = {0};
    v.name = strdup(name);
    emu_status st = v.name ? var_fields(&w, o, &v) : neff_joom(&w);
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

static emu_status queue_fields(const struct neff_jw *w, json_t *o, struct neff_queue *q)
{
    char *type = NULL;
    emu_status st = neff_jget_str(w, o, "type", true, &type);
    if (st == EMU_OK && !neff_queue_type_parse(type, &q->type))
        st = neff_jerr(w, "type", "unknown queue set type");
    free(type);
    q->num_queues = 1;
    if (st == EMU_OK)
        st = neff_jget_u32(w, o, "num_queues", false, &q->num_queues, NULL);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "owner", false, &q->owner);
    if (st == EMU_OK)
        st = neff_jget_bool(w, o, "pinned", &q->pinned);
    if (st == EMU_OK)
        st = neff_jget_str_array(w, o, "queue_instances", &q->instances, &q->n_instances);
    if (st == EMU_OK)
        st = neff_jget_u32_array(w, o, "semaphore_set", false, SIZE_MAX, &q->semaphore_set,
                                 &q->n_semaphore_set);
    if (st == EMU_OK)
        st = neff_jget_u32(w, o, "semaphore", false, &q->semaphore, &q->has_semaphore);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "fabric_path", false, &q->fabric_path);
    json_t *dyn = NULL;
    if (st == EMU_OK)
        st = neff_jget_typed(w, o, "dynamic_dma", false, false, &dyn);
    if (st == EMU_OK && dyn != NULL &&
        (q->dynamic_dma_json = json_dumps(dyn, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
        st = neff_joom(w);
    return st;
}

static emu_status queue_load(struct neff_subgraph *sg, const char *member, const char *name,
                             json_t *o)
{
    char obj[300];
    snprintf(obj, sizeof obj, "dma_queue '%s'", name);
    struct neff_jw w = {.member = member, .obj = obj};
    if (neff_jobject(&w, o) != EMU_OK)
        return EMU_INVALID;
    struct neff_queue q = {0};
    q.name = strdup(name);
    emu_status st = q.name ? queue_fields(&w, o, &q) : neff_joom(&w);
    if (st == EMU_OK)
        st = neff_sg_push_queue(sg, &q);
    neff_queue_clear(&q);
    return st;
}

/* ---- def.json: engine sections ---------------------------------------- */

/* The vendor engine JSON names its stream ("instr"); def.json's
 * "<engine>_instr" wins, and when both are given they must agree. */
static emu_status engine_json_instr(const struct neff_jw *wj, json_t *j, struct neff_engine_sec *s)
{
    char *instr = NULL;
    emu_status st = neff_jget_str(wj, j, "instr", false, &instr);
    if (st == EMU_OK && instr != NULL && s->bin_file != NULL &&
        strcmp(instr, s->bin_file) != 0)
        st = neff_jerr(wj, "instr", "names another member than def.json's <engine>_instr");
    if (st == EMU_OK && instr != NULL && s->bin_file == NULL) {
        s->bin_file = instr;
        instr = NULL;
    }
    free(instr);
    return st;
}

static emu_status engine_json_load(const struct neff_file *f, struct neff_subgraph *sg,
                                   enum neff_engine e, const struct neff_jw *w, const char *key)
{
    struct neff_engine_sec *s = &sg->eng[e];
    const struct neff_member *mem = sg_member(f, sg->name, s->json_file, w, key);
    if (mem == NULL)
        return EMU_INVALID;
    json_t *j;
    emu_status st = neff_json_member(f, mem->name, true, &j);
    if (st != EMU_OK)
        return st;
    struct neff_jw wj = {.member = mem->name, .obj = "top level"};
    json_t *dma;
    st = neff_jget_typed(&wj, j, "dma", false, true, &dma);
    for (size_t i = 0; st == EMU_OK && dma != NULL && i < json_array_size(dma); i++)
        st = neff_desc_load(sg, e, mem->name, i, json_array_get(dma, i));
    if (st == EMU_OK)
        st = neff_jget_str_array(&wj, j, "activation_function_sets", &s->act_func_sets,
                                 &s->n_act_func_sets);
    if (st == EMU_OK && s->by_ref)
        st = engine_json_instr(&wj, j, s);
    json_decref(j);
    return st;
}

/* The stream member named by bin_file, referenced into the section. */
static emu_status engine_code(const struct neff_file *f, struct neff_subgraph *sg,
                              struct neff_engine_sec *s, const struct neff_jw *w, const char *key)
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
                                  enum neff_engine e, const struct neff_jw *w, json_t *o)
{
    struct neff_engine_sec *s = &sg->eng[e];
    emu_status st = neff_jget_str(w, o, "bin_file", false, &s->bin_file);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "json_file", false, &s->json_file);
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
                                  enum neff_engine e, const struct neff_jw *w, json_t *def)
{
    struct neff_engine_sec *s = &sg->eng[e];
    char key[16];
    snprintf(key, sizeof key, "%s_instr", neff_engine_name(e));
    s->by_ref = true;
    s->json_file = strdup(json_string_value(json_object_get(def, neff_engine_name(e))));
    emu_status st = s->json_file ? neff_jget_str(w, def, key, false, &s->bin_file) : neff_joom(w);
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
    json_t *sec = neff_jfind(def, name);
    struct neff_jw w = {.member = member, .obj = "top level"};
    if (sec == NULL)
        return EMU_OK;
    sg->eng[e].present = true;
    if (json_is_string(sec))
        return engine_load_ref(f, sg, e, &w, def);
    if (!json_is_object(sec))
        return neff_jerr(&w, name, "must be an object or an engine JSON member name");
    char obj[32];
    snprintf(obj, sizeof obj, "section '%s'", name);
    w.obj = obj;
    return engine_load_obj(f, sg, e, &w, sec);
}

/* ---- def.json --------------------------------------------------------- */

static emu_status def_marker(struct neff_subgraph *sg, const struct neff_jw *w, json_t *def)
{
    json_t *isa;
    emu_status st = neff_jget_typed(w, def, "trnemu_isa", false, false, &isa);
    if (st != EMU_OK || isa == NULL)
        return st;
    struct neff_jw wi = {.member = w->member, .obj = "trnemu_isa"};
    st = neff_jget_u32(&wi, isa, "version", true, &sg->isa_version, NULL);
    if (st == EMU_OK && sg->isa_version == 0)
        st = neff_jerr(&wi, "version", "must be at least 1");
    return st;
}

static emu_status def_maps(const struct neff_file *f, struct neff_subgraph *sg,
                           const struct neff_jw *w, json_t *def)
{
    json_t *vars, *queues;
    emu_status st = neff_jget_typed(w, def, "var", false, false, &vars);
    if (st == EMU_OK)
        st = neff_jget_typed(w, def, "dma_queue", false, false, &queues);
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

emu_status neff_sg_load(const struct neff_file *f, struct neff_model *m, const char *name)
{
    char member[NEFF_MAX_PATH + 16];
    snprintf(member, sizeof member, "%s/def.json", name);
    json_t *def;
    emu_status st = neff_json_member(f, member, true, &def);
    if (st != EMU_OK)
        return st;
    struct neff_subgraph *sg = neff_model_push_sg(m, name);
    struct neff_jw w = {.member = member, .obj = "top level"};
    st = sg ? def_marker(sg, &w, def) : EMU_RESOURCE;
    if (st == EMU_OK)
        st = def_maps(f, sg, &w, def);
    for (int e = 0; st == EMU_OK && e < NEFF_ENG_COUNT; e++)
        st = engine_load(f, sg, member, (enum neff_engine)e, def);
    json_decref(def);
    return st;
}
