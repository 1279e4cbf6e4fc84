"""nki.language creation: new tensors (ndarray, zeros, full, ...), the
identity matrix, random tiles, constants in the NEFF, and the memset and
value formatting helpers they share."""
import math

import numpy as np

from .. import _core, _dtypes
from .._core import NkiTensor, current, fail
from ._types import MemoryRegion, _ParDim, float32, sbuf, uint8


def _buf(buffer):
    if buffer is None:
        return "sbuf"
    return buffer.value if isinstance(buffer, MemoryRegion) else buffer


def ndarray(shape, dtype, buffer=None, name="", address=None, **kwargs):
    """A new tensor (uninitialised) on buffer (default SBUF); an on-chip
    tile may be placed by hand with address=(partition, byte offset)."""
    return _core.new_tensor(_shape(shape), dtype, _buf(buffer), name or None, address)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),) if not isinstance(shape, _ParDim) else (shape,)
    return tuple(shape)


def empty_like(x, dtype=None, buffer=None, **kw):
    return ndarray(x.shape, dtype or x.dtype, buffer or (x.buffer if x.buffer in ("sbuf", "psum") else "sbuf"))


def full(shape, fill_value, dtype, buffer=None, name="", **kw):
    t = ndarray(shape, dtype, buffer, name)
    _memset(t, fill_value)
    return t


def zeros(shape, dtype, buffer=None, name="", **kw):
    t = ndarray(shape, dtype, buffer, name)
    if t.buffer == "psum":
        current().defer_zero(t)   # an accumulation group's first matmul clears it
    else:
        _memset(t, 0.0)
    return t


def ones(shape, dtype, buffer=None, name="", **kw):
    return full(shape, 1.0, dtype, buffer, name)


def zeros_like(x, dtype=None, buffer=None, **kw):
    return zeros(x.shape, dtype or x.dtype, buffer or "sbuf")


def ones_like(t, dtype=None, buffer=None, **kw):
    return ones(t.shape, dtype or t.dtype, buffer or "sbuf")


def shared_identity_matrix(n, dtype=uint8, dst=None, **kw):
    """An n x n identity tile in SBUF (built with iota and a compare), of
    dtype (the reference's default uint8), or written into dst."""
    t = dst if dst is not None else ndarray((n, n), dtype, sbuf)
    if tuple(t.shape) != (n, n):
        fail("shared_identity_matrix(n=%d) into dst of shape %s" % (n, tuple(t.shape)))
    idx = ndarray((n, n), float32, sbuf)
    tr = current()
    tr.emit("pool", "iota", {"dst": idx}, {}, [("dst", idx), ("pattern", "[[1,%d]]" % n),
                                              ("channel_multiplier", -1)])
    tr.emit("dve", "tensor_scalar", {"dst": t}, {"data": idx},
            [("dst", t), ("data", idx), ("op0", "equal"), ("operand0", 0.0)])
    return t


def _is_scalar(x):
    return isinstance(x, (int, float, np.number, bool))


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


def _operand(nm, v, args, ins):
    """Operand nm of an instruction: a tile is an input and an argument, a
    number an argument only (formatted)."""
    if isinstance(v, NkiTensor):
        ins[nm] = v
        args.append((nm, v))
    else:
        args.append((nm, _fmt_value(v)))


def rand(shape, dtype=float32, buffer=None, **kw):
    """Uniform random values in [0, 1) from the Vector Engine generator."""
    t = ndarray(shape, dtype, buffer)
    current().emit("dve", "rand2", {"dst": t}, {}, [("dst", t), ("min", "0"), ("max", "1")])
    return t


def shared_constant(constant, dtype=None, **kw):
    """An HBM tensor holding data (a NumPy array, or the path of a .npy
    file), stored in the NEFF."""
    tr = current()
    data = constant
    if isinstance(constant, (str, bytes)) or hasattr(constant, "__fspath__"):
        try:
            data = np.load(constant, allow_pickle=False)
        except (OSError, ValueError) as e:
            fail("shared_constant cannot read %r as a .npy file: %s" % (constant, e))
    arr = np.asarray(data)
    di = _dtypes.info(dtype if dtype is not None else getattr(data, "nki_dtype", None) or arr.dtype)
    if di.name == "bfloat16" and getattr(data, "nki_dtype", None) is None:
        from .. import _kernel
        arr = _kernel.bf16(arr.astype(np.float32))
    host = np.ascontiguousarray(arr.astype(di.host) if arr.dtype != di.host else arr)
    t = _core.new_tensor(host.shape, di.public, "const", None)
    t.storage.role = "const"
    tr.consts.append((t.storage.name, di, host.shape, host.tobytes()))
    return t


def random_seed(seed, **kw):
    """Seed the Vector Engine's random generator (nl.rand, nl.dropout) from
    the 32-bit value of a [1, 1] SBUF/PSUM tile: the same seed gives the
    same numbers."""
    if not isinstance(seed, NkiTensor) or int(np.prod(seed.shape)) != 1:
        fail("random_seed takes a [1, 1] tile holding the seed, got %r" % (seed,))
    current().emit("dve", "set_rng_seed", {}, {"src_seeds": seed}, [("src_seeds", seed)])
