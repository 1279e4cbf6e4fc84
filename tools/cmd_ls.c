/*
 * cmd_ls.c: `trnemu ls`: the emulated machine in the spirit of neuron-ls:
 * instance type, chips, NeuronCores and VNCs per chip, HBM, the chips each
 * chip is linked to, and which VNCs this environment makes visible.
 *   --json      the same as JSON (with the links)
 *   --profiles  every instance type trnemu can emulate
 *   --topology  the NeuronLink topology drawn in ASCII
 *   --stats     the live shared instance: its processes, which VNCs each
 *               owns, and the byte and message counters of every link
 *               (the live instances when the one named is not live)
 *   --instance NAME  the instance to read (as TRNEMU_INSTANCE_NAME)
 * and neuron-ls's own interface (called as neuron-ls, or with its flags:
 * -j, -w, -a, -t), which ls_vendor.c prints; ls_topo.c draws topologies.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "devices/config/config.h"
#include "devices/machine/instance.h"
#include "devices/config/node.h"
#include "devices/config/topology.h"
#include "tools/live.h"
#include "tools/ls.h"
#include "tools/tool.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static bool ls_vnc_visible(const struct machine_config *cfg, uint32_t vnc)
{
    for (uint32_t i = 0; i < cfg->visible_count; i++)
        if (cfg->visible[i] == vnc)
            return true;
    return false;
}

/* Count and print (as "a-b" ranges) the visible VNCs of one chip. */
static uint32_t ls_chip_visible(const struct machine_config *cfg, uint32_t chip, char *buf,
                                size_t cap)
{
    uint32_t ids[CONFIG_MAX_VNCS], n = 0;
    for (uint32_t v = chip * cfg->vncs_per_chip; v < (chip + 1) * cfg->vncs_per_chip; v++)
        if (ls_vnc_visible(cfg, v))
            ids[n++] = v;
    tool_ranges(ids, n, buf, cap);
    return n;
}


static void ls_text(const struct machine_config *cfg)
{
    const struct itype *p = cfg->profile;
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

static json_t *ls_json_links(const struct itype *p)
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
    const struct itype *p = cfg->profile;
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

/* ---- --stats -------------------------------------------------------------- */

/* VNCs owned by proc, as ranges; returns how many. */
static uint32_t ls_owned(const struct instance_ctl *c, const struct instance_proc *proc,
                         char *buf, size_t cap)
{
    uint32_t ids[CONFIG_MAX_VNCS], n = 0;
    for (uint32_t v = 0; v < c->total_vncs; v++)
        if (c->owner[v].pid == proc->pid && c->owner[v].start_time == proc->start_time)
            ids[n++] = v;
    tool_ranges(ids, n, buf, cap);
    return n;
}

static void ls_stats_text(const char *dir, const struct instance_ctl *c)
{
    const struct itype *p = itype_find(c->profile);
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
    const struct itype *p = itype_find(c->profile);
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

/* The names of the live instances beside this one, as a JSON array. */
static json_t *ls_live_names(void)
{
    struct live_entry e[64];
    uint32_t n = live_list(e, 64);
    json_t *a = json_array();
    for (uint32_t i = 0; i < n && i < 64; i++)
        json_array_append_new(a, json_string(e[i].name));
    return a;
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
        if (json) {
            rc = ls_json_print(json_pack("{s:s, s:b, s:o}", "instance", dir, "live", 0,
                                         "live_instances", ls_live_names()));
        } else {
            printf("no live instance at %s (--instance NAME, or TRNEMU_INSTANCE_NAME and "
                   "TRNEMU_SHM_DIR, choose it)\n", dir);
            live_list_print(stdout, "ls --stats");
        }
    } else {
        rc = json ? ls_stats_json(dir, c) : (ls_stats_text(dir, c), 0);
    }
    free(c);
    return rc;
}

/* ---- --profiles ----------------------------------------------------------- */

static void ls_profiles(void)
{
    printf("%-18s %6s %6s %8s %10s %6s  %s\n", "INSTANCE", "CHIPS", "CORES", "NC", "HBM/CHIP",
           "LNC", "NEURONLINK");
    for (size_t i = 0; i < itype_count(); i++) {
        const struct itype *p = itype_at(i);
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
        } else if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
            if (live_use_instance(argv[++i]) != 0)
                return 1;
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
