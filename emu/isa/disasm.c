/*
 * disasm.c: the trnemu disassembler (see disasm.h and docs/asm.md).
 *
 * Everything is printed in the form the assembler reads back: the header
 * fields that differ from what the assembler would produce, then per
 * subgraph its variables, queues, engine sections, descriptors and the
 * decoded instruction streams (isa_text_print, with jump and branch
 * targets turned into labels). Comments add what the directives leave
 * implicit: sizes, var ids, instruction indices.
 */
#include "emu/isa/disasm.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/asm.h"
#include "emu/isa/isa.h"
#include "emu/isa/isa_text.h"
#include "emu/log.h"
#include "emu/neff/npy.h"
#include "emu/num/numerics.h"

#define DIS_VALUES_PER_LINE 8    /* inline constant values per line */
#define DIS_HEX_PER_LINE 48      /* inline constant bytes per line */

/* ---- names and strings --------------------------------------------------- */

/* A name the directive lexer reads back as one bare word. */
static bool bare_ok(const char *s)
{
    if (s == NULL || s[0] == '\0' || s[0] == '"' || s[0] == '=' || s[0] == '[' || s[0] == '.')
        return false;
    for (const char *c = s; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == ';' || *c == '#' || *c == '=' || *c == '"' ||
            *c == '[' || *c == ']' || *c == ',' || *c == '\\' || (unsigned char)*c == 0x7f)
            return false;
    return true;
}

static void put_quoted(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c == '\t')
            fputs("\\t", out);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\x%02x", *c);
        else
            fputc(*c, out);
    }
    fputc('"', out);
}

/* A name: bare when it reads back as one word, else quoted. */
static void put_name(FILE *out, const char *s)
{
    if (bare_ok(s))
        fputs(s, out);
    else
        put_quoted(out, s ? s : "");
}

static const char *dtype_text(uint32_t dt)
{
    const char *n = isa_dtype_name(dt);
    return n ? n : "?";
}

static void put_shape(FILE *out, const uint32_t *shape, uint32_t ndim)
{
    fputc('[', out);
    for (uint32_t i = 0; i < ndim; i++)
        fprintf(out, "%s%" PRIu32, i ? ", " : "", shape[i]);
    fputc(']', out);
}

static void put_u32_list(FILE *out, const char *key, const uint32_t *v, uint32_t n)
{
    if (n == 0)
        return;
    fprintf(out, " %s=", key);
    for (uint32_t i = 0; i < n; i++)
        fprintf(out, "%s%" PRIu32, i ? "," : "", v[i]);
}

static void put_name_list(FILE *out, const char *key, char *const *v, uint32_t n)
{
    if (n == 0)
        return;
    fprintf(out, " %s=", key);
    if (n == 1) {
        put_name(out, v[0]);  /* one name may be quoted */
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        fprintf(out, "%s%s", i ? "," : "", v[i]);
}

/* ---- the summary --------------------------------------------------------- */

static void put_hex(FILE *out, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%02x", b[i]);
}

static uint32_t last_node(const struct neff_model_info *i)
{
    uint32_t n = 1;
    for (uint32_t k = 0; k < NEFF_MAX_NODES; k++)
        if (i->tpb_per_node[k] != 0)
            n = k + 1;
    return n;
}

static void put_nodes(FILE *out, const struct neff_model_info *i)
{
    uint32_t n = last_node(i);
    for (uint32_t k = 0; k < n; k++)
        fprintf(out, "%s%u", k ? "," : "", i->tpb_per_node[k]);
}

static void summary_header(FILE *out, const struct neff_model *m, const struct neff_header *hdr)
{
    const struct neff_model_info *i = &m->info;
    fprintf(out, "; header\n;   name                 ");
    put_quoted(out, i->name);
    fprintf(out, "\n;   neff version         %" PRIu64 ".%" PRIu64 "\n", i->neff_version_major,
            i->neff_version_minor);
    fprintf(out, ";   pkg_version          %" PRIu64 "%s\n", i->pkg_version,
            i->pkg_version == NEFF_PKG_VERSION_SHA256 ? " (sha256)"
            : i->pkg_version == NEFF_PKG_VERSION_MD5 ? " (md5)" : "");
    fprintf(out, ";   build version        ");
    put_quoted(out, i->build_version);
    fprintf(out, "\n;   uuid                 ");
    put_hex(out, i->uuid, NEFF_UUID_SIZE);
    fprintf(out, "\n;   num_tpb              %" PRIu32 "\n", i->num_tpb);
    fprintf(out, ";   requested_tpb_count  %" PRIu32 "\n", i->requested_tpb_count);
    fprintf(out, ";   lnc_size             %" PRIu32 "\n;   tpb_per_node         ", i->lnc_size);
    put_nodes(out, i);
    fprintf(out, "\n;   feature_bits         0x%016" PRIx64 "%s\n", i->feature_bits,
            (i->feature_bits & NEFF_FEATURE_TRNEMU_ISA) ? " (trnemu ISA)" : "");
    if (hdr != NULL) {
        fprintf(out, ";   data size            %" PRIu64 " bytes\n;   hash                 ",
                hdr->data_size);
        put_hex(out, hdr->hash, hdr->pkg_version == NEFF_PKG_VERSION_MD5 ? 16 : NEFF_HASH_SIZE);
        fputc('\n', out);
    }
}

static void summary_io(FILE *out, const struct neff_model *m)
{
    fprintf(out, ";\n; I/O tensors: %" PRIu32 "\n", m->n_io);
    for (uint32_t k = 0; k < m->n_io; k++) {
        const struct neff_io *io = &m->io[k];
        fprintf(out, ";   %-6s ", io->is_output ? "output" : "input");
        put_name(out, io->name);
        fprintf(out, " %s ", dtype_text(io->dtype));
        put_shape(out, io->shape, io->ndim);
        fprintf(out, "  %" PRIu64 " bytes\n", io->size);
    }
}

static void summary_sgs(FILE *out, const struct neff_model *m)
{
    fprintf(out, ";\n; subgraphs: %" PRIu32 "\n", m->n_sgs);
    for (uint32_t s = 0; s < m->n_sgs; s++) {
        const struct neff_subgraph *sg = m->sgs[s];
        uint32_t descs = 0;
        for (int e = 0; e < NEFF_ENG_COUNT; e++)
            descs += sg->eng[e].n_descs;
        fprintf(out, ";   ");
        put_name(out, sg->name);
        fprintf(out, ": %" PRIu32 " variables, %" PRIu32 " queues, %" PRIu32 " descriptors",
                sg->n_vars, sg->n_queues, descs);
        for (int e = 0; e < NEFF_ENG_COUNT; e++)
            if (sg->eng[e].code != NULL)
                fprintf(out, "; %s %zu bytes", neff_engine_name((enum neff_engine)e),
                        neff_buf_size(sg->eng[e].code));
        fputc('\n', out);
    }
}

/* ---- .neff and .header --------------------------------------------------- */

static void put_header_directive(FILE *out, const struct neff_model *m)
{
    const struct neff_model_info *i = &m->info;
    struct neff_model_info d;
    asm_default_info(m->n_sgs, &d);
    if (i->name[0] != '\0') {
        fputs(".neff ", out);
        put_name(out, i->name);
        fputc('\n', out);
    }
    char buf[1024];
    size_t n = 0;
    FILE *h = fmemopen(buf, sizeof buf, "w");
    if (h == NULL)
        return;
    if (i->neff_version_major != d.neff_version_major ||
        i->neff_version_minor != d.neff_version_minor)
        fprintf(h, " version=%" PRIu64 ".%" PRIu64, i->neff_version_major, i->neff_version_minor);
    if (i->pkg_version != d.pkg_version)
        fprintf(h, " pkg_version=%" PRIu64, i->pkg_version);
    if (strcmp(i->build_version, d.build_version) != 0) {
        fputs(" build_version=", h);
        put_quoted(h, i->build_version);
    }
    if (memcmp(i->uuid, d.uuid, sizeof d.uuid) != 0) {
        fputs(" uuid=", h);
        put_hex(h, i->uuid, NEFF_UUID_SIZE);
    }
    if (i->num_tpb != d.num_tpb)
        fprintf(h, " num_tpb=%" PRIu32, i->num_tpb);
    if (i->requested_tpb_count != d.requested_tpb_count)
        fprintf(h, " requested_tpb_count=%" PRIu32, i->requested_tpb_count);
    if (memcmp(i->tpb_per_node, d.tpb_per_node, sizeof d.tpb_per_node) != 0) {
        fputs(" tpb_per_node=", h);
        put_nodes(h, i);
    }
    if (i->feature_bits != d.feature_bits)
        fprintf(h, " feature_bits=0x%" PRIx64, i->feature_bits);
    if (i->lnc_size != d.lnc_size)
        fprintf(h, " lnc_size=%" PRIu32, i->lnc_size);
    fflush(h);
    n = (size_t)ftell(h);
    fclose(h);
    if (n > 0 && n < sizeof buf)
        fprintf(out, ".header%.*s\n", (int)n, buf);
}

/* ---- variables ----------------------------------------------------------- */

/* Options common to every variable directive. */
static void put_var_opts(FILE *out, const struct neff_var *v, uint64_t auto_id)
{
    if (v->var_id != auto_id)
        fprintf(out, " id=%" PRIu32, v->var_id);
    if (v->alignment)
        fprintf(out, " align=%" PRIu64, v->alignment);
    if (v->fabric_path) {
        fputs(" fabric_path=", out);
        put_name(out, v->fabric_path);
    }
    if (v->has_backing_off)
        fprintf(out, " backing_off=%" PRIu64, v->backing_variable_off);
    if (v->has_referenced_var)
        fprintf(out, " ref=%" PRIu32, v->referenced_var_id);
    put_u32_list(out, "list", v->list, v->n_list);
    if (v->ops_json) {
        fputs(" ops=", out);
        put_quoted(out, v->ops_json);
    }
}

/* Is the member exactly the .npy file the assembler writes for its
 * values? Then *info describes it. */
static bool npy_canonical(const struct neff_var *v, struct npy_info *info)
{
    const uint8_t *b = neff_buf_data(v->file);
    size_t n = neff_buf_size(v->file);
    size_t len = strlen(v->file_name);
    if (len < 4 || strcmp(v->file_name + len - 4, ".npy") != 0 ||
        npy_parse(b, n, v->file_name, info) != EMU_OK)
        return false;
    const char *descr = npy_descr_for_dtype(info->dtype);
    if (descr == NULL || isa_dtype_name(info->dtype) == NULL)
        return false;
    uint8_t *again = NULL;
    size_t alen = 0;
    if (npy_write(descr, info->shape, info->ndim, b + info->data_off, info->data_len, &again,
                  &alen) != EMU_OK)
        return false;
    bool same = alen == n && memcmp(again, b, n) == 0;
    free(again);
    return same;
}

static void put_value(FILE *out, uint32_t dt, const uint8_t *p)
{
    uint64_t u = 0;
    switch (dt) {
    case ISA_DT_F32: case ISA_DT_F32R: {
        float f;
        uint32_t bits;
        memcpy(&f, p, 4);
        memcpy(&bits, p, 4);
        if (isnan(f))
            fprintf(out, "bits:0x%08" PRIx32, bits);
        else
            fprintf(out, "%.9g", f);
        return;
    }
    case ISA_DT_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        float f = num_f16_to_f32(h);
        if (isnan(f))
            fprintf(out, "bits:0x%04" PRIx16, h);
        else
            fprintf(out, "%.9g", f);
        return;
    }
    case ISA_DT_I8: fprintf(out, "%d", (int8_t)p[0]); return;
    case ISA_DT_I16: { int16_t x; memcpy(&x, p, 2); fprintf(out, "%d", x); return; }
    case ISA_DT_I32: { int32_t x; memcpy(&x, p, 4); fprintf(out, "%" PRId32, x); return; }
    case ISA_DT_I64: { int64_t x; memcpy(&x, p, 8); fprintf(out, "%" PRId64, x); return; }
    default:
        memcpy(&u, p, isa_dtype_size(dt));
        fprintf(out, "%" PRIu64, u);
        return;
    }
}

static void put_values(FILE *out, const struct npy_info *info, const uint8_t *data)
{
    fputs(" =", out);
    if (info->count > DIS_VALUES_PER_LINE)
        fputs(" \\\n   ", out);
    for (uint64_t i = 0; i < info->count; i++) {
        fputc(' ', out);
        put_value(out, info->dtype, data + i * info->itemsize);
        if (i + 1 < info->count)
            fputc(',', out);
        if (i + 1 < info->count && (i + 1) % DIS_VALUES_PER_LINE == 0)
            fputs(" \\\n   ", out);
    }
}

static void put_bytes(FILE *out, const uint8_t *b, size_t n)
{
    /* continuation lines start in column 1: blanks would split the hex */
    fputs(" bytes=", out);
    if (n > DIS_HEX_PER_LINE)
        fputs("\\\n", out);
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%02x", b[i]);
        if (i + 1 < n && (i + 1) % DIS_HEX_PER_LINE == 0)
            fputs("\\\n", out);
    }
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* Does member equal name + ext? */
static bool default_member(const char *member, const char *name, const char *ext)
{
    size_t n = strlen(name);
    return strncmp(member, name, n) == 0 && strcmp(member + n, ext) == 0;
}

static void put_const(FILE *out, const struct neff_subgraph *sg, const struct neff_var *v,
                      uint64_t auto_id, const struct disasm_opts *o)
{
    struct npy_info info;
    const char *path = o && o->const_file ? o->const_file(o->user, sg, v) : NULL;
    bool npy = ends_with(v->file_name, ".npy");
    fputs(".const ", out);
    put_name(out, v->name);
    if (path != NULL) {
        fputs(" file=", out);
        put_quoted(out, path);
        npy = ends_with(path, ".npy");
    } else if (npy_canonical(v, &info)) {
        fprintf(out, " %s [", dtype_text(info.dtype));
        for (uint32_t i = 0; i < info.ndim; i++)
            fprintf(out, "%s%" PRIu64, i ? ", " : "", info.shape[i]);
        fputc(']', out);
    }
    if (!default_member(v->file_name, v->name, npy ? ".npy" : ".bin")) {
        fputs(" member=", out);
        put_name(out, v->file_name);
    }
    if (v->size != v->data_len)
        fprintf(out, " size=%" PRIu64, v->size);
    put_var_opts(out, v, auto_id);
    if (path == NULL && npy_canonical(v, &info))
        put_values(out, &info, neff_buf_data(v->file) + info.data_off);
    else if (path == NULL)
        put_bytes(out, neff_buf_data(v->file), neff_buf_size(v->file));
    fprintf(out, "\n");
}

static void put_var(FILE *out, const struct neff_model *m, const struct neff_subgraph *sg,
                    const struct neff_var *v, uint64_t auto_id, const struct disasm_opts *o)
{
    const struct neff_io *io = neff_model_find_io(m, v->name);
    bool is_io = v->type == NEFF_VAR_INPUT || v->type == NEFF_VAR_OUTPUT;
    if (is_io && io != NULL && io->is_output == (v->type == NEFF_VAR_OUTPUT) &&
        io->size == v->size) {
        fprintf(out, ".%s ", io->is_output ? "output" : "input");
        put_name(out, v->name);
        fprintf(out, " %s ", dtype_text(io->dtype));
        put_shape(out, io->shape, io->ndim);
        put_var_opts(out, v, auto_id);
    } else if (v->type == NEFF_VAR_FILE && v->file != NULL && v->file_name != NULL) {
        put_const(out, sg, v, auto_id, o);
        return;
    } else if (v->type == NEFF_VAR_TMP_BUF) {
        fputs(".scratch ", out);
        put_name(out, v->name);
        fprintf(out, " %" PRIu64, v->size);
        put_var_opts(out, v, auto_id);
    } else {
        if (is_io || v->type == NEFF_VAR_FILE)
            fprintf(out, "; the assembler cannot express this variable\n");
        fputs(".var ", out);
        put_name(out, v->name);
        fprintf(out, " type=%s size=%" PRIu64, neff_var_type_name(v->type), v->size);
        put_var_opts(out, v, auto_id);
    }
    fprintf(out, "\t; var %" PRIu32 ", %" PRIu64 " bytes\n", v->var_id, v->size);
}

static void put_vars(FILE *out, const struct neff_model *m, const struct neff_subgraph *sg,
                     const struct disasm_opts *o)
{
    uint64_t next = 0;
    for (uint32_t i = 0; i < sg->n_vars; i++) {
        const struct neff_var *v = &sg->vars[i];
        put_var(out, m, sg, v, next, o);
        if ((uint64_t)v->var_id + 1 > next)
            next = (uint64_t)v->var_id + 1;
    }
}

/* ---- queues, engine sections, descriptors -------------------------------- */

static void put_queue(FILE *out, const struct neff_queue *q)
{
    fputs(".queue ", out);
    put_name(out, q->name);
    fprintf(out, " type=%s", neff_queue_type_name(q->type));
    if (q->num_queues != 1)
        fprintf(out, " num_queues=%" PRIu32, q->num_queues);
    if (q->owner) {
        fputs(" owner=", out);
        put_name(out, q->owner);
    }
    if (q->pinned)
        fputs(" pinned", out);
    put_name_list(out, "instances", q->instances, q->n_instances);
    put_u32_list(out, "semaphore_set", q->semaphore_set, q->n_semaphore_set);
    if (q->has_semaphore)
        fprintf(out, " semaphore=%" PRIu32, q->semaphore);
    if (q->fabric_path) {
        fputs(" fabric_path=", out);
        put_name(out, q->fabric_path);
    }
    fputc('\n', out);
}

/* The member names the builder gives an engine section by default. */
struct default_names {
    char *bin[NEFF_ENG_COUNT];   /* stream member */
    char *json[NEFF_ENG_COUNT];  /* engine JSON member */
};

static void default_names_get(struct default_names *dn)
{
    memset(dn, 0, sizeof *dn);
    struct neff_model *m = neff_model_new(NULL);
    struct neff_subgraph *sg = m ? neff_model_add_subgraph(m) : NULL;
    struct neff_dma_desc d = {0};
    for (int e = 0; sg != NULL && e < NEFF_ENG_COUNT; e++) {
        if (neff_sg_set_code(sg, (enum neff_engine)e, NULL, 0) == EMU_OK)
            dn->bin[e] = strdup(sg->eng[e].bin_file);
        if (neff_sg_add_desc(sg, (enum neff_engine)e, &d) == EMU_OK)
            dn->json[e] = strdup(sg->eng[e].json_file);
    }
    neff_model_free(m);
}

static void default_names_free(struct default_names *dn)
{
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        free(dn->bin[e]);
        free(dn->json[e]);
    }
}

static bool str_same(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* .engine when the section is not what instructions and descriptors imply. */
static void put_engine(FILE *out, const struct neff_engine_sec *s, int e, uint32_t ninsns,
                       const struct default_names *dn)
{
    bool code = s->code != NULL;
    bool want_flag = code ? ninsns == 0 : s->n_descs == 0;
    bool bin = code && !str_same(s->bin_file, dn->bin[e]);
    bool json = s->n_descs > 0 ? !str_same(s->json_file, dn->json[e]) : s->json_file != NULL;
    if (!s->present || !(want_flag || bin || json || s->n_act_func_sets > 0))
        return;
    fprintf(out, ".engine %s %s", neff_engine_name((enum neff_engine)e), code ? "code" : "nocode");
    if (bin) {
        fputs(" bin=", out);
        put_name(out, s->bin_file);
    }
    if (json) {
        fputs(" json=", out);
        put_name(out, s->json_file);
    }
    put_name_list(out, "act_func_sets", s->act_func_sets, s->n_act_func_sets);
    fputc('\n', out);
}

static void put_dma_ap(FILE *out, const char *key, const struct neff_dma_ap *ap)
{
    fprintf(out, " %s=%s[%" PRIu64, key, ap->var ? ap->var : "?", ap->off);
    for (uint32_t i = ap->ndim; i > 0 && i <= NEFF_AP_MAX_DIMS; i--)
        fprintf(out, ", [%" PRId64 ",%" PRIu64 "]", ap->steps[i - 1], ap->sizes[i - 1]);
    fprintf(out, "]:%s", dtype_text(ap->dtype));
}

static void put_desc(FILE *out, int e, const struct neff_dma_desc *d)
{
    fprintf(out, ".desc %s id=%" PRIu32, neff_engine_name((enum neff_engine)e), d->id);
    if (d->queue) {
        fputs(" queue=", out);
        put_name(out, d->queue);
    }
    if (d->instance_name) {
        fputs(" instance=", out);
        put_name(out, d->instance_name);
    }
    if (d->op != NEFF_DMA_COPY)
        fprintf(out, " op=%s", neff_dma_op_name(d->op));
    for (uint32_t i = 0; i < d->n_from; i++)
        put_dma_ap(out, "from", &d->from[i]);
    if (d->cce && d->n_from == 1)
        fputs(" cce", out);
    put_dma_ap(out, "to", &d->to);
    if (d->op == NEFF_DMA_FMA && d->scale != 1.0)
        fprintf(out, " scale=%.17g", d->scale);
    if (d->constant_dtype != NEFF_DTYPE_NONE)
        fprintf(out, " constant=%.17g constant_dtype=%s", d->constant,
                dtype_text(d->constant_dtype));
    if (d->has_semaphore)
        fprintf(out, " semaphore=%" PRIu32, d->semaphore);
    if (d->has_event)
        fprintf(out, " event=%" PRIu32, d->event);
    put_u32_list(out, "remote_semaphores", d->remote_semaphores, d->n_remote_semaphores);
    if (d->function_start) {
        fputs(" function_start=", out);
        put_name(out, d->function_start);
    }
    if (d->section_start_desc)
        fputs(" section_start", out);
    if (d->has_tiling_dims)
        fprintf(out, " tiling_dims=%" PRIu32, d->num_tiling_dimensions);
    if (d->has_transpose_shape)
        fprintf(out, " transpose_shape=%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32,
                d->transpose_shape[0], d->transpose_shape[1], d->transpose_shape[2],
                d->transpose_shape[3]);
    if (d->transpose_element_size)
        fprintf(out, " transpose_element_size=%" PRIu32, d->transpose_element_size);
    fputc('\n', out);
}

/* ---- instructions -------------------------------------------------------- */

static const char *env_var_name(void *user, uint32_t var_id)
{
    const struct neff_var *v = neff_sg_find_var_id(user, var_id);
    return v ? v->name : NULL;
}

static int target_slot(const struct isa_insn *x)
{
    return x->opcode == ISA_OP_jump ? 0 : x->opcode == ISA_OP_branch ? 2 : -1;
}

/* Print text with "target=N" replaced by the label of instruction N. */
static void put_insn_text(FILE *out, const char *text, const char *eng, int64_t target)
{
    const char *t = target >= 0 ? strstr(text, " target=") : NULL;
    if (t == NULL) {
        fputs(text, out);
        return;
    }
    const char *v = t + 8, *e = v;
    while (*e >= '0' && *e <= '9')
        e++;
    fprintf(out, "%.*s%s_%" PRId64 "%s", (int)(v - text), text, eng, target, e);
}

static emu_status put_stream(FILE *out, const struct neff_subgraph *sg, int e,
                             const struct isa_insn *code, size_t n, bool no_index)
{
    const char *eng = isa_engine_name((unsigned)e);
    bool *is_target = calloc(n ? n : 1, sizeof *is_target);
    size_t cap = 8192;
    char *text = malloc(cap);
    if (is_target == NULL || text == NULL) {
        free(is_target);
        free(text);
        return EMU_RESOURCE;
    }
    for (size_t i = 0; i < n; i++) {
        int slot = target_slot(&code[i]);
        if (slot >= 0 && (uint64_t)code[i].imm[slot].i < n)
            is_target[code[i].imm[slot].i] = true;
    }
    struct isa_text_env env = {NULL, env_var_name, (void *)sg};
    for (size_t i = 0; i < n; i++) {
        if (is_target[i])
            fprintf(out, "%s_%zu:\n", eng, i);
        size_t len = isa_text_print(&code[i], &env, text, cap);
        if (len >= cap) {  /* very long variable names */
            char *bigger = realloc(text, len + 1);
            if (bigger == NULL) {
                free(is_target);
                free(text);
                return EMU_RESOURCE;
            }
            text = bigger;
            cap = len + 1;
            isa_text_print(&code[i], &env, text, cap);
        }
        int slot = target_slot(&code[i]);
        put_insn_text(out, text, eng, slot >= 0 ? code[i].imm[slot].i : -1);
        if (!no_index)
            fprintf(out, "\t; %zu", i);
        fputc('\n', out);
    }
    free(is_target);
    free(text);
    return EMU_OK;
}

/* One engine: comment, .engine, descriptors, instructions. */
static emu_status put_engine_sec(FILE *out, const struct neff_subgraph *sg, int e, bool trnemu,
                                 const struct default_names *dn, const struct disasm_opts *o)
{
    const struct neff_engine_sec *s = &sg->eng[e];
    const char *eng = neff_engine_name((enum neff_engine)e);
    struct isa_insn *code = NULL;
    size_t n = 0;
    emu_status st = EMU_OK;
    if (!s->present)
        return EMU_OK;
    if (s->code != NULL && trnemu)
        st = isa_decode_stream(neff_buf_data(s->code), neff_buf_size(s->code),
                               (enum isa_engine)e, &code, &n);
    fprintf(out, "\n; ---- %s", eng);
    if (s->code == NULL)
        fprintf(out, ": no instruction stream");
    else if (!trnemu)
        fprintf(out, ": %zu-byte instruction stream %s is not trnemu ISA (vendor encoding), "
                "not disassembled", neff_buf_size(s->code), s->bin_file ? s->bin_file : "?");
    else if (st != EMU_OK)
        fprintf(out, ": the stream %s does not decode as trnemu ISA (see the log)",
                s->bin_file ? s->bin_file : "?");
    else
        fprintf(out, ": %zu instruction%s (%s)", n, n == 1 ? "" : "s", s->bin_file);
    if (s->n_descs)
        fprintf(out, ", %" PRIu32 " DMA descriptor%s (%s)", s->n_descs, s->n_descs == 1 ? "" : "s",
                s->json_file ? s->json_file : "?");
    fprintf(out, "\n");
    if (st != EMU_OK) {
        free(code);
        return st;
    }
    put_engine(out, s, e, (uint32_t)n, dn);
    for (uint32_t i = 0; i < s->n_descs; i++)
        put_desc(out, e, &s->descs[i]);
    st = put_stream(out, sg, e, code, n, o && o->no_index);
    free(code);
    return st;
}

static emu_status put_subgraph(FILE *out, const struct neff_model *m,
                               const struct neff_subgraph *sg, const struct disasm_opts *o,
                               const struct default_names *dn)
{
    bool trnemu = (m->info.feature_bits & NEFF_FEATURE_TRNEMU_ISA) && sg->isa_version > 0;
    fputs("\n.subgraph ", out);
    put_name(out, sg->name);
    fputc('\n', out);
    put_vars(out, m, sg, o);
    for (uint32_t i = 0; i < sg->n_queues; i++)
        put_queue(out, &sg->queues[i]);
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        emu_status st = put_engine_sec(out, sg, e, trnemu, dn, o);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}

emu_status disasm_model(FILE *out, const struct neff_model *m, const struct neff_header *hdr,
                        const struct disasm_opts *opts)
{
    if (out == NULL || m == NULL)
        return EMU_INVALID;
    fprintf(out, "; trnemu disassembly%s%s\n;\n", opts && opts->source_name ? " of " : "",
            opts && opts->source_name ? opts->source_name : "");
    summary_header(out, m, hdr);
    summary_io(out, m);
    summary_sgs(out, m);
    if (!neff_model_is_trnemu(m))
        fprintf(out, ";\n; This NEFF does not carry trnemu's ISA marker: its metadata is shown,"
                " its instruction streams are not.\n");
    fputc('\n', out);
    put_header_directive(out, m);
    struct default_names dn;
    default_names_get(&dn);
    emu_status st = EMU_OK;
    for (uint32_t s = 0; st == EMU_OK && s < m->n_sgs; s++)
        st = put_subgraph(out, m, m->sgs[s], opts, &dn);
    default_names_free(&dn);
    /* a stream that does not decode was logged by isa_decode_stream */
    return ferror(out) && st == EMU_OK ? EMU_RESOURCE : st;
}

bool disasm_round_trip(const struct neff_model *m, FILE *diag)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (mem == NULL)
        return false;
    emu_status st = disasm_model(mem, m, NULL, NULL);
    fclose(mem);
    struct neff_model *again = NULL;
    struct asm_opts ao = {.source_name = "<disassembly>", .no_files = true};
    if (st == EMU_OK)
        st = asm_buffer(text, len, &ao, diag, &again);
    bool ok = st == EMU_OK && neff_model_equal(m, again);
    if (!ok && diag != NULL)
        fprintf(diag, "round trip: %s\n", st != EMU_OK
                ? "the disassembly does not assemble" : "the reassembled model differs");
    neff_model_free(again);
    free(text);
    return ok;
}

/* ---- outline of a vendor-compiled NEFF ------------------------------------ */

static void outline_var(FILE *out, const struct neff_var *v)
{
    fprintf(out, ";     %-32s %-12s id %-4" PRIu32, v->name, neff_var_type_name(v->type),
            v->var_id);
    if (v->no_size)
        fprintf(out, " (no size)");
    else
        fprintf(out, " %" PRIu64 " bytes", v->size);
    if (v->has_backing_off)
        fprintf(out, " at scratchpad offset %" PRIu64, v->backing_variable_off);
    for (uint32_t i = 0; i < v->n_list; i++)
        fprintf(out, "%s%" PRIu32, i ? "," : " list ", v->list[i]);
    if (v->file != NULL)
        fprintf(out, " from %s (%zu payload bytes)", v->file_name, v->data_len);
    fputc('\n', out);
}

static void outline_queue(FILE *out, const struct neff_queue *q)
{
    fprintf(out, ";     %-20s %-8s owner %-5s %" PRIu32 " queue%s", q->name,
            neff_queue_type_name(q->type), q->owner ? q->owner : "-", q->num_queues,
            q->num_queues == 1 ? "" : "s");
    if (q->n_semaphore_set > 0)
        fprintf(out, ", semaphores %" PRIu32 "..%" PRIu32, q->semaphore_set[0],
                q->semaphore_set[q->n_semaphore_set - 1]);
    if (q->dynamic_dma_json != NULL)
        fprintf(out, ", dynamic_dma %s", q->dynamic_dma_json);
    fputc('\n', out);
}

static bool outline_known(const struct neff_subgraph *sg, const char *rel)
{
    if (strcmp(rel, "def.json") == 0 || strcmp(rel, "tensor_map.json") == 0)
        return true;
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        const struct neff_engine_sec *s = &sg->eng[e];
        if ((s->bin_file && strcmp(s->bin_file, rel) == 0) ||
            (s->json_file && strcmp(s->json_file, rel) == 0))
            return true;
    }
    for (uint32_t i = 0; i < sg->n_vars; i++)
        if (sg->vars[i].file_name && strcmp(sg->vars[i].file_name, rel) == 0)
            return true;
    return false;
}

/* Members of the subgraph's directory the model does not use (debug
 * info, activation and DVE tables): counted, not read. */
static void outline_others(FILE *out, const struct neff_subgraph *sg, const struct neff_file *f)
{
    size_t n = 0, bytes = 0, len = strlen(sg->name);
    for (size_t i = 0; f != NULL && i < f->n_members; i++) {
        const char *nm = f->members[i].name;
        if (strncmp(nm, sg->name, len) == 0 && nm[len] == '/' && !outline_known(sg, nm + len + 1)) {
            n++;
            bytes += neff_buf_size(f->members[i].data);
        }
    }
    fprintf(out, ";   other members: %zu (%zu bytes; debug info, engine tables: not read)\n", n,
            bytes);
}

static void outline_sg(FILE *out, const struct neff_subgraph *sg, const struct neff_file *f)
{
    fprintf(out, ";\n; subgraph %s\n;   variables: %" PRIu32 "\n", sg->name, sg->n_vars);
    for (uint32_t i = 0; i < sg->n_vars; i++)
        outline_var(out, &sg->vars[i]);
    fprintf(out, ";   DMA queue sets: %" PRIu32 "\n", sg->n_queues);
    for (uint32_t i = 0; i < sg->n_queues; i++)
        outline_queue(out, &sg->queues[i]);
    fprintf(out, ";   engine streams:\n");
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        const struct neff_engine_sec *s = &sg->eng[e];
        if (!s->present)
            continue;
        fprintf(out, ";     %-5s %-16s %9zu bytes   engine JSON %s, %" PRIu32 " DMA descriptor%s\n",
                neff_engine_name((enum neff_engine)e), s->bin_file ? s->bin_file : "(none)",
                neff_buf_size(s->code), s->json_file ? s->json_file : "(none)", s->n_descs,
                s->n_descs == 1 ? "" : "s");
    }
    outline_others(out, sg, f);
}

emu_status disasm_outline(FILE *out, const struct neff_model *m, const struct neff_file *f,
                          const char *source_name)
{
    if (out == NULL || m == NULL)
        return EMU_INVALID;
    fprintf(out, "; trnemu outline%s%s\n;\n", source_name ? " of " : "",
            source_name ? source_name : "");
    fprintf(out, "; A vendor-compiled NEFF: it has no trnemu ISA marker, and the encoding of its\n"
                 "; instruction streams is not public, so they are shown as byte counts only.\n"
                 "; nrt_load reads its tensors; executing it needs TRNEMU_FOREIGN_NEFF=zeros\n"
                 "; (a stand-in that zero-fills the outputs).\n;\n");
    summary_header(out, m, f ? &f->hdr : NULL);
    summary_io(out, m);
    summary_sgs(out, m);
    for (uint32_t s = 0; s < m->n_sgs; s++)
        outline_sg(out, m->sgs[s], f);
    return ferror(out) ? EMU_RESOURCE : EMU_OK;
}
