"""test_nki_robust.py: the front end under careless or hostile use: one
kernel called from several threads, kernels the cache must tell apart
(exec-built, globals and closures that change), bad arguments and
runaway traces, each an NKIError naming the kernel line."""
import threading

import numpy as np
import pytest

import nki
import nki.language as nl
from nki import NKIError


@nki.jit
def copy_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(a), nl.load(b)))
    return out


def test_one_kernel_from_many_threads():
    wrong = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(6):
            a = rng.random((128, 32), dtype=np.float32)
            b = rng.random((128, 32), dtype=np.float32)
            if not np.array_equal(copy_add(a, b), a + b):
                wrong.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


SRC = """
@nki.jit
def scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), FACTOR))
    return out
"""


def _exec_kernel(factor_text):
    g = {"nki": nki, "nl": nl}
    exec(SRC.replace("FACTOR", factor_text), g)   # no source inspect can find
    return g["scale"]


def test_exec_built_kernels_differing_in_a_constant():
    a = np.ones((128, 8), np.float32)
    assert _exec_kernel("2.0")(a)[0, 0] == 2.0
    assert _exec_kernel("3.0")(a)[0, 0] == 3.0


FACTOR = 2.0


@nki.jit
def global_scale(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), FACTOR))
    return out


def test_a_global_that_changes_between_calls():
    global FACTOR
    a = np.ones((128, 8), np.float32)
    assert global_scale(a)[0, 0] == 2.0
    FACTOR = 5.0
    try:
        assert global_scale(a)[0, 0] == 5.0
    finally:
        FACTOR = 2.0


class Knob:
    """An object the cache cannot key: such a kernel is traced every call."""

    def __init__(self, v):
        self.v = v


def test_an_unkeyable_closure_value_is_never_shared():
    knob = Knob(2.0)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), knob.v))
        return out

    a = np.ones((128, 8), np.float32)
    assert k(a)[0, 0] == 2.0
    knob.v = 7.0
    assert k(a)[0, 0] == 7.0


@pytest.mark.parametrize("arg, match", [
    (np.ones((4, 4), np.complex64), "not an NKI dtype"),
    (np.array([[1, None]], dtype=object), "not an NKI dtype"),
    (np.ones((0, 4), np.float32), "is empty"),
])
def test_bad_arguments_are_nki_errors(arg, match):
    with pytest.raises(NKIError, match=match) as e:
        copy_add(arg, arg)
    assert "test_nki_robust.py:" in str(e.value)


def test_a_tensor_larger_than_hbm():
    @nki.jit
    def huge(a):
        return nl.ndarray((1 << 20, 1 << 20), dtype=nl.float32, buffer=nl.shared_hbm)

    with pytest.raises(NKIError, match="Out of resources") as e:
        huge(np.ones((4, 4), np.float32))
    assert "test_nki_robust.py:" in str(e.value)


def test_a_grid_too_large_to_trace():
    with pytest.raises(NKIError, match="launch grid of 1099511627776 programs"):
        copy_add[1 << 20, 1 << 20](np.ones((4, 4), np.float32), np.ones((4, 4), np.float32))


def test_the_trace_limit(monkeypatch):
    monkeypatch.setenv("TRNEMU_NKI_TRACE_LIMIT", "50")

    @nki.jit
    def long_loop(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for _ in nl.sequential_range(1000):
            nl.store(out, nl.load(a))
        return out

    with pytest.raises(NKIError, match="more than 50 instructions") as e:
        long_loop(np.ones((4, 4), np.float32))
    assert "test_nki_robust.py:" in str(e.value)
    monkeypatch.setenv("TRNEMU_NKI_TRACE_LIMIT", "many")
    with pytest.raises(NKIError, match="TRNEMU_NKI_TRACE_LIMIT='many'"):
        long_loop(np.ones((4, 4), np.float32))


def test_parameter_structs_key_the_cache_by_value():
    class Params(nl.NKIObject):
        scale: float = 1.0

    @nki.jit
    def k(a, p):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), p.scale))
        return out

    a = np.ones((128, 8), np.float32)
    assert k(a, Params(scale=2.0))[0, 0] == 2.0
    assert k(a, Params(scale=4.0))[0, 0] == 4.0
    assert k(a, Params(scale=2.0))[0, 0] == 2.0
