/*
 * exec_standin.c: executions of a vendor-compiled NEFF, whose instruction
 * streams are not trnemu's open ISA: refused, or, when
 * TRNEMU_FOREIGN_NEFF=zeros asks for it, stood in for with zero-filled
 * outputs (exec_int.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "devices/config/env.h"
#include "devices/observe/systrace.h"
#include "devices/runtime/exec_int.h"
#include "devices/runtime/runtime.h"
#include "emu/core/cost.h"
#include "emu/log.h"

/* The cost model's estimate of a stand-in execution: one DMA pass that
 * writes every output (the only work a zero-filling stand-in does), over
 * all DMA engines of the core at the generation's bandwidth. */
static uint64_t exec_standin_ns(const nrt_model_t *m, const struct exec_binding *b)
{
    const struct cost_table *t = cost_table_for(rt_machine()->cfg.profile->gen);
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < b->n; i++)
        if (m->neff->io[i].is_output)
            bytes += b->views[i].size;
    double per_ns = t->dma_engine_bytes_per_ns * (t->dma_engines > 0 ? t->dma_engines : 1);
    return (uint64_t)(t->dma_fixed_ns + (double)bytes / per_ns);
}

NRT_STATUS exec_standin(nrt_model_t *m, struct exec_binding *b)
{
    struct env_exec e;
    if (env_exec(&e) != NRT_SUCCESS)
        return NRT_INVALID;
    if (!e.foreign_zeros) {
        LOG_ERROR("NRT", "'%s' was compiled for real hardware: its instruction streams are not "
                  "trnemu's open ISA and cannot be emulated (TRNEMU_FOREIGN_NEFF=zeros gives "
                  "zero-filled outputs instead)", m->neff->info.name);
        return NRT_UNSUPPORTED_NEFF_VERSION;
    }
    if (!atomic_exchange(&m->stand_in_warned, true)) {
        instance_use_stand_in(rt_machine()->inst, m->gvnc);
        LOG_WARN_SHOWN("NRT", "stand-in execution of foreign NEFF '%s': outputs are "
                       "zero-filled, not computed (TRNEMU_FOREIGN_NEFF=zeros; said once per "
                       "model)", m->neff->info.name);
    }
    uint64_t t0 = systrace_now_ns();
    for (uint32_t i = 0; i < b->n; i++)
        if (m->neff->io[i].is_output)
            memset(b->views[i].va, 0, b->views[i].size);
    uint64_t ns = exec_standin_ns(m, b);
    atomic_store(&m->device_ns_last, ns);
    atomic_fetch_add(&m->device_ns_total, ns);
    systrace_emit(SYS_NC_EXEC_RUNNING, m->vnc, t0, ns, m->neff->info.name,
                  atomic_load(&m->executions) + 1, NRT_SUCCESS);
    return NRT_SUCCESS;
}
