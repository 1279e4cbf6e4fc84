/*
 * worker.h: a worker thread with a queue of jobs, run one at a time in
 * the order they were queued. Each VNC has one (machine.h): the VNC's
 * executions run on it, in submission order, while the workers of other
 * VNCs run theirs at the same time. Each non-COMPUTE async queue has one
 * too (async.c). The thread starts with the first job and ends when its
 * owner is torn down. A posted job may ask the worker to poll its queue
 * for a while afterwards before sleeping (worker_job.spin_ns). A caller
 * that would only wait for its job may run it itself while the worker is
 * idle (worker_run_here): the worker then takes no job until it returns,
 * so jobs still run one at a time and in order.
 */
#ifndef TRNEMU_DEVICES_WORKER_H
#define TRNEMU_DEVICES_WORKER_H

#include <stdbool.h>
#include <stdint.h>

#include "emu/jobq.h"
#include "nrt/nrt_status.h"

/* One job. worker_run keeps it on the caller's stack; worker_post takes
 * one the caller owns until its on_done has run. */
struct worker_job {
    NRT_STATUS (*fn)(void *arg);  /* what to run */
    void *arg;                    /* its argument */
    void (*on_done)(void *arg, NRT_STATUS st); /* posted jobs: called once fn returned */
    NRT_STATUS result;            /* its status, once done */
    bool done;                    /* set by the worker when there is no on_done */
    void *next;                   /* queue link (JOBQ_LINK) */
    uint32_t spin_ns;             /* posted jobs: then poll an empty queue this long (ns) */
};

/* The queue and its thread are a jobq (emu/jobq.h), which polls with
 * spin_until_moved (devices/thread/spin.h) after a job that asks. */
struct worker {
    struct jobq q;             /* the jobs and the thread that runs them */
};

void worker_init(struct worker *w);
/* Ask the worker to end once its queue is empty and no caller runs a
 * job itself, and wait for it. */
void worker_fini(struct worker *w);

/* Run fn(arg) on the worker and wait for its status. When the thread
 * cannot be started, fn runs on the calling thread (logged once). */
NRT_STATUS worker_run(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg);

/* worker_run without the two thread switches when they buy nothing: when
 * the worker is idle and nothing is queued, fn(arg) runs on the calling
 * thread, and jobs queued meanwhile wait until it returns; otherwise it
 * is queued behind them as with worker_run. */
NRT_STATUS worker_run_here(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg);

/* Queue j (fn, arg, on_done and spin_ns set by the caller, done false)
 * and return at once; the worker runs fn(arg) and then on_done(arg,
 * status), both without any lock held. With no on_done, the worker marks
 * j done instead and the caller collects it with worker_wait. A job's
 * spin_ns lets the worker catch a job queued right after it (say, the
 * next of a loop) without a wake-up. false (logged) when the thread
 * cannot be started: nothing was queued. */
bool worker_post(struct worker *w, struct worker_job *j);

/* worker_run that gives up when fn has not started within timeout_ns:
 * NRT_TIMEOUT, and fn never runs (a caller whose worker waits for it in
 * turn, say a status callback on another VNC's worker, is not held for
 * ever). Once started, fn is waited for to its end. */
NRT_STATUS worker_run_bounded(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg,
                              uint64_t timeout_ns);
/* Is the calling thread w's own thread (a job, or a posted job's
 * on_done, calling back into its owner)? A job queued on w from there
 * would wait for the thread that waits for it. */
bool worker_is_self(struct worker *w);
/* Wait until the worker has run j (queued without on_done); its status. */
NRT_STATUS worker_wait(struct worker *w, struct worker_job *j);

#endif
