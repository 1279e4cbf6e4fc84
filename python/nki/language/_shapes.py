"""nki.language shapes: broadcast_to (a step-0 view, or across partitions
by DMA through HBM) and expand_dims."""
from .. import _core, _dtypes
from .._core import NkiTensor, fail
from ._creation import _onchip, ndarray
from ._memory import _dma
from ._types import sbuf


def broadcast_to(x, shape, dtype=None, **kw):
    """Broadcast dims of size 1 to shape (NumPy rules, same rank): a
    step-0 view along free dims and HBM; across partitions of an on-chip
    [1, F] tile by a DMA broadcast. With a dtype other than x's: an SBUF
    copy converted to it."""
    out = _broadcast(x, shape)
    if dtype is None or _dtypes.info(dtype).public == out.dtype:
        return out
    from ._memory import copy
    return copy(out, dtype=dtype)


def _broadcast(src, shape):
    shape = tuple(int(s) for s in shape)
    if len(shape) != len(src.shape):
        fail("broadcast_to %s from %s: the ranks differ" % (shape, src.shape))
    dims = [list(d) for d in src.dims]
    part_bcast = None
    for i, (have, want) in enumerate(zip(src.shape, shape)):
        if have == want:
            continue
        if have != 1:
            fail("cannot broadcast %s to %s" % (src.shape, shape))
        if i == src.pdim and _onchip(src):
            part_bcast = want
        else:
            dims[i] = [0, want]
    view = NkiTensor(src.storage, src.dtype, dims, src.pdim, src.part, src.off, src.pcount)
    if part_bcast is None:
        return view
    if len(shape) != 2 or src.pdim != 0 or part_bcast > _core.NUM_PARTITIONS:
        fail("partition broadcast is supported for [1, F] tiles to at most 128 partitions")
    return _dma_broadcast(src, part_bcast, shape[1])


def _dma_broadcast(src, parts, f):
    """A [1, F] on-chip row copied into `parts` partitions by DMA, as the
    hardware broadcasts: the row goes to an HBM scratch variable and comes
    back with a partition step of 0 (no Tensor or Vector engine time)."""
    tr = _core.current()
    di = _dtypes.info(src.dtype)
    st = tr.hbm_tensor("private_hbm", "bcast", (1, f), di, f * di.size)
    row = NkiTensor(st, src.dtype, [[f, 1], [1, f]], None)
    _dma(row, src)
    out = ndarray((parts, f), src.dtype, sbuf)
    _dma(out, NkiTensor(st, src.dtype, [[0, parts], [1, f]], None))
    return out


NkiTensor.broadcast_to = lambda self, shape: broadcast_to(self, shape)


def expand_dims(x, axis):
    """A view with a new dimension of size 1 at axis."""
    nd = len(x.dims) + 1
    axis = axis % nd
    dims = [list(d) for d in x.dims]
    dims.insert(axis, [0, 1])
    pdim = x.pdim
    if pdim is not None and axis <= pdim:
        pdim += 1
    return NkiTensor(x.storage, x.dtype, dims, pdim, x.part, x.off, x.pcount)
