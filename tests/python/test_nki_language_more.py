"""test_nki_language_more.py: nki.language names of the current reference
beyond the tutorial set: mod/fmod, trunc, abs_max/abs_min,
gelu_apprx_sigmoid_dx, rms_norm, random_seed, gather_flattened,
shared_constant from a .npy path, nl.bypass, tile_size and empty slices."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl

rng = np.random.default_rng(13)


def unary(fn):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a)))
        return out
    return k


def test_mod_fmod_trunc():
    a = np.array([[-7.5, -3.0, -0.5, 0.0, 0.5, 2.25, 7.5, 9.0]], np.float32)
    np.testing.assert_array_equal(unary(lambda t: nl.mod(t, 2.0))(a), np.mod(a, 2.0))
    np.testing.assert_array_equal(unary(lambda t: nl.fmod(t, 2.0))(a), np.fmod(a, 2.0))
    np.testing.assert_array_equal(unary(lambda t: nl.fmod(t, -2.0))(a), np.fmod(a, -2.0))
    np.testing.assert_array_equal(unary(nl.trunc)(a), np.trunc(a))


def test_abs_max_min():
    x = rng.uniform(-2, 2, (4, 16)).astype(np.float32)
    y = rng.uniform(-2, 2, (4, 16)).astype(np.float32)

    @nki.jit
    def k(a, b):
        ta, tb = nl.load(a), nl.load(b)
        out = nl.ndarray((2, 4, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[0], nl.abs_max(ta, tb))
        nl.store(out[1], nl.abs_min(ta, tb))
        return out
    r = k(x, y)
    np.testing.assert_array_equal(r[0], np.where(np.abs(x) > np.abs(y), x, y))
    np.testing.assert_array_equal(r[1], np.where(np.abs(x) < np.abs(y), x, y))


def test_gelu_apprx_sigmoid_dx():
    x = rng.uniform(-3, 3, (8, 32)).astype(np.float32)
    s = 1 / (1 + np.exp(-1.702 * x))
    np.testing.assert_allclose(unary(nl.gelu_apprx_sigmoid_dx)(x), s + 1.702 * x * s * (1 - s),
                               rtol=1e-5, atol=1e-6)


def test_rsqrt_runs_on_gpsimd_and_refuses_psum():
    """nl.rsqrt(x) is GpSimd's tensor_scalar rsqrt (NKI 0.5.0 on): IEEE
    1/sqrtf of each element, no PSUM input; nisa.activation(op=nl.rsqrt)
    is still the Scalar Engine's function."""
    @nki.jit
    def k(a):
        out = nl.ndarray((2,) + a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        s = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=a)
        nisa.dma_copy(dst=out[0], src=nl.rsqrt(s))
        t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=t, op=nl.rsqrt, data=s)
        nisa.dma_copy(dst=out[1], src=t)
        return out
    a = np.linspace(0.5, 300.0, 64, dtype=np.float32).reshape(4, 16)
    got = k(a)
    np.testing.assert_array_equal(got[0], np.float32(1) / np.sqrt(a))
    np.testing.assert_allclose(got[1], 1 / np.sqrt(a.astype(np.float64)), rtol=1e-6)
    ops = {e: [op for _, op in v] for e, v in k.last.tracer.cores[0].eng_lines.items()}
    assert "tensor_scalar" in ops["pool"] and "activation" in ops["act"]
    assert "activation" not in ops["pool"] and "tensor_scalar" not in ops["act"]

    @nki.jit
    def from_psum(a):
        s = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=s, src=a)
        p = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=p, src=s)
        return nl.rsqrt(p)
    with pytest.raises(nki.NKIError, match=r"test_nki_language_more.py:\d+: nl.rsqrt runs on the GpSimd"):
        from_psum(a)


def test_rms_norm():
    x = rng.uniform(-2, 2, (16, 64)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, (16, 64)).astype(np.float32)

    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.rms_norm(nl.load(a), nl.load(b), axis=1, n=64))
        return out
    want = x / np.sqrt((x * x).mean(axis=1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(k(x, w), want, rtol=1e-5, atol=1e-6)


def test_random_seed_repeats():
    @nki.jit
    def k(s):
        seed = nl.load(s)
        nl.random_seed(seed)
        a = nl.rand((4, 32), dtype=nl.float32)
        nl.random_seed(seed)
        b = nl.rand((4, 32), dtype=nl.float32)
        out = nl.ndarray((2, 4, 32), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[0], a)
        nl.store(out[1], b)
        return out
    r1 = k(np.array([[42]], np.int32))
    r2 = k(np.array([[43]], np.int32))
    np.testing.assert_array_equal(r1[0], r1[1])
    assert not np.array_equal(r1[0], r2[0])
    assert ((r1 >= 0) & (r1 <= 1)).all()


def test_gather_flattened():
    d = rng.uniform(-1, 1, (8, 4, 8)).astype(np.float32)
    ix = rng.integers(0, 32, (8, 5)).astype(np.uint32)

    @nki.jit
    def k(a, i):
        out = nl.ndarray((8, 5), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.gather_flattened(data=nl.load(a), indices=nl.load(i)))
        return out
    np.testing.assert_array_equal(k(d, ix), np.take_along_axis(d.reshape(8, 32), ix.astype(int), 1))


def test_shared_constant_from_npy(tmp_path):
    c = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    path = str(tmp_path / "c.npy")
    np.save(path, c)

    @nki.jit
    def k(a):
        cst = nl.shared_constant(path)
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.add(nl.load(a), nl.load(cst)))
        return out
    a = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(k(a), a + c)

    @nki.jit
    def bad(a):
        nl.shared_constant(str(tmp_path / "missing.npy"))
        return a
    with pytest.raises(nki.NKIError, match="shared_constant cannot read"):
        bad(a)


def test_bypass_and_tile_size():
    @nki.jit
    def k(a):
        t = nl.load(a)
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=o, data=t, op0=nl.multiply, operand0=3.0, op1=nl.bypass, operand1=0.0)
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, o)
        return out
    a = rng.uniform(-1, 1, (2, 5)).astype(np.float32)
    np.testing.assert_array_equal(k(a), a * 3.0)
    ts = nl.tile_size
    assert (ts.pmax, ts.psum_fmax, ts.psum_num_banks, ts.psum_bank_fmax_bytes) == (128, 512, 8, 2048)
    assert ts.sbuf_fmax_bytes == ts.total_available_sbuf_size == ts.sbuf_size_bytes // 128


def test_empty_slices_do_nothing():
    @nki.jit
    def k(a):
        t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        n = 0
        assert t[:, 3:3].shape == (4, 0)
        nisa.tensor_scalar(dst=t[:, 3:3 + n], data=t[:, 3:3 + n], op0=nl.add, operand0=1.0)
        nisa.dma_copy(dst=t[n:n], src=a[0:0])
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    np.testing.assert_array_equal(k(a), a)


def test_broadcasting_operands():
    a = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    row = rng.uniform(-1, 1, (1, 8)).astype(np.float32)
    one = np.array([[2.5]], np.float32)
    col = rng.uniform(-1, 1, (16, 1)).astype(np.float32)

    @nki.jit
    def k(x, r, s, c):
        tx, tr, ts, tc = nl.load(x), nl.load(r), nl.load(s), nl.load(c)
        out = nl.ndarray((3, 16, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[0], nl.add(tx, tr))
        nl.store(out[1], nl.multiply(ts, tx))
        nl.store(out[2], nl.subtract(tc, tr))
        return out
    r = k(a, row, one, col)
    np.testing.assert_allclose(r[0], a + row, rtol=1e-6)
    np.testing.assert_allclose(r[1], one * a, rtol=1e-6)
    np.testing.assert_allclose(r[2], col - row, rtol=1e-6)


def test_loop_reduce():
    x = rng.uniform(-1, 1, (3, 8, 16)).astype(np.float32)

    @nki.jit
    def k(a):
        out = nl.ndarray((2, 8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        for rep in range(2):          # the same call site starts again when its index is 0
            for i in nl.affine_range(3):
                m = nl.loop_reduce(nl.load(a[i]), op=np.maximum, loop_indices=[i])
                s = nl.loop_reduce(nl.load(a[i]), op=nl.add, loop_indices=i, dtype=nl.float32)
            nl.store(out[0], m)
            nl.store(out[1], s)
        return out
    r = k(x)
    np.testing.assert_array_equal(r[0], x.max(axis=0))
    np.testing.assert_allclose(r[1], x.sum(axis=0), rtol=1e-6)


def test_atomic_rmw_plain_and_indexed():
    base = rng.uniform(-1, 1, (6, 4)).astype(np.float32)
    upd = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    rows = np.array([[4], [0], [2]], np.int32)

    @nki.jit
    def k(a, u, r):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a))
        tu, tr_ = nl.load(u), nl.load(r)
        nl.atomic_rmw(out[0:3], value=tu, op=np.add)                      # rows 0..2 += u
        i_p, i_f = nl.mgrid[0:3, 0:4]
        nl.atomic_rmw(out[tr_[i_p, 0], i_f], value=tu, op=nl.maximum)     # rows r = max(., u)
        return out
    want = base.copy()
    want[0:3] += upd
    want[rows[:, 0]] = np.maximum(want[rows[:, 0]], upd)
    np.testing.assert_allclose(k(base, upd, rows), want, rtol=1e-6)


def test_abs_max_with_a_column():
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.abs_max(nl.load(a), nl.load(b)))
        return out
    a = rng.uniform(-2, 2, (8, 16)).astype(np.float32)
    b = rng.uniform(-2, 2, (8, 1)).astype(np.float32)
    np.testing.assert_array_equal(k(a, b), np.where(np.abs(a) > np.abs(b), a, np.broadcast_to(b, a.shape)))


def test_reference_parameter_names_and_defaults():
    """The reference's keywords: zeros_like(x=), empty_like(x=),
    broadcast_to(x=, dtype=) (a converted copy), shared_constant(constant=),
    shared_identity_matrix's default uint8 and dst=."""
    @nki.jit
    def k(a):
        t = nl.load(a)
        z = nl.zeros_like(x=t)
        e = nl.empty_like(x=t)
        row = nl.load(a[0:1, :])
        b = nl.broadcast_to(x=row, shape=(1, a.shape[1]), dtype=nl.bfloat16)
        c = nl.load(nl.shared_constant(constant=np.arange(8, dtype=np.float32).reshape(2, 4)))
        ident = nl.shared_identity_matrix(n=4)
        into = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.sbuf)
        nl.shared_identity_matrix(n=4, dtype=nl.float32, dst=into)
        outs = [nl.ndarray(v.shape, dtype=v.dtype, buffer=nl.shared_hbm) for v in (z, b, c, ident, into)]
        for o, v in zip(outs, (z, b, c, ident, into)):
            nl.store(o, v)
        assert e.shape == t.shape and ident.dtype == nl.uint8 and b.dtype == nl.bfloat16
        return tuple(outs)
    a = np.linspace(-3, 3, 32, dtype=np.float32).reshape(4, 8)
    z, b, c, ident, into = k(a)
    np.testing.assert_array_equal(z, np.zeros_like(a))
    np.testing.assert_array_equal(nki.to_float32(b), nki.to_float32(nki.bf16(a[0:1])))
    np.testing.assert_array_equal(c, np.arange(8, dtype=np.float32).reshape(2, 4))
    np.testing.assert_array_equal(ident, np.eye(4, dtype=np.uint8))
    np.testing.assert_array_equal(into, np.eye(4, dtype=np.float32))


def test_memory_region_and_dtype_types():
    """nl.MemoryRegion members name the buffers (each equal to its string;
    nl.hbm is private_hbm, the reference's alias), nl.DType is the type of
    the dtype names."""
    assert [m.value for m in nl.MemoryRegion] == ["sbuf", "psum", "private_hbm", "shared_hbm"]
    assert nl.MemoryRegion.psum == nl.psum == "psum"
    assert nl.hbm is nl.private_hbm is nl.MemoryRegion.hbm and isinstance(nl.sbuf, nl.MemoryRegion)

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.MemoryRegion.shared_hbm)
        t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.MemoryRegion.sbuf)
        nisa.dma_copy(dst=t, src=a)
        p = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.MemoryRegion.psum)
        nisa.tensor_scalar(dst=p, data=t, op0=nl.multiply, operand0=2.0)
        assert t.buffer == nl.MemoryRegion.sbuf and p.buffer == nl.MemoryRegion.psum
        assert nl.is_hbm(out) and str(p.buffer) == "psum" and out.buffer is nl.shared_hbm
        nl.store(out, p)
        return out
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(k(a), 2 * a)
    for dt in (nl.float32, nl.bfloat16, nl.float8_e4m3, nl.float8_e4m3fn_x4, nl.int32, np.float16):
        assert isinstance(dt, nl.DType), dt
    for not_dt in ("float32", 3, nl.sbuf, None):
        assert not isinstance(not_dt, nl.DType), not_dt


def test_hardware_limits_are_validation_errors():
    """nki.isa.NkiValidationError (an NKIError naming the line) for what the
    hardware cannot do; other trace errors stay plain NKIErrors."""
    assert issubclass(nisa.NkiValidationError, nki.NKIError)

    @nki.jit
    def wide_moving(a, b):
        out = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray(out.shape, dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(p, stationary=nl.load(a), moving=nl.load(b))  # MARK-wide
        nl.store(out, p)
        return out

    @nki.jit
    def too_tall(a):
        t = nl.ndarray((129, 4), dtype=nl.float32, buffer=nl.sbuf)  # MARK-tall
        return a

    @nki.jit
    def not_an_op(a):
        nisa.tensor_copy(dst=a, src=a)  # MARK-usage: an HBM dst is a usage error
        return a
    a = np.ones((128, 128), np.float32)
    with pytest.raises(nisa.NkiValidationError, match=r"test_nki_language_more.py:\d+: matmul moving "
                       r"free size 1024 exceeds 512"):
        wide_moving(a, np.ones((128, 1024), np.float32))
    with pytest.raises(nisa.NkiValidationError, match="more than 128"):
        too_tall(a)
    with pytest.raises(nki.NKIError) as e:
        not_an_op(a)
    assert not isinstance(e.value, nisa.NkiValidationError)


def _buffers_kernel(a):
    """Reports the buffers of its argument, of nl.hbm / "hbm" / nl.shared_hbm
    tensors and of views of them, one int32 row a program: 1 private, 2
    shared."""
    code = {nl.private_hbm: 1, nl.shared_hbm: 2}
    priv = nl.ndarray((2, 4), dtype=nl.int32, buffer=nl.hbm)
    legacy = nl.ndarray((2, 4), dtype=nl.int32, buffer="hbm")
    out = nl.ndarray((nl.num_programs(0), 5), dtype=nl.int32, buffer=nl.shared_hbm)
    got = [code[t.buffer] for t in (a, a[0:1], priv, legacy.reshape((8,)), out)]
    row = nl.ndarray((1, 5), dtype=nl.int32, buffer=nl.sbuf)
    for i, v in enumerate(got):
        nisa.memset(dst=row[0:1, i:i + 1], value=v)
    pid = nl.program_id(0)
    nisa.dma_copy(dst=out[pid:pid + 1, 0:5], src=row)
    return out


def test_hbm_tensors_say_whether_every_program_shares_them():
    """An argument is private_hbm (nl.hbm) at LNC=1 and shared_hbm on the
    two cores of an LNC=2 launch (as the vendor's simulator wraps them);
    a tensor made on nl.shared_hbm is shared, on nl.hbm or "hbm" private;
    a view keeps its tensor's region. A kernel choosing its path by
    `t.buffer == nl.shared_hbm` (the NKI Library's MoE masking) sees it."""
    a = np.zeros((2, 4), dtype=np.float32)
    np.testing.assert_array_equal(nki.simulate(nki.jit(_buffers_kernel))(a), [[1, 1, 1, 1, 2]])
    np.testing.assert_array_equal(nki.cpu_simulate(_buffers_kernel)[1](a), [[1, 1, 1, 1, 2]])
    np.testing.assert_array_equal(nki.cpu_simulate(_buffers_kernel)[2](a), [[2, 2, 1, 1, 2]] * 2)
