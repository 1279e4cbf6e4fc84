/*
 * test_examples_threads.c: every example kernel gives the same output bits
 * whatever the number of host threads its large instructions are split
 * across (emu/core/par.h). Each example runs on fixed inputs with 1, then
 * 2, then 3 threads, and a 64-bit FNV-1a hash of all its output bytes must
 * not change. matmul_lnc2 (two physical cores, VNC 0 of the LNC=2 default
 * machine) runs both cores on one thread at 1 and each on its own at 2
 * and 3. The 4096^3 matmul and the Trainium3 mx_matmul are among
 * them (mlp_train is not: it needs ranks); TRNEMU_TEST_QUICK=1 skips the
 * 4096^3 one (sanitizer builds).
 *
 * The kernels run through the public API, but this program links the
 * runtime's libraries directly instead of libnrt.so.1, the one way to set
 * the thread count without a variable (par_configure is not exported).
 * TRNEMU_EXAMPLES_DIR names the directory with the .neff files.
 */
#include "it_common.h"

#include "emu/core/par.h"

/* Element e of an input of type dt: finite values in [-1, 1) for the float
 * types, small non-negative bytes otherwise (finite in every fp8 format). */
static void ex_elem(nrt_dtype_t dt, uint64_t e, uint8_t *dst)
{
    uint64_t r = (e + 1) * 0x9e3779b97f4a7c15ull;
    r ^= r >> 29;
    r *= 0xbf58476d1ce4e5b9ull;
    r ^= r >> 32;
    float f = (float)((double)(r >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if (dt == NRT_DTYPE_FLOAT32 || dt == NRT_DTYPE_FP32R) {
        memcpy(dst, &f, 4);
    } else if (dt == NRT_DTYPE_BFLOAT16) {
        uint16_t h = (uint16_t)(bits >> 16);
        memcpy(dst, &h, 2);
    } else if (dt == NRT_DTYPE_FLOAT16) {
        uint16_t h = (uint16_t)((r & 0x8000u) | 0x3000u | (r >> 20 & 0x3ffu)); /* |x| < 0.25 */
        memcpy(dst, &h, 2);
    } else {
        *dst = (uint8_t)(r & 0x3fu);
    }
}

static size_t ex_dtype_size(nrt_dtype_t dt)
{
    switch (dt) {
    case NRT_DTYPE_FLOAT32: case NRT_DTYPE_FP32R: case NRT_DTYPE_UINT32: case NRT_DTYPE_INT32:
        return 4;
    case NRT_DTYPE_BFLOAT16: case NRT_DTYPE_FLOAT16: case NRT_DTYPE_UINT16: case NRT_DTYPE_INT16:
        return 2;
    case NRT_DTYPE_UINT64: case NRT_DTYPE_INT64:
        return 8;
    default:
        return 1;
    }
}

/* Fill every input with its fixed values. */
static void ex_fill_inputs(struct it_model *x)
{
    for (uint64_t i = 0; i < x->info->tensor_count; i++) {
        const nrt_tensor_info_t *ti = &x->info->tensor_array[i];
        if (ti->usage != NRT_TENSOR_USAGE_INPUT)
            continue;
        size_t es = ex_dtype_size(ti->dtype);
        uint8_t *buf = calloc(1, ti->size);
        assert_non_null(buf);
        for (size_t e = 0; e + es <= ti->size; e += es)
            ex_elem(ti->dtype, (i << 40) + e / es, buf + e);
        assert_int_equal(nrt_tensor_write(x->t[i], buf, 0, ti->size), NRT_SUCCESS);
        free(buf);
    }
}

/* FNV-1a over every output's bytes, in tensor order. */
static uint64_t ex_hash_outputs(struct it_model *x)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < x->info->tensor_count; i++) {
        const nrt_tensor_info_t *ti = &x->info->tensor_array[i];
        if (ti->usage != NRT_TENSOR_USAGE_OUTPUT)
            continue;
        uint8_t *buf = malloc(ti->size);
        assert_non_null(buf);
        assert_int_equal(nrt_tensor_read(x->t[i], buf, 0, ti->size), NRT_SUCCESS);
        for (size_t b = 0; b < ti->size; b++)
            h = (h ^ buf[b]) * 0x100000001b3ull;
        free(buf);
    }
    return h;
}

/* Run one example at 1, 2 and 3 threads: the same hash each time. */
static void ex_same_bits(const char *name)
{
    struct it_model x;
    it_model_load(&x, name);
    uint64_t first = 0;
    for (unsigned threads = 1; threads <= 3; threads++) {
        par_configure(threads);
        ex_fill_inputs(&x);
        for (uint64_t i = 0; i < x.info->tensor_count; i++) /* outputs start from zero */
            if (x.info->tensor_array[i].usage == NRT_TENSOR_USAGE_OUTPUT)
                assert_int_equal(nrt_tensor_memset(x.t[i], 0, 0, x.info->tensor_array[i].size),
                                 NRT_SUCCESS);
        assert_int_equal(nrt_execute(x.model, x.in, x.out), NRT_SUCCESS);
        uint64_t h = ex_hash_outputs(&x);
        printf("  %s, %u thread%s: %016llx\n", name, threads, threads == 1 ? "" : "s",
               (unsigned long long)h);
        if (threads == 1)
            first = h;
        else if (h != first)
            fail_msg("%s: outputs with %u threads differ from 1 thread", name, threads);
    }
    par_configure(0);
    it_model_unload(&x);
}

static int setup(void **state)
{
    (void)state;
    it_env_clear();
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

static int setup_trn3(void **state)
{
    (void)state;
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn3pd98.3xlarge", 1);
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    nrt_close();
    unsetenv("TRNEMU_INSTANCE");
    return 0;
}

static void test_small_examples(void **state)
{
    (void)state;
    /* mlp_train is left out: its all-reduce needs ranks (examples/dp_train.c) */
    const char *names[] = {"add", "matmul_512", "softmax", "layernorm", "matmul_lnc2"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ex_same_bits(names[i]);
}

static void test_mx_matmul(void **state)
{
    (void)state;
    ex_same_bits("mx_matmul");
}

static void test_matmul_4096(void **state)
{
    (void)state;
    const char *quick = getenv("TRNEMU_TEST_QUICK");
    if (quick != NULL && strcmp(quick, "1") == 0)
        skip();
    ex_same_bits("matmul_4096");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_small_examples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mx_matmul, setup_trn3, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_4096, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
