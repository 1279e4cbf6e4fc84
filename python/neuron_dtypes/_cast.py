"""_cast.py: static_cast, the value conversion between host arrays of any
neuron_dtypes type, and to_float32, the values of any host array.

Between NumPy's own types NumPy converts, except that a float to integer
cast rounds to nearest even and saturates to the integer's range (NaN
gives 0), the rule of trnemu's engines (docs/numerics.md). Every other
cast goes through float32, as the engines' casts do: the source's values
as float32, then rounded to nearest even into the destination."""
import numpy as np

from ._types import FORMATS, PACKED, LANES, ScalarType, PackedType, dtype_name, nki_host_type


def _type_of(arr):
    """The type of a host array: its attached NKI type, else its NumPy dtype."""
    return getattr(arr, "nki_dtype", None) or arr.dtype


def _wrap(bits, dt):
    """Bit patterns as an array of type dt: a NumPy view when NumPy knows
    the type, else an nki.HostArray carrying it."""
    try:
        npdt = np.dtype(dt)
    except TypeError:
        npdt = None
    if npdt is not None and npdt.itemsize == bits.dtype.itemsize and not isinstance(
            dt, (ScalarType, PackedType)):
        return bits.view(npdt)
    try:
        from nki import HostArray
    except ImportError:
        HostArray = None
    out = bits.view(HostArray) if HostArray is not None else bits.view(_Tagged)
    out.nki_dtype = dt
    return out


class _Tagged(np.ndarray):
    """A host array with its NKI type attached (when nki is not importable)."""

    def __array_finalize__(self, obj):
        self.nki_dtype = getattr(obj, "nki_dtype", None)


def _bits(arr, container):
    return np.ascontiguousarray(np.asarray(arr)).view(container)


def _bf16_encode(f32):
    u = f32.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    quiet = ((u >> 16) | 0x40).astype(np.uint16)          # a NaN stays NaN, sign and top payload kept
    return np.where(np.isnan(f32), quiet, r)


def _tf32_round(f32):
    u = f32.view(np.uint32).astype(np.uint64)
    r = ((u + 0xFFF + ((u >> 13) & 1)) >> 13 << 13).astype(np.uint32)
    return np.where(np.isnan(f32), f32, r.view(np.float32))


def _pack(codes, packed):
    """(..., F) lane codes -> (..., F/4) packed elements."""
    if codes.ndim == 0 or codes.shape[-1] % LANES:
        raise ValueError("neuron_dtypes.static_cast: packing into %s needs a last axis divisible "
                         "by %d, got shape %s" % (packed.name, LANES, codes.shape))
    width = packed.lane.bits
    lanes = codes.reshape(codes.shape[:-1] + (codes.shape[-1] // LANES, LANES))
    lanes = lanes.astype(packed.container) & ((1 << width) - 1)
    out = np.zeros(lanes.shape[:-1], dtype=packed.container)
    for j in range(LANES):
        out |= lanes[..., j] << (width * j)
    return out


def _unpack(elems, packed):
    """(..., N) packed elements -> (..., 4N) lane codes."""
    width = packed.lane.bits
    e = np.asarray(elems).view(packed.container)
    lanes = [(e >> (width * j)) & ((1 << width) - 1) for j in range(LANES)]
    return np.stack(lanes, axis=-1).reshape(e.shape[:-1] + (e.shape[-1] * LANES,))


def to_float32(arr):
    """The values of a host array of any type, as float32."""
    arr_t = _type_of(arr) if isinstance(arr, np.ndarray) else None
    if arr_t is None:
        return np.asarray(arr, dtype=np.float32)
    name = dtype_name(arr_t)
    if name in PACKED:
        return FORMATS[PACKED[name][0]].decode(_unpack(arr, nki_host_type(name)))
    if name in FORMATS:
        return FORMATS[name].decode(_bits(arr, np.uint8))
    if name == "bfloat16":
        return (_bits(arr, np.uint16).astype(np.uint32) << 16).view(np.float32)
    if name == "tfloat32":
        return _bits(arr, np.float32).copy()
    return np.asarray(arr).astype(np.float32)


def _numpy_cast(arr, dst):
    src = np.asarray(arr)
    if dst.kind in "iu" and src.dtype.kind == "f":
        info = np.iinfo(dst)
        r = np.rint(src.astype(np.float64))
        r = np.where(np.isnan(r), 0, np.clip(r, info.min, info.max))
        return r.astype(dst)
    return src.astype(dst)


def static_cast(arr, dtype):
    """arr converted to dtype, value by value (see the module comment)."""
    name = dtype_name(dtype)
    src_t = _type_of(arr) if isinstance(arr, np.ndarray) else np.asarray(arr).dtype
    src_name = dtype_name(src_t)
    plain = lambda n: not (n in FORMATS or n in PACKED or n in ("bfloat16", "tfloat32"))  # noqa: E731
    if plain(name) and plain(src_name):
        return _numpy_cast(arr, np.dtype(name))
    f32 = np.ascontiguousarray(to_float32(arr) if not plain(src_name)
                               else np.asarray(arr).astype(np.float32))
    if plain(name):
        return _numpy_cast(f32, np.dtype(name))
    dst = nki_host_type(name)
    if name in PACKED:
        return _wrap(_pack(dst.lane.encode(f32), dst), dst)
    if name in FORMATS:
        return _wrap(FORMATS[name].encode(f32), dst)
    if name == "bfloat16":
        return _wrap(_bf16_encode(f32), dst)
    return _wrap(_tf32_round(f32), dst)
