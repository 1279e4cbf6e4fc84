/*
 * hd_array.c: each host format as a NumPy user dtype (the legacy
 * PyArray_RegisterDataType interface that ml_dtypes uses): the descriptor
 * and the array functions NumPy calls on elements (get and set an item,
 * copy and byte-swap, compare, argmax/argmin, non-zero, fill, dot).
 */
#include "hd.h"

#include <math.h>
#include <string.h>

/* The descriptors and their functions must outlive the module: NumPy
 * keeps pointers to them. */
static PyArray_Descr hd_protos[HD_NKINDS];
static PyArray_ArrFuncs hd_funcs[HD_NKINDS];

static float hd_get_f32(const struct hd_type *t, const void *p)
{
    return hd_to_f32(t, hd_bits_at(t, p));
}

static PyObject *hd_getitem(const struct hd_type *t, void *data)
{
    return PyFloat_FromDouble(hd_get_f32(t, data));
}

static int hd_setitem(const struct hd_type *t, PyObject *item, void *data)
{
    uint16_t bits;
    if (hd_value_from_object(t, item, &bits) != 0)
        return -1;
    hd_put_bits(t, data, bits);
    return 0;
}

/* Three-way order for sorting: NaNs last. */
static int hd_compare(const struct hd_type *t, const void *a, const void *b)
{
    float x = hd_get_f32(t, a), y = hd_get_f32(t, b);
    if (isless(x, y))
        return -1;
    if (isless(y, x))
        return 1;
    if (!isnan(x) && isnan(y))
        return -1;
    if (isnan(x) && !isnan(y))
        return 1;
    return 0;
}

/* Index of the first largest (sign 1) or smallest (sign -1) element; the
 * first NaN wins, as in NumPy. */
static int hd_argext(const struct hd_type *t, const char *data, npy_intp n, npy_intp *idx,
                     int sign)
{
    float best = NAN;
    *idx = 0;
    for (npy_intp i = 0; i < n; i++) {
        float v = hd_get_f32(t, data + i * t->itemsize);
        if (!(sign > 0 ? islessequal(v, best) : isgreaterequal(v, best))) {
            best = v;
            *idx = i;
            if (isnan(v))
                break;
        }
    }
    return 0;
}

static npy_bool hd_nonzero(const struct hd_type *t, void *data)
{
    return hd_get_f32(t, data) != 0.0f;
}

/* arange's fill: element i = first + i * (second - first). */
static int hd_fill(const struct hd_type *t, char *buf, npy_intp n)
{
    if (n < 2)
        return 0;
    float start = hd_get_f32(t, buf), delta = hd_get_f32(t, buf + t->itemsize) - start;
    for (npy_intp i = 2; i < n; i++)
        hd_put_bits(t, buf + i * t->itemsize, hd_from_f32(t, start + (float)i * delta));
    return 0;
}

/* Dot product accumulated in fp32, rounded once at the end. */
static void hd_dot(const struct hd_type *t, const char *a, npy_intp sa, const char *b,
                   npy_intp sb, char *out, npy_intp n)
{
    float acc = 0.0f;
    for (npy_intp i = 0; i < n; i++)
        acc += hd_get_f32(t, a + i * sa) * hd_get_f32(t, b + i * sb);
    hd_put_bits(t, out, hd_from_f32(t, acc));
}

/* Copy n elements of size bytes; swap reverses the bytes of each. */
static void hd_copyswapn(size_t size, char *dst, npy_intp ds, const char *src, npy_intp ss,
                         npy_intp n, int swap)
{
    for (npy_intp i = 0; i < n; i++) {
        char *d = dst + i * ds;
        if (src != NULL)
            memmove(d, src + i * ss, size);
        if (swap && size == 2) {
            char c = d[0];
            d[0] = d[1];
            d[1] = c;
        }
    }
}

static void hd_copyswapn1(void *dst, npy_intp ds, void *src, npy_intp ss, npy_intp n, int swap,
                          void *arr)
{
    hd_copyswapn(1, dst, ds, src, ss, n, swap);
}

static void hd_copyswapn2(void *dst, npy_intp ds, void *src, npy_intp ss, npy_intp n, int swap,
                          void *arr)
{
    hd_copyswapn(2, dst, ds, src, ss, n, swap);
}

static void hd_copyswap1(void *dst, void *src, int swap, void *arr)
{
    hd_copyswapn(1, dst, 0, src, 0, 1, swap);
}

static void hd_copyswap2(void *dst, void *src, int swap, void *arr)
{
    hd_copyswapn(2, dst, 0, src, 0, 1, swap);
}

/* NumPy passes no dtype to these functions (the array may be NULL), so
 * each format gets its own thin entry points. */
#define HD_ENTRY_POINTS(K)                                                                    \
    static PyObject *hd_getitem_##K(void *d, void *a)                                          \
    {                                                                                         \
        return hd_getitem(&hd_types[K], d);                                                   \
    }                                                                                         \
    static int hd_setitem_##K(PyObject *o, void *d, void *a)                                   \
    {                                                                                         \
        return hd_setitem(&hd_types[K], o, d);                                                \
    }                                                                                         \
    static int hd_compare_##K(const void *x, const void *y, void *a)                           \
    {                                                                                         \
        return hd_compare(&hd_types[K], x, y);                                                \
    }                                                                                         \
    static int hd_argmax_##K(void *d, npy_intp n, npy_intp *i, void *a)                        \
    {                                                                                         \
        return hd_argext(&hd_types[K], d, n, i, 1);                                           \
    }                                                                                         \
    static int hd_argmin_##K(void *d, npy_intp n, npy_intp *i, void *a)                        \
    {                                                                                         \
        return hd_argext(&hd_types[K], d, n, i, -1);                                          \
    }                                                                                         \
    static npy_bool hd_nonzero_##K(void *d, void *a)                                           \
    {                                                                                         \
        return hd_nonzero(&hd_types[K], d);                                                   \
    }                                                                                         \
    static int hd_fill_##K(void *d, npy_intp n, void *a)                                       \
    {                                                                                         \
        return hd_fill(&hd_types[K], d, n);                                                   \
    }                                                                                         \
    static void hd_dot_##K(void *x, npy_intp sx, void *y, npy_intp sy, void *o, npy_intp n,    \
                           void *a)                                                           \
    {                                                                                         \
        hd_dot(&hd_types[K], x, sx, y, sy, o, n);                                             \
    }
HD_ENTRY_POINTS(HD_BF16)
HD_ENTRY_POINTS(HD_E4M3)
HD_ENTRY_POINTS(HD_E5M2)
HD_ENTRY_POINTS(HD_E3M4)
HD_ENTRY_POINTS(HD_E4M3FN)
HD_ENTRY_POINTS(HD_E8M0FNU)
HD_ENTRY_POINTS(HD_E2M1FN)

#define HD_SET_FUNCS(K)                                                                       \
    case K:                                                                                   \
        f->getitem = hd_getitem_##K;                                                          \
        f->setitem = hd_setitem_##K;                                                          \
        f->compare = hd_compare_##K;                                                          \
        f->argmax = hd_argmax_##K;                                                            \
        f->argmin = hd_argmin_##K;                                                            \
        f->nonzero = hd_nonzero_##K;                                                          \
        f->fill = hd_fill_##K;                                                                \
        f->dotfunc = hd_dot_##K;                                                              \
        break;

static void hd_fill_funcs(int k, PyArray_ArrFuncs *f)
{
    PyArray_InitArrFuncs(f);
    switch (k) {
        HD_SET_FUNCS(HD_BF16)
        HD_SET_FUNCS(HD_E4M3)
        HD_SET_FUNCS(HD_E5M2)
        HD_SET_FUNCS(HD_E3M4)
        HD_SET_FUNCS(HD_E4M3FN)
        HD_SET_FUNCS(HD_E8M0FNU)
        HD_SET_FUNCS(HD_E2M1FN)
    default:
        break;
    }
    f->copyswap = hd_types[k].itemsize == 2 ? hd_copyswap2 : hd_copyswap1;
    f->copyswapn = hd_types[k].itemsize == 2 ? hd_copyswapn2 : hd_copyswapn1;
}

int hd_array_register(struct hd_type *t)
{
    int k = (int)(t - hd_types);
    PyArray_Descr *d = &hd_protos[k];
    hd_fill_funcs(k, &hd_funcs[k]);
    memset(d, 0, sizeof *d);
    Py_SET_REFCNT((PyObject *)d, 1);
    Py_SET_TYPE((PyObject *)d, &PyArrayDescr_Type);
    d->typeobj = t->scalar;
    d->kind = 'V';          /* as ml_dtypes: NumPy has no kind for user floats */
    d->type = t->type_char;
    d->byteorder = '=';
    d->flags = NPY_USE_SETITEM;
    d->elsize = t->itemsize;
    d->alignment = t->itemsize;
    d->f = &hd_funcs[k];
    d->hash = -1;
    t->typenum = PyArray_RegisterDataType(d);
    if (t->typenum < 0)
        return -1;
    t->descr = PyArray_DescrFromType(t->typenum);
    if (t->descr == NULL)
        return -1;
    /* bfloat16.dtype, as ml_dtypes' types have it */
    return PyObject_SetAttrString((PyObject *)t->scalar, "dtype", (PyObject *)t->descr);
}
