/*
 * bootstrap.h: how the ranks of a job on several nodes find each other.
 *
 * As on a real cluster, rank 0 listens at NEURON_RT_ROOT_COMM_ID
 * (host:port, plain TCP); every other rank connects to it and sends one
 * fixed-size hello: the job token (TRNEMU_JOB_TOKEN), the communicator's
 * size, its rank, node, pid, VNC, chip, ring sizes and its libfabric
 * address. Once all ranks have said hello, rank 0 answers each with the
 * whole table and closes the listener; the ranks then talk over libfabric
 * (devices/link/fabric.h). Rank 0 drops, with one log line each, connections
 * with a wrong token, a malformed or oversized hello, a rank out of range
 * or already taken; hellos that disagree on the number of ranks end the
 * bootstrap for everyone with NRT_INVALID. A rank that does not turn up
 * by the deadline ends it with NRT_TIMEOUT (naming the missing ranks); a
 * root that cannot be reached by the deadline gives NRT_TIMEOUT naming the
 * address. Wire format: docs/nodes.md.
 */
#ifndef TRNEMU_DEVICES_BOOTSTRAP_H
#define TRNEMU_DEVICES_BOOTSTRAP_H

#include <stdint.h>

#include "devices/config/node.h"
#include "nrt/nrt_status.h"

#define BOOT_MAGIC 0x3142454eu  /* "NEB1" little-endian */
#define BOOT_VERSION 1u
#define BOOT_ADDR_MAX 96u       /* longest libfabric address */
#define BOOT_HELLO_BYTES 256u   /* every hello is exactly this long */
#define BOOT_MAX_RANKS 4096u    /* largest communicator the bootstrap accepts */

/* One rank, as hellos and the table carry it (wire format, 136 bytes). */
struct boot_entry {
    uint32_t node;               /* node index in the job */
    int32_t pid;                 /* process id on that node */
    uint32_t gvnc;               /* machine-wide VNC on that node */
    uint32_t chip;               /* chip of that VNC */
    uint32_t addrlen;            /* bytes of addr used */
    uint32_t reserved;           /* zero */
    uint64_t ring_cap;           /* ring channel bytes of its node's file */
    uint64_t mesh_cap;           /* other channels' bytes of its node's file */
    uint8_t addr[BOOT_ADDR_MAX]; /* libfabric endpoint address */
};

/* Check one hello of len bytes (more than BOOT_HELLO_BYTES: oversized)
 * for a job with this token, communicator size and node count. NULL when
 * it is acceptable (*rank, *e filled); else the reason to reject it.
 * *their_world is the size it names (a different one, with the reason
 * "mismatched world sizes", ends the bootstrap). */
const char *boot_hello_check(const uint8_t *msg, size_t len, const char *token, uint32_t world,
                             uint32_t nodes, uint32_t *rank, uint32_t *their_world,
                             struct boot_entry *e);

/* Called once the local IP address this rank talks from is known (src:
 * numeric address); fills me->addr and me->addrlen. */
typedef NRT_STATUS (*boot_addr_fn)(void *arg, const char *src, struct boot_entry *me);

/* Run the bootstrap of a communicator of `world` ranks as `rank`: *me
 * describes this rank (addr filled through addr_fn); table (world entries)
 * receives every rank. Blocks until all ranks are known or the deadline. */
NRT_STATUS boot_exchange(const struct node_job *j, uint32_t world, uint32_t rank,
                         struct boot_entry *me, boot_addr_fn addr_fn, void *arg,
                         uint64_t deadline_ns, struct boot_entry *table);

#endif
