/*
 * tensor_set.c: name -> tensor collections (see tensor_set.h).
 *
 * Entries are kept in insertion order in a small array; sets hold a handful
 * of tensors, so a linear name search is the fastest structure here.
 */
#include "devices/runtime/tensor_set.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "devices/runtime/handle.h"
#include "devices/runtime/tensor.h"
#include "emu/grow.h"
#include "emu/log.h"

#define TENSOR_SET_NAME_MAX 1024

struct tensor_set_entry {
    char *name;       /* owned copy of the name */
    nrt_tensor_t *t;  /* not owned */
};

struct tensor_set {
    struct tensor_set_entry *e;  /* entries in insertion order */
    size_t n;                    /* entries used */
    size_t cap;                  /* entries allocated */
};

static bool tensor_set_check(const void *s)
{
    if (handle_has(s, HANDLE_TENSOR_SET))
        return true;
    LOG_ERROR("NRT", "%p is not a live tensor set", s);
    return false;
}

NRT_STATUS tensor_set_allocate(nrt_tensor_set_t **out)
{
    struct tensor_set *s = calloc(1, sizeof *s);
    if (s == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    handle_lock();
    NRT_STATUS st = handle_add(s, HANDLE_TENSOR_SET);
    handle_unlock();
    if (st != NRT_SUCCESS) {
        free(s);
        return st;
    }
    *out = s;
    return NRT_SUCCESS;
}

bool tensor_set_destroy(nrt_tensor_set_t *p)
{
    handle_lock();
    if (!handle_has(p, HANDLE_TENSOR_SET)) {
        handle_unlock();
        return false;
    }
    handle_remove(p);
    handle_unlock();
    struct tensor_set *s = p;
    for (size_t i = 0; i < s->n; i++)
        free(s->e[i].name);
    free(s->e);
    free(s);
    return true;
}

static struct tensor_set_entry *tensor_set_find(struct tensor_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->e[i].name, name) == 0)
            return &s->e[i];
    return NULL;
}

static NRT_STATUS tensor_set_append(struct tensor_set *s, const char *name, nrt_tensor_t *t)
{
    if (!GROW_ARRAY(s->e, s->cap, s->n + 1, 8)) {
        LOG_ERROR("NRT", "out of memory for tensor set entry '%s'", name);
        return NRT_RESOURCE;
    }
    char *copy = strdup(name);
    if (copy == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    s->e[s->n++] = (struct tensor_set_entry){copy, t};
    return NRT_SUCCESS;
}

/* Is name short enough to keep? (one log line when not) */
static bool tensor_set_name_ok(const char *name)
{
    if (strnlen(name, TENSOR_SET_NAME_MAX) < TENSOR_SET_NAME_MAX)
        return true;
    LOG_ERROR("NRT", "tensor name longer than %d bytes", TENSOR_SET_NAME_MAX - 1);
    return false;
}

/* Point entry name of p at t, adding it when new. Caller holds handle_lock(). */
static NRT_STATUS tensor_set_put(nrt_tensor_set_t *p, const char *name, nrt_tensor_t *t)
{
    assert(handle_lock_held());
    struct tensor_set_entry *e = tensor_set_find(p, name);
    if (e == NULL)
        return tensor_set_append(p, name, t);
    e->t = t;
    return NRT_SUCCESS;
}

NRT_STATUS tensor_set_add(nrt_tensor_set_t *p, const char *name, nrt_tensor_t *t)
{
    if (!tensor_set_name_ok(name))
        return NRT_INVALID;
    handle_lock();
    NRT_STATUS st = NRT_INVALID;
    if (!tensor_set_check(p)) {
    } else if (!handle_has(t, HANDLE_TENSOR)) {
        LOG_ERROR("NRT", "tensor '%s': %p is not a live tensor", name, (void *)t);
    } else {
        st = tensor_set_put(p, name, t);
    }
    handle_unlock();
    return st;
}

NRT_STATUS tensor_set_get(nrt_tensor_set_t *p, const char *name, nrt_tensor_t **out)
{
    handle_lock();
    NRT_STATUS st = NRT_INVALID;
    if (tensor_set_check(p)) {
        struct tensor_set_entry *e = tensor_set_find(p, name);
        if (e == NULL) {
            st = NRT_FAILURE;  /* the caller's line says what was missing */
        } else if (!handle_has(e->t, HANDLE_TENSOR)) {
            LOG_ERROR("NRT", "tensor '%s' in the set was freed", name);
        } else {
            *out = e->t;
            st = NRT_SUCCESS;
        }
    }
    handle_unlock();
    return st;
}

NRT_STATUS tensor_set_size(const nrt_tensor_set_t *p, size_t *n)
{
    handle_lock();
    bool ok = tensor_set_check(p);
    if (ok)
        *n = ((const struct tensor_set *)p)->n;
    handle_unlock();
    return ok ? NRT_SUCCESS : NRT_INVALID;
}

NRT_STATUS tensor_set_entry(const nrt_tensor_set_t *p, size_t i, const char **name,
                            nrt_tensor_t **t)
{
    handle_lock();
    const struct tensor_set *s = p;
    bool ok = tensor_set_check(p) && i < s->n;
    if (ok) {
        *name = s->e[i].name;
        *t = s->e[i].t;
    }
    handle_unlock();
    return ok ? NRT_SUCCESS : NRT_INVALID;
}

/* ---- snapshots --------------------------------------------------------- */

static int tensor_set_record_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct tensor_set_record *)a)->handle;
    uintptr_t y = (uintptr_t)((const struct tensor_set_record *)b)->handle;
    return x < y ? -1 : x > y;
}

/* Copy one set's entries into r (caller holds the handle lock). */
static bool tensor_set_record_fill(const struct tensor_set *s, struct tensor_set_record *r)
{
    assert(handle_lock_held());
    r->handle = s;
    r->n = s->n;
    r->names = calloc(s->n ? s->n : 1, sizeof *r->names);
    r->tensors = calloc(s->n ? s->n : 1, sizeof *r->tensors);
    if (r->names == NULL || r->tensors == NULL)
        return false;
    for (size_t i = 0; i < s->n; i++) {
        r->names[i] = strdup(s->e[i].name);
        r->tensors[i] = s->e[i].t;
        if (r->names[i] == NULL)
            return false;
    }
    return true;
}

NRT_STATUS tensor_set_records(struct tensor_set_record **out, size_t *n)
{
    handle_lock();
    size_t cnt;
    void **list = handle_list(HANDLE_TENSOR_SET, &cnt);
    struct tensor_set_record *r = calloc(cnt ? cnt : 1, sizeof *r);
    bool ok = list != NULL && r != NULL;
    for (size_t i = 0; ok && i < cnt; i++)
        ok = tensor_set_record_fill(list[i], &r[i]);
    handle_unlock();
    free(list);
    if (!ok) {
        tensor_set_records_free(r, cnt);
        return NRT_RESOURCE;
    }
    qsort(r, cnt, sizeof *r, tensor_set_record_cmp);
    *out = r;
    *n = cnt;
    return NRT_SUCCESS;
}

void tensor_set_records_free(struct tensor_set_record *r, size_t n)
{
    for (size_t i = 0; r != NULL && i < n; i++) {
        for (size_t k = 0; r[i].names != NULL && k < r[i].n; k++)
            free(r[i].names[k]);
        free(r[i].names);
        free(r[i].tensors);
    }
    free(r);
}

NRT_STATUS tensor_set_restore_entry(nrt_tensor_set_t *p, const char *name, nrt_tensor_t *t)
{
    if (!tensor_set_name_ok(name))
        return NRT_INVALID;
    handle_lock();
    NRT_STATUS st = tensor_set_check(p) ? tensor_set_put(p, name, t) : NRT_INVALID;
    handle_unlock();
    return st;
}
