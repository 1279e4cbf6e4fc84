/*
 * exec_lnc.c: the physical cores of one execution (an LNC=2 VNC's second
 * core, ...) each on a host thread of their own: the VNC's helper workers
 * (devices/thread/worker.h), handed to core_run as its core_run_threads
 * (exec_int.h; exec_set_core_threads in exec.h).
 */
#include <stdatomic.h>

#include "devices/runtime/exec.h"
#include "devices/runtime/exec_int.h"
#include "emu/core/par.h"

static atomic_bool exec_lnc_on = true;  /* exec_set_core_threads */

void exec_set_core_threads(bool on)
{
    atomic_store(&exec_lnc_on, on);
}

/* The helper worker that runs physical core `core` (1..) of the VNC. */
static struct worker *exec_lnc_helper(struct exec_lnc *l, uint32_t core)
{
    return &l->mach->vncs[l->gvnc].helper[core - 1];
}

static NRT_STATUS exec_lnc_job(void *arg)
{
    struct exec_lnc_core *c = arg;
    c->fn(c->arg);
    return NRT_SUCCESS;
}

/* core_run_threads.start: core `core` on the VNC's helper worker core-1. It
 * borrows the execution's place in the compute gate, as par.c's helpers
 * do: a place never waits for a thread that needs one. */
static bool exec_lnc_start(void *user, uint32_t core, void (*fn)(void *arg), void *arg)
{
    struct exec_lnc *l = user;
    if (core == 0 || core >= MACHINE_MAX_LNC)
        return false;
    struct exec_lnc_core *c = &l->core[core];
    c->fn = fn;
    c->arg = arg;
    c->job = (struct worker_job){.fn = exec_lnc_job, .arg = c, .result = NRT_SUCCESS};
    return worker_post(exec_lnc_helper(l, core), &c->job);
}

static void exec_lnc_join(void *user, uint32_t core)
{
    struct exec_lnc *l = user;
    (void)worker_wait(exec_lnc_helper(l, core), &l->core[core].job);
}

const struct core_run_threads *exec_lnc_setup(struct exec_lnc *l, struct machine *mach,
                                              uint32_t gvnc)
{
    l->mach = mach;
    l->gvnc = gvnc;
    l->threads = (struct core_run_threads){l, exec_lnc_start, exec_lnc_join};
    /* TRNEMU_THREADS=1 keeps every core on this thread (one fixed order). */
    return par_threads() > 1 && atomic_load(&exec_lnc_on) ? &l->threads : NULL;
}
