/*
 * exec_coll.c: semantics of the collective and cross-core instructions.
 *
 * Ops still listed with EXEC_NOT_EMULATED below stop an execution with
 * NRT_EXEC_COMPLETED_WITH_ERR and a report naming them.
 */
#include "emu/exec_stub.h"

EXEC_NOT_EMULATED(sendrecv)
EXEC_NOT_EMULATED(core_barrier)
EXEC_NOT_EMULATED(all_reduce)
EXEC_NOT_EMULATED(all_gather)
EXEC_NOT_EMULATED(reduce_scatter)
EXEC_NOT_EMULATED(all_to_all)
EXEC_NOT_EMULATED(permute)
