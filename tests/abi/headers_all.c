/*
 * headers_all.c: compiles every public ABI header of trnemu in one C
 * translation unit (built once plainly and once with -DABI_ASSERT_FIRST,
 * which includes <assert.h> first), then uses each public type and macro a
 * little so that a header which parses but is unusable still fails.
 * The same source is built as C++ by headers_all_cxx.cc.
 */
#ifdef ABI_ASSERT_FIRST
#include <assert.h>
#endif

#include "nrt/nrt_status.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/nrt_version.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"
#include "ndl/neuron_driver_shared_tensor_batch_op.h"
/* A second round must be harmless (include guards / #pragma once). */
#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "ndl/neuron_driver_shared_tensor_batch_op.h"

#include <stdio.h>
#include <string.h>

/* Returns the number of failed checks of the header macros. */
static int headers_check_macros(void)
{
    int failed = 0;
    nrta_seq_t seq = ((nrta_seq_t)3 << 48) | 7u;

    failed += NRT_MAJOR_VERSION != 2;
    failed += NRT_MINOR_VERSION != 0;
    failed += NRT_TENSOR_NAME_MAX != 256;
    failed += RT_VERSION_DETAIL_LEN != 128;
    failed += GIT_HASH_LEN != 64;
    failed += NRTA_SEQ_NUM_MAX != 0xffffffffffffull;
    failed += NRTA_SEQ_NUM_MASK != NRTA_SEQ_NUM_MAX;
    failed += NRTA_SEQ_GET_SEQ_NUM(seq) != 7u;
    failed += NRTA_SEQ_GET_XU_ID(seq) != 3u;
    return failed;
}

/* Returns the number of failed checks on objects of the public types. */
static int headers_check_types(void)
{
    int failed = 0;
    nrt_version_t version;
    nrt_instance_info_t info;
    nrt_tensor_info_t tensor_info;
    nrt_tensor_batch_op_t op;
    nrt_tensor_batch_t batch;
    nrta_error_t error;
    nrt_cc_comm_t comm;
    nrt_tensor_list_t list;
    nrt_ucode_info ucode;
    nrt_model_info_t model_info;
    nrt_vnc_memory_stats_t stats;
    nrt_tensor_device_allocation_info_t alloc;
    nrt_tensor_placement_t placement = NRT_TENSOR_PLACEMENT_DEVICE;
    nrt_framework_type_t framework = NRT_FRAMEWORK_TYPE_NO_FW;
    nrt_dtype_t dtype = NRT_DTYPE_BFLOAT16;
    nrt_op_type_t op_type = NRT_OP_ADD;
    nrt_cc_op_type_t cc_op = NRT_CC_ALLREDUCE;
    nrt_tensor_usage_t usage = NRT_TENSOR_USAGE_OUTPUT;
    nrta_xu_t xu = NRTA_XU_COMPUTE;
    NRT_STATUS status = NRT_SUCCESS;
    NRT_ASYNC_EXEC_STATUS_CALLBACK callback = NULL;

    memset(&version, 0, sizeof version);
    memset(&info, 0, sizeof info);
    memset(&tensor_info, 0, sizeof tensor_info);
    memset(&op, 0, sizeof op);
    memset(&batch, 0, sizeof batch);
    memset(&error, 0, sizeof error);
    memset(&comm, 0, sizeof comm);
    memset(&list, 0, sizeof list);
    memset(&ucode, 0, sizeof ucode);
    memset(&model_info, 0, sizeof model_info);
    memset(&stats, 0, sizeof stats);
    memset(&alloc, 0, sizeof alloc);
    batch.ops = &op;
    batch.num_ops = 1;
    failed += sizeof version.git_hash != GIT_HASH_LEN;
    failed += sizeof tensor_info.name != NRT_TENSOR_NAME_MAX;
    failed += batch.ops->size != 0 || error.seq_id != 0 || comm.rank != 0;
    failed += list.num_tensors != 0 || ucode.iram.size != 0;
    failed += model_info.vnc != 0 || stats.bytes_used != 0 || alloc.size != 0;
    failed += info.family != NRT_INSTANCE_UNKNOWN;
    failed += NRT_INSTANCE_SIZE_NUM != NRT_INSTANCE_SIZE_UNKNOWN;
    failed += placement != NRT_TENSOR_PLACEMENT_DEVICE || framework != 1;
    failed += dtype != 6 || op_type != 0 || cc_op != 1 || usage != 1;
    failed += xu != 3 || status != 0 || callback != NULL;
    return failed;
}

int main(void)
{
    int failed = headers_check_macros() + headers_check_types();

    if (failed != 0) {
        fprintf(stderr, "abi headers: %d check(s) failed\n", failed);
        return 1;
    }
    return 0;
}
