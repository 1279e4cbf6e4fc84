"""_core/views.py: the view methods of NkiTensor that the NKI reference
documents (ap, get_pattern, view, permute, slice, select, expand_dim,
squeeze_dim, broadcast and the layout queries). Every view shares its
tensor's storage; nothing is copied.

Storage is addressed as flat elements: an HBM tensor as one row, an
on-chip tile as one row of `row` elements per partition, partition p
starting at element p * row. An access pattern [[stride, count], ...]
(partition first on chip) walks those elements from an offset."""
from .. import _dtypes
from . import dynamic
from .access import elems
from .context import NUM_PARTITIONS, fail


def _row_elems(t, di):
    """Elements per partition of an on-chip tile's storage, in dtype di."""
    row_bytes = getattr(t.storage, "row_bytes", t.storage.nbytes)
    if row_bytes % di.size:
        fail("a %s view of a tile of %d bytes per partition does not divide evenly"
             % (di.name, row_bytes))
    return row_bytes // di.size


def _flat_offset(t, di):
    """The view's first element as a flat storage offset in dtype di."""
    old = _dtypes.info(t.dtype)
    nbytes = t.off * old.size
    if t.storage.kind != "hbm":
        nbytes += t.part * getattr(t.storage, "row_bytes", t.storage.nbytes)
    if nbytes % di.size:
        fail("the view starts at byte %d, not a whole %s element" % (nbytes, di.name))
    return nbytes // di.size


def _pairs(pattern):
    try:
        pairs = [[int(s), int(n)] for s, n in pattern]
    except (TypeError, ValueError):
        fail("an access pattern is a list of [stride, count] pairs, got %r" % (pattern,))
    if not pairs:
        fail("an access pattern needs at least one [stride, count] pair")
    for s, n in pairs:
        if n < 1:
            fail("access pattern %r has a count below 1" % (pattern,))
    return pairs


def ap(t, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim=0, dtype=None):
    """tensor.ap(): the view that walks pattern from the view's start plus
    offset elements, reading the storage as dtype (default the tensor's)."""
    from .tensors import NkiTensor
    di = _dtypes.info(dtype if dtype is not None else t.dtype)
    pairs = _pairs(pattern)
    if scalar_offset is not None and vector_offset is not None:
        fail("ap() takes scalar_offset= or vector_offset=, not both")
    if _known_rank(scalar_offset):
        # nki.collectives.rank_id(): the vendor's register, whose value
        # trnemu knows while tracing: the shift it selects is static
        shift = int(scalar_offset) * _tensor_stride(t, indirect_dim, di)
        return ap(t, pattern, (int(offset) if offset is not None else 0) + shift, None, None,
                  indirect_dim, dtype)
    if scalar_offset is not None:
        return _scalar_indexed(t, di, pairs, offset, scalar_offset, indirect_dim)
    flat = _flat_offset(t, di) + (int(offset) if offset is not None else 0)
    if flat < 0:
        fail("ap offset %d starts before the tensor" % flat)
    if t.storage.kind == "hbm":
        out = NkiTensor(t.storage, di.public, pairs, None, 0, flat)
    else:
        row = _row_elems(t, di)
        (ps, pn), free = pairs[0], pairs[1:]
        step = _partition_step(t, di, ps, pn, row)
        part = flat // row
        if part + (pn - 1) * step >= NUM_PARTITIONS:
            fail("the access pattern reaches partition %d" % (part + (pn - 1) * step))
        out = NkiTensor(t.storage, di.public, [[step, pn]] + free, 0, part, flat % row)
    if vector_offset is not None:
        if t.storage.kind != "hbm":
            fail("ap(vector_offset=) indexes an HBM tensor (an indirect DMA)")
        out._indirect = (vector_offset, 0)
        # row r starts at vector_offset[r] x the stride of the tensor's
        # dimension indirect_dim; the NKI reference says the pattern's first
        # stride is not used: the indexed rows step by the tensor's stride
        out._row_step = _tensor_stride(t, indirect_dim, di)
    return out


def _partition_step(t, di, ps, pn, row):
    """Partitions between two of an on-chip pattern's partitions: its
    partition stride over the storage's row (the reference's rule: the
    stride is the row, one partition; trnemu also takes whole multiples),
    or one partition when the stride is the free-element count of the view
    .ap() is called on (a view of part of a wider tile, whose kernel
    computes the pattern from the view's own shape)."""
    if pn <= 1:
        return 1
    if ps > 0 and ps % row == 0:
        return ps // row
    view_row = elems(t) if t.pdim == 0 else 1
    if ps == view_row * _dtypes.info(t.dtype).size // di.size:
        return 1
    fail("the partition stride %d of the access pattern is not a whole number of partitions "
         "(%d elements each) nor the view's own row of %d" % (ps, row, view_row))


def _tensor_stride(t, dim, di):
    """The stride of dimension dim of tensor t, in elements of dtype di
    (what an ap's indirect_dim names)."""
    if not 0 <= int(dim) < len(t.dims):
        fail("indirect_dim=%r is not a dimension of the tensor's shape %s" % (dim, t.shape))
    nbytes = t.dims[int(dim)][0] * _dtypes.info(t.dtype).size
    if nbytes % di.size:
        fail("indirect_dim=%d: its stride is not a whole number of %s elements" % (dim, di.name))
    return nbytes // di.size


def get_pattern(t):
    """The view as [[stride, count], ...] over flat storage elements."""
    out = []
    for i, (s, n) in enumerate(t.dims):
        if i == t.pdim:
            s *= _row_elems(t, _dtypes.info(t.dtype))
        out.append([s, n])
    return out


def strides(t):
    return tuple(s for s, _ in get_pattern(t))


def offset(t):
    return _flat_offset(t, _dtypes.info(t.dtype))


def is_contiguous(t):
    """Row-major contiguous over the free dims (the partition dim skipped on chip)."""
    expect = 1
    for i in reversed(range(len(t.dims))):
        s, n = t.dims[i]
        if i == t.pdim or n == 1:
            continue
        if s != expect:
            return False
        expect *= n
    return True


def view(t, dtype):
    """Reinterpret the bytes as dtype; the last dim's count scales by the
    size ratio (it must be contiguous)."""
    from .tensors import NkiTensor
    old, new = _dtypes.info(t.dtype), _dtypes.info(dtype)
    if old.size == new.size:
        return NkiTensor(t.storage, new.public, t.dims, t.pdim, t.part, t.off, t.pcount)
    last = len(t.dims) - 1
    if last < 0 or last == t.pdim or t.dims[last][0] != 1:
        fail("view(%s) needs a contiguous last dimension" % new.name)
    dims = [list(d) for d in t.dims]
    nbytes = t.off * old.size
    for i, (s, n) in enumerate(dims[:-1]):
        if i != t.pdim:
            if (s * old.size) % new.size:
                fail("view(%s): stride %d of dimension %d is not a whole %s element"
                     % (new.name, s, i, new.name))
            dims[i][0] = s * old.size // new.size
    if (dims[-1][1] * old.size) % new.size or nbytes % new.size:
        fail("view(%s): %d %s elements are not a whole number of %s elements"
             % (new.name, dims[-1][1], old.name, new.name))
    dims[-1] = [1, dims[-1][1] * old.size // new.size]
    return NkiTensor(t.storage, new.public, dims, t.pdim, t.part, nbytes // new.size, t.pcount)


def permute(t, order):
    from .tensors import NkiTensor
    order = [int(d) % len(t.dims) for d in order]
    if sorted(order) != list(range(len(t.dims))):
        fail("permute(%s) is not a permutation of %d dimensions" % (order, len(t.dims)))
    if t.pdim is not None and order[0] != t.pdim:
        fail("permute cannot move the partition dimension of an on-chip tensor")
    pdim = None if t.pdim is None else order.index(t.pdim)
    return NkiTensor(t.storage, t.dtype, [t.dims[d] for d in order], pdim, t.part, t.off, t.pcount)


def slice_dim(t, dim, start, end, step=1):
    idx = [slice(None)] * len(t.dims)
    idx[int(dim)] = slice(start, end, step)
    return t[tuple(idx)]


def select(t, dim, index):
    """Remove dimension dim at index: an integer, or a one-element tile (or
    register) whose value is read when a DMA of the view runs (HBM)."""
    from .tensors import NkiTensor
    if not isinstance(index, int):
        tile = index if isinstance(index, NkiTensor) else _register_word(index)
        if tile.size != 1:
            fail("select() takes a one-element index tile, got shape %s" % (tile.shape,))
        dim = int(dim) % len(t.dims)
        if t.storage.kind != "hbm":
            return _onchip_select(t, dim, tile)
        stride = t.dims[dim][0]
        out = NkiTensor(t.storage, t.dtype, t.dims[:dim] + t.dims[dim + 1:], None, 0, t.off)
        out._indirect = (tile, 0)
        out._scalar = (tile, stride)
        return out
    idx = [slice(None)] * len(t.dims)
    idx[int(dim)] = int(index)
    return t[tuple(idx)]


def _onchip_select(t, dim, tile):
    """select(dim, tile) of an SBUF/PSUM tile: element 0 of dimension dim,
    moved when the instruction runs by tile's value times that dimension's
    stride, within the dimension (_core/dynamic.py). The NKI reference
    rules out the partition dimension."""
    if dim == t.pdim:
        fail("select() with a run-time index on an on-chip tile cannot select along the "
             "partition dimension (dim %d)" % dim)
    from .access import local_rect
    limit = local_rect(t)[3]           # the end of the dimension's last element
    di = _dtypes.info(t.dtype)
    static = select(t, dim, 0)
    return dynamic.dynamic_view(static, tile, t.dims[dim][0], di, limit)


def expand_dim(t, dim):
    from .tensors import NkiTensor
    dims = [list(d) for d in t.dims]
    dim = int(dim) % (len(dims) + 1)
    dims.insert(dim, [0, 1])
    pdim = t.pdim + 1 if t.pdim is not None and dim <= t.pdim else t.pdim
    return NkiTensor(t.storage, t.dtype, dims, pdim, t.part, t.off, t.pcount)


def squeeze_dim(t, dim):
    from .tensors import NkiTensor
    dim = int(dim) % len(t.dims)
    if t.dims[dim][1] != 1:
        fail("squeeze_dim(%d): the dimension has size %d, not 1" % (dim, t.dims[dim][1]))
    if dim == t.pdim:
        fail("squeeze_dim cannot remove the partition dimension")
    dims = t.dims[:dim] + t.dims[dim + 1:]
    pdim = t.pdim - 1 if t.pdim is not None and dim < t.pdim else t.pdim
    return NkiTensor(t.storage, t.dtype, dims, pdim, t.part, t.off, t.pcount)


def broadcast(t, dim, size):
    from .tensors import NkiTensor
    dim = int(dim) % len(t.dims)
    if t.dims[dim][1] != 1:
        fail("broadcast(%d, %d): the dimension has size %d, not 1" % (dim, size, t.dims[dim][1]))
    if dim == t.pdim:
        fail("broadcast cannot widen the partition dimension (use nl.broadcast_to)")
    dims = [list(d) for d in t.dims]
    dims[dim] = [0, int(size)]
    return NkiTensor(t.storage, t.dtype, dims, t.pdim, t.part, t.off, t.pcount)


def vector_select(t, dim, vector_offset):
    """Row vector_offset[p] of dimension 0 for partition p (an indirect DMA
    view of an HBM tensor; dim 0 gets vector_offset's partition count)."""
    from .tensors import NkiTensor
    if int(dim) != 0:
        fail("vector_select works on dimension 0 (got %d)" % dim)
    if t.storage.kind != "hbm":
        fail("vector_select works on HBM tensors")
    if hasattr(t, "_indirect"):
        fail("the tensor view is already indirect")
    if not isinstance(vector_offset, NkiTensor) or vector_offset.buffer not in ("sbuf", "psum"):
        fail("vector_select's offsets must be an on-chip [P, 1] tile")
    rows = vector_offset.shape[0]
    out = NkiTensor(t.storage, t.dtype, [[t.dims[0][0], rows]] + t.dims[1:], None, 0, t.off)
    out._indirect = (vector_offset, 0)
    return out


def _split_sizes(n, shape):
    shape = [int(s) for s in shape]
    if shape.count(-1) > 1:
        fail("reshape_dim shape %r has more than one -1" % (shape,))
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if -1 in shape:
        if known == 0 or n % known:
            fail("cannot split a dimension of %d into %r" % (n, shape))
        shape[shape.index(-1)] = n // known
    elif known != n:
        fail("cannot split a dimension of %d into %r" % (n, shape))
    return shape


def reshape_dim(t, dim, shape):
    """Split dimension dim into shape (one entry may be -1)."""
    from .tensors import NkiTensor
    dim = int(dim) % len(t.dims)
    s, n = t.dims[dim]
    sizes = _split_sizes(n, shape)
    if dim == t.pdim and len(sizes) > 1:
        fail("reshape_dim cannot split the partition dimension of an on-chip tensor")
    new, stride = [], s
    for c in reversed(sizes):
        new.insert(0, [stride, c])
        stride *= c
    dims = t.dims[:dim] + new + t.dims[dim + 1:]
    pdim = t.pdim + len(new) - 1 if t.pdim is not None and t.pdim > dim else t.pdim
    return NkiTensor(t.storage, t.dtype, dims, pdim, t.part, t.off, t.pcount)


def flatten_dims(t, start_dim, end_dim):
    """Merge dimensions start_dim..end_dim (inclusive), which must be
    contiguous in memory."""
    from .tensors import NkiTensor
    a, b = int(start_dim) % len(t.dims), int(end_dim) % len(t.dims)
    if a > b:
        fail("flatten_dims(%d, %d): the range is empty" % (start_dim, end_dim))
    if t.pdim is not None and a <= t.pdim <= b and a != b:
        fail("flatten_dims cannot merge the partition dimension of an on-chip tensor")
    for i in range(a, b):
        if t.dims[i][0] != t.dims[i + 1][0] * t.dims[i + 1][1]:
            fail("flatten_dims(%d, %d): the dimensions are not contiguous in memory" % (a, b))
    n = 1
    for _, c in t.dims[a:b + 1]:
        n *= c
    dims = t.dims[:a] + [[t.dims[b][0], n]] + t.dims[b + 1:]
    pdim = t.pdim - (b - a) if t.pdim is not None and t.pdim > b else t.pdim
    return NkiTensor(t.storage, t.dtype, dims, pdim, t.part, t.off, t.pcount)


def _names(group):
    return list(group) if isinstance(group, (tuple, list)) else [group]


def rearrange(t, src_pattern, dst_pattern, fixed_sizes=None):
    """einops-style: split the groups of src_pattern (sizes from
    fixed_sizes, one unknown inferred per group), reorder to dst_pattern's
    order, and merge its groups."""
    fixed = dict(fixed_sizes or {})
    if len(src_pattern) != len(t.dims):
        fail("rearrange pattern %r names %d dimensions, the tensor has %d"
             % (src_pattern, len(src_pattern), len(t.dims)))
    v, order = t, []
    for i in reversed(range(len(src_pattern))):     # split from the back: indices stay valid
        names = _names(src_pattern[i])
        if len(names) > 1:
            v = reshape_dim(v, i, [fixed.get(nm, -1) for nm in names])
    for g in src_pattern:
        order += _names(g)
    flat_dst = [nm for g in dst_pattern for nm in _names(g)]
    if sorted(flat_dst) != sorted(order) or len(set(order)) != len(order):
        fail("rearrange: %r and %r do not name the same dimensions" % (src_pattern, dst_pattern))
    v = permute(v, [order.index(nm) for nm in flat_dst])
    pos = 0
    for g in dst_pattern:
        k = len(_names(g))
        if k > 1:
            v = flatten_dims(v, pos, pos + k - 1)
        pos += 1
    return v


def _known_rank(value):
    """Whether a scalar_offset is nki.collectives.rank_id()'s value."""
    return type(value).__name__ == "RankId" and isinstance(value, int)


def _scalar_indexed(t, di, pairs, offset, scalar_offset, indirect_dim):
    """ap(scalar_offset=tile): the whole pattern moved by tile's value
    times the stride of dimension indirect_dim, known only when the DMA
    runs: an indexed DMA whose one index shifts the pattern (docs/isa.md)."""
    from .tensors import NkiTensor
    if not isinstance(scalar_offset, NkiTensor):
        scalar_offset = _register_word(scalar_offset)
    if scalar_offset.buffer not in ("sbuf", "psum") or scalar_offset.size != 1:
        fail("ap(scalar_offset=) takes a one-element SBUF tile")
    if t.storage.kind != "hbm":
        return _onchip_scalar(t, di, pairs, offset, scalar_offset, indirect_dim)
    stride = _tensor_stride(t, indirect_dim, di)     # of the tensor's dim, not the pattern's
    flat = _flat_offset(t, di) + (int(offset) if offset is not None else 0)
    out = NkiTensor(t.storage, di.public, pairs, None, 0, flat)
    out._indirect = (scalar_offset, 0)
    out._scalar = (scalar_offset, stride)    # the DMA picks how to index it
    return out


def _onchip_scalar(t, di, pairs, offset, scalar_offset, indirect_dim):
    """ap(scalar_offset=) of an SBUF/PSUM tile: the static view of the
    pattern, moved when the instruction runs by the index times the stride
    of dimension indirect_dim (not the partition dimension), anywhere in
    the partitions' rows (_core/dynamic.py)."""
    if not 0 <= int(indirect_dim) < len(t.dims):
        fail("indirect_dim=%r is not a dimension of the tensor's shape %s"
             % (indirect_dim, t.shape))
    if int(indirect_dim) == t.pdim:
        fail("ap(scalar_offset=) on an on-chip tile moves along a free dimension; "
             "indirect_dim=%d is its partition dimension" % int(indirect_dim))
    stride = _tensor_stride(t, indirect_dim, di)
    static = ap(t, pairs, offset, None, None, 0, di.public)
    return dynamic.dynamic_view(static, scalar_offset, stride, di, _row_elems(t, di) * di.size)


def _register_word(reg):
    """A register (nisa.register_alloc) or a device loop's index as a
    [1, 1] int32 SBUF tile written on GpSimd where the access is traced, so
    that it can index a DMA (trnemu's ISA indexes DMAs by memory, not by
    registers)."""
    from .. import language as nl
    from .context import current
    from .loops import REG_COUNTER, LoopIndex
    from ..isa._registers import VirtualRegister
    if isinstance(reg, VirtualRegister):
        rs = reg.number
    elif isinstance(reg, LoopIndex):
        rs = REG_COUNTER        # every engine in a device loop keeps its counter there
    else:
        fail("ap(scalar_offset=%r): give a [1, 1] SBUF tile, a register, a device loop's "
             "index or nki.collectives.rank_id() (an offset known while tracing is offset=)"
             % (reg,))
    word = nl.ndarray((1, 1), nl.int32, nl.sbuf)
    current().emit("pool", "reg_store", {"dst": word}, {}, [("dst", word), ("rs", rs)])
    return word
