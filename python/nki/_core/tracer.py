"""_core/tracer.py: the trace of one kernel: instructions as they are
emitted, the dependency tracker that turns hazards between engines into
semaphore waits, and the rendering of each instruction as an assembly
line for the C kernel builder.

Semaphores: engine e counts its finished instructions on semaphore
`<e>_done` (every instruction signals +1), so "instruction k of engine e
has finished" is `wait=<e>_done>=k`. An instruction waits, for each other
engine, on the last instruction there that touched overlapping bytes in a
conflicting way; engines run their own streams in order.
"""
import os
import re
import time
import weakref

import numpy as np

from . import dynamic, indirect
from .access import _overlap, ap_text, check_bounds, dense_span, local_rect, rect
from .alloc import Allocator, Storage
from .. import _dtypes
from .context import (ENGINES, NKIError, NUM_PARTITIONS, SBUF_BYTES, current, fail, sbuf_bytes,
                      user_line)
from .index import check_grid
from .tensors import NkiTensor


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

    def __init__(self, sbuf=SBUF_BYTES):
        self.alloc = Allocator(sbuf)               # SBUF/PSUM allocator of the core
        self.lines = []                            # assembly lines
        self.src = []                              # kernel source line of each
        self.count = dict.fromkeys(ENGINES, 0)     # instructions per engine
        self.eng_lines = {e: [] for e in ENGINES}  # (source line, op) per engine instruction


def trace_limits():
    """(instructions, seconds) a trace may take: TRNEMU_NKI_TRACE_LIMIT
    (default 2,000,000 instructions) and TRNEMU_NKI_TRACE_SECONDS (a
    duration, default 600 s); 0 lifts a limit. Read by the runtime's rules
    (nki/_env.py); a malformed value is an NKIError."""
    from .. import _env
    return (_env.read_uint("TRNEMU_NKI_TRACE_LIMIT", 0, 2**64 - 1, 2000000),
            _env.read_seconds("TRNEMU_NKI_TRACE_SECONDS", 10000000, 600))


class Tracer:
    """State of one trace: instructions, HBM tensors, allocator, tracker."""

    def __init__(self, name, ncores=1, gen=2):
        self.name = name          # kernel (NEFF) name
        self.gen = gen            # NeuronCore generation the kernel is traced for
        self.cores = [CoreTrace(sbuf_bytes(gen)) for _ in range(ncores)]  # per physical core
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
        self.prints = []          # (prefix, Storage) of nl.device_print calls, in trace order
        self.max_insns, self.max_s = trace_limits()  # the trace's bounds (0: none)
        self.t0 = time.perf_counter()  # when the trace began
        self.collectives = False  # a collective was traced: load as a rank (nrt_load_collectives)
        self.rank_dependent = False  # the program depends on this process's rank (rank_id())
        self.last = None          # the last instruction emitted (nki.isa calls return its handle)
        self.loop = None          # the device loop (nl.dynamic_range over a register) being traced
        self.emitted = 0          # instructions emitted so far
        self.seq = 0              # instructions committed (trace position, for the allocator's LRU)
        self.touching = []        # (view, is_write) lists of the instructions being committed
        self.spills = 0           # tiles spilled to HBM
        self.spill_free = {}      # bytes per partition -> HBM scratch variables free for spills

    def set_core(self, c):
        """Trace the next instructions for physical core c (subgraph c)."""
        self.flush()
        self.core = c
        ct = self.cores[c]
        ct.alloc.spill = self.spill
        self.alloc, self.lines, self.src = ct.alloc, ct.lines, ct.src
        self.count, self.eng_lines = ct.count, ct.eng_lines

    # -- HBM
    def hbm_tensor(self, buffer, name, shape, di, nbytes):
        if buffer == "shared_hbm" and self.shared_pos < len(self.shared_seq):
            st = self.shared_seq[self.shared_pos]
            self.shared_pos += 1
            _check_pair(st, shape, di, nbytes)
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
        st.shared = buffer == "shared_hbm"
        self.hbm[nm] = st
        self.keep.append(st)
        if buffer == "shared_hbm":
            self.shared_seq.append(st)
            self.shared_pos += 1
        return st

    # -- spilling: SBUF/PSUM tiles that do not fit go to HBM and come back
    def _pinned(self):
        """ids of the tiles the instructions being committed touch (none
        of them may be spilled to make room for another)."""
        return {id(dynamic.real(t.storage)) for touched in self.touching for t, _ in touched}

    def spill(self, needed, st=None):
        """Make room for tile `needed`: store tile st (by default the least
        recently used live tile of needed's memory that the instruction
        being committed does not touch) to an HBM scratch variable and free
        its bytes (as the vendor's compiler spills). False when it cannot
        go. The copy is bit-exact and a PSUM tile keeps its record of
        written bytes, so matmuls into it after its reload accumulate where
        they would have."""
        pinned = self._pinned() | {id(needed)}
        if st is None:
            st = self.alloc.victim(needed.kind, pinned)
        if st is None or id(st) in pinned:
            return False
        st.spill_hbm = self._spill_scratch(st.nbytes)
        onchip, hbm = self._spill_views(st)
        self.commit(Insn("pool", "dma_copy", {"dst": hbm}, {"src": onchip},
                         [("dst", hbm), ("src", onchip)], "%s (spill)" % st.line))
        self.spills += 1
        st.spilled = hbm
        # a tile that dies in HBM (a dead tile spilled once) gives its scratch back
        st.spill_fin = weakref.finalize(st, self.spill_free[st.nbytes].append, st.spill_hbm)
        st.evict()
        return True

    def _spill_scratch(self, nbytes):
        """An HBM scratch variable for a spilled tile of nbytes per partition:
        one a reloaded or dead spilled tile gave back, else a new one (so
        the scratch spills take is bounded by the bytes spilled at once)."""
        free = self.spill_free.setdefault(nbytes, [])
        if free:
            return free.pop()
        di = _dtypes.info("uint8")
        return self.hbm_tensor("private_hbm", "spill", (NUM_PARTITIONS, nbytes), di,
                               NUM_PARTITIONS * nbytes)

    def reload(self, st):
        """Bring a spilled tile back into the bytes it was just given; its
        HBM scratch is free again once the copy has read it (later users
        wait for that read)."""
        onchip, hbm = self._spill_views(st)
        st.spilled = None
        self.commit(Insn("sp", "dma_copy", {"dst": onchip}, {"src": hbm},
                         [("dst", onchip), ("src", hbm)], "%s (reload)" % st.line))
        st.spill_fin.detach()
        self.spill_free[st.nbytes].append(st.spill_hbm)
        st.spill_hbm = None

    @staticmethod
    def _spill_views(st):
        """The whole tile as bytes, on chip and in its HBM scratch."""
        n = st.nbytes
        onchip = NkiTensor(st, "uint8", [[1, NUM_PARTITIONS], [1, n]], 0)
        hbm = NkiTensor(st.spill_hbm, "uint8", [[n, NUM_PARTITIONS], [1, n]], None)
        return onchip, hbm

    # -- zero-filled PSUM tiles: the fill waits for the first use
    def defer_zero(self, t):
        """Tile t (a whole PSUM tile) is zero-filled: emit the fill only
        before a use that needs it. A matmul that overwrites the whole tile
        (the first of an accumulation group) needs none, as compiled code
        starts the group there instead of clearing the bank first."""
        t.storage.place()     # its bytes now, as when the fill is emitted at once
        t.storage.zero_view = (t.dtype, [list(d) for d in t.dims], t.pdim, t.part, t.off, t.pcount)

    def settle_zero(self, t):
        """Before an instruction that overwrites view t: no fill when t is
        the whole zero-filled tile, else the fill now."""
        zv = getattr(t.storage, "zero_view", None)
        if zv is None:
            return
        whole = (t.dims == zv[1] and t.pdim == zv[2] and t.part == zv[3] and t.off == zv[4])
        if whole:
            t.storage.zero_view = None
        else:
            self._fill_zero(t.storage)

    def _fill_zero(self, st):
        zv, st.zero_view = st.zero_view, None
        t = NkiTensor(st, zv[0], zv[1], zv[2], zv[3], zv[4], zv[5])
        self.emit("dve", "memset", {"dst": t}, {}, [("dst", t), ("value", "0.0")])

    # -- emission
    def check_limits(self):
        """NKIError when the trace passed its instruction or time bound
        (after each instruction emitted)."""
        if self.max_insns and self.emitted > self.max_insns:
            raise NKIError("%s: the kernel traced more than %d instructions "
                           "(TRNEMU_NKI_TRACE_LIMIT; 0 lifts it)" % (user_line(), self.max_insns))
        if self.max_s and self.emitted % 64 == 0 and \
                time.perf_counter() - self.t0 > self.max_s:
            raise NKIError("%s: the kernel traced for more than %g s (TRNEMU_NKI_TRACE_SECONDS; "
                           "0 lifts it)" % (user_line(), self.max_s))

    def emit(self, engine, op, outs, ins, args, rmw=False):
        _check_operands(op, outs, ins)
        views = [*outs.values(), *ins.values()]
        ixs = indirect.index_reads(views)
        if ixs:              # .indirect() operands: the op reads their indexes too
            indirect.check(self, engine, op, views)
            ins = {**ins, **{"(index %d)" % k: x for k, x in enumerate(ixs)}}
            views = views + ixs
        for t in views:
            if t.storage.zero_view is not None:
                self._fill_zero(t.storage)
        insn = Insn(engine, op, outs, ins, args, user_line())
        if _any_empty(views):
            return insn      # an empty view (t[3:3]): nothing to do, nothing is emitted
        for t in views:
            check_grid(t)
            check_bounds(t)
        insn.rmw = rmw
        for t in outs.values():
            t.storage.written = True    # at emission: the PSUM accumulate rule reads it
            if t.storage.kind == "psum":
                t.storage.written_boxes.append(local_rect(t))   # within the tile: no placement
        self.flush()
        dynamic.prologue(self, engine, views)   # the shifts of run-time offset operands
        self.pending = insn
        self.last = insn
        self.emitted += 1
        self.check_limits()
        return insn

    def flush(self):
        insn, self.pending = self.pending, None
        if insn is not None:
            self.commit(insn)

    def commit(self, insn):
        eng = insn.engine
        me = (self.core, eng)
        waits = {}
        touched = [(t, False) for t in insn.ins.values()]
        for t in insn.outs.values():
            touched.append((t, True))
            if insn.rmw:
                touched.append((t, False))
        self.touching.append(touched)
        core = self.core
        rects = []
        for t, w in touched:
            st = t.storage
            r = rect(t)
            rects.append(r)
            # only the same core's engines can be waited for: SPMD programs on
            # other cores are independent by NKI's rules
            for e, n in st.base.items():
                if e != me and e[0] == core:
                    waits[e[1]] = max(waits.get(e[1], 0), n)
            acc = st.acc
            for key in acc.groups:
                e2, w2 = key
                if e2 == me or e2[0] != core or not (w or w2):
                    continue
                got = waits.get(e2[1], 0)
                n = acc.latest(key, r, got)
                if n > got:
                    waits[e2[1]] = n
        self.touching.pop()
        for t, w in touched:
            if t.storage.kind == "hbm":
                _note_hbm_use(insn, t, w, self.loop is None)
        parts = _operand_text(insn)
        if self.loop is not None:
            self.loop.record(insn, parts, waits, touched)
            return
        for e, n in sorted(waits.items()):
            if n > 0:
                parts.append("wait=%s_done>=%d" % (e, n))
        self.count[eng] += 1
        n = self.count[eng]
        insn.core, insn.number, insn.index = self.core, n, len(self.lines)
        parts.append("signal=%s_done+=1" % eng)
        self.seq += 1
        for (t, w), r in zip(touched, rects):
            st = t.storage
            st.acc.note(r, me, w, n)
            st.seq[0] = self.seq
            if w:
                st.written = True
        self.lines.append(" ".join(parts))
        self.src.append(insn.line)
        self.eng_lines[eng].append((insn.line, insn.op))



def _check_pair(st, shape, di, nbytes):
    """The programs of a multi-core kernel share their shared_hbm tensors
    in the order they create them: the n-th one of this program is the
    n-th one of the first, so it must be the same tensor."""
    if st.nbytes != nbytes or tuple(st.shape) != tuple(shape) or st.di.name != di.name:
        fail("nl.ndarray(buffer=nl.shared_hbm): this program's shared_hbm tensor number %d is "
             "%s %s, but the first program's is %s %s; the programs of a multi-core kernel "
             "create their shared_hbm tensors in the same order, shapes and dtypes (the n-th of "
             "each is one tensor)" % (st.tracer.shared_seq.index(st) + 1, tuple(shape), di.name,
                                      tuple(st.shape), st.di.name))

_PLAIN_DMA_ARGS = {"dst", "src", "op", "priority"}


def _note_hbm_use(insn, t, w, straight):
    """Record how one instruction uses an HBM tensor (for whole_overwrite):
    the byte span a plain DMA of straight-line code overwrites (no
    accumulate, no indexed rows, a view with no gap), else that the tensor
    has some other use (a read, a device loop's access, any other write)."""
    st = t.storage
    span = None
    if w and straight and not insn.rmw and insn.op == "dma_copy" and all(
            n in _PLAIN_DMA_ARGS and (n != "op" or v == "cast") for n, v in insn.args):
        span = dense_span(t)
    if span is None:
        st.other_use = True
    else:
        st.overwrites.append(span)


def whole_overwrite(st):
    """Whether every execution writes every byte of HBM tensor st, with
    plain DMAs, and reads none of them first: what it held before an
    execution then never shows (a result array need not be zeroed)."""
    if st.other_use:
        return False
    end = 0
    for lo, hi in sorted(st.overwrites):
        if lo > end:
            return False
        end = max(end, hi)
    return end >= st.nbytes


def _any_empty(views):
    """Whether some view has a dimension of no elements."""
    for t in views:
        for _, c in t.dims:
            if c == 0:
                return True
    return False


def _check_operands(op, outs, ins):
    """Every tensor operand of an instruction is a tensor (an NKIError at
    the kernel line for a number or None where a tile belongs)."""
    for group in (outs, ins):
        for name, v in group.items():
            if not isinstance(v, NkiTensor):
                fail("%s: operand %s takes a tensor, got %r" % (op, name, v))


def _operand_text(insn):
    """The words of an instruction's line up to its waits: engine.op and
    each operand (name=value, or the name alone for a flag)."""
    parts = ["%s.%s" % (insn.engine, insn.op)]
    for name, v in insn.args:
        if v is None:
            parts.append(name)
        elif type(v) is NkiTensor or isinstance(v, NkiTensor):
            parts.append("%s=%s" % (name, ap_text(v, v._dims, not v._nomerge)))
        elif isinstance(v, float):
            parts.append("%s=%s" % (name, _fmt_float(v)))
        else:
            parts.append("%s=%s" % (name, v))
    return parts


def _fmt_float(v):
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(float(np.float32(v)))


def add_dependency(tr, consumer, producer):
    """Make the committed instruction consumer wait for producer to finish
    (NkiInstruction.depends_on): a semaphore wait added to its line."""
    tr.flush()
    for insn in (consumer, producer):
        if getattr(insn, "number", None) is None:
            fail("depends_on: an instruction that emitted nothing (an empty view) has no place "
                 "in the program")
    if consumer.core != producer.core:
        fail("depends_on between instructions of different physical cores: use nisa.core_barrier")
    if consumer.engine == producer.engine:
        if producer.number > consumer.number:
            fail("depends_on: the producer comes after the consumer on the same engine (%s), "
                 "which would never start" % consumer.engine)
        return      # one engine runs its instructions in order
    lines = tr.cores[consumer.core].lines
    line = lines[consumer.index]
    sem = "%s_done" % producer.engine
    m = re.search(r"wait=%s>=(\d+)" % sem, line)
    if m:
        if int(m.group(1)) < producer.number:
            line = line[:m.start(1)] + str(producer.number) + line[m.end(1):]
    else:
        if line.count(" wait=") >= 4:
            fail("depends_on: the instruction already waits on 4 semaphores, the most it can")
        at = line.index(" signal=")
        line = line[:at] + " wait=%s>=%d" % (sem, producer.number) + line[at:]
    lines[consumer.index] = line


def region_touched(t):
    """Whether an earlier instruction wrote any byte of the PSUM view t."""
    r = local_rect(t)
    return any(_overlap(a, r) for a in getattr(t.storage, "written_boxes", ()))


def region_written(t):
    """Whether every byte of the PSUM view t was written by an earlier
    instruction: the accumulate=None rule of nc_matmul ("first write
    overwrites, later writes accumulate", per PSUM location)."""
    boxes = getattr(t.storage, "written_boxes", ())
    if not boxes:
        return False
    r = local_rect(t)
    return any(a[0] <= r[0] and r[1] <= a[1] and a[2] <= r[2] and r[3] <= a[3] for a in boxes)
