/*
 * test_examples.c: the example kernels (examples/NAME.s, assembled at build
 * time) executed end to end through the public API only, each checked
 * against a reference computed here: add, the 512^3 and 4096^3 bf16
 * matmuls, softmax, layernorm, the MX matmul (Trainium3) and the 4:16
 * structured-sparse matmul. Also: every execution gives the same
 * bits, a model's tensor info matches its source, and bad executions
 * (missing or wrongly sized tensors) fail before anything runs.
 *
 * TRNEMU_EXAMPLES_DIR names the directory with the .neff files (and the
 * layernorm .npy constants); TRNEMU_TEST_QUICK=1 skips the 4096^3 matmul
 * (sanitizer builds).
 */
#include <math.h>
#include <stdio.h>

#include "it_common.h"

#include <cblas.h>

/* The device tensor called name (its size in *size when size is not NULL). */
static nrt_tensor_t *ex_tensor(struct it_model *k, const char *name, size_t *size)
{
    for (uint64_t i = 0; i < k->info->tensor_count; i++)
        if (strcmp(k->info->tensor_array[i].name, name) == 0) {
            if (size != NULL)
                *size = k->info->tensor_array[i].size;
            return k->t[i];
        }
    fail_msg("the model has no tensor '%s'", name);
    return NULL;
}

static void ex_write(struct it_model *k, const char *name, const void *data, size_t size)
{
    size_t want;
    nrt_tensor_t *t = ex_tensor(k, name, &want);
    assert_int_equal(want, size);
    assert_int_equal(nrt_tensor_write(t, data, 0, size), NRT_SUCCESS);
}

static void ex_read(struct it_model *k, const char *name, void *data, size_t size)
{
    size_t have;
    nrt_tensor_t *t = ex_tensor(k, name, &have);
    assert_int_equal(have, size);
    assert_int_equal(nrt_tensor_read(t, data, 0, size), NRT_SUCCESS);
}

static void ex_exec(struct it_model *k)
{
    assert_int_equal(nrt_execute(k->model, k->in, k->out), NRT_SUCCESS);
}

/* Deterministic pseudo-random floats in [-1, 1). */
static float ex_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static uint16_t ex_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even (finite inputs) */
    return (uint16_t)(u >> 16);
}

static float ex_bf16_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static int setup(void **state)
{
    (void)state;
    it_env_clear();
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    nrt_close();
    return 0;
}

/* ---- add ----------------------------------------------------------------- */

static void test_add(void **state)
{
    (void)state;
    enum { N = 128 * 512 };
    struct it_model k;
    it_model_load(&k, "add");
    float *a = malloc(N * 4), *b = malloc(N * 4), *c = malloc(N * 4), *c2 = malloc(N * 4);
    uint64_t s = 1;
    for (int i = 0; i < N; i++) {
        a[i] = ex_rand(&s) * 100.0f;
        b[i] = ex_rand(&s);
    }
    ex_write(&k, "a", a, N * 4);
    ex_write(&k, "b", b, N * 4);
    ex_exec(&k);
    ex_read(&k, "c", c, N * 4);
    for (int i = 0; i < N; i++)
        if (c[i] != a[i] + b[i])
            fail_msg("c[%d] = %g, want %g", i, c[i], a[i] + b[i]);
    ex_exec(&k); /* same inputs, same bits */
    ex_read(&k, "c", c2, N * 4);
    assert_memory_equal(c, c2, N * 4);
    free(a), free(b), free(c), free(c2);
    it_model_unload(&k);
}

/* Bad executions fail with NRT_INVALID before anything runs. */
static void test_bad_execute(void **state)
{
    (void)state;
    struct it_model k;
    it_model_load(&k, "add");
    nrt_tensor_set_t *partial, *wrong;
    nrt_tensor_t *small;
    assert_int_equal(nrt_allocate_tensor_set(&partial), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(partial, "a", ex_tensor(&k, "a", NULL)),
                     NRT_SUCCESS);
    assert_int_equal(nrt_execute(k.model, partial, k.out), NRT_INVALID);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "small", &small),
                     NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&wrong), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(wrong, "c", small), NRT_SUCCESS);
    assert_int_equal(nrt_execute(k.model, k.in, wrong), NRT_INVALID);
    assert_int_equal(nrt_execute_repeat(k.model, k.in, k.out, 0), NRT_INVALID);
    assert_int_equal(nrt_execute_repeat(k.model, k.in, k.out, 3), NRT_SUCCESS);
    nrt_destroy_tensor_set(&partial);
    nrt_destroy_tensor_set(&wrong);
    nrt_tensor_free(&small);
    it_model_unload(&k);
    assert_int_equal(nrt_execute(k.model, k.in, k.out), NRT_INVALID); /* unloaded */
}

/* ---- matmul ---------------------------------------------------------------- */

/* C[M x N] = A[M x K] @ B[K x N], bf16 inputs, fp32 out; the reference is
 * OpenBLAS sgemm on the same bf16 values (a different summation order, so
 * compared with a tolerance scaled by sum |a||b|). */
static void ex_matmul(const char *name, int n)
{
    size_t nn = (size_t)n * (size_t)n;
    struct it_model k;
    it_model_load(&k, name);
    uint16_t *a = malloc(nn * 2), *b = malloc(nn * 2);
    float *af = malloc(nn * 4), *bf = malloc(nn * 4), *c = malloc(nn * 4), *ref = malloc(nn * 4);
    uint64_t s = 7;
    for (size_t i = 0; i < nn; i++) {
        a[i] = ex_bf16(ex_rand(&s));
        b[i] = ex_bf16(ex_rand(&s));
        af[i] = ex_bf16_f32(a[i]);
        bf[i] = ex_bf16_f32(b[i]);
    }
    ex_write(&k, "A", a, nn * 2);
    ex_write(&k, "B", b, nn * 2);
    ex_exec(&k);
    ex_read(&k, "C", c, nn * 4);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, af, n, bf, n, 0.0f,
                ref, n);
    double tol = 1e-5 * (double)n; /* |a|,|b| < 1: sum |a||b| <= n */
    for (size_t i = 0; i < nn; i++)
        if (fabs((double)c[i] - (double)ref[i]) > tol)
            fail_msg("%s: c[%zu] = %.9g, reference %.9g", name, i, c[i], ref[i]);
    free(a), free(b), free(af), free(bf), free(c), free(ref);
    it_model_unload(&k);
}

static void test_matmul_512(void **state)
{
    (void)state;
    ex_matmul("matmul_512", 512);
}

static void test_matmul_4096(void **state)
{
    (void)state;
    const char *quick = getenv("TRNEMU_TEST_QUICK");
    if (quick != NULL && strcmp(quick, "1") == 0)
        skip();
    ex_matmul("matmul_4096", 4096);
}

/* matmul_lnc2: the two physical cores of VNC 0 each compute half of C
 * (1024 x 512 x 512); X holds the last 128-row block of C each core got
 * from the other by sendrecv: rows 896.. of C (core 1's) then rows 384..
 * (core 0's). */
static void test_matmul_lnc2(void **state)
{
    (void)state;
    enum { M = 1024, N = 512, K = 512 };
    struct it_model k;
    it_model_load(&k, "matmul_lnc2");
    uint16_t *a = malloc(M * K * 2), *b = malloc(K * N * 2);
    float *af = malloc(M * K * 4), *bf = malloc(K * N * 4), *c = malloc(M * N * 4);
    float *ref = malloc(M * N * 4), *x = malloc(256 * N * 4);
    uint64_t s = 11;
    for (size_t i = 0; i < (size_t)M * K; i++)
        af[i] = ex_bf16_f32(a[i] = ex_bf16(ex_rand(&s)));
    for (size_t i = 0; i < (size_t)K * N; i++)
        bf[i] = ex_bf16_f32(b[i] = ex_bf16(ex_rand(&s)));
    ex_write(&k, "A", a, (size_t)M * K * 2);
    ex_write(&k, "B", b, (size_t)K * N * 2);
    ex_exec(&k);
    ex_read(&k, "C", c, (size_t)M * N * 4);
    ex_read(&k, "X", x, 256 * N * 4);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, af, K, bf, N, 0.0f,
                ref, N);
    double tol = 1e-5 * K;
    for (size_t i = 0; i < (size_t)M * N; i++)
        if (fabs((double)c[i] - (double)ref[i]) > tol)
            fail_msg("matmul_lnc2: c[%zu] = %.9g, reference %.9g", i, c[i], ref[i]);
    assert_memory_equal(x, c + 896 * N, 128 * N * 4);
    assert_memory_equal(x + 128 * N, c + 384 * N, 128 * N * 4);
    free(a), free(b), free(af), free(bf), free(c), free(ref), free(x);
    it_model_unload(&k);
}

/* ---- softmax and layernorm --------------------------------------------- */

enum { ROWS = 128, COLS = 1024 };

static void test_softmax(void **state)
{
    (void)state;
    struct it_model k;
    it_model_load(&k, "softmax");
    float *x = malloc(ROWS * COLS * 4), *y = malloc(ROWS * COLS * 4);
    uint64_t s = 3;
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = ex_rand(&s) * 8.0f;
    ex_write(&k, "x", x, ROWS * COLS * 4);
    ex_exec(&k);
    ex_read(&k, "y", y, ROWS * COLS * 4);
    for (int r = 0; r < ROWS; r++) {
        const float *xr = x + r * COLS;
        double mx = xr[0], sum = 0;
        for (int j = 1; j < COLS; j++)
            mx = fmax(mx, xr[j]);
        for (int j = 0; j < COLS; j++)
            sum += exp(xr[j] - mx);
        for (int j = 0; j < COLS; j++) {
            double want = exp(xr[j] - mx) / sum, got = y[r * COLS + j];
            if (fabs(got - want) > 1e-5 * want + 1e-9)
                fail_msg("softmax y[%d][%d] = %.9g, want %.9g", r, j, got, want);
        }
    }
    free(x), free(y);
    it_model_unload(&k);
}

/* A float32 vector from an .npy file written by examples/gen_layernorm_params.py. */
static float *ex_npy_f32(const char *name, size_t want)
{
    size_t size;
    uint8_t *raw = it_read_example(name, &size);
    assert_true(size > 10 && memcmp(raw, "\x93NUMPY", 6) == 0);
    size_t hdr = raw[6] == 1 ? 10u + (size_t)(raw[8] | raw[9] << 8)
                             : 12u + (size_t)(raw[8] | raw[9] << 8 | raw[10] << 16);
    assert_true(memmem(raw, hdr, "<f4", 3) != NULL);
    assert_int_equal(size - hdr, want * 4);
    float *v = malloc(want * 4);
    memcpy(v, raw + hdr, want * 4);
    free(raw);
    return v;
}

static void test_layernorm(void **state)
{
    (void)state;
    struct it_model k;
    it_model_load(&k, "layernorm");
    float *gamma = ex_npy_f32("layernorm_gamma.npy", COLS);
    float *beta = ex_npy_f32("layernorm_beta.npy", COLS);
    float *x = malloc(ROWS * COLS * 4), *y = malloc(ROWS * COLS * 4);
    uint64_t s = 5;
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = ex_rand(&s) * 3.0f + 0.5f;
    ex_write(&k, "x", x, ROWS * COLS * 4);
    ex_exec(&k);
    ex_read(&k, "y", y, ROWS * COLS * 4);
    for (int r = 0; r < ROWS; r++) {
        const float *xr = x + r * COLS;
        double mean = 0, var = 0;
        for (int j = 0; j < COLS; j++)
            mean += xr[j];
        mean /= COLS;
        for (int j = 0; j < COLS; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        var /= COLS;
        double inv = 1.0 / sqrt(var + 1e-5);
        for (int j = 0; j < COLS; j++) {
            double want = (xr[j] - mean) * inv * gamma[j] + beta[j], got = y[r * COLS + j];
            if (fabs(got - want) > 1e-4 * (fabs(want) + 1.0))
                fail_msg("layernorm y[%d][%d] = %.9g, want %.9g", r, j, got, want);
        }
    }
    free(x), free(y), free(gamma), free(beta);
    it_model_unload(&k);
}

/* ---- mx_matmul (Trainium3) ----------------------------------------------- */

static int setup_trn3(void **state)
{
    (void)state;
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn3pd98.3xlarge", 1);
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

static int teardown_trn3(void **state)
{
    unsetenv("TRNEMU_INSTANCE");
    return teardown(state);
}

enum { MX_K = 128, MX_M = 128, MX_N = 512 };

/* Largest magnitude of the MX group holding element (p, 4c + j) of a
 * [128 x 4w] interleaved tile: partitions 8*(p/8).., elements 4c..4c+3. */
static double mx_group_amax(const float *t, uint32_t w, uint32_t p, uint32_t c)
{
    double a = 0;
    for (uint32_t i = 8 * (p / 8); i < 8 * (p / 8) + 8; i++)
        for (uint32_t j = 0; j < 4; j++)
            a = fmax(a, fabs(t[(size_t)i * 4 * w + 4 * c + j]));
    return a;
}

/* C from X, Y (as bf16-rounded floats) in double, and for each element the
 * bound on the MX quantisation error: each value moves by at most half an
 * e4m3fn ulp of its group's top binade, 2^-4 of the group's amax. */
static void mx_reference(const float *x, const float *y, double *c, double *err)
{
    for (uint32_t m = 0; m < MX_M; m++)
        for (uint32_t n = 0; n < MX_N; n++) {
            double sum = 0, e = 0;
            for (uint32_t p = 0; p < MX_K; p++) {
                double dx = mx_group_amax(x, MX_M, p, m) / 16, dy = mx_group_amax(y, MX_N, p, n) / 16;
                for (uint32_t j = 0; j < 4; j++) {
                    double a = x[(size_t)p * 4 * MX_M + 4 * m + j], b = y[(size_t)p * 4 * MX_N + 4 * n + j];
                    sum += a * b;
                    e += dx * fabs(b) + fabs(a) * dy + dx * dy;
                }
            }
            c[(size_t)m * MX_N + n] = sum;
            err[(size_t)m * MX_N + n] = e;
        }
}

/* One run of mx_matmul: small integers (quantised exactly: the result is
 * the exact integer matmul) or random values (within the MX bound). */
static void mx_run(struct it_model *k, bool ints, uint64_t seed)
{
    size_t nx = (size_t)MX_K * 4 * MX_M, ny = (size_t)MX_K * 4 * MX_N, nc = (size_t)MX_M * MX_N;
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *c = malloc(nc * 4);
    uint16_t *xb = malloc(nx * 2), *yb = malloc(ny * 2);
    double *want = malloc(nc * 8), *err = malloc(nc * 8);
    uint64_t s = seed;
    for (size_t i = 0; i < nx + ny; i++) {
        float v = ints ? (float)(int)(ex_rand(&s) * 15.5f) : ex_rand(&s) * (1.0f + (float)(i % 7));
        uint16_t h = ex_bf16(v);
        if (i < nx)
            xb[i] = h, x[i] = ex_bf16_f32(h);
        else
            yb[i - nx] = h, y[i - nx] = ex_bf16_f32(h);
    }
    ex_write(k, "X", xb, nx * 2);
    ex_write(k, "Y", yb, ny * 2);
    ex_exec(k);
    ex_read(k, "C", c, nc * 4);
    mx_reference(x, y, want, err);
    for (size_t i = 0; i < nc; i++) {
        bool ok = ints ? (double)c[i] == want[i] : fabs(c[i] - want[i]) <= err[i] + 1e-6;
        if (!ok)
            fail_msg("mx_matmul C[%zu][%zu] = %.9g, reference %.9g (bound %.3g)", i / MX_N,
                     i % MX_N, (double)c[i], want[i], err[i]);
    }
    free(x), free(y), free(c), free(xb), free(yb), free(want), free(err);
}

static void test_mx_matmul(void **state)
{
    (void)state;
    struct it_model k;
    it_model_load(&k, "mx_matmul");
    mx_run(&k, true, 3);
    mx_run(&k, false, 4);
    it_model_unload(&k);
}

/* The same NEFF on a Trainium2 machine: refused at load (NRT_INVALID). */
static void test_mx_matmul_on_trn2(void **state)
{
    (void)state;
    size_t size;
    void *neff = it_read_example("mx_matmul.neff", &size);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(neff, size, 0, -1, &m), NRT_INVALID);
    assert_null(m);
    free(neff);
}

/* ---- sparse_matmul (NeuronCore-v3 and later) ------------------------------- */

enum { SPX_P = 128, SPX_M = 128, SPX_F = 512, SPX_R = 4, SPX_K = SPX_P * SPX_R };

/* A random 4:16 W (kept marks in kept[k][m]), compressed into S and T. */
static void spx_make(uint64_t seed, float *w, bool *kept, uint16_t *sb, uint16_t *tag)
{
    uint64_t s = seed;
    memset(w, 0, sizeof(float) * SPX_K * SPX_M);
    memset(kept, 0, sizeof(bool) * SPX_K * SPX_M);
    memset(tag, 0, sizeof(uint16_t) * SPX_P * (SPX_M / 4));
    for (uint32_t g = 0; g < SPX_P / 4; g++)
        for (uint32_t m = 0; m < SPX_M; m++) {
            uint32_t pos[16];
            for (uint32_t i = 0; i < 16; i++)
                pos[i] = i;
            for (uint32_t i = 0; i < 4; i++) {
                uint32_t j = i + (uint32_t)((ex_rand(&s) + 1.0f) * 0.5f * (float)(16 - i)) % (16 - i);
                uint32_t t = pos[i];
                pos[i] = pos[j], pos[j] = t;
            }
            for (uint32_t i = 0; i < 4; i++) {
                uint32_t p = 4 * g + i, k = 16 * g + pos[i];
                uint16_t h = ex_bf16(ex_rand(&s));
                sb[(size_t)p * SPX_M + m] = h;
                w[(size_t)k * SPX_M + m] = ex_bf16_f32(h);
                kept[(size_t)k * SPX_M + m] = true;
                tag[(size_t)p * (SPX_M / 4) + m / 4] |= (uint16_t)(pos[i] << (4 * (m % 4)));
            }
        }
}

/* C = W^T X through the public API, bit for bit against the decompressed
 * W multiplied here (fmaf over the kept rows in increasing k). */
static void test_sparse_matmul(void **state)
{
    (void)state;
    float *w = malloc(sizeof(float) * SPX_K * SPX_M), *x = malloc(sizeof(float) * SPX_K * SPX_F);
    bool *kept = malloc(sizeof(bool) * SPX_K * SPX_M);
    uint16_t *sb = malloc(2 * SPX_P * SPX_M), *tag = malloc(2 * SPX_P * (SPX_M / 4));
    uint16_t *xb = malloc(2 * (size_t)SPX_P * SPX_R * SPX_F);
    float *c = malloc(sizeof(float) * SPX_M * SPX_F);
    spx_make(11, w, kept, sb, tag);
    uint64_t s = 12;
    for (size_t i = 0; i < (size_t)SPX_P * SPX_R * SPX_F; i++) { /* row k = i / F */
        xb[i] = ex_bf16(ex_rand(&s));
        x[i] = ex_bf16_f32(xb[i]);
    }
    struct it_model k;
    it_model_load(&k, "sparse_matmul");
    ex_write(&k, "S", sb, 2 * SPX_P * SPX_M);
    ex_write(&k, "T", tag, 2 * SPX_P * (SPX_M / 4));
    ex_write(&k, "X", xb, 2 * (size_t)SPX_P * SPX_R * SPX_F);
    ex_exec(&k);
    ex_read(&k, "C", c, sizeof(float) * SPX_M * SPX_F);
    for (uint32_t m = 0; m < SPX_M; m++)
        for (uint32_t f = 0; f < SPX_F; f++) {
            float acc = 0.0f;
            for (uint32_t kk = 0; kk < SPX_K; kk++)
                if (kept[(size_t)kk * SPX_M + m])
                    acc = fmaf(w[(size_t)kk * SPX_M + m], x[(size_t)kk * SPX_F + f], acc);
            if (memcmp(&acc, &c[(size_t)m * SPX_F + f], 4) != 0)
                fail_msg("sparse_matmul C[%u][%u] = %.9g, reference %.9g", m, f,
                         (double)c[(size_t)m * SPX_F + f], (double)acc);
        }
    it_model_unload(&k);
    free(w), free(x), free(kept), free(sb), free(tag), free(xb), free(c);
}

static int setup_trn1(void **state)
{
    (void)state;
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    return nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") == NRT_SUCCESS ? 0 : -1;
}

/* NeuronCore-v2 has no sparse matmul: refused at load (NRT_INVALID). */
static void test_sparse_matmul_on_trn1(void **state)
{
    (void)state;
    size_t size;
    void *neff = it_read_example("sparse_matmul.neff", &size);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(neff, size, 0, -1, &m), NRT_INVALID);
    assert_null(m);
    free(neff);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_execute, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_512, setup, teardown),
        cmocka_unit_test_setup_teardown(test_softmax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_layernorm, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mx_matmul, setup_trn3, teardown_trn3),
        cmocka_unit_test_setup_teardown(test_mx_matmul_on_trn2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sparse_matmul, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sparse_matmul, setup_trn3, teardown_trn3),
        cmocka_unit_test_setup_teardown(test_sparse_matmul_on_trn1, setup_trn1, teardown_trn3),
        cmocka_unit_test_setup_teardown(test_matmul_4096, setup, teardown),
        cmocka_unit_test_setup_teardown(test_matmul_lnc2, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
