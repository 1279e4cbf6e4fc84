/*
 * nrt_async_sendrecv.h: point-to-point tensor transfers between logical
 * NeuronCores (LNCs), possibly on other hosts, without blocking the caller.
 *
 * trnemu's copy of the vendor header: same prototypes and names; comments
 * in trnemu's own words. LNC ids are the absolute ids on the host, not
 * affected by container remapping or NEURON_RT_VISIBLE_CORES.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include "nrt/nrt.h"
#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque send or receive communicator, connected to one peer LNC. */
typedef struct nrt_async_sendrecv_comm nrt_async_sendrecv_comm_t;
/* Opaque in-flight send or receive request. */
typedef struct nrt_async_sendrecv_request nrt_async_sendrecv_request_t;

/* Store in *num how many communicators one LNC may have; NRT_FAILURE on error. */
NRT_STATUS nrt_async_sendrecv_get_max_num_communicators_per_lnc(int* num);

/* Store in *num how many requests one communicator may have pending;
 * NRT_FAILURE on error. */
NRT_STATUS nrt_async_sendrecv_get_max_num_pending_request(int* num);

/* Enable async send/receive on LNC lnc; needs an initialized runtime and a
 * matching nrt_async_sendrecv_close() before nrt_close(). Fails if the
 * previous close on that LNC failed. NRT_FAILURE on error. */
NRT_STATUS nrt_async_sendrecv_init(int lnc);

/* Tear down async send/receive on LNC lnc, closing its communicators and
 * requests. Closing with an unconnected communicator or with requests in
 * flight is an error (NRT_FAILURE). */
NRT_STATUS nrt_async_sendrecv_close(int lnc);

/* Start connecting a send communicator from LNC lnc to LNC peer_lnc at
 * peer_ip; poll nrt_async_sendrecv_test_comm() until it is connected.
 * Thread-safe. NRT_RESOURCE when the per-LNC communicator limit is
 * reached, NRT_FAILURE for other errors. */
NRT_STATUS nrt_async_sendrecv_connect(const char* peer_ip, int peer_lnc, int lnc, nrt_async_sendrecv_comm_t** send_comm);

/* Start accepting a receive communicator on LNC lnc from LNC peer_lnc at
 * peer_ip; otherwise as nrt_async_sendrecv_connect(). */
NRT_STATUS nrt_async_sendrecv_accept(const char* peer_ip, int peer_lnc, int lnc, nrt_async_sendrecv_comm_t** recv_comm);

/* Store in *done whether comm is connected to its peer. NRT_INVALID_HANDLE
 * for a bad comm, NRT_TIMEOUT if connecting took too long, NRT_FAILURE
 * for other errors. */
NRT_STATUS nrt_async_sendrecv_test_comm(nrt_async_sendrecv_comm_t* comm, bool* done);

/* Start sending length bytes of the tensor from offset over a connected
 * send_comm; the new request goes to *request. Non-blocking, thread-safe.
 * NRT_INVALID_HANDLE for a bad handle, NRT_RESOURCE when the pending
 * request limit is reached, NRT_FAILURE for other errors. */
NRT_STATUS nrt_async_sendrecv_send_tensor(nrt_tensor_t* tensor, size_t offset, size_t length, nrt_async_sendrecv_comm_t* send_comm, nrt_async_sendrecv_request_t** request);

/* Start receiving up to length bytes into the tensor at offset over a
 * connected recv_comm; otherwise as nrt_async_sendrecv_send_tensor(). */
NRT_STATUS nrt_async_sendrecv_recv_tensor(nrt_tensor_t* tensor, size_t offset, size_t length, nrt_async_sendrecv_comm_t* recv_comm, nrt_async_sendrecv_request_t** request);

/* Store in *done whether request finished and in *size the bytes moved.
 * Once it reports done, the request must not be tested again; one request
 * must not be tested from two threads at once. NRT_INVALID_HANDLE for a
 * bad handle, NRT_TIMEOUT if the transfer took too long, NRT_FAILURE
 * otherwise. */
NRT_STATUS nrt_async_sendrecv_test_request(nrt_async_sendrecv_request_t* request, bool* done, size_t* size);

/* Make sure the data of every receive on LNC lnc already tested done is
 * fully in memory. NRT_FAILURE on error. */
NRT_STATUS nrt_async_sendrecv_flush(int lnc);

#ifdef __cplusplus
}
#endif
