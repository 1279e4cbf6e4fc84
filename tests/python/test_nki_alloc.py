"""test_nki_alloc.py: tiles placed by hand with nl.ndarray(address=...):
partition offsets, tiles that reuse the same bytes one after another (the
race checker is on), the overlap and range errors, and
nki.compiler.force_auto_alloc."""
import numpy as np
import pytest

import nki
import nki.compiler as ncc
import nki.isa as nisa
import nki.language as nl


def _staged_sum(a, b):
    """out = (a + 1) + (b * 2), every tile at a fixed address; the tiles of
    the two stages share bytes, so the second stage must wait for the first."""
    P, F = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(64, 0))
    nisa.dma_copy(dst=x, src=a)
    y = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(0, 4 * F))
    nisa.tensor_scalar(dst=y, data=x, op0=nl.add, operand0=1.0)
    x2 = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(64, 0))   # x's bytes again
    nisa.dma_copy(dst=x2, src=b)
    nisa.tensor_scalar(dst=x2, data=x2, op0=nl.multiply, operand0=2.0)
    nisa.tensor_tensor(dst=y, data1=y, data2=x2, op=nl.add)
    nisa.dma_copy(dst=out, src=y)
    return out


def test_fixed_addresses_reused_in_order():
    a = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    b = np.full((64, 16), 3.0, np.float32)
    np.testing.assert_array_equal(nki.jit(_staged_sum)(a, b), (a + 1) + b * 2)


def test_force_auto_alloc_ignores_addresses():
    k = nki.jit(ncc.force_auto_alloc(_staged_sum))
    a = np.ones((64, 16), np.float32)
    np.testing.assert_array_equal(k(a, a), a + 1 + 2 * a)


def test_address_errors():
    @nki.jit
    def past_partitions(a):
        t = nl.ndarray((64, 4), dtype=nl.float32, buffer=nl.sbuf, address=(100, 0))
        nisa.dma_copy(dst=t, src=a)
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_alloc.py:\d+: address=\(100, 0\) puts 64"):
        past_partitions(np.zeros((64, 4), np.float32))

    @nki.jit
    def past_bytes(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.psum, address=(0, 16 * 1024 - 16))
        nisa.memset(dst=t, value=0.0)
        return a
    with pytest.raises(nki.NKIError, match="outside the 16384 bytes of a PSUM partition"):
        past_bytes(np.zeros((4, 8), np.float32))

    @nki.jit
    def over_auto(a):
        auto = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=auto, value=1.0)
        # the front end places its tiles from the top of SBUF down
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf,
                       address=(0, nl.tile_size.total_available_sbuf_size - 32))
        nisa.tensor_copy(dst=t, src=auto)
        return a
    with pytest.raises(nki.NKIError, match="hold a tile the front end placed"):
        over_auto(np.zeros((4, 8), np.float32))


def test_legacy_block_allocators():
    @nki.jit
    def k(a):
        # 4 logical blocks on 2 physical byte tiles (modulo 2): blocks 0 and 2 share bytes
        t = nl.ndarray((4, nl.par_dim(8), 16), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=512, num_free_tiles=(2,)))
        out = nl.ndarray((4, 8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for b in range(4):
            nisa.dma_copy(dst=t[b], src=a[b])
            nisa.tensor_scalar(dst=t[b], data=t[b], op0=nl.multiply, operand0=float(b + 1))
            nisa.dma_copy(dst=out[b], src=t[b])
        ps = nl.ndarray((nl.par_dim(8), 16), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=2))
        nisa.memset(dst=ps, value=3.0)
        o2 = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.tensor_copy(dst=t[0], src=ps)
        nisa.dma_copy(dst=o2, src=t[0])
        return out, o2
    a = np.arange(4 * 8 * 16, dtype=np.float32).reshape(4, 8, 16)
    out, o2 = k(a)
    np.testing.assert_array_equal(out, a * np.arange(1, 5, dtype=np.float32)[:, None, None])
    np.testing.assert_array_equal(o2, 3.0)
    assert ncc.sbuf == "sbuf" and ncc.psum.auto_alloc() == "psum"

    @nki.jit
    def scattered(a):
        t = nl.ndarray((3, nl.par_dim(8), 16), dtype=nl.float32,
                       buffer=ncc.sbuf.alloc(lambda idx, p, f: (0, [0, 4096, 512][idx[0]])))
        out = nl.ndarray((3, 8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for b in range(3):
            nisa.dma_copy(dst=t[b], src=a[b])
            nisa.dma_copy(dst=out[b], src=t[b])
        return out
    np.testing.assert_array_equal(scattered(a[:3]), a[:3])

    @nki.jit
    def sliced(a):
        t = nl.ndarray((4, nl.par_dim(8), 16), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        nisa.dma_copy(dst=t[0:2], src=a[0:2])
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_alloc.py:\d+: .*indexed block by block"):
        sliced(a)
