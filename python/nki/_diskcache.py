"""_diskcache.py: the kernel cache kept on disk, so that another process
calling the same kernel with the same key loads the traced and assembled
NEFF instead of tracing it again (docs/nki.md, "The kernel cache").

One file per key in TRNEMU_NKI_CACHE_DIR (default
$XDG_CACHE_HOME/trnemu/nki, else ~/.cache/trnemu/nki); TRNEMU_NKI_CACHE=0
turns the disk cache off. A file is written to a temporary name in the
same folder and renamed over the final one, so a reader sees a whole file
or none, and processes that write the same key at once each leave a
whole file. A file that is truncated, corrupt or of another format is
ignored with one log line and written anew. The folder is kept under
TRNEMU_NKI_CACHE_MAX_MB (default 2048; 0: no limit): after a write, the
files used least recently (a load touches its file) go first. The folder
is listed only when this process's count of it (its size when last
listed, plus what the process wrote since) passes the limit, or every
64th write (other processes' files), not at every write.

File layout: the magic line, then the lengths of the record (JSON) and
of the NEFF (8 bytes each, little endian), the SHA-256 of record and
NEFF together, the record, the NEFF.
"""
import hashlib
import json
import os
import struct
import sys
import tempfile

from . import _env
from ._core import NKIError

MAGIC = b"TRNEMU-NKI-CACHE 1\n"
_HEAD = struct.Struct("<QQ32s")
_SUFFIX = ".nkic"
_DEFAULT_MAX_MB = 2048
_SCAN_EVERY = 64           # writes between two listings of a folder under its limit
_counts = {}               # folder -> [bytes when last listed, bytes written since, writes since]
_write_failed = False      # a failed write is reported once per process


def folder():
    """The cache folder, or None when the disk cache is off. A
    TRNEMU_NKI_CACHE_DIR longer than 4095 bytes is an NKIError, as
    nrt_init refuses it."""
    if not _env.read_bool("TRNEMU_NKI_CACHE", True):
        return None
    max_bytes()               # a malformed limit is refused before any trace
    d = os.environ.get("TRNEMU_NKI_CACHE_DIR", "")
    if len(d.encode()) > 4095:
        raise NKIError("TRNEMU_NKI_CACHE_DIR: a path of at most 4095 bytes is expected "
                       "(%d given)" % len(d.encode()))
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "trnemu", "nki")


def path_of(digest):
    """The file of one key digest (None when the disk cache is off)."""
    d = folder()
    return None if d is None else os.path.join(d, digest + _SUFFIX)


def _log(msg):
    sys.stderr.write("nki: kernel cache: %s\n" % msg)
    sys.stderr.flush()


def load(path):
    """(record, NEFF bytes) stored at path; None when there is no file,
    or when it is unreadable, truncated or corrupt (then one log line)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        _log("ignoring %s: %s" % (path, e.strerror))
        return None
    why = _check(data)
    if why is not None:
        _log("ignoring %s: %s; the kernel is traced again and the file rewritten" % (path, why))
        return None
    _touch(path)
    off = len(MAGIC) + _HEAD.size
    nrec, nneff, _ = _HEAD.unpack_from(data, len(MAGIC))
    try:
        record = json.loads(data[off:off + nrec].decode())
    except ValueError as e:
        _log("ignoring %s: its record does not parse (%s)" % (path, e))
        return None
    return record, data[off + nrec:off + nrec + nneff]


def _check(data):
    """Why data is not a whole cache file (None: it is)."""
    if not data.startswith(MAGIC):
        return "not a trnemu NKI cache file of this format"
    if len(data) < len(MAGIC) + _HEAD.size:
        return "truncated header"
    nrec, nneff, digest = _HEAD.unpack_from(data, len(MAGIC))
    body = data[len(MAGIC) + _HEAD.size:]
    if len(body) != nrec + nneff:
        return "%d bytes of body where the header says %d" % (len(body), nrec + nneff)
    if hashlib.sha256(body).digest() != digest:
        return "checksum mismatch"
    return None


def store(path, record, neff):
    """Write record (JSON-able) and the NEFF to path: a temporary file in
    the same folder renamed over it. A folder that cannot be written is
    reported once per process and the kernel runs uncached on disk."""
    global _write_failed
    body = json.dumps(record, separators=(",", ":")).encode()
    blob = MAGIC + _HEAD.pack(len(body), len(neff), hashlib.sha256(body + neff).digest()) + \
        body + neff
    d = os.path.dirname(path)
    tmp = None
    try:
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=_SUFFIX)
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
        tmp = None
        prune(d, keep=path, written=len(blob))
    except OSError as e:
        if not _write_failed:
            _write_failed = True
            _log("cannot write %s: %s (kernels are not kept on disk in this process)"
                 % (path, e.strerror))
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def max_bytes():
    """The folder's size limit in bytes (0: none), TRNEMU_NKI_CACHE_MAX_MB."""
    return _env.read_uint("TRNEMU_NKI_CACHE_MAX_MB", 0, 1 << 20, _DEFAULT_MAX_MB) << 20


def _touch(path):
    """Mark a file as just used (the pruning goes by modification time)."""
    try:
        os.utime(path)
    except OSError:
        pass


def _entries(d):
    """(modification time, size, path) of each cache file in folder d."""
    out = []
    try:
        names = os.listdir(d)
    except OSError:
        return out
    for name in names:
        if not name.endswith(_SUFFIX) or name.startswith(".tmp-"):
            continue
        p = os.path.join(d, name)
        try:
            st = os.stat(p)
        except OSError:
            continue           # removed by another process meanwhile
        out.append((st.st_mtime_ns, st.st_size, p))
    return out


def prune(d, keep=None, written=0):
    """After a write of `written` bytes to folder d: remove its least
    recently used files until the whole is within TRNEMU_NKI_CACHE_MAX_MB;
    keep (the file just written) stays. The folder is listed only when the
    count says it may be over the limit, or every _SCAN_EVERY writes.
    Processes pruning at once each remove what they find too much."""
    limit = max_bytes()
    if limit == 0:
        return 0
    count = _counts.setdefault(d, [None, 0, 0])
    count[1] += written
    count[2] += 1
    if count[0] is not None and count[0] + count[1] <= limit and count[2] < _SCAN_EVERY:
        return 0
    files = sorted(_entries(d))
    total = sum(size for _, size, _ in files)
    removed = 0
    for _, size, p in files:
        if total <= limit:
            break
        if p == keep:
            continue
        try:
            os.unlink(p)
            removed += 1
        except OSError:
            pass               # gone already, or not ours to remove: not counted
        total -= size
    _counts[d] = [total, 0, 0]
    return removed
