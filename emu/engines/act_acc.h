/*
 * act_acc.h: the engine accumulator registers: one fp32 register per
 * partition lane (128) per engine of a core. The Scalar Engine's
 * reduce_regs (activation, activation_reduce, activate2) and the Vector
 * Engine's accumulator (exponential and the other DVE ops with a
 * reduce_cmd) live here, so that every op of an engine shares them.
 *
 * They start at 0 when first used on a core and keep their values across
 * instructions and executions, as the hardware registers do.
 */
#ifndef TRNEMU_EMU_ACT_ACC_H
#define TRNEMU_EMU_ACT_ACC_H

#include "emu/core/core.h"

/* The ISA_NUM_PARTITIONS registers of the calling engine (ctx->engine) of
 * ctx->core, indexed by partition. Never NULL. */
float *act_acc_regs(struct isa_exec_ctx *ctx);

#endif
