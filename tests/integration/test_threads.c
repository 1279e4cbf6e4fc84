/*
 * test_threads.c: the public API from several threads at once (meson suite
 * 'threads', also run under ThreadSanitizer):
 *  - 8 threads allocate, write, read, slice, copy, memset, batch and free
 *    tensors on VNCs of their own and on a VNC they all share, use private
 *    tensor sets and one shared set, write disjoint parts of one shared
 *    tensor, and check every byte they read;
 *  - threads keep calling while the main thread closes the runtime: every
 *    call either works or answers NRT_CLOSED;
 *  - threads that start and stop the runtime while others use it.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "it_common.h"

#define NTHREADS 8
#define ITERS 300
#define SHARED_VNC 0
#define PART 512

/* What every worker of the data test shares. */
struct shared {
    nrt_tensor_t *big;        /* NTHREADS * PART bytes, one part per thread */
    nrt_tensor_set_t *set;    /* names "t<tid>" (own) and "common" (all) */
    _Atomic int failures;     /* checks that failed (with a message) */
};

/* One worker's arguments. */
struct worker {
    int tid;                  /* 0 .. NTHREADS-1 */
    struct shared *sh;        /* shared objects */
};

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "thread check failed at line %d: ", __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            atomic_fetch_add(&w->sh->failures, 1);                              \
            return -1;                                                          \
        }                                                                       \
    } while (0)

#define CHECK_OK(call) CHECK((call) == NRT_SUCCESS, "%s", #call)

/* One iteration of the data test. */
static int data_iteration(struct worker *w, int it, nrt_tensor_set_t *own)
{
    int vnc = (it % 3 == 0) ? SHARED_VNC : 1 + w->tid;   /* 1..8 are private */
    size_t size = 64 + (size_t)((w->tid * 131 + it * 17) % 3000);
    uint32_t seed = (uint32_t)(w->tid * 100000 + it);
    uint8_t src[4096], got[4096];
    it_pattern(src, size, seed);

    nrt_tensor_t *a = NULL, *b = NULL, *h = NULL, *s = NULL;
    CHECK_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, size, "a", &a));
    CHECK_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, vnc, size, "b", &b));
    CHECK_OK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, size, "h", &h));
    CHECK_OK(nrt_tensor_write(a, src, 0, size));
    CHECK_OK(nrt_tensor_read(a, got, 0, size));
    CHECK(memcmp(src, got, size) == 0, "read back differs (tid %d it %d)", w->tid, it);
    /* Device to device on one VNC, then to host. */
    CHECK_OK(nrt_tensor_copy(a, 0, b, 0, size));
    CHECK_OK(nrt_tensor_copy(b, 0, h, 0, size));
    memset(got, 0, size);
    CHECK_OK(nrt_tensor_read(h, got, 0, size));
    CHECK(memcmp(src, got, size) == 0, "copy differs (tid %d it %d)", w->tid, it);
    /* A slice outliving its source. */
    CHECK_OK(nrt_tensor_allocate_slice(a, 32, size - 32, "s", &s));
    nrt_tensor_free(&a);
    CHECK_OK(nrt_tensor_read(s, got, 0, size - 32));
    CHECK(memcmp(src + 32, got, size - 32) == 0, "slice differs (tid %d it %d)", w->tid, it);
    /* memset and a batch. */
    CHECK_OK(nrt_tensor_memset(b, 0, w->tid, 16));
    uint8_t head[16], tail[16];
    nrt_tensor_batch_op_t ops[2] = {{0, 16, head}, {size - 16, 16, tail}};
    nrt_tensor_batch_t batch = {b, ops, 2};
    CHECK_OK(nrt_tensor_read_batch(&batch, 1, false));
    for (int i = 0; i < 16; i++)
        CHECK(head[i] == (uint8_t)w->tid && tail[i] == src[size - 16 + i], "batch differs");
    /* Queries. */
    CHECK(nrt_tensor_get_size(s) == size - 32, "slice size");
    nrt_tensor_device_allocation_info_t info;
    CHECK_OK(nrt_tensor_get_device_allocation_info(b, &info));
    nrt_vnc_memory_stats_t st;
    size_t n;
    CHECK_OK(nrt_get_vnc_memory_stats((uint32_t)vnc, &st, sizeof st, &n));
    CHECK(st.bytes_used >= 2 * size, "stats too low: %zu", st.bytes_used);
    /* Sets: the private one, and the shared one under a private name. */
    char name[16];
    snprintf(name, sizeof name, "t%d", w->tid);
    nrt_tensor_t *g = NULL;
    CHECK_OK(nrt_add_tensor_to_tensor_set(own, "b", b));
    CHECK_OK(nrt_get_tensor_from_tensor_set(own, "b", &g));
    CHECK(g == b, "own set returned another tensor");
    CHECK_OK(nrt_add_tensor_to_tensor_set(w->sh->set, name, b));
    CHECK_OK(nrt_get_tensor_from_tensor_set(w->sh->set, name, &g));
    CHECK(g == b, "shared set returned another tensor");
    /* "common" is replaced by everyone; whatever is found is only queried.
     * (Reading its bytes would race, at the user level, with the owner
     * writing them: a freed tensor's address may come back as a new one.) */
    CHECK_OK(nrt_add_tensor_to_tensor_set(w->sh->set, "common", h));
    NRT_STATUS cs = nrt_get_tensor_from_tensor_set(w->sh->set, "common", &g);
    CHECK(cs == NRT_SUCCESS || cs == NRT_INVALID, "common: %d", (int)cs);
    if (cs == NRT_SUCCESS)
        CHECK(nrt_tensor_get_size(g) < 4096, "common size");
    /* This thread's part of the shared tensor. */
    uint8_t part[PART];
    it_pattern(part, PART, seed ^ 0x5555);
    CHECK_OK(nrt_tensor_write(w->sh->big, part, (size_t)w->tid * PART, PART));
    CHECK_OK(nrt_tensor_read(w->sh->big, got, (size_t)w->tid * PART, PART));
    CHECK(memcmp(part, got, PART) == 0, "shared tensor part differs (tid %d)", w->tid);

    nrt_tensor_free(&b);
    nrt_tensor_free(&h);
    nrt_tensor_free(&s);
    CHECK(b == NULL && h == NULL && s == NULL, "free did not clear");
    return 0;
}

static void *data_worker(void *arg)
{
    struct worker *w = arg;
    nrt_tensor_set_t *own = NULL;
    if (nrt_allocate_tensor_set(&own) != NRT_SUCCESS) {
        atomic_fetch_add(&w->sh->failures, 1);
        return NULL;
    }
    for (int it = 0; it < ITERS; it++)
        if (data_iteration(w, it, own) != 0)
            break;
    nrt_destroy_tensor_set(&own);
    return NULL;
}

static void test_data_threads(void **state)
{
    (void)state;
    struct shared sh = {0};
    sh.big = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, SHARED_VNC, NTHREADS * PART, "big");
    assert_int_equal(nrt_allocate_tensor_set(&sh.set), NRT_SUCCESS);
    pthread_t th[NTHREADS];
    struct worker w[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){i, &sh};
        assert_int_equal(pthread_create(&th[i], NULL, data_worker, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&sh.failures), 0);
    /* Everything the workers allocated is gone again. */
    for (uint32_t v = 1; v <= NTHREADS; v++) {
        nrt_vnc_memory_stats_t st;
        size_t n;
        assert_int_equal(nrt_get_vnc_memory_stats(v, &st, sizeof st, &n), NRT_SUCCESS);
        assert_int_equal(st.bytes_used, 0);
    }
    nrt_tensor_free(&sh.big);
    nrt_vnc_memory_stats_t st;
    size_t n;
    assert_int_equal(nrt_get_vnc_memory_stats(SHARED_VNC, &st, sizeof st, &n), NRT_SUCCESS);
    assert_int_equal(st.bytes_used, 0);
    nrt_destroy_tensor_set(&sh.set);
}

/* ---- calls racing with nrt_close ---------------------------------------- */

/* Shared state of the close race. */
struct race {
    _Atomic int started;      /* workers that made their first call */
    _Atomic int bad;          /* unexpected statuses */
    _Atomic int saw_closed;   /* workers that saw NRT_CLOSED */
};

static int race_ok(NRT_STATUS s)
{
    return s == NRT_SUCCESS || s == NRT_CLOSED || s == NRT_INVALID;
}

static void *race_worker(void *arg)
{
    struct race *r = arg;
    atomic_fetch_add(&r->started, 1);
    uint8_t buf[256];
    memset(buf, 1, sizeof buf);
    for (long i = 0; i < 1000000; i++) {
        nrt_tensor_t *t = NULL;
        NRT_STATUS s = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)(i % 4), 256, "r", &t);
        if (s == NRT_CLOSED) {
            atomic_fetch_add(&r->saw_closed, 1);
            break;
        }
        if (s != NRT_SUCCESS) {
            atomic_fetch_add(&r->bad, 1);
            break;
        }
        /* Between here and the free the runtime may close under us. */
        if (!race_ok(nrt_tensor_write(t, buf, 0, sizeof buf)) ||
            !race_ok(nrt_tensor_read(t, buf, 0, sizeof buf)) ||
            !race_ok(nrt_tensor_memset(t, 0, 2, 16)))
            atomic_fetch_add(&r->bad, 1);
        (void)nrt_tensor_get_size(t);
        (void)nrt_tensor_get_va(t);
        nrt_tensor_free(&t);
        if (t != NULL)
            atomic_fetch_add(&r->bad, 1);
    }
    return NULL;
}

static void test_close_while_busy(void **state)
{
    (void)state;
    struct race r = {0};
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, race_worker, &r), 0);
    while (atomic_load(&r.started) < NTHREADS)
        sched_yield();
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    nrt_close();
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&r.bad), 0);
    assert_int_equal(atomic_load(&r.saw_closed), NTHREADS);
}

/* ---- close while a thread waits for an output --------------------------- */

/* One waiter: how long it may wait, and what it got. */
struct waiter {
    nrt_tensor_t *t;      /* tensor never completed */
    int64_t timeout_us;   /* negative: forever */
    NRT_STATUS got;       /* its answer */
};

static void *wait_worker(void *arg)
{
    struct waiter *w = arg;
    w->got = nrt_tensor_check_output_completion(w->t, w->timeout_us, 1);
    return NULL;
}

/* A waiter (even an unbounded one) must not keep nrt_close, and with it
 * every other thread, blocked: close ends the wait with NRT_CLOSED. */
static void test_close_ends_waits(void **state)
{
    (void)state;
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "never written");
    struct waiter w[2] = {{t, -1, NRT_SUCCESS}, {t, 60 * 1000 * 1000, NRT_SUCCESS}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, wait_worker, &w[i]), 0);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    nrt_close();
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(secs < 5.0);
    assert_int_equal(w[0].got, NRT_CLOSED);
    assert_int_equal(w[1].got, NRT_CLOSED);
}

/* ---- init and close from several threads -------------------------------- */

static void *churn_worker(void *arg)
{
    _Atomic int *bad = arg;
    uint8_t buf[64] = {0};
    for (int i = 0; i < 200; i++) {
        if (i % 50 == 7) {
            NRT_STATUS s = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
            if (s != NRT_SUCCESS)
                atomic_fetch_add(bad, 1);
        }
        if (i % 50 == 31)
            nrt_close();
        nrt_tensor_t *t = NULL;
        NRT_STATUS s = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "c", &t);
        if (s == NRT_SUCCESS) {
            /* Closed and reopened meanwhile: the tensor may be gone. */
            NRT_STATUS ws = nrt_tensor_write(t, buf, 0, sizeof buf);
            if (!race_ok(ws))
                atomic_fetch_add(bad, 1);
            nrt_tensor_free(&t);
        } else if (s != NRT_CLOSED) {
            atomic_fetch_add(bad, 1);
        }
        uint32_t n;
        if (nrt_get_visible_vnc_count(&n) != NRT_SUCCESS || n != 64)
            atomic_fetch_add(bad, 1);
        nrt_tensor_set_t *set = NULL;
        if (nrt_allocate_tensor_set(&set) != NRT_SUCCESS)
            atomic_fetch_add(bad, 1);
        nrt_destroy_tensor_set(&set);
    }
    return NULL;
}

static void test_init_close_churn(void **state)
{
    (void)state;
    _Atomic int bad = 0;
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&th[i], NULL, churn_worker, &bad), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&bad), 0);
}

int main(void)
{
    /* Thousands of expected NRT_CLOSED / NRT_INVALID answers: keep quiet. */
    setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_data_threads, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_close_while_busy, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_close_ends_waits, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_init_close_churn, it_setup_default, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
