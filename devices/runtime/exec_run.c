/*
 * exec_run.c: one run of a bound execution: its options from the
 * environment, the model's programs on the VNC's cores (core_run) with
 * their collectives and helper threads, then its checks, device time,
 * profile and trace (exec_int.h).
 */
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "devices/config/env.h"
#include "devices/config/status.h"
#include "devices/observe/devprof.h"
#include "devices/observe/systrace.h"
#include "devices/runtime/exec_int.h"
#include "devices/runtime/runtime.h"
#include "emu/core/memfault.h"
#include "emu/core/tbuf.h"
#include "emu/log.h"

/* Run options from the environment (env_exec: NEURON_RT_EXEC_TIMEOUT,
 * TRNEMU_RACECHECK, NEURON_RT_STOCHASTIC_ROUNDING_EN and _SEED); the
 * defaults and NRT_INVALID (the variable's line logged) when one is
 * malformed. */
NRT_STATUS exec_run_opts(struct core_run_opts *o)
{
    struct env_exec e;
    *o = (struct core_run_opts){ENV_EXEC_TIMEOUT_DEFAULT_S * 1000u, false, 0, false, NULL, NULL};
    if (env_exec(&e) != NRT_SUCCESS)
        return NRT_INVALID;
    o->timeout_ms = e.timeout_ms;
    o->racecheck = e.racecheck;
    o->stochastic = e.stochastic;
    o->seed = e.seed;
    return NRT_SUCCESS;
}

/* The run's device time, profile and trace events. */
static void exec_run_account(nrt_model_t *m, const struct cost_run *cost, uint64_t t0,
                             NRT_STATUS st)
{
    atomic_store(&m->device_ns_last, (uint64_t)cost->end_ns);
    atomic_fetch_add(&m->device_ns_total, (uint64_t)cost->end_ns);
    instance_use_flops(rt_machine()->inst, m->gvnc, (uint64_t)cost->flops);
    devprof_exec(&(struct devprof_model){m->id, m->vnc, m->neff->info.name}, cost, st);
    systrace_emit(SYS_NC_EXEC_RUNNING, m->vnc, t0, (uint64_t)cost->end_ns, m->neff->info.name,
                  atomic_load(&m->executions) + 1, st);
    if (st == NRT_EXEC_COMPLETED_WITH_NUM_ERR)
        systrace_emit(SYS_NUMERICAL_ERR, m->vnc, t0, 0, m->neff->info.name, 0, st);
}

/* What one run needs besides the stack, the thread's own and reused: the
 * device-time schedule (over 200 KiB) and the failure report. Mapped per
 * thread (emu/core/tbuf.h), not thread-local storage, which glibc carves
 * out of every thread's stack. */
struct exec_run_scratch {
    struct cost_run cost;  /* device time (emu/core/cost.h) */
    char report[16384];    /* core_run's failure report */
};

static struct tbuf exec_run_tbuf = TBUF_INIT(sizeof(struct exec_run_scratch));

static NRT_STATUS exec_run_program(nrt_model_t *m, struct exec_binding *b)
{
    struct exec_run_scratch *x = tbuf_get(&exec_run_tbuf);
    if (x == NULL) {
        LOG_ERROR("NRT", "out of memory for the run of '%s'", m->neff->info.name);
        return NRT_RESOURCE;
    }
    struct machine *mach = rt_machine();
    struct core *cores[MACHINE_MAX_LNC];
    const struct core_program *progs[MACHINE_MAX_LNC];
    struct core_run_opts opts;
    if (exec_run_opts(&opts) != NRT_SUCCESS)
        return NRT_INVALID;
    NRT_STATUS bound = exec_bind_cores(m, b, cores, progs);
    if (bound != NRT_SUCCESS)
        return bound;
    struct exec_bridge ec;
    exec_bridge_setup(&ec, m, mach, opts.timeout_ms);
    struct exec_lnc lnc;
    /* Device time (emu/core/cost.h): always estimated, spans only for a profile. */
    struct cost_run *cost = &x->cost;
    uint64_t t0 = systrace_now_ns();
    /* The thread's own buffer, reused: only touched as far as the spans go. */
    struct cost_span *spans = devprof_wanted(m->id) ? devprof_span_buffer() : NULL;
    cost_begin(cost, cores[0]->gen, spans, DEVPROF_MAX_SPANS);
    opts.cost = cost;
    opts.threads = exec_lnc_setup(&lnc, mach, m->gvnc);
    uint64_t faults = machine_mem_faults();
    NRT_STATUS st = nrt_status_of(core_run(cores, progs, m->nsgs, &opts, x->report, sizeof x->report));
    exec_bridge_teardown(&ec);
    if (st == NRT_SUCCESS)
        st = exec_diag_numerics(m, b);
    else if (st == NRT_RESOURCE && strstr(x->report, MEMFAULT_CAUSE) != NULL)
        st = exec_diag_mem_fault(m, faults, x->report);
    else
        exec_diag_report(m->vnc, m->neff->info.name, st, x->report);
    exec_run_account(m, cost, t0, st);
    return st;
}

NRT_STATUS exec_run(nrt_model_t *m, struct exec_binding *b)
{
    assert(machine_mem_held());
    if (!m->runnable)
        return exec_standin(m, b);
    return exec_run_program(m, b);
}
