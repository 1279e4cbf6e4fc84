/*
 * neff_equal.c: deep comparison of two NEFF models (neff_model_equal),
 * field by field and byte by byte.
 */
#include "emu/neff/neff_model.h"

#include <string.h>

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
