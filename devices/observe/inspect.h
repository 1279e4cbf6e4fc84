/*
 * inspect.h: inspect (nrt_inspect_*, NEURON_RT_INSPECT_*): a system trace
 * capture and device profiles of every execution, written into an output
 * directory when inspect stops (system-trace.json, device-profile.json),
 * and, with on-failure capture, a device profile of each failed execution
 * at once. Also the continuous-profile options object.
 */
#ifndef TRNEMU_DEVICES_INSPECT_H
#define TRNEMU_DEVICES_INSPECT_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/observe/systrace.h"
#include "nrt/nrt_profile.h"

/* What inspect's activities are called (nrt_inspect_config_*_activity*). */
enum inspect_activity {
    INSPECT_SYSTEM_PROFILE = 0,  /* the system trace */
    INSPECT_DEVICE_PROFILE = 1,  /* device profiles of the executions */
    INSPECT_ACTIVITY_COUNT = 2,
};

struct nrt_inspect_config {
    char output_dir[4096];          /* where the files go */
    int session_id;                 /* names the session's files */
    bool enable_inspect;            /* capture everything */
    bool enable_on_fail;            /* write failed executions' profiles */
    bool activity[INSPECT_ACTIVITY_COUNT]; /* which activities run */
    nrt_sys_trace_config_t trace;   /* the system trace options */
};

struct nrt_profile_continuous_options {
    char output_dir[4096];          /* where nrt_profile_continuous_save writes */
};

const char *inspect_activity_name(enum inspect_activity a);
int inspect_activity_of(const char *name);

/* Defaults, then the NEURON_RT_INSPECT_* variables. */
void inspect_config_defaults(nrt_inspect_config_t *c);
/* The defaults without the environment (nrt_inspect_begin_with_options
 * with NULL): ./output, inspect on, the system profile only. */
void inspect_config_builtin(nrt_inspect_config_t *c);
NRT_STATUS inspect_begin(const nrt_inspect_config_t *c);
NRT_STATUS inspect_stop(void);
/* rt_init: begin when NEURON_RT_INSPECT_ENABLE=1; rt_close: stop. */
void inspect_env_start(void);
bool inspect_running(void);

#endif
