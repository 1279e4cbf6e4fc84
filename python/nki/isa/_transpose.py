"""nki.isa dma_transpose of an indexed HBM view (ap(vector_offset=), a
tensor index, vector_select): the vendor's gather-transpose. Row a of the
view's axis 0 is row flat[a] of the tensor, where flat is the index tile
read column by column (indices.T.flatten()); the gathered view is then
permuted like a direct dma_transpose. A view shifted as a whole by one
run-time offset (ap(scalar_offset=)) is permuted, then shifted. trnemu's ISA has no indexed
transposing DMA (docs/isa.md), so this lowers to indexed dma_copy: one DMA
when the indexed axis stays the partition axis of dst, else one DMA per
row, each an HBM side of one row shifted by its index element."""
from .. import language as nl
from .._core import NkiTensor, fail


def is_indexed(src):
    """Whether src is an HBM view indexed at run time."""
    return hasattr(src, "_indirect")


def indexed_transpose(out, src, perm, skip_oob):
    """out = src permuted by perm, src an indexed HBM view: a whole-pattern
    shift (ap(scalar_offset=), select() by a tile) is one DMA of the
    permuted pattern, shifted the same; per-row indices gather."""
    if hasattr(src, "_scalar"):
        view = NkiTensor(src.storage, src.dtype, [src.dims[d] for d in perm], None, 0, src.off)
        view._indirect, view._scalar = src._indirect, src._scalar
        nl._dma(out, view, skip_oob=skip_oob)
    else:
        gather_transpose(out, src, perm, skip_oob)


def gather_transpose(out, src, perm, skip_oob):
    """out = (src's rows gathered by its index tile) permuted by perm."""
    index, dim = src._indirect
    if dim != 0:
        fail("dma_transpose of an indexed view indexes dimension 0 (got %d)" % dim)
    if not isinstance(index, NkiTensor) or index.buffer not in ("sbuf", "psum") \
            or len(index.shape) != 2:
        fail("dma_transpose of an indexed view takes a 2-D SBUF index tile")
    rows, (ip, ic) = src.shape[0], index.shape
    if ip * ic < rows:
        fail("dma_transpose: the index tile %s holds %d indices, the view has %d rows"
             % (index.shape, ip * ic, rows))
    step = getattr(src, "_row_step", src.dims[0][0])
    dims = [src.dims[d] for d in perm]
    j0 = perm.index(0)
    if j0 == 0:
        if rows > ip:
            fail("dma_transpose of an indexed view: %d gathered rows cannot land on the "
                 "%d partitions of dst" % (rows, ip))
        view = NkiTensor(src.storage, src.dtype, dims, None, 0, src.off)
        view._indirect = (index[0:rows, 0:1], 0)
        view._row_step = step
        nl._dma(out, view, skip_oob=skip_oob)
        return
    free = [d for j, d in enumerate(dims) if j != j0]
    for a in range(rows):
        nl._dma(_dst_row(out, j0, a), _src_row(src, free, step, index[a % ip:a % ip + 1,
                                                                     a // ip:a // ip + 1]),
                skip_oob=skip_oob)


def _src_row(src, free, step, element):
    """Row element[0] of src's tensor (row step step), walked by the free
    dims in dst's order: an HBM side of one row that its index shifts."""
    view = NkiTensor(src.storage, src.dtype, free or [[1, 1]], None, 0, src.off)
    view._indirect = (element, 0)
    view._scalar = (element, step)
    return view


def _dst_row(out, j0, a):
    """out at index a of axis j0 (that axis removed)."""
    return out[tuple(a if j == j0 else slice(None) for j in range(len(out.shape)))]

