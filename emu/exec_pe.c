/*
 * exec_pe.c: semantics of the Tensor engine (PE) instructions: nc_matmul, nc_matmul_mx, nc_transpose.
 *
 * Ops still listed with EXEC_NOT_EMULATED below stop an execution with
 * NRT_EXEC_COMPLETED_WITH_ERR and a report naming them.
 */
#include "emu/exec_stub.h"

EXEC_NOT_EMULATED(nc_matmul)
EXEC_NOT_EMULATED(nc_matmul_mx)
EXEC_NOT_EMULATED(nc_transpose)
