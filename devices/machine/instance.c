/*
 * instance.c: attaching processes to a shared emulated instance (see
 * instance.h and docs/instance.md).
 *
 * Locking: attach and detach hold an exclusive flock on <dir>/lock. The last
 * process unlinks the lock file and removes the directory while holding the
 * lock, so a process that was waiting for it finds, once it gets it, that
 * the file it locked is no longer the one at that path, and starts over.
 * The control file is written in full under a temporary name and renamed,
 * so a crash never leaves a half-made one behind.
 */
#include "devices/machine/instance.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "devices/machine/hbm_alloc.h"
#include "devices/machine/hbm_guard.h"
#include "emu/log.h"

#define INSTANCE_LOCK_TRIES 1000

/* ---- HBM slices ------------------------------------------------------ */

struct vnc_slice instance_vnc_slice(const struct machine_config *cfg, uint32_t vnc)
{
    const struct itype *p = cfg->profile;
    uint32_t k = vnc % cfg->vncs_per_chip, first_core = k * cfg->lnc;
    uint64_t stack_size = p->hbm_per_chip / p->hbm_stacks;
    uint32_t cores_per_stack = p->cores_per_chip / p->hbm_stacks;
    /* VNCs that start on the same stack split it in equal slices. */
    uint32_t per_stack = cores_per_stack > cfg->lnc ? cores_per_stack / cfg->lnc : 1;
    uint32_t idx = cores_per_stack > cfg->lnc ? (first_core % cores_per_stack) / cfg->lnc : 0;
    uint64_t len = (stack_size / per_stack) & ~(uint64_t)(HBM_ALLOC_MIN_ALIGN - 1);
    struct vnc_slice s;
    s.chip = vnc / cfg->vncs_per_chip;
    s.stack = first_core * p->hbm_stacks / p->cores_per_chip;
    s.off = (uint64_t)s.stack * stack_size + (uint64_t)idx * len;
    s.len = len;
    return s;
}

/* ---- processes ---------------------------------------------------------- */

/* Fields of /proc/PID/stat after the command name: state and start time. */
static bool instance_proc_stat(int32_t pid, char *state, uint64_t *start)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');  /* the command name may hold ')' */
    if (p == NULL)
        return false;
    unsigned long long st = 0;
    /* state is field 3, starttime field 22: 19 fields in between. */
    if (sscanf(p + 1, " %c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu",
               state, &st) != 2)
        return false;
    *start = st;
    return true;
}

uint64_t instance_self_start_time(void)
{
    char state;
    uint64_t start;
    return instance_proc_stat((int32_t)getpid(), &state, &start) ? start : 0;
}

bool instance_pid_alive(int32_t pid, uint64_t start_time)
{
    if (pid <= 0)
        return false;
    char state;
    uint64_t start;
    if (instance_proc_stat(pid, &state, &start)) {
        if (state == 'Z' || state == 'X')  /* exited, not yet reaped */
            return false;
        return start_time == 0 || start == 0 || start == start_time;
    }
    /* No /proc entry we can read: ask the kernel whether the pid exists. */
    return kill(pid, 0) == 0 || errno == EPERM;
}

static bool instance_proc_same(const struct instance_proc *a, const struct instance_proc *b)
{
    return a->pid == b->pid && a->start_time == b->start_time;
}

/* Forget processes that are gone; punch out the HBM of VNCs they owned. */
static void instance_prune(struct instance *inst)
{
    struct instance_ctl *c = inst->ctl;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (c->procs[i].pid != 0 && !instance_pid_alive(c->procs[i].pid, c->procs[i].start_time))
            memset(&c->procs[i], 0, sizeof c->procs[i]);
    for (uint32_t v = 0; v < c->total_vncs; v++) {
        struct instance_proc *o = &c->owner[v];
        if (o->pid == 0 || instance_pid_alive(o->pid, o->start_time))
            continue;
        LOG_INFO("TDRV", "VNC %u: owner pid %d is gone; taking the VNC back", v, (int)o->pid);
        struct vnc_slice s = instance_vnc_slice(&inst->cfg, v);
        instance_hbm_discard(inst, s.chip, s.off, s.len);
        memset(o, 0, sizeof *o);
    }
}

/* Is any process of the instance (attached or owning a VNC) alive? */
static bool instance_ctl_alive(const struct instance_ctl *c, const struct instance_proc *except)
{
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *p = &c->procs[i];
        if (p->pid != 0 && !(except && instance_proc_same(p, except)) &&
            instance_pid_alive(p->pid, p->start_time))
            return true;
    }
    for (uint32_t v = 0; v < c->total_vncs && v < CONFIG_MAX_VNCS; v++) {
        const struct instance_proc *p = &c->owner[v];
        if (p->pid != 0 && !(except && instance_proc_same(p, except)) &&
            instance_pid_alive(p->pid, p->start_time))
            return true;
    }
    return false;
}

/* ---- paths and the directory -------------------------------------------- */

static bool instance_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > INSTANCE_NAME_MAX || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (name[i] <= ' ' || name[i] > '~' || name[i] == '/')
            return false;
    return true;
}

NRT_STATUS instance_dir_from_env(char *buf, size_t cap)
{
    const char *base = getenv("TRNEMU_SHM_DIR");
    if (base == NULL || *base == '\0')
        base = "/dev/shm";
    const char *name = getenv("TRNEMU_INSTANCE_NAME");
    char uname[32];
    if (name == NULL || *name == '\0') {
        snprintf(uname, sizeof uname, "u%u", (unsigned)geteuid());
        name = uname;
    }
    if (!instance_name_ok(name)) {
        LOG_ERROR("TDRV", "TRNEMU_INSTANCE_NAME=\"%s\": expected 1-%d printable characters, "
                  "no space or '/', not starting with '.'", name, INSTANCE_NAME_MAX);
        return NRT_INVALID;
    }
    int w = snprintf(buf, cap, "%s/trnemu-%s", base, name);
    if (w < 0 || (size_t)w >= cap) {
        LOG_ERROR("TDRV", "TRNEMU_SHM_DIR=\"%s\": path too long", base);
        return NRT_INVALID;
    }
    /* Anyone could rename or replace our directory in a world-writable
     * directory without the sticky bit (/dev/shm and /tmp have it). */
    struct stat st;
    if (stat(base, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_IWOTH) &&
        !(st.st_mode & S_ISVTX)) {
        LOG_ERROR("TDRV", "TRNEMU_SHM_DIR=\"%s\" is world-writable without the sticky bit: "
                  "others could replace the instance there; not using it", base);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

/* dir/name into buf (fits: names are short, dir is bounded; a path that
 * would not fit is cut to "", which no file system call accepts). */
static void instance_path(char *buf, size_t cap, const char *dir, const char *name)
{
    int w = snprintf(buf, cap, "%s/%s", dir, name);
    if (w < 0 || (size_t)w >= cap)
        buf[0] = '\0';
}

/* The directory must be ours and closed to others. */
static bool instance_dir_safe(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        LOG_ERROR("TDRV", "instance directory %s: %s", dir, strerror(errno));
        return false;
    }
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        LOG_ERROR("TDRV", "%s is not a directory of this user closed to others (mode 0700); "
                  "not using it as an instance directory", dir);
        return false;
    }
    return true;
}

static bool instance_same_file(int fd, const char *path)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* Take the instance lock; -1 (logged) on failure. create: make the
 * directory and the lock file when missing (else fail quietly). */
static int instance_lock(const char *dir, bool create)
{
    char lock[INSTANCE_PATH_MAX + 16];
    instance_path(lock, sizeof lock, dir, "lock");
    for (int tries = 0; tries < INSTANCE_LOCK_TRIES; tries++) {
        if (create && mkdir(dir, 0700) != 0 && errno != EEXIST) {
            LOG_ERROR("TDRV", "cannot create the instance directory %s: %s (TRNEMU_SHM_DIR "
                      "chooses where it goes)", dir, strerror(errno));
            return -1;
        }
        if (create && !instance_dir_safe(dir))
            return -1;
        int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
        if (fd < 0) {
            if (create && errno == ENOENT)
                continue;  /* the directory went away under us: again */
            if (create)
                LOG_ERROR("TDRV", "cannot open %s: %s", lock, strerror(errno));
            return -1;
        }
        int rc;
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        if (rc == 0 && instance_same_file(fd, lock))
            return fd;
        close(fd);
        if (!create)
            return -1;
    }
    LOG_ERROR("TDRV", "cannot lock %s: it keeps being replaced", lock);
    return -1;
}

/* Unlink every file of the directory but the lock; with all, the lock
 * too and then the directory itself. */
static void instance_clear_dir(const char *dir, bool all)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    char path[INSTANCE_PATH_MAX + 300];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            strcmp(e->d_name, "lock") == 0)
            continue;
        instance_path(path, sizeof path, dir, e->d_name);
        if (unlink(path) != 0)
            LOG_WARN("TDRV", "cannot remove %s: %s", path, strerror(errno));
    }
    closedir(d);
    if (!all)
        return;
    instance_path(path, sizeof path, dir, "lock");
    (void)unlink(path);
    /* Fails (harmlessly) when a newcomer already put a lock file back. */
    (void)rmdir(dir);
}

/* ---- the control block --------------------------------------------------- */

/* Why a control block is not valid, or NULL when it is. */
static const char *instance_ctl_problem(const struct instance_ctl *c)
{
    if (c->magic != INSTANCE_CTL_MAGIC)
        return "bad magic number";
    if (c->version != INSTANCE_CTL_VERSION)
        return "unknown layout version";
    if (c->ctl_size != sizeof *c)
        return "wrong size";
    if (memchr(c->profile, '\0', sizeof c->profile) == NULL)
        return "unterminated profile name";
    const struct itype *p = itype_find(c->profile);
    if (p == NULL)
        return "unknown profile";
    if (!itype_lnc_ok(p, c->lnc))
        return "LNC not accepted by the profile";
    if (c->chips != p->chips || c->hbm_per_chip != p->hbm_per_chip)
        return "chip count or HBM size does not match the profile";
    if (c->total_vncs != p->chips * (p->cores_per_chip / c->lnc) || c->total_vncs > CONFIG_MAX_VNCS)
        return "VNC count does not match the profile";
    if (c->nlinks != topo_nlinks(p))
        return "link count does not match the profile";
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (c->procs[i].pid < 0)
            return "negative pid in the process table";
    for (uint32_t v = 0; v < CONFIG_MAX_VNCS; v++)
        if (c->owner[v].pid < 0 || (v >= c->total_vncs && c->owner[v].pid != 0))
            return "bad VNC owner";
    return NULL;
}

static void instance_corrupt(const char *dir, const char *why)
{
    LOG_ERROR("TDRV", "instance control file %s/ctl is corrupt (%s); if no process uses the "
              "instance, remove %s", dir, why, dir);
}

/* Map an existing control file and check it. NRT_SUCCESS with inst->ctl
 * NULL when there is none. */
static NRT_STATUS instance_map_ctl(struct instance *inst)
{
    char path[INSTANCE_PATH_MAX + 16];
    instance_path(path, sizeof path, inst->dir, "ctl");
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT)
            return NRT_SUCCESS;
        LOG_ERROR("TDRV", "cannot open %s: %s", path, strerror(errno));
        return NRT_INVALID;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != sizeof *inst->ctl) {
        close(fd);
        instance_corrupt(inst->dir, "wrong file size");
        return NRT_INVALID;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        close(fd);
        LOG_ERROR("TDRV", "%s is %s (mode %04o); refusing to attach to an instance others "
                  "can change", path, st.st_uid != geteuid() ? "another user's" : "open to others",
                  (unsigned)(st.st_mode & 07777));
        return NRT_INVALID;
    }
    void *p = mmap(NULL, sizeof *inst->ctl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        LOG_ERROR("TDRV", "cannot map %s: %s", path, strerror(errno));
        return NRT_RESOURCE;
    }
    const char *why = instance_ctl_problem(p);
    if (why != NULL) {
        munmap(p, sizeof *inst->ctl);
        instance_corrupt(inst->dir, why);
        return NRT_INVALID;
    }
    inst->ctl = p;
    return NRT_SUCCESS;
}

static void instance_unmap_ctl(struct instance *inst)
{
    if (inst->ctl != NULL)
        munmap(inst->ctl, sizeof *inst->ctl);
    inst->ctl = NULL;
}

/* A live instance must be the machine this process asks for. */
static NRT_STATUS instance_check_same(const struct instance *inst)
{
    const struct instance_ctl *c = inst->ctl;
    if (strcmp(c->profile, inst->cfg.profile->name) == 0 && c->lnc == inst->cfg.lnc)
        return NRT_SUCCESS;
    LOG_ERROR("TDRV", "instance %s is a %s with LNC=%u; this process asks for a %s with LNC=%u "
              "(set TRNEMU_INSTANCE_NAME to use another instance)", inst->dir, c->profile,
              c->lnc, inst->cfg.profile->name, inst->cfg.lnc);
    return NRT_INVALID;
}

static uint64_t instance_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void instance_space(const char *dir, char *buf, size_t cap)
{
    struct statvfs v;
    if (statvfs(dir, &v) != 0) {
        snprintf(buf, cap, "%s: %s", dir, strerror(errno));
        return;
    }
    unsigned long long total = (unsigned long long)v.f_blocks * v.f_frsize >> 20;
    unsigned long long avail = (unsigned long long)v.f_bavail * v.f_frsize >> 20;
    snprintf(buf, cap, "%s holds %llu MiB, %llu MiB free", dir, total, avail);
}

bool instance_reserve(int fd, uint64_t size, const char *path, const char *what)
{
    int err = posix_fallocate(fd, 0, (off_t)size);
    if (err == 0)
        return true;
    char dir[INSTANCE_PATH_MAX + 64], space[INSTANCE_PATH_MAX + 128];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash != NULL && slash != dir)
        *slash = '\0';
    instance_space(dir, space, sizeof space);
    LOG_ERROR("TDRV", "cannot reserve the %llu bytes of %s (%s): %s (%s; TRNEMU_SHM_DIR "
              "chooses the directory)", (unsigned long long)size, what, path, strerror(err),
              space);
    return false;
}

/* The largest file this process may write (ulimit -f), or UINT64_MAX. */
static uint64_t instance_fsize_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return UINT64_MAX;
    return (uint64_t)rl.rlim_cur;
}

/* Create a file of size bytes (0600): sparse, or with every byte reserved
 * (a file written through a mapping at once, which must not fault later);
 * false (logged) on failure. */
static bool instance_make_file(const char *path, uint64_t size, bool reserve)
{
    uint64_t limit = instance_fsize_limit();
    if (size > limit) {  /* ftruncate would fail and raise SIGXFSZ */
        LOG_ERROR("TDRV", "cannot create the %llu-byte file %s: the file size limit (ulimit -f) "
                  "is %llu bytes", (unsigned long long)size, path, (unsigned long long)limit);
        return false;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0 && reserve) {
        bool ok = instance_reserve(fd, size, path, "the instance control block");
        close(fd);
        return ok;
    }
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        LOG_ERROR("TDRV", "cannot create the %llu-byte sparse file %s: %s (TRNEMU_SHM_DIR "
                  "chooses the directory)", (unsigned long long)size, path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return false;
    }
    close(fd);
    return true;
}

/* Create the HBM files, then the control file (complete, then renamed). */
static NRT_STATUS instance_create_files(struct instance *inst)
{
    char path[INSTANCE_PATH_MAX + 16], tmp[INSTANCE_PATH_MAX + 16];
    for (uint32_t i = 0; i < inst->chips; i++) {
        char name[32];
        snprintf(name, sizeof name, "hbm%u", i);
        instance_path(path, sizeof path, inst->dir, name);
        if (!instance_make_file(path, inst->hbm_size, false))
            return NRT_RESOURCE;
    }
    instance_path(tmp, sizeof tmp, inst->dir, "ctl.tmp");
    instance_path(path, sizeof path, inst->dir, "ctl");
    if (!instance_make_file(tmp, sizeof *inst->ctl, true))
        return NRT_RESOURCE;
    int fd = open(tmp, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    void *p = fd < 0 ? MAP_FAILED
                     : mmap(NULL, sizeof *inst->ctl, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (p == MAP_FAILED) {
        LOG_ERROR("TDRV", "cannot map %s: %s", tmp, strerror(errno));
        return NRT_RESOURCE;
    }
    struct instance_ctl *c = p;
    const struct itype *prof = inst->cfg.profile;
    c->magic = INSTANCE_CTL_MAGIC;
    c->version = INSTANCE_CTL_VERSION;
    c->ctl_size = sizeof *c;
    snprintf(c->profile, sizeof c->profile, "%s", prof->name);
    c->lnc = inst->cfg.lnc;
    c->total_vncs = inst->cfg.total_vncs;
    c->chips = prof->chips;
    c->nlinks = topo_nlinks(prof);
    c->hbm_per_chip = prof->hbm_per_chip;
    c->created_ns = instance_now_ns();
    if (rename(tmp, path) != 0) {
        LOG_ERROR("TDRV", "cannot rename %s: %s", tmp, strerror(errno));
        munmap(p, sizeof *c);
        return NRT_RESOURCE;
    }
    inst->ctl = c;
    return NRT_SUCCESS;
}

/* ---- HBM ----------------------------------------------------------------- */

static NRT_STATUS instance_map_chip(struct instance *inst, uint32_t chip)
{
    char path[INSTANCE_PATH_MAX + 16], name[32];
    snprintf(name, sizeof name, "hbm%u", chip);
    instance_path(path, sizeof path, inst->dir, name);
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size != inst->hbm_size) {
        LOG_ERROR("TDRV", "HBM file %s is missing or not %llu bytes; if no process uses the "
                  "instance, remove %s", path, (unsigned long long)inst->hbm_size, inst->dir);
        if (fd >= 0)
            close(fd);
        return NRT_INVALID;
    }
    /* Address space only: a page costs host memory once it is written. */
    void *p = mmap(NULL, inst->hbm_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                   fd, 0);
    if (p == MAP_FAILED) {
        LOG_ERROR("TDRV", "cannot map the %llu GiB of HBM of chip %u (%s): %s",
                  (unsigned long long)(inst->hbm_size >> 30), chip, path, strerror(errno));
        close(fd);
        return NRT_RESOURCE;
    }
    /* A page the full directory cannot back is a status, not a SIGBUS. */
    bool guarded = hbm_guard_add(p, inst->hbm_size, fd);
    close(fd);
    if (!guarded) {
        munmap(p, inst->hbm_size);
        return NRT_RESOURCE;
    }
    /* Huge pages where the file system offers them (tmpfs with huge=). */
    (void)madvise(p, inst->hbm_size, MADV_HUGEPAGE);
    inst->hbm[chip] = p;
    return NRT_SUCCESS;
}

static NRT_STATUS instance_map_hbm(struct instance *inst)
{
    for (uint32_t i = 0; i < inst->chips; i++) {
        NRT_STATUS st = instance_map_chip(inst, i);
        if (st != NRT_SUCCESS)
            return st;
    }
    return NRT_SUCCESS;
}

static void instance_unmap_hbm(struct instance *inst)
{
    for (uint32_t i = 0; inst->hbm != NULL && i < inst->chips; i++) {
        if (inst->hbm[i] != NULL) {
            hbm_guard_remove(inst->hbm[i]);
            munmap(inst->hbm[i], inst->hbm_size);
        }
        inst->hbm[i] = NULL;
    }
}

void instance_hbm_discard(struct instance *inst, uint32_t chip, uint64_t off, uint64_t len)
{
    if (chip >= inst->chips || inst->hbm[chip] == NULL || off > inst->hbm_size ||
        len > inst->hbm_size - off)
        return;
    uint8_t *p = inst->hbm[chip] + off;
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1);
    uintptr_t hi = ((uintptr_t)p + len) & ~(pg - 1);
    /* Punches a hole in the file: the pages go back to the host. */
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_REMOVE);
}

/* ---- VNC ownership ------------------------------------------------------- */

/* The visible list as ranges ("0-3,8") for messages. */
static void instance_ranges(const struct machine_config *cfg, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < cfg->visible_count; i++) {
        uint32_t j = i;
        while (j + 1 < cfg->visible_count && cfg->visible[j + 1] == cfg->visible[j] + 1)
            j++;
        int w = j > i ? snprintf(buf + len, cap - len, "%s%u-%u", len ? "," : "",
                                 cfg->visible[i], cfg->visible[j])
                      : snprintf(buf + len, cap - len, "%s%u", len ? "," : "", cfg->visible[i]);
        if (w < 0 || (size_t)w >= cap - len)
            return;
        len += (size_t)w;
        i = j;
    }
}

/* Claim every visible VNC, or none. */
static NRT_STATUS instance_claim(struct instance *inst)
{
    struct instance_ctl *c = inst->ctl;
    for (uint32_t i = 0; i < inst->cfg.visible_count; i++) {
        uint32_t v = inst->cfg.visible[i];
        if (c->owner[v].pid == 0)
            continue;
        char req[256];
        instance_ranges(&inst->cfg, req, sizeof req);
        LOG_ERROR("TDRV", "NeuronCore(s) not available - requested VNCs %s of instance %s; "
                  "VNC %u is owned by pid %d (every process claims every VNC unless told: "
                  "give each its own with NEURON_RT_VISIBLE_CORES=<list> or "
                  "NEURON_RT_NUM_CORES=<n>, or use another instance with "
                  "TRNEMU_INSTANCE_NAME=<name>)", req, inst->dir, v, (int)c->owner[v].pid);
        return NRT_RESOURCE;
    }
    for (uint32_t i = 0; i < inst->cfg.visible_count; i++) {
        c->owner[inst->cfg.visible[i]] = inst->self;
        memset(&c->use[inst->cfg.visible[i]], 0, sizeof c->use[0]);
    }
    return NRT_SUCCESS;
}

/* Give back the VNCs this process owns; punch their HBM when asked. */
static void instance_release(struct instance *inst, bool punch)
{
    struct instance_ctl *c = inst->ctl;
    for (uint32_t i = 0; i < inst->cfg.visible_count; i++) {
        uint32_t v = inst->cfg.visible[i];
        if (!instance_proc_same(&c->owner[v], &inst->self))
            continue;
        if (punch) {
            struct vnc_slice s = instance_vnc_slice(&inst->cfg, v);
            instance_hbm_discard(inst, s.chip, s.off, s.len);
        }
        memset(&c->owner[v], 0, sizeof c->owner[v]);
        memset(&c->use[v], 0, sizeof c->use[v]);
    }
}

void instance_use_model(struct instance *inst, uint32_t vnc, const char *name,
                        bool was_stand_in)
{
    if (inst == NULL || vnc >= CONFIG_MAX_VNCS)
        return;
    struct instance_vnc_use *u = &inst->ctl->use[vnc];
    if (name != NULL) {
        snprintf(u->model, sizeof u->model, "%s", name);
        atomic_fetch_add(&u->models, 1);
        return;
    }
    if (atomic_load(&u->models) > 0 && atomic_fetch_sub(&u->models, 1) == 1)
        u->model[0] = '\0';
    if (was_stand_in && atomic_load(&u->stand_ins) > 0)
        atomic_fetch_sub(&u->stand_ins, 1);
}

void instance_use_stand_in(struct instance *inst, uint32_t vnc)
{
    if (inst != NULL && vnc < CONFIG_MAX_VNCS)
        atomic_fetch_add(&inst->ctl->use[vnc].stand_ins, 1);
}

void instance_use_model_list(struct instance *inst, uint32_t vnc,
                             const struct instance_model_use *m)
{
    if (inst == NULL || vnc >= CONFIG_MAX_VNCS || m->id == 0)
        return;
    struct instance_model_use *e = inst->ctl->use[vnc].loaded;
    for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++) {
        if (atomic_load(&e[i].id) != 0)
            continue;
        e[i].nsgs = m->nsgs;
        e[i].host = m->host;
        atomic_store(&e[i].running, 0);
        memcpy(e[i].name, m->name, sizeof e[i].name);
        memcpy(e[i].uuid, m->uuid, sizeof e[i].uuid);
        memcpy(e[i].sg, m->sg, sizeof e[i].sg);
        atomic_store(&e[i].id, atomic_load(&m->id)); /* published last */
        return;
    }
}

void instance_use_model_unlist(struct instance *inst, uint32_t vnc, uint32_t id)
{
    if (inst == NULL || vnc >= CONFIG_MAX_VNCS || id == 0)
        return;
    struct instance_model_use *e = inst->ctl->use[vnc].loaded;
    for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++)
        if (atomic_load(&e[i].id) == id)
            atomic_store(&e[i].id, 0);
}

void instance_use_model_running(struct instance *inst, uint32_t vnc, uint32_t id, bool start)
{
    if (inst == NULL || vnc >= CONFIG_MAX_VNCS || id == 0)
        return;
    struct instance_model_use *e = inst->ctl->use[vnc].loaded;
    for (uint32_t i = 0; i < INSTANCE_VNC_MODELS; i++) {
        if (atomic_load(&e[i].id) != id)
            continue;
        if (start)
            atomic_fetch_add(&e[i].running, 1);
        else if (atomic_load(&e[i].running) > 0)
            atomic_fetch_sub(&e[i].running, 1);
        return;
    }
}

void instance_use_flops(struct instance *inst, uint32_t vnc, uint64_t n)
{
    if (inst != NULL && vnc < CONFIG_MAX_VNCS && n > 0)
        atomic_fetch_add(&inst->ctl->use[vnc].flops, n);
}

void instance_use_memory(struct instance *inst, uint32_t vnc, enum instance_mem kind,
                         uint64_t bytes, bool add)
{
    if (inst == NULL || vnc >= CONFIG_MAX_VNCS || kind >= INSTANCE_MEM_KINDS)
        return;
    _Atomic uint64_t *m = &inst->ctl->use[vnc].mem[kind];
    if (add)
        atomic_fetch_add(m, bytes);
    else if (atomic_load(m) >= bytes) /* the VNC may have been reset since */
        atomic_fetch_sub(m, bytes);
}

void instance_use_executions(struct instance *inst, uint32_t vnc, uint64_t n)
{
    if (inst != NULL && vnc < CONFIG_MAX_VNCS)
        atomic_fetch_add(&inst->ctl->use[vnc].executions, n);
}

void instance_use_request(struct instance *inst, uint32_t vnc, uint64_t ns, NRT_STATUS st)
{
    if (inst == NULL || vnc >= CONFIG_MAX_VNCS)
        return;
    struct instance_vnc_use *u = &inst->ctl->use[vnc];
    atomic_fetch_add(&u->busy_ns, ns);
    if (st == NRT_EXEC_COMPLETED_WITH_NUM_ERR)
        atomic_fetch_add(&u->num_errors, 1);
    else if (st != NRT_SUCCESS)
        atomic_fetch_add(&u->failed, 1);
    uint64_t slot = atomic_fetch_add(&u->latencies, 1) % INSTANCE_LATENCIES;
    uint64_t us = ns / 1000u;
    atomic_store(&u->latency_us[slot], us > UINT32_MAX ? UINT32_MAX : (uint32_t)us);
}

static NRT_STATUS instance_register(struct instance *inst)
{
    struct instance_ctl *c = inst->ctl;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (c->procs[i].pid == 0) {
            c->procs[i] = inst->self;
            return NRT_SUCCESS;
        }
    LOG_ERROR("TDRV", "instance %s already has %d processes attached", inst->dir,
              INSTANCE_MAX_PROCS);
    return NRT_RESOURCE;
}

static void instance_unregister(struct instance *inst)
{
    struct instance_ctl *c = inst->ctl;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (instance_proc_same(&c->procs[i], &inst->self))
            memset(&c->procs[i], 0, sizeof c->procs[i]);
}

/* ---- stale instances ---------------------------------------------------- */

static NRT_STATUS instance_load(const char *dir, struct instance_ctl *out, bool *live,
                                const char **why);

/* Remove the instance in dir if no live process uses it and nobody holds
 * its lock right now; a corrupt one is left alone. */
static bool instance_sweep_one(const char *dir)
{
    bool removed = false;
    char lock[INSTANCE_PATH_MAX + 16];
    instance_path(lock, sizeof lock, dir, "lock");
    int fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return false;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0 && instance_same_file(fd, lock)) {
        struct instance_ctl *c = malloc(sizeof *c);
        bool live = true;
        const char *why;
        NRT_STATUS st = c == NULL ? NRT_RESOURCE : instance_load(dir, c, &live, &why);
        if (st == NRT_UNINITIALIZED || (st == NRT_SUCCESS && !live)) {
            instance_clear_dir(dir, true);
            removed = true;
        }
        free(c);
    }
    close(fd);
    return removed;
}

/* Remove this user's stale instances beside ours (left by processes that
 * were killed), so that their HBM pages do not fill the directory; one
 * warning line says which. */
size_t instance_sweep(const char *self_dir)
{
    char base[INSTANCE_PATH_MAX], path[INSTANCE_PATH_MAX + 300];
    char names[160] = "";
    size_t removed = 0, nl = 0;
    snprintf(base, sizeof base, "%s", self_dir);
    char *slash = strrchr(base, '/');
    if (slash == NULL)
        return 0;
    *slash = '\0';
    DIR *d = opendir(base[0] ? base : "/");
    if (d == NULL)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, "trnemu-", 7) != 0)
            continue;
        int w = snprintf(path, sizeof path, "%s/%s", base, e->d_name);
        struct stat st;
        if (w < 0 || (size_t)w >= sizeof path || strcmp(path, self_dir) == 0 ||
            lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (!instance_sweep_one(path))
            continue;
        if (removed++ < 4 && nl + strlen(e->d_name) + 3 < sizeof names)
            nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s", nl ? ", " : "",
                                   e->d_name + 7);
    }
    closedir(d);
    if (removed > 0)
        LOG_WARN("TDRV", "removed %zu stale instance%s of this user in %s (every process gone): "
                 "%s%s", removed, removed == 1 ? "" : "s", base, names, removed > 4 ? ", ..." : "");
    return removed;
}

/* ---- attach and detach --------------------------------------------------- */

/* Everything attach does under the lock. *created: this call made the files. */
static NRT_STATUS instance_join(struct instance *inst, bool *created)
{
    NRT_STATUS st = instance_map_ctl(inst);
    if (st != NRT_SUCCESS)
        return st;
    if (inst->ctl != NULL && !instance_ctl_alive(inst->ctl, NULL)) {
        LOG_INFO("TDRV", "instance %s is stale (no live process): making it afresh", inst->dir);
        instance_unmap_ctl(inst);
    }
    if (inst->ctl == NULL) {
        instance_clear_dir(inst->dir, false);
        *created = true;
        st = instance_create_files(inst);
    } else {
        st = instance_check_same(inst);
    }
    if (st == NRT_SUCCESS)
        st = instance_map_hbm(inst);
    if (st != NRT_SUCCESS)
        return st;
    instance_prune(inst);
    st = instance_claim(inst);
    if (st != NRT_SUCCESS)
        return st;
    st = instance_register(inst);
    if (st != NRT_SUCCESS)
        instance_release(inst, false);
    return st;
}

/* Keep two descriptors for detach (see instance_detach). */
static void instance_keep_spares(struct instance *inst)
{
    for (int i = 0; i < 2; i++)
        inst->spare[i] = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void instance_give_spares(struct instance *inst)
{
    for (int i = 0; i < 2; i++) {
        if (inst->spare[i] >= 0)
            close(inst->spare[i]);
        inst->spare[i] = -1;
    }
}

static void instance_free(struct instance *inst)
{
    instance_give_spares(inst);
    instance_unmap_hbm(inst);
    instance_unmap_ctl(inst);
    free(inst->hbm);
    free(inst);
}

NRT_STATUS instance_attach(const struct machine_config *cfg, struct instance **out)
{
    struct instance *inst = calloc(1, sizeof *inst);
    if (inst == NULL)
        return NRT_RESOURCE;
    inst->cfg = *cfg;
    inst->spare[0] = inst->spare[1] = -1;
    inst->chips = cfg->profile->chips;
    inst->hbm_size = cfg->profile->hbm_per_chip;
    inst->self = (struct instance_proc){(int32_t)getpid(), 0, instance_self_start_time()};
    inst->hbm = calloc(inst->chips, sizeof *inst->hbm);
    NRT_STATUS st = inst->hbm == NULL ? NRT_RESOURCE
                                      : instance_dir_from_env(inst->dir, sizeof inst->dir);
    if (st != NRT_SUCCESS) {
        instance_free(inst);
        return st;
    }
    int fd = instance_lock(inst->dir, true);
    if (fd < 0) {
        instance_free(inst);
        return NRT_RESOURCE;
    }
    bool created = false;
    st = instance_join(inst, &created);
    if (st != NRT_SUCCESS) {
        /* Leave nothing behind: files this call made, or a dead instance. */
        if (created || (inst->ctl != NULL && !instance_ctl_alive(inst->ctl, NULL)))
            instance_clear_dir(inst->dir, true);
        close(fd);
        instance_free(inst);
        return st;
    }
    close(fd);
    instance_sweep(inst->dir);
    instance_keep_spares(inst);
    *out = inst;
    return NRT_SUCCESS;
}

void instance_detach(struct instance *inst)
{
    if (inst == NULL)
        return;
    if ((int32_t)getpid() != inst->self.pid) {
        /* A forked child closing the runtime it inherited: the VNCs and
         * the table entry are its parent's, not its own to give back. */
        instance_free(inst);
        return;
    }
    instance_give_spares(inst);  /* room for the lock and the directory listing */
    int fd = instance_lock(inst->dir, false);
    if (fd < 0)
        LOG_ERROR("TDRV", "cannot lock instance %s to detach (%s): its VNCs stay claimed until "
                  "another process finds this one gone", inst->dir, strerror(errno));
    if (fd >= 0 && inst->ctl != NULL) {
        bool last = !instance_ctl_alive(inst->ctl, &inst->self);
        instance_release(inst, !last);
        instance_unregister(inst);
        if (last)
            instance_clear_dir(inst->dir, true);
    }
    if (fd >= 0)
        close(fd);
    instance_sweep(inst->dir);  /* instances of killed processes beside ours */
    instance_free(inst);
}

void instance_link_add(struct instance *inst, uint32_t link, uint32_t dir, uint64_t bytes)
{
    if (link >= inst->ctl->nlinks || dir > 1)
        return;
    struct instance_link_stat *s = &inst->ctl->links[link][dir];
    atomic_fetch_add_explicit(&s->bytes, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->messages, 1, memory_order_relaxed);
}

/* ---- read-only view ------------------------------------------------------ */

/* Read the control block of dir into out without logging; *why says what
 * is wrong when the answer is NRT_INVALID. */
/* Why a control file of n bytes has not this build's size: made by a
 * trnemu of another layout version (its header says so), or damaged. */
static const char *instance_size_problem(const struct instance_ctl *c, ssize_t n)
{
    if (n >= (ssize_t)(offsetof(struct instance_ctl, version) + sizeof c->version) &&
        c->magic == INSTANCE_CTL_MAGIC && c->version != INSTANCE_CTL_VERSION)
        return "made by a trnemu build of another control-block layout version; "
               "give this one another TRNEMU_INSTANCE_NAME";
    return "wrong file size";
}

static NRT_STATUS instance_load(const char *dir, struct instance_ctl *out, bool *live,
                                const char **why)
{
    char path[INSTANCE_PATH_MAX + 16];
    instance_path(path, sizeof path, dir, "ctl");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        *why = strerror(errno);
        return errno == ENOENT || errno == ENOTDIR ? NRT_UNINITIALIZED : NRT_INVALID;
    }
    ssize_t n = pread(fd, out, sizeof *out, 0);
    char extra;
    bool longer = pread(fd, &extra, 1, sizeof *out) == 1;
    close(fd);
    *why = n != (ssize_t)sizeof *out || longer ? instance_size_problem(out, n)
                                               : instance_ctl_problem(out);
    if (*why != NULL)
        return NRT_INVALID;
    *live = instance_ctl_alive(out, NULL);
    return NRT_SUCCESS;
}

NRT_STATUS instance_peek(const char *dir, struct instance_ctl *out, bool *live)
{
    const char *why = NULL;
    return instance_load(dir, out, live, &why);
}

NRT_STATUS instance_read(const char *dir, struct instance_ctl *out, bool *live)
{
    const char *why = NULL;
    NRT_STATUS st = instance_load(dir, out, live, &why);
    if (st == NRT_INVALID)
        instance_corrupt(dir, why);
    return st;
}

void instance_ec2_id(char *buf, size_t cap)
{
    char dir[INSTANCE_PATH_MAX];
    if (instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        dir[0] = '\0';
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a of the instance directory */
    for (const char *c = dir; *c; c++)
        h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
    snprintf(buf, cap, "i-%017" PRIx64, h);
}
