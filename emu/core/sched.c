/*
 * sched.c: the engine scheduler of trnemu's NeuronCores (core_run in
 * core.h).
 *
 * Engines are visited in one fixed order (core 0 PE, ACT, POOL, DVE, SP,
 * then core 1 ...). A visited engine runs instructions while their waits
 * hold, up to SCHED_SLICE instructions, then the next engine gets its turn
 * (sched_step.c). An instruction's signals apply when it completes. When a
 * whole round moves no engine, yet some have instructions left, the
 * program is stuck: the report names each engine's pending instruction and
 * the semaphores it waits on. Nothing depends on threads or time, except
 * the timeout.
 *
 * Split runs: when the runner gives host threads (core_run_opts.threads),
 * each core of a multi-core run visits its own engines in the same order
 * on its own thread. A core's semaphores and events are its own, so the
 * cores meet only at core_barrier and sendrecv (core_lnc, under its lock).
 * A core whose round moves nothing sleeps on the core_lnc until its epoch
 * moves; the program is stuck when every core is finished or asleep with
 * no change since its last round began, which is the one-thread test
 * applied core by core. A failure, a timeout or a deadlock stops every
 * core at its next round; the report is written once all have stopped,
 * from the same engine records as on one thread.
 *
 * Engine teams: a run whose one core with work may run its engines on
 * several threads goes to sched_team.c.
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/core.h"
#include "emu/core/core_coll.h"
#include "emu/core/cost.h"
#include "emu/core/par.h"
#include "emu/core/race.h"
#include "emu/core/sched_int.h"

#define SCHED_MAX_CORES 4  /* cores of one run */

/* ---- split runs: one host thread per core ------------------------------------- */

struct sched_split;

/* One core of a split run and the thread it runs on. */
struct sched_part {
    struct sched_split *run;   /* the run it belongs to */
    uint32_t core;             /* its core index */
    uint64_t steps;            /* instructions it ran */
    struct cost_run cost;      /* its own device-time schedule (cores after the first) */
    char *report;              /* where its failure is described */
    size_t report_cap;         /* bytes at report */
};

/* A split run: guarded by lnc->lock except where said. */
struct sched_split {
    struct sched_eng *es;              /* every engine, core by core (each core's its own) */
    uint32_t ncores;                   /* cores in the run */
    const struct core_run_opts *opts;  /* the run's options */
    uint64_t start_ms;                 /* when it began (timeouts) */
    struct core_lnc *lnc;              /* the cores' meeting point: lock, wake-ups, epoch */
    struct sched_part *parts;          /* one per core */
    bool go;                           /* every thread started: run */
    bool abandon;                      /* a thread could not start: run nothing */
    bool done[SCHED_MAX_CORES];        /* core finished every engine */
    bool asleep[SCHED_MAX_CORES];      /* core sleeps with nothing runnable */
    uint64_t asleep_at[SCHED_MAX_CORES]; /* the epoch its last round began at */
    atomic_bool stop;                  /* every core leaves at its next round (set under lock) */
    emu_status st;                     /* why it stopped */
    uint32_t failed;                   /* the core that failed first */
    bool stuck;                        /* stopped as a deadlock */
};

/* Stop every core with st (the first cause wins). Lock held. */
static void sched_split_stop(struct sched_split *r, uint32_t core, emu_status st, bool stuck)
{
    assert(core_lnc_held(r->lnc));
    if (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        r->st = st;
        r->failed = core;
        r->stuck = stuck;
        atomic_store_explicit(&r->stop, true, memory_order_release);
    }
    pthread_cond_broadcast(&r->lnc->changed);
}

/* Is every core finished or asleep with nothing changed since? Lock held. */
static bool sched_split_all_wait(const struct sched_split *r)
{
    assert(core_lnc_held(r->lnc));
    uint64_t now = atomic_load_explicit(&r->lnc->epoch, memory_order_relaxed);
    bool someone_waits = false;
    for (uint32_t c = 0; c < r->ncores; c++) {
        if (r->done[c])
            continue;
        if (!r->asleep[c] || r->asleep_at[c] != now)
            return false;
        someone_waits = true;
    }
    return someone_waits;
}

/* Core `core` finished every engine. */
static void sched_split_done(struct sched_split *r, uint32_t core)
{
    core_lnc_lock(r->lnc);
    r->done[core] = true;
    if (sched_split_all_wait(r))
        sched_split_stop(r, core, EMU_EXEC_ERR, true);
    core_lnc_unlock(r->lnc);
}

static void sched_split_fail(struct sched_split *r, uint32_t core, emu_status st)
{
    core_lnc_lock(r->lnc);
    sched_split_stop(r, core, st, false);
    core_lnc_unlock(r->lnc);
}

/* A round of `core` that began at epoch e0 moved nothing: sleep until
 * another core changes something. false when the run is over. */
static bool sched_split_sleep(struct sched_split *r, uint32_t core, uint64_t e0)
{
    struct core_lnc *l = r->lnc;
    core_lnc_lock(l);
    if (atomic_load_explicit(&l->epoch, memory_order_relaxed) == e0 &&
        !atomic_load_explicit(&r->stop, memory_order_relaxed)) {
        r->asleep[core] = true;
        r->asleep_at[core] = e0;
        if (sched_split_all_wait(r))
            sched_split_stop(r, core, EMU_EXEC_ERR, true);
        while (atomic_load_explicit(&l->epoch, memory_order_relaxed) == e0 &&
               !atomic_load_explicit(&r->stop, memory_order_relaxed))
            pthread_cond_wait(&l->changed, &l->lock);
        r->asleep[core] = false;
    }
    bool go_on = !atomic_load_explicit(&r->stop, memory_order_relaxed);
    core_lnc_unlock(l);
    return go_on;
}

/* The rounds of one core on its thread, until it finishes or the run stops. */
static void sched_split_rounds(struct sched_part *p)
{
    struct sched_split *r = p->run;
    struct sched_eng *es = &r->es[p->core * ISA_ENG_COUNT];
    for (;;) {
        if (atomic_load_explicit(&r->stop, memory_order_acquire))
            return;
        uint64_t e0 = atomic_load_explicit(&r->lnc->epoch, memory_order_acquire);
        bool progress = false, all_done = true;
        emu_status st = EMU_OK;
        for (uint32_t i = 0; i < ISA_ENG_COUNT && st == EMU_OK; i++) {
            st = sched_turn(&es[i], NULL, &p->steps, &progress, p->report, p->report_cap);
            all_done = all_done && es[i].done;
        }
        if (st != EMU_OK) {
            sched_split_fail(r, p->core, st);
            return;
        }
        if (all_done) {
            sched_split_done(r, p->core);
            return;
        }
        if (!progress && !sched_split_sleep(r, p->core, e0))
            return;
        if (r->opts->timeout_ms && sched_now_ms() - r->start_ms > r->opts->timeout_ms) {
            sched_split_fail(r, p->core, EMU_TIMEOUT);
            return;
        }
    }
}

/* One core on its thread. Each core after the first is one more thread
 * keeping a CPU busy (par_busy_enter; the first runs on the thread of the
 * run, which its caller counts): with no more host threads than busy
 * ones, no instruction is split further, since a core waiting for a
 * helper that runs a part of another core's instruction would only lose
 * time. */
static void sched_split_core(struct sched_part *p)
{
    bool extra = p != &p->run->parts[0];
    if (extra)
        par_busy_enter();
    sched_split_rounds(p);
    if (extra)
        par_busy_leave();
}

/* A helper thread's body: wait for the go, then run its core. */
static void sched_split_main(void *arg)
{
    struct sched_part *p = arg;
    struct sched_split *r = p->run;
    core_lnc_lock(r->lnc);
    while (!r->go && !r->abandon)
        pthread_cond_wait(&r->lnc->changed, &r->lnc->lock);
    bool run = r->go;
    core_lnc_unlock(r->lnc);
    if (run)
        sched_split_core(p);
}

/* Start a thread for every core after the first; false (none left
 * running) when one cannot be started. */
static bool sched_split_start(struct sched_split *r)
{
    const struct core_run_threads *t = r->opts->threads;
    uint32_t started = 1;
    while (started < r->ncores &&
           t->start(t->user, started, sched_split_main, &r->parts[started]))
        started++;
    core_lnc_lock(r->lnc);
    r->go = started == r->ncores;
    r->abandon = !r->go;
    pthread_cond_broadcast(&r->lnc->changed);
    core_lnc_unlock(r->lnc);
    if (!r->go)
        for (uint32_t c = 1; c < started; c++)
            t->join(t->user, c);
    return r->go;
}

/* After every thread has stopped: the status, the report, the device times. */
static emu_status sched_split_finish(struct sched_split *r, uint32_t n, char *report,
                                     size_t report_cap)
{
    uint64_t steps = 0;
    for (uint32_t c = 0; c < r->ncores; c++)
        steps += r->parts[c].steps;
    if (r->opts->cost != NULL)
        for (uint32_t c = 1; c < r->ncores; c++)
            cost_merge_core(r->opts->cost, &r->parts[c].cost, c);
    if (!atomic_load_explicit(&r->stop, memory_order_relaxed))
        return EMU_OK;
    if ((r->stuck || r->st == EMU_TIMEOUT) && report_cap > 0)
        report[0] = '\0';  /* a core that failed after the stop may have written */
    if (r->stuck)
        sched_report_stuck(r->es, n, report, report_cap);
    else if (r->st == EMU_TIMEOUT)
        sched_say_timeout(r->es, n, r->opts->timeout_ms, steps, report, report_cap);
    else if (r->failed != 0 && report_cap > 0)
        snprintf(report, report_cap, "%s", r->parts[r->failed].report);
    return r->st;
}

/* Cores whose programs hold a collective between ranks: those run in one
 * order on one thread (the ranks must see them in one order). */
static uint32_t sched_cross_rank_cores(const struct core_program *const *progs, uint32_t ncores)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < ncores; c++) {
        bool has = false;
        for (int e = 0; e < ISA_ENG_COUNT && !has; e++)
            for (size_t i = 0; i < progs[c]->n[e] && !has; i++) {
                unsigned op = progs[c]->code[e][i].opcode;
                has = op == ISA_OP_all_reduce || op == ISA_OP_all_gather ||
                      op == ISA_OP_reduce_scatter || op == ISA_OP_all_to_all ||
                      op == ISA_OP_permute || op == ISA_OP_all_to_all_v ||
                      op == ISA_OP_all_gather_v;
            }
        n += has;
    }
    return n;
}

/* The cores' shared meeting point when the run may be split, else NULL. */
static struct core_lnc *sched_split_lnc(const struct core_program *const *progs, uint32_t ncores,
                                        const struct core_run_opts *opts)
{
    if (opts->threads == NULL || ncores < 2 || opts->racecheck ||
        (opts->cost != NULL && opts->cost->spans != NULL))
        return NULL;
    struct core_lnc *l = progs[0]->coll != NULL ? progs[0]->coll->lnc : NULL;
    for (uint32_t c = 0; c < ncores; c++) {
        bool work = false;
        for (int e = 0; e < ISA_ENG_COUNT; e++)
            work = work || progs[c]->n[e] > 0;
        if (!work || progs[c]->coll == NULL || progs[c]->coll->lnc != l ||
            progs[c]->coll->core_index != c)
            return NULL;
    }
    if (l == NULL || l->ncores != ncores || sched_cross_rank_cores(progs, ncores) > 1)
        return NULL;
    return l;
}

/* Run each core on its own thread; *ran false when the threads could not
 * be had (nothing ran). */
static emu_status sched_run_split(struct sched_eng *es, uint32_t n, uint32_t ncores,
                                  const struct core_run_opts *opts, struct core_lnc *lnc,
                                  char *report, size_t report_cap, bool *ran)
{
    *ran = false;
    struct sched_split *r = calloc(1, sizeof *r);
    struct sched_part *parts = calloc(ncores, sizeof *parts);
    char *reports = calloc(ncores, report_cap ? report_cap : 1);
    if (r == NULL || parts == NULL || reports == NULL) {
        free(r);
        free(parts);
        free(reports);
        return EMU_OK;  /* the one-thread schedule needs no memory */
    }
    *r = (struct sched_split){.es = es, .ncores = ncores, .opts = opts,
                              .start_ms = sched_now_ms(), .lnc = lnc, .parts = parts};
    atomic_init(&r->stop, false);
    for (uint32_t c = 0; c < ncores; c++) {
        parts[c].run = r;
        parts[c].core = c;
        parts[c].report = c == 0 ? report : reports + (size_t)c * report_cap;
        parts[c].report_cap = report_cap;
        if (c > 0 && opts->cost != NULL) {
            parts[c].cost = *opts->cost;
            for (int e = 0; e < ISA_ENG_COUNT; e++)
                es[c * ISA_ENG_COUNT + e].cost = &parts[c].cost;
        }
    }
    emu_status st = EMU_OK;
    if (sched_split_start(r)) {
        *ran = true;
        sched_split_core(&parts[0]);
        for (uint32_t c = 1; c < ncores; c++)
            opts->threads->join(opts->threads->user, c);
        st = sched_split_finish(r, n, report, report_cap);
    }
    for (uint32_t i = 0; i < n; i++)
        es[i].cost = opts->cost;
    free(reports);
    free(parts);
    free(r);
    return st;
}

emu_status core_run(struct core *const *cores, const struct core_program *const *progs,
                    uint32_t ncores, const struct core_run_opts *opts, char *report,
                    size_t report_cap)
{
    struct sched_eng es[ISA_ENG_COUNT * SCHED_MAX_CORES];
    uint32_t n = 0;
    if (report_cap > 0)
        report[0] = '\0';
    if (ncores > SCHED_MAX_CORES)
        return EMU_INVALID;
    for (uint32_t c = 0; c < ncores; c++) {
        core_reset(cores[c], opts->seed, opts->stochastic);
        assert(core_sane(cores[c]));
        for (int e = 0; e < ISA_ENG_COUNT; e++)
            es[n++] = (struct sched_eng){cores[c], progs[c], c, (enum isa_engine)e, 0,
                                         progs[c]->n[e] == 0, opts->cost, false};
    }
    emu_status st = EMU_OK;
    bool ran = false;
    struct core_lnc *lnc = sched_split_lnc(progs, ncores, opts);
    if (lnc != NULL)
        st = sched_run_split(es, n, ncores, opts, lnc, report, report_cap, &ran);
    else if (sched_sole_core(progs, ncores) >= 0)
        st = sched_run_core(es + (size_t)sched_sole_core(progs, ncores) * ISA_ENG_COUNT,
                            ISA_ENG_COUNT, opts, report, report_cap, &ran);
    if (!ran) {
        struct race_state *race = NULL;
        if (opts->racecheck && race_create(ncores, &race) != EMU_OK)
            return EMU_RESOURCE;
        st = sched_run_one(es, n, opts, race, report, report_cap);
        if (st == EMU_OK && race != NULL)
            st = race_finish(race, report, report_cap);
        race_destroy(race);
    }
    for (uint32_t c = 0; c < ncores; c++)
        assert(core_sane(cores[c]));
    return st;
}
