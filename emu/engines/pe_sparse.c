/*
 * pe_sparse.c: semantics of nc_matmul_sparse, trnemu's form of the Tensor
 * engine's M:N structured-sparse matmul (NeuronCore-v3 and v4; the vendor
 * API has not shipped, docs/isa.md gives the layout).
 *
 * The stationary matrix S (K x Mo, K the logical contraction) keeps at most
 * `keep` (M) non-zero values in every `group` (N) consecutive rows of each
 * column. It arrives compressed: stationary [P x Mo] with P = K * keep /
 * group partitions; partitions g*keep .. g*keep+keep-1 hold the kept values
 * of row group g, and tag [P x ceil(Mo/4)] (16-bit) holds for each of them
 * its row within the group, 4 bits per value, value m in bits 4*(m%4) of
 * element m/4. moving [P x (ratio * F)] is the dense K x F matrix with
 * logical row k = p * ratio + c in partition p, elements c*F .. c*F+F-1
 * (ratio = group / keep). dst [Mo x F] (PSUM, fp32) = S^T x moving:
 * each output starts from PSUM (accumulate) or +0 and takes
 * acc = fmaf(s, moving[k][f], acc) for the kept values of its column in
 * increasing k; pruned positions contribute nothing. A NaN result is
 * stored as 0x7fc00000, as nc_matmul does.
 */
#include <assert.h>
#include <inttypes.h>
#include <string.h>

#include "emu/core/ap.h"
#include "emu/engines/pe_matmul.h"
#include "emu/isa/isa_args.h"

#define SP_MAX_PARTS 128 /* partitions of the compressed operands */
#define SP_MAX_M 128     /* stationary free size (PE columns) */
#define SP_MAX_F 512     /* dst free size: one PSUM bank of fp32 */
#define SP_TAGS_PER_WORD 4
/* The operands, each at its slot: v[SP_DST] is dst (ap_bind of slot SP_DST). */
enum sp_operand {
    SP_DST = ISA_AP_SLOT(nc_matmul_sparse, dst),             /* fp32 PSUM result */
    SP_STAT = ISA_AP_SLOT(nc_matmul_sparse, stationary),     /* compressed weights */
    SP_MOV = ISA_AP_SLOT(nc_matmul_sparse, moving),          /* dense moving data */
    SP_TAG = ISA_AP_SLOT(nc_matmul_sparse, tag),             /* 4-bit position tags */
};
_Static_assert(CORE_SCRATCH_SLOTS >= 6, "pe_sparse.c uses six scratch rows");

/* The M:N patterns of the NeuronCore-v3/v4 Tensor engine (keep, group). */
static const uint8_t sp_patterns[][2] = {{4, 8}, {4, 12}, {4, 16}, {2, 8},
                                         {2, 4}, {1, 4},  {1, 2}};

/* The geometry of one nc_matmul_sparse. */
struct sp_geom {
    uint32_t keep;  /* M: values kept per row group */
    uint32_t group; /* N: logical contraction rows per group */
    uint32_t ratio; /* N / M: logical rows per partition */
    uint32_t parts; /* P: partitions of stationary, moving and tag */
    uint32_t m;     /* stationary free size = dst partitions */
    uint32_t f;     /* dst free size */
};

/* One kept value of a column: its logical row and its partition. */
struct sp_entry {
    uint32_t k; /* logical contraction row */
    uint32_t p; /* partition of the compressed stationary */
};

static bool sp_pattern_ok(uint32_t keep, uint32_t group)
{
    for (size_t i = 0; i < sizeof sp_patterns / sizeof sp_patterns[0]; i++)
        if (sp_patterns[i][0] == keep && sp_patterns[i][1] == group)
            return true;
    return false;
}

static bool sp_input_ok(uint32_t dt)
{
    return dt == ISA_DT_F32 || dt == ISA_DT_F32R || dt == ISA_DT_BF16 || dt == ISA_DT_F16 ||
           dt == ISA_DT_FP8E4 || dt == ISA_DT_FP8E5;
}

static bool sp_is_f32(uint32_t dt)
{
    return dt == ISA_DT_F32 || dt == ISA_DT_F32R;
}

static emu_status sp_bind(struct isa_exec_ctx *ctx, struct ap_view v[4])
{
    static_assert(SP_DST < 4 && SP_STAT < 4 && SP_MOV < 4 && SP_TAG < 4, "four operands");
    for (unsigned i = 0; i < 4; i++) {
        emu_status s = ap_bind(ctx, i, &v[i]);
        if (s != EMU_OK)
            return s;
    }
    if (v[SP_DST].mem != ISA_MEM_PSUM || v[SP_DST].dtype != ISA_DT_F32)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse writes fp32 PSUM");
    if (!sp_input_ok(v[SP_STAT].dtype) || !sp_input_ok(v[SP_MOV].dtype) ||
        sp_is_f32(v[SP_STAT].dtype) != sp_is_f32(v[SP_MOV].dtype))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse inputs %s x %s: fp32/fp32r "
                         "(both), bf16, fp16 or fp8", isa_dtype_name(v[SP_STAT].dtype),
                         isa_dtype_name(v[SP_MOV].dtype));
    if (v[SP_TAG].dtype != ISA_DT_U16 && v[SP_TAG].dtype != ISA_DT_I16)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse tag is 16-bit integers "
                         "(four 4-bit tags each), not %s", isa_dtype_name(v[SP_TAG].dtype));
    return EMU_OK;
}

/* Pattern and shapes; fills g. */
static emu_status sp_check(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                           const struct ap_view v[4], struct sp_geom *g)
{
    g->keep = (uint32_t)ISA_ARG_INT(insn, nc_matmul_sparse, keep);
    g->group = (uint32_t)ISA_ARG_INT(insn, nc_matmul_sparse, group);
    if (!sp_pattern_ok(g->keep, g->group))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse pattern %u:%u: the Tensor "
                         "engine takes 4:8, 4:12, 4:16, 2:8, 2:4, 1:4 and 1:2",
                         g->keep, g->group);
    g->ratio = g->group / g->keep;
    g->parts = v[SP_STAT].rows;
    g->m = (uint32_t)v[SP_STAT].elems;
    g->f = (uint32_t)v[SP_DST].elems;
    uint64_t tags = (g->m + SP_TAGS_PER_WORD - 1) / SP_TAGS_PER_WORD;
    if (g->parts > SP_MAX_PARTS || g->parts % g->keep != 0 || g->m > SP_MAX_M ||
        g->f > SP_MAX_F || v[SP_DST].rows != g->m || v[SP_MOV].rows != g->parts ||
        v[SP_MOV].elems != (uint64_t)g->ratio * g->f || v[SP_TAG].rows != g->parts ||
        v[SP_TAG].elems != tags)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse %u:%u shapes: stationary %u x "
                         "%" PRIu64 ", moving %u x %" PRIu64 ", tag %u x %" PRIu64 ", dst %u x %"
                         PRIu64 "; need [P x Mo], [P x %u*F], [P x ceil(Mo/4)], [Mo x F] with P "
                         "a multiple of %u, P <= %u, Mo <= %u, F <= %u", g->keep, g->group,
                         v[SP_STAT].rows, v[SP_STAT].elems, v[SP_MOV].rows, v[SP_MOV].elems,
                         v[SP_TAG].rows, v[SP_TAG].elems,
                         v[SP_DST].rows, v[SP_DST].elems, g->ratio, g->keep, SP_MAX_PARTS, SP_MAX_M,
                         SP_MAX_F);
    struct isa_extent ext;
    if (isa_ap_extent(ISA_ARG_AP(insn, nc_matmul_sparse, dst), &ext) == EMU_OK && ext.hi > ext.lo &&
        ext.lo / ISA_PSUM_BANK_BYTES != (ext.hi - 1) / ISA_PSUM_BANK_BYTES)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse dst spans PSUM bytes [%" PRIu64
                         ", %" PRIu64 ") of each partition, across a %u-byte bank boundary",
                         ext.lo, ext.hi, ISA_PSUM_BANK_BYTES);
    return EMU_OK;
}

/* The 4-bit tag of stationary value (p, m); tag rows are loaded as fp32. */
static uint32_t sp_tag(const float *tag, const struct sp_geom *g, uint32_t p, uint32_t m)
{
    size_t words = (g->m + SP_TAGS_PER_WORD - 1) / SP_TAGS_PER_WORD;
    uint32_t w = (uint32_t)(int32_t)tag[(size_t)p * words + m / SP_TAGS_PER_WORD] & 0xFFFFu;
    return (w >> (4 * (m % SP_TAGS_PER_WORD))) & 0xFu;
}

/* Column m's kept values in increasing logical row (P of them); fails on a
 * tag outside the group or one used twice in a group. */
static emu_status sp_column(struct isa_exec_ctx *ctx, const float *tag, const struct sp_geom *g,
                            uint32_t m, struct sp_entry *out)
{
    for (uint32_t p = 0; p < g->parts; p++) {
        uint32_t t = sp_tag(tag, g, p, m), base = p / g->keep * g->group;
        if (t >= g->group)
            return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse tag %u of partition %u, "
                             "column %u is outside its group of %u", t, p, m, g->group);
        struct sp_entry e = {base + t, p};
        uint32_t i = p, first = p / g->keep * g->keep; /* insertion into its group */
        for (; i > first && out[i - 1].k >= e.k; i--) {
            if (out[i - 1].k == e.k)
                return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse column %u: partitions %u "
                                 "and %u both tag row %u of group %u", m, out[i - 1].p, p, t,
                                 p / g->keep);
            out[i] = out[i - 1];
        }
        out[i] = e;
    }
    return EMU_OK;
}

/* acc[0..f) op= the kept values of column m times their moving rows: the
 * kept rows become a P-long contraction packed for the Tensor-engine
 * kernel (pe_matmul.h: fmaf in increasing k, canonical NaN), so the
 * result is the definition's, at SIMD speed. panels: room for the moving
 * panels, then PE_MR x P floats for the stationary one. */
static void sp_row(const struct sp_geom *g, const struct sp_entry *col, const float *st,
                   const float *mv, uint32_t m, bool accumulate, float *acc, float *panels)
{
    size_t mv_w = (size_t)g->ratio * g->f;
    float *a = panels + pe_pack_b_floats(g->parts, g->f);
    memset(a, 0, (size_t)PE_MR * g->parts * sizeof(float));
    for (uint32_t j = 0; j < g->parts; j++) {
        const float *row = mv + (size_t)(col[j].k / g->ratio) * mv_w +
                           (size_t)(col[j].k % g->ratio) * g->f;
        pe_scatter_row(row, g->f, PE_NR, g->parts, j, panels);
        a[(size_t)j * PE_MR] = st[(size_t)col[j].p * g->m + m];
    }
    struct pe_mm mm = {.k = g->parts, .m = 1, .n = g->f, .a = a, .b = panels, .c = acc,
                       .ldc = (ptrdiff_t)g->f, .accumulate = accumulate};
    pe_mm_run(&mm);
}

/* Load stationary, moving and tag rows into scratch, then each dst row. */
static emu_status sp_multiply(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                              const struct ap_view v[4], const struct sp_geom *g)
{
    float *st = core_scratch(ctx, 0), *mv = core_scratch(ctx, 1), *tag = core_scratch(ctx, 2);
    float *acc = core_scratch(ctx, 3), *panels = core_scratch(ctx, 5);
    struct sp_entry *col = (struct sp_entry *)(void *)core_scratch(ctx, 4);
    for (uint32_t p = 0; p < g->parts; p++) {
        ap_row_load(&v[SP_STAT], p, st + (size_t)p * g->m);
        ap_row_load(&v[SP_MOV], p, mv + (size_t)p * g->ratio * g->f);
        ap_row_load(&v[SP_TAG], p, tag + (size_t)p * v[SP_TAG].elems);
    }
    bool accumulate = ISA_ARG_FLAG(insn, nc_matmul_sparse, accumulate);
    for (uint32_t m = 0; m < g->m; m++) {
        emu_status s = sp_column(ctx, tag, g, m, col);
        if (s != EMU_OK)
            return s;
        if (accumulate)
            ap_row_load(&v[SP_DST], m, acc);
        sp_row(g, col, st, mv, m, accumulate, acc, panels);
        ap_row_store(&v[SP_DST], m, acc);
    }
    return EMU_OK;
}

emu_status isa_exec_nc_matmul_sparse(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    if (ctx->core->gen < 3)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul_sparse needs NeuronCore-v3 or later "
                         "(this core is NeuronCore-v%u)", ctx->core->gen);
    struct ap_view v[4];
    struct sp_geom g = {0};
    emu_status s = sp_bind(ctx, v);
    if (s == EMU_OK)
        s = sp_check(ctx, insn, v, &g);
    return s != EMU_OK ? s : sp_multiply(ctx, insn, v, &g);
}
