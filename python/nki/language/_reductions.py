"""nki.language reductions: sum, max, min, mean, prod, all and var along
free axes (the partition axis on GpSimd), softmax, rms_norm, argmax and
argmin, and loop_reduce across loop iterations."""
import builtins

import numpy as np

from .. import _core, _dtypes
from .._core import NkiTensor, current, fail
from ._creation import _onchip, ndarray
from ._elementwise import _binary, _tensor_scalar
from ._math import _activation, reciprocal, square
from ._memory import _mask_rows, _no_mask, copy
from ._types import float32, sbuf, uint32


def _reduce(alu, x, axis, dtype=None, keepdims=False, negate=False, mask=None):
    tr = current()
    if not isinstance(x, NkiTensor) or not _onchip(x):
        fail("reductions take SBUF/PSUM tiles")
    nd = len(x.shape)
    axes = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
    axes = sorted(a % nd for a in axes)
    if x.pdim is not None and x.pdim in axes:
        if axes != [x.pdim] or x.buffer != "sbuf" or nd != 2 or alu not in ("add", "max", "average",
                                                                           "bitwise_or", "bitwise_and"):
            fail("reducing the partition axis works only alone, on a 2-D SBUF tile "
                 "(add, max, mean, bitwise or/and)")
        _no_mask(mask, "a reduction over the partition axis")
        out = ndarray((1, x.shape[1]), dtype or x.dtype, sbuf)
        tr.emit("pool", "tensor_partition_reduce", {"dst": out}, {"data": x},
                [("dst", out), ("data", x), ("op", alu)])
        return out if keepdims else out
    keep = [i for i in range(nd) if i not in axes]
    out_shape = tuple(x.shape[i] if i in keep else 1 for i in range(nd)) if keepdims else \
        tuple(x.shape[i] for i in keep)
    if not out_shape or (x.pdim is not None and x.pdim not in keep):
        fail("reduce over axis %s of shape %s is not supported" % (axis, x.shape))
    out_dt = dtype or (x.dtype if _dtypes.info(x.dtype).is_float else float32)
    out = ndarray(out_shape, out_dt, sbuf)
    views = _mask_rows(mask, out, x)
    if views is None:
        return out
    dst, x = views
    # data pattern: kept free dims first, reduced ones last (innermost)
    kept = [x.dims[i] for i in keep if i != x.pdim]
    red = [x.dims[i] for i in axes]
    rmerge = _core._merge(red)
    if len(kept) + len(rmerge) > 4:
        kept = _core._merge(kept)
    data = NkiTensor(x.storage, x.dtype, x.dims, x.pdim, x.part, x.off, x.pcount)
    data._dims = (kept + rmerge) if kept else rmerge
    args = [("dst", dst), ("data", data), ("op", alu), ("axes", len(rmerge))]
    if negate:
        args.append(("negate", None))
    if keepdims:
        args.append(("keepdims", None))
    # the merged pattern must not be re-merged across the kept/reduced boundary
    data._nomerge = True
    tr.emit("dve", "tensor_reduce", {"dst": dst}, {"data": data}, args)
    return out


def sum(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    return _reduce("add", x, axis, dtype, keepdims, mask=mask)


def max(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    return _reduce("max", x, axis, dtype, keepdims, mask=mask)


def min(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    return _reduce("min", x, axis, dtype, keepdims, mask=mask)


def mean(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    return _reduce("average", x, axis, dtype, keepdims, mask=mask)


def prod(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    return _reduce("multiply", x, axis, dtype, keepdims, mask=mask)


def all(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    return _reduce("logical_and", x, axis, dtype or float32, keepdims, mask=mask)


def softmax(x, axis=-1, dtype=None, mask=None, **kw):
    """Row softmax along the free axis (composite: max, exp with bias and
    sum on the Scalar Engine, reciprocal, multiply)."""
    _no_mask(mask, "softmax")
    nd = len(x.shape)
    if nd != 2 or axis % nd != 1:
        fail("softmax is supported along the last axis of a 2-D tile")
    negmax = _reduce("max", x, 1, float32, keepdims=True, negate=True)
    ssum = ndarray((x.shape[0], 1), float32, sbuf)
    e = _activation("exp", x, dtype=float32, bias=negmax, reduce=("add", ssum))
    r = reciprocal(ssum)
    return _tensor_scalar(e, "multiply", r, dtype=dtype or x.dtype)


def var(x, axis, dtype=None, keepdims=False, **kw):
    """Population variance along free axes: mean((x - mean(x))^2)."""
    m = _reduce("average", x, axis, float32, keepdims=True)
    d = _binary("subtract", x, m, float32)
    return _reduce("average", square(d), axis, dtype or float32, keepdims)


def _arg_extreme(x, axis, negate):
    """Index of the largest (smallest with negate) element along the free
    axis of a 2-D tile: max8 then nc_find_index8 (first occurrence)."""
    tr = current()
    nd = len(x.shape)
    if nd != 2 or axis % nd != 1 or x.pdim != 0:
        fail("argmax/argmin are supported along the last axis of a 2-D tile")
    if not 8 <= x.shape[1] <= 16384:
        fail("argmax/argmin need 8 to 16384 elements per partition (max8), got %d" % x.shape[1])
    data = _tensor_scalar(x, "multiply", -1.0, dtype=float32) if negate else copy(x, dtype=float32)
    top = ndarray((x.shape[0], 8), float32, sbuf)
    tr.emit("dve", "max8", {"dst": top}, {"src": data}, [("dst", top), ("src", data)])
    idx = ndarray((x.shape[0], 8), uint32, sbuf)
    tr.emit("dve", "nc_find_index8", {"dst": idx}, {"data": data, "vals": top},
            [("dst", idx), ("data", data), ("vals", top)])
    return idx[:, 0:1]


def argmax(x, axis, keepdims=True, **kw):
    """Index (uint32, [P, 1]) of the first largest element along the last axis."""
    _no_mask(kw.get("mask"), "argmax")
    return _arg_extreme(x, axis, False)


def argmin(x, axis, keepdims=True, **kw):
    """Index (uint32, [P, 1]) of the first smallest element along the last axis."""
    _no_mask(kw.get("mask"), "argmin")
    return _arg_extreme(x, axis, True)


def rms_norm(x, w, axis, n, epsilon=1e-06, dtype=None, compute_dtype=None, **kw):
    """x / sqrt(sum(x^2) / n + epsilon) * w along the free axis (x, w tiles
    of one shape; w may be a [1, F] row broadcast across partitions)."""
    ct = compute_dtype or float32
    ss = _reduce("add", square(x, dtype=ct), axis, ct, keepdims=True)
    ms = _tensor_scalar(ss, "multiply", 1.0 / float(n), dtype=ct)
    ms = _tensor_scalar(ms, "add", float(epsilon), dtype=ct)
    r = _activation("rsqrt", ms, dtype=ct)
    y = _tensor_scalar(x, "multiply", r, dtype=ct)
    if w.shape != x.shape:
        from ._shapes import broadcast_to
        w = broadcast_to(w, x.shape)
    return _binary("multiply", y, w, dtype or x.dtype)


# a reduction named as the operator of an nki.isa call (reduce_op=nl.max ...)
for _fn, _op in ((sum, "add"), (max, "max"), (min, "min"), (mean, "average"), (prod, "multiply"),
                 (all, "logical_and")):
    _fn._alu = _op


def loop_reduce(x, op, loop_indices, dtype=None, mask=None, **kw):
    """Reduce x with op across the iterations of the loops in loop_indices:
    the call at one kernel line keeps one result tile; when every listed
    loop index is 0 it starts as a copy of x, later iterations combine
    result = op(result, x) (as nisa.tensor_tensor would)."""
    from .._core import user_line
    from ..isa._helpers import _alu
    _no_mask(mask, "loop_reduce")
    alu = _alu(op)
    idx = loop_indices if isinstance(loop_indices, (list, tuple)) else [loop_indices]
    tr = current()
    accs = getattr(tr, "loop_accs", None)
    if accs is None:
        accs = tr.loop_accs = {}
    key = (user_line(), tr.program, tr.core)
    acc = accs.get(key)
    if acc is None or builtins.all(int(i) == 0 for i in idx):
        acc = ndarray(x.shape, dtype or x.dtype, sbuf)
        current().emit("dve" if x.buffer == "psum" else "act", "tensor_copy", {"dst": acc},
                       {"src": x}, [("dst", acc), ("src", x)])
        accs[key] = acc
        return acc
    current().emit("dve", "tensor_tensor", {"dst": acc}, {"data1": acc, "data2": x},
                   [("dst", acc), ("data1", acc), ("data2", x), ("op", alu)])
    return acc
