"""nki.isa instruction handles: NkiInstruction, what an nki.isa call in the
current form (destination given) returns, and depends_on, which adds a
scheduling dependency as a semaphore wait in the traced program."""
import functools

from .. import _core
from .._core.tracer import add_dependency


class NkiInstruction:
    """Opaque handle to a traced instruction; c.depends_on(a, b) makes c
    start after a and b have finished."""

    def __init__(self, handle):
        self._insn = handle      # the tracer's Insn (committed when the next one is emitted)

    def depends_on(self, *producers):
        tr = _core.current()
        for p in producers:
            if not isinstance(p, NkiInstruction):
                _core.fail("depends_on takes instructions returned by nki.isa calls, got %r" % (p,))
            add_dependency(tr, self._insn, p._insn)
        return self

    def __repr__(self):
        return "NkiInstruction(%s.%s at %s)" % (self._insn.engine, self._insn.op, self._insn.line)


def returning_handle(fn):
    """Wrap an nki.isa call: when it returns nothing (the current form) and
    emitted an instruction, return that instruction's handle."""
    @functools.wraps(fn)
    def call(*args, **kw):
        tr = _core.current()
        before = tr.emitted
        r = fn(*args, **kw)
        if r is None and tr.emitted > before:
            return NkiInstruction(tr.last)
        return r
    return call
