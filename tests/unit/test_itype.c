/*
 * test_itype.c: unit tests of the instance type table
 * (devices/profile): lookups, the published figures of each instance
 * type, internal consistency, and the LNC sizes each profile accepts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "devices/machine/machine.h"
#include "devices/config/itype.h"
#include "nrt/nrt.h"

#define GIB (1024ull * 1024ull * 1024ull)

/* What the public specifications say about each emulated instance type. */
struct expected_profile {
    const char *name;       /* instance type */
    uint32_t family;        /* NRT_INSTANCE_* */
    uint32_t size;          /* NRT_INSTANCE_SIZE_* */
    uint32_t chips;         /* devices */
    uint32_t cores;         /* physical cores per device */
    enum nc_gen gen;        /* NeuronCore generation */
    uint64_t hbm;           /* HBM per device */
    uint32_t stacks;        /* HBM stacks per device */
    uint32_t lnc_default;   /* default LNC */
};

static const struct expected_profile expected[] = {
    {"trn1.2xlarge", NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_2XL, 1, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"trn1.32xlarge", NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_32XL, 16, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"inf2.xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_1XL, 1, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"inf2.48xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_48XL, 12, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"trn2.48xlarge", NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_48XL, 16, 8, NC_GEN_V3, 96 * GIB, 4, 2},
    {"trn2u.48xlarge", NRT_INSTANCE_TRN2U, NRT_INSTANCE_SIZE_48XL, 16, 8, NC_GEN_V3, 96 * GIB, 4, 2},
    {"trn1n.32xlarge", NRT_INSTANCE_TRN1N, NRT_INSTANCE_SIZE_32XL, 16, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"inf2.8xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_8XL, 1, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"inf2.24xlarge", NRT_INSTANCE_INF2, NRT_INSTANCE_SIZE_24XL, 6, 2, NC_GEN_V2, 32 * GIB, 2, 1},
    {"trn2.3xlarge", NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_3XL, 1, 8, NC_GEN_V3, 96 * GIB, 4, 2},
    {"trn2n.48xlarge", NRT_INSTANCE_TRN2N, NRT_INSTANCE_SIZE_48XL, 16, 8, NC_GEN_V3, 96 * GIB, 4, 2},
    {"trn3.48xlarge", NRT_INSTANCE_TRN3, NRT_INSTANCE_SIZE_48XL, 16, 8, NC_GEN_V4, 144 * GIB, 4, 2},
    {"trn3pd98.48xlarge", NRT_INSTANCE_TRN3PDS98, NRT_INSTANCE_SIZE_48XL, 4, 8, NC_GEN_V4, 144 * GIB, 4, 2},
    {"trn3pd98.3xlarge", NRT_INSTANCE_TRN3PDS98, NRT_INSTANCE_SIZE_3XL, 1, 8, NC_GEN_V4, 144 * GIB, 4, 2},
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

static void test_find(void **state)
{
    (void)state;
    assert_int_equal(itype_count(), NEXPECTED);
    for (size_t i = 0; i < NEXPECTED; i++) {
        const struct itype *p = itype_find(expected[i].name);
        assert_non_null(p);
        assert_string_equal(p->name, expected[i].name);
    }
    assert_null(itype_find(NULL));
    assert_null(itype_find(""));
    assert_null(itype_find("trn3.49xlarge"));
    assert_null(itype_find("TRN2.48XLARGE"));
    assert_null(itype_find("trn2.48xlarge "));
    assert_null(itype_find("trn2"));
    assert_non_null(itype_find(ITYPE_DEFAULT_NAME));
    assert_string_equal(ITYPE_DEFAULT_NAME, "trn2.48xlarge");
}

static void test_at(void **state)
{
    (void)state;
    for (size_t i = 0; i < itype_count(); i++) {
        const struct itype *p = itype_at(i);
        assert_non_null(p);
        assert_ptr_equal(itype_find(p->name), p);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(itype_at(j)->name, p->name);
    }
    assert_null(itype_at(itype_count()));
    assert_null(itype_at(SIZE_MAX));
}

static void test_figures(void **state)
{
    (void)state;
    for (size_t i = 0; i < NEXPECTED; i++) {
        const struct expected_profile *e = &expected[i];
        const struct itype *p = itype_find(e->name);
        assert_non_null(p);
        assert_int_equal(p->family, e->family);
        assert_int_equal(p->size, e->size);
        assert_int_equal(p->chips, e->chips);
        assert_int_equal(p->cores_per_chip, e->cores);
        assert_int_equal(p->gen, e->gen);
        assert_int_equal(p->hbm_per_chip, e->hbm);
        assert_int_equal(p->hbm_stacks, e->stacks);
        assert_int_equal(p->lnc_default, e->lnc_default);
    }
    /* trn2.48xlarge carries 1.5 TiB of HBM; a trn2u.48xlarge is one such
     * server, and the UltraServer is four of them, each its own node. */
    const struct itype *t2 = itype_find("trn2.48xlarge");
    const struct itype *t2u = itype_find("trn2u.48xlarge");
    assert_int_equal(t2->chips * t2->hbm_per_chip, 1536 * GIB);
    assert_int_equal(t2u->chips, t2->chips);
    assert_int_equal(t2u->nodes, 1);
    assert_int_equal(t2u->us_nodes, 4);
    assert_int_equal(t2->us_nodes, 1);
    /* Trn3 Gen1 UltraServer: 4 servers of 16 chips, 9,216 GiB of HBM in all;
     * Gen2: 36 servers of 4 chips, 20,736 GiB (trn3-arch.rst). */
    const struct itype *g1 = itype_find("trn3.48xlarge");
    const struct itype *g2 = itype_find("trn3pd98.48xlarge");
    assert_int_equal(4 * g1->chips * g1->hbm_per_chip, 9216 * GIB);
    assert_int_equal(36 * g2->chips * g2->hbm_per_chip, 20736 * GIB);
    assert_int_equal(g1->links, DEV_LINKS_SWITCH);
    assert_int_equal(g2->links, DEV_LINKS_SWITCH);
    assert_true(itype_lnc_ok(g1, 1) && itype_lnc_ok(g1, 2) && !itype_lnc_ok(g1, 4));
}

static void test_consistency(void **state)
{
    (void)state;
    for (size_t i = 0; i < itype_count(); i++) {
        const struct itype *p = itype_at(i);
        assert_non_null(p->arch_name);
        assert_non_null(p->chip_name);
        assert_non_null(p->device_revision);
        assert_true(strlen(p->arch_name) < 16);      /* nrt_instance_info_t.arch_name */
        assert_true(strlen(p->device_revision) < 8); /* nrt_instance_info_t.device_revision */
        assert_true(p->chips >= 1);
        assert_true(p->nodes >= 1);
        assert_true(p->hbm_stacks >= 1 && p->hbm_stacks <= MACHINE_MAX_STACKS);
        assert_int_equal(p->hbm_per_chip % p->hbm_stacks, 0);
        assert_int_equal((p->hbm_per_chip / p->hbm_stacks) % HBM_ALLOC_MIN_ALIGN, 0);
        assert_true(itype_lnc_ok(p, p->lnc_default));
        for (uint32_t lnc = 1; lnc < 32; lnc++)
            if (itype_lnc_ok(p, lnc))
                assert_int_equal(p->cores_per_chip % lnc, 0);
        /* Machine-wide VNCs fit the configuration's fixed tables. */
        assert_true(p->chips * p->cores_per_chip <= CONFIG_MAX_VNCS);
    }
}

static void test_lnc(void **state)
{
    (void)state;
    const char *v2[] = {"trn1.2xlarge", "trn1.32xlarge", "inf2.xlarge", "inf2.48xlarge"};
    for (size_t i = 0; i < 4; i++) {
        const struct itype *p = itype_find(v2[i]);
        assert_true(itype_lnc_ok(p, 1));
        assert_false(itype_lnc_ok(p, 2));
    }
    const char *v3[] = {"trn2.48xlarge", "trn2u.48xlarge"};
    for (size_t i = 0; i < 2; i++) {
        const struct itype *p = itype_find(v3[i]);
        assert_true(itype_lnc_ok(p, 1));
        assert_true(itype_lnc_ok(p, 2));
        assert_false(itype_lnc_ok(p, 4));
    }
    for (size_t i = 0; i < itype_count(); i++) {
        const struct itype *p = itype_at(i);
        assert_false(itype_lnc_ok(p, 0));
        assert_false(itype_lnc_ok(p, 3));
        assert_false(itype_lnc_ok(p, 31));
        assert_false(itype_lnc_ok(p, 32));
        assert_false(itype_lnc_ok(p, 33));
        assert_false(itype_lnc_ok(p, UINT32_MAX));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_at),
        cmocka_unit_test(test_figures),
        cmocka_unit_test(test_consistency),
        cmocka_unit_test(test_lnc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
