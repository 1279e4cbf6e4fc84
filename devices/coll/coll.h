/*
 * coll.h: collective communication between the ranks of a job, over
 * emulated NeuronLink channels (devices/link/channel.h) in the shared instance.
 *
 * A communicator is the set of ranks 0..N-1 of a job; each rank is one
 * VNC of some process attached to the same instance. The communicator of
 * (job, N) lives in the file `coll-<job>-w<N>` of the instance directory:
 * a control block (one slot per rank: pid, start time, VNC, chip), a
 * doorbell per rank, and one channel per ordered pair of ranks (large for
 * ring neighbours r -> r+1, small for the others). The job is named by
 * NEURON_RT_ROOT_COMM_ID (the rank-0 address the vendor runtime uses to
 * bootstrap; "default" when unset), so two jobs on one instance with
 * different ids never meet.
 *
 * Joining (coll_comm_get) publishes this rank's slot and waits until all
 * N ranks have; the last to arrive empties every channel and opens the
 * communicator. Operations then run over it (coll_run) and block until
 * they are done on this rank. Every wait is bounded: a peer that dies or
 * leaves makes every rank still waiting fail with
 * NRT_EXEC_HW_ERR_COLLECTIVES, a peer that does not turn up by the
 * deadline with NRT_TIMEOUT, mismatched operations (kind, size, dtype, op)
 * with NRT_INVALID, each with a log line naming the rank. A failure breaks
 * the communicator for every rank (its channels are in an unknown state):
 * later operations on it fail at once, until the process closes the
 * runtime and joins again.
 */
#ifndef TRNEMU_DEVICES_COLL_H
#define TRNEMU_DEVICES_COLL_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/coll/coll_reduce.h"
#include "devices/machine/machine.h"
#include "emu/core/core_coll.h"
#include "nrt/nrt.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_status.h"

/* Most ranks in one communicator. */
#define COLL_MAX_RANKS 1024

struct coll_comm;

/* One operation as the callers describe it. */
struct coll_args {
    enum core_coll_kind kind;    /* what to do */
    uint32_t dtype;         /* element type (nrt_dtype_t value) */
    uint32_t op;            /* enum coll_op (reductions only) */
    const void *src;        /* this rank's input */
    uint64_t count;         /* elements in src */
    void *dst;              /* output (may be src itself) */
    const uint32_t *group;  /* member ranks in group order; NULL: all ranks */
    uint32_t ngroup;        /* entries in group */
    uint32_t send_to;       /* permute: group position to send to */
    uint32_t recv_from;     /* permute: group position to receive from */
    uint64_t deadline_ns;   /* CLOCK_MONOTONIC deadline; 0: coll_deadline() */
};

/* Output elements of an operation given the input's (count) and the group
 * size; 0 when the count does not split evenly as the kind needs. */
uint64_t coll_out_count(enum core_coll_kind kind, uint64_t count, uint32_t nranks);

/* Deadline for an operation starting now: NEURON_RT_EXEC_TIMEOUT seconds
 * (600 when unset), or TRNEMU_COLL_TIMEOUT seconds when set. */
uint64_t coll_deadline(void);

/* The communicator in which this process is rank `rank` of `world`, on
 * machine-wide VNC gvnc: found, or made and joined (blocking until every
 * rank has joined, at most until deadline_ns). NRT_TIMEOUT when some rank
 * did not join in time, NRT_INVALID for bad arguments or a rank held by
 * another live process (another job with the same id), NRT_RESOURCE when
 * the shared file cannot be made. Callers hold rt_enter(). */
/* A communicator this process already joined as (rank, world): is every
 * other rank's process still there? NRT_EXEC_HW_ERR_COLLECTIVES (one log
 * line) when one has left; NRT_SUCCESS when all are there or none joined. */
NRT_STATUS coll_comm_peers_check(struct machine *m, uint32_t rank, uint32_t world);
NRT_STATUS coll_comm_get(struct machine *m, uint32_t gvnc, uint32_t rank, uint32_t world,
                         uint64_t deadline_ns, struct coll_comm **out);
/* The communicator a process built on machine-wide VNC gvnc
 * (nrt_build_global_comm), or NULL. */
struct coll_comm *coll_comm_of_vnc(struct machine *m, uint32_t gvnc);
/* This rank and the number of ranks. */
uint32_t coll_comm_rank(const struct coll_comm *c);
uint32_t coll_comm_world(const struct coll_comm *c);
/* Leave and free every communicator of this process (nrt_close). */
void coll_comm_release_all(void);

/* Run one operation on this rank (see struct coll_args and docs/collectives.md).
 * Thread-safe: operations on one communicator run one at a time. */
NRT_STATUS coll_run(struct coll_comm *c, const struct coll_args *a);

/* Name of a kind ("all_reduce", ...) for messages. */
const char *coll_kind_name(enum core_coll_kind kind);

/* ---- from the host, outside any NEFF (coll_host.c) ---------------------------
 * vnc is the caller's local VNC; rank/world its global device id and count.
 * Callers hold rt_enter(). */
/* The communicator of rank of world on local VNC vnc (joined on first use). */
NRT_STATUS coll_host_comm(int32_t vnc, uint32_t rank, uint32_t world, struct coll_comm **out);
NRT_STATUS coll_host_join(int32_t vnc, uint32_t rank, uint32_t world);
NRT_STATUS coll_host_barrier(int32_t vnc, uint32_t rank, uint32_t world);
NRT_STATUS coll_host_all_gather(int32_t vnc, uint32_t rank, uint32_t world, uint64_t bytes,
                                const void *in, void *out);
/* Check and record a collective over tensor lists (nrta_cc_prepare): dtype
 * an nrt_dtype_t, op an nrt_op_type_t, cc_op an nrt_cc_op_type_t. */
NRT_STATUS coll_cc_prepare(const nrt_cc_comm_t *comm, const nrt_tensor_list_t *in,
                           const nrt_tensor_list_t *out, uint32_t dtype, uint32_t op,
                           uint32_t cc_op, nrt_cc_context_t **ctx);
/* Run a prepared collective now (on an async queue's thread). */
NRT_STATUS coll_cc_run(const nrt_cc_context_t *x);
/* The local VNC a prepared collective runs on. */
int32_t coll_cc_vnc(const nrt_cc_context_t *x);
/* The ranks taking part in x (its replica group). */
uint32_t coll_cc_ranks(const nrt_cc_context_t *x);
/* Is x a prepared context not yet freed? */
bool coll_cc_is_live(const nrt_cc_context_t *x);
void coll_cc_free(nrt_cc_context_t *x);
/* Free every prepared context never scheduled (nrt_close). */
void coll_cc_free_all(void);

/* ---- variable-count collectives (coll_v.c) ----------------------------------
 * all_to_all_v and all_gather_v over every rank of a communicator. Counts and
 * offsets are in elements of dtype; arrays have one entry per rank, except
 * all_gather_v's send_counts and send_displs (one entry: the chunk every
 * rank gets). Statuses as coll_run's; ranks whose counts disagree (a sender's
 * count against the receiver's expected count or room) fail with
 * NRT_INVALID on every rank, one log line each, before any data moves. */
struct coll_vargs {
    struct core_coll_vcall op;    /* the operation (op.group unused: the whole communicator;
                                     op.send_displs NULL: rank r's chunk at r * (src_count / n),
                                     all_gather_v's at 0) */
    const uint64_t *recv_expect;  /* elements expected from each rank; NULL: any that fits */
    uint64_t deadline_ns;         /* CLOCK_MONOTONIC deadline; 0: coll_deadline() */
};
/* Run one on this rank (two operations of the communicator: coll_v.c). */
NRT_STATUS coll_v_run(struct coll_comm *c, const struct coll_vargs *a);
/* The same from the host (trnemu_all_to_all_v, trnemu_all_gather_v). */
NRT_STATUS coll_host_v(int32_t vnc, uint32_t rank, uint32_t world, const struct coll_vargs *a);
/* Free the staging memory kept for the communicators (nrt_close, after
 * coll_comm_release_all). */
void coll_v_release_all(void);

/* ---- point to point between processes (coll_p2p.c) ---------------------------
 * LNCs are machine-wide VNC ids; side 0 sends, 1 receives. Statuses as the
 * nrt_async_sendrecv_* functions document them. Callers hold rt_enter(). */
NRT_STATUS coll_p2p_init(int lnc);
NRT_STATUS coll_p2p_close(int lnc);
NRT_STATUS coll_p2p_flush(int lnc);
NRT_STATUS coll_p2p_open(const char *peer_ip, int peer_lnc, int lnc, int side,
                         nrt_async_sendrecv_comm_t **out);
NRT_STATUS coll_p2p_test_comm(nrt_async_sendrecv_comm_t *c, bool *done);
NRT_STATUS coll_p2p_post(nrt_tensor_t *t, size_t off, size_t len, nrt_async_sendrecv_comm_t *c,
                         int side, nrt_async_sendrecv_request_t **out);
NRT_STATUS coll_p2p_test(nrt_async_sendrecv_request_t *r, bool *done, size_t *size);
int coll_p2p_max_comms(void);
int coll_p2p_max_pending(void);

#endif
