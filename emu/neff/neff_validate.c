/*
 * neff_validate.c: validation of a NEFF model's cross references (see
 * neff_model.h): variable ids and names, queues, descriptors and their
 * access patterns, engine sections, member names and the I/O tensors;
 * optionally fills each descriptor's var_index.
 */
#include "emu/neff/neff_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_model_int.h"

/* ---- validation -------------------------------------------------------- */

/* A name -> index entry for sorted lookups. */
struct name_ref {
    const char *name;                   /* the key */
    uint32_t index;                     /* position in the owning array */
};

/* A var_id -> index entry. */
struct id_ref {
    uint32_t id;                        /* the key */
    uint32_t index;                     /* position in vars */
};

static int name_ref_cmp(const void *a, const void *b)
{
    return strcmp(((const struct name_ref *)a)->name, ((const struct name_ref *)b)->name);
}

static int id_ref_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct id_ref *)a)->id, y = ((const struct id_ref *)b)->id;
    return x < y ? -1 : x > y;
}

static const struct name_ref *name_find(const struct name_ref *t, size_t n, const char *name)
{
    if (name == NULL || n == 0)
        return NULL;
    struct name_ref key = {.name = name};
    return bsearch(&key, t, n, sizeof *t, name_ref_cmp);
}

/* Sorted lookup tables of one subgraph, built for validation. */
struct sg_index {
    struct name_ref *vars;              /* var names, sorted */
    struct id_ref *ids;                 /* var ids, sorted */
    struct name_ref *queues;            /* queue names, sorted */
    struct name_ref *insts;             /* queue instance names, sorted */
    size_t n_insts;                     /* entries in insts */
};

static void sg_index_free(struct sg_index *x)
{
    free(x->vars);
    free(x->ids);
    free(x->queues);
    free(x->insts);
}

/* Report the first duplicate name of a sorted table, if any. */
static const char *first_dup(const struct name_ref *t, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (strcmp(t[i - 1].name, t[i].name) == 0)
            return t[i].name;
    return NULL;
}

static emu_status sg_index_build(const struct neff_subgraph *sg, struct sg_index *x)
{
    size_t ninst = 0;
    for (uint32_t i = 0; i < sg->n_queues; i++)
        ninst += sg->queues[i].n_instances;
    x->vars = malloc((sg->n_vars + 1) * sizeof *x->vars);
    x->ids = malloc((sg->n_vars + 1) * sizeof *x->ids);
    x->queues = malloc((sg->n_queues + 1) * sizeof *x->queues);
    x->insts = malloc((ninst + 1) * sizeof *x->insts);
    if (!x->vars || !x->ids || !x->queues || !x->insts) {
        LOG_ERROR("NEFF", "%s: out of memory while validating", sg->name);
        return EMU_RESOURCE;
    }
    for (uint32_t i = 0; i < sg->n_vars; i++) {
        x->vars[i] = (struct name_ref){sg->vars[i].name, i};
        x->ids[i] = (struct id_ref){sg->vars[i].var_id, i};
    }
    for (uint32_t i = 0; i < sg->n_queues; i++) {
        x->queues[i] = (struct name_ref){sg->queues[i].name, i};
        for (uint32_t j = 0; j < sg->queues[i].n_instances; j++)
            x->insts[x->n_insts++] = (struct name_ref){sg->queues[i].instances[j], i};
    }
    qsort(x->vars, sg->n_vars, sizeof *x->vars, name_ref_cmp);
    qsort(x->ids, sg->n_vars, sizeof *x->ids, id_ref_cmp);
    qsort(x->queues, sg->n_queues, sizeof *x->queues, name_ref_cmp);
    qsort(x->insts, x->n_insts, sizeof *x->insts, name_ref_cmp);
    const char *dup = first_dup(x->vars, sg->n_vars);
    if (dup != NULL) {
        LOG_ERROR("NEFF", "%s/def.json: var '%s': duplicate name", sg->name, dup);
        return EMU_INVALID;
    }
    for (uint32_t i = 1; i < sg->n_vars; i++) {
        if (x->ids[i - 1].id == x->ids[i].id) {
            LOG_ERROR("NEFF", "%s/def.json: var '%s': var_id %u is also used by '%s'", sg->name,
                      sg->vars[x->ids[i].index].name, x->ids[i].id,
                      sg->vars[x->ids[i - 1].index].name);
            return EMU_INVALID;
        }
    }
    dup = first_dup(x->queues, sg->n_queues);
    if (dup != NULL) {
        LOG_ERROR("NEFF", "%s/def.json: dma_queue '%s': duplicate name", sg->name, dup);
        return EMU_INVALID;
    }
    return EMU_OK;
}

static bool id_exists(const struct sg_index *x, uint32_t n_vars, uint32_t id)
{
    struct id_ref key = {.id = id};
    return n_vars > 0 && bsearch(&key, x->ids, n_vars, sizeof *x->ids, id_ref_cmp) != NULL;
}

static emu_status var_check(const struct neff_subgraph *sg, const struct sg_index *x,
                            const struct neff_var *v)
{
    const char *why = NULL;
    char buf[96];
    uint64_t end;
    if (v->size > INT64_MAX || v->alignment > INT64_MAX || v->backing_variable_off > INT64_MAX)
        why = "size, alignment or backing_variable_off exceeds the JSON integer range";
    else if (v->no_size && v->type != NEFF_VAR_STATE_BUFFER && v->type != NEFF_VAR_DGE_TABLE)
        why = "no size: only state-buffer and dge-table variables may omit it";
    else if (v->no_size && v->size != 0)
        why = "a size of a variable marked as having none";
    else if (v->alignment != 0 && (v->alignment & (v->alignment - 1)) != 0)
        why = "alignment is not a power of two";
    else if (v->has_backing_off &&
             __builtin_add_overflow(v->backing_variable_off, v->size, &end))
        why = "backing_variable_off + size overflows";
    else if (v->has_referenced_var && !id_exists(x, sg->n_vars, v->referenced_var_id)) {
        snprintf(buf, sizeof buf, "referenced_var_id %u names no variable",
                 v->referenced_var_id);
        why = buf;
    } else if (v->file != NULL && (v->type != NEFF_VAR_FILE || v->file_name == NULL))
        why = "only a file variable with a file_name can carry data";
    else if (v->type == NEFF_VAR_FILE && v->file_name != NULL && v->file == NULL)
        why = "file_name given but the file's bytes are missing";
    else if (v->file != NULL && v->data_len > v->size) {
        snprintf(buf, sizeof buf, "constant of %zu bytes does not fit size %llu", v->data_len,
                 (unsigned long long)v->size);
        why = buf;
    } else if (v->file != NULL && v->data_off + v->data_len > neff_buf_size(v->file))
        why = "constant payload lies outside its file";
    for (uint32_t i = 0; why == NULL && i < v->n_list; i++) {
        if (!id_exists(x, sg->n_vars, v->list[i])) {
            snprintf(buf, sizeof buf, "list entry %u names no variable", v->list[i]);
            why = buf;
        }
    }
    if (why == NULL)
        return EMU_OK;
    LOG_ERROR("NEFF", "%s/def.json: var '%s': %s", sg->name, v->name, why);
    return EMU_INVALID;
}

static emu_status queue_check(const struct neff_subgraph *sg, const struct neff_queue *q)
{
    if (q->num_queues == 0 || q->num_queues > 16) {
        LOG_ERROR("NEFF", "%s/def.json: dma_queue '%s': num_queues %u is not in 1..16",
                  sg->name, q->name, q->num_queues);
        return EMU_INVALID;
    }
    return EMU_OK;
}

/* Where a descriptor lives, for log lines. */
struct desc_where {
    const char *sg;                     /* subgraph name */
    const char *json;                   /* engine JSON member name */
    uint32_t index;                     /* position in "dma" */
};

/* JSON integers are signed 64-bit: larger offsets/sizes cannot be stored. */
static bool ap_in_json_range(const struct neff_dma_ap *ap)
{
    bool ok = ap->off <= INT64_MAX;
    for (uint32_t d = 0; d < ap->ndim && d < NEFF_AP_MAX_DIMS; d++)
        ok = ok && ap->sizes[d] <= INT64_MAX;
    return ok;
}

/* Check one access pattern against its variable; resolve var_index. */
static emu_status ap_check(const struct neff_subgraph *sg, const struct sg_index *x,
                           struct neff_dma_ap *ap, const char *side,
                           const struct desc_where *w, bool fill)
{
    char buf[160];
    const char *why = NULL;
    const struct name_ref *r = name_find(x->vars, sg->n_vars, ap->var);
    uint64_t lo = 0, hi = 0;
    if (ap->var == NULL)
        why = "no variable";
    else if (r == NULL)
        why = "names no variable in def.json";
    else if (ap->ndim == 0 || ap->ndim > NEFF_AP_MAX_DIMS)
        why = "steps/sizes must have 1 to 4 entries";
    else if (neff_dtype_size(ap->dtype) == 0)
        why = "unknown dtype";
    else if (!ap_in_json_range(ap))
        why = "offset or size exceeds the JSON integer range";
    else if (!neff_ap_range(ap, &lo, &hi))
        why = "access pattern overflows 64 bits or starts before the variable";
    else if (hi > sg->vars[r->index].size) {
        snprintf(buf, sizeof buf, "access pattern reaches byte %llu of a %llu-byte variable",
                 (unsigned long long)hi, (unsigned long long)sg->vars[r->index].size);
        why = buf;
    }
    if (why != NULL) {
        LOG_ERROR("NEFF", "%s/%s: dma[%u]: %s '%s': %s", w->sg, w->json, w->index, side,
                  ap->var ? ap->var : "", why);
        return EMU_INVALID;
    }
    if (fill)
        ap->var_index = (int32_t)r->index;
    return EMU_OK;
}

static const char *desc_fields_why(const struct neff_dma_desc *d, char *buf, size_t cap)
{
    if ((unsigned)d->op >= NEFF_DMA_OP_COUNT)
        return "unknown op";
    if (d->n_from == 0 || d->from == NULL)
        return "no source (from / from_arr)";
    if (d->n_from > NEFF_MAX_CCE_SOURCES || (!d->cce && d->n_from != 1))
        return "too many sources";
    if (!isfinite(d->scale))
        return "scale is not finite";
    if (d->scale_dtype != NEFF_DTYPE_FLOAT32)
        return "scale_dtype must be float32";
    if (d->constant_dtype != NEFF_DTYPE_NONE && d->constant_dtype != NEFF_DTYPE_FLOAT32 &&
        d->constant_dtype != NEFF_DTYPE_INT32 && d->constant_dtype != NEFF_DTYPE_UINT32)
        return "constant_dtype must be float32, int32 or uint32";
    if (!isfinite(d->constant))
        return "constant is not finite";
    if ((d->constant_dtype == NEFF_DTYPE_INT32 &&
         (d->constant != (double)(int32_t)d->constant)) ||
        (d->constant_dtype == NEFF_DTYPE_UINT32 &&
         (d->constant < 0 || d->constant > 4294967295.0 ||
          d->constant != (double)(uint32_t)d->constant))) {
        snprintf(buf, cap, "constant %g does not fit %s", d->constant,
                 neff_dtype_name(d->constant_dtype));
        return buf;
    }
    return NULL;
}

static emu_status desc_check(const struct neff_subgraph *sg, const struct sg_index *x,
                             struct neff_dma_desc *d, const struct desc_where *w, bool fill)
{
    char buf[128];
    const char *why = desc_fields_why(d, buf, sizeof buf);
    if (why == NULL && d->instance_name != NULL && d->instance_name[0] != '\0') {
        if (name_find(x->insts, x->n_insts, d->instance_name) == NULL)
            why = "instance_name names no queue instance";
    } else if (why == NULL) {
        if (d->queue == NULL || d->queue[0] == '\0')
            why = "neither queue nor instance_name";
        else if (name_find(x->queues, sg->n_queues, d->queue) == NULL)
            why = "queue names no dma_queue";
    }
    if (why != NULL) {
        LOG_ERROR("NEFF", "%s/%s: dma[%u]: %s", w->sg, w->json, w->index, why);
        return EMU_INVALID;
    }
    for (uint32_t i = 0; i < d->n_from; i++) {
        emu_status st = ap_check(sg, x, &d->from[i], "from", w, fill);
        if (st != EMU_OK)
            return st;
    }
    return ap_check(sg, x, &d->to, "to", w, fill);
}

static emu_status engine_check(const struct neff_subgraph *sg, const struct sg_index *x,
                               enum neff_engine e, bool fill)
{
    struct neff_engine_sec *s = (struct neff_engine_sec *)&sg->eng[e];
    if (!s->present) {
        if (s->n_descs > 0 || s->code != NULL) {
            LOG_ERROR("NEFF", "%s/def.json: %s: has code or descriptors but no section",
                      sg->name, neff_engine_name(e));
            return EMU_INVALID;
        }
        return EMU_OK;
    }
    if ((s->code != NULL) != (s->bin_file != NULL) || (s->n_descs > 0 && s->json_file == NULL)) {
        LOG_ERROR("NEFF", "%s/def.json: %s: code without bin_file, bin_file without code, or "
                  "descriptors without json_file", sg->name, neff_engine_name(e));
        return EMU_INVALID;
    }
    if (s->by_ref && s->json_file == NULL) {
        LOG_ERROR("NEFF", "%s/def.json: %s: a section by reference needs its engine JSON member",
                  sg->name, neff_engine_name(e));
        return EMU_INVALID;
    }
    struct desc_where w = {.sg = sg->name, .json = s->json_file};
    for (uint32_t i = 0; i < s->n_descs; i++) {
        w.index = i;
        emu_status st = desc_check(sg, x, &s->descs[i], &w, fill);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}

/* Is `name` a bin_file or a file var's file_name of this subgraph? */
static bool names_blob(const struct neff_subgraph *sg, const char *name)
{
    for (int e = 0; e < NEFF_ENG_COUNT; e++)
        if (sg->eng[e].present && sg->eng[e].bin_file && strcmp(sg->eng[e].bin_file, name) == 0)
            return true;
    for (uint32_t i = 0; i < sg->n_vars; i++)
        if (sg->vars[i].file != NULL && strcmp(sg->vars[i].file_name, name) == 0)
            return true;
    return false;
}

/* JSON members are rewritten on store: each engine JSON needs a member of
 * its own, distinct from def.json and from every binary member. */
static emu_status sg_members_check(const struct neff_subgraph *sg)
{
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        const char *j = sg->eng[e].present ? sg->eng[e].json_file : NULL;
        if (j == NULL)
            continue;
        bool clash = strcmp(j, "def.json") == 0 || names_blob(sg, j);
        for (int o = 0; !clash && o < e; o++)
            clash = sg->eng[o].present && sg->eng[o].json_file &&
                    strcmp(sg->eng[o].json_file, j) == 0;
        if (clash) {
            LOG_ERROR("NEFF", "%s/def.json: %s: json_file '%s' is also used by another member "
                      "role", sg->name, neff_engine_name(e), j);
            return EMU_INVALID;
        }
    }
    if (names_blob(sg, "def.json")) {
        LOG_ERROR("NEFF", "%s/def.json: a bin_file or file_name names def.json", sg->name);
        return EMU_INVALID;
    }
    return EMU_OK;
}

static emu_status sg_check(const struct neff_model *m, const struct neff_subgraph *sg, bool fill)
{
    if (sg->isa_version > NEFF_TRNEMU_ISA_VERSION) {
        LOG_ERROR("NEFF", "%s/def.json: trnemu_isa: version %u is newer than the supported %u",
                  sg->name, sg->isa_version, NEFF_TRNEMU_ISA_VERSION);
        return EMU_NEFF_VERSION;
    }
    if ((sg->isa_version > 0) != ((m->info.feature_bits & NEFF_FEATURE_TRNEMU_ISA) != 0)) {
        LOG_ERROR("NEFF", "%s/def.json: trnemu_isa: %s, but the header's trnemu feature bit is %s",
                  sg->name, sg->isa_version ? "present" : "absent",
                  sg->isa_version ? "clear" : "set");
        return EMU_INVALID;
    }
    struct sg_index x = {0};
    emu_status st = sg_index_build(sg, &x);
    for (uint32_t i = 0; st == EMU_OK && i < sg->n_vars; i++)
        st = var_check(sg, &x, &sg->vars[i]);
    for (uint32_t i = 0; st == EMU_OK && i < sg->n_queues; i++)
        st = queue_check(sg, &sg->queues[i]);
    for (int e = 0; st == EMU_OK && e < NEFF_ENG_COUNT; e++)
        st = engine_check(sg, &x, (enum neff_engine)e, fill);
    if (st == EMU_OK)
        st = sg_members_check(sg);
    sg_index_free(&x);
    return st;
}

/* A subgraph directory name must be one plain path component. */
static bool sg_name_ok(const char *n)
{
    return n != NULL && n[0] != '\0' && strchr(n, '/') == NULL && strcmp(n, ".") != 0 &&
           strcmp(n, "..") != 0 && strlen(n) < 256;
}

static emu_status io_check(const struct neff_model *m, const struct neff_io *io)
{
    const char *why = NULL;
    uint64_t size = 0;
    if (io->name == NULL || io->name[0] == '\0')
        why = "empty name";
    else if (strlen(io->name) >= NEFF_IO_NAME_MAX)
        why = "name of 256 bytes or more (a tensor name holds at most 255)";
    else if (neff_model_find_io(m, io->name) != io)
        why = "duplicate name";
    else if (neff_dtype_size(io->dtype) == 0)
        why = "unknown dtype";
    else if (io->ndim > NEFF_IO_MAX_DIMS || (io->ndim > 0 && io->shape == NULL))
        why = "bad shape";
    else if (!neff_io_size(io->dtype, io->shape, io->ndim, &size) || size != io->size ||
             size > INT64_MAX)
        why = "size does not equal the product of shape times the dtype size";
    if (why == NULL)
        return EMU_OK;
    LOG_ERROR("NEFF", "neff.json: %s '%.80s': %s", io->is_output ? "outputs" : "inputs",
              io->name ? io->name : "", why);
    return EMU_INVALID;
}

/* Every I/O tensor appears as an input/output var of matching size in at
 * least one subgraph, and every input/output var is an I/O tensor. */
static emu_status io_vars_check(const struct neff_model *m)
{
    for (uint32_t s = 0; s < m->n_sgs; s++) {
        const struct neff_subgraph *sg = m->sgs[s];
        for (uint32_t i = 0; i < sg->n_vars; i++) {
            const struct neff_var *v = &sg->vars[i];
            if (v->type != NEFF_VAR_INPUT && v->type != NEFF_VAR_OUTPUT)
                continue;
            const struct neff_io *io = neff_model_find_io(m, v->name);
            if (io == NULL || io->is_output != (v->type == NEFF_VAR_OUTPUT) ||
                io->size != v->size) {
                LOG_ERROR("NEFF", "%s/def.json: var '%s': %s var matches no %s tensor of %llu "
                          "bytes in neff.json", sg->name, v->name, neff_var_type_name(v->type),
                          neff_var_type_name(v->type), (unsigned long long)v->size);
                return EMU_INVALID;
            }
        }
    }
    for (uint32_t i = 0; i < m->n_io; i++) {
        bool found = false;
        for (uint32_t s = 0; !found && s < m->n_sgs; s++)
            found = neff_sg_find_var(m->sgs[s], m->io[i].name) != NULL;
        if (!found) {
            LOG_ERROR("NEFF", "neff.json: %s '%s': no subgraph has this variable",
                      m->io[i].is_output ? "outputs" : "inputs", m->io[i].name);
            return EMU_INVALID;
        }
    }
    return EMU_OK;
}

static emu_status model_check(struct neff_model *m, bool fill)
{
    if (m == NULL || m->n_sgs == 0) {
        LOG_ERROR("NEFF", "neff.json: subgraphs: the NEFF has no subgraph");
        return EMU_INVALID;
    }
    for (uint32_t s = 0; s < m->n_sgs; s++) {
        if (!sg_name_ok(m->sgs[s]->name)) {
            LOG_ERROR("NEFF", "neff.json: subgraphs: '%s' is not a plain directory name",
                      m->sgs[s]->name ? m->sgs[s]->name : "");
            return EMU_INVALID;
        }
        for (uint32_t t = 0; t < s; t++) {
            if (strcmp(m->sgs[s]->name, m->sgs[t]->name) == 0) {
                LOG_ERROR("NEFF", "neff.json: subgraphs: '%s' is listed twice", m->sgs[s]->name);
                return EMU_INVALID;
            }
        }
    }
    for (uint32_t i = 0; i < m->n_io; i++) {
        emu_status st = io_check(m, &m->io[i]);
        if (st != EMU_OK)
            return st;
    }
    for (uint32_t s = 0; s < m->n_sgs; s++) {
        emu_status st = sg_check(m, m->sgs[s], fill);
        if (st != EMU_OK)
            return st;
    }
    return io_vars_check(m);
}

emu_status neff_model_validate(struct neff_model *m)
{
    return model_check(m, true);
}

emu_status neff_model_check_const(const struct neff_model *m)
{
    return model_check((struct neff_model *)m, false);
}
