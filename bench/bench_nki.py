"""bench_nki.py: the NKI tutorial kernels on trnemu against the same kernels
computed op by op in NumPy, in the same run.

Per kernel: the first call split into trace, assemble and nrt_load; the
raw nrt_execute time of the loaded model; a cached call of the kernel
(inputs written, execute, outputs read); and NumPy running the kernel's
ops tile by tile. Ratios: NumPy / nrt_execute (target >= 5) and cached
call / nrt_execute (target <= 2). Figures only; nothing is asserted.
"""
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import test_nki_tutorials as tut  # noqa: E402  (the tutorial kernels)


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


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


def main():
    rng = np.random.default_rng(0)

    def r(*s):
        return rng.standard_normal(s).astype(np.float32)

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
    print("%-22s %8s %8s %8s %10s %10s %10s %8s %8s" % (
        "kernel", "trace", "asm", "load", "execute", "cached", "numpy", "np/exec", "call/exec"))
    print("%-22s %8s %8s %8s %10s %10s %10s %8s %8s" % ("", "ms", "ms", "ms", "us", "us", "us", "", ""))
    for name, kern, args, ref in cases:
        t0 = time.perf_counter()
        out = kern(*args)
        first = time.perf_counter() - t0
        comp = kern.last
        got_ref = ref(*args)
        ok = np.allclose(out, got_ref, rtol=1e-3, atol=1e-3)
        reps = 20
        raw = median_time(lambda: comp.model.execute(quiet=True), reps)
        cached = median_time(lambda: kern(*args), reps)
        npt = median_time(lambda: ref(*args), reps)
        print("%-22s %8.2f %8.2f %8.2f %10.1f %10.1f %10.1f %8.2f %8.2f%s" % (
            name, comp.trace_s * 1e3, comp.build_s * 1e3, comp.load_s * 1e3, raw * 1e6,
            cached * 1e6, npt * 1e6, npt / raw, cached / raw, "" if ok else "  (MISMATCH)"))
        del first
    print("np/exec: NumPy op by op / raw nrt_execute (target >= 5); "
          "call/exec: cached kernel call / raw nrt_execute (target <= 2)")


if __name__ == "__main__":
    main()
