/*
 * trnemu_build.h: build trnemu kernels (NEFFs) from a C program.
 *
 * For programs that generate kernels: create a kernel, declare its I/O
 * tensors, constants and scratch space, add instructions and directives as
 * lines of trnemu assembly (docs/asm.md; instructions in the docs/isa.md
 * syntax), then write the NEFF to a buffer or a file:
 *
 *   trnemu_kernel_t *k;
 *   uint32_t shape[2] = {128, 512};
 *   trnemu_kernel_create("scale", &k);
 *   trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2);
 *   trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2);
 *   trnemu_kernel_append(k, "sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:f32 "
 *                           "src=hbm:x[[512,128], 0, [1,512]]:f32 signal=s0+=1");
 *   ...
 *   trnemu_kernel_write_file(k, "scale.neff");
 *   trnemu_kernel_free(k);
 *
 * Everything goes into the kernel's current subgraph (a ".subgraph" line
 * starts the next one). Lines are assembled as they come; an error in any
 * of them (one log line each, also kept for trnemu_kernel_error) makes
 * the kernel unusable: later calls and the write fail with NRT_INVALID.
 * The same calls give the same NEFF bytes. These functions need no
 * nrt_init() and exist only in trnemu's libnrt.so.1.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A kernel being built. */
typedef struct trnemu_kernel trnemu_kernel_t;

/* Create an empty kernel (one subgraph) whose NEFF is called name (NULL:
 * unnamed). NRT_INVALID for a NULL kernel or a name of 256 bytes or more,
 * NRT_RESOURCE when out of memory. */
NRT_STATUS trnemu_kernel_create(const char *name, trnemu_kernel_t **kernel);

/* Free a kernel; NULL is fine. */
void trnemu_kernel_free(trnemu_kernel_t *kernel);

/* Declare an input or output tensor: a neff.json tensor and an HBM
 * variable of the same name, dtype and shape (ndim entries). */
NRT_STATUS trnemu_kernel_add_input(trnemu_kernel_t *kernel, const char *name, nrt_dtype_t dtype,
                                   const uint32_t *shape, uint32_t ndim);
NRT_STATUS trnemu_kernel_add_output(trnemu_kernel_t *kernel, const char *name, nrt_dtype_t dtype,
                                    const uint32_t *shape, uint32_t ndim);

/* Declare a constant HBM variable holding data[0..size), which must be
 * prod(shape) elements of dtype (stored as a .npy member). */
NRT_STATUS trnemu_kernel_add_const(trnemu_kernel_t *kernel, const char *name, nrt_dtype_t dtype,
                                   const uint32_t *shape, uint32_t ndim, const void *data,
                                   size_t size);

/* Declare a private HBM scratch variable of size bytes. */
NRT_STATUS trnemu_kernel_add_scratch(trnemu_kernel_t *kernel, const char *name, uint64_t size);

/* Add one line of assembly: an instruction, a label, a directive or a
 * comment (no line break inside). */
NRT_STATUS trnemu_kernel_append(trnemu_kernel_t *kernel, const char *line);

/* The same with a printf format. */
NRT_STATUS trnemu_kernel_appendf(trnemu_kernel_t *kernel, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Add a whole text of assembly: len bytes holding any number of lines. */
NRT_STATUS trnemu_kernel_assemble(trnemu_kernel_t *kernel, const char *text, size_t len);

/* Finish the kernel and store its NEFF in a new buffer (*bytes, *size);
 * free it with trnemu_kernel_buffer_free(). The kernel stays usable: more
 * lines may follow and a later write includes them. NRT_INVALID when the
 * kernel has an error (for example a label that names no instruction). */
NRT_STATUS trnemu_kernel_write(trnemu_kernel_t *kernel, void **bytes, size_t *size);

/* Free a buffer from trnemu_kernel_write(); NULL is fine. */
void trnemu_kernel_buffer_free(void *bytes);

/* Finish the kernel and write its NEFF to the file at path. */
NRT_STATUS trnemu_kernel_write_file(trnemu_kernel_t *kernel, const char *path);

/* The first error of the kernel ("<kernel>:LINE:COLUMN: cause", lines
 * counted over everything appended), or NULL when it has none. Valid until
 * the kernel is freed. */
const char *trnemu_kernel_error(const trnemu_kernel_t *kernel);

#ifdef __cplusplus
}
#endif
