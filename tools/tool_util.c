/*
 * tool_util.c: what every subcommand of the trnemu program shares: the
 * usage text of each command (for `trnemu help`, `trnemu help CMD` and
 * `CMD --help`), the usage-error line, the help-flag test, and finding
 * trnemu's libnrt.so.1 next to the program. It calls no subcommand, so
 * the cmd_*.c files and trnemu.c depend on it and never on each other's
 * helpers.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool.h"

/* One command's help: what `trnemu help` lists and `CMD --help` prints. */
struct tool_usage_text {
    const char *name;     /* subcommand word */
    const char *summary;  /* one line for the command list */
    const char *usage;    /* the usage lines and the options */
};

static const struct tool_usage_text tool_usages[] = {
    {"ls", "show the emulated machine; neuron-ls's table and JSON",
     "usage: trnemu ls [--json | --topology | --profiles]\n"
     "       trnemu ls --stats [--json] [--instance NAME]\n"
     "       trnemu ls [-j | --json-output] [-w | --wide] [-a | --show-all-procs]\n"
     "                 [-t | --topology]           (neuron-ls; also as neuron-ls)\n"
     "  --json            the machine as one JSON object\n"
     "  --topology        the NeuronLink topology drawn in ASCII\n"
     "  --profiles        every instance type trnemu can emulate\n"
     "  --stats           a live shared instance: processes, models, link counters;\n"
     "                    lists the live instances when the environment names none\n"
     "  --instance NAME   the live instance to read (as TRNEMU_INSTANCE_NAME)\n"
     "  -j, --json-output neuron-ls's JSON, one object per device\n"
     "  -w, --wide        neuron-ls's table with the processes using each device\n"
     "  -a, --show-all-procs  also processes that are not runtime users (this one)\n"
     "  -t                neuron-ls's table, then the topology\n"},
    {"monitor", "stream neuron-monitor JSON reports of the live instance",
     "usage: trnemu monitor [-c | --config-file CONFIG.json] [--verbose N] [--count N]\n"
     "                      [--instance NAME]   (also as neuron-monitor)\n"
     "  -c, --config-file FILE  neuron-monitor's configuration (period, metric groups,\n"
     "                          tag filters); default: every group every 5 s\n"
     "  --verbose N             0-4, what goes to stderr: 0 nothing (default), 1 a line\n"
     "                          per report, 2-4 also one per process and its tag filter\n"
     "  --count N               stop after N reports (trnemu's own)\n"
     "  --instance NAME         the live instance to read (as TRNEMU_INSTANCE_NAME)\n"},
    {"top", "interactive view of the live instance like neuron-top",
     "usage: trnemu top [--instance NAME]   (also as neuron-top)\n"
     "  --instance NAME   the live instance to show (as TRNEMU_INSTANCE_NAME)\n"
     "Keys (neuron-top's): 1-9 select a tab (1: all processes), a/d the previous/next;\n"
     "  F switches the cores between utilization and FLOPS; arrows move in the memory\n"
     "  tree, Enter opens or closes a node, x the whole tree; q quits.\n"},
    {"run", "execute a NEFF with .npy/.bin inputs, write .npy outputs",
     "usage: trnemu run MODEL.neff [--input NAME=FILE.npy|FILE.bin]... [--output-dir DIR]\n"
     "                  [--repeat N] [--vnc K]\n"
     "  --input NAME=FILE  an input tensor: a .npy of the tensor's shape and dtype, or a\n"
     "                     raw file of exactly its bytes; inputs not given are zeros\n"
     "  --output-dir DIR   where to write NAME.npy for every output (default .)\n"
     "  --repeat N         execute N times (default 1): the first execution's time is\n"
     "                     shown apart, then the median and best of the others\n"
     "  --vnc K            the VNC to load the model on (default 0)\n"},
    {"exec", "run a program on trnemu's libnrt.so.1",
     "usage: trnemu exec [--] CMD [ARGS]\n"
     "Runs CMD with trnemu's libnrt.so.1 first on LD_LIBRARY_PATH and in LD_PRELOAD,\n"
     "and the NKI front end first on PYTHONPATH. Options after CMD are CMD's own.\n"},
    {"profile", "run a program with every execution profiled",
     "usage: trnemu profile [-o FILE] -- CMD [ARGS]\n"
     "  -o FILE   the Perfetto/Chrome trace to write (default trnemu-profile.json);\n"
     "            a per-engine summary of the device time goes to stderr\n"},
    {"asm", "assemble trnemu assembly into a NEFF",
     "usage: trnemu asm FILE.s [-o FILE.neff] [-I DIR]...\n"
     "  -o FILE   output NEFF (default: FILE.s with .neff instead of .s)\n"
     "  -I DIR    also look for file= constants in DIR\n"},
    {"disasm", "print a NEFF as trnemu assembly",
     "usage: trnemu disasm FILE.neff [-o FILE.s] [--const-dir DIR] [--no-index] [--check]\n"
     "                     [--full]\n"
     "  -o FILE          write the assembly there (default: stdout)\n"
     "  --const-dir DIR  write constants as files into DIR instead of inline\n"
     "  --no-index       leave out the instruction index comments\n"
     "  --check          assemble the disassembly again and compare the models\n"
     "  --full           a vendor-compiled NEFF: the whole metadata as assembly\n"
     "                   directives instead of its outline\n"},
    {"launch", "start N ranks (on one or more emulated nodes) of a program",
     "usage: trnemu launch -n N [--cores-per-rank K] [--first-core C] [--timeout SEC]\n"
     "                     [--keep-going] [--nodes M [--node I]] -- PROG [ARGS]\n"
     "  -n, --nranks N      ranks (per node)\n"
     "  --cores-per-rank K  VNCs each rank is given (default 1)\n"
     "  --first-core C      the first VNC of rank 0 (default 0)\n"
     "  --timeout SEC       kill every rank after SEC seconds (exit 124)\n"
     "  --keep-going        wait for every rank even after one failed\n"
     "  --nodes M           M emulated nodes of N ranks each, joined over libfabric\n"
     "  --node I            start only node I's ranks (one command per host)\n"
     "The instance's name is printed on stderr at the start; `trnemu ls --stats\n"
     "--instance NAME` and `trnemu top --instance NAME` read it while the job runs.\n"},
    {"snapshot", "look into snapshot files: list, show, diff, export, rm, gc, verify",
     "usage: trnemu snapshot list FILE\n"
     "       trnemu snapshot show FILE[@ID]\n"
     "       trnemu snapshot diff FILE ID1 ID2 | diff FILE[@ID] FILE[@ID]\n"
     "       trnemu snapshot export FILE[@ID] TENSOR [-o OUT.npy]\n"
     "       trnemu snapshot rm FILE ID...\n"
     "       trnemu snapshot gc FILE\n"
     "       trnemu snapshot verify FILE[@ID]\n"
     "A snapshot is the newest of the file when @ID is left out. TENSOR is a\n"
     "tensor name or its handle (0x...) as `show` lists it. `verify` checks\n"
     "every snapshot of the file (or only @ID) as a restore would, without\n"
     "restoring: manifest, rows, and every chunk against its hash.\n"},
    {"replay", "re-run a recorded call log and compare",
     "usage: trnemu replay FILE [--from SNAPSHOT] [--list] [-v] [--set NAME=VALUE]\n"
     "                     [--lib LIBNRT]\n"
     "  --from SNAPSHOT   start from a snapshot of the file (trnemu snapshot list)\n"
     "  --list            list the recorded calls, run nothing\n"
     "  -v, --verbose     print every call as it is replayed\n"
     "  --set NAME=VALUE  set an environment variable for the replay\n"
     "  --lib LIBNRT      the libnrt.so.1 to replay on (default: trnemu's)\n"},
};

#define TOOL_NUSAGES (sizeof tool_usages / sizeof tool_usages[0])

static const struct tool_usage_text *tool_usage_find(const char *cmd)
{
    for (size_t i = 0; i < TOOL_NUSAGES; i++)
        if (strcmp(tool_usages[i].name, cmd) == 0)
            return &tool_usages[i];
    return NULL;
}

int tool_usage(const char *cmd, FILE *out)
{
    const struct tool_usage_text *u = tool_usage_find(cmd);
    if (u == NULL)
        return 2;
    fprintf(out, "%s", u->usage);
    return 0;
}

void tool_usage_list(FILE *out)
{
    for (size_t i = 0; i < TOOL_NUSAGES; i++)
        fprintf(out, "  %-9s %s\n", tool_usages[i].name, tool_usages[i].summary);
}

bool tool_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

bool tool_help_asked(int argc, char **argv, bool stop_at_operand)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0 || (stop_at_operand && argv[i][0] != '-'))
            return false;
        if (tool_is_help(argv[i]))
            return true;
    }
    return false;
}

int tool_usage_error(const char *cmd, const char *msg)
{
    fprintf(stderr, "trnemu %s: %s (see 'trnemu %s --help')\n", cmd, msg, cmd);
    return 2;
}

/* Directory holding this executable, without the trailing slash. */
int tool_self_dir(char *dir, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", dir, cap - 1);
    if (n <= 0)
        return -1;
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    return 0;
}

int tool_find_libnrt(char *path, size_t cap)
{
    const char *env = getenv("TRNEMU_LIBNRT");
    if (env != NULL && *env != '\0') {
        /* Absolute, so the directory can be split off and the program
         * finds it whatever its working directory. */
        return realpath(env, path) != NULL && access(path, R_OK) == 0 ? 0 : -1;
    }
    char dir[PATH_MAX];
    if (tool_self_dir(dir, sizeof dir) != 0)
        return -1;
    static const char *const rel[] = {
        "../shims/libnrt.so.1", "../lib/x86_64-linux-gnu/libnrt.so.1",
        "../lib64/libnrt.so.1", "../lib/libnrt.so.1",
    };
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[PATH_MAX + 64];
        snprintf(cand, sizeof cand, "%s/%s", dir, rel[i]);
        if (realpath(cand, path) != NULL && access(path, R_OK) == 0 && strlen(path) < cap)
            return 0;
    }
    return -1;
}

void tool_ranges(const uint32_t *ids, uint32_t n, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = i;
        while (j + 1 < n && ids[j + 1] == ids[j] + 1)
            j++;
        int w = j > i ? snprintf(buf + len, cap - len, "%s%u-%u", len ? "," : "", ids[i], ids[j])
                      : snprintf(buf + len, cap - len, "%s%u", len ? "," : "", ids[i]);
        if (w < 0 || (size_t)w >= cap - len)
            return;
        len += (size_t)w;
        i = j;
    }
}
