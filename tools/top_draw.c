/*
 * top_draw.c: one frame of `trnemu top`, laid out like neuron-top's
 * sections and fitted to the terminal: every line is cut to the width
 * (so none wraps) and the frame never has more lines than the terminal
 * (so the title never scrolls away). From the top:
 *
 *   the title: trnemu's runtime version, the instance id and type, the
 *     shared instance's name;
 *   NeuronCore <version> Utilization: every VNC's busy percent (F: its
 *     GFLOP/s instead), or only the VNCs processes own when the whole
 *     grid does not fit;
 *   vCPU Utilization: the host's and the runtime processes' user and
 *     system percent;
 *   Memory Usage Summary: host and device memory by neuron-monitor's
 *     categories, all processes together;
 *   the processes, then the models loaded, as many rows as fit.
 */
#include "tools/top.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/live.h"

#define TOP_MIB (1024.0 * 1024.0)
#define TOP_CELL 12 /* columns of one VNC's cell, "  123: 45.6%" */
#define TOP_TAIL 8  /* rows kept below the cores: vCPU 1, memory 3, processes 2, models 2 */

/* The frame being drawn: the terminal's size and the next row. */
struct top_screen {
    int w;    /* columns */
    int h;    /* rows */
    int row;  /* rows written */
};

/* One line, cut to the width; nothing once the rows are used up. The
 * newline goes before a line, so the last row never scrolls the screen. */
static void top_line(struct top_screen *s, const char *fmt, ...)
{
    if (s->row >= s->h)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    int max = s->w > 1 ? s->w - 1 : 1; /* the last column stays free: no auto-wrap */
    if ((int)strlen(buf) > max)
        buf[max] = '\0';
    printf("%s%s\033[K", s->row > 0 ? "\n" : "", buf);
    s->row++;
}

static int top_rows_left(const struct top_screen *s)
{
    return s->h - s->row;
}

static const char *top_mib(uint64_t bytes, char *buf, size_t cap)
{
    snprintf(buf, cap, "%.1fMB", (double)bytes / TOP_MIB);
    return buf;
}

/* ---- title and cores ------------------------------------------------------ */

static void top_title(struct top_screen *s, const struct itype *p,
                      const struct mon_sample *b)
{
    char id[32], dir[INSTANCE_PATH_MAX] = "";
    live_instance_id(id, sizeof id);
    if (instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        dir[0] = '\0';
    const char *name = strrchr(dir, '/');
    top_line(s, "neuron-top (trnemu, runtime %s) | %s | %s (emulated) | instance %s | q: quit",
             live_runtime_version, id, p->name,
             name != NULL && b->live ? name + 1 + 7 /* "trnemu-" */ : "-");
}

/* The VNCs to show: all when the grid fits in rows, else the owned ones. */
static uint32_t top_core_list(const struct mon_sample *b, uint32_t per_line, int rows,
                              uint32_t *ids)
{
    uint32_t n = 0, total = b->ctl.total_vncs;
    bool all = (total + per_line - 1) / per_line <= (uint32_t)(rows > 0 ? rows : 0);
    for (uint32_t v = 0; v < total && v < CONFIG_MAX_VNCS; v++)
        if (all || b->ctl.owner[v].pid != 0)
            ids[n++] = v;
    return n;
}

static void top_cores(struct top_screen *s, const struct mon_sample *a,
                      const struct mon_sample *b, const struct itype *p, bool flops)
{
    if (flops)
        top_line(s, "NeuronCore v%d%s GFLOP/s (VNC: floating-point rate; - not owned; F: "
                 "utilization)", (int)p->gen, b->ctl.lnc > 1 ? "d" : "");
    else
        top_line(s, "NeuronCore v%d%s Utilization (VNC: percent of the period busy; - not "
                 "owned; F: GFLOP/s)", (int)p->gen, b->ctl.lnc > 1 ? "d" : "");
    uint32_t per_line = (uint32_t)((s->w - 1) / TOP_CELL);
    per_line = per_line ? per_line : 1;
    int rows = top_rows_left(s) - TOP_TAIL;
    uint32_t ids[CONFIG_MAX_VNCS];
    uint32_t n = top_core_list(b, per_line, rows, ids);
    uint32_t fit = (uint32_t)(rows > 1 ? rows : 1) * per_line;
    if (n > fit) /* the last row says how many are left out */
        fit -= per_line;
    char line[1024];
    size_t len = 0;
    for (uint32_t i = 0; i < n && i < fit; i++) {
        uint32_t v = ids[i];
        if (b->ctl.owner[v].pid != 0 && flops)
            len += (size_t)snprintf(line + len, sizeof line - len, " %4u:%5.0fG", v,
                                    mon_vnc_flops(a, b, v) / 1e9);
        else if (b->ctl.owner[v].pid != 0)
            len += (size_t)snprintf(line + len, sizeof line - len, " %4u:%5.1f%%", v,
                                    mon_vnc_utilization(a, b, v));
        else
            len += (size_t)snprintf(line + len, sizeof line - len, " %4u:   -  ", v);
        if ((i + 1) % per_line == 0 || i + 1 == n || i + 1 == fit) {
            top_line(s, "%s", line);
            len = 0;
        }
    }
    if (n == 0)
        top_line(s, "  (no VNC is owned by a process)");
    else if (n > fit)
        top_line(s, "  ... %u more VNCs (a larger terminal shows them)", n - fit);
}

/* ---- vCPU and memory ------------------------------------------------------ */

static void top_vcpu(struct top_screen *s, const struct mon_sample *a,
                     const struct mon_sample *b)
{
    uint64_t d[7], sum = 0;
    for (int i = 0; i < 7; i++)
        sum += d[i] = b->cpu_all.t[i] >= a->cpu_all.t[i] ? b->cpu_all.t[i] - a->cpu_all.t[i] : 0;
    double sys_u = sum ? 100.0 * (double)(d[0] + d[1]) / (double)sum : 0;
    double sys_s = sum ? 100.0 * (double)(d[2] + d[5] + d[6]) / (double)sum : 0;
    uint64_t ut = 0, st = 0;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (b->host[i].pid != 0 && a->host[i].pid == b->host[i].pid) {
            ut += b->host[i].utime - a->host[i].utime;
            st += b->host[i].stime - a->host[i].stime;
        }
    double ticks = (double)sysconf(_SC_CLK_TCK), dt = b->t > a->t ? b->t - a->t : 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double scale = 100.0 / ticks / dt / (double)(ncpu > 0 ? ncpu : 1);
    top_line(s, "vCPU Utilization  system: %5.1f%% user %5.1f%% sys   runtime: %5.1f%% user "
             "%5.1f%% sys", sys_u, sys_s, (double)ut * scale, (double)st * scale);
}

static void top_memory(struct top_screen *s, const struct mon_sample *b)
{
    uint64_t m[INSTANCE_MEM_KINDS] = {0}, host = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs && v < CONFIG_MAX_VNCS; v++)
        for (int k = 0; k < INSTANCE_MEM_KINDS; k++)
            m[k] += atomic_load(&b->ctl.use[v].mem[k]);
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (b->host[i].pid != 0)
            host += mon_proc_rss(b->host[i].pid);
    uint64_t ht = m[INSTANCE_MEM_HOST_TENSORS] < host ? m[INSTANCE_MEM_HOST_TENSORS] : host;
    uint64_t dev = m[INSTANCE_MEM_TENSORS] + m[INSTANCE_MEM_CONSTANTS] +
                   m[INSTANCE_MEM_SCRATCHPAD] + m[INSTANCE_MEM_RUNTIME];
    char t[6][32];
    top_line(s, "Memory Usage Summary");
    top_line(s, "  Host   total %s: tensors %s, constants 0.0MB, DMA buffers 0.0MB, app. %s",
             top_mib(host, t[0], 32), top_mib(ht, t[1], 32), top_mib(host - ht, t[2], 32));
    top_line(s, "  Device total %s: tensors %s, constants %s, model code 0.0MB, runtime %s, "
             "scratchpad %s", top_mib(dev, t[0], 32), top_mib(m[INSTANCE_MEM_TENSORS], t[1], 32),
             top_mib(m[INSTANCE_MEM_CONSTANTS], t[2], 32),
             top_mib(m[INSTANCE_MEM_RUNTIME], t[3], 32),
             top_mib(m[INSTANCE_MEM_SCRATCHPAD], t[4], 32));
}

/* ---- processes and models ------------------------------------------------- */

static uint32_t top_nprocs(const struct mon_sample *b)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        n += b->ctl.procs[i].pid != 0 && b->host[i].pid != 0;
    return n;
}

static void top_proc_row(struct top_screen *s, const struct mon_sample *a,
                         const struct mon_sample *b, const struct instance_proc *pr)
{
    double dt = b->t > a->t ? b->t - a->t : 1;
    uint32_t vncs = 0;
    uint64_t ex = 0, dev = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        if (!live_owns(&b->ctl, pr, v))
            continue;
        vncs++;
        uint64_t before = a->live && live_owns(&a->ctl, pr, v)
                              ? atomic_load(&a->ctl.use[v].executions) : 0;
        uint64_t after = atomic_load(&b->ctl.use[v].executions);
        ex += after >= before ? after - before : after;
        for (int k = 0; k < INSTANCE_MEM_HOST_TENSORS; k++)
            dev += atomic_load(&b->ctl.use[v].mem[k]);
    }
    char tag[256], cmd[256], h[32], d[32];
    mon_proc_tag(pr->pid, tag, sizeof tag);
    live_cmdline(pr->pid, cmd, sizeof cmd);
    top_line(s, "%-8d %-12.12s %5u %10.1f %10s %10s  %s", (int)pr->pid, tag, vncs,
             (double)ex / dt, top_mib(mon_proc_rss(pr->pid), h, 32), top_mib(dev, d, 32), cmd);
}

static void top_procs(struct top_screen *s, const struct mon_sample *a,
                      const struct mon_sample *b)
{
    top_line(s, "%-8s %-12s %5s %10s %10s %10s  %s", "PID", "TAG", "VNCS", "EXEC/S", "HOST MEM",
             "DEVICE MEM", "COMMAND");
    uint32_t n = top_nprocs(b), shown = 0;
    int room = top_rows_left(s) - 2; /* the models' header and one row */
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *pr = &b->ctl.procs[i];
        if (pr->pid == 0 || b->host[i].pid == 0)
            continue;
        if ((int)shown + 1 >= room && shown + 1 < n) {
            top_line(s, "  ... %u more processes", n - shown);
            return;
        }
        top_proc_row(s, a, b, pr);
        shown++;
    }
}

static void top_models(struct top_screen *s, const struct mon_sample *b)
{
    top_line(s, "%-5s %-32s %7s %12s", "VNC", "MODEL", "LOADED", "EXECUTIONS");
    uint32_t n = 0, shown = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++)
        n += atomic_load(&b->ctl.use[v].models) > 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        const struct instance_vnc_use *u = &b->ctl.use[v];
        uint32_t k = atomic_load(&u->models);
        if (k == 0)
            continue;
        if (top_rows_left(s) == 1 && shown + 1 < n) {
            top_line(s, "  ... %u more models", n - shown);
            return;
        }
        top_line(s, "%-5u %-32.*s %7u %12llu%s", v, (int)sizeof u->model, u->model, k,
                 (unsigned long long)atomic_load(&u->executions),
                 atomic_load(&u->stand_ins) ? "  STAND-IN (outputs are zeros)" : "");
        shown++;
    }
}

void top_draw(const struct machine_config *mc, const struct mon_sample *a,
              const struct mon_sample *b, int w, int h, bool flops)
{
    struct top_screen s = {.w = w, .h = h};
    const struct itype *p = b->live ? itype_find(b->ctl.profile) : NULL;
    p = p != NULL ? p : mc->profile;
    printf("\033[H"); /* home; each line clears its own rest */
    top_title(&s, p, b);
    if (!b->live) {
        top_line(&s, "no live instance (no process has called nrt_init with this "
                     "TRNEMU_INSTANCE_NAME)");
        struct live_entry e[16];
        uint32_t n = live_list(e, 16);
        if (n > 0)
            top_line(&s, "live instances (trnemu top --instance NAME):");
        for (uint32_t i = 0; i < n && i < 16; i++)
            top_line(&s, "  %-32.32s %-18s %u process%s", e[i].name, e[i].profile, e[i].procs,
                     e[i].procs == 1 ? "" : "es");
    } else {
        top_cores(&s, a, b, p, flops);
        top_vcpu(&s, a, b);
        top_memory(&s, b);
        top_procs(&s, a, b);
        top_models(&s, b);
    }
    printf("\033[J");
    fflush(stdout);
}
