/*
 * top_screen.c: what every part of `trnemu top`'s frame draws with: lines
 * cut to the terminal's width counting only visible characters (colour
 * sequences pass through), never more lines than its rows; byte sizes in
 * neuron-top's units; the tabs (which processes, which VNCs each holds).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "tools/live.h"
#include "tools/top.h"

/* Copy src into dst keeping at most max visible characters; escape
 * sequences (ESC [ ... letter) are copied whole and not counted. */
static void top_cut(char *dst, size_t cap, const char *src, int max)
{
    size_t o = 0;
    int vis = 0;
    for (const char *p = src; *p != '\0' && o + 1 < cap;) {
        if (p[0] == '\033' && p[1] == '[') {
            size_t n = 2;
            while (p[n] != '\0' && !(p[n] >= '@' && p[n] <= '~'))
                n++;
            n += p[n] != '\0';
            if (o + n >= cap)
                break;
            memcpy(dst + o, p, n);
            o += n;
            p += n;
            continue;
        }
        if (vis >= max)
            break;
        dst[o++] = *p++;
        vis++;
    }
    dst[o] = '\0';
}

void top_line(struct top_screen *s, const char *fmt, ...)
{
    if (s->row >= s->h)
        return;
    char buf[2048], out[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    top_cut(out, sizeof out, buf, s->w > 1 ? s->w - 1 : 1);
    printf("%s%s" TOP_OFF "\033[K", s->row > 0 ? "\n" : "", out);
    s->row++;
}

void top_bar(struct top_screen *s, const char *text)
{
    int pad = s->w - 1 - (int)strlen(text);
    top_line(s, TOP_BAR "%s%*s", text, pad > 0 ? pad : 0, "");
}

int top_rows_left(const struct top_screen *s)
{
    return s->h - s->row;
}

const char *top_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "KB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.1f%s", v, unit[u]);
    return buf;
}

bool top_tab_has(const struct mon_sample *b, int32_t tab_pid, uint32_t vnc)
{
    if (vnc >= b->ctl.total_vncs || vnc >= CONFIG_MAX_VNCS)
        return false;
    if (tab_pid == 0)
        return true;
    for (uint32_t i = 0; i < INSTANCE_MAX_PROCS; i++)
        if (b->ctl.procs[i].pid == tab_pid)
            return live_owns(&b->ctl, &b->ctl.procs[i], vnc);
    return false;
}

bool top_tab_uses(const struct mon_sample *b, int32_t tab_pid, uint32_t vnc)
{
    return top_tab_has(b, tab_pid, vnc) && b->ctl.owner[vnc].pid != 0;
}

uint32_t top_tab_procs(const struct mon_sample *b, uint32_t *idx, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t i = 0; b->live && i < INSTANCE_MAX_PROCS && n < cap; i++)
        if (b->ctl.procs[i].pid != 0 && b->host[i].pid != 0)
            idx[n++] = i;
    return n;
}

uint32_t top_per_device(const struct mon_sample *b)
{
    uint32_t per = b->ctl.chips ? b->ctl.total_vncs / b->ctl.chips : 1;
    return per ? per : 1;
}
