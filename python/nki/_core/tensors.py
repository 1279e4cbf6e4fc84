"""_core/tensors.py: NkiTensor, the proxy tensor a kernel sees while it is
traced (a view: dims, partition dim, offsets over a Storage), its Python
operators, and the creation and reshaping of tensors."""
import math

from .. import _dtypes
from . import indirect, placement, views
from .access import free_dims, partitions
from .alloc import MemoryRegion, Storage
from .context import NUM_PARTITIONS, current, fail, fail_hw


# the region of an on-chip Storage kind (NkiTensor.buffer is read at every call)
_ON_CHIP = {"sbuf": MemoryRegion.sbuf, "psum": MemoryRegion.psum}

# trnemu ISA dtypes that only NeuronCore-v4 has (docs/isa.md, "Data types")
V4_TYPES = ("fp8e4fn", "fp8e8m0", "fp8e5x4", "fp8e4fnx4", "fp4x4")


class NkiTensor:
    """A tensor or a view of one: HBM, SBUF or PSUM.

    dims: [step, count] per visible dimension; steps in elements, except the
    partition dimension of an on-chip tensor (index pdim) whose step counts
    partitions. part: first partition (on chip). off: element offset.
    """

    _dims = None       # the free dims an instruction writes instead of the view's (set on one)
    _nomerge = False   # those dims are written as they are, not merged

    def __init__(self, storage, dtype, dims, pdim, part=0, off=0, pcount=1):
        self.storage = storage                 # the Storage it views
        self.dtype = _dtypes.info(dtype).public  # public dtype object
        self.di = _dtypes.info(self.dtype)     # its Info (dtype is never changed)
        self.dims = [list(d) for d in dims]    # [step, count] per dimension
        self.pdim = pdim                       # index of the partition dim (on chip) or None
        self.part = part                       # first partition (on chip)
        self.off = off                         # element offset
        self.pcount = pcount                   # partitions when pdim is None (on chip)

    @classmethod
    def _of(cls, storage, dtype, dims, pdim, part, off, pcount):
        """A view of parts already in NkiTensor's form (dtype a public
        dtype, dims fresh [step, count] lists the view takes over)."""
        t = cls.__new__(cls)
        t.storage, t.dtype, t.di, t.dims, t.pdim = storage, dtype, _dtypes.info(dtype), dims, pdim
        t.part, t.off, t.pcount = part, off, pcount
        return t

    # -- NKI surface
    @property
    def shape(self):
        return tuple([c for _, c in self.dims])

    @property
    def ndim(self):
        return len(self.dims)

    @property
    def buffer(self):
        """Its nl.MemoryRegion: sbuf or psum on chip; in HBM shared_hbm for
        a tensor every program of the launch sees as one (nl.shared_hbm,
        or a kernel argument of an LNC=2 launch, as the vendor's simulator
        has it), else private_hbm (nl.hbm)."""
        st = self.storage
        if st.kind != "hbm":
            return _ON_CHIP[st.kind]
        return MemoryRegion.shared_hbm if st.shared else MemoryRegion.private_hbm

    @property
    def name(self):
        return self.storage.name

    def __len__(self):
        return self.dims[0][1] if self.dims else 1

    def __repr__(self):
        return "NkiTensor(%s, shape=%s, dtype=%s)" % (self.buffer, self.shape, self.dtype)

    # -- views
    def _view(self, dims, pdim, part, off, pcount=None):
        return NkiTensor(self.storage, self.dtype, dims, pdim, part, off,
                         self.pcount if pcount is None else pcount)

    def __getitem__(self, idx):
        return _index.index_tensor(self, idx)

    def __setitem__(self, idx, value):
        _language()._assign(_index.index_tensor(self, idx), value)

    def reshape(self, shape):
        return reshape_tensor(self, tuple(shape))

    # -- the reference's view methods (_core/views.py)
    def ap(self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0,
           dtype=None):
        return views.ap(self, pattern, offset, scalar_offset, vector_offset, indirect_dim, dtype)

    def get_pattern(self):
        return views.get_pattern(self)

    @property
    def strides(self):
        return views.strides(self)

    @property
    def offset(self):
        return views.offset(self)

    @property
    def size(self):
        n = 1
        for _, c in self.dims:
            n *= c
        return n

    def is_contiguous(self):
        return views.is_contiguous(self)

    def is_indirect(self):
        from .dynamic import is_dynamic
        return hasattr(self, "_indirect") or is_dynamic(self) or indirect.is_indirect(self)

    def indirect(self, index, num_elem=None):
        return indirect.make(self, index, num_elem)

    def view(self, dtype):
        return views.view(self, dtype)

    reinterpret_cast = view

    def permute(self, dims):
        return views.permute(self, dims)

    def slice(self, dim, start, end, step=1):
        return views.slice_dim(self, dim, start, end, step)

    def select(self, dim, index):
        return views.select(self, dim, index)

    def expand_dim(self, dim):
        return views.expand_dim(self, dim)

    def squeeze_dim(self, dim):
        return views.squeeze_dim(self, dim)

    def broadcast(self, dim, size):
        return views.broadcast(self, dim, size)

    def vector_select(self, dim, vector_offset):
        return views.vector_select(self, dim, vector_offset)

    def reshape_dim(self, dim, shape):
        return views.reshape_dim(self, dim, shape)

    def flatten_dims(self, start_dim, end_dim):
        return views.flatten_dims(self, start_dim, end_dim)

    def rearrange(self, src_pattern, dst_pattern, fixed_sizes=None):
        return views.rearrange(self, src_pattern, dst_pattern, fixed_sizes)

    @property
    def T(self):
        return _language().transpose(self)

    # -- arithmetic operators
    def _bin(self, other, op, rev=False):
        binary = _language()._binary
        return binary(op, other, self) if rev else binary(op, self, other)

    def __add__(self, o): return self._bin(o, "add")
    def __radd__(self, o): return self._bin(o, "add", True)
    def __sub__(self, o): return self._bin(o, "subtract")
    def __rsub__(self, o): return self._bin(o, "subtract", True)
    def __mul__(self, o): return self._bin(o, "multiply")
    def __rmul__(self, o): return self._bin(o, "multiply", True)
    def __truediv__(self, o): return self._bin(o, "divide")
    def __rtruediv__(self, o): return self._bin(o, "divide", True)
    def __pow__(self, o): return self._bin(o, "power")
    def __mod__(self, o): return self._bin(o, "mod")
    def __and__(self, o): return self._bin(o, "bitwise_and")
    def __or__(self, o): return self._bin(o, "bitwise_or")
    def __xor__(self, o): return self._bin(o, "bitwise_xor")
    def __lt__(self, o): return self._bin(o, "less")
    def __le__(self, o): return self._bin(o, "less_equal")
    def __gt__(self, o): return self._bin(o, "greater")
    def __ge__(self, o): return self._bin(o, "greater_equal")
    def __neg__(self): return self._bin(-1.0, "multiply")

    def __iadd__(self, o):
        return _language()._inplace(self, o, "add")

    def __isub__(self, o):
        return _language()._inplace(self, o, "subtract")

    def __imul__(self, o):
        return _language()._inplace(self, o, "multiply")

    def __itruediv__(self, o):
        return _language()._inplace(self, o, "divide")

    __hash__ = object.__hash__

    def __bool__(self):
        """A tensor handle is truthy, as Python objects are (so `if t:` tests
        that an optional tensor argument was given); its data are on the
        device and are not consulted."""
        return True


def _language():
    """nki.language (imported when first needed: it imports this module)."""
    global _lang
    if _lang is None:
        from .. import language
        _lang = language
    return _lang


_lang = None


def _par_dim(shape):
    """The index of the dimension of shape marked nl.par_dim, or None."""
    pdim = None
    for i, s in enumerate(shape):
        if type(s) is not int and getattr(s, "_par_dim", False):
            pdim = i
    return pdim


def new_tensor(shape, dtype, buffer, name=None, address=None):
    """A fresh tensor of shape on buffer ('sbuf', 'psum' or an HBM kind);
    address=(first partition, byte offset in each partition) places an
    on-chip tile by hand (ignored under nki.compiler.force_auto_alloc)."""
    tr = current()
    di = _dtypes.info(dtype)
    if di.isa in V4_TYPES and getattr(tr, "gen", 4) < 4:
        fail_hw("%s is a NeuronCore-v4 type: the kernel is built for NeuronCore-v%d (use a Trainium3 "
                "instance type, e.g. TRNEMU_INSTANCE=trn3.48xlarge)" % (di.name, tr.gen))
    pdim = _par_dim(shape)
    shape = tuple(map(int, shape))
    if isinstance(buffer, placement.Placement):
        if getattr(tr, "force_auto_alloc", False):
            buffer = buffer.kind
        else:
            return _placed_tensor(tr, shape, pdim, di, buffer)
    if buffer in ("sbuf", "psum"):
        if not shape:
            shape = (1,)
        if pdim is None:
            pdim = 0
        for s in shape:
            if s < 1:
                fail("tensor shape %s has an empty dimension" % (shape,))
        if shape[pdim] > NUM_PARTITIONS:
            fail_hw("the partition dimension of a %s tile is %d, more than %d (nl.tile_size.pmax)"
                    % (buffer, shape[pdim], NUM_PARTITIONS))
        free = [s for i, s in enumerate(shape) if i != pdim]
        per_part = int(math.prod(free)) if free else 1
        st = Storage(tr, buffer, per_part * di.size)
        st.row_bytes = per_part * di.size     # bytes of one partition's row, before alignment
        part = 0
        if address is not None and not getattr(tr, "force_auto_alloc", False):
            try:
                part, st.fixed = int(address[0]), int(address[1])
            except (TypeError, ValueError, IndexError):
                fail("address=%r is not (partition, byte offset)" % (address,))
            if part < 0 or part + shape[pdim] > NUM_PARTITIONS:
                fail("address=%r puts %d partitions past partition %d"
                     % (address, shape[pdim], NUM_PARTITIONS - 1))
        dims = []
        stride = per_part
        for i, s in enumerate(shape):
            if i == pdim:
                dims.append([1, s])
            else:
                stride //= s
                dims.append([stride, s])
        return NkiTensor._of(st, di.public, dims, pdim, part, 0, 1)
    # HBM
    n = int(math.prod(shape)) if shape else 1
    st = tr.hbm_tensor(buffer, name, shape, di, n * di.size)
    dims = []
    stride = n
    for s in shape:
        stride //= s
        dims.append([stride, s])
    return NkiTensor._of(st, di.public, dims, None, 0, 0, 1)


def _placed_tensor(tr, shape, pdim, di, pl):
    """A tile whose blocks sit where an allocation function puts them."""
    if pdim is None:
        pdim = 0
    blocks, parts, free = shape[:pdim], shape[pdim], shape[pdim + 1:]
    if parts > NUM_PARTITIONS:
        fail("the partition dimension of a %s tile is %d, more than %d" % (pl.kind, parts,
                                                                          NUM_PARTITIONS))
    tile = int(math.prod(free)) if free else 1
    lat = placement.lattice(pl, blocks, parts, tile * di.size, di.size)
    if lat is None:
        return placement.BlockTensor(tr, pl, shape, pdim, di)
    p0, b0, steps, span = lat
    st = Storage(tr, pl.kind, span)
    st.row_bytes = span
    st.fixed = b0
    dims = [[s // di.size, n] for s, n in zip(steps, blocks)] + [[1, parts]]
    stride = tile
    for n in free:
        stride //= n
        dims.append([stride, n])
    return NkiTensor(st, di.public, dims, pdim, p0)


def reshape_tensor(t, shape):
    n = int(math.prod(shape))
    if n != int(math.prod(t.shape)):
        fail("cannot reshape %s into %s" % (t.shape, shape))
    if t.storage.kind != "hbm":
        return _reshape_tile(t, shape)
    for i in range(len(t.dims) - 1):
        if t.dims[i][0] != t.dims[i + 1][0] * t.dims[i + 1][1]:
            fail("reshape needs a contiguous HBM view")
    if t.dims and t.dims[-1][0] != 1:
        fail("reshape needs a contiguous HBM view")
    dims, stride = [], n
    for s in shape:
        stride //= s
        dims.append([stride, s])
    return NkiTensor(t.storage, t.dtype, dims, None, 0, t.off)


def _reshape_tile(t, shape):
    """Reshape the free dims of an on-chip tile; the partition dim stays first."""
    p0, ps, pc = partitions(t)
    if t.pdim != 0 or shape[0] != pc:
        fail("an on-chip tile reshape must keep its partition dimension (%d) first" % pc)
    free = free_dims(t)
    for i in range(len(free) - 1):
        if free[i][0] != free[i + 1][0] * free[i + 1][1]:
            fail("reshape needs contiguous free dimensions")
    if free and free[-1][0] != 1:
        fail("reshape needs contiguous free dimensions")
    dims, stride = [list(t.dims[0])], int(math.prod(shape[1:])) if len(shape) > 1 else 1
    for s in shape[1:]:
        stride //= s
        dims.append([stride, s])
    return NkiTensor(t.storage, t.dtype, dims, 0, t.part, t.off, t.pcount)


from . import index as _index  # noqa: E402  (index.py imports NkiTensor from here)
