/*
 * test_topology.c: NeuronLink topologies of the profiles (devices/config/topology.h):
 * link counts, degrees, unique links between neighbours, wraparound,
 * routes (valid chains, shortest, symmetric lengths, deterministic), the
 * profiles without links, and machine_link_account's shared counters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "devices/machine/instance.h"
#include "devices/machine/machine.h"
#include "devices/config/node.h"
#include "devices/config/topology.h"

static const struct itype *prof(const char *name)
{
    const struct itype *p = itype_find(name);
    assert_non_null(p);
    return p;
}

/* Distance on a ring of n. */
static uint32_t ring_dist(uint32_t a, uint32_t b, uint32_t n)
{
    uint32_t d = (b + n - a) % n;
    return d * 2 <= n ? d : n - d;
}

/* Shortest hop count between two chips of a torus profile. */
static uint32_t torus_dist(const struct itype *p, uint32_t a, uint32_t b)
{
    uint32_t ca = a % 16, cb = b % 16;
    return ring_dist(ca % 4, cb % 4, 4) + ring_dist(ca / 4, cb / 4, 4) +
           ring_dist(a / 16, b / 16, p->nodes);
}

/* Every link joins two different chips; no two links join the same pair. */
static void check_links_unique(const struct itype *p)
{
    uint32_t n = topo_nlinks(p);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a, b;
        topo_link_ends(p, i, &a, &b);
        assert_true(a < p->chips && b < p->chips);
        assert_int_not_equal(a, b);
        for (uint32_t j = 0; j < i; j++) {
            uint32_t c, d;
            topo_link_ends(p, j, &c, &d);
            assert_false((a == c && b == d) || (a == d && b == c));
        }
    }
    uint32_t a, b;
    topo_link_ends(p, n, &a, &b);
    assert_int_equal(a, UINT32_MAX);
    assert_int_equal(b, UINT32_MAX);
}

static void check_degree(const struct itype *p, uint32_t degree)
{
    for (uint32_t c = 0; c < p->chips; c++) {
        uint32_t chips[TOPO_MAX_DEGREE], links[TOPO_MAX_DEGREE];
        assert_int_equal(topo_neighbors(p, c, chips, links, TOPO_MAX_DEGREE), degree);
        for (uint32_t i = 0; i < degree; i++) {
            uint32_t a, b;
            topo_link_ends(p, links[i], &a, &b);
            assert_true((a == c && b == chips[i]) || (b == c && a == chips[i]));
        }
    }
}

/* The route is a chain of links from src to dst of the given length. */
static void check_route(const struct itype *p, uint32_t src, uint32_t dst, uint32_t want)
{
    uint32_t links[TOPO_MAX_HOPS], again[TOPO_MAX_HOPS];
    uint32_t n = topo_route(p, src, dst, links, TOPO_MAX_HOPS);
    assert_int_equal(n, want);
    assert_true(n <= TOPO_MAX_HOPS);
    uint32_t at = src;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a, b, next;
        topo_link_ends(p, links[i], &a, &b);
        assert_true(a == at || b == at);
        uint32_t dir = topo_hop(p, links[i], at, &next);
        assert_int_equal(dir, a == at ? 0 : 1);
        at = next;
    }
    assert_int_equal(at, dst);
    /* Deterministic, and the same length back. */
    assert_int_equal(topo_route(p, src, dst, again, TOPO_MAX_HOPS), n);
    assert_memory_equal(links, again, n * sizeof links[0]);
    assert_int_equal(topo_route(p, dst, src, again, TOPO_MAX_HOPS), n);
}

static void test_trn2_torus(void **state)
{
    (void)state;
    const struct itype *p = prof("trn2.48xlarge");
    assert_int_equal(topo_nlinks(p), 32);
    check_links_unique(p);
    check_degree(p, 4);
    /* Chip 0 (row 0, col 0): east 1, south 4, and wraparound west 3, north 12. */
    uint32_t chips[8], links[8];
    assert_int_equal(topo_neighbors(p, 0, chips, links, 8), 4);
    int seen = 0;
    for (int i = 0; i < 4; i++)
        seen |= chips[i] == 1 ? 1 : chips[i] == 4 ? 2 : chips[i] == 3 ? 4 : chips[i] == 12 ? 8 : 0;
    assert_int_equal(seen, 15);
    for (uint32_t a = 0; a < p->chips; a++)
        for (uint32_t b = 0; b < p->chips; b++)
            check_route(p, a, b, a == b ? 0 : torus_dist(p, a, b));
    /* Wraparound: 0 -> 3 is one hop west, 0 -> 12 one hop north. */
    uint32_t r[TOPO_MAX_HOPS];
    assert_int_equal(topo_route(p, 0, 3, r, TOPO_MAX_HOPS), 1);
    assert_int_equal(topo_route(p, 0, 12, r, TOPO_MAX_HOPS), 1);
    /* Farthest chips: 2 + 2 hops, column first. */
    assert_int_equal(topo_route(p, 0, 10, r, TOPO_MAX_HOPS), 4);
    uint32_t a, b;
    topo_link_ends(p, r[0], &a, &b);
    assert_int_equal(a, 0);
    assert_int_equal(b, 1);
    /* A short buffer still gets the full length. */
    assert_int_equal(topo_route(p, 0, 10, r, 1), 4);
}

static void test_trn1_torus(void **state)
{
    (void)state;
    const struct itype *p = prof("trn1.32xlarge");
    assert_int_equal(topo_nlinks(p), 32);
    check_links_unique(p);
    check_degree(p, 4);
}

static void test_ultraserver(void **state)
{
    (void)state;
    /* One server alone is a plain 4x4 torus ... */
    const struct itype *one = prof("trn2u.48xlarge");
    assert_int_equal(topo_nlinks(one), 32);
    check_degree(one, 4);
    /* ... and the UltraServer's view adds the rings across its 4 servers:
     * 4 tori of 32 links, plus 16 rings of 4 links through the nodes. */
    struct itype us;
    node_ultraserver_view(one, &us);
    const struct itype *p = &us;
    assert_int_equal(p->chips, 64);
    assert_int_equal(topo_nlinks(p), 4 * 32 + 16 * 4);
    assert_true(topo_nlinks(p) <= TOPO_MAX_LINKS);
    check_links_unique(p);
    check_degree(p, 6);
    /* Chip 5 of node 0 is joined to chip 5 of nodes 1 and 3. */
    uint32_t chips[8], links[8];
    assert_int_equal(topo_neighbors(p, 5, chips, links, 8), 6);
    int ring = 0;
    for (int i = 0; i < 6; i++)
        ring += chips[i] == 21 || chips[i] == 53;
    assert_int_equal(ring, 2);
    for (uint32_t a = 0; a < p->chips; a += 3)
        for (uint32_t b = 0; b < p->chips; b++)
            check_route(p, a, b, a == b ? 0 : torus_dist(p, a, b));
    uint32_t r[TOPO_MAX_HOPS];
    /* Node 0 to node 3 with the same coordinates: one hop round the ring. */
    assert_int_equal(topo_route(p, 7, 55, r, TOPO_MAX_HOPS), 1);
    /* Farthest: 2 + 2 in the torus, 2 between nodes. */
    assert_int_equal(topo_route(p, 0, 32 + 10, r, TOPO_MAX_HOPS), 6);
}

static void test_ring_and_none(void **state)
{
    (void)state;
    const struct itype *p = prof("inf2.48xlarge");
    assert_int_equal(topo_nlinks(p), 12);
    check_links_unique(p);
    check_degree(p, 2);
    for (uint32_t a = 0; a < p->chips; a++)
        for (uint32_t b = 0; b < p->chips; b++)
            check_route(p, a, b, ring_dist(a, b, 12));
    const char *single[] = {"trn1.2xlarge", "inf2.xlarge"};
    for (int i = 0; i < 2; i++) {
        const struct itype *s = prof(single[i]);
        uint32_t r[4], c[4], l[4];
        assert_int_equal(topo_nlinks(s), 0);
        assert_int_equal(topo_route(s, 0, 0, r, 4), 0);
        assert_int_equal(topo_neighbors(s, 0, c, l, 4), 0);
    }
    /* Chips outside the machine have no route. */
    uint32_t r[4];
    assert_int_equal(topo_route(prof("trn2.48xlarge"), 0, 16, r, 4), 0);
    assert_int_equal(topo_route(prof("trn2.48xlarge"), 99, 0, r, 4), 0);
}

/* NeuronSwitch: one path per pair, every route one hop, each pair's path
 * the same both ways; the fabric's levels carry the documented figures. */
static void test_switch(void **state)
{
    (void)state;
    const struct itype *p = prof("trn3.48xlarge");
    assert_int_equal(topo_nlinks(p), 16 * 15 / 2);
    check_links_unique(p);
    check_degree(p, 15);
    for (uint32_t a = 0; a < p->chips; a++)
        for (uint32_t b = 0; b < p->chips; b++)
            check_route(p, a, b, a == b ? 0 : 1);
    uint32_t x, y;
    topo_link_ends(p, 0, &x, &y);
    assert_true(x == 0 && y == 1);
    topo_link_ends(p, 15, &x, &y);
    assert_true(x == 1 && y == 2);
    topo_link_ends(p, topo_nlinks(p) - 1, &x, &y);
    assert_true(x == 14 && y == 15);
    const struct itype *g2 = prof("trn3pd98.48xlarge");
    assert_int_equal(topo_nlinks(g2), 6);
    check_links_unique(g2);
    check_degree(g2, 3);
    struct topo_level lv[4];
    assert_int_equal(topo_levels(p, lv, 4), 3);
    assert_int_equal(lv[0].gbytes_s, 256);
    assert_int_equal(lv[0].links, 4);
    assert_int_equal(lv[1].gbytes_s, 320);
    assert_int_equal(lv[2].gbytes_s, 128);
    assert_int_equal(topo_levels(prof("trn2.48xlarge"), lv, 4), 0);
    assert_int_equal(topo_nlinks(prof("trn3pd98.3xlarge")), 0);
}

/* Every profile's links fit the shared counters and routes fit the bound. */
static void test_bounds(void **state)
{
    (void)state;
    for (size_t i = 0; i < itype_count(); i++) {
        const struct itype *p = itype_at(i);
        assert_true(topo_nlinks(p) <= TOPO_MAX_LINKS);
        for (uint32_t c = 0; c < p->chips; c++) {
            uint32_t chips[TOPO_MAX_DEGREE], links[TOPO_MAX_DEGREE];
            assert_true(topo_neighbors(p, c, chips, links, TOPO_MAX_DEGREE) <= TOPO_MAX_DEGREE);
            uint32_t r[TOPO_MAX_HOPS];
            assert_true(topo_route(p, c, p->chips - 1 - c, r, TOPO_MAX_HOPS) <= TOPO_MAX_HOPS);
        }
    }
}

/* Bytes and messages counted on every link of a route, in the direction
 * it is crossed, visible to a reader of the instance's control block. */
static void test_link_account(void **state)
{
    (void)state;
    char base[] = "/dev/shm/topo-test-XXXXXX";
    assert_non_null(mkdtemp(base));
    setenv("TRNEMU_SHM_DIR", base, 1);
    setenv("TRNEMU_INSTANCE_NAME", "acct", 1);
    setenv("TRNEMU_INSTANCE", "trn2.48xlarge", 1);
    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    unsetenv("NEURON_RT_VISIBLE_CORES");
    unsetenv("NEURON_RT_NUM_CORES");
    struct machine_config cfg;
    assert_int_equal(config_from_env(&cfg), NRT_SUCCESS);
    struct machine *m = NULL;
    assert_int_equal(machine_create(&cfg, &m), NRT_SUCCESS);
    const char *dir = machine_instance_dir(m);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    machine_link_account(m, 0, 10, 100);  /* 0 -> 1 -> 2 -> 6 -> 10 */
    machine_link_account(m, 1, 0, 7);     /* link 0-1 crossed from b to a */
    machine_link_account(m, 1, 0, 8);
    machine_link_account(m, 5, 5, 1000);  /* same chip: nothing */
    struct instance_ctl *c = malloc(sizeof *c);
    assert_non_null(c);
    bool live = false;
    assert_int_equal(instance_read(dir, c, &live), NRT_SUCCESS);
    assert_true(live);
    assert_int_equal(c->nlinks, 32);
    const struct itype *p = cfg.profile;
    uint32_t r[TOPO_MAX_HOPS], n = topo_route(p, 0, 10, r, TOPO_MAX_HOPS), at = 0;
    assert_int_equal(n, 4);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t next, d = topo_hop(p, r[i], at, &next);
        assert_int_equal(atomic_load(&c->links[r[i]][d].bytes), 100);
        assert_int_equal(atomic_load(&c->links[r[i]][d].messages), 1);
        at = next;
    }
    assert_int_equal(atomic_load(&c->links[0][0].bytes), 100);
    assert_int_equal(atomic_load(&c->links[0][1].bytes), 15);
    assert_int_equal(atomic_load(&c->links[0][1].messages), 2);
    for (uint32_t l = 0; l < c->nlinks; l++)
        for (int d = 0; d < 2; d++)
            total += atomic_load(&c->links[l][d].bytes);
    assert_int_equal(total, 4 * 100 + 15);
    free(c);
    char keep[INSTANCE_PATH_MAX];
    snprintf(keep, sizeof keep, "%s", dir);
    machine_destroy(m);
    assert_int_not_equal(stat(keep, &st), 0);
    assert_int_equal(rmdir(base), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trn2_torus),
        cmocka_unit_test(test_trn1_torus),
        cmocka_unit_test(test_ultraserver),
        cmocka_unit_test(test_ring_and_none),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_switch),
        cmocka_unit_test(test_link_account),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
