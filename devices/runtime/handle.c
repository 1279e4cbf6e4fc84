/*
 * handle.c: pointer registry (see handle.h).
 */
#include "devices/runtime/handle.h"

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "emu/log.h"

struct handle_slot {
    const void *p;          /* the object, NULL when the slot is empty */
    enum handle_kind kind;  /* what it is */
};

static pthread_mutex_t handle_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct handle_slot *handle_slots; /* table, power-of-two size */
static size_t handle_cap;                /* slots in the table */
static size_t handle_used;               /* occupied slots */
static _Thread_local bool handle_owner;  /* this thread holds handle_mutex */

void handle_lock(void)
{
    pthread_mutex_lock(&handle_mutex);
    handle_owner = true;
}

void handle_unlock(void)
{
    assert(handle_owner);
    handle_owner = false;
    pthread_mutex_unlock(&handle_mutex);
}

bool handle_lock_held(void)
{
    return handle_owner;
}

static size_t handle_hash(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static struct handle_slot *handle_find(const void *p)
{
    if (handle_cap == 0 || p == NULL)
        return NULL;
    for (size_t i = handle_hash(p, handle_cap);; i = (i + 1) & (handle_cap - 1)) {
        if (handle_slots[i].p == p)
            return &handle_slots[i];
        if (handle_slots[i].p == NULL)
            return NULL;
    }
}

static void handle_put(struct handle_slot *slots, size_t cap, const void *p, enum handle_kind k)
{
    size_t i = handle_hash(p, cap);
    while (slots[i].p != NULL)
        i = (i + 1) & (cap - 1);
    slots[i] = (struct handle_slot){p, k};
}

/* The registry's invariants: a power-of-two table at most half full,
 * every member reachable from its home slot without crossing an empty one,
 * and used counting them. O(table): for assert() where the table is
 * rebuilt anyway (handle_grow) and from tests; each add and remove asserts
 * the cheap part (handle_sane_has). Caller holds the lock. */
static inline bool handle_sane(void)
{
    assert(handle_lock_held());
    if (handle_cap & (handle_cap - 1) || handle_used * 2 > handle_cap)
        return false;
    size_t n = 0;
    for (size_t i = 0; i < handle_cap; i++)
        if (handle_slots[i].p != NULL) {
            n++;
            if (handle_find(handle_slots[i].p) != &handle_slots[i])
                return false;
        }
    return n == handle_used;
}

/* After an add (want true) or a remove (false): p is found, or not; the
 * table is not over half full. */
static inline bool handle_sane_has(const void *p, bool want)
{
    return (handle_find(p) != NULL) == want && handle_used * 2 <= handle_cap;
}

static int handle_grow(void)
{
    size_t ncap = handle_cap ? handle_cap * 2 : 64;
    struct handle_slot *n = calloc(ncap, sizeof *n);
    if (n == NULL)
        return -1;
    for (size_t i = 0; i < handle_cap; i++)
        if (handle_slots[i].p != NULL)
            handle_put(n, ncap, handle_slots[i].p, handle_slots[i].kind);
    free(handle_slots);
    handle_slots = n;
    handle_cap = ncap;
    assert(handle_sane());
    return 0;
}

NRT_STATUS handle_add(const void *p, enum handle_kind k)
{
    assert(handle_lock_held());
    struct handle_slot *s = handle_find(p);
    if (s != NULL) {
        s->kind = k;
        return NRT_SUCCESS;
    }
    if ((handle_used + 1) * 2 > handle_cap && handle_grow() != 0) {
        LOG_ERROR("NRT", "out of memory for the handle table (%zu objects)", handle_used);
        return NRT_RESOURCE;
    }
    handle_put(handle_slots, handle_cap, p, k);
    handle_used++;
    assert(handle_sane_has(p, true));
    return NRT_SUCCESS;
}

bool handle_has(const void *p, enum handle_kind k)
{
    assert(handle_lock_held());
    const struct handle_slot *s = handle_find(p);
    return s != NULL && s->kind == k;
}

void handle_remove(const void *p)
{
    assert(handle_lock_held());
    struct handle_slot *s = handle_find(p);
    if (s == NULL)
        return;
    size_t i = (size_t)(s - handle_slots), mask = handle_cap - 1;
    handle_slots[i].p = NULL;
    handle_used--;
    /* Backward-shift: move later members of the probe run into the hole. */
    for (size_t j = (i + 1) & mask; handle_slots[j].p != NULL; j = (j + 1) & mask) {
        size_t home = handle_hash(handle_slots[j].p, handle_cap);
        bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            handle_slots[i] = handle_slots[j];
            handle_slots[j].p = NULL;
            i = j;
        }
    }
    assert(handle_sane_has(p, false));
}

void handle_each(enum handle_kind k, void (*fn)(void *p, void *arg), void *arg)
{
    assert(handle_lock_held());
    for (size_t i = 0; i < handle_cap; i++)
        if (handle_slots[i].p != NULL && handle_slots[i].kind == k)
            fn((void *)handle_slots[i].p, arg);
}

size_t handle_count(enum handle_kind k)
{
    assert(handle_lock_held());
    size_t n = 0;
    for (size_t i = 0; i < handle_cap; i++)
        if (handle_slots[i].p != NULL && handle_slots[i].kind == k)
            n++;
    return n;
}

void **handle_list(enum handle_kind k, size_t *n)
{
    size_t cnt = handle_count(k);
    void **list = calloc(cnt ? cnt : 1, sizeof *list);
    *n = 0;
    for (size_t i = 0; list != NULL && i < handle_cap; i++)
        if (handle_slots[i].p != NULL && handle_slots[i].kind == k)
            list[(*n)++] = (void *)handle_slots[i].p;
    return list;
}
