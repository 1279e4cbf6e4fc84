"""_kernel.py: nki.jit and the other entry points: trace a kernel with
proxy tensors, assemble it into a NEFF with trnemu's C kernel builder,
load it through libnrt.so.1 and run it on NumPy arrays. Compiled kernels
are cached by source, argument shapes and dtypes, scalar arguments and
launch grid, so a second call neither traces nor loads again."""
import collections
import dataclasses
import enum
import hashlib
import inspect
import itertools
import os
import re
import sys
import threading
import time
import types

import numpy as np

from . import _core, _dtypes, _runtime
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
CACHE_MODELS = 64                     # loaded kernels kept; older ones are unloaded
_sigs = {}


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


_code_memo = {}   # code object -> (names it reads, its constants' key): never change
_pinned = {}      # id -> mutable container a cache key names by identity
_SIMPLE = (int, float, complex, str, bytes, bool, type(None))


class _Unkeyable(Exception):
    """A value the traced program may depend on that no key can stand for."""


def _value_key(v, seen):
    """A key for a value a kernel reads (a global, a closure cell, a
    default): equal keys mean the same traced program."""
    if isinstance(v, _SIMPLE):
        return (type(v).__name__, repr(v))
    if isinstance(v, (tuple, frozenset)):
        return (type(v).__name__,) + tuple(_value_key(x, seen) for x in v)
    if isinstance(v, (list, dict, set, bytearray)):
        # a mutable container counts by identity (a kernel may append to a
        # list as it traces); kept alive so that its id is never reused
        _pinned[id(v)] = v
        return ("mutable", type(v).__name__, id(v))
    if isinstance(v, enum.Enum):
        return ("enum", type(v).__qualname__, v.name)
    if any(c.__name__ == "NKIObject" for c in type(v).__mro__) and hasattr(v, "_values"):
        return ("nkiobject", type(v).__qualname__) + tuple(
            (k, _value_key(x, seen)) for k, x in v._values())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return ("dataclass", type(v).__qualname__) + tuple(
            (f.name, _value_key(getattr(v, f.name), seen)) for f in dataclasses.fields(v))
    if isinstance(v, types.ModuleType):
        return ("module", v.__name__)
    if isinstance(v, Kernel):
        v = v.func
    if isinstance(v, types.FunctionType):
        if (v.__module__ or "").split(".")[0] in ("nki", "neuronxcc", "numpy"):
            # the library's own functions live as long as their modules (some
            # are made by one factory and share a qualname): their identity
            return ("func", v.__module__, v.__qualname__, id(v))
        return _code_key(v, seen)
    if isinstance(v, type):
        return ("type", v.__module__, v.__qualname__)
    if isinstance(v, (np.dtype, np.generic)) or callable(v) and (
            getattr(v, "__module__", "") or "").split(".")[0] in ("nki", "numpy", "builtins"):
        return ("obj", repr(v))
    if isinstance(v, np.ndarray) and v.size <= 4096:
        return ("ndarray", v.dtype.str, v.shape, v.tobytes())
    raise _Unkeyable(type(v).__name__)


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


def _code_key(func, seen):
    """A kernel function as the traced program sees it: its code and
    constants, its defaults, the values of its closure cells and of the
    globals it reads (functions it calls, recursively)."""
    if func in seen:
        return ("recursive", func.__qualname__)
    seen = seen | {func}
    code = func.__code__
    memo = _code_memo.get(code)
    if memo is None:
        memo = _code_memo[code] = (sorted(_code_names(code)), _code_consts(code))
    names, consts = memo
    g = func.__globals__
    glob = tuple((n, _value_key(g[n], seen)) for n in names if n in g)
    cells = []
    for c in func.__closure__ or ():
        try:
            cells.append(_value_key(c.cell_contents, seen))
        except ValueError:
            cells.append(("empty",))
    defaults = tuple(_value_key(d, seen) for d in func.__defaults__ or ())
    kwdefaults = tuple((k, _value_key(d, seen)) for k, d in sorted((func.__kwdefaults__ or {}).items()))
    return (func.__module__, func.__qualname__, tuple(names), consts, glob, tuple(cells),
            defaults, kwdefaults)


def _source_key(func):
    """A hash of everything in the kernel function that changes its traced
    program; None when some value it reads cannot be keyed (such a kernel
    is traced anew on every call). Recomputed on every call, as a global
    or closure value may change between calls."""
    try:
        k = _code_key(func, frozenset())
    except _Unkeyable:
        return None
    return (func.__module__, func.__qualname__, hashlib.sha1(repr(k).encode()).hexdigest())


def _key(func, args, kwargs, grid):
    """The cache key of one call; None when it cannot be computed."""
    src = _source_key(func)
    if src is None:
        return None
    parts = []
    for a in list(args) + [kwargs[k] for k in sorted(kwargs)]:
        if isinstance(a, np.ndarray):
            parts.append(("A", a.shape, _arg_dtype(a).name))
        else:
            try:
                parts.append(("S", _value_key(a, frozenset())))
            except _Unkeyable:
                parts.append(("S", repr(a)))
    return src + (tuple(parts), tuple(sorted(kwargs)), grid)


def _trace(func, args, kwargs, grid, shard=None, gen=2):
    t0 = time.perf_counter()
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
        if not isinstance(r, NkiTensor) or r.buffer != "hbm":
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
    for st in tr.hbm.values():
        if st.role == "scratch":
            decls.append(("scratch", st.name, 0, (), st.nbytes))   # private to each subgraph
    for name, di, shape, data in tr.consts:
        decls.append(("const", name, di.nrt, shape, data))
    comp.out_specs = [(st.name, shape, di, getattr(st, "argpos", None))
                      for st, (shape, di) in zip(outs, out_views)]
    comp.written_args = [(st.argpos, st.name, st.shape, st.di) for st in tr.inputs if st.role == "output"]
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


def _run(comp, args, kwargs, quiet=False):
    m = comp.model
    flat = _flat_args(comp.func, args, kwargs)
    for i, nm in comp.arg_names.items():
        if nm in m.tensors:
            m.write(nm, flat[i])
    st, log = m.execute(quiet)
    if st not in (0, 1003):
        where = _locate(comp, log) or "%s:%d" % (comp.file, comp.first_line)
        cause = _causes(log)
        err = _core.NKIIndexError if st == _NRT_EXEC_OOB else NKIError
        raise err("%s: %s: %s" % (where, m.status_text(st),
                                       "; ".join(cause[1:3] or cause[:1]) if cause else
                                       "the execution failed"))
    outs = []
    for name, shape, di, argpos in comp.out_specs:
        arr = np.empty(shape, dtype=di.host)
        m.read(name, arr)
        if not isinstance(di.public, np.dtype):
            arr = arr.view(HostArray)
            arr.nki_dtype = di.public
        outs.append(arr)
    _print_values(comp)
    for argpos, name, shape, di in comp.written_args:
        a = flat[argpos]
        tmp = np.empty(shape, dtype=di.host)
        m.read(name, tmp)
        np.copyto(a.view(di.host) if a.dtype != di.host else a, tmp)
    if comp.ret_shape == "none":
        return None
    if comp.ret_shape == "one":
        return outs[0]
    return tuple(outs) if comp.ret_shape == "tuple" else outs


def _print_values(comp):
    """Print what the kernel's nl.device_print calls captured."""
    for prefix, name, shape, di in getattr(comp, "prints", ()):
        arr = np.empty(shape, dtype=di.host)
        comp.model.read(name, arr)
        if di.name == "bfloat16":
            arr = _dtypes.bf16_to_f32(arr)
        print(prefix, arr, flush=True)


class Kernel:
    """An NKI kernel: call it with NumPy arrays (kernel[grid](...) for an
    SPMD launch grid)."""

    def __init__(self, func, grid=(1,), mode="jit", shard=None, **opts):
        self.func = func          # the Python kernel function
        self.grid = grid          # SPMD launch grid
        self.shard = shard        # (grid axis, physical cores) of an nl.nc(n) dimension
        self.mode = mode          # 'jit', 'baremetal', 'simulate', 'benchmark'
        self.opts = opts          # decorator options (benchmark warmup/iters...)
        self.last = None          # the Compiled of the last call
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
        return Kernel(self.func, grid, self.mode, shard, **self.opts)

    def ranks(self, inputs, timeout=None):
        """Run the kernel (as launched: grid, LNC) on len(inputs) ranks, each
        a process of its own started by `trnemu launch` (nki/_ranks.py):
        inputs[r] is rank r's arguments (a dict of keyword arguments or a
        tuple of positional ones); returns [rank 0's outputs, ...]."""
        from . import _ranks
        return _ranks.run(self, inputs, timeout)

    def target_generation(self):
        """The NeuronCore generation the kernel is built for: platform_target,
        else NEURON_PLATFORM_TARGET_OVERRIDE, else the emulated machine's. A
        target other than the machine's is refused, as a NEFF built for
        another generation does not load."""
        machine = _runtime.machine_generation()
        target = self.opts.get("platform_target") or os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE")
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
        key = _key(self.func, args, kwargs, self.grid)
        if key is None:          # the traced program cannot be keyed: never shared
            comp = _trace(self.func, args, kwargs, self.grid, self.shard, self.target_generation())
            self._save_artifacts(comp)
            comp.cached = False
            self.last = comp
            return comp
        key += (self.shard,)
        with _runtime._lock:     # one trace per key, even from several threads
            comp, evicted = self._compile_locked(key, args, kwargs)
        for old in evicted:      # after a call in flight on it, outside the cache lock
            with old.lock:
                old.model.unload()
        return comp

    def _compile_locked(self, key, args, kwargs):
        comp = _cache.get(key)
        evicted = []
        if comp is None:
            comp = _trace(self.func, args, kwargs, self.grid, self.shard, self.target_generation())
            self._save_artifacts(comp)
            _cache[key] = comp
            while len(_cache) > CACHE_MODELS:
                evicted.append(_cache.popitem(last=False)[1])
        else:
            _cache.move_to_end(key)
        self.last = comp
        return comp, evicted

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
        if any(isinstance(a, NkiTensor) for a in list(args) + list(kwargs.values())):
            # called from inside another kernel: inline it
            return self.func(*args, **kwargs)
        args, kwargs = _host_args(args, kwargs)
        while True:
            comp = self.compile(args, kwargs)
            with comp.lock:      # calls of one kernel from several threads take turns
                if comp.model.loaded():
                    try:
                        return self._call_compiled(comp, args, kwargs)
                    finally:
                        if not comp.cached:
                            comp.model.unload()
            # evicted by another thread's compile between the two: compile again

    def _call_compiled(self, comp, args, kwargs):
        """Write the arguments, run, read the results (comp.lock held)."""
        flat = _flat_args(self.func, args, kwargs) if comp.prefill else None
        for argpos, name in comp.prefill:
            comp.model.write(name, np.ascontiguousarray(flat[argpos]))
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
# arrays) runs like 'jit'; 'simulation' is trnemu's run as well.
_MODES = {"auto": "jit", "jit": "jit", "trace": "jit", "torchxla": "jit", "jax": "jit",
          "baremetal": "baremetal", "benchmark": "benchmark", "simulation": "jit"}
# platform_target / NEURON_PLATFORM_TARGET_OVERRIDE spellings -> NeuronCore generation
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


def simulate_kernel(kernel, *args, **kwargs):
    """Run kernel (a jit kernel or a plain function) on trnemu and return its outputs."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    return k(*args, **kwargs)


def simulate(kernel, *args, **kwargs):
    """nki.simulate(kernel)(*args) or nki.simulate(kernel, *args)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    if not args and not kwargs:
        return k
    return k(*args, **kwargs)
