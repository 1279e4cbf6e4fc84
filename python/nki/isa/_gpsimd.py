"""nki.isa selection, gathering and random-number calls: nonzero_with_count,
nc_n_gather, topk, range_select, rng, rand_get_state, rand_set_state and
set_rng_seed; each is one trnemu instruction (docs/isa.md)."""
from .. import language as nl
from .._core import NkiTensor, current, fail
from . import constants
from ._helpers import _alu, _cmd, _eng


def _sbuf(t, what):
    if not isinstance(t, NkiTensor) or t.buffer != "sbuf":
        fail("%s must be an SBUF tile, got %r" % (what, t))


def _free(t):
    n = 1
    for s in t.shape[1:]:
        n *= s
    return n


def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None, **kw):
    """On partitions 0, 16, ..., 112: the indices (+ index_offset) of the
    non-zero elements of src, padding_val up to src's length, then the
    count; dst has one more element per partition than src."""
    _sbuf(dst, "nonzero_with_count dst")
    _sbuf(src, "nonzero_with_count src")
    if dst.shape[0] != src.shape[0] or _free(dst) != _free(src) + 1:
        fail("nonzero_with_count dst %s must have src's partitions and one more element than "
             "src %s" % (dst.shape, src.shape))
    current().emit("pool", "nonzero_with_count", {"dst": dst}, {"src": src},
                   [("dst", dst), ("src", src), ("index_offset", int(index_offset)),
                    ("padding_val", int(padding_val))], rmw=True)


def nc_n_gather(dst, data, indices, name=None, **kw):
    """Per partition, dst[j] = data[indices[j]] over data's flattened free axes."""
    for nm, t in (("dst", dst), ("data", data), ("indices", indices)):
        _sbuf(t, "nc_n_gather " + nm)
    if not dst.shape[0] == data.shape[0] == indices.shape[0] or _free(dst) != _free(indices):
        fail("nc_n_gather: dst %s, data %s and indices %s need the same partitions, and dst "
             "indices' elements per partition" % (dst.shape, data.shape, indices.shape))
    current().emit("pool", "nc_n_gather", {"dst": dst}, {"data": data, "indices": indices},
                   [("dst", dst), ("data", data), ("indices", indices)])


def topk(val_dst, idx_dst, src, n, name=None, **kw):
    """The K (val_dst's free size) largest of the n bf16 values of src's
    16-partition snake, ascending, and their indices."""
    for nm, t in (("val_dst", val_dst), ("idx_dst", idx_dst), ("src", src)):
        _sbuf(t, "topk " + nm)
    current().emit("pool", "topk", {"val_dst": val_dst, "idx_dst": idx_dst}, {"src": src},
                   [("val_dst", val_dst), ("idx_dst", idx_dst), ("src", src), ("n", int(n))])


def range_select(*args, **kw):
    """range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, ...):
    dst[j] = on_true[j] where (range_start + j) comp_op0 bound0 and
    comp_op1 bound1 hold, else on_false_value (default the most negative
    fp32); max-reduced into reduce_res. The legacy form without dst
    returns a new tile."""
    legacy = ("on_true_tile", "comp_op0", "comp_op1", "bound0", "bound1")
    if "dst" in kw or (len(args) > 1 and isinstance(args[1], NkiTensor)) or \
            any(k in kw for k in legacy[:len(args)]):     # range_select(dst, on_true_tile=...)
        return _range_select(*args, **kw)
    on_true = args[0] if args else kw["on_true_tile"]
    out = nl.ndarray(on_true.shape, kw.pop("dtype", None) or on_true.dtype, nl.sbuf)
    _range_select(out, *args, **kw)
    return out


def _range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None,
                  reduce_res=None, reduce_op=None, range_start=0, on_false_value=None, name=None,
                  **kw):
    outs = {"dst": dst}
    args = [("dst", dst), ("on_true", on_true_tile), ("comp_op0", _alu(comp_op0)),
            ("comp_op1", _alu(comp_op1)), ("bound0", bound0), ("bound1", bound1),
            ("reduce_cmd", _cmd(reduce_cmd, "reset_reduce")), ("range_start", int(range_start))]
    if reduce_res is not None:
        outs["reduce_res"] = reduce_res
        args.append(("reduce_res", reduce_res))
    if reduce_op is not None:
        args.append(("reduce_op", _alu(reduce_op)))
    if on_false_value is not None:
        args.append(("on_false", nl._fmt_value(on_false_value)))
    current().emit("dve", "range_select", outs,
                   {"on_true": on_true_tile, "bound0": bound0, "bound1": bound1}, args)


def rng(dst, engine=None, name=None, **kw):
    """32 random bits per element of dst (truncated to its integer dtype)."""
    current().emit(_eng(engine, "dve"), "rng", {"dst": dst}, {}, [("dst", dst)])


def rand_set_state(src_seeds, engine=None, name=None, **kw):
    """Set each lane's generator state from the partitions of src_seeds (uint32)."""
    eng = _eng(engine if engine is not None else constants.engine.gpsimd, "pool")
    current().emit(eng, "rand_set_state", {}, {"src_seeds": src_seeds}, [("src_seeds", src_seeds)])


def rand_get_state(dst, engine=None, name=None, **kw):
    """Store each lane's generator state into the partitions of dst."""
    eng = _eng(engine if engine is not None else constants.engine.gpsimd, "pool")
    current().emit(eng, "rand_get_state", {"dst": dst}, {}, [("dst", dst)])


def set_rng_seed(src_seeds, name=None, **kw):
    """Seed the Vector Engine's generator from the 32-bit value in src_seeds."""
    current().emit("dve", "set_rng_seed", {}, {"src_seeds": src_seeds}, [("src_seeds", src_seeds)])
