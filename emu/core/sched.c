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
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ISA_WANT_DISPATCH
#include "emu/core/core.h"
#include "emu/isa/isa_text.h"
#include "emu/core/cost.h"
#include "emu/core/race.h"

#define SCHED_SLICE 4096u  /* instructions an engine runs per turn at most */

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

/* Run one instruction of e; *moved tells whether it ran. */
static emu_status sched_step(struct sched_eng *e, struct race_state *race, bool *moved,
                             char *report, size_t cap)
{
    const struct isa_insn *insn = &e->prog->code[e->eng][e->pc];
    *moved = false;
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
    double t_end = e->cost != NULL ? cost_insn(e->cost, e->core_idx, e->eng, e->pc, insn) : 0;
    for (int i = 0; i < ISA_MAX_SIGNAL && insn->signal[i].kind != ISA_SYNC_NONE; i++) {
        sched_signal(e->core, &insn->signal[i]);
        if (e->cost != NULL)
            cost_signal(e->cost, e->core_idx, &insn->signal[i], t_end);
        if (race != NULL)
            race_on_signal(race, e->core_idx, e->eng, &insn->signal[i]);
    }
    *moved = true;
    e->pc = ctx.next_pc;
    e->done = ctx.halted || e->pc >= e->prog->n[e->eng];
    return EMU_OK;
}

/* Give e its turn: up to SCHED_SLICE instructions. */
static emu_status sched_turn(struct sched_eng *e, struct race_state *race, uint64_t *steps,
                             bool *progress, char *report, size_t cap)
{
    for (uint32_t k = 0; k < SCHED_SLICE && !e->done; k++) {
        bool moved;
        emu_status st = sched_step(e, race, &moved, report, cap);
        if (st != EMU_OK)
            return st;
        if (!moved)
            break;
        *progress = true;
        (*steps)++;
    }
    return EMU_OK;
}

emu_status core_run(struct core *const *cores, const struct core_program *const *progs,
                    uint32_t ncores, const struct core_run_opts *opts, char *report,
                    size_t report_cap)
{
    struct sched_eng es[ISA_ENG_COUNT * 4];
    uint32_t n = 0;
    if (report_cap > 0)
        report[0] = '\0';
    if (ncores > 4)
        return EMU_INVALID;
    for (uint32_t c = 0; c < ncores; c++) {
        core_reset(cores[c], opts->seed, opts->stochastic);
        assert(core_sane(cores[c]));
        for (int e = 0; e < ISA_ENG_COUNT; e++)
            es[n++] = (struct sched_eng){cores[c], progs[c], c, (enum isa_engine)e, 0,
                                         progs[c]->n[e] == 0, opts->cost};
    }
    struct race_state *race = NULL;
    if (opts->racecheck && race_create(ncores, &race) != EMU_OK)
        return EMU_RESOURCE;
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
            st = EMU_EXEC_ERR;
            break;
        }
        if (opts->timeout_ms) {
            if (sched_now_ms() - start > opts->timeout_ms) {
                sched_say(report, report_cap, "timeout: still running after %" PRIu64
                          " ms (%" PRIu64 " instructions)\n", opts->timeout_ms, steps);
                for (uint32_t i = 0; i < n; i++)
                    if (!es[i].done)
                        sched_say_insn(&es[i], report, report_cap);
                st = EMU_TIMEOUT;
                break;
            }
        }
    }
    race_destroy(race);
    for (uint32_t c = 0; c < ncores; c++)
        assert(core_sane(cores[c]));
    return st;
}
