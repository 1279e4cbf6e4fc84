"""nki._core: the tracer behind nki.jit.

A kernel runs once in Python with proxy tensors (NkiTensor). Every NKI call
becomes one or more trnemu instructions (docs/isa.md) on an engine. The
package is split by concern:

- context: machine limits, NKIError, the current tracer, kernel lines;
- alloc: storages and the SBUF/PSUM allocator (tiles are freed when their
  storage dies; reused bytes wait for the last accesses to them);
- tensors: the proxy tensor and its views, creation and reshape;
- index: integer/slice indexing and the legacy affine index grids;
- access: access patterns (assembly operands, byte ranges, bounds);
- dynamic: on-chip views moved by a run-time value (register offsets);
- tracer: instructions, the dependency tracker that turns RAW/WAR/WAW
  hazards between engines into semaphore waits, and assembly rendering.
"""
from .context import (ENGINES, SBUF_BYTES, PSUM_BYTES, PSUM_BANK, NUM_PARTITIONS, sbuf_bytes,  # noqa: F401
                      NKIError, NKIIndexError, NkiValidationError, NKIWarning, _tls, current,
                      user_line, fail, fail_hw, fail_index, warn)
from .alloc import MemoryRegion, Storage, Allocator  # noqa: F401
from .access import (_merge, free_dims, partitions, ap_text, rect, check_bounds,  # noqa: F401
                     elems, _overlap)
from .tensors import NkiTensor, new_tensor, reshape_tensor  # noqa: F401
from .index import (IndexExpr, Mask, index_tensor, check_grid, restrict)  # noqa: F401
from .tracer import Insn, CoreTrace, Tracer, trace_limits, whole_overwrite  # noqa: F401
