"""nki.isa virtual registers: register_alloc, register_move, register_load
and register_store. trnemu keeps every virtual register in one register of
the GpSimd engine's sequencer (64 per engine, docs/isa.md), so the values
move in program order on that engine. Control flow on a register's value
(nl.dynamic_range over a register, `while reg:`) is a device loop
(_core/loops.py)."""
from .._core import NkiTensor, current, fail

_ENGINE = "pool"       # the sequencer that holds the registers
_REGS = 58             # registers for kernels (58..60 hold run-time offsets, _core/dynamic.py;
                       # 61..63 count device loops)


class VirtualRegister:
    """A register allocated by register_alloc (its number on GpSimd)."""

    def __init__(self, number):
        self.number = number      # physical register on the GpSimd sequencer

    def __bool__(self):
        """`while reg:` is a device loop (_core/loops.py): the first test
        opens it, the test after the body closes it. Any other truth test
        (`if reg:`) leaves a loop open, which the end of the trace reports."""
        from .._core.loops import begin_while
        return begin_while(self)

    def __index__(self):
        fail("a register's value is known only on the device; it cannot be a Python integer")

    def __repr__(self):
        return "VirtualRegister(r%d)" % self.number


def register_alloc(x=None):
    """A new register, set to the integer x when given."""
    tr = current()
    n = getattr(tr, "registers", 0)
    if n >= _REGS:
        fail("more than %d registers allocated in one kernel" % _REGS)
    tr.registers = n + 1
    reg = VirtualRegister(n)
    if x is not None:
        register_move(reg, x)
    return reg


def _reg(r, what):
    if not isinstance(r, VirtualRegister):
        fail("%s must be a register from nisa.register_alloc, got %r" % (what, r))
    return r.number


def register_move(dst, src):
    """dst = src (an integer or another register)."""
    rd = _reg(dst, "register_move dst")
    if isinstance(src, VirtualRegister):
        current().emit(_ENGINE, "reg_alu", {}, {}, [("rd", rd), ("rs", src.number),
                                                     ("op", "add"), ("imm", 0)])
    elif isinstance(src, int) and not isinstance(src, bool):
        if not -2 ** 31 <= src < 2 ** 32:
            fail("register_move value %d does not fit 32 bits" % src)
        v = src - 2 ** 32 if src >= 2 ** 31 else src
        current().emit(_ENGINE, "reg_move", {}, {}, [("rd", rd), ("value", v)])
    else:
        fail("register_move src must be an integer or a register, got %r" % (src,))


def _one_element(t, what):
    if not isinstance(t, NkiTensor) or t.size != 1:
        fail("%s must be a tensor of one element, got %r" % (what, t))


def register_load(dst, src):
    """dst = the 32-bit value of the one-element tensor src (HBM or SBUF)."""
    rd = _reg(dst, "register_load dst")
    _one_element(src, "register_load src")
    current().emit(_ENGINE, "reg_load", {}, {"src": src}, [("rd", rd), ("src", src)])


def register_store(dst, src):
    """The one-element tensor dst (HBM or SBUF) = the register src."""
    rs = _reg(src, "register_store src")
    _one_element(dst, "register_store dst")
    current().emit(_ENGINE, "reg_store", {"dst": dst}, {}, [("dst", dst), ("rs", rs)])
