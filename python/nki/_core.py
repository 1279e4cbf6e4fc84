"""_core.py: the tracer behind nki.jit.

A kernel runs once in Python with proxy tensors (NkiTensor). Every NKI call
becomes one or more trnemu instructions (docs/isa.md) on an engine; this
module holds the tensors and their views, the SBUF/PSUM allocator (tiles
are freed when their storage object dies and the space is reused after the
last access to it), the dependency tracker that turns RAW/WAR/WAW hazards
between engines into semaphore waits, and the rendering of instructions as
trnemu assembly lines for the C kernel builder.

Semaphores: engine e counts its finished instructions on semaphore
`<e>_done` (every instruction signals +1), so "instruction k of engine e
has finished" is `wait=<e>_done>=k`. An instruction waits, for each other
engine, on the last instruction there that touched overlapping bytes in a
conflicting way; engines run their own streams in order.
"""
import os
import sys
import threading
import weakref

import numpy as np

from . import _dtypes

ENGINES = ("pe", "act", "pool", "dve", "sp")
SBUF_BYTES = 192 * 1024      # per partition, NeuronCore-v2 (the smaller one)
PSUM_BYTES = 16 * 1024       # per partition
PSUM_BANK = 2048             # bytes per partition of one PSUM bank
NUM_PARTITIONS = 128
_PKG_DIR = os.path.dirname(os.path.abspath(__file__))


class NKIError(Exception):
    """An NKI kernel failed: trace error, resource overflow or device error.
    The message starts with the kernel source line (FILE:LINE)."""


_tls = threading.local()


def current():
    """The tracer of the kernel being traced, or an error outside one."""
    tr = getattr(_tls, "tracer", None)
    if tr is None:
        raise NKIError("NKI calls work only inside a kernel run by nki.jit "
                       "(or simulate/baremetal/benchmark)")
    return tr


def user_line():
    """FILE:LINE of the innermost frame outside the nki package."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_PKG_DIR) and "neuronxcc" not in fn.split(os.sep)[-3:]:
            return "%s:%d" % (fn, f.f_lineno)
        f = f.f_back
    return "<kernel>:0"


def fail(msg):
    raise NKIError("%s: %s" % (user_line(), msg))


# ---------------------------------------------------------------- storage

class Storage:
    """One allocation: an SBUF/PSUM byte range in every partition, or an HBM
    variable. Freed (its range returned to the allocator) when it dies."""

    def __init__(self, tracer, kind, nbytes, name=None):
        self.tracer = tracer      # owning tracer
        self.kind = kind          # 'sbuf', 'psum' or 'hbm'
        self.nbytes = nbytes      # bytes per partition (on chip) or in all (HBM)
        self.name = name          # HBM variable name
        self.offset = None        # byte offset in each partition, once placed
        self.base = {}            # engine -> instruction count to wait for before any access (reuse)
        self.acc = {}             # (rect, engine, is_write) -> last instruction number
        self.written = False      # some instruction wrote it (PSUM accumulation rule)
        self.line = user_line()   # where it was created, for overflow errors
        self.core = tracer.core   # physical core (subgraph) whose SBUF/PSUM holds it
        self.alloc = tracer.alloc  # that core's allocator

    def place(self):
        """Give the storage its on-chip bytes (first use)."""
        if self.offset is None and self.kind != "hbm":
            self.offset, self.base = self.alloc.take(self)
            weakref.finalize(self, self.alloc.give, self.kind, self.offset,
                             self.nbytes, self.acc)
        return self


class Allocator:
    """Allocator of per-partition byte ranges in SBUF and PSUM.

    The free list is a sorted list of adjacent or separate ranges, each with
    the clock of the last accesses made to it (engine -> instruction count),
    so a tile that reuses bytes waits for exactly the accesses to those
    bytes (write-after-read / write-after-write across tiles). A new tile
    goes where the clock is oldest (never used first), which rotates
    through free space and lets consecutive tiles of a loop overlap.
    """

    def __init__(self):
        self.free = {"sbuf": [(0, SBUF_BYTES, {})], "psum": [(0, PSUM_BYTES, {})]}
        self.high = {"sbuf": 0, "psum": 0}   # high-water marks

    @staticmethod
    def _align(kind, start, size):
        if kind != "psum":
            return start
        if size <= PSUM_BANK:
            if (start % PSUM_BANK) + size > PSUM_BANK:
                return (start // PSUM_BANK + 1) * PSUM_BANK
            return start
        return -(-start // PSUM_BANK) * PSUM_BANK

    def take(self, st):
        size = st.nbytes
        if st.kind == "psum":
            if size > PSUM_BANK and size % PSUM_BANK:
                size += PSUM_BANK - size % PSUM_BANK
        else:
            size = (size + 31) & ~31
        lst = self.free[st.kind]
        best = None
        for i in range(len(lst)):
            start = self._align(st.kind, lst[i][0], size)
            # extend over adjacent free ranges until [start, start+size) is covered
            j, end = i, lst[i][0] + lst[i][1]
            while end < start + size and j + 1 < len(lst) and lst[j + 1][0] == end:
                j += 1
                end = lst[j][0] + lst[j][1]
            if start + size > end:
                continue
            clock = {}
            for o, ln, c in lst[i:j + 1]:
                if o < start + size and o + ln > start:
                    for e, v in c.items():
                        clock[e] = max(clock.get(e, 0), v)
            age = sum(clock.values())
            if best is None or age < best[0]:
                best = (age, i, j, start, clock)
            if age == 0:
                break
        if best is None:
            total = SBUF_BYTES if st.kind == "sbuf" else PSUM_BYTES
            used = total - sum(ln for _, ln, _ in lst)
            raise NKIError("%s: %s overflow: a tile of %d bytes per partition does not fit "
                           "(%d of %d bytes per partition in use)"
                           % (st.line, st.kind.upper(), size, used, total))
        _, i, j, start, clock = best
        rest = []
        for o, ln, c in lst[i:j + 1]:
            if o < start:
                rest.append((o, min(ln, start - o), c))
            if o + ln > start + size:
                b = max(o, start + size)
                rest.append((b, o + ln - b, c))
        lst[i:j + 1] = rest
        st.nbytes = size
        self.high[st.kind] = max(self.high[st.kind], start + size)
        return start, clock

    def give(self, kind, off, size, acc):
        clock = {}
        for (_, eng, _), n in acc.items():
            clock[eng] = max(clock.get(eng, 0), n)
        lst = self.free[kind]
        lst.append((off, size, clock))
        lst.sort(key=lambda r: r[0])
        merged = []
        for o, ln, c in lst:
            if merged and merged[-1][0] + merged[-1][1] == o and merged[-1][2] == c:
                merged[-1] = (merged[-1][0], merged[-1][1] + ln, c)
            else:
                merged.append((o, ln, c))
        self.free[kind] = merged


# ---------------------------------------------------------------- tensors

class NkiTensor:
    """A tensor or a view of one: HBM, SBUF or PSUM.

    dims: [step, count] per visible dimension; steps in elements, except the
    partition dimension of an on-chip tensor (index pdim) whose step counts
    partitions. part: first partition (on chip). off: element offset.
    """

    def __init__(self, storage, dtype, dims, pdim, part=0, off=0, pcount=1):
        self.storage = storage                 # the Storage it views
        self.dtype = _dtypes.info(dtype).public  # public dtype object
        self.dims = [list(d) for d in dims]    # [step, count] per dimension
        self.pdim = pdim                       # index of the partition dim (on chip) or None
        self.part = part                       # first partition (on chip)
        self.off = off                         # element offset
        self.pcount = pcount                   # partitions when pdim is None (on chip)

    # -- NKI surface
    @property
    def shape(self):
        return tuple(c for _, c in self.dims)

    @property
    def ndim(self):
        return len(self.dims)

    @property
    def buffer(self):
        return self.storage.kind

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
        return index_tensor(self, idx)

    def __setitem__(self, idx, value):
        from . import language
        language._assign(index_tensor(self, idx), value)

    def reshape(self, shape):
        return reshape_tensor(self, tuple(shape))

    def view(self, dtype):
        fail("tensor.view(dtype) is not supported by trnemu's NKI front end yet")

    @property
    def T(self):
        from . import language
        return language.transpose(self)

    # -- arithmetic operators
    def _bin(self, other, op, rev=False):
        from . import language
        return language._binary(op, other, self) if rev else language._binary(op, self, other)

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
        from . import language
        return language._inplace(self, o, "add")

    def __isub__(self, o):
        from . import language
        return language._inplace(self, o, "subtract")

    def __imul__(self, o):
        from . import language
        return language._inplace(self, o, "multiply")

    def __itruediv__(self, o):
        from . import language
        return language._inplace(self, o, "divide")

    __hash__ = object.__hash__

    def __bool__(self):
        fail("a tensor has no truth value while tracing (its data exists only on the device)")


def new_tensor(shape, dtype, buffer, name=None):
    """A fresh tensor of shape on buffer ('sbuf', 'psum' or an HBM kind)."""
    tr = current()
    di = _dtypes.info(dtype)
    pdim = None
    for i, s in enumerate(shape):
        if getattr(s, "_par_dim", False):
            pdim = i
    shape = tuple(int(s) for s in shape)
    if buffer in ("sbuf", "psum"):
        if not shape:
            shape = (1,)
        if pdim is None:
            pdim = 0
        for s in shape:
            if s < 1:
                fail("tensor shape %s has an empty dimension" % (shape,))
        if shape[pdim] > NUM_PARTITIONS:
            fail("the partition dimension of a %s tile is %d, more than %d (nl.tile_size.pmax)"
                 % (buffer, shape[pdim], NUM_PARTITIONS))
        free = [s for i, s in enumerate(shape) if i != pdim]
        per_part = int(np.prod(free)) if free else 1
        st = Storage(tr, buffer, per_part * di.size)
        dims = []
        stride = per_part
        for i, s in enumerate(shape):
            if i == pdim:
                dims.append([1, s])
            else:
                stride //= s
                dims.append([stride, s])
        return NkiTensor(st, di.public, dims, pdim)
    # HBM
    n = int(np.prod(shape)) if shape else 1
    st = tr.hbm_tensor(buffer, name, shape, di, n * di.size)
    dims = []
    stride = n
    for s in shape:
        stride //= s
        dims.append([stride, s])
    return NkiTensor(st, di.public, dims, None)


def reshape_tensor(t, shape):
    n = int(np.prod(shape))
    if n != int(np.prod(t.shape)):
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
    dims, stride = [list(t.dims[0])], int(np.prod(shape[1:])) if len(shape) > 1 else 1
    for s in shape[1:]:
        stride //= s
        dims.append([stride, s])
    return NkiTensor(t.storage, t.dtype, dims, 0, t.part, t.off, t.pcount)


# --------------------------------------------------------- index grids

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
            import math
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


def index_tensor(t, idx):
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(isinstance(i, IndexExpr) for i in idx):
        return _index_grid(t, idx)
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        fill = len(t.dims) - (len(idx) - 1)
        idx = idx[:k] + (slice(None),) * fill + idx[k + 1:]
    if len(idx) > len(t.dims):
        fail("too many indices (%d) for a tensor of shape %s" % (len(idx), t.shape))
    dims, pdim, part, off, pcount = [], t.pdim, t.part, t.off, t.pcount
    newp = None
    for i, (step, count) in enumerate(t.dims):
        ix = idx[i] if i < len(idx) else slice(None)
        if isinstance(ix, (int, np.integer)):
            ix = int(ix)
            if ix < 0:
                ix += count
            if not 0 <= ix < count:
                fail("index %d is out of bounds for dimension %d of size %d" % (ix, i, count))
            if i == pdim:
                part += ix * step
                pcount = 1
            else:
                off += ix * step
        elif isinstance(ix, slice):
            start, stop, stp = ix.indices(count)
            if ix.start is not None and ix.stop is not None and ix.step in (None, 1):
                if not (0 <= ix.start <= count and ix.stop <= count) or ix.start > ix.stop:
                    fail("slice %d:%d is out of bounds for dimension %d of size %d"
                         % (ix.start, ix.stop, i, count))
            n = len(range(start, stop, stp))
            if n == 0:
                fail("empty slice on dimension %d" % i)
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
    return NkiTensor(t.storage, t.dtype, dims, newp, part, off, pcount)


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
            fail("index %d..%d is out of bounds for dimension %d of size %d" % (lo, hi, i, count))


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


# -------------------------------------------------- access patterns

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
    return [d for i, d in enumerate(t.dims) if i != t.pdim]


def partitions(t):
    """(start, step, count) of the partitions an on-chip view touches."""
    if t.pdim is None:
        return t.part, 1, t.pcount
    s, c = t.dims[t.pdim]
    return t.part, s, c


def ap_text(t, dtype_override=None, dims_override=None, merge=True):
    """The assembly access pattern of a view (docs/isa.md)."""
    di = _dtypes.info(dtype_override if dtype_override is not None else t.dtype)
    st = t.storage
    if st.kind == "hbm":
        dims = dims_override if dims_override is not None else [list(d) for d in t.dims]
        if not dims:
            dims = [[1, 1]]
        pd = dims[0]
        free = _merge(dims[1:]) if merge else (dims[1:] or [[1, 1]])
        if not dims[1:]:
            free = [[1, 1]]
        if len(free) > 4:
            fail("an HBM access with more than 5 non-contiguous dimensions")
        return "hbm:%s[[%d,%d], %d, %s]:%s" % (
            st.name, pd[0], pd[1], t.off * di.size,
            ", ".join("[%d,%d]" % tuple(d) for d in free), di.isa)
    st.place()
    p0, ps, pc = partitions(t)
    free = dims_override if dims_override is not None else free_dims(t)
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
    return "%s[%s, %d, %s]:%s" % (st.kind, part, byte,
                                  ", ".join("[%d,%d]" % tuple(d) for d in free), di.isa)


def rect(t, dtype_override=None):
    """Bounding box of a view: (partition lo, hi, byte lo, hi), hi exclusive."""
    di = _dtypes.info(dtype_override if dtype_override is not None else t.dtype)
    st = t.storage
    if st.kind == "hbm":
        lo = hi = t.off
        for s, c in t.dims:
            lo += min(0, s * (c - 1))
            hi += max(0, s * (c - 1))
        return (0, 1, lo * di.size, (hi + 1) * di.size)
    st.place()
    p0, ps, pc = partitions(t)
    lo = hi = t.off
    for s, c in free_dims(t):
        lo += min(0, s * (c - 1))
        hi += max(0, s * (c - 1))
    return (p0, p0 + (pc - 1) * ps + 1, st.offset + lo * di.size, st.offset + (hi + 1) * di.size)


def check_bounds(t):
    """A view must stay inside its tile or HBM tensor."""
    di = _dtypes.info(t.dtype)
    lo = hi = t.off
    for i, (s, c) in enumerate(t.dims):
        if i == t.pdim:
            continue
        lo += min(0, s * (c - 1))
        hi += max(0, s * (c - 1))
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


# ------------------------------------------------------- instructions

class Insn:
    """One instruction waiting to be committed: its engine, op and
    operands. Views (NkiTensor) are rendered as access patterns at commit."""

    def __init__(self, engine, op, outs, ins, args, line):
        self.engine = engine      # 'pe', 'act', 'pool', 'dve', 'sp'
        self.op = op              # ISA mnemonic
        self.outs = outs          # {operand: NkiTensor} written
        self.ins = ins            # {operand: NkiTensor} read
        self.args = args          # ordered [(name, value or None for a flag)]
        self.line = line          # kernel source FILE:LINE
        self.rmw = False          # dst is also read (accumulate, DMA add)


class CoreTrace:
    """What one physical core (one NEFF subgraph) gets: its instructions,
    their kernel lines, per-engine counts and its SBUF/PSUM allocator."""

    def __init__(self):
        self.alloc = Allocator()                   # SBUF/PSUM allocator of the core
        self.lines = []                            # assembly lines
        self.src = []                              # kernel source line of each
        self.count = dict.fromkeys(ENGINES, 0)     # instructions per engine
        self.eng_lines = {e: [] for e in ENGINES}  # (source line, op) per engine instruction


class Tracer:
    """State of one trace: instructions, HBM tensors, allocator, tracker."""

    def __init__(self, name, ncores=1):
        self.name = name          # kernel (NEFF) name
        self.cores = [CoreTrace() for _ in range(ncores)]  # per physical core (subgraph)
        self.core = 0             # the core programs are being traced for
        self.pending = None       # the last instruction, not yet committed
        self.set_core(0)
        self.hbm = {}             # name -> Storage of HBM variables
        self.hbm_decl = []        # (kind, name, dtype info, shape)
        self.inputs = []          # names of input tensors in argument order
        self.shared_seq = []      # shared_hbm Storages in creation order (SPMD reuse)
        self.shared_pos = 0       # position in shared_seq of this program
        self.program = (0,)       # SPMD program id
        self.grid = (1,)          # SPMD grid
        self.scratch_n = 0        # counter for generated names
        self.keep = []            # storages kept alive until the end of the trace
        self.consts = []          # (name, dtype info, shape, bytes) of shared constants

    def set_core(self, c):
        """Trace the next instructions for physical core c (subgraph c)."""
        self.flush()
        self.core = c
        ct = self.cores[c]
        self.alloc, self.lines, self.src = ct.alloc, ct.lines, ct.src
        self.count, self.eng_lines = ct.count, ct.eng_lines

    # -- HBM
    def hbm_tensor(self, buffer, name, shape, di, nbytes):
        if buffer == "shared_hbm" and self.shared_pos < len(self.shared_seq):
            st = self.shared_seq[self.shared_pos]
            self.shared_pos += 1
            return st
        self.scratch_n += 1
        nm = name or "t%d" % self.scratch_n
        nm = "".join(ch if ch.isalnum() or ch in "_.-" else "_" for ch in nm)
        if nm in self.hbm or not nm[0].isalpha():
            nm = "t%d_%s" % (self.scratch_n, nm)
        st = Storage(self, "hbm", nbytes, nm)
        st.shape = shape
        st.di = di
        st.role = "scratch"
        self.hbm[nm] = st
        self.keep.append(st)
        if buffer == "shared_hbm":
            self.shared_seq.append(st)
            self.shared_pos += 1
        return st

    # -- emission
    def emit(self, engine, op, outs, ins, args, rmw=False):
        for t in list(outs.values()) + list(ins.values()):
            check_grid(t)
            check_bounds(t)
        insn = Insn(engine, op, outs, ins, args, user_line())
        insn.rmw = rmw
        for t in outs.values():
            t.storage.written = True    # at emission: the PSUM accumulate rule reads it
        self.flush()
        self.pending = insn
        return insn

    def flush(self):
        insn, self.pending = self.pending, None
        if insn is not None:
            self.commit(insn)

    def commit(self, insn):
        eng = insn.engine
        me = (self.core, eng)
        waits = {}
        touched = []
        for name, t in insn.ins.items():
            touched.append((t, False))
        for name, t in insn.outs.items():
            touched.append((t, True))
            if insn.rmw:
                touched.append((t, False))
        for t, w in touched:
            st = t.storage
            r = rect(t, getattr(t, "_as", None))
            # only the same core's engines can be waited for: SPMD programs on
            # other cores are independent by NKI's rules
            for e, n in st.base.items():
                if e != me and e[0] == self.core:
                    waits[e[1]] = max(waits.get(e[1], 0), n)
            for (r2, e2, w2), n in st.acc.items():
                if e2 != me and e2[0] == self.core and (w or w2) and _overlap(r, r2):
                    waits[e2[1]] = max(waits.get(e2[1], 0), n)
        parts = ["%s.%s" % (eng, insn.op)]
        for name, v in insn.args:
            if v is None:
                parts.append(name)
            elif isinstance(v, NkiTensor):
                parts.append("%s=%s" % (name, ap_text(v, getattr(v, "_as", None),
                                                      getattr(v, "_dims", None),
                                                      not getattr(v, "_nomerge", False))))
            elif isinstance(v, float):
                parts.append("%s=%s" % (name, _fmt_float(v)))
            else:
                parts.append("%s=%s" % (name, v))
        for e, n in sorted(waits.items()):
            if n > 0:
                parts.append("wait=%s_done>=%d" % (e, n))
        self.count[eng] += 1
        n = self.count[eng]
        parts.append("signal=%s_done+=1" % eng)
        for t, w in touched:
            st = t.storage
            key = (rect(t, getattr(t, "_as", None)), me, w)
            st.acc[key] = n
            if w:
                st.written = True
        self.lines.append(" ".join(parts))
        self.src.append(insn.line)
        self.eng_lines[eng].append((insn.line, insn.op))


def _fmt_float(v):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(float(np.float32(v)))
