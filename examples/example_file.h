/*
 * example_file.h: reading a whole file (a NEFF) into memory, for the
 * example programs and the benchmarks that load NEFFs the same way.
 * Header only, so each program stays one source file.
 */
#ifndef TRNEMU_EXAMPLE_FILE_H
#define TRNEMU_EXAMPLE_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The bytes of path (malloc'd) and their count in *size; NULL (and *size
 * 0) when it cannot be opened or read, or is empty. */
static inline void *example_read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    *size = 0;
    if (f == NULL)
        return NULL;
    void *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n)) != NULL &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf != NULL)
        *size = (size_t)n;
    return buf;
}

#endif
