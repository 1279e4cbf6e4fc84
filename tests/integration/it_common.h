/*
 * it_common.h: helpers shared by the integration tests. These tests see
 * trnemu only through the public headers (abi/) and the built libnrt.so.1,
 * as any user program would.
 *
 * Each test case starts from a clean environment (it_env_clear), sets the
 * variables it needs with setenv() before nrt_init, and closes the runtime
 * in its teardown (it_teardown).
 */
#ifndef TRNEMU_TESTS_INTEGRATION_IT_COMMON_H
#define TRNEMU_TESTS_INTEGRATION_IT_COMMON_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_version.h"

#define IT_GIB (1024ull * 1024ull * 1024ull)

/* Log capture: trnemu writes each log line to fd 2 with one write(2);
 * it_log_begin points fd 2 at a temporary file, it_log_end puts it back
 * and returns how many lines were written (copied into buf, NUL-ended). */
/* The bytes of file `name` (e.g. "add.neff") in $TRNEMU_EXAMPLES_DIR (or
 * the current directory), malloc'd; the test fails when it cannot be read. */
static inline void *it_read_example(const char *name, size_t *size)
{
    char path[4096];
    const char *dir = getenv("TRNEMU_EXAMPLES_DIR");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : ".", name);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(n > 0 ? (size_t)n : 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* The same for example `name` + ".neff". */
static inline void *it_read_example_neff(const char *name, size_t *size)
{
    char file[512];
    snprintf(file, sizeof file, "%s.neff", name);
    return it_read_example(file, size);
}

/* Most I/O tensors of a model it_model_load handles. */
#define IT_MAX_TENSORS 16

/* One loaded example with a device tensor per I/O tensor. */
struct it_model {
    nrt_model_t *model;              /* the loaded NEFF */
    nrt_tensor_info_array_t *info;   /* its I/O tensors */
    nrt_tensor_t *t[IT_MAX_TENSORS]; /* one device tensor each */
    nrt_tensor_set_t *in;            /* inputs for nrt_execute */
    nrt_tensor_set_t *out;           /* outputs */
};

/* Load example `name` (".neff" appended) on VNC 0 and give it one device
 * tensor per I/O tensor, in sets by usage. */
static inline void it_model_load(struct it_model *x, const char *name)
{
    size_t size;
    void *neff = it_read_example_neff(name, &size);
    memset(x, 0, sizeof *x);
    assert_int_equal(nrt_load(neff, size, 0, -1, &x->model), NRT_SUCCESS);
    free(neff);
    assert_int_equal(nrt_get_model_tensor_info(x->model, &x->info), NRT_SUCCESS);
    assert_true(x->info->tensor_count <= IT_MAX_TENSORS);
    assert_int_equal(nrt_allocate_tensor_set(&x->in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&x->out), NRT_SUCCESS);
    for (uint64_t i = 0; i < x->info->tensor_count; i++) {
        const nrt_tensor_info_t *ti = &x->info->tensor_array[i];
        assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name,
                                             &x->t[i]), NRT_SUCCESS);
        nrt_tensor_set_t *set = ti->usage == NRT_TENSOR_USAGE_INPUT ? x->in : x->out;
        assert_int_equal(nrt_add_tensor_to_tensor_set(set, ti->name, x->t[i]), NRT_SUCCESS);
    }
}

/* Free what it_model_load made and unload the model. */
static inline void it_model_unload(struct it_model *x)
{
    for (uint64_t i = 0; i < x->info->tensor_count; i++)
        nrt_tensor_free(&x->t[i]);
    nrt_destroy_tensor_set(&x->in);
    nrt_destroy_tensor_set(&x->out);
    nrt_free_model_tensor_info(x->info);
    assert_int_equal(nrt_unload(x->model), NRT_SUCCESS);
}

static int it_log_saved_fd = -1;
static FILE *it_log_file;

static inline void it_log_begin(void)
{
    fflush(stderr);
    it_log_file = tmpfile();
    assert_non_null(it_log_file);
    it_log_saved_fd = dup(STDERR_FILENO);
    assert_true(it_log_saved_fd >= 0);
    assert_true(dup2(fileno(it_log_file), STDERR_FILENO) >= 0);
}

static inline int it_log_end(char *buf, size_t cap)
{
    fflush(stderr);
    dup2(it_log_saved_fd, STDERR_FILENO);
    close(it_log_saved_fd);
    it_log_saved_fd = -1;
    rewind(it_log_file);
    size_t n = fread(buf, 1, cap - 1, it_log_file);
    buf[n] = 0;
    fclose(it_log_file);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    if (n > 0)
        fputs(buf, stderr); /* keep the lines in the test log */
    return lines;
}

/* Forget every variable that decides the emulated machine. */
static inline void it_env_clear(void)
{
    unsetenv("TRNEMU_INSTANCE");
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    unsetenv("NEURON_RT_VISIBLE_CORES");
    unsetenv("NEURON_RT_NUM_CORES");
}

/* Set or unset (value NULL) one variable. */
static inline void it_env(const char *name, const char *value)
{
    if (value != NULL)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* Clean environment, then the given machine (NULLs keep the defaults), then
 * nrt_init, which must succeed. */
static inline void it_init(const char *instance, const char *lnc, const char *visible,
                           const char *num)
{
    it_env_clear();
    it_env("TRNEMU_INSTANCE", instance);
    it_env("NEURON_LOGICAL_NC_CONFIG", lnc);
    it_env("NEURON_RT_VISIBLE_CORES", visible);
    it_env("NEURON_RT_NUM_CORES", num);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
}

/* cmocka setup: a clean environment, runtime not started. */
static inline int it_setup_clean(void **state)
{
    (void)state;
    it_env_clear();
    return 0;
}

/* cmocka setup: the default machine (trn2.48xlarge, LNC=2), started. */
static inline int it_setup_default(void **state)
{
    (void)state;
    it_init(NULL, NULL, NULL, NULL);
    return 0;
}

/* cmocka setup: trn1.2xlarge, started. */
static inline int it_setup_trn1(void **state)
{
    (void)state;
    it_init("trn1.2xlarge", NULL, NULL, NULL);
    return 0;
}

/* cmocka teardown: every test case ends with the runtime closed. */
static inline int it_teardown(void **state)
{
    (void)state;
    nrt_close();
    it_env_clear();
    return 0;
}

/* Fill buf with a pattern that depends on seed and position. */
static inline void it_pattern(uint8_t *buf, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
}

/* Allocate a tensor, asserting success. */
static inline nrt_tensor_t *it_tensor(nrt_tensor_placement_t where, int vnc, size_t size,
                                      const char *name)
{
    nrt_tensor_t *t = NULL;
    assert_int_equal(nrt_tensor_allocate(where, vnc, size, name, &t), NRT_SUCCESS);
    assert_non_null(t);
    return t;
}

/* Read the whole tensor into a fresh buffer (caller frees). */
static inline uint8_t *it_read_all(const nrt_tensor_t *t)
{
    size_t n = nrt_tensor_get_size(t);
    uint8_t *buf = malloc(n ? n : 1);
    assert_non_null(buf);
    assert_int_equal(nrt_tensor_read(t, buf, 0, n), NRT_SUCCESS);
    return buf;
}

/* Assert that the tensor holds exactly want (its whole size). */
static inline void it_expect_bytes(const nrt_tensor_t *t, const uint8_t *want, size_t n)
{
    assert_int_equal(nrt_tensor_get_size(t), n);
    uint8_t *got = it_read_all(t);
    assert_memory_equal(got, want, n);
    free(got);
}

#endif
