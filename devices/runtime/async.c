/*
 * async.c: execution-unit queues, sequence numbers, completion descriptors
 * and error trackers (see async.h).
 *
 * One lock (async_lock) guards every queue, tracker and waiter. A request
 * is posted to its queue's worker only when the one before it finished,
 * so a queue is strictly in order; the completion (async_req_done, on the
 * worker) records the status, wakes the waiters and posts the next one.
 * The number of the last completed request is also kept in an atomic
 * word, polled without the lock by async_completion_fd for the request
 * running; the window of each request is set when it is posted.
 */
#include "devices/runtime/async.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "devices/config/env.h"
#include "devices/coll/coll.h"
#include "devices/runtime/coll_host.h"
#include "devices/runtime/exec.h"
#include "devices/runtime/model.h"
#include "devices/runtime/runtime.h"
#include "devices/thread/spin.h"
#include "emu/jobq.h"
#include "devices/observe/systrace.h"
#include "devices/runtime/tensor.h"
#include "devices/thread/worker.h"
#include "emu/grow.h"
#include "emu/log.h"

enum async_kind {
    ASYNC_EXEC = 1,   /* a model execution */
    ASYNC_READ = 2,   /* tensor -> host buffer */
    ASYNC_WRITE = 3,  /* host buffer -> tensor */
    ASYNC_COPY = 4,   /* tensor -> tensor */
    ASYNC_CC = 5,     /* a prepared collective */
};

/* An error tracker (nrta_error_tracker_t). */
struct nrta_error_tracker {
    uint32_t lnc;               /* the LNC it collects for */
    uint32_t refs;              /* the user's (until destroy) plus queued requests */
    bool live;                  /* not destroyed yet */
    nrta_error_t *errs;         /* errors recorded, oldest first */
    size_t n, cap;              /* entries used and allocated */
    nrta_error_t *shown;        /* the copy handed out by get_list */
    size_t shown_cap;           /* its allocated entries */
    struct nrta_error_tracker *next; /* registry link */
};

/* A descriptor to signal once a sequence number completes. */
struct async_waiter {
    uint64_t num;               /* the sequence number awaited */
    int efd;                    /* our copy of the eventfd */
    struct async_waiter *next;  /* list link */
};

struct async_queue;

/* One scheduled request. */
struct async_req {
    struct worker_job job;      /* how it runs on the queue's worker */
    struct async_queue *q;      /* its queue */
    uint64_t num;               /* its sequence number in the queue */
    nrta_error_tracker_t *trk;  /* where a failure is recorded, or NULL */
    enum async_kind kind;       /* what it does */
    nrt_model_t *model;         /* ASYNC_EXEC: the pinned model */
    struct exec_request *exec;  /* ASYNC_EXEC: its bound tensors */
    nrt_cc_context_t *cc;       /* ASYNC_CC: the context, freed after */
    struct tensor_view v[2];    /* pinned tensors (READ/WRITE: v[0]; COPY: src, dst) */
    uint64_t off[2];            /* byte offsets into v[0], v[1] */
    void *buf;                  /* READ/WRITE: the host buffer */
    uint64_t size;              /* bytes to move */
    uint64_t t_sched;           /* host time it was scheduled (system trace) */
    struct async_req *next;     /* pending list link */
};

/* One queue of one execution unit of one LNC. */
struct async_queue {
    uint16_t xu_id;             /* top 16 bits of its sequence ids */
    uint32_t lnc;               /* process-local LNC */
    struct worker own;          /* the thread of a non-COMPUTE queue */
    struct worker *worker;      /* runs its requests: own, or the VNC's (COMPUTE) */
    uint64_t issued;            /* last sequence number handed out */
    uint64_t completed;         /* last sequence number finished */
    _Atomic uint64_t done;      /* completed, for polling without the lock */
    bool running;               /* a request is posted to the worker */
    uint32_t telling;           /* completed executions whose callback is under way */
    uint32_t spin_ns;           /* busy-poll window of the request posted */
    struct async_req *head;     /* scheduled, not yet posted: oldest first */
    struct async_req *tail;     /* last of them */
    struct async_waiter *waiters; /* completion descriptors not yet signalled */
};

static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool async_lock_owner; /* this thread holds async_lock */
static pthread_cond_t async_progress = PTHREAD_COND_INITIALIZER; /* a request finished */
static struct async_queue **async_queues;  /* by XU id; allocated on first use */
static nrta_error_tracker_t *async_trackers; /* live and pending-free trackers */
static uint32_t async_live;      /* requests scheduled and not yet freed */
static uint32_t async_depth = ASYNC_DEFAULT_DEPTH;  /* unfinished requests per queue */
static uint32_t async_spin_ns = ASYNC_SPIN_US_DEFAULT * 1000;  /* TRNEMU_ASYNC_SPIN_US */
static long async_cpus = 1;      /* the host's online CPUs */
static uint64_t async_finished;  /* requests completed and callbacks returned: drain's progress */
static uint64_t async_timeout_ns = (uint64_t)ASYNC_DRAIN_TIMEOUT_S * 1000000000u; /* EXEC_TIMEOUT */
static _Thread_local int64_t async_telling_lnc = -1; /* LNC whose callback runs here */

/* async_lock, taken and dropped with its owner noted for async_lock_held
 * (a condition wait gives it up only while the thread sleeps). */
static void async_lock_take(void)
{
    pthread_mutex_lock(&async_lock);
    async_lock_owner = true;
}

static void async_lock_drop(void)
{
    assert(async_lock_owner);
    async_lock_owner = false;
    pthread_mutex_unlock(&async_lock);
}

/* Does this thread hold async_lock? For assert() only. */
static inline bool async_lock_held(void)
{
    return async_lock_owner;
}

#define ASYNC_NQUEUES (1u << 16)

int async_queue_count(nrta_xu_t xu)
{
    switch (xu) {
    case NRTA_XU_TENSOR_READ:
    case NRTA_XU_TENSOR_WRITE:
    case NRTA_XU_TENSOR_OP: return ASYNC_TENSOR_QUEUES;
    case NRTA_XU_COMPUTE:
    case NRTA_XU_COLLECTIVES: return 1;
    default: return 0;
    }
}

static const char *async_xu_name(nrta_xu_t xu)
{
    static const char *names[] = {"TENSOR_READ", "TENSOR_WRITE", "TENSOR_OP", "COMPUTE",
                                  "COLLECTIVES"};
    return (unsigned)xu < NRTA_XU_TYPE_NUM ? names[xu] : "?";
}

void async_configure(void)
{
    uint64_t depth; /* checked at nrt_init (env_load); the default if it changed since */
    (void)env_read_uint("TRNEMU_ASYNC_QUEUE_DEPTH", 1, 65536, ASYNC_DEFAULT_DEPTH, &depth);
    async_depth = (uint32_t)depth;
    async_spin_ns = spin_window_ns("TRNEMU_ASYNC_SPIN_US", "NRT", ASYNC_SPIN_US_DEFAULT);
    async_cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* NEURON_RT_EXEC_TIMEOUT through the one parser (env_load has checked
     * it); 0, no limit for an execution, keeps drain's wait bounded. */
    struct env_exec e;
    async_timeout_ns = (uint64_t)ASYNC_DRAIN_TIMEOUT_S * 1000000000u;
    if (env_exec(&e) == NRT_SUCCESS && e.timeout_ms != 0)
        async_timeout_ns = e.timeout_ms * 1000000u;
    if (getenv("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS") != NULL)
        LOG_WARN("NRT", "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS is deprecated and ignored: "
                 "implicit async mode is gone; nrt_execute blocks, use the nrta_* API");
}

/* ---- queues ----------------------------------------------------------------- */

/* Check (lnc, xu, queue); one log line when they name no queue. */
static NRT_STATUS async_check_queue(uint32_t lnc, nrta_xu_t xu, int queue)
{
    struct machine *m = rt_machine();
    if (lnc >= m->cfg.visible_count || lnc >= ASYNC_MAX_LNC) {
        LOG_ERROR("NRT", "LNC %u is not visible to this process (%u LNCs)", lnc,
                  m->cfg.visible_count);
        return NRT_INVALID;
    }
    int nq = async_queue_count(xu);
    if (nq == 0) {
        LOG_ERROR("NRT", "execution unit %d is not an nrta_xu_t", (int)xu);
        return NRT_INVALID;
    }
    if (queue < 0 || queue >= nq) {
        LOG_ERROR("NRT", "queue %d: the %s execution unit has queue%s 0%s", queue,
                  async_xu_name(xu), nq > 1 ? "s" : "", nq > 1 ? "..1" : " only");
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

/* The queue of an XU id, created when create is set. Lock held. */
static struct async_queue *async_queue_get(uint16_t id, uint32_t lnc, bool create)
{
    assert(async_lock_held());
    if (async_queues == NULL) {
        if (!create)
            return NULL;
        async_queues = calloc(ASYNC_NQUEUES, sizeof *async_queues);
        if (async_queues == NULL)
            return NULL;
    }
    struct async_queue *q = async_queues[id];
    if (q == NULL && create && (q = calloc(1, sizeof *q)) != NULL) {
        q->xu_id = id;
        q->lnc = lnc;
        worker_init(&q->own);
        q->worker = &q->own;
        async_queues[id] = q;
    }
    return q;
}

/* Decode a sequence id into its queue; NULL when no queue issued it. Lock held. */
static struct async_queue *async_queue_of(nrta_seq_t seq, uint64_t *num)
{
    assert(async_lock_held());
    uint16_t id = (uint16_t)NRTA_SEQ_GET_XU_ID(seq);
    *num = NRTA_SEQ_GET_SEQ_NUM(seq);
    struct async_queue *q = async_queues != NULL ? async_queues[id] : NULL;
    if (q == NULL || *num == 0 || *num > q->issued)
        return NULL;
    return q;
}

/* ---- trackers ----------------------------------------------------------------- */

static bool async_tracker_known(const nrta_error_tracker_t *t)
{
    for (nrta_error_tracker_t *x = async_trackers; x != NULL; x = x->next)
        if (x == t)
            return x->live;
    return false;
}

/* Drop one reference; free the tracker with the last. Lock held. */
static void async_tracker_unref(nrta_error_tracker_t *t)
{
    assert(async_lock_held());
    if (t == NULL || --t->refs > 0)
        return;
    for (nrta_error_tracker_t **p = &async_trackers; *p != NULL; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    free(t->errs);
    free(t->shown);
    free(t);
}

/* Record a failed request. Lock held. */
static void async_tracker_add(nrta_error_tracker_t *t, nrta_seq_t seq, NRT_STATUS st)
{
    assert(async_lock_held());
    if (!GROW_ARRAY(t->errs, t->cap, t->n + 1, 16)) {
        LOG_ERROR("NRT", "out of memory recording the failure of request 0x%" PRIx64, seq);
        return;
    }
    t->errs[t->n++] = (nrta_error_t){seq, (uint64_t)st};
}

NRT_STATUS async_tracker_create(uint32_t lnc, nrta_error_tracker_t **out)
{
    assert(rt_held());
    nrta_error_tracker_t *t = calloc(1, sizeof *t);
    if (t == NULL) {
        LOG_ERROR("NRT", "out of memory for an error tracker");
        return NRT_RESOURCE;
    }
    t->lnc = lnc;
    t->refs = 1;
    t->live = true;
    async_lock_take();
    t->next = async_trackers;
    async_trackers = t;
    async_lock_drop();
    *out = t;
    return NRT_SUCCESS;
}

bool async_tracker_destroy(nrta_error_tracker_t *t)
{
    async_lock_take();
    bool ok = async_tracker_known(t);
    if (ok) {
        t->live = false;
        async_tracker_unref(t);
    }
    async_lock_drop();
    return ok;
}

NRT_STATUS async_tracker_list(nrta_error_tracker_t *t, const nrta_error_t **list, size_t *n)
{
    NRT_STATUS st = NRT_SUCCESS;
    async_lock_take();
    if (!async_tracker_known(t)) {
        LOG_ERROR("NRT", "%p is not a live error tracker (destroyed, or never created)",
                  (void *)t);
        st = NRT_INVALID_HANDLE;
    } else if (t->n > t->shown_cap) {
        nrta_error_t *s = realloc(t->shown, t->n * sizeof *s);
        if (s == NULL)
            st = NRT_RESOURCE;
        else {
            t->shown = s;
            t->shown_cap = t->n;
        }
    }
    if (st == NRT_SUCCESS) {
        /* A stable copy: requests finishing later do not move it under the caller. */
        if (t->n > 0)
            memcpy(t->shown, t->errs, t->n * sizeof *t->shown);
        *list = t->n > 0 ? t->shown : NULL;
        *n = t->n;
    }
    async_lock_drop();
    return st;
}

/* ---- requests ----------------------------------------------------------------- */

static void async_req_free(struct async_req *r)
{
    if (r->exec != NULL)
        exec_request_free(r->exec);
    if (r->model != NULL)
        model_unpin(r->model);
    if (r->cc != NULL)
        coll_cc_free(r->cc);
    for (int i = 0; i < 2; i++)
        if (r->v[i].st != NULL)
            tensor_unpin(&r->v[i]);
    free(r);
}

static const char *async_kind_name(enum async_kind k);
static NRT_STATUS async_req_move(struct async_req *r);

static NRT_STATUS async_req_run(void *arg)
{
    struct async_req *r = arg;
    uint64_t f = machine_mem_faults();
    NRT_STATUS st = async_req_move(r);
    if (st == NRT_SUCCESS && r->kind != ASYNC_EXEC && r->kind != ASYNC_CC)
        st = machine_mem_check(rt_machine(), f, async_kind_name(r->kind));
    return st;
}

/* What r does, on its queue's thread. */
static NRT_STATUS async_req_move(struct async_req *r)
{
    struct machine *m = rt_machine();
    switch (r->kind) {
    case ASYNC_EXEC:
        return exec_request_run_on_worker(r->exec);
    case ASYNC_CC:
        return coll_cc_run(r->cc);
    case ASYNC_READ:
        memcpy(r->buf, r->v[0].va + r->off[0], r->size);
        return NRT_SUCCESS;
    case ASYNC_WRITE:
        machine_mem_enter(m);
        memcpy(r->v[0].va + r->off[0], r->buf, r->size);
        machine_mem_leave(m);
        return NRT_SUCCESS;
    case ASYNC_COPY:
        machine_mem_enter(m);
        memmove(r->v[1].va + r->off[1], r->v[0].va + r->off[0], r->size);
        machine_mem_leave(m);
        return NRT_SUCCESS;
    }
    return NRT_FAILURE;
}

/* Signal every waiter whose number has completed. Lock held. */
static void async_wake(struct async_queue *q)
{
    assert(async_lock_held());
    for (struct async_waiter **p = &q->waiters; *p != NULL;) {
        struct async_waiter *w = *p;
        if (w->num > q->completed) {
            p = &w->next;
            continue;
        }
        uint64_t one = 1;
        if (write(w->efd, &one, sizeof one) != sizeof one)
            LOG_WARN("NRT", "cannot signal a completion descriptor: %s", strerror(errno));
        close(w->efd);
        *p = w->next;
        free(w);
    }
}

/* Mark r finished with st. Lock held; the caller frees r after unlocking. */
static void async_finish(struct async_req *r, NRT_STATUS st)
{
    assert(async_lock_held());
    struct async_queue *q = r->q;
    nrta_seq_t seq = ((nrta_seq_t)q->xu_id << 48) | r->num;
    if (st != NRT_SUCCESS && r->trk != NULL)
        async_tracker_add(r->trk, seq, st);
    async_tracker_unref(r->trk);
    r->trk = NULL;
    q->completed = r->num;
    async_finished++;
    atomic_store_explicit(&q->done, r->num, memory_order_release);
    async_wake(q);
    pthread_cond_broadcast(&async_progress);
}

static void async_req_done(void *arg, NRT_STATUS st);

/* The busy-poll window around r (TRNEMU_ASYNC_SPIN_US), none for a
 * collective over more ranks than the host has CPUs: its pollers would
 * hold the CPUs its ranks need (coll.c's waits follow the same rule). */
static uint32_t async_req_spin(const struct async_req *r)
{
    if (r->kind == ASYNC_CC && (long)coll_cc_ranks(r->cc) > async_cpus)
        return 0;
    return async_spin_ns;
}

/* Post the oldest pending request of q, if any. Lock held. */
static void async_start_next(struct async_queue *q)
{
    assert(async_lock_held());
    struct async_req *r;
    while ((r = q->head) != NULL) {
        q->head = r->next;
        if (q->head == NULL)
            q->tail = NULL;
        q->spin_ns = async_req_spin(r);
        /* Executions run on their VNC's worker, which does not poll after
         * them; a queue's own thread polls for the queue's next request. */
        bool own = r->kind != ASYNC_EXEC;
        r->job = (struct worker_job){async_req_run, r, async_req_done, NRT_SUCCESS, false, NULL,
                                     own ? q->spin_ns : 0};
        struct worker *w = own ? q->worker : exec_request_worker(r->exec);
        if (worker_post(w, &r->job)) {
            q->running = true;
            return;
        }
        async_finish(r, NRT_RESOURCE);  /* no thread to run it on (logged) */
        async_req_free(r);
        async_live--;
    }
    q->running = false;
}

static const char *async_kind_name(enum async_kind k)
{
    static const char *const names[] = {"?", "execute", "tensor_read", "tensor_write",
                                        "tensor_copy", "collective"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

/* On the queue's worker, once r ran: the request completes (waiters see
 * it, the next one is posted), then the status callback is told with no
 * lock held, so that it may call back into the runtime. */
static void async_req_done(void *arg, NRT_STATUS st)
{
    struct async_req *r = arg;
    struct async_queue *q = r->q;
    bool tell = r->kind == ASYNC_EXEC;
    uint64_t now = systrace_now_ns();
    systrace_emit(r->kind == ASYNC_CC ? SYS_CC_RUNNING : SYS_ASYNC_REQUEST, (int)q->lnc,
                  r->t_sched, now - r->t_sched, r->kind == ASYNC_EXEC ? r->model->neff->info.name
                  : async_kind_name(r->kind), ((uint64_t)q->xu_id << 48) | r->num, st);
    async_lock_take();
    async_finish(r, st);
    q->telling += tell;
    async_start_next(q);
    async_lock_drop();
    if (tell) {
        async_telling_lnc = q->lnc;
        exec_notify(r->model, r->num, st);
        async_telling_lnc = -1;
    }
    async_req_free(r);
    async_lock_take();
    q->telling -= tell;
    async_finished += tell;  /* a callback that returned is progress for drain too */
    async_live--;  /* nrt_close waits for this before tearing anything down */
    pthread_cond_broadcast(&async_progress);
    async_lock_drop();
}

/* Queue r on (lnc, xu, queue) with tracker trk; frees r on failure. */
static NRT_STATUS async_submit(struct async_req *r, uint32_t lnc, nrta_xu_t xu, int queue,
                               nrta_error_tracker_t *trk, nrta_seq_t *seq)
{
    NRT_STATUS st = async_check_queue(lnc, xu, queue);
    if (st != NRT_SUCCESS) {
        async_req_free(r);
        return st;
    }
    uint16_t id = ASYNC_XU_ID(lnc, xu, queue);
    async_lock_take();
    struct async_queue *q = async_queue_get(id, lnc, true);
    if (q == NULL) {
        st = NRT_RESOURCE;
        LOG_ERROR("NRT", "out of memory creating the %s queue %d of LNC %u", async_xu_name(xu),
                  queue, lnc);
    } else if (trk != NULL && !async_tracker_known(trk)) {
        st = NRT_INVALID_HANDLE;
        LOG_ERROR("NRT", "%p is not a live error tracker (destroyed, or never created)",
                  (void *)trk);
    } else if (trk != NULL && trk->lnc != lnc) {
        st = NRT_INVALID;
        LOG_ERROR("NRT", "the error tracker belongs to LNC %u; the request runs on LNC %u",
                  trk->lnc, lnc);
    } else if (q->issued - q->completed >= async_depth) {
        st = NRT_QUEUE_FULL;
        LOG_DEBUG("NRT", "%s queue %d of LNC %u is full (%u unfinished requests)",
                  async_xu_name(xu), queue, lnc, async_depth);
    }
    if (st != NRT_SUCCESS) {
        async_lock_drop();
        async_req_free(r);
        return st;
    }
    r->q = q;
    r->num = ++q->issued;
    async_live++;
    r->trk = trk;
    if (trk != NULL)
        trk->refs++;
    *seq = ((nrta_seq_t)id << 48) | r->num;
    if (q->tail != NULL)
        q->tail->next = r;
    else
        q->head = r;
    q->tail = r;
    if (!q->running)
        async_start_next(q);
    async_lock_drop();
    return NRT_SUCCESS;
}

static struct async_req *async_req_new(enum async_kind kind)
{
    struct async_req *r = calloc(1, sizeof *r);
    if (r == NULL)
        LOG_ERROR("NRT", "out of memory for an asynchronous request");
    else {
        r->kind = kind;
        r->t_sched = systrace_now_ns();
    }
    return r;
}

/* The LNC a tensor's requests run on: its VNC, LNC 0 for host tensors. */
static uint32_t async_tensor_lnc(const struct tensor_view *v)
{
    return v->vnc >= 0 ? (uint32_t)v->vnc : 0;
}

NRT_STATUS async_execute(nrt_model_t *m, const nrt_tensor_set_t *in, nrt_tensor_set_t *out,
                         int queue, nrta_error_tracker_t *trk, nrta_seq_t *seq)
{
    assert(rt_held());
    struct async_req *r = async_req_new(ASYNC_EXEC);
    if (r == NULL)
        return NRT_RESOURCE;
    NRT_STATUS st = model_pin(m);
    if (st != NRT_SUCCESS) {
        free(r);
        return st;
    }
    r->model = m;
    st = exec_request_new(m, in, out, 1, &r->exec);
    if (st != NRT_SUCCESS) {
        async_req_free(r);
        return st;
    }
    return async_submit(r, (uint32_t)m->vnc, NRTA_XU_COMPUTE, queue, trk, seq);
}

/* Pin t into r->v[i] and check [off, off+size). */
static NRT_STATUS async_pin(struct async_req *r, int i, const nrt_tensor_t *t, uint64_t off,
                            uint64_t size, const char *what)
{
    NRT_STATUS st = tensor_pin(t, &r->v[i]);
    if (st != NRT_SUCCESS)
        return st;
    r->off[i] = off;
    return tensor_view_range(&r->v[i], what, off, size);
}

static NRT_STATUS async_host_io(enum async_kind kind, void *buf, nrt_tensor_t *t, uint64_t off,
                                uint64_t size, int queue, nrta_error_tracker_t *trk,
                                nrta_seq_t *seq)
{
    struct async_req *r = async_req_new(kind);
    if (r == NULL)
        return NRT_RESOURCE;
    NRT_STATUS st = async_pin(r, 0, t, off, size, kind == ASYNC_READ ? "read" : "write");
    if (st != NRT_SUCCESS) {
        async_req_free(r);
        return st;
    }
    r->buf = buf;
    r->size = size;
    return async_submit(r, async_tensor_lnc(&r->v[0]),
                        kind == ASYNC_READ ? NRTA_XU_TENSOR_READ : NRTA_XU_TENSOR_WRITE, queue,
                        trk, seq);
}

NRT_STATUS async_tensor_read(void *buf, nrt_tensor_t *t, uint64_t off, uint64_t size, int queue,
                             nrta_error_tracker_t *trk, nrta_seq_t *seq)
{
    assert(rt_held());
    return async_host_io(ASYNC_READ, buf, t, off, size, queue, trk, seq);
}

NRT_STATUS async_tensor_write(nrt_tensor_t *t, const void *buf, uint64_t off, uint64_t size,
                              int queue, nrta_error_tracker_t *trk, nrta_seq_t *seq)
{
    assert(rt_held());
    return async_host_io(ASYNC_WRITE, (void *)buf, t, off, size, queue, trk, seq);
}

NRT_STATUS async_tensor_copy(nrt_tensor_t *src, uint64_t src_off, nrt_tensor_t *dst,
                             uint64_t dst_off, uint64_t size, int queue,
                             nrta_error_tracker_t *trk, nrta_seq_t *seq)
{
    assert(rt_held());
    struct async_req *r = async_req_new(ASYNC_COPY);
    if (r == NULL)
        return NRT_RESOURCE;
    NRT_STATUS st = async_pin(r, 0, src, src_off, size, "copy source");
    if (st == NRT_SUCCESS)
        st = async_pin(r, 1, dst, dst_off, size, "copy destination");
    if (st == NRT_SUCCESS)
        st = tensor_view_copy_ok(&r->v[0], &r->v[1]);
    if (st != NRT_SUCCESS) {
        async_req_free(r);
        return st;
    }
    r->size = size;
    uint32_t lnc = async_tensor_lnc(r->v[0].vnc >= 0 ? &r->v[0] : &r->v[1]);
    return async_submit(r, lnc, NRTA_XU_TENSOR_OP, queue, trk, seq);
}

NRT_STATUS async_collective(nrt_cc_context_t **ctx, int queue, nrta_error_tracker_t *trk,
                            nrta_seq_t *seq)
{
    assert(rt_held());
    struct async_req *r = async_req_new(ASYNC_CC);
    if (r == NULL)
        return NRT_RESOURCE;
    r->cc = *ctx;
    *ctx = NULL;
    int32_t vnc = coll_cc_vnc(r->cc);
    return async_submit(r, vnc >= 0 ? (uint32_t)vnc : 0, NRTA_XU_COLLECTIVES, queue, trk, seq);
}

/* ---- completion --------------------------------------------------------------- */

/* Does seq name request 0 of a queue that exists for this process (what
 * nrta_get_sequence answers before any request completed)? */
static bool async_seq_is_start(nrta_seq_t seq)
{
    uint16_t id = (uint16_t)NRTA_SEQ_GET_XU_ID(seq);
    uint32_t lnc = id >> 6, xu = (id >> 3) & 7, queue = id & 7;
    return NRTA_SEQ_GET_SEQ_NUM(seq) == 0 && lnc < rt_machine()->cfg.visible_count &&
           (int)queue < async_queue_count((nrta_xu_t)xu);
}

NRT_STATUS async_is_completed(nrta_seq_t seq, bool *done)
{
    uint64_t num;
    if (async_seq_is_start(seq)) {  /* nothing before the first request: complete */
        *done = true;
        return NRT_SUCCESS;
    }
    async_lock_take();
    struct async_queue *q = async_queue_of(seq, &num);
    if (q != NULL)
        *done = num <= q->completed;
    async_lock_drop();
    if (q == NULL) {
        LOG_ERROR("NRT", "0x%" PRIx64 " is not a sequence number this runtime issued", seq);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

NRT_STATUS async_last_completed(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
    NRT_STATUS st = async_check_queue(lnc, xu, queue);
    if (st != NRT_SUCCESS)
        return st;
    uint16_t id = ASYNC_XU_ID(lnc, xu, queue);
    async_lock_take();
    struct async_queue *q = async_queue_get(id, lnc, false);
    *seq = ((nrta_seq_t)id << 48) | (q != NULL ? q->completed : 0);
    async_lock_drop();
    return NRT_SUCCESS;
}

/* What async_poll_done polls: a queue and a sequence number in it. */
struct async_spin_arg {
    struct async_queue *q;  /* the queue */
    uint64_t num;           /* the request awaited */
};

static bool async_spin_done(const void *arg)
{
    const struct async_spin_arg *a = arg;
    return atomic_load_explicit(&a->q->done, memory_order_acquire) >= a->num;
}

/* The queue of seq if it names one, and whether the request completed.
 * When it is the one running (the next to complete), poll its completion
 * for its window first. The queue stays allocated meanwhile: the
 * caller holds the runtime (rt_enter), and only nrt_close frees queues. */
static struct async_queue *async_poll_done(nrta_seq_t seq, bool *done)
{
    assert(rt_held());
    uint64_t num;
    async_lock_take();
    struct async_queue *q = async_queue_of(seq, &num);
    *done = q != NULL && num <= q->completed;
    bool running = q != NULL && num == q->completed + 1 && q->running;
    uint32_t spin_ns = running ? q->spin_ns : 0;
    async_lock_drop();
    if (spin_ns > 0) {
        struct async_spin_arg a = {q, num};
        *done = spin_poll(async_spin_done, &a, spin_ns);
    }
    return q;
}

NRT_STATUS async_completion_fd(nrta_seq_t seq, int *fd)
{
    bool done;
    if (async_seq_is_start(seq) || (async_poll_done(seq, &done) != NULL && done)) {
        /* complete already: a descriptor that polls readable at once */
        int efd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0) {
            LOG_ERROR("NRT", "cannot create an eventfd: %s", strerror(errno));
            return NRT_RESOURCE;
        }
        *fd = efd;
        return NRT_SUCCESS;
    }
    uint64_t num;
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        LOG_ERROR("NRT", "cannot create an eventfd: %s", strerror(errno));
        return NRT_RESOURCE;
    }
    /* The caller gets its own descriptor of the same eventfd: it may close
     * it whenever it likes, ours stays valid until we signal. */
    int user = fcntl(efd, F_DUPFD_CLOEXEC, 0);
    struct async_waiter *w = malloc(sizeof *w);
    if (user < 0 || w == NULL) {
        LOG_ERROR("NRT", "cannot create a completion descriptor: %s", strerror(errno));
        if (user >= 0)
            close(user);
        close(efd);
        free(w);
        return NRT_RESOURCE;
    }
    async_lock_take();
    struct async_queue *q = async_queue_of(seq, &num);
    if (q != NULL) {
        *w = (struct async_waiter){num, efd, q->waiters};
        q->waiters = w;
        async_wake(q);  /* at once when already complete */
    }
    async_lock_drop();
    if (q == NULL) {
        LOG_ERROR("NRT", "0x%" PRIx64 " is not a sequence number this runtime issued", seq);
        close(user);
        close(efd);
        free(w);
        return NRT_INVALID;
    }
    *fd = user;
    return NRT_SUCCESS;
}

/* Has every queue of LNC lnc finished its requests? Lock held. */
static bool async_lnc_idle(uint32_t lnc)
{
    assert(async_lock_held());
    if (async_queues == NULL || lnc >= ASYNC_MAX_LNC)
        return true;
    for (uint32_t i = 0; i < 64; i++) {
        struct async_queue *q = async_queues[(lnc << 6) | i];
        if (q != NULL && (q->completed != q->issued || q->telling > 0))
            return false;
    }
    return true;
}

NRT_STATUS async_drain(int32_t vnc)
{
    if (async_telling_lnc == vnc) {
        LOG_ERROR("NRT", "nrt_async_drain_queued_execs(%d) called from the execution status "
                  "callback of VNC %d: refused, the VNC's queued executions run on this thread "
                  "once the callback returns", (int)vnc, (int)vnc);
        return NRT_INVALID;
    }
    NRT_STATUS st = NRT_SUCCESS;
    async_lock_take();
    uint64_t seen = async_finished;
    uint64_t last = spin_now_ns();  /* when a request last completed */
    while (!async_lnc_idle((uint32_t)vnc)) {
        if (rt_closing()) {
            st = NRT_CLOSED;
            break;
        }
        if (spin_now_ns() - last >= async_timeout_ns) {
            st = NRT_TIMEOUT;
            break;
        }
        struct timespec ts = jobq_deadline(10 * 1000 * 1000);
        pthread_cond_timedwait(&async_progress, &async_lock, &ts);
        if (async_finished != seen) {
            seen = async_finished;
            last = spin_now_ns();
        }
    }
    async_lock_drop();
    if (st == NRT_CLOSED)
        LOG_ERROR("NRT", "nrt_close was called while draining VNC %d", (int)vnc);
    else if (st == NRT_TIMEOUT)
        LOG_ERROR("NRT", "draining VNC %d: no queued request completed in %.1f s "
                  "(NEURON_RT_EXEC_TIMEOUT)", (int)vnc, (double)async_timeout_ns / 1e9);
    return st;
}

/* ---- shutdown ----------------------------------------------------------------- */

/* Cancel the pending requests of q (NRT_CLOSED). Lock held; the cancelled
 * requests are appended to *freed for freeing after unlocking. */
static void async_cancel(struct async_queue *q, struct async_req **freed)
{
    assert(async_lock_held());
    while (q->head != NULL) {
        struct async_req *r = q->head;
        q->head = r->next;
        async_finish(r, NRT_CLOSED);
        async_live--;  /* freed by the caller, not by a worker */
        r->next = *freed;
        *freed = r;
    }
    q->tail = NULL;
}

void async_shutdown(void)
{
    struct async_req *freed = NULL;
    uint32_t cancelled = 0;
    async_lock_take();
    if (async_queues == NULL) {
        async_lock_drop();
        return;
    }
    for (uint32_t i = 0; i < ASYNC_NQUEUES; i++)
        if (async_queues[i] != NULL)
            async_cancel(async_queues[i], &freed);
    while (async_live > 0)  /* running requests, freed to the last byte */
        pthread_cond_wait(&async_progress, &async_lock);
    struct async_queue **qs = async_queues;
    async_queues = NULL;
    async_lock_drop();
    for (struct async_req *r = freed, *n; r != NULL; r = n, cancelled++) {
        n = r->next;
        async_req_free(r);
    }
    if (cancelled > 0)
        LOG_WARN("NRT", "nrt_close cancelled %u asynchronous requests that had not started",
                 cancelled);
    for (uint32_t i = 0; i < ASYNC_NQUEUES; i++) {
        struct async_queue *q = qs[i];
        if (q == NULL)
            continue;
        worker_fini(&q->own);     /* joins the thread, if it was started */
        async_lock_take();        /* async_wake's rule, though no thread is left to race */
        async_wake(q);            /* none left: every request finished */
        async_lock_drop();
        free(q);
    }
    free(qs);
}
