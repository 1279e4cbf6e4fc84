"""test_nki_call.py: what makes a cached call cheap, and what it must not
change. A result the caller still holds (itself, a view, a memoryview, a
weak reference) is never written by a later call; one it dropped may be
written again and still reads the right values, with the bytes the kernel
does not write reading 0. The tracer tells which results every execution
overwrites whole (plain DMAs cover every byte, nothing reads it first):
those need no zeroing. A call whose arguments look like the last call's
reuses its kernel without computing the key, but a new shape, a new int
argument or an evicted kernel still go through the kernel cache. The
runtime's log lines of a call still come out, and a failure still names
its kernel line. Arrays over BORROW_MAX are lent: never kept alive by
the kernel, attached again unless the same live array comes back where
it was, and an execution with a lent array gone is refused. An argument
the kernel writes is lent too (no copy of it in or out), unless it is not
contiguous or shares memory with another argument: then a copy is lent
and copied back."""
import gc
import weakref

import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import _kernel


@nki.jit
def add_one(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), 1.0))
    return out


@nki.jit
def left_half(a):
    """Writes the left half of the columns of its result only."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    h = a.shape[1] // 2
    nl.store(out[:, 0:h], nl.load(a[:, 0:h]))
    return out


def _address_of_result(kernel, a):
    """Call kernel(a) and drop its result: where the result was."""
    return kernel(a).ctypes.data


def test_a_held_result_is_never_written_again():
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    r1 = add_one(a)
    v = add_one(a * 2)[:, 2:4]             # only a view of the second result is kept
    m = memoryview(add_one(a * 3))
    for k in range(4):
        add_one(a * 0)
    np.testing.assert_array_equal(r1, a + 1)
    np.testing.assert_array_equal(v, (a * 2 + 1)[:, 2:4])
    np.testing.assert_array_equal(np.asarray(m), a * 3 + 1)


def test_a_result_held_by_a_weak_reference_is_not_written():
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    r = add_one(a)
    w = weakref.ref(r)
    del r                                   # the kernel keeps it; the caller's weak reference sees it
    gc.collect()
    add_one(a * 0)                          # takes another array
    assert w() is not None
    np.testing.assert_array_equal(w(), a + 1)


def test_a_dropped_result_is_reused_and_reads_the_new_values():
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    first = _address_of_result(add_one, a)
    assert add_one.last.whole                 # the store covers every byte of the result
    r = add_one(a * 5)
    assert r.ctypes.data == first             # the dropped array, written again
    np.testing.assert_array_equal(r, a * 5 + 1)
    out = None
    seen = set()
    for k in range(6):                        # out = kernel(...) in a loop: two arrays take turns
        out = add_one(a + k)
        np.testing.assert_array_equal(out, a + k + 1)
        seen.add(out.ctypes.data)
    assert len(seen) == 2


def test_a_reused_result_reads_zero_where_the_kernel_does_not_write():
    a = np.full((128, 8), 3.0, np.float32)
    first = _address_of_result(left_half, a)
    assert not left_half.last.whole
    r = left_half(a + 1)
    assert r.ctypes.data == first
    np.testing.assert_array_equal(r[:, :4], a[:, :4] + 1)
    assert not r[:, 4:].any()


@nki.jit
def reads_its_output(a):
    """Loads its result before writing all of it: what it read must be 0."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    before = nl.load(out)
    nl.store(out, nl.add(before, nl.load(a)))
    return out


@nki.jit
def accumulates(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=nl.load(a), dst_rmw_op=np.add)
    return out


@nki.jit
def even_and_odd(a):
    """Every byte written, by two strided stores (columns 0, 2, .. and 1, 3, ..)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out[:, 0::2], t[:, 0::2])
    nl.store(out[:, 1::2], t[:, 1::2])
    return out


@nki.jit
def two_halves(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:64], nl.load(a[0:64]))
    nl.store(out[64:128], nl.load(a[64:128]))
    return out


@pytest.mark.parametrize("kernel,whole", [(reads_its_output, False), (accumulates, False),
                                          (even_and_odd, False), (two_halves, True)])
def test_which_results_are_overwritten_whole(kernel, whole):
    """Only plain DMAs covering every byte with nothing reading the tensor
    count (strided stores are not worked out: zeroed, which is always
    right); either way every call reads as if the result started at 0."""
    a = np.arange(128 * 8, dtype=np.float32).reshape(128, 8)
    for k in range(3):                        # dropped results are reused
        np.testing.assert_array_equal(kernel(a + k), a + k)
    assert bool(kernel.last.whole) == whole


def test_a_call_with_other_shapes_or_ints_goes_through_the_cache():
    @nki.jit
    def scaled(a, n):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), float(n)))
        return out
    a = np.ones((128, 8), np.float32)
    np.testing.assert_array_equal(scaled(a, 2), a * 2)
    np.testing.assert_array_equal(scaled(a, 3), a * 3)      # another int: another kernel
    np.testing.assert_array_equal(scaled(a, 3.0), a * 3)    # a float: the full key
    wide = np.ones((128, 16), np.float32)
    np.testing.assert_array_equal(scaled(wide, 3), wide * 3)
    np.testing.assert_array_equal(scaled(a.astype(np.float16), 3), a * 3)
    np.testing.assert_array_equal(scaled(a, 2), a * 2)
    np.testing.assert_array_equal(scaled(a, n=5), a * 5)     # keywords: the full key


def test_an_evicted_kernel_is_compiled_again(monkeypatch):
    monkeypatch.setattr(_kernel, "CACHE_MODELS", 1)
    a = np.ones((128, 8), np.float32)
    np.testing.assert_array_equal(add_one(a), a + 1)
    first = add_one.last
    b = np.ones((128, 6), np.float32)       # a new kernel: add_one's is evicted
    np.testing.assert_array_equal(left_half(b)[:, :3], b[:, :3])
    assert first.evicted and not first.model.loaded()
    np.testing.assert_array_equal(add_one(a), a + 1)
    assert add_one.last is not first and add_one.last.model.loaded()


def test_loaded_kernels_over_the_memory_bound_are_unloaded(monkeypatch):
    """TRNEMU_NKI_LOADED_MAX_MB bounds what the kept kernels hold: a new
    kernel unloads the least recently called until they fit; the newest
    stays even alone over the bound; 0 leaves only the count."""
    big = np.ones((128, 4096), np.float32)           # 2 MiB in, 2 MiB out
    monkeypatch.setenv("TRNEMU_NKI_LOADED_MAX_MB", "0")
    np.testing.assert_array_equal(add_one(big), big + 1)
    first = add_one.last
    assert first.held >= first.model.device_bytes >= 2 * big.nbytes
    np.testing.assert_array_equal(left_half(big)[:, :2048], big[:, :2048])
    assert not first.evicted                          # no bound: both kept
    monkeypatch.setenv("TRNEMU_NKI_LOADED_MAX_MB", "3")
    b = np.ones((128, 4000), np.float32)              # a new kernel, over 3 MiB alone
    np.testing.assert_array_equal(add_one(b), b + 1)
    assert first.evicted and not first.model.loaded()
    assert list(_kernel._cache.values()) == [add_one.last] and add_one.last.model.loaded()
    assert sum(c.held for c in _kernel._cache.values()) == add_one.last.held
    monkeypatch.setenv("TRNEMU_NKI_LOADED_MAX_MB", "1M")
    with pytest.raises(nki.NKIError, match="TRNEMU_NKI_LOADED_MAX_MB"):
        add_one(np.ones((128, 3), np.float32))


@nki.jit
def fails_on_the_device(a):
    out = nl.ndarray((a.shape[0], 6), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nisa.bn_stats(nl.load(a)))  # MARK-device
    return out


def test_a_failed_call_names_its_line_and_its_log_lines_come_out(capsys):
    """The second call is a cached one: its failure is reported as the
    first's (the kernel line, the runtime's cause), and the runtime's
    lines reach sys.stderr."""
    mark = [i + 1 for i, ln in enumerate(open(__file__).read().splitlines())
            if ln.endswith("# MARK-device")][0]
    for k in range(2):
        with pytest.raises(nki.NKIError, match=r"test_nki_call.py:%d: .*bn_stats" % mark):
            fails_on_the_device(np.zeros((8, 1024), np.float32))
        assert "ERROR" in capsys.readouterr().err


# ---- arrays over BORROW_MAX: lent to the device, never kept -----------------

def _large(value):
    """A [128, 1024] f32 array (512 KiB, over BORROW_MAX) filled with value."""
    a = np.full((128, 1024), value, np.float32)
    assert a.nbytes > _kernel.BORROW_MAX
    return a


def _lent(kernel):
    """The last call's model and its lent input's (weak reference, layout)."""
    m = kernel.last.model
    (rec,) = [m.lent[nm] for nm in kernel.last.arg_names.values()]
    return m, rec


def test_a_large_argument_or_result_is_not_kept_alive():
    a = _large(2.0)
    r = add_one(a)
    np.testing.assert_array_equal(r, a + 1)
    wa, wr = weakref.ref(a), weakref.ref(r)
    del a, r
    gc.collect()
    assert wa() is None and wr() is None    # freed though the kernel stays cached
    assert add_one.last.model.loaded() and not add_one.last.model.borrowed


def test_a_large_argument_mutated_in_place_is_read_again_without_a_new_attach():
    a = _large(1.0)
    np.testing.assert_array_equal(add_one(a), a + 1)
    _, rec = _lent(add_one)
    a[5:9, 100:300] = -4.0                  # the device reads the array itself
    np.testing.assert_array_equal(add_one(a), a + 1)
    assert _lent(add_one)[1] is rec         # the same live array: not attached again


def test_a_large_argument_dropped_and_replaced_at_its_address_is_attached_again():
    buf = bytearray(128 * 1024 * 4)
    a = np.frombuffer(buf, np.float32).reshape(128, 1024)
    a[:] = 3.0
    np.testing.assert_array_equal(add_one(a), a + 1)
    addr = a.ctypes.data
    del a                                    # another array at the same address
    b = np.frombuffer(buf, np.float32).reshape(128, 1024)
    b[:] = 8.0
    assert b.ctypes.data == addr
    np.testing.assert_array_equal(add_one(b), b + 1)
    assert _lent(add_one)[1][0]() is b      # attached anew: it is a new array
    for k in range(4):                      # freed memory, then new arrays (often at its place)
        c = _large(float(k))
        np.testing.assert_array_equal(add_one(c), c + 1)
        del c
    wide = np.arange(128 * 2048, dtype=np.float32).reshape(128, 2048)[:, ::2]
    np.testing.assert_array_equal(add_one(wide), wide + 1)   # a contiguous copy, lent
    assert _lent(add_one)[1][0]() is None   # and freed after the call


def test_a_large_result_is_new_each_call_with_unwritten_bytes_zero():
    a = _large(3.0)
    rs = [left_half(a + k) for k in range(3)]
    assert not left_half.last.whole
    for k, r in enumerate(rs):
        np.testing.assert_array_equal(r[:, :512], a[:, :512] + k)
        assert not r[:, 512:].any()
    assert len({r.ctypes.data for r in rs}) == 3
    del rs
    for k in range(3):                       # dropped results: the bytes they held do not show
        r = left_half(a)
        assert not r[:, 512:].any()
        r[:] = 9.0
        del r


def test_an_execution_with_a_lent_array_gone_is_refused():
    a = _large(1.0)
    add_one(a)                               # the result is dropped at once
    with pytest.raises(RuntimeError, match="no longer exists"):
        add_one.last.model.execute(quiet=True)
    np.testing.assert_array_equal(add_one(a), a + 1)   # a call lends it a new one


def test_a_large_argument_whose_layout_changed_in_place_is_attached_again():
    a = np.arange(128 * 1024, dtype=np.float32).reshape(128, 1024)
    np.testing.assert_array_equal(add_one(a), a + 1)
    a.strides = (0, 4)                      # the same array object: every row is row 0 now
    assert not a.flags.c_contiguous
    np.testing.assert_array_equal(add_one(a), np.broadcast_to(np.arange(1024) + 1.0, a.shape))


@nki.jit
def bump_in_place(a):
    """Adds 1 to its argument, in place (an in/out tensor)."""
    nl.store(a, nl.add(nl.load(a), 1.0))


@nki.jit
def swap_halves(src, dst):
    """dst's two row halves from src's, the other way round; written one
    half after the other, so dst in src's memory would read a half it
    already wrote."""
    h = src.shape[0] // 2
    nl.store(dst[0:h, :], nl.load(src[h:2 * h, :]))
    nl.store(dst[h:2 * h, :], nl.load(src[0:h, :]))


def test_an_argument_written_in_place_is_its_own_device_tensor():
    import tracemalloc
    a = np.arange(128 * 8192, dtype=np.float32).reshape(128, 8192)   # 4 MiB
    want = a + 1
    bump_in_place(a)
    np.testing.assert_array_equal(a, want)
    tracemalloc.start()
    try:
        bump_in_place(a)                    # cached: no copy of the argument in or out
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(a, want + 1)
    assert peak < a.nbytes // 4, peak


def test_an_argument_written_in_place_that_cannot_be_lent_is_copied_back():
    wide = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    view = wide[:, ::2]                     # not contiguous: a copy is lent, then copied back
    before = wide.copy()
    bump_in_place(view)
    np.testing.assert_array_equal(wide[:, ::2], before[:, ::2] + 1)
    np.testing.assert_array_equal(wide[:, 1::2], before[:, 1::2])
    frozen = np.ones((4, 8), np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):         # NumPy's own refusal to write it
        bump_in_place(frozen)
    np.testing.assert_array_equal(frozen, 1.0)


def test_an_argument_written_in_place_that_shares_memory_with_another_is_copied():
    a = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
    want = np.concatenate([a[64:], a[:64]])
    swap_halves(a, a)                       # dst is src: the kernel still reads src as it was
    np.testing.assert_array_equal(a, want)
    b = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
    out = np.zeros_like(b)
    swap_halves(b, out)                     # apart: dst lent as it is
    np.testing.assert_array_equal(out, np.concatenate([b[64:], b[:64]]))
