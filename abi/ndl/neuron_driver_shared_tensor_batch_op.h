/*
 * neuron_driver_shared_tensor_batch_op.h: one copy step of a batched tensor
 * read or write (see nrt_tensor_read_batch / nrt_tensor_write_batch).
 *
 * trnemu's copy of the header the vendor runtime shares with its kernel
 * driver: same names and layout, comments in trnemu's own words.
 */
#ifndef NEURON_DRIVER_SHARED_TENSOR_BATCH_OP_H
#define NEURON_DRIVER_SHARED_TENSOR_BATCH_OP_H

#ifdef __KERNEL__
#include <linux/types.h>
typedef __u64 nrt_tensor_batch_offset_t;   /* byte offset inside a tensor */
typedef __u64 nrt_tensor_batch_size_t;     /* byte count of one step */
#else
#include <stdint.h>
typedef uint64_t nrt_tensor_batch_offset_t; /* byte offset inside a tensor */
typedef uint64_t nrt_tensor_batch_size_t;   /* byte count of one step */
#endif

/* One step: move `size` bytes between the tensor at `offset` and `buffer`. */
typedef struct nrt_tensor_batch_op {
    nrt_tensor_batch_offset_t offset; /* where in the tensor the step starts */
    nrt_tensor_batch_size_t size;     /* how many bytes the step moves */
    void *buffer;                     /* host memory read from or written to */
} nrt_tensor_batch_op_t;

#endif /* NEURON_DRIVER_SHARED_TENSOR_BATCH_OP_H */
