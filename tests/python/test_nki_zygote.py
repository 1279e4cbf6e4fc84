"""test_nki_zygote.py: the ranks of kernel.ranks() forked from a zygote
that imported the kernel's module once (nki/_zygote.py): the module's
import counted with and without it (TRNEMU_NKI_RANKS_FORK=0), a changed
module imported again, the rank's environment and parent, a job past its
timeout leaving no rank behind, and the zygote ending with its caller."""
import importlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import nki
from nki import _zygote

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.environ.get("TRNEMU_TOOL") or os.path.join(HERE, "..", "..", "build", "tools", "trnemu")
pytestmark = pytest.mark.skipif(not os.path.exists(TOOL),
                                reason="needs the trnemu tool (TRNEMU_TOOL)")

# A kernel module that notes each import of it in the file COUNT_FILE names,
# whose kernel prints its rank's RANK, pid and parent pid while tracing, and
# a kernel that sleeps (its pid in a file beside COUNT_FILE).
MODULE = '''
import os
import nki, nki.collectives as ncc, nki.isa as nisa, nki.language as nl

with open(os.environ["COUNT_FILE"], "a") as _f:
    _f.write("imported\\n")
SCALE = %r


@nki.jit
def scaled_sum(a):
    src = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=src, src=a)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ncc.all_reduce(srcs=[src], dsts=[out], replica_group=ncc.ReplicaGroup([[0, 1]]), op=nl.add)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=out)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=SCALE)
    res = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=res, src=u)
    print("rank", os.environ.get("RANK"), "pid", os.getpid(), "parent", os.getppid(), flush=True)
    return res


@nki.jit
def sleeps(a):
    import time
    open(os.path.join(os.path.dirname(os.environ["COUNT_FILE"]), "pid-%%d" %% os.getpid()), "w").close()
    time.sleep(120)
    return a
'''


@pytest.fixture
def kernel_module(tmp_path, monkeypatch):
    """A fresh module (its own name) in tmp_path; (module, its file, count file)."""
    name = "zyg_%d" % time.monotonic_ns()
    path = tmp_path / (name + ".py")
    path.write_text(MODULE % 2.0)
    count = tmp_path / "count.txt"
    monkeypatch.setenv("COUNT_FILE", str(count))
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module(name)
    yield mod, path, count
    sys.modules.pop(name, None)


def alive(pid):
    """Whether process pid runs (a zombie does not)."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def gone(pids, seconds=15):
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


def inputs():
    return [(np.full((2, 4), r + 1, np.float32),) for r in range(2)]


def imports(count):
    return count.read_text().count("imported")


def test_a_kernel_module_is_imported_once_for_every_job(kernel_module, monkeypatch):
    """Two jobs of two ranks: the module is imported by the caller and once
    by the zygote, not by each rank; fresh processes import it per rank."""
    mod, _, count = kernel_module
    for _ in range(2):
        outs = mod.scaled_sum.ranks(inputs(), timeout=120)
        assert [o.tolist() for o in outs] == [[[6.0] * 4] * 2] * 2
    assert imports(count) == 2
    monkeypatch.setenv("TRNEMU_NKI_RANKS_FORK", "0")
    outs = mod.scaled_sum.ranks(inputs(), timeout=120)
    assert [o.tolist() for o in outs] == [[[6.0] * 4] * 2] * 2
    assert imports(count) == 4


def test_a_changed_kernel_module_is_imported_again(kernel_module):
    """The ranks run the module's file as it is now: a zygote that imported
    an older version is replaced."""
    mod, path, count = kernel_module
    assert mod.scaled_sum.ranks(inputs(), timeout=120)[0][0, 0] == 6.0
    path.write_text(MODULE % 10.0)
    assert mod.scaled_sum.ranks(inputs(), timeout=120)[0][0, 0] == 30.0
    assert imports(count) == 3


def test_a_forked_rank_has_the_launchers_environment(kernel_module, capfd):
    """Each rank sees its own RANK and is a child of the zygote."""
    mod, _, _ = kernel_module
    mod.scaled_sum.ranks(inputs(), timeout=120)
    zygote = _zygote._current.proc.pid
    out = capfd.readouterr().out
    seen = sorted(line.split()[1] for line in out.splitlines() if line.startswith("rank "))
    assert seen == ["0", "1"], out
    parents = {line.split()[5] for line in out.splitlines() if line.startswith("rank ")}
    assert parents == {str(zygote)}, out


def test_a_job_past_its_timeout_leaves_no_rank_behind(kernel_module, tmp_path):
    """The launcher's SIGTERM reaches the forked ranks through their clients."""
    mod, _, _ = kernel_module
    with pytest.raises(nki.NKIError, match="ran past 3s"):
        mod.sleeps.ranks(inputs(), timeout=3)
    pids = [int(p.name[4:]) for p in tmp_path.glob("pid-*")]
    assert len(pids) == 2
    assert gone(pids)


def test_a_bad_request_leaves_the_zygote_serving(kernel_module):
    """Whatever reaches the zygote's socket that is not a client's request
    (a cut message, a huge length, not JSON, no descriptors, random bytes)
    is dropped, and the next job's ranks are forked as usual."""
    import socket
    import struct
    mod, _, count = kernel_module
    mod.scaled_sum.ranks(inputs(), timeout=120)
    zygote = _zygote._current
    body = b'{"env": {}, "cwd": "/", "folder": "/"}'
    rng = np.random.default_rng(7)
    fuzz = [rng.bytes(int(rng.integers(0, 64))) for _ in range(40)]
    fuzz += [struct.pack("<I", len(f)) + f for f in fuzz[:20]]
    for message in [b"\x05", struct.pack("<I", 0xFFFFFFFF) + b"x", struct.pack("<I", 3) + b"abc",
                    struct.pack("<I", len(body)) + body, b""] + fuzz:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(zygote.address)
        s.sendall(message)
        s.close()
    assert mod.scaled_sum.ranks(inputs(), timeout=120)[1][0, 0] == 6.0
    assert _zygote._current is zygote and zygote.alive() and imports(count) == 2


CALLER = '''
import os, signal, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import %s as mod
from nki import _zygote
mod.scaled_sum.ranks([(np.ones((2, 4), np.float32),)] * 2, timeout=120)
print("zygote", _zygote._current.proc.pid, _zygote._current.address, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
'''


def test_the_zygote_ends_with_its_caller(kernel_module, tmp_path):
    """A caller killed outright leaves no zygote and no socket behind."""
    mod, path, _ = kernel_module
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [os.path.join(HERE, "..", "..", "python")] + sys.path))
    r = subprocess.run([sys.executable, "-c", CALLER % mod.__name__, str(path.parent)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == -signal.SIGKILL, r.stderr
    _, pid, address = next(line for line in r.stdout.splitlines() if line.startswith("zygote")).split()
    assert gone([pid])
    assert not os.path.exists(address) and not os.path.exists(os.path.dirname(address))
