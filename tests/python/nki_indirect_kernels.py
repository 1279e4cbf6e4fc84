"""nki_indirect_kernels.py: tensor indirection (NkiTensor.indirect) on an
emulated Trainium3, checked against NumPy: gathers on the Vector and
Scalar engines, a scatter, a matmul whose moving operand gathers 32
offsets per group, reductions, scans and activations of gathered columns, an offset outside its tile, a view misused, with the
race checker on.
Run by test_nki_v4.py in a process of its own
(TRNEMU_INSTANCE=trn3.48xlarge); prints OK on success."""
import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


def snake(index, n, g):
    """The offsets an .indirect(index, n) view reads on an engine of group
    g: column i from index[(i // (g*K)) * g + i % g, (i // g) % K]."""
    k = index.shape[1]
    return np.array([index[(i // (g * k)) * g + i % g, (i // g) % k] for i in range(n)])


@nki.jit
def gather_vector(a, idx):
    """40 columns of a, the offsets in a (32, 2) index (two groups of 16)."""
    out = nl.ndarray((128, 40), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    ix = nl.ndarray((32, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    o = nl.ndarray((128, 40), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t.indirect(ix, num_elem=40), engine=nisa.vector_engine)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def exp_scalar(a, idx):
    """exp of the columns idx names (uint16 offsets, every one used), on the
    Scalar engine, into a bf16 tile."""
    out = nl.ndarray((64, 16), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    t = nl.ndarray((64, 48), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    ix = nl.ndarray((16, 1), dtype=nl.uint16, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    o = nl.ndarray((64, 16), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.activation(dst=o, op=nl.exp, data=t.indirect(ix))
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def scatter_add(a, b, idx):
    """a with b + b written to the columns idx names."""
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    s = nl.ndarray((128, 3), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=b)
    ix = nl.ndarray((16, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    nisa.tensor_tensor(dst=t.indirect(ix, num_elem=3), data1=s, data2=s, op=nl.add)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def matmul_gathered(st, mv, idx):
    """st.T @ mv[:, offsets]: 64 moving columns gathered from a (128, 256)
    tile, 32 offsets per group on the Tensor engine."""
    out = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    s = nl.ndarray((128, 64), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=st)
    m = nl.ndarray((128, 256), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=m, src=mv)
    ix = nl.ndarray((32, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    p = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(dst=p, stationary=s, moving=m.indirect(ix))
    o = nl.ndarray((64, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=p)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def other_ops(a, idx):
    """An .indirect() source of tensor_reduce, tensor_scalar,
    tensor_scalar_cumulative, activation_reduce and exponential."""
    outs = []
    t = nl.load(a)
    ix = nl.load(idx)
    v = t.indirect(ix, num_elem=8)
    r1 = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(dst=r1, op=nl.add, data=v, axis=1)
    r2 = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=r2, data=v, op0=nl.multiply, operand0=3.0)
    r3 = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar_cumulative(dst=r3, src=v, op0=nl.multiply, op1=nl.add, imm0=1.0)
    r4 = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
    rr = nl.ndarray((16, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation_reduce(dst=r4, op=nl.exp, data=v, reduce_op=nl.add, reduce_res=rr)
    r5 = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.exponential(dst=r5, src=v, max_value=1.0)
    for r in (r1, r2, r3, r4, rr, r5):
        h = nl.ndarray(r.shape, dtype=r.dtype, buffer=nl.shared_hbm)
        nl.store(h, r)
        outs.append(h)
    return tuple(outs)


def check_other_ops(rng):
    a = rng.uniform(0, 1, (16, 32)).astype(np.float32)
    idx = np.zeros((16, 1), np.int32)
    idx[:8, 0] = [3, 1, 4, 1, 5, 9, 2, 31]
    g = a[:, idx[:8, 0]].astype(np.float64)
    r1, r2, r3, r4, rr, r5 = other_ops(a, idx)
    for got, want in ((r1[:, 0], g.sum(1)), (r2, 3 * g), (r3, np.cumsum(g, 1)),
                      (r4, np.exp(g)), (rr[:, 0], np.exp(g).sum(1)), (r5, np.exp(g - 1))):
        assert np.allclose(got, want, rtol=1e-5), "other_ops"


def bf16(x):
    """x rounded to bfloat16 values (nearest even), as float32."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def check_gathers(rng):
    a = rng.standard_normal((128, 64)).astype(np.float32)
    idx = rng.integers(0, 64, (32, 2)).astype(np.int32)
    got = gather_vector(a, idx)
    assert np.array_equal(got, a[:, snake(idx, 40, 16)]), "gather_vector"
    a2 = rng.standard_normal((64, 48)).astype(np.float32)
    idx2 = rng.permutation(48)[:16].reshape(16, 1).astype(np.uint16)
    got = np.asarray(exp_scalar(a2, idx2), dtype=np.float32)
    ref = bf16(np.exp(a2[:, idx2[:, 0]]))
    assert np.allclose(got, ref, rtol=1e-2, atol=1e-6), "exp_scalar"


def check_scatter(rng):
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 3)).astype(np.float32)
    idx = np.zeros((16, 1), np.int32)
    idx[:3, 0] = [5, 0, 63]
    want = a.copy()
    want[:, [5, 0, 63]] = b + b
    assert np.array_equal(scatter_add(a, b, idx), want), "scatter_add"


def check_matmul(rng):
    st = bf16(rng.standard_normal((128, 64)).astype(np.float32))
    mv = bf16(rng.standard_normal((128, 256)).astype(np.float32))
    idx = rng.integers(0, 256, (32, 2)).astype(np.int32)
    got = matmul_gathered(st.astype(nl.bfloat16), mv.astype(nl.bfloat16), idx)
    ref = st.T.astype(np.float64) @ mv[:, snake(idx, 64, 32)].astype(np.float64)
    assert np.allclose(got, ref, rtol=1e-4, atol=1e-3), "matmul_gathered"


def check_out_of_range():
    idx = np.zeros((32, 2), np.int32)
    idx[3, 1] = 64      # column 19 (partition 3, element 1): past the 64 columns
    try:
        gather_vector(np.zeros((128, 64), np.float32), idx)
    except nki.NKIIndexError as e:   # the run stops with the kernel line and the cause
        msg = str(e)
        assert "nki_indirect_kernels.py" in msg and "the offset 64" in msg, msg
        return
    raise AssertionError("an offset past the tile ran")


@nki.jit
def misuse(a, idx, how):
    """An .indirect() view sliced, or given to an op that takes none."""
    t = nl.ndarray((16, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    ix = nl.ndarray((16, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=idx)
    o = nl.ndarray((16, 2), dtype=nl.float32, buffer=nl.sbuf)
    v = t.indirect(ix, num_elem=4)
    if how == "slice":
        nisa.tensor_copy(dst=o, src=v[:, 0:2])
    else:
        nisa.memset(dst=v, value=0.0)
    return a


def check_misuse():
    a, idx = np.zeros((16, 8), np.float32), np.zeros((16, 1), np.int32)
    for how, want in (("slice", "used as it was made"), ("memset", "memset takes no .indirect()")):
        try:
            misuse(a, idx, how)
        except nki.NKIError as e:
            assert "nki_indirect_kernels.py" in str(e) and want in str(e), str(e)
            continue
        raise AssertionError("misuse %s traced" % how)


def main():
    rng = np.random.default_rng(7)
    check_gathers(rng)
    check_scatter(rng)
    check_matmul(rng)
    check_other_ops(rng)
    check_out_of_range()
    check_misuse()
    print("OK")


if __name__ == "__main__":
    main()
