/*
 * exec.h: nrt_execute behind the ABI: binds the caller's tensors to a
 * model's inputs and outputs, serialises executions per VNC, and runs the
 * model's subgraphs on the emulated NeuronCores.
 */
#ifndef TRNEMU_DEVICES_EXEC_H
#define TRNEMU_DEVICES_EXEC_H

#include <stdint.h>

#include "nrt/nrt.h"

/* Run a pinned model repeat times. Inputs and outputs are looked up by
 * name; a missing or wrongly sized tensor is NRT_INVALID before anything
 * runs. Callers hold rt_enter() and a model pin. */
NRT_STATUS exec_model(nrt_model_t *m, const nrt_tensor_set_t *inputs, nrt_tensor_set_t *outputs,
                      uint32_t repeat);

#endif
