"""nki.typing: type names for kernel annotations (`tensor`)."""
from ._core import NkiTensor as tensor  # noqa: F401

__all__ = ["tensor"]
