/*
 * coll.c: communicators: the shared file of a job's collectives, joining
 * and leaving it, fault detection, and the checked entry point coll_run
 * (see coll.h; the operations themselves are in coll_algo.c).
 *
 * Joining, under flock() of the file: a file with no live holder is
 * (re)made empty, with the ring sizes of the process that makes it; the
 * rank's slot is taken (waiting while another live process holds it);
 * when every slot is held by a live process waiting to start, the joiner
 * opens a new formation: it empties every channel, clears the abort word,
 * stamps every slot with the formation number and rings the formation
 * bell. A rank waits for its slot to be stamped. Leaving frees the slot;
 * the last one out truncates the file, which gives its pages back.
 */
#include "devices/config/env.h"
#include "devices/coll/coll_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devices/machine/instance.h"
#include "devices/thread/spin.h"
#include "emu/log.h"
#include "emu/num/numerics.h"

#define COLL_RING_CAP_DEFAULT (1u << 20)   /* ring channel r -> r+1 */
#define COLL_MESH_MAX_DEFAULT (64u << 10)  /* largest mesh all-reduce / all-gather */
#define COLL_SPIN_US_DEFAULT 20.0  /* busy-poll window with a CPU per rank, us */
#define COLL_SPIN_US_CROWDED 1.0   /* ... with more ranks than CPUs */
#define COLL_PEERS_FULL_NS 10000000ull /* prepare: /proc read at most every 10 ms */
#define COLL_FILE_CHECK_NS 10000000ull /* the file's identity stat()ed at most every 10 ms */
#define COLL_DIRECT_MIN_DEFAULT (256u << 10) /* smallest direct collective in HBM */
#define COLL_HELD_WAIT_NS (5ull * 1000000000ull) /* wait for a slot held by a live process */

static pthread_mutex_t coll_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct coll_comm *coll_reg;          /* every communicator of the process */

static _Thread_local bool coll_reg_owner; /* this thread holds coll_reg_lock */

/* coll_reg_lock, taken and dropped with its holder noted for coll_reg_held. */
static void coll_reg_lock_take(void)
{
    pthread_mutex_lock(&coll_reg_lock);
    coll_reg_owner = true;
}

static void coll_reg_lock_drop(void)
{
    assert(coll_reg_owner);
    coll_reg_owner = false;
    pthread_mutex_unlock(&coll_reg_lock);
}

/* Does this thread hold coll_reg_lock? For assert() only. */
static inline bool coll_reg_held(void)
{
    return coll_reg_owner;
}

/* ---- small helpers ---------------------------------------------------------- */

static uint64_t coll_align(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

/* FNV-1a 64 of the job id: the file name part that tells jobs apart. */
static void coll_job_key(char *key, size_t cap)
{
    const char *id = getenv("NEURON_RT_ROOT_COMM_ID");
    if (id == NULL || *id == '\0')
        id = "default";
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = id; *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    snprintf(key, cap, "%016" PRIx64, h);
}

static uint64_t coll_pow2_kib(const char *env, uint64_t def)
{
    uint64_t kib, cap = CHAN_MIN_CAP;
    if (env_read_uint(env, 1, 1048576, 0, &kib) != NRT_SUCCESS || kib == 0)
        return def;
    while (cap < kib * 1024 && cap < (1ull << 30))
        cap <<= 1;
    return cap;
}

/* Ring sizes for a new file: TRNEMU_COLL_RING_KIB / TRNEMU_COLL_MESH_KIB,
 * else 1 MiB rings and mesh channels that shrink as ranks grow. */
static void coll_caps(uint32_t world, uint64_t *ring, uint64_t *mesh)
{
    uint64_t m = world <= 4 ? 256u << 10 : world <= 16 ? 128u << 10 : world <= 32 ? 64u << 10
                                                                                   : 32u << 10;
    *ring = coll_pow2_kib("TRNEMU_COLL_RING_KIB", COLL_RING_CAP_DEFAULT);
    *mesh = coll_pow2_kib("TRNEMU_COLL_MESH_KIB", m);
}

/* When the mesh algorithms run (the same for every rank: kept in the file):
 * up to TRNEMU_COLL_MESH_MAX bytes (64 KiB) and, since every rank of a mesh
 * works at once, only while there is a CPU per rank (always for 2 ranks;
 * TRNEMU_COLL_MESH_RANKS overrides). Measured: docs/collectives.md. */
static void coll_mesh_policy(uint64_t *max_bytes, uint32_t *max_ranks)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t ranks;
    (void)env_read_uint("TRNEMU_COLL_MESH_MAX", 0, UINT64_MAX, COLL_MESH_MAX_DEFAULT, max_bytes);
    (void)env_read_uint("TRNEMU_COLL_MESH_RANKS", 0, 65535, cpus > 2 ? (uint64_t)cpus : 2,
                        &ranks);
    *max_ranks = (uint32_t)ranks;
}

/* The busy-poll window of this process's waits: TRNEMU_COLL_SPIN_US
 * microseconds (0 .. 10000), else COLL_SPIN_US_DEFAULT when every rank can
 * have a CPU of its own and COLL_SPIN_US_CROWDED when not (a poller then
 * holds a CPU a partner needs). Per process: no rank depends on another's. */
static uint32_t coll_spin_ns(uint32_t world)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    double us = (long)world <= cpus ? COLL_SPIN_US_DEFAULT : COLL_SPIN_US_CROWDED;
    return spin_window_ns("TRNEMU_COLL_SPIN_US", "NCCL", us);
}

static void coll_layout_make(uint32_t world, uint64_t ring_cap, uint64_t mesh_cap,
                             struct coll_layout *l)
{
    l->slots = coll_align(sizeof(struct coll_ctl), 64);
    l->bells = l->slots + (uint64_t)world * sizeof(struct coll_slot);
    l->posts = l->bells + (uint64_t)world * sizeof(struct chan_bell);
    l->rings = coll_align(l->posts + (uint64_t)world * sizeof(struct coll_post), 4096);
    l->ring_stride = coll_align(chan_shm_bytes(ring_cap), 4096);
    l->mesh = l->rings + (uint64_t)world * l->ring_stride;
    l->mesh_stride = coll_align(chan_shm_bytes(mesh_cap), 4096);
    l->total = l->mesh + (uint64_t)world * world * l->mesh_stride;
}

/* ---- the shared file ------------------------------------------------------------ */

static void coll_flock(int fd, int op)
{
    while (flock(fd, op) != 0 && errno == EINTR)
        ;
}

static bool coll_slot_live(const struct coll_slot *s)
{
    int32_t pid = atomic_load(&s->pid);
    return pid != 0 && instance_pid_alive(pid, s->start_time);
}

/* ---- one mapping per file and process --------------------------------------------
 * Ranks of one job that are threads of one process share a single mapping
 * of the file: they then touch the same addresses, as their atomics and
 * channel bytes really are shared (with a mapping per rank ThreadSanitizer
 * could not tell, and every rank would pay for its own page tables). */

/* A mapping of a shared file, with the communicators that use it. */
struct coll_mapping {
    struct coll_mapping *next; /* list of the process's mappings */
    dev_t dev;                 /* the file's device ... */
    ino_t ino;                 /* ... and inode */
    uint64_t bytes;            /* bytes mapped */
    uint8_t *p;                /* the mapping */
    uint32_t users;            /* communicators using it */
};

static pthread_mutex_t coll_map_lock = PTHREAD_MUTEX_INITIALIZER; /* guards coll_maps */
static struct coll_mapping *coll_maps;  /* every mapping of the process */

/* The process's mapping of c's file at that size, made on first use. */
static uint8_t *coll_mapping_get(const struct coll_comm *c, uint64_t bytes)
{
    pthread_mutex_lock(&coll_map_lock);
    struct coll_mapping *mp = coll_maps;
    while (mp != NULL && !(mp->dev == c->dev && mp->ino == c->ino && mp->bytes == bytes))
        mp = mp->next;
    if (mp == NULL && (mp = calloc(1, sizeof *mp)) != NULL) {
        void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
        if (p == MAP_FAILED) {
            free(mp);
            mp = NULL;
        } else {
            *mp = (struct coll_mapping){coll_maps, c->dev, c->ino, bytes, p, 0};
            coll_maps = mp;
        }
    }
    if (mp != NULL)
        mp->users++;
    pthread_mutex_unlock(&coll_map_lock);
    return mp != NULL ? mp->p : NULL;
}

/* Drop one use of the mapping at p; the last user unmaps it. */
static void coll_mapping_put(uint8_t *p)
{
    pthread_mutex_lock(&coll_map_lock);
    struct coll_mapping **pp = &coll_maps;
    while (*pp != NULL && (*pp)->p != p)
        pp = &(*pp)->next;
    struct coll_mapping *mp = *pp;
    if (mp != NULL && --mp->users == 0) {
        *pp = mp->next;
        munmap(mp->p, mp->bytes);
        free(mp);
    }
    pthread_mutex_unlock(&coll_map_lock);
}

static void coll_unmap(struct coll_comm *c)
{
    if (c->map != NULL)
        coll_mapping_put(c->map);
    c->map = NULL;
    c->ctl = NULL;
}

static NRT_STATUS coll_map(struct coll_comm *c, uint64_t bytes)
{
    uint8_t *p = coll_mapping_get(c, bytes);
    if (p == NULL) {
        LOG_ERROR("NCCL", "cannot map %" PRIu64 " bytes of %s: %s", bytes, c->path,
                  strerror(errno));
        return NRT_RESOURCE;
    }
    c->map = p;
    c->map_bytes = bytes;
    c->ctl = (struct coll_ctl *)p;
    c->slots = (struct coll_slot *)(c->map + c->lay.slots);
    c->bells = (struct chan_bell *)(c->map + c->lay.bells);
    c->posts = (struct coll_post *)(c->map + c->lay.posts);
    return NRT_SUCCESS;
}

/* Make the file afresh (no live holder): empty, then the new size and header. */
static NRT_STATUS coll_file_make(struct coll_comm *c)
{
    uint64_t ring, mesh;
    coll_caps(c->world, &ring, &mesh);
    coll_layout_make(c->world, ring, mesh, &c->lay);
    if (ftruncate(c->fd, 0) != 0) {
        LOG_ERROR("NCCL", "cannot empty %s: %s", c->path, strerror(errno));
        return NRT_RESOURCE;
    }
    /* Every byte reserved: the channels are written through the mapping,
     * where a full directory would be a SIGBUS, not a status. */
    if (!instance_reserve(c->fd, c->lay.total, c->path, "the collective channels"))
        return NRT_RESOURCE;
    struct coll_ctl h = {COLL_FILE_MAGIC, COLL_FILE_VERSION, c->world, ring, mesh,
                         c->lay.total, 0, 0, 0, 0, 0, 0, 0, 0, 0, {0}};
    coll_mesh_policy(&h.mesh_max, &h.mesh_ranks);
    h.switched = c->m->cfg.profile->links == DEV_LINKS_SWITCH;
    uint64_t dm;
    (void)env_read_uint("TRNEMU_COLL_DIRECT_MIN", 0, UINT64_MAX, COLL_DIRECT_MIN_DEFAULT, &dm);
    h.direct_min = dm;
    if (pwrite(c->fd, &h, sizeof h, 0) != (ssize_t)sizeof h) {
        LOG_ERROR("NCCL", "cannot write %s: %s", c->path, strerror(errno));
        return NRT_RESOURCE;
    }
    return coll_map(c, c->lay.total);
}

/* Does the header describe a usable file for this world? */
static bool coll_header_ok(const struct coll_comm *c, const struct coll_ctl *h, uint64_t size)
{
    return h->magic == COLL_FILE_MAGIC && h->version == COLL_FILE_VERSION &&
           h->world == c->world && chan_cap_ok(h->ring_cap) && chan_cap_ok(h->mesh_cap) &&
           h->file_bytes == size;
}

/* Map the file, making it afresh when it is new, corrupt or abandoned. */
static NRT_STATUS coll_file_open(struct coll_comm *c)
{
    struct coll_ctl h;
    struct stat sb;
    if (fstat(c->fd, &sb) != 0)
        return NRT_RESOURCE;
    if (pread(c->fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
        !coll_header_ok(c, &h, (uint64_t)sb.st_size))
        return coll_file_make(c);
    coll_layout_make(c->world, h.ring_cap, h.mesh_cap, &c->lay);
    if (c->lay.total != h.file_bytes)
        return coll_file_make(c);
    NRT_STATUS st = coll_map(c, c->lay.total);
    if (st != NRT_SUCCESS)
        return st;
    for (uint32_t r = 0; r < c->world; r++)
        if (coll_slot_live(&c->slots[r]))
            return NRT_SUCCESS;
    coll_unmap(c);
    return coll_file_make(c);
}

/* Every slot held by a live process waiting to start? Then open a formation. */
static void coll_try_form(struct coll_comm *c)
{
    for (uint32_t r = 0; r < c->world; r++)
        if (!coll_net_remote(c, r) &&
            (!coll_slot_live(&c->slots[r]) || atomic_load(&c->slots[r].form) != 0))
            return;
    uint64_t form = atomic_load(&c->ctl->form) + 1;
    for (uint32_t i = 0; i < c->world; i++) {
        atomic_store(&c->bells[i].sleepers, 0);  /* a dead sleeper leaves a count behind */
        for (uint32_t j = 0; j < c->world; j++) {
            uint64_t cap;
            if (i != j)
                chan_reset(coll_chan_shm(c, i, j, &cap));
        }
    }
    for (uint32_t r = 0; r < c->world; r++) {
        atomic_store(&c->posts[r].seq, 0);
        atomic_store(&c->posts[r].stage, 0);
    }
    atomic_store(&c->ctl->abort_status, 0);
    atomic_store(&c->ctl->abort_rank, 0);
    atomic_store(&c->ctl->abort_by, 0);
    for (uint32_t r = 0; r < c->world; r++)
        atomic_store(&c->slots[r].form, form);
    atomic_store(&c->ctl->form, form);
    chan_bell_ring(&c->ctl->form_bell);
}

/* Take this rank's slot; *taken false (and the holder's pid) when another
 * live process holds it. */
static void coll_take_slot(struct coll_comm *c, bool *taken, int32_t *holder)
{
    struct coll_slot *s = &c->slots[c->rank];
    int32_t pid = atomic_load(&s->pid);
    *holder = pid;
    if (pid != 0 && pid != (int32_t)getpid() && coll_slot_live(s)) {
        *taken = false;
        return;
    }
    atomic_store(&s->pid, 0);
    s->gvnc = c->gvnc;
    s->chip = c->chip;
    s->start_time = instance_self_start_time();
    atomic_store(&s->form, 0);
    atomic_store(&s->pid, (int32_t)getpid());
    *taken = true;
}

/* Free this rank's slot if it is still ours; the last one out empties the file. */
static void coll_leave_slot(struct coll_comm *c)
{
    struct coll_slot *s = &c->slots[c->rank];
    if (atomic_load(&s->pid) == (int32_t)getpid() &&
        (c->form == 0 || atomic_load(&s->form) == c->form || atomic_load(&s->form) == 0)) {
        atomic_store(&s->form, 0);
        atomic_store(&s->pid, 0);
    }
    for (uint32_t r = 0; r < c->world; r++)
        if (coll_slot_live(&c->slots[r]))
            return;
    if (ftruncate(c->fd, 0) != 0)
        LOG_WARN("NCCL", "cannot empty %s: %s", c->path, strerror(errno));
}

/* Log the ranks that have not joined. */
static void coll_log_missing(struct coll_comm *c, double secs)
{
    char list[256];
    size_t len = 0;
    list[0] = '\0';
    for (uint32_t r = 0; r < c->world && len + 16 < sizeof list; r++)
        if (!coll_net_remote(c, r) &&
            (!coll_slot_live(&c->slots[r]) || atomic_load(&c->slots[r].form) != 0))
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%u", len ? ", " : "", r);
    LOG_ERROR("NCCL", "rank %u: the %u-rank communicator did not form within %.1f s: rank(s) "
              "%s did not join (NEURON_RT_EXEC_TIMEOUT / TRNEMU_COLL_TIMEOUT)", c->rank,
              c->world, secs, list);
}

/* Join: take the slot (under the file lock) and wait for the formation. */
static NRT_STATUS coll_join(struct coll_comm *c, uint64_t deadline_ns)
{
    uint64_t start = spin_now_ns();
    for (;;) {
        coll_flock(c->fd, LOCK_EX);
        NRT_STATUS st = coll_file_open(c);
        bool taken = false;
        int32_t holder = 0;
        if (st == NRT_SUCCESS) {
            coll_take_slot(c, &taken, &holder);
            if (taken)
                coll_try_form(c);
            else
                coll_unmap(c);
        }
        coll_flock(c->fd, LOCK_UN);
        if (st != NRT_SUCCESS)
            return st;
        if (taken)
            break;
        uint64_t now = spin_now_ns();
        if (now >= deadline_ns || now - start > COLL_HELD_WAIT_NS) {
            LOG_ERROR("NCCL", "rank %u of a %u-rank communicator is held by live process %d: "
                      "another job with the same NEURON_RT_ROOT_COMM_ID? (give each job its own)",
                      c->rank, c->world, (int)holder);
            return NRT_INVALID;
        }
        usleep(20000);
    }
    struct chan_waiter w = {&c->ctl->form_bell, deadline_ns, 0, 50, NULL, NULL, 0};
    for (;;) {
        uint32_t seen = chan_bell_seen(&c->ctl->form_bell);
        uint64_t form = atomic_load(&c->slots[c->rank].form);
        if (form != 0) {
            c->form = form;
            return NRT_SUCCESS;
        }
        if (chan_wait(&w, seen) == NRT_TIMEOUT) {
            coll_log_missing(c, (double)(spin_now_ns() - start) / 1e9);
            coll_flock(c->fd, LOCK_EX);
            coll_leave_slot(c);
            coll_flock(c->fd, LOCK_UN);
            coll_unmap(c);  /* the file may be emptied now: touch it no more */
            return NRT_TIMEOUT;
        }
    }
}

/* After the formation: peers' identities and this rank's channel ends. */
static NRT_STATUS coll_attach_channels(struct coll_comm *c)
{
    uint32_t n = c->world;
    c->tx = calloc(n, sizeof *c->tx);
    c->rx = calloc(n, sizeof *c->rx);
    c->chip_of = calloc(n, sizeof *c->chip_of);
    c->pid_of = calloc(n, sizeof *c->pid_of);
    c->start_of = calloc(n, sizeof *c->start_of);
    c->all = calloc(n, sizeof *c->all);
    if (!c->tx || !c->rx || !c->chip_of || !c->pid_of || !c->start_of || !c->all)
        return NRT_RESOURCE;
    for (uint32_t r = 0; r < n; r++) {
        c->all[r] = r;
        c->chip_of[r] = c->slots[r].chip;
        c->pid_of[r] = atomic_load(&c->slots[r].pid);
        c->start_of[r] = c->slots[r].start_time;
        if (r == c->rank)
            continue;
        if (coll_net_remote(c, r)) {
            coll_net_attach(c, r);
            continue;
        }
        uint64_t cap;
        uint8_t *shm = coll_chan_shm(c, c->rank, r, &cap);
        chan_attach(&c->tx[r], shm, cap, &c->bells[r], &c->bells[c->rank]);
        shm = coll_chan_shm(c, r, c->rank, &cap);
        chan_attach(&c->rx[r], shm, cap, &c->bells[c->rank], &c->bells[r]);
    }
    c->spin_ns = coll_spin_ns(n);
    return NRT_SUCCESS;
}

static void coll_comm_free(struct coll_comm *c)
{
    if (c == NULL)
        return;
    coll_net_close(c);  /* hands over what is still to send, then says goodbye */
    if (c->ctl != NULL && c->fd >= 0) {
        coll_flock(c->fd, LOCK_EX);
        coll_leave_slot(c);
        coll_flock(c->fd, LOCK_UN);
    }
    coll_unmap(c);
    if (c->fd >= 0)
        close(c->fd);
    free(c->tx);
    free(c->rx);
    free(c->chip_of);
    free(c->pid_of);
    free(c->start_of);
    free(c->all);
    free(c->scratch);
    free(c->xf);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* Open (creating) the file of (job, world) in the instance directory. */
static NRT_STATUS coll_comm_open(struct coll_comm *c)
{
    const char *dir = machine_instance_dir(c->m);
    if (dir == NULL || snprintf(c->path, sizeof c->path, "%s/coll-%s-w%u", dir, c->key,
                                c->world) >= (int)sizeof c->path) {
        LOG_ERROR("NCCL", "no instance directory for the collectives' files");
        return NRT_INVALID;
    }
    c->fd = open(c->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    struct stat sb;
    if (c->fd < 0 || fstat(c->fd, &sb) != 0) {
        LOG_ERROR("NCCL", "cannot open %s: %s", c->path, strerror(errno));
        return NRT_RESOURCE;
    }
    c->dev = sb.st_dev;
    c->ino = sb.st_ino;
    return NRT_SUCCESS;
}

static NRT_STATUS coll_comm_make(struct machine *m, uint32_t gvnc, uint32_t rank,
                                 uint32_t world, uint64_t deadline_ns, struct coll_comm **out)
{
    struct coll_comm *c = calloc(1, sizeof *c);
    if (c == NULL)
        return NRT_RESOURCE;
    c->fd = -1;
    c->m = m;
    c->world = world;
    c->rank = rank;
    c->gvnc = gvnc;
    c->chip = m->vncs[gvnc].chip;
    c->broken = NRT_SUCCESS;
    pthread_mutex_init(&c->lock, NULL);
    coll_job_key(c->key, sizeof c->key);
    uint64_t ring, mesh;
    coll_caps(world, &ring, &mesh);
    NRT_STATUS st = coll_comm_open(c);
    if (st == NRT_SUCCESS)
        st = coll_net_boot(c, ring, mesh, deadline_ns);
    if (st == NRT_SUCCESS)
        st = coll_join(c, deadline_ns);
    if (st == NRT_SUCCESS)
        st = coll_attach_channels(c);
    if (st == NRT_SUCCESS && c->net != NULL)
        st = coll_net_start(c, coll_deadline());
    if (st != NRT_SUCCESS) {
        coll_comm_free(c);
        return st;
    }
    LOG_INFO("NCCL", "rank %u of %u joined (VNC %u, chip %u, formation %" PRIu64 ", %s)", rank,
             world, gvnc, c->chip, c->form, c->path);
    *out = c;
    return NRT_SUCCESS;
}

/* Is c still the communicator of its file on this machine? The path is
 * looked up again at most every COLL_FILE_CHECK_NS (a path lookup is
 * microseconds, paid twice per operation otherwise): while c holds its
 * slot nobody remakes the file, only an outside unlink replaces it, and
 * nrt_close drops every communicator. coll_reg_lock held. */
static bool coll_comm_current(struct coll_comm *c, const struct machine *m)
{
    assert(coll_reg_held());
    if (c->m != m)
        return false;
    uint64_t now = spin_now_ns();
    if (c->file_seen_ns != 0 && now - c->file_seen_ns < COLL_FILE_CHECK_NS)
        return true;
    struct stat sb;
    bool same = stat(c->path, &sb) == 0 && sb.st_dev == c->dev && sb.st_ino == c->ino;
    c->file_seen_ns = same ? now : 0;
    return same;
}

NRT_STATUS coll_comm_peers_check(struct machine *m, uint32_t rank, uint32_t world)
{
    char key[64];
    coll_job_key(key, sizeof key);
    NRT_STATUS st = NRT_SUCCESS;
    coll_reg_lock_take();
    for (struct coll_comm *c = coll_reg; c != NULL && st == NRT_SUCCESS; c = c->next) {
        if (c->world != world || c->rank != rank || strcmp(c->key, key) != 0 ||
            !coll_comm_current(c, m))
            continue;
        /* the full check reads /proc for every peer: at most once per
         * COLL_PEERS_FULL_NS; in between, the slot and kill(pid, 0) (a peer
         * that left or whose pid is gone); a collective's own waits catch
         * the rest (an unreaped process) */
        uint64_t now = spin_now_ns();
        bool full = now - c->peers_full_ns >= COLL_PEERS_FULL_NS;
        if (full)
            c->peers_full_ns = now;
        for (uint32_t r = 0; r < world; r++)
            if (r != rank && !coll_rank_alive(c, r, full)) {
                /* break the communicator for every rank, as a collective that
                 * met the missing rank would, so that none of them goes on to
                 * a collective the others are not in */
                st = coll_missing(c, r);
                break;
            }
    }
    coll_reg_lock_drop();
    return st;
}

NRT_STATUS coll_comm_get(struct machine *m, uint32_t gvnc, uint32_t rank, uint32_t world,
                         uint64_t deadline_ns, struct coll_comm **out)
{
    if (world == 0 || world > COLL_MAX_RANKS || rank >= world) {
        LOG_ERROR("NCCL", "rank %u of %u ranks: need 0 <= rank < ranks <= %u", rank, world,
                  COLL_MAX_RANKS);
        return NRT_INVALID;
    }
    char key[64];
    coll_job_key(key, sizeof key);
    coll_reg_lock_take();
    struct coll_comm **pp = &coll_reg;
    while (*pp != NULL) {
        struct coll_comm *c = *pp;
        if (c->world == world && c->rank == rank && strcmp(c->key, key) == 0) {
            if (coll_comm_current(c, m)) {
                coll_reg_lock_drop();
                *out = c;
                return NRT_SUCCESS;
            }
            *pp = c->next;  /* from an earlier runtime session: leave it */
            coll_comm_free(c);
            continue;
        }
        pp = &c->next;
    }
    coll_reg_lock_drop();
    /* Join outside the registry lock: other ranks of this process may join
     * their own communicators at the same time. */
    struct coll_comm *c;
    NRT_STATUS st = coll_comm_make(m, gvnc, rank, world, deadline_ns, &c);
    if (st != NRT_SUCCESS)
        return st;
    coll_reg_lock_take();
    c->next = coll_reg;
    coll_reg = c;
    coll_reg_lock_drop();
    *out = c;
    return NRT_SUCCESS;
}

struct coll_comm *coll_comm_of_vnc(struct machine *m, uint32_t gvnc)
{
    coll_reg_lock_take();
    struct coll_comm *c = coll_reg;
    while (c != NULL && !(c->m == m && c->gvnc == gvnc))
        c = c->next;
    coll_reg_lock_drop();
    return c;
}

uint32_t coll_comm_rank(const struct coll_comm *c)
{
    return c->rank;
}

uint32_t coll_comm_world(const struct coll_comm *c)
{
    return c->world;
}

void coll_comm_release_all(void)
{
    coll_reg_lock_take();
    struct coll_comm *c = coll_reg;
    coll_reg = NULL;
    coll_reg_lock_drop();
    while (c != NULL) {
        struct coll_comm *next = c->next;
        coll_comm_free(c);
        c = next;
    }
}

/* ---- running an operation ------------------------------------------------------- */

/* Sequence number of the next operation in a group (hash of its members). */
static uint32_t coll_next_seq(struct coll_comm *c, const uint32_t *g, uint32_t n)
{
    uint64_t key = 0xcbf29ce484222325ull ^ n;
    for (uint32_t i = 0; i < n; i++)
        key = (key ^ g[i]) * 0x100000001b3ull;
    key |= 1;  /* never 0, the free mark */
    struct coll_group_seq *free_slot = NULL;
    for (uint32_t i = 0; i < COLL_MAX_GROUPS; i++) {
        if (c->groups[i].key == key)
            return ++c->groups[i].seq;
        if (c->groups[i].key == 0 && free_slot == NULL)
            free_slot = &c->groups[i];
    }
    if (free_slot == NULL)
        free_slot = &c->groups[key % COLL_MAX_GROUPS];  /* evict: numbers restart */
    free_slot->key = key;
    free_slot->seq = 1;
    return 1;
}

/* Check a group: members distinct and below world; this rank's position. */
static NRT_STATUS coll_group_check(const struct coll_comm *c, const uint32_t *g, uint32_t n,
                                   uint32_t *me)
{
    *me = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        if (g[i] >= c->world) {
            LOG_ERROR("NCCL", "replica group entry %u is rank %u; the communicator has %u",
                      i, g[i], c->world);
            return NRT_INVALID;
        }
        for (uint32_t j = 0; j < i; j++)
            if (g[j] == g[i]) {
                LOG_ERROR("NCCL", "replica group names rank %u twice", g[i]);
                return NRT_INVALID;
            }
        if (g[i] == c->rank)
            *me = i;
    }
    if (*me == UINT32_MAX) {
        LOG_ERROR("NCCL", "rank %u is not in the replica group of %u ranks", c->rank, n);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

static NRT_STATUS coll_args_check(const struct coll_args *a, uint32_t n, uint32_t me)
{
    bool reduce = a->kind == CORE_COLL_ALL_REDUCE || a->kind == CORE_COLL_REDUCE_SCATTER;
    if (a->kind < CORE_COLL_ALL_REDUCE || a->kind > CORE_COLL_BARRIER) {
        LOG_ERROR("NCCL", "unknown collective kind %d", (int)a->kind);
        return NRT_INVALID;
    }
    if (a->kind == CORE_COLL_BARRIER)
        return NRT_SUCCESS;
    if (!coll_dtype_ok(a->dtype) || (reduce && !coll_op_ok(a->op))) {
        LOG_ERROR("NCCL", "%s: dtype %u / op %u: need a known dtype and add, max, min or fma",
                  coll_kind_name(a->kind), a->dtype, a->op);
        return NRT_INVALID;
    }
    if (a->count > 0 && (a->src == NULL || a->dst == NULL)) {
        LOG_ERROR("NCCL", "%s: NULL input or output buffer", coll_kind_name(a->kind));
        return NRT_INVALID;
    }
    if (a->count > 0 && coll_out_count(a->kind, a->count, n) == 0) {
        LOG_ERROR("NCCL", "%s of %" PRIu64 " elements over %u ranks: the count must divide "
                  "evenly", coll_kind_name(a->kind), a->count, n);
        return NRT_INVALID;
    }
    if (a->kind == CORE_COLL_PERMUTE && (a->send_to >= n || a->recv_from >= n)) {
        LOG_ERROR("NCCL", "permute to position %u from %u: the group has %u ranks", a->send_to,
                  a->recv_from, n);
        return NRT_INVALID;
    }
    if (a->kind == CORE_COLL_PERMUTE && (a->send_to == me) != (a->recv_from == me)) {
        LOG_ERROR("NCCL", "permute sends to position %u but receives from %u: a rank that "
                  "sends to itself must also receive from itself", a->send_to, a->recv_from);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

NRT_STATUS coll_run(struct coll_comm *c, const struct coll_args *a)
{
    const uint32_t *g = a->group != NULL ? a->group : c->all;
    uint32_t n = a->group != NULL ? a->ngroup : c->world, me = UINT32_MAX;
    NRT_STATUS st = NRT_SUCCESS;
    if (n == 0 || n > c->world) {
        LOG_ERROR("NCCL", "a replica group of %u ranks in a %u-rank communicator", n, c->world);
        st = NRT_INVALID;
    }
    if (st == NRT_SUCCESS)
        st = coll_group_check(c, g, n, &me);
    if (st == NRT_SUCCESS)
        st = coll_args_check(a, n, me);
    pthread_mutex_lock(&c->lock);
    if (c->broken == NRT_SUCCESS)
        (void)coll_abort_check(c);
    if (c->broken != NRT_SUCCESS) {
        LOG_ERROR("NCCL", "rank %u: %s on a communicator broken by an earlier failure (status "
                  "%d): close the runtime and start again", c->rank, coll_kind_name(a->kind),
                  (int)c->broken);
        st = c->broken;
    } else if (st != NRT_SUCCESS) {
        /* The other ranks would wait for this one in vain: stop them too. */
        (void)coll_fail(c, st, c->rank);
    } else {
        struct coll_args a2 = *a;
        if (a2.deadline_ns == 0)
            a2.deadline_ns = coll_deadline();
        c->cur_op = n == c->world && g == c->all ? ++c->all_ops : 0;
        st = coll_algo_run(c, &a2, g, n, me, coll_next_seq(c, g, n));
        if (st != NRT_SUCCESS && c->broken == NRT_SUCCESS)
            (void)coll_fail(c, st, c->rank);
    }
    pthread_mutex_unlock(&c->lock);
    return st;
}
