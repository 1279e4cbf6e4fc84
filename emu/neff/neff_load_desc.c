/*
 * neff_load_desc.c: DMA descriptors of an engine JSON (see
 * neff_load_int.h): access patterns, sources, the op and its fields.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "emu/neff/neff_load_int.h"
#include "emu/neff/neff_model.h"
#include "emu/neff/neff_model_int.h"

/* ---- engine JSON: descriptors ----------------------------------------- */

/* Read "<p>", "<p>_off", "<p>_steps", "<p>_sizes", "<p>_dtype" from o. */
static emu_status ap_load(const struct neff_jw *w, json_t *o, const char *p, struct neff_dma_ap *ap)
{
    char k_off[16], k_steps[16], k_sizes[16], k_dtype[16];
    snprintf(k_off, sizeof k_off, "%s_off", p);
    snprintf(k_steps, sizeof k_steps, "%s_steps", p);
    snprintf(k_sizes, sizeof k_sizes, "%s_sizes", p);
    snprintf(k_dtype, sizeof k_dtype, "%s_dtype", p);
    ap->var_index = -1;
    ap->dtype = NEFF_DTYPE_UINT8;
    emu_status st = neff_jget_str(w, o, p, true, &ap->var);
    if (st == EMU_OK)
        st = neff_jget_u64(w, o, k_off, true, &ap->off, NULL);
    json_t *steps = NULL;
    if (st == EMU_OK)
        st = neff_jget_typed(w, o, k_steps, true, true, &steps);
    uint64_t *sizes = NULL;
    uint32_t n = 0;
    if (st == EMU_OK)
        st = neff_jget_uint_array(w, o, k_sizes, true, UINT64_MAX, NEFF_AP_MAX_DIMS, &sizes, &n);
    if (st == EMU_OK && (n == 0 || json_array_size(steps) != n))
        st = neff_jerr(w, k_steps, "steps and sizes need the same 1 to 4 entries");
    for (uint32_t i = 0; st == EMU_OK && i < n; i++) {
        json_t *e = json_array_get(steps, i);
        if (!json_is_integer(e))
            st = neff_jerr(w, k_steps, "entries must be integers");
        else
            ap->steps[i] = (int64_t)json_integer_value(e);
        ap->sizes[i] = sizes[i];
    }
    free(sizes);
    ap->ndim = n;
    if (st == EMU_OK)
        st = neff_jget_dtype(w, o, k_dtype, false, &ap->dtype);
    return st;
}

static emu_status desc_sources(const struct neff_jw *w, json_t *dj, struct neff_dma_desc *d)
{
    json_t *arr;
    emu_status st = neff_jget_typed(w, dj, "from_arr", false, true, &arr);
    if (st != EMU_OK)
        return st;
    size_t n = arr ? json_array_size(arr) : 1;
    if (arr && (n == 0 || n > NEFF_MAX_CCE_SOURCES))
        return neff_jerr(w, "from_arr", "needs 1 to 16 entries");
    d->cce = arr != NULL;
    d->from = calloc(n, sizeof *d->from);
    if (d->from == NULL)
        return neff_joom(w);
    for (size_t i = 0; i < n; i++)
        d->from[i].var_index = -1;
    d->n_from = (uint32_t)n;
    if (!arr)
        return ap_load(w, dj, "from", &d->from[0]);
    for (size_t i = 0; i < n && st == EMU_OK; i++) {
        json_t *e = json_array_get(arr, i);
        if (!json_is_object(e))
            return neff_jerr(w, "from_arr", "entries must be objects");
        st = ap_load(w, e, "from", &d->from[i]);
    }
    return st;
}

/* Op-specific desc fields: fma scale, min/max constant, transpose. */
static emu_status desc_op_fields(const struct neff_jw *w, json_t *dj, struct neff_dma_desc *d)
{
    emu_status st = EMU_OK;
    d->scale = 1.0;
    d->scale_dtype = NEFF_DTYPE_FLOAT32;
    if (d->op == NEFF_DMA_FMA) {
        st = neff_jget_double(w, dj, "scale", false, &d->scale);
        if (st == EMU_OK)
            st = neff_jget_dtype(w, dj, "scale_dtype", false, &d->scale_dtype);
    }
    if (st == EMU_OK)
        st = neff_jget_dtype(w, dj, "constant_dtype", false, &d->constant_dtype);
    if (st == EMU_OK && d->constant_dtype != NEFF_DTYPE_NONE)
        st = neff_jget_double(w, dj, "constant", true, &d->constant);
    uint32_t *shape = NULL, n = 0;
    if (st == EMU_OK)
        st = neff_jget_u32_array(w, dj, "transpose_shape", false, NEFF_AP_MAX_DIMS, &shape, &n);
    if (st == EMU_OK && shape != NULL) {
        if (n != NEFF_AP_MAX_DIMS)
            st = neff_jerr(w, "transpose_shape", "needs exactly 4 entries");
        else
            memcpy(d->transpose_shape, shape, sizeof d->transpose_shape);
        d->has_transpose_shape = true;
    }
    free(shape);
    if (st == EMU_OK)
        st = neff_jget_u32(w, dj, "transpose_element_size", false, &d->transpose_element_size,
                           NULL);
    return st;
}

static emu_status desc_body(const struct neff_jw *w, json_t *dj, struct neff_dma_desc *d)
{
    char *op = NULL;
    emu_status st = neff_jget_str(w, dj, "op", false, &op);
    if (st == EMU_OK && op != NULL && !neff_dma_op_parse(op, &d->op))
        st = neff_jerr(w, "op", "unknown DMA op");
    free(op);
    if (st == EMU_OK)
        st = desc_sources(w, dj, d);
    if (st == EMU_OK)
        st = ap_load(w, dj, "to", &d->to);
    if (st == EMU_OK)
        st = neff_jget_u32(w, dj, "num_tiling_dimensions", false, &d->num_tiling_dimensions,
                           &d->has_tiling_dims);
    if (st == EMU_OK)
        st = desc_op_fields(w, dj, d);
    return st;
}

static emu_status desc_fields(const struct neff_jw *w, json_t *o, struct neff_dma_desc *d)
{
    emu_status st = neff_jget_u32(w, o, "id", true, &d->id, NULL);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "queue", false, &d->queue);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "instance_name", false, &d->instance_name);
    if (st == EMU_OK)
        st = neff_jget_str(w, o, "function_start", false, &d->function_start);
    if (st == EMU_OK)
        st = neff_jget_bool(w, o, "section_start_desc", &d->section_start_desc);
    if (st == EMU_OK)
        st = neff_jget_u32(w, o, "event", false, &d->event, &d->has_event);
    if (st == EMU_OK)
        st = neff_jget_u32(w, o, "semaphore", false, &d->semaphore, &d->has_semaphore);
    if (st == EMU_OK)
        st = neff_jget_u32_array(w, o, "remote_semaphores", false, SIZE_MAX, &d->remote_semaphores,
                                 &d->n_remote_semaphores);
    json_t *dj = NULL;
    if (st == EMU_OK)
        st = neff_jget_typed(w, o, "desc", true, false, &dj);
    if (st == EMU_OK) {
        char obj[64];
        snprintf(obj, sizeof obj, "%s.desc", w->obj);
        struct neff_jw wd = {.member = w->member, .obj = obj};
        st = desc_body(&wd, dj, d);
    }
    return st;
}

emu_status neff_desc_load(struct neff_subgraph *sg, enum neff_engine e, const char *member,
                          size_t index, json_t *o)
{
    char obj[48];
    snprintf(obj, sizeof obj, "dma[%zu]", index);
    struct neff_jw w = {.member = member, .obj = obj};
    if (neff_jobject(&w, o) != EMU_OK)
        return EMU_INVALID;
    struct neff_dma_desc d = {0};
    d.to.var_index = -1;
    emu_status st = desc_fields(&w, o, &d);
    if (st == EMU_OK)
        st = neff_sg_push_desc(sg, e, &d);
    neff_desc_clear(&d);
    return st;
}
