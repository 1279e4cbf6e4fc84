"""_core/loops.py: device loops, the loops that run on the device because
a bound or condition is a register (its value known only there):
nl.dynamic_range / fori_loop over a register, `while reg:` and
nl.while_loop.

The body is traced once. Every engine with instructions in it runs the
loop itself: a counter in its own registers (61-63) and a branch out when
it reaches the bound (a while loop instead reads the condition register,
which GpSimd publishes to the others through an SBUF word each
iteration), the body, a barrier of all those engines, and a jump back. Inside the body the static semaphore counts of straight-line
code cannot work (the number of instructions run depends on the trip
count), so body instructions signal no `<e>_done`; instead a body
instruction that needs an earlier one of another engine waits on a
semaphore of that pair of engines (`L_<producer>_<consumer>`, counted up by
the producer, down by the consumer, so it is back at 0 after every
iteration), and the per-iteration barrier (`B_<from>_<to>`) keeps one
iteration's work from overlapping the next's. Dependencies on instructions
before the loop keep their static waits. After the loop each of those
engines runs one counted `nop`, which every later access to what the body
touched waits for.
"""
from .access import ap_text, rect
from .context import ENGINES, current, fail, user_line, warn
from .dynamic import real

# the warning of the loop forms NKI 0.6.0 deprecates (nl.fori_loop and
# nl.while_loop replace them; they still run)
DEPRECATED_LOOP = ("%s loops are deprecated since NKI 0.6.0 and will be removed: "
                   "use nl.fori_loop (a counted loop) or nl.while_loop (a condition)")

VBASE = 1 << 40           # body instructions are numbered VBASE + index in the trackers
REG_COUNTER, REG_BOUND, REG_TEMP = 63, 62, 61


def sem_lines():
    """The .sem declarations of the pair and barrier semaphores."""
    return [".sem %s_%s_%s" % (k, a, b) for k in ("L", "B") for a in ENGINES for b in ENGINES
            if a != b]


class DeviceLoop:
    """One device loop being traced: for i in range(start, stop, step), or
    while the condition register is not 0."""

    def __init__(self, tr, start, stop, step, words, kind="range", cond=None):
        self.tr = tr
        self.kind = kind          # 'range' (a counter) or 'while' (a register condition)
        self.cond = cond          # the while loop's condition register (on GpSimd)
        self.line = user_line()   # the kernel line of the loop
        self.start, self.stop, self.step = start, stop, step
        self.words = words        # {"start"/"stop": (SBUF word tile, pool reg_store count)}
        self.body = []            # [(insn, operand text, static waits, body deps)]
        self.storages = {}        # id -> Storage the body accessed
        self.signals = {}         # body index -> consumer engines its producer signals

    # -- while the body is traced
    def record(self, insn, parts, waits, touched):
        idx = len(self.body)
        static, deps = {}, {}
        for e, n in waits.items():
            if n >= VBASE:
                deps[e] = n - VBASE
            elif n > 0:
                static[e] = n
        self.body.append((insn, " ".join(parts), static, deps))
        me = (self.tr.core, insn.engine)
        for t, w in touched:
            st = t.storage
            st.acc[(rect(t), me, w)] = VBASE + idx
            if w:
                st.written = True
            self.storages[id(real(st))] = real(st)
        insn.core, insn.number, insn.index = self.tr.core, None, None

    # -- at the end of the body
    def finish(self):
        tr = self.tr
        if not self.body:
            return
        engines = [e for e in ENGINES if any(b[0].engine == e for b in self.body)
                   or (e == "pool" and self.kind == "while")]
        blocks = {e: self._engine_body(e) for e in engines}
        for e in engines:
            self._emit_engine(e, engines, blocks[e])
        exits = {}
        for e in engines:
            tr.count[e] += 1
            exits[e] = tr.count[e]
            self._line(e, "%s.nop signal=%s_done+=1" % (e, e), "loop end")
        self._retire(exits)

    def _engine_body(self, eng):
        """One engine's body instructions with the pair semaphores they wait
        on (a consumer waits on producer engine p only when it needs a later
        p instruction than the engine already waited for, so each signal is
        taken exactly once per iteration); records which producer signals
        which consumer engine in self.signals."""
        consumed = {}             # producer engine -> highest body index already waited for
        out = []
        for idx, (insn, text, static, deps) in enumerate(self.body):
            if insn.engine != eng:
                continue
            pair = []
            for p, j in sorted(deps.items()):
                if j > consumed.get(p, -1):
                    consumed[p] = j
                    pair.append(p)
                    self.signals.setdefault(j, []).append(eng)
            out.append((idx, text, static, pair))
        return out

    def _emit_engine(self, eng, engines, block):
        tr = self.tr
        others = [f for f in engines if f != eng]
        for ln in self._prologue(eng):
            self._line(eng, ln, "loop start")
        top = len(tr.eng_lines[eng])
        body = []
        for idx, text, static, pair in block:
            body += self._with_sync(eng, idx, text, static, pair)
        head = self._test(eng, others, 0)
        n_tail = (2 if others else 0) + (2 if self.kind == "range" else 1)
        end = top + len(head) + len(body) + n_tail
        for ln in self._test(eng, others, end):
            self._line(eng, ln, "loop test")
        for ln, idx in body:
            self._line(eng, ln, self.body[idx][0].line, self.body[idx][0].op)
        if others:
            self._line(eng, "%s.nop %s" % (eng, " ".join("signal=B_%s_%s+=1" % (eng, f)
                                                         for f in others)), "loop barrier")
            self._line(eng, "%s.nop %s %s" % (eng, " ".join("wait=B_%s_%s>=1" % (f, eng)
                                                            for f in others),
                                             " ".join("signal=B_%s_%s-=1" % (f, eng)
                                                      for f in others)), "loop barrier")
        if self.kind == "range":
            self._line(eng, "%s.reg_alu rd=%d rs=%d op=add imm=%d"
                       % (eng, REG_COUNTER, REG_COUNTER, self.step), "loop step")
        self._line(eng, "%s.jump target=%d" % (eng, top), "loop step")

    def _prologue(self, eng):
        """A range loop's counter and bound, in this engine's registers."""
        if self.kind != "range":
            return []
        out = []
        for name, reg in (("start", REG_COUNTER), ("stop", REG_BOUND)):
            if name in self.words:
                word, n = self.words[name]
                wait = " wait=pool_done>=%d" % n if eng != "pool" else ""
                out.append("%s.reg_load rd=%d src=%s%s" % (eng, reg, ap_text(word), wait))
            else:
                out.append("%s.reg_move rd=%d value=%d" % (eng, reg, int(getattr(self, name))))
        return out

    def _test(self, eng, others, end):
        """The lines at the top of an iteration that leave the loop: a range
        loop compares its counter with the bound; a while loop reads the
        condition register (GpSimd publishes it to the other engines)."""
        if self.kind == "range":
            cmp = "ge" if self.step > 0 else "le"
            return ["%s.reg_alu rd=%d rs=%d op=subtract rt=%d" % (eng, REG_TEMP, REG_COUNTER, REG_BOUND),
                    "%s.branch reg=%d cmp=%s value=0 target=%d" % (eng, REG_TEMP, cmp, end)]
        word = ap_text(self.words["cond"][0])
        if eng == "pool":
            ups = " ".join("signal=L_pool_%s+=1" % f for f in others)
            return ["pool.reg_store dst=%s rs=%d %s" % (word, self.cond, ups),
                    "pool.branch reg=%d cmp=eq value=0 target=%d" % (self.cond, end)]
        return ["%s.reg_load rd=%d src=%s wait=L_pool_%s>=1 signal=L_pool_%s-=1"
                % (eng, REG_TEMP, word, eng, eng),
                "%s.branch reg=%d cmp=eq value=0 target=%d" % (eng, REG_TEMP, end)]

    def _with_sync(self, eng, idx, text, static, pair):
        """A body instruction with its waits (pair semaphores first, each
        consumed where it is waited for) and its signals, split onto
        preceding nops when they exceed the 4 waits / 4 signals a line holds."""
        entries = [("wait=L_%s_%s>=1" % (p, eng), "signal=L_%s_%s-=1" % (p, eng)) for p in pair]
        entries += [("wait=%s_done>=%d" % (e, n), None) for e, n in sorted(static.items())]
        ups = ["signal=L_%s_%s+=1" % (eng, c) for c in self.signals.get(idx, [])]
        chunks = [entries[i:i + 4] for i in range(0, len(entries), 4)] or [[]]
        last = chunks.pop()
        if len([d for _, d in last if d]) + len(ups) > 4:
            chunks.append(last)
            last = []
        out = []
        for ch in chunks:
            out.append(("%s.nop %s" % (eng, " ".join([w for w, _ in ch] + [d for _, d in ch if d])),
                        idx))
        out.append((" ".join([text] + [w for w, _ in last] + [d for _, d in last if d] + ups), idx))
        return out

    def _line(self, eng, text, src, op=None):
        tr = self.tr
        tr.lines.append(text)
        tr.src.append(src if ":" in str(src) else self.line)
        tr.eng_lines[eng].append((src if ":" in str(src) else self.line, op or text.split()[0]))

    def _retire(self, exits):
        """Accesses made in the body (and the prologue's reads of the bound
        words) now wait for the engine's loop-end nop."""
        core = self.tr.core
        for st in self.storages.values():
            for key, v in list(st.acc.items()):
                if v >= VBASE:
                    st.acc[key] = exits[key[1][1]]
            for key, v in list(st.base.items()):
                if v >= VBASE:
                    st.base[key] = exits[key[1]]
        alloc = self.tr.alloc
        for lst in alloc.free.values():
            for _, _, clock, _ in lst:
                for key, v in list(clock.items()):
                    if v >= VBASE:
                        clock[key] = exits[key[1]]
        alloc.clocks_changed()
        for acc in alloc.manual_acc.values():
            for key, v in list(acc.items()):
                if v >= VBASE:
                    acc[key] = exits[key[1][1]]
        for word, _ in self.words.values():
            for e, n in exits.items():
                word.storage.acc[(rect(word), (core, e), False)] = n
                word.storage.acc[(rect(word), (core, e), True)] = n


class LoopIndex:
    """The index of a device loop: its value exists only on the device."""

    def _refuse(self, *a):
        fail("a device loop's index is known only on the device; it cannot be a Python value")

    __index__ = __int__ = __bool__ = __add__ = __radd__ = __mul__ = __rmul__ = _refuse

    def __repr__(self):
        return "LoopIndex()"


def device_range(start, stop, step):
    """Trace `for i in device_range(...)` as a device loop (a generator: the
    body is traced once, between entering and leaving)."""
    from .. import language as nl
    from ..isa import _registers
    tr = current()
    if tr.loop is not None:
        fail("device loops (nl.dynamic_range over a register) do not nest")
    if not isinstance(step, int) or step == 0:
        fail("a device loop's step is a non-zero Python integer, got %r" % (step,))
    tr.flush()
    words = {}
    for name, v in (("start", start), ("stop", stop)):
        if isinstance(v, _registers.VirtualRegister):
            word = nl.ndarray((1, 1), nl.int32, nl.sbuf)
            _registers.register_store(word, v)
            tr.flush()
            words[name] = (word, tr.count["pool"])
        elif not isinstance(v, int):
            fail("a device loop bound is an integer or a register, got %r" % (v,))
    loop = DeviceLoop(tr, start, stop, step, words)
    tr.loop = loop
    try:
        yield LoopIndex()
    finally:
        tr.flush()
        tr.loop = None
        loop.finish()


def begin_while(reg, deprecated=True):
    """`while reg:` with a register: the first truth test starts a device
    loop over the body (returns True), the next one, after the body has
    been traced, closes it (returns False). A loop written so (deprecated)
    warns, nl.while_loop's does not."""
    from .. import language as nl
    tr = current()
    loop = tr.loop
    if loop is not None and loop.kind == "while" and loop.cond == reg.number:
        tr.flush()
        tr.loop = None
        loop.finish()
        return False
    if loop is not None:
        fail("device loops (`while reg:`, nl.dynamic_range over a register) do not nest")
    if deprecated:
        warn(DEPRECATED_LOOP % "`while reg:`")
    tr.flush()
    word = nl.ndarray((1, 1), nl.int32, nl.sbuf)
    tr.loop = DeviceLoop(tr, None, None, 1, {"cond": (word, 0)}, kind="while", cond=reg.number)
    return True
