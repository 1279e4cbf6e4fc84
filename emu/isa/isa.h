/*
 * isa.h: trnemu's open instruction set, version 1 (see docs/isa.md).
 *
 * The vendor's engine encodings are not public, so trnemu defines its own:
 * fixed-size 512-byte little-endian instructions, one stream per engine,
 * each stream opened by a 16-byte "TRNI" header. Everything about the ops
 * comes from the single table emu/isa/isa_ops.h; this module turns that table
 * into the opcode enum and descriptors, encodes and decodes instructions
 * (validating every byte), and offers the access-pattern arithmetic that
 * the executor needs (element sizes, touched byte ranges, bounds).
 */
#ifndef TRNEMU_EMU_ISA_H
#define TRNEMU_EMU_ISA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "emu/num/dtype_list.h"
#include "emu/status.h"

/* ---- sizes and limits ------------------------------------------------ */
#define ISA_VERSION 1                 /* ISA version this build reads and writes */
#define ISA_INSN_BYTES 512            /* every encoded instruction */
#define ISA_INSN_WORDS (ISA_INSN_BYTES / 4)
#define ISA_INSN_MAGIC 0xE0           /* high nibble of byte 0; low nibble = version */
#define ISA_STREAM_MAGIC "TRNI"       /* first 4 bytes of an engine stream */
#define ISA_STREAM_HEADER_BYTES 16    /* magic, version, engine, count */
#define ISA_MAX_AP 6                  /* access-pattern operand slots */
#define ISA_MAX_FIMM 4                /* float32 immediate slots */
#define ISA_MAX_IMM 4                 /* 64-bit immediate slots */
#define ISA_MAX_ENUM 8                /* enum slots */
#define ISA_MAX_FLAGS 8               /* boolean option bits */
#define ISA_MAX_WAIT 4                /* waits per instruction */
#define ISA_MAX_SIGNAL 4              /* signals per instruction */
#define ISA_MAX_DIMS 4                /* free dimensions of an access pattern */
#define ISA_MASK_BYTES 32             /* nc_stream_shuffle mask entries */
#define ISA_NUM_SEMS 256              /* semaphores per NeuronCore */
#define ISA_NUM_EVENTS 256            /* events per NeuronCore */
#define ISA_NUM_REGS 64               /* 32-bit registers per engine sequencer */
#define ISA_OPCODE_SPACE 256          /* opcodes are one byte */
#define ISA_ENUM_SPACE 64             /* enum values are below this */

/* On-chip memory geometry (NKI architecture guide). */
#define ISA_NUM_PARTITIONS 128
#define ISA_SBUF_PART_BYTES_V2 (192u * 1024u) /* NeuronCore-v2: 24 MiB SBUF */
#define ISA_SBUF_PART_BYTES_V3 (224u * 1024u) /* NeuronCore-v3: 28 MiB SBUF */
#define ISA_SBUF_PART_BYTES_V4 (256u * 1024u) /* NeuronCore-v4: 32 MiB SBUF */
#define ISA_PSUM_PART_BYTES (16u * 1024u)     /* 2 MiB PSUM */
#define ISA_PSUM_BANKS 8
#define ISA_PSUM_BANK_BYTES (2u * 1024u)      /* 512 fp32 per partition */
#define ISA_PE_MAX_N_V2 512u                  /* nc_matmul moving columns before v4 */

/* ---- engines ----------------------------------------------------------- */
enum isa_engine {
    ISA_ENG_PE = 0,    /* Tensor Engine */
    ISA_ENG_ACT = 1,   /* Scalar (activation) Engine */
    ISA_ENG_POOL = 2,  /* GpSimd Engine */
    ISA_ENG_DVE = 3,   /* Vector Engine */
    ISA_ENG_SP = 4,    /* Sync engine (sequencer, DMA triggers) */
    ISA_ENG_COUNT = 5,
};

/* Engine masks used in the op table. */
#define ISA_EM_PE (1u << ISA_ENG_PE)
#define ISA_EM_ACT (1u << ISA_ENG_ACT)
#define ISA_EM_POOL (1u << ISA_ENG_POOL)
#define ISA_EM_DVE (1u << ISA_ENG_DVE)
#define ISA_EM_SP (1u << ISA_ENG_SP)
#define ISA_EM_ALL (ISA_EM_PE | ISA_EM_ACT | ISA_EM_POOL | ISA_EM_DVE | ISA_EM_SP)

/* ---- data types: the values of nrt_dtype_t ------------------------------ */
/* One constant per row of emu/num/dtype_list.h, the list the numerics'
 * NUM_DT_* constants come from too (so ISA_DT_x == NUM_DT_y row by row);
 * codes 16..20 are the NeuronCore-v4 formats (emu/num/mx.h), past the
 * nrt_dtype_t range. */
enum isa_dtype {
    ISA_DT_INVALID = 0,
#define ISA_DT_ROW(num, isa, code, ...) ISA_DT_##isa = code,
    EMU_DTYPES(ISA_DT_ROW)
#undef ISA_DT_ROW
    ISA_DT_COUNT  /* one past the last code */
};
/* dtypes below this are the runtime's nrt_dtype_t values (I/O tensors). */
#define ISA_DT_NRT_COUNT EMU_DTYPE_NRT_COUNT

/* ---- memories ------------------------------------------------------------ */
enum isa_mem {
    ISA_MEM_NONE = 0,  /* operand absent */
    ISA_MEM_SBUF = 1,  /* state buffer: 128 partitions */
    ISA_MEM_PSUM = 2,  /* partial-sum buffer: 128 partitions, 8 banks */
    ISA_MEM_HBM = 3,   /* device memory: a NEFF variable named by var_id */
    ISA_MEM_COUNT = 4,
};

/* ---- enum types and opcodes, generated from the table -------------------- */
enum isa_enum_type {
#define ISA_ENUM_TYPE(id, what) ISA_ET_##id,
#include "emu/isa/isa_ops.h"
#undef ISA_ENUM_TYPE
    ISA_ET_COUNT
};

enum isa_enum_value {
#define ISA_ENUM_ITEM(id, name, value) ISA_##id##_##name = (value),
#include "emu/isa/isa_ops.h"
#undef ISA_ENUM_ITEM
};

enum isa_opcode {
#define ISA_OP(name, code, engines, gen, cost, fields) ISA_OP_##name = (code),
#include "emu/isa/isa_ops.h"
#undef ISA_OP
};

/* ---- synchronisation entries ---------------------------------------- */
enum isa_sync_kind {
    ISA_SYNC_NONE = 0,   /* entry unused (all its bytes zero) */
    ISA_SYNC_SEM = 1,    /* a counting semaphore */
    ISA_SYNC_EVENT = 2,  /* a one-bit event */
};

/* One wait (op is enum CMP: proceed when sem <op> value) or one signal
 * (op is enum SEMOP: sem = value / sem += value / sem -= value). */
struct isa_sync {
    uint8_t kind;    /* enum isa_sync_kind */
    uint8_t op;      /* ISA_CMP_* for a wait, ISA_SEMOP_* for a signal */
    uint16_t id;     /* semaphore or event number */
    uint32_t value;  /* operand of the comparison or update */
};

/* ---- access patterns ----------------------------------------------------- */
struct isa_dim {
    int32_t step;    /* stride in elements (may be negative or zero) */
    uint32_t count;  /* number of elements along this dimension, >= 1 */
};

/* Where an operand lives and how it is walked. On SBUF/PSUM, partitions
 * start_part + i*part_step (i < num_part) are touched, each at byte
 * offset + sum(idx_d * dim[d].step) * elem_size. In HBM the partition
 * index is one more outer dimension: start_part is 0 and part_step is a
 * stride in elements within the variable. */
struct isa_ap {
    uint8_t mem;         /* enum isa_mem; NONE = operand absent */
    uint8_t dtype;       /* enum isa_dtype of the elements */
    uint8_t start_part;  /* first partition (0 for HBM) */
    uint8_t num_part;    /* partitions touched, 1..128 */
    uint8_t ndims;       /* free dimensions in use, 1..4 */
    uint8_t dyn;         /* enum isa_dyn: on chip, the pattern moves at run time */
    uint8_t dyn_reg;     /* ISA_DYN_FREE: the engine's register holding the shift in bytes */
    uint32_t dyn_max;    /* ISA_DYN_FREE: the largest shift allowed (the smallest is 0);
                            ISA_DYN_INDEX: the largest column offset allowed */
    int32_t part_step;   /* partitions between touched ones; elements in HBM */
    uint32_t var_id;     /* HBM: the variable; 0 elsewhere */
    uint64_t offset;     /* start byte: in each partition, or in the variable */
    struct isa_dim dim[ISA_MAX_DIMS]; /* free dims, outermost first; unused zero */
    struct isa_ap_index {  /* ISA_DYN_INDEX: the SBUF tile of column offsets, else zero */
        uint8_t mem;         /* ISA_MEM_SBUF */
        uint8_t dtype;       /* an integer type */
        uint8_t start_part;  /* its first partition (step 1) */
        uint8_t num_part;    /* its partitions, 1..128 */
        uint32_t cols;       /* offsets per partition (a contiguous run), >= 1 */
        uint32_t offset;     /* byte offset of the run in each partition */
    } ix;
};

/* Run-time offsets of an on-chip access pattern (isa_ap.dyn). */
enum isa_dyn {
    ISA_DYN_NONE = 0,  /* the pattern is all static */
    ISA_DYN_FREE = 1,  /* offset += register dyn_reg (bytes, 0..dyn_max) when it runs */
    ISA_DYN_INDEX = 2, /* tensor indirection: column i of each partition is element
                          offset + idx_i * dim[0].step, idx_i read from ix when it runs
                          (docs/isa.md, "Tensor indirection") */
    ISA_DYN_COUNT
};

/* Offsets gathered per partition group by tensor indirection: 32 on the
 * Tensor engine, 16 on the others. */
#define ISA_INDEX_GROUP(engine) ((engine) == ISA_ENG_PE ? 32u : 16u)

/* Where tensor indirection reads column i's offset: partition *part of the
 * index (from ix.start_part), element *col of its run. The offsets snake
 * down the G partitions of a group, column after column, then go on in
 * the next group: i -> partition (i / (G*cols)) * G + i % G, element
 * (i / G) % cols. False when that partition is past the index's. */
static inline bool isa_index_where(const struct isa_ap *ap, unsigned engine, uint32_t i,
                                   uint32_t *part, uint32_t *col)
{
    uint64_t g = ISA_INDEX_GROUP(engine), k = ap->ix.cols ? ap->ix.cols : 1;
    uint64_t p = (i / (g * k)) * g + i % g;
    *col = (uint32_t)((i / g) % k);
    *part = (uint32_t)p;
    return p < ap->ix.num_part;
}

/* The affine pattern of iota and affine_select. */
struct isa_pattern {
    uint8_t ndims;                    /* dims in use, 1..4; 0 when unused */
    struct isa_dim dim[ISA_MAX_DIMS]; /* [step, count], outermost first */
};

/* A 64-bit immediate: an integer or (F64 fields) a double. */
union isa_imm64 {
    int64_t i;  /* integer fields */
    double f;   /* F64 fields (memset value) */
};

/* One decoded instruction. Slots that the op does not use are zero. */
struct isa_insn {
    uint8_t opcode;                       /* enum isa_opcode */
    uint8_t engine;                       /* enum isa_engine whose stream holds it */
    uint8_t flags;                        /* boolean options, bit = field's slot */
    struct isa_sync wait[ISA_MAX_WAIT];   /* waits, packed from index 0 */
    struct isa_sync signal[ISA_MAX_SIGNAL]; /* signals at completion, packed */
    struct isa_ap ap[ISA_MAX_AP];         /* access-pattern operands */
    float fimm[ISA_MAX_FIMM];             /* float32 immediates */
    union isa_imm64 imm[ISA_MAX_IMM];     /* integer / double immediates */
    uint8_t enums[ISA_MAX_ENUM];          /* enum immediates */
    struct isa_pattern pattern;           /* iota / affine_select pattern */
    uint8_t mask[ISA_MASK_BYTES];         /* nc_stream_shuffle mask */
};

/* Does any operand of insn move at run time (a register offset or tensor
 * indirection)? */
bool isa_insn_dynamic(const struct isa_insn *insn);

/* ---- operand signatures ------------------------------------------------ */
enum isa_field_kind {
    ISA_FK_AP = 1,      /* access pattern in ap[slot] */
    ISA_FK_APF = 2,     /* ap[slot] when present, else the scalar fimm[fslot] */
    ISA_FK_F32 = 3,     /* fimm[slot] */
    ISA_FK_F64 = 4,     /* imm[slot].f */
    ISA_FK_INT = 5,     /* imm[slot].i within [min, max] */
    ISA_FK_ENUM = 6,    /* enums[slot], a value of etype */
    ISA_FK_FLAG = 7,    /* bit slot of flags */
    ISA_FK_PATTERN = 8, /* pattern */
    ISA_FK_MASK = 9,    /* mask */
};

enum isa_field_attr {
    ISA_FA_REQ = 1u << 0,   /* must be given (assembly text; APs: must be present) */
    ISA_FA_OUT = 1u << 1,   /* written by the op */
    ISA_FA_SBUF = 1u << 2,  /* may live in SBUF */
    ISA_FA_PSUM = 1u << 3,  /* may live in PSUM */
    ISA_FA_HBM = 1u << 4,   /* may live in HBM */
};

/* Attribute sets used by the table. */
#define ISA_IN (ISA_FA_REQ | ISA_FA_SBUF | ISA_FA_PSUM)
#define ISA_OUT (ISA_FA_REQ | ISA_FA_OUT | ISA_FA_SBUF | ISA_FA_PSUM)
#define ISA_OPT_IN (ISA_FA_SBUF | ISA_FA_PSUM)
#define ISA_OPT_OUT (ISA_FA_OUT | ISA_FA_SBUF | ISA_FA_PSUM)
#define ISA_SB_IN (ISA_FA_REQ | ISA_FA_SBUF)
#define ISA_SB_OUT (ISA_FA_REQ | ISA_FA_OUT | ISA_FA_SBUF)
#define ISA_SB_OPT_IN (ISA_FA_SBUF)
#define ISA_PS_OUT (ISA_FA_REQ | ISA_FA_OUT | ISA_FA_PSUM)
#define ISA_HBM_IN (ISA_FA_REQ | ISA_FA_HBM)
#define ISA_DMA_IN (ISA_FA_REQ | ISA_FA_SBUF | ISA_FA_PSUM | ISA_FA_HBM)
#define ISA_DMA_OUT (ISA_DMA_IN | ISA_FA_OUT)
#define ISA_DMA_OPT_IN (ISA_FA_SBUF | ISA_FA_PSUM | ISA_FA_HBM)

/* One operand of an op: its assembly keyword and where it is stored. */
struct isa_field {
    const char *name;  /* keyword in assembly text */
    uint8_t kind;      /* enum isa_field_kind */
    uint8_t slot;      /* index in ap/fimm/imm/enums, or flag bit */
    uint8_t fslot;     /* APF: the fimm slot of the scalar form */
    uint8_t etype;     /* ENUM: enum isa_enum_type */
    uint16_t attr;     /* enum isa_field_attr bits */
    double fdef;       /* default of F32/F64/APF scalars */
    int64_t idef;      /* default of INT/ENUM */
    int64_t min;       /* INT: smallest value allowed */
    int64_t max;       /* INT: largest value allowed */
};

/* Field constructors used in the rows of emu/isa/isa_ops.h. */
#define ISA_AP(nm, sl, at) \
    {.name = #nm, .kind = ISA_FK_AP, .slot = (sl), .attr = (at)}
#define ISA_APF(nm, sl, fs, at, d) \
    {.name = #nm, .kind = ISA_FK_APF, .slot = (sl), .fslot = (fs), .attr = (at), .fdef = (d)}
#define ISA_F32(nm, fs, d) \
    {.name = #nm, .kind = ISA_FK_F32, .slot = (fs), .fdef = (d)}
#define ISA_F32_REQ(nm, fs) \
    {.name = #nm, .kind = ISA_FK_F32, .slot = (fs), .attr = ISA_FA_REQ}
#define ISA_F64(nm, is, d) \
    {.name = #nm, .kind = ISA_FK_F64, .slot = (is), .fdef = (d)}
#define ISA_INT(nm, is, lo, hi, d) \
    {.name = #nm, .kind = ISA_FK_INT, .slot = (is), .min = (lo), .max = (hi), .idef = (d)}
#define ISA_INT_REQ(nm, is, lo, hi) \
    {.name = #nm, .kind = ISA_FK_INT, .slot = (is), .min = (lo), .max = (hi), \
     .idef = (lo), .attr = ISA_FA_REQ}
#define ISA_ENUM(nm, es, et, d) \
    {.name = #nm, .kind = ISA_FK_ENUM, .slot = (es), .etype = ISA_ET_##et, .idef = ISA_##et##_##d}
#define ISA_ENUM_REQ(nm, es, et) \
    {.name = #nm, .kind = ISA_FK_ENUM, .slot = (es), .etype = ISA_ET_##et, .attr = ISA_FA_REQ}
#define ISA_FLAG(nm, bit) \
    {.name = #nm, .kind = ISA_FK_FLAG, .slot = (bit)}
#define ISA_PATTERN(nm) \
    {.name = #nm, .kind = ISA_FK_PATTERN, .attr = ISA_FA_REQ}
#define ISA_MASK(nm) \
    {.name = #nm, .kind = ISA_FK_MASK, .attr = ISA_FA_REQ}

/* How the cost model (emu/core/cost.c) times an op: its table column. */
enum isa_cost_class {
    ISA_COST_SEQ = 0,      /* sequencer work: one engine cycle */
    ISA_COST_COMPUTE = 1,  /* elements streamed through the engine */
    ISA_COST_MATMUL = 2,   /* the moving tensor through the PE array */
    ISA_COST_DMA = 3,      /* bytes over the DMA engines (and between cores) */
};

/* One op of the table. */
struct isa_op_desc {
    const char *name;                /* mnemonic */
    uint8_t opcode;                  /* enum isa_opcode */
    uint8_t engines;                 /* ISA_EM_* mask of engines that run it */
    uint8_t min_gen;                 /* lowest NeuronCore version with the op (2..4) */
    uint8_t cost;                    /* enum isa_cost_class */
    uint8_t nfields;                 /* entries in fields */
    const struct isa_field *fields;  /* operands in assembly order */
};

/* ---- table lookups ------------------------------------------------------ */
/* The op with this opcode, or NULL when the opcode is unassigned. */
const struct isa_op_desc *isa_op_lookup(unsigned opcode);
/* The op with this mnemonic (len bytes, not NUL-terminated), or NULL. */
const struct isa_op_desc *isa_op_by_name(const char *name, size_t len);
/* Each op in opcode order: *iter starts at 0; NULL after the last. */
const struct isa_op_desc *isa_op_next(unsigned *iter);
/* Index of the field called name in op, or -1. */
int isa_op_field(const struct isa_op_desc *op, const char *name, size_t len);

/* "pe", "act", "pool", "dve", "sp"; NULL for a bad value. */
const char *isa_engine_name(unsigned engine);
/* The engine with this short name (len bytes), or -1. */
int isa_engine_from_name(const char *name, size_t len);

/* Element size in bytes; 0 for an invalid dtype. */
size_t isa_dtype_size(unsigned dtype);
/* Assembly name ("f32", "bf16", "fp8e4", "i32", ...); NULL when invalid. */
const char *isa_dtype_name(unsigned dtype);
/* The dtype with this assembly name (len bytes), or -1. */
int isa_dtype_from_name(const char *name, size_t len);
/* True for the floating-point dtypes (f32, f32r, bf16, f16, fp8*). */
bool isa_dtype_is_float(unsigned dtype);
/* True for the packed x4 containers (fp8e5x4, fp8e4fnx4, fp4x4). */
bool isa_dtype_is_packed(unsigned dtype);

/* "sbuf", "psum", "hbm"; NULL for NONE or a bad value. */
const char *isa_mem_name(unsigned mem);
/* Name of value in an enum type, or NULL when it has none. */
const char *isa_enum_name(unsigned etype, unsigned value);
/* Value of the named member of an enum type (len bytes), or -1. */
int isa_enum_from_name(unsigned etype, const char *name, size_t len);
/* What an enum type is, e.g. "activation function". */
const char *isa_enum_type_what(unsigned etype);

/* ---- building and checking instructions -------------------------------- */
/* Zero *insn, set opcode and engine, and fill every field's default.
 * EMU_INVALID (no log) when the opcode is unassigned. */
emu_status isa_insn_init(struct isa_insn *insn, unsigned engine, unsigned opcode);

/* What isa_validate found wrong. */
struct isa_fault {
    int field;      /* index in the op's fields, or -1 */
    int wait;       /* index of the bad wait entry, or -1 */
    int signal;     /* index of the bad signal entry, or -1 */
    char msg[160];  /* the cause, one line */
};

/* Check every rule of the encoding on a decoded instruction: opcode,
 * engine, operands, immediates, unused slots zero, sync entries. Does not
 * log; EMU_INVALID with *fault filled (fault may be NULL). */
emu_status isa_validate(const struct isa_insn *insn, struct isa_fault *fault);

/* ---- encoding ------------------------------------------------------------ */
/* Validate and write one instruction (ISA_INSN_BYTES bytes). EMU_INVALID
 * with one log line when the instruction breaks a rule. */
emu_status isa_encode(const struct isa_insn *insn, uint8_t *out);

/* Read and validate one instruction for engine eng from bytes (size must
 * be at least ISA_INSN_BYTES). EMU_INVALID (one "NEFF" log line naming
 * the cause), EMU_NEFF_VERSION for a newer ISA version. */
emu_status isa_decode(const uint8_t *bytes, size_t size, enum isa_engine eng,
                      struct isa_insn *out);

/* Encode a whole stream for engine eng: header plus count instructions,
 * in a malloc'd buffer the caller frees. EMU_INVALID / EMU_RESOURCE. */
emu_status isa_encode_stream(const struct isa_insn *insns, size_t count,
                             enum isa_engine eng, uint8_t **out, size_t *size);

/* Decode a whole stream for engine eng into a malloc'd array (NULL when
 * count is 0) the caller frees. Checks the header, the size, every
 * instruction and every jump/branch target. Errors as isa_decode, plus
 * EMU_RESOURCE; one log line naming the instruction index. */
emu_status isa_decode_stream(const uint8_t *bytes, size_t size, enum isa_engine eng,
                             struct isa_insn **out, size_t *count);

/* ---- access-pattern arithmetic ------------------------------------------ */
/* What an access pattern touches. */
struct isa_extent {
    uint32_t part_first;  /* lowest partition touched (0 in HBM) */
    uint32_t part_last;   /* highest partition touched (0 in HBM) */
    uint64_t lo;          /* lowest byte offset touched (per partition on chip) */
    uint64_t hi;          /* one past the highest byte touched */
    uint64_t elems;       /* elements per partition: product of the dim counts */
};

/* Compute the extent of ap. EMU_INVALID (no log) when it is absent or
 * malformed, or when the arithmetic overflows or goes below byte 0. */
emu_status isa_ap_extent(const struct isa_ap *ap, struct isa_extent *out);

/* Does ap stay inside a memory of mem_size bytes (per partition for SBUF
 * and PSUM, the variable's size for HBM)? EMU_OK, EMU_EXEC_OOB when
 * it does not, EMU_INVALID as isa_ap_extent. Does not log. */
emu_status isa_ap_check_bounds(const struct isa_ap *ap, uint64_t mem_size);

/* ---- dispatch ------------------------------------------------------------ */
/* The executor defines struct isa_exec_ctx and, in any of its files, one
 * semantics function per op, declared here from the table:
 *   emu_status isa_exec_<mnemonic>(struct isa_exec_ctx *, const struct isa_insn *);
 * One .c file defines ISA_WANT_DISPATCH before including this header to
 * get the table isa_dispatch[opcode]; an op whose function is missing is
 * then a link error. */
struct isa_exec_ctx;
typedef emu_status (*isa_exec_fn)(struct isa_exec_ctx *ctx, const struct isa_insn *insn);

#define ISA_OP(name, code, engines, gen, cost, fields) \
    emu_status isa_exec_##name(struct isa_exec_ctx *ctx, const struct isa_insn *insn);
#include "emu/isa/isa_ops.h"
#undef ISA_OP

#endif /* TRNEMU_EMU_ISA_H */

#if defined(ISA_WANT_DISPATCH) && !defined(TRNEMU_EMU_ISA_DISPATCH)
#define TRNEMU_EMU_ISA_DISPATCH
/* Semantics function of each opcode; NULL for unassigned opcodes. */
static const isa_exec_fn isa_dispatch[ISA_OPCODE_SPACE] = {
#define ISA_OP(name, code, engines, gen, cost, fields) [code] = isa_exec_##name,
#include "emu/isa/isa_ops.h"
#undef ISA_OP
};
#endif
