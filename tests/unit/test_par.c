/*
 * test_par.c: the helper-thread pool of emu/core/par.h: every part runs
 * exactly once, nested calls run inline on their thread, calls while
 * every CPU is busy run inline, several callers at once, one thread
 * (parts in order on the caller) against several, shutdown and restart,
 * per-thread scratch rows, the split rule (small parts stay on the
 * caller, large ones go to helpers), memory faults of helpers handed back
 * to the caller (emu/core/memfault.h). The threads suite runs it under
 * ThreadSanitizer.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "emu/core/memfault.h"
#include "emu/core/par.h"

#define MANY 1000   /* parts of the big par_for calls */
#define CALLERS 4   /* threads calling par_for at once */
#define ROUNDS 200  /* par_for calls per caller */

/* Counts how often each part ran. */
struct count_job {
    atomic_uint runs[MANY]; /* runs of each part */
    size_t n;               /* parts */
};

static void count_part(void *arg, size_t part)
{
    struct count_job *j = arg;
    atomic_fetch_add(&j->runs[part], 1);
}

static void count_check(struct count_job *j)
{
    for (size_t p = 0; p < j->n; p++)
        assert_int_equal(atomic_load(&j->runs[p]), 1);
}

static void run_counted(size_t n)
{
    static struct count_job j;
    memset(&j, 0, sizeof j);
    j.n = n;
    par_for(n, count_part, &j);
    count_check(&j);
}

static void test_every_part_once(void **state)
{
    (void)state;
    unsigned counts[] = {1, 2, 3, 8};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        par_configure(counts[c]);
        assert_int_equal(par_threads(), counts[c]);
        run_counted(0);
        run_counted(1);
        run_counted(2);
        run_counted(MANY);
    }
    par_configure(0);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(par_threads(), cpus > 0 ? (unsigned)cpus : 1u);
    run_counted(MANY);
    par_configure(100000);
    assert_int_equal(par_threads(), PAR_MAX_THREADS);
    par_configure(0);
}

/* One thread: the parts run in order, on the caller. */
struct order_job {
    size_t seen[64];    /* part indices in the order they ran */
    size_t n_seen;      /* entries of seen */
    pthread_t caller;   /* the thread that called par_for */
    bool elsewhere;     /* a part ran on another thread */
};

static void order_part(void *arg, size_t part)
{
    struct order_job *j = arg;
    if (!pthread_equal(pthread_self(), j->caller))
        j->elsewhere = true;
    j->seen[j->n_seen++] = part;
}

static void test_one_thread_in_order(void **state)
{
    (void)state;
    par_configure(1);
    struct order_job j = {.caller = pthread_self()};
    par_for(64, order_part, &j);
    assert_false(j.elsewhere);
    assert_int_equal(j.n_seen, 64);
    for (size_t p = 0; p < 64; p++)
        assert_int_equal(j.seen[p], p);
    par_configure(0);
}

/* par_busy_enter: with as many busy threads as the pool may use, a
 * par_for runs every part on its caller, in order (parts long enough for
 * an idle helper to join otherwise); one fewer, and it may split again. */
struct busy_job {
    pthread_t caller;      /* the thread that called par_for */
    atomic_bool elsewhere; /* a part ran on another thread */
    size_t seen[64];       /* part indices in the order they ran on the caller */
    atomic_size_t n_seen;  /* entries of seen */
};

static void busy_part(void *arg, size_t part)
{
    struct busy_job *j = arg;
    if (!pthread_equal(pthread_self(), j->caller))
        atomic_store(&j->elsewhere, true);
    else
        j->seen[atomic_fetch_add(&j->n_seen, 1)] = part;
    volatile uint64_t x = part;
    for (int i = 0; i < 20000; i++)
        x = x * 6364136223846793005ull + 1;
}

static void test_busy_inline(void **state)
{
    (void)state;
    par_configure(4);
    run_counted(MANY); /* the helpers are started */
    for (int i = 0; i < 4; i++)
        par_busy_enter();
    static struct busy_job j;
    j.caller = pthread_self();
    atomic_init(&j.elsewhere, false);
    atomic_init(&j.n_seen, 0);
    par_for(64, busy_part, &j);
    assert_false(atomic_load(&j.elsewhere));
    assert_int_equal(atomic_load(&j.n_seen), 64);
    for (size_t p = 0; p < 64; p++)
        assert_int_equal(j.seen[p], p);
    for (int i = 0; i < 4; i++)
        par_busy_leave();
    run_counted(MANY);
    par_configure(0);
}

/* Every part runs exactly once, whatever the count of parts and threads,
 * with parts long enough for helpers to join. */
struct once_job {
    atomic_uint runs[MANY];    /* runs of each part */
};

static void once_part(void *arg, size_t part)
{
    struct once_job *j = arg;
    atomic_fetch_add(&j->runs[part], 1);
    volatile uint64_t x = part;
    for (int i = 0; i < 2000; i++) /* long enough for helpers to join */
        x = x * 6364136223846793005ull + 1;
}

static void test_each_part_once(void **state)
{
    (void)state;
    static struct once_job j;
    const unsigned counts[] = {1, 2, 3, 4};
    const size_t shapes[] = {2, 3, 4, 5, 10, 200, MANY};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        par_configure(counts[c]);
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            memset(&j, 0, sizeof j);
            par_for(shapes[s], once_part, &j);
            for (size_t p = 0; p < MANY; p++)
                assert_int_equal(atomic_load(&j.runs[p]), p < shapes[s] ? 1 : 0);
        }
    }
    par_configure(0);
}

/* A computation whose result is fixed by the part, whatever the thread. */
static void fill_part(void *arg, size_t part)
{
    uint64_t *out = arg;
    uint64_t x = part * 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    out[part] = x;
}

static void test_same_results_any_count(void **state)
{
    (void)state;
    static uint64_t one[MANY], many[MANY];
    par_configure(1);
    par_for(MANY, fill_part, one);
    par_configure(4);
    par_for(MANY, fill_part, many);
    assert_memory_equal(one, many, sizeof one);
    par_configure(0);
}

/* Nested: each outer part runs an inner par_for, inline on its thread. */
struct nest_job {
    atomic_uint inner_runs[8 * 16]; /* runs of each (outer, inner) pair */
    atomic_bool moved;              /* an inner part left its outer part's thread */
};

struct nest_inner {
    struct nest_job *job; /* the whole test */
    size_t outer;         /* the enclosing outer part */
    pthread_t thread;     /* the thread running it */
};

static void nest_inner_part(void *arg, size_t part)
{
    struct nest_inner *in = arg;
    if (!pthread_equal(pthread_self(), in->thread))
        atomic_store(&in->job->moved, true);
    atomic_fetch_add(&in->job->inner_runs[in->outer * 16 + part], 1);
}

static void nest_outer_part(void *arg, size_t part)
{
    struct nest_inner in = {.job = arg, .outer = part, .thread = pthread_self()};
    par_for(16, nest_inner_part, &in);
}

static void test_nested_inline(void **state)
{
    (void)state;
    par_configure(4);
    static struct nest_job j;
    memset(&j, 0, sizeof j);
    par_for(8, nest_outer_part, &j);
    for (size_t i = 0; i < 8 * 16; i++)
        assert_int_equal(atomic_load(&j.inner_runs[i]), 1);
    assert_false(atomic_load(&j.moved));
    par_configure(0);
}

/* Several callers at once, each with its own jobs. */
static void *caller_main(void *arg)
{
    atomic_uint *failures = arg;
    static _Thread_local struct count_job j;
    for (int r = 0; r < ROUNDS; r++) {
        size_t n = 1 + (size_t)(r % 37);
        memset(&j, 0, sizeof j);
        j.n = n;
        par_for(n, count_part, &j);
        for (size_t p = 0; p < n; p++)
            if (atomic_load(&j.runs[p]) != 1)
                atomic_fetch_add(failures, 1);
    }
    return NULL;
}

static void concurrent(unsigned threads)
{
    par_configure(threads);
    atomic_uint failures = 0;
    pthread_t t[CALLERS];
    for (int i = 0; i < CALLERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, caller_main, &failures), 0);
    for (int i = 0; i < CALLERS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(atomic_load(&failures), 0);
}

static void test_concurrent_callers(void **state)
{
    (void)state;
    concurrent(2);
    concurrent(3);
    concurrent(1);
    par_configure(0);
}

/* Shutdown while nothing runs, then par_for starts the helpers again. */
static void test_shutdown_restart(void **state)
{
    (void)state;
    par_configure(3);
    run_counted(MANY);
    par_shutdown();
    par_shutdown();
    run_counted(MANY);
    par_shutdown();
    par_configure(0);
}

/* Scratch rows: the same for one thread, distinct between threads. */
struct scratch_job {
    float *row[MANY];      /* scratch slot 1 as seen by each part */
    pthread_t thread[MANY];/* the thread each part ran on */
};

static void scratch_part(void *arg, size_t part)
{
    struct scratch_job *j = arg;
    float *row = par_scratch(1);
    row[0] = (float)part; /* a part may use its row freely */
    row[PAR_SCRATCH_ELEMS - 1] = (float)part;
    j->row[part] = row;
    j->thread[part] = pthread_self();
}

static void test_scratch_per_thread(void **state)
{
    (void)state;
    par_configure(3);
    static struct scratch_job j;
    par_for(MANY, scratch_part, &j);
    for (size_t p = 0; p < MANY; p++) {
        assert_non_null(j.row[p]);
        for (size_t q = 0; q < p; q++)
            assert_true((pthread_equal(j.thread[p], j.thread[q]) != 0) == (j.row[p] == j.row[q]));
    }
    assert_ptr_equal(par_scratch(0) + PAR_SCRATCH_ELEMS, par_scratch(1));
    assert_null(par_scratch(PAR_SCRATCH_SLOTS));
    par_shutdown();
    par_configure(0);
}

/* The split rule (force off): parts far smaller than a hand-off stay on
 * the caller, even with many threads configured (at most a first trial
 * and rare tries go to helpers: 200 calls, at most 5 splits); parts far
 * larger go to helpers once their time is learnt. */
static void tiny_part(void *arg, size_t part)
{
    atomic_uint *runs = arg;
    atomic_fetch_add(&runs[part], 1);
}

static void long_part(void *arg, size_t part)
{
    uint64_t *out = arg;
    uint64_t x = part;
    for (int i = 0; i < 2000000; i++) /* a few ms: far more than a hand-off */
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    out[part] = x;
}

static void test_rule(void **state)
{
    (void)state;
    par_force_split(false);
    par_configure(16);
    static atomic_uint runs[64];
    unsigned long long split = 0;
    /* A round of 200 calls: the warm-up, the rule's capped retries of the
     * slower way (about 1 in 64) and a preempted measurement now and then
     * split, never most calls. A host busy with other tests can preempt
     * many measurements of one round, so the rule gets three rounds to
     * show it. Not asserted under ASan or TSan, whose instrumentation of
     * the tiny part and of the hand-off distorts the timings the rule
     * compares (there it picks either way; the bits are checked all the
     * same). */
    for (int round = 0; round < 3; round++) {
        unsigned long long h0 = par_handoffs();
        for (int r = 0; r < 200; r++) {
            memset(runs, 0, sizeof runs);
            par_for(64, tiny_part, runs);
            for (size_t p = 0; p < 64; p++)
                assert_int_equal(atomic_load(&runs[p]), 1);
        }
        split = par_handoffs() - h0;
        if (split <= 12)
            break;
    }
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    assert_true(split <= 12);
#else
    (void)split;
#endif
    par_configure(2);
    static uint64_t one[8], two[8];
    par_for(8, long_part, one); /* warms up */
    par_for(8, long_part, one); /* learnt inline */
    unsigned long long h0 = par_handoffs();
    par_for(8, long_part, two);
    assert_true(par_handoffs() > h0);
    assert_memory_equal(one, two, sizeof one);
    par_force_split(true);
    par_configure(0);
}

/* A part that ran on a helper notes a memory fault there. */
struct fault_job {
    pthread_t caller;       /* the thread that called par_for */
    atomic_uint elsewhere;  /* parts that ran on a helper */
};

static void fault_part(void *arg, size_t part)
{
    (void)part;
    struct fault_job *j = arg;
    usleep(200);  /* long enough for the helpers to take parts */
    if (!pthread_equal(pthread_self(), j->caller)) {
        atomic_fetch_add(&j->elsewhere, 1);
        memfault_note();
    }
}

/* A fault a helper met in a part is the caller's after par_for (its flag
 * raised once, the process's count moved); without one, no flag. */
static void test_fault_handed_back(void **state)
{
    (void)state;
    par_configure(3);
    unsigned handed = 0;
    for (int round = 0; round < 20; round++) {
        struct fault_job j = {.caller = pthread_self()};
        uint64_t before = memfault_total();
        (void)memfault_take();
        par_for(8, fault_part, &j);
        unsigned n = atomic_load(&j.elsewhere);
        assert_int_equal(memfault_total() - before, n);
        assert_int_equal(memfault_take(), n > 0);
        assert_false(memfault_take());
        handed += n > 0;
    }
    assert_true(handed > 0);  /* helpers did take parts */
    par_configure(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_part_once),
        cmocka_unit_test(test_one_thread_in_order),
        cmocka_unit_test(test_busy_inline),
        cmocka_unit_test(test_each_part_once),
        cmocka_unit_test(test_same_results_any_count),
        cmocka_unit_test(test_nested_inline),
        cmocka_unit_test(test_concurrent_callers),
        cmocka_unit_test(test_shutdown_restart),
        cmocka_unit_test(test_scratch_per_thread),
        cmocka_unit_test(test_rule),
        cmocka_unit_test(test_fault_handed_back),
    };
    par_force_split(true); /* the pool's own tests: split whatever the rule says */
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    par_shutdown();
    return failed;
}
