"""_core/alloc.py: on-chip allocation: one Storage per tile or HBM
variable, and the per-core SBUF/PSUM allocator that places tiles and
remembers the last accesses to freed bytes."""
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
        self.written = False      # some instruction wrote it (PSUM accumulation rule)
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

    def __init__(self, sbuf=SBUF_BYTES):
        self.total = {"sbuf": sbuf, "psum": PSUM_BYTES}  # bytes per partition
        self.free = {"sbuf": [(0, sbuf, {})], "psum": [(0, PSUM_BYTES, {})]}
        self.high = {"sbuf": 0, "psum": 0}   # high-water marks
        self.manual = {"sbuf": [], "psum": []}       # byte ranges given out by address=
        self.manual_acc = {"sbuf": {}, "psum": {}}   # the accesses of all tiles placed by address=

    def reserve(self, st):
        """Place a tile at the bytes its address= names (st.fixed). Those
        bytes leave the free list for the rest of the trace, and every tile
        placed by address shares one access record, so tiles that overlap
        wait for each other. Bytes held by a tile the allocator placed are
        refused. Returns the clock of earlier accesses to the bytes."""
        kind, lo, hi = st.kind, st.fixed, st.fixed + st.nbytes
        total = self.total[kind]
        if lo < 0 or hi > total:
            raise NKIError("%s: address %d..%d is outside the %d bytes of a %s partition"
                           % (st.line, lo, hi, total, kind.upper()))
        covered = [(o, o + ln) for o, ln, _ in self.free[kind]] + self.manual[kind]
        pos = lo
        for a, b in sorted(covered):
            if a <= pos < b:
                pos = b
        if pos < hi:
            raise NKIError("%s: %s bytes %d..%d given by address= hold a tile the front end "
                           "placed; give every tile of the kernel an address, or none"
                           % (st.line, kind.upper(), lo, hi))
        clock, rest = {}, []
        for o, ln, c in self.free[kind]:
            if o < hi and o + ln > lo:
                for e, v in c.items():
                    clock[e] = max(clock.get(e, 0), v)
                if o < lo:
                    rest.append((o, lo - o, c))
                if o + ln > hi:
                    rest.append((hi, o + ln - hi, c))
            else:
                rest.append((o, ln, c))
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
            total = self.total[st.kind]
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
