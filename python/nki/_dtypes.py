"""_dtypes.py: the data types of the NKI front end and their host forms.

Each NKI dtype maps to a trnemu ISA dtype name (docs/isa.md), an
nrt_dtype_t value and a NumPy type for host arrays. NumPy has no bfloat16,
fp8 or fp4: their host dtypes come from ml_dtypes when it is importable
(the vendor's stack uses it), else from trnemu's extension nki._hostdtypes
(python/ext/, the same names, trnemu's numerics). Without either, bfloat16
and fp8 travel as bit patterns (uint16 / uint8 arrays with the NKI dtype
attached, nki.HostArray). docs/nki.md, "Host dtypes".
"""
import glob
import importlib.machinery
import importlib.util
import os
import sys

import numpy as np

from . import _env

# The host formats: ml_dtypes name -> (trnemu assembly name, nrt_dtype_t of
# an I/O tensor holding it). The NeuronCore-v4 formats have no nrt_dtype_t:
# their I/O tensors are declared as uint8 bytes (docs/numerics.md).
_FORMATS = {
    "bfloat16": ("bf16", 6),
    "float8_e4m3": ("fp8e4", 14),
    "float8_e5m2": ("fp8e5", 15),
    "float8_e3m4": ("fp8e3", 13),
    "float8_e4m3fn": ("fp8e4fn", 3),
    "float8_e8m0fnu": ("fp8e8m0", 3),
}
# Host formats with no device form of their own.
_HOST_ONLY = {
    "float4_e2m1fn": "a host array holds one 4-bit value per byte; kernels take fp4 "
                     "packed four to 16 bits (float4_e2m1fn_x4)",
}


def _ext_dirs():
    """Where a built (not installed) nki._hostdtypes may be: next to the
    libnrt.so.1 in use (<build>/shims -> <build>/python/ext), else the
    source tree's build/ directory."""
    libs = [os.environ.get("TRNEMU_LIBNRT", "")]
    libs += [p for p in os.environ.get("LD_PRELOAD", "").replace(" ", ":").split(":")
             if p.endswith("libnrt.so.1")]
    for lib in libs:
        if lib:
            yield os.path.join(os.path.dirname(os.path.abspath(lib)), "..", "python", "ext")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    yield os.path.join(here, "..", "build", "python", "ext")


def _load_extension():
    """trnemu's nki._hostdtypes: installed next to this package, else from
    a build tree; None when it was not built."""
    name = __package__ + "._hostdtypes"
    if name in sys.modules:
        return sys.modules[name]
    try:
        from . import _hostdtypes
        return _hostdtypes
    except ImportError:
        pass
    for d in _ext_dirs():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            for path in sorted(glob.glob(os.path.join(d, "_hostdtypes" + suffix))):
                spec = importlib.util.spec_from_file_location(name, path)
                try:
                    mod = importlib.util.module_from_spec(spec)
                    sys.modules[name] = mod
                    spec.loader.exec_module(mod)
                except ImportError:
                    sys.modules.pop(name, None)   # built for another Python: try the next
                    continue
                except BaseException:
                    sys.modules.pop(name, None)
                    raise
                return mod
    return None


def _load_host():
    """(module with the host scalar types, 'ml_dtypes' or 'trnemu'), or
    (None, None). TRNEMU_NKI_HOST_DTYPES=trnemu skips ml_dtypes."""
    if _env.read_choice("TRNEMU_NKI_HOST_DTYPES", ("trnemu", "ml_dtypes"), "ml_dtypes") != "trnemu":
        try:
            import ml_dtypes
            return ml_dtypes, "ml_dtypes"
        except ImportError:
            pass
    mod = _load_extension()
    return (mod, "trnemu") if mod is not None else (None, None)


_host_mod, HOST = _load_host()   # HOST: which implementation gives the host dtypes


def host_dtype(name):
    """The NumPy dtype of a host format ('bfloat16', 'float8_e4m3', ...),
    or None when there is none."""
    if name not in _FORMATS and name not in _HOST_ONLY:
        return None
    t = getattr(_host_mod, name, None)
    return np.dtype(t) if t is not None else None


class DType:
    """An NKI data type that NumPy cannot name (bfloat16, fp8, tfloat32)."""

    def __init__(self, name, isa, nrt, host, size, is_float):
        self.name = name          # the NKI name, e.g. 'bfloat16'
        self.isa = isa            # the trnemu assembly name, e.g. 'bf16'
        self.nrt = nrt            # nrt_dtype_t value
        self.host = np.dtype(host)  # NumPy type of its host bit pattern
        self.itemsize = size      # bytes per element
        self.is_float = is_float  # floating point or integer

    def __repr__(self):
        return "nki.language." + self.name

    def __eq__(self, other):
        try:
            return info(other).name == self.name
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.name)


tfloat32 = DType("tfloat32", "f32r", 11, "<f4", 4, True)
# The host formats: NumPy dtypes when ml_dtypes or nki._hostdtypes is
# there, else DType objects whose host arrays hold bit patterns.


def _format(name, host):
    """The public object of a host format: its NumPy dtype, else a DType
    whose host arrays hold the bits as host (uint16 or uint8)."""
    dt = host_dtype(name)
    if dt is not None:
        return dt
    isa, nrt = _FORMATS[name]
    return DType(name, isa, nrt, host, np.dtype(host).itemsize, True)


bfloat16 = _format("bfloat16", "<u2")
float8_e4m3 = _format("float8_e4m3", "u1")
float8_e5m2 = _format("float8_e5m2", "u1")
float8_e3m4 = _format("float8_e3m4", "u1")
# Host-only names (None without a host dtype implementation); nki.language
# re-exports them.
float8_e4m3fn = host_dtype("float8_e4m3fn")
float8_e8m0fnu = host_dtype("float8_e8m0fnu")
float4_e2m1fn = host_dtype("float4_e2m1fn")

# NumPy-representable types: (isa name, nrt_dtype_t value)
_NUMPY = {
    "float32": ("f32", 10), "float16": ("f16", 7),
    "int8": ("i8", 2), "uint8": ("u8", 3), "int16": ("i16", 4), "uint16": ("u16", 5),
    "int32": ("i32", 8), "uint32": ("u32", 9), "int64": ("i64", 12), "uint64": ("u64", 1),
    "bool": ("u8", 3),
}
_SPECIAL = {d.name: d for d in (bfloat16, tfloat32, float8_e4m3, float8_e5m2, float8_e3m4)
            if isinstance(d, DType)}
_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "bool_": "bool"}
# float8_e4m3fn (OCP, no infinity) is a NeuronCore-v4 type distinct from
# float8_e4m3 (trnemu's fp8e4, docs/numerics.md): not an alias.


def is_host_format(dt):
    """A NumPy dtype of one of the host formats (bfloat16, fp8, fp4)."""
    return isinstance(dt, np.dtype) and (dt.name in _FORMATS or dt.name in _HOST_ONLY)


class Info:
    """Everything the tracer needs about one dtype."""

    def __init__(self, name, isa, nrt, host, size, is_float, public):
        self.name = name          # canonical NKI name
        self.isa = isa            # trnemu assembly name
        self.nrt = nrt            # nrt_dtype_t value
        self.host = host          # NumPy dtype of host arrays
        self.size = size          # bytes per element
        self.is_float = is_float  # floating point
        self.public = public      # the object kernels see as tensor.dtype


_info_memo = {}   # (type, dtype spelling) -> Info: the tracer asks for a few dtypes many times
# id of a public dtype object -> the Info info() gives for that object (a
# tensor's dtype, asked for most): found without hashing it. The Info holds
# the object, so the id is never reused while the entry stands.
_public_memo = {}


def info(dt):
    """Normalise any dtype spelling (NumPy dtype or type, string, DType).
    The Info of one spelling is made once and shared (never change it)."""
    hit = _public_memo.get(id(dt))
    if hit is not None:
        return hit
    try:
        key = (type(dt), dt)
        hit = _info_memo.get(key)
    except TypeError:        # an unhashable spelling: never a dtype
        return _make_info(dt)
    if hit is None:
        hit = _info_memo[key] = _make_info(dt)
    if hit.public is dt:
        _public_memo[id(dt)] = hit
    return hit


def _make_info(dt):
    """The Info of one dtype spelling (info() keeps them)."""
    if isinstance(dt, DType):
        return Info(dt.name, dt.isa, dt.nrt, dt.host, dt.itemsize, dt.is_float, dt)
    if isinstance(dt, str):
        name = _ALIASES.get(dt, dt)
        if name in _SPECIAL:
            return _make_info(_SPECIAL[name])
        host = host_dtype(name)
        if host is not None:
            return _make_info(host)
    else:
        try:
            npdt = np.dtype(dt)
        except TypeError:
            raise TypeError("not an NKI dtype: %r" % (dt,)) from None
        name = npdt.name
        if name in _FORMATS and npdt.kind == "V":
            isa, nrt = _FORMATS[name]
            return Info(name, isa, nrt, npdt, npdt.itemsize, True, npdt)
        if name in _HOST_ONLY and npdt.kind == "V":
            raise TypeError("%s has no device dtype in trnemu: %s" % (name, _HOST_ONLY[name]))
    if name not in _NUMPY:
        raise TypeError("not an NKI dtype that trnemu has: %r" % (dt,))
    isa, nrt = _NUMPY[name]
    npdt = np.dtype(name)
    return Info(name, isa, nrt, npdt, npdt.itemsize, npdt.kind == "f", npdt)


class _AnyDTypeMeta(type):
    """isinstance(x, AnyDType): x is a dtype an NKI kernel can name."""

    def __instancecheck__(cls, obj):
        if not isinstance(obj, (DType, np.dtype)) and not (
                isinstance(obj, type) and issubclass(obj, np.generic)):
            return False
        try:
            info(obj)
        except TypeError:
            return False
        return True


class AnyDType(metaclass=_AnyDTypeMeta):
    """The type of NKI dtypes, as kernels annotate with `nki.dtype`: the
    DType objects and every NumPy dtype (host formats included) that
    trnemu's device has."""


def promote(a, b):
    """Result dtype of an element-wise op on two dtypes (NKI: same stays,
    otherwise the wider float, float32 by default)."""
    ia, ib = info(a), info(b)
    if ia.name == ib.name:
        return ia.public
    if ia.is_float or ib.is_float:
        if "float32" in (ia.name, ib.name) or not (ia.is_float and ib.is_float):
            return np.dtype("float32")
        return ia.public if ia.size >= ib.size else ib.public
    return np.result_type(ia.host, ib.host)


def f32_to_bf16(x):
    """float32 values -> bfloat16 bit patterns (uint16), rounded to nearest
    even as the engines round (emu/num): a NaN stays a quiet NaN with its
    sign and top payload bits. 32-bit temporaries only, one pass each."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32)
    t = u >> 16
    t &= 1
    t += u                  # wraps only past 0xFFFF8000, a NaN: replaced below
    t += 0x7FFF
    t >>= 16
    r = t.astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        r[nan] = (u[nan] >> 16).astype(np.uint16) | 0x40
    return r


def bf16_to_f32(b):
    """bfloat16 bit patterns (uint16) -> float32 array."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
