"""nki.language: the NKI language on trnemu (docs/nki.md has the status
of every name). Buffers, dtypes, tensor creation, loads and stores,
element-wise arithmetic and math, reductions, matmul, transpose, loops,
SPMD program ids, legacy index grids and the tile-size constants."""
import builtins
import math
import sys

import numpy as np

from . import _core, _dtypes
from ._core import NkiTensor, IndexExpr, Mask, fail, current

# ------------------------------------------------------------ data types
bool_ = np.dtype("bool")
int8, int16, int32 = np.dtype("int8"), np.dtype("int16"), np.dtype("int32")
uint8, uint16, uint32 = np.dtype("uint8"), np.dtype("uint16"), np.dtype("uint32")
float16, float32 = np.dtype("float16"), np.dtype("float32")
bfloat16 = _dtypes.bfloat16
tfloat32 = _dtypes.tfloat32
float8_e4m3 = _dtypes.float8_e4m3
float8_e5m2 = _dtypes.float8_e5m2
float8_e3m4 = _dtypes.float8_e3m4
fp32 = float32

# ------------------------------------------------------------ buffers
sbuf = "sbuf"
psum = "psum"
hbm = "hbm"
private_hbm = "private_hbm"
shared_hbm = "shared_hbm"


class tile_size:
    """Hardware tile limits (NeuronCore-v2/v3)."""
    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    total_available_sbuf_size = _core.SBUF_BYTES


class _ParDim(int):
    _par_dim = True


def par_dim(n):
    """Mark a dimension of an on-chip tensor shape as its partition dim."""
    return _ParDim(n)


# ------------------------------------------------------------ loops, SPMD

def affine_range(start, stop=None, step=1, **kwargs):
    """Iterations without loop-carried dependencies; unrolled by the tracer."""
    return builtins.range(start, stop, step) if stop is not None else builtins.range(start)


sequential_range = affine_range
static_range = affine_range


class nc:
    """Logical NeuronCore sharding of a launch-grid dimension: nc(2)."""

    def __init__(self, n):
        self.n = int(n)   # physical cores the dimension is spread over


class _SpmdDim(int):
    """A launch-grid dimension of spmd_dim(...): the product of its factors;
    nc is the number of physical cores it is sharded over."""
    nc = 1


def spmd_dim(*factors):
    """A launch-grid dimension made of factors (ints and nc(n)); its size is
    their product. The programs are spread over the nc(n) physical cores of
    the logical core when the machine's LNC has them (else run on one)."""
    n, cores = 1, 1
    for f in factors:
        n *= f.n if isinstance(f, nc) else int(f)
        if isinstance(f, nc):
            cores *= f.n
    d = _SpmdDim(n)
    d.nc = cores
    return d


def program_id(axis=0):
    tr = current()
    if not 0 <= axis < len(tr.grid):
        fail("program_id(%d) outside a launch grid of %d dimensions" % (axis, len(tr.grid)))
    return tr.program[axis]


def num_programs(axes=0):
    tr = current()
    if isinstance(axes, (tuple, list)):
        return tuple(tr.grid[a] for a in axes)
    return tr.grid[axes] if axes < len(tr.grid) else 1


def program_ndim():
    return len(current().grid)


def ds(start, size):
    """A dynamic slice start:start+size (static on trnemu)."""
    return slice(start, start + size)


# ------------------------------------------------------- index grids

def arange(*args):
    r = builtins.range(*args)
    return IndexExpr(r.start, {(0, 1): [r.step, len(r)]})


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        out = []
        for i, k in enumerate(key):
            r = builtins.range(k.start or 0, k.stop, k.step or 1)
            out.append(IndexExpr(r.start, {(i, len(key)): [r.step, len(r)]}))
        return tuple(out) if len(out) > 1 else out[0]


mgrid = _MGrid()


# --------------------------------------------------------- creation

def _buf(buffer):
    if buffer is None:
        return "sbuf"
    return buffer


def ndarray(shape, dtype, buffer=None, name="", **kwargs):
    """A new tensor (uninitialised) on buffer (default SBUF)."""
    return _core.new_tensor(_shape(shape), dtype, _buf(buffer), name or None)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),) if not isinstance(shape, _ParDim) else (shape,)
    return tuple(shape)


def empty_like(t, dtype=None, buffer=None, **kw):
    return ndarray(t.shape, dtype or t.dtype, buffer or (t.buffer if t.buffer in ("sbuf", "psum") else "sbuf"))


def full(shape, fill_value, dtype, buffer=None, name="", **kw):
    t = ndarray(shape, dtype, buffer, name)
    _memset(t, fill_value)
    return t


def zeros(shape, dtype, buffer=None, name="", **kw):
    return full(shape, 0.0, dtype, buffer, name)


def ones(shape, dtype, buffer=None, name="", **kw):
    return full(shape, 1.0, dtype, buffer, name)


def zeros_like(t, dtype=None, buffer=None, **kw):
    return zeros(t.shape, dtype or t.dtype, buffer or "sbuf")


def ones_like(t, dtype=None, buffer=None, **kw):
    return ones(t.shape, dtype or t.dtype, buffer or "sbuf")


def shared_identity_matrix(n, dtype=float32, **kw):
    """An n x n identity tile in SBUF (built with iota and a compare)."""
    t = ndarray((n, n), dtype, sbuf)
    idx = ndarray((n, n), float32, sbuf)
    tr = current()
    tr.emit("pool", "iota", {"dst": idx}, {}, [("dst", idx), ("pattern", "[[1,%d]]" % n),
                                              ("channel_multiplier", -1)])
    tr.emit("dve", "tensor_scalar", {"dst": t}, {"data": idx},
            [("dst", t), ("data", idx), ("op0", "equal"), ("operand0", 0.0)])
    return t


def _onchip(t):
    return t.buffer in ("sbuf", "psum")


def _memset(t, value):
    tr = current()
    if not _onchip(t):
        fail("filling an HBM tensor is not supported; fill an SBUF tile and store it")
    tr.emit("dve", "memset", {"dst": t}, {}, [("dst", t), ("value", _fmt_value(value))])


def _fmt_value(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


# ---------------------------------------------------- loads and stores

def _no_mask(mask, what):
    """A mask= this call cannot apply is refused rather than ignored."""
    if mask is not None:
        fail("mask= is not supported on %s by trnemu's NKI front end yet" % what)


def _check_same_elems(a, b, what):
    if int(np.prod(a.shape)) != int(np.prod(b.shape)):
        fail("%s: shapes %s and %s do not match" % (what, a.shape, b.shape))


def _dma(dst, src):
    tr = current()
    _check_same_elems(dst, src, "DMA")
    if _onchip(dst) and _onchip(src):
        if len(dst.shape) and dst.shape[0] != src.shape[0]:
            pass
    args = [("dst", dst), ("src", src)]
    if _dtypes.info(dst.dtype).name != _dtypes.info(src.dtype).name:
        args.append(("op", "cast"))
    # loads queue on the sync engine, stores on GpSimd: a store waiting for
    # its compute does not hold up the next tile's loads
    eng = "pool" if dst.buffer == "hbm" and _onchip(src) else "sp"
    return tr.emit(eng, "dma_copy", {"dst": dst}, {"src": src}, args)


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
        fail("nl.load of shape %s: the first (partition) dimension exceeds %d (nl.tile_size.pmax)"
             % (shape, _core.NUM_PARTITIONS))
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
    tr = current()
    tr.emit("sp", "dma_transpose", {"dst": t}, {"src": src}, [("dst", t), ("src", src)])
    return t


def _as_tile(value, shape, dtype):
    """A tile from a tile or a Python number (memset)."""
    if isinstance(value, NkiTensor):
        return value
    if isinstance(value, (int, float, np.number, bool)):
        return full(shape, value, dtype)
    fail("expected a tile or a number, got %r" % (value,))


# ------------------------------------------------------- element-wise

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
fmod = _alu_fn("fmod", "mod")
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


def _is_scalar(x):
    return isinstance(x, (int, float, np.number, bool))


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
        _retarget(p, t, accumulate=t.storage.written)
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


# References to a result tile that is only a temporary of the expression
# `view[...] = f(...)` / `psum += matmul(...)`, seen from _assign/_inplace:
# the caller's operand, the two parameters on the way, getrefcount's
# argument and the pending instruction's dst and argument list. One more
# means the kernel keeps the tile (a name, a list), so it must be written.
_TEMP_REFS = 6


def _retarget(insn, view, accumulate=False):
    """Make the pending instruction write view instead of its fresh tile."""
    old = insn.outs["dst"]
    if int(np.prod(old.shape)) != int(np.prod(view.shape)):
        fail("cannot assign a result of shape %s to a view of shape %s" % (old.shape, view.shape))
    insn.outs["dst"] = view
    insn.args = [(n, view if v is old else v) for n, v in insn.args]
    if insn.op == "dma_copy":
        src = insn.ins["src"]
        insn.args = [a for a in insn.args if a[0] != "op"]
        if _dtypes.info(src.dtype).name != _dtypes.info(view.dtype).name:
            insn.args.append(("op", "cast"))
    if accumulate:
        insn.args.append(("accumulate", None))
        insn.rmw = True
    view.storage.written = True
    current().flush()


def _assign(view, value):
    """view[...] = value."""
    tr = current()
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


# ------------------------------------------------------------- math

_ACT = {}


def _act_fn(name, func, bias=0.0):
    def fn(x, dtype=None, mask=None, **kw):
        return _activation(func, x, dtype=dtype, mask=mask, bias=bias)
    fn.__name__ = name
    fn._act = func
    fn._bias = bias
    fn.__doc__ = "Element-wise %s on the Scalar Engine." % name
    _ACT[name] = fn
    return fn


exp = _act_fn("exp", "exp")
log = _act_fn("log", "log")
tanh = _act_fn("tanh", "tanh")
sigmoid = _act_fn("sigmoid", "sigmoid")
relu = _act_fn("relu", "relu")
gelu = _act_fn("gelu", "gelu")
gelu_dx = _act_fn("gelu_dx", "gelu_dx")
gelu_apprx_tanh = _act_fn("gelu_apprx_tanh", "gelu_apprx_tanh")
gelu_apprx_sigmoid = _act_fn("gelu_apprx_sigmoid", "gelu_apprx_sigmoid")
silu = _act_fn("silu", "silu")
silu_dx = _act_fn("silu_dx", "silu_dx")
softplus = _act_fn("softplus", "softplus")
mish = _act_fn("mish", "mish")
erf = _act_fn("erf", "erf")
erf_dx = _act_fn("erf_dx", "erf_dx")
sqrt = _act_fn("sqrt", "sqrt")
rsqrt = _act_fn("rsqrt", "rsqrt")
sin = _act_fn("sin", "sin")
cos = _act_fn("cos", "sin", bias=math.pi / 2)
arctan = _act_fn("arctan", "arctan")
square = _act_fn("square", "square")
abs = _act_fn("abs", "abs")
sign = _act_fn("sign", "sign")
identity = _act_fn("identity", "copy")
copy_act = identity


def reciprocal(x, dtype=None, mask=None, **kw):
    _no_mask(mask, "reciprocal")
    tr = current()
    out = ndarray(x.shape, dtype or (x.dtype if _dtypes.info(x.dtype).is_float else float32), sbuf)
    tr.emit("dve", "reciprocal", {"dst": out}, {"data": x}, [("dst", out), ("data", x)])
    return out


reciprocal._act = "reciprocal"
reciprocal._bias = 0.0


def negative(x, dtype=None, mask=None, **kw):
    _no_mask(mask, "negative")
    return _tensor_scalar(x, "multiply", -1.0, dtype=dtype)


def _activation(func, x, dtype=None, mask=None, bias=0.0, scale=1.0, reduce=None, dst=None):
    tr = current()
    if not isinstance(x, NkiTensor) or not _onchip(x):
        fail("math functions take SBUF/PSUM tiles")
    xi = _dtypes.info(x.dtype)
    out = dst if dst is not None else ndarray(x.shape, dtype or (x.dtype if xi.is_float else float32), sbuf)
    views = _apply_mask(mask, out, x)
    if views is None:
        return out
    d, a = views
    ins = {"data": a}
    args = [("dst", d), ("data", a), ("func", func)]
    for nm, v, dflt in (("bias", bias, 0.0), ("scale", scale, 1.0)):
        if isinstance(v, NkiTensor):
            ins[nm] = v
            args.append((nm, v))
        elif v is not None and float(v) != dflt:
            args.append((nm, _fmt_value(v)))
    outs = {"dst": d}
    if reduce is not None:
        op, res = reduce
        outs["reduce_res"] = res
        args += [("reduce_op", op), ("reduce_cmd", "reset_reduce"), ("reduce_res", res)]
    tr.emit("act", "activation", outs, ins, args)
    return out


# -------------------------------------------------------- reductions

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
    # data pattern: kept free dims first, reduced ones last (innermost)
    kept = [x.dims[i] for i in keep if i != x.pdim]
    red = [x.dims[i] for i in axes]
    rmerge = _core._merge(red)
    if len(kept) + len(rmerge) > 4:
        kept = _core._merge(kept)
    data = NkiTensor(x.storage, x.dtype, x.dims, x.pdim, x.part, x.off, x.pcount)
    data._dims = (kept + rmerge) if kept else rmerge
    args = [("dst", out), ("data", data), ("op", alu), ("axes", len(rmerge))]
    if negate:
        args.append(("negate", None))
    if keepdims:
        args.append(("keepdims", None))
    # the merged pattern must not be re-merged across the kept/reduced boundary
    data._nomerge = True
    tr.emit("dve", "tensor_reduce", {"dst": out}, {"data": data}, args)
    return out


def sum(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    _no_mask(mask, "reductions")
    return _reduce("add", x, axis, dtype, keepdims)


def max(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    _no_mask(mask, "reductions")
    return _reduce("max", x, axis, dtype, keepdims)


def min(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    _no_mask(mask, "reductions")
    return _reduce("min", x, axis, dtype, keepdims)


def mean(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    _no_mask(mask, "reductions")
    return _reduce("average", x, axis, dtype, keepdims)


def prod(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    _no_mask(mask, "reductions")
    return _reduce("multiply", x, axis, dtype, keepdims)


def all(x, axis, dtype=None, keepdims=False, mask=None, **kw):
    _no_mask(mask, "reductions")
    return _reduce("logical_and", x, axis, dtype or float32, keepdims)


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


# ------------------------------------------------ matmul and transpose

def _matmul(stationary, moving, dst=None):
    """dst[M, N] = stationary[K, M]^T x moving[K, N] on the Tensor Engine."""
    tr = current()
    if isinstance(stationary, NkiTensor) and stationary.buffer == "psum":
        stationary = copy(stationary)     # the Tensor Engine reads SBUF only
    if isinstance(moving, NkiTensor) and moving.buffer == "psum":
        moving = copy(moving)
    for nm, t in (("stationary", stationary), ("moving", moving)):
        if not isinstance(t, NkiTensor) or t.buffer != "sbuf":
            fail("matmul operand '%s' must be an SBUF tile" % nm)
        if len(t.shape) != 2:
            fail("matmul operand '%s' must be 2-D, got shape %s" % (nm, t.shape))
    k1, m = stationary.shape
    k2, n = moving.shape
    if k1 != k2:
        fail("matmul contraction sizes differ: %d (stationary) and %d (moving)" % (k1, k2))
    if k1 > 128 or m > 128:
        fail("matmul stationary is [%d, %d]; at most [128, 128]" % (k1, m))
    if n > 512:
        fail("matmul moving free size %d exceeds 512 (nl.tile_size.gemm_moving_fmax)" % n)
    out = dst if dst is not None else ndarray((m, n), float32, psum)
    tr.emit("pe", "nc_matmul", {"dst": out}, {"stationary": stationary, "moving": moving},
            [("dst", out), ("stationary", stationary), ("moving", moving)])
    return out


def matmul(x, y, transpose_x=False, mask=None, **kw):
    """x @ y into a new PSUM tile. With transpose_x, x is given as x^T [K, M]."""
    _no_mask(mask, "matmul")
    if not transpose_x:
        x = _to_sbuf(transpose(x))
    return _matmul(x, y)


def _to_sbuf(t):
    if t.buffer == "sbuf":
        return t
    return copy(t)


def transpose(x, dtype=None, mask=None, **kw):
    """2-D transpose of a tile on the Tensor Engine (into PSUM)."""
    _no_mask(mask, "transpose")
    tr = current()
    if len(x.shape) != 2 or not _onchip(x):
        fail("transpose takes a 2-D SBUF tile")
    p, f = x.shape
    if f > 128:
        fail("transpose: %d columns become partitions, at most 128" % f)
    out = ndarray((f, p), x.dtype, psum)
    src = _to_sbuf(x)
    tr.emit("pe", "nc_transpose", {"dst": out}, {"data": src}, [("dst", out), ("data", src)])
    if dtype is not None and _dtypes.info(dtype).name != _dtypes.info(x.dtype).name:
        return copy(out, dtype=dtype)
    return out


# ------------------------------------------------------------- misc

def device_print(prefix, x, **kw):
    fail("device_print is not supported by trnemu's NKI front end yet")


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


# ------------------------------------------------ more element-wise

def invert(x, dtype=None, **kw):
    """Bitwise NOT of an integer tile."""
    return _tensor_scalar(x, "invert", 0.0, dtype=dtype)


def logical_not(x, dtype=None, **kw):
    return _tensor_scalar(x, "logical_not", 0.0, dtype=dtype or float32)


def floor(x, dtype=None, **kw):
    """floor(x) = x - (x mod 1) (the mod of docs/isa.md has the divisor's sign)."""
    frac = _tensor_scalar(x, "mod", 1.0, dtype=float32)
    return _binary("subtract", x, frac, dtype or x.dtype)


def ceil(x, dtype=None, **kw):
    """ceil(x) = -floor(-x)."""
    return negative(floor(negative(x)), dtype=dtype or x.dtype)


def tan(x, dtype=None, **kw):
    return _binary("divide", sin(x), cos(x), dtype)


def var(x, axis, dtype=None, keepdims=False, **kw):
    """Population variance along free axes: mean((x - mean(x))^2)."""
    m = _reduce("average", x, axis, float32, keepdims=True)
    d = _binary("subtract", x, m, float32)
    return _reduce("average", square(d), axis, dtype or float32, keepdims)


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


def rand(shape, dtype=float32, buffer=None, **kw):
    """Uniform random values in [0, 1) from the Vector Engine generator."""
    t = ndarray(shape, dtype, buffer)
    current().emit("dve", "rand2", {"dst": t}, {}, [("dst", t), ("min", "0"), ("max", "1")])
    return t


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


def static_cast(x, dtype):
    """Convert: a NumPy array on the host (bfloat16 gives an nki.HostArray),
    or a tile on the device (a copy)."""
    if isinstance(x, NkiTensor):
        return copy(x, dtype=dtype)
    from . import _kernel
    di = _dtypes.info(dtype)
    if di.name == "bfloat16":
        return _kernel.bf16(np.asarray(x, dtype=np.float32))
    if not isinstance(di.public, np.dtype):
        fail("static_cast to %s on the host is not supported" % di.name)
    return np.asarray(x).astype(di.public)


def shared_constant(data, dtype=None, **kw):
    """An HBM tensor holding data (a NumPy array), stored in the NEFF."""
    tr = current()
    arr = np.asarray(data)
    di = _dtypes.info(dtype if dtype is not None else getattr(data, "nki_dtype", None) or arr.dtype)
    if di.name == "bfloat16" and getattr(data, "nki_dtype", None) is None:
        from . import _kernel
        arr = _kernel.bf16(arr.astype(np.float32))
    host = np.ascontiguousarray(arr.astype(di.host) if arr.dtype != di.host else arr)
    t = _core.new_tensor(host.shape, di.public, "const", None)
    t.storage.role = "const"
    tr.consts.append((t.storage.name, di, host.shape, host.tobytes()))
    return t


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
