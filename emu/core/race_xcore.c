/*
 * race_xcore.c: the race checker's happens-before edges between the
 * physical cores of one run (race_int.h), mirroring what
 * emu/engines/exec_coll.c makes the cores wait for:
 *
 * - core_barrier: an engine's barrier is its core's n-th arrival (the
 *   count exec_coll.c keeps); when it arrives, its clock is kept as that
 *   arrival's; when it completes, it joins the n-th arrival clock of every
 *   core in the mask (each of them had arrived, or it could not go on).
 * - sendrecv: a post (the first attempt) leaves the poster's clock for
 *   the core it sends to and for the core it receives from, oldest first;
 *   the completion takes the oldest post of each partner (the data it
 *   received came from one, the other had taken this core's data).
 * - cross-rank collectives: the collectives of one execution are one
 *   sequence of operations of its rank, each run to completion on the
 *   rank before the next starts, whichever core issued it: each joins the
 *   clock the one before left.
 *
 * An engine that waits for another core does not move, so its clock when
 * it arrives is the clock its accesses before the instruction carry.
 * Remote semaphores (a DMA descriptor signalling the peer core) are
 * refused by dma_desc.c, so no semaphore carries an edge between cores.
 * A run of one core keeps none of this. The arrival clocks of barriers
 * are kept for the whole run (RACE_MAX_ENG words each).
 */
#include <stdlib.h>
#include <string.h>

#include "emu/core/race_int.h"
#include "emu/grow.h"
#include "emu/isa/isa_args.h"

static bool race_xcore_is_coll(uint8_t op)
{
    return op == ISA_OP_all_reduce || op == ISA_OP_all_gather || op == ISA_OP_reduce_scatter ||
           op == ISA_OP_all_to_all || op == ISA_OP_permute || op == ISA_OP_all_to_all_v ||
           op == ISA_OP_all_gather_v;
}

/* ---- core_barrier ---- */

static void race_bar_arrive(struct race_state *r, uint32_t core, uint32_t me)
{
    struct race_xcore *x = &r->x;
    size_t n = x->nbar[core];
    if (!grow_array((void **)&x->bar[core], n + 1, &x->capbar[core], sizeof *x->bar[core], 16))
        return;  /* no memory: the edge is lost, and the ticket stays 0 */
    memcpy(x->bar[core][n], r->vc[me], sizeof x->bar[core][n]);
    x->nbar[core] = n + 1;
    x->ticket[me] = n + 1;
}

static void race_bar_join(struct race_state *r, uint32_t me, const struct isa_insn *insn)
{
    struct race_xcore *x = &r->x;
    uint64_t mask = (uint64_t)ISA_ARG_INT(insn, core_barrier, cores), t = x->ticket[me];
    for (uint32_t c = 0; c < x->ncores && t > 0; c++)
        if ((mask >> c & 1) && x->nbar[c] >= t)
            race_join(r->vc[me], x->bar[c][t - 1], r->neng);
    x->ticket[me] = 0;
}

/* ---- sendrecv ---- */

static void race_box_push(struct race_box *b, const uint32_t *vc)
{
    if (b->n == RACE_BOX)
        return;  /* a program that completes never has this many in flight */
    memcpy(b->vc[(b->head + b->n) % RACE_BOX], vc, sizeof b->vc[0]);
    b->n++;
}

static void race_box_pop_join(struct race_box *b, uint32_t *into, uint32_t neng)
{
    if (b->n == 0)
        return;
    race_join(into, b->vc[b->head], neng);
    b->head = (b->head + 1) % RACE_BOX;
    b->n--;
}

static void race_sr_post(struct race_state *r, uint32_t core, uint32_t me,
                         const struct isa_insn *insn)
{
    struct race_xcore *x = &r->x;
    uint64_t to = (uint64_t)ISA_ARG_INT(insn, sendrecv, send_to);
    uint64_t from = (uint64_t)ISA_ARG_INT(insn, sendrecv, recv_from);
    if (to < x->ncores)
        race_box_push(&x->box[core][to], r->vc[me]);
    if (from < x->ncores)
        race_box_push(&x->box[core][from], r->vc[me]);
    x->posted[me] = true;
}

static void race_sr_join(struct race_state *r, uint32_t core, uint32_t me,
                         const struct isa_insn *insn)
{
    struct race_xcore *x = &r->x;
    uint64_t to = (uint64_t)ISA_ARG_INT(insn, sendrecv, send_to);
    uint64_t from = (uint64_t)ISA_ARG_INT(insn, sendrecv, recv_from);
    if (from < x->ncores)
        race_box_pop_join(&x->box[from][core], r->vc[me], r->neng);
    if (to < x->ncores)
        race_box_pop_join(&x->box[to][core], r->vc[me], r->neng);
    x->posted[me] = false;
}

/* ---- the entry points ---- */

void race_xcore_arrive(struct race_state *r, uint32_t core, enum isa_engine eng,
                       const struct isa_insn *insn)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    if (r->x.ncores == 1)
        return;  /* one core: nothing to meet */
    if (insn->opcode == ISA_OP_core_barrier && r->x.ticket[me] == 0)
        race_bar_arrive(r, core, me);
    else if (insn->opcode == ISA_OP_sendrecv && !r->x.posted[me])
        race_sr_post(r, core, me, insn);
}

void race_xcore_join(struct race_state *r, uint32_t core, enum isa_engine eng,
                     const struct isa_insn *insn)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    if (r->x.ncores == 1)
        return;
    if (insn->opcode == ISA_OP_core_barrier || insn->opcode == ISA_OP_sendrecv)
        race_xcore_arrive(r, core, eng, insn);  /* completed on its first attempt */
    if (insn->opcode == ISA_OP_core_barrier)
        race_bar_join(r, me, insn);
    else if (insn->opcode == ISA_OP_sendrecv)
        race_sr_join(r, core, me, insn);
    else if (race_xcore_is_coll(insn->opcode))
        race_join(r->vc[me], r->x.coll, r->neng);
}

void race_xcore_done(struct race_state *r, uint32_t core, enum isa_engine eng,
                     const struct isa_insn *insn)
{
    uint32_t me = core * ISA_ENG_COUNT + eng;
    if (r->x.ncores > 1 && race_xcore_is_coll(insn->opcode))
        race_join(r->x.coll, r->vc[me], r->neng);
}

void race_xcore_free(struct race_state *r)
{
    for (uint32_t c = 0; c < RACE_MAX_CORES; c++)
        free(r->x.bar[c]);
}
