/*
 * tbuf.c: per-thread buffers (see tbuf.h).
 *
 * A buffer is one anonymous mapping with the buffer's size in its first
 * page, so the key's destructor, which only gets the pointer, can unmap
 * it; the caller gets the address one page in.
 */
#include "emu/core/tbuf.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

static pthread_mutex_t tbuf_lock = PTHREAD_MUTEX_INITIALIZER; /* creates the keys */

static size_t tbuf_page(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096u;
}

static void tbuf_unmap(void *user)
{
    uint8_t *base = (uint8_t *)user - tbuf_page();
    munmap(base, *(size_t *)(void *)base);
}

/* Create t's key once. */
static bool tbuf_key(struct tbuf *t)
{
    pthread_mutex_lock(&tbuf_lock);
    if (!atomic_load(&t->keyed) && pthread_key_create(&t->key, tbuf_unmap) == 0)
        atomic_store(&t->keyed, true);
    bool ok = atomic_load(&t->keyed);
    pthread_mutex_unlock(&tbuf_lock);
    return ok;
}

void *tbuf_get(struct tbuf *t)
{
    if (!atomic_load(&t->keyed) && !tbuf_key(t))
        return NULL;
    void *p = pthread_getspecific(t->key);
    if (p != NULL)
        return p;
    size_t page = tbuf_page(), len = page + t->bytes;
    uint8_t *base = mmap(NULL, len, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    *(size_t *)(void *)base = len;
    if (pthread_setspecific(t->key, base + page) != 0) {
        munmap(base, len);
        return NULL;
    }
    return base + page;
}
