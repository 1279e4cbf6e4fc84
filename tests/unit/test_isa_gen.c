/*
 * test_isa_gen.c: builds valid instances of every op in the ISA table for
 * the round-trip tests (test_isa.c, test_isa_text.c, the fuzz target).
 * A seed varies every choice: memories, dtypes, partitions, dims, odd
 * floats (NaN payloads, -0, inf, denormals), enum values, flags, waits.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "emu/isa/isa.h"

static const uint8_t gen_dtypes[] = {
    ISA_DT_F32, ISA_DT_F32R, ISA_DT_BF16, ISA_DT_F16, ISA_DT_FP8E3, ISA_DT_FP8E4,
    ISA_DT_FP8E5, ISA_DT_I8, ISA_DT_I16, ISA_DT_I32, ISA_DT_I64, ISA_DT_U8,
    ISA_DT_U16, ISA_DT_U32, ISA_DT_U64,
};

/* A memory the field allows on this engine, picked by seed. */
static uint8_t gen_mem(const struct isa_field *f, unsigned engine, unsigned seed)
{
    uint8_t mems[3];
    unsigned n = 0;
    if (f->attr & ISA_FA_SBUF)
        mems[n++] = ISA_MEM_SBUF;
    if ((f->attr & ISA_FA_PSUM) && !(engine == ISA_ENG_POOL && !(f->attr & ISA_FA_HBM)))
        mems[n++] = ISA_MEM_PSUM;
    if (f->attr & ISA_FA_HBM)
        mems[n++] = ISA_MEM_HBM;
    return mems[seed % n];
}

static void gen_ap(struct isa_ap *ap, const struct isa_field *f, unsigned engine, unsigned seed)
{
    memset(ap, 0, sizeof(*ap));
    ap->mem = gen_mem(f, engine, seed);
    ap->dtype = gen_dtypes[seed % sizeof(gen_dtypes)];
    ap->ndims = (uint8_t)(1 + seed % ISA_MAX_DIMS);
    for (unsigned d = 0; d < ap->ndims; d++) {
        ap->dim[d].step = (int32_t)((seed + d) % 5) - 2;
        ap->dim[d].count = 1 + (seed * 3 + d) % 7;
    }
    ap->num_part = (uint8_t)(1 + seed % 32);
    if (ap->mem == ISA_MEM_HBM) {
        ap->var_id = seed % 5;
        ap->part_step = (int32_t)(seed % 9) - 4;
        ap->offset = (1ull << 40) + seed * 64;
    } else {
        ap->start_part = (uint8_t)((seed * 7) % 64);
        ap->part_step = (int32_t)(1 + seed % 2);
        ap->offset = seed * 16;
    }
}

/* Ordinary and awkward float32 values. */
static float gen_f32(unsigned seed)
{
    static const uint32_t odd[] = {0x7fc00123u, 0x80000000u, 0x7f800000u, 0x00000001u,
                                   0xff800000u, 0xffc00000u, 0x7fc00000u};
    unsigned k = seed % 10;
    float v;
    if (k < sizeof(odd) / sizeof(odd[0])) {
        memcpy(&v, &odd[k], sizeof(v));
        return v;
    }
    return 0.1f * (float)seed - 3.0f;
}

static double gen_f64(unsigned seed)
{
    static const uint64_t odd[] = {0x7ff8000000000123ull, 0x8000000000000000ull,
                                   0xfff0000000000000ull, 0x0000000000000001ull};
    unsigned k = seed % 6;
    double v;
    if (k < sizeof(odd) / sizeof(odd[0])) {
        memcpy(&v, &odd[k], sizeof(v));
        return v;
    }
    return 1.0e10 / 3.0 + seed;
}

static int64_t gen_int(const struct isa_field *f, unsigned seed)
{
    if (strcmp(f->name, "target") == 0)
        return 0;
    uint64_t range = (uint64_t)(f->max - f->min);
    uint64_t k = seed % 4;
    if (k > range)
        k = range;
    return (seed & 1) ? f->max - (int64_t)k : f->min + (int64_t)k;
}

static uint8_t gen_enum(unsigned etype, unsigned seed)
{
    unsigned names = 0;
    for (unsigned v = 0; v < ISA_ENUM_SPACE; v++)
        names += isa_enum_name(etype, v) != NULL;
    unsigned pick = seed % names;
    for (unsigned v = 0; v < ISA_ENUM_SPACE; v++)
        if (isa_enum_name(etype, v) != NULL && pick-- == 0)
            return (uint8_t)v;
    return 0;
}

/* Some on-chip operands of full instructions take a register offset. */
static void gen_dyn(struct isa_ap *ap, unsigned seed)
{
    if (ap->mem != ISA_MEM_SBUF && ap->mem != ISA_MEM_PSUM)
        return;
    ap->dyn = ISA_DYN_FREE;
    ap->dyn_reg = (uint8_t)(seed % ISA_NUM_REGS);
    ap->dyn_max = seed * 4096u;
}

static void gen_field(struct isa_insn *in, const struct isa_field *f, bool full, unsigned seed)
{
    bool req = (f->attr & ISA_FA_REQ) != 0;
    switch (f->kind) {
    case ISA_FK_AP:
        if (req || full)
            gen_ap(&in->ap[f->slot], f, in->engine, seed);
        if (full && seed % 4 == 3)
            gen_dyn(&in->ap[f->slot], seed);
        break;
    case ISA_FK_APF:
        if (full && (seed & 1)) {
            gen_ap(&in->ap[f->slot], f, in->engine, seed);
            in->fimm[f->fslot] = 0.0f;
        } else {
            in->fimm[f->fslot] = gen_f32(seed);
        }
        break;
    case ISA_FK_F32: in->fimm[f->slot] = gen_f32(seed + 1); break;
    case ISA_FK_F64: in->imm[f->slot].f = gen_f64(seed); break;
    case ISA_FK_INT: in->imm[f->slot].i = gen_int(f, seed); break;
    case ISA_FK_ENUM: in->enums[f->slot] = gen_enum(f->etype, seed); break;
    case ISA_FK_FLAG:
        if (full || ((seed >> f->slot) & 1))
            in->flags |= (uint8_t)(1u << f->slot);
        break;
    case ISA_FK_PATTERN:
        in->pattern.ndims = (uint8_t)(1 + seed % ISA_MAX_DIMS);
        for (unsigned d = 0; d < in->pattern.ndims; d++) {
            in->pattern.dim[d].step = (int32_t)(seed % 11) - 5 + (int32_t)d;
            in->pattern.dim[d].count = 1 + (seed + d) % 9;
        }
        break;
    case ISA_FK_MASK:
        for (unsigned i = 0; i < ISA_MASK_BYTES; i++)
            in->mask[i] = (i + seed) % 5 == 0 ? 255 : (uint8_t)((i * (seed + 1)) % 32);
        break;
    default:
        break;
    }
}

static void gen_sync(struct isa_insn *in, unsigned seed)
{
    unsigned nw = seed % (ISA_MAX_WAIT + 1), ns = (seed / 2) % (ISA_MAX_SIGNAL + 1);
    for (unsigned i = 0; i < nw; i++) {
        struct isa_sync *s = &in->wait[i];
        bool ev = (seed + i) % 3 == 0;
        s->kind = ev ? ISA_SYNC_EVENT : ISA_SYNC_SEM;
        s->id = (uint16_t)((seed * 13 + i) % (ev ? ISA_NUM_EVENTS : ISA_NUM_SEMS));
        s->op = ev ? (uint8_t)(i % 2) : (uint8_t)((seed + i) % 6);
        s->value = ev ? (seed + i) % 2 : seed * 1000u + i;
    }
    for (unsigned i = 0; i < ns; i++) {
        struct isa_sync *s = &in->signal[i];
        bool ev = (seed + i) % 4 == 1;
        s->kind = ev ? ISA_SYNC_EVENT : ISA_SYNC_SEM;
        s->id = (uint16_t)((seed * 7 + i) % 256);
        s->op = ev ? ISA_SEMOP_set : (uint8_t)((seed + i) % 3);
        s->value = ev ? i % 2 : 0xffffffffu - seed;
    }
}

/* A valid instance of op on engine: required fields always, optional
 * operands too when full, waits and signals chosen by seed. */
void isa_gen_insn(struct isa_insn *in, const struct isa_op_desc *op, unsigned engine,
                  bool full, unsigned seed)
{
    isa_insn_init(in, engine, op->opcode);
    for (int i = 0; i < op->nfields; i++)
        gen_field(in, &op->fields[i], full, seed + (unsigned)i);
    gen_sync(in, seed);
}
