/*
 * race_int.h: what the files of the race checker share (private to
 * emu/core): one remembered access, the checker's state, and the
 * functions of race_hbm.c (HBM operands and their exact overlap) and
 * race_xcore.c (the happens-before edges between the cores of one run).
 */
#ifndef TRNEMU_EMU_RACE_INT_H
#define TRNEMU_EMU_RACE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/core.h"

#define RACE_MAX_CORES 4                         /* cores of one run tracked */
#define RACE_MAX_ENG (RACE_MAX_CORES * ISA_ENG_COUNT)
#define RACE_SPARE 64                            /* freed data buffers kept for reuse */
#define RACE_BOX 8                               /* sendrecv posts in flight per pair */

/* A byte run [lo, hi) of host memory. */
struct race_run {
    uint64_t lo, hi;
};

/* One remembered access. */
struct race_access {
    uint32_t eng;       /* global engine index: core * 5 + engine */
    uint32_t epoch;     /* the engine's own clock when it accessed */
    uint8_t mem;        /* ISA_MEM_SBUF, ISA_MEM_PSUM or ISA_MEM_HBM */
    uint8_t write;      /* 1 when written */
    uint8_t slot;       /* the operand's access-pattern slot */
    uint8_t whole;      /* HBM: rows chosen at run time whose bytes could not be
                           listed (too many runs): the whole variable */
    uint8_t changed;    /* HBM write: it changed a byte (a write of the bytes already
                           there changes nothing, in either order) */
    uint32_t part_lo;   /* partitions spanned (on chip) */
    uint32_t part_hi;
    uint64_t lo, hi;    /* on chip: bytes spanned in each partition; HBM: host addresses */
    struct race_run *runs; /* HBM side an index chose rows of: the byte runs it touched,
                              sorted and merged (owned once remembered), else NULL */
    uint32_t nruns;
    uint8_t *data;      /* HBM write, remembered: the bytes [lo, hi) it left (owned; NULL
                           when not kept, race_ww.c) */
    uint64_t data_cap;  /* bytes allocated at data */
    const struct core_program *prog; /* for the report */
    size_t pc;          /* instruction index in its stream */
};

/* Scratch for the exact HBM overlap test: the runs of one operand. */
struct race_runs {
    struct race_run *run;
    size_t n, cap;
};

/* A write of one core that a write of another, unordered, overwrote
 * with other values (race_ww.c): a race when, at the end of the run, the
 * bytes still differ from what the first write left. */
struct race_pend {
    struct race_access first, late; /* own their runs, no data */
    struct race_run *run;           /* the bytes in question, sorted, disjoint */
    size_t nrun;
    uint8_t *want;                  /* what first left there, run after run */
    uint64_t nwant;
};

/* sendrecv posts from one core to another, oldest first (race_xcore.c). */
struct race_box {
    uint32_t head, n;
    uint32_t vc[RACE_BOX][RACE_MAX_ENG];
};

/* What the cores of one run synchronise through (race_xcore.c). */
struct race_xcore {
    uint32_t ncores;
    uint32_t (*bar[RACE_MAX_CORES])[RACE_MAX_ENG]; /* clock of each core_barrier arrival */
    size_t nbar[RACE_MAX_CORES], capbar[RACE_MAX_CORES];
    uint64_t ticket[RACE_MAX_ENG];     /* arrival number of an engine's pending barrier (0: none) */
    bool posted[RACE_MAX_ENG];         /* the engine's pending sendrecv is posted */
    struct race_box box[RACE_MAX_CORES][RACE_MAX_CORES]; /* [from][to] */
    uint32_t coll[RACE_MAX_ENG];       /* clock of the last cross-rank collective */
};

/* The bytes an HBM write operand spanned before its instruction ran. */
struct race_snap {
    uint8_t *bytes;     /* copy of [lo, lo + n) */
    size_t cap;         /* allocated */
    uint64_t lo, n;     /* host address and length; n 0: no copy (too large, no memory) */
};

struct race_state {
    uint32_t neng;                                      /* engines tracked */
    uint32_t vc[RACE_MAX_ENG][RACE_MAX_ENG];            /* vector clock per engine */
    uint32_t (*sync_vc)[ISA_NUM_SEMS + ISA_NUM_EVENTS][RACE_MAX_ENG]; /* per core */
    struct race_access *hist;                           /* live SBUF/PSUM accesses */
    size_t nhist, cap;                                  /* used, allocated */
    struct race_access *hbm[RACE_MAX_CORES];            /* live HBM accesses per core */
    size_t nhbm[RACE_MAX_CORES], hbm_cap[RACE_MAX_CORES]; /* used, allocated */
    struct race_runs runs[4];                           /* race_hbm.c's and race_ww.c's scratch */
    struct race_pend *pend;                             /* write pairs settled at the end */
    size_t npend, cap_pend;
    uint64_t kept;                                      /* bytes of written data kept */
    struct race_buf {
        uint8_t *p;
        uint64_t cap;
    } spare[RACE_SPARE];                                /* data buffers to reuse */
    uint32_t nspare;
    struct race_runs ind;                               /* the bytes the indexed operand of
                                                           the running instruction touches */
    bool ind_ok;                                        /* ind is listed (else: the whole
                                                           variable, or no indexed operand) */
    struct race_snap snap[ISA_MAX_AP];                  /* HBM write operands before */
    struct race_xcore x;                                /* between cores */
};

/* into = the element-wise maximum of into and from (n entries). */
static inline void race_join(uint32_t *into, const uint32_t *from, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (from[i] > into[i])
            into[i] = from[i];
}

/* ---- race_hbm.c ---- */

/* The HBM access operand `slot` of prog->code[eng][pc] makes, into *acc
 * (eng, epoch and write left to the caller; the runs of an indexed side
 * borrowed from r->ind); false when the operand is not in HBM, names no
 * variable, is malformed (the semantics report that), or is an indexed
 * side all of whose rows the index skipped. */
bool race_hbm_access(const struct race_state *r, const struct core_program *prog,
                     enum isa_engine eng, size_t pc, unsigned slot, struct race_access *acc);
/* Before prog->code[eng][pc] runs on core c (a run of several cores
 * only): list the bytes its indexed operand will touch, from the index as
 * it is now (r->ind), and copy the bytes its HBM write operands span. */
void race_hbm_before(struct race_state *r, struct core *c, const struct core_program *prog,
                     enum isa_engine eng, size_t pc);
/* Give a remembered access its own copy of the runs it borrows; false
 * when out of memory. Free them when it is forgotten. */
bool race_hbm_own(struct race_access *a);
void race_hbm_forget(struct race_access *a);
/* The runs of a, sorted and merged, or its whole span when they cannot
 * be listed (none when out of memory). */
void race_hbm_runs(const struct race_access *a, struct race_runs *out);

/* ---- race_ww.c ---- */

/* Keep the bytes the HBM write a left (a remembered copy; up to the
 * caps of race_ww.c, else a->data stays NULL). */
void race_ww_keep(struct race_state *r, struct race_access *a);
/* Give back the bytes a kept (for reuse). */
void race_ww_drop(struct race_state *r, struct race_access *a);
/* Write a of core B conflicts with the earlier write hist[i] of core A
 * (hist: A's remembered accesses, n of them), unordered, and changed
 * bytes they share. true when that is settled: a writes there what
 * hist[i] wrote, later writes of hist[i]'s engine covered them, or the
 * pair waits for the end of the run; false: report it now. */
bool race_ww_settle(struct race_state *r, const struct race_access *hist, size_t n, size_t i,
                    const struct race_access *a);
/* Read rd of engine me conflicts with the write w of another core,
 * unordered. true when it reads the same in either order: on every byte
 * they share, the latest write of rd's core that rd is ordered after left
 * what w left. */
bool race_ww_read(struct race_state *r, uint32_t me, const struct race_access *w,
                  const struct race_access *rd);
/* The end of the run: the first waiting pair whose bytes (less those a
 * later write of its first write's engine covered) differ from what its
 * first write left, or NULL. */
const struct race_pend *race_ww_unsettled(struct race_state *r);
void race_ww_free(struct race_state *r);
/* Do HBM accesses a and b, whose spans overlap, touch a byte in common?
 * Exact for access patterns of up to RACE_HBM_PATTERN_RUNS contiguous runs
 * (an indirect operand: RACE_HBM_RUNS, listed when it ran),
 * their spans beyond. */
bool race_hbm_meet(struct race_state *r, const struct race_access *a,
                   const struct race_access *b);
/* Did write a of the instruction that just ran change a byte it shares
 * with b (every byte it touched when b is NULL)? true when no copy of
 * the bytes before was kept. */
bool race_hbm_changed(struct race_state *r, const struct race_access *a,
                      const struct race_access *b);
void race_hbm_free(struct race_state *r);

/* ---- race_xcore.c ---- */

/* insn of (core, eng) waits for another core (ctx.blocked): the first
 * time, it arrives (its clock is published for the other cores). */
void race_xcore_arrive(struct race_state *r, uint32_t core, enum isa_engine eng,
                       const struct isa_insn *insn);
/* insn of (core, eng) completes: join the clocks of the other cores that
 * its completion waited for. */
void race_xcore_join(struct race_state *r, uint32_t core, enum isa_engine eng,
                     const struct isa_insn *insn);
/* After insn's accesses are recorded: a collective publishes its clock
 * for the next collective of the run. */
void race_xcore_done(struct race_state *r, uint32_t core, enum isa_engine eng,
                     const struct isa_insn *insn);
void race_xcore_free(struct race_state *r);

#endif
