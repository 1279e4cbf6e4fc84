/*
 * core.c: creating, resetting and querying an emulated NeuronCore
 * (see core.h).
 */
#include "emu/core/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu/log.h"

/* Large, reused regions: mapped once, huge pages when the kernel has them. */
static void *core_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

static size_t core_sbuf_bytes(const struct core *c)
{
    return (size_t)ISA_NUM_PARTITIONS * c->sbuf_part_bytes;
}

static size_t core_scratch_bytes(void)
{
    return (size_t)ISA_ENG_COUNT * CORE_SCRATCH_SLOTS * CORE_SCRATCH_ELEMS * sizeof(float);
}

/* Bytes of one SBUF partition of a core of version gen. */
static uint32_t core_part_bytes(uint32_t gen)
{
    return gen >= 4 ? ISA_SBUF_PART_BYTES_V4 : gen >= 3 ? ISA_SBUF_PART_BYTES_V3
                                                   : ISA_SBUF_PART_BYTES_V2;
}

emu_status core_create(uint32_t gen, struct core **out)
{
    struct core *c = calloc(1, sizeof *c);
    if (c == NULL)
        return EMU_RESOURCE;
    c->gen = gen;
    c->sbuf_part_bytes = core_part_bytes(gen);
    c->sbuf = core_map(core_sbuf_bytes(c));
    c->psum = core_map((size_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES);
    c->scratch = core_map(core_scratch_bytes());
    if (c->sbuf == NULL || c->psum == NULL || c->scratch == NULL) {
        LOG_ERROR("EMU", "out of host memory for a NeuronCore-v%u", gen);
        core_destroy(c);
        return EMU_RESOURCE;
    }
    *out = c;
    return EMU_OK;
}

void core_destroy(struct core *c)
{
    if (c == NULL)
        return;
    if (c->sbuf != NULL)
        munmap(c->sbuf, core_sbuf_bytes(c));
    if (c->psum != NULL)
        munmap(c->psum, (size_t)ISA_NUM_PARTITIONS * ISA_PSUM_PART_BYTES);
    if (c->scratch != NULL)
        munmap(c->scratch, core_scratch_bytes());
    free(c);
}

/* Keys that keep the two engines' generators apart. */
#define XW_DVE_TAG 0x58573044564500ull
#define XW_POOL_TAG 0x585731504f4f4cull

void core_xorwow_seed(struct core *c, unsigned xe, uint64_t seed)
{
    for (uint32_t l = 0; l < ISA_NUM_PARTITIONS; l++)
        for (uint32_t j = 0; j < CORE_XW_STATES; j++) {
            uint32_t *w = c->xorwow[xe][l][j];
            uint64_t base = ((uint64_t)l * CORE_XW_STATES + j) * (CORE_XW_WORDS / 2);
            for (uint32_t i = 0; i < CORE_XW_WORDS / 2; i++) {
                uint64_t r = num_rng_u64(seed, base + i);
                w[2 * i] = (uint32_t)r;
                w[2 * i + 1] = (uint32_t)(r >> 32);
            }
            if ((w[0] | w[1] | w[2] | w[3] | w[4]) == 0)
                w[0] = 1;
        }
    c->xw_seeded[xe] = 1;
}

uint32_t (*core_xorwow(struct core *c, unsigned xe))[CORE_XW_STATES][CORE_XW_WORDS]
{
    if (!c->xw_seeded[xe])
        core_xorwow_seed(c, xe, c->rng_seed ^ (xe == 0 ? XW_DVE_TAG : XW_POOL_TAG));
    return c->xorwow[xe];
}

void core_reset(struct core *c, uint64_t seed, bool stochastic)
{
    memset(c->sem, 0, sizeof c->sem);
    memset(c->event, 0, sizeof c->event);
    memset(c->reg, 0, sizeof c->reg);
    c->rng_seed = seed;
    memset(c->xw_seeded, 0, sizeof c->xw_seeded);
    c->stochastic = stochastic;
    for (int e = 0; e < ISA_ENG_COUNT; e++)
        c->sr[e] = (struct num_round){NUM_ROUND_STOCHASTIC, false,
                                      num_rng_u64(seed, 0x5352000000000000ull + (uint64_t)e), 0};
}

bool core_sane(const struct core *c)
{
    if (c->gen < 2 || c->sbuf == NULL || c->psum == NULL || c->scratch == NULL)
        return false;
    if (c->sbuf_part_bytes != core_part_bytes(c->gen))
        return false;
    for (size_t i = 0; i < ISA_NUM_EVENTS; i++)
        if (c->event[i] > 1)
            return false;
    for (int e = 0; e < ISA_ENG_COUNT; e++)
        if (c->sr[e].mode > NUM_ROUND_STOCHASTIC)
            return false;
    return true;
}

float *core_scratch(struct isa_exec_ctx *ctx, unsigned slot)
{
    size_t row = (size_t)ctx->engine * CORE_SCRATCH_SLOTS + slot;
    return ctx->core->scratch + row * CORE_SCRATCH_ELEMS;
}

bool core_cmp(int64_t have, unsigned op, int64_t want)
{
    switch (op) {
    case ISA_CMP_eq: return have == want;
    case ISA_CMP_ne: return have != want;
    case ISA_CMP_ge: return have >= want;
    case ISA_CMP_gt: return have > want;
    case ISA_CMP_le: return have <= want;
    case ISA_CMP_lt: return have < want;
    }
    return false;
}

const struct core_var *core_find_var(const struct core_program *p, uint32_t var_id)
{
    size_t lo = 0, hi = p->nvars;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->vars[mid].var_id == var_id)
            return &p->vars[mid];
        if (p->vars[mid].var_id < var_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

emu_status core_fail(struct isa_exec_ctx *ctx, emu_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return st;
}
