/*
 * exec_standin.c: executions of a vendor-compiled NEFF, whose instruction
 * streams are not trnemu's open ISA: refused, or, when
 * TRNEMU_FOREIGN_NEFF=zeros asks for it, stood in for with zero-filled
 * outputs (exec_int.h).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "devices/runtime/exec_int.h"
#include "devices/runtime/runtime.h"
#include "emu/log.h"

NRT_STATUS exec_standin(nrt_model_t *m, struct exec_binding *b)
{
    const char *mode = getenv("TRNEMU_FOREIGN_NEFF");
    if (mode == NULL || strcmp(mode, "zeros") != 0) {
        LOG_ERROR("NRT", "'%s' was compiled for real hardware: its instruction streams are not "
                  "trnemu's open ISA and cannot be emulated (TRNEMU_FOREIGN_NEFF=zeros gives "
                  "zero-filled outputs instead)", m->neff->info.name);
        return NRT_UNSUPPORTED_NEFF_VERSION;
    }
    if (!atomic_exchange(&m->stand_in_warned, true)) {
        instance_use_stand_in(rt_machine()->inst, m->gvnc);
        LOG_WARN("NRT", "stand-in execution of foreign NEFF '%s': outputs are zero-filled, "
                 "not computed (TRNEMU_FOREIGN_NEFF=zeros; said once per model)",
                 m->neff->info.name);
    }
    for (uint32_t i = 0; i < b->n; i++)
        if (m->neff->io[i].is_output)
            memset(b->views[i].va, 0, b->views[i].size);
    return NRT_SUCCESS;
}
