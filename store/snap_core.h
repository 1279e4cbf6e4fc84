/*
 * snap_core.h: the registers of one NeuronCore as a snapshot blob (the
 * `state` column of the core table): semaphores, events, engine
 * registers, random state, accumulators and stochastic-rounding streams.
 * SBUF and PSUM are saved as memory regions, not here.
 *
 * Layout (little-endian): "TCS1", then u32 counts (semaphores, events,
 * engines, registers per engine, partitions), then the arrays in that
 * order: sem u32, event u32, reg i64 [engine][reg], rng_seed u64,
 * rng_counter u64 [engine], acc f32 [engine][partition], stochastic u8,
 * and per engine the rounding stream: mode u32, saturate u8, seed u64,
 * index u64.
 */
#ifndef TRNEMU_STORE_SNAP_CORE_H
#define TRNEMU_STORE_SNAP_CORE_H

#include <stddef.h>
#include <stdint.h>

#include "emu/core/core.h"
#include "nrt/nrt_status.h"

/* Bytes of the blob of this build. */
size_t snap_core_blob_size(void);
/* Write the blob of c into out (snap_core_blob_size() bytes). */
void snap_core_blob_write(const struct core *c, uint8_t *out);
/* Load a blob into c; NRT_INVALID when its size or counts differ (no log). */
NRT_STATUS snap_core_blob_read(struct core *c, const uint8_t *p, size_t len);

#endif
