"""_dtypes.py: the data types of the NKI front end and their host forms.

Each NKI dtype maps to a trnemu ISA dtype name (docs/isa.md), an
nrt_dtype_t value and a NumPy type for host arrays. NumPy has no bfloat16
and no fp8: on the host they travel as their bit patterns (uint16 for
bfloat16, uint8 for the fp8 types); bf16_to_f32 / f32_to_bf16 convert.
"""
import numpy as np


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


bfloat16 = DType("bfloat16", "bf16", 6, "<u2", 2, True)
tfloat32 = DType("tfloat32", "f32r", 11, "<f4", 4, True)
float8_e4m3 = DType("float8_e4m3", "fp8e4", 14, "u1", 1, True)
float8_e5m2 = DType("float8_e5m2", "fp8e5", 15, "u1", 1, True)
float8_e3m4 = DType("float8_e3m4", "fp8e3", 13, "u1", 1, True)

# NumPy-representable types: (isa name, nrt_dtype_t value)
_NUMPY = {
    "float32": ("f32", 10), "float16": ("f16", 7),
    "int8": ("i8", 2), "uint8": ("u8", 3), "int16": ("i16", 4), "uint16": ("u16", 5),
    "int32": ("i32", 8), "uint32": ("u32", 9), "int64": ("i64", 12), "uint64": ("u64", 1),
    "bool": ("u8", 3),
}
_SPECIAL = {d.name: d for d in (bfloat16, tfloat32, float8_e4m3, float8_e5m2, float8_e3m4)}
_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "bool_": "bool"}
# float8_e4m3fn (OCP, no infinity) is a NeuronCore-v4 type distinct from
# float8_e4m3 (trnemu's fp8e4, docs/numerics.md): not an alias.


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


def info(dt):
    """Normalise any dtype spelling (NumPy dtype or type, string, DType)."""
    if isinstance(dt, DType):
        return Info(dt.name, dt.isa, dt.nrt, dt.host, dt.itemsize, dt.is_float, dt)
    if isinstance(dt, str):
        name = _ALIASES.get(dt, dt)
        if name in _SPECIAL:
            return info(_SPECIAL[name])
    else:
        try:
            name = np.dtype(dt).name
        except TypeError:
            raise TypeError("not an NKI dtype: %r" % (dt,)) from None
    if name not in _NUMPY:
        raise TypeError("not an NKI dtype that trnemu has: %r" % (dt,))
    isa, nrt = _NUMPY[name]
    npdt = np.dtype(name)
    return Info(name, isa, nrt, npdt, npdt.itemsize, npdt.kind == "f", npdt)


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
    """float32 array -> bfloat16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, np.uint16(0x7FC0), r)


def bf16_to_f32(b):
    """bfloat16 bit patterns (uint16) -> float32 array."""
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
