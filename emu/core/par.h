/*
 * par.h: splitting one large instruction across idle host threads.
 *
 * A small process-wide pool of helper threads, started on first use. An
 * instruction that is worth splitting (a matmul, a long elementwise pass, a
 * large copy) cuts its work into parts and calls par_for: the calling
 * thread runs parts itself, idle helpers join in, and par_for returns once
 * every part has run exactly once.
 *
 * Determinism: the caller chooses the parts from the size of the problem
 * alone, never from the thread count, and each part computes its outputs
 * with the same code in the same order as an unsplit run; which thread runs
 * which part then changes nothing in the results.
 *
 * par_for may be called from several threads at once (several executions);
 * a par_for from inside a part runs its parts inline, on that thread
 * (except inside a par_team copy, whose par_for may use idle helpers).
 * Code inside a part that needs temporary rows takes them from
 * par_scratch(), never from a buffer another part may use at the same time.
 */
#ifndef TRNEMU_EMU_PAR_H
#define TRNEMU_EMU_PAR_H

#include <stdbool.h>
#include <stddef.h>

/* Per-thread scratch: slots of PAR_SCRATCH_ELEMS floats each (one row of
 * the largest SBUF partition as fp32). Slots 0-3 are for any part's
 * temporary rows; PAR_SLOT_PE_STAT is the Tensor engine's own (a
 * thread's packed stationary operand, kept across the parts of one
 * matmul that the thread runs). */
#define PAR_SCRATCH_SLOTS 5
#define PAR_SLOT_PE_STAT 4
#define PAR_SCRATCH_ELEMS (256u * 1024u)

/* Most threads a par_for uses (caller included). */
#define PAR_MAX_THREADS 64u

/* Threads a par_for may use, the caller included: 0 = the online CPUs,
 * 1 = never split (parts run on the caller, in order). Larger values are
 * capped at PAR_MAX_THREADS. Helpers of the previous setting are stopped;
 * the new ones start on the next par_for. */
void par_configure(unsigned threads);

/* The current setting resolved (1 .. PAR_MAX_THREADS). */
unsigned par_threads(void);

/* Run fn(arg, part) once for every part in [0, n_parts), on the caller and
 * idle helpers; return when all have finished. The parts go to helpers
 * only when that pays on this host: when the time one part of fn takes
 * (learnt from earlier calls of the same fn; its first call runs inline
 * and is timed) spread over the free threads saves at least a few times
 * what a hand-off and join costs here (measured once, at first need).
 * Otherwise they run on the caller, in order. fn should do about the same
 * work per part from call to call (parts cut at a fixed grain). */
void par_for(size_t n_parts, void (*fn)(void *arg, size_t part), void *arg);

/* A team: up to n copies fn(arg, 0 .. n-1) that cooperate on one shared
 * pool of work (each takes work until none is left, and finishes correctly
 * even when the copies run one after another on the caller), as many as
 * there are free threads, handed to idle helpers without the split rule;
 * returns how many copies were offered (1: run on the caller alone). A
 * copy's own par_for calls may go to the helpers the team left idle (the
 * copies other than the caller's count as busy threads: par_busy_enter).
 * For the engines of one core (emu/core/sched_team.c). */
unsigned par_team(size_t n, void (*fn)(void *arg, size_t part), void *arg);

/* Could a par_for called now go to helpers at all (more than one thread
 * configured, not inside a part other than a team's, not every thread
 * busy)? For callers that
 * choose between a split-friendly and a sequential way of doing a job. */
bool par_may_split(void);

/* Tests and benchmarks of the pool itself: on, every par_for that could
 * split does, whatever the rule says. */
void par_force_split(bool on);

/* A thread that keeps a CPU busy on its own for a while (an execution of
 * a model) announces it. While as many such threads run as par_for may
 * use, every par_for runs its parts inline: each CPU already has work,
 * and a helper would only take a CPU from one of them. */
void par_busy_enter(void);
void par_busy_leave(void);

/* par_for calls so far that handed parts to helpers (not run inline; the
 * probe that measures a hand-off not counted),
 * process-wide: what benchmarks and tests count splits with. */
unsigned long long par_handoffs(void);

/* Stop and join every helper thread (a later par_for starts them again).
 * par_for calls under way still finish: the callers run the parts no
 * helper took. For runtime teardown. */
void par_shutdown(void);

/* Scratch slot `slot` (< PAR_SCRATCH_SLOTS) of the calling thread,
 * PAR_SCRATCH_ELEMS floats mapped once per thread and reused; NULL when
 * the host is out of memory. */
float *par_scratch(unsigned slot);

#endif
