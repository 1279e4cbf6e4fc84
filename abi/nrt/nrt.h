/*
 * nrt.h: the core Neuron Runtime C API: start and stop the runtime, load
 * and run models (NEFFs), allocate and move tensors, query the machine.
 *
 * trnemu's copy of the vendor header: the same function prototypes, type
 * names, enumerator values and struct layouts, so programs built against
 * the vendor header run on trnemu's libnrt.so.1 unchanged. Comments are
 * trnemu's own. Unless a comment says otherwise, calls return NRT_SUCCESS
 * on success and another NRT_STATUS code on failure.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* Sibling runtime headers use quoted includes, as in the vendor headers:
 * some client build systems (Bazel) resolve only those reliably. */
#include "nrt/nrt_status.h"
#include "ndl/neuron_driver_shared_tensor_batch_op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the runtime API described by these headers. */
#define NRT_MAJOR_VERSION 2
#define NRT_MINOR_VERSION 0

/* Opaque handle of a loaded model. */
typedef struct nrt_model nrt_model_t;

/* Opaque handle of a tensor (device, host or virtual memory). */
typedef struct nrt_tensor nrt_tensor_t;

/* Opaque handle of a prepared out-of-NEFF collective operation. */
typedef struct nrt_cc_context nrt_cc_context_t;

/* Where nrt_tensor_allocate() places a tensor. Values are ABI: append only. */
typedef enum {
    NRT_TENSOR_PLACEMENT_DEVICE,  /* device memory (HBM) of a NeuronCore */
    NRT_TENSOR_PLACEMENT_HOST,    /* host memory the device can reach */
    NRT_TENSOR_PLACEMENT_VIRTUAL, /* no storage; attach a buffer later */
} nrt_tensor_placement_t;

/* The framework that calls nrt_init(). */
typedef enum {
    NRT_FRAMEWORK_TYPE_INVALID = 0,  /* not a valid choice */
    NRT_FRAMEWORK_TYPE_NO_FW = 1,    /* a program using the runtime directly */
    NRT_FRAMEWORK_TYPE_TENSORFLOW,   /* TensorFlow */
    NRT_FRAMEWORK_TYPE_PYTORCH,      /* PyTorch */
    NRT_FRAMEWORK_TYPE_MXNET,        /* MXNet */
    NRT_FRAMEWORK_TYPE_PRECHECK,     /* node health precheck */
} nrt_framework_type_t;

/* Instance families, reported in nrt_instance_info_t.family. */
enum {
    NRT_INSTANCE_UNKNOWN    = 0,  /* not recognised */
    NRT_INSTANCE_INF1       = 1,  /* Inf1 */
    NRT_INSTANCE_TRN1       = 2,  /* Trn1 */
    NRT_INSTANCE_TRN1N      = 3,  /* Trn1n */
    NRT_INSTANCE_INF2       = 4,  /* Inf2 */
    NRT_INSTANCE_TRN2       = 5,  /* Trn2 */
    NRT_INSTANCE_TRN2N      = 6,  /* Trn2n */
    NRT_INSTANCE_INF2E      = 7,  /* Inf2e */
    NRT_INSTANCE_TRN2P      = 8,  /* Trn2p */
    NRT_INSTANCE_TRN2U      = 9,  /* Trn2 UltraServer */
    NRT_INSTANCE_TRN2E      = 10, /* Trn2e */
    NRT_INSTANCE_TRN2EU     = 11, /* Trn2e UltraServer */
    NRT_INSTANCE_TRN2AC     = 12, /* Trn2ac */
    NRT_INSTANCE_TRN2UAC    = 13, /* Trn2ac UltraServer */
    NRT_INSTANCE_TRN3       = 14, /* Trn3 */
    NRT_INSTANCE_TRN3PDS98  = 15  /* Trn3 pds98 */
};

/* Instance sizes, reported in nrt_instance_info_t.size. New sizes go
 * before NRT_INSTANCE_SIZE_UNKNOWN so that existing values never move. */
enum {
    NRT_INSTANCE_SIZE_1XL,   /* xlarge */
    NRT_INSTANCE_SIZE_2XL,   /* 2xlarge */
    NRT_INSTANCE_SIZE_4XL,   /* 4xlarge */
    NRT_INSTANCE_SIZE_6XL,   /* 6xlarge */
    NRT_INSTANCE_SIZE_8XL,   /* 8xlarge */
    NRT_INSTANCE_SIZE_24XL,  /* 24xlarge */
    NRT_INSTANCE_SIZE_32XL,  /* 32xlarge */
    NRT_INSTANCE_SIZE_48XL,  /* 48xlarge */
    NRT_INSTANCE_SIZE_3XL,   /* 3xlarge */

    NRT_INSTANCE_SIZE_UNKNOWN,                        /* not recognised */
    NRT_INSTANCE_SIZE_NUM = NRT_INSTANCE_SIZE_UNKNOWN, /* number of known sizes */
};

/* Reduction applied by a collective operation. */
typedef enum nrt_op_type {
    NRT_OP_ADD     = 0x0, /* sum */
    NRT_OP_FMA     = 0x1, /* fused multiply-add */
    NRT_OP_MAX     = 0x2, /* maximum */
    NRT_OP_MIN     = 0x3, /* minimum */
    NRT_OP_INVALID = 0xF, /* not a valid choice */
} nrt_op_type_t;

/* Element types of tensors. */
typedef enum nrt_dtype {
    NRT_DTYPE_UNKNOWN  = 0x0, /* type not known */
    NRT_DTYPE_INVALID  = 0x0, /* same value: not a valid type */
    NRT_DTYPE_FP8_E3   = 0xD, /* 8-bit float, 3 exponent bits */
    NRT_DTYPE_FP8_E4   = 0xE, /* 8-bit float, 4 exponent bits */
    NRT_DTYPE_FP8_E5   = 0xF, /* 8-bit float, 5 exponent bits */
    NRT_DTYPE_FLOAT16  = 0x7, /* IEEE half precision */
    NRT_DTYPE_BFLOAT16 = 0x6, /* bfloat16 */
    NRT_DTYPE_FLOAT32  = 0xA, /* IEEE single precision */
    NRT_DTYPE_FP32R    = 0xB, /* float32 computed with reduced precision */
    NRT_DTYPE_UINT8    = 0x3, /* unsigned 8-bit integer */
    NRT_DTYPE_UINT16   = 0x5, /* unsigned 16-bit integer */
    NRT_DTYPE_UINT32   = 0x9, /* unsigned 32-bit integer */
    NRT_DTYPE_UINT64   = 0x1, /* unsigned 64-bit integer */
    NRT_DTYPE_INT8     = 0x2, /* signed 8-bit integer */
    NRT_DTYPE_INT16    = 0x4, /* signed 16-bit integer */
    NRT_DTYPE_INT32    = 0x8, /* signed 32-bit integer */
    NRT_DTYPE_INT64    = 0xC, /* signed 64-bit integer */
} nrt_dtype_t;

/* Kinds of out-of-NEFF collective operations. */
typedef enum nrt_cc_op_type {
    NRT_CC_ALLGATHER,     /* every rank receives every rank's input */
    NRT_CC_ALLREDUCE,     /* every rank receives the reduction of all inputs */
    NRT_CC_REDUCESCATTER  /* each rank receives one slice of the reduction */
} nrt_cc_op_type_t;

/* What machine the runtime runs on. */
typedef struct nrt_instance_info {
    uint32_t family;         /* one of NRT_INSTANCE_* */
    uint32_t size;           /* one of NRT_INSTANCE_SIZE_* */
    char arch_name[16];      /* chip architecture name, NUL-terminated */
    char device_revision[8]; /* chip revision, NUL-terminated */
} nrt_instance_info_t;

/* Fill `info` (at most instance_info_len bytes of it: a caller built with
 * an older, shorter struct gets its prefix) with the instance's family,
 * size and chip names. NRT_INVALID on a NULL buffer or a zero length. */
NRT_STATUS nrt_get_instance_info(nrt_instance_info_t *info, size_t instance_info_len);

/* Start the runtime: find (or emulate) the devices and claim the visible
 * NeuronCores. fw_version and fal_version are free-form strings for logs. */
NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version, const char *fal_version);

/* Stop the runtime: unload what is left and release every device. */
void nrt_close(void);

/* Load a NEFF image (size bytes) onto a VNC; vnc -1 picks the first free
 * one, vnc_count is deprecated (pass -1). The new model goes to *model. */
NRT_STATUS nrt_load(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count, nrt_model_t **model);

/* Like nrt_load() for a NEFF with collectives: this worker is rank
 * ctx_device_id of ctx_device_count. Builds the global communicator from
 * those two numbers if nrt_build_global_comm() was not called before. */
NRT_STATUS nrt_load_collectives(const void *neff_bytes, size_t size, int32_t vnc, int32_t vnc_count,
                                uint32_t ctx_device_id, uint32_t ctx_device_count, nrt_model_t **model);

/* Unload a model and free its device and host resources. */
NRT_STATUS nrt_unload(nrt_model_t *model);

/* Deprecated name of nrt_get_model_vnc_count(). */
NRT_STATUS nrt_get_model_nc_count(const nrt_model_t *model, uint32_t *vnc_count);

/* Store in *vnc_count how many VNCs a loaded model occupies. */
NRT_STATUS nrt_get_model_vnc_count(const nrt_model_t *model, uint32_t *vnc_count);

/* Deprecated name of nrt_get_total_vnc_count(). */
NRT_STATUS nrt_get_total_nc_count(uint32_t *vnc_count);

/* Store in *vnc_count how many VNCs the instance has; works before nrt_init(). */
NRT_STATUS nrt_get_total_vnc_count(uint32_t *vnc_count);

/* Deprecated name of nrt_get_visible_vnc_count(). */
NRT_STATUS nrt_get_visible_nc_count(uint32_t *vnc_count);

/* Store in *vnc_count how many VNCs this process may use; works before nrt_init(). */
NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count);

/* A set of named tensors (the inputs or outputs of one execution). */
typedef void nrt_tensor_set_t;

/* Create an empty tensor set in *result. */
NRT_STATUS nrt_allocate_tensor_set(nrt_tensor_set_t **result);

/* Free a tensor set (not the tensors in it) and set *tensor_set to NULL. */
void nrt_destroy_tensor_set(nrt_tensor_set_t **tensor_set);

/* Add a tensor under tensor_name, replacing one of the same name; the
 * tensor must stay alive until the set is destroyed. */
NRT_STATUS nrt_add_tensor_to_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t *tensor);

/* Look up the tensor named tensor_name and store it in *tensor. */
NRT_STATUS nrt_get_tensor_from_tensor_set(nrt_tensor_set_t *tensor_set, const char *tensor_name, nrt_tensor_t **tensor);

/* Run a model once on the given inputs, writing the given outputs. */
NRT_STATUS nrt_execute(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set);

/* Run a model repeat_count times on the same inputs and outputs. */
NRT_STATUS nrt_execute_repeat(nrt_model_t *model, const nrt_tensor_set_t *input_set, nrt_tensor_set_t *output_set, int repeat_count);

/* Set up the global communicator used by NEFF collectives: this worker is
 * rank g_device_id of g_device_count, running on local VNC vnc. */
NRT_STATUS nrt_build_global_comm(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count);

/* Allocate a tensor of size bytes at the given placement on VNC vnc (-1
 * for host memory); name is optional. The new tensor goes to *tensor. */
NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int vnc, size_t size, const char *name, nrt_tensor_t **tensor);

/* Free a tensor (and the storage it owns) and set *tensor to NULL. */
void nrt_tensor_free(nrt_tensor_t **tensor);

/* Copy size bytes starting at offset from the tensor into buf. */
NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset, size_t size);

/* Copy size bytes from buf into the tensor starting at offset. */
NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset, size_t size);

/* All the copy steps of one batched read or write on one tensor
 * (nrt_tensor_batch_op_t comes from the ndl header included above). */
typedef struct nrt_tensor_batch {
    const nrt_tensor_t *tensor;       /* the tensor the steps act on */
    const nrt_tensor_batch_op_t *ops; /* array of num_ops copy steps */
    uint32_t num_ops;                 /* number of entries in ops */
} nrt_tensor_batch_t;

/* Perform every read step of num_batches batches (tensor -> buffer);
 * unsafe skips the runtime's tracking of in-flight uses of the tensors. */
NRT_STATUS nrt_tensor_read_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe);

/* Perform every write step of num_batches batches (buffer -> tensor);
 * unsafe skips the runtime's tracking of in-flight uses of the tensors. */
NRT_STATUS nrt_tensor_write_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches, bool unsafe);

/* Copy size bytes between tensors; two device tensors must sit on the same
 * NeuronCore, else NRT_INVALID. */
NRT_STATUS nrt_tensor_copy(const nrt_tensor_t *src, size_t src_offset, nrt_tensor_t *dst, size_t dst_offset, size_t size);

/* Return the size of a tensor in bytes. */
size_t nrt_tensor_get_size(const nrt_tensor_t *tensor);

/* Set size bytes of the tensor, starting at offset, to the byte value. */
NRT_STATUS nrt_tensor_memset(nrt_tensor_t *tensor, uint64_t offset, int value, size_t size);

/* Create a tensor with no storage yet (see nrt_tensor_attach_buffer()). */
NRT_STATUS nrt_tensor_allocate_empty(const char *name, nrt_tensor_t **tensor);

/* Make a caller-owned buffer of size bytes the tensor's storage; storage
 * the tensor owned before is freed. The buffer must outlive the tensor. */
NRT_STATUS nrt_tensor_attach_buffer(nrt_tensor_t *tensor, void *buffer, size_t size);

/* Create in *tensor_slice a tensor that views size bytes of tensor_source
 * starting at offset; no data is copied. */
NRT_STATUS nrt_tensor_allocate_slice(const nrt_tensor_t *tensor_source, size_t offset, size_t size, const char *name, nrt_tensor_t **tensor_slice);

/* Return the host-visible address of a tensor's storage, or NULL. */
void *nrt_tensor_get_va(const nrt_tensor_t *tensor);

/* Where a device tensor lives. */
typedef struct nrt_tensor_device_allocation_info {
    uint64_t physical_address; /* device address of the allocation */
    size_t size;               /* allocated bytes (may exceed the tensor size) */
    int hbm_index;             /* index of the HBM holding it */
} nrt_tensor_device_allocation_info_t;

/* Fill alloc_info with the device placement of a tensor. */
NRT_STATUS nrt_tensor_get_device_allocation_info(const nrt_tensor_t *tensor, nrt_tensor_device_allocation_info_t *alloc_info);

/* Wait up to timeout microseconds (negative: forever, with a warning after
 * 30 s) until an output tensor has been completed expected_completion_count
 * times. NRT_SUCCESS when done, NRT_INVALID for NULL, NRT_TIMEOUT if not. */
NRT_STATUS nrt_tensor_check_output_completion(const nrt_tensor_t *output_tensor,
                                              int64_t timeout,
                                              uint64_t expected_completion_count);

/* Set an output tensor's completion count back to 0; NRT_INVALID for NULL. */
NRT_STATUS nrt_tensor_reset_output_completion(nrt_tensor_t *output_tensor);

/* Store in *fd a dma-buf file descriptor for the device memory at va of
 * size bytes (memory registered for EFA peer-direct access). */
NRT_STATUS nrt_get_dmabuf_fd(uint64_t va, uint64_t size, int* fd);

/* Translate a runtime device index into the host's device id;
 * NRT_INVALID if there is no such device. */
NRT_STATUS nrt_host_device_id_get(int neuron_dev, uint32_t *host_device_id);

/* Fill host_did_to_rid_map, a table whose index is the host device id,
 * with each device's routing id as the driver reports it; *count holds the
 * table's capacity on entry and the entries written on return.
 * NRT_INVALID on failure. */
NRT_STATUS nrt_host_device_id_rid_map_get(uint32_t *count, uint32_t *host_did_to_rid_map);

/* Map HBM region hbm_idx of device device_id and return its address and
 * size. NRT_INVALID_HANDLE once hbm_idx is past the last region,
 * NRT_INVALID for bad arguments or no support, NRT_FAILURE otherwise. */
NRT_STATUS nrt_get_hbm_mmap_va(int device_id, int hbm_idx, void **addr, size_t *size);

/* Device memory use of one VNC. Fields are only ever appended. */
typedef struct nrt_vnc_memory_stats {
    size_t bytes_used;  /* bytes currently allocated */
    size_t bytes_limit; /* bytes the VNC may allocate in total */
} nrt_vnc_memory_stats_t;

/* Fill stats (the caller's struct is stats_size_in bytes) for VNC vnc and
 * store in *stats_size_out how many bytes were written. */
NRT_STATUS nrt_get_vnc_memory_stats(uint32_t vnc, nrt_vnc_memory_stats_t *stats, size_t stats_size_in, size_t *stats_size_out);

/* Write into efa_bdf the PCI BDF of the EFA device next to the Neuron
 * device holding va; *len is the buffer size (with NUL) on entry and the
 * string length (without NUL) on return. NRT_RESOURCE if the buffer is too
 * small, NRT_FAILURE for other errors. */
NRT_STATUS nrt_get_attached_efa_bdf(const void *va, char *efa_bdf, size_t *len);

/* ---- Collectives issued from the host, outside any NEFF ---- */

/* The group of workers an out-of-NEFF collective runs over. */
typedef struct nrt_cc_comm {
    uint32_t *replica_group;   /* ranks taking part, rank_n entries */
    uint32_t rank;             /* this worker's position in replica_group */
    uint32_t rank_n;           /* number of entries in replica_group */

    uint32_t ctx_device_id;    /* this worker's global device id */
    uint32_t ctx_device_count; /* number of workers in the job */
    uint32_t vnc;              /* local VNC the operation runs on */
} nrt_cc_comm_t;

/* A list of tensors used as the input or output of a collective. */
typedef struct nrt_tensor_list {
    nrt_tensor_t **tensors; /* array of num_tensors tensor handles */
    size_t num_tensors;     /* number of entries in tensors */
} nrt_tensor_list_t;

/* Set up the global communicator for host-issued collectives: this worker
 * is rank g_device_id of g_device_count, running on local VNC vnc. */
NRT_STATUS nrt_cc_global_comm_init(uint32_t vnc, uint32_t g_device_id, uint32_t g_device_count);

#ifdef __cplusplus
}
#endif
