"""Stand-in for ml_dtypes, which Debian 12 does not package: the NKI
Library tests use its bfloat16 and fp8 types and finfo. Here they are the
NumPy host dtypes of trnemu's nki (nki._dtypes: the nki._hostdtypes
extension, docs/nki.md "Host dtypes"), so arrays the tests make with them
are the arrays trnemu's kernels take. The runner sets
TRNEMU_NKI_HOST_DTYPES=trnemu so that nki does not take this module for
the real ml_dtypes."""
from nki import _dtypes as _nki_dtypes
from neuron_dtypes import finfo  # noqa: F401

bfloat16 = _nki_dtypes.bfloat16
float8_e4m3 = _nki_dtypes.float8_e4m3
float8_e5m2 = _nki_dtypes.float8_e5m2
float8_e3m4 = _nki_dtypes.float8_e3m4
float8_e4m3fn = _nki_dtypes.float8_e4m3fn
float8_e8m0fnu = _nki_dtypes.float8_e8m0fnu
float4_e2m1fn = _nki_dtypes.float4_e2m1fn
