"""bench_race.py: the cost of the race checker (TRNEMU_RACECHECK=1) on an
LNC=2 NKI kernel whose two cores each move their own rows of one shared
output HBM -> SBUF -> HBM with nothing between the cores: every HBM access
of one core is checked against the other core's (docs/execution.md, "When
an execution fails").

Per shape: process CPU time of a cached call (best of 7), checker off and
on, one thread (TRNEMU_THREADS=1, as the checker runs). Figures only.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ["TRNEMU_THREADS"] = "1"

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402
from nki import _runtime  # noqa: E402


def mover(tiles, rows):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        for i in nl.affine_range(tiles):
            t = nl.ndarray((rows, 512), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a[me * tiles + i])
            nisa.dma_copy(dst=out[me * tiles + i], src=t)
        return out
    return k


def best_cpu(fn, reps=7):
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best * 1e3


def main():
    if _runtime.machine_lnc() < 2:
        print("bench_race: needs a machine with LNC=2")
        return 0
    print("%-34s %10s %10s %7s" % ("per core", "off (ms)", "on (ms)", "on/off"))
    for tiles, rows in ((256, 128), (1024, 1), (4096, 1)):
        k = mover(tiles, rows)[nl.spmd_dim(nl.nc(2))]
        a = np.random.default_rng(0).random((2 * tiles, rows, 512), dtype=np.float32)
        got = {}
        for on in ("0", "1"):
            os.environ["TRNEMU_RACECHECK"] = on
            assert np.array_equal(k(a), a)
            got[on] = best_cpu(lambda: k(a))
        print("%-34s %10.1f %10.1f %7.2f" % ("%d tiles of %d x 512 fp32" % (tiles, rows),
                                             got["0"], got["1"], got["1"] / got["0"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
