/*
 * test_lifecycle.c: integration tests of the runtime life cycle through the
 * public ABI: NRT_UNINITIALIZED before nrt_init and NRT_CLOSED after
 * nrt_close for every call that needs the runtime, double init/close,
 * close without init, re-init; nrt_get_version, nrt_get_instance_info,
 * nrt_get_status_as_str; the VNC counts of every profile at each LNC with
 * NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES, before and after init.
 *
 * The order of the first test cases matters: the process must not have
 * called nrt_init before test_uninitialized runs.
 */
#include "it_common.h"

#include "trnemu/trnemu.h"

/* Every call that needs the runtime must answer want and touch nothing. */
static void expect_gate(NRT_STATUS want)
{
    uint8_t mem[256];
    memset(mem, 0x5a, sizeof mem);
    /* Never dereferenced: the gate answers before the pointer is looked at. */
    nrt_tensor_t *fake = (nrt_tensor_t *)mem;
    nrt_tensor_t *out = (nrt_tensor_t *)&out;
    nrt_tensor_t *const out0 = out;
    uint8_t buf[16] = {0};

    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &out), want);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 64, "t", &out), want);
    assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, 0, 64, "t", &out), want);
    assert_int_equal(nrt_tensor_allocate_empty("e", &out), want);
    assert_int_equal(nrt_tensor_allocate_slice(fake, 0, 8, "s", &out), want);
    assert_ptr_equal(out, out0);
    assert_int_equal(nrt_tensor_attach_buffer(fake, buf, sizeof buf), want);
    assert_int_equal(nrt_tensor_read(fake, buf, 0, 8), want);
    assert_int_equal(nrt_tensor_write(fake, buf, 0, 8), want);
    assert_int_equal(nrt_tensor_copy(fake, 0, fake, 8, 8), want);
    assert_int_equal(nrt_tensor_memset(fake, 0, 1, 8), want);
    nrt_tensor_batch_op_t op = {0, 8, buf};
    nrt_tensor_batch_t b = {fake, &op, 1};
    assert_int_equal(nrt_tensor_read_batch(&b, 1, false), want);
    assert_int_equal(nrt_tensor_write_batch(&b, 1, true), want);
    nrt_tensor_device_allocation_info_t info;
    assert_int_equal(nrt_tensor_get_device_allocation_info(fake, &info), want);
    assert_int_equal(nrt_tensor_check_output_completion(fake, 0, 0), want);
    assert_int_equal(nrt_tensor_reset_output_completion(fake), want);
    nrt_vnc_memory_stats_t stats;
    size_t n = 0;
    assert_int_equal(nrt_get_vnc_memory_stats(0, &stats, sizeof stats, &n), want);
    void *va = NULL;
    size_t sz = 0;
    assert_int_equal(nrt_get_hbm_mmap_va(0, 0, &va, &sz), want);
    assert_null(va);
    uint32_t id = 0, map[64], count = 64;
    assert_int_equal(nrt_host_device_id_get(0, &id), want);
    assert_int_equal(nrt_host_device_id_rid_map_get(&count, map), want);
    /* The calls without a status answer "nothing". */
    assert_int_equal(nrt_tensor_get_size(fake), 0);
    assert_null(nrt_tensor_get_va(fake));
    nrt_tensor_t *f = fake;
    nrt_tensor_free(&f);
    assert_null(f);
    /* Nothing above wrote into the fake tensor. */
    for (size_t i = 0; i < sizeof mem; i++)
        assert_int_equal(mem[i], 0x5a);
}

/* Queries that do not need the runtime work in any state. */
static void expect_queries_work(void)
{
    uint32_t n = 0;
    assert_int_equal(nrt_get_total_vnc_count(&n), NRT_SUCCESS);
    assert_int_equal(n, 64);
    assert_int_equal(nrt_get_visible_vnc_count(&n), NRT_SUCCESS);
    assert_int_equal(n, 64);
    nrt_version_t v;
    assert_int_equal(nrt_get_version(&v, sizeof v), NRT_SUCCESS);
    nrt_instance_info_t ii;
    assert_int_equal(nrt_get_instance_info(&ii, sizeof ii), NRT_SUCCESS);
    assert_int_equal(ii.family, NRT_INSTANCE_TRN2);
    nrt_tensor_set_t *set = NULL;
    assert_int_equal(nrt_allocate_tensor_set(&set), NRT_SUCCESS);
    nrt_destroy_tensor_set(&set);
    assert_null(set);
    assert_string_not_equal(nrt_get_status_as_str(NRT_CLOSED), "");
}

static void test_uninitialized(void **state)
{
    (void)state;
    expect_gate(NRT_UNINITIALIZED);
    expect_queries_work();
    /* Closing a runtime that never started is harmless and changes nothing. */
    nrt_close();
    nrt_close();
    expect_gate(NRT_UNINITIALIZED);
}

static void test_bad_init(void **state)
{
    (void)state;
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_INVALID, "", ""), NRT_INVALID);
    assert_int_equal(nrt_init((nrt_framework_type_t)99, NULL, NULL), NRT_INVALID);
    setenv("TRNEMU_INSTANCE", "trn9.huge", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    it_env_clear();
    setenv("NEURON_LOGICAL_NC_CONFIG", "3", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    it_env_clear();
    setenv("NEURON_RT_VISIBLE_CORES", "0-64", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    it_env_clear();
    setenv("NEURON_RT_NUM_CORES", "65", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    it_env_clear();
    /* A failed init leaves the runtime as it was. */
    expect_gate(NRT_UNINITIALIZED);
}

static void test_init_close_cycle(void **state)
{
    (void)state;
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "1.0", "1.0"), NRT_SUCCESS);
    /* A second init keeps the running instance (and its tensors). */
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "keep");
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_PYTORCH, NULL, NULL), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_get_size(t), 64);
    assert_int_equal(nrt_tensor_memset(t, 0, 7, 64), NRT_SUCCESS);
    nrt_close();
    expect_gate(NRT_CLOSED);
    expect_queries_work();
    nrt_close();  /* twice: harmless */
    expect_gate(NRT_CLOSED);
    /* The tensor died with the runtime; freeing the stale pointer is safe. */
    nrt_tensor_free(&t);
    assert_null(t);

    /* Re-init after close works, more than once. */
    for (int round = 0; round < 3; round++) {
        assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
        nrt_tensor_t *u = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, 128, "u");
        uint8_t w[128], r[128];
        it_pattern(w, sizeof w, (uint32_t)round);
        assert_int_equal(nrt_tensor_write(u, w, 0, sizeof w), NRT_SUCCESS);
        assert_int_equal(nrt_tensor_read(u, r, 0, sizeof r), NRT_SUCCESS);
        assert_memory_equal(w, r, sizeof w);
        nrt_vnc_memory_stats_t st;
        size_t n;
        assert_int_equal(nrt_get_vnc_memory_stats(1, &st, sizeof st, &n), NRT_SUCCESS);
        assert_int_equal(st.bytes_used, 128);  /* nothing left over from earlier rounds */
        nrt_close();
        expect_gate(NRT_CLOSED);
        /* A tensor left allocated at close is freed by close. */
        assert_int_equal(nrt_tensor_get_size(u), 0);
    }
    /* A failed init after close leaves it closed. */
    setenv("TRNEMU_INSTANCE", "nope", 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    it_env_clear();
    expect_gate(NRT_CLOSED);
}

static void test_status_strings(void **state)
{
    (void)state;
    static const NRT_STATUS all[] = {
        NRT_SUCCESS, NRT_FAILURE, NRT_INVALID, NRT_INVALID_HANDLE, NRT_RESOURCE, NRT_TIMEOUT,
        NRT_HW_ERROR, NRT_QUEUE_FULL, NRT_LOAD_NOT_ENOUGH_NC, NRT_UNSUPPORTED_NEFF_VERSION,
        NRT_FAIL_HOST_MEM_ALLOC, NRT_UNINITIALIZED, NRT_CLOSED, NRT_QUEUE_EMPTY,
        NRT_EXEC_UNIT_UNRECOVERABLE, NRT_EXEC_BAD_INPUT, NRT_EXEC_COMPLETED_WITH_NUM_ERR,
        NRT_EXEC_COMPLETED_WITH_ERR, NRT_EXEC_NC_BUSY, NRT_EXEC_OOB, NRT_COLL_PENDING,
        NRT_EXEC_HW_ERR_COLLECTIVES, NRT_EXEC_HW_ERR_HBM_UE, NRT_EXEC_HW_ERR_NC_UE,
        NRT_EXEC_HW_ERR_DMA_ABORT, NRT_EXEC_SW_NQ_OVERFLOW, NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE,
        NRT_NETWORK_PROXY_FAILURE,
    };
    const size_t n = sizeof all / sizeof all[0];
    const char *unknown = nrt_get_status_as_str((NRT_STATUS)8);
    assert_non_null(unknown);
    assert_true(strlen(unknown) > 0);
    for (size_t i = 0; i < n; i++) {
        const char *s = nrt_get_status_as_str(all[i]);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
        if (strcmp(s, unknown) == 0)
            fail_msg("status %d has no name of its own", (int)all[i]);
        for (size_t j = 0; j < i; j++)
            if (strcmp(s, nrt_get_status_as_str(all[j])) == 0)
                fail_msg("statuses %d and %d share the name \"%s\"", (int)all[i], (int)all[j], s);
        /* Stable: the same pointer-independent text each time. */
        assert_string_equal(s, nrt_get_status_as_str(all[i]));
    }
    static const int unknowns[] = {-1, 8, 12, 16, 100, 999, 1001, 1007, 1207, 65535, 0x7fffffff};
    for (size_t i = 0; i < sizeof unknowns / sizeof unknowns[0]; i++) {
        const char *s = nrt_get_status_as_str((NRT_STATUS)unknowns[i]);
        assert_non_null(s);
        assert_string_equal(s, unknown);
    }
}

static void test_version(void **state)
{
    (void)state;
    nrt_version_t v;
    memset(&v, 0xcc, sizeof v);
    assert_int_equal(nrt_get_version(&v, sizeof v), NRT_SUCCESS);
    assert_int_equal(v.rt_major, NRT_MAJOR_VERSION);
    assert_int_equal(v.rt_minor, NRT_MINOR_VERSION);
    assert_non_null(memchr(v.rt_detail, '\0', sizeof v.rt_detail));
    assert_non_null(memchr(v.git_hash, '\0', sizeof v.git_hash));
    assert_non_null(strstr(v.rt_detail, "trnemu"));
    assert_true(strlen(v.git_hash) > 0);
    /* An older, shorter struct receives only its prefix. */
    uint8_t small[sizeof(uint64_t) * 2 + 8];
    memset(small, 0xcc, sizeof small);
    assert_int_equal(nrt_get_version((nrt_version_t *)small, 2 * sizeof(uint64_t)), NRT_SUCCESS);
    assert_memory_equal(small, &v, 2 * sizeof(uint64_t));
    for (size_t i = 2 * sizeof(uint64_t); i < sizeof small; i++)
        assert_int_equal(small[i], 0xcc);
    assert_int_equal(nrt_get_version(NULL, sizeof v), NRT_INVALID);
    assert_int_equal(nrt_get_version(&v, 0), NRT_INVALID);
    /* trnemu's own version agrees with the detail string. */
    assert_non_null(strstr(v.rt_detail, trnemu_version()));
    /* The same answer while running. */
    it_init(NULL, NULL, NULL, NULL);
    nrt_version_t w;
    assert_int_equal(nrt_get_version(&w, sizeof w), NRT_SUCCESS);
    assert_memory_equal(&v, &w, sizeof v);
}

/* One instance type and what nrt_get_instance_info must say about it. */
struct instance_case {
    const char *name;    /* TRNEMU_INSTANCE */
    uint32_t family;     /* NRT_INSTANCE_* */
    uint32_t size;       /* NRT_INSTANCE_SIZE_* */
    const char *arch;    /* arch_name */
};

static const struct instance_case instances[] = {
    {"trn1.2xlarge", NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_2XL, "trn1"},
    {"trn1.32xlarge", NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_32XL, "trn1"},
    {"inf2.xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_1XL, "inf2"},
    {"inf2.48xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_48XL, "inf2"},
    {"trn2.48xlarge", NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_48XL, "trn2"},
    {"trn2u.48xlarge", NRT_INSTANCE_TRN2U, NRT_INSTANCE_SIZE_48XL, "trn2"},
};
#define NINSTANCES (sizeof instances / sizeof instances[0])

static void check_instance_info(const struct instance_case *c)
{
    nrt_instance_info_t ii;
    memset(&ii, 0xcc, sizeof ii);
    assert_int_equal(nrt_get_instance_info(&ii, sizeof ii), NRT_SUCCESS);
    assert_int_equal(ii.family, c->family);
    assert_int_equal(ii.size, c->size);
    assert_string_equal(ii.arch_name, c->arch);
    assert_non_null(memchr(ii.device_revision, '\0', sizeof ii.device_revision));
    assert_true(strlen(ii.device_revision) > 0);
}

static void test_instance_info(void **state)
{
    (void)state;
    for (size_t i = 0; i < NINSTANCES; i++) {
        it_env_clear();
        setenv("TRNEMU_INSTANCE", instances[i].name, 1);
        check_instance_info(&instances[i]);   /* before init */
        assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
        check_instance_info(&instances[i]);   /* while running */
        /* The running instance is what is reported, whatever the
         * environment says now. */
        setenv("TRNEMU_INSTANCE", i == 0 ? "trn2.48xlarge" : "trn1.2xlarge", 1);
        check_instance_info(&instances[i]);
        nrt_close();
    }
    it_env_clear();
    /* Default profile. */
    check_instance_info(&instances[4]);
    nrt_instance_info_t ii;
    assert_int_equal(nrt_get_instance_info(NULL, sizeof ii), NRT_INVALID);
    assert_int_equal(nrt_get_instance_info(&ii, 0), NRT_INVALID);
    setenv("TRNEMU_INSTANCE", "not-a-machine", 1);
    assert_int_equal(nrt_get_instance_info(&ii, sizeof ii), NRT_INVALID);
}

/* One machine configuration and its VNC counts. */
struct count_case {
    const char *instance; /* TRNEMU_INSTANCE (NULL: default) */
    const char *lnc;      /* NEURON_LOGICAL_NC_CONFIG */
    const char *visible;  /* NEURON_RT_VISIBLE_CORES */
    const char *num;      /* NEURON_RT_NUM_CORES */
    uint32_t total;       /* expected total VNCs */
    uint32_t visible_n;   /* expected visible VNCs */
};

static const struct count_case counts[] = {
    {"trn1.2xlarge", NULL, NULL, NULL, 2, 2},
    {"trn1.2xlarge", "1", "1", NULL, 2, 1},
    {"trn1.2xlarge", NULL, NULL, "1", 2, 1},
    {"trn1.32xlarge", NULL, NULL, NULL, 32, 32},
    {"trn1.32xlarge", NULL, "0-3,8", NULL, 32, 5},
    {"trn1.32xlarge", NULL, "0-3,8", "16", 32, 5},   /* VISIBLE wins */
    {"inf2.xlarge", NULL, NULL, NULL, 2, 2},
    {"inf2.48xlarge", NULL, NULL, NULL, 24, 24},
    {"inf2.48xlarge", NULL, NULL, "7", 24, 7},
    {NULL, NULL, NULL, NULL, 64, 64},
    {"trn2.48xlarge", "2", NULL, NULL, 64, 64},
    {"trn2.48xlarge", "1", NULL, NULL, 128, 128},
    {"trn2.48xlarge", "1", "64-127", NULL, 128, 64},
    {"trn2.48xlarge", "2", "0-3,8", "2", 64, 5},
    {"trn2.48xlarge", NULL, NULL, "0", 64, 64},
    {"trn2.48xlarge", NULL, NULL, "64", 64, 64},
    /* A trn2u.48xlarge is one server of the UltraServer: 16 chips. */
    {"trn2u.48xlarge", NULL, NULL, NULL, 64, 64},
    {"trn2u.48xlarge", "1", NULL, NULL, 128, 128},
    {"trn2u.48xlarge", "1", "127", NULL, 128, 1},
    {"trn2u.48xlarge", "2", NULL, "40", 64, 40},
};

static void set_count_env(const struct count_case *c)
{
    it_env_clear();
    it_env("TRNEMU_INSTANCE", c->instance);
    it_env("NEURON_LOGICAL_NC_CONFIG", c->lnc);
    it_env("NEURON_RT_VISIBLE_CORES", c->visible);
    it_env("NEURON_RT_NUM_CORES", c->num);
}

static void check_counts(const struct count_case *c)
{
    uint32_t a = 0, b = 0, d = 0, e = 0;
    assert_int_equal(nrt_get_total_vnc_count(&a), NRT_SUCCESS);
    assert_int_equal(nrt_get_total_nc_count(&b), NRT_SUCCESS);
    assert_int_equal(nrt_get_visible_vnc_count(&d), NRT_SUCCESS);
    assert_int_equal(nrt_get_visible_nc_count(&e), NRT_SUCCESS);
    assert_int_equal(a, c->total);
    assert_int_equal(b, c->total);
    assert_int_equal(d, c->visible_n);
    assert_int_equal(e, c->visible_n);
}

static void test_counts(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        const struct count_case *c = &counts[i];
        set_count_env(c);
        check_counts(c);                  /* before init */
        assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
        check_counts(c);                  /* while running */
        /* Changing the environment does not change a running instance. */
        setenv("NEURON_RT_NUM_CORES", "1", 1);
        unsetenv("NEURON_RT_VISIBLE_CORES");
        check_counts(c);
        /* Local VNC ids are 0 .. visible-1: the last works, one more does not. */
        nrt_tensor_t *t = NULL;
        assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE,
                                             (int)c->visible_n - 1, 64, "last", &t), NRT_SUCCESS);
        nrt_tensor_free(&t);
        assert_int_equal(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, (int)c->visible_n, 64,
                                             "past", &t), NRT_INVALID);
        assert_null(t);
        nrt_close();
        set_count_env(c);
        check_counts(c);                  /* after close */
    }
}

static void test_counts_bad(void **state)
{
    (void)state;
    assert_int_equal(nrt_get_total_vnc_count(NULL), NRT_INVALID);
    assert_int_equal(nrt_get_total_nc_count(NULL), NRT_INVALID);
    assert_int_equal(nrt_get_visible_vnc_count(NULL), NRT_INVALID);
    assert_int_equal(nrt_get_visible_nc_count(NULL), NRT_INVALID);
    static const struct {
        const char *var;   /* variable */
        const char *value; /* bad value */
    } bad[] = {
        {"TRNEMU_INSTANCE", "trn1"},
        {"NEURON_LOGICAL_NC_CONFIG", "4"},
        {"NEURON_RT_VISIBLE_CORES", "0-"},
        {"NEURON_RT_VISIBLE_CORES", "64"},
        {"NEURON_RT_VISIBLE_CORES", "a,b"},
        {"NEURON_RT_NUM_CORES", "-2"},
        {"NEURON_RT_NUM_CORES", "1000"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        it_env_clear();
        setenv(bad[i].var, bad[i].value, 1);
        uint32_t n = 12345;
        assert_int_equal(nrt_get_total_vnc_count(&n), NRT_INVALID);
        assert_int_equal(nrt_get_visible_vnc_count(&n), NRT_INVALID);
        assert_int_equal(n, 12345);
        assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_INVALID);
    }
    /* trn1 has no LNC=2. */
    it_env_clear();
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    setenv("NEURON_LOGICAL_NC_CONFIG", "2", 1);
    uint32_t n;
    assert_int_equal(nrt_get_total_vnc_count(&n), NRT_INVALID);
}

/* trnemu's machine description agrees with the vendor-style queries. */
static void test_machine_info(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        set_count_env(&counts[i]);
        trnemu_machine_info_t mi;
        assert_int_equal(trnemu_get_machine_info(&mi, sizeof mi), NRT_SUCCESS);
        assert_int_equal(mi.total_vncs, counts[i].total);
        assert_int_equal(mi.visible_vncs, counts[i].visible_n);
        assert_int_equal(mi.total_vncs, mi.chips * mi.cores_per_chip / mi.lnc);
        assert_string_equal(mi.instance_type,
                            counts[i].instance ? counts[i].instance : "trn2.48xlarge");
    }
    assert_int_equal(trnemu_get_machine_info(NULL, 8), NRT_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* These two first: nrt_init must not have run yet. */
        cmocka_unit_test_setup_teardown(test_uninitialized, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_bad_init, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_init_close_cycle, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_status_strings, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_version, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_instance_info, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_counts, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_counts_bad, it_setup_clean, it_teardown),
        cmocka_unit_test_setup_teardown(test_machine_info, it_setup_clean, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
