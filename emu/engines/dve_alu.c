/*
 * dve_alu.c: the ALU operators of the Vector and GpSimd engines as array
 * kernels, in fp32 and in exact integer arithmetic, and the free-axis
 * reductions (see dve.h; docs/isa.md lists the semantic choices).
 *
 * Each operator is one tiny inline function of two values (the tables
 * DVE_F32_BINOPS ... below). X-macros expand every operator into its own
 * loops (array op array, array op constant, constant op array), so the
 * switch on the operator is a table lookup made once per call and each
 * loop body is one operator. Loops run in fixed blocks of DVE_BLK
 * elements, which GCC's -O2 vectoriser (it adds no scalar epilogues)
 * turns into SIMD code; an output may be the same array as an input.
 */
#include <math.h>
#include <string.h>

#include "emu/engines/dve.h"
#include "emu/isa/isa.h"
#include "emu/num/num_minmax.h"
#include "emu/num/numerics.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DVE_X86 1
#else
#define DVE_X86 0
#endif

#define DVE_BLK 32u /* elements per vectorised block */

/* Callers never pass an output that partly overlaps an input (dve.h), so
 * no element loop carries a dependence: tell GCC, whose -O2 vectoriser
 * would otherwise want run-time alias checks it does not add. */
#if defined(__GNUC__) && !defined(__clang__)
#define DVE_IVDEP _Pragma("GCC ivdep")
#else
#define DVE_IVDEP
#endif

/* Apply EXPR (a function of index i) to n elements into out. */
#define DVE_MAP(T, out, n, EXPR)                                                  \
    do {                                                                          \
        size_t i_ = 0;                                                            \
        for (; i_ + DVE_BLK <= (n); i_ += DVE_BLK) {                              \
            DVE_IVDEP                                                             \
            for (size_t j_ = 0; j_ < DVE_BLK; j_++) {                             \
                size_t i = i_ + j_;                                               \
                (out)[i] = (EXPR);                                                \
            }                                                                     \
        }                                                                         \
        for (size_t i = i_; i < (n); i++)                                         \
            (out)[i] = (EXPR);                                                    \
    } while (0)

/* ---- fp32 operators ------------------------------------------------------- */

/* max/min propagate NaN from either side (as numpy.maximum does): the
 * Vector engine's rules of the one definition (emu/num/num_minmax.h). */
static inline float dve_fmax(float x, float y)
{
    return num_fmax(x, y, NUM_NAN_OPERAND, NUM_ZERO_SECOND);
}

static inline float dve_fmin(float x, float y)
{
    return num_fmin(x, y, NUM_NAN_OPERAND, NUM_ZERO_SECOND);
}

/* Python/numpy modulus: the remainder takes the sign of the divisor. */
static inline float dve_fmod(float x, float y)
{
    float r = fmodf(x, y);
    return (r != 0.0f && ((r < 0.0f) != (y < 0.0f))) ? r + y : r;
}

/* relu: x for x > 0, +0 otherwise (also for -0); NaN stays NaN. */
static inline float dve_frelu(float x)
{
    return x != x ? x : (x > 0.0f ? x : 0.0f);
}

static inline float dve_b2f(bool b)
{
    return b ? 1.0f : 0.0f;
}

/* Binary fp32 operators: (name, expression of lhs x and rhs y). */
#define DVE_F32_BINOPS(X)                                     \
    X(add, x + y)                                             \
    X(subtract, x - y)                                        \
    X(multiply, x * y)                                        \
    X(divide, x / y)                                          \
    X(max, dve_fmax(x, y))                                    \
    X(min, dve_fmin(x, y))                                    \
    X(abs_max, fabsf(x) > fabsf(y) ? x : y)                   \
    X(abs_min, fabsf(x) < fabsf(y) ? x : y)                   \
    X(power, powf(x, y))                                      \
    X(mod, dve_fmod(x, y))                                    \
    X(average, (x + y) * 0.5f)                                \
    X(equal, dve_b2f(x == y))                                 \
    X(not_equal, dve_b2f(x != y))                             \
    X(greater, dve_b2f(x > y))                                \
    X(greater_equal, dve_b2f(x >= y))                         \
    X(less, dve_b2f(x < y))                                   \
    X(less_equal, dve_b2f(x <= y))                            \
    X(logical_and, dve_b2f((x != 0.0f) & (y != 0.0f)))        \
    X(logical_or, dve_b2f((x != 0.0f) | (y != 0.0f)))         \
    X(logical_xor, dve_b2f((x != 0.0f) != (y != 0.0f)))

/* Unary fp32 operators: (name, expression of x). */
#define DVE_F32_UNOPS(X)              \
    X(bypass, x)                      \
    X(abs, fabsf(x))                  \
    X(rsqrt, 1.0f / sqrtf(x))         \
    X(square, x * x)                  \
    X(relu, dve_frelu(x))             \
    X(logical_not, dve_b2f(x == 0.0f))

#define DVE_GEN_F32_BIN(name, expr)                                                        \
    static inline float opf_##name(float x, float y) { return (expr); }                    \
    static void f32_vv_##name(float *out, const float *a, const float *b, size_t n)        \
    {                                                                                      \
        DVE_MAP(float, out, n, opf_##name(a[i], b[i]));                                    \
    }                                                                                      \
    static void f32_vk_##name(float *out, const float *a, float k, size_t n)               \
    {                                                                                      \
        DVE_MAP(float, out, n, opf_##name(a[i], k));                                       \
    }                                                                                      \
    static void f32_kv_##name(float *out, const float *a, float k, size_t n)               \
    {                                                                                      \
        DVE_MAP(float, out, n, opf_##name(k, a[i]));                                       \
    }                                                                                      \
    static float f32_fold_##name(const float *a, size_t n)                                 \
    {                                                                                      \
        float r = a[0];                                                                    \
        for (size_t i = 1; i < n; i++)                                                     \
            r = opf_##name(r, a[i]);                                                       \
        return r;                                                                          \
    }                                                                                      \
    static float f32_scan_##name(float *a, float reg, size_t n)                            \
    {                                                                                      \
        for (size_t i = 0; i < n; i++)                                                     \
            a[i] = reg = opf_##name(a[i], reg);                                            \
        return reg;                                                                        \
    }
DVE_F32_BINOPS(DVE_GEN_F32_BIN)

#define DVE_GEN_F32_UN(name, expr)                                                         \
    static inline float opf_##name(float x) { return (expr); }                             \
    static void f32_u_##name(float *out, const float *a, size_t n)                         \
    {                                                                                      \
        DVE_MAP(float, out, n, opf_##name(a[i]));                                          \
    }
DVE_F32_UNOPS(DVE_GEN_F32_UN)

typedef void (*dve_f32_vv_fn)(float *, const float *, const float *, size_t);
typedef void (*dve_f32_vk_fn)(float *, const float *, float, size_t);
typedef void (*dve_f32_u_fn)(float *, const float *, size_t);
typedef float (*dve_f32_fold_fn)(const float *, size_t);
typedef float (*dve_f32_scan_fn)(float *, float, size_t);

#define DVE_ENTRY(prefix, name) [ISA_ALU_##name] = prefix##name,
#define DVE_VV(name, expr) DVE_ENTRY(f32_vv_, name)
#define DVE_VK(name, expr) DVE_ENTRY(f32_vk_, name)
#define DVE_KV(name, expr) DVE_ENTRY(f32_kv_, name)
#define DVE_FOLD(name, expr) DVE_ENTRY(f32_fold_, name)
#define DVE_UN(name, expr) DVE_ENTRY(f32_u_, name)
#define DVE_SCAN(name, expr) DVE_ENTRY(f32_scan_, name)
static const dve_f32_vv_fn f32_vv[ISA_ENUM_SPACE] = {DVE_F32_BINOPS(DVE_VV)};
static const dve_f32_vk_fn f32_vk[ISA_ENUM_SPACE] = {DVE_F32_BINOPS(DVE_VK)};
static const dve_f32_vk_fn f32_kv[ISA_ENUM_SPACE] = {DVE_F32_BINOPS(DVE_KV)};
static const dve_f32_fold_fn f32_fold[ISA_ENUM_SPACE] = {DVE_F32_BINOPS(DVE_FOLD)};
static const dve_f32_u_fn f32_u[ISA_ENUM_SPACE] = {DVE_F32_UNOPS(DVE_UN)};
static const dve_f32_scan_fn f32_scan[ISA_ENUM_SPACE] = {DVE_F32_BINOPS(DVE_SCAN)};

/* ---- integer operators ------------------------------------------------------ */

static inline int64_t dve_wrap(uint64_t u)
{
    return (int64_t)u;
}

/* Low `bits` bits of x as an unsigned number / sign-extended. */
static inline uint64_t dve_zext(int64_t x, unsigned bits)
{
    return bits >= 64 ? (uint64_t)x : (uint64_t)x & ((UINT64_C(1) << bits) - 1u);
}

static inline int64_t dve_sext(int64_t x, unsigned bits)
{
    return bits >= 64 ? x : dve_wrap((uint64_t)x << (64 - bits)) >> (64 - bits);
}

static inline uint64_t dve_mag(int64_t x)
{
    return x < 0 ? 0u - (uint64_t)x : (uint64_t)x;
}

/* Binary integer operators: (name, expression of x, y and bits). */
#define DVE_I64_BINOPS(X)                                                            \
    X(add, dve_wrap((uint64_t)x + (uint64_t)y))                                      \
    X(subtract, dve_wrap((uint64_t)x - (uint64_t)y))                                 \
    X(multiply, dve_wrap((uint64_t)x * (uint64_t)y))                                 \
    X(max, x > y ? x : y)                                                            \
    X(min, x < y ? x : y)                                                            \
    X(abs_max, dve_mag(x) > dve_mag(y) ? x : y)                                      \
    X(abs_min, dve_mag(x) < dve_mag(y) ? x : y)                                      \
    X(equal, x == y)                                                                 \
    X(not_equal, x != y)                                                             \
    X(greater, x > y)                                                                \
    X(greater_equal, x >= y)                                                         \
    X(less, x < y)                                                                   \
    X(less_equal, x <= y)                                                            \
    X(logical_and, (x != 0) & (y != 0))                                              \
    X(logical_or, (x != 0) | (y != 0))                                               \
    X(logical_xor, (x != 0) != (y != 0))                                             \
    X(bitwise_and, x & y)                                                            \
    X(bitwise_or, x | y)                                                             \
    X(bitwise_xor, x ^ y)                                                            \
    X(left_shift, (uint64_t)y < 64 ? dve_wrap((uint64_t)x << y) : 0)                 \
    X(right_shift, (uint64_t)y < 64 ? dve_wrap(dve_zext(x, bits) >> y) : 0)          \
    X(arith_shift_right, dve_sext(x, bits) >> ((uint64_t)y < 64 ? y : 63))

#define DVE_I64_UNOPS(X)                         \
    X(bypass, x)                                 \
    X(abs, dve_wrap(dve_mag(x)))                 \
    X(invert, ~x)                                \
    X(square, dve_wrap((uint64_t)x * (uint64_t)x)) \
    X(relu, x > 0 ? x : 0)                       \
    X(logical_not, x == 0)

#define DVE_GEN_I64_BIN(name, expr)                                                          \
    static inline int64_t opi_##name(int64_t x, int64_t y, unsigned bits)                    \
    {                                                                                        \
        (void)bits;                                                                          \
        return (expr);                                                                       \
    }                                                                                        \
    static void i64_vv_##name(int64_t *out, const int64_t *a, const int64_t *b, unsigned bits, \
                              size_t n)                                                      \
    {                                                                                        \
        DVE_MAP(int64_t, out, n, opi_##name(a[i], b[i], bits));                              \
    }                                                                                        \
    static void i64_vk_##name(int64_t *out, const int64_t *a, int64_t k, unsigned bits,      \
                              size_t n)                                                      \
    {                                                                                        \
        DVE_MAP(int64_t, out, n, opi_##name(a[i], k, bits));                                 \
    }                                                                                        \
    static void i64_kv_##name(int64_t *out, const int64_t *a, int64_t k, unsigned bits,      \
                              size_t n)                                                      \
    {                                                                                        \
        DVE_MAP(int64_t, out, n, opi_##name(k, a[i], bits));                                 \
    }                                                                                        \
    static int64_t i64_fold_##name(const int64_t *a, unsigned bits, size_t n)                \
    {                                                                                        \
        int64_t r = a[0];                                                                    \
        for (size_t i = 1; i < n; i++)                                                       \
            r = opi_##name(r, a[i], bits);                                                   \
        return r;                                                                            \
    }
DVE_I64_BINOPS(DVE_GEN_I64_BIN)

#define DVE_GEN_I64_UN(name, expr)                                                   \
    static inline int64_t opi_##name(int64_t x) { return (expr); }                   \
    static void i64_u_##name(int64_t *out, const int64_t *a, size_t n)               \
    {                                                                                \
        DVE_MAP(int64_t, out, n, opi_##name(a[i]));                                  \
    }
DVE_I64_UNOPS(DVE_GEN_I64_UN)

typedef void (*dve_i64_vv_fn)(int64_t *, const int64_t *, const int64_t *, unsigned, size_t);
typedef void (*dve_i64_vk_fn)(int64_t *, const int64_t *, int64_t, unsigned, size_t);
typedef void (*dve_i64_u_fn)(int64_t *, const int64_t *, size_t);
typedef int64_t (*dve_i64_fold_fn)(const int64_t *, unsigned, size_t);

#define DVE_IVV(name, expr) DVE_ENTRY(i64_vv_, name)
#define DVE_IVK(name, expr) DVE_ENTRY(i64_vk_, name)
#define DVE_IKV(name, expr) DVE_ENTRY(i64_kv_, name)
#define DVE_IFOLD(name, expr) DVE_ENTRY(i64_fold_, name)
#define DVE_IUN(name, expr) DVE_ENTRY(i64_u_, name)
static const dve_i64_vv_fn i64_vv[ISA_ENUM_SPACE] = {DVE_I64_BINOPS(DVE_IVV)};
static const dve_i64_vk_fn i64_vk[ISA_ENUM_SPACE] = {DVE_I64_BINOPS(DVE_IVK)};
static const dve_i64_vk_fn i64_kv[ISA_ENUM_SPACE] = {DVE_I64_BINOPS(DVE_IKV)};
static const dve_i64_fold_fn i64_fold[ISA_ENUM_SPACE] = {DVE_I64_BINOPS(DVE_IFOLD)};
static const dve_i64_u_fn i64_u[ISA_ENUM_SPACE] = {DVE_I64_UNOPS(DVE_IUN)};

/* ---- operator properties ------------------------------------------------------ */

#define P_ARITH (DVE_OP_F32 | DVE_OP_INT)
#define P_RED (DVE_OP_REDUCE)
const uint8_t dve_op_table[ISA_ENUM_SPACE] = {
    [ISA_ALU_bypass] = P_ARITH | DVE_OP_UNARY,
    [ISA_ALU_add] = P_ARITH | P_RED,
    [ISA_ALU_subtract] = P_ARITH | P_RED,
    [ISA_ALU_multiply] = P_ARITH | P_RED,
    [ISA_ALU_divide] = DVE_OP_F32,
    [ISA_ALU_max] = P_ARITH | P_RED,
    [ISA_ALU_min] = P_ARITH | P_RED,
    [ISA_ALU_abs_max] = P_ARITH | P_RED,
    [ISA_ALU_abs_min] = P_ARITH | P_RED,
    [ISA_ALU_power] = DVE_OP_F32,
    [ISA_ALU_mod] = DVE_OP_F32,
    [ISA_ALU_abs] = P_ARITH | DVE_OP_UNARY,
    [ISA_ALU_rsqrt] = DVE_OP_F32 | DVE_OP_UNARY,
    [ISA_ALU_average] = DVE_OP_F32 | P_RED,
    [ISA_ALU_square] = P_ARITH | DVE_OP_UNARY,
    [ISA_ALU_relu] = P_ARITH | DVE_OP_UNARY,
    [ISA_ALU_bitwise_and] = DVE_OP_INT | DVE_OP_BITVEC | P_RED,
    [ISA_ALU_bitwise_or] = DVE_OP_INT | DVE_OP_BITVEC | P_RED,
    [ISA_ALU_bitwise_xor] = DVE_OP_INT | DVE_OP_BITVEC | P_RED,
    [ISA_ALU_invert] = DVE_OP_INT | DVE_OP_BITVEC | DVE_OP_UNARY,
    [ISA_ALU_left_shift] = DVE_OP_INT | DVE_OP_BITVEC,
    [ISA_ALU_right_shift] = DVE_OP_INT | DVE_OP_BITVEC,
    [ISA_ALU_arith_shift_right] = DVE_OP_INT | DVE_OP_BITVEC,
    [ISA_ALU_equal] = P_ARITH,
    [ISA_ALU_not_equal] = P_ARITH,
    [ISA_ALU_greater] = P_ARITH,
    [ISA_ALU_greater_equal] = P_ARITH,
    [ISA_ALU_less] = P_ARITH,
    [ISA_ALU_less_equal] = P_ARITH,
    [ISA_ALU_logical_and] = P_ARITH | P_RED,
    [ISA_ALU_logical_or] = P_ARITH | P_RED,
    [ISA_ALU_logical_xor] = P_ARITH | P_RED,
    [ISA_ALU_logical_not] = P_ARITH | DVE_OP_UNARY,
};

const char *dve_op_name(unsigned op)
{
    const char *name = isa_enum_name(ISA_ET_ALU, op);
    return name != NULL ? name : "(not an ALU operator)";
}

/* The error of dve_op_check: why op cannot serve where need asks. */
emu_status dve_op_fail(struct isa_exec_ctx *ctx, const char *field, unsigned op, unsigned need)
{
    unsigned p = dve_op_props(op);
    const char *why = p == 0 ? "is not an ALU operator"
                      : (need & DVE_OP_REDUCE) ? "is not a reduction operator"
                      : (p & DVE_OP_BITVEC) ? "is a bit-pattern operator, which needs integer dtypes on every operand"
                      : "cannot run here";
    return core_fail(ctx, EMU_EXEC_ERR, "%s %s (%u) %s", field, dve_op_name(op), op, why);
}

/* ---- fp32 entry points ---------------------------------------------------------- */

void dve_f32_vv(unsigned op, float *out, const float *s, const float *o, bool rev, size_t n)
{
    if (dve_op_props(op) & DVE_OP_UNARY)
        f32_u[op](out, s, n);
    else
        f32_vv[op](out, rev ? o : s, rev ? s : o, n);
}

void dve_f32_vk(unsigned op, float *out, const float *s, float k, bool rev, size_t n)
{
    if (dve_op_props(op) & DVE_OP_UNARY)
        f32_u[op](out, s, n);
    else
        (rev ? f32_kv : f32_vk)[op](out, s, k, n);
}

float dve_f32_one(unsigned op, float stream, float other, bool rev)
{
    float r;
    dve_f32_vk(op, &r, &stream, other, rev, 1);
    return r;
}

/* ---- integer entry points --------------------------------------------------------- */

void dve_i64_vv(unsigned op, int64_t *out, const int64_t *s, const int64_t *o, bool rev,
                unsigned bits, size_t n)
{
    if (dve_op_props(op) & DVE_OP_UNARY)
        i64_u[op](out, s, n);
    else
        i64_vv[op](out, rev ? o : s, rev ? s : o, bits, n);
}

void dve_i64_vk(unsigned op, int64_t *out, const int64_t *s, int64_t k, bool rev,
                unsigned bits, size_t n)
{
    if (dve_op_props(op) & DVE_OP_UNARY)
        i64_u[op](out, s, n);
    else
        (rev ? i64_kv : i64_vk)[op](out, s, k, bits, n);
}

/* ---- fused pairs of scalar operators ------------------------------------------------- */

/* The operators tensor_scalar chains most, with the scalar k on either
 * side; a pair of them runs as one loop. */
static inline float fz_add(float x, float k) { return x + k; }
static inline float fz_sub(float x, float k) { return x - k; }
static inline float fz_rsub(float x, float k) { return k - x; }
static inline float fz_mul(float x, float k) { return x * k; }
static inline float fz_div(float x, float k) { return x / k; }
static inline float fz_rdiv(float x, float k) { return k / x; }
static inline float fz_max(float x, float k) { return dve_fmax(x, k); }
static inline float fz_min(float x, float k) { return dve_fmin(x, k); }

enum { FZ_add, FZ_sub, FZ_rsub, FZ_mul, FZ_div, FZ_rdiv, FZ_max, FZ_min, FZ_COUNT };

#define DVE_FZ_FIRST(X) X(add) X(sub) X(rsub) X(mul) X(div) X(rdiv) X(max) X(min)
#define DVE_FZ_SECOND(X, a) X(a, add) X(a, sub) X(a, rsub) X(a, mul) X(a, div) X(a, rdiv) \
    X(a, max) X(a, min)

#define DVE_GEN_FZ(a, b)                                                                  \
    static void f32_fz_##a##_##b(float *out, const float *x, float k0, float k1, size_t n)  \
    {                                                                                     \
        DVE_MAP(float, out, n, fz_##b(fz_##a(x[i], k0), k1));                             \
    }
#define DVE_GEN_FZ_ROW(a) DVE_FZ_SECOND(DVE_GEN_FZ, a)
DVE_FZ_FIRST(DVE_GEN_FZ_ROW)

typedef void (*dve_fz_fn)(float *, const float *, float, float, size_t);
#define DVE_FZ_ENTRY(a, b) [FZ_##a][FZ_##b] = f32_fz_##a##_##b,
#define DVE_FZ_ROW(a) DVE_FZ_SECOND(DVE_FZ_ENTRY, a)
static const dve_fz_fn f32_fz[FZ_COUNT][FZ_COUNT] = {DVE_FZ_FIRST(DVE_FZ_ROW)};

/* The fused-operator index of op (rev: k on the left), or -1. */
static int dve_fz_index(unsigned op, bool rev)
{
    switch (op) {
    case ISA_ALU_add: return FZ_add;
    case ISA_ALU_subtract: return rev ? FZ_rsub : FZ_sub;
    case ISA_ALU_multiply: return FZ_mul;
    case ISA_ALU_divide: return rev ? FZ_rdiv : FZ_div;
    case ISA_ALU_max: return FZ_max;
    case ISA_ALU_min: return FZ_min;
    default: return -1;
    }
}

bool dve_f32_vk2(const unsigned op[2], const bool rev[2], float k0, float k1, float *out,
                 const float *s, size_t n)
{
    int a = dve_fz_index(op[0], rev[0]), b = dve_fz_index(op[1], rev[1]);
    if (a < 0 || b < 0)
        return false;
    f32_fz[a][b](out, s, k0, k1, n);
    return true;
}

/* ---- reductions ----------------------------------------------------------------------- */

/* Four-float vectors (GCC/Clang vector extension) keep the 16 lanes of a
 * reduction in registers: lane l lives in element l % 4 of acc[l / 4]. */
typedef float dve_v4 __attribute__((vector_size(16)));
typedef int32_t dve_v4i __attribute__((vector_size(16)));

static inline dve_v4 dve_v4_load(const float *p)
{
    dve_v4 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline dve_v4 dve_v4_sel(dve_v4i m, dve_v4 a, dve_v4 b)
{
    return (dve_v4)((m & (dve_v4i)a) | (~m & (dve_v4i)b));
}

static inline dve_v4 dve_v4_abs(dve_v4 a)
{
    return (dve_v4)((dve_v4i)a & 0x7fffffff);
}

/* The vector forms of the lane operators: the same results as opf_*. */
static inline dve_v4 v4_add(dve_v4 x, dve_v4 y) { return x + y; }
static inline dve_v4 v4_multiply(dve_v4 x, dve_v4 y) { return x * y; }
static inline dve_v4 v4_max(dve_v4 x, dve_v4 y)
{
    return dve_v4_sel(x != x, x, dve_v4_sel(x > y, x, y));
}
static inline dve_v4 v4_min(dve_v4 x, dve_v4 y)
{
    return dve_v4_sel(x != x, x, dve_v4_sel(x < y, x, y));
}
static inline dve_v4 v4_abs_max(dve_v4 x, dve_v4 y)
{
    return dve_v4_sel(dve_v4_abs(x) > dve_v4_abs(y), x, y);
}
static inline dve_v4 v4_abs_min(dve_v4 x, dve_v4 y)
{
    return dve_v4_sel(dve_v4_abs(x) < dve_v4_abs(y), x, y);
}

_Static_assert(DVE_LANES == 16, "the lane reductions keep 16 lanes in four vectors");

/* Element i goes to lane i % DVE_LANES (lanes start at the identity); the
 * lanes then combine pairwise: lane l with lane l + w for w = 8, 4, 2, 1. */
#define DVE_GEN_LANES(name, ident)                                                 \
    static float f32_lanes_##name(const float *x, size_t n)                        \
    {                                                                              \
        dve_v4 id = {(ident), (ident), (ident), (ident)};                           \
        dve_v4 a0 = id, a1 = id, a2 = id, a3 = id;                                 \
        size_t i = 0;                                                              \
        for (; i + DVE_LANES <= n; i += DVE_LANES) {                               \
            a0 = v4_##name(a0, dve_v4_load(x + i));                                \
            a1 = v4_##name(a1, dve_v4_load(x + i + 4));                            \
            a2 = v4_##name(a2, dve_v4_load(x + i + 8));                            \
            a3 = v4_##name(a3, dve_v4_load(x + i + 12));                           \
        }                                                                          \
        float acc[DVE_LANES];                                                      \
        memcpy(acc, &a0, 16);                                                      \
        memcpy(acc + 4, &a1, 16);                                                  \
        memcpy(acc + 8, &a2, 16);                                                  \
        memcpy(acc + 12, &a3, 16);                                                 \
        for (size_t l = 0; i + l < n; l++)                                         \
            acc[l] = opf_##name(acc[l], x[i + l]);                                 \
        for (size_t w = DVE_LANES / 2; w >= 1; w /= 2)                             \
            for (size_t l = 0; l < w; l++)                                         \
                acc[l] = opf_##name(acc[l], acc[l + w]);                           \
        return acc[0];                                                             \
    }
DVE_GEN_LANES(add, -0.0f)
DVE_GEN_LANES(multiply, 1.0f)
DVE_GEN_LANES(max, -INFINITY)
DVE_GEN_LANES(min, INFINITY)
DVE_GEN_LANES(abs_max, 0.0f)
DVE_GEN_LANES(abs_min, INFINITY)

/* ---- max and min in any order ---------------------------------------------------------- */

/* The lane fold above decides two things by its order alone: which NaN
 * comes out when there are several, and which zero when the answer is +0
 * or -0. Without a NaN among x and with a non-zero answer, the answer is
 * the one largest (smallest) value, whatever the order: so it may be
 * found with the host's max/min instructions over wide registers. A max
 * or min instruction returns one of its operands' bits unchanged (no
 * denormal flushing: the emulator leaves MXCSR at its default). */
#if DVE_X86
#define DVE_GEN_EXTREME_X512(name, op, ident)                                             \
    __attribute__((target("avx512f"))) static bool dve_##name##_x512(const float *x,      \
                                                                     size_t n, float *out) \
    {                                                                                    \
        __m512 id = _mm512_set1_ps(ident), a0 = id, a1 = id, a2 = id, a3 = id;          \
        __mmask16 nan = 0;                                                               \
        size_t i = 0;                                                                    \
        for (; i + 64 <= n; i += 64) {                                                   \
            __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);       \
            __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);  \
            nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) |                            \
                   _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);                             \
            a0 = op(a0, v0);                                                             \
            a1 = op(a1, v1);                                                             \
            a2 = op(a2, v2);                                                             \
            a3 = op(a3, v3);                                                             \
        }                                                                                \
        for (; i < n; i += 16) {                                                         \
            __mmask16 k = n - i >= 16 ? (__mmask16)0xffff                                \
                                      : (__mmask16)((1u << (n - i)) - 1u);               \
            __m512 v = _mm512_mask_loadu_ps(id, k, x + i);                               \
            nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);                               \
            a0 = op(a0, v);                                                              \
        }                                                                                \
        float lanes[16];                                                                 \
        _mm512_storeu_ps(lanes, op(op(a0, a1), op(a2, a3)));                             \
        float r = lanes[0];                                                              \
        for (int l = 1; l < 16; l++)                                                     \
            r = _mm_cvtss_f32(op##_1(_mm_set_ss(r), _mm_set_ss(lanes[l])));             \
        *out = r;                                                                        \
        return nan == 0 && r != 0.0f;                                                    \
    }
#define dve_max512 _mm512_max_ps
#define dve_min512 _mm512_min_ps
#define dve_max512_1 _mm_max_ss
#define dve_min512_1 _mm_min_ss
DVE_GEN_EXTREME_X512(max, dve_max512, -INFINITY)
DVE_GEN_EXTREME_X512(min, dve_min512, INFINITY)
#endif

bool dve_f32_extreme(const float *x, size_t n, bool want_max, float *out)
{
#if DVE_X86
    if (n >= 64 && num_isa_level() == NUM_ISA_AVX512)
        return want_max ? dve_max_x512(x, n, out) : dve_min_x512(x, n, out);
#else
    (void)x;
    (void)n;
    (void)want_max;
    (void)out;
#endif
    return false;
}

float dve_f32_reduce(unsigned op, const float *x, size_t n)
{
    float r;
    switch (op) {
    case ISA_ALU_add: return f32_lanes_add(x, n);
    case ISA_ALU_multiply: return f32_lanes_multiply(x, n);
    case ISA_ALU_max: return dve_f32_extreme(x, n, true, &r) ? r : f32_lanes_max(x, n);
    case ISA_ALU_min: return dve_f32_extreme(x, n, false, &r) ? r : f32_lanes_min(x, n);
    case ISA_ALU_abs_max: return f32_lanes_abs_max(x, n);
    case ISA_ALU_abs_min: return f32_lanes_abs_min(x, n);
    case ISA_ALU_average: return f32_lanes_add(x, n) / (float)n;
    default: return f32_fold[op](x, n);
    }
}

float dve_f32_scan(unsigned op, float *x, float reg, size_t n)
{
    return f32_scan[op](x, reg, n);
}

int64_t dve_i64_reduce(unsigned op, const int64_t *x, size_t n, unsigned bits)
{
    return i64_fold[op](x, bits, n);
}

bool dve_f32_identity(unsigned op, float *out)
{
    switch (op) {
    case ISA_ALU_add:
    case ISA_ALU_subtract: *out = 0.0f; return true;
    case ISA_ALU_multiply: *out = 1.0f; return true;
    case ISA_ALU_max: *out = -INFINITY; return true;
    case ISA_ALU_min: *out = INFINITY; return true;
    default: return false;
    }
}
