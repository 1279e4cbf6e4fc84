/*
 * nrt_collectives.c: the collective-communication entry points: global
 * communicators, barrier, all-gather, prepared collectives, and trnemu's
 * variable-size all-to-all and all-gather. The work is in
 * devices/runtime/coll_host.c and devices/coll/coll_v.c; docs/collectives.md describes
 * the behaviour.
 *
 * Statuses: NRT_SUCCESS; NRT_INVALID for bad arguments (one log line) or
 * ranks that disagree on the operation; NRT_TIMEOUT when a rank does not
 * turn up within NEURON_RT_EXEC_TIMEOUT (TRNEMU_COLL_TIMEOUT);
 * NRT_EXEC_HW_ERR_COLLECTIVES when a rank dies or leaves; NRT_RESOURCE
 * when shared memory cannot be made; NRT_UNINITIALIZED / NRT_CLOSED
 * outside nrt_init .. nrt_close.
 */
#include "devices/runtime/async.h"
#include "devices/coll/coll.h"
#include "devices/runtime/coll_host.h"
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "shims/shim.h"
#include "trnemu/trnemu.h"

NRT_STATUS nrt_all_gather_impl(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
                                     uint32_t rank_input_size, void *input, void *output)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(g_device_count > 0 && g_device_id < g_device_count,
                 "g_device_id %u is not below g_device_count %u", g_device_id, g_device_count);
    SHIM_REQUIRE(rank_input_size == 0 || (input != NULL && output != NULL),
                 "input or output is NULL");
    SHIM_CALL(coll_host_all_gather(vnc, g_device_id, g_device_count, rank_input_size,
                                   input, output));
}

NRT_STATUS trnemu_all_to_all_v_impl(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
                                    const void *input, const uint64_t *send_layout,
                                    void *output, const uint64_t *recv_layout)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(g_device_count > 0 && g_device_id < g_device_count,
                 "g_device_id %u is not below g_device_count %u", g_device_id, g_device_count);
    SHIM_REQUIRE(send_layout != NULL && recv_layout != NULL, "send_layout or recv_layout is NULL");
    SHIM_ENTER();
    uint32_t n = g_device_count;
    struct coll_vargs a = {
        .op = {.kind = CORE_COLL_V_ALL_TO_ALL, .dtype = NRT_DTYPE_UINT8, .src = input,
               .src_count = trnemu_coll_v_extent(send_layout, n), .dst = output,
               .dst_count = trnemu_coll_v_extent(recv_layout, n), .send_counts = send_layout,
               .send_displs = send_layout + n, .recv_displs = recv_layout + n},
        .recv_expect = recv_layout};
    NRT_STATUS st = coll_host_v(vnc, g_device_id, n, &a);
    rt_leave();
    return st;
}

NRT_STATUS trnemu_all_gather_v_impl(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
                                    const void *input, uint64_t input_size, void *output,
                                    const uint64_t *recv_layout)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(g_device_count > 0 && g_device_id < g_device_count,
                 "g_device_id %u is not below g_device_count %u", g_device_id, g_device_count);
    SHIM_REQUIRE(recv_layout != NULL, "recv_layout is NULL");
    SHIM_ENTER();
    uint32_t n = g_device_count;
    struct coll_vargs a = {
        .op = {.kind = CORE_COLL_V_ALL_GATHER, .dtype = NRT_DTYPE_UINT8, .src = input,
               .src_count = input_size, .dst = output,
               .dst_count = trnemu_coll_v_extent(recv_layout, n), .send_counts = &input_size,
               .recv_displs = recv_layout + n},
        .recv_expect = recv_layout};
    NRT_STATUS st = coll_host_v(vnc, g_device_id, n, &a);
    rt_leave();
    return st;
}

NRT_STATUS nrt_barrier_impl(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(g_device_count > 0 && g_device_id < g_device_count,
                 "g_device_id %u is not below g_device_count %u", g_device_id, g_device_count);
    SHIM_CALL(coll_host_barrier(vnc, g_device_id, g_device_count));
}

NRT_STATUS nrt_build_global_comm_impl(int32_t vnc, uint32_t g_device_id,
                                            uint32_t g_device_count)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(g_device_count > 0 && g_device_id < g_device_count,
                 "g_device_id %u is not below g_device_count %u", g_device_id, g_device_count);
    SHIM_CALL(coll_host_join(vnc, g_device_id, g_device_count));
}

NRT_STATUS nrt_cc_global_comm_init_impl(uint32_t vnc, uint32_t g_device_id,
                                              uint32_t g_device_count)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(g_device_count > 0 && g_device_id < g_device_count,
                 "g_device_id %u is not below g_device_count %u", g_device_id, g_device_count);
    SHIM_REQUIRE(vnc <= INT32_MAX, "VNC %u is out of range", vnc);
    SHIM_CALL(coll_host_join((int32_t)vnc, g_device_id, g_device_count));
}

NRT_STATUS nrta_cc_prepare_impl(nrt_cc_comm_t *comm, nrt_tensor_list_t *input,
                                      nrt_tensor_list_t *output, nrt_dtype_t dtype,
                                      nrt_op_type_t op, nrt_cc_op_type_t cc_op,
                                      nrt_cc_context_t **cc_ctx)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(comm != NULL && input != NULL && output != NULL && cc_ctx != NULL,
                 "comm, input, output or cc_ctx is NULL");
    SHIM_CALL(coll_cc_prepare(comm, input, output, (uint32_t)dtype, (uint32_t)op,
                              (uint32_t)cc_op, cc_ctx));
}

/* Queued on the COLLECTIVES unit of the communicator's LNC; the context
 * belongs to the request from here on (*cc_ctx is set to NULL) and is
 * freed once the collective ran. */
NRT_STATUS nrta_cc_schedule_impl(nrt_cc_context_t **cc_ctx, int queue,
                                       nrta_error_tracker_t *err, nrta_seq_t *req_sequence)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(cc_ctx != NULL && *cc_ctx != NULL, "cc_ctx or *cc_ctx is NULL");
    SHIM_ENTER();
    nrta_seq_t seq = 0;
    bool live = coll_cc_is_live(*cc_ctx);
    NRT_STATUS st = live ? async_collective(cc_ctx, queue, err, &seq) : NRT_INVALID;
    if (req_sequence != NULL)
        *req_sequence = seq;
    rt_leave();
    SHIM_REQUIRE(live, "%p is not a prepared collective context (already scheduled?)",
                 (void *)*cc_ctx);
    return st;
}
