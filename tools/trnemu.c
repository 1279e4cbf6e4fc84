/*
 * trnemu.c: entry point of the trnemu command: picks the subcommand.
 */
#include <stdio.h>
#include <string.h>

#include "devices/config/log_env.h"
#include "tools/tool.h"

struct tool_cmd {
    const char *name;                 /* subcommand word */
    int (*run)(int argc, char **argv);/* its implementation */
    const char *help;                 /* one-line description */
};

static const struct tool_cmd tool_cmds[] = {
    {"ls", cmd_ls, "show the emulated machine (--json, --profiles, --stats); neuron-ls's\n"
               "           -j/--json-output, -w/--wide, -a/--show-all-procs, -t/--topology"},
    {"monitor", cmd_monitor, "stream neuron-monitor JSON reports: trnemu monitor [-c CONFIG.json]\n"
               "           [--count N]"},
    {"top", cmd_top, "interactive view of the live instance like neuron-top (q quits)"},
    {"run", cmd_run, "execute a NEFF with .npy/.bin inputs, write .npy outputs: trnemu run\n"
               "           MODEL.neff [--input NAME=FILE]... [--output-dir DIR] [--repeat N] [--vnc K]"},
    {"exec", cmd_exec, "run a program on trnemu's libnrt.so.1: trnemu exec -- CMD [ARGS]"},
    {"profile", cmd_profile, "run a program with every execution profiled: trnemu profile\n"
                             "           [-o FILE] -- CMD [ARGS] (Perfetto trace + engine summary)"},
    {"asm", cmd_asm, "assemble trnemu assembly into a NEFF: trnemu asm FILE.s [-o FILE.neff]"},
    {"disasm", cmd_disasm, "print a NEFF as trnemu assembly: trnemu disasm FILE.neff"},
    {"launch", cmd_launch, "start N ranks on one instance: trnemu launch -n N [--cores-per-rank K]\n"
               "           [--first-core C] [--timeout SEC] [--keep-going] -- PROG [ARGS]"},
    {"snapshot", cmd_snapshot, "look into snapshot files: trnemu snapshot list|show|diff|export|rm|gc\n"
               "           FILE ... (see 'trnemu snapshot --help')"},
    {"replay", cmd_replay, "re-run a recorded call log and compare: trnemu replay FILE\n"
               "           [--from SNAPSHOT] [--list] [-v] [--set NAME=VALUE]"},
};

static int tool_help(FILE *out)
{
    fprintf(out, "usage: trnemu COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof tool_cmds / sizeof tool_cmds[0]; i++)
        fprintf(out, "  %-8s %s\n", tool_cmds[i].name, tool_cmds[i].help);
    fprintf(out, "\nThe emulated machine is chosen with TRNEMU_INSTANCE (default trn2.48xlarge),\n"
                 "NEURON_LOGICAL_NC_CONFIG, NEURON_RT_VISIBLE_CORES and NEURON_RT_NUM_CORES.\n");
    return out == stdout ? 0 : 2;
}

int tool_usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "trnemu %s: %s (see 'trnemu help')\n", cmd, msg);
    return 2;
}

/* Called as neuron-ls, neuron-top or neuron-monitor (the links installed
 * in <prefix>/bin): the subcommand after "neuron-", with every argument. */
static const struct tool_cmd *tool_vendor_name(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    if (strncmp(base, "neuron-", 7) != 0)
        return NULL;
    for (size_t i = 0; i < sizeof tool_cmds / sizeof tool_cmds[0]; i++)
        if (strcmp(base + 7, tool_cmds[i].name) == 0)
            return &tool_cmds[i];
    return NULL;
}

int main(int argc, char **argv)
{
    log_env_load();
    const struct tool_cmd *vendor = argc > 0 ? tool_vendor_name(argv[0]) : NULL;
    if (vendor != NULL)
        return vendor->run(argc, argv);
    if (argc < 2)
        return tool_help(stderr);
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0)
        return tool_help(stdout);
    for (size_t i = 0; i < sizeof tool_cmds / sizeof tool_cmds[0]; i++)
        if (strcmp(argv[1], tool_cmds[i].name) == 0)
            return tool_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "trnemu: unknown command '%s'\n", argv[1]);
    return tool_help(stderr);
}
