"""test_nki_cores.py: nisa.sendrecv and nisa.core_barrier between the two
physical cores of an LNC=2 logical core (an nl.nc(2) grid dimension), and
the virtual registers (register_alloc/move/load/store)."""
import re
import warnings

import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import _runtime

# these tests drive device loops through the forms NKI 0.6.0 deprecates
# (nl.dynamic_range, `while reg:`), which still run; their warning is
# checked in test_nki_cores.py
pytestmark = pytest.mark.filterwarnings("ignore:.*loops are deprecated since NKI 0.6.0:nki.NKIWarning")

lnc2 = pytest.mark.skipif(_runtime.machine_lnc() < 2, reason="needs a machine with LNC=2")


@lnc2
def test_sendrecv_swaps_tiles():
    @nki.jit
    def k(a):
        out = nl.ndarray((2, 4, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        mine = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine, src=a[me])
        got = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=mine, dst=got, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=0)
        nisa.dma_copy(dst=out[me], src=got)
        return out
    a = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    r = k[nl.spmd_dim(nl.nc(2))](a)
    np.testing.assert_array_equal(r, a[::-1])


@lnc2
def test_core_barrier_orders_shared_hbm():
    # each core writes its half of buf, then (after the barrier) reads the
    # other's half; buf is also returned
    a = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    out, buf = _exchange_through(nl.shared_hbm, returned=True)[nl.spmd_dim(nl.nc(2))](a)
    np.testing.assert_array_equal(out, (a * 10)[::-1])
    np.testing.assert_array_equal(buf, a * 10)


def _exchange_through(buffer, fill=False, tile_barrier=False, returned=False):
    """Each core writes ten times its half of an HBM tensor, then (after
    the barrier) reads the other core's half of it. fill: each core first
    sets its whole copy to -1; tile_barrier: the cores first meet on an
    SBUF tile; returned: the kernel returns the tensor too (else it is
    the kernel's own scratch)."""
    @nki.jit
    def k(a):
        if tile_barrier:
            nisa.core_barrier(nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf), (0, 1))
        buf = nl.ndarray((2, 4, 8), dtype=a.dtype, buffer=buffer)
        out = nl.ndarray((2, 4, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        if fill:
            nisa.memset(dst=t, value=-1.0)
            nisa.dma_copy(dst=buf[0], src=t)
            nisa.dma_copy(dst=buf[1], src=t)
        nisa.dma_copy(dst=t, src=a[me])
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=10.0)
        nisa.dma_copy(dst=buf[me], src=t)
        nisa.core_barrier(data=buf, cores=(0, 1))
        r = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=r, src=buf[1 - me])
        nisa.dma_copy(dst=out[me], src=r)
        return (out, buf) if returned else out
    return k


@lnc2
def test_shared_hbm_scratch_is_one_tensor_for_both_cores():
    # "Shared HBM - visible to all kernel instances in the SPMD grid": a
    # shared_hbm tensor the kernel keeps to itself (the NKI Library's
    # qkv_cte output between the two cores) is still one tensor
    a = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    for launch in (nl.spmd_dim(nl.nc(2)), 2):
        out = _exchange_through(nl.shared_hbm)[launch](a)
        np.testing.assert_array_equal(out, (a * 10)[::-1])
    # a barrier on an SBUF tile (its HBM operand word is made by the first
    # program only) does not shift which tensors the programs share
    out = _exchange_through(nl.shared_hbm, tile_barrier=True)[nl.spmd_dim(nl.nc(2))](a)
    np.testing.assert_array_equal(out, (a * 10)[::-1])


@lnc2
def test_programs_creating_other_shared_hbm_tensors_are_refused():
    # the n-th shared_hbm tensor of each program is one tensor: a program
    # that makes it with another shape is an error at its kernel line
    @nki.jit
    def k(a):
        me = nl.program_id(0)
        rows = 2 if me == 0 else 4
        t = nl.ndarray((rows, 8), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=t, src=a[0:rows])
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        return out
    with pytest.raises(nki.NKIError, match="shared_hbm tensor number 1 is .4, 8. float32.*first program's is .2, 8."):
        k[nl.spmd_dim(nl.nc(2))](np.zeros((4, 8), np.float32))


@lnc2
def test_private_hbm_scratch_is_private_to_each_core():
    # private_hbm is "only visible to each individual kernel instance": the
    # half the other core wrote is not in this core's copy, which still
    # holds this core's -1
    a = np.arange(64, dtype=np.float32).reshape(2, 4, 8)
    out = _exchange_through(nl.private_hbm, fill=True)[nl.spmd_dim(nl.nc(2))](a)
    np.testing.assert_array_equal(out, np.full_like(a, -1.0))


@lnc2
def test_core_barrier_on_an_sbuf_tile():
    # the NKI Library's bwmm_shard_on_I meets on its SBUF block index in a
    # loop: the barrier on the tile syncs the cores, and this core's later
    # accesses to the tile follow it
    @nki.jit
    def k(a):
        out = nl.ndarray((2, 1), dtype=nl.int32, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        idx = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=a[me])
        for _ in range(3):
            nisa.core_barrier(idx, (0, 1))
            nisa.tensor_scalar(dst=idx, data=idx, op0=nl.add, operand0=1)
            nisa.core_barrier(idx, (0, 1))
        nisa.dma_copy(dst=out[me], src=idx)
        return out
    a = np.array([[10], [20]], dtype=np.int32)
    np.testing.assert_array_equal(k[nl.spmd_dim(nl.nc(2))](a), a + 3)


def _zero_then_store(barrier):
    """The shape of the NKI Library's folded max store: both programs zero
    the whole output, then store their own rows."""
    @nki.jit
    def k(a):
        out = nl.ndarray((8, 16), dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        z = nl.ndarray((8, 16), dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=z, value=0.0)
        nisa.dma_copy(dst=out, src=z)
        if barrier:
            nisa.core_barrier(data=out, cores=(0, 1))
        t = nl.ndarray((4, 16), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a[me * 4:me * 4 + 4, :])
        nisa.dma_copy(dst=out[me * 4:me * 4 + 4, :], src=t)
        return out
    return k


@lnc2
def test_race_between_cores_reported():
    # without a barrier, one core's zeroing may land after the other's rows
    a = np.arange(128, dtype=np.float32).reshape(8, 16) + 1
    with pytest.raises(nki.NKIError) as e:
        _zero_then_store(False)[nl.spmd_dim(nl.nc(2))](a)
    msg = str(e.value)
    # both writes are named, each with its kernel line
    assert re.search(r"test_nki_cores.py:\d+: .*race: no semaphore, core_barrier", msg), msg
    # (core 0's rows, then core 1's zeroing of the whole output)
    store = re.search(r"core 0 \w+\[\d+\] writes HBM \w+ bytes \[0, 256\).*?\(at \S+"
                      r"test_nki_cores.py:(\d+)\)", msg)
    zero = re.search(r"core 1 \w+\[\d+\] writes HBM \w+ bytes \[0, 512\).*?\(at \S+"
                     r"test_nki_cores.py:(\d+)\)", msg)
    assert store and zero and store.group(1) != zero.group(1), msg


@lnc2
def test_race_between_cores_barrier_clean():
    # the barrier orders both zeroings before both stores; the two zeroings
    # write the same bytes, which ends the same in either order
    a = np.arange(128, dtype=np.float32).reshape(8, 16) + 1
    r = _zero_then_store(True)[nl.spmd_dim(nl.nc(2))](a)
    np.testing.assert_array_equal(r, a)


def test_sendrecv_needs_two_cores():
    @nki.jit
    def k(a):
        t = nl.ndarray((4, 8), dtype=a.dtype, buffer=nl.sbuf)
        nisa.memset(dst=t, value=0.0)
        nisa.sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_cores.py:\d+: sendrecv works between"):
        k(np.zeros((4, 8), np.float32))


def test_registers_move_load_store():
    @nki.jit
    def k(a):
        src = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=src, src=a)
        r0 = nisa.register_alloc(41)
        r1 = nisa.register_alloc()
        nisa.register_load(r1, src)
        r2 = nisa.register_alloc()
        nisa.register_move(r2, r1)
        out = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf)
        nisa.register_store(t[:, 0:1], r0)
        nisa.register_store(t[:, 1:2], r2)
        nisa.dma_copy(dst=out, src=t)
        return out
    np.testing.assert_array_equal(k(np.array([[-7]], np.int32)), [[41, -7]])



def test_device_loop_over_a_register():
    """One NEFF, trip counts from the input: the body (a DMA on the sync
    engine, Vector and Scalar work) runs n times on the device."""
    @nki.jit
    def k(a, n):
        cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=cnt, src=n)
        r = nisa.register_alloc()
        nisa.register_load(r, cnt)
        acc = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=1.0)
        t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        u = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        for _ in nl.dynamic_range(r):
            nisa.dma_copy(dst=t, src=a)                                     # sync engine
            nisa.activation(dst=u, op=nl.copy, data=t, scale=2.0)           # Scalar
            nisa.tensor_tensor(dst=acc, data1=acc, data2=u, op=nl.add)      # Vector
            nisa.tensor_scalar(dst=acc, data=acc, op0=nl.multiply, operand0=0.5)
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)
        return out
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    for n in (0, 1, 3):
        want = np.ones_like(a)
        for _ in range(n):
            want = (want + 2 * a) * 0.5
        np.testing.assert_allclose(k(a, np.array([[n]], np.int32)), want, rtol=1e-6)
    assert len(nki.jit.__globals__["_cache"]) >= 1


def test_static_dynamic_range_fori_loop_no_reorder():
    @nki.jit
    def k(a):
        t = nl.load(a)
        acc = nl.zeros(a.shape, dtype=nl.float32)
        for _ in nl.dynamic_range(1, 4):
            acc[...] = nl.add(acc, t)
        nl.fori_loop(0, 2, lambda i: acc.__setitem__(Ellipsis, nl.add(acc, t)))
        with nl.no_reorder():
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, acc)
        return out
    a = np.full((2, 3), 1.5, np.float32)
    np.testing.assert_array_equal(k(a), a * 5)


@lnc2
def test_lnc_launch_bracket_runs_one_program_per_core():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        mine = nl.ndarray(a.shape[1:], dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=mine, src=a[me])
        got = nl.ndarray(a.shape[1:], dtype=a.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=mine, dst=got, send_to_rank=1 - me, recv_from_rank=1 - me, pipe_id=1)
        nisa.dma_copy(dst=out[me], src=got)
        return out
    a = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
    np.testing.assert_array_equal(k[_runtime.machine_lnc()](a), a[::-1])


def test_single_core_barrier_and_self_sendrecv():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.sendrecv(src=t, dst=u, send_to_rank=0, recv_from_rank=0, pipe_id=0)
        nisa.dma_copy(dst=out, src=u)
        nisa.core_barrier(out, (0, 1))        # one core: nothing to wait for
        return out
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(k(a), a)


def test_device_while_loop_on_a_register():
    """`while reg:` runs on the device until the condition the body
    computes reaches 0 (one NEFF for every count)."""
    @nki.jit
    def k(a, n):
        cond = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=cond, src=n)
        reg = nisa.register_alloc()
        nisa.register_load(reg, cond)
        acc = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        while reg:
            nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
            nisa.tensor_scalar(dst=cond, data=cond, op0=nl.subtract, operand0=1.0)
            nisa.register_load(reg, cond)
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)
        return out
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for n in (0, 1, 4):
        np.testing.assert_array_equal(k(a, np.array([[n]], np.int32)), n * a)

    @nki.jit
    def bad(a):
        reg = nisa.register_alloc(1)
        if reg:
            nisa.memset(dst=nl.ndarray((1, 1), dtype=nl.float32, buffer=nl.sbuf), value=0.0)
        return a
    with pytest.raises(nki.NKIError, match="a device loop was left open"):
        bad(np.zeros((1, 1), np.float32))


def _count_down_setup(a, n):
    """In a kernel: an SBUF counter holding n, a 1, a register loaded with
    n, a zeroed accumulator and a loaded; then _count_down_body adds a to
    the accumulator and counts down (cnt, one, reg, acc, t)."""
    cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=cnt, src=n)
    one = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(dst=one, value=1)
    reg = nisa.register_alloc()
    nisa.register_load(reg, cnt)
    acc = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=acc, value=0.0)
    return cnt, one, reg, acc, nl.load(a)


def _count_down_body(acc, t, cnt, one, reg):
    nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
    nisa.tensor_tensor(dst=cnt, data1=cnt, data2=one, op=nl.subtract)
    nisa.register_load(reg, cnt)
    return reg


def test_while_loop_and_fori_loop_with_registers():
    @nki.jit
    def k(a, n):
        cnt, one, reg, acc, t = _count_down_setup(a, n)
        nl.while_loop(reg, lambda r: _count_down_body(acc, t, cnt, one, r))   # acc = n * a
        ub = nisa.register_alloc()
        nisa.dma_copy(dst=cnt, src=n)
        nisa.register_load(ub, cnt)
        nl.fori_loop(0, ub, lambda i: nisa.tensor_tensor(dst=acc, data1=acc, data2=acc,
                                                         op=nl.add))   # acc *= 2 ** n
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)
        return out
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for n in (0, 2, 3):
        np.testing.assert_array_equal(k(a, np.array([[n]], np.int32)), n * a * 2 ** n)


def _loop_kernel(old_forms):
    """acc = (2 + n) * a: two iterations of a counted loop, n of a register
    loop, written in the forms NKI 0.6.0 deprecates or in their
    replacements."""
    def k(a, n):
        cnt, one, reg, acc, t = _count_down_setup(a, n)
        if old_forms:
            for _ in nl.dynamic_range(0, 2):
                nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add)
            while reg:
                _count_down_body(acc, t, cnt, one, reg)
        else:
            nl.fori_loop(0, 2, lambda i: nisa.tensor_tensor(dst=acc, data1=acc, data2=t, op=nl.add))
            nl.while_loop(reg, lambda r: _count_down_body(acc, t, cnt, one, r))
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)
        return out
    return nki.jit(k)


def test_deprecated_loop_forms_warn_and_still_run(monkeypatch):
    """NKI 0.6.0 deprecates `for i in nl.dynamic_range(...)` and `while reg:`
    loops: each warns (an NKIWarning naming the kernel line, when the
    kernel is traced) and runs as before; nl.fori_loop and nl.while_loop,
    which replace them, do not warn."""
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "0")     # traced in this process: its warnings seen
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    n = np.array([[3]], np.int32)
    with pytest.warns(nki.NKIWarning) as seen:
        np.testing.assert_array_equal(_loop_kernel(True)(a, n), 5 * a)
    texts = [str(w.message) for w in seen]
    assert any(re.match(r".*test_nki_cores.py:\d+: nl.dynamic_range loops are deprecated since "
                        r"NKI 0.6.0 .*use nl.fori_loop", t) for t in texts), texts
    assert any(re.match(r".*test_nki_cores.py:\d+: `while reg:` loops are deprecated", t)
               for t in texts), texts
    with warnings.catch_warnings():
        warnings.simplefilter("error", nki.NKIWarning)
        np.testing.assert_array_equal(_loop_kernel(False)(a, n), 5 * a)


def test_device_loop_with_run_time_offsets():
    """The dynamic-shape pattern: a device loop over n row tiles, each
    iteration reading and writing rows at an offset kept in SBUF."""
    P, F = 4, 8

    @nki.jit
    def k(a, n):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros(a.shape, dtype=a.dtype))
        cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=cnt, src=n)
        reg = nisa.register_alloc()
        nisa.register_load(reg, cnt)
        row = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.memset(dst=row, value=0)
        for _ in nl.dynamic_range(0, reg, 1):
            t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=a.ap(pattern=[[F, P], [1, F]], offset=0, scalar_offset=row,
                                          indirect_dim=0))
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=-1.0)
            nisa.dma_copy(dst=out.ap(pattern=[[F, P], [1, F]], offset=0, scalar_offset=row,
                                     indirect_dim=0), src=t)
            nisa.tensor_scalar(dst=row, data=row, op0=nl.add, operand0=float(P))
        return out
    a = np.arange(4 * P * F, dtype=np.float32).reshape(4 * P, F) + 1
    for n in (0, 2, 4):
        want = np.zeros_like(a)
        want[:n * P] = -a[:n * P]
        np.testing.assert_array_equal(k(a, np.array([[n]], np.int32)), want)


def test_fori_loop_index_as_scalar_offset():
    """The reference's fori_loop example: the loop index (a device value)
    picks the element each iteration copies."""
    N = 6

    @nki.jit
    def k(data, ub):
        out = nl.ndarray((1, N), dtype=data.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros((1, N), dtype=data.dtype))
        ub_sb = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ub_sb, src=ub)
        ub_reg = nisa.register_alloc()
        nisa.register_load(ub_reg, ub_sb)
        temp = nl.ndarray((1, 1), dtype=data.dtype, buffer=nl.sbuf)

        def body(i):
            nisa.dma_copy(dst=temp, src=data.ap([[1, 1], [1, 1]], scalar_offset=i, indirect_dim=1))
            nisa.dma_copy(dst=out.ap([[1, 1], [1, 1]], scalar_offset=i, indirect_dim=1), src=temp)
        nl.fori_loop(0, ub_reg, body)
        return out
    d = np.arange(1, N + 1, dtype=np.float32).reshape(1, N)
    for n in (0, 3, N):
        want = np.zeros_like(d)
        want[:, :n] = d[:, :n]
        np.testing.assert_array_equal(k(d, np.array([[n]], np.int32)), want)


def test_device_loop_instruction_with_many_partners():
    """A body instruction that waits for two engines and feeds three
    (more semaphore updates than one instruction holds)."""
    @nki.jit
    def k(a, n):
        cnt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=cnt, src=n)
        reg = nisa.register_alloc()
        nisa.register_load(reg, cnt)
        P = a.shape[0]
        acc = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        x = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
        b = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
        c = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
        d = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.sbuf)
        ident = nl.shared_identity_matrix(P, dtype=nl.float32)
        for _ in nl.dynamic_range(reg):
            nisa.dma_copy(dst=b, src=a)                                        # sp
            nisa.activation(dst=c, op=nl.copy, data=b)                        # act (after sp)
            nisa.tensor_tensor(dst=x, data1=b, data2=c, op=nl.add, engine=nisa.vector_engine)
            ps = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.psum)
            nisa.nc_matmul(ps, x, ident)                                       # pe reads x
            nisa.tensor_copy(dst=d, src=x, engine=nisa.gpsimd_engine)          # pool reads x
            nisa.activation(dst=c, op=nl.copy, data=x)                        # act reads x
            nisa.tensor_tensor(dst=acc, data1=acc, data2=ps, op=nl.add)        # x^T
            nisa.tensor_tensor(dst=acc, data1=acc, data2=d, op=nl.add)         # x
            nisa.tensor_tensor(dst=acc, data1=acc, data2=c, op=nl.add)         # x
        out = nl.ndarray((P, P), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=acc)
        return out
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    x = 2 * a
    for n in (1, 2):
        np.testing.assert_allclose(k(a, np.array([[n]], np.int32)), n * (x.T + 2 * x), rtol=1e-6)
    lines = k.last.tracer.cores[0].lines
    assert any(ln.startswith("dve.nop wait=L_") for ln in lines), "the split path was not used"


@lnc2
def test_cores_writing_interleaved_runs_by_the_hundred_thousand_do_not_race():
    # each core reads and writes its own 2 of every 4 elements: 131,072
    # contiguous runs per access, more than the checker once listed (65,536;
    # past that it took the whole span and reported the NKI Library's RoPE
    # with its strided output on LNC=2)
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        me = nl.program_id(0)
        p, f = a.shape
        t = nl.ndarray((p, f // 2), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap([[f, p], [4, f // 4], [1, 2]], offset=2 * me))
        nisa.dma_copy(dst=out.ap([[f, p], [4, f // 4], [1, 2]], offset=2 * me), src=t)
        return out
    a = np.arange(128 * 4096, dtype=np.float32).reshape(128, 4096)
    np.testing.assert_array_equal(k[nl.spmd_dim(nl.nc(2))](a), a)
