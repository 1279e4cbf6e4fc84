/*
 * core_state.h: a core's state as bytes, for snapshots: semaphores,
 * events, engine registers, random state, accumulators and the stochastic
 * rounding streams. SBUF and PSUM are memories the caller saves as it
 * likes (core->sbuf, core->psum); what is fixed at creation (gen, sizes)
 * or host-side (scratch rows, race checker) is not state.
 *
 * emu owns the layout; the store keeps the bytes opaque. Version 2
 * (little-endian): "TCS2" (the version is the magic's last byte), then u32
 * counts (semaphores, events, engines, registers per engine, partitions),
 * then the arrays in that order: sem u32, event u32, reg i64
 * [engine][reg], rng_seed u64, the XORWOW states u32 [2 engines: Vector,
 * GpSimd][partition][4][6], acc f32
 * [engine][partition], stochastic u8, XORWOW seeded u8 [2], and per
 * engine the rounding stream: mode u32, saturate u8, seed u64, index u64.
 *
 * core_state.c lists every field of struct core with what a snapshot does
 * with it; a static_assert fails the build when a field is added to the
 * struct without being listed there.
 */
#ifndef TRNEMU_EMU_CORE_STATE_H
#define TRNEMU_EMU_CORE_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "emu/core/core.h"
#include "emu/status.h"

#define CORE_STATE_VERSION 1  /* layout written by core_state_save */

/* Bytes of the state of this build. */
size_t core_state_size(void);
/* Write c's state into out (core_state_size() bytes). */
void core_state_save(const struct core *c, uint8_t *out);
/* Load a state into c; EMU_INVALID (no log, c unchanged) when its version,
 * size or counts differ or a value is out of range. */
emu_status core_state_load(struct core *c, const uint8_t *p, size_t len);

#endif
