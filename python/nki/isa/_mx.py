"""nki.isa NeuronCore-v4 calls: quantize_mx and nc_matmul_mx (MX formats,
docs/isa.md "NeuronCore-v4 additions") and activate2. The loader refuses
them on an older machine; trace them for a Trainium3 instance."""
from .. import _core
from .._core import NkiTensor, current, fail, fail_hw
from .._core.tracer import region_written
from ._helpers import _act, _alu, _cmd, _scalar_arg


def _need_v4(what):
    tr = current()
    if getattr(tr, "gen", 4) < 4:
        fail_hw("%s needs NeuronCore-v4 (a Trainium3 instance type, e.g. TRNEMU_INSTANCE="
                "trn3.48xlarge); this kernel is built for NeuronCore-v%d" % (what, tr.gen))

def quantize_mx(dst, src, dst_scale, name=None, **kw):
    """src (bf16/f16, partitions a multiple of 32) -> MXFP8 x4 data in dst
    and one float8_e8m0fnu scale per 8 partitions x 4 elements in dst_scale."""
    _need_v4("nisa.quantize_mx")
    for nm, t in (("dst", dst), ("src", src), ("dst_scale", dst_scale)):
        if not isinstance(t, NkiTensor) or t.buffer != "sbuf":
            fail("quantize_mx %s must be an SBUF tile" % nm)
    current().emit("dve", "quantize_mx", {"dst": dst, "dst_scale": dst_scale}, {"src": src},
                   [("dst", dst), ("dst_scale", dst_scale), ("src", src)])

def nc_matmul_mx(dst, stationary, moving, stationary_scale, moving_scale, tile_position=None,
                 tile_size=None, accumulate=None, name=None, **kw):
    """dst[M, N] (+)= the MX matmul of x4 stationary [K, M] and moving [K, N]
    with their scales; accumulation follows nc_matmul's PSUM rule."""
    _need_v4("nisa.nc_matmul_mx")
    from . import _matmul_placement
    tr = current()
    acc = region_written(dst) if accumulate is None else bool(accumulate)
    ins = {"stationary": stationary, "moving": moving, "stationary_scale": stationary_scale,
           "moving_scale": moving_scale}
    args = [("dst", dst)] + list(ins.items())
    if acc:
        args.append(("accumulate", None))
    insn = tr.emit("pe", "nc_matmul_mx", {"dst": dst}, ins, args, rmw=acc)
    _matmul_placement(insn, tile_position or (), tile_size or (), None)

def activate2(dst, op, data, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False, reverse1=False,
              reduce_op=None, reduce_res=None, reduce_cmd=None, name=None, **kw):
    """dst = op(((data op0 imm0) op1 imm1), relu_param) on the Scalar Engine,
    with the activation's accumulators (NeuronCore-v4)."""
    _need_v4("nisa.activate2")
    func, bias = _act(op)
    if bias:
        fail("%s has no activate2 form" % func)
    args, ins = [("dst", dst), ("data", data), ("func", func), ("op0", _alu(op0))], {"data": data}
    _scalar_arg("imm0", imm0, args, ins)
    args.append(("op1", _alu(op1)))
    _scalar_arg("imm1", imm1, args, ins)
    _scalar_arg("relu_param", relu_param, args, ins)
    for flag, on in (("reverse0", reverse0), ("reverse1", reverse1)):
        if on:
            args.append((flag, None))
    outs = {"dst": dst}
    if reduce_res is not None:
        outs["reduce_res"] = reduce_res
        args += [("reduce_op", _alu(reduce_op or "add")), ("reduce_res", reduce_res),
                 ("reduce_cmd", _cmd(reduce_cmd, "reset_reduce"))]
    current().emit("act", "activate2", outs, ins, args)

