/*
 * exec_int.h: what the files of one execution share (private to
 * devices/runtime/). exec.c (nrt_execute and the status callback) ->
 * exec_request.c (the hand-off to the VNC's worker) -> exec_run.c (one
 * bound run on the cores) -> exec_bind.c (tensors in), exec_standin.c
 * (foreign NEFFs), exec_diag.c (reports of failed runs), exec_bridge.c (the
 * collectives bridge), exec_lnc.c (extra physical cores on helper
 * threads); calls go that way only.
 */
#ifndef TRNEMU_DEVICES_EXEC_INT_H
#define TRNEMU_DEVICES_EXEC_INT_H

#include <stdint.h>

#include "devices/coll/coll.h"
#include "devices/machine/machine.h"
#include "devices/runtime/model.h"
#include "devices/runtime/tensor.h"
#include "devices/thread/worker.h"
#include "emu/core/core_coll.h"
#include "emu/core/core.h"
#include "nrt/nrt.h"

/* ---- exec_bind.c ---- */

/* The caller's tensors bound to a model's I/O, pinned for the execution. */
struct exec_binding {
    uint32_t n;                 /* model I/O tensors */
    struct tensor_view *views;  /* one per neff io entry, in model order */
    nrt_tensor_t **tensors;     /* the caller's tensor handles */
};

/* Look up and pin every I/O tensor of nm; NRT_INVALID (one log line) when
 * one is missing or wrongly sized. */
NRT_STATUS exec_bind(const struct neff_model *nm, const nrt_tensor_set_t *inputs,
                     nrt_tensor_set_t *outputs, struct exec_binding *b);
/* Unpin the first `pinned` views and free the binding's arrays. */
void exec_unbind(struct exec_binding *b, uint32_t pinned);
/* Bind the programs of m to b's tensors (their views, in place) and to the
 * cores of its VNC. */
NRT_STATUS exec_bind_cores(nrt_model_t *m, const struct exec_binding *b, struct core **cores,
                           const struct core_program **progs);

/* ---- exec_run.c ---- */
/* Run options from the environment (NEURON_RT_EXEC_TIMEOUT, the race
 * checker, stochastic rounding); NRT_INVALID when one is malformed. */
NRT_STATUS exec_run_opts(struct core_run_opts *o);

/* ---- exec_standin.c ---- */

/* A vendor-compiled NEFF: refuse, or (TRNEMU_FOREIGN_NEFF=zeros) stand in
 * with zero-filled outputs. */
NRT_STATUS exec_standin(nrt_model_t *m, struct exec_binding *b);

/* ---- exec_diag.c ---- */

/* A failed run's multi-line report: on the VNC's debug stream, and in the
 * log one line per line. */
void exec_diag_report(int vnc, const char *name, NRT_STATUS st, const char *report);
/* A run that an instruction stopped because the shared-memory directory
 * could not back the device memory it touched (emu/core/memfault.h): the
 * report on the debug stream, and one log line naming the instruction
 * (from the report), where the memory was and how full the directory is;
 * the HBM files are mapped again (machine_mem_check). NRT_RESOURCE. */
NRT_STATUS exec_diag_mem_fault(const nrt_model_t *m, uint64_t since, const char *report);
/* NRT_EXEC_COMPLETED_WITH_NUM_ERR when a float output holds a value that
 * NEURON_RT_NUMERICAL_ERRORS_VERBOSITY reports, else NRT_SUCCESS. */
NRT_STATUS exec_diag_numerics(const nrt_model_t *m, const struct exec_binding *b);
/* NEURON_RT_DBG_DUMP_INPUTS_ON_ERR: a failed execution's inputs as .npy. */
void exec_diag_dump_inputs(const nrt_model_t *m, const struct exec_binding *b);

/* ---- exec_bridge.c ---- */

/* The collectives of one execution: what its programs' core_coll points at. */
struct exec_bridge {
    nrt_model_t *m;                /* the model running */
    struct machine *mach;          /* its machine */
    uint64_t deadline_ns;          /* when the execution's time is up */
    struct coll_comm *comm;        /* its communicator, found on first use */
    struct core_lnc lnc;           /* shared by the cores of the run */
    struct core_coll iface[MACHINE_MAX_LNC]; /* one per core */
};

/* Point every program of m at ec (timeout_ms 0: the collectives' default
 * deadline), and back at nothing. */
void exec_bridge_setup(struct exec_bridge *ec, nrt_model_t *m, struct machine *mach,
                       uint64_t timeout_ms);
void exec_bridge_teardown(struct exec_bridge *ec);

/* ---- exec_lnc.c ---- */

/* One physical core of a split execution on one of the VNC's helper
 * workers. */
struct exec_lnc_core {
    struct worker_job job;     /* posted to the helper; ours once worker_wait returned */
    void (*fn)(void *arg);     /* the core's rounds (emu) */
    void *arg;                 /* their argument */
};

/* The helper threads of one execution's physical cores 1.. */
struct exec_lnc {
    struct machine *mach;                      /* the machine */
    uint32_t gvnc;                             /* the VNC whose helpers run them */
    struct exec_lnc_core core[MACHINE_MAX_LNC]; /* cores 1..: their jobs */
    struct core_run_threads threads;           /* what core_run gets to start them */
};

/* What core_run gets to start cores 1.. on the VNC's helpers, or NULL to
 * keep them on the calling thread (TRNEMU_THREADS=1, exec_set_core_threads). */
const struct core_run_threads *exec_lnc_setup(struct exec_lnc *l, struct machine *mach,
                                              uint32_t gvnc);

/* ---- exec_run.c ---- */

/* One run of a bound model on its cores, or its stand-in; callers are in
 * the compute gate and hold the machine's memory lock. */
NRT_STATUS exec_run(nrt_model_t *m, struct exec_binding *b);

#endif
