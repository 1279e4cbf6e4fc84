"""nki.isa helpers shared by the call modules: the current/legacy call
forms (dst first, or a new tile returned), operator and activation names,
engine and accumulator-command names, and scalar-or-tile operands."""
import inspect

import numpy as np

from .. import language as nl
from .._core import NkiTensor, fail
from . import constants
from .constants import engine, reduce_cmd


# the calls that take mask= (the others refuse one rather than ignore it)
_MASKED = ("activation", "tensor_reduce", "max8", "nc_matmul", "dma_copy", "nc_match_replace8")


# The current (vendor) parameter order after dst of the calls that also
# have a legacy form, from the NKI reference (nki/api/nki/isa/__init__.py).
_CURRENT = {
    "nc_matmul": "stationary moving is_stationary_onezero is_moving_onezero is_transpose "
                 "accumulate tile_position tile_size perf_mode name",
    "nc_transpose": "data engine name",
    "activation": "op data bias scale reduce_op reduce_res reduce_cmd name",
    "activation_reduce": "op data reduce_op reduce_res bias scale name",
    "tensor_tensor": "data1 data2 op engine name",
    "tensor_scalar": "data op0 operand0 reverse0 op1 operand1 reverse1 engine name",
    "scalar_tensor_tensor": "data op0 operand0 op1 operand1 reverse0 reverse1 name",
    "tensor_reduce": "op data axis negate keepdims name",
    "tensor_partition_reduce": "op data name",
    "tensor_copy": "src engine name",
    "reciprocal": "data name",
    "bn_stats": "data name",
    "bn_aggr": "data name",
    "max8": "src name",
    "tensor_tensor_scan": "data0 data1 initial op0 op1 reverse0 reverse1 name",
    "exponential": "src max_value reduce_res reduce_cmd reduce_init name",
    "tensor_copy_predicated": "src predicate reverse_pred name",
    "tensor_scalar_reduce": "data op0 operand0 reduce_op reduce_res reverse0 reduce_cmd "
                            "reduce_init reduce_res_negate name",
    "select_reduce": "predicate on_true on_false reduce_res reduce_cmd reduce_op reverse_pred name",
    "nc_find_index8": "data vals name",
    "nc_match_replace8": "data vals imm dst_idx name",
    "dropout": "data prob name",
    "local_gather": "src_buffer index num_elem_per_idx num_valid_indices name",
    "sequence_bounds": "segment_ids name",
    "tensor_scalar_cumulative": "src op0 op1 imm0 imm1 reduce_cmd name",
    "dma_transpose": "src axes priority dge_mode oob_mode name",
}


def _dst_first(legacy_tensors):
    """Accept the current form f(dst, ...) (the vendor's parameter order,
    _CURRENT) beside the legacy f(...) that returns a new tile. A call
    without dst= is in the current form when it starts with more tensors
    than the legacy form can, or when its positional arguments, bound in
    the legacy order, would meet its own keywords (f(dst, data1=a, ...))."""
    def wrap(fn):
        import inspect
        legacy = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        current = _CURRENT.get(fn.__name__, "").split() or [k for k in legacy if k != "dst"]

        def call(*args, **kw):
            n = 0
            while n < len(args) and isinstance(args[n], NkiTensor):
                n += 1
            if args and "dst" not in kw and (
                    n > legacy_tensors or any(k in kw for k in legacy[:len(args)])):
                if len(args) - 1 > len(current):
                    fail("nki.isa.%s takes at most %d positional arguments (%d given)"
                         % (fn.__name__, len(current) + 1, len(args)))
                kw["dst"] = args[0]
                for k, v in zip(current, args[1:]):
                    if k in kw:
                        fail("nki.isa.%s got %s twice (by position and by keyword)"
                             % (fn.__name__, k))
                    kw[k] = v
                args = ()
            if kw.get("mask") is not None and fn.__name__ not in _MASKED:
                fail("nki.isa.%s takes no mask= on trnemu (activation, tensor_reduce, max8, nc_matmul, "
                     "nc_match_replace8 and dma_copy do): restrict its views instead"
                     % fn.__name__)
            return fn(*args, **kw)
        call.__name__ = fn.__name__
        call.__doc__ = fn.__doc__
        call.__wrapped__ = fn
        return call
    return wrap


# NumPy functions NKI accepts as operators (np.add, np.exp, ...), by name.
_NP_ALU = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
           "true_divide": "divide", "maximum": "max", "minimum": "min", "power": "power",
           "mod": "mod", "fmod": "mod", "remainder": "mod", "equal": "equal",
           "not_equal": "not_equal", "greater": "greater", "greater_equal": "greater_equal",
           "less": "less", "less_equal": "less_equal", "logical_and": "logical_and",
           "logical_or": "logical_or", "logical_xor": "logical_xor", "bitwise_and": "bitwise_and",
           "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "left_shift": "left_shift",
           "right_shift": "right_shift", "abs": "abs", "absolute": "abs"}


_NP_ACT = {"exp": "exp", "log": "log", "tanh": "tanh", "sqrt": "sqrt", "sin": "sin",
           "arctan": "arctan", "square": "square", "abs": "abs", "absolute": "abs", "sign": "sign",
           "reciprocal": "reciprocal"}


def _alu(op):
    """The ISA ALU name of an nl function (nl.add), a NumPy function or a name."""
    if op is None:
        return "bypass"
    if hasattr(op, "_alu"):
        return op._alu
    if isinstance(op, str):
        return op
    if isinstance(op, np.ufunc) and op.__name__ in _NP_ALU:
        return _NP_ALU[op.__name__]
    if op in _NP_REDUCERS:
        return _NP_REDUCERS[op]
    fail("%r is not an arithmetic operator" % (op,))


# NumPy's reduction functions, accepted as the operators they reduce with
_NP_REDUCERS = {np.max: "max", np.amax: "max", np.min: "min", np.amin: "min", np.sum: "add",
                np.prod: "multiply", np.mean: "average"}


def _act(op):
    if hasattr(op, "_act"):
        return op._act, op._bias
    if isinstance(op, str):
        return op, 0.0
    if isinstance(op, np.ufunc) and op.__name__ in _NP_ACT:
        return _NP_ACT[op.__name__], 0.0
    fail("%r is not an activation function" % (op,))


def _out(dst, shape, dtype, buffer="sbuf"):
    return dst if dst is not None else nl.ndarray(shape, dtype, buffer)


def _ret(dst, out):
    return None if dst is not None else out


def _eng(e, default):
    """The trnemu stream of an engine= value (an nisa.engine, or a stream
    name); engine.unknown and None leave the choice to the call."""
    if e is None or e is engine.unknown:
        return default
    if isinstance(e, engine):
        return constants.ENGINE_STREAM[e]
    if e in ("pe", "act", "pool", "dve", "sp"):
        return e
    fail("engine=%r is not an nki.isa.engine" % (e,))


def _cmd(c, default):
    """The assembly name of a reduce_cmd= value."""
    if c is None:
        return default
    if isinstance(c, reduce_cmd):
        return c.name
    if isinstance(c, str) and c in reduce_cmd.__members__:
        return c
    fail("reduce_cmd=%r is not an nki.isa.reduce_cmd" % (c,))


def _scalar_arg(nm, v, args, ins):
    if v is not None:
        nl._operand(nm, v, args, ins)
