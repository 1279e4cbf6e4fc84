/*
 * test_neff_model.c: unit tests of the NEFF metadata model (emu/neff/neff_model.c,
 * neff_load.c, neff_store.c): round trips of a model using every feature,
 * zero-copy constants, vendor (unmarked) NEFFs, the trnemu marker, and a
 * table of broken JSON members and out-of-range descriptors, each giving
 * EMU_INVALID (or UNSUPPORTED) with one log line naming the cause.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "devices/config/log_env.h"
#include "emu/log.h"
#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"
#include "emu/neff/npy.h"
#include "test_neff_util.h"

static char logbuf[65536];

static struct neff_model *load_bytes(const uint8_t *b, size_t n, struct neff_file **fout)
{
    struct neff_file *f = NULL;
    assert_int_equal(neff_file_read(b, n, true, &f), EMU_OK);
    struct neff_model *m = NULL;
    assert_int_equal(neff_model_load(f, &m), EMU_OK);
    if (fout)
        *fout = f;
    else
        neff_file_free(f);
    return m;
}

static void store_bytes(const struct neff_model *m, uint8_t **b, size_t *n)
{
    struct neff_file *f = NULL;
    assert_int_equal(neff_model_store(m, &f), EMU_OK);
    assert_int_equal(neff_file_write(f, b, n), EMU_OK);
    neff_file_free(f);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct neff_model *m = tu_small_model();
    assert_true(neff_model_is_trnemu(m));
    uint8_t *b1, *b2;
    size_t n1, n2;
    store_bytes(m, &b1, &n1);
    struct neff_model *m2 = load_bytes(b1, n1, NULL);
    assert_true(neff_model_equal(m, m2));
    assert_true(neff_model_is_trnemu(m2));
    store_bytes(m2, &b2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* resolved indices */
    const struct neff_subgraph *sg = m2->sgs[0];
    const struct neff_dma_desc *d = &sg->eng[NEFF_ENG_SP].descs[0];
    assert_string_equal(sg->vars[d->from[0].var_index].name, "a");
    assert_string_equal(sg->vars[d->to.var_index].name, "sb");
    /* a change is noticed */
    m2->sgs[0]->eng[NEFF_ENG_DVE].descs[1].from[1].off = 1;
    assert_false(neff_model_equal(m, m2));
    free(b1);
    free(b2);
    neff_model_free(m);
    neff_model_free(m2);
}

/* A runtime that decoded the streams releases them: each section stays
 * present without its bytes, and the model still frees cleanly (the
 * buffers were shared with the file, freed first here). */
static void test_drop_code(void **state)
{
    (void)state;
    struct neff_model *m = tu_small_model();
    uint8_t *b;
    size_t n;
    store_bytes(m, &b, &n);
    struct neff_model *m2 = load_bytes(b, n, NULL);
    struct neff_subgraph *sg = m2->sgs[0];
    int had = 0;
    for (int e = 0; e < NEFF_ENG_COUNT; e++)
        had += sg->eng[e].code != NULL;
    assert_true(had > 0);
    neff_subgraph_drop_code(sg);
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        assert_null(sg->eng[e].code);
        assert_int_equal(sg->eng[e].present, m->sgs[0]->eng[e].present);
    }
    neff_subgraph_drop_code(sg);      /* a second time: nothing left to drop */
    free(b);
    neff_model_free(m);
    neff_model_free(m2);
}

static void test_members_and_constants(void **state)
{
    (void)state;
    uint8_t *b;
    size_t n;
    tu_small_neff(&b, &n);
    struct neff_file *f = NULL;
    struct neff_model *m = load_bytes(b, n, &f);
    static const char *expect[] = {"neff.json", "sg00/def.json", "sg00/Activation.json",
                                   "sg00/Pool.json", "sg00/DVE.json", "sg00/SP.json",
                                   "sg00/PE.bin", "sg00/Activation.bin", "sg00/SP.bin",
                                   "sg00/w.npy", "sg00/consts/raw.bin"};
    assert_int_equal(f->n_members, sizeof expect / sizeof expect[0]);
    for (size_t i = 0; i < f->n_members; i++)
        assert_string_equal(f->members[i].name, expect[i]);
    const struct neff_subgraph *sg = m->sgs[0];
    const struct neff_var *w = neff_sg_find_var(sg, "w");
    assert_non_null(w);
    /* zero copy: the var shares the member's buffer */
    assert_ptr_equal(w->file, neff_file_find(f, "sg00/w.npy")->data);
    assert_int_equal(w->data_len, 32);
    const float *wf = (const float *)neff_var_data(w);
    assert_true(wf[3] == 1.5f);
    const struct neff_var *raw = neff_sg_find_var(sg, "raw");
    assert_int_equal(raw->data_off, 0);
    assert_int_equal(raw->data_len, 16);
    assert_int_equal(neff_var_data(raw)[2], 14);
    assert_ptr_equal(neff_sg_find_var_id(sg, 6), neff_sg_find_var(sg, "ptr"));
    assert_null(neff_sg_find_var(sg, "nope"));
    assert_non_null(neff_sg_find_queue(sg, "qdata"));
    const struct neff_io *io = neff_model_find_io(m, "a");
    assert_non_null(io);
    assert_int_equal(io->dtype, NEFF_DTYPE_FLOAT32);
    assert_int_equal(io->size, 32);
    assert_int_equal(io->ndim, 2);
    assert_int_equal(sg->eng[NEFF_ENG_PE].n_descs, 0);
    assert_int_equal(neff_buf_size(sg->eng[NEFF_ENG_PE].code), 5);
    assert_false(sg->eng[NEFF_ENG_POOL].bin_file != NULL);
    assert_int_equal(m->info.lnc_size, 1);
    assert_string_equal(m->info.name, "small");
    /* the file outlives nothing: free it first, the model keeps its bytes */
    neff_file_free(f);
    assert_true(((const float *)neff_var_data(w))[7] == 3.5f);
    neff_model_free(m);
    free(b);
}

/* ---- hand-written members ---------------------------------------------- */

static const char base_neff[] =
    "{\"subgraphs\":[\"sg00\"],\"inputs\":[{\"name\":\"in0\",\"dtype\":\"float32\","
    "\"shape\":[4,4],\"size\":64}],\"outputs\":[{\"name\":\"out0\",\"dtype\":\"uint8\","
    "\"shape\":[64]}],\"vendor_stuff\":{\"x\":1}}";

static const char base_def[] =
    "{\"var\":{\"in0\":{\"type\":\"input\",\"var_id\":1,\"size\":64},"
    "\"out0\":{\"type\":\"output\",\"var_id\":2,\"size\":64,\"ops\":[]},"
    "\"c\":{\"type\":\"file\",\"var_id\":3,\"size\":16,\"file_name\":\"c.bin\"},"
    "\"p\":{\"type\":\"pointer\",\"var_id\":4,\"size\":8,\"referenced_var_id\":3}},"
    "\"dma_queue\":{\"q\":{\"type\":\"in\",\"num_queues\":1,\"queue_instances\":[\"q_a\"],"
    "\"mystery\":true}},"
    "\"sp\":{\"json_file\":\"SP.json\",\"bin_file\":\"SP.bin\"},\"extra_key\":{\"a\":[1,2]}}";

static const char base_sp[] =
    "{\"dma\":[{\"id\":0,\"queue\":\"q\",\"desc\":{\"from\":\"in0\",\"from_off\":0,"
    "\"from_steps\":[1],\"from_sizes\":[64],\"to\":\"out0\",\"to_off\":0,\"to_steps\":[1],"
    "\"to_sizes\":[64]},\"unknown\":null}],\"engine_meta\":\"whatever\"}";

static char *replace(const char *text, const char *old, const char *new_)
{
    const char *at = strstr(text, old);
    if (at == NULL)
        fail_msg("test case: '%s' not found", old);
    size_t n = strlen(text) - strlen(old) + strlen(new_) + 1;
    char *r = malloc(n);
    snprintf(r, n, "%.*s%s%s", (int)(at - text), text, new_, at + strlen(old));
    return r;
}

/* Build a NEFF of these texts (neff_json may be NULL), load it, and expect
 * `want` with one log line containing `substr` (no line on success). */
static struct neff_model *run_texts(const char *neff_json, const char *def, const char *sp,
                                    uint64_t bits, emu_status want, const char *substr)
{
    const char *names[6], *texts[6];
    size_t k = 0;
    if (neff_json) {
        names[k] = "neff.json";
        texts[k++] = neff_json;
    }
    names[k] = "sg00/def.json";
    texts[k++] = def;
    names[k] = "sg00/SP.json";
    texts[k++] = sp;
    names[k] = "sg00/SP.bin";
    texts[k++] = "\x01\x02";
    names[k] = "sg00/c.bin";
    texts[k++] = "0123456789abcdef";
    names[k] = NULL;
    uint8_t *b;
    size_t n;
    tu_neff_from_texts(names, texts, bits, &b, &n);
    struct neff_file *f = NULL;
    assert_int_equal(neff_file_read(b, n, true, &f), EMU_OK);
    free(b);
    struct neff_model *m = NULL;
    tu_log_begin();
    emu_status st = neff_model_load(f, &m);
    int lines = tu_log_end(logbuf, sizeof logbuf);
    neff_file_free(f);
    if (getenv("TU_SHOW_LOG"))
        print_message("%s", logbuf);
    bool ok = st == want && lines == (want == EMU_OK ? 0 : 1) &&
              (substr == NULL || strstr(logbuf, substr) != NULL);
    if (!ok)
        fail_msg("status %d (want %d), %d lines, want '%s' in: %s", st, want, lines,
                 substr ? substr : "", logbuf);
    if (want != EMU_OK)
        assert_null(m);
    return m;
}

static void test_vendor_neff(void **state)
{
    (void)state;
    struct neff_model *m = run_texts(NULL, base_def, base_sp, 0, EMU_OK, NULL);
    assert_false(neff_model_is_trnemu(m));
    assert_int_equal(m->n_io, 2);
    assert_string_equal(m->io[0].name, "in0");
    assert_false(m->io[0].is_output);
    assert_int_equal(m->io[0].dtype, NEFF_DTYPE_UINT8);
    assert_int_equal(m->io[0].shape[0], 64);
    assert_true(m->io[1].is_output);
    const struct neff_var *out0 = neff_sg_find_var(m->sgs[0], "out0");
    assert_string_equal(out0->ops_json, "[]");
    /* the vendor model stores and loads back the same */
    uint8_t *b;
    size_t n;
    store_bytes(m, &b, &n);
    struct neff_model *m2 = load_bytes(b, n, NULL);
    assert_true(neff_model_equal(m, m2));
    free(b);
    neff_model_free(m2);
    neff_model_free(m);
    m = run_texts(base_neff, base_def, base_sp, 0, EMU_OK, NULL);
    assert_int_equal(m->io[0].dtype, NEFF_DTYPE_FLOAT32);
    assert_int_equal(m->io[0].ndim, 2);
    assert_int_equal(m->io[1].size, 64);
    neff_model_free(m);
}

/* The vendor layout: engine JSON by reference, the stream named by
 * "<engine>_instr", a state buffer and a DGE table without size, a dynamic
 * queue set; it stores in the same layout and loads back equal. */
static void test_vendor_layout(void **state)
{
    (void)state;
    char *d1 = replace(base_def, "\"sp\":{\"json_file\":\"SP.json\",\"bin_file\":\"SP.bin\"}",
                       "\"sp\":\"SP.json\",\"sp_instr\":\"SP.bin\",\"sp_dbg\":[\"x.dbg\"]");
    char *d2 = replace(d1, "\"p\":{", "\"SB\":{\"type\":\"state-buffer\",\"var_id\":0},"
                       "\"T\":{\"type\":\"dge-table\",\"var_id\":9,\"list\":[1,2]},\"p\":{");
    char *def = replace(d2, "\"mystery\":true", "\"dynamic_dma\":{\"b\":2,\"a\":1}");
    char *sp = replace(base_sp, "\"engine_meta\"", "\"instr\":\"SP.bin\",\"engine_meta\"");
    struct neff_model *m = run_texts(NULL, def, sp, 0, EMU_OK, NULL);
    const struct neff_subgraph *sg = m->sgs[0];
    assert_true(sg->eng[NEFF_ENG_SP].by_ref);
    assert_string_equal(sg->eng[NEFF_ENG_SP].bin_file, "SP.bin");
    assert_int_equal(neff_buf_size(sg->eng[NEFF_ENG_SP].code), 2);
    assert_true(neff_sg_find_var(sg, "SB")->no_size);
    assert_true(neff_sg_find_var(sg, "T")->no_size);
    assert_false(neff_sg_find_var(sg, "in0")->no_size);
    assert_string_equal(sg->queues[0].dynamic_dma_json, "{\"a\":1,\"b\":2}");
    uint8_t *b;
    size_t n;
    store_bytes(m, &b, &n);
    struct neff_model *m2 = load_bytes(b, n, NULL);
    assert_true(neff_model_equal(m, m2));
    free(b);
    neff_model_free(m2);
    neff_model_free(m);
    /* an engine JSON whose "instr" disagrees with def.json */
    char *sp2 = replace(base_sp, "\"engine_meta\"", "\"instr\":\"c.bin\",\"engine_meta\"");
    run_texts(NULL, def, sp2, 0, EMU_INVALID, "key 'instr'");
    free(sp2);
    free(sp);
    free(def);
    free(d2);
    free(d1);
}

static void test_marker(void **state)
{
    (void)state;
    char *def1 = replace(base_def, "{\"var\"", "{\"trnemu_isa\":{\"version\":1},\"var\"");
    struct neff_model *m = run_texts(NULL, def1, base_sp, NEFF_FEATURE_TRNEMU_ISA, EMU_OK,
                                     NULL);
    assert_true(neff_model_is_trnemu(m));
    assert_int_equal(m->sgs[0]->isa_version, 1);
    neff_model_free(m);
    run_texts(NULL, def1, base_sp, 0, EMU_INVALID, "feature bit");
    run_texts(NULL, base_def, base_sp, NEFF_FEATURE_TRNEMU_ISA, EMU_INVALID, "trnemu_isa");
    char *def2 = replace(base_def, "{\"var\"", "{\"trnemu_isa\":{\"version\":2},\"var\"");
    run_texts(NULL, def2, base_sp, NEFF_FEATURE_TRNEMU_ISA, EMU_NEFF_VERSION,
              "version 2");
    char *def3 = replace(base_def, "{\"var\"", "{\"trnemu_isa\":{\"version\":\"1\"},\"var\"");
    run_texts(NULL, def3, base_sp, NEFF_FEATURE_TRNEMU_ISA, EMU_INVALID, "'version'");
    char *def4 = replace(base_def, "{\"var\"", "{\"trnemu_isa\":{\"version\":0},\"var\"");
    run_texts(NULL, def4, base_sp, NEFF_FEATURE_TRNEMU_ISA, EMU_INVALID, "'version'");
    char *def5 = replace(base_def, "{\"var\"", "{\"trnemu_isa\":[1],\"var\"");
    run_texts(NULL, def5, base_sp, NEFF_FEATURE_TRNEMU_ISA, EMU_INVALID, "trnemu_isa");
    free(def1);
    free(def2);
    free(def3);
    free(def4);
    free(def5);
}

/* One broken member: replace `old` by `new_` in member `which`. */
struct bad_case {
    int which;                          /* 0: neff.json, 1: def.json, 2: SP.json */
    const char *old;                    /* text to replace */
    const char *new_;                   /* replacement */
    emu_status want;                    /* expected status */
    const char *substr;                 /* expected in the log line */
};

static const struct bad_case bad_cases[] = {
    /* def.json: variables */
    {1, "\"var_id\":1,", "\"var_id\":\"1\",", EMU_INVALID, "'var_id': must be an integer"},
    {1, "\"type\":\"input\"", "\"type\":\"inputs\"", EMU_INVALID, "var 'in0': key 'type'"},
    {1, "\"size\":64},\"out0\"", "\"size\":-1},\"out0\"", EMU_INVALID, "'size'"},
    {1, "\"var_id\":2", "\"var_id\":1", EMU_INVALID, "var_id 1"},
    {1, "\"referenced_var_id\":3", "\"referenced_var_id\":99", EMU_INVALID, "referenced_var_id"},
    {1, "\"file_name\":\"c.bin\"", "\"file_name\":\"nope.bin\"", EMU_INVALID, "sg00/nope.bin"},
    {1, "\"file_name\":\"c.bin\"", "\"file_name\":\"../c.bin\"", EMU_INVALID, "file_name"},
    {1, "\"file_name\":\"c.bin\"", "\"file_name\":\"/c.bin\"", EMU_INVALID, "file_name"},
    {1, "\"file_name\":\"c.bin\"", "\"file_name\":7", EMU_INVALID, "'file_name': must be a string"},
    {1, "\"size\":16", "\"size\":15", EMU_INVALID, "does not fit"},
    {1, "\"size\":8,", "\"size\":8,\"alignment\":3,", EMU_INVALID, "alignment"},
    {1, "\"size\":8,", "\"size\":8,\"list\":[3,42],", EMU_INVALID, "list entry 42"},
    {1, "\"size\":8,", "\"size\":8,\"ops\":{},", EMU_INVALID, "'ops'"},
    {1, "\"in0\":{", "\"in0\":7,\"zz\":{", EMU_INVALID, "var 'in0': must be an object"},
    {1, "\"size\":64},\"out0\"", "\"size\":64,\"size\":64},\"out0\"", EMU_INVALID, "bad JSON"},
    {1, "{\"var\"", "{\"var\" x", EMU_INVALID, "bad JSON"},
    {1, "\"size\":64},\"out0\"", "\"size\":32},\"out0\"", EMU_INVALID, "in0"},
    /* def.json: queues */
    {1, "\"num_queues\":1", "\"num_queues\":0", EMU_INVALID, "num_queues"},
    {1, "\"num_queues\":1", "\"num_queues\":17", EMU_INVALID, "num_queues"},
    {1, "\"num_queues\":1", "\"num_queues\":true", EMU_INVALID, "'num_queues'"},
    {1, "\"type\":\"in\"", "\"type\":\"sideways\"", EMU_INVALID, "dma_queue 'q': key 'type'"},
    {1, "\"queue_instances\":[\"q_a\"]", "\"queue_instances\":[1]", EMU_INVALID,
     "queue_instances"},
    {1, "\"mystery\":true", "\"pinned\":1", EMU_INVALID, "'pinned'"},
    /* def.json: engine sections */
    {1, "\"sp\":{\"json_file\":\"SP.json\",\"bin_file\":\"SP.bin\"}", "\"sp\":1",
     EMU_INVALID, "'sp': must be an object or an engine JSON member name"},
    {1, "\"sp\":{\"json_file\":\"SP.json\",\"bin_file\":\"SP.bin\"}", "\"sp\":\"No.json\"",
     EMU_INVALID, "member 'sg00/No.json' is missing"},
    {1, "\"bin_file\":\"SP.bin\"", "\"bin_file\":\"missing.bin\"", EMU_INVALID, "missing.bin"},
    {1, "\"json_file\":\"SP.json\"", "\"json_file\":\"c.bin\"", EMU_INVALID, "sg00/c.bin"},
    {1, "\"json_file\":\"SP.json\"", "\"json_file\":[]", EMU_INVALID, "json_file"},
    {1, "{\"var\":{", "{\"var\":[],\"x\":{", EMU_INVALID, "'var': must be an object"},
    {1, "\"extra_key\"", "\"pe\":{\"json_file\":\"SP.json\"},\"extra_key\"", EMU_INVALID,
     "json_file 'SP.json'"},
    {1, "\"json_file\":\"SP.json\"", "\"json_file\":\"def.json\"", EMU_INVALID,
     "json_file 'def.json'"},
    {1, "\"file_name\":\"c.bin\"", "\"file_name\":\"SP.bin\"", EMU_OK, NULL},
    /* engine JSON: descriptors */
    {2, "\"queue\":\"q\"", "\"queue\":\"nope\"", EMU_INVALID, "queue names no dma_queue"},
    {2, "\"queue\":\"q\"", "\"instance_name\":\"q_a\"", EMU_OK, NULL},
    {2, "\"queue\":\"q\"", "\"instance_name\":\"q_b\"", EMU_INVALID, "instance_name"},
    {2, "\"queue\":\"q\",", "", EMU_INVALID, "neither queue nor instance_name"},
    {2, "\"to_sizes\":[64]", "\"to_sizes\":[65]", EMU_INVALID, "reaches byte 65 of a 64-byte"},
    {2, "\"to_off\":0", "\"to_off\":1", EMU_INVALID, "to 'out0'"},
    {2, "\"to_off\":0", "\"to_off\":18446744073709551615", EMU_INVALID, "bad JSON"},
    {2, "\"to_off\":0,", "", EMU_INVALID, "'to_off': missing"},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]", "\"from_steps\":[1,0],\"from_sizes\":[32,2]",
     EMU_OK, NULL},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]", "\"from_steps\":[1,32],\"from_sizes\":[32,2]",
     EMU_OK, NULL},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]", "\"from_steps\":[1,33],\"from_sizes\":[32,2]",
     EMU_INVALID, "reaches byte 65"},
    {2, "\"from_steps\":[1]", "\"from_steps\":[1,1]", EMU_INVALID, "from_steps"},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]",
     "\"from_steps\":[1,0,0,0,0],\"from_sizes\":[64,1,1,1,1]", EMU_INVALID, "from_sizes"},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]", "\"from_steps\":[],\"from_sizes\":[]",
     EMU_INVALID, "from_steps"},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]",
     "\"from_steps\":[1,9223372036854775807],\"from_sizes\":[64,3]", EMU_INVALID, "overflows"},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]",
     "\"from_steps\":[1,4294967296,4294967296],\"from_sizes\":[64,4294967296,4294967296]",
     EMU_INVALID, "overflows"},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]", "\"from_steps\":[-1],\"from_sizes\":[2]",
     EMU_INVALID, "before the variable"},
    {2, "\"from_off\":0,\"from_steps\":[1]", "\"from_off\":63,\"from_steps\":[-1]", EMU_OK,
     NULL},
    {2, "\"from_steps\":[1],\"from_sizes\":[64]", "\"from_steps\":[1],\"from_sizes\":[0]",
     EMU_OK, NULL},
    {2, "\"from_steps\":[1]", "\"from_steps\":[1.5]", EMU_INVALID, "from_steps"},
    {2, "\"from\":\"in0\"", "\"from\":\"ghost\"", EMU_INVALID, "'ghost'"},
    {2, "\"id\":0", "\"id\":-3", EMU_INVALID, "'id'"},
    {2, "\"id\":0,", "", EMU_INVALID, "'id': missing"},
    {2, "\"to\":\"out0\"", "\"to_dtype\":\"float33\",\"to\":\"out0\"", EMU_INVALID, "to_dtype"},
    {2, "\"to\":\"out0\"", "\"to_dtype\":\"bfloat16\",\"to\":\"out0\"", EMU_OK, NULL},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"divide\",", EMU_INVALID, "'op'"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"fma\",\"scale\":\"2\",", EMU_INVALID, "'scale'"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"fma\",\"scale\":2,", EMU_OK, NULL},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"fma\",\"scale_dtype\":\"int8\",", EMU_INVALID,
     "scale_dtype"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"min\",\"constant_dtype\":\"int32\",\"constant\":1.5,",
     EMU_INVALID, "constant"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"max\",\"constant_dtype\":\"uint32\",\"constant\":-1,",
     EMU_INVALID, "constant"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"max\",\"constant_dtype\":\"uint32\",\"constant\":7,",
     EMU_OK, NULL},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"min\",\"constant_dtype\":\"int32\",", EMU_INVALID,
     "'constant': missing"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"min\",\"constant_dtype\":\"float16\",\"constant\":1,",
     EMU_INVALID, "constant_dtype"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"transpose\",\"transpose_shape\":[1,2,3],", EMU_INVALID,
     "transpose_shape"},
    {2, "\"desc\":{", "\"desc\":{\"op\":\"transpose\",\"transpose_shape\":[1,2,3,4],",
     EMU_OK, NULL},
    {2, "{\"dma\":", "{\"dma\":5,\"old\":", EMU_INVALID, "'dma': must be an array"},
    {2, "{\"dma\":[", "{\"dma\":[7,", EMU_INVALID, "dma[0]: must be an object"},
    {2, "\"desc\":{", "\"desc\":[],\"d\":{", EMU_INVALID, "'desc': must be an object"},
    {2, "\"id\":0", "\"id\":0,\"remote_semaphores\":[\"a\"]", EMU_INVALID,
     "remote_semaphores"},
    {2, "\"from\":\"in0\",\"from_off\":0,\"from_steps\":[1],\"from_sizes\":[64]",
     "\"from_arr\":[{\"from\":\"in0\",\"from_off\":0,\"from_steps\":[1],\"from_sizes\":[64]},"
     "{\"from\":\"c\",\"from_off\":0,\"from_steps\":[1],\"from_sizes\":[16]}]",
     EMU_OK, NULL},
    {2, "\"from\":\"in0\",\"from_off\":0,\"from_steps\":[1],\"from_sizes\":[64]",
     "\"from_arr\":[]", EMU_INVALID, "from_arr"},
    {2, "\"from\":\"in0\",\"from_off\":0,\"from_steps\":[1],\"from_sizes\":[64]",
     "\"from_arr\":[{\"from\":\"c\",\"from_off\":1,\"from_steps\":[1],\"from_sizes\":[16]}]",
     EMU_INVALID, "from 'c'"},
    {2, "\"id\":0", "\"id\":0,\"semaphore\":-1", EMU_INVALID, "'semaphore'"},
    {2, "\"id\":0", "\"id\":0,\"section_start_desc\":\"yes\"", EMU_INVALID, "section_start_desc"},
    /* neff.json */
    {0, "\"shape\":[4,4]", "\"shape\":[4,5]", EMU_INVALID, "inputs 'in0'"},
    {0, "\"shape\":[4,4],\"size\":64", "\"shape\":[4,4],\"size\":65", EMU_INVALID, "size"},
    {0, "\"subgraphs\":[\"sg00\"]", "\"subgraphs\":\"sg00\"", EMU_INVALID, "'subgraphs'"},
    {0, "\"subgraphs\":[\"sg00\"]", "\"subgraphs\":[\"sg01\"]", EMU_INVALID, "sg01/def.json"},
    {0, "\"subgraphs\":[\"sg00\"]", "\"subgraphs\":[\"sg00\",\"sg00\"]", EMU_INVALID, "twice"},
    {0, "\"subgraphs\":[\"sg00\"]", "\"subgraphs\":[\"x/sg00\"]", EMU_INVALID, "x/sg00"},
    {0, "\"subgraphs\":[\"sg00\"]", "\"subgraphs\":[]", EMU_INVALID, "no subgraph"},
    {0, "\"dtype\":\"uint8\"", "\"dtype\":\"u8\"", EMU_INVALID, "'dtype'"},
    {0, "\"name\":\"out0\"", "\"name\":\"out1\"", EMU_INVALID, "out0"},
    {0, "\"inputs\":[", "\"inputs\":[5,", EMU_INVALID, "inputs[0]"},
    {0, "\"shape\":[64]", "\"shape\":[-64]", EMU_INVALID, "'shape'"},
    {0, "{\"subgraphs\"", "[{\"subgraphs\"", EMU_INVALID, "bad JSON"},
};

static void test_bad_json(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        const char *base = c->which == 0 ? base_neff : c->which == 1 ? base_def : base_sp;
        char *t = replace(base, c->old, c->new_);
        print_message("case %zu: %s\n", i, c->new_);
        struct neff_model *m = run_texts(c->which == 0 ? t : base_neff,
                                         c->which == 1 ? t : base_def,
                                         c->which == 2 ? t : base_sp, 0, c->want, c->substr);
        neff_model_free(m);
        free(t);
    }
    /* a top level that is not an object */
    run_texts("[]", base_def, base_sp, 0, EMU_INVALID, "not a JSON object");
    run_texts(base_neff, base_def, "[\"dma\"]", 0, EMU_INVALID, "not a JSON object");
}

static void test_no_subgraph(void **state)
{
    (void)state;
    const char *names[] = {"neff.json", NULL};
    const char *texts[] = {"{}"};
    uint8_t *b;
    size_t n;
    tu_neff_from_texts(names, texts, 0, &b, &n);
    struct neff_file *f = NULL;
    assert_int_equal(neff_file_read(b, n, true, &f), EMU_OK);
    struct neff_model *m = NULL;
    tu_log_begin();
    assert_int_equal(neff_model_load(f, &m), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    neff_file_free(f);
    free(b);
}

/* Subgraphs found without neff.json are ordered by number. */
static void test_scan_order(void **state)
{
    (void)state;
    static const char def[] = "{\"var\":{}}";
    const char *names[] = {"sg10/def.json", "sg2/def.json", "sg1/def.json", "other.json", NULL};
    const char *texts[] = {def, def, def, "{}"};
    uint8_t *b;
    size_t n;
    tu_neff_from_texts(names, texts, 0, &b, &n);
    struct neff_model *m = load_bytes(b, n, NULL);
    assert_int_equal(m->n_sgs, 3);
    assert_string_equal(m->sgs[0]->name, "sg1");
    assert_string_equal(m->sgs[1]->name, "sg2");
    assert_string_equal(m->sgs[2]->name, "sg10");
    assert_int_equal(m->n_io, 0);
    neff_model_free(m);
    free(b);
}

/* Store refuses a model whose descriptor leaves its variable, with one line. */
static void test_store_validates(void **state)
{
    (void)state;
    struct neff_model *m = tu_small_model();
    struct neff_subgraph *sg = m->sgs[0];
    struct neff_dma_ap from = {.var = "a", .ndim = 1, .steps = {1}, .sizes = {33}};
    struct neff_dma_desc d = {.id = 9, .queue = "qin", .from = &from, .n_from = 1,
                              .to = {.var = "b", .ndim = 1, .steps = {1}, .sizes = {32}}};
    assert_int_equal(neff_sg_add_desc(sg, NEFF_ENG_POOL, &d), EMU_OK);
    struct neff_file *f = NULL;
    tu_log_begin();
    assert_int_equal(neff_model_store(m, &f), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    assert_non_null(strstr(logbuf, "Pool.json: dma[1]: from 'a'"));
    assert_null(f);
    neff_model_free(m);

    m = tu_small_model();
    struct neff_var v = {.name = "a", .type = NEFF_VAR_TMP_BUF, .var_id = 77, .size = 1};
    tu_log_begin();
    assert_int_equal(neff_sg_add_var(m->sgs[0], &v), EMU_INVALID);
    v.name = "fresh";
    v.var_id = 0;                   /* already used by "a" */
    assert_int_equal(neff_sg_add_var(m->sgs[0], &v), EMU_OK);
    assert_int_equal(neff_model_store(m, &f), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 2);
    assert_non_null(strstr(logbuf, "var_id 0"));
    neff_model_free(m);

    m = tu_small_model();
    uint32_t shape[1] = {8};
    tu_log_begin();
    assert_int_equal(neff_model_add_io(m, "a", false, NEFF_DTYPE_FLOAT32, shape, 1), EMU_INVALID);
    assert_int_equal(neff_model_add_io(m, "c", false, 99, shape, 1), EMU_INVALID);
    assert_int_equal(neff_model_add_io(m, "ghost", false, NEFF_DTYPE_INT8, shape, 1), EMU_OK);
    assert_int_equal(neff_model_store(m, &f), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 3);
    assert_non_null(strstr(logbuf, "'ghost': no subgraph"));
    neff_model_free(m);

    m = tu_small_model();
    m->info.feature_bits = 0;
    tu_log_begin();
    assert_int_equal(neff_model_store(m, &f), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    m->sgs[0]->isa_version = 0;
    assert_int_equal(neff_model_store(m, &f), EMU_OK);
    neff_file_free(f);
    neff_model_free(m);

    m = neff_model_new(NULL);
    tu_log_begin();
    assert_int_equal(neff_model_store(m, &f), EMU_INVALID);
    assert_int_equal(tu_log_end(logbuf, sizeof logbuf), 1);
    assert_non_null(neff_model_add_subgraph(m));
    assert_int_equal(neff_model_store(m, &f), EMU_OK);
    neff_file_free(f);
    neff_model_free(m);
}

static void test_ap_range(void **state)
{
    (void)state;
    uint64_t lo, hi;
    struct neff_dma_ap ap = {.off = 10, .ndim = 2, .steps = {1, 100}, .sizes = {4, 3}};
    assert_true(neff_ap_range(&ap, &lo, &hi));
    assert_int_equal(lo, 10);
    assert_int_equal(hi, 10 + 3 + 200 + 1);
    uint64_t bytes;
    assert_true(neff_ap_bytes(&ap, &bytes));
    assert_int_equal(bytes, 12);
    ap.steps[1] = -5;
    assert_true(neff_ap_range(&ap, &lo, &hi));
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 14);
    ap.steps[1] = -6;
    assert_false(neff_ap_range(&ap, &lo, &hi));
    ap.steps[1] = INT64_MIN;
    assert_false(neff_ap_range(&ap, &lo, &hi));
    ap.steps[1] = 1;
    ap.off = UINT64_MAX - 3;
    assert_false(neff_ap_range(&ap, &lo, &hi));
    ap.off = 0;
    ap.sizes[1] = 0;
    assert_true(neff_ap_range(&ap, &lo, &hi));
    assert_int_equal(hi - lo, 0);
    ap.ndim = 0;
    assert_false(neff_ap_range(&ap, &lo, &hi));
    ap.ndim = 4;
    ap.sizes[0] = ap.sizes[1] = ap.sizes[2] = ap.sizes[3] = UINT64_MAX;
    assert_false(neff_ap_bytes(&ap, &bytes));
}

static void test_names(void **state)
{
    (void)state;
    static const char *dtypes[] = {"float8e3", "float8e4", "float8e5", "float16", "float32",
                                   "float32r", "bfloat16", "uint8", "uint16", "uint32",
                                   "uint64", "int8", "int16", "int32", "int64"};
    static const uint32_t values[] = {13, 14, 15, 7, 10, 11, 6, 3, 5, 9, 1, 2, 4, 8, 12};
    static const size_t sizes[] = {1, 1, 1, 2, 4, 4, 2, 1, 2, 4, 8, 1, 2, 4, 8};
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        uint32_t d = 0;
        assert_true(neff_dtype_parse(dtypes[i], &d));
        assert_int_equal(d, values[i]);
        assert_string_equal(neff_dtype_name(d), dtypes[i]);
        assert_int_equal(neff_dtype_size(d), sizes[i]);
    }
    uint32_t d;
    assert_false(neff_dtype_parse("float64", &d));
    assert_null(neff_dtype_name(0));
    assert_string_equal(neff_engine_name(NEFF_ENG_POOL), "pool");
    assert_string_equal(neff_var_type_name(NEFF_VAR_TMP_BUF), "tmp-buf");
    assert_string_equal(neff_queue_type_name(NEFF_QUEUE_EMBEDDING_UPDATE), "embedding_update");
    assert_string_equal(neff_dma_op_name(NEFF_DMA_TRANSPOSE), "transpose");
}

int main(void)
{
    unsetenv("NEURON_RT_LOG_LEVEL");
    unsetenv("NEURON_RT_LOG_LEVEL_NEFF");
    log_env_load();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),   cmocka_unit_test(test_members_and_constants),
        cmocka_unit_test(test_drop_code),
        cmocka_unit_test(test_vendor_neff),  cmocka_unit_test(test_vendor_layout),
        cmocka_unit_test(test_marker),
        cmocka_unit_test(test_bad_json),     cmocka_unit_test(test_no_subgraph),
        cmocka_unit_test(test_scan_order),   cmocka_unit_test(test_store_validates),
        cmocka_unit_test(test_ap_range),     cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
