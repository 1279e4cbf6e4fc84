"""nki_softmax.py: an NKI kernel (row softmax, tiled over 128 rows) run on
trnemu through the Python front end, checked against NumPy.

    build/tools/trnemu exec -- /usr/bin/python3 examples/nki_softmax.py
"""
import numpy as np

import nki
import nki.language as nl


@nki.jit
def softmax_rows(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[0] // nl.tile_size.pmax):
        rows = slice(i * 128, (i + 1) * 128)
        t = nl.load(x[rows, :])
        e = nl.exp(t - nl.max(t, axis=1, keepdims=True))
        nl.store(out[rows, :], value=e / nl.sum(e, axis=1, keepdims=True))
    return out


if __name__ == "__main__":
    x = np.random.default_rng(0).standard_normal((512, 1024)).astype(np.float32)
    y = softmax_rows(x)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    print("max abs error vs NumPy: %.3g" % np.abs(y - ref).max())
    print("nki_softmax: ok" if np.allclose(y, ref, rtol=1e-5, atol=1e-7) else "nki_softmax: MISMATCH")
