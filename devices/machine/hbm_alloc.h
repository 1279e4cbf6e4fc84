/*
 * hbm_alloc.h: a first-fit, address-ordered allocator for one HBM stack.
 *
 * The allocator hands out byte ranges of a region it does not touch; the
 * caller maps them onto memory. Ranges are aligned to at least
 * HBM_ALLOC_MIN_ALIGN and sized in multiples of it. Free ranges are kept
 * sorted by address and merged with their neighbours, so the same sequence
 * of calls always yields the same addresses. Thread-safe.
 */
#ifndef TRNEMU_DEVICES_HBM_ALLOC_H
#define TRNEMU_DEVICES_HBM_ALLOC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#define HBM_ALLOC_MIN_ALIGN 64u

struct hbm_extent {
    uint64_t off;  /* first byte of the free range, relative to the region */
    uint64_t len;  /* length of the free range in bytes */
};

struct hbm_alloc {
    pthread_mutex_t lock;     /* guards every field below */
    uint64_t size;            /* bytes the region holds */
    uint64_t used;            /* bytes handed out and not yet returned */
    struct hbm_extent *free;  /* free ranges, sorted by off, never adjacent */
    size_t nfree;             /* entries in free[] */
    size_t cap;               /* capacity of free[] */
    uint64_t high;            /* end of the highest range ever handed out */
};

/* Prepare an allocator over [0, size). */
NRT_STATUS hbm_alloc_init(struct hbm_alloc *a, uint64_t size);
void hbm_alloc_fini(struct hbm_alloc *a);

/* Round a request up to the allocation granule; 0 when it would overflow. */
uint64_t hbm_alloc_round(uint64_t size);

/* Take size bytes aligned to align (a power of two; smaller values are
 * raised to HBM_ALLOC_MIN_ALIGN). *off receives the start and *taken the
 * rounded length to pass back to hbm_alloc_give. NRT_RESOURCE when no free
 * range fits, NRT_INVALID for a zero size or a bad alignment. */
NRT_STATUS hbm_alloc_take(struct hbm_alloc *a, uint64_t size, uint64_t align,
                          uint64_t *off, uint64_t *taken);

/* Take exactly [off, off+len) (a snapshot restore re-creating a live
 * block). off and len must be multiples of HBM_ALLOC_MIN_ALIGN and the
 * range wholly free: else NRT_INVALID (no log line; the caller names it). */
NRT_STATUS hbm_alloc_take_at(struct hbm_alloc *a, uint64_t off, uint64_t len);

/* End of the highest range ever handed out: bytes at or above it were
 * never given to anyone (a snapshot does not need to look there). */
uint64_t hbm_alloc_high(struct hbm_alloc *a);

/* Return a range obtained from hbm_alloc_take (same off and taken). */
void hbm_alloc_give(struct hbm_alloc *a, uint64_t off, uint64_t taken);

/* Bytes currently handed out. */
uint64_t hbm_alloc_used(struct hbm_alloc *a);

/* Largest free range, for error messages. */
uint64_t hbm_alloc_largest_free(struct hbm_alloc *a);

/* Check the invariants (sorted, disjoint, non-adjacent, used + free == size);
 * true when they hold, like every *_sane. For tests and assert()
 * (hbm_alloc_fini; each change asserts the same around the ranges it
 * touched). */
bool hbm_alloc_sane(struct hbm_alloc *a);

#endif
