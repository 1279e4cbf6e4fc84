/*
 * jobq.c: a queue of jobs and the thread that runs them (see jobq.h).
 *
 * One mutex guards the queue. The thread waits on `more` for a job (or
 * for a borrow to end, or for stop); everyone else waits on `progress`,
 * which is broadcast when what they wait for may have come: a job someone
 * waits for finished, the queue went idle (jobq_drain), a batch was taken
 * and made room, a borrow ended, the queue failed. A job that only hands
 * over to the next one (a posted job that queues its successor) wakes
 * nobody. Functions marked "lock held" assert it with jobq_held.
 */
#include "emu/jobq.h"

#include <assert.h>
#include <errno.h>
#include <time.h>

static _Thread_local const struct jobq *jobq_locked; /* the queue whose lock this thread holds */

/* q's lock, taken and dropped with its holder noted for jobq_held (a
 * condition wait gives it up only while the thread sleeps). No jobq
 * function holds two queues' locks, nor calls out with one held. */
static void jobq_lock(struct jobq *q)
{
    pthread_mutex_lock(&q->lock);
    jobq_locked = q;
}

static void jobq_unlock(struct jobq *q)
{
    assert(jobq_locked == q);
    jobq_locked = NULL;
    pthread_mutex_unlock(&q->lock);
}

/* Does this thread hold q's lock? For assert() only. */
static inline bool jobq_held(const struct jobq *q)
{
    return jobq_locked == q;
}

/* The link field of job. */
static inline void **jobq_link(const struct jobq *q, void *job)
{
    return (void **)((char *)job + q->spec.link);
}

void jobq_init(struct jobq *q, const struct jobq_spec *spec)
{
    assert(spec->run != NULL && (spec->cap == 0 || spec->batch));
    q->spec = *spec;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->more, NULL);
    pthread_cond_init(&q->progress, NULL);
    q->started = q->stop = q->busy = q->borrowed = q->failed = false;
    q->head = q->tail = NULL;
    q->load = 0;
    atomic_init(&q->bell, 0);
}

/* Ring the bell: a job was queued, or stop asked. Lock held. */
static void jobq_ring(struct jobq *q)
{
    assert(jobq_held(q));
    atomic_fetch_add_explicit(&q->bell, 1, memory_order_relaxed);
}

/* Take what the thread runs next (one job, or a batch's chain), waiting
 * for it (after polling the bell for spin_ns) and while a caller borrows
 * the thread's turn; NULL when asked to stop with nothing queued. Lock
 * held. */
static void *jobq_next(struct jobq *q, uint32_t spin_ns)
{
    assert(jobq_held(q));
    if (q->head == NULL && !q->stop && spin_ns > 0 && q->spec.poll != NULL) {
        uint32_t seen = atomic_load_explicit(&q->bell, memory_order_relaxed);
        jobq_unlock(q);
        (void)q->spec.poll(&q->bell, seen, spin_ns);  /* the lock decides, not the poll */
        jobq_lock(q);
    }
    while ((q->head == NULL || q->borrowed) && !q->stop)
        pthread_cond_wait(&q->more, &q->lock);
    void *job = q->borrowed ? NULL : q->head;
    if (job == NULL)
        return NULL;
    if (q->spec.batch) {
        q->head = q->tail = NULL;
        q->load = 0;
        pthread_cond_broadcast(&q->progress);  /* room for jobq_put */
    } else {
        q->head = *jobq_link(q, job);
        if (q->head == NULL)
            q->tail = NULL;
    }
    q->busy = true;
    return job;
}

static void *jobq_main(void *arg)
{
    struct jobq *q = arg;
    struct jobq_after after = {NULL, 0};
    jobq_lock(q);
    for (void *job; (job = jobq_next(q, after.spin_ns)) != NULL;) {
        jobq_unlock(q);
        after = (struct jobq_after){NULL, 0};
        q->spec.run(q->spec.ctx, job, &after);  /* job may be gone after this */
        jobq_lock(q);
        q->busy = false;
        if (after.done != NULL)
            *after.done = true;
        if (after.done != NULL || q->head == NULL)  /* its waiters; jobq_drain */
            pthread_cond_broadcast(&q->progress);
    }
    jobq_unlock(q);
    return NULL;
}

/* Start the thread if needed; false when it cannot be. Lock held. */
static bool jobq_start_locked(struct jobq *q)
{
    assert(jobq_held(q));
    if (q->started)
        return true;
    if (pthread_create(&q->thread, NULL, jobq_main, q) != 0)
        return false;
    q->started = true;
    return true;
}

bool jobq_start(struct jobq *q)
{
    jobq_lock(q);
    bool ok = jobq_start_locked(q);
    jobq_unlock(q);
    return ok;
}

/* Would a job of weight w pass the bound now? Lock held. */
static bool jobq_full(const struct jobq *q, uint64_t w)
{
    assert(jobq_held(q));
    return q->spec.cap != 0 && q->head != NULL && q->load + w > q->spec.cap;
}

bool jobq_put(struct jobq *q, void *job, uint64_t weight)
{
    jobq_lock(q);
    bool ok = jobq_start_locked(q);
    while (ok && !q->failed && jobq_full(q, weight))
        pthread_cond_wait(&q->progress, &q->lock);
    ok = ok && !q->failed;
    if (ok) {
        *jobq_link(q, job) = NULL;
        if (q->tail != NULL)
            *jobq_link(q, q->tail) = job;
        else
            q->head = job;
        q->tail = job;
        if (q->spec.cap != 0)
            q->load += weight;
        jobq_ring(q);
        pthread_cond_signal(&q->more);
    }
    jobq_unlock(q);
    return ok;
}

/* Unlink job from the queue if it waits there. Lock held. */
static bool jobq_unlink(struct jobq *q, void *job)
{
    assert(jobq_held(q));
    void *prev = NULL;
    for (void *x = q->head; x != NULL; prev = x, x = *jobq_link(q, x)) {
        if (x != job)
            continue;
        if (prev != NULL)
            *jobq_link(q, prev) = *jobq_link(q, x);
        else
            q->head = *jobq_link(q, x);
        if (q->tail == x)
            q->tail = prev;
        return true;
    }
    return false;
}

bool jobq_cancel(struct jobq *q, void *job)
{
    assert(!q->spec.batch);  /* a batch's weights are known only all together */
    jobq_lock(q);
    bool found = jobq_unlink(q, job);
    jobq_unlock(q);
    return found;
}

bool jobq_borrow(struct jobq *q)
{
    jobq_lock(q);
    bool ok = !q->busy && !q->borrowed && q->head == NULL;
    if (ok)
        q->borrowed = true;
    jobq_unlock(q);
    return ok;
}

void jobq_unborrow(struct jobq *q)
{
    jobq_lock(q);
    assert(q->borrowed);
    q->borrowed = false;
    pthread_cond_broadcast(&q->more);      /* the thread, for jobs queued meanwhile */
    pthread_cond_broadcast(&q->progress);  /* jobq_fini */
    jobq_unlock(q);
}

void jobq_wait_done(struct jobq *q, const bool *done)
{
    jobq_lock(q);
    while (!*done)
        pthread_cond_wait(&q->progress, &q->lock);
    jobq_unlock(q);
}

struct timespec jobq_deadline(uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec += (time_t)(t / 1000000000u);
    ts.tv_nsec = (long)(t % 1000000000u);
    return ts;
}

bool jobq_wait_done_for(struct jobq *q, const bool *done, uint64_t timeout_ns)
{
    struct timespec ts = jobq_deadline(timeout_ns);
    jobq_lock(q);
    bool expired = false;
    while (!*done && !expired)
        expired = pthread_cond_timedwait(&q->progress, &q->lock, &ts) == ETIMEDOUT;
    bool d = *done;
    jobq_unlock(q);
    return d;
}

bool jobq_is_self(struct jobq *q)
{
    jobq_lock(q);
    bool self = q->started && pthread_equal(q->thread, pthread_self());
    jobq_unlock(q);
    return self;
}

void jobq_fail(struct jobq *q)
{
    jobq_lock(q);
    q->failed = true;
    pthread_cond_broadcast(&q->progress);
    jobq_unlock(q);
}

bool jobq_drain(struct jobq *q)
{
    jobq_lock(q);
    while (!q->failed && (q->head != NULL || q->busy))
        pthread_cond_wait(&q->progress, &q->lock);
    bool ok = !q->failed;
    jobq_unlock(q);
    return ok;
}

void jobq_fini(struct jobq *q)
{
    jobq_lock(q);
    while (q->borrowed)
        pthread_cond_wait(&q->progress, &q->lock);
    q->stop = true;
    jobq_ring(q);
    pthread_cond_broadcast(&q->more);
    bool started = q->started;
    jobq_unlock(q);
    if (started)
        pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->more);
    pthread_cond_destroy(&q->progress);
    pthread_mutex_destroy(&q->lock);
}
