/*
 * cmd_monitor.c: `trnemu monitor` (neuron-monitor): every period, one
 * neuron-monitor JSON report of the live instance and the host on one
 * line of stdout, until killed.
 *   -c, --config-file FILE  neuron-monitor's configuration (period, metric
 *                           groups, tag filters); default: every group, 5 s
 *   --count N               trnemu only: stop after N reports
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devices/config.h"
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

static int monitor_args(int argc, char **argv, struct mon_config *cfg, long *count)
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
            *count = strtol(argv[++i], &end, 10);
            if (*end != '\0' || *count <= 0)
                return tool_usage_error("monitor", "--count wants a positive number");
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
    long count = 0;
    int rc = monitor_args(argc, argv, &cfg, &count);
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
    for (long n = 0; !monitor_stop && (count == 0 || n < count); n++) {
        monitor_sleep(cfg.period_s);
        if (monitor_stop || mon_sample_take(s[1]) != 0)
            break;
        struct machine_config lmc = mc; /* the live instance's machine, when there is one */
        if (s[1]->live)
            live_machine(&s[1]->ctl, &lmc);
        json_t *rep = mon_report(&cfg, &lmc, s[0], s[1]);
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
