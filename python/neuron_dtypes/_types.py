"""_types.py: the data types neuron_dtypes knows and their facts: names,
sizes, float or not, finfo. A type is a NumPy dtype, one of trnemu's NKI
host types (nki._dtypes), or one defined here for what nki._dtypes lacks:
a ScalarType (a small float held one value per byte) or a PackedType (four
small floats in one element, the MX containers)."""
import functools

import numpy as np

from ._minifloat import Minifloat

# The small float formats, by layout (docs/numerics.md).
FORMATS = {
    "float8_e3m4": Minifloat("float8_e3m4", 3, 4, 3, "ieee"),
    "float8_e4m3": Minifloat("float8_e4m3", 4, 3, 7, "ieee"),
    "float8_e5m2": Minifloat("float8_e5m2", 5, 2, 15, "ieee"),
    "float8_e4m3fn": Minifloat("float8_e4m3fn", 4, 3, 7, "fn"),
    "float4_e2m1fn": Minifloat("float4_e2m1fn", 2, 1, 1, "none"),
}
# Packed MX containers: name -> (lane format, container dtype)
PACKED = {
    "float8_e4m3fn_x4": ("float8_e4m3fn", np.uint32),
    "float8_e5m2_x4": ("float8_e5m2", np.uint32),
    "float4_e2m1fn_x4": ("float4_e2m1fn", np.uint16),
}
LANES = 4                        # values per packed element
_WIDE = {"bfloat16": (np.uint16, 8, 7), "tfloat32": (np.float32, 8, 10)}  # container, exp, mantissa bits
_ALIASES = {"bf16": "bfloat16", "fp32": "float32", "fp16": "float16", "tf32": "tfloat32",
            "fp8_e4m3": "float8_e4m3", "fp8_e5m2": "float8_e5m2", "fp8_e3m4": "float8_e3m4",
            "bool": "bool", "bool_": "bool"}


class _Named:
    """A type known by its NKI name: equal to anything of the same name."""

    def __init__(self, name, container):
        self.name = name                          # the NKI name
        self.container = np.dtype(container)      # NumPy dtype of the host bit pattern
        self.itemsize = self.container.itemsize   # bytes per host element

    def __eq__(self, other):
        try:
            return dtype_name(other) == self.name
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "neuron_dtypes." + self.name


class ScalarType(_Named):
    """A small float held one value per byte (its code in the low bits)."""


class PackedType(_Named):
    """Four values of a small float format packed in one element, lane j
    in byte j (fp8) or nibble j (fp4) from the low end."""

    def __init__(self, name):
        lane, container = PACKED[name]
        super().__init__(name, container)
        self.lane = FORMATS[lane]        # the format of each lane
        self.lanes = LANES               # values per element


@functools.lru_cache(maxsize=None)
def nki_host_type(name):
    """The type object for an NKI name: trnemu's own (nki._dtypes) when it
    has one, else one defined here (one object per name)."""
    if name in PACKED:
        return PackedType(name)
    try:
        from nki import _dtypes
    except ImportError:
        _dtypes = None
    found = getattr(_dtypes, name, None)
    if found is not None:
        return found
    if name in FORMATS:
        return ScalarType(name, np.uint8)
    container = _WIDE[name][0]
    return ScalarType(name, container)


def dtype_name(dt):
    """The canonical name of a dtype given in any spelling (NumPy dtype or
    type, string, NKI or neuron_dtypes type object)."""
    if isinstance(dt, str):
        name = _ALIASES.get(dt, dt)
        if name in FORMATS or name in PACKED or name in _WIDE:
            return name
        return np.dtype(name).name
    name = getattr(dt, "name", None)
    if isinstance(name, str) and not isinstance(dt, np.dtype) and (
            name in FORMATS or name in PACKED or name in _WIDE):
        return name
    try:
        return np.dtype(dt).name
    except TypeError:
        raise TypeError("neuron_dtypes: not a data type: %r" % (dt,)) from None


def as_dtype(dt):
    """The neuron_dtypes type object (or NumPy dtype) for any spelling."""
    name = dtype_name(dt)
    if name in PACKED or name in FORMATS or name in _WIDE:
        return nki_host_type(name)
    return np.dtype(name)


def is_float_type(dt):
    """True for floating-point types (the small floats and packed ones too)."""
    name = dtype_name(dt)
    if name in FORMATS or name in PACKED or name in _WIDE:
        return True
    return np.dtype(name).kind == "f"


def sizeinbytes(dt):
    """Bytes one host element of the type takes (a packed type: its container)."""
    name = dtype_name(dt)
    if name in PACKED:
        return np.dtype(PACKED[name][1]).itemsize
    if name in FORMATS:
        return 1
    if name in _WIDE:
        return np.dtype(_WIDE[name][0]).itemsize if name != "tfloat32" else 4
    return np.dtype(name).itemsize


class FloatInfo:
    """Machine limits of a float type, named as numpy.finfo names them."""

    def __init__(self, dtype, bits, nexp, nmant, maxval, tiny, smallest_subnormal):
        self.dtype = dtype                              # the type these limits describe
        self.bits = bits                                # bits per value
        self.nexp = nexp                                # exponent bits
        self.nmant = nmant                              # mantissa bits
        self.eps = 2.0 ** -nmant                        # gap between 1 and the next value
        self.resolution = 10.0 ** -int(np.floor(nmant * np.log10(2)))  # decimal resolution
        self.max = maxval                               # largest finite value
        self.min = -maxval                              # most negative finite value
        self.tiny = self.smallest_normal = tiny         # smallest positive normal value
        self.smallest_subnormal = smallest_subnormal    # smallest positive value

    def __repr__(self):
        return "finfo(resolution=%g, min=%g, max=%g, dtype=%s)" % (
            self.resolution, self.min, self.max, dtype_name(self.dtype))


def _minifloat_info(dtype, f):
    tiny = 2.0 ** (1 - f.bias)
    sub = 2.0 ** (1 - f.bias - f.mbits)
    return FloatInfo(dtype, f.bits, f.ebits, f.mbits, f.max, tiny, sub)


def finfo(dt):
    """Limits of a float type (numpy.finfo's for NumPy's own types)."""
    name = dtype_name(dt)
    if name in FORMATS:
        return _minifloat_info(nki_host_type(name), FORMATS[name])
    if name in PACKED:
        return _minifloat_info(nki_host_type(name), FORMATS[PACKED[name][0]])
    if name in _WIDE:
        _, e, m = _WIDE[name]
        maxval = float((2 - 2.0 ** -m) * 2.0 ** 127)
        return FloatInfo(nki_host_type(name), 1 + e + m, e, m, maxval, 2.0 ** -126, 2.0 ** (-126 - m))
    npdt = np.dtype(name)
    if npdt.kind != "f":
        raise TypeError("neuron_dtypes.finfo: %s is not a floating-point type" % name)
    return np.finfo(npdt)
