/*
 * pool_row.c: raw and integer row moves, operand checks and comparisons
 * for the selection, gather, sort and statistics instructions (pool.h).
 */
#include "emu/engines/pool.h"

#include <string.h>

#include "emu/num/numerics.h"

/* What one walk over the runs of a row does with each run. */
struct pool_walk {
    const struct ap_view *v;  /* the row's view */
    uint8_t *buf;             /* packed side (bytes or int64) */
    uint64_t lo;              /* first element wanted */
    uint64_t hi;              /* one past the last element wanted */
    bool store;               /* packed -> memory (else memory -> packed) */
};

typedef void (*pool_run_fn)(struct pool_walk *w, uint8_t *p, uint64_t n, int64_t stride,
                            uint64_t first);

/* Call fn on each innermost run of row r: address, elements, byte stride,
 * index of its first element in the row. */
static void pool_row_runs(struct pool_walk *w, uint32_t r, pool_run_fn fn)
{
    const struct ap_view *v = w->v;
    uint32_t in = v->ndims - 1;
    uint32_t idx[ISA_MAX_DIMS] = {0};
    uint64_t n = v->count[in], runs = v->elems / n;
    for (uint64_t k = 0; k < runs; k++) {
        uint64_t first = k * n;
        if (first < w->hi && first + n > w->lo) {
            int64_t off = 0;
            for (uint32_t d = 0; d < in; d++)
                off += (int64_t)idx[d] * v->stride[d];
            fn(w, ap_row_ptr(v, r) + off, n, v->stride[in], first);
        }
        for (int d = (int)in - 1; d >= 0; d--) {
            if (++idx[d] < v->count[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Raw bytes of the wanted part of one run. */
static void pool_run_bytes(struct pool_walk *w, uint8_t *p, uint64_t n, int64_t stride,
                           uint64_t first)
{
    uint32_t es = w->v->esize;
    uint64_t a = first < w->lo ? w->lo - first : 0;
    uint64_t b = first + n > w->hi ? w->hi - first : n;
    uint8_t *packed = w->buf + (first + a - w->lo) * es;
    p += (int64_t)a * stride;
    if (stride == (int64_t)es) {
        if (w->store)
            memmove(p, packed, (b - a) * es);
        else
            memmove(packed, p, (b - a) * es);
        return;
    }
    for (uint64_t i = a; i < b; i++, p += stride, packed += es) {
        if (w->store)
            memcpy(p, packed, es);
        else
            memcpy(packed, p, es);
    }
}

void pool_range_gather(const struct ap_view *v, uint32_t r, uint64_t first, uint64_t n,
                       void *dst)
{
    struct pool_walk w = {v, dst, first, first + n, false};
    pool_row_runs(&w, r, pool_run_bytes);
}

void pool_range_scatter(const struct ap_view *v, uint32_t r, uint64_t first, uint64_t n,
                        const void *src)
{
    struct pool_walk w = {v, (uint8_t *)(uintptr_t)src, first, first + n, true};
    pool_row_runs(&w, r, pool_run_bytes);
}

void pool_row_gather(const struct ap_view *v, uint32_t r, void *dst)
{
    pool_range_gather(v, r, 0, v->elems, dst);
}

void pool_row_scatter(const struct ap_view *v, uint32_t r, const void *src)
{
    pool_range_scatter(v, r, 0, v->elems, src);
}

/* One element of integer dtype at p as int64. */
static int64_t pool_int_get(uint32_t dtype, const uint8_t *p)
{
    switch (dtype) {
    case ISA_DT_I8: return (int8_t)p[0];
    case ISA_DT_U8: return p[0];
    case ISA_DT_I16: { int16_t x; memcpy(&x, p, 2); return x; }
    case ISA_DT_U16: { uint16_t x; memcpy(&x, p, 2); return x; }
    case ISA_DT_I32: { int32_t x; memcpy(&x, p, 4); return x; }
    case ISA_DT_U32: { uint32_t x; memcpy(&x, p, 4); return x; }
    default: { int64_t x; memcpy(&x, p, 8); return x; }
    }
}

static void pool_run_load_i64(struct pool_walk *w, uint8_t *p, uint64_t n, int64_t stride,
                              uint64_t first)
{
    int64_t *out = (int64_t *)(void *)w->buf + first;
    uint32_t dt = w->v->dtype;
    bool ints = pool_dtype_is_int(dt);
    for (uint64_t i = 0; i < n; i++, p += stride)
        out[i] = ints ? pool_int_get(dt, p) : num_f32_to_int(NUM_DT_INT64, num_to_f32(dt, p));
}

static void pool_run_store_i64(struct pool_walk *w, uint8_t *p, uint64_t n, int64_t stride,
                               uint64_t first)
{
    const int64_t *in = (const int64_t *)(void *)w->buf + first;
    uint32_t dt = w->v->dtype, es = w->v->esize;
    bool ints = pool_dtype_is_int(dt);
    for (uint64_t i = 0; i < n; i++, p += stride) {
        uint64_t bits = (uint64_t)in[i]; /* little endian: the low bytes first */
        if (ints)
            memcpy(p, &bits, es);
        else
            (void)num_from_f32(dt, p, (float)in[i], NULL, 0);
    }
}

void pool_row_load_i64(const struct ap_view *v, uint32_t r, int64_t *dst)
{
    struct pool_walk w = {v, (uint8_t *)dst, 0, v->elems, false};
    pool_row_runs(&w, r, pool_run_load_i64);
}

void pool_row_store_i64(const struct ap_view *v, uint32_t r, const int64_t *src)
{
    struct pool_walk w = {v, (uint8_t *)(uintptr_t)src, 0, v->elems, true};
    pool_row_runs(&w, r, pool_run_store_i64);
}

/* ---- operands ------------------------------------------------------------------- */

emu_status pool_bind1(struct isa_exec_ctx *ctx, unsigned slot, struct ap_view *v)
{
    emu_status st = ap_bind(ctx, slot, v);
    if (st == EMU_OK && v->mem == ISA_MEM_HBM)
        st = core_fail(ctx, POOL_ERR, "operand %u is in HBM; this op reads and writes only "
                       "SBUF and PSUM", slot);
    return st;
}

emu_status pool_bind(struct isa_exec_ctx *ctx, const unsigned *slots, unsigned n,
                     struct ap_view *v)
{
    for (unsigned i = 0; i < n; i++) {
        emu_status st = pool_bind1(ctx, slots[i], &v[i]);
        if (st != EMU_OK)
            return st;
    }
    return EMU_OK;
}

emu_status pool_need_shape(struct isa_exec_ctx *ctx, const char *name, const struct ap_view *v,
                           uint32_t rows, uint64_t elems)
{
    if (v->rows == rows && v->elems == elems)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s must be [%u, %llu]; it is [%u, %llu]", name, rows,
                     (unsigned long long)elems, v->rows, (unsigned long long)v->elems);
}

emu_status pool_need_dtype(struct isa_exec_ctx *ctx, const char *name, const struct ap_view *v,
                           uint32_t dtypes, const char *what)
{
    if (v->dtype < 32 && (dtypes & POOL_DT(v->dtype)) != 0)
        return EMU_OK;
    const char *dn = isa_dtype_name(v->dtype);
    return core_fail(ctx, POOL_ERR, "%s must be %s; it is %s", name, what, dn ? dn : "?");
}

emu_status pool_need_groups(struct isa_exec_ctx *ctx, const char *name, const struct ap_view *v,
                            uint32_t group)
{
    if (v->rows > 0 && v->rows % group == 0)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s has %u partitions; it needs a multiple of %u", name,
                     v->rows, group);
}

emu_status pool_need_gen(struct isa_exec_ctx *ctx, const char *op, uint32_t gen)
{
    if (ctx->core->gen >= gen)
        return EMU_OK;
    return core_fail(ctx, POOL_ERR, "%s needs NeuronCore-v%u or newer; this core is "
                     "NeuronCore-v%u", op, gen, ctx->core->gen);
}

emu_status pool_scalar_bind(struct isa_exec_ctx *ctx, unsigned slot, unsigned fslot,
                            uint32_t rows, const char *what, struct pool_scalar *s)
{
    memset(s, 0, sizeof *s);
    s->imm = ctx->insn->fimm[fslot];
    s->ap = ap_present(ctx->insn, slot);
    if (!s->ap)
        return EMU_OK;
    emu_status st = pool_bind1(ctx, slot, &s->v);
    return st != EMU_OK ? st : pool_need_shape(ctx, what, &s->v, rows, 1);
}

float pool_scalar_f32(const struct pool_scalar *s, uint32_t r)
{
    float x = s->imm;
    if (s->ap)
        ap_row_load(&s->v, r, &x);
    return x;
}

/* ---- comparisons ---------------------------------------------------------------- */

bool pool_is_cmp(unsigned op)
{
    return op >= ISA_ALU_equal && op <= ISA_ALU_less_equal;
}

/* The ALU's comparison operators, each once: name and C operator. */
#define POOL_CMP_OPS(X) \
    X(equal, ==) X(not_equal, !=) X(greater, >) X(greater_equal, >=) X(less, <) X(less_equal, <=)
#define POOL_CMP_CASE(name, cop) case ISA_ALU_##name: return a cop b;

bool pool_cmp_f32(unsigned op, float a, float b)
{
    switch (op) {
    POOL_CMP_OPS(POOL_CMP_CASE)
    default: return false;
    }
}

bool pool_cmp_i64(unsigned op, int64_t a, int64_t b)
{
    switch (op) {
    POOL_CMP_OPS(POOL_CMP_CASE)
    default: return false;
    }
}
