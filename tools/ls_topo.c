/*
 * ls_topo.c: the NeuronLink topology as `trnemu ls` and neuron-ls show
 * it: each chip's neighbours (ascending, or in neuron-ls's order), the
 * topology's name, and the ASCII drawing of --topology (the 4x4 torus of
 * each node and the UltraServer rings, a ring, or the NeuronSwitch).
 */
#include <stdio.h>
#include <stdlib.h>

#include "devices/config/node.h"
#include "tools/ls.h"

static int ls_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The chips linked to chip, ascending. */
uint32_t ls_neighbors(const struct itype *p, uint32_t chip, uint32_t *chips)
{
    uint32_t links[TOPO_MAX_DEGREE];
    uint32_t n = topo_neighbors(p, chip, chips, links, TOPO_MAX_DEGREE);
    if (n > TOPO_MAX_DEGREE)
        n = TOPO_MAX_DEGREE;
    qsort(chips, n, sizeof *chips, ls_cmp_u32);
    return n;
}

const char *ls_topology_name(const struct itype *p)
{
    switch (p->links) {
    case DEV_LINKS_TORUS:
        return p->us_nodes > 1 ? "4x4 2D torus, rings across the UltraServer's servers"
                               : "4x4 2D torus";
    case DEV_LINKS_RING:
        return "ring";
    case DEV_LINKS_SWITCH:
        return "NeuronSwitch all-to-all";
    case DEV_LINKS_NONE:
        break;
    }
    return "none";
}
static bool ls_has(const uint32_t *ids, uint32_t n, uint32_t id)
{
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* Move want to out[*k] when it is among the neighbours in[0..n) and not
 * taken yet. */
static void ls_take(const uint32_t *in, uint32_t n, uint32_t want, uint32_t *out, uint32_t *k)
{
    if (ls_has(in, n, want) && !ls_has(out, *k, want))
        out[(*k)++] = want;
}

uint32_t ls_neighbors_vendor(const struct itype *p, uint32_t chip, uint32_t *chips)
{
    uint32_t nb[TOPO_MAX_DEGREE], n = ls_neighbors(p, chip, nb), k = 0;
    const uint32_t S = TOPO_TORUS_SIDE;
    if (p->links == DEV_LINKS_TORUS) {
        uint32_t base = chip / TOPO_NODE_CHIPS * TOPO_NODE_CHIPS, pos = chip % TOPO_NODE_CHIPS;
        uint32_t r = pos / S, c = pos % S;
        ls_take(nb, n, base + (r + S - 1) % S * S + c, chips, &k); /* above */
        ls_take(nb, n, base + r * S + (c + S - 1) % S, chips, &k); /* left */
        ls_take(nb, n, base + (r + 1) % S * S + c, chips, &k);     /* below */
        ls_take(nb, n, base + r * S + (c + 1) % S, chips, &k);     /* right */
    } else if (p->links == DEV_LINKS_RING && p->chips > 1) {
        ls_take(nb, n, (chip + 1) % p->chips, chips, &k);
        ls_take(nb, n, (chip + p->chips - 1) % p->chips, chips, &k);
    }
    for (uint32_t i = 0; i < n; i++) /* the rest, ascending */
        ls_take(nb, n, nb[i], chips, &k);
    return k;
}

/* One 4x4 torus node: chips node*16 .. node*16+15. */
static void ls_draw_node(uint32_t node)
{
    const uint32_t S = TOPO_TORUS_SIDE;
    const char *wrap = "      :      :      :      :\n";
    const char *vert = "      |      |      |      |\n";
    printf("%s", wrap);
    for (uint32_t r = 0; r < S; r++) {
        printf("  ..");
        for (uint32_t c = 0; c < S; c++)
            printf("%s[%2u]", c ? "---" : " ", node * TOPO_NODE_CHIPS + r * S + c);
        printf(" ..\n");
        printf("%s", r + 1 < S ? vert : wrap);
    }
}

static void ls_draw_torus(const struct itype *p)
{
    for (uint32_t n = 0; n < p->nodes; n++) {
        if (p->nodes > 1)
            printf("\nnode %u (chips %u-%u):\n", n, n * TOPO_NODE_CHIPS,
                   (n + 1) * TOPO_NODE_CHIPS - 1);
        else
            printf("\n");
        ls_draw_node(n);
    }
    printf("\n'..' and ':' mark the wraparound links: each row and each column is a ring.\n");
}

/* The rings across the servers of an UltraServer (chip c of every server). */
static void ls_draw_us_rings(const struct itype *p)
{
    struct itype us;
    node_ultraserver_view(p, &us);
    if (us.nodes <= 1)
        return;
    printf("\nUltraServer: %u servers like this one, each its own node (host and runtime);\n"
           "NeuronLink rings across the servers join the chips with the same position\n"
           "(server:chip): %u rings of %u links:\n", us.nodes, TOPO_NODE_CHIPS, us.nodes);
    for (uint32_t c = 0; c < TOPO_NODE_CHIPS; c++) {
        printf("  ");
        for (uint32_t n = 0; n <= us.nodes; n++)
            printf("%s%u:%-2u", n ? " - " : "", n % us.nodes, c);
        printf(c % 2 ? "\n" : "    ");
    }
    printf("An UltraServer job (trnemu launch --nodes %u, docs/nodes.md) carries its\n"
           "collectives between servers over these rings.\n", us.nodes);
}

static void ls_draw_ring(const struct itype *p)
{
    printf("\n  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("%s[%2u]", c ? "---" : "", c);
    printf("\n   '");
    for (uint32_t i = 0; i < p->chips * 7 - 8; i++)
        putchar('-');
    printf("'\n  (the last chip is linked back to the first)\n");
}

static void ls_draw_switch(const struct itype *p)
{
    printf("\n  every chip reaches every other chip in one hop through the switch:\n  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("[%2u]%s", c, c + 1 < p->chips ? " " : "\n");
    printf("  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("  |  ");
    printf("\n  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("=====");
    printf("\n  NeuronSwitch\n\nbandwidth per chip by level:\n");
    struct topo_level lv[4];
    uint32_t n = topo_levels(p, lv, 4);
    for (uint32_t i = 0; i < n && i < 4; i++)
        printf("  %-28s %u links  %4u GB/s%s\n", lv[i].name, lv[i].links, lv[i].gbytes_s,
               i == 0 ? "  (the chips of this machine)" : "");
}

void ls_topology(const struct machine_config *cfg)
{
    const struct itype *p = cfg->profile;
    printf("%s: %u x %s, NeuronLink %s, %u links\n", p->name, p->chips, p->chip_name,
           ls_topology_name(p), topo_nlinks(p));
    if (p->links == DEV_LINKS_TORUS) {
        ls_draw_torus(p);
        ls_draw_us_rings(p);
    }
    else if (p->links == DEV_LINKS_RING)
        ls_draw_ring(p);
    else if (p->links == DEV_LINKS_SWITCH)
        ls_draw_switch(p);
    else
        printf("a single chip: no links\n");
}
