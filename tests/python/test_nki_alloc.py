"""test_nki_alloc.py: tiles placed by hand with nl.ndarray(address=...):
partition offsets, tiles that reuse the same bytes one after another (the
race checker is on), bytes named by address= returned when their tile
dies, the overlap and range errors, and nki.compiler.force_auto_alloc."""
import numpy as np
import pytest

import nki
import nki.compiler as ncc
import nki.isa as nisa
import nki.language as nl


def _staged_sum(a, b):
    """out = (a + 1) + (b * 2), every tile at a fixed address; the tiles of
    the two stages share bytes, so the second stage must wait for the first."""
    P, F = a.shape
    out = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(64, 0))
    nisa.dma_copy(dst=x, src=a)
    y = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(0, 4 * F))
    nisa.tensor_scalar(dst=y, data=x, op0=nl.add, operand0=1.0)
    x2 = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf, address=(64, 0))   # x's bytes again
    nisa.dma_copy(dst=x2, src=b)
    nisa.tensor_scalar(dst=x2, data=x2, op0=nl.multiply, operand0=2.0)
    nisa.tensor_tensor(dst=y, data1=y, data2=x2, op=nl.add)
    nisa.dma_copy(dst=out, src=y)
    return out


def test_fixed_addresses_reused_in_order():
    a = np.arange(64 * 16, dtype=np.float32).reshape(64, 16)
    b = np.full((64, 16), 3.0, np.float32)
    np.testing.assert_array_equal(nki.jit(_staged_sum)(a, b), (a + 1) + b * 2)


def test_force_auto_alloc_ignores_addresses():
    k = nki.jit(ncc.force_auto_alloc(_staged_sum))
    a = np.ones((64, 16), np.float32)
    np.testing.assert_array_equal(k(a, a), a + 1 + 2 * a)


def test_address_errors():
    @nki.jit
    def past_partitions(a):
        t = nl.ndarray((64, 4), dtype=nl.float32, buffer=nl.sbuf, address=(100, 0))
        nisa.dma_copy(dst=t, src=a)
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_alloc.py:\d+: address=\(100, 0\) puts 64"):
        past_partitions(np.zeros((64, 4), np.float32))

    @nki.jit
    def past_bytes(a):
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.psum, address=(0, 16 * 1024 - 16))
        nisa.memset(dst=t, value=0.0)
        return a
    with pytest.raises(nki.NKIError, match="outside the 16384 bytes of a PSUM partition"):
        past_bytes(np.zeros((4, 8), np.float32))

    @nki.jit
    def over_auto(a):
        auto = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=auto, value=1.0)
        # the front end places its tiles from the top of SBUF down
        t = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.sbuf,
                       address=(0, nl.tile_size.total_available_sbuf_size - 32))
        nisa.tensor_copy(dst=t, src=auto)
        return a
    with pytest.raises(nki.NKIError, match="hold a tile the front end placed"):
        over_auto(np.zeros((4, 8), np.float32))


def _placed_phase(a, out, keep):
    """out = a + 1 through one tile placed by address= over all SBUF but
    its top 32 KiB; the tile dies when the phase returns unless kept."""
    P, F = a.shape
    words = (nl.tile_size.total_available_sbuf_size - 32 * 1024) // 4
    big = nl.ndarray((P, words), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    nisa.dma_copy(dst=big[:, :F], src=a)
    nisa.tensor_scalar(dst=big[:, :F], data=big[:, :F], op0=nl.add, operand0=1.0)
    nisa.dma_copy(dst=out, src=big[:, :F])
    if keep is not None:
        keep.append(big)


def _after_placed_phase(a, keep_placed):
    """(a + 1) + a, the sum by three 48 KiB front-end tiles in one
    instruction, after the phase above."""
    P, F = a.shape
    mid = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    kept = [] if keep_placed else None
    _placed_phase(a, mid, kept)
    t0 = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    t1 = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    t2 = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t0, src=mid)
    nisa.dma_copy(dst=t1, src=a)
    nisa.tensor_tensor(dst=t2, data1=t0, data2=t1, op=nl.add)
    nisa.dma_copy(dst=out, src=t2)
    return out


def test_address_bytes_return_when_the_tile_dies():
    # a kernel placing its tiles by phase (as the NKI Library's buffer
    # manager does) leaves the front end the bytes of the tiles that died
    a = np.arange(4 * 12288, dtype=np.float32).reshape(4, 12288)

    @nki.jit
    def after_dead(a):
        return _after_placed_phase(a, keep_placed=False)
    np.testing.assert_array_equal(after_dead(a), (a + 1) + a)

    @nki.jit
    def while_alive(a):
        return _after_placed_phase(a, keep_placed=True)
    with pytest.raises(nki.NKIError, match="SBUF overflow"):
        while_alive(a)


def test_legacy_block_allocators():
    @nki.jit
    def k(a):
        # 4 logical blocks on 2 physical byte tiles (modulo 2): blocks 0 and 2 share bytes
        t = nl.ndarray((4, nl.par_dim(8), 16), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=512, num_free_tiles=(2,)))
        out = nl.ndarray((4, 8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for b in range(4):
            nisa.dma_copy(dst=t[b], src=a[b])
            nisa.tensor_scalar(dst=t[b], data=t[b], op0=nl.multiply, operand0=float(b + 1))
            nisa.dma_copy(dst=out[b], src=t[b])
        ps = nl.ndarray((nl.par_dim(8), 16), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=2))
        nisa.memset(dst=ps, value=3.0)
        o2 = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.tensor_copy(dst=t[0], src=ps)
        nisa.dma_copy(dst=o2, src=t[0])
        return out, o2
    a = np.arange(4 * 8 * 16, dtype=np.float32).reshape(4, 8, 16)
    out, o2 = k(a)
    np.testing.assert_array_equal(out, a * np.arange(1, 5, dtype=np.float32)[:, None, None])
    np.testing.assert_array_equal(o2, 3.0)
    assert ncc.sbuf == "sbuf" and ncc.psum.auto_alloc() == "psum"

    @nki.jit
    def scattered(a):
        t = nl.ndarray((3, nl.par_dim(8), 16), dtype=nl.float32,
                       buffer=ncc.sbuf.alloc(lambda idx, p, f: (0, [0, 4096, 512][idx[0]])))
        out = nl.ndarray((3, 8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for b in range(3):
            nisa.dma_copy(dst=t[b], src=a[b])
            nisa.dma_copy(dst=out[b], src=t[b])
        return out
    np.testing.assert_array_equal(scattered(a[:3]), a[:3])

    @nki.jit
    def sliced(a):
        t = nl.ndarray((4, nl.par_dim(8), 16), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        nisa.dma_copy(dst=t[0:2], src=a[0:2])
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_alloc.py:\d+: .*indexed block by block"):
        sliced(a)


class _RefAllocator:
    """The allocator's search as it was before it kept free ranges by age
    (a scan of every free range, SBUF from the top down and PSUM from the
    bottom up, merging the whole list at every free): what the faster one
    must reproduce placement for placement."""

    def __init__(self, sbuf, psum):
        self.free = {"sbuf": [(0, sbuf, {}, 0)], "psum": [(0, psum, {}, 0)]}

    def _candidates(self, kind, lst, size):
        from nki._core.alloc import Allocator
        if kind == "psum":
            for i in range(len(lst)):
                start = Allocator._align(kind, lst[i][0], size)
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
            i = j
            while start < lst[i][0] and i > 0 and lst[i - 1][0] + lst[i - 1][1] == lst[i][0]:
                i -= 1
            if start >= lst[i][0]:
                yield i, j, start

    def take(self, kind, size):
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
        if best is None:
            return None
        _, i, j, start, clock = best
        rest = []
        for o, ln, c, q in lst[i:j + 1]:
            if o < start:
                rest.append((o, min(ln, start - o), c, q))
            if o + ln > start + size:
                b = max(o, start + size)
                rest.append((b, o + ln - b, c, q))
        lst[i:j + 1] = rest
        return start, clock

    def give(self, kind, off, size, acc, seq):
        clock = {}
        for (_, eng, _), n in acc.items():
            clock[eng] = max(clock.get(eng, 0), n)
        lst = self.free[kind]
        lst.append((off, size, clock, seq))
        lst.sort(key=lambda r: r[0])
        merged = []
        for o, ln, c, q in lst:
            m = merged[-1] if merged else None
            if m and m[0] + m[1] == o and m[2] == c and m[3] == q:
                merged[-1] = (m[0], m[1] + ln, c, q)
            else:
                merged.append((o, ln, c, q))
        self.free[kind] = merged


class _Tile:
    """What Allocator.take reads of a tile."""

    def __init__(self, kind, nbytes):
        self.kind, self.nbytes, self.line = kind, nbytes, "test:0"


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_allocator_places_as_the_reference_search(seed):
    # random tiles taken and freed, with random accesses (engines and
    # instruction numbers) and trace positions, in a small SBUF so that
    # the free list fragments: every placement, clock and free list equals
    # the reference's
    from nki._core.alloc import Accesses, Allocator
    from nki._core.context import NKIError, PSUM_BYTES
    rng = np.random.default_rng(seed)
    sbuf = 16384
    new, ref = Allocator(sbuf), _RefAllocator(sbuf, PSUM_BYTES)
    new.spill = None
    live = []
    for step in range(1, 1500):
        if live and (rng.random() < 0.45 or len(live) > 40):
            kind, off, size, acc = live.pop(int(rng.integers(len(live))))
            seq = [int(rng.integers(step // 2, step + 1))] if rng.random() < 0.9 else [0]
            new.give(kind, off, size, acc, seq)
            ref.give(kind, off, size, acc, seq[0])
        else:
            kind = "psum" if rng.random() < 0.2 else "sbuf"
            nbytes = int(rng.choice([4, 32, 100, 512, 1000, 2048, 2100, 4096]))
            t = _Tile(kind, nbytes)
            size = ((nbytes + 31) & ~31) if kind == "sbuf" else (
                nbytes + (2048 - nbytes % 2048) % 2048 if nbytes > 2048 else nbytes)
            want = ref.take(kind, size)
            if want is None:
                with pytest.raises(NKIError, match="overflow"):
                    new.take(t)
                continue
            got = new.take(t)
            assert got == want, (step, kind, size)
            acc = Accesses()
            acc[((0, 1, 0, 1), (0, str(rng.choice(["pe", "act", "dve", "pool", "sp"]))),
                 bool(rng.random() < 0.5))] = int(rng.integers(1, step + 1))
            live.append((kind, got[0], size, acc))
        assert new.free == ref.free, step
        assert new.starts == [r[0] for r in new.free["sbuf"]], step
        # the ranges by age stay in step with the free list
        assert new.by_age == sorted((q, o, ln) for o, ln, _, q in new.free["sbuf"]), step


def test_an_access_record_finds_the_newest_overlapping_access():
    """The record's bucket index and its largest-number shortcut give what a
    scan of every rect gives: the largest number of a rect that overlaps,
    across buckets, after numbers go down (a device loop retiring), for
    rects wider than a bucket and rects at the end of the storage."""
    import random
    from nki._core.access import _overlap
    from nki._core.alloc import Accesses
    rng = random.Random(5)
    acc = Accesses(4096)
    key = (("c0", "dve"), True)
    for n in range(1, 400):
        p = rng.randrange(0, 128)
        lo = rng.randrange(0, 4096)
        r = (p, rng.randrange(p + 1, 129), lo, rng.randrange(lo + 1, min(4096, lo + 600) + 1))
        acc.note(r, key[0], key[1], n if n % 97 else n // 2)       # now and then a smaller number
        for _ in range(3):
            q_lo = rng.randrange(0, 4096)
            q = (0, 128, q_lo, rng.randrange(q_lo + 1, 4097))
            got = rng.choice((0, n // 3))
            want = max([got] + [m for r2, m in acc.groups[key].items() if _overlap(q, r2)])
            assert acc.latest(key, q, got) == want
    assert acc.clock() == {key[0]: max(acc.groups[key].values())}
    whole = (0, 128, 0, 4096)
    acc[(whole, key[0], key[1])] = 1                               # the largest goes down
    q = (0, 1, 4095, 4096)
    assert acc.latest(key, q, 0) == max(m for r2, m in acc.groups[key].items() if _overlap(q, r2))
    assert acc.clock() == {key[0]: max(acc.groups[key].values())}
