/*
 * coll_p2p.c: nrt_async_sendrecv_* between processes attached to one
 * instance (see coll.h, docs/collectives.md).
 *
 * A send communicator from LNC a to LNC b and the matching receive
 * communicator meet in the file `coll-p2p-<a>-<b>` of the instance
 * directory: two ends (pid and start time of the sender and of the
 * receiver), a bell for each, and one ring channel. A communicator is
 * connected once both ends are held by live processes. Requests queue per
 * communicator and move in order whenever the program calls into the API
 * (send, receive and test calls push and pull what the ring allows); a
 * send is done once all its bytes are in the ring, a receive once a whole
 * message has landed in the tensor. Only local peers exist: peer_ip must
 * name this host (127.0.0.1, ::1, localhost, 0.0.0.0 or its host name).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/link/channel.h"
#include "devices/coll/coll.h"
#include "devices/machine/instance.h"
#include "devices/runtime/coll_p2p.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/tensor.h"
#include "devices/thread/spin.h"
#include "emu/log.h"

#define P2P_MAGIC 0x3150325045524e52ull /* "RNREP2P1" little-endian */
#define P2P_RING (1u << 20)             /* ring bytes of a connection */
#define P2P_RING_OFF 4096u              /* where the ring starts in the file */
#define P2P_KIND 0x70                   /* chan_msg kind of a transfer */

/* One end of a connection in the shared file (64 bytes). */
struct p2p_end {
    _Atomic int32_t pid;  /* holder, 0 when free */
    uint32_t reserved;    /* zero */
    uint64_t start_time;  /* holder's start time */
    uint8_t pad[48];      /* to 64 bytes */
};

/* The head of the shared file. */
struct p2p_file {
    uint64_t magic;                /* P2P_MAGIC */
    uint64_t cap;                  /* ring bytes */
    uint8_t pad[48];               /* to 64 bytes */
    struct p2p_end end[2];         /* 0: sender, 1: receiver */
    struct chan_bell bell[2];      /* each end's bell */
};

struct nrt_async_sendrecv_request;

/* A communicator (nrt_async_sendrecv_comm_t). */
struct nrt_async_sendrecv_comm {
    struct nrt_async_sendrecv_comm *next;   /* registry list */
    int lnc;                                /* this end's LNC (machine-wide VNC) */
    int peer_lnc;                           /* the other end's */
    int side;                               /* 0 send, 1 receive */
    int fd;                                 /* the shared file */
    struct p2p_file *f;                     /* mapped */
    struct chan ch;                         /* the ring */
    uint64_t deadline_ns;                   /* connecting must finish by then */
    bool connected;                         /* test_comm has seen the peer */
    uint32_t seq;                           /* messages so far */
    uint32_t pending;                       /* requests not yet done */
    struct nrt_async_sendrecv_request *head; /* oldest unfinished request */
    struct nrt_async_sendrecv_request *tail; /* newest */
};

/* A send or receive (nrt_async_sendrecv_request_t). */
struct nrt_async_sendrecv_request {
    struct nrt_async_sendrecv_request *next;  /* queue order on its comm */
    struct nrt_async_sendrecv_request *all;   /* registry list */
    struct nrt_async_sendrecv_comm *comm;     /* its communicator */
    struct tensor_view v;                     /* the pinned tensor */
    uint8_t *buf;                             /* tensor bytes at the offset */
    uint64_t cap;                             /* bytes asked for */
    uint64_t bytes;                           /* message bytes (receive: from the header) */
    uint64_t done_bytes;                      /* moved so far */
    uint8_t phase;                            /* 0 header, 1 payload, 2 padding, 3 done */
    NRT_STATUS status;                        /* failure, once failed */
    uint64_t deadline_ns;                     /* must finish by then */
};

static pthread_mutex_t p2p_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nrt_async_sendrecv_comm *p2p_comms;   /* every communicator */
static struct nrt_async_sendrecv_request *p2p_reqs; /* every unfinished request */
static bool p2p_on[CONFIG_MAX_VNCS];                /* nrt_async_sendrecv_init done */

#define P2P_MAX_COMMS 64
#define P2P_MAX_PENDING 256

int coll_p2p_max_comms(void)
{
    return P2P_MAX_COMMS;
}

int coll_p2p_max_pending(void)
{
    return P2P_MAX_PENDING;
}

/* ---- set-up ------------------------------------------------------------------- */

static bool p2p_local_ip(const char *ip)
{
    char host[256];
    if (ip == NULL)
        return false;
    if (!strcmp(ip, "127.0.0.1") || !strcmp(ip, "::1") || !strcmp(ip, "localhost") ||
        !strcmp(ip, "0.0.0.0") || !strncmp(ip, "127.", 4))
        return true;
    return gethostname(host, sizeof host) == 0 && strcmp(ip, host) == 0;
}

/* Is lnc one of this process's VNCs? */
static bool p2p_owned(int lnc)
{
    const struct machine *m = rt_machine();
    for (uint32_t i = 0; i < m->cfg.visible_count; i++)
        if (m->cfg.visible[i] == lnc)
            return true;
    return false;
}

NRT_STATUS coll_p2p_init(int lnc)
{
    assert(rt_held());
    if (lnc < 0 || lnc >= CONFIG_MAX_VNCS || !p2p_owned(lnc)) {
        LOG_ERROR("NRT", "LNC %d is not one of this process's logical cores (absolute ids, as "
                  "in NEURON_RT_VISIBLE_CORES)", lnc);
        return NRT_FAILURE;
    }
    pthread_mutex_lock(&p2p_lock);
    p2p_on[lnc] = true;
    pthread_mutex_unlock(&p2p_lock);
    return NRT_SUCCESS;
}

static bool p2p_end_live(const struct p2p_end *e)
{
    int32_t pid = atomic_load(&e->pid);
    return pid != 0 && instance_pid_alive(pid, e->start_time);
}

/* Open, (re)make when abandoned, and map the file of the a -> b connection. */
static NRT_STATUS p2p_file_open(struct nrt_async_sendrecv_comm *c, int a, int b)
{
    char path[INSTANCE_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/coll-p2p-%d-%d", machine_instance_dir(rt_machine()), a, b);
    c->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (c->fd < 0) {
        LOG_ERROR("NRT", "cannot open %s: %s", path, strerror(errno));
        return NRT_FAILURE;
    }
    uint64_t total = P2P_RING_OFF + chan_shm_bytes(P2P_RING);
    while (flock(c->fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    struct stat sb;
    struct p2p_file h;
    bool ok = fstat(c->fd, &sb) == 0 && (uint64_t)sb.st_size == total &&
              pread(c->fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == P2P_MAGIC &&
              h.cap == P2P_RING && (p2p_end_live(&h.end[0]) || p2p_end_live(&h.end[1]));
    if (!ok) {  /* new or abandoned: start afresh, ring empty */
        struct p2p_file fresh = {P2P_MAGIC, P2P_RING, {0}, {{0}}, {{0}}};
        if (ftruncate(c->fd, 0) != 0) {
            flock(c->fd, LOCK_UN);
            LOG_ERROR("NRT", "cannot empty %s: %s", path, strerror(errno));
            return NRT_RESOURCE;
        }
        if (!instance_reserve(c->fd, total, path, "a point-to-point channel")) {
            flock(c->fd, LOCK_UN);
            return NRT_RESOURCE;  /* its line names the directory */
        }
        if (pwrite(c->fd, &fresh, sizeof fresh, 0) != (ssize_t)sizeof fresh) {
            flock(c->fd, LOCK_UN);
            LOG_ERROR("NRT", "cannot make %s: %s", path, strerror(errno));
            return NRT_FAILURE;
        }
    }
    void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
    if (p == MAP_FAILED) {
        flock(c->fd, LOCK_UN);
        LOG_ERROR("NRT", "cannot map %s: %s", path, strerror(errno));
        return NRT_FAILURE;
    }
    c->f = p;
    struct p2p_end *me = &c->f->end[c->side];
    NRT_STATUS st = NRT_SUCCESS;
    if (p2p_end_live(me)) {
        LOG_ERROR("NRT", "LNC %d -> %d already has a %s communicator (pid %d)", a, b,
                  c->side == 0 ? "send" : "receive", (int)atomic_load(&me->pid));
        st = NRT_RESOURCE;
    } else {
        me->start_time = instance_self_start_time();
        atomic_store(&me->pid, (int32_t)getpid());
        chan_attach(&c->ch, (uint8_t *)p + P2P_RING_OFF, P2P_RING, &c->f->bell[1],
                    &c->f->bell[0]);
        chan_bell_ring(&c->f->bell[!c->side]);
    }
    flock(c->fd, LOCK_UN);
    return st;
}

static void p2p_comm_free(struct nrt_async_sendrecv_comm *c)
{
    if (c->f != NULL) {
        while (flock(c->fd, LOCK_EX) != 0 && errno == EINTR)
            ;
        struct p2p_end *me = &c->f->end[c->side];
        if (atomic_load(&me->pid) == (int32_t)getpid())
            atomic_store(&me->pid, 0);
        bool other = p2p_end_live(&c->f->end[!c->side]);
        munmap(c->f, P2P_RING_OFF + chan_shm_bytes(P2P_RING));
        if (!other && ftruncate(c->fd, 0) != 0)
            LOG_WARN("NRT", "cannot empty a sendrecv file: %s", strerror(errno));
        flock(c->fd, LOCK_UN);
    }
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

static uint32_t p2p_count(int lnc)
{
    uint32_t n = 0;
    for (struct nrt_async_sendrecv_comm *c = p2p_comms; c != NULL; c = c->next)
        n += c->lnc == lnc;
    return n;
}

NRT_STATUS coll_p2p_open(const char *peer_ip, int peer_lnc, int lnc, int side,
                         nrt_async_sendrecv_comm_t **out)
{
    assert(rt_held());
    const struct machine *m = rt_machine();
    if (!p2p_local_ip(peer_ip)) {
        LOG_ERROR("NRT", "peer %s: trnemu connects processes of one emulated instance only "
                  "(use 127.0.0.1 or localhost)", peer_ip ? peer_ip : "(null)");
        return NRT_FAILURE;
    }
    if (peer_lnc < 0 || (uint32_t)peer_lnc >= m->cfg.total_vncs || peer_lnc == lnc) {
        LOG_ERROR("NRT", "peer LNC %d: the instance has LNCs 0..%u (and not this one, %d)",
                  peer_lnc, m->cfg.total_vncs - 1, lnc);
        return NRT_FAILURE;
    }
    pthread_mutex_lock(&p2p_lock);
    NRT_STATUS st = NRT_SUCCESS;
    if (lnc < 0 || lnc >= CONFIG_MAX_VNCS || !p2p_on[lnc]) {
        LOG_ERROR("NRT", "LNC %d: call nrt_async_sendrecv_init(%d) first", lnc, lnc);
        st = NRT_FAILURE;
    } else if (p2p_count(lnc) >= P2P_MAX_COMMS) {
        LOG_ERROR("NRT", "LNC %d already has %d communicators", lnc, P2P_MAX_COMMS);
        st = NRT_RESOURCE;
    }
    struct nrt_async_sendrecv_comm *c = st == NRT_SUCCESS ? calloc(1, sizeof *c) : NULL;
    if (st == NRT_SUCCESS && c == NULL)
        st = NRT_RESOURCE;
    if (c != NULL) {
        c->fd = -1;
        c->lnc = lnc;
        c->peer_lnc = peer_lnc;
        c->side = side;
        c->deadline_ns = coll_deadline();
        st = side == 0 ? p2p_file_open(c, lnc, peer_lnc) : p2p_file_open(c, peer_lnc, lnc);
        if (st != NRT_SUCCESS) {
            p2p_comm_free(c);
        } else {
            c->next = p2p_comms;
            p2p_comms = c;
            *out = c;
        }
    }
    pthread_mutex_unlock(&p2p_lock);
    return st;
}

static bool p2p_comm_known(const struct nrt_async_sendrecv_comm *c)
{
    for (const struct nrt_async_sendrecv_comm *k = p2p_comms; k != NULL; k = k->next)
        if (k == c)
            return true;
    return false;
}

NRT_STATUS coll_p2p_test_comm(nrt_async_sendrecv_comm_t *c, bool *done)
{
    pthread_mutex_lock(&p2p_lock);
    NRT_STATUS st = NRT_SUCCESS;
    if (!p2p_comm_known(c)) {
        LOG_ERROR("NRT", "%p is not a sendrecv communicator", (void *)c);
        st = NRT_INVALID_HANDLE;
    } else {
        *done = c->connected = c->connected || p2p_end_live(&c->f->end[!c->side]);
        if (!*done && spin_now_ns() > c->deadline_ns) {
            LOG_ERROR("NRT", "LNC %d: LNC %d did not connect in time", c->lnc, c->peer_lnc);
            st = NRT_TIMEOUT;
        }
    }
    pthread_mutex_unlock(&p2p_lock);
    return st;
}

/* ---- requests ------------------------------------------------------------------- */

/* Move the comm's requests, oldest first, as far as the ring allows. */
static void p2p_progress(struct nrt_async_sendrecv_comm *c)
{
    struct nrt_async_sendrecv_request *r;
    while ((r = c->head) != NULL) {
        if (r->phase == 0) {
            struct chan_msg h = {CHAN_MSG_MAGIC, c->seq, P2P_KIND, 0, 0, (uint32_t)c->lnc,
                                 r->bytes, 0, {0}};
            if (c->side == 0 ? !chan_put_msg(&c->ch, &h) : !chan_get_msg(&c->ch, &h))
                return;
            c->seq++;
            if (c->side == 1) {
                if (h.magic != CHAN_MSG_MAGIC || h.kind != P2P_KIND || h.bytes > r->cap) {
                    LOG_ERROR("NRT", "LNC %d: a message of %" PRIu64 " bytes from LNC %d for a "
                              "receive of %" PRIu64 " bytes", c->lnc, h.bytes, c->peer_lnc,
                              r->cap);
                    r->status = NRT_FAILURE;
                }
                r->bytes = h.bytes;
            } else {
                machine_link_account(rt_machine(), rt_machine()->vncs[c->lnc].chip,
                                     rt_machine()->vncs[c->peer_lnc].chip, r->bytes + sizeof h);
            }
            r->phase = 1;
        }
        if (r->phase == 1) {
            uint64_t left = r->bytes - r->done_bytes;
            if (r->status != NRT_SUCCESS) {  /* drop what does not fit */
                uint8_t sink[4096];
                r->done_bytes += chan_get(&c->ch, sink, left < sizeof sink ? left : sizeof sink, 1);
            } else if (c->side == 0) {
                r->done_bytes += chan_put(&c->ch, r->buf + r->done_bytes, left, 1);
            } else {
                r->done_bytes += chan_get(&c->ch, r->buf + r->done_bytes, left, 1);
            }
            if (r->done_bytes < r->bytes)
                return;
            r->phase = 2;
        }
        uint64_t pad = chan_pad_bytes(r->bytes);
        if (c->side == 0 ? !chan_put_pad(&c->ch, pad) : !chan_get_pad(&c->ch, pad))
            return;
        r->phase = 3;
        c->head = r->next;
        if (c->head == NULL)
            c->tail = NULL;
    }
}

NRT_STATUS coll_p2p_post(nrt_tensor_t *t, size_t off, size_t len, nrt_async_sendrecv_comm_t *c,
                         int side, nrt_async_sendrecv_request_t **out)
{
    pthread_mutex_lock(&p2p_lock);
    NRT_STATUS st = NRT_SUCCESS;
    struct nrt_async_sendrecv_request *r = NULL;
    if (!p2p_comm_known(c) || c->side != side) {
        LOG_ERROR("NRT", "%p is not a %s communicator", (void *)c, side ? "receive" : "send");
        st = NRT_INVALID_HANDLE;
    } else if (c->pending >= P2P_MAX_PENDING) {
        LOG_ERROR("NRT", "LNC %d: %d requests are already pending", c->lnc, P2P_MAX_PENDING);
        st = NRT_RESOURCE;
    } else if ((r = calloc(1, sizeof *r)) == NULL) {
        st = NRT_RESOURCE;
    } else if ((st = tensor_pin(t, &r->v)) != NRT_SUCCESS) {
        st = NRT_INVALID_HANDLE;
    } else if (off > r->v.size || len > r->v.size - off || r->v.va == NULL) {
        LOG_ERROR("NRT", "bytes [%zu, %zu) are outside the %" PRIu64 "-byte tensor '%s'", off,
                  off + len, r->v.size, r->v.name);
        tensor_unpin(&r->v);
        st = NRT_FAILURE;
    }
    if (st != NRT_SUCCESS) {
        free(r);
        pthread_mutex_unlock(&p2p_lock);
        return st;
    }
    r->comm = c;
    r->buf = r->v.va + off;
    r->cap = r->bytes = len;
    r->status = NRT_SUCCESS;
    r->deadline_ns = coll_deadline();
    if (c->tail != NULL)
        c->tail->next = r;
    else
        c->head = r;
    c->tail = r;
    r->all = p2p_reqs;
    p2p_reqs = r;
    c->pending++;
    if (p2p_end_live(&c->f->end[!c->side]))
        p2p_progress(c);
    *out = r;
    pthread_mutex_unlock(&p2p_lock);
    return NRT_SUCCESS;
}

/* Take r off the registry and free it. */
static void p2p_req_drop(struct nrt_async_sendrecv_request *r)
{
    for (struct nrt_async_sendrecv_request **pp = &p2p_reqs; *pp != NULL; pp = &(*pp)->all)
        if (*pp == r) {
            *pp = r->all;
            break;
        }
    r->comm->pending--;
    tensor_unpin(&r->v);
    free(r);
}

static bool p2p_req_known(const struct nrt_async_sendrecv_request *r)
{
    for (const struct nrt_async_sendrecv_request *k = p2p_reqs; k != NULL; k = k->all)
        if (k == r)
            return true;
    return false;
}

NRT_STATUS coll_p2p_test(nrt_async_sendrecv_request_t *r, bool *done, size_t *size)
{
    pthread_mutex_lock(&p2p_lock);
    if (!p2p_req_known(r)) {
        pthread_mutex_unlock(&p2p_lock);
        LOG_ERROR("NRT", "%p is not a pending sendrecv request", (void *)r);
        return NRT_INVALID_HANDLE;
    }
    struct nrt_async_sendrecv_comm *c = r->comm;
    bool peer = p2p_end_live(&c->f->end[!c->side]);
    if (peer || c->side == 1)  /* a receive may still read what a gone sender left */
        p2p_progress(c);
    NRT_STATUS st = r->phase == 3 ? r->status : NRT_SUCCESS;
    *done = r->phase == 3;
    if (size != NULL)
        *size = *done ? (size_t)r->bytes : (size_t)r->done_bytes;
    if (!*done && !peer && (c->side == 0 || chan_fill(&c->ch) == 0)) {
        LOG_ERROR("NRT", "LNC %d: the peer LNC %d is gone (its process died or closed)", c->lnc,
                  c->peer_lnc);
        st = NRT_FAILURE;
    } else if (!*done && spin_now_ns() > r->deadline_ns) {
        LOG_ERROR("NRT", "LNC %d: a %s of %" PRIu64 " bytes with LNC %d did not finish in time",
                  c->lnc, c->side ? "receive" : "send", r->cap, c->peer_lnc);
        st = NRT_TIMEOUT;
    }
    if (*done)
        p2p_req_drop(r);
    pthread_mutex_unlock(&p2p_lock);
    return st;
}

NRT_STATUS coll_p2p_close(int lnc)
{
    assert(rt_held());
    pthread_mutex_lock(&p2p_lock);
    NRT_STATUS st = NRT_SUCCESS;
    if (lnc < 0 || lnc >= CONFIG_MAX_VNCS) {
        LOG_ERROR("NRT", "LNC %d is not a valid LNC (0 to %d)", lnc, CONFIG_MAX_VNCS - 1);
        pthread_mutex_unlock(&p2p_lock);
        return NRT_INVALID;
    }
    if (!p2p_on[lnc]) {  /* never initialised or connected: closing is safe */
        pthread_mutex_unlock(&p2p_lock);
        return NRT_SUCCESS;
    }
    for (struct nrt_async_sendrecv_comm **pp = &p2p_comms; *pp != NULL;) {
        struct nrt_async_sendrecv_comm *c = *pp;
        if (c->lnc != lnc) {
            pp = &c->next;
            continue;
        }
        if (c->pending != 0) {
            LOG_ERROR("NRT", "LNC %d: closing a communicator with LNC %d that has requests in "
                      "flight", lnc, c->peer_lnc);
            st = NRT_FAILURE;
        } else if (!(c->connected || p2p_end_live(&c->f->end[!c->side]))) {
            LOG_ERROR("NRT", "LNC %d: closing a communicator with LNC %d that never connected "
                      "(the peer never opened its end)", lnc, c->peer_lnc);
            st = NRT_FAILURE;
        }
        for (struct nrt_async_sendrecv_request **rp = &p2p_reqs; *rp != NULL;) {
            struct nrt_async_sendrecv_request *r = *rp;
            if (r->comm == c) {
                *rp = r->all;
                tensor_unpin(&r->v);
                free(r);
            } else {
                rp = &r->all;
            }
        }
        *pp = c->next;
        p2p_comm_free(c);
    }
    p2p_on[lnc] = false;
    pthread_mutex_unlock(&p2p_lock);
    return st;
}

NRT_STATUS coll_p2p_flush(int lnc)
{
    pthread_mutex_lock(&p2p_lock);
    bool on = lnc >= 0 && lnc < CONFIG_MAX_VNCS && p2p_on[lnc];
    pthread_mutex_unlock(&p2p_lock);
    if (!on) {
        LOG_ERROR("NRT", "LNC %d: sendrecv was not initialised", lnc);
        return NRT_FAILURE;
    }
    return NRT_SUCCESS;  /* receives copy into memory before they report done */
}
