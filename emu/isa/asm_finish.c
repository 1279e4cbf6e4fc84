/*
 * asm_finish.c: finishing an assembly (see asm.h and asm_int.h), once the
 * driver (asm.c, asm_finish) has handed over the last logical line.
 *
 * Resolves label targets, checks targets, variable references and member
 * names, encodes each engine's stream into the draft model with its .engine
 * options, applies .header fields and orders the I/O tensors.
 */
#include "emu/isa/asm_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- finishing ----------------------------------------------------------- */

static const struct asm_label *label_find(const struct asm_sg *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return &s->labels[i];
    return NULL;
}

static void resolve_fixups(struct asm_ctx *a, struct asm_sg *s)
{
    for (size_t i = 0; i < s->nfixups; i++) {
        const struct asm_fixup *f = &s->fixups[i];
        const struct asm_label *l = label_find(s, f->label);
        if (l == NULL)
            asm_err_pos(a, f->pos, "no label '%s' in %s", f->label, s->sg->name);
        else if (l->engine < 0 || l->engine >= ISA_ENG_COUNT)
            continue;  /* reported: it labels no instruction */
        else if (l->engine != f->engine)
            asm_err_pos(a, f->pos, "label '%s' is on the %s engine, this instruction on %s",
                        f->label, isa_engine_name((unsigned)l->engine),
                        isa_engine_name((unsigned)f->engine));
        else
            s->code[f->engine].insns[f->index].imm[f->slot].i = l->index;
    }
}

/* Jump and branch targets written as numbers must exist. */
static void check_targets(struct asm_ctx *a, const struct asm_sg *s)
{
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        const struct asm_stream *st = &s->code[e];
        for (size_t i = 0; i < st->n; i++) {
            const struct isa_insn *x = &st->insns[i];
            int slot = x->opcode == ISA_OP_jump ? 0 : x->opcode == ISA_OP_branch ? 2 : -1;
            if (slot >= 0 && (uint64_t)x->imm[slot].i >= st->n)
                asm_err_pos(a, st->pos[i], "target %lld is past the last %s instruction (%zu)",
                            (long long)x->imm[slot].i, isa_engine_name((unsigned)e), st->n - 1);
        }
    }
}

/* ref= and list= must name variables of the subgraph. */
static void check_var_refs(struct asm_ctx *a, const struct asm_sg *s)
{
    for (uint32_t i = 0; i < s->sg->n_vars; i++) {
        const struct neff_var *v = &s->sg->vars[i];
        bool ok = !v->has_referenced_var || neff_sg_find_var_id(s->sg, v->referenced_var_id);
        for (uint32_t k = 0; ok && k < v->n_list; k++)
            ok = neff_sg_find_var_id(s->sg, v->list[k]) != NULL;
        if (!ok)
            asm_err_pos(a, s->var_pos[i], "variable '%s': ref= or list= names a var_id that no "
                        "variable of %s has", v->name, s->sg->name);
    }
}

/* Member names of a subgraph must not collide. */
static void check_members(struct asm_ctx *a, const struct asm_sg *s)
{
    const char *names[2 * NEFF_ENG_COUNT + 1];
    struct asm_pos pos[2 * NEFF_ENG_COUNT + 1];
    size_t n = 0;
    pos[n] = (struct asm_pos){0, 0};
    names[n++] = "def.json";
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        const struct neff_engine_sec *x = &s->sg->eng[e];
        if (x->present && x->json_file) {
            pos[n] = s->eng[e].pos;
            names[n++] = x->json_file;
        }
        if (x->present && x->bin_file) {
            pos[n] = s->eng[e].pos;
            names[n++] = x->bin_file;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                asm_err_pos(a, pos[i], "%s: member '%s' is used twice", s->sg->name, names[i]);
    for (uint32_t i = 0; i < s->sg->n_vars; i++) {
        const struct neff_var *v = &s->sg->vars[i];
        for (size_t j = 0; v->file_name && j < n; j++)
            if (strcmp(v->file_name, names[j]) == 0)
                asm_err_pos(a, s->var_pos[i], "constant '%s': member '%s' is taken by %s", v->name,
                            v->file_name, j == 0 ? "def.json" : "an engine section");
        for (uint32_t k = 0; v->file && k < i; k++) {
            const struct neff_var *w = &s->sg->vars[k];
            if (w->file && strcmp(w->file_name, v->file_name) == 0 &&
                (neff_buf_size(w->file) != neff_buf_size(v->file) ||
                 memcmp(neff_buf_data(w->file), neff_buf_data(v->file), neff_buf_size(v->file))))
                asm_err_pos(a, s->var_pos[i],
                            "constant '%s': member '%s' already holds other bytes",
                            v->name, v->file_name);
        }
    }
}

static bool replace_str(char **slot, const char *s)
{
    if (s == NULL)
        return true;
    char *c = strdup(s);
    if (c == NULL)
        return false;
    free(*slot);
    *slot = c;
    return true;
}

static bool set_funcs(struct neff_engine_sec *x, const struct asm_engine_opt *eo)
{
    for (uint32_t i = 0; i < x->n_act_func_sets; i++)
        free(x->act_func_sets[i]);
    free(x->act_func_sets);
    x->act_func_sets = NULL;
    x->n_act_func_sets = 0;
    if (eo->nfuncs == 0)
        return true;
    x->act_func_sets = calloc(eo->nfuncs, sizeof *x->act_func_sets);
    if (x->act_func_sets == NULL)
        return false;
    x->n_act_func_sets = eo->nfuncs;
    for (uint32_t i = 0; i < eo->nfuncs; i++)
        if ((x->act_func_sets[i] = strdup(eo->funcs[i])) == NULL)
            return false;
    return true;
}

/* The engine JSON member name the builder gives engine e by default. */
static char *default_json_name(int e)
{
    struct neff_model *m = neff_model_new(NULL);
    struct neff_subgraph *sg = m ? neff_model_add_subgraph(m) : NULL;
    struct neff_dma_desc d = {0};
    char *name = NULL;
    if (sg != NULL && neff_sg_add_desc(sg, (enum neff_engine)e, &d) == EMU_OK)
        name = strdup(sg->eng[e].json_file);
    neff_model_free(m);
    return name;
}

/* Encode one engine's stream into the draft and apply its .engine options. */
static emu_status build_engine(struct asm_ctx *a, struct asm_sg *s, int e)
{
    const struct asm_stream *st = &s->code[e];
    const struct asm_engine_opt *eo = &s->eng[e];
    struct neff_engine_sec *x = &s->sg->eng[e];
    if (eo->nocode && st->n > 0) {
        asm_err_pos(a, eo->pos, "%s has instructions but .engine says nocode",
                    isa_engine_name((unsigned)e));
        return EMU_INVALID;
    }
    if (eo->nocode && eo->bin) {
        asm_err_pos(a, eo->pos, "bin= names the stream of an engine without one");
        return EMU_INVALID;
    }
    if (eo->given)
        x->present = true;
    if ((eo->given || st->n > 0) && !replace_str(&x->json_file, eo->json))
        return EMU_RESOURCE;
    if (eo->given && !set_funcs(x, eo))
        return EMU_RESOURCE;
    if (eo->nfuncs > 0 && x->json_file == NULL && (x->json_file = default_json_name(e)) == NULL)
        return EMU_RESOURCE;  /* the function sets live in the engine JSON */
    if (st->n == 0 && (!eo->given || eo->nocode))
        return EMU_OK;
    if (!replace_str(&x->bin_file, eo->bin))
        return EMU_RESOURCE;
    uint8_t *bytes = NULL;
    size_t size = 0;
    emu_status r = isa_encode_stream(st->insns, st->n, (enum isa_engine)e, &bytes, &size);
    if (r == EMU_OK)
        r = neff_sg_set_code(s->sg, (enum neff_engine)e, bytes, size);
    free(bytes);
    if (r != EMU_OK)
        asm_err_pos(a, (struct asm_pos){0, 0}, "%s: the %s stream of %zu instructions cannot "
                    "be encoded (%s)", s->sg->name, isa_engine_name((unsigned)e), st->n,
                    r == EMU_RESOURCE ? "out of host memory"
                                      : "an instruction does not fit its binary form");
    return r;
}

void asm_default_info(uint32_t n_sgs, struct neff_model_info *out)
{
    struct neff_model *m = neff_model_new(NULL);
    memset(out, 0, sizeof *out);
    if (m != NULL)
        *out = m->info;  /* version, pkg_version, build version, feature bit */
    neff_model_free(m);
    out->num_tpb = out->requested_tpb_count = out->lnc_size = n_sgs;
    memset(out->tpb_per_node, 0, sizeof out->tpb_per_node);
    out->tpb_per_node[0] = (uint8_t)(n_sgs > 255 ? 255 : n_sgs);
    out->feature_bits = NEFF_FEATURE_TRNEMU_ISA;
}

/* Apply .header fields; the trnemu marker follows the feature bit. */
static void apply_header(struct asm_ctx *a)
{
    struct neff_model_info *i = &a->m->info;
    const struct neff_model_info *h = &a->hdr.info;
    uint32_t set = a->hdr.set;
    uint32_t n = a->m->n_sgs;
    struct neff_model_info def;
    asm_default_info(n, &def);
    i->neff_version_major = def.neff_version_major;
    i->neff_version_minor = def.neff_version_minor;
    i->pkg_version = def.pkg_version;
    memcpy(i->build_version, def.build_version, sizeof i->build_version);
    memcpy(i->uuid, def.uuid, sizeof i->uuid);
    i->num_tpb = def.num_tpb;
    i->requested_tpb_count = def.requested_tpb_count;
    i->lnc_size = def.lnc_size;
    memcpy(i->tpb_per_node, def.tpb_per_node, sizeof i->tpb_per_node);
    i->feature_bits = def.feature_bits;
    if (set & (1u << HDR_VERSION)) {
        i->neff_version_major = h->neff_version_major;
        i->neff_version_minor = h->neff_version_minor;
    }
    if (set & (1u << HDR_PKG))
        i->pkg_version = h->pkg_version;
    if (set & (1u << HDR_BUILD))
        memcpy(i->build_version, h->build_version, sizeof i->build_version);
    if (set & (1u << HDR_UUID))
        memcpy(i->uuid, h->uuid, sizeof i->uuid);
    if (set & (1u << HDR_NUM_TPB))
        i->num_tpb = h->num_tpb;
    if (set & (1u << HDR_REQ_TPB))
        i->requested_tpb_count = h->requested_tpb_count;
    if (set & (1u << HDR_TPB_PER_NODE))
        memcpy(i->tpb_per_node, h->tpb_per_node, sizeof i->tpb_per_node);
    if (set & (1u << HDR_FEATURES))
        i->feature_bits = h->feature_bits;
    if (set & (1u << HDR_LNC))
        i->lnc_size = h->lnc_size;
    for (uint32_t k = 0; k < n; k++)
        a->m->sgs[k]->isa_version = (i->feature_bits & NEFF_FEATURE_TRNEMU_ISA)
                                        ? NEFF_TRNEMU_ISA_VERSION : 0;
}

/* neff.json lists inputs, then outputs: keep the draft in that order. */
static bool order_io(struct neff_model *m)
{
    if (m->n_io < 2)
        return true;
    struct neff_io *c = malloc(m->n_io * sizeof *c);
    if (c == NULL)
        return false;
    uint32_t k = 0;
    for (int out = 0; out < 2; out++)
        for (uint32_t i = 0; i < m->n_io; i++)
            if (m->io[i].is_output == (out == 1))
                c[k++] = m->io[i];
    memcpy(m->io, c, m->n_io * sizeof *c);
    free(c);
    return true;
}

emu_status asm_finish_model(struct asm_ctx *a)
{
    if (a->nerrors > 0 || a->gave_up || a->oom)
        return a->oom ? EMU_RESOURCE : EMU_INVALID;
    if (a->finished)
        return EMU_OK;
    asm_report_dangling_labels(a);
    for (size_t k = 0; k < a->nsgs; k++) {
        resolve_fixups(a, &a->sgs[k]);
        check_targets(a, &a->sgs[k]);
        check_var_refs(a, &a->sgs[k]);
    }
    emu_status st = EMU_OK;
    for (size_t k = 0; st == EMU_OK && a->nerrors == 0 && k < a->nsgs; k++)
        for (int e = 0; st == EMU_OK && e < ISA_ENG_COUNT; e++)
            st = build_engine(a, &a->sgs[k], e);
    for (size_t k = 0; st == EMU_OK && a->nerrors == 0 && k < a->nsgs; k++)
        check_members(a, &a->sgs[k]);
    if (st == EMU_RESOURCE || (st == EMU_OK && !order_io(a->m))) {
        a->oom = true;
        asm_err_pos(a, (struct asm_pos){0, 0}, "out of memory");
        return EMU_RESOURCE;
    }
    if (st != EMU_OK || a->nerrors > 0 || a->gave_up)
        return EMU_INVALID;
    apply_header(a);
    if (neff_model_validate(a->m) != EMU_OK) {
        asm_err_pos(a, a->hdr_pos, "the NEFF does not pass validation (see the log line above)");
        return EMU_INVALID;
    }
    a->finished = true;
    return EMU_OK;
}

const struct neff_model *asm_model(const struct asm_ctx *a)
{
    return a && a->finished && !a->taken ? a->m : NULL;
}

struct neff_model *asm_take_model(struct asm_ctx *a)
{
    if (a == NULL || !a->finished || a->taken)
        return NULL;
    struct neff_model *m = a->m;
    a->m = NULL;
    a->taken = true;
    return m;
}
