/*
 * ls.h: the parts of `trnemu ls` shared by its own forms (cmd_ls.c) and
 * neuron-ls's interface (ls_vendor.c): the NeuronLink topology of a
 * machine (ls_topo.c) and the neuron-ls entry point.
 */
#ifndef TRNEMU_TOOLS_LS_H
#define TRNEMU_TOOLS_LS_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/config/config.h"
#include "devices/config/topology.h"

/* The chips linked to chip, ascending; returns how many. */
uint32_t ls_neighbors(const struct itype *p, uint32_t chip, uint32_t *chips);

/* The chips linked to chip in neuron-ls's order: on a torus the chip
 * above, left, below, right (the vendor's listing), then any other
 * (ascending); on a ring the next chip, then the previous; otherwise
 * ascending. Returns how many. */
uint32_t ls_neighbors_vendor(const struct itype *p, uint32_t chip, uint32_t *chips);

/* The topology in words ("4x4 2D torus", "ring", ...). */
const char *ls_topology_name(const struct itype *p);

/* Draw the NeuronLink topology in ASCII on stdout. */
void ls_topology(const struct machine_config *cfg);

/* neuron-ls: its table (or with json, its JSON) of the machine and of
 * the processes attached to the live instance; 0 or 1. */
int ls_vendor(const struct machine_config *cfg, bool json, bool wide, bool all,
              bool topology);

#endif
