/*
 * fabric.c: the bridge that carries cross-node channel bytes over
 * libfabric (see fabric.h): endpoint setup, the send and receive threads,
 * credits, heartbeats, goodbyes and aborts.
 */
#include "devices/link/fabric.h"
#include "devices/thread/spin.h"

#include <errno.h>
#include <pthread.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/log.h"

#define FAB_CHUNK (256u << 10)      /* most payload bytes in one message */
#define FAB_NSEND 16u               /* send buffers */
#define FAB_NRECV 16u               /* receive buffers kept posted */
#define FAB_BEAT_NS 100000000ull    /* heartbeat period */
#define FAB_FLUSH_NS 1000000000ull  /* longest wait for sends at close */

/* What a message carries. */
enum fab_kind {
    FAB_DATA = 1,   /* ring bytes from -> to, at offset off */
    FAB_CREDIT = 2, /* the receiver's consumer has released off bytes of ring to -> from */
    FAB_BEAT = 3,   /* still here */
    FAB_BYE = 4,    /* left the communicator */
    FAB_ABORT = 5,  /* the communicator failed: off = status, len = rank it names */
};

/* Header in front of every message (24 bytes). */
struct fab_hdr {
    uint32_t kind; /* enum fab_kind */
    uint32_t from; /* sender's rank */
    uint32_t to;   /* receiver's rank */
    uint32_t len;  /* payload bytes (DATA), or the rank an ABORT names */
    uint64_t off;  /* stream offset (DATA, CREDIT) or status (ABORT) */
};

/* A send or receive buffer; the fi_context must come first. */
struct fab_buf {
    struct fi_context ctx;  /* libfabric's per-operation context */
    bool recv;              /* posted as a receive */
    uint32_t to;            /* send: destination rank */
    struct fab_buf *next;   /* free list, or the held list */
    size_t len;             /* receive: bytes that arrived (while held) */
    uint8_t *data;          /* header + payload (FAB_CHUNK + header bytes) */
};

/* Per peer state. */
struct fab_peer {
    fi_addr_t addr;            /* its endpoint in the address vector */
    bool remote;               /* on another node */
    uint64_t rcap;             /* capacity of its copy of ring rank -> peer */
    _Atomic uint64_t credit;   /* bytes of that ring its consumer has released */
    uint64_t sent;             /* bytes of ring rank -> peer sent (send thread) */
    uint64_t credited;         /* release of ring peer -> rank last reported (send thread) */
    uint64_t written;          /* bytes of ring peer -> rank written (receive thread) */
    _Atomic uint64_t heard_ns; /* when a message last came from it */
    _Atomic int state;         /* 0 here, 1 died, 2 left */
    uint64_t bye_at;           /* bytes it had sent when it said goodbye (UINT64_MAX: not yet) */
};

struct fab_bridge {
    struct fi_info *info;        /* the provider chosen */
    struct fid_fabric *fabric;   /* libfabric objects ... */
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;           /* ... the endpoint */
    bool cq_wait;                /* the CQ supports fi_cq_sread */
    struct chan_bell bell;       /* the send thread sleeps on it */
    uint32_t world;              /* ranks */
    uint32_t rank;               /* this rank */
    struct fab_peer *peer;       /* world entries */
    struct chan *out;            /* world entries: consumer ends of rank -> s */
    struct chan *in;             /* world entries: producer ends of s -> rank */
    uint64_t dead_ns;            /* silence after which a peer is dead */
    fab_abort_fn on_abort;       /* remote failure callback */
    void *arg;                   /* its argument */
    struct fab_buf bufs[FAB_NSEND + FAB_NRECV]; /* every buffer */
    struct fab_buf *held;        /* data that arrived before earlier data (receive thread) */
    struct fab_buf *free_send;   /* idle send buffers */
    uint32_t idle_sends;         /* how many */
    pthread_mutex_t lock;        /* guards free_send, idle_sends */
    pthread_t tx_thread, rx_thread; /* the two threads */
    bool started;                /* threads running */
    _Atomic bool stop;           /* ask them to end */
    _Atomic uint64_t bytes_out;  /* payload bytes sent */
    _Atomic uint64_t bytes_in;   /* payload bytes received */
};

/* ---- opening ----------------------------------------------------------------------- */

static NRT_STATUS fab_fail(const char *what, int rc)
{
    LOG_ERROR("NCCL", "libfabric: %s failed: %s", what, fi_strerror(-rc));
    return NRT_RESOURCE;
}

static NRT_STATUS fab_getinfo(const char *src, struct fi_info **out)
{
    struct fi_info *hints = fi_allocinfo();
    if (hints == NULL)
        return NRT_RESOURCE;
    const char *prov = getenv("TRNEMU_FABRIC_PROVIDER");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->threading = FI_THREAD_SAFE;
    hints->domain_attr->mr_mode = 0;
    hints->mode = FI_CONTEXT;
    hints->fabric_attr->prov_name = strdup(prov && *prov ? prov : "tcp");
    int rc = fi_getinfo(FI_VERSION(1, 17), src, NULL, FI_SOURCE, hints, out);
    if (rc != 0)
        LOG_ERROR("NCCL", "libfabric: no %s provider for an ordered reliable endpoint at %s: "
                  "%s (TRNEMU_FABRIC_PROVIDER)", hints->fabric_attr->prov_name, src,
                  fi_strerror(-rc));
    fi_freeinfo(hints);
    return rc == 0 ? NRT_SUCCESS : NRT_RESOURCE;
}

static NRT_STATUS fab_objects(struct fab_bridge *f)
{
    int rc = fi_fabric(f->info->fabric_attr, &f->fabric, NULL);
    if (rc)
        return fab_fail("fi_fabric", rc);
    if ((rc = fi_domain(f->fabric, f->info, &f->domain, NULL)))
        return fab_fail("fi_domain", rc);
    struct fi_cq_attr cqa = {.size = 4 * (FAB_NSEND + FAB_NRECV),
                             .format = FI_CQ_FORMAT_MSG, .wait_obj = FI_WAIT_UNSPEC};
    f->cq_wait = fi_cq_open(f->domain, &cqa, &f->cq, NULL) == 0;
    if (!f->cq_wait) {
        cqa.wait_obj = FI_WAIT_NONE;
        if ((rc = fi_cq_open(f->domain, &cqa, &f->cq, NULL)))
            return fab_fail("fi_cq_open", rc);
    }
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    if ((rc = fi_av_open(f->domain, &ava, &f->av, NULL)))
        return fab_fail("fi_av_open", rc);
    if ((rc = fi_endpoint(f->domain, f->info, &f->ep, NULL)))
        return fab_fail("fi_endpoint", rc);
    if ((rc = fi_ep_bind(f->ep, &f->av->fid, 0)) ||
        (rc = fi_ep_bind(f->ep, &f->cq->fid, FI_TRANSMIT | FI_RECV)))
        return fab_fail("fi_ep_bind", rc);
    if ((rc = fi_enable(f->ep)))
        return fab_fail("fi_enable", rc);
    return NRT_SUCCESS;
}

static NRT_STATUS fab_buffers(struct fab_bridge *f)
{
    for (uint32_t i = 0; i < FAB_NSEND + FAB_NRECV; i++) {
        struct fab_buf *b = &f->bufs[i];
        b->data = malloc(FAB_CHUNK + sizeof(struct fab_hdr));
        if (b->data == NULL)
            return NRT_RESOURCE;
        b->recv = i >= FAB_NSEND;
        if (!b->recv) {
            b->next = f->free_send;
            f->free_send = b;
            f->idle_sends++;
        }
    }
    return NRT_SUCCESS;
}

NRT_STATUS fab_open(const char *src, struct boot_entry *me, struct fab_bridge **out)
{
    struct fab_bridge *f = calloc(1, sizeof *f);
    if (f == NULL)
        return NRT_RESOURCE;
    pthread_mutex_init(&f->lock, NULL);
    NRT_STATUS st = fab_getinfo(src, &f->info);
    if (st == NRT_SUCCESS)
        st = fab_objects(f);
    if (st == NRT_SUCCESS)
        st = fab_buffers(f);
    size_t len = BOOT_ADDR_MAX;
    if (st == NRT_SUCCESS) {
        int rc = fi_getname(&f->ep->fid, me->addr, &len);
        if (rc != 0)
            st = fab_fail("fi_getname", rc);
    }
    if (st != NRT_SUCCESS) {
        fab_close(f);
        return st;
    }
    me->addrlen = (uint32_t)len;
    *out = f;
    return NRT_SUCCESS;
}

struct chan_bell *fab_bell(struct fab_bridge *f)
{
    return &f->bell;
}

/* ---- sending ------------------------------------------------------------------------ */

/* A small control message (fits libfabric's inject size). */
static void fab_control(struct fab_bridge *f, uint32_t to, uint32_t kind, uint32_t len,
                        uint64_t off)
{
    struct fab_hdr h = {kind, f->rank, to, len, off};
    for (int tries = 0; tries < 1000 && !atomic_load(&f->stop); tries++) {
        ssize_t rc = fi_inject(f->ep, &h, sizeof h, f->peer[to].addr);
        if (rc != -FI_EAGAIN)
            return;
        if (!f->cq_wait || tries > 10)
            usleep(20);
    }
}

static struct fab_buf *fab_send_buf(struct fab_bridge *f)
{
    pthread_mutex_lock(&f->lock);
    struct fab_buf *b = f->free_send;
    if (b != NULL) {
        f->free_send = b->next;
        f->idle_sends--;
    }
    pthread_mutex_unlock(&f->lock);
    return b;
}

static void fab_send_done(struct fab_bridge *f, struct fab_buf *b)
{
    pthread_mutex_lock(&f->lock);
    b->next = f->free_send;
    f->free_send = b;
    f->idle_sends++;
    pthread_mutex_unlock(&f->lock);
    chan_bell_ring(&f->bell);
}

/* Post a filled buffer; false when the peer cannot be reached. */
static bool fab_post_send(struct fab_bridge *f, struct fab_buf *b, size_t len)
{
    for (;;) {
        ssize_t rc = fi_send(f->ep, b->data, len, NULL, f->peer[b->to].addr, &b->ctx);
        if (rc == 0)
            return true;
        if (rc != -FI_EAGAIN || atomic_load(&f->stop)) {
            LOG_ERROR("NCCL", "libfabric: send to rank %u failed: %s", b->to,
                      fi_strerror((int)-rc));
            fab_send_done(f, b);
            return false;
        }
        usleep(10);  /* the receive thread makes progress meanwhile */
    }
}

/* Move what ring rank -> s holds (and the receiver has room for) out. */
static bool fab_pump_out(struct fab_bridge *f, uint32_t s)
{
    struct fab_peer *p = &f->peer[s];
    bool did = false;
    for (;;) {
        uint64_t window = atomic_load(&p->credit) + p->rcap - p->sent;
        const uint8_t *src;
        uint64_t n = chan_avail(&f->out[s], &src);
        if (n > window)
            n = window;
        if (n > FAB_CHUNK)
            n = FAB_CHUNK;
        if (n == 0)
            return did;
        struct fab_buf *b = fab_send_buf(f);
        if (b == NULL)
            return did;
        struct fab_hdr h = {FAB_DATA, f->rank, s, (uint32_t)n, p->sent};
        memcpy(b->data, &h, sizeof h);
        memcpy(b->data + sizeof h, src, n);
        chan_release(&f->out[s], n);
        b->to = s;
        p->sent += n;
        atomic_fetch_add(&f->bytes_out, n);
        if (!fab_post_send(f, b, sizeof h + n)) {
            atomic_store(&p->state, 1);
            return did;
        }
        did = true;
    }
}

/* Report releases of ring s -> rank to s when a quarter of it, or all that
 * arrived, has been consumed. */
static bool fab_pump_credit(struct fab_bridge *f, uint32_t s)
{
    struct fab_peer *p = &f->peer[s];
    struct chan *c = &f->in[s];
    uint64_t tail = atomic_load_explicit(&c->ring->tail, memory_order_acquire);
    uint64_t head = atomic_load_explicit(&c->ring->head, memory_order_acquire);
    if (tail == p->credited || (tail - p->credited < c->cap / 4 && tail != head))
        return false;
    p->credited = tail;
    fab_control(f, s, FAB_CREDIT, 0, tail);
    return true;
}

static void fab_beat(struct fab_bridge *f, uint64_t *last)
{
    uint64_t now = spin_now_ns();
    if (now - *last < FAB_BEAT_NS)
        return;
    *last = now;
    for (uint32_t s = 0; s < f->world; s++)
        if (f->peer[s].remote && atomic_load(&f->peer[s].state) == 0)
            fab_control(f, s, FAB_BEAT, 0, 0);
}

static void *fab_tx_main(void *arg)
{
    struct fab_bridge *f = arg;
    struct chan_waiter w = {&f->bell, 0, 0, 50, NULL, NULL, 0};
    uint64_t last_beat = 0;
    while (!atomic_load(&f->stop)) {
        uint32_t seen = chan_bell_seen(&f->bell);
        bool did = false;
        for (uint32_t s = 0; s < f->world; s++) {
            if (!f->peer[s].remote || atomic_load(&f->peer[s].state) == 1)
                continue;
            did |= fab_pump_out(f, s);
            did |= fab_pump_credit(f, s);
        }
        fab_beat(f, &last_beat);
        if (!did)
            chan_wait(&w, seen);
    }
    return NULL;
}

/* ---- receiving ---------------------------------------------------------------------- */

static void fab_post_recv(struct fab_bridge *f, struct fab_buf *b)
{
    while (!atomic_load(&f->stop)) {
        ssize_t rc = fi_recv(f->ep, b->data, FAB_CHUNK + sizeof(struct fab_hdr), NULL,
                             FI_ADDR_UNSPEC, &b->ctx);
        if (rc != -FI_EAGAIN)
            return;
        usleep(10);
    }
}

/* A peer broke the protocol or failed: it is dead to us. */
static void fab_peer_dead(struct fab_bridge *f, uint32_t s, const char *why)
{
    int here = 0;
    if (atomic_compare_exchange_strong(&f->peer[s].state, &here, 1)) {
        LOG_ERROR("NCCL", "rank %u: rank %u on another node %s", f->rank, s, why);
        chan_bell_ring(f->in[s].rx);  /* the rank's own bell: let it look */
    }
}

/* A peer that said goodbye has left once all it sent has arrived. */
static void fab_maybe_left(struct fab_bridge *f, uint32_t s)
{
    struct fab_peer *p = &f->peer[s];
    if (p->bye_at != UINT64_MAX && p->written >= p->bye_at) {
        int here = 0;
        atomic_compare_exchange_strong(&p->state, &here, 2);
        chan_bell_ring(f->in[s].rx);
    }
}

static bool fab_put_data(struct fab_bridge *f, const struct fab_hdr *h, const uint8_t *data,
                         size_t len)
{
    struct fab_peer *p = &f->peer[h->from];
    if (chan_put(&f->in[h->from], data, len, 1) != len) {
        fab_peer_dead(f, h->from, "overran its channel (credit error)");
        return false;
    }
    p->written += len;
    atomic_fetch_add(&f->bytes_in, len);
    return true;
}

/* Deliver held data that is now next in its stream. */
static void fab_drain_held(struct fab_bridge *f)
{
    for (bool again = true; again;) {
        again = false;
        for (struct fab_buf **pp = &f->held; *pp != NULL; pp = &(*pp)->next) {
            struct fab_buf *b = *pp;
            struct fab_hdr h;
            memcpy(&h, b->data, sizeof h);
            if (h.off != f->peer[h.from].written)
                continue;
            *pp = b->next;
            fab_put_data(f, &h, b->data + sizeof h, b->len - sizeof h);
            fab_maybe_left(f, h.from);
            fab_post_recv(f, b);
            again = true;
            break;
        }
    }
}

/* DATA: in order into the ring; a later piece that overtook an earlier
 * one (the provider completes large messages later than small ones) waits
 * in its buffer. Returns false when the buffer is held. */
static bool fab_on_data(struct fab_bridge *f, const struct fab_hdr *h, struct fab_buf *b,
                        size_t len)
{
    struct fab_peer *p = &f->peer[h->from];
    if (h->len != len - sizeof *h || h->off < p->written) {
        fab_peer_dead(f, h->from, "sent malformed data (protocol error)");
        return true;
    }
    if (h->off > p->written) {
        b->len = len;
        b->next = f->held;
        f->held = b;
        return false;
    }
    if (fab_put_data(f, h, b->data + sizeof *h, len - sizeof *h))
        fab_drain_held(f);
    return true;
}

/* Handle what arrived in b; false when b is held (not to be reposted). */
static bool fab_on_message(struct fab_bridge *f, struct fab_buf *b, size_t len)
{
    struct fab_hdr h;
    if (len < sizeof h)
        return true;
    memcpy(&h, b->data, sizeof h);
    if (h.from >= f->world || h.to != f->rank || !f->peer[h.from].remote) {
        LOG_WARN("NCCL", "rank %u: dropped a fabric message for rank %u from rank %u",
                 f->rank, h.to, h.from);
        return true;
    }
    struct fab_peer *p = &f->peer[h.from];
    atomic_store(&p->heard_ns, spin_now_ns());
    switch (h.kind) {
    case FAB_DATA:
        if (!fab_on_data(f, &h, b, len))
            return false;
        fab_maybe_left(f, h.from);
        break;
    case FAB_CREDIT:
        if (h.off > atomic_load(&p->credit))
            atomic_store(&p->credit, h.off);
        chan_bell_ring(&f->bell);
        break;
    case FAB_BYE:
        p->bye_at = h.off;
        fab_maybe_left(f, h.from);
        break;
    case FAB_ABORT:
        if (f->on_abort)
            f->on_abort(f->arg, (int32_t)h.off, (int32_t)h.len, (int32_t)h.from);
        break;
    default:
        break;
    }
    return true;
}

static void fab_on_error(struct fab_bridge *f)
{
    struct fi_cq_err_entry err = {0};
    if (fi_cq_readerr(f->cq, &err, 0) != 1)
        return;
    struct fab_buf *b = err.op_context;
    if (b == NULL)
        return;
    if (b->recv) {
        if (!atomic_load(&f->stop))
            fab_post_recv(f, b);
        return;
    }
    char why[160];
    snprintf(why, sizeof why, "cannot be reached (%s): its node died or is unreachable",
             fi_strerror(err.err));
    fab_peer_dead(f, b->to, why);
    fab_send_done(f, b);
}

/* Peers silent for longer than the limit are dead. */
static void fab_check_silence(struct fab_bridge *f)
{
    uint64_t now = spin_now_ns();
    for (uint32_t s = 0; s < f->world; s++) {
        struct fab_peer *p = &f->peer[s];
        uint64_t heard = atomic_load(&p->heard_ns);  /* 0: its bridge has not started yet */
        if (p->remote && atomic_load(&p->state) == 0 && heard != 0 && now - heard > f->dead_ns) {
            char why[128];
            snprintf(why, sizeof why, "has not been heard for %.1f s: its node died or is "
                     "unreachable", (double)(now - atomic_load(&p->heard_ns)) / 1e9);
            fab_peer_dead(f, s, why);
        }
    }
}

static void *fab_rx_main(void *arg)
{
    struct fab_bridge *f = arg;
    for (uint32_t i = FAB_NSEND; i < FAB_NSEND + FAB_NRECV; i++)
        fab_post_recv(f, &f->bufs[i]);
    while (!atomic_load(&f->stop)) {
        struct fi_cq_msg_entry e[16];
        ssize_t n = f->cq_wait ? fi_cq_sread(f->cq, e, 16, NULL, 50) : fi_cq_read(f->cq, e, 16);
        if (n == -FI_EAVAIL)
            fab_on_error(f);
        for (ssize_t i = 0; i < n; i++) {
            struct fab_buf *b = e[i].op_context;
            if (b->recv) {
                if (fab_on_message(f, b, e[i].len))
                    fab_post_recv(f, b);
            } else {
                fab_send_done(f, b);
            }
        }
        if (n <= 0 && !f->cq_wait)
            usleep(20);
        fab_check_silence(f);
    }
    return NULL;
}

/* ---- starting and stopping -------------------------------------------------------- */

NRT_STATUS fab_start(struct fab_bridge *f, uint32_t world, uint32_t rank,
                     const struct boot_entry *table, const bool *remote, struct chan *out,
                     struct chan *in, uint64_t dead_ns, fab_abort_fn on_abort, void *arg)
{
    f->world = world;
    f->rank = rank;
    f->out = out;
    f->in = in;
    f->dead_ns = dead_ns;
    f->on_abort = on_abort;
    f->arg = arg;
    f->peer = calloc(world, sizeof *f->peer);
    if (f->peer == NULL)
        return NRT_RESOURCE;
    for (uint32_t s = 0; s < world; s++) {
        struct fab_peer *p = &f->peer[s];
        p->remote = remote[s];
        p->bye_at = UINT64_MAX;
        atomic_store(&p->heard_ns, 0);
        if (!p->remote)
            continue;
        p->rcap = s == (rank + 1) % world ? table[s].ring_cap : table[s].mesh_cap;
        int rc = fi_av_insert(f->av, table[s].addr, 1, &p->addr, 0, NULL);
        if (rc != 1) {
            LOG_ERROR("NCCL", "libfabric: the address of rank %u (node %u) is not usable", s,
                      table[s].node);
            return NRT_INVALID;
        }
    }
    if (pthread_create(&f->rx_thread, NULL, fab_rx_main, f) != 0)
        return NRT_RESOURCE;
    if (pthread_create(&f->tx_thread, NULL, fab_tx_main, f) != 0) {
        atomic_store(&f->stop, true);
        pthread_join(f->rx_thread, NULL);
        return NRT_RESOURCE;
    }
    f->started = true;
    return NRT_SUCCESS;
}

bool fab_peer_alive(struct fab_bridge *f, uint32_t s, const char **why)
{
    int st = atomic_load(&f->peer[s].state);
    if (why)
        *why = st == 1 ? "died or cannot be reached" : "left";
    return st == 0;
}

void fab_abort(struct fab_bridge *f, int32_t status, int32_t rank)
{
    if (f == NULL || !f->started)
        return;
    for (uint32_t s = 0; s < f->world; s++)
        if (f->peer[s].remote && atomic_load(&f->peer[s].state) == 0)
            fab_control(f, s, FAB_ABORT, (uint32_t)rank, (uint64_t)(uint32_t)status);
}

void fab_traffic(struct fab_bridge *f, uint64_t *sent, uint64_t *received)
{
    *sent = atomic_load(&f->bytes_out);
    *received = atomic_load(&f->bytes_in);
}

/* Let queued sends finish (bounded), then say goodbye. */
static void fab_flush(struct fab_bridge *f)
{
    uint64_t end = spin_now_ns() + FAB_FLUSH_NS;
    for (uint32_t s = 0; s < f->world; s++)  /* what the rank wrote last */
        if (f->peer[s].remote && atomic_load(&f->peer[s].state) == 0)
            while (chan_fill(&f->out[s]) > 0 && spin_now_ns() < end) {
                chan_bell_ring(&f->bell);
                usleep(100);
            }
    while (spin_now_ns() < end) {
        pthread_mutex_lock(&f->lock);
        bool idle = f->idle_sends == FAB_NSEND;
        pthread_mutex_unlock(&f->lock);
        if (idle)
            break;
        usleep(100);
    }
    for (uint32_t s = 0; s < f->world; s++)
        if (f->peer[s].remote && atomic_load(&f->peer[s].state) == 0)
            fab_control(f, s, FAB_BYE, 0, f->peer[s].sent);
}

void fab_close(struct fab_bridge *f)
{
    if (f == NULL)
        return;
    if (f->started) {
        fab_flush(f);
        atomic_store(&f->stop, true);
        chan_bell_ring(&f->bell);
        pthread_join(f->tx_thread, NULL);
        pthread_join(f->rx_thread, NULL);
    }
    if (f->ep)
        fi_close(&f->ep->fid);
    if (f->av)
        fi_close(&f->av->fid);
    if (f->cq)
        fi_close(&f->cq->fid);
    if (f->domain)
        fi_close(&f->domain->fid);
    if (f->fabric)
        fi_close(&f->fabric->fid);
    if (f->info)
        fi_freeinfo(f->info);
    for (uint32_t i = 0; i < FAB_NSEND + FAB_NRECV; i++)
        free(f->bufs[i].data);
    free(f->peer);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
