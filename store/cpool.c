/*
 * cpool.c: the worker pool of the snapshot store (see cpool.h).
 *
 * Items are handed out one at a time under the pool's mutex (an item is a
 * chunk of 16 KiB or more, so the lock costs nothing measurable), which
 * keeps the hand-over between batches simple: an item index is only ever
 * taken for the batch it belongs to.
 */
#include "store/cpool.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "devices/runtime/state.h"

#define CPOOL_MAX 8

struct cpool {
    pthread_mutex_t lock;              /* guards every field below */
    pthread_cond_t wake;               /* a batch was submitted, or stop */
    pthread_cond_t idle;               /* the last item of a batch finished */
    pthread_t th[CPOOL_MAX];           /* the workers */
    unsigned nth;                      /* workers started */
    bool stop;                         /* workers should end */
    void (*fn)(void *arg, size_t i);   /* the batch's function */
    void *arg;                         /* its argument */
    size_t n;                          /* items in the batch */
    size_t next;                       /* next item to hand out */
    size_t done;                       /* items finished */
};

static _Thread_local const struct cpool *cpool_locked; /* the pool whose lock this thread holds */

/* The pool's lock, with its holder noted for cpool_held. */
static void cpool_lock(struct cpool *p)
{
    pthread_mutex_lock(&p->lock);
    cpool_locked = p;
}

static void cpool_unlock(struct cpool *p)
{
    assert(cpool_locked == p);
    cpool_locked = NULL;
    pthread_mutex_unlock(&p->lock);
}

/* Does this thread hold p's lock? For assert() only. */
static inline bool cpool_held(const struct cpool *p)
{
    return cpool_locked == p;
}

/* Take the next item of the batch (caller holds the lock); false at the end. */
static bool cpool_take(struct cpool *p, size_t *i)
{
    assert(cpool_held(p));
    if (p->next >= p->n)
        return false;
    *i = p->next++;
    return true;
}

/* Run items until the batch has none left to hand out (lock held on
 * entry and exit). */
static void cpool_drain(struct cpool *p)
{
    assert(cpool_held(p));
    size_t i;
    while (cpool_take(p, &i)) {
        void (*fn)(void *, size_t) = p->fn;
        void *arg = p->arg;
        cpool_unlock(p);
        fn(arg, i);
        cpool_lock(p);
        if (++p->done == p->n)
            pthread_cond_broadcast(&p->idle);
    }
}

static void *cpool_main(void *arg)
{
    struct cpool *p = arg;
    cpool_lock(p);
    while (!p->stop) {
        cpool_drain(p);
        if (!p->stop)
            pthread_cond_wait(&p->wake, &p->lock);
    }
    cpool_unlock(p);
    return NULL;
}

/* Workers to start: one per core beyond the caller's and others', at
 * most max. */
static unsigned cpool_workers(unsigned max, unsigned others)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t threads; /* the runtime's one parser; a malformed value: the default */
    (void)state_env_uint("TRNEMU_SNAPSHOT_THREADS", 1, 1024, cpus > 0 ? (uint64_t)cpus : 1,
                         &threads);
    long n = (long)threads - 1 - (long)others;
    if (n < 0)
        n = 0;
    if ((unsigned long)n > max)
        n = (long)max;
    return (unsigned)(n > CPOOL_MAX ? CPOOL_MAX : n);
}

struct cpool *cpool_start(unsigned max, unsigned others)
{
    struct cpool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->idle, NULL);
    unsigned want = cpool_workers(max, others);
    for (unsigned i = 0; i < want; i++)
        if (pthread_create(&p->th[p->nth], NULL, cpool_main, p) == 0)
            p->nth++;
    return p;
}

void cpool_stop(struct cpool *p)
{
    if (p == NULL)
        return;
    cpool_lock(p);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    cpool_unlock(p);
    for (unsigned i = 0; i < p->nth; i++)
        pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->idle);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

void cpool_submit(struct cpool *p, void (*fn)(void *arg, size_t i), void *arg, size_t n)
{
    cpool_lock(p);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->next = 0;
    p->done = 0;
    pthread_cond_broadcast(&p->wake);
    cpool_unlock(p);
}

void cpool_wait(struct cpool *p)
{
    cpool_lock(p);
    cpool_drain(p);
    while (p->done < p->n)
        pthread_cond_wait(&p->idle, &p->lock);
    cpool_unlock(p);
}
