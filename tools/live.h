/*
 * live.h: what the vendor-style tools (ls -j/-w/-a, monitor, top) read of
 * a live shared instance: its control block, the processes attached to it
 * with their command lines, the VNCs each owns, and the runtime version
 * they report.
 */
#ifndef TRNEMU_TOOLS_LIVE_H
#define TRNEMU_TOOLS_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "devices/machine/instance.h"

/* The runtime version attached processes report (nrt_get_version's
 * rt_major.rt_minor.rt_patch), and what a process that is not a runtime
 * user reports, as neuron-ls prints them. */
extern const char live_runtime_version[];
#define LIVE_NO_RUNTIME "NA"

/* Read the control block of the instance the environment names into c.
 * 1: a live instance, 0: none (or only dead processes), -1: an error
 * already logged (bad name, corrupt control file). */
int live_read(struct instance_ctl *c);

/* The command line of pid, arguments joined by spaces ("" when gone). */
void live_cmdline(int32_t pid, char *buf, size_t cap);

/* Does proc own vnc in c? */
bool live_owns(const struct instance_ctl *c, const struct instance_proc *proc, uint32_t vnc);

/* Does proc own some VNC in [first, first+n)? */
bool live_owns_any(const struct instance_ctl *c, const struct instance_proc *proc,
                   uint32_t first, uint32_t n);

/* This host's online CPUs as ranges, "0-N" (neuron-ls's cpu_affinity). */
void live_cpu_range(char *buf, size_t cap);

/* The host NUMA node that holds the emulated devices' memory, as text
 * (neuron-ls's numa_node): the only node of a one-node host ("0" without
 * NUMA), "-1" when the host has several. */
void live_numa_node(char *buf, size_t cap);

/* The emulated EC2 instance id, "i-" and 17 hex digits: a hash of the
 * instance directory the environment names, so each instance name keeps
 * its own id (there is no EC2 instance to ask). */
void live_instance_id(char *buf, size_t cap);

/* The machine a live instance emulates (its type and LNC, whatever the
 * environment says), into mc; visible VNCs are left empty. */
void live_machine(const struct instance_ctl *c, struct machine_config *mc);

/* Read the instance called name from now on (sets TRNEMU_INSTANCE_NAME);
 * -1 with a log line for a bad name. */
int live_use_instance(const char *name);

/* One live instance found in the shared-memory directory. */
struct live_entry {
    char name[INSTANCE_NAME_MAX + 1]; /* its TRNEMU_INSTANCE_NAME */
    char profile[32];                 /* its instance type */
    uint32_t procs;                   /* live processes attached */
};

/* The live instances in the shared-memory directory the environment
 * names (TRNEMU_SHM_DIR): up to cap into out; returns how many there are. */
uint32_t live_list(struct live_entry *out, uint32_t cap);

/* Print them for a user of `trnemu cmd` (with how to pick one). */
void live_list_print(FILE *out, const char *cmd);

#endif
