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
 *
 * The split rule: a par_for is handed to helpers only when it pays on this
 * host. par.c learns, per part function (a call site), how long one part
 * takes (the first call of a site runs inline and is timed; later calls
 * refine it), and measures once, at the first call that could split, what
 * one hand-off and join costs here (the median of PAR_PROBE_CALLS splits
 * of empty parts over every thread). A site's first split comes when the
 * time the helpers would save is at least PAR_PAYBACK hand-off costs;
 * from then on both ways are timed per part (wall clock, the join
 * included) and each call takes the faster, now and then the other, so a host that gets busy (helpers that wait for a CPU) turns a
 * site back to inline and a quiet one back to splitting. Inline parts run
 * on the caller, in order. Whatever is decided, each part runs once with
 * the same code, so the bits never depend on it.
 */
#include "emu/core/par.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "emu/core/memfault.h"
#include "emu/core/tbuf.h"
#include "emu/log.h"

#define PAR_SPIN_NS 30000      /* how long an idle helper spins before it sleeps */
#define PAR_WAIT_SPIN_NS 30000 /* how long a caller spins for its helpers to finish */
#define PAR_SITES 64           /* part functions whose part time is learnt */
#define PAR_PAYBACK 4          /* a split must save this many hand-off costs */
#define PAR_PROBE_CALLS 63     /* splits of empty parts timed to learn the hand-off cost */
#define PAR_EXPLORE 64         /* calls of a site between tries of the way that lost, times
                                  how many times slower it was: a try costs at most 1/64 */
#define PAR_EXPLORE_MAX 1024   /* the factor's cap */

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
    bool team;                          /* par_team: its parts may split work further */
    atomic_bool faulted;                /* a helper met a memory fault (memfault.h) */
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
static atomic_ullong par_nhandoffs;            /* par_for calls handed to helpers */
static atomic_bool par_forced;                 /* par_force_split: skip the rule */
static atomic_uint_fast64_t par_handoff_cost;  /* ns of one hand-off and join, 0: not yet */
static pthread_mutex_t par_probe_mu = PTHREAD_MUTEX_INITIALIZER; /* one probe at a time */

/* What the rule knows of one part function. */
struct par_site {
    atomic_uintptr_t fn;               /* the part function, 0: free entry */
    atomic_uint_fast64_t inline_ns;    /* wall time per part of calls run inline, 0: none */
    atomic_uint_fast64_t split_ns;     /* wall time per part of split calls, join included,
                                          0: none yet */
    atomic_uint_fast64_t calls;        /* calls so far (every PAR_EXPLORE-th tries the
                                          way that lost, to follow the host's load) */
};
static struct par_site par_sites[PAR_SITES];   /* claimed in order, never freed */
static _Thread_local bool par_in_part;         /* this thread is running a part */
static _Thread_local bool par_mu_owner;        /* this thread holds par_mu */

/* par_mu, taken and dropped with its holder noted for par_held (a
 * condition wait gives it up only while the thread sleeps). */
static void par_lock(void)
{
    pthread_mutex_lock(&par_mu);
    par_mu_owner = true;
}

static void par_unlock(void)
{
    assert(par_mu_owner);
    par_mu_owner = false;
    pthread_mutex_unlock(&par_mu);
}

/* Does this thread hold par_mu? For assert() only. */
static inline bool par_held(void)
{
    return par_mu_owner;
}

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
    par_lock();
    t = par_resolve(par_setting);
    atomic_store_explicit(&par_resolved, t, memory_order_relaxed);
    par_unlock();
    return t;
}


/* ---- the open list (par_mu held) -------------------------------------------------- */

static void par_link(struct par_job *j)
{
    assert(par_held());
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
    assert(par_held());
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

/* Claim and run parts of j until none is left; how many this thread ran. */
static size_t par_run_parts(struct par_job *j)
{
    bool was_inside = par_in_part;
    size_t ran = 0;
    par_in_part = !j->team; /* a team part's own par_for may go to idle helpers */
    for (;; ran++) {
        size_t p = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (p >= j->n_parts)
            break;
        j->fn(j->arg, p);
    }
    par_in_part = was_inside;
    return ran;
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
    par_lock();
    while (par_gen == gen) {
        struct par_job *j = par_open_head;
        if (j == NULL) {
            if (spun) {
                pthread_cond_wait(&par_wake, &par_mu);
                spun = false;
            } else {
                par_unlock();
                par_spin();
                spun = true;
                par_lock();
            }
            continue;
        }
        atomic_fetch_add_explicit(&j->helpers, 1, memory_order_relaxed);
        par_unlock();
        (void)memfault_take();  /* a flag of earlier work is not this job's */
        par_run_parts(j);
        if (memfault_take())    /* the caller's instruction met it */
            atomic_store_explicit(&j->faulted, true, memory_order_relaxed);
        par_lock();
        par_unlink(j);
        if (atomic_fetch_sub_explicit(&j->helpers, 1, memory_order_release) == 1 && j->waiting)
            pthread_cond_signal(&j->idle);
        spun = false;
    }
    par_unlock();
    return NULL;
}

/* fork(): the child gets none of the helpers and none of the other
 * threads' jobs; the fork holds par_mu so that the copy is consistent. */
static void par_fork_prepare(void)
{
    par_lock();
}

static void par_fork_parent(void)
{
    par_unlock();
}

static void par_fork_child(void)
{
    par_nhelpers = 0;
    par_gen++;
    par_open_head = par_open_tail = NULL;
    atomic_store_explicit(&par_open_count, 0, memory_order_relaxed);
    par_unlock();
}

static pthread_once_t par_fork_once = PTHREAD_ONCE_INIT;

static void par_fork_register(void)
{
    (void)pthread_atfork(par_fork_prepare, par_fork_parent, par_fork_child);
}

/* Start helpers up to want - 1 (par_mu held); a failure leaves fewer. */
static void par_start_helpers(unsigned want)
{
    assert(par_held());
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

/* The rule's entry for fn, claimed when new; NULL when the table is full. */
static struct par_site *par_site_of(void (*fn)(void *, size_t))
{
    uintptr_t key = (uintptr_t)fn;
    for (unsigned i = 0; i < PAR_SITES; i++) {
        uintptr_t have = atomic_load_explicit(&par_sites[i].fn, memory_order_acquire);
        if (have == 0 && atomic_compare_exchange_strong(&par_sites[i].fn, &have, key))
            return &par_sites[i];
        if (have == key)
            return &par_sites[i];
    }
    return NULL;
}

/* Fold a new measurement of one part's time into an estimate: a faster
 * one is taken at once (first calls pay cold caches), a slower one a
 * quarter (a host that got busy is followed over a few calls). */
static void par_learn(atomic_uint_fast64_t *est, uint64_t ns_per_part)
{
    uint64_t old = atomic_load_explicit(est, memory_order_relaxed);
    uint64_t v = ns_per_part > 0 ? ns_per_part : 1;
    atomic_store_explicit(est, old == 0 || v < old ? v : (3 * old + v) / 4,
                          memory_order_relaxed);
}

static void par_inline_timed(size_t n_parts, void (*fn)(void *arg, size_t part), void *arg,
                             struct par_site *site)
{
    uint64_t t0 = par_now_ns();
    par_inline(n_parts, fn, arg);
    par_learn(&site->inline_ns, (par_now_ns() - t0) / n_parts);
}

/* Hand the parts to the helpers and run them with them; returns when all
 * ran. */
static void par_split(size_t n_parts, void (*fn)(void *arg, size_t part), void *arg,
                      unsigned want, bool team)
{
    struct par_job j = {.fn = fn, .arg = arg, .n_parts = n_parts, .team = team};
    atomic_init(&j.next, 0);
    atomic_init(&j.helpers, 0);
    atomic_init(&j.faulted, false);
    pthread_cond_init(&j.idle, NULL);
    par_lock();
    par_start_helpers(want);
    par_link(&j);
    if (n_parts - 1 >= par_nhelpers)
        pthread_cond_broadcast(&par_wake);
    else
        for (size_t i = 0; i + 1 < n_parts; i++)
            pthread_cond_signal(&par_wake);
    par_unlock();
    par_run_parts(&j);
    par_wait_spin(&j);
    par_lock();
    par_unlink(&j);
    j.waiting = true;
    while (atomic_load_explicit(&j.helpers, memory_order_relaxed) > 0)
        pthread_cond_wait(&j.idle, &par_mu);
    par_unlock();
    pthread_cond_destroy(&j.idle);
    if (atomic_load_explicit(&j.faulted, memory_order_relaxed))
        memfault_pass();
}

static void par_empty_part(void *arg, size_t part)
{
    (void)arg;
    (void)part;
}

static int par_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The cost of one hand-off and join on this host with `want` threads:
 * measured on first use (the median of PAR_PROBE_CALLS splits of empty
 * parts), then kept until the setting changes. */
static uint64_t par_handoff_ns(unsigned want)
{
    uint64_t c = atomic_load_explicit(&par_handoff_cost, memory_order_relaxed);
    if (c != 0)
        return c;
    pthread_mutex_lock(&par_probe_mu);
    c = atomic_load_explicit(&par_handoff_cost, memory_order_relaxed);
    if (c == 0) {
        uint64_t t[PAR_PROBE_CALLS];
        for (unsigned i = 0; i < PAR_PROBE_CALLS; i++) {
            uint64_t t0 = par_now_ns();
            par_split(want, par_empty_part, NULL, want, false);
            t[i] = par_now_ns() - t0;
        }
        qsort(t, PAR_PROBE_CALLS, sizeof t[0], par_cmp_u64);
        c = t[PAR_PROBE_CALLS / 2] > 0 ? t[PAR_PROBE_CALLS / 2] : 1;
        atomic_store_explicit(&par_handoff_cost, c, memory_order_relaxed);
        LOG_DEBUG("EMU", "a hand-off and join over %u threads costs %llu ns here", want,
                  (unsigned long long)c);
    }
    pthread_mutex_unlock(&par_probe_mu);
    return c;
}

/* Does splitting n_parts parts of ns each over `threads` threads save at
 * least PAR_PAYBACK hand-off costs? */
static bool par_pays(size_t n_parts, uint64_t ns, unsigned threads, unsigned want)
{
    size_t t = n_parts < threads ? n_parts : threads;
    double work = (double)ns * (double)n_parts;
    double saved = work - work / (double)t;
    return saved >= (double)PAR_PAYBACK * (double)par_handoff_ns(want);
}

/* The rule: split this call of site? The first two calls run inline (the
 * second timed: the first pays cold caches; *learn false for it);
 * until a split was timed, split when the hand-off cost says it pays;
 * then the way that was faster per part, the other one tried again after
 * PAR_EXPLORE calls times how many times slower it was (so the tries
 * cost at most about 1/PAR_EXPLORE of the time). */
static bool par_rule(struct par_site *site, size_t n_parts, unsigned threads, unsigned want,
                     bool *learn)
{
    uint64_t in = atomic_load_explicit(&site->inline_ns, memory_order_relaxed);
    uint64_t sp = atomic_load_explicit(&site->split_ns, memory_order_relaxed);
    uint64_t call = atomic_fetch_add_explicit(&site->calls, 1, memory_order_relaxed);
    *learn = call > 0; /* the first call warms the caches: not a fair time */
    if (in == 0)
        return false;
    if (sp == 0)
        return par_pays(n_parts, in, threads, want);
    bool split_wins = sp < in;
    uint64_t lose = split_wins ? in : sp, win = split_wins ? sp : in;
    uint64_t every = PAR_EXPLORE * (lose / win < PAR_EXPLORE_MAX ? lose / win : PAR_EXPLORE_MAX);
    return call % every == every - 1 ? !split_wins : split_wins;
}

void par_for(size_t n_parts, void (*fn)(void *arg, size_t part), void *arg)
{
    unsigned want = par_threads();
    unsigned busy = atomic_load_explicit(&par_busy, memory_order_relaxed);
    if (n_parts <= 1 || want <= 1 || par_in_part || busy >= want) {
        par_inline(n_parts, fn, arg);
        return;
    }
    struct par_site *site = par_site_of(fn);
    bool forced = atomic_load_explicit(&par_forced, memory_order_relaxed), learn = true;
    if (site != NULL && !forced &&
        !par_rule(site, n_parts, want - (busy > 0 ? busy - 1 : 0), want, &learn)) {
        if (learn)
            par_inline_timed(n_parts, fn, arg, site);
        else
            par_inline(n_parts, fn, arg);
        return;
    }
    atomic_fetch_add_explicit(&par_nhandoffs, 1, memory_order_relaxed);
    uint64_t t0 = par_now_ns();
    par_split(n_parts, fn, arg, want, false);
    if (site != NULL)
        par_learn(&site->split_ns, (par_now_ns() - t0) / n_parts);
}

unsigned par_team(size_t n, void (*fn)(void *arg, size_t part), void *arg)
{
    unsigned want = par_threads();
    unsigned busy = atomic_load_explicit(&par_busy, memory_order_relaxed);
    unsigned free_threads = want > busy ? want - busy : 0;
    if (busy > 0)
        free_threads++; /* the caller's own place */
    if (n > free_threads)
        n = free_threads;
    if (n <= 1 || par_in_part) {
        par_inline(n > 0 ? n : 1, fn, arg);
        return 1;
    }
    atomic_fetch_add_explicit(&par_nhandoffs, 1, memory_order_relaxed);
    par_split(n, fn, arg, want, true);
    return (unsigned)n;
}

bool par_may_split(void)
{
    unsigned want = par_threads();
    return want > 1 && !par_in_part &&
           atomic_load_explicit(&par_busy, memory_order_relaxed) < want;
}

void par_force_split(bool on)
{
    atomic_store_explicit(&par_forced, on, memory_order_relaxed);
}

unsigned long long par_handoffs(void)
{
    return atomic_load_explicit(&par_nhandoffs, memory_order_relaxed);
}

/* Stop every helper and, when setting is not NULL, change the setting in
 * the same critical section (so no helper of the old setting survives). */
static void par_stop(const unsigned *setting)
{
    pthread_t join[PAR_MAX_THREADS];
    par_lock();
    unsigned n = par_nhelpers;
    for (unsigned i = 0; i < n; i++)
        join[i] = par_helper[i];
    par_nhelpers = 0;
    par_gen++;
    if (setting != NULL) {
        par_setting = *setting;
        atomic_store_explicit(&par_resolved, par_resolve(*setting), memory_order_relaxed);
        atomic_store_explicit(&par_handoff_cost, 0, memory_order_relaxed); /* measured anew */
    }
    pthread_cond_broadcast(&par_wake);
    par_unlock();
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
