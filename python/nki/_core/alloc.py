"""_core/alloc.py: on-chip allocation: one Storage per tile or HBM
variable, and the per-core SBUF/PSUM allocator that places tiles and
remembers the last accesses to freed bytes. Free bytes are handed out
least recently used first, so the tiles a loop creates rotate through the
free space and the next iteration's loads run ahead of this one's compute
(as compiled NKI code rotates a loop's tile buffers). When a tile does not
fit, or address= names bytes a tile of the front end holds, a live tile
goes to HBM (the tracer's spill) and comes back at its next use. Bytes address= named
go back to the free list when the last live tile naming them dies. Also
the names of the memory regions a tensor can live in."""
import bisect
import enum
import weakref

from .access import _overlap
from .context import NKIError, NkiValidationError, PSUM_BANK, PSUM_BYTES, SBUF_BYTES, user_line


class MemoryRegion(enum.StrEnum):
    """Where a tensor lives (nl.MemoryRegion). Each member equals its name
    as a string, so buffer=nl.psum and buffer="psum" are one; hbm is
    private_hbm under another name, as the NKI reference has it."""
    sbuf = "sbuf"
    psum = "psum"
    private_hbm = "private_hbm"
    shared_hbm = "shared_hbm"
    hbm = "private_hbm"


def _range_offset(r):
    """The start of a free range (o, length, clock, position)."""
    return r[0]


def _uncovered(lo, hi, ranges):
    """The pieces of [lo, hi) that none of ranges ((a, b, ...) each) covers."""
    out, pos = [], lo
    for a, b, *_ in sorted(r for r in ranges if r[0] < hi and r[1] > lo):
        if a > pos:
            out.append((pos, a))
        pos = max(pos, b)
    if pos < hi:
        out.append((pos, hi))
    return out


ACCESS_BUCKETS = 128      # byte ranges an access record's index splits its storage into


class Accesses:
    """The last accesses made to a storage's bytes, (rect, engine,
    is_write) -> instruction number, kept in groups by (engine, is_write)
    so that a hazard check looks only at the groups that can conflict with
    an access (another engine's; a write, or any access for a write).
    Each group indexes its rects by the byte ranges (buckets) they touch,
    and knows its largest number, so a check reads only the rects in the
    buckets of its own rect, and none when the group holds nothing newer
    than what the access already waits for (the record every address=
    tile shares holds thousands of rects in a large kernel)."""

    __slots__ = ("groups", "index", "top", "width")

    def __init__(self, nbytes=0):
        self.groups = {}          # (engine, is_write) -> {rect: instruction number}
        self.index = {}           # (engine, is_write) -> {bucket: [rects touching it]}
        self.top = {}             # (engine, is_write) -> its largest number (None: count again)
        self.width = max(1, -(-nbytes // ACCESS_BUCKETS))   # bytes per bucket

    def __setitem__(self, key, n):
        self.note(key[0], key[1], key[2], n)

    def _buckets(self, r):
        return range(r[2] // self.width, max(r[2], r[3] - 1) // self.width + 1)

    def note(self, r, eng, w, n):
        """Instruction n of engine eng accessed rect r (a write if w)."""
        key = (eng, w)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = {}
            self.index[key] = {}
            self.top[key] = 0
        old = g.get(r)
        if old is None:
            idx = self.index[key]
            for b in self._buckets(r):
                idx.setdefault(b, []).append(r)
        g[r] = n
        top = self.top[key]
        if top is not None and n >= top:
            self.top[key] = n
        elif old is not None and old == top:
            self.top[key] = None      # the largest went down (a device loop retired)

    def _top(self, key):
        top = self.top[key]
        if top is None:
            top = self.top[key] = max(self.groups[key].values(), default=0)
        return top

    def latest(self, key, r, got):
        """The largest of got and the numbers of group key's rects that
        overlap rect r."""
        if self._top(key) <= got:
            return got
        g = self.groups[key]
        idx = self.index[key]
        for b in self._buckets(r):
            for r2 in idx.get(b, ()):
                n = g[r2]
                if n > got and _overlap(r, r2):
                    got = n
        return got

    def __getitem__(self, key):
        return self.groups[(key[1], key[2])][key[0]]

    def __len__(self):
        return sum(len(g) for g in self.groups.values())

    def clock(self):
        """engine -> the last instruction number of its accesses."""
        clock = {}
        for key in self.groups:      # (a group is never empty)
            clock[key[0]] = max(clock.get(key[0], 0), self._top(key))
        return clock

    def items(self):
        """((rect, engine, is_write), instruction number) of every access."""
        for (eng, w), g in self.groups.items():
            for r, n in g.items():
                yield (r, eng, w), n


class Storage:
    """One allocation: an SBUF/PSUM byte range in every partition, or an HBM
    variable. Freed (its range returned to the allocator) when it dies."""

    fixed = None          # the byte offset address= gave (a tile placed by hand)
    spilled = None        # its HBM copy while it is spilled
    zero_view = None      # the view a deferred zero fill covers (a PSUM tile)
    taken = False         # it holds bytes the allocator's take gave (given back when it dies)
    reserved = False      # it holds bytes its address= named (released when it dies)
    shared = False        # HBM seen as one by every program: nl.shared_hbm scratch (one copy for
                          # every core) or an argument of an LNC=2 launch

    def __init__(self, tracer, kind, nbytes, name=None):
        self.tracer = tracer      # owning tracer
        self.kind = kind          # 'sbuf', 'psum' or 'hbm'
        self.nbytes = nbytes      # bytes per partition (on chip) or in all (HBM)
        self.name = name          # HBM variable name
        self.offset = None        # byte offset in each partition, once placed
        self.base = {}            # engine -> instruction count to wait for before any access (reuse)
        self.acc = Accesses(nbytes)   # (rect, engine, is_write) -> last instruction number
        self.seq = [0]            # trace position of its last access (LRU order of freed bytes)
        self.written = False      # some instruction wrote it
        self.written_boxes = []   # PSUM boxes (within the tile) written so far: accumulate=None
        self.overwrites = []      # HBM: byte spans plain DMAs overwrite (tracer.whole_overwrite)
        self.other_use = False    # HBM: read, accumulated into or written some other way too
        self.line = user_line()   # where it was created, for overflow errors
        self.core = tracer.core   # physical core (subgraph) whose SBUF/PSUM holds it
        self.alloc = tracer.alloc  # that core's allocator

    def place(self):
        """Give the storage its on-chip bytes (first use)."""
        if self.offset is None and self.kind != "hbm" and self.fixed is not None:
            self.offset, self.base = self.fixed, self.alloc.reserve(self)
            self.acc = self.alloc.manual_acc[self.kind]
            self.reserved = True
        elif self.offset is None and self.kind != "hbm":
            self.offset, self.base = self.alloc.take(self)
            self.taken = True
            if self.spilled is not None:
                self.tracer.reload(self)
        return self

    def evict(self):
        """Give the tile's bytes back (it was spilled to HBM): its accesses
        stay with the freed bytes; it starts afresh when reloaded."""
        self._give_back()
        self.offset, self.base, self.acc = None, {}, Accesses(self.nbytes)

    def _give_back(self):
        """Return the bytes take gave, with the accesses made to them."""
        self.taken = False
        self.alloc.give(self.kind, self.offset, self.nbytes, self.acc, self.seq, id(self))

    def __del__(self):
        if self.taken:
            self._give_back()
        elif self.reserved:
            self.alloc.release(self)


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
        self.manual = {"sbuf": [], "psum": []}       # (lo, hi, tile id) of each live address= tile
        self.manual_acc = {k: Accesses(n) for k, n in self.size.items()}  # of all tiles placed by address=
        self.live = {}            # id -> weakref of each tile placed by take (spill candidates)
        self.spill = None         # the tracer's spill(needed, victim): move a live tile to HBM
        # True once a 0-byte placement may have split a free range into two
        # joinable pieces: the next give merges the whole list again
        self.unmerged = {"sbuf": False, "psum": False}
        # SBUF free ranges by age: (position, offset, length) of each range
        # of the free list, sorted, changed with it; the search walks it
        # while every SBUF range is whole 32-byte units (then a candidate
        # is never younger than the range it ends in), else scans the list
        self.by_age = [(0, 0, sbuf)]
        self.starts = [0]         # the start of each SBUF free range, in list order (bisect)
        self.regular = sbuf % 32 == 0

    def reserve(self, st):
        """Place a tile at the bytes its address= names (st.fixed). Those
        bytes leave the free list while a tile naming them lives, and every tile
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
        covered = ([(o, o + ln) for o, ln, _, _ in self.free[kind]]
                   + [(a, b) for a, b, _ in self.manual[kind]])
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
        self.unmerged[kind] |= hi == lo
        if kind == "sbuf":
            self.regular &= lo % 32 == 0 and hi % 32 == 0 and hi > lo
            self._reindex()
            self.starts = [r[0] for r in rest]
        self.manual[kind].append((lo, hi, id(st)))
        self.high[kind] = max(self.high[kind], hi)
        return clock

    def release(self, st):
        """A tile placed by address= died: the bytes of its range that no
        other live address= tile names go back to the free list, with the
        clock of the accesses made through address= tiles (they share one
        record, so a tile placed there later waits for all of them) and
        the dead tile's last trace position."""
        kind, key = st.kind, id(st)
        mine = [(a, b) for a, b, k in self.manual[kind] if k == key]
        others = [m for m in self.manual[kind] if m[2] != key]
        self.manual[kind] = others
        for lo, hi in mine:
            for a, b in _uncovered(lo, hi, others):
                self.give(kind, a, b - a, self.manual_acc[kind], st.seq)

    def clocks_changed(self):
        """The clocks of free ranges were changed in place (a device loop
        retired): ranges next to each other may now be joinable, so the
        next give merges the whole list."""
        self.unmerged = dict.fromkeys(self.unmerged, True)

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
            raise NkiValidationError("%s: %s overflow: a tile of %d bytes per partition does "
                                     "not fit (%d of %d bytes per partition in use)"
                                     % (st.line, st.kind.upper(), size, used, total))
        _, i, j, start, clock = best
        rest = []
        for o, ln, c, q in lst[i:j + 1]:
            if o < start:
                rest.append((o, min(ln, start - o), c, q))
            if o + ln > start + size:
                b = max(o, start + size)
                rest.append((b, o + ln - b, c, q))
        if st.kind == "sbuf":
            self.regular &= size > 0
            self.starts[i:j + 1] = [r[0] for r in rest]
            for r in lst[i:j + 1]:
                self._unindex(r)
            for r in rest:
                self._index(r)
        lst[i:j + 1] = rest
        self.unmerged[st.kind] |= size == 0
        st.nbytes = size
        self.high[st.kind] = max(self.high[st.kind], start + size)
        self.live[id(st)] = weakref.ref(st)
        return start, clock

    def _best(self, kind, size):
        """Where a tile of size bytes per partition goes: (age, first and
        last free range it covers, start, clock of their last accesses),
        the least recently used place; None when nothing fits. Only the
        age of each candidate is computed; the clock only for the winner."""
        lst = self.free[kind]
        if kind == "psum":
            found = self._best_psum(lst, size)
        elif self.regular and size > 0:
            found = self._best_by_age(lst, size)
        else:
            found = self._best_sbuf(lst, size)
        if found is None:
            return None
        age, i, j, start = found
        clock, end = {}, start + size
        for o, ln, c, q in lst[i:j + 1]:
            if o < end and o + ln > start:
                for e, v in c.items():
                    clock[e] = max(clock.get(e, 0), v)
        return age, i, j, start, clock

    @staticmethod
    def _age(lst, i, j, start, size):
        """The trace position of the last access to any free range among
        lst[i..j] that [start, start + size) overlaps (0: never used)."""
        age, end = 0, start + size
        for k in range(i, j + 1):
            o, ln, _, q = lst[k]
            if q > age and o < end and o + ln > start:
                age = q
        return age

    def _best_sbuf(self, lst, size):
        """The oldest SBUF candidate, searched from the top down (the first
        of equal ages wins): (age, i, j, start) or None."""
        best = None
        for j in range(len(lst) - 1, -1, -1):
            cand = self._sbuf_candidate(lst, j, size, None if best is None else best[0])
            if cand is None:
                continue
            i, start, age = cand
            if best is None or age < best[0]:
                best = (age, i, j, start)
                if age == 0:
                    break
        return best

    @staticmethod
    def _sbuf_candidate(lst, j, size, limit=None):
        """The SBUF candidate that ends where free range j ends: (i, start,
        age), or None when the free bytes below it are too few or (with a
        limit) its age is above limit. The age is _age's, gathered while
        walking down from range j to the range the candidate starts in."""
        o, ln, _, q = lst[j]
        start = (o + ln - size) & ~31
        if start >= o:            # inside range j alone (an empty tile has no age)
            return j, start, q if size > 0 else 0
        age, end, i = 0, start + size, j
        while True:
            o, ln, _, q = lst[i]
            if q > age and o < end and o + ln > start:
                age = q
                if limit is not None and age > limit:
                    return None
            if start >= o:
                return i, start, age
            if i == 0 or lst[i - 1][0] + lst[i - 1][1] != o:
                return None
            i -= 1

    def _best_by_age(self, lst, size):
        """What _best_sbuf finds, visiting free ranges oldest first: a
        candidate is never younger than the range it ends in, so once the
        ranges left are younger than the best candidate, none can beat it
        (ties go to the highest range, as in the scan from the top)."""
        best, starts = None, self.starts
        for q, o, _ in self.by_age:
            if best is not None and q > best[0]:
                break
            j = bisect.bisect_left(starts, o)
            cand = self._sbuf_candidate(lst, j, size, None if best is None else best[0])
            if cand is None:
                continue
            i, start, age = cand
            if best is None or age < best[0] or (age == best[0] and j > best[2]):
                best = (age, i, j, start)
        return best

    def _reindex(self):
        """The SBUF ranges by age made anew from the free list."""
        self.by_age = sorted((q, o, ln) for o, ln, _, q in self.free["sbuf"])

    def _index(self, r):
        """SBUF free range r (offset, length, clock, position) joins by_age."""
        bisect.insort(self.by_age, (r[3], r[0], r[1]))

    def _unindex(self, r):
        """SBUF free range r leaves by_age."""
        del self.by_age[bisect.bisect_left(self.by_age, (r[3], r[0], r[1]))]

    def _best_psum(self, lst, size):
        """The oldest PSUM candidate, searched from the first bank up."""
        best = None
        for i, j, start in self._candidates("psum", lst, size):
            age = self._age(lst, i, j, start, size)
            if best is None or age < best[0]:
                best = (age, i, j, start)
                if age == 0:
                    break
        return best

    def _candidates(self, kind, lst, size):
        """Where a PSUM tile of size bytes can go: (first, last free range
        used, start). PSUM fills from its first bank up; SBUF (_best_sbuf)
        from its top down, so tiles the front end places stay clear of the
        low addresses that kernels placing their own tiles (address=, an
        SbufManager) use first."""
        for i in range(len(lst)):
            start = self._align(kind, lst[i][0], size)
            # extend over adjacent free ranges until [start, start+size) is covered
            j, end = i, lst[i][0] + lst[i][1]
            while end < start + size and j + 1 < len(lst) and lst[j + 1][0] == end:
                j += 1
                end = lst[j][0] + lst[j][1]
            if start + size <= end:
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
        """Return [off, off + size) to the free list with the clock of the
        accesses acc made to it and its trace position seq[0]; a range
        next to it with the same clock and position becomes one with it."""
        if key is not None:
            self.live.pop(key, None)
        clock = acc.clock()
        lst = self.free[kind]
        item = (off, size, clock, seq[0])
        if kind == "sbuf":
            self.regular &= size > 0 and off % 32 == 0 and size % 32 == 0
        if self.unmerged[kind]:
            lst.append(item)
            lst.sort(key=_range_offset)
            self.free[kind] = self._merge_all(lst)
            self.unmerged[kind] = False
            if kind == "sbuf":
                self._reindex()
                self.starts = [r[0] for r in self.free[kind]]
            return
        # the list is merged already: only the new range's neighbours can join it
        starts = self.starts if kind == "sbuf" else [r[0] for r in lst]
        k = bisect.bisect_right(starts, off)
        gone = []                 # free ranges the new one absorbs
        if k > 0 and self._joins(lst[k - 1], item):
            k -= 1
            p = lst[k]
            gone.append(p)
            item = (p[0], p[1] + size, clock, item[3])
            lst[k] = item
        else:
            lst.insert(k, item)
            starts.insert(k, off)
        if k + 1 < len(lst) and self._joins(item, lst[k + 1]):
            n = lst.pop(k + 1)
            gone.append(n)
            starts.pop(k + 1)
            item = lst[k] = (item[0], item[1] + n[1], n[2], n[3])
        if kind == "sbuf":
            for r in gone:
                self._unindex(r)
            self._index(item)

    @staticmethod
    def _joins(a, b):
        """Free range b starts where a ends, with the same clock and position."""
        return a[0] + a[1] == b[0] and a[2] == b[2] and a[3] == b[3]

    @staticmethod
    def _merge_all(lst):
        """The sorted free list with every run of joinable ranges made one."""
        merged = []
        for o, ln, c, q in lst:
            m = merged[-1] if merged else None
            if m and m[0] + m[1] == o and m[2] == c and m[3] == q:
                merged[-1] = (m[0], m[1] + ln, c, q)
            else:
                merged.append((o, ln, c, q))
        return merged
