"""_zygote.py: the process a job's ranks are forked from (kernel.ranks()).

A rank's process imports its kernel's module, and with it whatever that
module imports: torch, for the NKI Library's kernels, takes seconds of
CPU, paid by every rank of every job. A zygote is a Python process that
imports the kernel modules once and forks one child per rank:

- the caller (this module's Zygote class, one per calling process) starts
  it with the environment the ranks get, asks it to import each job's
  kernel module before the job, and gives `trnemu launch` a small client
  (_rank_client.py, standard library only) as the rank's program instead
  of `python3 -m nki._ranks`;
- each client hands the zygote its environment, working folder and
  standard streams over a Unix socket; the zygote forks, the child takes
  them on and runs the rank as nki._ranks.main does, and the client waits
  for the child, passes it the launcher's SIGTERM and ends with its
  status. The child dies with its client (a pipe the client holds), and
  the zygote with its caller (its control pipe).

A fork is the fresh process `python3 -m nki._ranks` would give, for what
the kernel sees: the modules as they were imported, the environment the
launcher gave the rank (os.environ, which C code reads too), NumPy's
global random state seeded again. The zygote is started again when what
its imports may have read changes: the interpreter, sys.path, the
environment, or a kernel module's file. A kernel module that fails to
import in the zygote, or a zygote that cannot be had, leaves the job to
fresh processes (which report the error as before).
TRNEMU_NKI_RANKS_FORK=0 always starts fresh processes.
"""
import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

from . import _env, _rank_client

_READY_TIMEOUT_S = 600.0   # how long the caller waits for an import in the zygote
_REAP_S = 0.05             # how often the zygote looks for ended children
_REQUEST_TIMEOUT_S = 10.0  # how long a client may take to send its request
_REQUEST_MAX = 16 << 20    # bytes of a request at most (an environment)
# variables that change while a caller runs and no import reads
_VOLATILE_ENV = ("PYTEST_CURRENT_TEST",)


def enabled():
    return _env.read_bool("TRNEMU_NKI_RANKS_FORK", True)


def client_path():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_rank_client.py")


# ---------------------------------------------------------------- the caller

def _module_stamp(path):
    try:
        st = os.stat(path)
        return [st.st_mtime_ns, st.st_size]
    except (OSError, TypeError):
        return None


class Zygote:
    """A zygote process and what it has imported."""

    def __init__(self, env, key):
        self.key = key
        self.address = os.path.join(tempfile.mkdtemp(prefix="nki-zygote-"), "sock")
        self.imported = {}                    # module name -> (file stamp, imported)
        to_z, self._to_z = os.pipe()          # control: caller -> zygote
        self._from_z, from_z = os.pipe()      # control: zygote -> caller
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "nki._zygote", self.address, str(to_z), str(from_z)],
                env=env, stdin=subprocess.DEVNULL, pass_fds=(to_z, from_z), cwd=os.getcwd())
        except BaseException:
            for fd in (self._to_z, self._from_z):
                os.close(fd)
            _remove_socket(self.address)
            raise
        finally:
            os.close(to_z)
            os.close(from_z)
        self._reply = os.fdopen(self._from_z, "r", encoding="utf-8")

    def alive(self):
        return self.proc.poll() is None

    def prepare(self, job):
        """Import the job's kernel module in the zygote: True when done."""
        name = job["module"]
        if name in self.imported:
            return self.imported[name][1]
        try:
            what = {k: job[k] for k in ("sys_path", "module", "file")}    # what an import needs
            os.write(self._to_z, (json.dumps({"job": what}) + "\n").encode())
            ready, _, _ = select.select([self._reply], [], [], _READY_TIMEOUT_S)
            line = self._reply.readline() if ready else ""
        except (OSError, TypeError, ValueError):   # no zygote, or a sys.path JSON cannot carry
            line = ""
        except BaseException:         # interrupted: its answer would be read as the next one's
            self.close()
            raise
        try:
            ok = json.loads(line).get("ok", False) is True
        except (ValueError, AttributeError):
            return False              # an empty line: the zygote is gone
        self.imported[name] = (_module_stamp(job["file"]), ok)
        return ok

    def close(self):
        try:
            os.close(self._to_z)
        except OSError:
            pass
        self._reply.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        _remove_socket(self.address)      # the zygote removes it as it ends, unless killed


def _remove_socket(address):
    """Remove the socket and the folder made for it."""
    try:
        os.unlink(address)
    except OSError:
        pass
    try:
        os.rmdir(os.path.dirname(address))
    except OSError:
        pass


_lock = threading.Lock()
_current = None


def _key(env):
    return (sys.executable, tuple(sys.path),
            tuple(sorted((k, v) for k, v in env.items() if k not in _VOLATILE_ENV)))


def for_job(job, env):
    """The address of a zygote that has imported the job's kernel module,
    or None (the job's ranks start as fresh processes)."""
    global _current
    if not enabled() or not job.get("module"):
        return None
    key = _key(env)
    with _lock:
        z = _current
        if z is not None and (z.key != key or not z.alive() or
                              job["module"] in z.imported and
                              z.imported[job["module"]][0] != _module_stamp(job["file"])):
            z.close()
            z = _current = None
        if z is None:
            try:
                z = _current = Zygote(env, key)
            except OSError:
                return None
        return z.address if z.prepare(job) else None


@atexit.register
def _close_current():
    global _current
    with _lock:
        if _current is not None:
            _current.close()
            _current = None


# ---------------------------------------------------------------- the zygote

def _send_msg(sock, obj):
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack("<I", len(data)) + data)


def _recv_head(sock, fds):
    """The 4-byte length of a client's request, and the descriptors sent
    with its first bytes into fds."""
    part, got, _, _ = socket.recv_fds(sock, 4, 4)
    fds.extend(got)
    rest = _rank_client._recv_exact(sock, 4 - len(part)) if part else None
    if rest is None:
        raise EOFError
    return struct.unpack("<I", part + rest)[0]


def _import_job(job):
    """Import a job's kernel module here, as a rank would (nki._ranks)."""
    from . import _ranks
    sys.path[:] = job["sys_path"]
    _ranks._import(job)


def _child(conn, request, fds, listener, ctl, siblings):
    """In the forked child: become the rank and run it; never returns.
    siblings: the zygote's connections to other ranks' clients (closed
    here, so that each client sees the zygote's end close with it)."""
    status = 1
    try:
        listener.close()
        for fd in ctl:
            os.close(fd)
        for other in siblings:
            other.close()
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        life = fds[3]
        threading.Thread(target=_die_with_client, args=(life,), daemon=True).start()
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            os.close(fd)
        conn.close()
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        np = sys.modules.get("numpy")
        if np is not None:
            np.random.seed()             # a fresh process's global NumPy state
        sys.argv = ["nki._ranks", request["folder"]]
        from . import _ranks
        status = _ranks.main(request["folder"])
        atexit._run_exitfuncs()          # what a rank's interpreter runs as it exits (nrt_close)
    except BaseException:                # reported by the rank's own error file when it can
        import traceback
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status if isinstance(status, int) else 1)


def _die_with_client(life):
    """The client holds the pipe's other end: when it is gone, so is the rank."""
    while True:
        try:
            if not os.read(life, 1):
                break
        except InterruptedError:
            continue
        except OSError:
            break
    os.kill(os.getpid(), signal.SIGKILL)


def _read_request(conn, fds):
    """A client's request (its environment, folder and working folder) and
    its four descriptors into fds; None for anything else."""
    conn.settimeout(_REQUEST_TIMEOUT_S)  # a client that stalls does not stall the zygote
    try:
        size = _recv_head(conn, fds)
        if size > _REQUEST_MAX:
            return None
        body = _rank_client._recv_exact(conn, size)
        if body is None:
            return None
        request = json.loads(body)
    except (EOFError, OSError, ValueError):
        return None
    conn.settimeout(None)
    ok = (isinstance(request, dict) and len(fds) == 4 and
          isinstance(request.get("env"), dict) and isinstance(request.get("cwd"), str) and
          isinstance(request.get("folder"), str) and
          all(isinstance(k, str) and isinstance(v, str) for k, v in request["env"].items()))
    return request if ok else None


def _serve_request(listener, ctl, children):
    conn, _ = listener.accept()
    fds = []
    request = _read_request(conn, fds)
    if request is None:
        conn.close()
        for fd in fds:
            os.close(fd)
        return
    sys.stdout.flush()                   # nothing of the zygote's is printed twice
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        _child(conn, request, fds, listener, ctl, list(children.values()))
    for fd in fds:
        os.close(fd)
    try:
        _send_msg(conn, {"pid": pid})
    except OSError:
        pass
    children[pid] = conn


def _reap(children):
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        code = os.waitstatus_to_exitcode(status)
        try:
            _send_msg(conn, {"status": code})
        except OSError:
            pass
        conn.close()


def _control(line, reply):
    """Import a job's kernel module; False when it failed (the job's ranks,
    fresh processes, will report why) or when the import loaded the
    runtime's library (a kernel run at import: the runtime's threads and
    device state are not for a fork to take along; the zygote then ends,
    the next job starts another)."""
    from . import _runtime
    try:
        _import_job(json.loads(line)["job"])
        ok = True
    except BaseException:
        ok = False
    tainted = _runtime._lib is not None
    sys.stdout.flush()
    sys.stderr.flush()
    reply.write(json.dumps({"ok": ok and not tainted}) + "\n")
    reply.flush()
    return not tainted


def main(address, ctl_in, ctl_out):
    from . import _ranks
    _ranks._rank_of_job = -1             # a job started at an import is refused
    ctl_in, ctl_out = int(ctl_in), int(ctl_out)
    reply = os.fdopen(ctl_out, "w", encoding="utf-8")
    commands = os.fdopen(ctl_in, "r", encoding="utf-8")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(256)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    children = {}
    try:
        while True:
            ready, _, _ = select.select([commands, listener], [], [], _REAP_S)
            if commands in ready:
                line = commands.readline()
                if not line or not _control(line, reply):
                    break                # the caller is gone, or the runtime library loaded here
            if listener in ready:
                _serve_request(listener, (ctl_in, ctl_out), children)
            _reap(children)
    finally:
        listener.close()
        _remove_socket(address)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
