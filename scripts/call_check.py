#!/usr/bin/env python3
"""call_check.py: fails when a file calls a layer or rank it may not use, or
when files call or include each other around a circle.

It reads what the objects of a build really link against (`nm`), so it
sees the calls an include check misses (a header that drags in another's
declarations). The rules (docs/architecture.md, "Layers" and "devices/ as
a stack"):

  layers   emu calls emu only; devices calls emu and devices; store calls
           emu, store and, of devices, devices/runtime/state.c only (its
           one view of the runtime); tools call emu, store and, of
           devices, the files behind TOOLS_INTERNAL (layer_check.py);
           shims call anything.
  ranks    a file of devices/RANK/ calls only files of its own rank or of a
           rank listed before it in RANKS.
  circles  no two product files call each other, directly or around a
           circle; no two modules (x.c with x.h) include each other so
           (a folder's private x_int.h headers are part of the modules
           that include them, not modules of their own).

Usage: call_check.py BUILD_DIR SOURCE_ROOT [SUBTREE]
  BUILD_DIR    a configured and built meson build (compile_commands.json)
  SOURCE_ROOT  the source tree
  SUBTREE      check only the objects whose source lies under this folder
               of SOURCE_ROOT, with paths taken relative to it (the
               failing fixtures of tests/layers use it); default: the root
Prints one line per broken rule and exits 1 when there is any.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layer_check  # noqa: E402  (TOOLS_INTERNAL, includes, report)

RANKS = ("config", "thread", "machine", "link", "coll", "observe", "runtime")
PRODUCT = ("emu", "devices", "store", "shims", "tools")
STORE_MAY_CALL = {"devices/runtime/state.c"}


def sources_of(build, root, subtree):
    """{object path: source path relative to subtree} for product files."""
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    base = os.path.realpath(os.path.join(root, subtree))
    out = {}
    for e in entries:
        src = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if not src.startswith(base + os.sep) or not src.endswith(".c"):
            continue
        rel = os.path.relpath(src, base)
        if rel.split("/", 1)[0] not in PRODUCT:
            continue
        obj = e.get("output") or re.search(r"-o (\S+)", e["command"]).group(1)
        obj = os.path.join(e["directory"], obj)
        if os.path.exists(obj):  # an object not built (yet) calls nothing
            out[obj] = rel
    return out


def symbols(objs):
    """({symbol: defining source}, {source: set of undefined symbols})."""
    defs, undef = {}, {}
    for obj, src in objs.items():
        text = subprocess.run(["nm", obj], capture_output=True, text=True,
                              check=True).stdout
        need = undef.setdefault(src, set())
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "TDBRV":
                defs.setdefault(parts[2], src)
            elif len(parts) == 2 and parts[0] == "U":
                need.add(parts[1])
    return defs, undef


def calls(defs, undef):
    """{caller source: {callee source: [symbols]}} between distinct files."""
    graph = {}
    for src, need in undef.items():
        for sym in sorted(need):
            dst = defs.get(sym)
            if dst is not None and dst != src:
                graph.setdefault(src, {}).setdefault(dst, []).append(sym)
    return graph


def rank(path):
    """Rank index of a devices/ file, None for other files."""
    parts = path.split("/")
    if parts[0] == "devices" and len(parts) > 2 and parts[1] in RANKS:
        return RANKS.index(parts[1])
    return None


def tools_may_call(callee):
    """emu/ and store/ are libraries the tool links; of devices/, only the
    files behind the documented internal headers."""
    if callee.split("/", 1)[0] in ("emu", "store"):
        return True
    return os.path.splitext(callee)[0] + ".h" in layer_check.TOOLS_INTERNAL


def layer_rule(caller, callee):
    """None when caller may call into callee, else the rule it breaks."""
    a, b = caller.split("/", 1)[0], callee.split("/", 1)[0]
    if a == b or a == "shims":
        return None
    if a == "emu":
        return "emu calls nothing outside emu/"
    if a == "devices":
        return None if b == "emu" else "devices calls emu/ and devices/ only"
    if a == "store":
        if b == "emu" or callee in STORE_MAY_CALL:
            return None
        return "store calls devices through devices/runtime/state.c only"
    if a == "tools":
        return None if tools_may_call(callee) else \
            "tools call the documented internal files only (layer_check.TOOLS_INTERNAL)"
    return None


def rank_rule(caller, callee):
    ra, rb = rank(caller), rank(callee)
    if ra is None or rb is None or rb <= ra:
        return None
    return f"devices/{RANKS[ra]} may not call the higher rank devices/{RANKS[rb]}"


def arrow_faults(graph):
    bad = []
    for src in sorted(graph):
        for dst in sorted(graph[src]):
            why = layer_rule(src, dst) or rank_rule(src, dst)
            if why:
                syms = ", ".join(graph[src][dst][:4])
                bad.append(f"{src}: calls {dst} ({syms}): {why}")
    return bad


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]
    nodes = sorted(set(graph) | {d for s in graph for d in graph[s]})

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(max(10000, 4 * len(nodes)))
    for v in nodes:
        if v not in index:
            visit(v)
    return found


def include_graph(root, subtree):
    """{module: {module: [header]}} where a module is a path without .c/.h."""
    base = os.path.join(root, subtree)
    graph = {}
    for _, path, _, header in layer_check.includes(base, PRODUCT):
        if not header.endswith(".h"):
            continue
        me = os.path.splitext(os.path.relpath(path, base))[0]
        other = os.path.splitext(header)[0]
        if me.endswith("_int") or other.endswith("_int"):
            continue
        if other != me and other.split("/", 1)[0] in PRODUCT:
            graph.setdefault(me, {}).setdefault(other, []).append(header)
    return graph


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__.split("Usage:")[1].strip().splitlines()[0], file=sys.stderr)
        return 2
    build, root = sys.argv[1], sys.argv[2]
    subtree = sys.argv[3] if len(sys.argv) == 4 else "."
    objs = sources_of(build, root, subtree)
    if not objs:
        print(f"call_check: no product objects under {subtree} in {build}", file=sys.stderr)
        return 2
    graph = calls(*symbols(objs))
    bad = arrow_faults(graph)
    for comp in circles(graph):
        bad.append("call circle: " + " -> ".join(comp))
    for comp in circles(include_graph(root, subtree)):
        bad.append("include circle: " + " -> ".join(c + ".{c,h}" for c in comp))
    return layer_check.report("call_check", bad, "call(s) or circle(s)")


if __name__ == "__main__":
    sys.exit(main())
