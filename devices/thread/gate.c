/*
 * gate.c: the compute gate (see gate.h).
 */
#include "devices/thread/gate.h"

void gate_init(struct gate *g, uint32_t limit)
{
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->change, NULL);
    g->limit = limit > 0 ? limit : 1;
    g->inside = 0;
    g->next_ticket = 0;
    g->serving = 0;
}

void gate_fini(struct gate *g)
{
    pthread_cond_destroy(&g->change);
    pthread_mutex_destroy(&g->lock);
}

void gate_enter(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    uint64_t ticket = g->next_ticket++;
    while (ticket != g->serving || g->inside >= g->limit)
        pthread_cond_wait(&g->change, &g->lock);
    g->serving++;
    g->inside++;
    /* The next ticket may fit too: tell it. */
    pthread_cond_broadcast(&g->change);
    pthread_mutex_unlock(&g->lock);
}

void gate_leave(struct gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->inside--;
    pthread_cond_broadcast(&g->change);
    pthread_mutex_unlock(&g->lock);
}
