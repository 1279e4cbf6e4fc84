/*
 * model.c: loading, describing and unloading models (see model.h).
 */
#include "devices/runtime/model.h"
#include "devices/config/env.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devices/runtime/handle.h"
#include "devices/machine/instance.h"
#include "devices/runtime/runtime.h"
#include "devices/config/status.h"
#include "devices/runtime/tensor.h"
#include "emu/isa/isa_generation.h"
#include "emu/log.h"

/* ---- HBM placement ----------------------------------------------------- */

/* An HBM block on the model's VNC: allocated, or (restore) the plan's next. */
static NRT_STATUS model_take(struct nrt_model *m, uint64_t size, uint64_t align,
                             struct hbm_block *out)
{
    if (m->plan == NULL)
        return machine_hbm_take(rt_machine(), m->gvnc, size, align, out);
    const struct hbm_block *b = m->plan_used < m->nplan ? &m->plan[m->plan_used] : NULL;
    if (b == NULL || b->len != hbm_alloc_round(size) || b->vnc != m->gvnc ||
        (align > 1 && b->off % align != 0)) {
        LOG_ERROR("STORE", "model block %zu of the snapshot does not fit the NEFF "
                  "(%" PRIu64 " bytes, alignment %" PRIu64 ")", m->plan_used, size, align);
        return NRT_INVALID;
    }
    m->plan_used++;
    *out = *b;
    return machine_hbm_take_at(rt_machine(), b);
}

/* The memory_used category of a variable's HBM (enum instance_mem). */
static enum instance_mem model_var_mem_kind(enum neff_var_type type)
{
    switch (type) {
    case NEFF_VAR_FILE:
        return INSTANCE_MEM_CONSTANTS;
    case NEFF_VAR_POINTER:
    case NEFF_VAR_DGE_TABLE:
        return INSTANCE_MEM_RUNTIME;
    default:
        return INSTANCE_MEM_SCRATCHPAD;
    }
}

/* Allocate an HBM block for a variable on the model's VNC. */
static NRT_STATUS model_var_alloc(struct nrt_model *m, struct model_var *mv, uint64_t size,
                                  uint64_t align, const char *name)
{
    struct machine *mach = rt_machine();
    NRT_STATUS st = model_take(m, size ? size : 1, align, &mv->block);
    if (st != NRT_SUCCESS) {
        if (m->plan == NULL)  /* a restore plan's failure is logged by model_take */
            LOG_ERROR("NRT", "no device memory for variable '%s' (%" PRIu64 " bytes)", name, size);
        return st;
    }
    mv->owns_block = true;
    mv->va = machine_hbm_va(mach, &mv->block);
    mv->size = size;
    mv->dev_addr = mv->block.off;
    m->hbm_bytes += mv->block.len;
    return NRT_SUCCESS;
}

/* Bytes the `virtual` variables need: max(backing_variable_off + size). */
static NRT_STATUS model_scratch_size(const struct neff_model *nm, uint64_t *out)
{
    uint64_t need = 0;
    for (uint32_t s = 0; s < nm->n_sgs; s++)
        for (uint32_t i = 0; i < nm->sgs[s]->n_vars; i++) {
            const struct neff_var *v = &nm->sgs[s]->vars[i];
            if (v->type != NEFF_VAR_VIRTUAL)
                continue;
            uint64_t off = v->has_backing_off ? v->backing_variable_off : 0;
            if (off > UINT64_MAX - v->size) {
                LOG_ERROR("NEFF", "%s/def.json: var '%s': backing_variable_off + size overflows",
                          nm->sgs[s]->name, v->name);
                return NRT_INVALID;
            }
            if (off + v->size > need)
                need = off + v->size;
        }
    *out = need;
    return NRT_SUCCESS;
}

static NRT_STATUS model_place_scratch(struct nrt_model *m)
{
    uint64_t need;
    NRT_STATUS st = model_scratch_size(m->neff, &need);
    if (st != NRT_SUCCESS || need == 0)
        return st;
    st = model_take(m, need, HBM_ALLOC_MIN_ALIGN, &m->scratch);
    if (st != NRT_SUCCESS)
        return st;
    m->has_scratch = true;
    m->hbm_bytes += m->scratch.len;
    instance_use_memory(rt_machine()->inst, m->gvnc, INSTANCE_MEM_SCRATCHPAD, m->scratch.len,
                        true);
    return NRT_SUCCESS;
}

/* Place one variable; I/O and state-buffer variables get no HBM here. */
static NRT_STATUS model_place_var(struct nrt_model *m, const struct neff_var *v,
                                  struct model_var *mv)
{
    uint64_t align = v->alignment ? v->alignment : HBM_ALLOC_MIN_ALIGN;
    NRT_STATUS st = NRT_SUCCESS;
    mv->size = v->size;
    switch (v->type) {
    case NEFF_VAR_FILE:
        st = model_var_alloc(m, mv, v->size, align, v->name);
        if (st == NRT_SUCCESS && neff_var_data(v) != NULL)
            memcpy(mv->va, neff_var_data(v), v->data_len);
        break;
    case NEFF_VAR_TMP_BUF:
        st = model_var_alloc(m, mv, v->size, align, v->name);
        break;
    case NEFF_VAR_POINTER:
        st = model_var_alloc(m, mv, v->size >= 8 ? v->size : 8, align, v->name);
        break;
    case NEFF_VAR_DGE_TABLE:
        st = model_var_alloc(m, mv, (uint64_t)v->n_list * 8 > v->size ? (uint64_t)v->n_list * 8 : v->size,
                             align, v->name);
        break;
    case NEFF_VAR_VIRTUAL: {
        uint8_t *base = machine_hbm_va(rt_machine(), &m->scratch);
        uint64_t off = v->has_backing_off ? v->backing_variable_off : 0;
        mv->va = base + off;
        mv->dev_addr = m->scratch.off + off;
        break;
    }
    default: /* input, output, state-buffer */
        break;
    }
    if (st == NRT_SUCCESS && mv->owns_block)
        instance_use_memory(rt_machine()->inst, m->gvnc, model_var_mem_kind(v->type),
                            mv->block.len, true);
    return st;
}

/* Fill pointer cells and address tables once every variable has a home. */
static void model_link_addresses(struct model_sg *ms)
{
    const struct neff_subgraph *sg = ms->sg;
    for (uint32_t i = 0; i < sg->n_vars; i++) {
        const struct neff_var *v = &sg->vars[i];
        uint8_t *cell = ms->vars[i].va;
        if (v->type == NEFF_VAR_POINTER && v->has_referenced_var) {
            const struct neff_var *r = neff_sg_find_var_id(sg, v->referenced_var_id);
            uint64_t a = r ? ms->vars[r - sg->vars].dev_addr : 0;
            memcpy(cell, &a, 8);
        } else if (v->type == NEFF_VAR_DGE_TABLE) {
            for (uint32_t k = 0; k < v->n_list; k++) {
                const struct neff_var *r = neff_sg_find_var_id(sg, v->list[k]);
                uint64_t a = r ? ms->vars[r - sg->vars].dev_addr : 0;
                memcpy(cell + 8 * (size_t)k, &a, 8);
            }
        }
    }
}

/* ---- instruction streams ----------------------------------------------- */

/* Every HBM operand must name a variable of the subgraph. */
static emu_status model_check_vars(const struct model_sg *ms, enum isa_engine e)
{
    for (size_t i = 0; i < ms->ncode[e]; i++)
        for (int a = 0; a < ISA_MAX_AP; a++) {
            const struct isa_ap *ap = &ms->code[e][i].ap[a];
            if (ap->mem == ISA_MEM_HBM && neff_sg_find_var_id(ms->sg, ap->var_id) == NULL) {
                LOG_ERROR("NEFF", "%s: %s instruction %zu names var_id %u, which %s/def.json "
                          "does not declare", ms->sg->name, isa_engine_name(e), i, ap->var_id,
                          ms->sg->name);
                return EMU_INVALID;
            }
        }
    return EMU_OK;
}

/* Every instruction must exist on the machine's NeuronCore generation. */
static emu_status model_check_gen(const struct model_sg *ms, enum isa_engine e)
{
    const struct itype *p = rt_machine()->cfg.profile;
    for (size_t i = 0; i < ms->ncode[e]; i++) {
        char what[96];
        unsigned need = isa_insn_min_gen(&ms->code[e][i], what, sizeof what);
        if (need > (unsigned)p->gen) {
            LOG_ERROR("NEFF", "%s: %s instruction %zu: %s needs NeuronCore-v%u%s; this machine "
                      "(%s) has NeuronCore-v%u", ms->sg->name, isa_engine_name(e), i, what, need,
                      need == NC_GEN_V4 ? " (Trainium3, e.g. TRNEMU_INSTANCE=trn3.48xlarge)" : "",
                      p->name, (unsigned)p->gen);
            return EMU_INVALID;
        }
    }
    return EMU_OK;
}

static NRT_STATUS model_decode(struct model_sg *ms)
{
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        const struct neff_engine_sec *sec = &ms->sg->eng[e];
        if (!sec->present || sec->code == NULL)
            continue;
        emu_status st = isa_decode_stream(neff_buf_data(sec->code), neff_buf_size(sec->code),
                                          (enum isa_engine)e, &ms->code[e], &ms->ncode[e]);
        if (st == EMU_OK)
            st = model_check_vars(ms, (enum isa_engine)e);
        if (st == EMU_OK)
            st = model_check_gen(ms, (enum isa_engine)e);
        if (st != EMU_OK)
            return nrt_status_of(st);  /* the decoder or a check logged the cause */
    }
    return NRT_SUCCESS;
}

/* ---- the core program ------------------------------------------------- */

static int model_cvar_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct core_var *)a)->var_id, y = ((const struct core_var *)b)->var_id;
    return x < y ? -1 : x > y;
}

/* The neff io entry an input/output variable stands for (by name). */
static uint32_t model_io_of(const struct neff_model *nm, const struct neff_var *v)
{
    if (v->type != NEFF_VAR_INPUT && v->type != NEFF_VAR_OUTPUT)
        return UINT32_MAX;
    for (uint32_t i = 0; i < nm->n_io; i++)
        if (strcmp(nm->io[i].name, v->name) == 0)
            return i;
    return UINT32_MAX;
}

/* Build what the core runs; I/O and SBUF variables get their memory at
 * execution time (model_bind_program). */
static NRT_STATUS model_build_program(const struct nrt_model *m, struct model_sg *ms)
{
    uint32_t n = ms->sg->n_vars;
    ms->cvars = calloc(n ? n : 1, sizeof *ms->cvars);
    ms->cvar_index = calloc(n ? n : 1, sizeof *ms->cvar_index);
    ms->io_of_var = calloc(n ? n : 1, sizeof *ms->io_of_var);
    if (ms->cvars == NULL || ms->cvar_index == NULL || ms->io_of_var == NULL) {
        LOG_ERROR("NRT", "out of memory for the variables of a program");
        return NRT_RESOURCE;
    }
    for (uint32_t i = 0; i < n; i++) {
        const struct neff_var *v = &ms->sg->vars[i];
        ms->cvar_index[i] = (struct core_var){v->var_id, v->name, ms->vars[i].va, ms->vars[i].size};
        ms->io_of_var[i] = model_io_of(m->neff, v);
        if ((v->type == NEFF_VAR_INPUT || v->type == NEFF_VAR_OUTPUT) &&
            ms->io_of_var[i] == UINT32_MAX) {
            LOG_ERROR("NEFF", "%s/def.json: %s variable '%s' is not an input or output of "
                      "neff.json", ms->sg->name, neff_var_type_name(v->type), v->name);
            return NRT_INVALID;
        }
    }
    memcpy(ms->cvars, ms->cvar_index, n * sizeof *ms->cvars);
    qsort(ms->cvars, n, sizeof *ms->cvars, model_cvar_cmp);
    struct core_program *p = &ms->prog;
    p->name = m->neff->info.name;
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        p->code[e] = ms->code[e];
        p->n[e] = ms->ncode[e];
        p->descs[e] = ms->sg->eng[e].descs;
        p->ndescs[e] = ms->sg->eng[e].n_descs;
    }
    p->vars = ms->cvars;
    p->nvars = n;
    p->var_by_index = ms->cvar_index;
    p->nvar_index = n;
    return NRT_SUCCESS;
}

/* Point I/O variables at the bound tensors and SBUF variables at the core. */
static void model_bind_one(struct core_var *cv, const struct neff_var *v, uint32_t io,
                           const struct tensor_view *views, struct core *core)
{
    if (io != UINT32_MAX) {
        cv->va = views[io].va;
        cv->size = views[io].size;
    } else if (v->type == NEFF_VAR_STATE_BUFFER) {
        uint64_t all = (uint64_t)ISA_NUM_PARTITIONS * core->sbuf_part_bytes;
        cv->va = core->sbuf;
        cv->size = v->size < all ? v->size : all;
    }
}

void model_bind_program(struct model_sg *ms, const struct tensor_view *io, struct core *core)
{
    for (uint32_t i = 0; i < ms->sg->n_vars; i++)
        model_bind_one(&ms->cvar_index[i], &ms->sg->vars[i], ms->io_of_var[i], io, core);
    for (uint32_t k = 0; k < ms->sg->n_vars; k++) {
        const struct neff_var *v = neff_sg_find_var_id(ms->sg, ms->cvars[k].var_id);
        uint32_t i = (uint32_t)(v - ms->sg->vars);
        ms->cvars[k].va = ms->cvar_index[i].va;
        ms->cvars[k].size = ms->cvar_index[i].size;
    }
}

/* ---- load / unload ----------------------------------------------------- */

/* List m in the shared instance for neuron-monitor's loaded_models: its
 * name, uuid and each subgraph's constants and runtime tables (the
 * scratchpad is the VNC's, not the model's, as neuron-monitor counts it). */
static void model_list_use(const struct nrt_model *m)
{
    struct instance_model_use u;
    memset(&u, 0, sizeof u);
    atomic_store(&u.id, m->id);
    snprintf(u.name, sizeof u.name, "%.*s", (int)sizeof u.name - 1, m->neff->info.name);
    memcpy(u.uuid, m->neff->info.uuid, sizeof u.uuid);
    u.nsgs = m->nsgs < INSTANCE_MODEL_SGS ? m->nsgs : INSTANCE_MODEL_SGS;
    u.host = m->neff_size;
    for (uint32_t s = 0; s < u.nsgs; s++) {
        const struct model_sg *ms = &m->sgs[s];
        snprintf(u.sg[s].name, sizeof u.sg[s].name, "%.*s", (int)sizeof u.sg[s].name - 1,
                 ms->sg->name);
        for (uint32_t i = 0; i < ms->sg->n_vars; i++) {
            if (!ms->vars[i].owns_block)
                continue;
            enum instance_mem k = model_var_mem_kind(ms->sg->vars[i].type);
            if (k == INSTANCE_MEM_CONSTANTS)
                u.sg[s].constants += ms->vars[i].block.len;
            else if (k == INSTANCE_MEM_RUNTIME)
                u.sg[s].runtime += ms->vars[i].block.len;
        }
    }
    instance_use_model_list(rt_machine()->inst, m->gvnc, &u);
}

static void model_release(struct nrt_model *m)
{
    struct machine *mach = rt_machine();
    if (m->use_counted) {
        instance_use_model(mach->inst, m->gvnc, NULL, atomic_load(&m->stand_in_warned));
        instance_use_model_unlist(mach->inst, m->gvnc, m->id);
    }
    for (uint32_t s = 0; m->sgs != NULL && s < m->nsgs; s++) {
        struct model_sg *ms = &m->sgs[s];
        for (uint32_t i = 0; ms->vars != NULL && i < ms->sg->n_vars; i++)
            if (ms->vars[i].owns_block) {
                instance_use_memory(mach->inst, m->gvnc, model_var_mem_kind(ms->sg->vars[i].type),
                                    ms->vars[i].block.len, false);
                machine_hbm_give(mach, &ms->vars[i].block);
            }
        free(ms->vars);
        free(ms->cvars);
        free(ms->cvar_index);
        free(ms->io_of_var);
        for (int e = 0; e < ISA_ENG_COUNT; e++)
            free(ms->code[e]);
    }
    if (m->has_scratch) {
        instance_use_memory(mach->inst, m->gvnc, INSTANCE_MEM_SCRATCHPAD, m->scratch.len, false);
        machine_hbm_give(mach, &m->scratch);
    }
    if (m->gvnc < mach->cfg.total_vncs && m->neff != NULL)
        atomic_fetch_sub(&mach->vncs[m->gvnc].models, 1);
    free(m->sgs);
    neff_model_free(m->neff);
    free(m->neff_bytes);
    for (int i = 0; i < 8; i++)
        free(m->cc_stage[i]);
    free(m);
}

static NRT_STATUS model_place(struct nrt_model *m)
{
    NRT_STATUS st = model_place_scratch(m);
    for (uint32_t s = 0; st == NRT_SUCCESS && s < m->nsgs; s++) {
        struct model_sg *ms = &m->sgs[s];
        ms->sg = m->neff->sgs[s];
        ms->vars = calloc(ms->sg->n_vars ? ms->sg->n_vars : 1, sizeof *ms->vars);
        if (ms->vars == NULL) {
            LOG_ERROR("NRT", "out of memory for the variables of '%s'", m->neff->info.name);
            return NRT_RESOURCE;
        }
        for (uint32_t i = 0; st == NRT_SUCCESS && i < ms->sg->n_vars; i++)
            st = model_place_var(m, &ms->sg->vars[i], &ms->vars[i]);
        if (st == NRT_SUCCESS) {
            model_link_addresses(ms);
            if (m->runnable)
                st = model_decode(ms);
            if (st == NRT_SUCCESS && m->runnable)   /* the decoded program is what runs */
                neff_subgraph_drop_code(m->neff->sgs[s]);
        }
        if (st == NRT_SUCCESS && m->runnable)
            st = model_build_program(m, ms);
    }
    return st;
}

/* The NEFF's logical-core size must fit the machine's. */
static NRT_STATUS model_check_lnc(const struct neff_model *nm)
{
    const struct machine *mach = rt_machine();
    uint32_t want = nm->info.lnc_size ? nm->info.lnc_size : 1;
    if (want > mach->cfg.lnc || nm->n_sgs > mach->cfg.lnc) {
        LOG_ERROR("NRT", "the NEFF needs logical cores of %u physical cores (%u subgraphs); "
                  "the machine runs LNC=%u (NEURON_LOGICAL_NC_CONFIG)", want, nm->n_sgs,
                  mach->cfg.lnc);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

static NRT_STATUS model_pick_vnc(int32_t vnc, int *local, uint32_t *gvnc)
{
    struct machine *mach = rt_machine();
    if (vnc >= 0) {
        int g = machine_vnc_global(mach, vnc);
        if (g < 0) {
            LOG_ERROR("NRT", "VNC %d is not one of the %u visible to this process", (int)vnc,
                      mach->cfg.visible_count);
            return NRT_INVALID;
        }
        *local = vnc;
        *gvnc = (uint32_t)g;
        return NRT_SUCCESS;
    }
    for (uint32_t i = 0; i < mach->cfg.visible_count; i++) {
        uint32_t g = mach->cfg.visible[i];
        if (atomic_load(&mach->vncs[g].models) == 0) {
            *local = (int)i;
            *gvnc = g;
            return NRT_SUCCESS;
        }
    }
    LOG_ERROR("NRT", "every visible VNC already holds a model; name one explicitly");
    return NRT_LOAD_NOT_ENOUGH_NC;
}

static bool model_validate_hash(void)
{
    return env_bool(getenv("NEURON_RT_VALIDATE_HASH"), 0) == 1;
}

static NRT_STATUS model_parse(const void *bytes, size_t size, struct neff_model **out)
{
    struct neff_file *f = NULL;
    emu_status st = neff_file_read(bytes, size, model_validate_hash(), &f);
    if (st == EMU_OK)
        st = neff_model_load(f, out);
    neff_file_free(f);
    return nrt_status_of(st);
}

NRT_STATUS model_load(const void *bytes, size_t size, int32_t vnc, nrt_model_t **out)
{
    assert(rt_held());
    return model_load_placed(bytes, size, vnc, NULL, 0, out);
}

/* Keep the NEFF bytes (snapshots store them); check a restore plan was used up. */
static NRT_STATUS model_keep_bytes(struct nrt_model *m, const void *bytes, size_t size)
{
    if (m->plan != NULL && m->plan_used != m->nplan) {
        LOG_ERROR("STORE", "the snapshot lists %zu blocks for model '%s'; loading it takes %zu",
                  m->nplan, m->neff->info.name, m->plan_used);
        return NRT_INVALID;
    }
    m->plan = NULL;
    m->neff_bytes = malloc(size ? size : 1);
    if (m->neff_bytes == NULL) {
        LOG_ERROR("NRT", "out of memory for a copy of the %zu-byte NEFF", size);
        return NRT_RESOURCE;
    }
    memcpy(m->neff_bytes, bytes, size);
    m->neff_size = size;
    return NRT_SUCCESS;
}

NRT_STATUS model_load_placed(const void *bytes, size_t size, int32_t vnc,
                             const struct hbm_block *plan, size_t nplan, nrt_model_t **out)
{
    struct nrt_model *m = calloc(1, sizeof *m);
    if (m == NULL) {
        LOG_ERROR("NRT", "out of memory for a model");
        return NRT_RESOURCE;
    }
    static _Atomic uint32_t model_loads;
    m->id = atomic_fetch_add(&model_loads, 1) + 1;
    m->gvnc = UINT32_MAX;
    m->plan = plan;
    m->nplan = nplan;
    NRT_STATUS st = model_pick_vnc(vnc, &m->vnc, &m->gvnc);
    if (st == NRT_SUCCESS)
        st = model_parse(bytes, size, &m->neff);
    if (st == NRT_SUCCESS)
        st = model_check_lnc(m->neff);
    if (st != NRT_SUCCESS) {
        neff_model_free(m->neff);
        free(m);
        return st;
    }
    atomic_fetch_add(&rt_machine()->vncs[m->gvnc].models, 1);
    m->runnable = neff_model_is_trnemu(m->neff);
    m->nsgs = m->neff->n_sgs;
    m->sgs = calloc(m->nsgs ? m->nsgs : 1, sizeof *m->sgs);
    if (m->sgs == NULL) {
        LOG_ERROR("NRT", "out of memory for the subgraphs of '%s'", m->neff->info.name);
        st = NRT_RESOURCE;
    } else {
        uint64_t f = machine_mem_faults();
        machine_mem_enter(rt_machine());  /* constants land whole in a snapshot */
        st = model_place(m);
        machine_mem_leave(rt_machine());
        if (st == NRT_SUCCESS)
            st = machine_mem_check(rt_machine(), f, "nrt_load (placing the constants)");
    }
    if (st == NRT_SUCCESS)
        st = model_keep_bytes(m, bytes, size);
    if (st == NRT_SUCCESS) {
        atomic_store(&m->refs, 1);
        handle_lock();
        st = handle_add(m, HANDLE_MODEL);
        handle_unlock();
    }
    if (st != NRT_SUCCESS) {
        model_release(m);
        return st;
    }
    instance_use_model(rt_machine()->inst, m->gvnc, m->neff->info.name, false);
    model_list_use(m);
    m->use_counted = true;
    LOG_INFO("NRT", "loaded '%s' on VNC %d: %u subgraph(s), %" PRIu64 " bytes of device memory%s",
             m->neff->info.name, m->vnc, m->nsgs, m->hbm_bytes,
             m->runnable ? "" : " (foreign NEFF: metadata only)");
    *out = m;
    return NRT_SUCCESS;
}

size_t model_blocks(const nrt_model_t *m, struct hbm_block *out, size_t cap)
{
    size_t n = 0;
    if (m->has_scratch && n++ < cap)
        out[n - 1] = m->scratch;
    for (uint32_t s = 0; s < m->nsgs; s++)
        for (uint32_t i = 0; m->sgs[s].vars != NULL && i < m->sgs[s].sg->n_vars; i++)
            if (m->sgs[s].vars[i].owns_block && n++ < cap)
                out[n - 1] = m->sgs[s].vars[i].block;
    return n;
}

NRT_STATUS model_pin(const nrt_model_t *m)
{
    handle_lock();
    bool live = handle_has(m, HANDLE_MODEL);
    if (live)
        atomic_fetch_add(&((struct nrt_model *)m)->refs, 1);
    handle_unlock();
    if (!live)
        LOG_ERROR("NRT", "%p is not a loaded model (unloaded, or never loaded)", (const void *)m);
    return live ? NRT_SUCCESS : NRT_INVALID;
}

void model_unpin(nrt_model_t *m)
{
    if (atomic_fetch_sub(&m->refs, 1) == 1)
        model_release(m);
}

/* Forget p, a live object of kind k; false (nothing done) where it is not one. */
static bool model_forget(const void *p, enum handle_kind k)
{
    handle_lock();
    bool live = handle_has(p, k);
    if (live)
        handle_remove(p);
    handle_unlock();
    return live;
}

NRT_STATUS model_unload(nrt_model_t *m)
{
    if (!model_forget(m, HANDLE_MODEL)) {
        LOG_ERROR("NRT", "%p is not a loaded model", (void *)m);
        return NRT_INVALID;
    }
    model_unpin(m);
    return NRT_SUCCESS;
}

/* ---- tensor info ------------------------------------------------------- */

NRT_STATUS model_tensor_info(const nrt_model_t *m, nrt_tensor_info_array_t **out)
{
    const struct neff_model *nm = m->neff;
    size_t dims = 0;
    for (uint32_t i = 0; i < nm->n_io; i++)
        dims += nm->io[i].ndim;
    size_t head = sizeof(nrt_tensor_info_array_t) + nm->n_io * sizeof(nrt_tensor_info_t);
    nrt_tensor_info_array_t *a = calloc(1, head + dims * sizeof(uint32_t));
    if (a == NULL) {
        LOG_ERROR("NRT", "out of memory for the tensor info of '%s'", nm->info.name);
        return NRT_RESOURCE;
    }
    uint32_t *shape = (uint32_t *)((char *)a + head);
    a->tensor_count = nm->n_io;
    for (uint32_t i = 0; i < nm->n_io; i++) {
        const struct neff_io *io = &nm->io[i];
        nrt_tensor_info_t *t = &a->tensor_array[i];
        snprintf(t->name, sizeof t->name, "%s", io->name);
        t->usage = io->is_output ? NRT_TENSOR_USAGE_OUTPUT : NRT_TENSOR_USAGE_INPUT;
        t->size = io->size;
        t->dtype = (nrt_dtype_t)io->dtype;
        t->ndim = io->ndim;
        t->shape = shape;
        memcpy(shape, io->shape, io->ndim * sizeof(uint32_t));
        shape += io->ndim;
    }
    handle_lock();
    NRT_STATUS st = handle_add(a, HANDLE_TENSOR_INFO);
    handle_unlock();
    if (st != NRT_SUCCESS) {
        free(a);
        return st;
    }
    *out = a;
    return NRT_SUCCESS;
}

NRT_STATUS model_free_tensor_info(nrt_tensor_info_array_t *info)
{
    if (!model_forget(info, HANDLE_TENSOR_INFO)) {
        LOG_ERROR("NRT", "%p is not a tensor info array from nrt_get_model_tensor_info (or was "
                  "freed already)", (void *)info);
        return NRT_INVALID;
    }
    free(info);
    return NRT_SUCCESS;
}

/* ---- teardown ---------------------------------------------------------- */

void model_destroy_all(void)
{
    handle_lock();
    size_t n;
    void **list = handle_list(HANDLE_MODEL, &n);
    for (size_t i = 0; i < n; i++)
        handle_remove(list[i]);
    handle_unlock();
    for (size_t i = 0; i < n; i++)
        model_unpin(list[i]);
    free(list);
}

void model_set_collectives(nrt_model_t *m, uint32_t rank, uint32_t world)
{
    m->cc_rank = rank;
    m->cc_world = world;
}
