"""nki.isa: NKI instruction-level calls on trnemu. Each call is one trnemu
instruction (docs/isa.md) on its engine. Calls accept the current form
(dst given, by keyword or first; an NkiInstruction handle returned) and the
legacy form (a new tile returned). This module holds the compute, DMA and
selection calls; the others live in constants (the enums), _helpers (call
forms, operator names), _cores (core_barrier, sendrecv), _registers
(virtual registers), _gpsimd (selection, gather, random numbers), _mx (the
NeuronCore-v4 calls) and _handles (NkiInstruction)."""
import copy

import numpy as np

from .. import _core, _dtypes, _runtime, language as nl
from ..language._memory import _same_view
from .._core import NkiTensor, NkiValidationError, fail, current  # noqa: F401
from .._core.tracer import region_touched, region_written
from . import constants, _transpose
from ._helpers import (_MASKED, _dst_first, _alu, _act, _out, _ret, _eng, _cmd,  # noqa: F401
                       _scalar_arg, _NP_ALU, _NP_ACT)
from .constants import (engine, reduce_cmd, dge_mode, oob_mode, matmul_perf_mode,  # noqa: F401
                        nc_version, dma_engine, tensor_engine, vector_engine, scalar_engine,
                        gpsimd_engine, sync_engine, unknown_engine)


def get_nc_version():
    """The NeuronCore generation kernels are built for (an nc_version): in
    a kernel, the one it is traced for (its platform target, which must be
    the emulated machine's); outside one, the emulated machine's."""
    tr = getattr(_core._tls, "tracer", None)
    gen = getattr(tr, "gen", None) if tr is not None else None
    return nc_version(gen or _runtime.machine_generation())


def get_nc_sub_version():
    """The sub-version of the NeuronCore generation: trnemu models one
    version of each generation, 0."""
    return 0


@_dst_first(2)
def nc_matmul(stationary, moving, dst=None, accumulate=None, is_stationary_onezero=False,
              is_moving_onezero=False, is_transpose=False, tile_position=(), tile_size=(),
              perf_mode=None, mask=None, name=None, **kw):
    """dst[M, N] = stationary[K, M]^T x moving[K, N] (PSUM, fp32). Without
    accumulate=, a PSUM dst that was written before accumulates and a fresh
    one starts the accumulation group. mask= keeps the rows (grid axis 0,
    M) and columns (axis 1, N) of the result its conditions allow; the
    contraction is not masked. tile_position/tile_size place the op on a
    tile of the systolic array; perf_mode=double_row is the FP8 mode whose
    operands are [K, 2, M] and [K, 2, N] (_check_double_row)."""
    tr = current()
    double = _perf_mode(perf_mode) == "double_row"
    if double:
        _check_double_row(stationary, moving, tile_size, is_transpose)
    if dst is None:
        if not all(isinstance(t, NkiTensor) and (len(t.shape) == 3 if double else len(t.shape) >= 2)
                   for t in (stationary, moving)):
            return nl._matmul(stationary, moving, double_row=double)     # reports what is wrong
        dst_new = nl.ndarray((_free(stationary, double), _free(moving, double)), nl.float32,
                             nl.psum)
        out, acc = dst_new, False
    else:
        out = None
        acc = None if accumulate is None else bool(accumulate)
    d = dst if dst is not None else dst_new
    rng = nl._mask_ranges(mask)
    if rng is not None:
        d = _core.restrict(d, rng)
        stationary = _core.restrict(stationary, {len(stationary.shape) - 1: rng[0]} if 0 in rng else {})
        moving = _core.restrict(moving, {len(moving.shape) - 1: rng[1]} if 1 in rng else {})
        if d is None or stationary is None or moving is None:
            return out
    if dst is not None and not accumulate:
        tr.settle_zero(d)         # a zero-filled tile: this matmul starts its group
    if acc is True and d.buffer == "psum" and d.storage.zero_view is None and \
            not region_touched(d):
        _core.warn("nc_matmul accumulate=True into PSUM that no instruction has written: "
                   "undefined on hardware (the sums start from whatever the location holds)")
    if acc is None:
        acc = region_written(d)
    nl._matmul(stationary, moving, dst=d, double_row=double)
    insn = tr.pending
    _matmul_placement(insn, tile_position, tile_size, double)
    for flag, on in (("accumulate", acc), ("transpose", is_transpose),
                     ("stationary_onezero", is_stationary_onezero),
                     ("moving_onezero", is_moving_onezero)):
        if on:
            insn.args.append((flag, None))
    insn.rmw = acc
    return out


def _free(t, double):
    """An operand's matmul size: its free elements, flattened (double_row:
    after the pair dimension)."""
    n = 1
    for d in t.shape[2 if double else 1:]:
        n *= int(d)
    return n


def _matmul_placement(insn, tile_position, tile_size, double_row):
    """tile_position=(row, col), tile_size=(rows, cols) and the performance
    mode of a matmul, as the ISA's tile_row/col/rows/cols and perf operands."""
    if tile_position or tile_size:
        if len(tile_position) != 2 or len(tile_size) != 2:
            fail("tile_position and tile_size are (row, column) pairs, got %r and %r"
                 % (tile_position, tile_size))
        insn.args += [("tile_row", int(tile_position[0])), ("tile_col", int(tile_position[1])),
                      ("tile_rows", int(tile_size[0])), ("tile_cols", int(tile_size[1]))]
    if double_row:
        insn.args.append(("perf", "double_row"))


# perf_mode values: the matmul_perf_mode members by value, and
# "double_row_gen3", the spelling the reference's own nc_matmul test passes
_PERF_MODES = {"none": "none", "double_row": "double_row", "double_row_gen3": "double_row"}


def _perf_mode(perf_mode):
    """The mode a perf_mode argument names: "none" or "double_row"."""
    if perf_mode is None:
        return "none"
    name = perf_mode.value if isinstance(perf_mode, constants.matmul_perf_mode) else perf_mode
    if not isinstance(name, str) or name not in _PERF_MODES:
        fail("perf_mode=%r is not an nki.isa.matmul_perf_mode (none, double_row)" % (perf_mode,))
    return _PERF_MODES[name]


# double_row inputs: the FP8 formats of NeuronCore-v3, and OCP e4m3 from v4
_DOUBLE_ROW_TYPES = {"float8_e4m3": nc_version.gen3, "float8_e5m2": nc_version.gen3,
                     "float8_e4m3fn": nc_version.gen4}


def _check_double_row(stationary, moving, tile_size, is_transpose):
    """The rules of perf_mode=double_row (the nc_matmul reference and the
    Trainium2 architecture guide): NeuronCore-v3 or newer; SBUF operands
    [K, 2, M] and [K, 2, N] whose pair dimension (the first free one)
    holds contraction rows k and K + k; FP8 inputs, the two formats free
    to differ except legacy float8_e4m3 with float8_e4m3fn; no column
    tiling and no transpose mode."""
    gen = get_nc_version()
    if gen < nc_version.gen3:
        fail("nc_matmul perf_mode=double_row needs NeuronCore-v3 or newer (this kernel "
             "targets NeuronCore-v%d)" % gen.value)
    names = []
    for nm, t in (("stationary", stationary), ("moving", moving)):
        if not isinstance(t, NkiTensor) or len(t.shape) != 3 or t.shape[1] != 2 or t.pdim != 0:
            fail("nc_matmul perf_mode=double_row: '%s' must be a [K, 2, %s] tile (the "
                 "contraction split between the partitions and a first free dimension of "
                 "2), got %s" % (nm, "M" if nm == "stationary" else "N",
                                 "shape %s" % (t.shape,) if isinstance(t, NkiTensor) else repr(t)))
        name = _dtypes.info(t.dtype).name
        if name not in _DOUBLE_ROW_TYPES or gen < _DOUBLE_ROW_TYPES[name]:
            fail("nc_matmul perf_mode=double_row: '%s' is %s; the mode multiplies "
                 "float8_e4m3 or float8_e5m2 (float8_e4m3fn from NeuronCore-v4)" % (nm, name))
        names.append(name)
    if set(names) == {"float8_e4m3", "float8_e4m3fn"}:
        fail("nc_matmul perf_mode=double_row: legacy float8_e4m3 and float8_e4m3fn "
             "cannot be mixed in one matmul")
    if len(tile_size) == 2 and int(tile_size[1]) != 128:
        fail("nc_matmul perf_mode=double_row cannot be combined with column tiling "
             "(tile_size column size %d)" % int(tile_size[1]))
    if is_transpose:
        fail("nc_matmul perf_mode=double_row cannot be combined with is_transpose")


@_dst_first(1)
def nc_transpose(data, dst=None, engine=None, **kw):
    """Transpose a tile: on the Tensor Engine (into PSUM, up to 128x128) or
    the Vector Engine (up to 32x32)."""
    tr = current()
    p, f = data.shape
    eng = _eng(engine, "pe" if p > 32 or f > 32 else "dve")
    out = _out(dst, (f, p), data.dtype, "psum" if eng == "pe" else "sbuf")
    tr.emit(eng, "nc_transpose", {"dst": out}, {"data": data}, [("dst", out), ("data", data)])
    return _ret(dst, out)


@_dst_first(0)
def activation(op, data, bias=None, scale=1.0, dst=None, reduce_op=None, reduce_res=None,
               reduce_cmd=None, dtype=None, mask=None, **kw):
    """dst = op(data * scale + bias) on the Scalar Engine."""
    func, b0 = _act(op)
    if bias is None:
        bias = b0
    elif b0:
        fail("%s with a bias is not supported" % func)
    out = _out(dst, data.shape, dtype or (data.dtype if _dtypes.info(data.dtype).is_float else nl.float32))
    cmd = _cmd(reduce_cmd, "idle")    # the reference's default: the registers left alone
    red = (_alu(reduce_op or nl.add), reduce_res, cmd) if reduce_res is not None or cmd != "idle" \
        else None
    nl._activation(func, data, bias=bias, scale=scale, reduce=red, dst=out, mask=mask)
    return _ret(dst, out)


@_dst_first(0)
def activation_reduce(op, data, reduce_op, reduce_res, bias=None, scale=1.0, dst=None, dtype=None, **kw):
    """activation with reduce_cmd=reset_reduce, reading the sums into reduce_res."""
    return activation(op, data, bias, scale, dst, reduce_op, reduce_res,
                      reduce_cmd=reduce_cmd.reset_reduce, dtype=dtype)


@_dst_first(2)
def tensor_tensor(data1, data2, op, dst=None, dtype=None, engine=None, **kw):
    tr = current()
    out = _out(dst, data1.shape, dtype or _dtypes.promote(data1.dtype, data2.dtype))
    # as the vendor's: the same partitions and elements per partition (the
    # free axes may be shaped differently: the engine streams each in order)
    if data1.shape != data2.shape and (
            not all(isinstance(t, NkiTensor) for t in (data1, data2))
            or _core.partitions(data1)[2] != _core.partitions(data2)[2]
            or _core.elems(data1) != _core.elems(data2)):
        fail("tensor_tensor shapes %s and %s differ in partitions or elements per partition"
             % (data1.shape, data2.shape))
    eng = _eng(engine, "dve")
    tr.emit(eng, "tensor_tensor", {"dst": out}, {"data1": data1, "data2": data2},
            [("dst", out), ("data1", data1), ("data2", data2), ("op", _alu(op))])
    return _ret(dst, out)


@_dst_first(1)
def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  dst=None, dtype=None, engine=None, **kw):
    tr = current()
    out = _out(dst, data.shape, dtype or data.dtype)
    args, ins = [("dst", out), ("data", data), ("op0", _alu(op0))], {"data": data}
    _scalar_arg("operand0", operand0, args, ins)
    if reverse0:
        args.append(("reverse0", None))
    if op1 is not None:
        args.append(("op1", _alu(op1)))
        _scalar_arg("operand1", operand1, args, ins)
        if reverse1:
            args.append(("reverse1", None))
    tr.emit(_eng(engine, "dve"), "tensor_scalar", {"dst": out}, ins, args)
    return _ret(dst, out)


@_dst_first(1)
def scalar_tensor_tensor(data, op0, operand0, op1, operand1, dst=None, reverse0=False,
                         reverse1=False, dtype=None, **kw):
    tr = current()
    out = _out(dst, data.shape, dtype or data.dtype)
    args, ins = [("dst", out), ("data", data), ("op0", _alu(op0))], {"data": data, "operand1": operand1}
    _scalar_arg("operand0", operand0, args, ins)
    args += [("op1", _alu(op1)), ("operand1", operand1)]
    if reverse0:
        args.append(("reverse0", None))
    if reverse1:
        args.append(("reverse1", None))
    tr.emit("dve", "scalar_tensor_tensor", {"dst": out}, ins, args)
    return _ret(dst, out)


@_dst_first(0)
def tensor_reduce(op, data, axis, dst=None, negate=False, keepdims=False, dtype=None, mask=None,
                  **kw):
    out = nl._reduce(_alu(op), data, axis, dtype, keepdims, negate, mask=mask)
    if dst is not None:
        nl._assign(dst, out)
        return None
    return out


@_dst_first(0)
def tensor_partition_reduce(op, data, dst=None, dtype=None, **kw):
    tr = current()
    out = _out(dst, (1,) + tuple(data.shape[1:]), dtype or data.dtype)
    tr.emit("pool", "tensor_partition_reduce", {"dst": out}, {"data": data},
            [("dst", out), ("data", data), ("op", _alu(op))])
    return _ret(dst, out)


@_dst_first(1)
def tensor_copy(src, dst=None, dtype=None, engine=None, **kw):
    tr = current()
    out = _out(dst, src.shape, dtype or src.dtype)
    eng = _eng(engine, "dve" if src.buffer == "psum" or out.buffer == "psum" else "act")
    tr.emit(eng, "tensor_copy", {"dst": out}, {"src": src}, [("dst", out), ("src", src)])
    return _ret(dst, out)


def memset(dst=None, value=0.0, shape=None, dtype=None, engine=None, **kw):
    """memset(dst, value) or legacy memset(shape, value, dtype)."""
    if dst is not None and not isinstance(dst, NkiTensor):
        shape, dst = dst, None
    out = _out(dst, shape, dtype)
    current().emit(_eng(engine, "dve"), "memset", {"dst": out}, {},
                   [("dst", out), ("value", nl._fmt_value(value))])
    return _ret(dst, out)


@_dst_first(1)
def reciprocal(data, dst=None, dtype=None, **kw):
    tr = current()
    out = _out(dst, data.shape, dtype or data.dtype)
    tr.emit("dve", "reciprocal", {"dst": out}, {"data": data}, [("dst", out), ("data", data)])
    return _ret(dst, out)


def iota(*args, **kw):
    """iota(dst, pattern, offset=0, channel_multiplier=0): dst[p, i...] =
    offset + p * channel_multiplier + sum(step * i) over the [[step, count],
    ...] pattern, on GpSimd. The legacy iota(index expression, dtype)
    returns a new tile."""
    if (args and isinstance(args[0], NkiTensor)) or "dst" in kw:
        return _iota_pattern(*args, **kw)
    return _iota_expr(*args, **kw)


def _iota_pattern(dst, pattern, offset=0, channel_multiplier=0, name=None, **kw):
    try:
        pat = [[int(s), int(n)] for s, n in pattern]
    except (TypeError, ValueError):
        fail("iota pattern is a list of [step, count] pairs, got %r" % (pattern,))
    current().emit("pool", "iota", {"dst": dst}, {},
                   [("dst", dst), ("pattern", "[%s]" % ", ".join("[%d,%d]" % tuple(p) for p in pat)),
                    ("offset", int(offset)), ("channel_multiplier", int(channel_multiplier))])


def _iota_expr(expr, dtype=None, **kw):
    tr = current()
    if not isinstance(expr, _core.IndexExpr):
        fail("iota(dst, pattern=[[step, count], ...]) or iota(index expression, dtype)")
    terms = sorted(expr.terms.items())
    if not terms:
        fail("iota needs an index expression with nl.arange/mgrid axes")
    rank = terms[0][0][1]
    shape = [1] * rank
    for (pos, _), (c, n) in terms:
        shape[pos] = n
    cm = 0
    pat = []
    for (pos, _), (c, n) in terms:
        if pos == 0:
            cm = c
        else:
            pat.append([c, n])
    if not pat:
        pat = [[0, 1]]
    out = nl.ndarray(tuple(shape), dtype or nl.int32, "sbuf")
    tr.emit("pool", "iota", {"dst": out}, {},
            [("dst", out), ("pattern", "[%s]" % ", ".join("[%d,%d]" % tuple(p) for p in pat)),
             ("offset", expr.const), ("channel_multiplier", cm)])
    return out


def dma_copy(dst, src, priority=None, oob_mode=None, dge_mode=None, engine=None, name=None,
             dst_rmw_op=None, mask=None, **kw):
    """A DMA from src to dst (HBM, SBUF or PSUM). An indirect view
    (ap(vector_offset=)) on one side makes it a gather or scatter by the
    per-partition indices; oob_mode=skip drops rows whose index is outside
    the HBM tensor; dst_rmw_op=np.add accumulates into dst; engine= picks
    the queue; dge_mode does not change results."""
    views = nl._apply_mask(mask, dst, src)
    if views is None:
        return
    dst, src = views
    if oob_mode is not None and not isinstance(oob_mode, constants.oob_mode):
        fail("oob_mode=%r is not an nki.isa.oob_mode" % (oob_mode,))
    insn = nl._dma(dst, src, skip_oob=oob_mode is constants.oob_mode.skip)
    if engine is not None and engine is not constants.engine.unknown:
        insn.engine = _eng(engine, insn.engine)
    if dst_rmw_op is not None:
        op = _alu(dst_rmw_op)
        if op not in ("add", "max", "min"):
            fail("dst_rmw_op=%r: a DMA accumulates with add, max or min" % (dst_rmw_op,))
        insn.args = [a for a in insn.args if a[0] != "op"] + [("op", op)]
        insn.rmw = True
    if priority:
        insn.args.append(("priority", int(priority)))


@_dst_first(1)
def dma_transpose(src, dst=None, axes=None, **kw):
    """dst = src with its axes permuted by DMA: by axes=, or as the vendor's
    defaults, (1, 0) for 2-D, (2, 1, 0) for 3-D and (3, 1, 2, 0) for 4-D
    (dst[d, b, c, a] = src[a, b, c, d]); dst's shape is src's permuted,
    rank included. Beyond 2-D, src is in HBM. An indexed src
    (ap(vector_offset=)) gathers its rows first (_transpose)."""
    nd = len(src.shape)
    perm = tuple(int(a) for a in axes) if axes is not None else \
        {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}.get(nd)
    if perm is None or sorted(perm) != list(range(nd)):
        fail("dma_transpose of a %d-D view with axes=%r: not a permutation of its axes"
             % (nd, axes))
    want = tuple(src.shape[d] for d in perm)
    if dst is not None and tuple(dst.shape) != want:
        fail("dma_transpose: dst has shape %s where src %s permuted by axes %s has %s (NKI 0.4.0 "
             "on: the same shape and rank exactly)" % (tuple(dst.shape), tuple(src.shape), perm, want))
    out = _out(dst, want, src.dtype)
    if _transpose.is_indexed(src):
        _transpose.indexed_transpose(out, src, perm, kw.get("oob_mode") is oob_mode.skip)
    elif perm == (1, 0):
        nl._transpose2d(out, src)
    elif src.storage.kind == "hbm" and len(src.dims) == nd:
        nl._dma(out, NkiTensor(src.storage, src.dtype, [src.dims[d] for d in perm], None, 0,
                               src.off))
    elif src.pdim == 0 and out.pdim == 0 and len(src.dims) == len(out.dims) == nd:
        _transpose_on_chip(out, src, perm)
    else:
        fail("dma_transpose of this %d-D view is not supported here" % nd)
    return _ret(dst, out)


def _transpose_on_chip(out, src, perm):
    """dma_transpose of an SBUF view: the partition axis stays (one DMA of
    src's free axes permuted), or it moves to a free axis of out: one DMA
    per src partition a, from its row (free axes in out's order) into out
    at index a of that axis."""
    if perm[0] == 0:
        nl._dma(out, NkiTensor(src.storage, src.dtype, [src.dims[d] for d in perm], 0,
                               src.part, src.off, src.pcount))
        return
    j0 = perm.index(0)
    (pstep, pn), (ostep, _) = src.dims[0], out.dims[j0]
    free = [src.dims[perm[j]] for j in range(len(perm)) if j != j0]
    rest = [d for j, d in enumerate(out.dims) if j != j0]
    for a in range(pn):
        nl._dma(NkiTensor(out.storage, out.dtype, rest, 0, out.part, out.off + a * ostep,
                          out.pcount),
                NkiTensor(src.storage, src.dtype, [[1, 1]] + free, 0, src.part + a * pstep,
                          src.off, src.pcount))


@_dst_first(1)
def bn_stats(data, dst=None, dtype=None, **kw):
    tr = current()
    out = _out(dst, (data.shape[0], 6), dtype or nl.float32)
    tr.emit("dve", "bn_stats", {"dst": out}, {"data": data}, [("dst", out), ("data", data)])
    return _ret(dst, out)


@_dst_first(1)
def bn_aggr(data, dst=None, dtype=None, **kw):
    tr = current()
    out = _out(dst, (data.shape[0], 2), dtype or nl.float32)
    tr.emit("dve", "bn_aggr", {"dst": out}, {"data": data}, [("dst", out), ("data", data)])
    return _ret(dst, out)


@_dst_first(1)
def max8(src, dst=None, dtype=None, mask=None, **kw):
    """The 8 largest values of each partition, in descending order; mask=
    limits the elements (and partitions) searched."""
    tr = current()
    out = _out(dst, (src.shape[0], 8), dtype or src.dtype)
    views = nl._mask_rows(mask, out, src)
    if views is not None:
        o, s = views
        tr.emit("dve", "max8", {"dst": o}, {"src": s}, [("dst", o), ("src", s)])
    return _ret(dst, out)


def affine_select(*args, **kw):
    """affine_select(dst, pattern, channel_multiplier, on_true_tile,
    on_false_value, cmp_op=nl.equal, offset=0): dst = on_true where
    cmp_op(offset + p * channel_multiplier + sum(step * i), 0) holds, else
    on_false_value (e.g. a causal mask), on GpSimd. The legacy form
    affine_select(pred, on_true, on_false) takes the predicate as a
    comparison of index grids and returns a new tile."""
    if (args and isinstance(args[0], NkiTensor)) or "dst" in kw:
        return _affine_select_pattern(*args, **kw)
    return _affine_select_pred(*args, **kw)


def _affine_select_pattern(dst, pattern, channel_multiplier, on_true_tile, on_false_value,
                           cmp_op=None, offset=0, name=None, **kw):
    try:
        pat = [[int(st), int(n)] for st, n in pattern]
    except (TypeError, ValueError):
        fail("affine_select pattern is a list of [step, count] pairs, got %r" % (pattern,))
    cmp = _alu(cmp_op if cmp_op is not None else nl.equal)
    current().emit("pool", "affine_select", {"dst": dst}, {"on_true": on_true_tile},
                   [("dst", dst), ("on_true", on_true_tile),
                    ("pattern", "[%s]" % ", ".join("[%d,%d]" % tuple(q) for q in pat)),
                    ("channel_multiplier", int(channel_multiplier)), ("offset", int(offset)),
                    ("on_false", nl._fmt_value(on_false_value)), ("cmp_op", cmp)])


def _affine_select_pred(pred, on_true_tile, on_false_value, dst=None, dtype=None, **kw):
    tr = current()
    if not isinstance(pred, _core.Mask) or len(pred.conds) != 1:
        fail("affine_select needs one comparison of an affine index expression")
    e, op = pred.conds[0]
    cmp = {"lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal"}[op]
    cm = 0
    pat = []
    for (pos, _), (c, n) in sorted(e.terms.items()):
        if pos == 0:
            cm = c
        else:
            pat.append([c, n])
    out = _out(dst, on_true_tile.shape, dtype or on_true_tile.dtype)
    tr.emit("pool", "affine_select", {"dst": out}, {"on_true": on_true_tile},
            [("dst", out), ("on_true", on_true_tile),
             ("pattern", "[%s]" % ", ".join("[%d,%d]" % tuple(p) for p in (pat or [[0, 1]]))),
             ("channel_multiplier", cm), ("offset", e.const),
             ("on_false", nl._fmt_value(on_false_value)), ("cmp_op", cmp)])
    return _ret(dst, out)


@_dst_first(2)
def tensor_tensor_scan(data0, data1, initial, op0, op1, dst=None, reverse0=False, reverse1=False,
                       dtype=None, **kw):
    tr = current()
    out = _out(dst, data0.shape, dtype or nl.float32)
    args, ins = [("dst", out), ("data0", data0), ("data1", data1)], {"data0": data0, "data1": data1}
    _scalar_arg("initial", initial, args, ins)
    args += [("op0", _alu(op0)), ("op1", _alu(op1))]
    if reverse0:
        args.append(("reverse0", None))
    if reverse1:
        args.append(("reverse1", None))
    tr.emit("dve", "tensor_tensor_scan", {"dst": out}, ins, args)
    return _ret(dst, out)


@_dst_first(1)
def exponential(src, max_value=0.0, dst=None, dtype=None, reduce_res=None, reduce_cmd=None,
                reduce_init=0.0, **kw):
    """dst = exp(src - max_value); the Vector Engine's accumulators sum the
    results as reduce_cmd says (default idle), reduce_res reads them."""
    tr = current()
    out = _out(dst, src.shape, dtype or src.dtype)
    args, ins = [("dst", out), ("src", src)], {"src": src}
    _scalar_arg("max_value", max_value, args, ins)
    outs = _reduce_args(args, ins, {"dst": out}, reduce_res, _cmd(reduce_cmd, "idle"), reduce_init)
    tr.emit("dve", "exponential", outs, ins, args)
    return _ret(dst, out)


def _reduce_args(args, ins, outs, reduce_res, cmd, reduce_init):
    """The accumulator operands of a Vector Engine reduction (exponential,
    tensor_scalar_reduce): its command, reduce_init (load_reduce's start)
    and reduce_res (optional: None keeps the sums in the registers)."""
    args.append(("reduce_cmd", cmd))
    if reduce_init is not None and (isinstance(reduce_init, NkiTensor) or float(reduce_init) != 0.0):
        nl._operand("reduce_init", reduce_init, args, ins)
    if reduce_res is None:
        return outs
    args.append(("reduce_res", reduce_res))
    return {**outs, "reduce_res": reduce_res}


@_dst_first(1)
def tensor_copy_predicated(src, predicate=None, dst=None, reverse_pred=False, **kw):
    """dst = src where predicate is non-zero (zero with reverse_pred); dst
    keeps its other elements, so dst is required."""
    tr = current()
    if dst is None:
        fail("tensor_copy_predicated needs dst=")
    args, ins = [("dst", dst)], {"predicate": predicate}
    _scalar_arg("src", src, args, ins)
    args.append(("predicate", predicate))
    if reverse_pred:
        args.append(("reverse_pred", None))
    tr.emit("dve", "tensor_copy_predicated", {"dst": dst}, ins, args, rmw=True)


@_dst_first(1)
def tensor_scalar_reduce(data, op0, operand0, reduce_op, reduce_res=None, reverse0=False, dst=None,
                         dtype=None, reduce_cmd=None, reduce_init=None, reduce_res_negate=False,
                         **kw):
    """dst = data op0 operand0, reduced with reduce_op per partition into
    the Vector Engine's accumulators as reduce_cmd says (default
    reset_reduce); reduce_res (optional) reads them, negated with
    reduce_res_negate."""
    tr = current()
    out = _out(dst, data.shape, dtype or data.dtype)
    args, ins = [("dst", out), ("data", data), ("op0", _alu(op0))], {"data": data}
    _scalar_arg("operand0", operand0, args, ins)
    args.append(("reduce_op", _alu(reduce_op)))
    if reverse0:
        args.append(("reverse0", None))
    outs = _reduce_args(args, ins, {"dst": out}, reduce_res, _cmd(reduce_cmd, "reset_reduce"),
                        reduce_init)
    if reduce_res_negate:
        args.append(("reduce_res_negate", None))
    tr.emit("dve", "tensor_scalar_reduce", outs, ins, args)
    return _ret(dst, out)


@_dst_first(2)
def select_reduce(predicate, on_true, on_false, dst=None, reduce_res=None, reduce_cmd=None,
                  reduce_op=None, reverse_pred=False, dtype=None, **kw):
    """dst = predicate ? on_true : on_false, optionally max-reduced into reduce_res."""
    tr = current()
    out = _out(dst, on_true.shape, dtype or on_true.dtype)
    args, ins = [("dst", out), ("predicate", predicate), ("on_true", on_true)], \
        {"predicate": predicate, "on_true": on_true}
    _scalar_arg("on_false", on_false, args, ins)
    outs = {"dst": out}
    if reduce_res is not None:
        outs["reduce_res"] = reduce_res
        args += [("reduce_res", reduce_res), ("reduce_cmd", _cmd(reduce_cmd, "reset_reduce"))]
    if reduce_op is not None:
        args.append(("reduce_op", _alu(reduce_op)))
    if reverse_pred:
        args.append(("reverse_pred", None))
    tr.emit("dve", "select_reduce", outs, ins, args)
    return _ret(dst, out)


@_dst_first(2)
def nc_find_index8(data, vals, dst=None, dtype=None, **kw):
    """Per partition, the index of each of the 8 vals in data."""
    tr = current()
    out = _out(dst, (data.shape[0], 8), dtype or nl.uint32)
    tr.emit("dve", "nc_find_index8", {"dst": out}, {"data": data, "vals": vals},
            [("dst", out), ("data", data), ("vals", vals)])
    return _ret(dst, out)


@_dst_first(2)
def nc_match_replace8(data, vals, imm, dst=None, dst_idx=None, dtype=None, mask=None, **kw):
    """data with the first occurrence of each of the 8 vals replaced by imm;
    mask= limits data and dst by every condition and dst_idx and vals by
    the partition one."""
    tr = current()
    res = out = _out(dst, data.shape, dtype or data.dtype)
    rng = nl._mask_ranges(mask)
    if rng is not None:
        rows = {0: rng[0]} if 0 in rng else {}
        data, out = _core.restrict(data, rng), _core.restrict(out, rng)
        vals = _core.restrict(vals, rows)
        dst_idx = _core.restrict(dst_idx, rows) if dst_idx is not None else None
        if data is None or out is None or vals is None:
            return _ret(dst, res)
    outs = {"dst": out}
    args = [("dst", out), ("data", data), ("vals", vals), ("imm", nl._fmt_value(imm))]
    if dst_idx is not None:
        outs["dst_idx"] = dst_idx
        args.append(("dst_idx", dst_idx))
    tr.emit("dve", "nc_match_replace8", outs, {"data": data, "vals": vals}, args)
    return _ret(dst, res)


def dma_compute(dst, srcs, reduce_op=None, scales=None, unique_indices=True, oob_mode=None,
                name=None, **kw):
    """dst = reduce_op(srcs[i] * scales[i]) element-wise by DMA, 1 to 16
    sources in order. The ISA's dma_compute takes 4: more sources run as a
    chain where each link starts from the previous result (scale 1), the
    same order of operations; a dst narrower than fp32 is rounded at each
    link."""
    srcs = list(srcs)
    if not 1 <= len(srcs) <= 16:
        fail("dma_compute takes 1 to 16 sources, got %d" % len(srcs))
    scales = list(scales) if scales is not None else [1.0] * len(srcs)
    if len(scales) != len(srcs):
        fail("dma_compute has %d sources and %d scales" % (len(srcs), len(scales)))
    op = _alu(reduce_op or nl.add)
    if any(_transpose.is_indexed(t) for t in [dst] + srcs):
        if _dma_compute_rmw(dst, srcs, scales, op, unique_indices, oob_mode):
            return
        srcs = [_dma_stage(s, oob_mode) for s in srcs]
    first = True
    while srcs:
        take = 4 if first else 3
        chunk, srcs = srcs[:take], srcs[take:]
        sc, scales = scales[:take], scales[take:]
        if not first:
            chunk, sc = [dst] + chunk, [1.0] + sc
        _dma_compute_one(dst, chunk, sc, op)
        first = False


def _dma_compute_rmw(dst, srcs, scales, op, unique_indices, oob):
    """dma_compute with a view indexed at run time (ap(vector_offset=) or
    scalar_offset): the reference's read-modify-write forms, a scatter
    (dst[indices] += src, dst and one source the same indexed view) or a
    gather (dst += src[indices], the other source dst itself), are each
    one DMA that adds into its destination (dma_copy dst_rmw_op=add: fp32,
    rounded once). False when the call is not one of them and dst is not
    indexed: its indexed sources are then gathered first (_dma_stage)."""
    same = [i for i, s in enumerate(srcs) if _same_view(s, dst)]
    rmw = len(srcs) == 2 and op == "add" and all(float(s) == 1.0 for s in scales) and same
    if not rmw and not _transpose.is_indexed(dst):
        return False
    if not rmw:
        fail("dma_compute into an indexed view (a scatter) is a read-modify-write: 2 sources, "
             "one of them dst itself, reduce_op=add and scales of 1.0")
    if not unique_indices:
        fail("dma_compute with an indexed view needs unique_indices=True (the reference does "
             "not support repeated indices yet)")
    dma_copy(dst=dst, src=srcs[1 - same[0]], dst_rmw_op=nl.add, oob_mode=oob)
    return True


def _dma_stage(src, oob):
    """An indexed source of dma_compute gathered into an SBUF tile of its
    shape (one DMA); any other source as it is."""
    if not _transpose.is_indexed(src):
        return src
    if len(src.shape) < 1 or src.shape[0] > 128:
        fail("dma_compute gathers an indexed source of shape %s into SBUF: its first dimension "
             "is its partitions (at most 128)" % (src.shape,))
    tile = nl.ndarray(src.shape, src.dtype, nl.sbuf)
    dma_copy(dst=tile, src=src, oob_mode=oob)
    return tile


def _dma_compute_one(dst, srcs, scales, op):
    args, ins = [("dst", dst)], {}
    for i, sv in enumerate(srcs):
        ins["src%d" % i] = sv
        args.append(("src%d" % i, sv))
    args.append(("reduce_op", op))
    for i, sc in enumerate(scales):
        args.append(("scale%d" % i, nl._fmt_value(sc)))
    current().emit("sp", "dma_compute", {"dst": dst}, ins, args)


@_dst_first(1)
def dropout(data, prob, dst=None, dtype=None, **kw):
    """Each element becomes 0 with probability prob (a number or a [P, 1] tile)."""
    out = nl.dropout(data, prob, dtype=dtype)
    if dst is not None:
        nl._assign(dst, out)
        return None
    return out


@_dst_first(2)
def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, dst=None,
                 dtype=None, **kw):
    """Gather within each group of 16 partitions by the uint16 offsets in
    index: each group's indices (its 16 partitions of index, flattened, or
    the first num_valid_indices) pick num_elem_per_idx elements each, so
    every partition receives indices x num_elem_per_idx elements."""
    tr = current()
    per_group = 16 * (int(np.prod(index.shape[1:])) if len(index.shape) > 1 else 1)
    n_idx = int(num_valid_indices) if num_valid_indices else per_group
    out = _out(dst, (src_buffer.shape[0], n_idx * num_elem_per_idx), dtype or src_buffer.dtype)
    args = [("dst", out), ("src", src_buffer), ("index", index), ("num_elem_per_idx", num_elem_per_idx)]
    if num_valid_indices:
        args.append(("num_valid_indices", num_valid_indices))
    tr.emit("pool", "local_gather", {"dst": out}, {"src": src_buffer, "index": index}, args)
    return _ret(dst, out)


def nc_stream_shuffle(dst, src, shuffle_mask, name=None, **kw):
    """Within each quadrant of 32 partitions, dst partition i copies src
    partition shuffle_mask[i] (255 leaves it)."""
    mask = list(shuffle_mask)
    if len(mask) != 32:
        fail("shuffle_mask needs 32 entries")
    current().emit("dve", "nc_stream_shuffle", {"dst": dst}, {"src": src},
                   [("dst", dst), ("src", src), ("mask", "[%s]" % ",".join(str(int(m)) for m in mask))],
                   rmw=True)


@_dst_first(1)
def sequence_bounds(segment_ids, dst=None, dtype=None, **kw):
    """Start and end index of the segment of each element (one partition)."""
    tr = current()
    n = segment_ids.shape[-1]
    out = _out(dst, (1, 2, n), dtype or segment_ids.dtype)
    tr.emit("pool", "sequence_bounds", {"dst": out}, {"segment_ids": segment_ids},
            [("dst", out), ("segment_ids", segment_ids)])
    return _ret(dst, out)


@_dst_first(1)
def tensor_scalar_cumulative(src, op0, op1, imm0, imm1=None, reduce_cmd=None, dst=None, reverse0=False,
                             dtype=None, **kw):
    """A running value per partition: acc = op1(op0(src[i], imm0), acc); dst[i] = acc
    (e.g. a cumulative sum with op0=multiply, imm0=1, op1=add)."""
    tr = current()
    out = _out(dst, src.shape, dtype or src.dtype)
    args, ins = [("dst", out), ("src", src), ("op0", _alu(op0)), ("op1", _alu(op1))], {"src": src}
    _scalar_arg("imm0", imm0, args, ins)
    if imm1 is not None:
        _scalar_arg("imm1", imm1, args, ins)
    if reduce_cmd is not None:
        args.append(("reduce_cmd", _cmd(reduce_cmd, "reset_reduce")))
    if reverse0:
        args.append(("reverse0", None))
    tr.emit("dve", "tensor_scalar_cumulative", {"dst": out}, ins, args)
    return _ret(dst, out)


def rand2(dst, min, max, **kw):
    """Uniform random numbers in [min, max] into dst (Vector Engine generator)."""
    args, ins = [("dst", dst)], {}
    _scalar_arg("min", min, args, ins)
    _scalar_arg("max", max, args, ins)
    current().emit("dve", "rand2", {"dst": dst}, ins, args)


from ._cores import core_barrier, sendrecv  # noqa: E402,F401
from ._registers import (VirtualRegister, register_alloc, register_move,  # noqa: E402,F401
                         register_load, register_store)
from ._gpsimd import (nonzero_with_count, nc_n_gather, topk, range_select, rng,  # noqa: E402,F401
                      rand_set_state, rand_get_state, set_rng_seed)
from ._mx import quantize_mx, nc_matmul_mx, activate2  # noqa: E402,F401
from ._handles import NkiInstruction, returning_handle  # noqa: E402


def _wrap_calls():
    """Every instruction call returns an NkiInstruction in the current form."""
    skip = {"get_nc_version", "get_nc_sub_version", "register_alloc", "returning_handle"}
    g = globals()
    for name, fn in list(g.items()):
        if (callable(fn) and not name.startswith("_") and not isinstance(fn, type)
                and name not in skip and getattr(fn, "__module__", "").startswith("nki.isa")):
            g[name] = returning_handle(fn)


_wrap_calls()
