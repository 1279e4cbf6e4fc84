"""test_nki_masks.py: mask= on reductions (nl.sum/max/..., nisa.tensor_reduce),
nisa.max8 and nisa.nc_matmul: the masked rows and columns are computed
from the unmasked elements only and the rest of the output is untouched."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import _runtime

# ops (and 32-row matmul tiles) that NeuronCore-v2 does not have
needs_v3 = pytest.mark.skipif(_runtime.machine_generation() < 3, reason="needs NeuronCore-v3")

rng = np.random.default_rng(11)


def test_masked_reductions():
    @nki.jit
    def k(a):
        i_p, i_f = nl.mgrid[0:128, 0:64]
        t = nl.load(a)
        s = nl.sum(t[i_p, i_f], axis=1, keepdims=True, mask=(i_p < 48) & (i_f < 40))
        m = nisa.tensor_reduce(nl.maximum, t[i_p, i_f], axis=1, keepdims=True, mask=(i_f < 10))
        out = nl.ndarray((128, 2), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[:, 0:1], s)
        nl.store(out[:, 1:2], m)
        return out
    a = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
    r = k(a)
    np.testing.assert_allclose(r[:48, 0], a[:48, :40].sum(axis=1), rtol=1e-5)
    np.testing.assert_array_equal(r[:, 1], a[:, :10].max(axis=1))


def test_masked_max8():
    @nki.jit
    def k(a):
        i_p, i_f = nl.mgrid[0:16, 0:32]
        t = nl.load(a)
        top = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=top, value=-1.0)
        nisa.max8(dst=top, src=t[i_p, i_f], mask=(i_p < 8) & (i_f < 12))
        out = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, top)
        return out
    a = rng.permutation(16 * 32).astype(np.float32).reshape(16, 32)
    r = k(a)
    np.testing.assert_array_equal(r[:8], -np.sort(-a[:8, :12], axis=1)[:, :8])
    np.testing.assert_array_equal(r[8:], -1.0)


def test_masked_matmul():
    @nki.jit
    def k(x, y):
        i_m, i_n = nl.mgrid[0:32, 0:48]
        xs, ys = nl.load(x), nl.load(y)
        acc = nl.zeros((32, 48), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=xs, moving=ys, accumulate=True,
                       mask=(i_m < 20) & (i_n < 30))
        out = nl.ndarray((32, 48), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(acc))
        return out
    x = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    y = rng.uniform(-1, 1, (64, 48)).astype(np.float32)
    r = k(x, y)
    want = np.zeros((32, 48), np.float32)
    want[:20, :30] = x.T[:20] @ y[:, :30]
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)


@needs_v3
def test_matmul_tile_position():
    @nki.jit
    def k(x, y):
        xs, ys = nl.load(x), nl.load(y)
        acc = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=acc, stationary=xs, moving=ys, tile_position=(0, 32), tile_size=(32, 32))
        out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(acc))
        return out
    x = rng.uniform(-1, 1, (32, 32)).astype(np.float32)
    y = rng.uniform(-1, 1, (32, 16)).astype(np.float32)
    np.testing.assert_allclose(k(x, y), x.T @ y, rtol=1e-5, atol=1e-5)


@needs_v3
def test_first_matmul_into_each_psum_region_overwrites():
    """accumulate=None is decided per PSUM location: matmuls into two row
    ranges of one PSUM tile each start their own group, so a second run
    (PSUM still holding the first run's sums) gives the same result."""
    @nki.jit
    def k(x, y):
        xs, ys = nl.load(x), nl.load(y)
        acc = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.psum)
        for half in range(2):
            for rep in range(2):                  # the second matmul of a region accumulates
                nisa.nc_matmul(acc[32 * half:32 * half + 32], xs, ys, tile_position=(0, 32 * half),
                               tile_size=(32, 32))
        out = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(acc))
        return out
    x = rng.uniform(-1, 1, (32, 32)).astype(np.float32)
    y = rng.uniform(-1, 1, (32, 16)).astype(np.float32)
    want = np.concatenate([2 * (x.T @ y)] * 2)
    first = k(x, y)
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(k(x, y), first)
