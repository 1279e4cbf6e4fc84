/*
 * memfault.h: device memory that the host could not back, noted on the
 * host thread that touched it.
 *
 * Whoever provides the memory behind device addresses (the runtime maps
 * HBM from sparse files) may find, in the middle of an instruction, that a
 * page cannot be had (a full file system): it then calls memfault_note()
 * on the thread that touched the page, from a signal handler if need be.
 * That counts the fault in the process and raises the thread's flag. The
 * scheduler reads the process's count before and after each instruction
 * (one relaxed load each: cheap enough for every instruction) and, only
 * when it moved, takes the thread's flag: when it was raised, the run
 * stops at that instruction with EMU_RESOURCE and MEMFAULT_CAUSE, so that
 * the failure report names it. Parts of an instruction that ran on helper
 * threads (par.h) hand their flags to the thread that split it. A flag
 * raised outside any instruction (a tensor write) is taken by whoever
 * reports that fault, so that it never stops a later instruction.
 */
#ifndef TRNEMU_EMU_MEMFAULT_H
#define TRNEMU_EMU_MEMFAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* The cause an instruction stopped by a fault is reported with. */
#define MEMFAULT_CAUSE "the host could not back the device memory the instruction touched"

/* Faults noted in this process (memfault_note); read it with memfault_total. */
extern _Atomic uint64_t memfault_all;

static inline uint64_t memfault_total(void)
{
    return atomic_load_explicit(&memfault_all, memory_order_relaxed);
}

/* Note one fault on the calling thread; async-signal-safe. */
void memfault_note(void);
/* Was the calling thread's flag raised? Lowers it. */
bool memfault_take(void);
/* Raise the calling thread's flag: a helper met a fault for it. */
void memfault_pass(void);

#endif
