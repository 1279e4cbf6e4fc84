#!/usr/bin/env python3
"""numpy_kernels.py: the softmax and layernorm examples done op by op with
numpy, the way the Python NKI simulator executes a kernel (one array
operation per instruction, each producing a fresh temporary).

Prints one line per kernel: "<name> <seconds per call>" (best of 5 rounds).
"""
import sys
import time

import numpy as np

ROWS, COLS = 128, 1024


def softmax(x):
    negmax = -np.max(x, axis=1, keepdims=True)      # tensor_reduce max, negate
    e = np.exp(x + negmax)                           # activation exp with bias
    s = np.sum(e, axis=1, keepdims=True)             # activation reduce
    r = np.reciprocal(s)                             # reciprocal
    return e * r                                     # tensor_scalar multiply


def layernorm(x, gamma, beta):
    mean = np.mean(x, axis=1, keepdims=True)         # reduce add, scale
    d = x - mean                                     # tensor_scalar subtract
    var = np.mean(d * d, axis=1, keepdims=True)      # square, reduce
    rstd = 1.0 / np.sqrt(var + np.float32(1e-5))     # rsqrt
    return d * rstd * gamma + beta                   # scale and shift


def best(fn, reps):
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return min(times)


def main():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    gamma = rng.standard_normal(COLS, dtype=np.float32)
    beta = rng.standard_normal(COLS, dtype=np.float32)
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    print("softmax %.9f" % best(lambda: softmax(x), reps))
    print("layernorm %.9f" % best(lambda: layernorm(x, gamma, beta), reps))


if __name__ == "__main__":
    main()
