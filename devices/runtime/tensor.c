/*
 * tensor.c: runtime tensors and their reference-counted storages
 * (see tensor.h).
 *
 * Locking: every field of a tensor is read and written under handle_lock(),
 * together with the registry check, and a pin takes a storage reference, so
 * bytes are moved outside the lock while the storage cannot disappear.
 * Writes of bytes hold machine_mem_enter (a snapshot waits for them).
 */
#include "devices/runtime/tensor.h"
#include "devices/observe/systrace.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "devices/runtime/handle.h"
#include "devices/machine/hbm_export.h"
#include "devices/machine/instance.h"
#include "devices/runtime/runtime.h"
#include "emu/log.h"

struct nrt_tensor {
    nrt_tensor_placement_t placement;  /* where the storage lives */
    int vnc;                           /* process-local VNC, -1 for none */
    char name[TENSOR_NAME_LEN];        /* for log messages only (truncated) */
    struct tensor_storage *st;         /* NULL for an empty tensor */
    uint64_t off;                      /* offset of byte 0 in the storage */
    uint64_t size;                     /* bytes */
    _Atomic uint64_t completions;      /* executions that wrote it as output */
};

/* ---- storages ---------------------------------------------------------- */

static struct tensor_storage *storage_new(enum tensor_storage_kind kind, uint64_t size)
{
    struct tensor_storage *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    atomic_store(&s->refs, 1);
    s->kind = kind;
    s->size = size;
    s->gvnc = -1;
    return s;
}

/* Count the storage's bytes for its VNC in the shared instance (what
 * neuron-monitor's memory breakdown reads), or give them back. */
static void storage_charge(const struct tensor_storage *s, bool add)
{
    struct machine *m = rt_machine();
    struct instance *inst = m != NULL ? m->inst : NULL;
    if (s->kind == STORAGE_HBM)
        instance_use_memory(inst, s->block.vnc, INSTANCE_MEM_TENSORS, s->block.len, add);
    else if (s->kind == STORAGE_HOST && s->gvnc >= 0)
        instance_use_memory(inst, (uint32_t)s->gvnc, INSTANCE_MEM_HOST_TENSORS, s->size, add);
}

/* A device tensor of a page or more starts on a page and covers whole
 * pages, so that it can be exported as a dma-buf on its own
 * (nrt_get_dmabuf_fd, devices/machine/hbm_export.h); smaller ones pack. */
static uint64_t storage_hbm_align(uint64_t size, uint64_t *take)
{
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    *take = size >= pg && size <= UINT64_MAX - pg ? (size + pg - 1) / pg * pg : size;
    return size >= pg ? pg : HBM_ALLOC_MIN_ALIGN;
}

static NRT_STATUS storage_new_hbm(uint32_t gvnc, uint64_t size, struct tensor_storage **out)
{
    struct machine *m = rt_machine();
    struct tensor_storage *s = storage_new(STORAGE_HBM, size);
    if (s == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    uint64_t take;
    uint64_t align = storage_hbm_align(size, &take);
    NRT_STATUS st = machine_hbm_take(m, gvnc, take, align, &s->block);
    if (st != NRT_SUCCESS) {
        free(s);
        return st;
    }
    s->va = machine_hbm_va(m, &s->block);
    storage_charge(s, true);
    *out = s;
    return NRT_SUCCESS;
}

static NRT_STATUS storage_new_host(int32_t gvnc, uint64_t size, struct tensor_storage **out)
{
    struct tensor_storage *s = storage_new(STORAGE_HOST, size);
    if (s == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    s->gvnc = gvnc;
    s->va = calloc(1, size);  /* large blocks come zeroed from mmap, untouched */
    if (s->va == NULL) {
        LOG_ERROR("TDRV", "cannot allocate %" PRIu64 " bytes of host memory", size);
        free(s);
        return NRT_RESOURCE;
    }
    storage_charge(s, true);
    *out = s;
    return NRT_SUCCESS;
}

static void storage_ref(struct tensor_storage *s)
{
    if (s != NULL)
        atomic_fetch_add(&s->refs, 1);
}

static void storage_unref(struct tensor_storage *s)
{
    if (s == NULL || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    storage_charge(s, false);
    if (s->kind == STORAGE_HBM) {
        /* a dma-buf of it ends first (its bytes back in the chip's file) */
        hbm_export_drop(rt_machine(), s->block.chip, s->block.off, s->block.len);
        machine_hbm_give(rt_machine(), &s->block);
    }
    else if (s->kind == STORAGE_HOST)
        free(s->va);
    free(s);
}

/* ---- tensor objects ---------------------------------------------------- */

static struct nrt_tensor *tensor_new(const char *name)
{
    struct nrt_tensor *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->vnc = -1;
    if (name != NULL)
        snprintf(t->name, sizeof t->name, "%s", name);
    return t;
}

/* Register a finished tensor and hand it out. */
static NRT_STATUS tensor_publish(struct nrt_tensor *t, nrt_tensor_t **out)
{
    handle_lock();
    NRT_STATUS st = handle_add(t, HANDLE_TENSOR);
    handle_unlock();
    if (st != NRT_SUCCESS) {
        storage_unref(t->st);
        free(t);
        return st;
    }
    *out = t;
    return NRT_SUCCESS;
}

static NRT_STATUS tensor_check_vnc(nrt_tensor_placement_t placement, int vnc, int *gvnc)
{
    struct machine *m = rt_machine();
    *gvnc = machine_vnc_global(m, vnc);
    if (*gvnc >= 0 || (vnc == -1 && placement != NRT_TENSOR_PLACEMENT_DEVICE))
        return NRT_SUCCESS;
    LOG_ERROR("NRT", "VNC %d is not one of the %u VNCs visible to this process", vnc,
              m->cfg.visible_count);
    return NRT_INVALID;
}

NRT_STATUS tensor_allocate(nrt_tensor_placement_t placement, int vnc, size_t size,
                           const char *name, nrt_tensor_t **out)
{
    assert(rt_held());
    if (placement != NRT_TENSOR_PLACEMENT_DEVICE && placement != NRT_TENSOR_PLACEMENT_HOST &&
        placement != NRT_TENSOR_PLACEMENT_VIRTUAL) {
        LOG_ERROR("NRT", "unknown tensor placement %d", (int)placement);
        return NRT_INVALID;
    }
    if (size == 0) {
        LOG_ERROR("NRT", "tensor '%s': size 0", name ? name : "");
        return NRT_INVALID;
    }
    if (placement == NRT_TENSOR_PLACEMENT_HOST && size > TENSOR_HOST_MAX) {
        LOG_ERROR("NRT", "tensor '%s': host-placed tensors are limited to 4 MB (asked %zu); "
                  "use NRT_TENSOR_PLACEMENT_VIRTUAL", name ? name : "", size);
        return NRT_INVALID;
    }
    int gvnc;
    NRT_STATUS st = tensor_check_vnc(placement, vnc, &gvnc);
    if (st != NRT_SUCCESS)
        return st;
    struct nrt_tensor *t = tensor_new(name);
    if (t == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    st = placement == NRT_TENSOR_PLACEMENT_DEVICE ? storage_new_hbm((uint32_t)gvnc, size, &t->st)
                                                  : storage_new_host(gvnc, size, &t->st);
    if (st != NRT_SUCCESS) {
        free(t);
        return st;
    }
    t->placement = placement;
    t->vnc = vnc;
    t->size = size;
    return tensor_publish(t, out);
}

NRT_STATUS tensor_allocate_empty(const char *name, nrt_tensor_t **out)
{
    assert(rt_held());
    struct nrt_tensor *t = tensor_new(name);
    if (t == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    t->placement = NRT_TENSOR_PLACEMENT_VIRTUAL;
    return tensor_publish(t, out);
}

/* Is [off, off+size) inside a tensor of tsize bytes? Overflow-safe. */
static bool tensor_range_ok(uint64_t off, uint64_t size, uint64_t tsize)
{
    return off <= tsize && size <= tsize - off;
}

static NRT_STATUS tensor_range_check(const struct tensor_view *v, const char *what,
                                     uint64_t off, uint64_t size, const char *name)
{
    if (tensor_range_ok(off, size, v->size))
        return NRT_SUCCESS;
    LOG_ERROR("NRT", "%s of %" PRIu64 " bytes at offset %" PRIu64
              " is outside tensor '%s' (%" PRIu64 " bytes)", what, size, off, name, v->size);
    return NRT_INVALID;
}

NRT_STATUS tensor_allocate_slice(const nrt_tensor_t *src, size_t offset, size_t size,
                                 const char *name, nrt_tensor_t **out)
{
    assert(rt_held());
    struct tensor_view v;
    NRT_STATUS st = tensor_pin(src, &v);
    if (st != NRT_SUCCESS)
        return st;
    if (v.st == NULL || size == 0) {
        LOG_ERROR("NRT", "cannot slice %s", v.st == NULL ? "a tensor without storage" : "0 bytes");
        tensor_unpin(&v);
        return NRT_INVALID;
    }
    st = tensor_range_check(&v, "slice", offset, size, v.name);
    struct nrt_tensor *t = st == NRT_SUCCESS ? tensor_new(name) : NULL;
    if (t == NULL) {
        tensor_unpin(&v);
        return st != NRT_SUCCESS ? st : NRT_RESOURCE;
    }
    t->placement = v.placement;
    t->vnc = v.vnc;
    t->st = v.st;  /* the pin's reference becomes the slice's */
    t->off = (uint64_t)(v.va - v.st->va) + offset;
    t->size = size;
    return tensor_publish(t, out);
}

NRT_STATUS tensor_attach_buffer(nrt_tensor_t *t, void *buf, size_t size)
{
    assert(rt_held());
    if (buf == NULL || size == 0) {
        LOG_ERROR("NRT", "cannot attach %s", buf == NULL ? "a NULL buffer" : "a 0-byte buffer");
        return NRT_INVALID;
    }
    struct tensor_storage *s = storage_new(STORAGE_USER, size);
    if (s == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    s->va = buf;
    handle_lock();
    if (!handle_has(t, HANDLE_TENSOR)) {
        handle_unlock();
        free(s);
        LOG_ERROR("NRT", "%p is not a live tensor", (const void *)t);
        return NRT_INVALID;
    }
    struct tensor_storage *old = t->st;
    t->st = s;
    t->off = 0;
    t->size = size;
    t->placement = NRT_TENSOR_PLACEMENT_VIRTUAL;
    handle_unlock();
    storage_unref(old);
    return NRT_SUCCESS;
}

bool tensor_free(nrt_tensor_t *t)
{
    assert(rt_held());
    handle_lock();
    if (!handle_has(t, HANDLE_TENSOR)) {
        handle_unlock();
        return false;
    }
    handle_remove(t);
    handle_unlock();
    storage_unref(t->st);
    free(t);
    return true;
}

/* ---- pins -------------------------------------------------------------- */

/* Pin under the lock the caller already holds. */
static bool tensor_pin_locked(const nrt_tensor_t *t, struct tensor_view *v)
{
    assert(handle_lock_held());
    if (!handle_has(t, HANDLE_TENSOR))
        return false;
    v->st = t->st;
    v->va = t->st ? t->st->va + t->off : NULL;
    v->size = t->size;
    v->placement = t->placement;
    v->vnc = t->vnc;
    memcpy(v->name, t->name, sizeof v->name);
    storage_ref(t->st);
    return true;
}

NRT_STATUS tensor_pin(const nrt_tensor_t *t, struct tensor_view *v)
{
    handle_lock();
    bool ok = tensor_pin_locked(t, v);
    handle_unlock();
    if (ok)
        return NRT_SUCCESS;
    LOG_ERROR("NRT", "%p is not a live tensor (freed, or never allocated)", (const void *)t);
    return NRT_INVALID;
}

void tensor_unpin(struct tensor_view *v)
{
    storage_unref(v->st);
    v->st = NULL;
}

bool tensor_is_live(const nrt_tensor_t *t)
{
    handle_lock();
    bool ok = handle_has(t, HANDLE_TENSOR);
    handle_unlock();
    return ok;
}

/* ---- data movement ----------------------------------------------------- */

NRT_STATUS tensor_read(const nrt_tensor_t *t, void *buf, size_t offset, size_t size)
{
    struct tensor_view v;
    NRT_STATUS st = tensor_pin(t, &v);
    if (st != NRT_SUCCESS)
        return st;
    uint64_t t0 = systrace_now_ns();
    st = tensor_range_check(&v, "read", offset, size, v.name);
    if (st == NRT_SUCCESS && size > 0) {
        uint64_t f = machine_mem_faults();  /* a read faults in an unbacked page too */
        memcpy(buf, v.va + offset, size);
        st = machine_mem_check(rt_machine(), f, "nrt_tensor_read");
    }
    systrace_emit(SYS_TENSOR_READ, v.vnc, t0, systrace_now_ns() - t0, v.name, size, st);
    tensor_unpin(&v);
    return st;
}

NRT_STATUS tensor_write(nrt_tensor_t *t, const void *buf, size_t offset, size_t size)
{
    struct tensor_view v;
    NRT_STATUS st = tensor_pin(t, &v);
    if (st != NRT_SUCCESS)
        return st;
    uint64_t t0 = systrace_now_ns();
    st = tensor_range_check(&v, "write", offset, size, v.name);
    if (st == NRT_SUCCESS && size > 0) {
        uint64_t f = machine_mem_faults();
        machine_mem_enter(rt_machine());
        memcpy(v.va + offset, buf, size);
        machine_mem_leave(rt_machine());
        st = machine_mem_check(rt_machine(), f, "nrt_tensor_write");
    }
    systrace_emit(SYS_TENSOR_WRITE, v.vnc, t0, systrace_now_ns() - t0, v.name, size, st);
    tensor_unpin(&v);
    return st;
}

NRT_STATUS tensor_memset(nrt_tensor_t *t, uint64_t offset, int value, size_t size)
{
    struct tensor_view v;
    NRT_STATUS st = tensor_pin(t, &v);
    if (st != NRT_SUCCESS)
        return st;
    st = tensor_range_check(&v, "memset", offset, size, v.name);
    if (st == NRT_SUCCESS && size > 0) {
        uint64_t f = machine_mem_faults();
        machine_mem_enter(rt_machine());
        memset(v.va + offset, value, size);
        machine_mem_leave(rt_machine());
        st = machine_mem_check(rt_machine(), f, "nrt_tensor_memset");
    }
    tensor_unpin(&v);
    return st;
}

/* Device-to-device copies stay on one VNC, as the vendor runtime requires. */
static NRT_STATUS tensor_copy_check(const struct tensor_view *s, const struct tensor_view *d)
{
    if (s->placement == NRT_TENSOR_PLACEMENT_DEVICE && d->placement == NRT_TENSOR_PLACEMENT_DEVICE &&
        s->vnc != d->vnc) {
        LOG_ERROR("NRT", "device-to-device copy between VNC %d and VNC %d: both tensors must be "
                  "on the same NeuronCore", s->vnc, d->vnc);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

NRT_STATUS tensor_view_range(const struct tensor_view *v, const char *what, uint64_t off,
                             uint64_t size)
{
    return tensor_range_check(v, what, off, size, v->name);
}

NRT_STATUS tensor_view_copy_ok(const struct tensor_view *s, const struct tensor_view *d)
{
    return tensor_copy_check(s, d);
}

NRT_STATUS tensor_copy(const nrt_tensor_t *src, size_t src_off, nrt_tensor_t *dst,
                       size_t dst_off, size_t size)
{
    struct tensor_view s, d;
    NRT_STATUS st = tensor_pin(src, &s);
    if (st != NRT_SUCCESS)
        return st;
    st = tensor_pin(dst, &d);
    if (st != NRT_SUCCESS) {
        tensor_unpin(&s);
        return st;
    }
    st = tensor_copy_check(&s, &d);
    if (st == NRT_SUCCESS)
        st = tensor_range_check(&s, "copy source", src_off, size, s.name);
    if (st == NRT_SUCCESS)
        st = tensor_range_check(&d, "copy destination", dst_off, size, d.name);
    if (st == NRT_SUCCESS && size > 0) {
        uint64_t f = machine_mem_faults();
        machine_mem_enter(rt_machine());
        memmove(d.va + dst_off, s.va + src_off, size);
        machine_mem_leave(rt_machine());
        st = machine_mem_check(rt_machine(), f, "nrt_tensor_copy");
    }
    systrace_emit(SYS_TENSOR_COPY, d.vnc, systrace_now_ns(), 0, d.name, size, st);
    tensor_unpin(&d);
    tensor_unpin(&s);
    return st;
}

/* Check one batch against its pinned tensor. */
static NRT_STATUS tensor_batch_check(const nrt_tensor_batch_t *b, const struct tensor_view *v,
                                     uint64_t index)
{
    if (b->num_ops > 0 && b->ops == NULL) {
        LOG_ERROR("NRT", "batch %" PRIu64 ": %u operations but ops is NULL", index, b->num_ops);
        return NRT_INVALID;
    }
    for (uint32_t i = 0; i < b->num_ops; i++) {
        const nrt_tensor_batch_op_t *op = &b->ops[i];
        if (op->size > 0 && op->buffer == NULL) {
            LOG_ERROR("NRT", "batch %" PRIu64 " op %u: buffer is NULL", index, i);
            return NRT_INVALID;
        }
        if (!tensor_range_ok(op->offset, op->size, v->size)) {
            LOG_ERROR("NRT", "batch %" PRIu64 " op %u: %" PRIu64 " bytes at offset %" PRIu64
                      " is outside the tensor (%" PRIu64 " bytes)", index, i,
                      (uint64_t)op->size, (uint64_t)op->offset, v->size);
            return NRT_INVALID;
        }
    }
    return NRT_SUCCESS;
}

static void tensor_batch_move(const nrt_tensor_batch_t *b, const struct tensor_view *v, bool write)
{
    for (uint32_t i = 0; i < b->num_ops; i++) {
        const nrt_tensor_batch_op_t *op = &b->ops[i];
        if (op->size == 0)
            continue;
        if (write)
            memcpy(v->va + op->offset, op->buffer, op->size);
        else
            memcpy(op->buffer, v->va + op->offset, op->size);
    }
}

NRT_STATUS tensor_batch(const nrt_tensor_batch_t *batches, uint64_t n, bool write)
{
    if (n > SIZE_MAX / sizeof(struct tensor_view)) {
        LOG_ERROR("NRT", "%" PRIu64 " batches is not a plausible count", n);
        return NRT_INVALID;
    }
    struct tensor_view *views = calloc(n ? n : 1, sizeof *views);
    if (views == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    NRT_STATUS st = NRT_SUCCESS;
    uint64_t pinned = 0;
    /* Validate everything first: a bad entry moves no byte at all. */
    for (; pinned < n && st == NRT_SUCCESS; pinned++) {
        st = tensor_pin(batches[pinned].tensor, &views[pinned]);
        if (st != NRT_SUCCESS)
            break;
        st = tensor_batch_check(&batches[pinned], &views[pinned], pinned);
    }
    uint64_t f = machine_mem_faults();
    if (st == NRT_SUCCESS && write)
        machine_mem_enter(rt_machine());
    for (uint64_t i = 0; st == NRT_SUCCESS && i < n; i++)
        tensor_batch_move(&batches[i], &views[i], write);
    if (st == NRT_SUCCESS && write)
        machine_mem_leave(rt_machine());
    if (st == NRT_SUCCESS)
        st = machine_mem_check(rt_machine(), f, write ? "nrt_tensor_write_batch"
                                                      : "nrt_tensor_read_batch");
    for (uint64_t i = 0; i < pinned; i++)
        tensor_unpin(&views[i]);
    free(views);
    return st;
}

/* ---- queries ----------------------------------------------------------- */

size_t tensor_size(const nrt_tensor_t *t)
{
    handle_lock();
    size_t s = handle_has(t, HANDLE_TENSOR) ? t->size : 0;
    handle_unlock();
    return s;
}

void *tensor_va(const nrt_tensor_t *t)
{
    handle_lock();
    void *va = handle_has(t, HANDLE_TENSOR) && t->st ? t->st->va + t->off : NULL;
    handle_unlock();
    return va;
}

NRT_STATUS tensor_alloc_info(const nrt_tensor_t *t, nrt_tensor_device_allocation_info_t *info)
{
    struct tensor_view v;
    NRT_STATUS st = tensor_pin(t, &v);
    if (st != NRT_SUCCESS)
        return st;
    if (v.st == NULL || v.st->kind != STORAGE_HBM) {
        LOG_ERROR("NRT", "tensor '%s' is not in device memory", v.name);
        tensor_unpin(&v);
        return NRT_INVALID;
    }
    uint64_t off = (uint64_t)(v.va - v.st->va);
    memset(info, 0, sizeof *info);
    info->physical_address = v.st->block.off + off;
    /* A whole tensor reports its (rounded) allocation; a slice its own size. */
    info->size = off == 0 && v.size == v.st->size ? v.st->block.len : v.size;
    info->hbm_index = (int)v.st->block.stack;
    tensor_unpin(&v);
    return NRT_SUCCESS;
}

/* ---- output completion ------------------------------------------------- */

static uint64_t tensor_completions(const nrt_tensor_t *t, bool *live)
{
    handle_lock();
    *live = handle_has(t, HANDLE_TENSOR);
    uint64_t c = *live ? atomic_load(&((struct nrt_tensor *)t)->completions) : 0;
    handle_unlock();
    return c;
}

static uint64_t tensor_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

NRT_STATUS tensor_completion_wait(const nrt_tensor_t *t, int64_t timeout_us, uint64_t expected)
{
    uint64_t start = tensor_now_us(), nap = 20;
    bool warned = false, live;
    for (;;) {
        uint64_t c = tensor_completions(t, &live);
        if (!live) {
            LOG_ERROR("NRT", "%p is not a live tensor", (const void *)t);
            return NRT_INVALID;
        }
        if (c >= expected)
            return NRT_SUCCESS;
        if (rt_closing()) {
            LOG_ERROR("NRT", "runtime closing while waiting for output completion %" PRIu64,
                      expected);
            return NRT_CLOSED;
        }
        uint64_t waited = tensor_now_us() - start;
        if (timeout_us >= 0 && waited >= (uint64_t)timeout_us) {  /* 0: a poll */
            LOG_ERROR("NRT", "output completion %" PRIu64 " not reached in %" PRId64 " us "
                      "(have %" PRIu64 ")", expected, timeout_us, c);
            return NRT_TIMEOUT;
        }
        if (timeout_us < 0 && !warned && waited > 30u * 1000000u) {
            LOG_WARN("NRT", "still waiting for output completion %" PRIu64 " (have %" PRIu64 ")",
                     expected, c);
            warned = true;
        }
        struct timespec ts = {0, (long)nap * 1000};
        nanosleep(&ts, NULL);
        nap = nap < 1000 ? nap * 2 : 1000;
    }
}

NRT_STATUS tensor_completion_reset(nrt_tensor_t *t)
{
    handle_lock();
    bool live = handle_has(t, HANDLE_TENSOR);
    if (live)
        atomic_store(&t->completions, 0);
    handle_unlock();
    if (!live)
        LOG_ERROR("NRT", "%p is not a live tensor", (const void *)t);
    return live ? NRT_SUCCESS : NRT_INVALID;
}

void tensor_completion_bump(nrt_tensor_t *t)
{
    handle_lock();
    if (handle_has(t, HANDLE_TENSOR))
        atomic_fetch_add(&t->completions, 1);
    handle_unlock();
}

/* ---- teardown ---------------------------------------------------------- */

void tensor_destroy_all(void)
{
    handle_lock();
    size_t n;
    void **list = handle_list(HANDLE_TENSOR, &n);
    for (size_t i = 0; i < n; i++)
        handle_remove(list[i]);
    handle_unlock();
    for (size_t i = 0; i < n; i++) {
        nrt_tensor_t *t = list[i];
        storage_unref(t->st);
        free(t);
    }
    free(list);
}

/* ---- snapshots --------------------------------------------------------- */

static int tensor_record_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct tensor_record *)a)->handle;
    uintptr_t y = (uintptr_t)((const struct tensor_record *)b)->handle;
    return x < y ? -1 : x > y;
}

NRT_STATUS tensor_records(struct tensor_record **out, size_t *n)
{
    handle_lock();
    size_t cnt;
    void **list = handle_list(HANDLE_TENSOR, &cnt);
    struct tensor_record *r = calloc(cnt ? cnt : 1, sizeof *r);
    if (list == NULL || r == NULL) {
        handle_unlock();
        free(list);
        free(r);
        return NRT_RESOURCE;
    }
    for (size_t i = 0; i < cnt; i++) {
        struct nrt_tensor *t = list[i];
        r[i] = (struct tensor_record){t, "", t->placement, t->vnc, t->off, t->size,
                                      atomic_load(&t->completions), t->st};
        memcpy(r[i].name, t->name, sizeof r[i].name);
        storage_ref(t->st);
    }
    handle_unlock();
    free(list);
    qsort(r, cnt, sizeof *r, tensor_record_cmp);
    *out = r;
    *n = cnt;
    return NRT_SUCCESS;
}

void tensor_records_free(struct tensor_record *r, size_t n)
{
    for (size_t i = 0; r != NULL && i < n; i++)
        storage_unref(r[i].st);
    free(r);
}

NRT_STATUS tensor_storage_restore(enum tensor_storage_kind kind, uint64_t size,
                                  const struct hbm_block *b, struct tensor_storage **out)
{
    if (kind != STORAGE_HBM)
        return storage_new_host(-1, size ? size : 1, out);
    struct tensor_storage *s = storage_new(STORAGE_HBM, size);
    if (s == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    NRT_STATUS st = machine_hbm_take_at(rt_machine(), b);
    if (st != NRT_SUCCESS) {
        free(s);
        return st;
    }
    s->block = *b;
    s->va = machine_hbm_va(rt_machine(), b);
    storage_charge(s, true);
    *out = s;
    return NRT_SUCCESS;
}

void tensor_storage_put(struct tensor_storage *s)
{
    storage_unref(s);
}

NRT_STATUS tensor_restore(const struct tensor_record *r, nrt_tensor_t **out)
{
    struct nrt_tensor *t = tensor_new(r->name);
    if (t == NULL) {
        LOG_ERROR("NRT", "out of memory");
        return NRT_RESOURCE;
    }
    t->placement = r->placement;
    t->vnc = r->vnc;
    t->off = r->off;
    t->size = r->size;
    atomic_store(&t->completions, r->completions);
    t->st = r->st;
    storage_ref(t->st);
    return tensor_publish(t, out);
}
