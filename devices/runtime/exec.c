/*
 * exec.c: binding and running executions (see exec.h).
 */
#include "devices/runtime/exec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/link/channel.h"
#include "devices/observe/devprof.h"
#include "devices/observe/systrace.h"
#include "devices/coll/coll.h"
#include "devices/observe/debugstream.h"
#include "devices/config/env.h"
#include "devices/runtime/model.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/tensor.h"
#include "devices/runtime/tensor_set.h"
#include "devices/thread/spin.h"
#include "devices/thread/worker.h"
#include "devices/config/status.h"
#include "emu/core/cost.h"
#include "emu/core/par.h"
#include "emu/log.h"
#include "emu/neff/npy.h"
#include "emu/num/numerics.h"
#include "nrt/nrt_status.h"

/* Default execution time limit: the emulator runs slower than hardware. */
#define EXEC_DEFAULT_TIMEOUT_S ENV_EXEC_TIMEOUT_DEFAULT_S

static const char *exec_status_name(NRT_STATUS st)
{
    switch (st) {
    case NRT_EXEC_OOB: return "out-of-bounds access";
    case NRT_EXEC_COMPLETED_WITH_ERR: return "completed with errors";
    case NRT_TIMEOUT: return "timeout";
    case NRT_EXEC_HW_ERR_COLLECTIVES: return "collective stuck: a rank is missing";
    case NRT_INVALID: return "invalid program";
    default: return "error";
    }
}

/* The caller's tensors bound to a model's I/O, pinned for the execution. */
struct exec_binding {
    uint32_t n;                 /* model I/O tensors */
    struct tensor_view *views;  /* one per neff io entry, in model order */
    nrt_tensor_t **tensors;     /* the caller's tensor handles */
};

static NRT_STATUS exec_bind_one(const struct neff_io *io, const nrt_tensor_set_t *set,
                                nrt_tensor_t **t, struct tensor_view *v)
{
    NRT_STATUS st = tensor_set_get((nrt_tensor_set_t *)set, io->name, t);
    if (st != NRT_SUCCESS) {
        if (st != NRT_FAILURE)
            return NRT_INVALID;  /* a freed tensor or a bad set: already logged */
        LOG_ERROR("NRT", "%s tensor '%s' is missing from the %s set",
                  io->is_output ? "output" : "input", io->name,
                  io->is_output ? "output" : "input");
        return NRT_INVALID;
    }
    st = tensor_pin(*t, v);
    if (st != NRT_SUCCESS)
        return st;
    if (v->size != io->size || v->va == NULL) {
        LOG_ERROR("NRT", "%s tensor '%s' is %" PRIu64 " bytes; the model expects %" PRIu64,
                  io->is_output ? "output" : "input", io->name, v->size, io->size);
        tensor_unpin(v);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

static void exec_unbind(struct exec_binding *b, uint32_t pinned)
{
    for (uint32_t i = 0; i < pinned; i++)
        tensor_unpin(&b->views[i]);
    free(b->views);
    free(b->tensors);
}

static NRT_STATUS exec_bind(const struct neff_model *nm, const nrt_tensor_set_t *inputs,
                            nrt_tensor_set_t *outputs, struct exec_binding *b)
{
    b->n = nm->n_io;
    b->views = calloc(b->n ? b->n : 1, sizeof *b->views);
    b->tensors = calloc(b->n ? b->n : 1, sizeof *b->tensors);
    if (b->views == NULL || b->tensors == NULL) {
        exec_unbind(b, 0);
        return NRT_RESOURCE;
    }
    for (uint32_t i = 0; i < b->n; i++) {
        const struct neff_io *io = &nm->io[i];
        NRT_STATUS st = exec_bind_one(io, io->is_output ? outputs : inputs, &b->tensors[i],
                                      &b->views[i]);
        if (st != NRT_SUCCESS) {
            exec_unbind(b, i);
            return st;
        }
    }
    return NRT_SUCCESS;
}

/* The cost model's estimate of a stand-in execution: one DMA pass that
 * writes every output (the only work a zero-filling stand-in does), over
 * all DMA engines of the core at the generation's bandwidth. */
static uint64_t exec_stand_in_ns(const nrt_model_t *m, const struct exec_binding *b)
{
    const struct cost_table *t = cost_table_for(rt_machine()->cfg.profile->gen);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < b->n; i++)
        if (m->neff->io[i].is_output)
            bytes += b->views[i].size;
    double per_ns = t->dma_engine_bytes_per_ns * (t->dma_engines > 0 ? t->dma_engines : 1);
    return (uint64_t)(t->dma_fixed_ns + (double)bytes / per_ns);
}

/* A vendor-compiled NEFF: refuse, or (when asked) stand in with zeros,
 * recorded as an execution of the stand-in's estimated device time. */
static NRT_STATUS exec_foreign(nrt_model_t *m, struct exec_binding *b)
{
    struct env_exec e;
    if (env_exec(&e) != NRT_SUCCESS)
        return NRT_INVALID;
    if (!e.foreign_zeros) {
        LOG_ERROR("NRT", "'%s' was compiled for real hardware: its instruction streams are not "
                  "trnemu's open ISA and cannot be emulated (TRNEMU_FOREIGN_NEFF=zeros gives "
                  "zero-filled outputs instead)", m->neff->info.name);
        return NRT_UNSUPPORTED_NEFF_VERSION;
    }
    if (!atomic_exchange(&m->stand_in_warned, true)) {
        instance_use_stand_in(rt_machine()->inst, m->gvnc);
        LOG_WARN_SHOWN("NRT", "stand-in execution of foreign NEFF '%s': outputs are "
                       "zero-filled, not computed (TRNEMU_FOREIGN_NEFF=zeros; said once per "
                       "model)", m->neff->info.name);
    }
    uint64_t t0 = systrace_now_ns();
    for (uint32_t i = 0; i < b->n; i++)
        if (m->neff->io[i].is_output)
            memset(b->views[i].va, 0, b->views[i].size);
    uint64_t ns = exec_stand_in_ns(m, b);
    atomic_store(&m->device_ns_last, ns);
    atomic_fetch_add(&m->device_ns_total, ns);
    systrace_emit(SYS_NC_EXEC_RUNNING, m->vnc, t0, ns, m->neff->info.name,
                  atomic_load(&m->executions) + 1, NRT_SUCCESS);
    return NRT_SUCCESS;
}

/* Run options from the environment (env_exec: NEURON_RT_EXEC_TIMEOUT,
 * TRNEMU_RACECHECK, NEURON_RT_STOCHASTIC_ROUNDING_EN and _SEED). */
static NRT_STATUS exec_opts(struct core_run_opts *o)
{
    struct env_exec e;
    *o = (struct core_run_opts){EXEC_DEFAULT_TIMEOUT_S * 1000u, false, 0, false, NULL, NULL};
    if (env_exec(&e) != NRT_SUCCESS)
        return NRT_INVALID;
    o->timeout_ms = e.timeout_ms;
    o->racecheck = e.racecheck;
    o->stochastic = e.stochastic;
    o->seed = e.seed;
    return NRT_SUCCESS;
}

/* A failed execution's report on its LNC's debug stream (ndebug_stream.h),
 * as a uint8 "tensor" of text. */
static _Thread_local int exec_cur_vnc = -1;  /* the VNC of the execution under way */

static void exec_debug_event(const char *name, NRT_STATUS st, const char *report)
{
    char prefix[512];
    snprintf(prefix, sizeof prefix, "execution of '%s' failed: %s (%d)", name,
             exec_status_name(st), (int)st);
    uint64_t n = strlen(report), shape[1] = {n};
    dstream_push(exec_cur_vnc, prefix, "uint8", shape, 1, report, n);
}

/* Log a multi-line report, one log line per line. */
static void exec_log_report(const char *name, NRT_STATUS st, const char *report)
{
    exec_debug_event(name, st, report);
    LOG_ERROR("NRT", "execution of '%s' failed: %s (%d)", name, exec_status_name(st), (int)st);
    const char *p = report;
    while (*p != '\0') {
        const char *nl = strchr(p, '\n');
        int len = nl ? (int)(nl - p) : (int)strlen(p);
        LOG_ERROR("NRT", "  %.*s", len, p);
        p += len + (nl != NULL);
    }
}

/* Is there a NaN (nan_only) or a NaN or infinity among the float
 * elements at p? *at: the first one's index. fp32 is scanned in place,
 * narrower floats a converted block at a time. */
static bool exec_bad_value(const uint8_t *p, uint32_t dtype, uint64_t bytes, bool nan_only,
                           uint64_t *at)
{
    size_t es = num_dtype_size(dtype);
    if (!num_dtype_is_float(dtype) || es == 0)
        return false;
    size_t n = (size_t)(bytes / es);
    if (es == 4) {  /* fp32, fp32r */
        *at = num_first_nonfinite_f32((const float *)(const void *)p, n, nan_only);
        return *at < n;
    }
    float buf[1024];
    for (size_t i = 0; i < n; i += 1024) {
        size_t k = n - i < 1024 ? n - i : 1024;
        (void)num_load_f32(buf, p + i * es, dtype, 1, k);
        size_t j = num_first_nonfinite_f32(buf, k, nan_only);
        if (j < k) {
            *at = i + j;
            return true;
        }
    }
    return false;
}

/* A reportable value in a float output: NRT_EXEC_COMPLETED_WITH_NUM_ERR
 * (outputs kept). What counts follows NEURON_RT_NUMERICAL_ERRORS_VERBOSITY:
 * none: nothing; critical, debug: NaN; verbose or unset: NaN and Inf. */
static NRT_STATUS exec_check_numerics(const nrt_model_t *m, const struct exec_binding *b)
{
    enum env_numerr v = env_get()->numerr;
    bool nan_only = v == ENV_NUMERR_CRITICAL || v == ENV_NUMERR_DEBUG;
    if (v == ENV_NUMERR_NONE)
        return NRT_SUCCESS;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct neff_io *io = &m->neff->io[i];
        uint64_t at;
        if (!io->is_output)
            continue;
        if (exec_bad_value(b->views[i].va, io->dtype, b->views[i].size, nan_only, &at)) {
            LOG_ERROR("NRT", "execution of '%s' produced %s: output '%s' element %" PRIu64,
                      m->neff->info.name, nan_only ? "NaN" : "NaN/Inf", io->name, at);
            return NRT_EXEC_COMPLETED_WITH_NUM_ERR;
        }
    }
    return NRT_SUCCESS;
}

/* NEURON_RT_DBG_DUMP_INPUTS_ON_ERR: the inputs of a failed execution as
 * .npy files in nrt_inputs_<pid>_<model>_<n>/ (one log line saying where). */
static void exec_dump_inputs(const nrt_model_t *m, const struct exec_binding *b)
{
    static _Atomic uint32_t seq;
    char dir[512];
    snprintf(dir, sizeof dir, "nrt_inputs_%d_%s_%u", (int)getpid(), m->neff->info.name,
             atomic_fetch_add(&seq, 1));
    for (char *c = dir; *c; c++)
        if (*c == '/')
            *c = '_';
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        LOG_ERROR("NRT", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR: cannot create %s", dir);
        return;
    }
    uint32_t written = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        const struct neff_io *io = &m->neff->io[i];
        uint64_t shape[NEFF_IO_MAX_DIMS];
        uint8_t *npy = NULL;
        size_t len = 0;
        const char *descr = npy_descr_for_dtype(io->dtype);
        for (uint32_t d = 0; d < io->ndim; d++)
            shape[d] = io->shape[d];
        if (io->is_output || descr == NULL ||
            npy_write(descr, shape, io->ndim, b->views[i].va, io->size, &npy, &len) != EMU_OK)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.npy", dir, io->name);
        for (char *c = path + strlen(dir) + 1; *c; c++)
            if (*c == '/')
                *c = '_';
        FILE *f = fopen(path, "wb");
        if (f != NULL && fwrite(npy, 1, len, f) == len)
            written++;
        if (f != NULL)
            fclose(f);
        free(npy);
    }
    LOG_ERROR("NRT", "NEURON_RT_DBG_DUMP_INPUTS_ON_ERR: %u input(s) of '%s' written to %s/",
              written, m->neff->info.name, dir);
}

/* ---- collectives ------------------------------------------------------------ */

/* A physical core of a split execution running on one of the VNC's helper
 * workers (core_run_threads). */
struct exec_core_thread {
    struct worker_job job;     /* posted to the helper; ours once worker_wait returned */
    void (*fn)(void *arg);     /* the core's rounds (emu) */
    void *arg;                 /* their argument */
};

/* The collectives of one execution: what its programs' core_coll points at. */
struct exec_coll {
    nrt_model_t *m;                /* the model running */
    struct machine *mach;          /* its machine */
    uint64_t deadline_ns;          /* when the execution's time is up */
    struct coll_comm *comm;        /* its communicator, found on first use */
    struct core_lnc lnc;           /* shared by the cores of the run */
    struct core_coll iface[MACHINE_MAX_LNC]; /* one per core */
    struct exec_core_thread thr[MACHINE_MAX_LNC]; /* cores 1..: their helper threads */
    struct core_run_threads threads; /* what core_run gets to start them */
};

/* The communicator: the model's (nrt_load_collectives) or the VNC's
 * (nrt_build_global_comm). */
static NRT_STATUS exec_coll_comm(struct exec_coll *ec, char *err, size_t cap)
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
static NRT_STATUS exec_coll_report(const struct exec_coll *ec, const char *what, NRT_STATUS st,
                                   char *err, size_t cap)
{
    if (st != NRT_SUCCESS)
        snprintf(err, cap, "%s on rank %u of %u failed (status %d; see the NCCL log lines)", what,
                 coll_comm_rank(ec->comm), coll_comm_world(ec->comm), (int)st);
    return st;
}

/* Join the communicator if needed, then run the collective. */
static NRT_STATUS exec_coll_run_outside(struct exec_coll *ec, const struct core_coll_call *call,
                                        char *err, size_t cap)
{
    NRT_STATUS st = exec_coll_comm(ec, err, cap);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_args a = {call->kind, call->dtype, call->op, call->src, call->count, call->dst,
                          NULL, 0, call->send_to, call->recv_from, ec->deadline_ns};
    return exec_coll_report(ec, coll_kind_name(call->kind), coll_run(ec->comm, &a), err, cap);
}

/* The same for all_to_all_v / all_gather_v (coll_v.c). */
static NRT_STATUS exec_coll_run_v_outside(struct exec_coll *ec, const struct core_coll_vcall *call,
                                          char *err, size_t cap)
{
    NRT_STATUS st = exec_coll_comm(ec, err, cap);
    if (st != NRT_SUCCESS)
        return st;
    struct coll_vargs a = {*call, NULL, ec->deadline_ns};
    const char *what = call->kind == CORE_COLL_V_ALL_TO_ALL ? "all_to_all_v" : "all_gather_v";
    return exec_coll_report(ec, what, coll_v_run(ec->comm, &a), err, cap);
}

/* Both run outside the compute gate (gate.h): the other ranks may be
 * threads of this process that need a place in it to reach the collective. */
static emu_status exec_coll_run(void *user, const struct core_coll_call *call, char *err, size_t cap)
{
    struct exec_coll *ec = user;
    gate_leave(&ec->mach->compute);
    NRT_STATUS st = exec_coll_run_outside(ec, call, err, cap);
    gate_enter(&ec->mach->compute);
    return emu_status_of(st);
}

static emu_status exec_coll_run_v(void *user, const struct core_coll_vcall *call, char *err,
                                  size_t cap)
{
    struct exec_coll *ec = user;
    gate_leave(&ec->mach->compute);
    NRT_STATUS st = exec_coll_run_v_outside(ec, call, err, cap);
    gate_enter(&ec->mach->compute);
    return emu_status_of(st);
}

static uint32_t exec_coll_group_size(void *user, uint32_t group)
{
    struct exec_coll *ec = user;
    if (group != 0)
        return 0;  /* trnemu NEFFs carry no replica groups: 0 is every rank */
    if (ec->m->cc_world != 0)
        return ec->m->cc_world;
    struct coll_comm *c = coll_comm_of_vnc(ec->mach, ec->m->gvnc);
    return c != NULL ? coll_comm_world(c) : 0;
}

/* Staging memory kept by the model (its executions run one at a time). */
static void *exec_coll_scratch(void *user, uint32_t slot, uint64_t bytes)
{
    nrt_model_t *m = ((struct exec_coll *)user)->m;
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

/* ---- physical cores on helper threads ---------------------------------------- */

static atomic_bool exec_core_threads_on = true;  /* exec_set_core_threads */

void exec_set_core_threads(bool on)
{
    atomic_store(&exec_core_threads_on, on);
}

/* The helper worker that runs physical core `core` (1..) of the VNC. */
static struct worker *exec_core_helper(struct exec_coll *ec, uint32_t core)
{
    return &ec->mach->vncs[ec->m->gvnc].helper[core - 1];
}

static NRT_STATUS exec_core_thread_job(void *arg)
{
    struct exec_core_thread *t = arg;
    t->fn(t->arg);
    return NRT_SUCCESS;
}

/* core_run_threads.start: core `core` on the VNC's helper worker core-1. It
 * borrows the execution's place in the compute gate, as par.c's helpers
 * do: a place never waits for a thread that needs one. */
static bool exec_core_thread_start(void *user, uint32_t core, void (*fn)(void *arg), void *arg)
{
    struct exec_coll *ec = user;
    if (core == 0 || core >= MACHINE_MAX_LNC)
        return false;
    struct exec_core_thread *t = &ec->thr[core];
    t->fn = fn;
    t->arg = arg;
    t->job = (struct worker_job){.fn = exec_core_thread_job, .arg = t, .result = NRT_SUCCESS};
    return worker_post(exec_core_helper(ec, core), &t->job);
}

static void exec_core_thread_join(void *user, uint32_t core)
{
    struct exec_coll *ec = user;
    (void)worker_wait(exec_core_helper(ec, core), &ec->thr[core].job);
}

static void exec_coll_setup(struct exec_coll *ec, nrt_model_t *m, struct machine *mach,
                            uint64_t timeout_ms)
{
    memset(ec, 0, sizeof *ec);
    ec->m = m;
    ec->mach = mach;
    ec->deadline_ns = timeout_ms ? spin_now_ns() + timeout_ms * 1000000u : coll_deadline();
    core_lnc_init(&ec->lnc, m->nsgs);
    ec->threads = (struct core_run_threads){ec, exec_core_thread_start, exec_core_thread_join};
    for (uint32_t s = 0; s < m->nsgs && s < MACHINE_MAX_LNC; s++) {
        ec->iface[s] = (struct core_coll){ec, s, &ec->lnc, exec_coll_run, exec_coll_scratch,
                                           exec_coll_group_size, exec_coll_run_v};
        m->sgs[s].prog.coll = &ec->iface[s];
    }
}

static void exec_coll_teardown(struct exec_coll *ec)
{
    for (uint32_t s = 0; s < ec->m->nsgs; s++)
        ec->m->sgs[s].prog.coll = NULL;
    core_lnc_fini(&ec->lnc);
}

/* Bind the programs of m to b's tensors (their views, in place) and to the
 * cores of its VNC. */
static NRT_STATUS exec_bind_cores(nrt_model_t *m, const struct exec_binding *b,
                                  struct core **cores, const struct core_program **progs)
{
    for (uint32_t s = 0; s < m->nsgs; s++) {
        NRT_STATUS st = machine_vnc_core(rt_machine(), m->gvnc, s, &cores[s]);
        if (st != NRT_SUCCESS)
            return st;
        model_bind_program(&m->sgs[s], b->views, cores[s]);
        progs[s] = &m->sgs[s].prog;
    }
    return NRT_SUCCESS;
}

static NRT_STATUS exec_program(nrt_model_t *m, struct exec_binding *b)
{
    struct machine *mach = rt_machine();
    struct core *cores[MACHINE_MAX_LNC];
    const struct core_program *progs[MACHINE_MAX_LNC];
    struct core_run_opts opts;
    if (exec_opts(&opts) != NRT_SUCCESS)
        return NRT_INVALID;
    NRT_STATUS bound = exec_bind_cores(m, b, cores, progs);
    if (bound != NRT_SUCCESS)
        return bound;
    static _Thread_local char report[16384];
    struct exec_coll ec;
    exec_coll_setup(&ec, m, mach, opts.timeout_ms);
    /* Device time (emu/core/cost.h): always estimated, spans only for a profile. */
    static _Thread_local struct cost_run cost;
    exec_cur_vnc = m->vnc;
    uint64_t t0 = systrace_now_ns();
    /* The thread's own buffer, reused: only touched as far as the spans go. */
    struct cost_span *spans = devprof_wanted(m->id) ? devprof_span_buffer() : NULL;
    cost_begin(&cost, cores[0]->gen, spans, DEVPROF_MAX_SPANS);
    opts.cost = &cost;
    /* TRNEMU_THREADS=1 keeps every core on this thread (one fixed order). */
    opts.threads = par_threads() > 1 && atomic_load(&exec_core_threads_on) ? &ec.threads : NULL;
    NRT_STATUS st = nrt_status_of(core_run(cores, progs, m->nsgs, &opts, report, sizeof report));
    exec_coll_teardown(&ec);
    if (st == NRT_SUCCESS)
        st = exec_check_numerics(m, b);
    else
        exec_log_report(m->neff->info.name, st, report);
    atomic_store(&m->device_ns_last, (uint64_t)cost.end_ns);
    atomic_fetch_add(&m->device_ns_total, (uint64_t)cost.end_ns);
    instance_use_flops(mach->inst, m->gvnc, (uint64_t)cost.flops);
    devprof_exec(&(struct devprof_model){m->id, m->vnc, m->neff->info.name}, &cost, st);
    systrace_emit(SYS_NC_EXEC_RUNNING, m->vnc, t0, (uint64_t)cost.end_ns, m->neff->info.name,
                  atomic_load(&m->executions) + 1, st);
    if (st == NRT_EXEC_COMPLETED_WITH_NUM_ERR)
        systrace_emit(SYS_NUMERICAL_ERR, m->vnc, t0, 0, m->neff->info.name, 0, st);
    return st;
}

static NRT_STATUS exec_run(nrt_model_t *m, struct exec_binding *b)
{
    if (!m->runnable)
        return exec_foreign(m, b);
    return exec_program(m, b);
}

static _Thread_local uint32_t exec_cb_depth;    /* callbacks under way on this thread */

/* A bound execution, ready to run (exec.h). */
struct exec_request {
    nrt_model_t *m;            /* the pinned model */
    struct exec_binding b;     /* its bound tensors */
    uint32_t repeat;           /* executions in a row */
};

/* On the VNC's worker, or on the thread of a synchronous nrt_execute
 * while the worker is idle (worker_run_here: two thread switches fewer
 * per call). The quiesce lock is taken here, by the thread that runs the
 * execution, never by a thread that then waits for the worker: a
 * snapshot waiting for it (writers first) would otherwise block the
 * worker for ever. The compute gate is entered inside it (gate.h), once
 * per execution. */
static NRT_STATUS exec_job_run(void *arg)
{
    struct exec_request *r = arg;
    struct machine *mach = rt_machine();
    NRT_STATUS st = NRT_SUCCESS;
    uint64_t t0 = systrace_now_ns();
    uint64_t faults = machine_mem_faults();
    machine_mem_enter(mach);  /* no snapshot while it runs (state_quiesce) */
    par_busy_enter();         /* executions on every CPU: no instruction is split */
    instance_use_model_running(mach->inst, r->m->gvnc, r->m->id, true);
    for (uint32_t i = 0; i < r->repeat && st == NRT_SUCCESS; i++) {
        gate_enter(&mach->compute);
        st = exec_run(r->m, &r->b);
        gate_leave(&mach->compute);
    }
    instance_use_model_running(mach->inst, r->m->gvnc, r->m->id, false);
    par_busy_leave();
    machine_mem_leave(mach);
    if (st == NRT_SUCCESS && machine_mem_faults() != faults) {
        char what[400];
        snprintf(what, sizeof what, "execution of '%s' on VNC %d", r->m->neff->info.name,
                 r->m->vnc);
        st = machine_mem_check(mach, faults, what);
    }
    instance_use_request(mach->inst, r->m->gvnc, systrace_now_ns() - t0, st);
    return st;
}

NRT_STATUS exec_request_new(nrt_model_t *m, const nrt_tensor_set_t *inputs,
                            nrt_tensor_set_t *outputs, uint32_t repeat,
                            struct exec_request **out)
{
    struct exec_request *r = calloc(1, sizeof *r);
    if (r == NULL)
        return NRT_RESOURCE;
    NRT_STATUS st = exec_bind(m->neff, inputs, outputs, &r->b);
    if (st != NRT_SUCCESS) {
        free(r);
        return st;
    }
    r->m = m;
    r->repeat = repeat;
    *out = r;
    return NRT_SUCCESS;
}

/* Count a finished execution and bump its outputs' completion counters. */
static void exec_request_done(struct exec_request *r, NRT_STATUS st)
{
    nrt_model_t *m = r->m;
    if (st != NRT_SUCCESS && env_get()->dump_inputs_on_err)
        exec_dump_inputs(m, &r->b);
    if (st == NRT_SUCCESS || st == NRT_EXEC_COMPLETED_WITH_NUM_ERR) {
        atomic_fetch_add(&m->executions, r->repeat);
        instance_use_executions(rt_machine()->inst, m->gvnc, r->repeat);
        for (uint32_t i = 0; i < r->b.n; i++)
            if (m->neff->io[i].is_output)
                tensor_completion_bump(r->b.tensors[i]);
    }
}

NRT_STATUS exec_request_run(struct exec_request *r)
{
    struct machine *mach = rt_machine();
    struct vnc_info *vi = &mach->vncs[r->m->gvnc];
    NRT_STATUS st;
    if (worker_is_self(&vi->worker)) {
        /* From the status callback on the VNC's own worker: the worker is
         * this thread, so running here keeps one execution at a time;
         * exec_lock may be held by an nrt_execute whose job waits for us. */
        st = exec_job_run(r);
    } else if (exec_cb_depth > 0) {
        /* From a status callback: the other worker may be in a callback
         * that waits for this one; NEURON_RT_EXEC_TIMEOUT bounds the wait
         * for ours to start. No exec_lock: the worker serialises. */
        struct core_run_opts o;
        (void)exec_opts(&o);  /* a malformed variable keeps the default bound */
        uint64_t ms = o.timeout_ms ? o.timeout_ms : EXEC_DEFAULT_TIMEOUT_S * 1000u;  /* 0: no
                                              limit on the run, but a start is still bounded */
        st = worker_run_bounded(&vi->worker, exec_job_run, r, ms * 1000000u);
        if (st == NRT_TIMEOUT)
            LOG_ERROR("NRT", "execution of '%s' from an execution status callback did not start "
                      "within NEURON_RT_EXEC_TIMEOUT: VNC %d's worker is busy (in a callback "
                      "waiting for this one?)", r->m->neff->info.name, r->m->vnc);
    } else {
        pthread_mutex_lock(&vi->exec_lock);  /* one execution per VNC at a time */
        st = worker_run_here(&vi->worker, exec_job_run, r);
        pthread_mutex_unlock(&vi->exec_lock);
    }
    exec_request_done(r, st);
    return st;
}

struct worker *exec_request_worker(const struct exec_request *r)
{
    return &rt_machine()->vncs[r->m->gvnc].worker;
}

NRT_STATUS exec_request_run_on_worker(struct exec_request *r)
{
    NRT_STATUS st = exec_job_run(r);
    exec_request_done(r, st);
    return st;
}

void exec_request_free(struct exec_request *r)
{
    if (r == NULL)
        return;
    exec_unbind(&r->b, r->b.n);
    free(r);
}

/* ---- the execution status callback ------------------------------------ */

static pthread_mutex_t exec_cb_lock = PTHREAD_MUTEX_INITIALIZER;
static NRT_ASYNC_EXEC_STATUS_CALLBACK exec_cb;  /* nrt_register_async_exec_callback */
static void *exec_cb_params;                    /* its argument */

void exec_set_status_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK cb, void *params)
{
    pthread_mutex_lock(&exec_cb_lock);
    exec_cb = cb;
    exec_cb_params = params;
    pthread_mutex_unlock(&exec_cb_lock);
}

void exec_notify(const nrt_model_t *m, uint64_t job_id, NRT_STATUS st)
{
    pthread_mutex_lock(&exec_cb_lock);
    NRT_ASYNC_EXEC_STATUS_CALLBACK cb = exec_cb;
    void *params = exec_cb_params;
    pthread_mutex_unlock(&exec_cb_lock);
    if (cb == NULL)
        return;
    exec_cb_depth++;
    cb(params, m->id, (uint32_t)m->vnc, job_id, st);
    exec_cb_depth--;
}

bool exec_in_status_callback(void)
{
    return exec_cb_depth > 0;
}

NRT_STATUS exec_model(nrt_model_t *m, const nrt_tensor_set_t *inputs, nrt_tensor_set_t *outputs,
                      uint32_t repeat)
{
    struct exec_request *r;
    uint64_t t0 = systrace_now_ns();
    NRT_STATUS st = exec_request_new(m, inputs, outputs, repeat, &r);
    if (st != NRT_SUCCESS)
        return st;
    st = exec_request_run(r);
    systrace_emit(SYS_NRT_EXECUTE, m->vnc, t0, systrace_now_ns() - t0, m->neff->info.name,
                  atomic_load(&m->executions), st);
    exec_request_free(r);
    exec_notify(m, atomic_load(&m->executions), st);
    return st;
}
