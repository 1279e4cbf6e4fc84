"""cost_matmul_kernels.py: four matrix multiplications C = A^T B (A^T given
as lhsT [K, M], B as rhs [K, N], bf16) written for trnemu's tests in the
documented NKI API, one per optimisation step of the vendor's matrix
multiplication tutorial: tiles loaded for every product (`tiled`), the
lhsT column loaded once per row block (`hoisted`), both free dimensions
blocked (`blocked`), all three dimensions blocked with wide loads and the
result kept in SBUF (`optimized`).

Run as a script it times them with nki.benchmark (trnemu's estimated device
latency) and prints one JSON object {kernel: microseconds}:

    python3 cost_matmul_kernels.py K M N
"""
import json
import sys

import os

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

PM, PK, PN = 128, 128, 512   # stationary free size, partitions, moving free size


def tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // PM):
        for ni in nl.affine_range(N // PN):
            acc = nl.zeros((PM, PN), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(K // PK):
                a = nl.load(lhsT[ki * PK:(ki + 1) * PK, mi * PM:(mi + 1) * PM])
                b = nl.load(rhs[ki * PK:(ki + 1) * PK, ni * PN:(ni + 1) * PN])
                acc += nl.matmul(a, b, transpose_x=True)
            nl.store(out[mi * PM:(mi + 1) * PM, ni * PN:(ni + 1) * PN],
                     value=nl.copy(acc, dtype=out.dtype))
    return out


def hoisted(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    KT = K // PK
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mi in nl.affine_range(M // PM):
        a = nl.ndarray((KT, nl.par_dim(PK), PM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for ki in nl.affine_range(KT):
            a[ki] = nl.load(lhsT[ki * PK:(ki + 1) * PK, mi * PM:(mi + 1) * PM])
        for ni in nl.affine_range(N // PN):
            b = nl.ndarray((KT, nl.par_dim(PK), PN), dtype=rhs.dtype, buffer=nl.sbuf)
            for ki in nl.affine_range(KT):
                b[ki] = nl.load(rhs[ki * PK:(ki + 1) * PK, ni * PN:(ni + 1) * PN])
            acc = nl.zeros((PM, PN), nl.float32, buffer=nl.psum)
            for ki in nl.affine_range(KT):
                acc += nl.matmul(a[ki], b[ki], transpose_x=True)
            nl.store(out[mi * PM:(mi + 1) * PM, ni * PN:(ni + 1) * PN],
                     value=nl.copy(acc, dtype=out.dtype))
    return out


def blocked(lhsT, rhs, BM=2, BN=2):
    K, M = lhsT.shape
    N = rhs.shape[1]
    KT = K // PK
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for mb in nl.affine_range(M // (PM * BM)):
        a = nl.ndarray((BM, KT, nl.par_dim(PK), PM), dtype=lhsT.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(BM):
            m0 = (mb * BM + i) * PM
            for ki in nl.affine_range(KT):
                a[i, ki] = nl.load(lhsT[ki * PK:(ki + 1) * PK, m0:m0 + PM])
        for nb in nl.affine_range(N // (PN * BN)):
            b = nl.ndarray((BN, KT, nl.par_dim(PK), PN), dtype=rhs.dtype, buffer=nl.sbuf)
            for j in nl.affine_range(BN):
                n0 = (nb * BN + j) * PN
                for ki in nl.affine_range(KT):
                    b[j, ki] = nl.load(rhs[ki * PK:(ki + 1) * PK, n0:n0 + PN])
            for i in nl.affine_range(BM):
                for j in nl.affine_range(BN):
                    acc = nl.zeros((PM, PN), nl.float32, buffer=nl.psum)
                    for ki in nl.affine_range(KT):
                        acc += nl.matmul(a[i, ki], b[j, ki], transpose_x=True)
                    m0, n0 = (mb * BM + i) * PM, (nb * BN + j) * PN
                    nl.store(out[m0:m0 + PM, n0:n0 + PN], value=nl.copy(acc, dtype=out.dtype))
    return out


def optimized(lhsT, rhs, TM=16, TN=2, TK=8):
    K, M = lhsT.shape
    N = rhs.shape[1]
    WM, WN, WK = PM * TM, PN * TN, PK * TK          # block widths
    out = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for nb in nl.affine_range(N // WN):
        res = nl.zeros((M // WM, TM, TN, nl.par_dim(PM), PN), dtype=lhsT.dtype, buffer=nl.sbuf)
        for kb in nl.sequential_range(K // WK):
            b = nl.ndarray((TK, nl.par_dim(PK), WN), dtype=rhs.dtype, buffer=nl.sbuf)
            for t in nl.affine_range(TK):
                k0 = (kb * TK + t) * PK
                b[t] = nl.load(rhs[k0:k0 + PK, nb * WN:(nb + 1) * WN])
            for mb in nl.affine_range(M // WM):
                a = nl.ndarray((TK, nl.par_dim(PK), WM), dtype=lhsT.dtype, buffer=nl.sbuf)
                for t in nl.affine_range(TK):
                    k0 = (kb * TK + t) * PK
                    a[t] = nl.load(lhsT[k0:k0 + PK, mb * WM:(mb + 1) * WM])
                for j in nl.affine_range(TN):
                    for i in nl.affine_range(TM):
                        acc = nl.zeros((PM, PN), dtype=nl.float32, buffer=nl.psum)
                        for t in nl.affine_range(TK):
                            acc[...] += nisa.nc_matmul(a[t, :, i * PM:(i + 1) * PM],
                                                       b[t, :, j * PN:(j + 1) * PN])
                        res[mb, i, j] += acc
        for mb in nl.affine_range(M // WM):
            for i in nl.affine_range(TM):
                row = nl.ndarray((nl.par_dim(PM), WN), dtype=res.dtype, buffer=nl.sbuf)
                for j in nl.affine_range(TN):
                    row[:, j * PN:(j + 1) * PN] = nl.copy(res[mb, i, j])
                m0 = (mb * TM + i) * PM
                nl.store(out[m0:m0 + PM, nb * WN:(nb + 1) * WN], value=row)
    return out


KERNELS = [("tiled", tiled), ("hoisted", hoisted), ("blocked", blocked), ("optimized", optimized)]


def main(K, M, N):
    rng = np.random.default_rng(7)
    lhsT = nki._kernel.bf16(rng.standard_normal((K, M)).astype(np.float32))
    rhs = nki._kernel.bf16(rng.standard_normal((K, N)).astype(np.float32))
    ref = np.asarray(lhsT, dtype=np.float32).T @ np.asarray(rhs, dtype=np.float32)
    times = {}
    for name, fn in KERNELS:
        bench = nki.benchmark(warmup=1, iters=2)(fn)
        got = np.asarray(bench(lhsT, rhs), dtype=np.float32)
        np.testing.assert_allclose(got, ref, rtol=0.02, atol=0.02 * K ** 0.5, err_msg=name)
        times[name] = bench.benchmark_result.nc_latency.get_latency_percentile(99)
    print(json.dumps(times))


if __name__ == "__main__":
    main(*[int(x) for x in sys.argv[1:4]])
