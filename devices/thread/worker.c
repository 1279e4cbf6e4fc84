/*
 * worker.c: worker threads with a job queue (see worker.h), on the one
 * queue-plus-thread hand-off of emu/jobq.h: a worker_job is a jobq job,
 * its status handed back through the job's done flag, its spin_ns the
 * queue's poll window after it.
 */
#include "devices/thread/worker.h"

#include <stddef.h>

#include "devices/thread/spin.h"
#include "emu/log.h"

/* One job on the worker's thread. A posted job (on_done) may be gone
 * once on_done returned; any other is marked done by the queue. */
static void worker_job_run(void *ctx, void *job, struct jobq_after *after)
{
    (void)ctx;
    struct worker_job *j = job;
    after->spin_ns = j->spin_ns;
    NRT_STATUS st = j->fn(j->arg);
    if (j->on_done != NULL) {
        j->on_done(j->arg, st);
        return;
    }
    j->result = st;
    after->done = &j->done;
}

void worker_init(struct worker *w)
{
    const struct jobq_spec spec = {
        .link = JOBQ_LINK(struct worker_job, next),
        .run = worker_job_run,
        .poll = spin_until_moved,
    };
    jobq_init(&w->q, &spec);
}

/* Queue j on w, its thread started; false (logged) where no thread could
 * start. */
static bool worker_submit(struct worker *w, struct worker_job *j)
{
    if (jobq_put(&w->q, j, 0))
        return true;
    LOG_WARN("TDRV", "cannot start a worker thread; executing on the caller's thread");
    return false;
}

NRT_STATUS worker_run(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg)
{
    struct worker_job j = {fn, arg, NULL, NRT_SUCCESS, false, NULL, 0};
    if (!worker_submit(w, &j))
        return fn(arg);
    return worker_wait(w, &j);
}

NRT_STATUS worker_wait(struct worker *w, struct worker_job *j)
{
    jobq_wait_done(&w->q, &j->done);
    return j->result;
}

NRT_STATUS worker_run_here(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg)
{
    if (!jobq_borrow(&w->q))
        return worker_run(w, fn, arg);
    NRT_STATUS st = fn(arg);
    jobq_unborrow(&w->q);
    return st;
}

NRT_STATUS worker_run_bounded(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg,
                              uint64_t timeout_ns)
{
    struct worker_job j = {fn, arg, NULL, NRT_SUCCESS, false, NULL, 0};
    if (!worker_submit(w, &j))
        return fn(arg);
    if (!jobq_wait_done_for(&w->q, &j.done, timeout_ns) && jobq_cancel(&w->q, &j))
        return NRT_TIMEOUT;  /* never started: given up on */
    jobq_wait_done(&w->q, &j.done);  /* running: it ends within its own time limit */
    return j.result;
}

bool worker_is_self(struct worker *w)
{
    return jobq_is_self(&w->q);
}

bool worker_post(struct worker *w, struct worker_job *j)
{
    return worker_submit(w, j);
}

void worker_fini(struct worker *w)
{
    jobq_fini(&w->q);
}
