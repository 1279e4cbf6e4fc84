"""nki.language math: the Scalar Engine activation functions, reciprocal,
functions composed from them (floor, ceil, tan), and matmul and transpose
on the Tensor Engine."""
import copy as _pycopy
import math

from .. import _core, _dtypes
from .._core import NkiTensor, current, fail, fail_hw
from .._core.context import PSUM_BYTES
from ._creation import _onchip, _operand, ndarray
from ._elementwise import _binary, _tensor_scalar, negative
from ._memory import _apply_mask, _no_mask, copy
from ._types import float32, psum, sbuf, tile_size


_ACT = {}


def _act_fn(name, func, bias=0.0):
    def fn(x, dtype=None, mask=None, **kw):
        return _activation(func, x, dtype=dtype, mask=mask, bias=bias)
    fn.__name__ = name
    fn._act = func
    fn._bias = bias
    fn.__doc__ = "Element-wise %s on the Scalar Engine." % name
    if name in _ALU_TOO:
        fn._alu = name       # also an ALU operator of nki.isa calls (op0=nl.abs)
    _ACT[name] = fn
    return fn


# functions that are also ALU operators (docs/isa.md; square and relu need NeuronCore-v4)
_ALU_TOO = ("abs", "rsqrt", "square", "relu")


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
sin = _act_fn("sin", "sin")
cos = _act_fn("cos", "sin", bias=math.pi / 2)
arctan = _act_fn("arctan", "arctan")
square = _act_fn("square", "square")
abs = _act_fn("abs", "abs")
sign = _act_fn("sign", "sign")
identity = _act_fn("identity", "copy")
prelu = _act_fn("prelu", "prelu")      # x > 0 ? x : alpha * x (alpha: nisa.activate2 relu_param)
copy_act = identity


def rsqrt(x, dtype=None, mask=None, **kw):
    """1/sqrt(x) element-wise on the GpSimd engine, as nl.rsqrt runs from
    NKI 0.5.0 on (`tensor_scalar` with op0=rsqrt, docs/isa.md: IEEE
    1/sqrtf); GpSimd reads no PSUM, so a PSUM tile is refused. As an op=
    of nisa.activation it is the Scalar Engine's function."""
    if not isinstance(x, NkiTensor) or not _onchip(x):
        fail("math functions take SBUF/PSUM tiles")
    if x.buffer == "psum":
        fail("nl.rsqrt runs on the GpSimd engine, which cannot read PSUM: copy the tile to SBUF "
             "first, or call nisa.activation(op=nl.rsqrt) on the Scalar Engine")
    return _tensor_scalar(x, "rsqrt", 0.0, dtype=dtype, mask=mask, engine="pool")


rsqrt._act = rsqrt._alu = "rsqrt"
rsqrt._bias = 0.0
_ACT["rsqrt"] = rsqrt


def reciprocal(x, dtype=None, mask=None, **kw):
    _no_mask(mask, "reciprocal")
    tr = current()
    out = ndarray(x.shape, dtype or (x.dtype if _dtypes.info(x.dtype).is_float else float32), sbuf)
    tr.emit("dve", "reciprocal", {"dst": out}, {"data": x}, [("dst", out), ("data", x)])
    return out


reciprocal._act = "reciprocal"
reciprocal._bias = 0.0


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
        if isinstance(v, NkiTensor) or (v is not None and float(v) != dflt):
            _operand(nm, v, args, ins)
    outs = {"dst": d}
    if reduce is not None:   # (op, reduce_res or None, accumulator command; default reset_reduce)
        op, res, cmd = (*reduce, "reset_reduce")[:3]
        args += [("reduce_op", op), ("reduce_cmd", cmd)]
        if res is not None:
            outs["reduce_res"] = res
            args.append(("reduce_res", res))
    tr.emit("act", "activation", outs, ins, args)
    return out


def floor(x, dtype=None, **kw):
    """floor(x) = x - (x mod 1) (the mod of docs/isa.md has the divisor's sign)."""
    frac = _tensor_scalar(x, "mod", 1.0, dtype=float32)
    return _binary("subtract", x, frac, dtype or x.dtype)


def ceil(x, dtype=None, **kw):
    """ceil(x) = -floor(-x)."""
    return negative(floor(negative(x)), dtype=dtype or x.dtype)


def tan(x, dtype=None, **kw):
    return _binary("divide", sin(x), cos(x), dtype)


def _matmul(stationary, moving, dst=None, double_row=False):
    """dst[M, N] = stationary[K, M]^T x moving[K, N] on the Tensor Engine.
    With double_row the operands are [K, 2, M] and [K, 2, N]: a contraction
    of 2K split between the partitions and the pair dimension (the caller,
    nki.isa.nc_matmul, has checked the mode's other rules)."""
    tr = current()
    if isinstance(stationary, NkiTensor) and stationary.buffer == "psum":
        stationary = copy(stationary)     # the Tensor Engine reads SBUF only
    if isinstance(moving, NkiTensor) and moving.buffer == "psum":
        moving = copy(moving)
    for nm, t in (("stationary", stationary), ("moving", moving)):
        if not isinstance(t, NkiTensor) or t.buffer != "sbuf":
            fail("matmul operand '%s' must be an SBUF tile" % nm)
        if double_row and len(t.shape) != 3:
            fail("matmul operand '%s' must be [K, 2, x] in double_row mode, got shape %s"
                 % (nm, t.shape))
        if len(t.shape) < 2:
            fail("matmul operand '%s' must have a free dimension, got shape %s" % (nm, t.shape))
    # more than one free dimension: they are flattened, as the Tensor Engine
    # reads an operand's free elements in order (a [K, 1, M] tile is [K, M])
    k1, m = stationary.shape[0], _free_size(stationary, double_row)
    k2, n = moving.shape[0], _free_size(moving, double_row)
    if k1 != k2:
        fail("matmul contraction sizes differ: %d (stationary) and %d (moving)" % (k1, k2))
    if k1 > 128 or m > 128:
        fail_hw("matmul stationary is %s; at most [128, %s128]" % (list(stationary.shape),
                                                                  "2, " if double_row else ""))
    n_max = _moving_max(tr.gen, dst)
    if n > n_max:
        fail_hw("matmul moving free size %d exceeds %d (%s)" % (
            n, n_max, "nl.tile_size.gemm_moving_fmax" if tr.gen < 4 else
            "NeuronCore-v4: a dst row of the whole PSUM partition"))
    if double_row:
        stationary, moving = _pair_first(stationary), _pair_first(moving)
    out = dst if dst is not None else ndarray((m, n), float32, psum)
    tr.emit("pe", "nc_matmul", {"dst": out}, {"stationary": stationary, "moving": moving},
            [("dst", out), ("stationary", stationary), ("moving", moving)])
    return out


def _free_size(t, double_row):
    """The matmul size an operand gives: its free elements (double_row:
    those after the pair dimension)."""
    return int(math.prod(t.shape[2:] if double_row else t.shape[1:]))


def _moving_max(gen, dst):
    """The most moving columns one nc_matmul takes: one fp32 PSUM bank
    (tile_size.gemm_moving_fmax) before NeuronCore-v4; on v4 a dst row may
    fill the partition's PSUM, 4096 fp32 or 8192 bf16 columns (the
    nc_matmul reference)."""
    if gen < 4:
        return tile_size.gemm_moving_fmax
    bf16 = isinstance(dst, NkiTensor) and _dtypes.info(dst.dtype).name == "bfloat16"
    return PSUM_BYTES // (2 if bf16 else 4)


def _pair_first(t):
    """The same view of a [K, 2, x] double_row operand, written with its
    pair dimension kept as the first free dimension of the access pattern
    (the ISA reads the pair from there; merging it into the x elements
    would hide it)."""
    free = _core.free_dims(t)
    v = _pycopy.copy(t)
    v._dims = [list(free[0])] + _core._merge(free[1:])
    v._nomerge = True
    return v


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


def trunc(x, dtype=None, **kw):
    """Round toward zero: sign(x) * floor(|x|), floor(a) = a - (a mod 1)."""
    a = _activation("abs", x, dtype=float32)
    fl = _binary("subtract", a, _tensor_scalar(a, "mod", 1.0, dtype=float32), float32)
    return _binary("multiply", fl, _activation("sign", x, dtype=float32), dtype or x.dtype)


def gelu_apprx_sigmoid_dx(x, dtype=None, **kw):
    """Derivative of gelu_apprx_sigmoid (x * sigmoid(1.702 x)):
    s + 1.702 x s (1 - s), s = sigmoid(1.702 x)."""
    s = _activation("sigmoid", x, dtype=float32, scale=1.702)
    one_minus = _tensor_scalar(s, "subtract", 1.0, reverse=True, dtype=float32)
    xs = _binary("multiply", _tensor_scalar(x, "multiply", 1.702, dtype=float32), s, float32)
    return _binary("add", s, _binary("multiply", xs, one_minus, float32), dtype or x.dtype)
