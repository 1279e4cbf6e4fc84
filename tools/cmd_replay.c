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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/calllog_replay.h"
#include "store/snap_query.h"
#include "tools/tool.h"

/* Is path an SQLite file (the header's first 16 bytes)? */
static bool replay_is_sqlite(const char *path)
{
    char head[16] = {0};
    FILE *f = fopen(path, "rb");
    bool yes = f != NULL && fread(head, 1, sizeof head, f) == sizeof head &&
               memcmp(head, "SQLite format 3", 16) == 0;
    if (f != NULL)
        fclose(f);
    return yes;
}

/* A file that replay could not read may hold snapshots only (saved with
 * TRNEMU_SNAPSHOT_AT, trnemu_snapshot_save, ... without a recording):
 * say how those are used instead. */
static void replay_hint_snapshots(const char *path)
{
    struct snap_db *db;
    if (!replay_is_sqlite(path) || snap_open(path, false, &db) != NRT_SUCCESS)
        return;
    struct snapq_snapshot *s = NULL;
    size_t n = 0;
    if (snapq_snapshots(db, &s, &n) == NRT_SUCCESS && n > 0)
        fprintf(stderr, "trnemu replay: %s holds %zu snapshot%s but no call log to replay: "
                        "restore one into a program with TRNEMU_RESTORE=%s[@ID] PROGRAM "
                        "('trnemu snapshot list %s' lists them; docs/snapshot.md)\n",
                path, n, n == 1 ? "" : "s", path, path);
    free(s);
    snap_close(db);
}

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
    int rc = cl_replay(&o);
    if (rc == 2)
        replay_hint_snapshots(o.path);
    return rc;
}
