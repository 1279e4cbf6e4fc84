/*
 * test_exec_threads.c: executions from several threads at once, through
 * the public API: four threads run the `add` example, two on VNC 0 (they
 * are serialised) and one each on VNCs 1 and 4, each with
 * its own tensors and inputs, many times; every result is checked. VNCs
 * 0 and 1 share chip 0, VNC 4 is on chip 1, so all three compute at
 * once. The threads have 256 KiB stacks: an execution runs on its
 * caller's thread while the VNC's worker is idle, and must fit a small
 * stack. Runs in the 'threads' suite (under TSan in `make test`).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "it_common.h"

enum { N = 128 * 512, THREADS = 4, ITERS = 20, STACK = 256 * 1024 };

static void *neff;
static size_t neff_size;
static nrt_model_t *models[5];
static _Atomic int failures;

struct job {
    int tid;   /* thread number */
    int vnc;   /* where its model lives */
};

static int run_once(nrt_model_t *m, nrt_tensor_t *const t[3], nrt_tensor_set_t *in,
                    nrt_tensor_set_t *out, float *a, float *b, float *c, int seed)
{
    for (int i = 0; i < N; i++) {
        a[i] = (float)((i * 7 + seed) % 1000);
        b[i] = (float)seed;
    }
    if (nrt_tensor_write(t[0], a, 0, N * 4) != NRT_SUCCESS ||
        nrt_tensor_write(t[1], b, 0, N * 4) != NRT_SUCCESS ||
        nrt_execute(m, in, out) != NRT_SUCCESS || nrt_tensor_read(t[2], c, 0, N * 4) != NRT_SUCCESS)
        return -1;
    for (int i = 0; i < N; i++)
        if (c[i] != a[i] + b[i])
            return -1;
    return 0;
}

static void *worker(void *arg)
{
    const struct job *j = arg;
    const char *names[3] = {"a", "b", "c"};
    nrt_tensor_t *t[3] = {NULL};
    nrt_tensor_set_t *in = NULL, *out = NULL;
    float *a = malloc(N * 4), *b = malloc(N * 4), *c = malloc(N * 4);
    int bad = a == NULL || b == NULL || c == NULL ||
              nrt_allocate_tensor_set(&in) != NRT_SUCCESS ||
              nrt_allocate_tensor_set(&out) != NRT_SUCCESS;
    for (int k = 0; !bad && k < 3; k++)
        bad = nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, j->vnc, N * 4, names[k], &t[k]) !=
                  NRT_SUCCESS ||
              nrt_add_tensor_to_tensor_set(k < 2 ? in : out, names[k], t[k]) != NRT_SUCCESS;
    for (int it = 0; !bad && it < ITERS; it++)
        bad = run_once(models[j->vnc], t, in, out, a, b, c, j->tid * 1000 + it) != 0;
    if (bad)
        atomic_fetch_add(&failures, 1);
    for (int k = 0; k < 3; k++)
        nrt_tensor_free(&t[k]);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    free(a), free(b), free(c);
    return NULL;
}

static void test_parallel_executions(void **state)
{
    (void)state;
    neff = it_read_example("add.neff", &neff_size);
    it_init(NULL, NULL, NULL, NULL);
    const int vncs[3] = {0, 1, 4};
    for (int v = 0; v < 3; v++)
        assert_int_equal(nrt_load(neff, neff_size, vncs[v], -1, &models[vncs[v]]), NRT_SUCCESS);
    pthread_t th[THREADS];
    struct job jobs[THREADS] = {{0, 0}, {1, 0}, {2, 1}, {3, 4}};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    assert_int_equal(pthread_attr_setstacksize(&attr, STACK), 0);
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], &attr, worker, &jobs[i]), 0);
    pthread_attr_destroy(&attr);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&failures), 0);
    for (int v = 0; v < 3; v++)
        assert_int_equal(nrt_unload(models[vncs[v]]), NRT_SUCCESS);
    nrt_close();
    free(neff);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parallel_executions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
