/*
 * coll_shared.c: what an operation of the collectives may do to its
 * communicator's shared state: the deadline of a wait, fail it for every
 * rank, read the shared abort word, check a peer is alive, wait on this
 * rank's bell, count bytes on the links, grow the staging buffer; and the
 * names and output sizes of the operations, which every level uses.
 *
 * Below the operations: the communicator (coll.c) calls the algorithms
 * (coll_algo.c), which call the direct collectives (coll_direct.c); all
 * three use this file, which calls none of them, only the bridge to
 * other nodes (coll_net.c: remote ranks' liveness and aborts), the
 * bottom.
 */
#include "devices/config/env.h"
#include "devices/coll/coll_int.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>

#include "devices/machine/instance.h"
#include "devices/thread/spin.h"
#include "emu/log.h"

/* ---- the operations' names and sizes (coll.h) ------------------------------------ */

const char *coll_kind_name(enum core_coll_kind kind)
{
    switch (kind) {
    case CORE_COLL_ALL_REDUCE: return "all_reduce";
    case CORE_COLL_ALL_GATHER: return "all_gather";
    case CORE_COLL_REDUCE_SCATTER: return "reduce_scatter";
    case CORE_COLL_ALL_TO_ALL: return "all_to_all";
    case CORE_COLL_PERMUTE: return "permute";
    case CORE_COLL_BARRIER: return "barrier";
    }
    return "?";
}

uint64_t coll_out_count(enum core_coll_kind kind, uint64_t count, uint32_t nranks)
{
    switch (kind) {
    case CORE_COLL_ALL_GATHER: return count * nranks;
    case CORE_COLL_REDUCE_SCATTER: return count % nranks == 0 ? count / nranks : 0;
    case CORE_COLL_ALL_TO_ALL: return count % nranks == 0 ? count : 0;
    case CORE_COLL_BARRIER: return 0;
    default: return count;
    }
}

/* ---- deadlines ------------------------------------------------------------------ */

#define COLL_DEFAULT_TIMEOUT_S 600.0 /* as executions (exec_run.c) */

/* A duration variable in seconds through the one parser; 0 when unset,
 * zero or malformed (env_load has refused a malformed one at nrt_init). */
static double coll_env_seconds(const char *name)
{
    uint64_t ms;
    return env_read_ms(name, 0, &ms) == NRT_SUCCESS ? (double)ms / 1000.0 : 0;
}

uint64_t coll_deadline(void)
{
    double s = coll_env_seconds("TRNEMU_COLL_TIMEOUT");
    if (s == 0)
        s = coll_env_seconds("NEURON_RT_EXEC_TIMEOUT");
    if (s == 0)
        s = COLL_DEFAULT_TIMEOUT_S;
    return spin_now_ns() + (uint64_t)(s * 1e9);
}

/* ---- faults and waiting ------------------------------------------------------ */

static const char *coll_status_text(NRT_STATUS st)
{
    switch (st) {
    case NRT_TIMEOUT: return "a timeout";
    case NRT_EXEC_HW_ERR_COLLECTIVES: return "a missing rank";
    case NRT_INVALID: return "mismatched collectives";
    default: return "a failure";
    }
}

NRT_STATUS coll_fail(struct coll_comm *c, NRT_STATUS st, uint32_t rank)
{
    int32_t zero = 0;
    if (atomic_compare_exchange_strong(&c->ctl->abort_status, &zero, (int32_t)st)) {
        atomic_store(&c->ctl->abort_rank, (int32_t)rank);
        atomic_store(&c->ctl->abort_by, (int32_t)c->rank);
        for (uint32_t i = 0; i < c->world; i++)  /* wake every waiting rank */
            chan_bell_ring(&c->bells[i]);
        coll_net_abort(c, st, rank);
    }
    c->broken = st;
    return st;
}

/* Is rank r's holder still there? Cheap kill() every time; the pid's
 * start time when full (a reused pid is another process). */
bool coll_rank_alive(struct coll_comm *c, uint32_t r, bool full)
{
    if (coll_net_remote(c, r))
        return coll_net_alive(c, r);
    int32_t pid = c->pid_of[r];
    if (atomic_load(&c->slots[r].pid) != pid)
        return false;  /* left the communicator */
    if (full)
        return instance_pid_alive(pid, c->start_of[r]);
    return kill(pid, 0) == 0 || errno != ESRCH;
}

NRT_STATUS coll_abort_check(struct coll_comm *c)
{
    int32_t st = atomic_load(&c->ctl->abort_status);
    if (st == 0)
        return NRT_SUCCESS;
    int32_t by = atomic_load(&c->ctl->abort_by), who = atomic_load(&c->ctl->abort_rank);
    if (by != (int32_t)c->rank && c->broken == NRT_SUCCESS)
        LOG_ERROR("NCCL", "rank %u stops: rank %d found %s (rank %d) in the %u-rank "
                  "communicator", c->rank, (int)by, coll_status_text(st), (int)who, c->world);
    c->broken = st;
    return st;
}

NRT_STATUS coll_missing(struct coll_comm *c, uint32_t r)
{
    char who[160];
    coll_net_describe(c, r, who, sizeof who);
    LOG_ERROR("NCCL", "rank %u: rank %u (%s) of the %u-rank communicator is gone "
              "(it died or left) while this rank still needs it: the collective cannot "
              "complete", c->rank, r, who, c->world);
    return coll_fail(c, NRT_EXEC_HW_ERR_COLLECTIVES, r);
}

void coll_waiter(struct coll_comm *c, uint64_t deadline_ns, struct chan_waiter *w)
{
    *w = (struct chan_waiter){&c->bells[c->rank], deadline_ns, c->spin_ns, 50, NULL, NULL,
                              0};
    w->last_check_ns = spin_now_ns();
}

void coll_account(struct coll_comm *c, uint32_t peer, uint64_t bytes)
{
    uint32_t to = c->chip_of[peer];
    if (to != c->chip && !coll_net_remote(c, peer))
        machine_link_account(c->m, c->chip, to, bytes);
}

void coll_account_in(struct coll_comm *c, uint32_t peer, uint64_t bytes)
{
    uint32_t from = c->chip_of[peer];
    if (from != c->chip && !coll_net_remote(c, peer))
        machine_link_account(c->m, from, c->chip, bytes);
}

uint8_t *coll_scratch(struct coll_comm *c, uint64_t bytes)
{
    if (bytes <= c->scratch_cap)
        return c->scratch;
    uint8_t *p = realloc(c->scratch, bytes);
    if (p == NULL) {
        LOG_ERROR("NCCL", "out of host memory for %" PRIu64 " bytes of collective staging",
                  bytes);
        return NULL;
    }
    c->scratch = p;
    c->scratch_cap = bytes;
    return p;
}
