/*
 * dma_desc.h: running the NEFF DMA descriptors of an engine's JSON list
 * (internal to emu/; the dma_trigger instruction calls it).
 */
#ifndef TRNEMU_EMU_DMA_DESC_H
#define TRNEMU_EMU_DMA_DESC_H

#include <stdint.h>

#include "emu/core/core.h"

/* Run, in list order, every descriptor of the current engine whose id is
 * id; each increments its semaphore and sets its event when done.
 * EMU_EXEC_ERR when none matches or a descriptor is
 * malformed, EMU_EXEC_OOB when one leaves its variable. */
emu_status dma_desc_trigger(struct isa_exec_ctx *ctx, uint32_t id);

#endif
