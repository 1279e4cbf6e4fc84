"""neuronxcc.nki: the legacy spelling of trnemu's nki package."""
import sys as _sys

import nki as _nki
import nki.typing  # noqa: F401
from nki import (jit, baremetal, benchmark, simulate, simulate_kernel, language, isa,  # noqa: F401
                 NKIError, bf16, to_float32)

_sys.modules[__name__ + ".language"] = _nki.language
_sys.modules[__name__ + ".isa"] = _nki.isa
_sys.modules[__name__ + ".typing"] = _nki.typing
typing = _nki.typing

__all__ = ["jit", "baremetal", "benchmark", "simulate", "simulate_kernel", "language", "isa",
           "typing", "NKIError", "bf16", "to_float32"]
