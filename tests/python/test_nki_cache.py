"""test_nki_cache.py: the kernel cache's keys and its copy on disk. A
cached call reuses the last key while every global, closure cell and
function attribute the key read is the same object (a helper's global
rebound, a closure cell set, a mutable value changed in place each give
a new trace); results come back in arrays the execution wrote itself."""
import dataclasses

import numpy as np

import nki
import nki.language as nl

SCALE = 2.0


def _helper_scale():
    return SCALE


@nki.jit
def helper_scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), _helper_scale()))
    return out


def test_a_helpers_global_rebound_between_calls():
    global SCALE
    a = np.ones((128, 8), np.float32)
    assert helper_scaled(a)[0, 0] == 2.0
    first = helper_scaled.keys.last
    assert helper_scaled(a)[0, 0] == 2.0
    assert helper_scaled.keys.last is first        # nothing changed: the key was reused
    SCALE = 7.0
    try:
        assert helper_scaled(a)[0, 0] == 7.0
        assert helper_scaled.keys.last is not first
    finally:
        SCALE = 2.0
    assert helper_scaled(a)[0, 0] == 2.0


def test_a_closure_cell_set_between_calls():
    factor = 3.0

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), factor))
        return out

    a = np.ones((128, 4), np.float32)
    assert k(a)[0, 0] == 3.0
    factor = 4.0
    assert k(a)[0, 0] == 4.0
    assert k[1](a)[0, 0] == 4.0        # a launch-grid variant shares the key memory
    del factor


@dataclasses.dataclass
class Params:
    scale: float


PARAMS = Params(2.0)
TABLE = np.array([5.0], np.float32)


@nki.jit
def param_scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), PARAMS.scale * float(TABLE[0])))
    return out


def test_values_changed_in_place_give_a_new_trace():
    a = np.ones((128, 4), np.float32)
    assert param_scaled(a)[0, 0] == 10.0
    PARAMS.scale = 3.0                 # same object, new contents
    try:
        assert param_scaled(a)[0, 0] == 15.0
        TABLE[0] = 1.0
        assert param_scaled(a)[0, 0] == 3.0
    finally:
        PARAMS.scale = 2.0
        TABLE[0] = 5.0


@nki.jit
def two_outputs(a):
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(x, nl.add(t, 1.0))
    nl.store(y, nl.multiply(t, 2.0))
    return x, y, x


def test_results_are_fresh_arrays_each_call():
    # each call's results are its own arrays (the device wrote them in
    # place); a tensor returned twice comes back twice; a non-contiguous
    # argument is copied before the execution reads it
    a = np.arange(128 * 6, dtype=np.float32).reshape(128, 6)
    x1, y1, x1b = two_outputs(a)
    x2, y2, _ = two_outputs(a * 0)
    np.testing.assert_array_equal(x1, a + 1)
    np.testing.assert_array_equal(y1, a * 2)
    np.testing.assert_array_equal(x1b, a + 1)
    np.testing.assert_array_equal(x2, np.ones_like(a))
    assert not np.shares_memory(x1, x2)
    wide = np.arange(128 * 12, dtype=np.float32).reshape(128, 12)[:, ::2]
    np.testing.assert_array_equal(two_outputs(wide)[1], wide * 2)
    a[:] = 1.0                          # the same array, changed: read again
    np.testing.assert_array_equal(two_outputs(a)[0], a + 1)
