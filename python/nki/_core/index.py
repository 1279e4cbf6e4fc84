"""_core/index.py: indexing a tensor: integer and slice indices, and the
legacy affine index grids (nl.arange / nl.mgrid expressions), their
masks and the bounds checks made when an instruction uses them."""
import math

import numpy as np

from .context import fail, fail_index
from .tensors import NkiTensor


class IndexExpr:
    """An affine index over grid axes (legacy nl.arange / nl.mgrid):
    const + sum(coef * i_axis), axis = (position, rank, size)."""

    def __init__(self, const=0, terms=None):
        self.const = const        # constant part
        self.terms = terms or {}  # (axis position, rank) -> [coef, size]

    def _combine(self, other, sign):
        if isinstance(other, IndexExpr):
            t = {k: list(v) for k, v in self.terms.items()}
            for k, (c, n) in other.terms.items():
                if k in t:
                    t[k][0] += sign * c
                else:
                    t[k] = [sign * c, n]
            return IndexExpr(self.const + sign * other.const, t)
        if isinstance(other, (int, np.integer)):
            return IndexExpr(self.const + sign * int(other), self.terms)
        return NotImplemented

    def __add__(self, o): return self._combine(o, 1)
    def __radd__(self, o): return self._combine(o, 1)
    def __sub__(self, o): return self._combine(o, -1)

    def __rsub__(self, o):
        neg = IndexExpr(-self.const, {k: [-c, n] for k, (c, n) in self.terms.items()})
        return neg + o

    def __mul__(self, o):
        if not isinstance(o, (int, np.integer)):
            return NotImplemented
        return IndexExpr(self.const * int(o), {k: [c * int(o), n] for k, (c, n) in self.terms.items()})

    __rmul__ = __mul__

    def __getitem__(self, key):
        """nl.arange(n)[:, None] places a 1-D grid on one axis of a 2-D grid."""
        if not isinstance(key, tuple):
            key = (key,)
        if len(self.terms) != 1:
            fail("only a plain nl.arange can be placed with [:, None]")
        (_, _), (c, n) = next(iter(self.terms.items()))
        rank = len(key)
        pos = [i for i, k in enumerate(key) if k is not None]
        if len(pos) != 1 or not isinstance(key[pos[0]], slice):
            fail("place an nl.arange with exactly one ':' and None elsewhere")
        return IndexExpr(self.const, {(pos[0], rank): [c, n]})

    def _cmp(self, o, op):
        return Mask([(self - o, op)])

    def __lt__(self, o): return self._cmp(o, "lt")
    def __le__(self, o): return self._cmp(o, "le")
    def __gt__(self, o): return self._cmp(o, "gt")
    def __ge__(self, o): return self._cmp(o, "ge")


class Mask:
    """A conjunction of affine comparisons with 0 (legacy mask=)."""

    def __init__(self, conds):
        self.conds = conds        # list of (IndexExpr, 'lt'|'le'|'gt'|'ge') meaning expr op 0

    def __and__(self, o):
        return Mask(self.conds + o.conds)

    def ranges(self):
        """{axis position: (lo, hi)}: the grid indices the mask keeps."""
        out = {}
        for e, op in self.conds:
            if len(e.terms) != 1:
                fail("a mask condition must use a single index axis")
            (pos, _), (c, n) = next(iter(e.terms.items()))
            lo, hi = out.get(pos, (0, n))
            # c*i + k  op 0
            k = e.const
            if c == 0:
                fail("a mask condition needs an index term")
            if op in ("lt", "le"):
                bound = (-k - (1 if op == "lt" else 0)) / c   # c*i <= -k-1 (lt) or -k
                if c > 0:
                    hi = min(hi, math.floor(bound) + 1)
                else:
                    lo = max(lo, math.ceil(bound))
            else:
                bound = (-k + (1 if op == "gt" else 0)) / c
                if c > 0:
                    lo = max(lo, math.ceil(bound))
                else:
                    hi = min(hi, math.floor(bound) + 1)
            out[pos] = (lo, hi)
        return out


_ALL = slice(None)


def _plain(idx):
    """Whether idx holds only slices, Python ints and Ellipsis (the common
    index)."""
    for i in idx:
        if type(i) is not slice and type(i) is not int and i is not Ellipsis:
            return False
    return True


def _expand_ellipsis(t, idx):
    """idx with its Ellipsis replaced by the full slices it stands for."""
    k = idx.index(Ellipsis)
    fill = len(t.dims) - (len(idx) - 1)
    return idx[:k] + (slice(None),) * fill + idx[k + 1:]


def index_tensor(t, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    if not _plain(idx):
        if any(isinstance(i, NkiTensor) for i in idx):
            return _index_indirect(t, idx)
        if any(isinstance(i, IndexExpr) for i in idx):
            return _index_grid(t, idx)
        if any(i is Ellipsis for i in idx):
            idx = _expand_ellipsis(t, idx)
    elif Ellipsis in idx:     # slices, ints and Ellipsis: == is identity here
        idx = _expand_ellipsis(t, idx)
    if len(idx) > len(t.dims):
        fail("too many indices (%d) for a tensor of shape %s" % (len(idx), t.shape))
    dims, pdim, part, off, pcount = [], t.pdim, t.part, t.off, t.pcount
    newp = None
    for i, (step, count) in enumerate(t.dims):
        ix = idx[i] if i < len(idx) else _ALL
        if type(ix) is not slice and isinstance(ix, (int, np.integer)):
            ix = int(ix)
            if ix < 0:
                ix += count
            if not 0 <= ix < count:
                fail_index("index %d is out of bounds for dimension %d of size %d" % (ix, i, count))
            if i == pdim:
                # an on-chip tensor keeps its partition dimension, of size 1
                part += ix * step
                newp = len(dims)
                dims.append([step, 1])
            else:
                off += ix * step
        elif isinstance(ix, slice):
            start, stop, stp = ix.indices(count)
            if ix.start is not None and ix.stop is not None and ix.step in (None, 1):
                if not (0 <= ix.start <= count and ix.stop <= count) or ix.start > ix.stop:
                    fail_index("slice %d:%d is out of bounds for dimension %d of size %d"
                         % (ix.start, ix.stop, i, count))
            # 0 for an empty slice: the view has no elements
            n = (stop - start if stop > start else 0) if stp == 1 else len(range(start, stop, stp))
            if i == pdim:
                if stp < 0:
                    fail("a negative step on the partition dimension is not possible")
                part += start * step
                newp = len(dims)
            else:
                off += start * step
            dims.append([step * stp, n])
        else:
            fail("unsupported index %r" % (ix,))
    if t.storage.kind != "hbm" and newp is not None and len(dims) < 2:
        dims.append([1, 1])      # an on-chip view is at least [partitions, elements]
    return NkiTensor._of(t.storage, t.dtype, dims, newp, part, off, pcount)


def _index_grid(t, idx):
    """Index with affine grid expressions: the result's dims are the grid
    axes, each with the steps its index terms contribute."""
    if len(idx) != len(t.dims):
        fail("index grids must index every dimension (%d given for shape %s)" % (len(idx), t.shape))
    axes = {}
    off, part = t.off, t.part
    pdim_axis = None
    checks = []
    for i, ix in enumerate(idx):
        step, count = t.dims[i]
        if isinstance(ix, (int, np.integer)):
            ix = IndexExpr(int(ix))
        if isinstance(ix, slice):
            fail("do not mix slices with nl.arange/mgrid index grids")
        checks.append((i, ix.const, {pos: (c, n) for (pos, _), (c, n) in ix.terms.items()}, count))
        if i == t.pdim:
            part += ix.const * step
            if len(ix.terms) > 1:
                fail("the partition index must use one grid axis")
        else:
            off += ix.const * step
        for (pos, rank), (c, n) in ix.terms.items():
            a = axes.setdefault(pos, [0, n, False])
            if i == t.pdim:
                a[0] = c * step
                a[2] = True
                pdim_axis = pos
            else:
                if a[2]:
                    fail("a grid axis used for the partition cannot also index a free dimension")
                a[0] += c * step
    # a grid axis no index uses is a dimension of size 1 (t1d[arange(n)[:, None]] is [n, 1])
    rank = max([r for ix in idx if isinstance(ix, IndexExpr) for (_, r) in ix.terms] or [0])
    for pos in range(rank):
        axes.setdefault(pos, [0, 1, False])
    dims, newp = [], None
    for pos in sorted(axes):
        s, n, isp = axes[pos]
        if isp:
            newp = len(dims)
        dims.append([s, n])
    if t.storage.kind != "hbm" and newp is None and pdim_axis is None:
        pcount = 1
    else:
        pcount = t.pcount
    out = NkiTensor(t.storage, t.dtype, dims, newp, part, off, pcount)
    out._checks = checks
    out._ranges = {}
    return out


def check_grid(t):
    """Index grids are checked against their dimensions when an
    instruction uses them (after any mask has narrowed the grid axes)."""
    for i, const, terms, count in getattr(t, "_checks", ()):
        lo = hi = const
        for pos, (c, n) in terms.items():
            a, b = t._ranges.get(pos, (0, n))
            lo += builtins_min(c * a, c * (b - 1))
            hi += builtins_max(c * a, c * (b - 1))
        if lo < 0 or hi >= count:
            fail_index("index %d..%d is out of bounds for dimension %d of size %d" % (lo, hi, i, count))


builtins_min, builtins_max = min, max


def restrict(t, ranges):
    """The part of a view that a mask keeps: dim k limited to [lo, hi)."""
    dims = [list(d) for d in t.dims]
    off, part = t.off, t.part
    for k, (lo, hi) in ranges.items():
        if k >= len(dims):
            continue
        if hi <= lo:
            return None
        s, n = dims[k]
        hi = min(hi, n)
        if k == t.pdim:
            part += lo * s
        else:
            off += lo * s
        dims[k] = [s, hi - lo]
    out = NkiTensor(t.storage, t.dtype, dims, t.pdim, part, off, t.pcount)
    if hasattr(t, "_checks"):
        out._checks = t._checks
        out._ranges = dict(t._ranges)
        for k, (lo, hi) in ranges.items():
            out._ranges[k] = (lo, hi)
    return out


def _index_indirect(t, idx):
    """t[index_tile, ...]: the rows of an HBM tensor named by the
    per-partition values of an on-chip tile (an indirect DMA view: a gather
    when read, a scatter when written)."""
    if not isinstance(idx[0], NkiTensor) or any(isinstance(i, NkiTensor) for i in idx[1:]):
        fail("a tensor index works on the first dimension only")
    if t.storage.kind != "hbm":
        fail("a tensor index works on an HBM tensor (an indirect DMA)")
    rows = idx[0].shape[0]
    # one row per index (the indices are checked against the tensor when the DMA runs)
    base = NkiTensor(t.storage, t.dtype, [[t.dims[0][0], rows]] + t.dims[1:], None, 0, t.off)
    ranks = [r for i in idx[1:] if isinstance(i, IndexExpr) for (_, r) in i.terms]
    first = IndexExpr(0, {(0, ranks[0]): [1, rows]}) if ranks else slice(0, rows)
    view = index_tensor(base, (first,) + tuple(idx[1:]))
    view._indirect = (idx[0], 0)
    return view
