/*
 * fake_vendor_nrt.c: a stand-in for the vendor's libnrt.so.1 on a machine
 * without Neuron devices: same soname and the entry points exec_prog uses,
 * but nrt_init always fails, as the real library does when it finds no
 * device. The exec test links exec_prog against it to show that
 * `trnemu exec` swaps in trnemu's library for an unchanged binary.
 */
#include "nrt/nrt.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

FAKE_EXPORT NRT_STATUS nrt_init(nrt_framework_type_t framework, const char *fw_version,
                                const char *fal_version)
{
    (void)framework;
    (void)fw_version;
    (void)fal_version;
    return NRT_FAILURE;  /* "no Neuron device found" */
}

FAKE_EXPORT void nrt_close(void)
{
}

FAKE_EXPORT const char *nrt_get_status_as_str(NRT_STATUS status)
{
    (void)status;
    return "fake vendor runtime: no Neuron device";
}

FAKE_EXPORT NRT_STATUS nrt_get_visible_vnc_count(uint32_t *vnc_count)
{
    (void)vnc_count;
    return NRT_FAILURE;
}

FAKE_EXPORT NRT_STATUS nrt_tensor_allocate(nrt_tensor_placement_t tensor_placement, int vnc,
                                           size_t size, const char *name, nrt_tensor_t **tensor)
{
    (void)tensor_placement;
    (void)vnc;
    (void)size;
    (void)name;
    (void)tensor;
    return NRT_FAILURE;
}

FAKE_EXPORT void nrt_tensor_free(nrt_tensor_t **tensor)
{
    (void)tensor;
}

FAKE_EXPORT NRT_STATUS nrt_tensor_write(nrt_tensor_t *tensor, const void *buf, size_t offset,
                                        size_t size)
{
    (void)tensor;
    (void)buf;
    (void)offset;
    (void)size;
    return NRT_FAILURE;
}

FAKE_EXPORT NRT_STATUS nrt_tensor_read(const nrt_tensor_t *tensor, void *buf, size_t offset,
                                       size_t size)
{
    (void)tensor;
    (void)buf;
    (void)offset;
    (void)size;
    return NRT_FAILURE;
}
