/*
 * act_rng.c: semantics of the pseudo-random-number instructions: rng,
 * rand2, dropout, set_rng_seed, rand_set_state and rand_get_state.
 *
 * Each engine draws from its own counter-based stream: draw number c of
 * engine e is num_rng_u64(rng_seed ^ (e + 1) << 56, c), where rng_seed is
 * the core's seed and c counts up from core->rng_counter[e] (zero at the
 * start of every execution, so runs repeat bit for bit). An instruction
 * that draws takes one value per element, in row-major order (row r,
 * element i of the pattern: draw counter + r * elems + i), and advances the
 * counter by rows * elems.
 *
 * The state of an engine's generator is its 64-bit counter.
 * rand_get_state writes it into row 0 of dst as two 32-bit words (low,
 * high) and zeros everywhere else. rand_set_state reads row 0's first two
 * words back as the counter, then mixes every other nonzero word w at
 * position p (row * elems + index) in with counter ^= num_rng_u64(w, p),
 * so any seed material changes the stream and a saved state restores it
 * exactly. set_rng_seed(v) sets the Vector Engine's counter to v << 32.
 */
#include <inttypes.h>
#include <string.h>

#include "emu/engines/act_int.h"

/* No fused multiply-add anywhere: clang contracts a * b + c by default
 * (GCC does not under -std=c17), which would change the bits by ISA. */
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

/* The stream key of the calling engine. */
static uint64_t rng_key(const struct isa_exec_ctx *ctx)
{
    return ctx->core->rng_seed ^ ((uint64_t)(ctx->engine + 1u) << 56);
}

/* Take rows * elems draws: returns the counter of the first. */
static uint64_t rng_take(struct isa_exec_ctx *ctx, uint32_t rows, uint64_t elems)
{
    uint64_t *c = &ctx->core->rng_counter[ctx->engine];
    uint64_t first = *c;
    *c += (uint64_t)rows * elems;
    return first;
}

/* A uniform fp32 in [0, 1) with 24 random bits. */
static float rng_unit(uint64_t bits)
{
    return (float)(bits >> 40) * 0x1p-24f;
}

static bool rng_is_int32(uint32_t dtype)
{
    return dtype == ISA_DT_U32 || dtype == ISA_DT_I32;
}

/* ---- rng ------------------------------------------------------------------ */

static bool rng_dtype_ok(uint32_t dtype)
{
    return dtype == ISA_DT_I8 || dtype == ISA_DT_U8 || dtype == ISA_DT_I16 ||
           dtype == ISA_DT_U16 || rng_is_int32(dtype);
}

/* dst = 32 random bits per element, truncated to the dtype's low bits. */
emu_status isa_exec_rng(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst;
    emu_status st = ap_bind(ctx, 0, &dst);
    if (st != EMU_OK)
        return st;
    if (!rng_dtype_ok(dst.dtype))
        return core_fail(ctx, EMU_EXEC_ERR,
                         "rng: dst must be int8, uint8, int16, uint16, int32 or uint32, not %s",
                         isa_dtype_name(dst.dtype) ? isa_dtype_name(dst.dtype) : "?");
    uint64_t key = rng_key(ctx), first = rng_take(ctx, dst.rows, dst.elems);
    for (uint32_t r = 0; r < dst.rows; r++) {
        uint64_t base = first + (uint64_t)r * dst.elems;
        ACT_EACH_ELEM(&dst, r, p, k, {
            uint32_t bits = (uint32_t)num_rng_u64(key, base + k);
            memcpy(p, &bits, dst.esize); /* little-endian: the low bytes */
        });
    }
    return EMU_OK;
}

/* ---- rand2 ------------------------------------------------------------------ */

/* dst = min + u * (max - min), u uniform in [0, 1), in fp32, stored RNE. */
emu_status isa_exec_rand2(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst;
    struct act_scalar lo, hi;
    emu_status st = ap_bind(ctx, 0, &dst);
    if (st == EMU_OK)
        st = act_check_row(ctx, &dst);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, 1, 0, dst.rows, "min", &lo);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, 2, 1, dst.rows, "max", &hi);
    if (st != EMU_OK)
        return st;
    uint64_t key = rng_key(ctx), first = rng_take(ctx, dst.rows, dst.elems);
    float *row = core_scratch(ctx, 0);
    for (uint32_t r = 0; r < dst.rows; r++) {
        float a = act_scalar_at(&lo, r), span = act_scalar_at(&hi, r) - a;
        uint64_t base = first + (uint64_t)r * dst.elems;
        for (uint64_t i = 0; i < dst.elems; i++)
            row[i] = a + rng_unit(num_rng_u64(key, base + i)) * span;
        ap_row_store(&dst, r, row);
    }
    return EMU_OK;
}

/* ---- dropout ------------------------------------------------------------------ */

/* Row r of data into dst with the elements whose draw u < p zeroed: a raw
 * copy through scratch (same dtype), so integers keep every bit. */
static void dropout_row_raw(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                            const struct ap_view *data, uint32_t r, float p, uint64_t key,
                            uint64_t base)
{
    uint8_t *buf = (uint8_t *)core_scratch(ctx, 0);
    uint32_t es = data->esize;
    ACT_EACH_ELEM(data, r, q, k, memcpy(buf + k * es, q, es));
    for (uint64_t k = 0; k < data->elems; k++)
        if (rng_unit(num_rng_u64(key, base + k)) < p)
            memset(buf + k * es, 0, es);
    ACT_EACH_ELEM(dst, r, q, k, memcpy(q, buf + k * es, es));
}

/* The same through fp32 when dst and data differ in dtype. */
static void dropout_row_f32(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                            const struct ap_view *data, uint32_t r, float p, uint64_t key,
                            uint64_t base)
{
    float *row = core_scratch(ctx, 0);
    ap_row_load(data, r, row);
    for (uint64_t k = 0; k < data->elems; k++)
        if (rng_unit(num_rng_u64(key, base + k)) < p)
            row[k] = 0.0f;
    ap_row_store(dst, r, row);
}

/* dst = data with each element replaced by zero with probability prob (no
 * rescaling of the kept ones); prob is a scalar or one value per row. */
emu_status isa_exec_dropout(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst, data;
    struct act_scalar prob;
    emu_status st = act_bind_pair(ctx, 0, 1, &dst, &data);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, 2, 0, data.rows, "prob", &prob);
    if (st != EMU_OK)
        return st;
    bool raw = dst.dtype == data.dtype;
    if (raw && data.elems * data.esize > (uint64_t)CORE_SCRATCH_ELEMS * sizeof(float))
        return core_fail(ctx, EMU_EXEC_ERR,
                         "dropout: %" PRIu64 " elements of %u bytes per partition exceed the "
                         "engine's %zu-byte row buffer",
                         data.elems, data.esize, (size_t)CORE_SCRATCH_ELEMS * sizeof(float));
    uint64_t key = rng_key(ctx), first = rng_take(ctx, data.rows, data.elems);
    for (uint32_t r = 0; r < data.rows; r++) {
        float p = act_scalar_at(&prob, r);
        uint64_t base = first + (uint64_t)r * data.elems;
        if (raw)
            dropout_row_raw(ctx, &dst, &data, r, p, key, base);
        else
            dropout_row_f32(ctx, &dst, &data, r, p, key, base);
    }
    return EMU_OK;
}

/* ---- generator state ------------------------------------------------------------ */

/* Bind a state operand: 32-bit integer elements, at least min_elems per row. */
static emu_status rng_bind_state(struct isa_exec_ctx *ctx, unsigned slot, uint64_t min_elems,
                                 struct ap_view *v)
{
    emu_status st = ap_bind(ctx, slot, v);
    if (st != EMU_OK)
        return st;
    if (v->esize != 4 || v->elems < min_elems)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: the state operand must hold at least %" PRIu64 " 32-bit values "
                         "per partition (%s x %" PRIu64 " given)",
                         act_op_name(ctx), min_elems,
                         isa_dtype_name(v->dtype) ? isa_dtype_name(v->dtype) : "?", v->elems);
    return EMU_OK;
}

emu_status isa_exec_rand_get_state(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst;
    emu_status st = rng_bind_state(ctx, 0, 2, &dst);
    if (st != EMU_OK)
        return st;
    uint64_t c = ctx->core->rng_counter[ctx->engine];
    for (uint32_t r = 0; r < dst.rows; r++)
        ACT_EACH_ELEM(&dst, r, p, k, {
            uint32_t w = r == 0 && k < 2 ? (uint32_t)(c >> (32 * k)) : 0u;
            memcpy(p, &w, 4);
        });
    return EMU_OK;
}

emu_status isa_exec_rand_set_state(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view src;
    emu_status st = rng_bind_state(ctx, 1, 1, &src);
    if (st != EMU_OK)
        return st;
    uint64_t c = 0, mix = 0;
    for (uint32_t r = 0; r < src.rows; r++)
        ACT_EACH_ELEM(&src, r, p, k, {
            uint32_t w;
            memcpy(&w, p, 4);
            if (r == 0 && k < 2)
                c |= (uint64_t)w << (32 * k);
            else if (w != 0)
                mix ^= num_rng_u64(w, (uint64_t)r * src.elems + k);
        });
    ctx->core->rng_counter[ctx->engine] = c ^ mix;
    return EMU_OK;
}

emu_status isa_exec_set_rng_seed(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view src;
    emu_status st = rng_bind_state(ctx, 1, 1, &src);
    if (st != EMU_OK)
        return st;
    if (src.rows != 1 || src.elems != 1)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "set_rng_seed: src_seeds must be [1, 1], not [%u, %" PRIu64 "]",
                         src.rows, src.elems);
    uint32_t v;
    memcpy(&v, ap_row_ptr(&src, 0), 4);
    ctx->core->rng_counter[ctx->engine] = (uint64_t)v << 32;
    return EMU_OK;
}
