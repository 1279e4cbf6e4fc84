#!/usr/bin/env python3
"""layer_check.py: fails when a file includes a header of a layer it may not use.

The layers and their allowed arrows (docs/architecture.md):

  emu      emu/ only: nothing of devices/, store/, shims/, tools/, and no
           vendor header (nrt/, ndl/) nor trnemu's public ABI header
  devices  emu/ and devices/, and the ABI headers (abi/: nrt/, ndl/, trnemu/);
           within devices/, a file of devices/RANK/ includes only headers
           of its own rank or of a rank listed before it in RANKS
  store    emu/'s public headers, devices/runtime/state.h (its one view of the
           runtime) and devices/config/status.h, the ABI headers, store/
  shims    everything
  tools    the ABI headers, tools/ and the documented internal headers
           listed in TOOLS_INTERNAL below

A header named *_int.h is private to its folder: only files of the same
folder may include it. Headers outside the tree's folders (system and
package headers, generated trnemu_config.h) are not checked.

Usage: layer_check.py [ROOT]   (ROOT: the source tree, default: this
script's parent folder). Prints one line per offending include and exits 1
when there is any.
"""
import os
import re
import sys

ABI = ("nrt", "ndl", "trnemu")
LAYERS = ("emu", "devices", "store", "shims", "tools")

# Internal headers the tools may use (documented in docs/architecture.md).
TOOLS_INTERNAL = {
    "emu/log.h", "emu/status.h", "emu/isa/asm.h", "emu/isa/disasm.h",
    "emu/neff/npy.h", "emu/num/numerics.h",
    "devices/config/config.h", "devices/config/itype.h", "devices/machine/instance.h", "devices/config/node.h", "devices/config/topology.h",
    "devices/config/log_env.h",
    "store/calllog_replay.h", "store/snap_query.h",
}

# The folders of devices/, lowest first (docs/architecture.md).
RANKS = ("config", "thread", "machine", "link", "coll", "observe", "runtime")

# What store/ may see of devices/.
STORE_DEVICES = {"devices/runtime/state.h", "devices/config/status.h"}

INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def allowed(layer, header):
    """None when `layer` may include `header`, else the rule it breaks."""
    top = header.split("/", 1)[0]
    if top not in LAYERS and top not in ABI:
        return None  # system, package or generated header
    if top == layer:
        return None
    if layer == "shims":
        return None
    if layer == "emu":
        return "emu includes nothing of the other layers nor the vendor ABI"
    if layer == "devices":
        if top == "emu" or top in ABI:
            return None
        return "devices may include emu/ and the ABI headers only"
    if layer == "store":
        if top == "emu" or top in ABI or header in STORE_DEVICES:
            return None
        return "store sees devices through devices/runtime/state.h (and status.h) only"
    if layer == "tools":
        if top in ABI or header in TOOLS_INTERNAL:
            return None
        return "tools use the ABI and the documented internal headers only"
    return None


def devices_rank(path):
    """Rank index of a devices/RANK/... path, None elsewhere."""
    parts = path.split("/")
    if len(parts) > 2 and parts[0] == "devices" and parts[1] in RANKS:
        return RANKS.index(parts[1])
    return None


def rank_ok(rel, header):
    """A devices file includes no header of a higher rank."""
    mine, theirs = devices_rank(rel), devices_rank(header)
    return mine is None or theirs is None or theirs <= mine


def private_ok(path, header, root):
    """A *_int.h header is included from its own folder only."""
    if not header.endswith("_int.h"):
        return True
    return os.path.dirname(os.path.relpath(path, root)) == os.path.dirname(header)


def includes(root, tops):
    """(top, path, line number, header) of each #include in the .c and .h
    files under root/top, for every top of tops."""
    for top in tops:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m is not None:
                            yield top, path, lineno, m.group(1)


def check(root):
    bad = []
    for layer, path, lineno, header in includes(root, LAYERS):
        why = allowed(layer, header)
        if why is None and not private_ok(path, header, root):
            why = "a *_int.h header is private to its folder"
        rel = os.path.relpath(path, root)
        if why is None and not rank_ok(rel, header):
            why = "a devices/ file includes its own or lower ranks only"
        if why is not None:
            bad.append(f"{rel}:{lineno}: includes {header}: {why}")
    return bad


def report(tool, bad, what):
    """Print each fault, then one line counting them; the exit status."""
    for line in bad:
        print(line)
    if bad:
        print(f"{tool}: {len(bad)} {what} break the layering "
              "(docs/architecture.md)", file=sys.stderr)
        return 1
    return 0


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(os.path.join(root, "emu")):
        print(f"layer_check: {root} holds no emu/ folder", file=sys.stderr)
        return 2
    return report("layer_check", check(root), "include(s)")


if __name__ == "__main__":
    sys.exit(main())
