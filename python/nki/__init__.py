"""nki: NKI kernels on trnemu.

`@nki.jit` kernels called with NumPy arrays are traced into a trnemu NEFF,
run through trnemu's libnrt.so.1 on the emulated device and return NumPy
arrays. See docs/nki.md for what is supported.
"""
from . import language, isa, typing
from ._core import NKIError, NKIIndexError, NkiTensor
from ._kernel import (jit, baremetal, benchmark, simulate, simulate_kernel, Kernel,
                      HostArray, bf16, to_float32)
from . import compiler, collectives
from ._dtypes import AnyDType as _AnyDType
from ._simulate import cpu_simulate

# annotation names: a kernel's tensor arguments and dtype parameters
tensor = NkiTensor
dtype = _AnyDType

__all__ = ["jit", "baremetal", "benchmark", "simulate", "simulate_kernel", "cpu_simulate",
           "language", "isa", "typing", "compiler", "collectives", "NKIError", "NKIIndexError",
           "Kernel", "bf16", "to_float32", "HostArray", "tensor", "dtype"]
