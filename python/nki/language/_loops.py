"""nki.language loops and indices: the loop iterators (unrolled by the
tracer), SPMD launch grids and program ids, dynamic slices and the legacy
index grids (arange, mgrid)."""
import builtins

from .._core import IndexExpr, current, fail, warn
from .._core.loops import DEPRECATED_LOOP


def affine_range(start, stop=None, step=1, **kwargs):
    """Iterations without loop-carried dependencies; unrolled by the tracer."""
    return builtins.range(start, stop, step) if stop is not None else builtins.range(start)


sequential_range = affine_range
static_range = affine_range


class nc:
    """Logical NeuronCore sharding of a launch-grid dimension: nc(2)."""

    def __init__(self, n):
        self.n = int(n)   # physical cores the dimension is spread over

    def __mul__(self, k):
        """nl.nc(2) * 2: spmd_dim(nl.nc(2), 2)."""
        return spmd_dim(self, k)

    def __rmul__(self, k):
        """2 * nl.nc(2): spmd_dim(2, nl.nc(2))."""
        return spmd_dim(k, self)


class _SpmdDim(int):
    """A launch-grid dimension of spmd_dim(...): the product of its factors;
    nc is the number of physical cores it is sharded over."""
    nc = 1


def spmd_dim(*factors):
    """A launch-grid dimension made of factors (ints and nc(n)); its size is
    their product. The programs are spread over the nc(n) physical cores of
    the logical core when the machine's LNC has them (else run on one)."""
    n, cores = 1, 1
    for f in factors:
        n *= f.n if isinstance(f, nc) else int(f)
        if isinstance(f, nc):
            cores *= f.n
    d = _SpmdDim(n)
    d.nc = cores
    return d


def program_id(axis=0):
    tr = current()
    if not 0 <= axis < len(tr.grid):
        fail("program_id(%d) outside a launch grid of %d dimensions" % (axis, len(tr.grid)))
    return tr.program[axis]


def num_programs(axes=0):
    tr = current()
    if isinstance(axes, (tuple, list)):
        return tuple(tr.grid[a] for a in axes)
    return tr.grid[axes] if axes < len(tr.grid) else 1


def program_ndim():
    return len(current().grid)


def ds(start, size):
    """A dynamic slice start:start+size (static on trnemu)."""
    return slice(start, start + size)


# ------------------------------------------------------- index grids

def arange(*args):
    r = builtins.range(*args)
    return IndexExpr(r.start, {(0, 1): [r.step, len(r)]})


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        out = []
        for i, k in enumerate(key):
            r = builtins.range(k.start or 0, k.stop, k.step or 1)
            out.append(IndexExpr(r.start, {(i, len(key)): [r.step, len(r)]}))
        return _Grid(out) if len(out) > 1 else out[0]


class _Grid(tuple):
    """The index grids of nl.mgrid[...], also by name: .p (the first, the
    partition axis), then .x, .y, .z."""

    def _axis(self, i):
        if i >= len(self):
            fail("the grid has %d axes" % len(self))
        return self[i]

    p = property(lambda self: self._axis(0))
    x = property(lambda self: self._axis(1))
    y = property(lambda self: self._axis(2))
    z = property(lambda self: self._axis(3))


mgrid = _MGrid()


def _static_bound(v, what):
    """A loop bound known while tracing; a register's is not."""
    if type(v).__name__ == "VirtualRegister":
        fail("%s over a register's value needs a dynamic loop, which trnemu's NKI front end "
             "does not build (give the bound as a Python integer)" % what)
    return v


def _is_register(v):
    return type(v).__name__ == "VirtualRegister"


def dynamic_range(start, stop=None, step=1):
    """A loop the device runs: with a register bound (nisa.register_alloc /
    register_load) the body is traced once and looped on the device
    (_core/loops.py); with integer bounds it is unrolled like affine_range,
    which gives the same results. Deprecated by NKI 0.6.0 (a warning
    names the kernel line): nl.fori_loop replaces it."""
    warn(DEPRECATED_LOOP % "nl.dynamic_range")
    return _device_or_unrolled(start, stop, step)


def _device_or_unrolled(start, stop=None, step=1):
    """dynamic_range's iterations, without its deprecation warning."""
    if stop is None:
        start, stop = 0, start
    if _is_register(start) or _is_register(stop):
        from .._core.loops import device_range
        return device_range(start, stop, step)
    for v in (start, stop, step):
        _static_bound(v, "nl.dynamic_range")
    return builtins.range(start, stop, step)


def fori_loop(lower, upper, body_fun, step=1):
    """body_fun(i) for i in range(lower, upper, step): a device loop when a
    bound is a register, else unrolled (as dynamic_range)."""
    for i in _device_or_unrolled(lower, upper, step):
        body_fun(i)


class no_reorder:
    """with nl.no_reorder(): keep the block's operations in program order.
    trnemu's engines run their streams in order and its dependency tracker
    orders every conflicting access, so results never depend on any other
    order: the block runs as written."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def while_loop(init, body_fun):
    """while init != 0: init = body_fun(init), as a device loop on the
    register init (the body returns the register of the next condition)."""
    if not _is_register(init):
        fail("nl.while_loop's init is a register (nisa.register_alloc), got %r" % (init,))
    from ..isa import _registers
    from .._core.loops import begin_while
    reg = init
    while begin_while(reg, deprecated=False):     # `while reg:`, without its warning
        nxt = body_fun(reg)
        if nxt is not reg:
            if not _is_register(nxt):
                fail("nl.while_loop's body returns the condition register, got %r" % (nxt,))
            _registers.register_move(reg, nxt)
