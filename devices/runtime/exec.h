/*
 * exec.h: nrt_execute behind the ABI: binds the caller's tensors to a
 * model's inputs and outputs, serialises executions per VNC, and runs the
 * model's subgraphs on the emulated NeuronCores.
 */
#ifndef TRNEMU_DEVICES_EXEC_H
#define TRNEMU_DEVICES_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/thread/worker.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

/* Run a pinned model repeat times. Inputs and outputs are looked up by
 * name; a missing or wrongly sized tensor is NRT_INVALID before anything
 * runs. Callers hold rt_enter() and a model pin. */
NRT_STATUS exec_model(nrt_model_t *m, const nrt_tensor_set_t *inputs, nrt_tensor_set_t *outputs,
                      uint32_t repeat);

/* An execution whose tensors are bound and pinned (nrta_execute_schedule
 * binds at schedule time, runs later on an async queue's thread). */
struct exec_request;

/* Bind inputs and outputs of a pinned model; NRT_INVALID (one log line)
 * when a tensor is missing or wrongly sized. */
NRT_STATUS exec_request_new(nrt_model_t *m, const nrt_tensor_set_t *inputs,
                            nrt_tensor_set_t *outputs, uint32_t repeat,
                            struct exec_request **out);
/* Run it on its VNC's worker and wait; callers hold rt_enter() or run
 * before nrt_close tears the machine down (async queues). */
NRT_STATUS exec_request_run(struct exec_request *r);
/* The worker of the request's VNC, and the run for a job already on it:
 * that worker runs one job at a time, so executions on the VNC are
 * serialised without the VNC's exec_lock (which a blocked nrt_execute
 * may hold while its own job waits behind this one). */
struct worker *exec_request_worker(const struct exec_request *r);
NRT_STATUS exec_request_run_on_worker(struct exec_request *r);
/* Unpin its tensors and free it (the model pin stays the caller's). */
void exec_request_free(struct exec_request *r);

/* The callback told of every finished execution, nrt_execute's and the
 * queues' (NULL to remove it). */
void exec_set_status_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK cb, void *params);
/* Tell the callback of one finished execution, once it counts as
 * complete and with no lock of the runtime held: the callback may call
 * back into the runtime (an execution on the same VNC runs at once on the
 * calling thread; exec_request_run). */
void exec_notify(const nrt_model_t *m, uint64_t job_id, NRT_STATUS st);
/* Is the calling thread inside the status callback? Calls that would wait
 * for the callback itself to return (nrt_close) refuse it. */
bool exec_in_status_callback(void);

/* May the physical cores of one execution each run on their own host
 * thread (docs/execution.md)? On by default; TRNEMU_THREADS=1 keeps them
 * on one thread whatever this says. Not part of the ABI: for benchmarks
 * that compare the two schedules (bench/bench_par.c). */
void exec_set_core_threads(bool on);

#endif
