"""test_nki_views.py: the NkiTensor view methods of the NKI reference:
ap() access patterns (HBM and on chip, offsets, dtype reinterpretation,
indirect rows), view(dtype), permute, slice/select, expand/squeeze,
broadcast, get_pattern and the layout queries, against NumPy."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl


def test_hbm_ap_tile_with_offset():
    M, K, TM, TK, row, col = 16, 24, 4, 8, 5, 9

    @nki.jit
    def k(a):
        t = nl.ndarray((TM, TK), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=[[K, TM], [1, TK]], offset=row * K + col))
        out = nl.ndarray((TM, TK), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = np.arange(M * K, dtype=np.float32).reshape(M, K)
    np.testing.assert_array_equal(k(a), a[row:row + TM, col:col + TK])


def test_sbuf_ap_strided_and_offset():
    P, F = 8, 32

    @nki.jit
    def k(a):
        t = nl.ndarray((P, F), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        # every 4th element of partitions 2..5, starting at column 1
        r = nl.ndarray((4, F // 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=t.ap(pattern=[[F, 4], [4, F // 4]], offset=2 * F + 1))
        out = nl.ndarray((4, F // 4), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out
    a = np.arange(P * F, dtype=np.float32).reshape(P, F)
    np.testing.assert_array_equal(k(a), a[2:6, 1::4])


def test_ap_dtype_reinterpret_and_view():
    @nki.jit
    def k(a):
        # a uint16 [4, 8] read as uint32 pairs [4, 4], then back as uint8 [4, 16]
        t = nl.ndarray((4, 4), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=[[4, 4], [1, 4]], dtype=nl.uint32))
        b = t.view(nl.uint8)
        assert b.shape == (4, 16)
        out = nl.ndarray((4, 16), dtype=nl.uint8, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=b)
        return out
    a = np.arange(32, dtype=np.uint16).reshape(4, 8) * 257
    np.testing.assert_array_equal(k(a), a.view(np.uint8).reshape(4, 16))


def test_permute_slice_select_expand_squeeze_broadcast():
    @nki.jit
    def k(a):
        assert a.permute((0, 2, 1)).shape == (4, 6, 5)
        t = nl.ndarray((4, 5, 6), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        s = t.slice(2, 1, 5).select(1, 3)            # [4, 4]: a[:, 3, 1:5]
        e = s.expand_dim(1)                          # [4, 1, 4]
        assert e.shape == (4, 1, 4) and e.squeeze_dim(1).shape == (4, 4)
        b = e.broadcast(1, 3)                        # [4, 3, 4]
        r = nl.ndarray((4, 3, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=b)
        out = nl.ndarray((4, 3, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=r)
        return out
    a = np.arange(120, dtype=np.float32).reshape(4, 5, 6)
    want = np.broadcast_to(a[:, 3, 1:5][:, None, :], (4, 3, 4))
    np.testing.assert_array_equal(k(a), want)


def test_patterns_and_queries():
    seen = {}

    @nki.jit
    def k(a):
        t = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        seen["sb"] = t.get_pattern()
        seen["sub"] = t[2:4, 3:9:2].get_pattern()
        seen["off"] = t[2:4, 3:9:2].offset
        seen["contig"] = (t.is_contiguous(), t[:, ::2].is_contiguous(), a.is_contiguous())
        seen["size"] = a.size
        seen["strides"] = a.strides
        nisa.memset(dst=t, value=0.0)
        out = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    k(np.zeros((3, 7), np.float32))
    assert seen["sb"] == [[16, 8], [1, 16]]
    assert seen["sub"] == [[16, 2], [2, 3]]
    assert seen["off"] == 2 * 16 + 3
    assert seen["contig"] == (True, False, True)
    assert seen["size"] == 21 and seen["strides"] == (7, 1)


def test_indirect_gather_rows():
    idx = np.array([[5], [0], [7], [2]], dtype=np.uint32)

    @nki.jit
    def k(a, ix):
        i = nl.ndarray((4, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=i, src=ix)
        t = nl.ndarray((4, 6), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=[[6, 4], [1, 6]], vector_offset=i, indirect_dim=0))
        out = nl.ndarray((4, 6), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = np.arange(48, dtype=np.float32).reshape(8, 6)
    np.testing.assert_array_equal(k(a, idx), a[idx[:, 0]])


def test_bad_patterns_name_the_line():
    @nki.jit
    def k(a):
        t = nl.ndarray((8, 16), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=t[0:2, 0:4], src=t.ap(pattern=[[5, 2], [1, 4]]))  # BAD-AP
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_views.py:\d+: the partition stride 5"):
        k(np.zeros((2, 2), np.float32))


def test_ap_of_a_view_takes_the_views_own_row_as_partition_stride():
    """A kernel that builds a pattern from the shape of a view of half a
    wider tile (the NKI Library's TensorView over an ap() view) gives the
    view's own row as the partition stride: one partition, as a stride of
    the tile's row would be."""
    @nki.jit
    def k(a, b):
        out = nl.ndarray((2, 512), dtype=nl.float32, buffer=nl.shared_hbm)
        buf = nl.ndarray((2, 512), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=buf, src=a)
        upper = buf.ap(pattern=[(512, 2), (1, 256)], offset=256)
        v = upper.ap(pattern=[(256, 2), (1, 128)], offset=64)
        nisa.tensor_tensor(dst=v, data1=v, data2=nl.load(b), op=nl.add)
        nisa.dma_copy(dst=out, src=buf)
        return out
    a = np.arange(1024, dtype=np.float32).reshape(2, 512)
    want = a.copy()
    want[:, 320:448] += 1
    np.testing.assert_array_equal(k(a, np.ones((2, 128), np.float32)), want)


def test_hbm_to_hbm_copy_of_many_rows():
    @nki.jit
    def k(a):
        b = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=b, src=a)
        c = nl.ndarray((300, 2), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=c, src=a[:, 1:5:2])
        return b, c
    a = np.arange(300 * 6, dtype=np.float32).reshape(300, 6)
    b, c = k(a)
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(c, a[:, 1:5:2])


def test_tensor_index_gather_and_scatter():
    @nki.jit
    def k(data, idx):
        i_p = nl.arange(6)[:, None]
        i_f = nl.arange(8)[None, :]
        ix = nl.load(idx[i_p])                       # a 1-D tensor read as [6, 1]
        rows = nl.load(data[ix[i_p, 0], i_f])        # gather rows idx[...] of data
        out = nl.ndarray((10, 8), dtype=data.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros((10, 8), dtype=data.dtype))
        nl.store(out[ix[i_p, 0], i_f], value=rows)   # scatter them to the same rows
        return out
    data = np.arange(80, dtype=np.float32).reshape(10, 8)
    idx = np.array([9, 0, 4, 7, 2, 5], np.int32)
    want = np.zeros_like(data)
    want[idx] = data[idx]
    np.testing.assert_array_equal(k(data, idx), want)


def test_transpose_load_of_many_rows():
    @nki.jit
    def k(a):
        t = nl.load_transpose2d(a)
        u = nisa.dma_transpose(a)
        out = nl.ndarray((2,) + t.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out[0], t)
        nl.store(out[1], u)
        return out
    a = np.arange(300 * 16, dtype=np.float32).reshape(300, 16)
    r = k(a)
    np.testing.assert_array_equal(r[0], a.T)
    np.testing.assert_array_equal(r[1], a.T)


def test_integer_index_keeps_the_partition_dim_on_chip():
    seen = {}

    @nki.jit
    def k(a):
        t = nl.ndarray((4, 6), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        seen["sb"] = (t[2].shape, t[2, 3].shape, t[..., 0].shape)
        seen["hbm"] = (a[2].shape, a[2, 3].shape)
        out = nl.ndarray((1, 6), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t[2])
        return out
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(k(a), a[2:3])
    assert seen["sb"] == ((1, 6), (1, 1), (4, 1)) and seen["hbm"] == ((6,), ())


def test_reshape_dim_flatten_rearrange():
    seen = {}

    @nki.jit
    def k(a):
        t = nl.ndarray((4, 24), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        seen["split"] = t.reshape_dim(1, (4, -1)).shape
        seen["flat"] = t.reshape_dim(1, (2, 3, 4)).flatten_dims(1, 2).shape
        r = t.rearrange(("b", ("h", "w")), ("b", "w", "h"), {"h": 4})    # [4, 6, 4]
        o = nl.ndarray((4, 6, 4), dtype=a.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=r)
        out = nl.ndarray((4, 6, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=o)
        return out
    a = np.arange(96, dtype=np.float32).reshape(4, 24)
    np.testing.assert_array_equal(k(a), a.reshape(4, 4, 6).transpose(0, 2, 1))
    assert seen == {"split": (4, 4, 6), "flat": (4, 6, 4)}


def test_vector_select_rows():
    @nki.jit
    def k(a, ix):
        i = nl.load(ix)
        t = nl.ndarray((8, 4, 2), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.vector_select(0, i))
        out = nl.ndarray((8, 4, 2), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = np.arange(5 * 8, dtype=np.float32).reshape(5, 4, 2)
    ix = np.array([[4], [0], [3], [3], [1], [2], [0], [4]], np.int32)
    np.testing.assert_array_equal(k(a, ix), a[ix[:, 0]])


def test_ap_scalar_offset_from_a_tile():
    @nki.jit
    def k(a, r):
        F = a.shape[1]
        row = nl.load(r)                                     # [1, 1] int32: a row known at run time
        t = nl.ndarray((1, F), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=[[F, 1], [1, F]], offset=0, scalar_offset=row,
                                      indirect_dim=0))
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros(a.shape, dtype=a.dtype))
        # write it back one row further down, shifted by the same run-time row along dim 0
        nisa.dma_copy(dst=out.ap(pattern=[[F, 1], [1, F]], offset=F, scalar_offset=row,
                                 indirect_dim=0), src=t)
        return out
    a = np.arange(6 * 5, dtype=np.float32).reshape(6, 5)
    want = np.zeros_like(a)
    want[3] = a[2]
    np.testing.assert_array_equal(k(a, np.array([[2]], np.int32)), want)


def test_ap_scalar_offset_shifting_within_rows():
    """A run-time shift along an inner dimension (not a whole number of the
    pattern's rows), HBM to HBM and HBM to SBUF."""
    @nki.jit
    def k(a, idx, to_sbuf):
        off = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=off, src=idx)
        src = a.ap(pattern=[[8, 6], [1, 4]], offset=48, scalar_offset=off, indirect_dim=2)
        out = nl.ndarray((6, 4), dtype=a.dtype, buffer=nl.shared_hbm)
        if to_sbuf:
            t = nl.ndarray((6, 4), dtype=a.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=src)
            nl.store(out, t)
        else:
            nisa.dma_copy(dst=out, src=src)
        return out
    a = np.arange(4 * 6 * 8, dtype=np.float32).reshape(4, 6, 8)
    for s in (0, 3):
        for to_sbuf in (False, True):
            np.testing.assert_array_equal(k(a, np.array([[s]], np.int32), to_sbuf),
                                          a[1, :, s:s + 4])


def test_select_with_a_run_time_index():
    @nki.jit
    def k(a, i):
        ix = nl.load(i)
        v = a.select(0, ix)                                   # a[i] with i read on the device
        assert v.shape == a.shape[1:]
        t = nl.ndarray(a.shape[1:], dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=v)
        out = nl.ndarray(a.shape[1:], dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    a = np.arange(5 * 3 * 4, dtype=np.float32).reshape(5, 3, 4)
    for r in (0, 3):
        np.testing.assert_array_equal(k(a, np.array([[r]], np.int32)), a[r])


def test_dma_transpose_ranks_3_and_4():
    @nki.jit
    def k(a, b):
        t = nl.ndarray((4, 3, 2), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=a)                       # [2, 3, 4] -> [4, 3, 2]
        u = nl.ndarray((8, 1, 1, 16), dtype=b.dtype, buffer=nl.sbuf)
        # the NKI Library's form: 4-D access patterns with two unit dims
        nisa.dma_transpose(dst=u.ap([[16, 8], [1, 1], [1, 1], [1, 16]]),
                           src=b.ap([[8, 16], [1, 1], [1, 1], [1, 8]]))
        o1 = nl.ndarray((4, 3, 2), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o1, src=t)
        o2 = nl.ndarray((8, 16), dtype=b.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o2, src=u.reshape((8, 16)))
        return o1, o2
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    b = np.arange(128, dtype=np.float32).reshape(16, 8)
    o1, o2 = k(a, b)
    np.testing.assert_array_equal(o1, a.transpose(2, 1, 0))
    np.testing.assert_array_equal(o2, b.T)


def test_indirect_dim_names_a_dimension_of_the_tensor():
    """ap(indirect_dim=k) scales the run-time offset by the stride of the
    tensor's dimension k, whatever the pattern walks (the NKI Library's
    TensorView selects experts this way)."""
    E, H, I = 3, 4, 8
    w = np.arange(E * H * I, dtype=np.float32).reshape(E, H, I)

    @nki.jit
    def k(w, e, rows):
        ex = nl.load(e)                                         # [1, 1]: the expert
        t = nl.ndarray((H, I), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=w.ap([[I, H], [1, I]], offset=0, scalar_offset=ex, indirect_dim=0))
        r = nl.load(rows)                                       # [H, 1]: an expert per row
        u = nl.ndarray((H, I), dtype=w.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=w.ap([[I, H], [1, I]], offset=0, vector_offset=r, indirect_dim=0))
        out = nl.ndarray((2, H, I), dtype=w.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[0], src=t)
        nisa.dma_copy(dst=out[1], src=u)
        return out
    rows = np.array([[2], [0], [1], [2]], np.int32)
    r = k(w, np.array([[2]], np.int32), rows)
    np.testing.assert_array_equal(r[0], w[2])
    # vector_offset: row p of the pattern starts at expert rows[p] (its own offset within is 0)
    want = np.stack([w[rows[p, 0]].reshape(-1)[0:I] for p in range(H)])
    np.testing.assert_array_equal(r[1], want)


def test_vector_offset_ignores_the_patterns_first_stride():
    """ap(vector_offset=v, indirect_dim=0): row r starts at v[r] x the stride
    of the tensor's dimension 0 (here 1, a flat tensor), whatever first
    stride the pattern gives: the NKI Library's router_topk scatters a
    column of k values into a flattened [T * E] tensor this way."""
    P, K, E, TILES = 8, 3, 5, 2

    @nki.jit
    def k(vals, ix):
        out = nl.ndarray((P, E), dtype=vals.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.zeros((P, E), dtype=vals.dtype))
        flat = out.reshape((P * E,))
        idx = nl.ndarray((P, K), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ix)
        v = nl.ndarray((P, TILES, K), dtype=vals.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=v, src=vals)
        for j in range(K):
            col = idx.ap(pattern=[[K, P], [1, 1], [1, 1]], offset=j)
            nisa.dma_copy(dst=flat.ap([[K * TILES, P], [1, 1]], offset=0, vector_offset=col,
                                      indirect_dim=0),
                          src=v.ap([[K * TILES, P], [1, 1]], offset=j + 1 * K))
        return out
    rng = np.random.default_rng(3)
    experts = np.stack([rng.permutation(E)[:K] for _ in range(P)])
    ix = (experts + E * np.arange(P)[:, None]).astype(np.uint32)
    vals = rng.standard_normal((P, TILES, K)).astype(np.float32)
    want = np.zeros(P * E, np.float32)
    for p in range(P):
        want[ix[p]] = vals[p, 1]
    np.testing.assert_array_equal(k(vals, ix), want.reshape(P, E))


def test_scalar_offset_of_any_stride():
    """ap(scalar_offset=s, indirect_dim=k): every element moves by s x the
    stride of dimension k, even when that stride is not a multiple of the
    pattern's first one: a run-time column of a [T, C] tensor (stride 1
    under a row stride of C, the NKI Library's find_nonzero_indices), and
    a run-time dimension-1 index under a permuted pattern (its TensorView)."""
    T, C, N = 8, 6, 2

    @nki.jit
    def k(a, b, c0, i):
        col = nl.load(c0)
        t = nl.ndarray((4, 2, N), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=[[C, 4], [C * 4, 2], [1, N]], offset=0,
                                      scalar_offset=col, indirect_dim=1))
        o1 = nl.ndarray((4, 2, N), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o1, src=t)
        ix = nl.load(i)
        u = nl.ndarray((4, 8), dtype=b.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=u, src=b.ap(pattern=[[16, 4], [1, 8]], offset=0, scalar_offset=ix,
                                      indirect_dim=1))
        o2 = nl.ndarray((4, 8), dtype=b.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=o2, src=u)
        # a scatter shifted the same way: the columns written back one further right
        o3 = nl.ndarray((T, C), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(o3, nl.zeros((T, C), dtype=a.dtype))
        nisa.dma_copy(dst=o3.ap(pattern=[[C, 4], [C * 4, 2], [1, N]], offset=1,
                                scalar_offset=col, indirect_dim=1), src=t)
        return o1, o2, o3
    a = np.arange(T * C, dtype=np.float32).reshape(T, C)
    b = np.arange(4 * 2 * 8, dtype=np.float32).reshape(4, 2, 8)
    for c, i in ((3, 1), (0, 0)):
        o1, o2, o3 = k(a, b, np.array([[c]], np.int32), np.array([[i]], np.int32))
        np.testing.assert_array_equal(o1, a[:, c:c + N].reshape(2, 4, N).transpose(1, 0, 2))
        np.testing.assert_array_equal(o2, b[:, i, :])
        want = np.zeros_like(a)
        want[:, c + 1:c + 1 + N] = a[:, c:c + N]
        np.testing.assert_array_equal(o3, want)


def test_scalar_offset_on_five_unmergeable_dimensions():
    """A scalar offset over 5 pattern dimensions that do not merge moves
    whole rows (its stride a multiple of the first one); any other stride
    is refused by name."""
    a = np.arange(4 * 3 * 4 * 5 * 6, dtype=np.float32).reshape(4, 3, 4, 5, 6)
    pat = [[360, 2], [120, 2], [30, 2], [6, 2], [2, 2]]

    @nki.jit
    def k(a, i):
        ix = nl.load(i)
        t = nl.ndarray((2, 2, 2, 2, 2), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=pat, offset=0, scalar_offset=ix, indirect_dim=0))
        out = nl.ndarray((2, 2, 2, 2, 2), dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    np.testing.assert_array_equal(k(a, np.array([[2]], np.int32)),
                                  a[2:4, 0:2, 0:2, 0:2, 0:4:2])

    @nki.jit
    def bad(a, i):
        ix = nl.load(i)
        t = nl.ndarray((2, 2, 2, 2, 2), dtype=a.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a.ap(pattern=pat, offset=0, scalar_offset=ix, indirect_dim=1))  # BAD
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_views.py:\d+: a run-time offset of stride 120"):
        bad(a, np.array([[1]], np.int32))


def test_ap_takes_one_run_time_offset():
    @nki.jit
    def k(a):
        i = nl.ndarray((4, 1), dtype=nl.int32, buffer=nl.sbuf)
        s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        a.ap(pattern=[[6, 4], [1, 6]], scalar_offset=s, vector_offset=i)   # BOTH
        return a
    with pytest.raises(nki.NKIError, match=r"test_nki_views.py:\d+: ap\(\) takes scalar_offset= or"):
        k(np.zeros((8, 6), np.float32))
