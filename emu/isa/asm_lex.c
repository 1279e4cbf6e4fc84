/*
 * asm_lex.c: the assembler's reading of characters (see asm_int.h).
 *
 * Small character and memory helpers, error recording with file, line and
 * column (number literals are emu/isa/isa_lex.c, shared with the
 * instruction text), the logical line being joined from physical
 * lines, comments, and the splitting of a directive line into words
 * (key=value, "strings", [lists], "= rest") with the calls directives use
 * to take those words one by one.
 */
#include "emu/isa/asm_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers ------------------------------------------------------- */

char *asm_dup_n(const char *s, size_t n)
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

bool asm_is_ident_char(char c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

size_t asm_ident_len(const char *s)
{
    size_t n = 0;
    if (!is_ident_start(s[0]))
        return 0;
    while (asm_is_ident_char(s[n]))
        n++;
    return n;
}

bool asm_is_blank(char c)
{
    return c == ' ' || c == '\t';
}

bool asm_is_comment(char c)
{
    return c == ';' || c == '#';
}

bool asm_is_end(char c)
{
    return c == '\0' || asm_is_comment(c);
}

bool asm_same(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

struct asm_sg *asm_cur_sg(struct asm_ctx *a)
{
    return &a->sgs[a->nsgs - 1];
}

/* ---- errors -------------------------------------------------------------- */

const char *asm_src_name(const struct asm_ctx *a)
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
    int r = p.line ? asprintf(&line, "%s:%u:%u: %s", asm_src_name(a), p.line, p.col, msg)
                   : asprintf(&line, "%s: %s", asm_src_name(a), msg);
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
void asm_err_pos(struct asm_ctx *a, struct asm_pos p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_v(a, p, fmt, ap);
    va_end(ap);
}

/* Position of offset off of the current logical line. */
struct asm_pos asm_line_pos(const struct asm_ctx *a, size_t off)
{
    const struct asm_lline *l = &a->ll;
    if (off < l->n)
        return l->pos[off];
    if (l->n > 0)
        return (struct asm_pos){l->pos[l->n - 1].line, l->pos[l->n - 1].col + 1};
    return (struct asm_pos){a->lineno, 1};
}

__attribute__((format(printf, 3, 4)))
bool asm_err_at(struct asm_ctx *a, size_t off, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_v(a, asm_line_pos(a, off), fmt, ap);
    va_end(ap);
    return false;
}

bool asm_oom_at(struct asm_ctx *a, size_t off)
{
    a->oom = true;
    return asm_err_at(a, off, "out of memory");
}

size_t asm_error_count(const struct asm_ctx *a)
{
    return a ? a->nerrors : 0;
}

const char *asm_error_text(const struct asm_ctx *a, size_t i)
{
    return a && i < a->nerrors ? a->errors[i] : NULL;
}

/* ---- logical lines ------------------------------------------------------- */

bool asm_ll_push(struct asm_ctx *a, char c, struct asm_pos p)
{
    struct asm_lline *l = &a->ll;
    if (l->n + 1 >= l->cap) {
        size_t ncap = grow_cap(l->cap, l->n + 2, 256);
        if (!grow_to((void **)&l->s, ncap, 1) || !grow_to((void **)&l->pos, ncap, sizeof *l->pos))
            return false;
        l->cap = ncap;
    }
    l->s[l->n] = c;
    l->pos[l->n++] = p;
    l->s[l->n] = '\0';
    return true;
}

/* Offset where a comment starts in s[0..n) (quotes respected), or n. */
size_t asm_comment_start(const char *s, size_t n)
{
    bool q = false;
    for (size_t i = 0; i < n; i++) {
        if (q && s[i] == '\\' && i + 1 < n)
            i++;
        else if (s[i] == '"')
            q = !q;
        else if (!q && asm_is_comment(s[i]))
            return i;
    }
    return n;
}

/* ---- directive words ----------------------------------------------------- */

/* Decode the quoted string at s[*i] ('"' there); *i ends past the quote. */
static bool lex_string(struct asm_ctx *a, const char *s, size_t *i, char **out)
{
    size_t start = *i, j = *i + 1, n = 0;
    char *buf = malloc(strlen(s + start) + 1);
    if (buf == NULL)
        return asm_oom_at(a, start);
    for (;; j++) {
        char c = s[j];
        if (c == '\0') {
            free(buf);
            return asm_err_at(a, start, "unterminated string");
        }
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20) {
            free(buf);
            return asm_err_at(a, j, "control character in a string");
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
                 isa_lex_u64((char[]){'0', 'x', s[j + 1], s[j + 2]}, 4, &x) && x != 0) {
            buf[n++] = (char)x;
            j += 2;
        } else {
            free(buf);
            return asm_err_at(a, j - 1,
                              "unknown escape in a string (use \\\\, \\\", \\n, \\t, \\xHH)");
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
        if (depth == 0 && (asm_is_blank(c) || asm_is_comment(c)))
            break;
        if (c == '[')
            depth++;
        else if (c == ']' && --depth < 0)
            return asm_err_at(a, j, "unmatched ']'");
    }
    if (depth != 0)
        return asm_err_at(a, *i, "unclosed '['");
    *i = j;
    return true;
}

void asm_dir_clear(struct asm_dir *d)
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
        while (asm_is_blank(s[j]))
            j++;
        size_t e = j + asm_comment_start(s + j, strlen(s + j));
        while (e > j && asm_is_blank(s[e - 1]))
            e--;
        t->rest = true;
        t->vat = j;
        t->vn = e - j;
        *i = j + asm_comment_start(s + j, strlen(s + j));
        return true;
    }
    if (s[start] == '"') {
        t->vat = start;
        if (!lex_string(a, s, i, &t->str))
            return false;
        t->vn = *i - start;
    } else {
        size_t k = asm_ident_len(s + start);
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
    if (s[*i] != '\0' && !asm_is_blank(s[*i]) && !asm_is_comment(s[*i]))
        return asm_err_at(a, *i, "expected a blank after this word");
    return true;
}

/* Split a directive line (s[off] is '.') into words. */
bool asm_lex_dir(struct asm_ctx *a, const char *s, size_t off, struct asm_dir *d)
{
    size_t i = off + 1;
    d->s = s;
    d->name_at = off;
    d->n = 0;
    while (asm_is_ident_char(s[i]))
        i++;
    if (i == off + 1)
        return asm_err_at(a, off, "expected a directive name after '.'");
    for (;;) {
        if (s[i] != '\0' && !asm_is_blank(s[i]) && !asm_is_comment(s[i]))
            return asm_err_at(a, i, "expected a blank after the directive name");
        while (asm_is_blank(s[i]))
            i++;
        if (asm_is_end(s[i]))
            return true;
        if (d->n == ASM_MAX_TOKS)
            return asm_err_at(a, i, "too many words in one directive (at most %d)", ASM_MAX_TOKS);
        struct asm_tok *t = &d->tok[d->n];
        if (!lex_tok(a, s, &i, t)) {
            free(t->str);
            t->str = NULL;
            return false;
        }
        d->n++;
        for (size_t k = 0; t->kn && k + 1 < d->n; k++)
            if (d->tok[k].kn == t->kn && memcmp(s + d->tok[k].at, s + t->at, t->kn) == 0 &&
                !asm_same(s + t->at, t->kn, "from"))
                return asm_err_at(a, t->at, "option '%.*s' given twice", (int)t->kn, s + t->at);
    }
}

/* The value of a word. */
const char *asm_tok_val(const struct asm_dir *d, const struct asm_tok *t, size_t *n)
{
    if (t->str != NULL) {
        *n = strlen(t->str);
        return t->str;
    }
    *n = t->vn;
    return d->s + t->vat;
}

/* The next unused plain word (not key=value, not "= ..."), or NULL. */
struct asm_tok *asm_next_word(struct asm_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (!d->tok[i].used && d->tok[i].kn == 0 && !d->tok[i].rest) {
            d->tok[i].used = true;
            return &d->tok[i];
        }
    return NULL;
}

/* Take the next plain word if it equals word (unquoted). */
bool asm_take_flag(struct asm_dir *d, const char *word)
{
    for (size_t i = 0; i < d->n; i++) {
        struct asm_tok *t = &d->tok[i];
        if (!t->used && t->kn == 0 && !t->rest && t->str == NULL &&
            asm_same(d->s + t->vat, t->vn, word)) {
            t->used = true;
            return true;
        }
    }
    return false;
}

/* The unused key=value word with this key, or NULL. */
struct asm_tok *asm_take_opt(struct asm_dir *d, const char *key)
{
    for (size_t i = 0; i < d->n; i++) {
        struct asm_tok *t = &d->tok[i];
        if (!t->used && t->kn && asm_same(d->s + t->at, t->kn, key)) {
            t->used = true;
            return t;
        }
    }
    return NULL;
}

struct asm_tok *asm_take_rest(struct asm_dir *d)
{
    for (size_t i = 0; i < d->n; i++)
        if (!d->tok[i].used && d->tok[i].rest) {
            d->tok[i].used = true;
            return &d->tok[i];
        }
    return NULL;
}

/* Complain about the first word the directive did not take. */
bool asm_dir_done(struct asm_ctx *a, struct asm_dir *d, const char *what)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct asm_tok *t = &d->tok[i];
        if (t->used)
            continue;
        if (t->kn)
            return asm_err_at(a, t->at, "%s takes no option '%.*s'", what, (int)t->kn,
                              d->s + t->at);
        if (t->rest)
            return asm_err_at(a, t->at, "%s takes no '= values'", what);
        return asm_err_at(a, t->at, "unexpected '%.*s' in %s", (int)(t->vn > 40 ? 40 : t->vn),
                          d->s + t->vat, what);
    }
    return true;
}
