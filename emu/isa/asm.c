/*
 * asm.c: the trnemu assembler's driver (see asm.h and docs/asm.md).
 *
 * Physical lines are joined into logical lines ('\' at the end of a line
 * continues it) that remember where each character came from, so every
 * error names the file, line and column of its cause. A logical line is a
 * directive (".input ..."), a label ("loop:"), an instruction
 * ("sp.dma_copy ...", handed to isa_text_parse_line after label and
 * semaphore names are replaced by numbers), or blank.
 *
 * Declarations go straight into a draft neff_model (its own builder
 * functions); instructions are kept decoded per subgraph and engine and
 * encoded when the assembly is finished, after the labels are resolved.
 *
 * This file holds the driver: instructions (names substituted, parsed by
 * isa_text, labels and fixups recorded), logical lines, feeding text, the
 * C API declarations, the life cycle and the one-call helpers. The other
 * stages are asm_lex.c (characters, numbers, lines, directive words),
 * asm_word.c (typed values of words), asm_var.c (variables), asm_dir.c
 * (directive table and plain directives), asm_const.c (.const),
 * asm_desc.c (queues, engines, DMA descriptors), asm_finish.c
 * (finishing) and asm_file.c (reading files); asm_int.h holds what they
 * share and the one direction calls between them take.
 */
#include "emu/isa/asm_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/isa_text.h"

/* ---- instructions -------------------------------------------------------- */

/* The instruction text with names replaced, and where each character came from. */
struct asm_sub {
    char *s;          /* text, NUL-terminated */
    size_t *map;      /* offset in the logical line of each character */
    size_t n, cap;    /* used, allocated */
};

static bool sub_put(struct asm_sub *b, const char *s, size_t n, size_t from, bool fixed)
{
    if (b->n + n + 1 > b->cap) {
        size_t ncap = grow_cap(b->cap, b->n + n + 1, 256);
        if (!grow_to((void **)&b->s, ncap, 1) || !grow_to((void **)&b->map, ncap, sizeof *b->map))
            return false;
        b->cap = ncap;
    }
    for (size_t i = 0; i < n; i++) {
        b->s[b->n] = s[i];
        b->map[b->n++] = fixed ? from : from + i;
    }
    b->s[b->n] = '\0';
    return true;
}

/* A label name used as a target in the line. */
struct label_ref {
    char *name;       /* the label */
    size_t off;       /* where it was written */
};

/* Rewrite one "key=value" word of an instruction into b. */
static bool sub_word(struct asm_ctx *a, const char *s, size_t w, size_t e, struct asm_sub *b,
                     struct label_ref *ref)
{
    const char *eq = memchr(s + w, '=', e - w);
    size_t k = eq ? (size_t)(eq - (s + w)) : 0, v = w + k + 1;
    if (eq == NULL || v >= e)
        return sub_put(b, s + w, e - w, w, false);
    size_t idl = asm_ident_len(s + v);
    if (idl > e - v)
        idl = e - v;
    bool target = asm_same(s + w, k, "target"), sync = asm_same(s + w, k, "wait") ||
                  asm_same(s + w, k, "signal"), sem = asm_same(s + w, k, "sem");
    if (idl == 0 || !(target || sync || sem) || (sync && asm_is_sync_number(s + v, idl)))
        return sub_put(b, s + w, e - w, w, false);
    char rep[32];
    if (target) {
        if (v + idl != e)
            return sub_put(b, s + w, e - w, w, false);
        if (ref->name != NULL)
            return asm_err_at(a, v, "more than one target");
        if ((ref->name = asm_dup_n(s + v, idl)) == NULL)
            return asm_oom_at(a, v);
        ref->off = v;
        snprintf(rep, sizeof rep, "0");
    } else {
        const struct asm_sym *y = asm_sym_find(a, s + v, idl);
        if (y == NULL || (sem && y->event))
            return asm_err_at(a, v, "unknown %s '%.*s' (declare it with %s)",
                              sem ? "semaphore" : "semaphore or event", (int)idl, s + v,
                              sem ? ".sem" : ".sem or .event");
        snprintf(rep, sizeof rep, "%s%u", sem ? "" : y->event ? "e" : "s", y->id);
    }
    return (sub_put(b, s + w, k + 1, w, false) && sub_put(b, rep, strlen(rep), v, true) &&
            sub_put(b, s + v + idl, e - v - idl, v + idl, false)) || asm_oom_at(a, w);
}

/* The instruction starting at s[off], with label and semaphore names replaced. */
static bool substitute(struct asm_ctx *a, const char *s, size_t off, struct asm_sub *b,
                       struct label_ref *ref)
{
    size_t i = off;
    bool first = true;
    while (!asm_is_end(s[i])) {
        size_t w = i;
        while (asm_is_blank(s[i]))
            i++;
        if (i > w && !sub_put(b, s + w, i - w, w, false))
            return asm_oom_at(a, w);
        if (asm_is_end(s[i]))
            break;
        w = i;
        int depth = 0;
        for (; s[i] != '\0' && !(depth == 0 && (asm_is_blank(s[i]) || asm_is_comment(s[i]))); i++)
            depth += s[i] == '[' ? 1 : s[i] == ']' ? -1 : 0;
        if (first && !sub_put(b, s + w, i - w, w, false))
            return asm_oom_at(a, w);
        if (!first && !sub_word(a, s, w, i, b, ref))
            return false;
        first = false;
    }
    return sub_put(b, "", 0, i, false) || asm_oom_at(a, i);
}

static emu_status env_lookup(void *user, const char *name, size_t len, uint32_t *var_id)
{
    struct asm_ctx *a = user;
    char buf[ASM_NAME_MAX + 1];
    if (len > ASM_NAME_MAX)
        return EMU_INVALID;
    memcpy(buf, name, len);
    buf[len] = '\0';
    const struct neff_var *v = neff_sg_find_var(asm_cur_sg(a)->sg, buf);
    if (v == NULL)
        return EMU_INVALID;
    *var_id = v->var_id;
    return EMU_OK;
}

static bool stream_push(struct asm_stream *st, const struct isa_insn *insn, struct asm_pos p)
{
    if (st->n >= UINT32_MAX)
        return false;
    if (st->n == st->cap) {
        size_t ncap = grow_cap(st->cap, st->n + 1, 64);
        if (!grow_to((void **)&st->insns, ncap, sizeof *st->insns) ||
            !grow_to((void **)&st->pos, ncap, sizeof *st->pos))
            return false;
        st->cap = ncap;
    }
    st->insns[st->n] = *insn;
    st->pos[st->n++] = p;
    return true;
}

/* Record a target label use for the instruction just added. */
static bool add_fixup(struct asm_ctx *a, struct label_ref *ref, const struct isa_insn *insn,
                      uint32_t index)
{
    struct asm_sg *s = asm_cur_sg(a);
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    int f = op ? isa_op_field(op, "target", 6) : -1;
    if (f < 0)
        return asm_err_at(a, ref->off, "this op has no target");
    if (!grow_array((void **)&s->fixups, s->nfixups + 1, &s->capfixups, sizeof *s->fixups, 16))
        return asm_oom_at(a, ref->off);
    s->fixups[s->nfixups++] = (struct asm_fixup){ref->name, insn->engine, index,
                                                 op->fields[f].slot, asm_line_pos(a, ref->off)};
    ref->name = NULL;
    return true;
}

static void do_instruction(struct asm_ctx *a, const char *s, size_t off)
{
    struct asm_sub b = {0};
    struct label_ref ref = {0};
    struct isa_insn insn;
    struct isa_text_error err;
    struct isa_text_env env = {env_lookup, NULL, a};
    if (substitute(a, s, off, &b, &ref)) {
        if (isa_text_parse_line(b.s, &env, &insn, &err) != EMU_OK) {
            size_t c = err.column ? err.column - 1 : 0;
            asm_err_at(a, c < b.n ? b.map[c] : b.n ? b.map[b.n - 1] + 1 : off, "%s", err.message);
        } else {
            struct asm_sg *sg = asm_cur_sg(a);
            struct asm_stream *st = &sg->code[insn.engine];
            uint32_t index = (uint32_t)st->n;
            if (!stream_push(st, &insn, asm_line_pos(a, off)))
                asm_oom_at(a, off);
            else if (ref.name == NULL || add_fixup(a, &ref, &insn, index)) {
                for (size_t i = 0; i < sg->nlabels; i++)
                    if (sg->labels[i].engine < 0) {
                        sg->labels[i].engine = insn.engine;
                        sg->labels[i].index = index;
                    }
                sg->used = true;
            }
        }
    }
    free(ref.name);
    free(b.s);
    free(b.map);
}

/* "name:" at s[off]: define a label for the next instruction. */
static bool do_label(struct asm_ctx *a, const char *s, size_t off, size_t n)
{
    struct asm_sg *sg = asm_cur_sg(a);
    for (size_t i = 0; i < sg->nlabels; i++)
        if (asm_same(s + off, n, sg->labels[i].name))
            return asm_err_at(a, off, "label '%.*s' is defined twice (first at line %u)", (int)n,
                              s + off, sg->labels[i].pos.line);
    if (!grow_array((void **)&sg->labels, sg->nlabels + 1, &sg->caplabels, sizeof *sg->labels,
                    16) ||
        (sg->labels[sg->nlabels].name = asm_dup_n(s + off, n)) == NULL)
        return asm_oom_at(a, off);
    sg->labels[sg->nlabels].engine = -1;
    sg->labels[sg->nlabels].index = 0;
    sg->labels[sg->nlabels++].pos = asm_line_pos(a, off);
    return true;
}

/* One logical line. */
static void asm_do_logical_line(struct asm_ctx *a)
{
    const char *s = a->ll.s;
    size_t i = 0;
    if (s == NULL)
        return;
    while (asm_is_blank(s[i]))
        i++;
    if (asm_is_end(s[i]))
        return;
    if (s[i] == '.') {
        asm_do_directive(a, s, i);
        return;
    }
    size_t n = asm_ident_len(s + i);
    if (n > 0 && s[i + n] == ':' && (asm_is_blank(s[i + n + 1]) || asm_is_end(s[i + n + 1]))) {
        if (!do_label(a, s, i, n))
            return;
        i += n + 1;
        while (asm_is_blank(s[i]))
            i++;
        if (asm_is_end(s[i]))
            return;
        if (s[i] == '.') {
            asm_err_at(a, i, "a label is followed by an instruction, not a directive");
            return;
        }
    }
    do_instruction(a, s, i);
}

/* ---- feeding ------------------------------------------------------------- */

static void asm_feed_reset(struct asm_ctx *a)
{
    a->ll.n = 0;
    a->ll.open = false;
    if (a->ll.s != NULL)
        a->ll.s[0] = '\0';
}

static void mark_changed(struct asm_ctx *a)
{
    a->finished = false;
}

emu_status asm_line(struct asm_ctx *a, const char *line, size_t len)
{
    if (a == NULL || (line == NULL && len > 0) || a->taken)
        return EMU_INVALID;
    mark_changed(a);
    size_t before = a->nerrors;
    if (len > 0 && line[len - 1] == '\n')
        len--;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    a->lineno++;
    size_t c = asm_comment_start(line, len), e = c;
    while (e > 0 && asm_is_blank(line[e - 1]))
        e--;
    bool cont = e > 0 && line[e - 1] == '\\';
    size_t take = cont ? e - 1 : len;
    for (size_t i = 0; i < take; i++) {
        char ch = line[i] == '\0' ? ' ' : line[i];
        if (!asm_ll_push(a, ch, (struct asm_pos){a->lineno, (uint32_t)(i + 1)})) {
            a->oom = true;
            asm_err_pos(a, (struct asm_pos){a->lineno, 1}, "out of memory");
            asm_feed_reset(a);
            return EMU_RESOURCE;
        }
    }
    a->ll.open = cont;
    if (!cont) {
        asm_do_logical_line(a);
        asm_feed_reset(a);
    }
    if (a->oom)
        return EMU_RESOURCE;
    return a->nerrors > before || a->gave_up ? EMU_INVALID : EMU_OK;
}

emu_status asm_finish(struct asm_ctx *a)
{
    if (a == NULL || a->taken)
        return EMU_INVALID;
    if (a->ll.open) {
        asm_do_logical_line(a);
        asm_feed_reset(a);
    }
    return asm_finish_model(a);
}

emu_status asm_text(struct asm_ctx *a, const char *text, size_t len)
{
    if (a == NULL || (text == NULL && len > 0))
        return EMU_INVALID;
    emu_status worst = EMU_OK;
    size_t i = 0;
    while (i < len) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) + 1 : len - i;
        emu_status st = asm_line(a, text + i, n);
        if (st != EMU_OK && worst != EMU_RESOURCE)
            worst = st;
        i += n;
    }
    return worst;
}

/* ---- the C API declarations ---------------------------------------------- */

static emu_status api_status(struct asm_ctx *a, size_t before)
{
    if (a->oom)
        return EMU_RESOURCE;
    return a->nerrors > before || a->gave_up ? EMU_INVALID : EMU_OK;
}

emu_status asm_declare_io(struct asm_ctx *a, const char *name, bool is_output, uint32_t dtype,
                          const uint32_t *shape, uint32_t ndim)
{
    if (a == NULL || a->taken || name == NULL || (shape == NULL && ndim > 0))
        return EMU_INVALID;
    mark_changed(a);
    size_t before = a->nerrors;
    struct asm_var_opts o = {0};
    asm_add_io(a, (struct asm_pos){0, 0}, name, is_output, dtype, shape, ndim, &o);
    return api_status(a, before);
}

emu_status asm_declare_const(struct asm_ctx *a, const char *name, uint32_t dtype,
                             const uint32_t *shape, uint32_t ndim, const void *data, size_t size)
{
    if (a == NULL || a->taken || name == NULL || (shape == NULL && ndim > 0) ||
        (data == NULL && size > 0))
        return EMU_INVALID;
    mark_changed(a);
    size_t before = a->nerrors;
    struct asm_pos p = {0, 0};
    uint64_t shape64[NEFF_IO_MAX_DIMS], want = isa_dtype_size(dtype);
    struct neff_buf *buf = NULL;
    struct asm_var_opts o = {0};
    char *member = NULL;
    for (uint32_t i = 0; i < ndim && i < NEFF_IO_MAX_DIMS; i++) {
        shape64[i] = shape[i];
        if (__builtin_mul_overflow(want, (uint64_t)shape[i], &want))
            want = UINT64_MAX;
    }
    if (ndim > NEFF_IO_MAX_DIMS || want == 0 || want != size || size > a->max_const)
        asm_err_pos(a, p,
                    "constant '%s': %zu bytes do not match its dtype and shape (or the limit)",
                    name, size);
    else if (asprintf(&member, "%s.npy", name) < 0)
        member = NULL, a->oom = true;
    else if (asm_npy_member(a, p, dtype, shape64, ndim, data, size, &buf))
        asm_add_const(a, p, name, member, buf, false, 0, &o);
    neff_buf_unref(buf);
    free(member);
    return api_status(a, before);
}

emu_status asm_declare_scratch(struct asm_ctx *a, const char *name, uint64_t size)
{
    if (a == NULL || a->taken || name == NULL)
        return EMU_INVALID;
    mark_changed(a);
    size_t before = a->nerrors;
    struct neff_var v = {.name = (char *)name, .type = NEFF_VAR_TMP_BUF, .size = size};
    struct asm_var_opts o = {0};
    asm_add_var(a, (struct asm_pos){0, 0}, &v, &o);
    return api_status(a, before);
}

emu_status asm_declare_name(struct asm_ctx *a, const char *name)
{
    if (a == NULL || a->taken || name == NULL)
        return EMU_INVALID;
    mark_changed(a);
    if (strlen(name) >= NEFF_NAME_SIZE) {
        asm_err_pos(a, (struct asm_pos){0, 0}, "a NEFF name has at most %u bytes",
                    NEFF_NAME_SIZE - 1);
        return EMU_INVALID;
    }
    memset(a->m->info.name, 0, sizeof a->m->info.name);
    memcpy(a->m->info.name, name, strlen(name));
    return EMU_OK;
}

/* ---- life cycle ---------------------------------------------------------- */

emu_status asm_new(const struct asm_opts *opts, struct asm_ctx **out)
{
    if (out == NULL)
        return EMU_INVALID;
    *out = NULL;
    struct asm_ctx *a = calloc(1, sizeof *a);
    if (a == NULL)
        return EMU_RESOURCE;
    if (opts != NULL)
        a->opts = *opts;
    a->max_const = a->opts.max_const_bytes ? a->opts.max_const_bytes
                                           : ASM_DEFAULT_MAX_CONST_BYTES;
    a->max_errors = a->opts.max_errors ? a->opts.max_errors : ASM_DEFAULT_MAX_ERRORS;
    a->m = neff_model_new(NULL);
    if (a->m == NULL || !asm_sg_start(a)) {
        asm_free(a);
        return EMU_RESOURCE;
    }
    *out = a;
    return EMU_OK;
}

static void sg_free(struct asm_sg *s)
{
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        free(s->code[e].insns);
        free(s->code[e].pos);
        free(s->eng[e].bin);
        free(s->eng[e].json);
        for (uint32_t i = 0; i < s->eng[e].nfuncs; i++)
            free(s->eng[e].funcs[i]);
        free(s->eng[e].funcs);
    }
    for (size_t i = 0; i < s->nlabels; i++)
        free(s->labels[i].name);
    free(s->labels);
    for (size_t i = 0; i < s->nfixups; i++)
        free(s->fixups[i].label);
    free(s->fixups);
    free(s->var_pos);
}

void asm_free(struct asm_ctx *a)
{
    if (a == NULL)
        return;
    for (size_t k = 0; k < a->nsgs; k++)
        sg_free(&a->sgs[k]);
    free(a->sgs);
    neff_model_free(a->m);
    for (size_t i = 0; i < a->nsyms; i++)
        free(a->syms[i].name);
    free(a->syms);
    for (size_t i = 0; i < a->nerrors; i++)
        free(a->errors[i]);
    free(a->errors);
    free(a->ll.s);
    free(a->ll.pos);
    free(a);
}

/* ---- one-call helpers ---------------------------------------------------- */

emu_status asm_buffer(const char *text, size_t len, const struct asm_opts *opts, FILE *diag,
                      struct neff_model **out)
{
    struct asm_ctx *a = NULL;
    if (out == NULL || (text == NULL && len > 0))
        return EMU_INVALID;
    *out = NULL;
    emu_status st = asm_new(opts, &a);
    if (st != EMU_OK)
        return st;
    asm_text(a, text, len);
    st = asm_finish(a);
    for (size_t i = 0; diag != NULL && i < a->nerrors; i++)
        fprintf(diag, "%s\n", a->errors[i]);
    if (diag != NULL && a->gave_up)
        fprintf(diag, "%s: too many errors, stopped reporting\n", asm_src_name(a));
    if (st == EMU_OK)
        *out = asm_take_model(a);
    asm_free(a);
    return st;
}

emu_status asm_file(const char *path, const struct asm_opts *opts, FILE *diag,
                    struct neff_model **out)
{
    if (path == NULL || out == NULL)
        return EMU_INVALID;
    *out = NULL;
    struct asm_opts o = {0};
    if (opts != NULL)
        o = *opts;
    char *dir = NULL;
    if (o.source_name == NULL)
        o.source_name = path;
    if (o.base_dir == NULL) {
        const char *slash = strrchr(path, '/');
        dir = slash ? asm_dup_n(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
        if (dir == NULL)
            return EMU_RESOURCE;
        o.base_dir = dir;
    }
    uint8_t *text = NULL;
    size_t size = 0;
    emu_status st = asm_read_file(path, 0, &text, &size);
    if (st != EMU_OK) {
        if (diag != NULL)
            fprintf(diag, "%s: cannot read the file\n", path);
    } else {
        st = asm_buffer((const char *)text, size, &o, diag, out);
    }
    free(text);
    free(dir);
    return st;
}

emu_status asm_neff_bytes(const struct neff_model *m, uint8_t **bytes, size_t *size)
{
    struct neff_file *f = NULL;
    if (m == NULL || bytes == NULL || size == NULL)
        return EMU_INVALID;
    emu_status st = neff_model_store(m, &f);
    if (st == EMU_OK)
        st = neff_file_write(f, bytes, size);
    neff_file_free(f);
    return st;
}
