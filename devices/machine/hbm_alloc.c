/*
 * hbm_alloc.c: first-fit, address-ordered range allocator (see hbm_alloc.h).
 *
 * The free list is a sorted array: taking scans it for the first range that
 * fits (after alignment), giving binary-searches the insertion point and
 * merges with the neighbours.
 */
#include "devices/machine/hbm_alloc.h"

#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "emu/grow.h"
#include "emu/log.h"

NRT_STATUS hbm_alloc_init(struct hbm_alloc *a, uint64_t size)
{
    memset(a, 0, sizeof *a);
    if (pthread_mutex_init(&a->lock, NULL) != 0)
        return NRT_RESOURCE;
    a->size = size & ~(uint64_t)(HBM_ALLOC_MIN_ALIGN - 1);
    a->cap = 16;
    a->free = calloc(a->cap, sizeof *a->free);
    if (a->free == NULL) {
        pthread_mutex_destroy(&a->lock);
        return NRT_RESOURCE;
    }
    a->free[0] = (struct hbm_extent){0, a->size};
    a->nfree = a->size ? 1 : 0;
    return NRT_SUCCESS;
}

void hbm_alloc_fini(struct hbm_alloc *a)
{
    assert(hbm_alloc_sane(a));
    free(a->free);
    a->free = NULL;
    a->nfree = a->cap = 0;
    pthread_mutex_destroy(&a->lock);
}

uint64_t hbm_alloc_round(uint64_t size)
{
    uint64_t g = HBM_ALLOC_MIN_ALIGN;
    if (size > UINT64_MAX - (g - 1))
        return 0;
    return (size + g - 1) & ~(g - 1);
}

static int hbm_alloc_grow(struct hbm_alloc *a)
{
    return GROW_ARRAY(a->free, a->cap, a->nfree + 1, 16) ? 0 : -1;
}

static void hbm_alloc_insert_at(struct hbm_alloc *a, size_t i, uint64_t off, uint64_t len)
{
    memmove(&a->free[i + 1], &a->free[i], (a->nfree - i) * sizeof a->free[0]);
    a->free[i] = (struct hbm_extent){off, len};
    a->nfree++;
}

static void hbm_alloc_remove_at(struct hbm_alloc *a, size_t i)
{
    memmove(&a->free[i], &a->free[i + 1], (a->nfree - i - 1) * sizeof a->free[0]);
    a->nfree--;
}

/* Carve [start, start+len) out of free range i; may split it in two. */
/* The invariants around free range i (its neighbours included): each
 * non-empty and inside the region, sorted, disjoint and not touching;
 * used within size. O(1), for assert() after every change (the lock is
 * held); hbm_alloc_sane checks the whole list. */
static inline bool hbm_alloc_sane_near(const struct hbm_alloc *a, size_t i)
{
    if (a->used > a->size || a->nfree > a->cap)
        return false;
    size_t lo = i > 0 ? i - 1 : 0, hi = i + 2 < a->nfree ? i + 2 : a->nfree;
    for (size_t k = lo; k < hi; k++) {
        const struct hbm_extent *e = &a->free[k];
        if (e->len == 0 || e->off > a->size || e->len > a->size - e->off)
            return false;
        if (k + 1 < a->nfree && e->off + e->len >= a->free[k + 1].off)
            return false;
    }
    return true;
}

static int hbm_alloc_carve(struct hbm_alloc *a, size_t i, uint64_t start, uint64_t len)
{
    struct hbm_extent e = a->free[i];
    uint64_t head = start - e.off;
    uint64_t tail = e.off + e.len - (start + len);
    if (head && tail) {
        if (hbm_alloc_grow(a) != 0)
            return -1;
        a->free[i].len = head;
        hbm_alloc_insert_at(a, i + 1, start + len, tail);
    } else if (head) {
        a->free[i].len = head;
    } else if (tail) {
        a->free[i] = (struct hbm_extent){start + len, tail};
    } else {
        hbm_alloc_remove_at(a, i);
    }
    return 0;
}

NRT_STATUS hbm_alloc_take(struct hbm_alloc *a, uint64_t size, uint64_t align,
                          uint64_t *off, uint64_t *taken)
{
    if (align < HBM_ALLOC_MIN_ALIGN)
        align = HBM_ALLOC_MIN_ALIGN;
    if ((align & (align - 1)) != 0 || align > (1ull << 40))
        return NRT_INVALID;
    if (size == 0)
        return NRT_INVALID;
    uint64_t len = hbm_alloc_round(size);
    if (len == 0 || len > a->size)
        return NRT_RESOURCE;  /* larger than the whole region: nothing fits */
    NRT_STATUS st = NRT_RESOURCE;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->nfree; i++) {
        struct hbm_extent e = a->free[i];
        uint64_t start = (e.off + align - 1) & ~(align - 1);
        if (start < e.off || start - e.off >= e.len || e.len - (start - e.off) < len)
            continue;
        if (hbm_alloc_carve(a, i, start, len) != 0)
            break;
        a->used += len;
        if (start + len > a->high)
            a->high = start + len;
        assert(hbm_alloc_sane_near(a, i));
        *off = start;
        *taken = len;
        st = NRT_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

/* Index of the first free range that starts after off. */
static size_t hbm_alloc_search(const struct hbm_alloc *a, uint64_t off)
{
    size_t lo = 0, hi = a->nfree;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->free[mid].off <= off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

NRT_STATUS hbm_alloc_take_at(struct hbm_alloc *a, uint64_t off, uint64_t len)
{
    uint64_t g = HBM_ALLOC_MIN_ALIGN;
    if (len == 0 || (off & (g - 1)) != 0 || (len & (g - 1)) != 0 || off > a->size ||
        len > a->size - off)
        return NRT_INVALID;
    NRT_STATUS st = NRT_INVALID;
    pthread_mutex_lock(&a->lock);
    size_t i = hbm_alloc_search(a, off);  /* the free range holding off is i-1 */
    if (i > 0 && a->free[i - 1].off + a->free[i - 1].len >= off + len) {
        if (hbm_alloc_carve(a, i - 1, off, len) == 0) {
            a->used += len;
            if (off + len > a->high)
                a->high = off + len;
            assert(hbm_alloc_sane_near(a, i - 1));
            st = NRT_SUCCESS;
        } else {
            st = NRT_RESOURCE;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return st;
}

uint64_t hbm_alloc_high(struct hbm_alloc *a)
{
    pthread_mutex_lock(&a->lock);
    uint64_t h = a->high;
    pthread_mutex_unlock(&a->lock);
    return h;
}

void hbm_alloc_give(struct hbm_alloc *a, uint64_t off, uint64_t taken)
{
    if (taken == 0)
        return;
    pthread_mutex_lock(&a->lock);
    size_t i = hbm_alloc_search(a, off);
    bool merge_prev = i > 0 && a->free[i - 1].off + a->free[i - 1].len == off;
    bool merge_next = i < a->nfree && off + taken == a->free[i].off;
    if (merge_prev && merge_next) {
        a->free[i - 1].len += taken + a->free[i].len;
        hbm_alloc_remove_at(a, i);
    } else if (merge_prev) {
        a->free[i - 1].len += taken;
    } else if (merge_next) {
        a->free[i].off = off;
        a->free[i].len += taken;
    } else if (hbm_alloc_grow(a) == 0) {
        hbm_alloc_insert_at(a, i, off, taken);
    } else {
        /* Out of host memory for the free list: the range leaks inside the
         * emulated HBM (never on the host); say so once. */
        LOG_ERROR("TDRV", "cannot record %llu freed bytes at 0x%llx: out of host memory",
                  (unsigned long long)taken, (unsigned long long)off);
        pthread_mutex_unlock(&a->lock);
        return;
    }
    a->used -= taken;
    assert(hbm_alloc_sane_near(a, i > 0 ? i - 1 : 0));
    pthread_mutex_unlock(&a->lock);
}

uint64_t hbm_alloc_used(struct hbm_alloc *a)
{
    pthread_mutex_lock(&a->lock);
    uint64_t u = a->used;
    pthread_mutex_unlock(&a->lock);
    return u;
}

uint64_t hbm_alloc_largest_free(struct hbm_alloc *a)
{
    uint64_t best = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->nfree; i++)
        if (a->free[i].len > best)
            best = a->free[i].len;
    pthread_mutex_unlock(&a->lock);
    return best;
}

bool hbm_alloc_sane(struct hbm_alloc *a)
{
    bool ok = true;
    uint64_t total = 0;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->nfree; i++) {
        const struct hbm_extent *e = &a->free[i];
        if (e->len == 0 || e->off + e->len > a->size)
            ok = false;
        if (i > 0 && a->free[i - 1].off + a->free[i - 1].len >= e->off)
            ok = false;
        total += e->len;
    }
    if (total + a->used != a->size)
        ok = false;
    pthread_mutex_unlock(&a->lock);
    return ok;
}
