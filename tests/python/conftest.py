"""conftest.py: pytest set-up for the NKI front-end tests: the package from
the source tree, trnemu's libnrt.so.1 (TRNEMU_LIBNRT, set by meson), the
race checker on for every kernel and the disk kernel cache off."""
import os
import sys

os.environ.setdefault("TRNEMU_RACECHECK", "1")
# the suite checks tracing itself (allocator, spills, lines): no kernels
# from the disk cache, except where test_nki_cache.py turns it on
os.environ.setdefault("TRNEMU_NKI_CACHE", "0")
_here = os.path.dirname(os.path.abspath(__file__))
_py = os.path.join(_here, "..", "..", "python")
if os.path.abspath(_py) not in [os.path.abspath(p) for p in sys.path]:
    sys.path.insert(0, os.path.abspath(_py))
