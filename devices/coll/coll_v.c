/*
 * coll_v.c: the variable-count collectives, all_to_all_v and all_gather_v
 * (see coll.h, docs/collectives.md), over a communicator's ordinary
 * operations (coll_run), for the in-NEFF instructions and for the host
 * (trnemu_all_to_all_v, trnemu_all_gather_v).
 *
 * Each is two operations on the communicator, run by every rank in the
 * same order:
 *  1. an all-gather of one fixed-size record per rank: what it runs (kind,
 *     dtype, group size), whether its own counts and offsets are in bounds,
 *     how much it sends to every rank, and how much it accepts from every
 *     rank (an exact count when the caller gave receive counts, otherwise
 *     anything up to the room its output has for that rank). Every rank then
 *     holds the same table and reaches the same verdict: when some pair
 *     disagrees, each rank logs one line and fails with NRT_INVALID before
 *     any data moves, and the communicator stays usable.
 *  2. the data: every chunk padded to the largest chunk any rank sends (M
 *     elements), moved by one all-to-all (n x M per rank) or all-gather (M
 *     per rank) of bytes, then each received chunk copied to its place. The
 *     padding costs link traffic and host memory; the result is exact, and
 *     the step is skipped when every count is zero. When every chunk has
 *     the same size and sits in equal slots on both sides, the operation
 *     runs on the caller's buffers instead, with no staging.
 * The input is packed before any output is written, so input and output
 * may overlap. The staging memory of a communicator is kept from one
 * operation to the next (a fresh allocation of megabytes would cost a page
 * fault per 4 KiB every time) and freed at nrt_close (coll_v_release_all).
 */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "devices/coll/coll.h"
#include "emu/log.h"
#include "emu/num/numerics.h"

#define COLLV_TAG 0x564c4f43u  /* "COLV": a v-collective's record */
#define COLLV_HEAD 4u          /* words before the arrays: tag, kind/dtype, ok, ranks */

#define COLLV_STAGES 16u       /* communicators whose staging memory is kept */

/* Staging memory kept for one communicator. */
struct collv_stage {
    const struct coll_comm *c; /* its communicator, NULL: free entry */
    uint8_t *buf;              /* the memory */
    uint64_t cap;              /* its bytes */
    bool busy;                 /* lent to an operation under way */
};

static pthread_mutex_t collv_lock = PTHREAD_MUTEX_INITIALIZER; /* guards collv_stages */
static _Thread_local bool collv_lock_owner; /* this thread holds collv_lock */
static struct collv_stage collv_stages[COLLV_STAGES];

/* What one rank runs, as the verdict needs it. */
struct collv_plan {
    const struct coll_vargs *a;  /* the caller's description */
    uint32_t n;                  /* ranks */
    uint32_t me;                 /* this rank */
    uint32_t esize;              /* bytes per element */
    uint64_t words;              /* uint64 words of one rank's record */
    uint64_t *table;             /* n records: every rank's */
    uint64_t max_chunk;          /* largest chunk any rank sends (elements) */
    bool cross;                  /* some rank sends another rank something */
};

static const char *collv_name(enum core_coll_vkind kind)
{
    return kind == CORE_COLL_V_ALL_TO_ALL ? "all_to_all_v" : "all_gather_v";
}

/* Elements this rank sends to rank r, and where they start in src. */
static uint64_t collv_send_count(const struct collv_plan *p, uint32_t r)
{
    return p->a->op.kind == CORE_COLL_V_ALL_TO_ALL ? p->a->op.send_counts[r] : p->a->op.send_counts[0];
}

static uint64_t collv_send_displ(const struct collv_plan *p, uint32_t r)
{
    if (p->a->op.kind == CORE_COLL_V_ALL_GATHER)
        return p->a->op.send_displs != NULL ? p->a->op.send_displs[0] : 0;
    return p->a->op.send_displs != NULL ? p->a->op.send_displs[r] : r * (p->a->op.src_count / p->n);
}

/* Where the chunk from rank s lands in dst, and the room it has there. */
static uint64_t collv_recv_displ(const struct collv_plan *p, uint32_t s)
{
    return p->a->op.recv_displs != NULL ? p->a->op.recv_displs[s] : s * (p->a->op.dst_count / p->n);
}

static uint64_t collv_recv_room(const struct collv_plan *p, uint32_t s)
{
    if (p->a->op.recv_displs == NULL)
        return p->a->op.dst_count / p->n;
    uint64_t d = p->a->op.recv_displs[s];
    return d <= p->a->op.dst_count ? p->a->op.dst_count - d : 0;
}

/* Does [off, off + k) fit in cap elements? */
static bool collv_fits(uint64_t off, uint64_t k, uint64_t cap)
{
    return off <= cap && k <= cap - off;
}

/* This rank's own counts and offsets within its buffers (one log line when not). */
static bool collv_local_ok(const struct collv_plan *p)
{
    const struct coll_vargs *a = p->a;
    const char *nm = collv_name(a->op.kind);
    if (p->esize == 0) {
        LOG_ERROR("NCCL", "rank %u: %s of dtype %u: not a known element type", p->me, nm,
                  a->op.dtype);
        return false;
    }
    uint32_t nsend = a->op.kind == CORE_COLL_V_ALL_TO_ALL ? p->n : 1;
    for (uint32_t r = 0; r < nsend; r++) {
        uint64_t k = collv_send_count(p, r), d = collv_send_displ(p, r);
        if ((k > 0 && a->op.src == NULL) || !collv_fits(d, k, a->op.src_count)) {
            LOG_ERROR("NCCL", "rank %u: %s sends %" PRIu64 " elements from offset %" PRIu64
                      " (for rank %u) of an input of %" PRIu64, p->me, nm, k, d, r,
                      a->op.src_count);
            return false;
        }
    }
    for (uint32_t s = 0; s < p->n; s++) {
        uint64_t d = collv_recv_displ(p, s), k = a->recv_expect != NULL ? a->recv_expect[s] : 0;
        if ((a->op.dst == NULL && a->op.dst_count > 0) || !collv_fits(d, k, a->op.dst_count) ||
            (a->op.recv_displs == NULL && k > collv_recv_room(p, s))) {
            LOG_ERROR("NCCL", "rank %u: %s receives %" PRIu64 " elements from rank %u at "
                      "offset %" PRIu64 " of an output of %" PRIu64 "%s", p->me, nm, k, s, d,
                      a->op.dst_count, a->op.recv_displs == NULL ? " (one equal slot per rank)" : "");
            return false;
        }
    }
    return true;
}

/* This rank's record: header, then sent[n], least[n], most[n]. */
static void collv_record(const struct collv_plan *p, uint64_t *rec)
{
    const struct coll_vargs *a = p->a;
    uint32_t n = p->n;
    rec[0] = COLLV_TAG;
    rec[1] = (uint64_t)a->op.kind << 8 | (a->op.dtype & 0xffu);
    rec[2] = collv_local_ok(p);
    rec[3] = n;
    for (uint32_t r = 0; r < n; r++) {
        bool exact = a->recv_expect != NULL;
        rec[COLLV_HEAD + r] = rec[2] ? collv_send_count(p, r) : 0;
        rec[COLLV_HEAD + n + r] = exact ? a->recv_expect[r] : 0;
        rec[COLLV_HEAD + 2 * n + r] = exact ? a->recv_expect[r] : collv_recv_room(p, r);
    }
}

/* Every rank's record the same as this one's in what it runs? */
static bool collv_same_op(const struct collv_plan *p)
{
    const uint64_t *mine = p->table + p->me * p->words;
    for (uint32_t q = 0; q < p->n; q++) {
        const uint64_t *rec = p->table + q * p->words;
        if (rec[0] != COLLV_TAG || rec[1] != mine[1] || rec[3] != p->n) {
            LOG_ERROR("NCCL", "rank %u runs %s of dtype %u over %u ranks, rank %u another "
                      "operation", p->me, collv_name(p->a->op.kind), p->a->op.dtype, p->n, q);
            return false;
        }
    }
    return true;
}

/* The same verdict on every rank: NRT_SUCCESS when every pair agrees
 * (max_chunk and cross then set), else one log line and NRT_INVALID. */
static NRT_STATUS collv_verdict(struct collv_plan *p)
{
    if (!collv_same_op(p))
        return NRT_INVALID;
    bool self_ok = p->table[p->me * p->words + 2] != 0;
    for (uint32_t q = 0; q < p->n; q++)
        if (p->table[q * p->words + 2] == 0) {
            if (self_ok)
                LOG_ERROR("NCCL", "rank %u: %s: rank %u's counts or offsets are out of "
                          "bounds (see its log)", p->me, collv_name(p->a->op.kind), q);
            return NRT_INVALID;
        }
    uint32_t n = p->n;
    p->max_chunk = 0;
    for (uint32_t s = 0; s < n; s++)
        for (uint32_t r = 0; r < n; r++) {
            uint64_t k = p->table[s * p->words + COLLV_HEAD + r];
            const uint64_t *rec = p->table + r * p->words + COLLV_HEAD;
            if (k < rec[n + s] || k > rec[2 * n + s]) {
                LOG_ERROR("NCCL", "rank %u: %s: rank %u sends %" PRIu64 " elements to rank "
                          "%u, which %s %" PRIu64, p->me, collv_name(p->a->op.kind), s, k, r,
                          rec[n + s] == rec[2 * n + s] ? "expects" : "has room for",
                          rec[2 * n + s]);
                return NRT_INVALID;
            }
            p->max_chunk = k > p->max_chunk ? k : p->max_chunk;
            p->cross |= s != r && k > 0;
        }
    return NRT_SUCCESS;
}

/* Step 1: every rank's record into p->table, and the verdict. */
static NRT_STATUS collv_agree(struct coll_comm *c, struct collv_plan *p)
{
    uint64_t rec_bytes = p->words * 8;
    uint64_t *rec = malloc(rec_bytes);
    p->table = malloc(rec_bytes * p->n);
    if (rec == NULL || p->table == NULL) {
        free(rec);
        LOG_ERROR("NCCL", "rank %u: no host memory for %s's counts", p->me,
                  collv_name(p->a->op.kind));
        return NRT_RESOURCE;
    }
    collv_record(p, rec);
    struct coll_args g = {.kind = CORE_COLL_ALL_GATHER, .dtype = NUM_DT_UINT8, .src = rec,
                          .count = rec_bytes, .dst = p->table, .deadline_ns = p->a->deadline_ns};
    NRT_STATUS st = coll_run(c, &g);
    free(rec);
    return st != NRT_SUCCESS ? st : collv_verdict(p);
}

/* Chunk sent by rank s to rank r, from the table. */
static uint64_t collv_chunk(const struct collv_plan *p, uint32_t s, uint32_t r)
{
    return p->table[s * p->words + COLLV_HEAD + r];
}

/* collv_lock, with its owner noted for collv_lock_held. */
static void collv_lock_take(void)
{
    pthread_mutex_lock(&collv_lock);
    collv_lock_owner = true;
}

static void collv_lock_drop(void)
{
    assert(collv_lock_owner);
    collv_lock_owner = false;
    pthread_mutex_unlock(&collv_lock);
}

/* Does this thread hold collv_lock? For assert() only. */
static inline bool collv_lock_held(void)
{
    return collv_lock_owner;
}

/* The entry kept for c (taken, busy) or a free one (claimed); NULL when
 * all are taken or c's is lent already. Caller holds collv_lock. */
static struct collv_stage *collv_stage_find(const struct coll_comm *c)
{
    assert(collv_lock_held());
    struct collv_stage *spare = NULL;
    for (uint32_t i = 0; i < COLLV_STAGES; i++) {
        if (collv_stages[i].c == c)
            return collv_stages[i].busy ? NULL : &collv_stages[i];
        if (collv_stages[i].c == NULL && spare == NULL)
            spare = &collv_stages[i];
    }
    if (spare != NULL)
        spare->c = c;
    return spare;
}

/* Staging memory of at least bytes for an operation on c (*kept: it is the
 * communicator's kept memory, give it back with collv_stage_put), or NULL. */
static uint8_t *collv_stage_get(const struct coll_comm *c, uint64_t bytes, bool *kept)
{
    collv_lock_take();
    struct collv_stage *e = collv_stage_find(c);
    if (e != NULL && e->cap < bytes) {
        uint8_t *p = realloc(e->buf, bytes);
        if (p != NULL) {
            e->buf = p;
            e->cap = bytes;
        }
    }
    uint8_t *buf = e != NULL && e->cap >= bytes ? e->buf : NULL;
    if (buf != NULL)
        e->busy = true;
    collv_lock_drop();
    *kept = buf != NULL;
    return buf != NULL ? buf : malloc(bytes);
}

static void collv_stage_put(const struct coll_comm *c, uint8_t *buf, bool kept)
{
    if (!kept) {
        free(buf);
        return;
    }
    collv_lock_take();
    for (uint32_t i = 0; i < COLLV_STAGES; i++)
        if (collv_stages[i].c == c)
            collv_stages[i].busy = false;
    collv_lock_drop();
}

void coll_v_release_all(void)
{
    collv_lock_take();
    for (uint32_t i = 0; i < COLLV_STAGES; i++) {
        free(collv_stages[i].buf);
        collv_stages[i] = (struct collv_stage){NULL, NULL, 0, false};
    }
    collv_lock_drop();
}

/* Step 2: pack this rank's chunks into slots of max_chunk elements (one per
 * destination for all_to_all_v, one for all_gather_v), move them, unpack. */
static NRT_STATUS collv_move(struct coll_comm *c, const struct collv_plan *p)
{
    const struct coll_vargs *a = p->a;
    bool a2a = a->op.kind == CORE_COLL_V_ALL_TO_ALL;
    uint64_t slot = p->max_chunk * p->esize, nout = a2a ? p->n : 1;
    bool kept;
    uint8_t *send = collv_stage_get(c, slot * (nout + p->n), &kept);
    if (send == NULL) {
        LOG_ERROR("NCCL", "rank %u: no host memory to stage %" PRIu64 " bytes of %s", p->me,
                  slot * (nout + p->n), collv_name(a->op.kind));
        return NRT_RESOURCE;
    }
    uint8_t *recv = send + slot * nout;
    for (uint32_t r = 0; r < nout; r++) {  /* the padding after each chunk is never read */
        uint64_t k = collv_send_count(p, r) * p->esize;
        if (k > 0)
            memcpy(send + r * slot, (const uint8_t *)a->op.src + collv_send_displ(p, r) * p->esize, k);
    }
    struct coll_args m = {.kind = a2a ? CORE_COLL_ALL_TO_ALL : CORE_COLL_ALL_GATHER,
                          .dtype = NUM_DT_UINT8, .src = send, .count = slot * nout, .dst = recv,
                          .deadline_ns = a->deadline_ns};
    NRT_STATUS st = coll_run(c, &m);
    for (uint32_t s = 0; st == NRT_SUCCESS && s < p->n; s++) {
        uint64_t k = collv_chunk(p, s, p->me) * p->esize;
        if (k > 0)
            memcpy((uint8_t *)a->op.dst + collv_recv_displ(p, s) * p->esize, recv + s * slot, k);
    }
    collv_stage_put(c, send, kept);
    return st;
}

/* Does [a, a + an) meet [b, b + bn)? */
static bool collv_meet(const uint8_t *a, uint64_t an, const uint8_t *b, uint64_t bn)
{
    return an > 0 && bn > 0 && a < b + bn && b < a + an;
}

/* Every chunk max_chunk long, at r * max_chunk on both sides (this rank's
 * sends and receives: the verdict made every sender's count max_chunk)?
 * Then the data need no staging: the ordinary operation runs on the
 * caller's buffers. Every rank decides the same, since every count is known
 * to all. */
static bool collv_uniform(const struct collv_plan *p)
{
    uint64_t m = p->max_chunk;
    for (uint32_t s = 0; s < p->n; s++)
        for (uint32_t r = 0; r < p->n; r++)
            if (collv_chunk(p, s, r) != m)
                return false;
    bool a2a = p->a->op.kind == CORE_COLL_V_ALL_TO_ALL;
    for (uint32_t r = 0; r < p->n; r++)
        if ((a2a && collv_send_displ(p, r) != r * m) || collv_recv_displ(p, r) != r * m)
            return false;
    return true;
}

/* The uniform case: one all-to-all (src to dst as they are) or all-gather
 * (this rank's chunk into dst), unless the all-gather's input overlaps the
 * output other than at its own slot. NRT_SUCCESS with *done false: stage. */
static NRT_STATUS collv_direct(struct coll_comm *c, const struct collv_plan *p, bool *done)
{
    const struct coll_vargs *a = p->a;
    uint64_t m = p->max_chunk * p->esize;
    const uint8_t *src = (const uint8_t *)a->op.src + collv_send_displ(p, 0) * p->esize;
    uint8_t *dst = a->op.dst;
    bool a2a = a->op.kind == CORE_COLL_V_ALL_TO_ALL;
    *done = collv_uniform(p) &&
            (a2a || src == dst + p->me * m || !collv_meet(src, m, dst, m * p->n));
    if (!*done)
        return NRT_SUCCESS;
    struct coll_args g = {.kind = a2a ? CORE_COLL_ALL_TO_ALL : CORE_COLL_ALL_GATHER,
                          .dtype = NUM_DT_UINT8, .src = src, .count = a2a ? m * p->n : m,
                          .dst = dst, .deadline_ns = a->deadline_ns};
    return coll_run(c, &g);
}

/* The own chunk when no other rank sends anything (no data step). */
static void collv_self(const struct collv_plan *p)
{
    uint64_t k = collv_chunk(p, p->me, p->me) * p->esize;
    if (k > 0)
        memmove((uint8_t *)p->a->op.dst + collv_recv_displ(p, p->me) * p->esize,
                (const uint8_t *)p->a->op.src + collv_send_displ(p, p->me) * p->esize, k);
}

NRT_STATUS coll_v_run(struct coll_comm *c, const struct coll_vargs *a)
{
    struct collv_plan p = {a, coll_comm_world(c), coll_comm_rank(c),
                           (uint32_t)num_dtype_size(a->op.dtype), 0, NULL, 0, false};
    if (a->op.kind != CORE_COLL_V_ALL_TO_ALL && a->op.kind != CORE_COLL_V_ALL_GATHER) {
        LOG_ERROR("NCCL", "unknown variable-count collective %d", (int)a->op.kind);
        return NRT_INVALID;
    }
    p.words = COLLV_HEAD + 3ull * p.n;
    NRT_STATUS st = collv_agree(c, &p);
    bool done = false;
    if (st == NRT_SUCCESS && p.cross)
        st = collv_direct(c, &p, &done);
    if (st == NRT_SUCCESS && p.cross && !done)
        st = collv_move(c, &p);
    else if (st == NRT_SUCCESS && !p.cross)
        collv_self(&p);
    for (uint32_t s = 0; st == NRT_SUCCESS && a->op.recv_counts != NULL && s < p.n; s++)
        a->op.recv_counts[s] = collv_chunk(&p, s, p.me);
    free(p.table);
    return st;
}
