"""test_nki_dynamic_onchip.py: on-chip views addressed by a run-time value
(ap(scalar_offset=, indirect_dim=) and select(dim, tile) of SBUF tiles) as
operands of compute-engine instructions and DMAs, against NumPy: the NKI
reference's own ap example (bf16 reinterpretation), a dynamic select
feeding tensor_tensor, a dynamic destination, a DMA from and to such a
view, and an offset out of the tile stopping the run at its kernel line."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import NKIError

# these tests drive device loops through the forms NKI 0.6.0 deprecates
# (nl.dynamic_range, `while reg:`), which still run; their warning is
# checked in test_nki_cores.py
pytestmark = pytest.mark.filterwarnings("ignore:.*loops are deprecated since NKI 0.6.0:nki.NKIWarning")


def _bf16_bits(words, start, count):
    """bf16 elements start..start+count of each row of a float32 array, as
    their uint16 bits (little-endian: element 2i is the low half of word i)."""
    halves = np.ascontiguousarray(words).view(np.uint16)
    return halves[:, start:start + count]


def _index_tile(idx):
    t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=idx)
    return t


@pytest.mark.parametrize("where", [0, 5, 24])
def test_reference_ap_example(where):
    """sb.ap(pattern=[[64, 128], [1, 16]], dtype=bf16, scalar_offset=idx,
    indirect_dim=1) of a (128, 32) float32 tile: 16 bf16 halves of each
    row, starting at float32 column idx (the stride of dim 1)."""
    @nki.jit
    def k(a, idx):
        sb = nl.ndarray((128, 32), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=sb, src=a)
        i = _index_tile(idx)
        view = sb.ap(pattern=[[64, 128], [1, 16]], dtype=nl.bfloat16, scalar_offset=i,
                     indirect_dim=1)
        assert view.shape == (128, 16) and view.is_indirect()
        r = nl.ndarray((128, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=view)
        out = nl.ndarray((128, 16), dtype=nl.uint16, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r.view(nl.uint16))
        return out
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 32)).astype(np.float32)
    got = k(a, np.array([[where]], np.int32))
    np.testing.assert_array_equal(got, _bf16_bits(a, 2 * where, 16))


def test_dynamic_select_feeds_tensor_tensor():
    """t.select(1, idx) of a (64, 8, 16) SBUF tile plus another tile, on
    the Vector engine; one kernel, several run-time indices."""
    @nki.jit
    def k(a, b, idx):
        t = nl.ndarray((64, 8, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        u = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=b)
        sel = t.select(1, _index_tile(idx))
        assert sel.shape == (64, 16)
        r = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=r, data1=sel, data2=u, op=nl.add)
        out = nl.ndarray((64, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 8, 16)).astype(np.float32)
    b = rng.standard_normal((64, 16)).astype(np.float32)
    for i in (0, 3, 7):
        np.testing.assert_array_equal(k(a, b, np.array([[i]], np.int32)), a[:, i, :] + b)


def test_dynamic_destination_activation():
    """An activation writes column block idx of a tile, then the whole tile
    goes out: the written block moved, the others untouched."""
    @nki.jit
    def k(x, idx):
        t = nl.ndarray((32, 4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t, value=-1.0)
        xs = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=xs, src=x)
        nisa.activation(dst=t.select(1, _index_tile(idx)), op=nl.exp, data=xs)
        out = nl.ndarray((32, 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    x = np.linspace(-1, 1, 32 * 8, dtype=np.float32).reshape(32, 8)
    got = k(x, np.array([[2]], np.int32))
    want = np.full((32, 4, 8), -1.0, np.float32)
    want[:, 2, :] = np.exp(x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    assert (got[:, [0, 1, 3], :] == -1.0).all()


def test_dma_from_and_to_dynamic_views():
    """A DMA stores column idx of an SBUF tile and another loads into
    column idx2 of a second tile (ap with indirect_dim=1)."""
    @nki.jit
    def k(a, idx, idx2):
        t = nl.ndarray((16, 10), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        col = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=col, src=t.ap(pattern=[[10, 16], [1, 1]],
                                        scalar_offset=_index_tile(idx), indirect_dim=1))
        z = nl.ndarray((16, 10), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=z, value=0.0)
        nisa.dma_copy(dst=z.ap(pattern=[[10, 16], [1, 1]], scalar_offset=_index_tile(idx2),
                               indirect_dim=1), src=col)
        out = nl.ndarray((16, 10), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=z)
        return out
    a = np.arange(160, dtype=np.float32).reshape(16, 10)
    got = k(a, np.array([[6]], np.int32), np.array([[9]], np.int32))
    want = np.zeros((16, 10), np.float32)
    want[:, 9] = a[:, 6]
    np.testing.assert_array_equal(got, want)


def oob_select(a, idx):
    t = nl.ndarray((8, 4, 16), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    r = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
    i = _index_tile(idx)
    nisa.tensor_copy(dst=r, src=t.select(1, i))  # MARK-dyn-oob
    out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


@pytest.mark.parametrize("bad", [4, -1, 1 << 40])
def test_offset_out_of_the_tile_names_the_line(bad):
    """select() past the dimension's last element (or before its first)
    stops the run with an NKIError at the instruction's kernel line."""
    import inspect
    src, first = inspect.getsourcelines(oob_select)
    line = first + next(i for i, s in enumerate(src) if "MARK-dyn-oob" in s)
    k = nki.jit(oob_select)
    a = np.zeros((8, 4, 16), np.float32)
    dt = np.int64 if abs(bad) >= 1 << 31 else np.int32
    np.testing.assert_array_equal(k(a, np.array([[3]], dt)), a[:, 3, :])
    with pytest.raises(NKIError) as e:
        k(a, np.array([[bad]], dt))
    msg = str(e.value)
    assert ":%d" % line in msg, msg
    assert "run-time offset" in msg and "operand 'src'" in msg, msg


def test_onchip_partition_dimension_refused():
    @nki.jit
    def k(a, idx):
        t = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        t.select(0, _index_tile(idx))
        return a
    with pytest.raises(NKIError, match="partition dimension"):
        k(np.zeros((8, 16), np.float32), np.array([[0]], np.int32))


def test_device_loop_index_moves_source_and_destination():
    """A device loop over a run-time count: iteration i doubles column i of
    an SBUF tile into column i of another (two dynamic operands of one
    tensor_scalar, each in its own register); columns past the count stay."""
    P, F = 16, 6

    @nki.jit
    def k(a, n):
        t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=r, value=7.0)
        cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=cnt, src=n)
        reg = nisa.register_alloc()
        nisa.register_load(reg, cnt)
        for i in nl.dynamic_range(0, reg, 1):
            src = t.ap(pattern=[[F, P], [1, 1]], scalar_offset=i, indirect_dim=1)
            dst = r.ap(pattern=[[F, P], [1, 1]], scalar_offset=i, indirect_dim=1)
            nisa.tensor_scalar(dst=dst, data=src, op0=nl.multiply, operand0=2.0)
        out = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out
    a = np.arange(P * F, dtype=np.float32).reshape(P, F)
    for n in (0, 4, F):
        want = np.full((P, F), 7.0, np.float32)
        want[:, :n] = 2 * a[:, :n]
        np.testing.assert_array_equal(k(a, np.array([[n]], np.int32)), want)
