/*
 * worker.h: one worker thread per chip. The executions of a chip's VNCs
 * run on it, one at a time and in the order they were submitted; chips
 * run in parallel. The thread starts with the chip's first execution and
 * ends when the machine is torn down.
 */
#ifndef TRNEMU_DEVICES_WORKER_H
#define TRNEMU_DEVICES_WORKER_H

#include <pthread.h>
#include <stdbool.h>

#include "nrt/nrt_status.h"

struct worker_job;

struct chip_worker {
    pthread_mutex_t lock;      /* guards every field below */
    pthread_cond_t wake;       /* a job was queued, or stop was asked */
    pthread_cond_t done;       /* a job finished */
    pthread_t thread;          /* the worker, when started */
    bool started;              /* thread is running */
    bool stop;                 /* the worker should end */
    struct worker_job *head;   /* queued jobs, oldest first */
    struct worker_job *tail;   /* last queued job */
};

void worker_init(struct chip_worker *w);
/* Ask the worker to end once its queue is empty, and wait for it. */
void worker_fini(struct chip_worker *w);

/* Run fn(arg) on the worker and wait for its status. When the thread
 * cannot be started, fn runs on the calling thread (logged once). */
NRT_STATUS worker_run(struct chip_worker *w, NRT_STATUS (*fn)(void *arg), void *arg);

#endif
