"""test_nki_errors.py: a failing kernel raises nki.NKIError naming the
kernel source line: trace errors, SBUF/PSUM overflow, shape errors,
out-of-bounds views, and failures reported by the execution."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import nki
import nki.language as nl
import nki.isa as nisa

HERE = os.path.basename(__file__)


def line_of(text):
    with open(__file__) as f:
        for i, ln in enumerate(f, 1):
            if text in ln and "line_of" not in ln:
                return i
    raise AssertionError(text)


def raises_at(marker, fn, *args):
    with pytest.raises(nki.NKIError) as e:
        fn(*args)
    msg = str(e.value)
    assert re.search(r"%s:%d: " % (re.escape(HERE), line_of(marker)), msg), msg
    return msg


@nki.jit
def sbuf_overflow(a):
    big = nl.ndarray((128, 70000), dtype=nl.float32, buffer=nl.sbuf)  # MARK-sbuf (over 256 KiB)
    nl.store(a, big[:, 0:a.shape[1]])
    return a


def test_sbuf_overflow():
    msg = raises_at("MARK-sbuf", sbuf_overflow, np.zeros((128, 4), np.float32))
    assert "SBUF overflow" in msg


@nki.jit
def psum_overflow(a):
    # nine banks of tiles that all stay referenced would spill; one tile of
    # 18 KiB per partition cannot fit the 16 KiB at all
    out = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.shared_hbm)
    big = nl.zeros((128, 4608), nl.float32, buffer=nl.psum)  # MARK-psum
    nl.store(out, big[:, 0:512])
    return out


def test_psum_overflow():
    assert "PSUM overflow" in raises_at("MARK-psum", psum_overflow, np.zeros((1, 1), np.float32))


@nki.jit
def shape_mismatch(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    c = nl.add(nl.load(a), nl.load(b))  # MARK-shape
    nl.store(out, c)
    return out


def test_shape_mismatch():
    msg = raises_at("MARK-shape", shape_mismatch, np.zeros((4, 8), np.float32),
                    np.zeros((4, 9), np.float32))
    assert "do not match" in msg


@nki.jit
def indexed_rows(a, idx, scatter):
    """Rows of a by the indices idx ([P, 1] int32) into a (P, C) result
    (gather), or a with its first P rows also copied to rows idx
    (scatter); an index past a's rows stops the run."""
    p, c = idx.shape[0], a.shape[1]
    ix = nl.load(idx)
    if scatter:
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        rows = nl.load(a[0:p, :])
        nisa.dma_copy(dst=out.ap([[c, p], [1, c]], vector_offset=ix, indirect_dim=0), src=rows,  # MARK-scatter
                      oob_mode=nisa.oob_mode.error)
        return out
    out = nl.ndarray((p, c), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, c), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap([[c, p], [1, c]], vector_offset=ix, indirect_dim=0),  # MARK-gather
                  oob_mode=nisa.oob_mode.error)
    nl.store(out, t)
    return out


@pytest.mark.parametrize("scatter", [False, True])
def test_indexed_dma_past_its_tensor_is_numpys_index_error(scatter):
    # as the vendor's simulator: NumPy's own IndexError, whose index is the
    # first flat element of the row; the kernel line and the cause in a note
    a = np.arange(40 * 8, dtype=np.float32).reshape(40, 8)
    idx = np.array([[3], [41], [7], [50]], np.int32)
    with pytest.raises(IndexError) as e:
        indexed_rows(a, idx, scatter)
    assert type(e.value) is IndexError
    assert str(e.value) == "index 328 is out of bounds for axis 0 with size 320"
    with pytest.raises(IndexError) as ref:     # what NumPy itself says of that element
        a.reshape(-1)[41 * 8]
    assert str(ref.value) == str(e.value)
    marker = "MARK-scatter" if scatter else "MARK-gather"
    note = "\n".join(e.value.__notes__)
    assert "%s:%d: " % (HERE, line_of(marker)) in note and "index 41 of row 1" in note, note
    idx[1, 0], idx[3, 0] = 39, 12               # within bounds: the rows themselves
    got = indexed_rows(a, idx, scatter)
    want = a.copy()
    if scatter:
        want[idx[:, 0]] = a[0:4]
    else:
        want = a[idx[:, 0]]
    np.testing.assert_array_equal(got, want)


@nki.jit
def gather_shifted_rows(a, idx):
    """Rows of 8 elements starting 4 elements into the row idx chooses."""
    p = idx.shape[0]
    out = nl.ndarray((p, 8), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((p, 8), dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a.ap([[8, p], [1, 8]], offset=4, vector_offset=nl.load(idx),
                                  indirect_dim=0), oob_mode=nisa.oob_mode.error)
    nl.store(out, t)
    return out


def test_a_row_running_past_the_end_names_the_first_element_outside():
    a = np.arange(40 * 8, dtype=np.float32).reshape(40, 8)
    with pytest.raises(IndexError, match=r"^index 320 is out of bounds for axis 0 with size 320$"):
        gather_shifted_rows(a, np.array([[2], [39]], np.int32))   # elements 316..323
    np.testing.assert_array_equal(gather_shifted_rows(a, np.array([[2], [38]], np.int32)),
                                  a.reshape(-1)[[list(range(20, 28)), list(range(308, 316))]])


@nki.jit
def too_many_partitions(a):
    t = nl.load(a)  # MARK-pmax
    return a


def test_partition_limit():
    assert "pmax" in raises_at("MARK-pmax", too_many_partitions, np.zeros((129, 2), np.float32))


@nki.jit
def oob_slice(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:4, 2:10])  # MARK-oob
    nl.store(out, t)
    return out


def test_out_of_bounds_slice():
    assert "out of bounds" in raises_at("MARK-oob", oob_slice, np.zeros((4, 8), np.float32))


@nki.jit
def matmul_mismatch(a, b):
    out = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.matmul(nl.load(a), nl.load(b), transpose_x=True))  # MARK-mm
    return out


def test_matmul_contraction_mismatch():
    assert "contraction" in raises_at("MARK-mm", matmul_mismatch, np.zeros((8, 4), np.float32),
                                      np.zeros((6, 4), np.float32))


@nki.jit
def device_failure(a):
    out = nl.ndarray((a.shape[0], 6), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    st = nisa.bn_stats(t)  # MARK-device
    nl.store(out, st)
    return out


def test_execution_failure_names_line(capfd):
    msg = raises_at("MARK-device", device_failure, np.zeros((8, 1024), np.float32))
    assert "bn_stats" in msg


def test_float64_refused():
    @nki.jit
    def k(a):
        return a
    with pytest.raises(nki.NKIError, match="float64"):
        k(np.zeros((2, 2)))


def test_trnemu_exec_makes_nki_importable():
    tool = os.environ.get("TRNEMU_TOOL")
    if not tool:
        pytest.skip("TRNEMU_TOOL not set (meson sets it)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRNEMU_LIBNRT")}
    # an instance of its own: this process holds the cores of the test's one
    env["TRNEMU_INSTANCE_NAME"] = os.environ.get("TRNEMU_INSTANCE_NAME", "nki") + "-exec"
    env["TRNEMU_INSTANCE_NAME"] += "-%d" % os.getpid()
    code = ("import numpy as np, nki, neuronxcc.nki.language as nl\n"
            "@nki.jit\n"
            "def k(a):\n"
            "    o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n"
            "    nl.store(o, nl.load(a) * 2.0)\n"
            "    return o\n"
            "print(float(k(np.ones((2, 2), np.float32)).sum()))\n")
    r = subprocess.run([tool, "exec", "--", sys.executable, "-c", code], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "8.0"


def _tamper(monkeypatch, edit):
    """Let the tracer's output be edited line by line (to make a kernel
    wrong on purpose: the front end itself never emits these)."""
    from nki import _core
    orig = _core.Tracer.commit

    def commit(self, insn):
        orig(self, insn)
        self.lines[-1] = edit(self.lines[-1])
    monkeypatch.setattr(_core.Tracer, "commit", commit)


def test_race_is_reported_with_the_kernel_line(monkeypatch):
    _tamper(monkeypatch, lambda ln: " ".join(w for w in ln.split() if not w.startswith("wait=")))

    @nki.jit
    def racy(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, nl.exp(t))  # MARK-race
        return out
    with pytest.raises(nki.NKIError) as e:
        racy(np.ones((8, 8), np.float32))
    msg = str(e.value)
    assert "race" in msg.lower(), msg
    assert re.search(r"%s:%d: " % (re.escape(HERE), line_of("MARK-race")), msg), msg


def test_deadlock_is_reported_not_hung(monkeypatch):
    _tamper(monkeypatch, lambda ln: ln + " wait=pool_done>=7" if ln.startswith("act.") else ln)

    @nki.jit
    def stuck(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.tanh(nl.load(a)))  # MARK-stuck
        return out
    with pytest.raises(nki.NKIError) as e:
        stuck(np.ones((8, 8), np.float32))
    assert re.search(r"%s:%d: " % (re.escape(HERE), line_of("MARK-stuck")), str(e.value)), str(e.value)


def test_example_runs_under_trnemu_exec():
    tool = os.environ.get("TRNEMU_TOOL")
    if not tool:
        pytest.skip("TRNEMU_TOOL not set (meson sets it)")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TRNEMU_LIBNRT")}
    env["TRNEMU_INSTANCE_NAME"] = os.environ.get("TRNEMU_INSTANCE_NAME", "nki") + "-ex-%d" % os.getpid()
    ex = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "nki_softmax.py")
    r = subprocess.run([tool, "exec", "--", sys.executable, ex], env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "nki_softmax: ok" in r.stdout, r.stdout + r.stderr


@nki.jit
def psum_bank_limit(a, b):
    out = nl.ndarray((a.shape[1], b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, nl.matmul(nl.load(a), nl.load(b), transpose_x=True))  # MARK-bank
    return out


def test_matmul_beyond_a_psum_bank():
    msg = raises_at("MARK-bank", psum_bank_limit, np.zeros((128, 128), np.float32),
                    np.zeros((128, 513), np.float32))
    assert "512" in msg


def test_a_number_where_a_tile_belongs_names_the_kernel_line():
    @nki.jit
    def k(a):
        t = nl.load(a)
        o = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.range_select(dst=o, on_true_tile=t, comp_op0=nl.greater_equal,   # BOUND-LINE
                          comp_op1=nl.less, bound0=0.0, bound1=8.0)
        return a
    line = [i for i, ln in enumerate(open(__file__), 1) if "# BOUND-LINE" in ln][0]
    with pytest.raises(nki.NKIError, match=r"test_nki_errors.py:%d: range_select: operand bound0 "
                       r"takes a tensor, got 0.0" % line):
        k(np.zeros((4, 16), np.float32))


def test_accumulate_into_unwritten_psum_warns_with_the_line():
    """nc_matmul accumulate=True into PSUM nothing wrote is undefined on
    hardware: a warning at the kernel line (the result is still the sum
    onto what the PSUM held); accumulate=False then True does not warn."""
    @nki.jit
    def k(a, first):
        t = nl.load(a)
        ps = nl.ndarray((a.shape[1], a.shape[1]), dtype=nl.float32, buffer=nl.psum)
        if first:
            nisa.nc_matmul(dst=ps, stationary=t, moving=t, accumulate=False)
        nisa.nc_matmul(dst=ps, stationary=t, moving=t, accumulate=True)   # ACC-LINE
        out = nl.ndarray(ps.shape, dtype=nl.float32, buffer=nl.shared_hbm)
        nl.store(out, nl.copy(ps))
        return out
    a = np.ones((4, 4), np.float32)
    line = [i for i, ln in enumerate(open(__file__), 1) if "# ACC-LINE" in ln][0]
    with pytest.warns(nki.NKIWarning, match=r"test_nki_errors.py:%d: nc_matmul accumulate=True "
                      r"into PSUM that no instruction has written" % line):
        k(a, False)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", nki.NKIWarning)
        np.testing.assert_array_equal(k(a, True), 2 * a.T @ a)
