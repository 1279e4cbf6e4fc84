/*
 * exec_harness.h: a small test bench for instruction semantics: one core,
 * hand-built engine streams, HBM variables backed by test memory, and a
 * run through the real scheduler (core_run).
 */
#ifndef TRNEMU_TESTS_EXEC_HARNESS_H
#define TRNEMU_TESTS_EXEC_HARNESS_H

#include <stdint.h>

#include "emu/core/core.h"

#define HARNESS_MAX_INSNS 256
#define HARNESS_MAX_VARS 16

struct harness {
    struct core *core;                                       /* the core under test */
    struct core_program prog;                                /* what it runs */
    struct isa_insn insns[ISA_ENG_COUNT][HARNESS_MAX_INSNS]; /* streams */
    struct core_var vars[HARNESS_MAX_VARS];                  /* HBM variables, sorted */
    char report[8192];                                       /* core_run's report */
    struct core_run_opts opts;                               /* run options */
};

/* A fresh harness with a NeuronCore of version gen (2 or 3); aborts on failure. */
struct harness *harness_new(uint32_t gen);
void harness_free(struct harness *h);

/* Forget the streams (keep memories and variables). */
void harness_clear(struct harness *h);

/* Append an instruction (defaults filled) to engine e's stream. */
struct isa_insn *harness_add(struct harness *h, enum isa_engine e, unsigned opcode);

/* Declare HBM variable var_id backed by mem[0..size). */
void harness_var(struct harness *h, uint32_t var_id, const char *name, void *mem, uint64_t size);

/* Run the streams; returns core_run's status (report in h->report). */
emu_status harness_run(struct harness *h);

/* Access-pattern builders. dims: pairs {step, count}, outermost first. */
struct isa_ap harness_sbuf(uint32_t part, uint32_t nparts, uint64_t off, uint32_t dtype,
                           uint32_t ndims, const int32_t dims[][2]);
struct isa_ap harness_psum(uint32_t part, uint32_t nparts, uint64_t off, uint32_t dtype,
                           uint32_t ndims, const int32_t dims[][2]);
struct isa_ap harness_hbm(uint32_t var_id, uint64_t off, uint32_t rows, int32_t row_step,
                          uint32_t dtype, uint32_t ndims, const int32_t dims[][2]);
/* Shorthand: a [nparts x n] contiguous tile at partition part, byte offset off. */
struct isa_ap harness_tile(uint8_t mem, uint32_t part, uint32_t nparts, uint64_t off,
                           uint32_t dtype, uint32_t n);

/* Address of byte off of SBUF / PSUM partition p. */
uint8_t *harness_sbuf_ptr(struct harness *h, uint32_t p, uint64_t off);
uint8_t *harness_psum_ptr(struct harness *h, uint32_t p, uint64_t off);

#endif
