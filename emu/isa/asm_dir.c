/*
 * asm_dir.c: the assembler's directive table and its plain directives.
 *
 * .neff, .header, .subgraph, .input/.output, .scratch, .var, .sem and
 * .event are handled here; .const is in asm_const.c and .queue, .engine
 * and .desc in asm_desc.c. asm_do_directive looks up a directive line's
 * word and calls its handler.
 */
#include "emu/isa/asm_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- directives: NEFF level ---------------------------------------------- */

static bool dir_neff(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *t = asm_next_word(d);
    if (t == NULL)
        return asm_err_at(a, d->name_at, ".neff needs a name");
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (n > NEFF_NAME_SIZE - 1 || memchr(s, '\0', n) != NULL)
        return asm_err_at(a, t->vat, "a NEFF name has at most %u bytes", NEFF_NAME_SIZE - 1);
    memset(a->m->info.name, 0, sizeof a->m->info.name);
    memcpy(a->m->info.name, s, n);
    return asm_dir_done(a, d, ".neff");
}

static bool hdr_uuid(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    if (t->str != NULL || n != 2 * NEFF_UUID_SIZE)
        return asm_err_at(a, t->vat, "uuid is %u hexadecimal digits", 2 * NEFF_UUID_SIZE);
    for (unsigned i = 0; i < NEFF_UUID_SIZE; i++) {
        uint64_t x;
        if (!isa_lex_u64((char[]){'0', 'x', s[2 * i], s[2 * i + 1]}, 4, &x))
            return asm_err_at(a, t->vat + 2 * i, "not a hexadecimal digit");
        a->hdr.info.uuid[i] = (uint8_t)x;
    }
    return true;
}

static bool hdr_version(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t)
{
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    const char *dot = memchr(s, '.', n);
    if (t->str || dot == NULL ||
        !isa_lex_u64(s, (size_t)(dot - s), &a->hdr.info.neff_version_major) ||
        !isa_lex_u64(dot + 1, n - (size_t)(dot - s) - 1, &a->hdr.info.neff_version_minor))
        return asm_err_at(a, t->vat, "version is MAJOR.MINOR");
    if (a->hdr.info.neff_version_major > NEFF_VERSION_MAJOR_MAX)
        return asm_err_at(a, t->vat, "NEFF version %llu is newer than this reader's %u",
                          (unsigned long long)a->hdr.info.neff_version_major,
                          NEFF_VERSION_MAJOR_MAX);
    return true;
}

static bool hdr_tpb_per_node(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t)
{
    struct asm_u64_list l = {.max = 255, .max_items = NEFF_MAX_NODES};
    bool ok = asm_tok_u64_list(a, d, t, false, &l);
    memset(a->hdr.info.tpb_per_node, 0, sizeof a->hdr.info.tpb_per_node);
    for (size_t i = 0; ok && i < l.n; i++)
        a->hdr.info.tpb_per_node[i] = (uint8_t)l.v[i];
    free(l.v);
    return ok;
}

/* One key=value of .header. */
static bool hdr_field(struct asm_ctx *a, struct asm_dir *d, struct asm_tok *t)
{
    static const char *const keys[HDR_COUNT] = {
        "version", "pkg_version", "build_version", "uuid", "num_tpb", "requested_tpb_count",
        "tpb_per_node", "feature_bits", "lnc_size"};
    struct neff_model_info *i = &a->hdr.info;
    const char *k = d->s + t->at;
    int f = -1;
    for (int j = 0; j < HDR_COUNT; j++)
        if (asm_same(k, t->kn, keys[j]))
            f = j;
    if (f < 0)
        return asm_err_at(a, t->at, "unknown header field '%.*s'", (int)t->kn, k);
    t->used = true;
    a->hdr.set |= 1u << f;
    size_t n;
    const char *s = asm_tok_val(d, t, &n);
    switch (f) {
    case HDR_VERSION: return hdr_version(a, d, t);
    case HDR_PKG:
        if (!asm_tok_u64(a, d, t, UINT64_MAX, &i->pkg_version))
            return false;
        if (i->pkg_version != NEFF_PKG_VERSION_SHA256 && i->pkg_version != NEFF_PKG_VERSION_MD5)
            return asm_err_at(a, t->vat, "pkg_version is 1 (sha256) or 2 (md5)");
        return true;
    case HDR_BUILD:
        if (n > NEFF_BUILD_VERSION_SIZE || memchr(s, '\0', n))
            return asm_err_at(a, t->vat, "build_version has at most %u bytes",
                              NEFF_BUILD_VERSION_SIZE);
        memset(i->build_version, 0, sizeof i->build_version);
        memcpy(i->build_version, s, n);
        return true;
    case HDR_UUID: return hdr_uuid(a, d, t);
    case HDR_NUM_TPB: return asm_tok_u32(a, d, t, UINT32_MAX, &i->num_tpb);
    case HDR_REQ_TPB: return asm_tok_u32(a, d, t, UINT32_MAX, &i->requested_tpb_count);
    case HDR_TPB_PER_NODE: return hdr_tpb_per_node(a, d, t);
    case HDR_FEATURES: return asm_tok_u64(a, d, t, UINT64_MAX, &i->feature_bits);
    default: return asm_tok_u32(a, d, t, UINT32_MAX, &i->lnc_size);
    }
}

static bool dir_header(struct asm_ctx *a, struct asm_dir *d)
{
    if (d->n == 0)
        return asm_err_at(a, d->name_at, ".header needs key=value fields");
    for (size_t k = 0; k < d->n; k++) {
        struct asm_tok *t = &d->tok[k];
        if (t->kn == 0)
            return asm_err_at(a, t->at, ".header takes key=value fields");
        if (!hdr_field(a, d, t))
            return false;
    }
    a->hdr_pos = asm_line_pos(a, d->name_at);
    return true;
}

bool asm_sg_start(struct asm_ctx *a)
{
    struct asm_sg *s = realloc(a->sgs, (a->nsgs + 1) * sizeof *s);
    if (s == NULL)
        return false;
    a->sgs = s;
    memset(&s[a->nsgs], 0, sizeof *s);
    s[a->nsgs].sg = neff_model_add_subgraph(a->m);
    if (s[a->nsgs].sg == NULL)
        return false;
    a->nsgs++;
    return true;
}

/* Labels of the current subgraph still waiting for an instruction. */
void asm_report_dangling_labels(struct asm_ctx *a)
{
    struct asm_sg *s = asm_cur_sg(a);
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].engine < 0) {
            asm_err_pos(a, s->labels[i].pos, "label '%s' is not followed by an instruction",
                        s->labels[i].name);
            s->labels[i].engine = ISA_ENG_COUNT;  /* reported */
        }
}

static bool dir_subgraph(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *t = asm_next_word(d);
    char *name = NULL;
    if (t != NULL) {
        name = asm_tok_name(a, d, t, "subgraph name");
        if (name == NULL)
            return false;
        if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) > 255) {
            free(name);
            return asm_err_at(a, t->vat, "a subgraph name is one plain directory name");
        }
        for (uint32_t i = 0; i < a->m->n_sgs; i++)
            if (strcmp(a->m->sgs[i]->name, name) == 0 &&
                !(i == 0 && !a->sg_directive && !a->sgs[0].used)) {
                free(name);
                return asm_err_at(a, t->vat, "subgraph '%s' exists already", a->m->sgs[i]->name);
            }
    }
    if (!asm_dir_done(a, d, ".subgraph")) {
        free(name);
        return false;
    }
    asm_report_dangling_labels(a);
    bool reuse = !a->sg_directive && a->nsgs == 1 && !a->sgs[0].used;
    a->sg_directive = true;
    if (!reuse && !asm_sg_start(a)) {
        free(name);
        return asm_oom_at(a, d->name_at);
    }
    for (uint32_t i = 0; name == NULL && i + 1 < a->m->n_sgs; i++)
        if (strcmp(a->m->sgs[i]->name, asm_cur_sg(a)->sg->name) == 0)
            return asm_err_at(a, d->name_at, "subgraph '%s' exists already; name this one",
                              a->m->sgs[i]->name);
    asm_cur_sg(a)->used = true;
    if (name != NULL) {
        free(asm_cur_sg(a)->sg->name);
        asm_cur_sg(a)->sg->name = name;
    }
    return true;
}

/* ---- directives: variables ----------------------------------------------- */

static bool dir_io(struct asm_ctx *a, struct asm_dir *d, bool is_output)
{
    const char *what = is_output ? ".output" : ".input";
    struct asm_tok *tn = asm_next_word(d), *td = asm_next_word(d), *ts = asm_next_word(d);
    uint64_t shape64[NEFF_IO_MAX_DIMS];
    uint32_t shape[NEFF_IO_MAX_DIMS], ndim = 0, dtype = 0;
    struct asm_var_opts o = {0};
    if (ts == NULL)
        return asm_err_at(a, d->name_at, "%s needs NAME DTYPE [SHAPE]", what);
    if (!asm_tok_dtype(a, d, td, &dtype) || !asm_tok_shape(a, d, ts, UINT32_MAX, shape64, &ndim))
        return false;
    for (uint32_t i = 0; i < ndim; i++)
        shape[i] = (uint32_t)shape64[i];
    char *name = asm_tok_name(a, d, tn, "tensor name");
    bool ok = name != NULL && asm_take_var_opts(a, d, &o) && asm_dir_done(a, d, what) &&
              asm_add_io(a, asm_line_pos(a, d->name_at), name, is_output, dtype, shape, ndim, &o);
    asm_var_opts_clear(&o);
    free(name);
    return ok;
}

static bool dir_scratch(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = asm_next_word(d), *t2 = asm_next_word(d), *t3 = NULL;
    uint64_t size = 0, shape[NEFF_IO_MAX_DIMS];
    uint32_t ndim = 0, dtype = 0;
    struct asm_var_opts o = {0};
    if (t2 == NULL)
        return asm_err_at(a, d->name_at, ".scratch needs NAME SIZE or NAME DTYPE [SHAPE]");
    size_t n;
    const char *s = asm_tok_val(d, t2, &n);
    if (isa_dtype_from_name(s, n) > 0) {
        if ((t3 = asm_next_word(d)) == NULL || !asm_tok_dtype(a, d, t2, &dtype) ||
            !asm_tok_shape(a, d, t3, UINT64_MAX, shape, &ndim))
            return t3 == NULL ? asm_err_at(a, t2->at, "a DTYPE is followed by a [SHAPE]") : false;
        size = isa_dtype_size(dtype);
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(size, shape[i], &size) || size > INT64_MAX)
                return asm_err_at(a, t3->at, "size overflows");
    } else if (!asm_tok_u64(a, d, t2, INT64_MAX, &size)) {
        return false;
    }
    char *name = asm_tok_name(a, d, tn, "variable name");
    if (name == NULL)
        return false;
    struct neff_var v = {.name = name, .type = NEFF_VAR_TMP_BUF, .size = size};
    bool ok = asm_take_var_opts(a, d, &o) && asm_dir_done(a, d, ".scratch") &&
              asm_add_var(a, asm_line_pos(a, d->name_at), &v, &o);
    asm_var_opts_clear(&o);
    free(name);
    return ok;
}

static bool dir_var(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = asm_next_word(d), *tt = asm_take_opt(d, "type");
    struct asm_tok *tsz = asm_take_opt(d, "size");
    struct neff_var v = {0};
    struct asm_var_opts o = {0};
    if (tn == NULL || tt == NULL || tsz == NULL)
        return asm_err_at(a, d->name_at, ".var needs NAME type=TYPE size=BYTES");
    size_t n;
    const char *s = asm_tok_val(d, tt, &n);
    int type = -1;
    for (int i = 0; i < NEFF_VAR_TYPE_COUNT; i++)
        if (asm_same(s, n, neff_var_type_name((enum neff_var_type)i)))
            type = i;
    if (type < 0)
        return asm_err_at(a, tt->vat, "unknown variable type '%.*s'", (int)(n > 40 ? 40 : n), s);
    if (type == NEFF_VAR_INPUT || type == NEFF_VAR_OUTPUT || type == NEFF_VAR_FILE)
        return asm_err_at(a, tt->vat, "declare %.*s variables with %s", (int)n, s,
                          type == NEFF_VAR_FILE ? ".const" : ".input / .output");
    if (!asm_tok_u64(a, d, tsz, INT64_MAX, &v.size))
        return false;
    v.type = (enum neff_var_type)type;
    if ((v.name = asm_tok_name(a, d, tn, "variable name")) == NULL)
        return false;
    bool ok = asm_take_var_opts(a, d, &o) && asm_dir_done(a, d, ".var") &&
              asm_add_var(a, asm_line_pos(a, d->name_at), &v, &o);
    asm_var_opts_clear(&o);
    free(v.name);
    return ok;
}

/* ---- directives: semaphores and events ----------------------------------- */

const struct asm_sym *asm_sym_find(const struct asm_ctx *a, const char *s, size_t n)
{
    for (size_t i = 0; i < a->nsyms; i++)
        if (asm_same(s, n, a->syms[i].name))
            return &a->syms[i];
    return NULL;
}

/* s<digits> / e<digits>: the numeric forms of the ISA text. */
bool asm_is_sync_number(const char *s, size_t n)
{
    if (n < 2 || (s[0] != 's' && s[0] != 'e'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static bool dir_sym(struct asm_ctx *a, struct asm_dir *d, bool event)
{
    const char *what = event ? ".event" : ".sem";
    struct asm_tok *tn = asm_next_word(d), *ti = asm_next_word(d);
    uint32_t limit = event ? ISA_NUM_EVENTS : ISA_NUM_SEMS, id = 0;
    if (tn == NULL)
        return asm_err_at(a, d->name_at, "%s needs a NAME", what);
    size_t n;
    const char *s = asm_tok_val(d, tn, &n);
    if (tn->str || asm_ident_len(s) != n || asm_is_sync_number(s, n))
        return asm_err_at(a, tn->vat, "a %s name is an identifier other than s<N> or e<N>",
                          event ? "event" : "semaphore");
    if (asm_sym_find(a, s, n) != NULL)
        return asm_err_at(a, tn->vat, "'%.*s' is already a semaphore or event name", (int)n, s);
    if (ti != NULL) {
        if (!asm_tok_u32(a, d, ti, limit - 1, &id))
            return false;
    } else {
        for (id = 0; id < limit; id++) {
            bool taken = false;
            for (size_t i = 0; i < a->nsyms; i++)
                taken = taken || (a->syms[i].event == event && a->syms[i].id == id);
            if (!taken)
                break;
        }
        if (id == limit)
            return asm_err_at(a, tn->vat, "every %s number is named already", what + 1);
    }
    if (!asm_dir_done(a, d, what))
        return false;
    if (!grow_array((void **)&a->syms, a->nsyms + 1, &a->capsyms, sizeof *a->syms, 16) ||
        (a->syms[a->nsyms].name = asm_dup_n(s, n)) == NULL)
        return asm_oom_at(a, tn->at);
    a->syms[a->nsyms].id = id;
    a->syms[a->nsyms++].event = event;
    return true;
}

/* ---- directive dispatch -------------------------------------------------- */

typedef bool (*dir_fn)(struct asm_ctx *a, struct asm_dir *d);

static bool dir_input(struct asm_ctx *a, struct asm_dir *d) { return dir_io(a, d, false); }
static bool dir_output(struct asm_ctx *a, struct asm_dir *d) { return dir_io(a, d, true); }
static bool dir_sem(struct asm_ctx *a, struct asm_dir *d) { return dir_sym(a, d, false); }
static bool dir_event(struct asm_ctx *a, struct asm_dir *d) { return dir_sym(a, d, true); }

static const struct {
    const char *name;   /* directive word without the dot */
    dir_fn fn;          /* its handler */
} asm_dirs[] = {
    {"neff", dir_neff},     {"header", dir_header}, {"subgraph", dir_subgraph},
    {"input", dir_input},   {"output", dir_output}, {"const", asm_dir_const},
    {"scratch", dir_scratch}, {"var", dir_var},     {"sem", dir_sem},
    {"event", dir_event},   {"queue", asm_dir_queue},   {"engine", asm_dir_engine},
    {"desc", asm_dir_desc},
};

void asm_do_directive(struct asm_ctx *a, const char *s, size_t off)
{
    struct asm_dir d;
    d.n = 0;
    if (asm_lex_dir(a, s, off, &d)) {
        size_t n = 0;
        while (asm_is_ident_char(s[off + 1 + n]))
            n++;
        dir_fn fn = NULL;
        for (size_t i = 0; i < sizeof asm_dirs / sizeof asm_dirs[0]; i++)
            if (asm_same(s + off + 1, n, asm_dirs[i].name))
                fn = asm_dirs[i].fn;
        if (fn == NULL)
            asm_err_at(a, off, "unknown directive '.%.*s'", (int)n, s + off + 1);
        else
            fn(a, &d);
    }
    asm_dir_clear(&d);
}
