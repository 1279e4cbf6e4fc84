/*
 * inspect.c: inspect sessions (see inspect.h).
 */
#include "devices/observe/inspect.h"

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devices/config/env.h"
#include "devices/machine/instance.h"
#include "devices/observe/devprof.h"
#include "emu/log.h"

static const char *const inspect_names[INSPECT_ACTIVITY_COUNT] = {"system_profile",
                                                                  "device_profile"};
static pthread_mutex_t inspect_lock = PTHREAD_MUTEX_INITIALIZER; /* begin and stop */
static atomic_bool inspect_on;           /* a session runs */
static nrt_inspect_config_t inspect_cfg; /* its options (written under the runtime gate) */
static char inspect_dir[4400];           /* its capture directory (inspect_session_dir) */

static _Thread_local bool inspect_owner; /* this thread holds inspect_lock */

/* inspect_lock, taken and dropped with its holder noted for inspect_held. */
static void inspect_lock_take(void)
{
    pthread_mutex_lock(&inspect_lock);
    inspect_owner = true;
}

static void inspect_lock_drop(void)
{
    assert(inspect_owner);
    inspect_owner = false;
    pthread_mutex_unlock(&inspect_lock);
}

/* Does this thread hold inspect_lock? For assert() only. */
static inline bool inspect_held(void)
{
    return inspect_owner;
}

const char *inspect_activity_name(enum inspect_activity a)
{
    return (unsigned)a < INSPECT_ACTIVITY_COUNT ? inspect_names[a] : "?";
}

int inspect_activity_of(const char *name)
{
    for (int i = 0; name != NULL && i < INSPECT_ACTIVITY_COUNT; i++)
        if (strcmp(inspect_names[i], name) == 0)
            return i;
    return -1;
}

static bool inspect_env_flag(const char *name, bool dflt)
{
    int v = env_bool(getenv(name), dflt);   /* checked by env_load at nrt_init */
    return v < 0 ? dflt : v == 1;
}

void inspect_config_builtin(nrt_inspect_config_t *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->output_dir, sizeof c->output_dir, "./output");
    c->enable_inspect = true;
    c->activity[INSPECT_SYSTEM_PROFILE] = true;
    systrace_config_defaults(&c->trace);
}

void inspect_config_defaults(nrt_inspect_config_t *c)
{
    memset(c, 0, sizeof *c);
    const char *dir = getenv("NEURON_RT_INSPECT_OUTPUT_DIR");
    snprintf(c->output_dir, sizeof c->output_dir, "%s", dir != NULL && *dir ? dir : "./output");
    c->enable_inspect = true;
    c->enable_on_fail = inspect_env_flag("NEURON_RT_INSPECT_ON_FAIL", false);
    c->activity[INSPECT_SYSTEM_PROFILE] = inspect_env_flag("NEURON_RT_INSPECT_SYSTEM_PROFILE", true);
    c->activity[INSPECT_DEVICE_PROFILE] = inspect_env_flag("NEURON_RT_INSPECT_DEVICE_PROFILE", false);
    systrace_config_defaults(&c->trace);
    const char *max = getenv("NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC");
    if (max != NULL && strtoull(max, NULL, 10) > 0)
        c->trace.max_events_per_nc = strtoull(max, NULL, 10);
    const char *nc = getenv("NEURON_RT_INSPECT_EVENT_FILTER_NC");
    if (nc != NULL && *nc != '\0') {  /* a comma-separated list of cores */
        memset(c->trace.nc_on, 0, sizeof c->trace.nc_on);
        for (char *p = (char *)nc, *end; *p != '\0'; p = *end ? end + 1 : end) {
            unsigned long v = strtoul(p, &end, 10);
            if (end == p)
                break;
            if (v < SYSTRACE_MAX_NC)
                c->trace.nc_on[v] = 1;
        }
    }
}

bool inspect_running(void)
{
    return atomic_load(&inspect_on);
}

/* mkdir that accepts an existing directory; false (logged) otherwise. */
static bool inspect_mkdir(const char *dir)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST)
        return true;
    LOG_ERROR("NRT", "cannot create the inspect output directory '%s': %s", dir,
              strerror(errno));
    return false;
}

/* The vendor's layout, so that processes sharing an output directory
 * never overwrite each other: <out>/<instance id>_pid_<pid>/<timestamp>/,
 * one directory per process and under it one per capture. */
static bool inspect_session_dir(const char *out, char *buf, size_t cap)
{
    char id[32], stamp[64];
    struct timespec ts;
    struct tm tm;
    instance_ec2_id(id, sizeof id);
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(stamp, sizeof stamp, "%Y%m%d_%H%M%S", &tm);
    snprintf(stamp + n, sizeof stamp - n, "_%06ld", ts.tv_nsec / 1000);
    snprintf(buf, cap, "%s/%s_pid_%d", out, id, (int)getpid());
    if (!inspect_mkdir(out) || !inspect_mkdir(buf))
        return false;
    size_t len = strlen(buf);
    snprintf(buf + len, cap - len, "/%s", stamp);
    return inspect_mkdir(buf);
}

/* Start a session: its directory, then the system trace and device
 * profiles it asks for. inspect_lock held. */
static NRT_STATUS inspect_start(const nrt_inspect_config_t *c)
{
    assert(inspect_held());
    if (!inspect_session_dir(c->output_dir, inspect_dir, sizeof inspect_dir))
        return NRT_INVALID;
    inspect_cfg = *c;
    NRT_STATUS st = NRT_SUCCESS;
    if (c->enable_inspect && c->activity[INSPECT_SYSTEM_PROFILE])
        st = systrace_start(&c->trace);
    if (st == NRT_SUCCESS && (c->enable_on_fail ||
                              (c->enable_inspect && c->activity[INSPECT_DEVICE_PROFILE])))
        devprof_inspect_start(inspect_dir,
                              c->enable_inspect && c->activity[INSPECT_DEVICE_PROFILE],
                              c->enable_on_fail);
    if (st == NRT_SUCCESS)
        atomic_store(&inspect_on, true);
    return st;
}

NRT_STATUS inspect_begin(const nrt_inspect_config_t *c)
{
    inspect_lock_take();
    NRT_STATUS st = NRT_INVALID;
    if (atomic_load(&inspect_on))
        LOG_ERROR("NRT", "an inspect session is running already (writing to '%s'): "
                  "nrt_inspect_stop ends it", inspect_cfg.output_dir);
    else
        st = inspect_start(c);
    inspect_lock_drop();
    return st;
}

/* Write the system trace into the output directory. */
static NRT_STATUS inspect_write_trace(void)
{
    char path[4500];
    snprintf(path, sizeof path, "%s/system-trace-%d.json", inspect_dir, inspect_cfg.session_id);
    return systrace_write_file(path);
}

NRT_STATUS inspect_stop(void)
{
    inspect_lock_take();
    if (!atomic_exchange(&inspect_on, false)) {
        inspect_lock_drop();
        LOG_ERROR("NRT", "inspect is not running (nrt_inspect_begin)");
        return NRT_INVALID;
    }
    NRT_STATUS st = NRT_SUCCESS;
    if (inspect_cfg.enable_inspect && inspect_cfg.activity[INSPECT_SYSTEM_PROFILE] &&
        systrace_running()) {
        st = inspect_write_trace();
        systrace_stop();
    }
    NRT_STATUS st2 = devprof_inspect_stop();
    inspect_lock_drop();
    return st != NRT_SUCCESS ? st : st2;
}

void inspect_env_start(void)
{
    if (!inspect_env_flag("NEURON_RT_INSPECT_ENABLE", false) &&
        !inspect_env_flag("NEURON_RT_INSPECT_ON_FAIL", false))
        return;
    nrt_inspect_config_t c;
    inspect_config_defaults(&c);
    c.enable_inspect = inspect_env_flag("NEURON_RT_INSPECT_ENABLE", false);
    if (inspect_begin(&c) != NRT_SUCCESS)
        LOG_WARN("NRT", "NEURON_RT_INSPECT_*: inspect could not start");
}
