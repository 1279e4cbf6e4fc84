"""test_nki_v4.py: the NeuronCore-v4 calls (quantize_mx, nc_matmul_mx,
activate2) on an emulated Trainium3, in a process of its own
(nki_v4_kernels.py), and their refusal on an older generation."""
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


def test_mx_kernels_on_trainium3():
    env = dict(os.environ, TRNEMU_INSTANCE="trn3.48xlarge",
               TRNEMU_INSTANCE_NAME=os.environ.get("TRNEMU_INSTANCE_NAME", "nki") + "-v4",
               PYTHONPATH=os.path.join(HERE, "..", "..", "python"))
    r = subprocess.run([sys.executable, os.path.join(HERE, "nki_v4_kernels.py")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().endswith("OK"), r.stdout + r.stderr


@pytest.mark.skipif(_runtime.machine_generation() >= 4, reason="the machine is NeuronCore-v4")
def test_v4_calls_refused_before_v4():
    @nki.jit
    def k(a):
        t = nl.ndarray((32, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
        q = nl.ndarray((32, 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        s = nl.ndarray((32, 4), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.quantize_mx(dst=q, src=t, dst_scale=s)
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_v4.py:\d+: nisa.quantize_mx needs NeuronCore-v4"):
        k(np.zeros((1, 1), np.float32))
