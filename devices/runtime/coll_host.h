/*
 * coll_host.h: the collectives a program issues from the host, outside any
 * NEFF (nrt_build_global_comm, nrt_barrier, nrt_all_gather, nrta_cc_*,
 * trnemu_all_to_all_v / trnemu_all_gather_v), over the communicators of
 * devices/coll/coll.h.
 */
#ifndef TRNEMU_DEVICES_COLL_HOST_H
#define TRNEMU_DEVICES_COLL_HOST_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/coll/coll.h"
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"

/* vnc is the caller's local VNC; rank/world its global device id and count.
 * Callers hold rt_enter(). */
/* The communicator of rank of world on local VNC vnc (joined on first use). */
NRT_STATUS coll_host_comm(int32_t vnc, uint32_t rank, uint32_t world, struct coll_comm **out);
NRT_STATUS coll_host_join(int32_t vnc, uint32_t rank, uint32_t world);
NRT_STATUS coll_host_barrier(int32_t vnc, uint32_t rank, uint32_t world);
NRT_STATUS coll_host_all_gather(int32_t vnc, uint32_t rank, uint32_t world, uint64_t bytes,
                                const void *in, void *out);
/* Check and record a collective over tensor lists (nrta_cc_prepare): dtype
 * an nrt_dtype_t, op an nrt_op_type_t, cc_op an nrt_cc_op_type_t. */
NRT_STATUS coll_cc_prepare(const nrt_cc_comm_t *comm, const nrt_tensor_list_t *in,
                           const nrt_tensor_list_t *out, uint32_t dtype, uint32_t op,
                           uint32_t cc_op, nrt_cc_context_t **ctx);
/* Run a prepared collective now (on an async queue's thread). */
NRT_STATUS coll_cc_run(const nrt_cc_context_t *x);
/* The local VNC a prepared collective runs on. */
int32_t coll_cc_vnc(const nrt_cc_context_t *x);
/* The ranks taking part in x (its replica group). */
uint32_t coll_cc_ranks(const nrt_cc_context_t *x);
/* Is x a prepared context not yet freed? */
bool coll_cc_is_live(const nrt_cc_context_t *x);
void coll_cc_free(nrt_cc_context_t *x);
/* Free every prepared context never scheduled (nrt_close). */
void coll_cc_free_all(void);
/* A variable-count collective (coll_v_run) from the host (trnemu_all_to_all_v, trnemu_all_gather_v). */
NRT_STATUS coll_host_v(int32_t vnc, uint32_t rank, uint32_t world, const struct coll_vargs *a);

#endif
