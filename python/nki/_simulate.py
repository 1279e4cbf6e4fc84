"""_simulate.py: nki.cpu_simulate, the entry point of the vendor's CPU
simulator package (nki_cpu_simulator), served by trnemu.

    out = nki.cpu_simulate(kernel)[lnc](*args, **kwargs)

runs `kernel` on the emulated device with NumPy inputs and returns its
outputs, like nki.simulate. The index is the logical NeuronCore size the
kernel is launched for, and the launch grid the kernel sees is that one
dimension: 1 launches one program (nl.program_ndim() is 1,
nl.num_programs(0) is 1, nl.program_id(0) is 0, as the vendor's kernels
that ask for their core id at LNC=1 expect), 2 launches two programs on
the two physical cores of an LNC=2 logical core (nl.num_programs(0) is 2,
nl.program_id(0) tells them apart), as `kernel[nl.spmd_dim(nl.nc(2))]`
does; when the emulated machine's LNC is 1 the two programs share one core.
"""
from ._core import NKIError
from ._kernel import Kernel


_LNC_SIZES = (1, 2)   # logical NeuronCore sizes of Trainium2/3


def _as_kernel(kernel):
    """The trnemu Kernel behind a jit kernel or a plain kernel function,
    in simulation mode (it may return on-chip tiles)."""
    if isinstance(kernel, Kernel):
        return Kernel(kernel.func, kernel.grid, "simulate", kernel.shard, **kernel.opts)
    if not callable(kernel):
        raise NKIError("nki.cpu_simulate: %r is not a kernel (a function or an @nki.jit kernel)"
                       % (kernel,))
    return Kernel(kernel, mode="simulate")


def _launch(kernel, lnc):
    """The kernel launched for a logical core of `lnc` physical cores."""
    if isinstance(lnc, bool) or not isinstance(lnc, int) or lnc not in _LNC_SIZES:
        raise NKIError("nki.cpu_simulate(%s)[%r]: the index is the logical NeuronCore size, "
                       "1 or 2" % (kernel.__name__, lnc))
    if lnc == 1:
        return kernel[1]
    from . import language as nl
    return kernel[nl.spmd_dim(nl.nc(lnc))]


class CpuSimulation:
    """nki.cpu_simulate(kernel): index it with the LNC size, then call it."""

    def __init__(self, kernel):
        self.kernel = _as_kernel(kernel)   # the trnemu Kernel to launch

    def __getitem__(self, lnc):
        return _launch(self.kernel, lnc)

    def __call__(self, *args, **kwargs):
        """Called without an index: one program, as [1]."""
        return _launch(self.kernel, 1)(*args, **kwargs)


def cpu_simulate(kernel):
    """nki.cpu_simulate(kernel)[lnc](*args, **kwargs): run kernel on trnemu
    for a logical NeuronCore of lnc (1 or 2) physical cores."""
    return CpuSimulation(kernel)
