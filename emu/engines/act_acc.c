/*
 * act_acc.c: the engine accumulator registers of act_acc.h: one fp32
 * register per partition per engine, kept in struct core (zeroed when the
 * core is created, kept across instructions and executions).
 */
#include "emu/engines/act_acc.h"

float *act_acc_regs(struct isa_exec_ctx *ctx)
{
    return ctx->core->acc[ctx->engine];
}
