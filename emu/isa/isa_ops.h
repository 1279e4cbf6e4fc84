/*
 * isa_ops.h: the one table of trnemu's open instruction set (ISA version 1).
 *
 * This file is an X-macro list in the style of Spike's encoding.h: it has no
 * include guard and is included several times, each time with the row macros
 * defined to generate something else (opcode enum, enum names, operand
 * signatures, the dispatch table of semantics functions). Row macros that
 * the includer leaves undefined expand to nothing.
 *
 *   ISA_ENUM_TYPE(ID, "what it is")        an enum type used by op fields
 *   ISA_ENUM_ITEM(ID, name, value)         one named value of that type
 *   ISA_OP(mnemonic, opcode, engines, gen, cost, (fields...))
 *
 * The fields of an op (ISA_AP, ISA_APF, ISA_ENUM, ... from emu/isa/isa.h) give,
 * in the order the assembler prints them, each operand's keyword and where
 * it lives in the instruction: access-pattern slot ap[], float slot fimm[],
 * 64-bit slot imm[], enum slot enums[], or flag bit. By convention ap[0] is
 * the main output. Semantics read a field by its name, never its slot:
 * emu/isa/isa_args.h makes the accessors (ISA_ARG_ENUM(insn, op, field)
 * and friends) from these rows. gen is the lowest NeuronCore version (2, 3 or 4) with
 * the op at all (forms that need a later one, such as a v4 dtype or ALU
 * operator, are rules in emu/isa/isa_generation.c); cost is its class in
 * the cost model (emu/core/cost.c): SEQ (sequencer work, one cycle),
 * COMPUTE (elements streamed through the engine), MATMUL (the moving
 * tensor through the PE array), DMA (bytes over the DMA engines; also
 * every transfer between cores). Adding an op is one row here plus its
 * semantics function isa_exec_<mnemonic>. docs/isa.md explains every op.
 */

#ifndef ISA_ENUM_TYPE
#define ISA_ENUM_TYPE(id, what)
#define ISA_OPS_UNDEF_ENUM_TYPE
#endif
#ifndef ISA_ENUM_ITEM
#define ISA_ENUM_ITEM(id, name, value)
#define ISA_OPS_UNDEF_ENUM_ITEM
#endif
#ifndef ISA_OP
#define ISA_OP(name, code, engines, gen, cost, fields)
#define ISA_OPS_UNDEF_OP
#endif

/* ---- enum types ---------------------------------------------------- */
ISA_ENUM_TYPE(ACT, "activation function")
ISA_ENUM_TYPE(ALU, "ALU operator")
ISA_ENUM_TYPE(RCMD, "accumulator command")
ISA_ENUM_TYPE(CMP, "comparison")
ISA_ENUM_TYPE(SEMOP, "semaphore update")
ISA_ENUM_TYPE(DMAOP, "DMA element operation")
ISA_ENUM_TYPE(OOB, "out-of-bounds mode")
ISA_ENUM_TYPE(INDIR, "indirect side")
ISA_ENUM_TYPE(PERF, "matmul performance mode")
ISA_ENUM_TYPE(COLL, "collective reduce operation")
ISA_ENUM_TYPE(DMAENG, "transfer engine")

/* Activation functions (Scalar Engine). */
ISA_ENUM_ITEM(ACT, copy, 0)
ISA_ENUM_ITEM(ACT, exp, 1)
ISA_ENUM_ITEM(ACT, log, 2)
ISA_ENUM_ITEM(ACT, tanh, 3)
ISA_ENUM_ITEM(ACT, sigmoid, 4)
ISA_ENUM_ITEM(ACT, relu, 5)
ISA_ENUM_ITEM(ACT, prelu, 6)
ISA_ENUM_ITEM(ACT, gelu, 7)
ISA_ENUM_ITEM(ACT, gelu_dx, 8)
ISA_ENUM_ITEM(ACT, gelu_apprx_tanh, 9)
ISA_ENUM_ITEM(ACT, gelu_apprx_sigmoid, 10)
ISA_ENUM_ITEM(ACT, silu, 11)
ISA_ENUM_ITEM(ACT, silu_dx, 12)
ISA_ENUM_ITEM(ACT, softplus, 13)
ISA_ENUM_ITEM(ACT, mish, 14)
ISA_ENUM_ITEM(ACT, erf, 15)
ISA_ENUM_ITEM(ACT, erf_dx, 16)
ISA_ENUM_ITEM(ACT, sqrt, 17)
ISA_ENUM_ITEM(ACT, rsqrt, 18)
ISA_ENUM_ITEM(ACT, reciprocal, 19)
ISA_ENUM_ITEM(ACT, sin, 20)
ISA_ENUM_ITEM(ACT, arctan, 21)
ISA_ENUM_ITEM(ACT, square, 22)
ISA_ENUM_ITEM(ACT, abs, 23)
ISA_ENUM_ITEM(ACT, sign, 24)

/* ALU operators: arithmetic, bitvec, comparison, logical. */
ISA_ENUM_ITEM(ALU, bypass, 0)
ISA_ENUM_ITEM(ALU, add, 1)
ISA_ENUM_ITEM(ALU, subtract, 2)
ISA_ENUM_ITEM(ALU, multiply, 3)
ISA_ENUM_ITEM(ALU, divide, 4)
ISA_ENUM_ITEM(ALU, max, 5)
ISA_ENUM_ITEM(ALU, min, 6)
ISA_ENUM_ITEM(ALU, abs_max, 7)
ISA_ENUM_ITEM(ALU, abs_min, 8)
ISA_ENUM_ITEM(ALU, power, 9)
ISA_ENUM_ITEM(ALU, mod, 10)
ISA_ENUM_ITEM(ALU, abs, 11)
ISA_ENUM_ITEM(ALU, rsqrt, 12)
ISA_ENUM_ITEM(ALU, average, 13)
ISA_ENUM_ITEM(ALU, square, 14)
ISA_ENUM_ITEM(ALU, relu, 15)
ISA_ENUM_ITEM(ALU, bitwise_and, 16)
ISA_ENUM_ITEM(ALU, bitwise_or, 17)
ISA_ENUM_ITEM(ALU, bitwise_xor, 18)
ISA_ENUM_ITEM(ALU, invert, 19)
ISA_ENUM_ITEM(ALU, left_shift, 20)
ISA_ENUM_ITEM(ALU, right_shift, 21)
ISA_ENUM_ITEM(ALU, arith_shift_right, 22)
ISA_ENUM_ITEM(ALU, equal, 32)
ISA_ENUM_ITEM(ALU, not_equal, 33)
ISA_ENUM_ITEM(ALU, greater, 34)
ISA_ENUM_ITEM(ALU, greater_equal, 35)
ISA_ENUM_ITEM(ALU, less, 36)
ISA_ENUM_ITEM(ALU, less_equal, 37)
ISA_ENUM_ITEM(ALU, logical_and, 40)
ISA_ENUM_ITEM(ALU, logical_or, 41)
ISA_ENUM_ITEM(ALU, logical_xor, 42)
ISA_ENUM_ITEM(ALU, logical_not, 43)

/* Accumulator (reduce register) commands, numbered as in NKI. */
ISA_ENUM_ITEM(RCMD, idle, 0)
ISA_ENUM_ITEM(RCMD, reset, 1)
ISA_ENUM_ITEM(RCMD, reduce, 2)
ISA_ENUM_ITEM(RCMD, reset_reduce, 3)
ISA_ENUM_ITEM(RCMD, load_reduce, 4)

/* Comparisons of semaphores and registers. */
ISA_ENUM_ITEM(CMP, eq, 0)
ISA_ENUM_ITEM(CMP, ne, 1)
ISA_ENUM_ITEM(CMP, ge, 2)
ISA_ENUM_ITEM(CMP, gt, 3)
ISA_ENUM_ITEM(CMP, le, 4)
ISA_ENUM_ITEM(CMP, lt, 5)

/* Semaphore updates. */
ISA_ENUM_ITEM(SEMOP, set, 0)
ISA_ENUM_ITEM(SEMOP, add, 1)
ISA_ENUM_ITEM(SEMOP, sub, 2)

/* What a direct DMA does with each element. */
ISA_ENUM_ITEM(DMAOP, copy, 0)
ISA_ENUM_ITEM(DMAOP, cast, 1)
ISA_ENUM_ITEM(DMAOP, add, 2)
ISA_ENUM_ITEM(DMAOP, fma, 3)
ISA_ENUM_ITEM(DMAOP, min, 4)
ISA_ENUM_ITEM(DMAOP, max, 5)
ISA_ENUM_ITEM(DMAOP, transpose, 6)
ISA_ENUM_ITEM(DMAOP, accumulate, 7)

ISA_ENUM_ITEM(OOB, error, 0)
ISA_ENUM_ITEM(OOB, skip, 1)

ISA_ENUM_ITEM(INDIR, none, 0)
ISA_ENUM_ITEM(INDIR, src, 1)
ISA_ENUM_ITEM(INDIR, dst, 2)

ISA_ENUM_ITEM(PERF, none, 0)
ISA_ENUM_ITEM(PERF, double_row, 1)

ISA_ENUM_ITEM(COLL, add, 0)
ISA_ENUM_ITEM(COLL, max, 1)
ISA_ENUM_ITEM(COLL, min, 2)
ISA_ENUM_ITEM(COLL, fma, 3)

ISA_ENUM_ITEM(DMAENG, dma, 0)
ISA_ENUM_ITEM(DMAENG, gpsimd_dma, 1)

/* ---- ops ------------------------------------------------------------ */
/* Control, synchronisation and sequencer registers: every engine. */
ISA_OP(nop, 0x00, ISA_EM_ALL, 2, SEQ, ())
ISA_OP(halt, 0x01, ISA_EM_ALL, 2, SEQ, ())
ISA_OP(sem_wait, 0x02, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(sem, 0, 0, ISA_NUM_SEMS - 1), ISA_ENUM(cmp, 0, CMP, ge), ISA_INT(value, 1, 0, UINT32_MAX, 1)))
ISA_OP(sem_signal, 0x03, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(sem, 0, 0, ISA_NUM_SEMS - 1), ISA_ENUM(op, 0, SEMOP, add), ISA_INT(value, 1, 0, UINT32_MAX, 1)))
ISA_OP(jump, 0x04, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(target, 0, 0, UINT32_MAX)))
ISA_OP(branch, 0x05, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(reg, 0, 0, ISA_NUM_REGS - 1), ISA_ENUM_REQ(cmp, 0, CMP), ISA_INT(value, 1, INT32_MIN, INT32_MAX, 0), ISA_INT_REQ(target, 2, 0, UINT32_MAX)))
ISA_OP(reg_move, 0x06, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(rd, 0, 0, ISA_NUM_REGS - 1), ISA_INT_REQ(value, 1, INT32_MIN, INT32_MAX)))
ISA_OP(reg_alu, 0x07, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(rd, 0, 0, ISA_NUM_REGS - 1), ISA_INT_REQ(rs, 1, 0, ISA_NUM_REGS - 1), ISA_ENUM_REQ(op, 0, ALU), ISA_INT(rt, 2, -1, ISA_NUM_REGS - 1, -1), ISA_INT(imm, 3, INT32_MIN, INT32_MAX, 0)))
ISA_OP(reg_load, 0x08, ISA_EM_ALL, 2, SEQ, (ISA_INT_REQ(rd, 0, 0, ISA_NUM_REGS - 1), ISA_AP(src, 1, ISA_DMA_IN)))
ISA_OP(reg_store, 0x09, ISA_EM_ALL, 2, SEQ, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_INT_REQ(rs, 0, 0, ISA_NUM_REGS - 1)))

/* Tensor Engine (PE). */
ISA_OP(nc_matmul, 0x10, ISA_EM_PE, 2, MATMUL, (ISA_AP(dst, 0, ISA_PS_OUT), ISA_AP(stationary, 1, ISA_SB_IN), ISA_AP(moving, 2, ISA_SB_IN), ISA_FLAG(accumulate, 0), ISA_FLAG(transpose, 1), ISA_FLAG(stationary_onezero, 2), ISA_FLAG(moving_onezero, 3), ISA_ENUM(perf, 0, PERF, none), ISA_INT(tile_row, 0, 0, 127, 0), ISA_INT(tile_col, 1, 0, 127, 0), ISA_INT(tile_rows, 2, 1, 128, 128), ISA_INT(tile_cols, 3, 1, 128, 128)))
ISA_OP(nc_matmul_mx, 0x11, ISA_EM_PE, 4, MATMUL, (ISA_AP(dst, 0, ISA_PS_OUT), ISA_AP(stationary, 1, ISA_SB_IN), ISA_AP(moving, 2, ISA_SB_IN), ISA_AP(stationary_scale, 3, ISA_SB_IN), ISA_AP(moving_scale, 4, ISA_SB_IN), ISA_FLAG(accumulate, 0), ISA_INT(tile_row, 0, 0, 127, 0), ISA_INT(tile_col, 1, 0, 127, 0), ISA_INT(tile_rows, 2, 1, 128, 128), ISA_INT(tile_cols, 3, 1, 128, 128)))
ISA_OP(nc_transpose, 0x12, ISA_EM_PE | ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN)))
ISA_OP(nc_matmul_sparse, 0x13, ISA_EM_PE, 3, MATMUL, (ISA_AP(dst, 0, ISA_PS_OUT), ISA_AP(stationary, 1, ISA_SB_IN), ISA_AP(moving, 2, ISA_SB_IN), ISA_AP(tag, 3, ISA_SB_IN), ISA_INT_REQ(keep, 0, 1, 4), ISA_INT_REQ(group, 1, 2, 16), ISA_FLAG(accumulate, 0)))

/* Scalar Engine (ACT). */
ISA_OP(activation, 0x20, ISA_EM_ACT, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(func, 0, ACT), ISA_APF(bias, 2, 0, ISA_OPT_IN, 0.0), ISA_APF(scale, 3, 1, ISA_OPT_IN, 1.0), ISA_ENUM(reduce_op, 1, ALU, add), ISA_ENUM(reduce_cmd, 2, RCMD, idle), ISA_AP(reduce_res, 4, ISA_OPT_OUT)))
ISA_OP(activation_reduce, 0x21, ISA_EM_ACT, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(func, 0, ACT), ISA_ENUM_REQ(reduce_op, 1, ALU), ISA_AP(reduce_res, 4, ISA_OUT), ISA_APF(bias, 2, 0, ISA_OPT_IN, 0.0), ISA_APF(scale, 3, 1, ISA_OPT_IN, 1.0)))
ISA_OP(activate2, 0x22, ISA_EM_ACT, 4, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(func, 0, ACT), ISA_ENUM(op0, 1, ALU, bypass), ISA_APF(imm0, 2, 0, ISA_OPT_IN, 0.0), ISA_ENUM(op1, 2, ALU, bypass), ISA_APF(imm1, 3, 1, ISA_OPT_IN, 0.0), ISA_APF(relu_param, 5, 2, ISA_OPT_IN, 0.0), ISA_FLAG(reverse0, 0), ISA_FLAG(reverse1, 1), ISA_ENUM(reduce_op, 3, ALU, add), ISA_ENUM(reduce_cmd, 4, RCMD, idle), ISA_AP(reduce_res, 4, ISA_OPT_OUT)))

/* Element-wise (Vector, GpSimd, some Scalar). */
ISA_OP(tensor_tensor, 0x30, ISA_EM_DVE | ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data1, 1, ISA_IN), ISA_AP(data2, 2, ISA_IN), ISA_ENUM_REQ(op, 0, ALU)))
ISA_OP(tensor_scalar, 0x31, ISA_EM_DVE | ISA_EM_ACT | ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(op0, 0, ALU), ISA_APF(operand0, 2, 0, ISA_OPT_IN, 0.0), ISA_FLAG(reverse0, 0), ISA_ENUM(op1, 1, ALU, bypass), ISA_APF(operand1, 3, 1, ISA_OPT_IN, 0.0), ISA_FLAG(reverse1, 1)))
ISA_OP(scalar_tensor_tensor, 0x32, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(op0, 0, ALU), ISA_APF(operand0, 2, 0, ISA_OPT_IN, 0.0), ISA_ENUM_REQ(op1, 1, ALU), ISA_AP(operand1, 3, ISA_IN), ISA_FLAG(reverse0, 0), ISA_FLAG(reverse1, 1)))
ISA_OP(tensor_copy, 0x33, ISA_EM_DVE | ISA_EM_ACT | ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(src, 1, ISA_IN)))
ISA_OP(tensor_copy_predicated, 0x34, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_APF(src, 1, 0, ISA_IN, 0.0), ISA_AP(predicate, 2, ISA_IN), ISA_FLAG(reverse_pred, 0)))
ISA_OP(memset, 0x35, ISA_EM_DVE | ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_F64(value, 0, 0.0)))
ISA_OP(reciprocal, 0x36, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN)))
ISA_OP(exponential, 0x37, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(src, 1, ISA_IN), ISA_APF(max_value, 2, 0, ISA_OPT_IN, 0.0), ISA_ENUM(reduce_cmd, 0, RCMD, idle), ISA_APF(reduce_init, 4, 1, ISA_OPT_IN, 0.0), ISA_AP(reduce_res, 3, ISA_OPT_OUT)))
ISA_OP(dropout, 0x38, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_APF(prob, 2, 0, ISA_IN, 0.0)))

/* Reductions, scans, statistics, top-8 (Vector; GpSimd for partitions). */
ISA_OP(tensor_reduce, 0x40, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(op, 0, ALU), ISA_INT_REQ(axes, 0, 1, 4), ISA_FLAG(negate, 0), ISA_FLAG(keepdims, 1)))
ISA_OP(tensor_partition_reduce, 0x41, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(data, 1, ISA_SB_IN), ISA_ENUM_REQ(op, 0, ALU)))
ISA_OP(tensor_tensor_scan, 0x42, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data0, 1, ISA_IN), ISA_AP(data1, 2, ISA_IN), ISA_APF(initial, 3, 0, ISA_IN, 0.0), ISA_ENUM_REQ(op0, 0, ALU), ISA_ENUM_REQ(op1, 1, ALU), ISA_FLAG(reverse0, 0), ISA_FLAG(reverse1, 1)))
ISA_OP(tensor_scalar_reduce, 0x43, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_ENUM_REQ(op0, 0, ALU), ISA_APF(operand0, 2, 0, ISA_OPT_IN, 0.0), ISA_ENUM_REQ(reduce_op, 1, ALU), ISA_AP(reduce_res, 3, ISA_OPT_OUT), ISA_FLAG(reverse0, 0), ISA_ENUM(reduce_cmd, 2, RCMD, reset_reduce), ISA_APF(reduce_init, 4, 1, ISA_OPT_IN, 0.0), ISA_FLAG(reduce_res_negate, 1)))
ISA_OP(tensor_scalar_cumulative, 0x44, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(src, 1, ISA_IN), ISA_ENUM_REQ(op0, 0, ALU), ISA_ENUM_REQ(op1, 1, ALU), ISA_APF(imm0, 2, 0, ISA_IN, 0.0), ISA_APF(imm1, 3, 1, ISA_OPT_IN, 0.0), ISA_ENUM(reduce_cmd, 2, RCMD, reset_reduce), ISA_FLAG(reverse0, 0)))
ISA_OP(bn_stats, 0x45, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN)))
ISA_OP(bn_aggr, 0x46, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN)))
ISA_OP(max8, 0x47, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(src, 1, ISA_IN)))
ISA_OP(nc_find_index8, 0x48, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_AP(vals, 2, ISA_IN)))
ISA_OP(nc_match_replace8, 0x49, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(data, 1, ISA_IN), ISA_AP(vals, 2, ISA_IN), ISA_F32(imm, 0, 0.0), ISA_AP(dst_idx, 3, ISA_OPT_OUT)))

/* Selection and pattern generation. */
ISA_OP(select_reduce, 0x50, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(predicate, 1, ISA_IN), ISA_AP(on_true, 2, ISA_IN), ISA_APF(on_false, 3, 0, ISA_IN, 0.0), ISA_AP(reduce_res, 4, ISA_OPT_OUT), ISA_ENUM(reduce_cmd, 0, RCMD, idle), ISA_ENUM(reduce_op, 1, ALU, max), ISA_FLAG(reverse_pred, 0)))
ISA_OP(range_select, 0x51, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(on_true, 1, ISA_IN), ISA_ENUM_REQ(comp_op0, 0, ALU), ISA_ENUM_REQ(comp_op1, 1, ALU), ISA_AP(bound0, 2, ISA_IN), ISA_AP(bound1, 3, ISA_IN), ISA_ENUM(reduce_cmd, 2, RCMD, reset_reduce), ISA_AP(reduce_res, 4, ISA_OPT_OUT), ISA_ENUM(reduce_op, 3, ALU, max), ISA_INT(range_start, 0, INT32_MIN, INT32_MAX, 0), ISA_F32(on_false, 0, -3.40282346638528859812e+38)))
ISA_OP(affine_select, 0x52, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(on_true, 1, ISA_SB_IN), ISA_PATTERN(pattern), ISA_INT_REQ(channel_multiplier, 1, INT32_MIN, INT32_MAX), ISA_INT(offset, 0, INT32_MIN, INT32_MAX, 0), ISA_F32_REQ(on_false, 0), ISA_ENUM(cmp_op, 0, ALU, equal)))
ISA_OP(iota, 0x53, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_PATTERN(pattern), ISA_INT(offset, 0, INT32_MIN, INT32_MAX, 0), ISA_INT(channel_multiplier, 1, INT32_MIN, INT32_MAX, 0)))

/* Gathers, shuffles and other GpSimd/Vector data movement. */
ISA_OP(local_gather, 0x58, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(src, 1, ISA_SB_IN), ISA_AP(index, 2, ISA_SB_IN), ISA_INT(num_elem_per_idx, 0, 1, 32, 1), ISA_INT(num_valid_indices, 1, 0, 4096, 0)))
ISA_OP(nc_n_gather, 0x59, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(data, 1, ISA_SB_IN), ISA_AP(indices, 2, ISA_SB_IN)))
ISA_OP(nc_stream_shuffle, 0x5a, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_AP(src, 1, ISA_IN), ISA_MASK(mask)))
ISA_OP(sequence_bounds, 0x5b, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(segment_ids, 1, ISA_SB_IN)))
ISA_OP(nonzero_with_count, 0x5c, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(src, 1, ISA_SB_IN), ISA_INT(index_offset, 0, INT32_MIN, INT32_MAX, 0), ISA_INT(padding_val, 1, INT32_MIN, INT32_MAX, -1)))
ISA_OP(topk, 0x5d, ISA_EM_POOL, 2, COMPUTE, (ISA_AP(val_dst, 0, ISA_SB_OUT), ISA_AP(idx_dst, 1, ISA_SB_OUT), ISA_AP(src, 2, ISA_SB_IN), ISA_INT_REQ(n, 0, 8, 65535)))
ISA_OP(quantize_mx, 0x5e, ISA_EM_DVE, 4, COMPUTE, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(dst_scale, 1, ISA_SB_OUT), ISA_AP(src, 2, ISA_SB_IN)))

/* Pseudo random numbers. */
ISA_OP(rng, 0x60, ISA_EM_DVE | ISA_EM_POOL, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT)))
ISA_OP(rand2, 0x61, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT), ISA_APF(min, 1, 0, ISA_IN, 0.0), ISA_APF(max, 2, 1, ISA_IN, 0.0)))
ISA_OP(rand_set_state, 0x62, ISA_EM_POOL | ISA_EM_DVE, 2, COMPUTE, (ISA_AP(src_seeds, 1, ISA_SB_IN)))
ISA_OP(rand_get_state, 0x63, ISA_EM_POOL | ISA_EM_DVE, 2, COMPUTE, (ISA_AP(dst, 0, ISA_OUT)))
ISA_OP(set_rng_seed, 0x64, ISA_EM_DVE, 2, COMPUTE, (ISA_AP(src_seeds, 1, ISA_IN)))

/* DMA: any engine's queue can start one. */
ISA_OP(dma_copy, 0x70, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_ENUM(op, 0, DMAOP, copy), ISA_F32(scale, 0, 1.0), ISA_AP(index, 2, ISA_SB_OPT_IN), ISA_ENUM(indirect, 1, INDIR, none), ISA_INT(indirect_dim, 0, 0, 4, 0), ISA_ENUM(oob, 2, OOB, error), ISA_INT(priority, 1, 0, 3, 0)))
ISA_OP(dma_transpose, 0x71, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_INT(priority, 0, 0, 3, 0)))
ISA_OP(dma_compute, 0x72, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src0, 1, ISA_DMA_IN), ISA_AP(src1, 2, ISA_DMA_OPT_IN), ISA_AP(src2, 3, ISA_DMA_OPT_IN), ISA_AP(src3, 4, ISA_DMA_OPT_IN), ISA_ENUM(reduce_op, 0, ALU, add), ISA_F32(scale0, 0, 1.0), ISA_F32(scale1, 1, 1.0), ISA_F32(scale2, 2, 1.0), ISA_F32(scale3, 3, 1.0), ISA_ENUM(oob, 1, OOB, error)))
ISA_OP(dma_trigger, 0x73, ISA_EM_ALL, 2, DMA, (ISA_INT_REQ(queue, 0, 0, 65535)))

/* Between NeuronCores: point to point, barrier, collectives. */
ISA_OP(sendrecv, 0x80, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_SB_OUT), ISA_AP(src, 1, ISA_SB_IN), ISA_INT_REQ(send_to, 0, 0, 65535), ISA_INT_REQ(recv_from, 1, 0, 65535), ISA_INT(pipe_id, 2, 0, 255, 0), ISA_ENUM(dma_engine, 0, DMAENG, dma)))
ISA_OP(core_barrier, 0x81, ISA_EM_ALL, 2, SEQ, (ISA_AP(data, 1, ISA_HBM_IN), ISA_INT(cores, 0, 1, UINT32_MAX, 3)))
ISA_OP(all_reduce, 0x88, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_INT(group, 0, 0, 65535, 0), ISA_ENUM(op, 0, COLL, add)))
ISA_OP(all_gather, 0x89, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_INT(group, 0, 0, 65535, 0)))
ISA_OP(reduce_scatter, 0x8a, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_INT(group, 0, 0, 65535, 0), ISA_ENUM(op, 0, COLL, add)))
ISA_OP(all_to_all, 0x8b, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_INT(group, 0, 0, 65535, 0)))
ISA_OP(permute, 0x8c, ISA_EM_ALL, 2, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_INT(group, 0, 0, 65535, 0), ISA_INT_REQ(send_to, 1, 0, 65535), ISA_INT_REQ(recv_from, 2, 0, 65535)))
ISA_OP(all_to_all_v, 0x8d, ISA_EM_ALL, 3, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_AP(metadata, 2, ISA_DMA_OUT), ISA_INT(group, 0, 0, 65535, 0), ISA_FLAG(recv_counts_known, 0), ISA_FLAG(has_rdispls, 1)))
ISA_OP(all_gather_v, 0x8e, ISA_EM_ALL, 3, DMA, (ISA_AP(dst, 0, ISA_DMA_OUT), ISA_AP(src, 1, ISA_DMA_IN), ISA_AP(metadata, 2, ISA_DMA_OUT), ISA_INT(group, 0, 0, 65535, 0), ISA_FLAG(recv_counts_known, 0), ISA_FLAG(has_rdispls, 1)))

#ifdef ISA_OPS_UNDEF_ENUM_TYPE
#undef ISA_ENUM_TYPE
#undef ISA_OPS_UNDEF_ENUM_TYPE
#endif
#ifdef ISA_OPS_UNDEF_ENUM_ITEM
#undef ISA_ENUM_ITEM
#undef ISA_OPS_UNDEF_ENUM_ITEM
#endif
#ifdef ISA_OPS_UNDEF_OP
#undef ISA_OP
#undef ISA_OPS_UNDEF_OP
#endif
