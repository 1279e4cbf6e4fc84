/*
 * topology.h: the NeuronLink links between the chips of a profile, and the
 * route a transfer takes over them. Pure functions of the profile: no state.
 *
 * Link numbering (stable: counters in the shared control block use it):
 *  - torus (DEV_LINKS_TORUS): each node holds 16 chips as a 4x4 torus, chip
 *    id = node*16 + row*4 + col. Link node*32 + c*2 joins chip c of the node
 *    to its east neighbour (col+1 mod 4), link node*32 + c*2 + 1 to its south
 *    neighbour (row+1 mod 4). With several nodes, link nodes*32 + c*nodes + n
 *    joins chip c of node n to chip c of node n+1 (mod nodes): a ring per
 *    coordinate through the nodes.
 *  - ring (DEV_LINKS_RING): link i joins chip i to chip i+1 (mod chips).
 *  - switch (DEV_LINKS_SWITCH, NeuronSwitch): one path per pair of chips
 *    a < b, numbered in order (0-1, 0-2, ..., 0-(n-1), 1-2, ...); every
 *    route is one hop. A "link" here is the pair's path through the switch.
 *  - none: a single chip, no links.
 * A link's first end is `a`, its second `b`; traffic from a to b is its
 * direction 0, from b to a direction 1.
 *
 * Routes are dimension-ordered (column, then row, then node ring), each
 * dimension taken the short way round; at equal distance both ways the
 * positive direction wins, so a route is deterministic and its length is
 * the same in both directions.
 */
#ifndef TRNEMU_DEVICES_TOPOLOGY_H
#define TRNEMU_DEVICES_TOPOLOGY_H

#include <stdint.h>

#include "devices/config/itype.h"

/* Side of a node's square torus. */
#define TOPO_TORUS_SIDE 4
/* Chips in one torus node. */
#define TOPO_NODE_CHIPS (TOPO_TORUS_SIDE * TOPO_TORUS_SIDE)
/* Upper bound of the links in any profile. */
#define TOPO_MAX_LINKS 256
/* Upper bound of the links on any route. */
#define TOPO_MAX_HOPS 16
/* Upper bound of the neighbours of a chip (a 16-chip switch: 15). */
#define TOPO_MAX_DEGREE 16

/* One level of a switched fabric: which chip pairs it joins and its
 * bandwidth per chip (the cost model's figures, docs/instance.md). */
struct topo_level {
    const char *name;   /* "within a server", "between servers", ... */
    uint32_t links;     /* PCIe Gen6 x8 links per chip at this level */
    uint32_t gbytes_s;  /* bandwidth per chip at this level, GB/s */
};

/* The levels of the profile's fabric, nearest first; returns how many
 * (0 for machines that are not switched). At most max are written. */
uint32_t topo_levels(const struct itype *p, struct topo_level *out, uint32_t max);

/* Number of links in the profile's machine. */
uint32_t topo_nlinks(const struct itype *p);

/* The two chips a link joins (a: its first end). Out-of-range links give
 * UINT32_MAX for both. */
void topo_link_ends(const struct itype *p, uint32_t link, uint32_t *a, uint32_t *b);

/* Links along the route from src_chip to dst_chip, in the order traversed;
 * writes at most max ids and returns the route's full length (0 for the
 * same chip or chips that are not joined). */
uint32_t topo_route(const struct itype *p, uint32_t src_chip, uint32_t dst_chip,
                    uint32_t *links, uint32_t max);

/* The chips directly linked to chip (and the link to each), sorted by link
 * id; returns how many (at most max are written). */
uint32_t topo_neighbors(const struct itype *p, uint32_t chip, uint32_t *chips,
                        uint32_t *links, uint32_t max);

/* Direction (0: a to b, 1: b to a) of a hop over link that leaves chip
 * from; the chip it arrives at goes to *to. */
uint32_t topo_hop(const struct itype *p, uint32_t link, uint32_t from, uint32_t *to);

#endif
