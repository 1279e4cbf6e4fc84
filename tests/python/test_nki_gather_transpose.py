"""test_nki_gather_transpose.py: nisa.dma_transpose of an indexed HBM view
(ap(vector_offset=)), the vendor's gather-transpose, against NumPy: the
rows named by the index tile are gathered, then permuted. The NKI
Library's attention_tkg loads block-KV K caches this way (a 4-D view of
[blocks, 1, block_len, d] with axes (3, 1, 2, 0)); trnemu used to drop the
index and transpose blocks 0, 1, 2, ... instead."""
import numpy as np
import pytest

import nki
import nki.isa as nisa
import nki.language as nl


def test_4d_block_gather_transpose_as_attention_tkg():
    NB, BL, D, P = 40, 4, 8, 16
    rng = np.random.default_rng(7)
    cache = rng.standard_normal((NB, BL, D)).astype(np.float32)
    blocks = rng.permutation(NB)[:P].astype(np.uint32).reshape(P, 1)

    @nki.jit
    def k(cache, blocks):
        idx = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=blocks)
        c4 = cache.reshape((NB, 1, BL, D))
        t = nl.ndarray((D, 1, BL, P), dtype=cache.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=c4.ap([[BL * D, P], [1, 1], [D, BL], [1, D]], offset=0,
                                            vector_offset=idx, indirect_dim=0),
                           axes=(3, 1, 2, 0))
        out = nl.ndarray((D, BL * P), dtype=cache.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t.reshape((D, BL * P)))
        return out
    got = k(cache, blocks)
    # dst[d, 0, pos, i] = cache[blocks[i], pos, d]
    want = cache[blocks[:, 0]].transpose(2, 1, 0).reshape(D, BL * P)
    np.testing.assert_array_equal(got, want)


def test_2d_gather_transpose_with_a_two_column_index():
    """indices [P, 2]: row a is index[a % P, a // P] (column-major), as the
    NKI reference's dma_transpose says."""
    R, F, P = 64, 8, 16
    src = np.arange(R * F, dtype=np.float32).reshape(R, F)
    ix = ((np.arange(2 * P) * 7 + 3) % R).astype(np.uint32).reshape(2, P).T.copy()

    @nki.jit
    def k(src, ix):
        idx = nl.ndarray((P, 2), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ix)
        t = nl.ndarray((F, 2 * P), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=src.ap([[F, 2 * P], [1, F]], vector_offset=idx,
                                             indirect_dim=0), axes=(1, 0))
        out = nl.ndarray((F, 2 * P), dtype=src.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    np.testing.assert_array_equal(k(src, ix), src[ix.T.flatten()].T)


def test_transpose_of_a_scalar_offset_view():
    """ap(scalar_offset=s, indirect_dim=0): the whole pattern moves by s rows
    before the transpose (the index used to be dropped here too)."""
    R, F, P = 12, 8, 4

    @nki.jit
    def k(src, s):
        sh = nl.ndarray((1, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=sh, src=s)
        t = nl.ndarray((F, P), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=src.ap([[F, P], [1, F]], offset=0, scalar_offset=sh,
                                             indirect_dim=0))
        out = nl.ndarray((F, P), dtype=src.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    src = np.arange(R * F, dtype=np.float32).reshape(R, F)
    np.testing.assert_array_equal(k(src, np.array([[5]], np.uint32)), src[5:5 + P].T)


def test_too_few_indices_name_the_line():
    @nki.jit
    def k(src, ix):
        idx = nl.ndarray((4, 1), dtype=nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=idx, src=ix)
        t = nl.ndarray((8, 16), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_transpose(dst=t, src=src.ap([[8, 16], [1, 8]], vector_offset=idx,  # FEW
                                             indirect_dim=0), axes=(1, 0))
        return src
    with pytest.raises(nki.NKIError, match=r"test_nki_gather_transpose.py:\d+: dma_transpose: "
                                           r"the index tile \(4, 1\) holds 4 indices"):
        k(np.zeros((32, 8), np.float32), np.zeros((4, 1), np.uint32))
