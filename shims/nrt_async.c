/*
 * nrt_async.c: the explicitly asynchronous nrta_* entry points (queues, sequences, error trackers).
 *
 * Not emulated yet: each call logs one line naming itself and returns
 * NRT_FAILURE (void functions only log), as documented in docs/abi.md.
 */
#include "nrt/nrt_async.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrta_error_tracker_create(uint32_t lnc_idx, nrta_error_tracker_t **error_tracker)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT void nrta_error_tracker_destroy(nrta_error_tracker_t *error_tracker)
{
    LOG_ERROR("NRT", "not emulated by trnemu: the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_error_tracker_get_list(nrta_error_tracker_t *error_tracker, const nrta_error_t **list, size_t *error_count)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_NOT_EMULATED("the asynchronous execution-unit API is not emulated yet");
}
