/*
 * isa_generation.c: the generation an instruction needs (see
 * isa_generation.h). An op's own minimum is the gen column of the op table
 * (emu/isa/isa_ops.h); the rules here are the forms of an op that need a
 * later generation than the op itself.
 */
#include "emu/isa/isa_generation.h"

#include <stdio.h>

#include "emu/isa/isa_args.h"

/* An op that v4 added to the Vector engine. */
static bool gen_v4_on_dve(unsigned opcode)
{
    return opcode == ISA_OP_exponential || opcode == ISA_OP_rand_get_state ||
           opcode == ISA_OP_rand_set_state;
}

/* An ALU operator that only NeuronCore-v4 has. */
static bool gen_v4_alu(unsigned op)
{
    return op == ISA_ALU_abs_max || op == ISA_ALU_abs_min || op == ISA_ALU_square ||
           op == ISA_ALU_relu;
}

/* Elements per partition of access pattern ap. */
static uint64_t gen_ap_elems(const struct isa_ap *ap)
{
    uint64_t n = 1;
    for (unsigned d = 0; d < ap->ndims && d < ISA_MAX_DIMS; d++)
        n *= ap->dim[d].count;
    return n;
}

/* nc_matmul's moving free size N (columns per contraction row). */
static uint64_t gen_matmul_n(const struct isa_insn *insn)
{
    uint64_t n = gen_ap_elems(ISA_ARG_AP(insn, nc_matmul, moving));
    return ISA_ARG_ENUM(insn, nc_matmul, perf) == ISA_PERF_double_row ? n / 2 : n;
}

/* nc_matmul in transpose mode writing bf16: NeuronCore-v3's transpose mode
 * moves 16-bit inputs into PSUM as they are (the Trainium2 guide), so a
 * bf16 dst is a v3 form there, not the v4 bf16 accumulation. */
static bool gen_v3_transpose_16(const struct isa_insn *insn)
{
    return insn->opcode == ISA_OP_nc_matmul && ISA_ARG_FLAG(insn, nc_matmul, transpose) &&
           ISA_ARG_AP(insn, nc_matmul, dst)->dtype == ISA_DT_BF16;
}

/* An operand or enum of insn that only v4 has; describes it in what. */
static bool gen_v4_form(const struct isa_insn *insn, const char *op, char *what, size_t cap)
{
    const struct isa_op_desc *d = isa_op_lookup(insn->opcode);
    for (int i = 0; d != NULL && i < d->nfields; i++) {
        const struct isa_field *f = &d->fields[i];
        if ((f->kind == ISA_FK_AP || f->kind == ISA_FK_APF) &&
            insn->ap[f->slot].mem != ISA_MEM_NONE && insn->ap[f->slot].dtype >= ISA_DT_NRT_COUNT) {
            snprintf(what, cap, "%s with %s %s", op, f->name, isa_dtype_name(insn->ap[f->slot].dtype));
            return true;
        }
        if ((f->kind == ISA_FK_AP || f->kind == ISA_FK_APF) &&
            insn->ap[f->slot].dyn == ISA_DYN_INDEX) {
            snprintf(what, cap, "%s with tensor indirection on %s", op, f->name);
            return true;
        }
        if (f->kind == ISA_FK_ENUM && f->etype == ISA_ET_ALU && gen_v4_alu(insn->enums[f->slot])) {
            snprintf(what, cap, "%s %s=%s", op, f->name,
                     isa_enum_name(ISA_ET_ALU, insn->enums[f->slot]));
            return true;
        }
    }
    if (insn->opcode == ISA_OP_nc_matmul && !gen_v3_transpose_16(insn) &&
        ISA_ARG_AP(insn, nc_matmul, dst)->dtype == ISA_DT_BF16) {
        snprintf(what, cap, "nc_matmul with a bf16 dst");
        return true;
    }
    if (insn->opcode == ISA_OP_dma_copy &&
        ISA_ARG_ENUM(insn, dma_copy, op) == ISA_DMAOP_accumulate) {
        snprintf(what, cap, "dma_copy op=accumulate (SBUF read-add-write)");
        return true;
    }
    int64_t prio = 0;
    if (insn->opcode == ISA_OP_dma_copy)
        prio = ISA_ARG_INT(insn, dma_copy, priority);
    else if (insn->opcode == ISA_OP_dma_transpose)
        prio = ISA_ARG_INT(insn, dma_transpose, priority);
    if (prio != 0) {
        snprintf(what, cap, "%s priority=%lld", op, (long long)prio);
        return true;
    }
    if (insn->opcode == ISA_OP_nc_matmul && gen_matmul_n(insn) > ISA_PE_MAX_N_V2) {
        snprintf(what, cap, "nc_matmul with %llu moving columns (over %u)",
                 (unsigned long long)gen_matmul_n(insn), ISA_PE_MAX_N_V2);
        return true;
    }
    return false;
}

/* all_to_all_v's receive displacements: NeuronSwitch machines (v4) only. */
static bool gen_v4_rdispls(const struct isa_insn *insn, char *what, size_t cap)
{
    if (insn->opcode != ISA_OP_all_to_all_v || !ISA_ARG_FLAG(insn, all_to_all_v, has_rdispls))
        return false;
    snprintf(what, cap, "all_to_all_v has_rdispls");
    return true;
}

unsigned isa_insn_min_gen(const struct isa_insn *insn, char *what, size_t cap)
{
    char buf[96];
    const struct isa_op_desc *d = isa_op_lookup(insn->opcode);
    const char *op = d != NULL ? d->name : "?";
    if (what == NULL) {
        what = buf;
        cap = sizeof buf;
    }
    snprintf(what, cap, "%s", op);
    unsigned gen = d != NULL ? d->min_gen : 2;
    if (gen >= 4)
        return gen;
    if (gen_v4_on_dve(insn->opcode) && insn->engine == ISA_ENG_DVE) {
        snprintf(what, cap, "%s on the Vector engine", op);
        return 4;
    }
    if (gen_v4_form(insn, op, what, cap) || gen_v4_rdispls(insn, what, cap))
        return 4;
    if (gen_v3_transpose_16(insn)) {
        snprintf(what, cap, "nc_matmul transpose mode into a bf16 dst");
        return gen > 3 ? gen : 3;
    }
    snprintf(what, cap, "%s", op);
    return gen;
}
