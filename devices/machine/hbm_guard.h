/*
 * hbm_guard.h: a failed first touch of a sparse HBM page turned into a
 * status instead of a signal.
 *
 * HBM is a sparse shared file (machine.h): the first write (or read) of a
 * page asks the file system for it, and when the shared-memory directory
 * is full the kernel answers with SIGBUS, which would kill the process.
 * The guard catches a SIGBUS inside a registered HBM mapping, puts a
 * private zero page in the place of the one that could not be backed (the
 * instruction that touched it then completes on throw-away memory), and
 * counts the fault, in this process and on the faulting thread (an
 * instruction of an execution then stops there: emu/core/memfault.h). A
 * call that touched HBM compares the process's count before and
 * after (machine_mem_check): when it moved, the call fails with
 * NRT_RESOURCE and the shared file is mapped again over the region, so
 * that the next touch asks the file system afresh. A SIGBUS anywhere else
 * goes to the handler that was there before (by default: the process
 * dies, as without the guard).
 */
#ifndef TRNEMU_DEVICES_HBM_GUARD_H
#define TRNEMU_DEVICES_HBM_GUARD_H

#include <stdbool.h>
#include <stdint.h>

/* Regions the guard watches at once (a chip's HBM is one). */
#define HBM_GUARD_MAX 128

/* Watch [base, base+size), the mapping of fd from offset 0 (the guard
 * keeps its own copy of fd, to map it again); installs the handler on
 * first use. false (logged) when the table is full or fd cannot be kept. */
bool hbm_guard_add(uint8_t *base, uint64_t size, int fd);
/* Stop watching the region at base (before it is unmapped). */
void hbm_guard_remove(uint8_t *base);
/* Faults caught so far in this process. */
uint64_t hbm_guard_faults(void);
/* When faults were caught since `since`: map the shared files again over
 * every region that took one, store the address of the last fault in
 * *addr and return true. */
bool hbm_guard_heal(uint64_t since, uintptr_t *addr);

#endif
