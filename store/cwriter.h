/*
 * cwriter.h: the writer thread of a restore through a file (the shared
 * file behind a chip's HBM). Decoded chunks are put into a few staging
 * buffers; one thread writes each queued buffer into the file, one
 * pwrite per run of adjacent chunks, while the caller reads and decodes
 * the chunks of the next buffers. The file takes writes one at a time
 * anyway (the kernel serialises writes to one file), so a single writer
 * that is never idle is as fast as it gets, and the other core is left
 * to SQLite and the decoders.
 */
#ifndef TRNEMU_STORE_CWRITER_H
#define TRNEMU_STORE_CWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

struct cwriter;

/* One range of the file a staging buffer fills. */
struct cwriter_run {
    uint64_t off;  /* file offset */
    size_t len;    /* bytes, taken from the buffer in order */
};

/* A staging buffer: bytes to write and where they go. */
struct cwriter_buf {
    uint8_t *data;             /* cap bytes, filled from the start */
    size_t cap;                /* bytes of data */
    size_t used;               /* bytes reserved so far */
    struct cwriter_run *runs;  /* the file ranges of data, in order */
    size_t nruns;              /* runs used */
    size_t runs_cap;           /* runs allocated */
    struct cwriter_buf *next_free; /* link in the writer's free list */
    void *next;                /* link in its queue (emu/jobq.h) */
};

/* Start a writer of fd (region names it in messages) with nbuf staging
 * buffers of cap bytes each. NULL when out of memory or threads. */
struct cwriter *cwriter_start(int fd, int64_t region, size_t cap, unsigned nbuf);

/* An empty staging buffer, waiting while all are queued or being
 * written. The status of the first failed write instead, once one did. */
NRT_STATUS cwriter_take(struct cwriter *w, struct cwriter_buf **out);

/* Reserve n bytes of b for file offset off: where to put them (runs of
 * adjacent offsets merge); NULL when b has no room left. */
uint8_t *cwriter_reserve(struct cwriter_buf *b, uint64_t off, size_t n);

/* Hand a filled buffer to the thread; drop: give it back unwritten
 * (its bytes failed a check). */
void cwriter_queue(struct cwriter *w, struct cwriter_buf *b);
void cwriter_drop(struct cwriter *w, struct cwriter_buf *b);

/* Wait until every queued buffer is written, stop the thread and free
 * everything. NRT_SUCCESS, or the first failed write (one log line):
 * NRT_RESOURCE when the file system is full, NRT_FAILURE otherwise. */
NRT_STATUS cwriter_finish(struct cwriter *w);

#endif
