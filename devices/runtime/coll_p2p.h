/*
 * coll_p2p.h: point-to-point transfers between processes
 * (nrt_async_sendrecv_*), over the instance's channels.
 */
#ifndef TRNEMU_DEVICES_COLL_P2P_H
#define TRNEMU_DEVICES_COLL_P2P_H

#include <stdbool.h>
#include <stddef.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_status.h"

/* LNCs are machine-wide VNC ids; side 0 sends, 1 receives. Statuses as the
 * nrt_async_sendrecv_* functions document them. Callers hold rt_enter(). */
NRT_STATUS coll_p2p_init(int lnc);
NRT_STATUS coll_p2p_close(int lnc);
NRT_STATUS coll_p2p_flush(int lnc);
NRT_STATUS coll_p2p_open(const char *peer_ip, int peer_lnc, int lnc, int side,
                         nrt_async_sendrecv_comm_t **out);
NRT_STATUS coll_p2p_test_comm(nrt_async_sendrecv_comm_t *c, bool *done);
NRT_STATUS coll_p2p_post(nrt_tensor_t *t, size_t off, size_t len, nrt_async_sendrecv_comm_t *c,
                         int side, nrt_async_sendrecv_request_t **out);
NRT_STATUS coll_p2p_test(nrt_async_sendrecv_request_t *r, bool *done, size_t *size);
int coll_p2p_max_comms(void);
int coll_p2p_max_pending(void);

#endif
