/*
 * test_asm.c: unit tests of the assembler and disassembler (emu/isa/asm.h,
 * emu/isa/disasm.h): every directive and what it puts into the model, labels
 * and named semaphores, continuation lines, inline constants of every
 * dtype, errors with their positions for a list of bad inputs, the C-API
 * declarations, deterministic bytes, and disassemble -> assemble round
 * trips (the example kernels' round trips run as examples/ tests).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "emu/isa/asm.h"
#include "emu/isa/disasm.h"
#include "emu/isa/isa.h"
#include "emu/neff/npy.h"
#include "emu/num/numerics.h"
#include "test_neff_util.h"

/* ---- helpers ------------------------------------------------------------- */

static struct neff_model *assemble(const char *src)
{
    struct asm_opts o = {.source_name = "t.s", .no_files = true};
    struct neff_model *m = NULL;
    emu_status st = asm_buffer(src, strlen(src), &o, stderr, &m);
    if (st != EMU_OK)
        fail_msg("assembly failed (%d):\n%s", st, src);
    return m;
}

/* The first error of src (NULL when it assembles). */
static char *first_error(const char *src)
{
    struct asm_opts o = {.source_name = "t.s", .no_files = true};
    struct asm_ctx *a = NULL;
    assert_int_equal(asm_new(&o, &a), EMU_OK);
    asm_text(a, src, strlen(src));
    emu_status st = asm_finish(a);
    char *e = asm_error_count(a) ? strdup(asm_error_text(a, 0)) : NULL;
    assert_true((st == EMU_OK) == (e == NULL));
    asm_free(a);
    return e;
}

static void assert_round_trip(const struct neff_model *m)
{
    if (!disasm_round_trip(m, stderr)) {
        disasm_model(stderr, m, NULL, NULL);
        fail_msg("disassembly does not assemble back into an equal model");
    }
}

/* Assemble, store, write, read and load: the model a NEFF file gives. */
static struct neff_model *through_file(const struct neff_model *m, uint8_t **bytes, size_t *n)
{
    struct neff_file *f = NULL;
    struct neff_model *back = NULL;
    assert_int_equal(asm_neff_bytes(m, bytes, n), EMU_OK);
    assert_int_equal(neff_file_read(*bytes, *n, true, &f), EMU_OK);
    assert_int_equal(neff_model_load(f, &back), EMU_OK);
    neff_file_free(f);
    return back;
}

static const struct isa_insn *insns_of(const struct neff_subgraph *sg, int e, size_t *n,
                                       struct isa_insn **owned)
{
    const struct neff_buf *b = sg->eng[e].code;
    assert_non_null(b);
    assert_int_equal(isa_decode_stream(neff_buf_data(b), neff_buf_size(b), (enum isa_engine)e,
                                       owned, n), EMU_OK);
    return *owned;
}

/* ---- directives ---------------------------------------------------------- */

static const char every_directive[] =
    "; every directive once\n"
    ".neff \"every \\\"thing\\\"\"\n"
    ".header version=2.1 build_version=\"gen 7\" uuid=00112233445566778899aabbccddeeff\n"
    ".input  x f32 [2, 4]\n"
    ".output y bf16 [8] id=7 align=64 fabric_path=main\n"
    ".const  w f32 [2, 2] = 1.5, -2, bits:0x7fc00001, inf\n"
    ".const  z i16 [3] = 7                ; one value fills the shape\n"
    ".const  raw bytes=00ff10 member=blobs/raw.dat size=8\n"
    ".scratch tmp 4096 align=128\n"
    ".scratch tmp2 f32 [16, 16]\n"
    ".var sb type=state-buffer size=1024\n"
    ".var v1 type=virtual size=64 backing_off=256\n"
    ".var ptr type=pointer size=8 ref=tmp\n"
    ".var tab type=dge-table size=16 list=0,8 ops=\"[{\\\"a\\\": [1, 2]}]\"\n"
    ".sem ready\n"
    ".sem done 9\n"
    ".event go\n"
    ".queue qin type=in num_queues=2 owner=sp pinned instances=qa,qb semaphore_set=1,2 "
    "semaphore=3 fabric_path=main\n"
    ".queue qout type=out\n"
    ".engine act code act_func_sets=gelu_set,exp_set\n"
    ".engine pool nocode json=Pool2.json\n"
    ".desc sp id=1 queue=qin from=x[0, [16,2], [1,16]]:f32 to=tmp[64, [1,32]]:f32 "
    "semaphore=4 event=5\n"
    ".desc sp id=2 instance=qb op=fma from=x[0, [1,32]]:f32 to=tmp[0, [1,32]]:f32 scale=0.25\n"
    ".desc dve id=0 queue=qout op=max from=x[0, [1,32]] from=tmp[0, [1,32]] to=tmp[32, [1,32]] "
    "constant=-3 constant_dtype=i32 remote_semaphores=1,2 function_start=f0 section_start "
    "tiling_dims=2 transpose_shape=2,4 transpose_element_size=4\n"
    "sp.dma_copy dst=sbuf[0:2, 0, [1,4]]:f32 src=hbm:x[[4,2], 0, [1,4]]:f32 signal=ready+=1\n"
    "dve.tensor_scalar dst=sbuf[0:2, 64, [1,4]]:f32 data=sbuf[0:2, 0, [1,4]]:f32 op0=add "
    "operand0=1 wait=ready>=1 signal=done+=1 signal=go=1\n"
    "sp.sem_wait sem=done value=1\n"
    "sp.nop wait=go==1\n";

static void test_every_directive(void **state)
{
    (void)state;
    struct neff_model *m = assemble(every_directive);
    assert_string_equal(m->info.name, "every \"thing\"");
    assert_int_equal(m->info.neff_version_major, 2);
    assert_int_equal(m->info.neff_version_minor, 1);
    assert_string_equal(m->info.build_version, "gen 7");
    assert_int_equal(m->info.uuid[0], 0x00);
    assert_int_equal(m->info.uuid[15], 0xff);
    assert_true(neff_model_is_trnemu(m));
    assert_int_equal(m->n_io, 2);
    assert_string_equal(m->io[0].name, "x");
    assert_int_equal(m->io[1].dtype, NEFF_DTYPE_BFLOAT16);
    assert_int_equal(m->io[1].size, 16);
    assert_int_equal(m->n_sgs, 1);
    const struct neff_subgraph *sg = m->sgs[0];
    assert_string_equal(sg->name, "sg00");
    assert_int_equal(sg->n_vars, 11);
    const struct neff_var *y = neff_sg_find_var(sg, "y"), *w = neff_sg_find_var(sg, "w");
    assert_int_equal(y->var_id, 7);
    assert_int_equal(y->alignment, 64);
    assert_string_equal(y->fabric_path, "main");
    assert_int_equal(w->var_id, 8);  /* after the largest id so far */
    assert_int_equal(w->type, NEFF_VAR_FILE);
    assert_string_equal(w->file_name, "w.npy");
    assert_int_equal(w->size, 16);
    const float *wf = (const float *)neff_var_data(w);
    uint32_t nan_bits;
    memcpy(&nan_bits, &wf[2], 4);
    assert_true(wf[0] == 1.5f && wf[1] == -2.0f && nan_bits == 0x7fc00001u && wf[3] > 1e38f);
    const int16_t *z = (const int16_t *)neff_var_data(neff_sg_find_var(sg, "z"));
    assert_true(z[0] == 7 && z[1] == 7 && z[2] == 7);
    const struct neff_var *raw = neff_sg_find_var(sg, "raw");
    assert_string_equal(raw->file_name, "blobs/raw.dat");
    assert_int_equal(raw->size, 8);
    assert_int_equal(raw->data_len, 3);
    assert_int_equal(neff_var_data(raw)[1], 0xff);
    assert_int_equal(neff_sg_find_var(sg, "tmp")->alignment, 128);
    assert_int_equal(neff_sg_find_var(sg, "tmp2")->size, 1024);
    assert_int_equal(neff_sg_find_var(sg, "sb")->type, NEFF_VAR_STATE_BUFFER);
    assert_int_equal(neff_sg_find_var(sg, "v1")->backing_variable_off, 256);
    const struct neff_var *ptr = neff_sg_find_var(sg, "ptr");
    assert_true(ptr->has_referenced_var);
    assert_int_equal(ptr->referenced_var_id, neff_sg_find_var(sg, "tmp")->var_id);
    const struct neff_var *tab = neff_sg_find_var(sg, "tab");
    assert_int_equal(tab->n_list, 2);
    assert_string_equal(tab->ops_json, "[{\"a\":[1,2]}]");
    assert_int_equal(sg->n_queues, 2);
    const struct neff_queue *q = neff_sg_find_queue(sg, "qin");
    assert_true(q->num_queues == 2 && q->pinned && q->n_instances == 2 && q->has_semaphore);
    assert_string_equal(q->owner, "sp");
    assert_string_equal(q->instances[1], "qb");
    /* engines */
    assert_true(sg->eng[NEFF_ENG_ACT].present);
    assert_non_null(sg->eng[NEFF_ENG_ACT].code);  /* empty stream */
    assert_int_equal(sg->eng[NEFF_ENG_ACT].n_act_func_sets, 2);
    assert_true(sg->eng[NEFF_ENG_POOL].present);
    assert_null(sg->eng[NEFF_ENG_POOL].code);
    assert_string_equal(sg->eng[NEFF_ENG_POOL].json_file, "Pool2.json");
    assert_false(sg->eng[NEFF_ENG_PE].present);
    /* descriptors: dims written outermost first, stored innermost first */
    const struct neff_engine_sec *sp = &sg->eng[NEFF_ENG_SP];
    assert_int_equal(sp->n_descs, 2);
    assert_int_equal(sp->descs[0].from[0].ndim, 2);
    assert_int_equal(sp->descs[0].from[0].steps[0], 1);
    assert_int_equal(sp->descs[0].from[0].sizes[0], 16);
    assert_int_equal(sp->descs[0].from[0].steps[1], 16);
    assert_int_equal(sp->descs[0].to.off, 64);
    assert_true(sp->descs[0].has_semaphore && sp->descs[0].has_event);
    assert_string_equal(sp->descs[1].instance_name, "qb");
    assert_true(sp->descs[1].scale == 0.25);
    const struct neff_dma_desc *dd = &sg->eng[NEFF_ENG_DVE].descs[0];
    assert_true(dd->cce && dd->n_from == 2 && dd->op == NEFF_DMA_MAX);
    assert_true(dd->constant == -3.0 && dd->constant_dtype == NEFF_DTYPE_INT32);
    assert_true(dd->section_start_desc && dd->has_tiling_dims && dd->has_transpose_shape);
    assert_int_equal(dd->to.dtype, NEFF_DTYPE_UINT8);
    /* instructions with named semaphores and events */
    struct isa_insn *code = NULL;
    size_t n = 0;
    const struct isa_insn *dv = insns_of(sg, NEFF_ENG_DVE, &n, &code);
    assert_int_equal(n, 1);
    assert_int_equal(dv[0].wait[0].id, 0);      /* ready = s0 */
    assert_int_equal(dv[0].signal[0].id, 9);    /* done = s9 */
    assert_int_equal(dv[0].signal[1].kind, ISA_SYNC_EVENT);
    free(code);
    const struct isa_insn *s = insns_of(sg, NEFF_ENG_SP, &n, &code);
    assert_int_equal(n, 3);
    assert_int_equal(s[1].imm[0].i, 9);         /* sem=done */
    assert_int_equal(s[2].wait[0].kind, ISA_SYNC_EVENT);
    free(code);
    assert_round_trip(m);
    neff_model_free(m);
}

static void test_labels(void **state)
{
    (void)state;
    struct neff_model *m = assemble(
        "sp.reg_move rd=0 value=4\n"
        "top:   sp.reg_alu rd=0 rs=0 op=subtract imm=1\n"
        "pe.jump target=pe_end   ; forward, on another engine\n"
        "pe.nop\n"
        "sp.branch reg=0 cmp=gt value=0 target=top\n"
        "pe_end:\n"
        "  ; a comment between a label and its instruction\n"
        "pe.halt\n"
        "sp.jump target=1\n");
    struct isa_insn *code = NULL;
    size_t n = 0;
    const struct isa_insn *sp = insns_of(m->sgs[0], NEFF_ENG_SP, &n, &code);
    assert_int_equal(n, 4);
    assert_int_equal(sp[2].imm[2].i, 1);  /* branch target=top */
    assert_int_equal(sp[3].imm[0].i, 1);  /* numeric */
    free(code);
    const struct isa_insn *pe = insns_of(m->sgs[0], NEFF_ENG_PE, &n, &code);
    assert_int_equal(n, 3);
    assert_int_equal(pe[0].imm[0].i, 2);
    free(code);
    assert_round_trip(m);
    neff_model_free(m);
}

static void test_subgraphs(void **state)
{
    (void)state;
    struct neff_model *m = assemble(
        ".subgraph first\n"
        ".input a f32 [4]\n"
        "l: sp.jump target=l\n"
        ".subgraph\n"
        ".input a f32 [4]\n"
        ".scratch s 16\n"
        "l: sp.nop\n"
        "sp.jump target=l\n");
    assert_int_equal(m->n_sgs, 2);
    assert_string_equal(m->sgs[0]->name, "first");
    assert_string_equal(m->sgs[1]->name, "sg01");
    assert_int_equal(m->n_io, 1);
    assert_int_equal(m->info.lnc_size, 2);
    assert_int_equal(m->info.num_tpb, 2);
    assert_int_equal(m->sgs[1]->n_vars, 2);
    assert_round_trip(m);
    neff_model_free(m);
}

static void test_continuation_and_comments(void **state)
{
    (void)state;
    struct neff_model *m = assemble(
        "# hash comments too\n"
        ".input a f32 \\\n"
        "   [2, 3]   ; the shape\n"
        ".const c f32 [3] = 1, \\\n"
        "   2, 3\n"
        "sp.dma_copy dst=sbuf[0:2, 0, [1,3]]:f32 \\\n"
        "    src=hbm:a[[3,2], 0, [1,3]]:f32\r\n");
    assert_int_equal(m->io[0].ndim, 2);
    assert_int_equal(m->io[0].shape[1], 3);
    assert_int_equal(neff_sg_find_var(m->sgs[0], "c")->data_len, 12);
    assert_non_null(m->sgs[0]->eng[NEFF_ENG_SP].code);
    neff_model_free(m);
}

/* Inline values of every dtype come back from the .npy payload bit-exact. */
static void test_inline_dtypes(void **state)
{
    (void)state;
    struct neff_model *m = assemble(
        ".const a u64 [2] = 18446744073709551615, 0\n"
        ".const b i8 [2] = -128, 127\n"
        ".const c u8 [2] = 0, 255\n"
        ".const d i16 [1] = -32768\n"
        ".const e u16 [1] = 65535\n"
        ".const f bf16 [2] = 1.5, bits:0x7fc1\n"
        ".const g f16 [2] = 0.000061035156, -inf\n"
        ".const h i32 [1] = -2147483648\n"
        ".const i u32 [1] = 0xffffffff\n"
        ".const j f32 [2] = -0, 3.4028235e38\n"
        ".const k f32r [1] = 0.1\n"
        ".const l i64 [1] = -9223372036854775808\n"
        ".const m fp8e4 [2] = 1, bits:0x7f\n"
        ".const n fp8e5 [1] = -2\n"
        ".const o fp8e3 [1] = 0.5\n"
        ".const p f32 [0] =\n");
    const struct neff_subgraph *sg = m->sgs[0];
    const uint8_t *d;
    d = neff_var_data(neff_sg_find_var(sg, "a"));
    uint64_t u64;
    memcpy(&u64, d, 8);
    assert_true(u64 == UINT64_MAX);
    d = neff_var_data(neff_sg_find_var(sg, "b"));
    assert_true((int8_t)d[0] == -128 && d[1] == 127);
    uint16_t h[2];
    memcpy(h, neff_var_data(neff_sg_find_var(sg, "f")), 4);
    assert_true(h[0] == num_f32_to_bf16(1.5f) && h[1] == 0x7fc1);
    memcpy(h, neff_var_data(neff_sg_find_var(sg, "g")), 4);
    assert_true(h[0] == 0x0400 && h[1] == 0xfc00);
    float f[2];
    memcpy(f, neff_var_data(neff_sg_find_var(sg, "j")), 8);
    assert_true(f[0] == 0.0f && signbit(f[0]) && f[1] == 3.4028235e38f);
    d = neff_var_data(neff_sg_find_var(sg, "m"));
    assert_true(d[0] == num_f32_to_fp8(NUM_DT_FP8_E4, 1.0f) && d[1] == 0x7f);
    assert_int_equal(neff_sg_find_var(sg, "p")->size, 0);
    assert_round_trip(m);
    neff_model_free(m);
}

/* A model built directly with every var type, queue and descriptor form:
 * its disassembly must assemble back into the same model. */
static void test_round_trip_builder_model(void **state)
{
    (void)state;
    tu_quiet(true);
    struct neff_model *m = tu_small_model();
    struct neff_subgraph *sg = m->sgs[0];
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        if (sg->eng[e].code == NULL)
            continue;
        struct isa_insn nop[2];
        uint8_t *bytes = NULL;
        size_t size = 0;
        assert_int_equal(isa_insn_init(&nop[0], (unsigned)e, ISA_OP_nop), EMU_OK);
        nop[1] = nop[0];
        size_t count = e == NEFF_ENG_ACT ? 0 : 2;  /* act: an empty stream */
        assert_int_equal(isa_encode_stream(nop, count, (enum isa_engine)e, &bytes, &size),
                         EMU_OK);
        assert_int_equal(neff_sg_set_code(sg, (enum neff_engine)e, bytes, size), EMU_OK);
        free(bytes);
    }
    assert_int_equal(neff_model_validate(m), EMU_OK);
    assert_round_trip(m);
    uint8_t *bytes = NULL;
    size_t n = 0;
    struct neff_model *back = through_file(m, &bytes, &n);
    assert_true(neff_model_equal(m, back));
    assert_round_trip(back);
    free(bytes);
    neff_model_free(back);
    neff_model_free(m);
    tu_quiet(false);
}

/* A vendor NEFF: metadata printed, streams described, no failure. */
static void test_foreign_neff(void **state)
{
    (void)state;
    tu_quiet(true);
    struct neff_model *m = tu_small_model();
    m->info.feature_bits = 0;
    m->sgs[0]->isa_version = 0;
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(disasm_model(out, m, NULL, NULL), EMU_OK);
    fclose(out);
    assert_non_null(strstr(text, "is not trnemu ISA"));
    assert_non_null(strstr(text, ".queue"));
    assert_non_null(strstr(text, ".desc sp"));
    free(text);
    /* A trnemu NEFF whose stream is not valid ISA fails to disassemble. */
    m->info.feature_bits = NEFF_FEATURE_TRNEMU_ISA;
    m->sgs[0]->isa_version = 1;
    out = open_memstream(&text, &len);
    assert_int_equal(disasm_model(out, m, NULL, NULL), EMU_INVALID);
    fclose(out);
    free(text);
    neff_model_free(m);
    tu_quiet(false);
}

static void test_deterministic_bytes(void **state)
{
    (void)state;
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    struct neff_model *m1 = assemble(every_directive), *m2 = assemble(every_directive);
    assert_int_equal(asm_neff_bytes(m1, &b1, &n1), EMU_OK);
    assert_int_equal(asm_neff_bytes(m2, &b2, &n2), EMU_OK);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* The file's model equals the assembled one, and so does its round trip. */
    uint8_t *b3 = NULL;
    size_t n3 = 0;
    struct neff_model *back = through_file(m1, &b3, &n3);
    assert_true(neff_model_equal(m1, back));
    assert_round_trip(back);
    free(b1);
    free(b2);
    free(b3);
    neff_model_free(back);
    neff_model_free(m1);
    neff_model_free(m2);
}

/* The C API declarations, and feeding after a finish. */
static void test_api(void **state)
{
    (void)state;
    struct asm_ctx *a = NULL;
    uint32_t shape[2] = {2, 2};
    float w[4] = {1, 2, 3, 4};
    assert_int_equal(asm_new(NULL, &a), EMU_OK);
    assert_int_equal(asm_declare_io(a, "in", false, ISA_DT_F32, shape, 2), EMU_OK);
    assert_int_equal(asm_declare_io(a, "out", true, ISA_DT_F32, shape, 2), EMU_OK);
    assert_int_equal(asm_declare_const(a, "w", ISA_DT_F32, shape, 2, w, sizeof w), EMU_OK);
    assert_int_equal(asm_declare_scratch(a, "tmp", 64), EMU_OK);
    const char *line = "sp.dma_copy dst=hbm:out[[2,2], 0, [1,2]]:f32 "
                       "src=hbm:w[[2,2], 0, [1,2]]:f32";
    assert_int_equal(asm_line(a, line, strlen(line)), EMU_OK);
    assert_int_equal(asm_finish(a), EMU_OK);
    assert_int_equal(asm_finish(a), EMU_OK);
    const struct neff_model *m = asm_model(a);
    assert_non_null(m);
    assert_int_equal(neff_sg_find_var(m->sgs[0], "w")->data_len, 16);
    assert_round_trip(m);
    assert_int_equal(asm_line(a, "sp.nop", 6), EMU_OK);
    assert_null(asm_model(a));
    assert_int_equal(asm_finish(a), EMU_OK);
    struct neff_model *taken = asm_take_model(a);
    assert_non_null(taken);
    assert_int_equal(neff_buf_size(taken->sgs[0]->eng[NEFF_ENG_SP].code),
                     ISA_STREAM_HEADER_BYTES + 2 * ISA_INSN_BYTES);
    assert_int_equal(asm_line(a, "sp.nop", 6), EMU_INVALID);
    neff_model_free(taken);
    asm_free(a);
    /* bad declarations */
    assert_int_equal(asm_new(NULL, &a), EMU_OK);
    assert_int_equal(asm_declare_const(a, "w", ISA_DT_F32, shape, 2, w, 12), EMU_INVALID);
    assert_int_equal(asm_declare_io(a, "x", false, 99, shape, 2), EMU_INVALID);
    assert_int_equal(asm_finish(a), EMU_INVALID);
    assert_int_equal(asm_error_count(a), 2);
    assert_non_null(strstr(asm_error_text(a, 0), "do not match"));
    asm_free(a);
}

/* ---- errors with positions ----------------------------------------------- */

struct bad_case {
    const char *src;    /* the input */
    const char *where;  /* "t.s:LINE:COL:" expected at the start */
    const char *why;    /* a piece of the message */
};

static const struct bad_case bad_cases[] = {
    {".input a f33 [1]", "t.s:1:10:", "unknown dtype"},
    {".input a f32 [1, x]", "t.s:1:18:", "expected an integer"},
    {".input a f32", "t.s:1:1:", "needs NAME DTYPE [SHAPE]"},
    {".input a f32 [4] bogus=1", "t.s:1:18:", "takes no option 'bogus'"},
    {".input a f32 [4] extra", "t.s:1:18:", "unexpected 'extra'"},
    {".input a f32 [4]\n.input a f32 [4]", "t.s:2:1:", "already declared"},
    {".input a f32 [4]\n.output a f32 [4]", "t.s:2:1:", "declared differently"},
    {".input a f32 [4] id=1\n.input b f32 [4] id=1", "t.s:2:1:", "var_id 1 is already used"},
    {".bogus 1", "t.s:1:1:", "unknown directive '.bogus'"},
    {". x", "t.s:1:1:", "expected a directive name"},
    {".neff \"unterminated", "t.s:1:7:", "unterminated string"},
    {".neff \"a\\qb\"", "t.s:1:9:", "unknown escape"},
    {".input a f32 [4", "t.s:1:14:", "unclosed '['"},
    {".header version=x", "t.s:1:17:", "MAJOR.MINOR"},
    {".header colour=1", "t.s:1:9:", "unknown header field"},
    {".header uuid=12", "t.s:1:14:", "32 hexadecimal digits"},
    {".header pkg_version=3", "t.s:1:21:", "1 (sha256) or 2 (md5)"},
    {".header version=3.0", "t.s:1:17:", "newer than"},
    {".subgraph a/b", "t.s:1:11:", "one plain directory name"},
    {".subgraph x\n.subgraph x", "t.s:2:11:", "exists already"},
    {".sem s1", "t.s:1:6:", "identifier other than"},
    {".sem a\n.event a", "t.s:2:8:", "already a semaphore or event name"},
    {".sem a 256", "t.s:1:8:", "0..255"},
    {".const c f32 [2] = 1, 2, 3", "t.s:1:26:", "more values"},
    {".const c f32 [3] = 1, 2", "t.s:1:18:", "2 values for a shape of 3"},
    {".const c f32 [3] = 1, , 2", "t.s:1:23:", "empty list item"},
    {".const c i8 [1] = 200", "t.s:1:19:", "-128..127"},
    {".const c f32 [1] = x", "t.s:1:20:", "expected a number"},
    {".const c f32 [1] file=\"x.npy\"", "t.s:1:23:", "not allowed"},
    {".const c bytes=abc", "t.s:1:16:", "even number"},
    {".const c bytes=0g", "t.s:1:16:", "not a hexadecimal digit"},
    {".const c = 1", "t.s:1:10:", "need a DTYPE"},
    {".const c f32 [1] = 1 member=c.bin", "t.s:1:20:", "expected a number"},
    {".const c f32 [1] member=c.bin = 1", "t.s:1:1:", "name ending in .npy"},
    {".const c bytes=00 member=../x", "t.s:1:1:", "usable member name"},
    {".scratch s 10 align=3", "t.s:1:1:", "power of two"},
    {".scratch s", "t.s:1:1:", "needs NAME SIZE"},
    {".var v type=input size=4", "t.s:1:13:", "declare input variables"},
    {".var v type=thing size=4", "t.s:1:13:", "unknown variable type"},
    {".var p type=pointer size=8 ref=nothing", "t.s:1:32:", "no variable 'nothing'"},
    {".var p type=pointer size=8 ref=44", "t.s:1:1:", "names a var_id that no variable"},
    {".var t type=dge-table size=8 ops={bad", "t.s:1:34:", "ops is not JSON"},
    {".queue q type=bogus", "t.s:1:15:", "unknown queue type"},
    {".queue q type=in num_queues=0", "t.s:1:29:", "num_queues is 1..16"},
    {".queue q type=in\n.queue q type=out", "t.s:2:8:", "already declared"},
    {".input a f32 [4]\n.desc sp id=0 queue=q from=a[0, [1,16]] to=a[0, [1,16]]", "t.s:2:21:",
     "no queue 'q'"},
    {".input a f32 [4]\n.queue q type=in\n.desc sp id=0 queue=q from=a[0, [1,32]] to=a[0, [1,16]]",
     "t.s:3:28:", "reaches byte 32 of the 16-byte 'a'"},
    {".queue q type=in\n.desc sp id=0 queue=q from=nope[0, [1,4]] to=nope[0, [1,4]]", "t.s:2:28:",
     "no variable 'nope'"},
    {".input a f32 [4]\n.queue q type=in\n.desc sp id=0 queue=q from=a[0] to=a[0, [1,4]]",
     "t.s:3:28:", "1 to 4 [step,size]"},
    {".input a f32 [4]\n.queue q type=in\n"
     ".desc sp id=0 queue=q from=a[0, [1,4]]:f99 to=a[0, [1,4]]",
     "t.s:3:39:", "expected :DTYPE"},
    {".input a f32 [4]\n.queue q type=in\n.desc sp id=0 queue=q from=a[0, [1,4]] to=a[0, [1,4]] "
     "scale=2", "t.s:3:55:", "scale= needs op=fma"},
    {".input a f32 [4]\n.queue q type=in\n.desc sp id=0 queue=q from=a[0, [1,4]] to=a[0, [1,4]] "
     "op=min constant=1.5 constant_dtype=i32", "t.s:3:71:", "does not fit i32"},
    {".desc xx id=0 queue=q", "t.s:1:7:", "unknown engine"},
    {".engine pe nocode\npe.nop", "t.s:1:1:", "says nocode"},
    {".engine pe\n.engine pe", "t.s:2:1:", "was given before"},
    {"sp.dma_copy dst=sbuf[0:128, 0, [1,4]]:f32 \\\n    src=bogus", "t.s:2:9:", ""},
    {"sp.nop bogus=1", "t.s:1:8:", "no operand 'bogus'"},
    {"xx.nop", "t.s:1:1:", "unknown engine"},
    {"pool.tensor_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=psum[0:1, 0, [1,1]]:f32", "t.s:1:46:",
     "cannot access PSUM"},
    {"sp.dma_copy dst=sbuf[0:1, 0, [1,1]]:f32 src=hbm:nope[[1,1], 0, [1,1]]:f32", "t.s:1:", ""},
    {"sp.jump target=nowhere", "t.s:1:16:", "no label 'nowhere'"},
    {"sp.nop target=x", "t.s:1:", "no operand 'target'"},
    {"loop:\npe.nop\nsp.jump target=loop", "t.s:3:16:", "is on the pe engine"},
    {"x:\nx: sp.nop", "t.s:2:1:", "defined twice"},
    {"sp.nop\nend:", "t.s:2:1:", "not followed by an instruction"},
    {"end:\n.subgraph\nsp.nop", "t.s:1:1:", "not followed by an instruction"},
    {"loop: .neff x", "t.s:1:7:", "followed by an instruction, not a directive"},
    {"sp.jump target=5\nsp.nop", "t.s:1:1:", "past the last sp instruction"},
    {"sp.nop wait=ready>=1", "t.s:1:13:", "unknown semaphore or event 'ready'"},
    {".event go\nsp.sem_wait sem=go", "t.s:2:17:", "unknown semaphore 'go'"},
    {".engine pe bin=def.json", "t.s:1:1:", "member 'def.json' is used twice"},
    {".const PE bytes=00 member=PE.bin\npe.nop", "t.s:1:1:", "taken by an engine section"},
    {".header feature_bits=0\n.input a f32 [4]", NULL, NULL},  /* valid: no trnemu marker */
};

static void test_errors(void **state)
{
    (void)state;
    tu_quiet(true);
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        char *e = first_error(c->src);
        if (c->where == NULL) {
            if (e != NULL)
                fail_msg("case %zu '%s': unexpected error %s", i, c->src, e);
            continue;
        }
        if (e == NULL)
            fail_msg("case %zu '%s': no error", i, c->src);
        if (strncmp(e, c->where, strlen(c->where)) != 0 || strstr(e, c->why) == NULL ||
            strchr(e, '\n') != NULL)
            fail_msg("case %zu '%s':\n  got    '%s'\n  wanted '%s ...%s...'", i, c->src, e,
                     c->where, c->why);
        free(e);
    }
    tu_quiet(false);
}

/* Errors do not stop the assembler: each bad line is reported once. */
static void test_many_errors(void **state)
{
    (void)state;
    struct asm_opts o = {.source_name = "m.s", .max_errors = 3};
    struct asm_ctx *a = NULL;
    assert_int_equal(asm_new(&o, &a), EMU_OK);
    const char *src = ".a\n.b\nsp.nop\n.c\n.d\n.e\n";
    assert_int_equal(asm_text(a, src, strlen(src)), EMU_INVALID);
    assert_int_equal(asm_error_count(a), 3);
    assert_string_equal(asm_error_text(a, 2), "m.s:4:1: unknown directive '.c'");
    assert_int_equal(asm_finish(a), EMU_INVALID);
    asm_free(a);
}

/* Garbage of all kinds never crashes and always errs cleanly. */
static void test_garbage(void **state)
{
    (void)state;
    static const char *const junk[] = {
        "\"", "[", "]", "=", "= = =", ".const", ".const x f32 [1] = ",
        ".desc sp id=0 queue=q from=[", "sp.", ".", ":", "a:b:c", "sp.dma_copy dst=",
        ".input \"\" f32 [1]", ".header tpb_per_node=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,"
        "17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,"
        "45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,60,61,62,63,64,65",
        ".const x f32 [4294967296, 4294967296] = 0", ".scratch x 99999999999999999999",
        ".input x f32 [4294967295, 4294967295, 4294967295]",
    };
    tu_quiet(true);
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
        char *e = first_error(junk[i]);
        if (e == NULL)
            fail_msg("'%s' assembled", junk[i]);
        free(e);
    }
    char nul[8] = {'s', 'p', '.', 'n', 'o', 'p', '\0', 'x'};
    struct asm_ctx *a = NULL;
    assert_int_equal(asm_new(NULL, &a), EMU_OK);
    assert_int_equal(asm_text(a, nul, sizeof nul), EMU_INVALID);
    asm_free(a);
    tu_quiet(false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_directive),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_subgraphs),
        cmocka_unit_test(test_continuation_and_comments),
        cmocka_unit_test(test_inline_dtypes),
        cmocka_unit_test(test_round_trip_builder_model),
        cmocka_unit_test(test_foreign_neff),
        cmocka_unit_test(test_deterministic_bytes),
        cmocka_unit_test(test_api),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_many_errors),
        cmocka_unit_test(test_garbage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
