/*
 * hd.h: what the parts of nki._hostdtypes share. The module gives NumPy
 * the NKI number formats it lacks (bfloat16, the 8-bit floats and fp4
 * e2m1) as user dtypes, under the names ml_dtypes uses, with the
 * conversions of trnemu's numerics (emu/num): docs/nki.md, "Host dtypes".
 *
 * Every value is computed in fp32 and rounded back to its format with
 * round-to-nearest-even, as the emulated engines do.
 */
#ifndef TRNEMU_PYTHON_EXT_HD_H
#define TRNEMU_PYTHON_EXT_HD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL trnemu_hostdtypes_array_api
#define PY_UFUNC_UNIQUE_SYMBOL trnemu_hostdtypes_ufunc_api
#ifndef HD_IMPORTS_NUMPY
#define NO_IMPORT_ARRAY
#define NO_IMPORT_UFUNC
#endif
#include <numpy/arrayobject.h>
#include <numpy/arrayscalars.h>
#include <numpy/ufuncobject.h>

#include <stdbool.h>
#include <stdint.h>

/* The formats, in table order. */
enum hd_kind {
    HD_BF16,
    HD_E4M3,      /* IEEE-style e4m3: bias 7, max 240, infinities (trnemu fp8_e4) */
    HD_E5M2,      /* e5m2 (trnemu fp8_e5) */
    HD_E3M4,      /* IEEE-style e3m4 (trnemu fp8_e3) */
    HD_E4M3FN,    /* OCP e4m3fn: max 448, no infinity */
    HD_E8M0FNU,   /* a power of two, no sign, no zero */
    HD_E2M1FN,    /* fp4 e2m1 in the low nibble of a byte */
    HD_NKINDS
};

/* One format and its NumPy registration. */
struct hd_type {
    const char *name;             /* the ml_dtypes name, e.g. "bfloat16" */
    const char *doc;              /* one line for the scalar type */
    int itemsize;                 /* 1 or 2 bytes */
    uint32_t num_dtype;           /* trnemu numerics dtype (0: fp4, converted here) */
    char type_char;               /* the descriptor's type character */
    PyTypeObject *scalar;         /* the scalar type (set at registration) */
    int typenum;                  /* NumPy's number for it (set at registration) */
    PyArray_Descr *descr;         /* its descriptor (set at registration) */
};

extern struct hd_type hd_types[HD_NKINDS];

/* ---- hd_format.c: values ------------------------------------------------ */
/* The bits of one element at p (little-endian, itemsize bytes). */
uint16_t hd_bits_at(const struct hd_type *t, const void *p);
void hd_put_bits(const struct hd_type *t, void *p, uint16_t bits);
/* One element as fp32 (exact), and fp32 rounded into the format (RNE). */
float hd_to_f32(const struct hd_type *t, uint16_t bits);
uint16_t hd_from_f32(const struct hd_type *t, float x);
/* A double rounded once into the format (through fp32 with round-to-odd). */
uint16_t hd_from_f64(const struct hd_type *t, double x);
/* x rounded to fp32 toward zero with the last bit set when inexact
 * (round-to-odd): rounding that again into any of the formats gives the
 * result of rounding x directly. */
float hd_f64_to_f32_odd(double x);
/* n contiguous elements to and from fp32. */
void hd_load_f32(const struct hd_type *t, const void *src, float *dst, npy_intp n);
void hd_store_f32(const struct hd_type *t, void *dst, const float *src, npy_intp n);

/* ---- hd_scalar.c: the scalar types --------------------------------------- */
/* Create the scalar type of t (a subclass of numpy.generic); 0 or -1. */
int hd_scalar_create(struct hd_type *t, PyObject *module);
/* The format of a scalar object, or NULL when obj is none of ours. */
const struct hd_type *hd_scalar_kind(PyObject *obj);
/* A new scalar of t holding bits. */
PyObject *hd_scalar_new(const struct hd_type *t, uint16_t bits);
/* Any Python number, NumPy scalar or 0-d array rounded into t; 0 or -1
 * (with a Python error set). */
int hd_value_from_object(const struct hd_type *t, PyObject *obj, uint16_t *bits);

/* ---- hd_array.c: the NumPy descriptor ------------------------------------ */
/* Register t's descriptor with NumPy (after its scalar type); 0 or -1. */
int hd_array_register(struct hd_type *t);

/* ---- hd_cast.c: casts ---------------------------------------------------- */
/* Register every cast of t (to and from NumPy's types and the other
 * formats, once all are registered); 0 or -1. */
int hd_cast_register(struct hd_type *t);

/* ---- hd_ufunc.c: ufunc loops ---------------------------------------------- */
/* Register t's loops on NumPy's ufuncs; 0 or -1. */
int hd_ufunc_register(struct hd_type *t);

#endif
