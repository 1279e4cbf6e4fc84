/*
 * nrt_async.h: the asynchronous Neuron Runtime API (nrta_*): queue tensor
 * reads, writes, copies, model executions and collectives on execution
 * units, then poll or wait for their sequence numbers.
 *
 * trnemu's copy of the vendor header: same prototypes, names, values and
 * layouts; comments in trnemu's own words. Calls return NRT_SUCCESS on
 * success and another NRT_STATUS code on failure unless noted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Execution units (XUs): each has its own queues and sequence counter.
 * Values are ABI: new units are only appended. */
typedef enum {
    NRTA_XU_TENSOR_READ = 0, /* device -> host tensor reads */
    NRTA_XU_TENSOR_WRITE,    /* host -> device tensor writes */
    NRTA_XU_TENSOR_OP,       /* other tensor operations (copies) */
    NRTA_XU_COMPUTE,         /* model executions */
    NRTA_XU_COLLECTIVES,     /* collective operations */

    NRTA_XU_TYPE_NUM         /* number of execution unit kinds */
} nrta_xu_t;

/* Identifier of one queued request, increasing per execution unit: the top
 * 16 bits name the execution unit, the low 48 bits are the sequence number. */
typedef uint64_t nrta_seq_t;
/* The execution unit part of a nrta_seq_t. */
typedef uint16_t nrta_xu_id_t;

/* Largest sequence number, and the mask selecting it from a nrta_seq_t. */
#define NRTA_SEQ_NUM_MAX      ((1ull << 48) - 1)
#define NRTA_SEQ_NUM_MASK     NRTA_SEQ_NUM_MAX
/* Split a nrta_seq_t into its sequence number and execution unit id. */
#define NRTA_SEQ_GET_SEQ_NUM(seq_id)  ((seq_id) & NRTA_SEQ_NUM_MASK)
#define NRTA_SEQ_GET_XU_ID(seq_id)    ((seq_id) >> 48)

/* One failed request, as kept by an error tracker (16 bytes). */
typedef struct nrta_error {
    nrta_seq_t seq_id;   /* the request that failed */
    uint64_t error_code; /* its NRT_STATUS, widened to a fixed 64 bits */
} nrta_error_t;

/* Opaque collector of the errors of asynchronous requests. */
typedef struct nrta_error_tracker nrta_error_tracker_t;

/* Queue a copy of size bytes from host buf into the tensor at offset, on
 * the TENSOR_WRITE unit of the tensor's LNC, queue `queue`. Failures go to
 * err; the request's sequence number to *req_sequence. */
NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor,
                             const void *buf,
                             uint64_t offset,
                             uint64_t size,
                             int queue,
                             nrta_error_tracker_t *err,
                             nrta_seq_t *req_sequence);

/* Queue a copy of size bytes from the tensor at offset into host buf, on
 * the TENSOR_READ unit of the tensor's LNC. Arguments as nrta_tensor_write(). */
NRT_STATUS nrta_tensor_read(void *buf,
                            nrt_tensor_t *tensor,
                            uint64_t offset,
                            uint64_t size,
                            int queue,
                            nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/* Queue a copy of size bytes between two tensors of the same LNC on the
 * TENSOR_OP unit; both tensors must stay allocated until it completes. */
NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src,
                            uint64_t src_offset,
                            nrt_tensor_t *dst,
                            uint64_t dst_offset,
                            uint64_t size,
                            int queue,
                            nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/* Queue one execution of a model on the COMPUTE unit of its LNC; queue
 * must be 0. */
NRT_STATUS nrta_execute_schedule(nrt_model_t *model,
                                 const nrt_tensor_set_t *input,
                                 nrt_tensor_set_t *output,
                                 int queue,
                                 nrta_error_tracker_t *err,
                                 nrta_seq_t *req_sequence);

/* Prepare a collective (cc_op with reduction op over dtype elements) from
 * input to output over comm, and return its context in *cc_ctx; the
 * context is freed once the scheduled operation has run. */
NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm,
                           nrt_tensor_list_t *input,
                           nrt_tensor_list_t *output,
                           nrt_dtype_t dtype,
                           nrt_op_type_t op,
                           nrt_cc_op_type_t cc_op,
                           nrt_cc_context_t **cc_ctx);

/* Queue a prepared collective on the COLLECTIVES unit; queue must be 0. */
NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx,
                            int queue,
                            nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/* Store in *is_completed whether request seq has finished; NRT_INVALID if
 * seq is not a valid sequence number. */
NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed);

/* Store in *seq the last completed sequence number of queue `queue` of
 * execution unit xu on LNC lnc. */
NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq);

/* Store in *fd a descriptor that polls readable once request seq is
 * complete. Use it only with poll()-style calls, and close() it when done. */
NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd);

/* Create in *error_tracker an empty error tracker for LNC lnc_idx. */
NRT_STATUS nrta_error_tracker_create(uint32_t lnc_idx, nrta_error_tracker_t **error_tracker);

/* Free an error tracker. */
void nrta_error_tracker_destroy(nrta_error_tracker_t *error_tracker);

/* Store in *list the errors recorded so far and their count in *error_count;
 * the array belongs to the tracker. */
NRT_STATUS nrta_error_tracker_get_list(nrta_error_tracker_t *error_tracker, const nrta_error_t **list, size_t *error_count);

#ifdef __cplusplus
}
#endif
