/*
 * abi_layout.c: compile-time proof that trnemu's public headers keep the
 * vendor Neuron Runtime ABI. Every enumerator value, every public struct's
 * size, alignment and field offsets (as listed in tests/abi/
 * abi-facts.json, x86-64 / LP64), the enum sizes and the macros users rely
 * on are asserted here, so a layout drift fails the build of libnrt.so.1.
 *
 * Defines no symbol at all: it holds only _Static_asserts. The test
 * tests/abi (abi-facts) checks the same facts at run time from the JSON.
 */
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_version.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/ndebug_stream.h"
#include "ndl/neuron_driver_shared_tensor_batch_op.h"

#define ABI_VALUE(name, value) \
    _Static_assert((name) == (value), "ABI: value of " #name)
#define ABI_SIZE(type, bytes) \
    _Static_assert(sizeof(type) == (bytes), "ABI: size of " #type)
#define ABI_ALIGN(type, bytes) \
    _Static_assert(_Alignof(type) == (bytes), "ABI: alignment of " #type)
#define ABI_OFFSET(type, field, bytes) \
    _Static_assert(offsetof(type, field) == (bytes), "ABI: offset of " #type "." #field)

/* ---- Macros ---- */
ABI_VALUE(NRT_MAJOR_VERSION, 2);
ABI_VALUE(NRT_MINOR_VERSION, 0);
ABI_VALUE(NRT_TENSOR_NAME_MAX, 256);
ABI_VALUE(RT_VERSION_DETAIL_LEN, 128);
ABI_VALUE(GIT_HASH_LEN, 64);
ABI_VALUE(NRTA_SEQ_NUM_MAX, 0xffffffffffffull);
ABI_VALUE(NRTA_SEQ_NUM_MASK, 0xffffffffffffull);
ABI_VALUE(NRTA_SEQ_GET_SEQ_NUM(0x0003000000000007ull), 7);
ABI_VALUE(NRTA_SEQ_GET_XU_ID(0x0003000000000007ull), 3);

/* ---- Enumerator values ---- */
ABI_VALUE(NRTA_XU_COLLECTIVES, 4);
ABI_VALUE(NRTA_XU_COMPUTE, 3);
ABI_VALUE(NRTA_XU_TENSOR_OP, 2);
ABI_VALUE(NRTA_XU_TENSOR_READ, 0);
ABI_VALUE(NRTA_XU_TENSOR_WRITE, 1);
ABI_VALUE(NRTA_XU_TYPE_NUM, 5);
ABI_VALUE(NRT_CC_ALLGATHER, 0);
ABI_VALUE(NRT_CC_ALLREDUCE, 1);
ABI_VALUE(NRT_CC_REDUCESCATTER, 2);
ABI_VALUE(NRT_CLOSED, 14);
ABI_VALUE(NRT_COLL_PENDING, 1100);
ABI_VALUE(NRT_DTYPE_BFLOAT16, 6);
ABI_VALUE(NRT_DTYPE_FLOAT16, 7);
ABI_VALUE(NRT_DTYPE_FLOAT32, 10);
ABI_VALUE(NRT_DTYPE_FP32R, 11);
ABI_VALUE(NRT_DTYPE_FP8_E3, 13);
ABI_VALUE(NRT_DTYPE_FP8_E4, 14);
ABI_VALUE(NRT_DTYPE_FP8_E5, 15);
ABI_VALUE(NRT_DTYPE_INT16, 4);
ABI_VALUE(NRT_DTYPE_INT32, 8);
ABI_VALUE(NRT_DTYPE_INT64, 12);
ABI_VALUE(NRT_DTYPE_INT8, 2);
ABI_VALUE(NRT_DTYPE_INVALID, 0);
ABI_VALUE(NRT_DTYPE_UINT16, 5);
ABI_VALUE(NRT_DTYPE_UINT32, 9);
ABI_VALUE(NRT_DTYPE_UINT64, 1);
ABI_VALUE(NRT_DTYPE_UINT8, 3);
ABI_VALUE(NRT_DTYPE_UNKNOWN, 0);
ABI_VALUE(NRT_EXEC_BAD_INPUT, 1002);
ABI_VALUE(NRT_EXEC_COMPLETED_WITH_ERR, 1004);
ABI_VALUE(NRT_EXEC_COMPLETED_WITH_NUM_ERR, 1003);
ABI_VALUE(NRT_EXEC_HW_ERR_COLLECTIVES, 1200);
ABI_VALUE(NRT_EXEC_HW_ERR_DMA_ABORT, 1203);
ABI_VALUE(NRT_EXEC_HW_ERR_HBM_UE, 1201);
ABI_VALUE(NRT_EXEC_HW_ERR_NC_UE, 1202);
ABI_VALUE(NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE, 1205);
ABI_VALUE(NRT_EXEC_NC_BUSY, 1005);
ABI_VALUE(NRT_EXEC_OOB, 1006);
ABI_VALUE(NRT_EXEC_SW_NQ_OVERFLOW, 1204);
ABI_VALUE(NRT_EXEC_UNIT_UNRECOVERABLE, 101);
ABI_VALUE(NRT_FAILURE, 1);
ABI_VALUE(NRT_FAIL_HOST_MEM_ALLOC, 11);
ABI_VALUE(NRT_FRAMEWORK_TYPE_INVALID, 0);
ABI_VALUE(NRT_FRAMEWORK_TYPE_MXNET, 4);
ABI_VALUE(NRT_FRAMEWORK_TYPE_NO_FW, 1);
ABI_VALUE(NRT_FRAMEWORK_TYPE_PRECHECK, 5);
ABI_VALUE(NRT_FRAMEWORK_TYPE_PYTORCH, 3);
ABI_VALUE(NRT_FRAMEWORK_TYPE_TENSORFLOW, 2);
ABI_VALUE(NRT_HW_ERROR, 6);
ABI_VALUE(NRT_INSTANCE_INF1, 1);
ABI_VALUE(NRT_INSTANCE_INF2, 4);
ABI_VALUE(NRT_INSTANCE_INF2E, 7);
ABI_VALUE(NRT_INSTANCE_SIZE_1XL, 0);
ABI_VALUE(NRT_INSTANCE_SIZE_24XL, 5);
ABI_VALUE(NRT_INSTANCE_SIZE_2XL, 1);
ABI_VALUE(NRT_INSTANCE_SIZE_32XL, 6);
ABI_VALUE(NRT_INSTANCE_SIZE_3XL, 8);
ABI_VALUE(NRT_INSTANCE_SIZE_48XL, 7);
ABI_VALUE(NRT_INSTANCE_SIZE_4XL, 2);
ABI_VALUE(NRT_INSTANCE_SIZE_6XL, 3);
ABI_VALUE(NRT_INSTANCE_SIZE_8XL, 4);
ABI_VALUE(NRT_INSTANCE_SIZE_NUM, 9);
ABI_VALUE(NRT_INSTANCE_SIZE_UNKNOWN, 9);
ABI_VALUE(NRT_INSTANCE_TRN1, 2);
ABI_VALUE(NRT_INSTANCE_TRN1N, 3);
ABI_VALUE(NRT_INSTANCE_TRN2, 5);
ABI_VALUE(NRT_INSTANCE_TRN2AC, 12);
ABI_VALUE(NRT_INSTANCE_TRN2E, 10);
ABI_VALUE(NRT_INSTANCE_TRN2EU, 11);
ABI_VALUE(NRT_INSTANCE_TRN2N, 6);
ABI_VALUE(NRT_INSTANCE_TRN2P, 8);
ABI_VALUE(NRT_INSTANCE_TRN2U, 9);
ABI_VALUE(NRT_INSTANCE_TRN2UAC, 13);
ABI_VALUE(NRT_INSTANCE_TRN3, 14);
ABI_VALUE(NRT_INSTANCE_TRN3PDS98, 15);
ABI_VALUE(NRT_INSTANCE_UNKNOWN, 0);
ABI_VALUE(NRT_INVALID, 2);
ABI_VALUE(NRT_INVALID_HANDLE, 3);
ABI_VALUE(NRT_LOAD_NOT_ENOUGH_NC, 9);
ABI_VALUE(NRT_NETWORK_PROXY_FAILURE, 1206);
ABI_VALUE(NRT_OP_ADD, 0);
ABI_VALUE(NRT_OP_FMA, 1);
ABI_VALUE(NRT_OP_INVALID, 15);
ABI_VALUE(NRT_OP_MAX, 2);
ABI_VALUE(NRT_OP_MIN, 3);
ABI_VALUE(NRT_QUEUE_EMPTY, 15);
ABI_VALUE(NRT_QUEUE_FULL, 7);
ABI_VALUE(NRT_RESOURCE, 4);
ABI_VALUE(NRT_SUCCESS, 0);
ABI_VALUE(NRT_TENSOR_PLACEMENT_DEVICE, 0);
ABI_VALUE(NRT_TENSOR_PLACEMENT_HOST, 1);
ABI_VALUE(NRT_TENSOR_PLACEMENT_VIRTUAL, 2);
ABI_VALUE(NRT_TENSOR_USAGE_INPUT, 0);
ABI_VALUE(NRT_TENSOR_USAGE_OUTPUT, 1);
ABI_VALUE(NRT_TIMEOUT, 5);
ABI_VALUE(NRT_UNINITIALIZED, 13);
ABI_VALUE(NRT_UNSUPPORTED_NEFF_VERSION, 10);

/* ---- Sizes of the enum and scalar types used in prototypes and structs ---- */
ABI_SIZE(NRT_STATUS, 4);
ABI_SIZE(nrt_tensor_placement_t, 4);
ABI_SIZE(nrt_framework_type_t, 4);
ABI_SIZE(nrt_op_type_t, 4);
ABI_SIZE(nrt_dtype_t, 4);
ABI_SIZE(nrt_cc_op_type_t, 4);
ABI_SIZE(nrt_tensor_usage_t, 4);
ABI_SIZE(nrta_xu_t, 4);
ABI_SIZE(nrta_seq_t, 8);
ABI_SIZE(nrta_xu_id_t, 2);
ABI_SIZE(nrt_tensor_batch_offset_t, 8);
ABI_SIZE(nrt_tensor_batch_size_t, 8);

/* ---- Struct layouts (LP64: x86-64 and aarch64 agree) ---- */
#if UINTPTR_MAX == UINT64_MAX
ABI_SIZE(nrt_cc_comm_t, 32);
ABI_ALIGN(nrt_cc_comm_t, 8);
ABI_OFFSET(nrt_cc_comm_t, replica_group, 0);
ABI_OFFSET(nrt_cc_comm_t, rank, 8);
ABI_OFFSET(nrt_cc_comm_t, rank_n, 12);
ABI_OFFSET(nrt_cc_comm_t, ctx_device_id, 16);
ABI_OFFSET(nrt_cc_comm_t, ctx_device_count, 20);
ABI_OFFSET(nrt_cc_comm_t, vnc, 24);
ABI_SIZE(nrt_instance_info_t, 32);
ABI_ALIGN(nrt_instance_info_t, 4);
ABI_OFFSET(nrt_instance_info_t, family, 0);
ABI_OFFSET(nrt_instance_info_t, size, 4);
ABI_OFFSET(nrt_instance_info_t, arch_name, 8);
ABI_OFFSET(nrt_instance_info_t, device_revision, 24);
ABI_SIZE(nrt_model_info_t, 4);
ABI_ALIGN(nrt_model_info_t, 4);
ABI_SIZE(nrt_tensor_batch_op_t, 24);
ABI_ALIGN(nrt_tensor_batch_op_t, 8);
ABI_OFFSET(nrt_tensor_batch_op_t, offset, 0);
ABI_OFFSET(nrt_tensor_batch_op_t, size, 8);
ABI_OFFSET(nrt_tensor_batch_op_t, buffer, 16);
ABI_SIZE(nrt_tensor_batch_t, 24);
ABI_ALIGN(nrt_tensor_batch_t, 8);
ABI_OFFSET(nrt_tensor_batch_t, tensor, 0);
ABI_OFFSET(nrt_tensor_batch_t, ops, 8);
ABI_OFFSET(nrt_tensor_batch_t, num_ops, 16);
ABI_SIZE(nrt_tensor_device_allocation_info_t, 24);
ABI_ALIGN(nrt_tensor_device_allocation_info_t, 8);
ABI_OFFSET(nrt_tensor_device_allocation_info_t, physical_address, 0);
ABI_OFFSET(nrt_tensor_device_allocation_info_t, size, 8);
ABI_OFFSET(nrt_tensor_device_allocation_info_t, hbm_index, 16);
ABI_SIZE(nrt_tensor_info_array_t, 8);
ABI_ALIGN(nrt_tensor_info_array_t, 8);
ABI_OFFSET(nrt_tensor_info_array_t, tensor_count, 0);
ABI_OFFSET(nrt_tensor_info_array_t, tensor_array, 8);
ABI_SIZE(nrt_tensor_info_t, 296);
ABI_ALIGN(nrt_tensor_info_t, 8);
ABI_OFFSET(nrt_tensor_info_t, name, 0);
ABI_OFFSET(nrt_tensor_info_t, usage, 256);
ABI_OFFSET(nrt_tensor_info_t, size, 264);
ABI_OFFSET(nrt_tensor_info_t, dtype, 272);
ABI_OFFSET(nrt_tensor_info_t, shape, 280);
ABI_OFFSET(nrt_tensor_info_t, ndim, 288);
ABI_SIZE(nrt_tensor_list_t, 16);
ABI_ALIGN(nrt_tensor_list_t, 8);
ABI_SIZE(nrt_ucode_img, 16);
ABI_ALIGN(nrt_ucode_img, 8);
ABI_SIZE(nrt_ucode_info, 32);
ABI_ALIGN(nrt_ucode_info, 8);
ABI_SIZE(nrt_version_t, 224);
ABI_ALIGN(nrt_version_t, 8);
ABI_OFFSET(nrt_version_t, rt_major, 0);
ABI_OFFSET(nrt_version_t, rt_minor, 8);
ABI_OFFSET(nrt_version_t, rt_patch, 16);
ABI_OFFSET(nrt_version_t, rt_maintenance, 24);
ABI_OFFSET(nrt_version_t, rt_detail, 32);
ABI_OFFSET(nrt_version_t, git_hash, 160);
ABI_SIZE(nrt_vnc_memory_stats_t, 16);
ABI_ALIGN(nrt_vnc_memory_stats_t, 8);
ABI_OFFSET(nrt_vnc_memory_stats_t, bytes_used, 0);
ABI_OFFSET(nrt_vnc_memory_stats_t, bytes_limit, 8);
ABI_SIZE(nrta_error_t, 16);
ABI_ALIGN(nrta_error_t, 8);
ABI_OFFSET(nrta_error_t, seq_id, 0);
ABI_OFFSET(nrta_error_t, error_code, 8);
/* Fields of the structs abi-facts.json lists without offsets (read off
 * the vendor headers' declarations). */
ABI_OFFSET(nrt_model_info_t, vnc, 0);
ABI_OFFSET(nrt_tensor_list_t, tensors, 0);
ABI_OFFSET(nrt_tensor_list_t, num_tensors, 8);
ABI_OFFSET(nrt_ucode_img, bin, 0);
ABI_OFFSET(nrt_ucode_img, size, 8);
ABI_OFFSET(nrt_ucode_info, iram, 0);
ABI_OFFSET(nrt_ucode_info, dram, 16);
/* ndebug_stream.h (tests/abi/abi-facts-debug-stream.json). */
ABI_VALUE(NDEBUG_STREAM_EVENT_TYPE_INVALID, 0);
ABI_VALUE(NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ, 1);
ABI_SIZE(ndebug_stream_event_header_t, 64);
ABI_ALIGN(ndebug_stream_event_header_t, 8);
ABI_OFFSET(ndebug_stream_event_header_t, data_size, 0);
ABI_OFFSET(ndebug_stream_event_header_t, type, 8);
ABI_OFFSET(ndebug_stream_event_header_t, reserved, 12);
ABI_SIZE(ndebug_stream_payload_debug_tensor_read_t, 1024);
ABI_ALIGN(ndebug_stream_payload_debug_tensor_read_t, 8);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, prefix, 0);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, logical_nc_id, 512);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, pipe, 516);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, tensor_dtype, 520);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, tensor_shape, 536);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, tensor_data_size, 600);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, reserved0, 608);
ABI_OFFSET(ndebug_stream_payload_debug_tensor_read_t, tensor_data, 1024);
#endif
