"""bench_trace.py: how fast the NKI front end traces a kernel whose tiles
are placed by address= (they share one access record, as in the NKI
Library's kernels), and what the record's byte-range index saves: each
hazard check of the trace timed against a scan of every access in the
record it reads (the baseline, run on the same records in the same run;
docs/nki.md "How a kernel is traced").

Per kernel size: instructions traced per second, the record's size at the
end, and the time of the trace's checks through the index and by a full
scan. Figures only.
"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ["TRNEMU_NKI_CACHE"] = "0"       # trace here every time

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402
from nki._core import alloc  # noqa: E402
from nki._core.access import _overlap  # noqa: E402


def placed(iters, places):
    """A kernel of 3 * iters instructions over tiles at `places` addresses."""
    @nki.jit
    def k(a):
        P, F = a.shape
        out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
        for i in nl.static_range(iters):
            off = (i % places) * 1024 + 4 * (i % 7)
            t = nl.ndarray((P, 64), dtype=a.dtype, buffer=nl.sbuf, address=(0, off))
            cols = slice((i % 8) * 64, (i % 8) * 64 + 64)
            nisa.dma_copy(dst=t, src=a[:, cols])
            nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
            nisa.dma_copy(dst=out[:, cols], src=t)
        return out
    return k


class Recorder:
    """Wraps Accesses.latest: keeps each check's arguments (for the scan)."""

    def __init__(self):
        self.calls = []
        self.orig = alloc.Accesses.latest

    def __enter__(self):
        rec = self

        def latest(acc, key, r, got):
            rec.calls.append((acc, key, r, got))
            return rec.orig(acc, key, r, got)
        alloc.Accesses.latest = latest
        return self

    def __exit__(self, *exc):
        alloc.Accesses.latest = self.orig


def scan(acc, key, r, got):
    for r2, n in acc.groups[key].items():
        if n > got and _overlap(r, r2):
            got = n
    return got


def main():
    a = np.zeros((128, 512), np.float32)
    print("%-8s %12s %10s %12s %12s %8s" % ("insns", "insns/s", "record", "index (ms)", "scan (ms)",
                                          "scan/index"))
    for iters in (1000, 3000, 6000):
        k = placed(iters, 150)
        with Recorder() as rec:        # (an append per check: next to nothing)
            k(a)
        rate = 3 * iters / k.last.trace_s
        # the records end larger than each check saw them: time both on the final records
        t = time.perf_counter()
        want = [rec.orig(*c) for c in rec.calls]
        t_index = time.perf_counter() - t
        t = time.perf_counter()
        got = [scan(*c) for c in rec.calls]
        t_scan = time.perf_counter() - t
        assert got == want
        size = max(len(c[0]) for c in rec.calls)
        print("%-8d %12.0f %10d %12.1f %12.1f %8.1f" % (3 * iters, rate, size, t_index * 1e3,
                                                      t_scan * 1e3, t_scan / t_index))
    return 0


if __name__ == "__main__":
    sys.exit(main())
