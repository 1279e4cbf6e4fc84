"""test_nki_tutorials.py: the NKI tutorial kernels (tensor add, tiled
matmul, transpose, softmax, rmsnorm, layernorm, average pool), written
for these tests in the documented NKI API, against NumPy references."""
import numpy as np
import pytest

import nki
import nki.language as nl
import nki.isa as nisa

rng = np.random.default_rng(1234)


def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)


@nki.jit
def tensor_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    at = nl.load(a)
    bt = nl.load(b)
    nl.store(out, value=nl.add(at, bt))
    return out


def test_tensor_add():
    a, b = rand(128, 512), rand(128, 512)
    assert np.array_equal(tensor_add(a, b), a + b)


@nki.jit
def tensor_add_spmd(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0) * 128
    j = nl.program_id(1) * 256
    ix = i + nl.arange(128)[:, None]
    iy = j + nl.arange(256)[None, :]
    at = nl.load(a[ix, iy])
    bt = nl.load(b[ix, iy])
    nl.store(out[ix, iy], value=at + bt)
    return out


def test_tensor_add_spmd_grid():
    a, b = rand(256, 512), rand(256, 512)
    c = tensor_add_spmd[2, 2](a, b)
    assert np.array_equal(c, a + b)


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    TM, TK, TN = nl.tile_size.gemm_stationary_fmax, nl.tile_size.pmax, nl.tile_size.gemm_moving_fmax
    for m in nl.affine_range(M // TM):
        for n in nl.affine_range(N // TN):
            acc = nl.zeros((TM, TN), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TK):
                lt = nl.ndarray((TK, TM), dtype=lhsT.dtype, buffer=nl.sbuf)
                rt = nl.ndarray((TK, TN), dtype=rhs.dtype, buffer=nl.sbuf)
                lt[...] = nl.load(lhsT[k * TK:(k + 1) * TK, m * TM:(m + 1) * TM])
                rt[...] = nl.load(rhs[k * TK:(k + 1) * TK, n * TN:(n + 1) * TN])
                acc += nl.matmul(lt, rt, transpose_x=True)
            sb = nl.copy(acc, dtype=res.dtype)
            nl.store(res[m * TM:(m + 1) * TM, n * TN:(n + 1) * TN], value=sb)
    return res


def test_matmul_tiled():
    lhsT, rhs = rand(256, 256), rand(256, 1024)
    got = matmul_tiled(lhsT, rhs)
    np.testing.assert_allclose(got, lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


def test_matmul_bits_repeat():
    lhsT, rhs = rand(256, 128), rand(256, 512)
    a = matmul_tiled(lhsT, rhs)
    b = matmul_tiled(lhsT, rhs)
    assert a.tobytes() == b.tobytes()


@nki.jit
def matmul_isa(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.sequential_range(K // 128):
        lt = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        rt = nl.ndarray((128, N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=lt, src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=rt, src=rhs[k * 128:(k + 1) * 128, :])
        nisa.nc_matmul(dst=ps, stationary=lt, moving=rt)
    sb = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sb, src=ps)
    nisa.dma_copy(dst=res, src=sb)
    return res


def test_matmul_isa_accumulates():
    lhsT, rhs = rand(384, 64), rand(384, 200)
    np.testing.assert_allclose(matmul_isa(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


@nki.jit
def matmul_plain(x, y):
    res = nl.ndarray((x.shape[0], y.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.load(x)
    yt = nl.load(y)
    nl.store(res, nl.matmul(xt, yt))
    return res


def test_matmul_without_transpose_x():
    x, y = rand(64, 96), rand(96, 130)
    np.testing.assert_allclose(matmul_plain(x, y), x @ y, rtol=1e-4, atol=1e-4)


@nki.jit
def transpose_kernel(x):
    out = nl.ndarray((x.shape[1], x.shape[0]), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, nl.transpose(t))
    return out


@pytest.mark.parametrize("shape", [(128, 128), (32, 7), (1, 128), (128, 1)])
def test_transpose(shape):
    x = rand(*shape)
    assert np.array_equal(transpose_kernel(x), x.T)


@nki.jit
def softmax_kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        m = nl.max(t, axis=1, keepdims=True)
        e = nl.exp(t - m)
        s = nl.sum(e, axis=1, keepdims=True)
        nl.store(out[i * 128:(i + 1) * 128, :], value=e / s)
    return out


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax():
    x = rand(256, 1000)
    np.testing.assert_allclose(softmax_kernel(x), softmax_ref(x), rtol=1e-5, atol=1e-7)


@nki.jit
def softmax_builtin(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.softmax(nl.load(x), axis=1))
    return out


def test_softmax_builtin():
    x = rand(100, 333)
    np.testing.assert_allclose(softmax_builtin(x), softmax_ref(x), rtol=1e-5, atol=1e-7)


@nki.jit
def rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n, d = a.shape
    gt = nl.load(g.reshape((1, d)))
    gb = gt.broadcast_to((128, d))
    for i in nl.affine_range((n + 127) // 128):
        rows = min(128, n - i * 128)
        t = nl.load(a[i * 128:i * 128 + rows, :])
        ms = nl.mean(nl.square(t), axis=1, keepdims=True)
        r = nl.rsqrt(ms + 1e-6)
        y = nl.multiply(t * r, gb[0:rows, :])
        nl.store(out[i * 128:i * 128 + rows, :], value=y)
    return out


def test_rmsnorm_partial_tile():
    a, g = rand(200, 384), rand(384)
    ref = a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-6) * g
    np.testing.assert_allclose(rmsnorm_kernel(a, g), ref, rtol=2e-5, atol=2e-5)


@nki.jit
def layernorm_kernel(x, gamma, beta):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    n, d = x.shape
    gb = nl.load(gamma.reshape((1, d))).broadcast_to((128, d))
    bb = nl.load(beta.reshape((1, d))).broadcast_to((128, d))
    for i in nl.affine_range(n // 128):
        t = nl.load(x[i * 128:(i + 1) * 128, :])
        mu = nl.mean(t, axis=1, keepdims=True)
        c = t - mu
        var = nl.mean(c * c, axis=1, keepdims=True)
        y = c * nl.rsqrt(var + 1e-5)
        nl.store(out[i * 128:(i + 1) * 128, :], value=y * gb + bb)
    return out


def test_layernorm():
    x, gm, bt = rand(256, 512), rand(512), rand(512)
    mu = x.mean(axis=1, keepdims=True)
    ref = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5) * gm + bt
    np.testing.assert_allclose(layernorm_kernel(x, gm, bt), ref, rtol=1e-4, atol=1e-4)


@nki.jit
def avgpool_kernel(x, pool):
    c, h, w = x.shape
    out = nl.ndarray((c, h // pool, w // pool), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    i0, i1, i2, i3, i4 = nl.mgrid[0:c, 0:h // pool, 0:pool, 0:w // pool, 0:pool]
    s = nl.sum(t[i0, pool * i1 + i2, pool * i3 + i4], axis=[2, 4])
    nl.store(out, value=s * (1.0 / (pool * pool)))
    return out


def test_avgpool():
    x = rand(64, 16, 24)
    ref = x.reshape(64, 8, 2, 12, 2).mean(axis=(2, 4))
    np.testing.assert_allclose(avgpool_kernel(x, 2), ref, rtol=1e-5, atol=1e-6)
