/*
 * config.h: what the environment asks trnemu to emulate.
 *
 * Reads TRNEMU_INSTANCE (the profile), NEURON_LOGICAL_NC_CONFIG (LNC size),
 * NEURON_RT_VISIBLE_CORES (a list of ranges such as "0-3,8") and
 * NEURON_RT_NUM_CORES (a count; VISIBLE_CORES wins when both are set),
 * and TRNEMU_THREADS (how many executions compute at once: devices/thread/gate.h;
 * also the thread count an intra-instruction split may use).
 * Pure parsing: it touches no device state, so the VNC-count queries work
 * before nrt_init.
 */
#ifndef TRNEMU_DEVICES_CONFIG_H
#define TRNEMU_DEVICES_CONFIG_H

#include <stdint.h>

#include "devices/config/itype.h"
#include "nrt/nrt_status.h"

/* Upper bound of VNCs in any profile (64 chips x 8 cores at LNC=1). */
#define CONFIG_MAX_VNCS 512
/* Largest TRNEMU_THREADS accepted. */
#define CONFIG_MAX_THREADS 1024

struct machine_config {
    const struct itype *profile; /* the emulated instance type */
    uint32_t lnc;                      /* physical cores per VNC */
    uint32_t total_vncs;               /* VNCs in the whole machine */
    uint32_t vncs_per_chip;            /* VNCs on one chip */
    uint32_t visible_count;            /* VNCs this process may use */
    uint16_t visible[CONFIG_MAX_VNCS]; /* machine-wide VNC id of each local VNC */
    uint32_t threads;                  /* TRNEMU_THREADS: executions computing at once */
};

/* Fill cfg from the environment. NRT_INVALID (with one log line naming the
 * variable) for an unknown profile, an LNC the profile does not accept,
 * a core list that is malformed or out of range, or a thread count that
 * is not 1 to CONFIG_MAX_THREADS. */
NRT_STATUS config_from_env(struct machine_config *cfg);

/* Parse a NEURON_RT_VISIBLE_CORES value against total VNCs; fills cfg's
 * visible list. Exposed for tests. */
NRT_STATUS config_parse_cores(const char *spec, uint32_t total, struct machine_config *cfg);

#endif
