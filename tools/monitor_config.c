/*
 * monitor_config.c: neuron-monitor's configuration file: the period, the
 * runtime metric groups per tag filter, the system metric groups.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/monitor.h"

/* ---- configuration -------------------------------------------------------- */

static const struct {
    const char *name; /* the "type" of a metric group */
    unsigned bit;     /* its enum mon_group bit */
    bool system;      /* a system metric (else a runtime metric) */
} mon_groups[] = {
    {"neuroncore_counters", MON_NC_COUNTERS, false},
    {"execution_stats", MON_EXEC_STATS, false},
    {"memory_used", MON_MEMORY_USED, false},
    {"neuron_runtime_vcpu_usage", MON_RT_VCPU, false},
    {"vcpu_usage", MON_SYS_VCPU, true},
    {"memory_info", MON_SYS_MEMORY, true},
    {"neuron_hw_counters", MON_SYS_HW, true},
};

void mon_config_default(struct mon_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->period_s = 5.0;
    cfg->nrt = 1;
    cfg->rt[0].groups = MON_NC_COUNTERS | MON_EXEC_STATS | MON_MEMORY_USED | MON_RT_VCPU;
    cfg->system_groups = MON_SYS_VCPU | MON_SYS_MEMORY | MON_SYS_HW;
}

void mon_config_free(struct mon_config *cfg)
{
    for (uint32_t i = 0; i < cfg->nrt; i++)
        if (cfg->rt[i].has_filter)
            regfree(&cfg->rt[i].filter);
    cfg->nrt = 0;
}

/* "5s", "500ms", "1m": seconds, or -1. */
static double mon_period(const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || v <= 0)
        return -1;
    if (strcmp(end, "s") == 0 || *end == '\0')
        return v;
    if (strcmp(end, "ms") == 0)
        return v / 1000.0;
    if (strcmp(end, "m") == 0)
        return v * 60.0;
    return -1;
}

/* Take a "period" member into *best when it is shorter (one period for all
 * groups: the shortest one the file asks for). */
static int mon_take_period(const char *path, json_t *obj, double *best)
{
    json_t *p = json_object_get(obj, "period");
    if (p == NULL)
        return 0;
    double v = json_is_string(p) ? mon_period(json_string_value(p)) : -1;
    if (v <= 0) {
        fprintf(stderr, "trnemu monitor: %s: bad \"period\" (want a string like \"1s\" or \"500ms\")\n",
                  path);
        return -1;
    }
    if (*best <= 0 || v < *best)
        *best = v;
    return 0;
}

/* The groups of a "metrics"/"system_metrics" array. */
static int mon_take_groups(const char *path, json_t *arr, bool system, unsigned *bits,
                           double *best)
{
    if (!json_is_array(arr)) {
        fprintf(stderr, "trnemu monitor: %s: metrics must be an array of {\"type\": ...}\n", path);
        return -1;
    }
    size_t i;
    json_t *m;
    json_array_foreach(arr, i, m) {
        const char *type = json_string_value(json_object_get(m, "type"));
        size_t k = 0, n = sizeof mon_groups / sizeof mon_groups[0];
        while (k < n && !(type && strcmp(type, mon_groups[k].name) == 0 &&
                          mon_groups[k].system == system))
            k++;
        if (k == n) {
            fprintf(stderr, "trnemu monitor: %s: unknown %s metric type '%s'\n", path,
                      system ? "system" : "runtime", type ? type : "(none)");
            return -1;
        }
        if (mon_take_period(path, m, best) != 0)
            return -1;
        *bits |= mon_groups[k].bit;
    }
    return 0;
}

/* Limits on a tag_filter: the C library compiles a repeated repetition
 * (".+++", "(a{9}){9}{9}") by copying the pattern's tree, which grows
 * exponentially; a process-tag filter never needs either. */
enum { MON_FILTER_MAX_LEN = 256, MON_FILTER_MAX_BRACES = 2 };

static bool mon_is_quantifier(char c)
{
    return c == '*' || c == '+' || c == '?' || c == '}';
}

/* A pattern short enough, with no quantifier right after another and at
 * most MON_FILTER_MAX_BRACES {m,n} counts. */
static bool mon_filter_sane(const char *re)
{
    size_t n = strlen(re);
    unsigned braces = 0;
    if (n > MON_FILTER_MAX_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (re[i] == '\\' && i + 1 < n) {
            i++;
            continue;
        }
        if (re[i] == '{' && ++braces > MON_FILTER_MAX_BRACES)
            return false;
        bool starts = re[i] == '*' || re[i] == '+' || re[i] == '?' || re[i] == '{';
        if (starts && i > 0 && mon_is_quantifier(re[i - 1]) && (i < 2 || re[i - 2] != '\\'))
            return false;
    }
    return true;
}

static int mon_take_runtime(const char *path, json_t *r, struct mon_runtime *rt, double *best)
{
    json_t *filt = json_object_get(r, "tag_filter");
    if (filt != NULL) {
        if (json_is_string(filt) && !mon_filter_sane(json_string_value(filt))) {
            fprintf(stderr, "trnemu monitor: %s: tag_filter is longer than %d characters, repeats a "
                    "repetition or has more than %d {m,n} counts\n", path, MON_FILTER_MAX_LEN,
                    MON_FILTER_MAX_BRACES);
            return -1;
        }
        if (!json_is_string(filt) ||
            regcomp(&rt->filter, json_string_value(filt), REG_EXTENDED | REG_NOSUB) != 0) {
            fprintf(stderr, "trnemu monitor: %s: tag_filter is not a valid regular expression\n", path);
            return -1;
        }
        rt->has_filter = true;
    }
    if (mon_take_period(path, r, best) != 0)
        return -1;
    json_t *metrics = json_object_get(r, "metrics");
    return metrics ? mon_take_groups(path, metrics, false, &rt->groups, best) : 0;
}

static int mon_config_parse(const char *path, json_t *root, struct mon_config *cfg)
{
    double best = -1;
    if (!json_is_object(root)) {
        fprintf(stderr, "trnemu monitor: %s: the configuration must be a JSON object\n", path);
        return -1;
    }
    if (mon_take_period(path, root, &best) != 0)
        return -1;
    json_t *rts = json_object_get(root, "neuron_runtimes");
    if (rts != NULL && (!json_is_array(rts) || json_array_size(rts) > MON_MAX_RUNTIMES)) {
        fprintf(stderr, "trnemu monitor: %s: neuron_runtimes must be an array of at most %d entries\n",
                  path, MON_MAX_RUNTIMES);
        return -1;
    }
    size_t i;
    json_t *r;
    json_array_foreach(rts, i, r) {
        cfg->nrt++;
        if (mon_take_runtime(path, r, &cfg->rt[i], &best) != 0)
            return -1;
    }
    json_t *sys = json_object_get(root, "system_metrics");
    if (sys != NULL && mon_take_groups(path, sys, true, &cfg->system_groups, &best) != 0)
        return -1;
    cfg->period_s = best > 0 ? best : 5.0;
    return 0;
}

int mon_config_loadb(const char *path, const char *text, size_t len, struct mon_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    json_error_t err;
    json_t *root = json_loadb(text, len, 0, &err);
    if (root == NULL) {
        fprintf(stderr, "trnemu monitor: %s: line %d: %s\n", path, err.line, err.text);
        return -1;
    }
    int rc = mon_config_parse(path, root, cfg);
    json_decref(root);
    if (rc != 0)
        mon_config_free(cfg);
    return rc;
}

int mon_config_load(const char *path, struct mon_config *cfg)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    size_t len = 0;
    if (f == NULL) {
        fprintf(stderr, "trnemu monitor: cannot read %s: %s\n", path, strerror(errno));
        memset(cfg, 0, sizeof *cfg);
        return -1;
    }
    {
        FILE *m = open_memstream(&text, &len);
        char buf[4096];
        size_t n;
        while (m != NULL && (n = fread(buf, 1, sizeof buf, f)) > 0)
            fwrite(buf, 1, n, m);
        if (m != NULL)
            fclose(m);
        fclose(f);
    }
    if (text == NULL) {
        fprintf(stderr, "trnemu monitor: cannot read %s\n", path);
        memset(cfg, 0, sizeof *cfg);
        return -1;
    }
    int rc = mon_config_loadb(path, text, len, cfg);
    free(text);
    return rc;
}
