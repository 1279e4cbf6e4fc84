"""nki.tensor: the tensor type of NKI kernels as a module (`import
nki.tensor`): NkiTensor, the handle a kernel gets for each tensor
argument and creates with nki.language. The attribute `nki.tensor` itself
is the class, the name kernels annotate their arguments with."""
from ._core import NkiTensor

tensor = NkiTensor

__all__ = ["NkiTensor", "tensor"]
