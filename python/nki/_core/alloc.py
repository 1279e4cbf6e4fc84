"""_core/alloc.py: on-chip allocation: one Storage per tile or HBM
variable, and the per-core SBUF/PSUM allocator that places tiles and
remembers the last accesses to freed bytes. Free bytes are handed out
least recently used first, so the tiles a loop creates rotate through the
free space and the next iteration's loads run ahead of this one's compute
(as compiled NKI code rotates a loop's tile buffers). When a tile does not
fit, or address= names bytes a tile of the front end holds, a live tile
goes to HBM (the tracer's spill) and comes back at its next use."""
import weakref

from .context import NKIError, PSUM_BANK, PSUM_BYTES, SBUF_BYTES, user_line


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
        self.seq = [0]            # trace position of its last access (LRU order of freed bytes)
        self.written = False      # some instruction wrote it
        self.written_boxes = []   # PSUM boxes (within the tile) written so far: accumulate=None
        self.line = user_line()   # where it was created, for overflow errors
        self.core = tracer.core   # physical core (subgraph) whose SBUF/PSUM holds it
        self.alloc = tracer.alloc  # that core's allocator

    def place(self):
        """Give the storage its on-chip bytes (first use)."""
        if self.offset is None and self.kind != "hbm" and getattr(self, "fixed", None) is not None:
            self.offset, self.base = self.fixed, self.alloc.reserve(self)
            self.acc = self.alloc.manual_acc[self.kind]
        elif self.offset is None and self.kind != "hbm":
            self.offset, self.base = self.alloc.take(self)
            self.fin = weakref.finalize(self, self.alloc.give, self.kind, self.offset,
                                        self.nbytes, self.acc, self.seq, id(self))
            if getattr(self, "spilled", None) is not None:
                self.tracer.reload(self)
        return self

    def evict(self):
        """Give the tile's bytes back (it was spilled to HBM): its accesses
        stay with the freed bytes; it starts afresh when reloaded."""
        self.fin.detach()
        self.alloc.give(self.kind, self.offset, self.nbytes, self.acc, self.seq, id(self))
        self.offset, self.base, self.acc = None, {}, {}


class Allocator:
    """Allocator of per-partition byte ranges in SBUF and PSUM.

    The free list is a sorted list of adjacent or separate ranges, each with
    the clock of the last accesses made to it (engine -> instruction count),
    so a tile that reuses bytes waits for exactly the accesses to those
    bytes (write-after-read / write-after-write across tiles), and the
    trace position of the last of them. A new tile goes where that position
    is oldest (never used first), which rotates through free space and lets
    consecutive tiles of a loop overlap.
    """

    def __init__(self, sbuf=SBUF_BYTES):
        self.size = {"sbuf": sbuf, "psum": PSUM_BYTES}   # bytes per partition of each memory
        self.free = {"sbuf": [(0, sbuf, {}, 0)], "psum": [(0, PSUM_BYTES, {}, 0)]}
        self.high = {"sbuf": 0, "psum": 0}   # high-water marks
        self.manual = {"sbuf": [], "psum": []}       # byte ranges given out by address=
        self.manual_acc = {"sbuf": {}, "psum": {}}   # the accesses of all tiles placed by address=
        self.live = {}            # id -> weakref of each tile placed by take (spill candidates)
        self.spill = None         # the tracer's spill(needed, victim): move a live tile to HBM

    def reserve(self, st):
        """Place a tile at the bytes its address= names (st.fixed). Those
        bytes leave the free list for the rest of the trace, and every tile
        placed by address shares one access record, so tiles that overlap
        wait for each other. A tile the allocator placed in those bytes is
        moved out first (spilled to HBM, back elsewhere at its next use);
        one the instruction at hand also uses is refused. Returns the clock
        of earlier accesses to the bytes."""
        kind, lo, hi = st.kind, st.fixed, st.fixed + st.nbytes
        total = self.size[kind]
        if lo < 0 or hi > total:
            raise NKIError("%s: address %d..%d is outside the %d bytes of a %s partition"
                           % (st.line, lo, hi, total, kind.upper()))
        for other in self.holders(kind, lo, hi):
            if self.spill is None or not self.spill(st, other):
                raise NKIError("%s: %s bytes %d..%d given by address= hold a tile the front end "
                               "placed (%s) that the same instruction uses; give every tile of "
                               "the kernel an address, or none" % (st.line, kind.upper(), lo, hi,
                                                                    other.line))
        covered = [(o, o + ln) for o, ln, _, _ in self.free[kind]] + self.manual[kind]
        pos = lo
        for a, b in sorted(covered):
            if a <= pos < b:
                pos = b
        if pos < hi:    # a tile the allocator placed, yet not a live one: a bug
            raise NKIError("%s: %s bytes %d..%d given by address= are not free"
                           % (st.line, kind.upper(), lo, hi))
        clock, rest = {}, []
        for o, ln, c, q in self.free[kind]:
            if o < hi and o + ln > lo:
                for e, v in c.items():
                    clock[e] = max(clock.get(e, 0), v)
                if o < lo:
                    rest.append((o, lo - o, c, q))
                if o + ln > hi:
                    rest.append((hi, o + ln - hi, c, q))
            else:
                rest.append((o, ln, c, q))
        self.free[kind] = rest
        self.manual[kind].append((lo, hi))
        self.high[kind] = max(self.high[kind], hi)
        return clock

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
        best = self._best(st.kind, size)
        while best is None and self.spill is not None and self.spill(st):
            best = self._best(st.kind, size)   # a live tile went to HBM: look again
        lst = self.free[st.kind]
        if best is None:
            total = self.size[st.kind]
            used = total - sum(ln for _, ln, _, _ in lst)
            raise NKIError("%s: %s overflow: a tile of %d bytes per partition does not fit "
                           "(%d of %d bytes per partition in use)"
                           % (st.line, st.kind.upper(), size, used, total))
        _, i, j, start, clock = best
        rest = []
        for o, ln, c, q in lst[i:j + 1]:
            if o < start:
                rest.append((o, min(ln, start - o), c, q))
            if o + ln > start + size:
                b = max(o, start + size)
                rest.append((b, o + ln - b, c, q))
        lst[i:j + 1] = rest
        st.nbytes = size
        self.high[st.kind] = max(self.high[st.kind], start + size)
        self.live[id(st)] = weakref.ref(st)
        return start, clock

    def _best(self, kind, size):
        """Where a tile of size bytes per partition goes: (age, first and
        last free range it covers, start, clock of their last accesses),
        the least recently used place; None when nothing fits."""
        lst = self.free[kind]
        best = None
        for i, j, start in self._candidates(kind, lst, size):
            clock, age = {}, 0
            for o, ln, c, q in lst[i:j + 1]:
                if o < start + size and o + ln > start:
                    for e, v in c.items():
                        clock[e] = max(clock.get(e, 0), v)
                    age = max(age, q)
            if best is None or age < best[0]:
                best = (age, i, j, start, clock)
            if age == 0:
                break
        return best

    def _candidates(self, kind, lst, size):
        """Where a tile of size bytes can go: (first, last free range used,
        start). PSUM fills from its first bank up; SBUF from its top down,
        so tiles the front end places stay clear of the low addresses that
        kernels placing their own tiles (address=, an SbufManager) use
        first."""
        if kind == "psum":
            for i in range(len(lst)):
                start = self._align(kind, lst[i][0], size)
                # extend over adjacent free ranges until [start, start+size) is covered
                j, end = i, lst[i][0] + lst[i][1]
                while end < start + size and j + 1 < len(lst) and lst[j + 1][0] == end:
                    j += 1
                    end = lst[j][0] + lst[j][1]
                if start + size <= end:
                    yield i, j, start
            return
        for j in reversed(range(len(lst))):
            end = lst[j][0] + lst[j][1]
            start = (end - size) & ~31
            # extend down over adjacent free ranges until [start, end) is covered
            i = j
            while start < lst[i][0] and i > 0 and lst[i - 1][0] + lst[i - 1][1] == lst[i][0]:
                i -= 1
            if start >= lst[i][0]:
                yield i, j, start

    def _live_tiles(self, kind):
        """The live tiles of kind that take placed, in placement order
        (dead references are dropped)."""
        out = []
        for key, ref in list(self.live.items()):
            st = ref()
            if st is None or st.offset is None:
                self.live.pop(key, None)
            elif st.kind == kind:
                out.append(st)
        return out

    def holders(self, kind, lo, hi):
        """The live tiles take placed that hold some of bytes lo..hi of kind."""
        return [st for st in self._live_tiles(kind) if st.offset < hi and st.offset + st.nbytes > lo]

    def victim(self, kind, pinned):
        """The least recently used live tile of kind (SBUF or PSUM) that the
        allocator placed and that is not in pinned (ids): the one to spill.
        None when there is none."""
        best = None
        for st in self._live_tiles(kind):
            if id(st) not in pinned and (best is None or st.seq[0] < best.seq[0]):
                best = st
        return best

    def give(self, kind, off, size, acc, seq=(0,), key=None):
        if key is not None:
            self.live.pop(key, None)
        clock = {}
        for (_, eng, _), n in acc.items():
            clock[eng] = max(clock.get(eng, 0), n)
        lst = self.free[kind]
        lst.append((off, size, clock, seq[0]))
        lst.sort(key=lambda r: r[0])
        merged = []
        for o, ln, c, q in lst:
            m = merged[-1] if merged else None
            if m and m[0] + m[1] == o and m[2] == c and m[3] == q:
                merged[-1] = (m[0], m[1] + ln, c, q)
            else:
                merged.append((o, ln, c, q))
        self.free[kind] = merged
