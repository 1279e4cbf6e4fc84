/*
 * gate.h: the compute gate, a counting gate that bounds how many
 * executions compute at the same time in this process (TRNEMU_THREADS,
 * default the host's online CPUs).
 *
 * Every VNC has its own worker thread (worker.h), so an execution that
 * waits for other ranks (an in-NEFF collective between VNCs of this
 * process) never keeps another VNC's execution from starting. The gate
 * only decides how many of those threads compute at once: a thread enters
 * before it runs instructions and leaves when the execution ends, and
 * also for as long as it waits for another thread (gate_leave before a
 * collective, gate_enter after it). A thread inside the gate therefore
 * never waits for another thread, so the threads outside it always get
 * in: the gate cannot deadlock. Threads get in in the order they asked
 * (a ticket queue), so none starves. The gate decides when an execution
 * runs, never what it computes: the bits do not depend on the limit.
 *
 * Lock order: enter the gate inside machine_mem_enter (the quiesce lock),
 * never the other way round.
 */
#ifndef TRNEMU_DEVICES_GATE_H
#define TRNEMU_DEVICES_GATE_H

#include <pthread.h>
#include <stdint.h>

struct gate {
    pthread_mutex_t lock;   /* guards every field below */
    pthread_cond_t change;  /* a thread left, or the next ticket may go */
    uint32_t limit;         /* threads allowed inside at once (>= 1) */
    uint32_t inside;        /* threads inside now */
    uint64_t next_ticket;   /* ticket the next arriving thread takes */
    uint64_t serving;       /* lowest ticket not yet let in */
};

/* A gate for at most limit threads at once (0 is taken as 1). */
void gate_init(struct gate *g, uint32_t limit);
void gate_fini(struct gate *g);

/* Wait for a place, in arrival order, and take it. */
void gate_enter(struct gate *g);
/* Give the place back. */
void gate_leave(struct gate *g);

#endif
