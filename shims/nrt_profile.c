/*
 * nrt_profile.c: the device profiling and inspection entry points.
 *
 * Not emulated yet: each call logs one line naming itself and returns
 * NRT_FAILURE (void functions only log), as documented in docs/abi.md.
 */
#include "nrt/nrt_profile.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrt_inspect_begin(void)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_begin_with_options(nrt_inspect_config_t *options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_allocate(nrt_inspect_config_t **options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_free(nrt_inspect_config_t *options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT void nrt_inspect_config_free_activity_types(const char **activity_types, size_t count)
{
    LOG_ERROR("NRT", "not emulated by trnemu: device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_get_all_activity_types(const char ***activity_types, size_t *count)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options, const char ***activity_types, size_t *count)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_activity(nrt_inspect_config_t *options, const char *activity_type, bool enabled)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string(nrt_inspect_config_t *options, const char *event_type, bool enabled)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options, uint32_t nc_idx, bool enabled)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_defaults(nrt_inspect_config_t *options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options, bool enable_inspect)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options, bool enable_inspect_on_fail)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options, const char *output_dir)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_session_id(nrt_inspect_config_t *options, int session_id)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc(nrt_inspect_config_t *options, uint64_t sys_trace_max_events_per_nc)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_inspect_stop(void)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_continuous_options_allocate(nrt_profile_continuous_options_t **options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_continuous_options_set_output_dir(nrt_profile_continuous_options_t *options, const char *output_dir)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_continuous_save(uint32_t vnc, nrt_profile_continuous_options_t *options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_continuous_start(nrt_profile_continuous_options_t *options)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_continuous_stop(void)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_profile_stop(const char *filename)
{
    SHIM_NOT_EMULATED("device profiling is not emulated yet");
}
