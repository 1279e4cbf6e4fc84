/*
 * hd_cast.c: casts between the host formats and NumPy's own types (bool,
 * integers, float16/32/64, long double, complex) and among the formats.
 *
 * Into a format: the value is rounded once, to nearest even (wider
 * sources go through fp32 with round-to-odd, hd_f64_to_f32_odd). Out of a
 * format: its fp32 value (exact) is converted as NumPy converts a float32:
 * to float16 with round-to-nearest-even, to integers by truncation toward
 * zero, except that NaN gives 0 and values out of range saturate (NumPy
 * leaves both to the C compiler); to bool: non-zero (NaN is true).
 * Safe casts (what np.result_type and ufuncs may do on their own): a
 * format to float32, float64, long double and complex; bool, int8 and
 * uint8 to a format; every other format to bfloat16 (all are exact there).
 */
#include "hd.h"

#include <math.h>
#include <string.h>

#include "emu/num/numerics.h"

/* Elements converted per chunk through an fp32 buffer. */
#define HD_CHUNK 256

/* Truncate toward zero; NaN gives 0; saturate to [lo, hi]. */
static int64_t hd_f32_to_signed(float f, int64_t lo, int64_t hi)
{
    if (isnan(f))
        return 0;
    double v = trunc((double)f);
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

static uint64_t hd_f32_to_unsigned(float f, uint64_t hi)
{
    if (isnan(f) || f <= 0.0f)
        return 0;
    double v = trunc((double)f);
    if (v >= (double)hi)
        return hi;
    return (uint64_t)v;
}

/* One element of each NumPy type read as a double, and an fp32 written
 * into it. */
#define HD_REAL_IO(N, T)                                                                       \
    static double hd_get_##N(const char *p)                                                    \
    {                                                                                         \
        T v;                                                                                  \
        memcpy(&v, p, sizeof v);                                                              \
        return (double)v;                                                                     \
    }
HD_REAL_IO(float, npy_float)
HD_REAL_IO(double, npy_double)
HD_REAL_IO(longdouble, npy_longdouble)
HD_REAL_IO(byte, npy_byte)
HD_REAL_IO(ubyte, npy_ubyte)
HD_REAL_IO(short, npy_short)
HD_REAL_IO(ushort, npy_ushort)
HD_REAL_IO(int, npy_int)
HD_REAL_IO(uint, npy_uint)
HD_REAL_IO(long, npy_long)
HD_REAL_IO(ulong, npy_ulong)
HD_REAL_IO(longlong, npy_longlong)
HD_REAL_IO(ulonglong, npy_ulonglong)

static double hd_get_boolean(const char *p)
{
    return *(const npy_bool *)p != 0;
}

static double hd_get_half(const char *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return num_f16_to_f32(h);
}

static double hd_get_cfloat(const char *p)
{
    return hd_get_float(p);            /* the real part, as NumPy's complex -> float casts */
}

static double hd_get_cdouble(const char *p)
{
    return hd_get_double(p);
}

#define HD_FLOAT_SET(N, T)                                                                     \
    static void hd_set_##N(char *p, float f)                                                   \
    {                                                                                         \
        T v = (T)f;                                                                           \
        memcpy(p, &v, sizeof v);                                                              \
    }
HD_FLOAT_SET(float, npy_float)
HD_FLOAT_SET(double, npy_double)
HD_FLOAT_SET(longdouble, npy_longdouble)

#define HD_INT_SET(N, T, LO, HI)                                                               \
    static void hd_set_##N(char *p, float f)                                                   \
    {                                                                                         \
        T v = (T)hd_f32_to_signed(f, LO, HI);                                                 \
        memcpy(p, &v, sizeof v);                                                              \
    }
#define HD_UINT_SET(N, T, HI)                                                                  \
    static void hd_set_##N(char *p, float f)                                                   \
    {                                                                                         \
        T v = (T)hd_f32_to_unsigned(f, HI);                                                   \
        memcpy(p, &v, sizeof v);                                                              \
    }
HD_INT_SET(byte, npy_byte, NPY_MIN_BYTE, NPY_MAX_BYTE)
HD_UINT_SET(ubyte, npy_ubyte, NPY_MAX_UBYTE)
HD_INT_SET(short, npy_short, NPY_MIN_SHORT, NPY_MAX_SHORT)
HD_UINT_SET(ushort, npy_ushort, NPY_MAX_USHORT)
HD_INT_SET(int, npy_int, NPY_MIN_INT, NPY_MAX_INT)
HD_UINT_SET(uint, npy_uint, NPY_MAX_UINT)
HD_INT_SET(long, npy_long, NPY_MIN_LONG, NPY_MAX_LONG)
HD_UINT_SET(ulong, npy_ulong, NPY_MAX_ULONG)
HD_INT_SET(longlong, npy_longlong, NPY_MIN_LONGLONG, NPY_MAX_LONGLONG)
HD_UINT_SET(ulonglong, npy_ulonglong, NPY_MAX_ULONGLONG)

static void hd_set_boolean(char *p, float f)
{
    *(npy_bool *)p = f != 0.0f;
}

static void hd_set_half(char *p, float f)
{
    uint16_t h = num_f32_to_f16(f);
    memcpy(p, &h, sizeof h);
}

static void hd_set_cfloat(char *p, float f)
{
    npy_float v[2] = {f, 0.0f};
    memcpy(p, v, sizeof v);
}

static void hd_set_cdouble(char *p, float f)
{
    npy_double v[2] = {f, 0.0};
    memcpy(p, v, sizeof v);
}

/* The NumPy types with casts: name, type number, element size. */
#define HD_NPY_TYPES(X)                                                                        \
    X(boolean, NPY_BOOL, sizeof(npy_bool))                                                        \
    X(byte, NPY_BYTE, sizeof(npy_byte))                                                        \
    X(ubyte, NPY_UBYTE, sizeof(npy_ubyte))                                                     \
    X(short, NPY_SHORT, sizeof(npy_short))                                                     \
    X(ushort, NPY_USHORT, sizeof(npy_ushort))                                                  \
    X(int, NPY_INT, sizeof(npy_int))                                                           \
    X(uint, NPY_UINT, sizeof(npy_uint))                                                        \
    X(long, NPY_LONG, sizeof(npy_long))                                                        \
    X(ulong, NPY_ULONG, sizeof(npy_ulong))                                                     \
    X(longlong, NPY_LONGLONG, sizeof(npy_longlong))                                            \
    X(ulonglong, NPY_ULONGLONG, sizeof(npy_ulonglong))                                         \
    X(half, NPY_HALF, sizeof(npy_half))                                                        \
    X(float, NPY_FLOAT, sizeof(npy_float))                                                     \
    X(double, NPY_DOUBLE, sizeof(npy_double))                                                  \
    X(longdouble, NPY_LONGDOUBLE, sizeof(npy_longdouble))                                      \
    X(cfloat, NPY_CFLOAT, 2 * sizeof(npy_float))                                               \
    X(cdouble, NPY_CDOUBLE, 2 * sizeof(npy_double))

/* n elements of a NumPy type (get, size) into format t. NumPy hands
 * legacy casts aligned, contiguous buffers: float32 goes straight through
 * the vector conversions. */
static void hd_cast_in(const struct hd_type *t, double (*get)(const char *), size_t size,
                       const char *src, char *dst, npy_intp n)
{
    if (get == hd_get_float) {
        hd_store_f32(t, dst, (const float *)(const void *)src, n);
        return;
    }
    float buf[HD_CHUNK];
    for (npy_intp i = 0; i < n; i += HD_CHUNK) {
        npy_intp m = n - i < HD_CHUNK ? n - i : HD_CHUNK;
        if (get == hd_get_double) { /* the common source (NumPy's default float): no call */
            const npy_double *d = (const npy_double *)(const void *)src + i;
            for (npy_intp j = 0; j < m; j++)
                buf[j] = hd_f64_to_f32_odd(d[j]);
        } else {
            for (npy_intp j = 0; j < m; j++)
                buf[j] = hd_f64_to_f32_odd(get(src + (size_t)(i + j) * size));
        }
        hd_store_f32(t, dst + i * t->itemsize, buf, m);
    }
}

/* n elements of format t into a NumPy type (set, size). */
static void hd_cast_out(const struct hd_type *t, void (*set)(char *, float), size_t size,
                        const char *src, char *dst, npy_intp n)
{
    if (set == hd_set_float) {
        hd_load_f32(t, src, (float *)(void *)dst, n);
        return;
    }
    float buf[HD_CHUNK];
    for (npy_intp i = 0; i < n; i += HD_CHUNK) {
        npy_intp m = n - i < HD_CHUNK ? n - i : HD_CHUNK;
        hd_load_f32(t, src + i * t->itemsize, buf, m);
        for (npy_intp j = 0; j < m; j++)
            set(dst + (size_t)(i + j) * size, buf[j]);
    }
}

/* n elements of format a into format b (exact through fp32). */
static void hd_cast_between(const struct hd_type *a, const struct hd_type *b, const char *src,
                            char *dst, npy_intp n)
{
    float buf[HD_CHUNK];
    for (npy_intp i = 0; i < n; i += HD_CHUNK) {
        npy_intp m = n - i < HD_CHUNK ? n - i : HD_CHUNK;
        hd_load_f32(a, src + i * a->itemsize, buf, m);
        hd_store_f32(b, dst + i * b->itemsize, buf, m);
    }
}

/* NumPy's cast functions carry no dtype, so each (format, type) pair gets
 * its own entry points. */
#define HD_KINDS_OF(Y, A) Y(A, HD_BF16) Y(A, HD_E4M3) Y(A, HD_E5M2) Y(A, HD_E3M4) \
    Y(A, HD_E4M3FN) Y(A, HD_E8M0FNU) Y(A, HD_E2M1FN)
#define HD_ALL_KINDS(Y) Y(HD_BF16) Y(HD_E4M3) Y(HD_E5M2) Y(HD_E3M4) Y(HD_E4M3FN) \
    Y(HD_E8M0FNU) Y(HD_E2M1FN)

#define HD_CAST_PAIR(N, K)                                                                     \
    static void hd_in_##N##_##K(void *s, void *d, npy_intp n, void *fa, void *ta)              \
    {                                                                                         \
        hd_cast_in(&hd_types[K], hd_get_##N, hd_size_##N, s, d, n);                           \
    }                                                                                         \
    static void hd_out_##N##_##K(void *s, void *d, npy_intp n, void *fa, void *ta)             \
    {                                                                                         \
        hd_cast_out(&hd_types[K], hd_set_##N, hd_size_##N, s, d, n);                          \
    }
#define HD_CAST_TYPE(N, NUM, SIZE)                                                             \
    static const size_t hd_size_##N = SIZE;                                                   \
    HD_KINDS_OF(HD_CAST_PAIR, N)
HD_NPY_TYPES(HD_CAST_TYPE)

#define HD_BETWEEN(A, B)                                                                       \
    static void hd_between_##A##_##B(void *s, void *d, npy_intp n, void *fa, void *ta)         \
    {                                                                                         \
        hd_cast_between(&hd_types[A], &hd_types[B], s, d, n);                                 \
    }
#define HD_BETWEEN_FROM(A) HD_KINDS_OF(HD_BETWEEN, A)
HD_ALL_KINDS(HD_BETWEEN_FROM)

/* The entry points by [NumPy type][format] and [format][format]. */
struct hd_npy_casts {
    int typenum;
    PyArray_VectorUnaryFunc *in[HD_NKINDS];
    PyArray_VectorUnaryFunc *out[HD_NKINDS];
};

#define HD_IN_ENTRY(N, K) [K] = hd_in_##N##_##K,
#define HD_OUT_ENTRY(N, K) [K] = hd_out_##N##_##K,
#define HD_TABLE_ROW(N, NUM, SIZE) \
    {NUM, {HD_KINDS_OF(HD_IN_ENTRY, N)}, {HD_KINDS_OF(HD_OUT_ENTRY, N)}},
static const struct hd_npy_casts hd_npy_casts[] = {HD_NPY_TYPES(HD_TABLE_ROW)};

#define HD_BETWEEN_ENTRY(A, B) [B] = hd_between_##A##_##B,
#define HD_BETWEEN_ROW(A) [A] = {HD_KINDS_OF(HD_BETWEEN_ENTRY, A)},
static PyArray_VectorUnaryFunc *const hd_between[HD_NKINDS][HD_NKINDS] = {
    HD_ALL_KINDS(HD_BETWEEN_ROW)};

/* from can be cast to typenum without loss; 0 or -1. */
static int hd_safe(int from, int to)
{
    PyArray_Descr *d = PyArray_DescrFromType(from);
    if (d == NULL)
        return -1;
    int r = PyArray_RegisterCanCast(d, to, NPY_NOSCALAR);
    Py_DECREF(d);
    return r;
}

static int hd_register_npy_casts(struct hd_type *t, int k)
{
    for (size_t i = 0; i < sizeof hd_npy_casts / sizeof hd_npy_casts[0]; i++) {
        const struct hd_npy_casts *c = &hd_npy_casts[i];
        PyArray_Descr *d = PyArray_DescrFromType(c->typenum);
        if (d == NULL)
            return -1;
        int r = PyArray_RegisterCastFunc(d, t->typenum, c->in[k]);
        Py_DECREF(d);
        if (r < 0 || PyArray_RegisterCastFunc(t->descr, c->typenum, c->out[k]) < 0)
            return -1;
    }
    static const int wider[] = {NPY_FLOAT, NPY_DOUBLE, NPY_LONGDOUBLE, NPY_CFLOAT, NPY_CDOUBLE};
    for (size_t i = 0; i < sizeof wider / sizeof wider[0]; i++)
        if (hd_safe(t->typenum, wider[i]) < 0)
            return -1;
    static const int narrower[] = {NPY_BOOL, NPY_BYTE, NPY_UBYTE};
    for (size_t i = 0; i < sizeof narrower / sizeof narrower[0]; i++)
        if (hd_safe(narrower[i], t->typenum) < 0)
            return -1;
    return 0;
}

int hd_cast_register(struct hd_type *t)
{
    int k = (int)(t - hd_types);
    if (hd_register_npy_casts(t, k) != 0)
        return -1;
    for (int o = 0; o < HD_NKINDS; o++) {
        if (o == k)
            continue;
        if (PyArray_RegisterCastFunc(t->descr, hd_types[o].typenum, hd_between[k][o]) < 0)
            return -1;
    }
    if (k != HD_BF16 && hd_safe(t->typenum, hd_types[HD_BF16].typenum) < 0)
        return -1;
    return 0;
}
