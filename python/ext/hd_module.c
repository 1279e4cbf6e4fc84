/*
 * hd_module.c: the nki._hostdtypes extension module. Importing it
 * registers the host formats with NumPy (scalar type, dtype, casts, ufunc
 * loops), makes numpy.dtype("bfloat16") and the other names resolve, and
 * exports the scalar types: bfloat16, float8_e4m3, float8_e5m2,
 * float8_e3m4, float8_e4m3fn, float8_e8m0fnu, float4_e2m1fn.
 */
#define HD_IMPORTS_NUMPY
#include "hd.h"

/* numpy.dtype(name) finds the type, unless another package (ml_dtypes)
 * registered the name first. */
static int hd_add_type_name(const struct hd_type *t)
{
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL)
        return -1;
    PyObject *dict = PyObject_GetAttrString(numpy, "sctypeDict");
    Py_DECREF(numpy);
    PyObject *key = dict != NULL ? PyUnicode_FromString(t->name) : NULL;
    PyObject *had = key != NULL ? PyDict_SetDefault(dict, key, (PyObject *)t->scalar) : NULL;
    Py_XDECREF(key);
    Py_XDECREF(dict);
    return had != NULL ? 0 : -1;
}

static int hd_exec(PyObject *module)
{
    for (int k = 0; k < HD_NKINDS; k++)
        if (hd_scalar_create(&hd_types[k], module) != 0 || hd_array_register(&hd_types[k]) != 0)
            return -1;
    for (int k = 0; k < HD_NKINDS; k++)
        if (hd_cast_register(&hd_types[k]) != 0 || hd_ufunc_register(&hd_types[k]) != 0 ||
            hd_add_type_name(&hd_types[k]) != 0)
            return -1;
    return 0;
}

static struct PyModuleDef hd_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "nki._hostdtypes",
    .m_doc = "NumPy dtypes for NKI's bfloat16, 8-bit and 4-bit floats (trnemu's numerics).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__hostdtypes(void);

PyMODINIT_FUNC PyInit__hostdtypes(void)
{
    /* NumPy cannot unregister a dtype: the formats exist once per process. */
    static bool loaded;
    if (loaded) {
        PyErr_SetString(PyExc_ImportError, "nki._hostdtypes is already loaded in this process");
        return NULL;
    }
    loaded = true;
    import_array();
    import_umath();
    PyObject *m = PyModule_Create(&hd_module);
    if (m == NULL)
        return NULL;
    if (hd_exec(m) != 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
