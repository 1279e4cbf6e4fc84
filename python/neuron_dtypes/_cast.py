"""_cast.py: static_cast, the value conversion between host arrays of any
neuron_dtypes type, and to_float32, the values of any host array.

Between NumPy's own types NumPy converts, except that a float to integer
cast rounds to nearest even and saturates to the integer's range (NaN
gives 0), the rule of trnemu's engines (docs/numerics.md). Every other
cast goes through float32, as the engines' casts do: the source's values
as float32, then rounded to nearest even into the destination. A cast
works through the array in chunks, so that besides its result it needs a
few MiB whatever the array's size (the suites cast multi-GiB caches)."""
import numpy as np

from ._types import FORMATS, PACKED, LANES, ScalarType, PackedType, dtype_name, nki_host_type

_CHUNK = 1 << 20     # source elements converted at a time (a multiple of LANES)


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


def _flat(arr, container=None):
    """A host array's elements as one C-ordered axis (its bit patterns as
    container when given); a copy only when it is not contiguous."""
    a = np.ascontiguousarray(np.asarray(arr))
    return (a.view(container) if container is not None else a).reshape(-1)


def _bf16():
    """nki's bfloat16 conversions (the engines' rounding, kept in one place):
    (float32 -> bits, bits -> float32)."""
    from nki._dtypes import f32_to_bf16, bf16_to_f32
    return f32_to_bf16, bf16_to_f32


def _tf32_round(f32):
    u = f32.view(np.uint32)
    t = u >> 13
    t &= 1
    t += u                  # wraps only for NaNs, which are kept below
    t += 0xFFF
    t &= np.uint32(0xFFFFE000)
    return np.where(np.isnan(f32), f32, t.view(np.float32))


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


def _decoder(name):
    """How to read a source of a non-NumPy type: (container of its bit
    patterns, bits -> float32 values, values per element)."""
    if name in PACKED:
        packed = nki_host_type(name)
        return packed.container, lambda e: FORMATS[PACKED[name][0]].decode(_unpack(e, packed)), LANES
    if name in FORMATS:
        return np.uint8, FORMATS[name].decode, 1
    if name == "bfloat16":
        return np.uint16, _bf16()[1], 1
    return np.float32, np.array, 1                      # tfloat32: float32 bits


def _encoder(name):
    """How to write a destination of a non-NumPy type: (its type, container
    of its bit patterns, float32 values -> bits, values per element)."""
    dst = nki_host_type(name)
    if name in PACKED:
        return dst, dst.container, lambda f: _pack(dst.lane.encode(f), dst), LANES
    if name in FORMATS:
        return dst, np.uint8, FORMATS[name].encode, 1
    if name == "bfloat16":
        return dst, np.uint16, _bf16()[0], 1
    return dst, np.float32, _tf32_round, 1


def _convert(src, out, fn):
    """out (flat) = fn(src (flat)), about _CHUNK values at a time: the
    temporaries of a conversion stay a few MiB whatever the array's size.
    The sizes may differ by a packing factor (LANES divides _CHUNK)."""
    n, m = src.size, out.size
    step = _CHUNK if m <= n else max(1, _CHUNK // (m // n))
    for i in range(0, n, step):
        j = min(i + step, n)
        out[i * m // n:j * m // n] = fn(src[i:j])
    return out


def _values_shape(shape, per_element):
    """The shape of the values of an array of shape holding per_element
    values an element (packed types: along the last axis)."""
    if per_element == 1:
        return shape
    return shape[:-1] + (shape[-1] * per_element,) if shape else (per_element,)


def to_float32(arr):
    """The values of a host array of any type, as float32."""
    arr_t = _type_of(arr) if isinstance(arr, np.ndarray) else None
    if arr_t is None:
        return np.asarray(arr, dtype=np.float32)
    name = dtype_name(arr_t)
    if _plain(name):
        return np.asarray(arr).astype(np.float32)
    container, decode, per = _decoder(name)
    src = _flat(arr, container)
    out = _convert(src, np.empty(src.size * per, np.float32), decode)
    return out.reshape(_values_shape(np.shape(arr), per))


def _numpy_cast(arr, dst):
    """Between NumPy's types; float to integer rounds to nearest even and
    saturates (NaN gives 0), through float64 a chunk at a time."""
    src = np.asarray(arr)
    if not (dst.kind in "iu" and src.dtype.kind == "f"):
        return src.astype(dst)
    info = np.iinfo(dst)

    def rint(c):
        r = np.rint(c.astype(np.float64))
        return np.where(np.isnan(r), 0, np.clip(r, info.min, info.max)).astype(dst)
    return _convert(_flat(src), np.empty(src.size, dst), rint).reshape(src.shape)


def _plain(name):
    """A type NumPy converts itself (not a small float, bfloat16 or tfloat32)."""
    return not (name in FORMATS or name in PACKED or name in ("bfloat16", "tfloat32"))


def static_cast(arr, dtype):
    """arr converted to dtype, value by value (see the module comment)."""
    name = dtype_name(dtype)
    src_t = _type_of(arr) if isinstance(arr, np.ndarray) else np.asarray(arr).dtype
    src_name = dtype_name(src_t)
    if _plain(name) and _plain(src_name):
        return _numpy_cast(arr, np.dtype(name))
    if _plain(src_name):
        src, per_in = _flat(arr), 1
        decode = lambda c: c.astype(np.float32)          # noqa: E731
    else:
        container, decode, per_in = _decoder(src_name)
        src = _flat(arr, container)
    shape = _values_shape(np.shape(arr), per_in)
    if _plain(name):
        dst = np.dtype(name)
        out = _convert(src, np.empty(src.size * per_in, dst),
                       lambda c: _numpy_cast(decode(c), dst))
        return out.reshape(shape)
    dst, container, encode, per_out = _encoder(name)
    if per_out > 1:
        if not shape or shape[-1] % per_out:
            raise ValueError("neuron_dtypes.static_cast: packing into %s needs a last axis "
                             "divisible by %d, got shape %s" % (name, per_out, shape))
        shape = shape[:-1] + (shape[-1] // per_out,)
    out = np.empty(src.size * per_in // per_out, container)
    out = _convert(src, out, lambda c: encode(decode(c)))
    return _wrap(out.reshape(shape), dst)
