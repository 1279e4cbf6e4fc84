"""nki_v4_kernels.py: NeuronCore-v4 kernels checked against NumPy, run by
test_nki_v4.py in a process of its own on an emulated Trainium3 machine
(TRNEMU_INSTANCE=trn3.48xlarge): quantize_mx + nc_matmul_mx, activate2,
get_nc_version, platform_target='trn3', and nc_matmul double_row with
float8_e4m3fn (v4 only, never with the legacy float8_e4m3), and an
nc_matmul of 2048 moving columns (up to 4096 fp32 on v4), and exponential
summing into the Vector engine's accumulators. Prints OK on success."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


def round_e4m3fn(x):
    """Round to float8_e4m3fn values (3 mantissa bits, subnormal step 2^-9), ties to even."""
    ax = np.abs(x)
    e = np.floor(np.log2(np.where(ax > 0, ax, 1.0)))
    q = 2.0 ** (np.maximum(e, -6) - 3)
    return np.round(x / q) * q


def mx_dequant(v):
    """Quantize [K, 4F] values (K a multiple of 8) as quantize_mx does and
    return them dequantized: one scale per 8 partitions x 4 elements."""
    K, F4 = v.shape
    out = np.empty_like(v, dtype=np.float64)
    for p in range(0, K, 8):
        for f in range(0, F4, 4):
            g = v[p:p + 8, f:f + 4].astype(np.float64)
            amax = np.abs(g).max()
            s = 2.0 ** (np.floor(np.log2(amax)) - 7) if amax > 0 else 2.0 ** -127
            out[p:p + 8, f:f + 4] = round_e4m3fn(g / s) * s
    return out


@nki.jit(platform_target="trn3")
def mx_matmul(a, b):
    K, M4 = a.shape
    N4 = b.shape[1]
    assert nisa.get_nc_version() == nisa.nc_version.gen4
    sa = nl.ndarray((K, M4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=sa, src=a)
    sb = nl.ndarray((K, N4), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=sb, src=b)
    qa = nl.ndarray((K, M4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    qas = nl.ndarray((K, M4 // 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.quantize_mx(dst=qa, src=sa, dst_scale=qas)
    qb = nl.ndarray((K, N4 // 4), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
    qbs = nl.ndarray((K, N4 // 4), dtype=nl.float8_e8m0fnu, buffer=nl.sbuf)
    nisa.quantize_mx(dst=qb, src=sb, dst_scale=qbs)
    ps = nl.ndarray((M4 // 4, N4 // 4), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul_mx(dst=ps, stationary=qa, moving=qb, stationary_scale=qas, moving_scale=qbs)
    t = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=t, src=ps)
    out = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def act2(a):
    t = nl.load(a)
    o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.activate2(dst=o, op=nl.exp, data=t, imm0=2.0, imm1=-1.0, op0=nl.multiply, op1=nl.add)
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, o)
    return out


def double_row(sdt, mdt):
    @nki.jit
    def k(a, b):
        x = nl.ndarray(a.shape, dtype=sdt, buffer=nl.sbuf)
        nisa.dma_copy(dst=x, src=a)
        y = nl.ndarray(b.shape, dtype=mdt, buffer=nl.sbuf)
        nisa.dma_copy(dst=y, src=b)
        ps = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(ps, x, y, perf_mode=nisa.matmul_perf_mode.double_row)
        t = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=t, src=ps)
        out = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    return k


def check_double_row(rng):
    a = rng.integers(-8, 9, (128, 2, 24)).astype(np.float32)
    b = rng.integers(-6, 7, (128, 2, 72)).astype(np.float32)
    r = double_row(nl.float8_e4m3fn, nl.float8_e5m2)(a.astype(nl.float8_e4m3fn),
                                                      b.astype(nl.float8_e5m2))
    assert np.array_equal(r, np.einsum("pjm,pjn->mn", a, b))     # small integers: exact
    try:
        double_row(nl.float8_e4m3fn, nl.float8_e4m3)(a.astype(nl.float8_e4m3fn),
                                                      b.astype(nl.float8_e4m3))
    except nki.NKIError as e:
        assert "cannot be mixed" in str(e), e
    else:
        raise AssertionError("float8_e4m3fn with float8_e4m3 in double_row was accepted")


@nki.jit
def wide_matmul(a, b):
    """One nc_matmul of 2048 moving columns (v4: a dst row past one bank)."""
    out = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    sa, sb = nl.load(a), nl.load(b)
    ps = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=sa, moving=sb)
    nl.store(out, nl.copy(ps))
    return out


def check_wide_matmul(rng):
    a = rng.integers(-3, 4, (64, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (64, 2048)).astype(np.float32)
    assert np.array_equal(wide_matmul(a, b), a.T @ b)      # small integers: exact


@nki.jit
def exp_sums(a, mx, init):
    """exponential on the Vector engine: exp(a - mx) with the sums kept in
    the accumulators over two calls (the first leaves reduce_res out), then
    a load_reduce from init read out."""
    out = nl.ndarray((a.shape[0], 2), dtype=nl.float32, buffer=nl.shared_hbm)
    ta, tm, ti = nl.load(a), nl.load(mx), nl.load(init)
    o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    res = nl.ndarray((a.shape[0], 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=o, src=ta, max_value=tm, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.exponential(dst=o, src=ta, max_value=tm, reduce_res=res[:, 0:1],
                     reduce_cmd=nisa.reduce_cmd.reduce)
    nisa.exponential(dst=o, src=ta, max_value=tm, reduce_res=res[:, 1:2],
                     reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=ti)
    nl.store(out, res)
    return out


def check_exp_sums(rng):
    a = rng.uniform(-2, 2, (8, 16)).astype(np.float32)
    mx = a.max(axis=1, keepdims=True)
    init = rng.uniform(0, 1, (8, 1)).astype(np.float32)
    e = np.exp(a.astype(np.float64) - mx).sum(axis=1)
    got = exp_sums(a, mx, init)
    np.testing.assert_allclose(got[:, 0], 2 * e, rtol=1e-5)
    np.testing.assert_allclose(got[:, 1], init[:, 0] + e, rtol=1e-5)


def main():
    rng = np.random.default_rng(3)
    a = nki.bf16(rng.uniform(-2, 2, (32, 16)).astype(np.float32))
    b = nki.bf16(rng.uniform(-2, 2, (32, 8)).astype(np.float32))
    r = mx_matmul(a, b)
    da, db = mx_dequant(nki.to_float32(a)), mx_dequant(nki.to_float32(b))
    want = np.einsum("pmj,pnj->mn", da.reshape(32, 4, 4), db.reshape(32, 2, 4))
    np.testing.assert_allclose(r, want, rtol=1e-5, atol=1e-5)
    x = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    np.testing.assert_allclose(act2(x), np.exp(x * 2.0 - 1.0), rtol=1e-6)
    assert nisa.get_nc_version().name == "gen4"
    check_double_row(rng)
    check_wide_matmul(rng)
    check_exp_sums(rng)
    print("OK")


if __name__ == "__main__":
    main()
