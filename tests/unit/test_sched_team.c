/*
 * test_sched_team.c: one core's engines as a team of host threads
 * (emu/core/sched.c, core_set_engine_threads): a pipeline over the five
 * engines, ordered only by semaphores, gives the same output bits, final
 * semaphores and device time as the interleaved one-thread run, run
 * after run; a stuck team is reported with each engine's pending
 * instruction; large instructions of a team's engines split over the
 * helpers the team left idle, same bits; a failing instruction stops the
 * team with its report; a
 * program the team cannot take (sequencer semaphores, jumps) and one
 * thread (par_configure(1)) run interleaved. The threads suite runs it
 * under ThreadSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "emu/core/cost.h"
#include "emu/core/par.h"
#include "exec_harness.h"

#define COLS 2048u               /* fp32 elements per partition of a tile (1 MiB: its
                                    DMAs and DVE/POOL ops offer parts to split) */
#define ROUNDS 4u                /* pipeline rounds */
#define TILE (128u * COLS)       /* elements of a tile */
#define SB_A 0u                  /* SBUF byte offsets of the tiles */
#define SB_B (COLS * 4u)
#define SB_C (2u * COLS * 4u)
#define SB_D (3u * COLS * 4u)

static float in_data[ROUNDS * TILE];   /* var 1: one input tile per round */
static float out_data[ROUNDS * TILE];  /* var 2: one output tile per round */

static void wait_on(struct isa_insn *insn, int slot, uint16_t sem, uint32_t value)
{
    insn->wait[slot] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, sem, value};
}

static void signal_on(struct isa_insn *insn, uint16_t sem)
{
    insn->signal[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_SEMOP_add, sem, 1};
}

static struct isa_ap tile(uint32_t off)
{
    return harness_tile(ISA_MEM_SBUF, 0, 128, off, ISA_DT_F32, COLS);
}

static struct isa_ap hbm_tile(uint32_t var, uint32_t round)
{
    const int32_t d[1][2] = {{1, (int32_t)COLS}};
    return harness_hbm(var, (uint64_t)round * TILE * 4, 128, (int32_t)COLS, ISA_DT_F32, 1, d);
}

/* Round r: SP loads A; DVE B = A * A; ACT C = A; POOL D = B + C; PE a nop
 * after POOL; SP stores D. s0..s4 count the rounds each step finished. */
static void build(struct harness *h)
{
    harness_clear(h);
    for (uint32_t r = 0; r < ROUNDS; r++) {
        struct isa_insn *i = harness_add(h, ISA_ENG_SP, ISA_OP_dma_copy);
        i->ap[0] = tile(SB_A);
        i->ap[1] = hbm_tile(1, r);
        if (r > 0)
            wait_on(i, 0, 3, r); /* POOL finished the round before: A, B, C are free */
        signal_on(i, 0);
        i = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_tensor);
        i->ap[0] = tile(SB_B);
        i->ap[1] = tile(SB_A);
        i->ap[2] = tile(SB_A);
        i->enums[0] = ISA_ALU_multiply;
        wait_on(i, 0, 0, r + 1);
        signal_on(i, 1);
        i = harness_add(h, ISA_ENG_ACT, ISA_OP_tensor_copy);
        i->ap[0] = tile(SB_C);
        i->ap[1] = tile(SB_A);
        wait_on(i, 0, 0, r + 1);
        signal_on(i, 2);
        i = harness_add(h, ISA_ENG_POOL, ISA_OP_tensor_tensor);
        i->ap[0] = tile(SB_D);
        i->ap[1] = tile(SB_B);
        i->ap[2] = tile(SB_C);
        i->enums[0] = ISA_ALU_add;
        wait_on(i, 0, 1, r + 1);
        wait_on(i, 1, 2, r + 1);
        signal_on(i, 3);
        i = harness_add(h, ISA_ENG_PE, ISA_OP_nop);
        wait_on(i, 0, 3, r + 1);
        signal_on(i, 4);
        i = harness_add(h, ISA_ENG_SP, ISA_OP_dma_copy);
        i->ap[0] = hbm_tile(2, r);
        i->ap[1] = tile(SB_D);
        wait_on(i, 0, 3, r + 1);
    }
}

static int setup(void **state)
{
    struct harness *h = harness_new(3);
    for (size_t i = 0; i < ROUNDS * TILE; i++)
        in_data[i] = (float)((i * 2654435761u) % 1000003u) * 1e-6f - 0.5f;
    harness_var(h, 1, "in", in_data, sizeof in_data);
    harness_var(h, 2, "out", out_data, sizeof out_data);
    *state = h;
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    core_set_engine_threads(CORE_ENGINES_AUTO);
    par_configure(0);
    return 0;
}

/* What one run leaves. */
struct outcome {
    float out[ROUNDS * TILE];    /* the output variable */
    uint32_t sem[5];             /* s0..s4 */
    double end_ns;               /* device time */
    uint64_t insns;              /* instructions costed */
    unsigned long long teams;    /* runs as a team (0 or 1) */
    unsigned long long handoffs; /* par hand-offs: the team's and its instructions' splits */
};

static emu_status run(struct harness *h, int mode, unsigned threads, struct outcome *o)
{
    static struct cost_run cost;
    par_configure(threads);
    core_set_engine_threads(mode);
    memset(out_data, 0, sizeof out_data);
    cost_begin(&cost, 3, NULL, 0);
    h->opts.cost = &cost;
    unsigned long long h0 = par_handoffs(), t0 = core_team_runs();
    emu_status st = harness_run(h);
    o->teams = core_team_runs() - t0;
    o->handoffs = par_handoffs() - h0;
    memcpy(o->out, out_data, sizeof o->out);
    memcpy(o->sem, h->core->sem, sizeof o->sem);
    o->end_ns = cost.end_ns;
    o->insns = cost.insns;
    h->opts.cost = NULL;
    return st;
}

static void test_same_as_interleaved(void **state)
{
    struct harness *h = *state;
    static struct outcome one, team;
    build(h);
    assert_int_equal(run(h, CORE_ENGINES_INTERLEAVED, 3, &one), EMU_OK);
    assert_int_equal(one.teams, 0);
    for (uint32_t s = 0; s < 4; s++)
        assert_int_equal(one.sem[s], ROUNDS);
    for (size_t i = 0; i < ROUNDS * TILE; i++) {
        volatile float sq = in_data[i] * in_data[i];
        float want = sq + in_data[i];
        assert_memory_equal(&one.out[i], &want, sizeof want);
    }
    for (int rep = 0; rep < 10; rep++) {
        assert_int_equal(run(h, CORE_ENGINES_TEAM, 3, &team), EMU_OK);
        assert_int_equal(team.teams, 1);
        assert_memory_equal(one.out, team.out, sizeof one.out);
        assert_memory_equal(one.sem, team.sem, sizeof one.sem);
        assert_true(one.end_ns == team.end_ns);
        assert_int_equal(one.insns, team.insns);
    }
    /* a team of 3 on 6 threads: its engines' large instructions split over
     * the idle helpers (forced), the same bits */
    par_force_split(true);
    for (int rep = 0; rep < 5; rep++) {
        assert_int_equal(run(h, CORE_ENGINES_TEAM, 6, &team), EMU_OK);
        assert_int_equal(team.teams, 1);
        assert_true(team.handoffs > 1);
        assert_memory_equal(one.out, team.out, sizeof one.out);
        assert_true(one.end_ns == team.end_ns);
    }
    par_force_split(false);
    /* one thread: interleaved even when a team is asked for */
    assert_int_equal(run(h, CORE_ENGINES_TEAM, 1, &team), EMU_OK);
    assert_int_equal(team.teams, 0);
    assert_memory_equal(one.out, team.out, sizeof one.out);
}

static void test_stuck_team(void **state)
{
    struct harness *h = *state;
    static struct outcome o;
    build(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_DVE, ISA_OP_nop);
    wait_on(i, 0, 9, 1); /* nothing signals s9 */
    assert_int_equal(run(h, CORE_ENGINES_TEAM, 3, &o), EMU_EXEC_ERR);
    assert_int_equal(o.teams, 1);
    assert_non_null(strstr(h->report, "deadlock"));
    assert_non_null(strstr(h->report, "dve[4]"));
    assert_non_null(strstr(h->report, "waits for semaphore 9"));
    assert_null(strstr(h->report, "sp["));  /* finished engines are not listed */
}

static void test_failing_team(void **state)
{
    struct harness *h = *state;
    static struct outcome o;
    build(h);
    struct isa_insn *i = harness_add(h, ISA_ENG_ACT, ISA_OP_dma_copy);
    i->ap[0] = hbm_tile(2, ROUNDS); /* one tile past the output */
    i->ap[1] = tile(SB_D);
    assert_int_equal(run(h, CORE_ENGINES_TEAM, 3, &o), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "'out'"));
}

/* A program with a sequencer semaphore instruction runs interleaved. */
static void test_not_for_team(void **state)
{
    struct harness *h = *state;
    static struct outcome o;
    build(h);
    struct isa_insn *w = harness_add(h, ISA_ENG_POOL, ISA_OP_sem_wait);
    w->imm[0].i = 3;
    w->imm[1].i = ROUNDS;
    assert_int_equal(run(h, CORE_ENGINES_TEAM, 3, &o), EMU_OK);
    assert_int_equal(o.teams, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_same_as_interleaved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stuck_team, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_team, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_for_team, setup, teardown),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    par_shutdown();
    return failed;
}
