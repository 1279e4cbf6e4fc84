/*
 * snap_core.c: a NeuronCore's registers as a snapshot blob (see
 * snap_core.h).
 */
#include "store/snap_core.h"

#include <string.h>

#define SNAP_CORE_MAGIC "TCS1"

/* A cursor over the blob: put copies in, get copies out. */
struct snap_cur {
    uint8_t *w;        /* write position (writer) */
    const uint8_t *r;  /* read position (reader) */
};

static void snap_put(struct snap_cur *c, const void *p, size_t n)
{
    memcpy(c->w, p, n);
    c->w += n;
}

static void snap_get(struct snap_cur *c, void *p, size_t n)
{
    memcpy(p, c->r, n);
    c->r += n;
}

/* The counts header of this build. */
static void snap_core_counts(uint32_t n[5])
{
    n[0] = ISA_NUM_SEMS;
    n[1] = ISA_NUM_EVENTS;
    n[2] = ISA_ENG_COUNT;
    n[3] = ISA_NUM_REGS;
    n[4] = ISA_NUM_PARTITIONS;
}

/* Bytes of one rounding stream. */
#define SNAP_SR_BYTES (4 + 1 + 8 + 8)

size_t snap_core_blob_size(void)
{
    const struct core *c = NULL;
    return 4 + 5 * 4 + sizeof c->sem + sizeof c->event + sizeof c->reg + 8 +
           sizeof c->rng_counter + sizeof c->acc + 1 + ISA_ENG_COUNT * SNAP_SR_BYTES;
}

void snap_core_blob_write(const struct core *c, uint8_t *out)
{
    struct snap_cur k = {out, NULL};
    uint32_t n[5];
    snap_core_counts(n);
    snap_put(&k, SNAP_CORE_MAGIC, 4);
    snap_put(&k, n, sizeof n);
    snap_put(&k, c->sem, sizeof c->sem);
    snap_put(&k, c->event, sizeof c->event);
    snap_put(&k, c->reg, sizeof c->reg);
    snap_put(&k, &c->rng_seed, 8);
    snap_put(&k, c->rng_counter, sizeof c->rng_counter);
    snap_put(&k, c->acc, sizeof c->acc);
    uint8_t sto = c->stochastic;
    snap_put(&k, &sto, 1);
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        uint8_t sat = c->sr[e].saturate;
        snap_put(&k, &c->sr[e].mode, 4);
        snap_put(&k, &sat, 1);
        snap_put(&k, &c->sr[e].seed, 8);
        snap_put(&k, &c->sr[e].index, 8);
    }
}

NRT_STATUS snap_core_blob_read(struct core *dst, const uint8_t *p, size_t len)
{
    struct core copy = *dst, *c = &copy;  /* dst changes only when all is well */
    uint32_t want[5], have[5];
    snap_core_counts(want);
    if (len != snap_core_blob_size() || memcmp(p, SNAP_CORE_MAGIC, 4) != 0)
        return NRT_INVALID;
    struct snap_cur k = {NULL, p + 4};
    snap_get(&k, have, sizeof have);
    if (memcmp(have, want, sizeof have) != 0)
        return NRT_INVALID;
    snap_get(&k, c->sem, sizeof c->sem);
    snap_get(&k, c->event, sizeof c->event);
    snap_get(&k, c->reg, sizeof c->reg);
    snap_get(&k, &c->rng_seed, 8);
    snap_get(&k, c->rng_counter, sizeof c->rng_counter);
    snap_get(&k, c->acc, sizeof c->acc);
    uint8_t sto;
    snap_get(&k, &sto, 1);
    c->stochastic = sto != 0;
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        uint8_t sat;
        snap_get(&k, &c->sr[e].mode, 4);
        snap_get(&k, &sat, 1);
        snap_get(&k, &c->sr[e].seed, 8);
        snap_get(&k, &c->sr[e].index, 8);
        c->sr[e].saturate = sat != 0;
        if (c->sr[e].mode > NUM_ROUND_STOCHASTIC)
            return NRT_INVALID;
    }
    *dst = copy;
    return NRT_SUCCESS;
}
