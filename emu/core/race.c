/*
 * race.c: vector-clock race checker for SBUF/PSUM accesses (see race.h).
 */
#include "emu/core/race.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/grow.h"
#include "emu/isa/isa_args.h"
#include "emu/isa/isa_text.h"

#define RACE_MAX_ENG (4 * ISA_ENG_COUNT)

/* One remembered access. */
struct race_access {
    uint32_t eng;       /* global engine index: core * 5 + engine */
    uint32_t epoch;     /* the engine's own clock when it accessed */
    uint8_t mem;        /* ISA_MEM_SBUF or ISA_MEM_PSUM */
    uint8_t write;      /* 1 when written */
    uint32_t part_lo;   /* partitions spanned */
    uint32_t part_hi;
    uint64_t lo, hi;    /* bytes spanned in each partition */
    const struct core_program *prog; /* for the report */
    size_t pc;          /* instruction index in its stream */
};

struct race_state {
    uint32_t neng;                                      /* engines tracked */
    uint32_t vc[RACE_MAX_ENG][RACE_MAX_ENG];            /* vector clock per engine */
    uint32_t (*sync_vc)[ISA_NUM_SEMS + ISA_NUM_EVENTS][RACE_MAX_ENG]; /* per core */
    struct race_access *hist;                           /* live accesses */
    size_t nhist, cap;                                  /* used, allocated */
};

emu_status race_create(uint32_t ncores, struct race_state **out)
{
    if (ncores == 0 || ncores * ISA_ENG_COUNT > RACE_MAX_ENG)
        return EMU_INVALID;
    struct race_state *r = calloc(1, sizeof *r);
    if (r == NULL)
        return EMU_RESOURCE;
    r->neng = ncores * ISA_ENG_COUNT;
    r->sync_vc = calloc(ncores, sizeof *r->sync_vc);
    if (r->sync_vc == NULL) {
        free(r);
        return EMU_RESOURCE;
    }
    *out = r;
    return EMU_OK;
}

void race_destroy(struct race_state *r)
{
    if (r == NULL)
        return;
    free(r->sync_vc);
    free(r->hist);
    free(r);
}

static uint32_t *race_sync_vc(struct race_state *r, uint32_t core, const struct isa_sync *s)
{
    unsigned idx = s->kind == ISA_SYNC_EVENT ? ISA_NUM_SEMS + s->id % ISA_NUM_EVENTS
                                             : s->id % ISA_NUM_SEMS;
    return r->sync_vc[core][idx];
}

static void race_join(uint32_t *into, const uint32_t *from, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (from[i] > into[i])
            into[i] = from[i];
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

/* Accesses of one instruction (on-chip operands only). */
static uint32_t race_accesses(const struct isa_insn *insn, uint32_t eng, uint32_t epoch,
                              const struct core_program *prog, size_t pc,
                              struct race_access *out)
{
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    uint32_t n = 0;
    for (unsigned f = 0; op != NULL && f < op->nfields; f++) {
        const struct isa_field *fd = &op->fields[f];
        if (fd->kind != ISA_FK_AP && fd->kind != ISA_FK_APF)
            continue;
        const struct isa_ap *ap = &insn->ap[fd->slot];
        struct isa_extent ext;
        if ((ap->mem != ISA_MEM_SBUF && ap->mem != ISA_MEM_PSUM) ||
            isa_ap_extent(ap, &ext) != EMU_OK)
            continue;
        out[n++] = (struct race_access){eng, epoch, ap->mem, (fd->attr & ISA_FA_OUT) != 0,
                                        ext.part_first, ext.part_last, ext.lo, ext.hi, prog, pc};
    }
    return n;
}

static int race_conflict(const struct race_access *a, const struct race_access *b)
{
    return a->mem == b->mem && (a->write || b->write) && a->part_lo <= b->part_hi &&
           b->part_lo <= a->part_hi && a->lo < b->hi && b->lo < a->hi;
}

static void race_describe(const struct race_access *a, char *buf, size_t cap)
{
    char text[640];
    uint32_t eng = a->eng % ISA_ENG_COUNT;
    isa_text_print(&a->prog->code[eng][a->pc], NULL, text, sizeof text);
    snprintf(buf, cap, "core %u %s[%zu] %s %s partitions %u..%u bytes [%llu, %llu): %s",
             a->eng / ISA_ENG_COUNT, isa_engine_name(eng), a->pc, a->write ? "writes" : "reads",
             a->mem == ISA_MEM_SBUF ? "SBUF" : "PSUM", a->part_lo, a->part_hi,
             (unsigned long long)a->lo, (unsigned long long)a->hi, text);
}

static void race_report(const struct race_access *a, const struct race_access *b, char *report,
                        size_t cap)
{
    char da[1024], db[1024];
    race_describe(a, da, sizeof da);
    race_describe(b, db, sizeof db);
    size_t len = strnlen(report, cap);
    if (len + 1 < cap)
        snprintf(report + len, cap - len, "race: no semaphore orders these two accesses:\n"
                 "  %s\n  %s\n", da, db);
}

/* Forget accesses every engine has already synchronised with. */
static void race_prune(struct race_state *r)
{
    size_t k = 0;
    for (size_t i = 0; i < r->nhist; i++) {
        const struct race_access *a = &r->hist[i];
        uint32_t seen = UINT32_MAX, first = a->eng / ISA_ENG_COUNT * ISA_ENG_COUNT;
        for (uint32_t e = first; e < first + ISA_ENG_COUNT; e++)
            if (e != a->eng && r->vc[e][a->eng] < seen)
                seen = r->vc[e][a->eng];
        if (a->epoch > seen)
            r->hist[k++] = *a;
    }
    r->nhist = k;
}

static int race_remember(struct race_state *r, const struct race_access *acc, uint32_t n)
{
    if (r->nhist + n > r->cap) {
        race_prune(r);
        if (!grow_array((void **)&r->hist, r->nhist + n, &r->cap, sizeof *r->hist, 256))
            return -1;
    }
    memcpy(r->hist + r->nhist, acc, n * sizeof *acc);
    r->nhist += n;
    return 0;
}

emu_status race_observe(struct race_state *r, uint32_t core, enum isa_engine eng,
                        const struct core_program *prog, size_t pc, char *report, size_t cap)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    uint32_t epoch = ++r->vc[me][me];
    struct race_access acc[ISA_MAX_AP];
    uint32_t n = race_accesses(&prog->code[eng][pc], me, epoch, prog, pc, acc);
    for (uint32_t k = 0; k < n; k++)
        for (size_t i = 0; i < r->nhist; i++) {
            const struct race_access *old = &r->hist[i];
            if (old->eng == me || old->eng / ISA_ENG_COUNT != core ||
                old->epoch <= r->vc[me][old->eng] || !race_conflict(old, &acc[k]))
                continue;
            race_report(old, &acc[k], report, cap);
            return EMU_EXEC_ERR;
        }
    return race_remember(r, acc, n) == 0 ? EMU_OK : EMU_RESOURCE;
}
