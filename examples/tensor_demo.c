/*
 * tensor_demo.c: the main demo: a program written only against the Neuron
 * Runtime C API. It starts the runtime, shows the machine it got, moves data
 * host -> device -> device -> host through tensors, slices and a tensor
 * set, checks every byte, and prints the device memory it used.
 *
 * Build it like any Neuron Runtime program (cc tensor_demo.c -lnrt) and run
 * it on trnemu with `trnemu exec -- ./tensor_demo`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"

#define N (1u << 20) /* floats per tensor: 4 MiB */

static int check(NRT_STATUS st, const char *what)
{
    if (st == NRT_SUCCESS)
        return 0;
    fprintf(stderr, "tensor_demo: %s failed: %s (%d)\n", what, nrt_get_status_as_str(st), (int)st);
    return 1;
}

static void show_machine(void)
{
    nrt_version_t ver;
    nrt_instance_info_t info;
    uint32_t total = 0, visible = 0;
    if (nrt_get_version(&ver, sizeof ver) == NRT_SUCCESS)
        printf("runtime: %s\n", ver.rt_detail);
    if (nrt_get_instance_info(&info, sizeof info) == NRT_SUCCESS)
        printf("instance: family %u size %u arch %s\n", info.family, info.size, info.arch_name);
    nrt_get_total_vnc_count(&total);
    nrt_get_visible_vnc_count(&visible);
    printf("VNCs: %u in the machine, %u visible\n", total, visible);
}

/* host -> a -> b (device-to-device) -> slice of b -> host, via a tensor set. */
static int move_data(float *host, float *back)
{
    nrt_tensor_t *a = NULL, *b = NULL, *half = NULL, *got = NULL;
    nrt_tensor_set_t *set = NULL;
    int bad = check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, N * 4, "a", &a), "allocate a") ||
              check(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, N * 4, "b", &b), "allocate b") ||
              check(nrt_tensor_write(a, host, 0, N * 4), "write") ||
              check(nrt_tensor_copy(a, 0, b, 0, N * 4), "copy") ||
              check(nrt_tensor_allocate_slice(b, N * 2, N * 2, "b.hi", &half), "slice") ||
              check(nrt_allocate_tensor_set(&set), "tensor set") ||
              check(nrt_add_tensor_to_tensor_set(set, "upper", half), "add to set") ||
              check(nrt_get_tensor_from_tensor_set(set, "upper", &got), "get from set") ||
              check(nrt_tensor_read(got, back, 0, N * 2), "read");
    if (!bad) {
        nrt_vnc_memory_stats_t ms;
        size_t out = 0;
        if (nrt_get_vnc_memory_stats(0, &ms, sizeof ms, &out) == NRT_SUCCESS)
            printf("VNC 0 device memory: %zu bytes used of %zu\n", ms.bytes_used, ms.bytes_limit);
        nrt_tensor_device_allocation_info_t ai;
        if (nrt_tensor_get_device_allocation_info(a, &ai) == NRT_SUCCESS)
            printf("tensor a: HBM %d, device address 0x%llx, %zu bytes\n", ai.hbm_index,
                   (unsigned long long)ai.physical_address, ai.size);
    }
    nrt_destroy_tensor_set(&set);
    nrt_tensor_free(&half);
    nrt_tensor_free(&b);
    nrt_tensor_free(&a);
    return bad;
}

int main(void)
{
    show_machine();
    if (check(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), "nrt_init"))
        return 1;
    float *host = malloc(N * 4), *back = malloc(N * 2);
    int bad = host == NULL || back == NULL;
    for (uint32_t i = 0; !bad && i < N; i++)
        host[i] = (float)i * 0.5f;
    if (!bad)
        bad = move_data(host, back);
    if (!bad && memcmp(back, host + N / 2, N * 2) != 0) {
        fprintf(stderr, "tensor_demo: data came back different\n");
        bad = 1;
    }
    free(host);
    free(back);
    nrt_close();
    printf(bad ? "tensor_demo: FAILED\n" : "tensor_demo: %u floats went host -> device -> device -> host intact\n", N / 2);
    return bad;
}
