"""nki.language: the NKI language on trnemu (docs/nki.md has the status
of every name). The names live in topic modules and are all importable
from here, as `import nki.language as nl` expects:

- _types: dtypes, finfo, buffers, tile_size, par_dim, NKIObject;
- _loops: loop iterators, SPMD grids and program ids, ds, arange/mgrid;
- _creation: ndarray, zeros, full, ..., shared_identity_matrix, rand,
  shared_constant;
- _memory: load, store, DMAs, masks, copy, assignment into views,
  static_cast, device_print;
- _elementwise: arithmetic, comparison, logical and bitwise operators,
  where, dropout;
- _math: Scalar Engine functions, floor/ceil/tan, matmul, transpose;
- _reductions: sum ... var, softmax, argmax/argmin;
- _shapes: broadcast_to, expand_dims.
"""
from ._types import (  # noqa: F401
    bool_, bool_ as bool, int8, int16, int32, uint8, uint16, uint32, float16, float32, bfloat16, tfloat32,
    float8_e4m3, float8_e5m2, float8_e3m4, float8_e4m3fn, float8_e8m0fnu, float8_e5m2_x4,
    float8_e4m3fn_x4, float4_e2m1fn_x4, fp32, fp16, finfo, DType, MemoryRegion, sbuf, psum, hbm,
    private_hbm, shared_hbm, is_hbm, is_sbuf, is_psum, is_on_chip, NKIObject, tile_size, _ParDim, par_dim)
from .._core import NkiTensor  # noqa: F401,E402
from ._loops import (  # noqa: F401
    affine_range, sequential_range, static_range, dynamic_range, fori_loop, while_loop,
    no_reorder, nc,
    _SpmdDim, spmd_dim, program_id,
    num_programs, program_ndim, ds, arange, _MGrid, mgrid)
from ._creation import (  # noqa: F401
    _buf, ndarray, _shape, empty_like, full, zeros, ones, zeros_like, ones_like,
    shared_identity_matrix, _is_scalar, _onchip, _memset, _fmt_value, _operand, rand, shared_constant,
    random_seed)
from ._memory import (  # noqa: F401
    _no_mask, _check_same_elems, _dma, _mask_ranges, _mask_rows, _apply_mask, load, store,
    load_transpose2d, _transpose2d, _as_tile, _TEMP_REFS, _retarget, _assign, _retargetable, copy, static_cast,
    device_print, gather_flattened, atomic_rmw)
from ._elementwise import (  # noqa: F401
    _ALU, _alu_fn, add, subtract, multiply, divide, maximum, minimum, power, mod, fmod, equal,
    not_equal, greater, greater_equal, less, less_equal, logical_and, logical_or,
    logical_xor, bitwise_and, bitwise_or, bitwise_xor, left_shift, right_shift, _CMP,
    _is_col, _binary, _squeeze_shape, _tensor_scalar, _inplace, negative, invert,
    logical_not, where, dropout, abs_max, abs_min, bypass, average)
from ._math import (  # noqa: F401
    _ACT, _act_fn, exp, log, tanh, sigmoid, relu, gelu, gelu_dx, gelu_apprx_tanh,
    gelu_apprx_sigmoid, silu, silu_dx, softplus, mish, erf, erf_dx, sqrt, rsqrt, sin, cos,
    arctan, square, abs, sign, identity, copy_act, reciprocal, _activation, floor, ceil,
    tan, _matmul, matmul, _to_sbuf, transpose, prelu, trunc, gelu_apprx_sigmoid_dx)
from ._reductions import (  # noqa: F401
    _reduce, sum, max, min, mean, prod, all, softmax, var, _arg_extreme, argmax, argmin,
    rms_norm, loop_reduce)
from ._shapes import (  # noqa: F401
    broadcast_to, expand_dims)
