/*
 * fabric_base.h: the baseline of the cross-node collectives benchmark: a
 * plain libfabric transfer (tcp provider, reliable datagram endpoint)
 * between two processes on this host, with no emulator in between.
 */
#ifndef TRNEMU_BENCH_FABRIC_BASE_H
#define TRNEMU_BENCH_FABRIC_BASE_H

#include <stdint.h>

/* Seconds to move `bytes` from one process to another (best of `reps`),
 * or a negative value when libfabric cannot be used. */
double fabric_base_transfer(uint64_t bytes, int reps);

#endif
