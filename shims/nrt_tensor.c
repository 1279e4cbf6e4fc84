/*
 * nrt_tensor.c: the tensor entry points (allocate, free, read, write, copy,
 * memset, batches, slices, attached buffers, queries, output completion).
 */
#include "devices/runtime/tensor.h"
#include "shims/shim.h"

NRT_STATUS nrt_tensor_allocate_impl(nrt_tensor_placement_t tensor_placement, int vnc,
                                          size_t size, const char *name, nrt_tensor_t **tensor)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL, "tensor is NULL");
    SHIM_CALL(tensor_allocate(tensor_placement, vnc, size, name, tensor));
}

NRT_STATUS nrt_tensor_allocate_empty_impl(const char *name, nrt_tensor_t **tensor)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL, "tensor is NULL");
    SHIM_CALL(tensor_allocate_empty(name, tensor));
}

NRT_STATUS nrt_tensor_allocate_slice_impl(const nrt_tensor_t *tensor_source, size_t offset,
                                                size_t size, const char *name,
                                                nrt_tensor_t **tensor_slice)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor_source != NULL && tensor_slice != NULL,
                 "tensor_source or tensor_slice is NULL");
    SHIM_CALL(tensor_allocate_slice(tensor_source, offset, size, name, tensor_slice));
}

NRT_STATUS nrt_tensor_attach_buffer_impl(nrt_tensor_t *tensor, void *buffer, size_t size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL, "tensor is NULL");
    SHIM_CALL(tensor_attach_buffer(tensor, buffer, size));
}

void nrt_tensor_free_impl(nrt_tensor_t **tensor)
{
    if (tensor == NULL || *tensor == NULL)
        return;
    NRT_STATUS door = rt_enter();
    if (door == NRT_SUCCESS) {
        if (!tensor_free(*tensor))
            LOG_ERROR("NRT", "%p is not a live tensor; nothing freed", (void *)*tensor);
        rt_leave();
    } else if (door == NRT_UNINITIALIZED) {  /* no tensor exists before nrt_init */
        LOG_ERROR("NRT", "%p is not a live tensor (called before nrt_init()); nothing freed",
                  (void *)*tensor);
    }
    /* After nrt_close every tensor is already gone; just clear the pointer. */
    *tensor = NULL;
}

NRT_STATUS nrt_tensor_read_impl(const nrt_tensor_t *tensor, void *buf, size_t offset,
                                      size_t size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL, "tensor is NULL");
    SHIM_REQUIRE(buf != NULL || size == 0, "buf is NULL");
    SHIM_CALL(tensor_read(tensor, buf, offset, size));
}

NRT_STATUS nrt_tensor_write_impl(nrt_tensor_t *tensor, const void *buf, size_t offset,
                                       size_t size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL, "tensor is NULL");
    SHIM_REQUIRE(buf != NULL || size == 0, "buf is NULL");
    SHIM_CALL(tensor_write(tensor, buf, offset, size));
}

NRT_STATUS nrt_tensor_copy_impl(const nrt_tensor_t *src, size_t src_offset,
                                      nrt_tensor_t *dst, size_t dst_offset, size_t size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(src != NULL && dst != NULL, "src or dst is NULL");
    SHIM_CALL(tensor_copy(src, src_offset, dst, dst_offset, size));
}

NRT_STATUS nrt_tensor_memset_impl(nrt_tensor_t *tensor, uint64_t offset, int value,
                                        size_t size)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL, "tensor is NULL");
    SHIM_CALL(tensor_memset(tensor, offset, value, size));
}

static NRT_STATUS shim_tensor_batch(const nrt_tensor_batch_t *batches, uint64_t num_batches,
                                    bool write)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(batches != NULL || num_batches == 0, "batches is NULL");
    SHIM_CALL(tensor_batch(batches, num_batches, write));
}

NRT_STATUS nrt_tensor_read_batch_impl(const nrt_tensor_batch_t *batches,
                                            uint64_t num_batches, bool unsafe)
{
    (void)unsafe; /* no in-flight tracking to skip: the emulator is synchronous */
    return shim_tensor_batch(batches, num_batches, false);
}

NRT_STATUS nrt_tensor_write_batch_impl(const nrt_tensor_batch_t *batches,
                                             uint64_t num_batches, bool unsafe)
{
    (void)unsafe;
    return shim_tensor_batch(batches, num_batches, true);
}

size_t nrt_tensor_get_size_impl(const nrt_tensor_t *tensor)
{
    if (tensor == NULL || rt_enter() != NRT_SUCCESS)
        return 0;
    size_t s = tensor_size(tensor);
    rt_leave();
    return s;
}

void *nrt_tensor_get_va_impl(const nrt_tensor_t *tensor)
{
    if (tensor == NULL || rt_enter() != NRT_SUCCESS)
        return NULL;
    void *va = tensor_va(tensor);
    rt_leave();
    return va;
}

NRT_STATUS nrt_tensor_get_device_allocation_info_impl(
    const nrt_tensor_t *tensor, nrt_tensor_device_allocation_info_t *alloc_info)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(tensor != NULL && alloc_info != NULL, "tensor or alloc_info is NULL");
    SHIM_CALL(tensor_alloc_info(tensor, alloc_info));
}

NRT_STATUS nrt_tensor_check_output_completion_impl(const nrt_tensor_t *output_tensor,
                                                         int64_t timeout,
                                                         uint64_t expected_completion_count)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(output_tensor != NULL, "output_tensor is NULL");
    SHIM_CALL(tensor_completion_wait(output_tensor, timeout, expected_completion_count));
}

NRT_STATUS nrt_tensor_reset_output_completion_impl(nrt_tensor_t *output_tensor)
{
    SHIM_DOOR_FIRST();
    SHIM_REQUIRE(output_tensor != NULL, "output_tensor is NULL");
    SHIM_CALL(tensor_completion_reset(output_tensor));
}
