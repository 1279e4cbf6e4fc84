/*
 * exec_pe.c: semantics of the Tensor engine (PE) instructions: nc_matmul,
 * nc_matmul_mx, nc_transpose (also run by the Vector engine).
 *
 * nc_matmul: dst[M x N] (PSUM, fp32) = stationary[K x M]^T x moving[K x N],
 * both inputs in SBUF with the contraction along partitions; the numerics
 * are those of pe_matmul.h (fmaf in k order, bit-identical everywhere).
 * Transpose mode on NeuronCore-v3 moves data bit-exactly instead; on v2 it
 * is an ordinary matmul, as on hardware. NeuronCore-v4 also writes bf16
 * PSUM (fp32 sums rounded once, RNE or stochastic; accumulation reads the
 * bf16 value back), takes float8_e4m3fn inputs and moving operands of up
 * to 4096 (fp32 dst) or 8192 (bf16 dst) columns, a dst row that may span
 * PSUM banks. nc_matmul_mx is in exec_mx.c. A large one is packed and
 * multiplied by several host threads at once (emu/core/par.h), in parts
 * fixed by its shape, with the same bits.
 */
#include <inttypes.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "emu/core/ap.h"
#include "emu/core/par.h"
#include "emu/engines/pe_matmul.h"
#include "emu/isa/isa_args.h"

#define PE_MAX_M 128               /* stationary free size (PE columns) */
#define PE_MAX_N ISA_PE_MAX_N_V2    /* moving free size before v4 (fp32 per PSUM bank) */
#define PE_MAX_N_V4_BYTES ISA_PSUM_PART_BYTES /* v4: a dst row may fill its partition */
#define PE_DVE_TRANSPOSE_MAX 32    /* Vector-engine transpose: at most 32 x 32 */

/* The geometry of one nc_matmul. */
struct pe_geom {
    uint32_t parts;   /* partitions of stationary and moving */
    uint32_t groups;  /* contraction rows per partition: 2 in double-row mode */
    uint32_t k;       /* contraction length: parts * groups */
    uint32_t m;       /* stationary free size = dst partitions */
    uint32_t n;       /* moving free size = dst free size */
};

static bool pe_is_f32(uint32_t dt)
{
    return dt == ISA_DT_F32 || dt == ISA_DT_F32R;
}

/* Equal formats (fp32 and fp32r are one). */
static bool pe_same_type(uint32_t a, uint32_t b)
{
    return a == b || (pe_is_f32(a) && pe_is_f32(b));
}

static bool pe_is_fp8(uint32_t dt)
{
    return dt == ISA_DT_FP8E3 || dt == ISA_DT_FP8E4 || dt == ISA_DT_FP8E5;
}

/* Input types the PE multiplies (nc_matmul doc; fp8_e3 per the v3 guide). */
static bool pe_input_ok(uint32_t dt)
{
    return pe_is_f32(dt) || dt == ISA_DT_BF16 || dt == ISA_DT_F16 || pe_is_fp8(dt);
}

static emu_status pe_bind3(struct isa_exec_ctx *ctx, struct ap_view *dst, struct ap_view *st,
                           struct ap_view *mv)
{
    emu_status s = ap_bind(ctx, ISA_AP_SLOT(nc_matmul, dst), dst);
    if (s == EMU_OK)
        s = ap_bind(ctx, ISA_AP_SLOT(nc_matmul, stationary), st);
    if (s == EMU_OK)
        s = ap_bind(ctx, ISA_AP_SLOT(nc_matmul, moving), mv);
    if (s != EMU_OK)
        return s;
    if (dst->mem != ISA_MEM_PSUM || st->mem != ISA_MEM_SBUF || mv->mem != ISA_MEM_SBUF)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul reads stationary and "
                         "moving from SBUF and writes dst in PSUM");
    return EMU_OK;
}

/* ---- checks ------------------------------------------------------------------- */

static bool pe_tile_size_ok(int64_t size, uint32_t gen)
{
    return size == 128 || size == 64 || (size == 32 && gen >= 3);
}

/* tile_row/tile_col/tile_rows/tile_cols: a legal PE tile that fits the operands. */
static emu_status pe_check_tiles(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                 const struct pe_geom *g)
{
    int64_t row = ISA_ARG_INT(insn, nc_matmul, tile_row);
    int64_t col = ISA_ARG_INT(insn, nc_matmul, tile_col);
    int64_t rows = ISA_ARG_INT(insn, nc_matmul, tile_rows);
    int64_t cols = ISA_ARG_INT(insn, nc_matmul, tile_cols);
    uint32_t gen = ctx->core->gen;
    if (!pe_tile_size_ok(rows, gen) || !pe_tile_size_ok(cols, gen))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul tile %" PRId64 " x %"
                         PRId64 ": tile sizes are 128 or 64%s", rows, cols,
                         gen >= 3 ? " or 32" : " (32 needs NeuronCore-v3)");
    if (row % rows != 0 || col % cols != 0 || row + rows > 128 || col + cols > 128)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul tile position (%" PRId64
                         ", %" PRId64 ") must be a multiple of the tile size (%" PRId64 ", %"
                         PRId64 ") inside the 128 x 128 array", row, col, rows, cols);
    if (g->parts > rows || g->m > cols)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul stationary of %u "
                         "partitions x %u does not fit the %" PRId64 " x %" PRId64 " PE tile",
                         g->parts, g->m, rows, cols);
    return EMU_OK;
}

/* A double_row input type: fp8_e4/fp8_e5, and fp8e4fn from NeuronCore-v4. */
static bool pe_double_row_type(uint32_t gen, uint32_t dt)
{
    return dt == ISA_DT_FP8E4 || dt == ISA_DT_FP8E5 || (dt == ISA_DT_FP8E4FN && gen >= 4);
}

/* Performance mode: double_row needs v3, fp8 inputs (pe_double_row_type),
 * [K, 2, x] layouts, no column tiling and no transpose. */
static emu_status pe_check_perf(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                uint32_t *groups)
{
    *groups = 1;
    unsigned perf = ISA_ARG_ENUM(insn, nc_matmul, perf);
    if (perf == ISA_PERF_none)
        return EMU_OK;
    if (perf != ISA_PERF_double_row)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul perf mode %u is unknown", perf);
    const struct isa_ap *st = ISA_ARG_AP(insn, nc_matmul, stationary);
    const struct isa_ap *mv = ISA_ARG_AP(insn, nc_matmul, moving);
    uint32_t gen = ctx->core->gen;
    bool fp8 = pe_double_row_type(gen, st->dtype) && pe_double_row_type(gen, mv->dtype);
    if (gen < 3 || !fp8 || st->ndims < 2 || mv->ndims < 2 || st->dim[0].count != 2 ||
        mv->dim[0].count != 2 || ISA_ARG_INT(insn, nc_matmul, tile_cols) != 128 ||
        ISA_ARG_FLAG(insn, nc_matmul, transpose))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul perf=double_row needs "
                         "NeuronCore-v3, fp8_e4/fp8_e5 inputs (fp8e4fn from v4) shaped "
                         "[K, 2, x], no column tiling and no transpose");
    *groups = 2;
    return EMU_OK;
}

/* Shapes, types and the PSUM bank of one nc_matmul. */
/* NeuronCore-v4 float8_e4m3fn inputs: with itself or any other non-fp32
 * input type but the legacy float8_e4m3 (the nc_matmul reference). */
static bool pe_e4m3fn_ok(uint32_t gen, uint32_t a, uint32_t b)
{
    bool fa = a == ISA_DT_FP8E4FN, fb = b == ISA_DT_FP8E4FN;
    if (!fa && !fb)
        return true;
    return gen >= 4 && a != ISA_DT_FP8E4 && b != ISA_DT_FP8E4 && (fa || pe_input_ok(a)) &&
           (fb || pe_input_ok(b)) && !pe_is_f32(a) && !pe_is_f32(b);
}

/* The largest moving free size: 512 before NeuronCore-v4; from v4 as
 * many dst elements as one PSUM partition holds (4096 fp32, 8192 bf16). */
static uint32_t pe_max_n(uint32_t gen, uint32_t dst_esize)
{
    return gen >= 4 && dst_esize > 0 ? PE_MAX_N_V4_BYTES / dst_esize : PE_MAX_N;
}

static emu_status pe_check_shapes(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                                  const struct ap_view *st, const struct ap_view *mv,
                                  struct pe_geom *g)
{
    bool v4fn = pe_e4m3fn_ok(ctx->core->gen, st->dtype, mv->dtype) &&
                (st->dtype == ISA_DT_FP8E4FN || mv->dtype == ISA_DT_FP8E4FN);
    if (!v4fn && (!pe_input_ok(st->dtype) || !pe_input_ok(mv->dtype) ||
                  pe_is_f32(st->dtype) != pe_is_f32(mv->dtype)))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul inputs %s x %s: inputs "
                         "are fp32/fp32r (both), bf16, fp16 or fp8 (fp8e4fn: NeuronCore-v4, "
                         "not mixed with the legacy fp8e4)", isa_dtype_name(st->dtype),
                         isa_dtype_name(mv->dtype));
    g->parts = st->rows;
    g->k = g->parts * g->groups;
    g->m = (uint32_t)(st->elems / g->groups);
    g->n = (uint32_t)(mv->elems / g->groups);
    uint32_t max_n = pe_max_n(ctx->core->gen, dst->esize);
    if (mv->rows != st->rows || g->m > PE_MAX_M || g->n > max_n || dst->rows != g->m ||
        dst->elems != g->n)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul shapes: stationary %u x %"
                         PRIu64 ", moving %u x %" PRIu64 ", dst %u x %" PRIu64 "; need [K x M]"
                         ", [K x N], [M x N] with M <= %u, N <= %u%s", st->rows, st->elems,
                         mv->rows, mv->elems, dst->rows, dst->elems, PE_MAX_M, max_n,
                         ctx->core->gen >= 4 ? "" : " (4096 fp32 / 8192 bf16 from NeuronCore-v4)");
    return EMU_OK;
}

/* Before NeuronCore-v4 a matmul dst row stays inside one 2 KiB PSUM bank
 * (from v4 it may fill the partition: ap_bind keeps it inside). */
static emu_status pe_check_bank(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct isa_extent ext;
    if (ctx->core->gen >= 4)
        return EMU_OK;
    if (isa_ap_extent(ISA_ARG_AP(insn, nc_matmul, dst), &ext) != EMU_OK || ext.hi <= ext.lo)
        return EMU_OK; /* ap_bind already judged the pattern */
    if (ext.lo / ISA_PSUM_BANK_BYTES != (ext.hi - 1) / ISA_PSUM_BANK_BYTES)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul dst spans PSUM bytes [%"
                         PRIu64 ", %" PRIu64 ") of each partition, across a %u-byte bank "
                         "boundary", ext.lo, ext.hi, ISA_PSUM_BANK_BYTES);
    return EMU_OK;
}

/* The onezero hints claim an fp32 operand holds only 0 and 1: check the claim. */
static emu_status pe_check_onezero(struct isa_exec_ctx *ctx, const char *what, uint32_t dtype,
                                   const float *packed, size_t count)
{
    if (!pe_is_f32(dtype))
        return EMU_OK; /* the hint has no effect on other types */
    for (size_t i = 0; i < count; i++)
        if (packed[i] != 0.0f && packed[i] != 1.0f)
            return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul %s_onezero is set "
                             "but the %s operand holds %g", what, what, (double)packed[i]);
    return EMU_OK;
}

/* ---- matmul ------------------------------------------------------------------- */

/* Scratch row slot when n floats fit it, else a heap block the caller
 * frees (*owned); NULL when the host is out of memory. */
static float *pe_buffer(struct isa_exec_ctx *ctx, unsigned slot, size_t n, float **owned)
{
    *owned = NULL;
    if (n <= CORE_SCRATCH_ELEMS)
        return core_scratch(ctx, slot);
    *owned = malloc(n * sizeof(float));
    return *owned;
}

static emu_status pe_no_memory(struct isa_exec_ctx *ctx, const struct pe_geom *g)
{
    return core_fail(ctx, EMU_RESOURCE, "nc_matmul: out of host memory for a %u x %u x %u "
                     "product", g->k, g->m, g->n);
}

/* dst as fp32 rows the kernel writes in place: row 0 and the row stride in
 * floats; NULL when the product needs a staging block. */
static float *pe_direct_dst(const struct ap_view *dst, ptrdiff_t *ldc)
{
    float *direct = ap_row_f32(dst, 0);
    if (direct == NULL || dst->row_stride % (int64_t)sizeof(float) != 0)
        return NULL;
    *ldc = dst->row_stride / (int64_t)sizeof(float);
    return direct;
}

/* c = the product through an M x N staging block (dst not fp32 rows the
 * kernel can write in place): loaded first when accumulating, stored after. */
static emu_status pe_run_staged(struct isa_exec_ctx *ctx, struct pe_mm *mm,
                                const struct ap_view *dst)
{
    float *own;
    mm->c = pe_buffer(ctx, 3, (size_t)mm->m * mm->n, &own);
    if (mm->c == NULL)
        return EMU_RESOURCE;
    mm->ldc = mm->n;
    for (uint32_t r = 0; r < mm->m && mm->accumulate; r++)
        ap_row_load(dst, r, mm->c + (size_t)r * mm->n);
    pe_mm_run(mm);
    for (uint32_t r = 0; r < mm->m; r++)
        ap_row_store(dst, r, mm->c + (size_t)r * mm->n);
    free(own);
    return EMU_OK;
}

/* Packing both operands of a large nc_matmul, split across host threads
 * in parts of PE_PAR_ROWS partitions (whole rows: the cheapest access). */
struct pe_pack_job {
    const struct ap_view *st;  /* stationary operand */
    const struct ap_view *mv;  /* moving operand */
    const struct pe_geom *g;   /* the shapes */
    float *a;                  /* packed stationary panels */
    float *b;                  /* packed moving panels */
    atomic_bool no_scratch;    /* a part found no scratch row (out of memory) */
};

static void pe_pack_part(void *arg, size_t part)
{
    struct pe_pack_job *j = arg;
    uint32_t p0 = (uint32_t)part * PE_PAR_ROWS, p1 = p0 + PE_PAR_ROWS;
    float *tmp = par_scratch(0); /* this thread's own: parts run at once */
    if (tmp == NULL) {
        atomic_store(&j->no_scratch, true);
        return;
    }
    pe_pack_rows(j->st, j->g->groups, j->g->m, PE_MR, p0, p1, j->a, tmp);
    pe_pack_rows(j->mv, j->g->groups, j->g->n, PE_NR, p0, p1, j->b, tmp);
}

/* Pack both operands into a and b: on this thread, or split when the
 * product is large enough for pe_mm_run to split it too. */
static emu_status pe_pack_both(struct isa_exec_ctx *ctx, const struct ap_view *st,
                               const struct ap_view *mv, const struct pe_geom *g, float *a,
                               float *b)
{
    bool big = (uint64_t)g->k * g->m * g->n >= PE_PAR_MIN_FMAS;
    size_t parts = big ? (g->parts + PE_PAR_ROWS - 1) / PE_PAR_ROWS : 1;
    if (parts <= 1) {
        pe_pack_a(st, g->groups, g->m, a, core_scratch(ctx, 2));
        pe_pack_b(mv, g->groups, g->n, b, core_scratch(ctx, 2));
        return EMU_OK;
    }
    struct pe_pack_job j = {.st = st, .mv = mv, .g = g, .a = a, .b = b};
    atomic_init(&j.no_scratch, false);
    par_for(parts, pe_pack_part, &j);
    if (atomic_load(&j.no_scratch))
        return core_fail(ctx, EMU_RESOURCE, "nc_matmul: out of host memory for a "
                         "helper thread's scratch rows");
    return EMU_OK;
}

/* A large product whose moving panels are packed inside it: one par_for
 * over parts of PE_PANEL_PAR_COLS columns, each packing its own moving
 * panels. Every thread packs the whole stationary operand itself, once
 * per call, into its own slot (the first part it runs does it): the small
 * stationary panels then never cross between cores, and no part waits
 * for another. */
struct pe_fused_job {
    const struct ap_view *st;  /* stationary operand */
    const struct pe_geom *g;   /* the shapes */
    const struct pe_mm *mm;    /* the product (its a is set per thread) */
    uint64_t call;             /* this call's number (pe_fused_calls) */
    atomic_bool no_scratch;    /* a part found no scratch row (out of memory) */
};

static atomic_uint_fast64_t pe_fused_calls;     /* numbers the calls, from 1 */
static _Thread_local uint64_t pe_fused_packed; /* call whose stationary this thread's slot holds */

_Static_assert(PE_PANEL_FLOATS <= PAR_SCRATCH_ELEMS && PE_PANEL_FLOATS <= CORE_SCRATCH_ELEMS,
               "a scratch row holds the moving panels of pe_mm_run_panels");

static void pe_fused_part(void *arg, size_t part)
{
    struct pe_fused_job *j = arg;
    float *a = par_scratch(PAR_SLOT_PE_STAT), *buf = par_scratch(1); /* this thread's own */
    if (a == NULL || buf == NULL) {
        atomic_store(&j->no_scratch, true);
        return;
    }
    if (pe_fused_packed != j->call) {
        pe_pack_a(j->st, j->g->groups, j->g->m, a, buf);
        pe_fused_packed = j->call;
    }
    struct pe_mm mm = *j->mm;
    mm.a = a;
    uint32_t n0 = (uint32_t)part * PE_PANEL_PAR_COLS;
    pe_mm_run_panels(&mm, n0, n0 + PE_PANEL_PAR_COLS, buf);
}

/* Pack the stationary operand into a and run mm (its moving panels packed
 * inside): on this thread, or split when the product is large. */
static emu_status pe_run_fused(struct isa_exec_ctx *ctx, const struct ap_view *st,
                               const struct pe_geom *g, const struct pe_mm *mm, float *a)
{
    bool big = (uint64_t)g->k * g->m * g->n >= PE_PAR_MIN_FMAS;
    if (!big) {
        pe_pack_a(st, g->groups, g->m, a, core_scratch(ctx, 2));
        pe_mm_run_panels(mm, 0, mm->n, core_scratch(ctx, 1));
        return EMU_OK;
    }
    struct pe_fused_job j = {.st = st, .g = g, .mm = mm,
                             .call = atomic_fetch_add(&pe_fused_calls, 1) + 1};
    atomic_init(&j.no_scratch, false);
    par_for((g->n + PE_PANEL_PAR_COLS - 1) / PE_PANEL_PAR_COLS, pe_fused_part, &j);
    if (atomic_load(&j.no_scratch))
        return core_fail(ctx, EMU_RESOURCE, "nc_matmul: out of host memory for a "
                         "helper thread's scratch rows");
    return EMU_OK;
}

/* Pack both operands (b: the moving panels, sized for g) and multiply
 * into dst. */
static emu_status pe_multiply_with(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                   const struct ap_view *dst, const struct ap_view *st,
                                   const struct ap_view *mv, const struct pe_geom *g, float *b)
{
    float *a = core_scratch(ctx, 0);
    emu_status s = pe_pack_both(ctx, st, mv, g, a, b);
    if (s == EMU_OK && ISA_ARG_FLAG(insn, nc_matmul, stationary_onezero))
        s = pe_check_onezero(ctx, "stationary", st->dtype, a, pe_pack_a_floats(g->k, g->m));
    if (s == EMU_OK && ISA_ARG_FLAG(insn, nc_matmul, moving_onezero))
        s = pe_check_onezero(ctx, "moving", mv->dtype, b, pe_pack_b_floats(g->k, g->n));
    if (s != EMU_OK)
        return s;
    struct pe_mm mm = {.k = g->k, .m = g->m, .n = g->n, .a = a, .b = b,
                       .accumulate = ISA_ARG_FLAG(insn, nc_matmul, accumulate)};
    mm.c = pe_direct_dst(dst, &mm.ldc);
    if (mm.c != NULL) {
        pe_mm_run(&mm);
        return EMU_OK;
    }
    s = pe_run_staged(ctx, &mm, dst);
    return s == EMU_RESOURCE ? pe_no_memory(ctx, g) : s;
}

/* ---- accumulation groups ------------------------------------------------------ */

/* A run of nc_matmul instructions that accumulate into one PSUM tile, run
 * as one job: the instruction and the ones right after it in the stream
 * (ctx->fuse_max allows them) that wait on nothing, accumulate into the
 * same dst with the same tile, flags and shapes, and take the common
 * path. Their stationary operands are packed first, each into its place
 * in one shared buffer; then each part, PE_GROUP_COLS output columns,
 * runs every instruction of the group in order on its columns, packing
 * its own moving panels. Each output element is still one fmaf chain over
 * k, instruction after instruction, so the bits are the ones of running
 * them one by one; two hand-offs serve the whole group instead of one per
 * instruction. */
#define PE_GROUP_MAX 32u      /* instructions in one group at most */
#define PE_GROUP_COLS PE_PANEL_PAR_COLS /* output columns per part: 128 (32 cost 16% more CPU,
                                          their moving panels packed in runs too short) */
#define PE_GROUP_A_SLOT 4u    /* the PE's scratch slot holding the packed stationaries */
#define PE_ACC_BIT (1u << ISA_SLOT_FLAG_nc_matmul_accumulate)

/* One accumulation group under way (the calling thread's own). */
struct pe_group_job {
    struct pe_geom g;                 /* the shapes, every instruction's */
    struct ap_view st[PE_GROUP_MAX];  /* each instruction's stationary operand */
    struct ap_view mv[PE_GROUP_MAX];  /* each one's moving operand */
    bool acc[PE_GROUP_MAX];           /* each one accumulates (the first may not) */
    uint32_t count;                   /* instructions in the group */
    float *a;                         /* packed stationaries, a_floats apart */
    size_t a_floats;                  /* floats of one packed stationary */
    float *c;                         /* the dst they share: row 0 */
    ptrdiff_t ldc;                    /* its row stride in floats */
    atomic_bool no_scratch;           /* a part found no scratch row (out of memory) */
};

static _Thread_local struct pe_group_job pe_group; /* a few KiB: off the stack */
static atomic_bool pe_groups_off;                  /* pe_groups_set(false) */

void pe_groups_set(bool on)
{
    atomic_store_explicit(&pe_groups_off, !on, memory_order_relaxed);
}

/* Can instruction `next` join the group that insn (shapes g) opened? Binds
 * its operands into st and mv when it can. */
static bool pe_group_joins(const struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                           const struct isa_insn *next, size_t pc, const struct pe_geom *g,
                           struct ap_view *st, struct ap_view *mv)
{
    if (next->opcode != ISA_OP_nc_matmul || next->wait[0].kind != ISA_SYNC_NONE ||
        isa_insn_dynamic(next) ||  /* runs only on its own (dynap.h) */
        !ISA_ARG_FLAG(next, nc_matmul, accumulate) ||
        (next->flags | PE_ACC_BIT) != (insn->flags | PE_ACC_BIT) ||
        ISA_ARG_ENUM(next, nc_matmul, perf) != ISA_ARG_ENUM(insn, nc_matmul, perf) ||
        memcmp(next->imm, insn->imm, sizeof next->imm) != 0 ||
        memcmp(&next->ap[ISA_AP_SLOT(nc_matmul, dst)], &insn->ap[ISA_AP_SLOT(nc_matmul, dst)],
               sizeof next->ap[0]) != 0)
        return false;
    struct isa_exec_ctx c2 = *ctx; /* its own error text, thrown away */
    c2.insn = next;
    c2.pc = pc;
    struct ap_view dst;
    struct pe_geom g2 = {0};
    return pe_bind3(&c2, &dst, st, mv) == EMU_OK && pe_check_perf(&c2, next, &g2.groups) ==
           EMU_OK && pe_check_shapes(&c2, &dst, st, mv, &g2) == EMU_OK && g2.k == g->k &&
           g2.m == g->m && g2.n == g->n && g2.groups == g->groups &&
           pe_panel_src_ok(mv, g->groups);
}

/* Fill pe_group with insn and the instructions that join it; its count. */
static uint32_t pe_group_collect(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                 const struct ap_view *st, const struct ap_view *mv,
                                 const struct pe_geom *g)
{
    struct pe_group_job *j = &pe_group;
    size_t a_floats = pe_pack_a_floats(g->k, g->m);
    size_t room = CORE_SCRATCH_ELEMS / a_floats, max = ctx->fuse_max + 1;
    max = max < room ? max : room;
    max = max < PE_GROUP_MAX ? max : PE_GROUP_MAX;
    j->g = *g;
    j->st[0] = *st;
    j->mv[0] = *mv;
    j->acc[0] = ISA_ARG_FLAG(insn, nc_matmul, accumulate);
    j->a_floats = a_floats;
    uint32_t n = 1;
    const struct isa_insn *code = ctx->prog->code[ctx->engine];
    while (n < max && pe_group_joins(ctx, insn, &code[ctx->pc + n], ctx->pc + n, g, &j->st[n],
                                     &j->mv[n])) {
        j->acc[n] = true;
        n++;
    }
    j->count = n;
    return n;
}

static void pe_group_pack_part(void *arg, size_t part)
{
    struct pe_group_job *j = arg;
    float *tmp = par_scratch(0); /* this thread's own */
    if (tmp == NULL) {
        atomic_store(&j->no_scratch, true);
        return;
    }
    pe_pack_a(&j->st[part], j->g.groups, j->g.m, j->a + part * j->a_floats, tmp);
}

static void pe_group_part(void *arg, size_t part)
{
    struct pe_group_job *j = arg;
    float *buf = par_scratch(1); /* this thread's own */
    if (buf == NULL) {
        atomic_store(&j->no_scratch, true);
        return;
    }
    uint32_t n0 = (uint32_t)part * PE_GROUP_COLS;
    for (uint32_t i = 0; i < j->count; i++) {
        struct pe_mm mm = {.k = j->g.k, .m = j->g.m, .n = j->g.n, .a = j->a + i * j->a_floats,
                           .b_src = &j->mv[i], .b_groups = j->g.groups, .c = j->c,
                           .ldc = j->ldc, .accumulate = j->acc[i]};
        pe_mm_run_panels(&mm, n0, n0 + PE_GROUP_COLS, buf);
    }
}

/* Run insn with the instructions after it that form its accumulation
 * group, when there are any and a split may pay; false: run it alone. */
static bool pe_run_group(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                         const struct ap_view *st, const struct ap_view *mv,
                         const struct pe_geom *g, float *c, ptrdiff_t ldc, emu_status *status)
{
    if (ctx->fuse_max == 0 || !par_may_split() ||
        atomic_load_explicit(&pe_groups_off, memory_order_relaxed))
        return false;
    uint32_t n = pe_group_collect(ctx, insn, st, mv, g);
    if (n < 2 || (uint64_t)g->k * g->m * g->n * n < PE_PAR_MIN_FMAS)
        return false;
    struct pe_group_job *j = &pe_group;
    j->a = core_scratch(ctx, PE_GROUP_A_SLOT);
    j->c = c;
    j->ldc = ldc;
    atomic_init(&j->no_scratch, false);
    par_for(n, pe_group_pack_part, j);
    if (!atomic_load(&j->no_scratch))
        par_for((g->n + PE_GROUP_COLS - 1) / PE_GROUP_COLS, pe_group_part, j);
    *status = atomic_load(&j->no_scratch)
                  ? core_fail(ctx, EMU_RESOURCE, "nc_matmul: out of host memory for a helper "
                              "thread's scratch rows")
                  : EMU_OK;
    ctx->fused = *status == EMU_OK ? n - 1 : 0;
    return true;
}

/* The common case, fp32 dst in place, a moving operand of flat bf16 or
 * fp32 rows and no onezero hint to check: the moving panels are packed
 * inside the product, each by the thread that multiplies it. */
static bool pe_multiply_fused(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                              const struct ap_view *dst, const struct ap_view *st,
                              const struct ap_view *mv, const struct pe_geom *g,
                              emu_status *status)
{
    float *a = core_scratch(ctx, 0);
    struct pe_mm mm = {.k = g->k, .m = g->m, .n = g->n, .a = a, .b_src = mv,
                       .b_groups = g->groups,
                       .accumulate = ISA_ARG_FLAG(insn, nc_matmul, accumulate)};
    if (ISA_ARG_FLAG(insn, nc_matmul, stationary_onezero) ||
        ISA_ARG_FLAG(insn, nc_matmul, moving_onezero) ||
        !pe_panel_src_ok(mv, g->groups))
        return false;
    mm.c = pe_direct_dst(dst, &mm.ldc);
    if (mm.c == NULL)
        return false;
    if (!pe_run_group(ctx, insn, st, mv, g, mm.c, mm.ldc, status))
        *status = pe_run_fused(ctx, st, g, &mm, a);
    return true;
}

/* pe_multiply_fused when it applies; else both operands packed whole
 * first, the moving one on the heap when wider than a scratch row (v4). */
static emu_status pe_multiply(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                              const struct ap_view *dst, const struct ap_view *st,
                              const struct ap_view *mv, const struct pe_geom *g)
{
    emu_status fused;
    if (pe_multiply_fused(ctx, insn, dst, st, mv, g, &fused))
        return fused;
    float *own;
    float *b = pe_buffer(ctx, 1, pe_pack_b_floats(g->k, g->n), &own);
    if (b == NULL)
        return pe_no_memory(ctx, g);
    emu_status s = pe_multiply_with(ctx, insn, dst, st, mv, g, b);
    free(own);
    return s;
}

/* For each column n of the moving operand, the row k holding its one 1.0. */
static emu_status pe_select_rows(struct isa_exec_ctx *ctx, const struct ap_view *mv,
                                 uint32_t *sel)
{
    float *tmp = core_scratch(ctx, 0);
    for (uint64_t n = 0; n < mv->elems; n++)
        sel[n] = UINT32_MAX;
    for (uint32_t k = 0; k < mv->rows; k++) {
        bool direct;
        const float *row = ap_row_get(mv, k, tmp, &direct);
        for (uint64_t n = 0; n < mv->elems; n++) {
            if (row[n] == 0.0f)
                continue;
            if (row[n] != 1.0f || sel[n] != UINT32_MAX)
                return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul transpose mode "
                                 "needs a moving operand whose columns each hold one 1.0 (an "
                                 "identity or permutation matrix); column %" PRIu64 " does not",
                                 n);
            sel[n] = k;
        }
    }
    for (uint64_t n = 0; n < mv->elems; n++)
        if (sel[n] == UINT32_MAX)
            return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul transpose mode: "
                             "column %" PRIu64 " of the moving operand holds no 1.0", n);
    return EMU_OK;
}

/* Copy one element of type sdt to a dst element of type ddt (checked by
 * pe_transpose_mode): same type, fp32 (exact value), or fp8 into 16 bits. */
static void pe_move_elem(uint8_t *d, uint32_t ddt, const uint8_t *s, uint32_t sdt)
{
    if (pe_same_type(ddt, sdt)) {
        memcpy(d, s, isa_dtype_size(sdt));
    } else if (pe_is_f32(ddt)) {
        float f = num_to_f32(sdt, s);
        memcpy(d, &f, sizeof f);
    } else {
        uint16_t w = *s;
        memcpy(d, &w, sizeof w);
    }
}

/* NeuronCore-v3 transpose mode: dst[m][n] = stationary[k(n)][m], bit-exact,
 * where moving column n selects row k(n). */
static emu_status pe_transpose_mode(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                    const struct ap_view *dst, const struct ap_view *st,
                                    const struct ap_view *mv, const struct pe_geom *g)
{
    uint32_t sdt = st->dtype, ddt = dst->dtype;
    bool ok = pe_same_type(ddt, sdt) || pe_is_f32(ddt) || (pe_is_fp8(sdt) && dst->esize == 2);
    if (!ok || ISA_ARG_FLAG(insn, nc_matmul, accumulate))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul transpose mode writes "
                         "the stationary type, fp32 or (fp8 input) 16-bit elements, without "
                         "accumulate; dst is %s", isa_dtype_name(ddt));
    uint32_t *sel = (uint32_t *)(void *)core_scratch(ctx, 1);
    emu_status s = pe_select_rows(ctx, mv, sel);
    for (uint32_t m = 0; s == EMU_OK && m < g->m; m++)
        for (uint32_t n = 0; n < g->n; n++)
            pe_move_elem(ap_elem_ptr(dst, m, n), ddt, ap_elem_ptr(st, sel[n], m), sdt);
    return s;
}

emu_status isa_exec_nc_matmul(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    struct ap_view dst, st, mv;
    struct pe_geom g = {0};
    emu_status s = pe_bind3(ctx, &dst, &st, &mv);
    if (s == EMU_OK)
        s = pe_check_perf(ctx, insn, &g.groups);
    if (s == EMU_OK)
        s = pe_check_shapes(ctx, &dst, &st, &mv, &g);
    if (s == EMU_OK)
        s = pe_check_tiles(ctx, insn, &g);
    if (s != EMU_OK)
        return s;
    if (ISA_ARG_FLAG(insn, nc_matmul, transpose) && ctx->core->gen >= 3)
        return pe_transpose_mode(ctx, insn, &dst, &st, &mv, &g);
    if (!pe_is_f32(dst.dtype) && !(ctx->core->gen >= 4 && dst.dtype == ISA_DT_BF16))
        return core_fail(ctx, EMU_EXEC_ERR, "nc_matmul writes fp32 PSUM (or bf16 "
                         "on NeuronCore-v4); dst is %s", isa_dtype_name(dst.dtype));
    s = pe_check_bank(ctx, insn);
    return s != EMU_OK ? s : pe_multiply(ctx, insn, &dst, &st, &mv, &g);
}

/* ---- nc_transpose -------------------------------------------------------------- */

/* NeuronCore-v2 PE transpose is a matmul with the identity: out[m][n] is
 * data[n][m] (+0 for -0) unless a non-finite data[k][m], k != n, or a NaN
 * data[n][m] turns it into NaN. in: data as fp32 rows (p x f). */
static void pe_transpose_v2(const struct ap_view *dst, const float *in, uint32_t p, uint32_t f,
                            float *row)
{
    for (uint32_t m = 0; m < f; m++) {
        uint32_t bad = 0;
        for (uint32_t k = 0; k < p; k++)
            bad += !isfinite(in[(size_t)k * f + m]);
        for (uint32_t n = 0; n < p; n++) {
            float x = in[(size_t)n * f + m];
            bool spoiled = bad > (uint32_t)!isfinite(x) || isnan(x);
            uint32_t nan = PE_CANON_NAN;
            if (spoiled)
                memcpy(&x, &nan, sizeof x);
            row[n] = x == 0.0f ? 0.0f : x;
        }
        ap_row_store(dst, m, row);
    }
}

/* Bit-exact transpose through a staging copy (so dst may alias data). */
static void pe_transpose_bits(const struct ap_view *dst, const struct ap_view *data, uint8_t *buf)
{
    size_t es = data->esize;
    for (uint32_t p = 0; p < data->rows; p++)
        for (uint64_t f = 0; f < data->elems; f++)
            memcpy(buf + (p * data->elems + f) * es, ap_elem_ptr(data, p, f), es);
    for (uint64_t f = 0; f < data->elems; f++)
        for (uint32_t p = 0; p < data->rows; p++)
            memcpy(ap_elem_ptr(dst, (uint32_t)f, p), buf + (p * data->elems + f) * es, es);
}

/* Engine, memories, sizes and types of an nc_transpose. */
static emu_status pe_check_transpose(struct isa_exec_ctx *ctx, const struct ap_view *dst,
                                     const struct ap_view *data)
{
    bool pe = ctx->engine == ISA_ENG_PE;
    uint32_t max = pe ? PE_MAX_M : PE_DVE_TRANSPOSE_MAX;
    if (pe && (data->mem != ISA_MEM_SBUF || dst->mem != ISA_MEM_PSUM))
        return core_fail(ctx, EMU_EXEC_ERR, "PE nc_transpose reads SBUF and "
                         "writes PSUM");
    if (data->rows > max || data->elems > max)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_transpose of %u x %" PRIu64
                         " on %s: at most %u x %u", data->rows, data->elems,
                         isa_engine_name(ctx->engine), max, max);
    if (dst->rows != data->elems || dst->elems != data->rows || dst->dtype != data->dtype)
        return core_fail(ctx, EMU_EXEC_ERR, "nc_transpose of %u x %" PRIu64
                         " %s into %u x %" PRIu64 " %s: dst must be the transposed shape, same "
                         "type", data->rows, data->elems, isa_dtype_name(data->dtype),
                         dst->rows, dst->elems, isa_dtype_name(dst->dtype));
    return EMU_OK;
}

emu_status isa_exec_nc_transpose(struct isa_exec_ctx *ctx, const struct isa_insn *insn)
{
    (void)insn;
    struct ap_view dst, data;
    emu_status s = ap_bind(ctx, ISA_AP_SLOT(nc_transpose, dst), &dst);
    if (s == EMU_OK)
        s = ap_bind(ctx, ISA_AP_SLOT(nc_transpose, data), &data);
    if (s == EMU_OK)
        s = pe_check_transpose(ctx, &dst, &data);
    if (s != EMU_OK)
        return s;
    if (ctx->engine == ISA_ENG_PE && ctx->core->gen < 3 && isa_dtype_is_float(data.dtype)) {
        float *in = core_scratch(ctx, 0);
        for (uint32_t p = 0; p < data.rows; p++)
            ap_row_load(&data, p, in + (size_t)p * data.elems);
        pe_transpose_v2(&dst, in, data.rows, (uint32_t)data.elems, core_scratch(ctx, 1));
        return EMU_OK;
    }
    pe_transpose_bits(&dst, &data, (uint8_t *)core_scratch(ctx, 0));
    return EMU_OK;
}
