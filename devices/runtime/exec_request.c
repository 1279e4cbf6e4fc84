/*
 * exec_request.c: the hand-off of a bound execution to its VNC's worker
 * thread: a request is bound on the caller's thread (nrt_execute, or
 * nrta_execute_schedule at schedule time), run on the worker or on the
 * caller while the worker is idle, counted, and freed (exec.h).
 */
#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "devices/config/env.h"
#include "devices/observe/systrace.h"
#include "devices/runtime/exec.h"
#include "devices/runtime/exec_int.h"
#include "devices/runtime/runtime.h"
#include "emu/core/par.h"
#include "emu/log.h"

/* A bound execution, ready to run (exec.h). */
struct exec_request {
    nrt_model_t *m;            /* the pinned model */
    struct exec_binding b;     /* its bound tensors */
    uint32_t repeat;           /* executions in a row */
};

/* On the VNC's worker, or on the thread of a synchronous nrt_execute
 * while the worker is idle (worker_run_here: two thread switches fewer
 * per call). The quiesce lock is taken here, by the thread that runs the
 * execution, never by a thread that then waits for the worker: a
 * snapshot waiting for it (writers first) would otherwise block the
 * worker for ever. The compute gate is entered inside it (gate.h), once
 * per execution. */
static NRT_STATUS exec_request_job(void *arg)
{
    struct exec_request *r = arg;
    struct machine *mach = rt_machine();
    NRT_STATUS st = NRT_SUCCESS;
    uint64_t t0 = systrace_now_ns();
    uint64_t faults = machine_mem_faults();
    machine_mem_enter(mach);  /* no snapshot while it runs (state_quiesce) */
    par_busy_enter();         /* executions on every CPU: no instruction is split */
    instance_use_model_running(mach->inst, r->m->gvnc, r->m->id, true);
    for (uint32_t i = 0; i < r->repeat && st == NRT_SUCCESS; i++) {
        gate_enter(&mach->compute);
        st = exec_run(r->m, &r->b);
        gate_leave(&mach->compute);
    }
    instance_use_model_running(mach->inst, r->m->gvnc, r->m->id, false);
    par_busy_leave();
    machine_mem_leave(mach);
    if (st == NRT_SUCCESS && machine_mem_faults() != faults) {
        /* a fault no instruction was stopped by (a stand-in's outputs) */
        char what[400];
        snprintf(what, sizeof what, "execution of '%s' on VNC %d", r->m->neff->info.name,
                 r->m->vnc);
        st = machine_mem_check(mach, faults, what);
    } else if (machine_mem_faults() != faults) {
        machine_mem_heal(faults);  /* the failure has its line already */
    }
    instance_use_request(mach->inst, r->m->gvnc, systrace_now_ns() - t0, st);
    return st;
}

NRT_STATUS exec_request_new(nrt_model_t *m, const nrt_tensor_set_t *inputs,
                            nrt_tensor_set_t *outputs, uint32_t repeat,
                            struct exec_request **out)
{
    assert(rt_held());
    struct exec_request *r = calloc(1, sizeof *r);
    if (r == NULL) {
        LOG_ERROR("NRT", "out of memory for an execution of '%s'", m->neff->info.name);
        return NRT_RESOURCE;
    }
    NRT_STATUS st = exec_bind(m->neff, inputs, outputs, &r->b);
    if (st != NRT_SUCCESS) {
        free(r);
        return st;
    }
    r->m = m;
    r->repeat = repeat;
    *out = r;
    return NRT_SUCCESS;
}

/* Count a finished execution and bump its outputs' completion counters. */
static void exec_request_done(struct exec_request *r, NRT_STATUS st)
{
    nrt_model_t *m = r->m;
    if (st != NRT_SUCCESS && env_get()->dump_inputs_on_err)
        exec_diag_dump_inputs(m, &r->b);
    if (st == NRT_SUCCESS || st == NRT_EXEC_COMPLETED_WITH_NUM_ERR) {
        atomic_fetch_add(&m->executions, r->repeat);
        instance_use_executions(rt_machine()->inst, m->gvnc, r->repeat);
        for (uint32_t i = 0; i < r->b.n; i++)
            if (m->neff->io[i].is_output)
                tensor_completion_bump(r->b.tensors[i]);
    }
}

NRT_STATUS exec_request_run(struct exec_request *r)
{
    struct machine *mach = rt_machine();
    struct vnc_info *vi = &mach->vncs[r->m->gvnc];
    NRT_STATUS st;
    if (worker_is_self(&vi->worker)) {
        /* From the status callback on the VNC's own worker: the worker is
         * this thread, so running here keeps one execution at a time;
         * exec_lock may be held by an nrt_execute whose job waits for us. */
        st = exec_request_job(r);
    } else if (exec_in_status_callback()) {
        /* From a status callback: the other worker may be in a callback
         * that waits for this one; NEURON_RT_EXEC_TIMEOUT bounds the wait
         * for ours to start. No exec_lock: the worker serialises. */
        struct core_run_opts o;
        (void)exec_run_opts(&o);  /* a malformed variable keeps the default bound */
        uint64_t ms = o.timeout_ms ? o.timeout_ms : ENV_EXEC_TIMEOUT_DEFAULT_S * 1000u;
        st = worker_run_bounded(&vi->worker, exec_request_job, r, ms * 1000000u);
        if (st == NRT_TIMEOUT)
            LOG_ERROR("NRT", "execution of '%s' from an execution status callback did not start "
                      "within NEURON_RT_EXEC_TIMEOUT: VNC %d's worker is busy (in a callback "
                      "waiting for this one?)", r->m->neff->info.name, r->m->vnc);
    } else {
        pthread_mutex_lock(&vi->exec_lock);  /* one execution per VNC at a time */
        st = worker_run_here(&vi->worker, exec_request_job, r);
        pthread_mutex_unlock(&vi->exec_lock);
    }
    exec_request_done(r, st);
    return st;
}

struct worker *exec_request_worker(const struct exec_request *r)
{
    return &rt_machine()->vncs[r->m->gvnc].worker;
}

NRT_STATUS exec_request_run_on_worker(struct exec_request *r)
{
    NRT_STATUS st = exec_request_job(r);
    exec_request_done(r, st);
    return st;
}

void exec_request_free(struct exec_request *r)
{
    if (r == NULL)
        return;
    exec_unbind(&r->b, r->b.n);
    free(r);
}
