/*
 * dynap.c: run-time offsets of on-chip access patterns (dynap.h): the
 * NKI views addressed by a run-time value (ap(scalar_offset=) and a
 * dynamic select() of an SBUF/PSUM tile) move their pattern by a register
 * of the engine that runs the instruction; views with tensor indirection
 * (NKI's .indirect(index)) take each column from an offset in an SBUF
 * index, gathered before the instruction and scattered after it.
 */
#include "emu/core/dynap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The field of insn's op whose access pattern is in slot `slot`, or NULL. */
static const struct isa_field *dynap_field(const struct isa_insn *insn, unsigned slot)
{
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    for (unsigned f = 0; op != NULL && f < op->nfields; f++)
        if ((op->fields[f].kind == ISA_FK_AP || op->fields[f].kind == ISA_FK_APF) &&
            op->fields[f].slot == slot)
            return &op->fields[f];
    return NULL;
}

/* The name of the operand in slot `slot` of insn's op, for messages. */
static const char *dynap_name(const struct isa_insn *insn, unsigned slot)
{
    const struct isa_field *f = dynap_field(insn, slot);
    return f != NULL ? f->name : "?";
}

/* Apply the register offset of ap (in place). */
static emu_status dynap_apply(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                              unsigned slot, struct isa_ap *ap)
{
    int64_t v = ctx->core->reg[ctx->engine][ap->dyn_reg % ISA_NUM_REGS];
    size_t es = isa_dtype_size(ap->dtype);
    if (v < 0 || v > (int64_t)ap->dyn_max)
        return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its run-time offset (register r%u "
                         "= %" PRId64 " bytes) is outside the 0..%" PRIu32 " bytes its view "
                         "allows", dynap_name(insn, slot), ap->dyn_reg, v, ap->dyn_max);
    if (es > 1 && v % (int64_t)es != 0)
        return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its run-time offset (register r%u "
                         "= %" PRId64 " bytes) is not a whole number of %zu-byte elements",
                         dynap_name(insn, slot), ap->dyn_reg, v, es);
    ap->offset += (uint64_t)v;
    ap->dyn = ISA_DYN_NONE;
    ap->dyn_reg = 0;
    ap->dyn_max = 0;
    return EMU_OK;
}

/* ---- tensor indirection ------------------------------------------------------ */

/* Element `col` of partition `part` (from the index's first) of ap's index. */
static int64_t dynap_index_value(const struct core *c, const struct isa_ap *ap, uint32_t part,
                                 uint32_t col)
{
    const uint8_t *p = c->sbuf + (uint64_t)(ap->ix.start_part + part) * c->sbuf_part_bytes +
                       ap->ix.offset + (uint64_t)col * isa_dtype_size(ap->ix.dtype);
    switch (ap->ix.dtype) {
    case ISA_DT_I8: return *(const int8_t *)p;
    case ISA_DT_U8: return *p;
    case ISA_DT_I16: return *(const int16_t *)(const void *)p;
    case ISA_DT_U16: return *(const uint16_t *)(const void *)p;
    case ISA_DT_I32: return *(const int32_t *)(const void *)p;
    default: return *(const uint32_t *)(const void *)p;  /* U32 (isa.c checks) */
    }
}

/* Read the offset of every column of slot's operand into off[], each
 * checked against 0..dyn_max; *lo and *hi: the smallest and largest. */
static emu_status dynap_index_offsets(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                      unsigned slot, uint32_t *off, uint32_t *lo, uint32_t *hi)
{
    const struct isa_ap *ap = &insn->ap[slot];
    const struct core *c = ctx->core;
    if ((uint64_t)ap->ix.offset + (uint64_t)ap->ix.cols * isa_dtype_size(ap->ix.dtype) >
        c->sbuf_part_bytes)
        return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its index reaches past the %" PRIu32
                         " bytes of an SBUF partition", dynap_name(insn, slot),
                         c->sbuf_part_bytes);
    *lo = UINT32_MAX;
    *hi = 0;
    for (uint32_t i = 0; i < ap->dim[0].count; i++) {
        uint32_t part, col;
        (void)isa_index_where(ap, ctx->engine, i, &part, &col);  /* isa.c checked it fits */
        int64_t v = dynap_index_value(c, ap, part, col);
        if (v < 0 || v > (int64_t)ap->dyn_max)
            return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its index gives column %" PRIu32
                             " the offset %" PRId64 " (index partition %u, element %" PRIu32
                             "), outside the 0..%" PRIu32 " its view allows",
                             dynap_name(insn, slot), i, v, ap->ix.start_part + part, col,
                             ap->dyn_max);
        off[i] = (uint32_t)v;
        *lo = off[i] < *lo ? off[i] : *lo;
        *hi = off[i] > *hi ? off[i] : *hi;
    }
    return EMU_OK;
}

/* Row r's first byte of an on-chip pattern (before its free offset). */
static uint8_t *dynap_row(const struct core *c, const struct isa_ap *ap, uint32_t r)
{
    bool sbuf = ap->mem == ISA_MEM_SBUF;
    uint64_t part_bytes = sbuf ? c->sbuf_part_bytes : ISA_PSUM_PART_BYTES;
    uint32_t p = ap->start_part + r * (uint32_t)ap->part_step;
    return (sbuf ? c->sbuf : c->psum) + (uint64_t)p * part_bytes + ap->offset;
}

/* Copy the columns of ap (its static pattern, offsets off[]) between the
 * memory and the packed rows of buf: gather (to_stage) or scatter. */
static void dynap_move(const struct core *c, const struct isa_ap *ap, const uint32_t *off,
                       uint8_t *buf, bool to_stage)
{
    size_t es = isa_dtype_size(ap->dtype);
    uint32_t n = ap->dim[0].count;
    uint64_t step = (uint64_t)ap->dim[0].step * es;
    for (uint32_t r = 0; r < ap->num_part; r++) {
        uint8_t *row = dynap_row(c, ap, r), *st = buf + (uint64_t)r * n * es;
        for (uint32_t i = 0; i < n; i++) {
            uint8_t *m = row + off[i] * step;
            if (to_stage)
                memcpy(st + i * es, m, es);
            else
                memcpy(m, st + i * es, es);
        }
    }
}

/* Gather slot's columns into stage and make its pattern (in ap, the copy
 * the semantics and the race checker see) static: its columns (n, as the
 * semantics count them) from the smallest offset reached, dyn_max the
 * span of offsets reached from there (race.c). */
static emu_status dynap_index_apply(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                                    unsigned slot, struct isa_ap *ap, struct dynap_stage *stage)
{
    const struct core *c = ctx->core;
    if (c->gen < 4)
        return core_fail(ctx, EMU_EXEC_ERR, "operand '%s': tensor indirection needs "
                         "NeuronCore-v4 (Trn3); this core is v%" PRIu32, dynap_name(insn, slot),
                         c->gen);
    size_t es = isa_dtype_size(ap->dtype);
    uint32_t n = ap->dim[0].count;
    uint64_t part_bytes = ap->mem == ISA_MEM_SBUF ? c->sbuf_part_bytes : ISA_PSUM_PART_BYTES;
    if (ap->offset + ((uint64_t)ap->dyn_max * (uint64_t)ap->dim[0].step + 1) * es > part_bytes)
        return core_fail(ctx, EMU_EXEC_OOB, "operand '%s': its columns may reach past the %"
                         PRIu64 " bytes of a partition", dynap_name(insn, slot), part_bytes);
    stage->off[slot] = malloc((size_t)n * sizeof(uint32_t));
    stage->buf[slot] = malloc((size_t)ap->num_part * n * es);
    if (stage->off[slot] == NULL || stage->buf[slot] == NULL)
        return core_fail(ctx, EMU_RESOURCE, "operand '%s': no host memory to gather its "
                         "%" PRIu32 " columns", dynap_name(insn, slot), n);
    uint32_t lo = 0, hi = 0;
    emu_status st = dynap_index_offsets(ctx, insn, slot, stage->off[slot], &lo, &hi);
    if (st != EMU_OK)
        return st;
    stage->ap[slot] = *ap;
    dynap_move(c, ap, stage->off[slot], stage->buf[slot], true);
    ap->offset += (uint64_t)lo * (uint64_t)ap->dim[0].step * es;
    ap->dyn = ISA_DYN_NONE;
    ap->dyn_max = hi - lo;   /* the offsets it reached, from lo: the race checker's span */
    return EMU_OK;
}

/* Is slot written by insn's op? */
static bool dynap_written(const struct isa_insn *insn, unsigned slot)
{
    const struct isa_field *f = dynap_field(insn, slot);
    return f != NULL && (f->attr & ISA_FA_OUT) != 0;
}

void dynap_finish(struct isa_exec_ctx *ctx, struct dynap_stage *stage, bool ran)
{
    for (unsigned i = 0; i < ISA_MAX_AP; i++) {
        if (ran && stage->buf[i] != NULL && stage->off[i] != NULL && dynap_written(ctx->insn, i))
            dynap_move(ctx->core, &stage->ap[i], stage->off[i], stage->buf[i], false);
        free(stage->buf[i]);
        free(stage->off[i]);
        stage->buf[i] = NULL;
        stage->off[i] = NULL;
    }
    ctx->stage = NULL;
}

emu_status dynap_resolve(struct isa_exec_ctx *ctx, const struct isa_insn *insn,
                         struct isa_insn *buf, const struct isa_insn **live,
                         struct dynap_stage *stage)
{
    *live = insn;
    memset(stage, 0, sizeof *stage);
    if (!isa_insn_dynamic(insn))
        return EMU_OK;
    *buf = *insn;
    *live = buf;
    for (unsigned i = 0; i < ISA_MAX_AP; i++) {
        emu_status st = EMU_OK;
        if (buf->ap[i].dyn == ISA_DYN_FREE)
            st = dynap_apply(ctx, insn, i, &buf->ap[i]);
        else if (buf->ap[i].dyn == ISA_DYN_INDEX)
            st = dynap_index_apply(ctx, insn, i, &buf->ap[i], stage);
        if (st != EMU_OK)
            return st;
    }
    ctx->stage = stage;
    return EMU_OK;
}
