/*
 * systrace.c: per-NeuronCore event rings and their JSON (see systrace.h).
 */
#include "devices/observe/systrace.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu/log.h"

static const char *const systrace_names[SYS_TYPE_COUNT] = {
    "nrt_load", "nrt_unload", "nrt_execute", "nc_exec_running", "nrt_tensor_read",
    "nrt_tensor_write", "nrt_tensor_copy", "nrta_request", "cc_running", "numerical_err",
};

/* One event. */
struct systrace_event {
    uint8_t type;         /* enum systrace_type */
    int32_t nc;           /* process-local VNC, -1 for none */
    uint64_t t0;          /* start, host monotonic ns */
    uint64_t dur;         /* length in ns (device time for nc_exec_running) */
    uint64_t value;       /* bytes, sequence number or execution count */
    int32_t status;       /* NRT_STATUS */
    int32_t tid;          /* host thread */
    uint64_t seq;         /* capture-wide event number (the JSON's tracking_id) */
    uint64_t dev_t0;      /* nc_exec_running: start on the core's device clock, ns */
    char name[64];        /* model or tensor name */
};

/* One NeuronCore's ring. */
struct systrace_ring {
    struct systrace_event *ev;  /* cap entries */
    uint64_t head;              /* index of the oldest */
    uint64_t count;             /* events held */
};

static pthread_mutex_t systrace_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool systrace_on;               /* a capture runs */
static nrt_sys_trace_config_t systrace_cfg;   /* its options */
static struct systrace_ring *systrace_rings;  /* SYSTRACE_MAX_NC, allocated lazily per core */
static uint64_t systrace_seq;                 /* events recorded */
/* Each NeuronCore's device clock: the estimated device time of the
 * executions it ran since the capture started, back to back. */
static uint64_t systrace_dev_clock[SYSTRACE_MAX_NC];

const char *systrace_type_name(enum systrace_type t)
{
    return (unsigned)t < SYS_TYPE_COUNT ? systrace_names[t] : "?";
}

int systrace_type_of(const char *name)
{
    for (int i = 0; name != NULL && i < SYS_TYPE_COUNT; i++)
        if (strcmp(systrace_names[i], name) == 0)
            return i;
    return -1;
}

const char *systrace_type_group(enum systrace_type t)
{
    return t == SYS_NC_EXEC_RUNNING || t == SYS_CC_RUNNING || t == SYS_NUMERICAL_ERR
               ? "hardware" : "software";
}

void systrace_config_defaults(nrt_sys_trace_config_t *c)
{
    c->max_events_per_nc = SYSTRACE_DEFAULT_MAX_EVENTS;
    c->types = (1u << SYS_TYPE_COUNT) - 1;
    memset(c->nc_on, 1, sizeof c->nc_on);
}

void systrace_fetch_defaults(nrt_sys_trace_fetch_options_t *o)
{
    o->max_events_per_nc = 0;
    o->nc_idx = -1;
}

uint64_t systrace_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void systrace_free_rings(void)
{
    if (systrace_rings != NULL)
        for (int i = 0; i < SYSTRACE_MAX_NC; i++)
            free(systrace_rings[i].ev);
    free(systrace_rings);
    systrace_rings = NULL;
}

NRT_STATUS systrace_start(const nrt_sys_trace_config_t *c)
{
    if (c->max_events_per_nc == 0 || c->max_events_per_nc > (1u << 26)) {
        LOG_ERROR("NRT", "max_events_per_nc %llu is not 1..%u",
                  (unsigned long long)c->max_events_per_nc, 1u << 26);
        return NRT_INVALID;
    }
    pthread_mutex_lock(&systrace_lock);
    if (atomic_load(&systrace_on)) {
        pthread_mutex_unlock(&systrace_lock);
        LOG_ERROR("NRT", "the system trace is capturing already: stop it first (a second start "
                  "would drop the events it holds)");
        return NRT_INVALID;
    }
    systrace_free_rings();
    systrace_rings = calloc(SYSTRACE_MAX_NC, sizeof *systrace_rings);
    systrace_cfg = *c;
    systrace_seq = 0;
    memset(systrace_dev_clock, 0, sizeof systrace_dev_clock);
    bool ok = systrace_rings != NULL;
    atomic_store(&systrace_on, ok);
    pthread_mutex_unlock(&systrace_lock);
    return ok ? NRT_SUCCESS : NRT_RESOURCE;
}

NRT_STATUS systrace_stop(void)
{
    pthread_mutex_lock(&systrace_lock);
    atomic_store(&systrace_on, false);
    systrace_free_rings();
    pthread_mutex_unlock(&systrace_lock);
    return NRT_SUCCESS;
}

NRT_STATUS systrace_stop_running(void)
{
    pthread_mutex_lock(&systrace_lock);
    bool was = atomic_exchange(&systrace_on, false);
    systrace_free_rings();
    pthread_mutex_unlock(&systrace_lock);
    if (!was) {
        LOG_ERROR("NRT", "the system trace is not capturing (nrt_sys_trace_start starts it)");
        return NRT_INVALID;
    }
    return NRT_SUCCESS;
}

bool systrace_running(void)
{
    return atomic_load(&systrace_on);
}

void systrace_emit(enum systrace_type t, int nc, uint64_t t0, uint64_t dur, const char *name,
                   uint64_t value, NRT_STATUS st)
{
    if (!atomic_load(&systrace_on))
        return;
    int slot = nc >= 0 && nc < SYSTRACE_MAX_NC ? nc : 0;
    pthread_mutex_lock(&systrace_lock);
    if (systrace_rings == NULL || !(systrace_cfg.types & (1u << t)) || !systrace_cfg.nc_on[slot]) {
        pthread_mutex_unlock(&systrace_lock);
        return;
    }
    struct systrace_ring *r = &systrace_rings[slot];
    uint64_t cap = systrace_cfg.max_events_per_nc;
    if (r->ev == NULL && (r->ev = malloc(cap * sizeof *r->ev)) == NULL) {
        pthread_mutex_unlock(&systrace_lock);
        return;
    }
    if (r->count == cap) {  /* full: the oldest event goes */
        r->head = (r->head + 1) % cap;
        r->count--;
    }
    struct systrace_event *e = &r->ev[(r->head + r->count) % cap];
    r->count++;
    *e = (struct systrace_event){(uint8_t)t, nc, t0, dur, value, (int32_t)st,
                                 (int32_t)syscall(SYS_gettid), ++systrace_seq, 0, ""};
    if (t == SYS_NC_EXEC_RUNNING) {
        e->dev_t0 = systrace_dev_clock[slot];
        systrace_dev_clock[slot] += dur;
    }
    if (name != NULL)
        snprintf(e->name, sizeof e->name, "%s", name);
    pthread_mutex_unlock(&systrace_lock);
}

/* The fields every JSON event has, for event type `type` and phase. */
static json_t *systrace_json_base(const struct systrace_event *e, const char *type,
                                  const char *group, const char *phase, uint64_t ts)
{
    return json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:i, s:i}",
                     "event_type", type, "group", group, "phase", phase,
                     "tracking_id", (json_int_t)e->seq, "timestamp", (json_int_t)ts,
                     "nc_idx", e->nc, "process_id", (int)getpid(), "thread_id", e->tid);
}

/* One phase of e: data names the model or tensor, the value (bytes,
 * sequence number or execution count) and the status; hardware events
 * also carry their device clock (nc_timestamp_ns). */
static json_t *systrace_json_phase(const struct systrace_event *e, const char *phase, bool stop)
{
    enum systrace_type t = (enum systrace_type)e->type;
    uint64_t ts = stop ? e->t0 + e->dur : e->t0;
    json_t *j = systrace_json_base(e, systrace_type_name(t), systrace_type_group(t), phase, ts);
    json_t *data = json_pack("{s:s, s:I, s:i}", "name", e->name, "value", (json_int_t)e->value,
                             "status", e->status);
    if (t == SYS_NC_EXEC_RUNNING)
        json_object_set_new(data, "nc_timestamp_ns",
                            json_integer((json_int_t)(e->dev_t0 + (stop ? e->dur : 0))));
    json_object_set_new(j, "data", data);
    return j;
}

/* The sync point before an execution: the host time at which it started
 * and the core's device clock then; a hardware event's timestamp is
 * cpu_timestamp_ns + (its nc_timestamp_ns - this nc_timestamp_ns). */
static json_t *systrace_json_sync(const struct systrace_event *e)
{
    json_t *j = systrace_json_base(e, "timestamp_sync_point", "hardware", "instant", e->t0);
    json_object_set_new(j, "data", json_pack("{s:I, s:I, s:I}", "cpu_timestamp_ns",
                                             (json_int_t)e->t0, "nc_timestamp_ns",
                                             (json_int_t)e->dev_t0, "exec_id",
                                             (json_int_t)e->value));
    return j;
}

/* Append e as the runtime shows it: a start and a stop event sharing a
 * tracking_id (an execution preceded by its sync point); a numerical
 * error is one instant event. */
static void systrace_append_json(json_t *events, const struct systrace_event *e)
{
    if (e->type == SYS_NUMERICAL_ERR) {
        json_array_append_new(events, systrace_json_phase(e, "instant", false));
        return;
    }
    if (e->type == SYS_NC_EXEC_RUNNING)
        json_array_append_new(events, systrace_json_sync(e));
    json_array_append_new(events, systrace_json_phase(e, "start", false));
    json_array_append_new(events, systrace_json_phase(e, "stop", true));
}

NRT_STATUS systrace_fetch(const nrt_sys_trace_fetch_options_t *o, char **json, size_t *len)
{
    json_t *root = json_object(), *events = json_array();
    pthread_mutex_lock(&systrace_lock);
    bool on = systrace_rings != NULL;
    for (int nc = 0; on && nc < SYSTRACE_MAX_NC; nc++) {
        if (o->nc_idx >= 0 && nc != o->nc_idx)
            continue;
        struct systrace_ring *r = &systrace_rings[nc];
        uint64_t take = r->count;
        if (o->max_events_per_nc > 0 && take > o->max_events_per_nc)
            take = o->max_events_per_nc;
        for (uint64_t i = 0; i < take; i++)
            systrace_append_json(events, &r->ev[(r->head + i) % systrace_cfg.max_events_per_nc]);
        if (take > 0) {  /* fetched events are gone */
            r->head = (r->head + take) % systrace_cfg.max_events_per_nc;
            r->count -= take;
        }
    }
    pthread_mutex_unlock(&systrace_lock);
    json_object_set_new(root, "events", events);
    json_object_set_new(root, "data_version", json_integer(2));
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    if (!on) {
        free(s);
        LOG_ERROR("NRT", "no system trace capture is running (nrt_sys_trace_start)");
        return NRT_INVALID;
    }
    if (s == NULL)
        return NRT_RESOURCE;
    *json = s;
    *len = strlen(s);
    return NRT_SUCCESS;
}

NRT_STATUS systrace_write_file(const char *path)
{
    nrt_sys_trace_fetch_options_t o;
    systrace_fetch_defaults(&o);
    char *json = NULL;
    size_t len = 0;
    NRT_STATUS st = systrace_fetch(&o, &json, &len);
    if (st != NRT_SUCCESS)
        return st;
    FILE *f = fopen(path, "w");
    bool ok = f != NULL && fwrite(json, 1, len, f) == len;
    int err = errno;
    if (f != NULL && fclose(f) != 0) {
        ok = false;
        err = errno;
    }
    free(json);
    if (!ok) {
        LOG_ERROR("NRT", "cannot write the system trace to '%s': %s", path, strerror(err));
        return NRT_FAILURE;
    }
    return NRT_SUCCESS;
}
