"""_core/placement.py: tiles placed by an allocation function (the legacy
nki.compiler.sbuf.alloc / psum.alloc and their modulo forms). A function
gives each logical block of a tensor (the dims before its partition dim)
a place: (partition, byte) in SBUF, (bank, partition, byte) in PSUM. trnemu
keeps a tensor as one strided view, so the places must form a lattice: a
constant partition and a constant byte step per block dimension (0 lets
blocks share bytes, as the modulo allocators do when they wrap to one
tile); other placements are refused with an NKIError."""
import itertools

from .alloc import MemoryRegion
from .context import NUM_PARTITIONS, PSUM_BANK, fail


class Placement:
    """buffer= of nl.ndarray: the memory (sbuf or psum) and the function
    that places each block."""

    def __init__(self, kind, func):
        self.kind = kind          # 'sbuf' or 'psum'
        self.func = func          # (block index, partitions, bytes per partition) -> place

    def __repr__(self):
        return "Placement(%s, %r)" % (self.kind, self.func)


def _place(pl, idx, parts, nbytes):
    """(partition, byte) of block idx."""
    got = pl.func(tuple(idx), parts, nbytes)
    try:
        if pl.kind == "psum":
            bank, part, byte = (int(v) for v in got)
            return part, bank * PSUM_BANK + byte
        part, byte = (int(v) for v in got)
        return part, byte
    except (TypeError, ValueError):
        fail("the %s allocation function returned %r, not a place" % (pl.kind, got))


def layout(pl, blocks, parts, tile_bytes, elem_size):
    """(first partition, first byte, byte step per block dim, bytes per
    partition spanned) of a placed tensor, checked to be a lattice."""
    zero = (0,) * len(blocks)
    p0, b0 = _place(pl, zero, parts, tile_bytes)
    steps = []
    for k, n in enumerate(blocks):
        if n == 1:
            steps.append(0)
            continue
        unit = list(zero)
        unit[k] = 1
        pk, bk = _place(pl, unit, parts, tile_bytes)
        if pk != p0:
            fail("the %s allocation puts blocks on different partitions (%d, %d): trnemu places "
                 "a tensor's blocks on the same partitions" % (pl.kind, p0, pk))
        if bk < b0 or (bk - b0) % elem_size:
            fail("the %s allocation steps blocks by %d bytes: trnemu needs a non-negative "
                 "whole number of elements" % (pl.kind, bk - b0))
        steps.append(bk - b0)
    count = 1
    for n in blocks:
        count *= n
    if count <= 4096:
        for idx in itertools.product(*[range(n) for n in blocks]):
            want = (p0, b0 + sum(i * s for i, s in zip(idx, steps)))
            if _place(pl, idx, parts, tile_bytes) != want:
                fail("the %s allocation of block %s is not on a constant stride: trnemu "
                     "keeps a tensor's blocks on one stride per dimension" % (pl.kind, idx))
    if p0 < 0 or p0 + parts > NUM_PARTITIONS:
        fail("the %s allocation puts %d partitions at partition %d" % (pl.kind, parts, p0))
    span = tile_bytes + sum(s * (n - 1) for s, n in zip(steps, blocks))
    return p0, b0, steps, span


def lattice(pl, blocks, parts, tile_bytes, elem_size):
    """layout() when the places form a lattice, else None."""
    from .context import NKIError
    try:
        return layout(pl, blocks, parts, tile_bytes, elem_size)
    except NKIError:
        return None


class BlockTensor:
    """A tensor whose blocks sit at places no single stride describes (a
    modulo allocator wrapping over fewer tiles than blocks: multi-buffering).
    t[i, ...] with integer block indices gives block i's tile view, at its
    own place; blocks at the same place share their bytes (and their access
    record, so they wait for each other)."""

    def __init__(self, tr, pl, shape, pdim, di):
        self.pl = pl
        self.blocks = shape[:pdim]
        self.tile_shape = shape[pdim:]
        self.shape = tuple(shape)
        self.dtype = di.public
        self.buffer = MemoryRegion(pl.kind)
        self.ndim = len(shape)
        self._di = di
        self._tr = tr
        self._tiles = {}          # place -> Storage

    def _tile(self, idx):
        from .alloc import Storage
        from .tensors import NkiTensor
        parts, free = self.tile_shape[0], self.tile_shape[1:]
        n = 1
        for f in free:
            n *= f
        part, byte = _place(self.pl, idx, parts, n * self._di.size)
        if part < 0 or part + parts > NUM_PARTITIONS:
            fail("the %s allocation puts block %s at partition %d" % (self.pl.kind, idx, part))
        st = self._tiles.get((part, byte))
        if st is None:
            st = Storage(self._tr, self.pl.kind, n * self._di.size)
            st.row_bytes = n * self._di.size
            st.fixed = byte
            self._tiles[(part, byte)] = st
        dims, stride = [[1, parts]], n
        for f in free:
            stride //= f
            dims.append([stride, f])
        return NkiTensor(st, self.dtype, dims, 0, part)

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        k = len(self.blocks)
        head = idx[:k]
        if len(head) < k or not all(isinstance(i, int) for i in head):
            fail("a tensor whose blocks are placed apart (a wrapping modulo allocation) is "
                 "indexed block by block: give %d integer block indices first" % k)
        norm = []
        for i, n in zip(head, self.blocks):
            i = i + n if i < 0 else i
            if not 0 <= i < n:
                fail("block index %d is outside %d blocks" % (i, n))
            norm.append(i)
        tile = self._tile(tuple(norm))
        rest = idx[k:]
        return tile[rest] if rest else tile

    def __setitem__(self, idx, value):
        from .. import language
        language._assign(self[idx], value)

    def __bool__(self):
        return True

    def __repr__(self):
        return "BlockTensor(%s, shape=%s, dtype=%s)" % (self.buffer, self.shape, self.dtype)
