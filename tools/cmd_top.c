/*
 * cmd_top.c: `trnemu top` (neuron-top): an interactive terminal view of
 * the live instance, sampled every second and drawn in the terminal's
 * size (top.h: top_draw.c draws a frame, top_tree.c the memory tree):
 * NeuronCore utilisation, vCPU use, the memory summary and details, and
 * a tab per process. The keys are neuron-top's: 1-9 and a/d pick the tab,
 * F switches the cores to FLOPS, the arrows, Enter and x move in and open
 * the memory tree, q (or Ctrl-C) quits. A key redraws the same period at
 * once; the next sample still comes on time.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "devices/config/config.h"
#include "tools/live.h"
#include "tools/monitor.h"
#include "tools/top.h"
#include "tools/tool.h"

static volatile sig_atomic_t top_stop;

/* CLOCK_MONOTONIC seconds (the clock of mon_sample.t). */
static double top_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void top_on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

/* The terminal's size; 80x24 when stdout is no terminal. */
static void top_size(int *w, int *h)
{
    struct winsize ws;
    *w = 80;
    *h = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *w = ws.ws_col;
        *h = ws.ws_row;
    }
}

/* The keys in buf[0..n): plain bytes, arrows (ESC [ A..D or ESC O A..D)
 * as TOP_KEY_*; up to cap of them into keys, their count returned. */
static int top_parse_keys(const unsigned char *buf, int n, int *keys, int cap)
{
    int k = 0;
    for (int i = 0; i < n && k < cap; i++) {
        if (buf[i] == 0x1b && i + 2 < n && (buf[i + 1] == '[' || buf[i + 1] == 'O') &&
            buf[i + 2] >= 'A' && buf[i + 2] <= 'D') {
            keys[k++] = TOP_KEY_UP + (buf[i + 2] - 'A');
            i += 2;
        } else if (buf[i] != 0x1b) {
            keys[k++] = buf[i];
        }
    }
    return k;
}

/* Wait up to ms for keys: how many came into keys (0: none), -1 at the
 * end of input. */
static int top_keys_read(int ms, int *keys, int cap)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    if (poll(&p, 1, ms < 0 ? 0 : ms) <= 0)
        return 0;
    unsigned char buf[64];
    ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    if (n <= 0)
        return -1; /* end of input */
    return top_parse_keys(buf, (int)n, keys, cap);
}

/* One key for the view: false when it asks to quit. */
static bool top_on_key(struct top_view *v, const struct mon_sample *b, int key)
{
    if (key == 'q' || key == 'Q')
        return false;
    if (key == 'f' || key == 'F')
        v->flops = !v->flops;
    else if (!top_tab_key(v, b, key))
        (void)top_tree_key(&v->tree, b, v->tab_pid, key);
    return true;
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
    printf("\033[?1049h\033[?25l\033[2J"); /* the alternate screen, no cursor, cleared */
    *s[1] = *s[0];
    rc = 0;
    struct top_view *view = calloc(1, sizeof *view);
    double next = s[1]->t + 1.0; /* when the next sample is due */
    while (view != NULL && !top_stop) {
        int w, h, keys[64];
        top_size(&w, &h);
        top_draw(&mc, s[0], s[1], w, h, view);
        int n = top_keys_read((int)((next - top_now()) * 1000.0), keys, 64);
        bool go = n >= 0;
        for (int i = 0; go && i < n; i++)
            go = top_on_key(view, s[1], keys[i]);
        if (!go)
            break;
        if (top_now() < next)
            continue; /* a key: the same period again, drawn its new way */
        struct mon_sample *t = s[0];
        s[0] = s[1];
        s[1] = t;
        if (mon_sample_take(s[1]) != 0) {
            rc = 1;
            break;
        }
        next = s[1]->t + 1.0;
    }
    free(view);
    printf("\033[?25h\033[?1049l"); /* the cursor and the screen as they were */
    fflush(stdout);
    if (tty)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
out:
    free(s[0]);
    free(s[1]);
    return rc;
}
