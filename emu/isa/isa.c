/*
 * isa.c: the op table turned into descriptors, plus encoding, decoding and
 * validation of trnemu ISA version 1 instructions and streams, and the
 * access-pattern arithmetic (extents, bounds) the executor relies on.
 *
 * Byte layout of one instruction (little-endian; docs/isa.md has it too):
 *   0 magic|version  1 opcode  2 flags  3 length in words (128)
 *   4 reserved       8 wait[4]  40 signal[4]  72 ap[6] (56 bytes each)
 *   408 fimm[4]  424 imm[4]  456 enums[8]  464 aux (pattern or mask)
 *   500 reserved up to 512.
 */
#include "emu/isa/isa.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu/log.h"

/* ---- layout ------------------------------------------------------------ */
#define OFF_RSVD 4
#define OFF_WAIT 8
#define OFF_SIGNAL 40
#define OFF_AP 72
#define AP_BYTES 56
#define OFF_FIMM 408
#define OFF_IMM 424
#define OFF_ENUM 456
#define OFF_AUX 464
#define AUX_BYTES 36
#define OFF_TAIL 500
#define SYNC_BYTES 8

_Static_assert(OFF_SIGNAL == OFF_WAIT + ISA_MAX_WAIT * SYNC_BYTES, "layout");
_Static_assert(OFF_AP == OFF_SIGNAL + ISA_MAX_SIGNAL * SYNC_BYTES, "layout");
_Static_assert(OFF_FIMM == OFF_AP + ISA_MAX_AP * AP_BYTES, "layout");
_Static_assert(OFF_IMM == OFF_FIMM + 4 * ISA_MAX_FIMM, "layout");
_Static_assert(OFF_ENUM == OFF_IMM + 8 * ISA_MAX_IMM, "layout");
_Static_assert(OFF_AUX == OFF_ENUM + ISA_MAX_ENUM, "layout");
_Static_assert(OFF_TAIL == OFF_AUX + AUX_BYTES, "layout");
_Static_assert(OFF_TAIL + 12 == ISA_INSN_BYTES, "layout");
_Static_assert(ISA_MASK_BYTES <= AUX_BYTES, "mask fits in aux");

/* ---- the table ----------------------------------------------------------- */
#define ISA_UNPAREN(...) __VA_ARGS__

/* Each op's fields; entry 0 is a placeholder so that empty lists compile. */
#define ISA_OP(mn, code, engines, gen, cost, fields)                              \
    _Static_assert((gen) >= 2 && (gen) <= 4, #mn ": gen is a NeuronCore version"); \
    static const struct isa_field isa_fields_##mn[] = {{.name = NULL}, ISA_UNPAREN fields};
#include "emu/isa/isa_ops.h"
#undef ISA_OP

#define ISA_NFIELDS(name) (sizeof(isa_fields_##name) / sizeof(isa_fields_##name[0]) - 1)

/* emu/isa/isa_args.h names the fields of rows of at most 16 fields. */
#define ISA_OP(mn, code, eng, gen, cost, fields) \
    _Static_assert(ISA_NFIELDS(mn) <= 16, #mn ": isa_args.h reads at most 16 fields");
#include "emu/isa/isa_ops.h"
#undef ISA_OP

static const struct isa_op_desc isa_ops[ISA_OPCODE_SPACE] = {
#define ISA_OP(mn, code, eng, gen, cost, fields)                                      \
    [code] = {#mn, (code), (eng), (gen), ISA_COST_##cost, ISA_NFIELDS(mn), isa_fields_##mn + 1},
#include "emu/isa/isa_ops.h"
#undef ISA_OP
};

#define ISA_ENUM_ITEM(id, name, value) \
    _Static_assert((value) >= 0 && (value) < ISA_ENUM_SPACE, #id "." #name " out of range");
#include "emu/isa/isa_ops.h"
#undef ISA_ENUM_ITEM

static const char *const isa_enum_names[ISA_ET_COUNT][ISA_ENUM_SPACE] = {
#define ISA_ENUM_ITEM(id, name, value) [ISA_ET_##id][value] = #name,
#include "emu/isa/isa_ops.h"
#undef ISA_ENUM_ITEM
};

static const char *const isa_enum_whats[ISA_ET_COUNT] = {
#define ISA_ENUM_TYPE(id, what) [ISA_ET_##id] = what,
#include "emu/isa/isa_ops.h"
#undef ISA_ENUM_TYPE
};

static const char *const isa_engine_names[ISA_ENG_COUNT] = {
    [ISA_ENG_PE] = "pe", [ISA_ENG_ACT] = "act", [ISA_ENG_POOL] = "pool",
    [ISA_ENG_DVE] = "dve", [ISA_ENG_SP] = "sp",
};

static const char *const isa_mem_names[ISA_MEM_COUNT] = {
    [ISA_MEM_SBUF] = "sbuf", [ISA_MEM_PSUM] = "psum", [ISA_MEM_HBM] = "hbm",
};

/* Size and assembly name of each dtype (from emu/num/dtype_list.h). */
static const struct {
    uint8_t size;      /* bytes per element; 0 = not a dtype */
    bool is_float;     /* floating point */
    bool is_packed;    /* a packed x4 container */
    const char *name;  /* assembly name */
} isa_dtypes[ISA_DT_COUNT] = {
#define ISA_DTYPE_ROW(num, isa, code, size, fl, mx, packed, name, asm) \
    [ISA_DT_##isa] = {size, fl, packed, asm},
    EMU_DTYPES(ISA_DTYPE_ROW)
#undef ISA_DTYPE_ROW
};

/* ---- lookups ------------------------------------------------------------- */
static bool name_is(const char *s, const char *name, size_t len)
{
    return s != NULL && strncmp(s, name, len) == 0 && s[len] == '\0';
}

const struct isa_op_desc *isa_op_lookup(unsigned opcode)
{
    if (opcode >= ISA_OPCODE_SPACE || isa_ops[opcode].name == NULL)
        return NULL;
    return &isa_ops[opcode];
}

const struct isa_op_desc *isa_op_by_name(const char *name, size_t len)
{
    for (unsigned i = 0; i < ISA_OPCODE_SPACE; i++)
        if (name_is(isa_ops[i].name, name, len))
            return &isa_ops[i];
    return NULL;
}

const struct isa_op_desc *isa_op_next(unsigned *iter)
{
    while (*iter < ISA_OPCODE_SPACE) {
        unsigned i = (*iter)++;
        if (isa_ops[i].name != NULL)
            return &isa_ops[i];
    }
    return NULL;
}

int isa_op_field(const struct isa_op_desc *op, const char *name, size_t len)
{
    for (int i = 0; i < op->nfields; i++)
        if (name_is(op->fields[i].name, name, len))
            return i;
    return -1;
}

const char *isa_engine_name(unsigned engine)
{
    return engine < ISA_ENG_COUNT ? isa_engine_names[engine] : NULL;
}

int isa_engine_from_name(const char *name, size_t len)
{
    for (int i = 0; i < ISA_ENG_COUNT; i++)
        if (name_is(isa_engine_names[i], name, len))
            return i;
    return -1;
}

size_t isa_dtype_size(unsigned dtype)
{
    return dtype < ISA_DT_COUNT ? isa_dtypes[dtype].size : 0;
}

const char *isa_dtype_name(unsigned dtype)
{
    return dtype < ISA_DT_COUNT ? isa_dtypes[dtype].name : NULL;
}

int isa_dtype_from_name(const char *name, size_t len)
{
    for (int i = 0; i < ISA_DT_COUNT; i++)
        if (name_is(isa_dtypes[i].name, name, len))
            return i;
    return -1;
}

bool isa_dtype_is_float(unsigned dtype)
{
    return dtype < ISA_DT_COUNT && isa_dtypes[dtype].is_float;
}

bool isa_dtype_is_packed(unsigned dtype)
{
    return dtype < ISA_DT_COUNT && isa_dtypes[dtype].is_packed;
}

const char *isa_mem_name(unsigned mem)
{
    return mem < ISA_MEM_COUNT ? isa_mem_names[mem] : NULL;
}

const char *isa_enum_name(unsigned etype, unsigned value)
{
    if (etype >= ISA_ET_COUNT || value >= ISA_ENUM_SPACE)
        return NULL;
    return isa_enum_names[etype][value];
}

int isa_enum_from_name(unsigned etype, const char *name, size_t len)
{
    if (etype >= ISA_ET_COUNT)
        return -1;
    for (int v = 0; v < ISA_ENUM_SPACE; v++)
        if (name_is(isa_enum_names[etype][v], name, len))
            return v;
    return -1;
}

const char *isa_enum_type_what(unsigned etype)
{
    return etype < ISA_ET_COUNT ? isa_enum_whats[etype] : NULL;
}

/* ---- defaults -------------------------------------------------------------- */
static void field_set_default(struct isa_insn *insn, const struct isa_field *f)
{
    switch (f->kind) {
    case ISA_FK_APF: insn->fimm[f->fslot] = (float)f->fdef; break;
    case ISA_FK_F32: insn->fimm[f->slot] = (float)f->fdef; break;
    case ISA_FK_F64: insn->imm[f->slot].f = f->fdef; break;
    case ISA_FK_INT: insn->imm[f->slot].i = f->idef; break;
    case ISA_FK_ENUM: insn->enums[f->slot] = (uint8_t)f->idef; break;
    default: break;
    }
}

emu_status isa_insn_init(struct isa_insn *insn, unsigned engine, unsigned opcode)
{
    const struct isa_op_desc *op = isa_op_lookup(opcode);
    memset(insn, 0, sizeof(*insn));
    if (op == NULL)
        return EMU_INVALID;
    insn->opcode = (uint8_t)opcode;
    insn->engine = (uint8_t)engine;
    for (int i = 0; i < op->nfields; i++)
        field_set_default(insn, &op->fields[i]);
    return EMU_OK;
}

/* ---- validation ------------------------------------------------------------ */
/* Which slots an op uses. */
struct isa_usage {
    uint8_t ap;     /* bit per ap slot */
    uint8_t fimm;   /* bit per fimm slot */
    uint8_t imm;    /* bit per imm slot */
    uint8_t enums;  /* bit per enum slot */
    uint8_t flags;  /* bit per flag */
    bool pattern;   /* pattern used */
    bool mask;      /* mask used */
};

static void op_usage(const struct isa_op_desc *op, struct isa_usage *u)
{
    memset(u, 0, sizeof(*u));
    for (int i = 0; i < op->nfields; i++) {
        const struct isa_field *f = &op->fields[i];
        uint8_t bit = (uint8_t)(1u << f->slot);
        switch (f->kind) {
        case ISA_FK_AP: u->ap |= bit; break;
        case ISA_FK_APF: u->ap |= bit; u->fimm |= (uint8_t)(1u << f->fslot); break;
        case ISA_FK_F32: u->fimm |= bit; break;
        case ISA_FK_F64:
        case ISA_FK_INT: u->imm |= bit; break;
        case ISA_FK_ENUM: u->enums |= bit; break;
        case ISA_FK_FLAG: u->flags |= bit; break;
        case ISA_FK_PATTERN: u->pattern = true; break;
        case ISA_FK_MASK: u->mask = true; break;
        default: break;
        }
    }
}

__attribute__((format(printf, 3, 4)))
static emu_status fault(struct isa_fault *f, int field, const char *fmt, ...)
{
    if (f != NULL) {
        va_list ap;
        f->field = field;
        va_start(ap, fmt);
        vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
        va_end(ap);
    }
    return EMU_INVALID;
}

static bool ap_is_zero(const struct isa_ap *ap)
{
    static const struct isa_ap zero;
    if (ap->mem || ap->dtype || ap->start_part || ap->num_part || ap->ndims ||
        ap->dyn || ap->dyn_reg || ap->dyn_max || ap->part_step || ap->var_id || ap->offset ||
        memcmp(&ap->ix, &zero.ix, sizeof(zero.ix)) != 0)
        return false;
    return memcmp(ap->dim, zero.dim, sizeof(zero.dim)) == 0;
}

/* Free dims: 1..4 in use, each with a count, the rest zero. */
static const char *dims_problem(uint8_t ndims, const struct isa_dim *dim)
{
    if (ndims < 1 || ndims > ISA_MAX_DIMS)
        return "needs 1 to 4 dimensions";
    for (unsigned d = 0; d < ISA_MAX_DIMS; d++) {
        if (d < ndims && dim[d].count == 0)
            return "has a dimension of count 0";
        if (d >= ndims && (dim[d].count != 0 || dim[d].step != 0))
            return "has bytes set in an unused dimension";
    }
    return NULL;
}

/* May the operands of op `opcode` use tensor indirection? The ops the NKI
 * reference lists for it (matmuls, elementwise ops, copies, reductions and
 * activations; python/nki/_core/indirect.py names them for kernel errors). */
static bool index_ok(unsigned opcode)
{
    switch (opcode) {
    case ISA_OP_nc_matmul:
    case ISA_OP_nc_matmul_mx:
    case ISA_OP_tensor_tensor:
    case ISA_OP_tensor_scalar:
    case ISA_OP_tensor_reduce:
    case ISA_OP_tensor_copy:
    case ISA_OP_tensor_copy_predicated:
    case ISA_OP_tensor_scalar_reduce:
    case ISA_OP_tensor_scalar_cumulative:
    case ISA_OP_activation:
    case ISA_OP_activation_reduce:
    case ISA_OP_activate2:
    case ISA_OP_exponential: return true;
    default: return false;
    }
}

/* Tensor indirection (ISA_DYN_INDEX): one free dim of positive step over
 * the offsets, an SBUF index run of an integer type that holds an offset
 * for every column (isa_index_where), no register. */
static emu_status check_ap_index(const struct isa_insn *insn, const struct isa_ap *ap, int fi,
                                 const char *nm, struct isa_fault *f)
{
    const struct isa_ap_index *ix = &ap->ix;
    if (ap->dyn_reg != 0)
        return fault(f, fi, "operand '%s': a register with tensor indirection", nm);
    if (ap->ndims != 1 || ap->dim[0].step < 1)
        return fault(f, fi, "operand '%s': tensor indirection walks one free dimension of "
                     "positive step (its columns)", nm);
    if (ix->mem != ISA_MEM_SBUF)
        return fault(f, fi, "operand '%s': its index is not in SBUF", nm);
    switch (ix->dtype) {
    case ISA_DT_I8: case ISA_DT_U8: case ISA_DT_I16: case ISA_DT_U16: case ISA_DT_I32:
    case ISA_DT_U32: break;
    default:
        return fault(f, fi, "operand '%s': its index dtype %u is not an integer of 1 to 4 "
                     "bytes", nm, ix->dtype);
    }
    if (ix->num_part < 1 || ix->start_part + (unsigned)ix->num_part > ISA_NUM_PARTITIONS ||
        ix->cols < 1)
        return fault(f, fi, "operand '%s': its index (partitions %u + %u, %u columns) is "
                     "not a tile of 0..127", nm, ix->start_part, ix->num_part, ix->cols);
    uint32_t part, col;
    if (!isa_index_where(ap, insn->engine, ap->dim[0].count - 1, &part, &col))
        return fault(f, fi, "operand '%s': %u columns need more index partitions than its "
                     "%u", nm, ap->dim[0].count, ix->num_part);
    return EMU_OK;
}

/* The run-time offset fields: a register shift or tensor indirection only
 * on chip, the fields zero without one. */
static emu_status check_ap_dyn(const struct isa_insn *insn, const struct isa_ap *ap, int fi,
                               const char *nm, struct isa_fault *f)
{
    static const struct isa_ap_index no_ix;
    if (ap->dyn != ISA_DYN_INDEX && memcmp(&ap->ix, &no_ix, sizeof no_ix) != 0)
        return fault(f, fi, "operand '%s': index fields set without tensor indirection", nm);
    if (ap->dyn == ISA_DYN_NONE)
        return ap->dyn_reg == 0 && ap->dyn_max == 0
                   ? EMU_OK
                   : fault(f, fi, "operand '%s': register-offset fields set without a "
                           "register offset", nm);
    if (ap->dyn >= ISA_DYN_COUNT)
        return fault(f, fi, "operand '%s': bad run-time offset kind %u", nm, ap->dyn);
    if (ap->dyn == ISA_DYN_INDEX && ap->mem == ISA_MEM_HBM)
        return fault(f, fi, "operand '%s': tensor indirection on an HBM operand (an "
                     "indirect dma_copy indexes HBM)", nm);
    if (ap->dyn == ISA_DYN_INDEX && !index_ok(insn->opcode))
        return fault(f, fi, "operand '%s': %s takes no tensor indirection", nm,
                     isa_op_lookup(insn->opcode) ? isa_op_lookup(insn->opcode)->name : "?");
    if (ap->dyn == ISA_DYN_INDEX)
        return check_ap_index(insn, ap, fi, nm, f);
    if (ap->mem == ISA_MEM_HBM)
        return fault(f, fi, "operand '%s': a register offset on an HBM operand (an indexed "
                     "dma_copy moves HBM patterns at run time)", nm);
    if (ap->dyn_reg >= ISA_NUM_REGS)
        return fault(f, fi, "operand '%s': register %u out of 0..%d", nm, ap->dyn_reg,
                     ISA_NUM_REGS - 1);
    return EMU_OK;
}

static emu_status check_ap_place(const struct isa_insn *insn, unsigned slot, int fi,
                                 const char *nm, struct isa_fault *f)
{
    const struct isa_ap *ap = &insn->ap[slot];
    if (check_ap_dyn(insn, ap, fi, nm, f) != EMU_OK)
        return EMU_INVALID;
    if (ap->num_part < 1 || ap->num_part > ISA_NUM_PARTITIONS)
        return fault(f, fi, "operand '%s': partition count %u out of 1..128", nm,
                     ap->num_part);
    if (ap->mem == ISA_MEM_HBM) {
        size_t es = isa_dtype_size(ap->dtype);
        if (ap->start_part != 0)
            return fault(f, fi, "operand '%s': start partition %u in HBM (must be 0)",
                         nm, ap->start_part);
        if (es > 1 && ap->offset % es != 0)  /* steps count elements from here */
            return fault(f, fi, "operand '%s': HBM offset %llu is not a multiple of the "
                         "%zu-byte element size", nm, (unsigned long long)ap->offset, es);
        return EMU_OK;
    }
    if (ap->var_id != 0)
        return fault(f, fi, "operand '%s': variable id on an on-chip operand", nm);
    if (ap->offset > UINT32_MAX)
        return fault(f, fi, "operand '%s': offset %llu beyond 4 GiB on chip", nm,
                     (unsigned long long)ap->offset);
    if (ap->part_step < 1)
        return fault(f, fi, "operand '%s': partition step %d (must be >= 1)", nm,
                     (int)ap->part_step);
    uint64_t last = ap->start_part + (uint64_t)(ap->num_part - 1) * (uint64_t)ap->part_step;
    if (last >= ISA_NUM_PARTITIONS)
        return fault(f, fi, "operand '%s': partitions %u..%llu out of 0..127", nm,
                     ap->start_part, (unsigned long long)last);
    return EMU_OK;
}

/* May access-pattern slot `slot` of op `opcode` hold a packed x4 dtype? */
static bool packed_ok(unsigned opcode, unsigned slot)
{
    switch (opcode) {
    case ISA_OP_nc_matmul_mx: return slot == 1 || slot == 2;
    case ISA_OP_quantize_mx: return slot == 0;
    case ISA_OP_dma_copy: return slot == 0 || slot == 1;
    default: return false;
    }
}

static emu_status check_ap(const struct isa_insn *insn, const struct isa_field *fd,
                           int fi, struct isa_fault *f)
{
    const struct isa_ap *ap = &insn->ap[fd->slot];
    static const uint16_t mem_attr[ISA_MEM_COUNT] = {
        [ISA_MEM_SBUF] = ISA_FA_SBUF, [ISA_MEM_PSUM] = ISA_FA_PSUM, [ISA_MEM_HBM] = ISA_FA_HBM,
    };
    if (ap->mem == ISA_MEM_NONE) {
        if (fd->kind == ISA_FK_AP && (fd->attr & ISA_FA_REQ))
            return fault(f, fi, "missing operand '%s'", fd->name);
        if (!ap_is_zero(ap))
            return fault(f, fi, "absent operand '%s' has bytes set", fd->name);
        return EMU_OK;
    }
    if (ap->mem >= ISA_MEM_COUNT)
        return fault(f, fi, "operand '%s': bad memory kind %u", fd->name, ap->mem);
    if (!(fd->attr & mem_attr[ap->mem]))
        return fault(f, fi, "operand '%s' cannot be in %s", fd->name, isa_mem_name(ap->mem));
    if (ap->mem == ISA_MEM_PSUM && insn->engine == ISA_ENG_POOL && !(fd->attr & ISA_FA_HBM))
        return fault(f, fi, "operand '%s': the pool engine cannot access PSUM", fd->name);
    if (isa_dtype_size(ap->dtype) == 0)
        return fault(f, fi, "operand '%s': bad dtype %u", fd->name, ap->dtype);
    if (isa_dtype_is_packed(ap->dtype) && !packed_ok(insn->opcode, fd->slot))
        return fault(f, fi, "operand '%s': %s packs four values; only nc_matmul_mx's data, "
                     "quantize_mx's dst and dma_copy take it", fd->name,
                     isa_dtype_name(ap->dtype));
    const char *why = dims_problem(ap->ndims, ap->dim);
    if (why != NULL)
        return fault(f, fi, "operand '%s' %s", fd->name, why);
    if (fd->kind == ISA_FK_APF) {
        uint32_t bits;
        memcpy(&bits, &insn->fimm[fd->fslot], sizeof(bits));
        if (bits != 0)
            return fault(f, fi, "operand '%s' has both a tensor and a scalar", fd->name);
    }
    return check_ap_place(insn, fd->slot, fi, fd->name, f);
}

static emu_status check_field(const struct isa_insn *insn, const struct isa_field *fd,
                              int fi, struct isa_fault *f)
{
    switch (fd->kind) {
    case ISA_FK_AP:
    case ISA_FK_APF:
        return check_ap(insn, fd, fi, f);
    case ISA_FK_INT: {
        int64_t v = insn->imm[fd->slot].i;
        if (v < fd->min || v > fd->max)
            return fault(f, fi, "'%s' = %lld out of %lld..%lld", fd->name, (long long)v,
                         (long long)fd->min, (long long)fd->max);
        return EMU_OK;
    }
    case ISA_FK_ENUM:
        if (isa_enum_name(fd->etype, insn->enums[fd->slot]) == NULL)
            return fault(f, fi, "'%s' = %u is not a known %s", fd->name,
                         insn->enums[fd->slot], isa_enum_type_what(fd->etype));
        return EMU_OK;
    case ISA_FK_PATTERN: {
        const char *why = dims_problem(insn->pattern.ndims, insn->pattern.dim);
        return why ? fault(f, fi, "'%s' %s", fd->name, why) : EMU_OK;
    }
    case ISA_FK_MASK:
        for (unsigned i = 0; i < ISA_MASK_BYTES; i++)
            if (insn->mask[i] >= 32 && insn->mask[i] != 255)
                return fault(f, fi, "'%s' entry %u = %u (must be 0..31 or 255)", fd->name,
                             i, insn->mask[i]);
        return EMU_OK;
    default:
        return EMU_OK;  /* floats and flags take any value */
    }
}

static bool fimm_is_zero(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof(bits));
    return bits == 0;
}

static emu_status check_unused(const struct isa_insn *insn, const struct isa_usage *u,
                               struct isa_fault *f)
{
    for (unsigned i = 0; i < ISA_MAX_AP; i++)
        if (!(u->ap & (1u << i)) && !ap_is_zero(&insn->ap[i]))
            return fault(f, -1, "unused operand slot ap[%u] has bytes set", i);
    for (unsigned i = 0; i < ISA_MAX_FIMM; i++)
        if (!(u->fimm & (1u << i)) && !fimm_is_zero(insn->fimm[i]))
            return fault(f, -1, "unused float immediate %u is set", i);
    for (unsigned i = 0; i < ISA_MAX_IMM; i++)
        if (!(u->imm & (1u << i)) && insn->imm[i].i != 0)
            return fault(f, -1, "unused immediate %u is set", i);
    for (unsigned i = 0; i < ISA_MAX_ENUM; i++)
        if (!(u->enums & (1u << i)) && insn->enums[i] != 0)
            return fault(f, -1, "unused enum %u is set", i);
    if (insn->flags & ~u->flags)
        return fault(f, -1, "undefined option bits 0x%02x set", insn->flags & ~u->flags);
    static const struct isa_pattern zero_pattern;
    if (!u->pattern && memcmp(&insn->pattern, &zero_pattern, sizeof(zero_pattern)) != 0)
        return fault(f, -1, "pattern set on an op without one");
    static const uint8_t zero_mask[ISA_MASK_BYTES];
    if (!u->mask && memcmp(insn->mask, zero_mask, sizeof(zero_mask)) != 0)
        return fault(f, -1, "shuffle mask set on an op without one");
    return EMU_OK;
}

static bool sync_is_zero(const struct isa_sync *s)
{
    return s->kind == 0 && s->op == 0 && s->id == 0 && s->value == 0;
}

static const char *sync_problem(const struct isa_sync *s, bool is_wait)
{
    if (s->kind != ISA_SYNC_SEM && s->kind != ISA_SYNC_EVENT)
        return "bad kind";
    if (s->id >= (s->kind == ISA_SYNC_SEM ? ISA_NUM_SEMS : ISA_NUM_EVENTS))
        return "id out of range";
    if (is_wait && isa_enum_name(ISA_ET_CMP, s->op) == NULL)
        return "bad comparison";
    if (!is_wait && isa_enum_name(ISA_ET_SEMOP, s->op) == NULL)
        return "bad update";
    if (s->kind == ISA_SYNC_SEM)
        return NULL;
    if (s->value > 1)
        return "event value must be 0 or 1";
    if (is_wait && s->op != ISA_CMP_eq && s->op != ISA_CMP_ne)
        return "events compare with == or != only";
    if (!is_wait && s->op != ISA_SEMOP_set)
        return "events can only be set (=0 or =1)";
    return NULL;
}

/* What is wrong with entry s of a list; ended: an earlier entry was unused. */
static const char *sync_slot_problem(const struct isa_sync *s, bool ended, bool is_wait)
{
    if (ended && s->kind != ISA_SYNC_NONE)
        return "used after an unused entry (entries are packed)";
    if (s->kind == ISA_SYNC_NONE)
        return sync_is_zero(s) ? NULL : "unused entry has bytes set";
    return sync_problem(s, is_wait);
}

/* Entries packed from index 0, then zeros. */
static emu_status check_sync_list(const struct isa_sync *list, unsigned n, bool is_wait,
                                  struct isa_fault *f)
{
    bool ended = false;
    for (unsigned i = 0; i < n; i++) {
        const char *why = sync_slot_problem(&list[i], ended, is_wait);
        ended = ended || list[i].kind == ISA_SYNC_NONE;
        if (why != NULL) {
            if (f != NULL)
                *(is_wait ? &f->wait : &f->signal) = (int)i;
            return fault(f, -1, "%s %u: %s", is_wait ? "wait" : "signal", i, why);
        }
    }
    return EMU_OK;
}

emu_status isa_validate(const struct isa_insn *insn, struct isa_fault *f)
{
    if (f != NULL) {
        f->field = f->wait = f->signal = -1;
        f->msg[0] = '\0';
    }
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    if (op == NULL)
        return fault(f, -1, "unknown opcode 0x%02x", insn->opcode);
    if (insn->engine >= ISA_ENG_COUNT)
        return fault(f, -1, "bad engine %u", insn->engine);
    if (!(op->engines & (1u << insn->engine)))
        return fault(f, -1, "%s cannot run on the %s engine", op->name,
                     isa_engine_name(insn->engine));
    struct isa_usage u;
    op_usage(op, &u);
    emu_status st = check_unused(insn, &u, f);
    for (int i = 0; st == EMU_OK && i < op->nfields; i++)
        st = check_field(insn, &op->fields[i], i, f);
    if (st == EMU_OK)
        st = check_sync_list(insn->wait, ISA_MAX_WAIT, true, f);
    if (st == EMU_OK)
        st = check_sync_list(insn->signal, ISA_MAX_SIGNAL, false, f);
    return st;
}

/* ---- little-endian bytes --------------------------------------------------- */
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v); put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v); put32(p + 4, (uint32_t)(v >> 32)); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t get32(const uint8_t *p) { return get16(p) | ((uint32_t)get16(p + 2) << 16); }
static uint64_t get64(const uint8_t *p) { return get32(p) | ((uint64_t)get32(p + 4) << 32); }

static bool bytes_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != 0)
            return false;
    return true;
}

/* ---- encode ------------------------------------------------------------------ */
static void put_sync(uint8_t *p, const struct isa_sync *s)
{
    p[0] = s->kind;
    p[1] = s->op;
    put16(p + 2, s->id);
    put32(p + 4, s->value);
}

bool isa_insn_dynamic(const struct isa_insn *insn)
{
    for (unsigned i = 0; i < ISA_MAX_AP; i++)
        if (insn->ap[i].dyn != ISA_DYN_NONE)
            return true;
    return false;
}

static void put_dims(uint8_t *p, const struct isa_dim *dim)
{
    for (unsigned d = 0; d < ISA_MAX_DIMS; d++) {
        put32(p + 8 * d, (uint32_t)dim[d].step);
        put32(p + 8 * d + 4, dim[d].count);
    }
}

static void put_ap(uint8_t *p, const struct isa_ap *ap)
{
    p[0] = ap->mem;
    p[1] = ap->dtype;
    p[2] = ap->start_part;
    p[3] = ap->num_part;
    p[4] = ap->ndims;
    p[5] = ap->dyn;
    p[6] = ap->dyn_reg;
    put32(p + 8, (uint32_t)ap->part_step);
    put32(p + 12, ap->mem == ISA_MEM_SBUF || ap->mem == ISA_MEM_PSUM ? ap->dyn_max : ap->var_id);
    put64(p + 16, ap->offset);
    put_dims(p + 24, ap->dim);
    if (ap->dyn == ISA_DYN_INDEX) {  /* the unused dims' bytes hold the index */
        p[32] = ap->ix.mem;
        p[33] = ap->ix.dtype;
        p[34] = ap->ix.start_part;
        p[35] = ap->ix.num_part;
        put32(p + 36, ap->ix.cols);
        put32(p + 40, ap->ix.offset);
    }
}

static void put_aux(uint8_t *p, const struct isa_insn *insn)
{
    if (insn->pattern.ndims != 0) {
        p[0] = insn->pattern.ndims;
        put_dims(p + 4, insn->pattern.dim);
    } else {
        memcpy(p, insn->mask, ISA_MASK_BYTES);
    }
}

static void encode_body(const struct isa_insn *insn, uint8_t *out)
{
    memset(out, 0, ISA_INSN_BYTES);
    out[0] = ISA_INSN_MAGIC | ISA_VERSION;
    out[1] = insn->opcode;
    out[2] = insn->flags;
    out[3] = ISA_INSN_WORDS;
    for (unsigned i = 0; i < ISA_MAX_WAIT; i++)
        put_sync(out + OFF_WAIT + SYNC_BYTES * i, &insn->wait[i]);
    for (unsigned i = 0; i < ISA_MAX_SIGNAL; i++)
        put_sync(out + OFF_SIGNAL + SYNC_BYTES * i, &insn->signal[i]);
    for (unsigned i = 0; i < ISA_MAX_AP; i++)
        put_ap(out + OFF_AP + AP_BYTES * i, &insn->ap[i]);
    for (unsigned i = 0; i < ISA_MAX_FIMM; i++) {
        uint32_t bits;
        memcpy(&bits, &insn->fimm[i], sizeof(bits));
        put32(out + OFF_FIMM + 4 * i, bits);
    }
    for (unsigned i = 0; i < ISA_MAX_IMM; i++)
        put64(out + OFF_IMM + 8 * i, (uint64_t)insn->imm[i].i);
    memcpy(out + OFF_ENUM, insn->enums, ISA_MAX_ENUM);
    put_aux(out + OFF_AUX, insn);
}

static const char *engine_text(unsigned engine)
{
    return isa_engine_name(engine) ? isa_engine_name(engine) : "?";
}

/* The one log line of a bad instruction; api is the public entry point. */
static void log_insn_fault(const char *api, size_t index, const struct isa_insn *insn,
                           const char *msg)
{
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    if (op != NULL)
        log_write(LOG_LVL_ERROR, "NEFF", api, "instruction %zu (%s on %s): %s", index,
                  op->name, engine_text(insn->engine), msg);
    else
        log_write(LOG_LVL_ERROR, "NEFF", api, "instruction %zu (opcode 0x%02x on %s): %s",
                  index, insn->opcode, engine_text(insn->engine), msg);
}

static emu_status encode_at(const char *api, const struct isa_insn *insn, size_t index,
                            uint8_t *out)
{
    struct isa_fault f;
    if (isa_validate(insn, &f) != EMU_OK) {
        log_insn_fault(api, index, insn, f.msg);
        return EMU_INVALID;
    }
    encode_body(insn, out);
    return EMU_OK;
}

emu_status isa_encode(const struct isa_insn *insn, uint8_t *out)
{
    return encode_at(__func__, insn, 0, out);
}

/* ---- decode ------------------------------------------------------------------ */
static void get_sync(const uint8_t *p, struct isa_sync *s)
{
    s->kind = p[0];
    s->op = p[1];
    s->id = get16(p + 2);
    s->value = get32(p + 4);
}

static void get_dims(const uint8_t *p, struct isa_dim *dim)
{
    for (unsigned d = 0; d < ISA_MAX_DIMS; d++) {
        dim[d].step = (int32_t)get32(p + 8 * d);
        dim[d].count = get32(p + 8 * d + 4);
    }
}

static void get_ap(const uint8_t *p, struct isa_ap *ap)
{
    ap->mem = p[0];
    ap->dtype = p[1];
    ap->start_part = p[2];
    ap->num_part = p[3];
    ap->ndims = p[4];
    ap->dyn = p[5];
    ap->dyn_reg = p[6];
    ap->part_step = (int32_t)get32(p + 8);
    if (ap->mem == ISA_MEM_SBUF || ap->mem == ISA_MEM_PSUM)
        ap->dyn_max = get32(p + 12);  /* on chip the variable-id bytes bound the shift */
    else
        ap->var_id = get32(p + 12);
    ap->offset = get64(p + 16);
    get_dims(p + 24, ap->dim);
    if (ap->dyn == ISA_DYN_INDEX && ap->ndims == 1 && bytes_zero(p + 44, 12)) {
        ap->ix.mem = p[32];
        ap->ix.dtype = p[33];
        ap->ix.start_part = p[34];
        ap->ix.num_part = p[35];
        ap->ix.cols = get32(p + 36);
        ap->ix.offset = get32(p + 40);
        memset(&ap->dim[1], 0, sizeof(ap->dim) - sizeof(ap->dim[0]));
    }
}

/* The aux area holds the pattern, the mask, or nothing, by the op's fields. */
static const char *get_aux(const uint8_t *p, const struct isa_usage *u, struct isa_insn *insn)
{
    if (u->pattern) {
        if (!bytes_zero(p + 1, 3))
            return "reserved bytes set in the pattern";
        insn->pattern.ndims = p[0];
        get_dims(p + 4, insn->pattern.dim);
        return NULL;
    }
    if (u->mask) {
        memcpy(insn->mask, p, ISA_MASK_BYTES);
        return bytes_zero(p + ISA_MASK_BYTES, AUX_BYTES - ISA_MASK_BYTES)
                   ? NULL : "reserved bytes set after the mask";
    }
    return bytes_zero(p, AUX_BYTES) ? NULL : "aux bytes set on an op without pattern or mask";
}

static const char *reserved_problem(const uint8_t *b)
{
    if (!bytes_zero(b + OFF_RSVD, 4) || !bytes_zero(b + OFF_TAIL, ISA_INSN_BYTES - OFF_TAIL))
        return "reserved bytes set";
    for (unsigned i = 0; i < ISA_MAX_AP; i++)
        if (!bytes_zero(b + OFF_AP + AP_BYTES * i + 7, 1))
            return "reserved bytes set in an operand";
    return NULL;
}

/* Header byte checks; *st tells invalid from unsupported. */
static const char *header_problem(const uint8_t *b, emu_status *st)
{
    *st = EMU_INVALID;
    if ((b[0] & 0xF0) != ISA_INSN_MAGIC)
        return "bad magic byte";
    if ((b[0] & 0x0F) == 0)
        return "ISA version 0";
    if ((b[0] & 0x0F) > ISA_VERSION) {
        *st = EMU_NEFF_VERSION;
        return "ISA version newer than 1";
    }
    if (isa_op_lookup(b[1]) == NULL)
        return "unknown opcode";
    if (b[3] != ISA_INSN_WORDS)
        return "length byte is not 128 words";
    return reserved_problem(b);
}

static void decode_body(const uint8_t *b, struct isa_insn *out)
{
    out->opcode = b[1];
    out->flags = b[2];
    for (unsigned i = 0; i < ISA_MAX_WAIT; i++)
        get_sync(b + OFF_WAIT + SYNC_BYTES * i, &out->wait[i]);
    for (unsigned i = 0; i < ISA_MAX_SIGNAL; i++)
        get_sync(b + OFF_SIGNAL + SYNC_BYTES * i, &out->signal[i]);
    for (unsigned i = 0; i < ISA_MAX_AP; i++)
        get_ap(b + OFF_AP + AP_BYTES * i, &out->ap[i]);
    for (unsigned i = 0; i < ISA_MAX_FIMM; i++) {
        uint32_t bits = get32(b + OFF_FIMM + 4 * i);
        memcpy(&out->fimm[i], &bits, sizeof(bits));
    }
    for (unsigned i = 0; i < ISA_MAX_IMM; i++)
        out->imm[i].i = (int64_t)get64(b + OFF_IMM + 8 * i);
    memcpy(out->enums, b + OFF_ENUM, ISA_MAX_ENUM);
}

static emu_status decode_at(const char *api, const uint8_t *b, enum isa_engine eng,
                            size_t index, struct isa_insn *out)
{
    emu_status st;
    memset(out, 0, sizeof(*out));
    out->engine = (uint8_t)eng;
    const char *why = header_problem(b, &st);
    if (why != NULL) {
        log_write(LOG_LVL_ERROR, "NEFF", api, "instruction %zu (opcode 0x%02x on %s): %s",
                  index, b[1], engine_text(eng), why);
        return st;
    }
    decode_body(b, out);
    struct isa_usage u;
    op_usage(isa_op_lookup(out->opcode), &u);
    why = get_aux(b + OFF_AUX, &u, out);
    struct isa_fault f;
    if (why == NULL && isa_validate(out, &f) != EMU_OK)
        why = f.msg;
    if (why != NULL) {
        log_insn_fault(api, index, out, why);
        return EMU_INVALID;
    }
    return EMU_OK;
}

emu_status isa_decode(const uint8_t *bytes, size_t size, enum isa_engine eng,
                      struct isa_insn *out)
{
    if (bytes == NULL || out == NULL) {
        LOG_ERROR("NEFF", "no instruction bytes or no place to decode them into");
        return EMU_INVALID;
    }
    if (size < ISA_INSN_BYTES) {
        LOG_ERROR("NEFF", "instruction 0: truncated (%zu of %d bytes)", size, ISA_INSN_BYTES);
        return EMU_INVALID;
    }
    return decode_at(__func__, bytes, eng, 0, out);
}

/* ---- streams ---------------------------------------------------------------- */
/* The jump/branch target of insn, or -1 when it has none. */
static int64_t insn_target(const struct isa_insn *insn)
{
    const struct isa_op_desc *op = isa_op_lookup(insn->opcode);
    int fi = op ? isa_op_field(op, "target", 6) : -1;
    return fi < 0 ? -1 : insn->imm[op->fields[fi].slot].i;
}

static emu_status check_targets(const char *api, const struct isa_insn *insns, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int64_t t = insn_target(&insns[i]);
        if (t >= 0 && (uint64_t)t >= count) {
            log_insn_fault(api, i, &insns[i], "target beyond the end of the stream");
            return EMU_INVALID;
        }
    }
    return EMU_OK;
}

/* Engine and jump targets of a stream about to be encoded; logs the fault. */
static emu_status check_stream_insns(const struct isa_insn *insns, size_t count,
                                     enum isa_engine eng)
{
    for (size_t i = 0; i < count; i++)
        if (insns[i].engine != eng) {
            log_insn_fault("isa_encode_stream", i, &insns[i], "belongs to another engine's stream");
            return EMU_INVALID;
        }
    return check_targets("isa_encode_stream", insns, count);
}

static void put_stream_header(uint8_t *b, enum isa_engine eng, size_t count)
{
    memcpy(b, ISA_STREAM_MAGIC, 4);
    put16(b + 4, ISA_VERSION);
    b[6] = (uint8_t)eng;
    b[7] = ISA_INSN_WORDS;
    put32(b + 8, (uint32_t)count);
}

emu_status isa_encode_stream(const struct isa_insn *insns, size_t count,
                             enum isa_engine eng, uint8_t **out, size_t *size)
{
    *out = NULL;
    *size = 0;
    if ((unsigned)eng >= ISA_ENG_COUNT || count > UINT32_MAX) {
        LOG_ERROR("NEFF", "cannot encode a stream of %zu instructions for engine %u",
                  count, (unsigned)eng);
        return EMU_INVALID;
    }
    if (check_stream_insns(insns, count, eng) != EMU_OK)
        return EMU_INVALID;
    size_t n = ISA_STREAM_HEADER_BYTES + count * ISA_INSN_BYTES;
    uint8_t *buf = calloc(1, n);
    if (buf == NULL) {
        LOG_ERROR("NEFF", "out of memory for a %zu-byte instruction stream", n);
        return EMU_RESOURCE;
    }
    put_stream_header(buf, eng, count);
    uint8_t *p = buf + ISA_STREAM_HEADER_BYTES;
    for (size_t i = 0; i < count; i++)
        if (encode_at(__func__, &insns[i], i, p + i * ISA_INSN_BYTES) != EMU_OK) {
            free(buf);
            return EMU_INVALID;
        }
    *out = buf;
    *size = n;
    return EMU_OK;
}

/* Stream problems are logged under the public entry point's name. */
#define STREAM_ERROR(...) log_write(LOG_LVL_ERROR, "NEFF", "isa_decode_stream", __VA_ARGS__)

/* Check a stream header; on success *count is the instruction count. */
static emu_status stream_header(const uint8_t *b, size_t size, enum isa_engine eng,
                                size_t *count)
{
    if (b == NULL || size < ISA_STREAM_HEADER_BYTES) {
        STREAM_ERROR("instruction stream truncated: %zu bytes, header needs %d",
                  size, ISA_STREAM_HEADER_BYTES);
        return EMU_INVALID;
    }
    if (memcmp(b, ISA_STREAM_MAGIC, 4) != 0) {
        STREAM_ERROR("not a trnemu instruction stream (magic is not TRNI)");
        return EMU_INVALID;
    }
    unsigned version = get16(b + 4);
    if (version > ISA_VERSION) {
        STREAM_ERROR("instruction stream has ISA version %u; this build reads %d",
                  version, ISA_VERSION);
        return EMU_NEFF_VERSION;
    }
    const char *why = NULL;
    if (version == 0)
        why = "ISA version 0";
    else if (b[6] != (unsigned)eng)
        why = "it belongs to another engine";
    else if (b[7] != ISA_INSN_WORDS)
        why = "instruction size is not 128 words";
    else if (!bytes_zero(b + 12, 4))
        why = "reserved header bytes set";
    if (why != NULL) {
        STREAM_ERROR("instruction stream for %s: %s (header engine %u)",
                  isa_engine_name(eng) ? isa_engine_name(eng) : "?", why, b[6]);
        return EMU_INVALID;
    }
    *count = get32(b + 8);
    return EMU_OK;
}

static emu_status stream_size(size_t size, size_t count, enum isa_engine eng)
{
    size_t body = size - ISA_STREAM_HEADER_BYTES;
    if (body / ISA_INSN_BYTES < count) {
        STREAM_ERROR("instruction stream for %s: instruction %zu of %zu truncated "
                  "(%zu bytes follow the header)", isa_engine_name(eng),
                  body / ISA_INSN_BYTES, count, body);
        return EMU_INVALID;
    }
    if (body != count * ISA_INSN_BYTES) {
        STREAM_ERROR("instruction stream for %s: %zu stray bytes after its %zu "
                  "instructions", isa_engine_name(eng), body - count * ISA_INSN_BYTES, count);
        return EMU_INVALID;
    }
    return EMU_OK;
}

emu_status isa_decode_stream(const uint8_t *bytes, size_t size, enum isa_engine eng,
                             struct isa_insn **out, size_t *count)
{
    size_t n = 0;
    *out = NULL;
    *count = 0;
    emu_status st = stream_header(bytes, size, eng, &n);
    if (st == EMU_OK)
        st = stream_size(size, n, eng);
    if (st != EMU_OK || n == 0)
        return st;
    struct isa_insn *insns = calloc(n, sizeof(*insns));
    if (insns == NULL) {
        LOG_ERROR("NEFF", "out of memory decoding %zu instructions", n);
        return EMU_RESOURCE;
    }
    const uint8_t *p = bytes + ISA_STREAM_HEADER_BYTES;
    for (size_t i = 0; st == EMU_OK && i < n; i++)
        st = decode_at(__func__, p + i * ISA_INSN_BYTES, eng, i, &insns[i]);
    if (st == EMU_OK)
        st = check_targets(__func__, insns, n);
    if (st != EMU_OK) {
        free(insns);
        return st;
    }
    *out = insns;
    *count = n;
    return EMU_OK;
}

/* ---- access-pattern arithmetic --------------------------------------------- */
__extension__ typedef __int128 isa_i128;

/* Add the span of one dimension (in elements) to [*lo, *hi] and its
 * count to *elems; false on overflow. */
static bool span_add(int64_t step, uint64_t count, isa_i128 *lo, isa_i128 *hi,
                     uint64_t *elems)
{
    isa_i128 span = (isa_i128)step * (isa_i128)(count - 1);
    if (span < 0)
        *lo += span;
    else
        *hi += span;
    return !__builtin_mul_overflow(*elems, count, elems);
}

emu_status isa_ap_extent(const struct isa_ap *ap, struct isa_extent *out)
{
    size_t esize = isa_dtype_size(ap->dtype);
    if (ap->mem == ISA_MEM_NONE || ap->mem >= ISA_MEM_COUNT || esize == 0 ||
        dims_problem(ap->ndims, ap->dim) != NULL || ap->num_part == 0 ||
        (ap->mem != ISA_MEM_HBM && ap->part_step < 1))
        return EMU_INVALID;
    isa_i128 lo = 0, hi = 0;
    uint64_t elems = 1, unused = 1;
    for (unsigned d = 0; d < ap->ndims; d++)
        if (!span_add(ap->dim[d].step, ap->dim[d].count, &lo, &hi, &elems))
            return EMU_INVALID;
    memset(out, 0, sizeof(*out));
    if (ap->mem == ISA_MEM_HBM) {
        span_add(ap->part_step, ap->num_part, &lo, &hi, &unused);
    } else {
        out->part_first = ap->start_part;
        out->part_last = ap->start_part + (uint32_t)(ap->num_part - 1) * (uint32_t)ap->part_step;
    }
    isa_i128 blo = (isa_i128)ap->offset + lo * (isa_i128)esize;
    isa_i128 bhi = (isa_i128)ap->offset + (hi + 1) * (isa_i128)esize;
    if (blo < 0 || bhi > (isa_i128)UINT64_MAX)
        return EMU_INVALID;
    out->lo = (uint64_t)blo;
    out->hi = (uint64_t)bhi;
    out->elems = elems;
    return EMU_OK;
}

emu_status isa_ap_check_bounds(const struct isa_ap *ap, uint64_t mem_size)
{
    struct isa_extent e;
    if (isa_ap_extent(ap, &e) != EMU_OK)
        return EMU_INVALID;
    if (e.hi > mem_size || e.part_last >= ISA_NUM_PARTITIONS)
        return EMU_EXEC_OOB;
    return EMU_OK;
}
