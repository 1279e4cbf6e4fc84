/*
 * config.c: turns the environment into a machine_config (see config.h).
 */
#include "devices/config/env.h"
#include "devices/config/config.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu/log.h"

/* Parse a decimal number at *p; advances *p. -1 when there is none. */
static long config_number(const char **p)
{
    const char *s = *p;
    while (*s == ' ')
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (errno != 0 || v > 1000000)
        return -1;
    while (*end == ' ')
        end++;
    *p = end;
    return v;
}

NRT_STATUS config_parse_cores(const char *spec, uint32_t total, struct machine_config *cfg)
{
    bool seen[CONFIG_MAX_VNCS] = {false};
    const char *p = spec;
    cfg->visible_count = 0;
    if (total > CONFIG_MAX_VNCS) {
        LOG_ERROR("TDRV", "%u VNCs exceed the supported maximum of %d", total, CONFIG_MAX_VNCS);
        return NRT_INVALID;
    }
    for (;;) {
        long lo = config_number(&p), hi = lo;
        if (lo >= 0 && *p == '-') {
            p++;
            hi = config_number(&p);
        }
        if (lo < 0 || hi < lo) {
            LOG_ERROR("TDRV", "NEURON_RT_VISIBLE_CORES=\"%s\": expected ranges like 0-3,8", spec);
            return NRT_INVALID;
        }
        if ((uint64_t)hi >= total) {
            LOG_ERROR("TDRV", "NEURON_RT_VISIBLE_CORES=\"%s\": core %ld does not exist (the machine has %u)",
                      spec, hi, total);
            return NRT_INVALID;
        }
        for (long c = lo; c <= hi; c++)
            seen[c] = true;
        if (*p == '\0')
            break;
        if (*p != ',') {
            LOG_ERROR("TDRV", "NEURON_RT_VISIBLE_CORES=\"%s\": unexpected '%c'", spec, *p);
            return NRT_INVALID;
        }
        p++;
    }
    for (uint32_t c = 0; c < total; c++)
        if (seen[c])
            cfg->visible[cfg->visible_count++] = (uint16_t)c;
    return NRT_SUCCESS;
}

static NRT_STATUS config_profile(struct machine_config *cfg)
{
    const char *name = getenv("TRNEMU_INSTANCE");
    if (name == NULL || *name == '\0')
        name = ITYPE_DEFAULT_NAME;
    cfg->profile = itype_find(name);
    if (cfg->profile == NULL) {
        LOG_ERROR("TDRV", "TRNEMU_INSTANCE=\"%s\" is not an emulated instance type "
                  "(see 'trnemu ls --profiles')", name);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

/* One LNC variable: 0 when unset, else the size (-1 logged when bad). */
static long config_lnc_var(const struct itype *p, const char *name)
{
    const char *s = getenv(name), *orig = s;
    if (s == NULL || *s == '\0')
        return 0;
    long v = config_number(&s);
    if (v < 0 || *s != '\0' || !itype_lnc_ok(p, (uint32_t)v)) {
        LOG_ERROR("TDRV", "%s=\"%s\" is not a logical core size %s accepts", name, orig,
                  p->name);
        return -1;
    }
    return v;
}

/* NEURON_RT_VIRTUAL_CORE_SIZE (the runtime's name) or NEURON_LOGICAL_NC_CONFIG
 * (the frameworks'); both set must agree. */
static NRT_STATUS config_lnc(struct machine_config *cfg)
{
    const struct itype *p = cfg->profile;
    long a = config_lnc_var(p, "NEURON_RT_VIRTUAL_CORE_SIZE");
    long b = a < 0 ? 0 : config_lnc_var(p, "NEURON_LOGICAL_NC_CONFIG");
    if (a < 0 || b < 0)
        return NRT_INVALID;
    if (a > 0 && b > 0 && a != b) {
        LOG_ERROR("TDRV", "NEURON_RT_VIRTUAL_CORE_SIZE=%ld and NEURON_LOGICAL_NC_CONFIG=%ld "
                  "disagree", a, b);
        return NRT_INVALID;
    }
    cfg->lnc = a > 0 ? (uint32_t)a : b > 0 ? (uint32_t)b : p->lnc_default;
    return NRT_SUCCESS;
}

static NRT_STATUS config_visible(struct machine_config *cfg)
{
    const char *cores = getenv("NEURON_RT_VISIBLE_CORES");
    if (cores != NULL && *cores != '\0')
        return config_parse_cores(cores, cfg->total_vncs, cfg);
    uint32_t n = cfg->total_vncs;
    const char *num = getenv("NEURON_RT_NUM_CORES");
    if (num != NULL && *num != '\0') {
        long v = config_number(&num);
        if (v < 0 || *num != '\0' || (uint64_t)v > cfg->total_vncs) {
            LOG_ERROR("TDRV", "NEURON_RT_NUM_CORES=\"%s\": expected 0 (all) to %u",
                      getenv("NEURON_RT_NUM_CORES"), cfg->total_vncs);
            return NRT_INVALID;
        }
        if (v > 0)
            n = (uint32_t)v;
    }
    cfg->visible_count = n;
    for (uint32_t i = 0; i < n; i++)
        cfg->visible[i] = (uint16_t)i;
    return NRT_SUCCESS;
}

/* TRNEMU_THREADS, or the host's online CPUs when unset. */
static NRT_STATUS config_threads(struct machine_config *cfg)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t def = n < 1 ? 1u : n > CONFIG_MAX_THREADS ? CONFIG_MAX_THREADS : (uint64_t)n, v;
    if (env_read_uint("TRNEMU_THREADS", 1, CONFIG_MAX_THREADS, def, &v) != NRT_SUCCESS)
        return NRT_INVALID;
    cfg->threads = (uint32_t)v;
    return NRT_SUCCESS;
}

NRT_STATUS config_from_env(struct machine_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    NRT_STATUS st = config_profile(cfg);
    if (st == NRT_SUCCESS)
        st = config_lnc(cfg);
    if (st == NRT_SUCCESS)
        st = config_threads(cfg);
    if (st != NRT_SUCCESS)
        return st;
    cfg->vncs_per_chip = cfg->profile->cores_per_chip / cfg->lnc;
    cfg->total_vncs = cfg->vncs_per_chip * cfg->profile->chips;
    return config_visible(cfg);
}
