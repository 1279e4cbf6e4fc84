/*
 * calllog_rec.c: recording: what the generated wrappers call around each
 * ABI call (cl_call_begin / cl_call_end) and the configuration read from
 * the environment.
 *
 *   TRNEMU_RECORD=FILE            record every call into FILE (replaced);
 *                                 %p in FILE becomes the pid, %r the RANK
 *   TRNEMU_RECORD_OUTPUT_BYTES=N  keep the bytes (not only the hash) of
 *                                 outputs up to N bytes (default 1 MiB)
 *
 * The configuration is read at the first ABI call and again at every
 * nrt_init. Sequence numbers are global (one atomic counter) and taken when
 * a call starts. When the call returns, its row is encoded (hashes
 * computed, buffers not stored before copied) under one mutex and handed
 * to the writer thread (calllog_queue.c), which inserts and commits in the
 * background; nrt_close and exit wait until everything is written. A
 * write error stops the recording with one log line; the program itself
 * is never harmed.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu/log.h"
#include "store/calllog.h"

extern char **environ;

/* Default of TRNEMU_RECORD_OUTPUT_BYTES. */
#define CL_KEEP_DEFAULT (1u << 20)

/* cl_hooks bits. */
enum {
    CL_H_UNCONF = 1, /* the environment was not read yet */
    CL_H_RECORD = 2, /* a call log is open */
    CL_H_CKPT = 4,   /* a checkpoint trigger is armed */
    CL_H_SIGNAL = 8, /* SIGUSR1 asked for a snapshot */
};

_Atomic int cl_hooks = CL_H_UNCONF;

static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the rec_ state */
static _Thread_local bool rec_lock_owner; /* this thread holds rec_lock */
static struct cl_log *rec_log;       /* the open call log, or NULL */
static struct cl_queue *rec_queue;   /* its writer thread */
static uint8_t (*rec_seen)[16];      /* hashes of the buffers handed to the writer */
static size_t rec_seen_n, rec_seen_cap; /* used and allocated entries (a power of two) */
static char *rec_path;               /* its file name (expanded) */
static char *rec_env_last;           /* environment last written to the log */
static char *rec_failed_path;        /* a file that could not be opened: not tried again */
static uint64_t rec_keep_max = CL_KEEP_DEFAULT; /* output bytes kept */
static const char *rec_recorder = "trnemu libnrt.so.1"; /* stored in log_meta */
static bool rec_front_shim;  /* this is libnrt-record.so, in front of a runtime */
static const struct cl_checkpoint_ops *rec_ckpt; /* checkpoints of the library, or NULL */
static bool rec_handlers;            /* atexit / atfork installed */
static _Atomic int64_t rec_seq;      /* next sequence number */
static _Atomic uint32_t rec_threads; /* threads seen so far */
static _Thread_local uint32_t rec_tid; /* this thread's id + 1 (0: none yet) */

/* rec_lock, with its owner noted for rec_lock_held. */
static void rec_lock_take(void)
{
    pthread_mutex_lock(&rec_lock);
    rec_lock_owner = true;
}

static void rec_lock_drop(void)
{
    assert(rec_lock_owner);
    rec_lock_owner = false;
    pthread_mutex_unlock(&rec_lock);
}

/* Does this thread hold rec_lock? For assert() only. */
static inline bool rec_lock_held(void)
{
    return rec_lock_owner;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cl_set_checkpoint_ops(const struct cl_checkpoint_ops *ops)
{
    rec_ckpt = ops;
}

void cl_set_recorder(const char *name)
{
    rec_recorder = name;
}

void cl_set_front_shim(void)
{
    rec_front_shim = true;
}

void cl_request_signal_snapshot(void)
{
    atomic_fetch_or(&cl_hooks, CL_H_SIGNAL);
}

/* ---- the environment ---- */

bool cl_env_relevant(const char *name)
{
    static const char *const skip[] = {
        "TRNEMU_RECORD", "TRNEMU_SNAPSHOT_", "TRNEMU_RESTORE", "TRNEMU_INSTANCE_NAME",
        "TRNEMU_SHM_DIR", "TRNEMU_LIBNRT", "TRNEMU_TEST_", "TRNEMU_EXAMPLES_DIR",
        "NEURON_RT_LOG_LEVEL",
    };
    if (strncmp(name, "NEURON_", 7) != 0 && strncmp(name, "TRNEMU_", 7) != 0)
        return false;
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strncmp(name, skip[i], strlen(skip[i])) == 0)
            return false;
    return true;
}

static int env_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *cl_env_current(void)
{
    size_t n = 0, len = 1;
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (cl_env_relevant(*e)) {
            n++;
            len += strlen(*e) + 1;
        }
    const char **v = malloc((n ? n : 1) * sizeof *v);
    char *out = malloc(len);
    if (v == NULL || out == NULL) {
        free(v);
        free(out);
        return NULL;
    }
    size_t k = 0;
    for (char **e = environ; e != NULL && *e != NULL && k < n; e++)
        if (cl_env_relevant(*e))
            v[k++] = *e;
    qsort(v, k, sizeof *v, env_cmp);
    char *p = out;
    for (size_t i = 0; i < k; i++) {
        size_t l = strlen(v[i]);
        memcpy(p, v[i], l);
        p[l] = '\n';
        p += l + 1;
    }
    *p = '\0';
    free(v);
    return out;
}

/* ---- configuration ---- */

/* TRNEMU_RECORD with %p (pid), %r (RANK, else 0) and %% expanded. */
static char *rec_expand(const char *pattern)
{
    size_t cap = strlen(pattern) + 64, n = 0;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    for (const char *s = pattern; *s != '\0' && n + 32 < cap; s++) {
        if (s[0] == '%' && (s[1] == 'p' || s[1] == 'r' || s[1] == '%')) {
            const char *rank = getenv("RANK");
            if (s[1] == 'p')
                n += (size_t)snprintf(out + n, cap - n, "%ld", (long)getpid());
            else if (s[1] == 'r')
                n += (size_t)snprintf(out + n, cap - n, "%s", rank && *rank ? rank : "0");
            else
                out[n++] = '%';
            s++;
        } else {
            out[n++] = *s;
        }
    }
    out[n] = '\0';
    return out;
}

/* Is libnrt-record.so in front of this library recording already? */
static bool rec_shim_in_front(void)
{
    const char *pid = getenv("TRNEMU_RECORD_SHIM_PID");
    return pid != NULL && strtol(pid, NULL, 10) == (long)getpid();
}

static void rec_close_locked(void)
{
    assert(rec_lock_held());
    cl_queue_stop(rec_queue); /* writes what is queued */
    rec_queue = NULL;
    if (rec_log != NULL && rec_ckpt != NULL && rec_ckpt->release != NULL)
        rec_ckpt->release(rec_path);
    free(rec_seen);
    rec_seen = NULL;
    rec_seen_n = rec_seen_cap = 0;
    cl_log_close(rec_log);
    rec_log = NULL;
    free(rec_path);
    rec_path = NULL;
    free(rec_env_last);
    rec_env_last = NULL;
}

static void rec_atexit(void)
{
    rec_lock_take();
    atomic_store(&cl_hooks, 0);
    rec_close_locked();
    free(rec_failed_path);
    rec_failed_path = NULL;
    rec_lock_drop();
    if (rec_ckpt != NULL)
        rec_ckpt->shutdown(false);
}

static void rec_fork_prepare(void)
{
    rec_lock_take();
}

static void rec_fork_parent(void)
{
    rec_lock_drop();
}

/* A forked child records nothing: the parent's connections are not its own. */
static void rec_fork_child(void)
{
    cl_log_abandon(rec_log);
    rec_log = NULL;
    rec_queue = NULL; /* its thread is the parent's */
    free(rec_path);
    rec_path = NULL;
    atomic_store(&cl_hooks, 0);
    rec_lock_drop();
    if (rec_ckpt != NULL)
        rec_ckpt->shutdown(true);
}

static void rec_open_locked(const char *want)
{
    assert(rec_lock_held());
    char *path = want != NULL ? rec_expand(want) : NULL;
    if (path != NULL && rec_path != NULL && strcmp(path, rec_path) == 0) {
        free(path);
        return; /* same file: keep recording into it */
    }
    rec_close_locked();
    if (path == NULL || (rec_failed_path != NULL && strcmp(path, rec_failed_path) == 0)) {
        free(path);
        return;
    }
    long owner = cl_log_owner(path);
    if (owner != 0) {
        LOG_ERROR("STORE", "TRNEMU_RECORD=%s: process %ld records into that file; not recording "
                  "(put %%p or %%r in the name for a file per process)", path, owner);
        free(path);
        return;
    }
    bool prepared = rec_ckpt != NULL && rec_ckpt->prepare != NULL && rec_ckpt->prepare(path);
    rec_path = path;
    if (cl_log_open(path, rec_recorder, true, !prepared, &rec_log) == NRT_SUCCESS &&
        cl_queue_start(rec_log, &rec_queue) == NRT_SUCCESS) {
        LOG_INFO("STORE", "recording every call into %s", path);
        return;
    }
    LOG_ERROR("STORE", "TRNEMU_RECORD=%s: not recording", path);
    if (rec_log == NULL && prepared && rec_ckpt->release != NULL)
        rec_ckpt->release(path);
    free(rec_failed_path);
    rec_failed_path = strdup(path);
    rec_close_locked();
}

/* The longest TRNEMU_RECORD path (docs/env.md: text of at most 4095 bytes). */
#define REC_PATH_MAX 4095u

/* TRNEMU_RECORD_OUTPUT_BYTES as env_parse_uint reads it (decimal, or hex
 * after 0x; "010" is ten). The call log cannot link devices/'s parser; a
 * malformed value keeps the default here and fails nrt_init's check of the
 * variable, which says so in one line. */
static uint64_t rec_keep_bytes(const char *s)
{
    if (s == NULL || !isdigit((unsigned char)*s))
        return CL_KEEP_DEFAULT;
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    return errno != 0 || *end != '\0' ? CL_KEEP_DEFAULT : (uint64_t)v;
}

static void rec_configure_locked(void)
{
    assert(rec_lock_held());
    const char *want = getenv("TRNEMU_RECORD");
    if (want != NULL && (*want == '\0' || strlen(want) > REC_PATH_MAX))
        want = NULL; /* too long: nrt_init's check of the variable says so, in one line */
    if (want != NULL && rec_front_shim) {
        char pid[24];
        snprintf(pid, sizeof pid, "%ld", (long)getpid());
        setenv("TRNEMU_RECORD_SHIM_PID", pid, 1);
    } else if (want != NULL && rec_shim_in_front()) {
        LOG_INFO("STORE", "libnrt-record.so records this process; trnemu's libnrt does not");
        want = NULL;
    }
    rec_open_locked(want);
    rec_keep_max = rec_keep_bytes(getenv("TRNEMU_RECORD_OUTPUT_BYTES"));
    bool ckpt = rec_ckpt != NULL && rec_ckpt->configure();
    if (!rec_handlers) {
        rec_handlers = true;
        atexit(rec_atexit);
        pthread_atfork(rec_fork_prepare, rec_fork_parent, rec_fork_child);
    }
    int keep_sig = atomic_load(&cl_hooks) & CL_H_SIGNAL;
    atomic_store(&cl_hooks, (rec_log ? CL_H_RECORD : 0) | (ckpt ? CL_H_CKPT : 0) | keep_sig);
}

void cl_reconfigure(void)
{
    rec_lock_take();
    rec_configure_locked();
    rec_lock_drop();
}

/* The writer failed: stop recording (rec_lock held). */
static void rec_failed_locked(int64_t seq)
{
    assert(rec_lock_held());
    LOG_ERROR("STORE", "recording into %s stopped at call %lld: %s", rec_path, (long long)seq,
              rec_log != NULL ? cl_log_error(rec_log) : "no log open");
    atomic_fetch_and(&cl_hooks, ~CL_H_RECORD);
    rec_close_locked();
}

/* Wait until the writer has written and committed everything. */
static void rec_drain_locked(int64_t seq)
{
    assert(rec_lock_held());
    if (rec_queue != NULL && !cl_queue_drain(rec_queue))
        rec_failed_locked(seq);
}

void cl_log_hold(void)
{
    rec_lock_take();
    rec_drain_locked(-1);
}

void cl_log_release(void)
{
    rec_lock_drop();
}

/* ---- the calls ---- */

void cl_call_begin(struct cl_call *c, enum cl_fn_id id, const uint64_t *argv,
                   const uint64_t *sizes)
{
    c->id = -1;
    int h = atomic_load(&cl_hooks);
    if (h & CL_H_UNCONF) {
        rec_lock_take();
        if (atomic_load(&cl_hooks) & CL_H_UNCONF)
            rec_configure_locked();
        rec_lock_drop();
        h = atomic_load(&cl_hooks);
    }
    if (h == 0)
        return;
    const struct cl_fn *fn = &cl_fns[id];
    c->id = (int)id;
    c->argv = argv;
    c->sizes = sizes;
    c->seq = atomic_fetch_add(&rec_seq, 1);
    if (rec_tid == 0)
        rec_tid = atomic_fetch_add(&rec_threads, 1) + 1;
    c->thread = rec_tid - 1;
    for (uint32_t i = 0; i < fn->nargs; i++) {
        const struct cl_arg *a = &fn->args[i];
        const void *p = (const void *)(uintptr_t)argv[i];
        c->pre[i] = 0;
        if (p != NULL && (a->role == CL_R_HINOUT || a->role == CL_R_IOVAL))
            c->pre[i] = cl_load(p, a->role == CL_R_HINOUT ? CL_T_PTR : a->ptype);
    }
    if ((h & CL_H_SIGNAL) && (atomic_fetch_and(&cl_hooks, ~CL_H_SIGNAL) & CL_H_SIGNAL) &&
        rec_ckpt != NULL)
        rec_ckpt->before(c, true);
    if ((fn->flags & CL_F_EXEC) && (h & CL_H_CKPT))
        rec_ckpt->before(c, false);
    c->t0 = now_ns();
}

NRT_STATUS cl_write_call(struct cl_log *log, const struct cl_call *c, const char *env)
{
    const struct cl_fn *fn = &cl_fns[c->id];
    bool done = fn->ret != CL_RET_STATUS || (NRT_STATUS)(int64_t)c->ret == NRT_SUCCESS;
    struct cl_bytes blob = {0};
    struct cl_buf *bufs = NULL;
    size_t nbufs = 0;
    if (!cl_encode(c, fn, c->ret, done, rec_keep_max, &blob, &bufs, &nbufs)) {
        LOG_ERROR("STORE", "%s: out of memory while recording %s", cl_log_path(log), fn->name);
        return NRT_RESOURCE;
    }
    struct cl_row row = {
        .seq = c->seq,
        .thread = c->thread,
        .fn = fn->name,
        .ret = (int64_t)c->ret,
        .args = blob.p,
        .args_len = blob.n,
        .ns = c->ns,
        .bufs = bufs,
        .nbufs = nbufs,
        .env = env,
    };
    NRT_STATUS st = cl_log_write(log, &row);
    cl_bytes_free(&blob);
    cl_bufs_free(bufs, nbufs);
    return st;
}

/* The environment to log with call c if it changed (rec_lock held): a
 * copy for the row, or NULL. */
static char *rec_env_change(const struct cl_fn *fn)
{
    assert(rec_lock_held());
    if (!(fn->flags & (CL_F_ENV | CL_F_INIT)) && rec_env_last != NULL)
        return NULL;
    char *env = cl_env_current();
    if (env == NULL || (rec_env_last != NULL && strcmp(env, rec_env_last) == 0)) {
        free(env);
        return NULL;
    }
    free(rec_env_last);
    rec_env_last = env;
    return strdup(env);
}

/* Was a buffer with this hash handed to the writer already? If not, note
 * it (false). rec_lock held. */
static bool rec_seen_add(const uint8_t hash[16])
{
    assert(rec_lock_held());
    if ((rec_seen_n + 1) * 2 > rec_seen_cap) {
        size_t cap = rec_seen_cap ? rec_seen_cap * 2 : 1024;
        uint8_t (*v)[16] = calloc(cap, 16);
        if (v == NULL)
            return false;
        for (size_t i = 0; i < rec_seen_cap; i++) {
            uint64_t h;
            memcpy(&h, rec_seen[i], 8);
            if (h == 0)
                continue;
            size_t j = (size_t)h & (cap - 1);
            while (memcmp(v[j], (uint8_t[16]){0}, 16) != 0)
                j = (j + 1) & (cap - 1);
            memcpy(v[j], rec_seen[i], 16);
        }
        free(rec_seen);
        rec_seen = v;
        rec_seen_cap = cap;
    }
    uint64_t h;
    memcpy(&h, hash, 8);
    size_t j = (size_t)h & (rec_seen_cap - 1);
    while (memcmp(rec_seen[j], (uint8_t[16]){0}, 16) != 0) {
        if (memcmp(rec_seen[j], hash, 16) == 0)
            return true;
        j = (j + 1) & (rec_seen_cap - 1);
    }
    if (h != 0) {
        memcpy(rec_seen[j], hash, 16);
        rec_seen_n++;
    }
    return false;
}

/* Give the row its own copy of every buffer the writer has not seen (the
 * caller's memory is the program's again when the call returns). */
static bool rec_own_buffers(struct cl_item *it, uint64_t *bytes)
{
    *bytes = 0;
    for (size_t i = 0; i < it->nbufs; i++) {
        struct cl_buf *b = &it->bufs[i];
        if (b->data == NULL || b->owned)
            continue;
        if (rec_seen_add(b->hash)) {
            b->data = NULL; /* stored once already: the hash names it */
            continue;
        }
        void *copy = malloc(b->size ? b->size : 1);
        if (copy == NULL)
            return false;
        memcpy(copy, b->data, b->size);
        b->data = copy;
        b->owned = true;
        *bytes += b->size;
    }
    return true;
}

/* Hand the returned call c to the writer (rec_lock held). */
static void rec_push_locked(const struct cl_call *c)
{
    assert(rec_lock_held());
    const struct cl_fn *fn = &cl_fns[c->id];
    if (rec_queue == NULL)
        return;
    bool done = fn->ret != CL_RET_STATUS || (NRT_STATUS)(int64_t)c->ret == NRT_SUCCESS;
    struct cl_item *it = calloc(1, sizeof *it);
    uint64_t bytes = 0;
    bool ok = it != NULL &&
              cl_encode(c, fn, c->ret, done, rec_keep_max, &it->blob, &it->bufs, &it->nbufs) &&
              rec_own_buffers(it, &bytes);
    if (ok) {
        it->env = rec_env_change(fn);
        it->row = (struct cl_row){
            .seq = c->seq, .thread = c->thread, .fn = fn->name, .ret = (int64_t)c->ret,
            .ns = c->ns,
        };
        ok = cl_queue_push(rec_queue, it, bytes);
        it = NULL;
    }
    cl_item_free(it);
    if (!ok) {
        rec_failed_locked(c->seq);
        return;
    }
    if (fn->flags & CL_F_CLOSE)
        rec_drain_locked(c->seq); /* after nrt_close the file is complete */
}

void cl_call_end(struct cl_call *c, uint64_t ret)
{
    if (c->id < 0)
        return;
    c->ns = now_ns() - c->t0;
    c->ret = ret;
    const struct cl_fn *fn = &cl_fns[c->id];
    if (atomic_load(&cl_hooks) & CL_H_RECORD) {
        rec_lock_take();
        rec_push_locked(c);
        rec_lock_drop();
    }
    if ((fn->flags & CL_F_EXEC) && rec_ckpt != NULL && (atomic_load(&cl_hooks) & CL_H_CKPT))
        rec_ckpt->after(c, (NRT_STATUS)(int64_t)ret);
}
