/*
 * coll_algo.c: the collective operations as sets of messages, and the
 * progress engine that moves them (see coll.h, docs/collectives.md).
 *
 * An operation is planned as a list of transfers (coll_xfer): messages
 * this rank sends, messages it receives (each with a "sink": copy, fold
 * into an accumulator, fold with this rank's input, or fold straight into
 * the next rank's channel), and local steps. A transfer may wait for
 * another one to finish (`after`), and a send may be gated by how much of
 * a receive has arrived (`ready`), which is how data is forwarded while it
 * streams in. The engine sweeps the list, moving whatever can move without
 * blocking, and sleeps on the rank's bell only when nothing could; so no
 * rank ever blocks on one channel while another would let it progress, and
 * messages larger than a ring stream through it.
 *
 * Reductions always combine ranks in group order 0..n-1, left to right
 * (coll_reduce.h), in every algorithm:
 *  - mesh (small all-reduce, reduce-scatter): every rank sends its data
 *    (or the part the receiver owns) to every other; the receiver folds
 *    the n contributions in group order into an accumulator.
 *  - chain (large all-reduce): the partial result flows 0 -> 1 -> ... ->
 *    n-1 (rank r folds its input into what r-1 sent and writes the result
 *    straight into its channel to r+1), then the result flows n-1 -> 0 ->
 *    1 -> ... -> n-2 (copied into dst and the next channel in one pass).
 *    Both streams are pipelined through ring channels, so each link
 *    carries 2S bytes, as a ring all-reduce would.
 *  - direct (large all-reduce, reduce-scatter or all-gather over the whole
 *    communicator, every buffer in device memory): coll_direct.c.
 *  - switch (large all-reduce on a NeuronSwitch machine, where every chip
 *    reaches every other in one hop): rank r reduces shard r of the data
 *    from every rank (sent straight to it, folded in group order), then
 *    sends the reduced shard straight to every rank; the send streams as
 *    the fold finishes each byte.
 * All-gather: mesh (each block straight to every rank) for small data or
 * on a switch, ring forwarding for large (when not direct). All-to-all,
 * permute, barrier: direct messages.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/coll/coll_int.h"
#include "emu/grow.h"
#include "emu/log.h"
#include "emu/num/numerics.h"

/* What a receive (or local step) does with its data. */
enum coll_sink {
    SINK_COPY = 0,    /* dst = data */
    SINK_FOLD = 1,    /* dst = dst (op) data: an accumulator */
    SINK_FOLD_TO = 2, /* dst = data (op) x */
    SINK_FUSED = 3,   /* the `fuse` send's channel = data (op) x */
    SINK_PASS = 4,    /* dst = data, and the `fuse` send's channel = data */
};

/* Header aux values: the algorithm is part of every header, so ranks that
 * chose differently fail with NRT_INVALID instead of mixing protocols. */
#define COLL_AUX_REDUCE 0u              /* chain all-reduce: partial results */
#define COLL_AUX_BCAST 1u               /* chain all-reduce: the result */
#define COLL_AUX_MESH 2u                /* mesh all-reduce */
#define COLL_AUX_SWITCH_RS 3u          /* switch all-reduce: a shard to reduce */
#define COLL_AUX_SWITCH_AG 4u          /* switch all-reduce: a reduced shard */
#define COLL_AUX_RING (1ull << 32)      /* ring all-gather (| origin rank) */

/* One operation under way. */
struct coll_job {
    struct coll_comm *c;        /* the communicator */
    const struct coll_args *a;  /* what was asked */
    const uint32_t *g;          /* members, group order */
    uint32_t n;                 /* members */
    uint32_t me;                /* this rank's position */
    uint32_t seq;               /* sequence number in the group */
    uint32_t esize;             /* bytes per element */
    uint32_t nxf;               /* transfers planned */
    struct coll_xfer *xf;       /* c->xf */
    struct chan_waiter w;       /* how to wait */
    uint32_t checks;            /* wait checks so far */
};

/* ---- planning ------------------------------------------------------------------ */

static struct coll_xfer *coll_xf_new(struct coll_job *o, int *idx)
{
    struct coll_xfer *x = &o->xf[o->nxf];
    memset(x, 0, sizeof *x);
    x->after = -1;
    x->fuse = -1;
    *idx = (int)o->nxf++;
    return x;
}

static void coll_hdr(const struct coll_job *o, struct chan_msg *h, uint32_t from, uint64_t bytes,
                     uint64_t aux)
{
    memset(h, 0, sizeof *h);
    h->magic = CHAN_MSG_MAGIC;
    h->seq = o->seq;
    h->kind = (uint16_t)o->a->kind;
    h->dtype = (uint8_t)o->a->dtype;
    h->op = (uint8_t)o->a->op;
    h->from = from;
    h->bytes = bytes;
    h->aux = aux;
}

/* A message to group position p. */
static int coll_send(struct coll_job *o, uint32_t p, const void *src, uint64_t bytes, uint64_t aux,
                     int after)
{
    int i;
    struct coll_xfer *x = coll_xf_new(o, &i);
    x->out = true;
    x->peer = o->g[p];
    x->ch = &o->c->tx[x->peer];
    x->src = src;
    x->after = after;
    coll_hdr(o, &x->hdr, o->c->rank, bytes, aux);
    return i;
}

/* A message from group position p, into dst with sink. */
static int coll_recv(struct coll_job *o, uint32_t p, void *dst, uint64_t bytes, uint64_t aux,
                     int sink, int after)
{
    int i;
    struct coll_xfer *x = coll_xf_new(o, &i);
    x->peer = o->g[p];
    x->ch = &o->c->rx[x->peer];
    x->dst = dst;
    x->sink = sink;
    x->after = after;
    coll_hdr(o, &x->hdr, x->peer, bytes, aux);
    return i;
}

/* A local step: sink applied to this rank's own data. */
static int coll_local(struct coll_job *o, const void *src, void *dst, uint64_t bytes, int sink,
                      int after)
{
    int i;
    struct coll_xfer *x = coll_xf_new(o, &i);
    x->peer = COLL_NONE;
    x->src = src;
    x->dst = dst;
    x->sink = sink;
    x->after = after;
    x->hdr.bytes = bytes;
    return i;
}

/* ---- moving data ------------------------------------------------------------- */

/* Apply a sink to k bytes of data landing at payload offset off. */
static void coll_apply(struct coll_job *o, struct coll_xfer *x, const uint8_t *data, uint64_t off,
                       uint64_t k)
{
    size_t n = (size_t)(k / o->esize);
    switch (x->sink) {
    case SINK_COPY: memcpy(x->dst + off, data, k); break;
    case SINK_FOLD: coll_fold(x->dst + off, x->dst + off, data, n, o->a->dtype, o->a->op); break;
    case SINK_FOLD_TO: coll_fold(x->dst + off, data, x->x + off, n, o->a->dtype, o->a->op); break;
    default: break;
    }
}

static bool coll_after_ok(const struct coll_job *o, const struct coll_xfer *x)
{
    return x->after < 0 || o->xf[x->after].phase == 3;
}

/* Advance a send; true when it moved. */
static bool coll_step_out(struct coll_job *o, struct coll_xfer *x)
{
    switch (x->phase) {
    case 0:
        if (!coll_after_ok(o, x) || !chan_put_msg(x->ch, &x->hdr))
            return false;
        coll_account(o->c, x->peer, x->hdr.bytes + sizeof x->hdr);
        x->phase = 1;
        return true;
    case 1: {
        uint64_t bytes = x->hdr.bytes, ready = x->ready ? *x->ready : bytes;
        if (x->done < bytes && !x->fed && ready > x->done)
            x->done += chan_put(x->ch, x->src + x->done, ready - x->done, o->esize);
        if (x->done < bytes)
            return false;
        x->phase = 2;
        return true;
    }
    case 2:
        if (!chan_put_pad(x->ch, chan_pad_bytes(x->hdr.bytes)))
            return false;
        x->phase = 3;
        return true;
    }
    return false;
}

/* Log and fail a header that is not the one expected. */
static NRT_STATUS coll_mismatch(struct coll_job *o, const struct coll_xfer *x,
                                const struct chan_msg *got)
{
    const struct chan_msg *w = &x->hdr;
    const char *gd = num_dtype_name(got->dtype), *wd = num_dtype_name(w->dtype);
    LOG_ERROR("NCCL", "rank %u: %s #%u expects from rank %u %" PRIu64 " bytes of %s (%s, "
              "part %" PRIu64 "), but rank %u sent %s #%u of %" PRIu64 " bytes of %s (%s, part "
              "%" PRIu64 "): the ranks disagree on the collective", o->c->rank,
              coll_kind_name((enum core_coll_kind)w->kind), w->seq, x->peer, w->bytes, wd ? wd : "?",
              coll_op_name(w->op), w->aux, got->from,
              coll_kind_name((enum core_coll_kind)got->kind), got->seq, got->bytes, gd ? gd : "?",
              coll_op_name(got->op), got->aux);
    return coll_fail(o->c, NRT_INVALID, x->peer);
}

static bool coll_hdr_same(const struct chan_msg *a, const struct chan_msg *b)
{
    return a->magic == b->magic && a->seq == b->seq && a->kind == b->kind &&
           a->dtype == b->dtype && a->op == b->op && a->from == b->from && a->bytes == b->bytes &&
           a->aux == b->aux;
}

/* Fold arriving data with this rank's input straight into the next channel. */
static uint64_t coll_fuse(struct coll_job *o, struct coll_xfer *x, const uint8_t *p, uint64_t k)
{
    struct coll_xfer *out = &o->xf[x->fuse];
    uint8_t *q;
    if (out->phase != 1)
        return 0;
    uint64_t s = chan_space(out->ch, &q);
    if (k > s)
        k = s;
    k -= k % o->esize;
    if (k == 0)
        return 0;
    if (x->sink == SINK_PASS) {
        memcpy(q, p, k);
        memcpy(x->dst + x->done, p, k);
    } else {
        coll_fold(q, p, x->x + x->done, (size_t)(k / o->esize), o->a->dtype, o->a->op);
    }
    chan_commit(out->ch, k);
    out->done += k;
    return k;
}

/* Advance a receive; 1 when it moved, 0 when not, -1 on a bad header. */
static int coll_step_in(struct coll_job *o, struct coll_xfer *x, NRT_STATUS *st)
{
    switch (x->phase) {
    case 0: {
        struct chan_msg got;
        if (!coll_after_ok(o, x) || !chan_get_msg(x->ch, &got))
            return 0;
        if (!coll_hdr_same(&got, &x->hdr)) {
            *st = coll_mismatch(o, x, &got);
            return -1;
        }
        x->phase = 1;
        return 1;
    }
    case 1: {
        bool moved = false;
        for (int pass = 0; pass < 2 && x->done < x->hdr.bytes; pass++) {
            const uint8_t *p;
            uint64_t k = chan_avail(x->ch, &p);
            if (k > x->hdr.bytes - x->done)
                k = x->hdr.bytes - x->done;
            k -= k % o->esize;
            if (k == 0)
                break;
            if (x->sink == SINK_FUSED || x->sink == SINK_PASS)
                k = coll_fuse(o, x, p, k);
            else
                coll_apply(o, x, p, x->done, k);
            if (k == 0)
                break;
            chan_release(x->ch, k);
            x->done += k;
            moved = true;
        }
        if (x->done < x->hdr.bytes)
            return moved;
        x->phase = 2;
        return 1;
    }
    case 2:
        if (!chan_get_pad(x->ch, chan_pad_bytes(x->hdr.bytes)))
            return 0;
        x->phase = 3;
        return 1;
    }
    return 0;
}

static int coll_step(struct coll_job *o, struct coll_xfer *x, NRT_STATUS *st)
{
    if (x->peer == COLL_NONE) {
        if (!coll_after_ok(o, x))
            return 0;
        if (x->hdr.bytes > 0)
            coll_apply(o, x, x->src, 0, x->hdr.bytes);
        x->done = x->hdr.bytes;
        x->phase = 3;
        return 1;
    }
    return x->out ? coll_step_out(o, x) : coll_step_in(o, x, st);
}

/* ---- faults -------------------------------------------------------------------- */

#define COLL_LIVE_FULL_EVERY 20  /* checks between pid start-time checks */

/* Does the operation wait on peer in a way only the peer can end: a
 * receive from it with nothing left in its channel, or a send to it with
 * no room left? (A peer that finished and left may still have messages
 * for us in its channels: those are read as usual.) */
static bool coll_needs(const struct coll_job *o, uint32_t peer)
{
    for (uint32_t i = 0; i < o->nxf; i++) {
        const struct coll_xfer *x = &o->xf[i];
        if (x->phase == 3 || x->peer != peer)
            continue;
        if (x->out ? x->ch->cap - chan_fill(x->ch) < CHAN_ALIGN : chan_fill(x->ch) == 0)
            return true;
    }
    return false;
}

/* Between waits: another rank's failure, or a member gone that we need. */
static NRT_STATUS coll_op_check(void *arg)
{
    struct coll_job *o = arg;
    struct coll_comm *c = o->c;
    NRT_STATUS st = coll_abort_check(c);
    if (st != NRT_SUCCESS)
        return st;
    for (uint32_t r = 0; c->cur_op != 0 && c->posted_op != c->cur_op && r < c->world; r++)
        if (atomic_load(&c->posts[r].seq) == c->cur_op) {
            LOG_ERROR("NCCL", "rank %u: %s #%u over the channels, but rank %u runs a %s over "
                      "device memory: the ranks disagree on the collective", c->rank,
                      coll_kind_name(o->a->kind), o->seq, r,
                      coll_kind_name(c->posts[r].kind));
            return coll_fail(c, NRT_INVALID, r);
        }
    bool full = ++o->checks % COLL_LIVE_FULL_EVERY == 0;
    for (uint32_t i = 0; i < o->n; i++) {
        uint32_t p = o->g[i];
        if (p != o->c->rank && !coll_rank_alive(o->c, p, full) && coll_needs(o, p))
            return coll_missing(o->c, p);
    }
    return NRT_SUCCESS;
}

/* The first unfinished transfer's peer, for messages. */
static uint32_t coll_pending_peer(const struct coll_job *o)
{
    for (uint32_t i = 0; i < o->nxf; i++)
        if (o->xf[i].phase != 3 && o->xf[i].peer != COLL_NONE && coll_after_ok(o, &o->xf[i]))
            return o->xf[i].peer;
    for (uint32_t i = 0; i < o->nxf; i++)
        if (o->xf[i].phase != 3 && o->xf[i].peer != COLL_NONE)
            return o->xf[i].peer;
    return o->c->rank;
}

static NRT_STATUS coll_timed_out(struct coll_job *o)
{
    uint32_t p = coll_pending_peer(o);
    LOG_ERROR("NCCL", "rank %u: %s #%u of %u ranks timed out waiting for rank %u (pid %d), "
              "which did not take part in time (NEURON_RT_EXEC_TIMEOUT / TRNEMU_COLL_TIMEOUT)",
              o->c->rank, coll_kind_name(o->a->kind), o->seq, o->n, p, (int)o->c->pid_of[p]);
    return coll_fail(o->c, NRT_TIMEOUT, p);
}

/* Move every planned transfer to its end. */
static NRT_STATUS coll_engine(struct coll_job *o)
{
    for (;;) {
        uint32_t seen = chan_bell_seen(o->w.bell);
        bool progress = false, all = true;
        for (uint32_t i = 0; i < o->nxf; i++) {
            struct coll_xfer *x = &o->xf[i];
            if (x->phase == 3)
                continue;
            NRT_STATUS st = NRT_SUCCESS;
            int r;
            while ((r = coll_step(o, x, &st)) > 0 && x->phase != 3)
                progress = true;
            if (r < 0)
                return st;
            progress = progress || r > 0;
            all = all && x->phase == 3;
        }
        if (all)
            return NRT_SUCCESS;
        if (progress)
            continue;
        NRT_STATUS st = chan_wait(&o->w, seen);
        if (st == NRT_TIMEOUT)
            return coll_timed_out(o);
        if (st != NRT_SUCCESS)
            return st;
    }
}

/* ---- the operations ------------------------------------------------------------ */

/* Should an operation of `bytes` over n ranks go by mesh? */
static bool coll_use_mesh(const struct coll_job *o, uint64_t bytes)
{
    return bytes <= o->c->ctl->mesh_max && (o->n <= o->c->ctl->mesh_ranks || o->n == 2);
}

/* Should this operation go directly through device memory (coll_direct.c)?
 * An all-reduce, reduce-scatter or all-gather over the whole communicator
 * on one node whose full tensor (the all-reduce's data, the
 * reduce-scatter's input, the all-gather's output) is large: not sent by
 * mesh, and at least direct_min bytes. Whether every buffer is in device
 * memory is settled with the other ranks by coll_direct_run. */
static bool coll_use_direct(const struct coll_job *o)
{
    const struct coll_args *a = o->a;
    uint64_t full = a->count * o->esize * (a->kind == CORE_COLL_ALL_GATHER ? o->n : 1);
    bool kind = a->kind == CORE_COLL_ALL_REDUCE || a->kind == CORE_COLL_REDUCE_SCATTER ||
                a->kind == CORE_COLL_ALL_GATHER;
    return kind && o->c->cur_op != 0 && o->c->net == NULL && !coll_use_mesh(o, full) &&
           full >= o->c->ctl->direct_min;
}

/* Elements of shard p when count elements are split over n ranks (the
 * first count % n shards have one more), and where shard p starts. */
static uint64_t coll_shard(uint64_t count, uint32_t n, uint32_t p, uint64_t *first)
{
    uint64_t base = count / n, rem = count % n;
    *first = p * base + (p < rem ? p : rem);
    return base + (p < rem);
}

/* Ordered fold stages: acc = contribution of position 0, then folded with
 * 1..n-1; this rank's own contribution is `mine`, the others arrive from
 * their senders (chunk bytes each). Returns the last stage's index. */
static int coll_plan_fold(struct coll_job *o, const uint8_t *mine, uint8_t *acc,
                          uint64_t bytes, uint64_t aux)
{
    int prev = -1;
    for (uint32_t p = 0; p < o->n; p++) {
        int sink = p == 0 ? SINK_COPY : SINK_FOLD;
        prev = p == o->me ? coll_local(o, mine, acc, bytes, sink, prev)
                          : coll_recv(o, p, acc, bytes, aux, sink, prev);
    }
    return prev;
}

/* Run the plan, then copy its result of bytes at out into the destination
 * (where out is a scratch buffer, not the destination itself). */
static NRT_STATUS coll_engine_into(struct coll_job *o, const uint8_t *out, uint64_t bytes)
{
    NRT_STATUS st = coll_engine(o);
    if (st == NRT_SUCCESS && bytes > 0 && out != o->a->dst)
        memcpy(o->a->dst, out, bytes);
    return st;
}

static NRT_STATUS coll_all_reduce_mesh(struct coll_job *o)
{
    uint64_t s = o->a->count * o->esize;
    uint8_t *acc = coll_scratch(o->c, s);
    if (acc == NULL && s > 0)
        return NRT_RESOURCE;
    for (uint32_t p = 0; p < o->n; p++)
        if (p != o->me)
            (void)coll_send(o, p, o->a->src, s, COLL_AUX_MESH, -1);
    (void)coll_plan_fold(o, o->a->src, acc, s, COLL_AUX_MESH);
    return coll_engine_into(o, acc, s);
}

static NRT_STATUS coll_all_reduce_switch(struct coll_job *o)
{
    uint64_t s = o->a->count * o->esize, first, mine_first;
    uint32_t me = o->me, n = o->n, es = o->esize;
    const uint8_t *x = o->a->src;
    uint8_t *acc = coll_scratch(o->c, s);
    if (acc == NULL && s > 0)
        return NRT_RESOURCE;
    int rs[COLL_MAX_RANKS];
    for (uint32_t p = 0; p < n; p++) {
        uint64_t len = coll_shard(o->a->count, n, p, &first);
        rs[p] = p == me ? -1 : coll_send(o, p, x + first * es, len * es, COLL_AUX_SWITCH_RS, -1);
    }
    uint64_t mine = coll_shard(o->a->count, n, me, &mine_first) * es;
    int folded = coll_plan_fold(o, x + mine_first * es, acc + mine_first * es, mine,
                                COLL_AUX_SWITCH_RS);
    for (uint32_t p = 0; p < n; p++) {
        if (p == me)
            continue;
        int ag = coll_send(o, p, acc + mine_first * es, mine, COLL_AUX_SWITCH_AG, rs[p]);
        o->xf[ag].ready = &o->xf[folded].done;
        uint64_t len = coll_shard(o->a->count, n, p, &first);
        (void)coll_recv(o, p, acc + first * es, len * es, COLL_AUX_SWITCH_AG, SINK_COPY, folded);
    }
    return coll_engine_into(o, acc, s);
}

static NRT_STATUS coll_all_reduce_chain(struct coll_job *o)
{
    uint64_t s = o->a->count * o->esize;
    uint32_t me = o->me, n = o->n;
    const uint8_t *x = o->a->src;
    uint8_t *dst = o->a->dst;
    if (me == 0) {
        int o1 = coll_send(o, 1, x, s, COLL_AUX_REDUCE, -1);
        int i1 = coll_recv(o, n - 1, dst, s, COLL_AUX_BCAST, SINK_COPY, -1);
        if (n > 2) {
            int o2 = coll_send(o, 1, dst, s, COLL_AUX_BCAST, o1);
            o->xf[o2].ready = &o->xf[i1].done;
        }
    } else if (me < n - 1) {
        int o1 = coll_send(o, me + 1, NULL, s, COLL_AUX_REDUCE, -1);
        o->xf[o1].fed = true;
        int i1 = coll_recv(o, me - 1, NULL, s, COLL_AUX_REDUCE, SINK_FUSED, -1);
        o->xf[i1].x = x;
        o->xf[i1].fuse = o1;
        int i2 = coll_recv(o, me - 1, dst, s, COLL_AUX_BCAST, SINK_COPY, i1);
        if (me + 1 <= n - 2) {  /* pass the result on as it lands */
            int o2 = coll_send(o, me + 1, NULL, s, COLL_AUX_BCAST, o1);
            o->xf[o2].fed = true;
            o->xf[i2].sink = SINK_PASS;
            o->xf[i2].fuse = o2;
        }
    } else {
        int i1 = coll_recv(o, n - 2, dst, s, COLL_AUX_REDUCE, SINK_FOLD_TO, -1);
        o->xf[i1].x = x;
        int o1 = coll_send(o, 0, dst, s, COLL_AUX_BCAST, -1);
        o->xf[o1].ready = &o->xf[i1].done;
    }
    return coll_engine(o);
}

static NRT_STATUS coll_reduce_scatter(struct coll_job *o)
{
    uint64_t cb = o->a->count / o->n * o->esize;
    const uint8_t *x = o->a->src;
    uint8_t *acc = coll_scratch(o->c, cb);
    if (acc == NULL && cb > 0)
        return NRT_RESOURCE;
    for (uint32_t p = 0; p < o->n; p++)
        if (p != o->me)
            (void)coll_send(o, p, x + p * cb, cb, 0, -1);
    (void)coll_plan_fold(o, x + o->me * cb, acc, cb, 0);
    return coll_engine_into(o, acc, cb);
}

static NRT_STATUS coll_all_gather(struct coll_job *o)
{
    uint64_t blk = o->a->count * o->esize;
    uint32_t n = o->n, me = o->me;
    uint8_t *dst = o->a->dst;
    if (blk > 0 && (const uint8_t *)o->a->src != dst + me * blk)
        memmove(dst + me * blk, o->a->src, blk);
    if (coll_use_mesh(o, blk * n) || n == 2 || o->c->ctl->switched) {
        for (uint32_t p = 0; p < n; p++) {
            if (p == me)
                continue;
            (void)coll_send(o, p, dst + me * blk, blk, me, -1);
            (void)coll_recv(o, p, dst + p * blk, blk, p, SINK_COPY, -1);
        }
        return coll_engine(o);
    }
    /* ring: receive origins me-1, me-2, ... from the left, pass each on */
    int in[COLL_MAX_RANKS], prev_in = -1, prev_out = -1;
    for (uint32_t k = 0; k + 1 < n; k++) {
        uint32_t origin = (me + n - 1 - k) % n;
        in[k] = prev_in = coll_recv(o, (me + n - 1) % n, dst + origin * blk, blk,
                                    COLL_AUX_RING | origin, SINK_COPY, prev_in);
    }
    for (uint32_t k = 0; k + 1 < n; k++) {
        uint32_t origin = (me + n - k) % n;
        prev_out = coll_send(o, (me + 1) % n, dst + origin * blk, blk, COLL_AUX_RING | origin,
                             prev_out);
        if (k > 0)
            o->xf[prev_out].ready = &o->xf[in[k - 1]].done;
    }
    return coll_engine(o);
}

/* Do [a, a+an) and [b, b+bn) overlap? */
static bool coll_overlap(const void *a, uint64_t an, const void *b, uint64_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

static NRT_STATUS coll_all_to_all(struct coll_job *o)
{
    uint64_t total = o->a->count * o->esize, cb = total / o->n;
    const uint8_t *x = o->a->src;
    uint8_t *out = o->a->dst;
    if (coll_overlap(x, total, out, total) && (out = coll_scratch(o->c, total)) == NULL)
        return NRT_RESOURCE;
    if (cb > 0)
        memcpy(out + o->me * cb, x + o->me * cb, cb);
    for (uint32_t p = 0; p < o->n; p++) {
        if (p == o->me)
            continue;
        (void)coll_send(o, p, x + p * cb, cb, 0, -1);
        (void)coll_recv(o, p, out + p * cb, cb, 0, SINK_COPY, -1);
    }
    return coll_engine_into(o, out, total);
}

static NRT_STATUS coll_permute(struct coll_job *o)
{
    uint64_t s = o->a->count * o->esize;
    uint32_t to = o->a->send_to, from = o->a->recv_from;
    if (to == o->me) {  /* coll_run checked that from == me too */
        if (s > 0)
            memmove(o->a->dst, o->a->src, s);
        return NRT_SUCCESS;
    }
    uint8_t *out = o->a->dst;
    if (coll_overlap(o->a->src, s, out, s) && (out = coll_scratch(o->c, s)) == NULL)
        return NRT_RESOURCE;
    (void)coll_send(o, to, o->a->src, s, 0, -1);
    (void)coll_recv(o, from, out, s, 0, SINK_COPY, -1);
    return coll_engine_into(o, out, s);
}

static NRT_STATUS coll_barrier(struct coll_job *o)
{
    for (uint32_t p = 0; p < o->n; p++) {
        if (p == o->me)
            continue;
        (void)coll_send(o, p, NULL, 0, 0, -1);
        (void)coll_recv(o, p, NULL, 0, 0, SINK_COPY, -1);
    }
    return coll_engine(o);
}

/* One rank alone: every operation is a copy. */
static NRT_STATUS coll_alone(const struct coll_args *a, uint32_t esize)
{
    uint64_t s = a->count * esize;
    if (a->kind != CORE_COLL_BARRIER && s > 0 && a->dst != a->src)
        memmove(a->dst, a->src, s);
    return NRT_SUCCESS;
}

static bool coll_reserve(struct coll_comm *c, uint32_t n)
{
    size_t cap = c->nxf_cap;
    if (!GROW_ARRAY(c->xf, cap, 4 * (size_t)n + 8, 4 * (size_t)n + 8) || cap > UINT32_MAX)
        return false;
    c->nxf_cap = (uint32_t)cap;
    return true;
}

NRT_STATUS coll_algo_run(struct coll_comm *c, const struct coll_args *a, const uint32_t *group,
                         uint32_t n, uint32_t me, uint32_t seq)
{
    uint32_t esize = a->kind == CORE_COLL_BARRIER ? 1 : (uint32_t)num_dtype_size(a->dtype);
    if (n == 1)
        return coll_alone(a, esize);
    if (!coll_reserve(c, n))
        return NRT_RESOURCE;
    struct coll_job o = {c, a, group, n, me, seq, esize, 0, c->xf, {0}, 0};
    coll_waiter(c, a->deadline_ns, &o.w);
    o.w.check = coll_op_check;
    o.w.arg = &o;
    if (coll_use_direct(&o)) {
        bool done;
        NRT_STATUS st = coll_direct_run(c, a, c->cur_op, &done);
        if (st != NRT_SUCCESS || done)
            return st;
    }
    switch (a->kind) {
    case CORE_COLL_ALL_REDUCE:
        if (coll_use_mesh(&o, a->count * esize))
            return coll_all_reduce_mesh(&o);
        return c->ctl->switched ? coll_all_reduce_switch(&o) : coll_all_reduce_chain(&o);
    case CORE_COLL_REDUCE_SCATTER: return coll_reduce_scatter(&o);
    case CORE_COLL_ALL_GATHER: return coll_all_gather(&o);
    case CORE_COLL_ALL_TO_ALL: return coll_all_to_all(&o);
    case CORE_COLL_PERMUTE: return coll_permute(&o);
    case CORE_COLL_BARRIER: return coll_barrier(&o);
    }
    return NRT_INVALID;
}
