"""nki_cpu_simulator: trnemu standing in for the vendor's NKI CPU simulator.

Suites written for the vendor's simulator import its `nki` modules under
this package (`nki_cpu_simulator.nki`, `nki_cpu_simulator.nki.language`,
`nki_cpu_simulator.nki.isa.constants`, ...) and run kernels with
`nki.cpu_simulate(kernel)[lnc](...)`. Here each of those names is trnemu's
own module: `nki_cpu_simulator.nki.X` is the very module object `nki.X`
(no second copy, so its classes and dtypes compare equal to trnemu's), and
kernels run on the emulated device. A submodule trnemu's nki lacks raises
an ImportError that names it.
"""
import importlib
import importlib.abc
import importlib.util
import sys

PREFIX = __name__ + ".nki"   # names under it are aliases of trnemu's nki modules


class MissingModuleError(ImportError):
    """A module the simulator package names that trnemu's nki lacks."""


def target_name(fullname):
    """The trnemu module an alias stands for: nki_cpu_simulator.nki.isa -> nki.isa."""
    return "nki" + fullname[len(PREFIX):]


def load_target(fullname):
    """Import trnemu's module for an alias, or raise MissingModuleError."""
    target = target_name(fullname)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        if e.name is None or not (target == e.name or target.startswith(e.name + ".")):
            raise    # a module the target itself imports is missing: not ours to rename
        err = MissingModuleError("%s: trnemu's nki has no module %s (needed by suites written "
                                 "for the vendor's CPU simulator)" % (fullname, target),
                                 name=target)
        raise err from None


class AliasLoader(importlib.abc.Loader):
    """Loads an alias by handing back trnemu's module object itself."""

    def create_module(self, spec):
        return load_target(spec.name)

    def exec_module(self, module):
        pass     # trnemu's module is already executed


class AliasFinder(importlib.abc.MetaPathFinder):
    """Finds the names under nki_cpu_simulator.nki."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != PREFIX and not fullname.startswith(PREFIX + "."):
            return None
        return importlib.util.spec_from_loader(fullname, AliasLoader())


def install():
    """Put the alias finder first on sys.meta_path (once)."""
    if not any(isinstance(f, AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, AliasFinder())


install()
nki = importlib.import_module(PREFIX)   # `from nki_cpu_simulator import nki`
