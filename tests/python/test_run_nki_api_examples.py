"""test_run_nki_api_examples.py: the parts of run_nki_api_examples.py (the
runner of the NKI API reference's docstring examples) that need no copy of
the SDK: extraction of code blocks from a docstring, their file lines,
the sorting into pseudo-code / fragment / runnable, and one statement
block run in the harness kernel with its tile assert checked after the run."""
import importlib.util
import os

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("run_nki_api_examples",
                                               os.path.join(HERE, "run_nki_api_examples.py"))
rx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rx)

FAKE = '''import x

def twice(a):
    r"""Doubles a tile.

    .. code-block:: python

        import nki.language as nl
        t = nl.full((4, 8), 2.0, dtype=nl.float32, buffer=nl.sbuf)
        u = nl.add(t, t)
        assert nl.equal(u, nl.full((4, 8), WANT, dtype=nl.float32, buffer=nl.sbuf))

    Semantics:

    .. code-block:: python

        out[i] = in[i] + in[i]

    .. code-block:: text

        a=<dtype>

    Also::

        nl.store(dst_tensor[0:4, 0:8], u)

    end."""
    ...
'''


def examples():
    return rx.examples_in_source(FAKE, "fake/__init__.py")


def test_blocks_and_their_file_lines():
    exs = examples()
    assert [e.lang for e in exs] == ["python", "python", "text", "literal"]
    lines = FAKE.splitlines()
    for e in exs:
        assert lines[e.line - 1].strip() == e.code.splitlines()[0].strip()
    assert exs[0].owner == "twice"
    assert exs[0].code.splitlines()[-1].startswith("assert nl.equal(u,")
    assert exs[3].code == "nl.store(dst_tensor[0:4, 0:8], u)"


def test_classification():
    names = {"store", "add", "full"}
    exs = [rx.classify(e, names) for e in examples()]
    assert exs[0].kind == "fragment" and exs[0].why == "uses WANT"
    assert exs[1].kind == "pseudo-code" and "not Python" in exs[1].why
    assert exs[2].kind == "pseudo-code" and exs[2].why == "a text block"
    assert exs[3].kind == "fragment" and exs[3].free == ["dst_tensor", "u"]


def test_free_names_see_nested_functions_and_skip_locals():
    code = "a = 1\ndef body(i):\n    return data[i] + a + N\nbody(a)\nfor k in range(3):\n    k\n"
    assert rx.free_names(code) == ["data", "N"]


def test_a_block_runs_in_the_harness_and_its_tile_assert_is_checked(monkeypatch):
    ex = examples()[0]
    monkeypatch.setitem(rx.DEFAULTS, "WANT", ("value", 4.0))
    rx.classify(ex, {"add", "full"})
    assert ex.kind == "runnable" and ex.free == ["WANT"]
    rx.run_statements(ex, np.random.default_rng(0))
    monkeypatch.setitem(rx.DEFAULTS, "WANT", ("value", 5.0))
    with pytest.raises(AssertionError, match=r"fake/__init__.py:11: assertion false on the device"):
        rx.run_statements(ex, np.random.default_rng(0))


STUB = '''from enum import Enum
DType = str
float32: DType = ...
class engine(Enum):
    tensor = 1
    unknown = 0
    def _hidden(self): ...
class NkiTensor:
    dtype: DType = ...
    def reshape(self, shape): ...
def nc_matmul(dst, stationary, moving): ...
def _private(): ...
'''


def test_stub_names_and_rows():
    assert rx.stub_names(STUB) == [("DType", []), ("float32", []), ("engine", ["tensor", "unknown"]),
                                   ("NkiTensor", ["reshape"]), ("nc_matmul", [])]
    assert rx.stub_module(os.path.join("nki", "api", "nki", "isa", "__init__.py")) == "nki.isa"
    assert rx.stub_module(os.path.join("nki", "api", "nki", "__init__.py")) == "nki"
    doc = ("# x\n| `not_here` | yes |\n## API status\n| API | status | notes |\n|---|---|---|\n"
           "| `nc_matmul`, `engine.tensor` | yes | `DType` in the notes only |\n## Next\n| `later` | yes |\n")
    rows = rx.api_rows(doc)
    assert {"nc_matmul", "engine", "tensor"} <= rows
    assert not {"DType", "not_here", "later", "API"} & rows


def test_absent_names_against_trnemus_nki():
    want = [("nki.language", "MemoryRegion", ["sbuf", "psum", "shared_hbm"]),
            ("nki.isa", "engine", ["tensor", "no_such_engine"]),
            ("nki.isa", "no_such_call", []), ("nki.language", "DType", [])]
    assert rx.absent_names(want) == ["nki.isa.engine.no_such_engine", "nki.isa.no_such_call"]
