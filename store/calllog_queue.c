/*
 * calllog_queue.c: the call log's writer thread. Recorded calls are handed
 * over as rows that own their bytes; the thread inserts them into the log
 * and commits whenever it has caught up, so SQLite's cost (inserts run at
 * only 0.1-0.6 GB/s) overlaps the program instead of adding to it. The
 * producer blocks while more than CL_QUEUE_BYTES wait (back-pressure).
 * A write error stops the thread; every later push reports it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"
#include "store/calllog.h"

/* Bytes of buffers that may wait for the writer before callers block. */
#define CL_QUEUE_BYTES (512ull << 20)
/* Commit at least this often (rows) while the writer has not caught up. */
#define CL_QUEUE_COMMIT_ROWS 1024

/* The writer and its queue. */
struct cl_queue {
    struct cl_log *log;       /* written by the thread only */
    pthread_t thread;         /* the writer */
    pthread_mutex_t lock;     /* guards everything below */
    pthread_cond_t work;      /* an item arrived, or stop */
    pthread_cond_t progress;  /* the writer wrote (room, or idle) */
    struct cl_item *head;     /* oldest waiting item */
    struct cl_item *tail;     /* newest waiting item */
    uint64_t bytes;           /* buffer bytes waiting */
    bool busy;                /* the writer holds items not yet committed */
    bool stop;                /* the thread is asked to end */
    bool failed;              /* a write failed: nothing more is written */
};

void cl_item_free(struct cl_item *it)
{
    if (it == NULL)
        return;
    cl_bytes_free(&it->blob);
    cl_bufs_free(it->bufs, it->nbufs);
    free(it->env);
    free(it);
}

static void queue_free_all(struct cl_item *it)
{
    while (it != NULL) {
        struct cl_item *next = it->next;
        cl_item_free(it);
        it = next;
    }
}

/* Write a batch of items (freeing them); commit. */
static bool queue_write(struct cl_queue *q, struct cl_item *batch)
{
    bool ok = true;
    size_t rows = 0;
    while (batch != NULL) {
        struct cl_item *next = batch->next;
        if (ok) {
            batch->row.args = batch->blob.p;
            batch->row.args_len = batch->blob.n;
            batch->row.bufs = batch->bufs;
            batch->row.nbufs = batch->nbufs;
            batch->row.env = batch->env;
            ok = cl_log_write(q->log, &batch->row) == NRT_SUCCESS;
            if (ok && ++rows % CL_QUEUE_COMMIT_ROWS == 0)
                ok = cl_log_commit(q->log) == NRT_SUCCESS;
        }
        cl_item_free(batch);
        batch = next;
    }
    return ok && cl_log_commit(q->log) == NRT_SUCCESS;
}

static void *queue_main(void *arg)
{
    struct cl_queue *q = arg;
    pthread_mutex_lock(&q->lock);
    for (;;) {
        while (q->head == NULL && !q->stop)
            pthread_cond_wait(&q->work, &q->lock);
        if (q->head == NULL && q->stop)
            break;
        struct cl_item *batch = q->head;
        q->head = q->tail = NULL;
        q->bytes = 0;
        q->busy = true;
        pthread_cond_broadcast(&q->progress);
        bool failed = q->failed;
        pthread_mutex_unlock(&q->lock);
        bool ok = !failed && queue_write(q, batch);
        if (failed)
            queue_free_all(batch);
        pthread_mutex_lock(&q->lock);
        q->busy = false;
        if (!ok)  /* the recorder says so, with the cause (cl_log_error) */
            q->failed = true;
        pthread_cond_broadcast(&q->progress);
    }
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

NRT_STATUS cl_queue_start(struct cl_log *log, struct cl_queue **out)
{
    struct cl_queue *q = calloc(1, sizeof *q);
    if (q == NULL)
        return NRT_RESOURCE;
    q->log = log;
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->progress, NULL);
    if (pthread_create(&q->thread, NULL, queue_main, q) != 0) {
        LOG_ERROR("STORE", "%s: cannot start the call log's writer thread", cl_log_path(log));
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->work);
        pthread_cond_destroy(&q->progress);
        free(q);
        return NRT_RESOURCE;
    }
    *out = q;
    return NRT_SUCCESS;
}

bool cl_queue_push(struct cl_queue *q, struct cl_item *it, uint64_t bytes)
{
    pthread_mutex_lock(&q->lock);
    while (!q->failed && q->head != NULL && q->bytes + bytes > CL_QUEUE_BYTES)
        pthread_cond_wait(&q->progress, &q->lock);
    bool ok = !q->failed;
    if (ok) {
        /* The writer sleeps only when nothing waits and it holds nothing. */
        bool asleep = q->head == NULL && !q->busy;
        it->next = NULL;
        if (q->tail != NULL)
            q->tail->next = it;
        else
            q->head = it;
        q->tail = it;
        q->bytes += bytes;
        if (asleep)
            pthread_cond_signal(&q->work);
    }
    pthread_mutex_unlock(&q->lock);
    if (!ok)
        cl_item_free(it);
    return ok;
}

bool cl_queue_drain(struct cl_queue *q)
{
    pthread_mutex_lock(&q->lock);
    while (!q->failed && (q->head != NULL || q->busy))
        pthread_cond_wait(&q->progress, &q->lock);
    bool ok = !q->failed;
    pthread_mutex_unlock(&q->lock);
    return ok;
}

void cl_queue_stop(struct cl_queue *q)
{
    if (q == NULL)
        return;
    pthread_mutex_lock(&q->lock);
    q->stop = true;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->lock);
    pthread_join(q->thread, NULL);
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->progress);
    free(q);
}
