/*
 * nrt_sys_trace.c: the system-trace entry points: capture options, event
 * types, start/stop, fetch as JSON (devices/observe/systrace.c). The void setters
 * ignore a NULL options object with a log line, as they cannot report.
 */
#include <stdlib.h>
#include <string.h>

#include "devices/observe/systrace.h"
#include "nrt/nrt_sys_trace.h"
#include "shims/shim.h"

void nrt_sys_trace_buffer_free_impl(char *buffer)
{
    if (buffer == NULL)
        return;
    if (!shim_obj_free(buffer, HANDLE_TRACE_BUFFER)) {
        LOG_ERROR("NRT", "%p is not a buffer from nrt_sys_trace_fetch_events", (void *)buffer);
        return;
    }
}

NRT_STATUS nrt_sys_trace_config_allocate_impl(nrt_sys_trace_config_t **options)
{
    SHIM_REQUIRE(options != NULL, "options is NULL");
    nrt_sys_trace_config_t *c;
    SHIM_OBJ_NEW(c, HANDLE_SYSTRACE_CONFIG);
    systrace_config_defaults(c);
    *options = c;
    return NRT_SUCCESS;
}

void nrt_sys_trace_config_free_impl(nrt_sys_trace_config_t *options)
{
    if (options == NULL)
        return;
    if (!shim_obj_free(options, HANDLE_SYSTRACE_CONFIG)) {
        LOG_ERROR("NRT", "%p is not a system trace config", (void *)options);
        return;
    }
}

static const char *shim_type_name(int t)
{
    return systrace_type_name((enum systrace_type)t);
}

/* A new array of the names of the types in mask (all when mask is ~0). */
static NRT_STATUS shim_type_list(uint32_t mask, const char ***event_types, size_t *count)
{
    return shim_name_list(mask, SYS_TYPE_COUNT, shim_type_name, event_types, count);
}

NRT_STATUS nrt_sys_trace_config_get_enabled_event_types_impl(nrt_sys_trace_config_t *options, const char ***event_types, size_t *count)
{
    SHIM_REQUIRE(event_types != NULL && count != NULL, "event_types or count is NULL");
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_SYSTRACE_CONFIG), "%p is not a system trace config",
                 (void *)options);
    return shim_type_list(options->types, event_types, count);
}

NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type_impl(nrt_sys_trace_config_t *options, const char *event_type, bool enabled)
{
    SHIM_REQUIRE(event_type != NULL, "event_type is NULL");
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_SYSTRACE_CONFIG), "%p is not a system trace config",
                 (void *)options);
    int t = systrace_type_of(event_type);
    SHIM_REQUIRE(t >= 0, "'%s' is not an event type (nrt_sys_trace_get_event_types)", event_type);
    if (enabled)
        options->types |= 1u << t;
    else
        options->types &= ~(1u << t);
    return NRT_SUCCESS;
}

void nrt_sys_trace_config_set_capture_enabled_for_nc_impl(nrt_sys_trace_config_t *options, uint32_t nc_idx, bool enabled)
{
    if (!shim_obj_ok(options, HANDLE_SYSTRACE_CONFIG) || nc_idx >= SYSTRACE_MAX_NC) {
        LOG_ERROR("NRT", "%p is not a system trace config or NeuronCore %u is not below %d: "
                  "ignored", (void *)options, nc_idx, SYSTRACE_MAX_NC);
        return;
    }
    options->nc_on[nc_idx] = enabled;
}

void nrt_sys_trace_config_set_defaults_impl(nrt_sys_trace_config_t *options)
{
    if (!shim_obj_ok(options, HANDLE_SYSTRACE_CONFIG)) {
        LOG_ERROR("NRT", "%p is not a system trace config: ignored", (void *)options);
        return;
    }
    systrace_config_defaults(options);
}

void nrt_sys_trace_config_set_max_events_per_nc_impl(nrt_sys_trace_config_t *options, uint64_t max_events_per_nc)
{
    if (!shim_obj_ok(options, HANDLE_SYSTRACE_CONFIG)) {
        LOG_ERROR("NRT", "%p is not a system trace config: ignored", (void *)options);
        return;
    }
    options->max_events_per_nc = max_events_per_nc;
}

NRT_STATUS nrt_sys_trace_fetch_events_impl(char **buffer, size_t *written_size, const nrt_sys_trace_fetch_options_t *options)
{
    SHIM_REQUIRE(buffer != NULL && written_size != NULL, "buffer or written_size is NULL");
    SHIM_REQUIRE(options == NULL || shim_obj_ok(options, HANDLE_SYSTRACE_FETCH),
                 "%p is not a fetch options object", (const void *)options);
    nrt_sys_trace_fetch_options_t dflt;
    systrace_fetch_defaults(&dflt);
    NRT_STATUS st = systrace_fetch(options != NULL ? options : &dflt, buffer, written_size);
    if (st == NRT_SUCCESS && shim_obj_add(*buffer, HANDLE_TRACE_BUFFER) != NRT_SUCCESS) {
        free(*buffer);
        *buffer = NULL;
        st = NRT_RESOURCE;
    }
    return st;
}

NRT_STATUS nrt_sys_trace_fetch_options_allocate_impl(nrt_sys_trace_fetch_options_t **options)
{
    SHIM_REQUIRE(options != NULL, "options is NULL");
    nrt_sys_trace_fetch_options_t *o;
    SHIM_OBJ_NEW(o, HANDLE_SYSTRACE_FETCH);
    systrace_fetch_defaults(o);
    *options = o;
    return NRT_SUCCESS;
}

void nrt_sys_trace_fetch_options_free_impl(nrt_sys_trace_fetch_options_t *options)
{
    if (options == NULL)
        return;
    if (!shim_obj_free(options, HANDLE_SYSTRACE_FETCH)) {
        LOG_ERROR("NRT", "%p is not a fetch options object", (void *)options);
        return;
    }
}

void nrt_sys_trace_fetch_options_set_defaults_impl(nrt_sys_trace_fetch_options_t *options)
{
    if (!shim_obj_ok(options, HANDLE_SYSTRACE_FETCH)) {
        LOG_ERROR("NRT", "%p is not a fetch options object: ignored", (void *)options);
        return;
    }
    systrace_fetch_defaults(options);
}

void nrt_sys_trace_fetch_options_set_max_events_per_nc_impl(nrt_sys_trace_fetch_options_t *options, uint64_t max_events_per_nc)
{
    if (!shim_obj_ok(options, HANDLE_SYSTRACE_FETCH)) {
        LOG_ERROR("NRT", "%p is not a fetch options object: ignored", (void *)options);
        return;
    }
    options->max_events_per_nc = max_events_per_nc;
}

void nrt_sys_trace_fetch_options_set_nc_idx_impl(nrt_sys_trace_fetch_options_t *options, uint64_t nc_idx)
{
    if (!shim_obj_ok(options, HANDLE_SYSTRACE_FETCH) || nc_idx >= SYSTRACE_MAX_NC) {
        LOG_ERROR("NRT", "%p is not a fetch options object or NeuronCore %llu is not below %d: "
                  "ignored", (void *)options, (unsigned long long)nc_idx, SYSTRACE_MAX_NC);
        return;
    }
    options->nc_idx = (int64_t)nc_idx;
}

void nrt_sys_trace_free_event_types_impl(const char **event_types, size_t count)
{
    if (event_types == NULL)
        return;
    if (!shim_obj_take(event_types, HANDLE_NAME_LIST)) {
        LOG_ERROR("NRT", "%p is not an event type list from this runtime", (void *)event_types);
        return;
    }
    for (size_t i = 0; i < count && i < SYS_TYPE_COUNT; i++)
        free((void *)event_types[i]);
    free(event_types);
}

NRT_STATUS nrt_sys_trace_get_event_types_impl(const char ***event_types, size_t *count)
{
    SHIM_REQUIRE(event_types != NULL && count != NULL, "event_types or count is NULL");
    return shim_type_list(~0u, event_types, count);
}

NRT_STATUS nrt_sys_trace_start_impl(nrt_sys_trace_config_t *options)
{
    SHIM_REQUIRE(options == NULL || shim_obj_ok(options, HANDLE_SYSTRACE_CONFIG),
                 "%p is not a system trace config", (void *)options);
    nrt_sys_trace_config_t dflt;
    systrace_config_defaults(&dflt);
    return systrace_start(options != NULL ? options : &dflt);
}

NRT_STATUS nrt_sys_trace_stop_impl(void)
{
    return systrace_stop_running();
}
