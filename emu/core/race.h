/*
 * race.h: the race checker (TRNEMU_RACECHECK=1).
 *
 * Engines of a NeuronCore run concurrently on hardware and are ordered
 * only by semaphores and events. The checker keeps a vector clock per
 * engine; a signal publishes the signaller's clock on the semaphore, a
 * satisfied wait joins it into the waiter's. Every SBUF/PSUM access is
 * remembered with the clock of the engine that made it; an access that
 * overlaps an earlier one of another engine, at least one of them a
 * write, with no clock ordering between them, is a race: the emulator's
 * fixed interleaving would hide it, real hardware would not. Overlap is
 * judged on the partition and byte ranges each pattern spans.
 *
 * In a run of several cores (the physical cores of an LNC=2 logical
 * core) HBM is shared: the HBM operands of every instruction are checked
 * against those of the other cores, on the bytes they touch (race_hbm.c),
 * and the clocks are joined where the cores meet: core_barrier, sendrecv
 * and the cross-rank collectives (race_xcore.c). A DMA's access counts
 * when it completes: trnemu's DMA instructions finish their transfer
 * within the instruction, so the access carries the clock after the
 * instruction's waits, and the signals it raises at completion publish it.
 * Two accesses of which the write leaves the bytes they share as they
 * were (both cores zeroing one output) end the same in either order and
 * are not reported.
 */
#ifndef TRNEMU_EMU_RACE_H
#define TRNEMU_EMU_RACE_H

#include <stddef.h>
#include <stdint.h>

#include "emu/core/core.h"

struct race_state;

/* State for ncores cores; NULL-safe destroy. */
emu_status race_create(uint32_t ncores, struct race_state **out);
void race_destroy(struct race_state *r);

/* The waits of insn hold and it is about to run on (core, eng). */
void race_on_wait(struct race_state *r, uint32_t core, enum isa_engine eng,
                  const struct isa_insn *insn);
/* Instruction pc of engine eng of core c is about to run (its waits
 * hold): in a run of several cores, list the bytes an indexed DMA side
 * will touch (its index is read now) and keep the bytes its HBM writes
 * span, so that a write that changes nothing is told apart. */
void race_before(struct race_state *r, struct core *c, enum isa_engine eng,
                 const struct core_program *prog, size_t pc);
/* insn of (core, eng) waits for another core (core_barrier, sendrecv) and
 * will be tried again; its own waits hold. */
void race_on_blocked(struct race_state *r, uint32_t core, enum isa_engine eng,
                     const struct isa_insn *insn);
/* (core, eng) applied signal s. */
void race_on_signal(struct race_state *r, uint32_t core, enum isa_engine eng,
                    const struct isa_sync *s);
/* Instruction pc of (core, eng) ran: check and record its accesses (its
 * on-chip operands as live, the instruction with its run-time offsets
 * applied: their actual bytes). EMU_EXEC_ERR with both instructions
 * described in report when it races with an earlier access. */
emu_status race_observe(struct race_state *r, uint32_t core, enum isa_engine eng,
                        const struct core_program *prog, size_t pc, const struct isa_insn *live,
                        char *report, size_t cap);
/* The run ended: EMU_EXEC_ERR with both instructions described in report
 * when two unordered writes of different cores left bytes that the other
 * order would leave otherwise (race_ww.c). */
emu_status race_finish(struct race_state *r, char *report, size_t cap);

#endif
