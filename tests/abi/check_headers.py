#!/usr/bin/env python3
"""check_headers.py: every public ABI header must be self-contained.

Usage: check_headers.py ABI_DIR [--cc COMPILER]... [--cxx COMPILER]...

For each header under ABI_DIR/nrt and ABI_DIR/ndl, and for each compiler
given, compiles (syntax only) a translation unit that includes just that
header, twice: alone, and after <assert.h>. C compilers get
-std=c17 -Wall -Wextra -Werror -Wstrict-prototypes -Wpedantic, C++
compilers -std=c++17 -Wall -Wextra -Werror. Prints every failure with the
compiler's message; exits 1 if there is any.
"""
import argparse
import glob
import os
import subprocess
import sys

C_FLAGS = ["-x", "c", "-std=c17", "-Wall", "-Wextra", "-Werror",
           "-Wstrict-prototypes", "-Wpedantic"]
CXX_FLAGS = ["-x", "c++", "-std=c++17", "-Wall", "-Wextra", "-Werror"]


def headers(abi_dir):
    """Header paths relative to abi_dir, e.g. 'nrt/nrt.h', sorted."""
    found = []
    for sub in ("nrt", "ndl"):
        for path in glob.glob(os.path.join(abi_dir, sub, "*.h")):
            found.append(os.path.relpath(path, abi_dir))
    return sorted(found)


def compile_one(compiler, flags, abi_dir, source):
    """Compile source text (syntax only); return the error text or None."""
    cmd = compiler.split() + flags + ["-fsyntax-only", "-I", abi_dir, "-"]
    run = subprocess.run(cmd, input=source, capture_output=True, text=True, check=False)
    return None if run.returncode == 0 else (run.stderr.strip() or f"exit {run.returncode}")


def check(compilers, abi_dir):
    """All failures over (compiler, header, variant); and the count tried."""
    failures, tried = [], 0
    for compiler, flags in compilers:
        for header in headers(abi_dir):
            for prefix in ("", "#include <assert.h>\n"):
                source = f'{prefix}#include "{header}"\n#include "{header}"\n'
                tried += 1
                err = compile_one(compiler, flags, abi_dir, source)
                if err:
                    how = "after <assert.h>" if prefix else "alone"
                    failures.append(f"{compiler}: {header} {how}:\n{err}")
    return failures, tried


def main(argv):
    parser = argparse.ArgumentParser(description="self-contained header check")
    parser.add_argument("abi_dir")
    parser.add_argument("--cc", action="append", default=[])
    parser.add_argument("--cxx", action="append", default=[])
    args = parser.parse_args(argv[1:])
    compilers = [(c, C_FLAGS) for c in args.cc] + [(c, CXX_FLAGS) for c in args.cxx]
    if not compilers:
        compilers = [("cc", C_FLAGS)]
    failures, tried = check(compilers, args.abi_dir)
    for line in failures:
        print(line)
    if failures:
        print(f"abi-headers: {len(failures)} of {tried} compilations failed")
        return 1
    names = ", ".join(c for c, _ in compilers)
    print(f"abi-headers: {len(headers(args.abi_dir))} headers self-contained "
          f"with {names} ({tried} compilations)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
