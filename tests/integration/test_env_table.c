/*
 * test_env_table.c: every variable docs/env.md lists, with a good and a
 * bad value, through the public API: the good value lets nrt_init succeed,
 * the bad one makes it return NRT_INVALID with exactly one log line that
 * names the variable (devices/config/env.c, the one parser). The docs page
 * is read (argv[1]) so that a variable added there without a row here
 * fails the test.
 */
#include <fcntl.h>

#include "it_common.h"

/* One variable: the name docs/env.md shows, and a good and a bad setting. */
struct env_case {
    const char *doc;       /* the name as docs/env.md's first column shows it */
    const char *good_name; /* the variable set for the good value */
    const char *good;      /* a value nrt_init accepts */
    const char *bad_name;  /* the variable set for the bad value */
    const char *bad;       /* a value nrt_init refuses */
};

#define SAME(n, g, b) {n, n, g, n, b}

static const char env_long[] =
    "a-process-tag-that-is-longer-than-sixty-three-bytes-and-so-refused-by-nrt-init";

static const struct env_case env_cases[] = {
    SAME("NEURON_RT_VISIBLE_CORES", "0", "0-x"),
    SAME("NEURON_RT_NUM_CORES", "1", "abc"),
    SAME("NEURON_RT_VIRTUAL_CORE_SIZE", "2", "3"),
    SAME("NEURON_LOGICAL_NC_CONFIG", "2", "two"),
    SAME("NEURON_RT_LOG_LOCATION", "console", "/nonexistent-trnemu-dir/nrt.log"),
    SAME("NEURON_RT_LOG_LEVEL", "warning", "LOUD"),
    {"NEURON_RT_LOG_LEVEL_<component>", "NEURON_RT_LOG_LEVEL_TDRV", "error",
     "NEURON_RT_LOG_LEVEL_NRT", "LOUD"},
    {"NEURON_RT_LOG_LOCATION_<component>", "NEURON_RT_LOG_LOCATION_NRT", "console",
     "NEURON_RT_LOG_LOCATION_NOSUCH", "console"},
    SAME("NEURON_RT_EXEC_TIMEOUT", "10s", "abc"),
    SAME("NEURON_RT_VALIDATE_HASH", "No", "maybe"),
    SAME("NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS", "TRUE", "2"),
    SAME("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "0", "-1"),
    SAME("NEURON_RT_ALLOW_LEGACY_NEFF", "yes", "y"),
    SAME("NEURON_RT_NUMERICAL_ERRORS_VERBOSITY", "Verbose", "loud"),
    SAME("NEURON_RT_DBG_DUMP_INPUTS_ON_ERR", "0", "maybe"),
    SAME("NEURON_RT_STOCHASTIC_ROUNDING_EN", "true", "on"),
    SAME("NEURON_RT_STOCHASTIC_ROUNDING_SEED", "42", "abc"),
    SAME("NEURON_RT_ROOT_COMM_ID", "127.0.0.1:45645", "127.0.0.1"),
    SAME("NEURON_PROCESS_TAG", "worker-0", env_long),
    SAME("NEURON_RT_INSPECT_ENABLE", "0", "enabled"),
    SAME("NEURON_RT_INSPECT_OUTPUT_DIR", "./inspect-out", NULL /* too long: filled in */),
    SAME("NEURON_RT_INSPECT_ON_FAIL", "false", "sometimes"),
    SAME("NEURON_RT_INSPECT_SYSTEM_PROFILE", "1", "all"),
    SAME("NEURON_RT_INSPECT_DEVICE_PROFILE", "0", "-1"),
    SAME("NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC", "1000", "many"),
    SAME("NEURON_RT_INSPECT_EVENT_FILTER_NC", "0,2", "0-2"),
    SAME("NEURON_RT_INSPECT_EVENT_FILTER_TYPE", "hardware", NULL),
    SAME("NEURON_RT_INSPECT_CPU_UTIL", "1", "x"),
    SAME("NEURON_RT_INSPECT_HOST_MEMORY", "1", "x"),
    SAME("NEURON_RT_INSPECT_PRECACHE_ENABLE", "0", "x"),
    SAME("NEURON_RT_INSPECT_DURATION_NSEC", "1000", "1e3"),
    SAME("NEURON_RT_INSPECT_START_OFFSET_NSEC", "0", "-5"),
    {"NEURON_RT_PROFILE_BUF_<buffer>_MB", "NEURON_RT_PROFILE_BUF_DMA_MB", "512",
     "NEURON_RT_PROFILE_BUF_DMA_MB", "lots"},
    SAME("NEURON_RT_DEBUG_STREAM_BUFFER_SIZE", "64", "lots"),
    SAME("NEURON_RT_DEBUG_OUTPUT_DIR", "/tmp", NULL),
    SAME("NEURON_RT_DEBUG_MEMLOG_MAX_SIZE", "1048576", "1M"),
    SAME("NEURON_RT_ENABLE_DEVICE_MEMORY_OOM_LOG", "0", "quiet"),
    SAME("NEURON_RT_GPSIMD_STDOUT_QUEUE_SIZE_BYTES", "131072", "262144"),
    SAME("NEURON_RT_ENABLE_DGE_NOTIFICATIONS", "1", "x"),
    SAME("NEURON_RT_CONTIGUOUS_SCRATCHPAD", "0", "x"),
    SAME("NEURON_RT_DBG_DMA_PACKETIZATION_SIZE", "65536", "64k"),
    SAME("NEURON_RT_DBG_CC_DMA_PACKET_SIZE", "4096", "131072"),
    SAME("NEURON_RT_DBG_INTRA_RDH_CHANNEL_BUFFER_SIZE", "146800640", "big"),
    SAME("NEURON_RT_LOCAL_CORE_DUMP_DIRECTORY", "", NULL),
    SAME("NEURON_RT_S3_CORE_DUMP_PREFIX", "", NULL),
    SAME("NEURON_RT_LOW_LATENCY_TASKS_CPU_AFFINITY", "40-47,88-95", "40-"),
    SAME("NEURON_RT_ONE_THREAD_PER_CORE", "1", "x"),
    SAME("NEURON_RT_RANKS_PER_NETWORK_PROXY", "4", "x"),
    SAME("NEURON_RT_RESET_CORES", "0", "x"),
    SAME("NEURON_RT_ASYNC_SENDRECV_EXPERIMENTAL_ENABLED", "1", "x"),
    SAME("NEURON_RT_ASYNC_SENDRECV_BOOTSTRAP_PORT", "45645", "0"),
    SAME("NEURON_RT_ULTRASERVER_MODE", "4", NULL),
    SAME("NEURON_RT_ULTRASERVER_SERVER_ID", "1", "x"),
    SAME("NEURON_RT_ULTRASERVER_NODE_ID", "0", "x"),
    SAME("TRNEMU_FOREIGN_NEFF", "zeros", "ones"),
    SAME("TRNEMU_RACECHECK", "no", "maybe"),
    SAME("TRNEMU_ASYNC_SPIN_US", "30", "30us"),
    SAME("TRNEMU_THREADS", "2", "0"),
    SAME("TRNEMU_NKI_TRACE_LIMIT", "100", "-5"),
    SAME("TRNEMU_NKI_TRACE_SECONDS", "2.5", "x"),
    SAME("TRNEMU_NKI_RANKS_TIMEOUT", "30s", "soon"),
    SAME("TRNEMU_NKI_VNC", "0", "-1"),
    SAME("TRNEMU_NKI_HOST_DTYPES", "trnemu", "numpy"),
    SAME("TRNEMU_INSTANCE", "trn2.48xlarge", "an-instance-type-name-of-more-than-31-bytes"),
    SAME("TRNEMU_INSTANCE_NAME", NULL /* the test's own: filled in */, NULL),
    SAME("TRNEMU_SHM_DIR", "/dev/shm", NULL),
    SAME("TRNEMU_LIBNRT", "/nonexistent/libnrt.so.1", NULL),
    SAME("TRNEMU_ASYNC_QUEUE_DEPTH", "64", "0"),
    SAME("TRNEMU_COLL_TIMEOUT", "30s", "abc"),
    SAME("TRNEMU_COLL_SPIN_US", "30", "2.5"),
    SAME("TRNEMU_COLL_RING_KIB", "1024", "1M"),
    SAME("TRNEMU_COLL_MESH_KIB", "256", "0"),
    SAME("TRNEMU_COLL_MESH_MAX", "65536", "64k"),
    SAME("TRNEMU_COLL_MESH_RANKS", "8", "x"),
    SAME("TRNEMU_COLL_DIRECT_MIN", "0x100000", "-1"),
    SAME("TRNEMU_NODES", "1", "-1"),
    SAME("TRNEMU_NODE", "0", "first"),
    SAME("TRNEMU_US_NODE", "0", "x"),
    SAME("TRNEMU_JOB_TOKEN", "0123456789abcdef", NULL),
    SAME("TRNEMU_NODE_ADDR", "127.0.0.1", NULL),
    SAME("TRNEMU_NODE_DEAD_MS", "5000", "0"),
    SAME("TRNEMU_FABRIC_PROVIDER", "tcp", NULL),
    SAME("TRNEMU_PROFILE", "", NULL),
    SAME("TRNEMU_RECORD", "", NULL),
    SAME("TRNEMU_RECORD_OUTPUT_BYTES", "1048576", "1M"),
    SAME("TRNEMU_RECORD_SHIM_PID", "", "x"),
    SAME("TRNEMU_RESTORE", "", NULL),
    SAME("TRNEMU_SNAPSHOT_AT", "1000000000", "0"),
    SAME("TRNEMU_SNAPSHOT_FILE", "", NULL),
    SAME("TRNEMU_SNAPSHOT_ON_ERROR", "", NULL),
    SAME("TRNEMU_SNAPSHOT_THREADS", "2", "0"),
    SAME("TRNEMU_NKI_CACHE", "0", "maybe"),
    SAME("TRNEMU_NKI_CACHE_DIR", "/tmp/nki-cache", NULL),
    SAME("TRNEMU_NKI_CACHE_MAX_MB", "64", "1048577"),
    SAME("TRNEMU_NKI_LOADED_MAX_MB", "256", "-1"),
    SAME("TRNEMU_NKI_RANKS_FORK", "0", "sometimes"),
};

#define ENV_NCASES (sizeof env_cases / sizeof env_cases[0])

static char env_too_long[5000];    /* a path longer than any variable may hold */
static const char *env_doc_path;   /* docs/env.md */
static char env_instance[256];     /* the TRNEMU_INSTANCE_NAME the test runs under */

static int env_setup(void **state)
{
    (void)state;
    it_env_clear();
    for (size_t i = 0; i < ENV_NCASES; i++) {
        unsetenv(env_cases[i].good_name);
        unsetenv(env_cases[i].bad_name);
    }
    if (env_instance[0] != '\0') /* stay on the test's own instance */
        setenv("TRNEMU_INSTANCE_NAME", env_instance, 1);
    return 0;
}

/* The bad value of c (a too-long text where the table has none). */
static const char *env_bad(const struct env_case *c)
{
    return c->bad != NULL ? c->bad : env_too_long;
}

/* nrt_init with stderr sent to a file; the lines written and the status. */
static NRT_STATUS env_init_captured(char *out, size_t cap)
{
    char path[] = "/tmp/trnemu-env-table-XXXXXX";
    int fd = mkstemp(path), saved = dup(2);
    assert_true(fd >= 0 && saved >= 0);
    unlink(path);
    fflush(stderr);
    dup2(fd, 2);
    NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    return st;
}

static size_t env_count_lines(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++)
        n += *s == '\n';
    return n;
}

/* Each row: the good value is accepted, the bad one refused in one line. */
static void test_env_each_variable(void **state)
{
    (void)state;
    for (size_t i = 0; i < ENV_NCASES; i++) {
        const struct env_case *c = &env_cases[i];
        env_setup(NULL);
        const char *good = c->good != NULL ? c->good : env_instance;
        setenv(c->good_name, good, 1);
        NRT_STATUS st = nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", "");
        if (st != NRT_SUCCESS)
            fail_msg("%s=%s: nrt_init returned %d, expected success", c->good_name, good,
                     (int)st);
        nrt_close();
        env_setup(NULL);
        setenv(c->bad_name, env_bad(c), 1);
        static char log[65536];
        st = env_init_captured(log, sizeof log);
        if (st == NRT_SUCCESS)
            nrt_close();
        if (st != NRT_INVALID)
            fail_msg("%s=%.40s: nrt_init returned %d, expected NRT_INVALID", c->bad_name,
                     env_bad(c), (int)st);
        if (env_count_lines(log) != 1 || strstr(log, c->bad_name) == NULL)
            fail_msg("%s: expected one log line naming it, got:\n%s", c->bad_name, log);
    }
    env_setup(NULL);
}

/* Every variable docs/env.md lists (first column of its tables) has a row. */
static void test_env_docs_covered(void **state)
{
    (void)state;
    FILE *f = fopen(env_doc_path, "r");
    assert_non_null(f);
    char line[4096];
    size_t listed = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "| `", 3) != 0)
            continue;
        char *end = strchr(line + 3, '`');
        assert_non_null(end);
        *end = '\0';
        bool found = false;
        for (size_t i = 0; i < ENV_NCASES && !found; i++)
            found = strcmp(env_cases[i].doc, line + 3) == 0;
        if (!found)
            fail_msg("docs/env.md lists %s, which has no good/bad row here", line + 3);
        listed++;
    }
    fclose(f);
    assert_int_equal(listed, ENV_NCASES);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s docs/env.md\n", argv[0]);
        return 2;
    }
    env_doc_path = argv[1];
    memset(env_too_long, 'd', sizeof env_too_long - 1);
    const char *inst = getenv("TRNEMU_INSTANCE_NAME");
    snprintf(env_instance, sizeof env_instance, "%s", inst != NULL ? inst : "it-env-table");
    unsetenv("NEURON_RT_LOG_LEVEL");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_docs_covered),
        cmocka_unit_test(test_env_each_variable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
