/*
 * hbm_guard.c: SIGBUS on a sparse HBM page that the file system could not
 * back becomes a counted fault on a private page (see hbm_guard.h).
 *
 * The handler only reads the region table (atomics) and calls mmap, which
 * is a plain system call; everything else (adding, removing, mapping the
 * files back) runs outside it, under guard_lock.
 */
#include "devices/machine/hbm_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu/core/memfault.h"
#include "emu/log.h"

/* One watched mapping. */
struct guard_region {
    _Atomic uintptr_t base;   /* first byte, 0 when the slot is free */
    _Atomic uint64_t size;    /* bytes mapped */
    int fd;                   /* our copy of the file descriptor */
    _Atomic bool dirty;       /* a private page stands in somewhere in it */
};

static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER; /* add, remove, heal */
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static struct guard_region guard_regions[HBM_GUARD_MAX];
static struct sigaction guard_prev;        /* the SIGBUS action before ours */
static uintptr_t guard_page = 4096;        /* host page size */
static _Atomic uint64_t guard_faults;      /* faults caught */
static _Atomic uintptr_t guard_last;       /* address of the last one */

/* Hand a SIGBUS that is not ours to the action that was there before. */
static void guard_pass_on(int sig, siginfo_t *si, void *uc)
{
    if ((guard_prev.sa_flags & SA_SIGINFO) && guard_prev.sa_sigaction != NULL) {
        guard_prev.sa_sigaction(sig, si, uc);
        return;
    }
    if (guard_prev.sa_handler != SIG_DFL && guard_prev.sa_handler != SIG_IGN) {
        guard_prev.sa_handler(sig);
        return;
    }
    /* Default: put it back; the faulting instruction runs again and dies. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &dfl, NULL);
}

static void guard_on_sigbus(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    uintptr_t a = (uintptr_t)si->si_addr;
    for (int i = 0; i < HBM_GUARD_MAX; i++) {
        uintptr_t base = atomic_load(&guard_regions[i].base);
        if (base == 0 || a < base || a - base >= atomic_load(&guard_regions[i].size))
            continue;
        void *page = (void *)(a & ~(guard_page - 1));
        if (mmap(page, guard_page, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            break;
        atomic_store(&guard_regions[i].dirty, true);
        atomic_store(&guard_last, a);
        atomic_fetch_add(&guard_faults, 1);
        memfault_note();  /* an instruction running on this thread stops there */
        errno = saved;
        return;
    }
    errno = saved;
    guard_pass_on(sig, si, uc);
}

static void guard_install(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    if (pg > 0)
        guard_page = (uintptr_t)pg;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &guard_prev) != 0)
        LOG_WARN("TDRV", "cannot install the SIGBUS handler of the HBM guard: %s; a full "
                 "shared-memory directory will kill the process", strerror(errno));
}

bool hbm_guard_add(uint8_t *base, uint64_t size, int fd)
{
    pthread_once(&guard_once, guard_install);
    int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) {
        LOG_ERROR("TDRV", "cannot keep the HBM file descriptor for the guard: %s",
                  strerror(errno));
        return false;
    }
    pthread_mutex_lock(&guard_lock);
    for (int i = 0; i < HBM_GUARD_MAX; i++) {
        struct guard_region *r = &guard_regions[i];
        if (atomic_load(&r->base) != 0)
            continue;
        r->fd = own;
        atomic_store(&r->dirty, false);
        atomic_store(&r->size, size);
        atomic_store(&r->base, (uintptr_t)base);
        pthread_mutex_unlock(&guard_lock);
        return true;
    }
    pthread_mutex_unlock(&guard_lock);
    close(own);
    LOG_ERROR("TDRV", "the HBM guard watches %d regions already", HBM_GUARD_MAX);
    return false;
}

void hbm_guard_remove(uint8_t *base)
{
    pthread_mutex_lock(&guard_lock);
    for (int i = 0; i < HBM_GUARD_MAX; i++) {
        struct guard_region *r = &guard_regions[i];
        if (atomic_load(&r->base) != (uintptr_t)base)
            continue;
        atomic_store(&r->base, 0);
        close(r->fd);
        r->fd = -1;
    }
    pthread_mutex_unlock(&guard_lock);
}

uint64_t hbm_guard_faults(void)
{
    return atomic_load(&guard_faults);
}

/* Map region r's file again over the whole region: private pages go. */
static void guard_remap(struct guard_region *r)
{
    void *base = (void *)atomic_load(&r->base);
    uint64_t size = atomic_load(&r->size);
    atomic_store(&r->dirty, false);
    void *p = mmap(base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE | MAP_FIXED,
                   r->fd, 0);
    if (p == MAP_FAILED) {
        LOG_WARN("TDRV", "cannot map an HBM file again after a fault: %s", strerror(errno));
        atomic_store(&r->dirty, true);
        return;
    }
    (void)madvise(p, size, MADV_HUGEPAGE);
}

bool hbm_guard_heal(uint64_t since, uintptr_t *addr)
{
    if (atomic_load(&guard_faults) == since)
        return false;
    pthread_mutex_lock(&guard_lock);
    for (int i = 0; i < HBM_GUARD_MAX; i++)
        if (atomic_load(&guard_regions[i].base) != 0 && atomic_load(&guard_regions[i].dirty))
            guard_remap(&guard_regions[i]);
    pthread_mutex_unlock(&guard_lock);
    *addr = atomic_load(&guard_last);
    return true;
}
