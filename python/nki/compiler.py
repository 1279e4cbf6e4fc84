"""nki.compiler: the per-kernel compiler configuration that nki.jit takes
(CompileConfig, SpecializationConfig, AddressRotation) and the kernel
decorators of the older nki.compiler. trnemu runs the kernel as traced: it
has no compiler passes for these to steer, so each object is checked (an
unknown field is an error) and kept on the kernel; docs/nki.md says what
each one does here."""
from enum import Enum

from ._core import placement
from ._kernel import Kernel


class AddressRotation(Enum):
    """Whether the backend may rotate a tensor's address for a better layout."""
    disabled = 0
    enabled = 1


class _Config:
    """A typed set of options with defaults; unknown names are refused."""
    _defaults = {}

    def __init__(self, **kwargs):
        for k in kwargs:
            if k not in self._defaults:
                raise TypeError("%s has no option %r (options: %s)"
                                % (type(self).__name__, k, ", ".join(sorted(self._defaults))))
        for k, v in self._defaults.items():
            setattr(self, k, kwargs.get(k, v))

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % (k, getattr(self, k)) for k in sorted(self._defaults)))

    def __eq__(self, other):
        return type(self) is type(other) and repr(self) == repr(other)

    def __hash__(self):
        return hash(repr(self))


class CompileConfig(_Config):
    """Per-kernel compile configuration: nki.jit(compile_config=...)."""
    _defaults = {"address_rotation": AddressRotation.disabled, "non_ssa_legalization": False,
                 "dead_code_elim": False, "barrier_check": False, "prefetch_auto": False,
                 "nki_alloc_fallback": True}


class SpecializationConfig(_Config):
    """Per-kernel specialization options: nki.jit(specialization_config=...)."""
    _defaults = {"allow_nested_config_override": False}


def _kernel_flag(name, func, **extra):
    """A decorator that records a compiler directive on a kernel (or on the
    function a later nki.jit wraps)."""
    def mark(f):
        target = f.func if isinstance(f, Kernel) else f
        flags = dict(getattr(target, "_nki_compiler_flags", {}))
        flags[name] = extra or True
        target._nki_compiler_flags = flags
        return f
    return mark if func is None else mark(func)


def skip_middle_end_transformations(func=None):
    """Skip the compiler's middle-end passes: trnemu has none; recorded."""
    return _kernel_flag("skip_middle_end_transformations", func)


def enable_stack_allocator(func=None, log_level=50):
    """Allocate SBUF/PSUM tiles with a stack allocator: trnemu's front end
    always allocates (docs/nki.md); recorded."""
    return _kernel_flag("enable_stack_allocator", func, log_level=log_level)


def force_auto_alloc(func=None):
    """Allocate every tile automatically, ignoring addresses given in the
    kernel: honoured (nl.ndarray(address=...) is then ignored)."""
    return _kernel_flag("force_auto_alloc", func)


def _modulo(base, shape, scale):
    """The modulo allocators' placement of one coordinate: blocks wrap over
    shape (default one tile of each block dim), scaled and offset."""
    def at(idx):
        sh = tuple(shape) if shape else (1,) * len(idx)
        mod = [i % s for i, s in zip(idx, sh)]
        flat = 0
        for m, s in zip(mod, sh):
            flat = flat * s + m
        return flat * scale + base
    return at


class _OnChipBuffer(str):
    """nki.compiler.sbuf / psum: the buffer itself (automatic allocation),
    and the direct allocators of the older API."""

    def auto_alloc(self):
        """Leave the tensor to the front end's allocator."""
        return str(self)

    def alloc(self, func):
        """Place each block where func(block index, partitions, bytes per
        partition) says: (partition, byte) for SBUF, (bank, partition,
        byte) for PSUM."""
        return placement.Placement(str(self), func)


class _Sbuf(_OnChipBuffer):
    def mod_alloc(self, *, base_addr, base_partition=0, num_par_tiles=(), num_free_tiles=()):
        """Blocks placed modulo num_par_tiles partitions tiles and
        num_free_tiles byte tiles from base_partition / base_addr."""
        def func(idx, pdim_size, fdim_size):
            return (_modulo(base_partition, num_par_tiles, pdim_size)(idx),
                    _modulo(base_addr, num_free_tiles, fdim_size)(idx))
        return self.alloc(func)


class _Psum(_OnChipBuffer):
    def mod_alloc(self, *, base_bank, base_addr=0, base_partition=0, num_bank_tiles=(),
                  num_par_tiles=(), num_free_tiles=()):
        """Blocks placed modulo banks, partition tiles and byte tiles."""
        def func(idx, pdim_size, fdim_size):
            return (_modulo(base_bank, num_bank_tiles, 1)(idx),
                    _modulo(base_partition, num_par_tiles, pdim_size)(idx),
                    _modulo(base_addr, num_free_tiles, fdim_size)(idx))
        return self.alloc(func)


sbuf = _Sbuf("sbuf")
psum = _Psum("psum")
