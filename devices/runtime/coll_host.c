/*
 * coll_host.c: the collectives a program issues from the host, outside any
 * NEFF (nrt_build_global_comm, nrt_cc_global_comm_init, nrt_barrier,
 * nrt_all_gather, nrta_cc_prepare / nrta_cc_schedule): argument checks,
 * the communicator of the caller's VNC, and the operation (coll.c).
 *
 * nrta_cc_schedule queues the prepared operation on the VNC's collectives
 * queue (devices/runtime/async.c), which runs it with coll_cc_run.
 */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "devices/runtime/coll_host.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/tensor.h"
#include "emu/log.h"
#include "emu/num/numerics.h"
#include "nrt/nrt_async.h"

/* A prepared collective (nrt_cc_context_t). */
struct nrt_cc_context {
    int32_t vnc;              /* local VNC */
    uint32_t rank;            /* ctx_device_id: rank in the global communicator */
    uint32_t world;           /* ctx_device_count */
    uint32_t *group;          /* replica group: global ranks in group order */
    uint32_t ngroup;          /* its size */
    enum core_coll_kind kind;      /* all-gather, all-reduce or reduce-scatter */
    uint32_t dtype;           /* element type */
    uint32_t op;              /* enum coll_op */
    size_t n;                 /* tensor pairs */
    nrt_tensor_t **in;        /* input tensors */
    nrt_tensor_t **out;       /* output tensors */
    struct nrt_cc_context *next; /* registry of live contexts */
};

static pthread_mutex_t coll_cc_lock = PTHREAD_MUTEX_INITIALIZER; /* guards coll_cc_live */
static struct nrt_cc_context *coll_cc_live;  /* prepared, not yet freed */

NRT_STATUS coll_host_comm(int32_t vnc, uint32_t rank, uint32_t world, struct coll_comm **out)
{
    struct machine *m = rt_machine();
    int g = machine_vnc_global(m, vnc);
    if (g < 0) {
        LOG_ERROR("NRT", "VNC %d is not one of the %u VNCs this process uses", (int)vnc,
                  m->cfg.visible_count);
        return NRT_INVALID;
    }
    if (world == 0 || rank >= world) {
        LOG_ERROR("NRT", "device id %u is not below the device count %u", rank, world);
        return NRT_INVALID;
    }
    return coll_comm_get(m, (uint32_t)g, rank, world, coll_deadline(), out);
}

NRT_STATUS coll_host_join(int32_t vnc, uint32_t rank, uint32_t world)
{
    assert(rt_held());
    struct coll_comm *c;
    return coll_host_comm(vnc, rank, world, &c);
}

NRT_STATUS coll_host_barrier(int32_t vnc, uint32_t rank, uint32_t world)
{
    assert(rt_held());
    struct coll_comm *c;
    NRT_STATUS st = coll_host_comm(vnc, rank, world, &c);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_args a = {.kind = CORE_COLL_BARRIER};
    return coll_run(c, &a);
}

NRT_STATUS coll_host_all_gather(int32_t vnc, uint32_t rank, uint32_t world, uint64_t bytes,
                                const void *in, void *out)
{
    assert(rt_held());
    struct coll_comm *c;
    NRT_STATUS st = coll_host_comm(vnc, rank, world, &c);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_args a = {.kind = CORE_COLL_ALL_GATHER, .dtype = NUM_DT_UINT8, .src = in,
                          .count = bytes, .dst = out};
    return coll_run(c, &a);
}

/* ---- prepared collectives ------------------------------------------------------ */

static NRT_STATUS coll_cc_kind(uint32_t cc_op, enum core_coll_kind *k)
{
    switch (cc_op) {
    case NRT_CC_ALLGATHER: *k = CORE_COLL_ALL_GATHER; return NRT_SUCCESS;
    case NRT_CC_ALLREDUCE: *k = CORE_COLL_ALL_REDUCE; return NRT_SUCCESS;
    case NRT_CC_REDUCESCATTER: *k = CORE_COLL_REDUCE_SCATTER; return NRT_SUCCESS;
    }
    LOG_ERROR("NRT", "cc_op %u is not NRT_CC_ALLGATHER, _ALLREDUCE or _REDUCESCATTER", cc_op);
    return NRT_INVALID;
}

static NRT_STATUS coll_cc_op(uint32_t op, uint32_t *out)
{
    switch (op) {
    case NRT_OP_ADD: *out = COLL_OP_ADD; return NRT_SUCCESS;
    case NRT_OP_FMA: *out = COLL_OP_FMA; return NRT_SUCCESS;
    case NRT_OP_MAX: *out = COLL_OP_MAX; return NRT_SUCCESS;
    case NRT_OP_MIN: *out = COLL_OP_MIN; return NRT_SUCCESS;
    }
    LOG_ERROR("NRT", "op %u is not NRT_OP_ADD, _FMA, _MAX or _MIN", op);
    return NRT_INVALID;
}

static NRT_STATUS coll_cc_comm_check(const nrt_cc_comm_t *comm)
{
    if (comm->replica_group == NULL || comm->rank_n == 0 || comm->rank >= comm->rank_n ||
        comm->ctx_device_count == 0 || comm->ctx_device_id >= comm->ctx_device_count ||
        comm->rank_n > comm->ctx_device_count) {
        LOG_ERROR("NRT", "communicator: replica_group %p of %u ranks, rank %u, device %u of %u: "
                  "need a group, rank < rank_n <= device count, device id < device count",
                  (void *)comm->replica_group, comm->rank_n, comm->rank, comm->ctx_device_id,
                  comm->ctx_device_count);
        return NRT_INVALID;
    }
    uint32_t vncs = rt_machine()->cfg.visible_count;
    if ((uint32_t)comm->vnc >= vncs) {
        LOG_ERROR("NRT", "communicator: VNC %u is not visible to this process (%u VNCs)",
                  (unsigned)comm->vnc, vncs);
        return NRT_INVALID;
    }
    if (comm->replica_group[comm->rank] != comm->ctx_device_id) {
        LOG_ERROR("NRT", "communicator: replica_group[rank %u] is device %u, but this worker "
                  "is device %u", comm->rank, comm->replica_group[comm->rank],
                  comm->ctx_device_id);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

/* Sizes of input/output pair i for the kind over n ranks. */
static NRT_STATUS coll_cc_sizes(const struct nrt_cc_context *x, size_t i)
{
    size_t es = num_dtype_size(x->dtype);
    size_t in = tensor_size(x->in[i]), out = tensor_size(x->out[i]);
    uint64_t count = in / es, want = coll_out_count(x->kind, count, x->ngroup) * es;
    if (in % es != 0 || (count > 0 && want == 0) || out != want) {
        LOG_ERROR("NRT", "%s tensor pair %zu over %u ranks: input %zu bytes, output %zu bytes of "
                  "%s elements; the output needs %" PRIu64 " bytes", coll_kind_name(x->kind), i,
                  x->ngroup, in, out, num_dtype_name(x->dtype), want);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

/* Take x out of the registry; false when it is not there. */
static bool coll_cc_unlist(const struct nrt_cc_context *x)
{
    bool found = false;
    pthread_mutex_lock(&coll_cc_lock);
    for (struct nrt_cc_context **p = &coll_cc_live; *p != NULL; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            found = true;
            break;
        }
    pthread_mutex_unlock(&coll_cc_lock);
    return found;
}

bool coll_cc_is_live(const nrt_cc_context_t *x)
{
    pthread_mutex_lock(&coll_cc_lock);
    const struct nrt_cc_context *p = coll_cc_live;
    while (p != NULL && p != x)
        p = p->next;
    pthread_mutex_unlock(&coll_cc_lock);
    return p != NULL;
}

int32_t coll_cc_vnc(const nrt_cc_context_t *x)
{
    return x->vnc;
}

uint32_t coll_cc_ranks(const nrt_cc_context_t *x)
{
    return x->ngroup;
}

void coll_cc_free_all(void)
{
    pthread_mutex_lock(&coll_cc_lock);
    struct nrt_cc_context *x = coll_cc_live;
    coll_cc_live = NULL;
    pthread_mutex_unlock(&coll_cc_lock);
    while (x != NULL) {
        struct nrt_cc_context *n = x->next;
        x->next = NULL;
        coll_cc_free(x);
        x = n;
    }
}

void coll_cc_free(nrt_cc_context_t *x)
{
    if (x == NULL)
        return;
    coll_cc_unlist(x);
    free(x->group);
    free(x->in);
    free(x->out);
    free(x);
}

static NRT_STATUS coll_cc_lists(struct nrt_cc_context *x, const nrt_tensor_list_t *in,
                                const nrt_tensor_list_t *out)
{
    if (in->num_tensors == 0 || in->num_tensors != out->num_tensors || in->tensors == NULL ||
        out->tensors == NULL) {
        LOG_ERROR("NRT", "tensor lists of %zu inputs and %zu outputs: need the same number, at "
                  "least one", in->num_tensors, out->num_tensors);
        return NRT_INVALID;
    }
    x->n = in->num_tensors;
    x->in = calloc(x->n, sizeof *x->in);
    x->out = calloc(x->n, sizeof *x->out);
    if (x->in == NULL || x->out == NULL) {
        LOG_ERROR("NRT", "out of memory for a collective's tensor lists");
        return NRT_RESOURCE;
    }
    for (size_t i = 0; i < x->n; i++) {
        x->in[i] = in->tensors[i];
        x->out[i] = out->tensors[i];
        if (!tensor_is_live(x->in[i]) || !tensor_is_live(x->out[i])) {
            LOG_ERROR("NRT", "tensor pair %zu: %p / %p is not a live tensor", i,
                      (void *)x->in[i], (void *)x->out[i]);
            return NRT_INVALID;
        }
        NRT_STATUS st = coll_cc_sizes(x, i);
        if (st != NRT_SUCCESS)
            return st;
    }
    return NRT_SUCCESS;
}

NRT_STATUS coll_cc_prepare(const nrt_cc_comm_t *comm, const nrt_tensor_list_t *in,
                           const nrt_tensor_list_t *out, uint32_t dtype, uint32_t op,
                           uint32_t cc_op, nrt_cc_context_t **ctx)
{
    assert(rt_held());
    struct nrt_cc_context *x = calloc(1, sizeof *x);
    if (x == NULL) {
        LOG_ERROR("NRT", "out of memory for a collective context");
        return NRT_RESOURCE;
    }
    NRT_STATUS st = coll_cc_comm_check(comm);
    if (st == NRT_SUCCESS)
        st = coll_cc_kind(cc_op, &x->kind);
    if (st == NRT_SUCCESS && x->kind != CORE_COLL_ALL_GATHER)
        st = coll_cc_op(op, &x->op);
    if (st == NRT_SUCCESS && !coll_dtype_ok(dtype)) {
        LOG_ERROR("NRT", "dtype %u is not a known element type", dtype);
        st = NRT_INVALID;
    }
    x->dtype = dtype;
    x->vnc = (int32_t)comm->vnc;
    x->rank = comm->ctx_device_id;
    x->world = comm->ctx_device_count;
    x->ngroup = comm->rank_n;
    if (st == NRT_SUCCESS)  /* a communicator whose peers left cannot run anything */
        st = coll_comm_peers_check(rt_machine(), x->rank, x->world);
    if (st == NRT_SUCCESS && (x->group = malloc(x->ngroup * sizeof *x->group)) == NULL)
        st = NRT_RESOURCE;
    if (st == NRT_SUCCESS) {
        memcpy(x->group, comm->replica_group, x->ngroup * sizeof *x->group);
        st = coll_cc_lists(x, in, out);
    }
    if (st != NRT_SUCCESS) {
        coll_cc_free(x);
        return st;
    }
    pthread_mutex_lock(&coll_cc_lock);
    x->next = coll_cc_live;
    coll_cc_live = x;
    pthread_mutex_unlock(&coll_cc_lock);
    *ctx = x;
    return NRT_SUCCESS;
}

/* One tensor pair, pinned for the length of the operation. */
static NRT_STATUS coll_cc_pair(struct coll_comm *c, const struct nrt_cc_context *x, size_t i)
{
    struct tensor_view vi, vo;
    NRT_STATUS st = tensor_pin(x->in[i], &vi);
    if (st != NRT_SUCCESS)
        return st;
    st = tensor_pin(x->out[i], &vo);
    if (st != NRT_SUCCESS) {
        tensor_unpin(&vi);
        return st;
    }
    size_t es = num_dtype_size(x->dtype);
    struct coll_args a = {x->kind, x->dtype, x->op, vi.va, vi.size / es, vo.va, x->group,
                          x->ngroup, 0, 0, 0};
    st = coll_run(c, &a);
    tensor_unpin(&vo);
    tensor_unpin(&vi);
    return st;
}

NRT_STATUS coll_cc_run(const nrt_cc_context_t *x)
{
    struct coll_comm *c;
    NRT_STATUS st = coll_host_comm(x->vnc, x->rank, x->world, &c);
    for (size_t i = 0; st == NRT_SUCCESS && i < x->n; i++)
        st = coll_cc_pair(c, x, i);
    return st;
}

NRT_STATUS coll_host_v(int32_t vnc, uint32_t rank, uint32_t world, const struct coll_vargs *a)
{
    assert(rt_held());
    struct coll_comm *c;
    NRT_STATUS st = coll_host_comm(vnc, rank, world, &c);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_vargs v = *a;
    if (v.deadline_ns == 0)
        v.deadline_ns = coll_deadline();
    return coll_v_run(c, &v);
}
