/*
 * test_exec_coll.c: the instructions between cores (emu/engines/exec_coll.c),
 * without processes: sendrecv and core_barrier between the two cores of a
 * logical core run by one core_run, and the cross-rank collectives against
 * a stand-in core_coll (operand staging, size checks, status passing), and
 * the variable-count all_to_all_v / all_gather_v (metadata rows, received
 * counts written back, generation gates). The tests between cores run
 * twice: both cores on one thread, then (split) each on its own thread,
 * which TSan checks in the threads suite. The race checker between the
 * cores: HBM accesses of two cores with and without a core_barrier,
 * sendrecv or collective between them, rows of one tensor interleaved.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/core_coll.h"
#include "emu/isa/isa_generation.h"
#include "emu/num/numerics.h"
#include "exec_harness.h"

/* Two harnesses run as the two cores of one logical core. */
struct pair {
    struct harness *h[2];        /* core 0, core 1 */
    struct core_lnc lnc;         /* what they share */
    struct core_coll iface[2];  /* one per core */
    uint8_t stage[8][1 << 16];   /* scratch slots */
};

static void *fake_scratch(void *user, uint32_t slot, uint64_t bytes)
{
    struct pair *p = user;
    return slot < 8 && bytes <= sizeof p->stage[0] ? p->stage[slot] : NULL;
}

/* A stand-in for the other ranks: a world of 4 ranks whose inputs all equal
 * this one's, except that the status comes from `fake_status`. */
static emu_status fake_status;
static struct core_coll_call last_call;

static emu_status fake_run(void *user, const struct core_coll_call *call, char *err, size_t cap)
{
    (void)user;
    last_call = *call;
    if (fake_status != EMU_OK) {
        snprintf(err, cap, "rank 3 is gone");
        return fake_status;
    }
    const float *s = call->src;
    float *d = call->dst;
    switch (call->kind) {
    case CORE_COLL_ALL_REDUCE:
        for (uint64_t i = 0; i < call->count; i++)
            d[i] = s[i] * 4;
        break;
    case CORE_COLL_ALL_GATHER:
        for (uint64_t i = 0; i < call->dst_count; i++)
            d[i] = s[i % call->count];
        break;
    default:
        memset(d, 0, call->dst_count * 4);
        break;
    }
    return EMU_OK;
}

/* The v-collectives in a world of 4 ranks whose inputs and metadata all
 * equal this one's, this one being rank 0: every rank sends rank 0 the
 * chunk that this rank's metadata sends to rank 0. */
static struct core_coll_vcall last_vcall;

static emu_status fake_run_v(void *user, const struct core_coll_vcall *call, char *err,
                             size_t cap)
{
    (void)user;
    (void)err;
    (void)cap;
    last_vcall = *call;
    const float *s = call->src;
    float *d = call->dst;
    uint64_t k = call->send_counts[0], from = call->send_displs[0];
    for (uint32_t r = 0; r < 4; r++) {
        uint64_t at = call->recv_displs != NULL ? call->recv_displs[r] : r * (call->dst_count / 4);
        memcpy(d + at, s + from, k * 4);
        call->recv_counts[r] = k;
    }
    return EMU_OK;
}

static uint32_t fake_group(void *user, uint32_t group)
{
    (void)user;
    return group == 0 ? 4 : 0;
}

/* ---- cores on their own threads (core_run_threads) ---------------------------- */

static bool pair_split;                  /* run_pair gives core_run threads */
static bool pair_race;                   /* run_pair runs the race checker */
static pthread_t pair_thread[2];         /* core 1's thread */
static int pair_started;                 /* threads started so far */

/* What a started thread runs. */
struct pair_start {
    void (*fn)(void *arg);  /* the core's rounds */
    void *arg;              /* their argument */
};
static struct pair_start pair_job[2];

static void *pair_main(void *arg)
{
    struct pair_start *j = arg;
    j->fn(j->arg);
    return NULL;
}

static bool pair_start(void *user, uint32_t core, void (*fn)(void *arg), void *arg)
{
    (void)user;
    if (core != 1)
        return false;
    pair_job[core] = (struct pair_start){fn, arg};
    pair_started++;
    return pthread_create(&pair_thread[core], NULL, pair_main, &pair_job[core]) == 0;
}

static void pair_join(void *user, uint32_t core)
{
    (void)user;
    pthread_join(pair_thread[core], NULL);
}

static const struct core_run_threads pair_threads = {NULL, pair_start, pair_join};

static int setup(void **state)
{
    static struct pair p;
    core_lnc_init(&p.lnc, 2);
    for (uint32_t c = 0; c < 2; c++) {
        p.h[c] = harness_new(3);
        p.iface[c] = (struct core_coll){&p, c, &p.lnc, fake_run, fake_scratch, fake_group,
                                        fake_run_v};
        p.h[c]->prog.coll = &p.iface[c];
    }
    fake_status = EMU_OK;
    *state = &p;
    return 0;
}

static int teardown(void **state)
{
    struct pair *p = *state;
    harness_free(p->h[0]);
    harness_free(p->h[1]);
    core_lnc_fini(&p->lnc);
    return 0;
}

static emu_status run_pair(struct pair *p, char *report, size_t cap)
{
    struct core *cores[2] = {p->h[0]->core, p->h[1]->core};
    const struct core_program *progs[2] = {&p->h[0]->prog, &p->h[1]->prog};
    struct core_run_opts opts = {10000, pair_race, 0, false, NULL,
                                 pair_split ? &pair_threads : NULL};
    core_lnc_fini(&p->lnc);
    core_lnc_init(&p->lnc, 2);
    return core_run(cores, progs, 2, &opts, report, cap);
}

static struct isa_insn *add_sendrecv(struct harness *h, uint32_t to, uint32_t from, uint64_t dst,
                                     uint64_t src)
{
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_sendrecv);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, dst, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, src, NUM_DT_FP32, 16);
    in->imm[0].i = to;
    in->imm[1].i = from;
    return in;
}

static void fill_tile(struct harness *h, uint64_t off, float base)
{
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t i = 0; i < 16; i++) {
            float v = base + (float)(p * 16 + i);
            memcpy(harness_sbuf_ptr(h, p, off + i * 4), &v, 4);
        }
}

static bool tile_is(struct harness *h, uint64_t off, float base)
{
    for (uint32_t p = 0; p < 4; p++)
        for (uint32_t i = 0; i < 16; i++) {
            float v;
            memcpy(&v, harness_sbuf_ptr(h, p, off + i * 4), 4);
            if (v != base + (float)(p * 16 + i))
                return false;
        }
    return true;
}

/* The two cores swap tiles, in place (dst == src). */
static void test_sendrecv_swap(void **state)
{
    struct pair *p = *state;
    char report[4096];
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    fill_tile(p->h[0], 0, 1000);
    fill_tile(p->h[1], 0, 2000);
    add_sendrecv(p->h[0], 1, 1, 0, 0);
    add_sendrecv(p->h[1], 0, 0, 0, 0);
    emu_status st0 = run_pair(p, report, sizeof report);
    if (st0 != EMU_OK)
        print_message("%s", report);
    assert_int_equal(st0, EMU_OK);
    assert_true(tile_is(p->h[0], 0, 2000));
    assert_true(tile_is(p->h[1], 0, 1000));
    /* a core sending to itself gets its own data back */
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    add_sendrecv(p->h[0], 0, 0, 4096, 0);
    emu_status st = run_pair(p, report, sizeof report);
    if (st != EMU_OK)
        print_message("%s", report);
    assert_int_equal(st, EMU_OK);
    assert_true(tile_is(p->h[0], 4096, 2000));
}

/* Core 1 has no matching half: a deadlock report, not a hang. */
static void test_sendrecv_unmatched(void **state)
{
    struct pair *p = *state;
    char report[4096];
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    add_sendrecv(p->h[0], 1, 1, 0, 0);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "deadlock"));
    add_sendrecv(p->h[1], 2, 0, 0, 0);  /* core 2 does not exist */
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "2 physical cores"));
}

/* Core 0 reads what core 1 writes after the barrier; without it, before
 * (one thread only: on two, the run without the barrier is a race). */
static void test_core_barrier(void **state)
{
    struct pair *p = *state;
    char report[4096];
    static float x[16], y[16], v[16];
    for (int i = 0; i < 16; i++)
        v[i] = (float)i + 0.5f;
    for (int with = pair_split ? 1 : 0; with < 2; with++) {
        memset(x, 0, sizeof x);
        memset(y, 0, sizeof y);
        for (int c = 0; c < 2; c++) {
            harness_clear(p->h[c]);
            if (p->h[c]->prog.nvars == 0) {
                harness_var(p->h[c], 1, "x", x, sizeof x);
                harness_var(p->h[c], 2, "y", y, sizeof y);
                harness_var(p->h[c], 3, "v", v, sizeof v);
            }
        }
        const int32_t d[1][2] = {{1, 16}};
        struct isa_insn *in;
        if (with) {
            in = harness_add(p->h[0], ISA_ENG_SP, ISA_OP_core_barrier);
            in->ap[1] = harness_hbm(1, 0, 1, 16, NUM_DT_FP32, 1, d);
        }
        in = harness_add(p->h[0], ISA_ENG_SP, ISA_OP_dma_copy);  /* y = x */
        in->ap[0] = harness_hbm(2, 0, 1, 16, NUM_DT_FP32, 1, d);
        in->ap[1] = harness_hbm(1, 0, 1, 16, NUM_DT_FP32, 1, d);
        in = harness_add(p->h[1], ISA_ENG_SP, ISA_OP_dma_copy);  /* x = v */
        in->ap[0] = harness_hbm(1, 0, 1, 16, NUM_DT_FP32, 1, d);
        in->ap[1] = harness_hbm(3, 0, 1, 16, NUM_DT_FP32, 1, d);
        if (with) {
            in = harness_add(p->h[1], ISA_ENG_SP, ISA_OP_core_barrier);
            in->ap[1] = harness_hbm(1, 0, 1, 16, NUM_DT_FP32, 1, d);
        }
        assert_int_equal(run_pair(p, report, sizeof report), EMU_OK);
        assert_true(y[5] == (with ? 5.5f : 0.0f));
    }
    /* a mask naming a core the logical core lacks */
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    const int32_t d[1][2] = {{1, 16}};
    struct isa_insn *in = harness_add(p->h[0], ISA_ENG_SP, ISA_OP_core_barrier);
    in->ap[1] = harness_hbm(1, 0, 1, 16, NUM_DT_FP32, 1, d);
    in->imm[0].i = 5;
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
}

/* Both cores have work and wait for each other for ever (core 0 at a
 * barrier, core 1 in a sendrecv nobody answers): the same deadlock report
 * on one thread and on two. */
static void test_deadlock_both(void **state)
{
    struct pair *p = *state;
    static float x[16];
    static char report[2][4096];
    const int32_t d[1][2] = {{1, 16}};
    bool was = pair_split;
    for (int split = 0; split < 2; split++) {
        pair_split = split;
        for (int c = 0; c < 2; c++) {
            harness_clear(p->h[c]);
            if (p->h[c]->prog.nvars == 0)
                harness_var(p->h[c], 1, "x", x, sizeof x);
        }
        struct isa_insn *in = harness_add(p->h[0], ISA_ENG_POOL, ISA_OP_core_barrier);
        in->ap[1] = harness_hbm(1, 0, 1, 16, NUM_DT_FP32, 1, d);
        harness_add(p->h[1], ISA_ENG_ACT, ISA_OP_nop);
        add_sendrecv(p->h[1], 0, 0, 0, 0);
        assert_int_equal(run_pair(p, report[split], sizeof report[split]), EMU_EXEC_ERR);
        assert_non_null(strstr(report[split], "deadlock"));
    }
    pair_split = was;
    assert_string_equal(report[0], report[1]);
    assert_true(pair_started > 0);  /* the second run was split */
}

/* all_reduce from SBUF rows (staged) into SBUF, through the interface. */
static void test_cross_staged(void **state)
{
    struct pair *p = *state;
    struct harness *h = p->h[0];
    char report[4096];
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    fill_tile(h, 0, 10);
    struct isa_insn *in = harness_add(h, ISA_ENG_ACT, ISA_OP_all_reduce);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_OK);
    assert_int_equal(last_call.kind, CORE_COLL_ALL_REDUCE);
    assert_int_equal(last_call.count, 64);
    for (uint32_t r = 0; r < 4; r++) {
        float v;
        memcpy(&v, harness_sbuf_ptr(h, r, 8192 + 12), 4);
        assert_true(v == 4 * (10 + (float)(r * 16 + 3)));
    }
    /* all_gather needs ranks x src elements in dst */
    harness_clear(h);
    in = harness_add(h, ISA_ENG_SP, ISA_OP_all_gather);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "ranks x src"));
    /* dtypes must agree */
    harness_clear(h);
    in = harness_add(h, ISA_ENG_SP, ISA_OP_all_reduce);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_BF16, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    /* a group that does not exist */
    harness_clear(h);
    in = harness_add(h, ISA_ENG_SP, ISA_OP_all_reduce);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    in->imm[0].i = 7;
    assert_int_equal(run_pair(p, report, sizeof report), EMU_INVALID);
}

/* The interface's failure is the instruction's status, with its cause. */
static void test_cross_failure(void **state)
{
    struct pair *p = *state;
    struct harness *h = p->h[0];
    char report[4096];
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_permute);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    in->imm[1].i = 1;
    in->imm[2].i = 3;
    fake_status = EMU_COLL_STALL;
    assert_int_equal(run_pair(p, report, sizeof report), EMU_COLL_STALL);
    assert_non_null(strstr(report, "rank 3 is gone"));
    fake_status = EMU_OK;
    assert_int_equal(last_call.send_to, 1);
    assert_int_equal(last_call.recv_from, 3);
    /* no interface at all: the run has nobody to talk to */
    h->prog.coll = NULL;
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    h->prog.coll = &p->iface[0];
}

/* Metadata rows of 4 u32 in SBUF partition 0 at off. */
static void put_meta(struct harness *h, uint64_t off, const uint32_t *w, uint32_t n)
{
    memcpy(harness_sbuf_ptr(h, 0, off), w, n * 4);
}

static struct isa_insn *add_v(struct harness *h, unsigned op, uint32_t rows, bool known,
                              bool rdispls)
{
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, op);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    in->ap[2] = harness_tile(ISA_MEM_SBUF, 0, 1, 16384, NUM_DT_UINT32, rows * 4);
    in->flags = (uint8_t)((known ? 1u : 0u) | (rdispls ? 2u : 0u));
    return in;
}

/* Both cores cleared; on core 0 the source tile (10 + j), the destination
 * tile (-100 + j) and n metadata words at 16384. Core 0's harness. */
static struct harness *v_stage(struct pair *p, const uint32_t *meta, uint32_t n)
{
    harness_clear(p->h[0]);
    harness_clear(p->h[1]);
    struct harness *h = p->h[0];
    fill_tile(h, 0, 10);
    fill_tile(h, 8192, -100);
    put_meta(h, 16384, meta, n);
    return h;
}

/* Element j of the destination tile (16 per partition). */
static float v_dst(struct harness *h, uint32_t j)
{
    float v;
    memcpy(&v, harness_sbuf_ptr(h, j / 16, 8192 + (j % 16) * 4), 4);
    return v;
}

/* all_to_all_v from staged SBUF rows: chunks land in equal slots, the rest
 * of dst keeps its value, row 2 receives the counts unless they are known. */
static void test_v_all_to_all(void **state)
{
    struct pair *p = *state;
    char report[4096];
    const uint32_t meta[12] = {5, 0, 3, 7, 2, 7, 7, 9, 99, 99, 99, 99};
    struct harness *h = v_stage(p, meta, 12);
    add_v(h, ISA_OP_all_to_all_v, 3, false, false);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_OK);
    assert_int_equal(last_vcall.kind, CORE_COLL_V_ALL_TO_ALL);
    assert_int_equal(last_vcall.src_count, 64);
    assert_int_equal(last_vcall.dst_count, 64);
    assert_null(last_vcall.recv_displs);
    assert_int_equal(last_vcall.send_displs[3], 9);
    for (uint32_t r = 0; r < 4; r++)  /* slot r = partition r: src elements 2..6 then untouched */
        for (uint32_t i = 0; i < 16; i++) {
            assert_true(v_dst(h, r * 16 + i) ==
                        (i < 5 ? 10 + (float)(2 + i) : -100 + (float)(r * 16 + i)));
        }
    uint32_t got[12];
    memcpy(got, harness_sbuf_ptr(h, 0, 16384), sizeof got);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(got[8 + r], 5);
    /* recv_counts_known: row 2 left alone */
    put_meta(h, 16384, meta, 12);
    harness_clear(h);
    add_v(h, ISA_OP_all_to_all_v, 3, true, false);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_OK);
    memcpy(got, harness_sbuf_ptr(h, 0, 16384), sizeof got);
    assert_int_equal(got[8], 99);
    /* metadata of the wrong shape, or of a float type */
    harness_clear(h);
    add_v(h, ISA_OP_all_to_all_v, 4, false, false);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "3 rows of 4"));
    harness_clear(h);
    struct isa_insn *in = add_v(h, ISA_OP_all_to_all_v, 3, false, false);
    in->ap[2].dtype = NUM_DT_FP32;
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    /* receive displacements are NeuronCore-v4 only (this core is v3) */
    harness_clear(h);
    add_v(h, ISA_OP_all_to_all_v, 4, false, true);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "NeuronCore-v4"));
    /* and the loader's gate: v3 for the op, v4 with receive displacements */
    struct isa_insn *v = add_v(h, ISA_OP_all_to_all_v, 3, false, false);
    assert_int_equal(isa_insn_min_gen(v, NULL, 0), 3);
    v->flags = 2;
    assert_int_equal(isa_insn_min_gen(v, NULL, 0), 4);
    v = add_v(h, ISA_OP_all_gather_v, 4, false, true);
    assert_int_equal(isa_insn_min_gen(v, NULL, 0), 3);
}

/* all_gather_v with receive displacements: one chunk, placed per rank. */
static void test_v_all_gather(void **state)
{
    struct pair *p = *state;
    char report[4096];
    const uint32_t meta[16] = {3, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0, 60, 40, 20, 0};
    struct harness *h = v_stage(p, meta, 16);
    add_v(h, ISA_OP_all_gather_v, 4, false, true);
    assert_int_equal(run_pair(p, report, sizeof report), EMU_OK);
    assert_int_equal(last_vcall.kind, CORE_COLL_V_ALL_GATHER);
    assert_non_null(last_vcall.recv_displs);
    float want[64];  /* rank r's chunk (src elements 20..22) at 60 - 20 r, the rest untouched */
    for (uint32_t j = 0; j < 64; j++)
        want[j] = -100 + (float)j;
    for (uint32_t r = 0; r < 4; r++)
        for (uint32_t t = 0; t < 3; t++)
            want[60 - 20 * r + t] = 10 + (float)(20 + t);
    for (uint32_t j = 0; j < 64; j++)
        assert_true(v_dst(h, j) == want[j]);
    uint32_t got[16];
    memcpy(got, harness_sbuf_ptr(h, 0, 16384), sizeof got);
    assert_int_equal(got[8], 3);
    assert_int_equal(got[12], 60);
}

/* ---- the race checker between cores (emu/core/race_xcore.c, race_hbm.c) ---- */

static float rx[16], ry[16], rv[16], rz[16];

/* Both cores see x, y, v, z (16 floats each) and have empty streams. */
static void race_vars(struct pair *p)
{
    for (int c = 0; c < 2; c++) {
        harness_clear(p->h[c]);
        if (core_find_var(&p->h[c]->prog, 11) == NULL) {
            harness_var(p->h[c], 11, "x", rx, sizeof rx);
            harness_var(p->h[c], 12, "y", ry, sizeof ry);
            harness_var(p->h[c], 13, "v", rv, sizeof rv);
            harness_var(p->h[c], 14, "z", rz, sizeof rz);
        }
    }
    for (int i = 0; i < 16; i++) {
        rx[i] = ry[i] = rz[i] = 0;
        rv[i] = (float)i + 0.5f;
    }
}

/* dst[off .. off + n * step) = src[...] on SP, elements `step` apart. */
static void race_copy(struct harness *h, uint32_t dst, uint32_t src, uint64_t off, uint32_t n,
                      int32_t step)
{
    const int32_t d[1][2] = {{step, (int32_t)n}};
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_dma_copy);
    in->ap[0] = harness_hbm(dst, off, 1, 16, NUM_DT_FP32, 1, d);
    in->ap[1] = harness_hbm(src, off, 1, 16, NUM_DT_FP32, 1, d);
}

static void race_barrier(struct harness *h)
{
    const int32_t d[1][2] = {{1, 16}};
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_core_barrier);
    in->ap[1] = harness_hbm(11, 0, 1, 16, NUM_DT_FP32, 1, d);
}

static emu_status race_run(struct pair *p, char *report, size_t cap)
{
    pair_race = true;
    emu_status st = run_pair(p, report, cap);
    pair_race = false;
    return st;
}

/* Core 0 reads x while core 1 writes it: a race, unless a core_barrier
 * orders core 1's write before core 0's read. */
static void test_race_read_write(void **state)
{
    struct pair *p = *state;
    char report[4096];
    for (int with = 0; with < 2; with++) {
        race_vars(p);
        if (with)
            race_barrier(p->h[0]);
        race_copy(p->h[0], 12, 11, 0, 16, 1);  /* y = x */
        race_copy(p->h[1], 11, 13, 0, 16, 1);  /* x = v */
        if (with)
            race_barrier(p->h[1]);
        emu_status st = race_run(p, report, sizeof report);
        if (with) {
            assert_int_equal(st, EMU_OK);
            assert_true(ry[5] == 5.5f);
        } else {
            assert_int_equal(st, EMU_EXEC_ERR);
            assert_non_null(strstr(report, "race: no semaphore, core_barrier, sendrecv or "
                                           "collective orders these two accesses"));
            assert_non_null(strstr(report, "core 0 sp[0] reads HBM x bytes [0, 64)"));
            assert_non_null(strstr(report, "core 1 sp[0] writes HBM x bytes [0, 64)"));
        }
    }
}

/* Both cores zero all of y, then store their own half (the shape of the
 * NKI Library's folded max store): the zeroing of one core and the store
 * of the other race unless a core_barrier sits between them. */
static void test_race_zero_then_store(void **state)
{
    struct pair *p = *state;
    char report[4096];
    for (int with = 0; with < 2; with++) {
        race_vars(p);
        for (uint32_t c = 0; c < 2; c++) {
            race_copy(p->h[c], 12, 14, 0, 16, 1);  /* y = z (zeros) */
            if (with)
                race_barrier(p->h[c]);
            race_copy(p->h[c], 12, 13, c * 32, 8, 1);  /* y[8c..8c+8) = v[...] */
        }
        emu_status st = race_run(p, report, sizeof report);
        if (with) {
            assert_int_equal(st, EMU_OK);
            for (int i = 0; i < 16; i++)
                assert_true(ry[i] == rv[i]);
        } else {
            assert_int_equal(st, EMU_EXEC_ERR);
            assert_non_null(strstr(report, "writes HBM y"));
        }
    }
}

/* Rows interleaved (core c writes the elements 2i + c): the spans overlap,
 * the bytes do not; no race. Both writing one element, other values: a
 * race (the same value: none, as the zeroing above shows). */
static void test_race_interleaved(void **state)
{
    struct pair *p = *state;
    char report[4096];
    race_vars(p);
    for (uint32_t c = 0; c < 2; c++)
        race_copy(p->h[c], 12, 13, c * 4, 8, 2);
    assert_int_equal(race_run(p, report, sizeof report), EMU_OK);
    for (int i = 0; i < 16; i++)
        assert_true(ry[i] == rv[i]);
    race_vars(p);
    race_copy(p->h[0], 12, 13, 0, 8, 2);  /* elements 0, 2, .. 14 */
    race_copy(p->h[1], 12, 14, 56, 1, 1); /* element 14 = 0 */
    assert_int_equal(race_run(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "core 1 sp[0] writes HBM y bytes [56, 60)"));
}

/* Core c's SP: a dma_copy of SBUF partitions 0.. (4 floats each, all
 * value val) into y at the rows (4 floats) or element offsets that the
 * SBUF index at partitions 40.. holds (indirect=dst): rows > 1 scatters
 * rows of y; rows 1 is a run-time shift of the 2 x 4 block at y[0..8). */
static void race_indexed(struct harness *h, uint32_t rows, const uint32_t *idx, float val)
{
    const int32_t row[1][2] = {{1, 4}}, blk[2][2] = {{4, 2}, {1, 4}};
    uint32_t parts = rows > 1 ? rows : 2;
    for (uint32_t p = 0; p < parts; p++)
        for (uint32_t i = 0; i < 4; i++)
            memcpy(harness_sbuf_ptr(h, p, i * 4), &val, 4);
    for (uint32_t r = 0; r < rows; r++)
        memcpy(harness_sbuf_ptr(h, 40 + r, 0), &idx[r], 4);
    struct isa_insn *in = harness_add(h, ISA_ENG_SP, ISA_OP_dma_copy);
    in->ap[0] = rows > 1 ? harness_hbm(12, 0, rows, 4, NUM_DT_FP32, 1, row)
                         : harness_hbm(12, 0, 1, 1, NUM_DT_FP32, 2, blk);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, parts, 0, NUM_DT_FP32, 4);
    in->ap[2] = harness_tile(ISA_MEM_SBUF, 40, rows, 0, NUM_DT_UINT32, 1);
    in->enums[1] = ISA_INDIR_dst;
}

/* Indexed DMAs of the two cores into y: the checker lists the bytes the
 * index chose when the DMA ran, so rows apart are no race and a row in
 * common with other values is one; likewise for the one-row shift. */
static void test_race_indexed(void **state)
{
    struct pair *p = *state;
    char report[4096];
    const uint32_t even[2] = {0, 2}, odd[2] = {3, 1}, mixed[2] = {1, 2};
    race_vars(p);
    race_indexed(p->h[0], 2, even, 1.0f);
    race_indexed(p->h[1], 2, odd, 2.0f);
    assert_int_equal(race_run(p, report, sizeof report), EMU_OK);
    for (int i = 0; i < 16; i++)
        assert_true(ry[i] == ((i / 4) % 2 ? 2.0f : 1.0f));
    race_vars(p);
    race_indexed(p->h[0], 2, even, 1.0f);
    race_indexed(p->h[1], 2, mixed, 2.0f);  /* row 2 in common */
    assert_int_equal(race_run(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "writes HBM y, rows an index chose (2 byte runs in [0, 48))"));
    assert_non_null(strstr(report, "writes HBM y, rows an index chose (1 byte runs in [16, 48))"));
    const uint32_t at0 = 0, at1 = 8, at_mid = 4;
    race_vars(p);
    race_indexed(p->h[0], 1, &at0, 1.0f);
    race_indexed(p->h[1], 1, &at1, 2.0f);
    assert_int_equal(race_run(p, report, sizeof report), EMU_OK);
    assert_true(ry[7] == 1.0f && ry[8] == 2.0f);
    race_vars(p);
    race_indexed(p->h[0], 1, &at0, 1.0f);
    race_indexed(p->h[1], 1, &at_mid, 2.0f);  /* y[4..8) in common */
    assert_int_equal(race_run(p, report, sizeof report), EMU_EXEC_ERR);
    assert_non_null(strstr(report, "rows an index chose (1 byte runs in [16, 48))"));
}

/* A kernel run whole on each core (the NKI Library's router_topk without
 * sharding): both zero y, then scatter the same rows with the same
 * values. A late zeroing of one core undoes the other's scatter, but its
 * own scatter follows: every order ends the same, no race. With other
 * values on core 1 the order decides the rows: a race, found at the end. */
static void test_race_zero_scatter_each(void **state)
{
    struct pair *p = *state;
    char report[4096];
    const uint32_t rows[2] = {1, 3};
    for (int other = 0; other < 2; other++) {
        race_vars(p);
        for (uint32_t c = 0; c < 2; c++) {
            race_copy(p->h[c], 12, 14, 0, 16, 1);  /* y = z (zeros) */
            race_indexed(p->h[c], 2, rows, c == 1 && other ? 2.0f : 1.0f);
        }
        emu_status st = race_run(p, report, sizeof report);
        if (other) {
            assert_int_equal(st, EMU_EXEC_ERR);
            assert_non_null(strstr(report, "rows an index chose (2 byte runs in [16, 64))"));
            continue;
        }
        assert_int_equal(st, EMU_OK);
        for (int i = 0; i < 16; i++)
            assert_true(ry[i] == ((i / 4) % 2 ? 1.0f : 0.0f));
    }
}

/* Each core stores y, then reads it back (a kernel run whole on each
 * core, its result copied onto itself at the end): the other core's
 * store leaves what the reader's own store left, so the read sees the
 * same in either order. When core 1 stored other values, it is a race. */
static void test_race_store_read_each(void **state)
{
    struct pair *p = *state;
    char report[4096];
    for (int other = 0; other < 2; other++) {
        race_vars(p);
        for (uint32_t c = 0; c < 2; c++) {
            race_copy(p->h[c], 12, c == 1 && other ? 14 : 13, 0, 16, 1);  /* y = v (or z) */
            race_copy(p->h[c], 11, 12, 0, 16, 1);                          /* x = y */
        }
        emu_status st = race_run(p, report, sizeof report);
        assert_int_equal(st, other ? EMU_EXEC_ERR : EMU_OK);
        if (!other)
            assert_true(rx[3] == rv[3]);
    }
}

/* A sendrecv orders what each core did before it before what the other
 * does after it; so does the chain of an execution's collectives. */
static void test_race_sendrecv_coll(void **state)
{
    struct pair *p = *state;
    char report[4096];
    race_vars(p);
    race_copy(p->h[1], 11, 13, 0, 16, 1);  /* x = v */
    add_sendrecv(p->h[1], 0, 0, 0, 0);
    add_sendrecv(p->h[0], 1, 1, 0, 0);
    race_copy(p->h[0], 12, 11, 0, 16, 1);  /* y = x */
    emu_status st = race_run(p, report, sizeof report);
    if (st != EMU_OK)
        print_message("%s", report);
    assert_int_equal(st, EMU_OK);
    assert_true(ry[3] == 3.5f);
    race_vars(p);
    race_copy(p->h[0], 11, 13, 0, 16, 1);  /* core 0: x = v, then all_reduce */
    struct isa_insn *in = harness_add(p->h[0], ISA_ENG_SP, ISA_OP_all_reduce);
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    in = harness_add(p->h[1], ISA_ENG_SP, ISA_OP_all_reduce);  /* core 1: the next one */
    in->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 4, 8192, NUM_DT_FP32, 16);
    in->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 4, 0, NUM_DT_FP32, 16);
    race_copy(p->h[1], 12, 11, 0, 16, 1);  /* then y = x */
    assert_int_equal(race_run(p, report, sizeof report), EMU_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sendrecv_swap),
        cmocka_unit_test(test_sendrecv_unmatched),
        cmocka_unit_test(test_core_barrier),
        cmocka_unit_test(test_deadlock_both),
        cmocka_unit_test(test_cross_staged),
        cmocka_unit_test(test_cross_failure),
        cmocka_unit_test(test_v_all_to_all),
        cmocka_unit_test(test_v_all_gather),
        cmocka_unit_test(test_race_read_write),
        cmocka_unit_test(test_race_zero_then_store),
        cmocka_unit_test(test_race_interleaved),
        cmocka_unit_test(test_race_indexed),
        cmocka_unit_test(test_race_zero_scatter_each),
        cmocka_unit_test(test_race_store_read_each),
        cmocka_unit_test(test_race_sendrecv_coll),
    };
    const struct CMUnitTest split_tests[] = {
        cmocka_unit_test(test_sendrecv_swap),
        cmocka_unit_test(test_sendrecv_unmatched),
        cmocka_unit_test(test_core_barrier),
        cmocka_unit_test(test_deadlock_both),
    };
    int bad = cmocka_run_group_tests(tests, setup, teardown);
    pair_split = true;
    bad += cmocka_run_group_tests_name("split", split_tests, setup, teardown);
    return bad;
}
