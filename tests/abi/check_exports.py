#!/usr/bin/env python3
"""check_exports.py: check the dynamic symbols libnrt.so.1 exports.

Usage: check_exports.py LIB FACTS[,FACTS...] [NM]

Runs `nm -D --defined-only LIB` and fails unless the defined dynamic
symbols are exactly the functions of abi-facts.json plus trnemu's own
`trnemu_*` names. Linker-made markers (_init, _fini, _edata, _end,
__bss_start) are ignored when present. Every missing, unexpected or
non-function symbol is printed; exit 1 if there is any.
"""
import json
import subprocess
import sys

# Symbols the linker or C runtime may add by itself; never part of the ABI.
LINKER_MARKERS = {"_init", "_fini", "_edata", "_end", "__bss_start"}
# nm type letters of code: text, weak, indirect function.
FUNCTION_TYPES = {"T", "t", "W", "w", "i"}
EXTENSION_PREFIX = "trnemu_"


def defined_symbols(nm, lib):
    """Map of exported symbol name -> nm type letter."""
    run = subprocess.run([nm, "-D", "--defined-only", lib],
                         capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"{nm} failed on {lib}: {run.stderr.strip()}")
    symbols = {}
    for line in run.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        symbols[name.split("@")[0]] = kind
    return symbols


def problems(symbols, wanted):
    """Every way the exported symbols differ from the wanted set."""
    out = [f"missing export: {n}" for n in sorted(wanted - set(symbols))]
    for name, kind in sorted(symbols.items()):
        if name in LINKER_MARKERS:
            continue
        if name not in wanted and not name.startswith(EXTENSION_PREFIX):
            out.append(f"unexpected export: {name} (nm type {kind})")
        elif name in wanted and kind not in FUNCTION_TYPES:
            out.append(f"export {name} is not a function (nm type {kind})")
    return out


def main(argv):
    if len(argv) not in (3, 4):
        sys.stderr.write(__doc__)
        return 2
    lib, facts_path = argv[1], argv[2]
    nm = argv[3] if len(argv) == 4 else "nm"
    wanted = set()
    for path in facts_path.split(","):  # the main facts and the debug-stream facts
        with open(path, encoding="utf-8") as f:
            wanted |= set(json.load(f)["functions"])
    try:
        symbols = defined_symbols(nm, lib)
    except (OSError, RuntimeError) as err:
        print(f"abi-exports: {err}")
        return 1
    found = problems(symbols, wanted)
    for line in found:
        print(line)
    if found:
        print(f"abi-exports: {len(found)} problem(s) in {lib}")
        return 1
    extra = sorted(n for n in symbols if n.startswith(EXTENSION_PREFIX))
    print(f"abi-exports: {len(wanted)} ABI functions and {len(extra)} trnemu_* "
          f"extensions exported by {lib}, nothing else")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
