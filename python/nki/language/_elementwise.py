"""nki.language element-wise: the arithmetic, comparison, logical and
bitwise operators (tile op tile, tile op scalar, tile op [P, 1] tile), the
in-place forms behind +=, where and dropout."""
import builtins
import sys

from .. import _core, _dtypes
from .._core import NkiTensor, current, fail
from ._creation import _fmt_value, _is_scalar, _memset, _onchip, ndarray
from ._memory import _TEMP_REFS, _apply_mask, _assign, _no_mask, _retarget
from ._types import float32, sbuf

_ALU = {}


def _alu_fn(name, alu):
    def fn(x, y, dtype=None, mask=None, **kw):
        return _binary(alu, x, y, dtype, mask)
    fn.__name__ = name
    fn._alu = alu
    fn.__doc__ = "Element-wise %s of two tiles, or a tile and a scalar." % name
    _ALU[name] = fn
    return fn


add = _alu_fn("add", "add")
subtract = _alu_fn("subtract", "subtract")
multiply = _alu_fn("multiply", "multiply")
divide = _alu_fn("divide", "divide")
maximum = _alu_fn("maximum", "max")
minimum = _alu_fn("minimum", "min")
power = _alu_fn("power", "power")
mod = _alu_fn("mod", "mod")      # remainder with the divisor's sign (Python's %)
equal = _alu_fn("equal", "equal")
not_equal = _alu_fn("not_equal", "not_equal")
greater = _alu_fn("greater", "greater")
greater_equal = _alu_fn("greater_equal", "greater_equal")
less = _alu_fn("less", "less")
less_equal = _alu_fn("less_equal", "less_equal")
logical_and = _alu_fn("logical_and", "logical_and")
logical_or = _alu_fn("logical_or", "logical_or")
logical_xor = _alu_fn("logical_xor", "logical_xor")
bitwise_and = _alu_fn("bitwise_and", "bitwise_and")
bitwise_or = _alu_fn("bitwise_or", "bitwise_or")
bitwise_xor = _alu_fn("bitwise_xor", "bitwise_xor")
left_shift = _alu_fn("left_shift", "left_shift")
right_shift = _alu_fn("right_shift", "right_shift")

_CMP = {"equal", "not_equal", "greater", "greater_equal", "less", "less_equal"}


def _is_col(t, like):
    """t is a [P, 1] tile broadcast along like's free axes."""
    return (isinstance(t, NkiTensor) and _onchip(t) and _core.elems(t) == 1
            and _core.partitions(t)[2] == _core.partitions(like)[2] and _core.elems(like) > 1)


def _binary(alu, x, y, dtype=None, mask=None):
    tr = current()
    if isinstance(x, NkiTensor) and not _onchip(x) or isinstance(y, NkiTensor) and not _onchip(y):
        fail("element-wise ops take SBUF/PSUM tiles; nl.load the HBM tensor first")
    if _is_scalar(x) and _is_scalar(y):
        fail("element-wise op of two scalars")
    if isinstance(x, NkiTensor) and isinstance(y, NkiTensor):
        x, y = _broadcast_pair(x, y)
    if _is_scalar(x) or (isinstance(y, NkiTensor) and _is_col(x, y)):
        return _tensor_scalar(y, alu, x, reverse=True, dtype=dtype, mask=mask)
    if _is_scalar(y) or _is_col(y, x):
        return _tensor_scalar(x, alu, y, dtype=dtype, mask=mask)
    if not isinstance(x, NkiTensor) or not isinstance(y, NkiTensor):
        fail("unsupported operands %r and %r" % (x, y))
    if x.shape != y.shape:
        xs, ys = _squeeze_shape(x.shape), _squeeze_shape(y.shape)
        if xs != ys:
            fail("shapes %s and %s do not match (trnemu broadcasts only [P, 1] tiles and scalars)"
                 % (x.shape, y.shape))
    out_dt = dtype or (float32 if alu in _CMP else _dtypes.promote(x.dtype, y.dtype))
    out = ndarray(x.shape, out_dt, sbuf)
    d, a, b = _apply_mask(mask, out, x, y) or (None, None, None)
    if d is not None:
        tr.emit("dve", "tensor_tensor", {"dst": d}, {"data1": a, "data2": b},
                [("dst", d), ("data1", a), ("data2", b), ("op", alu)])
    return out


def _broadcast_pair(x, y):
    """NumPy broadcasting of two 2-D tiles: a [1, F] (or [1, 1]) tile is
    spread across the partitions (nl.broadcast_to); a [P, 1] column stays
    a column (the tensor_scalar form broadcasts it along the free axis)."""
    if x.shape == y.shape or _squeeze_shape(x.shape) == _squeeze_shape(y.shape):
        return x, y
    if len(x.shape) != 2 or len(y.shape) != 2:
        return x, y
    p = builtins.max(x.shape[0], y.shape[0])
    out = []
    for t in (x, y):
        if t.shape[0] not in (1, p):
            fail("shapes %s and %s do not match (nor broadcast)" % (x.shape, y.shape))
        if t.shape[0] == 1 and p > 1:
            from ._shapes import broadcast_to
            t = broadcast_to(t, (p, t.shape[1]))
        out.append(t)
    x, y = out
    if x.shape[1] not in (1, y.shape[1]) and y.shape[1] != 1:
        fail("shapes %s and %s do not match (nor broadcast)" % (x.shape, y.shape))
    return x, y


def _squeeze_shape(s):
    return tuple(v for v in s if v != 1)


def _tensor_scalar(x, alu, s, reverse=False, dtype=None, mask=None, engine="dve"):
    tr = current()
    out_dt = dtype or (float32 if alu in _CMP else
                       (x.dtype if not isinstance(s, float) or _dtypes.info(x.dtype).is_float
                        else float32))
    out = ndarray(x.shape, out_dt, sbuf)
    views = _apply_mask(mask, out, x)
    if views is None:
        return out
    d, a = views
    ins = {"data": a}
    args = [("dst", d), ("data", a), ("op0", alu)]
    if isinstance(s, NkiTensor):
        ins["operand0"] = s
        args.append(("operand0", s))
    else:
        args.append(("operand0", _fmt_value(s)))
    if reverse:
        args.append(("reverse0", None))
    tr.emit(engine, "tensor_scalar", {"dst": d}, ins, args)
    return out


def _inplace(t, other, alu):
    """t op= other: a matmul result accumulates into PSUM; else element-wise."""
    tr = current()
    p = tr.pending
    if (alu == "add" and isinstance(other, NkiTensor) and p is not None and p.op == "nc_matmul"
            and p.outs["dst"] is other and t.buffer == "psum"
            and other.storage.offset is None and sys.getrefcount(other) <= _TEMP_REFS):
        _retarget(p, t, accumulate=_core.psum_written(t))
        return t
    if isinstance(other, NkiTensor) and not _onchip(other):
        fail("in-place ops take SBUF/PSUM tiles")
    if not _onchip(t):
        fail("in-place update of an HBM tensor; use nl.store")
    if _is_scalar(other) or _is_col(other, t):
        ins = {"data": t}
        args = [("dst", t), ("data", t), ("op0", alu)]
        if isinstance(other, NkiTensor):
            ins["operand0"] = other
            args.append(("operand0", other))
        else:
            args.append(("operand0", _fmt_value(other)))
        tr.emit("dve", "tensor_scalar", {"dst": t}, ins, args)
    else:
        if other.shape != t.shape and _squeeze_shape(other.shape) != _squeeze_shape(t.shape):
            fail("shapes %s and %s do not match" % (t.shape, other.shape))
        tr.emit("dve", "tensor_tensor", {"dst": t}, {"data1": t, "data2": other},
                [("dst", t), ("data1", t), ("data2", other), ("op", alu)])
    return t


def negative(x, dtype=None, mask=None, **kw):
    _no_mask(mask, "negative")
    return _tensor_scalar(x, "multiply", -1.0, dtype=dtype)


def invert(x, dtype=None, **kw):
    """Bitwise NOT of an integer tile."""
    return _tensor_scalar(x, "invert", 0.0, dtype=dtype)


def logical_not(x, dtype=None, **kw):
    return _tensor_scalar(x, "logical_not", 0.0, dtype=dtype or float32)


def where(condition, x, y, dtype=None, **kw):
    """x where condition is non-zero, else y (tiles or a scalar y)."""
    tr = current()
    shape = condition.shape
    out = ndarray(shape, dtype or (x.dtype if isinstance(x, NkiTensor) else float32), sbuf)
    if isinstance(y, NkiTensor):
        _assign(out, y)
    else:
        _memset(out, y)
    args, ins = [("dst", out)], {"predicate": condition}
    if isinstance(x, NkiTensor):
        ins["src"] = x
        args.append(("src", x))
    else:
        args.append(("src", _fmt_value(x)))
    args.append(("predicate", condition))
    tr.emit("dve", "tensor_copy_predicated", {"dst": out}, ins, args, rmw=True)
    return out


def dropout(x, rate, dtype=None, **kw):
    """Zero each element with probability rate (a number or a [P, 1] tile)."""
    tr = current()
    out = ndarray(x.shape, dtype or x.dtype, sbuf)
    ins, args = {"data": x}, [("dst", out), ("data", x)]
    if isinstance(rate, NkiTensor):
        ins["prob"] = rate
        args.append(("prob", rate))
    else:
        args.append(("prob", _fmt_value(rate)))
    tr.emit("dve", "dropout", {"dst": out}, ins, args)
    return out


def fmod(x, y, dtype=None, **kw):
    """Remainder of x / y with the dividend's sign (C fmod):
    sign(x) * (|x| mod |y|), exact, as the ISA's mod of two non-negative
    values is."""
    ax = _abs_of(x)
    ay = _abs_of(y) if isinstance(y, NkiTensor) else builtins.abs(float(y))
    r = _binary("mod", ax, ay, float32)
    sx = _sign_of(x)
    return _binary("multiply", r, sx, dtype or _operand_dtype(x, y))


fmod._alu = "fmod"      # not an ALU operator: nki.isa calls refuse it


def _abs_of(x):
    return _scalar_act(x, "abs")


def _sign_of(x):
    return _scalar_act(x, "sign")


def _scalar_act(x, func):
    from ._math import _activation
    return _activation(func, x, dtype=float32)


def _operand_dtype(x, y):
    if isinstance(x, NkiTensor) and isinstance(y, NkiTensor):
        return _dtypes.promote(x.dtype, y.dtype)
    return x.dtype if isinstance(x, NkiTensor) else y.dtype


def _abs_pick(x, y, cmp, dtype):
    """x where |x| cmp |y| holds, else y (tiles of one shape, or a scalar y)."""
    pred = _binary(cmp, _abs_of(x), _abs_of(y) if isinstance(y, NkiTensor) else builtins.abs(float(y)),
                   float32)
    return where(pred, x, y, dtype=dtype or _operand_dtype(x, y))


def abs_max(x, y, dtype=None, **kw):
    """Element-wise: x if |x| > |y|, else y."""
    return _abs_pick(x, y, "greater", dtype)


def abs_min(x, y, dtype=None, **kw):
    """Element-wise: x if |x| < |y|, else y."""
    return _abs_pick(x, y, "less", dtype)


abs_max._alu = "abs_max"    # the ISA operator (NeuronCore-v4) when passed to nki.isa calls
abs_min._alu = "abs_min"


class _Operator:
    """An operator constant for nki.isa calls (nl.bypass)."""

    def __init__(self, name, alu):
        self.__name__ = name
        self._alu = alu      # the ISA ALU operator

    def __repr__(self):
        return "nki.language." + self.__name__


bypass = _Operator("bypass", "bypass")    # no operation (an op0/op1 that passes data through)
average = _Operator("average", "average")  # the mean, as a reduction operator
