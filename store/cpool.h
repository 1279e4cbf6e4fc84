/*
 * cpool.h: a few worker threads that run the items of one batch at a time
 * (chunk hashing, encoding and decoding in the snapshot store), with the
 * submitting thread free to do other work (SQLite) meanwhile and helping
 * with the rest when it waits.
 */
#ifndef TRNEMU_STORE_CPOOL_H
#define TRNEMU_STORE_CPOOL_H

#include <stddef.h>

struct cpool;

/* Start a pool of up to max workers: one per core beyond the caller's
 * and `others` threads that keep a core busy besides (a restore's
 * writer), TRNEMU_SNAPSHOT_THREADS standing for the core count when set;
 * 0 workers is fine: the caller then runs every item itself. NULL when
 * out of memory. */
struct cpool *cpool_start(unsigned max, unsigned others);
void cpool_stop(struct cpool *p);

/* Run fn(arg, i) for i in [0, n) on the workers; returns at once. */
void cpool_submit(struct cpool *p, void (*fn)(void *arg, size_t i), void *arg, size_t n);
/* Help with the batch, then wait until all its items are done. */
void cpool_wait(struct cpool *p);

#endif
