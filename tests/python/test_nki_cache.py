"""test_nki_cache.py: the kernel cache's keys and its copy on disk. A
cached call reuses the last key while every global, closure cell and
function attribute the key read is the same object (a helper's global
rebound, a closure cell set, a mutable value changed in place each give
a new trace); results come back in arrays the execution wrote itself. On
disk: a second process loads the kernel instead of tracing it, damaged
files are ignored with one log line and rewritten, processes filling the
cache at once leave one whole file, and the disk key changes with what
changes the traced program."""
import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

import nki
import nki.language as nl

_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")

SCALE = 2.0


def _helper_scale():
    return SCALE


@nki.jit
def helper_scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), _helper_scale()))
    return out


def test_a_helpers_global_rebound_between_calls():
    global SCALE
    a = np.ones((128, 8), np.float32)
    assert helper_scaled(a)[0, 0] == 2.0
    first = helper_scaled.keys.last
    assert helper_scaled(a)[0, 0] == 2.0
    assert helper_scaled.keys.last is first        # nothing changed: the key was reused
    SCALE = 7.0
    try:
        assert helper_scaled(a)[0, 0] == 7.0
        assert helper_scaled.keys.last is not first
    finally:
        SCALE = 2.0
    assert helper_scaled(a)[0, 0] == 2.0


def test_a_closure_cell_set_between_calls():
    factor = 3.0

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.multiply(nl.load(a), factor))
        return out

    a = np.ones((128, 4), np.float32)
    assert k(a)[0, 0] == 3.0
    factor = 4.0
    assert k(a)[0, 0] == 4.0
    assert k[1](a)[0, 0] == 4.0        # a launch-grid variant shares the key memory


@dataclasses.dataclass
class Params:
    scale: float


PARAMS = Params(2.0)
TABLE = np.array([5.0], np.float32)


@nki.jit
def param_scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), PARAMS.scale * float(TABLE[0])))
    return out


def test_values_changed_in_place_give_a_new_trace():
    a = np.ones((128, 4), np.float32)
    assert param_scaled(a)[0, 0] == 10.0
    PARAMS.scale = 3.0                 # same object, new contents
    try:
        assert param_scaled(a)[0, 0] == 15.0
        TABLE[0] = 1.0
        assert param_scaled(a)[0, 0] == 3.0
    finally:
        PARAMS.scale = 2.0
        TABLE[0] = 5.0


@nki.jit
def two_outputs(a):
    x = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    y = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(x, nl.add(t, 1.0))
    nl.store(y, nl.multiply(t, 2.0))
    return x, y, x


def test_results_are_fresh_arrays_each_call():
    # each call's results are its own arrays (the device wrote them in
    # place); a tensor returned twice comes back twice; a non-contiguous
    # argument is copied before the execution reads it
    a = np.arange(128 * 6, dtype=np.float32).reshape(128, 6)
    x1, y1, x1b = two_outputs(a)
    x2, y2, _ = two_outputs(a * 0)
    np.testing.assert_array_equal(x1, a + 1)
    np.testing.assert_array_equal(y1, a * 2)
    np.testing.assert_array_equal(x1b, a + 1)
    np.testing.assert_array_equal(x2, np.ones_like(a))
    assert not np.shares_memory(x1, x2)
    wide = np.arange(128 * 12, dtype=np.float32).reshape(128, 12)[:, ::2]
    np.testing.assert_array_equal(two_outputs(wide)[1], wide * 2)
    a[:] = 1.0                          # the same array, changed: read again
    np.testing.assert_array_equal(two_outputs(a)[0], a + 1)


@nki.jit
def half_store(a):
    """Writes the first half of the rows of its result only."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    h = a.shape[1] // 2
    nl.store(out[:, 0:h], nl.load(a[:, 0:h]))
    return out


@pytest.mark.parametrize("cols", [8, 1024])      # borrowed (small) and copied (over BORROW_MAX)
def test_unwritten_result_bytes_read_as_zero_and_large_arrays_are_not_kept(cols):
    from nki import _kernel
    a = np.full((128, cols), 3.0, np.float32)
    big = a.nbytes > _kernel.BORROW_MAX
    for _ in range(2):                  # the second call: nothing left from the first
        r = half_store(a)
        np.testing.assert_array_equal(r[:, :cols // 2], a[:, :cols // 2])
        assert not r[:, cols // 2:].any()
        a = a + 1
    kept = [v.nbytes for v in half_store.last.model.borrowed.values()]
    assert (max(kept, default=0) <= _kernel.BORROW_MAX) if big else kept


# ---- the disk cache -------------------------------------------------------

_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import nki
import nki.language as nl

@nki.jit
def disk_kernel(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.multiply(nl.load(a), 3.0), nl.load(b)))
    return out

a = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)
out = disk_kernel(a, a * 0 + 1)
assert np.array_equal(out, a * 3 + 1), out
print("from_disk=%s" % getattr(disk_kernel.last, "from_disk", False))
"""


def _child_env(tmp_path, tag):
    env = dict(os.environ)
    env["TRNEMU_NKI_CACHE"] = "1"
    env["TRNEMU_NKI_CACHE_DIR"] = str(tmp_path / "cache")
    env["TRNEMU_INSTANCE_NAME"] = "%s-dc%s-%d" % (os.environ.get("TRNEMU_INSTANCE_NAME", "nki"),
                                                 tag, os.getpid())
    return env


def _start_child(tmp_path, tag=""):
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    return subprocess.Popen([sys.executable, str(script), _PY], env=_child_env(tmp_path, tag),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _run_child(tmp_path, tag=""):
    p = _start_child(tmp_path, tag)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return out.strip(), err


def _cache_files(tmp_path):
    return sorted((tmp_path / "cache").iterdir())


def test_a_second_process_loads_the_kernel_from_disk(tmp_path):
    assert _run_child(tmp_path)[0] == "from_disk=False"
    files = _cache_files(tmp_path)
    assert len(files) == 1 and files[0].suffix == ".nkic"
    assert _run_child(tmp_path)[0] == "from_disk=True"


def _damaged(good):
    return {
        "truncated": good[:len(good) // 2],
        "empty": b"",
        "bit flipped": good[:-100] + bytes([good[-100] ^ 1]) + good[-99:],
        "foreign": b"not a cache file" + good[16:],
        "short header": good[:30],
    }


def test_damaged_cache_files_are_ignored_and_rewritten(tmp_path, capsys):
    from nki import _diskcache
    _run_child(tmp_path)
    path = _cache_files(tmp_path)[0]
    good = path.read_bytes()
    assert _diskcache.load(str(path)) is not None
    for what, data in _damaged(good).items():     # each refused with one log line
        path.write_bytes(data)
        assert _diskcache.load(str(path)) is None, what
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and "kernel cache: ignoring" in err[0], (what, err)
    for what in ("truncated", "bit flipped"):     # another process traces and rewrites it
        path.write_bytes(_damaged(good)[what])
        out, err = _run_child(tmp_path)
        assert out == "from_disk=False", what
        logged = [ln for ln in err.splitlines() if "kernel cache" in ln]
        assert len(logged) == 1 and "ignoring" in logged[0], (what, err)
        assert path.read_bytes() == good, what      # whole again


def test_processes_filling_the_cache_at_once(tmp_path):
    procs = [_start_child(tmp_path, str(i)) for i in range(3)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    from nki import _diskcache
    files = _cache_files(tmp_path)
    assert len(files) == 1 and not files[0].name.startswith(".tmp")
    assert _diskcache.load(str(files[0])) is not None


DISK_FACTOR = 2.0


def _digest(kernel, *args):
    from nki import _kernel, _runtime
    return _kernel._disk_digest(kernel, args, {}, _runtime.machine_generation())


@nki.jit
def disk_scaled(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.multiply(nl.load(a), DISK_FACTOR))
    return out


def _exec_scale(text):
    g = {"nki": nki, "nl": nl}
    exec("@nki.jit\ndef k(a):\n    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
         "    nl.store(out, nl.multiply(nl.load(a), %s))\n    return out\n" % text, g)
    return g["k"]


def test_the_disk_key_follows_what_changes_the_program(monkeypatch):
    a = np.ones((128, 8), np.float32)
    base = _digest(disk_scaled, a)
    assert base == _digest(disk_scaled, np.zeros((128, 8), np.float32))    # values do not count
    assert base != _digest(disk_scaled, np.ones((128, 16), np.float32))    # a shape does
    assert base != _digest(disk_scaled, np.ones((128, 8), np.float16))     # a dtype does
    assert base != _digest(disk_scaled[2], a)                               # the grid does
    monkeypatch.setattr(sys.modules[__name__], "DISK_FACTOR", 3.0)
    assert base != _digest(disk_scaled, a)                                  # a global does
    assert _digest(_exec_scale("2.0"), a) != _digest(_exec_scale("2.5"), a)  # a constant does
    assert _digest(_exec_scale("2.0"), a) == _digest(_exec_scale("2.0"), a)
    monkeypatch.setattr(sys.modules[__name__], "DISK_FACTOR", 2.0)
    assert base == _digest(disk_scaled, a)
    monkeypatch.setenv("TRNEMU_NKI_TRACE_LIMIT", "123")
    assert base != _digest(disk_scaled, a)                                  # the trace bound does


def test_the_disk_cache_variables(monkeypatch, tmp_path):
    from nki import _diskcache
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "0")
    assert _diskcache.folder() is None
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "YES")
    monkeypatch.delenv("TRNEMU_NKI_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert _diskcache.folder() == str(tmp_path / "trnemu" / "nki")
    monkeypatch.setenv("TRNEMU_NKI_CACHE_DIR", str(tmp_path / "here"))
    assert _diskcache.folder() == str(tmp_path / "here")
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "maybe")
    with pytest.raises(nki.NKIError, match="TRNEMU_NKI_CACHE='maybe': expected a boolean"):
        _diskcache.folder()


def test_the_cache_folder_keeps_within_its_size_limit(monkeypatch, tmp_path):
    """After a write, the least recently used files go until the folder is
    within TRNEMU_NKI_CACHE_MAX_MB; a load marks its file as used; the
    file just written stays even alone over the limit."""
    import os
    from nki import _diskcache
    d = tmp_path / "c"
    monkeypatch.setenv("TRNEMU_NKI_CACHE", "1")
    monkeypatch.setenv("TRNEMU_NKI_CACHE_DIR", str(d))
    monkeypatch.setenv("TRNEMU_NKI_CACHE_MAX_MB", "1")
    neff = bytes(300 * 1024)                       # 3 files fit 1 MiB, 4 do not
    paths = [_diskcache.path_of("k%d" % i) for i in range(4)]
    for i, p in enumerate(paths[:3]):
        _diskcache.store(p, {"i": i}, neff)
        os.utime(p, ns=(i * 10**9, i * 10**9))     # k0 oldest
    assert _diskcache.load(paths[0])[0] == {"i": 0}    # k0 used again: now the newest
    _diskcache.store(paths[3], {"i": 3}, neff)
    assert sorted(os.listdir(d)) == ["k0.nkic", "k2.nkic", "k3.nkic"]   # k1 went
    _diskcache.store(paths[1], {"i": 1}, bytes(2 << 20))               # alone over the limit
    assert os.listdir(d) == ["k1.nkic"]
    monkeypatch.setenv("TRNEMU_NKI_CACHE_MAX_MB", "0")                 # no limit
    for p in paths:
        _diskcache.store(p, {}, neff)
    assert len(os.listdir(d)) == 4
    monkeypatch.setenv("TRNEMU_NKI_CACHE_MAX_MB", "1M")
    with pytest.raises(nki.NKIError, match="TRNEMU_NKI_CACHE_MAX_MB='1M': expected a whole number"):
        _diskcache.folder()


def test_a_record_round_trip_keeps_lines_and_results():
    # what the disk keeps of a compiled kernel gives the same kernel back:
    # its lines (errors are tied to kernel lines through them), results
    import json
    from nki import _kernel
    a = np.arange(128 * 6, dtype=np.float32).reshape(128, 6)
    want = two_outputs(a)
    comp = two_outputs.last
    rec = json.loads(json.dumps(_kernel._record(comp)))
    back = _kernel._from_record(comp.func, rec, comp.neff)
    try:
        assert back.from_disk and back.trace_s == 0.0
        for ct, bt in zip(comp.tracer.cores, back.tracer.cores):
            assert bt.lines == ct.lines and bt.src == ct.src
            assert {e: list(v) for e, v in bt.eng_lines.items()} == ct.eng_lines
        assert [(n, sh, di.name, pos) for n, sh, di, pos in back.out_specs] == \
            [(n, sh, di.name, pos) for n, sh, di, pos in comp.out_specs]
        assert back.arg_names == comp.arg_names
        got = _kernel._run(back, (a,), {})
        for w, g in zip(want, got):
            np.testing.assert_array_equal(w, g)
    finally:
        back.model.unload()
