/*
 * test_async.c: the nrta_* asynchronous API through the public headers:
 * executions on the COMPUTE queue give the bits nrt_execute gives,
 * queues complete in order, tensor reads/writes/copies are queued the
 * same way, completion descriptors work with epoll, error trackers
 * collect failures with their sequence numbers, queue depth limits,
 * bad input, the exec callback and drain, a callback that calls back into
 * the runtime (execute, drain, close), nrt_close with work in
 * flight, and the busy-poll window of the queues (TRNEMU_ASYNC_SPIN_US):
 * the same results whatever it is, a completion handle that does not
 * wait past it, nrt_close while a queue thread polls.
 */
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "it_common.h"
#include "nrt/nrt_async.h"
#include "trnemu/trnemu.h"

enum { N = 128 * 512, BYTES = N * 4 };

static void *neff_add;
static size_t neff_add_size;

/* The add example on one VNC: tensors a, b -> c and their sets. */
struct add_io {
    nrt_model_t *m;              /* the loaded model */
    nrt_tensor_t *t[3];          /* a, b, c */
    nrt_tensor_set_t *in, *out;  /* {a, b} and {c} */
};

static void add_make(struct add_io *io, int vnc)
{
    const char *names[3] = {"a", "b", "c"};
    assert_int_equal(nrt_load(neff_add, neff_add_size, vnc, -1, &io->m), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&io->in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&io->out), NRT_SUCCESS);
    for (int k = 0; k < 3; k++) {
        io->t[k] = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, vnc, BYTES, names[k]);
        assert_int_equal(nrt_add_tensor_to_tensor_set(k < 2 ? io->in : io->out, names[k],
                                                      io->t[k]), NRT_SUCCESS);
    }
}

static void add_free(struct add_io *io)
{
    for (int k = 0; k < 3; k++)
        nrt_tensor_free(&io->t[k]);
    nrt_destroy_tensor_set(&io->in);
    nrt_destroy_tensor_set(&io->out);
    assert_int_equal(nrt_unload(io->m), NRT_SUCCESS);
}

static void fill(float *x, int seed)
{
    for (int i = 0; i < N; i++)
        x[i] = (float)((i * 7 + seed) % 1000) * 0.37f - (float)seed;
}

/* Poll until seq completes. */
static void wait_seq(nrta_seq_t seq)
{
    bool done = false;
    for (int i = 0; i < 200000 && !done; i++) {
        assert_int_equal(nrta_is_completed(seq, &done), NRT_SUCCESS);
        if (!done)
            usleep(50);
    }
    assert_true(done);
}

static int setup(void **state)
{
    (void)state;
    it_env_clear();
    unsetenv("TRNEMU_ASYNC_QUEUE_DEPTH");
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    nrt_close();
    unsetenv("TRNEMU_ASYNC_QUEUE_DEPTH");
    unsetenv("TRNEMU_COLL_TIMEOUT");
    unsetenv("TRNEMU_ASYNC_SPIN_US");
    return 0;
}

/* Writes, executions and reads on queues, against nrt_execute's bits. */
static void test_matches_sync(void **state)
{
    (void)state;
    struct add_io io;
    add_make(&io, 0);
    float *a = malloc(BYTES), *b = malloc(BYTES), *want = malloc(BYTES), *got = malloc(BYTES);
    for (int it = 0; it < 4; it++) {
        fill(a, it);
        fill(b, 100 + it);
        assert_int_equal(nrt_tensor_write(io.t[0], a, 0, BYTES), NRT_SUCCESS);
        assert_int_equal(nrt_tensor_write(io.t[1], b, 0, BYTES), NRT_SUCCESS);
        assert_int_equal(nrt_execute(io.m, io.in, io.out), NRT_SUCCESS);
        assert_int_equal(nrt_tensor_read(io.t[2], want, 0, BYTES), NRT_SUCCESS);
        assert_int_equal(nrt_tensor_memset(io.t[2], 0, 0, BYTES), NRT_SUCCESS);

        nrta_seq_t sw[2], se, sr;
        assert_int_equal(nrta_tensor_write(io.t[0], a, 0, BYTES, 0, NULL, &sw[0]), NRT_SUCCESS);
        assert_int_equal(nrta_tensor_write(io.t[1], b, 0, BYTES, 0, NULL, &sw[1]), NRT_SUCCESS);
        assert_true(NRTA_SEQ_GET_SEQ_NUM(sw[1]) == NRTA_SEQ_GET_SEQ_NUM(sw[0]) + 1);
        wait_seq(sw[1]);  /* same queue: in order, so sw[0] is done too */
        bool done = false;
        assert_int_equal(nrta_is_completed(sw[0], &done), NRT_SUCCESS);
        assert_true(done);
        assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, 0, NULL, &se), NRT_SUCCESS);
        wait_seq(se);
        memset(got, 0, BYTES);
        assert_int_equal(nrta_tensor_read(got, io.t[2], 0, BYTES, 1, NULL, &sr), NRT_SUCCESS);
        wait_seq(sr);
        assert_memory_equal(got, want, BYTES);
        nrta_seq_t last;
        assert_int_equal(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &last), NRT_SUCCESS);
        assert_true(last == se);
    }
    /* Copy on the TENSOR_OP unit: c -> a, then read a back. */
    nrta_seq_t sc;
    assert_int_equal(nrta_tensor_copy(io.t[2], 0, io.t[0], 0, BYTES, 0, NULL, &sc), NRT_SUCCESS);
    wait_seq(sc);
    assert_int_equal(nrt_tensor_read(io.t[0], got, 0, BYTES), NRT_SUCCESS);
    assert_memory_equal(got, want, BYTES);
    free(a), free(b), free(want), free(got);
    add_free(&io);
}

/* Many executions queued at once complete in order; epoll sees the last. */
static void test_epoll_and_order(void **state)
{
    (void)state;
    struct add_io io;
    add_make(&io, 0);
    enum { K = 16 };
    nrta_seq_t seq[K];
    for (int i = 0; i < K; i++)
        assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, 0, NULL, &seq[i]),
                         NRT_SUCCESS);
    for (int i = 1; i < K; i++)
        assert_true(seq[i] == seq[i - 1] + 1);
    int fd = -1;
    assert_int_equal(nrta_get_completion_handle(seq[K - 1], &fd), NRT_SUCCESS);
    int ep = epoll_create1(0);
    assert_true(ep >= 0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 42};
    assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
    struct epoll_event got;
    int n = epoll_wait(ep, &got, 1, 60000);
    assert_int_equal(n, 1);
    assert_true(got.data.u64 == 42);
    for (int i = 0; i < K; i++) {
        bool done = false;
        assert_int_equal(nrta_is_completed(seq[i], &done), NRT_SUCCESS);
        assert_true(done);
    }
    close(ep);
    close(fd);
    /* A handle for a request already complete is readable at once. */
    assert_int_equal(nrta_get_completion_handle(seq[0], &fd), NRT_SUCCESS);
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 1);
    close(fd);
    add_free(&io);
}

/* Runtime failures land in the tracker with their sequence numbers. */
static void test_error_tracker(void **state)
{
    (void)state;
    /* log(-1) is NaN: the execution completes with NRT_EXEC_COMPLETED_WITH_NUM_ERR. */
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    assert_int_equal(trnemu_kernel_create("nan", &k), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    const char *lines[] = {
        "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 src=hbm:x[[4,128], 0, [1,4]]:f32 signal=s0+=1",
        ("act.activation dst=sbuf[0:128, 16, [1,4]]:f32 data=sbuf[0:128, 0, [1,4]]:f32 "
         "func=log wait=s0>=1 signal=s1+=1"),
        "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:f32 src=sbuf[0:128, 16, [1,4]]:f32 wait=s1>=1",
    };
    for (int i = 0; i < 3; i++)
        assert_int_equal(trnemu_kernel_append(k, lines[i]), NRT_SUCCESS);
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(trnemu_kernel_write(k, &bytes, &size), NRT_SUCCESS);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(bytes, size, 0, -1, &m), NRT_SUCCESS);
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    nrt_tensor_t *x = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2048, "x");
    nrt_tensor_t *y = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2048, "y");
    nrt_tensor_set_t *in, *out;
    assert_int_equal(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(in, "x", x), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(out, "y", y), NRT_SUCCESS);
    float v[512];
    nrta_error_tracker_t *trk = NULL;
    assert_int_equal(nrta_error_tracker_create(0, &trk), NRT_SUCCESS);
    nrta_seq_t s[3], sw;
    for (int i = 0; i < 512; i++)
        v[i] = 2.0f;
    assert_int_equal(nrta_tensor_write(x, v, 0, sizeof v, 0, trk, &sw), NRT_SUCCESS);
    wait_seq(sw);
    assert_int_equal(nrta_execute_schedule(m, in, out, 0, trk, &s[0]), NRT_SUCCESS);
    wait_seq(s[0]);
    for (int i = 0; i < 512; i++)
        v[i] = -1.0f;
    assert_int_equal(nrt_tensor_write(x, v, 0, sizeof v), NRT_SUCCESS);
    assert_int_equal(nrta_execute_schedule(m, in, out, 0, trk, &s[1]), NRT_SUCCESS);
    assert_int_equal(nrta_execute_schedule(m, in, out, 0, trk, &s[2]), NRT_SUCCESS);
    wait_seq(s[2]);
    const nrta_error_t *list = NULL;
    size_t n = 0;
    assert_int_equal(nrta_error_tracker_get_list(trk, &list, &n), NRT_SUCCESS);
    assert_int_equal(n, 2);
    assert_true(list[0].seq_id == s[1] && list[1].seq_id == s[2]);
    assert_int_equal(list[0].error_code, NRT_EXEC_COMPLETED_WITH_NUM_ERR);
    nrta_error_tracker_destroy(trk);
    /* A destroyed tracker is refused, not used. */
    assert_int_equal(nrta_error_tracker_get_list(trk, &list, &n), NRT_INVALID_HANDLE);
    assert_int_equal(nrta_execute_schedule(m, in, out, 0, trk, &s[0]), NRT_INVALID_HANDLE);
    nrt_tensor_free(&x);
    nrt_tensor_free(&y);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* Bad input: statuses, nothing queued. */
static void test_bad_input(void **state)
{
    (void)state;
    struct add_io io;
    add_make(&io, 0);
    nrta_seq_t s = 0;
    char buf[16];
    bool done;
    int fd;
    assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, 1, NULL, &s), NRT_INVALID);
    assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, -1, NULL, &s), NRT_INVALID);
    assert_int_equal(nrta_tensor_read(buf, io.t[0], 0, 16, 2, NULL, &s), NRT_INVALID);
    assert_int_equal(nrta_tensor_read(buf, io.t[0], BYTES - 8, 16, 0, NULL, &s), NRT_INVALID);
    assert_int_equal(nrta_tensor_write(io.t[0], buf, UINT64_MAX, 16, 0, NULL, &s), NRT_INVALID);
    assert_int_equal(nrta_tensor_read(NULL, io.t[0], 0, 16, 0, NULL, &s), NRT_INVALID);
    assert_int_equal(nrta_execute_schedule(io.m, io.out, io.in, 0, NULL, &s), NRT_INVALID);
    /* Sequence numbers no queue issued. */
    assert_int_equal(nrta_is_completed(12345, &done), NRT_INVALID);
    assert_int_equal(nrta_is_completed(((nrta_seq_t)0x7fff << 48) | 1, &done), NRT_INVALID);
    assert_int_equal(nrta_get_completion_handle(999, &fd), NRT_INVALID);
    assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, 0, NULL, &s), NRT_SUCCESS);
    assert_int_equal(nrta_is_completed(s + 1000, &done), NRT_INVALID);
    wait_seq(s);
    /* Unknown units, queues and LNCs. */
    assert_int_equal(nrta_get_sequence(0, NRTA_XU_TYPE_NUM, 0, &s), NRT_INVALID);
    assert_int_equal(nrta_get_sequence(0, NRTA_XU_COMPUTE, 1, &s), NRT_INVALID);
    assert_int_equal(nrta_get_sequence(999, NRTA_XU_COMPUTE, 0, &s), NRT_INVALID);
    assert_int_equal(nrta_get_sequence(1, NRTA_XU_TENSOR_READ, 1, &s), NRT_SUCCESS);
    assert_true(NRTA_SEQ_GET_SEQ_NUM(s) == 0);
    nrta_error_tracker_t *trk = NULL;
    assert_int_equal(nrta_error_tracker_create(999, &trk), NRT_INVALID);
    assert_int_equal(nrta_error_tracker_create(1, &trk), NRT_SUCCESS);
    /* A tracker of another LNC. */
    assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, 0, trk, &s), NRT_INVALID);
    nrta_error_tracker_destroy(trk);
    nrta_error_tracker_destroy(trk);  /* twice: a log line, nothing else */
    assert_int_equal(nrt_async_drain_queued_execs(999), NRT_INVALID);
    add_free(&io);
}

static _Atomic int cb_calls;
static uint64_t cb_last_job;

static void exec_cb(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
                    NRT_STATUS status)
{
    (void)model_id;
    assert_true(params == &cb_calls);
    assert_int_equal(vnc, 1);
    assert_int_equal(status, NRT_SUCCESS);
    cb_last_job = job_id;
    atomic_fetch_add(&cb_calls, 1);
}

/* Executions on two LNCs at once; the callback and drain. */
static void test_callback_and_drain(void **state)
{
    (void)state;
    struct add_io io0, io1;
    add_make(&io0, 0);
    add_make(&io1, 1);
    assert_int_equal(nrt_register_async_exec_callback(exec_cb, &cb_calls), NRT_SUCCESS);
    nrta_seq_t s;
    for (int i = 0; i < 8; i++)
        assert_int_equal(nrta_execute_schedule(io1.m, io1.in, io1.out, 0, NULL, &s), NRT_SUCCESS);
    assert_int_equal(nrt_async_drain_queued_execs(1), NRT_SUCCESS);
    assert_int_equal(atomic_load(&cb_calls), 8);
    assert_true(cb_last_job == NRTA_SEQ_GET_SEQ_NUM(s));
    bool done = false;
    assert_int_equal(nrta_is_completed(s, &done), NRT_SUCCESS);
    assert_true(done);
    assert_int_equal(nrt_execute(io1.m, io1.in, io1.out), NRT_SUCCESS);
    assert_int_equal(atomic_load(&cb_calls), 9);
    assert_int_equal(nrt_register_async_exec_callback(NULL, NULL), NRT_SUCCESS);
    add_free(&io0);
    add_free(&io1);
}

/* What the re-entering callback saw (test_callback_reenters). */
struct reenter {
    struct add_io *io;          /* the model and tensors it executes again */
    _Atomic int calls;          /* callbacks so far */
    _Atomic int nested_ok;      /* nrt_execute from the callback that succeeded */
    _Atomic int drain_refused;  /* drains of its own VNC refused with NRT_INVALID */
    _Atomic int depth;          /* callbacks under way (one nests inside another) */
};

static void reenter_cb(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
                       NRT_STATUS status)
{
    (void)model_id, (void)job_id;
    struct reenter *re = params;
    atomic_fetch_add(&re->calls, 1);
    if (status != NRT_SUCCESS || atomic_fetch_add(&re->depth, 1) > 0) {
        atomic_fetch_sub(&re->depth, 1);
        return;  /* the nested execution's own callback: no deeper */
    }
    if (nrt_execute(re->io->m, re->io->in, re->io->out) == NRT_SUCCESS)
        atomic_fetch_add(&re->nested_ok, 1);
    if (nrt_async_drain_queued_execs((int32_t)vnc) == NRT_INVALID)
        atomic_fetch_add(&re->drain_refused, 1);
    nrt_close();  /* refused from a callback: the runtime stays open */
    atomic_fetch_sub(&re->depth, 1);
}

static void reenter_hung(int sig)
{
    (void)sig;
    static const char msg[] = "an execution callback that calls back into the runtime hung\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(1);
}

/* A callback that executes, drains and closes from inside itself, on the
 * queue's worker (nrta_execute_schedule) and on the caller's thread
 * (nrt_execute): nothing hangs, the execution runs, the drain of its own
 * VNC and the close are refused, and the results are right. */
static void test_callback_reenters(void **state)
{
    (void)state;
    struct add_io io;
    add_make(&io, 0);
    float *a = malloc(BYTES), *b = malloc(BYTES), *got = malloc(BYTES);
    fill(a, 3);
    fill(b, 7);
    assert_int_equal(nrt_tensor_write(io.t[0], a, 0, BYTES), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_write(io.t[1], b, 0, BYTES), NRT_SUCCESS);
    struct reenter re = {.io = &io};
    signal(SIGALRM, reenter_hung);
    alarm(30);
    assert_int_equal(nrt_register_async_exec_callback(reenter_cb, &re), NRT_SUCCESS);
    nrta_seq_t s;
    for (int i = 0; i < 4; i++)
        assert_int_equal(nrta_execute_schedule(io.m, io.in, io.out, 0, NULL, &s), NRT_SUCCESS);
    assert_int_equal(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
    assert_int_equal(atomic_load(&re.nested_ok), 4);
    assert_int_equal(atomic_load(&re.drain_refused), 4);
    assert_int_equal(atomic_load(&re.calls), 8);
    assert_int_equal(nrt_execute(io.m, io.in, io.out), NRT_SUCCESS);
    assert_int_equal(atomic_load(&re.nested_ok), 5);
    assert_int_equal(atomic_load(&re.drain_refused), 4);  /* not its worker: drained */
    assert_int_equal(atomic_load(&re.calls), 10);
    assert_int_equal(nrt_register_async_exec_callback(NULL, NULL), NRT_SUCCESS);
    alarm(0);
    assert_int_equal(nrt_tensor_read(io.t[2], got, 0, BYTES), NRT_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_true(got[i] == a[i] + b[i]);
    free(a), free(b), free(got);
    add_free(&io);
}

/* Two callbacks, each on its VNC's worker, each executing the other
 * VNC's model (test_callback_cycle). */
struct cycle {
    struct add_io *io[2];         /* the models of VNC 0 and 1 */
    pthread_barrier_t both;       /* both callbacks are under way */
    _Atomic int status[2];        /* what each nested nrt_execute returned */
    _Atomic int entered;          /* callbacks that took part */
};

static void cycle_cb(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
                     NRT_STATUS status)
{
    (void)model_id, (void)job_id, (void)status;
    struct cycle *c = params;
    if (vnc > 1 || atomic_fetch_add(&c->entered, 1) >= 2)
        return;  /* only the first callback of each VNC takes part */
    pthread_barrier_wait(&c->both);
    struct add_io *other = c->io[1 - vnc];
    atomic_store(&c->status[vnc], nrt_execute(other->m, other->in, other->out));
}

/* Each VNC's callback waits for an execution on the other VNC, whose
 * worker is in the other callback: NEURON_RT_EXEC_TIMEOUT ends the wait
 * (NRT_TIMEOUT, one line) instead of a hang, and both VNCs work after. */
static void test_callback_cycle(void **state)
{
    (void)state;
    struct add_io io0, io1;
    add_make(&io0, 0);
    add_make(&io1, 1);
    /* read per execution: the nested executions' limit, not the drains' */
    setenv("NEURON_RT_EXEC_TIMEOUT", "1", 1);
    struct cycle c = {.io = {&io0, &io1}};
    pthread_barrier_init(&c.both, NULL, 2);
    signal(SIGALRM, reenter_hung);
    alarm(30);
    assert_int_equal(nrt_register_async_exec_callback(cycle_cb, &c), NRT_SUCCESS);
    nrta_seq_t s0, s1;
    assert_int_equal(nrta_execute_schedule(io0.m, io0.in, io0.out, 0, NULL, &s0), NRT_SUCCESS);
    assert_int_equal(nrta_execute_schedule(io1.m, io1.in, io1.out, 0, NULL, &s1), NRT_SUCCESS);
    assert_int_equal(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
    assert_int_equal(nrt_async_drain_queued_execs(1), NRT_SUCCESS);
    assert_int_equal(nrt_register_async_exec_callback(NULL, NULL), NRT_SUCCESS);
    alarm(0);
    unsetenv("NEURON_RT_EXEC_TIMEOUT");  /* read per execution: no limit for the checks below */
    /* at least one waited for the other and gave up; none hung */
    int t0 = atomic_load(&c.status[0]), t1 = atomic_load(&c.status[1]);
    assert_true(t0 == NRT_TIMEOUT || t1 == NRT_TIMEOUT);
    assert_true(t0 == NRT_TIMEOUT || t0 == NRT_SUCCESS);
    assert_true(t1 == NRT_TIMEOUT || t1 == NRT_SUCCESS);
    assert_int_equal(nrt_execute(io0.m, io0.in, io0.out), NRT_SUCCESS);
    assert_int_equal(nrt_execute(io1.m, io1.in, io1.out), NRT_SUCCESS);
    pthread_barrier_destroy(&c.both);
    add_free(&io0);
    add_free(&io1);
}

/* A collective waiting for a rank that never comes holds the queue:
 * the next request is NRT_QUEUE_FULL at depth 1; nrt_close cancels the
 * queued ones and returns once the running one times out. */
static void test_queue_full_and_close(void **state)
{
    (void)state;
    nrt_close();
    setenv("TRNEMU_ASYNC_QUEUE_DEPTH", "1", 1);
    setenv("TRNEMU_COLL_TIMEOUT", "1", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "a");
    nrt_tensor_t *b = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "b");
    uint32_t group[2] = {0, 1};
    nrt_cc_comm_t comm = {group, 0, 2, 0, 2, 0};
    nrt_tensor_list_t li = {&a, 1}, lo = {&b, 1};
    nrt_cc_context_t *ctx = NULL, *ctx2 = NULL;
    assert_int_equal(nrta_cc_prepare(&comm, &li, &lo, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                     NRT_CC_ALLREDUCE, &ctx), NRT_SUCCESS);
    assert_int_equal(nrta_cc_prepare(&comm, &li, &lo, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                     NRT_CC_ALLREDUCE, &ctx2), NRT_SUCCESS);
    nrta_seq_t s1, s2;
    assert_int_equal(nrta_cc_schedule(&ctx, 0, NULL, &s1), NRT_SUCCESS);
    assert_null(ctx);
    assert_int_equal(nrta_cc_schedule(&ctx2, 0, NULL, &s2), NRT_QUEUE_FULL);
    assert_null(ctx2);  /* freed whatever the outcome */
    /* Tensor queues are independent of the stuck collective. */
    char buf[64] = {1};
    nrta_seq_t sw, sw2;
    assert_int_equal(nrta_tensor_write(a, buf, 0, 64, 0, NULL, &sw), NRT_SUCCESS);
    wait_seq(sw);
    /* A prepared context never scheduled: nrt_close frees it. */
    nrt_cc_context_t *ctx3 = NULL;
    assert_int_equal(nrta_cc_prepare(&comm, &li, &lo, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                     NRT_CC_ALLREDUCE, &ctx3), NRT_SUCCESS);
    int fd = -1;
    assert_int_equal(nrta_get_completion_handle(s1, &fd), NRT_SUCCESS);
    assert_int_equal(nrta_tensor_write(a, buf, 0, 64, 1, NULL, &sw2), NRT_SUCCESS);
    nrt_close();  /* returns: the collective times out within TRNEMU_COLL_TIMEOUT */
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 1);  /* signalled by the end of the request */
    close(fd);
    bool done;
    assert_int_equal(nrta_is_completed(s1, &done), NRT_CLOSED);
}

/* Wait for seq as an application with nothing else to do: on its
 * completion descriptor. */
static void wait_fd(nrta_seq_t seq)
{
    int fd = -1;
    assert_int_equal(nrta_get_completion_handle(seq, &fd), NRT_SUCCESS);
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 60000), 1);
    close(fd);
    bool done = false;
    assert_int_equal(nrta_is_completed(seq, &done), NRT_SUCCESS);
    assert_true(done);
}

/* Restart the runtime with TRNEMU_ASYNC_SPIN_US=spin (NULL: unset). */
static void restart_spin(const char *spin)
{
    nrt_close();
    it_env("TRNEMU_ASYNC_SPIN_US", spin);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
}

/* Write, all-reduce (one rank) and read back in a loop, each request
 * waited for on its descriptor; the sums of `rounds` rounds. */
static void spin_rounds(int rounds, float *sum)
{
    enum { M = 64 };
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, M * 4, "x");
    uint32_t group[1] = {0};
    nrt_cc_comm_t comm = {group, 0, 1, 0, 1, 0};
    nrt_tensor_list_t l = {&t, 1};
    float in[M], out[M];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < M; i++)
            in[i] = (float)(r * M + i) * 0.25f;
        nrta_seq_t sw, sc, sr;
        assert_int_equal(nrta_tensor_write(t, in, 0, sizeof in, 0, NULL, &sw), NRT_SUCCESS);
        wait_fd(sw);
        nrt_cc_context_t *ctx = NULL;
        assert_int_equal(nrta_cc_prepare(&comm, &l, &l, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                         NRT_CC_ALLREDUCE, &ctx), NRT_SUCCESS);
        assert_int_equal(nrta_cc_schedule(&ctx, 0, NULL, &sc), NRT_SUCCESS);
        wait_fd(sc);
        assert_int_equal(nrta_tensor_read(out, t, 0, sizeof out, 0, NULL, &sr), NRT_SUCCESS);
        wait_fd(sr);
        sum[r] = 0;
        for (int i = 0; i < M; i++)
            sum[r] += out[i];
    }
    nrt_tensor_free(&t);
}

/* The busy-poll window changes no result: none, the default, the largest,
 * and a malformed value (a warning, then the default). nrt_close right
 * after the last request finds the queue threads polling for the next. */
static void test_spin_window_results(void **state)
{
    (void)state;
    enum { R = 40 };
    static const char *const spins[] = {"0", NULL, "10000"};
    float want[R], got[R];
    restart_spin("0");
    spin_rounds(R, want);
    for (size_t k = 0; k < sizeof spins / sizeof spins[0]; k++) {
        restart_spin(spins[k]);
        spin_rounds(R, got);
        assert_memory_equal(got, want, sizeof got);
    }
    /* not a number of microseconds: nrt_init refuses it (docs/env.md) */
    nrt_close();
    it_env("TRNEMU_ASYNC_SPIN_US", "fast");
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    it_env("TRNEMU_ASYNC_SPIN_US", NULL);
    nrt_close();  /* the queue threads are in their 10 ms poll: they end */
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
}

/* A completion handle for a request that does not end (a collective
 * waiting for a rank that never comes) returns after the window, not
 * readable; the request then ends with nrt_close, which signals it. */
static void test_spin_window_bounded(void **state)
{
    (void)state;
    setenv("TRNEMU_COLL_TIMEOUT", "1", 1);
    restart_spin("10000");
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4096, "a");
    uint32_t group[2] = {0, 1};
    nrt_cc_comm_t comm = {group, 0, 2, 0, 2, 0};
    nrt_tensor_list_t l = {&a, 1};
    nrt_cc_context_t *ctx = NULL;
    assert_int_equal(nrta_cc_prepare(&comm, &l, &l, NRT_DTYPE_FLOAT32, NRT_OP_ADD,
                                     NRT_CC_ALLREDUCE, &ctx), NRT_SUCCESS);
    nrta_seq_t s;
    assert_int_equal(nrta_cc_schedule(&ctx, 0, NULL, &s), NRT_SUCCESS);
    int fd = -1;
    assert_int_equal(nrta_get_completion_handle(s, &fd), NRT_SUCCESS);
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 0);  /* rank 1 never came: not complete */
    nrt_close();  /* returns once the collective timed out */
    assert_int_equal(poll(&p, 1, 0), 1);
    close(fd);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
}

int main(void)
{
    size_t n;
    neff_add = it_read_example("add.neff", &n);
    neff_add_size = n;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matches_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_epoll_and_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_error_tracker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_and_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_reenters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_cycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_full_and_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_window_results, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spin_window_bounded, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(neff_add);
    return rc;
}
