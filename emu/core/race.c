/*
 * race.c: the vector-clock race checker (see race.h): the clocks of the
 * engines and of each core's semaphores and events, the accesses of one
 * instruction, the checks against earlier accesses (SBUF/PSUM within a
 * core; HBM between the cores of a run, race_hbm.c), what is remembered
 * and forgotten, and the report. The edges between cores are
 * race_xcore.c's.
 */
#include "emu/core/race.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/race_int.h"
#include "emu/grow.h"
#include "emu/isa/isa_args.h"
#include "emu/isa/isa_text.h"

emu_status race_create(uint32_t ncores, struct race_state **out)
{
    if (ncores == 0 || ncores * ISA_ENG_COUNT > RACE_MAX_ENG)
        return EMU_INVALID;
    struct race_state *r = calloc(1, sizeof *r);
    if (r == NULL)
        return EMU_RESOURCE;
    r->neng = ncores * ISA_ENG_COUNT;
    r->x.ncores = ncores;
    r->sync_vc = calloc(ncores, sizeof *r->sync_vc);
    if (r->sync_vc == NULL) {
        free(r);
        return EMU_RESOURCE;
    }
    *out = r;
    return EMU_OK;
}

/* Let go of what a remembered access owns. */
static void race_forget(struct race_state *r, struct race_access *a)
{
    race_hbm_forget(a);
    race_ww_drop(r, a);
}

void race_destroy(struct race_state *r)
{
    if (r == NULL)
        return;
    free(r->sync_vc);
    free(r->hist);
    for (uint32_t c = 0; c < RACE_MAX_CORES; c++) {
        for (size_t i = 0; i < r->nhbm[c]; i++)
            race_forget(r, &r->hbm[c][i]);
        free(r->hbm[c]);
    }
    race_hbm_free(r);
    race_ww_free(r);
    race_xcore_free(r);
    free(r);
}

static uint32_t *race_sync_vc(struct race_state *r, uint32_t core, const struct isa_sync *s)
{
    unsigned idx = s->kind == ISA_SYNC_EVENT ? ISA_NUM_SEMS + s->id % ISA_NUM_EVENTS
                                             : s->id % ISA_NUM_SEMS;
    return r->sync_vc[core][idx];
}

void race_on_wait(struct race_state *r, uint32_t core, enum isa_engine eng,
                  const struct isa_insn *insn)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    for (int i = 0; i < ISA_MAX_WAIT && insn->wait[i].kind != ISA_SYNC_NONE; i++)
        race_join(r->vc[me], race_sync_vc(r, core, &insn->wait[i]), r->neng);
    if (insn->opcode == ISA_OP_sem_wait) {
        struct isa_sync s = {ISA_SYNC_SEM, 0, (uint16_t)ISA_ARG_INT(insn, sem_wait, sem), 0};
        race_join(r->vc[me], race_sync_vc(r, core, &s), r->neng);
    }
}

void race_on_signal(struct race_state *r, uint32_t core, enum isa_engine eng,
                    const struct isa_sync *s)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    race_join(race_sync_vc(r, core, s), r->vc[me], r->neng);
}

/* The read of the index of operand `of` (with tensor indirection, dynap.h):
 * the whole index tile, as the front end counts it. */
static struct race_access race_index_access(const struct isa_ap *ap, const struct race_access *of)
{
    struct race_access a = *of;
    a.write = false;
    a.mem = ISA_MEM_SBUF;
    a.part_lo = ap->ix.start_part;
    a.part_hi = ap->ix.start_part + ap->ix.num_part - 1u;
    a.lo = ap->ix.offset;
    a.hi = ap->ix.offset + (uint64_t)ap->ix.cols * isa_dtype_size(ap->ix.dtype);
    return a;
}

/* Accesses of one instruction (two for an operand with tensor indirection:
 * its columns and its index) (insn: pc's instruction with its run-time
 * offsets applied, dynap.h, so an on-chip operand counts where it really
 * went): its SBUF/PSUM operands and, in a run of
 * several cores, its HBM ones (a core_barrier's data word is only named,
 * never touched). eng and epoch are filled by the caller. */
static uint32_t race_accesses(const struct race_state *r, const struct core_program *prog,
                              enum isa_engine eng, size_t pc, const struct isa_insn *insn,
                              struct race_access *out)
{
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    bool hbm = r->x.ncores > 1 && insn->opcode != ISA_OP_core_barrier;
    uint32_t n = 0;
    for (unsigned f = 0; op != NULL && f < op->nfields; f++) {
        const struct isa_field *fd = &op->fields[f];
        if (fd->kind != ISA_FK_AP && fd->kind != ISA_FK_APF)
            continue;
        const struct isa_ap *ap = &insn->ap[fd->slot];
        struct isa_extent ext;
        struct race_access *a = &out[n];
        *a = (struct race_access){0};
        a->write = (fd->attr & ISA_FA_OUT) != 0;
        if (ap->mem == ISA_MEM_HBM) {
            n += hbm && race_hbm_access(r, prog, eng, pc, fd->slot, a);
            continue;
        }
        struct isa_ap span = *ap;
        if (ap->ix.mem != ISA_MEM_NONE) {  /* tensor indirection: the offsets it reached */
            span.dim[0].count = ap->dyn_max + 1;
            span.dyn_max = 0;
        }
        if ((ap->mem != ISA_MEM_SBUF && ap->mem != ISA_MEM_PSUM) ||
            isa_ap_extent(&span, &ext) != EMU_OK)
            continue;
        a->mem = ap->mem;
        a->slot = fd->slot;
        a->part_lo = ext.part_first;
        a->part_hi = ext.part_last;
        a->lo = ext.lo;
        a->hi = ext.hi;
        a->prog = prog;
        a->pc = pc;
        n++;
        if (ap->ix.mem == ISA_MEM_SBUF)  /* tensor indirection reads its index */
            out[n++] = race_index_access(ap, a);
    }
    return n;
}

static int race_conflict(const struct race_access *a, const struct race_access *b)
{
    return a->mem == b->mem && (a->write || b->write) && a->part_lo <= b->part_hi &&
           b->part_lo <= a->part_hi && a->lo < b->hi && b->lo < a->hi;
}

static const char *race_var_name(void *user, uint32_t var_id)
{
    const struct core_var *v = core_find_var(user, var_id);
    return v != NULL ? v->name : NULL;
}

/* "HBM out bytes [0, 512)": the variable and its bytes (offsets, not host
 * addresses, so that the report is the same on every run). */
static void race_where_hbm(const struct race_access *a, const struct isa_insn *insn, char *buf,
                           size_t cap)
{
    const struct isa_ap *ap = &insn->ap[a->slot];
    const struct core_var *v = core_find_var(a->prog, ap->var_id);
    struct isa_extent ext = {0};
    (void)isa_ap_extent(ap, &ext);
    const char *name = v != NULL && v->name != NULL ? v->name : "?";
    uint64_t base = v != NULL ? (uint64_t)(uintptr_t)v->va : 0;
    if (a->whole)
        snprintf(buf, cap, "HBM %s, rows an index chooses (all %llu bytes)", name,
                 (unsigned long long)(v != NULL ? v->size : 0));
    else if (a->runs != NULL)
        snprintf(buf, cap, "HBM %s, rows an index chose (%u byte runs in [%llu, %llu))", name,
                 a->nruns, (unsigned long long)(a->lo - base),
                 (unsigned long long)(a->hi - base));
    else
        snprintf(buf, cap, "HBM %s bytes [%llu, %llu)", name, (unsigned long long)ext.lo,
                 (unsigned long long)ext.hi);
}

static void race_describe(const struct race_access *a, char *buf, size_t cap)
{
    char text[640], where[192];
    uint32_t eng = a->eng % ISA_ENG_COUNT;
    const struct isa_insn *insn = &a->prog->code[eng][a->pc];
    struct isa_text_env env = {NULL, race_var_name, (void *)a->prog};
    isa_text_print(insn, &env, text, sizeof text);
    if (a->mem == ISA_MEM_HBM)
        race_where_hbm(a, insn, where, sizeof where);
    else
        snprintf(where, sizeof where, "%s partitions %u..%u bytes [%llu, %llu)",
                 a->mem == ISA_MEM_SBUF ? "SBUF" : "PSUM", a->part_lo, a->part_hi,
                 (unsigned long long)a->lo, (unsigned long long)a->hi);
    snprintf(buf, cap, "core %u %s[%zu] %s %s: %s", a->eng / ISA_ENG_COUNT,
             isa_engine_name(eng), a->pc, a->write ? "writes" : "reads", where, text);
}

static void race_report(const struct race_access *a, const struct race_access *b, char *report,
                        size_t cap)
{
    char da[1024], db[1024];
    race_describe(a, da, sizeof da);
    race_describe(b, db, sizeof db);
    size_t len = strnlen(report, cap);
    if (len + 1 < cap)
        snprintf(report + len, cap - len, "race: %s orders these two accesses:\n  %s\n  %s\n",
                 a->mem == ISA_MEM_HBM ? "no semaphore, core_barrier, sendrecv or collective"
                                       : "no semaphore",
                 da, db);
}

/* The smallest clock any engine that checks against a holds for a's
 * engine: those of its core on chip, those of the other cores in HBM. */
static uint32_t race_seen(const struct race_state *r, const struct race_access *a)
{
    uint32_t seen = UINT32_MAX, core = a->eng / ISA_ENG_COUNT;
    for (uint32_t e = 0; e < r->neng; e++) {
        bool same = e / ISA_ENG_COUNT == core;
        if (e != a->eng && same == (a->mem != ISA_MEM_HBM) && r->vc[e][a->eng] < seen)
            seen = r->vc[e][a->eng];
    }
    return seen;
}

/* Forget accesses every engine that could race with them has already
 * synchronised with. */
static void race_prune(struct race_state *r, struct race_access *hist, size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        if (hist[i].epoch > race_seen(r, &hist[i]))
            hist[k++] = hist[i];
        else
            race_forget(r, &hist[i]);
    }
    *n = k;
}

static int race_remember_in(struct race_state *r, struct race_access **hist, size_t *n,
                            size_t *cap, const struct race_access *a)
{
    if (*n + 1 > *cap) {
        race_prune(r, *hist, n);
        if (!grow_array((void **)hist, *n + 1, cap, sizeof **hist, 256))
            return -1;
    }
    struct race_access kept = *a;
    if (!race_hbm_own(&kept))
        return -1;
    race_ww_keep(r, &kept);
    (*hist)[(*n)++] = kept;
    return 0;
}

static int race_remember(struct race_state *r, const struct race_access *acc, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++) {
        int rc = acc[k].mem == ISA_MEM_HBM
                     ? race_remember_in(r, &r->hbm[acc[k].eng / ISA_ENG_COUNT],
                                        &r->nhbm[acc[k].eng / ISA_ENG_COUNT],
                                        &r->hbm_cap[acc[k].eng / ISA_ENG_COUNT], &acc[k])
                     : race_remember_in(r, &r->hist, &r->nhist, &r->cap, &acc[k]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* An earlier SBUF/PSUM access of another engine of this core that a
 * conflicts with and that engine me has not synchronised with, or NULL. */
static const struct race_access *race_find_chip(const struct race_state *r, uint32_t me,
                                                const struct race_access *a)
{
    for (size_t i = 0; i < r->nhist; i++) {
        const struct race_access *old = &r->hist[i];
        if (old->eng != me && old->eng / ISA_ENG_COUNT == me / ISA_ENG_COUNT &&
            old->epoch > r->vc[me][old->eng] && race_conflict(old, a))
            return old;
    }
    return NULL;
}

/* Would old and a, both touching some bytes, leave memory the same in
 * either order? So when the write among them changed none of the bytes
 * they share (both cores storing the same values). */
static bool race_hbm_benign(struct race_state *r, const struct race_access *old,
                            const struct race_access *a)
{
    return a->write ? !race_hbm_changed(r, a, old) : !old->changed;
}

/* The same in HBM, against the accesses of the other cores, each core's
 * latest first (of a zeroing and a store after it, the store is the one
 * that a late write of the other core undoes). Two writes whose order
 * the end of the run may still settle wait for it, and a read after its
 * own core wrote what the other core's write left is none (race_ww.c). */
static const struct race_access *race_find_hbm(struct race_state *r, uint32_t me,
                                               const struct race_access *a)
{
    for (uint32_t c = 0; c < r->x.ncores; c++) {
        if (c == me / ISA_ENG_COUNT)
            continue;
        for (size_t i = r->nhbm[c]; i-- > 0;) {
            const struct race_access *old = &r->hbm[c][i];
            if (old->lo < a->hi && a->lo < old->hi && (old->write || a->write) &&
                old->epoch > r->vc[me][old->eng] && race_hbm_meet(r, old, a) &&
                !race_hbm_benign(r, old, a) &&
                !(old->write && a->write && race_ww_settle(r, r->hbm[c], r->nhbm[c], i, a)) &&
                !(old->write && !a->write && race_ww_read(r, me, old, a)))
                return old;
        }
    }
    return NULL;
}

void race_before(struct race_state *r, struct core *c, enum isa_engine eng,
                 const struct core_program *prog, size_t pc)
{
    if (r->x.ncores > 1)
        race_hbm_before(r, c, prog, eng, pc);
}

void race_on_blocked(struct race_state *r, uint32_t core, enum isa_engine eng,
                     const struct isa_insn *insn)
{
    race_on_wait(r, core, eng, insn);
    race_xcore_arrive(r, core, eng, insn);
}

emu_status race_observe(struct race_state *r, uint32_t core, enum isa_engine eng,
                        const struct core_program *prog, size_t pc, const struct isa_insn *live,
                        char *report, size_t cap)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    const struct isa_insn *insn = &prog->code[eng][pc];
    race_xcore_join(r, core, eng, insn);
    uint32_t epoch = ++r->vc[me][me];
    struct race_access acc[2 * ISA_MAX_AP];
    uint32_t n = race_accesses(r, prog, eng, pc, live, acc);
    for (uint32_t k = 0; k < n; k++) {
        acc[k].eng = me;
        acc[k].epoch = epoch;
        if (acc[k].mem == ISA_MEM_HBM && acc[k].write)
            acc[k].changed = race_hbm_changed(r, &acc[k], NULL);
        const struct race_access *old = acc[k].mem == ISA_MEM_HBM ? race_find_hbm(r, me, &acc[k])
                                                                 : race_find_chip(r, me, &acc[k]);
        if (old != NULL) {
            race_report(old, &acc[k], report, cap);
            return EMU_EXEC_ERR;
        }
    }
    if (race_remember(r, acc, n) != 0)
        return EMU_RESOURCE;
    race_xcore_done(r, core, eng, insn);
    return EMU_OK;
}

emu_status race_finish(struct race_state *r, char *report, size_t cap)
{
    const struct race_pend *p = race_ww_unsettled(r);
    if (p == NULL)
        return EMU_OK;
    race_report(&p->first, &p->late, report, cap);
    return EMU_EXEC_ERR;
}
