/*
 * tool.h: the subcommands of the trnemu command-line program.
 *
 * Each subcommand lives in its own cmd_*.c file and has the signature of
 * main() minus the program name: argv[0] is the subcommand itself. It
 * returns the process exit status (0 ok, 1 failure, 2 usage error).
 */
#ifndef TRNEMU_TOOLS_TOOL_H
#define TRNEMU_TOOLS_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

/* The directory holding this executable (no trailing slash); 0 or -1. */
int tool_self_dir(char *dir, size_t cap);

/* Print "trnemu CMD: msg (see 'trnemu CMD --help')" on stderr; returns 2. */
int tool_usage_error(const char *cmd, const char *msg);

/* Print cmd's usage and options to out; 0, or 2 for an unknown command. */
int tool_usage(const char *cmd, FILE *out);

/* Every command with its one-line summary, one per line. */
void tool_usage_list(FILE *out);

/* Is arg -h or --help? */
bool tool_is_help(const char *arg);

/* Does argv[1..] ask for help before "--" (and, with stop_at_operand,
 * before the first argument that is not an option)? */
bool tool_help_asked(int argc, char **argv, bool stop_at_operand);

/* ids[0..n) (ascending) as ranges, "0-3,8", into buf. */
void tool_ranges(const uint32_t *ids, uint32_t n, char *buf, size_t cap);

#endif
