/*
 * race_hbm.c: the race checker's HBM operands (race_int.h). An operand in
 * HBM is remembered as the host addresses it spans, so that two programs
 * naming one tensor through different variables still meet. When two
 * spans overlap, the exact test lists the contiguous byte runs of each
 * access pattern (the partition dimension and the free dimensions, inner
 * dimensions that tile contiguously merged into one run), sorts and
 * merges them, and walks both lists: two cores that write interleaved
 * rows of one tensor do not conflict. A pattern of more than
 * RACE_HBM_RUNS runs, or an operand whose rows an index chooses at run
 * time (indirect DMA), is taken as touching all of its span.
 *
 * Before an instruction with an HBM write operand runs, the bytes that
 * operand spans are copied (up to RACE_SNAP_MAX); afterwards the checker
 * can tell whether the write changed the bytes it shares with an earlier
 * access. A write of the bytes already there (both cores zeroing one
 * output) gives the same memory in either order and is no race.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/core/race_int.h"
#include "emu/grow.h"
#include "emu/isa/isa_args.h"

#define RACE_HBM_RUNS (1u << 16)  /* runs listed per operand for the exact test */
#define RACE_SNAP_MAX (64u << 20) /* bytes of a write operand copied before it runs */

/* Is operand `slot` of insn the side of an indirect dma_copy that an
 * index chooses rows of? */
static bool race_hbm_indirect(const struct isa_insn *insn, unsigned slot)
{
    if (insn->opcode != ISA_OP_dma_copy)
        return false;
    unsigned side = ISA_ARG_ENUM(insn, dma_copy, indirect);
    return (side == ISA_INDIR_src && slot == ISA_AP_SLOT(dma_copy, src)) ||
           (side == ISA_INDIR_dst && slot == ISA_AP_SLOT(dma_copy, dst));
}

bool race_hbm_access(const struct core_program *prog, enum isa_engine eng, size_t pc,
                     unsigned slot, struct race_access *acc)
{
    const struct isa_insn *insn = &prog->code[eng][pc];
    const struct isa_ap *ap = &insn->ap[slot];
    if (ap->mem != ISA_MEM_HBM)
        return false;
    const struct core_var *v = core_find_var(prog, ap->var_id);
    struct isa_extent ext;
    if (v == NULL || v->va == NULL || isa_ap_extent(ap, &ext) != EMU_OK)
        return false;
    bool whole = race_hbm_indirect(insn, slot);
    if (!whole && ext.hi > v->size)
        return false;
    uint64_t base = (uint64_t)(uintptr_t)v->va;
    acc->mem = ISA_MEM_HBM;
    acc->slot = (uint8_t)slot;
    acc->whole = whole;
    acc->part_lo = acc->part_hi = 0;
    acc->lo = whole ? base : base + ext.lo;
    acc->hi = whole ? base + v->size : base + ext.hi;
    acc->prog = prog;
    acc->pc = pc;
    return true;
}

/* The dimensions of ap, outermost first (the partition dimension, then
 * the free ones), without those of one element; *run: elements of one
 * contiguous run, the inner dimensions that tile merged into it.
 * Returns the dimensions left. */
static unsigned race_hbm_dims(const struct isa_ap *ap, int64_t *step, uint64_t *count,
                              uint64_t *run)
{
    unsigned nd = 0;
    if (ap->num_part > 1) {
        step[nd] = ap->part_step;
        count[nd++] = ap->num_part;
    }
    for (unsigned d = 0; d < ap->ndims; d++)
        if (ap->dim[d].count > 1) {
            step[nd] = ap->dim[d].step;
            count[nd++] = ap->dim[d].count;
        }
    *run = 1;
    while (nd > 0 && step[nd - 1] == (int64_t)*run) {
        *run *= count[nd - 1];
        nd--;
    }
    return nd;
}

static int race_run_cmp(const void *a, const void *b)
{
    const struct race_run *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sort the runs and merge those that touch: disjoint, ascending. */
static void race_hbm_merge(struct race_runs *out)
{
    qsort(out->run, out->n, sizeof *out->run, race_run_cmp);
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (k > 0 && out->run[i].lo <= out->run[k - 1].hi) {
            if (out->run[i].hi > out->run[k - 1].hi)
                out->run[k - 1].hi = out->run[i].hi;
        } else {
            out->run[k++] = out->run[i];
        }
    }
    out->n = k;
}

/* The byte runs access a touches, sorted and merged, into out; false when
 * there are too many to list (or no memory for them). */
static bool race_hbm_list(const struct race_access *a, struct race_runs *out)
{
    const struct core_program *prog = a->prog;
    const struct isa_ap *ap = &prog->code[a->eng % ISA_ENG_COUNT][a->pc].ap[a->slot];
    const struct core_var *v = core_find_var(prog, ap->var_id);
    int64_t step[ISA_MAX_DIMS + 1];
    uint64_t count[ISA_MAX_DIMS + 1], run, total = 1;
    unsigned nd = race_hbm_dims(ap, step, count, &run);
    for (unsigned d = 0; d < nd; d++)
        if ((total *= count[d]) > RACE_HBM_RUNS)
            return false;
    if (a->whole || v == NULL ||
        !grow_array((void **)&out->run, total, &out->cap, sizeof *out->run, 64))
        return false;
    uint64_t esize = isa_dtype_size(ap->dtype), idx[ISA_MAX_DIMS + 1] = {0};
    uint64_t base = (uint64_t)(uintptr_t)v->va + ap->offset;
    for (out->n = 0; out->n < total; out->n++) {
        int64_t off = 0;
        for (unsigned d = 0; d < nd; d++)
            off += (int64_t)idx[d] * step[d];
        uint64_t lo = base + (uint64_t)(off * (int64_t)esize);
        out->run[out->n] = (struct race_run){lo, lo + run * esize};
        for (unsigned d = nd; d-- > 0;) {  /* odometer, innermost first */
            if (++idx[d] < count[d])
                break;
            idx[d] = 0;
        }
    }
    race_hbm_merge(out);
    return true;
}

/* The runs of a, or its whole span when they cannot be listed. */
static void race_hbm_runs(const struct race_access *a, struct race_runs *out)
{
    if (race_hbm_list(a, out))
        return;
    if (out->cap == 0 && !grow_array((void **)&out->run, 1, &out->cap, sizeof *out->run, 64)) {
        out->n = 0;  /* no memory: nothing listed; race_hbm_common says "all" */
        return;
    }
    out->run[0] = (struct race_run){a->lo, a->hi};
    out->n = 1;
}

/* Call fn on each byte range that a and b (b NULL: a alone) both touch,
 * until it returns true; returns that. With no runs listed (no memory),
 * true. */
static bool race_hbm_common(struct race_state *r, const struct race_access *a,
                            const struct race_access *b,
                            bool (*fn)(const struct race_snap *s, uint64_t lo, uint64_t hi),
                            const struct race_snap *snap)
{
    race_hbm_runs(a, &r->runs[0]);
    if (b != NULL)
        race_hbm_runs(b, &r->runs[1]);
    else
        r->runs[1] = (struct race_runs){r->runs[1].run, 0, r->runs[1].cap};
    const struct race_runs *x = &r->runs[0], *y = &r->runs[1];
    if (x->n == 0 || (b != NULL && y->n == 0))
        return true;
    if (b == NULL) {
        for (size_t i = 0; i < x->n; i++)
            if (fn(snap, x->run[i].lo, x->run[i].hi))
                return true;
        return false;
    }
    for (size_t i = 0, j = 0; i < x->n && j < y->n;) {
        uint64_t lo = x->run[i].lo > y->run[j].lo ? x->run[i].lo : y->run[j].lo;
        uint64_t hi = x->run[i].hi < y->run[j].hi ? x->run[i].hi : y->run[j].hi;
        if (lo < hi && fn(snap, lo, hi))
            return true;
        if (x->run[i].hi <= y->run[j].hi)
            i++;
        else
            j++;
    }
    return false;
}

static bool race_hbm_any(const struct race_snap *s, uint64_t lo, uint64_t hi)
{
    (void)s;
    (void)lo;
    (void)hi;
    return true;
}

bool race_hbm_meet(struct race_state *r, const struct race_access *a,
                   const struct race_access *b)
{
    return race_hbm_common(r, a, b, race_hbm_any, NULL);
}

/* Do bytes [lo, hi) differ from the copy taken before? */
static bool race_hbm_differs(const struct race_snap *s, uint64_t lo, uint64_t hi)
{
    if (s->n == 0 || lo < s->lo || hi > s->lo + s->n)
        return true;
    return memcmp(s->bytes + (lo - s->lo), (const void *)(uintptr_t)lo, hi - lo) != 0;
}

bool race_hbm_changed(struct race_state *r, const struct race_access *a,
                      const struct race_access *b)
{
    return race_hbm_common(r, a, b, race_hbm_differs, &r->snap[a->slot]);
}

void race_hbm_snap(struct race_state *r, const struct core_program *prog, enum isa_engine eng,
                   size_t pc)
{
    const struct isa_op_desc *op = isa_op_lookup(prog->code[eng][pc].opcode);
    for (unsigned f = 0; op != NULL && f < op->nfields; f++) {
        const struct isa_field *fd = &op->fields[f];
        if ((fd->kind != ISA_FK_AP && fd->kind != ISA_FK_APF) || !(fd->attr & ISA_FA_OUT))
            continue;
        struct race_snap *s = &r->snap[fd->slot];
        struct race_access a;
        s->n = 0;
        if (!race_hbm_access(prog, eng, pc, fd->slot, &a) || a.hi - a.lo > RACE_SNAP_MAX ||
            !grow_array((void **)&s->bytes, a.hi - a.lo, &s->cap, 1, 4096))
            continue;
        s->lo = a.lo;
        s->n = a.hi - a.lo;
        memcpy(s->bytes, (const void *)(uintptr_t)a.lo, s->n);
    }
}

void race_hbm_free(struct race_state *r)
{
    for (int i = 0; i < 2; i++)
        free(r->runs[i].run);
    for (int i = 0; i < ISA_MAX_AP; i++)
        free(r->snap[i].bytes);
}
