"""nki.isa.constants: the configuration enums of NKI ISA calls (engines,
DMA engines and modes, accumulator commands, matmul performance modes,
NeuronCore versions), with the vendor's member names and values, and how
each maps onto trnemu's assembly (docs/isa.md)."""
import functools
from enum import Enum


class engine(Enum):
    """The engine an instruction runs on (engine= of the calls that can run
    on several)."""
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    dma = 4
    vector = 5
    sync = 6
    activation = 2      # the Scalar Engine's other name


class reduce_cmd(Enum):
    """What an instruction does with its reduction accumulator."""
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3
    load_reduce = 4


class dge_mode(Enum):
    """How a DMA's descriptors are generated (software or hardware DGE).
    Descriptor generation leaves the data unchanged on trnemu."""
    unknown = 0
    swdge = 1
    hwdge = 2
    none = 3


class oob_mode(Enum):
    """What an indirect DMA does with an index outside its tensor: fail
    the execution, or skip that row."""
    error = 0
    skip = 1


class matmul_perf_mode(Enum):
    """Tensor Engine performance modes of nc_matmul."""
    none = "none"
    double_row = "double_row"


@functools.total_ordering
class nc_version(Enum):
    """NeuronCore generations: gen2 Trainium/Inferentia2, gen3 Trainium2,
    gen4 Trainium3; ordered by generation (get_nc_version() >= gen3)."""
    gen2 = 2
    gen3 = 3
    gen4 = 4

    def _order(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.value, other.value

    def __lt__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else o[0] < o[1]

    def __le__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else o[0] <= o[1]

    def __gt__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else o[0] > o[1]

    def __ge__(self, other):
        o = self._order(other)
        return o if o is NotImplemented else o[0] >= o[1]


class dma_engine(Enum):
    """The engine that moves a sendrecv's data: the shared DMA rings or
    the GpSimd-local DMA (results are the same)."""
    dma = 1
    gpsimd_dma = 2


# engine -> trnemu engine stream name (docs/isa.md)
ENGINE_STREAM = {engine.tensor: "pe", engine.scalar: "act", engine.gpsimd: "pool",
                 engine.vector: "dve", engine.sync: "sp", engine.dma: "sp"}

# the engine selectors of the older NKI spelling (nisa.vector_engine ...)
tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
sync_engine = engine.sync
unknown_engine = engine.unknown
