/*
 * nrt_profile.c: device profiles (nrt_profile_*), the continuous profile
 * and inspect (nrt_inspect_*): argument checks here; the timelines come
 * from the cost model (devices/observe/devprof.c, docs/profile.md), inspect's
 * sessions from devices/observe/inspect.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/observe/devprof.h"
#include "devices/observe/inspect.h"
#include "devices/runtime/model.h"
#include "nrt/nrt_profile.h"
#include "shims/shim.h"

NRT_STATUS nrt_profile_start_impl(nrt_model_t *model, const char *filename)
{
    SHIM_REQUIRE(model != NULL && filename != NULL && *filename != '\0',
                 "model or filename is NULL or empty");
    SHIM_ENTER();
    NRT_STATUS st = model_pin(model);
    if (st == NRT_SUCCESS) {
        st = devprof_model_start(model->id, filename);
        model_unpin(model);
    }
    rt_leave();
    return st;
}

NRT_STATUS nrt_profile_stop_impl(const char *filename)
{
    SHIM_REQUIRE(filename != NULL, "filename is NULL");
    return devprof_model_stop(filename);
}

NRT_STATUS nrt_profile_continuous_options_allocate_impl(nrt_profile_continuous_options_t **options)
{
    SHIM_REQUIRE(options != NULL, "options is NULL");
    nrt_profile_continuous_options_t *o;
    SHIM_OBJ_NEW(o, HANDLE_PROFILE_OPTIONS);
    snprintf(o->output_dir, sizeof o->output_dir, "./profiles");
    *options = o;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_profile_continuous_options_free_impl(nrt_profile_continuous_options_t *options)
{
    SHIM_REQUIRE(shim_obj_free(options, HANDLE_PROFILE_OPTIONS),
                 "%p is not a continuous-profile options object", (void *)options);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_profile_continuous_options_set_output_dir_impl(nrt_profile_continuous_options_t *options, const char *output_dir)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_PROFILE_OPTIONS),
                 "%p is not a continuous-profile options object", (void *)options);
    SHIM_REQUIRE(output_dir != NULL && *output_dir != '\0', "output_dir is NULL or empty");
    SHIM_REQUIRE(strlen(output_dir) < sizeof options->output_dir, "output_dir is too long");
    snprintf(options->output_dir, sizeof options->output_dir, "%s", output_dir);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_profile_continuous_save_impl(uint32_t vnc, nrt_profile_continuous_options_t *options)
{
    SHIM_REQUIRE(options == NULL || shim_obj_ok(options, HANDLE_PROFILE_OPTIONS),
                 "%p is not a continuous-profile options object", (void *)options);
    return devprof_continuous_save(vnc, options != NULL ? options->output_dir : NULL);
}

NRT_STATUS nrt_profile_continuous_start_impl(nrt_profile_continuous_options_t *options)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_PROFILE_OPTIONS),
                 "%p is not a continuous-profile options object", (void *)options);
    SHIM_REQUIRE(!inspect_running(), "continuous profiling does not start while an inspect "
                 "session runs (nrt_inspect_stop ends it)");
    return devprof_continuous_start(options->output_dir);
}

NRT_STATUS nrt_profile_continuous_stop_impl(void)
{
    return devprof_continuous_stop();
}

/* ---- inspect ---------------------------------------------------------------- */

NRT_STATUS nrt_inspect_begin_impl(void)
{
    nrt_inspect_config_t c;
    inspect_config_defaults(&c);
    return inspect_begin(&c);
}

NRT_STATUS nrt_inspect_begin_with_options_impl(nrt_inspect_config_t *options)
{
    SHIM_REQUIRE(options == NULL || shim_obj_ok(options, HANDLE_INSPECT_CONFIG),
                 "%p is not an inspect config", (void *)options);
    if (options != NULL)
        return inspect_begin(options);
    nrt_inspect_config_t c;  /* NULL: the defaults, without the environment */
    inspect_config_builtin(&c);
    return inspect_begin(&c);
}

NRT_STATUS nrt_inspect_stop_impl(void)
{
    return inspect_stop();
}

NRT_STATUS nrt_inspect_config_allocate_impl(nrt_inspect_config_t **options)
{
    SHIM_REQUIRE(options != NULL, "options is NULL");
    nrt_inspect_config_t *c;
    SHIM_OBJ_NEW(c, HANDLE_INSPECT_CONFIG);
    inspect_config_defaults(c);
    *options = c;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_free_impl(nrt_inspect_config_t *options)
{
    SHIM_REQUIRE(shim_obj_free(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_defaults_impl(nrt_inspect_config_t *options)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    inspect_config_defaults(options);
    return NRT_SUCCESS;
}

void nrt_inspect_config_free_activity_types_impl(const char **activity_types, size_t count)
{
    if (activity_types == NULL)
        return;
    if (!shim_obj_take(activity_types, HANDLE_NAME_LIST)) {
        LOG_ERROR("NRT", "%p is not an activity type list from this runtime",
                  (void *)activity_types);
        return;
    }
    for (size_t i = 0; i < count && i < INSPECT_ACTIVITY_COUNT; i++)
        free((void *)activity_types[i]);
    free(activity_types);
}

static const char *shim_activity_name(int i)
{
    return inspect_activity_name((enum inspect_activity)i);
}

/* A new array of the activity names selected by on (NULL: all). */
static NRT_STATUS shim_activities(const bool *on, const char ***types, size_t *count)
{
    uint64_t pick = 0;
    for (int i = 0; i < INSPECT_ACTIVITY_COUNT; i++)
        if (on == NULL || on[i])
            pick |= 1ull << i;
    return shim_name_list(pick, INSPECT_ACTIVITY_COUNT, shim_activity_name, types, count);
}

NRT_STATUS nrt_inspect_config_get_all_activity_types_impl(const char ***activity_types, size_t *count)
{
    SHIM_REQUIRE(activity_types != NULL && count != NULL, "activity_types or count is NULL");
    return shim_activities(NULL, activity_types, count);
}

NRT_STATUS nrt_inspect_config_get_enabled_activity_types_impl(nrt_inspect_config_t *options, const char ***activity_types, size_t *count)
{
    SHIM_REQUIRE(activity_types != NULL && count != NULL, "activity_types or count is NULL");
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    return shim_activities(options->activity, activity_types, count);
}

NRT_STATUS nrt_inspect_config_set_activity_impl(nrt_inspect_config_t *options, const char *activity_type, bool enabled)
{
    SHIM_REQUIRE(activity_type != NULL, "activity_type is NULL");
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    int a = inspect_activity_of(activity_type);
    if (strcmp(activity_type, "all") == 0) {
        for (int i = 0; i < INSPECT_ACTIVITY_COUNT; i++)
            options->activity[i] = enabled;
        return NRT_SUCCESS;
    }
    SHIM_REQUIRE(a >= 0, "'%s' is not an activity type (system_profile, device_profile, all)",
                 activity_type);
    options->activity[a] = enabled;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string_impl(nrt_inspect_config_t *options, const char *event_type, bool enabled)
{
    SHIM_REQUIRE(event_type != NULL, "event_type is NULL");
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    int t = systrace_type_of(event_type);
    SHIM_REQUIRE(t >= 0, "'%s' is not an event type (nrt_sys_trace_get_event_types)", event_type);
    if (enabled)
        options->trace.types |= 1u << t;
    else
        options->trace.types &= ~(1u << t);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_capture_enabled_for_nc_impl(nrt_inspect_config_t *options, uint32_t nc_idx, bool enabled)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    SHIM_REQUIRE(nc_idx < SYSTRACE_MAX_NC, "NeuronCore %u is not below %d", nc_idx,
                 SYSTRACE_MAX_NC);
    options->trace.nc_on[nc_idx] = enabled;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_enable_inspect_impl(nrt_inspect_config_t *options, bool enable_inspect)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    options->enable_inspect = enable_inspect;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_enable_inspect_on_fail_impl(nrt_inspect_config_t *options, bool enable_inspect_on_fail)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    options->enable_on_fail = enable_inspect_on_fail;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_output_dir_impl(nrt_inspect_config_t *options, const char *output_dir)
{
    SHIM_REQUIRE(output_dir != NULL && *output_dir != '\0', "output_dir is NULL or empty");
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    SHIM_REQUIRE(strlen(output_dir) < sizeof options->output_dir, "output_dir is too long");
    snprintf(options->output_dir, sizeof options->output_dir, "%s", output_dir);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_session_id_impl(nrt_inspect_config_t *options, int session_id)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    options->session_id = session_id;
    return NRT_SUCCESS;
}

NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc_impl(nrt_inspect_config_t *options, uint64_t sys_trace_max_events_per_nc)
{
    SHIM_REQUIRE(shim_obj_ok(options, HANDLE_INSPECT_CONFIG), "%p is not an inspect config",
                 (void *)options);
    SHIM_REQUIRE(sys_trace_max_events_per_nc > 0, "sys_trace_max_events_per_nc is 0");
    options->trace.max_events_per_nc = sys_trace_max_events_per_nc;
    return NRT_SUCCESS;
}
