"""test_nki_legacy.py: the legacy neuronxcc.nki spellings: baremetal with
output arguments written in place, par_dim, nl.mgrid index grids."""
import numpy as np

from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.baremetal
def add_into(a_input, b_input, c_output):
    a = nl.load(a_input)
    b = nl.load(b_input)
    nl.store(c_output, value=nl.add(a, b))


def test_baremetal_output_argument():
    a = np.ones((4, 3), dtype=np.float16)
    b = np.ones((4, 3), dtype=np.float16)
    c = np.zeros((4, 3), dtype=np.float16)
    add_into(a, b, c)
    assert np.array_equal(c, a + b)


@nki.jit
def blocks(x):
    n = x.shape[0] // 128
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((n, nl.par_dim(128), x.shape[1]), dtype=x.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        i_p, i_f = nl.mgrid[0:128, 0:x.shape[1]]
        buf[i, i_p, i_f] = nl.load(x[i * 128 + i_p, i_f])
    for i in nl.affine_range(n):
        nl.store(out[i * 128:(i + 1) * 128, :], value=nisa.activation(op=nl.tanh, data=buf[i]))
    return out


def test_par_dim_blocks():
    x = np.random.default_rng(3).standard_normal((384, 70)).astype(np.float32)
    np.testing.assert_allclose(blocks(x), np.tanh(x), rtol=2e-6, atol=1e-7)


def test_simulate_kernel():
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.exp(nl.load(a)))
        return out
    a = np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_allclose(nki.simulate_kernel(nki.jit(k), a), np.exp(a), rtol=2e-6)
