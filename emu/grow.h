/*
 * grow.h: the one way an array grows, in every layer: capacity doubles
 * (from a first size) until it holds what is needed, so n appends cost
 * O(n) copies in all. Header only and free of any layer's types, in emu/,
 * the one layer that emu, devices, store and shims may all include.
 */
#ifndef TRNEMU_EMU_GROW_H
#define TRNEMU_EMU_GROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity after cap (or first, when cap is 0) has doubled until it
 * is at least need; 0 when that overflows. */
static inline size_t grow_cap(size_t cap, size_t need, size_t first)
{
    size_t ncap = cap ? cap : first;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2)
            return 0;
        ncap *= 2;
    }
    return ncap;
}

/* Reallocate *arr to ncap elements of elem bytes; false (with *arr kept)
 * when out of memory or when the size overflows. */
static inline bool grow_to(void **arr, size_t ncap, size_t elem)
{
    if (ncap == 0 || ncap > SIZE_MAX / elem)
        return false;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return false;
    *arr = p;
    return true;
}

/* Make *arr (capacity *cap elements of elem bytes) hold at least need
 * elements, doubling from first; false when out of memory (*arr and *cap
 * kept). */
static inline bool grow_array(void **arr, size_t need, size_t *cap, size_t elem, size_t first)
{
    if (need <= *cap)
        return true;
    size_t ncap = grow_cap(*cap, need, first);
    if (!grow_to(arr, ncap, elem))
        return false;
    *cap = ncap;
    return true;
}

/* grow_array for an array variable arr with its capacity variable cap
 * (a size_t). */
#define GROW_ARRAY(arr, cap, need, first) \
    grow_array((void **)&(arr), (need), &(cap), sizeof *(arr), (first))

#endif
