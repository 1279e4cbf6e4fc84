/*
 * kernel_demo.c: run a kernel NEFF through the Neuron Runtime C API: load
 * it, show its tensors, fill the inputs, execute, and print the first
 * values of each output. With the softmax example it also checks that
 * every row of the output sums to 1.
 *
 *   trnemu exec -- ./kernel_demo build/examples/softmax.neff
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_file.h"
#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

static const char *dtype_name(nrt_dtype_t d)
{
    switch (d) {
    case NRT_DTYPE_FLOAT32: return "float32";
    case NRT_DTYPE_BFLOAT16: return "bfloat16";
    case NRT_DTYPE_FLOAT16: return "float16";
    default: return "other";
    }
}

/* Inputs: a smooth ramp, the same on every run. */
static void fill(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i % 1024) % 17) * 0.25f - 2.0f;
}

static int run(nrt_model_t *m, nrt_tensor_info_array_t *info)
{
    nrt_tensor_set_t *in = NULL, *out = NULL;
    nrt_tensor_t *t[16] = {NULL};
    int bad = info->tensor_count > 16 || nrt_allocate_tensor_set(&in) != NRT_SUCCESS ||
              nrt_allocate_tensor_set(&out) != NRT_SUCCESS;
    for (uint64_t i = 0; !bad && i < info->tensor_count; i++) {
        nrt_tensor_info_t *ti = &info->tensor_array[i];
        printf("  %-6s %-8s %-8s %zu bytes, shape", ti->usage == NRT_TENSOR_USAGE_INPUT ? "input" : "output",
               ti->name, dtype_name(ti->dtype), ti->size);
        for (uint32_t d = 0; d < ti->ndim; d++)
            printf(" %u", ti->shape[d]);
        printf("\n");
        bad = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name, &t[i]) != NRT_SUCCESS;
        if (!bad && ti->usage == NRT_TENSOR_USAGE_INPUT && ti->dtype == NRT_DTYPE_FLOAT32) {
            float *x = malloc(ti->size);
            fill(x, ti->size / 4);
            bad = nrt_tensor_write(t[i], x, 0, ti->size) != NRT_SUCCESS;
            free(x);
        }
        if (!bad)
            bad = nrt_add_tensor_to_tensor_set(ti->usage == NRT_TENSOR_USAGE_INPUT ? in : out,
                                               ti->name, t[i]) != NRT_SUCCESS;
    }
    NRT_STATUS st = bad ? NRT_FAILURE : nrt_execute(m, in, out);
    printf("nrt_execute: %s\n", nrt_get_status_as_str(st));
    bad = st != NRT_SUCCESS;
    for (uint64_t i = 0; !bad && i < info->tensor_count; i++) {
        nrt_tensor_info_t *ti = &info->tensor_array[i];
        if (ti->usage != NRT_TENSOR_USAGE_OUTPUT || ti->dtype != NRT_DTYPE_FLOAT32)
            continue;
        float *y = malloc(ti->size);
        bad = nrt_tensor_read(t[i], y, 0, ti->size) != NRT_SUCCESS;
        printf("  %s[0][0..3] = %.6f %.6f %.6f %.6f\n", ti->name, y[0], y[1], y[2], y[3]);
        if (!bad && strcmp(ti->name, "y") == 0 && ti->ndim == 2) {
            for (uint32_t r = 0; r < ti->shape[0]; r++) {
                double sum = 0;
                for (uint32_t c = 0; c < ti->shape[1]; c++)
                    sum += y[(size_t)r * ti->shape[1] + c];
                if (fabs(sum - 1.0) > 1e-4)
                    bad = 1;
            }
            printf("  every row of %s sums to 1: %s\n", ti->name, bad ? "NO" : "yes");
        }
        free(y);
    }
    for (int i = 0; i < 16; i++)
        nrt_tensor_free(&t[i]);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: kernel_demo KERNEL.neff\n");
        return 2;
    }
    size_t size;
    void *neff = example_read_file(argv[1], &size);
    if (neff == NULL || nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) {
        fprintf(stderr, "kernel_demo: cannot read %s or start the runtime\n", argv[1]);
        return 1;
    }
    nrt_model_t *m = NULL;
    nrt_tensor_info_array_t *info = NULL;
    int bad = nrt_load(neff, size, -1, -1, &m) != NRT_SUCCESS ||
              nrt_get_model_tensor_info(m, &info) != NRT_SUCCESS;
    if (!bad) {
        printf("%s loaded:\n", argv[1]);
        bad = run(m, info);
        nrt_free_model_tensor_info(info);
    }
    if (m != NULL)
        nrt_unload(m);
    free(neff);
    nrt_close();
    printf(bad ? "kernel_demo: FAILED\n" : "kernel_demo: ok\n");
    return bad;
}
