"""nki_matmul_tutorial.py: run the vendor's matrix multiplication tutorial
kernels, unmodified, from a local checkout of aws-neuron/aws-neuron-sdk
(revision 1db4d74e or earlier: nki/examples/matrix_multiplication/), on
an emulated trn1.2xlarge through nki.benchmark, and print trnemu's
estimated device latency beside the tutorial's hardware figures (Trn1,
docs/cost-model.md). Nothing of the tutorial is copied into this
repository; run it by hand:

    python3 bench/nki_matmul_tutorial.py CHECKOUT [K M N]

CHECKOUT is the checkout's root or the kernels file itself; the size
defaults to the tutorial's (K=8192, M=4096, N=8192: lhsT [K, M], rhs
[K, N], bf16), which takes minutes per kernel on a small host.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS_FILE = "nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py"
# The tutorial's table (nki/tutorials/matrix_multiplication.rst): ms on Trn1.
HARDWARE = [("tiled", 51.80), ("hoist_load", 42.96), ("block_free_dimension", 22.07),
            ("fully_optimized", 6.97)]


def _mgrid_with_names(nl):
    """The tutorial indexes nl.mgrid results by .p and .x; give the front
    end's tuple those names when it lacks them."""
    probe = nl.mgrid[0:1, 0:1]
    if hasattr(probe, "p"):
        return

    class Grid(tuple):
        p = property(lambda self: self[0])
        x = property(lambda self: self[1])

    old = nl.mgrid

    class MGrid:
        def __getitem__(self, key):
            r = old[key]
            return Grid(r) if isinstance(r, tuple) else r

    nl.mgrid = MGrid()


def load_kernels(path):
    import importlib.util
    if os.path.isdir(path):
        path = os.path.join(path, KERNELS_FILE)
    spec = importlib.util.spec_from_file_location("vendor_matmul", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    K, M, N = [int(x) for x in argv[1:4]] if len(argv) >= 4 else (8192, 4096, 8192)
    os.environ.setdefault("TRNEMU_INSTANCE", "trn1.2xlarge")
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    import numpy as np
    import nki
    import nki.language
    import neuronxcc.nki.language as legacy_nl
    _mgrid_with_names(nki.language)
    legacy_nl.mgrid = nki.language.mgrid
    mod = load_kernels(argv[0])
    rng = np.random.default_rng(0)
    lhsT = nki._kernel.bf16(rng.standard_normal((K, M)).astype(np.float32))
    rhs = nki._kernel.bf16(rng.standard_normal((K, N)).astype(np.float32))
    scale = 8192.0 * 4096 * 8192 / (K * M * N)
    print("%-22s %10s %12s %7s" % ("kernel", "hardware", "trnemu", "ratio"))
    for name, hw_ms in HARDWARE:
        bench = nki.benchmark(warmup=5, iters=10)(getattr(mod, "nki_matmul_%s_" % name))
        bench(lhsT, rhs)
        ms = bench.benchmark_result.nc_latency.get_latency_percentile(99) / 1000.0
        hw = hw_ms / scale
        print("%-22s %8.2f ms %9.2f ms %7.2f" % (name, hw, ms, ms / hw), flush=True)
    if scale != 1:
        print("(hardware figures scaled by the work: 1/%g of the tutorial's size)" % scale)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
