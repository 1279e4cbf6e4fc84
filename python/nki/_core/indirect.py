"""_core/indirect.py: tensor indirection, `tile.indirect(index, num_elem)`
on an SBUF/PSUM tile (NeuronCore-v4). The view's column i is the element
of each partition at free offset index_i of the tile's view, the offsets
read from the SBUF tile `index` when the instruction runs, in the snake
order of the reference: offset i from index[i % G, i // G] (G = 16 on the
Vector, Scalar and GpSimd engines, 32 on the Tensor engine), going on in
the next group of G partitions once the index's columns are used up.
trnemu's ISA gives such an operand an index (docs/isa.md, "Tensor
indirection"): the instruction gathers the columns, computes, and
scatters a written one back.

The view's storage is an IndStorage: it stands for the tile and carries
the index, the element step between offsets and the largest offset. The
dependency tracker counts the view by every element an offset may reach
and the instruction as a reader of its index."""
from .context import fail, fail_hw
from .dynamic import RunTimeStorage

# ops whose operands may be .indirect() views (the reference's list)
INDIRECT_OPS = frozenset((
    "nc_matmul", "nc_matmul_mx", "tensor_tensor", "tensor_scalar", "tensor_reduce",
    "tensor_copy", "tensor_copy_predicated", "tensor_scalar_reduce",
    "tensor_scalar_cumulative", "activation", "activation_reduce", "activate2",
    "exponential"))

INDEX_TYPES = ("i8", "u8", "i16", "u16", "i32", "u32")


class IndStorage(RunTimeStorage):
    """The storage of an .indirect() view: the index, the element step
    between two offsets, the largest offset and the view it was made as."""

    def __init__(self, real, index, step, bound):
        super().__init__(real)
        self._own(ind_index=index,   # SBUF tensor of offsets
                  ind_step=step,     # elements per unit of an offset
                  ind_bound=bound,   # the largest offset allowed
                  ind_view=None)     # (dims, pdim, part, off) made


def is_indirect(t):
    return isinstance(t.storage, IndStorage)


def group(engine):
    """Offsets per partition group on engine."""
    return 32 if engine == "pe" else 16


def where(i, g, cols):
    """(partition, element) of the index holding column i's offset."""
    return (i // (g * cols)) * g + i % g, (i // g) % cols


def _one_run(dims):
    """[step, count] of free dims that walk evenly spaced elements, or None."""
    run = [d for d in dims if d[1] > 1]
    if not run:
        return [1, 1]
    step, count = run[-1][0], run[-1][1]
    for s, c in reversed(run[:-1]):
        if s != step * count:
            return None
        count *= c
    return [step, count]


def make(t, index, num_elem=None):
    """t.indirect(index, num_elem): the (P, num_elem) view of t's columns."""
    from .tensors import NkiTensor
    from .access import free_dims
    if t.buffer not in ("sbuf", "psum") or t.pdim != 0:
        fail(".indirect() takes an SBUF or PSUM tile whose first dimension is the partition "
             "one (an indirect DMA indexes HBM: ap(vector_offset=))")
    if t.is_indirect():
        fail(".indirect() takes a view not already addressed at run time")
    if not isinstance(index, NkiTensor) or index.buffer != "sbuf" or index.ndim != 2 or \
            index.di.isa not in INDEX_TYPES or index.is_indirect():
        fail(".indirect(index): index is a 2-D SBUF tensor of 8-, 16- or 32-bit integers, "
             "got %r" % (index,))
    if index.pdim != 0 or index.dims[0][0] != 1 or (_one_run(free_dims(index)) or [0])[0] != 1:
        fail(".indirect(index): index's offsets are a contiguous run in each partition")
    n = index.size if num_elem is None else int(num_elem)
    if n < 1:
        fail(".indirect(num_elem=%d): at least one offset" % n)
    run = _one_run(free_dims(t))
    if run is None or run[0] < 1:
        fail(".indirect() takes a tile whose free elements are evenly spaced (a view "
             "walked by one positive stride); got free dims %s" % (free_dims(t),))
    st = IndStorage(t.storage, index, run[0], run[1] - 1)
    pstep, pcount = t.dims[0]
    out = NkiTensor(st, t.dtype, [[pstep, pcount], [run[0], n]], 0, t.part, t.off, t.pcount)
    object.__setattr__(st, "ind_view", _key(out))
    return out


def _key(t):
    return (tuple(tuple(d) for d in t.dims), t.pdim, t.part, t.off)


def check(tr, engine, op, views):
    """Before an instruction on engine: its .indirect() operands are the
    views made, on an op and a machine that take them, with an index that
    holds an offset for every column."""
    for t in views:
        st = t.storage
        if not isinstance(st, IndStorage):
            continue
        if getattr(tr, "gen", 4) < 4:
            fail_hw(".indirect() (tensor indirection) needs NeuronCore-v4 (a Trainium3 instance "
                    "type, e.g. TRNEMU_INSTANCE=trn3.48xlarge); this kernel is built for "
                    "NeuronCore-v%d" % tr.gen)
        if op not in INDIRECT_OPS:
            fail("%s takes no .indirect() operand (the reference allows it on %s)"
                 % (op, ", ".join(sorted(INDIRECT_OPS))))
        if _key(t) != st.ind_view:
            fail("an .indirect() view is used as it was made: no slice, index or other view "
                 "of it")
        n = t.dims[1][1]
        ix = st.ind_index
        cols = ix.size // ix.dims[0][1]
        part, _ = where(n - 1, group(engine), cols)
        if part >= ix.dims[0][1]:
            fail(".indirect(): %d columns on the %s engine read index partition %d; the index "
                 "has %d" % (n, engine, part, ix.dims[0][1]))


def index_reads(views):
    """The index tensors the instruction reads for its .indirect() operands."""
    return [t.storage.ind_index for t in views
            if isinstance(getattr(t, "storage", None), IndStorage)]


def suffix(t, free):
    """The tail of an .indirect() operand's access pattern: '@' its index
    '<=' the largest offset."""
    from .access import ap_text
    st = t.storage
    if len(free) != 1 or free[0] != t.dims[1]:
        fail("this operand cannot be an .indirect() view (it is walked as %s)" % (free,))
    return "@%s<=%d" % (ap_text(st.ind_index), st.ind_bound)


def local_span(t):
    """The element offsets [lo, hi] an .indirect() view may reach."""
    st = t.storage
    return t.off, t.off + st.ind_step * st.ind_bound
