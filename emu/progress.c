/*
 * progress.c: the progress line of long work on a terminal (progress.h).
 */
#include "emu/progress.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu/log.h"

#define PROGRESS_DELAY_NS 500000000ull   /* silent for the first half second */
#define PROGRESS_EVERY_NS 250000000ull   /* then at most four lines a second */

static uint64_t progress_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void progress_begin(struct progress *p, const char *what, const char *unit, uint64_t total)
{
    memset(p, 0, sizeof *p);
    p->what = what;
    p->unit = unit;
    p->total = total;
    p->start_ns = progress_now_ns();
    p->next_ns = p->start_ns + PROGRESS_DELAY_NS;
    p->on = isatty(STDERR_FILENO) == 1 && log_enabled(LOG_LVL_ERROR, "STORE");
}

/* An amount in the line's unit (bytes shown as MiB). */
static double progress_in_unit(const struct progress *p, uint64_t v)
{
    return strcmp(p->unit, "MiB") == 0 ? (double)v / (1024.0 * 1024.0) : (double)v;
}

/* Draw the line in place ("\r", cleared to the end); final adds "\n". */
static void progress_draw(struct progress *p, uint64_t now, bool final)
{
    char line[160];
    double secs = (double)(now - p->start_ns) / 1e9;
    int n = p->total > 0
                ? snprintf(line, sizeof line, "\r%s: %.0f of %.0f %s (%.0f%%), %.1f s\033[K",
                           p->what, progress_in_unit(p, p->done), progress_in_unit(p, p->total),
                           p->unit, 100.0 * (double)p->done / (double)p->total, secs)
                : snprintf(line, sizeof line, "\r%s: %.0f %s, %.1f s\033[K", p->what,
                           progress_in_unit(p, p->done), p->unit, secs);
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof line - 1 ? (size_t)n : sizeof line - 2;
    if (final)
        line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
    p->drawn = !final;
}

void progress_add(struct progress *p, uint64_t n)
{
    p->done += n;
    if (!p->on)
        return;
    uint64_t now = progress_now_ns();
    if (now < p->next_ns)
        return;
    p->next_ns = now + PROGRESS_EVERY_NS;
    progress_draw(p, now, false);
}

void progress_end(struct progress *p)
{
    if (p->on && p->drawn)
        progress_draw(p, progress_now_ns(), true);
    p->on = false;
}
