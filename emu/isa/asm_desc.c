/*
 * asm_desc.c: the assembler's .queue, .engine and .desc directives.
 *
 * DMA queues and their options, per-engine section options, and DMA
 * descriptors with their access patterns, which must name a declared
 * variable and stay inside it.
 */
#include "emu/isa/asm_int.h"

#include <stdlib.h>
#include <string.h>

static bool queue_type_of(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                          enum neff_queue_type *qt)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    for (int i = 0; i < NEFF_QUEUE_TYPE_COUNT; i++)
        if (asm_same(s, n, neff_queue_type_name((enum neff_queue_type)i))) {
            *qt = (enum neff_queue_type)i;
            return true;
        }
    return asm_err_at(a, t->vat, "unknown queue type (in, out, data, embedding_update, dynamic)");
}

static bool queue_opts(struct asm_ctx *a, struct asm_dir *d, struct neff_queue *q,
                       struct asm_name_list *inst)
{
    struct asm_tok *t;
    q->num_queues = 1;
    if ((t = asm_take_opt(d, "num_queues")) != NULL && !asm_tok_u32(a, d, t, 16, &q->num_queues))
        return false;
    if (q->num_queues == 0)
        return asm_err_at(a, t->vat, "num_queues is 1..16");
    if ((t = asm_take_opt(d, "owner")) != NULL &&
        (q->owner = asm_tok_name(a, d, t, "owner")) == NULL)
        return false;
    q->pinned = asm_take_flag(d, "pinned");
    if ((t = asm_take_opt(d, "instances")) != NULL) {
        if (!asm_tok_names(a, d, t, inst))
            return false;
        q->instances = inst->v;
        q->n_instances = (uint32_t)inst->n;
    }
    if ((t = asm_take_opt(d, "semaphore_set")) != NULL &&
        !asm_tok_u32_array(a, d, t, &q->semaphore_set, &q->n_semaphore_set))
        return false;
    if ((t = asm_take_opt(d, "semaphore")) != NULL) {
        if (!asm_tok_u32(a, d, t, UINT32_MAX, &q->semaphore))
            return false;
        q->has_semaphore = true;
    }
    if ((t = asm_take_opt(d, "fabric_path")) != NULL &&
        (q->fabric_path = asm_tok_name(a, d, t, "fabric path")) == NULL)
        return false;
    return true;
}

bool asm_dir_queue(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = asm_next_word(d), *tt = asm_take_opt(d, "type");
    struct neff_queue q = {0};
    struct asm_name_list inst = {0};
    struct neff_subgraph *sg = asm_cur_sg(a)->sg;
    if (tn == NULL || tt == NULL)
        return asm_err_at(a, d->name_at, ".queue needs NAME type=TYPE");
    bool ok = queue_type_of(a, d, tt, &q.type) &&
              (q.name = asm_tok_name(a, d, tn, "queue name")) != NULL;
    if (ok && neff_sg_find_queue(sg, q.name) != NULL)
        ok = asm_err_at(a, tn->vat, "queue '%s' is already declared", q.name);
    ok = ok && queue_opts(a, d, &q, &inst) && asm_dir_done(a, d, ".queue");
    if (ok && neff_sg_add_queue(sg, &q) != EMU_OK)
        ok = asm_oom_at(a, d->name_at);
    if (ok)
        asm_cur_sg(a)->used = true;
    asm_name_list_free(&inst);
    free(q.name);
    free(q.owner);
    free(q.semaphore_set);
    free(q.fabric_path);
    return ok;
}

static bool tok_engine(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       int *eng)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    *eng = t->str ? -1 : isa_engine_from_name(s, n);
    if (*eng < 0)
        return asm_err_at(a, t->vat, "unknown engine (pe, act, pool, dve, sp)");
    return true;
}

bool asm_dir_engine(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *te = asm_next_word(d), *t;
    int e;
    if (te == NULL)
        return asm_err_at(a, d->name_at, ".engine needs an ENGINE");
    if (!tok_engine(a, d, te, &e))
        return false;
    struct asm_engine_opt *eo = &asm_cur_sg(a)->eng[e];
    if (eo->given)
        return asm_err_at(a, d->name_at, ".engine %s was given before",
                          isa_engine_name((unsigned)e));
    bool code = asm_take_flag(d, "code"), nocode = asm_take_flag(d, "nocode");
    if (code && nocode)
        return asm_err_at(a, d->name_at, "code or nocode, not both");
    struct asm_name_list funcs = {0};
    bool ok = true;
    if ((t = asm_take_opt(d, "bin")) != NULL)
        ok = (eo->bin = asm_tok_name(a, d, t, "member name")) != NULL;
    if (ok && (t = asm_take_opt(d, "json")) != NULL)
        ok = (eo->json = asm_tok_name(a, d, t, "member name")) != NULL;
    if (ok && (t = asm_take_opt(d, "act_func_sets")) != NULL)
        ok = asm_tok_names(a, d, t, &funcs);
    ok = ok && asm_dir_done(a, d, ".engine");
    if ((eo->bin && !asm_member_ok(eo->bin)) || (eo->json && !asm_member_ok(eo->json)))
        ok = ok && asm_err_at(a, d->name_at, "bin= and json= are member names inside the subgraph");
    if (!ok) {
        asm_name_list_free(&funcs);
        free(eo->bin);
        free(eo->json);
        eo->bin = eo->json = NULL;
        return false;
    }
    eo->given = true;
    eo->nocode = nocode;
    eo->funcs = funcs.v;
    eo->nfuncs = (uint32_t)funcs.n;
    eo->pos = asm_line_pos(a, d->name_at);
    asm_cur_sg(a)->used = true;
    return true;
}

/* A descriptor pattern: NAME[OFF, [step,size], ...]:DTYPE, dims outermost
 * first, in bytes; stored innermost first as the JSON has them. */
static bool desc_ap(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                    struct neff_dma_ap *ap)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n), *lb = memchr(s, '[', n), *rb = NULL;
    size_t off = t->vat;
    if (t->str != NULL || lb == NULL || lb == s)
        return asm_err_at(a, off, "expected VAR[OFFSET, [step,size], ...]:DTYPE");
    for (size_t i = n; i > 0; i--)
        if (s[i - 1] == ']') {
            rb = s + i - 1;
            break;
        }
    if (rb == NULL || rb < lb)
        return asm_err_at(a, off, "expected VAR[OFFSET, [step,size], ...]:DTYPE");
    if ((ap->var = asm_dup_n(s, (size_t)(lb - s))) == NULL)
        return asm_oom_at(a, off);
    ap->dtype = NEFF_DTYPE_UINT8;
    const char *tail = rb + 1;
    size_t tn = n - (size_t)(tail - s);
    if (tn > 0) {
        int dt = tn > 1 && tail[0] == ':' ? isa_dtype_from_name(tail + 1, tn - 1) : -1;
        if (dt <= 0)
            return asm_err_at(a, off + (size_t)(tail - s), "expected :DTYPE after the pattern");
        ap->dtype = (uint32_t)dt;
    }
    /* inside the brackets: OFF, then [step,size] pairs */
    const char *p = lb + 1, *end = rb;
    const char *c = memchr(p, ',', (size_t)(end - p));
    const char *oe = c ? c : end;
    while (p < oe && asm_is_blank(*p))
        p++;
    size_t ol = (size_t)(oe - p);
    while (ol > 0 && asm_is_blank(p[ol - 1]))
        ol--;
    if (!isa_lex_u64(p, ol, &ap->off) || ap->off > INT64_MAX)
        return asm_err_at(a, off + (size_t)(p - s), "expected the byte offset");
    int64_t steps[NEFF_AP_MAX_DIMS];
    uint64_t sizes[NEFF_AP_MAX_DIMS];
    uint32_t nd = 0;
    p = oe;
    while (p < end) {
        p++;  /* the comma */
        while (p < end && asm_is_blank(*p))
            p++;
        const char *q = p < end && *p == '[' ? memchr(p, ']', (size_t)(end - p)) : NULL;
        const char *mid = q ? memchr(p, ',', (size_t)(q - p)) : NULL;
        if (mid == NULL || nd == NEFF_AP_MAX_DIMS)
            return asm_err_at(a, off + (size_t)(p - s), nd == NEFF_AP_MAX_DIMS
                              ? "at most 4 dimensions" : "expected [step,size]");
        const char *sb = p + 1, *se = mid, *zb = mid + 1, *ze = q;
        while (sb < se && asm_is_blank(*sb)) sb++;
        while (se > sb && asm_is_blank(se[-1])) se--;
        while (zb < ze && asm_is_blank(*zb)) zb++;
        while (ze > zb && asm_is_blank(ze[-1])) ze--;
        if (!isa_lex_i64(sb, (size_t)(se - sb), &steps[nd]) ||
            !isa_lex_u64(zb, (size_t)(ze - zb), &sizes[nd]) || sizes[nd] > INT64_MAX)
            return asm_err_at(a, off + (size_t)(p - s), "expected [step,size] integers");
        nd++;
        p = q + 1;
        while (p < end && asm_is_blank(*p))
            p++;
        if (p < end && *p != ',')
            return asm_err_at(a, off + (size_t)(p - s), "expected ','");
    }
    if (nd == 0)
        return asm_err_at(a, off, "a pattern has 1 to 4 [step,size] dimensions");
    ap->ndim = nd;
    for (uint32_t i = 0; i < nd; i++) {
        ap->steps[i] = steps[nd - 1 - i];
        ap->sizes[i] = sizes[nd - 1 - i];
    }
    return true;
}

/* The pattern must name a declared variable and stay inside it. */
static bool desc_ap_check(struct asm_ctx *a, const struct asm_tok *t, const struct neff_dma_ap *ap)
{
    const struct neff_var *v = neff_sg_find_var(asm_cur_sg(a)->sg, ap->var);
    uint64_t lo, hi;
    if (v == NULL)
        return asm_err_at(a, t->vat, "no variable '%s' declared before", ap->var);
    if (!neff_ap_range(ap, &lo, &hi))
        return asm_err_at(a, t->vat, "the pattern overflows or starts before its variable");
    if (hi > v->size)
        return asm_err_at(a, t->vat, "the pattern reaches byte %llu of the %llu-byte '%s'",
                          (unsigned long long)hi, (unsigned long long)v->size, v->name);
    return true;
}

static bool desc_sources(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *t;
    while ((t = asm_take_opt(d, "from")) != NULL) {
        if (x->n_from == NEFF_MAX_CCE_SOURCES)
            return asm_err_at(a, t->at, "at most %u sources", NEFF_MAX_CCE_SOURCES);
        if (x->from == NULL && (x->from = calloc(NEFF_MAX_CCE_SOURCES, sizeof *x->from)) == NULL)
            return asm_oom_at(a, t->at);
        struct neff_dma_ap *ap = &x->from[x->n_from++];
        if (!desc_ap(a, d, t, ap) || !desc_ap_check(a, t, ap))
            return false;
    }
    if (x->n_from == 0)
        return asm_err_at(a, d->name_at, ".desc needs from=");
    x->cce = asm_take_flag(d, "cce") || x->n_from > 1;
    if ((t = asm_take_opt(d, "to")) == NULL)
        return asm_err_at(a, d->name_at, ".desc needs to=");
    return desc_ap(a, d, t, &x->to) && desc_ap_check(a, t, &x->to);
}

static bool desc_route(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *tq = asm_take_opt(d, "queue"), *ti = asm_take_opt(d, "instance");
    const struct neff_subgraph *sg = asm_cur_sg(a)->sg;
    if (tq == NULL && ti == NULL)
        return asm_err_at(a, d->name_at, ".desc needs queue= or instance=");
    if (tq != NULL) {
        if ((x->queue = asm_tok_name(a, d, tq, "queue name")) == NULL)
            return false;
        if (ti == NULL && neff_sg_find_queue(sg, x->queue) == NULL)
            return asm_err_at(a, tq->vat, "no queue '%s' declared before", x->queue);
    }
    if (ti != NULL) {
        if ((x->instance_name = asm_tok_name(a, d, ti, "instance name")) == NULL)
            return false;
        bool found = false;
        for (uint32_t i = 0; i < sg->n_queues; i++)
            for (uint32_t j = 0; j < sg->queues[i].n_instances; j++)
                found = found || strcmp(sg->queues[i].instances[j], x->instance_name) == 0;
        if (!found)
            return asm_err_at(a, ti->vat, "no queue instance '%s' declared before",
                              x->instance_name);
    }
    return true;
}

static bool desc_op(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *t = asm_take_opt(d, "op"), *ts = asm_take_opt(d, "scale");
    struct asm_tok *tc = asm_take_opt(d, "constant"), *tcd = asm_take_opt(d, "constant_dtype");
    x->op = NEFF_DMA_COPY;
    x->scale = 1.0;
    if (t != NULL) {
        size_t n;
        const char *s = asm_tok_val(d, t, &n);
        int op = -1;
        for (int i = 0; i < NEFF_DMA_OP_COUNT; i++)
            if (asm_same(s, n, neff_dma_op_name((enum neff_dma_op)i)))
                op = i;
        if (op < 0)
            return asm_err_at(a, t->vat, "unknown op (copy, cast, add, fma, min, max, transpose)");
        x->op = (enum neff_dma_op)op;
    }
    if (ts != NULL && (x->op != NEFF_DMA_FMA || !asm_tok_f64(a, d, ts, &x->scale)))
        return x->op != NEFF_DMA_FMA ? asm_err_at(a, ts->at, "scale= needs op=fma") : false;
    if ((tc != NULL) != (tcd != NULL))
        return asm_err_at(a, d->name_at, "constant= and constant_dtype= go together");
    if (tc == NULL)
        return true;
    size_t n;
    const char *s = asm_tok_val(d, tcd, &n);
    x->constant_dtype = asm_same(s, n, "f32") ? NEFF_DTYPE_FLOAT32 : asm_same(s, n, "i32")
                      ? NEFF_DTYPE_INT32 : asm_same(s, n, "u32") ? NEFF_DTYPE_UINT32 : 0;
    if (x->constant_dtype == 0)
        return asm_err_at(a, tcd->vat, "constant_dtype is f32, i32 or u32");
    if (!asm_tok_f64(a, d, tc, &x->constant))
        return false;
    double c = x->constant;
    if ((x->constant_dtype == NEFF_DTYPE_INT32 &&
         (c < INT32_MIN || c > INT32_MAX || c != (double)(int32_t)c)) ||
        (x->constant_dtype == NEFF_DTYPE_UINT32 &&
         (c < 0 || c > 4294967295.0 || c != (double)(uint32_t)c)))
        return asm_err_at(a, tc->vat, "the constant does not fit %.*s", (int)n, s);
    return true;
}

static bool desc_extras(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *t;
    if ((t = asm_take_opt(d, "semaphore")) != NULL) {
        if (!asm_tok_u32(a, d, t, UINT32_MAX, &x->semaphore))
            return false;
        x->has_semaphore = true;
    }
    if ((t = asm_take_opt(d, "event")) != NULL) {
        if (!asm_tok_u32(a, d, t, UINT32_MAX, &x->event))
            return false;
        x->has_event = true;
    }
    if ((t = asm_take_opt(d, "remote_semaphores")) != NULL &&
        !asm_tok_u32_array(a, d, t, &x->remote_semaphores, &x->n_remote_semaphores))
        return false;
    if ((t = asm_take_opt(d, "function_start")) != NULL &&
        (x->function_start = asm_tok_name(a, d, t, "function name")) == NULL)
        return false;
    x->section_start_desc = asm_take_flag(d, "section_start");
    if ((t = asm_take_opt(d, "tiling_dims")) != NULL) {
        if (!asm_tok_u32(a, d, t, UINT32_MAX, &x->num_tiling_dimensions))
            return false;
        x->has_tiling_dims = true;
    }
    if ((t = asm_take_opt(d, "transpose_shape")) != NULL) {
        struct asm_u64_list l = {.max = UINT32_MAX, .max_items = NEFF_AP_MAX_DIMS};
        bool ok = asm_tok_u64_list(a, d, t, false, &l);
        for (size_t i = 0; ok && i < l.n; i++)
            x->transpose_shape[i] = (uint32_t)l.v[i];
        free(l.v);
        if (!ok)
            return false;
        x->has_transpose_shape = true;
    }
    if ((t = asm_take_opt(d, "transpose_element_size")) != NULL &&
        !asm_tok_u32(a, d, t, UINT32_MAX, &x->transpose_element_size))
        return false;
    return true;
}

static void desc_free(struct neff_dma_desc *x)
{
    for (uint32_t i = 0; x->from != NULL && i < NEFF_MAX_CCE_SOURCES; i++)
        free(x->from[i].var);
    free(x->from);
    free(x->to.var);
    free(x->queue);
    free(x->instance_name);
    free(x->function_start);
    free(x->remote_semaphores);
}

bool asm_dir_desc(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *te = asm_next_word(d), *tid = asm_take_opt(d, "id");
    struct neff_dma_desc x = {0};
    int e;
    if (te == NULL || tid == NULL)
        return asm_err_at(a, d->name_at, ".desc needs ENGINE id=N");
    bool ok = tok_engine(a, d, te, &e) && asm_tok_u32(a, d, tid, UINT32_MAX, &x.id) &&
              desc_route(a, d, &x) && desc_sources(a, d, &x) && desc_op(a, d, &x) &&
              desc_extras(a, d, &x) && asm_dir_done(a, d, ".desc");
    if (ok && neff_sg_add_desc(asm_cur_sg(a)->sg, (enum neff_engine)e, &x) != EMU_OK)
        ok = asm_oom_at(a, d->name_at);
    if (ok)
        asm_cur_sg(a)->used = true;
    desc_free(&x);
    return ok;
}
