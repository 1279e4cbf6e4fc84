/*
 * cmd_top.c: `trnemu top` (neuron-top): an interactive terminal view of
 * the live instance, redrawn every second in the terminal's size
 * (top_draw.c draws a frame): the utilisation of every NeuronCore (VNC),
 * the host's and runtime's vCPU use, the memory summary, the processes
 * attached and the models loaded. F switches the cores to GFLOP/s; q (or
 * Ctrl-C) quits.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "devices/config/config.h"
#include "tools/live.h"
#include "tools/monitor.h"
#include "tools/top.h"
#include "tools/tool.h"

static volatile sig_atomic_t top_stop;

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

/* Wait up to ms for a key: the key, 0 when none came, 'q' at end of input. */
static int top_key(int ms)
{
    struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return 0;
    char c;
    if (read(STDIN_FILENO, &c, 1) != 1)
        return 'q'; /* end of input */
    return (unsigned char)c;
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
    bool flops = false; /* F: the cores' floating-point rate instead of their utilisation */
    while (!top_stop) {
        int w, h;
        top_size(&w, &h);
        top_draw(&mc, s[0], s[1], w, h, flops);
        int key = top_key(1000);
        if (key == 'q' || key == 'Q')
            break;
        if (key == 'f' || key == 'F') { /* the same period again, the other figure */
            flops = !flops;
            continue;
        }
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
