"""_runtime.py: trnemu's libnrt.so.1 through ctypes, on its public ABI.

Builds a NEFF from assembly lines with the exported C kernel builder
(trnemu_kernel_*, abi/trnemu/trnemu_build.h), loads it with nrt_load,
binds NumPy arrays to device tensors and runs nrt_execute. The runtime is
started on first use (nrt_init) and closed at interpreter exit.

The library is the one already loaded in the process (`trnemu exec`
preloads it), else TRNEMU_LIBNRT, else one found next to this package:
<prefix>/python/../lib/libnrt.so.1 (installed) or
<source>/python/../build/shims/libnrt.so.1 (a source tree).
"""
import atexit
import ctypes
import os
import re
import sys
import threading
import weakref

import numpy as np

from . import _env

NRT_SUCCESS = 0
_lock = threading.RLock()
_lib = None
_started = False


class RuntimeFailure(Exception):
    """A libnrt call failed: status, its name and what the log said."""

    def __init__(self, call, status, text, log):
        super().__init__("%s failed: %s (%d)%s" % (call, text, status, (": " + log) if log else ""))
        self.status = status      # NRT_STATUS value
        self.log = log            # the runtime's log lines for the call


def _candidates():
    env = os.environ.get("TRNEMU_LIBNRT")
    if env:
        yield env
    yield "libnrt.so.1"
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for rel in ("../lib", "../lib/x86_64-linux-gnu", "../lib64", "../build/shims"):
        yield os.path.join(here, rel, "libnrt.so.1")


def lib():
    """The loaded libnrt.so.1 (trnemu's), with argument types declared."""
    global _lib
    with _lock:
        if _lib is not None:
            return _lib
        tried = []
        for cand in _candidates():
            try:
                cand_lib = ctypes.CDLL(cand)
            except OSError as e:
                tried.append("%s (%s)" % (cand, e))
                continue
            if not hasattr(cand_lib, "trnemu_kernel_create"):
                tried.append("%s (not trnemu's libnrt)" % cand)
                continue
            if not hasattr(cand_lib, "trnemu_log_tap_begin"):
                tried.append("%s (a trnemu libnrt older than this nki package)" % cand)
                continue
            _declare(cand_lib)
            _lib = cand_lib
            return _lib
        raise RuntimeError("nki: cannot find trnemu's libnrt.so.1; run under "
                           "`trnemu exec -- python3 ...` or set TRNEMU_LIBNRT (tried: %s)"
                           % "; ".join(tried))


class _VncMemoryStats(ctypes.Structure):
    """nrt_vnc_memory_stats_t (nrt.h)."""
    _fields_ = [("bytes_used", ctypes.c_size_t), ("bytes_limit", ctypes.c_size_t)]


def device_bytes_used(L):
    """Bytes of device memory allocated on the VNC kernels load on."""
    stats, got = _VncMemoryStats(), ctypes.c_size_t()
    st = L.nrt_get_vnc_memory_stats(vnc(), ctypes.byref(stats), ctypes.sizeof(stats), ctypes.byref(got))
    return stats.bytes_used if st == NRT_SUCCESS else 0


def _declare(L):
    P, S, I, U64, U32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint32
    PP = ctypes.POINTER(ctypes.c_void_p)
    sig = {
        "nrt_init": ([I, ctypes.c_char_p, ctypes.c_char_p], I),
        "nrt_close": ([], None),
        "nrt_load": ([P, S, ctypes.c_int32, ctypes.c_int32, PP], I),
        "nrt_load_collectives": ([P, S, ctypes.c_int32, ctypes.c_int32, U32, U32, PP], I),
        "nrt_unload": ([P], I),
        "nrt_execute": ([P, P, P], I),
        "nrt_profile_start": ([P, ctypes.c_char_p], I),
        "nrt_profile_stop": ([ctypes.c_char_p], I),
        "nrt_tensor_allocate": ([I, I, S, ctypes.c_char_p, PP], I),
        "nrt_tensor_free": ([PP], None),
        "nrt_tensor_write": ([P, P, U64, S], I),
        "nrt_tensor_read": ([P, P, U64, S], I),
        "nrt_tensor_attach_buffer": ([P, P, S], I),
        "nrt_tensor_memset": ([P, U64, ctypes.c_int, S], I),
        "nrt_allocate_tensor_set": ([PP], I),
        "nrt_destroy_tensor_set": ([PP], None),
        "nrt_add_tensor_to_tensor_set": ([P, ctypes.c_char_p, P], I),
        "nrt_get_status_as_str": ([I], ctypes.c_char_p),
        "nrt_get_vnc_memory_stats": ([U32, ctypes.POINTER(_VncMemoryStats), S, ctypes.POINTER(S)], I),
        "trnemu_kernel_create": ([ctypes.c_char_p, PP], I),
        "trnemu_log_tap_begin": ([], None),
        "trnemu_log_tap_end": ([ctypes.POINTER(ctypes.c_char_p)], S),
        "trnemu_kernel_free": ([P], None),
        "trnemu_kernel_add_input": ([P, ctypes.c_char_p, I, ctypes.POINTER(U32), U32], I),
        "trnemu_kernel_add_output": ([P, ctypes.c_char_p, I, ctypes.POINTER(U32), U32], I),
        "trnemu_kernel_add_scratch": ([P, ctypes.c_char_p, U64], I),
        "trnemu_kernel_add_const": ([P, ctypes.c_char_p, I, ctypes.POINTER(U32), U32, ctypes.c_char_p, S], I),
        "trnemu_kernel_assemble": ([P, ctypes.c_char_p, S], I),
        "trnemu_kernel_write": ([P, PP, ctypes.POINTER(S)], I),
        "trnemu_kernel_buffer_free": ([P], None),
        "trnemu_kernel_error": ([P], ctypes.c_char_p),
        "nrt_sys_trace_config_allocate": ([PP], I),
        "nrt_sys_trace_config_free": ([P], None),
        "nrt_sys_trace_config_set_max_events_per_nc": ([P, U64], None),
        "nrt_sys_trace_config_set_capture_enabled_for_event_type": ([P, ctypes.c_char_p, ctypes.c_bool], I),
        "nrt_sys_trace_start": ([P], I),
        "nrt_sys_trace_stop": ([], I),
        "nrt_sys_trace_fetch_events": ([ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(S), P], I),
        "nrt_sys_trace_buffer_free": ([ctypes.c_char_p], None),
    }
    for name, (args, res) in sig.items():
        f = getattr(L, name)
        f.argtypes = args
        f.restype = res


class _Capture:
    """Collect what the runtime logs during one call and pass it on
    unchanged through sys.stderr, so a failure can be tied to a kernel
    line: trnemu_log_tap_begin/end keep the lines it would print to
    stderr (from every thread, as the window sees them) instead of
    printing them."""

    lock = threading.Lock()  # one tap at a time: it is process-wide
    text_ptr = ctypes.c_char_p()    # where trnemu_log_tap_end puts the kept lines
    text_ref = ctypes.pointer(text_ptr)

    def __init__(self, L=None):
        self.L = L

    def __enter__(self):
        _Capture.lock.acquire()
        if self.L is None:
            self.L = lib()
        self.L.trnemu_log_tap_begin()
        return self

    def __exit__(self, *exc):
        try:
            self.text = _Capture.end(self.L)
        finally:
            _Capture.lock.release()
        _Capture.pass_on(self.text)
        return False

    @staticmethod
    def end(L):
        """Close the tap (lock held): the lines it kept ("" for none), read
        before another tap reuses its buffer."""
        n = L.trnemu_log_tap_end(_Capture.text_ref)
        if not n:
            return ""
        addr = ctypes.cast(_Capture.text_ptr, ctypes.c_void_p).value
        return ctypes.string_at(addr, n).decode("utf-8", "replace")

    @staticmethod
    def pass_on(text):
        """Print the kept lines through sys.stderr, as the runtime would have."""
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()


def _layout(a):
    """What places an array's bytes: its data address, shape, strides and
    dtype (the same as at its attach: still there, still contiguous)."""
    return a.ctypes.data, a.shape, a.strides, a.dtype


def _status(L, st):
    s = L.nrt_get_status_as_str(st)
    return s.decode() if s else "status %d" % st


_own_cores = False   # True: start() claimed only TRNEMU_NKI_VNC (it is visible index 0)


def vnc():
    """The VNC kernels load on: TRNEMU_NKI_VNC, else the first visible one (0)."""
    return 0 if _own_cores else _env.read_uint("TRNEMU_NKI_VNC", 0, 65535, 0)


def _init(L):
    """nrt_init claiming only the VNC kernels run on when the user chose no
    cores (NEURON_RT_VISIBLE_CORES / NEURON_RT_NUM_CORES), so that another
    program (or another NKI session) can use the others."""
    global _own_cores
    if os.environ.get("NEURON_RT_VISIBLE_CORES") or os.environ.get("NEURON_RT_NUM_CORES"):
        return L.nrt_init(1, b"", b"")
    os.environ["NEURON_RT_VISIBLE_CORES"] = str(_env.read_uint("TRNEMU_NKI_VNC", 0, 65535, 0))
    try:
        st = L.nrt_init(1, b"", b"")
    finally:
        del os.environ["NEURON_RT_VISIBLE_CORES"]
    _own_cores = st == NRT_SUCCESS
    return st


def start():
    global _started
    L = lib()
    with _lock:
        if not _started:
            with _Capture(L) as cap:
                st = _init(L)
            if st != NRT_SUCCESS:
                raise RuntimeFailure("nrt_init", st, _status(L, st), cap.text.strip())
            _started = True
            atexit.register(_stop)
    return L


def _stop():
    global _started
    if _started:
        for m in list(Model.live):
            m.unload()
        lib().nrt_close()
        _started = False


def _event_types(L):
    """Every system trace event type but nc_exec_running is turned off."""
    names = ("nrt_load", "nrt_unload", "nrt_execute", "nrt_tensor_read", "nrt_tensor_write",
             "nrt_tensor_copy", "nrta_request", "cc_running", "numerical_err")
    return [(n, False) for n in names] + [("nc_exec_running", True)]


def device_times(run):
    """Call run() under a system trace capture of executions only (the
    public nrt_sys_trace_* API) and return (run's result, the estimated
    device time in ns of each execution it made, in order). A capture
    already running (inspect) is left alone and no times are returned."""
    L = start()
    if os.environ.get("NEURON_RT_INSPECT_ENABLE", "0") not in ("", "0"):
        return run(), []
    cfg = ctypes.c_void_p()
    if L.nrt_sys_trace_config_allocate(ctypes.byref(cfg)) != NRT_SUCCESS:
        return run(), []
    L.nrt_sys_trace_config_set_max_events_per_nc(cfg, 1 << 16)
    for name, on in _event_types(L):
        L.nrt_sys_trace_config_set_capture_enabled_for_event_type(cfg, name.encode(), on)
    st = L.nrt_sys_trace_start(cfg)
    L.nrt_sys_trace_config_free(cfg)
    if st != NRT_SUCCESS:
        return run(), []
    try:
        out = run()
        buf, n = ctypes.c_char_p(), ctypes.c_size_t()
        if L.nrt_sys_trace_fetch_events(ctypes.byref(buf), ctypes.byref(n), None) != NRT_SUCCESS:
            return out, []
        text = ctypes.string_at(buf, n.value).decode()
        L.nrt_sys_trace_buffer_free(buf)
    finally:
        L.nrt_sys_trace_stop()
    return out, _exec_times(text)


def _exec_times(text):
    """Device time (ns) of each nc_exec_running start/stop pair of a fetched
    system trace; the executions of one call on several cores count once,
    as the longest."""
    import json
    start_at, per_call = {}, {}
    for e in json.loads(text).get("events", []):
        if e.get("event_type") != "nc_exec_running":
            continue
        d = e.get("data", {})
        if e.get("phase") == "start":
            start_at[e["tracking_id"]] = d.get("nc_timestamp_ns", 0)
        elif e.get("phase") == "stop" and e["tracking_id"] in start_at:
            ns = d.get("nc_timestamp_ns", 0) - start_at[e["tracking_id"]]
            call = d.get("value", e["tracking_id"])
            per_call[call] = max(per_call.get(call, 0), ns)
    return [per_call[k] for k in sorted(per_call)]


class _MachineInfo(ctypes.Structure):
    _fields_ = [("instance_type", ctypes.c_char * 32), ("chip_name", ctypes.c_char * 32),
                ("chips", ctypes.c_uint32), ("cores_per_chip", ctypes.c_uint32),
                ("nc_generation", ctypes.c_uint32), ("lnc", ctypes.c_uint32),
                ("total_vncs", ctypes.c_uint32), ("visible_vncs", ctypes.c_uint32),
                ("hbm_stacks", ctypes.c_uint32), ("reserved", ctypes.c_uint32),
                ("hbm_bytes_per_chip", ctypes.c_uint64)]


def machine_info():
    """What the emulated machine is (trnemu_get_machine_info): a dict with
    instance_type, chip_name, nc_generation (2: NeuronCore-v2 ... 4:
    NeuronCore-v4) and lnc; empty when the library cannot say."""
    L = lib()
    info = _MachineInfo()
    f = L.trnemu_get_machine_info
    f.argtypes = [ctypes.POINTER(_MachineInfo), ctypes.c_size_t]
    f.restype = ctypes.c_int
    with _Capture(L):
        st = f(ctypes.byref(info), ctypes.sizeof(info))
    if st != NRT_SUCCESS:
        return {}
    return {"instance_type": info.instance_type.decode(), "chip_name": info.chip_name.decode(),
            "nc_generation": info.nc_generation, "lnc": info.lnc}


def machine_lnc():
    """Physical NeuronCores per logical core of the emulated machine (1 if unknown)."""
    return machine_info().get("lnc") or 1


def machine_generation():
    """NeuronCore generation of the emulated machine (2, 3 or 4; 2 if unknown)."""
    return machine_info().get("nc_generation") or 2


def build_neff(name, head, subgraphs):
    """Assemble a NEFF from the head lines (semaphore names) and one
    (declarations, lines) pair per subgraph. Returns (bytes, None) or
    (None, (line number over everything appended, cause))."""
    L = lib()
    k = ctypes.c_void_p()
    st = L.trnemu_kernel_create(name.encode(), ctypes.byref(k))
    if st != NRT_SUCCESS:
        raise RuntimeFailure("trnemu_kernel_create", st, _status(L, st), "")
    try:
        with _Capture(L):
            st = _assemble(L, k, head)
            for i, (decls, lines) in enumerate(subgraphs):
                if st == NRT_SUCCESS and i > 0:
                    st = _assemble(L, k, [".subgraph"])
                for kind, nm, nrt, shape, nbytes in decls:
                    if st != NRT_SUCCESS:
                        break
                    if kind == "scratch":
                        st = L.trnemu_kernel_add_scratch(k, nm.encode(), nbytes)
                    elif kind == "shared":   # nrt holds the offset in the shared scratchpad
                        st = _assemble(L, k, [".var %s type=virtual size=%d backing_off=%d"
                                              % (nm, nbytes, nrt)])
                    elif kind == "const":
                        arr = (ctypes.c_uint32 * max(1, len(shape)))(*shape)
                        st = L.trnemu_kernel_add_const(k, nm.encode(), nrt, arr, len(shape),
                                                       nbytes, len(nbytes))
                    else:
                        arr = (ctypes.c_uint32 * max(1, len(shape)))(*shape)
                        fn = L.trnemu_kernel_add_input if kind == "input" else L.trnemu_kernel_add_output
                        st = fn(k, nm.encode(), nrt, arr, len(shape))
                if st == NRT_SUCCESS:
                    st = _assemble(L, k, lines)
            buf, size = ctypes.c_void_p(), ctypes.c_size_t()
            if st == NRT_SUCCESS:
                st = L.trnemu_kernel_write(k, ctypes.byref(buf), ctypes.byref(size))
        if st != NRT_SUCCESS:
            err = (L.trnemu_kernel_error(k) or b"assembly failed").decode()
            m = re.search(r":(\d+):\d+: (.*)$", err)
            return None, ((int(m.group(1)), m.group(2)) if m else (0, err))
        data = ctypes.string_at(buf, size.value)
        L.trnemu_kernel_buffer_free(buf)
        return data, None
    finally:
        L.trnemu_kernel_free(k)


def _assemble(L, k, lines):
    if not lines:
        return NRT_SUCCESS
    text = ("\n".join(lines) + "\n").encode()
    return L.trnemu_kernel_assemble(k, text, len(text))


class Model:
    """A loaded NEFF with its device tensors, reused by every call."""

    live = set()

    def __init__(self, neff, tensors, rank=None):
        """rank: (this rank, number of ranks) for a NEFF with collectives,
        loaded with nrt_load_collectives; None for nrt_load."""
        L = start()
        self.L = L
        self.model = ctypes.c_void_p()
        before = device_bytes_used(L)
        with _Capture(L) as cap:
            if rank is None:
                call = "nrt_load"
                st = L.nrt_load(neff, len(neff), vnc(), 1, ctypes.byref(self.model))
            else:
                call = "nrt_load_collectives"
                st = L.nrt_load_collectives(neff, len(neff), vnc(), -1, rank[0], rank[1],
                                            ctypes.byref(self.model))
        if st != NRT_SUCCESS:
            raise RuntimeFailure(call, st, _status(L, st), cap.text.strip())
        Model.live.add(self)
        self.tensors = {}           # name -> (nrt_tensor_t*, nbytes)
        self.kinds = {}             # name -> 'input' or 'output'
        self.borrowed = {}          # name -> the host array its tensor uses (attach)
        self.lent = {}              # name -> (weak reference, layout) of the array it uses (lend)
        self.sets = {}
        for which in ("input", "output"):
            s = ctypes.c_void_p()
            L.nrt_allocate_tensor_set(ctypes.byref(s))
            self.sets[which] = s
        for kind, name, nbytes in tensors:
            t = ctypes.c_void_p()
            st = L.nrt_tensor_allocate(0, 0, max(1, nbytes), name.encode(), ctypes.byref(t))
            if st != NRT_SUCCESS:
                raise RuntimeFailure("nrt_tensor_allocate", st, _status(L, st), "")
            self.tensors[name] = (t, nbytes)
            self.kinds[name] = kind
            L.nrt_add_tensor_to_tensor_set(self.sets[kind], name.encode(), t)
        # what the load and its tensors took (loads take turns: _lock)
        self.device_bytes = max(0, device_bytes_used(L) - before)

    def attach(self, name, arr):
        """Let tensor name use the host array arr (copied first when it is
        not contiguous) until the next attach: nrt_tensor_attach_buffer, so
        an execution reads or writes the array itself. The model keeps
        the array alive while its tensor points at it."""
        if self.borrowed.get(name) is arr:
            return                  # the same array as last time: still attached
        self.borrowed[name] = self._attach_buffer(name, arr)
        self.lent.pop(name, None)

    def lend(self, name, arr):
        """Like attach, but the model keeps no reference to the array: only
        a weak one and its layout (data address, shape, strides, dtype),
        which tell the next lend whether it is given the same live array,
        still where it was: then nothing is attached again; else (the
        array dropped, maybe freed, or another one) it is attached anew.
        Returns the array attached (arr, or a contiguous copy), which the
        caller keeps alive until the execution has ended; execute refuses
        to run while a lent array is gone."""
        rec = self.lent.get(name)
        if rec is not None and rec[0]() is arr and rec[1] == _layout(arr):
            return arr
        a = self._attach_buffer(name, arr)
        self.lent[name] = (weakref.ref(a), _layout(a))
        self.borrowed.pop(name, None)
        return a

    def _attach_buffer(self, name, arr):
        """nrt_tensor_attach_buffer of tensor name to arr, or to a
        contiguous copy of it: the array attached."""
        t, n = self.tensors[name]
        a = arr if arr.flags.c_contiguous else np.ascontiguousarray(arr)
        if a.nbytes != n:
            raise ValueError("tensor %s is %d bytes; the array has %d" % (name, n, a.nbytes))
        st = self.L.nrt_tensor_attach_buffer(t, a.ctypes.data, n)
        if st != NRT_SUCCESS:
            raise RuntimeFailure("nrt_tensor_attach_buffer", st, _status(self.L, st), "")
        return a

    def _check_lent(self):
        """Refuse an execution while a tensor uses a lent array that is
        gone (its memory may be freed): lend it again first."""
        for name, (ref, _) in self.lent.items():
            if ref() is None:
                raise RuntimeError("tensor %s uses an array that no longer exists: "
                                   "lend it another one before executing" % name)

    def zero(self, name):
        """Fill tensor name with zero bytes (nrt_tensor_memset)."""
        t, n = self.tensors[name]
        st = self.L.nrt_tensor_memset(t, 0, 0, n)
        if st != NRT_SUCCESS:
            raise RuntimeFailure("nrt_tensor_memset", st, _status(self.L, st), "")

    def read(self, name, arr):
        t, n = self.tensors[name]
        st = self.L.nrt_tensor_read(t, arr.ctypes.data, 0, n)
        if st != NRT_SUCCESS:
            raise RuntimeFailure("nrt_tensor_read", st, _status(self.L, st), "")

    def execute(self, quiet=False):
        """Run once; returns (status, log text)."""
        if self.lent:
            self._check_lent()
        if quiet:
            st = self.L.nrt_execute(self.model, self.sets["input"], self.sets["output"])
            return st, ""
        L = self.L
        with _Capture.lock:     # _Capture, unrolled: this is every call's path
            L.trnemu_log_tap_begin()
            try:
                st = L.nrt_execute(self.model, self.sets["input"], self.sets["output"])
            finally:
                text = _Capture.end(L)
        _Capture.pass_on(text)
        return st, text

    def status_text(self, st):
        return _status(self.L, st)

    def loaded(self):
        """Still loaded (not unloaded by the kernel cache)?"""
        return bool(self.model)

    def unload(self):
        if self.model:
            for t, _ in self.tensors.values():
                self.L.nrt_tensor_free(ctypes.byref(t))
            for s in self.sets.values():
                self.L.nrt_destroy_tensor_set(ctypes.byref(s))
            self.L.nrt_unload(self.model)
            self.model = ctypes.c_void_p()
        Model.live.discard(self)
