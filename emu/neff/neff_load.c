/*
 * neff_load.c: builds a neff_model from a neff_file by parsing neff.json,
 * each sgNN/def.json and each engine JSON with jansson. Unknown keys are
 * ignored; keys that are read must have the documented JSON type. Every
 * error is one "NEFF" log line naming the member, the object and the key.
 *
 * This file reads neff.json (the subgraph list, the I/O tensors) and puts
 * the model together; neff_load_sg.c reads each subgraph, neff_load_desc.c
 * its descriptors and neff_json.c holds the JSON getters they share.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_load_int.h"
#include "emu/neff/neff_model.h"
#include "emu/neff/neff_model_int.h"

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
static emu_status kelf_graph(const struct neff_jw *w, json_t *g, char **names, uint32_t *n)
{
    char *name = NULL, *def = NULL;
    emu_status st = json_is_object(g) ? neff_jget_str(w, g, "name", true, &name)
                                      : neff_jerr(w, "graphs", "entries must be objects");
    if (st == EMU_OK)
        st = neff_jget_str(w, g, "definition", true, &def);
    size_t ln = name ? strlen(name) : 0;
    if (st == EMU_OK && (strncmp(def, name, ln) != 0 || strcmp(def + ln, "/def.json") != 0))
        st = neff_jerr(w, "definition", "must be \"<name>/def.json\"");
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
    emu_status st = neff_json_member(f, kelf, true, &kj);
    if (st != EMU_OK)
        return st;
    struct neff_jw w = {.member = kelf, .obj = "top level"};
    json_t *graphs;
    st = neff_jget_typed(&w, kj, "graphs", true, true, &graphs);
    char **v = NULL;
    if (st == EMU_OK && (v = calloc(json_array_size(graphs) + 1, sizeof *v)) == NULL)
        st = neff_joom(&w);
    *names = v;
    for (size_t i = 0; st == EMU_OK && i < json_array_size(graphs); i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "graphs[%zu]", i);
        struct neff_jw wg = {.member = kelf, .obj = obj};
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
    struct neff_jw w = {.member = "neff.json", .obj = "top level"};
    json_t *list = NULL;
    const char *kelf = NULL;
    *names = NULL;
    *n = 0;
    if (nj != NULL) {
        emu_status st = neff_jget_typed(&w, nj, "subgraphs", false, true, &list);
        if (st == EMU_OK && list == NULL)
            st = kelf_name(nj, &kelf);
        if (st != EMU_OK)
            return st;
    }
    if (list != NULL)
        return neff_jget_str_array(&w, nj, "subgraphs", names, n);
    if (kelf != NULL)
        return kelf_list(f, kelf, names, n);
    return sg_scan(f, names, n);
}

static emu_status io_entry(const struct neff_jw *w, json_t *o, bool is_output, struct neff_io *io)
{
    io->is_output = is_output;
    emu_status st = neff_jget_str(w, o, "name", true, &io->name);
    if (st == EMU_OK)
        st = neff_jget_dtype(w, o, "dtype", true, &io->dtype);
    if (st == EMU_OK)
        st = neff_jget_u32_array(w, o, "shape", true, NEFF_IO_MAX_DIMS, &io->shape, &io->ndim);
    uint64_t size = neff_dtype_size(io->dtype);
    for (uint32_t i = 0; st == EMU_OK && i < io->ndim; i++)
        if (__builtin_mul_overflow(size, (uint64_t)io->shape[i], &size))
            st = neff_jerr(w, "shape", "size overflows 64 bits");
    io->size = size;
    if (st == EMU_OK)
        st = neff_jget_u64(w, o, "size", false, &io->size, NULL);
    return st;
}

static emu_status io_list(struct neff_model *m, json_t *arr, bool is_output)
{
    const char *key = is_output ? "outputs" : "inputs";
    for (size_t i = 0; i < json_array_size(arr); i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "%s[%zu]", key, i);
        struct neff_jw w = {.member = "neff.json", .obj = obj};
        json_t *o = json_array_get(arr, i);
        if (neff_jobject(&w, o) != EMU_OK)
            return EMU_INVALID;
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
    struct neff_jw w = {.member = member, .obj = obj};
    if (!json_is_object(o))
        return neff_jerr(&w, v->name, "must be an object");
    char *kind = NULL;
    const char *want = io->is_output ? "output" : "input";
    emu_status st = neff_jget_str(&w, o, "kind", true, &kind);
    if (st == EMU_OK && strcmp(kind, want) != 0)
        st = neff_jerr(&w, "kind", io->is_output ? "must be \"output\" for an output variable"
                                            : "must be \"input\" for an input variable");
    free(kind);
    if (st == EMU_OK)
        st = neff_jget_dtype(&w, o, "dtype", true, &io->dtype);
    if (st == EMU_OK)
        st = neff_jget_u32_array(&w, o, "tf_shape", true, NEFF_IO_MAX_DIMS, &io->shape, &io->ndim);
    uint64_t size = neff_dtype_size(io->dtype);
    for (uint32_t i = 0; st == EMU_OK && i < io->ndim; i++)
        if (__builtin_mul_overflow(size, (uint64_t)io->shape[i], &size))
            st = neff_jerr(&w, "tf_shape", "size overflows 64 bits");
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
        st = neff_json_member(f, member, false, &tmap);
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
    struct neff_jw w = {.member = "neff.json", .obj = "top level"};
    for (int k = 0; k < 2; k++) {
        json_t *arr = NULL;
        emu_status st = nj ? neff_jget_typed(&w, nj, k ? "outputs" : "inputs", false, true, &arr)
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
    emu_status st = neff_json_member(f, "info.json", false, &ij);
    if (st != EMU_OK || ij == NULL)
        return st;
    struct neff_jw w = {.member = "info.json", .obj = "top level"};
    char *tool = NULL;
    uint32_t num_tpb = 0;
    st = neff_jget_str(&w, ij, "tool_version", false, &tool);
    if (st == EMU_OK)
        st = neff_jget_u32(&w, ij, "num_tpb", false, &num_tpb, NULL);
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
    emu_status st = neff_json_member(f, "neff.json", false, &nj);
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
            st = neff_sg_load(f, m, names[i]);
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
