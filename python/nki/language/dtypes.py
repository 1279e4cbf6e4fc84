"""nki.language.dtypes: the data types of NKI as one module (the names
`nki.language` also exports), for code that imports the dtypes alone, as
suites written for the vendor's simulator do (`nki.dtype`)."""
from ._types import (  # noqa: F401
    bool_, bool_ as bool, int8, int16, int32, uint8, uint16, uint32, float16, float32, bfloat16, tfloat32,
    float8_e4m3, float8_e5m2, float8_e3m4, float8_e4m3fn, float8_e8m0fnu, float8_e5m2_x4,
    float8_e4m3fn_x4, float4_e2m1fn_x4, fp32, fp16, finfo)

__all__ = ["bool_", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16",
           "float32", "bfloat16", "tfloat32", "float8_e4m3", "float8_e5m2", "float8_e3m4",
           "float8_e4m3fn", "float8_e8m0fnu", "float8_e5m2_x4", "float8_e4m3fn_x4",
           "float4_e2m1fn_x4", "fp32", "fp16", "finfo"]
