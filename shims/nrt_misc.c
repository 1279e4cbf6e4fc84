/*
 * nrt_misc.c: the remaining experimental entry points: the runtime trace
 * (nrt_trace_*, over the system trace), dma-buf export of device memory,
 * async exec callbacks and drain, direct device copies, and the three
 * that name hardware an emulated machine does not have (EFA BDF,
 * pooling-engine microcode, the NCCL net plugin): those return the
 * documented failure with one log line saying why (docs/abi.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/machine/hbm_export.h"
#include "devices/runtime/async.h"
#include "devices/runtime/exec.h"
#include "devices/runtime/state.h"
#include "devices/observe/systrace.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "shims/shim.h"

NRT_STATUS nrt_async_drain_queued_execs_impl(int32_t vnc)
{
    SHIM_ENTER();
    uint32_t n = rt_machine()->cfg.visible_count;
    bool ok = vnc >= 0 && (uint32_t)vnc < n;
    NRT_STATUS st = ok ? async_drain(vnc) : NRT_INVALID;
    rt_leave();
    SHIM_REQUIRE(ok, "VNC %d is not visible to this process (%u VNCs)", (int)vnc, n);
    return st;
}

NRT_STATUS nrt_get_attached_efa_bdf_impl(const void *va, char *efa_bdf, size_t *len)
{
    SHIM_REQUIRE(va != NULL && efa_bdf != NULL && len != NULL, "va, efa_bdf or len is NULL");
    SHIM_ENTER();
    bool inside = machine_hbm_contains(rt_machine(), va, 1);
    rt_leave();
    SHIM_REQUIRE(inside, "%p is not inside mapped device memory", va);
    /* An emulated device has no PCIe neighbours: there is no EFA to name. */
    LOG_ERROR("NRT", "no EFA device is attached to the emulated Neuron device (trnemu joins "
              "nodes over libfabric, not over an attached EFA)");
    return NRT_FAILURE;
}

NRT_STATUS nrt_get_dmabuf_fd_impl(uint64_t va, uint64_t size, int* fd)
{
    SHIM_REQUIRE(fd != NULL && va != 0 && size > 0, "fd is NULL, or va or size is 0");
    SHIM_ENTER();
    NRT_STATUS st = hbm_export(rt_machine(), va, size, fd);  /* logs its failures */
    rt_leave();
    if (st == NRT_SUCCESS)
        LOG_DEBUG("NRT", "dma-buf of 0x%" PRIx64 " (%" PRIu64 " bytes): fd %d", va, size, *fd);
    return st;
}

void *nrt_get_libnccl_net_impl(int *err, char *err_msg, size_t err_msg_size)
{
    static const char why[] = "no NCCL network plugin: trnemu runs collectives over its own "
                              "shared-memory and libfabric transports";
    if (err != NULL)
        *err = 1;
    if (err_msg != NULL && err_msg_size > 0)
        snprintf(err_msg, err_msg_size, "%s", why);
    LOG_ERROR("NRT", "%s", why);
    return NULL;
}

NRT_STATUS nrt_memcpy_to_device_impl(void *dest, const void *src, size_t size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE((dest != NULL && src != NULL) || size == 0, "dest or src is NULL");
    SHIM_ENTER();
    bool inside = size == 0 || machine_hbm_contains(rt_machine(), dest, size);
    if (inside && size > 0)
        memcpy(dest, src, size);
    rt_leave();
    SHIM_REQUIRE(inside, "%zu bytes at %p are not inside mapped device memory "
                 "(see nrt_get_hbm_mmap_va)", size, dest);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_register_async_exec_callback_impl(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params)
{
    exec_set_status_callback(callback, params);
    return NRT_SUCCESS;
}

NRT_STATUS nrt_set_pool_eng_ucode_impl(const nrt_ucode_info *ucode_info)
{
    SHIM_REQUIRE(ucode_info != NULL, "ucode_info is NULL");
    SHIM_REQUIRE(rt_phase() == RT_UNINITIALIZED, "must be called before nrt_init()");
    /* The GpSimd engine is emulated by its instruction semantics; there is
     * no pooling-engine processor to load microcode into. */
    LOG_ERROR("NRT", "the emulated GpSimd (pooling) engine has no microcode memory: the "
              "%zu-byte iram and %zu-byte dram images are not loaded", ucode_info->iram.size,
              ucode_info->dram.size);
    return NRT_FAILURE;
}

NRT_STATUS nrt_trace_start_impl(bool trace_mem)
{
    nrt_sys_trace_config_t c;
    systrace_config_defaults(&c);
    if (!trace_mem)  /* memory events: loads, unloads and tensor transfers */
        c.types &= ~((1u << SYS_NRT_LOAD) | (1u << SYS_NRT_UNLOAD) | (1u << SYS_TENSOR_READ) |
                     (1u << SYS_TENSOR_WRITE) | (1u << SYS_TENSOR_COPY));
    return systrace_start(&c);
}

NRT_STATUS nrt_trace_stop_impl(const char *filename)
{
    SHIM_REQUIRE(filename != NULL && *filename != '\0', "filename is NULL or empty");
    NRT_STATUS st = systrace_write_file(filename);
    systrace_stop();
    return st;
}
