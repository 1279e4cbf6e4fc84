/*
 * coll_net.c: the part of a communicator that spans nodes (see
 * coll_int.h and docs/nodes.md). When the environment names a job of
 * several nodes, joining first runs the bootstrap (devices/link/bootstrap.h)
 * to learn which ranks live on which node, then forms the communicator
 * among this node's ranks in the node's own file, then starts a libfabric
 * bridge (devices/link/fabric.h) that carries the channels between this rank
 * and the ranks of other nodes. The collectives' algorithms run unchanged
 * over the channels; only liveness, aborts and link accounting of remote
 * ranks come from here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/config/env.h"
#include "devices/link/bootstrap.h"
#include "devices/coll/coll_int.h"
#include "devices/link/fabric.h"
#include "devices/machine/machine.h"
#include "devices/config/node.h"
#include "devices/thread/spin.h"
#include "emu/log.h"

#define NET_DEAD_MS_DEFAULT 5000.0  /* silence after which a remote rank is dead */

/* What a communicator knows about other nodes. */
struct coll_net {
    struct node_job job;        /* this node in the job */
    struct fab_bridge *fab;     /* the bridge (this rank's endpoint) */
    struct boot_entry *table;   /* world entries: every rank */
    bool *remote;               /* world entries: on another node */
    struct chan *out;           /* world entries: bridge ends of rank -> s */
    struct chan *in;            /* world entries: bridge ends of s -> rank */
    uint64_t ring_cap;          /* channel sizes advertised in the bootstrap ... */
    uint64_t mesh_cap;          /* ... checked against the node's file */
};

/* The bootstrap's callback: open the endpoint at the address the node talks from. */
static NRT_STATUS net_addr(void *arg, const char *src, struct boot_entry *me)
{
    struct coll_comm *c = arg;
    const char *bind = getenv("TRNEMU_NODE_ADDR");
    return fab_open(bind && *bind ? bind : src, me, &c->net->fab);
}

static void net_free(struct coll_net *n)
{
    if (n == NULL)
        return;
    fab_close(n->fab);
    free(n->table);
    free(n->remote);
    free(n->out);
    free(n->in);
    free(n);
}

/* Is every rank's node index in range, and does this rank's node hold some? */
static NRT_STATUS net_check_table(struct coll_comm *c)
{
    struct coll_net *n = c->net;
    uint32_t here = 0;
    for (uint32_t r = 0; r < c->world; r++) {
        if (n->table[r].node >= n->job.nodes || n->table[r].addrlen > BOOT_ADDR_MAX) {
            LOG_ERROR("NCCL", "bootstrap: rank %u names node %u of %u", r, n->table[r].node,
                      n->job.nodes);
            return NRT_INVALID;
        }
        n->remote[r] = n->table[r].node != n->job.node;
        here += !n->remote[r];
    }
    return here > 0 ? NRT_SUCCESS : NRT_INVALID;
}

NRT_STATUS coll_net_boot(struct coll_comm *c, uint64_t ring_cap, uint64_t mesh_cap,
                         uint64_t deadline_ns)
{
    struct node_job job;
    NRT_STATUS st = node_job_from_env(c->m->cfg.profile, &job);
    if (st != NRT_SUCCESS || !job.multi)
        return st;
    struct coll_net *n = calloc(1, sizeof *n);
    if (n == NULL)
        return NRT_RESOURCE;
    n->job = job;
    n->ring_cap = ring_cap;
    n->mesh_cap = mesh_cap;
    n->table = calloc(c->world, sizeof *n->table);
    n->remote = calloc(c->world, sizeof *n->remote);
    n->out = calloc(c->world, sizeof *n->out);
    n->in = calloc(c->world, sizeof *n->in);
    c->net = n;
    if (!n->table || !n->remote || !n->out || !n->in)
        return NRT_RESOURCE;
    struct boot_entry me = {job.node, (int32_t)getpid(), c->gvnc, c->chip, 0, 0, ring_cap,
                            mesh_cap, {0}};
    st = boot_exchange(&job, c->world, c->rank, &me, net_addr, c, deadline_ns, n->table);
    if (st == NRT_SUCCESS)
        st = net_check_table(c);
    if (st == NRT_SUCCESS)
        LOG_INFO("NCCL", "rank %u of %u: node %u of %u, bootstrap at %s:%s done", c->rank,
                 c->world, job.node, job.nodes, job.host, job.port);
    return st;
}

bool coll_net_remote(const struct coll_comm *c, uint32_t r)
{
    return c->net != NULL && c->net->remote[r];
}

/* A remote rank reported a failure: the node's communicator fails too. */
static void net_on_abort(void *arg, int32_t st, int32_t rank, int32_t by)
{
    struct coll_comm *c = arg;
    int32_t zero = 0;
    if (atomic_compare_exchange_strong(&c->ctl->abort_status, &zero, st)) {
        atomic_store(&c->ctl->abort_rank, rank);
        atomic_store(&c->ctl->abort_by, by);
        for (uint32_t i = 0; i < c->world; i++)
            if (!coll_net_remote(c, i))
                chan_bell_ring(&c->bells[i]);
    }
}

void coll_net_attach(struct coll_comm *c, uint32_t r)
{
    struct coll_net *n = c->net;
    struct chan_bell *fb = fab_bell(n->fab);
    uint64_t cap;
    uint8_t *shm = coll_chan_shm(c, c->rank, r, &cap);
    chan_attach(&c->tx[r], shm, cap, fb, &c->bells[c->rank]);
    chan_attach(&n->out[r], shm, cap, fb, &c->bells[c->rank]);
    shm = coll_chan_shm(c, r, c->rank, &cap);
    chan_attach(&c->rx[r], shm, cap, &c->bells[c->rank], fb);
    chan_attach(&n->in[r], shm, cap, &c->bells[c->rank], fb);
    c->chip_of[r] = n->table[r].chip;
    c->pid_of[r] = n->table[r].pid;
    c->start_of[r] = 0;
}

NRT_STATUS coll_net_start(struct coll_comm *c, uint64_t deadline_ns)
{
    struct coll_net *n = c->net;
    if (c->ctl->ring_cap != n->ring_cap || c->ctl->mesh_cap != n->mesh_cap) {
        LOG_ERROR("NCCL", "rank %u: this node's communicator file has channels of %" PRIu64
                  "/%" PRIu64 " bytes, the bootstrap announced %" PRIu64 "/%" PRIu64
                  " (TRNEMU_COLL_RING_KIB / TRNEMU_COLL_MESH_KIB must agree on every node)",
                  c->rank, c->ctl->ring_cap, c->ctl->mesh_cap, n->ring_cap, n->mesh_cap);
        return NRT_INVALID;
    }
    uint64_t dead_ms;
    (void)env_read_uint("TRNEMU_NODE_DEAD_MS", 1, 86400000, NET_DEAD_MS_DEFAULT, &dead_ms);
    double limit_ms = (double)dead_ms;
    uint64_t left = deadline_ns - spin_now_ns();
    uint64_t dead_ns = (uint64_t)(limit_ms * 1e6);
    if (dead_ns > left / 2)
        dead_ns = left / 2;  /* a dead node is named before the timeout */
    return fab_start(n->fab, c->world, c->rank, n->table, n->remote, n->out, n->in, dead_ns,
                     net_on_abort, c);
}

bool coll_net_alive(struct coll_comm *c, uint32_t r)
{
    return fab_peer_alive(c->net->fab, r, NULL);
}

void coll_net_abort(struct coll_comm *c, NRT_STATUS st, uint32_t rank)
{
    if (c->net != NULL)
        fab_abort(c->net->fab, (int32_t)st, (int32_t)rank);
}

void coll_net_describe(const struct coll_comm *c, uint32_t r, char *buf, size_t cap)
{
    if (!coll_net_remote(c, r)) {
        snprintf(buf, cap, "pid %d, VNC %u", (int)c->pid_of[r], c->slots[r].gvnc);
        return;
    }
    const char *why;
    bool alive = fab_peer_alive(c->net->fab, r, &why);
    snprintf(buf, cap, "node %u, pid %d, VNC %u; %s", c->net->table[r].node,
             (int)c->net->table[r].pid, c->net->table[r].gvnc,
             alive ? "reachable" : why);
}

void coll_net_close(struct coll_comm *c)
{
    net_free(c->net);
    c->net = NULL;
}
