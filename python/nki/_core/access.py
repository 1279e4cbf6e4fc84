"""_core/access.py: access patterns: how a tensor view is written as a
trnemu assembly operand (docs/isa.md; a view addressed by a run-time
offset with its register tail, _core/dynamic.py), its bounding box of
bytes for the dependency tracker, and the bounds check of a view against
its tensor."""
from .context import NUM_PARTITIONS, fail
from . import indirect
from .dynamic import is_dynamic, suffix as dyn_suffix


def _merge(dims):
    """Merge adjacent free dims that walk contiguously (outermost first)."""
    out = []
    for s, c in dims:
        if c == 1 and out:
            continue
        if out and out[-1][0] == s * c:
            out[-1] = [s, out[-1][1] * c]
        else:
            out.append([s, c])
    if len(out) > 1 and out[0][1] == 1:
        out = out[1:]
    return out or [[1, 1]]


def free_dims(t):
    pdim = t.pdim
    if pdim == 0:
        return t.dims[1:]
    return [d for i, d in enumerate(t.dims) if i != pdim]


def partitions(t):
    """(start, step, count) of the partitions an on-chip view touches."""
    if t.pdim is None:
        return t.part, 1, t.pcount
    s, c = t.dims[t.pdim]
    return t.part, s, c


def _geometry(t):
    """partitions(t) and free_dims(t) of an on-chip view, in one pass."""
    pdim = t.pdim
    if pdim is None:
        return t.part, 1, t.pcount, t.dims
    dims = t.dims
    s, c = dims[pdim]
    return t.part, s, c, (dims[1:] if pdim == 0 else dims[:pdim] + dims[pdim + 1:])


def _indexed_dims(t, dims):
    """The HBM pattern an indexed DMA sees: a run-time scalar offset is one
    row of step _scalar_step that the index shifts, over the whole pattern;
    a vector offset's rows step by the indexed dimension's stride."""
    if hasattr(t, "_scalar_step"):
        return [[t._scalar_step, 1]] + dims
    if hasattr(t, "_row_step"):
        return [[t._row_step, dims[0][1]]] + dims[1:]
    return dims


def ap_text(t, dims_override=None, merge=True):
    """The assembly access pattern of a view (docs/isa.md)."""
    di = t.di
    st = t.storage
    if st.kind == "hbm":
        dims = dims_override if dims_override is not None else t.dims   # read, never changed
        dims = _indexed_dims(t, dims or [[1, 1]])
        pd = dims[0]
        free = _merge(dims[1:]) if merge else (dims[1:] or [[1, 1]])
        if not dims[1:]:
            free = [[1, 1]]
        if pd[1] > NUM_PARTITIONS:
            # an HBM pattern's first dimension counts at most 128: walk a
            # longer one as a free dimension of a single row (same order)
            pd, free = [0, 1], (_merge(dims) if merge else dims)
        if len(free) > 4:
            fail("an HBM access with more than 5 non-contiguous dimensions")
        return "hbm:%s[[%d,%d], %d, %s]:%s" % (st.name, pd[0], pd[1], t.off * di.size,
                                                _dims_text(free), di.isa)
    st.place()
    p0, ps, pc, free = _geometry(t)
    if dims_override is not None:
        free = dims_override
    free = _merge(free) if merge else (free or [[1, 1]])
    if len(free) > 4:
        fail("an on-chip access with more than 4 non-contiguous free dimensions")
    byte = st.offset + t.off * di.size
    if byte < 0:
        fail("a view starts before its tile")
    if p0 < 0 or p0 + (pc - 1) * ps >= NUM_PARTITIONS:
        fail("partitions %d..%d are outside 0..127" % (p0, p0 + (pc - 1) * ps))
    pstop = p0 + pc * ps
    part = "%d:%d" % (p0, pstop) if ps == 1 else "%d:%d:%d" % (p0, pstop, ps)
    tail = ""
    if is_dynamic(t):
        lo, hi = _span(t.off, free)
        tail = dyn_suffix(t, lo * di.size, (hi + 1) * di.size)
    elif indirect.is_indirect(t):
        tail = indirect.suffix(t, free)
    return "%s[%s, %d, %s]:%s%s" % (st.kind, part, byte, _dims_text(free), di.isa, tail)


def _dims_text(dims):
    """[step,count] pairs as the assembly writes them."""
    return ", ".join(["[%d,%d]" % (s, c) for s, c in dims])


def rect(t):
    """Bounding box of a view: (partition lo, hi, byte lo, hi), hi exclusive."""
    di = t.di
    st = t.storage
    if st.kind == "hbm" and hasattr(t, "_indirect"):
        return (0, 1, 0, st.nbytes)      # indexed rows: any row of the tensor
    if st.kind == "hbm":
        lo, hi = _span(t.off, t.dims)
        return (0, 1, lo * di.size, (hi + 1) * di.size)
    st.place()
    p_lo, p_hi, b_lo, b_hi = local_rect(t, di)
    return (p_lo, p_hi, st.offset + b_lo, st.offset + b_hi)


def local_rect(t, di=None):
    """The bounding box of an on-chip view within its tile (bytes from the
    tile's start): what rect() gives, before the tile is placed."""
    di = di or t.di
    p0, ps, pc, free = _geometry(t)
    lo, hi = indirect.local_span(t) if indirect.is_indirect(t) else _span(t.off, free)
    end = (hi + 1) * di.size
    if is_dynamic(t):
        end = max(end, t.storage.dyn_limit)   # any shift the run may give it
    return (p0, p0 + (pc - 1) * ps + 1, lo * di.size, end)


def _span(off, dims):
    """The lowest and highest element offsets dims reach from off."""
    lo = hi = off
    for s, c in dims:
        d = s * (c - 1)
        if d < 0:
            lo += d
        else:
            hi += d
    return lo, hi


_PATTERN_OVERRIDES = ("_indirect", "_scalar", "_scalar_step", "_row_step")


def dense_span(t):
    """The bytes [lo, hi) of an HBM view whose elements fill that range
    with no gap and no repeat; None for any other view, and for a view
    whose assembled pattern is not its own dims (indexed rows, run-time
    offsets, a re-shaped pattern)."""
    if t._dims is not None or any(hasattr(t, a) for a in _PATTERN_OVERRIDES):
        return None
    span = 1
    for s, c in sorted((abs(s), c) for s, c in t.dims if c > 1):
        if s != span:
            return None
        span *= c
    lo = _span(t.off, t.dims)[0]
    size = t.di.size
    return lo * size, (lo + span) * size

def check_bounds(t):
    """A view must stay inside its tile or HBM tensor."""
    di = t.di
    # not partitions; nor indexed rows, checked when the DMA runs
    skip0 = hasattr(t, "_indirect") and not hasattr(t, "_scalar_step")
    if skip0:
        dims = [d for i, d in enumerate(t.dims) if i != t.pdim and i != 0]
    else:
        dims = t.dims if t.pdim is None else free_dims(t)
    lo, hi = indirect.local_span(t) if indirect.is_indirect(t) else _span(t.off, dims)
    if lo < 0 or (hi + 1) * di.size > t.storage.nbytes:
        fail("the access reaches elements %d..%d outside its %s tensor of %d bytes%s"
             % (lo, hi, t.storage.kind.upper(), t.storage.nbytes,
                " per partition" if t.storage.kind != "hbm" else ""))


def elems(t):
    """Elements per partition and partitions of a view."""
    n = 1
    for s, c in free_dims(t):
        n *= c
    return n


def _overlap(a, b):
    return a[0] < b[1] and b[0] < a[1] and a[2] < b[3] and b[2] < a[3]
