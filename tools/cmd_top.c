/*
 * cmd_top.c: `trnemu top` (neuron-top): an interactive terminal view of
 * the live instance, redrawn every second: the utilisation of every
 * NeuronCore (VNC), the processes attached with their host and device
 * memory and execution rate, and the models loaded. q (or Ctrl-C) quits.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "devices/config.h"
#include "tools/live.h"
#include "tools/monitor.h"
#include "tools/tool.h"

#define TOP_GIB (1024.0 * 1024.0 * 1024.0)
#define TOP_MIB (1024.0 * 1024.0)

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

static void top_cores(const struct mon_sample *a, const struct mon_sample *b)
{
    printf("NeuronCore utilisation (VNC: percent of the last period busy executing)\033[K\n");
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        bool owned = b->ctl.owner[v].pid != 0;
        if (owned)
            printf(" %3u:%5.1f%%", v, mon_vnc_utilization(a, b, v));
        else
            printf(" %3u:   -  ", v);
        if (v % 8 == 7 || v + 1 == b->ctl.total_vncs)
            printf("\033[K\n");
    }
}

static void top_procs(const struct mon_sample *a, const struct mon_sample *b)
{
    printf("\033[K\n%-8s %-12s %5s %10s %10s %10s  %s\033[K\n", "PID", "TAG", "VNCS", "EXEC/S",
           "HOST MEM", "HBM", "COMMAND");
    uint32_t per = b->ctl.chips ? b->ctl.total_vncs / b->ctl.chips : 0;
    double dt = b->t > a->t ? b->t - a->t : 1;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++) {
        const struct instance_proc *pr = &b->ctl.procs[i];
        if (pr->pid == 0 || b->host[i].pid == 0)
            continue;
        uint32_t vncs = 0;
        uint64_t ex = 0, hbm = 0;
        for (uint32_t v = 0; v < b->ctl.total_vncs; v++)
            if (live_owns(&b->ctl, pr, v)) {
                vncs++;
                uint64_t before = a->live && live_owns(&a->ctl, pr, v)
                                      ? atomic_load(&a->ctl.use[v].executions) : 0;
                uint64_t after = atomic_load(&b->ctl.use[v].executions);
                ex += after >= before ? after - before : after;
            }
        for (uint32_t c = 0; per && c < b->ctl.chips; c++)
            if (live_owns_any(&b->ctl, pr, c * per, per))
                hbm += b->hbm_resident[c];
        char tag[256], cmd[256];
        mon_proc_tag(pr->pid, tag, sizeof tag);
        live_cmdline(pr->pid, cmd, sizeof cmd);
        printf("%-8d %-12.12s %5u %10.1f %8.1fMB %8.2fGB  %.60s\033[K\n", (int)pr->pid, tag,
               vncs, (double)ex / dt, (double)mon_proc_rss(pr->pid) / TOP_MIB,
               (double)hbm / TOP_GIB, cmd);
    }
}

static void top_models(const struct mon_sample *b)
{
    printf("\033[K\n%-5s %-32s %7s %12s\033[K\n", "VNC", "MODEL", "LOADED", "EXECUTIONS");
    for (uint32_t v = 0; v < b->ctl.total_vncs; v++) {
        const struct instance_vnc_use *u = &b->ctl.use[v];
        uint32_t n = atomic_load(&u->models);
        if (n == 0)
            continue;
        printf("%-5u %-32.*s %7u %12llu%s\033[K\n", v, (int)sizeof u->model, u->model, n,
               (unsigned long long)atomic_load(&u->executions),
               atomic_load(&u->stand_ins) ? "  STAND-IN (outputs are zeros)" : "");
    }
}

/* The live instances a user could pick instead, one line each. */
static void top_live_list(void)
{
    struct live_entry e[8];
    uint32_t n = live_list(e, 8);
    if (n > 0)
        printf("live instances (trnemu top --instance NAME):\033[K\n");
    for (uint32_t i = 0; i < n && i < 8; i++)
        printf("  %-32.32s %-18s %u process%s\033[K\n", e[i].name, e[i].profile, e[i].procs,
               e[i].procs == 1 ? "" : "es");
}

static void top_draw(const struct machine_config *mc, const struct mon_sample *a,
                     const struct mon_sample *b)
{
    printf("\033[H"); /* home; each line clears its own rest */
    printf("trnemu top: %s (emulated), LNC=%u, %u VNCs    q: quit\033[K\n",
           mc->profile->name, mc->lnc, mc->total_vncs);
    if (!b->live) {
        printf("\033[K\nno live instance (no process has called nrt_init with this "
               "TRNEMU_INSTANCE_NAME)\033[K\n");
        top_live_list();
    } else {
        printf("\033[K\n");
        top_cores(a, b);
        top_procs(a, b);
        top_models(b);
    }
    printf("\033[J");
    fflush(stdout);
}

/* Wait up to ms for a key; true when it asks to quit. */
static bool top_key_quit(int ms)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return false;
    char c;
    if (read(STDIN_FILENO, &c, 1) != 1)
        return true; /* end of input */
    return c == 'q' || c == 'Q';
}

int cmd_top(int argc, char **argv)
{
    if (tool_help_asked(argc, argv, false))
        return tool_usage("top", stdout);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--instance") == 0 && i + 1 < argc) {
            if (live_use_instance(argv[++i]) != 0)
                return 1;
        } else {
            return tool_usage_error("top", "unknown or incomplete option");
        }
    }
    struct machine_config mc;
    if (config_from_env(&mc) != NRT_SUCCESS)
        return 1;
    struct mon_sample *s[2] = {malloc(sizeof(struct mon_sample)),
                               malloc(sizeof(struct mon_sample))};
    int rc = 1;
    struct termios saved;
    bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (s[0] == NULL || s[1] == NULL || mon_sample_take(s[0]) != 0)
        goto out;
    if (tty) {
        struct termios raw = saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    signal(SIGINT, top_on_signal);
    signal(SIGTERM, top_on_signal);
    printf("\033[?25l\033[2J"); /* hide the cursor, clear */
    *s[1] = *s[0];
    rc = 0;
    while (!top_stop) {
        top_draw(&mc, s[0], s[1]);
        if (top_key_quit(1000))
            break;
        struct mon_sample *t = s[0];
        s[0] = s[1];
        s[1] = t;
        if (mon_sample_take(s[1]) != 0) {
            rc = 1;
            break;
        }
    }
    printf("\033[?25h\n");
    if (tty)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
out:
    free(s[0]);
    free(s[1]);
    return rc;
}
