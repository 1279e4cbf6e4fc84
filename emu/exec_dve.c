/*
 * exec_dve.c: semantics of the vector-engine elementwise, copy and reduce instructions.
 *
 * Ops still listed with EXEC_NOT_EMULATED below stop an execution with
 * NRT_EXEC_COMPLETED_WITH_ERR and a report naming them.
 */
#include "emu/exec_stub.h"

EXEC_NOT_EMULATED(tensor_tensor)
EXEC_NOT_EMULATED(tensor_scalar)
EXEC_NOT_EMULATED(scalar_tensor_tensor)
EXEC_NOT_EMULATED(tensor_copy)
EXEC_NOT_EMULATED(tensor_copy_predicated)
EXEC_NOT_EMULATED(memset)
EXEC_NOT_EMULATED(tensor_reduce)
EXEC_NOT_EMULATED(tensor_partition_reduce)
EXEC_NOT_EMULATED(tensor_tensor_scan)
EXEC_NOT_EMULATED(tensor_scalar_reduce)
EXEC_NOT_EMULATED(tensor_scalar_cumulative)
EXEC_NOT_EMULATED(iota)
