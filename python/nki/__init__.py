"""nki: NKI kernels on trnemu.

`@nki.jit` kernels called with NumPy arrays are traced into a trnemu NEFF,
run through trnemu's libnrt.so.1 on the emulated device and return NumPy
arrays. See docs/nki.md for what is supported.
"""
try:
    import numpy as _numpy  # noqa: F401  (the one package the front end needs)
except ImportError as _e:  # say which interpreter and what to do, not a deep traceback
    import sys as _sys
    raise ImportError(
        "nki needs NumPy, which %s (Python %d.%d) cannot import (%s); install it for this "
        "interpreter ('%s -m pip install numpy', or on Debian/Ubuntu 'apt install "
        "python3-numpy' for /usr/bin/python3), or run an interpreter that has it"
        % (_sys.executable, _sys.version_info[0], _sys.version_info[1], _e,
           _sys.executable)) from None
from . import language, isa, typing
from ._core import NKIError, NkiTensor
from ._kernel import (jit, baremetal, benchmark, simulate, simulate_kernel, Kernel,
                      HostArray, bf16, to_float32)
from . import compiler
from ._dtypes import AnyDType as _AnyDType
from ._simulate import cpu_simulate

# annotation names: a kernel's tensor arguments and dtype parameters
tensor = NkiTensor
dtype = _AnyDType

__all__ = ["jit", "baremetal", "benchmark", "simulate", "simulate_kernel", "cpu_simulate",
           "language", "isa", "typing", "compiler", "NKIError", "Kernel", "bf16", "to_float32",
           "HostArray", "tensor", "dtype"]
