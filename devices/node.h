/*
 * node.h: an emulated instance as a node of a larger machine.
 *
 * On AWS every instance is its own host and runtime: a trn2u.48xlarge is
 * one server of 16 chips, and the Trn2 UltraServer is four of them whose
 * chips with the same torus coordinates form NeuronLink rings across the
 * servers; instances that are not in one UltraServer talk over EFA.
 * trnemu emulates each instance as a node (one shared instance, its own
 * processes) and joins nodes into UltraServers and clusters over libfabric
 * (devices/fabric.h). This module says which node this process is
 * (docs/nodes.md lists the environment) and gives the UltraServer's view
 * of the topology.
 */
#ifndef TRNEMU_DEVICES_NODE_H
#define TRNEMU_DEVICES_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/profile.h"

/* The whole UltraServer an instance type belongs to, as one profile: its
 * us_nodes servers as nodes of 16 chips (chip id = node * 16 + chip of the
 * node), so that devices/topology.h gives the links of the server tori and
 * of the rings across the servers. A profile that is not an UltraServer
 * member is copied as is. */
void node_ultraserver_view(const struct dev_profile *p, struct dev_profile *us);

#endif
