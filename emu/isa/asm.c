/*
 * asm.c: the trnemu assembler (see asm.h and docs/asm.md).
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
 */
#include "emu/isa/asm.h"

#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/isa.h"
#include "emu/isa/isa_text.h"
#include "emu/neff/npy.h"
#include "emu/num/numerics.h"

#define ASM_MAX_TOKS 96          /* words of one directive */
#define ASM_NAME_MAX 512         /* longest variable, queue, member name */

/* ---- state --------------------------------------------------------------- */

/* Where a character of the source came from. */
struct asm_pos {
    uint32_t line;  /* 1-based line; 0 for declarations made through the C API */
    uint32_t col;   /* 1-based column */
};

/* A label: an instruction index in one engine's stream. */
struct asm_label {
    char *name;          /* identifier */
    int engine;          /* engine of the labelled instruction; -1 while pending */
    uint32_t index;      /* index in that engine's stream */
    struct asm_pos pos;  /* where it was defined */
};

/* A jump/branch target written as a label name, patched at finish. */
struct asm_fixup {
    char *label;         /* the name */
    int engine;          /* engine of the instruction */
    uint32_t index;      /* its index in the stream */
    uint8_t slot;        /* imm[] slot of its target operand */
    struct asm_pos pos;  /* where the name was written */
};

/* One engine's instructions, decoded. */
struct asm_stream {
    struct isa_insn *insns;  /* in stream order */
    struct asm_pos *pos;     /* source position of each */
    size_t n, cap;           /* used, allocated */
};

/* What .engine said about one engine section. */
struct asm_engine_opt {
    bool given;          /* a .engine directive named this engine */
    bool nocode;         /* present without an instruction stream */
    char *bin;           /* stream member name or NULL (default) */
    char *json;          /* engine JSON member name or NULL (default) */
    char **funcs;        /* activation_function_sets */
    uint32_t nfuncs;     /* entries in funcs */
    struct asm_pos pos;  /* where it was given */
};

/* The assembler's view of one subgraph of the draft model. */
struct asm_sg {
    struct neff_subgraph *sg;                   /* in the draft model */
    struct asm_stream code[ISA_ENG_COUNT];      /* instructions per engine */
    struct asm_engine_opt eng[ISA_ENG_COUNT];   /* .engine options */
    struct asm_label *labels;                   /* labels, defined order */
    size_t nlabels, caplabels;                  /* used, allocated */
    struct asm_fixup *fixups;                   /* label references */
    size_t nfixups, capfixups;                  /* used, allocated */
    struct asm_pos *var_pos;                    /* declaration of each var */
    size_t cap_var_pos;                         /* entries allocated */
    uint64_t next_var_id;                       /* id the next var gets by default */
    bool used;                                  /* anything was declared in it */
};

/* A named semaphore or event. */
struct asm_sym {
    char *name;     /* identifier */
    uint32_t id;    /* number */
    bool event;     /* an event, not a semaphore */
};

/* Header fields set by .header (bit i of set: field i below). */
enum asm_hdr_field {
    HDR_VERSION, HDR_PKG, HDR_BUILD, HDR_UUID, HDR_NUM_TPB, HDR_REQ_TPB, HDR_TPB_PER_NODE,
    HDR_FEATURES, HDR_LNC, HDR_COUNT
};

struct asm_header {
    uint32_t set;                          /* bit per enum asm_hdr_field */
    struct neff_model_info info;           /* the values */
};

/* A logical line under construction. */
struct asm_lline {
    char *s;                 /* text, NUL-terminated */
    struct asm_pos *pos;     /* origin of each character */
    size_t n, cap;           /* used, allocated */
    bool open;               /* the last physical line ended in '\' */
};

struct asm_ctx {
    struct asm_opts opts;            /* options (strings borrowed) */
    uint64_t max_const;              /* effective max_const_bytes */
    unsigned max_errors;             /* effective max_errors */
    struct neff_model *m;            /* the draft model */
    struct asm_sg *sgs;              /* one per subgraph of m */
    size_t nsgs;                     /* entries in sgs */
    bool sg_directive;               /* a .subgraph has been seen */
    struct asm_sym *syms;            /* named semaphores and events */
    size_t nsyms, capsyms;           /* used, allocated */
    struct asm_header hdr;           /* .header overrides */
    struct asm_pos hdr_pos;          /* where .header last was */
    struct asm_lline ll;             /* the logical line being read */
    uint32_t lineno;                 /* physical lines read */
    char **errors;                   /* recorded errors */
    size_t nerrors;                  /* entries in errors */
    bool gave_up;                    /* more errors than max_errors */
    bool oom;                        /* out of memory somewhere */
    bool finished;                   /* m is the result of a successful finish */
    bool taken;                      /* m was handed out */
};

/* A directive line split into words. */
struct asm_tok {
    size_t at;       /* offset of the word in the line */
    size_t kn;       /* length of its key ("key=value"), 0 for a plain word */
    size_t vat;      /* offset of its value */
    size_t vn;       /* length of the value as written */
    char *str;       /* the value decoded from a quoted string, or NULL */
    bool rest;       /* "= ..." : the value is the rest of the line */
    bool used;       /* taken by the directive */
};

struct asm_dir {
    const char *s;                   /* the logical line */
    size_t name_at;                  /* offset of the directive word */
    struct asm_tok tok[ASM_MAX_TOKS];/* its words, in order */
    size_t n;                        /* entries in tok */
};

/* ---- small helpers ------------------------------------------------------- */

static bool grow_array(void **arr, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return true;
    size_t ncap = *cap ? *cap * 2 : 16;
    if (ncap > SIZE_MAX / elem)
        return false;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

static char *dup_n(const char *s, size_t n)
{
    char *c = malloc(n + 1);
    if (c != NULL) {
        memcpy(c, s, n);
        c[n] = '\0';
    }
    return c;
}

static bool is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static size_t ident_len(const char *s)
{
    size_t n = 0;
    if (!is_ident_start(s[0]))
        return 0;
    while (is_ident_char(s[n]))
        n++;
    return n;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool is_comment(char c)
{
    return c == ';' || c == '#';
}

static bool is_end(char c)
{
    return c == '\0' || is_comment(c);
}

static bool same(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

static struct asm_sg *cur_sg(struct asm_ctx *a)
{
    return &a->sgs[a->nsgs - 1];
}

/* ---- errors -------------------------------------------------------------- */

static const char *src_name(const struct asm_ctx *a)
{
    return a->opts.source_name ? a->opts.source_name : "<input>";
}

__attribute__((format(printf, 3, 0)))
static void err_v(struct asm_ctx *a, struct asm_pos p, const char *fmt, va_list ap)
{
    a->finished = false;
    if (a->nerrors >= a->max_errors) {
        a->gave_up = true;
        return;
    }
    char msg[768], *line = NULL;
    vsnprintf(msg, sizeof msg, fmt, ap);
    int r = p.line ? asprintf(&line, "%s:%u:%u: %s", src_name(a), p.line, p.col, msg)
                   : asprintf(&line, "%s: %s", src_name(a), msg);
    char **e = realloc(a->errors, (a->nerrors + 1) * sizeof *e);
    if (r < 0 || e == NULL) {
        if (r >= 0)
            free(line);
        if (e != NULL)
            a->errors = e;
        a->oom = true;
        return;
    }
    a->errors = e;
    a->errors[a->nerrors++] = line;
}

__attribute__((format(printf, 3, 4)))
static void err_pos(struct asm_ctx *a, struct asm_pos p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_v(a, p, fmt, ap);
    va_end(ap);
}

/* Position of offset off of the current logical line. */
static struct asm_pos line_pos(const struct asm_ctx *a, size_t off)
{
    const struct asm_lline *l = &a->ll;
    if (off < l->n)
        return l->pos[off];
    if (l->n > 0)
        return (struct asm_pos){l->pos[l->n - 1].line, l->pos[l->n - 1].col + 1};
    return (struct asm_pos){a->lineno, 1};
}

__attribute__((format(printf, 3, 4)))
static bool err_at(struct asm_ctx *a, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_v(a, line_pos(a, off), fmt, ap);
    va_end(ap);
    return false;
}

static bool oom_at(struct asm_ctx *a, size_t off)
{
    a->oom = true;
    return err_at(a, off, "out of memory");
}

size_t asm_error_count(const struct asm_ctx *a)
{
    return a ? a->nerrors : 0;
}

const char *asm_error_text(const struct asm_ctx *a, size_t i)
{
    return a && i < a->nerrors ? a->errors[i] : NULL;
}

/* ---- numbers ------------------------------------------------------------- */

/* Unsigned decimal or 0x hexadecimal, the whole of s[0..n). */
static bool parse_u64(const char *s, size_t n, uint64_t *v)
{
    unsigned base = 10;
    uint64_t x = 0;
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
        n -= 2;
    }
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (base == 16 && c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (base == 16 && c >= 'A' && c <= 'F')
            d = (unsigned)(c - 'A' + 10);
        else
            return false;
        if (x > (UINT64_MAX - d) / base)
            return false;
        x = x * base + d;
    }
    *v = x;
    return true;
}

/* Signed: an optional '-' or '+', then as parse_u64. */
static bool parse_i64(const char *s, size_t n, int64_t *v)
{
    bool neg = n > 0 && s[0] == '-';
    uint64_t u;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        s++;
        n--;
    }
    if (!parse_u64(s, n, &u))
        return false;
    if (neg ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
        return false;
    *v = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

/* A C floating-point literal (also inf, nan), the whole of s[0..n). */
static bool parse_f64(const char *s, size_t n, double *v)
{
    char buf[96];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    errno = 0;
    *v = strtod(buf, &end);
    return end == buf + n && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'));
}

/* "bits:0x..." for the exact bits of a float element. */
static bool parse_bits(const char *s, size_t n, unsigned nbits, uint64_t *v)
{
    if (n < 5 || memcmp(s, "bits:", 5) != 0 || !parse_u64(s + 5, n - 5, v))
        return false;
    return nbits >= 64 || *v < (1ull << nbits);
}

/* ---- logical lines ------------------------------------------------------- */

static bool ll_push(struct asm_ctx *a, char c, struct asm_pos p)
{
    struct asm_lline *l = &a->ll;
    if (l->n + 1 >= l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 256;
        char *s = realloc(l->s, ncap);
        if (s == NULL)
            return false;
        l->s = s;
        struct asm_pos *q = realloc(l->pos, ncap * sizeof *q);
        if (q == NULL)
            return false;
        l->pos = q;
        l->cap = ncap;
    }
    l->s[l->n] = c;
    l->pos[l->n++] = p;
    l->s[l->n] = '\0';
    return true;
}

/* Offset where a comment starts in s[0..n) (quotes respected), or n. */
static size_t comment_start(const char *s, size_t n)
{
    bool q = false;
    for (size_t i = 0; i < n; i++) {
        if (q && s[i] == '\\' && i + 1 < n)
            i++;
        else if (s[i] == '"')
            q = !q;
        else if (!q && is_comment(s[i]))
            return i;
    }
    return n;
}

/* ---- variables ----------------------------------------------------------- */

/* Options every variable directive takes. */
struct var_opts {
    bool has_id;            /* id= given */
    uint32_t id;            /* var_id */
    uint64_t align;         /* alignment (0: none) */
    char *fabric;           /* fabric_path or NULL */
    bool has_backing;       /* backing_off= given */
    uint64_t backing;       /* backing_variable_off */
    bool has_ref;           /* ref= given */
    uint32_t ref;           /* referenced_var_id */
    uint32_t *list;         /* list= entries */
    uint32_t nlist;         /* entries in list */
    char *ops;              /* ops= as compact JSON, or NULL */
};

static void var_opts_clear(struct var_opts *o)
{
    free(o->fabric);
    free(o->list);
    free(o->ops);
    memset(o, 0, sizeof *o);
}

/* Is s valid UTF-8 (no overlong forms, surrogates or values past
 * U+10FFFF)? JSON strings must be. */
static bool utf8_ok(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2
                           : (c & 0xF8) == 0xF0 ? 3 : 4;
        if (n == 4)
            return false;
        uint32_t cp = n == 0 ? c : c & (0x3Fu >> n);
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i] & 0x3Fu);
        }
        static const uint32_t min[4] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        s += n + 1;
    }
    return true;
}

/* A name that JSON and the tarball carry safely. */
static bool name_ok(const char *s)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > ASM_NAME_MAX ||
        !utf8_ok((const unsigned char *)s))
        return false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}

/* A member path inside a subgraph directory: relative, no "." or ".."
 * components, no empty components. */
static bool member_ok(const char *s)
{
    if (!name_ok(s) || s[0] == '/')
        return false;
    const char *c = s;
    for (;;) {
        const char *e = strchr(c, '/');
        size_t n = e ? (size_t)(e - c) : strlen(c);
        if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
            return false;
        if (e == NULL)
            return true;
        c = e + 1;
    }
}

static bool sg_track_var(struct asm_sg *s, struct asm_pos p)
{
    size_t n = s->sg->n_vars;
    if (!grow_array((void **)&s->var_pos, n, &s->cap_var_pos, sizeof *s->var_pos))
        return false;
    s->var_pos[n] = p;
    return true;
}

/* Add variable *v (plus options) to the current subgraph. */
static bool add_var(struct asm_ctx *a, struct asm_pos p, struct neff_var *v,
                    const struct var_opts *o)
{
    struct asm_sg *s = cur_sg(a);
    uint64_t end;
    if (!name_ok(v->name)) {
        err_pos(a, p, "'%s' is not a usable variable name", v->name ? v->name : "");
        return false;
    }
    if (neff_sg_find_var(s->sg, v->name) != NULL) {
        err_pos(a, p, "variable '%s' is already declared in %s", v->name, s->sg->name);
        return false;
    }
    uint64_t id = o->has_id ? o->id : s->next_var_id;
    if (id > UINT32_MAX) {
        err_pos(a, p, "no var_id left for '%s'; give id=", v->name);
        return false;
    }
    const struct neff_var *other = neff_sg_find_var_id(s->sg, (uint32_t)id);
    if (other != NULL) {
        err_pos(a, p, "var_id %llu is already used by '%s'", (unsigned long long)id, other->name);
        return false;
    }
    if (v->size > INT64_MAX || o->align > INT64_MAX || (o->align & (o->align - 1)) != 0 ||
        (o->has_backing && (o->backing > INT64_MAX ||
                            __builtin_add_overflow(o->backing, v->size, &end)))) {
        err_pos(a, p, "variable '%s': size, alignment (a power of two) or backing offset out "
                "of range", v->name);
        return false;
    }
    v->var_id = (uint32_t)id;
    v->alignment = o->align;
    v->fabric_path = o->fabric;
    v->has_backing_off = o->has_backing;
    v->backing_variable_off = o->backing;
    v->has_referenced_var = o->has_ref;
    v->referenced_var_id = o->ref;
    v->list = o->list;
    v->n_list = o->nlist;
    v->ops_json = o->ops;
    if (!sg_track_var(s, p) || neff_sg_add_var(s->sg, v) != EMU_OK) {
        a->oom = true;
        err_pos(a, p, "variable '%s': out of memory", v->name);
        return false;
    }
    if (id + 1 > s->next_var_id)
        s->next_var_id = id + 1;
    s->used = true;
    return true;
}

/* Declare I/O tensor name in neff.json (once) and as a variable. */
static bool add_io(struct asm_ctx *a, struct asm_pos p, const char *name, bool is_output,
                   uint32_t dtype, const uint32_t *shape, uint32_t ndim,
                   const struct var_opts *o)
{
    const struct neff_io *io = neff_model_find_io(a->m, name);
    if (isa_dtype_size(dtype) == 0 || ndim > NEFF_IO_MAX_DIMS) {
        err_pos(a, p, "I/O tensor '%s': bad dtype or more than %u dimensions", name,
                NEFF_IO_MAX_DIMS);
        return false;
    }
    if (dtype >= ISA_DT_NRT_COUNT) {
        err_pos(a, p, "I/O tensor '%s': %s has no nrt_dtype_t value; declare the bytes as u8 "
                "(or u32) and view them with the MX dtype in the instructions", name,
                isa_dtype_name(dtype));
        return false;
    }
    if (io != NULL && (io->is_output != is_output || io->dtype != dtype || io->ndim != ndim ||
                       (ndim && memcmp(io->shape, shape, ndim * sizeof *shape) != 0))) {
        err_pos(a, p, "I/O tensor '%s' was declared differently before", name);
        return false;
    }
    if (io == NULL) {
        uint64_t size = isa_dtype_size(dtype);
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(size, (uint64_t)shape[i], &size) || size > INT64_MAX) {
                err_pos(a, p, "I/O tensor '%s': size overflows", name);
                return false;
            }
        if (!name_ok(name) ||
            neff_model_add_io(a->m, name, is_output, dtype, shape, ndim) != EMU_OK) {
            err_pos(a, p, "I/O tensor '%s' cannot be declared (bad name or out of memory)",
                    name);
            return false;
        }
        io = neff_model_find_io(a->m, name);
    }
    struct neff_var v = {.name = (char *)name,
                         .type = is_output ? NEFF_VAR_OUTPUT : NEFF_VAR_INPUT,
                         .size = io->size};
    return add_var(a, p, &v, o);
}

/* Bytes of a constant as a .npy file (dtype, shape, payload). */
static bool npy_member(struct asm_ctx *a, struct asm_pos p, uint32_t dtype, const uint64_t *shape,
                       uint32_t ndim, const void *data, size_t len, struct neff_buf **out)
{
    const char *descr = npy_descr_for_dtype(dtype);
    uint8_t *bytes = NULL;
    size_t n = 0;
    if (descr == NULL || npy_write(descr, shape, ndim, data, len, &bytes, &n) != EMU_OK) {
        err_pos(a, p, "cannot build the .npy of this constant (dtype or size)");
        return false;
    }
    *out = neff_buf_copy(bytes, n);
    free(bytes);
    if (*out == NULL) {
        a->oom = true;
        err_pos(a, p, "out of memory");
        return false;
    }
    return true;
}

/* Add a file variable holding buf (a reference is taken) as member. */
static bool add_const(struct asm_ctx *a, struct asm_pos p, const char *name, const char *member,
                      struct neff_buf *buf, bool has_size, uint64_t size, struct var_opts *o)
{
    struct neff_var v = {.name = (char *)name, .type = NEFF_VAR_FILE,
                         .file_name = (char *)member, .file = buf};
    bool npy_name = strlen(member) >= 4 && strcmp(member + strlen(member) - 4, ".npy") == 0;
    struct npy_info info;
    size_t payload = neff_buf_size(buf);
    if (!member_ok(member)) {
        err_pos(a, p, "'%s' is not a usable member name", member);
        return false;
    }
    if (npy_name) {
        if (npy_parse(neff_buf_data(buf), neff_buf_size(buf), member, &info) != EMU_OK) {
            err_pos(a, p, "member '%s' ends in .npy but its bytes are not a .npy file", member);
            return false;
        }
        payload = info.data_len;
    }
    if (has_size && size < payload) {
        err_pos(a, p, "size=%llu is smaller than the %zu bytes of data", (unsigned long long)size,
                payload);
        return false;
    }
    v.size = has_size ? size : payload;
    return add_var(a, p, &v, o);
}

/* ---- directive words ----------------------------------------------------- */

/* Decode the quoted string at s[*i] ('"' there); *i ends past the quote. */
static bool lex_string(struct asm_ctx *a, const char *s, size_t *i, char **out)
{
    size_t start = *i, j = *i + 1, n = 0;
    char *buf = malloc(strlen(s + start) + 1);
    if (buf == NULL)
        return oom_at(a, start);
    for (;; j++) {
        char c = s[j];
        if (c == '\0') {
            free(buf);
            return err_at(a, start, "unterminated string");
        }
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20) {
            free(buf);
            return err_at(a, j, "control character in a string");
        }
        if (c != '\\') {
            buf[n++] = c;
            continue;
        }
        c = s[++j];
        uint64_t x;
        if (c == '\\' || c == '"')
            buf[n++] = c;
        else if (c == 'n')
            buf[n++] = '\n';
        else if (c == 't')
            buf[n++] = '\t';
        else if (c == 'x' && s[j + 1] != '\0' && s[j + 2] != '\0' &&
                 parse_u64((char[]){'0', 'x', s[j + 1], s[j + 2]}, 4, &x) && x != 0) {
            buf[n++] = (char)x;
            j += 2;
        } else {
            free(buf);
            return err_at(a, j - 1, "unknown escape in a string (use \\\\, \\\", \\n, \\t, \\xHH)");
        }
    }
    buf[n] = '\0';
    *i = j + 1;
    *out = buf;
    return true;
}

/* A bare word from s[*i]: up to a blank or comment outside brackets. */
static bool lex_word(struct asm_ctx *a, const char *s, size_t *i)
{
    int depth = 0;
    size_t j = *i;
    for (; s[j] != '\0'; j++) {
        char c = s[j];
        if (depth == 0 && (is_blank(c) || is_comment(c)))
            break;
        if (c == '[')
            depth++;
        else if (c == ']' && --depth < 0)
            return err_at(a, j, "unmatched ']'");
    }
    if (depth != 0)
        return err_at(a, *i, "unclosed '['");
    *i = j;
    return true;
}

static void dir_clear(struct asm_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->tok[i].str);
    d->n = 0;
}

/* One word of a directive into t (key=value, "string", [list], word, = rest). */
static bool lex_tok(struct asm_ctx *a, const char *s, size_t *i, struct asm_tok *t)
{
    size_t start = *i;
    memset(t, 0, sizeof *t);
    t->at = start;
    if (s[start] == '=') {
        size_t j = start + 1;
        while (is_blank(s[j]))
            j++;
        size_t e = j + comment_start(s + j, strlen(s + j));
        while (e > j && is_blank(s[e - 1]))
            e--;
        t->rest = true;
        t->vat = j;
        t->vn = e - j;
        *i = j + comment_start(s + j, strlen(s + j));
        return true;
    }
    if (s[start] == '"') {
        t->vat = start;
        if (!lex_string(a, s, i, &t->str))
            return false;
        t->vn = *i - start;
    } else {
        size_t k = ident_len(s + start);
        if (k > 0 && s[start + k] == '=') {
            t->kn = k;
            size_t j = start + k + 1;
            t->vat = j;
            if (s[j] == '"') {
                if (!lex_string(a, s, &j, &t->str))
                    return false;
            } else if (!lex_word(a, s, &j)) {
                return false;
            }
            t->vn = j - t->vat;
            *i = j;
        } else {
            t->vat = start;
            if (!lex_word(a, s, i))
                return false;
            t->vn = *i - start;
        }
    }
    if (s[*i] != '\0' && !is_blank(s[*i]) && !is_comment(s[*i]))
        return err_at(a, *i, "expected a blank after this word");
    return true;
}

/* Split a directive line (s[off] is '.') into words. */
static bool lex_dir(struct asm_ctx *a, const char *s, size_t off, struct asm_dir *d)
{
    size_t i = off + 1;
    d->s = s;
    d->name_at = off;
    d->n = 0;
    while (is_ident_char(s[i]))
        i++;
    if (i == off + 1)
        return err_at(a, off, "expected a directive name after '.'");
    for (;;) {
        if (s[i] != '\0' && !is_blank(s[i]) && !is_comment(s[i]))
            return err_at(a, i, "expected a blank after the directive name");
        while (is_blank(s[i]))
            i++;
        if (is_end(s[i]))
            return true;
        if (d->n == ASM_MAX_TOKS)
            return err_at(a, i, "too many words in one directive (at most %d)", ASM_MAX_TOKS);
        struct asm_tok *t = &d->tok[d->n];
        if (!lex_tok(a, s, &i, t)) {
            free(t->str);
            t->str = NULL;
            return false;
        }
        d->n++;
        for (size_t k = 0; t->kn && k + 1 < d->n; k++)
            if (d->tok[k].kn == t->kn && memcmp(s + d->tok[k].at, s + t->at, t->kn) == 0 &&
                !same(s + t->at, t->kn, "from"))
                return err_at(a, t->at, "option '%.*s' given twice", (int)t->kn, s + t->at);
    }
}

/* The value of a word. */
static const char *tok_val(const struct asm_dir *d, const struct asm_tok *t, size_t *n)
{
    if (t->str != NULL) {
        *n = strlen(t->str);
        return t->str;
    }
    *n = t->vn;
    return d->s + t->vat;
}

/* The next unused plain word (not key=value, not "= ..."), or NULL. */
static struct asm_tok *next_word(struct asm_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (!d->tok[i].used && d->tok[i].kn == 0 && !d->tok[i].rest) {
            d->tok[i].used = true;
            return &d->tok[i];
        }
    return NULL;
}

/* Take the next plain word if it equals word (unquoted). */
static bool take_flag(struct asm_dir *d, const char *word)
{
    for (size_t i = 0; i < d->n; i++) {
        struct asm_tok *t = &d->tok[i];
        if (!t->used && t->kn == 0 && !t->rest && t->str == NULL &&
            same(d->s + t->vat, t->vn, word)) {
            t->used = true;
            return true;
        }
    }
    return false;
}

/* The unused key=value word with this key, or NULL. */
static struct asm_tok *take_opt(struct asm_dir *d, const char *key)
{
    for (size_t i = 0; i < d->n; i++) {
        struct asm_tok *t = &d->tok[i];
        if (!t->used && t->kn && same(d->s + t->at, t->kn, key)) {
            t->used = true;
            return t;
        }
    }
    return NULL;
}

static struct asm_tok *take_rest(struct asm_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (!d->tok[i].used && d->tok[i].rest) {
            d->tok[i].used = true;
            return &d->tok[i];
        }
    return NULL;
}

/* Complain about the first word the directive did not take. */
static bool dir_done(struct asm_ctx *a, struct asm_dir *d, const char *what)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct asm_tok *t = &d->tok[i];
        if (t->used)
            continue;
        if (t->kn)
            return err_at(a, t->at, "%s takes no option '%.*s'", what, (int)t->kn, d->s + t->at);
        if (t->rest)
            return err_at(a, t->at, "%s takes no '= values'", what);
        return err_at(a, t->at, "unexpected '%.*s' in %s", (int)(t->vn > 40 ? 40 : t->vn),
                      d->s + t->vat, what);
    }
    return true;
}

/* ---- typed values of words ----------------------------------------------- */

static bool tok_u64(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                    uint64_t max, uint64_t *v)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (t->str != NULL || !parse_u64(s, n, v) || *v > max)
        return err_at(a, t->vat, "expected an integer in 0..%llu", (unsigned long long)max);
    return true;
}

static bool tok_u32(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                    uint32_t max, uint32_t *v)
{
    uint64_t x;
    if (!tok_u64(a, d, t, max, &x))
        return false;
    *v = (uint32_t)x;
    return true;
}

static bool tok_f64(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                    double *v)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (t->str != NULL || !parse_f64(s, n, v) || !isfinite(*v))
        return err_at(a, t->vat, "expected a finite number");
    return true;
}

/* A name: a bare word or a quoted string; malloc'd copy. */
static char *tok_name(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      const char *what)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    char *c = dup_n(s, n);
    if (c == NULL) {
        oom_at(a, t->vat);
        return NULL;
    }
    if (!name_ok(c)) {
        err_at(a, t->vat, "'%s' is not a usable %s", c, what);
        free(c);
        return NULL;
    }
    return c;
}

static bool tok_dtype(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      uint32_t *dtype)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    int dt = t->str ? -1 : isa_dtype_from_name(s, n);
    if (dt <= 0)
        return err_at(a, t->vat, "unknown dtype '%.*s' (f32, bf16, f16, i32, u8, ...)",
                      (int)(n > 40 ? 40 : n), s);
    *dtype = (uint32_t)dt;
    return true;
}

/* Split s[0..n) at commas; calls item(s, n, off) for each trimmed piece. */
typedef bool (*item_fn)(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off);

static bool split_list(struct asm_ctx *a, const char *s, size_t n, size_t off, void *user,
                       item_fn item)
{
    size_t i = 0;
    for (;;) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        size_t b = i, e = j;
        while (b < e && is_blank(s[b]))
            b++;
        while (e > b && is_blank(s[e - 1]))
            e--;
        if (b == e)
            return err_at(a, off + b, "empty list item");
        if (!item(a, user, s + b, e - b, off + b))
            return false;
        if (j >= n)
            return true;
        i = j + 1;
    }
}

/* A growing list of u64 values. */
struct u64_list {
    uint64_t *v;        /* values */
    size_t n, cap;      /* used, allocated */
    uint64_t max;       /* largest value allowed */
    size_t max_items;   /* most items allowed */
};

static bool u64_item(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off)
{
    struct u64_list *l = user;
    uint64_t x;
    if (!parse_u64(s, n, &x) || x > l->max)
        return err_at(a, off, "expected an integer in 0..%llu", (unsigned long long)l->max);
    if (l->n == l->max_items)
        return err_at(a, off, "more than %zu items", l->max_items);
    if (!grow_array((void **)&l->v, l->n, &l->cap, sizeof *l->v))
        return oom_at(a, off);
    l->v[l->n++] = x;
    return true;
}

/* "a,b,c" (or "[a, b, c]" when brackets) as u64 values. */
static bool tok_u64_list(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                         bool brackets, struct u64_list *l)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    size_t off = t->vat;
    if (brackets) {
        if (t->str || n < 2 || s[0] != '[' || s[n - 1] != ']')
            return err_at(a, t->vat, "expected [n, n, ...]");
        s++;
        n -= 2;
        off++;
        size_t k = 0;
        while (k < n && is_blank(s[k]))
            k++;
        if (k == n)
            return true;  /* [] */
    }
    if (t->str)
        return err_at(a, t->vat, "expected a list of integers");
    return split_list(a, s, n, off, l, u64_item);
}

static bool tok_u32_array(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                          uint32_t **out, uint32_t *count)
{
    struct u64_list l = {.max = UINT32_MAX, .max_items = 1u << 20};
    bool ok = tok_u64_list(a, d, t, false, &l);
    *out = NULL;
    *count = 0;
    if (ok && l.n > 0) {
        *out = malloc(l.n * sizeof **out);
        if (*out == NULL)
            ok = oom_at(a, t->vat);
        for (size_t i = 0; ok && i < l.n; i++)
            (*out)[i] = (uint32_t)l.v[i];
        if (ok)
            *count = (uint32_t)l.n;
    }
    free(l.v);
    return ok;
}

/* A growing list of names. */
struct name_list {
    char **v;           /* names */
    size_t n, cap;      /* used, allocated */
};

static bool name_push(struct asm_ctx *a, struct name_list *l, const char *s, size_t n,
                      size_t off)
{
    if (!grow_array((void **)&l->v, l->n, &l->cap, sizeof *l->v) ||
        (l->v[l->n] = dup_n(s, n)) == NULL)
        return oom_at(a, off);
    if (!name_ok(l->v[l->n])) {
        free(l->v[l->n]);
        return err_at(a, off, "'%.*s' is not a usable name", (int)n, s);
    }
    l->n++;
    return true;
}

/* One item of a comma list: a name without quotes, brackets or '='. */
static bool name_item(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++)
        if (strchr("\"\\[]=;#", s[i]) != NULL)
            return err_at(a, off + i, "'%c' in a list item (quote a single name instead)", s[i]);
    return name_push(a, user, s, n, off);
}

static void name_list_free(struct name_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static bool tok_names(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      struct name_list *l)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (t->str != NULL)
        return name_push(a, l, s, n, t->vat);
    return split_list(a, s, n, t->vat, l, name_item);
}

/* ---- common variable options --------------------------------------------- */

static bool tok_ops_json(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                         char **out)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_DECODE_ANY, &je);
    if (j == NULL)
        return err_at(a, t->vat, "ops is not JSON: %s", je.text);
    if (!json_is_array(j)) {
        json_decref(j);
        return err_at(a, t->vat, "ops is a JSON array");
    }
    *out = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return *out != NULL || oom_at(a, t->vat);
}

static bool var_ref_of(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       uint32_t *id)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    uint64_t x;
    if (t->str == NULL && parse_u64(s, n, &x) && x <= UINT32_MAX) {
        *id = (uint32_t)x;
        return true;
    }
    char name[ASM_NAME_MAX + 1];
    if (n > ASM_NAME_MAX)
        return err_at(a, t->vat, "name too long");
    memcpy(name, s, n);
    name[n] = '\0';
    const struct neff_var *v = neff_sg_find_var(cur_sg(a)->sg, name);
    if (v == NULL)
        return err_at(a, t->vat, "no variable '%s' declared before", name);
    *id = v->var_id;
    return true;
}

static bool take_var_opts(struct asm_ctx *a, struct asm_dir *d, struct var_opts *o)
{
    struct asm_tok *t;
    uint64_t x;
    if ((t = take_opt(d, "id")) != NULL) {
        if (!tok_u32(a, d, t, UINT32_MAX, &o->id))
            return false;
        o->has_id = true;
    }
    if ((t = take_opt(d, "align")) != NULL && !tok_u64(a, d, t, INT64_MAX, &o->align))
        return false;
    if ((t = take_opt(d, "fabric_path")) != NULL &&
        (o->fabric = tok_name(a, d, t, "fabric path")) == NULL)
        return false;
    if ((t = take_opt(d, "backing_off")) != NULL) {
        if (!tok_u64(a, d, t, INT64_MAX, &x))
            return false;
        o->has_backing = true;
        o->backing = x;
    }
    if ((t = take_opt(d, "ref")) != NULL) {
        if (!var_ref_of(a, d, t, &o->ref))
            return false;
        o->has_ref = true;
    }
    if ((t = take_opt(d, "list")) != NULL && !tok_u32_array(a, d, t, &o->list, &o->nlist))
        return false;
    if ((t = take_opt(d, "ops")) != NULL && !tok_ops_json(a, d, t, &o->ops))
        return false;
    return true;
}

/* ---- directives: NEFF level ---------------------------------------------- */

static bool dir_neff(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *t = next_word(d);
    if (t == NULL)
        return err_at(a, d->name_at, ".neff needs a name");
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (n > NEFF_NAME_SIZE - 1 || memchr(s, '\0', n) != NULL)
        return err_at(a, t->vat, "a NEFF name has at most %u bytes", NEFF_NAME_SIZE - 1);
    memset(a->m->info.name, 0, sizeof a->m->info.name);
    memcpy(a->m->info.name, s, n);
    return dir_done(a, d, ".neff");
}

static bool hdr_uuid(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (t->str != NULL || n != 2 * NEFF_UUID_SIZE)
        return err_at(a, t->vat, "uuid is %u hexadecimal digits", 2 * NEFF_UUID_SIZE);
    for (unsigned i = 0; i < NEFF_UUID_SIZE; i++) {
        uint64_t x;
        if (!parse_u64((char[]){'0', 'x', s[2 * i], s[2 * i + 1]}, 4, &x))
            return err_at(a, t->vat + 2 * i, "not a hexadecimal digit");
        a->hdr.info.uuid[i] = (uint8_t)x;
    }
    return true;
}

static bool hdr_version(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    const char *dot = memchr(s, '.', n);
    if (t->str || dot == NULL ||
        !parse_u64(s, (size_t)(dot - s), &a->hdr.info.neff_version_major) ||
        !parse_u64(dot + 1, n - (size_t)(dot - s) - 1, &a->hdr.info.neff_version_minor))
        return err_at(a, t->vat, "version is MAJOR.MINOR");
    if (a->hdr.info.neff_version_major > NEFF_VERSION_MAJOR_MAX)
        return err_at(a, t->vat, "NEFF version %llu is newer than this reader's %u",
                      (unsigned long long)a->hdr.info.neff_version_major, NEFF_VERSION_MAJOR_MAX);
    return true;
}

static bool hdr_tpb_per_node(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t)
{
    struct u64_list l = {.max = 255, .max_items = NEFF_MAX_NODES};
    bool ok = tok_u64_list(a, d, t, false, &l);
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
        if (same(k, t->kn, keys[j]))
            f = j;
    if (f < 0)
        return err_at(a, t->at, "unknown header field '%.*s'", (int)t->kn, k);
    t->used = true;
    a->hdr.set |= 1u << f;
    size_t n;
    const char *s = tok_val(d, t, &n);
    switch (f) {
    case HDR_VERSION: return hdr_version(a, d, t);
    case HDR_PKG:
        if (!tok_u64(a, d, t, UINT64_MAX, &i->pkg_version))
            return false;
        if (i->pkg_version != NEFF_PKG_VERSION_SHA256 && i->pkg_version != NEFF_PKG_VERSION_MD5)
            return err_at(a, t->vat, "pkg_version is 1 (sha256) or 2 (md5)");
        return true;
    case HDR_BUILD:
        if (n > NEFF_BUILD_VERSION_SIZE || memchr(s, '\0', n))
            return err_at(a, t->vat, "build_version has at most %u bytes",
                          NEFF_BUILD_VERSION_SIZE);
        memset(i->build_version, 0, sizeof i->build_version);
        memcpy(i->build_version, s, n);
        return true;
    case HDR_UUID: return hdr_uuid(a, d, t);
    case HDR_NUM_TPB: return tok_u32(a, d, t, UINT32_MAX, &i->num_tpb);
    case HDR_REQ_TPB: return tok_u32(a, d, t, UINT32_MAX, &i->requested_tpb_count);
    case HDR_TPB_PER_NODE: return hdr_tpb_per_node(a, d, t);
    case HDR_FEATURES: return tok_u64(a, d, t, UINT64_MAX, &i->feature_bits);
    default: return tok_u32(a, d, t, UINT32_MAX, &i->lnc_size);
    }
}

static bool dir_header(struct asm_ctx *a, struct asm_dir *d)
{
    if (d->n == 0)
        return err_at(a, d->name_at, ".header needs key=value fields");
    for (size_t k = 0; k < d->n; k++) {
        struct asm_tok *t = &d->tok[k];
        if (t->kn == 0)
            return err_at(a, t->at, ".header takes key=value fields");
        if (!hdr_field(a, d, t))
            return false;
    }
    a->hdr_pos = line_pos(a, d->name_at);
    return true;
}

static bool sg_start(struct asm_ctx *a)
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
static void report_dangling_labels(struct asm_ctx *a)
{
    struct asm_sg *s = cur_sg(a);
    for (size_t i = 0; i < s->nlabels; i++)
        if (s->labels[i].engine < 0) {
            err_pos(a, s->labels[i].pos, "label '%s' is not followed by an instruction",
                    s->labels[i].name);
            s->labels[i].engine = ISA_ENG_COUNT;  /* reported */
        }
}

static bool dir_subgraph(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *t = next_word(d);
    char *name = NULL;
    if (t != NULL) {
        name = tok_name(a, d, t, "subgraph name");
        if (name == NULL)
            return false;
        if (strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..") || strlen(name) > 255) {
            free(name);
            return err_at(a, t->vat, "a subgraph name is one plain directory name");
        }
        for (uint32_t i = 0; i < a->m->n_sgs; i++)
            if (strcmp(a->m->sgs[i]->name, name) == 0 &&
                !(i == 0 && !a->sg_directive && !a->sgs[0].used)) {
                free(name);
                return err_at(a, t->vat, "subgraph '%s' exists already", a->m->sgs[i]->name);
            }
    }
    if (!dir_done(a, d, ".subgraph")) {
        free(name);
        return false;
    }
    report_dangling_labels(a);
    bool reuse = !a->sg_directive && a->nsgs == 1 && !a->sgs[0].used;
    a->sg_directive = true;
    if (!reuse && !sg_start(a)) {
        free(name);
        return oom_at(a, d->name_at);
    }
    for (uint32_t i = 0; name == NULL && i + 1 < a->m->n_sgs; i++)
        if (strcmp(a->m->sgs[i]->name, cur_sg(a)->sg->name) == 0)
            return err_at(a, d->name_at, "subgraph '%s' exists already; name this one",
                          a->m->sgs[i]->name);
    cur_sg(a)->used = true;
    if (name != NULL) {
        free(cur_sg(a)->sg->name);
        cur_sg(a)->sg->name = name;
    }
    return true;
}

/* ---- directives: variables ----------------------------------------------- */

/* "[d0, d1, ...]" as a u64 shape (each dimension at most max). */
static bool tok_shape(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      uint64_t max, uint64_t *shape, uint32_t *ndim)
{
    struct u64_list l = {.max = max, .max_items = NEFF_IO_MAX_DIMS};
    bool ok = tok_u64_list(a, d, t, true, &l);
    for (size_t i = 0; ok && i < l.n; i++)
        shape[i] = l.v[i];
    *ndim = (uint32_t)l.n;
    free(l.v);
    return ok;
}

static bool dir_io(struct asm_ctx *a, struct asm_dir *d, bool is_output)
{
    const char *what = is_output ? ".output" : ".input";
    struct asm_tok *tn = next_word(d), *td = next_word(d), *ts = next_word(d);
    uint64_t shape64[NEFF_IO_MAX_DIMS];
    uint32_t shape[NEFF_IO_MAX_DIMS], ndim = 0, dtype = 0;
    struct var_opts o = {0};
    if (ts == NULL)
        return err_at(a, d->name_at, "%s needs NAME DTYPE [SHAPE]", what);
    if (!tok_dtype(a, d, td, &dtype) || !tok_shape(a, d, ts, UINT32_MAX, shape64, &ndim))
        return false;
    for (uint32_t i = 0; i < ndim; i++)
        shape[i] = (uint32_t)shape64[i];
    char *name = tok_name(a, d, tn, "tensor name");
    bool ok = name != NULL && take_var_opts(a, d, &o) && dir_done(a, d, what) &&
              add_io(a, line_pos(a, d->name_at), name, is_output, dtype, shape, ndim, &o);
    var_opts_clear(&o);
    free(name);
    return ok;
}

/* One inline value into element i of a constant. */
struct const_fill {
    uint32_t dtype;     /* element type */
    size_t esize;       /* its size */
    uint8_t *data;      /* the elements */
    uint64_t count;     /* elements wanted */
    uint64_t n;         /* elements written */
};

/* double -> float rounding to nearest, overflowing to infinity (without
 * the undefined behaviour of an out-of-range C conversion). */
static float f64_to_f32(double x)
{
    const double limit = 3.4028235677973366e38;  /* FLT_MAX + half an ulp */
    if (isfinite(x) && fabs(x) >= limit)
        return x > 0 ? INFINITY : -INFINITY;
    if (isfinite(x) && fabs(x) > FLT_MAX)
        return x > 0 ? FLT_MAX : -FLT_MAX;
    return (float)x;
}

static bool put_float(struct asm_ctx *a, const struct const_fill *f, const char *s, size_t n,
                      size_t off, uint8_t *dst)
{
    uint64_t bits;
    double x;
    if (parse_bits(s, n, (unsigned)f->esize * 8, &bits)) {
        memcpy(dst, &bits, f->esize);  /* little-endian host */
        return true;
    }
    if (!parse_f64(s, n, &x))
        return err_at(a, off, "expected a number or bits:0x...");
    float v = f64_to_f32(x);
    uint16_t h;
    switch (f->dtype) {
    case ISA_DT_BF16: h = num_f32_to_bf16(v); memcpy(dst, &h, 2); return true;
    case ISA_DT_F16: h = num_f32_to_f16(v); memcpy(dst, &h, 2); return true;
    case ISA_DT_FP8E3: case ISA_DT_FP8E4: case ISA_DT_FP8E5:
        *dst = num_f32_to_fp8(f->dtype, v);
        return true;
    case ISA_DT_FP8E4FN: case ISA_DT_FP8E8M0:
        return num_from_f32(f->dtype, dst, v, NULL, 0) == EMU_OK;
    default: memcpy(dst, &v, 4); return true;
    }
}

static bool put_int(struct asm_ctx *a, const struct const_fill *f, const char *s, size_t n,
                    size_t off, uint8_t *dst)
{
    bool is_signed = f->dtype == ISA_DT_I8 || f->dtype == ISA_DT_I16 || f->dtype == ISA_DT_I32 ||
                     f->dtype == ISA_DT_I64;
    unsigned bits = (unsigned)f->esize * 8;
    uint64_t u;
    int64_t i;
    if (is_signed) {
        int64_t lo = bits == 64 ? INT64_MIN : -(1ll << (bits - 1));
        int64_t hi = bits == 64 ? INT64_MAX : (1ll << (bits - 1)) - 1;
        if (!parse_i64(s, n, &i) || i < lo || i > hi)
            return err_at(a, off, "expected an integer in %lld..%lld", (long long)lo,
                          (long long)hi);
        u = (uint64_t)i;
    } else {
        uint64_t hi = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
        if (!parse_u64(s, n, &u) || u > hi)
            return err_at(a, off, "expected an integer in 0..%llu", (unsigned long long)hi);
    }
    memcpy(dst, &u, f->esize);  /* little-endian host */
    return true;
}

static bool value_item(struct asm_ctx *a, void *user, const char *s, size_t n, size_t off)
{
    struct const_fill *f = user;
    if (f->n == f->count)
        return err_at(a, off, "more values than the %llu elements of the shape",
                      (unsigned long long)f->count);
    uint8_t *dst = f->data + f->n * f->esize;
    f->n++;
    return isa_dtype_is_float(f->dtype) ? put_float(a, f, s, n, off, dst)
                                        : put_int(a, f, s, n, off, dst);
}

/* "= v0, v1, ..." for a constant of dtype and count elements. */
static bool const_values(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                         struct const_fill *f)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(f->count, (uint64_t)f->esize, &bytes) || bytes > a->max_const ||
        bytes > SIZE_MAX)
        return err_at(a, t->at, "constant of %llu elements is larger than the %llu-byte limit",
                      (unsigned long long)f->count, (unsigned long long)a->max_const);
    f->data = calloc(1, bytes ? (size_t)bytes : 1);
    if (f->data == NULL)
        return oom_at(a, t->at);
    if (t->vn == 0 && f->count == 0)
        return true;
    if (t->vn == 0)
        return err_at(a, t->at, "expected values after '='");
    if (!split_list(a, d->s + t->vat, t->vn, t->vat, f, value_item))
        return false;
    if (f->n == 1 && f->count > 1) {
        for (uint64_t i = 1; i < f->count; i++)
            memcpy(f->data + i * f->esize, f->data, f->esize);
        f->n = f->count;
    }
    if (f->n != f->count)
        return err_at(a, t->at, "%llu values for a shape of %llu elements (give all, or one)",
                      (unsigned long long)f->n, (unsigned long long)f->count);
    return true;
}

/* Locate a file= path: as given when absolute, else in base_dir, then in
 * the include directories. *out is malloc'd. */
static bool find_file(struct asm_ctx *a, const char *path, char **out)
{
    size_t ndirs = 1 + a->opts.n_include_dirs;
    if (path[0] == '/')
        ndirs = 1;
    for (size_t i = 0; i < ndirs; i++) {
        const char *dir = path[0] == '/' ? NULL : i == 0 ? a->opts.base_dir
                                                         : a->opts.include_dirs[i - 1];
        char *p = NULL;
        if (dir == NULL || dir[0] == '\0' ? (p = strdup(path)) == NULL
                                           : asprintf(&p, "%s/%s", dir, path) < 0)
            return false;
        FILE *fp = fopen(p, "rb");
        if (fp != NULL) {
            fclose(fp);
            *out = p;
            return true;
        }
        free(p);
    }
    *out = NULL;
    return true;
}

/* The bytes of file= into a buffer. */
static bool const_file(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       struct neff_buf **buf)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (a->opts.no_files)
        return err_at(a, t->vat, "file= is not allowed here");
    char *name = dup_n(s, n), *path = NULL;
    if (name == NULL || !find_file(a, name, &path)) {
        free(name);
        return oom_at(a, t->vat);
    }
    if (path == NULL) {
        err_at(a, t->vat, "cannot find '%s'%s", name,
               a->opts.n_include_dirs ? " (searched the include directories too)" : "");
        free(name);
        return false;
    }
    uint8_t *data = NULL;
    size_t size = 0;
    emu_status st = asm_read_file(path, a->max_const, &data, &size);
    if (st != EMU_OK)
        err_at(a, t->vat, "cannot read '%s' (%s)", path,
               st == EMU_RESOURCE ? "out of memory" : "unreadable or too large");
    else if ((*buf = neff_buf_copy(data, size)) == NULL)
        oom_at(a, t->vat);
    free(data);
    free(path);
    free(name);
    return st == EMU_OK && *buf != NULL;
}

/* bytes=HEX */
static bool const_hex(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                      struct neff_buf **buf)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    if (t->str != NULL || n % 2 != 0)
        return err_at(a, t->vat, "bytes= takes an even number of hexadecimal digits");
    if (n / 2 > a->max_const)
        return err_at(a, t->vat, "constant larger than the %llu-byte limit",
                      (unsigned long long)a->max_const);
    uint8_t *p;
    *buf = neff_buf_new(n / 2, &p);
    if (*buf == NULL)
        return oom_at(a, t->vat);
    for (size_t i = 0; i < n / 2; i++) {
        uint64_t x;
        if (!parse_u64((char[]){'0', 'x', s[2 * i], s[2 * i + 1]}, 4, &x)) {
            neff_buf_unref(*buf);
            *buf = NULL;
            return err_at(a, t->vat + 2 * i, "not a hexadecimal digit");
        }
        p[i] = (uint8_t)x;
    }
    return true;
}

/* A .npy file given with a dtype and shape must hold exactly that. */
static bool npy_matches(struct asm_ctx *a, size_t off, const struct neff_buf *buf,
                        uint32_t dtype, const uint64_t *shape, uint32_t ndim)
{
    struct npy_info info;
    if (npy_parse(neff_buf_data(buf), neff_buf_size(buf), "constant", &info) != EMU_OK)
        return err_at(a, off, "the file is not a valid .npy file");
    const char *want = npy_descr_for_dtype(dtype);
    if (want == NULL || strcmp(want, info.descr) != 0)
        return err_at(a, off, "the file holds '%s' data; %s needs '%s'", info.descr,
                      isa_dtype_name(dtype), want ? want : "?");
    if (info.ndim != ndim || (ndim && memcmp(info.shape, shape, ndim * sizeof *shape) != 0))
        return err_at(a, off, "the file's shape differs from the declared one");
    return true;
}

/* Where a .const's bytes come from, and what they are. */
struct const_src {
    struct neff_buf *buf;  /* the member bytes */
    bool npy;              /* they are a .npy file */
};

static bool const_source(struct asm_ctx *a, struct asm_dir *d, bool typed, uint32_t dtype,
                         const uint64_t *shape, uint32_t ndim, struct const_src *c)
{
    struct asm_tok *rest = take_rest(d), *tf = take_opt(d, "file"), *tb = take_opt(d, "bytes");
    if ((rest != NULL) + (tf != NULL) + (tb != NULL) != 1)
        return err_at(a, d->name_at, ".const needs exactly one of '= values', file=, bytes=");
    if (rest != NULL) {
        if (!typed)
            return err_at(a, rest->at, "inline values need a DTYPE and [SHAPE]");
        struct const_fill f = {.dtype = dtype, .esize = isa_dtype_size(dtype), .count = 1};
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(f.count, shape[i], &f.count))
                return err_at(a, rest->at, "shape overflows");
        bool ok = const_values(a, d, rest, &f) &&
                  npy_member(a, line_pos(a, rest->at), dtype, shape, ndim, f.data,
                             (size_t)(f.count * f.esize), &c->buf);
        free(f.data);
        c->npy = true;
        return ok;
    }
    if (tb != NULL) {
        if (typed)
            return err_at(a, tb->at, "bytes= takes no DTYPE and [SHAPE]");
        return const_hex(a, d, tb, &c->buf);
    }
    if (!const_file(a, d, tf, &c->buf))
        return false;
    size_t n;
    const char *p = tok_val(d, tf, &n);
    c->npy = n >= 4 && memcmp(p + n - 4, ".npy", 4) == 0;
    if (typed && c->npy)
        return npy_matches(a, tf->vat, c->buf, dtype, shape, ndim);
    if (typed) {
        uint64_t bytes = isa_dtype_size(dtype);
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(bytes, shape[i], &bytes))
                bytes = UINT64_MAX;
        if (bytes != neff_buf_size(c->buf))
            return err_at(a, tf->vat, "the file has %zu bytes, the shape needs %llu",
                          neff_buf_size(c->buf), (unsigned long long)bytes);
    }
    return true;
}

static bool dir_const(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = next_word(d), *td = next_word(d), *ts = NULL, *t;
    uint64_t shape[NEFF_IO_MAX_DIMS], size = 0;
    uint32_t ndim = 0, dtype = 0;
    bool typed = td != NULL, has_size = false, ok = true;
    struct const_src c = {0};
    struct var_opts o = {0};
    char *name = NULL, *member = NULL;
    if (tn == NULL)
        return err_at(a, d->name_at, ".const needs a NAME");
    if (typed && ((ts = next_word(d)) == NULL))
        return err_at(a, td->at, "a DTYPE is followed by a [SHAPE]");
    if (typed && (!tok_dtype(a, d, td, &dtype) || !tok_shape(a, d, ts, UINT64_MAX, shape, &ndim)))
        return false;
    if ((name = tok_name(a, d, tn, "constant name")) == NULL)
        return false;
    if ((t = take_opt(d, "member")) != NULL)
        ok = (member = tok_name(a, d, t, "member name")) != NULL;
    if (ok && (t = take_opt(d, "size")) != NULL)
        ok = has_size = tok_u64(a, d, t, INT64_MAX, &size);
    ok = ok && take_var_opts(a, d, &o) && const_source(a, d, typed, dtype, shape, ndim, &c) &&
         dir_done(a, d, ".const");
    if (ok && member == NULL && asprintf(&member, "%s%s", name, c.npy ? ".npy" : ".bin") < 0) {
        member = NULL;
        ok = oom_at(a, tn->at);
    }
    if (ok && c.npy != (strlen(member) >= 4 && !strcmp(member + strlen(member) - 4, ".npy")))
        ok = err_at(a, d->name_at, "member '%s': a .npy constant needs a name ending in .npy, "
                    "raw bytes a name that does not", member);
    ok = ok && add_const(a, line_pos(a, d->name_at), name, member, c.buf, has_size, size, &o);
    var_opts_clear(&o);
    neff_buf_unref(c.buf);
    free(member);
    free(name);
    return ok;
}

static bool dir_scratch(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = next_word(d), *t2 = next_word(d), *t3 = NULL;
    uint64_t size = 0, shape[NEFF_IO_MAX_DIMS];
    uint32_t ndim = 0, dtype = 0;
    struct var_opts o = {0};
    if (t2 == NULL)
        return err_at(a, d->name_at, ".scratch needs NAME SIZE or NAME DTYPE [SHAPE]");
    size_t n;
    const char *s = tok_val(d, t2, &n);
    if (isa_dtype_from_name(s, n) > 0) {
        if ((t3 = next_word(d)) == NULL || !tok_dtype(a, d, t2, &dtype) ||
            !tok_shape(a, d, t3, UINT64_MAX, shape, &ndim))
            return t3 == NULL ? err_at(a, t2->at, "a DTYPE is followed by a [SHAPE]") : false;
        size = isa_dtype_size(dtype);
        for (uint32_t i = 0; i < ndim; i++)
            if (__builtin_mul_overflow(size, shape[i], &size) || size > INT64_MAX)
                return err_at(a, t3->at, "size overflows");
    } else if (!tok_u64(a, d, t2, INT64_MAX, &size)) {
        return false;
    }
    char *name = tok_name(a, d, tn, "variable name");
    if (name == NULL)
        return false;
    struct neff_var v = {.name = name, .type = NEFF_VAR_TMP_BUF, .size = size};
    bool ok = take_var_opts(a, d, &o) && dir_done(a, d, ".scratch") &&
              add_var(a, line_pos(a, d->name_at), &v, &o);
    var_opts_clear(&o);
    free(name);
    return ok;
}

static bool dir_var(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = next_word(d), *tt = take_opt(d, "type"), *tsz = take_opt(d, "size");
    struct neff_var v = {0};
    struct var_opts o = {0};
    if (tn == NULL || tt == NULL || tsz == NULL)
        return err_at(a, d->name_at, ".var needs NAME type=TYPE size=BYTES");
    size_t n;
    const char *s = tok_val(d, tt, &n);
    int type = -1;
    for (int i = 0; i < NEFF_VAR_TYPE_COUNT; i++)
        if (same(s, n, neff_var_type_name((enum neff_var_type)i)))
            type = i;
    if (type < 0)
        return err_at(a, tt->vat, "unknown variable type '%.*s'", (int)(n > 40 ? 40 : n), s);
    if (type == NEFF_VAR_INPUT || type == NEFF_VAR_OUTPUT || type == NEFF_VAR_FILE)
        return err_at(a, tt->vat, "declare %.*s variables with %s", (int)n, s,
                      type == NEFF_VAR_FILE ? ".const" : ".input / .output");
    if (!tok_u64(a, d, tsz, INT64_MAX, &v.size))
        return false;
    v.type = (enum neff_var_type)type;
    if ((v.name = tok_name(a, d, tn, "variable name")) == NULL)
        return false;
    bool ok = take_var_opts(a, d, &o) && dir_done(a, d, ".var") &&
              add_var(a, line_pos(a, d->name_at), &v, &o);
    var_opts_clear(&o);
    free(v.name);
    return ok;
}

/* ---- directives: semaphores, queues, engines, descriptors ---------------- */

static const struct asm_sym *sym_find(const struct asm_ctx *a, const char *s, size_t n)
{
    for (size_t i = 0; i < a->nsyms; i++)
        if (same(s, n, a->syms[i].name))
            return &a->syms[i];
    return NULL;
}

/* s<digits> / e<digits>: the numeric forms of the ISA text. */
static bool is_sync_number(const char *s, size_t n)
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
    struct asm_tok *tn = next_word(d), *ti = next_word(d);
    uint32_t limit = event ? ISA_NUM_EVENTS : ISA_NUM_SEMS, id = 0;
    if (tn == NULL)
        return err_at(a, d->name_at, "%s needs a NAME", what);
    size_t n;
    const char *s = tok_val(d, tn, &n);
    if (tn->str || ident_len(s) != n || is_sync_number(s, n))
        return err_at(a, tn->vat, "a %s name is an identifier other than s<N> or e<N>",
                      event ? "event" : "semaphore");
    if (sym_find(a, s, n) != NULL)
        return err_at(a, tn->vat, "'%.*s' is already a semaphore or event name", (int)n, s);
    if (ti != NULL) {
        if (!tok_u32(a, d, ti, limit - 1, &id))
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
            return err_at(a, tn->vat, "every %s number is named already", what + 1);
    }
    if (!dir_done(a, d, what))
        return false;
    if (!grow_array((void **)&a->syms, a->nsyms, &a->capsyms, sizeof *a->syms) ||
        (a->syms[a->nsyms].name = dup_n(s, n)) == NULL)
        return oom_at(a, tn->at);
    a->syms[a->nsyms].id = id;
    a->syms[a->nsyms++].event = event;
    return true;
}

static bool queue_type_of(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                          enum neff_queue_type *qt)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    for (int i = 0; i < NEFF_QUEUE_TYPE_COUNT; i++)
        if (same(s, n, neff_queue_type_name((enum neff_queue_type)i))) {
            *qt = (enum neff_queue_type)i;
            return true;
        }
    return err_at(a, t->vat, "unknown queue type (in, out, data, embedding_update, dynamic)");
}

static bool queue_opts(struct asm_ctx *a, struct asm_dir *d, struct neff_queue *q,
                       struct name_list *inst)
{
    struct asm_tok *t;
    q->num_queues = 1;
    if ((t = take_opt(d, "num_queues")) != NULL && !tok_u32(a, d, t, 16, &q->num_queues))
        return false;
    if (q->num_queues == 0)
        return err_at(a, t->vat, "num_queues is 1..16");
    if ((t = take_opt(d, "owner")) != NULL && (q->owner = tok_name(a, d, t, "owner")) == NULL)
        return false;
    q->pinned = take_flag(d, "pinned");
    if ((t = take_opt(d, "instances")) != NULL) {
        if (!tok_names(a, d, t, inst))
            return false;
        q->instances = inst->v;
        q->n_instances = (uint32_t)inst->n;
    }
    if ((t = take_opt(d, "semaphore_set")) != NULL &&
        !tok_u32_array(a, d, t, &q->semaphore_set, &q->n_semaphore_set))
        return false;
    if ((t = take_opt(d, "semaphore")) != NULL) {
        if (!tok_u32(a, d, t, UINT32_MAX, &q->semaphore))
            return false;
        q->has_semaphore = true;
    }
    if ((t = take_opt(d, "fabric_path")) != NULL &&
        (q->fabric_path = tok_name(a, d, t, "fabric path")) == NULL)
        return false;
    return true;
}

static bool dir_queue(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *tn = next_word(d), *tt = take_opt(d, "type");
    struct neff_queue q = {0};
    struct name_list inst = {0};
    struct neff_subgraph *sg = cur_sg(a)->sg;
    if (tn == NULL || tt == NULL)
        return err_at(a, d->name_at, ".queue needs NAME type=TYPE");
    bool ok = queue_type_of(a, d, tt, &q.type) &&
              (q.name = tok_name(a, d, tn, "queue name")) != NULL;
    if (ok && neff_sg_find_queue(sg, q.name) != NULL)
        ok = err_at(a, tn->vat, "queue '%s' is already declared", q.name);
    ok = ok && queue_opts(a, d, &q, &inst) && dir_done(a, d, ".queue");
    if (ok && neff_sg_add_queue(sg, &q) != EMU_OK)
        ok = oom_at(a, d->name_at);
    if (ok)
        cur_sg(a)->used = true;
    name_list_free(&inst);
    free(q.name);
    free(q.owner);
    free(q.semaphore_set);
    free(q.fabric_path);
    return ok;
}

static bool tok_engine(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                       int *eng)
{
    size_t n;
    const char *s = tok_val(d, t, &n);
    *eng = t->str ? -1 : isa_engine_from_name(s, n);
    if (*eng < 0)
        return err_at(a, t->vat, "unknown engine (pe, act, pool, dve, sp)");
    return true;
}

static bool dir_engine(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *te = next_word(d), *t;
    int e;
    if (te == NULL)
        return err_at(a, d->name_at, ".engine needs an ENGINE");
    if (!tok_engine(a, d, te, &e))
        return false;
    struct asm_engine_opt *eo = &cur_sg(a)->eng[e];
    if (eo->given)
        return err_at(a, d->name_at, ".engine %s was given before", isa_engine_name((unsigned)e));
    bool code = take_flag(d, "code"), nocode = take_flag(d, "nocode");
    if (code && nocode)
        return err_at(a, d->name_at, "code or nocode, not both");
    struct name_list funcs = {0};
    bool ok = true;
    if ((t = take_opt(d, "bin")) != NULL)
        ok = (eo->bin = tok_name(a, d, t, "member name")) != NULL;
    if (ok && (t = take_opt(d, "json")) != NULL)
        ok = (eo->json = tok_name(a, d, t, "member name")) != NULL;
    if (ok && (t = take_opt(d, "act_func_sets")) != NULL)
        ok = tok_names(a, d, t, &funcs);
    ok = ok && dir_done(a, d, ".engine");
    if ((eo->bin && !member_ok(eo->bin)) || (eo->json && !member_ok(eo->json)))
        ok = ok && err_at(a, d->name_at, "bin= and json= are member names inside the subgraph");
    if (!ok) {
        name_list_free(&funcs);
        free(eo->bin);
        free(eo->json);
        eo->bin = eo->json = NULL;
        return false;
    }
    eo->given = true;
    eo->nocode = nocode;
    eo->funcs = funcs.v;
    eo->nfuncs = (uint32_t)funcs.n;
    eo->pos = line_pos(a, d->name_at);
    cur_sg(a)->used = true;
    return true;
}

/* A descriptor pattern: NAME[OFF, [step,size], ...]:DTYPE, dims outermost
 * first, in bytes; stored innermost first as the JSON has them. */
static bool desc_ap(struct asm_ctx *a, const struct asm_dir *d, const struct asm_tok *t,
                    struct neff_dma_ap *ap)
{
    size_t n;
    const char *s = tok_val(d, t, &n), *lb = memchr(s, '[', n), *rb = NULL;
    size_t off = t->vat;
    if (t->str != NULL || lb == NULL || lb == s)
        return err_at(a, off, "expected VAR[OFFSET, [step,size], ...]:DTYPE");
    for (size_t i = n; i > 0; i--)
        if (s[i - 1] == ']') {
            rb = s + i - 1;
            break;
        }
    if (rb == NULL || rb < lb)
        return err_at(a, off, "expected VAR[OFFSET, [step,size], ...]:DTYPE");
    if ((ap->var = dup_n(s, (size_t)(lb - s))) == NULL)
        return oom_at(a, off);
    ap->dtype = NEFF_DTYPE_UINT8;
    const char *tail = rb + 1;
    size_t tn = n - (size_t)(tail - s);
    if (tn > 0) {
        int dt = tn > 1 && tail[0] == ':' ? isa_dtype_from_name(tail + 1, tn - 1) : -1;
        if (dt <= 0)
            return err_at(a, off + (size_t)(tail - s), "expected :DTYPE after the pattern");
        ap->dtype = (uint32_t)dt;
    }
    /* inside the brackets: OFF, then [step,size] pairs */
    const char *p = lb + 1, *end = rb;
    const char *c = memchr(p, ',', (size_t)(end - p));
    const char *oe = c ? c : end;
    while (p < oe && is_blank(*p))
        p++;
    size_t ol = (size_t)(oe - p);
    while (ol > 0 && is_blank(p[ol - 1]))
        ol--;
    if (!parse_u64(p, ol, &ap->off) || ap->off > INT64_MAX)
        return err_at(a, off + (size_t)(p - s), "expected the byte offset");
    int64_t steps[NEFF_AP_MAX_DIMS];
    uint64_t sizes[NEFF_AP_MAX_DIMS];
    uint32_t nd = 0;
    p = oe;
    while (p < end) {
        p++;  /* the comma */
        while (p < end && is_blank(*p))
            p++;
        const char *q = p < end && *p == '[' ? memchr(p, ']', (size_t)(end - p)) : NULL;
        const char *mid = q ? memchr(p, ',', (size_t)(q - p)) : NULL;
        if (mid == NULL || nd == NEFF_AP_MAX_DIMS)
            return err_at(a, off + (size_t)(p - s), nd == NEFF_AP_MAX_DIMS
                          ? "at most 4 dimensions" : "expected [step,size]");
        const char *sb = p + 1, *se = mid, *zb = mid + 1, *ze = q;
        while (sb < se && is_blank(*sb)) sb++;
        while (se > sb && is_blank(se[-1])) se--;
        while (zb < ze && is_blank(*zb)) zb++;
        while (ze > zb && is_blank(ze[-1])) ze--;
        if (!parse_i64(sb, (size_t)(se - sb), &steps[nd]) ||
            !parse_u64(zb, (size_t)(ze - zb), &sizes[nd]) || sizes[nd] > INT64_MAX)
            return err_at(a, off + (size_t)(p - s), "expected [step,size] integers");
        nd++;
        p = q + 1;
        while (p < end && is_blank(*p))
            p++;
        if (p < end && *p != ',')
            return err_at(a, off + (size_t)(p - s), "expected ','");
    }
    if (nd == 0)
        return err_at(a, off, "a pattern has 1 to 4 [step,size] dimensions");
    ap->ndim = nd;
    for (uint32_t i = 0; i < nd; i++) {
        ap->steps[i] = steps[nd - 1 - i];
        ap->sizes[i] = sizes[nd - 1 - i];
    }
    return true;
}

/* The pattern must name a declared variable and stay inside it. */
static bool desc_ap_check(struct asm_ctx *a, const struct asm_tok *t, const struct neff_dma_ap *ap)
{
    const struct neff_var *v = neff_sg_find_var(cur_sg(a)->sg, ap->var);
    uint64_t lo, hi;
    if (v == NULL)
        return err_at(a, t->vat, "no variable '%s' declared before", ap->var);
    if (!neff_ap_range(ap, &lo, &hi))
        return err_at(a, t->vat, "the pattern overflows or starts before its variable");
    if (hi > v->size)
        return err_at(a, t->vat, "the pattern reaches byte %llu of the %llu-byte '%s'",
                      (unsigned long long)hi, (unsigned long long)v->size, v->name);
    return true;
}

static bool desc_sources(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *t;
    while ((t = take_opt(d, "from")) != NULL) {
        if (x->n_from == NEFF_MAX_CCE_SOURCES)
            return err_at(a, t->at, "at most %u sources", NEFF_MAX_CCE_SOURCES);
        if (x->from == NULL && (x->from = calloc(NEFF_MAX_CCE_SOURCES, sizeof *x->from)) == NULL)
            return oom_at(a, t->at);
        struct neff_dma_ap *ap = &x->from[x->n_from++];
        if (!desc_ap(a, d, t, ap) || !desc_ap_check(a, t, ap))
            return false;
    }
    if (x->n_from == 0)
        return err_at(a, d->name_at, ".desc needs from=");
    x->cce = take_flag(d, "cce") || x->n_from > 1;
    if ((t = take_opt(d, "to")) == NULL)
        return err_at(a, d->name_at, ".desc needs to=");
    return desc_ap(a, d, t, &x->to) && desc_ap_check(a, t, &x->to);
}

static bool desc_route(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *tq = take_opt(d, "queue"), *ti = take_opt(d, "instance");
    const struct neff_subgraph *sg = cur_sg(a)->sg;
    if (tq == NULL && ti == NULL)
        return err_at(a, d->name_at, ".desc needs queue= or instance=");
    if (tq != NULL) {
        if ((x->queue = tok_name(a, d, tq, "queue name")) == NULL)
            return false;
        if (ti == NULL && neff_sg_find_queue(sg, x->queue) == NULL)
            return err_at(a, tq->vat, "no queue '%s' declared before", x->queue);
    }
    if (ti != NULL) {
        if ((x->instance_name = tok_name(a, d, ti, "instance name")) == NULL)
            return false;
        bool found = false;
        for (uint32_t i = 0; i < sg->n_queues; i++)
            for (uint32_t j = 0; j < sg->queues[i].n_instances; j++)
                found = found || strcmp(sg->queues[i].instances[j], x->instance_name) == 0;
        if (!found)
            return err_at(a, ti->vat, "no queue instance '%s' declared before",
                          x->instance_name);
    }
    return true;
}

static bool desc_op(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *t = take_opt(d, "op"), *ts = take_opt(d, "scale");
    struct asm_tok *tc = take_opt(d, "constant"), *tcd = take_opt(d, "constant_dtype");
    x->op = NEFF_DMA_COPY;
    x->scale = 1.0;
    if (t != NULL) {
        size_t n;
        const char *s = tok_val(d, t, &n);
        int op = -1;
        for (int i = 0; i < NEFF_DMA_OP_COUNT; i++)
            if (same(s, n, neff_dma_op_name((enum neff_dma_op)i)))
                op = i;
        if (op < 0)
            return err_at(a, t->vat, "unknown op (copy, cast, add, fma, min, max, transpose)");
        x->op = (enum neff_dma_op)op;
    }
    if (ts != NULL && (x->op != NEFF_DMA_FMA || !tok_f64(a, d, ts, &x->scale)))
        return x->op != NEFF_DMA_FMA ? err_at(a, ts->at, "scale= needs op=fma") : false;
    if ((tc != NULL) != (tcd != NULL))
        return err_at(a, d->name_at, "constant= and constant_dtype= go together");
    if (tc == NULL)
        return true;
    size_t n;
    const char *s = tok_val(d, tcd, &n);
    x->constant_dtype = same(s, n, "f32") ? NEFF_DTYPE_FLOAT32 : same(s, n, "i32")
                      ? NEFF_DTYPE_INT32 : same(s, n, "u32") ? NEFF_DTYPE_UINT32 : 0;
    if (x->constant_dtype == 0)
        return err_at(a, tcd->vat, "constant_dtype is f32, i32 or u32");
    if (!tok_f64(a, d, tc, &x->constant))
        return false;
    double c = x->constant;
    if ((x->constant_dtype == NEFF_DTYPE_INT32 &&
         (c < INT32_MIN || c > INT32_MAX || c != (double)(int32_t)c)) ||
        (x->constant_dtype == NEFF_DTYPE_UINT32 &&
         (c < 0 || c > 4294967295.0 || c != (double)(uint32_t)c)))
        return err_at(a, tc->vat, "the constant does not fit %.*s", (int)n, s);
    return true;
}

static bool desc_extras(struct asm_ctx *a, struct asm_dir *d, struct neff_dma_desc *x)
{
    struct asm_tok *t;
    if ((t = take_opt(d, "semaphore")) != NULL) {
        if (!tok_u32(a, d, t, UINT32_MAX, &x->semaphore))
            return false;
        x->has_semaphore = true;
    }
    if ((t = take_opt(d, "event")) != NULL) {
        if (!tok_u32(a, d, t, UINT32_MAX, &x->event))
            return false;
        x->has_event = true;
    }
    if ((t = take_opt(d, "remote_semaphores")) != NULL &&
        !tok_u32_array(a, d, t, &x->remote_semaphores, &x->n_remote_semaphores))
        return false;
    if ((t = take_opt(d, "function_start")) != NULL &&
        (x->function_start = tok_name(a, d, t, "function name")) == NULL)
        return false;
    x->section_start_desc = take_flag(d, "section_start");
    if ((t = take_opt(d, "tiling_dims")) != NULL) {
        if (!tok_u32(a, d, t, UINT32_MAX, &x->num_tiling_dimensions))
            return false;
        x->has_tiling_dims = true;
    }
    if ((t = take_opt(d, "transpose_shape")) != NULL) {
        struct u64_list l = {.max = UINT32_MAX, .max_items = NEFF_AP_MAX_DIMS};
        bool ok = tok_u64_list(a, d, t, false, &l);
        for (size_t i = 0; ok && i < l.n; i++)
            x->transpose_shape[i] = (uint32_t)l.v[i];
        free(l.v);
        if (!ok)
            return false;
        x->has_transpose_shape = true;
    }
    if ((t = take_opt(d, "transpose_element_size")) != NULL &&
        !tok_u32(a, d, t, UINT32_MAX, &x->transpose_element_size))
        return false;
    return true;
}

static void desc_free(struct neff_dma_desc *x)
{
    for (uint32_t i = 0; x->from != NULL && i < NEFF_MAX_CCE_SOURCES; i++)
        free(x->from[i].var);
    free(x->from);
    free(x->to.var);
    free(x->queue);
    free(x->instance_name);
    free(x->function_start);
    free(x->remote_semaphores);
}

static bool dir_desc(struct asm_ctx *a, struct asm_dir *d)
{
    struct asm_tok *te = next_word(d), *tid = take_opt(d, "id");
    struct neff_dma_desc x = {0};
    int e;
    if (te == NULL || tid == NULL)
        return err_at(a, d->name_at, ".desc needs ENGINE id=N");
    bool ok = tok_engine(a, d, te, &e) && tok_u32(a, d, tid, UINT32_MAX, &x.id) &&
              desc_route(a, d, &x) && desc_sources(a, d, &x) && desc_op(a, d, &x) &&
              desc_extras(a, d, &x) && dir_done(a, d, ".desc");
    if (ok && neff_sg_add_desc(cur_sg(a)->sg, (enum neff_engine)e, &x) != EMU_OK)
        ok = oom_at(a, d->name_at);
    if (ok)
        cur_sg(a)->used = true;
    desc_free(&x);
    return ok;
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
    {"input", dir_input},   {"output", dir_output}, {"const", dir_const},
    {"scratch", dir_scratch}, {"var", dir_var},     {"sem", dir_sem},
    {"event", dir_event},   {"queue", dir_queue},   {"engine", dir_engine},
    {"desc", dir_desc},
};

static void do_directive(struct asm_ctx *a, const char *s, size_t off)
{
    struct asm_dir d;
    d.n = 0;
    if (lex_dir(a, s, off, &d)) {
        size_t n = 0;
        while (is_ident_char(s[off + 1 + n]))
            n++;
        dir_fn fn = NULL;
        for (size_t i = 0; i < sizeof asm_dirs / sizeof asm_dirs[0]; i++)
            if (same(s + off + 1, n, asm_dirs[i].name))
                fn = asm_dirs[i].fn;
        if (fn == NULL)
            err_at(a, off, "unknown directive '.%.*s'", (int)n, s + off + 1);
        else
            fn(a, &d);
    }
    dir_clear(&d);
}

/* ---- instructions -------------------------------------------------------- */

/* The instruction text with names replaced, and where each character came from. */
struct asm_sub {
    char *s;          /* text, NUL-terminated */
    size_t *map;      /* offset in the logical line of each character */
    size_t n, cap;    /* used, allocated */
};

static bool sub_put(struct asm_sub *b, const char *s, size_t n, size_t from, bool fixed)
{
    while (b->n + n + 1 > b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 256;
        char *p = realloc(b->s, ncap);
        if (p == NULL)
            return false;
        b->s = p;
        size_t *q = realloc(b->map, ncap * sizeof *q);
        if (q == NULL)
            return false;
        b->map = q;
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
    size_t idl = ident_len(s + v);
    if (idl > e - v)
        idl = e - v;
    bool target = same(s + w, k, "target"), sync = same(s + w, k, "wait") ||
                  same(s + w, k, "signal"), sem = same(s + w, k, "sem");
    if (idl == 0 || !(target || sync || sem) || (sync && is_sync_number(s + v, idl)))
        return sub_put(b, s + w, e - w, w, false);
    char rep[32];
    if (target) {
        if (v + idl != e)
            return sub_put(b, s + w, e - w, w, false);
        if (ref->name != NULL)
            return err_at(a, v, "more than one target");
        if ((ref->name = dup_n(s + v, idl)) == NULL)
            return oom_at(a, v);
        ref->off = v;
        snprintf(rep, sizeof rep, "0");
    } else {
        const struct asm_sym *y = sym_find(a, s + v, idl);
        if (y == NULL || (sem && y->event))
            return err_at(a, v, "unknown %s '%.*s' (declare it with %s)",
                          sem ? "semaphore" : "semaphore or event", (int)idl, s + v,
                          sem ? ".sem" : ".sem or .event");
        snprintf(rep, sizeof rep, "%s%u", sem ? "" : y->event ? "e" : "s", y->id);
    }
    return (sub_put(b, s + w, k + 1, w, false) && sub_put(b, rep, strlen(rep), v, true) &&
            sub_put(b, s + v + idl, e - v - idl, v + idl, false)) || oom_at(a, w);
}

/* The instruction starting at s[off], with label and semaphore names replaced. */
static bool substitute(struct asm_ctx *a, const char *s, size_t off, struct asm_sub *b,
                       struct label_ref *ref)
{
    size_t i = off;
    bool first = true;
    while (!is_end(s[i])) {
        size_t w = i;
        while (is_blank(s[i]))
            i++;
        if (i > w && !sub_put(b, s + w, i - w, w, false))
            return oom_at(a, w);
        if (is_end(s[i]))
            break;
        w = i;
        int depth = 0;
        for (; s[i] != '\0' && !(depth == 0 && (is_blank(s[i]) || is_comment(s[i]))); i++)
            depth += s[i] == '[' ? 1 : s[i] == ']' ? -1 : 0;
        if (first && !sub_put(b, s + w, i - w, w, false))
            return oom_at(a, w);
        if (!first && !sub_word(a, s, w, i, b, ref))
            return false;
        first = false;
    }
    return sub_put(b, "", 0, i, false) || oom_at(a, i);
}

static emu_status env_lookup(void *user, const char *name, size_t len, uint32_t *var_id)
{
    struct asm_ctx *a = user;
    char buf[ASM_NAME_MAX + 1];
    if (len > ASM_NAME_MAX)
        return EMU_INVALID;
    memcpy(buf, name, len);
    buf[len] = '\0';
    const struct neff_var *v = neff_sg_find_var(cur_sg(a)->sg, buf);
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
        size_t ncap = st->cap ? st->cap * 2 : 64;
        struct isa_insn *q = realloc(st->insns, ncap * sizeof *q);
        if (q == NULL)
            return false;
        st->insns = q;
        struct asm_pos *r = realloc(st->pos, ncap * sizeof *r);
        if (r == NULL)
            return false;
        st->pos = r;
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
    struct asm_sg *s = cur_sg(a);
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    int f = op ? isa_op_field(op, "target", 6) : -1;
    if (f < 0)
        return err_at(a, ref->off, "this op has no target");
    if (!grow_array((void **)&s->fixups, s->nfixups, &s->capfixups, sizeof *s->fixups))
        return oom_at(a, ref->off);
    s->fixups[s->nfixups++] = (struct asm_fixup){ref->name, insn->engine, index,
                                                 op->fields[f].slot, line_pos(a, ref->off)};
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
            err_at(a, c < b.n ? b.map[c] : b.n ? b.map[b.n - 1] + 1 : off, "%s", err.message);
        } else {
            struct asm_sg *sg = cur_sg(a);
            struct asm_stream *st = &sg->code[insn.engine];
            uint32_t index = (uint32_t)st->n;
            if (!stream_push(st, &insn, line_pos(a, off)))
                oom_at(a, off);
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
    struct asm_sg *sg = cur_sg(a);
    for (size_t i = 0; i < sg->nlabels; i++)
        if (same(s + off, n, sg->labels[i].name))
            return err_at(a, off, "label '%.*s' is defined twice (first at line %u)", (int)n,
                          s + off, sg->labels[i].pos.line);
    if (!grow_array((void **)&sg->labels, sg->nlabels, &sg->caplabels, sizeof *sg->labels) ||
        (sg->labels[sg->nlabels].name = dup_n(s + off, n)) == NULL)
        return oom_at(a, off);
    sg->labels[sg->nlabels].engine = -1;
    sg->labels[sg->nlabels].index = 0;
    sg->labels[sg->nlabels++].pos = line_pos(a, off);
    return true;
}

/* One logical line. */
static void do_logical_line(struct asm_ctx *a)
{
    const char *s = a->ll.s;
    size_t i = 0;
    if (s == NULL)
        return;
    while (is_blank(s[i]))
        i++;
    if (is_end(s[i]))
        return;
    if (s[i] == '.') {
        do_directive(a, s, i);
        return;
    }
    size_t n = ident_len(s + i);
    if (n > 0 && s[i + n] == ':' && (is_blank(s[i + n + 1]) || is_end(s[i + n + 1]))) {
        if (!do_label(a, s, i, n))
            return;
        i += n + 1;
        while (is_blank(s[i]))
            i++;
        if (is_end(s[i]))
            return;
        if (s[i] == '.') {
            err_at(a, i, "a label is followed by an instruction, not a directive");
            return;
        }
    }
    do_instruction(a, s, i);
}

/* ---- feeding ------------------------------------------------------------- */

static void feed_reset(struct asm_ctx *a)
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
    size_t c = comment_start(line, len), e = c;
    while (e > 0 && is_blank(line[e - 1]))
        e--;
    bool cont = e > 0 && line[e - 1] == '\\';
    size_t take = cont ? e - 1 : len;
    for (size_t i = 0; i < take; i++) {
        char ch = line[i] == '\0' ? ' ' : line[i];
        if (!ll_push(a, ch, (struct asm_pos){a->lineno, (uint32_t)(i + 1)})) {
            a->oom = true;
            err_pos(a, (struct asm_pos){a->lineno, 1}, "out of memory");
            feed_reset(a);
            return EMU_RESOURCE;
        }
    }
    a->ll.open = cont;
    if (!cont) {
        do_logical_line(a);
        feed_reset(a);
    }
    if (a->oom)
        return EMU_RESOURCE;
    return a->nerrors > before || a->gave_up ? EMU_INVALID : EMU_OK;
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
    struct var_opts o = {0};
    add_io(a, (struct asm_pos){0, 0}, name, is_output, dtype, shape, ndim, &o);
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
    struct var_opts o = {0};
    char *member = NULL;
    for (uint32_t i = 0; i < ndim && i < NEFF_IO_MAX_DIMS; i++) {
        shape64[i] = shape[i];
        if (__builtin_mul_overflow(want, (uint64_t)shape[i], &want))
            want = UINT64_MAX;
    }
    if (ndim > NEFF_IO_MAX_DIMS || want == 0 || want != size || size > a->max_const)
        err_pos(a, p, "constant '%s': %zu bytes do not match its dtype and shape (or the limit)",
                name, size);
    else if (asprintf(&member, "%s.npy", name) < 0)
        member = NULL, a->oom = true;
    else if (npy_member(a, p, dtype, shape64, ndim, data, size, &buf))
        add_const(a, p, name, member, buf, false, 0, &o);
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
    struct var_opts o = {0};
    add_var(a, (struct asm_pos){0, 0}, &v, &o);
    return api_status(a, before);
}

emu_status asm_declare_name(struct asm_ctx *a, const char *name)
{
    if (a == NULL || a->taken || name == NULL)
        return EMU_INVALID;
    mark_changed(a);
    if (strlen(name) >= NEFF_NAME_SIZE) {
        err_pos(a, (struct asm_pos){0, 0}, "a NEFF name has at most %u bytes",
                NEFF_NAME_SIZE - 1);
        return EMU_INVALID;
    }
    memset(a->m->info.name, 0, sizeof a->m->info.name);
    memcpy(a->m->info.name, name, strlen(name));
    return EMU_OK;
}

/* ---- finishing ----------------------------------------------------------- */

static const struct asm_label *label_find(const struct asm_sg *s, const char *name)
{
    for (size_t i = 0; i < s->nlabels; i++)
        if (strcmp(s->labels[i].name, name) == 0)
            return &s->labels[i];
    return NULL;
}

static void resolve_fixups(struct asm_ctx *a, struct asm_sg *s)
{
    for (size_t i = 0; i < s->nfixups; i++) {
        const struct asm_fixup *f = &s->fixups[i];
        const struct asm_label *l = label_find(s, f->label);
        if (l == NULL)
            err_pos(a, f->pos, "no label '%s' in %s", f->label, s->sg->name);
        else if (l->engine < 0 || l->engine >= ISA_ENG_COUNT)
            continue;  /* reported: it labels no instruction */
        else if (l->engine != f->engine)
            err_pos(a, f->pos, "label '%s' is on the %s engine, this instruction on %s",
                    f->label, isa_engine_name((unsigned)l->engine),
                    isa_engine_name((unsigned)f->engine));
        else
            s->code[f->engine].insns[f->index].imm[f->slot].i = l->index;
    }
}

/* Jump and branch targets written as numbers must exist. */
static void check_targets(struct asm_ctx *a, const struct asm_sg *s)
{
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        const struct asm_stream *st = &s->code[e];
        for (size_t i = 0; i < st->n; i++) {
            const struct isa_insn *x = &st->insns[i];
            int slot = x->opcode == ISA_OP_jump ? 0 : x->opcode == ISA_OP_branch ? 2 : -1;
            if (slot >= 0 && (uint64_t)x->imm[slot].i >= st->n)
                err_pos(a, st->pos[i], "target %lld is past the last %s instruction (%zu)",
                        (long long)x->imm[slot].i, isa_engine_name((unsigned)e), st->n - 1);
        }
    }
}

/* ref= and list= must name variables of the subgraph. */
static void check_var_refs(struct asm_ctx *a, const struct asm_sg *s)
{
    for (uint32_t i = 0; i < s->sg->n_vars; i++) {
        const struct neff_var *v = &s->sg->vars[i];
        bool ok = !v->has_referenced_var || neff_sg_find_var_id(s->sg, v->referenced_var_id);
        for (uint32_t k = 0; ok && k < v->n_list; k++)
            ok = neff_sg_find_var_id(s->sg, v->list[k]) != NULL;
        if (!ok)
            err_pos(a, s->var_pos[i], "variable '%s': ref= or list= names a var_id that no "
                    "variable of %s has", v->name, s->sg->name);
    }
}

/* Member names of a subgraph must not collide. */
static void check_members(struct asm_ctx *a, const struct asm_sg *s)
{
    const char *names[2 * NEFF_ENG_COUNT + 1];
    struct asm_pos pos[2 * NEFF_ENG_COUNT + 1];
    size_t n = 0;
    pos[n] = (struct asm_pos){0, 0};
    names[n++] = "def.json";
    for (int e = 0; e < NEFF_ENG_COUNT; e++) {
        const struct neff_engine_sec *x = &s->sg->eng[e];
        if (x->present && x->json_file) {
            pos[n] = s->eng[e].pos;
            names[n++] = x->json_file;
        }
        if (x->present && x->bin_file) {
            pos[n] = s->eng[e].pos;
            names[n++] = x->bin_file;
        }
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                err_pos(a, pos[i], "%s: member '%s' is used twice", s->sg->name, names[i]);
    for (uint32_t i = 0; i < s->sg->n_vars; i++) {
        const struct neff_var *v = &s->sg->vars[i];
        for (size_t j = 0; v->file_name && j < n; j++)
            if (strcmp(v->file_name, names[j]) == 0)
                err_pos(a, s->var_pos[i], "constant '%s': member '%s' is taken by %s", v->name,
                        v->file_name, j == 0 ? "def.json" : "an engine section");
        for (uint32_t k = 0; v->file && k < i; k++) {
            const struct neff_var *w = &s->sg->vars[k];
            if (w->file && strcmp(w->file_name, v->file_name) == 0 &&
                (neff_buf_size(w->file) != neff_buf_size(v->file) ||
                 memcmp(neff_buf_data(w->file), neff_buf_data(v->file), neff_buf_size(v->file))))
                err_pos(a, s->var_pos[i], "constant '%s': member '%s' already holds other bytes",
                        v->name, v->file_name);
        }
    }
}

static bool replace_str(char **slot, const char *s)
{
    if (s == NULL)
        return true;
    char *c = strdup(s);
    if (c == NULL)
        return false;
    free(*slot);
    *slot = c;
    return true;
}

static bool set_funcs(struct neff_engine_sec *x, const struct asm_engine_opt *eo)
{
    for (uint32_t i = 0; i < x->n_act_func_sets; i++)
        free(x->act_func_sets[i]);
    free(x->act_func_sets);
    x->act_func_sets = NULL;
    x->n_act_func_sets = 0;
    if (eo->nfuncs == 0)
        return true;
    x->act_func_sets = calloc(eo->nfuncs, sizeof *x->act_func_sets);
    if (x->act_func_sets == NULL)
        return false;
    x->n_act_func_sets = eo->nfuncs;
    for (uint32_t i = 0; i < eo->nfuncs; i++)
        if ((x->act_func_sets[i] = strdup(eo->funcs[i])) == NULL)
            return false;
    return true;
}

/* The engine JSON member name the builder gives engine e by default. */
static char *default_json_name(int e)
{
    struct neff_model *m = neff_model_new(NULL);
    struct neff_subgraph *sg = m ? neff_model_add_subgraph(m) : NULL;
    struct neff_dma_desc d = {0};
    char *name = NULL;
    if (sg != NULL && neff_sg_add_desc(sg, (enum neff_engine)e, &d) == EMU_OK)
        name = strdup(sg->eng[e].json_file);
    neff_model_free(m);
    return name;
}

/* Encode one engine's stream into the draft and apply its .engine options. */
static emu_status build_engine(struct asm_ctx *a, struct asm_sg *s, int e)
{
    const struct asm_stream *st = &s->code[e];
    const struct asm_engine_opt *eo = &s->eng[e];
    struct neff_engine_sec *x = &s->sg->eng[e];
    if (eo->nocode && st->n > 0) {
        err_pos(a, eo->pos, "%s has instructions but .engine says nocode",
                isa_engine_name((unsigned)e));
        return EMU_INVALID;
    }
    if (eo->nocode && eo->bin) {
        err_pos(a, eo->pos, "bin= names the stream of an engine without one");
        return EMU_INVALID;
    }
    if (eo->given)
        x->present = true;
    if ((eo->given || st->n > 0) && !replace_str(&x->json_file, eo->json))
        return EMU_RESOURCE;
    if (eo->given && !set_funcs(x, eo))
        return EMU_RESOURCE;
    if (eo->nfuncs > 0 && x->json_file == NULL && (x->json_file = default_json_name(e)) == NULL)
        return EMU_RESOURCE;  /* the function sets live in the engine JSON */
    if (st->n == 0 && (!eo->given || eo->nocode))
        return EMU_OK;
    if (!replace_str(&x->bin_file, eo->bin))
        return EMU_RESOURCE;
    uint8_t *bytes = NULL;
    size_t size = 0;
    emu_status r = isa_encode_stream(st->insns, st->n, (enum isa_engine)e, &bytes, &size);
    if (r == EMU_OK)
        r = neff_sg_set_code(s->sg, (enum neff_engine)e, bytes, size);
    free(bytes);
    if (r != EMU_OK)
        err_pos(a, (struct asm_pos){0, 0}, "%s: the %s stream cannot be encoded",
                s->sg->name, isa_engine_name((unsigned)e));
    return r;
}

void asm_default_info(uint32_t n_sgs, struct neff_model_info *out)
{
    struct neff_model *m = neff_model_new(NULL);
    memset(out, 0, sizeof *out);
    if (m != NULL)
        *out = m->info;  /* version, pkg_version, build version, feature bit */
    neff_model_free(m);
    out->num_tpb = out->requested_tpb_count = out->lnc_size = n_sgs;
    memset(out->tpb_per_node, 0, sizeof out->tpb_per_node);
    out->tpb_per_node[0] = (uint8_t)(n_sgs > 255 ? 255 : n_sgs);
    out->feature_bits = NEFF_FEATURE_TRNEMU_ISA;
}

/* Apply .header fields; the trnemu marker follows the feature bit. */
static void apply_header(struct asm_ctx *a)
{
    struct neff_model_info *i = &a->m->info;
    const struct neff_model_info *h = &a->hdr.info;
    uint32_t set = a->hdr.set;
    uint32_t n = a->m->n_sgs;
    struct neff_model_info def;
    asm_default_info(n, &def);
    i->neff_version_major = def.neff_version_major;
    i->neff_version_minor = def.neff_version_minor;
    i->pkg_version = def.pkg_version;
    memcpy(i->build_version, def.build_version, sizeof i->build_version);
    memcpy(i->uuid, def.uuid, sizeof i->uuid);
    i->num_tpb = def.num_tpb;
    i->requested_tpb_count = def.requested_tpb_count;
    i->lnc_size = def.lnc_size;
    memcpy(i->tpb_per_node, def.tpb_per_node, sizeof i->tpb_per_node);
    i->feature_bits = def.feature_bits;
    if (set & (1u << HDR_VERSION)) {
        i->neff_version_major = h->neff_version_major;
        i->neff_version_minor = h->neff_version_minor;
    }
    if (set & (1u << HDR_PKG))
        i->pkg_version = h->pkg_version;
    if (set & (1u << HDR_BUILD))
        memcpy(i->build_version, h->build_version, sizeof i->build_version);
    if (set & (1u << HDR_UUID))
        memcpy(i->uuid, h->uuid, sizeof i->uuid);
    if (set & (1u << HDR_NUM_TPB))
        i->num_tpb = h->num_tpb;
    if (set & (1u << HDR_REQ_TPB))
        i->requested_tpb_count = h->requested_tpb_count;
    if (set & (1u << HDR_TPB_PER_NODE))
        memcpy(i->tpb_per_node, h->tpb_per_node, sizeof i->tpb_per_node);
    if (set & (1u << HDR_FEATURES))
        i->feature_bits = h->feature_bits;
    if (set & (1u << HDR_LNC))
        i->lnc_size = h->lnc_size;
    for (uint32_t k = 0; k < n; k++)
        a->m->sgs[k]->isa_version = (i->feature_bits & NEFF_FEATURE_TRNEMU_ISA)
                                        ? NEFF_TRNEMU_ISA_VERSION : 0;
}

/* neff.json lists inputs, then outputs: keep the draft in that order. */
static bool order_io(struct neff_model *m)
{
    if (m->n_io < 2)
        return true;
    struct neff_io *c = malloc(m->n_io * sizeof *c);
    if (c == NULL)
        return false;
    uint32_t k = 0;
    for (int out = 0; out < 2; out++)
        for (uint32_t i = 0; i < m->n_io; i++)
            if (m->io[i].is_output == (out == 1))
                c[k++] = m->io[i];
    memcpy(m->io, c, m->n_io * sizeof *c);
    free(c);
    return true;
}

emu_status asm_finish(struct asm_ctx *a)
{
    if (a == NULL || a->taken)
        return EMU_INVALID;
    if (a->ll.open) {
        do_logical_line(a);
        feed_reset(a);
    }
    if (a->nerrors > 0 || a->gave_up || a->oom)
        return a->oom ? EMU_RESOURCE : EMU_INVALID;
    if (a->finished)
        return EMU_OK;
    report_dangling_labels(a);
    for (size_t k = 0; k < a->nsgs; k++) {
        resolve_fixups(a, &a->sgs[k]);
        check_targets(a, &a->sgs[k]);
        check_var_refs(a, &a->sgs[k]);
    }
    emu_status st = EMU_OK;
    for (size_t k = 0; st == EMU_OK && a->nerrors == 0 && k < a->nsgs; k++)
        for (int e = 0; st == EMU_OK && e < ISA_ENG_COUNT; e++)
            st = build_engine(a, &a->sgs[k], e);
    for (size_t k = 0; st == EMU_OK && a->nerrors == 0 && k < a->nsgs; k++)
        check_members(a, &a->sgs[k]);
    if (st == EMU_RESOURCE || (st == EMU_OK && !order_io(a->m))) {
        a->oom = true;
        err_pos(a, (struct asm_pos){0, 0}, "out of memory");
        return EMU_RESOURCE;
    }
    if (st != EMU_OK || a->nerrors > 0 || a->gave_up)
        return EMU_INVALID;
    apply_header(a);
    if (neff_model_validate(a->m) != EMU_OK) {
        err_pos(a, a->hdr_pos, "the NEFF does not pass validation (see the log line above)");
        return EMU_INVALID;
    }
    a->finished = true;
    return EMU_OK;
}

const struct neff_model *asm_model(const struct asm_ctx *a)
{
    return a && a->finished && !a->taken ? a->m : NULL;
}

struct neff_model *asm_take_model(struct asm_ctx *a)
{
    if (a == NULL || !a->finished || a->taken)
        return NULL;
    struct neff_model *m = a->m;
    a->m = NULL;
    a->taken = true;
    return m;
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
    if (a->m == NULL || !sg_start(a)) {
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

emu_status asm_read_file(const char *path, uint64_t max, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return EMU_INVALID;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    emu_status st = buf ? EMU_OK : EMU_RESOURCE;
    while (st == EMU_OK) {
        if (n + 1 >= cap) {
            uint8_t *p = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (p == NULL) {
                st = EMU_RESOURCE;
                break;
            }
            buf = p;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, fp);
        n += r;
        if (max && n > max)
            st = EMU_INVALID;
        if (r == 0)
            break;
    }
    if (st == EMU_OK && ferror(fp))
        st = EMU_INVALID;
    fclose(fp);
    if (st != EMU_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return EMU_OK;
}

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
        fprintf(diag, "%s: too many errors, stopped reporting\n", src_name(a));
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
        dir = slash ? dup_n(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
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
