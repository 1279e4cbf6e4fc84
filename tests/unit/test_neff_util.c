/*
 * test_neff_util.c: helpers for the NEFF tests (see test_neff_util.h).
 * Failures here abort: they are bugs in the test, not in the code tested.
 */
#include "test_neff_util.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/log.h"
#include "emu/neff/npy.h"

#define TU_CHECK(x)                                                             \
    do {                                                                        \
        if (!(x)) {                                                             \
            fprintf(stderr, "%s:%d: test helper failed: %s\n", __FILE__, __LINE__, #x); \
            abort();                                                            \
        }                                                                       \
    } while (0)

void tu_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t tu_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ---- the small model --------------------------------------------------- */

static void add_var(struct neff_subgraph *sg, const struct neff_var *v)
{
    TU_CHECK(neff_sg_add_var(sg, v) == EMU_OK);
}

static void small_vars(struct neff_subgraph *sg)
{
    float w[8];
    for (int i = 0; i < 8; i++)
        w[i] = (float)i * 0.5f;
    uint64_t shape[2] = {2, 4};
    uint8_t *npy;
    size_t npy_len;
    TU_CHECK(npy_write("<f4", shape, 2, w, sizeof w, &npy, &npy_len) == EMU_OK);
    struct neff_buf *wb = neff_buf_copy(npy, npy_len);
    free(npy);
    uint8_t raw[16];
    for (int i = 0; i < 16; i++)
        raw[i] = (uint8_t)(i * 7);
    struct neff_buf *rb = neff_buf_copy(raw, sizeof raw);
    uint32_t table[2] = {0, 1};

    add_var(sg, &(struct neff_var){.name = "a", .type = NEFF_VAR_INPUT, .var_id = 0, .size = 32});
    add_var(sg, &(struct neff_var){.name = "b", .type = NEFF_VAR_OUTPUT, .var_id = 1, .size = 32,
                                   .alignment = 64});
    add_var(sg, &(struct neff_var){.name = "w", .type = NEFF_VAR_FILE, .var_id = 2, .size = 32,
                                   .file_name = "w.npy", .file = wb});
    add_var(sg, &(struct neff_var){.name = "raw", .type = NEFF_VAR_FILE, .var_id = 3,
                                   .size = 64, .file_name = "consts/raw.bin", .file = rb});
    add_var(sg, &(struct neff_var){.name = "sb", .type = NEFF_VAR_STATE_BUFFER, .var_id = 4,
                                   .size = 65536});
    add_var(sg, &(struct neff_var){.name = "scratch", .type = NEFF_VAR_VIRTUAL, .var_id = 5,
                                   .size = 128, .has_backing_off = true,
                                   .backing_variable_off = 4096, .ops_json = "[]"});
    add_var(sg, &(struct neff_var){.name = "ptr", .type = NEFF_VAR_POINTER, .var_id = 6,
                                   .size = 8, .has_referenced_var = true,
                                   .referenced_var_id = 5});
    add_var(sg, &(struct neff_var){.name = "tmp", .type = NEFF_VAR_TMP_BUF, .var_id = 7,
                                   .size = 256, .fabric_path = "alt"});
    add_var(sg, &(struct neff_var){.name = "tbl", .type = NEFF_VAR_DGE_TABLE, .var_id = 8,
                                   .size = 16, .list = table, .n_list = 2});
    neff_buf_unref(wb);
    neff_buf_unref(rb);
}

static void small_queues(struct neff_subgraph *sg)
{
    char *inst[2] = {"qin_0", "qin_1"};
    uint32_t sems[2] = {1, 2};
    TU_CHECK(neff_sg_add_queue(sg, &(struct neff_queue){
                 .name = "qin", .type = NEFF_QUEUE_IN, .num_queues = 2, .owner = "sp",
                 .instances = inst, .n_instances = 2, .has_semaphore = true,
                 .semaphore = 3}) == EMU_OK);
    TU_CHECK(neff_sg_add_queue(sg, &(struct neff_queue){
                 .name = "qout", .type = NEFF_QUEUE_OUT, .num_queues = 1,
                 .semaphore_set = sems, .n_semaphore_set = 2, .pinned = true,
                 .fabric_path = "main"}) == EMU_OK);
    TU_CHECK(neff_sg_add_queue(sg, &(struct neff_queue){
                 .name = "qdata", .type = NEFF_QUEUE_DATA, .num_queues = 16}) == EMU_OK);
}

static struct neff_dma_ap ap(const char *var, uint64_t off, uint64_t n0, int64_t s1, uint64_t n1,
                             uint32_t dtype)
{
    return (struct neff_dma_ap){.var = (char *)var, .off = off, .ndim = 2, .steps = {1, s1},
                                .sizes = {n0, n1}, .dtype = dtype};
}

static void add_desc(struct neff_subgraph *sg, enum neff_engine e, struct neff_dma_desc *d)
{
    TU_CHECK(neff_sg_add_desc(sg, e, d) == EMU_OK);
}

static void small_descs(struct neff_subgraph *sg)
{
    struct neff_dma_ap from = ap("a", 0, 16, 16, 2, NEFF_DTYPE_FLOAT32);
    add_desc(sg, NEFF_ENG_SP, &(struct neff_dma_desc){
                                  .id = 1, .queue = "qin", .has_semaphore = true, .semaphore = 3,
                                  .op = NEFF_DMA_COPY, .from = &from, .n_from = 1,
                                  .to = ap("sb", 0, 16, 1024, 2, NEFF_DTYPE_FLOAT32)});
    struct neff_dma_ap from2 = ap("w", 0, 32, 0, 1, NEFF_DTYPE_FLOAT32);
    uint32_t remote[1] = {9};
    add_desc(sg, NEFF_ENG_ACT, &(struct neff_dma_desc){
                                   .id = 2, .instance_name = "qin_1", .has_event = true,
                                   .event = 4, .op = NEFF_DMA_FMA, .scale = 0.25,
                                   .from = &from2, .n_from = 1,
                                   .to = ap("scratch", 64, 32, 0, 1, NEFF_DTYPE_BFLOAT16),
                                   .remote_semaphores = remote, .n_remote_semaphores = 1,
                                   .function_start = "main", .section_start_desc = true});
    struct neff_dma_ap from3 = ap("raw", 0, 16, 0, 1, NEFF_DTYPE_INT32);
    add_desc(sg, NEFF_ENG_POOL, &(struct neff_dma_desc){
                                    .id = 3, .queue = "qdata", .op = NEFF_DMA_MIN,
                                    .constant_dtype = NEFF_DTYPE_INT32, .constant = -7,
                                    .from = &from3, .n_from = 1,
                                    .to = ap("tmp", 0, 16, 0, 1, NEFF_DTYPE_INT32),
                                    .has_tiling_dims = true, .num_tiling_dimensions = 1});
    struct neff_dma_ap from4 = ap("sb", 0, 32, 0, 1, NEFF_DTYPE_FLOAT16);
    add_desc(sg, NEFF_ENG_DVE, &(struct neff_dma_desc){
                                   .id = 4, .queue = "qout", .op = NEFF_DMA_TRANSPOSE,
                                   .from = &from4, .n_from = 1,
                                   .to = ap("b", 0, 32, 0, 1, NEFF_DTYPE_FLOAT16),
                                   .has_transpose_shape = true,
                                   .transpose_shape = {2, 8, 1, 1},
                                   .transpose_element_size = 2});
    struct neff_dma_ap srcs[2] = {ap("a", 0, 32, 0, 1, NEFF_DTYPE_FLOAT32),
                                  ap("w", 0, 32, 0, 1, NEFF_DTYPE_FLOAT32)};
    srcs[1].ndim = 1;
    add_desc(sg, NEFF_ENG_DVE, &(struct neff_dma_desc){
                                   .id = 5, .queue = "qout", .op = NEFF_DMA_ADD, .cce = true,
                                   .from = srcs, .n_from = 2,
                                   .to = ap("b", 31, 1, -1, 32, NEFF_DTYPE_UINT8)});
}

struct neff_model *tu_small_model(void)
{
    struct neff_model *m = neff_model_new("small");
    TU_CHECK(m != NULL);
    for (int i = 0; i < 16; i++)
        m->info.uuid[i] = (uint8_t)(0xA0 + i);
    struct neff_subgraph *sg = neff_model_add_subgraph(m);
    TU_CHECK(sg != NULL);
    uint32_t shape[2] = {2, 4};
    TU_CHECK(neff_model_add_io(m, "a", false, NEFF_DTYPE_FLOAT32, shape, 2) == EMU_OK);
    TU_CHECK(neff_model_add_io(m, "b", true, NEFF_DTYPE_FLOAT32, shape, 2) == EMU_OK);
    small_vars(sg);
    small_queues(sg);
    static const uint8_t pe_code[5] = {1, 2, 3, 4, 5};
    static const uint8_t sp_code[3] = {9, 8, 7};
    TU_CHECK(neff_sg_set_code(sg, NEFF_ENG_PE, pe_code, sizeof pe_code) == EMU_OK);
    TU_CHECK(neff_sg_set_code(sg, NEFF_ENG_SP, sp_code, sizeof sp_code) == EMU_OK);
    TU_CHECK(neff_sg_set_code(sg, NEFF_ENG_ACT, NULL, 0) == EMU_OK);
    small_descs(sg);
    char *sets[2] = {"gelu_and_others", "natural_log_exp_and_others"};
    struct neff_engine_sec *act = &sg->eng[NEFF_ENG_ACT];
    act->act_func_sets = calloc(2, sizeof(char *));
    TU_CHECK(act->act_func_sets != NULL);
    for (int i = 0; i < 2; i++)
        TU_CHECK((act->act_func_sets[i] = strdup(sets[i])) != NULL);
    act->n_act_func_sets = 2;
    TU_CHECK(neff_model_validate(m) == EMU_OK);
    return m;
}

void tu_small_neff(uint8_t **bytes, size_t *size)
{
    struct neff_model *m = tu_small_model();
    struct neff_file *f = NULL;
    TU_CHECK(neff_model_store(m, &f) == EMU_OK);
    TU_CHECK(neff_file_write(f, bytes, size) == EMU_OK);
    neff_file_free(f);
    neff_model_free(m);
}

/* ---- raw NEFFs -------------------------------------------------------- */

void tu_neff_from_texts(const char *const *names, const char *const *texts,
                        uint64_t feature_bits, uint8_t **bytes, size_t *size)
{
    struct neff_file *f = neff_file_new();
    TU_CHECK(f != NULL);
    f->hdr.feature_bits = feature_bits;
    for (size_t i = 0; names[i] != NULL; i++)
        TU_CHECK(neff_file_add_copy(f, names[i], texts[i], strlen(texts[i])) == EMU_OK);
    TU_CHECK(neff_file_write(f, bytes, size) == EMU_OK);
    neff_file_free(f);
}

void tu_fix_hash(uint8_t *bytes, size_t size)
{
    TU_CHECK(size >= NEFF_HEADER_SIZE);
    TU_CHECK(neff_hash_compute(NEFF_PKG_VERSION_SHA256, bytes + NEFF_HEADER_SIZE,
                               size - NEFF_HEADER_SIZE, bytes + 172));
}

void tu_neff_wrap(const void *data, size_t len, uint8_t **bytes, size_t *size)
{
    uint8_t *b = calloc(1, NEFF_HEADER_SIZE + len);
    TU_CHECK(b != NULL);
    tu_put_u64(b + 0, NEFF_PKG_VERSION_SHA256);
    tu_put_u64(b + 8, NEFF_HEADER_SIZE);
    tu_put_u64(b + 16, len);
    tu_put_u64(b + 24, NEFF_VERSION_MAJOR_TRNEMU);
    if (len > 0)
        memcpy(b + NEFF_HEADER_SIZE, data, len);
    tu_fix_hash(b, NEFF_HEADER_SIZE + len);
    *bytes = b;
    *size = NEFF_HEADER_SIZE + len;
}

/* Growable buffer for libarchive output. */
struct tu_out {
    uint8_t *data;                      /* bytes */
    size_t len;                         /* used */
};

static la_ssize_t tu_write_cb(struct archive *a, void *ctx, const void *buf, size_t n)
{
    (void)a;
    struct tu_out *o = ctx;
    o->data = realloc(o->data, o->len + n);
    TU_CHECK(o->data != NULL);
    memcpy(o->data + o->len, buf, n);
    o->len += n;
    return (la_ssize_t)n;
}

void tu_raw_tar(const char *const *names, const char *types, size_t n, uint8_t **bytes,
                size_t *size)
{
    struct tu_out o = {0};
    struct archive *a = archive_write_new();
    TU_CHECK(a != NULL);
    TU_CHECK(archive_write_add_filter_gzip(a) == ARCHIVE_OK);
    TU_CHECK(archive_write_set_format_pax_restricted(a) == ARCHIVE_OK);
    TU_CHECK(archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") == ARCHIVE_OK);
    TU_CHECK(archive_write_set_bytes_in_last_block(a, 1) == ARCHIVE_OK);
    TU_CHECK(archive_write_open(a, &o, NULL, tu_write_cb, NULL) == ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_perm(e, 0644);
        const char *body = "{}";
        switch (types[i]) {
        case 'd':
            archive_entry_set_filetype(e, AE_IFDIR);
            body = NULL;
            break;
        case 'l':
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, "neff.json");
            body = NULL;
            break;
        case 'h':
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, "neff.json");
            body = NULL;
            break;
        default:
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, 2);
        }
        TU_CHECK(archive_write_header(a, e) == ARCHIVE_OK);
        if (body != NULL)
            TU_CHECK(archive_write_data(a, body, 2) == 2);
        archive_entry_free(e);
    }
    TU_CHECK(archive_write_close(a) == ARCHIVE_OK);
    archive_write_free(a);
    *bytes = o.data;
    *size = o.len;
}

/* ---- log capture ------------------------------------------------------ */

static int tu_saved_fd = -1;
static FILE *tu_tmp;

void tu_log_begin(void)
{
    fflush(stderr);
    tu_tmp = tmpfile();
    TU_CHECK(tu_tmp != NULL);
    tu_saved_fd = dup(STDERR_FILENO);
    TU_CHECK(tu_saved_fd >= 0);
    TU_CHECK(dup2(fileno(tu_tmp), STDERR_FILENO) >= 0);
}

int tu_log_end(char *buf, size_t cap)
{
    fflush(stderr);
    TU_CHECK(dup2(tu_saved_fd, STDERR_FILENO) >= 0);
    close(tu_saved_fd);
    rewind(tu_tmp);
    size_t n = fread(buf, 1, cap - 1, tu_tmp);
    buf[n] = '\0';
    fclose(tu_tmp);
    int lines = 0;
    for (size_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    return lines;
}

void tu_quiet(bool on)
{
    if (on)
        setenv("NEURON_RT_LOG_LEVEL_NEFF", "QUIET", 1);
    else
        unsetenv("NEURON_RT_LOG_LEVEL_NEFF");
}
