/*
 * env.c: the table of the runtime's environment variables, the one parser
 * of their values, and their reading at nrt_init (see env.h and
 * docs/env.md).
 */
#include "devices/config/env.h"

#include <ctype.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "devices/config/log_env.h"
#include "emu/log.h"

extern char **environ;

#define B(n, h, x, w) {n, h, x, ENV_BOOL, 0, 0, NULL, w}
#define U(n, h, x, lo, hi, w) {n, h, x, ENV_UINT, lo, hi, NULL, w}
#define T(n, h, x, w) {n, h, x, ENV_TEXT, 0, ENV_PATH_MAX, NULL, w}
#define ENV_PATH_MAX 4095u   /* the longest text (a path) a variable may hold */
#define K(n, h, x, kind, w) {n, h, x, kind, 0, 0, NULL, w}
#define C(n, h, x, c, w) {n, h, x, ENV_CHOICE, 0, 0, c, w}

/* The components a NEURON_RT_LOG_*_<component> variable may name. */
static const char *const env_components[] = {"NRT", "TDRV", "NMGR", "KMGR", "NCCL",
                                             "NEFF", "EMU", "STORE", "TOOL"};

/* Every variable the vendor's runtime documentation lists, then the
 * NEURON_* and TRNEMU_* ones the runtime also reads. */
static const struct env_var env_vars[] = {
    K("NEURON_RT_VISIBLE_CORES", true, false, ENV_CORES,
      "VNCs this process claims, e.g. 0-3,8 (wins over NEURON_RT_NUM_CORES)"),
    U("NEURON_RT_NUM_CORES", true, false, 0, 65535,
      "how many free VNCs this process claims (0: all)"),
    U("NEURON_RT_VIRTUAL_CORE_SIZE", true, false, 1, 2,
      "logical NeuronCore size (physical cores per VNC); same as NEURON_LOGICAL_NC_CONFIG, "
      "which must agree when both are set"),
    U("NEURON_LOGICAL_NC_CONFIG", true, false, 1, 2, "logical NeuronCore size (see above)"),
    T("NEURON_RT_LOG_LOCATION", true, false,
      "where log lines go: console (stderr, the default), syslog, or a file path (appended)"),
    K("NEURON_RT_LOG_LEVEL", true, true, ENV_LEVEL,
      "ERROR (default), WARN/WARNING, INFO, DEBUG, TRACE, QUIET"),
    K("NEURON_RT_LOG_LEVEL_<component>", true, true, ENV_LEVEL,
      "level for one component: NRT, TDRV, NMGR, KMGR, NCCL and trnemu's NEFF, EMU, STORE, "
      "TOOL"),
    T("NEURON_RT_LOG_LOCATION_<component>", false, false,
      "ignored: trnemu writes one stream for every component, to NEURON_RT_LOG_LOCATION"),
    {"NEURON_RT_EXEC_TIMEOUT", true, true, ENV_DURATION, 0, 10000000, NULL,
     "seconds an execution may run (default 600; 0: no limit; 10s and 500ms also work)"},
    B("NEURON_RT_VALIDATE_HASH", true, true,
      "check the NEFF header's hash at load (read at each nrt_load)"),
    B("NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS", false, false,
      "ignored: each load already shares its constants with the parsed NEFF (no copy), "
      "and a model's device copy is per VNC as the vendor's default"),
    U("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", false, false, 0, INT32_MAX,
      "ignored (kept in env_get() for the async queue): the implicit async mode it "
      "enabled is gone from the runtime; nrt_execute blocks and the nrta_* API queues "
      "(devices/runtime/async.c says so with a warning)"),
    B("NEURON_RT_ALLOW_LEGACY_NEFF", false, false,
      "ignored: trnemu's ISA is the same on every emulated instance type, and vendor "
      "streams are never executed, so no NEFF is too old for the machine"),
    C("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", true, false, "none,critical,debug,verbose",
      "none, critical (NaN), debug (NaN; overflow/underflow are not modelled), verbose "
      "(NaN and Inf); unset: NaN and Inf (trnemu's default)"),
    B("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", true, false,
      "on a failed execution, write its inputs as .npy into "
      "nrt_inputs_<pid>_<model>_<n>/ in the working directory"),
    B("NEURON_RT_STOCHASTIC_ROUNDING_EN", true, true, "stochastic rounding of bf16/fp8 results"),
    U("NEURON_RT_STOCHASTIC_ROUNDING_SEED", true, true, 0, UINT64_MAX, "its seed"),
    K("NEURON_RT_ROOT_COMM_ID", true, false, ENV_HOSTPORT, "host:port naming a collectives job"),
    {"NEURON_PROCESS_TAG", true, false, ENV_TEXT, 0, 63, NULL,
     "a label for this process (at most 63 bytes), shown by trnemu ls / neuron-ls and the "
     "monitor"},
    B("NEURON_RT_INSPECT_ENABLE", true, false,
      "capture a system trace and device profiles into NEURON_RT_INSPECT_OUTPUT_DIR "
      "(docs/profile.md)"),
    T("NEURON_RT_INSPECT_OUTPUT_DIR", true, false, "where inspect writes (default ./output)"),
    B("NEURON_RT_INSPECT_ON_FAIL", true, false, "inspect only executions that fail"),
    B("NEURON_RT_INSPECT_SYSTEM_PROFILE", true, false, "inspect's system trace (default 1)"),
    B("NEURON_RT_INSPECT_DEVICE_PROFILE", true, false, "inspect's device profiles (default 0)"),
    U("NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC", true, false, 0, UINT32_MAX,
      "events the system trace keeps per NeuronCore (0: the default)"),
    {"NEURON_RT_INSPECT_EVENT_FILTER_NC", true, false, ENV_LIST, 0, 65535, NULL,
     "NeuronCores whose events the system trace keeps, e.g. 0,2"},
    T("NEURON_RT_INSPECT_EVENT_FILTER_TYPE", false, false,
      "ignored: the system trace keeps every event type trnemu emits (few, all cheap)"),
    B("NEURON_RT_INSPECT_CPU_UTIL", false, false,
      "ignored: host CPU utilisation is the host's, not the emulated device's; use the "
      "monitor (trnemu monitor) for the emulator's own"),
    B("NEURON_RT_INSPECT_HOST_MEMORY", false, false,
      "ignored: host memory is reported by the monitor (trnemu monitor)"),
    B("NEURON_RT_INSPECT_PRECACHE_ENABLE", false, false,
      "ignored: trnemu has no graph cache, so every execution is captured from the first"),
    U("NEURON_RT_INSPECT_DURATION_NSEC", false, false, 0, UINT64_MAX,
      "ignored: removed by the vendor (Profiler 2.0)"),
    U("NEURON_RT_INSPECT_START_OFFSET_NSEC", false, false, 0, UINT64_MAX,
      "ignored: removed by the vendor (Profiler 2.0)"),
    U("NEURON_RT_PROFILE_BUF_<buffer>_MB", false, false, 0, 1048576,
      "ignored: device profiles are kept in host memory that grows as needed"),
    U("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", true, false, 0, UINT32_MAX,
      "events each debug stream keeps (0: the default)"),
    T("NEURON_RT_DEBUG_OUTPUT_DIR", false, false,
      "ignored: trnemu has no default debug-stream consumer; read the stream with "
      "nrt_debug_client_* (docs/debug.md)"),
    U("NEURON_RT_DEBUG_MEMLOG_MAX_SIZE", false, false, 0, UINT32_MAX,
      "ignored: an allocation failure logs the HBM use of every category itself"),
    B("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", false, false,
      "ignored: trnemu's out-of-memory message is one line"),
    U("NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES", false, false, 0, 131072,
      "ignored: GpSimd custom operators are vendor-compiled GpSimd code, which trnemu's "
      "ISA does not run, so there is no custom-operator printf to queue"),
    B("NEURON_RT_ENABLE_DGE_NOTIFICATIONS", false, false,
      "ignored: DMA descriptor-generation notifications are a hardware profiling feature"),
    B("NEURON_RT_CONTIGUOUS_SCRATCHPAD", false, false,
      "ignored: trnemu's scratchpad is one range per load, contiguous already"),
    U("NEURON_RT_DBG_DMA_PACKETIZATION_SIZE", false, false, 0, UINT32_MAX,
      "ignored: DMA packet sizes only change timing on hardware; the cost model uses its own"),
    U("NEURON_RT_DBG_CC_DMA_PACKET_SIZE", false, false, 0, 65536,
      "ignored: as NEURON_RT_DBG_DMA_PACKETIZATION_SIZE, for collectives"),
    U("NEURON_RT_DBG_INTRA_RDH_CHANNEL_BUFFER_SIZE", false, false, 0, UINT64_MAX,
      "ignored: trnemu's channels size their own buffers (docs/collectives.md)"),
    T("NEURON_RT_LOCAL_CORE_DUMP_DIRECTORY", false, false,
      "ignored: a failed execution's state is reported in its log lines and kept by "
      "snapshots (docs/snapshot.md), not as a core dump"),
    T("NEURON_RT_S3_CORE_DUMP_PREFIX", false, false, "ignored: as the above"),
    K("NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", false, false, ENV_CORES,
      "ignored: trnemu's worker threads follow TRNEMU_THREADS and the host scheduler"),
    B("NEURON_RT_ONE_THREAD_PER_CORE", false, false,
      "ignored: trnemu already runs one worker thread per VNC (docs/execution.md)"),
    U("NEURON_RT_RANKS_PER_NETWORK_PROXY", false, false, 0, 65535,
      "ignored: collectives between nodes go through one libfabric endpoint per process"),
    B("NEURON_RT_RESET_CORES", false, false,
      "ignored: an emulated core starts clean at every nrt_init; there is no hardware state "
      "to reset"),
    B("NEURON_RT_ASYNC_SENDRECV_EXPERIMENTAL_ENABLED", false, false,
      "ignored: trnemu's nrt_async_sendrecv API is always available (docs/collectives.md)"),
    U("NEURON_RT_ASYNC_SENDRECV_BOOTSTRAP_PORT", false, false, 1, 65535,
      "ignored: send/recv peers meet through NEURON_RT_ROOT_COMM_ID's bootstrap"),
    T("NEURON_RT_ULTRASERVER_MODE", false, false,
      "ignored: the UltraServer shape comes from TRNEMU_INSTANCE (docs/nodes.md)"),
    U("NEURON_RT_ULTRASERVER_SERVER_ID", false, false, 0, 65535,
      "ignored: a node's place comes from the bootstrap (docs/nodes.md)"),
    U("NEURON_RT_ULTRASERVER_NODE_ID", false, false, 0, 65535, "ignored: as the above"),
    C("TRNEMU_FOREIGN_NEFF", true, true, "zeros",
      "zeros: run vendor-compiled NEFFs as stand-ins with zero-filled outputs"),
    B("TRNEMU_RACECHECK", true, true, "report unordered SBUF/PSUM accesses"),
    {"TRNEMU_ASYNC_SPIN_US", true, false, ENV_UINT, 0, 10000, NULL,
     "busy-poll window of the nrta_* queues' threads and of nrta_get_completion_handle, "
     "us (0-10000; default 30); read by async.c"},
    U("TRNEMU_THREADS", true, false, 1, 1024,
      "executions computing at once (1-1024; default: online CPUs); read by config.c"),
    U("TRNEMU_NKI_TRACE_LIMIT", true, false, 0, UINT64_MAX,
      "NKI front end: instructions one trace may emit (0: no limit)"),
    {"TRNEMU_NKI_TRACE_SECONDS", true, false, ENV_DURATION, 0, 10000000, NULL,
     "NKI front end: how long one trace may take (0: no limit)"},
    {"TRNEMU_NKI_RANKS_TIMEOUT", true, false, ENV_DURATION, 1, 10000000, NULL,
     "NKI front end: how long a kernel run on several ranks may take"},
    U("TRNEMU_NKI_VNC", true, false, 0, 65535, "NKI front end: the VNC kernels run on"),
    C("TRNEMU_NKI_HOST_DTYPES", true, false, "trnemu,ml_dtypes",
      "NKI front end: which module gives the host dtypes (trnemu: its own extension)"),
    {"TRNEMU_INSTANCE", true, false, ENV_TEXT, 0, 31, NULL,
     "the emulated instance type (trnemu ls --profiles); read by config.c"},
    {"TRNEMU_INSTANCE_NAME", true, false, ENV_TEXT, 0, 128, NULL,
     "the shared instance to attach to; read by instance.c"},
    T("TRNEMU_SHM_DIR", true, false, "the directory of shared instances (default /dev/shm)"),
    T("TRNEMU_LIBNRT", true, false, "the libnrt.so.1 the tools and the NKI front end load"),
    U("TRNEMU_ASYNC_QUEUE_DEPTH", true, false, 1, 65536,
      "requests each nrta_* queue holds (default 64); read by async.c"),
    {"TRNEMU_COLL_TIMEOUT", true, false, ENV_DURATION, 0, 10000000, NULL,
     "how long a collective may wait (default NEURON_RT_EXEC_TIMEOUT; 0: that default)"},
    U("TRNEMU_COLL_SPIN_US", true, false, 0, 10000,
      "busy-poll window of collective waits, us; read by coll.c"),
    U("TRNEMU_COLL_RING_KIB", true, false, 1, 1048576, "ring channel size, KiB (docs/collectives.md)"),
    U("TRNEMU_COLL_MESH_KIB", true, false, 1, 1048576, "mesh channel size, KiB"),
    U("TRNEMU_COLL_MESH_MAX", true, false, 0, UINT64_MAX, "largest mesh collective, bytes"),
    U("TRNEMU_COLL_MESH_RANKS", true, false, 0, 65535, "most ranks of a mesh collective"),
    U("TRNEMU_COLL_DIRECT_MIN", true, false, 0, UINT64_MAX,
      "smallest direct all-reduce/reduce-scatter/all-gather in HBM, bytes"),
    U("TRNEMU_NODES", true, false, 0, 1000000, "nodes of the job (docs/nodes.md)"),
    U("TRNEMU_NODE", true, false, 0, 1000000, "this node's index in the job"),
    U("TRNEMU_US_NODE", true, false, 0, 1000000, "this node's server in its UltraServer"),
    {"TRNEMU_JOB_TOKEN", true, false, ENV_TEXT, 0, 64, NULL,
     "the job's shared secret, 8 to 64 printable characters (docs/security.md)"},
    T("TRNEMU_NODE_ADDR", true, false, "the address this node's fabric endpoint binds"),
    U("TRNEMU_NODE_DEAD_MS", true, false, 1, 86400000,
      "ms of silence after which a node is reported dead"),
    T("TRNEMU_FABRIC_PROVIDER", true, false, "the libfabric provider between nodes"),
    T("TRNEMU_PROFILE", true, false, "where device profiles are written (docs/profile.md)"),
    T("TRNEMU_RECORD", true, false, "the call log to record into (docs/snapshot-calllog.md)"),
    U("TRNEMU_RECORD_OUTPUT_BYTES", true, false, 0, UINT64_MAX,
      "output bytes the call log keeps per execution"),
    U("TRNEMU_RECORD_SHIM_PID", true, false, 1, INT32_MAX,
      "internal: set by the runtime for libnrt-record.so (the pid that records)"),
    T("TRNEMU_RESTORE", true, false, "the snapshot to restore at nrt_init (docs/snapshot.md)"),
    U("TRNEMU_SNAPSHOT_AT", true, false, 1, INT64_MAX,
      "take a snapshot before the execution of this number"),
    T("TRNEMU_SNAPSHOT_FILE", true, false, "where SIGUSR1 and TRNEMU_SNAPSHOT_AT snapshots go"),
    T("TRNEMU_SNAPSHOT_ON_ERROR", true, false, "where a failed execution's snapshot goes"),
    U("TRNEMU_SNAPSHOT_THREADS", true, false, 1, 1024,
      "threads that compress a snapshot (default: online CPUs)"),
    B("TRNEMU_NKI_CACHE", true, false,
      "NKI front end: keep traced kernels in the disk cache (default on; 0: off)"),
    T("TRNEMU_NKI_CACHE_DIR", true, false,
      "NKI front end: the disk kernel cache's folder (default $XDG_CACHE_HOME/trnemu/nki, "
      "else ~/.cache/trnemu/nki)"),
    U("TRNEMU_NKI_CACHE_MAX_MB", true, false, 0, 1048576,
      "NKI front end: the disk kernel cache's size limit, MiB (default 2048; 0: no limit)"),
    U("TRNEMU_NKI_LOADED_MAX_MB", true, false, 0, 1048576,
      "NKI front end: memory the kernels kept loaded in a process may hold, MiB (default 1024; "
      "0: no limit but 64 kernels)"),
    B("TRNEMU_NKI_RANKS_FORK", true, false,
      "NKI front end: fork a job's ranks from a process that imported the kernel's module "
      "once (default on; 0: each rank a fresh interpreter)"),
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

bool env_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (!isdigit((unsigned char)*s))
        return false;
    char *end;
    errno = 0;
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);   /* "010" is ten */
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* s as a duration in ms: "2.5" (seconds), "10s", "500ms"; at most max_s. */
static bool env_parse_ms(const char *s, uint64_t max_s, uint64_t *out_ms)
{
    if ((!isdigit((unsigned char)*s) && *s != '.') || strpbrk(s, "xX") != NULL)
        return false; /* strtod's hex floats are no duration */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double scale = 1000.0;
    if (strcmp(end, "ms") == 0)
        scale = 1.0;
    else if (strcmp(end, "s") != 0 && *end != '\0')
        return false;
    if (errno != 0 || !(v >= 0) || v * scale > (double)max_s * 1000.0)
        return false;
    *out_ms = (uint64_t)(v * scale + 0.5);
    return true;
}

/* s is one of the comma-separated words, any case. */
static bool env_parse_choice(const char *s, const char *choices)
{
    size_t n = strlen(s);
    for (const char *p = choices; *p != '\0';) {
        const char *e = strchr(p, ',');
        size_t len = e != NULL ? (size_t)(e - p) : strlen(p);
        if (len == n && strncasecmp(p, s, n) == 0)
            return true;
        p += len + (e != NULL);
    }
    return false;
}

/* One item of a list at s: a whole number up to max or, with ranges, lo-hi;
 * *end just after it. */
static bool env_parse_item(const char *s, bool ranges, uint64_t max, char **end)
{
    if (!isdigit((unsigned char)*s))
        return false;
    errno = 0;
    unsigned long long lo = strtoull(s, end, 10), hi = lo;
    if (ranges && **end == '-') {
        if (!isdigit((unsigned char)(*end)[1]))
            return false;
        hi = strtoull(*end + 1, end, 10);
    }
    return errno == 0 && hi >= lo && hi <= max;
}

/* s is a comma-separated list of items (env_parse_item). */
static bool env_parse_items(const char *s, bool ranges, uint64_t max)
{
    for (;;) {
        char *end;
        if (!env_parse_item(s, ranges, max, &end))
            return false;
        if (*end == '\0')
            return true;
        if (*end != ',')
            return false;
        s = end + 1;
    }
}

/* s is host:port with a port from 1 to 65535. */
static bool env_parse_hostport(const char *s)
{
    const char *colon = strrchr(s, ':');
    uint64_t port;
    return colon != NULL && colon != s && env_parse_uint(colon + 1, 1, 65535, &port);
}

/* What row v accepts, for the one log line of a malformed value. */
static void env_accepts(const struct env_var *v, char *buf, size_t cap)
{
    switch (v->kind) {
    case ENV_BOOL:
        snprintf(buf, cap, "a boolean: 0, 1, true, false, yes or no (any case)");
        break;
    case ENV_UINT:
        snprintf(buf, cap, "a whole number from %llu to %llu", (unsigned long long)v->min,
                 (unsigned long long)v->max);
        break;
    case ENV_DURATION:
        snprintf(buf, cap, "a duration in seconds up to %llu (e.g. 30, 2.5, 10s or 500ms)",
                 (unsigned long long)v->max);
        break;
    case ENV_CHOICE:
        snprintf(buf, cap, "one of %s (any case)", v->choices);
        break;
    case ENV_LEVEL:
        snprintf(buf, cap, "a log level: ERROR, WARN, WARNING, INFO, DEBUG, TRACE or QUIET");
        break;
    case ENV_CORES:
        snprintf(buf, cap, "core indices and ranges, e.g. 0-3,8");
        break;
    case ENV_HOSTPORT:
        snprintf(buf, cap, "host:port with a port from 1 to 65535");
        break;
    case ENV_LIST:
        snprintf(buf, cap, "whole numbers up to %llu, comma-separated (e.g. 0,2)",
                 (unsigned long long)v->max);
        break;
    case ENV_TEXT:
        snprintf(buf, cap, "text of at most %llu bytes", (unsigned long long)v->max);
        break;
    }
}

static bool env_valid(const struct env_var *v, const char *s)
{
    uint64_t x;
    switch (v->kind) {
    case ENV_BOOL:
        return env_bool(s, 0) >= 0;
    case ENV_UINT:
        return env_parse_uint(s, v->min, v->max, &x);
    case ENV_DURATION:
        return env_parse_ms(s, v->max, &x);
    case ENV_CHOICE:
        return env_parse_choice(s, v->choices);
    case ENV_LEVEL:
        return log_level_parse(s) >= 0;
    case ENV_CORES:
        return env_parse_items(s, true, 65535);
    case ENV_HOSTPORT:
        return env_parse_hostport(s);
    case ENV_LIST:
        return env_parse_items(s, false, v->max);
    case ENV_TEXT:
        return strlen(s) <= v->max;
    }
    return false;
}

NRT_STATUS env_check(const struct env_var *v, const char *name, const char *value)
{
    if (value == NULL || *value == '\0' || env_valid(v, value))
        return NRT_SUCCESS;
    char accepts[160];
    env_accepts(v, accepts, sizeof accepts);
    LOG_ERROR("NRT", "%s='%s': expected %s", name, value, accepts);
    return NRT_INVALID;
}

/* The row named name exactly (not a per-component row). */
static const struct env_var *env_row(const char *name)
{
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++)
        if (strcmp(env_vars[i].name, name) == 0)
            return &env_vars[i];
    return NULL;
}

NRT_STATUS env_read_bool(const char *name, bool def, bool *out)
{
    static const struct env_var row = B("", false, false, "");
    const char *s = getenv(name);
    *out = def;
    if (env_check(&row, name, s) != NRT_SUCCESS)
        return NRT_INVALID;
    *out = env_bool(s, def) == 1;
    return NRT_SUCCESS;
}

/* name's value as row's kind says (a whole number, or a duration in ms)
 * into *out; def where unset, NRT_INVALID where malformed. */
static NRT_STATUS env_read_num(const struct env_var *row, const char *name, uint64_t def,
                               uint64_t *out)
{
    const char *s = getenv(name);
    *out = def;
    if (env_check(row, name, s) != NRT_SUCCESS)
        return NRT_INVALID;
    if (s == NULL || *s == '\0')
        return NRT_SUCCESS;
    if (row->kind == ENV_DURATION)
        (void)env_parse_ms(s, row->max, out);
    else
        (void)env_parse_uint(s, row->min, row->max, out);
    return NRT_SUCCESS;
}

NRT_STATUS env_read_uint(const char *name, uint64_t min, uint64_t max, uint64_t def,
                         uint64_t *out)
{
    const struct env_var row = U("", false, false, min, max, "");
    return env_read_num(&row, name, def, out);
}

NRT_STATUS env_read_ms(const char *name, uint64_t def_ms, uint64_t *out_ms)
{
    const struct env_var *row = env_row(name);
    static const struct env_var any = {"", false, false, ENV_DURATION, 0, 10000000, NULL, ""};
    if (row == NULL || row->kind != ENV_DURATION)
        row = &any;
    return env_read_num(row, name, def_ms, out_ms);
}

/* "NEURON_RT_LOG_LEVEL_NRT" against the row "NEURON_RT_LOG_LEVEL_<component>":
 * 1 a known component, 0 another name of that family, -1 not of it. */
static int env_family(const struct env_var *v, const char *name)
{
    const char *lt = strchr(v->name, '<');
    size_t plen = lt != NULL ? (size_t)(lt - v->name) : 0;
    if (plen == 0 || strncmp(name, v->name, plen) != 0 || name[plen] == '\0')
        return -1;
    if (strcmp(lt, "<component>") != 0)
        return 1;   /* "<buffer>": any name */
    for (size_t i = 0; i < sizeof env_components / sizeof env_components[0]; i++)
        if (strcasecmp(name + plen, env_components[i]) == 0)
            return 1;
    return 0;
}

/* Check one "NAME=value" of the environment against the per-component rows. */
static NRT_STATUS env_check_family(const char *entry)
{
    const char *eq = strchr(entry, '=');
    char name[128];
    if (eq == NULL || (size_t)(eq - entry) >= sizeof name)
        return NRT_SUCCESS;
    memcpy(name, entry, (size_t)(eq - entry));
    name[eq - entry] = '\0';
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
        const struct env_var *v = &env_vars[i];
        if (strchr(v->name, '<') == NULL || env_row(name) != NULL)
            continue;
        int f = env_family(v, name);
        if (f == 0) {
            LOG_ERROR("NRT", "%s: expected a component from NRT, TDRV, NMGR, KMGR, NCCL, NEFF, "
                      "EMU, STORE, TOOL after the prefix", name);
            return NRT_INVALID;
        }
        if (f == 1)
            return env_check(v, name, eq + 1);
    }
    return NRT_SUCCESS;
}

/* Every variable of the table that is set, checked by its kind. */
static NRT_STATUS env_check_all(void)
{
    for (size_t i = 0; i < sizeof env_vars / sizeof env_vars[0]; i++) {
        const struct env_var *v = &env_vars[i];
        if (strchr(v->name, '<') == NULL && env_check(v, v->name, getenv(v->name)) != NRT_SUCCESS)
            return NRT_INVALID;
    }
    for (char **e = environ; e != NULL && *e != NULL; e++)
        if (strncmp(*e, "NEURON_RT_", 10) == 0 && env_check_family(*e) != NRT_SUCCESS)
            return NRT_INVALID;
    return NRT_SUCCESS;
}

static enum env_numerr env_numerr(const char *s)
{
    static const char *const names[] = {"none", "critical", "debug", "verbose"};
    for (int i = 0; s != NULL && i < 4; i++)
        if (strcasecmp(s, names[i]) == 0)
            return (enum env_numerr)(ENV_NUMERR_NONE + i);
    return ENV_NUMERR_UNSET;
}

/* The values kept for the runtime (every one already checked). */
static void env_keep(struct rt_env *e)
{
    uint64_t n;
    (void)env_read_uint("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", 0, INT32_MAX, 0, &n);
    e->async_max_inflight = (uint32_t)n;
    e->numerr = env_numerr(getenv("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY"));
    (void)env_read_bool("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", false, &e->dump_inputs_on_err);
    (void)env_read_bool("NEURON_RT_VALIDATE_HASH", false, &e->validate_hash);
    const char *tag = getenv("NEURON_PROCESS_TAG");
    if (tag != NULL)
        snprintf(e->process_tag, sizeof e->process_tag, "%s", tag);
}

NRT_STATUS env_load(void)
{
    if (log_env_location() != 0) {
        LOG_ERROR("NRT", "NEURON_RT_LOG_LOCATION='%s': cannot open the file for appending",
                  getenv("NEURON_RT_LOG_LOCATION"));
        return NRT_INVALID;
    }
    if (env_check_all() != NRT_SUCCESS)
        return NRT_INVALID;
    struct rt_env e = {0};
    env_keep(&e);
    env_cur = e;
    atomic_store(&env_async, e.async_max_inflight);
    return NRT_SUCCESS;
}

NRT_STATUS env_exec(struct env_exec *out)
{
    const struct env_var *foreign = env_row("TRNEMU_FOREIGN_NEFF");
    memset(out, 0, sizeof *out);
    const char *mode = getenv("TRNEMU_FOREIGN_NEFF");
    if (env_read_ms("NEURON_RT_EXEC_TIMEOUT", ENV_EXEC_TIMEOUT_DEFAULT_S * 1000u,
                    &out->timeout_ms) != NRT_SUCCESS ||
        env_read_bool("TRNEMU_RACECHECK", false, &out->racecheck) != NRT_SUCCESS ||
        env_read_bool("NEURON_RT_STOCHASTIC_ROUNDING_EN", false, &out->stochastic) !=
            NRT_SUCCESS ||
        env_read_uint("NEURON_RT_STOCHASTIC_ROUNDING_SEED", 0, UINT64_MAX, 0, &out->seed) !=
            NRT_SUCCESS ||
        env_check(foreign, foreign->name, mode) != NRT_SUCCESS)
        return NRT_INVALID;
    out->foreign_zeros = mode != NULL && strcasecmp(mode, "zeros") == 0;
    return NRT_SUCCESS;
}

const struct rt_env *env_get(void)
{
    return &env_cur;
}

uint32_t env_async_max_inflight(void)
{
    return atomic_load(&env_async);
}
