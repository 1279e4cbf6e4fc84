/*
 * channel.c: shared-memory SPSC rings and doorbells (see channel.h).
 */
#include "devices/link/channel.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "devices/thread/spin.h"

_Static_assert(sizeof(struct chan_msg) == CHAN_ALIGN, "a message header is 64 bytes");
_Static_assert(sizeof(struct chan_ring) == CHAN_HDR_BYTES, "ring header size");
_Static_assert(sizeof(struct chan_bell) == 64, "a bell is one cache line");

uint64_t chan_shm_bytes(uint64_t cap)
{
    return CHAN_HDR_BYTES + cap;
}

bool chan_cap_ok(uint64_t cap)
{
    return cap >= CHAN_MIN_CAP && (cap & (cap - 1)) == 0;
}

void chan_reset(void *shm)
{
    struct chan_ring *r = shm;
    atomic_store(&r->head, 0);
    atomic_store(&r->tail, 0);
}

void chan_attach(struct chan *c, void *shm, uint64_t cap, struct chan_bell *rx,
                 struct chan_bell *tx)
{
    c->ring = shm;
    c->data = (uint8_t *)shm + CHAN_HDR_BYTES;
    c->cap = cap;
    c->rx = rx;
    c->tx = tx;
}

/* ---- ring ends ------------------------------------------------------------ */

uint64_t chan_space(const struct chan *c, uint8_t **p)
{
    uint64_t head = atomic_load_explicit(&c->ring->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&c->ring->tail, memory_order_acquire);
    uint64_t free = c->cap - (head - tail);
    uint64_t pos = head & (c->cap - 1);
    uint64_t run = c->cap - pos;
    *p = c->data + pos;
    return free < run ? free : run;
}

/* A ring end's invariants once head and tail are (to be) as given: the
 * capacity a power of two of whole messages, and 0 <= head - tail <= cap
 * (counters only grow; each end moves only its own). O(1), for assert()
 * at every commit and release. */
static inline bool chan_sane(const struct chan *c, uint64_t head, uint64_t tail)
{
    return c->cap >= CHAN_MIN_CAP && (c->cap & (c->cap - 1)) == 0 && c->cap % CHAN_ALIGN == 0 &&
           head >= tail && head - tail <= c->cap;
}

void chan_commit(struct chan *c, uint64_t n)
{
    if (n == 0)
        return;
    uint64_t head = atomic_load_explicit(&c->ring->head, memory_order_relaxed);
    assert(chan_sane(c, head + n, atomic_load_explicit(&c->ring->tail, memory_order_acquire)));
    atomic_store_explicit(&c->ring->head, head + n, memory_order_release);
    chan_bell_ring(c->rx);
}

uint64_t chan_avail(const struct chan *c, const uint8_t **p)
{
    uint64_t tail = atomic_load_explicit(&c->ring->tail, memory_order_relaxed);
    uint64_t head = atomic_load_explicit(&c->ring->head, memory_order_acquire);
    uint64_t fill = head - tail;
    uint64_t pos = tail & (c->cap - 1);
    uint64_t run = c->cap - pos;
    *p = c->data + pos;
    return fill < run ? fill : run;
}

uint64_t chan_fill(const struct chan *c)
{
    uint64_t tail = atomic_load_explicit(&c->ring->tail, memory_order_relaxed);
    return atomic_load_explicit(&c->ring->head, memory_order_acquire) - tail;
}

void chan_release(struct chan *c, uint64_t n)
{
    if (n == 0)
        return;
    uint64_t tail = atomic_load_explicit(&c->ring->tail, memory_order_relaxed);
    assert(chan_sane(c, atomic_load_explicit(&c->ring->head, memory_order_acquire), tail + n));
    atomic_store_explicit(&c->ring->tail, tail + n, memory_order_release);
    chan_bell_ring(c->tx);
}

uint64_t chan_put(struct chan *c, const void *buf, uint64_t n, uint32_t unit)
{
    uint64_t done = 0;
    for (int pass = 0; pass < 2 && done < n; pass++) {  /* up to the end, then from 0 */
        uint8_t *p;
        uint64_t k = chan_space(c, &p);
        if (k > n - done)
            k = n - done;
        k -= k % unit;
        if (k == 0)
            break;
        memcpy(p, (const uint8_t *)buf + done, k);
        chan_commit(c, k);
        done += k;
    }
    return done;
}

uint64_t chan_get(struct chan *c, void *buf, uint64_t n, uint32_t unit)
{
    uint64_t done = 0;
    for (int pass = 0; pass < 2 && done < n; pass++) {
        const uint8_t *p;
        uint64_t k = chan_avail(c, &p);
        if (k > n - done)
            k = n - done;
        k -= k % unit;
        if (k == 0)
            break;
        memcpy((uint8_t *)buf + done, p, k);
        chan_release(c, k);
        done += k;
    }
    return done;
}

bool chan_put_msg(struct chan *c, const struct chan_msg *m)
{
    uint8_t *p;
    if (chan_space(c, &p) < sizeof *m)  /* aligned: never split by the wrap */
        return false;
    memcpy(p, m, sizeof *m);
    chan_commit(c, sizeof *m);
    return true;
}

bool chan_get_msg(struct chan *c, struct chan_msg *m)
{
    const uint8_t *p;
    if (chan_avail(c, &p) < sizeof *m)
        return false;
    memcpy(m, p, sizeof *m);
    chan_release(c, sizeof *m);
    return true;
}

bool chan_put_pad(struct chan *c, uint64_t pad)
{
    uint8_t *p;
    if (pad == 0)
        return true;
    if (chan_space(c, &p) < pad)  /* pad < 64 and aligned to the end: one run */
        return false;
    chan_commit(c, pad);
    return true;
}

bool chan_get_pad(struct chan *c, uint64_t pad)
{
    const uint8_t *p;
    if (pad == 0)
        return true;
    if (chan_avail(c, &p) < pad)
        return false;
    chan_release(c, pad);
    return true;
}

/* ---- bells ---------------------------------------------------------------- */

static long chan_futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE_FLAG: the word is shared between processes. */
    return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void chan_bell_ring(struct chan_bell *b)
{
    atomic_fetch_add_explicit(&b->seq, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) != 0)
        (void)chan_futex(&b->seq, FUTEX_WAKE, INT_MAX, NULL);
}

uint32_t chan_bell_seen(struct chan_bell *b)
{
    return atomic_load_explicit(&b->seq, memory_order_seq_cst);
}

/* Sleep on the bell while it still reads seen, for at most ns. */
static void chan_bell_sleep(struct chan_bell *b, uint32_t seen, uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&b->seq, memory_order_seq_cst) == seen)
        (void)chan_futex(&b->seq, FUTEX_WAIT, seen, &ts);
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_seq_cst);
}

/* Every slice, even while the bell keeps moving: the check and the deadline. */
static NRT_STATUS chan_wait_check(struct chan_waiter *w, bool quiet, uint64_t slice)
{
    uint64_t now = spin_now_ns();
    if (!quiet && now - w->last_check_ns < slice)
        return NRT_SUCCESS;
    w->last_check_ns = now;
    if (w->check != NULL) {
        NRT_STATUS st = w->check(w->arg);
        if (st != NRT_SUCCESS)
            return st;
    }
    if (w->deadline_ns != 0 && spin_now_ns() >= w->deadline_ns)
        return NRT_TIMEOUT;
    return NRT_SUCCESS;
}

NRT_STATUS chan_wait(struct chan_waiter *w, uint32_t seen)
{
    uint64_t slice = (uint64_t)(w->slice_ms ? w->slice_ms : 50) * 1000000u;
    if (spin_until_moved(&w->bell->seq, seen, w->spin_ns))
        return chan_wait_check(w, false, slice);
    uint64_t nap = slice;
    if (w->deadline_ns != 0) {
        uint64_t now = spin_now_ns();
        if (now >= w->deadline_ns)
            return chan_wait_check(w, true, slice);
        if (w->deadline_ns - now < nap)
            nap = w->deadline_ns - now;
    }
    chan_bell_sleep(w->bell, seen, nap);
    bool quiet = atomic_load_explicit(&w->bell->seq, memory_order_acquire) == seen;
    return chan_wait_check(w, quiet, slice);
}

/* Move n bytes through c (send: from buf into the ring; else out of it
 * into buf), waiting on w whenever the ring is full or empty. */
static NRT_STATUS chan_move(struct chan *c, uint8_t *buf, uint64_t n, struct chan_waiter *w,
                            bool send)
{
    uint64_t done = 0;
    while (done < n) {
        uint32_t seen = chan_bell_seen(w->bell);
        uint64_t k = send ? chan_put(c, buf + done, n - done, 1)
                          : chan_get(c, buf + done, n - done, 1);
        done += k;
        if (k == 0) {
            NRT_STATUS st = chan_wait(w, seen);
            if (st != NRT_SUCCESS)
                return st;
        }
    }
    return NRT_SUCCESS;
}

NRT_STATUS chan_send(struct chan *c, const void *buf, uint64_t n, struct chan_waiter *w)
{
    /* chan_move only reads buf when sending. */
    return chan_move(c, (uint8_t *)(uintptr_t)buf, n, w, true);
}

NRT_STATUS chan_recv(struct chan *c, void *buf, uint64_t n, struct chan_waiter *w)
{
    return chan_move(c, buf, n, w, false);
}
