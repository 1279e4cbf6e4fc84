/*
 * top.h: the screen of `trnemu top` (neuron-top), drawn by top_draw.c
 * for the loop in cmd_top.c.
 */
#ifndef TRNEMU_TOOLS_TOP_H
#define TRNEMU_TOOLS_TOP_H

#include <stdbool.h>

#include "devices/config/config.h"
#include "tools/monitor.h"

/* Draw one frame of the period between samples a and b in a terminal of
 * w columns and h rows: nothing wraps, nothing scrolls. flops: show each
 * core's floating-point rate (GFLOP/s) instead of its utilisation. */
void top_draw(const struct machine_config *mc, const struct mon_sample *a,
              const struct mon_sample *b, int w, int h, bool flops);

#endif
