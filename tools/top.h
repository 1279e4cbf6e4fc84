/*
 * top.h: the screen of `trnemu top` (neuron-top). cmd_top.c runs the loop
 * and reads the keys; top_draw.c draws a frame (title, cores, vCPU, memory
 * summary, tab bar); top_tree.c builds, draws and navigates the memory
 * details tree; top_screen.c holds what both draw with (lines cut to the
 * terminal, byte sizes, the tabs).
 */
#ifndef TRNEMU_TOOLS_TOP_H
#define TRNEMU_TOOLS_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "devices/config/config.h"
#include "tools/monitor.h"

/* Keys besides the plain characters (arrows come as escape sequences). */
enum top_key {
    TOP_KEY_UP = 0x101,
    TOP_KEY_DOWN,
    TOP_KEY_LEFT,
    TOP_KEY_RIGHT,
};

/* What the memory details tree shows open, and its selected row. */
struct top_tree {
    bool dev_open[CONFIG_MAX_VNCS];                         /* ND n expanded */
    bool nc_open[CONFIG_MAX_VNCS];                          /* the VNC's node expanded */
    bool model_open[CONFIG_MAX_VNCS][INSTANCE_VNC_MODELS];  /* a listed model expanded */
    bool all_open;       /* the state the last x gave the whole tree */
    uint32_t sel;        /* selected row (of the rows shown open) */
    uint32_t first;      /* first row on screen (the tree scrolls to keep sel shown) */
};

/* What the keys chose; kept from frame to frame. */
struct top_view {
    bool flops;          /* F: the cores' FLOPS instead of their utilisation */
    int32_t tab_pid;     /* the process tab shown; 0: the 'all' tab */
    struct top_tree tree;
};

/* ---- top_screen.c: the frame's lines ------------------------------------- */

/* The frame being drawn: the terminal's size and the rows written. */
struct top_screen {
    int w;    /* columns */
    int h;    /* rows */
    int row;  /* rows written */
};

/* Text styles (SGR sequences) for parts of a line. */
#define TOP_BAR "\033[30;46m"   /* a section's title bar */
#define TOP_SEL "\033[7m"       /* the selected tree row */
#define TOP_TAB "\033[1;32m"    /* the selected tab */
#define TOP_OFF "\033[0m"

/* One line, cut to w-1 visible columns (styles do not count; the last
 * column stays free so nothing auto-wraps); nothing once the rows are
 * used up. The newline goes before a line, so the last row never
 * scrolls the screen. */
void top_line(struct top_screen *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A section's title bar: text in TOP_BAR, padded to the width. */
void top_bar(struct top_screen *s, const char *text);

/* Rows not yet written. */
int top_rows_left(const struct top_screen *s);

/* bytes as neuron-top writes them: 0.0B, 4.0KB, 441.8MB, 1.7GB. */
const char *top_bytes(uint64_t bytes, char *buf, size_t cap);

/* The 'all' tab (tab_pid 0) holds every VNC; a process tab the ones its
 * process owns. */
bool top_tab_has(const struct mon_sample *b, int32_t tab_pid, uint32_t vnc);

/* ... and a process owns it (the VNCs the tab uses). */
bool top_tab_uses(const struct mon_sample *b, int32_t tab_pid, uint32_t vnc);

/* The processes the tabs show, in the order of the process table: up
 * to cap indices of b->ctl.procs[] into idx; returns how many. */
uint32_t top_tab_procs(const struct mon_sample *b, uint32_t *idx, uint32_t cap);

/* VNCs per device of b (1 when unknown). */
uint32_t top_per_device(const struct mon_sample *b);

/* ---- top_tree.c: Memory Usage Details ------------------------------------ */

/* Rows the tree has open for the tab (its header not counted). */
uint32_t top_tree_rows(const struct top_tree *t, const struct mon_sample *b, int32_t tab_pid);

/* Draw the section (title bar, column heads, then rows tree rows of the
 * tree, scrolled so that the selected row shows). */
void top_tree_draw(struct top_screen *s, struct top_tree *t, const struct mon_sample *b,
                   int32_t tab_pid, int rows);

/* Arrows move the selection (left closes a node or goes to its parent,
 * right opens it), Enter opens or closes the selected node, x the whole
 * tree. true when the key was the tree's. */
bool top_tree_key(struct top_tree *t, const struct mon_sample *b, int32_t tab_pid, int key);

/* ---- top_draw.c: a frame --------------------------------------------------- */

/* Draw one frame of the period between samples a and b in a terminal of
 * w columns and h rows: nothing wraps, nothing scrolls. */
void top_draw(const struct machine_config *mc, const struct mon_sample *a,
              const struct mon_sample *b, int w, int h, struct top_view *v);

/* The tab keys: 1-9 pick a tab, a/d the previous/next one. true when
 * the key was one of them. */
bool top_tab_key(struct top_view *v, const struct mon_sample *b, int key);

#endif
