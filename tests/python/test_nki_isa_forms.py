"""test_nki_isa_forms.py: the current nki.isa call form, destination first
and positional (as the NKI Library writes it), for the calls that also
keep a legacy form: each result against NumPy."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl

rng = np.random.default_rng(17)


def test_positional_dst_first_calls():
    @nki.jit
    def k(a, b):
        P, F = a.shape
        ta = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        tb = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(ta, a)
        nisa.dma_copy(tb, b)
        res = nl.ndarray((P, 8, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor(res[:, 0], ta, tb, nl.add)
        nisa.tensor_scalar(res[:, 1], ta, nl.multiply, 3.0)
        nisa.scalar_tensor_tensor(res[:, 2], ta, nl.multiply, 2.0, nl.subtract, tb)
        nisa.tensor_copy(res[:, 3], tb)
        nisa.activation(res[:, 4], nl.exp, ta)
        nisa.reciprocal(res[:, 5], tb)
        nisa.memset(res[:, 6], 7.0)
        scan = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_tensor_scan(scan, ta, tb, 0.0, nl.multiply, nl.add)
        nisa.tensor_copy(res[:, 7], scan)
        red = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_reduce(red, nl.add, ta, 1, keepdims=True)
        out = nl.ndarray((8, P, F), dtype=nl.float32, buffer=nl.shared_hbm)
        for i in range(8):
            nisa.dma_copy(out[i], res[:, i])
        o2 = nl.ndarray((P, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(o2, red)
        return out, o2
    a = rng.uniform(-1, 1, (8, 16)).astype(np.float32)
    b = rng.uniform(0.5, 2, (8, 16)).astype(np.float32)
    r, red = k(a, b)
    np.testing.assert_allclose(r[0], a + b, rtol=1e-6)
    np.testing.assert_allclose(r[1], a * 3, rtol=1e-6)
    np.testing.assert_allclose(r[2], a * 2 - b, rtol=1e-6)
    np.testing.assert_array_equal(r[3], b)
    np.testing.assert_allclose(r[4], np.exp(a), rtol=1e-6)
    np.testing.assert_allclose(r[5], 1 / b, rtol=1e-6)
    np.testing.assert_array_equal(r[6], 7.0)
    want = np.zeros_like(a)
    acc = np.zeros(8, np.float32)
    for j in range(16):
        acc = acc * a[:, j] + b[:, j]
        want[:, j] = acc
    np.testing.assert_allclose(r[7], want, rtol=1e-5)
    np.testing.assert_allclose(red[:, 0], a.sum(axis=1), rtol=1e-5)


def test_positional_find_index_and_shuffle():
    @nki.jit
    def k(a):
        t = nl.load(a)
        top = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.max8(top, t)
        idx = nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.nc_find_index8(idx, t, top)
        sh = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.sbuf)
        nisa.nc_stream_shuffle(sh, top, list(range(31, -1, -1)))
        o1 = nl.ndarray((32, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
        o2 = nl.ndarray((32, 8), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(o1, idx)
        nl.store(o2, sh)
        return o1, o2
    a = np.stack([rng.permutation(24) for _ in range(32)]).astype(np.float32)
    idx, sh = k(a)
    np.testing.assert_array_equal(idx, np.argsort(-a, axis=1)[:, :8])
    np.testing.assert_array_equal(sh, -np.sort(-a, axis=1)[::-1, :8])


def test_language_functions_as_isa_operators():
    @nki.jit
    def k(a):
        t = nl.load(a)
        r = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        m = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        # |x| reduced with max, as the NKI Library's quantizers write it
        nisa.tensor_scalar_reduce(dst=r, data=t, op0=nl.abs, operand0=0.0, reduce_op=nl.maximum,
                                  reduce_res=m)
        c = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.activation(dst=c, op=nl.copy, data=t, scale=2.0)
        s = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar(dst=s, data=c, op0=nl.rsqrt, operand0=0.0, op1=nl.multiply, operand1=1.0)
        out = nl.ndarray((3,) + a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out[0], r)
        nl.store(out[1], c)
        nl.store(out[2], s)
        mo = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(mo, m)
        return out, mo
    a = rng.uniform(0.25, 2.0, (4, 8)).astype(np.float32) * np.where(rng.random((4, 8)) < 0.5, -1, 1)
    r, m = k(a.astype(np.float32))
    np.testing.assert_array_equal(r[0], np.abs(a))
    np.testing.assert_array_equal(m[:, 0], np.abs(a).max(axis=1))
    np.testing.assert_array_equal(r[1], 2 * a)
    pos = r[1] > 0
    np.testing.assert_allclose(r[2][pos], 1 / np.sqrt(2 * a[pos]), rtol=1e-6)


def test_instruction_handles_and_depends_on():
    seen = {}

    @nki.jit
    def k(a):
        t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        load = nisa.dma_copy(dst=t, src=a)
        u = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        fill = nisa.memset(dst=u, value=1.0, engine=nisa.gpsimd_engine)
        add = nisa.tensor_tensor(dst=u, data1=t, data2=t, op=nl.add, engine=nisa.vector_engine)
        seen["types"] = {type(h).__name__ for h in (load, fill, add)}
        assert add.depends_on(fill, load) is add
        out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        store = nisa.dma_copy(dst=out, src=u)
        store.depends_on(add)
        seen["legacy"] = type(nisa.tensor_copy(t)).__name__      # the legacy form: a tile
        return out
    a = rng.uniform(-1, 1, (4, 8)).astype(np.float32)
    np.testing.assert_array_equal(k(a), 2 * a)
    assert seen == {"types": {"NkiInstruction"}, "legacy": "NkiTensor"}
    lines = k.last.tracer.cores[0].lines
    add_line = [ln for ln in lines if ln.startswith("dve.tensor_tensor")][0]
    assert "wait=pool_done>=" in add_line and "wait=sp_done>=" in add_line


def test_depends_on_adds_a_wait_without_data_dependency():
    @nki.jit
    def k(a):
        x = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.sbuf)
        y = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.sbuf)
        first = nisa.memset(dst=x, value=1.0, engine=nisa.gpsimd_engine)
        second = nisa.memset(dst=y, value=2.0, engine=nisa.vector_engine)
        nisa.tensor_tensor(dst=y, data1=x, data2=y, op=nl.add)
        second.depends_on(first)
        out = nl.ndarray((2, 4), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=y)
        return out
    np.testing.assert_array_equal(k(np.zeros(1, np.float32)), 3.0)
    lines = k.last.tracer.cores[0].lines
    second_line = [ln for ln in lines if ln.startswith("dve.memset")][0]
    assert "wait=pool_done>=1" in second_line, second_line


def test_dma_compute_many_sources():
    srcs = [rng.uniform(-1, 1, (4, 8)).astype(np.float32) for _ in range(9)]
    scales = [float(i + 1) for i in range(9)]

    @nki.jit
    def k(s0, s1, s2, s3, s4, s5, s6, s7, s8):
        ins = [s0, s1, s2, s3, s4, s5, s6, s7, s8]
        out = nl.ndarray(s0.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(out, ins, nl.add, scales=scales)
        mx = nl.ndarray(s0.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_compute(dst=mx, srcs=ins, reduce_op=nl.maximum)
        return out, mx
    out, mx = k(*srcs)
    want = np.zeros_like(srcs[0])
    for s, c in zip(srcs, scales):
        want = want + s * np.float32(c)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mx, np.maximum.reduce(srcs))


@nki.jit
def _dma_compute_indexed(table, idx, base, how):
    """dma_compute with a row-indexed HBM view: scatter RMW into table,
    gather RMW into an SBUF tile, or a gathered source of 3."""
    out = nl.ndarray(base.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    b, ix = nl.load(base), nl.load(idx)
    v = table.ap(pattern=[[table.shape[1], idx.shape[0]], [1, table.shape[1]]], vector_offset=ix,
                 indirect_dim=0)
    o = nl.ndarray(base.shape, dtype=nl.float32, buffer=nl.sbuf)
    if how == "scatter":
        nisa.dma_compute(dst=v, srcs=[v, b], reduce_op=nl.add)
        return table
    if how == "gather":
        nisa.dma_compute(dst=b, srcs=[b, v], reduce_op=nl.add)
        nl.store(out, b)
    elif how == "three":
        nisa.dma_compute(dst=o, srcs=[v, b, b], reduce_op=nl.add, scales=[1.0, 2.0, 1.0])
        nl.store(out, o)
    else:
        nisa.dma_compute(dst=v, srcs=[v, b], reduce_op=nl.add, unique_indices=False)
    return out


def test_dma_compute_with_indexed_rows():
    """The reference's read-modify-write forms (vector_offset): dst[idx] +=
    src (scatter) and dst += src[idx] (gather), and an indexed source among
    three, against NumPy; repeated indices are refused as the reference does."""
    table = rng.uniform(-1, 1, (32, 16)).astype(np.float32)
    idx = np.array([[3], [30], [0], [17], [8], [9]], np.int32)
    base = rng.uniform(-1, 1, (6, 16)).astype(np.float32)
    want = table.copy()
    want[idx[:, 0]] += base
    np.testing.assert_array_equal(np.asarray(_dma_compute_indexed(table.copy(), idx, base,
                                                                  "scatter")), want)
    np.testing.assert_array_equal(_dma_compute_indexed(table, idx, base, "gather"),
                                  base + table[idx[:, 0]])
    np.testing.assert_allclose(_dma_compute_indexed(table, idx, base, "three"),
                               table[idx[:, 0]] + 3 * base, rtol=1e-6, atol=1e-6)
    with pytest.raises(nki.NKIError, match="unique_indices=True"):
        _dma_compute_indexed(table, idx, base, "repeat")


def test_double_row_matmul_on_k_2_x_tiles():
    """perf_mode double_row: [K, 2, M] x [K, 2, N] fp8 tiles, the contraction
    over K and the size-2 dimension (also spelt "double_row_gen3"), with
    and without a dst."""
    @nki.jit
    def k(a, b):
        ta = nl.ndarray(a.shape, dtype=nl.float8_e5m2, buffer=nl.sbuf)
        tb = nl.ndarray(b.shape, dtype=nl.float8_e5m2, buffer=nl.sbuf)
        nisa.dma_copy(ta, a)
        nisa.dma_copy(tb, b)
        ps = nl.ndarray((a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.psum)
        nisa.nc_matmul(ps, ta, tb, perf_mode=nisa.matmul_perf_mode.double_row)
        ps2 = nisa.nc_matmul(ta, tb, perf_mode="double_row_gen3")
        out = nl.ndarray((2, a.shape[2], b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
        for i, p in enumerate((ps, ps2)):
            sb = nl.ndarray(p.shape, dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(sb, p)
            nisa.dma_copy(out[i], sb)
        return out
    a = rng.integers(-3, 4, (128, 2, 5)).astype(np.float32)
    b = rng.integers(-3, 4, (128, 2, 24)).astype(np.float32)
    got = k(a.astype(nl.float8_e5m2), b.astype(nl.float8_e5m2))
    want = np.einsum("kli,klj->ij", a, b)
    np.testing.assert_array_equal(got[0], want)
    np.testing.assert_array_equal(got[1], want)


@nki.jit
def matmul_3d_stationary(a, b):
    """A [K, 1, M] stationary tile (the NKI Library's bwmm_shard_on_I form):
    its free dimensions are flattened."""
    sa = nl.ndarray((64, 1, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=sa, src=a)
    sb = nl.load(b)
    ps = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=ps, stationary=sa, moving=sb)
    out = nl.ndarray((32, 16), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.copy(ps))
    return out


def test_matmul_operand_with_two_free_dimensions():
    rng = np.random.default_rng(0)
    a = rng.integers(-3, 4, (64, 1, 32)).astype(np.float32)
    b = rng.integers(-3, 4, (64, 16)).astype(np.float32)
    np.testing.assert_array_equal(matmul_3d_stationary(a, b), a[:, 0, :].T @ b)
