"""nki.language types: the dtypes (with the NeuronCore-v4 ones and
finfo), the buffers a tensor can live on and the predicates on them, the
tile-size limits, par_dim and NKIObject, the base of kernel parameter
structs."""
import dataclasses

import numpy as np

from .. import _core, _dtypes


bool_ = np.dtype("bool")
int8, int16, int32 = np.dtype("int8"), np.dtype("int16"), np.dtype("int32")
uint8, uint16, uint32 = np.dtype("uint8"), np.dtype("uint16"), np.dtype("uint32")
float16, float32 = np.dtype("float16"), np.dtype("float32")
bfloat16 = _dtypes.bfloat16
tfloat32 = _dtypes.tfloat32
float8_e4m3 = _dtypes.float8_e4m3
float8_e5m2 = _dtypes.float8_e5m2
float8_e3m4 = _dtypes.float8_e3m4


class _NamedDType(_dtypes.DType):
    """An NKI dtype whose str() is its bare name ("float8_e4m3fn"), as the
    vendor's dtypes print and as kernels compare them (str(t.dtype))."""

    def __str__(self):
        return self.name


def _v4_dtype(name, isa, nrt, host, size):
    """A NeuronCore-v4 dtype: the host dtype module's own object when it has
    one, else an NKI DType whose host form is its bit pattern (nrt: the
    nrt_dtype_t its I/O tensors are declared with: the unsigned integer of
    its width, since the runtime has no name for it)."""
    own = getattr(_dtypes, name, None)
    return own if own is not None else _NamedDType(name, isa, nrt, host, size, True)


# OCP float8 without infinities, its power-of-two scale type, and the x4
# packed MX types (four values per element; docs/numerics.md)
float8_e4m3fn = _v4_dtype("float8_e4m3fn", "fp8e4fn", 3, "u1", 1)
float8_e8m0fnu = _v4_dtype("float8_e8m0fnu", "fp8e8m0", 3, "u1", 1)
float8_e5m2_x4 = _v4_dtype("float8_e5m2_x4", "fp8e5x4", 9, "<u4", 4)
float8_e4m3fn_x4 = _v4_dtype("float8_e4m3fn_x4", "fp8e4fnx4", 9, "<u4", 4)
float4_e2m1fn_x4 = _v4_dtype("float4_e2m1fn_x4", "fp4x4", 5, "<u2", 2)


class _FloatName:
    """A short float dtype name with NumPy's finfo limits on it (nl.fp32.min):
    NumPy reads it as its dtype, so it works wherever the dtype does."""

    def __init__(self, name):
        self.dtype = np.dtype(name)      # what np.dtype(self) gives
        fi = np.finfo(self.dtype)
        self.min, self.max = float(fi.min), float(fi.max)   # most negative and largest finite
        self.eps, self.tiny = float(fi.eps), float(fi.tiny)  # spacing at 1, smallest normal
        self.bits = fi.bits

    def __eq__(self, other):
        try:
            return np.dtype(other) == self.dtype
        except TypeError:
            return False

    def __hash__(self):
        return hash(self.dtype)

    def __repr__(self):
        return "nki.language." + self.dtype.name


fp32 = _FloatName("float32")
fp16 = _FloatName("float16")


class _BF16Info:
    """finfo of bfloat16: 8 exponent bits (float32's range), 7 mantissa bits."""
    bits = 16
    min, max = -3.3895313892515355e38, 3.3895313892515355e38
    eps = 2.0 ** -7
    tiny = 2.0 ** -126
    dtype = bfloat16


def finfo(dtype):
    """Machine limits of a float dtype (min, max, eps, tiny, bits), as
    numpy.finfo gives them; bfloat16 included."""
    di = _dtypes.info(dtype)
    if di.name == "bfloat16":
        return _BF16Info()
    if not isinstance(di.public, np.dtype) or di.public.kind != "f":
        raise TypeError("finfo needs float32 or float16 or bfloat16, got %r" % (dtype,))
    return np.finfo(di.public)


# the type of the dtype names (nl.float32, ...), for annotations and
# isinstance: NumPy dtypes and trnemu's own (the vendor's reference types
# them DType)
DType = _dtypes.AnyDType


# where a tensor lives; nl.hbm is nl.private_hbm (the reference's alias)
MemoryRegion = _core.MemoryRegion
sbuf, psum, hbm, private_hbm, shared_hbm = (MemoryRegion.sbuf, MemoryRegion.psum, MemoryRegion.hbm,
                                            MemoryRegion.private_hbm, MemoryRegion.shared_hbm)


def is_hbm(buffer):
    """The buffer (or a tensor's buffer) is device memory."""
    return getattr(buffer, "buffer", buffer) in ("hbm", private_hbm, shared_hbm, "input", "const")


def is_sbuf(buffer):
    return getattr(buffer, "buffer", buffer) == sbuf


def is_psum(buffer):
    return getattr(buffer, "buffer", buffer) == psum


def is_on_chip(buffer):
    """SBUF or PSUM."""
    return getattr(buffer, "buffer", buffer) in (sbuf, psum)


class NKIObject:
    """The base of kernel parameter structs: a subclass lists its fields as
    class attributes (annotated or not, with defaults) and is built with
    keyword arguments (or positional ones, in field order),
    NKIObject(field=value, ...). Every subclass keeps this keyword
    constructor, @dataclass ones included (the decorator does not replace
    an __init__ the class already has): it fills dataclass default
    factories, calls __post_init__ and works on frozen dataclasses. Two
    objects with equal fields are equal, and the repr shows the fields (so
    a kernel called with one is cached by its values)."""

    def __init_subclass__(cls, **kw):
        # As the vendor's NKIObject: every subclass is built with keyword
        # fields, a @dataclass one too (its decorator keeps an __init__ the
        # class already has), so a dataclass whose fields are plain class
        # attributes, or a call that leaves out a field, still builds.
        super().__init_subclass__(**kw)
        if "__init__" not in cls.__dict__:
            cls.__init__ = NKIObject.__init__

    def __init__(self, *args, **kwargs):
        fields = self._fields()
        if len(args) > len(fields):
            raise TypeError("%s takes at most %d positional fields (%d given)"
                            % (type(self).__name__, len(fields), len(args)))
        for k, v in zip(fields, args):
            if k in kwargs:
                raise TypeError("%s got field %r twice" % (type(self).__name__, k))
            kwargs[k] = v
        for k, v in kwargs.items():
            if fields and k not in fields:
                raise TypeError("%s has no field %r (fields: %s)"
                                % (type(self).__name__, k, ", ".join(fields)))
            object.__setattr__(self, k, v)       # a frozen dataclass too
        for f in getattr(self, "__dataclass_fields__", {}).values():
            if f.name not in kwargs and f.default_factory is not dataclasses.MISSING:
                object.__setattr__(self, f.name, f.default_factory())
        if hasattr(self, "__post_init__"):
            self.__post_init__()

    @classmethod
    def _fields(cls):
        out = []
        for c in reversed(cls.__mro__):
            for k in getattr(c, "__annotations__", {}):
                if k not in out:
                    out.append(k)
        return out

    def _values(self):
        names = self._fields() or sorted(vars(self))
        return [(k, getattr(self, k, None)) for k in names]

    def __eq__(self, other):
        return type(self) is type(other) and self._values() == other._values()

    def __hash__(self):
        return hash((type(self).__name__, repr(self._values())))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % kv for kv in self._values()))


class _TileSize:
    """Hardware tile limits. The SBUF sizes are those of the NeuronCore
    generation the kernel is traced for (outside a kernel: the emulated
    machine's): 192 KiB per partition on v2, 224 KiB on v3, 256 KiB on v4,
    all of it available to the kernel on trnemu."""
    pmax = 128                      # partitions of a tile
    psum_fmax = 512                 # fp32 elements per partition of a PSUM bank
    psum_bank_fmax = 512
    psum_bank_fmax_bytes = _core.PSUM_BANK
    gemm_stationary_fmax = 128      # free size of a matmul's stationary operand
    gemm_moving_fmax = 512          # free size of a matmul's moving operand
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1

    @staticmethod
    def _sbuf():
        tr = getattr(_core._tls, "tracer", None)
        if tr is not None:
            return _core.context.sbuf_bytes(tr.gen)
        from .. import _runtime
        return _core.context.sbuf_bytes(_runtime.machine_generation())

    @property
    def psum_num_banks(self):
        return _core.PSUM_BYTES // _core.PSUM_BANK

    @staticmethod
    def _sbuf():
        # SBUF bytes per partition of the generation being traced for (in
        # a kernel) or of the emulated machine (outside one)
        tr = getattr(_core._tls, "tracer", None)
        gen = getattr(tr, "gen", None) if tr is not None else None
        if gen is None:
            from .. import _runtime
            gen = _runtime.machine_generation()
        return _core.sbuf_bytes(gen)

    @property
    def sbuf_size_bytes(self):
        return self._sbuf() * _core.NUM_PARTITIONS

    @property
    def sbuf_fmax(self):
        return self._sbuf() // 4

    @property
    def sbuf_fmax_bytes(self):
        return self._sbuf()

    @property
    def total_available_sbuf_size(self):
        return self._sbuf()


tile_size = _TileSize()


class _ParDim(int):
    _par_dim = True


def par_dim(n):
    """Mark a dimension of an on-chip tensor shape as its partition dim."""
    return _ParDim(n)
