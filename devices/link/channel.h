/*
 * channel.h: emulated NeuronLink channels: single-producer single-consumer
 * byte rings in shared memory, and the doorbells their ends sleep on.
 *
 * A ring is a header (head and tail counters, each on its own cache line)
 * followed by `cap` data bytes, cap a power of two and a multiple of 64.
 * head counts bytes ever committed by the producer, tail bytes ever
 * released by the consumer; both only grow (64 bits never wrap), so
 * head - tail is the fill level. The producer writes data, then publishes
 * it with a release store of head; the consumer reads head with acquire
 * and, once done with the bytes, publishes tail with release. No locks.
 * A full ring makes the producer wait for space (back-pressure).
 *
 * Waiting: each party owns a doorbell (chan_bell): a counter that every
 * commit (for the consumer's bell) and release (for the producer's) bumps,
 * and a futex waiter count, so a ring that nobody sleeps on costs no system
 * call. A waiter reads its bell, looks for work, and sleeps on the bell only
 * if there was none and the bell has not moved since; it busy-polls the
 * bell for a bounded window first (spin_ns, with the CPU's pause hint, so
 * a partner that answers within microseconds costs no system call and no
 * trip through the scheduler), then sleeps with FUTEX_WAIT
 * (process-shared) in bounded slices,
 * calling a check function between slices (peer liveness, aborts) until
 * its deadline. One bell can serve many rings: a collective waits on one
 * word for any of its channels.
 *
 * Messages: a 64-byte header (chan_msg) then the payload, padded to 64
 * bytes, so every message starts 64-byte aligned and an element of up to
 * 8 bytes never straddles the end of the ring. Payloads may be streamed in
 * pieces through a ring smaller than them.
 */
#ifndef TRNEMU_DEVICES_CHANNEL_H
#define TRNEMU_DEVICES_CHANNEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#define CHAN_ALIGN 64u             /* message alignment in a ring */
#define CHAN_HDR_BYTES 128u        /* ring header in front of the data */
#define CHAN_MIN_CAP 4096u         /* smallest ring */
#define CHAN_MSG_MAGIC 0x4e4c4b31u /* "1KLN" little-endian */

/* A doorbell in shared memory (one cache line). */
struct chan_bell {
    _Atomic uint32_t seq;      /* bumped by every notification */
    _Atomic uint32_t sleepers; /* waiters inside FUTEX_WAIT on seq */
    uint8_t pad[56];           /* own cache line */
};

/* The shared header of one ring; the data follows at CHAN_HDR_BYTES. */
struct chan_ring {
    _Alignas(64) _Atomic uint64_t head; /* bytes ever committed (producer) */
    uint8_t pad0[56];                   /* head on its own line */
    _Alignas(64) _Atomic uint64_t tail; /* bytes ever released (consumer) */
    uint8_t pad1[56];                   /* tail on its own line */
};

/* One end's view of a ring (process-local). */
struct chan {
    struct chan_ring *ring; /* shared header */
    uint8_t *data;          /* the cap ring bytes */
    uint64_t cap;           /* ring bytes: a power of two, multiple of 64 */
    struct chan_bell *rx;   /* consumer's bell: rung on commit */
    struct chan_bell *tx;   /* producer's bell: rung on release */
};

/* Header of a message (64 bytes). */
struct chan_msg {
    uint32_t magic;  /* CHAN_MSG_MAGIC */
    uint32_t seq;    /* sender's sequence number of the operation */
    uint16_t kind;   /* what the message belongs to (caller's codes) */
    uint8_t dtype;   /* element type (nrt_dtype_t value) */
    uint8_t op;      /* reduction operation */
    uint32_t from;   /* sender's rank */
    uint64_t bytes;  /* payload bytes that follow */
    uint64_t aux;    /* caller's detail (element count, origin rank ...) */
    uint8_t pad[32]; /* to 64 bytes */
};

/* Shared bytes one ring of cap data bytes takes (header included). */
uint64_t chan_shm_bytes(uint64_t cap);
/* Is cap a usable ring size (power of two, >= CHAN_MIN_CAP)? */
bool chan_cap_ok(uint64_t cap);
/* Empty the ring at shm (only while neither end uses it). */
void chan_reset(void *shm);
/* Make c an end of the ring at shm (cap data bytes) with the two bells. */
void chan_attach(struct chan *c, void *shm, uint64_t cap, struct chan_bell *rx,
                 struct chan_bell *tx);

/* ---- non-blocking ends ------------------------------------------------- */
/* Producer: contiguous free bytes at *p (0 when full). */
uint64_t chan_space(const struct chan *c, uint8_t **p);
/* Producer: publish n bytes written at the chan_space pointer; rings rx. */
void chan_commit(struct chan *c, uint64_t n);
/* Consumer: contiguous readable bytes at *p (0 when empty). */
uint64_t chan_avail(const struct chan *c, const uint8_t **p);
/* Consumer: all readable bytes (may wrap). */
uint64_t chan_fill(const struct chan *c);
/* Consumer: give n bytes back to the producer; rings tx. */
void chan_release(struct chan *c, uint64_t n);

/* Copy up to n bytes of buf in; returns how many went (a multiple of
 * `unit`, which must divide 64). */
uint64_t chan_put(struct chan *c, const void *buf, uint64_t n, uint32_t unit);
/* Copy up to n bytes out into buf; returns how many (a multiple of unit). */
uint64_t chan_get(struct chan *c, void *buf, uint64_t n, uint32_t unit);
/* Bytes of padding after a payload of n bytes. */
static inline uint64_t chan_pad_bytes(uint64_t n)
{
    return (CHAN_ALIGN - n % CHAN_ALIGN) % CHAN_ALIGN;
}
/* Producer: write a header if a whole one fits; false when not yet. */
bool chan_put_msg(struct chan *c, const struct chan_msg *m);
/* Consumer: copy the header at the read position, if a whole one is
 * there, and consume it; false when not yet. */
bool chan_get_msg(struct chan *c, struct chan_msg *m);
/* Producer: skip pad bytes after a payload; false when there is no room yet. */
bool chan_put_pad(struct chan *c, uint64_t pad);
/* Consumer: skip pad bytes; false when they have not arrived yet. */
bool chan_get_pad(struct chan *c, uint64_t pad);

/* ---- bells and waiting ------------------------------------------------- */
/* Notify the bell's owner. */
void chan_bell_ring(struct chan_bell *b);
/* The bell's counter (read before looking for work, passed to the wait). */
uint32_t chan_bell_seen(struct chan_bell *b);

/* How a blocking operation waits. */
struct chan_waiter {
    struct chan_bell *bell;      /* the caller's own bell */
    uint64_t deadline_ns;        /* CLOCK_MONOTONIC; 0: none */
    uint32_t spin_ns;            /* busy-poll window before sleeping, ns (0: none) */
    uint32_t slice_ms;           /* longest sleep between checks */
    NRT_STATUS (*check)(void *arg); /* between slices: non-success ends the wait */
    void *arg;                   /* check's argument */
    uint64_t last_check_ns;      /* when check last ran (set 0 to start) */
};

/* Wait until the bell moves past `seen`, or one slice passes. NRT_SUCCESS
 * when the caller should look for work again, NRT_TIMEOUT past the
 * deadline, or what check returned. The check and the deadline are looked
 * at after every quiet slice and at least once a slice while the bell
 * moves. */
NRT_STATUS chan_wait(struct chan_waiter *w, uint32_t seen);

/* Blocking whole transfers (the header is the caller's business). */
NRT_STATUS chan_send(struct chan *c, const void *buf, uint64_t n, struct chan_waiter *w);
NRT_STATUS chan_recv(struct chan *c, void *buf, uint64_t n, struct chan_waiter *w);

#endif
