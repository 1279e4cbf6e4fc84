/*
 * nrt_sendrecv.c: the asynchronous point-to-point send/receive entry
 * points, between processes attached to one emulated instance (the work is
 * in devices/coll_p2p.c; docs/collectives.md describes it). peer_ip must
 * name this host: 127.0.0.1, ::1, localhost, 0.0.0.0 or the host name.
 */
#include "devices/coll/coll.h"
#include "devices/runtime/coll_p2p.h"
#include "nrt/nrt_async_sendrecv.h"
#include "shims/shim.h"

/* Return NRT_FAILURE (the documented "other error") with a log line. */
#define SR_REQUIRE(cond, ...)                                                  \
    do {                                                                       \
        if (!(cond)) {                                                         \
            LOG_ERROR("NRT", __VA_ARGS__);                                     \
            return NRT_FAILURE;                                                \
        }                                                                      \
    } while (0)

NRT_STATUS nrt_async_sendrecv_get_max_num_communicators_per_lnc_impl(int *num)
{
    SR_REQUIRE(num != NULL, "num is NULL");
    *num = coll_p2p_max_comms();
    return NRT_SUCCESS;
}

NRT_STATUS nrt_async_sendrecv_get_max_num_pending_request_impl(int *num)
{
    SR_REQUIRE(num != NULL, "num is NULL");
    *num = coll_p2p_max_pending();
    return NRT_SUCCESS;
}

NRT_STATUS nrt_async_sendrecv_init_impl(int lnc)
{
    SHIM_CALL(coll_p2p_init(lnc));
}

NRT_STATUS nrt_async_sendrecv_close_impl(int lnc)
{
    SHIM_CALL(coll_p2p_close(lnc));
}

NRT_STATUS nrt_async_sendrecv_flush_impl(int lnc)
{
    SHIM_CALL(coll_p2p_flush(lnc));
}

NRT_STATUS nrt_async_sendrecv_connect_impl(const char *peer_ip, int peer_lnc, int lnc,
                                                 nrt_async_sendrecv_comm_t **send_comm)
{
    SR_REQUIRE(send_comm != NULL, "send_comm is NULL");
    SHIM_CALL(coll_p2p_open(peer_ip, peer_lnc, lnc, 0, send_comm));
}

NRT_STATUS nrt_async_sendrecv_accept_impl(const char *peer_ip, int peer_lnc, int lnc,
                                                nrt_async_sendrecv_comm_t **recv_comm)
{
    SR_REQUIRE(recv_comm != NULL, "recv_comm is NULL");
    SHIM_CALL(coll_p2p_open(peer_ip, peer_lnc, lnc, 1, recv_comm));
}

NRT_STATUS nrt_async_sendrecv_test_comm_impl(nrt_async_sendrecv_comm_t *comm, bool *done)
{
    SR_REQUIRE(done != NULL, "done is NULL");
    SHIM_CALL(coll_p2p_test_comm(comm, done));
}

NRT_STATUS nrt_async_sendrecv_send_tensor_impl(nrt_tensor_t *tensor, size_t offset,
                                                     size_t length,
                                                     nrt_async_sendrecv_comm_t *send_comm,
                                                     nrt_async_sendrecv_request_t **request)
{
    SR_REQUIRE(request != NULL, "request is NULL");
    SHIM_CALL(coll_p2p_post(tensor, offset, length, send_comm, 0, request));
}

NRT_STATUS nrt_async_sendrecv_recv_tensor_impl(nrt_tensor_t *tensor, size_t offset,
                                                     size_t length,
                                                     nrt_async_sendrecv_comm_t *recv_comm,
                                                     nrt_async_sendrecv_request_t **request)
{
    SR_REQUIRE(request != NULL, "request is NULL");
    SHIM_CALL(coll_p2p_post(tensor, offset, length, recv_comm, 1, request));
}

NRT_STATUS nrt_async_sendrecv_test_request_impl(nrt_async_sendrecv_request_t *request,
                                                      bool *done, size_t *size)
{
    SR_REQUIRE(done != NULL, "done is NULL");
    SHIM_CALL(coll_p2p_test(request, done, size));
}
