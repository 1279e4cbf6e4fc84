/*
 * kernel_builder.c: builds the add kernel of examples/add.s with trnemu's
 * C builder API (trnemu/trnemu_build.h) instead of assembly text, and
 * checks that the NEFF is byte for byte the one `trnemu asm add.s` wrote.
 * Also shows what a bad line gives: NRT_INVALID and one error with its
 * position.
 *
 * Usage: kernel_builder ADD.neff [OUT.neff]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_file.h"
#include "trnemu/trnemu.h"

/* c = a + b, [128 x 512] f32, as in examples/add.s. */
static trnemu_kernel_t *build_add(void)
{
    trnemu_kernel_t *k = NULL;
    uint32_t shape[2] = {128, 512};
    if (trnemu_kernel_create("add", &k) != NRT_SUCCESS)
        return NULL;
    static const char *const body[] = {
        ".sem loaded",
        ".sem added",
        "sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:f32 src=hbm:a[[512,128], 0, [1,512]]:f32 "
        "signal=loaded+=1",
        "sp.dma_copy dst=sbuf[0:128, 2048, [1,512]]:f32 src=hbm:b[[512,128], 0, [1,512]]:f32 "
        "signal=loaded+=1",
    };
    bool ok = trnemu_kernel_add_input(k, "a", NRT_DTYPE_FLOAT32, shape, 2) == NRT_SUCCESS &&
              trnemu_kernel_add_input(k, "b", NRT_DTYPE_FLOAT32, shape, 2) == NRT_SUCCESS &&
              trnemu_kernel_add_output(k, "c", NRT_DTYPE_FLOAT32, shape, 2) == NRT_SUCCESS;
    for (size_t i = 0; ok && i < sizeof body / sizeof body[0]; i++)
        ok = trnemu_kernel_append(k, body[i]) == NRT_SUCCESS;
    ok = ok && trnemu_kernel_appendf(k, "dve.tensor_tensor dst=sbuf[0:128, %d, [1,512]]:f32 "
                                        "data1=sbuf[0:128, 0, [1,512]]:f32 "
                                        "data2=sbuf[0:128, 2048, [1,512]]:f32 op=add "
                                        "wait=loaded>=2 signal=added+=1", 4096) == NRT_SUCCESS;
    const char *store = "sp.dma_copy dst=hbm:c[[512,128], 0, [1,512]]:f32 "
                        "src=sbuf[0:128, 4096, [1,512]]:f32 wait=added>=1\n";
    ok = ok && trnemu_kernel_assemble(k, store, strlen(store)) == NRT_SUCCESS;
    if (!ok) {
        fprintf(stderr, "kernel_builder: %s\n", trnemu_kernel_error(k));
        trnemu_kernel_free(k);
        return NULL;
    }
    return k;
}

/* A misspelt semaphore: NRT_INVALID, and the error names line and column. */
static int check_bad_line(void)
{
    trnemu_kernel_t *k = NULL;
    if (trnemu_kernel_create("bad", &k) != NRT_SUCCESS)
        return 1;
    NRT_STATUS st = trnemu_kernel_append(k, "sp.nop wait=nosuch>=1");
    const char *e = trnemu_kernel_error(k);
    int rc = st == NRT_INVALID && e != NULL && strstr(e, "<kernel>:1:13:") == e ? 0 : 1;
    if (rc != 0)
        fprintf(stderr, "kernel_builder: unexpected error report: %s\n", e ? e : "(none)");
    trnemu_kernel_free(k);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: kernel_builder ADD.neff [OUT.neff]\n");
        return 2;
    }
    size_t want_size = 0, size = 0;
    void *want = example_read_file(argv[1], &want_size), *bytes = NULL;
    trnemu_kernel_t *k = build_add();
    int rc = 1;
    if (want == NULL)
        fprintf(stderr, "kernel_builder: cannot read %s\n", argv[1]);
    else if (k != NULL && trnemu_kernel_write(k, &bytes, &size) == NRT_SUCCESS) {
        rc = size == want_size && memcmp(bytes, want, size) == 0 ? 0 : 1;
        printf("kernel_builder: %zu bytes, %s %s\n", size,
               rc == 0 ? "identical to" : "DIFFERENT from", argv[1]);
    }
    if (rc == 0 && argc > 2 && trnemu_kernel_write_file(k, argv[2]) != NRT_SUCCESS)
        rc = 1;
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    free(want);
    return rc != 0 ? rc : check_bad_line();
}
