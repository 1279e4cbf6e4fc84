"""bench_loaded.py: the host memory a kernel kept loaded by the NKI front
end holds, per instruction, as a ratio to the encoded instruction (512
bytes), and what the memory bound on loaded kernels
(TRNEMU_NKI_LOADED_MAX_MB, docs/nki.md "Loaded kernels") leaves a process
that calls many different kernels once each.

Per kernel size: the growth of the process's resident memory (VmRSS) over
six different kernels of that size, kept loaded (no bound), over their
instructions, and the growth of the C heap in use (glibc's mallinfo2: the
runtime's decoded program and CPython's larger objects, not its small-object
arenas). Then twelve kernels of 5,000 instructions under a bound of
16 MiB and with none: the resident memory after each. Figures only.
"""
import ctypes
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
os.environ["TRNEMU_NKI_CACHE"] = "0"       # trace each kernel here: the disk cache would skip it

import nki  # noqa: E402
import nki.language as nl  # noqa: E402
from nki import _kernel  # noqa: E402

ENCODED = 512        # bytes of one encoded instruction (emu/isa/isa.h ISA_INSN_BYTES)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _MallInfo2


def heap_in_use():
    """Bytes the C heap (malloc) has handed out and not had back."""
    m = _libc.mallinfo2()
    return m.uordblks + m.hblkhd


def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


def adder(reps):
    """A kernel of reps + 2 instructions (a load, reps adds, a store)."""
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        for _ in nl.static_range(reps):
            t = nl.add(t, 1.0)
        nl.store(out, t)
        return out
    return k


def call(reps, a):
    k = adder(reps)
    assert k(a)[0, 0] == reps
    return k.last


def per_insn(insns, a, count=6):
    """(resident growth, malloc'd bytes in use) per instruction kept."""
    call(insns, a)                       # the first call of a size warms the allocators
    r0, h0 = rss_mib(), heap_in_use()
    held = [call(insns + 1 + i, a) for i in range(count)]
    grown, heap = (rss_mib() - r0) * (1 << 20), heap_in_use() - h0
    n = sum(sum(len(ct.lines) for ct in c.tracer.cores) for c in held)
    return grown / n, heap / n


def bounded(limit_mb, a, count=12):
    os.environ["TRNEMU_NKI_LOADED_MAX_MB"] = str(limit_mb)
    call(4000, a)
    r0, out = rss_mib(), []
    for i in range(count):
        call(5000 + i, a)
        out.append((rss_mib() - r0, len(_kernel._cache)))
    return out


def scenario(what, arg):
    """One measurement, in a process of its own (so that what an earlier
    one freed, and the allocators kept, does not blur it)."""
    a = np.zeros((128, 64), np.float32)
    if what == "per-insn":
        os.environ["TRNEMU_NKI_LOADED_MAX_MB"] = "0"
        b, heap = per_insn(arg, a)
        print("%-12d %14.0f %14.2f %14.0f" % (arg, b, b / ENCODED, heap))
    else:
        grown = bounded(arg, a)
        print("bound %-4s: after 1..12 kernels, resident growth (MiB) and kernels kept: %s"
              % ("%d MiB" % arg if arg else "none", " ".join("%.0f/%d" % g for g in grown)))


def main():
    if len(sys.argv) == 3:
        scenario(sys.argv[1], int(sys.argv[2]))
        return 0
    print("%-12s %14s %14s %14s" % ("instructions", "resident/insn", "/ encoded insn", "malloc'd/insn"),
          flush=True)
    runs = [("per-insn", n) for n in (1000, 5000, 20000)] + [("bound", 16), ("bound", 0)]
    for what, arg in runs:
        if what == "bound" and arg == 16:
            print("assumed by the front end: %d bytes/insn (HOST_BYTES_PER_INSN); kernels of "
                  "5,000 instructions:" % _kernel.HOST_BYTES_PER_INSN, flush=True)
        r = subprocess.run([sys.executable, os.path.abspath(__file__), what, str(arg)])
        if r.returncode:
            return r.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
