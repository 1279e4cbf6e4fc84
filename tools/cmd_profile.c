/*
 * cmd_profile.c: `trnemu profile [-o FILE] -- CMD [ARGS]`: run a program
 * on trnemu (as `trnemu exec`) with every execution profiled: at
 * nrt_close the library writes the Perfetto/Chrome trace (default
 * trnemu-profile.json) and prints a per-engine summary of the estimated
 * device time on stderr (TRNEMU_PROFILE, docs/profile.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"

int cmd_profile(int argc, char **argv)
{
    if (tool_help_asked(argc, argv, false))
        return tool_usage("profile", stdout);
    const char *out = "trnemu-profile.json";
    int i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else
            return tool_usage_error("profile", "unknown or incomplete option");
    }
    if (i >= argc || i + 1 >= argc)
        return tool_usage_error("profile", "missing the command to run after --");
    if (setenv("TRNEMU_PROFILE", out, 1) != 0) {
        fprintf(stderr, "trnemu profile: out of memory\n");
        return 1;
    }
    /* cmd_exec takes "exec -- CMD ...": hand it our tail. */
    argv[i - 1] = "exec";
    return cmd_exec(argc - (i - 1), &argv[i - 1]);
}
