"""nki.isa between the physical cores of a logical core (LNC=2):
core_barrier and sendrecv. The programs of an nl.nc(2) launch-grid
dimension run on the two cores (docs/nki.md); on a machine with one core
per logical core the calls are refused, since the peer does not exist."""
from .. import language as nl
from .._core import NkiTensor, current, fail
from . import constants
from ._helpers import _eng


def _cores_of(tr, what):
    n = len(tr.cores)
    if n < 2:
        fail("%s works between the physical cores of an LNC=2 logical core: launch the kernel "
             "with an nl.nc(2) grid dimension on a machine with LNC=2" % what)
    return n


def core_barrier(data, cores=(0, 1), engine=None, name=None, **kw):
    """Block the engine until every core in cores has reached this barrier
    (as many times). data is the shared HBM tensor the cores synchronise
    on (the reference's rule; an on-chip tile is taken too, as the NKI
    Library passes its SBUF block index in bwmm_shard_on_I: the barrier
    itself does not depend on data); later accesses to it on this core
    wait for the barrier. A kernel
    that runs on one core (LNC=1) has no other core to wait for: there the
    barrier is a no-op (the NKI Library calls it unconditionally)."""
    tr = current()
    if not isinstance(data, NkiTensor):
        fail("core_barrier's data must be a tensor (the shared data the cores meet on), got %r"
             % (data,))
    if len(tr.cores) < 2:
        return
    n = _cores_of(tr, "core_barrier")
    ids = sorted(set(int(c) for c in cores))
    if not ids or ids[0] < 0 or ids[-1] >= n or tr.core not in ids:
        fail("core_barrier cores=%r must name this core and cores 0..%d only" % (tuple(cores), n - 1))
    mask = 0
    for c in ids:
        mask |= 1 << c
    eng = _eng(engine, "pool")
    # the barrier orders this core's accesses to data before and after it;
    # the instruction names an HBM operand, so an on-chip data tile is
    # ordered the same way while the operand is a word of HBM
    operand = data if data.storage.kind == "hbm" else _barrier_word(tr)
    tr.emit(eng, "core_barrier", {"data": data}, {}, [("data", operand), ("cores", mask)])


def _barrier_word(tr):
    """One HBM word per trace (a copy per core), the operand of barriers on
    on-chip data. private_hbm: a shared_hbm tensor would take a place in
    the order that pairs the programs' shared_hbm tensors, in the one
    program that happens to make the word."""
    word = getattr(tr, "barrier_word", None)
    if word is None:
        from .. import language as nl
        word = tr.barrier_word = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.private_hbm)
    return word


def sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id=0, dma_engine=None, name=None, **kw):
    """Send src to core send_to_rank while receiving into dst what core
    recv_from_rank sends to this one (SBUF tiles of the same dtype and
    layout)."""
    tr = current()
    if len(tr.cores) < 2 and int(send_to_rank) == 0 and int(recv_from_rank) == 0:
        nl._dma(dst, src)       # one core exchanging with itself gets its own data
        return
    n = _cores_of(tr, "sendrecv")
    for nm, t in (("src", src), ("dst", dst)):
        if not isinstance(t, NkiTensor) or t.buffer != "sbuf":
            fail("sendrecv %s must be an SBUF tile" % nm)
    if src.shape != dst.shape or str(src.dtype) != str(dst.dtype):
        fail("sendrecv src %s %s and dst %s %s differ" % (src.shape, src.dtype, dst.shape, dst.dtype))
    for nm, r in (("send_to_rank", send_to_rank), ("recv_from_rank", recv_from_rank)):
        if not 0 <= int(r) < n:
            fail("sendrecv %s=%r is not a core of the logical core (0..%d)" % (nm, r, n - 1))
    de = dma_engine if dma_engine is not None else constants.dma_engine.dma
    if not isinstance(de, constants.dma_engine):
        fail("dma_engine=%r is not an nki.isa.dma_engine" % (dma_engine,))
    eng = "pool" if de is constants.dma_engine.gpsimd_dma else "sp"
    tr.emit(eng, "sendrecv", {"dst": dst}, {"src": src},
            [("dst", dst), ("src", src), ("send_to", int(send_to_rank)),
             ("recv_from", int(recv_from_rank)), ("pipe_id", int(pipe_id)), ("dma_engine", de.name)])
