/*
 * pool_row.c: raw element-range moves, operand checks and comparisons
 * for the selection, gather, sort and statistics instructions (pool.h).
 */
#include "emu/engines/pool.h"

#include <string.h>


/* Copy the elements [lo, hi) of one run (n elements from p, stride bytes
 * apart, the first being element first of the row) to or from the packed
 * array buf, which holds the row's elements from lo on (es bytes each). */
static void pool_run_bytes(uint8_t *p, uint64_t n, int64_t stride, uint64_t first, uint8_t *buf,
                           uint64_t lo, uint64_t hi, uint32_t es, bool store)
{
    if (first >= hi || first + n <= lo)
        return;
    uint64_t a = first < lo ? lo - first : 0;
    uint64_t b = first + n > hi ? hi - first : n;
    uint8_t *packed = buf + (first + a - lo) * es;
    p += (int64_t)a * stride;
    if (stride == (int64_t)es) {
        if (store)
            memmove(p, packed, (b - a) * es);
        else
            memmove(packed, p, (b - a) * es);
        return;
    }
    for (uint64_t i = a; i < b; i++, p += stride, packed += es) {
        if (store)
            memcpy(p, packed, es);
        else
            memcpy(packed, p, es);
    }
}

void pool_range_gather(const struct ap_view *v, uint32_t r, uint64_t first, uint64_t n,
                       void *dst)
{
    AP_FOR_RUNS(v, r, pool_run_bytes(run_ptr, run_n, run_step, run_first, dst, first, first + n,
                                     v->esize, false));
}

void pool_range_scatter(const struct ap_view *v, uint32_t r, uint64_t first, uint64_t n,
                        const void *src)
{
    uint8_t *buf = (uint8_t *)(uintptr_t)src;
    AP_FOR_RUNS(v, r, pool_run_bytes(run_ptr, run_n, run_step, run_first, buf, first, first + n,
                                     v->esize, true));
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
