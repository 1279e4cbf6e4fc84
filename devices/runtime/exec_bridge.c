/*
 * exec_bridge.c: the collectives bridge of an execution: the struct
 * core_coll (emu/core/core_coll.h) through which a program's collective
 * instructions reach the other ranks, implemented with the communicators
 * of devices/coll/ (exec_int.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices/config/status.h"
#include "devices/runtime/exec_int.h"
#include "devices/thread/gate.h"
#include "devices/thread/spin.h"

/* The communicator: the model's (nrt_load_collectives) or the VNC's
 * (nrt_build_global_comm). */
static NRT_STATUS exec_bridge_comm(struct exec_bridge *ec, char *err, size_t cap)
{
    nrt_model_t *m = ec->m;
    if (ec->comm != NULL)
        return NRT_SUCCESS;
    if (m->cc_world == 0) {
        ec->comm = coll_comm_of_vnc(ec->mach, m->gvnc);
        if (ec->comm == NULL) {
            snprintf(err, cap, "no communicator: load the model with nrt_load_collectives or "
                     "call nrt_build_global_comm first");
            return NRT_INVALID;
        }
        return NRT_SUCCESS;
    }
    NRT_STATUS st = coll_comm_get(ec->mach, m->gvnc, m->cc_rank, m->cc_world, ec->deadline_ns,
                                  &ec->comm);
    if (st != NRT_SUCCESS)
        snprintf(err, cap, "rank %u could not join the %u-rank communicator (status %d; see "
                 "the NCCL log lines)", m->cc_rank, m->cc_world, (int)st);
    return st;
}

/* err names a failed collective and this rank; st passes through. */
static NRT_STATUS exec_bridge_report(const struct exec_bridge *ec, const char *what, NRT_STATUS st,
                                     char *err, size_t cap)
{
    if (st != NRT_SUCCESS)
        snprintf(err, cap, "%s on rank %u of %u failed (status %d; see the NCCL log lines)", what,
                 coll_comm_rank(ec->comm), coll_comm_world(ec->comm), (int)st);
    return st;
}

/* Join the communicator if needed, then run the collective. */
static NRT_STATUS exec_bridge_run_outside(struct exec_bridge *ec, const struct core_coll_call *call,
                                          char *err, size_t cap)
{
    NRT_STATUS st = exec_bridge_comm(ec, err, cap);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_args a = {call->kind, call->dtype, call->op, call->src, call->count, call->dst,
                          NULL, 0, call->send_to, call->recv_from, ec->deadline_ns};
    return exec_bridge_report(ec, coll_kind_name(call->kind), coll_run(ec->comm, &a), err, cap);
}

/* The same for all_to_all_v / all_gather_v (coll_v.c). */
static NRT_STATUS exec_bridge_run_v_outside(struct exec_bridge *ec,
                                            const struct core_coll_vcall *call, char *err,
                                            size_t cap)
{
    NRT_STATUS st = exec_bridge_comm(ec, err, cap);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_vargs a = {*call, NULL, ec->deadline_ns};
    const char *what = call->kind == CORE_COLL_V_ALL_TO_ALL ? "all_to_all_v" : "all_gather_v";
    return exec_bridge_report(ec, what, coll_v_run(ec->comm, &a), err, cap);
}

/* Both run outside the compute gate (gate.h): the other ranks may be
 * threads of this process that need a place in it to reach the collective. */
static emu_status exec_bridge_run(void *user, const struct core_coll_call *call, char *err,
                                  size_t cap)
{
    struct exec_bridge *ec = user;
    gate_leave(&ec->mach->compute);
    NRT_STATUS st = exec_bridge_run_outside(ec, call, err, cap);
    gate_enter(&ec->mach->compute);
    return emu_status_of(st);
}

static emu_status exec_bridge_run_v(void *user, const struct core_coll_vcall *call, char *err,
                                    size_t cap)
{
    struct exec_bridge *ec = user;
    gate_leave(&ec->mach->compute);
    NRT_STATUS st = exec_bridge_run_v_outside(ec, call, err, cap);
    gate_enter(&ec->mach->compute);
    return emu_status_of(st);
}

static uint32_t exec_bridge_group_size(void *user, uint32_t group)
{
    struct exec_bridge *ec = user;
    if (group != 0)
        return 0;  /* trnemu NEFFs carry no replica groups: 0 is every rank */
    if (ec->m->cc_world != 0)
        return ec->m->cc_world;
    struct coll_comm *c = coll_comm_of_vnc(ec->mach, ec->m->gvnc);
    return c != NULL ? coll_comm_world(c) : 0;
}

/* Staging memory kept by the model (its executions run one at a time). */
static void *exec_bridge_scratch(void *user, uint32_t slot, uint64_t bytes)
{
    nrt_model_t *m = ((struct exec_bridge *)user)->m;
    if (slot >= 8)
        return NULL;
    if (bytes > m->cc_stage_cap[slot]) {
        void *p = realloc(m->cc_stage[slot], bytes);
        if (p == NULL)
            return NULL;
        m->cc_stage[slot] = p;
        m->cc_stage_cap[slot] = bytes;
    }
    return m->cc_stage[slot];
}

void exec_bridge_setup(struct exec_bridge *ec, nrt_model_t *m, struct machine *mach,
                       uint64_t timeout_ms)
{
    memset(ec, 0, sizeof *ec);
    ec->m = m;
    ec->mach = mach;
    ec->deadline_ns = timeout_ms ? spin_now_ns() + timeout_ms * 1000000u : coll_deadline();
    core_lnc_init(&ec->lnc, m->nsgs);
    for (uint32_t s = 0; s < m->nsgs && s < MACHINE_MAX_LNC; s++) {
        ec->iface[s] = (struct core_coll){ec, s, &ec->lnc, exec_bridge_run, exec_bridge_scratch,
                                           exec_bridge_group_size, exec_bridge_run_v};
        m->sgs[s].prog.coll = &ec->iface[s];
    }
}

void exec_bridge_teardown(struct exec_bridge *ec)
{
    for (uint32_t s = 0; s < ec->m->nsgs; s++)
        ec->m->sgs[s].prog.coll = NULL;
    core_lnc_fini(&ec->lnc);
}
