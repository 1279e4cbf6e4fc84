/*
 * machine.c: builds and tears down an emulated instance (see machine.h).
 */
#include "devices/machine.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emu/log.h"

/* Reserve a chip's HBM: address space only, pages appear when written. */
static NRT_STATUS machine_map_hbm(struct chip *c)
{
    void *p = mmap(NULL, c->hbm_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        LOG_ERROR("TDRV", "cannot reserve %llu GiB of address space for the HBM of chip %u",
                  (unsigned long long)(c->hbm_size >> 30), c->index);
        return NRT_RESOURCE;
    }
    /* Large tensors fault in 2 MiB at a time: far fewer (costly) faults. */
    (void)madvise(p, c->hbm_size, MADV_HUGEPAGE);
    c->hbm = p;
    return NRT_SUCCESS;
}

static NRT_STATUS machine_chip_init(struct chip *c, uint32_t index, const struct dev_profile *p)
{
    c->index = index;
    worker_init(&c->worker);
    c->hbm_size = p->hbm_per_chip;
    c->nstacks = p->hbm_stacks;
    c->stack_size = p->hbm_per_chip / p->hbm_stacks;
    for (uint32_t s = 0; s < c->nstacks; s++) {
        NRT_STATUS st = hbm_alloc_init(&c->stacks[s], c->stack_size);
        if (st != NRT_SUCCESS) {
            while (s-- > 0)
                hbm_alloc_fini(&c->stacks[s]);
            c->nstacks = 0;
            return st;
        }
    }
    return machine_map_hbm(c);
}

static void machine_chip_fini(struct chip *c)
{
    worker_fini(&c->worker);
    if (c->hbm != NULL)
        munmap(c->hbm, c->hbm_size);
    c->hbm = NULL;
    for (uint32_t s = 0; s < c->nstacks; s++)
        hbm_alloc_fini(&c->stacks[s]);
    c->nstacks = 0;
}

static void machine_vncs_init(struct machine *m)
{
    const struct dev_profile *p = m->cfg.profile;
    for (uint32_t v = 0; v < m->cfg.total_vncs; v++) {
        struct vnc_info *vi = &m->vncs[v];
        uint32_t k = v % m->cfg.vncs_per_chip;
        vi->chip = v / m->cfg.vncs_per_chip;
        vi->first_core = k * m->cfg.lnc;
        vi->stack = vi->first_core * p->hbm_stacks / p->cores_per_chip;
        atomic_store(&vi->used, 0);
        atomic_store(&vi->models, 0);
        pthread_mutex_init(&vi->exec_lock, NULL);
    }
}

NRT_STATUS machine_create(const struct machine_config *cfg, struct machine **out)
{
    struct machine *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NRT_RESOURCE;
    m->cfg = *cfg;
    uint32_t nchips = cfg->profile->chips;
    m->chips = calloc(nchips, sizeof *m->chips);
    m->vncs = calloc(cfg->total_vncs, sizeof *m->vncs);
    if (m->chips == NULL || m->vncs == NULL) {
        machine_destroy(m);
        return NRT_RESOURCE;
    }
    for (uint32_t i = 0; i < nchips; i++) {
        NRT_STATUS st = machine_chip_init(&m->chips[i], i, cfg->profile);
        if (st != NRT_SUCCESS) {
            machine_destroy(m);
            return st;
        }
    }
    machine_vncs_init(m);
    *out = m;
    return NRT_SUCCESS;
}

void machine_destroy(struct machine *m)
{
    if (m == NULL)
        return;
    if (m->chips != NULL)
        for (uint32_t i = 0; i < m->cfg.profile->chips; i++)
            machine_chip_fini(&m->chips[i]);
    free(m->chips);
    if (m->vncs != NULL)
        for (uint32_t v = 0; v < m->cfg.total_vncs; v++) {
            pthread_mutex_destroy(&m->vncs[v].exec_lock);
            for (uint32_t i = 0; i < MACHINE_MAX_LNC; i++)
                core_destroy(m->vncs[v].cores[i]);
        }
    free(m->vncs);
    free(m);
}

int machine_vnc_global(const struct machine *m, int local_vnc)
{
    if (local_vnc < 0 || (uint32_t)local_vnc >= m->cfg.visible_count)
        return -1;
    return m->cfg.visible[local_vnc];
}

NRT_STATUS machine_hbm_take(struct machine *m, uint32_t vnc, uint64_t size,
                            uint64_t align, struct hbm_block *out)
{
    struct vnc_info *vi = &m->vncs[vnc];
    struct chip *c = &m->chips[vi->chip];
    struct hbm_alloc *a = &c->stacks[vi->stack];
    uint64_t off, taken;
    NRT_STATUS st = hbm_alloc_take(a, size, align, &off, &taken);
    if (st == NRT_RESOURCE) {
        LOG_ERROR("TDRV", "failed to allocate %llu bytes on ND %u HBM %u for VNC %u: "
                  "%llu of %llu bytes in use, largest free range %llu",
                  (unsigned long long)size, vi->chip, vi->stack, vnc,
                  (unsigned long long)hbm_alloc_used(a), (unsigned long long)a->size,
                  (unsigned long long)hbm_alloc_largest_free(a));
        return st;
    }
    if (st != NRT_SUCCESS)
        return st;
    *out = (struct hbm_block){vi->chip, vi->stack, vnc,
                              (uint64_t)vi->stack * c->stack_size + off, taken};
    atomic_fetch_add(&vi->used, taken);
    return NRT_SUCCESS;
}

/* Give whole host pages inside [p, p+len) back to the kernel. */
static void machine_discard(uint8_t *p, uint64_t len)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1);
    uintptr_t hi = ((uintptr_t)p + len) & ~(pg - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void machine_hbm_give(struct machine *m, const struct hbm_block *b)
{
    struct chip *c = &m->chips[b->chip];
    machine_discard(c->hbm + b->off, b->len);
    hbm_alloc_give(&c->stacks[b->stack], b->off - (uint64_t)b->stack * c->stack_size, b->len);
    atomic_fetch_sub(&m->vncs[b->vnc].used, b->len);
}

uint8_t *machine_hbm_va(const struct machine *m, const struct hbm_block *b)
{
    return m->chips[b->chip].hbm + b->off;
}

bool machine_hbm_contains(const struct machine *m, const void *p, uint64_t len)
{
    uintptr_t a = (uintptr_t)p;
    for (uint32_t i = 0; i < m->cfg.profile->chips; i++) {
        uintptr_t lo = (uintptr_t)m->chips[i].hbm;
        if (a >= lo && a - lo <= m->chips[i].hbm_size && len <= m->chips[i].hbm_size - (a - lo))
            return true;
    }
    return false;
}

NRT_STATUS machine_vnc_core(struct machine *m, uint32_t vnc, uint32_t i, struct core **out)
{
    struct vnc_info *vi = &m->vncs[vnc];
    if (i >= MACHINE_MAX_LNC || i >= m->cfg.lnc)
        return NRT_INVALID;
    if (vi->cores[i] == NULL) {
        NRT_STATUS st = core_create((uint32_t)m->cfg.profile->gen, &vi->cores[i]);
        if (st != NRT_SUCCESS)
            return st;
    }
    *out = vi->cores[i];
    return NRT_SUCCESS;
}
