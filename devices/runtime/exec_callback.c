/*
 * exec_callback.c: the execution status callback
 * (nrt_register_async_exec_callback) told of every finished execution,
 * nrt_execute's and the queues', and whether this thread is inside it (an
 * execution started from a callback waits a bounded time: exec.h).
 */
#include <pthread.h>
#include <stdbool.h>

#include "devices/runtime/exec.h"
#include "devices/runtime/model.h"

/* ---- the execution status callback ------------------------------------ */

static pthread_mutex_t exec_cb_lock = PTHREAD_MUTEX_INITIALIZER;
static NRT_ASYNC_EXEC_STATUS_CALLBACK exec_cb;  /* nrt_register_async_exec_callback */
static void *exec_cb_params;                    /* its argument */

void exec_set_status_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK cb, void *params)
{
    pthread_mutex_lock(&exec_cb_lock);
    exec_cb = cb;
    exec_cb_params = params;
    pthread_mutex_unlock(&exec_cb_lock);
}

static _Thread_local uint32_t exec_cb_depth;    /* callbacks under way on this thread */

void exec_notify(const nrt_model_t *m, uint64_t job_id, NRT_STATUS st)
{
    pthread_mutex_lock(&exec_cb_lock);
    NRT_ASYNC_EXEC_STATUS_CALLBACK cb = exec_cb;
    void *params = exec_cb_params;
    pthread_mutex_unlock(&exec_cb_lock);
    if (cb == NULL)
        return;
    exec_cb_depth++;
    cb(params, m->id, (uint32_t)m->vnc, job_id, st);
    exec_cb_depth--;
}

bool exec_in_status_callback(void)
{
    return exec_cb_depth > 0;
}
