/*
 * isa_args.h: an instruction's operands by name. The op table
 * (emu/isa/isa_ops.h) says where every field of every op lives (ap[],
 * fimm[], imm[], enums[] or a flag bit); this header reads the table once
 * more to give each field a constant holding its slot, and the macros
 * below read a field through it, so semantics never spell a raw slot:
 *
 *   ISA_ARG_AP(insn, nc_matmul, moving)     const struct isa_ap *: &insn->ap[2]
 *   ISA_ARG_F32(insn, nc_match_replace8, imm)  float: insn->fimm[0]
 *   ISA_ARG_F64(insn, memset, value)        double: insn->imm[0].f
 *   ISA_ARG_INT(insn, sem_wait, value)      int64_t: insn->imm[1].i
 *   ISA_ARG_ENUM(insn, tensor_scalar, op0)  uint8_t: insn->enums[0]
 *   ISA_ARG_FLAG(insn, nc_matmul, accumulate)  bool: bit 0 of insn->flags
 *   ISA_AP_SLOT(op, field), ISA_F32_SLOT(op, field)
 *       the slot numbers themselves, for helpers that take one (ap_bind);
 *       an APF field (a tensor or a scalar) has both.
 *   ISA_SLOT(INT, op, field)
 *       any kind's slot, for static_asserts that ops served by one helper
 *       keep a field in the same place.
 *
 * Each is a constant index, so it compiles to the same load as the raw
 * slot did. Naming a field the op lacks, or reading it as the wrong kind
 * (an enum as an int), names a constant that does not exist: a compile
 * error, not a wrong slot.
 */
#ifndef TRNEMU_EMU_ISA_ARGS_H
#define TRNEMU_EMU_ISA_ARGS_H

#include "emu/isa/isa.h"

/* ---- the accessors -------------------------------------------------------- */
#define ISA_AP_SLOT(op, fld) ISA_SLOT_AP_##op##_##fld
#define ISA_F32_SLOT(op, fld) ISA_SLOT_F32_##op##_##fld
#define ISA_SLOT(kind, op, fld) ISA_SLOT_##kind##_##op##_##fld  /* kind: AP F32 F64 INT ENUM FLAG */
#define ISA_ARG_AP(insn, op, fld) (&(insn)->ap[ISA_SLOT_AP_##op##_##fld])
#define ISA_ARG_F32(insn, op, fld) ((insn)->fimm[ISA_SLOT_F32_##op##_##fld])
#define ISA_ARG_F64(insn, op, fld) ((insn)->imm[ISA_SLOT_F64_##op##_##fld].f)
#define ISA_ARG_INT(insn, op, fld) ((insn)->imm[ISA_SLOT_INT_##op##_##fld].i)
#define ISA_ARG_ENUM(insn, op, fld) ((insn)->enums[ISA_SLOT_ENUM_##op##_##fld])
#define ISA_ARG_FLAG(insn, op, fld) ((((insn)->flags >> ISA_SLOT_FLAG_##op##_##fld) & 1u) != 0)

/* ---- the constants, from the table ---------------------------------------- */
/* Apply m(op, field) to each field of a list of at most 16 (emu/isa/isa.c
 * asserts that no row has more). */
#define ISA_ARGS_NARG(...) \
    ISA_ARGS_NARG_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define ISA_ARGS_NARG_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, \
                       ...)                                                                     \
    n
#define ISA_ARGS_EACH(m, op, ...) ISA_ARGS_EACH_(ISA_ARGS_NARG(__VA_ARGS__), m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_(n, m, op, ...) ISA_ARGS_EACH__(n, m, op, __VA_ARGS__)
#define ISA_ARGS_EACH__(n, m, op, ...) ISA_ARGS_EACH_##n(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_1(m, op, a) m(op, a)
#define ISA_ARGS_EACH_2(m, op, a, ...) m(op, a) ISA_ARGS_EACH_1(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_3(m, op, a, ...) m(op, a) ISA_ARGS_EACH_2(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_4(m, op, a, ...) m(op, a) ISA_ARGS_EACH_3(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_5(m, op, a, ...) m(op, a) ISA_ARGS_EACH_4(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_6(m, op, a, ...) m(op, a) ISA_ARGS_EACH_5(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_7(m, op, a, ...) m(op, a) ISA_ARGS_EACH_6(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_8(m, op, a, ...) m(op, a) ISA_ARGS_EACH_7(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_9(m, op, a, ...) m(op, a) ISA_ARGS_EACH_8(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_10(m, op, a, ...) m(op, a) ISA_ARGS_EACH_9(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_11(m, op, a, ...) m(op, a) ISA_ARGS_EACH_10(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_12(m, op, a, ...) m(op, a) ISA_ARGS_EACH_11(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_13(m, op, a, ...) m(op, a) ISA_ARGS_EACH_12(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_14(m, op, a, ...) m(op, a) ISA_ARGS_EACH_13(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_15(m, op, a, ...) m(op, a) ISA_ARGS_EACH_14(m, op, __VA_ARGS__)
#define ISA_ARGS_EACH_16(m, op, a, ...) m(op, a) ISA_ARGS_EACH_15(m, op, __VA_ARGS__)

/* One field, read as a tuple (kind, name, slot[, fimm slot]): its
 * constants. An op without fields gives one empty field, which opens to
 * the kind ISA_ARGS_OPEN and gives nothing. */
#define ISA_ARGS_OPEN(...) __VA_ARGS__
#define ISA_ARGS_ONE(op, t) ISA_ARGS_ONE_(op, ISA_ARGS_OPEN t, 0)
#define ISA_ARGS_ONE_(op, ...) ISA_ARGS_ONE__(op, __VA_ARGS__)
#define ISA_ARGS_ONE__(op, k, ...) ISA_ARGS_K_##k(op, __VA_ARGS__)
#define ISA_ARGS_K_ISA_ARGS_OPEN(op, ...)
#define ISA_ARGS_K_NONE(op, f, ...)
#define ISA_ARGS_K_AP(op, f, sl, ...) ISA_SLOT_AP_##op##_##f = (sl),
#define ISA_ARGS_K_APF(op, f, sl, fs, ...) \
    ISA_SLOT_AP_##op##_##f = (sl), ISA_SLOT_F32_##op##_##f = (fs),
#define ISA_ARGS_K_F32(op, f, sl, ...) ISA_SLOT_F32_##op##_##f = (sl),
#define ISA_ARGS_K_F64(op, f, sl, ...) ISA_SLOT_F64_##op##_##f = (sl),
#define ISA_ARGS_K_INT(op, f, sl, ...) ISA_SLOT_INT_##op##_##f = (sl),
#define ISA_ARGS_K_ENUM(op, f, sl, ...) ISA_SLOT_ENUM_##op##_##f = (sl),
#define ISA_ARGS_K_FLAG(op, f, sl, ...) ISA_SLOT_FLAG_##op##_##f = (sl),

/* The table's field constructors make tuples while the rows are read here. */
#pragma push_macro("ISA_AP")
#pragma push_macro("ISA_APF")
#pragma push_macro("ISA_F32")
#pragma push_macro("ISA_F32_REQ")
#pragma push_macro("ISA_F64")
#pragma push_macro("ISA_INT")
#pragma push_macro("ISA_INT_REQ")
#pragma push_macro("ISA_ENUM")
#pragma push_macro("ISA_ENUM_REQ")
#pragma push_macro("ISA_FLAG")
#pragma push_macro("ISA_PATTERN")
#pragma push_macro("ISA_MASK")
#undef ISA_AP
#undef ISA_APF
#undef ISA_F32
#undef ISA_F32_REQ
#undef ISA_F64
#undef ISA_INT
#undef ISA_INT_REQ
#undef ISA_ENUM
#undef ISA_ENUM_REQ
#undef ISA_FLAG
#undef ISA_PATTERN
#undef ISA_MASK
#define ISA_AP(nm, sl, at) (AP, nm, sl)
#define ISA_APF(nm, sl, fs, at, d) (APF, nm, sl, fs)
#define ISA_F32(nm, fs, d) (F32, nm, fs)
#define ISA_F32_REQ(nm, fs) (F32, nm, fs)
#define ISA_F64(nm, is, d) (F64, nm, is)
#define ISA_INT(nm, is, lo, hi, d) (INT, nm, is)
#define ISA_INT_REQ(nm, is, lo, hi) (INT, nm, is)
#define ISA_ENUM(nm, es, et, d) (ENUM, nm, es)
#define ISA_ENUM_REQ(nm, es, et) (ENUM, nm, es)
#define ISA_FLAG(nm, bit) (FLAG, nm, bit)
#define ISA_PATTERN(nm) (NONE, nm)
#define ISA_MASK(nm) (NONE, nm)

/* Every field's slot: ISA_SLOT_<kind>_<op>_<field>. */
enum isa_arg_slot {
#define ISA_OP(mn, code, eng, gen, cost, fields) \
    ISA_ARGS_EACH(ISA_ARGS_ONE, mn, ISA_ARGS_OPEN fields)
#include "emu/isa/isa_ops.h"
#undef ISA_OP
    ISA_SLOT_NONE = 0  /* no field */
};

/* pop_macro restores each (undefined again where it was undefined). */
#pragma pop_macro("ISA_AP")
#pragma pop_macro("ISA_APF")
#pragma pop_macro("ISA_F32")
#pragma pop_macro("ISA_F32_REQ")
#pragma pop_macro("ISA_F64")
#pragma pop_macro("ISA_INT")
#pragma pop_macro("ISA_INT_REQ")
#pragma pop_macro("ISA_ENUM")
#pragma pop_macro("ISA_ENUM_REQ")
#pragma pop_macro("ISA_FLAG")
#pragma pop_macro("ISA_PATTERN")
#pragma pop_macro("ISA_MASK")

#endif
