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
};

static const struct tool_cmd tool_cmds[] = {
    {"ls", cmd_ls}, {"monitor", cmd_monitor}, {"top", cmd_top}, {"run", cmd_run},
    {"exec", cmd_exec}, {"profile", cmd_profile}, {"asm", cmd_asm}, {"disasm", cmd_disasm},
    {"launch", cmd_launch}, {"snapshot", cmd_snapshot}, {"replay", cmd_replay},
};

static int tool_help(FILE *out)
{
    fprintf(out, "usage: trnemu COMMAND [ARGS]   (trnemu help COMMAND, or COMMAND --help:\n"
                 "                                 its options)\n\ncommands:\n");
    tool_usage_list(out);
    fprintf(out, "\nThe emulated machine is chosen with TRNEMU_INSTANCE (default trn2.48xlarge),\n"
                 "NEURON_LOGICAL_NC_CONFIG, NEURON_RT_VISIBLE_CORES and NEURON_RT_NUM_CORES.\n"
                 "Called as neuron-ls, neuron-top or neuron-monitor, trnemu acts as ls, top\n"
                 "or monitor.\n");
    return out == stdout ? 0 : 2;
}

/* `trnemu help [COMMAND]`. */
static int tool_help_cmd(int argc, char **argv)
{
    if (argc < 3)
        return tool_help(stdout);
    if (tool_usage(argv[2], stdout) == 0)
        return 0;
    fprintf(stderr, "trnemu help: unknown command '%s'\n", argv[2]);
    return tool_help(stderr);
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
    if (strcmp(argv[1], "help") == 0 || tool_is_help(argv[1]))
        return tool_help_cmd(argc, argv);
    for (size_t i = 0; i < sizeof tool_cmds / sizeof tool_cmds[0]; i++)
        if (strcmp(argv[1], tool_cmds[i].name) == 0)
            return tool_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "trnemu: unknown command '%s'\n", argv[1]);
    return tool_help(stderr);
}
