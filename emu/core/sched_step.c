/*
 * sched_step.c: one engine stream of the scheduler (sched_int.h): its
 * waits and signals (semaphores and events read with acquire and changed
 * with release atomics, so that engines on other threads see what an
 * instruction wrote before its signal), one instruction with the ones it
 * fused (accumulation groups) completed in order (an instruction with
 * run-time offsets runs on a copy with them applied, dynap.h), a turn of up to
 * SCHED_SLICE instructions, the one-thread interleaved run (also the dry
 * replay that fills the device-time schedule of a team run), and the
 * deadlock and timeout reports.
 */
#include <assert.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ISA_WANT_DISPATCH
#include "emu/core/core.h"
#include "emu/core/cost.h"
#include "emu/core/dynap.h"
#include "emu/core/memfault.h"
#include "emu/core/race.h"
#include "emu/core/sched_int.h"
#include "emu/isa/isa_text.h"

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

uint64_t sched_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t sched_now_ms(void)
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

void sched_report_stuck(const struct sched_eng *es, uint32_t n, char *report, size_t cap)
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
    ctx.fuse_max = isa_insn_dynamic(insn) ? 0 : sched_fuse_max(e, race, turn_left);
    ctx.fused = 0;
    ctx.err[0] = '\0';
    isa_exec_fn fn = isa_dispatch[insn->opcode];
    uint64_t faults = memfault_total();
    if (race != NULL)
        race_before(race, e->core, e->eng, e->prog, e->pc);
    struct isa_insn dyn_buf;            /* insn with its run-time offsets applied */
    struct dynap_stage stage;           /* its operands with tensor indirection */
    const struct isa_insn *live = insn;
    ctx.stage = NULL;
    emu_status st = e->dry ? EMU_OK : dynap_resolve(&ctx, insn, &dyn_buf, &live, &stage);
    ctx.insn = live;
    if (st == EMU_OK && !e->dry)
        st = fn != NULL ? fn(&ctx, live)
                        : core_fail(&ctx, EMU_INVALID, "opcode 0x%02x has no semantics",
                                    insn->opcode);
    if (!e->dry)
        dynap_finish(&ctx, &stage, st == EMU_OK && !ctx.blocked);
    if (st == EMU_OK && memfault_total() != faults && memfault_take())  /* memfault.h */
        st = core_fail(&ctx, EMU_RESOURCE, "%s", MEMFAULT_CAUSE);
    ctx.halted = e->dry ? insn->opcode == ISA_OP_halt : ctx.halted;
    if (st == EMU_OK && ctx.blocked) {
        if (race != NULL)
            race_on_blocked(race, e->core_idx, e->eng, insn);
        return EMU_OK;
    }
    if (st == EMU_OK && race != NULL) {
        race_on_wait(race, e->core_idx, e->eng, insn);
        st = race_observe(race, e->core_idx, e->eng, e->prog, e->pc, live, report, cap);
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
emu_status sched_turn(struct sched_eng *e, struct race_state *race, uint64_t *steps,
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
void sched_say_timeout(const struct sched_eng *es, uint32_t n, uint64_t limit_ms,
                       uint64_t steps, char *report, size_t cap)
{
    sched_say(report, cap, "timeout: still running after %" PRIu64 " ms (%" PRIu64
              " instructions)\n", limit_ms, steps);
    for (uint32_t i = 0; i < n; i++)
        if (!es[i].done)
            sched_say_insn(&es[i], report, cap);
}

/* Every engine of every core interleaved on the calling thread. */
emu_status sched_run_one(struct sched_eng *es, uint32_t n, const struct core_run_opts *opts,
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
