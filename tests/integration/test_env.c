/*
 * test_env.c: the NEURON_RT_* variables read at nrt_init (devices/config/env.c)
 * through the public API: NEURON_RT_VIRTUAL_CORE_SIZE sets the logical
 * core size (and must agree with NEURON_LOGICAL_NC_CONFIG),
 * NEURON_RT_NUMERICAL_ERRORS_VERBOSITY decides which non-finite outputs
 * are reported (a bad value fails nrt_init), NEURON_RT_LOG_LOCATION sends
 * the log to a file, NEURON_RT_DBG_DUMP_INPUTS_ON_ERR writes a failed
 * execution's inputs, and malformed booleans fail nrt_init.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "it_common.h"
#include "trnemu/trnemu.h"

static const char *const env_names[] = {
    "NEURON_RT_VIRTUAL_CORE_SIZE", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY",
    "NEURON_RT_LOG_LOCATION", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR",
    "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "NEURON_PROCESS_TAG",
};

static int env_setup(void **state)
{
    (void)state;
    it_env_clear();
    for (size_t i = 0; i < sizeof env_names / sizeof env_names[0]; i++)
        unsetenv(env_names[i]);
    return 0;
}

static int env_teardown(void **state)
{
    nrt_close();
    return env_setup(state);
}

/* y = func(x) for x, y f32 [128, 4]. */
static nrt_model_t *env_kernel(const char *func)
{
    char act[256];
    snprintf(act, sizeof act, "act.activation dst=sbuf[0:128, 16, [1,4]]:f32 "
             "data=sbuf[0:128, 0, [1,4]]:f32 func=%s wait=s0>=1 signal=s1+=1", func);
    const char *lines[] = {
        "sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 src=hbm:x[[4,128], 0, [1,4]]:f32 signal=s0+=1",
        act,
        "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:f32 src=sbuf[0:128, 16, [1,4]]:f32 wait=s1>=1",
    };
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    assert_int_equal(trnemu_kernel_create("envk", &k), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    for (size_t i = 0; i < 3; i++)
        if (trnemu_kernel_append(k, lines[i]) != NRT_SUCCESS)
            fail_msg("line %zu: %s", i, trnemu_kernel_error(k));
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(trnemu_kernel_write(k, &bytes, &size), NRT_SUCCESS);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(bytes, size, 0, -1, &m), NRT_SUCCESS);
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    return m;
}

/* Execute m once with every x element = xval. */
static NRT_STATUS env_run(nrt_model_t *m, float xval)
{
    float x[128 * 4];
    for (int i = 0; i < 128 * 4; i++)
        x[i] = xval;
    nrt_tensor_t *tx = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof x, "x");
    nrt_tensor_t *ty = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, sizeof x, "y");
    nrt_tensor_set_t *in = NULL, *out = NULL;
    assert_int_equal(nrt_tensor_write(tx, x, 0, sizeof x), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(in, "x", tx), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(out, "y", ty), NRT_SUCCESS);
    NRT_STATUS st = nrt_execute(m, in, out);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    nrt_tensor_free(&tx);
    nrt_tensor_free(&ty);
    return st;
}

static void test_virtual_core_size(void **state)
{
    (void)state;
    uint32_t n = 0;
    setenv("NEURON_RT_VIRTUAL_CORE_SIZE", "1", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(nrt_get_total_vnc_count(&n), NRT_SUCCESS);
    assert_int_equal(n, 128);   /* trn2.48xlarge at LNC=1 */
    nrt_close();
    setenv("NEURON_RT_VIRTUAL_CORE_SIZE", "2", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    assert_int_equal(nrt_get_total_vnc_count(&n), NRT_SUCCESS);
    assert_int_equal(n, 64);
    nrt_close();
    setenv("NEURON_LOGICAL_NC_CONFIG", "1", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    setenv("NEURON_RT_VIRTUAL_CORE_SIZE", "3", 1);
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
}

static void test_numerical_errors(void **state)
{
    (void)state;
    setenv("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "loud", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    static const struct {
        const char *level;        /* NULL: unset */
        NRT_STATUS nan, inf;      /* log(-1), exp(1000) */
    } cases[] = {
        {NULL, NRT_EXEC_COMPLETED_WITH_NUM_ERR, NRT_EXEC_COMPLETED_WITH_NUM_ERR},
        {"none", NRT_SUCCESS, NRT_SUCCESS},
        {"CRITICAL", NRT_EXEC_COMPLETED_WITH_NUM_ERR, NRT_SUCCESS},
        {"debug", NRT_EXEC_COMPLETED_WITH_NUM_ERR, NRT_SUCCESS},
        {"verbose", NRT_EXEC_COMPLETED_WITH_NUM_ERR, NRT_EXEC_COMPLETED_WITH_NUM_ERR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        it_env("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", cases[i].level);
        setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
        assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
        nrt_model_t *lg = env_kernel("log"), *ex = env_kernel("exp");
        assert_int_equal(env_run(lg, -1.0f), cases[i].nan);
        assert_int_equal(env_run(ex, 1000.0f), cases[i].inf);
        assert_int_equal(env_run(lg, 2.0f), NRT_SUCCESS);
        nrt_unload(lg);
        nrt_unload(ex);
        nrt_close();
        unsetenv("NEURON_RT_LOG_LEVEL");
    }
}

static void test_log_location_and_dump(void **state)
{
    (void)state;
    char dir[] = "/tmp/trnemu-env-XXXXXX", log[600], cwd[4096];
    assert_non_null(mkdtemp(dir));
    snprintf(log, sizeof log, "%s/nrt.log", dir);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    setenv("NEURON_RT_LOG_LOCATION", log, 1);
    setenv("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", "1", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    nrt_model_t *lg = env_kernel("log");
    assert_int_equal(env_run(lg, -1.0f), NRT_EXEC_COMPLETED_WITH_NUM_ERR);
    nrt_unload(lg);
    nrt_close();
    unsetenv("NEURON_RT_LOG_LOCATION");
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    char text[4096] = {0};
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    assert_true(n > 0);
    assert_non_null(strstr(text, "produced NaN/Inf"));
    assert_non_null(strstr(text, "DUMP_INPUTS_ON_ERR: 1 input(s)"));
    DIR *d = opendir(".");
    struct dirent *e;
    char dumped[1200] = "";
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "nrt_inputs_", 11) == 0)
            snprintf(dumped, sizeof dumped, "%s/%s/x.npy", dir, e->d_name);
    closedir(d);
    struct stat sb;
    assert_int_equal(stat(dumped, &sb), 0);
    assert_int_equal(sb.st_size, 128 + 128 * 4 * 4);   /* header + payload */
    assert_int_equal(chdir(cwd), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void test_bad_values(void **state)
{
    (void)state;
    /* Ignored, but its value is still checked: a number. */
    setenv("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "three", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    setenv("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "3", 1);
    setenv("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", "maybe", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    unsetenv("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR");
    setenv("NEURON_RT_LOG_LOCATION", "/nonexistent-dir/x.log", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    unsetenv("NEURON_RT_LOG_LOCATION");
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_virtual_core_size, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_numerical_errors, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_log_location_and_dump, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, env_setup, env_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
