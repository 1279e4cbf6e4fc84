"""nki_digests.py: a digest of every program the NKI front end assembles,
to check that a change to the tracer leaves the traced programs the same,
byte for byte.

Runs the pytest suite of tests/python (in this process, with a hook on
nki._runtime.build_neff) and then traces the large tutorial kernels of
bench/bench_nki.py; writes one line per assembled program: the test (or
kernel), the kernel name, a SHA-256 of its assembly (declarations and
lines) and one of the NEFF bytes. Compare the files of two checkouts with
diff (the assembly digest is the one that matters; the NEFF digest also
covers the assembler).

    TRNEMU_LIBNRT=build/shims/libnrt.so.1 TRNEMU_TOOL=build/tools/trnemu \\
        python3 scripts/nki_digests.py OUT [--root CHECKOUT] [-- PYTEST ARGS]

--root names the checkout whose python/ and tests/python/ are traced (by
default the one holding this script). Tests that fail are listed by
pytest; their programs are still digested up to the failure.
"""
import argparse
import hashlib
import os
import sys


class _Digests:
    """pytest plugin: the hook on build_neff and the name of the running test."""

    def __init__(self, out):
        self.out = out            # open file of digest lines
        self.test = "<none>"      # node id of the running test (or kernel)

    def pytest_runtest_setup(self, item):
        self.test = item.nodeid.replace(" ", "_")

    def wrap(self, runtime):
        """Make runtime.build_neff write a digest line for each program."""
        build = runtime.build_neff

        def digested(name, head, subgraphs):
            neff, err = build(name, head, subgraphs)
            neff_sha = hashlib.sha256(neff).hexdigest() if neff is not None else "error"
            self.out.write("%s %s %s %s\n" % (self.test, name, _assembly_sha(name, head, subgraphs),
                                              neff_sha))
            self.out.flush()
            return neff, err
        runtime.build_neff = digested


def _assembly_sha(name, head, subgraphs):
    """SHA-256 of what build_neff assembles: the name, the head lines and
    each subgraph's declarations and lines."""
    h = hashlib.sha256(name.encode())
    for line in head:
        h.update(line.encode() + b"\n")
    for decls, lines in subgraphs:
        h.update(repr(decls).encode())
        for line in lines:
            h.update(line.encode() + b"\n")
    return h.hexdigest()


def _large_kernels(plugin, root):
    """Trace (and assemble) the large kernels bench_nki.py times."""
    import numpy as np
    sys.path.insert(0, os.path.join(root, "tests", "python"))
    import test_nki_tutorials as tut
    from nki import _kernel
    zeros = np.zeros
    cases = [("matmul_tiled 2048x1024x4096", tut.matmul_tiled,
              (zeros((2048, 1024), np.float32), zeros((2048, 4096), np.float32))),
             ("layernorm 16384x512", tut.layernorm_kernel,
              (zeros((16384, 512), np.float32), zeros(512, np.float32), zeros(512, np.float32))),
             ("rmsnorm 32768x256", tut.rmsnorm_kernel,
              (zeros((32768, 256), np.float32), zeros(256, np.float32)))]
    for label, kern, args in cases:
        plugin.test = label.replace(" ", "_")
        _kernel._trace(kern.func, args, {}, (1,)).model.unload()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="file for the digest lines")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("pytest_args", nargs="*", help="after --: more pytest arguments")
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    os.environ.setdefault("TRNEMU_NKI_CACHE", "0")   # every kernel traced, none from disk
    os.environ.setdefault("TRNEMU_INSTANCE_NAME", "nki-digests")
    sys.path.insert(0, os.path.join(root, "python"))
    import pytest
    from nki import _runtime
    with open(a.out, "w") as out:
        plugin = _Digests(out)
        plugin.wrap(_runtime)
        tests = os.path.join(root, "tests", "python")
        rc = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", tests, tests] + a.pytest_args,
                         plugins=[plugin])
        _large_kernels(plugin, root)
    return int(rc)


if __name__ == "__main__":
    sys.exit(main())
