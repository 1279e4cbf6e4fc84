/*
 * ls_vendor.c: neuron-ls's interface of `trnemu ls` (called as neuron-ls,
 * or given -j, -w, -a or -t), following the vendor's neuron-ls guide
 * (aws-neuron-sdk tools/neuron-sys-tools/neuron-ls.rst):
 *
 *   the header lines instance-type:, instance-id: and (on machines with a
 *   choice of logical core size) logical-neuroncore-config:, then
 *   neuron-ls            NEURON DEVICE, NEURON CORES, NEURON CORE IDS,
 *                        NEURON MEMORY, CONNECTED DEVICES, PCI BDF,
 *                        CPU AFFINITY, NUMA NODE
 *   -w / -a              DEVICE, CORES, MEMORY, CONNECTED, BDF, then PID,
 *                        COMMAND (80 or 40 columns) and RUNTIME VERSION
 *                        of every process using the device (-a: this one
 *                        too, and a rule after each device)
 *   -t                   DEVICE, CORES, MEMORY, CONNECTED, BDF, then the
 *                        NeuronLink drawing
 *   -j, --json-output    one JSON object per device, the vendor's fields
 *                        in the vendor's order
 *
 * NEURON CORES / nc_count is the number of logical NeuronCores (VNCs) of a
 * device, the cores the runtime counts and NEURON_RT_VISIBLE_CORES names.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/machine/instance.h"
#include "tools/live.h"
#include "tools/ls.h"
#include "tools/tool.h"

#define LS_GIB (1024.0 * 1024.0 * 1024.0)
#define LS_MAX_COLS 8    /* columns of the widest table */
#define LS_CELL 128      /* bytes of one cell */

/* One process using a device, as neuron-ls lists it. */
struct ls_proc {
    int32_t pid;          /* process id */
    char command[4096];   /* its command line */
    const char *version;  /* runtime version, LIVE_NO_RUNTIME when not a runtime user */
};

/* What neuron-ls shows: the machine and the live instance, if any. */
struct ls_vendor {
    const struct machine_config *cfg; /* the machine */
    struct instance_ctl *ctl;         /* the live instance's control block, NULL when none */
    bool all;                         /* -a: include this process */
    bool procs;                       /* -w or -a: the process columns */
    bool topology;                    /* -t: the short table, then the drawing */
    bool full;                        /* no -w/-a/-t: the table with core ids, CPUs, NUMA */
    int cmd_w;                        /* width of the COMMAND column */
    struct ls_proc *buf;              /* room for the processes of one device */
};

/* A table: two header lines per column, widths from the widest cell. */
struct ls_table {
    int ncols;                       /* columns */
    const char *head[2][LS_MAX_COLS];/* the header's two lines */
    int width[LS_MAX_COLS];          /* width of each column */
    int fixed[LS_MAX_COLS];          /* > 0: this width, longer cells cut with "..." */
};

/* ---- the device's facts -------------------------------------------------- */

/* The emulated PCI address of a chip: bus 0x10 + chip, device 0, function
 * 0 (there is no PCI device; stable, and distinct per chip). With domain:
 * the "0000:" form of the default table. */
static void ls_bdf(uint32_t chip, bool domain, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%02x:00.0", domain ? "0000:" : "", 0x10u + chip);
}

static void ls_connected(const struct itype *p, uint32_t c, char *buf, size_t cap)
{
    uint32_t nb[TOPO_MAX_DEGREE], k = ls_neighbors_vendor(p, c, nb);
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < k && len < cap; i++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%u", i ? ", " : "", nb[i]);
}

static void ls_core_ids(const struct machine_config *cfg, uint32_t c, char *buf, size_t cap)
{
    uint32_t first = c * cfg->vncs_per_chip, last = first + cfg->vncs_per_chip - 1;
    if (last > first)
        snprintf(buf, cap, "%u-%u", first, last);
    else
        snprintf(buf, cap, "%u", first);
}

/* The processes using chip c: live owners of its VNCs, then (with -a) this
 * one. Returns how many were written to v->buf. */
static uint32_t ls_chip_procs(const struct ls_vendor *v, uint32_t c)
{
    uint32_t n = 0, per = v->cfg->vncs_per_chip;
    for (uint32_t i = 0; v->ctl != NULL && i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *pr = &v->ctl->procs[i];
        if (pr->pid == 0 || !instance_pid_alive(pr->pid, pr->start_time) ||
            !live_owns_any(v->ctl, pr, c * per, per))
            continue;
        v->buf[n].pid = pr->pid;
        live_cmdline(pr->pid, v->buf[n].command, sizeof v->buf[n].command);
        v->buf[n].version = live_runtime_version;
        n++;
    }
    if (v->all) {
        v->buf[n].pid = (int32_t)getpid();
        live_cmdline(v->buf[n].pid, v->buf[n].command, sizeof v->buf[n].command);
        v->buf[n].version = LIVE_NO_RUNTIME;
        n++;
    }
    return n;
}

/* ---- -j ------------------------------------------------------------------- */

static json_t *ls_json_procs(const struct ls_vendor *v, uint32_t c)
{
    json_t *jp = json_array();
    uint32_t np = ls_chip_procs(v, c);
    for (uint32_t i = 0; i < np; i++)
        json_array_append_new(jp, json_pack("{s:i, s:s, s:s}", "pid", (int)v->buf[i].pid,
                                            "command", v->buf[i].command,
                                            "neuron_runtime_version", v->buf[i].version));
    return jp;
}

static json_t *ls_json_device(const struct ls_vendor *v, uint32_t c)
{
    const struct machine_config *cfg = v->cfg;
    char bdf[16], cpus[256], numa[16];
    ls_bdf(c, false, bdf, sizeof bdf);
    live_cpu_range(cpus, sizeof cpus);
    live_numa_node(numa, sizeof numa);
    uint32_t nb[TOPO_MAX_DEGREE], k = ls_neighbors_vendor(cfg->profile, c, nb);
    json_t *conn = k ? json_array() : json_null();
    for (uint32_t i = 0; i < k; i++)
        json_array_append_new(conn, json_integer(nb[i]));
    json_t *ids = json_array();
    for (uint32_t i = 0; i < cfg->vncs_per_chip; i++)
        json_array_append_new(ids, json_integer(c * cfg->vncs_per_chip + i));
    return json_pack("{s:i, s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:o, s:o}", "neuron_device",
                     (int)c, "bdf", bdf, "cpu_affinity", cpus, "numa_node", numa,
                     "connected_to", conn, "nc_count", (int)cfg->vncs_per_chip,
                     "logical_neuroncore_config", (int)cfg->lnc, "memory_size",
                     (json_int_t)cfg->profile->hbm_per_chip, "neuroncore_ids", ids,
                     "neuron_processes", ls_json_procs(v, c));
}

static int ls_json(const struct ls_vendor *v)
{
    json_t *root = json_array();
    for (uint32_t c = 0; c < v->cfg->profile->chips; c++)
        json_array_append_new(root, ls_json_device(v, c));
    json_dumpf(root, stdout, JSON_INDENT(4));
    putchar('\n');
    json_decref(root);
    return 0;
}

/* ---- tables --------------------------------------------------------------- */

static void ls_col(struct ls_table *t, const char *top, const char *bot, int fixed)
{
    int i = t->ncols++;
    t->head[0][i] = top;
    t->head[1][i] = bot;
    t->fixed[i] = fixed;
    int a = (int)strlen(top), b = (int)strlen(bot);
    t->width[i] = fixed > 0 ? fixed : a > b ? a : b;
}

/* The columns of the table the flags ask for. */
static void ls_columns(const struct ls_vendor *v, struct ls_table *t)
{
    bool full = v->full;
    t->ncols = 0;
    ls_col(t, "NEURON", "DEVICE", 0);
    ls_col(t, "NEURON", "CORES", 0);
    if (full)
        ls_col(t, "NEURON", "CORE IDS", 0);
    ls_col(t, "NEURON", "MEMORY", 0);
    ls_col(t, "CONNECTED", "DEVICES", 0);
    ls_col(t, "PCI", "BDF", 0);
    if (full) {
        ls_col(t, "CPU", "AFFINITY", 0);
        ls_col(t, "NUMA", "NODE", 0);
    }
    if (v->procs) {
        ls_col(t, "PID", "", 0);
        ls_col(t, "COMMAND", "", v->cmd_w);
        ls_col(t, "RUNTIME", "VERSION", 0);
    }
}

/* The cells of one row of device c: its facts when first, else blanks;
 * then the process p (NULL: "NA", no process uses the device). */
static void ls_cells(const struct ls_vendor *v, uint32_t c,
                     bool first, const struct ls_proc *p, char cells[][LS_CELL])
{
    const struct machine_config *cfg = v->cfg;
    int i = 0;
    bool full = v->full;
    snprintf(cells[i++], LS_CELL, "%u", c);
    snprintf(cells[i++], LS_CELL, "%u", cfg->vncs_per_chip);
    if (full)
        ls_core_ids(cfg, c, cells[i++], LS_CELL);
    snprintf(cells[i++], LS_CELL, "%.0f GB", (double)cfg->profile->hbm_per_chip / LS_GIB);
    ls_connected(cfg->profile, c, cells[i++], LS_CELL);
    ls_bdf(c, full, cells[i++], LS_CELL);
    if (full) {
        live_cpu_range(cells[i++], LS_CELL);
        live_numa_node(cells[i++], LS_CELL);
    }
    if (!first)
        for (int k = 0; k < i; k++)
            cells[k][0] = '\0';
    if (v->procs) {
        snprintf(cells[i++], LS_CELL, "%s", p ? "" : "NA");
        if (p)
            snprintf(cells[i - 1], LS_CELL, "%d", (int)p->pid);
        snprintf(cells[i++], LS_CELL, "%.*s", LS_CELL - 1, p ? p->command : "NA");
        snprintf(cells[i++], LS_CELL, "%s", p ? p->version : "NA");
    }
}

static void ls_rule(const struct ls_table *t)
{
    for (int i = 0; i < t->ncols; i++) {
        putchar('+');
        for (int j = 0; j < t->width[i] + 2; j++)
            putchar('-');
    }
    printf("+\n");
}

static void ls_header(const struct ls_table *t)
{
    ls_rule(t);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < t->ncols; i++) {
            int len = (int)strlen(t->head[r][i]), left = (t->width[i] - len) / 2;
            printf("| %*s%s%*s ", left, "", t->head[r][i], t->width[i] - len - left, "");
        }
        printf("|\n");
    }
    ls_rule(t);
}

/* Print one row, or (measure) only widen the columns to fit it. */
static void ls_row(struct ls_table *t, char cells[][LS_CELL], bool measure)
{
    for (int i = 0; i < t->ncols; i++) {
        int len = (int)strlen(cells[i]);
        if (t->fixed[i] > 0 && len > t->fixed[i]) {
            snprintf(cells[i] + t->fixed[i] - 3, LS_CELL - (size_t)(t->fixed[i] - 3), "...");
            len = t->fixed[i];
        }
        if (measure && t->fixed[i] == 0 && len > t->width[i])
            t->width[i] = len;
        if (!measure)
            printf("| %-*s ", t->width[i], cells[i]);
    }
    if (!measure)
        printf("|\n");
}

/* Every row of device c (one per process with the process columns). */
static void ls_device_rows(const struct ls_vendor *v, struct ls_table *t, uint32_t c,
                           bool measure)
{
    char cells[LS_MAX_COLS][LS_CELL];
    uint32_t np = v->procs ? ls_chip_procs(v, c) : 0;
    for (uint32_t r = 0; r == 0 || r < np; r++) {
        ls_cells(v, c, r == 0, r < np ? &v->buf[r] : NULL, cells);
        ls_row(t, cells, measure);
    }
    if (!measure && v->all)
        ls_rule(t);
}

static void ls_table(const struct ls_vendor *v)
{
    struct ls_table t;
    ls_columns(v, &t);
    for (uint32_t c = 0; c < v->cfg->profile->chips; c++)
        ls_device_rows(v, &t, c, true);
    ls_header(&t);
    for (uint32_t c = 0; c < v->cfg->profile->chips; c++)
        ls_device_rows(v, &t, c, false);
    if (!v->all)
        ls_rule(&t);
}

/* The lines above every table: what scripts grep for. */
static void ls_head_lines(const struct machine_config *cfg)
{
    char id[32];
    live_instance_id(id, sizeof id);
    printf("instance-type: %s\ninstance-id: %s\n", cfg->profile->name, id);
    if ((cfg->profile->lnc_allowed & (cfg->profile->lnc_allowed - 1)) != 0)
        printf("logical-neuroncore-config: %u\n", cfg->lnc); /* a choice of LNC: trn2, trn3 */
}

int ls_vendor(const struct machine_config *cfg, bool json, bool wide, bool all,
              bool topology)
{
    struct ls_vendor v = {.cfg = cfg, .ctl = malloc(sizeof(struct instance_ctl)),
                          .all = all, .procs = wide || all, .topology = topology,
                          .full = !(wide || all || topology), .cmd_w = wide ? 80 : 40,
                          .buf = calloc(INSTANCE_MAX_PROCS + 1, sizeof(struct ls_proc))};
    int rc = 1;
    if (v.ctl == NULL || v.buf == NULL)
        goto out;
    int live = live_read(v.ctl);
    if (live < 0)
        goto out;
    struct machine_config lmc = *cfg; /* a live instance shows the machine it emulates */
    if (live == 0) {
        free(v.ctl);
        v.ctl = NULL;
    } else {
        live_machine(v.ctl, &lmc);
        v.cfg = cfg = &lmc;
    }
    if (json) {
        rc = ls_json(&v);
        goto out;
    }
    ls_head_lines(cfg);
    ls_table(&v);
    if (topology) {
        printf("\n\nNeuron Device Topology\n");
        ls_topology(cfg);
    }
    rc = 0;
out:
    free(v.buf);
    free(v.ctl);
    return rc;
}
