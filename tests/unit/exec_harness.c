/*
 * exec_harness.c: test bench for instruction semantics (see exec_harness.h).
 */
#include "exec_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct harness *harness_new(uint32_t gen)
{
    struct harness *h = calloc(1, sizeof *h);
    if (h == NULL || core_create(gen, &h->core) != EMU_OK) {
        fprintf(stderr, "harness: out of memory\n");
        abort();
    }
    h->prog.name = "harness";
    h->prog.vars = h->vars;
    for (int e = 0; e < ISA_ENG_COUNT; e++)
        h->prog.code[e] = h->insns[e];
    return h;
}

void harness_free(struct harness *h)
{
    if (h == NULL)
        return;
    core_destroy(h->core);
    free(h);
}

void harness_clear(struct harness *h)
{
    memset(h->insns, 0, sizeof h->insns);
    memset(h->prog.n, 0, sizeof h->prog.n);
}

struct isa_insn *harness_add(struct harness *h, enum isa_engine e, unsigned opcode)
{
    if (h->prog.n[e] >= HARNESS_MAX_INSNS)
        abort();
    struct isa_insn *insn = &h->insns[e][h->prog.n[e]++];
    if (isa_insn_init(insn, e, opcode) != EMU_OK)
        abort();
    return insn;
}

void harness_var(struct harness *h, uint32_t var_id, const char *name, void *mem, uint64_t size)
{
    size_t i = h->prog.nvars;
    if (i >= HARNESS_MAX_VARS)
        abort();
    while (i > 0 && h->vars[i - 1].var_id > var_id) {
        h->vars[i] = h->vars[i - 1];
        i--;
    }
    h->vars[i] = (struct core_var){var_id, name, mem, size};
    h->prog.nvars++;
}

emu_status harness_run(struct harness *h)
{
    struct core *cores[1] = {h->core};
    const struct core_program *progs[1] = {&h->prog};
    return core_run(cores, progs, 1, &h->opts, h->report, sizeof h->report);
}

static struct isa_ap harness_ap(uint8_t mem, uint32_t part, uint32_t nparts, int32_t part_step,
                                uint64_t off, uint32_t dtype, uint32_t ndims,
                                const int32_t dims[][2])
{
    struct isa_ap ap;
    memset(&ap, 0, sizeof ap);
    ap.mem = mem;
    ap.dtype = (uint8_t)dtype;
    ap.start_part = (uint8_t)part;
    ap.num_part = (uint8_t)nparts;
    ap.part_step = part_step;
    ap.offset = off;
    ap.ndims = (uint8_t)ndims;
    for (uint32_t d = 0; d < ndims; d++)
        ap.dim[d] = (struct isa_dim){dims[d][0], (uint32_t)dims[d][1]};
    return ap;
}

struct isa_ap harness_sbuf(uint32_t part, uint32_t nparts, uint64_t off, uint32_t dtype,
                           uint32_t ndims, const int32_t dims[][2])
{
    return harness_ap(ISA_MEM_SBUF, part, nparts, 1, off, dtype, ndims, dims);
}

struct isa_ap harness_psum(uint32_t part, uint32_t nparts, uint64_t off, uint32_t dtype,
                           uint32_t ndims, const int32_t dims[][2])
{
    return harness_ap(ISA_MEM_PSUM, part, nparts, 1, off, dtype, ndims, dims);
}

struct isa_ap harness_hbm(uint32_t var_id, uint64_t off, uint32_t rows, int32_t row_step,
                          uint32_t dtype, uint32_t ndims, const int32_t dims[][2])
{
    struct isa_ap ap = harness_ap(ISA_MEM_HBM, 0, rows, row_step, off, dtype, ndims, dims);
    ap.var_id = var_id;
    return ap;
}

struct isa_ap harness_tile(uint8_t mem, uint32_t part, uint32_t nparts, uint64_t off,
                           uint32_t dtype, uint32_t n)
{
    const int32_t dims[1][2] = {{1, (int32_t)n}};
    return harness_ap(mem, part, nparts, 1, off, dtype, 1, dims);
}

uint8_t *harness_sbuf_ptr(struct harness *h, uint32_t p, uint64_t off)
{
    return h->core->sbuf + (uint64_t)p * h->core->sbuf_part_bytes + off;
}

uint8_t *harness_psum_ptr(struct harness *h, uint32_t p, uint64_t off)
{
    return h->core->psum + (uint64_t)p * ISA_PSUM_PART_BYTES + off;
}
