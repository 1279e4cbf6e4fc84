/*
 * test_sched.c: the engine scheduler and the sequencer instructions:
 * semaphore ordering across engines, loops with registers, deadlock and
 * timeout reports, out-of-bounds operands, and the race checker.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "exec_harness.h"

static int setup(void **state)
{
    *state = harness_new(3);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    return 0;
}

static void wait_on(struct isa_insn *insn, uint16_t sem, uint32_t value)
{
    insn->wait[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, sem, value};
}

static void signal_on(struct isa_insn *insn, uint16_t sem, uint32_t value)
{
    insn->signal[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_SEMOP_add, sem, value};
}

/* reg_store writes register rd into one int32 element of HBM var 1. */
static struct isa_insn *store_reg(struct harness *h, enum isa_engine e, unsigned reg,
                                  uint32_t index)
{
    const int32_t one[1][2] = {{1, 1}};
    struct isa_insn *st = harness_add(h, e, ISA_OP_reg_store);
    st->ap[0] = harness_hbm(1, index * 4, 1, 1, ISA_DT_I32, 1, one);
    st->imm[0].i = reg;
    return st;
}

/* SP counts to 10 in a loop; ACT waits for SP's signal, then stores. */
static void test_loop_and_semaphore(void **state)
{
    struct harness *h = *state;
    int32_t out[4] = {0};
    harness_var(h, 1, "out", out, sizeof out);
    struct isa_insn *i = harness_add(h, ISA_ENG_SP, ISA_OP_reg_move);
    i->imm[0].i = 2;
    i->imm[1].i = 0;
    i = harness_add(h, ISA_ENG_SP, ISA_OP_reg_alu); /* r2 += 1 */
    i->imm[0].i = 2;
    i->imm[1].i = 2;
    i->enums[0] = ISA_ALU_add;
    i->imm[2].i = -1;
    i->imm[3].i = 1;
    i = harness_add(h, ISA_ENG_SP, ISA_OP_branch); /* if r2 < 10 goto 1 */
    i->imm[0].i = 2;
    i->enums[0] = ISA_CMP_lt;
    i->imm[1].i = 10;
    i->imm[2].i = 1;
    signal_on(store_reg(h, ISA_ENG_SP, 2, 0), 5, 1);
    i = harness_add(h, ISA_ENG_ACT, ISA_OP_reg_move);
    i->imm[0].i = 3;
    i->imm[1].i = 77;
    wait_on(i, 5, 1);
    store_reg(h, ISA_ENG_ACT, 3, 1);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_int_equal(out[0], 10);
    assert_int_equal(out[1], 77);
}

static void test_deadlock_report(void **state)
{
    struct harness *h = *state;
    wait_on(harness_add(h, ISA_ENG_PE, ISA_OP_nop), 7, 1);
    struct isa_insn *w = harness_add(h, ISA_ENG_DVE, ISA_OP_sem_wait);
    w->imm[0].i = 8;
    w->imm[1].i = 2;
    signal_on(harness_add(h, ISA_ENG_ACT, ISA_OP_nop), 8, 1);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "deadlock"));
    assert_non_null(strstr(h->report, "pe[0]"));
    assert_non_null(strstr(h->report, "dve[0]"));
    assert_non_null(strstr(h->report, "s8=1"));
}

static void test_timeout(void **state)
{
    struct harness *h = *state;
    struct isa_insn *j = harness_add(h, ISA_ENG_POOL, ISA_OP_jump);
    j->imm[0].i = 0;
    h->opts.timeout_ms = 50;
    assert_int_equal(harness_run(h), EMU_TIMEOUT);
    assert_non_null(strstr(h->report, "timeout"));
    h->opts.timeout_ms = 0;
}

static void test_oob_operand(void **state)
{
    struct harness *h = *state;
    int32_t out[4] = {0};
    harness_var(h, 1, "out", out, sizeof out);
    store_reg(h, ISA_ENG_SP, 0, 4); /* element 4 of a 4-element variable */
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "'out'"));
    assert_int_equal(out[3], 0);
}

static void test_halt_stops_engine(void **state)
{
    struct harness *h = *state;
    int32_t out[4] = {0};
    harness_var(h, 1, "out", out, sizeof out);
    struct isa_insn *i = harness_add(h, ISA_ENG_SP, ISA_OP_reg_move);
    i->imm[0].i = 1;
    i->imm[1].i = 5;
    harness_add(h, ISA_ENG_SP, ISA_OP_halt);
    store_reg(h, ISA_ENG_SP, 1, 0);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_int_equal(out[0], 0);
}

/* Two engines write the same SBUF bytes: a race unless a semaphore orders them. */
static void build_race(struct harness *h, bool ordered)
{
    struct isa_insn *a = harness_add(h, ISA_ENG_SP, ISA_OP_reg_store);
    a->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_I32, 1);
    struct isa_insn *b = harness_add(h, ISA_ENG_ACT, ISA_OP_reg_store);
    b->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_I32, 1);
    if (ordered) {
        signal_on(a, 1, 1);
        wait_on(b, 1, 1);
    }
}

static void test_racecheck(void **state)
{
    struct harness *h = *state;
    h->opts.racecheck = true;
    build_race(h, false);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "race"));
    assert_non_null(strstr(h->report, "sp[0]"));
    assert_non_null(strstr(h->report, "act[0]"));
    harness_clear(h);
    build_race(h, true);
    assert_int_equal(harness_run(h), EMU_OK);
    harness_clear(h);
    h->opts.racecheck = false;
    build_race(h, false); /* off: the fixed interleaving runs it */
    assert_int_equal(harness_run(h), EMU_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_loop_and_semaphore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadlock_report, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oob_operand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_halt_stops_engine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_racecheck, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
