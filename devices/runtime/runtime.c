/*
 * runtime.c: the call door every ABI call passes (rt_door; not the compute
 * gate of devices/thread/gate.h), and the machine behind it
 * (see runtime.h; the life cycle that opens and shuts it is rt_life.c).
 */
#include "devices/runtime/runtime.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>

#include "emu/log.h"

static pthread_rwlock_t rt_door;                 /* calls read-lock, close write-locks */
static pthread_once_t rt_door_once = PTHREAD_ONCE_INIT;
static _Atomic int rt_cur_phase = RT_UNINITIALIZED; /* enum rt_phase */
static struct machine *rt_mach;                  /* valid while RT_OPEN */
static atomic_bool rt_close_pending;             /* a close waits for the door */
static _Thread_local unsigned rt_depth;          /* this thread's rt_enter()s not yet left */
static _Thread_local bool rt_closer;             /* this thread holds the door shut */

static void rt_door_init(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* Writer preference: a close is not starved by a stream of calls. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&rt_door, &attr);
    pthread_rwlockattr_destroy(&attr);
}

static NRT_STATUS rt_phase_status(int s)
{
    return s == RT_UNINITIALIZED ? NRT_UNINITIALIZED : NRT_CLOSED;
}

NRT_STATUS rt_enter(void)
{
    pthread_once(&rt_door_once, rt_door_init);
    int s = atomic_load(&rt_cur_phase);
    if (s != RT_OPEN)
        return rt_phase_status(s);
    pthread_rwlock_rdlock(&rt_door);
    s = atomic_load(&rt_cur_phase);
    if (s != RT_OPEN) {
        pthread_rwlock_unlock(&rt_door);
        return rt_phase_status(s);
    }
    rt_depth++;
    return NRT_SUCCESS;
}

void rt_leave(void)
{
    assert(rt_depth > 0);
    rt_depth--;
    pthread_rwlock_unlock(&rt_door);
}

bool rt_held(void)
{
    return rt_depth > 0 || rt_closer;
}

bool rt_closing(void)
{
    return atomic_load(&rt_close_pending);
}

enum rt_phase rt_phase(void)
{
    return (enum rt_phase)atomic_load(&rt_cur_phase);
}

NRT_STATUS rt_config(struct machine_config *cfg)
{
    if (rt_enter() == NRT_SUCCESS) {
        *cfg = rt_mach->cfg;
        rt_leave();
        return NRT_SUCCESS;
    }
    return config_from_env(cfg);
}

struct machine *rt_machine(void)
{
    return rt_mach;
}

void rt_door_opened(struct machine *m)
{
    rt_mach = m;
    atomic_store(&rt_cur_phase, RT_OPEN);
}

void rt_door_shut(void)
{
    pthread_once(&rt_door_once, rt_door_init);
    atomic_store(&rt_close_pending, true);
    pthread_rwlock_wrlock(&rt_door);   /* waits for calls in flight */
    rt_closer = true;
}

void rt_door_closed(void)
{
    atomic_store(&rt_close_pending, false);
    atomic_store(&rt_cur_phase, RT_CLOSED);
}

struct machine *rt_door_release_machine(void)
{
    struct machine *m = rt_mach;
    rt_mach = NULL;
    return m;
}

void rt_door_unlock(void)
{
    rt_closer = false;
    pthread_rwlock_unlock(&rt_door);
}
