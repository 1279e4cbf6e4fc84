/*
 * nrt_model.c: the model entry points: load, unload, execute and model queries.
 *
 * Not emulated yet: each call logs one line naming itself and returns
 * NRT_FAILURE (void functions only log), as documented in docs/abi.md.
 */
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set, int repeat_count)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in, size_t *info_size_out)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model, uint32_t *vnc_count)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model, uint32_t *vnc_count)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_load(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count, nrt_model_t **model)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count, uint32_t ctx_device_id, uint32_t ctx_device_count, nrt_model_t **model)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_unload(nrt_model_t *model)
{
    SHIM_NOT_EMULATED("NEFF loading and execution are not emulated yet");
}
