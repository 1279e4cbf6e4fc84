"""bench_nki.py: the NKI front end's own costs, and the NKI tutorial
kernels on trnemu against the same kernels computed op by op in NumPy, in
the same run.

1. Tracing: large tutorial kernels (thousands of tiles) traced; wall and
   CPU microseconds per traced instruction (target <= 50).
2. Per kernel: the first call split into trace, assemble and nrt_load; the
   raw nrt_execute time of the loaded model (with the arguments and the
   result of the last call attached; the result is kept alive for it); a cached call of the kernel (key, arguments and
   results attached to the device tensors, execute), the two run in turns
   (600 times each for a kernel under a millisecond, else 20); and NumPy
   running the kernel's ops tile by tile. Ratios: NumPy / nrt_execute
   (target >= 5) and cached call / nrt_execute (target <= 1.2), of the
   medians of wall and of CPU time.
3. A new process's first call of a large kernel with the disk kernel
   cache off, and with it warm (filled by an earlier process).

Figures only; nothing is asserted. The disk cache is off in this process
(its kernels are traced here) and on, in a temporary folder, in the
processes of part 3.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

os.environ["TRNEMU_NKI_CACHE"] = "0"

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import test_nki_tutorials as tut  # noqa: E402  (the tutorial kernels)
from nki import _kernel  # noqa: E402


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def paired_medians(fa, fb, reps):
    """fa and fb run in turns, reps times each: the medians of their wall
    and CPU seconds ((wall a, cpu a), (wall b, cpu b)). Taking turns gives
    both the same share of a loaded machine's swings."""
    walls, cpus = ([], []), ([], [])
    for _ in range(reps):
        for k, fn in enumerate((fa, fb)):
            c = time.process_time()
            t = time.perf_counter()
            fn()
            walls[k].append(time.perf_counter() - t)
            cpus[k].append(time.process_time() - c)
    return tuple((statistics.median(walls[k]), statistics.median(cpus[k])) for k in range(2))


def np_matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    res = np.empty((M, N), np.float32)
    for m in range(M // 128):
        for n in range(N // 512):
            acc = np.zeros((128, 512), np.float32)
            for k in range(K // 128):
                acc += lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128].T @ \
                    rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512]
            res[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512] = acc
    return res


def np_softmax(x):
    out = np.empty_like(x)
    for i in range(x.shape[0] // 128):
        t = x[i * 128:(i + 1) * 128]
        e = np.exp(t - t.max(axis=1, keepdims=True))
        out[i * 128:(i + 1) * 128] = e / e.sum(axis=1, keepdims=True)
    return out


def np_rmsnorm(a, g):
    out = np.empty_like(a)
    for i in range(a.shape[0] // 128):
        t = a[i * 128:(i + 1) * 128]
        r = 1 / np.sqrt(np.mean(t * t, axis=1, keepdims=True) + 1e-6)
        out[i * 128:(i + 1) * 128] = t * r * g
    return out


def np_layernorm(x, gm, bt):
    out = np.empty_like(x)
    for i in range(x.shape[0] // 128):
        t = x[i * 128:(i + 1) * 128]
        c = t - t.mean(axis=1, keepdims=True)
        y = c / np.sqrt(np.mean(c * c, axis=1, keepdims=True) + 1e-5)
        out[i * 128:(i + 1) * 128] = y * gm + bt
    return out


def trace_speed(r):
    """Part 1: microseconds per traced instruction of large kernels."""
    cases = [
        ("matmul_tiled 2048x1024x4096", tut.matmul_tiled, (r(2048, 1024), r(2048, 4096))),
        ("layernorm 16384x512", tut.layernorm_kernel, (r(16384, 512), r(512), r(512))),
        ("rmsnorm 32768x256", tut.rmsnorm_kernel, (r(32768, 256), r(256))),
    ]
    print("%-28s %8s %9s %10s %10s" % ("traced kernel", "insns", "trace ms", "wall us/i", "cpu us/i"))
    build, traced = _kernel._runtime.build_neff, []

    def timed_build(*a):              # the trace ends where assembly starts
        traced.append(time.process_time())
        return build(*a)
    _kernel._runtime.build_neff = timed_build
    for name, kern, args in cases:
        traced.clear()
        cpu0 = time.process_time()
        comp = _kernel._trace(kern.func, args, {}, (1,))
        cpu = traced[0] - cpu0
        n = sum(len(c.lines) for c in comp.tracer.cores)
        print("%-28s %8d %9.1f %10.1f %10.1f" % (name, n, comp.trace_s * 1e3,
                                                 comp.trace_s / n * 1e6, cpu / n * 1e6))
        comp.model.unload()
    _kernel._runtime.build_neff = build
    print()


_COLD = r"""
import sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[2])
import numpy as np
from nki import _runtime
import test_nki_tutorials as tut
_runtime.start()
rng = np.random.default_rng(0)
x = rng.standard_normal((8192, 512)).astype(np.float32)
g = rng.standard_normal(512).astype(np.float32)
t = time.perf_counter()
comp = tut.layernorm_kernel.compile((x, g, g), {})
t1 = time.perf_counter()
tut.layernorm_kernel(x, g, g)
t2 = time.perf_counter()
print("%.4f %s %.4f" % (t1 - t, getattr(comp, "from_disk", False), t2 - t))
"""


def cold_process():
    """Part 3: a new process's first call, disk cache off vs warm."""
    folder = tempfile.mkdtemp(prefix="trnemu-bench-nki-cache-")
    try:
        def run(cache, tag):
            env = dict(os.environ, TRNEMU_NKI_CACHE=cache, TRNEMU_NKI_CACHE_DIR=folder)
            env["TRNEMU_INSTANCE_NAME"] = os.environ.get("TRNEMU_INSTANCE_NAME", "bench") + "-" + tag
            t = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", _COLD, os.path.join(HERE, "..", "python"),
                                  os.path.join(HERE, "..", "tests", "python")], env=env,
                                 capture_output=True, text=True, check=True).stdout.split()
            return float(out[0]), out[1] == "True", float(out[2]), time.perf_counter() - t
        off = [run("0", "cold-off") for _ in range(3)]
        run("1", "cold-fill")
        warm = [run("1", "cold-warm") for _ in range(3)]
        assert all(w[1] for w in warm) and not any(o[1] for o in off)
        f_off = statistics.median(o[0] for o in off)
        f_warm = statistics.median(w[0] for w in warm)
        print("new process, layernorm 8192x512 (medians of 3): compile = key, then trace, "
              "assemble and nrt_load, or the disk file and nrt_load")
        for what, runs in (("disk cache off ", off), ("disk cache warm", warm)):
            print("  %s: compile %7.1f ms, first call with it %7.1f ms, process %5.2f s"
                  % (what, statistics.median(x[0] for x in runs) * 1e3,
                     statistics.median(x[2] for x in runs) * 1e3,
                     statistics.median(x[3] for x in runs)))
        print("  compile off / warm: %.1f" % (f_off / f_warm))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    rng = np.random.default_rng(0)

    def r(*s):
        return rng.standard_normal(s).astype(np.float32)

    print("load average: %.2f %.2f %.2f on %d CPUs\n" % (os.getloadavg() + (os.cpu_count(),)))
    trace_speed(r)
    cases = [
        ("tensor_add 128x512", tut.tensor_add, (r(128, 512), r(128, 512)), lambda a, b: a + b),
        ("matmul_tiled 512^3", tut.matmul_tiled, (r(512, 512), r(512, 512)), np_matmul_tiled),
        ("transpose 128x128", tut.transpose_kernel, (r(128, 128),), lambda x: np.ascontiguousarray(x.T)),
        ("softmax 1024x1024", tut.softmax_kernel, (r(1024, 1024),), np_softmax),
        ("rmsnorm 1024x1024", tut.rmsnorm_kernel, (r(1024, 1024), r(1024)), np_rmsnorm),
        ("layernorm 1024x1024", tut.layernorm_kernel, (r(1024, 1024), r(1024), r(1024)), np_layernorm),
        ("avgpool 128x64x64/2", tut.avgpool_kernel, (r(128, 64, 64), 2),
         lambda x, p: x.reshape(128, 32, 2, 32, 2).mean(axis=(2, 4))),
    ]
    print("%-22s %8s %8s %8s %10s %10s %10s %8s %8s %8s" % (
        "kernel", "trace", "asm", "load", "execute", "cached", "numpy", "np/exec", "call/exec",
        "(cpu)"))
    print("%-22s %8s %8s %8s %10s %10s %10s %8s %8s %8s" % ("", "ms", "ms", "ms", "us", "us", "us",
                                                             "", "", ""))
    for name, kern, args, ref in cases:
        t0 = time.perf_counter()
        out = kern(*args)
        first = time.perf_counter() - t0
        comp = kern.last
        got_ref = ref(*args)
        ok = np.allclose(out, got_ref, rtol=1e-3, atol=1e-3)
        quick = median_time(lambda: comp.model.execute(quiet=True), 5) < 1e-3
        reps = 600 if quick else 20    # more samples where one is short (and noisier)
        last = [out]                   # the raw execution writes the last call's result
        (raw, raw_cpu), (cached, cached_cpu) = paired_medians(
            lambda: comp.model.execute(quiet=True), lambda: last.__setitem__(0, kern(*args)), reps)
        npt = median_time(lambda: ref(*args), reps)
        print("%-22s %8.2f %8.2f %8.2f %10.1f %10.1f %10.1f %8.2f %8.2f %8.2f%s" % (
            name, comp.trace_s * 1e3, comp.build_s * 1e3, comp.load_s * 1e3, raw * 1e6,
            cached * 1e6, npt * 1e6, npt / raw, cached / raw, cached_cpu / raw_cpu,
            "" if ok else "  (MISMATCH)"))
        del first
    print("np/exec: NumPy op by op / raw nrt_execute (target >= 5); "
          "call/exec: cached kernel call / raw nrt_execute (target <= 1.2), wall and CPU "
          "time (medians, the two run in turns)\n")
    cold_process()


if __name__ == "__main__":
    main()
