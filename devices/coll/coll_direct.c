/*
 * coll_direct.c: the direct all-reduce, for large operations over the
 * whole communicator whose buffers every rank's are in device memory.
 *
 * HBM is shared: every process maps every chip's HBM (devices/machine/instance.h),
 * so a rank can read a peer's tensor in place, as the DMA engines of a
 * real instance read across NeuronLink. Each rank posts where its input
 * and output are (chip, offset) in its slot of the communicator's file,
 * then, separated by three all-rank stages:
 *   1 posted    every rank sees every post; if one rank's buffers are not
 *               in HBM, all of them fall back to the channels (chain)
 *   2 reduced   rank k has folded part k of every input, in rank order
 *               0..N-1, into part k of its output
 *   3 gathered  every rank has copied every other part from its owner
 * A rank leaves only after stage 3, when nobody reads its buffers any
 * more. About 3S bytes move per rank, where the chain moves 6S. The
 * reduction order is the rank order of every other algorithm, so the bits
 * are the same. Bytes read from another chip count on the links of the
 * route.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "devices/coll/coll_int.h"
#include "emu/log.h"
#include "emu/num/numerics.h"

#define COLL_DIRECT_BLOCK (32u << 10)  /* bytes folded at a time (stays in cache) */
#define COLL_NO_CHIP UINT32_MAX
#define COLL_STREAM_MIN 256u  /* smallest copy made with streaming stores */

/* The stage word: operation number and stage. */
static uint64_t coll_stage(uint64_t op, uint32_t stage)
{
    return op << 2 | stage;
}

/* Chip and offset of [p, p+len) in shared HBM; false when it is not there. */
static bool coll_where(const struct machine *m, const void *p, uint64_t len, uint32_t *chip,
                       uint64_t *off)
{
    uintptr_t a = (uintptr_t)p;
    for (uint32_t i = 0; i < m->cfg.profile->chips; i++) {
        uintptr_t lo = (uintptr_t)m->chips[i].hbm;
        if (m->chips[i].hbm != NULL && a >= lo && a - lo <= m->chips[i].hbm_size &&
            len <= m->chips[i].hbm_size - (a - lo)) {
            *chip = i;
            *off = a - lo;
            return true;
        }
    }
    return false;
}

/* One direct all-reduce under way. */
struct coll_direct {
    struct coll_comm *c;       /* the communicator */
    const struct coll_args *a; /* what was asked */
    uint64_t op;               /* operation number on the whole communicator */
    uint64_t want;             /* stage word being waited for */
    struct chan_waiter w;      /* how to wait */
    uint32_t checks;           /* wait checks so far */
};

/* Between waits: aborts, a gone rank that has not reached the stage, and a
 * rank that talks over the channels instead (another operation). */
static NRT_STATUS coll_direct_check(void *arg)
{
    struct coll_direct *d = arg;
    struct coll_comm *c = d->c;
    NRT_STATUS st = coll_abort_check(c);
    if (st != NRT_SUCCESS)
        return st;
    bool full = ++d->checks % 20 == 0;
    for (uint32_t r = 0; r < c->world; r++) {
        if (r == c->rank || atomic_load(&c->posts[r].stage) >= d->want)
            continue;
        if (!coll_rank_alive(c, r, full))
            return coll_missing(c, r);
        if (chan_fill(&c->rx[r]) > 0) {
            LOG_ERROR("NCCL", "rank %u: all_reduce #%" PRIu64 " of %" PRIu64 " bytes over "
                      "device memory, but rank %u sent a message over the channels: the ranks "
                      "disagree on the collective", c->rank, d->op, d->a->count *
                      num_dtype_size(d->a->dtype), r);
            return coll_fail(c, NRT_INVALID, r);
        }
    }
    return NRT_SUCCESS;
}

/* Publish this rank's stage and wait for every rank to reach it. */
static NRT_STATUS coll_direct_stage(struct coll_direct *d, uint32_t stage)
{
    struct coll_comm *c = d->c;
    d->want = coll_stage(d->op, stage);
    atomic_store(&c->posts[c->rank].stage, d->want);
    for (uint32_t r = 0; r < c->world; r++)
        if (r != c->rank)
            chan_bell_ring(&c->bells[r]);
    for (;;) {
        uint32_t seen = chan_bell_seen(d->w.bell), late = UINT32_MAX;
        for (uint32_t r = 0; r < c->world && late == UINT32_MAX; r++)
            if (atomic_load(&c->posts[r].stage) < d->want)
                late = r;
        if (late == UINT32_MAX)
            return NRT_SUCCESS;
        NRT_STATUS st = chan_wait(&d->w, seen);
        if (st == NRT_TIMEOUT) {
            LOG_ERROR("NCCL", "rank %u: all_reduce #%" PRIu64 " timed out waiting for rank %u "
                      "(pid %d), which did not take part in time", c->rank, d->op, late,
                      (int)c->pid_of[late]);
            return coll_fail(c, NRT_TIMEOUT, late);
        }
        if (st != NRT_SUCCESS)
            return st;
    }
}

/* Do the posts agree? Then *ok: every rank's buffers are in shared HBM. */
static NRT_STATUS coll_direct_agree(struct coll_direct *d, bool *ok)
{
    struct coll_comm *c = d->c;
    const struct coll_post *me = &c->posts[c->rank];
    *ok = true;
    for (uint32_t r = 0; r < c->world; r++) {
        const struct coll_post *p = &c->posts[r];
        if (p->bytes != me->bytes || p->dtype != me->dtype || p->op != me->op) {
            LOG_ERROR("NCCL", "rank %u: all_reduce #%" PRIu64 " of %" PRIu64 " bytes (dtype %u, "
                      "op %u), but rank %u posted %" PRIu64 " bytes (dtype %u, op %u): the "
                      "ranks disagree on the collective", c->rank, d->op, me->bytes, me->dtype,
                      me->op, r, p->bytes, p->dtype, p->op);
            return coll_fail(c, NRT_INVALID, r);
        }
        *ok = *ok && p->src_chip != COLL_NO_CHIP && p->dst_chip != COLL_NO_CHIP;
    }
    return NRT_SUCCESS;
}

static uint8_t *coll_peer_src(const struct coll_comm *c, uint32_t r)
{
    return c->m->chips[c->posts[r].src_chip].hbm + c->posts[r].src_off;
}

static uint8_t *coll_peer_dst(const struct coll_comm *c, uint32_t r)
{
    return c->m->chips[c->posts[r].dst_chip].hbm + c->posts[r].dst_off;
}

/* Bytes [lo, hi) of the output that rank k owns (whole elements). */
static void coll_part(uint64_t count, uint32_t esize, uint32_t n, uint32_t k, uint64_t *lo,
                      uint64_t *hi)
{
    *lo = count * k / n * esize;
    *hi = count * (k + 1) / n * esize;
}

/* Stage 2: fold part `rank` of every input, block by block, in rank order:
 * straight into the output in one pass when the type allows, else through
 * a block in cache. src has room for a pointer per rank. */
static void coll_direct_reduce(struct coll_direct *d, uint8_t *acc, const void **src)
{
    struct coll_comm *c = d->c;
    uint32_t es = (uint32_t)num_dtype_size(d->a->dtype), n = c->world;
    uint64_t lo, hi;
    coll_part(d->a->count, es, n, c->rank, &lo, &hi);
    uint8_t *out = coll_peer_dst(c, c->rank);
    bool one_pass = coll_fold_list_one_pass(d->a->dtype, d->a->op);
    for (uint64_t off = lo; off < hi; off += COLL_DIRECT_BLOCK) {
        uint64_t k = hi - off < COLL_DIRECT_BLOCK ? hi - off : COLL_DIRECT_BLOCK;
        for (uint32_t r = 0; r < n; r++)
            src[r] = coll_peer_src(c, r) + off;
        coll_fold_list(one_pass ? out + off : acc, src, n, (size_t)(k / es), d->a->dtype,
                       d->a->op);
        if (!one_pass)
            memcpy(out + off, acc, k);
    }
    for (uint32_t r = 0; r < n; r++)
        if (r != c->rank)
            coll_account_in(c, r, hi - lo);
}

#if defined(__x86_64__)
/* memcpy for large copies whose destination is not read again soon:
 * streaming (non-temporal) stores, so the destination lines are not first
 * read into the cache (a third of the memory traffic of a plain copy that
 * misses the cache). Call coll_stream_fence before publishing the bytes. */
static void coll_copy_stream(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    uint64_t head = (16 - (uintptr_t)dst % 16) % 16;
    if (n < COLL_STREAM_MIN || head > n) {
        memcpy(dst, src, n);
        return;
    }
    memcpy(dst, src, head);
    uint64_t i = head;
    for (; i + 64 <= n; i += 64) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32));
        __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48));
        _mm_stream_si128((__m128i *)(void *)(dst + i), v0);
        _mm_stream_si128((__m128i *)(void *)(dst + i + 16), v1);
        _mm_stream_si128((__m128i *)(void *)(dst + i + 32), v2);
        _mm_stream_si128((__m128i *)(void *)(dst + i + 48), v3);
    }
    memcpy(dst + i, src + i, n - i);
}

/* Order the streaming stores before what follows (they are weakly ordered). */
static void coll_stream_fence(void)
{
    _mm_sfence();
}
#else
static void coll_copy_stream(uint8_t *dst, const uint8_t *src, uint64_t n)
{
    memcpy(dst, src, n);
}

static void coll_stream_fence(void)
{
}
#endif

/* Stage 3: every other part, from its owner's output. */
static void coll_direct_gather(struct coll_direct *d)
{
    struct coll_comm *c = d->c;
    uint32_t es = (uint32_t)num_dtype_size(d->a->dtype);
    uint8_t *out = coll_peer_dst(c, c->rank);
    for (uint32_t r = 0; r < c->world; r++) {
        if (r == c->rank)
            continue;
        uint64_t lo, hi;
        coll_part(d->a->count, es, c->world, r, &lo, &hi);
        coll_copy_stream(out + lo, coll_peer_dst(c, r) + lo, hi - lo);
        coll_account_in(c, r, hi - lo);
    }
}

NRT_STATUS coll_direct_all_reduce(struct coll_comm *c, const struct coll_args *a, uint64_t op,
                                  bool *done)
{
    uint64_t bytes = a->count * num_dtype_size(a->dtype);
    struct coll_post *me = &c->posts[c->rank];
    *done = false;
    uint8_t *acc = coll_scratch(c, COLL_DIRECT_BLOCK + (uint64_t)c->world * sizeof(void *));
    if (acc == NULL)
        return NRT_RESOURCE;
    const void **src = (const void **)(void *)(acc + COLL_DIRECT_BLOCK);
    if (!coll_where(c->m, a->src, bytes, &me->src_chip, &me->src_off))
        me->src_chip = COLL_NO_CHIP;
    if (!coll_where(c->m, a->dst, bytes, &me->dst_chip, &me->dst_off))
        me->dst_chip = COLL_NO_CHIP;
    me->bytes = bytes;
    me->dtype = (uint8_t)a->dtype;
    me->op = (uint8_t)a->op;
    atomic_store(&me->seq, op);
    c->posted_op = op;
    struct coll_direct d = {c, a, op, 0, {0}, 0};
    coll_waiter(c, a->deadline_ns, &d.w);
    d.w.check = coll_direct_check;
    d.w.arg = &d;
    bool ok;
    NRT_STATUS st = coll_direct_stage(&d, 1);
    if (st == NRT_SUCCESS)
        st = coll_direct_agree(&d, &ok);
    if (st != NRT_SUCCESS || !ok)
        return st;  /* not all in HBM: every rank falls back to the chain */
    coll_direct_reduce(&d, acc, src);
    st = coll_direct_stage(&d, 2);
    if (st != NRT_SUCCESS)
        return st;
    coll_direct_gather(&d);
    coll_stream_fence();  /* the streamed copies land before the stage word */
    st = coll_direct_stage(&d, 3);
    *done = st == NRT_SUCCESS;
    return st;
}
