/*
 * test_config.c: unit tests of the environment parsing (devices/config):
 * NEURON_RT_VISIBLE_CORES lists (well-formed and malformed),
 * TRNEMU_INSTANCE, NEURON_LOGICAL_NC_CONFIG per profile and
 * NEURON_RT_NUM_CORES, and which one wins; TRNEMU_THREADS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <unistd.h>

#include "devices/config/config.h"

static const char *const config_vars[] = {
    "TRNEMU_INSTANCE", "NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VISIBLE_CORES",
    "NEURON_RT_NUM_CORES", "TRNEMU_THREADS",
};

static int env_clear(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof config_vars / sizeof config_vars[0]; i++)
        unsetenv(config_vars[i]);
    setenv("NEURON_RT_LOG_LEVEL", "QUIET", 1);
    return 0;
}

/* Parse spec against total VNCs and compare with the expected list. */
static void expect_cores(const char *spec, uint32_t total, const uint16_t *want, uint32_t n)
{
    struct machine_config cfg;
    memset(&cfg, 0xab, sizeof cfg);
    assert_int_equal(config_parse_cores(spec, total, &cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(cfg.visible[i], want[i]);
}

static void test_parse_cores_good(void **state)
{
    (void)state;
    expect_cores("0", 2, (const uint16_t[]){0}, 1);
    expect_cores("1", 2, (const uint16_t[]){1}, 1);
    expect_cores("0-1", 2, (const uint16_t[]){0, 1}, 2);
    expect_cores("0-3,8", 16, (const uint16_t[]){0, 1, 2, 3, 8}, 5);
    expect_cores("8,0-3", 16, (const uint16_t[]){0, 1, 2, 3, 8}, 5);      /* sorted */
    expect_cores("0-3,2-5", 16, (const uint16_t[]){0, 1, 2, 3, 4, 5}, 6); /* merged */
    expect_cores("5,5,5", 16, (const uint16_t[]){5}, 1);
    expect_cores("3-3", 16, (const uint16_t[]){3}, 1);
    expect_cores(" 1 , 2 - 3 ", 16, (const uint16_t[]){1, 2, 3}, 3);
    expect_cores("15", 16, (const uint16_t[]){15}, 1);
    expect_cores("007", 16, (const uint16_t[]){7}, 1);
    /* The largest machine: every VNC. */
    struct machine_config cfg;
    assert_int_equal(config_parse_cores("0-511", 512, &cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 512);
    for (uint32_t i = 0; i < 512; i++)
        assert_int_equal(cfg.visible[i], i);
}

static void test_parse_cores_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", " ", ",", "a", "-1", "1-", "-", "3-1", "0,", ",0", "0,,1", "0-3x", "1 2",
        "0--3", "0-1-2", "1.5", "+1", "0x1", "16", "0-16", "99999999999999999999",
        "1000001", "0;1", "0-3,8,", "\t1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct machine_config cfg;
        memset(&cfg, 0, sizeof cfg);
        if (config_parse_cores(bad[i], 16, &cfg) != NRT_INVALID)
            fail_msg("\"%s\" was accepted", bad[i]);
    }
    /* No VNC at all: every core is out of range. */
    struct machine_config cfg;
    assert_int_equal(config_parse_cores("0", 0, &cfg), NRT_INVALID);
    /* A total larger than the configuration can hold is refused, not overrun. */
    assert_int_equal(config_parse_cores("0-600", 1000, &cfg), NRT_INVALID);
}

/* Load the configuration with the current environment. */
static NRT_STATUS load(struct machine_config *cfg)
{
    return config_from_env(cfg);
}

/* Figures of one profile at one LNC. */
struct profile_case {
    const char *instance; /* TRNEMU_INSTANCE, NULL: unset */
    const char *lnc;      /* NEURON_LOGICAL_NC_CONFIG, NULL: unset */
    const char *name;     /* expected profile */
    uint32_t lnc_val;     /* expected LNC */
    uint32_t per_chip;    /* expected VNCs per chip */
    uint32_t total;       /* expected VNCs */
};

static void test_profiles(void **state)
{
    (void)state;
    static const struct profile_case cases[] = {
        {NULL, NULL, "trn2.48xlarge", 2, 4, 64},
        {"", NULL, "trn2.48xlarge", 2, 4, 64},
        {"trn2.48xlarge", "2", "trn2.48xlarge", 2, 4, 64},
        {"trn2.48xlarge", "1", "trn2.48xlarge", 1, 8, 128},
        {"trn2.48xlarge", "", "trn2.48xlarge", 2, 4, 64},
        {"trn2u.48xlarge", NULL, "trn2u.48xlarge", 2, 4, 64},
        {"trn2u.48xlarge", "1", "trn2u.48xlarge", 1, 8, 128},
        {"trn1.2xlarge", NULL, "trn1.2xlarge", 1, 2, 2},
        {"trn1.2xlarge", "1", "trn1.2xlarge", 1, 2, 2},
        {"trn1.32xlarge", NULL, "trn1.32xlarge", 1, 2, 32},
        {"inf2.xlarge", NULL, "inf2.xlarge", 1, 2, 2},
        {"inf2.48xlarge", NULL, "inf2.48xlarge", 1, 2, 24},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct profile_case *c = &cases[i];
        env_clear(NULL);
        if (c->instance != NULL)
            setenv("TRNEMU_INSTANCE", c->instance, 1);
        if (c->lnc != NULL)
            setenv("NEURON_LOGICAL_NC_CONFIG", c->lnc, 1);
        struct machine_config cfg;
        assert_int_equal(load(&cfg), NRT_SUCCESS);
        assert_string_equal(cfg.profile->name, c->name);
        assert_int_equal(cfg.lnc, c->lnc_val);
        assert_int_equal(cfg.vncs_per_chip, c->per_chip);
        assert_int_equal(cfg.total_vncs, c->total);
        assert_int_equal(cfg.visible_count, c->total);
        for (uint32_t v = 0; v < cfg.visible_count; v++)
            assert_int_equal(cfg.visible[v], v);
    }
}

static void test_bad_instance(void **state)
{
    (void)state;
    static const char *const bad[] = {"trn3.49xlarge", "TRN1.2XLARGE", "trn1", " trn1.2xlarge", "x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("TRNEMU_INSTANCE", bad[i], 1);
        struct machine_config cfg;
        assert_int_equal(load(&cfg), NRT_INVALID);
    }
}

static void test_bad_lnc(void **state)
{
    (void)state;
    struct machine_config cfg;
    /* NeuronCore-v2 machines have no logical cores larger than one. */
    const char *v2[] = {"trn1.2xlarge", "trn1.32xlarge", "inf2.xlarge", "inf2.48xlarge"};
    for (size_t i = 0; i < 4; i++) {
        setenv("TRNEMU_INSTANCE", v2[i], 1);
        setenv("NEURON_LOGICAL_NC_CONFIG", "2", 1);
        assert_int_equal(load(&cfg), NRT_INVALID);
    }
    static const char *const bad[] = {"0", "3", "4", "8", "-1", "2x", "x", "1.0", "two",
                                      "99999999999999999999", "32", "1,2"};
    const char *v3[] = {"trn2.48xlarge", "trn2u.48xlarge"};
    for (size_t p = 0; p < 2; p++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            setenv("TRNEMU_INSTANCE", v3[p], 1);
            setenv("NEURON_LOGICAL_NC_CONFIG", bad[i], 1);
            if (load(&cfg) != NRT_INVALID)
                fail_msg("LNC \"%s\" accepted on %s", bad[i], v3[p]);
        }
    setenv("NEURON_LOGICAL_NC_CONFIG", " 1 ", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.lnc, 1);
}

static void test_visible_cores_env(void **state)
{
    (void)state;
    struct machine_config cfg;
    setenv("NEURON_RT_VISIBLE_CORES", "0-3,8", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.total_vncs, 64);
    assert_int_equal(cfg.visible_count, 5);
    assert_int_equal(cfg.visible[4], 8);
    /* Range checked against the VNCs at the chosen LNC. */
    setenv("NEURON_RT_VISIBLE_CORES", "64", 1);
    assert_int_equal(load(&cfg), NRT_INVALID);
    setenv("NEURON_LOGICAL_NC_CONFIG", "1", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 1);
    assert_int_equal(cfg.visible[0], 64);
    setenv("NEURON_RT_VISIBLE_CORES", "127", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    setenv("NEURON_RT_VISIBLE_CORES", "128", 1);
    assert_int_equal(load(&cfg), NRT_INVALID);
    setenv("TRNEMU_INSTANCE", "trn1.2xlarge", 1);
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    setenv("NEURON_RT_VISIBLE_CORES", "1", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 1);
    assert_int_equal(cfg.visible[0], 1);
    setenv("NEURON_RT_VISIBLE_CORES", "0-2", 1);
    assert_int_equal(load(&cfg), NRT_INVALID);
    setenv("NEURON_RT_VISIBLE_CORES", "zero", 1);
    assert_int_equal(load(&cfg), NRT_INVALID);
    /* Empty means unset. */
    setenv("NEURON_RT_VISIBLE_CORES", "", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 2);
}

static void test_num_cores(void **state)
{
    (void)state;
    struct machine_config cfg;
    setenv("NEURON_RT_NUM_CORES", "4", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 4);
    for (uint32_t i = 0; i < 4; i++)
        assert_int_equal(cfg.visible[i], i);
    setenv("NEURON_RT_NUM_CORES", "0", 1);  /* 0 means all */
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 64);
    setenv("NEURON_RT_NUM_CORES", "64", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 64);
    setenv("NEURON_RT_NUM_CORES", "", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 64);
    static const char *const bad[] = {"65", "-1", "x", "4x", "1-2", "1,2", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("NEURON_RT_NUM_CORES", bad[i], 1);
        if (load(&cfg) != NRT_INVALID)
            fail_msg("NEURON_RT_NUM_CORES=\"%s\" accepted", bad[i]);
    }
    setenv("NEURON_LOGICAL_NC_CONFIG", "1", 1);
    setenv("NEURON_RT_NUM_CORES", "65", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 65);
}

static void test_visible_wins(void **state)
{
    (void)state;
    struct machine_config cfg;
    setenv("NEURON_RT_NUM_CORES", "4", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "8", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 1);
    assert_int_equal(cfg.visible[0], 8);
    /* A bad NUM_CORES does not matter when VISIBLE_CORES is set. */
    setenv("NEURON_RT_NUM_CORES", "junk", 1);
    assert_int_equal(load(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.visible_count, 1);
    /* ...but a bad VISIBLE_CORES is not excused by a good NUM_CORES. */
    setenv("NEURON_RT_NUM_CORES", "4", 1);
    setenv("NEURON_RT_VISIBLE_CORES", "4-2", 1);
    assert_int_equal(load(&cfg), NRT_INVALID);
}

/* TRNEMU_THREADS: the online CPUs when unset, else 1 to CONFIG_MAX_THREADS. */
static void test_threads(void **state)
{
    (void)state;
    struct machine_config cfg;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    assert_int_equal(config_from_env(&cfg), NRT_SUCCESS);
    assert_int_equal(cfg.threads, cpus < 1 ? 1 : cpus);
    static const struct {
        const char *v;  /* the value */
        uint32_t want;  /* threads, 0: refused */
    } cases[] = {
        {"1", 1}, {"7", 7}, {"1024", 1024}, {" 3 ", 0 /* the env table takes no spaces */}, {"0", 0}, {"-2", 0}, {"1025", 0},
        {"2x", 0}, {"two", 0}, {"1.5", 0}, {"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("TRNEMU_THREADS", cases[i].v, 1);
        NRT_STATUS st = config_from_env(&cfg);
        if (*cases[i].v == '\0') {  /* empty is unset */
            assert_int_equal(st, NRT_SUCCESS);
            continue;
        }
        if (cases[i].want == 0 ? st != NRT_INVALID : st != NRT_SUCCESS || cfg.threads != cases[i].want)
            fail_msg("TRNEMU_THREADS=\"%s\": status %d, threads %u", cases[i].v, (int)st,
                     cfg.threads);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_parse_cores_good, env_clear),
        cmocka_unit_test_setup(test_parse_cores_bad, env_clear),
        cmocka_unit_test_setup(test_profiles, env_clear),
        cmocka_unit_test_setup(test_bad_instance, env_clear),
        cmocka_unit_test_setup(test_bad_lnc, env_clear),
        cmocka_unit_test_setup(test_visible_cores_env, env_clear),
        cmocka_unit_test_setup(test_num_cores, env_clear),
        cmocka_unit_test_setup(test_visible_wins, env_clear),
        cmocka_unit_test_setup(test_threads, env_clear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
