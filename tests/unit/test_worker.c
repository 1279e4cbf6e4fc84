/*
 * test_worker.c: worker threads with a job queue (devices/thread/worker.h):
 * worker_run on the worker thread; worker_run_here on the calling thread
 * when the worker is idle, behind the queue when it is not; jobs queued
 * during a caller's own run waiting for it, in order; worker_fini waiting
 * for a caller's run. The threads suite runs it under ThreadSanitizer.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/thread/worker.h"

/* What a job saw: its thread, and its place among the jobs that ran. */
struct probe {
    pthread_t thread;         /* where it ran */
    int order;                /* 1 + jobs that ended before it started */
    atomic_bool started;      /* it is running */
    atomic_bool release;      /* it may return (when hold) */
    bool hold;                /* wait for release before returning */
};

static atomic_int ended;  /* jobs that returned, in this test */

static NRT_STATUS probe_job(void *arg)
{
    struct probe *p = arg;
    p->thread = pthread_self();
    p->order = atomic_load(&ended) + 1;
    atomic_store(&p->started, true);
    while (p->hold && !atomic_load(&p->release))
        usleep(100);
    atomic_fetch_add(&ended, 1);
    return NRT_SUCCESS;
}

static void wait_started(struct probe *p)
{
    while (!atomic_load(&p->started))
        usleep(100);
}

/* The thread a job ran on, run by `run` on a fresh, idle worker. */
static pthread_t ran_on(NRT_STATUS (*run)(struct worker *, NRT_STATUS (*)(void *), void *))
{
    struct worker w;
    worker_init(&w);
    struct probe p = {.hold = false};
    assert_int_equal(run(&w, probe_job, &p), NRT_SUCCESS);
    worker_fini(&w);
    return p.thread;
}

/* worker_run: on the worker; worker_run_here with the worker idle: on the
 * caller. */
static void test_where_jobs_run(void **state)
{
    (void)state;
    assert_false(pthread_equal(ran_on(worker_run), pthread_self()));
    assert_true(pthread_equal(ran_on(worker_run_here), pthread_self()));
}

/* A caller running a job in another thread. */
struct here_arg {
    struct worker *w;
    struct probe *p;
};

static void *run_here_thread(void *arg)
{
    struct here_arg *h = arg;
    (void)worker_run_here(h->w, probe_job, h->p);
    return NULL;
}

/* A thread calling worker_run_here(h->w, probe_job, h->p). */
static pthread_t start_here(struct here_arg *h)
{
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, run_here_thread, h), 0);
    return t;
}

/* Post probe_job(p) to w as j (no on_done: collected by worker_wait). */
static void post_probe(struct worker *w, struct worker_job *j, struct probe *p)
{
    *j = (struct worker_job){probe_job, p, NULL, NRT_SUCCESS, false, NULL, 0};
    assert_true(worker_post(w, j));
}

/* A job posted while a caller runs one itself starts after it returns. */
static void test_posted_waits_for_caller(void **state)
{
    (void)state;
    atomic_store(&ended, 0);
    struct worker w;
    worker_init(&w);
    struct probe inl = {.hold = true}, posted = {.hold = false};
    struct here_arg h = {&w, &inl};
    pthread_t t = start_here(&h);
    wait_started(&inl);
    struct worker_job j;
    post_probe(&w, &j, &posted);
    usleep(20000);
    assert_false(atomic_load(&posted.started));
    atomic_store(&inl.release, true);
    assert_int_equal(worker_wait(&w, &j), NRT_SUCCESS);
    pthread_join(t, NULL);
    assert_true(pthread_equal(inl.thread, t));
    assert_int_equal(inl.order, 1);
    assert_int_equal(posted.order, 2);
    worker_fini(&w);
}

/* Busy worker: worker_run_here queues behind the running job and runs on
 * the worker. */
static void test_here_when_busy(void **state)
{
    (void)state;
    atomic_store(&ended, 0);
    struct worker w;
    worker_init(&w);
    struct probe first = {.hold = true}, second = {.hold = false};
    struct worker_job j;
    post_probe(&w, &j, &first);
    wait_started(&first);
    struct here_arg h = {&w, &second};
    pthread_t t = start_here(&h);
    usleep(20000);
    assert_false(atomic_load(&second.started));
    atomic_store(&first.release, true);
    pthread_join(t, NULL);
    assert_int_equal(worker_wait(&w, &j), NRT_SUCCESS);
    assert_true(pthread_equal(second.thread, first.thread));
    assert_false(pthread_equal(second.thread, t));
    assert_int_equal(second.order, 2);
    worker_fini(&w);
}

/* worker_fini from another thread waits for a caller's own run. */
struct fini_arg {
    struct worker *w;
    atomic_bool done;
};

static void *fini_thread(void *arg)
{
    struct fini_arg *f = arg;
    worker_fini(f->w);
    atomic_store(&f->done, true);
    return NULL;
}

static void test_fini_waits_for_caller(void **state)
{
    (void)state;
    struct worker w;
    worker_init(&w);
    struct probe inl = {.hold = true};
    struct here_arg h = {&w, &inl};
    pthread_t f, t = start_here(&h);
    wait_started(&inl);
    struct fini_arg fa = {.w = &w};
    atomic_init(&fa.done, false);
    assert_int_equal(pthread_create(&f, NULL, fini_thread, &fa), 0);
    usleep(20000);
    assert_false(atomic_load(&fa.done));
    atomic_store(&inl.release, true);
    pthread_join(t, NULL);
    pthread_join(f, NULL);
    assert_true(atomic_load(&fa.done));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_where_jobs_run),
        cmocka_unit_test(test_posted_waits_for_caller),
        cmocka_unit_test(test_here_when_busy),
        cmocka_unit_test(test_fini_waits_for_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
