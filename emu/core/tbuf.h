/*
 * tbuf.h: a buffer of fixed size per thread, mapped on the thread's first
 * use (its pages come on first touch and stay for the next use) and
 * unmapped when the thread ends. For scratch that every thread needs its
 * own of, on paths too hot for a malloc each time.
 */
#ifndef TRNEMU_EMU_TBUF_H
#define TRNEMU_EMU_TBUF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct tbuf {
    size_t bytes;         /* size of each thread's buffer */
    pthread_key_t key;    /* the thread's buffer; unmapped at its exit */
    atomic_bool keyed;    /* key created (set under the module's lock) */
};

#define TBUF_INIT(size) {.bytes = (size)}

/* The calling thread's buffer of t->bytes bytes, page aligned; NULL when
 * the host is out of memory (the caller says what needed it). */
void *tbuf_get(struct tbuf *t);

#endif
