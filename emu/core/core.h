/*
 * core.h: one emulated NeuronCore and the context its instructions run in.
 *
 * A core owns its on-chip memories (SBUF: 128 partitions of 192 KiB on
 * NeuronCore-v2, 224 KiB on v3 or 256 KiB on v4; PSUM: 128 partitions of 16 KiB in 8
 * banks), its semaphores and events, each engine's registers, the random
 * state, and per-engine fp32 scratch rows that the instruction semantics
 * use instead of allocating. All of it is allocated once, when the core is
 * created, and reused by every execution.
 *
 * A program is what one core runs: the five decoded engine streams and the
 * HBM variables they may name. core_run() (sched.c) interleaves the engines
 * deterministically; each instruction's semantics is one function
 * isa_exec_<op>(ctx, insn) in an exec_*.c file.
 */
#ifndef TRNEMU_EMU_CORE_H
#define TRNEMU_EMU_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/isa/isa.h"
#include "emu/neff/neff_model.h"
#include "emu/num/numerics.h"
#include "emu/status.h"

/* fp32 scratch rows per engine; each holds CORE_SCRATCH_ELEMS floats
 * (enough for one partition of the largest SBUF, 256 KiB of bytes, as
 * floats: any operand row fits). */
#define CORE_SCRATCH_SLOTS 6
#define CORE_SCRATCH_ELEMS (256u * 1024u)

/* An HBM variable a program may name in its access patterns. */
struct core_var {
    uint32_t var_id;   /* the id instructions use */
    const char *name;  /* for messages and disassembly */
    uint8_t *va;       /* host address of byte 0 */
    uint64_t size;     /* bytes */
};

struct core_coll;

/* What one core runs. */
struct core_program {
    const char *name;                          /* model/subgraph, for reports */
    const struct isa_insn *code[ISA_ENG_COUNT];/* decoded stream per engine */
    size_t n[ISA_ENG_COUNT];                   /* instructions per stream */
    const struct core_var *vars;               /* sorted by var_id */
    size_t nvars;                              /* entries in vars */
    /* The engine JSON DMA descriptors (run by dma_trigger), and the
     * variables their access patterns name, by neff var index
     * (neff_dma_ap.var_index). A state-buffer variable is the core's whole
     * SBUF seen as one flat partition-major array. */
    const struct neff_dma_desc *descs[ISA_ENG_COUNT]; /* per engine */
    size_t ndescs[ISA_ENG_COUNT];              /* entries in descs */
    const struct core_var *var_by_index;       /* one per neff var (va NULL: none) */
    size_t nvar_index;                         /* entries in var_by_index */
    const struct core_coll *coll;             /* collectives (emu/core/core_coll.h), NULL: none */
};

struct race_state;
struct cost_run;
struct dynap_stage;

/* XORWOW random generators (act_rng.c): the Vector and the GpSimd engine
 * each keep CORE_XW_STATES generators per compute lane (GpSimd uses the
 * first), each CORE_XW_WORDS uint32: x0..x4 (xorshift words), d (Weyl
 * counter). */
#define CORE_XW_ENGINES 2 /* index 0: Vector, 1: GpSimd */
#define CORE_XW_STATES 4
#define CORE_XW_WORDS 6

struct core {
    uint32_t gen;                             /* NeuronCore version: 2, 3 or 4 */
    uint32_t sbuf_part_bytes;                 /* bytes per SBUF partition */
    uint8_t *sbuf;                            /* 128 * sbuf_part_bytes */
    uint8_t *psum;                            /* 128 * ISA_PSUM_PART_BYTES */
    uint32_t sem[ISA_NUM_SEMS];               /* semaphore values */
    uint32_t event[ISA_NUM_EVENTS];           /* event values (0 or 1) */
    int64_t reg[ISA_ENG_COUNT][ISA_NUM_REGS]; /* engine sequencer registers */
    uint64_t rng_seed;                        /* seed of the random streams */
    uint32_t xorwow[CORE_XW_ENGINES][ISA_NUM_PARTITIONS][CORE_XW_STATES][CORE_XW_WORDS]; /* random generator states */
    float acc[ISA_ENG_COUNT][ISA_NUM_PARTITIONS]; /* engine accumulator registers (act_acc.h) */
    bool stochastic;                          /* float stores round stochastically */
    uint8_t xw_seeded[CORE_XW_ENGINES];       /* xorwow[e] seeded in this execution */
    uint8_t spare_[5];                        /* explicit: struct core has no implicit padding
                                                 (core_state.c checks every byte is listed) */
    struct num_round sr[ISA_ENG_COUNT];       /* per-engine stochastic rounding stream */
    float *scratch;                           /* ISA_ENG_COUNT * SLOTS * ELEMS floats */
    struct race_state *race;                  /* race checker, NULL when off */
};

/* The context an instruction's semantics runs in. */
struct isa_exec_ctx {
    struct core *core;                 /* the core executing */
    const struct core_program *prog;   /* its program */
    enum isa_engine engine;            /* engine whose stream holds insn */
    const struct isa_insn *insn;       /* the instruction being executed */
    size_t pc;                         /* index of the instruction */
    size_t next_pc;                    /* where the engine continues (jump/branch set it) */
    bool halted;                       /* halt was executed */
    bool blocked;                      /* op-level wait not satisfied: retry later */
    size_t fuse_max;                   /* instructions after insn the semantics may run
                                          with it, none waiting (0: none; the scheduler) */
    size_t fused;                      /* instructions after insn it ran: the scheduler
                                          completes them (costs, signals) in order */
    const struct dynap_stage *stage;   /* operands with tensor indirection, gathered
                                          into rows of their own (dynap.h); NULL: none */
    char err[256];                     /* cause, when the semantics fails */
};

/* Create a core of NeuronCore version gen (2, 3 or 4). EMU_RESOURCE when the
 * host is out of memory. */
emu_status core_create(uint32_t gen, struct core **out);
void core_destroy(struct core *c);

/* Start of an execution: semaphores, events and registers to zero; the
 * random generators unseeded (core_xorwow seeds them from seed on first
 * use); seed the rounding streams. stochastic: float stores that
 * narrow (to bf16, fp16, fp8) round stochastically instead of to nearest
 * even (NEURON_RT_STOCHASTIC_ROUNDING_EN). SBUF and PSUM keep their bytes,
 * as on hardware. */
void core_reset(struct core *c, uint64_t seed, bool stochastic);
/* Seed every XORWOW generator of engine slot xe (0 Vector, 1 GpSimd) from
 * seed: words 2i, 2i+1 of state j of lane l are the low and high halves of
 * num_rng_u64(seed, (l * 4 + j) * 3 + i), i = 0..2; an all-zero x0..x4
 * gets x0 = 1. */
void core_xorwow_seed(struct core *c, unsigned xe, uint64_t seed);
/* The generators of engine slot xe, seeded first (from the execution's
 * seed xor a per-engine key) when this execution has not seeded them. */
uint32_t (*core_xorwow(struct core *c, unsigned xe))[CORE_XW_STATES][CORE_XW_WORDS];

/* The core's invariants: a known generation with its SBUF size, its
 * memories and scratch mapped, events 0 or 1, rounding streams of a known
 * mode. O(events); for assert() around every run (core_run). */
bool core_sane(const struct core *c);

/* Scratch row `slot` of the calling engine (CORE_SCRATCH_ELEMS floats). */
float *core_scratch(struct isa_exec_ctx *ctx, unsigned slot);

/* Does have <op> want hold, op an ISA_CMP_* value (eq, ne, ge, gt, le, lt)? */
bool core_cmp(int64_t have, unsigned op, int64_t want);

/* The HBM variable with this id, or NULL. */
const struct core_var *core_find_var(const struct core_program *p, uint32_t var_id);

/* Record a failure cause in ctx->err (printf format); returns st. */
emu_status core_fail(struct isa_exec_ctx *ctx, emu_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- running ------------------------------------------------------------ */

/* Host threads a run may put cores on (given by the runner, which owns
 * them). */
struct core_run_threads {
    void *user;  /* the runner's state */
    /* Start fn(arg) on a host thread other than the caller's for physical
     * core `core` (1 .. ncores-1) and return at once; false when no thread
     * can take it. */
    bool (*start)(void *user, uint32_t core, void (*fn)(void *arg), void *arg);
    /* Wait until the fn started for `core` has returned. */
    void (*join)(void *user, uint32_t core);
};

/* Options of one run. */
struct core_run_opts {
    uint64_t timeout_ms;   /* wall-clock limit (NEURON_RT_EXEC_TIMEOUT), 0 for none */
    bool racecheck;        /* report unordered conflicting SBUF/PSUM accesses */
    uint64_t seed;         /* random and stochastic-rounding seed */
    bool stochastic;       /* stochastic rounding of narrowing float stores */
    struct cost_run *cost; /* device-time schedule to fill (emu/core/cost.h), NULL: none;
                              the caller runs cost_begin first */
    const struct core_run_threads *threads; /* run each core on its own host thread
                                               (when the run allows it), NULL: one thread */
};

/* How core_run places one core's engines (process-wide, sched.c). */
#define CORE_ENGINES_AUTO 0         /* a team of threads when the program allows it and it
                                       pays on this host (measured), else interleaved */
#define CORE_ENGINES_INTERLEAVED 1  /* never: every engine on the calling thread */
#define CORE_ENGINES_TEAM 2         /* a team whenever the program and host allow (tests) */
void core_set_engine_threads(int mode);
/* Runs so far (process-wide) that ran a core's engines as a team. */
unsigned long long core_team_runs(void);

/* Run ncores cores, each its program, to completion. On one thread every
 * engine of every core is interleaved in one fixed order. With
 * opts->threads, two or more cores that all have work and share one
 * core_lnc (their programs' coll) run each on its own host thread, meeting
 * only at core_barrier and sendrecv, unless the run needs the one order:
 * racecheck, recorded spans (cost), or cross-rank collectives in more than
 * one core. Either way a race-free program gives the same bits and the
 * same device times. Returns EMU_OK, the failing instruction's status (for
 * example EMU_EXEC_OOB), EMU_EXEC_ERR for a deadlock or a race (with
 * racecheck), EMU_TIMEOUT past the limit. On failure, report holds a
 * multi-line description (pending instructions, semaphores). */
emu_status core_run(struct core *const *cores, const struct core_program *const *progs,
                    uint32_t ncores, const struct core_run_opts *opts, char *report,
                    size_t report_cap);

#endif
