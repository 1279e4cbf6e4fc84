"""conftest.py: pytest set-up for the NKI front-end tests: the package from
the source tree, trnemu's libnrt.so.1 (TRNEMU_LIBNRT, set by meson), and
the race checker on for every kernel."""
import os
import sys

os.environ.setdefault("TRNEMU_RACECHECK", "1")
_here = os.path.dirname(os.path.abspath(__file__))
_py = os.path.join(_here, "..", "..", "python")
if os.path.abspath(_py) not in [os.path.abspath(p) for p in sys.path]:
    sys.path.insert(0, os.path.abspath(_py))
