/*
 * coll_int.h: the insides of the collectives, shared by coll.c (the
 * communicator: shared file, joining), coll_algo.c (the operations and
 * their progress engine), coll_direct.c (the direct collectives) and
 * coll_shared.c (deadlines, faults, waits, accounting) and coll_net.c (ranks
 * on other nodes). Calls go one way: coll.c -> coll_algo.c ->
 * coll_direct.c, each -> coll_shared.c -> coll_net.c. Not for other modules.
 */
#ifndef TRNEMU_DEVICES_COLL_INT_H
#define TRNEMU_DEVICES_COLL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "devices/link/channel.h"
#include "devices/coll/coll.h"

#define COLL_FILE_MAGIC 0x314c4c4f43454e52ull /* "RNECOLL1" little-endian */
#define COLL_FILE_VERSION 4u
#define COLL_MAX_GROUPS 32        /* replica groups with their own sequence numbers */
#define COLL_PATH_MAX 600         /* longest shared file path */
#define COLL_NONE UINT32_MAX      /* no peer: a local step */

/* One rank's entry in the shared control block (64 bytes). */
struct coll_slot {
    _Atomic int32_t pid;     /* holder, 0 when free */
    uint32_t gvnc;           /* machine-wide VNC of the rank */
    uint64_t start_time;     /* holder's start time (pid reuse guard) */
    uint32_t chip;           /* chip of that VNC */
    uint32_t reserved;       /* zero */
    _Atomic uint64_t form;   /* formation the holder belongs to; 0 while it waits */
    uint8_t pad[32];         /* to 64 bytes */
};

/* A rank's post for a direct collective (64 bytes; coll_direct.c). */
struct coll_post {
    _Atomic uint64_t seq;    /* operation (on the whole communicator) it describes */
    uint32_t src_chip;       /* chip of the input, UINT32_MAX: not in HBM */
    uint32_t dst_chip;       /* chip of the output, UINT32_MAX: not in HBM */
    uint64_t src_off;        /* chip-relative offset of the input */
    uint64_t dst_off;        /* and of the output */
    uint64_t bytes;          /* size of the input */
    uint8_t dtype;           /* element type */
    uint8_t op;              /* reduction (0 for an all-gather) */
    uint8_t kind;            /* enum core_coll_kind */
    uint8_t reserved[5];     /* zero */
    _Atomic uint64_t stage;  /* operation << 2 | stage reached (1 posted, 2 reduced, 3 gathered) */
    uint8_t pad[8];          /* to 64 bytes */
};

/* The shared control block at the start of the file; slots, bells and
 * channels follow at the offsets coll_layout computes. */
struct coll_ctl {
    uint64_t magic;                 /* COLL_FILE_MAGIC */
    uint32_t version;               /* COLL_FILE_VERSION */
    uint32_t world;                 /* ranks */
    uint64_t ring_cap;              /* data bytes of a ring channel (r -> r+1) */
    uint64_t mesh_cap;              /* data bytes of any other channel */
    uint64_t file_bytes;            /* size of the file */
    uint64_t mesh_max;              /* largest all-reduce/all-gather sent by mesh (bytes) */
    uint32_t mesh_ranks;            /* most ranks for the mesh algorithms */
    uint32_t switched;              /* 1: chips meet through NeuronSwitch (direct algorithms) */
    uint64_t direct_min;            /* smallest direct collective (bytes of the full tensor) */
    _Atomic uint64_t form;          /* last formation number */
    _Atomic int32_t abort_status;   /* first failure of the formation (0: none) */
    _Atomic int32_t abort_rank;     /* the rank it names */
    _Atomic int32_t abort_by;       /* the rank that saw it */
    uint32_t reserved;              /* zero */
    struct chan_bell form_bell;     /* rung when a formation opens */
};

/* Where things are in the file. */
struct coll_layout {
    uint64_t slots;       /* offset of slot[0] */
    uint64_t bells;       /* offset of bell[0] */
    uint64_t posts;       /* offset of post[0] */
    uint64_t rings;       /* offset of ring channel 0 (rank 0 -> 1) */
    uint64_t ring_stride; /* bytes per ring channel */
    uint64_t mesh;        /* offset of mesh channel (0, 0) */
    uint64_t mesh_stride; /* bytes per mesh channel (index from * world + to) */
    uint64_t total;       /* file size */
};

/* Sequence numbers of one replica group. */
struct coll_group_seq {
    uint64_t key;    /* hash of the member list; 0 when unused */
    uint32_t seq;    /* operations done in it */
};

/* One message under way, sent or received (coll_algo.c). */
struct coll_xfer {
    bool out;               /* sent by this rank */
    uint32_t peer;          /* the other rank (global), COLL_NONE: local step */
    struct chan *ch;        /* channel to/from peer */
    struct chan_msg hdr;    /* header sent, or expected */
    uint64_t done;          /* payload bytes moved */
    uint8_t phase;          /* 0 header, 1 payload, 2 padding, 3 finished */
    int after;              /* xfer that must finish first, -1: none */
    bool fed;               /* out: payload written by a fused receive */
    bool accounted;         /* out: counted on the links */
    const uint8_t *src;     /* out / local: the payload */
    const uint64_t *ready;  /* out: payload bytes ready (NULL: all) */
    int sink;               /* in / local: what to do with the data (enum in coll_algo.c) */
    uint8_t *dst;           /* in / local: destination (or accumulator) */
    const uint8_t *x;       /* in: this rank's operand for the fold sinks */
    int fuse;               /* in, fused: the out xfer it writes into */
};

/* A communicator of this process (one rank of it). */
struct coll_comm {
    struct coll_comm *next;         /* registry list */
    struct machine *m;              /* machine it was made on */
    char key[64];                   /* job key (hashed NEURON_RT_ROOT_COMM_ID) */
    char path[COLL_PATH_MAX];       /* the shared file */
    dev_t dev;                      /* its device ... */
    ino_t ino;                      /* ... and inode, to notice a re-created instance */
    int fd;                         /* open file (flock for joins) */
    uint8_t *map;                   /* the mapped file */
    uint64_t map_bytes;             /* bytes mapped */
    struct coll_ctl *ctl;           /* control block (in map) */
    struct coll_slot *slots;        /* world entries (in map) */
    struct chan_bell *bells;        /* world entries (in map) */
    struct coll_post *posts;        /* world entries (in map) */
    uint64_t all_ops;               /* operations over every rank so far */
    uint64_t cur_op;                /* the one under way (0: a smaller group's) */
    uint64_t posted_op;             /* the last one this rank posted for */
    struct coll_layout lay;         /* offsets in the file */
    uint32_t world;                 /* ranks */
    uint32_t rank;                  /* this rank */
    uint32_t gvnc;                  /* its machine-wide VNC */
    uint32_t chip;                  /* its chip */
    uint64_t form;                  /* formation joined */
    struct chan *tx;                /* world entries: channel to each rank */
    struct chan *rx;                /* world entries: channel from each rank */
    uint32_t *chip_of;              /* world entries: chip of each rank */
    int32_t *pid_of;                /* world entries: pid of each rank */
    uint64_t *start_of;             /* world entries: start time of each rank */
    pthread_mutex_t lock;           /* one operation at a time */
    NRT_STATUS broken;              /* first failure; NRT_SUCCESS while usable */
    struct coll_group_seq groups[COLL_MAX_GROUPS]; /* per replica group */
    uint8_t *scratch;               /* staging for accumulators and overlaps */
    uint64_t scratch_cap;           /* its bytes */
    struct coll_xfer *xf;           /* the operation's messages */
    uint32_t nxf_cap;               /* entries xf holds */
    uint32_t *all;                  /* world entries: 0..world-1 (the whole group) */
    uint32_t spin_ns;               /* busy-poll window of every wait, ns */
    uint64_t peers_full_ns;         /* when coll_comm_peers_check last read /proc */
    uint64_t file_seen_ns;          /* when coll_comm_current last stat()ed the file */
    struct coll_net *net;           /* ranks on other nodes (coll_net.c); NULL: one node */
};

/* ---- coll_shared.c, for coll.c, coll_algo.c and coll_direct.c ------------- */

/* Mark the communicator failed for every rank (the first failure wins) and
 * return the status to report. */
NRT_STATUS coll_fail(struct coll_comm *c, NRT_STATUS st, uint32_t rank);
/* The shared abort word: NRT_SUCCESS, or the failure another rank found
 * (logged once; the communicator is broken from now on). */
NRT_STATUS coll_abort_check(struct coll_comm *c);
/* Is rank r still in the communicator (full: check its start time too)? */
bool coll_rank_alive(struct coll_comm *c, uint32_t r, bool full);
/* Rank r is gone and this rank needs it: log, fail for everyone. */
NRT_STATUS coll_missing(struct coll_comm *c, uint32_t r);
/* A waiter on this rank's bell until deadline_ns (the caller sets check). */
void coll_waiter(struct coll_comm *c, uint64_t deadline_ns, struct chan_waiter *w);
/* Count a message on the links between two ranks' chips: sent to peer, or
 * (coll_account_in) read from it. */
void coll_account(struct coll_comm *c, uint32_t peer, uint64_t bytes);
void coll_account_in(struct coll_comm *c, uint32_t peer, uint64_t bytes);
/* Scratch of at least bytes (grown, never shrunk); NULL when out of memory. */
uint8_t *coll_scratch(struct coll_comm *c, uint64_t bytes);

/* Shared memory of the channel from rank i to rank j, and its size (the
 * file's layout only: inline, so coll.c and coll_net.c share it without
 * calling each other). */
static inline uint8_t *coll_chan_shm(struct coll_comm *c, uint32_t i, uint32_t j, uint64_t *cap)
{
    if (j == (i + 1) % c->world) {
        *cap = c->ctl->ring_cap;
        return c->map + c->lay.rings + (uint64_t)i * c->lay.ring_stride;
    }
    *cap = c->ctl->mesh_cap;
    return c->map + c->lay.mesh + ((uint64_t)i * c->world + j) * c->lay.mesh_stride;
}

/* ---- coll_net.c: ranks on other nodes (docs/nodes.md) --------------------------- */

struct coll_net;
/* Before joining: when the environment names a job of several nodes, run
 * the bootstrap (channel sizes ring_cap/mesh_cap announced) and open this
 * rank's libfabric endpoint; nothing for a job on one node. */
NRT_STATUS coll_net_boot(struct coll_comm *c, uint64_t ring_cap, uint64_t mesh_cap,
                         uint64_t deadline_ns);
/* Is rank r on another node? */
bool coll_net_remote(const struct coll_comm *c, uint32_t r);
/* Channel ends to and from remote rank r, through the bridge. */
void coll_net_attach(struct coll_comm *c, uint32_t r);
/* After the node's formation: start carrying the remote channels (a dead
 * node is named before deadline_ns, the operations' collective timeout). */
NRT_STATUS coll_net_start(struct coll_comm *c, uint64_t deadline_ns);
/* Is remote rank r still there? */
bool coll_net_alive(struct coll_comm *c, uint32_t r);
/* Tell the other nodes that the communicator failed (st, naming rank). */
void coll_net_abort(struct coll_comm *c, NRT_STATUS st, uint32_t rank);
/* "pid .., VNC .." of rank r, with its node and state when remote. */
void coll_net_describe(const struct coll_comm *c, uint32_t r, char *buf, size_t cap);
/* Stop the bridge, free. */
void coll_net_close(struct coll_comm *c);

/* ---- coll_direct.c, for coll_algo.c ------------------------------------------ */

/* The direct all-reduce, reduce-scatter or all-gather (a->kind) over the
 * whole communicator (operation number op). *done false with NRT_SUCCESS:
 * some rank's buffers are not in HBM (or its output overlaps its input
 * other than in place), every rank goes on with another algorithm. */
NRT_STATUS coll_direct_run(struct coll_comm *c, const struct coll_args *a, uint64_t op,
                           bool *done);

/* ---- coll_algo.c, for coll.c ---------------------------------------------- */

/* Run a checked operation over members group[0..n) (this rank at position me). */
NRT_STATUS coll_algo_run(struct coll_comm *c, const struct coll_args *a, const uint32_t *group,
                         uint32_t n, uint32_t me, uint32_t seq);

#endif
