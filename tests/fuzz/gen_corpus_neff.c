/*
 * gen_corpus_neff.c: writes the seed corpus of the NEFF fuzz target into
 * the directory given as argument (tests/fuzz/corpus_neff/ is its output,
 * committed): valid trnemu and vendor-style NEFFs and a few broken ones.
 * Run again after a format change: gen-corpus-neff tests/fuzz/corpus_neff
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/neff/neff_file.h"
#include "emu/neff/neff_model.h"
#include "tests/unit/test_neff_util.h"

static const char *outdir;

static void save(const char *name, const uint8_t *b, size_t n)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", outdir, name);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(b, 1, n, fp) != n || fclose(fp) != 0) {
        fprintf(stderr, "gen-corpus-neff: cannot write %s\n", path);
        exit(1);
    }
}

/* Growable buffer for libarchive output. */
struct gen_out {
    uint8_t *data;                      /* bytes */
    size_t len;                         /* used */
};

static la_ssize_t gen_write_cb(struct archive *a, void *ctx, const void *buf, size_t n)
{
    (void)a;
    struct gen_out *o = ctx;
    o->data = realloc(o->data, o->len + n);
    memcpy(o->data + o->len, buf, n);
    o->len += n;
    return (la_ssize_t)n;
}

/* The same NEFF with an uncompressed tar (which the reader accepts), so
 * that the fuzzer can mutate the JSON text directly. */
static void save_plain(const char *name, const uint8_t *neff, size_t size)
{
    struct neff_file *f = NULL;
    if (neff_file_read(neff, size, true, &f) != EMU_OK)
        exit(1);
    struct gen_out o = {0};
    struct archive *a = archive_write_new();
    archive_write_set_format_ustar(a);
    archive_write_set_bytes_in_last_block(a, 1);
    archive_write_open(a, &o, NULL, gen_write_cb, NULL);
    for (size_t i = 0; i < f->n_members; i++) {
        struct archive_entry *e = archive_entry_new();
        size_t n = neff_buf_size(f->members[i].data);
        archive_entry_set_pathname(e, f->members[i].name);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, (la_int64_t)n);
        archive_write_header(a, e);
        if (n > 0)
            archive_write_data(a, neff_buf_data(f->members[i].data), n);
        archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    uint8_t *b;
    size_t bn;
    tu_neff_wrap(o.data, o.len, &b, &bn);
    for (int i = 0; i < 8; i++)     /* keep the original header fields */
        b[544 + i] = neff[544 + i];
    tu_fix_hash(b, bn);
    save(name, b, bn);
    free(b);
    free(o.data);
    neff_file_free(f);
}

static const char vendor_def[] =
    "{\"var\":{\"in0\":{\"type\":\"input\",\"var_id\":1,\"size\":64},"
    "\"out0\":{\"type\":\"output\",\"var_id\":2,\"size\":64,\"ops\":[]},"
    "\"c\":{\"type\":\"file\",\"var_id\":3,\"size\":16,\"file_name\":\"c.bin\"},"
    "\"s\":{\"type\":\"virtual\",\"var_id\":4,\"size\":64,\"backing_variable_off\":128}},"
    "\"dma_queue\":{\"q\":{\"type\":\"in\",\"num_queues\":1,\"queue_instances\":[\"q_a\"]}},"
    "\"sp\":{\"json_file\":\"SP.json\",\"bin_file\":\"SP.bin\"}}";

static const char vendor_sp[] =
    "{\"dma\":[{\"id\":0,\"queue\":\"q\",\"desc\":{\"from\":\"in0\",\"from_off\":0,"
    "\"from_steps\":[1,16],\"from_sizes\":[16,4],\"to\":\"s\",\"to_off\":0,\"to_steps\":[1],"
    "\"to_sizes\":[64]}},{\"id\":1,\"instance_name\":\"q_a\",\"desc\":{\"op\":\"fma\","
    "\"scale\":0.5,\"from\":\"s\",\"from_off\":0,\"from_steps\":[1],\"from_sizes\":[64],"
    "\"to\":\"out0\",\"to_off\":0,\"to_steps\":[1],\"to_sizes\":[64],\"to_dtype\":\"float32\"}}]}";

static void vendor(const char *name, const char *def, const char *sp)
{
    const char *names[] = {"sg00/def.json", "sg00/SP.json", "sg00/SP.bin", "sg00/c.bin", NULL};
    const char *texts[] = {def, sp, "\x01\x02\x03", "0123456789abcdef"};
    uint8_t *b;
    size_t n;
    tu_neff_from_texts(names, texts, 0, &b, &n);
    save(name, b, n);
    if (strcmp(name, "vendor_small.neff") == 0)
        save_plain("vendor_small_plain.neff", b, n);
    free(b);
}

/* The layout of neuronx-cc NEFFs: kelf subgraph list, engine JSON by
 * reference, tensor_map.json, variables without size, a dynamic queue set. */
static void vendor_kelf(void)
{
    const char *names[] = {"neff.json", "kelf-0.json", "info.json", "sg00/def.json",
                           "sg00/PE.json", "sg00/PE.bin", "sg00/tensor_map.json", NULL};
    const char *texts[] = {
        "{\"nodes\":[{\"op\":\"null\",\"name\":\"x\"},{\"op\":\"tvm_op\",\"name\":\"k\","
        "\"attrs\":{\"kelf\":\"kelf-0.json\"}}]}",
        "{\"graphs\":[{\"definition\":\"sg00/def.json\",\"name\":\"sg00\"}],\"version\":\"0.5\"}",
        "{\"tool_version\":\"0\",\"num_tpb\":1}",
        "{\"var\":{\"SB\":{\"type\":\"state-buffer\",\"var_id\":0},"
        "\"x\":{\"type\":\"input\",\"var_id\":1,\"size\":16},"
        "\"y\":{\"type\":\"output\",\"var_id\":2,\"size\":8},"
        "\"T\":{\"type\":\"dge-table\",\"var_id\":3,\"list\":[1,2]}},"
        "\"dma_queue\":{\"qD\":{\"type\":\"dynamic\",\"owner\":\"sp\",\"num_queues\":16,"
        "\"semaphore_set\":[8,9],\"dynamic_dma\":{\"SB_scratch_partition_size\":16384}}},"
        "\"pe\":\"PE.json\",\"pe_instr\":\"PE.bin\",\"pe_dbg\":[\"d.dbg\"]}",
        "{\"dma\":[],\"instr\":\"PE.bin\",\"name\":\"PE.json\"}",
        "0123456789abcdef0123456789abcdef",
        "{\"x\":{\"kind\":\"input\",\"dtype\":\"float16\",\"tf_shape\":[2,4]},"
        "\"y\":{\"kind\":\"output\",\"dtype\":\"float32\",\"tf_shape\":[2]}}",
    };
    uint8_t *b;
    size_t n;
    tu_neff_from_texts(names, texts, 0, &b, &n);
    save("vendor_kelf.neff", b, n);
    free(b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen-corpus-neff DIR\n");
        return 2;
    }
    outdir = argv[1];
    uint8_t *b;
    size_t n;
    tu_small_neff(&b, &n);
    save("trnemu_small.neff", b, n);
    save_plain("trnemu_small_plain.neff", b, n);
    save("truncated_half.neff", b, n / 2);
    save("header_only.neff", b, NEFF_HEADER_SIZE);
    free(b);

    vendor("vendor_small.neff", vendor_def, vendor_sp);
    char *bad = strdup(vendor_sp);                   /* a descriptor leaves its variable */
    char *at = strstr(bad, "[64],\"to_dtype\"");
    at[2] = '5';
    vendor("vendor_oob_desc.neff", vendor_def, bad);
    free(bad);
    vendor("vendor_bad_json.neff", "{\"var\":{\"in0\":", vendor_sp);
    vendor_kelf();

    static const char junk[] = "not a gzip'd tarball, just bytes";
    tu_neff_wrap(junk, sizeof junk, &b, &n);
    save("corrupt_gzip.neff", b, n);
    free(b);

    uint8_t *t;
    size_t tn;
    const char *names[] = {"neff.json", "../escape", "sg00"};
    tu_raw_tar(names, "ffd", 3, &t, &tn);
    tu_neff_wrap(t, tn, &b, &n);
    save("bad_path.neff", b, n);
    free(b);
    free(t);
    return 0;
}
