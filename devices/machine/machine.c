/*
 * machine.c: builds and tears down this process's view of an emulated
 * instance (see machine.h); the shared part is in instance.c.
 */
#include "devices/machine/machine.h"

#include <assert.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "devices/config/topology.h"
#include "devices/machine/hbm_guard.h"
#include "emu/core/memfault.h"
#include "emu/core/par.h"
#include "devices/config/status.h"
#include "emu/log.h"

static void machine_chip_init(struct chip *c, uint32_t index, const struct itype *p,
                              uint8_t *hbm)
{
    c->index = index;
    c->hbm = hbm;
    c->hbm_size = p->hbm_per_chip;
    c->nstacks = p->hbm_stacks;
    c->stack_size = p->hbm_per_chip / p->hbm_stacks;
}

static bool machine_visible(const struct machine_config *cfg, uint32_t vnc)
{
    for (uint32_t i = 0; i < cfg->visible_count; i++)
        if (cfg->visible[i] == vnc)
            return true;
    return false;
}

static NRT_STATUS machine_vncs_init(struct machine *m)
{
    for (uint32_t v = 0; v < m->cfg.total_vncs; v++) {
        struct vnc_info *vi = &m->vncs[v];
        struct vnc_slice s = instance_vnc_slice(&m->cfg, v);
        vi->chip = s.chip;
        vi->first_core = (v % m->cfg.vncs_per_chip) * m->cfg.lnc;
        vi->stack = s.stack;
        vi->slice_off = s.off;
        vi->slice_size = s.len;
        atomic_store(&vi->used, 0);
        atomic_store(&vi->models, 0);
        pthread_mutex_init(&vi->exec_lock, NULL);
        worker_init(&vi->worker);
        for (uint32_t h = 0; h + 1 < MACHINE_MAX_LNC; h++)
            worker_init(&vi->helper[h]);
    }
    for (uint32_t v = 0; v < m->cfg.total_vncs; v++) {
        struct vnc_info *vi = &m->vncs[v];
        if (!machine_visible(&m->cfg, v))
            continue;
        NRT_STATUS st = hbm_alloc_init(&vi->alloc, vi->slice_size);
        if (st != NRT_SUCCESS)
            return st;
        vi->owned = true;
    }
    return NRT_SUCCESS;
}

/* The quiesce lock prefers writers: a snapshot waits only for the
 * executions already running, not for ones that start after it asked. */
static void machine_quiesce_init(struct machine *m)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&m->quiesce, &attr);
    pthread_rwlockattr_destroy(&attr);
}

NRT_STATUS machine_create(const struct machine_config *cfg, struct machine **out)
{
    struct machine *m = calloc(1, sizeof *m);
    if (m == NULL)
        return NRT_RESOURCE;
    m->cfg = *cfg;
    machine_quiesce_init(m);
    gate_init(&m->compute, cfg->threads);
    par_configure(cfg->threads);  /* TRNEMU_THREADS bounds the split of one instruction too */
    uint32_t nchips = cfg->profile->chips;
    m->chips = calloc(nchips, sizeof *m->chips);
    m->vncs = calloc(cfg->total_vncs, sizeof *m->vncs);
    if (m->chips == NULL || m->vncs == NULL) {
        machine_destroy(m);
        return NRT_RESOURCE;
    }
    NRT_STATUS st = instance_attach(cfg, &m->inst);
    if (st != NRT_SUCCESS) {
        machine_destroy(m);
        return st;
    }
    for (uint32_t i = 0; i < nchips; i++)
        machine_chip_init(&m->chips[i], i, cfg->profile, m->inst->hbm[i]);
    st = machine_vncs_init(m);
    if (st != NRT_SUCCESS) {
        machine_destroy(m);
        return st;
    }
    *out = m;
    return NRT_SUCCESS;
}

void machine_destroy(struct machine *m)
{
    if (m == NULL)
        return;
    free(m->chips);
    if (m->vncs != NULL && m->inst != NULL)
        for (uint32_t v = 0; v < m->cfg.total_vncs; v++) {
            struct vnc_info *vi = &m->vncs[v];
            worker_fini(&vi->worker);  /* joins the thread, if it was started */
            for (uint32_t h = 0; h + 1 < MACHINE_MAX_LNC; h++)
                worker_fini(&vi->helper[h]);
            pthread_mutex_destroy(&vi->exec_lock);
            for (uint32_t i = 0; i < MACHINE_MAX_LNC; i++)
                core_destroy(vi->cores[i]);
            if (vi->owned)
                hbm_alloc_fini(&vi->alloc);
        }
    free(m->vncs);
    instance_detach(m->inst);
    gate_fini(&m->compute);
    pthread_rwlock_destroy(&m->quiesce);
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
    if (vnc >= m->cfg.total_vncs || !m->vncs[vnc].owned) {
        LOG_ERROR("TDRV", "VNC %u is not owned by this process", vnc);
        return NRT_INVALID;
    }
    struct vnc_info *vi = &m->vncs[vnc];
    struct hbm_alloc *a = &vi->alloc;
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
    *out = (struct hbm_block){vi->chip, vi->stack, vnc, vi->slice_off + off, taken};
    atomic_fetch_add(&vi->used, taken);
    return NRT_SUCCESS;
}

NRT_STATUS machine_hbm_take_at(struct machine *m, const struct hbm_block *b)
{
    const struct machine_config *cfg = &m->cfg;
    struct vnc_info *vi = b->vnc < cfg->total_vncs ? &m->vncs[b->vnc] : NULL;
    if (vi == NULL || !vi->owned || vi->chip != b->chip || vi->stack != b->stack) {
        LOG_ERROR("STORE", "HBM block on chip %u stack %u for VNC %u does not fit %s (LNC=%u) "
                  "as this process sees it", b->chip, b->stack, b->vnc, cfg->profile->name,
                  cfg->lnc);
        return NRT_INVALID;
    }
    NRT_STATUS st = b->off < vi->slice_off
                        ? NRT_INVALID
                        : hbm_alloc_take_at(&vi->alloc, b->off - vi->slice_off, b->len);
    if (st != NRT_SUCCESS) {
        LOG_ERROR("STORE", "HBM block [0x%" PRIx64 ", +%" PRIu64 ") of chip %u is outside the "
                  "memory of VNC %u or overlaps another block", b->off, b->len, b->chip, b->vnc);
        return st == NRT_RESOURCE ? st : NRT_INVALID;
    }
    atomic_fetch_add(&vi->used, b->len);
    return NRT_SUCCESS;
}

void machine_hbm_give(struct machine *m, const struct hbm_block *b)
{
    struct vnc_info *vi = &m->vncs[b->vnc];
    instance_hbm_discard(m->inst, b->chip, b->off, b->len);
    hbm_alloc_give(&vi->alloc, b->off - vi->slice_off, b->len);
    atomic_fetch_sub(&vi->used, b->len);
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

bool machine_hbm_locate(const struct machine *m, const void *p, uint64_t len, uint32_t *chip,
                        uint64_t *off)
{
    uintptr_t a = (uintptr_t)p;
    for (uint32_t i = 0; i < m->cfg.profile->chips; i++) {
        uintptr_t lo = (uintptr_t)m->chips[i].hbm;
        if (a >= lo && a - lo < m->chips[i].hbm_size && len <= m->chips[i].hbm_size - (a - lo)) {
            *chip = i;
            *off = a - lo;
            return true;
        }
    }
    return false;
}

NRT_STATUS machine_vnc_core(struct machine *m, uint32_t vnc, uint32_t i, struct core **out)
{
    struct vnc_info *vi = &m->vncs[vnc];
    if (i >= MACHINE_MAX_LNC || i >= m->cfg.lnc)
        return NRT_INVALID;
    if (vi->cores[i] == NULL) {
        NRT_STATUS st = nrt_status_of(core_create((uint32_t)m->cfg.profile->gen, &vi->cores[i]));
        if (st != NRT_SUCCESS)
            return st;
    }
    *out = vi->cores[i];
    return NRT_SUCCESS;
}

static _Thread_local bool machine_mem_in; /* this thread is between mem_enter and mem_leave */

void machine_mem_enter(struct machine *m)
{
    assert(!machine_mem_in);  /* never nested: the lock prefers writers */
    pthread_rwlock_rdlock(&m->quiesce);
    machine_mem_in = true;
}

void machine_mem_leave(struct machine *m)
{
    assert(machine_mem_in);
    machine_mem_in = false;
    pthread_rwlock_unlock(&m->quiesce);
}

uint64_t machine_mem_faults(void)
{
    return hbm_guard_faults();
}

NRT_STATUS machine_mem_check(struct machine *m, uint64_t since, const char *what)
{
    uintptr_t addr = 0;
    if (!hbm_guard_heal(since, &addr))
        return NRT_SUCCESS;
    (void)memfault_take();  /* reported here: no later instruction stops for it */
    uint32_t chip = 0;
    uint64_t off = 0;
    char space[INSTANCE_PATH_MAX + 128];
    instance_space(m->inst->dir, space, sizeof space);
    if (machine_hbm_locate(m, (const void *)addr, 1, &chip, &off))
        LOG_ERROR("TDRV", "%s failed: device memory at chip %u offset 0x%" PRIx64 " could not "
                  "be backed by the shared-memory directory (%s)", what, chip, off, space);
    else
        LOG_ERROR("TDRV", "%s failed: device memory could not be backed by the shared-memory "
                  "directory (%s)", what, space);
    return NRT_RESOURCE;
}

void machine_mem_heal(uint64_t since)
{
    uintptr_t addr;
    if (hbm_guard_heal(since, &addr))
        (void)memfault_take();
}

bool machine_mem_held(void)
{
    return machine_mem_in;
}

const char *machine_instance_dir(const struct machine *m)
{
    return m->inst->dir;
}

void machine_link_account(struct machine *m, uint32_t src_chip, uint32_t dst_chip,
                          uint64_t bytes)
{
    const struct itype *p = m->cfg.profile;
    uint32_t links[TOPO_MAX_HOPS];
    uint32_t n = topo_route(p, src_chip, dst_chip, links, TOPO_MAX_HOPS);
    uint32_t at = src_chip;
    for (uint32_t i = 0; i < n && i < TOPO_MAX_HOPS; i++) {
        uint32_t next;
        uint32_t dir = topo_hop(p, links[i], at, &next);
        instance_link_add(m->inst, links[i], dir, bytes);
        at = next;
    }
}
