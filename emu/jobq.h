/*
 * jobq.h: a queue of jobs and the one thread that runs them, oldest
 * first: the hand-off every queue-plus-thread of trnemu shares (the
 * per-VNC and async workers, devices/thread/worker.c; the call log's
 * writer, store/calllog_queue.c; a restore's file writer,
 * store/cwriter.c). In emu/, beside grow.h, and built into the log's
 * library, so that every layer, the call log included, may use it; it
 * knows no layer's types.
 *
 * Jobs are the caller's objects, linked through a `void *` field of
 * theirs (JOBQ_LINK): queueing allocates nothing. The thread starts with
 * the first job (or jobq_start), takes jobs one at a time (or, for a
 * batch queue, every waiting job at once) and hands each to spec.run with
 * no lock held; it ends, once every queued job ran, when jobq_fini asks.
 *
 * What the users need beyond that, each optional:
 * - a bound (batch queues): jobq_put waits while spec.cap of weight waits;
 * - a job someone waits for: run names a flag the thread sets under the
 *   lock once run returned (jobq_wait_done);
 * - polling before sleeping: after a job that asks for it, the thread
 *   polls the queue's bell with spec.poll before it sleeps;
 * - borrowing: a caller that would only wait for its job may run it itself
 *   while the thread is idle and nothing waits (jobq_borrow); the thread
 *   then takes nothing until jobq_unborrow, so jobs still run one at a
 *   time and in order;
 * - giving up on a job not started yet (jobq_cancel);
 * - failure: once run reports one (jobq_fail), puts are refused and
 *   jobq_drain says so; jobs already queued still reach run, to be
 *   released.
 */
#ifndef TRNEMU_EMU_JOBQ_H
#define TRNEMU_EMU_JOBQ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* The offset of a job's link, a `void *` member (anything else does not
 * compile), for jobq_spec.link. */
#define JOBQ_LINK(type, member) _Generic(((type *)0)->member, void *: offsetof(type, member))

/* What run tells the queue about the job it ran (zeroed before each run). */
struct jobq_after {
    bool *done;        /* set to true under the lock once run returned, and
                          jobq_wait_done woken; NULL: nobody waits */
    uint32_t spin_ns;  /* poll an empty queue this long before sleeping (spec.poll) */
};

/* How a queue runs its jobs; fixed at jobq_init. */
struct jobq_spec {
    size_t link;   /* JOBQ_LINK of the jobs' type */
    /* Run job (a batch queue: the oldest of the jobs taken, the others
     * linked after it, the last link NULL) on the thread, no lock held.
     * The queue touches no job after run returned: run may free it. */
    void (*run)(void *ctx, void *job, struct jobq_after *after);
    void *ctx;     /* run's first argument */
    bool batch;    /* take every waiting job at once */
    uint64_t cap;  /* batch queues: jobq_put waits while the jobs waiting
                      weigh this much and its own would pass it (0: never) */
    /* Poll *bell for up to ns nanoseconds until it moves from seen
     * (jobq_after.spin_ns); NULL: never poll. The lock decides, not the
     * poll: its answer only ends the polling. */
    bool (*poll)(const _Atomic uint32_t *bell, uint32_t seen, uint64_t ns);
};

struct jobq {
    struct jobq_spec spec;     /* set once, read without the lock */
    pthread_mutex_t lock;      /* guards every field below but bell */
    pthread_cond_t more;       /* a job was queued, a borrow ended, or stop was asked */
    pthread_cond_t progress;   /* a job finished, room was made, a borrow ended, a failure */
    pthread_t thread;          /* the thread, when started */
    bool started;              /* thread is running */
    bool stop;                 /* the thread ends once the queue is empty */
    bool busy;                 /* the thread is running a job (or a batch) */
    bool borrowed;             /* a caller runs a job itself (jobq_borrow) */
    bool failed;               /* jobq_fail was called */
    void *head;                /* waiting jobs, oldest first */
    void *tail;                /* the newest */
    uint64_t load;             /* weight of the waiting jobs (batch queues) */
    _Atomic uint32_t bell;     /* moves with every job queued and with stop */
};

/* A queue with no job and no thread yet; spec is copied. A bound (cap)
 * needs a batch queue: a job's weight is given back when the thread takes
 * it, and only a batch knows it then (everything that waited). */
void jobq_init(struct jobq *q, const struct jobq_spec *spec);

/* Start the thread if it is not running; false when it cannot be. */
bool jobq_start(struct jobq *q);

/* Queue job (its link is overwritten), the thread started if need be;
 * weight counts against spec.cap (ignored when cap is 0): while the jobs
 * waiting and this one pass it, wait (a job is always taken into an empty
 * queue). false when nothing was queued: the thread cannot start, or the
 * queue failed (jobq_fail). */
bool jobq_put(struct jobq *q, void *job, uint64_t weight);

/* Take job out of the queue if the thread has not taken it yet; true when
 * it was (it will never run). Not for batch queues. */
bool jobq_cancel(struct jobq *q, void *job);

/* Borrow the idle thread's turn: true when it is idle and nothing waits
 * (nothing is borrowed either); the caller then runs its own job and
 * calls jobq_unborrow, jobs queued meanwhile waiting for it. false: queue
 * the job instead. */
bool jobq_borrow(struct jobq *q);
void jobq_unborrow(struct jobq *q);

/* Wait until *done (a job's jobq_after.done) was set. */
void jobq_wait_done(struct jobq *q, const bool *done);
/* jobq_wait_done for at most timeout_ns; *done at the end. */
bool jobq_wait_done_for(struct jobq *q, const bool *done, uint64_t timeout_ns);

/* The absolute CLOCK_REALTIME time ns nanoseconds from now, as
 * pthread_cond_timedwait takes it (also for conditions outside a jobq). */
struct timespec jobq_deadline(uint64_t ns);

/* Is the calling thread q's thread (a job calling back into its owner)? */
bool jobq_is_self(struct jobq *q);

/* From run: a job failed. Later puts are refused, waiting ones give up,
 * jobq_drain returns false. */
void jobq_fail(struct jobq *q);

/* Wait until no job waits or runs; false when the queue failed (at once). */
bool jobq_drain(struct jobq *q);

/* Wait for a borrow to end, let the thread run what is queued and end,
 * join it, and free what the queue holds (not the jobs). */
void jobq_fini(struct jobq *q);

#endif
