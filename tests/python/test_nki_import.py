"""test_nki_import.py: an interpreter without NumPy fails at `import nki`
(and `import neuronxcc.nki`) with one ImportError that names the
interpreter and what to install, not deep inside the package."""
import os
import subprocess
import sys

import pytest

_PY = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "python"))


@pytest.mark.parametrize("module", ["nki", "neuronxcc.nki"])
def test_import_without_numpy_says_what_to_install(module):
    code = "import sys; sys.modules['numpy'] = None; import %s" % module
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=_PY), timeout=60)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: nki needs NumPy"), r.stderr
    assert sys.executable in last
    assert "pip install numpy" in last and "python3-numpy" in last


def test_nki_dtype_is_the_annotation_and_the_module_of_dtypes():
    """`import nki.dtype as nt; nt.float8_e4m3` (the NKI Library's tests),
    `from nki.dtype import ...`, and nki.dtype as the type of dtypes."""
    import nki
    import nki.dtype as nt
    from nki.dtype import float32, float8_e4m3fn_x4  # noqa: F401
    import nki.language as nl
    assert nt.float8_e4m3 is nl.float8_e4m3 and nt.bfloat16 is nl.bfloat16 and float32 is nl.float32
    assert isinstance(nl.bfloat16, nki.dtype) and not isinstance(3, nki.dtype)
