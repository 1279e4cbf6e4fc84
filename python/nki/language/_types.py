"""nki.language types: the dtypes, the buffers a tensor can live on, the
tile-size limits and par_dim."""
import numpy as np

from .. import _core, _dtypes


bool_ = np.dtype("bool")
int8, int16, int32 = np.dtype("int8"), np.dtype("int16"), np.dtype("int32")
uint8, uint16, uint32 = np.dtype("uint8"), np.dtype("uint16"), np.dtype("uint32")
float16, float32 = np.dtype("float16"), np.dtype("float32")
bfloat16 = _dtypes.bfloat16
tfloat32 = _dtypes.tfloat32
float8_e4m3 = _dtypes.float8_e4m3
float8_e5m2 = _dtypes.float8_e5m2
float8_e3m4 = _dtypes.float8_e3m4
fp32 = float32


sbuf = "sbuf"
psum = "psum"
hbm = "hbm"
private_hbm = "private_hbm"
shared_hbm = "shared_hbm"


class tile_size:
    """Hardware tile limits (NeuronCore-v2/v3)."""
    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    total_available_sbuf_size = _core.SBUF_BYTES


class _ParDim(int):
    _par_dim = True


def par_dim(n):
    """Mark a dimension of an on-chip tensor shape as its partition dim."""
    return _ParDim(n)
