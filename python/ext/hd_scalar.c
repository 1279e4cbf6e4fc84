/*
 * hd_scalar.c: the scalar type of each host format (bfloat16(1.5),
 * arr[0]): a subclass of numpy.generic holding the element's bits right
 * after the object header, where NumPy copies them for user dtypes.
 * Arithmetic between two scalars of one format runs in fp32 and rounds
 * back; anything else is handed to NumPy's array arithmetic.
 */
#include "hd.h"

#include <math.h>
#include <string.h>

/* A scalar: the element bits (1 or 2 bytes, little-endian). */
struct hd_scalar {
    PyObject_HEAD
    uint8_t v[2];
};

/* "nki._hostdtypes.<name>": the type names live as long as the types. */
static char hd_type_names[HD_NKINDS][64];

const struct hd_type *hd_scalar_kind(PyObject *obj)
{
    for (int k = 0; k < HD_NKINDS; k++)
        if (hd_types[k].scalar != NULL && PyObject_TypeCheck(obj, hd_types[k].scalar))
            return &hd_types[k];
    return NULL;
}

static const struct hd_type *hd_kind_of_type(PyTypeObject *type)
{
    for (int k = 0; k < HD_NKINDS; k++)
        if (hd_types[k].scalar != NULL && PyType_IsSubtype(type, hd_types[k].scalar))
            return &hd_types[k];
    return NULL;
}

static uint16_t hd_scalar_bits(const struct hd_type *t, PyObject *obj)
{
    return hd_bits_at(t, ((struct hd_scalar *)obj)->v);
}

static float hd_scalar_f32(PyObject *obj)
{
    const struct hd_type *t = hd_scalar_kind(obj);
    return hd_to_f32(t, hd_scalar_bits(t, obj));
}

PyObject *hd_scalar_new(const struct hd_type *t, uint16_t bits)
{
    PyObject *obj = t->scalar->tp_alloc(t->scalar, 0);
    if (obj != NULL)
        hd_put_bits(t, ((struct hd_scalar *)obj)->v, bits);
    return obj;
}

/* A 0-d array's element, rounded into t. */
static int hd_value_from_0d(const struct hd_type *t, PyArrayObject *arr, uint16_t *bits)
{
    PyObject *item = PyArray_ToScalar(PyArray_DATA(arr), arr);
    if (item == NULL)
        return -1;
    int r = hd_value_from_object(t, item, bits);
    Py_DECREF(item);
    return r;
}

int hd_value_from_object(const struct hd_type *t, PyObject *obj, uint16_t *bits)
{
    const struct hd_type *src = hd_scalar_kind(obj);
    if (src == t) {
        *bits = hd_scalar_bits(t, obj);
        return 0;
    }
    if (src != NULL) {
        *bits = hd_from_f32(t, hd_to_f32(src, hd_scalar_bits(src, obj)));
        return 0;
    }
    if (PyArray_IsZeroDim(obj))
        return hd_value_from_0d(t, (PyArrayObject *)obj, bits);
    if (PyFloat_Check(obj) || PyLong_Check(obj) || PyArray_IsScalar(obj, Generic)) {
        double d = PyFloat_Check(obj) ? PyFloat_AsDouble(obj) : NAN;
        if (!PyFloat_Check(obj)) {
            PyObject *f = PyNumber_Float(obj);
            if (f == NULL)
                return -1;
            d = PyFloat_AsDouble(f);
            Py_DECREF(f);
        }
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        *bits = hd_from_f64(t, d);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s: expected a number, got %s", t->name, Py_TYPE(obj)->tp_name);
    return -1;
}

/* bfloat16(x): x a number, a numeric string or a scalar; an array, list or
 * tuple gives an array of the format. */
static PyObject *hd_scalar_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    const struct hd_type *t = hd_kind_of_type(type);
    if (kwds != NULL && PyDict_Size(kwds) != 0) {
        PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", t->name);
        return NULL;
    }
    Py_ssize_t nargs = PyTuple_Size(args);
    if (nargs == 0)
        return hd_scalar_new(t, hd_from_f32(t, 0.0f));
    if (nargs != 1) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most one argument", t->name);
        return NULL;
    }
    PyObject *arg = PyTuple_GET_ITEM(args, 0);
    if (PyArray_Check(arg) && !PyArray_IsZeroDim(arg)) {
        Py_INCREF(t->descr);
        return PyArray_CastToType((PyArrayObject *)arg, t->descr, 0);
    }
    if (PyList_Check(arg) || PyTuple_Check(arg)) {   /* bfloat16([1, 2]): an array, as np.float32 */
        Py_INCREF(t->descr);
        return PyArray_FromAny(arg, t->descr, 0, 0, NPY_ARRAY_FORCECAST, NULL);
    }
    uint16_t bits;
    if (PyUnicode_Check(arg) || PyBytes_Check(arg)) {
        PyObject *f = PyFloat_FromString(arg);
        if (f == NULL)
            return NULL;
        int r = hd_value_from_object(t, f, &bits);
        Py_DECREF(f);
        return r == 0 ? hd_scalar_new(t, bits) : NULL;
    }
    if (hd_value_from_object(t, arg, &bits) != 0)
        return NULL;
    return hd_scalar_new(t, bits);
}

/* Both operands scalars of one format: that format, else NULL. */
static const struct hd_type *hd_same_kind(PyObject *a, PyObject *b)
{
    const struct hd_type *ta = hd_scalar_kind(a);
    return ta != NULL && ta == hd_scalar_kind(b) ? ta : NULL;
}

/* One binary operation in fp32, rounded back. */
static PyObject *hd_scalar_binop(PyObject *a, PyObject *b, char op, binaryfunc fallback)
{
    const struct hd_type *t = hd_same_kind(a, b);
    if (t == NULL)
        return fallback(a, b);
    float x = hd_scalar_f32(a), y = hd_scalar_f32(b), r;
    switch (op) {
    case '+': r = x + y; break;
    case '-': r = x - y; break;
    case '*': r = x * y; break;
    default: r = x / y; break;
    }
    return hd_scalar_new(t, hd_from_f32(t, r));
}

static PyObject *hd_scalar_add(PyObject *a, PyObject *b)
{
    return hd_scalar_binop(a, b, '+', PyArray_Type.tp_as_number->nb_add);
}

static PyObject *hd_scalar_sub(PyObject *a, PyObject *b)
{
    return hd_scalar_binop(a, b, '-', PyArray_Type.tp_as_number->nb_subtract);
}

static PyObject *hd_scalar_mul(PyObject *a, PyObject *b)
{
    return hd_scalar_binop(a, b, '*', PyArray_Type.tp_as_number->nb_multiply);
}

static PyObject *hd_scalar_div(PyObject *a, PyObject *b)
{
    return hd_scalar_binop(a, b, '/', PyArray_Type.tp_as_number->nb_true_divide);
}

static PyObject *hd_scalar_floordiv(PyObject *a, PyObject *b)
{
    return PyArray_Type.tp_as_number->nb_floor_divide(a, b);
}

static PyObject *hd_scalar_rem(PyObject *a, PyObject *b)
{
    return PyArray_Type.tp_as_number->nb_remainder(a, b);
}

static PyObject *hd_scalar_pow(PyObject *a, PyObject *b, PyObject *m)
{
    return PyArray_Type.tp_as_number->nb_power(a, b, m);
}

static PyObject *hd_scalar_neg(PyObject *self)
{
    const struct hd_type *t = hd_scalar_kind(self);
    return hd_scalar_new(t, hd_from_f32(t, -hd_scalar_f32(self)));
}

static PyObject *hd_scalar_pos(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *hd_scalar_abs(PyObject *self)
{
    const struct hd_type *t = hd_scalar_kind(self);
    return hd_scalar_new(t, hd_from_f32(t, fabsf(hd_scalar_f32(self))));
}

static int hd_scalar_bool(PyObject *self)
{
    return hd_scalar_f32(self) != 0.0f;
}

static PyObject *hd_scalar_float(PyObject *self)
{
    return PyFloat_FromDouble(hd_scalar_f32(self));
}

static PyObject *hd_scalar_int(PyObject *self)
{
    return PyLong_FromDouble(hd_scalar_f32(self));   /* truncates; NaN/inf raise */
}

static PyObject *hd_scalar_richcompare(PyObject *a, PyObject *b, int op)
{
    if (hd_same_kind(a, b) == NULL) {
        if ((op == Py_EQ || op == Py_NE) &&
            (PyUnicode_Check(b) || PyBytes_Check(b) ||
             (!PyNumber_Check(b) && !PyArray_Check(b) && !PySequence_Check(b))))
            Py_RETURN_NOTIMPLEMENTED;
        return PyGenericArrType_Type.tp_richcompare(a, b, op);
    }
    float x = hd_scalar_f32(a), y = hd_scalar_f32(b);
    bool r;
    switch (op) {
    case Py_LT: r = isless(x, y); break;
    case Py_LE: r = islessequal(x, y); break;
    case Py_EQ: r = x == y; break;
    case Py_NE: r = x != y; break;
    case Py_GT: r = isgreater(x, y); break;
    default: r = isgreaterequal(x, y); break;
    }
    PyArrayScalar_RETURN_BOOL_FROM_LONG(r);
}

/* The value with six significant digits ("1.5", "0", "-inf", "nan"). */
static PyObject *hd_scalar_str(PyObject *self)
{
    float f = hd_scalar_f32(self);
    char *s = PyOS_double_to_string(isnan(f) ? fabs((double)f) : (double)f, 'g', 6, 0, NULL);
    if (s == NULL)
        return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromString(s);
    PyMem_Free(s);
    return r;
}

static Py_hash_t hd_scalar_hash(PyObject *self)
{
    return _Py_HashDouble(self, hd_scalar_f32(self));
}

static PyObject *hd_scalar_format(PyObject *self, PyObject *spec)
{
    PyObject *f = hd_scalar_float(self);
    if (f == NULL)
        return NULL;
    PyObject *r = PyObject_Format(f, spec);
    Py_DECREF(f);
    return r;
}

static PyMethodDef hd_scalar_methods[] = {
    {"__format__", (PyCFunction)hd_scalar_format, METH_O, "Format the value as a float."},
    {NULL, NULL, 0, NULL},
};

int hd_scalar_create(struct hd_type *t, PyObject *module)
{
    PyType_Slot slots[] = {
        {Py_tp_new, (void *)hd_scalar_tp_new},
        {Py_tp_repr, (void *)hd_scalar_str},
        {Py_tp_str, (void *)hd_scalar_str},
        {Py_tp_hash, (void *)hd_scalar_hash},
        {Py_tp_doc, (void *)t->doc},
        {Py_tp_richcompare, (void *)hd_scalar_richcompare},
        {Py_tp_methods, (void *)hd_scalar_methods},
        {Py_nb_add, (void *)hd_scalar_add},
        {Py_nb_subtract, (void *)hd_scalar_sub},
        {Py_nb_multiply, (void *)hd_scalar_mul},
        {Py_nb_true_divide, (void *)hd_scalar_div},
        {Py_nb_floor_divide, (void *)hd_scalar_floordiv},
        {Py_nb_remainder, (void *)hd_scalar_rem},
        {Py_nb_power, (void *)hd_scalar_pow},
        {Py_nb_negative, (void *)hd_scalar_neg},
        {Py_nb_positive, (void *)hd_scalar_pos},
        {Py_nb_absolute, (void *)hd_scalar_abs},
        {Py_nb_bool, (void *)hd_scalar_bool},
        {Py_nb_int, (void *)hd_scalar_int},
        {Py_nb_float, (void *)hd_scalar_float},
        {0, NULL},
    };
    int k = (int)(t - hd_types);
    snprintf(hd_type_names[k], sizeof hd_type_names[k], "nki._hostdtypes.%s", t->name);
    PyType_Spec spec = {
        .name = hd_type_names[k],
        .basicsize = (int)sizeof(struct hd_scalar),
        .itemsize = 0,
        .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
        .slots = slots,
    };
    PyObject *bases = PyTuple_Pack(1, (PyObject *)&PyGenericArrType_Type);
    if (bases == NULL)
        return -1;
    PyObject *type = PyType_FromSpecWithBases(&spec, bases);
    Py_DECREF(bases);
    if (type == NULL)
        return -1;
    t->scalar = (PyTypeObject *)type;
    if (PyModule_AddObjectRef(module, t->name, type) != 0)
        return -1;
    return 0;
}
