"""test_nki_ranks.py: a kernel run on two ranks from one call
(nki.cpu_simulate(kernel)[lnc].ranks(...) and kernel.ranks(...), each rank
a process started by `trnemu launch`): all_reduce and all_gather of
per-rank inputs against NumPy (all_gather of SBUF tiles along their free
dimension too, and within rank-lists that split the job), rank_id() as
an access pattern's scalar_offset, a rank's error raised in the caller
naming that rank, and a script's kernel (run as __main__) whose ranks'
prints reach the caller."""
import os

import numpy as np
import pytest

import nki
import nki.collectives as ncc
import nki.isa as nisa
import nki.language as nl

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.environ.get("TRNEMU_TOOL") or os.path.join(HERE, "..", "..", "build", "tools", "trnemu")
pytestmark = pytest.mark.skipif(not os.path.exists(TOOL),
                                reason="needs the trnemu tool (TRNEMU_TOOL)")


@nki.jit
def reduce_gather(a, rg, nranks):
    """all_reduce (add) and all_gather of a; rank_id() picks a row of a."""
    R, F = a.shape
    src = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    total = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[src], dsts=[total], replica_group=rg, op=nl.add)
    gathered = nl.ndarray((nranks * R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[src], dsts=[gathered], replica_group=rg, collective_dim=0)
    mine = nl.ndarray((1, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=mine, src=a.ap(pattern=[[F, 1], [1, F]], scalar_offset=ncc.rank_id(),
                                     indirect_dim=0))
    return total, gathered, mine, gather_columns(a, rg, nranks)


def gather_columns(a, rg, nranks):
    """all_gather of SBUF tiles along their free dimension."""
    P, W = a.shape
    t = nl.ndarray((P, W), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((P, nranks * W), dtype=a.dtype, buffer=nl.sbuf)
    ncc.all_gather(srcs=[t], dsts=[u], replica_group=rg, collective_dim=1)
    out = nl.ndarray((P, nranks * W), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=u)
    return out


@nki.jit
def gather_groups(a):
    """all_gather of an HBM tensor within this rank's rank-list: each rank
    on its own ([[0], [1]]), and both in reverse order ([[1, 0]])."""
    R, F = a.shape
    src = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    alone = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[src], dsts=[alone], replica_group=ncc.ReplicaGroup([[0], [1]]),
                   collective_dim=0)
    reverse = nl.ndarray((2 * R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_gather(srcs=[src], dsts=[reverse], replica_group=ncc.ReplicaGroup([[1, 0]]),
                   collective_dim=0)
    return alone, reverse


def plain_reduce(a):
    """A kernel function without @nki.jit (as nki.cpu_simulate takes it)."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    ncc.all_reduce(srcs=[src], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.maximum)
    return out


@nki.jit
def fails_on_rank_1(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    if ncc.rank_id() == 1:
        nisa.dma_copy(dst=out, src=nl.ndarray((3, 3), dtype=a.dtype, buffer=nl.shared_hbm))
    ncc.all_reduce(srcs=[a], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
    return out


@nki.jit
def gather_rows(a, idx):
    out = nl.ndarray((idx.shape[0], a.shape[1]), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(out.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap([[a.shape[1], idx.shape[0]], [1, a.shape[1]]],  # MARK-rank-gather
                                  vector_offset=nl.load(idx), indirect_dim=0),
                  oob_mode=nisa.oob_mode.error)
    nl.store(out, t)
    return out


def _inputs(n, shape=(4, 16)):
    return [np.random.default_rng(r).standard_normal(shape).astype(np.float32) for r in range(n)]


def test_two_ranks_per_rank_inputs():
    xs = _inputs(2)
    rg = ncc.ReplicaGroup([[0, 1]])
    outs = nki.cpu_simulate(reduce_gather)[1].ranks(
        [{"a": x, "rg": rg, "nranks": 2} for x in xs])
    assert len(outs) == 2
    for r, (total, gathered, mine, columns) in enumerate(outs):
        np.testing.assert_allclose(total, xs[0] + xs[1], rtol=1e-6)
        np.testing.assert_array_equal(gathered, np.concatenate(xs, axis=0))
        np.testing.assert_array_equal(mine, xs[r][r:r + 1])
        np.testing.assert_array_equal(columns, np.concatenate(xs, axis=1))


def test_all_gather_within_rank_lists():
    """Rank-lists that split the job and one that orders the ranks
    otherwise: blocks in the list's order."""
    xs = _inputs(2, (3, 5))
    for r, (alone, reverse) in enumerate(gather_groups.ranks([(x,) for x in xs])):
        np.testing.assert_array_equal(alone, xs[r])
        np.testing.assert_array_equal(reverse, np.concatenate([xs[1], xs[0]], axis=0))


@nki.jit
def split_collectives(a, rg):
    """all_reduce (add, HBM; min, SBUF), reduce_scatter (max) and
    all_to_all within this rank's rank-list of rg."""
    members = next(g for g in rg.replica_groups if ncc.rank_id() in g)
    R, F = a.shape
    k = len(members)
    src = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    total = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[src], dsts=[total], replica_group=rg, op=nl.add)
    part = nl.ndarray((R // k, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.reduce_scatter(srcs=[src], dsts=[part], replica_group=rg, collective_dim=0, op=nl.maximum)
    swapped = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_to_all(srcs=[src], dsts=[swapped], replica_group=rg, collective_dim=0)
    t = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.sbuf)
    ncc.all_reduce(srcs=[t], dsts=[u], replica_group=rg, op=nl.minimum)
    low = nl.ndarray((R, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=low, src=u)
    return total, part, swapped, low


def _fold_in_order(parts):
    acc = parts[0].copy()
    for p in parts[1:]:
        acc = (acc + p).astype(np.float32)
    return acc


@pytest.mark.parametrize("groups", [[[3, 1, 2], [0]], [[2, 0, 3, 1]], [[2, 0], [3, 1]]])
def test_reduce_scatter_all_to_all_all_reduce_within_rank_lists(groups):
    """Rank-lists that split the job (one of three ranks, one alone) and
    one list of the whole job in another order: each rank's results are
    its own list's, parts in the list's order; the split all_reduce adds
    in the list's order, the whole-job one in rank order (bit for bit)."""
    rg = ncc.ReplicaGroup(groups)
    xs = _inputs(4, (12, 8))
    outs = split_collectives.ranks([(x, rg) for x in xs])
    for members in groups:
        k = len(members)
        order = members if len(groups) > 1 else sorted(members)
        for j, r in enumerate(members):
            total, part, swapped, low = outs[r]
            np.testing.assert_array_equal(total, _fold_in_order([xs[m] for m in order]))
            top = np.maximum.reduce([xs[m] for m in members])
            np.testing.assert_array_equal(part, np.split(top, k)[j])
            np.testing.assert_array_equal(
                swapped, np.concatenate([np.split(xs[m], k)[j] for m in members]))
            np.testing.assert_array_equal(low, np.minimum.reduce([xs[m] for m in members]))


def test_lists_of_one_length_exchange_within_the_lists(monkeypatch):
    """Rank 1 of 4 with the lists [[2, 0], [3, 1]]: its collectives move
    data by one permute each (with rank 3), no whole-job all_gather; lists
    of different lengths still gather the whole job."""
    from nki import _kernel
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    a = np.zeros((12, 8), np.float32)

    def ops(groups):
        comp = _kernel._trace(split_collectives.func, (a, ncc.ReplicaGroup(groups)), {},
                              split_collectives.grid)
        lines = comp.tracer.cores[0].lines
        return [ln.split()[0].split(".")[1] for ln in lines
                if ln.split()[0].split(".")[-1] in ("permute", "all_gather")]
    permutes = ops([[2, 0], [3, 1]])
    assert permutes == ["permute"] * 4      # all_reduce x2, reduce_scatter, all_to_all
    assert ops([[3, 1, 2], [0]]) == ["all_gather"] * 4


@nki.jit
def pick_row(a):
    """rank_id() only (no collective): each rank copies its own row."""
    F = a.shape[1]
    mine = nl.ndarray((1, F), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=mine, src=a.ap(pattern=[[F, 1], [1, F]], scalar_offset=ncc.rank_id(),
                                     indirect_dim=0))
    return mine


def test_rank_id_programs_are_not_shared_through_the_disk_cache(tmp_path, monkeypatch):
    # the ranks are processes of their own: with the disk cache on, rank 1
    # must not load the program rank 0 traced for itself
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "1")
    monkeypatch.setenv("TRNEMU_NKI_CACHE_DIR", str(tmp_path))
    a = np.arange(2 * 8, dtype=np.float32).reshape(2, 8)
    for _ in range(2):                  # the second job finds the cache filled
        for r, mine in enumerate(pick_row.ranks([(a,), (a,)])):
            np.testing.assert_array_equal(mine, a[r:r + 1])


def test_plain_function_positional_inputs():
    xs = _inputs(2, (2, 8))
    outs = nki.cpu_simulate(plain_reduce)[1].ranks([(x,) for x in xs])
    for out in outs:
        np.testing.assert_array_equal(out, np.maximum(xs[0], xs[1]))


def test_a_rank_error_names_the_rank():
    xs = _inputs(2, (2, 8))
    with pytest.raises(nki.NKIError, match=r"rank 1 of 2: .*test_nki_ranks.py:\d+"):
        fails_on_rank_1.ranks([(x,) for x in xs], timeout=60)


def test_a_ranks_indexed_dma_past_its_tensor_is_numpys_index_error():
    # as on one rank: NumPy's IndexError, the rank and the kernel line in a note
    a = np.zeros((8, 4), np.float32)
    good, bad = np.array([[1], [2]], np.int32), np.array([[1], [9]], np.int32)
    with pytest.raises(IndexError) as e:
        gather_rows.ranks([(a, good), (a, bad)], timeout=60)
    assert type(e.value) is IndexError
    assert str(e.value) == "index 36 is out of bounds for axis 0 with size 32"
    note = "\n".join(e.value.__notes__)
    with open(__file__) as f:
        line = next(i for i, s in enumerate(f, 1) if "MARK-rank-gather" in s and "next(" not in s)
    assert note.startswith("rank 1 of 2: ") and "test_nki_ranks.py:%d: " % line in note, note


def test_bad_uses():
    @nki.jit
    def local(a):
        return a
    with pytest.raises(nki.NKIError, match="top level of a module"):
        local.ranks([(np.zeros((1, 1), np.float32),)])
    with pytest.raises(nki.NKIError, match="one entry per rank"):
        reduce_gather.ranks({"a": 1})
    with pytest.raises(nki.NKIError, match="timeout 0 .timeout=. is not a positive"):
        reduce_gather.ranks([{"a": 1}], timeout=0)
    a = np.zeros((2, 4), np.float32)
    with pytest.raises(nki.NKIError, match=r"rank 0 of 1: run the kernel on 2 ranks"):
        nki.cpu_simulate(plain_reduce)[1](a)
    with pytest.raises(nki.NKIError, match="scalar_offset=3.*offset="):
        nki.cpu_simulate(_static_offset)[1](a)


@nki.jit
def _static_offset(a):
    out = nl.ndarray((1, 4), dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a.ap(pattern=[[4, 1], [1, 4]], scalar_offset=3, indirect_dim=0))
    return out


SCRIPT = '''
import numpy as np
import nki, nki.collectives as ncc, nki.isa as nisa, nki.language as nl

@nki.jit
def k(a):
    src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[src], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
    print("traced on rank", ncc.rank_id())
    return out

if __name__ == "__main__":
    outs = k.ranks([(np.full((2, 3), r + 1, np.float32),) for r in range(2)])
    print("sums", [float(o[0, 0]) for o in outs])
'''


def test_a_kernel_of_a_script_run_as_main(tmp_path):
    """The ranks import a script's kernel from its file; what they print
    reaches the caller's stdout."""
    import subprocess
    import sys
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert "traced on rank 0" in r.stdout and "traced on rank 1" in r.stdout
    assert "sums [3.0, 3.0]" in r.stdout


def test_a_script_starting_a_job_at_its_top_level_fails_at_once(tmp_path):
    """Without the __main__ guard each rank would import the script and
    start a job of its own, and so on without end: the ranks refuse to,
    and the caller gets that error instead of a flood of processes."""
    import subprocess
    import sys
    path = tmp_path / "unguarded.py"
    path.write_text(SCRIPT.split("if __name__")[0] +
                    "outs = k.ranks([(np.full((2, 3), r + 1, np.float32),) for r in range(2)])\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0
    assert "this process is rank" in r.stderr and "__name__" in r.stderr, r.stderr
