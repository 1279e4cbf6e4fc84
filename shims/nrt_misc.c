/*
 * nrt_misc.c: the remaining experimental entry points (tracing, ucode, EFA, dma-buf, async exec callbacks, direct device copies).
 *
 * nrt_memcpy_to_device is emulated; the others are not emulated yet: each
 * logs one line naming itself and returns NRT_FAILURE (see docs/abi.md).
 */
#include <stdio.h>
#include <string.h>

#include "devices/async.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "shims/shim.h"

NRT_EXPORT NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc)
{
    SHIM_ENTER();
    uint32_t n = rt_machine()->cfg.visible_count;
    bool ok = vnc >= 0 && (uint32_t)vnc < n;
    NRT_STATUS st = ok ? async_drain(vnc) : NRT_INVALID;
    rt_leave();
    SHIM_REQUIRE(ok, "VNC %d is not visible to this process (%u VNCs)", (int)vnc, n);
    return st;
}

NRT_EXPORT NRT_STATUS nrt_get_attached_efa_bdf(const void *va, char *efa_bdf, size_t *len)
{
    SHIM_NOT_EMULATED("this function is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_get_dmabuf_fd(uint64_t va, uint64_t size, int* fd)
{
    SHIM_NOT_EMULATED("this function is not emulated yet");
}

NRT_EXPORT void *nrt_get_libnccl_net(int *err, char *err_msg, size_t err_msg_size)
{
    if (err != NULL)
        *err = 1;
    if (err_msg != NULL && err_msg_size > 0)
        snprintf(err_msg, err_msg_size, "not emulated by trnemu");
    LOG_ERROR("NRT", "not emulated by trnemu: this function is not emulated yet");
    return NULL;
}

NRT_EXPORT NRT_STATUS nrt_memcpy_to_device(void *dest, const void *src, size_t size)
{
    SHIM_GATE_FIRST();
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

NRT_EXPORT NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params)
{
    async_set_exec_callback(callback, params);
    return NRT_SUCCESS;
}

NRT_EXPORT NRT_STATUS nrt_set_pool_eng_ucode(const nrt_ucode_info *ucode_info)
{
    SHIM_NOT_EMULATED("this function is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_trace_start(bool trace_mem)
{
    SHIM_NOT_EMULATED("this function is not emulated yet");
}

NRT_EXPORT NRT_STATUS nrt_trace_stop(const char *filename)
{
    SHIM_NOT_EMULATED("this function is not emulated yet");
}
