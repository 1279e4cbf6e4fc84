"""test_nki_api.py: nki.language and nki.isa call by call, small kernels
against NumPy references, with edge tiles (1 and 128 partitions, odd free
sizes, a full PSUM bank) and masked tiles."""
import numpy as np
import pytest

import nki
import nki.language as nl
import nki.isa as nisa

rng = np.random.default_rng(7)


def rand(*shape, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def binary_kernel(fn):
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a), nl.load(b)))
        return out
    return k


BINARY = [
    (nl.add, np.add), (nl.subtract, np.subtract), (nl.multiply, np.multiply),
    (nl.divide, np.divide), (nl.maximum, np.maximum), (nl.minimum, np.minimum),
    (nl.greater, lambda a, b: (a > b).astype(np.float32)),
    (nl.less_equal, lambda a, b: (a <= b).astype(np.float32)),
    (nl.equal, lambda a, b: (a == b).astype(np.float32)),
]


@pytest.mark.parametrize("fn,ref", BINARY, ids=[f.__name__ for f, _ in BINARY])
@pytest.mark.parametrize("shape", [(128, 64), (1, 7), (37, 3)])
def test_binary(fn, ref, shape):
    a, b = rand(*shape), rand(*shape, lo=0.5, hi=3.0)
    np.testing.assert_allclose(binary_kernel(fn)(a, b), ref(a, b), rtol=1e-6)


@nki.jit
def scalar_ops(a):
    out = nl.ndarray((5,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out[0], t * 2.0)
    nl.store(out[1], 1.0 - t)
    nl.store(out[2], -t)
    nl.store(out[3], 3.0 / t)
    nl.store(out[4], t + 0.25)
    return out


def test_scalar_operands():
    a = rand(64, 33, lo=0.5, hi=2.0)
    got = scalar_ops(a)
    np.testing.assert_allclose(got[0], a * 2)
    np.testing.assert_allclose(got[1], 1 - a)
    np.testing.assert_allclose(got[2], -a)
    np.testing.assert_allclose(got[3], 3 / a, rtol=1e-6)
    np.testing.assert_allclose(got[4], a + 0.25)


def unary_kernel(fn):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, fn(nl.load(a)))
        return out
    return k


def _sig(x):
    return 1 / (1 + np.exp(-x))


UNARY = [
    (nl.exp, np.exp), (nl.log, np.log), (nl.tanh, np.tanh), (nl.sigmoid, _sig),
    (nl.relu, lambda x: np.maximum(x, 0)), (nl.sqrt, np.sqrt), (nl.rsqrt, lambda x: 1 / np.sqrt(x)),
    (nl.reciprocal, lambda x: 1 / x), (nl.sin, np.sin), (nl.cos, np.cos), (nl.arctan, np.arctan),
    (nl.square, np.square), (nl.abs, np.abs), (nl.silu, lambda x: x * _sig(x)),
    (nl.negative, np.negative), (nl.softplus, lambda x: np.log1p(np.exp(x))),
]


@pytest.mark.parametrize("fn,ref", UNARY, ids=[f.__name__ for f, _ in UNARY])
def test_unary(fn, ref):
    a = rand(128, 129, lo=0.1, hi=3.0)
    np.testing.assert_allclose(unary_kernel(fn)(a), ref(a), rtol=2e-6, atol=1e-6)


def reduce_kernel(fn, axis, keepdims=False):
    @nki.jit
    def k(a):
        t = nl.load(a)
        r = fn(t, axis=axis, keepdims=keepdims)
        out = nl.ndarray(r.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, r)
        return out
    return k


@pytest.mark.parametrize("fn,ref", [(nl.sum, np.sum), (nl.max, np.max), (nl.min, np.min),
                                    (nl.mean, np.mean), (nl.prod, np.prod)],
                         ids=["sum", "max", "min", "mean", "prod"])
@pytest.mark.parametrize("axis", [1, 2, (1, 2)])
def test_reduce_free_axes(fn, ref, axis):
    a = rand(16, 5, 7, lo=0.8, hi=1.2)
    np.testing.assert_allclose(reduce_kernel(fn, axis)(a), ref(a, axis=axis), rtol=2e-6)


def test_reduce_keepdims():
    a = rand(128, 300)
    got = reduce_kernel(nl.max, 1, True)(a)
    assert got.shape == (128, 1)
    assert np.array_equal(got, a.max(axis=1, keepdims=True))


def test_reduce_partition_axis():
    a = rand(100, 40)
    np.testing.assert_allclose(reduce_kernel(nl.sum, 0)(a), a.sum(axis=0, keepdims=True), rtol=1e-5,
                               atol=1e-5)


@nki.jit
def psum_bank(a, b):
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    ps = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
    nl.store(out, ps)
    return out


def test_matmul_full_psum_bank():
    a, b = rand(128, 128), rand(128, 512)
    np.testing.assert_allclose(psum_bank(a, b), a.T @ b, rtol=1e-4, atol=1e-4)


@nki.jit
def isa_ops(a, b):
    out = nl.ndarray((6,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    nl.store(out[0], nisa.tensor_tensor(x, y, op=nl.multiply))
    nl.store(out[1], nisa.tensor_scalar(x, op0=nl.multiply, operand0=3.0, op1=nl.add, operand1=1.0))
    nl.store(out[2], nisa.activation(op=nl.exp, data=x, scale=0.5, bias=0.0))
    nl.store(out[3], nisa.tensor_copy(x, engine=nisa.engine.gpsimd))
    col = nisa.tensor_reduce(nl.add, x, axis=1, keepdims=True)
    nl.store(out[4], nisa.tensor_scalar(y, op0=nl.subtract, operand0=col, reverse0=True))
    nl.store(out[5], nisa.scalar_tensor_tensor(data=x, op0=nl.multiply, operand0=2.0,
                                               op1=nl.add, operand1=y))
    return out


def test_isa_elementwise():
    a, b = rand(32, 48), rand(32, 48)
    got = isa_ops(a, b)
    np.testing.assert_allclose(got[0], a * b)
    np.testing.assert_allclose(got[1], a * 3 + 1, rtol=1e-6)
    np.testing.assert_allclose(got[2], np.exp(a * 0.5), rtol=2e-6)
    assert np.array_equal(got[3], a)
    np.testing.assert_allclose(got[4], a.sum(axis=1, keepdims=True) - b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[5], a * 2 + b, rtol=1e-6)


@nki.jit
def iota_select(a):
    out = nl.ndarray((2,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:a.shape[0], 0:a.shape[1]]
    nl.store(out[0], nisa.iota(i_p * 100 + i_f, dtype=nl.float32))
    t = nl.load(a)
    nl.store(out[1], nisa.affine_select(i_p - i_f >= 0, t, -1e9))
    return out


def test_iota_and_causal_mask():
    a = rand(64, 64)
    got = iota_select(a)
    p, f = np.mgrid[0:64, 0:64]
    assert np.array_equal(got[0], (p * 100 + f).astype(np.float32))
    assert np.array_equal(got[1], np.where(p >= f, a, np.float32(-1e9)))


@nki.jit
def bn_kernel(a):
    out = nl.ndarray((a.shape[0], 2), dtype=nl.float32, buffer=nl.shared_hbm)
    st = nisa.bn_stats(nl.load(a))
    nl.store(out, nisa.bn_aggr(st))
    return out


def test_bn_stats_aggr():
    a = rand(128, 500)
    got = bn_kernel(a)
    np.testing.assert_allclose(got[:, 0], a.mean(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 1], a.var(axis=1), rtol=1e-4, atol=1e-6)


@nki.jit
def masked_store(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n = a.shape[0]
    for i in nl.affine_range((n + 127) // 128):
        i_p = i * 128 + nl.arange(128)[:, None]
        i_f = nl.arange(a.shape[1])[None, :]
        t = nl.load(a[i_p, i_f], mask=(i_p < n))
        nl.store(out[i_p, i_f], value=nl.exp(t), mask=(i_p < n))
    return out


def test_masked_partial_tiles():
    a = rand(300, 20)
    np.testing.assert_allclose(masked_store(a), np.exp(a), rtol=2e-6)


@nki.jit
def dtype_roundtrip(a):
    out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.load(a, dtype=nl.bfloat16)
    nl.store(out, nl.multiply(t, 2.0))
    return out


def test_bfloat16_host_form():
    a = rand(16, 40)
    got = dtype_roundtrip(a)
    # a NumPy bfloat16 array (HostArray bit patterns without host dtypes)
    assert getattr(got, "nki_dtype", got.dtype) == nl.bfloat16
    ref = nki.to_float32(nki.bf16(a)) * 2
    assert np.array_equal(nki.to_float32(got), ref)


@nki.jit
def bf16_matmul(a, b):
    out = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.matmul(nl.load(a), nl.load(b), transpose_x=True))
    return out


def test_bfloat16_inputs():
    a, b = nki.bf16(rand(128, 64)), nki.bf16(rand(128, 96))
    ref = nki.to_float32(a).T @ nki.to_float32(b)
    np.testing.assert_allclose(bf16_matmul(a, b), ref, rtol=1e-5, atol=1e-5)


@nki.jit
def int_kernel(a):
    out = nl.ndarray(a.shape, dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, nl.add(t, t))
    return out


def test_int32():
    a = rng.integers(-1000, 1000, (8, 9)).astype(np.int32)
    assert np.array_equal(int_kernel(a), a + a)


traced = []


@nki.jit
def cached(a):
    traced.append(1)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(a) + 1.0)
    return out


def test_kernel_cache():
    traced.clear()
    a = rand(4, 4)
    cached(a)
    cached(a + 1)
    assert len(traced) == 1
    cached(rand(4, 5))
    assert len(traced) == 2


def test_spmd_program_ids():
    @nki.jit
    def ids(a):
        out = nl.ndarray((nl.num_programs(0) * 2, 3), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        row = nl.program_id(0) * 2
        nl.store(out[row:row + 2, :], t * float(nl.program_id(0)))
        return out
    a = rand(2, 3)
    got = ids[3](a)
    assert np.array_equal(got, np.concatenate([a * 0, a * 1, a * 2]))


def test_simulate_and_benchmark(capsys):
    def plain(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) * 3.0)
        return out
    a = rand(8, 8)
    assert np.array_equal(nki.simulate(plain)(a), a * 3)
    assert np.array_equal(nki.simulate_kernel(nki.jit(plain), a), a * 3)
    b = nki.benchmark(warmup=1, iters=3)(plain)
    assert np.array_equal(b(a), a * 3)
    res = b.benchmark_result
    p50 = res.nc_latency.get_latency_percentile(50)
    # the estimated device time, microseconds, the same for every iteration
    assert p50 == res.nc_latency.get_latency_percentile(99) == res.device_time_estimate
    assert 1.3 < p50 < 100 and p50 < res.host_latency_us
    assert "estimated device latency" in capsys.readouterr().out
    # a jit kernel benchmarked as the vendor's tutorials do: the same estimate
    again = nki.benchmark(warmup=5, iters=10)(nki.jit(plain))
    assert np.array_equal(again(a), a * 3)
    assert again.benchmark_result.nc_latency.get_latency_percentile(99) == p50


@nki.jit
def more_ops(a, c):
    out = nl.ndarray((6,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    cond = nl.load(c)
    nl.store(out[0], nl.floor(t))
    nl.store(out[1], nl.ceil(t))
    nl.store(out[2], nl.where(cond, t, -5.0))
    nl.store(out[3], nl.tan(t))
    nl.store(out[4], nl.logical_not(cond))
    nl.store(out[5], nl.var(t, axis=1, keepdims=True).broadcast_to(a.shape))
    return out


def test_more_elementwise():
    a = rand(32, 17, lo=-1.4, hi=1.4)
    c = (rng.uniform(0, 1, (32, 17)) > 0.5).astype(np.float32)
    got = more_ops(a, c)
    assert np.array_equal(got[0], np.floor(a))
    assert np.array_equal(got[1], np.ceil(a))
    assert np.array_equal(got[2], np.where(c != 0, a, np.float32(-5)))
    np.testing.assert_allclose(got[3], np.tan(a), rtol=1e-5, atol=1e-6)
    assert np.array_equal(got[4], (c == 0).astype(np.float32))
    np.testing.assert_allclose(got[5], np.broadcast_to(a.var(axis=1, keepdims=True), a.shape),
                               rtol=1e-5, atol=1e-6)


@nki.jit
def random_ops(a):
    out = nl.ndarray((2,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out[0], nl.rand(a.shape))
    nl.store(out[1], nl.dropout(nl.load(a), 0.5))
    return out


def test_random_and_dropout_repeat():
    a = rand(64, 64, lo=1.0, hi=2.0)
    r1, r2 = random_ops(a), random_ops(a)
    assert r1.tobytes() == r2.tobytes()
    assert 0 <= r1[0].min() and r1[0].max() < 1 and 0.3 < r1[0].mean() < 0.7
    kept = r1[1] != 0
    assert np.array_equal(r1[1][kept], a[kept]) and 0.3 < kept.mean() < 0.7


@nki.jit
def kept_results(a, b):
    out = nl.ndarray((3,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    u = nl.exp(nl.load(a))
    t[...] = u                      # u stays in use below: a copy, not a retarget
    acc = nl.zeros(a.shape, nl.float32, buffer=nl.psum)
    m = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)
    acc += m                        # m stays in use below
    nl.store(out[0], u)
    nl.store(out[1], t)
    nl.store(out[2], nl.add(acc, m))
    return out


def test_named_results_are_not_moved():
    a, b = rand(16, 16), rand(16, 16)
    got = kept_results(a, b)
    np.testing.assert_allclose(got[0], np.exp(a), rtol=2e-6)
    assert np.array_equal(got[0], got[1])
    np.testing.assert_allclose(got[2], 2 * (a.T @ b), rtol=1e-5, atol=1e-5)


@nki.jit
def back_to_back_matmuls(lhsT, rhs):
    K, M = lhsT.shape
    out = nl.ndarray((M, rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    ls, rs = [], []
    for k in nl.affine_range(K // 128):
        lt = nl.ndarray((128, M), dtype=lhsT.dtype, buffer=nl.sbuf)
        rt = nl.ndarray((128, rhs.shape[1]), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=lt, src=lhsT[k * 128:(k + 1) * 128, :])
        nisa.dma_copy(dst=rt, src=rhs[k * 128:(k + 1) * 128, :])
        ls.append(lt)
        rs.append(rt)
    ps = nl.ndarray((M, rhs.shape[1]), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        nisa.nc_matmul(ps, ls[k], rs[k])          # current positional form: dst first
    sb = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(sb, ps)
    nisa.dma_copy(out, sb)
    return out


def test_matmuls_back_to_back_accumulate():
    lhsT, rhs = rand(512, 128), rand(512, 256)
    np.testing.assert_allclose(back_to_back_matmuls(lhsT, rhs), lhsT.T @ rhs, rtol=1e-4, atol=1e-4)


@nki.jit
def isa_more(a, b):
    out = nl.ndarray((4, a.shape[0], 8), dtype=nl.float32, buffer=nl.shared_hbm)
    x, y = nl.load(a), nl.load(b)
    top = nisa.max8(x)
    idx = nisa.nc_find_index8(x, top)
    nl.store(out[0], top)
    nl.store(out[1], nl.copy(idx, dtype=nl.float32))
    res = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_reduce(data=x, op0=nl.multiply, operand0=2.0, reduce_op=nl.add, reduce_res=res)
    nl.store(out[2], res.broadcast_to((a.shape[0], 8)))
    sel = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=sel, src=y)
    nisa.tensor_copy_predicated(dst=sel, src=x, predicate=nl.greater(x, y))
    nl.store(out[3], sel[:, 0:8])
    return out


def test_isa_selection_ops():
    a, b = rand(16, 40), rand(16, 40)
    got = isa_more(a, b)
    order = np.argsort(-a, axis=1, kind="stable")[:, :8]
    assert np.array_equal(got[0], np.take_along_axis(a, order, axis=1))
    assert np.array_equal(got[1], order.astype(np.float32))
    np.testing.assert_allclose(got[2], np.repeat((2 * a).sum(axis=1, keepdims=True), 8, axis=1),
                               rtol=1e-5)
    assert np.array_equal(got[3], np.maximum(a, b)[:, 0:8])


@nki.jit
def dma_compute_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_compute(out, [a, b], scales=[2.0, -1.0], reduce_op=nl.add)
    return out


def test_dma_compute():
    a, b = rand(8, 8), rand(8, 8)
    np.testing.assert_allclose(dma_compute_kernel(a, b), 2 * a - b, rtol=1e-6, atol=1e-6)


def test_static_cast_host():
    x = rand(3, 3)
    h = nl.static_cast(x, nl.bfloat16)
    assert getattr(h, "nki_dtype", h.dtype) == nl.bfloat16
    assert np.array_equal(nki.to_float32(h), nki.to_float32(nki.bf16(x)))
    assert nl.static_cast(x, nl.float16).dtype == np.float16


@nki.jit
def add_two_cores(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    r = nl.program_id(0) * 128
    c = nl.program_id(1) * 256
    t = nl.load(a[r:r + 128, c:c + 256]) + nl.load(b[r:r + 128, c:c + 256])
    nl.store(out[r:r + 128, c:c + 256], value=t)
    return out


def test_spmd_dim_over_two_cores():
    a, b = rand(512, 512), rand(512, 512)
    got = add_two_cores[nl.spmd_dim(2, nl.nc(2)), 2](a, b)
    assert np.array_equal(got, a + b)
    comp = add_two_cores[nl.spmd_dim(2, nl.nc(2)), 2].compile((a, b), {})
    from nki import _runtime
    assert comp.ncores == (2 if _runtime.machine_lnc() >= 2 else 1)


def test_keyword_arguments_in_any_order():
    @nki.jit
    def sub(x, y):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(x) - nl.load(y))
        return out
    a, b = rand(4, 4), rand(4, 4)
    assert np.array_equal(sub(y=b, x=a), a - b)
    assert np.array_equal(sub(a, y=b), a - b)


@pytest.mark.parametrize("dt", [nl.float16, nl.bfloat16, nl.float8_e4m3, nl.float8_e5m2, nl.tfloat32,
                                nl.int8, nl.uint8, nl.int16, nl.int32],
                         ids=lambda d: getattr(d, "name", str(d)))
def test_dtype_round_trip_through_tiles(dt):
    @nki.jit
    def through(a):
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a, dtype=dt)              # DMA cast into a tile of dt
        u = nl.copy(t, dtype=nl.float32)      # engine conversion back
        nl.store(out, u)
        return out
    a = np.array([[0.5, 1.0, 2.0, -4.0, 0.0, 3.0, -1.5, 8.0]] * 4, dtype=np.float32)
    if dt in (nl.int8, nl.int16, nl.int32, nl.uint8):
        a = np.abs(np.round(a))
    assert np.array_equal(through(a), a)


def test_bool_names_the_boolean_dtype():
    # nl.bool is what the NKI Library's dtype helpers return for 'bool'
    assert nl.bool is nl.bool_ and nl.bool == np.dtype(bool)
    from nki.language import dtypes
    assert dtypes.bool is nl.bool_ and "bool" not in dtypes.__all__

    @nki.jit
    def greater(a, b):
        out = nl.ndarray(a.shape, dtype=nl.bool, buffer=nl.shared_hbm)
        nl.store(out, nl.greater(nl.load(a), nl.load(b), dtype=nl.bool))
        return out
    a, b = rand(8, 16), rand(8, 16)
    got = greater(a, b)
    assert got.dtype == np.bool_ and np.array_equal(got, a > b)


@nki.jit
def cumsum(a):
    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, nisa.tensor_scalar_cumulative(t, op0=nl.multiply, op1=nl.add, imm0=1.0))
    return out


def test_cumulative_sum():
    a = rand(16, 50)
    np.testing.assert_allclose(cumsum(a), np.cumsum(a, axis=1, dtype=np.float32), rtol=1e-5, atol=1e-5)


@nki.jit
def chained_matmul(a, b, c):
    out = nl.ndarray((a.shape[1], c.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    ab = nl.matmul(nl.load(a), nl.load(b), transpose_x=True)      # [M, N] in PSUM
    abt = nl.transpose(nl.copy(ab))                               # [N, M] in PSUM
    nl.store(out, nl.matmul(abt, nl.load(c), transpose_x=True))   # PSUM operand copied to SBUF
    return out


def test_matmul_of_psum_results():
    a, b, c = rand(32, 16), rand(32, 24), rand(24, 8)
    ref = (a.T @ b) @ c
    np.testing.assert_allclose(chained_matmul(a, b, c), ref, rtol=1e-4, atol=1e-4)


@nki.jit
def const_and_reshape(a):
    out = nl.ndarray((a.shape[0], 4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    w = nl.shared_constant(np.arange(32, dtype=np.float32).reshape(1, 32))
    wt = nl.load(w).broadcast_to((a.shape[0], 32))
    t = nl.load(a) * wt
    nl.store(out, t.reshape((a.shape[0], 4, 8)))
    return out


def test_shared_constant_and_tile_reshape():
    a = rand(16, 32)
    ref = (a * np.arange(32, dtype=np.float32)).reshape(16, 4, 8)
    assert np.array_equal(const_and_reshape(a), ref)


@nki.jit
def reuse_under_pressure(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    n = a.shape[1] // 8192
    for i in nl.affine_range(n):
        t = nl.load(a[:, i * 8192:(i + 1) * 8192])       # 32 KiB per partition
        u = nl.exp(t)                                     # another 32 KiB
        nl.store(out[:, i * 8192:(i + 1) * 8192], value=u * 2.0)
    return out


def test_sbuf_reuse_under_pressure():
    # 12 iterations x 96 KiB of tiles per partition: far more than SBUF
    # (192 to 256 KiB by generation), so freed tiles are reused; the race
    # checker watches it
    a = rand(4, 12 * 8192, lo=-1, hi=1)
    got = reuse_under_pressure(a)
    np.testing.assert_allclose(got, np.exp(a) * 2, rtol=2e-6)
    alloc = reuse_under_pressure.last.tracer.alloc
    assert alloc.high["sbuf"] <= alloc.size["sbuf"] == nl.tile_size.total_available_sbuf_size


@nki.jit
def arg_kernel(a):
    out = nl.ndarray((2, a.shape[0], 1), dtype=nl.uint32, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out[0], nl.argmax(t, axis=1))
    nl.store(out[1], nl.argmin(t, axis=1))
    return out


def test_argmax_argmin():
    a = rand(32, 77)
    a[3, 10] = a[3, 20] = 9.0          # ties: the first occurrence
    got = arg_kernel(a)
    assert np.array_equal(got[0, :, 0], np.argmax(a, axis=1))
    assert np.array_equal(got[1, :, 0], np.argmin(a, axis=1))
