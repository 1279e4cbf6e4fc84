/*
 * test_isa_text.c: unit tests of emu/isa_text.{h,c}: print/parse round
 * trips of every op on every engine (with and without a variable table),
 * the examples of docs/isa.md, and parse errors with their columns.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/isa/isa.h"
#include "emu/isa/isa_text.h"

void isa_gen_insn(struct isa_insn *in, const struct isa_op_desc *op, unsigned engine,
                  bool full, unsigned seed);

/* ---- a small variable table ----------------------------------------------- */
static const char *const var_names[] = {"input0", "w.q/k-v", "out_0", NULL, "bad name"};
#define NVARS (sizeof(var_names) / sizeof(var_names[0]))

static emu_status lookup(void *user, const char *name, size_t len, uint32_t *id)
{
    (void)user;
    for (uint32_t i = 0; i < NVARS; i++)
        if (var_names[i] && strlen(var_names[i]) == len && !strncmp(var_names[i], name, len)) {
            *id = i;
            return EMU_OK;
        }
    return EMU_INVALID;
}

static const char *name_of(void *user, uint32_t id)
{
    (void)user;
    return id < NVARS ? var_names[id] : NULL;
}

static const struct isa_text_env env = {lookup, name_of, NULL};

/* ---- round trips ------------------------------------------------------------ */
static void roundtrip(const struct isa_insn *in, const struct isa_text_env *e)
{
    char buf[4096];
    struct isa_insn out;
    struct isa_text_error err;
    size_t n = isa_text_print(in, e, buf, sizeof(buf));
    assert_true(n < sizeof(buf));
    assert_int_equal(strlen(buf), n);
    if (isa_text_parse_line(buf, e, &out, &err) != EMU_OK)
        fail_msg("'%s': column %u: %s", buf, err.column, err.message);
    if (memcmp(in, &out, sizeof(out)) != 0)
        fail_msg("'%s' read back differently", buf);
}

static void test_roundtrip_every_op(void **state)
{
    (void)state;
    unsigned iter = 0, done = 0;
    const struct isa_op_desc *op;
    while ((op = isa_op_next(&iter)) != NULL)
        for (unsigned e = 0; e < ISA_ENG_COUNT; e++)
            for (unsigned seed = 0; (op->engines & (1u << e)) && seed < 24; seed++) {
                struct isa_insn in;
                isa_gen_insn(&in, op, e, seed % 2 == 1, seed);
                roundtrip(&in, NULL);
                roundtrip(&in, &env);
                done++;
            }
    assert_true(done > 1000);
}

/* ---- examples (the ones docs/isa.md shows) -------------------------------- */
static void expect_canonical(const char *line, const char *canonical)
{
    struct isa_insn in;
    struct isa_text_error err;
    char buf[2048];
    if (isa_text_parse_line(line, &env, &in, &err) != EMU_OK)
        fail_msg("'%s': column %u: %s", line, err.column, err.message);
    isa_text_print(&in, &env, buf, sizeof(buf));
    if (strcmp(buf, canonical) != 0)
        fail_msg("'%s' printed as\n'%s', want\n'%s'", line, buf, canonical);
}

static void test_examples(void **state)
{
    (void)state;
    expect_canonical(
        "act.activation dst=sbuf[0:128, 0, [1,512]]:f32 data=psum[0:128, 0, [1,512]]:f32 "
        "func=exp scale=1.0 bias=0 wait=s3>=1 signal=s4+=1",
        "act.activation dst=sbuf[0:128, 0, [1,512]]:f32 data=psum[0:128, 0, [1,512]]:f32 "
        "func=exp wait=s3>=1 signal=s4+=1");
    expect_canonical(
        "  sp.dma_copy dst=sbuf[0:128,0,[1,512]]:bf16 src=hbm:input0[[512,128], 0, [1,512]]:bf16"
        "   ; load a tile",
        "sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:bf16 src=hbm:input0[[512,128], 0, [1,512]]:bf16");
    expect_canonical(
        "pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 0, [1,128]]:bf16 "
        "moving=sbuf[0:128, 256, [1,512]]:bf16 accumulate=1 signal=s1+=1",
        "pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 0, [1,128]]:bf16 "
        "moving=sbuf[0:128, 256, [1,512]]:bf16 accumulate signal=s1+=1");
    expect_canonical(
        "dve.tensor_scalar dst=sbuf[0:64, 0x100, [1,64]]:f32 data=sbuf[64:128, 0, [1,64]]:f32 "
        "op0=multiply operand0=0.5 op1=add operand1=sbuf[64:128, 4096, [0,1]]:f32",
        "dve.tensor_scalar dst=sbuf[0:64, 256, [1,64]]:f32 data=sbuf[64:128, 0, [1,64]]:f32 "
        "op0=multiply operand0=0.5 op1=add operand1=sbuf[64:128, 4096, [0,1]]:f32");
    expect_canonical(
        "pool.iota dst=sbuf[0:128:1, 0, [1,64]]:i32 pattern=[[1, 64]] channel_multiplier=64",
        "pool.iota dst=sbuf[0:128, 0, [1,64]]:i32 pattern=[[1,64]] channel_multiplier=64");
    expect_canonical("sp.sem_wait sem=3 value=2", "sp.sem_wait sem=3 value=2");
    expect_canonical("sp.nop wait=e7==1 wait=s2<5 signal=e7=0 signal=s9-=2 # tail",
                     "sp.nop wait=e7==1 wait=s2<5 signal=e7=0 signal=s9-=2");
    expect_canonical("pool.memset dst=sbuf[32:64:2, 0, [1,16], [32,4]]:u32 value=4294967295",
                     "pool.memset dst=sbuf[32:64:2, 0, [1,16], [32,4]]:u32 value=4294967295");
    expect_canonical("dve.memset dst=sbuf[0:1, 0, [1,1]]:f32 value=-inf",
                     "dve.memset dst=sbuf[0:1, 0, [1,1]]:f32 value=-inf");
    expect_canonical("act.activation dst=sbuf[0:1, 0, [1,1]]:f32 data=sbuf[0:1, 0, [1,1]]:f32 "
                     "func=copy bias=bits:0x7fc00001 scale=nan",
                     "act.activation dst=sbuf[0:1, 0, [1,1]]:f32 data=sbuf[0:1, 0, [1,1]]:f32 "
                     "func=copy bias=bits:0x7fc00001 scale=nan");
    expect_canonical("sp.dma_copy dst=hbm:$3[[-4,2], 0, [1,4]]:i8 src=hbm:out_0[[4,2], 8, [1,4]]:i8",
                     "sp.dma_copy dst=hbm:$3[[-4,2], 0, [1,4]]:i8 src=hbm:out_0[[4,2], 8, [1,4]]:i8");
    expect_canonical("sp.dma_copy dst=hbm:$1[[1,1], 0xffffffffffffffff, [1,1]]:u8 "
                     "src=sbuf[0:1, 4294967295, [1,1]]:u8",
                     "sp.dma_copy dst=hbm:w.q/k-v[[1,1], 18446744073709551615, [1,1]]:u8 "
                     "src=sbuf[0:1, 4294967295, [1,1]]:u8");
    expect_canonical("sp.all_reduce dst=hbm:$4[[1,1], 0, [1,4]]:f32 src=sbuf[0:1, 0, [1,4]]:f32 op=max",
                     "sp.all_reduce dst=hbm:$4[[1,1], 0, [1,4]]:f32 src=sbuf[0:1, 0, [1,4]]:f32 op=max");
}

/* The "Examples" block of docs/isa.md, which must stay valid. */
static const char *const doc_examples[] = {
    "sp.dma_copy dst=sbuf[0:128, 0, [1,512]]:bf16 src=hbm:input0[[512,128], 0, [1,512]]:bf16 signal=s0+=1",
    "pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 0, [1,128]]:bf16 "
    "moving=sbuf[0:128, 1024, [1,512]]:bf16 wait=s0>=1",
    "pe.nc_matmul dst=psum[0:128, 0, [1,512]]:f32 stationary=sbuf[0:128, 256, [1,128]]:bf16 "
    "moving=sbuf[0:128, 2048, [1,512]]:bf16 accumulate signal=s1+=1",
    "act.activation dst=sbuf[0:128, 4096, [1,512]]:f32 data=psum[0:128, 0, [1,512]]:f32 func=exp "
    "scale=0.5 reduce_cmd=reset_reduce reduce_res=sbuf[0:128, 8192, [1,1]]:f32 wait=s1>=1 signal=s2+=1",
    "dve.tensor_scalar dst=sbuf[0:128, 0, [1,512]]:f32 data=sbuf[0:128, 4096, [1,512]]:f32 "
    "op0=multiply operand0=2 op1=add operand1=sbuf[0:128, 8192, [0,1]]:f32 wait=s2>=1 signal=s3+=1",
    "pool.affine_select dst=sbuf[0:128, 0, [1,128]]:f32 on_true=sbuf[0:128, 0, [1,128]]:f32 "
    "pattern=[[-1,128]] channel_multiplier=1 on_false=-inf cmp_op=greater_equal",
    "sp.reg_move rd=0 value=4",
    "sp.nop",
    "sp.reg_alu rd=0 rs=0 op=subtract imm=1",
    "sp.branch reg=0 cmp=gt value=0 target=1",
    "sp.halt",
};

static void test_doc_examples(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(doc_examples) / sizeof(doc_examples[0]); i++) {
        struct isa_insn in;
        struct isa_text_error err;
        if (isa_text_parse_line(doc_examples[i], &env, &in, &err) != EMU_OK)
            fail_msg("'%s': column %u: %s", doc_examples[i], err.column, err.message);
        roundtrip(&in, &env);
    }
}

/* ---- errors and their columns ------------------------------------------------ */
struct bad_line {
    const char *line;    /* input */
    unsigned column;     /* expected column */
    const char *needle;  /* expected in the message */
};

#define TT "dve.tensor_tensor dst=sbuf[0:128, 0, [1,8]]:f32 data1=sbuf[0:128, 0, [1,8]]:f32 "

static const struct bad_line bad_lines[] = {
    {"", 1, "empty line"},
    {"   ; only a comment", 4, "empty line"},
    {"nop", 1, "expected engine.mnemonic"},
    {"xx.nop", 1, "unknown engine 'xx'"},
    {"pe.", 4, "expected a mnemonic"},
    {"pe.foo", 4, "unknown op 'foo'"},
    {"dve.nc_matmul", 5, "nc_matmul cannot run on the dve engine"},
    {"pe.nop,", 7, "unexpected ','"},
    {"pe.nop frob=1", 8, "nop has no operand 'frob'"},
    {"pe.nop =1", 8, "expected an operand name"},
    {TT "op=add", 87, "missing operand 'data2'"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f33 op=add", 109, "unknown dtype 'f33'"},
    {TT "data2=sbuf[0:128, 0, [1,8]]: op=add", 109, "expected a dtype"},
    {TT "data2=sbuf[0:128, 0, [1,8]] op=add", 108, "expected ':dtype'"},
    {TT "data2=sbuf[0:200, 0, [1,8]]:f32 op=add", 92, "more than 128 partitions"},
    {TT "data2=sbuf[130:131, 0, [1,8]]:f32 op=add", 92, "130 is out of 0..127"},
    {TT "data2=sbuf[0:127:2, 0, [1,8]]:f32 op=add", 92, "not a whole number of steps"},
    {TT "data2=sbuf[0:128, 0]:f32 op=add", 100, "at least one free dimension"},
    {TT "data2=sbuf[0:128, 0, [1,8], [1,1], [1,1], [1,1], [1,1]]:f32", 128, "more than 4 free"},
    {TT "data2=sbuf[0:128, 0, [1,0]]:f32 op=add", 105, "0 is out of 1..4294967295"},
    {TT "data2=sbuf[[1,128], 0, [1,8]]:f32 op=add", 92, "start:stop[:step]"},
    {TT "data2=hbm:input0[0:128, 0, [1,8]]:f32 op=add", 98, "written [step,count]"},
    {TT "data2=dram[0:128, 0, [1,8]]:f32 op=add", 87, "expected sbuf[...], psum[...] or hbm"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=ad", 116, "'ad' is not a known ALU operator"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=", 116, "expected ALU operator"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add op=add", 120, "operand 'op' given twice"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add wait=s1>=1 wait=s1>=1 wait=s1>=1 wait=s1>=1 "
        "wait=s1>=1", 169, "more than 4 waits"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add wait=x1>=1", 125, "expected s<semaphore>"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add wait=s1=>1", 127, "expected ==, !=, >="},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add signal=s1>1", 129, "expected =, += or -="},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add wait=s256>=1", 126, "256 is out of 0..255"},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add wait=e1>=1", 125, "events compare with =="},
    {TT "data2=sbuf[0:128, 0, [1,8]]:f32 op=add signal=e1+=1", 127, "events can only be set"},
    /* validation errors point at the operand */
    {"pool.tensor_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=psum[0:1, 0, [1,1]]:f32", 46,
     "pool engine cannot access PSUM"},
    {"pe.nc_matmul dst=sbuf[0:1, 0, [1,1]]:f32 stationary=sbuf[0:1, 0, [1,1]]:f32 "
     "moving=sbuf[0:1, 0, [1,1]]:f32", 14, "operand 'dst' cannot be in sbuf"},
    {"dve.tensor_copy dst=sbuf[100:132:2, 0, [1,1]]:f32 src=sbuf[0:16, 0, [1,1]]:f32", 17,
     "partitions 100..130 out of 0..127"},
    /* values */
    {"pe.nc_matmul tile_rows=0", 24, "0 is out of 1..128"},
    {"pe.nc_matmul accumulate=2", 25, "'accumulate' takes 0, 1, true or false"},
    {"pe.nc_matmul tile_rows", 23, "expected '=' and a value after 'tile_rows'"},
    {"sp.sem_wait sem=12x", 17, "bad number '12x'"},
    {"sp.sem_wait sem=99999999999999999999", 17, "bad number"},
    {"sp.sem_wait sem=", 17, "expected a number"},
    {"sp.dma_copy dst=hbm:$1[[1,1], 18446744073709551616, [1,1]]:u8", 31, "bad number"},
    {"sp.dma_copy dst=sbuf[0:1, 4294967296, [1,1]]:u8 src=sbuf[0:1, 0, [1,1]]:u8", 13,
     "beyond 4 GiB on chip"},
    {"sp.reg_move rd=1 value=-2147483649", 24, "out of -2147483648..2147483647"},
    {"dve.memset dst=sbuf[0:1, 0, [1,1]]:f32 value=1.5.5", 46, "bad number '1.5.5'"},
    {"dve.memset dst=sbuf[0:1, 0, [1,1]]:f32 value=bits:0x1234567890abcdef12", 51, "at most 16 hex"},
    {"dve.memset dst=sbuf[0:1, 0, [1,1]]:f32 value=bits:12", 51, "expected 0x"},
    {"sp.dma_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=hbm:nothere[[1,1], 0, [1,1]]:f32", 49,
     "unknown variable 'nothere'"},
    {"sp.dma_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=hbm:[[1,1], 0, [1,1]]:f32", 49,
     "expected a variable name"},
    {"sp.dma_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=hbm[[1,1], 0, [1,1]]:f32", 48,
     "expected ':' and a variable"},
    {"dve.nc_stream_shuffle dst=sbuf[0:1, 0, [1,1]]:f32 src=sbuf[0:1, 0, [1,1]]:f32 mask=[1,2]", 88,
     "exactly 32 entries"},
    {"dve.nc_stream_shuffle dst=sbuf[0:1, 0, [1,1]]:f32 src=sbuf[0:1, 0, [1,1]]:f32 mask=[1,2,"
     "3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,40]", 79,
     "entry 31 = 40"},
    {"pool.iota dst=sbuf[0:1, 0, [1,1]]:f32 pattern=[[1,1],[1,1],[1,1],[1,1],[1,1]]", 72,
     "more than 4 pattern dimensions"},
    {"pool.iota dst=sbuf[0:1, 0, [1,1]]:f32 pattern=[]", 48, "expected '['"},
};

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bad_lines) / sizeof(bad_lines[0]); i++) {
        const struct bad_line *b = &bad_lines[i];
        struct isa_insn out;
        struct isa_text_error err;
        emu_status st = isa_text_parse_line(b->line, &env, &out, &err);
        if (st != EMU_INVALID || err.column != b->column || !strstr(err.message, b->needle))
            fail_msg("'%s': status %d column %u '%s'; want column %u '%s'", b->line, st,
                     err.column, err.message, b->column, b->needle);
    }
}

static void test_no_variable_table(void **state)
{
    (void)state;
    struct isa_insn out;
    struct isa_text_error err;
    const char *line = "sp.dma_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=hbm:input0[[1,1], 0, [1,1]]:f32";
    assert_int_equal(isa_text_parse_line(line, NULL, &out, &err), EMU_INVALID);
    assert_int_equal(err.column, 49);
    assert_non_null(strstr(err.message, "no variable table"));
    assert_int_equal(isa_text_parse_line(line, &env, &out, NULL), EMU_OK);
    assert_int_equal(out.ap[1].var_id, 0);
    /* a name the printer cannot write back falls back to $id */
    char buf[256];
    out.ap[1].var_id = 4;
    isa_text_print(&out, &env, buf, sizeof(buf));
    assert_non_null(strstr(buf, "hbm:$4["));
    assert_int_equal(isa_text_parse_line("pe.bogus", NULL, &out, NULL), EMU_INVALID);
}

static void test_blank(void **state)
{
    (void)state;
    assert_true(isa_text_is_blank(""));
    assert_true(isa_text_is_blank("  \t"));
    assert_true(isa_text_is_blank(" ; comment"));
    assert_true(isa_text_is_blank("# comment"));
    assert_true(isa_text_is_blank("\n"));
    assert_false(isa_text_is_blank(" pe.nop"));
}

static void test_print_truncates(void **state)
{
    (void)state;
    struct isa_insn in;
    char big[512], small[10];
    assert_int_equal(isa_text_parse_line("pe.sem_signal sem=7 op=sub value=3", NULL, &in, NULL),
                     EMU_OK);
    size_t n = isa_text_print(&in, NULL, big, sizeof(big));
    assert_string_equal(big, "pe.sem_signal sem=7 op=sub value=3");
    assert_int_equal(n, strlen(big));
    memset(small, 'x', sizeof(small));
    assert_int_equal(isa_text_print(&in, NULL, small, sizeof(small)), n);
    assert_string_equal(small, "pe.sem_si");
    assert_int_equal(isa_text_print(&in, NULL, NULL, 0), n);
    /* invalid values print as something the parser refuses */
    in.enums[0] = 60;
    isa_text_print(&in, NULL, big, sizeof(big));
    assert_non_null(strstr(big, "op=?60"));
    assert_int_equal(isa_text_parse_line(big, NULL, &in, NULL), EMU_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_op),
        cmocka_unit_test(test_examples),
        cmocka_unit_test(test_doc_examples),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_no_variable_table),
        cmocka_unit_test(test_blank),
        cmocka_unit_test(test_print_truncates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
