/*
 * neff_build.c: the C builder of a NEFF model (see neff_model.h): a new
 * model, subgraphs, I/O tensors, variables, queues, engine code and DMA
 * descriptors, each copied in and checked for size as it is added.
 */
#include "emu/neff/neff_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_model_int.h"
#include "emu/neff/npy.h"

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
bool neff_io_size(uint32_t dtype, const uint32_t *shape, uint32_t ndim, uint64_t *size)
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
        (ndim > 0 && shape == NULL) || !neff_io_size(dtype, shape, ndim, &io.size)) {
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
        *slot = strdup(code ? neff_engine_default_bin(e) : neff_engine_default_json(e));
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
        LOG_ERROR("NEFF", "%s: %s: out of memory", sg->name, neff_engine_name(e));
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
        LOG_ERROR("NEFF", "%s: %s: out of memory", sg->name, neff_engine_name(e));
    neff_desc_clear(&c);
    return st;
}
