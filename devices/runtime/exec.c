/*
 * exec.c: nrt_execute (exec_model) and the execution status callback told
 * of every finished execution (see exec.h). The rest of an execution is in
 * the files exec_int.h lists: binding, the hand-off to the worker, the run
 * on the cores, stand-ins, diagnostics, collectives and helper threads.
 */
#include "devices/runtime/exec.h"

#include <pthread.h>
#include <stdatomic.h>

#include "devices/observe/systrace.h"
#include "devices/runtime/model.h"
#include "nrt/nrt_status.h"

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

NRT_STATUS exec_model(nrt_model_t *m, const nrt_tensor_set_t *inputs, nrt_tensor_set_t *outputs,
                      uint32_t repeat)
{
    struct exec_request *r;
    uint64_t t0 = systrace_now_ns();
    NRT_STATUS st = exec_request_new(m, inputs, outputs, repeat, &r);
    if (st != NRT_SUCCESS)
        return st;
    st = exec_request_run(r);
    systrace_emit(SYS_NRT_EXECUTE, m->vnc, t0, systrace_now_ns() - t0, m->neff->info.name,
                  atomic_load(&m->executions), st);
    exec_request_free(r);
    exec_notify(m, atomic_load(&m->executions), st);
    return st;
}
