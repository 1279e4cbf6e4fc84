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
/* Free the staging memory kept for the communicators (nrt_close, after
 * coll_comm_release_all). */
void coll_v_release_all(void);

#endif
