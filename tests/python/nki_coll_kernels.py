"""nki_coll_kernels.py: one rank of the nki.collectives check that
test_nki_collectives.py runs under `trnemu launch -n N`: all_reduce,
all_gather, reduce_scatter, all_to_all and collective_permute on HBM and
SBUF tensors, each result checked against NumPy from every rank's inputs
(rank r's input is a known function of r). Prints OK on success."""
import sys

import numpy as np

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl


def rank_input(r, shape):
    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) % 7) + 10.0 * r


@nki.jit
def collectives_kernel(a):
    me = ncc.rank_id()
    rg = ncc.ReplicaGroup([list(range(WORLD))])
    R, F = a.shape
    ar = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[a], dsts=[ar], replica_group=rg, op=nl.add)
    ag = nl.ndarray((WORLD * R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[a], dsts=[ag], replica_group=rg, collective_dim=0)
    rs = nl.ndarray((R // WORLD, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.reduce_scatter(srcs=[a], dsts=[rs], replica_group=rg, collective_dim=0, op=nl.maximum)
    aa = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_to_all(srcs=[a], dsts=[aa], replica_group=rg, collective_dim=0)
    pm = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ring = [(r, (r + 1) % WORLD) for r in range(WORLD)]
    ncc.collective_permute(srcs=[a], dsts=[pm], source_target_pairs=ring)
    # on SBUF: an all-reduce with min of a tile
    t = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[t], dsts=[u], replica_group=rg, op=nl.minimum)
    sm = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=sm, src=u)
    who = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    w = nl.full((1, 1), me, dtype=nl.int32)
    nisa.dma_copy(dst=who, src=w)
    return ar, ag, rs, aa, pm, sm, who


def main():
    global WORLD
    me, WORLD = ncc.world()
    shape = (2 * WORLD, 8)
    ins = [rank_input(r, shape) for r in range(WORLD)]
    ar, ag, rs, aa, pm, sm, who = collectives_kernel(ins[me])
    np.testing.assert_array_equal(ar, sum(ins))
    np.testing.assert_array_equal(ag, np.concatenate(ins, axis=0))
    part = shape[0] // WORLD
    np.testing.assert_array_equal(rs, np.maximum.reduce(ins)[me * part:(me + 1) * part])
    np.testing.assert_array_equal(aa, np.concatenate([x[me * part:(me + 1) * part] for x in ins]))
    np.testing.assert_array_equal(pm, ins[(me - 1) % WORLD])
    np.testing.assert_array_equal(sm, np.minimum.reduce(ins))
    assert who[0, 0] == me
    sys.stdout.write("OK rank %d\n" % me)    # one write: ranks share the pipe


WORLD = 1
if __name__ == "__main__":
    main()
