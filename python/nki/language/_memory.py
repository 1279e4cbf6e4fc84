"""nki.language memory: loads, stores and DMAs, masks on them, copies,
assignment into views (a pending result written in place), static_cast
and device_print."""
import sys

import numpy as np

from .. import _core, _dtypes
from .._core import Mask, NkiTensor, current, fail, fail_hw
from ._creation import _is_scalar, _memset, _onchip, full, ndarray
from ._types import int32, sbuf


def _no_mask(mask, what):
    """A mask= this call cannot apply is refused rather than ignored."""
    if mask is not None:
        fail("%s takes no mask= on trnemu: restrict its views (slices) instead" % what)


def _check_same_elems(a, b, what):
    if a.size != b.size:
        fail("%s: shapes %s and %s do not match" % (what, a.shape, b.shape))


def _dma(dst, src, skip_oob=False):
    """One DMA from src to dst (a cast when the dtypes differ). An indirect
    view on one side (a tensor index, or ap(vector_offset=)) makes it a
    gather or scatter by its per-partition indices; skip_oob drops the rows
    whose index is outside the HBM tensor instead of failing."""
    tr = current()
    _check_same_elems(dst, src, "DMA")
    if _onchip(dst) and _onchip(src):
        if len(dst.shape) and dst.shape[0] != src.shape[0]:
            pass
    args = [("dst", dst), ("src", src)]
    if dst.di.name != src.di.name:
        args.append(("op", "cast"))
    # loads queue on the sync engine, stores on GpSimd: a store waiting for
    # its compute does not hold up the next tile's loads
    eng = "pool" if dst.storage.kind == "hbm" and _onchip(src) else "sp"
    ins = {"src": src}
    args += _indirect_args(dst, src, ins, skip_oob)
    return tr.emit(eng, "dma_copy", {"dst": dst}, ins, args)


def _indirect_args(dst, src, ins, skip_oob):
    """The index operands of a DMA whose src (gather) or dst (scatter) is an
    indirect view: the ISA's indexed dma_copy (docs/isa.md)."""
    side = "src" if hasattr(src, "_indirect") else "dst" if hasattr(dst, "_indirect") else None
    if side is None:
        return []
    view = src if side == "src" else dst
    if hasattr(view, "_scalar"):
        _scalar_rows(view)
    index, dim = view._indirect
    if dim != 0:
        fail("an indirect DMA indexes dimension 0 of its HBM side on trnemu (indirect_dim=%d)" % dim)
    if view.storage.kind != "hbm":
        fail("the indexed side of an indirect DMA must be in HBM")
    if not isinstance(index, NkiTensor) or not _onchip(index):
        fail("the indices of an indirect DMA must be an SBUF tile")
    ins["index"] = index
    return [("index", index), ("indirect", side)] + ([("oob", "skip")] if skip_oob else [])


def _mask_ranges(mask):
    """{grid axis: (lo, hi)} that a mask keeps (None: no mask)."""
    if mask is None:
        return None
    if not isinstance(mask, Mask):
        fail("mask= must be a comparison of nl.arange/mgrid index grids")
    return mask.ranges()


def _mask_rows(mask, out, data):
    """For a call whose output keeps only the partition axis of its input
    (reductions along free axes, max8): the input restricted by every
    condition of the mask, the output by the partition condition. None when
    the mask keeps nothing."""
    rng = _mask_ranges(mask)
    if rng is None:
        return out, data
    d = _core.restrict(data, rng)
    p = data.pdim if data.pdim is not None else 0
    o = _core.restrict(out, {0: rng[p]} if p in rng else {})
    return None if d is None or o is None else (o, d)


def _apply_mask(mask, *views):
    if mask is None:
        return views
    if not isinstance(mask, Mask):
        fail("mask= must be a comparison of nl.arange/mgrid index grids")
    rng = mask.ranges()
    out = tuple(_core.restrict(v, rng) for v in views)
    return None if any(v is None for v in out) else out


def load(src, mask=None, dtype=None, **kw):
    """Load an HBM view into a new SBUF tile of the same shape."""
    if not isinstance(src, NkiTensor) or src.buffer in ("sbuf", "psum"):
        if isinstance(src, NkiTensor):
            return copy(src, dtype=dtype)
        fail("nl.load needs an HBM tensor, got %r" % (src,))
    shape = src.shape or (1,)
    if shape[0] > _core.NUM_PARTITIONS:
        fail_hw("nl.load of shape %s: the first (partition) dimension exceeds %d "
                "(nl.tile_size.pmax)" % (shape, _core.NUM_PARTITIONS))
    t = ndarray(shape, dtype or src.dtype, sbuf)
    views = _apply_mask(mask, t, src)
    if views is not None:
        _dma(views[0], views[1])
    return t


def store(dst, value, mask=None, **kw):
    """Store an SBUF/PSUM tile (or a scalar) into an HBM view."""
    if not isinstance(dst, NkiTensor):
        fail("nl.store needs an HBM tensor as dst")
    value = _as_tile(value, dst.shape, dst.dtype)
    views = _apply_mask(mask, dst, value)
    if views is not None:
        _dma(views[0], views[1])


def load_transpose2d(src, dtype=None, **kw):
    """Load a 2-D HBM view [A, B] transposed into an SBUF tile [B, A]."""
    if len(src.shape) != 2:
        fail("load_transpose2d needs a 2-D view")
    a, b = src.shape
    if b > _core.NUM_PARTITIONS:
        fail("load_transpose2d: %d rows after the transpose exceed %d" % (b, _core.NUM_PARTITIONS))
    t = ndarray((b, a), dtype or src.dtype, sbuf)
    _transpose2d(t, src)
    return t


def _transpose2d(dst, src):
    """dst[j, i] = src[i, j] by DMA: the transposing DMA, or, when src has
    more rows than a DMA pattern has partitions, a copy that walks src
    column by column (the same elements in the same order)."""
    if src.storage.kind == "hbm" and src.dims[0][1] > _core.NUM_PARTITIONS:
        cols = NkiTensor(src.storage, src.dtype, [src.dims[1], src.dims[0]], None, 0, src.off)
        return _dma(dst, cols)
    return current().emit("sp", "dma_transpose", {"dst": dst}, {"src": src},
                          [("dst", dst), ("src", src)])


def _as_tile(value, shape, dtype):
    """A tile from a tile or a Python number (memset)."""
    if isinstance(value, NkiTensor):
        return value
    if isinstance(value, (int, float, np.number, bool)):
        return full(shape, value, dtype)
    fail("expected a tile or a number, got %r" % (value,))


# References to a result tile that is only a temporary of the expression
# `view[...] = f(...)` / `psum += matmul(...)`, seen from _assign/_inplace:
# the caller's operand, the two parameters on the way, getrefcount's
# argument and the pending instruction's dst and argument list. One more
# means the kernel keeps the tile (a name, a list), so it must be written.
_TEMP_REFS = 6


def _settle_zero_before(tr, pending, view):
    """The pending instruction is about to write view: a zero-filled tile
    needs no fill when view is all of it, else its fill goes first."""
    if getattr(view.storage, "zero_view", None) is None:
        return
    tr.pending = None
    tr.settle_zero(view)
    tr.flush()
    tr.pending = pending


def _retarget(insn, view, accumulate=False):
    """Make the pending instruction write view instead of its fresh tile."""
    if not accumulate:
        _settle_zero_before(current(), insn, view)
    old = insn.outs["dst"]
    if old.size != view.size:
        fail("cannot assign a result of shape %s to a view of shape %s" % (old.shape, view.shape))
    insn.outs["dst"] = view
    insn.args = [(n, view if v is old else v) for n, v in insn.args]
    if insn.op == "dma_copy":
        src = insn.ins["src"]
        insn.args = [a for a in insn.args if a[0] != "op"]
        if src.di.name != view.di.name:
            insn.args.append(("op", "cast"))
    if accumulate:
        insn.args.append(("accumulate", None))
        insn.rmw = True
    view.storage.written = True
    current().flush()


def _assign(view, value):
    """view[...] = value."""
    tr = current()
    if isinstance(value, NkiTensor) and _same_view(view, value):
        return    # `t[...] += x` hands back the view it updated in place: nothing to copy
    if isinstance(value, NkiTensor):
        p = tr.pending
        if (p is not None and "dst" in p.outs and p.outs["dst"] is value
                and value.storage.offset is None and value.storage.kind != "hbm"
                and sys.getrefcount(value) <= _TEMP_REFS and _retargetable(p, view)):
            _retarget(p, view)
            return
        if not _onchip(view) or not _onchip(value):
            _dma(view, value)
            return
        _check_same_elems(view, value, "assignment")
        tr.emit("dve" if value.buffer == "psum" or view.buffer == "psum" else "act",
                "tensor_copy", {"dst": view}, {"src": value}, [("dst", view), ("src", value)])
        return
    if _is_scalar(value):
        _memset(view, value)
        return
    fail("cannot assign %r to a tensor" % (value,))


def _same_view(a, b):
    """Do views a and b name the same elements in the same order? (Views
    indexed at run time only when they share their index.)"""
    return (a is b or (a.storage is b.storage and a.dims == b.dims and a.pdim == b.pdim
                       and a.part == b.part and a.off == b.off and a.dtype == b.dtype
                       and getattr(a, "_indirect", None) is getattr(b, "_indirect", None)))


def _retargetable(insn, view):
    if insn.op == "nc_matmul":
        return view.buffer == "psum"
    if insn.op in ("dma_copy", "dma_transpose"):
        return True
    if insn.engine == "pe":
        return view.buffer == "psum"
    return _onchip(view) and not (insn.engine == "pool" and view.buffer == "psum")


def copy(x, dtype=None, **kw):
    """A copy of a tile (converted to dtype)."""
    _no_mask(kw.get("mask"), "copy")
    tr = current()
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    tr.emit("dve" if x.buffer == "psum" else "act", "tensor_copy", {"dst": out}, {"src": x},
            [("dst", out), ("src", x)])
    return out


copy._act, copy._bias = "copy", 0.0     # as nki.isa.activation's op: the identity


def static_cast(x, dtype):
    """Convert: a NumPy array on the host (bfloat16 gives an nki.HostArray),
    or a tile on the device (a copy)."""
    if isinstance(x, NkiTensor):
        return copy(x, dtype=dtype)
    from .. import _kernel
    di = _dtypes.info(dtype)
    if di.name == "bfloat16":
        return _kernel.bf16(np.asarray(x, dtype=np.float32))
    if not isinstance(di.public, np.dtype):
        fail("static_cast to %s on the host is not supported" % di.name)
    return np.asarray(x).astype(di.public)


def device_print(print_prefix, tensor, **kw):
    """Print print_prefix and the value of tensor (SBUF, PSUM or HBM) when
    the kernel runs: the value is copied by DMA, at this point of the
    program, into an extra output that the front end prints to stdout after
    the execution (in the order of the device_print calls)."""
    tr = current()
    if not isinstance(print_prefix, str):
        fail("device_print's prefix must be a constant string, got %r" % (print_prefix,))
    if not isinstance(tensor, NkiTensor):
        fail("device_print prints a tensor, got %r" % (tensor,))
    out = _core.new_tensor(tensor.shape or (1,), tensor.dtype, "hbm", "print")
    out.storage.role = "print"
    _dma(out, tensor)
    tr.prints.append((print_prefix, out.storage))


def gather_flattened(data, indices, axis=0, dtype=None, **kw):
    """Per partition, out[j] = data[indices[j]] over data's flattened free
    axes (uint32 indices; GpSimd nc_n_gather)."""
    if axis not in (0, -1, 1) or not isinstance(data, NkiTensor) or not isinstance(indices, NkiTensor):
        fail("gather_flattened(data, indices) gathers along the flattened free axes of SBUF tiles")
    out = ndarray(indices.shape, dtype or data.dtype, sbuf)
    src = data if data.buffer == "sbuf" else copy(data)
    current().emit("pool", "nc_n_gather", {"dst": out}, {"data": src, "indices": indices},
                   [("dst", out), ("data", src), ("indices", indices)])
    if dtype is not None and _dtypes.info(dtype).name != _dtypes.info(data.dtype).name:
        return copy(out, dtype=dtype)
    return out


def atomic_rmw(dst, value, op, mask=None, **kw):
    """dst = op(dst, value) on an HBM view (a tensor-indexed view included)
    by one DMA that reads and writes dst (add, maximum or minimum)."""
    from ..isa._helpers import _alu
    alu = _alu(op)
    if alu not in ("add", "max", "min"):
        fail("atomic_rmw works with add, maximum or minimum, got %r" % (op,))
    if not isinstance(dst, NkiTensor) or dst.storage.kind != "hbm":
        fail("atomic_rmw's dst is an HBM tensor")
    value = _as_tile(value, dst.shape, dst.dtype)
    views = _apply_mask(mask, dst, value)
    if views is None:
        return
    insn = _dma(views[0], views[1])
    insn.args = [a for a in insn.args if a[0] != "op"] + [("op", alu)]
    insn.rmw = True


def _scalar_rows(view):
    """How an ap(scalar_offset=s, indirect_dim=k) view is indexed: the whole
    pattern moves by s x stride_k elements. The ISA's indexed DMA does that
    with a one-row HBM side of row step stride_k, indexed by s itself, that
    walks the pattern as free dimensions (docs/isa.md). A pattern of more
    than 4 dimensions that do not merge does not fit in one row: its rows r
    then become indexed rows r + s * (stride_k / stride_0), built on the
    device (s spread over the rows through an HBM word, plus an iota)."""
    tile, sk = view._scalar
    if len(_core._merge(view.dims)) <= 4:
        view._scalar_step = sk
        view._indirect = (tile, 0)
        return
    (s0, rows) = view.dims[0]
    if s0 == 0 or sk % s0:
        fail("a run-time offset of stride %d on a pattern of more than 4 dimensions that do "
             "not merge: trnemu shifts such a pattern by whole rows, and %d is not a multiple "
             "of its first stride %d" % (sk, sk, s0))
    word = _core.new_tensor((1, 1), int32, "hbm")
    _dma(word, tile)
    spread = ndarray((rows, 1), int32, sbuf)
    _dma(spread, NkiTensor(word.storage, int32, [[0, rows], [1, 1]], None, 0, word.off))
    rowid = ndarray((rows, 1), int32, sbuf)
    current().emit("pool", "iota", {"dst": rowid}, {},
                   [("dst", rowid), ("pattern", "[[0,1]]"), ("offset", 0), ("channel_multiplier", 1)])
    idx = ndarray((rows, 1), int32, sbuf)
    args = [("dst", idx), ("data", spread), ("op0", "multiply"), ("operand0", float(sk // s0)),
            ("op1", "add"), ("operand1", rowid)]
    current().emit("dve", "tensor_scalar", {"dst": idx}, {"data": spread, "operand1": rowid}, args)
    view._indirect = (idx, 0)
