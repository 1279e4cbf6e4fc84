/*
 * nrt_profile.h: profiling: per-model device profiles (NTFF files),
 * continuous device profiling, and "inspect" sessions that capture system
 * and device profiles together.
 *
 * trnemu's copy of the vendor header: same prototypes and names; comments
 * in trnemu's own words. Calls return NRT_SUCCESS on success and another
 * NRT_STATUS code on failure unless noted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Turn on profiling of a model; the profile will be written to filename
 * by nrt_profile_stop(). */
NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename);

/* Turn profiling off and save the collected NTFF profile to filename. */
NRT_STATUS nrt_profile_stop(const char *filename);

/* Opaque options of continuous profiling; create with
 * nrt_profile_continuous_options_allocate() (output dir "./output"). */
typedef struct nrt_profile_continuous_options nrt_profile_continuous_options_t;

/* Create an options object with every option at its default. */
NRT_STATUS nrt_profile_continuous_options_allocate(nrt_profile_continuous_options_t **options);

/* Free an options object. */
NRT_STATUS nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options);

/* Set the directory profiles are saved to; file names are chosen automatically. */
NRT_STATUS nrt_profile_continuous_options_set_output_dir(nrt_profile_continuous_options_t *options, const char *output_dir);

/* Profile every model continuously, saving only when
 * nrt_profile_continuous_save() asks. Not started if inspect profiling or
 * async execution is already on. */
NRT_STATUS nrt_profile_continuous_start(nrt_profile_continuous_options_t *options);

/* Save the profile of the latest model run on VNC vnc to the options'
 * directory under a fresh name; profiling continues. */
NRT_STATUS nrt_profile_continuous_save(uint32_t vnc, nrt_profile_continuous_options_t *options);

/* Stop continuous profiling without saving anything. */
NRT_STATUS nrt_profile_continuous_stop(void);

/* Start an inspect session configured by the NEURON_RT_INSPECT_*
 * environment variables (ENABLE, OUTPUT_DIR, SYSTEM_PROFILE,
 * DEVICE_PROFILE, ON_FAIL). */
NRT_STATUS nrt_inspect_begin(void);

/* End the inspect session and write the captured profiles. */
NRT_STATUS nrt_inspect_stop(void);

/* Opaque options of nrt_inspect_begin_with_options(). */
typedef struct nrt_inspect_config nrt_inspect_config_t;

/* Create an inspect options object with every option at its default. */
NRT_STATUS nrt_inspect_config_allocate(nrt_inspect_config_t **options);

/* Reset options to the defaults (session 1, "./output", all activity
 * types, all NeuronCores and event types, inspect and inspect-on-failure
 * off); environment variables are not consulted. */
NRT_STATUS nrt_inspect_config_set_defaults(nrt_inspect_config_t *options);

/* Free an inspect options object. */
NRT_STATUS nrt_inspect_config_free(nrt_inspect_config_t *options);

/* Set the session id of the capture. */
NRT_STATUS nrt_inspect_config_set_session_id(nrt_inspect_config_t *options, int session_id);

/* Set (a copy of) the non-empty output directory. NRT_INVALID for bad
 * arguments, NRT_RESOURCE if the copy cannot be allocated. */
NRT_STATUS nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options, const char *output_dir);

/* Set how many system trace events are kept per NeuronCore. */
NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc(nrt_inspect_config_t *options, uint64_t sys_trace_max_events_per_nc);

/* Turn system trace capture on or off for NeuronCore nc_idx. */
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options, uint32_t nc_idx, bool enabled);

/* Turn capture on or off for one event type (a name from
 * nrt_sys_trace_get_event_types()). */
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string(nrt_inspect_config_t *options, const char *event_type, bool enabled);

/* Capture system and device profiles for every execution (off by
 * default). NRT_INVALID for bad arguments. */
NRT_STATUS nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options, bool enable_inspect);

/* Capture device profiles of executions that fail (off by default).
 * NRT_INVALID for bad arguments. */
NRT_STATUS nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options, bool enable_inspect_on_fail);

/* Start an inspect session with these options (NULL: defaults); the
 * NEURON_RT_INSPECT_* environment variables are ignored. */
NRT_STATUS nrt_inspect_begin_with_options(nrt_inspect_config_t *options);

/* Store in *activity_types a new array of every activity type name and its
 * length in *count; free with nrt_inspect_config_free_activity_types().
 * NRT_INVALID for bad arguments, NRT_RESOURCE if allocation fails. */
NRT_STATUS nrt_inspect_config_get_all_activity_types(const char ***activity_types, size_t *count);

/* Like nrt_inspect_config_get_all_activity_types(), for the types enabled
 * in options only. */
NRT_STATUS nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options, const char ***activity_types, size_t *count);

/* Free an array of count activity type names and the names themselves. */
void nrt_inspect_config_free_activity_types(const char **activity_types, size_t count);

/* Enable or disable one activity type ("system_profile", "device_profile",
 * "host_memory", "cpu_util" or "all"). NRT_INVALID for an unknown name. */
NRT_STATUS nrt_inspect_config_set_activity(nrt_inspect_config_t *options, const char *activity_type, bool enabled);

#ifdef __cplusplus
}
#endif
