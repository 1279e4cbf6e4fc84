/*
 * exec_dma.c: semantics of the DMA instructions: dma_copy, dma_transpose, dma_compute, dma_trigger.
 *
 * Ops still listed with EXEC_NOT_EMULATED below stop an execution with
 * NRT_EXEC_COMPLETED_WITH_ERR and a report naming them.
 */
#include "emu/exec_stub.h"

EXEC_NOT_EMULATED(dma_copy)
EXEC_NOT_EMULATED(dma_transpose)
EXEC_NOT_EMULATED(dma_compute)
EXEC_NOT_EMULATED(dma_trigger)
