/*
 * test_tensor_set.c: integration tests of tensor sets through the public
 * ABI: allocate, add (the same name replaces), get (NRT_FAILURE when the
 * name is absent, NRT_INVALID when its tensor was freed), destroy (clears
 * the pointer, leaves the tensors alone), bad pointers, and sets that
 * outlive the runtime.
 */
#include <stdio.h>

#include "it_common.h"

static void test_basic(void **state)
{
    (void)state;
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    assert_non_null(set);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "a");
    nrt_tensor_t *b = it_tensor(NRT_TENSOR_PLACEMENT_HOST, -1, 128, "b");
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "input0", a), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "input1", b), NRT_SUCCESS);
    nrt_tensor_t *got = NULL;
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "input0", &got), NRT_SUCCESS);
    assert_ptr_equal(got, a);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "input1", &got), NRT_SUCCESS);
    assert_ptr_equal(got, b);
    /* Absent: NRT_FAILURE and nothing written. */
    got = (nrt_tensor_t *)(uintptr_t)0x77;
    char log[4096];  /* a miss is one ERROR line, at the default level */
    it_log_begin();
    NRT_STATUS miss = nrt_get_tensor_from_tensor_set(set, "input2", &got);
    int lines = it_log_end(log, sizeof log);
    assert_int_equal(miss, NRT_FAILURE);
    assert_int_equal(lines, 1);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "", &got), NRT_FAILURE);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "INPUT0", &got), NRT_FAILURE);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "input", &got), NRT_FAILURE);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "input00", &got), NRT_FAILURE);
    assert_ptr_equal(got, (nrt_tensor_t *)(uintptr_t)0x77);
    /* The same name again replaces. */
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "input0", b), NRT_SUCCESS);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "input0", &got), NRT_SUCCESS);
    assert_ptr_equal(got, b);
    /* One tensor under several names, in several sets. */
    nrt_tensor_set_t *other = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&other), NRT_SUCCESS);
    assert_ptr_not_equal(other, set);
    assert_int_equal(nrt_add_tensor_to_tensor_set(other, "input0", a), NRT_SUCCESS);
    assert_int_equal(nrt_get_tensor_from_tensor_set(other, "input0", &got), NRT_SUCCESS);
    assert_ptr_equal(got, a);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "input0", &got), NRT_SUCCESS);
    assert_ptr_equal(got, b);
    assert_int_equal(nrt_get_tensor_from_tensor_set(other, "input1", &got), NRT_FAILURE);
    /* The empty name is a name like any other. */
    assert_int_equal(nrt_add_tensor_to_tensor_set(other, "", b), NRT_SUCCESS);
    assert_int_equal(nrt_get_tensor_from_tensor_set(other, "", &got), NRT_SUCCESS);
    assert_ptr_equal(got, b);
    /* Destroy clears the pointer and leaves the tensors alone. */
    nrt_destroy_tensor_set(&set);
    assert_null(set);
    nrt_destroy_tensor_set(&other);
    assert_null(other);
    uint8_t x[64];
    memset(x, 3, sizeof x);
    assert_int_equal(nrt_tensor_write(a, x, 0, sizeof x), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_size(b), 128);
    nrt_tensor_free(&a);
    nrt_tensor_free(&b);
}

static void test_many_entries(void **state)
{
    (void)state;
    enum { COUNT = 300 };
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    nrt_tensor_t *t[COUNT];
    char name[32];
    for (int i = 0; i < COUNT; i++) {
        t[i] = it_tensor(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 8, "t");
        snprintf(name, sizeof name, "tensor_%d", i);
        assert_int_equal(nrt_add_tensor_to_tensor_set(set, name, t[i]), NRT_SUCCESS);
    }
    for (int i = COUNT - 1; i >= 0; i--) {
        nrt_tensor_t *got = NULL;
        snprintf(name, sizeof name, "tensor_%d", i);
        assert_int_equal(nrt_get_tensor_from_tensor_set(set, name, &got), NRT_SUCCESS);
        assert_ptr_equal(got, t[i]);
    }
    /* Replace every other one; the rest stay. */
    for (int i = 0; i < COUNT; i += 2) {
        snprintf(name, sizeof name, "tensor_%d", i);
        assert_int_equal(nrt_add_tensor_to_tensor_set(set, name, t[COUNT - 1 - i]), NRT_SUCCESS);
    }
    for (int i = 0; i < COUNT; i++) {
        nrt_tensor_t *got = NULL;
        snprintf(name, sizeof name, "tensor_%d", i);
        assert_int_equal(nrt_get_tensor_from_tensor_set(set, name, &got), NRT_SUCCESS);
        assert_ptr_equal(got, i % 2 == 0 ? t[COUNT - 1 - i] : t[i]);
    }
    nrt_destroy_tensor_set(&set);
    for (int i = 0; i < COUNT; i++)
        nrt_tensor_free(&t[i]);
}

static void test_long_names(void **state)
{
    (void)state;
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "a");
    char name[1100];
    memset(name, 'x', sizeof name);
    name[1023] = '\0'; /* 1023 characters: accepted */
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, name, a), NRT_SUCCESS);
    nrt_tensor_t *got = NULL;
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, name, &got), NRT_SUCCESS);
    assert_ptr_equal(got, a);
    name[1023] = 'x';
    name[1099] = '\0'; /* longer: refused */
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, name, a), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, name, &got), NRT_FAILURE);
    nrt_destroy_tensor_set(&set);
    nrt_tensor_free(&a);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(NULL), NRT_INVALID);
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "a");
    nrt_tensor_t *got = NULL;
    assert_int_equal(nrt_add_tensor_to_tensor_set(NULL, "n", a), NRT_INVALID);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, NULL, a), NRT_INVALID);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "n", NULL), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(NULL, "n", &got), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, NULL, &got), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "n", NULL), NRT_INVALID);
    /* A tensor passed as a set, a set passed as a tensor, junk. */
    uint8_t junk[128];
    memset(junk, 0x33, sizeof junk);
    assert_int_equal(nrt_add_tensor_to_tensor_set((nrt_tensor_set_t *)a, "n", a), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set((nrt_tensor_set_t *)a, "n", &got),
                     NRT_INVALID);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "n", (nrt_tensor_t *)set), NRT_INVALID);
    assert_int_equal(nrt_add_tensor_to_tensor_set(junk, "n", a), NRT_INVALID);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "n", (nrt_tensor_t *)junk), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(junk, "n", &got), NRT_INVALID);
    nrt_tensor_set_t *j = junk;
    nrt_destroy_tensor_set(&j);  /* not a set: nothing destroyed, pointer cleared */
    assert_null(j);
    nrt_tensor_set_t *ta = (nrt_tensor_set_t *)a;
    nrt_destroy_tensor_set(&ta);
    assert_null(ta);
    for (size_t i = 0; i < sizeof junk; i++)
        assert_int_equal(junk[i], 0x33);
    /* The set and the tensor are both still fine; nothing was added. */
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "n", &got), NRT_FAILURE);
    assert_int_equal(nrt_tensor_get_size(a), 64);
    nrt_destroy_tensor_set(NULL);
    nrt_tensor_set_t *nul = NULL;
    nrt_destroy_tensor_set(&nul);
    /* A destroyed set is no longer a set. */
    nrt_tensor_set_t *stale = set;
    nrt_destroy_tensor_set(&set);
    assert_int_equal(nrt_add_tensor_to_tensor_set(stale, "n", a), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(stale, "n", &got), NRT_INVALID);
    nrt_destroy_tensor_set(&stale);  /* double destroy: harmless */
    assert_null(stale);
    nrt_tensor_free(&a);
}

static void test_freed_tensor_in_set(void **state)
{
    (void)state;
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    nrt_tensor_t *keep = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "keep");
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "a");
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "a", a), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "keep", keep), NRT_SUCCESS);
    nrt_tensor_t *freed = a;
    nrt_tensor_free(&a);
    nrt_tensor_t *got = (nrt_tensor_t *)(uintptr_t)0x99;
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "a", &got), NRT_INVALID);
    assert_ptr_equal(got, (nrt_tensor_t *)(uintptr_t)0x99);
    /* Adding a freed tensor is refused. */
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "b", freed), NRT_INVALID);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "b", &got), NRT_FAILURE);
    /* The other entries are unaffected; replacing the dead entry heals it. */
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "keep", &got), NRT_SUCCESS);
    assert_ptr_equal(got, keep);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "a", keep), NRT_SUCCESS);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "a", &got), NRT_SUCCESS);
    assert_ptr_equal(got, keep);
    nrt_destroy_tensor_set(&set);
    nrt_tensor_free(&keep);
}

/* Sets are host containers: they work before nrt_init and after
 * nrt_close, but their tensors do not survive the runtime. */
static void test_sets_and_runtime(void **state)
{
    (void)state;
    nrt_close();
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    it_init("trn1.2xlarge", NULL, NULL, NULL);
    nrt_tensor_t *a = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "a");
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "a", a), NRT_SUCCESS);
    nrt_tensor_t *got = NULL;
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "a", &got), NRT_SUCCESS);
    nrt_close();
    got = NULL;
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "a", &got), NRT_INVALID);
    assert_null(got);
    assert_int_equal(nrt_get_tensor_from_tensor_set(set, "b", &got), NRT_FAILURE);
    assert_int_equal(nrt_add_tensor_to_tensor_set(set, "b", a), NRT_INVALID);
    nrt_tensor_set_t *late = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&late), NRT_SUCCESS);
    nrt_destroy_tensor_set(&late);
    nrt_destroy_tensor_set(&set);
    assert_null(set);
}

int main(void)
{
#define CASE(f) cmocka_unit_test_setup_teardown(f, it_setup_default, it_teardown)
    const struct CMUnitTest tests[] = {
        CASE(test_basic),
        CASE(test_many_entries),
        CASE(test_long_names),
        CASE(test_bad_arguments),
        CASE(test_freed_tensor_in_set),
        CASE(test_sets_and_runtime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
