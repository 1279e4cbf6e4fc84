/*
 * systrace.h: the system trace behind nrt_sys_trace.h and inspect's
 * system profile: runtime events (loads, executions with their estimated
 * device time, tensor reads and writes, asynchronous requests,
 * collectives) kept in one ring buffer per NeuronCore while a capture
 * runs, fetched as JSON ({"events": [...], "data_version": 2}; the event
 * fields are in docs/profile.md).
 */
#ifndef TRNEMU_DEVICES_SYSTRACE_H
#define TRNEMU_DEVICES_SYSTRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"
#include "nrt/nrt_sys_trace.h"

/* Event types; systrace_type_name gives the names the API uses. */
enum systrace_type {
    SYS_NRT_LOAD = 0,         /* nrt_load: a model loaded */
    SYS_NRT_UNLOAD = 1,       /* nrt_unload */
    SYS_NRT_EXECUTE = 2,      /* nrt_execute: host time of the call */
    SYS_NC_EXEC_RUNNING = 3,  /* the execution on the core: estimated device time */
    SYS_TENSOR_READ = 4,      /* nrt_tensor_read */
    SYS_TENSOR_WRITE = 5,     /* nrt_tensor_write */
    SYS_TENSOR_COPY = 6,      /* nrt_tensor_copy */
    SYS_ASYNC_REQUEST = 7,    /* an nrta_* request, scheduled to completion */
    SYS_CC_RUNNING = 8,       /* a collective operation */
    SYS_NUMERICAL_ERR = 9,    /* an execution produced NaN/Inf */
    SYS_TYPE_COUNT = 10,
};

/* Default ring size per NeuronCore. */
#define SYSTRACE_DEFAULT_MAX_EVENTS 100000u
/* NeuronCores a capture can select. */
#define SYSTRACE_MAX_NC 512

struct nrt_sys_trace_config {
    uint64_t max_events_per_nc;       /* ring size */
    uint32_t types;                   /* bit per enum systrace_type */
    uint8_t nc_on[SYSTRACE_MAX_NC];   /* capture for this NeuronCore */
};

struct nrt_sys_trace_fetch_options {
    uint64_t max_events_per_nc;       /* at most this many per core; 0: all */
    int64_t nc_idx;                   /* one core, or -1 for all */
};

const char *systrace_type_name(enum systrace_type t);
/* The type named name; -1 when unknown. */
int systrace_type_of(const char *name);
/* "hardware" or "software". */
const char *systrace_type_group(enum systrace_type t);

void systrace_config_defaults(nrt_sys_trace_config_t *c);
void systrace_fetch_defaults(nrt_sys_trace_fetch_options_t *o);

/* Start capturing; NRT_INVALID (one line) while a capture runs already. */
NRT_STATUS systrace_start(const nrt_sys_trace_config_t *c);
/* Stop capturing, whether or not a capture runs (teardown). */
NRT_STATUS systrace_stop(void);
/* Stop the capture that runs; NRT_INVALID (one line) when none does. */
NRT_STATUS systrace_stop_running(void);
bool systrace_running(void);
/* Take the events not fetched yet as a malloc'd JSON string. */
NRT_STATUS systrace_fetch(const nrt_sys_trace_fetch_options_t *o, char **json, size_t *len);

/* Fetch every event (default options) as JSON into the file at path;
 * NRT_FAILURE with one log line when it cannot be written. */
NRT_STATUS systrace_write_file(const char *path);

/* Host monotonic time in ns (event timestamps). */
uint64_t systrace_now_ns(void);
/* Record one event if a capture runs and wants it: nc the process-local
 * VNC (-1: none, recorded on NC 0), t0 its start, dur its length (ns),
 * name what it concerns, value a size or sequence number, st its status. */
void systrace_emit(enum systrace_type t, int nc, uint64_t t0, uint64_t dur, const char *name,
                   uint64_t value, NRT_STATUS st);

#endif
