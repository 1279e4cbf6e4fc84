/*
 * nrt_collectives.c: the collective-communication entry points (global communicators, barrier, all-gather, prepared collectives).
 *
 * Not emulated yet: each call logs one line naming itself and returns
 * NRT_FAILURE (void functions only log), as documented in docs/abi.md.
 */
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_async.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrt_all_gather(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count, uint32_t rank_input_size, void *input, void *output)
{
    SHIM_NOT_EMULATED("collectives over emulated NeuronLink are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_barrier(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count)
{
    SHIM_NOT_EMULATED("collectives over emulated NeuronLink are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_build_global_comm(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count)
{
    SHIM_NOT_EMULATED("collectives over emulated NeuronLink are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_cc_global_comm_init(uint32_t vnc, uint32_t g_device_id, uint32_t g_device_count)
{
    SHIM_NOT_EMULATED("collectives over emulated NeuronLink are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output, nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx)
{
    SHIM_NOT_EMULATED("collectives over emulated NeuronLink are not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_NOT_EMULATED("collectives over emulated NeuronLink are not emulated yet");
}
