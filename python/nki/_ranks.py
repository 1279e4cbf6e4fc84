"""_ranks.py: a kernel run on N ranks, each rank a process of its own.

    outs = nki.cpu_simulate(kernel)[lnc].ranks([inputs_0, inputs_1, ...])
    outs = kernel.ranks([...])                 # an @nki.jit kernel, any launch grid

runs the kernel once per rank, every rank a real trnemu rank: the job is
started with `trnemu launch -n N` (one process per rank, RANK and
WORLD_SIZE set, each on its own VNC of one emulated instance that the
launcher names and removes), so the kernel's nki.collectives calls exchange
data over the emulated links exactly as in a job a user starts by hand.
Entry r of the list is rank r's arguments: a dict of keyword arguments, or
a tuple or list of positional ones. The result is a list with rank r's
outputs (whatever the kernel returns) at index r.

Each rank's process imports the kernel by its module and qualified name
(the kernel must be defined at the top level of a module or class), with
the caller's sys.path; arguments and results travel as pickles through a
temporary folder. The ranks are forked from a zygote that imported the
kernel's module once for the caller (_zygote.py; TRNEMU_NKI_RANKS_FORK=0:
fresh processes). A rank that fails ends the job at once (the others are
stopped rather than left waiting for it in a collective) and its error is
raised here, naming the rank (its stack, as (file, function) pairs, in the
error's rank_frames; its exception's type name and message in rank_error). The caller's own runtime (its VNC) is not
used. This module is also the program each rank runs
(`python3 -m nki._ranks FOLDER`). A rank's process starts no job of its
own: a script that starts one at its top level, outside `if __name__ ==
"__main__":`, would start it again in every rank as the rank imports the
script for its kernel (N ranks each starting N more, without end); the
rank fails with an NKIError saying so instead.
"""
import importlib
import importlib.util
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from . import _env
from ._core import NKIError, NKIIndexError

_POLL_S = 0.05          # how often the caller looks for a failed rank
_STOP_GRACE_S = 10.0    # how long stopped ranks get to exit before SIGKILL
_DEFAULT_TIMEOUT_S = 600.0
_rank_of_job = None     # in a rank's process: its rank (set by main)


# ---------------------------------------------------------------- the caller

def _lookup(module, qualname):
    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _reference(kernel):
    """(module name, module file, qualified name) by which a rank's process
    finds the kernel; NKIError for a kernel it cannot find."""
    func = kernel.func
    mod, qual = getattr(func, "__module__", None), getattr(func, "__qualname__", "")
    where = "%s:%d" % (func.__code__.co_filename, func.__code__.co_firstlineno)
    if "<locals>" in qual or not mod:
        raise NKIError("%s: a kernel run on several ranks is imported by each rank's process by "
                       "its name: define %s at the top level of a module (it is defined inside "
                       "a function)" % (where, kernel.__name__))
    module = sys.modules.get(mod)
    obj = _lookup(module, qual) if module is not None else None
    if obj is not func and getattr(obj, "func", None) is not func:
        raise NKIError("%s: a kernel run on several ranks is imported by each rank's process "
                       "as %s.%s, which does not name it" % (where, mod, qual))
    return mod, getattr(module, "__file__", None), qual


def _loaded_library():
    """The path of the libnrt.so.1 this process uses."""
    from . import _runtime
    name = getattr(_runtime.lib(), "_name", "")
    if os.path.sep in name:
        return os.path.realpath(name)
    with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
        for line in f:
            path = line.split()[-1]
            if path.endswith("/libnrt.so.1") or "/libnrt.so" in path:
                return path
    return None


def _tool(libnrt):
    """The trnemu command that starts the ranks: TRNEMU_TOOL, else the one
    beside the library (a build tree's tools/, an installed prefix's bin/),
    else the first on PATH."""
    env = os.environ.get("TRNEMU_TOOL")
    cands = [env] if env else []
    if libnrt:
        up = os.path.dirname(os.path.dirname(libnrt))
        cands += [os.path.join(up, "tools", "trnemu"), os.path.join(up, "bin", "trnemu")]
    found = shutil.which("trnemu")
    if found:
        cands.append(found)
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise NKIError("running a kernel on several ranks needs the trnemu command (trnemu launch): "
                   "set TRNEMU_TOOL or put it on PATH (tried %s)" % (", ".join(cands) or "PATH"))


def _split_inputs(inputs):
    """[(args, kwargs)] per rank from the caller's list."""
    if isinstance(inputs, (dict, str, bytes)) or not hasattr(inputs, "__len__"):
        raise NKIError("ranks() takes a list with one entry per rank (a dict of keyword "
                       "arguments or a tuple of positional ones), got %r" % type(inputs).__name__)
    out = []
    for r, entry in enumerate(inputs):
        if isinstance(entry, dict):
            out.append(((), dict(entry)))
        elif isinstance(entry, (tuple, list)):
            out.append((tuple(entry), {}))
        else:
            raise NKIError("ranks(): rank %d's inputs are a %s; give a dict of keyword arguments "
                           "or a tuple of positional ones" % (r, type(entry).__name__))
    if not out:
        raise NKIError("ranks() needs the inputs of at least one rank")
    return out


def _dump(path, value):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def _load(path):
    with open(path, "rb") as f:
        return pickle.load(f)


def _child_env(libnrt):
    env = dict(os.environ)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join([pkg_parent] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if libnrt:
        env["TRNEMU_LIBNRT"] = libnrt
    # the launcher names (and afterwards removes) an instance of the job's
    # own, and gives each rank its VNC: nothing of the caller's choice
    # (a multi-node bootstrap address included: the job is this host's)
    for k in ("TRNEMU_INSTANCE_NAME", "NEURON_RT_VISIBLE_CORES", "NEURON_RT_NUM_CORES",
              "TRNEMU_NKI_VNC", "RANK", "LOCAL_RANK", "WORLD_SIZE", "NEURON_RT_ROOT_COMM_ID"):
        env.pop(k, None)
    return env


def _first_failure(folder, n):
    for r in range(n):
        path = os.path.join(folder, "err-%d.pkl" % r)
        if os.path.exists(path):
            return r, _load(path)
    return None


def _stop(proc):
    """End the launcher and its ranks (it passes SIGTERM on to them)."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _raise_rank_error(r, n, err):
    """Raise a rank's failure here: an NKIError (NKIIndexError) of the
    rank's message (an IndexError, such as an indexed DMA's, as it is,
    its notes naming the rank), with the rank's stack as (file, function) pairs in
    its rank_frames attribute."""
    kind, msg, frames, notes = err
    if kind in ("NKIError", "NKIIndexError"):
        e = (NKIIndexError if kind == "NKIIndexError" else NKIError)("rank %d of %d: %s" % (r, n, msg))
    elif kind == "IndexError":      # NumPy's, as an indexed DMA past its tensor raises it
        e = IndexError(msg)
        for note in notes or (["%s:%d" % frames[-1][:2]] if frames else []):
            e.add_note("rank %d of %d: %s" % (r, n, note))
    else:
        where = " (%s:%d)" % frames[-1][:2] if frames else ""
        e = NKIError("rank %d of %d: %s: %s%s" % (r, n, kind, msg, where))
    e.rank_frames = [(f, name) for f, _, name in frames]
    e.rank_error = (kind, msg)
    raise e


def _log_text(path, limit=4000):
    """What a rank log holds (its last limit characters), without the
    launcher's line naming the instance."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if not ln.startswith("trnemu launch: instance ")]
    text = "\n".join(lines)
    return text if limit is None else text[-limit:]


def _timeout(given):
    """Seconds the job may take: timeout=, else TRNEMU_NKI_RANKS_TIMEOUT (a
    duration by the env table's rules, docs/env.md), else 600."""
    if given is None:
        seconds = _env.read_seconds("TRNEMU_NKI_RANKS_TIMEOUT", 10000000, _DEFAULT_TIMEOUT_S)
        if seconds > 0:
            return seconds
        raise NKIError("ranks(): TRNEMU_NKI_RANKS_TIMEOUT is 0; a job of ranks needs a bound")
    try:
        seconds = float(given)
    except (TypeError, ValueError):
        seconds = -1.0
    if not seconds > 0:
        raise NKIError("ranks(): the timeout %r (timeout=) is not a positive number of seconds"
                       % (given,))
    return seconds


def _write_job(folder, kernel, per_rank):
    """The job's description and each rank's arguments, as pickles; the
    description."""
    mod, path, qual = _reference(kernel)
    job = {"sys_path": list(sys.path), "module": mod, "file": path, "qualname": qual,
           "grid": kernel.grid, "shard": kernel.shard, "mode": kernel.mode, "opts": kernel.opts}
    _dump(os.path.join(folder, "job.pkl"), job)
    for r, entry in enumerate(per_rank):
        _dump(os.path.join(folder, "in-%d.pkl" % r), entry)
    return job


def _rank_command(folder, job, env):
    """What the launcher starts for each rank: a client of a zygote that
    has imported the kernel's module (_zygote.py), else a fresh process."""
    from . import _zygote
    address = _zygote.for_job(job, env)
    if address is not None:
        return [sys.executable, _zygote.client_path(), address, folder]
    return [sys.executable, "-m", "nki._ranks", folder]


def _launch(folder, job, n, timeout):
    """Run the job with `trnemu launch`, stopped as soon as a rank reports
    a failure; (launcher's exit status, the lowest failed rank's (rank,
    error) or None). The ranks' output goes to out.txt and err.txt."""
    libnrt = _loaded_library()
    env = _child_env(libnrt)
    cmd = [_tool(libnrt), "launch", "-n", str(n), "--timeout", "%g" % timeout, "--"]
    cmd += _rank_command(folder, job, env)
    with open(os.path.join(folder, "out.txt"), "wb") as out, \
            open(os.path.join(folder, "err.txt"), "wb") as err:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        failed = None
        try:
            while proc.poll() is None and failed is None:
                time.sleep(_POLL_S)
                failed = _first_failure(folder, n)
        finally:
            _stop(proc)
    return proc.returncode, _first_failure(folder, n) or failed


def _results(folder, kernel, n, status, timeout):
    """Each rank's outputs, in rank order."""
    outs = []
    for r in range(n):
        path = os.path.join(folder, "out-%d.pkl" % r)
        if not os.path.exists(path):
            why = ("the job ran past %gs" % timeout if status == 124 else
                   "trnemu launch exited with status %d" % status)
            text = _log_text(os.path.join(folder, "err.txt"))
            raise NKIError("%s: rank %d of %d ended without a result (%s)%s"
                           % (kernel.__name__, r, n, why, (":\n" + text) if text else ""))
        outs.append(_load(path))
    return outs


def run(kernel, inputs, timeout=None):
    """Run kernel (a Kernel) on len(inputs) ranks; a list of each rank's
    outputs, in rank order. What the ranks printed is passed on to this
    process's stdout and stderr (the launcher's own line left out)."""
    _refuse_nested_job()
    per_rank = _split_inputs(inputs)
    timeout = _timeout(timeout)
    folder = tempfile.mkdtemp(prefix="nki-ranks-")
    try:
        job = _write_job(folder, kernel, per_rank)
        status, failed = _launch(folder, job, len(per_rank), timeout)
        if failed is not None:
            _raise_rank_error(failed[0], len(per_rank), failed[1])
        outs = _results(folder, kernel, len(per_rank), status, timeout)
        for name, stream in (("out.txt", sys.stdout), ("err.txt", sys.stderr)):
            text = _log_text(os.path.join(folder, name), limit=None)
            if text.strip():
                stream.write(text + "\n")
        return outs
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _refuse_nested_job():
    """NKIError in a rank's process: a job started there is the caller's
    top-level code run again by the rank's import of its script."""
    if _rank_of_job is not None:
        raise NKIError("ranks(): this process is rank %d of a job of ranks, which imports the "
                       "kernel's script again; a script that starts a job at its top level "
                       "starts one in every rank: put that code under "
                       "`if __name__ == \"__main__\":`" % _rank_of_job)


# ---------------------------------------------------------------- one rank

def _import(job):
    """The kernel's module in this process: by name, else (a script run
    as __main__, or a name this path does not reach) from its file."""
    if job["module"] != "__main__":
        try:
            return importlib.import_module(job["module"])
        except ImportError:
            if not job["file"]:
                raise
    name = job["module"] if job["module"] != "__main__" else "__nki_ranks_main__"
    if name in sys.modules:              # a rank forked from a zygote that loaded it
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, job["file"])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _kernel(job):
    from ._kernel import Kernel
    obj = _lookup(_import(job), job["qualname"])
    func = getattr(obj, "func", obj)
    if not callable(func):
        raise NKIError("%s.%s is not a kernel in rank %s's process"
                       % (job["module"], job["qualname"], os.environ.get("RANK")))
    return Kernel(func, job["grid"], job["mode"], job["shard"], **job["opts"])


def main(folder):
    rank = int(os.environ.get("RANK", "0"))
    # this file runs as __main__: the flag goes on the module that kernels'
    # own `ranks()` calls reach
    importlib.import_module("nki._ranks")._rank_of_job = rank
    try:
        job = _load(os.path.join(folder, "job.pkl"))
        sys.path[:] = job["sys_path"]
        kernel = _kernel(job)
        args, kwargs = _load(os.path.join(folder, "in-%d.pkl" % rank))
        out = kernel(*args, **kwargs)
        _dump(os.path.join(folder, "out-%d.pkl" % rank), out)
    except BaseException as e:     # every failure goes back to the caller
        _dump(os.path.join(folder, "err-%d.pkl" % rank),
              (type(e).__name__, str(e),
               [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(e.__traceback__)],
               list(getattr(e, "__notes__", ()))))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
