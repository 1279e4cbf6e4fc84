"""_core/context.py: what every part of the tracer shares: the machine
limits the front end allocates against, the NKIError exception, the
tracer of the kernel being traced (one per thread) and the kernel source
line that errors name."""
import os
import sys
import threading

ENGINES = ("pe", "act", "pool", "dve", "sp")
SBUF_BYTES = 192 * 1024      # per partition, NeuronCore-v2 (the smallest)
# SBUF bytes per partition by NeuronCore generation (docs/isa.md, "Memories")
SBUF_BYTES_BY_GEN = {2: 192 * 1024, 3: 224 * 1024, 4: 256 * 1024}


def sbuf_bytes(gen):
    """SBUF bytes per partition of a NeuronCore generation."""
    return SBUF_BYTES_BY_GEN.get(gen, SBUF_BYTES)
PSUM_BYTES = 16 * 1024       # per partition
PSUM_BANK = 2048             # bytes per partition of one PSUM bank
NUM_PARTITIONS = 128


def sbuf_bytes(gen):
    """SBUF bytes per partition of a NeuronCore generation (as the emulated
    cores have, emu/isa/isa.h): 192 KiB on v2, 224 KiB on v3, 256 KiB on v4."""
    return 256 * 1024 if gen >= 4 else 224 * 1024 if gen >= 3 else SBUF_BYTES
# the nki package folder: frames inside it are not kernel lines
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class NKIError(Exception):
    """An NKI kernel failed: trace error, resource overflow or device error.
    The message starts with the kernel source line (FILE:LINE)."""


class NkiValidationError(NKIError):
    """A kernel asks for what the hardware cannot do (nki.isa's name): a
    tile over 128 partitions, a matmul operand over the Tensor Engine's
    sizes, a tile that does not fit SBUF or PSUM, a NeuronCore-v4 type or
    instruction on an older core. Also an NKIError naming the line."""


class NKIIndexError(NKIError, IndexError):
    """An access outside a tensor: an index found out of bounds while
    tracing, or an out-of-bounds access the execution reported (as the
    vendor's simulator, it is also an IndexError)."""


_tls = threading.local()


def current():
    """The tracer of the kernel being traced, or an error outside one."""
    tr = getattr(_tls, "tracer", None)
    if tr is None:
        raise NKIError("NKI calls work only inside a kernel run by nki.jit "
                       "(or simulate/baremetal/benchmark)")
    return tr


_outside = {}   # absolute file name -> whether it is outside the nki package


def _is_user_file(fn):
    """Whether code of file fn is the user's (not the nki package's)."""
    known = _outside.get(fn)
    if known is None:
        known = not os.path.abspath(fn).startswith(_PKG_DIR) and \
            "neuronxcc" not in fn.split(os.sep)[-3:]
        if os.path.isabs(fn):       # a relative name depends on the working directory
            _outside[fn] = known
    return known


def user_line():
    """FILE:LINE of the innermost frame outside the nki package."""
    f = sys._getframe(1)
    known = _outside.get
    while f is not None:
        fn = f.f_code.co_filename
        user = known(fn)
        if user is None:
            user = _is_user_file(fn)
        if user:
            return "%s:%d" % (fn, f.f_lineno)
        f = f.f_back
    return "<kernel>:0"


class NKIWarning(UserWarning):
    """A kernel that traces but does something the hardware leaves
    undefined (the vendor's simulator warns about the same)."""


_warned = {}   # the warnings registry of warn(): Python's filters show each text once


def warn(msg):
    """A warning naming the kernel line (each text once, under Python's
    default warning filters)."""
    import warnings
    warnings.warn_explicit("%s: %s" % (user_line(), msg), NKIWarning, "nki", 0,
                           registry=_warned)


def fail(msg):
    raise NKIError("%s: %s" % (user_line(), msg))


def fail_hw(msg):
    """A hardware limit the kernel line breaks (NkiValidationError)."""
    raise NkiValidationError("%s: %s" % (user_line(), msg))


def fail_index(msg):
    raise NKIIndexError("%s: %s" % (user_line(), msg))
