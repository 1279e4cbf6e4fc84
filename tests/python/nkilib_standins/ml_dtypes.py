"""Stand-in for ml_dtypes, which Debian 12 does not package: the NKI
Library tests use only its bfloat16 type. Here it is the bfloat16 of
trnemu's nki host types (through neuron_dtypes), so arrays the tests make
with it are the arrays trnemu's kernels take. Whether NumPy accepts it as
a dtype (np.zeros(..., dtype=bfloat16), .astype) depends on trnemu's nki:
the report then names the failing call."""
from neuron_dtypes import bfloat16, finfo  # noqa: F401
