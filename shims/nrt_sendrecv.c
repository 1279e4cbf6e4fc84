/*
 * nrt_sendrecv.c: the asynchronous point-to-point send/receive entry points.
 *
 * Not emulated yet: each call logs one line naming itself and returns
 * NRT_FAILURE (void functions only log), as documented in docs/abi.md.
 */
#include "nrt/nrt_async_sendrecv.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_accept(const char* peer_ip, int peer_lnc, int lnc, nrt_async_sendrecv_comm_t** recv_comm)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_close(int lnc)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_connect(const char* peer_ip, int peer_lnc, int lnc, nrt_async_sendrecv_comm_t** send_comm)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_flush(int lnc)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_get_max_num_communicators_per_lnc(int* num)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_get_max_num_pending_request(int* num)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_init(int lnc)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_recv_tensor(nrt_tensor_t* tensor, size_t offset, size_t length, nrt_async_sendrecv_comm_t* recv_comm, nrt_async_sendrecv_request_t** request)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_send_tensor(nrt_tensor_t* tensor, size_t offset, size_t length, nrt_async_sendrecv_comm_t* send_comm, nrt_async_sendrecv_request_t** request)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_test_comm(nrt_async_sendrecv_comm_t* comm, bool* done)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_async_sendrecv_test_request(nrt_async_sendrecv_request_t* request, bool* done, size_t* size)
{
    SHIM_NOT_EMULATED("point-to-point send/receive is not emulated yet");
}
