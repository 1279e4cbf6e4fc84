"""_kernel.py: nki.jit and the other entry points: trace a kernel with
proxy tensors, assemble it into a NEFF with trnemu's C kernel builder,
load it through libnrt.so.1 and run it on NumPy arrays. Compiled kernels
are cached by source, argument shapes and dtypes, scalar arguments and
launch grid, so a second call neither traces nor loads again."""
import collections
import ctypes
import dataclasses
import enum
import hashlib
import inspect
import itertools
import math
import os
import re
import sys
import threading
import time
import types
import weakref

import numpy as np

from . import _core, _diskcache, _dtypes, _env, _runtime
from ._core import loops
from ._core import NKIError, NkiTensor


class HostArray(np.ndarray):
    """A host array of a dtype NumPy lacks, where neither ml_dtypes nor
    nki._hostdtypes gives one: the bit patterns (uint16 / uint8) with the
    NKI dtype attached."""

    def __array_finalize__(self, obj):
        self.nki_dtype = getattr(obj, "nki_dtype", None)


def bf16(x):
    """float32 values -> a bfloat16 host array (rounded to nearest even)."""
    if isinstance(_dtypes.bfloat16, np.dtype):
        return np.asarray(x, dtype=np.float32).astype(_dtypes.bfloat16)
    a = _dtypes.f32_to_bf16(np.asarray(x, dtype=np.float32)).view(HostArray)
    a.nki_dtype = _dtypes.bfloat16
    return a


def _torch_to_numpy(torch, t):
    """A CPU torch tensor as a NumPy array, sharing its memory where torch
    can (bfloat16 and fp8 tensors through their bits, viewed with the
    host dtype)."""
    if t.device.type != "cpu":
        raise NKIError("%s: a torch tensor on %s was passed; trnemu takes CPU tensors "
                       "(call .cpu() first)" % (_core.user_line(), t.device))
    t = t.detach().resolve_conj().resolve_neg()
    name = str(t.dtype).replace("torch.", "")
    if name not in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        return t.numpy()
    host = _dtypes.host_dtype(name)
    if host is None:
        raise NKIError("%s: a torch.%s tensor needs a NumPy %s dtype (ml_dtypes or trnemu's "
                       "nki._hostdtypes), and there is none" % (_core.user_line(), name, name))
    bits = torch.int16 if t.element_size() == 2 else torch.uint8
    return t.contiguous().view(bits).numpy().view(host)


def _host_args(args, kwargs):
    """The arguments with CPU torch tensors turned into NumPy arrays (torch
    is never imported here: without it loaded there are no tensors)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return args, kwargs

    def conv(a):
        return _torch_to_numpy(torch, a) if isinstance(a, torch.Tensor) else a
    return tuple(conv(a) for a in args), {k: conv(v) for k, v in kwargs.items()}


def to_float32(x):
    """A host array (bfloat16/fp8/fp16/... included) as float32 values."""
    if getattr(x, "nki_dtype", None) is _dtypes.bfloat16:
        return _dtypes.bf16_to_f32(np.asarray(x).view(np.uint16))
    return np.asarray(x, dtype=np.float32)


def _arg_dtype(a):
    dt = getattr(a, "nki_dtype", None)
    if dt is not None:
        return _dtypes.info(dt)
    if a.dtype == np.float64:
        raise NKIError("%s: a float64 array was passed; NKI has no float64 (pass float32)"
                       % _core.user_line())
    try:
        return _dtypes.info(a.dtype)
    except TypeError as e:
        raise NKIError("%s: %s" % (_core.user_line(), e)) from None


_SEM_LINES = [".sem %s_done" % e for e in _core.ENGINES] + loops.sem_lines()
_NRT_EXEC_OOB = 1006                  # NRT_STATUS of an out-of-bounds access
_cache = collections.OrderedDict()   # key -> Compiled, least recently used first
_newest = [None]                      # the Compiled last in _cache (most recently used)
CACHE_MODELS = 64                     # loaded kernels kept; older ones are unloaded
# host memory a loaded kernel holds per instruction: the runtime's decoded
# program, its trace's lines here and what the allocators keep (the
# resident growth, 1.6 to 1.8 KiB: bench/bench_loaded.py, docs/bench.md)
HOST_BYTES_PER_INSN = 1600
BORROW_MAX = 256 * 1024               # largest tensor a call attaches instead of copying (_io_plan)
_sigs = {}


def _memory_held(comp):
    """Bytes a loaded kernel holds: the device memory its load and tensors
    took, and its program on the host."""
    insns = sum(len(ct.lines) for ct in comp.tracer.cores)
    return comp.model.device_bytes + HOST_BYTES_PER_INSN * insns


def _loaded_limit():
    """TRNEMU_NKI_LOADED_MAX_MB in bytes (0: no limit but CACHE_MODELS)."""
    return _env.read_uint("TRNEMU_NKI_LOADED_MAX_MB", 0, 1 << 20, 1024) << 20


def _flat_args(func, args, kwargs):
    """The arguments in the kernel's parameter order (as traced)."""
    if not kwargs:
        return list(args)
    sig = _sigs.get(func)
    if sig is None:
        sig = _sigs[func] = inspect.signature(func)
    return list(sig.bind(*args, **kwargs).arguments.values())


class Compiled:
    """A traced, assembled and loaded kernel."""

    def __init__(self, name, tracer, arg_names, out_specs, ret_shape):
        self.name = name                # kernel name
        self.tracer = tracer            # the trace (for error lines)
        self.arg_names = arg_names      # HBM name per array argument (None: not an array)
        self.out_specs = out_specs      # [(name, shape, dtype info, argument index or None)]
        self.ret_shape = ret_shape      # 'none', 'one', 'tuple', 'list'
        self.ncores = len(tracer.cores)  # physical cores (subgraphs) of the NEFF
        self.model = None               # the loaded _runtime.Model
        self.trace_s = 0.0              # seconds spent tracing
        self.build_s = 0.0              # seconds assembling
        self.load_s = 0.0               # seconds in nrt_load
        self.prefill = []               # argument indices written before execution (in/out tensors)
        self.lock = threading.Lock()    # one call at a time: write, execute, read share the tensors
        self.cached = True              # in the kernel cache (else unloaded after its one call)
        self.whole = frozenset()        # returned tensors every execution overwrites whole
        self.plan = None                # how a call moves its tensors (_io_plan)
        self.spares = {}                # borrowed result name -> the array attached before the current one
        self.prints = []                # (prefix, name, shape, dtype info) per nl.device_print
        self.key = None                 # its kernel cache key
        self.evicted = False            # dropped from the kernel cache (then unloaded)
        self.held = 0                   # memory it holds while loaded (_memory_held)


_code_memo = {}   # code object -> (names it reads, its constants' key): never change
_pinned = {}      # id -> mutable container a cache key names by identity
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))
_ABSENT = object()   # a global name not bound (yet), or an empty closure cell


class _Unkeyable(Exception):
    """A value the traced program may depend on that no key can stand for."""


class _KeyBuild:
    """What one computation of a kernel's source key read: the globals
    (dict, name, value), closure cells (cell, value) and function
    attributes (object, attribute, value) whose identities the key stands
    on, and whether it read a value keyed by its contents that can change
    in place (an array, a mutable dataclass, an NKIObject): then only a
    new computation can tell whether the key changed."""

    def __init__(self):
        self.globals = []         # (globals dict, name, value or _ABSENT)
        self.cells = []           # (cell, contents or _ABSENT)
        self.attrs = []           # (object, attribute name, value)
        self.volatile = False     # a value keyed by mutable contents was read
        self.stable = False       # a key for the disk: the same in every process

    def unchanged(self):
        """Every global, cell and attribute read still holds the same object."""
        for g, n, v in self.globals:
            if g.get(n, _ABSENT) is not v:
                return False
        for c, v in self.cells:
            try:
                if c.cell_contents is not v:
                    return False
            except ValueError:
                if v is not _ABSENT:
                    return False
        for o, n, v in self.attrs:
            if getattr(o, n, _ABSENT) is not v:
                return False
        return True


def _value_key(v, seen, kb):
    """A key for a value a kernel reads (a global, a closure cell, a
    default): equal keys mean the same traced program."""
    if isinstance(v, _SIMPLE):
        return (type(v).__name__, repr(v))
    if isinstance(v, (tuple, frozenset)):
        return (type(v).__name__,) + tuple(_value_key(x, seen, kb) for x in v)
    if isinstance(v, (list, dict, set, bytearray)):
        if kb.stable:             # on disk: what it holds now
            return _contents_key(v, seen, kb)
        # a mutable container counts by identity (a kernel may append to a
        # list as it traces); kept alive so that its id is never reused
        _pinned[id(v)] = v
        return ("mutable", type(v).__name__, id(v))
    if isinstance(v, enum.Enum):
        return ("enum", type(v).__qualname__, v.name)
    if isinstance(v, _dtypes.DType):
        return ("dtype", type(v).__qualname__, v.name)
    if any(c.__name__ == "NKIObject" for c in type(v).__mro__) and hasattr(v, "_values"):
        kb.volatile = True
        return ("nkiobject", type(v).__qualname__) + tuple(
            (k, _value_key(x, seen, kb)) for k, x in v._values())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        if not type(v).__dataclass_params__.frozen:
            kb.volatile = True
        return ("dataclass", type(v).__qualname__) + tuple(
            (f.name, _value_key(getattr(v, f.name), seen, kb)) for f in dataclasses.fields(v))
    if isinstance(v, types.ModuleType):
        return ("module", v.__name__) + (_file_stamp(v) if kb.stable else ())
    if isinstance(v, Kernel):
        kb.attrs.append((v, "func", v.func))
        v = v.func
    if isinstance(v, types.FunctionType):
        if (v.__module__ or "").split(".")[0] in ("nki", "neuronxcc", "numpy"):
            # the library's own functions live as long as their modules (some
            # are made by one factory and share a qualname): their identity;
            # on disk, where they come from and what their cells hold
            if kb.stable:
                return ("func", v.__module__, v.__qualname__, v.__code__.co_firstlineno) + tuple(
                    _cell_key(c, seen, kb) for c in v.__closure__ or ())
            return ("func", v.__module__, v.__qualname__, id(v))
        return _code_key(v, seen, kb)
    if isinstance(v, type):
        return ("type", v.__module__, v.__qualname__) + (
            _file_stamp(sys.modules.get(v.__module__)) if kb.stable else ())
    if isinstance(v, (np.dtype, np.generic)) or callable(v) and (
            getattr(v, "__module__", "") or "").split(".")[0] in ("nki", "numpy", "builtins"):
        return ("obj", repr(v))
    if isinstance(v, np.ndarray) and v.size <= 4096:
        kb.volatile = True
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    raise _Unkeyable(type(v).__name__)


def _contents_key(v, seen, kb):
    """A mutable container keyed by what it holds (the disk key)."""
    if isinstance(v, dict):
        return ("dict",) + tuple((_value_key(k, seen, kb), _value_key(x, seen, kb))
                                 for k, x in v.items())
    if isinstance(v, set):
        return ("set",) + tuple(sorted((_value_key(x, seen, kb) for x in v), key=repr))
    if isinstance(v, bytearray):
        return ("bytearray", bytes(v))
    return ("list",) + tuple(_value_key(x, seen, kb) for x in v)


def _cell_key(cell, seen, kb):
    """A closure cell's contents keyed (an empty cell too)."""
    try:
        v = cell.cell_contents
    except ValueError:
        return ("empty",)
    return _value_key(v, seen, kb)


def _file_stamp(module):
    """(file, size, modification time) of a module's source: a disk key
    changes when the file that defines a module or class does."""
    f = getattr(module, "__file__", None)
    if not f:
        return ()
    try:
        st = os.stat(f)
    except OSError:
        return (f,)
    return (f, st.st_size, st.st_mtime_ns)


def _code_lines(code):
    """Where a code object and the code nested in it sit in their file:
    the disk key changes when the kernel's lines move, so that errors
    name the right ones."""
    out = [code.co_filename, code.co_firstlineno, code.co_linetable]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out.append(_code_lines(c))
    return tuple(out)


def _code_names(code):
    """Every name a code object (and the code nested in it) reads."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _code_names(c)
    return names


def _code_consts(code):
    """The constants of a code object and of the code nested in it."""
    out = []
    for c in code.co_consts:
        out.append(_code_consts(c) if isinstance(c, types.CodeType) else (type(c).__name__, repr(c)))
    return (code.co_code,) + tuple(out)


def _code_key(func, seen, kb):
    """A kernel function as the traced program sees it: its code and
    constants, its defaults, the values of its closure cells and of the
    globals it reads (functions it calls, recursively)."""
    if func in seen:
        return ("recursive", func.__qualname__)
    seen = seen | {func}
    code = func.__code__
    kb.attrs += [(func, "__code__", code), (func, "__defaults__", func.__defaults__),
                 (func, "__kwdefaults__", func.__kwdefaults__)]
    memo = _code_memo.get(code)
    if memo is None:
        memo = _code_memo[code] = (sorted(_code_names(code)), _code_consts(code))
    names, consts = memo
    g = func.__globals__
    glob = []
    for n in names:
        v = g.get(n, _ABSENT)
        kb.globals.append((g, n, v))
        if v is not _ABSENT:
            glob.append((n, _value_key(v, seen, kb)))
    cells = []
    for c in func.__closure__ or ():
        try:
            v = c.cell_contents
        except ValueError:
            kb.cells.append((c, _ABSENT))
            cells.append(("empty",))
            continue
        kb.cells.append((c, v))
        cells.append(_value_key(v, seen, kb))
    defaults = tuple(_value_key(d, seen, kb) for d in func.__defaults__ or ())
    kwdefaults = tuple((k, _value_key(d, seen, kb))
                       for k, d in sorted((func.__kwdefaults__ or {}).items()))
    lines = _code_lines(code) if kb.stable else ()
    return (func.__module__, func.__qualname__, tuple(names), consts, tuple(glob), tuple(cells),
            defaults, kwdefaults, lines)


class _SourceKeys:
    """The last source key of one kernel function and what it was computed
    from, shared by the kernel and its launch-grid variants: a call whose
    globals, closure cells and function attributes are the same objects as
    then gets the same key without computing it again."""

    def __init__(self):
        self.last = None          # (_KeyBuild, key) of the last computation

    def get(self, func):
        """The source key of func (None when some value cannot be keyed)."""
        last = self.last
        if last is not None and not last[0].volatile and last[0].unchanged():
            return last[1]
        kb = _KeyBuild()
        try:
            k = _code_key(func, frozenset(), kb)
        except _Unkeyable:
            self.last = None
            return None
        key = (func.__module__, func.__qualname__, hashlib.sha1(repr(k).encode()).hexdigest())
        self.last = (kb, key)
        return key


def _source_key(func, keys=None):
    """A hash of everything in the kernel function that changes its traced
    program; None when some value it reads cannot be keyed (such a kernel
    is traced anew on every call). keys (a _SourceKeys) remembers what the
    last key was computed from, so that it is computed again only when a
    global or closure value it read was rebound, or when it read a value
    that can change in place."""
    return (keys or _SourceKeys()).get(func)


def _arg_key(a):
    """The part of the cache key one argument gives."""
    if isinstance(a, np.ndarray):
        return ("A", a.shape, _arg_dtype(a).name)
    try:
        return ("S", _value_key(a, frozenset(), _KeyBuild()))
    except _Unkeyable:
        return ("S", repr(a))


def _arg_sig(args):
    """What decides the cache key of positional arguments that are all
    NumPy arrays (exactly np.ndarray: their shapes and dtypes) or ints
    (their values), cheaply; None for any other argument."""
    sig = []
    for a in args:
        t = type(a)
        if t is np.ndarray:
            sig.append((a.shape, a.dtype))
        elif t is int:
            sig.append(a)
        else:
            return None
    return tuple(sig)


def _call_key(src, args, kwargs, grid):
    """The cache key of one call from its kernel's source key (_source_key);
    None when it cannot be computed (src is None)."""
    if src is None:
        return None
    parts = [_arg_key(a) for a in args]
    if kwargs:
        parts += [_arg_key(kwargs[k]) for k in sorted(kwargs)]
    return src + (tuple(parts), tuple(sorted(kwargs)), grid)


_DISK_FORMAT = 1        # the disk record's layout: bump when it changes
_fingerprint = []       # what the process's traces depend on besides the kernel (made once)
_OWN_PACKAGES = ("nki", "neuronxcc", "nki_cpu_simulator", "neuron_dtypes")   # trnemu's, beside nki


def _process_fingerprint():
    """What every trace of this process depends on besides the kernel:
    trnemu's version and its libnrt.so.1 file (the assembler that made the
    NEFF), the front end's own source files (size and time of each), the
    emulated machine, and the host dtypes in use (the front end: the
    packages trnemu installs beside nki, legacy neuronxcc.nki included)."""
    if _fingerprint:
        return _fingerprint[0]
    L = _runtime.lib()
    ver = L.trnemu_version
    ver.restype = ctypes.c_char_p
    lib_file = getattr(L, "_name", "")
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sources = []
    for pkg in _OWN_PACKAGES:
        for root, dirs, files in os.walk(os.path.join(top, pkg)):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".py", ".so")):
                    st = os.stat(os.path.join(root, f))
                    sources.append((os.path.relpath(os.path.join(root, f), top), st.st_size,
                                    st.st_mtime_ns))
    fp = (ver().decode(), lib_file, _file_stamp(types.SimpleNamespace(__file__=lib_file)),
          tuple(sources), tuple(sorted(_runtime.machine_info().items())),
          repr(_dtypes.bfloat16), os.environ.get("TRNEMU_NKI_HOST_DTYPES", ""))
    _fingerprint.append(fp)
    return fp


def _disk_digest(kernel, args, kwargs, gen):
    """The name of a call's entry in the disk cache: a SHA-256 of the
    kernel as the traced program sees it (code, constants, line numbers,
    the values of the globals, closure cells and defaults it reads, the
    contents of the containers it reads, the source files of the modules
    and classes it names), the arguments' shapes, dtypes and scalar
    values, the launch grid, the compiler flags, the NeuronCore generation
    and the process fingerprint. None when some value cannot be keyed the
    same way in every process."""
    func = kernel.func
    kb = _KeyBuild()
    kb.stable = True
    try:
        src = _code_key(func, frozenset(), kb)
        parts = [_value_key(a, frozenset(), kb) if not isinstance(a, np.ndarray)
                 else ("A", a.shape, _arg_dtype(a).name) for a in args]
        parts += [(k, _value_key(kwargs[k], frozenset(), kb)) if not isinstance(kwargs[k], np.ndarray)
                  else (k, "A", kwargs[k].shape, _arg_dtype(kwargs[k]).name) for k in sorted(kwargs)]
        flags = _value_key(dict(getattr(func, "_nki_compiler_flags", {}) or {}), frozenset(), kb)
    except _Unkeyable:
        return None
    k = (_DISK_FORMAT, _process_fingerprint(), src, tuple(parts), kernel.grid, kernel.shard,
         gen, flags, _core.trace_limits(), kernel.mode == "simulate")
    return hashlib.sha256(repr(k).encode()).hexdigest()


def _same_info(di):
    """Whether a dtype info is what its name gives (a record keeps names)."""
    try:
        again = _dtypes.info(di.name)
    except TypeError:
        return False
    return (again.isa, again.nrt, again.host, again.public) == (di.isa, di.nrt, di.host, di.public)


def _record(comp):
    """A compiled kernel as the disk cache keeps it (JSON-able), or None
    when it cannot be kept (a kernel with collectives loads as a rank of
    its job; one that asked for rank_id() is this rank's program; a dtype
    its name does not give back)."""
    tr = comp.tracer
    infos = [di for _, _, di, _ in comp.out_specs] + [di for _, _, _, di in comp.written_args] + \
        [di for _, _, _, di in comp.prints]
    if tr.collectives or tr.rank_dependent or not all(_same_info(di) for di in infos):
        return None
    return {
        "name": comp.name, "file": comp.file, "first_line": comp.first_line,
        "arg_names": sorted(comp.arg_names.items()), "ret_shape": comp.ret_shape,
        "out_specs": [[n, list(sh), di.name, pos] for n, sh, di, pos in comp.out_specs],
        "written_args": [[pos, n, list(sh), di.name] for pos, n, sh, di in comp.written_args],
        "prints": [[pre, n, list(sh), di.name] for pre, n, sh, di in comp.prints],
        "prefill": comp.prefill, "tensors": comp.tensors, "spills": tr.spills,
        "whole": sorted(comp.whole),
        "cores": [{"lines": ct.lines, "src": ct.src, "eng_lines": ct.eng_lines} for ct in tr.cores],
    }


class _StoredCore:
    """One core's share of a trace read back from the disk cache: its
    assembly lines, their kernel lines and the (kernel line, op) of each
    engine instruction (failures are tied to kernel lines through them)."""

    def __init__(self, rec):
        self.lines = rec["lines"]
        self.src = rec["src"]
        self.eng_lines = {e: [tuple(x) for x in v] for e, v in rec["eng_lines"].items()}
        self.count = {e: len(v) for e, v in self.eng_lines.items()}


class _StoredTrace:
    """What a kernel loaded from the disk cache keeps of its trace, in
    place of the Tracer (no allocator: it was not traced here)."""

    def __init__(self, name, rec):
        self.name = name
        self.cores = [_StoredCore(c) for c in rec["cores"]]
        self.spills = rec["spills"]
        self.collectives = False


def _from_record(func, rec, neff):
    """A Compiled made from a disk record and its NEFF, loaded."""
    info = _dtypes.info
    comp = Compiled(rec["name"], _StoredTrace(rec["name"], rec),
                    {int(i): n for i, n in rec["arg_names"]}, [], rec["ret_shape"])
    comp.func = func
    comp.file, comp.first_line = rec["file"], rec["first_line"]
    comp.out_specs = [(n, tuple(sh), info(d), pos) for n, sh, d, pos in rec["out_specs"]]
    comp.written_args = [(pos, n, tuple(sh), info(d)) for pos, n, sh, d in rec["written_args"]]
    comp.prints = [(pre, n, tuple(sh), info(d)) for pre, n, sh, d in rec["prints"]]
    comp.prefill = [tuple(x) for x in rec["prefill"]]
    comp.whole = frozenset(rec.get("whole", ()))   # an older record: none known, results zeroed
    comp.tensors = [tuple(x) for x in rec["tensors"]]
    comp.trace_s = comp.build_s = 0.0     # neither traced nor assembled in this process
    comp.neff = neff
    comp.from_disk = True
    t = time.perf_counter()
    comp.model = _runtime.Model(neff, comp.tensors, None)
    comp.load_s = time.perf_counter() - t
    return comp


def _disk_load(func, path):
    """The compiled kernel of a disk cache file, or None (no file, a
    damaged one, or one whose NEFF no longer loads: then one log line)."""
    got = _diskcache.load(path)
    if got is None:
        return None
    rec, neff = got
    try:
        return _from_record(func, rec, neff)
    except (KeyError, TypeError, ValueError) as e:
        _diskcache._log("ignoring %s: its record is not what this trnemu writes (%s)" % (path, e))
    except _runtime.RuntimeFailure as e:
        _diskcache._log("ignoring %s: its NEFF does not load (%s)" % (path, e))
    return None


def _onchip_to_hbm(ret):
    """What a kernel returns, with each on-chip (SBUF/PSUM) tile copied to
    a fresh HBM tensor by a DMA at the kernel's end: in simulation mode a
    kernel may return tiles, as the vendor's simulator lets it (the
    hardware's kernels return HBM tensors)."""
    from . import isa as nisa, language as nl

    def conv(t):
        if not isinstance(t, NkiTensor) or t.storage.kind == "hbm":
            return t
        out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out
    if isinstance(ret, (tuple, list)):
        return type(ret)(conv(t) for t in ret)
    return conv(ret)


def _warn_imprecise_mode():
    """NKI_PRECISE_FP=0 asks the vendor's simulator to keep low-precision
    tensors in float32; trnemu always rounds to their types, as the
    hardware does: a warning says so (naming the calling line) rather
    than ignore it."""
    if os.environ.get("NKI_PRECISE_FP", "").strip() == "0":
        _core.warn("NKI_PRECISE_FP=0 has no effect on trnemu: bfloat16 and fp8 tensors are "
                   "stored in their own types, as on the hardware")


def _trace(func, args, kwargs, grid, shard=None, gen=2, onchip_returns=False):
    t0 = time.perf_counter()
    _warn_imprecise_mode()
    ncores = 1
    if shard is not None and _runtime.machine_lnc() >= shard[1]:
        ncores = shard[1]
    _check_grid_size(func, grid)
    tr = _core.Tracer(func.__name__, ncores, gen)
    tr.force_auto_alloc = "force_auto_alloc" in getattr(func, "_nki_compiler_flags", {})
    sig = inspect.signature(func)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        raise NKIError("%s: %s" % (_core.user_line(), e)) from None
    names = list(bound.arguments)
    prev = getattr(_core._tls, "tracer", None)
    _core._tls.tracer = tr
    try:
        proxies = {}
        arg_names = {}
        lnc2 = shard is not None and shard[1] > 1    # the arguments' buffer is shared_hbm
        for i, nm in enumerate(names):
            a = bound.arguments[nm]
            if isinstance(a, np.ndarray):
                di = _arg_dtype(a)
                if a.size == 0:
                    raise NKIError("%s: argument %r is empty (shape %s): an NKI tensor has at "
                                   "least one element" % (_core.user_line(), nm, a.shape))
                t = _core.new_tensor(a.shape, di.public, "input", nm)
                t.storage.role = "input"
                t.storage.argpos = i
                t.storage.shared = lnc2
                tr.inputs.append(t.storage)
                proxies[nm] = t
                arg_names[i] = t.storage.name
            else:
                proxies[nm] = a
        ret = None
        ranges = [range(n) for n in grid]
        for pid in itertools.product(*ranges):
            if ncores > 1:
                tr.set_core(pid[shard[0]] % ncores)
            tr.program = pid
            tr.grid = grid
            tr.shared_pos = 0
            r = func(**proxies)
            if onchip_returns and len(grid) == 1 and grid[0] == 1:
                r = _onchip_to_hbm(r)
            if ret is None:
                ret = r
            del r
        tr.flush()
        if tr.loop is not None:
            raise NKIError("%s: a device loop was left open: a register is tested as a condition "
                           "only by `while reg:`" % tr.loop.line)
    finally:
        _core._tls.tracer = prev
    # outputs
    if ret is None:
        rets, shape = [], "none"
    elif isinstance(ret, (tuple, list)):
        rets, shape = list(ret), "tuple" if isinstance(ret, tuple) else "list"
    else:
        rets, shape = [ret], "one"
    outs, out_views = [], []
    where = "%s:%d" % (func.__code__.co_filename, func.__code__.co_firstlineno)
    for r in rets:
        if not isinstance(r, NkiTensor) or r.storage.kind != "hbm":
            raise NKIError("%s: a kernel returns HBM tensors (nl.ndarray(..., buffer=nl.shared_hbm)), "
                           "got %r" % (where, r))
        out_views.append(_returned_view(r, where))
        r.storage.role = "output"
        outs.append(r.storage)
    for st in tr.inputs:
        if st.written:
            st.role = "output"     # written arguments come back (legacy in/out style)
    comp = Compiled(func.__name__, tr, arg_names, [], shape)
    comp.func = func
    comp.file, comp.first_line = func.__code__.co_filename, func.__code__.co_firstlineno
    comp.trace_s = time.perf_counter() - t0
    decls, tensors = [], []
    for st in tr.inputs:
        if st.role == "input":
            decls.append(("input", st.name, st.di.nrt, st.shape, st.nbytes))
            tensors.append(("input", st.name, st.nbytes))
    declared_out = set()
    for st in outs + [s for s in tr.inputs if s.role == "output"]:
        if st.name in declared_out:
            continue
        declared_out.add(st.name)
        decls.append(("output", st.name, st.di.nrt, st.shape, st.nbytes))
        tensors.append(("output", st.name, st.nbytes))
        if hasattr(st, "argpos"):
            comp.prefill.append((st.argpos, st.name))
    for _, st in tr.prints:
        decls.append(("output", st.name, st.di.nrt, st.shape, st.nbytes))
        tensors.append(("output", st.name, st.nbytes))
    comp.prints = [(prefix, st.name, st.shape, st.di) for prefix, st in tr.prints]
    decls += _scratch_decls(tr)
    for name, di, shape, data in tr.consts:
        decls.append(("const", name, di.nrt, shape, data))
    comp.out_specs = [(st.name, shape, di, getattr(st, "argpos", None))
                      for st, (shape, di) in zip(outs, out_views)]
    comp.written_args = [(st.argpos, st.name, st.shape, st.di) for st in tr.inputs if st.role == "output"]
    comp.whole = frozenset(st.name for st in outs if _core.whole_overwrite(st))
    t1 = time.perf_counter()
    subgraphs = [(decls, ct.lines) for ct in tr.cores]
    neff, err = _runtime.build_neff(func.__name__, _SEM_LINES, subgraphs)
    if err is not None:
        line, cause = err
        src = [None] * len(_SEM_LINES)
        for i, ct in enumerate(tr.cores):
            src += ([None] if i else []) + ct.src
        idx = line - 1
        where = src[idx] if 0 <= idx < len(src) and src[idx] else "%s:%d" % (
            func.__code__.co_filename, func.__code__.co_firstlineno)
        raise NKIError("%s: %s" % (where, cause))
    comp.neff = neff
    comp.build_s = time.perf_counter() - t1
    t2 = time.perf_counter()
    rank = None
    if tr.collectives:
        from . import collectives
        rank = collectives.world()
    try:
        comp.tensors = tensors
        comp.model = _runtime.Model(neff, tensors, rank)
    except _runtime.RuntimeFailure as e:
        raise NKIError("%s: %s" % (_load_line(comp, e.log) or "%s:%d" % (comp.file, comp.first_line),
                                   "; ".join(_causes(e.log)[:2]) or str(e))) from None
    comp.load_s = time.perf_counter() - t2
    return comp


def _check_grid_size(func, grid):
    """NKIError for a launch grid with more programs than a trace may
    hold instructions (every program is traced)."""
    limit, _ = _core.trace_limits()
    programs = 1
    for g in grid:
        programs *= g
    if limit and programs > limit:
        raise NKIError("%s:%d: a launch grid of %d programs %s cannot be traced: more than "
                       "TRNEMU_NKI_TRACE_LIMIT (%d)" % (func.__code__.co_filename,
                                                        func.__code__.co_firstlineno, programs,
                                                        grid, limit))


def _returned_view(r, where):
    """The host shape and dtype of a returned HBM tensor: the view's own
    (a reshape or dtype view of the whole tensor comes back as such). A
    view of part of a tensor cannot be returned."""
    st = r.storage
    di = _dtypes.info(r.dtype)
    whole = int(np.prod(st.shape)) * st.di.size if st.shape else st.di.size
    if r.off != 0 or not r.is_contiguous() or r.size * di.size != whole:
        raise NKIError("%s: a kernel returns whole HBM tensors (or reshapes of them), not a view "
                       "of part of one (shape %s of %s)" % (where, r.shape, tuple(st.shape)))
    return tuple(r.shape), di


def _load_line(comp, log):
    """The kernel line of the instruction a load failure names
    ("sg01: pool instruction 3: ...")."""
    tr = comp.tracer
    m = re.search(r"sg(\d+): (pe|act|pool|dve|sp) instruction (\d+)", log or "")
    if m is None:
        return None
    core = int(m.group(1)) % len(tr.cores)
    lines = tr.cores[core].eng_lines.get(m.group(2), [])
    idx = int(m.group(3))
    return lines[idx][0] if 0 <= idx < len(lines) else None


def _locate(comp, log):
    """The kernel line of the instruction a failure report names
    ("core 0 act[3]: ..." is instruction 3 of the Scalar Engine)."""
    tr = comp.tracer
    for m in re.finditer(r"(?:core (\d+) )?\b(pe|act|pool|dve|sp)\[(\d+)\]", log):
        core = int(m.group(1) or 0) % len(tr.cores)
        eng, idx = m.group(2), int(m.group(3))
        lines = tr.cores[core].eng_lines.get(eng, [])
        if 0 <= idx < len(lines):
            return lines[idx][0]
    return None


def _causes(log):
    """The report lines without their time stamp and subsystem prefix."""
    out = []
    for ln in log.splitlines():
        ln = re.sub(r"^.*?\b(ERROR|WARN|WARNING|INFO)\s+\S+\s+", "", ln).strip()
        if ln:
            out.append(ln)
    return out


def _numpy_index_error(text):
    """An indexed DMA past its HBM tensor as the vendor's simulator reports
    it: NumPy's own IndexError ("index N is out of bounds for axis 0 with
    size M", N the row's first flat element outside the tensor), the kernel line
    and the runtime's cause in a note (shown with the traceback); None for
    other out-of-bounds failures."""
    m = re.search(r"dma_copy index -?\d+ of row \d+ reaches outside variable .*?: "
                  r"element (-?\d+) of (\d+)", text)
    if not m:
        return None
    e = IndexError("index %s is out of bounds for axis 0 with size %s" % m.groups())
    e.add_note(text)
    return e


def _race_cause(comp, cause):
    """A race report's text: its first line and the two accesses it names,
    each followed by the kernel line of its instruction; None when the
    report is not a race."""
    for i, ln in enumerate(cause):
        if ln.startswith("race:"):
            out = [ln]
            for acc in cause[i + 1:i + 3]:
                where = _locate(comp, acc)
                out.append("%s (at %s)" % (acc, where) if where else acc)
            return "; ".join(out)
    return None


COPY, BORROW, LEND = 0, 1, 2           # how a call moves one tensor (_io_plan)


def _io_plan(comp):
    """How a call moves one kernel's tensors, worked out once: (inputs
    whose arrays the device tensor borrows, inputs it is lent, inputs
    written into theirs, per returned tensor (name, shape, dtype info,
    COPY, BORROW or LEND, zeroed before the run)). A borrowed or lent
    array is attached to the device tensor (nrt_tensor_attach_buffer), so
    the execution reads the argument or writes the result in place, with
    no copy. Arguments the kernel writes (in/out) are lent too, each its
    own memory where it can be (_lend_written), else a copy copied back
    after the run; a tensor returned twice is copied. A borrowed array
    (BORROW_MAX bytes at most) stays referenced by the model until the
    kernel's next call (a result one call longer, as a spare:
    _result_array); a larger one is lent (Model.lend): the model keeps
    only a weak reference to it, so a
    dropped argument or result is freed at once, whichever of up to
    CACHE_MODELS kernels it went through; the next call attaches again
    unless it passes the same live array. A lent result is a new array
    each call. A result the kernel overwrites whole (comp.whole: plain
    DMAs cover every byte and nothing reads it) is never zeroed: no byte
    of it survives from before the run."""
    if comp.plan is not None:
        return comp.plan
    m = comp.model
    whole = comp.whole
    copied = {name for _, name in comp.prefill} | {name for _, name, _, _ in comp.written_args}
    layout = {name: (shape, di.host) for name, shape, di, _ in comp.out_specs}
    layout.update({name: (shape, di.host) for _, name, shape, di in comp.written_args})
    borrow_in, lend_in, write_in = [], [], []
    for i, nm in sorted(comp.arg_names.items()):
        if m.kinds.get(nm) == "input":
            (borrow_in if m.tensors[nm][1] <= BORROW_MAX else lend_in).append((i, nm))
        elif nm in m.tensors:
            write_in.append((i, nm) + layout[nm])
    outs, seen = [], set()
    for name, shape, di, argpos in comp.out_specs:
        how = COPY
        if (argpos is None and name not in copied and name not in seen
                and m.kinds.get(name) == "output"
                and int(math.prod(shape)) * di.host.itemsize == m.tensors[name][1]):
            how = BORROW if m.tensors[name][1] <= BORROW_MAX else LEND
        zero = argpos is None and name not in copied and name not in whole
        seen.add(name)
        outs.append((name, shape, di, how, zero))
    comp.plan = (borrow_in, lend_in, write_in, outs)
    return comp.plan


def _ref_count(owner, name):
    """sys.getrefcount of owner[name] as seen from here; None when absent."""
    arr = owner.get(name)
    return None if arr is None else sys.getrefcount(arr)


# what an array that only a dictionary holds counts in _ref_count, on this
# interpreter (the count includes references of its own: a local name, an
# argument)
_DICT_ONLY = _ref_count({"probe": np.empty(0)}, "probe")


def _unheld(owner, name):
    """The array owner[name] when nothing but that dictionary refers to it
    (no variable, view, memoryview or weak reference of the caller's):
    only then may a call write into it again. None otherwise."""
    n = _ref_count(owner, name)
    if n is None or n > _DICT_ONLY:
        return None
    arr = owner[name]
    return None if weakref.getweakrefcount(arr) else arr


def _result_array(comp, name, shape, host, zero):
    """The array a borrowed result is written into, attached to its tensor:
    the one already attached when the caller no longer holds it (the last
    call's result, dropped), else the one before it if that was dropped,
    else a new one. Zeroed first (an old one) or made zeroed (a new one)
    when the kernel may leave bytes unwritten, which must read as 0."""
    m = comp.model
    arr = _unheld(m.borrowed, name)
    if arr is None:
        arr = _unheld(comp.spares, name)
        if arr is None:
            arr = (np.zeros if zero else np.empty)(shape, dtype=host)
            zero = False
        comp.spares[name] = m.borrowed.get(name)
        m.attach(name, arr)
    if zero:
        arr.reshape(-1).view(np.uint8).fill(0)
    return arr


def _lend_written(m, flat, written, held):
    """Lend the device tensor of argument i, which the kernel writes, the
    argument's own memory when it can (C-contiguous, writeable, its bytes
    the tensor's, sharing no memory with another argument): the kernel
    then updates it in place, as the vendor's simulator does, with no copy
    in or out. Otherwise a contiguous copy of its bytes is lent, to be
    copied back after a successful run (the argument is left as it was
    when the run fails). written: (argument index, tensor name, shape,
    host dtype). Returns (argument, copy or None)."""
    i, name, shape, host = written
    a = flat[i]
    if _lendable(flat, i, host, m.tensors[name][1]):
        held.append(m.lend(name, a.view(host) if a.dtype != host else a))
        return a, None
    mine = np.empty(shape, dtype=host)
    mine.reshape(-1).view(np.uint8)[:] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    held.append(m.lend(name, mine))
    return a, mine


def _lendable(flat, i, host, nbytes):
    """Argument i can be the device tensor's memory itself."""
    a = flat[i]
    if not (isinstance(a, np.ndarray) and a.flags.c_contiguous and a.flags.writeable
            and a.dtype.itemsize == host.itemsize and a.nbytes == nbytes):
        return False
    return not any(j != i and isinstance(b, np.ndarray) and np.may_share_memory(a, b)
                   for j, b in enumerate(flat))


def _run(comp, args, kwargs, quiet=False):
    m = comp.model
    flat = _flat_args(comp.func, args, kwargs) if kwargs else args
    borrow_in, lend_in, write_in, out_plan = comp.plan or _io_plan(comp)
    attached = m.borrowed
    for i, nm in borrow_in:
        if attached.get(nm) is not flat[i]:      # the same array as last time: still attached
            m.attach(nm, flat[i])
    held = [m.lend(nm, flat[i]) for i, nm in lend_in] if lend_in else []   # until executed
    back = [_lend_written(m, flat, w, held) for w in write_in] if write_in else ()
    outs = []
    for name, shape, di, how, zero in out_plan:
        arr = None
        if how == BORROW:    # unwritten bytes read as 0 on every call
            arr = _result_array(comp, name, shape, di.host, zero)
        elif how == LEND:    # a new array: np.zeros gives pages the system zeroed
            arr = (np.zeros if zero else np.empty)(shape, dtype=di.host)
            m.lend(name, arr)
        elif zero:
            m.zero(name)                           # so do a copied result's
        outs.append(arr)
    st, log = m.execute(quiet)
    del held                 # the lent arrays (or their copies) are needed until here
    if st not in (0, 1003):
        where = _locate(comp, log) or "%s:%d" % (comp.file, comp.first_line)
        cause = _causes(log)
        text = _race_cause(comp, cause) or ("; ".join(cause[1:3] or cause[:1]) if cause else
                                            "the execution failed")
        text = "%s: %s: %s" % (where, m.status_text(st), text)
        if st == _NRT_EXEC_OOB:
            raise _numpy_index_error(text) or _core.NKIIndexError(text)
        raise NKIError(text)
    for k, (name, shape, di, _, _) in enumerate(out_plan):
        arr = outs[k]
        if arr is None:
            arr = np.empty(shape, dtype=di.host)
            m.read(name, arr)
        if not isinstance(di.public, np.dtype):
            arr = arr.view(HostArray)
            arr.nki_dtype = di.public
        outs[k] = arr
    if comp.prints:
        _print_values(comp)
    for a, mine in back:
        if mine is not None:    # the copy lent in the argument's place
            np.copyto(a.view(mine.dtype) if a.dtype != mine.dtype else a, mine)
    if comp.ret_shape == "none":
        return None
    if comp.ret_shape == "one":
        return outs[0]
    return tuple(outs) if comp.ret_shape == "tuple" else outs


def _scratch_decls(tr):
    """Declarations of the trace's HBM scratch: a shared_hbm tensor that is
    not returned is one copy that every core of a multi-core trace reads
    and writes (a virtual variable at the same offset of the model's
    scratchpad in each subgraph); private_hbm tensors and spill slots are
    private to each subgraph (a tmp-buf each)."""
    decls, off = [], 0
    for st in tr.hbm.values():
        if st.role != "scratch":
            continue
        if st.shared and len(tr.cores) > 1:
            decls.append(("shared", st.name, off, (), st.nbytes))
            off += -(-st.nbytes // _SHARED_ALIGN) * _SHARED_ALIGN
        else:
            decls.append(("scratch", st.name, 0, (), st.nbytes))
    return decls


_SHARED_ALIGN = 64   # bytes between shared scratch tensors (the HBM allocator's granule)


def _print_values(comp):
    """Print what the kernel's nl.device_print calls captured."""
    for prefix, name, shape, di in comp.prints:
        arr = np.empty(shape, dtype=di.host)
        comp.model.read(name, arr)
        if di.name == "bfloat16":
            arr = _dtypes.bf16_to_f32(arr)
        print(prefix, arr, flush=True)


class Kernel:
    """An NKI kernel: call it with NumPy arrays (kernel[grid](...) for an
    SPMD launch grid)."""

    # A kernel named test_* is not a test: pytest, which follows
    # __wrapped__ to the function, skips objects whose __test__ is false.
    __test__ = False

    def __init__(self, func, grid=(1,), mode="jit", shard=None, _keys=None, **opts):
        self.func = func          # the Python kernel function
        self.keys = _keys or _SourceKeys()  # its last source key, shared with grid variants
        self.grid = grid          # SPMD launch grid
        self.shard = shard        # (grid axis, physical cores) of an nl.nc(n) dimension
        self.mode = mode          # 'jit', 'baremetal', 'simulate', 'benchmark'
        self.opts = opts          # decorator options (benchmark warmup/iters...)
        self.last = None          # the Compiled of the last call
        self.recent = None        # (source key, _arg_sig, Compiled) of the last keyed call (_recall)
        self.benchmark_result = None
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = getattr(func, "__doc__", None)
        self.__wrapped__ = func

    def __getitem__(self, grid):
        if not isinstance(grid, tuple):
            grid = (grid,)
        shard = None
        for i, g in enumerate(grid):
            if getattr(g, "nc", 1) > 1:
                if shard is not None:
                    raise NKIError("%s: only one launch-grid dimension can use nl.nc()"
                                   % _core.user_line())
                shard = (i, g.nc)
        grid = tuple(int(g) for g in grid)
        if any(g < 1 for g in grid):
            raise NKIError("launch grid %s must be positive" % (grid,))
        if shard is None and len(grid) == 1 and grid[0] > 1 and grid[0] == _runtime.machine_lnc():
            # kernel[lnc]: the current API's LNC launch, one program per physical core
            shard = (0, grid[0])
        return Kernel(self.func, grid, self.mode, shard, self.keys, **self.opts)

    def ranks(self, inputs, timeout=None):
        """Run the kernel (as launched: grid, LNC) on len(inputs) ranks, each
        a process of its own started by `trnemu launch` (nki/_ranks.py):
        inputs[r] is rank r's arguments (a dict of keyword arguments or a
        tuple of positional ones); returns [rank 0's outputs, ...]."""
        from . import _ranks
        return _ranks.run(self, inputs, timeout)

    def target_generation(self):
        """The NeuronCore generation the kernel is built for: platform_target,
        else NEURON_PLATFORM_TARGET_OVERRIDE, else NKI_NC_VERSION (the
        generation the NKI Library's suite sets for the simulator: gen3
        for trn2), else the emulated machine's. A target other than the
        machine's is refused, as a NEFF built for another generation does
        not load."""
        machine = _runtime.machine_generation()
        target = (self.opts.get("platform_target") or os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE")
                  or os.environ.get("NKI_NC_VERSION"))
        if not target:
            return machine
        gen = PLATFORMS.get(target)
        if gen is None:
            raise NKIError("%s:%d: platform target %r is not one of %s"
                           % (self.func.__code__.co_filename, self.func.__code__.co_firstlineno,
                              target, ", ".join(sorted(PLATFORMS))))
        if gen != machine:
            info = _runtime.machine_info()
            raise NKIError("%s:%d: the kernel targets %s (NeuronCore-v%d) but the emulated machine "
                           "is %s (NeuronCore-v%d); set TRNEMU_INSTANCE to a matching instance type"
                           % (self.func.__code__.co_filename, self.func.__code__.co_firstlineno,
                              target, gen, info.get("instance_type", "?"), machine))
        return gen

    def compile(self, args, kwargs):
        src = _source_key(self.func, self.keys)
        key = _call_key(src, args, kwargs, self.grid)
        if key is not None:      # simulation mode lets a kernel return on-chip tiles
            key += (self.mode == "simulate",)
        if key is None:          # the traced program cannot be keyed: never shared
            comp = _trace(self.func, args, kwargs, self.grid, self.shard, self.target_generation(),
                          self.mode == "simulate")
            self._save_artifacts(comp)
            comp.cached = False
            self.last = comp
            return comp
        # a trace is only ever for the machine's generation (another target
        # is refused), so the key need not hold it; the refusal is made
        # here, also when the kernel is already cached
        self.target_generation()
        key += (self.shard, self.mode == "simulate")
        with _runtime._lock:     # one trace per key, even from several threads
            comp, evicted = self._compile_locked(key, args, kwargs)
        for old in evicted:      # after a call in flight on it, outside the cache lock
            with old.lock:
                old.model.unload()
        sig = None if kwargs else _arg_sig(args)
        self.recent = (src, sig, comp) if sig is not None else None
        return comp

    def _compile_locked(self, key, args, kwargs):
        comp = _cache.get(key)
        evicted = []
        if comp is None:
            limit = _loaded_limit()
            comp = self._load_or_trace(args, kwargs)
            self._save_artifacts(comp)
            comp.key = key
            comp.held = _memory_held(comp)
            _cache[key] = comp
            held = sum(c.held for c in _cache.values())
            while len(_cache) > CACHE_MODELS or (limit and held > limit and len(_cache) > 1):
                old = _cache.popitem(last=False)[1]    # least recently used; never comp
                old.evicted = True
                held -= old.held
                evicted.append(old)
        else:
            _cache.move_to_end(key)
        _newest[0] = comp
        self.last = comp
        return comp, evicted

    def _recall(self, args):
        """The compiled kernel of this kernel's last keyed call when this
        call's arguments are NumPy arrays of the same shapes and dtypes and
        ints of the same values as then, its source key is unchanged and
        the kernel is still cached: what compile() would find, without
        computing the whole key (nor checking the target again: a target
        set after the call before is checked at the next call that is not
        like it). None otherwise (then compile decides)."""
        recent = self.recent
        if recent is None:
            return None
        src, sig, comp = recent
        if _arg_sig(args) != sig or self.keys.get(self.func) != src or comp.evicted:
            return None       # (evicted after this check: __call__ sees it unloaded)
        if _newest[0] is not comp:
            with _runtime._lock:
                if comp.evicted:
                    return None
                _cache.move_to_end(comp.key)    # most recently used
                _newest[0] = comp
        self.last = comp
        return comp

    def _load_or_trace(self, args, kwargs):
        """The compiled kernel from the disk cache, else traced (and then
        kept on disk for other processes)."""
        gen = self.target_generation()
        path = None
        if _diskcache.folder() is not None:
            digest = _disk_digest(self, args, kwargs, gen)
            path = digest and _diskcache.path_of(digest)
        comp = _disk_load(self.func, path) if path else None
        if comp is None:
            comp = _trace(self.func, args, kwargs, self.grid, self.shard, gen,
                          self.mode == "simulate")
            rec = _record(comp) if path else None
            if rec is not None:
                _diskcache.store(path, rec, comp.neff)
        return comp

    def _save_artifacts(self, comp):
        """save_neff_name= writes the kernel's NEFF to that file;
        artifacts_dir= writes <kernel name>.neff into that folder."""
        paths = []
        if self.opts.get("save_neff_name"):
            paths.append(self.opts["save_neff_name"])
        if self.opts.get("artifacts_dir"):
            os.makedirs(self.opts["artifacts_dir"], exist_ok=True)
            paths.append(os.path.join(self.opts["artifacts_dir"], self.__name__ + ".neff"))
        for path in paths:
            try:
                with open(path, "wb") as f:
                    f.write(comp.neff)
            except OSError as e:
                raise NKIError("%s:%d: cannot write the NEFF to %s: %s"
                               % (comp.file, comp.first_line, path, e.strerror)) from None

    def __call__(self, *args, **kwargs):
        comp = None if kwargs else self._recall(args)
        if comp is None:
            if any(isinstance(a, NkiTensor) for a in list(args) + list(kwargs.values())):
                # called from inside another kernel: inline it
                return self.func(*args, **kwargs)
            args, kwargs = _host_args(args, kwargs)
            comp = self.compile(args, kwargs)
        while True:
            with comp.lock:      # calls of one kernel from several threads take turns
                if comp.model.loaded():
                    try:
                        return self._call_compiled(comp, args, kwargs)
                    finally:
                        if not comp.cached:
                            comp.model.unload()
            # evicted by another thread's compile between the two: compile again
            comp = self.compile(args, kwargs)

    def _call_compiled(self, comp, args, kwargs):
        """Run with the arguments, read the results (comp.lock held)."""
        if self.mode == "benchmark":
            return self._benchmark(comp, args, kwargs)
        return _run(comp, args, kwargs)

    def _benchmark(self, comp, args, kwargs):
        """nki.benchmark: run the kernel and report its latency as the
        vendor's benchmark does (percentiles in microseconds), in trnemu's
        estimated device time (docs/cost-model.md). The estimate is the
        same on every run, so the kernel runs once (warmup and iters are
        accepted and change nothing); the host wall time of that run is
        kept beside it."""
        t = time.perf_counter()
        out, dev = _runtime.device_times(lambda: _run(comp, args, kwargs))
        host_us = (time.perf_counter() - t) * 1e6
        iters = max(1, int(self.opts.get("iters", 10)))
        if dev:
            dev_us = max(dev) / 1000.0
            self.benchmark_result = BenchmarkResult([dev_us] * iters, host_us, dev_us)
            print("nki.benchmark %s: estimated device latency %.2f us (trnemu cost model, "
                  "%s); host wall time %.1f us"
                  % (self.__name__, dev_us, _runtime.machine_info().get("chip_name", "?"), host_us))
        else:
            self.benchmark_result = BenchmarkResult([host_us] * iters, host_us, None)
            print("nki.benchmark %s: no device-time estimate (a system trace capture is "
                  "running); host wall time %.1f us" % (self.__name__, host_us))
        return out


class _Latency:
    """The vendor's latency result: percentiles of per-call latency in us."""

    def __init__(self, times):
        self.times = sorted(times)   # microseconds per call

    def get_latency_percentile(self, p):
        if not self.times:
            return 0.0
        k = min(len(self.times) - 1, int(round(p / 100.0 * (len(self.times) - 1))))
        return self.times[k]


class BenchmarkResult:
    """What nki.benchmark measured: nc_latency, the latency per call in
    microseconds (trnemu's estimated device time, the same for every
    iteration); device_time_estimate (us, None when it could not be
    taken) and host_latency_us, the host wall time of the run."""

    def __init__(self, times, host_us=None, device_us=None):
        self.nc_latency = _Latency(times)     # microseconds per call
        self.device_time_estimate = device_us  # estimated device latency, us
        self.host_latency_us = host_us         # host wall time of the run, us


# nki.jit's documented modes and the entry point each one runs as here:
# a traced kernel ('trace', and the framework modes, called with NumPy
# arrays) runs like 'jit'; 'simulation' is trnemu's run as well, and like
# the vendor's simulator lets a one-program kernel return on-chip tiles.
_MODES = {"auto": "jit", "jit": "jit", "trace": "jit", "torchxla": "jit", "jax": "jit",
          "baremetal": "baremetal", "benchmark": "benchmark", "simulation": "simulate"}
# platform_target / NEURON_PLATFORM_TARGET_OVERRIDE / NKI_NC_VERSION spellings -> NeuronCore generation
PLATFORMS = {"trn1": 2, "inf2": 2, "gen2": 2, "trn2": 3, "gen3": 3, "trn3": 4, "gen4": 4}
# the other documented options and the types they take
_OPTION_TYPES = {"platform_target": (str,), "additional_compile_opt": (str,),
                 "debug_kernel": (bool,), "show_compiler_tb": (bool,),
                 "enable_out_of_bound_check": (bool,), "save_neff_name": (str,),
                 "save_trace_name": (str,), "artifacts_dir": (str,),
                 "experimental_flags": (str,), "compile_config": (object,),
                 "specialization_config": (object,), "warmup": (int,), "iters": (int,)}


def _check_options(mode, opts, where):
    """Validate nki.jit's options: an unknown name or a wrong type is an
    NKIError naming the decorator line."""
    if mode not in _MODES:
        raise NKIError("%s: nki.jit mode=%r is not one of %s" % (where, mode, ", ".join(sorted(_MODES))))
    for k, v in opts.items():
        if k not in _OPTION_TYPES:
            raise NKIError("%s: nki.jit has no option %r (options: mode, %s)"
                           % (where, k, ", ".join(sorted(_OPTION_TYPES))))
        if v is not None and not isinstance(v, _OPTION_TYPES[k]):
            raise NKIError("%s: nki.jit option %s=%r should be a %s"
                           % (where, k, v, _OPTION_TYPES[k][0].__name__))
    pt = opts.get("platform_target")
    if pt is not None and pt not in PLATFORMS:
        raise NKIError("%s: platform_target=%r is not one of %s" % (where, pt, ", ".join(sorted(PLATFORMS))))
    for name, cls in (("compile_config", "CompileConfig"), ("specialization_config", "SpecializationConfig")):
        v = opts.get(name)
        if v is not None and type(v).__name__ != cls:
            raise NKIError("%s: %s= takes an nki.compiler.%s, got %r" % (where, name, cls, v))


def _decorator(default_mode, func, opts):
    mode = opts.pop("mode", default_mode)
    where = _core.user_line()
    _check_options(mode, opts, where)
    if isinstance(func, Kernel):      # nki.jit(kernel, mode=...) of an already decorated kernel
        func = func.func
    if func is None:
        return lambda f: Kernel(_unwrap(f), mode=_MODES[mode], **opts)
    return Kernel(_unwrap(func), mode=_MODES[mode], **opts)


def _unwrap(func):
    """A kernel decorated again (nki.benchmark(...)(a jit kernel), as the
    vendor's tutorials do) wraps the kernel's own function."""
    return func.func if isinstance(func, Kernel) else func


def jit(fn=None, **opts):
    """Decorate an NKI kernel: calls trace, compile, load and run it.
    Options (docs/nki.md): mode, platform_target, save_neff_name and the
    compiler options, which are checked and recorded."""
    return _decorator("jit", fn, opts)


def baremetal(func=None, **opts):
    return _decorator("baremetal", func, opts)


def benchmark(func=None, **opts):
    return _decorator("benchmark", func, opts)


def _simulated(kernel):
    """A jit kernel or a plain function as a kernel in simulation mode."""
    if isinstance(kernel, Kernel):
        return Kernel(kernel.func, kernel.grid, "simulate", kernel.shard, **kernel.opts)
    return Kernel(kernel, mode="simulate")


def simulate_kernel(kernel, *args, **kwargs):
    """Run kernel (a jit kernel or a plain function) on trnemu and return its outputs."""
    k = _simulated(kernel)
    return k(*args, **kwargs)


def simulate(kernel, *args, **kwargs):
    """nki.simulate(kernel)(*args) or nki.simulate(kernel, *args)."""
    k = _simulated(kernel)
    if not args and not kwargs:
        return k
    return k(*args, **kwargs)
