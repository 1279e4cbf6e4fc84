"""test_nki_library_forms.py: the NKI forms the NKI Library's kernels use
(aws-neuron/nki-library), each checked against a NumPy reference: the
current nki.isa calling convention in every mix of positional and keyword
arguments, and nl.NKIObject subclasses written as dataclasses."""
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl


def rand(*shape, seed=3):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# -- nki.isa: dst first, operands by position or keyword ---------------------

def tt_kernel(form):
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        z = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.dma_copy(dst=y, src=b)
        if form == "positional":
            nisa.tensor_tensor(z, x, y, nl.subtract)
        elif form == "dst_positional":
            nisa.tensor_tensor(z, data1=x, data2=y, op=nl.subtract)
        elif form == "mixed":
            nisa.tensor_tensor(z, x, data2=y, op=nl.subtract)
        elif form == "keywords":
            nisa.tensor_tensor(dst=z, data1=x, data2=y, op=nl.subtract)
        else:
            z = nisa.tensor_tensor(x, y, nl.subtract)
        nisa.dma_copy(out, z)
        return out
    return k


@pytest.mark.parametrize("form", ["positional", "dst_positional", "mixed", "keywords", "legacy"])
def test_tensor_tensor_call_forms(form):
    a, b = rand(128, 64), rand(128, 64, seed=4)
    got = nki.simulate(tt_kernel(form))(a, b)
    assert np.allclose(got, a - b)


@pytest.mark.parametrize("form", ["dst_positional", "mixed", "positional"])
def test_nc_matmul_and_tensor_copy_call_forms(form):
    def k(a, b):
        out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.dma_copy(y, b)
        p = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.psum)
        s = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.sbuf)
        if form == "dst_positional":
            nisa.nc_matmul(p, stationary=x, moving=y)
            nisa.tensor_copy(s, src=p)
        elif form == "mixed":
            nisa.nc_matmul(p, x, moving=y)
            nisa.tensor_copy(s, p, engine=nisa.vector_engine)
        else:
            nisa.nc_matmul(p, x, y)
            nisa.tensor_copy(s, p)
        nisa.dma_copy(out, s)
        return out
    a, b = rand(128, 64), rand(128, 32, seed=5)
    got = nki.simulate(k)(a, b)
    assert np.allclose(got, a.T @ b, rtol=1e-4, atol=1e-4)


def test_activation_and_reduce_dst_then_keywords():
    def k(a):
        out = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        e = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(e, op=nl.exp, data=x, scale=0.5)
        r = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(r, nl.add, data=e, axis=1)
        nisa.dma_copy(out, r)
        return out
    a = rand(128, 64)
    got = nki.simulate(k)(a)
    assert np.allclose(got, np.exp(0.5 * a).sum(axis=1, keepdims=True), rtol=1e-4)


def test_operand_given_twice_names_the_line():
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.tensor_tensor(x, x, data1=x, op=nl.add)   # data1 twice
        nisa.dma_copy(out, x)
        return out
    with pytest.raises(nki.NKIError, match=r"test_nki_library_forms.py:\d+: .*data1 twice"):
        nki.simulate(k)(rand(128, 8))


# -- nl.NKIObject subclasses as dataclasses ----------------------------------

@dataclass
class Plain(nl.NKIObject):
    # fields as plain class attributes: the dataclass has no fields of its own
    scale = None
    shift = None


@dataclass
class Dims(nl.NKIObject):
    rows: int
    cols: int
    unused: int
    extra: Optional[int] = None
    seen: list = field(default_factory=list)

    def __post_init__(self):
        self.seen.append(self.rows)


def test_nkiobject_dataclass_forms():
    p = Plain(scale=2.0, shift=1.0)
    assert (p.scale, p.shift) == (2.0, 1.0)
    d = Dims(rows=128, cols=64)          # a field left out, as the vendor's allows
    assert (d.rows, d.cols, d.extra, d.seen) == (128, 64, None, [128])
    assert Dims(128, 64, 1).unused == 1
    with pytest.raises(TypeError):
        Dims(rows=1, nope=2)

    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        q = Plain(scale=2.0, shift=1.0)
        dm = Dims(rows=a.shape[0], cols=a.shape[1])
        x = nl.ndarray((dm.rows, dm.cols), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.tensor_scalar(x, x, nl.multiply, q.scale, op1=nl.add, operand1=q.shift)
        nisa.dma_copy(out, x)
        return out
    a = rand(128, 16)
    assert np.allclose(nki.simulate(k)(a), a * 2.0 + 1.0)


# -- SBUF size per generation, address= up to its top ------------------------

def test_sbuf_size_follows_the_generation():
    from nki import _runtime
    gen = _runtime.machine_generation()
    per_part = {2: 192, 3: 224, 4: 256}[gen] * 1024
    ts = nl.tile_size
    assert ts.total_available_sbuf_size == ts.sbuf_fmax_bytes == per_part
    assert ts.sbuf_size_bytes == per_part * 128

    def top(a, over):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        size = nl.tile_size.total_available_sbuf_size
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf,
                       address=(0, size - a.shape[1] * 4 + over))   # the partition's last bytes
        nisa.dma_copy(t, a)
        nisa.dma_copy(out, t)
        return out
    a = rand(128, 16)
    assert np.array_equal(nki.simulate(top)(a, 0), a)
    with pytest.raises(nki.NKIError, match=r"test_nki_library_forms.py:\d+: address .* outside the %d bytes"
                       % per_part):
        nki.simulate(top)(a, 4)


def test_nc_version_is_ordered():
    v = nisa.nc_version
    assert v.gen2 < v.gen3 <= v.gen3 < v.gen4 and v.gen4 >= v.gen2 and not v.gen2 > v.gen3
    assert nisa.get_nc_version() >= v.gen2
    with pytest.raises(TypeError):
        v.gen2 < 3


# -- PSUM accumulation inferred per location ---------------------------------

def test_matmul_without_accumulate_starts_each_block_fresh():
    """Column blocks of one PSUM tile, each written first by its own
    matmul: every block starts fresh (whatever the bank held before), and
    a second matmul onto the same block accumulates."""
    def k(a, b):
        out = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        y = nl.ndarray(b.shape, dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.dma_copy(y, b)
        # stale PSUM contents, as a previous kernel may leave them
        junk = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
        nisa.memset(junk, 1000.0)
        p = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
        nisa.nc_matmul(p[:, 0:128], x, y[:, 0:128])
        nisa.nc_matmul(p[:, 128:256], x, y[:, 128:256])
        nisa.nc_matmul(p[:, 128:256], x, y[:, 128:256])      # accumulates
        s = nl.ndarray((64, 256), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(s, p)
        nisa.dma_copy(out, s)
        return out
    a, b = rand(128, 64), rand(128, 256, seed=6)
    got = nki.simulate(k)(a, b)
    want = a.T @ b
    want[:, 128:] *= 2
    assert np.allclose(got, want, rtol=1e-4, atol=1e-3)


def test_tensor_tensor_same_elements_per_partition():
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)             # (128, 80)
        y = nl.ndarray((128, 4, 20), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.dma_copy(y, b)
        z = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_tensor(z, x, y, nl.multiply)
        nisa.dma_copy(out, z)
        return out
    a, b = rand(128, 80), rand(128, 4, 20, seed=8)
    assert np.allclose(nki.simulate(k)(a, b), a * b.reshape(128, 80))

    def bad(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.tensor_tensor(x, x, x[:, 0:40], nl.add)
        nisa.dma_copy(out, x)
        return out
    with pytest.raises(nki.NKIError, match=r"test_nki_library_forms.py:\d+: tensor_tensor shapes"):
        nki.simulate(bad)(rand(128, 80))


@pytest.mark.parametrize("shape,axes,perm", [
    ((2, 3, 4, 8), None, (3, 1, 2, 0)),
    ((4, 6, 16), None, (2, 1, 0)),
    ((4, 1, 2, 32), (3, 0, 1, 2), (3, 0, 1, 2)),
])
def test_dma_transpose_nd_from_hbm(shape, axes, perm):
    def k(a):
        oshape = tuple(a.shape[d] for d in perm)
        out = nl.ndarray(oshape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray(oshape, dtype=a.dtype, buffer=nl.sbuf)
        if axes is None:
            nisa.dma_transpose(t, a)
        else:
            nisa.dma_transpose(dst=t, src=a, axes=axes)
        nisa.dma_copy(out, t)
        return out
    a = rand(*shape)
    assert np.array_equal(nki.simulate(k)(a), a.transpose(perm))


def test_dma_transpose_2d_and_bad_axes():
    def k(a):
        out = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((a.shape[1], a.shape[0]), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(t, a)
        nisa.dma_copy(out, t)
        return out
    a = rand(16, 32)
    assert np.array_equal(nki.simulate(k)(a), a.T)

    def bad(a):
        t = nl.ndarray((8, 4, 2), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(t, a, axes=(2, 2, 0))
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_library_forms.py:\d+: dma_transpose"):
        nki.simulate(bad)(rand(2, 4, 8))

    def lower_rank(a):        # (8, 4): the (8, 1, 4) of the permuted src without its 1
        out = nl.ndarray((8, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_transpose(dst=out, src=a, axes=(2, 1, 0))
        return out
    with pytest.raises(nki.NKIError, match=r"test_nki_library_forms.py:\d+: dma_transpose: dst has "
                                           r"shape \(8, 4\) where src \(4, 1, 8\) permuted .* has \(8, 1, 4\)"):
        nki.simulate(lower_rank)(rand(4, 1, 8))


@dataclass(frozen=True)
class Frozen(nl.NKIObject):
    program_id: int = 0
    n_programs: int = 1


def test_nkiobject_frozen_dataclass():
    f = Frozen(program_id=1, n_programs=2)
    assert (f.program_id, f.n_programs) == (1, 2) and Frozen().n_programs == 1
    assert f == Frozen(program_id=1, n_programs=2)
    with pytest.raises(Exception):
        f.program_id = 3


@pytest.mark.parametrize("form", ["dst_then_keywords", "positional"])
def test_range_select_call_forms(form):
    def k(a, lo, hi):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        mx = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        b0 = nl.ndarray(lo.shape, dtype=lo.dtype, buffer=nl.sbuf)
        b1 = nl.ndarray(hi.shape, dtype=hi.dtype, buffer=nl.sbuf)
        nisa.dma_copy(x, a)
        nisa.dma_copy(b0, lo)
        nisa.dma_copy(b1, hi)
        d = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        if form == "positional":
            nisa.range_select(d, x, nl.greater_equal, nl.less, b0, b1, reduce_res=r,
                              reduce_op=nl.maximum, on_false_value=-1e30, range_start=2)
        else:
            nisa.range_select(d, on_true_tile=x, comp_op0=nl.greater_equal, comp_op1=nl.less,
                              bound0=b0, bound1=b1, reduce_res=r, reduce_op=nl.maximum,
                              on_false_value=-1e30, range_start=2)
        nisa.dma_copy(out, d)
        nisa.dma_copy(mx, r)
        return out, mx
    a = rand(4, 16)
    lo = np.array([[2], [5], [0], [10]], np.float32)
    hi = np.array([[8], [6], [18], [12]], np.float32)
    got, gmax = nki.simulate(k)(a, lo, hi)
    j = np.arange(16)[None, :] + 2
    keep = (j >= lo) & (j < hi)
    want = np.where(keep, a, np.float32(-1e30))
    assert np.allclose(got, want) and np.allclose(gmax[:, 0], want.max(axis=1))


@pytest.mark.parametrize("shape,perm", [((8, 1, 3, 16), (3, 1, 2, 0)), ((16, 4, 8), (0, 2, 1)),
                                        ((4, 6, 16), (2, 1, 0))])
def test_dma_transpose_nd_on_chip(shape, perm):
    def k(a):
        oshape = tuple(a.shape[d] for d in perm)
        out = nl.ndarray(oshape, dtype=a.dtype, buffer=nl.shared_hbm)
        s = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(s, a)
        t = nl.ndarray(oshape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(t, s, axes=perm)
        nisa.dma_copy(out, t)
        return out
    a = rand(*shape)
    assert np.array_equal(nki.simulate(k)(a), a.transpose(perm))
