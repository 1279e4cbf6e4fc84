/*
 * runtime.c: runtime life cycle and the call gate (see runtime.h).
 */
#include "devices/runtime/runtime.h"

#include <pthread.h>
#include <stdatomic.h>

#include "devices/runtime/async.h"
#include "devices/coll/coll.h"
#include "devices/observe/debugstream.h"
#include "devices/observe/devprof.h"
#include "devices/config/env.h"
#include "devices/observe/inspect.h"
#include "devices/config/log_env.h"
#include "devices/observe/systrace.h"
#include "devices/runtime/model.h"
#include "devices/runtime/tensor.h"
#include "emu/core/par.h"
#include "emu/log.h"

static pthread_mutex_t rt_life = PTHREAD_MUTEX_INITIALIZER; /* serialises init/close */
static pthread_rwlock_t rt_gate;                 /* calls read-lock, close write-locks */
static pthread_once_t rt_gate_once = PTHREAD_ONCE_INIT;
static _Atomic int rt_cur_state = RT_UNINITIALIZED;
static struct machine *rt_mach;                  /* valid while RT_OPEN */
static atomic_bool rt_close_pending;             /* a close waits for the gate */

static void rt_gate_init(void)
{
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    /* Writer preference: a close is not starved by a stream of calls. */
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&rt_gate, &attr);
    pthread_rwlockattr_destroy(&attr);
}

static NRT_STATUS rt_state_status(int s)
{
    return s == RT_UNINITIALIZED ? NRT_UNINITIALIZED : NRT_CLOSED;
}

NRT_STATUS rt_enter(void)
{
    pthread_once(&rt_gate_once, rt_gate_init);
    int s = atomic_load(&rt_cur_state);
    if (s != RT_OPEN)
        return rt_state_status(s);
    pthread_rwlock_rdlock(&rt_gate);
    s = atomic_load(&rt_cur_state);
    if (s != RT_OPEN) {
        pthread_rwlock_unlock(&rt_gate);
        return rt_state_status(s);
    }
    return NRT_SUCCESS;
}

void rt_leave(void)
{
    pthread_rwlock_unlock(&rt_gate);
}

bool rt_closing(void)
{
    return atomic_load(&rt_close_pending);
}

enum rt_state rt_state(void)
{
    return (enum rt_state)atomic_load(&rt_cur_state);
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

NRT_STATUS rt_init(uint32_t framework)
{
    pthread_once(&rt_gate_once, rt_gate_init);
    pthread_mutex_lock(&rt_life);
    if (atomic_load(&rt_cur_state) == RT_OPEN) {
        pthread_mutex_unlock(&rt_life);
        LOG_WARN("NRT", "runtime already initialized; keeping the running instance");
        return NRT_SUCCESS;
    }
    log_env_load();
    async_configure();
    struct machine_config cfg;
    NRT_STATUS st = env_load();
    if (st == NRT_SUCCESS)
        st = config_from_env(&cfg);
    struct machine *m = NULL;
    if (st == NRT_SUCCESS)
        st = machine_create(&cfg, &m);
    if (st == NRT_SUCCESS) {
        rt_mach = m;
        devprof_env_start();
        inspect_env_start();
        atomic_store(&rt_cur_state, RT_OPEN);
        LOG_INFO("NRT", "initialized: %s, %u chips, LNC=%u, %u of %u VNCs visible, "
                 "instance %s (framework %u)", cfg.profile->name, cfg.profile->chips, cfg.lnc,
                 cfg.visible_count, cfg.total_vncs, machine_instance_dir(m), framework);
    }
    pthread_mutex_unlock(&rt_life);
    return st;
}

void rt_close(void)
{
    pthread_once(&rt_gate_once, rt_gate_init);
    pthread_mutex_lock(&rt_life);
    if (atomic_load(&rt_cur_state) != RT_OPEN) {
        pthread_mutex_unlock(&rt_life);
        return;
    }
    atomic_store(&rt_close_pending, true);
    pthread_rwlock_wrlock(&rt_gate);   /* waits for calls in flight */
    async_shutdown();                  /* cancels queued requests, waits for running ones */
    atomic_store(&rt_close_pending, false);
    atomic_store(&rt_cur_state, RT_CLOSED);
    if (inspect_running())
        (void)inspect_stop();  /* NEURON_RT_INSPECT_*: the files of the session */
    systrace_stop();
    dstream_close_all();
    devprof_env_finish();      /* TRNEMU_PROFILE: the trace and its summary */
    devprof_reset();
    coll_cc_free_all();        /* prepared collectives never scheduled */
    model_destroy_all();
    tensor_destroy_all();
    coll_comm_release_all();   /* no execution is under way any more */
    coll_v_release_all();
    machine_destroy(rt_mach);
    rt_mach = NULL;
    par_shutdown();            /* no execution left to split: helper threads end */
    pthread_rwlock_unlock(&rt_gate);
    pthread_mutex_unlock(&rt_life);
    LOG_INFO("NRT", "closed");
}
