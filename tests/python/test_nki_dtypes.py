"""test_nki_dtypes.py: the host dtypes of the NKI front end (docs/nki.md,
"Host dtypes"): NumPy arrays of bfloat16, fp8 and fp4, casts with their
rounding, arithmetic, comparisons, printing, kernels that take and return
them, and CPU torch tensors as kernel arguments.

The expected bits are worked out by hand from the formats (docs/numerics.md).
Tests of trnemu's own extension (nki._hostdtypes) run when it is the
implementation in use, which it is whenever ml_dtypes is not importable."""
import numpy as np
import pytest

import nki
import nki.language as nl
from nki import _dtypes

pytestmark = pytest.mark.skipif(_dtypes.HOST is None,
                                reason="no host dtypes: nki._hostdtypes was not built")
trnemu_only = pytest.mark.skipif(_dtypes.HOST != "trnemu",
                                 reason="checks trnemu's nki._hostdtypes (ml_dtypes is in use)")

BF16, E4M3, E5M2 = _dtypes.bfloat16, _dtypes.float8_e4m3, _dtypes.float8_e5m2
E4M3FN, F4 = _dtypes.float8_e4m3fn, _dtypes.float4_e2m1fn


def bits(a):
    """The raw bits of a host-format array."""
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8).tolist()


def test_creation_and_names():
    z = np.zeros((2, 3), dtype=nl.bfloat16)
    assert z.shape == (2, 3) and z.dtype == nl.bfloat16 and z.dtype.itemsize == 2
    assert bits(z.ravel()) == [0] * 6
    for dt, name, size in [(BF16, "bfloat16", 2), (E4M3, "float8_e4m3", 1), (E5M2, "float8_e5m2", 1),
                           (E4M3FN, "float8_e4m3fn", 1), (F4, "float4_e2m1fn", 1)]:
        assert dt.name == name and dt.itemsize == size
        assert np.dtype(name) == dt          # registered under the ml_dtypes name
        assert np.ones(3, dtype=dt).astype(np.float32).tolist() == [1.0, 1.0, 1.0]
    assert np.array([1.5, 2], dtype=BF16).tolist() == [1.5, 2.0]
    assert float(BF16.type(1.5)) == 1.5 and BF16.type("2.25") == BF16.type(2.25)
    assert BF16.type([1, 2.5]).dtype == BF16          # a list gives an array, as np.float32
    with pytest.raises(TypeError, match="bfloat16: expected a number, got NoneType"):
        BF16.type(None)


def test_bf16_round_to_nearest_even():
    x = np.array([1.0, 1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -2.5, np.inf, np.nan,
                  3.4028235e38, 1 / 3], dtype=np.float32)
    # ties go to the even mantissa; above half rounds up; the largest fp32
    # overflows to inf; NaN is the quiet 0x7fc0
    assert bits(x.astype(BF16)) == [0x3F80, 0x3F80, 0x3F82, 0x3F81, 0xC020, 0x7F80, 0x7FC0,
                                    0x7F80, 0x3EAB]
    back = np.array([0x3F81, 0xC020, 0x0001], dtype=np.uint16).view(BF16).astype(np.float32)
    assert back.tolist() == [1.0078125, -2.5, 2.0**-133]


@trnemu_only
def test_float64_rounds_once():
    # 1 + 2^-8 + 2^-40 rounds up in one step; through a plain fp32 rounding
    # it would land on the tie 1 + 2^-8 and then round down to 1.0
    assert bits(np.array([1 + 2**-8 + 2**-40]).astype(BF16)) == [0x3F81]
    assert bits(np.array([1 + 2**-8 + 2**-40], dtype=np.float32).astype(BF16)) == [0x3F80]


@trnemu_only
def test_float64_to_bfloat16_rounds_once_everywhere():
    """float64 -> bfloat16 against rounding the float64 itself to 8
    significant bits (NumPy's rint, ties to even): near ties, in the
    subnormal range (a fixed quantum of 2^-133) and at the overflow edge."""
    rng = np.random.default_rng(11)
    e = rng.integers(-140, 129, 200_000)
    m = rng.integers(1 << 7, 1 << 8, 200_000).astype(np.float64)
    tie = np.ldexp(m + 0.5, e - 8)                                # exact ties of 8 bits
    nudge = np.ldexp(rng.choice([-1.0, 0.0, 1.0], 200_000), e - 40)
    x = (tie + nudge) * rng.choice([-1.0, 1.0], 200_000)
    x = np.concatenate([x, rng.standard_normal(50_000) * 1e3])
    mant, ex = np.frexp(x)
    normal = np.ldexp(np.rint(np.ldexp(mant, 8)), ex - 8)
    sub = np.ldexp(np.rint(np.ldexp(x, 133)), -133)
    want = np.where(np.abs(x) < 2.0 ** -126, sub, normal)
    want = np.where(np.abs(want) >= 2.0 ** 128, np.copysign(np.inf, x), want)
    got = x.astype(BF16).astype(np.float64)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, "x %r: got %r, want %r" % (x[bad[0]], got[bad[0]], want[bad[0]])


def test_fp8_rounding_and_limits():
    x = np.array([240, 248, 1000, -1000, 0.3, np.nan, 2.0**-9], dtype=np.float32)
    # e4m3 (IEEE-style): max 240, 248 is the overflow midpoint -> inf
    assert bits(x.astype(E4M3)) == [0x77, 0x78, 0x78, 0xF8, 0x2A, 0x7C, 0x01]
    y = np.array([57344, 61440, 1.25, 1.125, -0.0], dtype=np.float32)
    assert bits(y.astype(E5M2)) == [0x7B, 0x7C, 0x3D, 0x3C, 0x80]
    # e4m3fn (OCP): no inf; 464 ties down to 448, beyond it and inf give NaN
    z = np.array([448, 464, 470, np.inf, -np.nan], dtype=np.float32)
    assert bits(z.astype(E4M3FN)) == [0x7E, 0x7E, 0x7F, 0x7F, 0xFF]
    assert np.isnan(z.astype(E4M3FN)).tolist() == [False, False, True, True, True]


def test_fp4_rounding_saturates():
    x = np.array([0, 0.25, 0.75, 2.5, 5, 7, 100, -3], dtype=np.float32)
    assert bits(x.astype(F4)) == [0, 0, 2, 4, 6, 7, 7, 13]
    assert x.astype(F4).astype(np.float32).tolist() == [0, 0, 1, 2, 4, 6, 6, -3]


@trnemu_only
def test_casts_out():
    b = np.array([2.5, -2.5, 300, np.nan, np.inf, 0.0], dtype=np.float32).astype(BF16)
    assert b.astype(np.int32).tolist() == [2, -2, 300, 0, 2**31 - 1, 0]   # truncate, NaN -> 0
    assert b.astype(np.uint8).tolist() == [2, 0, 255, 0, 255, 0]
    assert b.astype(bool).tolist() == [True, True, True, True, True, False]
    assert b.astype(np.float16).tolist()[:3] == [2.5, -2.5, 300.0]
    assert b.astype(E4M3).astype(np.float32).tolist()[:3] == [2.5, -2.5, np.inf]
    assert np.result_type(BF16, np.float32) == np.float32
    assert np.result_type(E4M3, BF16) == BF16


def test_arithmetic():
    a = np.array([1.0, 1.0, 1.0, 6.0], dtype=BF16)
    b = np.array([2**-8, 3 * 2**-8, 3.0, -2.0], dtype=BF16)
    s = a + b
    assert s.dtype == BF16 and s.astype(np.float32).tolist() == [1.0, 1.015625, 4.0, 4.0]
    assert (a / b)[2:].astype(np.float32).tolist() == [0.333984375, -3.0]
    assert (a - b)[3] == BF16.type(8.0) and (a * b)[3] == BF16.type(-12.0)
    assert (-b).astype(np.float32).tolist()[3] == 2.0 and np.abs(b)[3] == BF16.type(2.0)
    n = np.array([np.nan, 1.0], dtype=BF16)
    assert np.isnan(np.maximum(n, a[:2])[0]) and np.fmax(n, a[:2])[0] == 1.0
    assert np.minimum(a, b).astype(np.float32).tolist() == [2**-8, 3 * 2**-8, 1.0, -2.0]
    e = np.array([1.0, 2.0], dtype=E4M3) * np.array([100.0, 200.0], dtype=E4M3)
    assert e.dtype == E4M3 and e.astype(np.float32).tolist() == [96.0, np.inf]   # 100 -> 96
    assert float(BF16.type(1.5) + BF16.type(2.25)) == 3.75


def test_comparisons():
    a = np.array([1.0, 2.0, np.nan, -np.inf], dtype=BF16)
    b = np.array([1.0, 3.0, np.nan, 0.0], dtype=BF16)
    assert (a == b).tolist() == [True, False, False, False]
    assert (a != b).tolist() == [False, True, True, True]
    assert (a < b).tolist() == [False, True, False, True]
    assert (a >= b).tolist() == [True, False, False, False]
    assert np.isnan(a).tolist() == [False, False, True, False]
    assert np.isinf(a).tolist() == [False, False, False, True]
    assert np.isfinite(a).tolist() == [True, True, False, False]
    assert BF16.type(1.0) < BF16.type(2.0) and BF16.type(2.0) == 2.0
    assert np.argmax(np.array([1, 5, 3], dtype=BF16)) == 1
    assert np.sort(np.array([3, np.nan, -1], dtype=BF16)).astype(np.float32)[:2].tolist() == [-1, 3]


def test_printing():
    a = np.array([1, 1.5, 3.140625, np.inf], dtype=BF16)
    assert repr(a) == "array([1, 1.5, 3.14062, inf], dtype=bfloat16)"
    assert str(BF16.type(0.5)) == "0.5" and repr(E4M3.type(-2)) == "-2"
    assert "%.2f" % float(BF16.type(1.5)) == "1.50" and "{:.1f}".format(BF16.type(2.5)) == "2.5"


@nki.jit
def bf16_scale(a):
    out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), 3.0))
    return out


@nki.jit
def widen(a):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(nl.load(a), dtype=nl.float32))
    return out


def test_bf16_kernel_round_trip():
    x = np.linspace(-3, 3, 8 * 16, dtype=np.float32).reshape(8, 16)
    a = x.astype(nl.bfloat16)
    got = bf16_scale(a)
    assert got.dtype == nl.bfloat16 and got.shape == a.shape
    ref = (a.astype(np.float32) * 3).astype(nl.bfloat16)
    assert bits(got) == bits(ref)


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float8_e4m3fn"])
def test_fp8_kernel_inputs(name):
    dt = _dtypes.host_dtype(name)
    a = np.array([[0.5, -1.5, 2.0, 3.5, -6.0, 12.0, 0.0, 0.125]] * 4, dtype=np.float32).astype(dt)
    try:
        got = widen(a)
    except Exception as e:
        # float8_e4m3fn is a NeuronCore-v4 type: refused on older machines
        assert name == "float8_e4m3fn" and "NeuronCore-v4" in str(e)
        return
    assert got.dtype == np.float32 and got.tolist() == a.astype(np.float32).tolist()


@nki.jit
def narrow(a):
    out = nl.ndarray(a.shape, dtype=nl.float8_e5m2, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(nl.load(a), dtype=nl.float8_e5m2))
    return out


def test_fp8_kernel_output():
    x = np.array([[1.0, 1.125, 57344.0, 70000.0, -0.75, 3.0, 0.0, -5.0]] * 2, dtype=np.float32)
    got = narrow(x)
    assert got.dtype == E5M2
    assert bits(got[0]) == [0x3C, 0x3C, 0x7B, 0x7C, 0xBA, 0x42, 0x00, 0xC5]


@nki.jit
def from_constants(a):
    out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    c = nl.shared_constant(np.array([[1.1, -3.3, 300.0, 0.2]] * 2, dtype=np.float32),
                           dtype=nl.float8_e4m3)
    nl.store(out, nl.add(nl.copy(nl.load(c), dtype=nl.float32), nl.load(a)))
    return out


def test_host_casts_in_kernels():
    # shared_constant and static_cast round on the host, as the device would
    got = from_constants(np.zeros((2, 4), dtype=np.float32))
    assert got[0].tolist() == [1.125, -3.25, np.inf, 0.203125]
    h = nl.static_cast(np.array([1.1, 300.0], dtype=np.float32), nl.float8_e4m3)
    assert h.dtype == E4M3 and bits(h) == [0x39, 0x78]


def test_fp4_is_host_only():
    with pytest.raises(TypeError, match="float4_e2m1fn"):
        _dtypes.info(F4)
    with pytest.raises(nki.NKIError, match="test_nki_dtypes.py:[0-9]+: float4_e2m1fn has no device"):
        widen(np.zeros((2, 8), dtype=F4))

def _torch():
    return pytest.importorskip("torch")


def test_torch_tensors_as_arguments():
    t = _torch()
    x = t.linspace(-2, 2, 64).reshape(4, 16)
    got = widen(x.to(t.bfloat16))
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    assert got.tolist() == x.to(t.bfloat16).to(t.float32).tolist()
    out = bf16_scale(x.to(t.bfloat16))
    assert out.dtype == nl.bfloat16
    assert out.astype(np.float32).tolist() == (x.to(t.bfloat16) * 3).to(t.float32).tolist()
    assert widen(x).tolist() == x.tolist()


def test_torch_bf16_shares_memory():
    t = _torch()
    from nki import _kernel
    x = t.ones(4, 4, dtype=t.bfloat16)
    (a,), _ = _kernel._host_args((x,), {})
    assert a.dtype == nl.bfloat16
    x[0, 0] = 5.0
    assert float(a[0, 0]) == 5.0   # a view of the tensor's memory, not a copy


_FAKE_ML_DTYPES = '''
import importlib.util, os
_spec = importlib.util.spec_from_file_location("ml_dtypes._hostdtypes", os.environ["HD_EXT"])
_m = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_m)
globals().update({n: getattr(_m, n) for n in dir(_m) if not n.startswith("_")})
'''

_USE_ML_DTYPES = '''
import numpy as np, ml_dtypes, nki, nki.language as nl
from nki import _dtypes
assert _dtypes.HOST == "ml_dtypes" and nl.bfloat16 == np.dtype(ml_dtypes.bfloat16)

@nki.jit
def twice(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), 2.0))
    return out

a = np.arange(16, dtype=np.float32).reshape(2, 8).astype(ml_dtypes.bfloat16)
r = twice(a)
assert r.dtype == ml_dtypes.bfloat16 and r.astype(np.float32).tolist() == (2 * a.astype(np.float32)).tolist()
print("ok")
'''


@trnemu_only
def test_ml_dtypes_is_preferred(tmp_path):
    """With an importable ml_dtypes (here a stand-in module that registers
    the same formats under its own name), its dtypes are the host dtypes
    and its arrays go through kernels."""
    import os
    import subprocess
    import sys
    (tmp_path / "ml_dtypes").mkdir()
    (tmp_path / "ml_dtypes" / "__init__.py").write_text(_FAKE_ML_DTYPES)
    env = dict(os.environ, HD_EXT=sys.modules["nki._hostdtypes"].__file__,
               PYTHONPATH=os.pathsep.join([str(tmp_path), os.path.dirname(os.path.dirname(nki.__file__))]))
    env.pop("TRNEMU_NKI_HOST_DTYPES", None)
    # an instance of its own: this process holds the cores of the test's one
    env["TRNEMU_INSTANCE_NAME"] = "%s-mld-%d" % (os.environ.get("TRNEMU_INSTANCE_NAME", "nki"), os.getpid())
    r = subprocess.run([sys.executable, "-c", _USE_ML_DTYPES], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@trnemu_only
def test_extension_found_under_trnemu_exec():
    """`trnemu exec` from a build tree puts the source python/ on
    PYTHONPATH and preloads <build>/shims/libnrt.so.1: the extension is
    found next to that library."""
    import os
    import subprocess
    import sys
    tool = os.environ.get("TRNEMU_TOOL")
    if not tool:
        pytest.skip("TRNEMU_TOOL not set (meson sets it)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRNEMU_LIBNRT")}
    env["TRNEMU_INSTANCE_NAME"] = "%s-hd-%d" % (os.environ.get("TRNEMU_INSTANCE_NAME", "nki"), os.getpid())
    code = ("import numpy as np, nki.language as nl\n"
            "from nki import _dtypes\n"
            "print(_dtypes.HOST, np.zeros(2, dtype=nl.bfloat16).dtype)\n")
    r = subprocess.run([tool, "exec", "--", sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "trnemu bfloat16"
