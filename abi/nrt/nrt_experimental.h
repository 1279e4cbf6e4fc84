/*
 * nrt_experimental.h: Neuron Runtime calls outside the stable core API:
 * model tensor metadata, tracing, ucode override, host collectives helpers.
 *
 * trnemu's copy of the vendor header: same prototypes, names, values and
 * layouts; comments in trnemu's own words. Calls return NRT_SUCCESS on
 * success and another NRT_STATUS code on failure unless noted.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "nrt/nrt_status.h"
#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a NEFF tensor is read or written by the model. */
typedef enum nrt_tensor_usage {
    NRT_TENSOR_USAGE_INPUT = 0, /* an input (ifmap) */
    NRT_TENSOR_USAGE_OUTPUT,    /* an output (ofmap) */
} nrt_tensor_usage_t;

/* Size of nrt_tensor_info_t.name, including the terminating NUL. */
#define NRT_TENSOR_NAME_MAX 256

/* Metadata of one input or output tensor of a model. */
typedef struct nrt_tensor_info {
    char name[NRT_TENSOR_NAME_MAX]; /* tensor name, NUL-terminated */
    nrt_tensor_usage_t usage;       /* input or output */
    size_t size;                    /* size in bytes */
    nrt_dtype_t dtype;              /* element type */
    uint32_t *shape;                /* ndim dimension lengths */
    uint32_t ndim;                  /* number of dimensions */
} nrt_tensor_info_t;

/* All input and output tensors of a model, as one allocation. */
typedef struct nrt_tensor_info_array {
    uint64_t tensor_count;            /* number of entries in tensor_array */
    nrt_tensor_info_t tensor_array[]; /* one entry per tensor */
} nrt_tensor_info_array_t;

/* Called by the async execution thread when an execution finishes: params
 * is what was registered, then the model id, VNC, job id and status. */
typedef void (*NRT_ASYNC_EXEC_STATUS_CALLBACK)(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id, NRT_STATUS status);

/* Store in *tensor_info a new array describing the model's inputs and
 * outputs; free it with nrt_free_model_tensor_info(). */
NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info);

/* Deprecated: store in *instance_count how many threads may usefully call
 * nrt_execute() on the model at once. */
NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count);

/* Free an array returned by nrt_get_model_tensor_info(). */
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info);

/* Start tracing every visible VNC; trace_mem also records allocations. */
NRT_STATUS nrt_trace_start(bool trace_mem);

/* Stop tracing and write what was collected to filename. */
NRT_STATUS nrt_trace_stop(const char *filename);

/* Return the handle of the NCCL network plugin the runtime uses, or NULL
 * with *err set and a message of at most err_msg_size bytes in err_msg. */
void *nrt_get_libnccl_net(int *err, char *err_msg, size_t err_msg_size);

/* One microcode image in host memory. */
typedef struct nrt_ucode_img {
    uint8_t *bin; /* image bytes */
    size_t size;  /* number of bytes in bin */
} nrt_ucode_img;

/* The two microcode images of the pooling (GpSimd) engine. */
typedef struct nrt_ucode_info {
    nrt_ucode_img iram; /* instruction memory image */
    nrt_ucode_img dram; /* data memory image */
} nrt_ucode_info;

/* Choose the pooling engine microcode nrt_init() will load; must be called
 * before nrt_init(), later changes are not supported. */
NRT_STATUS nrt_set_pool_eng_ucode(const nrt_ucode_info *ucode_info);

/* Copy size bytes from host memory src to memory-mapped device memory dest. */
NRT_STATUS nrt_memcpy_to_device(void *dest, const void *src, size_t size);

/* Register (or replace) the callback that reports the status of each
 * execution in async execution mode; params (may be NULL) is passed back. */
NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params);

/* Block until all g_device_count workers reach the barrier (done with a
 * small all-reduce); this worker is g_device_id, on local VNC vnc. */
NRT_STATUS nrt_barrier(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count);

/* All-gather over all workers: each gives rank_input_size bytes at input,
 * output receives g_device_count * rank_input_size bytes in rank order. */
NRT_STATUS nrt_all_gather(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count,
                          uint32_t rank_input_size, void *input, void *output);

/* Block until every execution queued for VNC vnc on the async worker
 * thread has finished. */
NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc);

/* Facts about a loaded model. Fields are only ever appended. */
typedef struct nrt_model_info {
    uint32_t vnc; /* VNC the model is loaded on */
} nrt_model_info_t;

/* Fill info (the caller's struct is info_size_in bytes) for a loaded model
 * and store in *info_size_out how many bytes were written. */
NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in, size_t *info_size_out);

#ifdef __cplusplus
}
#endif
