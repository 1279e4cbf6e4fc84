/*
 * core_coll.h: how the collective instructions of a core reach the other
 * ranks, without emu knowing anything of processes or shared memory.
 *
 * A program carries a pointer to a core_coll (core_program.coll), set by
 * whoever runs it (devices/runtime/exec.c). Cross-rank instructions (all_reduce,
 * all_gather, reduce_scatter, all_to_all, permute) hand a core_coll_call with
 * contiguous buffers to iface->run, which blocks until the operation is
 * complete on this rank or has failed. Instructions between the physical
 * cores of one logical core (core_barrier, sendrecv) use the core_lnc
 * state that every core of one run shares; their semantics live in
 * emu/engines/exec_coll.c. The variable-count collectives (all_to_all_v,
 * all_gather_v) hand a core_coll_vcall to iface->run_v instead.
 */
#ifndef TRNEMU_EMU_COLL_IFACE_H
#define TRNEMU_EMU_COLL_IFACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/ap.h"
#include "emu/status.h"

#define CORE_LNC_MAX_CORES 4  /* physical cores one logical core may have */
#define CORE_LNC_ENGINES 8    /* engines per core tracked (ISA_ENG_COUNT or more) */

/* A collective operation (values shared with devices/coll/coll.h). */
enum core_coll_kind {
    CORE_COLL_ALL_REDUCE = 1,     /* every rank gets the reduction of all inputs */
    CORE_COLL_ALL_GATHER = 2,     /* every rank gets all inputs, in rank order */
    CORE_COLL_REDUCE_SCATTER = 3, /* rank r gets part r of the reduction */
    CORE_COLL_ALL_TO_ALL = 4,     /* part j of rank i goes to part i of rank j */
    CORE_COLL_PERMUTE = 5,        /* send to one rank, receive from another */
    CORE_COLL_BARRIER = 6,        /* no data: every rank has arrived */
};

/* One cross-rank operation of one rank: contiguous buffers. */
struct core_coll_call {
    enum core_coll_kind kind; /* what to do */
    uint32_t group;      /* replica group (0: every rank) */
    uint32_t dtype;      /* element type (nrt_dtype_t value) */
    uint32_t op;         /* reduction: ISA_COLL_* (add, max, min, fma) */
    const void *src;     /* this rank's input */
    uint64_t count;      /* elements in src */
    void *dst;           /* output: see the kind for its size */
    uint64_t dst_count;  /* elements dst holds */
    uint32_t send_to;    /* permute: rank in the group to send to */
    uint32_t recv_from;  /* permute: rank in the group to receive from */
};

/* A variable-count collective (values shared with devices/coll/coll.h). */
enum core_coll_vkind {
    CORE_COLL_V_ALL_TO_ALL = 1,  /* send_counts[r] elements from send_displs[r] go to rank r */
    CORE_COLL_V_ALL_GATHER = 2,  /* one chunk of send_counts[0] elements goes to every rank */
};

/* One variable-count operation of one rank: contiguous buffers, counts and
 * offsets in elements, arrays of one entry per rank of the group (all_gather_v:
 * send_counts and send_displs have one entry). */
struct core_coll_vcall {
    enum core_coll_vkind kind;   /* what to do */
    uint32_t group;              /* replica group (0: every rank) */
    uint32_t dtype;              /* element type (nrt_dtype_t value) */
    const void *src;             /* this rank's input */
    uint64_t src_count;          /* elements in src */
    void *dst;                   /* output; elements no chunk lands on keep their value */
    uint64_t dst_count;          /* elements in dst */
    const uint64_t *send_counts; /* elements sent to each rank */
    const uint64_t *send_displs; /* where in src each of those chunks starts */
    const uint64_t *recv_displs; /* where in dst the chunk of each rank lands; NULL: rank s
                                    at s * (dst_count / ranks) */
    uint64_t *recv_counts;       /* out: elements received from each rank; NULL: not wanted */
};

/* Posted half of a sendrecv between the cores of one logical core. */
struct core_lnc_post {
    bool active;         /* a sendrecv of this core is under way */
    bool sent;           /* its data was taken by the receiver */
    bool received;       /* it has its data */
    uint32_t send_to;    /* receiving core */
    uint32_t recv_from;  /* sending core */
    uint32_t pipe;       /* pipe_id: both halves must agree */
    uint32_t dtype;      /* element type of the staged data */
    uint64_t count;      /* elements staged */
    void *stage;         /* the sender's data, copied when posted */
    uint32_t engine;     /* engine that posted it */
    struct ap_view dst;  /* where its data goes (bound when posted) */
};

/* What the cores of one logical core share during one run. The cores may
 * run on different host threads (core_run): every field below `lock` is
 * read and written with it held, and each change another core may be
 * waiting for bumps `epoch` and wakes `changed` (the scheduler of a core
 * whose engines are all blocked sleeps there). core_lnc_init prepares it,
 * core_lnc_fini releases it. */
struct core_lnc {
    pthread_mutex_t lock;                         /* guards the fields below */
    pthread_cond_t changed;                       /* broadcast when epoch moves */
    _Atomic uint64_t epoch;                       /* changes so far (written under lock) */
    uint32_t ncores;                              /* physical cores in the run */
    uint64_t barrier_arrived[CORE_LNC_MAX_CORES]; /* core_barriers reached per core */
    /* per core and engine: the arrival count its pending barrier waits for (0: none) */
    uint64_t barrier_ticket[CORE_LNC_MAX_CORES][CORE_LNC_ENGINES];
    struct core_lnc_post post[CORE_LNC_MAX_CORES]; /* sendrecv under way per core */
};

/* Prepare l for a run of ncores physical cores (nothing arrived, nothing
 * posted); core_lnc_fini when the run is over. */
void core_lnc_init(struct core_lnc *l, uint32_t ncores);
void core_lnc_fini(struct core_lnc *l);

/* Record a change other cores may wait for (l->lock held): bump the
 * epoch and wake every sleeping core scheduler. */
void core_lnc_changed(struct core_lnc *l);

/* l->lock, taken and dropped with its holder noted for core_lnc_held (a
 * condition wait on l->changed gives it up only while the thread sleeps). */
void core_lnc_lock(struct core_lnc *l);
void core_lnc_unlock(struct core_lnc *l);
/* Does this thread hold l->lock? For assert() only. */
bool core_lnc_held(const struct core_lnc *l);

/* The link from a program to its collectives. */
struct core_coll {
    void *user;              /* the runner's state */
    uint32_t core_index;     /* which physical core of the logical core runs it */
    struct core_lnc *lnc;    /* shared by the cores of the run */
    /* Run one cross-rank operation to completion on this rank. The status
     * is the instruction's; err receives the cause of a failure. */
    emu_status (*run)(void *user, const struct core_coll_call *call, char *err, size_t err_cap);
    /* Reusable staging memory slot (0..7) of at least bytes; NULL when
     * the host is out of memory. Lives until the runner frees it. */
    void *(*scratch)(void *user, uint32_t slot, uint64_t bytes);
    /* Ranks in replica group `group`, 0 for a group that does not exist. */
    uint32_t (*group_size)(void *user, uint32_t group);
    /* Run one variable-count operation to completion on this rank (as run;
     * NULL: the runner has none). */
    emu_status (*run_v)(void *user, const struct core_coll_vcall *call, char *err,
                        size_t err_cap);
};

#endif
