/*
 * env.c: the table of the runtime's environment variables and their
 * reading at nrt_init (see env.h and docs/env.md).
 */
#include "devices/config/env.h"

#include <errno.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devices/config/log_env.h"
#include "emu/log.h"

/* Every variable the vendor configuration guide lists, then the NEURON_*
 * and TRNEMU_* ones the runtime also reads. */
static const struct env_var env_vars[] = {
    {"NEURON_RT_VISIBLE_CORES", true, false,
     "VNCs this process claims, e.g. 0-3,8 (wins over NEURON_RT_NUM_CORES)"},
    {"NEURON_RT_NUM_CORES", true, false, "how many free VNCs this process claims (0: all)"},
    {"NEURON_RT_VIRTUAL_CORE_SIZE", true, false,
     "logical NeuronCore size (physical cores per VNC); same as NEURON_LOGICAL_NC_CONFIG, "
     "which must agree when both are set"},
    {"NEURON_LOGICAL_NC_CONFIG", true, false, "logical NeuronCore size (see above)"},
    {"NEURON_RT_LOG_LOCATION", true, false,
     "where log lines go: console (stderr, the default), syslog, or a file path (appended)"},
    {"NEURON_RT_LOG_LEVEL", true, true,
     "ERROR (default), WARN/WARNING, INFO, DEBUG, TRACE, QUIET"},
    {"NEURON_RT_LOG_LEVEL_<component>", true, true,
     "level for one component: NRT, TDRV, NMGR, KMGR and trnemu's NEFF, EMU"},
    {"NEURON_RT_LOG_LOCATION_<component>", false, false,
     "ignored: trnemu writes one stream for every component, to NEURON_RT_LOG_LOCATION"},
    {"NEURON_RT_EXEC_TIMEOUT", true, true, "seconds an execution may run (default 600)"},
    {"NEURON_RT_VALIDATE_HASH", true, true,
     "check the NEFF header's hash at load (read at each nrt_load)"},
    {"NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS", false, false,
     "ignored: each load already shares its constants with the parsed NEFF (no copy), "
     "and a model's device copy is per VNC as the vendor's default"},
    {"NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", false, false,
     "ignored (kept in env_get() for the async queue): the implicit async mode it "
     "enabled is gone from the runtime; nrt_execute blocks and the nrta_* API queues "
     "(devices/runtime/async.c says so with a warning)"},
    {"NEURON_RT_ALLOW_LEGACY_NEFF", false, false,
     "ignored: trnemu's ISA is the same on every emulated instance type, and vendor "
     "streams are never executed, so no NEFF is too old for the machine"},
    {"NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", true, false,
     "none, critical (NaN), debug (NaN; overflow/underflow are not modelled), verbose "
     "(NaN and Inf); another value fails nrt_init; unset: NaN and Inf (trnemu's default)"},
    {"NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", true, false,
     "on a failed execution, write its inputs as .npy into "
     "nrt_inputs_<pid>_<model>_<n>/ in the working directory"},
    {"NEURON_RT_STOCHASTIC_ROUNDING_EN", true, true, "stochastic rounding of bf16/fp8 results"},
    {"NEURON_RT_STOCHASTIC_ROUNDING_SEED", true, true, "its seed"},
    {"NEURON_RT_ROOT_COMM_ID", true, false, "host:port naming a collectives job"},
    {"NEURON_PROCESS_TAG", true, false,
     "a label for this process, shown by trnemu ls / neuron-ls and the monitor"},
    {"TRNEMU_FOREIGN_NEFF", true, true,
     "zeros: run vendor-compiled NEFFs as zero-filling stand-ins (warned once per model)"},
    {"TRNEMU_RACECHECK", true, true, "1: report unordered SBUF/PSUM accesses"},
    {"TRNEMU_ASYNC_SPIN_US", true, false,
     "busy-poll window of the nrta_* queues' threads and of nrta_get_completion_handle, "
     "us (0-10000; default 30); read by async.c"},
    {"TRNEMU_THREADS", true, false,
     "executions computing at once (1-1024; default: online CPUs); read by config.c"},
};

static struct rt_env env_cur;
static _Atomic uint32_t env_async;

const struct env_var *env_table(uint32_t *n)
{
    *n = (uint32_t)(sizeof env_vars / sizeof env_vars[0]);
    return env_vars;
}

int env_bool(const char *s, int def)
{
    if (s == NULL || *s == '\0')
        return def;
    if (strcmp(s, "1") == 0 || strcasecmp(s, "true") == 0 || strcasecmp(s, "yes") == 0)
        return 1;
    if (strcmp(s, "0") == 0 || strcasecmp(s, "false") == 0 || strcasecmp(s, "no") == 0)
        return 0;
    return -1;
}

static NRT_STATUS env_numerr(const char *s, enum env_numerr *out)
{
    static const char *const names[] = {"none", "critical", "debug", "verbose"};
    *out = ENV_NUMERR_UNSET;
    if (s == NULL || *s == '\0')
        return NRT_SUCCESS;
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, names[i]) == 0) {
            *out = (enum env_numerr)(ENV_NUMERR_NONE + i);
            return NRT_SUCCESS;
        }
    }
    LOG_ERROR("NRT", "NEURON_RT_NUMERICAL_ERRORS_VERBOSITY='%s': not none, critical, debug or "
              "verbose", s);
    return NRT_INVALID;
}

static NRT_STATUS env_count(const char *name, uint32_t *out)
{
    const char *s = getenv(name);
    *out = 0;
    if (s == NULL || *s == '\0')
        return NRT_SUCCESS;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v > (long)INT32_MAX)
        return NRT_INVALID;   /* an ignored variable: the caller keeps 0 */
    *out = (uint32_t)v;
    return NRT_SUCCESS;
}

static NRT_STATUS env_flag(const char *name, bool *out)
{
    int v = env_bool(getenv(name), 0);
    if (v < 0) {
        LOG_ERROR("NRT", "%s='%s': not 0, 1, true or false", name, getenv(name));
        return NRT_INVALID;
    }
    *out = v == 1;
    return NRT_SUCCESS;
}

NRT_STATUS env_load(void)
{
    struct rt_env e = {0};
    NRT_STATUS st = NRT_SUCCESS;
    if (log_env_location() != 0) {
        LOG_ERROR("NRT", "NEURON_RT_LOG_LOCATION='%s': cannot open the file for appending",
                  getenv("NEURON_RT_LOG_LOCATION"));
        st = NRT_INVALID;
    }
    (void)env_count("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", &e.async_max_inflight);
    if (st == NRT_SUCCESS)
        st = env_numerr(getenv("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY"), &e.numerr);
    if (st == NRT_SUCCESS)
        st = env_flag("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", &e.dump_inputs_on_err);
    if (st == NRT_SUCCESS)
        st = env_flag("NEURON_RT_VALIDATE_HASH", &e.validate_hash);
    const char *tag = getenv("NEURON_PROCESS_TAG");
    if (tag != NULL)
        snprintf(e.process_tag, sizeof e.process_tag, "%s", tag);
    if (st == NRT_SUCCESS) {
        env_cur = e;
        atomic_store(&env_async, e.async_max_inflight);
    }
    return st;
}

const struct rt_env *env_get(void)
{
    return &env_cur;
}

uint32_t env_async_max_inflight(void)
{
    return atomic_load(&env_async);
}
