/*
 * test_gate.c: unit tests of the compute gate (devices/gate): never more
 * threads inside than its limit, every thread gets in (arrival order, no
 * starvation), and a thread that leaves while it waits for others lets
 * them in even with a limit of one. In the 'threads' suite (TSan).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <pthread.h>

#include "devices/thread/gate.h"

#define GT_THREADS 8   /* threads per case */
#define GT_ROUNDS 200  /* entries per thread */

static struct gate gt_gate;        /* the gate under test */
static _Atomic uint32_t gt_inside; /* threads inside, as the test counts them */
static _Atomic uint32_t gt_peak;   /* most seen inside at once */
static _Atomic uint32_t gt_entries; /* entries over every thread */

static void *gt_enter_leave(void *arg)
{
    (void)arg;
    for (int r = 0; r < GT_ROUNDS; r++) {
        gate_enter(&gt_gate);
        uint32_t n = atomic_fetch_add(&gt_inside, 1) + 1;
        uint32_t p = atomic_load(&gt_peak);
        while (n > p && !atomic_compare_exchange_weak(&gt_peak, &p, n))
            ;
        atomic_fetch_add(&gt_entries, 1);
        atomic_fetch_sub(&gt_inside, 1);
        gate_leave(&gt_gate);
    }
    return NULL;
}

static void gt_run(uint32_t limit, void *(*fn)(void *))
{
    pthread_t th[GT_THREADS];
    gate_init(&gt_gate, limit);
    atomic_store(&gt_peak, 0);
    atomic_store(&gt_entries, 0);
    for (int i = 0; i < GT_THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, fn, NULL), 0);
    for (int i = 0; i < GT_THREADS; i++)
        pthread_join(th[i], NULL);
    gate_fini(&gt_gate);
}

static void test_limit(void **state)
{
    (void)state;
    for (uint32_t limit = 0; limit <= 3; limit++) {
        gt_run(limit, gt_enter_leave);
        assert_true(atomic_load(&gt_peak) <= (limit > 0 ? limit : 1));
        assert_int_equal(atomic_load(&gt_entries), GT_THREADS * GT_ROUNDS);
    }
}

/* A barrier of every thread inside the gate of one place: each leaves the
 * gate while it waits for the others, as a rank in a collective does. */
static pthread_mutex_t gt_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gt_cond = PTHREAD_COND_INITIALIZER;
static uint32_t gt_arrived;  /* threads at the barrier (gt_lock) */

static void *gt_barrier(void *arg)
{
    (void)arg;
    gate_enter(&gt_gate);
    gate_leave(&gt_gate);  /* waiting for the others: out of the gate */
    pthread_mutex_lock(&gt_lock);
    gt_arrived++;
    pthread_cond_broadcast(&gt_cond);
    while (gt_arrived < GT_THREADS)
        pthread_cond_wait(&gt_cond, &gt_lock);
    pthread_mutex_unlock(&gt_lock);
    gate_enter(&gt_gate);
    atomic_fetch_add(&gt_entries, 1);
    gate_leave(&gt_gate);
    return NULL;
}

static void test_wait_outside(void **state)
{
    (void)state;
    gt_arrived = 0;
    gt_run(1, gt_barrier);
    assert_int_equal(atomic_load(&gt_entries), GT_THREADS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_wait_outside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
