/*
 * cmd_replay.c: `trnemu replay FILE [--from SNAPSHOT] [--list] [-v]
 * [--set NAME=VALUE] [--lib LIBNRT]`: re-issue the calls recorded in FILE (TRNEMU_RECORD,
 * libnrt-record.so or TRNEMU_SNAPSHOT_ON_ERROR) on trnemu's libnrt.so.1 in
 * this process and compare every status and output with the recording.
 *
 * The library is trnemu's libnrt.so.1 next to the tool (build tree:
 * ../shims; install prefix: ../lib), TRNEMU_LIBNRT, or --lib. Exit status:
 * 0 identical, 1 diverged (the first divergence is printed), 2 bad
 * arguments or an unreadable log, 3 the log holds a call that cannot be
 * replayed.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/calllog_replay.h"
#include "tools/tool.h"

static int replay_usage(const char *msg)
{
    return tool_usage_error("replay", msg);
}

int cmd_replay(int argc, char **argv)
{
    if (tool_help_asked(argc, argv, false))
        return tool_usage("replay", stdout);
    struct cl_replay_opts o = {.from = -1, .out = stdout};
    char *sets[32];
    o.sets = sets;
    char lib[PATH_MAX];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--from") == 0 && i + 1 < argc) {
            char *end;
            o.from = strtoll(argv[++i], &end, 10);
            if (*end != '\0' || o.from < 0)
                return replay_usage("--from takes a snapshot id (see trnemu snapshot list)");
        } else if (strcmp(a, "--list") == 0) {
            o.list = true;
        } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
            o.verbose = true;
        } else if (strcmp(a, "--set") == 0 && i + 1 < argc) {
            if (strchr(argv[i + 1], '=') == NULL || o.nsets == 32)
                return replay_usage("--set takes NAME=VALUE (at most 32 times)");
            sets[o.nsets++] = argv[++i];
        } else if (strcmp(a, "--lib") == 0 && i + 1 < argc) {
            o.libnrt = argv[++i];
        } else if (a[0] == '-') {
            return replay_usage("unknown option");
        } else if (o.path == NULL) {
            o.path = a;
        } else {
            return replay_usage("more than one file given");
        }
    }
    if (o.path == NULL)
        return replay_usage("missing the .db file");
    if (o.libnrt == NULL && !o.list) {
        if (tool_find_libnrt(lib, sizeof lib) != 0) {
            fprintf(stderr, "trnemu replay: cannot find trnemu's libnrt.so.1 "
                            "(set TRNEMU_LIBNRT or pass --lib)\n");
            return 3;
        }
        o.libnrt = lib;
    }
    return cl_replay(&o);
}
