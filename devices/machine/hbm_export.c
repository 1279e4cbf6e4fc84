/*
 * hbm_export.c: dma-buf export of device memory, by moving the range into
 * a memfd of its own (see hbm_export.h for the design and its limits).
 */
#include "devices/machine/hbm_export.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "devices/machine/instance.h"
#include "emu/log.h"

/* One exported range. */
struct hbm_export {
    uint32_t chip;   /* chip whose HBM it is */
    uint64_t off;    /* page-aligned offset in the chip's HBM */
    uint64_t len;    /* bytes, whole pages */
    int memfd;       /* the memory that now holds the range */
};

static pthread_mutex_t hbm_export_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hbm_export *hbm_exports;   /* the live exports of this process */
static size_t hbm_nexports;              /* entries in use */
static size_t hbm_exports_cap;           /* entries allocated */

static _Thread_local bool hbm_export_owner; /* this thread holds hbm_export_lock */

/* hbm_export_lock, taken and dropped with its holder noted for hbm_export_held. */
static void hbm_export_lock_take(void)
{
    pthread_mutex_lock(&hbm_export_lock);
    hbm_export_owner = true;
}

static void hbm_export_lock_drop(void)
{
    assert(hbm_export_owner);
    hbm_export_owner = false;
    pthread_mutex_unlock(&hbm_export_lock);
}

/* Does this thread hold hbm_export_lock? For assert() only. */
static inline bool hbm_export_held(void)
{
    return hbm_export_owner;
}

static uint64_t hbm_page(void)
{
    return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Which chip's HBM mapping holds [va, va+len); false when none. */
static bool hbm_export_locate(const struct machine *m, uint64_t va, uint64_t len,
                              uint32_t *chip, uint64_t *off)
{
    for (uint32_t i = 0; i < m->cfg.profile->chips; i++) {
        uint64_t lo = (uint64_t)(uintptr_t)m->chips[i].hbm, size = m->chips[i].hbm_size;
        if (va >= lo && va - lo < size && len <= size - (va - lo)) {
            *chip = i;
            *off = va - lo;
            return true;
        }
    }
    return false;
}

/* The export overlapping chip [off, off+len), or NULL (lock held). */
static struct hbm_export *hbm_export_find(uint32_t chip, uint64_t off, uint64_t len)
{
    assert(hbm_export_held());
    for (size_t i = 0; i < hbm_nexports; i++) {
        struct hbm_export *e = &hbm_exports[i];
        if (e->chip == chip && off < e->off + e->len && e->off < off + len)
            return e;
    }
    return NULL;
}

/* A memfd of len bytes holding a copy of src; -1 (errno) on failure. */
static int hbm_export_copy(const uint8_t *src, uint64_t len)
{
    int fd = memfd_create("trnemu-dmabuf", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    void *p = ftruncate(fd, (off_t)len) == 0
                  ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    memcpy(p, src, len);
    munmap(p, len);
    return fd;
}

/* The chip's HBM file, opened; -1 when it cannot be. */
static int hbm_export_file(const struct machine *m, uint32_t chip, char *path, size_t cap)
{
    snprintf(path, cap, "%s/hbm%u", m->inst->dir, chip);
    return open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
}

/* Put the range's mapping on memfd, then punch the range out of the
 * chip's file, so the memfd holds the one copy. False (nothing changed)
 * when the mapping cannot be replaced. */
static bool hbm_export_move(const struct machine *m, uint32_t chip, uint64_t off, uint8_t *va,
                            uint64_t len, int memfd)
{
    if (mmap(va, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, memfd, 0) != va)
        return false;
    char path[INSTANCE_PATH_MAX + 16];
    int hfd = hbm_export_file(m, chip, path, sizeof path);
    if (hfd >= 0) {
        (void)fallocate(hfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
        close(hfd);
    }
    return true;
}

/* Remember an export (lock held); false when out of memory. */
static bool hbm_export_add(const struct hbm_export *e)
{
    assert(hbm_export_held());
    if (hbm_nexports == hbm_exports_cap) {
        size_t cap = hbm_exports_cap ? 2 * hbm_exports_cap : 8;
        struct hbm_export *n = realloc(hbm_exports, cap * sizeof *n);
        if (n == NULL)
            return false;
        hbm_exports = n;
        hbm_exports_cap = cap;
    }
    hbm_exports[hbm_nexports++] = *e;
    return true;
}

/* Make a new export of chip [off, off+len) at va (lock held). */
static NRT_STATUS hbm_export_new(const struct machine *m, uint8_t *va, uint32_t chip,
                                 uint64_t off, uint64_t len)
{
    assert(hbm_export_held());
    struct hbm_export e = {chip, off, len, hbm_export_copy(va, len)};
    if (e.memfd < 0 || !hbm_export_add(&e)) {
        LOG_ERROR("NRT", "cannot make the %" PRIu64 " bytes of a dma-buf: %s", len,
                  strerror(e.memfd < 0 ? errno : ENOMEM));
        if (e.memfd >= 0)
            close(e.memfd);
        return NRT_RESOURCE;
    }
    if (!hbm_export_move(m, chip, off, va, len, e.memfd)) {
        hbm_nexports--;   /* the range is still the chip's file, untouched */
        LOG_ERROR("NRT", "cannot map the dma-buf of 0x%" PRIxPTR " in place: %s",
                  (uintptr_t)va, strerror(errno));
        close(e.memfd);
        return NRT_RESOURCE;
    }
    return NRT_SUCCESS;
}

NRT_STATUS hbm_export(struct machine *m, uint64_t va, uint64_t size, int *fd)
{
    uint64_t pg = hbm_page(), len = (size + pg - 1) / pg * pg, off = 0;
    uint32_t chip = 0;
    if (va % pg != 0) {
        LOG_ERROR("NRT", "a dma-buf starts on a page boundary: 0x%" PRIx64 " is not one of "
                  "%" PRIu64 " bytes (device tensors of a page or more are)", va, pg);
        return NRT_INVALID;
    }
    if (!hbm_export_locate(m, va, len, &chip, &off)) {
        LOG_ERROR("NRT", "%" PRIu64 " bytes at 0x%" PRIx64 " are not inside mapped device "
                  "memory", size, va);
        return NRT_INVALID;
    }
    hbm_export_lock_take();
    struct hbm_export *e = hbm_export_find(chip, off, len);
    NRT_STATUS st = NRT_SUCCESS;
    if (e != NULL && !(e->off == off && len <= e->len)) {
        LOG_ERROR("NRT", "%" PRIu64 " bytes at 0x%" PRIx64 " overlap the dma-buf exported at "
                  "0x%" PRIxPTR " (%" PRIu64 " bytes); export the same start again or a range "
                  "beside it", size, va, (uintptr_t)m->chips[chip].hbm + e->off, e->len);
        st = NRT_INVALID;
    } else if (e == NULL) {
        st = hbm_export_new(m, (uint8_t *)(uintptr_t)va, chip, off, len);
        e = st == NRT_SUCCESS ? &hbm_exports[hbm_nexports - 1] : NULL;
    }
    int f = e != NULL ? fcntl(e->memfd, F_DUPFD_CLOEXEC, 0) : -1;
    hbm_export_lock_drop();
    if (st == NRT_SUCCESS && f < 0) {
        LOG_ERROR("NRT", "cannot make a descriptor of the dma-buf: %s", strerror(errno));
        st = NRT_RESOURCE;
    }
    if (st == NRT_SUCCESS)
        *fd = f;
    return st;
}

/* End export i: the chip's file mapped back, the bytes copied into it
 * (lock held). */
static void hbm_export_end(struct machine *m, size_t i)
{
    assert(hbm_export_held());
    struct hbm_export e = hbm_exports[i];
    uint8_t *va = m->chips[e.chip].hbm + e.off;
    char path[INSTANCE_PATH_MAX + 16];
    int hfd = hbm_export_file(m, e.chip, path, sizeof path);
    void *src = mmap(NULL, e.len, PROT_READ, MAP_SHARED, e.memfd, 0);
    bool back = hfd >= 0 && mmap(va, e.len, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_FIXED | MAP_NORESERVE, hfd, (off_t)e.off) == va;
    if (back && src != MAP_FAILED)
        memcpy(va, src, e.len);
    else
        LOG_ERROR("NRT", "the dma-buf at HBM offset %" PRIu64 " of chip %u could not go back "
                  "into %s: %s", e.off, e.chip, path, strerror(errno));
    if (src != MAP_FAILED)
        munmap(src, e.len);
    if (hfd >= 0)
        close(hfd);
    close(e.memfd);
    hbm_exports[i] = hbm_exports[--hbm_nexports];
}

void hbm_export_drop(struct machine *m, uint32_t chip, uint64_t off, uint64_t len)
{
    hbm_export_lock_take();
    for (size_t i = 0; i < hbm_nexports;) {
        const struct hbm_export *e = &hbm_exports[i];
        if (e->chip == chip && off < e->off + e->len && e->off < off + len)
            hbm_export_end(m, i);   /* moves the last entry into i */
        else
            i++;
    }
    hbm_export_lock_drop();
}

void hbm_export_drop_all(struct machine *m)
{
    hbm_export_lock_take();
    while (hbm_nexports > 0)
        hbm_export_end(m, hbm_nexports - 1);
    free(hbm_exports);
    hbm_exports = NULL;
    hbm_exports_cap = 0;
    hbm_export_lock_drop();
}
