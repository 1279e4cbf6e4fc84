/*
 * coll_direct.c: the direct collectives: all-reduce, reduce-scatter and
 * all-gather, for large operations over the whole communicator whose
 * buffers are all in device memory.
 *
 * HBM is shared: every process maps every chip's HBM (devices/machine/instance.h),
 * so a rank can read a peer's tensor in place, as the DMA engines of a
 * real instance read across NeuronLink. Each rank posts what it runs and
 * where its input and output are (chip, offset) in its slot of the
 * communicator's file, then works in all-rank stages:
 *   1 posted    every rank sees every post; if one rank's buffers are not
 *               in HBM (or its output overlaps its input other than in the
 *               in-place position), all of them fall back to the channels
 *   2 reduced   rank k has folded part k of every input, in rank order
 *               0..N-1, into its output (all-reduce: part k of it)
 *   3 gathered  every rank has copied every other part from its owner
 *               (all-reduce: the owner's output; all-gather: its input)
 * The all-reduce goes through all three, the reduce-scatter through 1 and
 * 2, the all-gather through 1 and 3. A rank leaves only after its last
 * stage, when nobody reads its buffers any more. The reduction order is
 * the rank order of every other algorithm, and the reduce-scatter's parts
 * are those of the channel algorithm (count / N elements each), so the
 * bits are the same. Bytes read from another chip count on the links of
 * the route.
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

/* The stages (stage words hold operation << 2 | stage). */
enum coll_direct_stage {
    COLL_STAGE_POSTED = 1,
    COLL_STAGE_REDUCED = 2,
    COLL_STAGE_GATHERED = 3,
};

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

/* One direct operation under way. */
struct coll_direct {
    struct coll_comm *c;       /* the communicator */
    const struct coll_args *a; /* what was asked */
    uint64_t op;               /* operation number on the whole communicator */
    uint64_t want;             /* stage word being waited for */
    struct chan_waiter w;      /* how to wait */
    uint32_t checks;           /* wait checks so far */
};

/* Bytes of one rank's input. */
static uint64_t coll_direct_in_bytes(const struct coll_args *a)
{
    return a->count * num_dtype_size(a->dtype);
}

/* Bytes of one rank's output, over n ranks (coll_out_count's rule). */
static uint64_t coll_direct_out_bytes(const struct coll_args *a, uint32_t n)
{
    return coll_out_count(a->kind, a->count, n) * num_dtype_size(a->dtype);
}

/* Has rank r reached the stage word want (or gone past it)? */
static bool coll_direct_reached(const struct coll_comm *c, uint32_t r, uint64_t want)
{
    return atomic_load(&c->posts[r].stage) >= want;
}

/* Between waits: aborts, a gone rank that has not reached the stage, and a
 * rank that talks over the channels instead (another operation). A rank
 * seen behind may catch up, finish the operation and start the next one
 * (sending over the channels) or leave before the channel or its process
 * is looked at: so either finding counts only when the rank's stage, read
 * again after it (its stage is published before anything it sends
 * later), is still behind. */
static NRT_STATUS coll_direct_check(void *arg)
{
    struct coll_direct *d = arg;
    struct coll_comm *c = d->c;
    NRT_STATUS st = coll_abort_check(c);
    if (st != NRT_SUCCESS)
        return st;
    bool full = ++d->checks % 20 == 0;
    for (uint32_t r = 0; r < c->world; r++) {
        if (r == c->rank || coll_direct_reached(c, r, d->want))
            continue;
        if (!coll_rank_alive(c, r, full) && !coll_direct_reached(c, r, d->want))
            return coll_missing(c, r);
        if (chan_fill(&c->rx[r]) > 0 && !coll_direct_reached(c, r, d->want)) {
            LOG_ERROR("NCCL", "rank %u: %s #%" PRIu64 " of %" PRIu64 " bytes over device "
                      "memory, but rank %u sent a message over the channels: the ranks "
                      "disagree on the collective", c->rank, coll_kind_name(d->a->kind), d->op,
                      coll_direct_in_bytes(d->a), r);
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
            LOG_ERROR("NCCL", "rank %u: %s #%" PRIu64 " timed out waiting for rank %u "
                      "(pid %d), which did not take part in time", c->rank,
                      coll_kind_name(d->a->kind), d->op, late, (int)c->pid_of[late]);
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
        if (p->bytes != me->bytes || p->dtype != me->dtype || p->op != me->op ||
            p->kind != me->kind) {
            LOG_ERROR("NCCL", "rank %u: %s #%" PRIu64 " of %" PRIu64 " bytes (dtype %u, op %u), "
                      "but rank %u posted %s of %" PRIu64 " bytes (dtype %u, op %u): the ranks "
                      "disagree on the collective", c->rank, coll_kind_name(me->kind), d->op,
                      me->bytes, me->dtype, me->op, r, coll_kind_name(p->kind), p->bytes,
                      p->dtype, p->op);
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

/* Bytes [lo, hi) of the all-reduce's output that rank k owns (whole elements). */
static void coll_part(uint64_t count, uint32_t esize, uint32_t n, uint32_t k, uint64_t *lo,
                      uint64_t *hi)
{
    *lo = count * k / n * esize;
    *hi = count * (k + 1) / n * esize;
}

/* Bytes [lo, hi) of the reduce-scatter's input that rank k reduces: the
 * channel algorithm's parts, count / n elements each. */
static void coll_rs_part(uint64_t count, uint32_t esize, uint32_t n, uint32_t k, uint64_t *lo,
                         uint64_t *hi)
{
    *lo = count / n * k * esize;
    *hi = *lo + count / n * esize;
}

/* Fold bytes [lo, hi) of every rank's input, block by block, in rank
 * order, into out (where byte lo goes): straight into out in one pass when
 * the type allows, else through a block in cache. src has room for a
 * pointer per rank. */
static void coll_direct_fold(struct coll_direct *d, uint8_t *acc, const void **src, uint64_t lo,
                             uint64_t hi, uint8_t *out)
{
    struct coll_comm *c = d->c;
    uint32_t es = (uint32_t)num_dtype_size(d->a->dtype), n = c->world;
    bool one_pass = coll_fold_list_one_pass(d->a->dtype, d->a->op);
    for (uint64_t off = lo; off < hi; off += COLL_DIRECT_BLOCK) {
        uint64_t k = hi - off < COLL_DIRECT_BLOCK ? hi - off : COLL_DIRECT_BLOCK;
        for (uint32_t r = 0; r < n; r++)
            src[r] = coll_peer_src(c, r) + off;
        coll_fold_list(one_pass ? out + (off - lo) : acc, src, n, (size_t)(k / es),
                       d->a->dtype, d->a->op);
        if (!one_pass)
            memcpy(out + (off - lo), acc, k);
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

/* Copy n bytes that rank r holds at src into this rank's dst, counted on
 * the links. */
static void coll_direct_copy_in(struct coll_comm *c, uint32_t r, uint8_t *dst,
                                const uint8_t *src, uint64_t n)
{
    coll_copy_stream(dst, src, n);
    coll_account_in(c, r, n);
}

/* All-reduce stage 3: every other part, from its owner's output. */
static void coll_direct_gather_parts(struct coll_direct *d)
{
    struct coll_comm *c = d->c;
    uint32_t es = (uint32_t)num_dtype_size(d->a->dtype);
    uint8_t *out = coll_peer_dst(c, c->rank);
    for (uint32_t r = 0; r < c->world; r++) {
        if (r == c->rank)
            continue;
        uint64_t lo, hi;
        coll_part(d->a->count, es, c->world, r, &lo, &hi);
        coll_direct_copy_in(c, r, out + lo, coll_peer_dst(c, r) + lo, hi - lo);
    }
}

/* All-gather stage 3: every rank's input into its block of the output
 * (this rank's own too, unless it is already there). */
static void coll_direct_gather_inputs(struct coll_direct *d)
{
    struct coll_comm *c = d->c;
    uint64_t blk = coll_direct_in_bytes(d->a);
    uint8_t *out = coll_peer_dst(c, c->rank);
    for (uint32_t r = 0; r < c->world; r++) {
        const uint8_t *in = coll_peer_src(c, r);
        if (in != out + r * blk)
            coll_direct_copy_in(c, r, out + r * blk, in, blk);
    }
}

/* Where this rank's input is when the operation runs in place: the
 * all-reduce's output itself, this rank's block of the all-gather's
 * output, or the reduce-scatter's input holds the output at this rank's
 * part. */
static uintptr_t coll_in_place_src(const struct coll_comm *c, const struct coll_args *a)
{
    uintptr_t dst = (uintptr_t)a->dst;
    switch (a->kind) {
    case CORE_COLL_ALL_GATHER: return dst + c->rank * coll_direct_in_bytes(a);
    case CORE_COLL_REDUCE_SCATTER: return dst - c->rank * coll_direct_out_bytes(a, c->world);
    default: return dst;
    }
}

/* Can peers read this rank's input while it writes its output? Yes when
 * they do not overlap, or when the input sits in the in-place position
 * (then this rank writes only what nobody else reads). */
static bool coll_alias_ok(const struct coll_comm *c, const struct coll_args *a)
{
    uintptr_t s = (uintptr_t)a->src, d = (uintptr_t)a->dst;
    uint64_t sn = coll_direct_in_bytes(a), dn = coll_direct_out_bytes(a, c->world);
    return s >= d + dn || d >= s + sn || s == coll_in_place_src(c, a);
}

/* Fill this rank's post for operation op (not yet published). */
static void coll_direct_post(struct coll_comm *c, const struct coll_args *a, uint64_t op)
{
    struct coll_post *me = &c->posts[c->rank];
    uint64_t in = coll_direct_in_bytes(a), out = coll_direct_out_bytes(a, c->world);
    if (!coll_where(c->m, a->src, in, &me->src_chip, &me->src_off))
        me->src_chip = COLL_NO_CHIP;
    if (!coll_where(c->m, a->dst, out, &me->dst_chip, &me->dst_off) || !coll_alias_ok(c, a))
        me->dst_chip = COLL_NO_CHIP;
    me->bytes = in;
    me->dtype = (uint8_t)a->dtype;
    me->op = a->kind == CORE_COLL_ALL_GATHER ? 0 : (uint8_t)a->op;
    me->kind = (uint8_t)a->kind;
    atomic_store(&me->seq, op);
    c->posted_op = op;
}

/* Post, wait for every rank's post and check them: *ok when the operation
 * goes on directly. */
static NRT_STATUS coll_direct_start(struct coll_direct *d, bool *ok)
{
    *ok = false;
    coll_direct_post(d->c, d->a, d->op);
    coll_waiter(d->c, d->a->deadline_ns, &d->w);
    d->w.check = coll_direct_check;
    d->w.arg = d;
    NRT_STATUS st = coll_direct_stage(d, COLL_STAGE_POSTED);
    return st == NRT_SUCCESS ? coll_direct_agree(d, ok) : st;
}

/* Scratch for a fold: a block and a pointer per rank (NULL: out of memory). */
static uint8_t *coll_direct_fold_scratch(struct coll_comm *c, const void ***src)
{
    uint8_t *acc = coll_scratch(c, COLL_DIRECT_BLOCK + (uint64_t)c->world * sizeof(void *));
    if (acc != NULL)
        *src = (const void **)(void *)(acc + COLL_DIRECT_BLOCK);
    return acc;
}

/* The all-reduce after the posts: reduce part `rank`, then gather the rest. */
static NRT_STATUS coll_direct_all_reduce(struct coll_direct *d, uint8_t *acc, const void **src)
{
    struct coll_comm *c = d->c;
    uint64_t lo, hi;
    coll_part(d->a->count, (uint32_t)num_dtype_size(d->a->dtype), c->world, c->rank, &lo, &hi);
    coll_direct_fold(d, acc, src, lo, hi, coll_peer_dst(c, c->rank) + lo);
    NRT_STATUS st = coll_direct_stage(d, COLL_STAGE_REDUCED);
    if (st != NRT_SUCCESS)
        return st;
    coll_direct_gather_parts(d);
    coll_stream_fence();  /* the streamed copies land before the stage word */
    return coll_direct_stage(d, COLL_STAGE_GATHERED);
}

/* The reduce-scatter after the posts: reduce part `rank` into the output. */
static NRT_STATUS coll_direct_reduce_scatter(struct coll_direct *d, uint8_t *acc,
                                             const void **src)
{
    struct coll_comm *c = d->c;
    uint64_t lo, hi;
    coll_rs_part(d->a->count, (uint32_t)num_dtype_size(d->a->dtype), c->world, c->rank, &lo,
                 &hi);
    coll_direct_fold(d, acc, src, lo, hi, coll_peer_dst(c, c->rank));
    return coll_direct_stage(d, COLL_STAGE_REDUCED);
}

/* The all-gather after the posts: every input into its block. */
static NRT_STATUS coll_direct_all_gather(struct coll_direct *d)
{
    coll_direct_gather_inputs(d);
    coll_stream_fence();
    return coll_direct_stage(d, COLL_STAGE_GATHERED);
}

NRT_STATUS coll_direct_run(struct coll_comm *c, const struct coll_args *a, uint64_t op,
                           bool *done)
{
    *done = false;
    const void **src = NULL;
    uint8_t *acc = NULL;
    if (a->kind != CORE_COLL_ALL_GATHER && (acc = coll_direct_fold_scratch(c, &src)) == NULL)
        return NRT_RESOURCE;
    struct coll_direct d = {c, a, op, 0, {0}, 0};
    bool ok;
    NRT_STATUS st = coll_direct_start(&d, &ok);
    if (st != NRT_SUCCESS || !ok)
        return st;  /* not all in HBM: every rank falls back to the channels */
    switch (a->kind) {
    case CORE_COLL_ALL_REDUCE: st = coll_direct_all_reduce(&d, acc, src); break;
    case CORE_COLL_REDUCE_SCATTER: st = coll_direct_reduce_scatter(&d, acc, src); break;
    default: st = coll_direct_all_gather(&d); break;
    }
    *done = st == NRT_SUCCESS;
    if (*done)
        LOG_DEBUG("NCCL", "rank %u: %s #%" PRIu64 " of %" PRIu64 " bytes done directly in "
                  "device memory", c->rank, coll_kind_name(a->kind), op,
                  coll_direct_in_bytes(a));
    return st;
}
