/*
 * cmd_exec.c: `trnemu exec -- CMD [ARGS]`: run any program with trnemu's
 * libnrt.so.1 in place of the vendor library.
 *
 * The library is found next to the tool (build tree: ../shims; install
 * prefix: ../lib or ../lib/<multiarch>) or named by TRNEMU_LIBNRT. It is
 * put first on LD_LIBRARY_PATH (for programs linked with -lnrt) and in
 * LD_PRELOAD (for programs that dlopen it or carry an rpath), then CMD
 * replaces this process. TRNEMU_* and NEURON_* variables pass through.
 * The NKI front end (`import nki`, `neuronxcc.nki`) is put first on
 * PYTHONPATH: <prefix>/python next to an installed tool, else the source
 * tree's python/ directory the build tree was configured from.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/tool.h"

/* Prepend value to a colon-separated variable. */
static int exec_prepend(const char *var, const char *value, char sep)
{
    const char *old = getenv(var);
    size_t len = strlen(value) + (old ? strlen(old) + 1 : 0) + 1;
    char *buf = malloc(len);
    if (buf == NULL)
        return -1;
    if (old != NULL && *old != '\0')
        snprintf(buf, len, "%s%c%s", value, sep, old);
    else
        snprintf(buf, len, "%s", value);
    int r = setenv(var, buf, 1);
    free(buf);
    return r;
}

/* The directory holding the nki Python package, or -1 when there is none. */
static int exec_find_python(char *path, size_t cap)
{
    char dir[PATH_MAX];
    char cand[PATH_MAX + 64];
    if (tool_self_dir(dir, sizeof dir) == 0) {
        snprintf(cand, sizeof cand, "%s/../python", dir);
        char pkg[PATH_MAX + 96];
        snprintf(pkg, sizeof pkg, "%s/nki/__init__.py", cand);
        char real[PATH_MAX];
        if (access(pkg, R_OK) == 0 && realpath(cand, real) != NULL && strlen(real) < cap) {
            snprintf(path, cap, "%s", real);
            return 0;
        }
    }
#ifdef TRNEMU_SOURCE_PYTHON
    snprintf(cand, sizeof cand, "%s/nki/__init__.py", TRNEMU_SOURCE_PYTHON);
    if (access(cand, R_OK) == 0 && strlen(TRNEMU_SOURCE_PYTHON) < cap) {
        snprintf(path, cap, "%s", TRNEMU_SOURCE_PYTHON);
        return 0;
    }
#endif
    return -1;
}

int cmd_exec(int argc, char **argv)
{
    if (tool_help_asked(argc, argv, true))
        return tool_usage("exec", stdout);
    int first = 1;
    if (first < argc && strcmp(argv[first], "--") == 0)
        first++;
    if (first >= argc)
        return tool_usage_error("exec", "missing the command to run");
    char lib[PATH_MAX];
    if (tool_find_libnrt(lib, sizeof lib) != 0) {
        fprintf(stderr, "trnemu exec: cannot find trnemu's libnrt.so.1 "
                        "(set TRNEMU_LIBNRT to its path)\n");
        return 1;
    }
    char libdir[PATH_MAX];
    snprintf(libdir, sizeof libdir, "%s", lib);
    *strrchr(libdir, '/') = '\0';
    if (exec_prepend("LD_LIBRARY_PATH", libdir, ':') != 0 ||
        exec_prepend("LD_PRELOAD", lib, ':') != 0) {
        fprintf(stderr, "trnemu exec: out of memory\n");
        return 1;
    }
    char pydir[PATH_MAX];
    if (exec_find_python(pydir, sizeof pydir) == 0 && exec_prepend("PYTHONPATH", pydir, ':') != 0) {
        fprintf(stderr, "trnemu exec: out of memory\n");
        return 1;
    }
    execvp(argv[first], &argv[first]);
    fprintf(stderr, "trnemu exec: cannot run '%s': %m\n", argv[first]);
    return 127;
}
