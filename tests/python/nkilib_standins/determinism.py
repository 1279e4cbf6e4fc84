"""determinism.py: with TRNEMU_NKILIB_TWICE=1 (run_nkilib.py --twice),
every kernel the NKI Library suite runs through nki.cpu_simulate runs twice
with the same inputs, and a test fails unless both runs give the same bits
(returned arrays and arrays the kernel wrote in place). The first run gets
copies of the array arguments, so a kernel that updates an input in place
sees the same values both times; the second run's results are the ones
the test checks. A job of ranks (a collectives test) runs twice too, every
rank's results compared."""
import copy

import numpy as np


class NotDeterministic(AssertionError):
    """Two runs of one kernel with the same inputs gave different bits."""


def _arrays(value):
    """The NumPy arrays in a kernel's result or arguments, in order."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _arrays(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in _arrays(value[k])]
    return []


def _same_bits(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and \
        np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def compare(name, first, second):
    """Raise NotDeterministic naming the first array whose bits differ."""
    xs, ys = _arrays(first), _arrays(second)
    if len(xs) != len(ys):
        raise NotDeterministic("%s: the two runs returned %d and %d arrays" % (name, len(xs), len(ys)))
    for i, (x, y) in enumerate(zip(xs, ys)):
        if not _same_bits(x, y):
            raise NotDeterministic("%s: array %d (%s %s) differs between two runs with the same "
                                   "inputs" % (name, i, x.dtype, x.shape))


class _TwiceLaunch:
    """A launched kernel that runs twice and checks both runs agree, called
    directly or on a job of ranks (.ranks(inputs), a collectives test)."""

    def __init__(self, launched, name):
        self.launched, self.name = launched, name

    def __call__(self, *args, **kwargs):
        a1, k1 = copy.deepcopy(args), copy.deepcopy(kwargs)
        first = self.launched(*a1, **k1)
        second = self.launched(*args, **kwargs)
        compare(self.name, (first, a1, k1), (second, args, kwargs))
        return second

    def ranks(self, inputs, **kwargs):
        first = self.launched.ranks(copy.deepcopy(inputs), **kwargs)
        second = self.launched.ranks(inputs, **kwargs)
        compare(self.name + ".ranks", first, second)
        return second


def twice(launched, name):
    """A launched kernel that runs twice and checks both runs agree."""
    return _TwiceLaunch(launched, name)


class _Twice:
    def __init__(self, sim, name):
        self.sim, self.name = sim, name

    def __getitem__(self, lnc):
        return twice(self.sim[lnc], "%s[%r]" % (self.name, lnc))

    def __call__(self, *args, **kwargs):
        return self[1](*args, **kwargs)


def install(nki):
    """Make nki.cpu_simulate run every kernel twice. Returns True when installed."""
    if getattr(nki.cpu_simulate, "_trnemu_twice", False):
        return False
    plain = nki.cpu_simulate

    def cpu_simulate(kernel):
        return _Twice(plain(kernel), getattr(kernel, "__name__", "kernel"))
    cpu_simulate._trnemu_twice = True
    nki.cpu_simulate = cpu_simulate
    return True
