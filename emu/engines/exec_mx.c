/*
 * exec_mx.c: the NeuronCore-v4 microscaling (MX) instructions:
 * quantize_mx (Vector engine) and nc_matmul_mx (Tensor engine), after the
 * NKI ISA reference and nki/deep-dives/mxfp-matmul.rst (docs/isa.md).
 *
 * Layout shared by both. Data live in SBUF as packed x4 elements: element
 * f of partition p holds four values (lane j = 0..3). One MX group is 8
 * partitions x one x4 column (32 values) and shares one float8_e8m0fnu
 * scale (uint8 accepted). Scales sit in the quadrant (32 partitions) of
 * their data: the 4 groups of quadrant q use rows 32q .. 32q+3 of the
 * scale operand, so the operand needs rows up to the last quadrant's
 * 32q + 3 (just 4 rows for a single-quadrant tile) and may have more,
 * which are not read (the NKI Library passes a 128-row scale tile with
 * 64-partition data). Column f of the scale belongs to x4 column f.
 *
 * quantize_mx: src [P, 4F] bf16/fp16 -> dst [P, F] fp8 x4, scale [., F].
 * Lane j of dst column f is src element 4f + j. The group's scale is
 * 2^(floor(log2 amax) - (Emax - 1)) with Emax = 8 (e4m3fn) or 15 (e5m2):
 * twice the OCP sample algorithm's, so that rounding the largest value
 * never saturates; an all-zero group gets 2^-127; a group holding an inf
 * or NaN gets the NaN scale and NaN data. Values are divided by the scale
 * (exact: a power of two) and rounded to nearest even.
 *
 * nc_matmul_mx: dst[M x N] (PSUM, fp32 or bf16) = sum over partitions p
 * and lanes j of st(p, m, j) * S_st(p, m) * mv(p, n, j) * S_mv(p, n). The
 * scales are applied to each operand first (exact for every fp8/fp4 value
 * and scale whose product is finite), then the products accumulate in
 * fp32 with fmaf in the order k = j*K + p (pe_matmul.h), starting from
 * the PSUM value (accumulate) or +0; a bf16 dst is rounded once at the
 * end (to nearest even, or stochastically when the core rounds so).
 */
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "emu/core/ap.h"
#include "emu/engines/mx_quant.h"
#include "emu/engines/pe_matmul.h"
#include "emu/isa/isa_args.h"
#include "emu/num/mx.h"

#define MX_QUADRANT 32        /* partitions per SBUF quadrant */
#define MX_GROUP_PARTS 8      /* partitions per MX group */
#define MX_SCALE_ROWS 4       /* scale rows per quadrant (32 / 8) */
#define MX_SCALE_SPAN 16      /* scales sit in the first 16 partitions of a quadrant */
#define MX_MAX_K 128          /* partitions of an MX operand */
#define MX_MAX_M 128          /* stationary free size */
#define MX_MAX_N_F32 4096     /* moving free size with an fp32 dst */
#define MX_MAX_N_BF16 8192    /* moving free size with a bf16 dst */
#define MX_N_CHUNK 512        /* moving columns packed at once (scratch bound) */

/* Decoded values of every code of one packed element type. */
struct mx_lut {
    float v[256];  /* fp8: value of each byte; fp4: of each low nibble */
};

static void mx_lut_fill(uint32_t dtype, struct mx_lut *t)
{
    uint32_t e = num_packed_elem(dtype);
    for (unsigned c = 0; c < 256; c++)
        t->v[c] = e == NUM_DT_FP8_E5          ? num_fp8_to_f32(NUM_DT_FP8_E5, (uint8_t)c)
                  : e == NUM_DT_FP8_E4M3FN ? num_e4m3fn_to_f32((uint8_t)c)
                                           : num_fp4_to_f32((uint8_t)(c & 15u));
}

/* Lane j of the packed element at p. */
static inline float mx_lane(const struct mx_lut *t, uint32_t dtype, const uint8_t *p, unsigned j)
{
    if (dtype == NUM_DT_FP4_E2M1_X4)
        return t->v[(p[j / 2] >> (4 * (j % 2))) & 15u];
    return t->v[p[j]];
}

/* Row of the scale operand holding the scale of data partition p. */
static uint32_t mx_scale_row(uint32_t p)
{
    return (p / MX_QUADRANT) * MX_QUADRANT + (p % MX_QUADRANT) / MX_GROUP_PARTS;
}

static bool mx_scale_type_ok(uint32_t dt)
{
    return dt == ISA_DT_U8 || dt == ISA_DT_FP8E8M0;
}

/* Scale rows that data of `parts` partitions reads: up to the last one's
 * row (mx_scale_row). */
static uint32_t mx_scale_rows_read(uint32_t parts)
{
    return parts > 0 ? mx_scale_row(parts - 1) + 1 : 0;
}

/* A scale operand that matches data of `parts` partitions and `cols` x4
 * columns: at least the rows the quadrant rule reads, the same columns,
 * same quadrant, partition step 1. */
static emu_status mx_check_scale(struct isa_exec_ctx *ctx, const char *op, const char *name,
                                 const struct ap_view *data, unsigned data_slot,
                                 const struct ap_view *sc, unsigned sc_slot)
{
    const struct isa_ap *da = &ctx->insn->ap[data_slot], *sa = &ctx->insn->ap[sc_slot];
    uint32_t parts = data->rows, need = mx_scale_rows_read(parts);
    if (!mx_scale_type_ok(sc->dtype) || sc->mem != ISA_MEM_SBUF)
        return core_fail(ctx, EMU_EXEC_ERR, "%s %s must be u8 or fp8e8m0 in SBUF; it is %s",
                         op, name, isa_dtype_name(sc->dtype));
    if (sc->rows < need || sc->elems != data->elems)
        return core_fail(ctx, EMU_EXEC_ERR, "%s %s is %u x %" PRIu64 "; data of %u partitions x "
                         "%" PRIu64 " needs at least %u rows (32q + 0..3 for each quadrant q "
                         "of the data) x %" PRIu64, op, name, sc->rows, sc->elems, parts,
                         data->elems, need, data->elems);
    if (sa->part_step != 1 || da->part_step != 1 ||
        sa->start_part / MX_QUADRANT != da->start_part / MX_QUADRANT ||
        sa->start_part % MX_QUADRANT + MX_SCALE_ROWS > MX_SCALE_SPAN)
        return core_fail(ctx, EMU_EXEC_ERR, "%s %s starts at partition %u, its data at %u: scales "
                         "sit in the first 16 partitions of their data's quadrant (partition "
                         "step 1)", op, name, sa->start_part, da->start_part);
    return EMU_OK;
}

/* ---- quantize_mx ---------------------------------------------------------------- */

static emu_status mx_quantize_check(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                                    const struct ap_view *sc, const struct ap_view *src)
{
    const char *op = "quantize_mx";
    if (dst->mem != ISA_MEM_SBUF || src->mem != ISA_MEM_SBUF)
        return core_fail(ctx, EMU_EXEC_ERR, "quantize_mx reads and writes SBUF");
    if (src->dtype != ISA_DT_BF16 && src->dtype != ISA_DT_F16)
        return core_fail(ctx, EMU_EXEC_ERR, "quantize_mx src must be bf16 or f16; it is %s",
                         isa_dtype_name(src->dtype));
    if (dst->dtype != ISA_DT_FP8E5X4 && dst->dtype != ISA_DT_FP8E4FNX4)
        return core_fail(ctx, EMU_EXEC_ERR, "quantize_mx dst must be fp8e5x4 or fp8e4fnx4 "
                         "(it cannot write fp4); it is %s", isa_dtype_name(dst->dtype));
    if (src->rows % MX_QUADRANT != 0 || src->rows > MX_MAX_K || src->elems % 4 != 0 ||
        dst->rows != src->rows || dst->elems * 4 != src->elems)
        return core_fail(ctx, EMU_EXEC_ERR, "quantize_mx src %u x %" PRIu64 ", dst %u x %" PRIu64
                         ": src partitions a multiple of 32 up to 128, free size a multiple of "
                         "4; dst the same partitions and a quarter of the free size", src->rows,
                         src->elems, dst->rows, dst->elems);
    return mx_check_scale(ctx, op, "dst_scale", dst, ISA_AP_SLOT(quantize_mx, dst), sc,
                          ISA_AP_SLOT(quantize_mx, dst_scale));
}

/* One group: rows p0..p0+7 of src (as fp32 in rows[]), x4 column f. */
static void mx_quantize_group(const struct ap_view *dst, const struct ap_view *sc,
                              float *const rows[MX_GROUP_PARTS], uint32_t p0, uint64_t f,
                              int emax)
{
    float amax = 0.0f;
    for (uint32_t i = 0; i < MX_GROUP_PARTS; i++)
        for (unsigned j = 0; j < NUM_X4_LANES; j++) {
            float a = fabsf(rows[i][4 * f + j]);
            amax = isnan(a) || a > amax ? a : amax;
        }
    uint8_t code = mxq_scale_code(amax, emax);
    *ap_elem_ptr(sc, mx_scale_row(p0), f) = code;
    int shift = 127 - (int)code;
    for (uint32_t i = 0; i < MX_GROUP_PARTS; i++) {
        float q[NUM_X4_LANES];
        for (unsigned j = 0; j < NUM_X4_LANES; j++)
            q[j] = code == NUM_E8M0_NAN ? NAN : ldexpf(rows[i][4 * f + j], shift);
        num_x4_pack(dst->dtype, q, true, ap_elem_ptr(dst, p0 + i, f));
    }
}

/* ---- quantize_mx, the flat bf16 fast path ------------------------------------------ */

/* Can the fast path run: flat bf16 src, flat fp8 x4 dst? */
static bool mx_quantize_fast_ok(const struct ap_view *dst, const struct ap_view *src)
{
    return src->flat && dst->flat && src->dtype == ISA_DT_BF16;
}

/* The 8-partition block of rows p0.. on the fast path (mx_quant.c); the
 * scales go straight to a flat scale row, else through `codes`. */
static void mx_quantize_block_fast(const struct ap_view *dst, const struct ap_view *sc,
                                   const struct ap_view *src, uint32_t p0, uint8_t *codes)
{
    uint32_t sr = mx_scale_row(p0);
    struct mxq_block b = {.scale = sc->flat ? ap_row_ptr(sc, sr) : codes, .nf = dst->elems,
                          .e4 = dst->dtype == ISA_DT_FP8E4FNX4};
    for (uint32_t i = 0; i < MX_GROUP_PARTS; i++) {
        b.src[i] = (const uint16_t *)(const void *)ap_row_ptr(src, p0 + i);
        b.dst[i] = ap_row_ptr(dst, p0 + i);
    }
    mxq_block_run(&b);
    for (uint64_t f = 0; !sc->flat && f < dst->elems; f++)
        *ap_elem_ptr(sc, sr, f) = codes[f];
}

emu_status isa_exec_quantize_mx(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst, sc, src;
    if (ctx->core->gen < 4)
        return core_fail(ctx, EMU_EXEC_ERR, "quantize_mx needs NeuronCore-v4; this core is "
                         "NeuronCore-v%u", ctx->core->gen);
    emu_status s = ap_bind(ctx, ISA_AP_SLOT(quantize_mx, dst), &dst);
    if (s == EMU_OK)
        s = ap_bind(ctx, ISA_AP_SLOT(quantize_mx, dst_scale), &sc);
    if (s == EMU_OK)
        s = ap_bind(ctx, ISA_AP_SLOT(quantize_mx, src), &src);
    if (s == EMU_OK)
        s = mx_quantize_check(ctx, &dst, &sc, &src);
    if (s != EMU_OK)
        return s;
    int emax = dst.dtype == ISA_DT_FP8E4FNX4 ? 8 : 15;
    if (mx_quantize_fast_ok(&dst, &src)) {
        for (uint32_t p0 = 0; p0 < src.rows; p0 += MX_GROUP_PARTS)
            mx_quantize_block_fast(&dst, &sc, &src, p0, (uint8_t *)core_scratch(ctx, 0));
        return EMU_OK;
    }
    float *rows[MX_GROUP_PARTS];
    for (uint32_t p0 = 0; p0 < src.rows; p0 += MX_GROUP_PARTS) {
        for (uint32_t i = 0; i < MX_GROUP_PARTS; i++) {
            rows[i] = core_scratch(ctx, i % CORE_SCRATCH_SLOTS) + (i / CORE_SCRATCH_SLOTS) *
                      (CORE_SCRATCH_ELEMS / 2);
            ap_row_load(&src, p0 + i, rows[i]);
        }
        for (uint64_t f = 0; f < dst.elems; f++)
            mx_quantize_group(&dst, &sc, rows, p0, f, emax);
    }
    return EMU_OK;
}

/* ---- nc_matmul_mx ---------------------------------------------------------------- */

/* The operands of one nc_matmul_mx. */
struct mx_mm {
    struct ap_view dst;      /* [M x N] PSUM, fp32 or bf16 */
    struct ap_view st;       /* stationary [K x M] packed */
    struct ap_view mv;       /* moving [K x N] packed */
    struct ap_view st_sc;    /* stationary scales */
    struct ap_view mv_sc;    /* moving scales */
};

static emu_status mx_mm_bind(struct isa_exec_ctx *ctx, struct mx_mm *o)
{
    static const int slot[5] = {
        ISA_AP_SLOT(nc_matmul_mx, dst), ISA_AP_SLOT(nc_matmul_mx, stationary),
        ISA_AP_SLOT(nc_matmul_mx, moving), ISA_AP_SLOT(nc_matmul_mx, stationary_scale),
        ISA_AP_SLOT(nc_matmul_mx, moving_scale)};
    struct ap_view *v[5] = {&o->dst, &o->st, &o->mv, &o->st_sc, &o->mv_sc};
    for (unsigned i = 0; i < 5; i++) {
        emu_status s = ap_bind(ctx, slot[i], v[i]);
        if (s != EMU_OK)
            return s;
    }
    return EMU_OK;
}

/* Row tiling only: 128 columns, row tiles of 32/64/128 holding K. */
static emu_status mx_mm_check_tiles(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                    uint32_t k)
{
    int64_t row = ISA_ARG_INT(insn, nc_matmul_mx, tile_row);
    int64_t col = ISA_ARG_INT(insn, nc_matmul_mx, tile_col);
    int64_t rows = ISA_ARG_INT(insn, nc_matmul_mx, tile_rows);
    int64_t cols = ISA_ARG_INT(insn, nc_matmul_mx, tile_cols);
    if (col != 0 || cols != 128 || (rows != 32 && rows != 64 && rows != 128) ||
        row % rows != 0 || row + rows > 128 || k > rows)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_mx tile (%" PRId64 ", %" PRId64 ") of %"
                         PRId64 " x %" PRId64 ": row tiling only (tile_rows 32, 64 or 128 holding "
                         "the %u partitions, tile_cols 128)", row, col, rows, cols, k);
    return EMU_OK;
}

static emu_status mx_mm_check(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                              const struct mx_mm *o)
{
    const char *op = "nc_matmul_mx";
    if (o->dst.mem != ISA_MEM_PSUM || o->st.mem != ISA_MEM_SBUF || o->mv.mem != ISA_MEM_SBUF)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_mx reads SBUF and writes PSUM");
    if (!num_dtype_is_packed(o->st.dtype) || !num_dtype_is_packed(o->mv.dtype))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_mx data must be fp8e5x4, fp8e4fnx4 or "
                         "fp4x4; they are %s and %s", isa_dtype_name(o->st.dtype),
                         isa_dtype_name(o->mv.dtype));
    bool bf16 = o->dst.dtype == ISA_DT_BF16;
    if (!bf16 && o->dst.dtype != ISA_DT_F32)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_mx writes f32 or bf16; dst is %s",
                         isa_dtype_name(o->dst.dtype));
    uint32_t k = o->st.rows, nmax = bf16 ? MX_MAX_N_BF16 : MX_MAX_N_F32;
    if (k % MX_QUADRANT != 0 || k > MX_MAX_K || o->mv.rows != k || o->st.elems % 2 != 0 ||
        o->st.elems > MX_MAX_M || o->mv.elems > nmax || o->dst.rows != o->st.elems ||
        o->dst.elems != o->mv.elems)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_mx shapes: stationary %u x %" PRIu64
                         ", moving %u x %" PRIu64 ", dst %u x %" PRIu64 "; need K a multiple of "
                         "32 up to 128, M even up to 128, N up to %u (%s dst), dst M x N", k,
                         o->st.elems, o->mv.rows, o->mv.elems, o->dst.rows, o->dst.elems, nmax,
                         bf16 ? "bf16" : "f32");
    emu_status s = mx_check_scale(ctx, op, "stationary_scale", &o->st,
                                  ISA_AP_SLOT(nc_matmul_mx, stationary), &o->st_sc,
                                  ISA_AP_SLOT(nc_matmul_mx, stationary_scale));
    if (s == EMU_OK)
        s = mx_check_scale(ctx, op, "moving_scale", &o->mv, ISA_AP_SLOT(nc_matmul_mx, moving),
                           &o->mv_sc, ISA_AP_SLOT(nc_matmul_mx, moving_scale));
    return s == EMU_OK ? mx_mm_check_tiles(ctx, insn, k) : s;
}

/* The value of each scale code (2^(c - 127); NaN for 0xff). */
static void mx_scale_table(float t[256])
{
    for (unsigned c = 0; c < 256; c++)
        t[c] = num_e8m0_to_f32((uint8_t)c);
}

/* Dequantise columns [c0, c0+w) of a packed operand into panels of width
 * wr: logical contraction row j*K + p holds lane j of partition p. Each
 * value times its power-of-two scale is exact (see the file comment). */
static void mx_pack(const struct ap_view *v, const struct ap_view *sc, uint64_t c0, uint32_t w,
                    uint32_t wr, float *dst, float *tmp)
{
    struct mx_lut lut;
    float stab[256];
    mx_lut_fill(v->dtype, &lut);
    mx_scale_table(stab);
    uint32_t k = v->rows;
    bool flat = v->flat && sc->flat;
    float *lane[NUM_X4_LANES];
    for (unsigned j = 0; j < NUM_X4_LANES; j++)
        lane[j] = tmp + (size_t)j * w;
    for (uint32_t p = 0; p < k; p++) {
        uint32_t sr = mx_scale_row(p);
        const uint8_t *drow = ap_row_ptr(v, p) + c0 * v->esize, *srow = ap_row_ptr(sc, sr) + c0;
        for (uint32_t i = 0; i < w; i++) {
            const uint8_t *e = flat ? drow + (size_t)i * v->esize : ap_elem_ptr(v, p, c0 + i);
            float s = stab[flat ? srow[i] : *ap_elem_ptr(sc, sr, c0 + i)];
            for (unsigned j = 0; j < NUM_X4_LANES; j++)
                lane[j][i] = mx_lane(&lut, v->dtype, e, j) * s;
        }
        for (unsigned j = 0; j < NUM_X4_LANES; j++)
            pe_scatter_row(lane[j], w, wr, NUM_X4_LANES * k, j * k + p, dst);
    }
}

/* Multiply moving columns [c0, c0+w) into the same columns of dst. */
static void mx_mm_chunk(struct isa_exec_ctx *ctx, const struct mx_mm *o, const float *a,
                        uint64_t c0, uint32_t w, bool acc)
{
    float *b = core_scratch(ctx, 1), *tmp = core_scratch(ctx, 2), *c = core_scratch(ctx, 3);
    uint32_t m = (uint32_t)o->st.elems;
    mx_pack(&o->mv, &o->mv_sc, c0, w, PE_NR, b, tmp);
    float *row = core_scratch(ctx, 4);
    for (uint32_t r = 0; r < m && acc; r++) {
        ap_row_load(&o->dst, r, row);
        memcpy(c + (size_t)r * w, row + c0, w * sizeof(float));
    }
    struct pe_mm mm = {.k = NUM_X4_LANES * o->st.rows, .m = m, .n = w, .a = a, .b = b, .c = c,
                       .ldc = w, .accumulate = acc};
    pe_mm_run(&mm);
    for (uint32_t r = 0; r < m; r++) {
        float *out = core_scratch(ctx, 5);
        if (c0 > 0 || w < o->dst.elems)
            ap_row_load(&o->dst, r, out);
        memcpy(out + c0, c + (size_t)r * w, w * sizeof(float));
        ap_row_store(&o->dst, r, out);
    }
}

emu_status isa_exec_nc_matmul_mx(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct mx_mm o;
    if (ctx->core->gen < 4)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_mx needs NeuronCore-v4; this core is "
                         "NeuronCore-v%u", ctx->core->gen);
    emu_status s = mx_mm_bind(ctx, &o);
    if (s == EMU_OK)
        s = mx_mm_check(ctx, insn, &o);
    if (s != EMU_OK)
        return s;
    float *a = core_scratch(ctx, 0);
    mx_pack(&o.st, &o.st_sc, 0, (uint32_t)o.st.elems, PE_MR, a, core_scratch(ctx, 2));
    bool acc = ISA_ARG_FLAG(insn, nc_matmul_mx, accumulate);
    for (uint64_t c0 = 0; c0 < o.mv.elems; c0 += MX_N_CHUNK) {
        uint64_t left = o.mv.elems - c0;
        mx_mm_chunk(ctx, &o, a, c0, (uint32_t)(left < MX_N_CHUNK ? left : MX_N_CHUNK), acc);
    }
    return EMU_OK;
}
