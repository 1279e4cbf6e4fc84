#!/usr/bin/env python3
"""gen_layernorm_params.py: write the gamma and beta constants of
examples/layernorm.s as .npy files (float32, shape (1024,)).

Usage: gen_layernorm_params.py OUTDIR

Pure Python (no numpy), deterministic: gamma[i] = 1 + 0.5*sin(i/37),
beta[i] = 0.1*cos(i/53), rounded to float32.
"""
import math
import os
import struct
import sys

N = 1024


def npy_bytes(values):
    """A version 1.0 .npy file of float32 values, laid out as numpy does."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    return (b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") +
            struct.pack("<%df" % len(values), *values))


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    gamma = [1.0 + 0.5 * math.sin(i / 37.0) for i in range(N)]
    beta = [0.1 * math.cos(i / 53.0) for i in range(N)]
    for name, values in (("layernorm_gamma.npy", gamma), ("layernorm_beta.npy", beta)):
        with open(os.path.join(argv[1], name), "wb") as f:
            f.write(npy_bytes(values))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
