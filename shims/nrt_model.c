/*
 * nrt_model.c: the model entry points: load, unload, execute and the model
 * queries.
 */
#include <string.h>

#include "devices/runtime/exec.h"
#include "devices/runtime/model.h"
#include "devices/observe/systrace.h"
#include "nrt/nrt_experimental.h"
#include "shims/shim.h"

static NRT_STATUS shim_load(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count,
                            nrt_model_t **model)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(neff_bytes != NULL && model != NULL, "neff_bytes or model is NULL");
    SHIM_REQUIRE(size > 0, "the NEFF is 0 bytes long");
    SHIM_REQUIRE(vnc >= -1, "VNC %d: use -1 (first free VNC) or a visible VNC index", (int)vnc);
    SHIM_REQUIRE(vnc_count == -1 || vnc_count == 1,
                 "vnc_count is deprecated: pass -1 (got %d)", (int)vnc_count);
    SHIM_ENTER();
    uint64_t t0 = systrace_now_ns();
    NRT_STATUS st = model_load(neff_bytes, size, vnc, model);
    systrace_emit(SYS_NRT_LOAD, st == NRT_SUCCESS ? (*model)->vnc : (int)vnc, t0,
                  systrace_now_ns() - t0, st == NRT_SUCCESS ? (*model)->neff->info.name : "",
                  size, st);
    rt_leave();
    return st;
}

NRT_STATUS nrt_load_impl(const void *neff_bytes, size_t size, int32_t vnc,
                               int32_t vnc_count, nrt_model_t **model)
{
    return shim_load(neff_bytes, size, vnc, vnc_count, model);
}

NRT_STATUS nrt_load_collectives_impl(const void *neff_bytes, size_t size, int32_t vnc,
                                           int32_t vnc_count, uint32_t ctx_device_id,
                                           uint32_t ctx_device_count, nrt_model_t **model)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(ctx_device_count > 0 && ctx_device_id < ctx_device_count,
                 "ctx_device_id %u is not below ctx_device_count %u", ctx_device_id,
                 ctx_device_count);
    NRT_STATUS st = shim_load(neff_bytes, size, vnc, vnc_count, model);
    if (st == NRT_SUCCESS)  /* its collectives run as this rank of the job (exec_bridge.c) */
        model_set_collectives(*model, ctx_device_id, ctx_device_count);
    return st;
}

NRT_STATUS nrt_unload_impl(nrt_model_t *model)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(model != NULL, "model is NULL");
    SHIM_ENTER();
    systrace_emit(SYS_NRT_UNLOAD, -1, systrace_now_ns(), 0, "", 0, NRT_SUCCESS);
    NRT_STATUS st = model_unload(model);
    rt_leave();
    return st;
}

/* Pin a model for a query: door + registry check. On success the caller
 * must call shim_model_leave. */
static NRT_STATUS shim_model_enter(const nrt_model_t *model)
{
    NRT_STATUS st = rt_enter();
    if (st != NRT_SUCCESS) {
        LOG_ERROR("NRT", "%s", st == NRT_UNINITIALIZED ? "called before nrt_init()"
                                                       : "called after nrt_close()");
        return st;
    }
    st = model_pin(model);
    if (st != NRT_SUCCESS)
        rt_leave();
    return st;
}

static void shim_model_leave(const nrt_model_t *model)
{
    model_unpin((nrt_model_t *)model);
    rt_leave();
}

NRT_STATUS nrt_execute_impl(nrt_model_t *model, const nrt_tensor_set_t *input_set,
                                  nrt_tensor_set_t *output_set)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(model != NULL && input_set != NULL && output_set != NULL,
                 "model, input_set or output_set is NULL");
    NRT_STATUS st = shim_model_enter(model);
    if (st != NRT_SUCCESS)
        return st;
    st = exec_model(model, input_set, output_set, 1);
    shim_model_leave(model);
    return st;
}

NRT_STATUS nrt_execute_repeat_impl(nrt_model_t *model, const nrt_tensor_set_t *input_set,
                                         nrt_tensor_set_t *output_set, int repeat_count)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(model != NULL && input_set != NULL && output_set != NULL,
                 "model, input_set or output_set is NULL");
    SHIM_REQUIRE(repeat_count >= 1, "repeat_count %d is below 1", repeat_count);
    NRT_STATUS st = shim_model_enter(model);
    if (st != NRT_SUCCESS)
        return st;
    st = exec_model(model, input_set, output_set, (uint32_t)repeat_count);
    shim_model_leave(model);
    return st;
}

/* A model always occupies exactly one VNC. */
static NRT_STATUS shim_model_one(const nrt_model_t *model, uint32_t *out, const char *what)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(model != NULL && out != NULL, "model or %s is NULL", what);
    NRT_STATUS st = shim_model_enter(model);
    if (st != NRT_SUCCESS)
        return st;
    *out = 1;
    shim_model_leave(model);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_get_model_nc_count_impl(const nrt_model_t *model, uint32_t *vnc_count)
{
    return shim_model_one(model, vnc_count, "vnc_count");
}

NRT_STATUS nrt_get_model_vnc_count_impl(const nrt_model_t *model, uint32_t *vnc_count)
{
    return shim_model_one(model, vnc_count, "vnc_count");
}

/* Executions on one VNC are serialised, so one staged instance per model. */
NRT_STATUS nrt_get_model_instance_count_impl(nrt_model_t *model, uint32_t *instance_count)
{
    return shim_model_one(model, instance_count, "instance_count");
}

NRT_STATUS nrt_get_model_tensor_info_impl(nrt_model_t *model,
                                                nrt_tensor_info_array_t **tensor_info)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(model != NULL && tensor_info != NULL, "model or tensor_info is NULL");
    NRT_STATUS st = shim_model_enter(model);
    if (st != NRT_SUCCESS)
        return st;
    st = model_tensor_info(model, tensor_info);
    shim_model_leave(model);
    return st;
}

NRT_STATUS nrt_free_model_tensor_info_impl(nrt_tensor_info_array_t *tensor_info)
{
    SHIM_REQUIRE(tensor_info != NULL, "tensor_info is NULL");
    return model_free_tensor_info(tensor_info);
}

NRT_STATUS nrt_get_model_info_impl(const nrt_model_t *model, nrt_model_info_t *info,
                                         size_t info_size_in, size_t *info_size_out)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(model != NULL && info != NULL && info_size_out != NULL,
                 "model, info or info_size_out is NULL");
    SHIM_REQUIRE(info_size_in > 0, "info_size_in is 0");
    NRT_STATUS st = shim_model_enter(model);
    if (st != NRT_SUCCESS)
        return st;
    nrt_model_info_t v = {.vnc = (uint32_t)model->vnc};
    size_t n = info_size_in < sizeof v ? info_size_in : sizeof v;
    memcpy(info, &v, n);
    *info_size_out = n;
    shim_model_leave(model);
    return NRT_SUCCESS;
}
