/*
 * exec_bind.c: an execution's tensors: the caller's input and output
 * tensors looked up by the model's I/O names, checked and pinned, and the
 * model's programs bound to them and to the VNC's cores (exec_int.h).
 */
#include <inttypes.h>
#include <stdlib.h>

#include "devices/runtime/exec_int.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/tensor_set.h"
#include "emu/log.h"

static NRT_STATUS exec_bind_one(const struct neff_io *io, const nrt_tensor_set_t *set,
                                nrt_tensor_t **t, struct tensor_view *v)
{
    NRT_STATUS st = tensor_set_get((nrt_tensor_set_t *)set, io->name, t);
    if (st != NRT_SUCCESS) {
        if (st != NRT_FAILURE)
            return NRT_INVALID;  /* a freed tensor or a bad set: already logged */
        LOG_ERROR("NRT", "%s tensor '%s' is missing from the %s set",
                  io->is_output ? "output" : "input", io->name,
                  io->is_output ? "output" : "input");
        return NRT_INVALID;
    }
    st = tensor_pin(*t, v);
    if (st != NRT_SUCCESS)
        return st;
    if (v->size != io->size || v->va == NULL) {
        LOG_ERROR("NRT", "%s tensor '%s' is %" PRIu64 " bytes; the model expects %" PRIu64,
                  io->is_output ? "output" : "input", io->name, v->size, io->size);
        tensor_unpin(v);
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

void exec_unbind(struct exec_binding *b, uint32_t pinned)
{
    for (uint32_t i = 0; i < pinned; i++)
        tensor_unpin(&b->views[i]);
    free(b->views);
    free(b->tensors);
}

NRT_STATUS exec_bind(const struct neff_model *nm, const nrt_tensor_set_t *inputs,
                     nrt_tensor_set_t *outputs, struct exec_binding *b)
{
    b->n = nm->n_io;
    b->views = calloc(b->n ? b->n : 1, sizeof *b->views);
    b->tensors = calloc(b->n ? b->n : 1, sizeof *b->tensors);
    if (b->views == NULL || b->tensors == NULL) {
        LOG_ERROR("NRT", "out of memory for the tensors of an execution");
        exec_unbind(b, 0);
        return NRT_RESOURCE;
    }
    for (uint32_t i = 0; i < b->n; i++) {
        const struct neff_io *io = &nm->io[i];
        NRT_STATUS st = exec_bind_one(io, io->is_output ? outputs : inputs, &b->tensors[i],
                                      &b->views[i]);
        if (st != NRT_SUCCESS) {
            exec_unbind(b, i);
            return st;
        }
    }
    return NRT_SUCCESS;
}

NRT_STATUS exec_bind_cores(nrt_model_t *m, const struct exec_binding *b, struct core **cores,
                           const struct core_program **progs)
{
    for (uint32_t s = 0; s < m->nsgs; s++) {
        NRT_STATUS st = machine_vnc_core(rt_machine(), m->gvnc, s, &cores[s]);
        if (st != NRT_SUCCESS)
            return st;
        model_bind_program(&m->sgs[s], b->views, cores[s]);
        progs[s] = &m->sgs[s].prog;
    }
    return NRT_SUCCESS;
}
