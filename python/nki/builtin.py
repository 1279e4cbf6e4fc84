"""nki.builtin: the names NKI provides to every kernel, as one module: the
language and ISA modules, the typing and compiler controls, the tensor
and dtype types. Suites written for the vendor's simulator install it as
the global `builtin` (nki_cpu_simulator.nki.builtin); kernels reach the
same objects through `nki.language` and `nki.isa`."""
from . import compiler, isa, language, typing
from ._core import NKIError, NkiTensor
from ._dtypes import AnyDType as dtype

tensor = NkiTensor

__all__ = ["language", "isa", "typing", "compiler", "tensor", "dtype", "NKIError"]
