/*
 * bootstrap.c: rank 0's TCP rendezvous for a job on several nodes (see
 * bootstrap.h): the listener, the hello checks, the table, and the
 * connecting side.
 */
#include "devices/link/bootstrap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "devices/link/channel.h"
#include "devices/thread/spin.h"
#include "emu/log.h"

#define BOOT_HELLO_WAIT_NS (2ull * 1000000000ull) /* a connection must say hello by then */
#define BOOT_RETRY_US 50000                        /* between connection attempts */
#define BOOT_PENDING_MAX 64                        /* connections not yet heard at once */
#define BOOT_DROP_LOG_NS (1000000000ull)           /* at most one line about drops this often */

/* The hello a rank sends (exactly BOOT_HELLO_BYTES). */
struct boot_hello {
    uint32_t magic;              /* BOOT_MAGIC */
    uint32_t version;            /* BOOT_VERSION */
    char token[NODE_TOKEN_MAX];  /* TRNEMU_JOB_TOKEN, NUL-padded */
    uint32_t world;              /* ranks in the communicator */
    uint32_t rank;               /* the sender */
    struct boot_entry e;         /* the sender's entry */
    uint8_t pad[BOOT_HELLO_BYTES - 80 - sizeof(struct boot_entry)]; /* zero */
};
_Static_assert(sizeof(struct boot_entry) == 136, "boot_entry is 136 bytes on the wire");
_Static_assert(sizeof(struct boot_hello) == BOOT_HELLO_BYTES, "hello size");

/* The header of rank 0's answer; world entries follow when status is 0. */
struct boot_reply {
    uint32_t magic;  /* BOOT_MAGIC */
    int32_t status;  /* NRT_STATUS of the bootstrap */
    uint32_t world;  /* ranks (entries that follow) */
    uint32_t about;  /* the rank the failure names, or UINT32_MAX */
    char why[112];   /* the cause, NUL-terminated */
};
_Static_assert(sizeof(struct boot_reply) == 128, "reply size");

/* A connection rank 0 has accepted and not yet heard out. */
struct boot_pending {
    int fd;                       /* socket, -1 when free */
    uint64_t since;               /* accepted at (monotonic ns) */
    uint32_t got;                 /* hello bytes read */
    char peer[64];                /* its address, for messages */
    struct boot_hello h;          /* the hello read so far */
};

/* ---- small socket helpers ---------------------------------------------------- */

static int boot_ms_left(uint64_t deadline_ns, int cap_ms)
{
    uint64_t now = spin_now_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now) / 1000000 + 1;
    return ms < (uint64_t)cap_ms ? (int)ms : cap_ms;
}

/* Send all of buf (blocking socket); false on error. */
static bool boot_send_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return false;
        p += k;
        n -= (size_t)k;
    }
    return true;
}

/* Read exactly n bytes by the deadline: 1 done, 0 peer closed, -1 error or late. */
static int boot_recv_all(int fd, void *buf, size_t n, uint64_t deadline_ns)
{
    uint8_t *p = buf;
    while (n > 0) {
        struct pollfd pf = {fd, POLLIN, 0};
        int ms = boot_ms_left(deadline_ns, 100);
        if (ms == 0)
            return -1;
        if (poll(&pf, 1, ms) <= 0)
            continue;
        ssize_t k = recv(fd, p, n, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (k == 0 || (k < 0 && (errno == ECONNRESET || errno == EPIPE)))
            return 0;  /* closed (a reset too: the peer closed with our hello unread) */
        if (k < 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 1;
}

static void boot_addr_text(const struct sockaddr *sa, char *buf, size_t cap)
{
    const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                                              : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
    if (inet_ntop(sa->sa_family, a, buf, (socklen_t)cap) == NULL)
        snprintf(buf, cap, "?");
}

static struct addrinfo *boot_resolve(const struct node_job *j, bool passive)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    int rc = getaddrinfo(j->host, j->port, &hints, &res);
    if (rc != 0) {
        LOG_ERROR("NCCL", "bootstrap: cannot resolve NEURON_RT_ROOT_COMM_ID host %s: %s",
                  j->host, gai_strerror(rc));
        return NULL;
    }
    return res;
}

/* ---- rank 0 ---------------------------------------------------------------------- */

/* Bind and listen at the root address (retrying while it is in use). */
static int boot_listen(const struct node_job *j, uint64_t deadline_ns, char *src, size_t cap)
{
    struct addrinfo *ai = boot_resolve(j, true);
    if (ai == NULL)
        return -1;
    boot_addr_text(ai->ai_addr, src, cap);
    int fd = -1;
    for (;;) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int one = 1;
        if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
            bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 128) == 0)
            break;
        int e = errno;
        if (fd >= 0)
            close(fd);
        fd = -1;
        if (e != EADDRINUSE || boot_ms_left(deadline_ns, 1) == 0) {
            LOG_ERROR("NCCL", "bootstrap: rank 0 cannot listen at NEURON_RT_ROOT_COMM_ID "
                      "%s:%s: %s", j->host, j->port, strerror(e));
            break;
        }
        usleep(BOOT_RETRY_US);
    }
    freeaddrinfo(ai);
    return fd;
}

/* What the root knows while ranks arrive. */
struct boot_root {
    const struct node_job *j;      /* the job */
    uint32_t world;                /* ranks */
    struct boot_entry *table;      /* world entries */
    int *fds;                      /* world entries: a rank's socket, -1 unknown */
    uint32_t known;                /* ranks heard (rank 0 included) */
    NRT_STATUS fail;               /* a failure that ends the bootstrap */
    uint32_t about;                /* the rank it names */
    char why[112];                 /* its cause */
    uint64_t drop_logged;          /* when a dropped connection was last logged (ns) */
    uint32_t drops_unlogged;       /* connections dropped since that line */
};

/* Close p without an answer: a stranger that did not prove the token in
 * time, or one pushed out by newer connections. A rank of the job whose
 * connection this was connects again (boot_client). One line at most
 * every BOOT_DROP_LOG_NS, counting the ones it does not show. */
static void boot_drop(struct boot_root *r, struct boot_pending *p, const char *why)
{
    uint64_t now = spin_now_ns();
    if (r->drop_logged == 0 || now - r->drop_logged >= BOOT_DROP_LOG_NS) {
        LOG_ERROR("NCCL", "bootstrap: dropped a connection from %s: %s (%u more dropped since "
                 "the last line)", p->peer, why, r->drops_unlogged);
        r->drop_logged = now;
        r->drops_unlogged = 0;
    } else {
        r->drops_unlogged++;
    }
    close(p->fd);
    p->fd = -1;
}

/* Refuse p's whole hello with an answer saying why (the sender fails at
 * once instead of retrying); one line, rate-limited like boot_drop. */
static void boot_reject(struct boot_root *r, struct boot_pending *p, const char *why)
{
    struct boot_reply rep = {BOOT_MAGIC, (int32_t)NRT_INVALID, r->world, UINT32_MAX, {0}};
    snprintf(rep.why, sizeof rep.why, "rank 0 rejected this connection: %s", why);
    (void)send(p->fd, &rep, sizeof rep, MSG_NOSIGNAL | MSG_DONTWAIT);
    uint64_t now = spin_now_ns();
    if (r->drop_logged == 0 || now - r->drop_logged >= BOOT_DROP_LOG_NS) {
        LOG_ERROR("NCCL", "bootstrap: rejected a connection from %s: %s", p->peer, why);
        r->drop_logged = now;
    } else {
        r->drops_unlogged++;
    }
    close(p->fd);
    p->fd = -1;
}

const char *boot_hello_check(const uint8_t *msg, size_t len, const char *token, uint32_t world,
                             uint32_t nodes, uint32_t *rank, uint32_t *their_world,
                             struct boot_entry *e)
{
    struct boot_hello h;
    char tok[NODE_TOKEN_MAX] = {0};
    memcpy(tok, token, strnlen(token, NODE_TOKEN_MAX));
    *their_world = 0;
    if (len > BOOT_HELLO_BYTES)
        return "oversized hello (more than 256 bytes)";
    if (len < BOOT_HELLO_BYTES)
        return "closed before a whole hello";
    memcpy(&h, msg, sizeof h);
    if (h.magic != BOOT_MAGIC || h.version != BOOT_VERSION)
        return "not a trnemu bootstrap hello (magic or version)";
    if (memcmp(h.token, tok, NODE_TOKEN_MAX) != 0)
        return "wrong job token (TRNEMU_JOB_TOKEN differs)";
    if (h.e.addrlen == 0 || h.e.addrlen > BOOT_ADDR_MAX || h.e.reserved != 0 || h.e.node >= nodes)
        return "malformed hello (address length or node index)";
    *their_world = h.world;
    *rank = h.rank;
    if (h.world != world)
        return "mismatched world sizes";
    if (h.rank == 0 || h.rank >= world)
        return "rank out of range";
    *e = h.e;
    return NULL;
}

/* A whole hello from p: check it and take the rank, or drop it. */
static void boot_root_take(struct boot_root *r, struct boot_pending *p)
{
    uint8_t extra;
    size_t len = BOOT_HELLO_BYTES;
    if (recv(p->fd, &extra, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
        len++;
    uint32_t rank = 0, their = 0;
    struct boot_entry e;
    const char *why = boot_hello_check((const uint8_t *)&p->h, len, r->j->token, r->world,
                                       r->j->nodes, &rank, &their, &e);
    if (why != NULL && their != 0 && their != r->world) {
        r->fail = NRT_INVALID;
        r->about = rank;
        snprintf(r->why, sizeof r->why, "mismatched world sizes: rank %u says %u ranks, rank 0 "
                 "says %u", rank, their, r->world);
        LOG_ERROR("NCCL", "bootstrap: %s", r->why);
        r->fds[0] = p->fd;  /* slot 0 (rank 0 itself) carries this one's answer */
        p->fd = -1;
        return;
    }
    if (why == NULL && r->fds[rank] >= 0)
        why = "rank already taken";
    if (why != NULL)
        return boot_reject(r, p, why);
    r->table[rank] = e;
    r->fds[rank] = p->fd;
    r->known++;
    p->fd = -1;
}

/* Read what p has sent so far; take or drop it once whole. */
static void boot_root_read(struct boot_root *r, struct boot_pending *p)
{
    ssize_t k = recv(p->fd, (uint8_t *)&p->h + p->got, BOOT_HELLO_BYTES - p->got, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (k <= 0)
        return boot_drop(r, p, "closed before a whole hello");
    p->got += (uint32_t)k;
    if (p->got == BOOT_HELLO_BYTES)
        boot_root_take(r, p);
}

/* The pending connection to give up for a newer one: the one that has
 * sent the least of its hello, the oldest among equals (silent strangers
 * go first; a rank's hello arrives with its connection). */
static int boot_root_victim(const struct boot_pending *pend)
{
    int v = 0;
    for (int i = 1; i < BOOT_PENDING_MAX; i++)
        if (pend[i].got < pend[v].got ||
            (pend[i].got == pend[v].got && pend[i].since < pend[v].since))
            v = i;
    return v;
}

/* Accept every connection waiting at the listener and read what each has
 * sent at once; false when none was waiting. */
static bool boot_root_accept(struct boot_root *r, int lfd, struct boot_pending *pend)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
    if (fd < 0)
        return false;
    int slot = -1;
    for (int i = 0; i < BOOT_PENDING_MAX && slot < 0; i++)
        if (pend[i].fd < 0)
            slot = i;
    if (slot < 0) {  /* full: the least promising one makes room */
        slot = boot_root_victim(pend);
        boot_drop(r, &pend[slot], "too many connections without a hello; this one was the "
                  "least advanced");
    }
    pend[slot] = (struct boot_pending){.fd = fd, .since = spin_now_ns()};
    boot_addr_text((struct sockaddr *)&ss, pend[slot].peer, sizeof pend[slot].peer);
    boot_root_read(r, &pend[slot]);
    return true;
}

/* Drop the connections that did not say hello within the window. */
static void boot_root_expire(struct boot_root *r, struct boot_pending *pend)
{
    for (int i = 0; i < BOOT_PENDING_MAX; i++)
        if (pend[i].fd >= 0 && spin_now_ns() - pend[i].since > BOOT_HELLO_WAIT_NS)
            boot_drop(r, &pend[i], "no whole hello within the 2 s handshake window");
}

/* Wait for every rank (or a failure, or the deadline). */
static void boot_root_gather(struct boot_root *r, int lfd, uint64_t deadline_ns)
{
    struct boot_pending pend[BOOT_PENDING_MAX];
    for (int i = 0; i < BOOT_PENDING_MAX; i++)
        pend[i].fd = -1;
    while (r->known < r->world && r->fail == NRT_SUCCESS) {
        struct pollfd pf[BOOT_PENDING_MAX + 1];
        int n = 0, idx[BOOT_PENDING_MAX];
        pf[n++] = (struct pollfd){lfd, POLLIN, 0};
        for (int i = 0; i < BOOT_PENDING_MAX; i++)
            if (pend[i].fd >= 0) {
                idx[n - 1] = i;
                pf[n++] = (struct pollfd){pend[i].fd, POLLIN, 0};
            }
        int ms = boot_ms_left(deadline_ns, 50);
        if (ms == 0) {
            r->fail = NRT_TIMEOUT;
            break;
        }
        if (poll(pf, (nfds_t)n, ms) > 0) {
            for (int k = 1; k < n; k++)
                if (pf[k].revents != 0 && pend[idx[k - 1]].fd >= 0)
                    boot_root_read(r, &pend[idx[k - 1]]);
            /* a bounded batch, so that the ones read above get their turn */
            for (int k = 0; (pf[0].revents & POLLIN) && k < 4 * BOOT_PENDING_MAX &&
                            r->fail == NRT_SUCCESS && boot_root_accept(r, lfd, pend); k++)
                ;
        }
        boot_root_expire(r, pend);
    }
    for (int i = 0; i < BOOT_PENDING_MAX; i++)
        if (pend[i].fd >= 0)
            close(pend[i].fd);
}

/* Name the ranks that never said hello. */
static void boot_root_missing(struct boot_root *r)
{
    size_t len = 0;
    r->why[0] = '\0';
    len += (size_t)snprintf(r->why, sizeof r->why, "rank(s) ");
    for (uint32_t k = 1; k < r->world && len + 12 < sizeof r->why; k++)
        if (r->fds[k] < 0) {
            if (r->about == UINT32_MAX)
                r->about = k;
            len += (size_t)snprintf(r->why + len, sizeof r->why - len, "%u ", k);
        }
    snprintf(r->why + len, sizeof r->why - len, "did not reach the bootstrap in time");
    LOG_ERROR("NCCL", "bootstrap at %s:%s: %s (NEURON_RT_EXEC_TIMEOUT)", r->j->host, r->j->port,
              r->why);
}

/* Answer every connected rank: the table, or the failure. */
static void boot_root_answer(struct boot_root *r)
{
    struct boot_reply rep = {BOOT_MAGIC, (int32_t)r->fail, r->world, r->about, {0}};
    memcpy(rep.why, r->why, sizeof rep.why);
    for (uint32_t k = 0; k < r->world; k++) {
        if (r->fds[k] < 0 || (k == 0 && r->fail == NRT_SUCCESS))
            continue;
        if (boot_send_all(r->fds[k], &rep, sizeof rep) && r->fail == NRT_SUCCESS)
            boot_send_all(r->fds[k], r->table, sizeof *r->table * r->world);
        close(r->fds[k]);
    }
}

static NRT_STATUS boot_root(const struct node_job *j, uint32_t world, struct boot_entry *me,
                            boot_addr_fn addr_fn, void *arg, uint64_t deadline_ns,
                            struct boot_entry *table)
{
    char src[64];
    int lfd = boot_listen(j, deadline_ns, src, sizeof src);
    if (lfd < 0)
        return NRT_RESOURCE;
    NRT_STATUS st = addr_fn(arg, src, me);
    int *fds = malloc(sizeof *fds * world);
    if (st != NRT_SUCCESS || fds == NULL) {
        close(lfd);
        free(fds);
        return st != NRT_SUCCESS ? st : NRT_RESOURCE;
    }
    for (uint32_t k = 0; k < world; k++)
        fds[k] = -1;
    table[0] = *me;
    struct boot_root r = {j, world, table, fds, 1, NRT_SUCCESS, UINT32_MAX, {0}, 0, 0};
    boot_root_gather(&r, lfd, deadline_ns);
    close(lfd);
    if (r.fail == NRT_TIMEOUT)
        boot_root_missing(&r);
    boot_root_answer(&r);
    free(fds);
    return r.fail;
}

/* ---- the other ranks ------------------------------------------------------------- */

/* Connect to the root, retrying until the deadline; -1 when unreachable. */
static int boot_connect(const struct node_job *j, uint64_t deadline_ns)
{
    struct addrinfo *ai = boot_resolve(j, false);
    if (ai == NULL)
        return -2;
    int fd = -1, last = 0;
    while (fd < 0) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        last = errno;
        if (fd >= 0)
            close(fd);
        fd = -1;
        if (boot_ms_left(deadline_ns, 1) == 0)
            break;
        usleep(BOOT_RETRY_US);
    }
    freeaddrinfo(ai);
    if (fd < 0)
        LOG_ERROR("NCCL", "bootstrap: rank 0 at NEURON_RT_ROOT_COMM_ID %s:%s could not be "
                  "reached in time (%s): wrong address, or rank 0 never started",
                  j->host, j->port, strerror(last));
    return fd;
}

/* Rank 0's answer on fd. NRT_UNINITIALIZED (nothing logged) when the
 * connection closed without one: rank 0 dropped it (a flood of strangers,
 * a slow start) and the caller connects again. */
static NRT_STATUS boot_client_reply(int fd, const struct node_job *j, uint32_t world,
                                    uint64_t deadline_ns, struct boot_entry *table)
{
    struct boot_reply rep;
    int rc = boot_recv_all(fd, &rep, sizeof rep, deadline_ns);
    if (rc == 0)
        return NRT_UNINITIALIZED;
    if (rc < 0) {
        LOG_ERROR("NCCL", "bootstrap: no answer in time from rank 0 at %s:%s "
                  "(NEURON_RT_EXEC_TIMEOUT)", j->host, j->port);
        return NRT_TIMEOUT;
    }
    rep.why[sizeof rep.why - 1] = '\0';
    if (rep.magic != BOOT_MAGIC || rep.world != world) {
        LOG_ERROR("NCCL", "bootstrap: malformed answer from %s:%s", j->host, j->port);
        return NRT_INVALID;
    }
    if (rep.status != NRT_SUCCESS) {
        LOG_ERROR("NCCL", "bootstrap failed at rank 0: %s", rep.why);
        return (NRT_STATUS)rep.status;
    }
    if (boot_recv_all(fd, table, sizeof *table * world, deadline_ns) != 1) {
        LOG_ERROR("NCCL", "bootstrap: the table from rank 0 at %s:%s was cut short", j->host,
                  j->port);
        return NRT_EXEC_HW_ERR_COLLECTIVES;
    }
    return NRT_SUCCESS;
}

/* The local address this host uses towards the root (a UDP "connect"
 * sends nothing), so that the endpoint is open before the hello goes. */
static NRT_STATUS boot_source(const struct node_job *j, char *src, size_t cap)
{
    struct addrinfo *ai = boot_resolve(j, false);
    if (ai == NULL)
        return NRT_INVALID;
    int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    bool ok = fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
              getsockname(fd, (struct sockaddr *)&ss, &sl) == 0;
    if (ok)
        boot_addr_text((struct sockaddr *)&ss, src, cap);
    else
        LOG_ERROR("NCCL", "bootstrap: no route to NEURON_RT_ROOT_COMM_ID %s:%s: %s", j->host,
                  j->port, strerror(errno));
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return ok ? NRT_SUCCESS : NRT_TIMEOUT;
}

static NRT_STATUS boot_client(const struct node_job *j, uint32_t world, uint32_t rank,
                              struct boot_entry *me, boot_addr_fn addr_fn, void *arg,
                              uint64_t deadline_ns, struct boot_entry *table)
{
    char src[64];
    NRT_STATUS st = boot_source(j, src, sizeof src);
    if (st == NRT_SUCCESS)
        st = addr_fn(arg, src, me);
    if (st != NRT_SUCCESS)
        return st;
    struct boot_hello h;
    memset(&h, 0, sizeof h);
    h.magic = BOOT_MAGIC;
    h.version = BOOT_VERSION;
    memcpy(h.token, j->token, strnlen(j->token, NODE_TOKEN_MAX));
    h.world = world;
    h.rank = rank;
    h.e = *me;
    /* Rank 0 may drop the connection before reading it (strangers crowd
     * its endpoint): connect again until the deadline. */
    for (uint32_t tries = 1;; tries++) {
        int fd = boot_connect(j, deadline_ns);
        if (fd < 0)
            return fd == -2 ? NRT_INVALID : NRT_TIMEOUT;
        st = boot_send_all(fd, &h, sizeof h) ? boot_client_reply(fd, j, world, deadline_ns, table)
                                             : NRT_UNINITIALIZED;
        close(fd);
        if (st != NRT_UNINITIALIZED)
            return st;
        if (boot_ms_left(deadline_ns, 1) == 0) {
            LOG_ERROR("NCCL", "bootstrap: rank 0 at %s:%s closed this rank's connection %u "
                      "time(s) without an answer until the deadline (NEURON_RT_EXEC_TIMEOUT; "
                      "see rank 0's log)", j->host, j->port, tries);
            return NRT_EXEC_HW_ERR_COLLECTIVES;
        }
        usleep(BOOT_RETRY_US);
    }
}

NRT_STATUS boot_exchange(const struct node_job *j, uint32_t world, uint32_t rank,
                         struct boot_entry *me, boot_addr_fn addr_fn, void *arg,
                         uint64_t deadline_ns, struct boot_entry *table)
{
    if (world == 0 || world > BOOT_MAX_RANKS || rank >= world)
        return NRT_INVALID;
    if (rank == 0)
        return boot_root(j, world, me, addr_fn, arg, deadline_ns, table);
    return boot_client(j, world, rank, me, addr_fn, arg, deadline_ns, table);
}
