/*
 * model.h: loaded models (nrt_model_t): a NEFF's metadata, its variables
 * placed in emulated HBM, and its decoded instruction streams.
 *
 * Loading reads the container and metadata (emu/neff_*), places `file`
 * constants, private scratch (`tmp-buf`), the scratchpad of `virtual`
 * variables and `pointer` / `dge-table` cells in the HBM stack of the VNC,
 * and decodes each engine stream of a trnemu NEFF once. A NEFF without
 * trnemu's ISA marker (a vendor-compiled one) loads for its metadata; it
 * cannot be executed. Inputs and outputs are bound at execution time.
 */
#ifndef TRNEMU_DEVICES_MODEL_H
#define TRNEMU_DEVICES_MODEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/machine/machine.h"
#include "emu/core/core.h"
#include "emu/isa/isa.h"
#include "emu/neff/neff_model.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

/* Where one variable of a subgraph lives once loaded. */
struct model_var {
    uint8_t *va;             /* host address of byte 0; NULL for I/O and SBUF vars */
    uint64_t size;           /* bytes */
    uint64_t dev_addr;       /* emulated device address (chip-relative), 0 if none */
    bool owns_block;         /* block below belongs to this variable */
    struct hbm_block block;  /* its HBM allocation when owns_block */
};

/* One subgraph, loaded onto one physical NeuronCore of the VNC. */
struct model_sg {
    const struct neff_subgraph *sg;         /* metadata (owned by the model) */
    struct model_var *vars;                 /* one per sg->vars entry */
    struct isa_insn *code[ISA_ENG_COUNT];   /* decoded streams (trnemu NEFFs) */
    size_t ncode[ISA_ENG_COUNT];            /* instructions per stream */
    struct core_program prog;               /* what the core runs (I/O bound per execution) */
    struct core_var *cvars;                 /* prog.vars: sorted by var_id */
    struct core_var *cvar_index;            /* prog.var_by_index: by neff var index */
    uint32_t *io_of_var;                    /* neff io index of each var, UINT32_MAX if none */
};

struct nrt_model {
    int vnc;                      /* process-local VNC */
    uint32_t gvnc;                /* machine-wide VNC */
    struct neff_model *neff;      /* metadata; owns strings and constants */
    bool runnable;                /* carries trnemu's ISA */
    atomic_bool stand_in_warned;  /* foreign: the stand-in warning was logged */
    bool use_counted;             /* counted in the instance's per-VNC use table */
    struct model_sg *sgs;         /* neff->n_sgs entries */
    uint32_t nsgs;                /* subgraphs */
    bool has_scratch;             /* scratch below is allocated */
    struct hbm_block scratch;     /* backing of the `virtual` variables */
    uint64_t hbm_bytes;           /* device memory the model holds */
    _Atomic uint64_t executions;  /* completed executions */
    _Atomic uint32_t refs;        /* the registry's reference plus pins */
    uint32_t id;                  /* load number in this process (async callbacks) */
    _Atomic uint64_t device_ns_last; /* estimated device time of the last execution (ns) */
    _Atomic uint64_t device_ns_total; /* and of all of them */
    /* snapshots (devices/runtime/state.c): */
    void *neff_bytes;             /* copy of the NEFF it was loaded from */
    size_t neff_size;             /* bytes in neff_bytes */
    const struct hbm_block *plan; /* restore: the blocks to take, in load order; else NULL */
    size_t nplan;                 /* entries in plan */
    size_t plan_used;             /* plan entries taken so far */
    /* collectives (devices/coll/coll.h, exec_bridge.c): */
    uint32_t cc_rank;             /* nrt_load_collectives: this worker's rank */
    uint32_t cc_world;            /* and the ranks of the job; 0 after nrt_load */
    void *cc_stage[8];            /* staging of collective operands, by slot */
    uint64_t cc_stage_cap[8];     /* bytes of each */
};

/* Load a NEFF onto a process-local VNC (-1: the first VNC without a
 * model). NRT_INVALID for a bad NEFF, NRT_RESOURCE when HBM is full,
 * NRT_LOAD_NOT_ENOUGH_NC when no VNC is free, NRT_UNSUPPORTED_NEFF_VERSION
 * for a newer format. Callers hold rt_enter(). */
NRT_STATUS model_load(const void *bytes, size_t size, int32_t vnc, nrt_model_t **out);
/* model_load that takes its HBM blocks at the given places instead of
 * allocating (a snapshot restore): plan lists them in load order, as
 * model_blocks reported them. NRT_INVALID when the plan does not fit. */
NRT_STATUS model_load_placed(const void *bytes, size_t size, int32_t vnc,
                             const struct hbm_block *plan, size_t nplan, nrt_model_t **out);
/* The model's HBM blocks in load order (scratch, then each subgraph's
 * variables); returns the count, filling at most cap entries. */
size_t model_blocks(const nrt_model_t *m, struct hbm_block *out, size_t cap);
/* Unload a live model; NRT_INVALID when m is not one. */
NRT_STATUS model_unload(nrt_model_t *m);
/* Pin a live model so that it outlives a concurrent unload; NRT_INVALID
 * (one log line) when m is not a live model. */
NRT_STATUS model_pin(const nrt_model_t *m);
void model_unpin(nrt_model_t *m);

/* The I/O tensors as the vendor API describes them (one malloc'd block,
 * freed by model_free_tensor_info). */
NRT_STATUS model_tensor_info(const nrt_model_t *m, nrt_tensor_info_array_t **out);
/* NRT_INVALID (one log line) for a pointer it did not hand out. */
NRT_STATUS model_free_tensor_info(nrt_tensor_info_array_t *info);

struct tensor_view;

/* Before an execution: point the program's input/output variables at the
 * bound tensors (io, one view per neff io entry) and its state-buffer
 * variables at core's SBUF. The caller is the VNC's one running execution
 * (on its worker, or on a caller in the worker's place: exec_request.c). */
void model_bind_program(struct model_sg *ms, const struct tensor_view *io, struct core *core);

/* Record that m was loaded by nrt_load_collectives as rank of world. */
void model_set_collectives(nrt_model_t *m, uint32_t rank, uint32_t world);

/* Unload every model (nrt_close), and leave the collective communicators. */
void model_destroy_all(void);

#endif
