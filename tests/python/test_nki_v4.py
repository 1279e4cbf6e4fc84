"""test_nki_v4.py: the NeuronCore-v4 calls (quantize_mx, nc_matmul_mx,
activate2, tensor indirection) on an emulated Trainium3, in processes of
their own (nki_v4_kernels.py, nki_indirect_kernels.py), and their refusal
on an older generation."""
import os
import subprocess
import sys

import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import _runtime

HERE = os.path.dirname(os.path.abspath(__file__))


def run_on_trainium3(script, suffix, **env):
    """Run script (printing OK on success) in a process of its own on an
    emulated Trainium3 machine."""
    env = dict(os.environ, TRNEMU_INSTANCE="trn3.48xlarge",
               TRNEMU_INSTANCE_NAME=os.environ.get("TRNEMU_INSTANCE_NAME", "nki") + suffix,
               PYTHONPATH=os.path.join(HERE, "..", "..", "python"), **env)
    r = subprocess.run([sys.executable, os.path.join(HERE, script)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


def test_mx_kernels_on_trainium3():
    run_on_trainium3("nki_v4_kernels.py", "-v4")


def test_indirect_kernels_on_trainium3():
    run_on_trainium3("nki_indirect_kernels.py", "-ind", TRNEMU_RACECHECK="1")


def test_indirect_refuses_what_it_cannot_index():
    @nki.jit
    def k(a, idx, how):
        t = nl.load(a)
        ix = nl.load(idx)
        if how == "hbm":
            a.indirect(ix)
        elif how == "float":
            t.indirect(t)
        else:
            t.reshape((4, 4, 4))[:, :, 0:2].indirect(ix)
        return a
    a, idx = np.zeros((4, 16), np.float32), np.zeros((4, 1), np.int32)
    with pytest.raises(nki.NKIError, match=r"test_nki_v4.py:\d+: .indirect\(\) takes an SBUF or PSUM"):
        k(a, idx, "hbm")
    with pytest.raises(nki.NKIError, match=r"index is a 2-D SBUF tensor of 8-, 16- or 32-bit"):
        k(a, idx, "float")
    with pytest.raises(nki.NKIError, match=r"free elements are evenly spaced"):
        k(a, idx, "uneven")


@pytest.mark.skipif(_runtime.machine_generation() >= 4, reason="the machine is NeuronCore-v4")
def test_indirect_refused_before_v4():
    @nki.jit
    def k(a, idx):
        t = nl.load(a)
        ix = nl.load(idx)
        o = nl.ndarray((4, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=t.indirect(ix))   # V4-IND
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_v4.py:\d+: .indirect\(\) \(tensor indirection\) "
                       r"needs NeuronCore-v4"):
        k(np.zeros((4, 16), np.float32), np.zeros((4, 1), np.int32))


@pytest.mark.skipif(_runtime.machine_generation() >= 4, reason="the machine is NeuronCore-v4")
def test_v4_calls_refused_before_v4():
    @nki.jit
    def k(a):
        t = nl.load(a)
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activate2(dst=o, op=nl.exp, data=t, imm0=1.0, imm1=0.0, op0=nl.multiply, op1=nl.add)
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_v4.py:\d+: nisa.activate2 needs NeuronCore-v4"):
        k(np.zeros((4, 4), np.float32))


@pytest.mark.skipif(_runtime.machine_generation() >= 4, reason="the machine is NeuronCore-v4")
def test_v4_dtype_and_v4_operator_refused_with_the_line():
    @nki.jit
    def dt(a):
        t = nl.ndarray(a.shape, dtype=nl.float8_e4m3fn, buffer=nl.sbuf)   # V4-DTYPE
        nisa.dma_copy(dst=t, src=a)
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_v4.py:\d+: float8_e4m3fn is a NeuronCore-v4"):
        dt(np.zeros((2, 4), np.float32))

    @nki.jit
    def op(a):
        t = nl.load(a)
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=o, data1=t, data2=t, op=nl.abs_max)   # V4-OP
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, o)
        return out
    with pytest.raises(nki.NKIError) as e:
        op(np.zeros((2, 4), np.float32))
    line = [i for i, ln in enumerate(open(__file__), 1) if "# V4-OP" in ln][0]
    assert ("test_nki_v4.py:%d: " % line) in str(e.value) and "NeuronCore-v4" in str(e.value)
