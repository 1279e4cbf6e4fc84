/*
 * live.c: reading a live shared instance for the vendor-style tools.
 */
#include "tools/live.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trnemu_config.h"

#define LIVE_STR2(x) #x
#define LIVE_STR(x) LIVE_STR2(x)

const char live_runtime_version[] =
    LIVE_STR(TRNEMU_NRT_MAJOR) "." LIVE_STR(TRNEMU_NRT_MINOR) "." LIVE_STR(TRNEMU_NRT_PATCH);

int live_read(struct instance_ctl *c)
{
    char dir[INSTANCE_PATH_MAX];
    if (instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        return -1;
    bool live = false;
    NRT_STATUS st = instance_read(dir, c, &live);
    if (st == NRT_INVALID)
        return -1;
    return st == NRT_SUCCESS && live ? 1 : 0;
}

void live_cmdline(int32_t pid, char *buf, size_t cap)
{
    char path[64];
    buf[0] = '\0';
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    while (n > 0 && buf[n - 1] == '\0')
        n--;
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\0')
            buf[i] = ' ';
    buf[n] = '\0';
}

bool live_owns(const struct instance_ctl *c, const struct instance_proc *proc, uint32_t vnc)
{
    return vnc < CONFIG_MAX_VNCS && c->owner[vnc].pid == proc->pid &&
           c->owner[vnc].start_time == proc->start_time;
}

bool live_owns_any(const struct instance_ctl *c, const struct instance_proc *proc,
                   uint32_t first, uint32_t n)
{
    for (uint32_t v = first; v < first + n; v++)
        if (live_owns(c, proc, v))
            return true;
    return false;
}

/* The first line of a sysfs file without its newline; false when unreadable. */
static bool live_sysfs_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok && buf[0] != '\0';
}

void live_cpu_range(char *buf, size_t cap)
{
    if (live_sysfs_line("/sys/devices/system/cpu/online", buf, cap))
        return;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 1)
        snprintf(buf, cap, "0");
    else
        snprintf(buf, cap, "0-%ld", n - 1);
}

void live_numa_node(char *buf, size_t cap)
{
    char nodes[64];
    if (!live_sysfs_line("/sys/devices/system/node/online", nodes, sizeof nodes))
        snprintf(buf, cap, "0"); /* a kernel without NUMA: all memory is node 0 */
    else if (strspn(nodes, "0123456789") == strlen(nodes))
        snprintf(buf, cap, "%s", nodes);
    else
        snprintf(buf, cap, "-1"); /* several nodes: the emulated HBM is on none of them alone */
}

void live_instance_id(char *buf, size_t cap)
{
    instance_ec2_id(buf, cap);
}

void live_machine(const struct instance_ctl *c, struct machine_config *mc)
{
    const struct itype *p = itype_find(c->profile);
    if (p == NULL || c->chips == 0)
        return; /* keep what the environment gave */
    mc->profile = p;
    mc->lnc = c->lnc;
    mc->total_vncs = c->total_vncs;
    mc->vncs_per_chip = c->total_vncs / c->chips;
    mc->visible_count = 0;
}

int live_use_instance(const char *name)
{
    char dir[INSTANCE_PATH_MAX];
    if (setenv("TRNEMU_INSTANCE_NAME", name, 1) != 0 ||
        instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        return -1;
    return 0;
}

uint32_t live_list(struct live_entry *out, uint32_t cap)
{
    char self[INSTANCE_PATH_MAX];
    if (instance_dir_from_env(self, sizeof self) != NRT_SUCCESS)
        return 0;
    char *slash = strrchr(self, '/');
    *slash = '\0'; /* the shared-memory directory holding every instance */
    DIR *d = opendir(self);
    struct instance_ctl *c = malloc(sizeof *c);
    uint32_t n = 0;
    struct dirent *e;
    while (d != NULL && c != NULL && (e = readdir(d)) != NULL) {
        char path[INSTANCE_PATH_MAX + 300];
        bool live = false;
        if (strncmp(e->d_name, "trnemu-", 7) != 0 || e->d_name[7] == '\0')
            continue;
        snprintf(path, sizeof path, "%s/%s", self, e->d_name);
        if (instance_peek(path, c, &live) != NRT_SUCCESS || !live)
            continue;
        if (n < cap) {
            snprintf(out[n].name, sizeof out[n].name, "%s", e->d_name + 7);
            snprintf(out[n].profile, sizeof out[n].profile, "%s", c->profile);
            out[n].procs = 0;
            for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
                out[n].procs += c->procs[i].pid != 0 &&
                                instance_pid_alive(c->procs[i].pid, c->procs[i].start_time);
        }
        n++;
    }
    if (d != NULL)
        closedir(d);
    free(c);
    return n;
}

void live_list_print(FILE *out, const char *cmd)
{
    struct live_entry e[16];
    uint32_t n = live_list(e, 16);
    if (n == 0) {
        fprintf(out, "no other live instance in this shared-memory directory\n");
        return;
    }
    fprintf(out, "live instances (trnemu %s --instance NAME reads one):\n", cmd);
    for (uint32_t i = 0; i < n && i < 16; i++)
        fprintf(out, "  %-32s %-18s %u process%s\n", e[i].name, e[i].profile, e[i].procs,
                e[i].procs == 1 ? "" : "es");
    if (n > 16)
        fprintf(out, "  ... and %u more\n", n - 16);
}
