/*
 * act_rng.c: semantics of the pseudo-random-number instructions: rng,
 * rand2, dropout, set_rng_seed, rand_set_state and rand_get_state.
 *
 * The Vector and GpSimd engines hold XORWOW generators (Marsaglia's
 * xorshift with a Weyl counter, as the Trainium3 guide names it) per
 * compute lane: CORE_XW_STATES on the Vector engine, one on GpSimd, each
 * six uint32 words x0..x4, d (emu/core/core.h). A step shifts
 * t = x0 ^ (x0 >> 2) in: x0..x3 = x1..x4, x4 = x4 ^ (x4 << 4) ^ t ^ (t << 1),
 * d += 362437, and yields x4 + d. An instruction that draws takes one value
 * per element: element i of row r comes from the generators of the row's
 * lane (its partition), generator i mod the engine's state count, in
 * element order. An engine's generators are seeded from the execution's
 * seed when it first uses them (core_xorwow), so runs repeat bit for bit. rand_get_state / rand_set_state move a
 * lane's states to and from a row of 6 (GpSimd) or 24 (Vector) uint32;
 * set_rng_seed(v) re-seeds every Vector generator from v
 * (core_xorwow_seed).
 */
#include <inttypes.h>
#include <string.h>

#include "emu/engines/act_int.h"
#include "emu/isa/isa_args.h"

/* No fused multiply-add anywhere: clang contracts a * b + c by default
 * (GCC does not under -std=c17), which would change the bits by ISA. */
#if defined(__clang__)
#pragma clang fp contract(off)
#endif

/* One XORWOW step of state w (6 words): the next 32-bit output. */
static inline uint32_t xw_next(uint32_t *w)
{
    uint32_t t = w[0] ^ (w[0] >> 2);
    w[0] = w[1];
    w[1] = w[2];
    w[2] = w[3];
    w[3] = w[4];
    w[4] = (w[4] ^ (w[4] << 4)) ^ (t ^ (t << 1));
    w[5] += 362437u;
    return w[4] + w[5];
}

/* The generators of the calling engine (Vector or GpSimd). */
struct xw_gen {
    uint32_t (*lanes)[CORE_XW_STATES][CORE_XW_WORDS]; /* [partition][state][word] */
    uint32_t nstates;                                 /* states per lane in use */
};

static struct xw_gen rng_gen(struct isa_exec_ctx *ctx)
{
    bool dve = ctx->engine == ISA_ENG_DVE;
    return (struct xw_gen){core_xorwow(ctx->core, dve ? 0 : 1), dve ? CORE_XW_STATES : 1u};
}

/* The compute lane (partition) of row r of operand slot. */
static uint32_t rng_lane(const struct isa_exec_ctx *ctx, unsigned slot, const struct ap_view *v,
                         uint32_t r)
{
    int64_t p = (int64_t)v->first_part + (int64_t)r * ctx->insn->ap[slot].part_step;
    return (uint32_t)p & (ISA_NUM_PARTITIONS - 1u);
}

/* n draws of one lane into out, element i from state i mod nstates. */
static void rng_draw(const struct xw_gen *g, uint32_t lane, uint32_t *out, uint64_t n)
{
    uint32_t(*st)[CORE_XW_WORDS] = g->lanes[lane];
    for (uint64_t i = 0; i < n; i++)
        out[i] = xw_next(st[i % g->nstates]);
}

/* A uniform fp32 in [0, 1) from the top 24 bits of a draw. */
static float rng_unit(uint32_t bits)
{
    return (float)(bits >> 8) * 0x1p-24f;
}

static bool rng_is_int32(uint32_t dtype)
{
    return dtype == ISA_DT_U32 || dtype == ISA_DT_I32;
}

/* Row r's draws into the calling engine's second scratch row (elems must
 * fit it; callers check through ap_bind's row limit). */
static const uint32_t *rng_row(struct isa_exec_ctx *ctx, unsigned slot, const struct ap_view *v,
                               uint32_t r)
{
    uint32_t *bits = (uint32_t *)core_scratch(ctx, 1);
    struct xw_gen g = rng_gen(ctx);
    rng_draw(&g, rng_lane(ctx, slot, v, r), bits, v->elems);
    return bits;
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
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(rng, dst), &dst);
    if (st != EMU_OK)
        return st;
    if (!rng_dtype_ok(dst.dtype))
        return core_fail(ctx, EMU_EXEC_ERR,
                         "rng: dst must be int8, uint8, int16, uint16, int32 or uint32, not %s",
                         isa_dtype_name(dst.dtype) ? isa_dtype_name(dst.dtype) : "?");
    for (uint32_t r = 0; r < dst.rows; r++) {
        const uint32_t *bits = rng_row(ctx, ISA_AP_SLOT(rng, dst), &dst, r);
        ACT_EACH_ELEM(&dst, r, p, k, memcpy(p, &bits[k], dst.esize)); /* the low bytes */
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
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(rand2, dst), &dst);
    if (st == EMU_OK)
        st = act_check_row(ctx, &dst);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(rand2, min), ISA_F32_SLOT(rand2, min), dst.rows,
                             "min", &lo);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(rand2, max), ISA_F32_SLOT(rand2, max), dst.rows,
                             "max", &hi);
    if (st != EMU_OK)
        return st;
    float *row = core_scratch(ctx, 0);
    for (uint32_t r = 0; r < dst.rows; r++) {
        float a = act_scalar_at(&lo, r), span = act_scalar_at(&hi, r) - a;
        const uint32_t *bits = rng_row(ctx, ISA_AP_SLOT(rand2, dst), &dst, r);
        for (uint64_t i = 0; i < dst.elems; i++)
            row[i] = a + rng_unit(bits[i]) * span;
        ap_row_store(&dst, r, row);
    }
    return EMU_OK;
}

/* ---- dropout ------------------------------------------------------------------ */

/* Row r of data into dst with the elements whose draw u < p zeroed: a raw
 * copy through scratch (same dtype), so integers keep every bit. */
static void dropout_row_raw(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                            const struct ap_view *data, uint32_t r, float p,
                            const uint32_t *bits)
{
    uint8_t *buf = (uint8_t *)core_scratch(ctx, 0);
    uint32_t es = data->esize;
    ACT_EACH_ELEM(data, r, q, k, memcpy(buf + k * es, q, es));
    for (uint64_t k = 0; k < data->elems; k++)
        if (rng_unit(bits[k]) < p)
            memset(buf + k * es, 0, es);
    ACT_EACH_ELEM(dst, r, q, k, memcpy(q, buf + k * es, es));
}

/* The same through fp32 when dst and data differ in dtype. */
static void dropout_row_f32(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                            const struct ap_view *data, uint32_t r, float p,
                            const uint32_t *bits)
{
    float *row = core_scratch(ctx, 0);
    ap_row_load(data, r, row);
    for (uint64_t k = 0; k < data->elems; k++)
        if (rng_unit(bits[k]) < p)
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
    emu_status st = act_bind_pair(ctx, ISA_AP_SLOT(dropout, dst), ISA_AP_SLOT(dropout, data),
                                  &dst, &data);
    if (st == EMU_OK)
        st = act_scalar_bind(ctx, ISA_AP_SLOT(dropout, prob), ISA_F32_SLOT(dropout, prob),
                             data.rows, "prob", &prob);
    if (st != EMU_OK)
        return st;
    bool raw = dst.dtype == data.dtype;
    if (raw && data.elems * data.esize > (uint64_t)CORE_SCRATCH_ELEMS * sizeof(float))
        return core_fail(ctx, EMU_EXEC_ERR,
                         "dropout: %" PRIu64 " elements of %u bytes per partition exceed the "
                         "engine's %zu-byte row buffer",
                         data.elems, data.esize, (size_t)CORE_SCRATCH_ELEMS * sizeof(float));
    for (uint32_t r = 0; r < data.rows; r++) {
        float p = act_scalar_at(&prob, r);
        const uint32_t *bits = rng_row(ctx, ISA_AP_SLOT(dropout, data), &data, r);
        if (raw)
            dropout_row_raw(ctx, &dst, &data, r, p, bits);
        else
            dropout_row_f32(ctx, &dst, &data, r, p, bits);
    }
    return EMU_OK;
}

/* ---- generator state ------------------------------------------------------------ */

/* Bind a state operand: 32-bit integer elements, exactly 6 words per
 * generator of the engine in each row. */
static emu_status rng_bind_state(struct isa_exec_ctx *ctx, unsigned slot, struct ap_view *v)
{
    emu_status st = ap_bind(ctx, slot, v);
    if (st != EMU_OK)
        return st;
    uint64_t want = (uint64_t)rng_gen(ctx).nstates * CORE_XW_WORDS;
    if (!rng_is_int32(v->dtype) || v->elems != want)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "%s: the state operand must be uint32 with %" PRIu64 " values per "
                         "partition on the %s engine (%s x %" PRIu64 " given)",
                         act_op_name(ctx), want, isa_engine_name(ctx->engine),
                         isa_dtype_name(v->dtype) ? isa_dtype_name(v->dtype) : "?", v->elems);
    return EMU_OK;
}

/* Row r of dst = the lane's states, state-major (x0..x4, d each). */
emu_status isa_exec_rand_get_state(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst;
    emu_status st = rng_bind_state(ctx, ISA_AP_SLOT(rand_get_state, dst), &dst);
    if (st != EMU_OK)
        return st;
    struct xw_gen g = rng_gen(ctx);
    for (uint32_t r = 0; r < dst.rows; r++) {
        uint32_t lane = rng_lane(ctx, ISA_AP_SLOT(rand_get_state, dst), &dst, r);
        const uint32_t *w = &g.lanes[lane][0][0];
        ACT_EACH_ELEM(&dst, r, p, k, memcpy(p, &w[k], 4));
    }
    return EMU_OK;
}

/* The lane's states = row r of src, in rand_get_state's layout. */
emu_status isa_exec_rand_set_state(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view src;
    emu_status st = rng_bind_state(ctx, ISA_AP_SLOT(rand_set_state, src_seeds), &src);
    if (st != EMU_OK)
        return st;
    struct xw_gen g = rng_gen(ctx);
    for (uint32_t r = 0; r < src.rows; r++) {
        uint32_t lane = rng_lane(ctx, ISA_AP_SLOT(rand_set_state, src_seeds), &src, r);
        uint32_t *w = &g.lanes[lane][0][0];
        ACT_EACH_ELEM(&src, r, p, k, memcpy(&w[k], p, 4));
    }
    return EMU_OK;
}

emu_status isa_exec_set_rng_seed(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view src;
    emu_status st = ap_bind(ctx, ISA_AP_SLOT(set_rng_seed, src_seeds), &src);
    if (st != EMU_OK)
        return st;
    if (src.esize != 4 || src.rows != 1 || src.elems != 1)
        return core_fail(ctx, EMU_EXEC_ERR,
                         "set_rng_seed: src_seeds must be one 32-bit value ([1, 1]), not %s "
                         "[%u, %" PRIu64 "]",
                         isa_dtype_name(src.dtype) ? isa_dtype_name(src.dtype) : "?", src.rows,
                         src.elems);
    uint32_t v;
    memcpy(&v, ap_row_ptr(&src, 0), 4);
    core_xorwow_seed(ctx->core, 0, v);
    return EMU_OK;
}
