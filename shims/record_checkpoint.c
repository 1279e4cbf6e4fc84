/*
 * record_checkpoint.c: the snapshots libnrt.so.1 takes at ABI call
 * boundaries, beside the call log (store/calllog_rec.c calls these hooks):
 *
 *   TRNEMU_SNAPSHOT_ON_ERROR=FILE  before every execution a snapshot goes
 *       to FILE; it is kept, with the execution's call, only when the
 *       execution fails (any NRT_EXEC_* status: NaN/Inf, out of bounds,
 *       deadlock; a timeout or a hardware error), else dropped. FILE is
 *       replaced by the first execution of the process and removed at exit
 *       when nothing failed. `trnemu replay FILE` re-runs the failing call.
 *   TRNEMU_SNAPSHOT_AT=N           a snapshot before the Nth execution
 *   SIGUSR1                        a snapshot at the next ABI call
 *   TRNEMU_SNAPSHOT_FILE=FILE      where the last two go (default: the
 *       TRNEMU_RECORD file when recording, else trnemu-PID.db)
 * %p in a file name becomes the pid. SIGUSR1 is taken only while one of
 * these variables or TRNEMU_RECORD is set and the program has no SIGUSR1
 * handler of its own. A snapshot that cannot be saved is one log line; the
 * program goes on.
 */
#include <assert.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "devices/config/env.h"
#include "devices/runtime/runtime.h"
#include "emu/log.h"
#include "store/calllog.h"
#include "store/snap_query.h"
#include "store/snapshot.h"

static pthread_mutex_t ck_lock = PTHREAD_MUTEX_INITIALIZER; /* guards the ck_ state */
static char *ck_err_path;          /* TRNEMU_SNAPSHOT_ON_ERROR, expanded */
static int64_t ck_at = -1;         /* TRNEMU_SNAPSHOT_AT (1-based), -1: off */
static char *ck_file_path;         /* destination of AT / SIGUSR1 snapshots */
static _Atomic int64_t ck_execs;   /* executions seen */
static struct snap_db *ck_rec_db;  /* the TRNEMU_RECORD file as a snapshot file */
static char *ck_rec_path;          /* its name */
static struct snap_db *ck_err_db;  /* the on-error file (when not the record file) */
static struct cl_log *ck_err_log;  /* its call log */
static bool ck_err_kept;           /* a failure was kept in the on-error file */
static struct snap_db *ck_file_db; /* the AT / SIGUSR1 file (when not the record file) */
static bool ck_signal_armed;       /* our SIGUSR1 handler is installed */
static _Thread_local int64_t ck_pending = -1; /* on-error snapshot of this thread's execution */

static _Thread_local bool ck_lock_owner; /* this thread holds ck_lock */

/* ck_lock, taken and dropped with its holder noted for ck_held. */
static void ck_lock_take(void)
{
    pthread_mutex_lock(&ck_lock);
    ck_lock_owner = true;
}

static void ck_lock_drop(void)
{
    assert(ck_lock_owner);
    ck_lock_owner = false;
    pthread_mutex_unlock(&ck_lock);
}

/* Does this thread hold ck_lock? For assert() only. */
static inline bool ck_held(void)
{
    return ck_lock_owner;
}

/* A file name with %p replaced by the pid (malloc'd). */
static char *ck_expand(const char *pattern)
{
    size_t cap = strlen(pattern) + 32, n = 0;
    char *out = malloc(cap);
    for (const char *s = pattern; out != NULL && *s != '\0' && n + 24 < cap; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            n += (size_t)snprintf(out + n, cap - n, "%ld", (long)getpid());
            s++;
        } else {
            out[n++] = *s;
        }
    }
    if (out != NULL)
        out[n] = '\0';
    return out;
}

static char *ck_env_path(const char *var)
{
    const char *v = getenv(var);
    return v != NULL && *v != '\0' ? ck_expand(v) : NULL;
}

static bool ck_same(const char *a, const char *b)
{
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static void ck_on_sigusr1(int sig)
{
    (void)sig;
    cl_request_signal_snapshot();
}

/* Take SIGUSR1 unless the program handles it itself. */
static void ck_arm_signal(void)
{
    struct sigaction old;
    if (ck_signal_armed || sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
        (old.sa_flags & SA_SIGINFO))
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ck_on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    ck_signal_armed = sigaction(SIGUSR1, &sa, NULL) == 0;
}

static bool ck_configure(void)
{
    ck_lock_take();
    free(ck_err_path);
    free(ck_file_path);
    ck_err_path = ck_env_path("TRNEMU_SNAPSHOT_ON_ERROR");
    ck_file_path = ck_env_path("TRNEMU_SNAPSHOT_FILE");
    /* the one parser's rules; this runs before nrt_init's check of the
     * variable, which refuses a malformed value in one line */
    const char *at_s = getenv("TRNEMU_SNAPSHOT_AT");
    uint64_t at;
    ck_at = -1;
    if (at_s != NULL && env_parse_uint(at_s, 1, INT64_MAX, &at))
        ck_at = (long long)at;
    const char *rec = getenv("TRNEMU_RECORD");
    bool any = ck_err_path != NULL || ck_at > 0 || ck_file_path != NULL ||
               (rec != NULL && *rec != '\0');
    if (any)
        ck_arm_signal();
    bool per_exec = ck_err_path != NULL || ck_at > 0; /* read under the lock */
    ck_lock_drop();
    return per_exec;
}

static bool ck_prepare(const char *path)
{
    ck_lock_take();
    cl_db_unlink(path);
    struct snap_db *db = NULL;
    bool ok = snap_open(path, true, &db) == NRT_SUCCESS;
    if (ok) {
        snap_close(ck_rec_db);
        free(ck_rec_path);
        ck_rec_db = db;
        ck_rec_path = strdup(path);
    }
    ck_lock_drop();
    return ok;
}

static void ck_release(const char *path)
{
    ck_lock_take();
    if (ck_same(path, ck_rec_path)) {
        snap_close(ck_rec_db);
        ck_rec_db = NULL;
        free(ck_rec_path);
        ck_rec_path = NULL;
    }
    ck_lock_drop();
}

/* Save a snapshot of the runtime into db (ck_lock held). */
static int64_t ck_save(struct snap_db *db, const char *path, const char *reason, int64_t seq)
{
    assert(ck_held());
    if (db == NULL || rt_enter() != NRT_SUCCESS)
        return -1;
    int64_t id = -1;
    NRT_STATUS st = snap_save_quiesced(db, reason, seq, &id);
    rt_leave();
    if (st != NRT_SUCCESS) {
        LOG_ERROR("STORE", "%s: the %s snapshot before call %" PRId64 " was not saved", path,
                  reason, seq);
        return -1;
    }
    if (strcmp(reason, "error") == 0)   /* said by ck_after when the call fails */
        LOG_INFO("STORE", "%s: snapshot %" PRId64 " (%s) before call %" PRId64, path, id,
                 reason, seq);
    else   /* asked for (TRNEMU_SNAPSHOT_AT, SIGUSR1): always say where it went */
        LOG_INFO_SHOWN("STORE", "snapshot %" PRId64 " (%s) before call %" PRId64 " written to %s "
                       "(trnemu snapshot list %s)", id,
                       strcmp(reason, "at") == 0 ? "TRNEMU_SNAPSHOT_AT" : "SIGUSR1", seq, path,
                       path);
    return id;
}

/* The file AT / SIGUSR1 snapshots go to (ck_lock held). */
static struct snap_db *ck_file(const char **path)
{
    assert(ck_held());
    if (ck_file_path == NULL && ck_rec_db != NULL) {
        *path = ck_rec_path;
        return ck_rec_db;
    }
    if (ck_file_path == NULL)
        ck_file_path = ck_expand("trnemu-%p.db");
    *path = ck_file_path;
    if (ck_same(ck_file_path, ck_rec_path))
        return ck_rec_db;
    if (ck_file_db == NULL && ck_file_path != NULL &&
        snap_open(ck_file_path, true, &ck_file_db) != NRT_SUCCESS)
        ck_file_db = NULL;
    return ck_file_db;
}

/* The on-error file, made on first use (ck_lock held). */
static struct snap_db *ck_err(void)
{
    assert(ck_held());
    if (ck_same(ck_err_path, ck_rec_path))
        return ck_rec_db;
    if (ck_err_db != NULL)
        return ck_err_db;
    long owner = cl_log_owner(ck_err_path);
    if (owner != 0) {
        LOG_ERROR("STORE", "TRNEMU_SNAPSHOT_ON_ERROR=%s: process %ld uses that file; no snapshots "
                  "(put %%p in the name for a file per process)", ck_err_path, owner);
        free(ck_err_path);
        ck_err_path = NULL;
        return NULL;
    }
    cl_db_unlink(ck_err_path);
    if (snap_open(ck_err_path, true, &ck_err_db) != NRT_SUCCESS) {
        ck_err_db = NULL;
    } else if (cl_log_open(ck_err_path, "trnemu libnrt.so.1 (snapshot on error)", false, false,
                           &ck_err_log) != NRT_SUCCESS) {
        snap_close(ck_err_db);
        ck_err_db = NULL;
    }
    if (ck_err_db == NULL) {
        LOG_ERROR("STORE", "TRNEMU_SNAPSHOT_ON_ERROR=%s: cannot make the file; no snapshots",
                  ck_err_path);
        free(ck_err_path);
        ck_err_path = NULL;
    }
    return ck_err_db;
}

/* The call log is held (committed, no writer) around every use of the
 * snapshot files: the record file may be one of them, and SQLite lets one
 * connection write at a time. Lock order: the log, then ck_lock. */
static void ck_before(const struct cl_call *c, bool signal)
{
    cl_log_hold();
    ck_lock_take();
    const char *path = NULL;
    if (signal) {
        struct snap_db *db = ck_file(&path);
        ck_save(db, path, "signal", c->seq);
    } else {
        int64_t n = atomic_fetch_add(&ck_execs, 1) + 1;
        if (n == ck_at) {
            struct snap_db *db = ck_file(&path);
            ck_save(db, path, "at", c->seq);
        }
        ck_pending = -1;
        struct snap_db *err = ck_err_path != NULL ? ck_err() : NULL;
        if (err != NULL)
            ck_pending = ck_save(err, ck_err_path, "error", c->seq);
    }
    ck_lock_drop();
    cl_log_release();
}

/* Did the execution fail in a way worth a bug report? */
static bool ck_is_failure(NRT_STATUS st)
{
    return (st >= NRT_EXEC_BAD_INPUT && st < NRT_COLL_PENDING) || st >= NRT_EXEC_HW_ERR_COLLECTIVES ||
           st == NRT_EXEC_UNIT_UNRECOVERABLE || st == NRT_TIMEOUT || st == NRT_HW_ERROR;
}

static void ck_after(const struct cl_call *c, NRT_STATUS status)
{
    int64_t id = ck_pending;
    ck_pending = -1;
    if (id < 0)
        return;
    cl_log_hold();
    ck_lock_take();
    struct snap_db *db = ck_err();
    if (db != NULL && !ck_is_failure(status)) {
        /* Not needed: its chunks stay in the file for the next save. */
        if (snapq_remove(db, id) != NRT_SUCCESS)
            LOG_WARN("STORE", "%s: the unneeded snapshot %" PRId64 " stays", ck_err_path, id);
    } else if (db != NULL) {
        NRT_STATUS st = NRT_SUCCESS;
        if (ck_err_log != NULL) {
            char *env = cl_env_current();
            st = cl_write_call(ck_err_log, c, env != NULL ? env : "");
            if (st == NRT_SUCCESS)
                st = cl_log_commit(ck_err_log);
            free(env);
        }
        ck_err_kept = ck_err_kept || st == NRT_SUCCESS;
        if (st == NRT_SUCCESS)
            LOG_ERROR("STORE", "%s failed with status %d: snapshot %" PRId64 " and the call are "
                      "in %s (trnemu replay %s)", cl_fns[c->id].name, (int)status, id,
                      ck_err_path, ck_err_path);
        else
            LOG_ERROR("STORE", "%s failed with status %d: snapshot %" PRId64 " is in %s, but the "
                      "call could not be written: %s", cl_fns[c->id].name, (int)status, id,
                      ck_err_path, ck_err_log != NULL ? cl_log_error(ck_err_log) : "no call log");
    }
    ck_lock_drop();
    cl_log_release();
}

static void ck_shutdown(bool in_child)
{
    if (in_child) {
        /* The parent's connections (and the lock, which another thread may
         * have held at the fork) are not the child's: forget them. */
        pthread_mutex_init(&ck_lock, NULL);
        ck_lock_owner = false;
        cl_log_abandon(ck_err_log);
        ck_err_log = NULL;
        ck_err_db = ck_file_db = ck_rec_db = NULL;
        free(ck_err_path);
        ck_err_path = NULL;
        return;
    }
    ck_lock_take();
    bool drop_file = ck_err_db != NULL && !ck_err_kept;
    cl_log_close(ck_err_log);
    uint64_t chunks = 0, bytes = 0;
    if (ck_err_db != NULL && ck_err_kept)
        snapq_gc(ck_err_db, &chunks, &bytes); /* what the dropped snapshots left */
    snap_close(ck_err_db);
    snap_close(ck_file_db);
    ck_err_log = NULL;
    ck_err_db = ck_file_db = NULL;
    if (drop_file)
        cl_db_unlink(ck_err_path); /* nothing failed: leave no file behind */
    ck_lock_drop();
}

static const struct cl_checkpoint_ops ck_ops = {
    .configure = ck_configure,
    .prepare = ck_prepare,
    .release = ck_release,
    .before = ck_before,
    .after = ck_after,
    .shutdown = ck_shutdown,
};

__attribute__((constructor)) static void ck_register(void)
{
    cl_set_checkpoint_ops(&ck_ops);
}
