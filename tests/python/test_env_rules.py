"""test_env_rules.py: the NKI front end's reader of its TRNEMU_NKI_*
variables (nki/_env.py) accepts and refuses exactly the spellings the
runtime's one parser does (devices/config/env.c): each spelling is set on
a runtime variable of the same kind and nrt_init (in a child process, on
its own instance) says whether the runtime takes it; the Python parser
must agree. Then the front end's readers raise an NKIError naming the
variable for a refused spelling."""
import json
import os
import subprocess
import sys

import pytest

from nki import _env
from nki._core.context import NKIError

# (runtime variable, kind, the Python parser of that kind)
KINDS = {
    "bool": ("TRNEMU_RACECHECK", lambda t: _env.parse_bool(t)),
    "uint": ("TRNEMU_NKI_VNC", lambda t: _env.parse_uint(t, 0, 65535)),
    "uint64": ("TRNEMU_NKI_TRACE_LIMIT", lambda t: _env.parse_uint(t, 0, 2**64 - 1)),
    "duration": ("TRNEMU_NKI_TRACE_SECONDS", lambda t: _env.parse_ms(t, 10000000)),
    "choice": ("TRNEMU_NKI_HOST_DTYPES",
               lambda t: _env.parse_choice(t, ("trnemu", "ml_dtypes"))),
}

SPELLINGS = {
    "bool": ["0", "1", "true", "FALSE", "Yes", "no", "y", "on", "2", "01", " 1", "truee"],
    "uint": ["0", "7", "010", "0x1f", "0X10", "65535", "65536", "-1", "+1", "1.0", "1e2",
             "0x", "x1", "7 ", "1_0"],
    "uint64": ["18446744073709551615", "18446744073709551616", "0xffffffffffffffff",
               "0x10000000000000000", "2000000"],
    "duration": ["0", "30", "2.5", ".5", "5.", "10s", "500ms", "1e3", "1e", "10m", "10 s",
                 "-1", "0x10", "10000000", "10000001", "10000000s", "abc", "s", "ms", "."],
    "choice": ["trnemu", "TRNEMU", "ml_dtypes", "ML_DTYPES", "numpy", "trnemu "],
}

_CHILD = r"""
import ctypes, json, os, sys
L = ctypes.CDLL(os.environ["TRNEMU_LIBNRT"])
out = []
for var, text in json.loads(sys.argv[1]):
    os.environ[var] = text
    st = L.nrt_init(1, b"", b"")
    if st == 0:
        L.nrt_close()
    del os.environ[var]
    out.append(st)
print(json.dumps(out))
"""


def _runtime_verdicts(cases):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRNEMU_NKI", "TRNEMU_RACECHECK", "NEURON_RT_"))}
    env["TRNEMU_INSTANCE_NAME"] = os.environ.get("TRNEMU_INSTANCE_NAME", "nki") + "-envrules"
    env["NEURON_RT_VISIBLE_CORES"] = "0"
    env["NEURON_RT_LOG_LEVEL"] = "QUIET"
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(cases)], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_python_and_runtime_agree():
    if not os.environ.get("TRNEMU_LIBNRT"):
        pytest.skip("TRNEMU_LIBNRT is not set (meson sets it)")
    cases = [(KINDS[k][0], t) for k in SPELLINGS for t in SPELLINGS[k]]
    verdicts = _runtime_verdicts(cases)
    wrong = []
    for (var, text), st in zip(cases, verdicts):
        kind = next(k for k in KINDS if KINDS[k][0] == var)
        py_ok = KINDS[kind][1](text) is not None
        if py_ok != (st == 0):
            wrong.append("%s=%r: runtime %s, Python %s" % (var, text, "takes it" if st == 0
                         else "refuses it (%d)" % st, "takes it" if py_ok else "refuses it"))
    assert not wrong, "\n".join(wrong)


def test_values():
    assert _env.parse_uint("010", 0, 100) == 10
    assert _env.parse_uint("0x10", 0, 100) == 16
    assert _env.parse_ms("2.5", 600) == 2500
    assert _env.parse_ms("500ms", 600) == 500
    assert _env.parse_ms("10s", 600) == 10000
    assert _env.parse_bool("No") is False and _env.parse_bool("YES") is True


def test_readers_name_the_variable(monkeypatch):
    from nki._core.tracer import trace_limits
    monkeypatch.setenv("TRNEMU_NKI_TRACE_SECONDS", "10s")
    monkeypatch.setenv("TRNEMU_NKI_TRACE_LIMIT", "0x100")
    assert trace_limits() == (256, 10.0)
    monkeypatch.setenv("TRNEMU_NKI_TRACE_LIMIT", "1e3")
    with pytest.raises(NKIError, match=r"TRNEMU_NKI_TRACE_LIMIT='1e3': expected a whole number"):
        trace_limits()
    monkeypatch.setenv("TRNEMU_NKI_TRACE_LIMIT", "5")
    monkeypatch.setenv("TRNEMU_NKI_TRACE_SECONDS", "soon")
    with pytest.raises(NKIError, match=r"TRNEMU_NKI_TRACE_SECONDS='soon': expected a duration"):
        trace_limits()
    monkeypatch.setenv("TRNEMU_NKI_VNC", "one")
    from nki import _runtime
    with pytest.raises(NKIError, match=r"TRNEMU_NKI_VNC='one'"):
        _env.read_uint("TRNEMU_NKI_VNC", 0, 65535, 0)
    assert _runtime is not None
