#!/usr/bin/python3
"""act_fit.py: the polynomial fits of emu/engines/act_math.c that are not
Chebyshev interpolants: near-minimax (Lawson's iteratively reweighted least
squares on a dense grid) fits of f(t) = sum c_k t^k, relative or absolute
error, the coefficients rounded to binary32 one at a time from the lowest
order up (each rounding followed by a refit of the higher ones). Not part
of the product; run it with /usr/bin/python3 (numpy) to print the tables:

    /usr/bin/python3 tests/tools/act_fit.py softplus
"""
import math
import sys

import numpy as np


def lawson(t, f, w0, deg, fixed, iters=60):
    """Coefficients c[len(fixed)..deg] minimising max |w0 (p(t) - f)|."""
    k0 = len(fixed)
    A = np.vander(t, deg + 1, increasing=True)
    rhs = f - (A[:, :k0] @ np.array(fixed) if k0 else 0.0)
    A = A[:, k0:] * w0[:, None]
    rhs = rhs * w0
    w = np.ones_like(t) / len(t)
    c = None
    for _ in range(iters):
        sw = np.sqrt(w)
        c, *_ = np.linalg.lstsq(A * sw[:, None], rhs * sw, rcond=None)
        e = np.abs(A @ c - rhs)
        w = w * e
        w = w / w.sum()
    return c


def fit32(t, f, deg, rel=True, fixed=()):
    """binary32 coefficients (lowest order first, the first ones given by
    fixed) and the max error seen."""
    w0 = 1.0 / np.abs(f) if rel else np.ones_like(f)
    fixed = list(fixed)
    while len(fixed) <= deg:
        c = lawson(t, f, w0, deg, fixed, iters=200)
        fixed.append(float(np.float32(c[0])))
    c = np.array(fixed)
    p = np.polynomial.polynomial.polyval(t, c)
    return c, np.max(np.abs((p - f) * w0))


def show(name, c, err):
    print(f"{name}: error {err:.3g}; highest order first:")
    print(",\n".join(f"    {float(np.float32(v)):.9e}f" for v in c[::-1]))


def softplus():
    """ln(1 + e) / e on e in [0, 1] (softplus = max(x, 0) + e h(e)), h(0) = 1."""
    e = np.linspace(0, 1, 20001)
    h = np.ones_like(e)
    h[1:] = np.log1p(e[1:]) / e[1:]
    c, err = fit32(e, h, 8, fixed=[1.0])
    show("softplus h, degree 8", c, err)


def erf():
    """erfc(a) on [2, 4] in v = a - 3, absolute error (erf = 1 - Q(v) there)."""
    a = np.linspace(2, 4, 16001)
    f = np.array([math.erfc(v) for v in a])
    for deg in (9, 10):
        c, err = fit32(a - 3, f, deg, rel=False)
        show(f"erfc on [2, 4], degree {deg}", c, err)


def exp2m1():
    """(2^f - 1) / f on f in [-0.52, 0.52] (gelu_apprx_tanh: 2^f - 1 = f P(f)),
    relative error."""
    f = np.linspace(-0.52, 0.52, 20001)
    p = np.full_like(f, math.log(2.0))
    nz = f != 0
    p[nz] = np.expm1(f[nz] * math.log(2.0)) / f[nz]
    c, err = fit32(f, p, 5)
    show("(2^f - 1)/f, degree 5", c, err)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        globals()[name]()
