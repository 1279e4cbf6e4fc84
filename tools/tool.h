/*
 * tool.h: the subcommands of the trnemu command-line program.
 *
 * Each subcommand lives in its own cmd_*.c file and has the signature of
 * main() minus the program name: argv[0] is the subcommand itself. It
 * returns the process exit status (0 ok, 1 failure, 2 usage error).
 */
#ifndef TRNEMU_TOOLS_TOOL_H
#define TRNEMU_TOOLS_TOOL_H

#include <stddef.h>

int cmd_ls(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_asm(int argc, char **argv);
int cmd_disasm(int argc, char **argv);
int cmd_launch(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* Absolute path of trnemu's libnrt.so.1: TRNEMU_LIBNRT when set, else the
 * library next to this executable (build tree ../shims, install prefix
 * ../lib, ../lib64 or ../lib/<multiarch>). 0 on success, -1 when none. */
int tool_find_libnrt(char *path, size_t cap);

/* Print a usage error for a subcommand and return 2. */
int tool_usage_error(const char *cmd, const char *msg);

#endif
