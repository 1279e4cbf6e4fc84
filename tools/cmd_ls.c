/*
 * cmd_ls.c: `trnemu ls`: the emulated machine in the spirit of neuron-ls:
 * instance type, chips, NeuronCores and VNCs per chip, HBM, the chips each
 * chip is linked to, and which VNCs this environment makes visible.
 *   --json      the same as JSON (with the links)
 *   --profiles  every instance type trnemu can emulate
 *   --topology  the NeuronLink topology drawn in ASCII
 *   --stats     the live shared instance: its processes, which VNCs each
 *               owns, and the byte and message counters of every link
 * and neuron-ls's own interface (called as neuron-ls, or with its flags):
 *   -j, --json-output     neuron-ls's JSON: one object per device
 *   -w, --wide            the device table with the processes using each
 *   -a, --show-all-procs  also this process (not a runtime user)
 *   -t, --topology        the device table, then the NeuronLink drawing
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices/config.h"
#include "devices/instance.h"
#include "devices/node.h"
#include "devices/topology.h"
#include "tools/live.h"
#include "tools/tool.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static bool ls_vnc_visible(const struct machine_config *cfg, uint32_t vnc)
{
    for (uint32_t i = 0; i < cfg->visible_count; i++)
        if (cfg->visible[i] == vnc)
            return true;
    return false;
}

/* Append ids[0..n) to buf as ranges ("0-3,8"). */
static void ls_ranges(const uint32_t *ids, uint32_t n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        while (j + 1 < n && ids[j + 1] == ids[j] + 1)
            j++;
        int w = j > i ? snprintf(buf + len, cap - len, "%s%u-%u", len ? "," : "", ids[i], ids[j])
                      : snprintf(buf + len, cap - len, "%s%u", len ? "," : "", ids[i]);
        if (w < 0 || (size_t)w >= cap - len)
            return;
        len += (size_t)w;
        i = j;
    }
}

/* Count and print (as "a-b" ranges) the visible VNCs of one chip. */
static uint32_t ls_chip_visible(const struct machine_config *cfg, uint32_t chip, char *buf,
                                size_t cap)
{
    uint32_t ids[CONFIG_MAX_VNCS], n = 0;
    for (uint32_t v = chip * cfg->vncs_per_chip; v < (chip + 1) * cfg->vncs_per_chip; v++)
        if (ls_vnc_visible(cfg, v))
            ids[n++] = v;
    ls_ranges(ids, n, buf, cap);
    return n;
}

static int ls_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The chips linked to chip, ascending. */
static uint32_t ls_neighbors(const struct dev_profile *p, uint32_t chip, uint32_t *chips)
{
    uint32_t links[TOPO_MAX_DEGREE];
    uint32_t n = topo_neighbors(p, chip, chips, links, TOPO_MAX_DEGREE);
    if (n > TOPO_MAX_DEGREE)
        n = TOPO_MAX_DEGREE;
    qsort(chips, n, sizeof *chips, ls_cmp_u32);
    return n;
}

static const char *ls_topology_name(const struct dev_profile *p)
{
    switch (p->links) {
    case DEV_LINKS_TORUS:
        return p->us_nodes > 1 ? "4x4 2D torus, rings across the UltraServer's servers"
                               : "4x4 2D torus";
    case DEV_LINKS_RING:
        return "ring";
    case DEV_LINKS_SWITCH:
        return "NeuronSwitch all-to-all";
    case DEV_LINKS_NONE:
        break;
    }
    return "none";
}

static void ls_text(const struct machine_config *cfg)
{
    const struct dev_profile *p = cfg->profile;
    printf("instance-type: %s (%u x %s, NeuronCore-v%d, emulated by trnemu)\n", p->name,
           p->chips, p->chip_name, (int)p->gen);
    printf("logical-nc-config: %u   vncs: %u total, %u visible\n", cfg->lnc, cfg->total_vncs,
           cfg->visible_count);
    printf("neuronlink: %s, %u links\n", ls_topology_name(p), topo_nlinks(p));
    const char *rule = "+--------+-------+-----------+-----------+--------+------------------+"
                       "-------------------+";
    printf("%s\n", rule);
    printf("| DEVICE | CORES | VNC IDS   | HBM       | STACKS | VISIBLE VNCS     | "
           "CONNECTED DEVICES |\n");
    printf("%s\n", rule);
    for (uint32_t c = 0; c < p->chips; c++) {
        char ids[32], vis[256], conn[64];
        snprintf(ids, sizeof ids, "%u-%u", c * cfg->vncs_per_chip,
                 (c + 1) * cfg->vncs_per_chip - 1);
        uint32_t n = ls_chip_visible(cfg, c, vis, sizeof vis);
        uint32_t nb[TOPO_MAX_DEGREE], k = ls_neighbors(p, c, nb);
        size_t len = 0;
        conn[0] = '\0';
        for (uint32_t i = 0; i < k && len < sizeof conn; i++)
            len += (size_t)snprintf(conn + len, sizeof conn - len, "%s%u", i ? ", " : "", nb[i]);
        if (p->links == DEV_LINKS_SWITCH && k > 0)
            snprintf(conn, sizeof conn, "all %u (switch)", k);
        printf("| %6u | %5u | %-9s | %5.0f GiB | %6u | %-16s | %-17s |\n", c, p->cores_per_chip,
               ids, (double)p->hbm_per_chip / GIB, p->hbm_stacks, n ? vis : "-",
               k ? conn : "-");
    }
    printf("%s\n", rule);
}

/* ---- --json --------------------------------------------------------------- */

static json_t *ls_json_chip(const struct machine_config *cfg, uint32_t c)
{
    json_t *vis = json_array(), *conn = json_array();
    for (uint32_t v = c * cfg->vncs_per_chip; v < (c + 1) * cfg->vncs_per_chip; v++)
        if (ls_vnc_visible(cfg, v))
            json_array_append_new(vis, json_integer(v));
    uint32_t nb[TOPO_MAX_DEGREE], k = ls_neighbors(cfg->profile, c, nb);
    for (uint32_t i = 0; i < k; i++)
        json_array_append_new(conn, json_integer(nb[i]));
    return json_pack("{s:i, s:i, s:i, s:i, s:I, s:i, s:o, s:o}", "device", (int)c, "cores",
                     (int)cfg->profile->cores_per_chip, "first_vnc",
                     (int)(c * cfg->vncs_per_chip), "vncs", (int)cfg->vncs_per_chip,
                     "hbm_bytes", (json_int_t)cfg->profile->hbm_per_chip, "hbm_stacks",
                     (int)cfg->profile->hbm_stacks, "visible_vncs", vis,
                     "connected_devices", conn);
}

static json_t *ls_json_links(const struct dev_profile *p)
{
    json_t *links = json_array();
    for (uint32_t l = 0; l < topo_nlinks(p); l++) {
        uint32_t a, b;
        topo_link_ends(p, l, &a, &b);
        json_array_append_new(links, json_pack("{s:i, s:i, s:i}", "link", (int)l, "a", (int)a,
                                               "b", (int)b));
    }
    return links;
}

static int ls_json_print(json_t *root)
{
    if (root == NULL)
        return 1;
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
    return 0;
}

static int ls_json(const struct machine_config *cfg)
{
    const struct dev_profile *p = cfg->profile;
    json_t *chips = json_array();
    for (uint32_t c = 0; c < p->chips; c++)
        json_array_append_new(chips, ls_json_chip(cfg, c));
    return ls_json_print(json_pack(
        "{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:o, s:o}", "instance_type", p->name,
        "chip", p->chip_name, "nc_generation", (int)p->gen, "chips", (int)p->chips,
        "cores_per_chip", (int)p->cores_per_chip, "ultraserver_servers", (int)p->us_nodes,
        "lnc", (int)cfg->lnc, "total_vncs",
        (int)cfg->total_vncs, "visible_vncs", (int)cfg->visible_count, "topology",
        ls_topology_name(p), "devices", chips, "links", ls_json_links(p)));
}

/* ---- --topology ----------------------------------------------------------- */

/* One 4x4 torus node: chips node*16 .. node*16+15. */
static void ls_draw_node(uint32_t node)
{
    const uint32_t S = TOPO_TORUS_SIDE;
    const char *wrap = "      :      :      :      :\n";
    const char *vert = "      |      |      |      |\n";
    printf("%s", wrap);
    for (uint32_t r = 0; r < S; r++) {
        printf("  ..");
        for (uint32_t c = 0; c < S; c++)
            printf("%s[%2u]", c ? "---" : " ", node * TOPO_NODE_CHIPS + r * S + c);
        printf(" ..\n");
        printf("%s", r + 1 < S ? vert : wrap);
    }
}

static void ls_draw_torus(const struct dev_profile *p)
{
    for (uint32_t n = 0; n < p->nodes; n++) {
        if (p->nodes > 1)
            printf("\nnode %u (chips %u-%u):\n", n, n * TOPO_NODE_CHIPS,
                   (n + 1) * TOPO_NODE_CHIPS - 1);
        else
            printf("\n");
        ls_draw_node(n);
    }
    printf("\n'..' and ':' mark the wraparound links: each row and each column is a ring.\n");
}

/* The rings across the servers of an UltraServer (chip c of every server). */
static void ls_draw_us_rings(const struct dev_profile *p)
{
    struct dev_profile us;
    node_ultraserver_view(p, &us);
    if (us.nodes <= 1)
        return;
    printf("\nUltraServer: %u servers like this one, each its own node (host and runtime);\n"
           "NeuronLink rings across the servers join the chips with the same position\n"
           "(server:chip): %u rings of %u links:\n", us.nodes, TOPO_NODE_CHIPS, us.nodes);
    for (uint32_t c = 0; c < TOPO_NODE_CHIPS; c++) {
        printf("  ");
        for (uint32_t n = 0; n <= us.nodes; n++)
            printf("%s%u:%-2u", n ? " - " : "", n % us.nodes, c);
        printf(c % 2 ? "\n" : "    ");
    }
    printf("An UltraServer job (trnemu launch --nodes %u, docs/nodes.md) carries its\n"
           "collectives between servers over these rings.\n", us.nodes);
}

static void ls_draw_ring(const struct dev_profile *p)
{
    printf("\n  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("%s[%2u]", c ? "---" : "", c);
    printf("\n   '");
    for (uint32_t i = 0; i < p->chips * 7 - 8; i++)
        putchar('-');
    printf("'\n  (the last chip is linked back to the first)\n");
}

static void ls_draw_switch(const struct dev_profile *p)
{
    printf("\n  every chip reaches every other chip in one hop through the switch:\n  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("[%2u]%s", c, c + 1 < p->chips ? " " : "\n");
    printf("  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("  |  ");
    printf("\n  ");
    for (uint32_t c = 0; c < p->chips; c++)
        printf("=====");
    printf("\n  NeuronSwitch\n\nbandwidth per chip by level:\n");
    struct topo_level lv[4];
    uint32_t n = topo_levels(p, lv, 4);
    for (uint32_t i = 0; i < n && i < 4; i++)
        printf("  %-28s %u links  %4u GB/s%s\n", lv[i].name, lv[i].links, lv[i].gbytes_s,
               i == 0 ? "  (the chips of this machine)" : "");
}

static void ls_topology(const struct machine_config *cfg)
{
    const struct dev_profile *p = cfg->profile;
    printf("%s: %u x %s, NeuronLink %s, %u links\n", p->name, p->chips, p->chip_name,
           ls_topology_name(p), topo_nlinks(p));
    if (p->links == DEV_LINKS_TORUS) {
        ls_draw_torus(p);
        ls_draw_us_rings(p);
    }
    else if (p->links == DEV_LINKS_RING)
        ls_draw_ring(p);
    else if (p->links == DEV_LINKS_SWITCH)
        ls_draw_switch(p);
    else
        printf("a single chip: no links\n");
}

/* ---- --stats -------------------------------------------------------------- */

/* VNCs owned by proc, as ranges; returns how many. */
static uint32_t ls_owned(const struct instance_ctl *c, const struct instance_proc *proc,
                         char *buf, size_t cap)
{
    uint32_t ids[CONFIG_MAX_VNCS], n = 0;
    for (uint32_t v = 0; v < c->total_vncs; v++)
        if (c->owner[v].pid == proc->pid && c->owner[v].start_time == proc->start_time)
            ids[n++] = v;
    ls_ranges(ids, n, buf, cap);
    return n;
}

static void ls_stats_text(const char *dir, const struct instance_ctl *c)
{
    const struct dev_profile *p = profile_find(c->profile);
    time_t t = (time_t)(c->created_ns / 1000000000ull);
    char when[64];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", localtime(&t));
    printf("instance: %s (%s, LNC=%u, %u VNCs), created %s\n", dir, c->profile, c->lnc,
           c->total_vncs, when);
    printf("processes:\n");
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *pr = &c->procs[i];
        if (pr->pid == 0)
            continue;
        char vncs[1024];
        uint32_t n = ls_owned(c, pr, vncs, sizeof vncs);
        printf("  pid %-8d %-5s owns %u VNC%s: %s\n", (int)pr->pid,
               instance_pid_alive(pr->pid, pr->start_time) ? "" : "(gone)", n, n == 1 ? "" : "s",
               n ? vncs : "-");
    }
    printf("models (per VNC):\n");
    uint32_t shown = 0;
    for (uint32_t v = 0; v < c->total_vncs && v < CONFIG_MAX_VNCS; v++) {
        const struct instance_vnc_use *u = &c->use[v];
        uint32_t models = atomic_load(&u->models), stand = atomic_load(&u->stand_ins);
        if (models == 0)
            continue;
        shown++;
        printf("  vnc %-4u %.*s%s (%u loaded), %llu executions%s\n", v,
               (int)sizeof u->model, u->model, models > 1 ? " and others" : "", models,
               (unsigned long long)atomic_load(&u->executions),
               stand ? "  STAND-IN: vendor NEFF, outputs are zeros, not computed" : "");
    }
    if (shown == 0)
        printf("  (none loaded)\n");
    printf("links (bytes and messages; a->b is the direction from the first chip):\n");
    printf("  %4s  %-7s  %14s %10s  %14s %10s\n", "LINK", "CHIPS", "a->b BYTES", "MSGS",
           "b->a BYTES", "MSGS");
    for (uint32_t l = 0; l < c->nlinks; l++) {
        uint32_t a, b;
        topo_link_ends(p, l, &a, &b);
        char ends[16];
        snprintf(ends, sizeof ends, "%u-%u", a, b);
        printf("  %4u  %-7s  %14llu %10llu  %14llu %10llu\n", l, ends,
               (unsigned long long)atomic_load(&c->links[l][0].bytes),
               (unsigned long long)atomic_load(&c->links[l][0].messages),
               (unsigned long long)atomic_load(&c->links[l][1].bytes),
               (unsigned long long)atomic_load(&c->links[l][1].messages));
    }
    if (c->nlinks == 0)
        printf("  (no links)\n");
}

static int ls_stats_json(const char *dir, const struct instance_ctl *c)
{
    const struct dev_profile *p = profile_find(c->profile);
    json_t *procs = json_array(), *links = json_array();
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *pr = &c->procs[i];
        if (pr->pid == 0)
            continue;
        json_t *vncs = json_array();
        for (uint32_t v = 0; v < c->total_vncs; v++)
            if (c->owner[v].pid == pr->pid && c->owner[v].start_time == pr->start_time)
                json_array_append_new(vncs, json_integer(v));
        json_array_append_new(procs, json_pack("{s:i, s:b, s:o}", "pid", (int)pr->pid, "alive",
                                               instance_pid_alive(pr->pid, pr->start_time),
                                               "vncs", vncs));
    }
    json_t *models = json_array();
    for (uint32_t v = 0; v < c->total_vncs && v < CONFIG_MAX_VNCS; v++) {
        const struct instance_vnc_use *u = &c->use[v];
        char name[INSTANCE_MODEL_NAME + 1];
        snprintf(name, sizeof name, "%.*s", (int)sizeof u->model, u->model);
        if (atomic_load(&u->models) > 0)
            json_array_append_new(models, json_pack(
                "{s:i, s:s, s:i, s:I, s:b}", "vnc", (int)v, "model", name, "loaded",
                (int)atomic_load(&u->models), "executions",
                (json_int_t)atomic_load(&u->executions), "stand_in",
                atomic_load(&u->stand_ins) > 0));
    }
    for (uint32_t l = 0; l < c->nlinks; l++) {
        uint32_t a, b;
        topo_link_ends(p, l, &a, &b);
        json_array_append_new(links, json_pack(
            "{s:i, s:i, s:i, s:I, s:I, s:I, s:I}", "link", (int)l, "a", (int)a, "b", (int)b,
            "bytes_ab", (json_int_t)atomic_load(&c->links[l][0].bytes), "messages_ab",
            (json_int_t)atomic_load(&c->links[l][0].messages), "bytes_ba",
            (json_int_t)atomic_load(&c->links[l][1].bytes), "messages_ba",
            (json_int_t)atomic_load(&c->links[l][1].messages)));
    }
    return ls_json_print(json_pack("{s:s, s:b, s:s, s:i, s:i, s:o, s:o, s:o}", "instance", dir,
                                   "live", 1, "instance_type", c->profile, "lnc", (int)c->lnc,
                                   "total_vncs", (int)c->total_vncs, "processes", procs,
                                   "models", models, "links", links));
}

static int ls_stats(bool json)
{
    char dir[INSTANCE_PATH_MAX];
    if (instance_dir_from_env(dir, sizeof dir) != NRT_SUCCESS)
        return 1;
    struct instance_ctl *c = malloc(sizeof *c);
    if (c == NULL)
        return 1;
    size_t swept = instance_sweep(dir); /* this user's dead instances beside it */
    if (swept > 0 && !json)
        printf("removed %zu stale instance%s of this user (every process gone)\n", swept,
               swept == 1 ? "" : "s");
    bool live = false;
    NRT_STATUS st = instance_read(dir, c, &live);
    int rc = 0;
    if (st == NRT_INVALID) {
        rc = 1;
    } else if (st != NRT_SUCCESS || !live) {
        if (json)
            rc = ls_json_print(json_pack("{s:s, s:b}", "instance", dir, "live", 0));
        else
            printf("no live instance at %s (TRNEMU_INSTANCE_NAME and TRNEMU_SHM_DIR choose it)\n",
                   dir);
    } else {
        rc = json ? ls_stats_json(dir, c) : (ls_stats_text(dir, c), 0);
    }
    free(c);
    return rc;
}

/* ---- neuron-ls's interface (-j, -w, -a, -t) ------------------------------- */

/* One process using a device, as neuron-ls lists it. */
struct ls_proc {
    int32_t pid;          /* process id */
    char command[4096];   /* its command line */
    const char *version;  /* runtime version, LIVE_NO_RUNTIME when not a runtime user */
};

/* What -w/-a/-j show beyond the machine: the live instance, if any. */
struct ls_vendor {
    const struct machine_config *cfg; /* the machine */
    struct instance_ctl *ctl;         /* the live instance's control block, NULL when none */
    bool all;                         /* -a: include this process */
    bool wide;                        /* -w: full command column */
};

/* The emulated PCI address of a chip (bus 0x10 + chip; no real device). */
static void ls_bdf(uint32_t chip, char *buf, size_t cap)
{
    snprintf(buf, cap, "%02x:00.0", 0x10u + chip);
}

/* The processes using chip c: live owners of its VNCs, then (with -a) this
 * one. Returns how many were written to out (at most cap). */
static uint32_t ls_chip_procs(const struct ls_vendor *v, uint32_t c, struct ls_proc *out,
                              uint32_t cap)
{
    uint32_t n = 0, per = v->cfg->vncs_per_chip;
    for (uint32_t i = 0; v->ctl != NULL && i < INSTANCE_MAX_PROCS && n < cap; i++) {
        const struct instance_proc *pr = &v->ctl->procs[i];
        if (pr->pid == 0 || !instance_pid_alive(pr->pid, pr->start_time) ||
            !live_owns_any(v->ctl, pr, c * per, per))
            continue;
        out[n].pid = pr->pid;
        live_cmdline(pr->pid, out[n].command, sizeof out[n].command);
        out[n].version = live_runtime_version;
        n++;
    }
    if (v->all && n < cap) {
        out[n].pid = (int32_t)getpid();
        live_cmdline(out[n].pid, out[n].command, sizeof out[n].command);
        out[n].version = LIVE_NO_RUNTIME;
        n++;
    }
    return n;
}

static json_t *ls_vendor_json_device(const struct ls_vendor *v, uint32_t c,
                                     struct ls_proc *procs, uint32_t cap)
{
    const struct machine_config *cfg = v->cfg;
    char bdf[16], cpus[32];
    ls_bdf(c, bdf, sizeof bdf);
    live_cpu_range(cpus, sizeof cpus);
    uint32_t nb[TOPO_MAX_DEGREE], k = ls_neighbors(cfg->profile, c, nb);
    json_t *conn = k ? json_array() : json_null();
    for (uint32_t i = 0; i < k; i++)
        json_array_append_new(conn, json_integer(nb[i]));
    json_t *ids = json_array();
    for (uint32_t i = 0; i < cfg->vncs_per_chip; i++)
        json_array_append_new(ids, json_integer(c * cfg->vncs_per_chip + i));
    json_t *jp = json_array();
    uint32_t np = ls_chip_procs(v, c, procs, cap);
    for (uint32_t i = 0; i < np; i++)
        json_array_append_new(jp, json_pack("{s:i, s:s, s:s}", "pid", (int)procs[i].pid,
                                            "command", procs[i].command,
                                            "neuron_runtime_version", procs[i].version));
    return json_pack("{s:i, s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:o, s:o, s:s}", "neuron_device",
                     (int)c, "bdf", bdf, "cpu_affinity", cpus, "numa_node", "-1",
                     "connected_to", conn, "nc_count", (int)cfg->profile->cores_per_chip,
                     "logical_neuroncore_config", (int)cfg->lnc, "memory_size",
                     (json_int_t)cfg->profile->hbm_per_chip, "neuroncore_ids", ids,
                     "neuron_processes", jp, "instance_type", cfg->profile->name);
}

static int ls_vendor_json(const struct ls_vendor *v, struct ls_proc *procs, uint32_t cap)
{
    json_t *root = json_array();
    for (uint32_t c = 0; c < v->cfg->profile->chips; c++)
        json_array_append_new(root, ls_vendor_json_device(v, c, procs, cap));
    json_dumpf(root, stdout, JSON_INDENT(4));
    putchar('\n');
    json_decref(root);
    return 0;
}

/* The widths of the device table's columns; the process columns last. */
static const int ls_w[] = {6, 6, 7, 7, 17, 7, 7, 0, 7};

static void ls_vendor_rule(bool procs, int cmd_w)
{
    int n = procs ? 9 : 6;
    for (int i = 0; i < n; i++) {
        int w = i == 7 ? cmd_w : ls_w[i];
        putchar('+');
        for (int j = 0; j < w + 2; j++)
            putchar('-');
    }
    printf("+\n");
}

static void ls_vendor_header(bool procs, int cmd_w)
{
    static const char *top[] = {"NEURON", "NEURON", "LOGICAL", "NEURON", "CONNECTED",
                                "PCI", "PID", "COMMAND", "RUNTIME"};
    static const char *bot[] = {"DEVICE", "CORES", "NC", "MEMORY", "DEVICES", "BDF", "", "",
                                "VERSION"};
    int n = procs ? 9 : 6;
    ls_vendor_rule(procs, cmd_w);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < n; i++)
            printf("| %-*s ", i == 7 ? cmd_w : ls_w[i], r ? bot[i] : top[i]);
        printf("|\n");
    }
    ls_vendor_rule(procs, cmd_w);
}

/* One process cell group: pid, command cut to cmd_w (with "..."), version. */
static void ls_vendor_proc_cells(const struct ls_proc *p, int cmd_w)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s", p ? p->command : "");
    if ((int)strlen(cmd) > cmd_w && cmd_w > 3)
        snprintf(cmd + cmd_w - 3, sizeof cmd - (size_t)(cmd_w - 3), "...");
    char pid[16] = "";
    if (p)
        snprintf(pid, sizeof pid, "%d", (int)p->pid);
    printf("| %-*s | %-*s | %-*s ", ls_w[6], pid, cmd_w, cmd, ls_w[8], p ? p->version : "");
}

static void ls_vendor_row(const struct ls_vendor *v, uint32_t c, struct ls_proc *procs,
                          uint32_t cap, bool show_procs, int cmd_w)
{
    const struct machine_config *cfg = v->cfg;
    char mem[16], bdf[16], conn[64] = "";
    snprintf(mem, sizeof mem, "%.0f GB", (double)cfg->profile->hbm_per_chip / GIB);
    ls_bdf(c, bdf, sizeof bdf);
    uint32_t nb[TOPO_MAX_DEGREE], k = ls_neighbors(cfg->profile, c, nb);
    size_t len = 0;
    for (uint32_t i = 0; i < k && len < sizeof conn; i++)
        len += (size_t)snprintf(conn + len, sizeof conn - len, "%s%u", i ? ", " : "", nb[i]);
    if ((int)strlen(conn) > ls_w[4])
        snprintf(conn + ls_w[4] - 3, sizeof conn - (size_t)(ls_w[4] - 3), "...");
    uint32_t np = show_procs ? ls_chip_procs(v, c, procs, cap) : 0;
    for (uint32_t r = 0; r == 0 || r < np; r++) {
        if (r == 0)
            printf("| %-*u | %-*u | %-*u | %-*s | %-*s | %-*s ", ls_w[0], c, ls_w[1],
                   cfg->profile->cores_per_chip, ls_w[2], cfg->vncs_per_chip, ls_w[3], mem,
                   ls_w[4], conn, ls_w[5], bdf);
        else
            printf("| %-*s | %-*s | %-*s | %-*s | %-*s | %-*s ", ls_w[0], "", ls_w[1], "",
                   ls_w[2], "", ls_w[3], "", ls_w[4], "", ls_w[5], "");
        if (show_procs)
            ls_vendor_proc_cells(r < np ? &procs[r] : NULL, cmd_w);
        printf("|\n");
    }
    if (show_procs && v->all)
        ls_vendor_rule(true, cmd_w);
}

static void ls_vendor_table(const struct ls_vendor *v, struct ls_proc *procs, uint32_t cap)
{
    bool show_procs = v->wide || v->all;
    int cmd_w = v->wide ? 80 : 40;
    ls_vendor_header(show_procs, cmd_w);
    for (uint32_t c = 0; c < v->cfg->profile->chips; c++)
        ls_vendor_row(v, c, procs, cap, show_procs, cmd_w);
    if (!(show_procs && v->all))
        ls_vendor_rule(show_procs, cmd_w);
}

/* neuron-ls: the table (or JSON) of the machine and the live instance. */
static int ls_vendor(const struct machine_config *cfg, bool json, bool wide, bool all,
                     bool topology)
{
    struct ls_vendor v = {.cfg = cfg, .ctl = malloc(sizeof(struct instance_ctl)),
                          .all = all, .wide = wide};
    struct ls_proc *procs = calloc(INSTANCE_MAX_PROCS + 1, sizeof *procs);
    int rc = 1;
    if (v.ctl == NULL || procs == NULL)
        goto out;
    int live = live_read(v.ctl);
    if (live < 0)
        goto out;
    if (live == 0) {
        free(v.ctl);
        v.ctl = NULL;
    }
    if (json) {
        rc = ls_vendor_json(&v, procs, INSTANCE_MAX_PROCS + 1);
        goto out;
    }
    ls_vendor_table(&v, procs, INSTANCE_MAX_PROCS + 1);
    if (topology) {
        printf("\n\nNeuron Device Topology\n");
        ls_topology(cfg);
    }
    rc = 0;
out:
    free(procs);
    free(v.ctl);
    return rc;
}

/* ---- --profiles ----------------------------------------------------------- */

static void ls_profiles(void)
{
    printf("%-18s %6s %6s %8s %10s %6s  %s\n", "INSTANCE", "CHIPS", "CORES", "NC", "HBM/CHIP",
           "LNC", "NEURONLINK");
    for (size_t i = 0; i < profile_count(); i++) {
        const struct dev_profile *p = profile_at(i);
        char gen[8];
        snprintf(gen, sizeof gen, "v%d", (int)p->gen);
        printf("%-18s %6u %6u %8s %6.0f GiB %6u  %s\n", p->name, p->chips,
               p->chips * p->cores_per_chip, gen,
               (double)p->hbm_per_chip / GIB, p->lnc_default, ls_topology_name(p));
    }
}

static bool ls_is(const char *arg, const char *shrt, const char *lng)
{
    return strcmp(arg, shrt) == 0 || strcmp(arg, lng) == 0;
}

int cmd_ls(int argc, char **argv)
{
    if (tool_help_asked(argc, argv, false))
        return tool_usage("ls", stdout);
    bool json = false, topology = false, stats = false;
    /* Called as neuron-ls: its table by default. */
    const char *base = strrchr(argv[0], '/');
    bool vendor = strcmp(base ? base + 1 : argv[0], "neuron-ls") == 0;
    bool vjson = false, wide = false, all = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (ls_is(argv[i], "-j", "--json-output")) {
            vjson = vendor = true;
        } else if (ls_is(argv[i], "-w", "--wide")) {
            wide = vendor = true;
        } else if (ls_is(argv[i], "-a", "--show-all-procs")) {
            all = vendor = true;
        } else if (ls_is(argv[i], "-t", "--topology")) {
            topology = true;
            vendor = vendor || strcmp(argv[i], "-t") == 0;
        } else if (strcmp(argv[i], "--stats") == 0) {
            stats = true;
        } else if (strcmp(argv[i], "--profiles") == 0) {
            ls_profiles();
            return 0;
        } else {
            return tool_usage_error("ls", "unknown option");
        }
    }
    if (stats)
        return ls_stats(json);
    struct machine_config cfg;
    if (config_from_env(&cfg) != NRT_SUCCESS)
        return 1;
    if (vendor)
        return ls_vendor(&cfg, vjson, wide, all, topology);
    if (topology) {
        ls_topology(&cfg);
        return 0;
    }
    if (json)
        return ls_json(&cfg);
    ls_text(&cfg);
    return 0;
}
