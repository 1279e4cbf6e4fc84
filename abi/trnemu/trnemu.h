/*
 * trnemu.h: trnemu's own extensions to the Neuron Runtime API.
 *
 * Everything here is prefixed trnemu_ and exported by trnemu's
 * libnrt.so.1 only; a program that uses it does not run on the vendor
 * runtime, so guard such calls (e.g. look the symbol up with dlsym).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What trnemu emulates, as configured by the environment. */
typedef struct trnemu_machine_info {
    char instance_type[32];      /* e.g. "trn2.48xlarge" */
    char chip_name[32];          /* e.g. "Trainium2" */
    uint32_t chips;              /* Neuron devices */
    uint32_t cores_per_chip;     /* physical NeuronCores per device */
    uint32_t nc_generation;      /* NeuronCore version: 2 or 3 */
    uint32_t lnc;                /* physical cores per logical core (VNC) */
    uint32_t total_vncs;         /* VNCs in the machine */
    uint32_t visible_vncs;       /* VNCs this process may use */
    uint32_t hbm_stacks;         /* HBM stacks per device */
    uint32_t reserved;           /* zero */
    uint64_t hbm_bytes_per_chip; /* HBM per device in bytes */
} trnemu_machine_info_t;

/* Describe the emulated machine. Works before nrt_init. size is the
 * caller's sizeof(trnemu_machine_info_t); a smaller struct gets a prefix.
 * NRT_INVALID for a NULL info, a zero size, or a bad configuration. */
NRT_STATUS trnemu_get_machine_info(trnemu_machine_info_t *info, size_t size);

/* trnemu's own version string, e.g. "0.1.0"; never NULL. */
const char *trnemu_version(void);

/* Start keeping the runtime's log lines instead of printing them: until
 * trnemu_log_tap_end, every line that would go to stderr, from any thread,
 * is kept in a buffer (lines sent elsewhere by NEURON_RT_LOG_LOCATION
 * still go there). One tap at a time per process: the caller serialises
 * the begin..end pairs. The buffer holds 1 MiB; later lines are printed. */
void trnemu_log_tap_begin(void);

/* End the tap: *text (text may be NULL) receives the kept lines
 * (NUL-terminated, each with its newline; valid until the next
 * trnemu_log_tap_begin), the return value their length. The caller
 * prints them if they are to be seen. */
size_t trnemu_log_tap_end(const char **text);

/* Save the whole device state (HBM, tensors, tensor sets, models, cores)
 * as a new snapshot in the SQLite file at path (created when missing; see
 * docs/snapshot.md). reason is free text shown by `trnemu snapshot list`
 * (NULL: "api"). Executions are held off during the save. *id (may be
 * NULL) receives the snapshot id. NRT_FAILURE or NRT_RESOURCE with a log
 * line when the file cannot be written (read-only, disk full); the
 * running program is unaffected. */
NRT_STATUS trnemu_snapshot_save(const char *path, const char *reason, int64_t *id);

/* Restore snapshot id (< 0: the newest) of the file into the runtime,
 * which must be fresh: right after nrt_init, with the same instance type,
 * LNC and visible cores as the saving process. TRNEMU_RESTORE=FILE[@ID]
 * does the same inside nrt_init. NRT_INVALID with a log line for a bad
 * file or a configuration that differs. */
NRT_STATUS trnemu_snapshot_restore(const char *path, int64_t id);

/* After a restore: the object (nrt_tensor_t *, nrt_tensor_set_t * or
 * nrt_model_t *) that had the pointer value old_handle in the saving
 * process; NULL when there is none (or it has been freed since). */
void *trnemu_snapshot_lookup(uint64_t old_handle);

/* Variable-size collectives from the host, outside any NEFF (the vendor
 * runtime runs AllToAllV / AllGatherV inside compiled models, but has no
 * host entry point or nrt_cc_op_type_t value for them). Arguments as
 * nrt_all_gather's: vnc the caller's VNC, g_device_id / g_device_count its
 * rank and the number of ranks; every rank calls.
 *
 * A layout is 2 x g_device_count uint64 entries: block sizes in bytes
 * (entry r for rank r), then block offsets in bytes. A buffer must hold
 * every block of its layout (trnemu_coll_v_extent bytes).
 *
 * trnemu_all_to_all_v: block r of send_layout (in input) goes to rank r;
 * block s of recv_layout (in output) receives rank s's block.
 * trnemu_all_gather_v: the whole input (input_size bytes) goes to every
 * rank; block s of recv_layout receives rank s's.
 * A receive block's size must equal what its sender sends. Output bytes no
 * block covers keep their value; input and output may overlap.
 * NRT_INVALID with one log line on every rank when a sender's size differs
 * from its receiver's (no data moves then, and the ranks may go on); other
 * statuses as nrt_all_gather's. */
NRT_STATUS trnemu_all_to_all_v(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
                               const void *input, const uint64_t *send_layout, void *output,
                               const uint64_t *recv_layout);
NRT_STATUS trnemu_all_gather_v(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
                               const void *input, uint64_t input_size, void *output,
                               const uint64_t *recv_layout);

/* Bytes a buffer needs for a layout of n blocks: the largest offset + size
 * (0 for NULL; UINT64_MAX when one overflows). */
static inline uint64_t trnemu_coll_v_extent(const uint64_t *layout, uint32_t n)
{
    uint64_t end = 0;
    for (uint32_t r = 0; layout != NULL && r < n; r++) {
        uint64_t e = layout[n + r] + layout[r];
        if (e < layout[r])
            return UINT64_MAX;
        end = e > end ? e : end;
    }
    return end;
}

#ifdef __cplusplus
}
#endif
#include "trnemu/trnemu_build.h"
