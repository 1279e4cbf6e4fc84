/*
 * cmd_monitor.c: `trnemu monitor` (neuron-monitor): every period, one
 * neuron-monitor JSON report of the live instance and the host on one
 * line of stdout, until killed.
 *   -c, --config-file FILE  neuron-monitor's configuration (period, metric
 *                           groups, tag filters); default: every group, 5 s
 *   --verbose N             0-4: what goes to stderr (0 nothing; 1 a line per
 *                           report; 2-4 also one per attached process)
 *   --count N               trnemu only: stop after N reports
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices/config/config.h"
#include "tools/live.h"
#include "tools/monitor.h"
#include "tools/tool.h"

static volatile sig_atomic_t monitor_stop;

static void monitor_on_signal(int sig)
{
    (void)sig;
    monitor_stop = 1;
}

/* Sleep for s seconds unless a signal asks to stop. */
static void monitor_sleep(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (!monitor_stop && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* The command line beyond the configuration file. */
struct monitor_opts {
    long count;    /* --count: reports to print, 0 for no end */
    long verbose;  /* --verbose: 0 quiet, 1 a line per report, 2+ also each process */
};

/* --verbose: on stderr, one line per report, and from level 2 one per
 * attached process saying whether a tag filter took it. */
static void monitor_trace(const struct monitor_opts *o, const struct mon_config *cfg,
                          const struct mon_sample *b, long n, json_t *rep)
{
    if (o->verbose < 1)
        return;
    json_t *rts = json_object_get(rep, "neuron_runtime_data");
    fprintf(stderr, "neuron-monitor: report %ld: %zu runtime%s%s\n", n + 1, json_array_size(rts),
            json_array_size(rts) == 1 ? "" : "s", b->live ? "" : " (no live instance)");
    for (uint32_t i = 0; o->verbose >= 2 && b->live && i < INSTANCE_MAX_PROCS; i++) {
        if (b->ctl.procs[i].pid == 0 || b->host[i].pid == 0)
            continue;
        char tag[256];
        mon_proc_tag(b->ctl.procs[i].pid, tag, sizeof tag);
        int k = mon_match(cfg, tag);
        if (k >= 0)
            fprintf(stderr, "neuron-monitor:   pid %d tag '%s': neuron_runtimes entry %d\n",
                    (int)b->ctl.procs[i].pid, tag, k);
        else
            fprintf(stderr, "neuron-monitor:   pid %d tag '%s': no tag_filter takes it\n",
                    (int)b->ctl.procs[i].pid, tag);
    }
}

static int monitor_args(int argc, char **argv, struct mon_config *cfg, struct monitor_opts *o)
{
    const char *path = NULL;
    mon_config_default(cfg);
    for (int i = 1; i < argc; i++) {
        if ((strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config-file") == 0) &&
            i + 1 < argc) {
            path = argv[++i];
        } else if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
            if (live_use_instance(argv[++i]) != 0)
                return 1;
        } else if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            char *end;
            o->count = strtol(argv[++i], &end, 10);
            if (*end != '\0' || o->count <= 0)
                return tool_usage_error("monitor", "--count wants a positive number");
        } else if (strcmp(argv[i], "--verbose") == 0 && i + 1 < argc) {
            char *end;
            o->verbose = strtol(argv[++i], &end, 10);
            if (*end != '\0' || o->verbose < 0 || o->verbose > 4)
                return tool_usage_error("monitor", "--verbose wants a level from 0 to 4");
        } else {
            return tool_usage_error("monitor", "unknown or incomplete option");
        }
    }
    if (path == NULL)
        return 0;
    return mon_config_load(path, cfg) == 0 ? 0 : 1;
}

int cmd_monitor(int argc, char **argv)
{
    if (tool_help_asked(argc, argv, false))
        return tool_usage("monitor", stdout);
    struct mon_config cfg;
    struct monitor_opts o = {0};
    int rc = monitor_args(argc, argv, &cfg, &o);
    if (rc != 0)
        return rc;
    struct machine_config mc;
    struct mon_sample *s[2] = {malloc(sizeof(struct mon_sample)),
                               malloc(sizeof(struct mon_sample))};
    rc = 1;
    if (s[0] == NULL || s[1] == NULL || config_from_env(&mc) != NRT_SUCCESS ||
        mon_sample_take(s[0]) != 0)
        goto out;
    signal(SIGINT, monitor_on_signal);
    signal(SIGTERM, monitor_on_signal);
    rc = 0;
    for (long n = 0; !monitor_stop && (o.count == 0 || n < o.count); n++) {
        monitor_sleep(cfg.period_s);
        if (monitor_stop || mon_sample_take(s[1]) != 0)
            break;
        struct machine_config lmc = mc; /* the live instance's machine, when there is one */
        if (s[1]->live)
            live_machine(&s[1]->ctl, &lmc);
        json_t *rep = mon_report(&cfg, &lmc, s[0], s[1]);
        monitor_trace(&o, &cfg, s[1], n, rep);
        json_dumpf(rep, stdout, JSON_COMPACT);
        putchar('\n');
        fflush(stdout);
        json_decref(rep);
        struct mon_sample *t = s[0];
        s[0] = s[1];
        s[1] = t;
    }
out:
    free(s[0]);
    free(s[1]);
    mon_config_free(&cfg);
    return rc;
}
