"""test_nki_spill.py: tiles the front end moves to HBM and back: PSUM
tiles that exceed the 16 KiB of a partition only because dead ones are
still referenced, a PSUM accumulation group interrupted by a spill (its
result bit-identical to the same kernel without one), and kernels that
mix tiles placed by address= with tiles the front end placed, in PSUM and
SBUF (the front end's tile leaves the bytes address= names)."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl


def _rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _nine_operands(a, b):
    """(M, N, the [M, 9N] HBM result, a and b loaded into SBUF) for the
    kernels of nine products a.T @ b[:, iN:(i+1)N]."""
    K, M = a.shape
    N = b.shape[1] // 9
    out = nl.ndarray((M, 9 * N), dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.ndarray((K, M), dtype=nl.float32, buffer=nl.sbuf)
    tb = nl.ndarray((K, 9 * N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    return M, N, out, ta, tb


def _kept_psum(a, b):
    """Nine products of one bank each (2 KiB per partition) into PSUM
    tiles that all stay referenced (a list): only eight banks exist, so
    the ninth fits only if a dead one leaves."""
    M, N, out, ta, tb = _nine_operands(a, b)
    res = nl.ndarray((M, 9 * N), dtype=nl.float32, buffer=nl.sbuf)
    kept = []
    for i in range(9):
        ps = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(dst=ps, stationary=ta, moving=tb[:, i * N:(i + 1) * N])
        nisa.tensor_copy(dst=res[:, i * N:(i + 1) * N], src=ps)
        kept.append(ps)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_dead_psum_tiles_spill_instead_of_overflow():
    a, b = _rand((64, 32), 1), _rand((64, 9 * 512), 2)
    k = nki.jit(_kept_psum)
    got = k(a, b)
    np.testing.assert_allclose(got, a.T @ b, rtol=1e-4, atol=1e-4)
    assert k.last.tracer.spills >= 1


def _round_robin(a, b, rounds):
    """Nine PSUM tiles (one bank each) accumulated in turn, rounds times:
    one of them is always in HBM, each comes back for its next matmul."""
    M, N, out, ta, tb = _nine_operands(a, b)
    tiles = [nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum) for _ in range(9)]
    for _ in range(rounds):
        for i in range(9):
            nisa.nc_matmul(dst=tiles[i][:, 0:N], stationary=ta, moving=tb[:, i * N:(i + 1) * N])
    res = nl.ndarray((M, 9 * N), dtype=nl.float32, buffer=nl.sbuf)
    for i in range(9):
        nisa.tensor_copy(dst=res[:, i * N:(i + 1) * N], src=tiles[i][:, 0:N])
    nisa.dma_copy(dst=out, src=res)
    return out


def test_round_robin_psum_reuses_its_hbm_scratch():
    a, b = _rand((32, 8), 9), _rand((32, 9 * 16), 10)
    k = nki.jit(_round_robin)
    got = k(a, b, 3)
    ab = a.T @ b
    np.testing.assert_allclose(got, ab + ab + ab, rtol=1e-4, atol=1e-4)
    tr = k.last.tracer
    assert tr.spills >= 27
    # a reloaded tile's scratch serves the next spill: one variable, not one per spill
    assert len([n for n in tr.hbm if "spill" in n]) <= 2


def _interrupted(a, b, crowd):
    """acc = a[0].T @ b[0] + a[1].T @ b[1], accumulated in one PSUM tile
    (accumulate=None: the first matmul overwrites, the second adds); with
    crowd, eight other PSUM banks are filled in between, so the
    accumulating tile goes to HBM and comes back for the second matmul."""
    K, M = a.shape[1], a.shape[2]
    N = b.shape[2]
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.ndarray((K, 2 * M), dtype=nl.float32, buffer=nl.sbuf)
    tb = nl.ndarray((K, 2 * N), dtype=nl.float32, buffer=nl.sbuf)
    for i in range(2):
        nisa.dma_copy(dst=ta[:, i * M:(i + 1) * M], src=a[i])
        nisa.dma_copy(dst=tb[:, i * N:(i + 1) * N], src=b[i])
    acc = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=acc, stationary=ta[:, 0:M], moving=tb[:, 0:N])
    junk = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    others = []
    for _ in range(8 if crowd else 0):
        ps = nl.ndarray((M, 512), dtype=nl.float32, buffer=nl.psum)
        nisa.memset(dst=ps, value=7.0)
        nisa.tensor_copy(dst=junk, src=ps[:, 0:N])
        others.append(ps)
    nisa.nc_matmul(dst=acc, stationary=ta[:, M:2 * M], moving=tb[:, N:2 * N])
    res = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=res, src=acc)
    nisa.dma_copy(dst=out, src=res)
    return out


def test_spilled_accumulation_is_bit_identical():
    a, b = _rand((2, 96, 48), 3), _rand((2, 96, 40), 4)
    plain = nki.jit(_interrupted)
    want = plain(a, b, False)
    assert plain.last.tracer.spills == 0
    crowded = nki.jit(_interrupted)
    got = crowded(a, b, True)
    assert crowded.last.tracer.spills >= 1
    assert got.tobytes() == want.tobytes()
    np.testing.assert_allclose(got, a[0].T @ b[0] + a[1].T @ b[1], rtol=1e-4, atol=1e-4)


def _mixed_psum(a, b, reuse):
    """A PSUM tile the front end places (bank 0, still referenced), then a
    tile whose address= names bank 0: the front end's tile moves out. With
    reuse, it is read again afterwards and comes back from HBM."""
    K, M = a.shape
    N = b.shape[1]
    out = nl.ndarray((M, 2 * N), dtype=nl.float32, buffer=nl.shared_hbm)
    ta = nl.ndarray((K, M), dtype=nl.float32, buffer=nl.sbuf)
    tb = nl.ndarray((K, N), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    nisa.dma_copy(dst=tb, src=b)
    res = nl.ndarray((M, 2 * N), dtype=nl.float32, buffer=nl.sbuf)
    auto = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=auto, stationary=ta, moving=tb)
    nisa.tensor_copy(dst=res[:, 0:N], src=auto)
    fixed = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
    nisa.nc_matmul(dst=fixed, stationary=ta, moving=tb)
    nisa.tensor_scalar(dst=res[:, N:2 * N], data=fixed, op0=nl.multiply, operand0=2.0)
    if reuse:
        nisa.tensor_tensor(dst=res[:, 0:N], data1=res[:, 0:N], data2=auto, op=nl.add)
    nisa.dma_copy(dst=out, src=res)
    return out


@pytest.mark.parametrize("reuse", [False, True])
def test_address_over_a_front_end_psum_tile(reuse):
    a, b = _rand((32, 16), 5), _rand((32, 24), 6)
    k = nki.jit(_mixed_psum)
    got = k(a, b, reuse)
    ab = a.T @ b
    np.testing.assert_allclose(got[:, :24], ab * (2 if reuse else 1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[:, 24:], 2 * ab, rtol=1e-4, atol=1e-4)
    assert k.last.tracer.spills == 1


def _mixed_sbuf(a):
    """An SBUF tile the front end places (at the top of SBUF), then a tile
    whose address= names those bytes; the first is read again after."""
    P, F = a.shape
    out = nl.ndarray((P, 2 * F), dtype=a.dtype, buffer=nl.shared_hbm)
    auto = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=auto, src=a)
    top = nl.tile_size.total_available_sbuf_size - 4 * F
    fixed = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(0, top))
    nisa.tensor_scalar(dst=fixed, data=auto, op0=nl.add, operand0=1.0)  # pinned: placed first
    again = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(0, top))
    nisa.tensor_scalar(dst=again, data=fixed, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out[:, 0:F], src=again)
    nisa.dma_copy(dst=out[:, F:2 * F], src=auto)
    return out


def test_address_over_a_front_end_sbuf_tile():
    a = _rand((64, 16), 7)
    with pytest.raises(nki.NKIError, match=r"test_nki_spill.py:\d+: SBUF bytes .* hold a tile "
                                           r"the front end placed \(.*\) that the same "
                                           r"instruction uses"):
        nki.jit(_mixed_sbuf)(a)


def _mixed_sbuf_apart(a):
    """As _mixed_sbuf, but the front end's tile is not an operand of the
    instruction that first uses the fixed bytes: it moves out, and back."""
    P, F = a.shape
    out = nl.ndarray((P, 2 * F), dtype=a.dtype, buffer=nl.shared_hbm)
    auto = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=auto, src=a)
    top = nl.tile_size.total_available_sbuf_size - 4 * F
    fixed = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(0, top))
    nisa.dma_copy(dst=fixed, src=a)
    nisa.tensor_scalar(dst=fixed, data=fixed, op0=nl.multiply, operand0=3.0)
    nisa.dma_copy(dst=out[:, 0:F], src=fixed)
    nisa.tensor_scalar(dst=auto, data=auto, op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out[:, F:2 * F], src=auto)
    return out


def test_address_moves_a_front_end_sbuf_tile():
    a = _rand((64, 16), 8)
    k = nki.jit(_mixed_sbuf_apart)
    got = k(a)
    np.testing.assert_array_equal(got[:, :16], a * np.float32(3))
    np.testing.assert_array_equal(got[:, 16:], a + np.float32(1))
    assert k.last.tracer.spills == 1
