/*
 * isa_text.c: print one instruction as trnemu assembly text and parse one
 * line of it back, both driven by the op table (emu/isa/isa_ops.h).
 *
 * Line grammar (docs/isa.md has the full story):
 *   line   := engine '.' mnemonic { item } [ comment ]
 *   item   := name '=' value | flag-name
 *   ap     := ('sbuf' | 'psum') '[' start ':' stop [':' step] ',' offset dims ']' ':' dtype
 *           | 'hbm:' (name | '$' id) '[' dim ',' offset dims ']' ':' dtype
 *   (an on-chip one may end in '+r' reg '<=' max: a register offset, or in
 *   '@' index '<=' max: tensor indirection)
 *   dims   := { ',' '[' step ',' count ']' }     (1 to 4 of them)
 *   wait   := ('s' | 'e') id ('==' | '!=' | '>=' | '>' | '<=' | '<') value
 *   signal := ('s' | 'e') id ('=' | '+=' | '-=') value
 * The parser is a small recursive-descent reader over the line that
 * remembers where each operand started, so semantic errors found by
 * isa_validate point at the operand's column.
 */
#include "emu/isa/isa_text.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/isa/isa_lex.h"

#define MAX_FIELDS 32  /* more than any op in the table has */

/* ---- output text -------------------------------------------------------- */
/* Text written into a caller's buffer of fixed size, counting what does not
 * fit (snprintf style). Not emu/core/tbuf.h's per-thread buffers. */
struct text_out {
    char *buf;   /* destination, may be NULL when cap is 0 */
    size_t cap;  /* bytes available in buf */
    size_t len;  /* characters the full text needs so far */
};

__attribute__((format(printf, 2, 3)))
static void out_printf(struct text_out *t, const char *fmt, ...)
{
    char *dst = t->len < t->cap ? t->buf + t->len : NULL;
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* ---- printing ------------------------------------------------------------ */
static bool var_char(char c, bool first)
{
    if (isalpha((unsigned char)c) || c == '_')
        return true;
    return !first && (isdigit((unsigned char)c) || c == '.' || c == '-' || c == '/');
}

/* A name the parser would read back whole. */
static bool var_name_ok(const char *name)
{
    if (name == NULL || !var_char(name[0], true))
        return false;
    for (const char *c = name + 1; *c; c++)
        if (!var_char(*c, false))
            return false;
    return true;
}

static void print_var(struct text_out *t, const struct isa_text_env *env, uint32_t id)
{
    const char *name = env && env->var_name ? env->var_name(env->user, id) : NULL;
    if (var_name_ok(name))
        out_printf(t, "%s", name);
    else
        out_printf(t, "$%u", id);
}

static void print_dims(struct text_out *t, unsigned ndims, const struct isa_dim *dim,
                       const char *sep)
{
    for (unsigned d = 0; d < ndims && d < ISA_MAX_DIMS; d++)
        out_printf(t, "%s[%d,%u]", d ? sep : "", (int)dim[d].step, dim[d].count);
}

static void print_ap(struct text_out *t, const struct isa_text_env *env, const struct isa_ap *ap)
{
    const char *mem = isa_mem_name(ap->mem);
    if (ap->mem == ISA_MEM_HBM) {
        out_printf(t, "hbm:");
        print_var(t, env, ap->var_id);
        out_printf(t, "[[%d,%u], ", (int)ap->part_step, ap->num_part);
    } else {
        long long stop = ap->start_part + (long long)ap->num_part * ap->part_step;
        out_printf(t, "%s[%u:%lld", mem ? mem : "?mem", ap->start_part, stop);
        if (ap->part_step != 1)
            out_printf(t, ":%d", (int)ap->part_step);
        out_printf(t, ", ");
    }
    out_printf(t, "%llu, ", (unsigned long long)ap->offset);
    print_dims(t, ap->ndims, ap->dim, ", ");
    const char *dt = isa_dtype_name(ap->dtype);
    out_printf(t, "]:%s", dt ? dt : "?dtype");
    if (ap->dyn == ISA_DYN_FREE)
        out_printf(t, "+r%u<=%u", ap->dyn_reg, ap->dyn_max);
    if (ap->dyn == ISA_DYN_INDEX) {
        const char *it = isa_dtype_name(ap->ix.dtype);
        out_printf(t, "@%s[%u:%u, %u, [1,%u]]:%s<=%u", isa_mem_name(ap->ix.mem) ?
                   isa_mem_name(ap->ix.mem) : "?mem", ap->ix.start_part,
                   ap->ix.start_part + (unsigned)ap->ix.num_part, ap->ix.offset, ap->ix.cols,
                   it ? it : "?dtype", ap->dyn_max);
    }
}

static void print_f32(struct text_out *t, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    if (isnan(v))
        out_printf(t, bits == 0x7fc00000u ? "nan" : "bits:0x%08x", bits);
    else if (isinf(v))
        out_printf(t, v < 0 ? "-inf" : "inf");
    else
        out_printf(t, "%.9g", (double)v);
}

static void print_f64(struct text_out *t, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    if (isnan(v) && bits != 0x7ff8000000000000ull)
        out_printf(t, "bits:0x%016llx", (unsigned long long)bits);
    else if (isnan(v))
        out_printf(t, "nan");
    else if (isinf(v))
        out_printf(t, v < 0 ? "-inf" : "inf");
    else
        out_printf(t, "%.17g", v);
}

static bool f32_same(float a, double def)
{
    float d = (float)def;
    return memcmp(&a, &d, sizeof(a)) == 0;
}

static bool f64_same(double a, double def)
{
    return memcmp(&a, &def, sizeof(a)) == 0;
}

static void print_enum(struct text_out *t, unsigned etype, unsigned value)
{
    const char *name = isa_enum_name(etype, value);
    if (name)
        out_printf(t, "%s", name);
    else
        out_printf(t, "?%u", value);
}

static void print_mask(struct text_out *t, const uint8_t *mask)
{
    for (unsigned i = 0; i < ISA_MASK_BYTES; i++)
        out_printf(t, "%s%u", i ? "," : "[", mask[i]);
    out_printf(t, "]");
}

static void print_apf(struct text_out *t, const struct isa_text_env *env,
                      const struct isa_insn *insn, const struct isa_field *f)
{
    if (insn->ap[f->slot].mem != ISA_MEM_NONE) {
        out_printf(t, " %s=", f->name);
        print_ap(t, env, &insn->ap[f->slot]);
    } else if ((f->attr & ISA_FA_REQ) || !f32_same(insn->fimm[f->fslot], f->fdef)) {
        out_printf(t, " %s=", f->name);
        print_f32(t, insn->fimm[f->fslot]);
    }
}

/* One field, or nothing when it is absent or holds its default. */
static void print_field(struct text_out *t, const struct isa_text_env *env,
                        const struct isa_insn *insn, const struct isa_field *f)
{
    bool req = (f->attr & ISA_FA_REQ) != 0;
    switch (f->kind) {
    case ISA_FK_AP:
        if (insn->ap[f->slot].mem == ISA_MEM_NONE)
            return;
        out_printf(t, " %s=", f->name);
        print_ap(t, env, &insn->ap[f->slot]);
        return;
    case ISA_FK_APF:
        print_apf(t, env, insn, f);
        return;
    case ISA_FK_F32:
        if (req || !f32_same(insn->fimm[f->slot], f->fdef)) {
            out_printf(t, " %s=", f->name);
            print_f32(t, insn->fimm[f->slot]);
        }
        return;
    case ISA_FK_F64:
        if (req || !f64_same(insn->imm[f->slot].f, f->fdef)) {
            out_printf(t, " %s=", f->name);
            print_f64(t, insn->imm[f->slot].f);
        }
        return;
    case ISA_FK_INT:
        if (req || insn->imm[f->slot].i != f->idef)
            out_printf(t, " %s=%lld", f->name, (long long)insn->imm[f->slot].i);
        return;
    case ISA_FK_ENUM:
        if (req || insn->enums[f->slot] != f->idef) {
            out_printf(t, " %s=", f->name);
            print_enum(t, f->etype, insn->enums[f->slot]);
        }
        return;
    case ISA_FK_FLAG:
        if (insn->flags & (1u << f->slot))
            out_printf(t, " %s", f->name);
        return;
    case ISA_FK_PATTERN:
        out_printf(t, " %s=[", f->name);
        print_dims(t, insn->pattern.ndims, insn->pattern.dim, ",");
        out_printf(t, "]");
        return;
    case ISA_FK_MASK:
        out_printf(t, " %s=", f->name);
        print_mask(t, insn->mask);
        return;
    default:
        return;
    }
}

static const char *const cmp_text[] = {
    [ISA_CMP_eq] = "==", [ISA_CMP_ne] = "!=", [ISA_CMP_ge] = ">=",
    [ISA_CMP_gt] = ">", [ISA_CMP_le] = "<=", [ISA_CMP_lt] = "<",
};
static const char *const semop_text[] = {
    [ISA_SEMOP_set] = "=", [ISA_SEMOP_add] = "+=", [ISA_SEMOP_sub] = "-=",
};
#define NCMP (sizeof(cmp_text) / sizeof(cmp_text[0]))
#define NSEMOP (sizeof(semop_text) / sizeof(semop_text[0]))

static void print_sync(struct text_out *t, const struct isa_sync *s, bool is_wait)
{
    const char *op = NULL;
    if (is_wait && s->op < NCMP)
        op = cmp_text[s->op];
    if (!is_wait && s->op < NSEMOP)
        op = semop_text[s->op];
    out_printf(t, " %s=%c%u%s%u", is_wait ? "wait" : "signal",
              s->kind == ISA_SYNC_EVENT ? 'e' : 's', s->id, op ? op : "?", s->value);
}

size_t isa_text_print(const struct isa_insn *insn, const struct isa_text_env *env,
                      char *buf, size_t cap)
{
    struct text_out t = {buf, cap, 0};
    if (cap > 0)
        buf[0] = '\0';
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    const char *eng = isa_engine_name(insn->engine);
    if (op == NULL) {
        out_printf(&t, "%s.?op%u", eng ? eng : "?", insn->opcode);
        return t.len;
    }
    out_printf(&t, "%s.%s", eng ? eng : "?", op->name);
    for (int i = 0; i < op->nfields; i++)
        print_field(&t, env, insn, &op->fields[i]);
    for (unsigned i = 0; i < ISA_MAX_WAIT && insn->wait[i].kind != ISA_SYNC_NONE; i++)
        print_sync(&t, &insn->wait[i], true);
    for (unsigned i = 0; i < ISA_MAX_SIGNAL && insn->signal[i].kind != ISA_SYNC_NONE; i++)
        print_sync(&t, &insn->signal[i], false);
    return t.len;
}

/* ---- parsing: reader state -------------------------------------------------- */
struct parser {
    const char *s;                    /* the line */
    size_t pos;                       /* index of the next character */
    const struct isa_text_env *env;   /* variable names, may be NULL */
    struct isa_text_error *err;       /* where errors go, may be NULL */
    const struct isa_op_desc *op;     /* the op being read */
    struct isa_insn *insn;            /* the instruction being filled */
    size_t op_pos;                    /* where the mnemonic starts */
    size_t field_pos[MAX_FIELDS];     /* where each field's value starts, +1; 0 = absent */
    size_t wait_pos[ISA_MAX_WAIT];    /* where each wait starts */
    size_t signal_pos[ISA_MAX_SIGNAL]; /* where each signal starts */
    unsigned nwait;                   /* waits read so far */
    unsigned nsignal;                 /* signals read so far */
};

__attribute__((format(printf, 3, 4)))
static emu_status perr(struct parser *p, size_t pos, const char *fmt, ...)
{
    if (p->err != NULL) {
        va_list ap;
        p->err->column = (unsigned)pos + 1;
        va_start(ap, fmt);
        vsnprintf(p->err->message, sizeof(p->err->message), fmt, ap);
        va_end(ap);
    }
    return EMU_INVALID;
}

static bool at_end_char(char c)
{
    return c == '\0' || c == '\n' || c == '\r' || c == ';' || c == '#';
}

static char peek(const struct parser *p)
{
    return p->s[p->pos];
}

static void skip_ws(struct parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
}

/* Punctuation inside brackets: blanks allowed on both sides. */
static emu_status expect(struct parser *p, char c)
{
    skip_ws(p);
    if (peek(p) != c)
        return perr(p, p->pos, "expected '%c'", c);
    p->pos++;
    skip_ws(p);
    return EMU_OK;
}

/* A closing bracket: blanks allowed before it only, since a blank after
 * the last one ends the value. */
static emu_status expect_close(struct parser *p, char c)
{
    skip_ws(p);
    if (peek(p) != c)
        return perr(p, p->pos, "expected '%c'", c);
    p->pos++;
    return EMU_OK;
}

static bool ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* An identifier at the cursor: its length (0 when there is none). */
static size_t read_ident(struct parser *p, const char **start)
{
    *start = p->s + p->pos;
    size_t n = 0;
    while (ident_char(p->s[p->pos + n]))
        n++;
    p->pos += n;
    return n;
}

/* An integer token: an optional '-' and a run of letters and digits. */
static size_t read_inttok(struct parser *p, const char **start)
{
    const char *s = p->s + p->pos;
    size_t n = s[0] == '-' ? 1 : 0;
    while (ident_char(s[n]))
        n++;
    *start = s;
    p->pos += n;
    return n;
}

/* A float token: letters, digits, '.', '+' and '-' ("-1.5e+3", "inf"). */
static size_t read_floattok(struct parser *p, const char **start)
{
    const char *s = p->s + p->pos;
    size_t n = 0;
    while (ident_char(s[n]) || s[n] == '.' || s[n] == '+' || s[n] == '-')
        n++;
    *start = s;
    p->pos += n;
    return n;
}

/* ---- parsing: numbers ------------------------------------------------------- */
/* An integer: [-]decimal or [-]0xhex, within [lo, hi]. */
static emu_status parse_int(struct parser *p, int64_t lo, int64_t hi, int64_t *out)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_inttok(p, &s);
    bool neg = n > 0 && s[0] == '-';
    size_t skip = neg ? 1 : 0;
    uint64_t mag;
    if (n == 0)
        return perr(p, at, "expected a number");
    if (!isa_lex_u64(s + skip, n - skip, &mag))
        return perr(p, at, "bad number '%.*s'", (int)n, s);
    bool fits = neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX;
    int64_t v = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    if (!fits || v < lo || v > hi)
        return perr(p, at, "%.*s is out of %lld..%lld", (int)n, s, (long long)lo, (long long)hi);
    *out = v;
    return EMU_OK;
}

/* An unsigned 64-bit integer: decimal or 0xhex. */
static emu_status parse_u64(struct parser *p, uint64_t *out)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_inttok(p, &s);
    if (n == 0)
        return perr(p, at, "expected a number");
    if (!isa_lex_u64(s, n, out))
        return perr(p, at, "bad number '%.*s' (0..2^64-1)", (int)n, s);
    return EMU_OK;
}

/* After "bits:", 0x and up to nbits/4 hex digits: raw IEEE bits. */
static emu_status parse_bits(struct parser *p, unsigned nbits, uint64_t *bits)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_inttok(p, &s);
    if (n < 3 || s[0] != '0' || s[1] != 'x' || n - 2 > nbits / 4 ||
        !isa_lex_digits(s + 2, n - 2, 16, bits))
        return perr(p, at, "expected 0x and at most %u hex digits after 'bits:'", nbits / 4);
    return EMU_OK;
}

static bool at_bits(struct parser *p)
{
    if (strncmp(p->s + p->pos, "bits:", 5) != 0)
        return false;
    p->pos += 5;
    return true;
}

/* Copy a float token to a NUL-terminated buffer for strtof/strtod. */
static emu_status tok_copy(struct parser *p, size_t at, char *dst, size_t cap,
                           const char *s, size_t n)
{
    if (n == 0)
        return perr(p, at, "expected a number");
    if (n >= cap)
        return perr(p, at, "number too long");
    memcpy(dst, s, n);
    dst[n] = '\0';
    return EMU_OK;
}

/* A decimal float literal: its text into tmp (NUL-terminated), where it
 * starts (*at), and whether it is "nan" (*nan, tmp then unused). */
static emu_status float_literal(struct parser *p, char tmp[64], size_t *at, bool *nan)
{
    *at = p->pos;
    const char *s;
    size_t n = read_floattok(p, &s);
    *nan = n == 3 && strncmp(s, "nan", 3) == 0;
    if (*nan)
        return EMU_OK;
    return tok_copy(p, *at, tmp, 64, s, n) == EMU_OK ? EMU_OK : EMU_INVALID;
}

/* A float of nbits (32 or 64) as its bits: "bits:0x...", "nan" (the quiet
 * NaN) or a literal (rounded by strtof or strtod). *set says whether *bits
 * holds a value, also when the status is an error. */
static emu_status parse_float(struct parser *p, unsigned nbits, uint64_t *bits, bool *set)
{
    *bits = 0;
    *set = true;
    if (at_bits(p))
        return parse_bits(p, nbits, bits);
    char tmp[64];
    size_t at;
    bool nan;
    if (float_literal(p, tmp, &at, &nan) != EMU_OK) {
        *set = false;
        return EMU_INVALID;
    }
    if (nan) {
        *bits = nbits == 32 ? 0x7fc00000u : 0x7ff8000000000000ull;
        return EMU_OK;
    }
    bool whole = isa_lex_float_bits(tmp, strlen(tmp), nbits, bits);
    return whole ? EMU_OK : perr(p, at, "bad number '%s'", tmp);
}

static emu_status parse_f32(struct parser *p, float *out)
{
    uint64_t bits;
    bool set;
    emu_status st = parse_float(p, 32, &bits, &set);
    uint32_t b32 = (uint32_t)bits;
    if (set)
        memcpy(out, &b32, sizeof(*out));
    return st;
}

static emu_status parse_f64(struct parser *p, double *out)
{
    uint64_t bits;
    bool set;
    emu_status st = parse_float(p, 64, &bits, &set);
    if (set)
        memcpy(out, &bits, sizeof(*out));
    return st;
}

/* ---- parsing: access patterns ---------------------------------------------- */
/* '[' step ',' count ']' */
static emu_status parse_dim(struct parser *p, struct isa_dim *dim)
{
    int64_t step, count;
    emu_status st = expect(p, '[');
    if (st == EMU_OK)
        st = parse_int(p, INT32_MIN, INT32_MAX, &step);
    if (st == EMU_OK)
        st = expect(p, ',');
    if (st == EMU_OK)
        st = parse_int(p, 1, UINT32_MAX, &count);
    if (st == EMU_OK)
        st = expect_close(p, ']');
    if (st == EMU_OK) {
        dim->step = (int32_t)step;
        dim->count = (uint32_t)count;
    }
    return st;
}

/* { ',' dim } into ap->dim, 1 to 4 of them. */
static emu_status parse_free_dims(struct parser *p, struct isa_ap *ap)
{
    for (skip_ws(p); peek(p) == ','; skip_ws(p)) {
        if (ap->ndims == ISA_MAX_DIMS)
            return perr(p, p->pos, "more than %d free dimensions", ISA_MAX_DIMS);
        p->pos++;
        skip_ws(p);
        emu_status st = parse_dim(p, &ap->dim[ap->ndims]);
        if (st != EMU_OK)
            return st;
        ap->ndims++;
    }
    if (ap->ndims == 0)
        return perr(p, p->pos, "expected ', [step,count]': at least one free dimension");
    return EMU_OK;
}

/* On chip: start ':' stop [':' step]. */
static emu_status parse_slice(struct parser *p, struct isa_ap *ap)
{
    size_t at = p->pos;
    int64_t start, stop, step = 1;
    if (peek(p) == '[')
        return perr(p, at, "on-chip partitions are written start:stop[:step]");
    emu_status st = parse_int(p, 0, ISA_NUM_PARTITIONS - 1, &start);
    if (st == EMU_OK)
        st = expect(p, ':');
    if (st == EMU_OK)
        st = parse_int(p, 1, INT32_MAX, &stop);
    if (st == EMU_OK && peek(p) == ':') {
        p->pos++;
        st = parse_int(p, 1, INT32_MAX, &step);
    }
    if (st != EMU_OK)
        return st;
    if (stop <= start || (stop - start) % step != 0)
        return perr(p, at, "partitions %lld:%lld:%lld are not a whole number of steps",
                    (long long)start, (long long)stop, (long long)step);
    if ((stop - start) / step > ISA_NUM_PARTITIONS)
        return perr(p, at, "more than 128 partitions");
    ap->start_part = (uint8_t)start;
    ap->num_part = (uint8_t)((stop - start) / step);
    ap->part_step = (int32_t)step;
    return EMU_OK;
}

/* HBM: '[' step ',' count ']' for the partition (outer) dimension. */
static emu_status parse_hbm_part(struct parser *p, struct isa_ap *ap)
{
    struct isa_dim d;
    if (peek(p) != '[')
        return perr(p, p->pos, "HBM partitions are written [step,count]");
    size_t at = p->pos;
    emu_status st = parse_dim(p, &d);
    if (st == EMU_OK && d.count > ISA_NUM_PARTITIONS)
        return perr(p, at, "more than 128 partitions");
    ap->part_step = d.step;
    ap->num_part = (uint8_t)d.count;
    return st;
}

static emu_status parse_var(struct parser *p, struct isa_ap *ap)
{
    size_t at = p->pos;
    if (peek(p) == '$') {
        int64_t id;
        p->pos++;
        emu_status st = parse_int(p, 0, UINT32_MAX, &id);
        ap->var_id = (uint32_t)id;
        return st;
    }
    size_t n = 0;
    while (var_char(p->s[p->pos + n], n == 0))
        n++;
    if (n == 0)
        return perr(p, at, "expected a variable name or $id after 'hbm:'");
    p->pos += n;
    if (p->env == NULL || p->env->var_lookup == NULL)
        return perr(p, at, "no variable table to resolve '%.*s' (write hbm:$id)", (int)n, p->s + at);
    if (p->env->var_lookup(p->env->user, p->s + at, n, &ap->var_id) != EMU_OK)
        return perr(p, at, "unknown variable '%.*s'", (int)n, p->s + at);
    return EMU_OK;
}

static emu_status parse_mem(struct parser *p, struct isa_ap *ap)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_ident(p, &s);
    if (n == 4 && strncmp(s, "sbuf", 4) == 0)
        ap->mem = ISA_MEM_SBUF;
    else if (n == 4 && strncmp(s, "psum", 4) == 0)
        ap->mem = ISA_MEM_PSUM;
    else if (n == 3 && strncmp(s, "hbm", 3) == 0)
        ap->mem = ISA_MEM_HBM;
    else
        return perr(p, at, "expected sbuf[...], psum[...] or hbm:name[...]");
    if (ap->mem != ISA_MEM_HBM)
        return EMU_OK;
    if (peek(p) != ':')
        return perr(p, p->pos, "expected ':' and a variable after 'hbm'");
    p->pos++;
    return parse_var(p, ap);
}

static emu_status parse_dtype(struct parser *p, struct isa_ap *ap)
{
    if (peek(p) != ':')
        return perr(p, p->pos, "expected ':dtype' after the access pattern");
    p->pos++;
    size_t at = p->pos;
    const char *s;
    size_t n = read_ident(p, &s);
    int dt = isa_dtype_from_name(s, n);
    if (n == 0)
        return perr(p, at, "expected a dtype");
    if (dt < 0)
        return perr(p, at, "unknown dtype '%.*s'", (int)n, s);
    ap->dtype = (uint8_t)dt;
    return EMU_OK;
}

/* '+r' reg '<=' max after the dtype: an on-chip offset that register reg
 * moves by 0..max bytes when the instruction runs. */
static emu_status parse_dyn(struct parser *p, struct isa_ap *ap)
{
    p->pos++;
    if (peek(p) != 'r')
        return perr(p, p->pos, "expected 'r' and a register after '+'");
    p->pos++;
    int64_t reg, max;
    emu_status st = parse_int(p, 0, ISA_NUM_REGS - 1, &reg);
    if (st != EMU_OK)
        return st;
    if (strncmp(p->s + p->pos, "<=", 2) != 0)
        return perr(p, p->pos, "expected '<=' and the largest shift after the register");
    p->pos += 2;
    st = parse_int(p, 0, UINT32_MAX, &max);
    if (st != EMU_OK)
        return st;
    ap->dyn = ISA_DYN_FREE;
    ap->dyn_reg = (uint8_t)reg;
    ap->dyn_max = (uint32_t)max;
    return EMU_OK;
}

static emu_status parse_pattern_body(struct parser *p, struct isa_ap *ap);

/* '@' index '<=' max after the dtype: tensor indirection, the column
 * offsets read from the on-chip run `index` (one partition slice of step
 * 1, a byte offset, one dim [1,cols], an integer dtype), each 0..max. */
static emu_status parse_index(struct parser *p, struct isa_ap *ap)
{
    p->pos++;
    size_t at = p->pos;
    struct isa_ap ix;
    emu_status st = parse_pattern_body(p, &ix);   /* no tail: an index is static */
    if (st != EMU_OK)
        return st;
    if (ix.mem == ISA_MEM_HBM || ix.part_step != 1 ||
        ix.ndims != 1 || ix.dim[0].step != 1 || ix.offset > UINT32_MAX)
        return perr(p, at, "an index is sbuf[START:STOP, OFFSET, [1,COLS]]:DTYPE");
    if (strncmp(p->s + p->pos, "<=", 2) != 0)
        return perr(p, p->pos, "expected '<=' and the largest offset after the index");
    p->pos += 2;
    int64_t max;
    st = parse_int(p, 0, UINT32_MAX, &max);
    if (st != EMU_OK)
        return st;
    ap->dyn = ISA_DYN_INDEX;
    ap->dyn_max = (uint32_t)max;
    ap->ix = (struct isa_ap_index){.mem = ix.mem, .dtype = ix.dtype, .start_part = ix.start_part,
                                   .num_part = ix.num_part, .cols = ix.dim[0].count,
                                   .offset = (uint32_t)ix.offset};
    return EMU_OK;
}

/* An access pattern up to its dtype (no run-time tail). */
static emu_status parse_pattern_body(struct parser *p, struct isa_ap *ap)
{
    memset(ap, 0, sizeof(*ap));
    emu_status st = parse_mem(p, ap);
    if (st == EMU_OK && peek(p) != '[')
        st = perr(p, p->pos, "expected '['");
    if (st != EMU_OK)
        return st;
    p->pos++;
    skip_ws(p);
    st = ap->mem == ISA_MEM_HBM ? parse_hbm_part(p, ap) : parse_slice(p, ap);
    if (st == EMU_OK)
        st = expect(p, ',');
    if (st == EMU_OK)
        st = parse_u64(p, &ap->offset);
    if (st == EMU_OK) {
        skip_ws(p);
        st = parse_free_dims(p, ap);
    }
    if (st == EMU_OK)
        st = expect_close(p, ']');
    if (st == EMU_OK)
        st = parse_dtype(p, ap);
    return st;
}

static emu_status parse_ap(struct parser *p, struct isa_ap *ap)
{
    emu_status st = parse_pattern_body(p, ap);
    if (st == EMU_OK && peek(p) == '+')
        st = parse_dyn(p, ap);
    else if (st == EMU_OK && peek(p) == '@')
        st = parse_index(p, ap);
    return st;
}

/* Does the value at the cursor start an access pattern? */
static bool looks_like_ap(const struct parser *p)
{
    const char *s = p->s + p->pos;
    return strncmp(s, "sbuf", 4) == 0 || strncmp(s, "psum", 4) == 0 || strncmp(s, "hbm", 3) == 0;
}

/* ---- parsing: other values ------------------------------------------------- */
static emu_status parse_pattern(struct parser *p, struct isa_pattern *pat)
{
    emu_status st = expect(p, '[');
    pat->ndims = 0;
    while (st == EMU_OK) {
        if (pat->ndims == ISA_MAX_DIMS)
            return perr(p, p->pos, "more than %d pattern dimensions", ISA_MAX_DIMS);
        st = parse_dim(p, &pat->dim[pat->ndims]);
        if (st != EMU_OK)
            return st;
        pat->ndims++;
        skip_ws(p);
        if (peek(p) != ',')
            break;
        st = expect(p, ',');
    }
    return st == EMU_OK ? expect_close(p, ']') : st;
}

static emu_status parse_mask(struct parser *p, uint8_t *mask)
{
    emu_status st = expect(p, '[');
    for (unsigned i = 0; st == EMU_OK && i < ISA_MASK_BYTES; i++) {
        int64_t v;
        skip_ws(p);
        if (peek(p) == ']')
            return perr(p, p->pos, "a shuffle mask has exactly %d entries", ISA_MASK_BYTES);
        if (i > 0)
            st = expect(p, ',');
        if (st == EMU_OK)
            st = parse_int(p, 0, 255, &v);
        if (st == EMU_OK)
            mask[i] = (uint8_t)v;
    }
    if (st == EMU_OK) {
        skip_ws(p);
        if (peek(p) != ']')
            return perr(p, p->pos, "a shuffle mask has exactly %d entries", ISA_MASK_BYTES);
    }
    return st == EMU_OK ? expect_close(p, ']') : st;
}

static emu_status parse_enum(struct parser *p, const struct isa_field *f, uint8_t *out)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_ident(p, &s);
    int v = isa_enum_from_name(f->etype, s, n);
    if (n == 0)
        return perr(p, at, "expected %s", isa_enum_type_what(f->etype));
    if (v < 0)
        return perr(p, at, "'%.*s' is not a known %s", (int)n, s, isa_enum_type_what(f->etype));
    *out = (uint8_t)v;
    return EMU_OK;
}

static emu_status parse_flag_value(struct parser *p, const struct isa_field *f)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_ident(p, &s);
    bool on = (n == 1 && s[0] == '1') || (n == 4 && strncmp(s, "true", 4) == 0);
    bool off = (n == 1 && s[0] == '0') || (n == 5 && strncmp(s, "false", 5) == 0);
    if (!on && !off)
        return perr(p, at, "'%s' takes 0, 1, true or false", f->name);
    if (on)
        p->insn->flags |= (uint8_t)(1u << f->slot);
    else
        p->insn->flags &= (uint8_t)~(1u << f->slot);
    return EMU_OK;
}

static emu_status parse_apf(struct parser *p, const struct isa_field *f)
{
    if (looks_like_ap(p)) {
        p->insn->fimm[f->fslot] = 0.0f;
        return parse_ap(p, &p->insn->ap[f->slot]);
    }
    return parse_f32(p, &p->insn->fimm[f->fslot]);
}

/* The value of field f, at the cursor. */
static emu_status parse_value(struct parser *p, const struct isa_field *f)
{
    struct isa_insn *in = p->insn;
    switch (f->kind) {
    case ISA_FK_AP: return parse_ap(p, &in->ap[f->slot]);
    case ISA_FK_APF: return parse_apf(p, f);
    case ISA_FK_F32: return parse_f32(p, &in->fimm[f->slot]);
    case ISA_FK_F64: return parse_f64(p, &in->imm[f->slot].f);
    case ISA_FK_INT: return parse_int(p, f->min, f->max, &in->imm[f->slot].i);
    case ISA_FK_ENUM: return parse_enum(p, f, &in->enums[f->slot]);
    case ISA_FK_FLAG: return parse_flag_value(p, f);
    case ISA_FK_PATTERN: return parse_pattern(p, &in->pattern);
    case ISA_FK_MASK: return parse_mask(p, in->mask);
    default: return perr(p, p->pos, "operand '%s' has no syntax", f->name);
    }
}

/* ---- parsing: waits and signals ------------------------------------------ */
/* The longest of names[] that starts at the cursor; -1 when none. */
static int match_op(struct parser *p, const char *const *names, size_t count)
{
    int best = -1;
    size_t best_len = 0;
    for (size_t i = 0; i < count; i++) {
        size_t n = names[i] ? strlen(names[i]) : 0;
        if (n > best_len && strncmp(p->s + p->pos, names[i], n) == 0) {
            best = (int)i;
            best_len = n;
        }
    }
    p->pos += best_len;
    return best;
}

static emu_status parse_sync(struct parser *p, struct isa_sync *s, bool is_wait)
{
    size_t at = p->pos;
    char k = peek(p);
    int64_t id, value;
    if (k != 's' && k != 'e')
        return perr(p, at, "expected s<semaphore> or e<event>");
    p->pos++;
    s->kind = k == 's' ? ISA_SYNC_SEM : ISA_SYNC_EVENT;
    emu_status st = parse_int(p, 0, k == 's' ? ISA_NUM_SEMS - 1 : ISA_NUM_EVENTS - 1, &id);
    if (st != EMU_OK)
        return st;
    size_t op_at = p->pos;
    int op = is_wait ? match_op(p, cmp_text, NCMP) : match_op(p, semop_text, NSEMOP);
    if (op < 0)
        return perr(p, op_at, is_wait ? "expected ==, !=, >=, >, <= or <"
                                      : "expected =, += or -=");
    st = parse_int(p, 0, UINT32_MAX, &value);
    s->id = (uint16_t)id;
    s->op = (uint8_t)op;
    s->value = (uint32_t)value;
    return st;
}

static emu_status parse_sync_item(struct parser *p, bool is_wait)
{
    unsigned *n = is_wait ? &p->nwait : &p->nsignal;
    unsigned max = is_wait ? ISA_MAX_WAIT : ISA_MAX_SIGNAL;
    if (*n == max)
        return perr(p, p->pos, "more than %u %ss", max, is_wait ? "wait" : "signal");
    (is_wait ? p->wait_pos : p->signal_pos)[*n] = p->pos;
    struct isa_sync *s = is_wait ? &p->insn->wait[*n] : &p->insn->signal[*n];
    (*n)++;
    return parse_sync(p, s, is_wait);
}

/* ---- parsing: items and the line ------------------------------------------ */
static emu_status parse_item(struct parser *p)
{
    size_t at = p->pos;
    const char *s;
    size_t n = read_ident(p, &s);
    if (n == 0)
        return perr(p, at, "expected an operand name");
    bool has_value = peek(p) == '=';
    if (has_value && ((n == 4 && !strncmp(s, "wait", 4)) || (n == 6 && !strncmp(s, "signal", 6)))) {
        p->pos++;
        return parse_sync_item(p, n == 4);
    }
    int fi = isa_op_field(p->op, s, n);
    if (fi < 0)
        return perr(p, at, "%s has no operand '%.*s'", p->op->name, (int)n, s);
    const struct isa_field *f = &p->op->fields[fi];
    if (p->field_pos[fi] != 0)
        return perr(p, at, "operand '%s' given twice", f->name);
    p->field_pos[fi] = at + 1;
    if (!has_value && f->kind == ISA_FK_FLAG) {
        p->insn->flags |= (uint8_t)(1u << f->slot);
        return EMU_OK;
    }
    if (!has_value)
        return perr(p, p->pos, "expected '=' and a value after '%s'", f->name);
    p->pos++;
    return parse_value(p, f);
}

/* engine '.' mnemonic, then the defaults of that op. */
static emu_status parse_head(struct parser *p)
{
    const char *s;
    size_t at = p->pos;
    size_t n = read_ident(p, &s);
    if (n == 0 || peek(p) != '.')
        return perr(p, at, "expected engine.mnemonic (engine: pe, act, pool, dve, sp)");
    int eng = isa_engine_from_name(s, n);
    if (eng < 0)
        return perr(p, at, "unknown engine '%.*s'", (int)n, s);
    p->pos++;
    p->op_pos = p->pos;
    n = read_ident(p, &s);
    p->op = isa_op_by_name(s, n);
    if (n == 0)
        return perr(p, p->op_pos, "expected a mnemonic after '.'");
    if (p->op == NULL)
        return perr(p, p->op_pos, "unknown op '%.*s'", (int)n, s);
    if (!(p->op->engines & (1u << eng)))
        return perr(p, p->op_pos, "%s cannot run on the %s engine", p->op->name,
                    isa_engine_name((unsigned)eng));
    return isa_insn_init(p->insn, (unsigned)eng, p->op->opcode);
}

static emu_status check_required(struct parser *p)
{
    for (int i = 0; i < p->op->nfields; i++)
        if ((p->op->fields[i].attr & ISA_FA_REQ) && p->field_pos[i] == 0)
            return perr(p, p->pos, "missing operand '%s'", p->op->fields[i].name);
    return EMU_OK;
}

/* Run the encoding rules; point the error at the operand at fault. */
static emu_status check_rules(struct parser *p)
{
    struct isa_fault f;
    if (isa_validate(p->insn, &f) == EMU_OK)
        return EMU_OK;
    size_t at = p->op_pos;
    if (f.field >= 0 && f.field < MAX_FIELDS && p->field_pos[f.field] != 0)
        at = p->field_pos[f.field] - 1;
    else if (f.wait >= 0)
        at = p->wait_pos[f.wait];
    else if (f.signal >= 0)
        at = p->signal_pos[f.signal];
    return perr(p, at, "%s", f.msg);
}

static emu_status parse_items(struct parser *p)
{
    for (;;) {
        char c = peek(p);
        if (at_end_char(c))
            return EMU_OK;
        if (c != ' ' && c != '\t')
            return perr(p, p->pos, "unexpected '%c' (operands are separated by blanks)", c);
        skip_ws(p);
        if (at_end_char(peek(p)))
            return EMU_OK;
        emu_status st = parse_item(p);
        if (st != EMU_OK)
            return st;
    }
}

bool isa_text_is_blank(const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    return at_end_char(*line);
}

emu_status isa_text_parse_line(const char *line, const struct isa_text_env *env,
                               struct isa_insn *out, struct isa_text_error *err)
{
    struct parser p;
    memset(&p, 0, sizeof(p));
    p.s = line;
    p.env = env;
    p.err = err;
    p.insn = out;
    memset(out, 0, sizeof(*out));
    if (err != NULL) {
        err->column = 0;
        err->message[0] = '\0';
    }
    skip_ws(&p);
    if (at_end_char(peek(&p)))
        return perr(&p, p.pos, "empty line");
    emu_status st = parse_head(&p);
    if (st == EMU_OK)
        st = parse_items(&p);
    if (st == EMU_OK)
        st = check_required(&p);
    if (st == EMU_OK)
        st = check_rules(&p);
    return st;
}
