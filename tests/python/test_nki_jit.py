"""test_nki_jit.py: nki.jit's options, the compile configuration objects,
the target generation, tensors as truth values, NKIObject parameter
structs and the annotation names (nki.tensor, nki.dtype, nki.typing)."""
import os

import numpy as np
import pytest

import nki
import nki.compiler as ncc
import nki.isa as nisa
import nki.language as nl
from nki import _runtime


def _copy_body(a, dtype=None):
    """a copied through SBUF, in dtype (default a's)."""
    dtype = dtype or a.dtype
    out = nl.ndarray(a.shape, dtype=dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    nisa.dma_copy(dst=out, src=t)
    return out


@pytest.mark.parametrize("mode", ["trace", "auto", "simulation", "jax", "torchxla", "baremetal"])
def test_jit_modes_run(mode):
    k = nki.jit(mode=mode)(_copy_body)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(k(a), a)


def _tiles_body(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    return t, nl.multiply(t, 2.0)


def test_simulation_mode_returns_on_chip_tiles():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    for k in (nki.jit(mode="simulation")(_tiles_body), nki.simulate(nki.jit(_tiles_body)),
              nki.cpu_simulate(_tiles_body)[1]):
        t, t2 = k(a)
        np.testing.assert_array_equal(t, a)
        np.testing.assert_array_equal(t2, 2 * a)
    with pytest.raises(nki.NKIError, match="a kernel returns HBM tensors"):
        nki.jit(_tiles_body)(a)


def test_a_kernel_named_test_is_not_collected_by_pytest():
    k = nki.jit(_copy_body)
    assert k.__test__ is False and k.__wrapped__ is _copy_body


def test_jit_documented_options():
    @nki.jit(mode="trace", debug_kernel=True, show_compiler_tb=True,
             additional_compile_opt="--internal-skip-backend-allocation-opt-nki",
             compile_config=ncc.CompileConfig(barrier_check=True),
             specialization_config=ncc.SpecializationConfig(allow_nested_config_override=True))
    def k(a):
        return _copy_body(a)
    a = np.ones((2, 8), np.float32)
    np.testing.assert_array_equal(k(a), a)


def test_jit_bad_options_name_the_line():
    with pytest.raises(nki.NKIError, match=r"test_nki_jit.py:\d+: .*mode='fast'"):
        nki.jit(mode="fast")
    with pytest.raises(nki.NKIError, match="no option 'optimise'"):
        nki.jit(optimise=True)
    with pytest.raises(nki.NKIError, match="debug_kernel=.* should be a bool"):
        nki.jit(debug_kernel="yes")
    with pytest.raises(nki.NKIError, match="compile_config= takes an nki.compiler.CompileConfig"):
        nki.jit(compile_config={"barrier_check": True})
    with pytest.raises(TypeError, match="no option 'barrier'"):
        ncc.CompileConfig(barrier=True)


def test_platform_target_matches_machine():
    gen = _runtime.machine_generation()
    names = {2: "trn1", 3: "trn2", 4: "trn3"}
    seen = []

    @nki.jit(platform_target=names[gen])
    def k(a):
        seen.append(nisa.get_nc_version())
        return _copy_body(a)
    a = np.ones((1, 4), np.float32)
    np.testing.assert_array_equal(k(a), a)
    assert seen == [nisa.nc_version(gen)] and seen[0].name == "gen%d" % gen
    assert nisa.nc_version.gen2 <= seen[0] <= nisa.nc_version.gen4 and nisa.nc_version.gen3 > nisa.nc_version.gen2
    assert nisa.get_nc_version() is nisa.nc_version(gen)

    other = names[2 if gen != 2 else 3]
    bad = nki.jit(platform_target=other)(_copy_body)
    with pytest.raises(nki.NKIError, match="targets %s .*emulated machine" % other):
        bad(a)


def test_nc_version_variable_names_the_target(monkeypatch):
    """NKI_NC_VERSION (set by the NKI Library's suite for the simulator)
    names the generation when nothing else does: the machine's is taken,
    another is refused; platform_target= and
    NEURON_PLATFORM_TARGET_OVERRIDE come first."""
    gen = _runtime.machine_generation()
    other = 2 if gen != 2 else 3
    a = np.ones((1, 4), np.float32)
    monkeypatch.setenv("NKI_NC_VERSION", "gen%d" % gen)
    np.testing.assert_array_equal(nki.jit(_copy_body)(a), a)
    monkeypatch.setenv("NKI_NC_VERSION", "gen%d" % other)
    with pytest.raises(nki.NKIError, match="targets gen%d .*emulated machine" % other):
        nki.jit(_copy_body)(a)
    names = {2: "trn1", 3: "trn2", 4: "trn3"}
    np.testing.assert_array_equal(nki.jit(platform_target=names[gen])(_copy_body)(a), a)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", names[gen])
    np.testing.assert_array_equal(nki.jit(_copy_body)(a), a)
    monkeypatch.setenv("NKI_NC_VERSION", "gen9")
    monkeypatch.delenv("NEURON_PLATFORM_TARGET_OVERRIDE")
    with pytest.raises(nki.NKIError, match="platform target 'gen9' is not one of"):
        nki.jit(_copy_body)(a)


def test_imprecise_simulator_mode_is_said_to_have_no_effect(monkeypatch):
    """NKI_PRECISE_FP=0 (the vendor simulator's float32 storage of
    low-precision tensors) does not apply on trnemu: a warning says so at
    the trace, and the result keeps its bfloat16 rounding."""
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "0")     # traced here
    monkeypatch.setenv("NKI_PRECISE_FP", "0")

    @nki.jit
    def k(a):
        return _copy_body(a, nl.bfloat16)
    a = np.full((1, 4), 1 + 2 ** -10, np.float32)    # not a bfloat16 value
    with pytest.warns(nki.NKIWarning, match=r"test_nki_jit.py:\d+: NKI_PRECISE_FP=0 has no effect"):
        got = k(a)
    np.testing.assert_array_equal(nki.to_float32(got), np.ones((1, 4), np.float32))


def test_save_neff_name(tmp_path):
    path = str(tmp_path / "k.neff")
    k = nki.jit(save_neff_name=path)(_copy_body)
    a = np.ones((4, 4), np.float32)
    k(a)
    with open(path, "rb") as f:
        head = f.read(1024)
    assert len(head) == 1024 and os.path.getsize(path) > 1024


def test_tensor_is_truthy_optional_argument():
    @nki.jit
    def k(a, bias=None):
        t = nl.load(a)
        if bias is not None and bias:
            t = nl.add(t, nl.load(bias))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, t)
        return out
    a = np.full((2, 3), 2.0, np.float32)
    b = np.full((2, 3), 0.5, np.float32)
    np.testing.assert_array_equal(k(a, b), a + b)
    np.testing.assert_array_equal(k(a), a)


class Params(nl.NKIObject):
    scale: float = 1.0
    shift: float = 0.0


def test_nkiobject_parameter_struct():
    @nki.jit
    def k(a, p):
        t = nl.load(a)
        r = nl.add(nl.multiply(t, p.scale), p.shift)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(k(a, Params(scale=2.0)), a * 2.0)
    np.testing.assert_array_equal(k(a, Params(scale=3.0, shift=1.0)), a * 3.0 + 1.0)
    assert Params(scale=2.0) == Params(scale=2.0) != Params()
    with pytest.raises(TypeError, match="no field 'offset'"):
        Params(offset=1)


def test_annotation_names():
    assert nki.typing.mutable_tensor[128, 64] is nki.typing.mutable_tensor
    assert isinstance(nl.bfloat16, nki.dtype)
    assert str(nl.float8_e4m3fn) == "float8_e4m3fn" and str(nl.float32) == "float32"
    assert nki.tensor is nki.NkiTensor
    assert nl.fp32.min == float(np.finfo(np.float32).min)
    assert np.dtype(nl.fp32) == np.float32
    assert nl.finfo(nl.bfloat16).eps == 2.0 ** -7


def test_device_print(capsys):
    @nki.jit
    def k(a):
        t = nl.load(a)
        nl.device_print("before:", t)
        t2 = nl.multiply(t, 2.0)
        nl.device_print("after:", t2)
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, t2)
        return out
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    np.testing.assert_array_equal(k(a), a * 2)
    text = capsys.readouterr().out
    assert text.index("before: [[1. 2.]") < text.index("after: [[2. 4.]")
    with pytest.raises(nki.NKIError, match="prefix must be a constant string"):
        nki.jit(lambda a: nl.device_print(3, a))(a)


def test_returned_reshape_keeps_its_shape():
    @nki.jit
    def k(a):
        out = nl.ndarray((4, 6), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        return out.reshape((2, 12))
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    r = k(a)
    assert r.shape == (2, 12)
    np.testing.assert_array_equal(r, a.reshape(2, 12))

    @nki.jit
    def part(a):
        out = nl.ndarray((4, 6), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        return out[0:2]
    with pytest.raises(nki.NKIError, match="not a view of part of one"):
        part(a)


def test_nkiobject_dataclasses_keep_keyword_init():
    import dataclasses

    @dataclasses.dataclass
    class Loose(nl.NKIObject):
        idx = None                  # unannotated: no dataclass field, still a keyword
        offset = None

    @dataclasses.dataclass(frozen=True)
    class Checked(nl.NKIObject):
        eps: float = 1e-6
        tags: list = dataclasses.field(default_factory=list)

        def __post_init__(self):
            if self.eps < 0:
                raise ValueError("eps must be positive")

    p = Loose(idx=3, offset=7)
    assert (p.idx, p.offset) == (3, 7)
    c = Checked(eps=0.5)
    assert c.eps == 0.5 and c.tags == [] and Checked(0.25).eps == 0.25
    with pytest.raises(ValueError, match="eps must be positive"):
        Checked(eps=-1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.eps = 1.0
