/*
 * sched_team.c: one core's engines on a team of host threads
 * (docs/execution.md, "The engines of one core on several threads").
 *
 * The team's threads (par_team) take turns on the engines: an engine is
 * held by one thread at a time, so its stream runs in order and a wait
 * blocks only it. A program runs as a team only when no instruction of it
 * signals, jumps or shares state between engines by itself; then the
 * device-time schedule is filled afterwards by replaying the streams in
 * the one-thread order (waits and signals only), so the estimate is the
 * interleaved run's. Whether a program runs as a team or interleaved is
 * chosen from the wall time of its earlier runs each way.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/core.h"
#include "emu/core/cost.h"
#include "emu/core/par.h"
#include "emu/core/sched_int.h"
#include "emu/log.h"

static atomic_int sched_engines_mode; /* core_set_engine_threads */

static atomic_ullong sched_team_count; /* core_team_runs */

unsigned long long core_team_runs(void)
{
    return atomic_load_explicit(&sched_team_count, memory_order_relaxed);
}

void core_set_engine_threads(int mode)
{
    atomic_store_explicit(&sched_engines_mode, mode, memory_order_relaxed);
}

/* Opcodes whose semantics touch the core's semaphores, registers' control
 * flow, shared random state or other cores: a program holding one runs
 * interleaved (the cost replay below must know every signal and every
 * next instruction from the stream alone). */
static bool sched_team_op_ok(unsigned op)
{
    switch (op) {
    case ISA_OP_sem_wait: case ISA_OP_sem_signal: case ISA_OP_jump: case ISA_OP_branch:
    case ISA_OP_dma_trigger: case ISA_OP_sendrecv: case ISA_OP_core_barrier:
    case ISA_OP_all_reduce: case ISA_OP_all_gather: case ISA_OP_reduce_scatter:
    case ISA_OP_all_to_all: case ISA_OP_permute: case ISA_OP_all_to_all_v:
    case ISA_OP_all_gather_v: case ISA_OP_rng: case ISA_OP_rand2: case ISA_OP_dropout:
    case ISA_OP_rand_set_state: case ISA_OP_rand_get_state: case ISA_OP_set_rng_seed:
        return false;
    default:
        return true;
    }
}

/* Engines of the one core with work, when its program may run as a team
 * at all (0 else). */
static uint32_t sched_team_engines(const struct core_program *p, const struct core_run_opts *opts)
{
    if (opts->racecheck ||
        atomic_load_explicit(&sched_engines_mode, memory_order_relaxed) ==
            CORE_ENGINES_INTERLEAVED ||
        (opts->cost != NULL && opts->cost->spans != NULL) || !par_may_split())
        return 0;
    uint32_t busy = 0;
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        busy += p->n[e] > 0;
        for (size_t i = 0; i < p->n[e]; i++)
            if (!sched_team_op_ok(p->code[e][i].opcode))
                return 0;
    }
    return busy >= 2 ? busy : 0;
}

/* What the team mode knows of one program: the wall time of its runs each
 * way, so that it runs the faster way (the other tried now and then). */
struct sched_prog_stat {
    atomic_uintptr_t prog;           /* the program, 0: free entry */
    atomic_uint_fast64_t team_ns;    /* runs as a team, 0: none yet */
    atomic_uint_fast64_t one_ns;     /* runs interleaved on one thread, 0: none yet */
    atomic_uint_fast64_t runs;       /* runs so far */
};

#define SCHED_PROGS 64       /* programs whose times are kept */
#define SCHED_EXPLORE 32     /* runs between tries of the way that lost, times how many
                                times slower it was (a try costs at most 1/32) */
#define SCHED_EXPLORE_MAX 1024 /* the factor's cap */
static struct sched_prog_stat sched_progs[SCHED_PROGS];

static struct sched_prog_stat *sched_prog_stat(const struct core_program *p)
{
    uintptr_t key = (uintptr_t)p;
    for (unsigned i = 0; i < SCHED_PROGS; i++) {
        uintptr_t have = atomic_load_explicit(&sched_progs[i].prog, memory_order_acquire);
        if (have == 0 && atomic_compare_exchange_strong(&sched_progs[i].prog, &have, key))
            return &sched_progs[i];
        if (have == key)
            return &sched_progs[i];
    }
    return NULL;
}

/* Fold a run's wall time into an estimate: a faster run is taken at once
 * (a first run pays cold caches and page faults), a slower one a quarter. */
static void sched_learn(atomic_uint_fast64_t *est, uint64_t ns)
{
    uint64_t old = atomic_load_explicit(est, memory_order_relaxed), v = ns > 0 ? ns : 1;
    atomic_store_explicit(est, old == 0 || v < old ? v : (3 * old + v) / 4,
                          memory_order_relaxed);
}

/* Run this program as a team now? Forced (core_set_engine_threads), else:
 * the first two runs interleaved (the first not timed: *learn false), the
 * third as a team, then the faster way, the other tried again now and
 * then. */
static bool sched_team_wanted(struct sched_prog_stat *ps, bool *learn)
{
    *learn = true;
    if (atomic_load_explicit(&sched_engines_mode, memory_order_relaxed) == CORE_ENGINES_TEAM)
        return true;
    if (ps == NULL)
        return false;
    uint64_t one = atomic_load_explicit(&ps->one_ns, memory_order_relaxed);
    uint64_t team = atomic_load_explicit(&ps->team_ns, memory_order_relaxed);
    uint64_t run = atomic_fetch_add_explicit(&ps->runs, 1, memory_order_relaxed);
    *learn = run > 0; /* the first run pays cold caches and page faults: not a fair time */
    if (one == 0 || team == 0)
        return one != 0;
    bool team_wins = team < one;
    uint64_t lose = team_wins ? one : team, win = team_wins ? team : one;
    uint64_t every = SCHED_EXPLORE * (lose / win < SCHED_EXPLORE_MAX ? lose / win
                                                                      : SCHED_EXPLORE_MAX);
    return run % every == every - 1 ? !team_wins : team_wins;
}

/* One core's engines taken in turns by a team of threads. Each engine is
 * held by one thread at a time (its stream stays in order, a wait blocks
 * only it); a thread runs a turn of every engine it can take, then the
 * next round. */
struct sched_team {
    struct sched_eng *es;              /* the core's engines */
    uint32_t n;                        /* how many */
    const struct core_run_opts *opts;  /* the run's options */
    uint64_t start_ms;                 /* when it began (timeouts) */
    atomic_flag held[ISA_ENG_COUNT];   /* engine taken by a thread */
    atomic_uint done;                  /* engines finished */
    atomic_uint_fast64_t epoch;        /* turns that moved, bumped before the engine is let go */
    atomic_uint_fast64_t steps;        /* instructions run */
    atomic_bool stop;                  /* every thread leaves at its next round */
    pthread_mutex_t mu;                /* guards st, stuck and report */
    emu_status st;                     /* why it stopped */
    bool stuck;                        /* stopped as a deadlock */
    char *report;                      /* the run's report */
    size_t report_cap;                 /* its bytes */
    char *reports;                     /* one report per thread, report_cap each */
};

/* Stop the team with st (the first cause wins; its report is kept). */
static void sched_team_stop(struct sched_team *t, emu_status st, bool stuck, const char *why)
{
    pthread_mutex_lock(&t->mu);
    if (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        t->st = st;
        t->stuck = stuck;
        if (why != NULL && t->report_cap > 0)
            snprintf(t->report, t->report_cap, "%s", why);
        atomic_store_explicit(&t->stop, true, memory_order_release);
    }
    pthread_mutex_unlock(&t->mu);
}

/* A turn of engine i if this thread can take it; *seen false when another
 * thread holds it, *moved when it ran an instruction, *finished when the
 * engine has no instruction left. */
static emu_status sched_team_turn(struct sched_team *t, uint32_t i, char *report, bool *seen,
                                  bool *moved, bool *finished)
{
    *seen = *moved = *finished = false;
    if (atomic_flag_test_and_set(&t->held[i]))
        return EMU_OK;
    *seen = true;
    struct sched_eng *e = &t->es[i];
    emu_status st = EMU_OK;
    if (!e->done) {
        uint64_t steps = 0;
        st = sched_turn(e, NULL, &steps, moved, report, t->report_cap);
        if (*moved) {
            atomic_fetch_add(&t->steps, steps);
            if (e->done)
                atomic_fetch_add(&t->done, 1);
            atomic_fetch_add(&t->epoch, 1);
        }
    }
    *finished = e->done;
    atomic_flag_clear(&t->held[i]);
    return st;
}

/* One round of a team thread over every engine, from engine `first`:
 * false when the thread should leave. */
static bool sched_team_round(struct sched_team *t, uint32_t first, char *report, bool *moved)
{
    uint64_t e0 = atomic_load(&t->epoch);
    bool all_seen = true;
    uint32_t finished = 0;
    *moved = false;
    for (uint32_t k = 0; k < t->n; k++) {
        bool seen, m, fin;
        emu_status st = sched_team_turn(t, (first + k) % t->n, report, &seen, &m, &fin);
        if (st != EMU_OK) {
            sched_team_stop(t, st, false, report);
            return false;
        }
        all_seen = all_seen && seen;
        *moved = *moved || m;
        finished += fin;
    }
    if (finished == t->n || atomic_load(&t->done) == t->n)
        return false;
    if (!*moved && all_seen && atomic_load(&t->epoch) == e0) {
        sched_team_stop(t, EMU_EXEC_ERR, true, NULL); /* nothing moved, nothing can */
        return false;
    }
    return true;
}

/* A team thread: rounds until every engine is done or the team stops. */
static void sched_team_main(void *arg, size_t part)
{
    struct sched_team *t = arg;
    char *report = t->reports + part * t->report_cap;
    if (part > 0)
        par_busy_enter();
    for (unsigned idle = 0; !atomic_load_explicit(&t->stop, memory_order_acquire);) {
        bool moved;
        if (!sched_team_round(t, (uint32_t)part, report, &moved))
            break;
        if (t->opts->timeout_ms && sched_now_ms() - t->start_ms > t->opts->timeout_ms) {
            sched_team_stop(t, EMU_TIMEOUT, false, NULL);
            break;
        }
        idle = moved ? 0 : idle + 1;
        if (idle > 64)
            sched_yield();  /* waiting for a thread that has no CPU */
    }
    if (part > 0)
        par_busy_leave();
}

/* The device-time schedule of a team run: every engine's stream replayed
 * in the one-thread order, waits and signals only (the team's programs
 * hold no instruction that signals or jumps by itself), so the estimate
 * is the one an interleaved run gives. Semaphores end as they were. */
static void sched_cost_replay(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts)
{
    struct core *c = es[0].core;
    uint32_t sem[ISA_NUM_SEMS], event[ISA_NUM_EVENTS];
    memcpy(sem, c->sem, sizeof sem);
    memcpy(event, c->event, sizeof event);
    memset(c->sem, 0, sizeof c->sem);
    memset(c->event, 0, sizeof c->event);
    for (uint32_t i = 0; i < n; i++) {
        es[i].pc = 0;
        es[i].done = es[i].prog->n[es[i].eng] == 0;
        es[i].dry = true;
        es[i].cost = opts->cost;
    }
    struct core_run_opts dry = *opts;
    dry.timeout_ms = 0;
    char none[1];
    (void)sched_run_one(es, n, &dry, NULL, none, 0);
    memcpy(c->sem, sem, sizeof sem);
    memcpy(c->event, event, sizeof event);
}

/* Run one core's engines as a team; *ran false when it could not start. */
static emu_status sched_run_team(struct sched_eng *es, uint32_t n, uint32_t busy,
                                 const struct core_run_opts *opts, char *report,
                                 size_t report_cap, bool *ran)
{
    *ran = false;
    struct sched_team *t = calloc(1, sizeof *t);
    char *reports = calloc(busy, report_cap ? report_cap : 1);
    if (t == NULL || reports == NULL) {
        free(t);
        free(reports);
        return EMU_OK;
    }
    *t = (struct sched_team){.es = es, .n = n, .opts = opts, .start_ms = sched_now_ms(),
                             .report = report, .report_cap = report_cap, .reports = reports,
                             .st = EMU_OK};
    for (uint32_t i = 0; i < ISA_ENG_COUNT; i++)
        atomic_flag_clear(&t->held[i]);
    pthread_mutex_init(&t->mu, NULL);
    for (uint32_t i = 0; i < n; i++)
        es[i].cost = NULL;
    *ran = true;
    atomic_fetch_add_explicit(&sched_team_count, 1, memory_order_relaxed);
    par_team(busy, sched_team_main, t);
    emu_status st = t->st;
    if (t->stuck) {
        if (report_cap > 0)
            report[0] = '\0';
        sched_report_stuck(es, n, report, report_cap);
    } else if (st == EMU_TIMEOUT) {
        sched_say_timeout(es, n, opts->timeout_ms, atomic_load(&t->steps), report, report_cap);
    } else if (st == EMU_OK && opts->cost != NULL) {
        sched_cost_replay(es, n, opts);
    }
    pthread_mutex_destroy(&t->mu);
    free(reports);
    free(t);
    return st;
}

/* The one core of the run that has work (the others have none), or -1. */
int sched_sole_core(const struct core_program *const *progs, uint32_t ncores)
{
    int sole = -1;
    for (uint32_t c = 0; c < ncores; c++)
        for (int e = 0; e < ISA_ENG_COUNT; e++)
            if (progs[c]->n[e] > 0) {
                if (sole >= 0 && sole != (int)c)
                    return -1;
                sole = (int)c;
            }
    return sole;
}

/* One core's run: as a team when the program and the host allow it and
 * it pays (or the options force it), else interleaved; the wall time of
 * either way is learnt for the program. */
emu_status sched_run_core(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts,
                          char *report, size_t report_cap, bool *ran)
{
    *ran = false;
    uint32_t busy = sched_team_engines(es[0].prog, opts);
    if (busy == 0)
        return EMU_OK;
    struct sched_prog_stat *ps = sched_prog_stat(es[0].prog);
    bool learn;
    bool team = sched_team_wanted(ps, &learn);
    uint64_t t0 = sched_now_ns();
    emu_status st = EMU_OK;
    if (team)
        st = sched_run_team(es, n, busy, opts, report, report_cap, ran);
    if (!*ran) {
        st = sched_run_one(es, n, opts, NULL, report, report_cap);
        *ran = true;
        team = false;
    }
    uint64_t took = sched_now_ns() - t0;
    if (ps != NULL && st == EMU_OK && learn) {
        if (atomic_load_explicit(team ? &ps->team_ns : &ps->one_ns, memory_order_relaxed) == 0)
            LOG_DEBUG("EMU", "%s: first run %s: %llu us", es[0].prog->name != NULL ?
                      es[0].prog->name : "program", team ? "with its engines as a team of "
                      "threads" : "interleaved on one thread", (unsigned long long)(took / 1000));
        sched_learn(team ? &ps->team_ns : &ps->one_ns, took);
    }
    return st;
}
