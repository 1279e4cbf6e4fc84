/*
 * sched_int.h: what the files of the engine scheduler share (private to
 * emu/core/): an engine stream under way, its turns, the one-thread
 * interleaved run, the reports (sched_step.c); engine teams
 * (sched_team.c); core_run and split runs in sched.c use both.
 */
#ifndef TRNEMU_EMU_CORE_SCHED_INT_H
#define TRNEMU_EMU_CORE_SCHED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/core.h"

#define SCHED_SLICE 4096u  /* instructions an engine runs per turn at most */

struct race_state;

/* One engine stream under way. */
struct sched_eng {
    struct core *core;                 /* core that owns the engine */
    const struct core_program *prog;   /* its program */
    uint32_t core_idx;                 /* index among the cores run */
    enum isa_engine eng;               /* which engine */
    size_t pc;                         /* next instruction */
    bool done;                         /* halted or ran off the end */
    struct cost_run *cost;             /* device-time schedule, NULL: none */
    bool dry;                          /* cost replay: complete without running */
};

/* Monotonic clock. */
uint64_t sched_now_ns(void);
uint64_t sched_now_ms(void);

/* Give e its turn: up to SCHED_SLICE instructions while their waits hold
 * (race: the race checker, NULL when off); counts them into *steps and
 * sets *progress when one ran. A failure is described in report. */
emu_status sched_turn(struct sched_eng *e, struct race_state *race, uint64_t *steps,
                      bool *progress, char *report, size_t cap);

/* Every engine of es interleaved on the calling thread, to the end. */
emu_status sched_run_one(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts,
                         struct race_state *race, char *report, size_t report_cap);

/* The deadlock report: each engine's pending instruction and wait, the
 * non-zero semaphores of each core. */
void sched_report_stuck(const struct sched_eng *es, uint32_t n, char *report, size_t cap);

/* The timeout report: every engine's pending instruction. */
void sched_say_timeout(const struct sched_eng *es, uint32_t n, uint64_t limit_ms,
                       uint64_t steps, char *report, size_t cap);

/* The one core of a run that has work (the others have none), or -1. */
int sched_sole_core(const struct core_program *const *progs, uint32_t ncores);

/* Run one core (its ISA_ENG_COUNT engines at es) as a team of threads
 * when the program and the host allow it and it pays (sched_team.c), else
 * interleaved; *ran false when neither was tried (racecheck, a program
 * or host a team cannot take): the caller runs it. */
emu_status sched_run_core(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts,
                          char *report, size_t report_cap, bool *ran);

#endif
