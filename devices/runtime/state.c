/*
 * state.c: the runtime as the snapshot store sees it (see state.h).
 */
#include "devices/runtime/state.h"

#include <assert.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/config/env.h"
#include "devices/machine/hbm_export.h"
#include "devices/runtime/handle.h"
#include "devices/runtime/runtime.h"
#include "emu/log.h"

struct machine *state_machine(void)
{
    return rt_machine();
}

/* ---- capture ----------------------------------------------------------- */

static int state_model_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const struct state_model *)a)->m;
    uintptr_t y = (uintptr_t)((const struct state_model *)b)->m;
    return x < y ? -1 : x > y;
}

/* Every live model, pinned (a concurrent unload cannot free it). */
static NRT_STATUS state_models(struct state_view *v)
{
    handle_lock();
    size_t n;
    void **list = handle_list(HANDLE_MODEL, &n);
    if (list == NULL) {
        handle_unlock();
        return NRT_RESOURCE;
    }
    for (size_t i = 0; i < n; i++)
        atomic_fetch_add(&((nrt_model_t *)list[i])->refs, 1);
    handle_unlock();
    v->models = calloc(n ? n : 1, sizeof *v->models);
    NRT_STATUS st = v->models == NULL ? NRT_RESOURCE : NRT_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        if (st != NRT_SUCCESS) {
            model_unpin(list[i]);
            continue;
        }
        struct state_model *sm = &v->models[v->nmodels++];
        sm->m = list[i];
        sm->nblocks = model_blocks(sm->m, NULL, 0);
        sm->blocks = calloc(sm->nblocks ? sm->nblocks : 1, sizeof *sm->blocks);
        if (sm->blocks == NULL)
            st = NRT_RESOURCE;
        else
            model_blocks(sm->m, sm->blocks, sm->nblocks);
    }
    free(list);
    if (st == NRT_SUCCESS)
        qsort(v->models, v->nmodels, sizeof *v->models, state_model_cmp);
    return st;
}

NRT_STATUS state_capture(struct state_view *v)
{
    memset(v, 0, sizeof *v);
    v->mach = rt_machine();
    NRT_STATUS st = tensor_records(&v->tensors, &v->ntensors);
    if (st == NRT_SUCCESS)
        st = tensor_set_records(&v->sets, &v->nsets);
    if (st == NRT_SUCCESS)
        st = state_models(v);
    if (st != NRT_SUCCESS) {
        LOG_ERROR("NRT", "out of memory while listing the runtime's objects for a snapshot");
        state_release(v);
    }
    return st;
}

void state_release(struct state_view *v)
{
    tensor_records_free(v->tensors, v->ntensors);
    tensor_set_records_free(v->sets, v->nsets);
    for (size_t i = 0; i < v->nmodels; i++) {
        free(v->models[i].blocks);
        model_unpin(v->models[i].m);
    }
    free(v->models);
    memset(v, 0, sizeof *v);
}

/* One machine-wide lock, not every VNC's exec_lock: a trn2.48xlarge has
 * up to 128 VNCs, and holding that many mutexes at once is more than
 * ThreadSanitizer's deadlock detector can follow (64 per thread). */
void state_quiesce(struct machine *m)
{
    assert(!machine_mem_held());  /* never from inside an execution or a write */
    pthread_rwlock_wrlock(&m->quiesce);
}

void state_resume(struct machine *m)
{
    pthread_rwlock_unlock(&m->quiesce);
}

/* ---- HBM --------------------------------------------------------------- */

size_t state_hbm_ranges(struct machine *m, uint32_t chip, struct state_range *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t g = 0; g < m->cfg.total_vncs; g++) {
        struct vnc_info *vi = &m->vncs[g];
        if (!vi->owned || vi->chip != chip)
            continue;
        uint64_t high = hbm_alloc_high(&vi->alloc);
        if (high == 0)
            continue;
        if (n < cap)
            out[n] = (struct state_range){vi->slice_off, high};
        n++;
    }
    return n;
}

size_t state_hbm_slices(struct machine *m, uint32_t chip, struct state_range *out, size_t cap)
{
    size_t n = 0;
    for (uint32_t g = 0; g < m->cfg.total_vncs; g++) {
        const struct vnc_info *vi = &m->vncs[g];
        if (!vi->owned || vi->chip != chip)
            continue;
        if (n < cap)
            out[n] = (struct state_range){vi->slice_off, vi->slice_size};
        n++;
    }
    return n;
}

int state_hbm_fd(struct machine *m, uint32_t chip)
{
    const char *dir = machine_instance_dir(m);
    char path[1024];
    struct stat st;
    if (dir == NULL || chip >= m->cfg.profile->chips)
        return -1;
    hbm_export_drop(m, chip, 0, m->chips[chip].hbm_size);
    snprintf(path, sizeof path, "%s/hbm%u", dir, chip);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                    (uint64_t)st.st_size != m->chips[chip].hbm_size)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* ---- re-creation ------------------------------------------------------- */

bool state_is_fresh(struct machine *m)
{
    handle_lock();
    size_t t = handle_count(HANDLE_TENSOR), mo = handle_count(HANDLE_MODEL);
    handle_unlock();
    uint64_t used = 0;
    struct state_range r;
    for (uint32_t c = 0; c < m->cfg.profile->chips; c++)
        used += state_hbm_ranges(m, c, &r, 1);
    if (t == 0 && mo == 0 && used == 0)
        return true;
    LOG_ERROR("STORE", "a snapshot restores into a fresh runtime (right after nrt_init); this one "
              "holds %zu tensors and %zu models%s", t, mo,
              used ? " and has handed out device memory" : "");
    return false;
}

NRT_STATUS state_model_restore(const void *neff, size_t size, int vnc,
                               const struct hbm_block *blocks, size_t nblocks,
                               uint64_t executions, nrt_model_t **out)
{
    NRT_STATUS st = model_load_placed(neff, size, vnc, blocks, nblocks, out);
    if (st == NRT_SUCCESS)
        atomic_store(&(*out)->executions, executions);
    return st;
}

struct core *state_core_peek(struct machine *m, uint32_t gvnc, uint32_t i)
{
    if (gvnc >= m->cfg.total_vncs || i >= MACHINE_MAX_LNC)
        return NULL;
    return m->vncs[gvnc].cores[i];
}

NRT_STATUS state_core_make(struct machine *m, uint32_t gvnc, uint32_t i, struct core **out)
{
    if (gvnc >= m->cfg.total_vncs) {
        LOG_ERROR("STORE", "VNC %u is outside the machine (%u VNCs)", gvnc, m->cfg.total_vncs);
        return NRT_INVALID;
    }
    NRT_STATUS st = machine_vnc_core(m, gvnc, i, out);
    if (st == NRT_INVALID)
        LOG_ERROR("STORE", "VNC %u has no physical core %u at LNC=%u", gvnc, i, m->cfg.lnc);
    return st;
}

NRT_STATUS state_enter(void)
{
    return rt_enter();
}

bool state_held(void)
{
    return rt_held();
}

void state_leave(void)
{
    rt_leave();
}

bool state_is_live(const void *obj, enum handle_kind k)
{
    handle_lock();
    bool live = handle_has(obj, k);
    handle_unlock();
    return live;
}

/* ---- calls a restore makes, forwarded ---------------------------------- */

int state_vnc_global(const struct machine *m, int local_vnc)
{
    return machine_vnc_global(m, local_vnc);
}

void state_model_set_collectives(nrt_model_t *m, uint32_t rank, uint32_t world)
{
    model_set_collectives(m, rank, world);
}

NRT_STATUS state_model_unload(nrt_model_t *m)
{
    return model_unload(m);
}

NRT_STATUS state_storage_restore(enum tensor_storage_kind kind, uint64_t size,
                                 const struct hbm_block *b, struct tensor_storage **out)
{
    return tensor_storage_restore(kind, size, b, out);
}

void state_storage_put(struct tensor_storage *s)
{
    tensor_storage_put(s);
}

NRT_STATUS state_tensor_restore(const struct tensor_record *r, nrt_tensor_t **out)
{
    return tensor_restore(r, out);
}

bool state_tensor_free(nrt_tensor_t *t)
{
    return tensor_free(t);
}

NRT_STATUS state_set_allocate(nrt_tensor_set_t **out)
{
    return tensor_set_allocate(out);
}

bool state_set_destroy(nrt_tensor_set_t *s)
{
    return tensor_set_destroy(s);
}

NRT_STATUS state_set_restore_entry(nrt_tensor_set_t *s, const char *name,
                                   nrt_tensor_t *t)
{
    return tensor_set_restore_entry(s, name, t);
}

NRT_STATUS state_env_uint(const char *name, uint64_t min, uint64_t max, uint64_t def,
                          uint64_t *out)
{
    return env_read_uint(name, min, max, def, out);
}
