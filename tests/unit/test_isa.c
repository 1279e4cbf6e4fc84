/*
 * test_isa.c: unit tests of emu/isa.{h,c}: the op table's consistency,
 * encode/decode round trips of every op on every engine, each decode
 * error (with its one log line), streams, dtype and access-pattern
 * helpers, and the dispatch table generated from the op table.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define ISA_WANT_DISPATCH
#include "emu/isa/isa.h"
#include "devices/config/log_env.h"
#include "emu/log.h"

void isa_gen_insn(struct isa_insn *in, const struct isa_op_desc *op, unsigned engine,
                  bool full, unsigned seed);

/* ---- dispatch stubs: one per op, generated from the table ------------- */
struct isa_exec_ctx {
    unsigned calls;  /* how many stubs ran */
};
#define ISA_OP(name, code, engines, gen, cost, fields)                                              \
    emu_status isa_exec_##name(struct isa_exec_ctx *ctx, const struct isa_insn *insn)    \
    {                                                                                    \
        ctx->calls++;                                                                    \
        return insn->opcode == (code) ? EMU_OK : EMU_FAILURE;                       \
    }
#include "emu/isa/isa_ops.h"
#undef ISA_OP

/* ---- stderr capture: the log line a failure prints ---------------------- */
static char captured[4096];

static int capture_begin(void)
{
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), 2);
    fclose(tmp);  /* fd 2 keeps the file open */
    return saved;
}

static void capture_end(int saved)
{
    fflush(stderr);
    off_t n = lseek(2, 0, SEEK_END);
    lseek(2, 0, SEEK_SET);
    ssize_t got = read(2, captured, n < (off_t)sizeof(captured) - 1 ? (size_t)n : sizeof(captured) - 1);
    captured[got > 0 ? got : 0] = '\0';
    dup2(saved, 2);
    close(saved);
}

static unsigned count_lines(const char *s)
{
    unsigned n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* ---- helpers ------------------------------------------------------------ */
static void good_insn(struct isa_insn *in, unsigned engine, unsigned opcode)
{
    const struct isa_op_desc *op = isa_op_lookup(opcode);
    assert_non_null(op);
    isa_gen_insn(in, op, engine, false, 2);
}

/* A valid tensor_tensor on DVE, encoded. */
static void good_bytes(uint8_t *b)
{
    struct isa_insn in;
    good_insn(&in, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    assert_int_equal(isa_encode(&in, b), EMU_OK);
}

/* Decode b on eng; expect status st and exactly one log line containing
 * needle. */
static void expect_decode(const uint8_t *b, size_t size, enum isa_engine eng, emu_status st,
                          const char *needle)
{
    struct isa_insn out;
    int saved = capture_begin();
    emu_status got = isa_decode(b, size, eng, &out);
    capture_end(saved);
    if (got != st || strstr(captured, needle) == NULL || count_lines(captured) != 1)
        fail_msg("decode: status %d (want %d), log '%s' (want '%s')", got, st, captured, needle);
}

/* Change the decoded struct, re-encode without validation (by patching
 * bytes), and expect decode to fail with needle. */
static void expect_struct_fault(struct isa_insn *in, enum isa_engine eng, const char *needle)
{
    struct isa_fault f;
    assert_int_equal(isa_validate(in, &f), EMU_INVALID);
    if (strstr(f.msg, needle) == NULL)
        fail_msg("validate said '%s', want '%s'", f.msg, needle);
    (void)eng;
}

/* ---- the table ------------------------------------------------------------ */
static void check_field_slots(const struct isa_op_desc *op)
{
    unsigned ap = 0, fimm = 0, imm = 0, en = 0, fl = 0, aux = 0;
    for (int i = 0; i < op->nfields; i++) {
        const struct isa_field *f = &op->fields[i];
        unsigned bit = 1u << f->slot, *set = NULL, lim = 0;
        for (int j = 0; j < i; j++)
            if (strcmp(op->fields[j].name, f->name) == 0)
                fail_msg("%s: field %s twice", op->name, f->name);
        switch (f->kind) {
        case ISA_FK_AP: set = &ap; lim = ISA_MAX_AP; break;
        case ISA_FK_APF:
            set = &ap; lim = ISA_MAX_AP;
            if (f->fslot >= ISA_MAX_FIMM || (fimm & (1u << f->fslot)))
                fail_msg("%s: %s fslot", op->name, f->name);
            fimm |= 1u << f->fslot;
            break;
        case ISA_FK_F32: set = &fimm; lim = ISA_MAX_FIMM; break;
        case ISA_FK_F64: case ISA_FK_INT: set = &imm; lim = ISA_MAX_IMM; break;
        case ISA_FK_ENUM:
            set = &en; lim = ISA_MAX_ENUM;
            if (!(f->attr & ISA_FA_REQ) && isa_enum_name(f->etype, (unsigned)f->idef) == NULL)
                fail_msg("%s: %s default", op->name, f->name);
            break;
        case ISA_FK_FLAG: set = &fl; lim = ISA_MAX_FLAGS; break;
        case ISA_FK_PATTERN: case ISA_FK_MASK: aux++; continue;
        default: fail_msg("%s: %s kind %u", op->name, f->name, f->kind);
        }
        if (f->slot >= lim || (*set & bit))
            fail_msg("%s: %s slot %u reused or out of range", op->name, f->name, f->slot);
        *set |= bit;
        if (f->kind == ISA_FK_INT && (f->idef < f->min || f->idef > f->max))
            fail_msg("%s: %s default out of range", op->name, f->name);
    }
    if (aux > 1)
        fail_msg("%s: pattern and mask share the aux area", op->name);
}

static void test_table(void **state)
{
    (void)state;
    unsigned iter = 0, n = 0;
    const struct isa_op_desc *op;
    while ((op = isa_op_next(&iter)) != NULL) {
        n++;
        assert_ptr_equal(isa_op_lookup(op->opcode), op);
        assert_ptr_equal(isa_op_by_name(op->name, strlen(op->name)), op);
        assert_true(op->engines != 0 && (op->engines & ~ISA_EM_ALL) == 0);
        check_field_slots(op);
    }
    assert_true(n >= 60);
    static const char *const must[] = {
        "nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_tensor",
        "tensor_scalar", "tensor_reduce", "tensor_partition_reduce", "tensor_copy",
        "tensor_copy_predicated", "memset", "iota", "affine_select", "select_reduce",
        "range_select", "tensor_tensor_scan", "scalar_tensor_tensor", "tensor_scalar_reduce",
        "bn_stats", "bn_aggr", "local_gather", "max8", "nc_find_index8", "nc_match_replace8",
        "exponential", "reciprocal", "rng", "dropout", "dma_copy", "dma_transpose", "sendrecv",
        "core_barrier", "all_reduce", "all_gather", "reduce_scatter", "all_to_all", "permute",
        "sem_wait", "sem_signal", "nop", "halt",
    };
    for (size_t i = 0; i < sizeof(must) / sizeof(must[0]); i++)
        if (isa_op_by_name(must[i], strlen(must[i])) == NULL)
            fail_msg("op %s missing", must[i]);
    assert_null(isa_op_lookup(0xff));
    assert_null(isa_op_lookup(1000));
    assert_null(isa_op_by_name("nc_matmu", 8));
}

static void test_names(void **state)
{
    (void)state;
    static const char *const eng[] = {"pe", "act", "pool", "dve", "sp"};
    for (int i = 0; i < ISA_ENG_COUNT; i++) {
        assert_string_equal(isa_engine_name((unsigned)i), eng[i]);
        assert_int_equal(isa_engine_from_name(eng[i], strlen(eng[i])), i);
    }
    assert_null(isa_engine_name(5));
    assert_int_equal(isa_engine_from_name("gp", 2), -1);
    assert_string_equal(isa_enum_name(ISA_ET_ACT, ISA_ACT_exp), "exp");
    assert_int_equal(isa_enum_from_name(ISA_ET_ALU, "bitwise_xor", 11), ISA_ALU_bitwise_xor);
    assert_int_equal(isa_enum_from_name(ISA_ET_ALU, "exp", 3), -1);
    assert_null(isa_enum_name(ISA_ET_ALU, 23));
    assert_null(isa_enum_name(ISA_ET_COUNT, 0));
    assert_string_equal(isa_mem_name(ISA_MEM_PSUM), "psum");
    assert_null(isa_mem_name(ISA_MEM_NONE));
}

static void test_dtypes(void **state)
{
    (void)state;
    static const struct { unsigned v; size_t size; const char *name; bool fl; } dt[] = {
        {10, 4, "f32", true}, {11, 4, "f32r", true}, {6, 2, "bf16", true}, {7, 2, "f16", true},
        {13, 1, "fp8e3", true}, {14, 1, "fp8e4", true}, {15, 1, "fp8e5", true},
        {2, 1, "i8", false}, {4, 2, "i16", false}, {8, 4, "i32", false}, {12, 8, "i64", false},
        {3, 1, "u8", false}, {5, 2, "u16", false}, {9, 4, "u32", false}, {1, 8, "u64", false},
    };
    for (size_t i = 0; i < sizeof(dt) / sizeof(dt[0]); i++) {
        assert_int_equal(isa_dtype_size(dt[i].v), dt[i].size);
        assert_string_equal(isa_dtype_name(dt[i].v), dt[i].name);
        assert_int_equal(isa_dtype_from_name(dt[i].name, strlen(dt[i].name)), (int)dt[i].v);
        assert_int_equal(isa_dtype_is_float(dt[i].v), dt[i].fl);
    }
    assert_int_equal(isa_dtype_size(0), 0);
    assert_int_equal(isa_dtype_size(ISA_DT_COUNT), 0);
    assert_int_equal(isa_dtype_size(ISA_DT_FP8E4FN), 1);
    assert_int_equal(isa_dtype_size(ISA_DT_FP8E4FNX4), 4);
    assert_null(isa_dtype_name(0));
    assert_int_equal(isa_dtype_from_name("f64", 3), -1);
}

/* ---- round trips ----------------------------------------------------------- */
static void roundtrip_one(const struct isa_insn *in)
{
    uint8_t a[ISA_INSN_BYTES], b[ISA_INSN_BYTES];
    struct isa_insn out;
    struct isa_fault f;
    if (isa_validate(in, &f) != EMU_OK)
        fail_msg("%s on %s: %s", isa_op_lookup(in->opcode)->name, isa_engine_name(in->engine), f.msg);
    assert_int_equal(isa_encode(in, a), EMU_OK);
    assert_int_equal(isa_decode(a, sizeof(a), in->engine, &out), EMU_OK);
    assert_int_equal(isa_encode(&out, b), EMU_OK);
    assert_memory_equal(a, b, ISA_INSN_BYTES);
    assert_memory_equal(in, &out, sizeof(out));
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
                roundtrip_one(&in);
                done++;
            }
    assert_true(done > 1000);
}

static void test_init_defaults(void **state)
{
    (void)state;
    struct isa_insn in;
    assert_int_equal(isa_insn_init(&in, ISA_ENG_ACT, ISA_OP_activation), EMU_OK);
    assert_true(in.fimm[1] == 1.0f);  /* scale */
    assert_int_equal(in.enums[1], ISA_ALU_add);
    assert_int_equal(in.enums[2], ISA_RCMD_idle);
    assert_int_equal(isa_insn_init(&in, ISA_ENG_PE, ISA_OP_nc_matmul), EMU_OK);
    assert_int_equal(in.imm[2].i, 128);
    assert_int_equal(isa_insn_init(&in, ISA_ENG_PE, 0xff), EMU_INVALID);
}

/* ---- decode errors ---------------------------------------------------------- */
static void test_decode_header_errors(void **state)
{
    (void)state;
    uint8_t b[ISA_INSN_BYTES];
    good_bytes(b);
    expect_decode(b, ISA_INSN_BYTES - 1, ISA_ENG_DVE, EMU_INVALID, "truncated");
    b[0] = 0x51;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "bad magic");
    b[0] = ISA_INSN_MAGIC;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "version 0");
    b[0] = ISA_INSN_MAGIC | 2;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_NEFF_VERSION, "newer");
    good_bytes(b);
    b[1] = 0xfe;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "unknown opcode");
    good_bytes(b);
    b[3] = 64;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "length");
    good_bytes(b);
    b[5] = 1;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "reserved");
    good_bytes(b);
    b[511] = 1;
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "reserved");
    good_bytes(b);
    b[72 + 56 + 7] = 1;  /* reserved byte of ap[1] */
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "reserved");
    good_bytes(b);
    b[470] = 1;  /* aux area of an op without pattern or mask */
    expect_decode(b, sizeof(b), ISA_ENG_DVE, EMU_INVALID, "aux");
}

static void test_decode_engine_and_flags(void **state)
{
    (void)state;
    uint8_t b[ISA_INSN_BYTES];
    good_bytes(b);
    expect_decode(b, sizeof(b), ISA_ENG_PE, EMU_INVALID, "cannot run on the pe engine");
    expect_decode(b, sizeof(b), ISA_ENG_ACT, EMU_INVALID, "tensor_tensor on act");
}

/* Patch one byte of an encoded valid instruction and expect decode to
 * refuse it with needle. */
static void expect_patch(unsigned engine, unsigned opcode, size_t off, uint8_t v, const char *needle)
{
    struct isa_insn in;
    uint8_t b[ISA_INSN_BYTES];
    good_insn(&in, engine, opcode);
    assert_int_equal(isa_encode(&in, b), EMU_OK);
    b[off] = v;
    expect_decode(b, sizeof(b), (enum isa_engine)engine, EMU_INVALID, needle);
}

#define AP0 72
#define AP1 (72 + 56)
static void test_decode_operand_errors(void **state)
{
    (void)state;
    unsigned dve = ISA_ENG_DVE, tt = ISA_OP_tensor_tensor;
    expect_patch(dve, tt, 2, 0x01, "option bits");
    expect_patch(dve, tt, AP0 + 1, ISA_DT_COUNT, "bad dtype 21");
    expect_patch(dve, tt, AP0 + 1, 0, "bad dtype 0");
    expect_patch(dve, tt, AP0 + 0, 7, "bad memory kind 7");
    expect_patch(dve, tt, AP0 + 0, 0, "missing operand 'dst'");
    expect_patch(dve, tt, AP0 + 0, ISA_MEM_HBM, "cannot be in hbm");
    expect_patch(dve, tt, AP0 + 3, 0, "partition count 0");
    expect_patch(dve, tt, AP0 + 3, 129, "partition count 129");
    expect_patch(dve, tt, AP0 + 2, 127, "partitions 127..129 out of 0..127");
    expect_patch(dve, tt, AP0 + 8, 0, "partition step 0");
    expect_patch(dve, tt, AP0 + 4, 0, "1 to 4 dimensions");
    expect_patch(dve, tt, AP0 + 4, 5, "1 to 4 dimensions");
    expect_patch(dve, tt, AP0 + 24 + 4, 0, "count 0");        /* dim[0].count low byte */
    expect_patch(dve, tt, AP0 + 24 + 8 * 3 + 4, 1, "unused dimension");
    /* on chip the variable-id bytes bound a register offset; its fields need one */
    expect_patch(dve, tt, AP0 + 12, 3, "register-offset fields set without a register offset");
    expect_patch(dve, tt, AP0 + 6, 3, "register-offset fields set without a register offset");
    expect_patch(dve, tt, AP0 + 5, 3, "bad run-time offset kind 3");
    expect_patch(dve, tt, AP0 + 5, 2, "tensor indirection walks one free dimension");
    expect_patch(dve, tt, AP0 + 16 + 4, 1, "beyond 4 GiB on chip");     /* offset 2^32 + ... */
    expect_patch(dve, tt, 72 + 56 * 5, ISA_MEM_SBUF, "unused operand slot ap[5]");
    expect_patch(dve, tt, 408, 1, "unused float immediate 0");
    expect_patch(dve, tt, 424 + 8, 1, "unused immediate 1");
    expect_patch(dve, tt, 456 + 3, 1, "unused enum 3");
    expect_patch(dve, tt, 456 + 0, 23, "not a known ALU operator");
    /* nc_matmul: dst must be PSUM, tile_rows in 1..128 */
    expect_patch(ISA_ENG_PE, ISA_OP_nc_matmul, AP0 + 0, ISA_MEM_SBUF, "cannot be in sbuf");
    expect_patch(ISA_ENG_PE, ISA_OP_nc_matmul, 424 + 16, 0, "'tile_rows' = 0 out of 1..128");
    /* pool cannot touch PSUM */
    expect_patch(ISA_ENG_POOL, ISA_OP_tensor_copy, AP1 + 0, ISA_MEM_PSUM, "pool engine cannot access PSUM");
    /* HBM operands start at partition 0 */
    struct isa_insn in;
    uint8_t b[ISA_INSN_BYTES];
    good_insn(&in, ISA_ENG_SP, ISA_OP_dma_copy);
    in.ap[1].mem = ISA_MEM_HBM;
    in.ap[1].start_part = 0;
    in.ap[1].var_id = 2;
    assert_int_equal(isa_encode(&in, b), EMU_OK);
    b[AP1 + 2] = 4;
    expect_decode(b, sizeof(b), ISA_ENG_SP, EMU_INVALID, "start partition 4 in HBM");
    /* APF: tensor and scalar at once */
    good_insn(&in, ISA_ENG_ACT, ISA_OP_activation);
    in.ap[3] = in.ap[1];  /* scale given as a tensor */
    in.fimm[1] = 1.0f;    /* while the scalar is still set */
    expect_struct_fault(&in, ISA_ENG_ACT, "both a tensor and a scalar");
    /* register offsets: on chip only, a register of the sequencer; decoded back */
    good_insn(&in, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    in.ap[1].dyn = ISA_DYN_FREE;
    in.ap[1].dyn_reg = 64;
    expect_struct_fault(&in, ISA_ENG_DVE, "register 64 out of 0..63");
    in.ap[1].dyn_reg = 60;
    in.ap[1].dyn_max = 96;
    assert_int_equal(isa_encode(&in, b), EMU_OK);
    assert_int_equal(b[AP1 + 5], ISA_DYN_FREE);
    assert_int_equal(b[AP1 + 6], 60);
    assert_int_equal(b[AP1 + 12], 96);
    struct isa_insn back;
    assert_int_equal(isa_decode(b, sizeof(b), ISA_ENG_DVE, &back), EMU_OK);
    assert_int_equal(back.ap[1].dyn_max, 96);
    assert_int_equal(back.ap[1].var_id, 0);
    assert_true(isa_insn_dynamic(&back));
    good_insn(&in, ISA_ENG_SP, ISA_OP_dma_copy);
    in.ap[1].mem = ISA_MEM_HBM;
    in.ap[1].start_part = 0;
    in.ap[1].dyn = ISA_DYN_FREE;
    expect_struct_fault(&in, ISA_ENG_SP, "register offset on an HBM operand");
    /* absent optional operand with bytes set */
    good_insn(&in, ISA_ENG_ACT, ISA_OP_activation);
    in.ap[4].dtype = ISA_DT_F32;
    expect_struct_fault(&in, ISA_ENG_ACT, "absent operand 'reduce_res'");
}

static void test_decode_aux_errors(void **state)
{
    (void)state;
    /* iota's pattern */
    expect_patch(ISA_ENG_POOL, ISA_OP_iota, 464, 0, "'pattern' needs 1 to 4");
    expect_patch(ISA_ENG_POOL, ISA_OP_iota, 465, 1, "reserved bytes set in the pattern");
    expect_patch(ISA_ENG_POOL, ISA_OP_iota, 464 + 4 + 4, 0, "'pattern' has a dimension of count 0");
    /* the shuffle mask */
    expect_patch(ISA_ENG_DVE, ISA_OP_nc_stream_shuffle, 464 + 3, 40, "entry 3 = 40");
    expect_patch(ISA_ENG_DVE, ISA_OP_nc_stream_shuffle, 464 + 33, 1, "after the mask");
    struct isa_insn in;
    good_insn(&in, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    in.pattern.ndims = 1;
    expect_struct_fault(&in, ISA_ENG_DVE, "pattern set");
    good_insn(&in, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    in.mask[0] = 1;
    expect_struct_fault(&in, ISA_ENG_DVE, "mask set");
}

static void test_decode_sync_errors(void **state)
{
    (void)state;
    unsigned dve = ISA_ENG_DVE, nop = ISA_OP_nop;
    expect_patch(dve, nop, 8, 3, "wait 0: bad kind");
    struct isa_insn in;
    uint8_t b[ISA_INSN_BYTES];
    isa_insn_init(&in, ISA_ENG_DVE, ISA_OP_nop);
    in.wait[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_CMP_ge, 3, 1};
    in.wait[1] = (struct isa_sync){ISA_SYNC_EVENT, ISA_CMP_eq, 5, 1};
    in.signal[0] = (struct isa_sync){ISA_SYNC_SEM, ISA_SEMOP_add, 4, 1};
    in.signal[1] = (struct isa_sync){ISA_SYNC_EVENT, ISA_SEMOP_set, 5, 0};
    assert_int_equal(isa_encode(&in, b), EMU_OK);
    static const struct { size_t off; uint8_t v; const char *needle; } cases[] = {
        {8 + 1, 9, "wait 0: bad comparison"},
        {8 + 3, 1, "wait 0: id out of range"},          /* id 259 */
        {16 + 1, ISA_CMP_ge, "events compare with == or !="},
        {16 + 4, 2, "event value must be 0 or 1"},
        {40 + 1, 3, "signal 0: bad update"},
        {48 + 1, ISA_SEMOP_add, "events can only be set"},
        {24 + 2, 1, "wait 2: unused entry has bytes set"},
        {24 + 0, 0, ""},                                /* placeholder, not run */
    };
    for (size_t i = 0; i + 1 < sizeof(cases) / sizeof(cases[0]); i++) {
        uint8_t c[ISA_INSN_BYTES];
        memcpy(c, b, sizeof(c));
        c[cases[i].off] = cases[i].v;
        expect_decode(c, sizeof(c), ISA_ENG_DVE, EMU_INVALID, cases[i].needle);
    }
    /* a hole: wait 0 unused, wait 1 used */
    in.wait[0] = (struct isa_sync){0, 0, 0, 0};
    expect_struct_fault(&in, ISA_ENG_DVE, "wait 1: used after an unused entry");
}

static void test_encode_refuses_invalid(void **state)
{
    (void)state;
    struct isa_insn in;
    uint8_t b[ISA_INSN_BYTES];
    good_insn(&in, ISA_ENG_DVE, ISA_OP_tensor_tensor);
    in.ap[0].num_part = 0;
    int saved = capture_begin();
    assert_int_equal(isa_encode(&in, b), EMU_INVALID);
    capture_end(saved);
    assert_non_null(strstr(captured, "partition count 0"));
    assert_int_equal(count_lines(captured), 1);
    in.opcode = 0xfe;
    struct isa_fault f;
    assert_int_equal(isa_validate(&in, &f), EMU_INVALID);
    assert_non_null(strstr(f.msg, "unknown opcode 0xfe"));
    assert_int_equal(isa_validate(&in, NULL), EMU_INVALID);
}

/* ---- streams ------------------------------------------------------------------ */
static void make_stream(struct isa_insn *v, size_t n, uint8_t **bytes, size_t *size)
{
    unsigned iter = 0;
    const struct isa_op_desc *op;
    size_t i = 0;
    while (i < n && (op = isa_op_next(&iter)) != NULL)
        if (op->engines & ISA_EM_DVE) {
            isa_gen_insn(&v[i], op, ISA_ENG_DVE, i % 2 == 0, (unsigned)i);
            i++;
        }
    assert_int_equal(i, n);
    assert_int_equal(isa_encode_stream(v, n, ISA_ENG_DVE, bytes, size), EMU_OK);
    assert_int_equal(*size, ISA_STREAM_HEADER_BYTES + n * ISA_INSN_BYTES);
}

static void test_stream_roundtrip(void **state)
{
    (void)state;
    struct isa_insn v[20], *out;
    uint8_t *bytes, *again;
    size_t size, count, size2;
    make_stream(v, 20, &bytes, &size);
    assert_memory_equal(bytes, "TRNI", 4);
    assert_int_equal(isa_decode_stream(bytes, size, ISA_ENG_DVE, &out, &count), EMU_OK);
    assert_int_equal(count, 20);
    assert_int_equal(isa_encode_stream(out, count, ISA_ENG_DVE, &again, &size2), EMU_OK);
    assert_int_equal(size2, size);
    assert_memory_equal(bytes, again, size);
    free(out);
    free(again);
    free(bytes);
    /* an empty stream */
    assert_int_equal(isa_encode_stream(NULL, 0, ISA_ENG_SP, &bytes, &size), EMU_OK);
    assert_int_equal(isa_decode_stream(bytes, size, ISA_ENG_SP, &out, &count), EMU_OK);
    assert_int_equal(count, 0);
    assert_null(out);
    free(bytes);
}

static void expect_stream(const uint8_t *b, size_t size, enum isa_engine eng, emu_status st,
                          const char *needle)
{
    struct isa_insn *out = (void *)1;
    size_t count = 99;
    int saved = capture_begin();
    emu_status got = isa_decode_stream(b, size, eng, &out, &count);
    capture_end(saved);
    if (got != st || strstr(captured, needle) == NULL || count_lines(captured) != 1)
        fail_msg("stream: status %d (want %d), log '%s' (want '%s')", got, st, captured, needle);
    assert_null(out);
    assert_int_equal(count, 0);
}

static void test_stream_errors(void **state)
{
    (void)state;
    struct isa_insn v[4];
    uint8_t *b;
    size_t size;
    make_stream(v, 4, &b, &size);
    uint8_t *c = malloc(size + ISA_INSN_BYTES);
    memcpy(c, b, size);
    expect_stream(c, 10, ISA_ENG_DVE, EMU_INVALID, "truncated");
    expect_stream(c, size - 1, ISA_ENG_DVE, EMU_INVALID, "instruction 3 of 4 truncated");
    expect_stream(c, size - ISA_INSN_BYTES, ISA_ENG_DVE, EMU_INVALID, "instruction 3 of 4 truncated");
    expect_stream(c, size + 5, ISA_ENG_DVE, EMU_INVALID, "5 stray bytes");
    expect_stream(c, size, ISA_ENG_ACT, EMU_INVALID, "another engine");
    c[0] = 'X';
    expect_stream(c, size, ISA_ENG_DVE, EMU_INVALID, "magic");
    memcpy(c, b, size);
    c[4] = 2;
    expect_stream(c, size, ISA_ENG_DVE, EMU_NEFF_VERSION, "version 2");
    c[4] = 0;
    expect_stream(c, size, ISA_ENG_DVE, EMU_INVALID, "version 0");
    memcpy(c, b, size);
    c[13] = 1;
    expect_stream(c, size, ISA_ENG_DVE, EMU_INVALID, "reserved header");
    memcpy(c, b, size);
    c[7] = 64;
    expect_stream(c, size, ISA_ENG_DVE, EMU_INVALID, "128 words");
    memcpy(c, b, size);
    c[ISA_STREAM_HEADER_BYTES + 2 * ISA_INSN_BYTES + 1] = 0xfe;  /* opcode of insn 2 */
    expect_stream(c, size, ISA_ENG_DVE, EMU_INVALID, "instruction 2 (opcode 0xfe on dve): unknown opcode");
    memcpy(c, b, size);
    c[ISA_STREAM_HEADER_BYTES + 1 * ISA_INSN_BYTES] = ISA_INSN_MAGIC | 3;
    expect_stream(c, size, ISA_ENG_DVE, EMU_NEFF_VERSION, "instruction 1");
    free(c);
    free(b);
}

static void test_stream_targets(void **state)
{
    (void)state;
    struct isa_insn v[3], *out;
    uint8_t *b;
    size_t size, count;
    isa_insn_init(&v[0], ISA_ENG_SP, ISA_OP_reg_move);
    v[0].imm[1].i = 4;
    isa_insn_init(&v[1], ISA_ENG_SP, ISA_OP_branch);
    v[1].enums[0] = ISA_CMP_gt;
    v[1].imm[2].i = 0;
    isa_insn_init(&v[2], ISA_ENG_SP, ISA_OP_jump);
    v[2].imm[0].i = 2;
    assert_int_equal(isa_encode_stream(v, 3, ISA_ENG_SP, &b, &size), EMU_OK);
    assert_int_equal(isa_decode_stream(b, size, ISA_ENG_SP, &out, &count), EMU_OK);
    free(out);
    /* patch the jump target beyond the end */
    b[ISA_STREAM_HEADER_BYTES + 2 * ISA_INSN_BYTES + 424] = 3;
    expect_stream(b, size, ISA_ENG_SP, EMU_INVALID, "instruction 2 (jump on sp): target beyond");
    free(b);
    v[1].imm[2].i = 7;
    int saved = capture_begin();
    assert_int_equal(isa_encode_stream(v, 3, ISA_ENG_SP, &b, &size), EMU_INVALID);
    capture_end(saved);
    assert_non_null(strstr(captured, "instruction 1 (branch on sp)"));
    assert_null(b);
    v[1].imm[2].i = 0;
    v[1].engine = ISA_ENG_ACT;
    saved = capture_begin();
    assert_int_equal(isa_encode_stream(v, 3, ISA_ENG_SP, &b, &size), EMU_INVALID);
    capture_end(saved);
    assert_non_null(strstr(captured, "another engine"));
}

/* ---- access patterns ------------------------------------------------------------- */
static struct isa_ap sbuf_ap(uint8_t dt, uint8_t start, uint8_t num, uint64_t off)
{
    struct isa_ap ap = {.mem = ISA_MEM_SBUF, .dtype = dt, .start_part = start, .num_part = num,
                        .ndims = 1, .part_step = 1, .offset = off};
    ap.dim[0] = (struct isa_dim){1, 512};
    return ap;
}

static void test_extent(void **state)
{
    (void)state;
    struct isa_extent e;
    struct isa_ap ap = sbuf_ap(ISA_DT_F32, 32, 32, 1024);
    assert_int_equal(isa_ap_extent(&ap, &e), EMU_OK);
    assert_int_equal(e.part_first, 32);
    assert_int_equal(e.part_last, 63);
    assert_int_equal(e.lo, 1024);
    assert_int_equal(e.hi, 1024 + 2048);
    assert_int_equal(e.elems, 512);
    /* two dims, one walking backwards */
    ap.ndims = 2;
    ap.dim[0] = (struct isa_dim){-64, 4};
    ap.dim[1] = (struct isa_dim){2, 8};
    assert_int_equal(isa_ap_extent(&ap, &e), EMU_OK);
    assert_int_equal(e.lo, 1024 - 3 * 64 * 4);
    assert_int_equal(e.hi, 1024 + (7 * 2 + 1) * 4);
    assert_int_equal(e.elems, 32);
    /* below byte 0 */
    ap.offset = 10;
    assert_int_equal(isa_ap_extent(&ap, &e), EMU_INVALID);
    /* HBM: the partition dim is a stride */
    struct isa_ap h = {.mem = ISA_MEM_HBM, .dtype = ISA_DT_BF16, .num_part = 128, .ndims = 1,
                       .part_step = 512, .var_id = 1, .offset = 0};
    h.dim[0] = (struct isa_dim){1, 512};
    assert_int_equal(isa_ap_extent(&h, &e), EMU_OK);
    assert_int_equal(e.lo, 0);
    assert_int_equal(e.hi, 128 * 512 * 2);
    assert_int_equal(isa_ap_check_bounds(&h, 128 * 512 * 2), EMU_OK);
    assert_int_equal(isa_ap_check_bounds(&h, 128 * 512 * 2 - 1), EMU_EXEC_OOB);
    /* overflow of the byte range and of the element count */
    h.offset = UINT64_MAX - 10;
    assert_int_equal(isa_ap_extent(&h, &e), EMU_INVALID);
    h.offset = 0;
    h.ndims = 4;
    for (int d = 0; d < 4; d++)
        h.dim[d] = (struct isa_dim){0, UINT32_MAX};
    assert_int_equal(isa_ap_extent(&h, &e), EMU_INVALID);
    h.ndims = 2;
    h.dim[0] = (struct isa_dim){INT32_MAX, UINT32_MAX};
    h.dim[1] = (struct isa_dim){INT32_MAX, UINT32_MAX};
    h.dim[2] = h.dim[3] = (struct isa_dim){0, 0};
    assert_int_equal(isa_ap_extent(&h, &e), EMU_INVALID);  /* about 2^65 bytes */
    h.dim[0] = (struct isa_dim){1, 4};
    h.dim[1] = (struct isa_dim){-INT32_MAX, UINT32_MAX};
    h.offset = (uint64_t)INT32_MAX * (UINT32_MAX - 1ull) * 2;
    assert_int_equal(isa_ap_extent(&h, &e), EMU_OK);
    assert_int_equal(e.lo, 0);
}

static void test_bounds(void **state)
{
    (void)state;
    struct isa_ap ap = sbuf_ap(ISA_DT_F32, 0, 128, ISA_SBUF_PART_BYTES_V2 - 2048);
    assert_int_equal(isa_ap_check_bounds(&ap, ISA_SBUF_PART_BYTES_V2), EMU_OK);
    ap.offset += 4;
    assert_int_equal(isa_ap_check_bounds(&ap, ISA_SBUF_PART_BYTES_V2), EMU_EXEC_OOB);
    ap = sbuf_ap(ISA_DT_F32, 100, 20, 0);
    ap.part_step = 2;  /* partitions 100..138 */
    assert_int_equal(isa_ap_check_bounds(&ap, ISA_SBUF_PART_BYTES_V2), EMU_EXEC_OOB);
    ap.mem = ISA_MEM_NONE;
    assert_int_equal(isa_ap_check_bounds(&ap, 1), EMU_INVALID);
    ap = sbuf_ap(ISA_DT_F32, 0, 1, 0);
    ap.part_step = 0;
    assert_int_equal(isa_ap_extent(&ap, &(struct isa_extent){0}), EMU_INVALID);
}

/* ---- dispatch ------------------------------------------------------------------ */
static void test_dispatch(void **state)
{
    (void)state;
    struct isa_exec_ctx ctx = {0};
    unsigned ops = 0;
    for (unsigned code = 0; code < ISA_OPCODE_SPACE; code++) {
        const struct isa_op_desc *op = isa_op_lookup(code);
        assert_int_equal(op != NULL, isa_dispatch[code] != NULL);
        if (op == NULL)
            continue;
        struct isa_insn in;
        isa_insn_init(&in, ISA_ENG_SP, code);
        assert_int_equal(isa_dispatch[code](&ctx, &in), EMU_OK);
        ops++;
    }
    assert_int_equal(ctx.calls, ops);
}

int main(void)
{
    setenv("NEURON_RT_LOG_LEVEL", "ERROR", 1);
    log_env_load();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_dtypes),
        cmocka_unit_test(test_roundtrip_every_op),
        cmocka_unit_test(test_init_defaults),
        cmocka_unit_test(test_decode_header_errors),
        cmocka_unit_test(test_decode_engine_and_flags),
        cmocka_unit_test(test_decode_operand_errors),
        cmocka_unit_test(test_decode_aux_errors),
        cmocka_unit_test(test_decode_sync_errors),
        cmocka_unit_test(test_encode_refuses_invalid),
        cmocka_unit_test(test_stream_roundtrip),
        cmocka_unit_test(test_stream_errors),
        cmocka_unit_test(test_stream_targets),
        cmocka_unit_test(test_extent),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
