/*
 * asm_file.c: reading a whole file into memory, for the assembler's
 * sources (asm_file) and the data of .const file=... (see asm.h).
 */
#include "emu/isa/asm.h"

#include <stdio.h>
#include <stdlib.h>

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
