/*
 * devprof.c: device profile sessions and their Chrome/Perfetto trace
 * JSON (see devprof.h and docs/profile.md).
 *
 * Every kept execution is one record: its model, VNC, the cost run's
 * totals and (when a session wanted them) its spans. A file lays the
 * executions of one VNC back to back in device time: process = VNC,
 * thread = engine or DMA queue of a core, one complete ("X") event per
 * instruction, one per semaphore wait, one per execution.
 */
#include "devices/observe/devprof.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "emu/core/tbuf.h"
#include "emu/grow.h"
#include "emu/isa/isa.h"
#include "emu/log.h"

enum devprof_kind {
    DEVPROF_MODEL = 1,       /* nrt_profile_start: one model */
    DEVPROF_CONTINUOUS = 2,  /* nrt_profile_continuous_*: every model */
    DEVPROF_INSPECT = 3,     /* nrt_inspect_*: every model */
    DEVPROF_ENV = 4,         /* TRNEMU_PROFILE: every model, whole run */
};

/* One kept execution. */
struct devprof_rec {
    uint32_t model_id;        /* the model's load number */
    int vnc;                  /* its VNC */
    char name[260];           /* the NEFF's name */
    const char *gen_name;     /* cost table, e.g. "NeuronCore-v3" */
    double device_ns;         /* estimated device time */
    double busy[COST_MAX_CORES][COST_LANES]; /* busy time per core and lane */
    uint64_t insns;           /* instructions costed */
    struct cost_span *spans;  /* recorded spans, or NULL */
    size_t nspans;            /* their number */
    uint64_t dropped;         /* spans beyond the buffer */
    NRT_STATUS st;            /* the execution's status */
};

struct devprof_session {
    enum devprof_kind kind;   /* what started it */
    uint32_t model_id;        /* DEVPROF_MODEL: the model */
    char *path;               /* file (MODEL, ENV) or directory (CONTINUOUS, INSPECT) */
    size_t first;             /* first record it covers */
    bool all;                 /* INSPECT: keep every execution */
    bool on_fail;             /* INSPECT: write failed executions at once */
    uint32_t saves;           /* files written so far (numbering) */
    struct devprof_session *next; /* list link */
};

static pthread_mutex_t devprof_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool devprof_active;           /* any session at all */
static struct devprof_session *devprof_sessions; /* active sessions */
static struct devprof_rec *devprof_recs;     /* kept executions */
static size_t devprof_n, devprof_cap;        /* used and allocated */

static const char *const devprof_lane_names[COST_LANES] = {
    "pe", "act", "pool", "dve", "sp", "dma:pe", "dma:act", "dma:pool", "dma:dve", "dma:sp",
};

/* ---- sessions ------------------------------------------------------------- */

static bool devprof_session_wants(const struct devprof_session *s, uint32_t model_id)
{
    return s->kind != DEVPROF_MODEL || s->model_id == model_id;
}

bool devprof_wanted(uint32_t model_id)
{
    if (!atomic_load(&devprof_active))
        return false;
    bool want = false;
    pthread_mutex_lock(&devprof_lock);
    for (struct devprof_session *s = devprof_sessions; s != NULL && !want; s = s->next)
        want = devprof_session_wants(s, model_id);
    pthread_mutex_unlock(&devprof_lock);
    return want;
}

/* ---- span buffers, one per thread that executes ------------------------- */

static struct tbuf devprof_span_buf = TBUF_INIT((size_t)DEVPROF_MAX_SPANS *
                                                sizeof(struct cost_span));

struct cost_span *devprof_span_buffer(void)
{
    struct cost_span *p = tbuf_get(&devprof_span_buf);
    if (p == NULL)
        LOG_WARN("NRT", "out of host memory for a profile's spans; this execution keeps "
                 "only its totals");
    return p;
}

static struct devprof_session *devprof_add(enum devprof_kind kind, const char *path)
{
    struct devprof_session *s = calloc(1, sizeof *s);
    if (s == NULL || (s->path = strdup(path)) == NULL) {
        free(s);
        return NULL;
    }
    s->kind = kind;
    s->first = devprof_n;
    s->next = devprof_sessions;
    devprof_sessions = s;
    atomic_store(&devprof_active, true);
    return s;
}

static void devprof_remove(struct devprof_session *s)
{
    for (struct devprof_session **p = &devprof_sessions; *p != NULL; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    free(s->path);
    free(s);
    atomic_store(&devprof_active, devprof_sessions != NULL);
}

static struct devprof_session *devprof_find(enum devprof_kind kind, const char *path)
{
    for (struct devprof_session *s = devprof_sessions; s != NULL; s = s->next)
        if (s->kind == kind && (path == NULL || strcmp(s->path, path) == 0))
            return s;
    return NULL;
}

/* ---- the trace file ------------------------------------------------------- */

static json_t *devprof_meta(const char *what, int pid, int tid, const char *name)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", what, "ph", "M", "pid", pid,
                     "tid", tid, "args", "name", name);
}

static json_t *devprof_span_event(const char *name, const char *cat, int pid, int tid,
                                  double start_ns, double dur_ns)
{
    return json_pack("{s:s, s:s, s:s, s:i, s:i, s:f, s:f}", "name", name, "cat", cat, "ph", "X",
                     "pid", pid, "tid", tid, "ts", start_ns / 1000.0, "dur", dur_ns / 1000.0);
}

/* The events of one record placed at device time t0 (ns). */
static void devprof_rec_events(json_t *ev, const struct devprof_rec *r, double t0, size_t index)
{
    json_t *x = devprof_span_event(r->name, "execution", r->vnc, 0, t0, r->device_ns);
    json_object_set_new(x, "args", json_pack("{s:i, s:f, s:I, s:i, s:I}", "execution",
                                             (int)index, "device_ns", r->device_ns,
                                             "instructions", (json_int_t)r->insns,
                                             "status", (int)r->st,
                                             "spans_dropped", (json_int_t)r->dropped));
    json_array_append_new(ev, x);
    for (size_t i = 0; i < r->nspans; i++) {
        const struct cost_span *s = &r->spans[i];
        const struct isa_op_desc *op = isa_op_lookup(s->opcode);
        int tid = 1 + (int)(s->core * COST_LANES + s->lane);
        bool dma = s->lane >= ISA_ENG_COUNT;
        x = devprof_span_event(op != NULL ? op->name : "?", dma ? "dma" : "instruction", r->vnc,
                               tid, t0 + s->start_ns, s->end_ns - s->start_ns);
        json_object_set_new(x, "args", json_pack("{s:i, s:i}", "pc", (int)s->pc, "core",
                                                 (int)s->core));
        json_array_append_new(ev, x);
        if (s->wait_ns > 0)
            json_array_append_new(ev, devprof_span_event("semaphore wait", "wait", r->vnc, tid,
                                                         t0 + s->start_ns - s->wait_ns,
                                                         s->wait_ns));
    }
}

/* Name the process of vnc and its lanes once. */
static void devprof_names(json_t *ev, const struct devprof_rec *r, bool *named)
{
    if (r->vnc < 0 || r->vnc >= 1024 || named[r->vnc])
        return;
    named[r->vnc] = true;
    char buf[96];
    snprintf(buf, sizeof buf, "VNC %d (%s, estimated device time)", r->vnc, r->gen_name);
    json_array_append_new(ev, devprof_meta("process_name", r->vnc, 0, buf));
    json_array_append_new(ev, devprof_meta("thread_name", r->vnc, 0, "executions"));
    for (int c = 0; c < COST_MAX_CORES; c++)
        for (int l = 0; l < COST_LANES; l++) {
            snprintf(buf, sizeof buf, "core %d %s", c, devprof_lane_names[l]);
            json_array_append_new(ev, devprof_meta("thread_name", r->vnc,
                                                   1 + c * COST_LANES + l, buf));
        }
}

/* Write records [first, n) accepted by keep() to path. */
static NRT_STATUS devprof_write(const char *path, size_t first,
                                bool (*keep)(const struct devprof_rec *, const void *),
                                const void *arg)
{
    json_t *root = json_object(), *ev = json_array();
    static bool named[1024];
    double t_vnc[1024];
    memset(named, 0, sizeof named);
    memset(t_vnc, 0, sizeof t_vnc);
    double total = 0;
    size_t kept = 0;
    for (size_t i = first; i < devprof_n; i++) {
        const struct devprof_rec *r = &devprof_recs[i];
        if (!keep(r, arg))
            continue;
        int v = r->vnc >= 0 && r->vnc < 1024 ? r->vnc : 0;
        devprof_names(ev, r, named);
        devprof_rec_events(ev, r, t_vnc[v], i);
        t_vnc[v] += r->device_ns;
        total += r->device_ns;
        kept++;
    }
    json_object_set_new(root, "traceEvents", ev);
    json_object_set_new(root, "displayTimeUnit", json_string("ns"));
    json_object_set_new(root, "otherData",
                        json_pack("{s:s, s:I, s:f}", "producer", "trnemu cost model "
                                  "(docs/cost-model.md)", "executions", (json_int_t)kept,
                                  "device_ns", total));
    int rc = json_dump_file(root, path, JSON_COMPACT);
    json_decref(root);
    if (rc != 0) {
        LOG_ERROR("NRT", "cannot write the profile '%s': %s", path, strerror(errno));
        return NRT_FAILURE;
    }
    return NRT_SUCCESS;
}

static bool devprof_keep_all(const struct devprof_rec *r, const void *arg)
{
    (void)r, (void)arg;
    return true;
}

static bool devprof_keep_model(const struct devprof_rec *r, const void *arg)
{
    return r->model_id == *(const uint32_t *)arg;
}

static bool devprof_keep_vnc(const struct devprof_rec *r, const void *arg)
{
    return r->vnc == (int)*(const uint32_t *)arg;
}

static bool devprof_keep_one(const struct devprof_rec *r, const void *arg)
{
    return r == arg;
}

/* ---- recording ------------------------------------------------------------ */

static bool devprof_grow(void)
{
    return GROW_ARRAY(devprof_recs, devprof_cap, devprof_n + 1, 64);
}

static void devprof_mkdir(const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        LOG_WARN("NRT", "cannot create the profile directory '%s': %s", dir, strerror(errno));
}

void devprof_exec(const struct devprof_model *m, const struct cost_run *cr, NRT_STATUS st)
{
    if (!atomic_load(&devprof_active))
        return;
    pthread_mutex_lock(&devprof_lock);
    if (devprof_sessions == NULL || !devprof_grow()) {
        pthread_mutex_unlock(&devprof_lock);
        return;
    }
    struct devprof_rec *r = &devprof_recs[devprof_n];
    memset(r, 0, sizeof *r);
    r->model_id = m->id;
    r->vnc = m->vnc;
    snprintf(r->name, sizeof r->name, "%s", m->name);
    r->gen_name = cr->t->name;
    r->device_ns = cr->end_ns;
    memcpy(r->busy, cr->busy, sizeof r->busy);
    r->insns = cr->insns;
    r->dropped = cr->spans_dropped;
    r->st = st;
    if (cr->nspans > 0 && (r->spans = malloc(cr->nspans * sizeof *r->spans)) != NULL) {
        memcpy(r->spans, cr->spans, cr->nspans * sizeof *r->spans);
        r->nspans = cr->nspans;
    }
    devprof_n++;
    for (struct devprof_session *s = devprof_sessions; s != NULL; s = s->next)
        if (s->kind == DEVPROF_INSPECT && s->on_fail && st != NRT_SUCCESS) {
            char path[4096];
            snprintf(path, sizeof path, "%s/device-profile-failed-%zu.json", s->path,
                     devprof_n - 1);
            devprof_mkdir(s->path);
            if (devprof_write(path, devprof_n - 1, devprof_keep_one, r) == NRT_SUCCESS)
                LOG_INFO("NRT", "failed execution of '%s': device profile in %s", r->name,
                         path);
        }
    pthread_mutex_unlock(&devprof_lock);
}

/* ---- the sessions' entry points ------------------------------------------- */

NRT_STATUS devprof_model_start(uint32_t model_id, const char *filename)
{
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_MODEL, filename);
    if (s != NULL)
        devprof_remove(s);  /* restarting a file starts it afresh */
    s = devprof_add(DEVPROF_MODEL, filename);
    if (s != NULL)
        s->model_id = model_id;
    pthread_mutex_unlock(&devprof_lock);
    return s != NULL ? NRT_SUCCESS : NRT_RESOURCE;
}

NRT_STATUS devprof_model_stop(const char *filename)
{
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_MODEL, filename);
    NRT_STATUS st = NRT_INVALID;
    if (s != NULL) {
        st = devprof_write(s->path, s->first, devprof_keep_model, &s->model_id);
        devprof_remove(s);
    }
    pthread_mutex_unlock(&devprof_lock);
    if (s == NULL)
        LOG_ERROR("NRT", "no profile was started for '%s' (nrt_profile_start)", filename);
    return st;
}

NRT_STATUS devprof_continuous_start(const char *dir)
{
    pthread_mutex_lock(&devprof_lock);
    bool dup = devprof_find(DEVPROF_CONTINUOUS, NULL) != NULL;
    struct devprof_session *s = dup ? NULL : devprof_add(DEVPROF_CONTINUOUS, dir);
    pthread_mutex_unlock(&devprof_lock);
    if (dup) {
        LOG_ERROR("NRT", "a continuous profile is already running");
        return NRT_INVALID;
    }
    if (s != NULL)
        devprof_mkdir(dir);
    return s != NULL ? NRT_SUCCESS : NRT_RESOURCE;
}

NRT_STATUS devprof_continuous_save(uint32_t vnc, const char *dir)
{
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_CONTINUOUS, NULL);
    NRT_STATUS st = NRT_INVALID;
    if (s != NULL) {
        char path[4096];
        const char *d = dir != NULL ? dir : s->path;
        devprof_mkdir(d);
        snprintf(path, sizeof path, "%s/profile-vnc%u-%u.json", d, vnc, s->saves++);
        st = devprof_write(path, s->first, devprof_keep_vnc, &vnc);
    }
    pthread_mutex_unlock(&devprof_lock);
    if (s == NULL)
        LOG_ERROR("NRT", "no continuous profile is running (nrt_profile_continuous_start)");
    return st;
}

NRT_STATUS devprof_continuous_stop(void)
{
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_CONTINUOUS, NULL);
    if (s != NULL)
        devprof_remove(s);
    pthread_mutex_unlock(&devprof_lock);
    if (s == NULL)
        LOG_ERROR("NRT", "no continuous profile is running");
    return s != NULL ? NRT_SUCCESS : NRT_INVALID;
}

void devprof_inspect_start(const char *dir, bool all, bool on_fail)
{
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_INSPECT, NULL);
    if (s != NULL)
        devprof_remove(s);
    s = devprof_add(DEVPROF_INSPECT, dir);
    if (s != NULL) {
        s->all = all;
        s->on_fail = on_fail;
    }
    pthread_mutex_unlock(&devprof_lock);
    devprof_mkdir(dir);
}

NRT_STATUS devprof_inspect_stop(void)
{
    NRT_STATUS st = NRT_SUCCESS;
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_INSPECT, NULL);
    if (s != NULL && s->all) {
        char path[4096];
        snprintf(path, sizeof path, "%s/device-profile.json", s->path);
        st = devprof_write(path, s->first, devprof_keep_all, NULL);
    }
    if (s != NULL)
        devprof_remove(s);
    pthread_mutex_unlock(&devprof_lock);
    return st;
}

void devprof_env_start(void)
{
    const char *path = getenv("TRNEMU_PROFILE");
    if (path == NULL || *path == '\0')
        return;
    pthread_mutex_lock(&devprof_lock);
    if (devprof_find(DEVPROF_ENV, NULL) == NULL)
        devprof_add(DEVPROF_ENV, path);
    pthread_mutex_unlock(&devprof_lock);
}

/* The per-engine summary of records [first, n) on stderr. */
static void devprof_summary(const struct devprof_session *s)
{
    double total = 0, busy[COST_LANES] = {0};
    size_t n = 0;
    for (size_t i = s->first; i < devprof_n; i++, n++) {
        total += devprof_recs[i].device_ns;
        for (int c = 0; c < COST_MAX_CORES; c++)
            for (int l = 0; l < COST_LANES; l++)
                busy[l] += devprof_recs[i].busy[c][l];
    }
    fprintf(stderr, "trnemu profile: %zu executions, estimated device time %.3f ms "
            "(trace: %s)\n", n, total / 1e6, s->path);
    if (n == 0 || total <= 0)
        return;
    int crit = 0;
    fprintf(stderr, "  %-9s %12s %7s\n", "engine", "busy (ms)", "busy %");
    for (int l = 0; l < COST_LANES; l++) {
        if (busy[l] > busy[crit])
            crit = l;
        if (busy[l] > 0)
            fprintf(stderr, "  %-9s %12.3f %6.1f%%\n", devprof_lane_names[l], busy[l] / 1e6,
                    100.0 * busy[l] / total);
    }
    fprintf(stderr, "  critical engine: %s (%.1f%% of the estimated time)\n",
            devprof_lane_names[crit], 100.0 * busy[crit] / total);
}

void devprof_env_finish(void)
{
    pthread_mutex_lock(&devprof_lock);
    struct devprof_session *s = devprof_find(DEVPROF_ENV, NULL);
    if (s != NULL) {
        if (devprof_write(s->path, s->first, devprof_keep_all, NULL) == NRT_SUCCESS)
            devprof_summary(s);
        devprof_remove(s);
    }
    pthread_mutex_unlock(&devprof_lock);
}

void devprof_reset(void)
{
    pthread_mutex_lock(&devprof_lock);
    while (devprof_sessions != NULL)
        devprof_remove(devprof_sessions);
    for (size_t i = 0; i < devprof_n; i++)
        free(devprof_recs[i].spans);
    free(devprof_recs);
    devprof_recs = NULL;
    devprof_n = devprof_cap = 0;
    pthread_mutex_unlock(&devprof_lock);
}
