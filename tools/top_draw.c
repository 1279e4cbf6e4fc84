/*
 * top_draw.c: one frame of `trnemu top`, in neuron-top's sections, for
 * the tab selected (the 'all' tab: every process together; a process
 * tab: that process alone), fitted to the terminal: every line is cut to
 * the width (none wraps) and the frame never has more lines than the
 * terminal has rows (the title never scrolls away). From the top:
 *
 *   the title bar: neuron-top, trnemu's runtime version, the instance id
 *     and type, the shared instance's name;
 *   NeuronCore <version> Utilization (Avg): a row per device (ND n), a
 *     cell per NeuronCore (VNC) with a bar and its busy percent (F: its
 *     floating-point rate instead); when the devices do not all fit, the
 *     ones the tab uses come first and the title says how many show;
 *   vCPU Utilization: the host's and the tab's runtime processes' user
 *     and system percent;
 *   Memory Usage Summary: host and device memory of the tab by
 *     neuron-monitor's categories (as many lines as the width needs);
 *   Memory Usage Details: the tree (top_tree.c), in the rows left;
 *   at the bottom, the tab bar (Neuron Apps, >[1]:all<, [2]:tag, ...)
 *     and the keys.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/live.h"
#include "tools/top.h"

#define TOP_LABEL 5  /* columns of a device row's label, "ND15 " */
#define TOP_FIG 9    /* columns of a cell's figure, "[ 56.81%]" */
#define TOP_TABS 9   /* tabs the number keys reach (1 is 'all') */

/* ---- title and cores ------------------------------------------------------ */

static void top_title(struct top_screen *s, const struct itype *p,
                      const struct mon_sample *b)
{
    char id[32], dir[INSTANCE_PATH_MAX] = "", text[512];
    live_instance_id(id, sizeof id);
    if (instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        dir[0] = '\0';
    const char *name = strrchr(dir, '/');
    const char *inst = name != NULL && b->live ? name + 1 + 7 /* "trnemu-" */ : "-";
    snprintf(text, sizeof text, "neuron-top %s (trnemu) running on %s (%s, emulated; instance %s)",
             live_runtime_version, id, p->name, inst);
    if ((int)strlen(text) > s->w - 1) /* narrow: the vendor's words, then the name if it fits */
        snprintf(text, sizeof text, "neuron-top %s running on %s (%s) %s", live_runtime_version,
                 id, p->name, inst);
    if ((int)strlen(text) > s->w - 1)
        snprintf(text, sizeof text, "neuron-top %s running on %s (%s)", live_runtime_version,
                 id, p->name);
    int pad = (s->w - 1 - (int)strlen(text)) / 2;
    char line[1024];
    snprintf(line, sizeof line, "%*s%s", pad > 0 ? pad : 0, "", text);
    top_bar(s, line);
}

/* A cell's figure: the busy percent, the FLOPS, or - outside the tab. */
static void top_fig(char *buf, size_t cap, const struct mon_sample *a,
                    const struct mon_sample *b, uint32_t v, bool in_tab, bool flops)
{
    if (!in_tab || b->ctl.owner[v].pid == 0) {
        snprintf(buf, cap, "[   -   ]");
        return;
    }
    if (!flops) {
        snprintf(buf, cap, "[%6.2f%%]", mon_vnc_utilization(a, b, v));
        return;
    }
    static const char unit[] = " KMGTP";
    double f = mon_vnc_flops(a, b, v);
    int u = 0;
    while (f >= 999.95 && u < 5) {
        f /= 1000.0;
        u++;
    }
    snprintf(buf, cap, "[%5.1f%cF]", f, unit[u]);
}

/* The share of a cell's bar to fill, 0..1. */
static double top_fill(const struct mon_sample *a, const struct mon_sample *b, uint32_t v,
                       bool flops, double flops_max)
{
    if (b->ctl.owner[v].pid == 0)
        return 0;
    if (flops)
        return flops_max > 0 ? mon_vnc_flops(a, b, v) / flops_max : 0;
    return mon_vnc_utilization(a, b, v) / 100.0;
}

/* The largest FLOPS of the tab's VNCs (bars in FLOPS mode are relative). */
static double top_flops_max(const struct mon_sample *a, const struct mon_sample *b,
                            int32_t tab)
{
    double m = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++)
        if (top_tab_uses(b, tab, v) && mon_vnc_flops(a, b, v) > m)
            m = mon_vnc_flops(a, b, v);
    return m;
}

static void top_device_row(struct top_screen *s, const struct mon_sample *a,
                           const struct mon_sample *b, uint32_t d, const struct top_view *view,
                           double flops_max)
{
    uint32_t per = top_per_device(b);
    int cell = (s->w - 1 - TOP_LABEL) / (int)per;
    int bar = cell - TOP_FIG - 1; /* a bar only when it has room to say something */
    bar = bar >= 4 ? bar : 0;
    char line[2048], fig[32];
    int len = snprintf(line, sizeof line, "ND%-3u", d);
    for (uint32_t v = d * per; v < (d + 1) * per && len < (int)sizeof line - 64; v++) {
        bool in = top_tab_has(b, view->tab_pid, v);
        top_fig(fig, sizeof fig, a, b, v, in, view->flops);
        int fill = in ? (int)(top_fill(a, b, v, view->flops, flops_max) * bar + 0.5) : 0;
        fill = fill > bar ? bar : fill;
        line[len++] = ' ';
        for (int i = 0; i < bar && len < (int)sizeof line - 32; i++)
            line[len++] = i < fill ? '|' : ' ';
        len += snprintf(line + len, sizeof line - (size_t)len, "%s", fig);
    }
    top_line(s, "%s", line);
}

/* The column heads over the cells: NC0, NC1, ... centred over each cell. */
static void top_nc_heads(struct top_screen *s, const struct mon_sample *b)
{
    uint32_t per = top_per_device(b);
    int cell = (s->w - 1 - TOP_LABEL) / (int)per;
    char line[2048], head[16];
    int len = snprintf(line, sizeof line, "%*s", TOP_LABEL, "");
    for (uint32_t c = 0; c < per && len < (int)sizeof line - 64; c++) {
        int n = snprintf(head, sizeof head, "NC%u", c);
        int left = (cell - n) / 2 > 0 ? (cell - n) / 2 : 1;
        int right = cell - n - left > 0 ? cell - n - left : 0;
        len += snprintf(line + len, sizeof line - (size_t)len, "%*s%s%*s", left, "", head,
                        right, "");
    }
    top_line(s, "%s", line);
}

/* The devices to draw: those the tab uses (a VNC of it owned) first,
 * then, in the 'all' tab, the others; *used: how many the tab uses. */
static uint32_t top_device_order(const struct mon_sample *b, int32_t tab, uint32_t *ids,
                                 uint32_t *used)
{
    uint32_t per = top_per_device(b), ndev = b->ctl.total_vncs / per, n = 0;
    for (int pass = 0; pass < (tab == 0 ? 2 : 1); pass++) {
        for (uint32_t d = 0; d < ndev && d < CONFIG_MAX_VNCS; d++) {
            bool in_use = false;
            for (uint32_t v = d * per; v < (d + 1) * per; v++)
                in_use |= top_tab_uses(b, tab, v);
            if (in_use == (pass == 0))
                ids[n++] = d;
        }
        if (pass == 0)
            *used = n;
    }
    return n;
}

static void top_cores(struct top_screen *s, const struct mon_sample *a,
                      const struct mon_sample *b, const struct itype *p,
                      const struct top_view *view, int rows)
{
    uint32_t ids[CONFIG_MAX_VNCS], used_devs;
    uint32_t ndev = top_device_order(b, view->tab_pid, ids, &used_devs);
    double sum = 0, flops_max = top_flops_max(a, b, view->tab_pid);
    uint32_t used = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++)
        if (top_tab_uses(b, view->tab_pid, v)) {
            sum += view->flops ? mon_vnc_flops(a, b, v) : mon_vnc_utilization(a, b, v);
            used++;
        }
    uint32_t shown = rows > 0 && (uint32_t)rows < ndev ? (uint32_t)rows : ndev;
    char title[256], more[64] = "";
    if (shown < ndev)
        snprintf(more, sizeof more, "; %u of %u devices", shown, ndev);
    if (view->flops)
        snprintf(title, sizeof title, "NeuronCore v%d%s FLOPS (Total: %.3g GFLOPS%s)",
                 (int)p->gen, b->ctl.lnc > 1 ? "d" : "", sum / 1e9, more);
    else
        snprintf(title, sizeof title, "NeuronCore v%d%s Utilization (Avg: %.2f%%%s)",
                 (int)p->gen, b->ctl.lnc > 1 ? "d" : "", used ? sum / used : 0.0, more);
    top_bar(s, title);
    top_nc_heads(s, b);
    for (uint32_t i = 0; i < shown; i++)
        top_device_row(s, a, b, ids[i], view, flops_max);
}

/* ---- vCPU and memory ------------------------------------------------------ */

/* "Label   ||||      [ u%, s%]" filling the width. */
static void top_usage_line(struct top_screen *s, const char *label, double u, double sy)
{
    char fig[48];
    snprintf(fig, sizeof fig, "[%6.2f%%,%6.2f%%]", u, sy);
    int bar = s->w - 1 - 20 - (int)strlen(fig) - 1;
    bar = bar > 0 ? bar : 0;
    char line[1024];
    int len = snprintf(line, sizeof line, "%-19s ", label);
    int fill = (int)((u + sy) / 100.0 * bar + 0.5);
    for (int i = 0; i < bar && len < (int)sizeof line - 64; i++)
        line[len++] = i < fill ? '|' : ' ';
    snprintf(line + len, sizeof line - (size_t)len, " %s", fig);
    top_line(s, "%s", line);
}

static void top_vcpu(struct top_screen *s, const struct mon_sample *a,
                     const struct mon_sample *b, int32_t tab)
{
    uint64_t d[7], sum = 0;
    for (int i = 0; i < 7; i++)
        sum += d[i] = b->cpu_all.t[i] >= a->cpu_all.t[i] ? b->cpu_all.t[i] - a->cpu_all.t[i] : 0;
    double sys_u = sum ? 100.0 * (double)(d[0] + d[1]) / (double)sum : 0;
    double sys_s = sum ? 100.0 * (double)(d[2] + d[5] + d[6]) / (double)sum : 0;
    uint64_t ut = 0, st = 0;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (b->host[i].pid != 0 && a->host[i].pid == b->host[i].pid &&
            (tab == 0 || b->host[i].pid == tab)) {
            ut += b->host[i].utime - a->host[i].utime;
            st += b->host[i].stime - a->host[i].stime;
        }
    double ticks = (double)sysconf(_SC_CLK_TCK), dt = b->t > a->t ? b->t - a->t : 1;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    double scale = 100.0 / ticks / dt / (double)(ncpu > 0 ? ncpu : 1);
    top_bar(s, "vCPU Utilization");
    top_usage_line(s, "System vCPU Usage", sys_u, sys_s);
    top_usage_line(s, "Runtime vCPU Usage", (double)ut * scale, (double)st * scale);
}

/* "Label  Total: x  Tensors: y ..." packed into the width, each field in
 * the columns its widest figure needs (so nothing moves from frame to
 * frame), continued on further lines indented by two; draws when v is
 * not NULL and returns the lines it takes. */
#define TOP_FIELD_LABEL 19
#define TOP_FIG_MAX 8   /* "1023.9GB" */
static int top_fields(struct top_screen *s, const char *label, const char *const *names,
                      const uint64_t *v, int n)
{
    char line[1024], b[32], cell[64];
    int lines = 0, len = snprintf(line, sizeof line, "%-*s", TOP_FIELD_LABEL, label);
    bool empty = true;
    for (int k = 0; k < n; k++) {
        snprintf(cell, sizeof cell, "%s: %s", names[k], v ? top_bytes(v[k], b, sizeof b) : "");
        int cw = (int)strlen(names[k]) + 2 + TOP_FIG_MAX + 2;
        if (!empty && len + cw - 2 > s->w - 1) {
            if (v != NULL)
                top_line(s, "%s", line);
            lines++;
            len = snprintf(line, sizeof line, "  ");
        }
        len += snprintf(line + len, sizeof line - (size_t)len, "%-*s", cw, cell);
        empty = false;
    }
    if (v != NULL)
        top_line(s, "%s", line);
    return lines + 1;
}

static const char *const top_host_names[] = {"Total", "Tensors", "Constants", "DMA Buffers",
                                             "App. Memory"};
static const char *const top_dev_names[] = {"Total", "Tensors", "Constants", "Model Code",
                                            "Runtime Memory", "Model Scratchpad"};

/* The tab's memory: host[5] and dev[6] in the order of the names above. */
static void top_memory_of(const struct mon_sample *b, int32_t tab, uint64_t *host,
                          uint64_t *dev)
{
    uint64_t m[INSTANCE_MEM_KINDS] = {0}, rss = 0;
    for (uint32_t v = 0; v < b->ctl.total_vncs && v < CONFIG_MAX_VNCS; v++)
        for (int k = 0; top_tab_has(b, tab, v) && k < INSTANCE_MEM_KINDS; k++)
            m[k] += atomic_load(&b->ctl.use[v].mem[k]);
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (b->host[i].pid != 0 && (tab == 0 || b->host[i].pid == tab))
            rss += mon_proc_rss(b->host[i].pid);
    uint64_t ht = m[INSTANCE_MEM_HOST_TENSORS] < rss ? m[INSTANCE_MEM_HOST_TENSORS] : rss;
    uint64_t h[5] = {rss, ht, 0, 0, rss - ht};
    uint64_t d[6] = {0, m[INSTANCE_MEM_TENSORS], m[INSTANCE_MEM_CONSTANTS], 0,
                     m[INSTANCE_MEM_RUNTIME], m[INSTANCE_MEM_SCRATCHPAD]};
    d[0] = d[1] + d[2] + d[3] + d[4] + d[5];
    memcpy(host, h, sizeof h);
    memcpy(dev, d, sizeof d);
}

static int top_memory_lines(struct top_screen *s)
{
    return 1 + top_fields(s, "", top_host_names, NULL, 5) +
           top_fields(s, "", top_dev_names, NULL, 6);
}

static void top_memory(struct top_screen *s, const struct mon_sample *b, int32_t tab)
{
    uint64_t host[5], dev[6];
    top_memory_of(b, tab, host, dev);
    top_bar(s, "Memory Usage Summary");
    top_fields(s, "Host Used Memory", top_host_names, host, 5);
    top_fields(s, "Device Used Memory", top_dev_names, dev, 6);
}

/* ---- tabs ------------------------------------------------------------------ */

/* The tab number (1: all) of the view's process; 1 when it is gone. */
static uint32_t top_tab_index(const struct top_view *v, const struct mon_sample *b,
                              const uint32_t *idx, uint32_t n)
{
    for (uint32_t k = 0; v->tab_pid != 0 && k < n; k++)
        if (b->ctl.procs[idx[k]].pid == v->tab_pid)
            return k + 2;
    return 1;
}

static void top_tab_bar(struct top_screen *s, const struct mon_sample *b,
                        const struct top_view *v)
{
    uint32_t idx[INSTANCE_MAX_PROCS];
    uint32_t n = top_tab_procs(b, idx, INSTANCE_MAX_PROCS), cur = top_tab_index(v, b, idx, n);
    /* the tabs from the first one that lets the selected one show */
    int room = s->w - 1 - 12, width = 0;
    uint32_t from = 1;
    char tag[256], text[300];
    for (uint32_t k = cur; k >= 1; k--) {
        if (k == 1)
            snprintf(text, sizeof text, ">[1]:all<  ");
        else {
            mon_proc_tag(b->ctl.procs[idx[k - 2]].pid, tag, sizeof tag);
            snprintf(text, sizeof text, ">[%u]:%.24s<  ", k, tag);
        }
        width += (int)strlen(text);
        if (width > room && k != cur)
            break;
        from = k;
    }
    char line[4096];
    int len = snprintf(line, sizeof line, "Neuron Apps %s", from > 1 ? "<" : " ");
    for (uint32_t k = from; k <= n + 1 && len < (int)sizeof line - 400; k++) {
        if (k == 1)
            snprintf(tag, sizeof tag, "all");
        else
            mon_proc_tag(b->ctl.procs[idx[k - 2]].pid, tag, sizeof tag);
        len += snprintf(line + len, sizeof line - (size_t)len, k == cur ? TOP_TAB ">[%u]:%.24s<"
                        TOP_OFF "  " : " [%u]:%.24s   ", k, tag);
    }
    top_line(s, "%s", line);
}

static void top_keys(struct top_screen *s)
{
    if (s->w >= 120)
        top_line(s, "q: quit  arrows: move tree selection  enter: expand/collapse tree  "
                 "x: expand/collapse entire tree  a/d: previous/next tab  f: FLOPS on/off  "
                 "1-9: select tab");
    else
        top_line(s, "q:quit arrows,enter:tree x:whole tree a/d,1-9:tab f:FLOPS");
}

bool top_tab_key(struct top_view *v, const struct mon_sample *b, int key)
{
    uint32_t idx[INSTANCE_MAX_PROCS];
    uint32_t n = top_tab_procs(b, idx, INSTANCE_MAX_PROCS), cur = top_tab_index(v, b, idx, n);
    uint32_t next = cur;
    if (key >= '1' && key <= '0' + TOP_TABS)
        next = (uint32_t)(key - '0') <= n + 1 ? (uint32_t)(key - '0') : cur;
    else if (key == 'a' || key == 'A')
        next = cur > 1 ? cur - 1 : n + 1;
    else if (key == 'd' || key == 'D')
        next = cur <= n ? cur + 1 : 1;
    else
        return false;
    v->tab_pid = next == 1 ? 0 : b->ctl.procs[idx[next - 2]].pid;
    if (next != cur) {
        v->tree.sel = 0;
        v->tree.first = 0;
    }
    return true;
}

/* ---- the frame ---------------------------------------------------------------- */

/* The rows for the device grid and the tree out of avail: everything
 * when it fits, else the devices in use and at least as much for the tree
 * as for the idle devices. */
static void top_split(int avail, uint32_t ndev, uint32_t used, uint32_t tree, int *core_rows,
                      int *tree_rows)
{
    int want_c = (int)ndev, want_t = tree > 0 ? (int)tree : 1, u = used > 0 ? (int)used : 1;
    if (avail < 2) {
        *core_rows = avail > 0 ? avail : 0;
        *tree_rows = 0;
        return;
    }
    int c = want_c;
    if (want_c + want_t > avail) {
        int t = want_t < avail / 2 ? want_t : avail / 2;
        c = avail - t > u ? avail - t : u;
        c = c < avail - 1 ? c : avail - 1;
        c = c < want_c ? c : want_c;
    }
    *core_rows = c;
    *tree_rows = avail - c;
}

static void top_live(struct top_screen *s, const struct mon_sample *a,
                     const struct mon_sample *b, const struct itype *p, struct top_view *v)
{
    uint32_t idx[INSTANCE_MAX_PROCS];
    uint32_t n = top_tab_procs(b, idx, INSTANCE_MAX_PROCS);
    if (top_tab_index(v, b, idx, n) == 1)
        v->tab_pid = 0; /* its process is gone: back to 'all' */
    /* fixed rows: title 1, cores 2, vCPU 3, memory, details 2, tab bar and keys 2 */
    int fixed = s->row + 2 + 3 + top_memory_lines(s) + 2 + 2;
    int core_rows, tree_rows;
    uint32_t ids[CONFIG_MAX_VNCS], used;
    uint32_t ndev = top_device_order(b, v->tab_pid, ids, &used);
    top_split(s->h - fixed, ndev, used, top_tree_rows(&v->tree, b, v->tab_pid), &core_rows,
              &tree_rows);
    top_cores(s, a, b, p, v, core_rows);
    top_vcpu(s, a, b, v->tab_pid);
    top_memory(s, b, v->tab_pid);
    top_tree_draw(s, &v->tree, b, v->tab_pid, tree_rows);
    while (top_rows_left(s) > 2)
        top_line(s, "%s", "");
    top_tab_bar(s, b, v);
    top_keys(s);
}

void top_draw(const struct machine_config *mc, const struct mon_sample *a,
              const struct mon_sample *b, int w, int h, struct top_view *v)
{
    struct top_screen s = {.w = w, .h = h};
    const struct itype *p = b->live ? itype_find(b->ctl.profile) : NULL;
    p = p != NULL ? p : mc->profile;
    printf("\033[H"); /* home; each line clears its own rest */
    top_title(&s, p, b);
    if (b->live) {
        top_live(&s, a, b, p, v);
    } else {
        top_line(&s, "no live instance (no process has called nrt_init with this "
                     "TRNEMU_INSTANCE_NAME)");
        struct live_entry e[16];
        uint32_t n = live_list(e, 16);
        if (n > 0)
            top_line(&s, "live instances (trnemu top --instance NAME):");
        for (uint32_t i = 0; i < n && i < 16; i++)
            top_line(&s, "  %-32.32s %-18s %u process%s", e[i].name, e[i].profile, e[i].procs,
                     e[i].procs == 1 ? "" : "es");
    }
    printf("\033[J");
    fflush(stdout);
}
