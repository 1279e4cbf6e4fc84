/*
 * coll_reduce.c: element-wise reductions of the collectives (see
 * coll_reduce.h). fp32 add runs on 16-lane vectors that GCC lowers to the
 * host's vector unit; narrow floats go through fp32 in blocks with the
 * vectorised conversions of emu/numerics.
 */
#include "devices/coll/coll_reduce.h"

#include <math.h>
#include <string.h>

#include "emu/num/num_minmax.h"
#include "emu/num/numerics.h"

#define COLL_BLOCK 512  /* narrow-float elements widened at a time */

typedef float coll_f32x16 __attribute__((vector_size(64)));

bool coll_dtype_ok(uint32_t dtype)
{
    return dtype < NUM_DT_COUNT && num_dtype_size(dtype) != 0;
}

bool coll_op_ok(uint32_t op)
{
    return op <= COLL_OP_FMA;
}

const char *coll_op_name(uint32_t op)
{
    static const char *const names[] = {"add", "max", "min", "fma"};
    return op <= COLL_OP_FMA ? names[op] : "?";
}

/* ---- fp32 ------------------------------------------------------------------- */

/* max (want_max) or min of two floats: -0 < +0, NaN gives the default NaN
 * (the collectives' rules of the one definition, emu/num/num_minmax.h). */
static float coll_fext(float a, float b, bool want_max)
{
    return want_max ? num_fmax(a, b, NUM_NAN_DEFAULT, NUM_ZERO_SIGNED)
                    : num_fmin(a, b, NUM_NAN_DEFAULT, NUM_ZERO_SIGNED);
}

static void coll_add_f32(float *out, const float *a, const float *b, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        coll_f32x16 va, vb;
        memcpy(&va, a + i, sizeof va);
        memcpy(&vb, b + i, sizeof vb);
        va += vb;
        memcpy(out + i, &va, sizeof va);
    }
    for (; i < n; i++)
        out[i] = a[i] + b[i];
}

static void coll_fold_f32(float *out, const float *a, const float *b, size_t n, uint32_t op)
{
    if (op == COLL_OP_ADD || op == COLL_OP_FMA) {
        coll_add_f32(out, a, b, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = coll_fext(a[i], b[i], op == COLL_OP_MAX);
}

/* Narrow floats: widen a block of each, fold in fp32, round back (RNE). */
static void coll_fold_narrow(uint8_t *out, const uint8_t *a, const uint8_t *b, size_t n,
                             uint32_t dtype, uint32_t op)
{
    float fa[COLL_BLOCK], fb[COLL_BLOCK];
    size_t es = num_dtype_size(dtype);
    for (size_t i = 0; i < n; i += COLL_BLOCK) {
        size_t k = n - i < COLL_BLOCK ? n - i : COLL_BLOCK;
        (void)num_load_f32(fa, a + i * es, dtype, 1, k);
        (void)num_load_f32(fb, b + i * es, dtype, 1, k);
        coll_fold_f32(fa, fa, fb, k, op);
        (void)num_store_f32(out + i * es, dtype, 1, fa, k, NULL);
    }
}

/* ---- integers ----------------------------------------------------------------- */

/* out = a op b over n elements of type T (U: its unsigned twin for wrapping adds). */
#define COLL_INT_FOLD(name, T, U)                                                      \
    static void name(void *out_, const void *a_, const void *b_, size_t n, uint32_t op) \
    {                                                                                  \
        T *out = out_;                                                                 \
        const T *a = a_, *b = b_;                                                      \
        switch (op) {                                                                  \
        case COLL_OP_MAX:                                                              \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = a[i] > b[i] ? a[i] : b[i];                                    \
            break;                                                                     \
        case COLL_OP_MIN:                                                              \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = a[i] < b[i] ? a[i] : b[i];                                    \
            break;                                                                     \
        default:                                                                       \
            for (size_t i = 0; i < n; i++)                                             \
                out[i] = (T)(U)((U)a[i] + (U)b[i]);                                    \
            break;                                                                     \
        }                                                                              \
    }

COLL_INT_FOLD(coll_fold_i8, int8_t, uint8_t)
COLL_INT_FOLD(coll_fold_u8, uint8_t, uint8_t)
COLL_INT_FOLD(coll_fold_i16, int16_t, uint16_t)
COLL_INT_FOLD(coll_fold_u16, uint16_t, uint16_t)
COLL_INT_FOLD(coll_fold_i32, int32_t, uint32_t)
COLL_INT_FOLD(coll_fold_u32, uint32_t, uint32_t)
COLL_INT_FOLD(coll_fold_i64, int64_t, uint64_t)
COLL_INT_FOLD(coll_fold_u64, uint64_t, uint64_t)

/* One pass over k fp32 inputs: each 16-lane vector summed in rank order in
 * registers, then stored once. */
static void coll_add_list_f32(float *out, const float *const *src, uint32_t k, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        coll_f32x16 acc, v;
        memcpy(&acc, src[0] + i, sizeof acc);
        for (uint32_t r = 1; r < k; r++) {
            memcpy(&v, src[r] + i, sizeof v);
            acc += v;
        }
        memcpy(out + i, &acc, sizeof acc);
    }
    for (; i < n; i++) {
        float acc = src[0][i];
        for (uint32_t r = 1; r < k; r++)
            acc += src[r][i];
        out[i] = acc;
    }
}

bool coll_fold_list_one_pass(uint32_t dtype, uint32_t op)
{
    return (dtype == NUM_DT_FP32 || dtype == NUM_DT_FP32R) &&
           (op == COLL_OP_ADD || op == COLL_OP_FMA);
}

void coll_fold_list(void *out, const void *const *src, uint32_t k, size_t n, uint32_t dtype,
                    uint32_t op)
{
    if (coll_fold_list_one_pass(dtype, op)) {
        coll_add_list_f32(out, (const float *const *)src, k, n);
        return;
    }
    size_t bytes = n * num_dtype_size(dtype);
    if (k == 1) {
        memcpy(out, src[0], bytes);
        return;
    }
    coll_fold(out, src[0], src[1], n, dtype, op);
    for (uint32_t r = 2; r < k; r++)
        coll_fold(out, out, src[r], n, dtype, op);
}

void coll_fold(void *out, const void *a, const void *b, size_t n, uint32_t dtype, uint32_t op)
{
    switch (dtype) {
    case NUM_DT_FP32:
    case NUM_DT_FP32R: coll_fold_f32(out, a, b, n, op); break;
    case NUM_DT_BF16:
    case NUM_DT_FP16:
    case NUM_DT_FP8_E3:
    case NUM_DT_FP8_E4:
    case NUM_DT_FP8_E5: coll_fold_narrow(out, a, b, n, dtype, op); break;
    case NUM_DT_INT8: coll_fold_i8(out, a, b, n, op); break;
    case NUM_DT_UINT8: coll_fold_u8(out, a, b, n, op); break;
    case NUM_DT_INT16: coll_fold_i16(out, a, b, n, op); break;
    case NUM_DT_UINT16: coll_fold_u16(out, a, b, n, op); break;
    case NUM_DT_INT32: coll_fold_i32(out, a, b, n, op); break;
    case NUM_DT_UINT32: coll_fold_u32(out, a, b, n, op); break;
    case NUM_DT_INT64: coll_fold_i64(out, a, b, n, op); break;
    case NUM_DT_UINT64: coll_fold_u64(out, a, b, n, op); break;
    default: break;
    }
}
