/*
 * act_acc.c: the engine accumulator registers of act_acc.h.
 *
 * struct core has no room for them yet, so they live in a side table keyed
 * by the core's address: ACC_SLOTS cores at once (more than the largest
 * instance has), the least recently used slot reused when the table is
 * full. The table lock is held only for the look-up; a core's registers
 * are then touched only by the thread running that core.
 */
#include "emu/act_acc.h"

#include <pthread.h>
#include <string.h>

#define ACC_SLOTS 256

/* One core's registers. */
struct acc_slot {
    const struct core *core;                           /* owner, NULL when free */
    uint64_t last_use;                                 /* acc_clock at the last look-up */
    float regs[ISA_ENG_COUNT][ISA_NUM_PARTITIONS];     /* per engine, per partition */
};

static struct acc_slot acc_tab[ACC_SLOTS];
static uint64_t acc_clock;                             /* look-ups so far */
static pthread_mutex_t acc_lock = PTHREAD_MUTEX_INITIALIZER;

/* The slot of core c, claimed (zeroed) when it has none. Lock held. */
static struct acc_slot *acc_slot_of(const struct core *c)
{
    struct acc_slot *victim = &acc_tab[0];
    for (size_t i = 0; i < ACC_SLOTS; i++) {
        struct acc_slot *s = &acc_tab[i];
        if (s->core == c)
            return s;
        if (victim->core != NULL && (s->core == NULL || s->last_use < victim->last_use))
            victim = s;
    }
    memset(victim, 0, sizeof *victim);
    victim->core = c;
    return victim;
}

float *act_acc_regs(struct isa_exec_ctx *ctx)
{
    pthread_mutex_lock(&acc_lock);
    struct acc_slot *s = acc_slot_of(ctx->core);
    s->last_use = ++acc_clock;
    pthread_mutex_unlock(&acc_lock);
    return s->regs[ctx->engine];
}
