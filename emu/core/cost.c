/*
 * cost.c: the per-generation cost tables and the discrete-event schedule
 * of cost.h.
 *
 * Sources (aws-neuron-sdk, the nki/guides/architecture pages and
 * nki/deep-dives/nki-dma-bandwidth-guide.rst; docs/cost-model.md has the
 * details and the blind spots):
 *  - NeuronCore-v2: Tensor 2.8 GHz, Vector 1.12 GHz, Scalar and GpSimd
 *    1.4 GHz, 128 elements per cycle (one per partition lane); a tensor
 *    access costs about 60 cycles of static overhead.
 *  - NeuronCore-v3: Tensor 2.4 GHz, Vector 0.96 GHz (512 bf16/fp16 or 256
 *    other elements per cycle), Scalar and GpSimd 1.2 GHz.
 *  - DMA: 16 engines per NeuronCore, each serving 8 of the 128 partitions
 *    and processing one transfer at a time; 17 (Trn1), 23 (Trn2), 33 (Trn3)
 *    bytes per ns each; about 1300 ns from trigger to start (overlapped by
 *    queued transfers); an overhead per DMA buffer (contiguous run), 79 ns,
 *    derived from the matrix-multiplication tutorial's Trn1 latencies; HBM
 *    bandwidth per chip (820 GB/s Trn1, 3 TB/s Trn2, 4.7 TB/s Trn3) shared
 *    by its cores.
 * The sync engine (SP) is modelled at the Scalar clock. NeuronCore-v4
 * reuses the v3 engine figures with the Trn3 DMA rate.
 */
#include "emu/core/cost.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#include "emu/core/core.h"
#include "emu/isa/isa_args.h"

/* Engine order: PE, ACT, POOL, DVE, SP. HBM per core: the chip's bandwidth
 * over its NeuronCores (2 on Trn1, 8 on Trn2 and Trn3). */
static const struct cost_table cost_tables[] = {
    {2, "NeuronCore-v2", {2.8, 1.4, 1.4, 1.12, 1.4}, {1, 1, 1, 1, 1}, 1.0, 60, 4.0,
     1300.0, 17.0, COST_DMA_ENGINES, 64, 79.0, 8, 820.0 / 2},
    {3, "NeuronCore-v3", {2.4, 1.2, 1.2, 0.96, 1.2}, {1, 1, 1, 2, 1}, 2.0, 60, 4.0,
     1300.0, 23.0, COST_DMA_ENGINES, 64, 79.0, 8, 3000.0 / 8},
    {4, "NeuronCore-v4", {2.4, 1.2, 1.2, 0.96, 1.2}, {1, 1, 1, 2, 1}, 2.0, 60, 4.0,
     1300.0, 33.0, COST_DMA_ENGINES, 64, 79.0, 8, 4700.0 / 8},
};

const struct cost_table *cost_table_for(uint32_t gen)
{
    for (size_t i = 0; i < sizeof cost_tables / sizeof cost_tables[0]; i++)
        if (cost_tables[i].gen == gen)
            return &cost_tables[i];
    return NULL;
}

void cost_begin(struct cost_run *r, uint32_t gen, struct cost_span *spans, size_t span_cap)
{
    memset(r, 0, offsetof(struct cost_run, hist_val));  /* histories: written before read */
    r->t = cost_table_for(gen);
    if (r->t == NULL)
        r->t = gen < 2 ? &cost_tables[0] : &cost_tables[2];
    r->spans = spans;
    r->span_cap = spans != NULL ? span_cap : 0;
}

/* Every matmul keeps its moving tensor in the same slot. */
static_assert(ISA_AP_SLOT(nc_matmul_mx, moving) == ISA_AP_SLOT(nc_matmul, moving), "moving slot");
static_assert(ISA_AP_SLOT(nc_matmul_sparse, moving) == ISA_AP_SLOT(nc_matmul, moving),
              "moving slot");
/* ... and its output in the same slot (cost_flops). */
static_assert(ISA_AP_SLOT(nc_matmul_mx, dst) == ISA_AP_SLOT(nc_matmul, dst), "dst slot");
static_assert(ISA_AP_SLOT(nc_matmul_sparse, dst) == ISA_AP_SLOT(nc_matmul, dst), "dst slot");

/* The op's cost class (the cost column of emu/isa/isa_ops.h); an opcode
 * outside the table costs as compute. */
static enum isa_cost_class cost_class(unsigned op)
{
    const struct isa_op_desc *d = isa_op_lookup(op);
    return d != NULL ? (enum isa_cost_class)d->cost : ISA_COST_COMPUTE;
}

/* Partitions and elements per partition of access pattern slot i (0 when absent). */
static void cost_ap_size(const struct isa_insn *insn, int i, uint64_t *parts, uint64_t *elems)
{
    const struct isa_ap *ap = &insn->ap[i];
    *parts = *elems = 0;
    if (ap->mem == ISA_MEM_NONE || ap->ndims == 0 || ap->ndims > ISA_MAX_DIMS)
        return;
    uint64_t n = 1;  /* the product of the counts (an executed pattern is valid) */
    for (int d = 0; d < ap->ndims; d++)
        n *= ap->dim[d].count;
    *parts = ap->num_part ? ap->num_part : 1;
    *elems = n;
}

/* Does the innermost free stride exceed 16 bytes (half-rate SBUF access)? */
static bool cost_wide_stride(const struct isa_ap *ap)
{
    if (ap->mem != ISA_MEM_SBUF && ap->mem != ISA_MEM_PSUM)
        return false;
    int inner = ap->ndims > 0 ? ap->ndims - 1 : 0;
    int64_t step = ap->dim[inner].step < 0 ? -(int64_t)ap->dim[inner].step : ap->dim[inner].step;
    return ap->dim[inner].count > 1 && step * (int64_t)isa_dtype_size(ap->dtype) > 16;
}

/* Moving elements a PE row takes per cycle: 2 for an nc_matmul in
 * double_row mode (two fp8 pairs per processing element), else 1. */
static double cost_matmul_pairs(const struct isa_insn *insn)
{
    return insn->opcode == ISA_OP_nc_matmul &&
                   ISA_ARG_ENUM(insn, nc_matmul, perf) == ISA_PERF_double_row
               ? 2.0
               : 1.0;
}

/* Cycles of a compute instruction on its engine. */
static double cost_compute_cycles(const struct cost_table *t, const struct isa_insn *insn)
{
    unsigned eng = insn->engine;
    uint64_t streamed = 0;
    bool slow = false, narrow = true;
    for (int i = 1; i < ISA_MAX_AP; i++) {  /* inputs: each streamed once */
        uint64_t p, e;
        cost_ap_size(insn, i, &p, &e);
        streamed += e;
        if (e > 0) {
            slow = slow || cost_wide_stride(&insn->ap[i]);
            narrow = narrow && isa_dtype_size(insn->ap[i].dtype) <= 2;
        }
    }
    uint64_t p0, out;
    cost_ap_size(insn, 0, &p0, &out);
    if (streamed == 0)
        streamed = out;  /* memset, iota, rng: the output is the work */
    double cycles;
    if (eng == ISA_ENG_PE && cost_class(insn->opcode) == ISA_COST_MATMUL) {
        /* The moving tensor streams through the array one column per cycle. */
        const int mv = ISA_AP_SLOT(nc_matmul, moving);
        uint64_t mp, moving;
        cost_ap_size(insn, mv, &mp, &moving);
        bool fp32 = insn->ap[mv].mem != ISA_MEM_NONE && isa_dtype_size(insn->ap[mv].dtype) >= 4;
        cycles = (double)moving * (fp32 ? t->pe_fp32_slowdown : 1.0) / cost_matmul_pairs(insn);
    } else {
        double rate = t->elems_per_cycle[eng];
        if (eng == ISA_ENG_DVE && narrow)
            rate *= t->dve_16bit_speedup;
        cycles = (double)streamed / rate;
    }
    if (slow)
        cycles *= 2.0;
    return cycles + t->access_cycles;
}

/* Bytes of the innermost contiguous run of ap, at most one partition's. */
static uint64_t cost_ap_run(const struct isa_ap *ap)
{
    uint64_t expect = 1;
    for (int i = ap->ndims - 1; i >= 0; i--) {
        if (ap->dim[i].count <= 1)
            continue;
        if (ap->dim[i].step != (int64_t)expect)
            break;
        expect *= ap->dim[i].count;
    }
    return expect * isa_dtype_size(ap->dtype);
}

void cost_dma_shape(const struct isa_insn *insn, struct cost_dma_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->parts = 1;
    uint64_t run = 0, per_part = 0;
    for (int i = 0; i < 2; i++) {  /* dst, src: the contiguous runs both sides allow */
        uint64_t p, e;
        cost_ap_size(insn, i, &p, &e);
        if (e == 0)
            continue;
        const struct isa_ap *ap = &insn->ap[i];
        uint64_t r = cost_ap_run(ap);
        run = run == 0 || r < run ? r : run;
        if (ap->mem == ISA_MEM_HBM)
            sh->hbm = true;
        if (sh->bytes == 0) {
            sh->parts = (uint32_t)p;
            per_part = e * isa_dtype_size(ap->dtype);
            sh->bytes = p * per_part;
        }
        if (ap->mem == ISA_MEM_SBUF || ap->mem == ISA_MEM_PSUM) {
            sh->first_part = ap->start_part;
            sh->parts = (uint32_t)p;
        }
    }
    if (run == 0 || per_part == 0)
        return;
    if (run > per_part)
        run = per_part;
    sh->buffers = (uint64_t)sh->parts * ((per_part + run - 1) / run);
}

/* DMA engines a transfer uses: the first and how many (partition p is
 * served by engine p / parts_per_engine). */
static uint32_t cost_dma_engines(const struct cost_table *t, const struct cost_dma_shape *sh,
                                 uint32_t *first)
{
    uint32_t ppe = t->dma_parts_per_engine ? t->dma_parts_per_engine : 1;
    uint32_t lo = sh->first_part / ppe, hi = (sh->first_part + sh->parts - 1) / ppe;
    uint32_t n = hi - lo + 1;
    *first = lo % COST_DMA_ENGINES;
    return n < t->dma_engines ? n : t->dma_engines;
}

/* Time one DMA engine spends on its share (1/n) of a transfer: its
 * buffers' overhead and its bytes at the engine's rate, or at its share of
 * the core's HBM bandwidth (all engines busy) when that is lower and the
 * transfer touches HBM (with the published figures it never is). */
static double cost_dma_engine_ns(const struct cost_table *t, const struct cost_dma_shape *sh,
                                 uint32_t n)
{
    double buffers = (double)((sh->buffers + n - 1) / n);
    double rate = t->dma_engine_bytes_per_ns, hbm = t->hbm_bytes_per_ns / t->dma_engines;
    if (sh->hbm && hbm < rate)
        rate = hbm;
    return buffers * t->dma_buffer_ns + (double)sh->bytes / n / rate;
}

/* The issuing engine's time for a DMA instruction. */
static double cost_issue_ns(const struct cost_table *t, const struct isa_insn *insn)
{
    return t->dma_issue_cycles / t->clock_ghz[insn->engine < ISA_ENG_COUNT ? insn->engine : ISA_ENG_SP];
}

double cost_duration(const struct cost_table *t, const struct isa_insn *insn, double *dma_ns)
{
    double ghz = t->clock_ghz[insn->engine < ISA_ENG_COUNT ? insn->engine : ISA_ENG_SP];
    *dma_ns = 0;
    switch (cost_class(insn->opcode)) {
    case ISA_COST_DMA: {
        struct cost_dma_shape sh;
        uint32_t first;
        cost_dma_shape(insn, &sh);
        double eng = cost_dma_engine_ns(t, &sh, cost_dma_engines(t, &sh, &first));
        *dma_ns = t->dma_fixed_ns + eng;
        return cost_issue_ns(t, insn);
    }
    case ISA_COST_SEQ:
        return 1.0 / ghz;  /* sequencer work: one cycle */
    case ISA_COST_COMPUTE:
    case ISA_COST_MATMUL:
        break;
    }
    return cost_compute_cycles(t, insn) / ghz;
}

static double *cost_cell(struct cost_run *r, uint32_t core, const struct isa_sync *s)
{
    return s->kind == ISA_SYNC_EVENT ? &r->event_at[core][s->id % ISA_NUM_EVENTS]
                                     : &r->sem_at[core][s->id % ISA_NUM_SEMS];
}

/* The tracked slot of semaphore id on core, or NULL; `take` claims a free
 * slot for it when it has none. */
static int cost_track_slot(struct cost_run *r, uint32_t core, unsigned id, bool take)
{
    int free_slot = -1;
    for (int i = 0; i < COST_SEM_TRACK; i++) {
        const struct cost_sem_track *k = &r->track[core][i];
        if (k->used && k->id == id)
            return i;
        if (!k->used && free_slot < 0)
            free_slot = i;
    }
    if (!take || free_slot < 0)
        return -1;
    r->track[core][free_slot] = (struct cost_sem_track){(uint16_t)id, true, 0, 0};
    return free_slot;
}

/* Remember a signal of a semaphore at t (its value updated as the
 * scheduler does). */
static void cost_track_signal(struct cost_run *r, uint32_t core, const struct isa_sync *s, double t)
{
    int i = cost_track_slot(r, core, s->id, true);
    if (i < 0)
        return;
    struct cost_sem_track *k = &r->track[core][i];
    switch (s->op) {
    case ISA_SEMOP_set: k->value = s->value; break;
    case ISA_SEMOP_add: k->value += s->value; break;
    case ISA_SEMOP_sub: k->value -= s->value; break;
    }
    size_t at = k->n % COST_SEM_HIST;
    r->hist_val[core][i][at] = k->value;
    r->hist_at[core][i][at] = t;
    k->n++;
}

/* When did semaphore wait w start to hold, by the signals remembered:
 * the first of the latest run of signals after which it held. `latest`
 * (its last signal) when it is not tracked or does not hold now. */
static double cost_track_since(const struct cost_run *r, uint32_t core, const struct isa_sync *w,
                               double latest)
{
    int i = cost_track_slot((struct cost_run *)r, core, w->id, false);
    if (i < 0)
        return latest;
    const struct cost_sem_track *k = &r->track[core][i];
    uint64_t kept = k->n < COST_SEM_HIST ? k->n : COST_SEM_HIST;
    double since = latest;
    for (uint64_t j = 0; j < kept; j++) {
        size_t at = (k->n - 1 - j) % COST_SEM_HIST;
        if (!core_cmp(r->hist_val[core][i][at], w->op, w->value))
            return j == 0 ? latest : since;
        since = r->hist_at[core][i][at];
    }
    /* Held after every signal kept: from the start when it held at 0. */
    return k->n <= COST_SEM_HIST && core_cmp(0, w->op, w->value) ? 0 : since;
}

static void cost_span_add(struct cost_run *r, uint32_t core, unsigned lane, const struct isa_insn *insn,
                          size_t pc, double start, double end, double wait)
{
    r->busy[core][lane] += end - start;
    if (end > r->end_ns)
        r->end_ns = end;
    if (r->nspans < r->span_cap)
        r->spans[r->nspans++] = (struct cost_span){core, (uint8_t)lane, insn->opcode,
                                                   (uint32_t)pc, start, end, wait};
    else if (r->spans != NULL)
        r->spans_dropped++;
}

/* Floating-point operations of one instruction as neuron-monitor counts
 * them: a Tensor-engine matmul does a multiply and an add per output
 * element and contraction row, 2*M*N*K (the output's M partitions of N,
 * the moving tensor's K partitions, twice as many rows in double_row
 * mode); other instructions count 0. */
static double cost_flops(const struct isa_insn *insn)
{
    if (insn->opcode != ISA_OP_nc_matmul && insn->opcode != ISA_OP_nc_matmul_mx &&
        insn->opcode != ISA_OP_nc_matmul_sparse)
        return 0;
    uint64_t m, n, k, e;
    cost_ap_size(insn, ISA_AP_SLOT(nc_matmul, dst), &m, &n);
    cost_ap_size(insn, ISA_AP_SLOT(nc_matmul, moving), &k, &e);
    return 2.0 * (double)m * (double)n * (double)k * cost_matmul_pairs(insn); /* K rows per pair */
}

/* Book `each` ns of DMA engine e for a transfer of queue q ready at
 * `ready`. An engine serves its queues in turn: a transfer that finds other
 * queues' work booked on the engine shares it with them (its time scales
 * by the queues still busy there), but never ends later than behind all
 * of that work. The engine's booked work grows by `each` either way.
 * Returns the end; *start is when it began. */
static double cost_engine_take(struct cost_run *r, uint32_t core, unsigned q, unsigned e,
                               double ready, double each, double *start)
{
    double *qf = &r->dma_q_eng[core][q][e], *ef = &r->dma_eng_free[core][e];
    double s0 = *qf > ready ? *qf : ready;
    unsigned busy = 1;
    for (unsigned o = 0; o < ISA_ENG_COUNT; o++)
        busy += o != q && r->dma_q_eng[core][o][e] > s0;
    double fifo = (*ef > s0 ? *ef : s0) + each;
    double end = s0 + each * busy;
    if (end > fifo)
        end = fifo;
    *ef = fifo;
    *qf = end;
    *start = s0;
    return end;
}

/* Schedule the transfer of a DMA instruction issued at `issued` on the DMA
 * engines it uses and on the core's HBM share; its span on the issuing
 * engine's queue lane runs from when its data starts to move (or the
 * queue's previous completion) to its completion, so a queue's busy time
 * is time spent moving its data. Returns the completion. */
static double cost_transfer(struct cost_run *r, uint32_t core, enum isa_engine eng, size_t pc,
                            const struct isa_insn *insn, double issued)
{
    const struct cost_table *t = r->t;
    struct cost_dma_shape sh;
    uint32_t first;
    cost_dma_shape(insn, &sh);
    uint32_t n = cost_dma_engines(t, &sh, &first);
    double each = cost_dma_engine_ns(t, &sh, n);
    double ready = issued + t->dma_fixed_ns, moving = -1, done = ready;
    for (uint32_t i = 0; i < n; i++) {
        double s0, end = cost_engine_take(r, core, eng, (first + i) % COST_DMA_ENGINES, ready, each, &s0);
        if (moving < 0 || s0 < moving)
            moving = s0;
        if (end > done)
            done = end;
    }
    double *qf = &r->dma_free[core][eng];  /* a queue completes in order */
    if (*qf > done)
        done = *qf;
    double begin = *qf > moving ? *qf : moving;
    *qf = done;
    cost_span_add(r, core, COST_LANE_DMA(eng), insn, pc, begin, done, 0);
    return done;
}

double cost_insn(struct cost_run *r, uint32_t core, enum isa_engine eng, size_t pc,
                 const struct isa_insn *insn)
{
    if (core >= COST_MAX_CORES)
        core = COST_MAX_CORES - 1;
    double ready = r->eng_free[core][eng], waited = ready;
    for (int i = 0; i < ISA_MAX_WAIT && insn->wait[i].kind != ISA_SYNC_NONE; i++) {
        double at = *cost_cell(r, core, &insn->wait[i]);
        if (insn->wait[i].kind == ISA_SYNC_SEM)
            at = cost_track_since(r, core, &insn->wait[i], at);
        if (at > waited)
            waited = at;
    }
    if (insn->opcode == ISA_OP_sem_wait) {  /* an explicit wait on a semaphore */
        double at = r->sem_at[core][(uint64_t)ISA_ARG_INT(insn, sem_wait, sem) % ISA_NUM_SEMS];
        if (at > waited)
            waited = at;
    }
    bool dma = cost_class(insn->opcode) == ISA_COST_DMA;
    double dur = dma ? cost_issue_ns(r->t, insn) : cost_duration(r->t, insn, &(double){0});
    double start = waited, end = start + dur;
    r->eng_free[core][eng] = end;
    r->insns++;
    r->flops += cost_flops(insn);
    if (insn->opcode == ISA_OP_sem_signal) {
        uint64_t sem = (uint64_t)ISA_ARG_INT(insn, sem_signal, sem);
        double *cell = &r->sem_at[core][sem % ISA_NUM_SEMS];
        if (end > *cell)
            *cell = end;
    }
    cost_span_add(r, core, eng, insn, pc, start, end, start - ready);
    return dma ? cost_transfer(r, core, eng, pc, insn, end) : end;
}

void cost_signal(struct cost_run *r, uint32_t core, const struct isa_sync *s, double t)
{
    if (core >= COST_MAX_CORES)
        core = COST_MAX_CORES - 1;
    double *cell = cost_cell(r, core, s);
    if (t > *cell)
        *cell = t;
    if (s->kind == ISA_SYNC_SEM)
        cost_track_signal(r, core, s, t);
}

void cost_merge_core(struct cost_run *r, const struct cost_run *from, uint32_t core)
{
    if (core >= COST_MAX_CORES)
        core = COST_MAX_CORES - 1;
    memcpy(r->eng_free[core], from->eng_free[core], sizeof r->eng_free[core]);
    memcpy(r->dma_free[core], from->dma_free[core], sizeof r->dma_free[core]);
    memcpy(r->dma_eng_free[core], from->dma_eng_free[core], sizeof r->dma_eng_free[core]);
    memcpy(r->dma_q_eng[core], from->dma_q_eng[core], sizeof r->dma_q_eng[core]);
    memcpy(r->track[core], from->track[core], sizeof r->track[core]);
    memcpy(r->hist_val[core], from->hist_val[core], sizeof r->hist_val[core]);
    memcpy(r->hist_at[core], from->hist_at[core], sizeof r->hist_at[core]);
    memcpy(r->sem_at[core], from->sem_at[core], sizeof r->sem_at[core]);
    memcpy(r->event_at[core], from->event_at[core], sizeof r->event_at[core]);
    memcpy(r->busy[core], from->busy[core], sizeof r->busy[core]);
    if (from->end_ns > r->end_ns)
        r->end_ns = from->end_ns;
    r->insns += from->insns;
    r->flops += from->flops;
}
