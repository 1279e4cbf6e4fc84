/*
 * fabric.h: the channels between ranks on different nodes, over libfabric
 * (the library under EFA on real clusters; Debian's, with its tcp provider
 * between hosts).
 *
 * A rank on one node and a rank on another keep using the ordinary
 * channels of their communicator (devices/link/channel.h): each node has its own
 * copy of the communicator's file, and a bridge in each process carries
 * the bytes of the rings that cross nodes. For a remote peer s of local
 * rank r the bridge consumes ring r->s (what r's collectives write) and
 * sends its bytes to s's bridge, which writes them, in order, into its own
 * copy of ring r->s. Flow control is by credits: a bridge sends no more
 * than the receiving ring can hold beyond what its consumer has released
 * (the receiver reports releases back). So the collectives' algorithms,
 * headers and reduction order are the same across nodes as within one,
 * and the results are the same bits.
 *
 * Each bridge has one reliable-datagram endpoint (FI_EP_RDM, ordered
 * sends), two threads (one moves ring bytes out and sends credits and
 * heartbeats, one completes and handles what arrives), a pool of send
 * buffers and posted receive buffers. A peer is dead when, after its first
 * message, nothing has been heard from it for the heartbeat limit (or its
 * endpoint fails; one never heard from is left to the deadline); it
 * has left when it said goodbye. Aborts travel to every remote peer.
 */
#ifndef TRNEMU_DEVICES_FABRIC_H
#define TRNEMU_DEVICES_FABRIC_H

#include <stdbool.h>
#include <stdint.h>

#include "devices/link/bootstrap.h"
#include "devices/link/channel.h"
#include "nrt/nrt_status.h"

struct fab_bridge;

/* Called on the bridge's thread when a remote rank reports a failure. */
typedef void (*fab_abort_fn)(void *arg, int32_t status, int32_t rank, int32_t by);

/* Open an endpoint bound to the local address src (numeric); its address
 * goes to me->addr. NRT_RESOURCE (one log line) when libfabric has no
 * usable provider there (TRNEMU_FABRIC_PROVIDER, default tcp). */
NRT_STATUS fab_open(const char *src, struct boot_entry *me, struct fab_bridge **out);

/* The bell the bridge sleeps on: the rank's channel ends towards remote
 * peers must ring it (as rx bell of rings r->s, tx bell of rings s->r). */
struct chan_bell *fab_bell(struct fab_bridge *f);

/* Start carrying: remote[s] marks the peers on other nodes; out[s] is the
 * bridge's consumer end of ring rank->s, in[s] its producer end of ring
 * s->rank (both for remote s only); table is the bootstrap's. */
NRT_STATUS fab_start(struct fab_bridge *f, uint32_t world, uint32_t rank,
                     const struct boot_entry *table, const bool *remote, struct chan *out,
                     struct chan *in, uint64_t dead_ns, fab_abort_fn on_abort, void *arg);

/* Is remote rank s still there (not dead, not gone)? *why: "died", "left". */
bool fab_peer_alive(struct fab_bridge *f, uint32_t s, const char **why);

/* Tell every remote peer that the communicator failed. */
void fab_abort(struct fab_bridge *f, int32_t status, int32_t rank);

/* Bytes carried to and from other nodes so far. */
void fab_traffic(struct fab_bridge *f, uint64_t *sent, uint64_t *received);

/* Say goodbye to the peers, stop the threads, close the endpoint, free. */
void fab_close(struct fab_bridge *f);

#endif
