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
};

static uint32_t *sched_cell(struct core *c, const struct isa_sync *s)
{
    return s->kind == ISA_SYNC_EVENT ? &c->event[s->id % ISA_NUM_EVENTS]
                                     : &c->sem[s->id % ISA_NUM_SEMS];
}

/* Index of the first wait of insn that does not hold, or -1. */
static int sched_first_blocked(struct core *c, const struct isa_insn *insn)
{
    for (int i = 0; i < ISA_MAX_WAIT && insn->wait[i].kind != ISA_SYNC_NONE; i++)
        if (!core_cmp(*sched_cell(c, &insn->wait[i]), insn->wait[i].op, insn->wait[i].value))
            return i;
    return -1;
}

static void sched_signal(struct core *c, const struct isa_sync *s)
{
    uint32_t *cell = sched_cell(c, s);
    switch (s->op) {
    case ISA_SEMOP_set: *cell = s->value; break;
    case ISA_SEMOP_add: *cell += s->value; break;
    case ISA_SEMOP_sub: *cell -= s->value; break;
    }
    if (s->kind == ISA_SYNC_EVENT)
        *cell = *cell != 0;
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
                      insn->wait[w].id, *sched_cell(e->core, &insn->wait[w]), insn->wait[w].op,
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
    emu_status st = fn != NULL ? fn(&ctx, insn)
                               : core_fail(&ctx, EMU_INVALID, "opcode 0x%02x has no semantics",
                                           insn->opcode);
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
                                         progs[c]->n[e] == 0, opts->cost};
    }
    emu_status st = EMU_OK;
    bool ran = false;
    struct core_lnc *lnc = sched_split_lnc(progs, ncores, opts);
    if (lnc != NULL)
        st = sched_run_split(es, n, ncores, opts, lnc, report, report_cap, &ran);
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
