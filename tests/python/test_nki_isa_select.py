"""test_nki_isa_select.py: nisa.nonzero_with_count, nc_n_gather, topk,
range_select, rng, rand_get_state/rand_set_state, iota's pattern form and
nl.fp32.min as a fill value, against NumPy."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import _runtime

# ops (and 32-row matmul tiles) that NeuronCore-v2 does not have
needs_v3 = pytest.mark.skipif(_runtime.machine_generation() < 3, reason="needs NeuronCore-v3")

rng = np.random.default_rng(5)


def _store(t):
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@needs_v3
def test_nonzero_with_count():
    @nki.jit
    def k(a):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        o = nl.ndarray((a.shape[0], a.shape[1] + 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=o, value=0)
        nisa.nonzero_with_count(dst=o, src=t, index_offset=16, padding_val=-1)
        return _store(o)
    a = (rng.uniform(0, 1, (32, 8)) > 0.6).astype(np.float32)
    r = k(a)
    for p in (0, 16):
        nz = np.nonzero(a[p])[0] + 16
        want = np.concatenate([nz, -np.ones(8 - len(nz)), [len(nz)]])
        np.testing.assert_array_equal(r[p], want)
    assert not r[1].any()


def test_nc_n_gather():
    @nki.jit
    def k(a, ix):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        i = nl.ndarray(ix.shape, dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=i, src=ix)
        o = nl.ndarray(ix.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.nc_n_gather(dst=o, data=t, indices=i)
        return _store(o)
    a = rng.uniform(-1, 1, (16, 4, 8)).astype(np.float32)
    ix = rng.integers(0, 32, (16, 10)).astype(np.uint32)
    r = k(a, ix)
    np.testing.assert_array_equal(r, np.take_along_axis(a.reshape(16, 32), ix.astype(np.int64), 1))


@needs_v3
def test_range_select_fp32_min():
    @nki.jit
    def k(a, lo, hi):
        t, b0, b1 = (nl.load(x) for x in (a, lo, hi))
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        m = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=o, on_true_tile=t, comp_op0=nl.greater_equal, comp_op1=nl.less,
                          bound0=b0, bound1=b1, reduce_res=m, reduce_op=nl.maximum,
                          range_start=2, on_false_value=nl.fp32.min)
        return _store(o), _store(m)
    a = rng.uniform(-1, 1, (8, 12)).astype(np.float32)
    lo = rng.integers(2, 8, (8, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 6, (8, 1)).astype(np.float32)
    o, m = k(a, lo, hi)
    j = np.arange(12)[None, :] + 2
    want = np.where((j >= lo) & (j < hi), a, nl.fp32.min)
    np.testing.assert_array_equal(o, want)
    np.testing.assert_array_equal(m[:, 0], want.max(axis=1))


def test_rng_and_state_round_trip():
    @nki.jit
    def k(seeds):
        s = nl.ndarray(seeds.shape, dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=seeds)
        nisa.rand_set_state(src_seeds=s, engine=nisa.gpsimd_engine)
        a = nl.ndarray((4, 16), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rng(dst=a, engine=nisa.gpsimd_engine)
        nisa.rand_set_state(src_seeds=s, engine=nisa.gpsimd_engine)
        b = nl.ndarray((4, 16), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.rng(dst=b, engine=nisa.gpsimd_engine)
        return _store(a), _store(b)
    seeds = rng.integers(1, 2 ** 31, (4, 6)).astype(np.uint32)
    a, b = k(seeds)
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a)) > 60


def test_iota_pattern_form_positional():
    @nki.jit
    def k(a):
        t = nl.ndarray((4, 6), dtype=nl.int32, buffer=nl.sbuf)
        nisa.iota(t, [[2, 6]], 5, 100)
        return _store(t)
    r = k(np.zeros(1, np.float32))
    np.testing.assert_array_equal(r, 5 + 2 * np.arange(6)[None, :] + 100 * np.arange(4)[:, None])


def test_affine_select_pattern_form_causal_mask():
    @nki.jit
    def k(a):
        t = nl.load(a)
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        # keep element (p, j) where p - j >= 0 (lower triangle), else fp32 min
        nisa.affine_select(o, pattern=[[-1, a.shape[1]]], channel_multiplier=1, on_true_tile=t,
                           on_false_value=nl.fp32.min, cmp_op=nl.greater_equal, offset=0)
        return _store(o)
    a = rng.uniform(-1, 1, (16, 16)).astype(np.float32)
    want = np.where(np.tril(np.ones((16, 16), bool)), a, nl.fp32.min)
    np.testing.assert_array_equal(k(a), want)


def test_topk_snake_layout():
    @nki.jit
    def k(a):
        src = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        v = nl.ndarray((16, 8), dtype=nl.bfloat16, buffer=nl.sbuf)
        i = nl.ndarray((16, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.memset(dst=v, value=0.0)
        nisa.memset(dst=i, value=0)
        nisa.topk(val_dst=v, idx_dst=i, src=src, n=42)
        ov = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=ov, src=v)
        return ov, _store(i)
    vals = rng.permutation(48).astype(np.float32)
    v, i = k(nki.bf16(vals.reshape(3, 16).T.copy()))     # element j at [j % 16, j // 16]
    order = np.argsort(vals[:42])[-8:]                  # the 8 largest of the first 42, ascending
    np.testing.assert_array_equal(v[:8, 0], vals[order])
    np.testing.assert_array_equal(i[:8, 0], order)


def test_masked_match_replace8():
    @nki.jit
    def k(a):
        ix, iy = nl.mgrid[0:8, 0:32]
        t = nl.load(a)
        top = nisa.max8(src=t[ix, iy], mask=(iy < 16))
        out = nisa.nc_match_replace8(data=t[ix, iy], vals=top, imm=-1.0, mask=(iy < 16))
        o = nl.ndarray((8, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o, out)
        return o
    a = np.stack([rng.permutation(32) for _ in range(8)]).astype(np.float32)
    r = k(a)
    want = a[:, :16].copy()
    for p in range(8):
        want[p, np.argsort(-want[p])[:8]] = -1.0
    np.testing.assert_array_equal(r[:, :16], want)


def test_local_gather_per_16_partition_group():
    src = rng.uniform(-1, 1, (32, 8, 2)).astype(np.float32)
    per_group = rng.integers(0, 8, (16, 2)).astype(np.uint16)
    index = np.tile(per_group, (2, 1))

    @nki.jit
    def k(s, ix):
        t = nl.load(s)
        i = nl.load(ix)
        o = nisa.local_gather(t, i, num_elem_per_idx=2, num_valid_indices=20)
        out = nl.ndarray((32, 40), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, o)
        return out
    r = k(src, index * 2)
    want = np.empty((32, 20, 2), np.float32)
    for g in range(2):
        rows = slice(16 * g, 16 * g + 16)
        idx = index[rows].flatten(order="F")[:20]
        want[rows] = np.take(src[rows], idx.astype(int), axis=1)
    np.testing.assert_array_equal(r, want.reshape(32, 40))
