/*
 * hd_ufunc.c: NumPy ufunc loops for the host formats. Each loop reads its
 * operands as fp32, computes in fp32 (the elementary functions in double)
 * and rounds the result back to the format with round-to-nearest-even;
 * comparisons and predicates give bool. The loop's data pointer names the
 * format and the operation, so one loop function serves every format.
 */
#include "hd.h"

#include <math.h>
#include <string.h>

/* Operations of two operands giving a value of the format. */
enum hd_op2 {
    HD_ADD, HD_SUB, HD_MUL, HD_DIV, HD_FLOORDIV, HD_REM, HD_FMOD, HD_POW, HD_MAX, HD_MIN,
    HD_FMAX, HD_FMIN, HD_COPYSIGN, HD_ARCTAN2, HD_HYPOT, HD_NOP2
};
/* Operations of one operand giving a value of the format. */
enum hd_op1 {
    HD_NEG, HD_POS, HD_ABS, HD_SIGN, HD_RINT, HD_FLOOR, HD_CEIL, HD_TRUNC, HD_SQRT, HD_SQUARE,
    HD_RECIP, HD_EXP, HD_EXP2, HD_EXPM1, HD_LOG, HD_LOG2, HD_LOG10, HD_LOG1P, HD_SIN, HD_COS,
    HD_TAN, HD_TANH, HD_NOP1
};
/* Comparisons and logical operations of two operands giving bool (the
 * quiet comparisons: a NaN operand raises no floating-point flag, which
 * NumPy would report as a warning). */
enum hd_cmp {
    HD_EQ, HD_NE, HD_LT, HD_LE, HD_GT, HD_GE, HD_AND, HD_OR, HD_XOR, HD_NCMP
};
/* Predicates of one operand giving bool. */
enum hd_pred { HD_ISNAN, HD_ISINF, HD_ISFINITE, HD_SIGNBIT, HD_NOT, HD_NPRED };

/* A loop's data: the format and the operation. */
struct hd_loop {
    const struct hd_type *t;
    int op;
};

static const char *const hd_op2_names[HD_NOP2] = {
    "add", "subtract", "multiply", "true_divide", "floor_divide", "remainder", "fmod", "power",
    "maximum", "minimum", "fmax", "fmin", "copysign", "arctan2", "hypot"};
static const char *const hd_op1_names[HD_NOP1] = {
    "negative", "positive", "absolute", "sign", "rint", "floor", "ceil", "trunc", "sqrt",
    "square", "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
    "cos", "tan", "tanh"};
static const char *const hd_cmp_names[HD_NCMP] = {
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor"};
static const char *const hd_pred_names[HD_NPRED] = {"isnan", "isinf", "isfinite", "signbit",
                                                    "logical_not"};

static struct hd_loop hd_loops2[HD_NKINDS][HD_NOP2];
static struct hd_loop hd_loops1[HD_NKINDS][HD_NOP1];
static struct hd_loop hd_loopsc[HD_NKINDS][HD_NCMP];
static struct hd_loop hd_loopsp[HD_NKINDS][HD_NPRED];

/* NumPy's floor division of floats; *mod gets the remainder (the sign
 * rules of Python's // and %). */
static float hd_divmod(float x, float y, float *mod)
{
    float m = fmodf(x, y);
    if (y == 0.0f) {
        *mod = m;
        return x / y;
    }
    float div = (x - m) / y;
    if (m != 0.0f) {
        if (isless(y, 0.0f) != isless(m, 0.0f)) {
            m += y;
            div -= 1.0f;
        }
    } else {
        m = copysignf(0.0f, y);
    }
    *mod = m;
    if (div == 0.0f)
        return copysignf(0.0f, x / y);
    float fl = floorf(div);
    return div - fl > 0.5f ? fl + 1.0f : fl;
}

static float hd_apply2(int op, float x, float y)
{
    float mod;
    switch (op) {
    case HD_ADD: return x + y;
    case HD_SUB: return x - y;
    case HD_MUL: return x * y;
    case HD_DIV: return x / y;
    case HD_FLOORDIV: return hd_divmod(x, y, &mod);
    case HD_REM: hd_divmod(x, y, &mod); return mod;
    case HD_FMOD: return fmodf(x, y);
    case HD_POW: return (float)pow(x, y);
    case HD_MAX: return (isgreaterequal(x, y) || isnan(x)) ? x : y;
    case HD_MIN: return (islessequal(x, y) || isnan(x)) ? x : y;
    case HD_FMAX: return (isgreaterequal(x, y) || isnan(y)) ? x : y;
    case HD_FMIN: return (islessequal(x, y) || isnan(y)) ? x : y;
    case HD_COPYSIGN: return copysignf(x, y);
    case HD_ARCTAN2: return (float)atan2(x, y);
    default: return (float)hypot(x, y);
    }
}

static float hd_sign(float x)
{
    if (isnan(x))
        return x;
    return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : x;
}

static float hd_apply1(int op, float x)
{
    switch (op) {
    case HD_NEG: return -x;
    case HD_POS: return x;
    case HD_ABS: return fabsf(x);
    case HD_SIGN: return hd_sign(x);
    case HD_RINT: return rintf(x);
    case HD_FLOOR: return floorf(x);
    case HD_CEIL: return ceilf(x);
    case HD_TRUNC: return truncf(x);
    case HD_SQRT: return sqrtf(x);
    case HD_SQUARE: return x * x;
    case HD_RECIP: return 1.0f / x;
    case HD_EXP: return (float)exp(x);
    case HD_EXP2: return (float)exp2(x);
    case HD_EXPM1: return (float)expm1(x);
    case HD_LOG: return (float)log(x);
    case HD_LOG2: return (float)log2(x);
    case HD_LOG10: return (float)log10(x);
    case HD_LOG1P: return (float)log1p(x);
    case HD_SIN: return (float)sin(x);
    case HD_COS: return (float)cos(x);
    case HD_TAN: return (float)tan(x);
    default: return (float)tanh(x);
    }
}

static bool hd_compare(int op, float x, float y)
{
    switch (op) {
    case HD_EQ: return x == y;
    case HD_NE: return x != y;
    case HD_LT: return isless(x, y);
    case HD_LE: return islessequal(x, y);
    case HD_GT: return isgreater(x, y);
    case HD_GE: return isgreaterequal(x, y);
    case HD_AND: return x != 0.0f && y != 0.0f;
    case HD_OR: return x != 0.0f || y != 0.0f;
    default: return (x != 0.0f) != (y != 0.0f);
    }
}

static bool hd_predicate(int op, float x)
{
    switch (op) {
    case HD_ISNAN: return isnan(x);
    case HD_ISINF: return isinf(x);
    case HD_ISFINITE: return isfinite(x);
    case HD_SIGNBIT: return signbit(x);
    default: return x == 0.0f;
    }
}

/* Elements per chunk: operands are converted a chunk at a time with the
 * vector conversions of emu/num. */
#define HD_CHUNK 256

/* m elements at p, step bytes apart, as fp32. */
static void hd_gather(const struct hd_type *t, const char *p, npy_intp step, float *buf,
                      npy_intp m)
{
    if (step == t->itemsize) {
        hd_load_f32(t, p, buf, m);
        return;
    }
    for (npy_intp j = 0; j < m; j++)
        buf[j] = hd_to_f32(t, hd_bits_at(t, p + j * step));
}

/* m fp32 values rounded into elements at p, step bytes apart. */
static void hd_scatter(const struct hd_type *t, char *p, npy_intp step, const float *buf,
                       npy_intp m)
{
    if (step == t->itemsize) {
        hd_store_f32(t, p, buf, m);
        return;
    }
    for (npy_intp j = 0; j < m; j++)
        hd_put_bits(t, p + j * step, hd_from_f32(t, buf[j]));
}

/* The chunk from element i of a loop's inputs as fp32: the first into x,
 * the second into y (unless NULL); its length. */
static npy_intp hd_chunk_in(const struct hd_type *t, char **args, const npy_intp *dims,
                            const npy_intp *steps, npy_intp i, float *x, float *y)
{
    npy_intp m = dims[0] - i < HD_CHUNK ? dims[0] - i : HD_CHUNK;
    hd_gather(t, args[0] + i * steps[0], steps[0], x, m);
    if (y != NULL)
        hd_gather(t, args[1] + i * steps[1], steps[1], y, m);
    return m;
}

static void hd_loop2(char **args, const npy_intp *dims, const npy_intp *steps, void *data)
{
    const struct hd_loop *l = data;
    float x[HD_CHUNK], y[HD_CHUNK];
    for (npy_intp i = 0; i < dims[0]; i += HD_CHUNK) {
        npy_intp m = hd_chunk_in(l->t, args, dims, steps, i, x, y);
        for (npy_intp j = 0; j < m; j++)
            x[j] = hd_apply2(l->op, x[j], y[j]);
        hd_scatter(l->t, args[2] + i * steps[2], steps[2], x, m);
    }
}

static void hd_loop1(char **args, const npy_intp *dims, const npy_intp *steps, void *data)
{
    const struct hd_loop *l = data;
    float x[HD_CHUNK];
    for (npy_intp i = 0; i < dims[0]; i += HD_CHUNK) {
        npy_intp m = hd_chunk_in(l->t, args, dims, steps, i, x, NULL);
        for (npy_intp j = 0; j < m; j++)
            x[j] = hd_apply1(l->op, x[j]);
        hd_scatter(l->t, args[1] + i * steps[1], steps[1], x, m);
    }
}

static void hd_loopc(char **args, const npy_intp *dims, const npy_intp *steps, void *data)
{
    const struct hd_loop *l = data;
    float x[HD_CHUNK], y[HD_CHUNK];
    for (npy_intp i = 0; i < dims[0]; i += HD_CHUNK) {
        npy_intp m = hd_chunk_in(l->t, args, dims, steps, i, x, y);
        for (npy_intp j = 0; j < m; j++)
            *(npy_bool *)(args[2] + (i + j) * steps[2]) = hd_compare(l->op, x[j], y[j]);
    }
}

static void hd_loopp(char **args, const npy_intp *dims, const npy_intp *steps, void *data)
{
    const struct hd_loop *l = data;
    float x[HD_CHUNK];
    for (npy_intp i = 0; i < dims[0]; i += HD_CHUNK) {
        npy_intp m = hd_chunk_in(l->t, args, dims, steps, i, x, NULL);
        for (npy_intp j = 0; j < m; j++)
            *(npy_bool *)(args[1] + (i + j) * steps[1]) = hd_predicate(l->op, x[j]);
    }
}

/* Add one loop to numpy.<name> for t; 0 or -1. */
static int hd_add_loop(const struct hd_type *t, PyObject *numpy, const char *name, int nin,
                       PyUFuncGenericFunction fn, int out_type, struct hd_loop *l, int op)
{
    PyObject *u = PyObject_GetAttrString(numpy, name);
    if (u == NULL)
        return -1;
    if (!PyObject_TypeCheck(u, &PyUFunc_Type) || ((PyUFuncObject *)u)->nin != nin ||
        ((PyUFuncObject *)u)->nout != 1) {
        Py_DECREF(u);
        PyErr_Format(PyExc_RuntimeError, "numpy.%s is not the ufunc trnemu expects", name);
        return -1;
    }
    l->t = t;
    l->op = op;
    int types[3] = {t->typenum, t->typenum, t->typenum};
    types[nin] = out_type;
    int r = PyUFunc_RegisterLoopForType((PyUFuncObject *)u, t->typenum, fn, types, l);
    Py_DECREF(u);
    return r;
}

int hd_ufunc_register(struct hd_type *t)
{
    int k = (int)(t - hd_types);
    PyObject *numpy = PyImport_ImportModule("numpy");
    if (numpy == NULL)
        return -1;
    int r = 0;
    for (int op = 0; r == 0 && op < HD_NOP2; op++)
        r = hd_add_loop(t, numpy, hd_op2_names[op], 2, hd_loop2, t->typenum, &hd_loops2[k][op], op);
    for (int op = 0; r == 0 && op < HD_NOP1; op++)
        r = hd_add_loop(t, numpy, hd_op1_names[op], 1, hd_loop1, t->typenum, &hd_loops1[k][op], op);
    for (int op = 0; r == 0 && op < HD_NCMP; op++)
        r = hd_add_loop(t, numpy, hd_cmp_names[op], 2, hd_loopc, NPY_BOOL, &hd_loopsc[k][op], op);
    for (int op = 0; r == 0 && op < HD_NPRED; op++)
        r = hd_add_loop(t, numpy, hd_pred_names[op], 1, hd_loopp, NPY_BOOL, &hd_loopsp[k][op], op);
    Py_DECREF(numpy);
    return r;
}
