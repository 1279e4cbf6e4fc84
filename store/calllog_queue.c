/*
 * calllog_queue.c: the call log's writer thread. Recorded calls are handed
 * over as rows that own their bytes; the thread inserts them into the log
 * and commits whenever it has caught up, so SQLite's cost (inserts run at
 * only 0.1-0.6 GB/s) overlaps the program instead of adding to it. The
 * producer blocks while more than CL_QUEUE_BYTES wait (back-pressure).
 * A write error stops the thread; every later push reports it.
 */
#include <stdlib.h>
#include <string.h>

#include "emu/jobq.h"
#include "emu/log.h"
#include "store/calllog.h"

/* Bytes of buffers that may wait for the writer before callers block. */
#define CL_QUEUE_BYTES (512ull << 20)
/* Commit at least this often (rows) while the writer has not caught up. */
#define CL_QUEUE_COMMIT_ROWS 1024

/* The writer and its queue: a batch jobq (emu/jobq.h), whose thread takes
 * every waiting item at once, writes them and commits, so that it commits
 * whenever it has caught up; the items' bytes are the queue's bound. */
struct cl_queue {
    struct cl_log *log;       /* written by the thread only */
    struct jobq jq;           /* the items and the writer */
    bool failed;              /* a write failed: nothing more is written (the thread's) */
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

/* The writer, on the queue's thread: a batch of items, oldest first. */
static void queue_run(void *ctx, void *job, struct jobq_after *after)
{
    (void)after;
    struct cl_queue *q = ctx;
    struct cl_item *batch = job;
    if (q->failed) {
        queue_free_all(batch);
        return;
    }
    if (!queue_write(q, batch)) {  /* the recorder says so, with the cause (cl_log_error) */
        q->failed = true;
        jobq_fail(&q->jq);
    }
}

NRT_STATUS cl_queue_start(struct cl_log *log, struct cl_queue **out)
{
    struct cl_queue *q = calloc(1, sizeof *q);
    if (q == NULL)
        return NRT_RESOURCE;
    q->log = log;
    const struct jobq_spec spec = {
        .link = JOBQ_LINK(struct cl_item, next),
        .run = queue_run,
        .ctx = q,
        .batch = true,
        .cap = CL_QUEUE_BYTES,
    };
    jobq_init(&q->jq, &spec);
    if (!jobq_start(&q->jq)) {
        LOG_ERROR("STORE", "%s: cannot start the call log's writer thread", cl_log_path(log));
        jobq_fini(&q->jq);
        free(q);
        return NRT_RESOURCE;
    }
    *out = q;
    return NRT_SUCCESS;
}

bool cl_queue_push(struct cl_queue *q, struct cl_item *it, uint64_t bytes)
{
    bool ok = jobq_put(&q->jq, it, bytes);
    if (!ok)
        cl_item_free(it);
    return ok;
}

bool cl_queue_drain(struct cl_queue *q)
{
    return jobq_drain(&q->jq);
}

void cl_queue_stop(struct cl_queue *q)
{
    if (q == NULL)
        return;
    jobq_fini(&q->jq);
    free(q);
}
