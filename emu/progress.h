/*
 * progress.h: a progress line for long work (a snapshot's save or restore,
 * a replay), drawn on stderr only when stderr is a terminal and the log is
 * not QUIET: "saving snapshot: 512 of 1024 MiB (50%), 3.1 s", redrawn in
 * place at most four times a second and ended with a newline. Nothing is
 * written when stderr is a file or a pipe, so logs and tests stay clean.
 */
#ifndef TRNEMU_EMU_PROGRESS_H
#define TRNEMU_EMU_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

/* One piece of long work. */
struct progress {
    const char *what;     /* "saving snapshot" */
    const char *unit;     /* "MiB" (done and total are bytes) or "calls" */
    uint64_t total;       /* the amount expected; 0: unknown */
    uint64_t done;        /* the amount so far */
    uint64_t start_ns;    /* when it began (CLOCK_MONOTONIC) */
    uint64_t next_ns;     /* when the line may be redrawn */
    bool on;              /* stderr is a terminal and the log is not QUIET */
    bool drawn;           /* a line is on the screen (progress_end ends it) */
};

/* Start: nothing is drawn for the first half second (short work stays
 * silent). unit "MiB" counts bytes. */
void progress_begin(struct progress *p, const char *what, const char *unit, uint64_t total);

/* n more done; redraws when it is time. */
void progress_add(struct progress *p, uint64_t n);

/* Done: the final line with a newline, when one was drawn. */
void progress_end(struct progress *p);

#endif
