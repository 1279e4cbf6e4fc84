/*
 * trnemu_builder.c: the exported C builder API for trnemu kernels
 * (abi/trnemu/trnemu_build.h), a thin layer over the assembler (emu/isa/asm.h):
 * every call checks its arguments, feeds the assembler, and logs one line
 * when it fails.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/config/status.h"
#include "emu/isa/asm.h"
#include "shims/shim.h"
#include "trnemu/trnemu.h"

struct trnemu_kernel {
    struct asm_ctx *asm_ctx;  /* the assembler holding the kernel */
    char source[64];          /* name in error messages: "<kernel>" */
};

/* Log the first error recorded since `before` (one line). */
static NRT_STATUS kernel_report(const trnemu_kernel_t *k, size_t before, emu_status st)
{
    if (st == EMU_OK)
        return NRT_SUCCESS;
    size_t n = asm_error_count(k->asm_ctx);
    if (n == before + 1 && strstr(asm_error_text(k->asm_ctx, before), "see the log line above"))
        return nrt_status_of(st);  /* the validator logged the cause: one line */
    if (n > before + 1)
        LOG_ERROR("NRT", "%s (and %zu more)", asm_error_text(k->asm_ctx, before), n - before - 1);
    else if (n > before)
        LOG_ERROR("NRT", "%s", asm_error_text(k->asm_ctx, before));
    else
        LOG_ERROR("NRT", "%s", st == EMU_RESOURCE ? "out of memory" : "the kernel is not valid");
    return nrt_status_of(st);
}

/* A kernel that already failed refuses everything. */
#define KERNEL_USABLE(k)                                                             \
    do {                                                                             \
        if (asm_error_count((k)->asm_ctx) > 0) {                                     \
            LOG_ERROR("NRT", "the kernel has an error: %s",                          \
                      asm_error_text((k)->asm_ctx, 0));                              \
            return NRT_INVALID;                                                      \
        }                                                                            \
    } while (0)

NRT_EXPORT NRT_STATUS trnemu_kernel_create(const char *name, trnemu_kernel_t **kernel)
{
    SHIM_REQUIRE(kernel != NULL, "kernel is NULL");
    *kernel = NULL;
    SHIM_REQUIRE(name == NULL || strlen(name) < 256, "the kernel name has 256 bytes or more");
    trnemu_kernel_t *k = calloc(1, sizeof *k);
    if (k == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    snprintf(k->source, sizeof k->source, "<kernel>");
    struct asm_opts o = {.source_name = k->source, .no_files = true};
    emu_status st = asm_new(&o, &k->asm_ctx);
    if (st != EMU_OK) {
        free(k);
        LOG_ERROR("NRT", "out of memory");
        return nrt_status_of(st);
    }
    if (name != NULL && (st = asm_declare_name(k->asm_ctx, name)) != EMU_OK) {
        kernel_report(k, 0, st);
        trnemu_kernel_free(k);
        return nrt_status_of(st);
    }
    *kernel = k;
    return NRT_SUCCESS;
}

NRT_EXPORT void trnemu_kernel_free(trnemu_kernel_t *kernel)
{
    if (kernel == NULL)
        return;
    asm_free(kernel->asm_ctx);
    free(kernel);
}

static NRT_STATUS kernel_add_io(trnemu_kernel_t *k, const char *name, bool is_output,
                                nrt_dtype_t dtype, const uint32_t *shape, uint32_t ndim)
{
    SHIM_REQUIRE(k != NULL && name != NULL, "kernel or name is NULL");
    SHIM_REQUIRE(shape != NULL || ndim == 0, "shape is NULL");
    KERNEL_USABLE(k);
    size_t before = asm_error_count(k->asm_ctx);
    return kernel_report(k, before, asm_declare_io(k->asm_ctx, name, is_output,
                                                   (uint32_t)dtype, shape, ndim));
}

NRT_EXPORT NRT_STATUS trnemu_kernel_add_input(trnemu_kernel_t *kernel, const char *name,
                                              nrt_dtype_t dtype, const uint32_t *shape,
                                              uint32_t ndim)
{
    return kernel_add_io(kernel, name, false, dtype, shape, ndim);
}

NRT_EXPORT NRT_STATUS trnemu_kernel_add_output(trnemu_kernel_t *kernel, const char *name,
                                               nrt_dtype_t dtype, const uint32_t *shape,
                                               uint32_t ndim)
{
    return kernel_add_io(kernel, name, true, dtype, shape, ndim);
}

NRT_EXPORT NRT_STATUS trnemu_kernel_add_const(trnemu_kernel_t *kernel, const char *name,
                                              nrt_dtype_t dtype, const uint32_t *shape,
                                              uint32_t ndim, const void *data, size_t size)
{
    SHIM_REQUIRE(kernel != NULL && name != NULL, "kernel or name is NULL");
    SHIM_REQUIRE(shape != NULL || ndim == 0, "shape is NULL");
    SHIM_REQUIRE(data != NULL || size == 0, "data is NULL");
    KERNEL_USABLE(kernel);
    size_t before = asm_error_count(kernel->asm_ctx);
    return kernel_report(kernel, before, asm_declare_const(kernel->asm_ctx, name,
                                                           (uint32_t)dtype, shape, ndim,
                                                           data, size));
}

NRT_EXPORT NRT_STATUS trnemu_kernel_add_scratch(trnemu_kernel_t *kernel, const char *name,
                                                uint64_t size)
{
    SHIM_REQUIRE(kernel != NULL && name != NULL, "kernel or name is NULL");
    KERNEL_USABLE(kernel);
    size_t before = asm_error_count(kernel->asm_ctx);
    return kernel_report(kernel, before, asm_declare_scratch(kernel->asm_ctx, name, size));
}

NRT_EXPORT NRT_STATUS trnemu_kernel_append(trnemu_kernel_t *kernel, const char *line)
{
    SHIM_REQUIRE(kernel != NULL && line != NULL, "kernel or line is NULL");
    size_t n = strlen(line);
    const char *nl = memchr(line, '\n', n);
    SHIM_REQUIRE(nl == NULL || nl == line + n - 1, "one line expected (use "
                 "trnemu_kernel_assemble for text)");
    KERNEL_USABLE(kernel);
    size_t before = asm_error_count(kernel->asm_ctx);
    return kernel_report(kernel, before, asm_line(kernel->asm_ctx, line, n));
}

NRT_EXPORT NRT_STATUS trnemu_kernel_appendf(trnemu_kernel_t *kernel, const char *format, ...)
{
    SHIM_REQUIRE(kernel != NULL && format != NULL, "kernel or format is NULL");
    char *line = NULL;
    va_list ap;
    va_start(ap, format);
    int n = vasprintf(&line, format, ap);
    va_end(ap);
    if (n < 0) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    NRT_STATUS st = trnemu_kernel_append(kernel, line);
    free(line);
    return st;
}

NRT_EXPORT NRT_STATUS trnemu_kernel_assemble(trnemu_kernel_t *kernel, const char *text,
                                             size_t len)
{
    SHIM_REQUIRE(kernel != NULL && (text != NULL || len == 0), "kernel or text is NULL");
    KERNEL_USABLE(kernel);
    size_t before = asm_error_count(kernel->asm_ctx);
    return kernel_report(kernel, before, asm_text(kernel->asm_ctx, text, len));
}

NRT_EXPORT NRT_STATUS trnemu_kernel_write(trnemu_kernel_t *kernel, void **bytes, size_t *size)
{
    SHIM_REQUIRE(kernel != NULL && bytes != NULL && size != NULL,
                 "kernel, bytes or size is NULL");
    *bytes = NULL;
    *size = 0;
    KERNEL_USABLE(kernel);
    size_t before = asm_error_count(kernel->asm_ctx);
    emu_status st = asm_finish(kernel->asm_ctx);
    if (st != EMU_OK)
        return kernel_report(kernel, before, st);
    uint8_t *b = NULL;
    st = asm_neff_bytes(asm_model(kernel->asm_ctx), &b, size);
    if (st != EMU_OK)
        return kernel_report(kernel, before, st);
    *bytes = b;
    return NRT_SUCCESS;
}

NRT_EXPORT void trnemu_kernel_buffer_free(void *bytes)
{
    free(bytes);
}

NRT_EXPORT NRT_STATUS trnemu_kernel_write_file(trnemu_kernel_t *kernel, const char *path)
{
    SHIM_REQUIRE(kernel != NULL && path != NULL, "kernel or path is NULL");
    void *bytes = NULL;
    size_t size = 0;
    NRT_STATUS st = trnemu_kernel_write(kernel, &bytes, &size);
    if (st != NRT_SUCCESS)
        return st;
    FILE *fp = fopen(path, "wb");
    bool ok = fp != NULL && fwrite(bytes, 1, size, fp) == size;
    if (fp != NULL && fclose(fp) != 0)
        ok = false;
    free(bytes);
    if (!ok) {
        remove(path);
        LOG_ERROR("NRT", "cannot write %s", path);
        return NRT_FAILURE;
    }
    return NRT_SUCCESS;
}

NRT_EXPORT const char *trnemu_kernel_error(const trnemu_kernel_t *kernel)
{
    return kernel != NULL ? asm_error_text(kernel->asm_ctx, 0) : NULL;
}
