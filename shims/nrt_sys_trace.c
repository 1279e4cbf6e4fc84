/*
 * nrt_sys_trace.c: the system-trace entry points.
 *
 * Not emulated yet: each call logs one line naming itself and returns
 * NRT_FAILURE (void functions only log), as documented in docs/abi.md.
 */
#include "nrt/nrt_sys_trace.h"
#include "shims/shim.h"

NRT_EXPORT void nrt_sys_trace_buffer_free(char *buffer)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_config_allocate(nrt_sys_trace_config_t **options)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_config_free(nrt_sys_trace_config_t *options)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_config_get_enabled_event_types(nrt_sys_trace_config_t *options, const char ***event_types, size_t *count)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_config_set_capture_enabled_for_event_type(nrt_sys_trace_config_t *options, const char *event_type, bool enabled)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_config_set_capture_enabled_for_nc(nrt_sys_trace_config_t *options, uint32_t nc_idx, bool enabled)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_config_set_defaults(nrt_sys_trace_config_t *options)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_config_set_max_events_per_nc(nrt_sys_trace_config_t *options, uint64_t max_events_per_nc)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_fetch_events(char **buffer, size_t *written_size, const nrt_sys_trace_fetch_options_t *options)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_fetch_options_allocate(nrt_sys_trace_fetch_options_t **options)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_fetch_options_free(nrt_sys_trace_fetch_options_t *options)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_fetch_options_set_defaults(nrt_sys_trace_fetch_options_t *options)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_fetch_options_set_max_events_per_nc(nrt_sys_trace_fetch_options_t *options, uint64_t max_events_per_nc)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_fetch_options_set_nc_idx(nrt_sys_trace_fetch_options_t *options, uint64_t nc_idx)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT void nrt_sys_trace_free_event_types(const char **event_types, size_t count)
{
    LOG_ERROR("NRT", "not emulated by trnemu: system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_get_event_types(const char ***event_types, size_t *count)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_start(nrt_sys_trace_config_t *options)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_sys_trace_stop(void)
{
    SHIM_NOT_EMULATED("system tracing is not emulated yet");
}
