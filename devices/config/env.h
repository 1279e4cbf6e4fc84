/*
 * env.h: the runtime's environment variables, from one table (env.c), and
 * the one parser of their values.
 *
 * Every NEURON_RT_* variable of the vendor's runtime documentation (plus
 * the few NEURON_* ones the runtime docs name and trnemu's own TRNEMU_*
 * ones that shape executions) is listed there with its kind of value and
 * how trnemu treats it: honoured (with the documented meaning) or accepted
 * and ignored (with the reason, shown by docs/env.md). env_load() checks
 * every one that is set at nrt_init: a malformed value fails nrt_init with
 * NRT_INVALID and one log line naming the variable and what it accepts.
 * Modules read their values through env_read_*, which share that parser;
 * the few variables tests change between executions are marked "per
 * execution" and read again by env_exec() before each execution.
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

/* What the environment says for one execution (read before each). */
struct env_exec {
    uint64_t timeout_ms;           /* NEURON_RT_EXEC_TIMEOUT in ms; 0: no limit */
    bool racecheck;                /* TRNEMU_RACECHECK */
    bool stochastic;               /* NEURON_RT_STOCHASTIC_ROUNDING_EN */
    uint64_t seed;                 /* NEURON_RT_STOCHASTIC_ROUNDING_SEED (0 when unset) */
    bool foreign_zeros;            /* TRNEMU_FOREIGN_NEFF=zeros */
};

/* Default NEURON_RT_EXEC_TIMEOUT, seconds. */
#define ENV_EXEC_TIMEOUT_DEFAULT_S 600u

/* Read every variable of the table (at nrt_init), check each one that is
 * set, apply the log location, and keep the values. NRT_INVALID with one
 * log line naming the variable and what it accepts for a malformed one. */
NRT_STATUS env_load(void);

/* The values kept by the last env_load (zeros before it). */
const struct rt_env *env_get(void);

/* The per-execution values, read now; NRT_INVALID with one log line when
 * one of them has become malformed since nrt_init. */
NRT_STATUS env_exec(struct env_exec *out);

/* NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS as read at nrt_init (0 when
 * unset or malformed). The variable is ignored: the vendor removed the
 * implicit async mode it enabled (see devices/runtime/async.c). */
uint32_t env_async_max_inflight(void);

/* Parse a boolean the way the vendor documents it (0/1/true/false/yes/no,
 * case-insensitive); def when s is NULL or empty, -1 when malformed. */
int env_bool(const char *s, int def);

/* s as a whole number (decimal, or hex with 0x) in [min, max] by the one
 * parser's rules, with no log line: for readers that run before
 * nrt_init's check, which reports a malformed value itself. */
bool env_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Variable name as a boolean: def when unset or empty; NRT_INVALID with
 * one log line when malformed. */
NRT_STATUS env_read_bool(const char *name, bool def, bool *out);

/* Variable name as a whole number in [min, max]: def when unset or empty;
 * NRT_INVALID with one log line when malformed or out of range. */
NRT_STATUS env_read_uint(const char *name, uint64_t min, uint64_t max, uint64_t def,
                         uint64_t *out);

/* Variable name as a duration (seconds, fractional allowed, or with an
 * "s" or "ms" suffix) in ms: def_ms when unset or empty; NRT_INVALID with
 * one log line when malformed, negative or above ten million seconds. */
NRT_STATUS env_read_ms(const char *name, uint64_t def_ms, uint64_t *out_ms);

/* The kind of value a variable takes (what env_load checks). */
enum env_kind {
    ENV_TEXT,        /* text of at most max bytes (a path: 4095) */
    ENV_BOOL,        /* 0/1/true/false/yes/no, any case */
    ENV_UINT,        /* a whole number in [min, max] */
    ENV_DURATION,    /* seconds (or with an s / ms suffix), at most max seconds */
    ENV_CHOICE,      /* one of the words in choices, any case */
    ENV_LEVEL,       /* a log level: ERROR, WARN, WARNING, INFO, DEBUG, TRACE, QUIET */
    ENV_CORES,       /* a list of core indices and ranges: 0-3,8 */
    ENV_LIST,        /* a comma-separated list of whole numbers up to max: 0,2 */
    ENV_HOSTPORT,    /* host:port, the port 1 to 65535 */
};

/* One row of the table, for docs and `trnemu ls`: name, whether trnemu
 * honours it, its kind of value, and what it does or why it is ignored. */
struct env_var {
    const char *name;        /* variable name; "<component>" at the end: one per component */
    bool honoured;           /* false: accepted and ignored */
    bool per_exec;           /* read again before each execution */
    enum env_kind kind;      /* the values it accepts */
    uint64_t min;            /* ENV_UINT: smallest value */
    uint64_t max;            /* ENV_UINT, ENV_LIST: largest value; ENV_DURATION: most
                                seconds; ENV_TEXT: most bytes */
    const char *choices;     /* ENV_CHOICE: the words, comma-separated */
    const char *what;        /* meaning in trnemu, or the reason it is ignored */
};

/* The table and its length. */
const struct env_var *env_table(uint32_t *n);

/* Check value against row v's kind: NRT_SUCCESS, or NRT_INVALID with one
 * log line "name='value': expected <what the kind accepts>". */
NRT_STATUS env_check(const struct env_var *v, const char *name, const char *value);

#endif
