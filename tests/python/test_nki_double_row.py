"""test_nki_double_row.py: nisa.nc_matmul with perf_mode=double_row (the
FP8 mode of NeuronCore-v3 and newer): [K, 2, M] x [K, 2, N] operands whose
pair dimension doubles the contraction, checked against NumPy and bit for
bit against the plain matmul of the same rows stacked; sliced operands as
the NKI Library passes them; and the errors for what the mode refuses."""
import os
import re

import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl
from nki import _runtime

pytestmark = pytest.mark.skipif(_runtime.machine_generation() < 3,
                                reason="double_row needs NeuronCore-v3")
HERE = os.path.basename(__file__)
rng = np.random.default_rng(24)


def fp8(shape, dt, scale=1.0):
    """Random values that dt holds exactly, as float32."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dt).astype(np.float32)


def pairs_ref(a, b):
    """dst[m, n] = sum over p, j of a[p, j, m] * b[p, j, n] (in float64)."""
    return np.einsum("pjm,pjn->mn", a.astype(np.float64), b.astype(np.float64))


def _load(src, dt):
    t = nl.ndarray(src.shape, dtype=dt, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=src)
    return t


def _store(t):
    out = nl.ndarray(t.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray(t.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=s, src=t)
    nisa.dma_copy(dst=out, src=s)
    return out


def double_row_kernel(sdt, mdt, perf=nisa.matmul_perf_mode.double_row):
    @nki.jit
    def k(a, b):
        x, y = _load(a, sdt), _load(b, mdt)
        p = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, x, y, perf_mode=perf)
        return _store(p)
    return k


@pytest.mark.parametrize("sdt,mdt", [(nl.float8_e4m3, nl.float8_e4m3),
                                     (nl.float8_e4m3, nl.float8_e5m2),
                                     (nl.float8_e5m2, nl.float8_e5m2)],
                         ids=["e4m3", "e4m3-e5m2", "e5m2"])
def test_double_row_fp8_against_numpy(sdt, mdt):
    a, b = fp8((128, 2, 96), sdt), fp8((128, 2, 300), mdt)
    got = double_row_kernel(sdt, mdt)(a.astype(sdt), b.astype(mdt))
    np.testing.assert_allclose(got, pairs_ref(a, b), rtol=1e-5, atol=1e-4)


def test_double_row_integers_exact_and_string_mode():
    """Small integers: every product and sum is exact, so the result is
    NumPy's to the bit; the mode may also be given by its value."""
    a = rng.integers(-7, 8, (64, 2, 16)).astype(np.float32)
    b = rng.integers(-7, 8, (64, 2, 40)).astype(np.float32)
    k = double_row_kernel(nl.float8_e4m3, nl.float8_e5m2, perf="double_row")
    got = k(a.astype(nl.float8_e4m3), b.astype(nl.float8_e5m2))
    assert np.array_equal(got, pairs_ref(a, b))


def test_double_row_is_the_stacked_plain_matmul():
    """The pair dimension holds contraction rows p and K + p: the result is
    bit for bit the plain (bf16) matmul of [a[:, 0]; a[:, 1]] and
    [b[:, 0]; b[:, 1]], accumulated onto the same PSUM tile twice."""
    a, b = fp8((64, 2, 32), nl.float8_e4m3, 3.0), fp8((64, 2, 200), nl.float8_e5m2, 3.0)

    @nki.jit
    def both(a8, b8, a16, b16):
        x, y = _load(a8, nl.float8_e4m3), _load(b8, nl.float8_e5m2)
        u, v = _load(a16, nl.bfloat16), _load(b16, nl.bfloat16)
        p = nl.ndarray((32, 200), dtype=nl.float32, buffer=nl.psum)
        q = nl.ndarray((32, 200), dtype=nl.float32, buffer=nl.psum)
        for _ in range(2):
            nisa.nc_matmul(p, x, y, perf_mode=nisa.matmul_perf_mode.double_row)
            nisa.nc_matmul(q, u, v)
        return _store(p), _store(q)
    stack = lambda t: np.concatenate([t[:, 0], t[:, 1]]).astype(nl.bfloat16)  # noqa: E731
    got, plain = both(a.astype(nl.float8_e4m3), b.astype(nl.float8_e5m2), stack(a), stack(b))
    assert np.array_equal(got.view(np.uint32), plain.view(np.uint32))
    np.testing.assert_allclose(got, 2 * pairs_ref(a, b), rtol=1e-5, atol=1e-3)


def test_double_row_sliced_views_and_legacy_form():
    """Operands sliced out of wider tiles (the NKI Library's
    t[:K, 0:2, s:s+S]), accumulated over two heads, and the legacy call
    that returns a new [M, N] PSUM tile."""
    a = fp8((2, 128, 2, 80), nl.float8_e4m3)
    b = fp8((2, 128, 2, 160), nl.float8_e5m2)

    @nki.jit
    def k(a8, b8):
        heads = [(_load(a8[h], nl.float8_e4m3), _load(b8[h], nl.float8_e5m2)) for h in range(2)]
        p = nl.ndarray((24, 100), dtype=nl.float32, buffer=nl.psum)
        for x, y in heads:
            nisa.nc_matmul(p[:24, :100], x[:96, 0:2, 40:64], y[:96, 0:2, 50:150],
                           perf_mode=nisa.matmul_perf_mode.double_row)
        x, y = heads[0]
        q = nisa.nc_matmul(x[:, 0:2, 0:8], y[:, 0:2, 0:16],
                           perf_mode=nisa.matmul_perf_mode.double_row)
        assert tuple(q.shape) == (8, 16)
        return _store(p), _store(q)
    got, legacy = k(a.astype(nl.float8_e4m3), b.astype(nl.float8_e5m2))
    want = sum(pairs_ref(a[h, :96, :, 40:64], b[h, :96, :, 50:150]) for h in range(2))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(legacy, pairs_ref(a[0, :, :, 0:8], b[0, :, :, 0:16]),
                               rtol=1e-5, atol=1e-3)


def test_plain_perf_mode_none_is_the_default():
    a, b = fp8((128, 64), nl.float8_e4m3), fp8((128, 32), nl.float8_e5m2)

    @nki.jit
    def k(a8, b8):
        x, y = _load(a8, nl.float8_e4m3), _load(b8, nl.float8_e5m2)
        p = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.psum)
        q = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, x, y, perf_mode=nisa.matmul_perf_mode.none)
        nisa.nc_matmul(q, x, y)
        return _store(p), _store(q)
    p, q = k(a.astype(nl.float8_e4m3), b.astype(nl.float8_e5m2))
    assert np.array_equal(p.view(np.uint32), q.view(np.uint32))
    np.testing.assert_allclose(p, a.T.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


# -- what double_row refuses: an NKIError naming the kernel line -----------------

def error_kernel(case):
    @nki.jit
    def k(a, b):
        x = _load(a, nl.bfloat16 if case == "bf16" else nl.float8_e4m3)
        y = _load(b, nl.float8_e5m2)
        p = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.psum)
        kw = dict(perf_mode=nisa.matmul_perf_mode.double_row)
        if case == "shape":
            x = x[:, 0, :]           # [K, M]: the pair dimension is missing
        elif case == "tiling":
            kw.update(tile_position=(0, 0), tile_size=(128, 64))
        elif case == "transpose":
            kw.update(is_transpose=True)
        elif case == "mode":
            kw = dict(perf_mode="quad_row")
        nisa.nc_matmul(p, x, y, **kw)  # MARK-double-row
        return _store(p)
    return k


@pytest.mark.parametrize("case,text", [
    ("shape", r"'stationary' must be a \[K, 2, M\] tile"),
    ("bf16", r"'stationary' is bfloat16; the mode multiplies float8_e4m3 or float8_e5m2"),
    ("tiling", r"cannot be combined with column tiling"),
    ("transpose", r"cannot be combined with is_transpose"),
    ("mode", r"'quad_row' is not an nki.isa.matmul_perf_mode"),
])
def test_double_row_errors(case, text):
    a = np.zeros((128, 2, 16), np.float32)
    b = np.zeros((128, 2, 32), np.float32)
    with pytest.raises(nki.NKIError) as e:
        error_kernel(case)(a, b)
    msg = str(e.value)
    assert re.search(text, msg), msg
    with open(__file__) as f:
        line = next(i for i, ln in enumerate(f, 1) if "MARK-double-row" in ln and "next(" not in ln)
    assert "%s:%d: " % (HERE, line) in msg, msg
