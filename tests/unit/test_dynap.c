/*
 * test_dynap.c: on-chip operands with a register offset (emu/core/dynap.c):
 * the shift a register gives a compute operand, its bounds and element
 * checks, its failure report, and the race checker seeing the bytes the
 * operand really touched.
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

/* Partition 0, bytes 0..127: the int32 values 0..31. */
static void fill_row(struct harness *h)
{
    for (int32_t i = 0; i < 32; i++)
        memcpy(harness_sbuf_ptr(h, 0, (uint64_t)i * 4), &i, 4);
}

static void reg_move(struct harness *h, enum isa_engine e, unsigned rd, int64_t value)
{
    struct isa_insn *i = harness_add(h, e, ISA_OP_reg_move);
    i->imm[0].i = rd;
    i->imm[1].i = value;
}

/* engine e: dst (4 int32 at byte 256) = src (4 int32 at byte 0, moved by
 * register 5, at most max bytes). */
static struct isa_insn *dyn_copy(struct harness *h, enum isa_engine e, uint32_t max)
{
    struct isa_insn *c = harness_add(h, e, ISA_OP_tensor_copy);
    c->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 256, ISA_DT_I32, 4);
    c->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, 0, ISA_DT_I32, 4);
    c->ap[1].dyn = ISA_DYN_FREE;
    c->ap[1].dyn_reg = 5;
    c->ap[1].dyn_max = max;
    return c;
}

static int32_t at(struct harness *h, uint64_t off)
{
    int32_t v;
    memcpy(&v, harness_sbuf_ptr(h, 0, off), 4);
    return v;
}

static void test_source_moves(void **state)
{
    struct harness *h = *state;
    fill_row(h);
    reg_move(h, ISA_ENG_DVE, 5, 8);  /* two int32 elements */
    dyn_copy(h, ISA_ENG_DVE, 112);
    assert_int_equal(harness_run(h), EMU_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(at(h, 256 + 4 * (uint64_t)i), 2 + i);
}

static void test_destination_moves(void **state)
{
    struct harness *h = *state;
    fill_row(h);
    reg_move(h, ISA_ENG_ACT, 7, 32);
    struct isa_insn *c = harness_add(h, ISA_ENG_ACT, ISA_OP_tensor_copy);
    c->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 256, ISA_DT_I32, 2);
    c->ap[0].dyn = ISA_DYN_FREE;
    c->ap[0].dyn_reg = 7;
    c->ap[0].dyn_max = 64;
    c->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, 4, ISA_DT_I32, 2);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_int_equal(at(h, 256 + 32), 1);
    assert_int_equal(at(h, 256 + 36), 2);
}

/* The register is the running engine's own: another engine's is not read. */
static void test_engine_own_register(void **state)
{
    struct harness *h = *state;
    fill_row(h);
    reg_move(h, ISA_ENG_POOL, 5, 8);
    dyn_copy(h, ISA_ENG_DVE, 112);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_int_equal(at(h, 256), 0);
}

static void test_out_of_range(void **state)
{
    struct harness *h = *state;
    fill_row(h);
    memset(harness_sbuf_ptr(h, 0, 256), 0x5a, 16);
    reg_move(h, ISA_ENG_DVE, 5, 116);
    dyn_copy(h, ISA_ENG_DVE, 112);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "operand 'src'"));
    assert_non_null(strstr(h->report, "r5 = 116 bytes"));
    assert_non_null(strstr(h->report, "0..112"));
    assert_non_null(strstr(h->report, "dve[1]"));
    assert_int_equal(at(h, 256), 0x5a5a5a5a);  /* nothing written */
    harness_clear(h);
    reg_move(h, ISA_ENG_DVE, 5, -4);
    dyn_copy(h, ISA_ENG_DVE, 112);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    harness_clear(h);
    reg_move(h, ISA_ENG_DVE, 5, 6);  /* not a whole int32 */
    dyn_copy(h, ISA_ENG_DVE, 112);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "whole number of 4-byte elements"));
}

/* SP writes bytes 64..79 unordered with DVE's read: a race only when the
 * register moves the read onto them. */
static emu_status race_with_shift(struct harness *h, int64_t shift)
{
    harness_clear(h);
    h->opts.racecheck = true;
    struct isa_insn *w = harness_add(h, ISA_ENG_SP, ISA_OP_reg_store);
    w->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 64, ISA_DT_I32, 1);
    reg_move(h, ISA_ENG_DVE, 5, shift);
    dyn_copy(h, ISA_ENG_DVE, 112);
    return harness_run(h);
}

static void test_race_sees_actual_bytes(void **state)
{
    struct harness *h = *state;
    assert_int_equal(race_with_shift(h, 0), EMU_OK);
    assert_int_equal(race_with_shift(h, 64), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "race"));
    h->opts.racecheck = false;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_source_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_destination_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_own_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_out_of_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_sees_actual_bytes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
