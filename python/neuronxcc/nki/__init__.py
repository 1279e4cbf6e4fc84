"""neuronxcc.nki: the legacy spelling of trnemu's nki package (the same
modules under their older names, and nki.trace: jit in trace mode)."""
import sys as _sys

import nki as _nki
import nki.typing  # noqa: F401
import nki.isa.constants  # noqa: F401
from nki import (jit, baremetal, benchmark, simulate, simulate_kernel, language, isa,  # noqa: F401
                 compiler, collectives, NKIError, bf16, to_float32, tensor, dtype)

for _name in ("language", "isa", "isa.constants", "typing", "compiler", "collectives"):
    _sys.modules[__name__ + "." + _name] = _sys.modules["nki." + _name]
typing = _nki.typing


def trace(func=None, **opts):
    """The legacy nki.trace: nki.jit(mode='trace')."""
    return jit(func, mode="trace", **opts)


__all__ = ["jit", "baremetal", "benchmark", "simulate", "simulate_kernel", "trace", "language",
           "isa", "typing", "compiler", "NKIError", "bf16", "to_float32"]
