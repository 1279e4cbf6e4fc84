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

#ifdef __cplusplus
}
#endif
#include "trnemu/trnemu_build.h"
