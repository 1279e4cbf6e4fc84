/*
 * rt_life.c: nrt_init and nrt_close behind the ABI (see rt_life.h): reads
 * the environment, builds the machine, starts the environment-driven
 * observers, and on close tears every module down in order.
 */
#include "devices/runtime/rt_life.h"

#include <pthread.h>

#include "devices/config/env.h"
#include "devices/config/log_env.h"
#include "devices/coll/coll.h"
#include "devices/machine/hbm_export.h"
#include "devices/observe/debugstream.h"
#include "devices/observe/devprof.h"
#include "devices/observe/inspect.h"
#include "devices/observe/systrace.h"
#include "devices/runtime/async.h"
#include "devices/runtime/coll_host.h"
#include "devices/runtime/exec.h"
#include "devices/runtime/model.h"
#include "devices/runtime/runtime.h"
#include "devices/runtime/tensor.h"
#include "emu/core/par.h"
#include "emu/log.h"

static pthread_mutex_t rt_life = PTHREAD_MUTEX_INITIALIZER; /* serialises init/close */

/* The machine the environment asks for, built. */
static NRT_STATUS rt_life_build(struct machine_config *cfg, struct machine **m)
{
    log_env_load();
    NRT_STATUS st = env_load();
    if (st == NRT_SUCCESS)
        async_configure();
    if (st == NRT_SUCCESS)
        st = config_from_env(cfg);
    if (st == NRT_SUCCESS)
        st = machine_create(cfg, m);
    return st;
}

NRT_STATUS rt_init(uint32_t framework)
{
    pthread_mutex_lock(&rt_life);
    if (rt_phase() == RT_OPEN) {
        pthread_mutex_unlock(&rt_life);
        LOG_WARN("NRT", "runtime already initialized; keeping the running instance");
        return NRT_SUCCESS;
    }
    struct machine_config cfg;
    struct machine *m = NULL;
    NRT_STATUS st = rt_life_build(&cfg, &m);
    if (st == NRT_SUCCESS) {
        devprof_env_start();
        inspect_env_start();
        rt_door_opened(m);
        LOG_INFO("NRT", "initialized: %s, %u chips, LNC=%u, %u of %u VNCs visible, "
                 "instance %s (framework %u)", cfg.profile->name, cfg.profile->chips, cfg.lnc,
                 cfg.visible_count, cfg.total_vncs, machine_instance_dir(m), framework);
    }
    pthread_mutex_unlock(&rt_life);
    return st;
}

/* Every module's objects and threads, in order, once no call is inside. */
static void rt_life_teardown(void)
{
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
}

void rt_close(void)
{
    if (exec_in_status_callback()) {  /* close would wait for this very callback */
        LOG_ERROR("NRT", "nrt_close called from the execution status callback: refused "
                  "(call it once the callback has returned)");
        return;
    }
    pthread_mutex_lock(&rt_life);
    if (rt_phase() != RT_OPEN) {
        pthread_mutex_unlock(&rt_life);
        return;
    }
    rt_door_shut();
    async_shutdown();          /* cancels queued requests, waits for running ones */
    rt_door_closed();
    rt_life_teardown();
    struct machine *m = rt_door_release_machine();
    if (m != NULL)
        hbm_export_drop_all(m);   /* dma-bufs left: their bytes back in the chips' files */
    machine_destroy(m);
    par_shutdown();            /* no execution left to split: helper threads end */
    rt_door_unlock();
    pthread_mutex_unlock(&rt_life);
    LOG_INFO("NRT", "closed");
}
