/*
 * exec_act.c: semantics of the activation-engine instructions and the random-number ops.
 *
 * Ops still listed with EXEC_NOT_EMULATED below stop an execution with
 * NRT_EXEC_COMPLETED_WITH_ERR and a report naming them.
 */
#include "emu/exec_stub.h"

EXEC_NOT_EMULATED(activation)
EXEC_NOT_EMULATED(activation_reduce)
EXEC_NOT_EMULATED(activate2)
EXEC_NOT_EMULATED(exponential)
EXEC_NOT_EMULATED(reciprocal)
EXEC_NOT_EMULATED(dropout)
EXEC_NOT_EMULATED(rng)
EXEC_NOT_EMULATED(rand2)
EXEC_NOT_EMULATED(rand_set_state)
EXEC_NOT_EMULATED(rand_get_state)
EXEC_NOT_EMULATED(set_rng_seed)
