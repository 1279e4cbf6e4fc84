"""nki.typing: type names for kernel annotations: `tensor` (also as
tensor[128, 512], the shape being documentation) and `mutable_tensor`,
which marks a tensor argument the kernel writes in place."""
from ._core import NkiTensor


class _TensorType(type):
    """Makes tensor[shape] usable in annotations (returns the type itself)."""

    def __getitem__(cls, shape):
        return cls

    def __instancecheck__(cls, obj):
        return isinstance(obj, NkiTensor)


class tensor(metaclass=_TensorType):
    """An NKI tensor (annotation)."""


class mutable_tensor(metaclass=_TensorType):
    """An NKI tensor argument the kernel writes (annotation): its new
    contents come back in the caller's array, as any argument a kernel
    writes does on trnemu."""


__all__ = ["tensor", "mutable_tensor"]
