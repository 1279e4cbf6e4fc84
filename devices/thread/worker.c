/*
 * worker.c: worker threads with a job queue (see worker.h).
 */
#include "devices/thread/worker.h"

#include <errno.h>
#include <stddef.h>
#include <time.h>

#include "devices/thread/spin.h"
#include "emu/log.h"

void worker_init(struct worker *w)
{
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->wake, NULL);
    pthread_cond_init(&w->done, NULL);
    w->started = false;
    w->stop = false;
    w->busy = false;
    w->borrowed = false;
    w->head = w->tail = NULL;
    atomic_init(&w->bell, 0);
}

/* Take the oldest job, waiting for one (polling the bell for spin_ns
 * nanoseconds first) and while a caller runs one itself; NULL when asked
 * to stop. Lock held. */
static struct worker_job *worker_next(struct worker *w, uint32_t spin_ns)
{
    if (w->head == NULL && !w->stop && spin_ns > 0) {
        uint32_t seen = atomic_load_explicit(&w->bell, memory_order_relaxed);
        pthread_mutex_unlock(&w->lock);
        (void)spin_until_moved(&w->bell, seen, spin_ns);  /* the lock decides, not the poll */
        pthread_mutex_lock(&w->lock);
    }
    while ((w->head == NULL || w->borrowed) && !w->stop)
        pthread_cond_wait(&w->wake, &w->lock);
    struct worker_job *j = w->borrowed ? NULL : w->head;
    if (j != NULL) {
        w->head = j->next;
        if (w->head == NULL)
            w->tail = NULL;
        w->busy = true;
    }
    return j;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    uint32_t spin_ns = 0;  /* the idle poll the last job asked for */
    pthread_mutex_lock(&w->lock);
    for (struct worker_job *j; (j = worker_next(w, spin_ns)) != NULL;) {
        pthread_mutex_unlock(&w->lock);
        spin_ns = j->spin_ns;
        NRT_STATUS st = j->fn(j->arg);
        if (j->on_done != NULL) {  /* posted: the job may be gone after this */
            j->on_done(j->arg, st);
            pthread_mutex_lock(&w->lock);
            w->busy = false;
            continue;
        }
        pthread_mutex_lock(&w->lock);
        w->busy = false;
        j->result = st;
        j->done = true;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Start the thread if needed; false when it cannot be. Lock held. */
static bool worker_start(struct worker *w)
{
    if (w->started)
        return true;
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        LOG_WARN("TDRV", "cannot start a worker thread; executing on the caller's thread");
        return false;
    }
    w->started = true;
    return true;
}

/* Append j to the queue and wake the worker. Lock held. */
static void worker_enqueue(struct worker *w, struct worker_job *j)
{
    j->next = NULL;
    if (w->tail != NULL)
        w->tail->next = j;
    else
        w->head = j;
    w->tail = j;
    atomic_fetch_add_explicit(&w->bell, 1, memory_order_relaxed);
    pthread_cond_signal(&w->wake);
}

/* Queue j on w, its thread started: true with the lock held; false (the
 * lock not held) where no thread could start, for the caller to run j. */
static bool worker_submit(struct worker *w, struct worker_job *j)
{
    pthread_mutex_lock(&w->lock);
    if (!worker_start(w)) {
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    worker_enqueue(w, j);
    return true;
}

NRT_STATUS worker_run(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg)
{
    struct worker_job j = {fn, arg, NULL, NRT_SUCCESS, false, NULL, 0};
    if (!worker_submit(w, &j))
        return fn(arg);
    pthread_mutex_unlock(&w->lock);
    return worker_wait(w, &j);
}

NRT_STATUS worker_wait(struct worker *w, struct worker_job *j)
{
    pthread_mutex_lock(&w->lock);
    while (!j->done)
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
    return j->result;
}

NRT_STATUS worker_run_here(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&w->lock);
    if (w->busy || w->borrowed || w->head != NULL) {
        pthread_mutex_unlock(&w->lock);
        return worker_run(w, fn, arg);
    }
    w->borrowed = true;
    pthread_mutex_unlock(&w->lock);
    NRT_STATUS st = fn(arg);
    pthread_mutex_lock(&w->lock);
    w->borrowed = false;
    pthread_cond_broadcast(&w->wake);  /* the worker, for jobs queued meanwhile */
    pthread_cond_broadcast(&w->done);  /* worker_fini */
    pthread_mutex_unlock(&w->lock);
    return st;
}

/* Take j out of w's queue if it is still there (not started). Lock held. */
static bool worker_unqueue(struct worker *w, struct worker_job *j)
{
    struct worker_job *prev = NULL;
    for (struct worker_job *x = w->head; x != NULL; prev = x, x = x->next) {
        if (x != j)
            continue;
        if (prev != NULL)
            prev->next = x->next;
        else
            w->head = x->next;
        if (w->tail == x)
            w->tail = prev;
        return true;
    }
    return false;
}

NRT_STATUS worker_run_bounded(struct worker *w, NRT_STATUS (*fn)(void *arg), void *arg,
                              uint64_t timeout_ns)
{
    struct worker_job j = {fn, arg, NULL, NRT_SUCCESS, false, NULL, 0};
    if (!worker_submit(w, &j))
        return fn(arg);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + timeout_ns;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    bool expired = false;
    while (!j.done && !expired)
        expired = pthread_cond_timedwait(&w->done, &w->lock, &ts) == ETIMEDOUT;
    if (!j.done && worker_unqueue(w, &j)) {  /* never started: give up on it */
        pthread_mutex_unlock(&w->lock);
        return NRT_TIMEOUT;
    }
    while (!j.done)  /* running: it ends within its own time limit */
        pthread_cond_wait(&w->done, &w->lock);
    pthread_mutex_unlock(&w->lock);
    return j.result;
}

bool worker_is_self(struct worker *w)
{
    pthread_mutex_lock(&w->lock);
    bool self = w->started && pthread_equal(w->thread, pthread_self());
    pthread_mutex_unlock(&w->lock);
    return self;
}

bool worker_post(struct worker *w, struct worker_job *j)
{
    pthread_mutex_lock(&w->lock);
    bool ok = worker_start(w);
    if (ok)
        worker_enqueue(w, j);
    pthread_mutex_unlock(&w->lock);
    return ok;
}

void worker_fini(struct worker *w)
{
    pthread_mutex_lock(&w->lock);
    while (w->borrowed)
        pthread_cond_wait(&w->done, &w->lock);
    w->stop = true;
    atomic_fetch_add_explicit(&w->bell, 1, memory_order_relaxed);
    pthread_cond_broadcast(&w->wake);
    bool started = w->started;
    pthread_mutex_unlock(&w->lock);
    if (started)
        pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->wake);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->lock);
}
