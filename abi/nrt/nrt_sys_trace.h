/*
 * nrt_sys_trace.h: system trace: capture runtime events in per-NeuronCore
 * ring buffers, and fetch them while the program runs (as JSON text).
 * Inspect profiling (nrt_profile.h) uses the same capture.
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

/* ---- Capture ---- */

/* Opaque capture options; create with nrt_sys_trace_config_allocate(). */
typedef struct nrt_sys_trace_config nrt_sys_trace_config_t;

/* Create a capture options object with every option at its default. */
NRT_STATUS nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options);

/* Reset every capture option to its default. */
void nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options);

/* Free a capture options object. */
void nrt_sys_trace_config_free(nrt_sys_trace_config_t *options);

/* Set how many events each NeuronCore's ring buffer holds. */
void nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options, uint64_t max_events_per_nc);

/* Turn capture on or off for NeuronCore nc_idx (no ring buffer when off). */
void nrt_sys_trace_config_set_capture_enabled_for_nc(nrt_sys_trace_config_t *options, uint32_t nc_idx, bool enabled);

/* Turn capture on or off for one event type (a name from
 * nrt_sys_trace_get_event_types()). */
NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type(nrt_sys_trace_config_t *options, const char *event_type, bool enabled);

/* Store in *event_types a new array of every event type name and its
 * length in *count; free with nrt_sys_trace_free_event_types(). */
NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types, size_t *count);

/* Free an array of count event type names and the names themselves. */
void nrt_sys_trace_free_event_types(const char **event_types, size_t count);

/* Like nrt_sys_trace_get_event_types(), for the types enabled in options. */
NRT_STATUS nrt_sys_trace_config_get_enabled_event_types(nrt_sys_trace_config_t *options, const char ***event_types, size_t *count);

/* Start capturing with these options (allocates the ring buffers). */
NRT_STATUS nrt_sys_trace_start(nrt_sys_trace_config_t *options);

/* Stop capturing and free the ring buffers. */
NRT_STATUS nrt_sys_trace_stop(void);

/* ---- Fetch ---- */

/* Opaque fetch options; create with nrt_sys_trace_fetch_options_allocate(). */
typedef struct nrt_sys_trace_fetch_options nrt_sys_trace_fetch_options_t;

/* Create a fetch options object with every option at its default. */
NRT_STATUS nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options);

/* Reset every fetch option to its default (all NeuronCores, all events). */
void nrt_sys_trace_fetch_options_set_defaults(nrt_sys_trace_fetch_options_t *options);

/* Free a fetch options object. */
void nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options);

/* Fetch at most max_events_per_nc events from each NeuronCore. */
void nrt_sys_trace_fetch_options_set_max_events_per_nc(nrt_sys_trace_fetch_options_t *options, uint64_t max_events_per_nc);

/* Fetch events of NeuronCore nc_idx only. */
void nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options, uint64_t nc_idx);

/* Take the captured events not fetched before (options NULL: defaults) and
 * return them as a new NUL-terminated JSON string in *buffer, its length in
 * *written_size. Pass *buffer as NULL; free it with nrt_sys_trace_buffer_free(). */
NRT_STATUS nrt_sys_trace_fetch_events(char **buffer, size_t *written_size, const nrt_sys_trace_fetch_options_t *options);

/* Free a buffer returned by nrt_sys_trace_fetch_events(). */
void nrt_sys_trace_buffer_free(char *buffer);

#ifdef __cplusplus
}
#endif
