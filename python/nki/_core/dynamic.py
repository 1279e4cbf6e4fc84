"""_core/dynamic.py: on-chip views addressed by a run-time value
(`tile.ap(scalar_offset=idx, indirect_dim=k)` and `tile.select(dim, idx)`
on an SBUF/PSUM tile). Their pattern moves, when the instruction runs, by
the value of idx times the stride of the indexed dimension: trnemu's ISA
gives such an operand a register offset (docs/isa.md, "Run-time offsets"),
so the tracer loads idx into a register of the engine that runs the
instruction (reg_load, then reg_alu to scale it to bytes) right before it.
The instruction carries the largest shift that keeps the view inside its
tile (ap: the partition's row; select: the selected dimension), and a value
outside it stops the run with the kernel line named.

The view's storage is a DynStorage: it stands for the tile (every
attribute is the tile's) and carries the index, so every view derived from
it (slices, reshapes, the instruction's own operand views) keeps the
run-time offset. The dependency tracker counts such a view by every byte
it may reach; the emulator's race checker sees the bytes it reached."""
from .context import fail

# registers of every engine's sequencer that hold the shifts of one
# instruction's dynamic operands (user registers live below them on GpSimd,
# device loops above them: nki/isa/_registers.py, _core/loops.py)
DYN_REGS = (60, 59, 58)


class RunTimeStorage:
    """The storage of a view addressed at run time: it stands for the tile
    (its attributes are read and written through) and carries what the
    instruction reads when it runs, set with _own. A view has at most one
    (DynStorage here; IndStorage, _core/indirect.py)."""

    def __init__(self, real):
        object.__setattr__(self, "_real", real)

    def _own(self, **fields):
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __setattr__(self, name, value):
        setattr(self._real, name, value)


class DynStorage(RunTimeStorage):
    """A view moved by a run-time offset: the index tile, the shift per
    index unit in bytes and the end (exclusive, bytes from the tile's start
    within a partition) no shifted access may pass."""

    def __init__(self, real, index, step_bytes, limit):
        super().__init__(real)
        self._own(dyn_index=index,      # one-element tensor read at run time
                  dyn_step=step_bytes,  # bytes per unit of the index
                  dyn_limit=limit,      # end of the reachable bytes
                  dyn_reg=None)         # register of the instruction emitted


def real(st):
    """The tile behind a storage (itself unless addressed at run time)."""
    return st._real if isinstance(st, RunTimeStorage) else st


def is_dynamic(t):
    return isinstance(t.storage, DynStorage)


def dynamic_view(t, index, step_elems, di, limit):
    """A view of t's tile like t, moved at run time by index * step_elems
    elements of dtype di, within `limit` bytes of the tile's partition row."""
    from .tensors import NkiTensor
    if isinstance(t.storage, RunTimeStorage):
        fail("a view already addressed by a run-time offset takes no second one")
    if not isinstance(index, NkiTensor) or index.size != 1:
        fail("a run-time offset is a one-element tensor (or a register), got %r" % (index,))
    if step_elems <= 0:
        fail("a run-time offset on chip moves along a dimension of positive stride (got %d)"
             % step_elems)
    st = DynStorage(t.storage, index, step_elems * di.size, limit)
    return NkiTensor(st, t.dtype, t.dims, t.pdim, t.part, t.off, t.pcount)


def suffix(t, lo_bytes, hi_bytes):
    """The register-offset tail of an on-chip operand whose static bytes
    (from the tile's start) are lo_bytes..hi_bytes (exclusive): '+rR<=MAX'."""
    st = t.storage
    room = st.dyn_limit - hi_bytes
    if lo_bytes < 0 or room < 0:
        fail("the view reaches bytes %d..%d of a tile row of which it may use %d"
             % (lo_bytes, hi_bytes, st.dyn_limit))
    if st.dyn_reg is None:
        fail("internal: a dynamic operand rendered without its register")
    return "+r%d<=%d" % (st.dyn_reg, room - room % st.dyn_step)


def _wide(idx):
    """Whether a register loaded from idx may hold more than 32 bits."""
    from .. import _dtypes
    di = _dtypes.info(idx.dtype)
    return di.size > 4 or di.is_float


def prologue(tr, engine, views):
    """Before an instruction on `engine` with these operand views: load the
    shift of each distinct dynamic storage into a register of that engine."""
    seen = []
    for t in views:
        st = t.storage
        if isinstance(st, DynStorage) and all(st is not s for s in seen):
            seen.append(st)
    if len(seen) > len(DYN_REGS):
        fail("an instruction takes at most %d operands addressed by run-time offsets"
             % len(DYN_REGS))
    for st, reg in zip(seen, DYN_REGS):
        object.__setattr__(st, "dyn_reg", reg)
        idx = st.dyn_index
        tr.emit(engine, "reg_load", {}, {"src": idx}, [("rd", reg), ("src", idx)])
        if _wide(idx):
            # a 64-bit or float index could wrap when scaled: clamp it to
            # one step past the largest shift first (still out of range)
            top = st.dyn_limit // st.dyn_step + 1
            tr.emit(engine, "reg_alu", {}, {}, [("rd", reg), ("rs", reg), ("op", "min"),
                                                  ("imm", top)])
            tr.emit(engine, "reg_alu", {}, {}, [("rd", reg), ("rs", reg), ("op", "max"),
                                                  ("imm", -1)])
        if st.dyn_step != 1:
            tr.emit(engine, "reg_alu", {}, {}, [("rd", reg), ("rs", reg), ("op", "multiply"),
                                                  ("imm", st.dyn_step)])
    if seen:
        tr.flush()
