/*
 * race_hbm.c: the race checker's HBM operands (race_int.h). An operand in
 * HBM is remembered as the host addresses it spans, so that two programs
 * naming one tensor through different variables still meet. When two
 * spans overlap, the exact test lists the contiguous byte runs of each
 * access pattern (the partition dimension and the free dimensions, inner
 * dimensions that tile contiguously merged into one run), sorts and
 * merges them, and walks both lists: two cores that write interleaved
 * rows of one tensor do not conflict. The lists are built when the spans
 * meet and dropped after; a pattern of more than RACE_HBM_PATTERN_RUNS
 * runs is taken as touching all of its span.
 *
 * The side of an indirect dma_copy whose rows an index chooses (NKI's
 * vector_offset, and scalar_offset's one-row shift) touches bytes known
 * only when it runs: just before it runs, the index is read from SBUF and
 * the runs of the pattern's first row, moved by index[r] rows for each
 * row r (rows outside the variable skipped, as oob=skip does), are listed
 * and merged; the access keeps that list. Beyond RACE_HBM_RUNS runs
 * (before merging) it falls back to the whole variable.
 *
 * Before an instruction with an HBM write operand runs, the bytes that
 * operand spans are copied (up to RACE_SNAP_MAX); afterwards the checker
 * can tell whether the write changed the bytes it shares with an earlier
 * access. A write of the bytes already there (both cores zeroing one
 * output) gives the same memory in either order and is no race.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/core/ap.h"
#include "emu/core/race_int.h"
#include "emu/grow.h"
#include "emu/isa/isa_args.h"

#define RACE_HBM_RUNS (1u << 16)  /* runs an indirect operand keeps for the exact test */
/* runs of an access pattern listed when two spans meet: a 128-partition
 * operand of 16,384 runs a partition (32 MiB a list, two lists at most) */
#define RACE_HBM_PATTERN_RUNS (1u << 21)
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

bool race_hbm_access(const struct race_state *r, const struct core_program *prog,
                     enum isa_engine eng, size_t pc, unsigned slot, struct race_access *acc)
{
    const struct isa_insn *insn = &prog->code[eng][pc];
    const struct isa_ap *ap = &insn->ap[slot];
    if (ap->mem != ISA_MEM_HBM)
        return false;
    const struct core_var *v = core_find_var(prog, ap->var_id);
    struct isa_extent ext;
    if (v == NULL || v->va == NULL || isa_ap_extent(ap, &ext) != EMU_OK)
        return false;
    bool indexed = race_hbm_indirect(insn, slot);
    bool listed = indexed && r->ind_ok;
    if (listed && r->ind.n == 0)
        return false;  /* every row skipped: nothing touched */
    if (!indexed && ext.hi > v->size)
        return false;
    uint64_t base = (uint64_t)(uintptr_t)v->va;
    acc->mem = ISA_MEM_HBM;
    acc->slot = (uint8_t)slot;
    acc->whole = indexed && !listed;
    acc->part_lo = acc->part_hi = 0;
    acc->runs = listed ? r->ind.run : NULL;
    acc->nruns = listed ? (uint32_t)r->ind.n : 0;
    acc->lo = listed ? r->ind.run[0].lo : acc->whole ? base : base + ext.lo;
    acc->hi = listed ? r->ind.run[r->ind.n - 1].hi : acc->whole ? base + v->size : base + ext.hi;
    acc->prog = prog;
    acc->pc = pc;
    return true;
}

bool race_hbm_own(struct race_access *a)
{
    if (a->runs == NULL)
        return true;
    struct race_run *copy = malloc(a->nruns * sizeof *copy);
    if (copy == NULL)
        return false;
    memcpy(copy, a->runs, a->nruns * sizeof *copy);
    a->runs = copy;
    return true;
}

void race_hbm_forget(struct race_access *a)
{
    free(a->runs);
    a->runs = NULL;
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

/* Append the byte runs of pattern ap over a variable at host address
 * base, moved by shift bytes, to out (unsorted); false when out would
 * pass max runs (or no memory). */
static bool race_hbm_pattern(const struct isa_ap *ap, uint64_t base, int64_t shift,
                             uint64_t max, struct race_runs *out)
{
    int64_t step[ISA_MAX_DIMS + 1];
    uint64_t count[ISA_MAX_DIMS + 1], run, total = 1;
    unsigned nd = race_hbm_dims(ap, step, count, &run);
    for (unsigned d = 0; d < nd; d++)
        if ((total *= count[d]) > max)
            return false;
    if (out->n + total > max ||
        !grow_array((void **)&out->run, out->n + total, &out->cap, sizeof *out->run, 64))
        return false;
    uint64_t esize = isa_dtype_size(ap->dtype), idx[ISA_MAX_DIMS + 1] = {0};
    uint64_t start = base + ap->offset + (uint64_t)shift;
    for (uint64_t k = 0; k < total; k++) {
        int64_t off = 0;
        for (unsigned d = 0; d < nd; d++)
            off += (int64_t)idx[d] * step[d];
        uint64_t lo = start + (uint64_t)(off * (int64_t)esize);
        out->run[out->n++] = (struct race_run){lo, lo + run * esize};
        for (unsigned d = nd; d-- > 0;) {  /* odometer, innermost first */
            if (++idx[d] < count[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

/* The byte runs access a touches, sorted and merged, into out; false when
 * there are too many to list (or no memory for them). */
static bool race_hbm_list(const struct race_access *a, struct race_runs *out)
{
    out->n = 0;
    if (a->runs != NULL) {
        if (!grow_array((void **)&out->run, a->nruns, &out->cap, sizeof *out->run, 64))
            return false;
        memcpy(out->run, a->runs, a->nruns * sizeof *out->run);
        out->n = a->nruns;
        return true;
    }
    const struct core_program *prog = a->prog;
    const struct isa_ap *ap = &prog->code[a->eng % ISA_ENG_COUNT][a->pc].ap[a->slot];
    const struct core_var *v = core_find_var(prog, ap->var_id);
    if (a->whole || v == NULL ||
        !race_hbm_pattern(ap, (uint64_t)(uintptr_t)v->va, 0, RACE_HBM_PATTERN_RUNS, out))
        return false;
    race_hbm_merge(out);
    return true;
}

void race_hbm_runs(const struct race_access *a, struct race_runs *out)
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

/* Copy the bytes the HBM write operands of prog->code[eng][pc] span. */
static void race_hbm_snap(struct race_state *r, const struct core_program *prog,
                          enum isa_engine eng, size_t pc)
{
    const struct isa_op_desc *op = isa_op_lookup(prog->code[eng][pc].opcode);
    for (unsigned f = 0; op != NULL && f < op->nfields; f++) {
        const struct isa_field *fd = &op->fields[f];
        if ((fd->kind != ISA_FK_AP && fd->kind != ISA_FK_APF) || !(fd->attr & ISA_FA_OUT))
            continue;
        struct race_snap *s = &r->snap[fd->slot];
        struct race_access a;
        s->n = 0;
        if (!race_hbm_access(r, prog, eng, pc, fd->slot, &a) || a.hi - a.lo > RACE_SNAP_MAX ||
            !grow_array((void **)&s->bytes, a.hi - a.lo, &s->cap, 1, 4096))
            continue;
        s->lo = a.lo;
        s->n = a.hi - a.lo;
        memcpy(s->bytes, (const void *)(uintptr_t)a.lo, s->n);
    }
}

/* The integer at p of dtype (an integer type) into *out; false for other
 * types. */
static bool race_int_at(const uint8_t *p, uint32_t dtype, int64_t *out)
{
    int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32; int64_t i64;
    switch (dtype) {
    case NUM_DT_INT8: memcpy(&i8, p, 1); *out = i8; return true;
    case NUM_DT_UINT8: memcpy(&u8, p, 1); *out = u8; return true;
    case NUM_DT_INT16: memcpy(&i16, p, 2); *out = i16; return true;
    case NUM_DT_UINT16: memcpy(&u16, p, 2); *out = u16; return true;
    case NUM_DT_INT32: memcpy(&i32, p, 4); *out = i32; return true;
    case NUM_DT_UINT32: memcpy(&u32, p, 4); *out = u32; return true;
    case NUM_DT_INT64: case NUM_DT_UINT64: memcpy(&i64, p, 8); *out = i64; return true;
    }
    return false;
}

/* List into r->ind the bytes the indexed operand of the indirect dma_copy
 * insn will touch (the runs of its first row, moved by index[r] rows for
 * each row r inside the variable), sorted and merged; false when insn has
 * none, its index cannot be read (the semantics will report that), or
 * there are more than RACE_HBM_RUNS runs. */
static bool race_hbm_index(struct race_state *r, struct core *c,
                           const struct core_program *prog, enum isa_engine eng, size_t pc)
{
    const struct isa_insn *insn = &prog->code[eng][pc];
    unsigned slot = ISA_AP_SLOT(dma_copy, dst);
    if (!race_hbm_indirect(insn, slot))
        slot = ISA_AP_SLOT(dma_copy, src);
    if (!race_hbm_indirect(insn, slot) || insn->ap[slot].mem != ISA_MEM_HBM)
        return false;
    struct isa_ap row = insn->ap[slot];
    const struct core_var *v = core_find_var(prog, row.var_id);
    struct isa_exec_ctx ctx = {.core = c, .prog = prog, .engine = eng, .insn = insn, .pc = pc};
    struct ap_view idx;
    struct isa_extent ext;
    uint32_t rows = row.num_part;
    row.num_part = 1;
    if (v == NULL || v->va == NULL || isa_ap_extent(&row, &ext) != EMU_OK ||
        ap_bind(&ctx, ISA_AP_SLOT(dma_copy, index), &idx) != EMU_OK || idx.rows != rows)
        return false;
    int64_t row_bytes = (int64_t)row.part_step * (int64_t)isa_dtype_size(row.dtype);
    r->ind.n = 0;
    for (uint32_t k = 0; k < rows; k++) {
        int64_t i, off, lo, hi;
        if (!race_int_at(ap_row_ptr(&idx, k), idx.dtype, &i))
            return false;
        if (__builtin_mul_overflow(i, row_bytes, &off) ||
            __builtin_add_overflow((int64_t)ext.lo, off, &lo) ||
            __builtin_add_overflow((int64_t)ext.hi, off, &hi) || lo < 0 ||
            (uint64_t)hi > v->size)
            continue;  /* outside the variable: skipped (oob=skip) or an error */
        if (!race_hbm_pattern(&row, (uint64_t)(uintptr_t)v->va, off, RACE_HBM_RUNS, &r->ind))
            return false;
    }
    race_hbm_merge(&r->ind);
    return true;
}

void race_hbm_before(struct race_state *r, struct core *c, const struct core_program *prog,
                     enum isa_engine eng, size_t pc)
{
    r->ind_ok = race_hbm_index(r, c, prog, eng, pc);
    race_hbm_snap(r, prog, eng, pc);
}

void race_hbm_free(struct race_state *r)
{
    for (int i = 0; i < 2; i++)
        free(r->runs[i].run);
    free(r->ind.run);
    for (int i = 0; i < ISA_MAX_AP; i++)
        free(r->snap[i].bytes);
}
