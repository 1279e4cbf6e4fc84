/*
 * isa_lex.c: the number lexer of the assembler and the instruction text
 * (see isa_lex.h). The lowest file of emu/isa's text side: it calls none.
 */
#include "emu/isa/isa_lex.h"

#include <stdlib.h>
#include <string.h>

#define ISA_LEX_FLOAT_MAX 96 /* bytes of a float literal, its NUL included */

/* The value of digit c, or 99 when c is not a digit of base 16. */
static unsigned lex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return (unsigned)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (unsigned)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (unsigned)(c - 'A' + 10);
    return 99;
}

bool isa_lex_digits(const char *s, size_t n, unsigned base, uint64_t *v)
{
    uint64_t x = 0;
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned d = lex_digit(s[i]);
        if (d >= base || x > (UINT64_MAX - d) / base)
            return false;
        x = x * base + d;
    }
    *v = x;
    return true;
}

bool isa_lex_u64(const char *s, size_t n, uint64_t *v)
{
    if (n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return isa_lex_digits(s + 2, n - 2, 16, v);
    return isa_lex_digits(s, n, 10, v);
}

bool isa_lex_i64(const char *s, size_t n, int64_t *v)
{
    bool neg = n > 0 && s[0] == '-';
    uint64_t u;
    if (n > 0 && (s[0] == '-' || s[0] == '+')) {
        s++;
        n--;
    }
    if (!isa_lex_u64(s, n, &u))
        return false;
    if (neg ? u > (uint64_t)INT64_MAX + 1 : u > (uint64_t)INT64_MAX)
        return false;
    *v = neg ? (int64_t)(0 - u) : (int64_t)u;
    return true;
}

/* s[0..n) as a NUL-terminated string in buf; false when it does not fit. */
static bool lex_copy(const char *s, size_t n, char buf[ISA_LEX_FLOAT_MAX])
{
    if (n == 0 || n >= ISA_LEX_FLOAT_MAX)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return true;
}

bool isa_lex_f64(const char *s, size_t n, double *v)
{
    char buf[ISA_LEX_FLOAT_MAX], *end;
    if (!lex_copy(s, n, buf))
        return false;
    *v = strtod(buf, &end);
    return end == buf + n && !(buf[0] == '0' && (buf[1] == 'x' || buf[1] == 'X'));
}

bool isa_lex_bits(const char *s, size_t n, unsigned nbits, uint64_t *v)
{
    if (n < 5 || memcmp(s, "bits:", 5) != 0 || !isa_lex_u64(s + 5, n - 5, v))
        return false;
    return nbits >= 64 || *v < (1ull << nbits);
}

bool isa_lex_float_bits(const char *s, size_t n, unsigned nbits, uint64_t *bits)
{
    char buf[ISA_LEX_FLOAT_MAX], *end;
    *bits = 0;
    if (!lex_copy(s, n, buf))
        return false;
    if (nbits == 32) {
        float f = strtof(buf, &end);
        uint32_t b32;
        memcpy(&b32, &f, sizeof b32);
        *bits = b32;
    } else {
        double d = strtod(buf, &end);
        memcpy(bits, &d, sizeof d);
    }
    return *end == '\0';
}
