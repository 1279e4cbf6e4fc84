"""run_nki_samples.py: run the kernels of a local copy of
aws-neuron/nki-samples (or any directory of NKI kernel scripts) on trnemu.

    python3 tests/python/run_nki_samples.py /path/to/nki-samples [--tool build/tools/trnemu]

Every .py file under the directory that imports nki (or neuronxcc.nki) and
has an `if __name__ == "__main__":` block is run as a script under
`trnemu exec` with the race checker on; the script's own checks decide
pass or fail. Files that need what is not available here (torch, jax, a
missing NKI API) show up as failures with their last error line. Nothing
of the samples is copied into this repository.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def candidates(root):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            p = os.path.join(d, f)
            try:
                text = open(p, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            if "nki" in text and "__main__" in text:
                yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root")
    ap.add_argument("--tool", default=os.path.join(HERE, "..", "..", "build", "tools", "trnemu"))
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args()
    if not os.path.isdir(args.root):
        print("run_nki_samples: no directory %s; nothing to run" % args.root)
        return 0
    env = dict(os.environ, TRNEMU_RACECHECK="1")
    passed = failed = 0
    for p in candidates(args.root):
        try:
            r = subprocess.run([args.tool, "exec", "--", sys.executable, p], cwd=os.path.dirname(p),
                               env=env, capture_output=True, text=True, timeout=args.timeout)
            ok, why = r.returncode == 0, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        except subprocess.TimeoutExpired:
            ok, why = False, "timeout"
        passed += ok
        failed += not ok
        print("%-4s %s%s" % ("ok" if ok else "FAIL", os.path.relpath(p, args.root),
                             "" if ok else "  (" + why[:160] + ")"))
    print("run_nki_samples: %d passed, %d failed" % (passed, failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
