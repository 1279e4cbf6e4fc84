/*
 * test_jobq.c: the queue-plus-thread hand-off (emu/jobq.h): jobs run on
 * the queue's thread in the order queued; the thread sleeps while the
 * queue is empty and a put wakes it; a bounded batch queue blocks puts
 * while full; a batch queue takes every waiting job at once; drain waits for the
 * last job, fini runs what is queued before it joins; jobs from many
 * producers keep each producer's order; borrowing, cancelling, waiting
 * for a job with a time limit, failure, and the poll before sleeping. The
 * threads suite runs it under ThreadSanitizer.
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

#include "emu/jobq.h"

#define MAX_RAN 4096

/* One job: a number, and whether it should wait for a release. */
struct job {
    void *next;           /* the queue's link */
    int id;               /* what it records */
    bool hold;            /* wait for ctx.release before returning */
    bool done;            /* set by the queue when run asks */
    uint32_t spin_ns;     /* the poll it asks for after it */
};

/* What the jobs of one queue saw. */
struct ctx {
    struct jobq q;
    int ran[MAX_RAN];          /* ids in the order run (the thread's only) */
    atomic_int n;              /* entries of ran */
    atomic_int batches;        /* run calls */
    atomic_bool started;       /* a held job is running */
    atomic_bool release;       /* held jobs may return */
    pthread_t thread;          /* where the last job ran */
    atomic_int fail_at;        /* id whose run fails (jobq_fail), -1: none */
};

static void hold_if_asked(struct ctx *c, const struct job *j)
{
    if (!j->hold)
        return;
    atomic_store(&c->started, true);
    while (!atomic_load(&c->release))
        usleep(100);
}

/* run: records every job of the batch (one job unless batch). */
static void record_run(void *arg, void *first, struct jobq_after *after)
{
    struct ctx *c = arg;
    atomic_fetch_add(&c->batches, 1);
    c->thread = pthread_self();
    for (struct job *j = first; j != NULL; j = c->q.spec.batch ? j->next : NULL) {
        hold_if_asked(c, j);
        int k = atomic_load(&c->n);
        if (k < MAX_RAN)
            c->ran[k] = j->id;
        atomic_store(&c->n, k + 1);
        if (j->id == atomic_load(&c->fail_at))
            jobq_fail(&c->q);
        after->spin_ns = j->spin_ns;
        if (!c->q.spec.batch)
            after->done = &j->done;
    }
}

static void ctx_init(struct ctx *c, bool batch, uint64_t cap,
                     bool (*poll)(const _Atomic uint32_t *, uint32_t, uint64_t))
{
    *c = (struct ctx){.n = 0};
    atomic_init(&c->fail_at, -1);
    const struct jobq_spec spec = {
        .link = JOBQ_LINK(struct job, next),
        .run = record_run,
        .ctx = c,
        .batch = batch,
        .cap = cap,
        .poll = poll,
    };
    jobq_init(&c->q, &spec);
}

static void wait_started(struct ctx *c)
{
    while (!atomic_load(&c->started))
        usleep(100);
}

/* Jobs run in the order queued, on the queue's own thread, and a job
 * queued into an idle queue wakes the sleeping thread. */
static void test_order(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, false, 0, NULL);
    struct job j[100];
    for (int i = 0; i < 100; i++) {
        j[i] = (struct job){.id = i};
        assert_true(jobq_put(&c.q, &j[i], 0));
    }
    jobq_wait_done(&c.q, &j[99].done);
    usleep(20000);  /* the thread now sleeps on an empty queue */
    struct job late = {.id = 100};
    assert_true(jobq_put(&c.q, &late, 0));
    jobq_wait_done(&c.q, &late.done);
    assert_int_equal(atomic_load(&c.n), 101);
    for (int i = 0; i <= 100; i++)
        assert_int_equal(c.ran[i], i);
    assert_false(pthread_equal(c.thread, pthread_self()));
    jobq_fini(&c.q);
}

/* A bounded batch queue: a put that would pass the bound waits until the
 * thread takes the waiting jobs, all at once; one job always goes into an
 * empty queue, whatever it weighs. */
struct putter {
    struct ctx *c;
    struct job *j;
    uint64_t weight;
    atomic_bool returned;
};

static void *put_thread(void *arg)
{
    struct putter *p = arg;
    assert_true(jobq_put(&p->c->q, p->j, p->weight));
    atomic_store(&p->returned, true);
    return NULL;
}

static void test_full_blocks(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, true, 10, NULL);
    struct job first = {.id = 0, .hold = true}, a = {.id = 1}, b = {.id = 2}, d = {.id = 3};
    assert_true(jobq_put(&c.q, &first, 50));  /* heavier than the bound: taken anyway */
    wait_started(&c);                         /* the thread holds it */
    assert_true(jobq_put(&c.q, &a, 6));
    struct putter p = {.c = &c, .j = &b, .weight = 6};
    atomic_init(&p.returned, false);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, put_thread, &p), 0);
    usleep(20000);
    assert_false(atomic_load(&p.returned));   /* 6 + 6 > 10: full */
    atomic_store(&c.release, true);           /* the thread takes a's batch: room */
    pthread_join(t, NULL);
    assert_true(atomic_load(&p.returned));
    assert_true(jobq_put(&c.q, &d, 4));       /* 6 + 4 fits beside b */
    assert_true(jobq_drain(&c.q));
    assert_int_equal(atomic_load(&c.n), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(c.ran[i], i);
    jobq_fini(&c.q);
}

/* A batch queue's thread takes every job that waits at once. */
static void test_batch_takes_all(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, true, 0, NULL);
    struct job held = {.id = 0, .hold = true}, j[5];
    assert_true(jobq_put(&c.q, &held, 0));
    wait_started(&c);
    for (int i = 0; i < 5; i++) {
        j[i] = (struct job){.id = 1 + i};
        assert_true(jobq_put(&c.q, &j[i], 0));
    }
    atomic_store(&c.release, true);
    assert_true(jobq_drain(&c.q));
    assert_int_equal(atomic_load(&c.batches), 2);
    assert_int_equal(atomic_load(&c.n), 6);
    for (int i = 0; i < 6; i++)
        assert_int_equal(c.ran[i], i);
    jobq_fini(&c.q);
}

/* Drain waits for the running job; fini runs what is queued, then joins. */
static void test_drain_and_fini(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, false, 0, NULL);
    struct job held = {.id = 0, .hold = true}, rest[8];
    assert_true(jobq_put(&c.q, &held, 0));
    wait_started(&c);
    for (int i = 0; i < 8; i++) {
        rest[i] = (struct job){.id = 1 + i};
        assert_true(jobq_put(&c.q, &rest[i], 0));
    }
    atomic_store(&c.release, true);
    assert_true(jobq_drain(&c.q));
    assert_int_equal(atomic_load(&c.n), 9);
    struct job more[8];
    for (int i = 0; i < 8; i++) {
        more[i] = (struct job){.id = 9 + i};
        assert_true(jobq_put(&c.q, &more[i], 0));
    }
    jobq_fini(&c.q);  /* runs the eight, then joins */
    assert_int_equal(atomic_load(&c.n), 17);
    for (int i = 0; i < 17; i++)
        assert_int_equal(c.ran[i], i);
}

/* Many producers at once: every job runs once, each producer's in its order. */
enum { PRODUCERS = 8, PER_PRODUCER = 200 };

struct producer {
    struct ctx *c;
    int who;
    struct job jobs[PER_PRODUCER];
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (int i = 0; i < PER_PRODUCER; i++) {
        p->jobs[i] = (struct job){.id = p->who * PER_PRODUCER + i};
        assert_true(jobq_put(&p->c->q, &p->jobs[i], 1));
    }
    return NULL;
}

static void many_producers(bool batch)
{
    static struct ctx c;
    static struct producer p[PRODUCERS];
    ctx_init(&c, batch, batch ? 16 : 0, NULL);
    pthread_t t[PRODUCERS];
    for (int k = 0; k < PRODUCERS; k++) {
        p[k].c = &c;
        p[k].who = k;
        assert_int_equal(pthread_create(&t[k], NULL, produce, &p[k]), 0);
    }
    for (int k = 0; k < PRODUCERS; k++)
        pthread_join(t[k], NULL);
    assert_true(jobq_drain(&c.q));
    assert_int_equal(atomic_load(&c.n), PRODUCERS * PER_PRODUCER);
    int last[PRODUCERS];
    for (int k = 0; k < PRODUCERS; k++)
        last[k] = -1;
    for (int i = 0; i < PRODUCERS * PER_PRODUCER; i++) {
        int who = c.ran[i] / PER_PRODUCER, seq = c.ran[i] % PER_PRODUCER;
        assert_int_equal(seq, last[who] + 1);
        last[who] = seq;
    }
    jobq_fini(&c.q);
}

static void test_many_producers(void **state)
{
    (void)state;
    many_producers(false);
    many_producers(true);
}

/* Borrowing: only while the thread is idle and nothing waits; a job
 * queued meanwhile waits for the borrow to end. */
static void test_borrow(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, false, 0, NULL);
    assert_true(jobq_borrow(&c.q));
    assert_false(jobq_borrow(&c.q));  /* one at a time */
    struct job j = {.id = 1};
    assert_true(jobq_put(&c.q, &j, 0));
    usleep(20000);
    assert_int_equal(atomic_load(&c.n), 0);
    jobq_unborrow(&c.q);
    jobq_wait_done(&c.q, &j.done);
    struct job held = {.id = 2, .hold = true};
    assert_true(jobq_put(&c.q, &held, 0));
    wait_started(&c);
    assert_false(jobq_borrow(&c.q));  /* busy */
    atomic_store(&c.release, true);
    jobq_wait_done(&c.q, &held.done);
    jobq_fini(&c.q);
}

/* A job not taken yet can be cancelled, and never runs; one that waits
 * too long for its turn is seen not done. */
static void test_cancel_and_timeout(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, false, 0, NULL);
    struct job held = {.id = 0, .hold = true}, j = {.id = 1}, k = {.id = 2};
    assert_true(jobq_put(&c.q, &held, 0));
    wait_started(&c);
    assert_true(jobq_put(&c.q, &j, 0));
    assert_true(jobq_put(&c.q, &k, 0));
    assert_false(jobq_wait_done_for(&c.q, &j.done, 2000000));
    assert_true(jobq_cancel(&c.q, &j));
    assert_false(jobq_cancel(&c.q, &j));
    atomic_store(&c.release, true);
    assert_true(jobq_wait_done_for(&c.q, &k.done, 10000000000ull));
    assert_false(jobq_cancel(&c.q, &k));  /* ran already */
    jobq_fini(&c.q);
    assert_int_equal(atomic_load(&c.n), 2);
    assert_int_equal(c.ran[0], 0);
    assert_int_equal(c.ran[1], 2);
    assert_false(j.done);
}

/* Once a job fails, puts are refused and drain says so; what was queued
 * still reaches run. */
static void test_fail(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, false, 0, NULL);
    atomic_store(&c.fail_at, 0);
    struct job held = {.id = 0, .hold = true}, after = {.id = 1}, refused = {.id = 2};
    assert_true(jobq_put(&c.q, &held, 0));
    wait_started(&c);
    assert_true(jobq_put(&c.q, &after, 0));
    atomic_store(&c.release, true);
    jobq_wait_done(&c.q, &after.done);
    assert_false(jobq_drain(&c.q));
    assert_false(jobq_put(&c.q, &refused, 0));
    jobq_fini(&c.q);
    assert_int_equal(atomic_load(&c.n), 2);
}

/* The poll before sleeping: a job asking for one makes the thread call
 * spec.poll with the bell's value, for the window asked. */
static atomic_int polls;
static atomic_ullong polled_ns;

static bool count_poll(const _Atomic uint32_t *bell, uint32_t seen, uint64_t ns)
{
    (void)bell;
    (void)seen;
    atomic_store(&polled_ns, ns);   /* before the count the test waits on */
    atomic_fetch_add(&polls, 1);
    return false;
}

static void test_poll(void **state)
{
    (void)state;
    static struct ctx c;
    ctx_init(&c, false, 0, count_poll);
    struct job quiet = {.id = 0}, asks = {.id = 1, .spin_ns = 12345};
    assert_true(jobq_put(&c.q, &quiet, 0));
    jobq_wait_done(&c.q, &quiet.done);
    usleep(20000);
    assert_int_equal(atomic_load(&polls), 0);
    assert_true(jobq_put(&c.q, &asks, 0));
    jobq_wait_done(&c.q, &asks.done);
    while (atomic_load(&polls) == 0)
        usleep(100);
    assert_int_equal(atomic_load(&polled_ns), 12345);
    assert_false(jobq_is_self(&c.q));
    jobq_fini(&c.q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_full_blocks),
        cmocka_unit_test(test_batch_takes_all),
        cmocka_unit_test(test_drain_and_fini),
        cmocka_unit_test(test_many_producers),
        cmocka_unit_test(test_borrow),
        cmocka_unit_test(test_cancel_and_timeout),
        cmocka_unit_test(test_fail),
        cmocka_unit_test(test_poll),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
