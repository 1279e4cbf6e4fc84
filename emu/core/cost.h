/*
 * cost.h: the device-time cost model of trnemu's NeuronCores.
 *
 * Every instruction gets an estimated duration on the emulated NeuronCore
 * generation (one table per generation, cost.c, docs/cost-model.md), and
 * the program's semaphore graph runs as a discrete-event schedule along
 * the functional run: an instruction starts when its engine is free and
 * the semaphores it waits on were signalled, ends after its duration, and
 * stamps its signals with its end. DMA instructions occupy their issuing
 * engine for an issue cost only; the transfer is queued on the issuing
 * engine's DMA queue, split by partitions over the core's DMA engines
 * (shared by every queue, served in turn), each no faster than its
 * share of the core's HBM bandwidth, and it signals when its last engine is done (a queue's
 * transfers complete in order). The estimate never changes results.
 *
 * A run can also record each instruction's span (for profiles): the
 * caller gives a span buffer; when it fills, later spans are counted but
 * not kept.
 */
#ifndef TRNEMU_EMU_CORE_COST_H
#define TRNEMU_EMU_CORE_COST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/isa/isa.h"

/* At most this many cores in one run (core_run's limit). */
#define COST_MAX_CORES 4

/* Semaphores per core whose signals are remembered (the first ones
 * signalled), and how many of their latest signals each keeps: a wait for
 * a count is satisfied when the count was reached, not at the latest
 * signal (the functional run may let a producer run far ahead). */
#define COST_SEM_TRACK 8
#define COST_SEM_HIST 512

/* The signal history of one tracked semaphore. */
struct cost_sem_track {
    uint16_t id;      /* the semaphore */
    bool used;        /* slot in use */
    uint32_t value;   /* its value as the signals left it (from 0) */
    uint64_t n;       /* signals seen; the latest min(n, COST_SEM_HIST) are kept */
};

/* DMA engines of one NeuronCore (the same on v2, v3 and v4). */
#define COST_DMA_ENGINES 16

/* Lanes of a span: the five engines, then each engine's DMA queue. */
#define COST_LANE_DMA(eng) (ISA_ENG_COUNT + (eng))
#define COST_LANES (2 * ISA_ENG_COUNT)

/* One generation's figures (cost.c has the tables and their sources). */
struct cost_table {
    uint32_t gen;                        /* NeuronCore version: 2, 3 or 4 */
    const char *name;                    /* "NeuronCore-v2" ... */
    double clock_ghz[ISA_ENG_COUNT];     /* engine clocks */
    double elems_per_cycle[ISA_ENG_COUNT]; /* per partition lane, 32-bit data */
    double dve_16bit_speedup;            /* Vector: factor for bf16/fp16 operands */
    uint32_t access_cycles;              /* static overhead of each instruction */
    double pe_fp32_slowdown;             /* Tensor: cycles per column of fp32 input */
    double dma_fixed_ns;                 /* trigger-to-start latency of a transfer (overlaps) */
    double dma_engine_bytes_per_ns;      /* one DMA engine's peak */
    uint32_t dma_engines;                /* DMA engines per NeuronCore */
    uint32_t dma_issue_cycles;           /* issuing engine's cost of a DMA instruction */
    double dma_buffer_ns;                /* a DMA engine's cost per DMA buffer (contiguous run) */
    uint32_t dma_parts_per_engine;       /* SBUF partitions one DMA engine serves */
    double hbm_bytes_per_ns;             /* one core's share of the chip's HBM bandwidth */
};

/* The table of a generation (2, 3 or 4); NULL for an unknown one. */
const struct cost_table *cost_table_for(uint32_t gen);

/* One instruction's span in device time. */
struct cost_span {
    uint32_t core;            /* index among the run's cores */
    uint8_t lane;             /* engine, or COST_LANE_DMA(engine) */
    uint8_t opcode;           /* enum isa_opcode */
    uint32_t pc;              /* instruction index in its engine stream */
    double start_ns;          /* when it started */
    double end_ns;            /* when it ended */
    double wait_ns;           /* time its engine sat idle waiting on semaphores before it */
};

/* The schedule of one execution. */
struct cost_run {
    const struct cost_table *t;                          /* the generation's figures */
    double eng_free[COST_MAX_CORES][ISA_ENG_COUNT];      /* when each engine is next free */
    double dma_free[COST_MAX_CORES][ISA_ENG_COUNT];      /* last completion on each DMA queue */
    double dma_eng_free[COST_MAX_CORES][COST_DMA_ENGINES]; /* when each DMA engine's booked work ends */
    double dma_q_eng[COST_MAX_CORES][ISA_ENG_COUNT][COST_DMA_ENGINES]; /* each queue's last end on each engine */
    double sem_at[COST_MAX_CORES][ISA_NUM_SEMS];         /* last signal of each semaphore */
    double event_at[COST_MAX_CORES][ISA_NUM_EVENTS];     /* last signal of each event */
    double busy[COST_MAX_CORES][COST_LANES];             /* busy time per lane */
    double end_ns;                                       /* the latest end so far */
    uint64_t insns;                                      /* instructions costed */
    double flops;                                        /* floating-point operations of the
                                                            Tensor engine's matmuls */
    struct cost_span *spans;                             /* caller's buffer, or NULL */
    size_t span_cap;                                     /* its entries */
    size_t nspans;                                       /* spans recorded (<= span_cap) */
    uint64_t spans_dropped;                              /* spans beyond span_cap */
    struct cost_sem_track track[COST_MAX_CORES][COST_SEM_TRACK]; /* tracked semaphores */
    /* Their histories (value after each signal, and its time): written
     * before they are read, so cost_begin leaves them as they are. */
    uint32_t hist_val[COST_MAX_CORES][COST_SEM_TRACK][COST_SEM_HIST];
    double hist_at[COST_MAX_CORES][COST_SEM_TRACK][COST_SEM_HIST];
};

/* Start a run on generation gen (an unknown one uses the closest table);
 * spans may be NULL. */
void cost_begin(struct cost_run *r, uint32_t gen, struct cost_span *spans, size_t span_cap);

/* Cost one executed instruction of engine eng of core `core`; returns the
 * device time at which its signals fire. */
double cost_insn(struct cost_run *r, uint32_t core, enum isa_engine eng, size_t pc,
                 const struct isa_insn *insn);

/* Stamp one signal of an instruction that completes at t. */
void cost_signal(struct cost_run *r, uint32_t core, const struct isa_sync *s, double t);

/* Fold into r what core `core` added to `from`, a copy of r taken when the
 * run began that only that core used (a core on its own host thread, no
 * spans): its engines', queues' and semaphores' times, its busy time, its
 * instructions and the latest end. Every core's times depend on its own
 * instructions only, so the result is the one a single shared schedule
 * gives. */
void cost_merge_core(struct cost_run *r, const struct cost_run *from, uint32_t core);

/* Estimated duration of one instruction alone (no waits), in ns, and for
 * DMA instructions the transfer's time alone (latency and engines) in
 * *dma_ns (0 else). */
double cost_duration(const struct cost_table *t, const struct isa_insn *insn, double *dma_ns);

/* The shape of one DMA transfer as the engines see it. */
struct cost_dma_shape {
    uint64_t bytes;         /* bytes moved */
    uint32_t parts;         /* partitions (rows of the outer dimension) */
    uint32_t first_part;    /* first SBUF partition (0 when neither side is on chip) */
    uint64_t buffers;       /* DMA buffers: contiguous runs on both sides */
    bool hbm;               /* a side is in HBM */
};

/* The shape of a DMA instruction's transfer. */
void cost_dma_shape(const struct isa_insn *insn, struct cost_dma_shape *sh);

#endif
