"""test_nki_ring.py: the implicit (ring) permutes of nki.collectives on
real ranks (kernel.ranks(...), one `trnemu launch` process per rank),
against NumPy: a ring all-gather written with collective_permute_implicit
and collective_permute_implicit_current_processing_rank_id in a device
loop (the rank a register, used as a run-time offset of HBM and SBUF
destinations, two channels) and unrolled (the rank an int), in a
rank-list whose order is not the ranks' own; a ring reduce-scatter and all-reduce with
collective_permute_implicit_reduce over rank-lists that split the job
(integer steps: the rank an int); and the errors of bad channels and
groups."""
import os

import numpy as np
import pytest

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl
from nki import NKIError

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.environ.get("TRNEMU_TOOL") or os.path.join(HERE, "..", "..", "build", "tools", "trnemu")
needs_tool = pytest.mark.skipif(not os.path.exists(TOOL),
                                reason="needs the trnemu tool (TRNEMU_TOOL)")

cpr = ncc.collective_permute_implicit_current_processing_rank_id


@nki.jit
def ring_gather(a, b, rg, n):
    """Every rank's a gathered into out[rank] (HBM) and every rank's b into
    column block `rank` of an SBUF tile, by n-1 ring steps of a device
    loop on two channels: at step i the received blocks are those of
    rank cpr(i), a register."""
    R, F = a.shape
    out = nl.ndarray((n, R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    cur = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.hbm)
    nxt = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=cur, src=a)
    g = nl.ndarray((R, n, F), dtype=b.dtype, buffer=nl.sbuf)
    tb = nl.ndarray((R, F), dtype=b.dtype, buffer=nl.sbuf)
    nb = nl.ndarray((R, F), dtype=b.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tb, src=b)
    me = cpr(0, rg)                              # an int: this rank
    nisa.dma_copy(dst=out.ap(pattern=[[F, R], [1, F]], scalar_offset=me, indirect_dim=0), src=a)
    nisa.tensor_copy(dst=g[:, me, :], src=tb)
    # channel 0 moves the HBM blocks, channel 1 the SBUF ones; the channels
    # must be all HBM or all SBUF, so channel 1 is staged through HBM
    cb = nl.ndarray((R, F), dtype=b.dtype, buffer=nl.hbm)
    nbh = nl.ndarray((R, F), dtype=b.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=cb, src=tb)
    stop = nisa.register_alloc(n)
    for i in nl.dynamic_range(1, stop):
        ncc.collective_permute_implicit(srcs_by_channel=[[cur], [cb]],
                                        dsts_by_channel=[[nxt], [nbh]],
                                        replica_group=rg, channel_ids=[0, 1])
        who = cpr(i, rg, channel_id=1)
        nisa.dma_copy(dst=out.ap(pattern=[[F, R], [1, F]], scalar_offset=who, indirect_dim=0),
                      src=nxt)
        nisa.dma_copy(dst=nb, src=nbh)
        nisa.tensor_copy(dst=g.ap(pattern=[[n * F, R], [1, F]], scalar_offset=who,
                                  indirect_dim=1), src=nb)
        nisa.dma_copy(dst=cur, src=nxt)
        nisa.dma_copy(dst=cb, src=nbh)
    gout = nl.ndarray((R, n, F), dtype=b.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=gout, src=g)
    later = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.register_store(later, cpr(nisa.register_alloc(n + 1), rg))   # a register step
    return out, gout, unrolled_gather(a, rg, n), later


def unrolled_gather(a, rg, n):
    """The HBM ring all-gather again with integer steps (unrolled): the
    ranks are ints, each step sends what the previous one received."""
    R, F = a.shape
    out = nl.ndarray((n, R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out[cpr(0, rg)], src=a)
    for i in nl.sequential_range(1, n):
        ncc.collective_permute_implicit(srcs_by_channel=[[out[cpr(i - 1, rg)]]],
                                        dsts_by_channel=[[out[cpr(i, rg)]]], replica_group=rg)
    return out


@needs_tool
def test_ring_all_gather_in_a_device_loop():
    n, rg = 3, ncc.ReplicaGroup([[0, 2, 1]])
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(n)]
    ys = [rng.standard_normal((4, 8)).astype(np.float32) for _ in range(n)]
    outs = ring_gather.ranks([(xs[r], ys[r], rg, n) for r in range(n)])
    for r, (out, gout, unrolled, later) in enumerate(outs):
        members = rg.replica_groups[0]
        assert later[0, 0] == members[(members.index(r) - (n + 1)) % n]
        np.testing.assert_array_equal(out, np.stack(xs))
        np.testing.assert_array_equal(unrolled, np.stack(xs))
        np.testing.assert_array_equal(gout, np.stack(ys, axis=1))


@nki.jit
def ring_reduce(x, rg, n):
    """Within this rank's rank-list of n ranks (list position p):
    a ring reduce-scatter (add) of x's n chunks, chunk p to this rank, and
    a ring all-reduce (max) of chunk 0, each step sending op(received,
    own data) with collective_permute_implicit_reduce."""
    _, R, F = x.shape
    members = next(g for g in rg.replica_groups if ncc.rank_id() in g)
    pos = members.index

    def chunk(k):           # the chunk this rank's step k works on
        return x[pos(cpr(k, rg))]

    zero = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.hbm)
    nisa.dma_copy(dst=zero, src=nl.zeros((R, F), dtype=x.dtype, buffer=nl.sbuf))
    recv = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.hbm)
    part = zero
    for s in range(n - 1):
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[part]],
                                               srcs1_by_channel=[[chunk(s + 1)]],
                                               dsts_by_channel=[[recv]], replica_group=rg,
                                               op=nl.add)
        part = recv
    rs = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=rs, src=recv)
    nisa.dma_copy(dst=rs, src=chunk(n), dst_rmw_op=nl.add)
    mx = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.shared_hbm)
    ncc.collective_permute_implicit(srcs_by_channel=[[x[0]]], dsts_by_channel=[[mx]],
                                    replica_group=rg)
    for s in range(1, n):
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[mx]], srcs1_by_channel=[[x[0]]],
                                               dsts_by_channel=[[mx]], replica_group=rg,
                                               op=nl.maximum)
    return rs, mx


@needs_tool
def test_ring_reduce_within_rank_lists():
    rg = ncc.ReplicaGroup([[0, 1], [3, 2]])
    rng = np.random.default_rng(9)
    xs = [rng.integers(-50, 50, (2, 2, 8)).astype(np.float32) for _ in range(4)]
    outs = ring_reduce.ranks([(xs[r], rg, 2) for r in range(4)])
    for members in rg.replica_groups:
        total = sum(xs[m] for m in members)
        for p, r in enumerate(members):
            rs, mx = outs[r]
            np.testing.assert_array_equal(rs, total[p])
            np.testing.assert_array_equal(mx, np.maximum.reduce([xs[m][0] for m in members]))


def test_rank_ids_and_errors_on_one_rank():
    """Rank 0 of 1: the one-rank ring (send to itself), integer steps, and
    bad channels, operands and groups named at the kernel line."""
    @nki.jit
    def k(a):
        rg = ncc.ReplicaGroup([[0]])
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[a]], srcs1_by_channel=[[a]],
                                               dsts_by_channel=[[out]], replica_group=rg,
                                               op=nl.add)
        assert [cpr(i, rg) for i in (0, 1, np.int64(2))] == [0, 0, 0]
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=-1.0)
        ncc.collective_permute_implicit_reduce(srcs0_by_channel=[[u]], srcs1_by_channel=[[t]],
                                               dsts_by_channel=[[t]], replica_group=rg,
                                               op=nl.minimum)
        low = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=low, src=t)
        return out, low
    a = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    out, low = k(a)
    np.testing.assert_array_equal(out, 2 * a)
    np.testing.assert_array_equal(low, np.minimum(-a, a))

    def bad(make):
        @nki.jit
        def kk(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            args = dict(srcs_by_channel=[[a]], dsts_by_channel=[[out]],
                        replica_group=ncc.ReplicaGroup([[0]]))
            args.update(make(a, out))
            ncc.collective_permute_implicit(**args)
            return out
        with pytest.raises(NKIError) as e:
            kk(a)
        return str(e.value)
    assert "consecutive integers from 0" in bad(lambda a, o: dict(channel_ids=[1]))
    assert "at most 4" in bad(lambda a, o: dict(srcs_by_channel=[[a]] * 5,
                                                dsts_by_channel=[[o]] * 5, channel_ids=list(range(5))))
    assert "exactly one tensor" in bad(lambda a, o: dict(srcs_by_channel=[[a, a]]))
    assert "one list per channel" in bad(lambda a, o: dict(channel_ids=[0, 1]))
    assert "rank 0 of 1" in bad(lambda a, o: dict(replica_group=ncc.ReplicaGroup([[0, 1]])))
    assert "different lengths" in bad(lambda a, o: dict(replica_group=ncc.ReplicaGroup([[0], [1, 2]])))
