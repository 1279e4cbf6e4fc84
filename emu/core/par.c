/*
 * par.c: the helper-thread pool behind par_for (see par.h).
 *
 * A par_for publishes a job (on the caller's stack) in a list of open jobs
 * and wakes the helpers. Parts are claimed one at a time from the job's
 * atomic counter, by the caller and by any helper that joined the job; the
 * first thread to find no part left takes the job off the list. The caller
 * then spins briefly, and if need be sleeps, until no helper is still
 * inside the job; it checks that under the pool mutex, which helpers leave
 * a job under too, so every helper's writes come before par_for returns.
 *
 * An idle helper spins briefly on an atomic count of open jobs before it
 * sleeps on the condition variable: instructions arrive back to back, and
 * a sleeping thread takes tens of microseconds to wake. Helpers carry the
 * pool generation they were started in; par_shutdown bumps it, wakes them
 * and joins them. Nothing here decides which part computes what, so the
 * results never depend on the pool.
 */
#include "emu/core/par.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "emu/core/tbuf.h"
#include "emu/log.h"

#define PAR_SPIN_NS 30000      /* how long an idle helper spins before it sleeps */
#define PAR_WAIT_SPIN_NS 30000 /* how long a caller spins for its helpers to finish */

/* One par_for call, open to helpers while it has unclaimed parts. */
struct par_job {
    void (*fn)(void *arg, size_t part); /* the work of one part */
    void *arg;                          /* its argument */
    size_t n_parts;                     /* parts in all */
    atomic_size_t next;                 /* the next unclaimed part */
    atomic_uint helpers;                /* helpers inside the job (changed under par_mu) */
    bool linked;                        /* on the open list (par_mu) */
    bool waiting;                       /* the caller sleeps on idle (par_mu) */
    struct par_job *prev;               /* open list neighbours (par_mu) */
    struct par_job *after;
    pthread_cond_t idle;                /* signalled when helpers drops to 0 */
};

static pthread_mutex_t par_mu = PTHREAD_MUTEX_INITIALIZER;   /* guards the pool */
static pthread_cond_t par_wake = PTHREAD_COND_INITIALIZER;   /* a job opened, or shutdown */
static struct par_job *par_open_head;          /* open jobs, oldest first (par_mu) */
static struct par_job *par_open_tail;          /* last open job (par_mu) */
static atomic_uint par_open_count;             /* jobs on the open list, for spinning */
static unsigned par_setting;                   /* as configured, 0 = online CPUs (par_mu) */
static atomic_uint par_resolved;               /* par_setting resolved, 0: not yet */
static pthread_t par_helper[PAR_MAX_THREADS];  /* running helpers (par_mu) */
static unsigned par_nhelpers;                  /* entries of par_helper (par_mu) */
static unsigned par_gen;                       /* bumped by par_shutdown (par_mu) */
static atomic_uint par_busy;                   /* threads inside par_busy_enter */
static _Thread_local bool par_in_part;         /* this thread is running a part */

/* ---- thread count --------------------------------------------------------------- */

static unsigned par_resolve(unsigned setting)
{
    if (setting == 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        setting = cpus > 0 ? (unsigned)cpus : 1u;
    }
    return setting > PAR_MAX_THREADS ? PAR_MAX_THREADS : setting;
}

unsigned par_threads(void)
{
    unsigned t = atomic_load_explicit(&par_resolved, memory_order_relaxed);
    if (t != 0)
        return t;
    pthread_mutex_lock(&par_mu);
    t = par_resolve(par_setting);
    atomic_store_explicit(&par_resolved, t, memory_order_relaxed);
    pthread_mutex_unlock(&par_mu);
    return t;
}


/* ---- the open list (par_mu held) -------------------------------------------------- */

static void par_link(struct par_job *j)
{
    j->prev = par_open_tail;
    j->after = NULL;
    if (par_open_tail != NULL)
        par_open_tail->after = j;
    else
        par_open_head = j;
    par_open_tail = j;
    j->linked = true;
    atomic_fetch_add_explicit(&par_open_count, 1, memory_order_relaxed);
}

static void par_unlink(struct par_job *j)
{
    if (!j->linked)
        return;
    if (j->prev != NULL)
        j->prev->after = j->after;
    else
        par_open_head = j->after;
    if (j->after != NULL)
        j->after->prev = j->prev;
    else
        par_open_tail = j->prev;
    j->linked = false;
    atomic_fetch_sub_explicit(&par_open_count, 1, memory_order_relaxed);
}

/* ---- running parts -------------------------------------------------------------- */

static uint64_t par_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void par_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Claim and run parts of j until none is left. */
static void par_run_parts(struct par_job *j)
{
    bool was_inside = par_in_part;
    par_in_part = true;
    for (;;) {
        size_t p = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (p >= j->n_parts)
            break;
        j->fn(j->arg, p);
    }
    par_in_part = was_inside;
}

/* Spin (mutex not held) until a job may be open or PAR_SPIN_NS passed. */
static void par_spin(void)
{
    uint64_t t0 = par_now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&par_open_count, memory_order_relaxed) != 0)
            return;
        par_pause();
        if (i % 64 == 0 && par_now_ns() - t0 > PAR_SPIN_NS)
            return;
    }
}

/* The caller, its own parts done: spin a little while helpers finish
 * theirs (a sleep and wake-up costs more than a part's tail). */
static void par_wait_spin(struct par_job *j)
{
    uint64_t t0 = par_now_ns();
    for (unsigned i = 1; atomic_load_explicit(&j->helpers, memory_order_relaxed) > 0; i++) {
        par_pause();
        if (i % 64 == 0 && par_now_ns() - t0 > PAR_WAIT_SPIN_NS)
            return;
    }
}

/* A helper: join open jobs until the pool generation changes. */
static void *par_helper_main(void *p)
{
    unsigned gen = (unsigned)(uintptr_t)p;
    bool spun = false;
    pthread_mutex_lock(&par_mu);
    while (par_gen == gen) {
        struct par_job *j = par_open_head;
        if (j == NULL) {
            if (spun) {
                pthread_cond_wait(&par_wake, &par_mu);
                spun = false;
            } else {
                pthread_mutex_unlock(&par_mu);
                par_spin();
                spun = true;
                pthread_mutex_lock(&par_mu);
            }
            continue;
        }
        atomic_fetch_add_explicit(&j->helpers, 1, memory_order_relaxed);
        pthread_mutex_unlock(&par_mu);
        par_run_parts(j);
        pthread_mutex_lock(&par_mu);
        par_unlink(j);
        if (atomic_fetch_sub_explicit(&j->helpers, 1, memory_order_release) == 1 && j->waiting)
            pthread_cond_signal(&j->idle);
        spun = false;
    }
    pthread_mutex_unlock(&par_mu);
    return NULL;
}

/* fork(): the child gets none of the helpers and none of the other
 * threads' jobs; the fork holds par_mu so that the copy is consistent. */
static void par_fork_prepare(void)
{
    pthread_mutex_lock(&par_mu);
}

static void par_fork_parent(void)
{
    pthread_mutex_unlock(&par_mu);
}

static void par_fork_child(void)
{
    par_nhelpers = 0;
    par_gen++;
    par_open_head = par_open_tail = NULL;
    atomic_store_explicit(&par_open_count, 0, memory_order_relaxed);
    pthread_mutex_unlock(&par_mu);
}

static pthread_once_t par_fork_once = PTHREAD_ONCE_INIT;

static void par_fork_register(void)
{
    (void)pthread_atfork(par_fork_prepare, par_fork_parent, par_fork_child);
}

/* Start helpers up to want - 1 (par_mu held); a failure leaves fewer. */
static void par_start_helpers(unsigned want)
{
    if (par_nhelpers + 1 < want)
        pthread_once(&par_fork_once, par_fork_register);
    while (par_nhelpers + 1 < want) {
        pthread_t t;
        if (pthread_create(&t, NULL, par_helper_main, (void *)(uintptr_t)par_gen) != 0) {
            LOG_WARN("EMU", "cannot start a helper thread; splitting over %u threads",
                     par_nhelpers + 1);
            return;
        }
        par_helper[par_nhelpers++] = t;
    }
}

static void par_inline(size_t n_parts, void (*fn)(void *arg, size_t part), void *arg)
{
    for (size_t p = 0; p < n_parts; p++)
        fn(arg, p);
}

void par_busy_enter(void)
{
    atomic_fetch_add_explicit(&par_busy, 1, memory_order_relaxed);
}

void par_busy_leave(void)
{
    atomic_fetch_sub_explicit(&par_busy, 1, memory_order_relaxed);
}

void par_for(size_t n_parts, void (*fn)(void *arg, size_t part), void *arg)
{
    unsigned want = par_threads();
    if (n_parts <= 1 || want <= 1 || par_in_part ||
        atomic_load_explicit(&par_busy, memory_order_relaxed) >= want) {
        par_inline(n_parts, fn, arg);
        return;
    }
    struct par_job j = {.fn = fn, .arg = arg, .n_parts = n_parts};
    atomic_init(&j.next, 0);
    atomic_init(&j.helpers, 0);
    pthread_cond_init(&j.idle, NULL);
    pthread_mutex_lock(&par_mu);
    par_start_helpers(want);
    par_link(&j);
    pthread_cond_broadcast(&par_wake);
    pthread_mutex_unlock(&par_mu);
    par_run_parts(&j);
    par_wait_spin(&j);
    pthread_mutex_lock(&par_mu);
    par_unlink(&j);
    j.waiting = true;
    while (atomic_load_explicit(&j.helpers, memory_order_relaxed) > 0)
        pthread_cond_wait(&j.idle, &par_mu);
    pthread_mutex_unlock(&par_mu);
    pthread_cond_destroy(&j.idle);
}

/* Stop every helper and, when setting is not NULL, change the setting in
 * the same critical section (so no helper of the old setting survives). */
static void par_stop(const unsigned *setting)
{
    pthread_t join[PAR_MAX_THREADS];
    pthread_mutex_lock(&par_mu);
    unsigned n = par_nhelpers;
    for (unsigned i = 0; i < n; i++)
        join[i] = par_helper[i];
    par_nhelpers = 0;
    par_gen++;
    if (setting != NULL) {
        par_setting = *setting;
        atomic_store_explicit(&par_resolved, par_resolve(*setting), memory_order_relaxed);
    }
    pthread_cond_broadcast(&par_wake);
    pthread_mutex_unlock(&par_mu);
    for (unsigned i = 0; i < n; i++)
        pthread_join(join[i], NULL);
}

void par_shutdown(void)
{
    par_stop(NULL);
}

void par_configure(unsigned threads)
{
    par_stop(&threads);
}

/* ---- per-thread scratch ------------------------------------------------------------ */

static struct tbuf par_scratch_buf =
    TBUF_INIT((size_t)PAR_SCRATCH_SLOTS * PAR_SCRATCH_ELEMS * sizeof(float));

float *par_scratch(unsigned slot)
{
    if (slot >= PAR_SCRATCH_SLOTS)
        return NULL;
    float *base = tbuf_get(&par_scratch_buf);
    if (base == NULL) {
        LOG_ERROR("EMU", "out of host memory for a thread's scratch rows");
        return NULL;
    }
    return base + (size_t)slot * PAR_SCRATCH_ELEMS;
}
