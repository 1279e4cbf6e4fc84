/*
 * cmd_ls.c: `trnemu ls`: the emulated machine in the spirit of neuron-ls:
 * instance type, chips, NeuronCores and VNCs per chip, HBM, and which VNCs
 * this environment makes visible. `--json` prints the same as JSON;
 * `--profiles` lists every instance type trnemu can emulate.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "devices/config.h"
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
    uint32_t first = chip * cfg->vncs_per_chip, n = 0;
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t v = first; v < first + cfg->vncs_per_chip; v++) {
        if (!ls_vnc_visible(cfg, v))
            continue;
        uint32_t end = v;
        while (end + 1 < first + cfg->vncs_per_chip && ls_vnc_visible(cfg, end + 1))
            end++;
        int w = end > v ? snprintf(buf + len, cap - len, "%s%u-%u", len ? "," : "", v, end)
                        : snprintf(buf + len, cap - len, "%s%u", len ? "," : "", v);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
        n += end - v + 1;
        v = end;
    }
    return n;
}

static void ls_text(const struct machine_config *cfg)
{
    const struct dev_profile *p = cfg->profile;
    printf("instance-type: %s (%u x %s, NeuronCore-v%d, emulated by trnemu)\n", p->name,
           p->chips, p->chip_name, (int)p->gen);
    printf("logical-nc-config: %u   vncs: %u total, %u visible\n", cfg->lnc, cfg->total_vncs,
           cfg->visible_count);
    printf("+--------+-------+-----------+-----------+--------+------------------+\n");
    printf("| DEVICE | CORES | VNC IDS   | HBM       | STACKS | VISIBLE VNCS     |\n");
    printf("+--------+-------+-----------+-----------+--------+------------------+\n");
    for (uint32_t c = 0; c < p->chips; c++) {
        char ids[32], vis[256];
        snprintf(ids, sizeof ids, "%u-%u", c * cfg->vncs_per_chip,
                 (c + 1) * cfg->vncs_per_chip - 1);
        uint32_t n = ls_chip_visible(cfg, c, vis, sizeof vis);
        printf("| %6u | %5u | %-9s | %5.0f GiB | %6u | %-16s |\n", c, p->cores_per_chip, ids,
               (double)p->hbm_per_chip / GIB, p->hbm_stacks, n ? vis : "-");
    }
    printf("+--------+-------+-----------+-----------+--------+------------------+\n");
}

static json_t *ls_json_chip(const struct machine_config *cfg, uint32_t c)
{
    json_t *vis = json_array();
    for (uint32_t v = c * cfg->vncs_per_chip; v < (c + 1) * cfg->vncs_per_chip; v++)
        if (ls_vnc_visible(cfg, v))
            json_array_append_new(vis, json_integer(v));
    return json_pack("{s:i, s:i, s:i, s:i, s:I, s:i, s:o}", "device", (int)c, "cores",
                     (int)cfg->profile->cores_per_chip, "first_vnc",
                     (int)(c * cfg->vncs_per_chip), "vncs", (int)cfg->vncs_per_chip,
                     "hbm_bytes", (json_int_t)cfg->profile->hbm_per_chip, "hbm_stacks",
                     (int)cfg->profile->hbm_stacks, "visible_vncs", vis);
}

static int ls_json(const struct machine_config *cfg)
{
    const struct dev_profile *p = cfg->profile;
    json_t *chips = json_array();
    for (uint32_t c = 0; c < p->chips; c++)
        json_array_append_new(chips, ls_json_chip(cfg, c));
    json_t *root = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:o}", "instance_type",
                             p->name, "chip", p->chip_name, "nc_generation", (int)p->gen,
                             "chips", (int)p->chips, "cores_per_chip", (int)p->cores_per_chip,
                             "lnc", (int)cfg->lnc, "total_vncs", (int)cfg->total_vncs,
                             "visible_vncs", (int)cfg->visible_count, "devices", chips);
    if (root == NULL)
        return 1;
    json_dumpf(root, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(root);
    return 0;
}

static void ls_profiles(void)
{
    printf("%-16s %6s %6s %8s %10s %6s\n", "INSTANCE", "CHIPS", "CORES", "NC", "HBM/CHIP", "LNC");
    for (size_t i = 0; i < profile_count(); i++) {
        const struct dev_profile *p = profile_at(i);
        printf("%-16s %6u %6u %8s %6.0f GiB %6u\n", p->name, p->chips,
               p->chips * p->cores_per_chip, p->gen == NC_GEN_V3 ? "v3" : "v2",
               (double)p->hbm_per_chip / GIB, p->lnc_default);
    }
}

int cmd_ls(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (strcmp(argv[i], "--profiles") == 0) {
            ls_profiles();
            return 0;
        } else {
            return tool_usage_error("ls", "unknown option");
        }
    }
    struct machine_config cfg;
    if (config_from_env(&cfg) != NRT_SUCCESS)
        return 1;
    if (json)
        return ls_json(&cfg);
    ls_text(&cfg);
    return 0;
}
