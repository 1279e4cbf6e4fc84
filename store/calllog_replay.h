/*
 * calllog_replay.h: `trnemu replay`: re-issue the calls of a call log
 * through libffi on a libnrt.so.1 loaded into this process, and compare
 * every status and output with the recording.
 */
#ifndef TRNEMU_STORE_CALLLOG_REPLAY_H
#define TRNEMU_STORE_CALLLOG_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes of cl_replay (and of `trnemu replay`). */
enum cl_replay_result {
    CL_REPLAY_IDENTICAL = 0, /* every status and output as recorded */
    CL_REPLAY_DIVERGED = 1,  /* the first divergence was printed */
    CL_REPLAY_BAD_INPUT = 2, /* bad arguments, unreadable or corrupt log */
    CL_REPLAY_CANNOT = 3,    /* the log holds a call that cannot be replayed */
};

/* What to replay and how. */
struct cl_replay_opts {
    const char *path;    /* the .db file */
    const char *libnrt;  /* libnrt.so.1 to replay on (dlopen'd) */
    int64_t from;        /* snapshot id to start from; -1: automatic */
    bool list;           /* print the recorded calls instead of replaying */
    bool verbose;        /* print each call as it is replayed */
    char **sets;         /* NAME=VALUE applied over the recorded environment */
    int nsets;           /* entries in sets */
    FILE *out;           /* the report */
};

int cl_replay(const struct cl_replay_opts *o);

#endif
