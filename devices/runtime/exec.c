/*
 * exec.c: nrt_execute (exec_model) (see exec.h). The rest of an
 * execution is in the files exec_int.h lists: binding, the hand-off to the
 * worker, the run on the cores, stand-ins, diagnostics, collectives and
 * helper threads; the status callback told of every finished execution is
 * exec_callback.c.
 */
#include "devices/runtime/exec.h"

#include <stdatomic.h>

#include "devices/observe/systrace.h"
#include "devices/runtime/model.h"
#include "nrt/nrt_status.h"

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
