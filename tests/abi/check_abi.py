#!/usr/bin/env python3
"""check_abi.py: compare the ABI probe's report with abi-facts.json.

Usage: check_abi.py FACTS PROBE

PROBE is either the JSON the probe printed, or the probe program itself
(then it is run and its standard output is read). Every constant value,
struct size, alignment and field offset in FACTS must match the report,
and the report must cover exactly FACTS' functions (their prototypes are
checked when the probe is compiled). Prints every difference; exits 1 if
there is any, 0 when all match.
"""
import json
import os
import subprocess
import sys


def load_report(path):
    """The probe's report: read a JSON file, or run the probe program."""
    if os.access(path, os.X_OK) and not path.endswith(".json"):
        run = subprocess.run([path], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise RuntimeError(f"probe {path} exited with {run.returncode}: {run.stderr.strip()}")
        return json.loads(run.stdout)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def diff_constants(facts, report):
    """Differences between the facts' and the report's constant values."""
    out = []
    want, got = facts.get("constants", {}), report.get("constants", {})
    for name in sorted(want):
        if name not in got:
            out.append(f"constant {name}: missing from the probe")
        elif got[name] != want[name]:
            out.append(f"constant {name}: trnemu {got[name]}, vendor {want[name]}")
    out += [f"constant {n}: in the probe but not in the facts (stale probe?)"
            for n in sorted(set(got) - set(want))]
    return out


def diff_struct(name, want, got):
    """Differences of one struct's size, alignment and field offsets."""
    out = []
    for key in ("size", "align"):
        if got.get(key) != want.get(key):
            out.append(f"struct {name}: {key} trnemu {got.get(key)}, vendor {want.get(key)}")
    got_offsets = got.get("offsets", {})
    for field, offset in sorted(want.get("offsets", {}).items()):
        if got_offsets.get(field) != offset:
            out.append(f"struct {name}.{field}: offset trnemu {got_offsets.get(field)}, vendor {offset}")
    return out


def diff_structs(facts, report):
    """Differences between the facts' and the report's struct layouts."""
    out = []
    want, got = facts.get("structs", {}), report.get("structs", {})
    for name in sorted(want):
        if name not in got:
            out.append(f"struct {name}: missing from the probe")
        else:
            out += diff_struct(name, want[name], got[name])
    out += [f"struct {n}: in the probe but not in the facts (stale probe?)"
            for n in sorted(set(got) - set(want))]
    return out


def diff_functions(facts, report):
    """Functions whose prototypes the probe did or did not check."""
    want, got = set(facts.get("functions", {})), set(report.get("functions", []))
    out = [f"function {n}: prototype not checked by the probe" for n in sorted(want - got)]
    out += [f"function {n}: checked by the probe but not in the facts (stale probe?)"
            for n in sorted(got - want)]
    return out


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        facts = json.load(f)
    try:
        report = load_report(argv[2])
    except (OSError, ValueError, RuntimeError) as err:
        print(f"abi-facts: cannot read the probe report: {err}")
        return 1
    diffs = diff_constants(facts, report) + diff_structs(facts, report) + diff_functions(facts, report)
    for line in diffs:
        print(line)
    if diffs:
        print(f"abi-facts: {len(diffs)} difference(s) from {argv[1]}")
        return 1
    print(f"abi-facts: {len(facts['constants'])} constants, {len(facts['structs'])} structs, "
          f"{len(facts['functions'])} function prototypes match {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
