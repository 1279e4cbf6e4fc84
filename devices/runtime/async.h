/*
 * async.h: the asynchronous execution units behind nrt_async.h.
 *
 * Each process-local LNC has execution units (XUs) of five kinds, each
 * with its own queues: TENSOR_READ, TENSOR_WRITE and TENSOR_OP have
 * ASYNC_TENSOR_QUEUES queues, COMPUTE and COLLECTIVES one. A queue runs
 * its requests one at a time, in the order they were scheduled, on a
 * thread of its own (a struct worker, started on first use); different
 * queues and LNCs run at the same time. Executions still run on their
 * VNC's worker (exec_request.c), in line with that VNC's nrt_execute calls, so
 * they give the bits nrt_execute gives.
 *
 * A request is identified by a nrta_seq_t: the top 16 bits name the queue
 * (ASYNC_XU_ID), the low 48 bits count the queue's requests from 1.
 * Schedule calls bind and check everything up front (bad input is a
 * status and one log line, nothing is queued) and return at once;
 * NRT_QUEUE_FULL when a queue already holds its depth of unfinished
 * requests (TRNEMU_ASYNC_QUEUE_DEPTH, default ASYNC_DEFAULT_DEPTH).
 * Hand-offs poll before they sleep (spin.h), for TRNEMU_ASYNC_SPIN_US:
 * a queue's own thread after each request, for the next one; a
 * completion descriptor asked for the running request, for its end.
 * A failed request's status goes to the error tracker given with it.
 * async_shutdown (nrt_close) cancels what has not started (status
 * NRT_CLOSED in the trackers), waits for what runs, and frees the queues.
 * Callers hold rt_enter() unless noted.
 */
#ifndef TRNEMU_DEVICES_ASYNC_H
#define TRNEMU_DEVICES_ASYNC_H

#include <stdbool.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"

/* Queues of each tensor execution unit (the vendor overview: 2 per NC). */
#define ASYNC_TENSOR_QUEUES 2
/* Unfinished requests a queue accepts before NRT_QUEUE_FULL. */
#define ASYNC_DEFAULT_DEPTH 64
/* Default busy-poll window of the queues, us (TRNEMU_ASYNC_SPIN_US). */
#define ASYNC_SPIN_US_DEFAULT 30
/* Seconds nrt_async_drain_queued_execs waits with no request completing
 * when NEURON_RT_EXEC_TIMEOUT does not say. */
#define ASYNC_DRAIN_TIMEOUT_S 600
/* Most LNCs a sequence id can name (10 bits of the 16-bit XU id). */
#define ASYNC_MAX_LNC 1024
/* The XU id of (lnc, xu, queue): lnc in bits 6..15, xu 3..5, queue 0..2. */
#define ASYNC_XU_ID(lnc, xu, q) ((uint16_t)(((lnc) << 6) | ((xu) << 3) | (q)))

/* Queues of execution unit kind xu (0 for an unknown kind). */
int async_queue_count(nrta_xu_t xu);

/* Schedule calls. tracker may be NULL; *seq receives the request's id. */
NRT_STATUS async_execute(nrt_model_t *m, const nrt_tensor_set_t *in, nrt_tensor_set_t *out,
                         int queue, nrta_error_tracker_t *trk, nrta_seq_t *seq);
NRT_STATUS async_tensor_read(void *buf, nrt_tensor_t *t, uint64_t off, uint64_t size, int queue,
                             nrta_error_tracker_t *trk, nrta_seq_t *seq);
NRT_STATUS async_tensor_write(nrt_tensor_t *t, const void *buf, uint64_t off, uint64_t size,
                              int queue, nrta_error_tracker_t *trk, nrta_seq_t *seq);
NRT_STATUS async_tensor_copy(nrt_tensor_t *src, uint64_t src_off, nrt_tensor_t *dst,
                             uint64_t dst_off, uint64_t size, int queue,
                             nrta_error_tracker_t *trk, nrta_seq_t *seq);
/* Takes the context: it is freed once the collective ran (or failed to
 * be scheduled), and *ctx is set to NULL. */
NRT_STATUS async_collective(nrt_cc_context_t **ctx, int queue, nrta_error_tracker_t *trk,
                            nrta_seq_t *seq);

/* Completion. NRT_INVALID for an id no queue of this runtime issued. */
NRT_STATUS async_is_completed(nrta_seq_t seq, bool *done);
NRT_STATUS async_last_completed(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq);
/* A new eventfd that polls readable once seq is complete; the caller
 * closes it. */
NRT_STATUS async_completion_fd(nrta_seq_t seq, int *fd);
/* Wait until every request of local VNC vnc finished and its status
 * callback returned; NRT_CLOSED when nrt_close arrives first, NRT_TIMEOUT
 * when none completes for NEURON_RT_EXEC_TIMEOUT, NRT_INVALID from the
 * VNC's own status callback (its queue waits for that callback). */
NRT_STATUS async_drain(int32_t vnc);

/* Error trackers (no runtime needed). */
NRT_STATUS async_tracker_create(uint32_t lnc, nrta_error_tracker_t **out);
/* false (one log line) when t is not a live tracker. */
bool async_tracker_destroy(nrta_error_tracker_t *t);
NRT_STATUS async_tracker_list(nrta_error_tracker_t *t, const nrta_error_t **list, size_t *n);


/* Read the environment (rt_init): depth, busy-poll window and the
 * deprecated variable. */
void async_configure(void);
/* nrt_close, holding the call door shut: cancel, wait, free. */
void async_shutdown(void);

#endif
