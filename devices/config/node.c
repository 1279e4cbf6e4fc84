/*
 * node.c: which node of a job this process is, and the UltraServer view
 * of an instance type (see node.h).
 */
#include "devices/config/env.h"
#include "devices/config/node.h"

#include "devices/config/topology.h"

void node_ultraserver_view(const struct itype *p, struct itype *us)
{
    *us = *p;
    if (p->us_nodes <= 1 || p->links != DEV_LINKS_TORUS || p->chips != TOPO_NODE_CHIPS)
        return;
    us->nodes = p->us_nodes;
    us->chips = p->chips * p->us_nodes;
}

/* ---- node identity ------------------------------------------------------------ */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"

/* A non-negative decimal variable: its value, -1 when unset, -2 when malformed. */
static long node_env_num(const char *name)
{
    uint64_t v; /* the one parser; UINT64_MAX (out of range) marks unset */
    if (env_read_uint(name, 0, 1000000, UINT64_MAX, &v) != NRT_SUCCESS)
        return -2;
    return v == UINT64_MAX ? -1 : (long)v;
}

/* First set variable of a list (value, or -1 unset, -2 malformed); *which
 * names it. */
static long node_env_first(const char *const *names, const char **which)
{
    for (const char *const *n = names; *n != NULL; n++) {
        long v = node_env_num(*n);
        if (v != -1) {
            *which = *n;
            return v;
        }
    }
    *which = names[0];
    return -1;
}

/* Nodes in the job: TRNEMU_NODES, SLURM_NNODES, or WORLD_SIZE / LOCAL_WORLD_SIZE. */
static long node_env_count(void)
{
    static const char *const names[] = {"TRNEMU_NODES", "SLURM_NNODES", NULL};
    const char *which;
    long n = node_env_first(names, &which);
    if (n != -1)
        return n;
    long world = node_env_num("WORLD_SIZE"), local = node_env_num("LOCAL_WORLD_SIZE");
    if (world == -2 || local == -2)
        return -2;
    if (world > 0 && local > 0 && world % local == 0)
        return world / local;
    return -1;
}

/* Split NEURON_RT_ROOT_COMM_ID "host:port" ("[v6]:port" too). */
static NRT_STATUS node_root_parse(const char *id, struct node_job *j)
{
    const char *colon = strrchr(id, ':');
    const char *h = id, *he = colon;
    if (colon != NULL && id[0] == '[' && colon > id && colon[-1] == ']') {
        h = id + 1;
        he = colon - 1;
    }
    long port = -1;
    if (colon != NULL && colon[1] != '\0') {
        char *end;
        port = strtol(colon + 1, &end, 10);
        if (*end != '\0')
            port = -1;
    }
    size_t hl = colon ? (size_t)(he - h) : 0;
    if (colon == NULL || hl == 0 || hl >= sizeof j->host || port <= 0 || port > 65535) {
        LOG_ERROR("NRT", "NEURON_RT_ROOT_COMM_ID=%s: a job of several nodes needs the "
                  "host:port of rank 0's bootstrap", id);
        return NRT_INVALID;
    }
    memcpy(j->host, h, hl);
    j->host[hl] = '\0';
    snprintf(j->port, sizeof j->port, "%ld", port);
    return NRT_SUCCESS;
}

/* TRNEMU_JOB_TOKEN: 8..64 printable characters without spaces. */
static NRT_STATUS node_token_read(struct node_job *j)
{
    const char *t = getenv("TRNEMU_JOB_TOKEN");
    size_t n = t ? strlen(t) : 0;
    bool ok = n >= 8 && n <= NODE_TOKEN_MAX;
    for (size_t i = 0; ok && i < n; i++)
        ok = t[i] > ' ' && t[i] < 127;
    if (!ok) {
        LOG_ERROR("NRT", "TRNEMU_JOB_TOKEN %s: a job of several nodes needs the same token of "
                  "8 to 64 printable characters on every node (trnemu launch makes one)",
                  t ? "is malformed" : "is not set");
        return NRT_INVALID;
    }
    memcpy(j->token, t, n + 1);
    return NRT_SUCCESS;
}

NRT_STATUS node_job_from_env(const struct itype *p, struct node_job *j)
{
    memset(j, 0, sizeof *j);
    j->nodes = 1;
    long nodes = node_env_count();
    static const char *const idx_names[] = {"TRNEMU_NODE", "SLURM_NODEID", "GROUP_RANK",
                                            "NODE_RANK", NULL};
    const char *which;
    long node = node_env_first(idx_names, &which);
    long us = node_env_num("TRNEMU_US_NODE");
    if (nodes == -2 || node == -2 || us == -2)
        return NRT_INVALID;
    if (nodes <= 1)
        return NRT_SUCCESS;
    if (node < 0 || node >= nodes) {
        LOG_ERROR("NRT", "a job of %ld nodes needs this node's index 0..%ld (TRNEMU_NODE, "
                  "SLURM_NODEID, GROUP_RANK or NODE_RANK); %s is %ld", nodes, nodes - 1, which,
                  node);
        return NRT_INVALID;
    }
    uint32_t usn = p->us_nodes ? p->us_nodes : 1;
    if (us >= (long)usn) {
        LOG_ERROR("NRT", "TRNEMU_US_NODE=%ld: a %s UltraServer has servers 0..%u", us, p->name,
                  usn - 1);
        return NRT_INVALID;
    }
    const char *id = getenv("NEURON_RT_ROOT_COMM_ID");
    if (id == NULL || *id == '\0') {
        LOG_ERROR("NRT", "a job of %ld nodes needs NEURON_RT_ROOT_COMM_ID=host:port (rank 0's "
                  "bootstrap)", nodes);
        return NRT_INVALID;
    }
    NRT_STATUS st = node_root_parse(id, j);
    if (st == NRT_SUCCESS)
        st = node_token_read(j);
    if (st != NRT_SUCCESS)
        return st;
    j->multi = true;
    j->nodes = (uint32_t)nodes;
    j->node = (uint32_t)node;
    j->us_node = us >= 0 ? (uint32_t)us : j->node % usn;
    return NRT_SUCCESS;
}
