/*
 * topology.c: NeuronLink links and routes of each profile (see topology.h).
 */
#include "devices/config/topology.h"

#define TOPO_NODE_LINKS (2 * TOPO_NODE_CHIPS) /* east + south link per chip */

/* Does the profile describe a well-formed torus (16 chips per node)? */
static int topo_is_torus(const struct itype *p)
{
    return p->links == DEV_LINKS_TORUS && p->nodes >= 1 &&
           p->chips == p->nodes * TOPO_NODE_CHIPS;
}

static int topo_is_ring(const struct itype *p)
{
    return p->links == DEV_LINKS_RING && p->chips >= 3;
}

static int topo_is_switch(const struct itype *p)
{
    return p->links == DEV_LINKS_SWITCH && p->chips >= 2;
}

/* Switch paths numbered before the first one that leaves chip a (a < n). */
static uint32_t topo_switch_base(uint32_t n, uint32_t a)
{
    return a * (2 * n - a - 1) / 2;
}

/* The path joining chips a != b of an n-chip switch. */
static uint32_t topo_switch_link(uint32_t n, uint32_t a, uint32_t b)
{
    if (a > b) {
        uint32_t t = a;
        a = b;
        b = t;
    }
    return topo_switch_base(n, a) + (b - a - 1);
}

static void topo_switch_ends(uint32_t n, uint32_t link, uint32_t *a, uint32_t *b)
{
    uint32_t x = 0;
    while (x + 1 < n && topo_switch_base(n, x + 1) <= link)
        x++;
    *a = x;
    *b = x + 1 + (link - topo_switch_base(n, x));
}

/* Links of the rings that join the nodes (0 with a single node). */
static uint32_t topo_node_ring_links(const struct itype *p)
{
    return p->nodes > 1 ? TOPO_NODE_CHIPS * p->nodes : 0;
}

uint32_t topo_nlinks(const struct itype *p)
{
    if (topo_is_torus(p))
        return p->nodes * TOPO_NODE_LINKS + topo_node_ring_links(p);
    if (topo_is_ring(p))
        return p->chips;
    if (topo_is_switch(p))
        return p->chips * (p->chips - 1) / 2;
    return 0;
}

static uint32_t topo_chip(uint32_t node, uint32_t row, uint32_t col)
{
    return node * TOPO_NODE_CHIPS + row * TOPO_TORUS_SIDE + col;
}

static void topo_torus_ends(const struct itype *p, uint32_t link, uint32_t *a, uint32_t *b)
{
    const uint32_t S = TOPO_TORUS_SIDE;
    if (link < p->nodes * TOPO_NODE_LINKS) {
        uint32_t node = link / TOPO_NODE_LINKS, c = (link % TOPO_NODE_LINKS) / 2;
        uint32_t row = c / S, col = c % S;
        *a = topo_chip(node, row, col);
        *b = link % 2 == 0 ? topo_chip(node, row, (col + 1) % S)
                           : topo_chip(node, (row + 1) % S, col);
        return;
    }
    uint32_t r = link - p->nodes * TOPO_NODE_LINKS;
    uint32_t c = r / p->nodes, node = r % p->nodes;
    *a = node * TOPO_NODE_CHIPS + c;
    *b = ((node + 1) % p->nodes) * TOPO_NODE_CHIPS + c;
}

void topo_link_ends(const struct itype *p, uint32_t link, uint32_t *a, uint32_t *b)
{
    *a = *b = UINT32_MAX;
    if (link >= topo_nlinks(p))
        return;
    if (topo_is_torus(p)) {
        topo_torus_ends(p, link, a, b);
    } else if (topo_is_switch(p)) {
        topo_switch_ends(p->chips, link, a, b);
    } else {
        *a = link;
        *b = (link + 1) % p->chips;
    }
}

uint32_t topo_hop(const struct itype *p, uint32_t link, uint32_t from, uint32_t *to)
{
    uint32_t a, b;
    topo_link_ends(p, link, &a, &b);
    if (from == a) {
        *to = b;
        return 0;
    }
    *to = a;
    return 1;
}

/* Steps along one ring dimension of size n from x to y: positive steps when
 * *dir is +1, negative when -1. Ties go the positive way. */
static uint32_t topo_ring_steps(uint32_t x, uint32_t y, uint32_t n, int *dir)
{
    uint32_t fwd = (y + n - x) % n;
    *dir = 1;
    if (fwd * 2 <= n)
        return fwd;
    *dir = -1;
    return n - fwd;
}

/* Append a link to the route being built. */
static void topo_push(uint32_t *links, uint32_t max, uint32_t *n, uint32_t link)
{
    if (*n < max)
        links[*n] = link;
    (*n)++;
}

/* Coordinates of a torus chip. */
struct topo_xyz {
    uint32_t col;  /* column within the node's torus */
    uint32_t row;  /* row within the node's torus */
    uint32_t node; /* node (UltraServer member) */
};

static struct topo_xyz topo_coords(uint32_t chip)
{
    uint32_t c = chip % TOPO_NODE_CHIPS;
    return (struct topo_xyz){c % TOPO_TORUS_SIDE, c / TOPO_TORUS_SIDE, chip / TOPO_NODE_CHIPS};
}

static uint32_t topo_torus_route(const struct itype *p, uint32_t src, uint32_t dst,
                                 uint32_t *links, uint32_t max)
{
    const uint32_t S = TOPO_TORUS_SIDE;
    struct topo_xyz at = topo_coords(src), to = topo_coords(dst);
    uint32_t n = 0;
    int dir;
    for (uint32_t k = topo_ring_steps(at.col, to.col, S, &dir); k > 0; k--) {
        uint32_t west = dir > 0 ? at.col : (at.col + S - 1) % S;
        topo_push(links, max, &n, at.node * TOPO_NODE_LINKS + (at.row * S + west) * 2);
        at.col = dir > 0 ? (at.col + 1) % S : west;
    }
    for (uint32_t k = topo_ring_steps(at.row, to.row, S, &dir); k > 0; k--) {
        uint32_t north = dir > 0 ? at.row : (at.row + S - 1) % S;
        topo_push(links, max, &n, at.node * TOPO_NODE_LINKS + (north * S + at.col) * 2 + 1);
        at.row = dir > 0 ? (at.row + 1) % S : north;
    }
    uint32_t N = p->nodes, c = at.row * S + at.col;
    for (uint32_t k = N > 1 ? topo_ring_steps(at.node, to.node, N, &dir) : 0; k > 0; k--) {
        uint32_t lower = dir > 0 ? at.node : (at.node + N - 1) % N;
        topo_push(links, max, &n, N * TOPO_NODE_LINKS + c * N + lower);
        at.node = dir > 0 ? (at.node + 1) % N : lower;
    }
    return n;
}

static uint32_t topo_ring_route(const struct itype *p, uint32_t src, uint32_t dst,
                                uint32_t *links, uint32_t max)
{
    uint32_t n = 0, at = src, N = p->chips;
    int dir;
    for (uint32_t k = topo_ring_steps(src, dst, N, &dir); k > 0; k--) {
        uint32_t lower = dir > 0 ? at : (at + N - 1) % N;
        topo_push(links, max, &n, lower);
        at = dir > 0 ? (at + 1) % N : lower;
    }
    return n;
}

uint32_t topo_route(const struct itype *p, uint32_t src_chip, uint32_t dst_chip,
                    uint32_t *links, uint32_t max)
{
    if (src_chip == dst_chip || src_chip >= p->chips || dst_chip >= p->chips)
        return 0;
    if (topo_is_torus(p))
        return topo_torus_route(p, src_chip, dst_chip, links, max);
    if (topo_is_ring(p))
        return topo_ring_route(p, src_chip, dst_chip, links, max);
    if (topo_is_switch(p)) {
        uint32_t n = 0;
        topo_push(links, max, &n, topo_switch_link(p->chips, src_chip, dst_chip));
        return n;
    }
    return 0;
}

uint32_t topo_neighbors(const struct itype *p, uint32_t chip, uint32_t *chips,
                        uint32_t *links, uint32_t max)
{
    uint32_t n = 0, total = topo_nlinks(p);
    for (uint32_t l = 0; l < total; l++) {
        uint32_t a, b;
        topo_link_ends(p, l, &a, &b);
        if (a != chip && b != chip)
            continue;
        if (n < max) {
            chips[n] = a == chip ? b : a;
            links[n] = l;
        }
        n++;
    }
    return n;
}

/* NeuronSwitch-v1 levels of the Trn3 UltraServers (trn3-arch.rst): PCIe
 * Gen6 x8 links, 64 GB/s each. The emulated machines are one server each,
 * so their chips meet at the first level; the others are recorded for the
 * cost model and shown by `trnemu ls --topology`. */
static const struct topo_level topo_switch_levels[] = {
    {"within a server", 4, 256},
    {"between servers of a rack", 5, 320},
    {"between racks", 2, 128},
};

uint32_t topo_levels(const struct itype *p, struct topo_level *out, uint32_t max)
{
    if (p->links != DEV_LINKS_SWITCH)
        return 0;
    uint32_t n = sizeof topo_switch_levels / sizeof topo_switch_levels[0];
    for (uint32_t i = 0; i < n && i < max; i++)
        out[i] = topo_switch_levels[i];
    return n;
}
