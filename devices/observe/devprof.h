/*
 * devprof.h: device profiles: the estimated device-time timeline of
 * executions (emu/core/cost.h) written as Chrome/Perfetto trace JSON.
 *
 * Sessions choose which executions they keep: nrt_profile_start (one
 * model, one file), the continuous profile (every model, saved per VNC
 * into a directory), inspect (every model, into its output directory) and
 * TRNEMU_PROFILE=FILE (every execution of the process, written at
 * nrt_close with a per-engine summary on stderr; `trnemu profile`).
 * While no session is active executions record nothing but their total.
 * The trace format is docs/profile.md.
 */
#ifndef TRNEMU_DEVICES_DEVPROF_H
#define TRNEMU_DEVICES_DEVPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/core/cost.h"
#include "nrt/nrt.h"

/* Spans an execution may record (beyond: counted as dropped). */
#define DEVPROF_MAX_SPANS (1u << 20)

/* The model an execution ran, as a profile reports it (handed in by the
 * runtime, which owns the model). */
struct devprof_model {
    uint32_t id;       /* load number in this process */
    int vnc;           /* process-local VNC */
    const char *name;  /* the NEFF's name */
};

/* Does an execution of model model_id want its spans recorded? */
bool devprof_wanted(uint32_t model_id);
/* The calling thread's span buffer, DEVPROF_MAX_SPANS entries: mapped
 * once per thread (pages come on first use and stay for the next
 * execution), unmapped when the thread ends. NULL when out of memory. */
struct cost_span *devprof_span_buffer(void);
/* Keep one finished execution (spans may be NULL when none was wanted). */
void devprof_exec(const struct devprof_model *m, const struct cost_run *r, NRT_STATUS st);

/* nrt_profile_start / _stop. */
NRT_STATUS devprof_model_start(uint32_t model_id, const char *filename);
NRT_STATUS devprof_model_stop(const char *filename);
/* The continuous profile: start, save the executions of vnc so far into
 * dir/profile-vnc<V>-<N>.json, stop. */
NRT_STATUS devprof_continuous_start(const char *dir);
NRT_STATUS devprof_continuous_save(uint32_t vnc, const char *dir);
NRT_STATUS devprof_continuous_stop(void);
/* Inspect's device profiles: every execution into dir (on_fail_only:
 * only failed executions, each in its own file). */
void devprof_inspect_start(const char *dir, bool all, bool on_fail);
NRT_STATUS devprof_inspect_stop(void);

/* Write every execution since rt_init to file and print the summary
 * (TRNEMU_PROFILE; called by rt_init and rt_close). */
void devprof_env_start(void);
void devprof_env_finish(void);
/* Forget everything (rt_close, after the env profile was written). */
void devprof_reset(void);

#endif
