/*
 * nrt_async.c: the explicitly asynchronous nrta_* entry points: schedule
 * tensor reads, writes, copies and executions on an LNC's execution-unit
 * queues, follow their sequence numbers, collect failures in error
 * trackers. Argument checks here; the queues live in devices/runtime/async.c.
 */
#include "devices/runtime/async.h"
#include "nrt/nrt_async.h"
#include "shims/shim.h"

NRT_STATUS nrta_error_tracker_create_impl(uint32_t lnc_idx, nrta_error_tracker_t **error_tracker)
{
    SHIM_REQUIRE(error_tracker != NULL, "error_tracker is NULL");
    SHIM_ENTER();
    struct machine *m = rt_machine();
    bool visible = lnc_idx < m->cfg.visible_count;
    uint32_t n = m->cfg.visible_count;
    NRT_STATUS st = visible ? async_tracker_create(lnc_idx, error_tracker) : NRT_INVALID;
    rt_leave();
    SHIM_REQUIRE(visible, "LNC %u is not visible to this process (%u LNCs)", lnc_idx, n);
    return st;
}

void nrta_error_tracker_destroy_impl(nrta_error_tracker_t *error_tracker)
{
    if (error_tracker == NULL)
        return;  /* like free(NULL) */
    if (!async_tracker_destroy(error_tracker))
        LOG_ERROR("NRT", "%p is not a live error tracker (destroyed, or never created)",
                  (void *)error_tracker);
}

NRT_STATUS nrta_error_tracker_get_list_impl(nrta_error_tracker_t *error_tracker, const nrta_error_t **list, size_t *error_count)
{
    SHIM_REQUIRE(error_tracker != NULL && list != NULL && error_count != NULL,
                 "error_tracker, list or error_count is NULL");
    return async_tracker_list(error_tracker, list, error_count);
}

NRT_STATUS nrta_execute_schedule_impl(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_REQUIRE(model != NULL && input != NULL && output != NULL && req_sequence != NULL,
                 "model, input, output or req_sequence is NULL");
    SHIM_CALL(async_execute(model, input, output, queue, err, req_sequence));
}

NRT_STATUS nrta_get_completion_handle_impl(nrta_seq_t seq, int *fd)
{
    SHIM_REQUIRE(fd != NULL, "fd is NULL");
    SHIM_CALL(async_completion_fd(seq, fd));
}

NRT_STATUS nrta_get_sequence_impl(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq)
{
    SHIM_REQUIRE(seq != NULL, "seq is NULL");
    SHIM_CALL(async_last_completed(lnc, xu, queue, seq));
}

NRT_STATUS nrta_is_completed_impl(nrta_seq_t seq, bool *is_completed)
{
    SHIM_REQUIRE(is_completed != NULL, "is_completed is NULL");
    SHIM_CALL(async_is_completed(seq, is_completed));
}

NRT_STATUS nrta_tensor_copy_impl(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_REQUIRE(src != NULL && dst != NULL && req_sequence != NULL,
                 "src, dst or req_sequence is NULL");
    SHIM_CALL(async_tensor_copy(src, src_offset, dst, dst_offset, size, queue, err, req_sequence));
}

NRT_STATUS nrta_tensor_read_impl(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_REQUIRE(tensor != NULL && req_sequence != NULL, "tensor or req_sequence is NULL");
    SHIM_REQUIRE(buf != NULL || size == 0, "buf is NULL");
    SHIM_CALL(async_tensor_read(buf, tensor, offset, size, queue, err, req_sequence));
}

NRT_STATUS nrta_tensor_write_impl(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_REQUIRE(tensor != NULL && req_sequence != NULL, "tensor or req_sequence is NULL");
    SHIM_REQUIRE(buf != NULL || size == 0, "buf is NULL");
    SHIM_CALL(async_tensor_write(tensor, buf, offset, size, queue, err, req_sequence));
}
