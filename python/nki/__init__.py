"""nki: NKI kernels on trnemu.

`@nki.jit` kernels called with NumPy arrays are traced into a trnemu NEFF,
run through trnemu's libnrt.so.1 on the emulated device and return NumPy
arrays. See docs/nki.md for what is supported.
"""
import sys as _sys
import types as _types

try:
    import numpy as _numpy  # noqa: F401  (the one package the front end needs)
except ImportError as _e:  # say which interpreter and what to do, not a deep traceback
    raise ImportError(
        "nki needs NumPy, which %s (Python %d.%d) cannot import (%s); install it for this "
        "interpreter ('%s -m pip install numpy', or on Debian/Ubuntu 'apt install "
        "python3-numpy' for /usr/bin/python3), or run an interpreter that has it"
        % (_sys.executable, _sys.version_info[0], _sys.version_info[1], _e,
           _sys.executable)) from None
from . import language, isa, typing
from ._core import NKIError, NKIIndexError, NKIWarning, NkiTensor
from ._kernel import (jit, baremetal, benchmark, simulate, simulate_kernel, Kernel,
                      HostArray, bf16, to_float32)
from . import compiler, collectives, builtin
from . import tensor as _tensor_module   # sys.modules["nki.tensor"]: `import nki.tensor`
from ._dtypes import AnyDType as _AnyDType
from ._simulate import cpu_simulate

# annotation names: a kernel's tensor arguments and dtype parameters (the
# attribute nki.tensor is the class; the module of that name stays
# importable through sys.modules)
tensor = NkiTensor
dtype = _AnyDType


def _dtype_names():
    """nki.dtype is also the module of the dtypes (the vendor's
    `import nki.dtype as nt; nt.float8_e4m3`): the annotation type carries
    their names, and `import nki.dtype` / `from nki.dtype import ...` find
    nki.language.dtypes."""
    from .language import dtypes as _names
    for name in _names.__all__:
        setattr(_AnyDType, name, getattr(_names, name))
    _AnyDType.bool = _names.bool
    _sys.modules.setdefault(__name__ + ".dtype", _names)


_dtype_names()


class _NkiPackage(_types.ModuleType):
    """The nki package: importing its submodule nki.tensor (directly or
    through an alias such as nki_cpu_simulator.nki.tensor) leaves the
    attribute nki.tensor the class kernels annotate with."""

    def __setattr__(self, name, value):
        if name == "tensor" and value is _tensor_module:
            return
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _NkiPackage

__all__ = ["jit", "baremetal", "benchmark", "simulate", "simulate_kernel", "cpu_simulate",
           "language", "isa", "typing", "compiler", "collectives", "NKIError", "NKIIndexError", "NKIWarning",
           "builtin", "Kernel", "bf16", "to_float32", "HostArray", "tensor", "dtype"]
