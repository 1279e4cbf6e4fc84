/*
 * dve_row.c: row movement for the Vector/GpSimd semantics beyond ap.h's
 * fp32 rows: integer rows as int64, raw element bytes, scalar operands
 * (see dve.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "emu/engines/dve.h"
#include "emu/isa/isa.h"

/* ---- dtypes ------------------------------------------------------------------ */

unsigned dve_dtype_bits(uint32_t dtype)
{
    return (unsigned)isa_dtype_size(dtype) * 8u;
}

bool dve_f32_is_int(float f)
{
    return f == truncf(f) && fabsf(f) < 9.2e18f;
}

/* ---- walking a row ------------------------------------------------------------- */

/* Read n elements of type T at p (stride bytes apart) into dst as int64. */
#define DVE_WIDEN(T, dst, p, stride, n)                                           \
    for (size_t i = 0; i < (n); i++) {                                            \
        T x_;                                                                     \
        memcpy(&x_, (p) + (int64_t)i * (stride), sizeof x_);                      \
        (dst)[i] = (int64_t)x_;                                                   \
    }

#define DVE_NARROW(T, p, stride, src, n)                                          \
    for (size_t i = 0; i < (n); i++) {                                            \
        T x_ = (T)(uint64_t)(src)[i];                                             \
        memcpy((p) + (int64_t)i * (stride), &x_, sizeof x_);                      \
    }

static void dve_widen(int64_t *dst, const uint8_t *p, int64_t stride, uint32_t dt, size_t n)
{
    switch (dt) {
    case ISA_DT_I8: DVE_WIDEN(int8_t, dst, p, stride, n); break;
    case ISA_DT_U8: DVE_WIDEN(uint8_t, dst, p, stride, n); break;
    case ISA_DT_I16: DVE_WIDEN(int16_t, dst, p, stride, n); break;
    case ISA_DT_U16: DVE_WIDEN(uint16_t, dst, p, stride, n); break;
    case ISA_DT_I32: DVE_WIDEN(int32_t, dst, p, stride, n); break;
    case ISA_DT_U32: DVE_WIDEN(uint32_t, dst, p, stride, n); break;
    case ISA_DT_I64: DVE_WIDEN(int64_t, dst, p, stride, n); break;
    case ISA_DT_U64: DVE_WIDEN(uint64_t, dst, p, stride, n); break;
    default:
        for (size_t i = 0; i < n; i++)
            dst[i] = num_f32_to_int(ISA_DT_I64, num_to_f32(dt, p + (int64_t)i * stride));
    }
}

static void dve_narrow(uint8_t *p, int64_t stride, uint32_t dt, const int64_t *src, size_t n)
{
    switch (dt) {
    case ISA_DT_I8:
    case ISA_DT_U8: DVE_NARROW(uint8_t, p, stride, src, n); break;
    case ISA_DT_I16:
    case ISA_DT_U16: DVE_NARROW(uint16_t, p, stride, src, n); break;
    case ISA_DT_I32:
    case ISA_DT_U32: DVE_NARROW(uint32_t, p, stride, src, n); break;
    case ISA_DT_I64:
    case ISA_DT_U64: DVE_NARROW(uint64_t, p, stride, src, n); break;
    default:
        for (size_t i = 0; i < n; i++)
            (void)num_from_f32(dt, p + (int64_t)i * stride, (float)src[i], NULL, 0);
    }
}

void dve_row_load_i64(const struct ap_view *v, uint32_t r, int64_t *dst)
{
    AP_FOR_RUNS(v, r, dve_widen(dst + run_first, run_ptr, run_step, v->dtype, run_n));
}

void dve_row_store_i64(const struct ap_view *v, uint32_t r, const int64_t *src)
{
    AP_FOR_RUNS(v, r, dve_narrow(run_ptr, run_step, v->dtype, src + run_first, run_n));
}

/* Copy n elements of size es between a strided run and a packed array. */
static void dve_move(uint8_t *dst, int64_t dstride, const uint8_t *src, int64_t sstride,
                     size_t es, size_t n)
{
    if (dstride == (int64_t)es && sstride == (int64_t)es) {
        memmove(dst, src, es * n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        memmove(dst + (int64_t)i * dstride, src + (int64_t)i * sstride, es);
}

void dve_row_gather(const struct ap_view *v, uint32_t r, void *dst)
{
    uint8_t *d = dst;
    size_t es = v->esize;
    AP_FOR_RUNS(v, r, dve_move(d + run_first * es, (int64_t)es, run_ptr, run_step, es, run_n));
}

void dve_row_scatter(const struct ap_view *v, uint32_t r, const void *src)
{
    const uint8_t *s = src;
    size_t es = v->esize;
    AP_FOR_RUNS(v, r, dve_move(run_ptr, run_step, s + run_first * es, (int64_t)es, es, run_n));
}

const float *dve_in_f32_load(struct isa_exec_ctx *ctx, unsigned slot, const struct ap_view *v,
                             uint32_t r)
{
    float *scratch = core_scratch(ctx, slot);
    ap_row_load(v, r, scratch);
    return scratch;
}

/* ---- scalar operands ----------------------------------------------------------- */

emu_status dve_scalar_bind_ap(struct isa_exec_ctx *ctx, unsigned slot, uint32_t rows,
                              const char *what, struct dve_scalar *s)
{
    emu_status st = ap_bind(ctx, slot, &s->v);
    if (st != EMU_OK)
        return st;
    if (s->v.rows != rows || s->v.elems != 1)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s must be a scalar or a [%u, 1] tile; it is [%u, %llu]", what, rows,
                         s->v.rows, (unsigned long long)s->v.elems);
    return EMU_OK;
}

float dve_scalar_f32(const struct dve_scalar *s, uint32_t r)
{
    return s->ap ? num_to_f32(s->v.dtype, ap_row_ptr(&s->v, r)) : s->imm;
}

int64_t dve_scalar_i64(const struct dve_scalar *s, uint32_t r)
{
    int64_t x;
    if (!s->ap)
        return (int64_t)s->imm;
    dve_widen(&x, ap_row_ptr(&s->v, r), 0, s->v.dtype, 1);
    return x;
}

bool dve_scalar_is_int(const struct dve_scalar *s)
{
    return s->ap ? dve_dtype_is_int(s->v.dtype) : dve_f32_is_int(s->imm);
}
