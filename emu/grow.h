/*
 * grow.h: the one way a dynamic array grows: its capacity doubles (from a
 * first size when it is empty) until it holds the elements asked for.
 * Header only and free of any layer's types, in emu/, the one layer that
 * emu, devices, store and shims may all include.
 */
#ifndef TRNEMU_EMU_GROW_H
#define TRNEMU_EMU_GROW_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Make *v (of *cap elements of elem bytes) hold at least need elements.
 * false, with *v and *cap untouched, when memory runs out. */
static inline bool grow_array(void **v, size_t *cap, size_t need, size_t elem, size_t first)
{
    assert(first > 0 && elem > 0);
    if (need <= *cap)
        return true;
    size_t ncap = *cap ? *cap : first;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return false;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem)
        return false;
    void *p = realloc(*v, ncap * elem);
    if (p == NULL)
        return false;
    *v = p;
    *cap = ncap;
    return true;
}

/* grow_array for an array variable arr with its capacity variable cap
 * (a size_t). */
#define GROW_ARRAY(arr, cap, need, first) \
    grow_array((void **)&(arr), &(cap), (need), sizeof *(arr), (first))

#endif
