"""run_nki_samples.py: run the kernels of a local copy of
aws-neuron/nki-samples (or any directory of NKI kernel scripts) on trnemu.

    python3 tests/python/run_nki_samples.py /path/to/nki-samples [--tool build/tools/trnemu]

Every .py file under the directory that imports nki (or neuronxcc.nki) and
has an `if __name__ == "__main__":` block is run as a script under
`trnemu exec` with the race checker on; the script's own checks decide
pass or fail (scripts that need torch or jax are skipped). The sample
kernels listed in KERNELS, which have no script of their own, are called
with random inputs and compared with NumPy. A failure shows its last
error line. Nothing of the samples is copied into this repository.
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def candidates(root, need_main=True):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            p = os.path.join(d, f)
            try:
                text = open(p, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            if "nki" in text and ("__main__" in text or not need_main):
                yield p


# Kernels of the samples without a __main__ of their own: the function
# name, the shapes of its random float32 inputs and the NumPy reference.
KERNELS = [
    ("nki_matmul_basic_", [(128, 64), (128, 512)], "a.T @ b"),
    ("nki_matmul_tiled_", [(512, 256), (512, 1024)], "a.T @ b"),
    ("nki_matmul_hoist_load_", [(512, 256), (512, 1024)], "a.T @ b"),
    ("nki_matmul_block_free_dimension_", [(512, 256), (512, 1024)], "a.T @ b"),
    ("nki_matmul_fully_optimized_", [(1024, 2048), (1024, 1024)], "a.T @ b"),
]

DRIVER = """
import importlib.util, sys, numpy as np
spec = importlib.util.spec_from_file_location("sample", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
fn = getattr(m, sys.argv[2])
shapes = eval(sys.argv[3])
rng = np.random.default_rng(0)
ins = [rng.standard_normal(s).astype(np.float32) for s in shapes]
a, b = (ins + [None, None])[:2]
got = fn(*ins)
ref = eval(sys.argv[4])
np.testing.assert_allclose(got, ref, rtol=1e-3, atol=1e-3)
"""


def run_kernels(root, tool, env, timeout):
    passed = failed = 0
    for path in candidates(root, need_main=False):
        text = open(path, encoding="utf-8", errors="replace").read()
        for name, shapes, ref in KERNELS:
            if "def %s(" % name not in text:
                continue
            try:
                r = subprocess.run([tool, "exec", "--", sys.executable, "-c", DRIVER, path, name,
                                    repr(shapes), ref], cwd=os.path.dirname(path), env=env,
                                   capture_output=True, text=True, timeout=timeout)
                ok = r.returncode == 0
                why = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
            except subprocess.TimeoutExpired:
                ok, why = False, "timeout"
            passed += ok
            failed += not ok
            print("%-4s %s:%s%s" % ("ok" if ok else "FAIL", os.path.relpath(path, root), name,
                                    "" if ok else "  (" + why[:160] + ")"))
    return passed, failed


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
    passed, failed = run_kernels(args.root, args.tool, env, args.timeout)
    skipped = 0
    for p in candidates(args.root):
        try:
            r = subprocess.run([args.tool, "exec", "--", sys.executable, p], cwd=os.path.dirname(p),
                               env=env, capture_output=True, text=True, timeout=args.timeout)
            ok, why = r.returncode == 0, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        except subprocess.TimeoutExpired:
            ok, why = False, "timeout"
        if not ok and any("No module named '%s'" % m in why for m in ("torch", "jax", "torch_xla", "torch_neuronx")):
            skipped += 1
            print("skip %s  (%s)" % (os.path.relpath(p, args.root), why[:100]))
            continue
        passed += ok
        failed += not ok
        print("%-4s %s%s" % ("ok" if ok else "FAIL", os.path.relpath(p, args.root),
                             "" if ok else "  (" + why[:160] + ")"))
    print("run_nki_samples: %d passed, %d failed, %d skipped (need torch or jax)"
          % (passed, failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
