/*
 * test_indirect.c: tensor indirection (emu/core/dynap.c, docs/isa.md
 * "Tensor indirection"): gathering columns for a compute operand, scattering
 * a written one back, the snake order of the index across partition
 * groups, offsets outside the view, the generation check, the race checker
 * seeing the index read, and the encoding and assembly round trips.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "emu/isa/isa_generation.h"
#include "emu/isa/isa_text.h"
#include "exec_harness.h"

enum { ROWS = 4, ROW_ELEMS = 32, IX_OFF = 4096, DST_OFF = 1024 };

static int setup(void **state)
{
    *state = harness_new(4);
    return 0;
}

static int teardown(void **state)
{
    harness_free(*state);
    return 0;
}

static void put_i32(struct harness *h, uint32_t p, uint64_t off, int32_t v)
{
    memcpy(harness_sbuf_ptr(h, p, off), &v, 4);
}

static int32_t get_i32(struct harness *h, uint32_t p, uint64_t off)
{
    int32_t v;
    memcpy(&v, harness_sbuf_ptr(h, p, off), 4);
    return v;
}

/* Partitions 0..3, bytes 0..127: int32 100 * p + i. */
static void fill_rows(struct harness *h)
{
    for (uint32_t p = 0; p < ROWS; p++)
        for (int32_t i = 0; i < ROW_ELEMS; i++)
            put_i32(h, p, (uint64_t)i * 4, (int32_t)(100 * p) + i);
}

/* Index offsets[0..n) in the snake order of engine e's groups, in an int32
 * index of `parts` partitions x `cols` at byte IX_OFF. */
static void put_index(struct harness *h, const struct isa_ap *ap, unsigned e,
                      const int32_t *offsets, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uint32_t part, col;
        assert_true(isa_index_where(ap, e, i, &part, &col));
        put_i32(h, ap->ix.start_part + part, IX_OFF + (uint64_t)col * 4, offsets[i]);
    }
}

/* A ROWS x n int32 view of the rows at byte 0 whose column i is element
 * index_i (0..31), the index at partition 0, byte IX_OFF. */
static struct isa_ap indirect_rows(uint32_t n, uint32_t ix_parts, uint32_t ix_cols)
{
    struct isa_ap ap = harness_tile(ISA_MEM_SBUF, 0, ROWS, 0, ISA_DT_I32, n);
    ap.dyn = ISA_DYN_INDEX;
    ap.dyn_max = ROW_ELEMS - 1;
    ap.ix = (struct isa_ap_index){.mem = ISA_MEM_SBUF, .dtype = ISA_DT_I32, .start_part = 0,
                                  .num_part = (uint8_t)ix_parts, .cols = ix_cols,
                                  .offset = IX_OFF};
    return ap;
}

static struct isa_insn *gather_copy(struct harness *h, enum isa_engine e, uint32_t n,
                                    const int32_t *offsets)
{
    struct isa_insn *c = harness_add(h, e, ISA_OP_tensor_copy);
    c->ap[0] = harness_tile(ISA_MEM_SBUF, 0, ROWS, DST_OFF, ISA_DT_I32, n);
    c->ap[1] = indirect_rows(n, 16, 1);
    put_index(h, &c->ap[1], e, offsets, n);
    return c;
}

static void test_gather(void **state)
{
    struct harness *h = *state;
    fill_rows(h);
    const int32_t off[3] = {5, 0, 17};
    gather_copy(h, ISA_ENG_DVE, 3, off);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < ROWS; p++)
        for (uint32_t i = 0; i < 3; i++)
            assert_int_equal(get_i32(h, p, DST_OFF + 4 * (uint64_t)i), (int32_t)(100 * p) + off[i]);
}

static void test_scatter(void **state)
{
    struct harness *h = *state;
    fill_rows(h);
    for (uint32_t p = 0; p < ROWS; p++)
        for (uint32_t i = 0; i < 3; i++)
            put_i32(h, p, DST_OFF + 4 * (uint64_t)i, -(int32_t)(10 * p + i) - 1);
    struct isa_insn *c = harness_add(h, ISA_ENG_ACT, ISA_OP_tensor_copy);
    c->ap[0] = indirect_rows(3, 16, 1);
    c->ap[1] = harness_tile(ISA_MEM_SBUF, 0, ROWS, DST_OFF, ISA_DT_I32, 3);
    const int32_t off[3] = {9, 2, 30};
    put_index(h, &c->ap[0], ISA_ENG_ACT, off, 3);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t p = 0; p < ROWS; p++)
        for (int32_t i = 0; i < ROW_ELEMS; i++) {
            int32_t want = (int32_t)(100 * p) + i;
            for (uint32_t k = 0; k < 3; k++)
                if (off[k] == i)
                    want = -(int32_t)(10 * p + k) - 1;
            assert_int_equal(get_i32(h, p, (uint64_t)i * 4), want);
        }
}

/* A repeated offset keeps the value of its last column. */
static void test_scatter_repeat_last_wins(void **state)
{
    struct harness *h = *state;
    fill_rows(h);
    for (uint32_t i = 0; i < 2; i++)
        put_i32(h, 0, DST_OFF + 4 * (uint64_t)i, 7 + (int32_t)i);
    struct isa_insn *c = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_copy);
    c->ap[0] = indirect_rows(2, 16, 1);
    c->ap[0].num_part = 1;
    c->ap[1] = harness_tile(ISA_MEM_SBUF, 0, 1, DST_OFF, ISA_DT_I32, 2);
    const int32_t off[2] = {3, 3};
    put_index(h, &c->ap[0], ISA_ENG_DVE, off, 2);
    assert_int_equal(harness_run(h), EMU_OK);
    assert_int_equal(get_i32(h, 0, 12), 8);
}

/* Offsets snake down 16 partitions (Vector engine), column after column:
 * column i reads index[i % 16, i / 16]; past the columns, the next group. */
static void test_snake_order(void **state)
{
    struct harness *h = *state;
    struct isa_ap ap = indirect_rows(40, 32, 2);
    uint32_t part, col;
    assert_true(isa_index_where(&ap, ISA_ENG_DVE, 17, &part, &col));
    assert_int_equal(part, 1);
    assert_int_equal(col, 1);
    assert_true(isa_index_where(&ap, ISA_ENG_DVE, 33, &part, &col));
    assert_int_equal(part, 17);
    assert_int_equal(col, 0);
    assert_true(isa_index_where(&ap, ISA_ENG_PE, 33, &part, &col));
    assert_int_equal(part, 1);
    assert_int_equal(col, 1);
    ap.ix.num_part = 16;
    assert_false(isa_index_where(&ap, ISA_ENG_DVE, 33, &part, &col));
    fill_rows(h);
    int32_t off[40];
    for (int i = 0; i < 40; i++)
        off[i] = (i * 7) % ROW_ELEMS;
    struct isa_insn *c = harness_add(h, ISA_ENG_DVE, ISA_OP_tensor_copy);
    c->ap[0] = harness_tile(ISA_MEM_SBUF, 0, ROWS, DST_OFF, ISA_DT_I32, 40);
    c->ap[1] = indirect_rows(40, 32, 2);
    put_index(h, &c->ap[1], ISA_ENG_DVE, off, 40);
    assert_int_equal(harness_run(h), EMU_OK);
    for (uint32_t i = 0; i < 40; i++)
        assert_int_equal(get_i32(h, 3, DST_OFF + 4 * (uint64_t)i), 300 + off[i]);
}

static void test_offset_out_of_range(void **state)
{
    struct harness *h = *state;
    fill_rows(h);
    memset(harness_sbuf_ptr(h, 0, DST_OFF), 0x5a, 12);
    const int32_t off[3] = {1, 32, 2};
    gather_copy(h, ISA_ENG_DVE, 3, off);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
    assert_non_null(strstr(h->report, "operand 'src'"));
    assert_non_null(strstr(h->report, "column 1 the offset 32"));
    assert_non_null(strstr(h->report, "0..31"));
    assert_int_equal(get_i32(h, 0, DST_OFF), 0x5a5a5a5a);  /* nothing written */
    harness_clear(h);
    const int32_t neg[1] = {-1};
    gather_copy(h, ISA_ENG_DVE, 1, neg);
    assert_int_equal(harness_run(h), EMU_EXEC_OOB);
}

static void test_needs_v4(void **state)
{
    (void)state;
    struct harness *h = harness_new(3);
    const int32_t off[1] = {0};
    gather_copy(h, ISA_ENG_DVE, 1, off);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "NeuronCore-v4"));
    char what[96];
    assert_int_equal(isa_insn_min_gen(&h->insns[ISA_ENG_DVE][0], what, sizeof what), 4);
    assert_non_null(strstr(what, "tensor indirection"));
    harness_free(h);
}

/* SP writes the index unordered with DVE's gather: a race on the index. */
static void test_race_on_index(void **state)
{
    struct harness *h = *state;
    h->opts.racecheck = true;
    struct isa_insn *w = harness_add(h, ISA_ENG_SP, ISA_OP_reg_store);
    w->ap[0] = harness_tile(ISA_MEM_SBUF, 2, 1, IX_OFF, ISA_DT_I32, 1);
    const int32_t off[1] = {0};
    gather_copy(h, ISA_ENG_DVE, 1, off);
    assert_int_equal(harness_run(h), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "race"));
    h->opts.racecheck = false;
}

/* SP writes element 20 of partition 0 unordered with DVE's gather: a race
 * only when the offsets reached span it (the checker's bytes are those
 * between the smallest and largest offset). */
static emu_status race_with_offsets(struct harness *h, const int32_t *offsets)
{
    harness_clear(h);
    h->opts.racecheck = true;
    struct isa_insn *w = harness_add(h, ISA_ENG_SP, ISA_OP_reg_store);
    w->ap[0] = harness_tile(ISA_MEM_SBUF, 0, 1, 80, ISA_DT_I32, 1);
    gather_copy(h, ISA_ENG_DVE, 3, offsets);
    emu_status st = harness_run(h);
    h->opts.racecheck = false;
    return st;
}

static void test_race_sees_the_columns_reached(void **state)
{
    struct harness *h = *state;
    const int32_t below[3] = {5, 0, 17}, across[3] = {5, 0, 25};
    assert_int_equal(race_with_offsets(h, below), EMU_OK);
    assert_int_equal(race_with_offsets(h, across), EMU_EXEC_ERR);
    assert_non_null(strstr(h->report, "race"));
}

static void test_encoding_round_trip(void **state)
{
    (void)state;
    struct isa_insn in;
    assert_int_equal(isa_insn_init(&in, ISA_ENG_DVE, ISA_OP_tensor_copy), EMU_OK);
    in.ap[0] = harness_tile(ISA_MEM_SBUF, 0, ROWS, DST_OFF, ISA_DT_I32, 3);
    in.ap[1] = indirect_rows(3, 16, 1);
    uint8_t bytes[ISA_INSN_BYTES];
    assert_int_equal(isa_encode(&in, bytes), EMU_OK);
    struct isa_insn out;
    assert_int_equal(isa_decode(bytes, sizeof bytes, ISA_ENG_DVE, &out), EMU_OK);
    assert_memory_equal(&out.ap[1], &in.ap[1], sizeof in.ap[1]);
    char text[512];
    isa_text_print(&in, NULL, text, sizeof text);
    assert_non_null(strstr(text, "@sbuf[0:16, 4096, [1,1]]:i32<=31"));
    struct isa_insn back;
    assert_int_equal(isa_text_parse_line(text, NULL, &back, NULL), EMU_OK);
    assert_memory_equal(&back.ap[1], &in.ap[1], sizeof in.ap[1]);
    /* an index is static: no index of its own, no register */
    static const char *const nested[] = {
        "dve.tensor_copy dst=sbuf[0:4, 1024, [1,3]]:i32 src=sbuf[0:4, 0, [1,3]]:i32"
        "@sbuf[0:16, 4096, [1,1]]:i32@sbuf[0:16, 0, [1,1]]:i32<=3<=31",
        "dve.tensor_copy dst=sbuf[0:4, 1024, [1,3]]:i32 src=sbuf[0:4, 0, [1,3]]:i32"
        "@sbuf[0:16, 4096, [1,1]]:i32+r5<=0<=31",
    };
    for (size_t k = 0; k < sizeof nested / sizeof nested[0]; k++)
        assert_int_equal(isa_text_parse_line(nested[k], NULL, &back, NULL), EMU_INVALID);
    /* refused: an op without indirection, too few index partitions, HBM */
    struct isa_fault f;
    in.ap[1].ix.num_part = 1;
    assert_int_equal(isa_validate(&in, &f), EMU_INVALID);
    assert_non_null(strstr(f.msg, "more index partitions"));
    in.ap[1].ix.num_part = 16;
    in.ap[1].ix.dtype = ISA_DT_F32;
    assert_int_equal(isa_validate(&in, &f), EMU_INVALID);
    assert_int_equal(isa_insn_init(&in, ISA_ENG_DVE, ISA_OP_memset), EMU_OK);
    in.ap[0] = indirect_rows(3, 16, 1);
    assert_int_equal(isa_validate(&in, &f), EMU_INVALID);
    assert_non_null(strstr(f.msg, "takes no tensor indirection"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_gather, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scatter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scatter_repeat_last_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snake_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_offset_out_of_range, setup, teardown),
        cmocka_unit_test(test_needs_v4),
        cmocka_unit_test_setup_teardown(test_race_on_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_sees_the_columns_reached, setup, teardown),
        cmocka_unit_test(test_encoding_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
