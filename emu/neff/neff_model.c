/*
 * neff_model.c: the NEFF metadata model (see neff_model.h): name tables,
 * clearing and freeing, the growing lists, lookups and access-pattern
 * bounds. The C builder is in neff_build.c, validation of cross
 * references in neff_validate.c, deep comparison in neff_equal.c;
 * loading from JSON lives in neff_load*.c, storing to JSON in
 * neff_store.c.
 */
#include "emu/neff/neff_model.h"

#include <stdlib.h>
#include <string.h>

#include "emu/grow.h"
#include "emu/log.h"
#include "emu/neff/neff_model_int.h"

/* ---- name tables ------------------------------------------------------- */

/* One dtype: its JSON name and element size. */
struct dtype_desc {
    uint32_t dtype;                     /* enum neff_dtype */
    const char *name;                   /* name used in JSON */
    size_t size;                        /* bytes per element */
};

static const struct dtype_desc dtype_table[] = {
    {NEFF_DTYPE_FP8_E3, "float8e3", 1},  {NEFF_DTYPE_FP8_E4, "float8e4", 1},
    {NEFF_DTYPE_FP8_E5, "float8e5", 1},  {NEFF_DTYPE_FLOAT16, "float16", 2},
    {NEFF_DTYPE_FLOAT32, "float32", 4},  {NEFF_DTYPE_FP32R, "float32r", 4},
    {NEFF_DTYPE_BFLOAT16, "bfloat16", 2}, {NEFF_DTYPE_UINT8, "uint8", 1},
    {NEFF_DTYPE_UINT16, "uint16", 2},    {NEFF_DTYPE_UINT32, "uint32", 4},
    {NEFF_DTYPE_UINT64, "uint64", 8},    {NEFF_DTYPE_INT8, "int8", 1},
    {NEFF_DTYPE_INT16, "int16", 2},      {NEFF_DTYPE_INT32, "int32", 4},
    {NEFF_DTYPE_INT64, "int64", 8},
};

static const struct dtype_desc *dtype_lookup(uint32_t dtype)
{
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++)
        if (dtype_table[i].dtype == dtype)
            return &dtype_table[i];
    return NULL;
}

const char *neff_dtype_name(uint32_t dtype)
{
    const struct dtype_desc *d = dtype_lookup(dtype);
    return d ? d->name : NULL;
}

size_t neff_dtype_size(uint32_t dtype)
{
    const struct dtype_desc *d = dtype_lookup(dtype);
    return d ? d->size : 0;
}

bool neff_dtype_parse(const char *name, uint32_t *dtype)
{
    for (size_t i = 0; name && i < sizeof dtype_table / sizeof dtype_table[0]; i++) {
        if (strcmp(dtype_table[i].name, name) == 0) {
            *dtype = dtype_table[i].dtype;
            return true;
        }
    }
    return false;
}

static const char *const engine_names[NEFF_ENG_COUNT] = {"pe", "act", "pool", "dve", "sp"};
static const char *const engine_bins[NEFF_ENG_COUNT] = {"PE.bin", "Activation.bin", "Pool.bin",
                                                        "DVE.bin", "SP.bin"};
static const char *const engine_jsons[NEFF_ENG_COUNT] = {"PE.json", "Activation.json",
                                                         "Pool.json", "DVE.json", "SP.json"};
static const char *const var_type_names[NEFF_VAR_TYPE_COUNT] = {
    "input", "output", "state-buffer", "file", "tmp-buf", "virtual", "pointer", "dge-table"};
static const char *const queue_type_names[NEFF_QUEUE_TYPE_COUNT] = {
    "in", "out", "data", "embedding_update", "dynamic"};
static const char *const dma_op_names[NEFF_DMA_OP_COUNT] = {"copy", "cast", "add", "fma",
                                                            "min", "max", "transpose"};

static bool name_index(const char *const *names, int n, const char *s, int *out)
{
    for (int i = 0; s != NULL && i < n; i++) {
        if (strcmp(names[i], s) == 0) {
            *out = i;
            return true;
        }
    }
    return false;
}

const char *neff_engine_name(enum neff_engine e)
{
    return (unsigned)e < NEFF_ENG_COUNT ? engine_names[e] : "?";
}

const char *neff_engine_default_bin(enum neff_engine e)
{
    return (unsigned)e < NEFF_ENG_COUNT ? engine_bins[e] : "?";
}

const char *neff_engine_default_json(enum neff_engine e)
{
    return (unsigned)e < NEFF_ENG_COUNT ? engine_jsons[e] : "?";
}

const char *neff_var_type_name(enum neff_var_type t)
{
    return (unsigned)t < NEFF_VAR_TYPE_COUNT ? var_type_names[t] : "?";
}

const char *neff_queue_type_name(enum neff_queue_type t)
{
    return (unsigned)t < NEFF_QUEUE_TYPE_COUNT ? queue_type_names[t] : "?";
}

const char *neff_dma_op_name(enum neff_dma_op op)
{
    return (unsigned)op < NEFF_DMA_OP_COUNT ? dma_op_names[op] : "?";
}

bool neff_var_type_parse(const char *s, enum neff_var_type *t)
{
    int i;
    if (!name_index(var_type_names, NEFF_VAR_TYPE_COUNT, s, &i))
        return false;
    *t = (enum neff_var_type)i;
    return true;
}

bool neff_queue_type_parse(const char *s, enum neff_queue_type *t)
{
    int i;
    if (!name_index(queue_type_names, NEFF_QUEUE_TYPE_COUNT, s, &i))
        return false;
    *t = (enum neff_queue_type)i;
    return true;
}

bool neff_dma_op_parse(const char *s, enum neff_dma_op *op)
{
    int i;
    if (!name_index(dma_op_names, NEFF_DMA_OP_COUNT, s, &i))
        return false;
    *op = (enum neff_dma_op)i;
    return true;
}

bool neff_is_npy_name(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n >= 4 && strcmp(name + n - 4, ".npy") == 0;
}

char *neff_strdup_opt(const char *s, bool *ok)
{
    if (s == NULL)
        return NULL;
    char *c = strdup(s);
    if (c == NULL)
        *ok = false;
    return c;
}

/* ---- clearing ---------------------------------------------------------- */

static void str_array_free(char **a, uint32_t n)
{
    for (uint32_t i = 0; a != NULL && i < n; i++)
        free(a[i]);
    free(a);
}

void neff_io_clear(struct neff_io *io)
{
    free(io->name);
    free(io->shape);
    memset(io, 0, sizeof *io);
}

void neff_var_clear(struct neff_var *v)
{
    free(v->name);
    free(v->fabric_path);
    free(v->file_name);
    free(v->list);
    free(v->ops_json);
    neff_buf_unref(v->file);
    memset(v, 0, sizeof *v);
}

void neff_queue_clear(struct neff_queue *q)
{
    free(q->name);
    free(q->owner);
    str_array_free(q->instances, q->n_instances);
    free(q->semaphore_set);
    free(q->fabric_path);
    free(q->dynamic_dma_json);
    memset(q, 0, sizeof *q);
}

void neff_ap_clear(struct neff_dma_ap *ap)
{
    free(ap->var);
    memset(ap, 0, sizeof *ap);
    ap->var_index = -1;
}

void neff_desc_clear(struct neff_dma_desc *d)
{
    free(d->queue);
    free(d->instance_name);
    free(d->function_start);
    free(d->remote_semaphores);
    for (uint32_t i = 0; d->from != NULL && i < d->n_from; i++)
        neff_ap_clear(&d->from[i]);
    free(d->from);
    neff_ap_clear(&d->to);
    memset(d, 0, sizeof *d);
}

static void engine_clear(struct neff_engine_sec *e)
{
    free(e->bin_file);
    free(e->json_file);
    neff_buf_unref(e->code);
    for (uint32_t i = 0; i < e->n_descs; i++)
        neff_desc_clear(&e->descs[i]);
    free(e->descs);
    str_array_free(e->act_func_sets, e->n_act_func_sets);
    memset(e, 0, sizeof *e);
}

static void sg_free(struct neff_subgraph *sg)
{
    if (sg == NULL)
        return;
    free(sg->name);
    for (uint32_t i = 0; i < sg->n_vars; i++)
        neff_var_clear(&sg->vars[i]);
    free(sg->vars);
    for (uint32_t i = 0; i < sg->n_queues; i++)
        neff_queue_clear(&sg->queues[i]);
    free(sg->queues);
    for (int e = 0; e < NEFF_ENG_COUNT; e++)
        engine_clear(&sg->eng[e]);
    free(sg);
}

void neff_model_free(struct neff_model *m)
{
    if (m == NULL)
        return;
    for (uint32_t i = 0; i < m->n_io; i++)
        neff_io_clear(&m->io[i]);
    free(m->io);
    for (uint32_t i = 0; i < m->n_sgs; i++)
        sg_free(m->sgs[i]);
    free(m->sgs);
    free(m);
}

void neff_subgraph_drop_code(struct neff_subgraph *sg)
{
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        neff_buf_unref(sg->eng[e].code);
        sg->eng[e].code = NULL;
    }
}

/* ---- growing lists ----------------------------------------------------- */

/* Make room for one more element in *arr (count n, capacity *cap). */
static bool grow(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
    size_t c = *cap;
    if (n >= *cap && *cap >= UINT32_MAX / 2)
        return false; /* the model's counts are 32-bit */
    if (!grow_array(arr, (size_t)n + 1, &c, elem, 8))
        return false;
    *cap = (uint32_t)c;
    return true;
}

#define PUSH(arr, n, cap, x)                                                  \
    do {                                                                      \
        if (!grow((void **)&(arr), (n), &(cap), sizeof *(arr))) {             \
            LOG_ERROR("NEFF", "model: out of memory");                        \
            return EMU_RESOURCE;                                              \
        }                                                                     \
        (arr)[(n)++] = *(x);                                                  \
        memset((x), 0, sizeof *(x));                                          \
    } while (0)

emu_status neff_sg_push_var(struct neff_subgraph *sg, struct neff_var *v)
{
    PUSH(sg->vars, sg->n_vars, sg->cap_vars, v);
    return EMU_OK;
}

emu_status neff_sg_push_queue(struct neff_subgraph *sg, struct neff_queue *q)
{
    PUSH(sg->queues, sg->n_queues, sg->cap_queues, q);
    return EMU_OK;
}

emu_status neff_sg_push_desc(struct neff_subgraph *sg, enum neff_engine e,
                             struct neff_dma_desc *d)
{
    struct neff_engine_sec *s = &sg->eng[e];
    PUSH(s->descs, s->n_descs, s->cap_descs, d);
    return EMU_OK;
}

emu_status neff_model_push_io(struct neff_model *m, struct neff_io *io)
{
    PUSH(m->io, m->n_io, m->cap_io, io);
    return EMU_OK;
}

struct neff_subgraph *neff_model_push_sg(struct neff_model *m, const char *name)
{
    struct neff_subgraph *sg = calloc(1, sizeof *sg);
    struct neff_subgraph **p = NULL;
    if (sg != NULL && m->n_sgs < UINT32_MAX - 1)
        p = realloc(m->sgs, (m->n_sgs + 1) * sizeof *p);
    if (sg != NULL && p != NULL)
        m->sgs = p;
    if (sg == NULL || p == NULL || (sg->name = strdup(name)) == NULL) {
        free(sg);
        LOG_ERROR("NEFF", "model: out of memory");
        return NULL;
    }
    m->sgs[m->n_sgs++] = sg;
    return sg;
}

/* ---- lookups ----------------------------------------------------------- */

struct neff_var *neff_sg_find_var(const struct neff_subgraph *sg, const char *name)
{
    for (uint32_t i = 0; name != NULL && i < sg->n_vars; i++)
        if (strcmp(sg->vars[i].name, name) == 0)
            return &sg->vars[i];
    return NULL;
}

struct neff_var *neff_sg_find_var_id(const struct neff_subgraph *sg, uint32_t var_id)
{
    for (uint32_t i = 0; i < sg->n_vars; i++)
        if (sg->vars[i].var_id == var_id)
            return &sg->vars[i];
    return NULL;
}

struct neff_queue *neff_sg_find_queue(const struct neff_subgraph *sg, const char *name)
{
    for (uint32_t i = 0; name != NULL && i < sg->n_queues; i++)
        if (strcmp(sg->queues[i].name, name) == 0)
            return &sg->queues[i];
    return NULL;
}

const struct neff_io *neff_model_find_io(const struct neff_model *m, const char *name)
{
    for (uint32_t i = 0; name != NULL && i < m->n_io; i++)
        if (strcmp(m->io[i].name, name) == 0)
            return &m->io[i];
    return NULL;
}

const uint8_t *neff_var_data(const struct neff_var *v)
{
    return v->file ? neff_buf_data(v->file) + v->data_off : NULL;
}

bool neff_model_is_trnemu(const struct neff_model *m)
{
    if (m == NULL || !(m->info.feature_bits & NEFF_FEATURE_TRNEMU_ISA) || m->n_sgs == 0)
        return false;
    for (uint32_t i = 0; i < m->n_sgs; i++)
        if (m->sgs[i]->isa_version == 0)
            return false;
    return true;
}

/* ---- access patterns --------------------------------------------------- */

bool neff_ap_range(const struct neff_dma_ap *ap, uint64_t *lo, uint64_t *hi)
{
    if (ap->ndim == 0 || ap->ndim > NEFF_AP_MAX_DIMS)
        return false;
    int64_t neg = 0;          /* most negative reach below off */
    uint64_t pos = 0;         /* furthest reach above off */
    for (uint32_t d = 0; d < ap->ndim; d++) {
        if (ap->sizes[d] == 0) {
            *lo = *hi = ap->off;
            return true;
        }
    }
    for (uint32_t d = 0; d < ap->ndim; d++) {
        uint64_t n = ap->sizes[d] - 1;
        int64_t st = ap->steps[d];
        uint64_t mag = st < 0 ? (uint64_t)0 - (uint64_t)st : (uint64_t)st;
        uint64_t reach;
        if (__builtin_mul_overflow(n, mag, &reach))
            return false;
        if (st >= 0) {
            if (__builtin_add_overflow(pos, reach, &pos))
                return false;
        } else {
            if (reach > (uint64_t)INT64_MAX || __builtin_sub_overflow(neg, (int64_t)reach, &neg))
                return false;
        }
    }
    uint64_t down = (uint64_t)0 - (uint64_t)neg;
    if (down > ap->off)
        return false;
    *lo = ap->off - down;
    if (__builtin_add_overflow(ap->off, pos, hi) || __builtin_add_overflow(*hi, 1, hi))
        return false;
    return true;
}

bool neff_ap_bytes(const struct neff_dma_ap *ap, uint64_t *bytes)
{
    uint64_t n = 1;
    if (ap->ndim == 0 || ap->ndim > NEFF_AP_MAX_DIMS)
        return false;
    for (uint32_t d = 0; d < ap->ndim; d++)
        if (__builtin_mul_overflow(n, ap->sizes[d], &n))
            return false;
    *bytes = n;
    return true;
}
