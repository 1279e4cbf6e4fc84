#!/usr/bin/python3
"""act_fit.py: the polynomial fits of emu/engines/act_math.c that are not
Chebyshev interpolants: near-minimax (Lawson's iteratively reweighted least
squares on a dense grid) fits of f(t) = sum c_k t^k, relative or absolute
error, the coefficients rounded to binary32 one at a time from the lowest
order up (each rounding followed by a refit of the higher ones). Not part
of the product; run it with /usr/bin/python3 (numpy) to print the tables:

    /usr/bin/python3 scripts/act_fit.py softplus
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


def exp2():
    """2^f on f in [-0.51, 0.51] (gelu_apprx_tanh: 2^f = 1 + f P(f), P of
    degree 4), relative error, the constant term 1."""
    f = np.linspace(-0.51, 0.51, 40001)
    c, err = fit32(f, np.exp2(f), 5, fixed=[1.0])
    show("2^f, degree 5", c, err)


def phi_ratio(a):
    """Phi(-a) e^(a^2/2) in double (erfc keeps its relative accuracy far out)."""
    return 0.5 * math.erfc(a / math.sqrt(2.0)) * math.exp(0.5 * a * a)


def gelu_dx_zero():
    """a0 > 0 where Phi(-a) = a phi(a), i.e. gelu_dx(-a0) = 0 (bisection)."""
    lo, hi = 0.5, 1.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if phi_ratio(mid) - mid / math.sqrt(2.0 * math.pi) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


GQ_MBITS = 2  # mantissa bits of v in the piece index (16 pieces)
GQ_DEG = 5  # degree of each piece's polynomial
GQ_OFF = 1.125  # v = |x| + GQ_OFF; puts the zero of gelu_dx mid-piece


def gq_intervals():
    """The 4 << GQ_MBITS pieces of |x| in [0, 14.875): v = |x| + GQ_OFF by
    its exponent (4 octaves) and its top GQ_MBITS mantissa bits; listed by
    the permute index, bits(v) >> (23 - GQ_MBITS) mod the count, with
    their bounds (the first from 0)."""
    per = 1 << GQ_MBITS
    out = [None] * (4 * per)
    for o in range(4):
        for m in range(per):
            lo = max(2.0 ** o * (1 + m / per) - GQ_OFF, 0.0)
            hi = 2.0 ** o * (1 + (m + 1) / per) - GQ_OFF
            out[(per * o + m + 127 * per) % (4 * per)] = (lo, hi)
    return out


def gq_centres():
    """The centre of each piece, as binary32: 0 on the first, the zero a0
    of gelu_dx (|x| = 0.7518) on the piece holding it, the middle on the
    others; |x| - centre is then exact."""
    a0 = gelu_dx_zero()
    cs = []
    for lo, hi in gq_intervals():
        c = 0.0 if lo == 0 else (a0 if lo < a0 < hi else 0.5 * (lo + hi))
        cs.append(float(np.float32(c)))
    return cs


# The envelope's reduction s = -a^2 - n L, with L = 2 ln2 cut to 16 bits
# (so that n L is exact) and no low part: e^(-a^2/2) = 2^n e^(s/2)
# e^(n eps/2), eps = L - 2 ln2, and n = -(a^2 + s)/L, so the last factor is
# e^(-a^2 eps/(2L)) (smooth in a: the pieces take it) times
# e^(-s eps/(2L)) (the polynomial in s takes it).
GQ_L = 45426 / 32768.0
GQ_EPS = GQ_L - 2.0 * math.log(2.0)


def gq_fit(f, deg):
    """Per piece: the binary32 coefficients of a relative fit of f(a)
    e^(-a^2 eps/(2L)) in u = a - c, c the piece's centre; where f(c) is (nearly) zero
    the constant term is fixed to that value rounded (-0 for f(0) = 0), so
    that the sign of a zero and the relative accuracy next to a zero of f
    survive."""
    tabs, errs = [], []
    for (lo, hi), c in zip(gq_intervals(), gq_centres()):
        a = np.linspace(max(lo - 1e-5, 0.0), hi + 1e-5, 3001)
        fa = np.array([f(v) * math.exp(-v * v * GQ_EPS / (2.0 * GQ_L)) for v in a])
        keep = np.abs(fa) > 1e-300
        a, fa = a[keep], fa[keep]
        fixed = ()
        f0 = f(c) * math.exp(-c * c * GQ_EPS / (2.0 * GQ_L))
        if abs(f0) < 1e-6:
            fixed = (float(np.float32(f0)) if c else -0.0,)
        coef, err = fit32(a - c, fa, deg, fixed=fixed)
        tabs.append(coef)
        errs.append(err)
    return tabs, errs


def show_gq(name, tabs, deg):
    for j in range(deg, -1, -1):
        print(f"{name} order {j}:")
        print(", ".join(f"{float(np.float32(t[j])):.9e}f" for t in tabs))


def gelu():
    """gelu = x - G(|x|) or -G(|x|), G(a) = a Phi(-a) = e^(-a^2/2) Q(a): Q of
    degree 5 per piece of gq_intervals, relative error (the table holds
    -Q); then e^(s/2 (1 - eps/L)) on |s| <= 0.7 (s = -a^2 - n L, the
    envelope's reduced argument), degree 5."""
    print("centres:")
    print(",\n".join(f"    {v:.9e}f" for v in gq_centres()))
    tabs, errs = gq_fit(lambda a: -a * phi_ratio(a), GQ_DEG)
    show_gq("-a Phi(-a) e^(a^2/2)", tabs, GQ_DEG)
    print("relative error by piece: " + " ".join(f"{e:.2g}" for e in errs))
    s = np.linspace(-0.7, 0.7, 20001)
    c, err = fit32(s, np.exp(0.5 * s * (1.0 - GQ_EPS / GQ_L)), 5, fixed=[1.0])
    show("e^(s/2 (1 - eps/L)) on |s| <= 0.7, degree 5", c, err)


def gelu_dx():
    """gelu_dx = 1 - H(|x|) or H(|x|), H(a) = Phi(-a) - a phi(a) =
    e^(-a^2/2) D(a): D of degree 5 per piece of gq_intervals, relative
    error (the piece holding the zero a0 of D is centred on it)."""
    a0 = gelu_dx_zero()
    print(f"zero {a0!r} (binary32 {float(np.float32(a0)):.9e})")
    tabs, errs = gq_fit(lambda a: phi_ratio(a) - a / math.sqrt(2.0 * math.pi), GQ_DEG)
    show_gq("D", tabs, GQ_DEG)
    print("relative error by piece: " + " ".join(f"{e:.2g}" for e in errs))


def expm1_q4():
    """(e^r - 1 - r) / r^2 on r in [-0.3466, 0.3466] (silu_dx: e^r - 1 =
    r + r^2 Q(r)), Q of degree 4 with Q(0) = 1/2, relative error."""
    r = np.linspace(-0.3466, 0.3466, 20001)
    q = np.full_like(r, 0.5)
    nz = r != 0
    q[nz] = (np.expm1(r[nz]) - r[nz]) / (r[nz] * r[nz])
    c, err = fit32(r, q, 4, fixed=[0.5])
    show("(e^r - 1 - r)/r^2, degree 4", c, err)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        globals()[name]()
