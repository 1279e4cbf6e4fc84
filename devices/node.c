/*
 * node.c: which node of a job this process is, and the UltraServer view
 * of an instance type (see node.h).
 */
#include "devices/node.h"

#include "devices/topology.h"

void node_ultraserver_view(const struct dev_profile *p, struct dev_profile *us)
{
    *us = *p;
    if (p->us_nodes <= 1 || p->links != DEV_LINKS_TORUS || p->chips != TOPO_NODE_CHIPS)
        return;
    us->nodes = p->us_nodes;
    us->chips = p->chips * p->us_nodes;
}
