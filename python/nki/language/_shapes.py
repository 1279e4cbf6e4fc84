"""nki.language shapes: broadcast_to (a step-0 view, or across partitions
with a ones-matmul) and expand_dims."""
import builtins

from .. import _core, _dtypes
from .._core import NkiTensor, fail
from ._creation import _onchip, full, ndarray
from ._math import _matmul, _to_sbuf
from ._memory import _assign, copy
from ._types import float32, sbuf


def broadcast_to(src, shape, **kw):
    """Broadcast dims of size 1 to shape (NumPy rules, same rank): a
    step-0 view along free dims and HBM; across partitions of an on-chip
    [1, F] tile with a ones-matmul on the Tensor Engine."""
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
    f = shape[1]
    row = _to_sbuf(src) if src.buffer == "sbuf" else copy(src)
    ones_t = full((1, part_bcast), 1.0, row.dtype if _dtypes.info(row.dtype).is_float else float32)
    if not _dtypes.info(row.dtype).is_float:
        row = copy(row, dtype=float32)
    out = ndarray((part_bcast, f), src.dtype, sbuf)
    for c0 in builtins.range(0, f, 512):
        c1 = builtins.min(f, c0 + 512)
        ps = _matmul(ones_t, row[:, c0:c1])
        _assign(out[:, c0:c1], ps)
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
