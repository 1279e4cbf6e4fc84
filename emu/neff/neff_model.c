/*
 * neff_model.c: the NEFF metadata model (see neff_model.h): name tables,
 * construction and destruction, the C builder, lookups, access-pattern
 * bounds, validation of cross references, and deep comparison. Loading
 * from JSON lives in neff_load.c, storing to JSON in neff_store.c.
 */
#include "emu/neff/neff_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_model_int.h"
#include "emu/neff/npy.h"

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

/* ---- growing lists ----------------------------------------------------- */

/* Make room for one more element in *arr (count n, capacity *cap). */
static bool grow(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
    if (n < *cap)
        return true;
    if (*cap >= UINT32_MAX / 2)
        return false;
    uint32_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
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

/* ---- builder ----------------------------------------------------------- */

struct neff_model *neff_model_new(const char *name)
{
    struct neff_model *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NULL;
    m->info.neff_version_major = NEFF_VERSION_MAJOR_TRNEMU;
    m->info.neff_version_minor = NEFF_VERSION_MINOR_TRNEMU;
    m->info.pkg_version = NEFF_PKG_VERSION_SHA256;
    m->info.feature_bits = NEFF_FEATURE_TRNEMU_ISA;
    snprintf(m->info.build_version, sizeof m->info.build_version, "trnemu");
    if (name != NULL)
        snprintf(m->info.name, sizeof m->info.name, "%s", name);
    return m;
}

struct neff_subgraph *neff_model_add_subgraph(struct neff_model *m)
{
    char name[16];
    snprintf(name, sizeof name, "sg%02u", m->n_sgs % 10000u);
    struct neff_subgraph *sg = neff_model_push_sg(m, name);
    if (sg == NULL)
        return NULL;
    if (m->info.feature_bits & NEFF_FEATURE_TRNEMU_ISA)
        sg->isa_version = NEFF_TRNEMU_ISA_VERSION;
    m->info.num_tpb = m->info.requested_tpb_count = m->info.lnc_size = m->n_sgs;
    if (m->n_sgs <= NEFF_MAX_NODES)
        m->info.tpb_per_node[0] = (uint8_t)m->n_sgs;
    return sg;
}

/* prod(shape) * dtype size with overflow checks. */
static bool io_size(uint32_t dtype, const uint32_t *shape, uint32_t ndim, uint64_t *size)
{
    uint64_t n = neff_dtype_size(dtype);
    for (uint32_t i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(n, (uint64_t)shape[i], &n))
            return false;
    *size = n;
    return true;
}

emu_status neff_model_add_io(struct neff_model *m, const char *name, bool is_output,
                             uint32_t dtype, const uint32_t *shape, uint32_t ndim)
{
    struct neff_io io = {.is_output = is_output, .dtype = dtype, .ndim = ndim};
    if (name == NULL || neff_dtype_size(dtype) == 0 || ndim > NEFF_IO_MAX_DIMS ||
        (ndim > 0 && shape == NULL) || !io_size(dtype, shape, ndim, &io.size)) {
        LOG_ERROR("NEFF", "model: io '%s': bad name, dtype %u or shape", name ? name : "?",
                  dtype);
        return EMU_INVALID;
    }
    if (neff_model_find_io(m, name) != NULL) {
        LOG_ERROR("NEFF", "model: io '%s': duplicate name", name);
        return EMU_INVALID;
    }
    io.name = strdup(name);
    io.shape = ndim ? malloc(ndim * sizeof *io.shape) : NULL;
    if (io.name == NULL || (ndim && io.shape == NULL)) {
        neff_io_clear(&io);
        LOG_ERROR("NEFF", "model: out of memory");
        return EMU_RESOURCE;
    }
    if (ndim)
        memcpy(io.shape, shape, ndim * sizeof *shape);
    emu_status st = neff_model_push_io(m, &io);
    neff_io_clear(&io);
    return st;
}

static uint32_t *u32_dup(const uint32_t *a, uint32_t n, bool *ok)
{
    if (n == 0 || a == NULL)
        return NULL;
    uint32_t *c = malloc(n * sizeof *c);
    if (c == NULL)
        *ok = false;
    else
        memcpy(c, a, n * sizeof *c);
    return c;
}

static char **str_array_dup(char *const *a, uint32_t n, bool *ok)
{
    if (n == 0 || a == NULL)
        return NULL;
    char **c = calloc(n, sizeof *c);
    if (c == NULL) {
        *ok = false;
        return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
        c[i] = neff_strdup_opt(a[i], ok);
    return c;
}

emu_status neff_var_set_payload(struct neff_var *v, const char *what)
{
    size_t n = neff_buf_size(v->file);
    v->data_off = 0;
    v->data_len = n;
    if (v->file == NULL || !neff_is_npy_name(v->file_name))
        return EMU_OK;
    struct npy_info info;
    emu_status st = npy_parse(neff_buf_data(v->file), n, what, &info);
    if (st != EMU_OK)
        return st;
    v->data_off = info.data_off;
    v->data_len = info.data_len;
    return EMU_OK;
}

emu_status neff_sg_add_var(struct neff_subgraph *sg, const struct neff_var *v)
{
    if (v == NULL || v->name == NULL || neff_sg_find_var(sg, v->name) != NULL) {
        LOG_ERROR("NEFF", "%s: var '%s': missing or duplicate name", sg->name,
                  v && v->name ? v->name : "?");
        return EMU_INVALID;
    }
    bool ok = true;
    struct neff_var c = *v;
    c.name = neff_strdup_opt(v->name, &ok);
    c.fabric_path = neff_strdup_opt(v->fabric_path, &ok);
    c.file_name = neff_strdup_opt(v->file_name, &ok);
    c.list = u32_dup(v->list, v->n_list, &ok);
    c.n_list = c.list ? v->n_list : 0;
    c.ops_json = neff_strdup_opt(v->ops_json, &ok);
    c.file = neff_buf_ref(v->file);
    if (!ok) {
        neff_var_clear(&c);
        LOG_ERROR("NEFF", "%s: var '%s': out of memory", sg->name, v->name);
        return EMU_RESOURCE;
    }
    char what[NEFF_MAX_PATH + 64];
    snprintf(what, sizeof what, "%s/%s", sg->name, v->file_name ? v->file_name : "?");
    emu_status st = neff_var_set_payload(&c, what);
    if (st == EMU_OK)
        st = neff_sg_push_var(sg, &c);
    neff_var_clear(&c);
    return st;
}

emu_status neff_sg_add_queue(struct neff_subgraph *sg, const struct neff_queue *q)
{
    if (q == NULL || q->name == NULL || neff_sg_find_queue(sg, q->name) != NULL) {
        LOG_ERROR("NEFF", "%s: dma_queue '%s': missing or duplicate name", sg->name,
                  q && q->name ? q->name : "?");
        return EMU_INVALID;
    }
    bool ok = true;
    struct neff_queue c = *q;
    c.name = neff_strdup_opt(q->name, &ok);
    c.owner = neff_strdup_opt(q->owner, &ok);
    c.instances = str_array_dup(q->instances, q->n_instances, &ok);
    c.n_instances = c.instances ? q->n_instances : 0;
    c.semaphore_set = u32_dup(q->semaphore_set, q->n_semaphore_set, &ok);
    c.n_semaphore_set = c.semaphore_set ? q->n_semaphore_set : 0;
    c.fabric_path = neff_strdup_opt(q->fabric_path, &ok);
    c.dynamic_dma_json = neff_strdup_opt(q->dynamic_dma_json, &ok);
    emu_status st = EMU_RESOURCE;
    if (ok)
        st = neff_sg_push_queue(sg, &c);
    else
        LOG_ERROR("NEFF", "%s: dma_queue '%s': out of memory", sg->name, q->name);
    neff_queue_clear(&c);
    return st;
}

/* Mark an engine section present and give it a default member name for
 * its stream (code) or its JSON (!code) when it has none. */
static bool engine_default_name(struct neff_engine_sec *s, enum neff_engine e, bool code)
{
    char **slot = code ? &s->bin_file : &s->json_file;
    s->present = true;
    if (*slot == NULL)
        *slot = strdup(code ? engine_bins[e] : engine_jsons[e]);
    return *slot != NULL;
}

emu_status neff_sg_set_code(struct neff_subgraph *sg, enum neff_engine e, const void *code,
                            size_t size)
{
    if ((unsigned)e >= NEFF_ENG_COUNT || (code == NULL && size > 0)) {
        LOG_ERROR("NEFF", "%s: set_code: bad engine %d or NULL code", sg->name, (int)e);
        return EMU_INVALID;
    }
    struct neff_engine_sec *s = &sg->eng[e];
    struct neff_buf *b = neff_buf_copy(code, size);
    if (b == NULL || !engine_default_name(s, e, true)) {
        neff_buf_unref(b);
        LOG_ERROR("NEFF", "%s: %s: out of memory", sg->name, engine_names[e]);
        return EMU_RESOURCE;
    }
    neff_buf_unref(s->code);
    s->code = b;
    return EMU_OK;
}

static bool ap_copy(struct neff_dma_ap *dst, const struct neff_dma_ap *src, bool *ok)
{
    *dst = *src;
    dst->var = neff_strdup_opt(src->var, ok);
    dst->var_index = -1;
    return *ok;
}

/* Give fields that only some ops use their defaults, as loading does. */
static void desc_normalize(struct neff_dma_desc *d)
{
    if (d->op != NEFF_DMA_FMA || d->scale_dtype == NEFF_DTYPE_NONE) {
        if (d->op != NEFF_DMA_FMA)
            d->scale = 1.0;
        d->scale_dtype = NEFF_DTYPE_FLOAT32;
    }
    if (d->constant_dtype == NEFF_DTYPE_NONE)
        d->constant = 0.0;
    for (uint32_t i = 0; i < d->n_from; i++)
        if (d->from[i].dtype == NEFF_DTYPE_NONE)
            d->from[i].dtype = NEFF_DTYPE_UINT8;
    if (d->to.dtype == NEFF_DTYPE_NONE)
        d->to.dtype = NEFF_DTYPE_UINT8;
}

emu_status neff_sg_add_desc(struct neff_subgraph *sg, enum neff_engine e,
                            const struct neff_dma_desc *d)
{
    if ((unsigned)e >= NEFF_ENG_COUNT || d == NULL || (d->n_from > 0 && d->from == NULL)) {
        LOG_ERROR("NEFF", "%s: add_desc: bad engine %d or descriptor", sg->name, (int)e);
        return EMU_INVALID;
    }
    bool ok = true;
    struct neff_dma_desc c = *d;
    c.queue = neff_strdup_opt(d->queue, &ok);
    c.instance_name = neff_strdup_opt(d->instance_name, &ok);
    c.function_start = neff_strdup_opt(d->function_start, &ok);
    c.remote_semaphores = u32_dup(d->remote_semaphores, d->n_remote_semaphores, &ok);
    c.n_remote_semaphores = c.remote_semaphores ? d->n_remote_semaphores : 0;
    c.from = d->n_from ? calloc(d->n_from, sizeof *c.from) : NULL;
    c.n_from = c.from ? d->n_from : 0;
    ok = ok && (d->n_from == 0 || c.from != NULL);
    for (uint32_t i = 0; ok && i < c.n_from; i++)
        ap_copy(&c.from[i], &d->from[i], &ok);
    ap_copy(&c.to, &d->to, &ok);
    desc_normalize(&c);
    emu_status st = EMU_RESOURCE;
    if (ok && engine_default_name(&sg->eng[e], e, false))
        st = neff_sg_push_desc(sg, e, &c);
    else
        LOG_ERROR("NEFF", "%s: %s: out of memory", sg->name, engine_names[e]);
    neff_desc_clear(&c);
    return st;
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
                      sg->name, engine_names[e]);
            return EMU_INVALID;
        }
        return EMU_OK;
    }
    if ((s->code != NULL) != (s->bin_file != NULL) || (s->n_descs > 0 && s->json_file == NULL)) {
        LOG_ERROR("NEFF", "%s/def.json: %s: code without bin_file, bin_file without code, or "
                  "descriptors without json_file", sg->name, engine_names[e]);
        return EMU_INVALID;
    }
    if (s->by_ref && s->json_file == NULL) {
        LOG_ERROR("NEFF", "%s/def.json: %s: a section by reference needs its engine JSON member",
                  sg->name, engine_names[e]);
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
                      "role", sg->name, engine_names[e], j);
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
    else if (!io_size(io->dtype, io->shape, io->ndim, &size) || size != io->size ||
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
                          "bytes in neff.json", sg->name, v->name, var_type_names[v->type],
                          var_type_names[v->type], (unsigned long long)v->size);
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

/* ---- deep comparison --------------------------------------------------- */

static bool str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool mem_eq(const void *a, const void *b, size_t n)
{
    return n == 0 || memcmp(a, b, n) == 0;
}

static bool strs_eq(char *const *a, uint32_t na, char *const *b, uint32_t nb)
{
    if (na != nb)
        return false;
    for (uint32_t i = 0; i < na; i++)
        if (!str_eq(a[i], b[i]))
            return false;
    return true;
}

static bool bytes_eq(const struct neff_buf *a, size_t aoff, size_t alen,
                     const struct neff_buf *b, size_t boff, size_t blen)
{
    if ((a == NULL) != (b == NULL) || alen != blen)
        return false;
    return a == NULL || mem_eq(neff_buf_data(a) + aoff, neff_buf_data(b) + boff, alen);
}

static bool io_eq(const struct neff_io *a, const struct neff_io *b)
{
    return str_eq(a->name, b->name) && a->is_output == b->is_output && a->dtype == b->dtype &&
           a->ndim == b->ndim && a->size == b->size &&
           mem_eq(a->shape, b->shape, a->ndim * sizeof *a->shape);
}

static bool var_eq(const struct neff_var *a, const struct neff_var *b)
{
    return str_eq(a->name, b->name) && a->type == b->type && a->var_id == b->var_id &&
           a->size == b->size && a->no_size == b->no_size && a->alignment == b->alignment &&
           str_eq(a->fabric_path, b->fabric_path) && str_eq(a->file_name, b->file_name) &&
           a->has_backing_off == b->has_backing_off &&
           (!a->has_backing_off || a->backing_variable_off == b->backing_variable_off) &&
           a->has_referenced_var == b->has_referenced_var &&
           (!a->has_referenced_var || a->referenced_var_id == b->referenced_var_id) &&
           a->n_list == b->n_list && mem_eq(a->list, b->list, a->n_list * sizeof *a->list) &&
           str_eq(a->ops_json, b->ops_json) &&
           bytes_eq(a->file, 0, neff_buf_size(a->file), b->file, 0, neff_buf_size(b->file)) &&
           a->data_off == b->data_off && a->data_len == b->data_len;
}

static bool queue_eq(const struct neff_queue *a, const struct neff_queue *b)
{
    return str_eq(a->name, b->name) && a->type == b->type && a->num_queues == b->num_queues &&
           str_eq(a->owner, b->owner) && a->pinned == b->pinned &&
           strs_eq(a->instances, a->n_instances, b->instances, b->n_instances) &&
           a->n_semaphore_set == b->n_semaphore_set &&
           mem_eq(a->semaphore_set, b->semaphore_set,
                  a->n_semaphore_set * sizeof *a->semaphore_set) &&
           a->has_semaphore == b->has_semaphore &&
           (!a->has_semaphore || a->semaphore == b->semaphore) &&
           str_eq(a->fabric_path, b->fabric_path) &&
           str_eq(a->dynamic_dma_json, b->dynamic_dma_json);
}

static bool ap_eq(const struct neff_dma_ap *a, const struct neff_dma_ap *b)
{
    return str_eq(a->var, b->var) && a->off == b->off && a->ndim == b->ndim &&
           a->ndim <= NEFF_AP_MAX_DIMS &&
           mem_eq(a->steps, b->steps, a->ndim * sizeof a->steps[0]) &&
           mem_eq(a->sizes, b->sizes, a->ndim * sizeof a->sizes[0]) && a->dtype == b->dtype;
}

static bool desc_eq(const struct neff_dma_desc *a, const struct neff_dma_desc *b)
{
    if (!(a->id == b->id && str_eq(a->queue, b->queue) &&
          str_eq(a->instance_name, b->instance_name) &&
          str_eq(a->function_start, b->function_start) &&
          a->section_start_desc == b->section_start_desc && a->has_event == b->has_event &&
          (!a->has_event || a->event == b->event) && a->has_semaphore == b->has_semaphore &&
          (!a->has_semaphore || a->semaphore == b->semaphore) &&
          a->n_remote_semaphores == b->n_remote_semaphores &&
          mem_eq(a->remote_semaphores, b->remote_semaphores,
                 a->n_remote_semaphores * sizeof *a->remote_semaphores) &&
          a->op == b->op && a->cce == b->cce && a->n_from == b->n_from && ap_eq(&a->to, &b->to) &&
          a->has_tiling_dims == b->has_tiling_dims &&
          (!a->has_tiling_dims || a->num_tiling_dimensions == b->num_tiling_dimensions) &&
          a->scale == b->scale && a->scale_dtype == b->scale_dtype &&
          a->constant_dtype == b->constant_dtype && a->constant == b->constant &&
          a->has_transpose_shape == b->has_transpose_shape &&
          (!a->has_transpose_shape ||
           mem_eq(a->transpose_shape, b->transpose_shape, sizeof a->transpose_shape)) &&
          a->transpose_element_size == b->transpose_element_size))
        return false;
    for (uint32_t i = 0; i < a->n_from; i++)
        if (!ap_eq(&a->from[i], &b->from[i]))
            return false;
    return true;
}

static bool engine_eq(const struct neff_engine_sec *a, const struct neff_engine_sec *b)
{
    if (a->present != b->present || a->by_ref != b->by_ref || !str_eq(a->bin_file, b->bin_file) ||
        !str_eq(a->json_file, b->json_file) ||
        !bytes_eq(a->code, 0, neff_buf_size(a->code), b->code, 0, neff_buf_size(b->code)) ||
        a->n_descs != b->n_descs ||
        !strs_eq(a->act_func_sets, a->n_act_func_sets, b->act_func_sets, b->n_act_func_sets))
        return false;
    for (uint32_t i = 0; i < a->n_descs; i++)
        if (!desc_eq(&a->descs[i], &b->descs[i]))
            return false;
    return true;
}

static bool sg_eq(const struct neff_subgraph *a, const struct neff_subgraph *b)
{
    if (!str_eq(a->name, b->name) || a->isa_version != b->isa_version ||
        a->n_vars != b->n_vars || a->n_queues != b->n_queues)
        return false;
    for (uint32_t i = 0; i < a->n_vars; i++)
        if (!var_eq(&a->vars[i], &b->vars[i]))
            return false;
    for (uint32_t i = 0; i < a->n_queues; i++)
        if (!queue_eq(&a->queues[i], &b->queues[i]))
            return false;
    for (int e = 0; e < NEFF_ENG_COUNT; e++)
        if (!engine_eq(&a->eng[e], &b->eng[e]))
            return false;
    return true;
}

static bool info_eq(const struct neff_model_info *a, const struct neff_model_info *b)
{
    return a->neff_version_major == b->neff_version_major &&
           a->neff_version_minor == b->neff_version_minor && a->pkg_version == b->pkg_version &&
           strcmp(a->build_version, b->build_version) == 0 && strcmp(a->name, b->name) == 0 &&
           memcmp(a->uuid, b->uuid, sizeof a->uuid) == 0 && a->num_tpb == b->num_tpb &&
           a->requested_tpb_count == b->requested_tpb_count &&
           memcmp(a->tpb_per_node, b->tpb_per_node, sizeof a->tpb_per_node) == 0 &&
           a->feature_bits == b->feature_bits && a->lnc_size == b->lnc_size;
}

bool neff_model_equal(const struct neff_model *a, const struct neff_model *b)
{
    if (a == NULL || b == NULL)
        return a == b;
    if (!info_eq(&a->info, &b->info) || a->n_io != b->n_io || a->n_sgs != b->n_sgs)
        return false;
    for (uint32_t i = 0; i < a->n_io; i++)
        if (!io_eq(&a->io[i], &b->io[i]))
            return false;
    for (uint32_t i = 0; i < a->n_sgs; i++)
        if (!sg_eq(a->sgs[i], b->sgs[i]))
            return false;
    return true;
}
