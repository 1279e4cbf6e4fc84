"""test_nki_claim.py: an NKI session claims only the VNC its kernels run on
(python/nki/_runtime.py), so a second session on another VNC of the same
instance runs; a program that claims every VNC meanwhile fails with
NRT_RESOURCE and a message that says the fix (NEURON_RT_VISIBLE_CORES,
NEURON_RT_NUM_CORES, another instance name)."""
import os
import subprocess
import sys

_KERNEL = r'''
import sys
import numpy as np
import nki, nki.isa as nisa, nki.language as nl

@nki.jit
def k(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out

a = np.arange(32, dtype=np.float32).reshape(4, 8)
assert (k(a) == a).all()
print("ran", flush=True)
if len(sys.argv) > 1:
    sys.stdin.readline()   # hold the runtime open until told
'''

_ALL = r'''
import ctypes, os
L = ctypes.CDLL(os.environ["TRNEMU_LIBNRT"])
st = L.nrt_init(1, b"", b"")
print("status", st, flush=True)
if st == 0:
    L.nrt_close()
'''


def _env(**kw):
    env = dict(os.environ)
    env.pop("NEURON_RT_VISIBLE_CORES", None)
    env.pop("NEURON_RT_NUM_CORES", None)
    env["TRNEMU_INSTANCE_NAME"] = env.get("TRNEMU_INSTANCE_NAME", "nki") + "-claim"
    env["PYTHONPATH"] = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..",
                                                     "python"))
    env.update(kw)
    return env


def test_two_sessions_share_an_instance():
    first = subprocess.Popen([sys.executable, "-c", _KERNEL, "hold"], env=_env(),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().strip() == "ran"
        second = subprocess.run([sys.executable, "-c", _KERNEL],
                                env=_env(TRNEMU_NKI_VNC="1"), capture_output=True, text=True,
                                timeout=120)
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "ran"
        every = subprocess.run([sys.executable, "-c", _ALL], env=_env(), capture_output=True,
                               text=True, timeout=60)
        assert "status 4" in every.stdout, every.stdout + every.stderr   # NRT_RESOURCE
        assert "owned by pid %d" % first.pid in every.stderr
        assert "NEURON_RT_VISIBLE_CORES" in every.stderr
        assert "NEURON_RT_NUM_CORES" in every.stderr
        assert "TRNEMU_INSTANCE_NAME" in every.stderr
    finally:
        first.communicate("done\n", timeout=60)
    assert first.returncode == 0
