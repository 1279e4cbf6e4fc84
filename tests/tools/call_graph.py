#!/usr/bin/env python3
"""call_graph.py OBJ_DIR: the trnemu program's files call one way only.

Reads the symbols every object file of tools/ defines and uses (nm) and
fails when the calls between the files make a circle (a calls b and b,
directly or through others, calls a): the subcommands share their helpers
through tool_util.c, live.c and the like, never through each other or
trnemu.c. Skipped (77) without nm. Standard library only.
"""
import glob
import os
import shutil
import subprocess
import sys


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return defined, used


def calls(objdir):
    objs = [o for o in glob.glob(os.path.join(objdir, "*.o"))
            if os.path.basename(o).startswith(("cmd_", "ls_", "live", "monitor_", "tool_",
                                               "top_", "trnemu"))]
    syms = {os.path.basename(o).replace(".c.o", ".c"): symbols(o) for o in objs}
    graph = {}
    for a, (_, used) in syms.items():
        graph[a] = sorted(b for b, (defined, _) in syms.items() if b != a and used & defined)
    return graph


def circle(graph):
    """One circle of calls as a list of files, or None."""
    state, path = {}, []

    def visit(a):
        state[a] = 1
        path.append(a)
        for b in graph[a]:
            if state.get(b) == 1:
                return path[path.index(b):] + [b]
            if b not in state:
                found = visit(b)
                if found:
                    return found
        state[a] = 2
        path.pop()
        return None

    for a in graph:
        if a not in state:
            found = visit(a)
            if found:
                return found
    return None


def main():
    if shutil.which("nm") is None:
        print("SKIP: nm is not installed")
        sys.exit(77)
    graph = calls(sys.argv[1])
    if len(graph) < 10:
        sys.exit("FAIL: only %d tool objects in %s" % (len(graph), sys.argv[1]))
    found = circle(graph)
    if found:
        sys.exit("FAIL: the tools' files call each other in a circle: " + " -> ".join(found))
    print("tools/: %d files, calls one way only: ok" % len(graph))


if __name__ == "__main__":
    main()
