/*
 * nrt_tensor_set.c: the tensor-set entry points. Sets are host containers
 * and work whether or not the runtime is initialized.
 */
#include "devices/runtime/tensor_set.h"
#include "shims/shim.h"

NRT_STATUS nrt_allocate_tensor_set_impl(nrt_tensor_set_t **result)
{
    SHIM_REQUIRE(result != NULL, "result is NULL");
    return tensor_set_allocate(result);
}

void nrt_destroy_tensor_set_impl(nrt_tensor_set_t **tensor_set)
{
    if (tensor_set == NULL || *tensor_set == NULL)
        return;
    if (!tensor_set_destroy(*tensor_set))
        LOG_ERROR("NRT", "%p is not a live tensor set; nothing destroyed", *tensor_set);
    *tensor_set = NULL;
}

NRT_STATUS nrt_add_tensor_to_tensor_set_impl(nrt_tensor_set_t *tensor_set,
                                                   const char *tensor_name, nrt_tensor_t *tensor)
{
    SHIM_REQUIRE(tensor_set != NULL && tensor_name != NULL && tensor != NULL,
                 "tensor_set, tensor_name or tensor is NULL");
    return tensor_set_add(tensor_set, tensor_name, tensor);
}

NRT_STATUS nrt_get_tensor_from_tensor_set_impl(nrt_tensor_set_t *tensor_set,
                                                     const char *tensor_name,
                                                     nrt_tensor_t **tensor)
{
    SHIM_REQUIRE(tensor_set != NULL && tensor_name != NULL && tensor != NULL,
                 "tensor_set, tensor_name or tensor is NULL");
    NRT_STATUS st = tensor_set_get(tensor_set, tensor_name, tensor);
    if (st == NRT_FAILURE)
        LOG_ERROR("NRT", "no tensor named '%s' in the set", tensor_name);
    return st;
}
