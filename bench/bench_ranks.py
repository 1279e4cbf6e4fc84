"""bench_ranks.py: a job of kernel.ranks() with its ranks forked from the
zygote (nki/_zygote.py, the default) against the same job with every rank
a fresh interpreter (TRNEMU_NKI_RANKS_FORK=0), measured in the same run.

The kernel (an all_reduce of a small tile) lives in a module written for
the bench, once importing nki and NumPy only and, where torch can be
imported, once importing torch as well, as the NKI Library's kernel
packages do. Per module and rank count: the median wall time of a job
each way (the zygote's jobs after its first, which pays the module's
import once), the first zygote job, and the ratio fresh / forked.
Figures only.
"""
import importlib
import os
import statistics
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ["TRNEMU_NKI_CACHE"] = "0"      # each rank traces: the disk cache would hide it

from nki import _zygote  # noqa: E402

MODULE = '''
import numpy as np
%s
import nki, nki.collectives as ncc, nki.isa as nisa, nki.language as nl


@nki.jit
def summed(a, rg):
    src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[src], dsts=[out], replica_group=rg, op=nl.add)
    return out
'''
REPS = 3


def job(mod, n):
    """Wall seconds of one job of n ranks."""
    import nki.collectives as ncc
    rg = ncc.ReplicaGroup([list(range(n))])
    ins = [{"a": np.full((4, 8), r, np.float32), "rg": rg} for r in range(n)]
    t0 = time.perf_counter()
    outs = mod.summed.ranks(ins, timeout=600)
    took = time.perf_counter() - t0
    want = float(sum(range(n)))
    assert all(float(o[0, 0]) == want for o in outs), "wrong sums"
    return took


def measure(mod, n):
    os.environ["TRNEMU_NKI_RANKS_FORK"] = "0"
    fresh = statistics.median(job(mod, n) for _ in range(REPS))
    os.environ["TRNEMU_NKI_RANKS_FORK"] = "1"
    _zygote._close_current()
    first = job(mod, n)
    forked = statistics.median(job(mod, n) for _ in range(REPS))
    return fresh, first, forked


def module(folder, name, extra):
    with open(os.path.join(folder, name + ".py"), "w") as f:
        f.write(MODULE % extra)
    return importlib.import_module(name)


def main():
    folder = tempfile.mkdtemp(prefix="bench-ranks-")
    sys.path.insert(0, folder)
    variants = [("nki and NumPy", "bench_ranks_plain", "")]
    try:
        import torch  # noqa: F401
        variants.append(("torch as well", "bench_ranks_torch", "import torch"))
    except ImportError:
        print("torch is not importable here: its row is left out")
    print("host: %d CPUs; %d jobs each way per row (median), 4x8 fp32 all_reduce"
          % (os.cpu_count(), REPS))
    print("%-15s %5s %10s %14s %10s %8s" % ("module imports", "ranks", "fresh s", "zygote 1st s",
                                           "forked s", "ratio"))
    for label, name, extra in variants:
        mod = module(folder, name, extra)
        for n in (2, 4, 8):
            fresh, first, forked = measure(mod, n)
            print("%-15s %5d %10.2f %14.2f %10.2f %7.1fx" % (label, n, fresh, first, forked,
                                                           fresh / forked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
