/*
 * fabric_base.c: a plain libfabric transfer between two forked processes
 * (see fabric_base.h): 256 KiB messages, 16 in flight, like the bridge of
 * devices/link/fabric.c, received into one buffer; the receiver answers with
 * one byte once all have arrived, and the sender times from its first send
 * to that answer.
 */
#include "fabric_base.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FB_CHUNK (256u << 10) /* bytes per message */
#define FB_WINDOW 16          /* messages in flight */

/* One process's endpoint. */
struct fb_ep {
    struct fi_info *info;      /* provider */
    struct fid_fabric *fabric; /* libfabric objects */
    struct fid_domain *domain;
    struct fid_cq *cq;
    struct fid_av *av;
    struct fid_ep *ep;
    fi_addr_t peer;            /* the other process */
};

static double fb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fb_open(struct fb_ep *e, uint8_t *addr, size_t *len)
{
    struct fi_info *h = fi_allocinfo();
    h->ep_attr->type = FI_EP_RDM;
    h->caps = FI_MSG;
    h->domain_attr->mr_mode = 0;
    h->mode = FI_CONTEXT;
    h->fabric_attr->prov_name = strdup("tcp");
    int rc = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", NULL, FI_SOURCE, h, &e->info);
    fi_freeinfo(h);
    if (rc)
        return rc;
    struct fi_cq_attr cqa = {.size = 256, .format = FI_CQ_FORMAT_MSG};
    struct fi_av_attr ava = {.type = FI_AV_TABLE};
    if ((rc = fi_fabric(e->info->fabric_attr, &e->fabric, NULL)) ||
        (rc = fi_domain(e->fabric, e->info, &e->domain, NULL)) ||
        (rc = fi_cq_open(e->domain, &cqa, &e->cq, NULL)) ||
        (rc = fi_av_open(e->domain, &ava, &e->av, NULL)) ||
        (rc = fi_endpoint(e->domain, e->info, &e->ep, NULL)) ||
        (rc = fi_ep_bind(e->ep, &e->av->fid, 0)) ||
        (rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) || (rc = fi_enable(e->ep)))
        return rc;
    return fi_getname(&e->ep->fid, addr, len);
}

static void fb_close(struct fb_ep *e)
{
    fi_close(&e->ep->fid);
    fi_close(&e->av->fid);
    fi_close(&e->cq->fid);
    fi_close(&e->domain->fid);
    fi_close(&e->fabric->fid);
    fi_freeinfo(e->info);
}

/* Wait for n completions; false on an error. */
static bool fb_reap(struct fb_ep *e, int n)
{
    struct fi_cq_msg_entry c[16];
    while (n > 0) {
        ssize_t k = fi_cq_read(e->cq, c, n < 16 ? n : 16);
        if (k == -FI_EAGAIN)
            continue;
        if (k < 0)
            return false;
        n -= (int)k;
    }
    return true;
}

static void fb_post(struct fb_ep *e, bool send, void *buf, size_t len, struct fi_context *ctx)
{
    ssize_t rc;
    do {
        rc = send ? fi_send(e->ep, buf, len, NULL, e->peer, ctx)
                  : fi_recv(e->ep, buf, len, NULL, FI_ADDR_UNSPEC, ctx);
        if (rc == -FI_EAGAIN)
            fb_reap(e, 0), fi_cq_read(e->cq, NULL, 0);
    } while (rc == -FI_EAGAIN);
}

/* Move bytes with FB_WINDOW messages in flight (send or receive side). */
static bool fb_stream(struct fb_ep *e, bool send, uint8_t *buf, uint64_t bytes)
{
    static struct fi_context ctx[FB_WINDOW];
    uint64_t n = (bytes + FB_CHUNK - 1) / FB_CHUNK, posted = 0, done = 0;
    while (done < n) {
        while (posted < n && posted - done < FB_WINDOW) {
            uint64_t off = posted * FB_CHUNK, len = bytes - off < FB_CHUNK ? bytes - off : FB_CHUNK;
            fb_post(e, send, buf + (send ? off : off % (FB_CHUNK * FB_WINDOW)), len,
                    &ctx[posted % FB_WINDOW]);
            posted++;
        }
        if (!fb_reap(e, 1))
            return false;
        done++;
    }
    return true;
}

/* One side: 0 sends (and times), 1 receives. */
static double fb_side(int side, int tx, int rx, uint64_t bytes, int reps)
{
    struct fb_ep e = {0};
    uint8_t addr[128], peer[128];
    size_t len = sizeof addr;
    if (fb_open(&e, addr, &len) != 0)
        return -1;
    if (write(tx, &len, sizeof len) != sizeof len || write(tx, addr, len) != (ssize_t)len ||
        read(rx, &len, sizeof len) != sizeof len || read(rx, peer, len) != (ssize_t)len ||
        fi_av_insert(e.av, peer, 1, &e.peer, 0, NULL) != 1)
        return -1;
    uint8_t *buf = malloc(side == 0 ? bytes : (uint64_t)FB_CHUNK * FB_WINDOW);
    memset(buf, 1, side == 0 ? bytes : (uint64_t)FB_CHUNK * FB_WINDOW);
    uint8_t ack = 0;
    struct fi_context actx;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = fb_now();
        if (side == 0) {
            fb_post(&e, false, &ack, 1, &actx);
            if (!fb_stream(&e, true, buf, bytes) || !fb_reap(&e, 1))
                return -1;
        } else {
            if (!fb_stream(&e, false, buf, bytes))
                return -1;
            fb_post(&e, true, &ack, 1, &actx);
            fb_reap(&e, 1);
        }
        double t = fb_now() - t0;
        best = t < best ? t : best;
    }
    free(buf);
    fb_close(&e);
    return best;
}

double fabric_base_transfer(uint64_t bytes, int reps)
{
    int a[2], b[2], res[2];
    if (pipe(a) || pipe(b) || pipe(res))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        double t = fb_side(1, b[1], a[0], bytes, reps);
        _exit(t < 0);
    }
    double t = fb_side(0, a[1], b[0], bytes, reps);
    int status;
    waitpid(pid, &status, 0);
    for (int i = 0; i < 2; i++) {
        close(a[i]);
        close(b[i]);
        close(res[i]);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
}
