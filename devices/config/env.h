/*
 * env.h: the runtime's environment variables, from one table (env.c).
 *
 * Every NEURON_RT_* variable of the vendor's configuration guide (plus the
 * few NEURON_* ones the runtime docs name and trnemu's own TRNEMU_* ones
 * that shape executions) is listed there with how trnemu treats it:
 * honoured (with the documented meaning) or accepted and ignored (with the
 * reason, shown by docs/env.md). env_load() reads them all once, at
 * nrt_init; the few that tests change between executions are marked
 * "per execution" and read again by env_exec() before each execution.
 * A malformed value of a variable whose guide says nrt_init fails on it is
 * NRT_INVALID with one log line.
 */
#ifndef TRNEMU_DEVICES_ENV_H
#define TRNEMU_DEVICES_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

/* NEURON_RT_NUMERICAL_ERRORS_VERBOSITY. */
enum env_numerr {
    ENV_NUMERR_UNSET,     /* not set: trnemu reports NaN and Inf (see docs/env.md) */
    ENV_NUMERR_NONE,      /* "none": no numerical error reporting */
    ENV_NUMERR_CRITICAL,  /* "critical": NaN only */
    ENV_NUMERR_DEBUG,     /* "debug": NaN (overflow/underflow flags are not modelled) */
    ENV_NUMERR_VERBOSE,   /* "verbose": NaN and infinities */
};

/* What the environment said at nrt_init. */
struct rt_env {
    uint32_t async_max_inflight;   /* NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS (ignored) */
    enum env_numerr numerr;        /* NEURON_RT_NUMERICAL_ERRORS_VERBOSITY */
    bool dump_inputs_on_err;       /* NEURON_RT_DBG_DUMP_INPUTS_ON_ERR */
    bool validate_hash;            /* NEURON_RT_VALIDATE_HASH */
    char process_tag[64];          /* NEURON_PROCESS_TAG ("" when unset) */
};

/* Read every variable of the table (at nrt_init), apply the log location,
 * and keep the values. NRT_INVALID with one log line for a value the
 * guide rejects (e.g. an unknown numerical-errors verbosity). */
NRT_STATUS env_load(void);

/* The values kept by the last env_load (zeros before it). */
const struct rt_env *env_get(void);

/* NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS as read at nrt_init (0 when
 * unset or malformed). The variable is ignored: the vendor removed the
 * implicit async mode it enabled (see devices/runtime/async.c). */
uint32_t env_async_max_inflight(void);

/* Parse a boolean the way the vendor documents it (0/1/true/false/yes/no,
 * case-insensitive); def when s is NULL or empty, -1 when malformed. */
int env_bool(const char *s, int def);

/* One row of the table, for docs and `trnemu ls`: name, whether trnemu
 * honours it, and what it does or why it is ignored. */
struct env_var {
    const char *name;        /* variable name */
    bool honoured;           /* false: accepted and ignored */
    bool per_exec;           /* read again before each execution */
    const char *what;        /* meaning in trnemu, or the reason it is ignored */
};

/* The table and its length. */
const struct env_var *env_table(uint32_t *n);

#endif
