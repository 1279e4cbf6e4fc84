"""test_nki_simulator.py: trnemu standing in for the vendor's NKI CPU
simulator: nki.cpu_simulate(kernel)[lnc], the nki_cpu_simulator package's
aliases of trnemu's nki modules, and the neuron_dtypes host helpers."""
import importlib

import numpy as np
import pytest

import nki
import nki.language as nl
import neuron_dtypes as dt
from neuron_dtypes._types import FORMATS


def rand(*shape):
    return np.random.default_rng(7).standard_normal(shape).astype(np.float32)


def scale_by_program(a):
    """Each program scales its share of the rows by (its id + 1); without a
    launch grid there is one program and one share."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    if nl.program_ndim() == 0:
        n, pid = 1, 0
    else:
        n, pid = nl.num_programs(0), nl.program_id(0)
    rows = a.shape[0] // n
    r = pid * rows
    nl.store(out[r:r + rows], nl.load(a[r:r + rows]) * float(pid + 1))
    return out


def test_cpu_simulate_lnc1_runs_one_program():
    a = rand(128, 64)
    got = nki.cpu_simulate(scale_by_program)[1](a=a)
    assert np.array_equal(got, a)


def test_cpu_simulate_lnc1_program_id_is_zero():
    def ids(a):
        out = nl.ndarray((1, 3), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, t * 0.0 + float(nl.program_id(0) * 10 + nl.num_programs(0)
                                      + 100 * nl.program_ndim()))
        return out
    got = nki.cpu_simulate(ids)[1](a=np.ones((1, 3), np.float32))
    assert got.tolist() == [[101.0, 101.0, 101.0]]


def test_cpu_simulate_lnc2_runs_two_programs():
    a = rand(128, 64)
    got = nki.cpu_simulate(scale_by_program)[2](a=a)
    want = a.copy()
    want[64:] *= 2
    assert np.array_equal(got, want)


def test_cpu_simulate_lnc2_uses_two_physical_cores():
    from nki import _runtime
    k = nki.cpu_simulate(scale_by_program)[2]
    comp = k.compile((rand(128, 64),), {})
    assert comp.ncores == (2 if _runtime.machine_lnc() >= 2 else 1)


def test_cpu_simulate_agrees_with_simulate_and_jit_kernels():
    @nki.jit
    def add(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(x) + nl.load(y))
        return out
    a, b = rand(32, 16), rand(32, 16)
    via_cpu = nki.cpu_simulate(add)[1](x=a, y=b)
    assert np.array_equal(via_cpu, nki.simulate(add)(a, b))
    assert np.array_equal(via_cpu, a + b)


@pytest.mark.parametrize("lnc", [0, 3, "2", True])
def test_cpu_simulate_refuses_other_lnc_sizes(lnc):
    with pytest.raises(nki.NKIError, match="1 or 2"):
        nki.cpu_simulate(scale_by_program)[lnc]


def test_cpu_simulate_refuses_a_non_kernel():
    with pytest.raises(nki.NKIError, match="not a kernel"):
        nki.cpu_simulate(42)


def test_simulator_package_aliases_trnemus_modules():
    import nki_cpu_simulator
    import nki_cpu_simulator.nki.language as sim_nl
    import nki_cpu_simulator.nki.isa as sim_isa
    import nki_cpu_simulator.nki.typing as sim_typing
    from nki_cpu_simulator import nki as sim_nki
    assert sim_nki is nki and nki_cpu_simulator.nki is nki
    assert sim_nl is nki.language and sim_isa is nki.isa and sim_typing is nki.typing
    assert sim_nl.bfloat16 is nl.bfloat16
    assert sim_nki.cpu_simulate is nki.cpu_simulate


@pytest.mark.parametrize("sub", ["compiler", "tensor", "builtin", "isa.constants",
                                 "language.dtypes", "no_such_module"])
def test_simulator_submodules_alias_or_name_what_is_missing(sub):
    try:
        mod = importlib.import_module("nki_cpu_simulator.nki." + sub)
    except ImportError as e:
        assert ("nki." + sub) in str(e)
        with pytest.raises(ImportError):
            importlib.import_module("nki." + sub)
    else:
        assert mod is importlib.import_module("nki." + sub)


def codes(arr):
    return np.asarray(arr).view(np.uint8).tolist()


def test_static_cast_fp8_rounds_to_nearest_even():
    x = np.array([1.0, 1.0625, 1.1875, 247.0, 248.0, -0.0, 2.0 ** -10], np.float32)
    # 1.0625 is halfway between 1 (0x38) and 1.125 (0x39): the even code;
    # 248 is past 240 + half an ulp: infinity; 2^-10 is half the smallest subnormal
    assert codes(dt.static_cast(x, dt.float8_e4m3)) == [0x38, 0x38, 0x3a, 0x77, 0x78, 0x80, 0x00]
    assert codes(dt.static_cast(np.array([464.0, 465.0, np.inf]), dt.float8_e4m3fn)) == [0x7e, 0x7f, 0x7f]
    assert codes(dt.static_cast(np.array([57344.0, 61440.0]), dt.float8_e5m2)) == [0x7b, 0x7c]
    back = dt.static_cast(dt.static_cast(x, dt.float8_e4m3), np.float32)
    assert back.dtype == np.float32
    assert back.tolist() == [1.0, 1.0, 1.25, 240.0, np.inf, 0.0, 0.0]


def test_static_cast_bfloat16_matches_nki():
    x = np.array([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -3.5, 1e-40], np.float32)
    h = dt.static_cast(x, dt.bfloat16)
    assert np.asarray(h).view(np.uint16).tolist() == [0x3f80, 0x3f82, 0xc060, 0x0001]
    assert np.array_equal(np.asarray(h).view(np.uint16), np.asarray(nki.bf16(x)).view(np.uint16))
    assert dt.static_cast(h, np.float32).tolist() == [1.0, 1.0 + 2.0 ** -6, -3.5,
                                                      float(np.float32(2.0 ** -133))]


def test_static_cast_packs_four_lanes():
    x = np.array([[0.5, 1.0, 6.0, -2.0, 7.0, 0.25, 0.0, 3.0]], np.float32)
    p = dt.static_cast(x, dt.float4_e2m1fn_x4)
    assert p.shape == (1, 2)
    # fp4 codes 1, 2, 7, 0xc in nibbles 0..3; 7 saturates to 6 (0x7), 0.25 ties to 0
    assert np.asarray(p).view(np.uint16).tolist() == [[0xc721, 0x5007]]
    assert dt.static_cast(p, np.float32).tolist() == [[0.5, 1.0, 6.0, -2.0, 6.0, 0.0, 0.0, 3.0]]
    q = dt.static_cast(np.array([1.0, 2.0, 0.0, -1.0], np.float32), dt.float8_e4m3fn_x4)
    assert int(np.asarray(q).view(np.uint32)[0]) == 0xb8004038
    with pytest.raises(ValueError, match="divisible by 4"):
        dt.static_cast(np.zeros((2, 6), np.float32), dt.float8_e5m2_x4)


def test_static_cast_to_integers_rounds_and_saturates():
    x = np.array([2.5, 3.5, -2.5, 300.0, -5.0, np.nan])
    assert dt.static_cast(x, np.int8).tolist() == [2, 4, -2, 127, -5, 0]
    assert dt.static_cast(x, np.uint8).tolist() == [2, 4, 0, 255, 0, 0]
    assert dt.static_cast(np.array([70000], np.int32), np.int32).tolist() == [70000]


def _grid_f32():
    """float32 values by their top 16 bits (all 65,536), each with low bits
    zero, one, just under half, half, just over half and all ones."""
    lows = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF], np.uint32)
    top = np.arange(1 << 16, dtype=np.uint32) << 16
    return (top[:, None] | lows[None, :]).reshape(-1).view(np.float32)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_fp8_lookup_encoding_equals_comparison(fmt):
    """The top-16-bit tables give exactly the codes of the comparison with
    the format's values, on every exponent, both signs, NaNs and infinities."""
    m = FORMATS[fmt]
    x = _grid_f32()
    with np.errstate(invalid="ignore"):
        assert np.array_equal(m.encode(x), m._encode_f64(x))


def test_bf16_rounding_matches_the_engines():
    """nki's float32 -> bfloat16 (which static_cast uses) gives the bits of
    trnemu's C numerics (the host-dtype extension), NaN payloads included."""
    from nki import _dtypes
    ext = _dtypes._load_extension()
    if ext is None:
        pytest.skip("nki._hostdtypes not built")
    x = _grid_f32()
    engine = x.astype(np.dtype(ext.bfloat16)).view(np.uint16)
    assert np.array_equal(_dtypes.f32_to_bf16(x), engine)
    assert np.array_equal(np.asarray(dt.static_cast(x, dt.bfloat16)).view(np.uint16), engine)


_CHUNK_CASES = [(np.float32, dt.bfloat16), (np.float32, dt.float8_e4m3),
                (np.float64, dt.float8_e5m2), (np.float32, dt.float8_e4m3fn_x4),
                (np.float32, dt.float4_e2m1fn_x4), (np.float32, dt.tfloat32),
                (np.float64, np.int16), (dt.bfloat16, dt.float8_e4m3fn),
                (dt.float8_e4m3, np.uint8), (dt.float8_e5m2_x4, np.float32)]


@pytest.mark.parametrize("src,dst", _CHUNK_CASES)
def test_static_cast_in_chunks_gives_the_same_bits(monkeypatch, src, dst):
    """A cast done 8 values at a time (chunks that split rows and packed
    elements' groups of lanes) equals the cast done whole."""
    from neuron_dtypes import _cast
    x = np.random.default_rng(3).standard_normal((7, 36)) * 50
    x[0, :3] = [np.inf, -np.inf, np.nan]
    a = dt.static_cast(x.astype(np.float32), src) if src not in (np.float32, np.float64) \
        else x.astype(src)
    whole = dt.static_cast(a, dst)
    monkeypatch.setattr(_cast, "_CHUNK", 8)
    chunked = dt.static_cast(a, dst)
    assert chunked.shape == whole.shape
    assert np.asarray(chunked).tobytes() == np.asarray(whole).tobytes()
    assert np.asarray(dt.to_float32(chunked)).tobytes() == \
        np.asarray(dt.to_float32(whole)).tobytes()


@pytest.mark.parametrize("dst", [dt.bfloat16, dt.float8_e4m3, dt.float8_e4m3fn_x4, np.int8])
def test_static_cast_needs_little_beyond_its_result(dst):
    """A cast of 4M values allocates its result and a few MiB of chunk
    temporaries (NumPy reports its buffers to tracemalloc), not the 8-byte
    per value float64 and index arrays of a whole-array conversion."""
    import tracemalloc
    x = np.random.default_rng(5).standard_normal(1 << 22).astype(np.float32)
    dt.static_cast(x[:64], dst)               # the format's tables, built once
    tracemalloc.start()
    try:
        out = dt.static_cast(x, dst)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < np.asarray(out).nbytes + (32 << 20), "peak %d MiB" % (peak >> 20)


def test_type_facts():
    assert dt.is_float_type(dt.bfloat16) and dt.is_float_type(np.float16)
    assert dt.is_float_type("float8_e4m3") and dt.is_float_type(dt.float4_e2m1fn_x4)
    assert not dt.is_float_type(np.int32) and not dt.is_float_type(np.uint8)
    assert [dt.sizeinbytes(t) for t in (np.float32, dt.bfloat16, dt.float8_e5m2,
                                       dt.float8_e4m3fn_x4, dt.float4_e2m1fn_x4)] == [4, 2, 1, 4, 2]
    f = dt.finfo(dt.float8_e4m3)
    assert (f.max, f.min, f.tiny, f.smallest_subnormal, f.eps, f.bits) == (
        240.0, -240.0, 2.0 ** -6, 2.0 ** -9, 0.125, 8)
    assert dt.finfo(dt.float8_e4m3fn).max == 448.0 and dt.finfo(dt.float4_e2m1fn_x4).max == 6.0
    assert dt.finfo(dt.bfloat16).eps == 2.0 ** -7 and dt.finfo(dt.bfloat16).dtype == dt.bfloat16
    assert dt.finfo(np.float16).max == np.finfo(np.float16).max
    assert dt.dtype_name("bf16") == "bfloat16" and dt.dtype_name(np.float32) == "float32"
    with pytest.raises(TypeError):
        dt.finfo(np.int32)
    with pytest.raises(TypeError):
        dt.dtype_name(object())
