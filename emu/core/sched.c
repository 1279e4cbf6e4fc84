/*
 * sched.c: the engine scheduler of trnemu's NeuronCores (core_run in
 * core.h).
 *
 * Engines are visited in one fixed order (core 0 PE, ACT, POOL, DVE, SP,
 * then core 1 ...). A visited engine runs instructions while their waits
 * hold, up to SCHED_SLICE instructions, then the next engine gets its turn.
 * An instruction's signals apply when it completes. When a whole round
 * moves no engine, yet some have instructions left, the program is stuck:
 * the report names each engine's pending instruction and the semaphores it
 * waits on. Nothing depends on threads or time, except the timeout.
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
 */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ISA_WANT_DISPATCH
#include "emu/core/core.h"
#include "emu/isa/isa_text.h"
#include "emu/core/core_coll.h"
#include "emu/core/cost.h"
#include "emu/core/par.h"
#include "emu/core/race.h"
#include "emu/log.h"

#define SCHED_SLICE 4096u  /* instructions an engine runs per turn at most */
#define SCHED_MAX_CORES 4  /* cores of one run */

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

static uint32_t *sched_cell(struct core *c, const struct isa_sync *s)
{
    return s->kind == ISA_SYNC_EVENT ? &c->event[s->id % ISA_NUM_EVENTS]
                                     : &c->sem[s->id % ISA_NUM_SEMS];
}

/* A semaphore or event value, read with acquire order: an engine on
 * another thread (engine teams, below) may signal it, and what the
 * signaller wrote before is then visible to the waiter. */
static uint32_t sched_load(struct core *c, const struct isa_sync *s)
{
    return __atomic_load_n(sched_cell(c, s), __ATOMIC_ACQUIRE);
}

/* Index of the first wait of insn that does not hold, or -1. */
static int sched_first_blocked(struct core *c, const struct isa_insn *insn)
{
    for (int i = 0; i < ISA_MAX_WAIT && insn->wait[i].kind != ISA_SYNC_NONE; i++)
        if (!core_cmp(sched_load(c, &insn->wait[i]), insn->wait[i].op, insn->wait[i].value))
            return i;
    return -1;
}

/* Apply signal s (atomically, release order: several engines of a team may
 * signal one semaphore at once). */
static void sched_signal(struct core *c, const struct isa_sync *s)
{
    uint32_t *cell = sched_cell(c, s);
    uint32_t old = __atomic_load_n(cell, __ATOMIC_RELAXED), v;
    do {
        v = s->op == ISA_SEMOP_set ? s->value
            : s->op == ISA_SEMOP_add ? old + s->value
            : s->op == ISA_SEMOP_sub ? old - s->value : old;
        if (s->kind == ISA_SYNC_EVENT)
            v = v != 0;
    } while (!__atomic_compare_exchange_n(cell, &old, v, false, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

static uint64_t sched_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t sched_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Append one formatted line to the report. */
static void sched_say(char *report, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sched_say(char *report, size_t cap, const char *fmt, ...)
{
    size_t len = strnlen(report, cap);
    if (cap == 0 || len + 1 >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(report + len, cap - len, fmt, ap);
    va_end(ap);
}

static const char *sched_var_name(void *user, uint32_t var_id)
{
    const struct core_var *v = core_find_var(user, var_id);
    return v != NULL ? v->name : NULL;
}

/* "core 0 act[12]: act.activation ..." */
static void sched_say_insn(const struct sched_eng *e, char *report, size_t cap)
{
    char text[768];
    struct isa_text_env env = {NULL, sched_var_name, (void *)e->prog};
    isa_text_print(&e->prog->code[e->eng][e->pc], &env, text, sizeof text);
    sched_say(report, cap, "  core %u %s[%zu]: %s\n", e->core_idx, isa_engine_name(e->eng),
              e->pc, text);
}

static void sched_report_stuck(const struct sched_eng *es, uint32_t n, char *report, size_t cap)
{
    sched_say(report, cap, "deadlock: every engine with work left waits on a semaphore or "
              "event that nothing will change\n");
    for (uint32_t i = 0; i < n; i++) {
        const struct sched_eng *e = &es[i];
        if (e->done)
            continue;
        sched_say_insn(e, report, cap);
        const struct isa_insn *insn = &e->prog->code[e->eng][e->pc];
        int w = sched_first_blocked(e->core, insn);
        if (w >= 0)
            sched_say(report, cap, "    waits for %s %u (now %u), compare op %u with %u\n",
                      insn->wait[w].kind == ISA_SYNC_EVENT ? "event" : "semaphore",
                      insn->wait[w].id, sched_load(e->core, &insn->wait[w]), insn->wait[w].op,
                      insn->wait[w].value);
    }
    for (uint32_t i = 0; i < n; i += ISA_ENG_COUNT) {
        sched_say(report, cap, "  core %u non-zero semaphores:", es[i].core_idx);
        for (int s = 0; s < ISA_NUM_SEMS; s++)
            if (es[i].core->sem[s] != 0)
                sched_say(report, cap, " s%d=%u", s, es[i].core->sem[s]);
        sched_say(report, cap, "\n");
    }
}

/* Complete instruction pc of e that ran: its device time, its signals. */
static void sched_complete(struct sched_eng *e, struct race_state *race, size_t pc)
{
    const struct isa_insn *insn = &e->prog->code[e->eng][pc];
    double t_end = e->cost != NULL ? cost_insn(e->cost, e->core_idx, e->eng, pc, insn) : 0;
    for (int i = 0; i < ISA_MAX_SIGNAL && insn->signal[i].kind != ISA_SYNC_NONE; i++) {
        sched_signal(e->core, &insn->signal[i]);
        if (e->cost != NULL)
            cost_signal(e->cost, e->core_idx, &insn->signal[i], t_end);
        if (race != NULL)
            race_on_signal(race, e->core_idx, e->eng, &insn->signal[i]);
    }
}

/* Instructions after pc that the semantics may run with it: the rest of
 * the turn (so the order of turns is kept), none when the race checker
 * watches each instruction. */
static size_t sched_fuse_max(const struct sched_eng *e, const struct race_state *race,
                             uint32_t turn_left)
{
    size_t rest = e->prog->n[e->eng] - e->pc - 1;
    size_t max = turn_left > 0 ? turn_left - 1 : 0;
    return race != NULL ? 0 : rest < max ? rest : max;
}

/* Run one instruction of e (and those the semantics fused with it: an
 * accumulation group, emu/engines/exec_pe.c); *ran: how many ran. */
static emu_status sched_step(struct sched_eng *e, struct race_state *race, uint32_t turn_left,
                             uint32_t *ran, char *report, size_t cap)
{
    const struct isa_insn *insn = &e->prog->code[e->eng][e->pc];
    *ran = 0;
    if (sched_first_blocked(e->core, insn) >= 0)
        return EMU_OK;
    struct isa_exec_ctx ctx;  /* set field by field: err[] is not cleared, only ended */
    ctx.core = e->core;
    ctx.prog = e->prog;
    ctx.engine = e->eng;
    ctx.insn = insn;
    ctx.pc = e->pc;
    ctx.next_pc = e->pc + 1;
    ctx.halted = false;
    ctx.blocked = false;
    ctx.fuse_max = sched_fuse_max(e, race, turn_left);
    ctx.fused = 0;
    ctx.err[0] = '\0';
    isa_exec_fn fn = isa_dispatch[insn->opcode];
    emu_status st = e->dry ? EMU_OK
                    : fn != NULL ? fn(&ctx, insn)
                                 : core_fail(&ctx, EMU_INVALID, "opcode 0x%02x has no semantics",
                                             insn->opcode);
    ctx.halted = e->dry ? insn->opcode == ISA_OP_halt : ctx.halted;
    if (st == EMU_OK && ctx.blocked)
        return EMU_OK;
    if (st == EMU_OK && race != NULL) {
        race_on_wait(race, e->core_idx, e->eng, insn);
        st = race_observe(race, e->core_idx, e->eng, e->prog, e->pc, report, cap);
    }
    if (st != EMU_OK) {
        if (ctx.err[0] != '\0') {
            sched_say(report, cap, "execution stopped: %s\n", ctx.err);
            sched_say_insn(e, report, cap);
        }
        return st;
    }
    assert(ctx.fused <= ctx.fuse_max);
    for (size_t i = 0; i <= ctx.fused; i++)
        sched_complete(e, race, e->pc + i);
    *ran = (uint32_t)ctx.fused + 1;
    e->pc = ctx.fused > 0 ? e->pc + ctx.fused + 1 : ctx.next_pc;
    e->done = ctx.halted || e->pc >= e->prog->n[e->eng];
    return EMU_OK;
}

/* Give e its turn: up to SCHED_SLICE instructions. */
static emu_status sched_turn(struct sched_eng *e, struct race_state *race, uint64_t *steps,
                             bool *progress, char *report, size_t cap)
{
    for (uint32_t k = 0; k < SCHED_SLICE && !e->done;) {
        uint32_t ran;
        emu_status st = sched_step(e, race, SCHED_SLICE - k, &ran, report, cap);
        if (st != EMU_OK)
            return st;
        if (ran == 0)
            break;
        *progress = true;
        *steps += ran;
        k += ran;
    }
    return EMU_OK;
}

/* The timeout report: every engine's pending instruction. */
static void sched_say_timeout(const struct sched_eng *es, uint32_t n, uint64_t limit_ms,
                              uint64_t steps, char *report, size_t cap)
{
    sched_say(report, cap, "timeout: still running after %" PRIu64 " ms (%" PRIu64
              " instructions)\n", limit_ms, steps);
    for (uint32_t i = 0; i < n; i++)
        if (!es[i].done)
            sched_say_insn(&es[i], report, cap);
}

/* Every engine of every core interleaved on the calling thread. */
static emu_status sched_run_one(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts,
                                struct race_state *race, char *report, size_t report_cap)
{
    uint64_t start = sched_now_ms(), steps = 0;
    emu_status st = EMU_OK;
    for (;;) {
        bool progress = false, all_done = true;
        for (uint32_t i = 0; i < n && st == EMU_OK; i++) {
            st = sched_turn(&es[i], race, &steps, &progress, report, report_cap);
            all_done = all_done && es[i].done;
        }
        if (st != EMU_OK || all_done)
            break;
        if (!progress) {
            sched_report_stuck(es, n, report, report_cap);
            return EMU_EXEC_ERR;
        }
        if (opts->timeout_ms && sched_now_ms() - start > opts->timeout_ms) {
            sched_say_timeout(es, n, opts->timeout_ms, steps, report, report_cap);
            return EMU_TIMEOUT;
        }
    }
    return st;
}

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
    pthread_mutex_lock(&r->lnc->lock);
    r->done[core] = true;
    if (sched_split_all_wait(r))
        sched_split_stop(r, core, EMU_EXEC_ERR, true);
    pthread_mutex_unlock(&r->lnc->lock);
}

static void sched_split_fail(struct sched_split *r, uint32_t core, emu_status st)
{
    pthread_mutex_lock(&r->lnc->lock);
    sched_split_stop(r, core, st, false);
    pthread_mutex_unlock(&r->lnc->lock);
}

/* A round of `core` that began at epoch e0 moved nothing: sleep until
 * another core changes something. false when the run is over. */
static bool sched_split_sleep(struct sched_split *r, uint32_t core, uint64_t e0)
{
    struct core_lnc *l = r->lnc;
    pthread_mutex_lock(&l->lock);
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
    pthread_mutex_unlock(&l->lock);
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
    pthread_mutex_lock(&r->lnc->lock);
    while (!r->go && !r->abandon)
        pthread_cond_wait(&r->lnc->changed, &r->lnc->lock);
    bool run = r->go;
    pthread_mutex_unlock(&r->lnc->lock);
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
    pthread_mutex_lock(&r->lnc->lock);
    r->go = started == r->ncores;
    r->abandon = !r->go;
    pthread_cond_broadcast(&r->lnc->changed);
    pthread_mutex_unlock(&r->lnc->lock);
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

/* ---- engine teams: one core's engines on several host threads ------------------ */

static atomic_int sched_engines_mode; /* core_set_engine_threads */

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
 * the first run interleaved, the second as a team, then the faster way,
 * the other tried again now and then. */
static bool sched_team_wanted(struct sched_prog_stat *ps)
{
    if (atomic_load_explicit(&sched_engines_mode, memory_order_relaxed) == CORE_ENGINES_TEAM)
        return true;
    if (ps == NULL)
        return false;
    uint64_t one = atomic_load_explicit(&ps->one_ns, memory_order_relaxed);
    uint64_t team = atomic_load_explicit(&ps->team_ns, memory_order_relaxed);
    uint64_t run = atomic_fetch_add_explicit(&ps->runs, 1, memory_order_relaxed);
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
static int sched_sole_core(const struct core_program *const *progs, uint32_t ncores)
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
static emu_status sched_run_core(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts,
                                 char *report, size_t report_cap, bool *ran)
{
    *ran = false;
    uint32_t busy = sched_team_engines(es[0].prog, opts);
    if (busy == 0)
        return EMU_OK;
    struct sched_prog_stat *ps = sched_prog_stat(es[0].prog);
    bool team = sched_team_wanted(ps);
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
    if (ps != NULL && st == EMU_OK) {
        if (atomic_load_explicit(team ? &ps->team_ns : &ps->one_ns, memory_order_relaxed) == 0)
            LOG_DEBUG("EMU", "%s: first run %s: %llu us", es[0].prog->name != NULL ?
                      es[0].prog->name : "program", team ? "with its engines as a team of "
                      "threads" : "interleaved on one thread", (unsigned long long)(took / 1000));
        sched_learn(team ? &ps->team_ns : &ps->one_ns, took);
    }
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
        race_destroy(race);
    }
    for (uint32_t c = 0; c < ncores; c++)
        assert(core_sane(cores[c]));
    return st;
}
