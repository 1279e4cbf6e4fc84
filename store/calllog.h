/*
 * calllog.h: the call log: every ABI call recorded in order with its
 * arguments, the bytes of the buffers it reads, its status and a hash of
 * the buffers it writes; and the reader `trnemu replay` uses.
 *
 * Everything is driven by one table, abi/calls.def, from which
 * abi/gen_calllog.py generates the descriptors (cl_fns), the exported
 * recording wrappers of libnrt.so.1 and of libnrt-record.so, and the
 * renaming of trnemu's own implementations. A wrapper costs one relaxed
 * load and a predicted branch while nothing is recorded (cl_hooks == 0).
 *
 * The log lives in a SQLite file next to (or without) the snapshots; its
 * tables all start with log_ (docs/snapshot-calllog.md has the schema).
 * This module needs only SQLite, xxHash and the table: libnrt-record.so
 * links it without the emulator.
 */
#ifndef TRNEMU_STORE_CALLLOG_H
#define TRNEMU_STORE_CALLLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"
#include "calllog_ids.h"  /* generated from abi/calls.def */

/* Marks a generated wrapper that the library exports. */
#define CL_EXPORT __attribute__((visibility("default")))

/* Most arguments any table function takes. */
#define CL_MAX_ARGS 8

/* Version of the log tables and of the argument encoding. */
#define CL_FORMAT_VERSION 1

/* How an argument or return value travels (libffi type on replay). */
enum cl_type {
    CL_T_VOID = 0, /* no value (return type only) */
    CL_T_BOOL,     /* bool */
    CL_T_I32,      /* int, int32_t, enums */
    CL_T_U32,      /* uint32_t */
    CL_T_I64,      /* int64_t */
    CL_T_U64,      /* uint64_t, size_t */
    CL_T_PTR,      /* any pointer */
};

/* What the call does with an argument (the roles of calls.def). */
enum cl_role {
    CL_R_VAL = 0,   /* plain value */
    CL_R_STR,       /* NUL-terminated string read by the call */
    CL_R_HIN,       /* handle passed in */
    CL_R_HOUT,      /* T**: the call stores a new handle */
    CL_R_HINOUT,    /* T**: the call reads a handle and stores one */
    CL_R_IN,        /* buffer read by the call */
    CL_R_OUT,       /* buffer written by the call */
    CL_R_OVAL,      /* scalar stored through the pointer */
    CL_R_IOVAL,     /* scalar read and stored through the pointer */
    CL_R_BATCH_IN,  /* nrt_tensor_batch_t array, buffers read */
    CL_R_BATCH_OUT, /* nrt_tensor_batch_t array, buffers written */
    CL_R_RAW,       /* an address meaningless in another process */
    CL_R_OPAQUE,    /* a structure the log does not look into */
    CL_R_CB,        /* a callback function pointer */
};

/* Kinds of handle (the first three match enum handle_kind in devices/). */
enum cl_kind {
    CL_K_NONE = 0,
    CL_K_TENSOR = 1,   /* nrt_tensor_t */
    CL_K_TSET = 2,     /* nrt_tensor_set_t */
    CL_K_MODEL = 3,    /* nrt_model_t */
    CL_K_TINFO,        /* nrt_tensor_info_array_t */
    CL_K_COMM,         /* nrt_async_sendrecv_comm_t */
    CL_K_REQ,          /* nrt_async_sendrecv_request_t */
    CL_K_TRACKER,      /* nrta_error_tracker_t */
    CL_K_CCCTX,        /* nrt_cc_context_t */
    CL_K_INSPECT,      /* nrt_inspect_config_t */
    CL_K_PROFOPT,      /* nrt_profile_continuous_options_t */
    CL_K_SYSTRACE,     /* nrt_sys_trace_config_t */
    CL_K_SYSFETCH,     /* nrt_sys_trace_fetch_options_t */
    CL_K_MEM,          /* memory the runtime returned (names, trace text) */
};

/* What a function returns. */
enum cl_ret {
    CL_RET_VOID = 0, /* nothing */
    CL_RET_STATUS,   /* NRT_STATUS: outputs are recorded only on success */
    CL_RET_INT,      /* an integer (size_t) */
    CL_RET_PTR,      /* a pointer: recorded, never compared */
    CL_RET_STR,      /* a constant string: its text is recorded */
};

/* cl_arg.flags */
#define CL_A_NOCMP 0x1 /* recorded, never compared */
#define CL_A_KEEP 0x2  /* the runtime keeps using the memory after the call */

/* cl_fn.flags */
#define CL_F_INIT 0x1        /* nrt_init: the configuration is read again */
#define CL_F_CLOSE 0x2       /* nrt_close: the log is committed after it */
#define CL_F_EXEC 0x4        /* an execution: checkpoints fire before it */
#define CL_F_ENV 0x8         /* changed NEURON_ / TRNEMU_ variables are logged */
#define CL_F_NOREPLAY 0x10   /* replay stops here (cl_fn.why says why) */
#define CL_F_SKIP 0x20       /* replay skips the call (cl_fn.why says why) */
#define CL_F_NOTSHIM 0x40    /* trnemu's libnrt only, not libnrt-record.so */
#define CL_F_RET_NOCMP 0x80  /* the return value is not compared */

/* One argument of a table function. */
struct cl_arg {
    const char *name;  /* C parameter name */
    const char *ctype; /* C type as in the ABI header */
    uint8_t type;      /* enum cl_type */
    uint8_t role;      /* enum cl_role */
    uint8_t kind;      /* enum cl_kind, for handle roles */
    uint8_t ptype;     /* enum cl_type of the pointee (OVAL, IOVAL) */
    uint8_t flags;     /* CL_A_* */
};

/* One table function. */
struct cl_fn {
    const char *name;           /* exported symbol */
    const char *why;            /* reason for CL_F_NOREPLAY / CL_F_SKIP */
    const struct cl_arg *args;  /* nargs entries */
    uint8_t nargs;              /* number of arguments */
    uint8_t ret;                /* enum cl_ret */
    uint8_t ret_type;           /* enum cl_type of the return value */
    uint16_t flags;             /* CL_F_* */
};

/* The table (generated into calllog_table.c), indexed by enum cl_fn_id. */
extern const struct cl_fn cl_fns[CL_FN_COUNT];

/* Index of the table function called name, or -1. */
int cl_fn_lookup(const char *name);
/* Name of a handle kind ("tensor", ...). */
const char *cl_kind_name(int kind);
/* Width in bytes of a value of type t (0 for void). */
size_t cl_type_size(int t);

/* ---- Recording: called by the generated wrappers ---- */

/* Nonzero while anything needs the slow path: recording, a checkpoint
 * trigger, a pending SIGUSR1, or a configuration not read yet. */
extern _Atomic int cl_hooks;

static inline bool cl_hooks_quiet(void)
{
    return atomic_load_explicit(&cl_hooks, memory_order_relaxed) == 0;
}

/* One call in flight, on the wrapper's stack. */
struct cl_call {
    int id;                     /* enum cl_fn_id; -1 when not recorded */
    int64_t seq;                /* global sequence number of the call */
    uint64_t t0;                /* start time (CLOCK_MONOTONIC ns) */
    const uint64_t *argv;       /* argument values widened to 64 bits */
    const uint64_t *sizes;      /* byte sizes of the buffer arguments */
    uint64_t pre[CL_MAX_ARGS];  /* values behind HINOUT / IOVAL pointers before the call */
    uint64_t ret;               /* return value widened (set when the call returned) */
    uint64_t ns;                /* duration (set when the call returned) */
    uint32_t thread;            /* small id of the calling thread */
};

/* Read the recording configuration from the environment again (nrt_init). */
void cl_reconfigure(void);
void cl_call_begin(struct cl_call *c, enum cl_fn_id id, const uint64_t *argv,
                   const uint64_t *sizes);
void cl_call_end(struct cl_call *c, uint64_t ret);

/* libnrt-record.so: the next library's function id (dlsym RTLD_NEXT),
 * or missing when there is none. */
void (*cl_next_fn(enum cl_fn_id id, void (*missing)(void)))(void);
/* Log (once per function) that the next library lacks a function. */
void cl_next_missing(enum cl_fn_id id);

struct cl_log; /* a log file open for writing */

/* What the library around the recorder adds: libnrt.so.1 takes
 * checkpoints (store/snapshot.h); libnrt-record.so registers nothing. */
struct cl_checkpoint_ops {
    /* Read the checkpoint variables; true if any checkpoint is wanted. */
    bool (*configure)(void);
    /* A call log starts in path (replacing the file): make it a snapshot
     * file too. false if that failed (the log then replaces the file). */
    bool (*prepare)(const char *path);
    /* The call log in path ends (nrt_init named another file, or exit). */
    void (*release)(const char *path);
    /* Before an @exec call (or any call, for a pending SIGUSR1). */
    void (*before)(const struct cl_call *c, bool signal);
    /* After an @exec call returned status. */
    void (*after)(const struct cl_call *c, NRT_STATUS status);
    /* The process exits or forks: drop everything without saving. */
    void (*shutdown)(bool in_child);
};
void cl_set_checkpoint_ops(const struct cl_checkpoint_ops *ops);
/* Name of the library doing the recording, stored in the log. */
void cl_set_recorder(const char *name);

/* This process records through libnrt-record.so in front of the runtime
 * (record_shim.c says so at load): it marks the process so that a trnemu
 * libnrt behind it does not record the same calls again. */
void cl_set_front_shim(void);
/* Ask for a snapshot at the next ABI call boundary (async-signal-safe). */
void cl_request_signal_snapshot(void);
/* Wait until everything recorded is written and committed, and keep the
 * log still (no call is written) until cl_log_release:
 * a snapshot of the same file can then take SQLite's write lock. */
void cl_log_hold(void);
void cl_log_release(void);
/* Encode the returned call c and write it to log, with the environment
 * (env: "K=V" lines, NULL for none). */
NRT_STATUS cl_write_call(struct cl_log *log, const struct cl_call *c, const char *env);
/* Does the variable called name (NAME or NAME=VALUE) belong in the
 * recorded environment? NEURON_* and TRNEMU_* except those that name
 * files, instances or log levels. */
bool cl_env_relevant(const char *name);
/* The recorded environment of this process now: sorted "K=V\n" lines
 * (malloc'd; "" when none). NULL when out of memory. */
char *cl_env_current(void);
/* Read a value of type t (enum cl_type) at p, widened to 64 bits. */
uint64_t cl_load(const void *p, int t);

/* ---- Log files ---- */

/* A growable byte buffer. */
struct cl_bytes {
    uint8_t *p;   /* bytes */
    size_t n;     /* used */
    size_t cap;   /* allocated */
    bool failed;  /* an allocation failed: contents incomplete */
};
void cl_bytes_free(struct cl_bytes *b);

/* A buffer that belongs to a call row. */
struct cl_buf {
    uint32_t arg;        /* argument index (CL_MAX_ARGS: the return value) */
    uint32_t part;       /* entry within the argument (batch steps) */
    uint8_t dir;         /* 0: read by the call, 1: written by it */
    uint64_t size;       /* bytes */
    uint8_t hash[16];    /* XXH3-128 of the bytes, canonical (big-endian) */
    const void *data;    /* the bytes to store, NULL to store the hash only */
    bool owned;          /* data was malloc'd by the encoder (cl_bufs_free) */
};

/* A serialized call, ready for a log. */
struct cl_row {
    int64_t seq;             /* global sequence number */
    uint32_t thread;         /* small id of the calling thread */
    const char *fn;          /* function name */
    int64_t ret;             /* return value widened (0 for void) */
    const uint8_t *args;     /* encoded arguments (calllog_codec.c) */
    size_t args_len;         /* bytes in args */
    uint64_t ns;             /* duration */
    const struct cl_buf *bufs; /* buffers of the call */
    size_t nbufs;            /* entries in bufs */
    const char *env;         /* environment from this call on, NULL if unchanged */
};

/* Open path for writing the call log of this process; recorder names the
 * writer, from_start says the log starts with the program's first call.
 * replace: remove any existing file first; else the file (a snapshot file
 * just made) gets the log tables added. */
NRT_STATUS cl_log_open(const char *path, const char *recorder, bool from_start, bool replace,
                       struct cl_log **out);
/* The pid of another live process whose call log path is, or 0: a file
 * another process records into must not be replaced. */
long cl_log_owner(const char *path);
/* Remove a database file and its -wal / -shm companions. */
void cl_db_unlink(const char *path);
/* Commit what is pending and close. */
void cl_log_close(struct cl_log *log);
/* Drop the connection without touching the file (a forked child). */
void cl_log_abandon(struct cl_log *log);
NRT_STATUS cl_log_write(struct cl_log *log, const struct cl_row *row);
NRT_STATUS cl_log_commit(struct cl_log *log);
/* Calls written but not committed yet. */
size_t cl_log_pending(const struct cl_log *log);
const char *cl_log_path(const struct cl_log *log);
/* Why the last cl_log_write or cl_log_commit failed: they log nothing
 * themselves, so that the caller says it in its one line. */
const char *cl_log_error(const struct cl_log *log);

/* XXH3-128 of size bytes, canonical form. */
void cl_hash(const void *data, size_t size, uint8_t out[16]);

/* ---- The writer thread (calllog_queue.c) ---- */

/* A recorded call waiting for the writer; owns its bytes. */
struct cl_item {
    void *next;            /* queue link (emu/jobq.h), a struct cl_item */
    struct cl_row row;     /* the row (args, bufs, env set by the writer) */
    struct cl_bytes blob;  /* encoded arguments */
    struct cl_buf *bufs;   /* buffers, data owned (cl_bufs_free) */
    size_t nbufs;          /* entries in bufs */
    char *env;             /* environment change, or NULL */
};
void cl_item_free(struct cl_item *it);

struct cl_queue; /* a writer thread feeding one log */

NRT_STATUS cl_queue_start(struct cl_log *log, struct cl_queue **out);
/* Hand an item over (ownership passes; bytes: its buffer bytes, for
 * back-pressure). false when the writer failed (the item is freed). */
bool cl_queue_push(struct cl_queue *q, struct cl_item *it, uint64_t bytes);
/* Wait until everything pushed is written and committed; false if the
 * writer failed. */
bool cl_queue_drain(struct cl_queue *q);
/* Write what is queued, end the thread (the log stays open). */
void cl_queue_stop(struct cl_queue *q);

/* ---- Reading a log ---- */

struct cl_reader; /* a log file open for reading */

/* A call row as read back (pointers valid until the next step). */
struct cl_read_row {
    int64_t seq;           /* global sequence number */
    uint32_t thread;       /* calling thread */
    const char *fn;        /* function name */
    int64_t ret;           /* return value */
    const uint8_t *args;   /* encoded arguments */
    size_t args_len;       /* bytes in args */
    uint64_t ns;           /* duration when recorded */
};

/* Open a log read-only. NRT_INVALID (one log line) when the file is not a
 * SQLite database, has no call log, or has another format version. */
NRT_STATUS cl_reader_open(const char *path, struct cl_reader **out);
void cl_reader_close(struct cl_reader *r);
/* A value of the log's metadata (recorder, started, ...), or NULL. */
const char *cl_reader_meta(struct cl_reader *r, const char *key);
/* Smallest and largest recorded seq; false if the log holds no call. */
bool cl_reader_range(struct cl_reader *r, int64_t *first, int64_t *last);
/* Position before the first call with seq >= from. */
NRT_STATUS cl_reader_rewind(struct cl_reader *r, int64_t from);
/* Next call: 1 with *row filled, 0 at the end, -1 on a read error. */
int cl_reader_next(struct cl_reader *r, struct cl_read_row *row);
/* The buffer (seq, arg, part): size, hash and, if stored, the bytes
 * (malloc'd, hash verified). NRT_INVALID if absent or corrupt. */
NRT_STATUS cl_reader_buffer(struct cl_reader *r, int64_t seq, uint32_t arg, uint32_t part,
                            uint64_t *size, uint8_t hash[16], void **data);
/* Environment in force at call seq (latest log_env row <= seq): malloc'd
 * "K=V\n" lines, NULL if none recorded. */
char *cl_reader_env(struct cl_reader *r, int64_t seq);
/* A snapshot of the same file (the snapshot store's table): id >= 0 that
 * one, id < 0 the first one a recorded call follows. NRT_INVALID if none. */
NRT_STATUS cl_reader_snapshot(struct cl_reader *r, int64_t id, int64_t *id_out, int64_t *call_seq);
/* Is there a log_env row exactly at seq? */
bool cl_reader_env_changes_at(struct cl_reader *r, int64_t seq);

/* ---- Argument encoding (calllog_codec.c) ---- */


/* One step of a decoded batch. */
struct cl_dec_op {
    uint64_t offset;  /* byte offset in the tensor */
    uint64_t size;    /* bytes */
    bool present;     /* buffer pointer was non-NULL */
    uint32_t part;    /* its buffer's part number */
};

/* One decoded nrt_tensor_batch_t. */
struct cl_dec_batch {
    uint64_t tensor;        /* recorded handle */
    uint32_t nops;          /* steps */
    bool ops_present;       /* the ops pointer was non-NULL */
    struct cl_dec_op *ops;  /* nops entries */
};

/* One decoded argument. */
struct cl_dec_arg {
    uint64_t value;   /* VAL/HIN/RAW/OPAQUE/CB: the value */
    bool present;     /* pointer roles: the pointer was non-NULL */
    uint64_t pre;     /* HINOUT/IOVAL: value before the call */
    bool written;     /* HOUT/HINOUT/OVAL/IOVAL: post recorded; IN/OUT: bytes/hash recorded */
    uint64_t post;    /* HOUT/HINOUT/OVAL/IOVAL: value after the call */
    uint64_t size;    /* IN/OUT: bytes */
    const char *str;  /* STR: text (not NUL-terminated; points into the blob) */
    uint32_t len;     /* STR: length */
    uint64_t nbatches;            /* BATCH: entries */
    struct cl_dec_batch *batches; /* BATCH: the entries */
};

/* A decoded call. */
struct cl_dec {
    const struct cl_fn *fn;          /* its table entry */
    struct cl_dec_arg a[CL_MAX_ARGS]; /* arguments */
    bool ret_str_present;            /* CL_RET_STR: a string came back */
    const char *ret_str;             /* its text (points into the blob) */
    uint32_t ret_len;                /* its length */
};

/* Encode the call c of fn (after it returned ret; outputs are read only
 * when done, i.e. the call succeeded) into out, and list its buffers in
 * *bufs (malloc'd, *nbufs entries; output bytes kept up to keep_max bytes,
 * beyond only their hash). false when out of memory. */
bool cl_encode(const struct cl_call *c, const struct cl_fn *fn, uint64_t ret, bool done,
               uint64_t keep_max, struct cl_bytes *out, struct cl_buf **bufs, size_t *nbufs);
/* Free a buffer list from cl_encode. */
void cl_bufs_free(struct cl_buf *bufs, size_t n);
/* The canonical bytes of a tensor info array (names without what follows
 * their NUL, shapes by value instead of pointer): malloc'd, *len bytes. */
void *cl_tinfo_canon(const void *tensor_info_array, uint64_t *len);
/* Decode an argument blob of fn; false (one log line) when it is malformed. */
bool cl_decode(const struct cl_fn *fn, const uint8_t *p, size_t n, struct cl_dec *out);
void cl_dec_free(struct cl_dec *d);

#endif
