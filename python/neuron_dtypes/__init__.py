"""neuron_dtypes: host data-type helpers for Neuron tensors, over NumPy.

Suites written for the vendor's tools (the NKI Library tests among them)
import this module to make and compare host arrays of the types Trainium
has and NumPy lacks:

- the types: NumPy's own (float32, float16, int8, ...), the NKI host types
  bfloat16, tfloat32 and the fp8 formats (taken from trnemu's nki._dtypes
  where it has them), and the MX containers float8_e4m3fn_x4,
  float8_e5m2_x4, float4_e2m1fn_x4 (four values packed in one element);
- static_cast(array, dtype): a value conversion, round to nearest even, by
  the rules of docs/numerics.md (overflow gives infinity where the format
  has one; float to integer rounds to nearest even and saturates). Casting
  to a packed type packs four values of the last axis into one element
  (lane j in byte / nibble j from the low end); casting from one unpacks;
- is_float_type, sizeinbytes, finfo, dtype_name and as_dtype.

Arrays of a type NumPy cannot name hold their bit patterns (uint8/16/32)
with the type attached as `nki_dtype` (nki.HostArray), unless trnemu's nki
gives the type a NumPy dtype of its own, which is then used.
"""
import numpy as np

from ._minifloat import Minifloat
from ._types import (PackedType, ScalarType, as_dtype, dtype_name, is_float_type,
                     sizeinbytes, finfo, nki_host_type)

float32, float16, float64 = np.float32, np.float16, np.float64
int8, int16, int32, int64 = np.int8, np.int16, np.int32, np.int64
uint8, uint16, uint32, uint64 = np.uint8, np.uint16, np.uint32, np.uint64
bool_ = np.bool_

bfloat16 = nki_host_type("bfloat16")
tfloat32 = nki_host_type("tfloat32")
float8_e4m3 = nki_host_type("float8_e4m3")
float8_e5m2 = nki_host_type("float8_e5m2")
float8_e3m4 = nki_host_type("float8_e3m4")
float8_e4m3fn = nki_host_type("float8_e4m3fn")
float4_e2m1fn = nki_host_type("float4_e2m1fn")
float8_e4m3fn_x4 = nki_host_type("float8_e4m3fn_x4")
float8_e5m2_x4 = nki_host_type("float8_e5m2_x4")
float4_e2m1fn_x4 = nki_host_type("float4_e2m1fn_x4")

from ._cast import static_cast, to_float32  # noqa: E402

__all__ = ["static_cast", "to_float32", "is_float_type", "sizeinbytes", "finfo", "dtype_name",
           "as_dtype", "Minifloat", "PackedType", "ScalarType",
           "bfloat16", "tfloat32", "float8_e4m3", "float8_e5m2", "float8_e3m4", "float8_e4m3fn",
           "float4_e2m1fn", "float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4",
           "float32", "float16", "float64", "int8", "int16", "int32", "int64",
           "uint8", "uint16", "uint32", "uint64", "bool_"]
