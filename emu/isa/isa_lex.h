/*
 * isa_lex.h: the one number lexer of trnemu's text forms, shared by the
 * assembler (emu/isa/asm_*.c: directives, .const values) and the text of
 * one instruction (emu/isa/isa_text.c). Each function reads the whole of
 * s[0..n) (not NUL-terminated) and fails on anything left over.
 */
#ifndef TRNEMU_EMU_ISA_LEX_H
#define TRNEMU_EMU_ISA_LEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Digits of base (10 or 16; hex digits in either case) into *v; false
 * when there are none, on a bad digit or on overflow. */
bool isa_lex_digits(const char *s, size_t n, unsigned base, uint64_t *v);
/* Unsigned decimal, or hexadecimal after 0x or 0X. */
bool isa_lex_u64(const char *s, size_t n, uint64_t *v);
/* Signed: an optional '-' or '+', then as isa_lex_u64, within int64. */
bool isa_lex_i64(const char *s, size_t n, int64_t *v);
/* A decimal C floating-point literal (also inf, nan), not hexadecimal. */
bool isa_lex_f64(const char *s, size_t n, double *v);
/* "bits:" then an unsigned integer below 2^nbits: a float's exact bits. */
bool isa_lex_bits(const char *s, size_t n, unsigned nbits, uint64_t *v);
/* Any C floating-point literal as the bits of a float of nbits (32:
 * rounded once by strtof, 64: by strtod). *bits gets what strtof/strtod
 * read even when the literal has a tail (the call then fails); false also
 * for an empty or over-long (96 bytes or more) literal, *bits then 0. */
bool isa_lex_float_bits(const char *s, size_t n, unsigned nbits, uint64_t *bits);

#endif
