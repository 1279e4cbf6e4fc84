"""test_nki_collectives.py: nki.collectives between real ranks: two
processes started by `trnemu launch -n 2` (nki_coll_kernels.py checks
every result against NumPy), one process as rank 0 of 1, and the errors
for a replica group trnemu cannot run and a broken permutation."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nki
import nki.collectives as ncc
import nki.language as nl

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.environ.get("TRNEMU_TOOL") or os.path.join(HERE, "..", "..", "build", "tools", "trnemu")


@pytest.mark.skipif(not os.path.exists(TOOL), reason="needs the trnemu tool (TRNEMU_TOOL)")
def test_two_ranks():
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..", "..", "python"),
               TRNEMU_INSTANCE_NAME=os.environ.get("TRNEMU_INSTANCE_NAME", "nki") + "-coll")
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    r = subprocess.run([TOOL, "launch", "-n", "2", "--timeout", "120", "--", sys.executable,
                        os.path.join(HERE, "nki_coll_kernels.py")], env=env,
                       capture_output=True, text=True, timeout=150)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK rank 0" in r.stdout and "OK rank 1" in r.stdout, r.stdout + r.stderr


def test_single_rank_and_errors(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce([a], [out], ncc.ReplicaGroup([[0]]), op=nl.add)
        return out
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_array_equal(k(a), a)
    assert ncc.ReplicaGroup.from_partition_op(8, ncc.rg_partition_op.mod, 4).replica_groups == \
        [[0, 4], [1, 5], [2, 6], [3, 7]]

    @nki.jit
    def bad_group(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ncc.all_reduce([a], [out], ncc.ReplicaGroup([[0], [1]]), op=nl.add)
        return out
    with pytest.raises(nki.NKIError, match=r"test_nki_collectives.py:\d+: replica group"):
        bad_group(a)

    @nki.jit
    def bad_permute(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        ncc.collective_permute([a], [out], source_target_pairs=[(1, 0)])
        return out
    with pytest.raises(nki.NKIError, match="must appear once as a source"):
        bad_permute(a)
