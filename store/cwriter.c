/*
 * cwriter.c: the writer thread of a restore through a file (see
 * cwriter.h).
 *
 * The buffers move between two lists: `free` (the caller takes from it,
 * under the writer's mutex) and the queue of the writer's thread (a jobq,
 * emu/jobq.h: the thread writes the buffers in the order queued). A
 * buffer being filled or written is on neither. The bytes of different
 * buffers never overlap in the file, so the order of the writes does not
 * change the result. After a failed write the thread writes nothing more
 * and only hands the buffers back.
 */
#include "store/cwriter.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/grow.h"
#include "emu/jobq.h"
#include "emu/log.h"

/* Most staging buffers. */
#define CWRITER_MAX_BUFS 8

struct cwriter {
    struct jobq q;                         /* buffers to write, and the writer */
    pthread_mutex_t lock;                  /* guards the free list and st */
    pthread_cond_t freed;                  /* a buffer came back to the free list */
    int fd;                                /* the file */
    int64_t region;                        /* region restored, for messages */
    struct cwriter_buf bufs[CWRITER_MAX_BUFS]; /* the staging buffers */
    unsigned nbufs;                        /* entries of bufs */
    struct cwriter_buf *free;              /* buffers ready to be filled */
    NRT_STATUS st;                         /* first failed write, else NRT_SUCCESS
                                              (written by the thread only) */
    uint64_t bad_off;                      /* its file offset */
    int bad_errno;                         /* its errno (0: a write of no bytes) */
};

static _Thread_local const struct cwriter *cwriter_locked; /* whose lock this thread holds */

/* w's lock, taken and dropped with its holder noted for cwriter_held (a
 * condition wait gives it up only while the thread sleeps). */
static void cwriter_lock(struct cwriter *w)
{
    pthread_mutex_lock(&w->lock);
    cwriter_locked = w;
}

static void cwriter_unlock(struct cwriter *w)
{
    assert(cwriter_locked == w);
    cwriter_locked = NULL;
    pthread_mutex_unlock(&w->lock);
}

/* Does this thread hold w's lock? For assert() only. */
static inline bool cwriter_held(const struct cwriter *w)
{
    return cwriter_locked == w;
}

/* Write n bytes at file offset off; false with *err set on failure. */
static bool cwriter_pwrite(int fd, const uint8_t *p, size_t n, uint64_t off, int *err)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, (off_t)off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            *err = w < 0 ? errno : 0;
            return false;
        }
        p += w;
        n -= (size_t)w;
        off += (uint64_t)w;
    }
    return true;
}

/* Write one buffer's runs (no lock held); false with the failed offset. */
static bool cwriter_write_buf(struct cwriter *w, const struct cwriter_buf *b, uint64_t *bad,
                              int *err)
{
    const uint8_t *p = b->data;
    for (size_t i = 0; i < b->nruns; i++) {
        if (!cwriter_pwrite(w->fd, p, b->runs[i].len, b->runs[i].off, err)) {
            *bad = b->runs[i].off;
            return false;
        }
        p += b->runs[i].len;
    }
    return true;
}

/* Put b back on the free list, emptied (lock held). */
static void cwriter_give_back(struct cwriter *w, struct cwriter_buf *b)
{
    assert(cwriter_held(w));
    b->used = 0;
    b->nruns = 0;
    b->next_free = w->free;
    w->free = b;
    pthread_cond_broadcast(&w->freed);
}

/* Write b, on the writer's thread (nothing more after a failed write),
 * and give it back. */
static void cwriter_run(void *ctx, void *job, struct jobq_after *after)
{
    (void)after;
    struct cwriter *w = ctx;
    struct cwriter_buf *b = job;
    uint64_t bad = 0;
    int err = 0;
    bool ok = w->st != NRT_SUCCESS || cwriter_write_buf(w, b, &bad, &err);
    cwriter_lock(w);
    if (!ok) {
        w->st = err == ENOSPC ? NRT_RESOURCE : NRT_FAILURE;
        w->bad_off = bad;
        w->bad_errno = err;
    }
    cwriter_give_back(w, b);
    cwriter_unlock(w);
}

/* Free the buffers and the writer (the thread is not running). */
static void cwriter_free(struct cwriter *w)
{
    for (unsigned i = 0; i < w->nbufs; i++) {
        free(w->bufs[i].data);
        free(w->bufs[i].runs);
    }
    pthread_cond_destroy(&w->freed);
    pthread_mutex_destroy(&w->lock);
    free(w);
}

struct cwriter *cwriter_start(int fd, int64_t region, size_t cap, unsigned nbuf)
{
    struct cwriter *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->freed, NULL);
    const struct jobq_spec spec = {
        .link = JOBQ_LINK(struct cwriter_buf, next),
        .run = cwriter_run,
        .ctx = w,
    };
    jobq_init(&w->q, &spec);
    w->fd = fd;
    w->region = region;
    w->st = NRT_SUCCESS;
    nbuf = nbuf < 2 ? 2 : nbuf > CWRITER_MAX_BUFS ? CWRITER_MAX_BUFS : nbuf;
    cwriter_lock(w);  /* give_back's rule, though no thread runs yet */
    for (; w->nbufs < nbuf; w->nbufs++) {
        struct cwriter_buf *b = &w->bufs[w->nbufs];
        b->data = malloc(cap);
        if (b->data == NULL)
            break;
        b->cap = cap;
        cwriter_give_back(w, b);
    }
    cwriter_unlock(w);
    if (w->nbufs < nbuf || !jobq_start(&w->q)) {
        jobq_fini(&w->q);
        cwriter_free(w);
        return NULL;
    }
    return w;
}

NRT_STATUS cwriter_take(struct cwriter *w, struct cwriter_buf **out)
{
    cwriter_lock(w);
    while (w->free == NULL && w->st == NRT_SUCCESS)
        pthread_cond_wait(&w->freed, &w->lock);
    NRT_STATUS st = w->st;
    *out = NULL;
    if (st == NRT_SUCCESS) {
        *out = w->free;
        w->free = w->free->next_free;
    }
    cwriter_unlock(w);
    return st;
}

uint8_t *cwriter_reserve(struct cwriter_buf *b, uint64_t off, size_t n)
{
    if (n > b->cap - b->used)
        return NULL;
    struct cwriter_run *last = b->nruns > 0 ? &b->runs[b->nruns - 1] : NULL;
    if (last != NULL && last->off + last->len == off) {
        last->len += n;
    } else {
        if (!GROW_ARRAY(b->runs, b->runs_cap, b->nruns + 1, 16))
            return NULL;
        b->runs[b->nruns++] = (struct cwriter_run){off, n};
    }
    uint8_t *p = b->data + b->used;
    b->used += n;
    return p;
}

void cwriter_queue(struct cwriter *w, struct cwriter_buf *b)
{
    (void)jobq_put(&w->q, b, 0);  /* started, never failed: always queued */
}

void cwriter_drop(struct cwriter *w, struct cwriter_buf *b)
{
    cwriter_lock(w);
    cwriter_give_back(w, b);
    cwriter_unlock(w);
}

NRT_STATUS cwriter_finish(struct cwriter *w)
{
    if (w == NULL)
        return NRT_SUCCESS;
    jobq_fini(&w->q);  /* writes what is queued, joins the thread */
    NRT_STATUS st = w->st;
    if (st != NRT_SUCCESS)
        LOG_ERROR("STORE", "cannot write restored memory of region %" PRId64 " at 0x%" PRIx64
                  ": %s", w->region, w->bad_off,
                  w->bad_errno ? strerror(w->bad_errno) : "nothing written");
    cwriter_free(w);
    return st;
}
