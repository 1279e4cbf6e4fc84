"""test_nki_accumulators.py: the engines' accumulator registers driven by
reduce_cmd across calls (nisa.activation on the Scalar engine,
nisa.tensor_scalar_reduce on the Vector engine): a chain of calls that
keeps its sums in the registers (reduce_res=None) and reads them out at
the end, load_reduce from reduce_init, reduce_res_negate, and
activation's default (idle: the registers left alone), against NumPy."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def tsr_chain(a, b, init):
    """sum(a*2) + sum(b*2) per partition through the Vector accumulators,
    then max over (init, a) loaded from init, negated."""
    out = nl.ndarray((a.shape[0], 2), dtype=nl.float32, buffer=nl.shared_hbm)
    ta, tb, ti = nl.load(a), nl.load(b), nl.load(init)
    scratch = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((a.shape[0], 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(dst=scratch, data=ta, op0=nl.multiply, operand0=2.0,
                              reduce_op=nl.add, reduce_res=None)
    nisa.tensor_scalar_reduce(dst=scratch, data=tb, op0=nl.multiply, operand0=2.0,
                              reduce_op=nl.add, reduce_res=res[:, 0:1],
                              reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.tensor_scalar_reduce(dst=scratch, data=ta, op0=nl.add, operand0=0.0,
                              reduce_op=nl.maximum, reduce_res=res[:, 1:2],
                              reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=ti,
                              reduce_res_negate=True)
    nl.store(out, res)
    return out


def test_tensor_scalar_reduce_chain_load_and_negate():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    init = rng.standard_normal((8, 1)).astype(np.float32) * 4
    got = tsr_chain(a, b, init)
    want_sum = (a * 2).sum(axis=1, dtype=np.float64) + (b * 2).sum(axis=1, dtype=np.float64)
    assert np.allclose(got[:, 0], want_sum, rtol=1e-5, atol=1e-5)
    assert np.array_equal(got[:, 1], -np.maximum(init[:, 0], a.max(axis=1)))


@nki.jit
def act_chain(a, b):
    """Scalar-engine sums: exp(a) + exp(b) kept in the registers across two
    calls, read out by a third call with the default idle command (which
    leaves them alone: its own exp(b) is not added)."""
    out = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    ta, tb = nl.load(a), nl.load(b)
    o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=o, op=nl.exp, data=ta, reduce_op=nl.add,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.activation(dst=o, op=nl.exp, data=tb, reduce_op=nl.add,
                    reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.activation(dst=o, op=nl.exp, data=tb, reduce_op=nl.add, reduce_res=res)
    nl.store(out, res)
    return out


def test_activation_reduce_cmd_chain_and_idle_default():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((8, 16)).astype(np.float32)
    want = np.exp(a.astype(np.float64)).sum(axis=1) + np.exp(b.astype(np.float64)).sum(axis=1)
    assert np.allclose(act_chain(a, b)[:, 0], want, rtol=1e-5)


@nki.jit
def act_reduce(a):
    out = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(dst=o, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=res)
    nl.store(out, res)
    return out


def test_activation_reduce_resets_first():
    a = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
    want = np.exp(a.astype(np.float64)).sum(axis=1)
    for _ in range(2):   # the second run starts from reset registers too
        assert np.allclose(act_reduce(a)[:, 0], want, rtol=1e-5)
