"""_minifloat.py: encoding and decoding of the small float formats (8 bits
and fewer) on NumPy arrays, by their layout: exponent and mantissa widths,
bias, and which special values the format has. Rounding is to nearest,
ties to even (docs/numerics.md gives the rules these follow)."""
import functools

import numpy as np


class Minifloat:
    """One small float format and its code <-> value tables."""

    def __init__(self, name, ebits, mbits, bias, specials):
        self.name = name            # the NKI name, e.g. 'float8_e4m3'
        self.ebits = ebits          # exponent bits
        self.mbits = mbits          # mantissa bits
        self.bias = bias            # exponent bias
        self.specials = specials    # 'ieee' (inf and NaN), 'fn' (NaN only at S.1..1.1..1), 'none'
        self.bits = 1 + ebits + mbits   # bits per value
        self.values = self._table()     # float64 value of each code (NaN for NaN codes)
        pos = self.values[: 1 << (self.bits - 1)]
        self.finite_codes = np.flatnonzero(np.isfinite(pos))   # non-negative finite codes, ascending
        self.finite_values = pos[self.finite_codes]
        self.max = float(self.finite_values[-1])                # largest finite value

    def _decode_one(self, code):
        sign = -1.0 if code >> (self.bits - 1) else 1.0
        e = (code >> self.mbits) & ((1 << self.ebits) - 1)
        m = code & ((1 << self.mbits) - 1)
        emax = (1 << self.ebits) - 1
        if self.specials == "ieee" and e == emax:
            return sign * np.inf if m == 0 else np.nan
        if self.specials == "fn" and e == emax and m == (1 << self.mbits) - 1:
            return np.nan
        if e == 0:
            return sign * m * 2.0 ** (1 - self.bias - self.mbits)
        return sign * (1 + m / (1 << self.mbits)) * 2.0 ** (e - self.bias)

    def _table(self):
        return np.array([self._decode_one(c) for c in range(1 << self.bits)], dtype=np.float64)

    def decode(self, codes):
        """Codes (unsigned integers) -> float32 values."""
        return np.take(self._values32, np.asarray(codes))

    @functools.cached_property
    def _values32(self):
        return self.values.astype(np.float32)

    @functools.cached_property
    def _by_top16(self):
        """The codes of float32 values by their top 16 bits: (when the low
        16 bits are zero, when they are not). Every rounding boundary of a
        format of at most 4 mantissa bits (a midpoint, the overflow edge)
        is such a value with zero low bits, so no boundary lies strictly
        between two of them: the code of any float32 is the one of its
        top 16 bits, exact or just above (a tie is decided at the exact
        one). NaNs with a zero top mantissa land in the second table."""
        top = np.arange(1 << 16, dtype=np.uint32) << 16
        with np.errstate(invalid="ignore"):        # the signalling NaNs among them
            exact = self._encode_f64(top.view(np.float32))
            above = self._encode_f64((top | 0x8000).view(np.float32))
        return exact, above

    def nan_code(self, negative):
        """The code a NaN becomes (the quiet NaN of the format, sign kept)."""
        top = 1 << (self.bits - 1)
        if self.specials == "ieee":
            code = (((1 << self.ebits) - 1) << self.mbits) | (1 << (self.mbits - 1))
        elif self.specials == "fn":
            code = top - 1
        else:
            code = self.finite_codes[-1]      # no NaN: the largest value (docs/numerics.md)
        return np.where(negative, code | top, code)

    def encode(self, x):
        """Values -> codes (uint8), round to nearest even; overflow gives
        infinity ('ieee'), NaN ('fn') or the largest value ('none').
        float32 values are looked up by their top 16 bits (_by_top16)."""
        x = np.asarray(x)
        if x.dtype != np.float32 or self.mbits > 4:
            return self._encode_f64(x)
        exact, above = self._by_top16
        u = np.ascontiguousarray(x).view(np.uint32)
        top = u >> 16
        return np.where((u & 0xFFFF) != 0, above[top], exact[top])

    def _encode_f64(self, x):
        """encode by comparison with the format's values, in float64."""
        x = np.asarray(x, dtype=np.float64)
        neg = np.signbit(x)
        a = np.abs(x)
        fv, fc = self.finite_values, self.finite_codes
        hi = np.clip(np.searchsorted(fv, a, side="left"), 1, len(fv) - 1)
        lo = hi - 1
        dlo, dhi = a - fv[lo], fv[hi] - a
        take_hi = (dhi < dlo) | ((dhi == dlo) & (fc[hi] % 2 == 0))
        code = np.where(take_hi, fc[hi], fc[lo])
        ulp = fv[-1] - fv[-2]
        edge = fv[-1] + ulp / 2      # the midpoint rounds up to infinity, or down to the max without one
        over = a >= edge if self.specials == "ieee" else a > edge
        code = np.where(over, self._overflow_code(), code)
        code = np.where(np.isnan(x), self.nan_code(False), code)
        top = 1 << (self.bits - 1)
        code = np.where(neg, code | top, code)
        return code.astype(np.uint8)

    def _overflow_code(self):
        if self.specials == "ieee":
            return ((1 << self.ebits) - 1) << self.mbits
        if self.specials == "fn":
            return (1 << (self.bits - 1)) - 1
        return self.finite_codes[-1]
