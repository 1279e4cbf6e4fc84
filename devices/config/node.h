/*
 * node.h: an emulated instance as a node of a larger machine.
 *
 * On AWS every instance is its own host and runtime: a trn2u.48xlarge is
 * one server of 16 chips, and the Trn2 UltraServer is four of them whose
 * chips with the same torus coordinates form NeuronLink rings across the
 * servers; instances that are not in one UltraServer talk over EFA.
 * trnemu emulates each instance as a node (one shared instance, its own
 * processes) and joins nodes into UltraServers and clusters over libfabric
 * (devices/link/fabric.h). This module says which node this process is
 * (docs/nodes.md lists the environment) and gives the UltraServer's view
 * of the topology.
 */
#ifndef TRNEMU_DEVICES_NODE_H
#define TRNEMU_DEVICES_NODE_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/config/itype.h"
#include "nrt/nrt_status.h"

/* The whole UltraServer an instance type belongs to, as one profile: its
 * us_nodes servers as nodes of 16 chips (chip id = node * 16 + chip of the
 * node), so that devices/config/topology.h gives the links of the server tori and
 * of the rings across the servers. A profile that is not an UltraServer
 * member is copied as is. */
void node_ultraserver_view(const struct itype *p, struct itype *us);

/* ---- node identity (from the environment, docs/nodes.md) ------------------ */

#define NODE_TOKEN_MAX 64   /* longest job token (bytes) */
#define NODE_HOST_MAX 256   /* longest bootstrap host name */

/* Which node of which job this process is. */
struct node_job {
    bool multi;                     /* the job spans more than one node */
    uint32_t node;                  /* this node's index in the job, 0..nodes-1 */
    uint32_t nodes;                 /* nodes in the job */
    uint32_t us_node;               /* this server's position in its UltraServer */
    char host[NODE_HOST_MAX];       /* bootstrap host of NEURON_RT_ROOT_COMM_ID */
    char port[8];                   /* its port, decimal */
    char token[NODE_TOKEN_MAX + 1]; /* TRNEMU_JOB_TOKEN */
};

/* Read the job's node identity: NEURON_RT_ROOT_COMM_ID (host:port), the
 * node count and index (TRNEMU_NODES / TRNEMU_NODE, or the launcher's
 * SLURM_NNODES / SLURM_NODEID, or torchrun's WORLD_SIZE / LOCAL_WORLD_SIZE
 * and GROUP_RANK / NODE_RANK), TRNEMU_US_NODE and TRNEMU_JOB_TOKEN. A
 * single-node job gives multi false and NRT_SUCCESS. NRT_INVALID with one
 * log line for a malformed or missing value of a multi-node job. */
NRT_STATUS node_job_from_env(const struct itype *p, struct node_job *j);

#endif
