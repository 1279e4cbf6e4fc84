/*
 * core_state.c: a core's state as versioned bytes (see core_state.h), and
 * the list of struct core's fields that keeps it complete.
 */
#include "emu/core/core_state.h"

#include <assert.h>
#include <string.h>

#define CORE_STATE_MAGIC "TCS2"

/* Every field of struct core, in order, with what a snapshot does with it:
 * STATE: in core_state_save; MEMORY: saved by the caller as a memory
 * (SBUF, PSUM); FIXED: set at creation from gen; HOST: host-side help that
 * holds no state between instructions (scratch rows, race checker). A
 * field added to struct core and not listed here fails the static_assert
 * below: decide where its value goes in a snapshot, then list it. */
#define CORE_FIELDS(X)                                                       \
    X(gen, FIXED) X(sbuf_part_bytes, FIXED) X(sbuf, MEMORY) X(psum, MEMORY)  \
    X(sem, STATE) X(event, STATE) X(reg, STATE) X(rng_seed, STATE)           \
    X(xorwow, STATE) X(acc, STATE) X(stochastic, STATE) X(xw_seeded, STATE)                 \
    X(spare_, FIXED) X(sr, STATE) X(scratch, HOST) X(race, HOST)

#define CORE_FIELD_BYTES(f, kind) +sizeof(((struct core *)0)->f)
static_assert(0 CORE_FIELDS(CORE_FIELD_BYTES) == sizeof(struct core),
              "struct core has a field CORE_FIELDS does not list (or padding): "
              "decide how snapshots carry it (core_state.c)");
/* The rounding stream as saved: mode, saturate, seed, index and nothing else. */
static_assert(offsetof(struct num_round, seed) == 8 &&
                  offsetof(struct num_round, index) == 16 && sizeof(struct num_round) == 24,
              "struct num_round changed: update core_state_save/load");

/* A cursor over the blob: put copies in, get copies out. */
struct cs_cur {
    uint8_t *w;        /* write position (writer) */
    const uint8_t *r;  /* read position (reader) */
};

static void cs_put(struct cs_cur *c, const void *p, size_t n)
{
    memcpy(c->w, p, n);
    c->w += n;
}

static void cs_get(struct cs_cur *c, void *p, size_t n)
{
    memcpy(p, c->r, n);
    c->r += n;
}

/* The counts header of this build. */
static void cs_counts(uint32_t n[5])
{
    n[0] = ISA_NUM_SEMS;
    n[1] = ISA_NUM_EVENTS;
    n[2] = ISA_ENG_COUNT;
    n[3] = ISA_NUM_REGS;
    n[4] = ISA_NUM_PARTITIONS;
}

/* Bytes of one rounding stream. */
#define CORE_STATE_SR_BYTES (4 + 1 + 8 + 8)

size_t core_state_size(void)
{
    const struct core *c = NULL;
    return 4 + 5 * 4 + sizeof c->sem + sizeof c->event + sizeof c->reg + 8 +
           sizeof c->xorwow + sizeof c->acc + 1 + sizeof c->xw_seeded + ISA_ENG_COUNT * CORE_STATE_SR_BYTES;
}

void core_state_save(const struct core *c, uint8_t *out)
{
    struct cs_cur k = {out, NULL};
    uint32_t n[5];
    cs_counts(n);
    cs_put(&k, CORE_STATE_MAGIC, 4);
    cs_put(&k, n, sizeof n);
    cs_put(&k, c->sem, sizeof c->sem);
    cs_put(&k, c->event, sizeof c->event);
    cs_put(&k, c->reg, sizeof c->reg);
    cs_put(&k, &c->rng_seed, 8);
    cs_put(&k, c->xorwow, sizeof c->xorwow);
    cs_put(&k, c->acc, sizeof c->acc);
    uint8_t sto = c->stochastic;
    cs_put(&k, &sto, 1);
    cs_put(&k, c->xw_seeded, sizeof c->xw_seeded);
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        uint8_t sat = c->sr[e].saturate;
        cs_put(&k, &c->sr[e].mode, 4);
        cs_put(&k, &sat, 1);
        cs_put(&k, &c->sr[e].seed, 8);
        cs_put(&k, &c->sr[e].index, 8);
    }
}

emu_status core_state_load(struct core *dst, const uint8_t *p, size_t len)
{
    struct core copy = *dst, *c = &copy;  /* dst changes only when all is well */
    uint32_t want[5], have[5];
    cs_counts(want);
    if (len != core_state_size() || memcmp(p, CORE_STATE_MAGIC, 4) != 0)
        return EMU_INVALID;
    struct cs_cur k = {NULL, p + 4};
    cs_get(&k, have, sizeof have);
    if (memcmp(have, want, sizeof have) != 0)
        return EMU_INVALID;
    cs_get(&k, c->sem, sizeof c->sem);
    cs_get(&k, c->event, sizeof c->event);
    cs_get(&k, c->reg, sizeof c->reg);
    cs_get(&k, &c->rng_seed, 8);
    cs_get(&k, c->xorwow, sizeof c->xorwow);
    cs_get(&k, c->acc, sizeof c->acc);
    uint8_t sto;
    cs_get(&k, &sto, 1);
    c->stochastic = sto != 0;
    cs_get(&k, c->xw_seeded, sizeof c->xw_seeded);
    for (int e = 0; e < CORE_XW_ENGINES; e++)
        if (c->xw_seeded[e] > 1)
            return EMU_INVALID;
    for (int e = 0; e < ISA_ENG_COUNT; e++) {
        uint8_t sat;
        cs_get(&k, &c->sr[e].mode, 4);
        cs_get(&k, &sat, 1);
        cs_get(&k, &c->sr[e].seed, 8);
        cs_get(&k, &c->sr[e].index, 8);
        c->sr[e].saturate = sat != 0;
        if (c->sr[e].mode > NUM_ROUND_STOCHASTIC)
            return EMU_INVALID;
    }
    *dst = copy;
    return EMU_OK;
}
