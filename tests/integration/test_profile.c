/*
 * test_profile.c: device profiles, the system trace, the runtime trace,
 * inspect and the functions naming absent hardware, through the public
 * API. The profiles of the softmax and matmul examples are parsed back:
 * the JSON has the shape the Perfetto UI and chrome://tracing load
 * (traceEvents of "X" and "M" events with numeric ts/dur, pid, tid), every
 * instruction of the program is there exactly once, engines overlap where
 * the program lets them, and the execution's device time is the end of
 * its last span (the cost model's schedule, docs/cost-model.md).
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glob.h>

#include "it_common.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/ndebug_stream.h"
#include "trnemu/trnemu.h"
#include <poll.h>

static void *slurp(const char *dir, const char *name, size_t *size)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc(*size + 1);
    assert_int_equal(fread(p, 1, *size, f), *size);
    p[*size] = '\0';
    fclose(f);
    return p;
}

/* Instruction lines of an example's assembly (engine.op ...). */
static size_t count_insns(const char *name)
{
    size_t n;
    char *s = slurp(getenv("TRNEMU_EXAMPLES_SRC"), name, &n);
    size_t count = 0;
    for (char *line = strtok(s, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        while (*line == ' ')
            line++;
        static const char *const eng[] = {"pe.", "act.", "pool.", "dve.", "sp."};
        for (int e = 0; e < 5; e++)
            count += strncmp(line, eng[e], strlen(eng[e])) == 0;
    }
    free(s);
    return count;
}

/* Load an example and give every I/O tensor its own device tensor. */
static nrt_model_t *load_example(const char *name, nrt_tensor_set_t **in, nrt_tensor_set_t **out)
{
    size_t size;
    void *neff = slurp(getenv("TRNEMU_EXAMPLES_DIR"), name, &size);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(neff, size, 0, -1, &m), NRT_SUCCESS);
    free(neff);
    nrt_tensor_info_array_t *info = NULL;
    assert_int_equal(nrt_get_model_tensor_info(m, &info), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(out), NRT_SUCCESS);
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t *ti = &info->tensor_array[i];
        nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name);
        assert_int_equal(nrt_tensor_memset(t, 0, 0, ti->size), NRT_SUCCESS);
        assert_int_equal(nrt_add_tensor_to_tensor_set(
                             ti->usage == NRT_TENSOR_USAGE_INPUT ? *in : *out, ti->name, t),
                         NRT_SUCCESS);
    }
    nrt_free_model_tensor_info(info);
    return m;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    assert_true(json_is_number(v));
    return json_number_value(v);
}

/* Profile one execution of an example and check its trace. */
static void check_example_profile(const char *neff, const char *src, int want_overlap)
{
    nrt_tensor_set_t *in, *out;
    nrt_model_t *m = load_example(neff, &in, &out);
    char path[] = "/tmp/trnemu-it-profile-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(nrt_profile_start(m, path), NRT_SUCCESS);
    assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    assert_int_equal(nrt_profile_stop(path), NRT_SUCCESS);
    assert_int_equal(nrt_profile_stop(path), NRT_INVALID);  /* stopped already */

    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (root == NULL)
        fail_msg("%s: %s", path, jerr.text);
    unlink(path);
    json_t *ev = json_object_get(root, "traceEvents");
    assert_true(json_is_array(ev));
    size_t n_insn = 0, n_exec = 0, i;
    double dev_ns = 0, last_end = 0;
    json_t *e;
    static unsigned char seen[64][4096];
    memset(seen, 0, sizeof seen);
    /* Spans as (tid, start, end) for the overlap check. */
    double (*spans)[3] = calloc(json_array_size(ev), sizeof *spans);
    size_t nspans = 0;
    json_array_foreach(ev, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        assert_non_null(ph);
        assert_non_null(json_string_value(json_object_get(e, "name")));
        assert_true(json_is_integer(json_object_get(e, "pid")));
        assert_true(json_is_integer(json_object_get(e, "tid")));
        if (strcmp(ph, "M") == 0)
            continue;
        assert_string_equal(ph, "X");
        double ts = num(e, "ts"), dur = num(e, "dur");
        assert_true(ts >= 0 && dur >= 0);
        const char *cat = json_string_value(json_object_get(e, "cat"));
        assert_non_null(cat);
        int tid = (int)json_integer_value(json_object_get(e, "tid"));
        if (strcmp(cat, "execution") == 0) {
            n_exec++;
            dev_ns = num(json_object_get(e, "args"), "device_ns");
            assert_true(fabs(dur * 1000.0 - dev_ns) < 1e-3 * dev_ns + 1e-6);
        } else if (strcmp(cat, "instruction") == 0) {
            int pc = (int)json_integer_value(json_object_get(json_object_get(e, "args"), "pc"));
            assert_true(tid > 0 && tid < 64 && pc >= 0 && pc < 4096);
            assert_int_equal(seen[tid][pc], 0);  /* once each */
            seen[tid][pc] = 1;
            n_insn++;
        }
        if (strcmp(cat, "execution") != 0 && strcmp(cat, "wait") != 0) {
            spans[nspans][0] = tid;
            spans[nspans][1] = ts * 1000.0;
            spans[nspans][2] = (ts + dur) * 1000.0;
            if (spans[nspans][2] > last_end)
                last_end = spans[nspans][2];
            nspans++;
        }
    }
    assert_int_equal(n_exec, 1);
    assert_int_equal(n_insn, count_insns(src));
    assert_true(dev_ns > 0);
    assert_true(fabs(last_end - dev_ns) < 1e-3 * dev_ns + 1.0);  /* the last span ends it */
    int overlaps = 0;
    for (size_t a = 0; a < nspans; a++)
        for (size_t b = a + 1; b < nspans; b++)
            overlaps += spans[a][0] != spans[b][0] && spans[a][1] < spans[b][2] &&
                        spans[b][1] < spans[a][2];
    if (want_overlap)
        assert_true(overlaps > 0);
    free(spans);
    json_t *other = json_object_get(root, "otherData");
    assert_true(fabs(num(other, "device_ns") - dev_ns) < 1e-6 * dev_ns + 1e-6);
    json_decref(root);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

static void test_profiles(void **state)
{
    (void)state;
    check_example_profile("softmax.neff", "softmax.s", 0);
    check_example_profile("matmul_512.neff", "matmul_512.s", 1);
    /* Bad input. */
    assert_int_equal(nrt_profile_start(NULL, "x"), NRT_INVALID);
    assert_int_equal(nrt_profile_stop("/never/started"), NRT_INVALID);
}

/* System trace: event types, filters, max events, fetch JSON. */
static void test_sys_trace(void **state)
{
    (void)state;
    const char **types = NULL;
    size_t ntypes = 0;
    assert_int_equal(nrt_sys_trace_get_event_types(&types, &ntypes), NRT_SUCCESS);
    assert_true(ntypes >= 5);
    nrt_sys_trace_free_event_types(types, ntypes);
    nrt_sys_trace_config_t *c = NULL;
    assert_int_equal(nrt_sys_trace_config_allocate(&c), NRT_SUCCESS);
    assert_int_equal(nrt_sys_trace_config_set_capture_enabled_for_event_type(c, "bogus", true),
                     NRT_INVALID);
    assert_int_equal(nrt_sys_trace_config_set_capture_enabled_for_event_type(c, "nrt_tensor_read",
                                                                             false), NRT_SUCCESS);
    nrt_sys_trace_config_set_capture_enabled_for_nc(c, 1, false);
    nrt_sys_trace_config_set_max_events_per_nc(c, 3);
    assert_int_equal(nrt_sys_trace_config_get_enabled_event_types(c, &types, &ntypes),
                     NRT_SUCCESS);
    for (size_t i = 0; i < ntypes; i++)
        assert_string_not_equal(types[i], "nrt_tensor_read");
    nrt_sys_trace_free_event_types(types, ntypes);
    assert_int_equal(nrt_sys_trace_start(c), NRT_SUCCESS);
    nrt_sys_trace_config_free(c);
    nrt_tensor_set_t *in, *out;
    nrt_model_t *m = load_example("softmax.neff", &in, &out);
    for (int i = 0; i < 5; i++)
        assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    nrt_tensor_t *t1 = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 1, 64, "on_nc1");
    char buf[64] = {0};
    assert_int_equal(nrt_tensor_write(t1, buf, 0, 64), NRT_SUCCESS);  /* NC 1: filtered */
    char *json = NULL;
    size_t len = 0;
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &len, NULL), NRT_SUCCESS);
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    assert_non_null(root);
    nrt_sys_trace_buffer_free(json);
    assert_int_equal(json_integer_value(json_object_get(root, "data_version")), 2);
    json_t *ev = json_object_get(root, "events"), *e;
    size_t i;
    int running = 0, syncs = 0;
    json_int_t ids[3], nid = 0, start_ts = -1, start_nc = -1;
    json_array_foreach(ev, i, e) {
        assert_int_equal(json_integer_value(json_object_get(e, "nc_idx")), 0);
        const char *type = json_string_value(json_object_get(e, "event_type"));
        const char *phase = json_string_value(json_object_get(e, "phase"));
        json_int_t id = json_integer_value(json_object_get(e, "tracking_id"));
        assert_non_null(type);
        assert_non_null(phase);
        if (nid == 0 || ids[nid - 1] != id) {  /* the ring keeps the last 3 events */
            assert_true(nid < 3);
            ids[nid++] = id;
        }
        json_t *data = json_object_get(e, "data");
        if (strcmp(type, "timestamp_sync_point") == 0) {
            syncs++;
            assert_non_null(json_object_get(data, "cpu_timestamp_ns"));
            continue;
        }
        if (strcmp(type, "nc_exec_running") != 0)
            continue;
        json_int_t nc_ts = json_integer_value(json_object_get(data, "nc_timestamp_ns"));
        json_int_t ts = json_integer_value(json_object_get(e, "timestamp"));
        if (strcmp(phase, "start") == 0) {
            start_ts = ts;
            start_nc = nc_ts;
            continue;
        }
        assert_string_equal(phase, "stop");
        running++;
        assert_true(start_nc >= 0 && nc_ts > start_nc);    /* device time passed */
        assert_true(ts - start_ts == nc_ts - start_nc);      /* host stamps follow it */
    }
    assert_int_equal(nid, 3);
    assert_true(running >= 1);
    assert_int_equal(syncs, running);
    json_decref(root);
    /* Fetched events are gone. */
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &len, NULL), NRT_SUCCESS);
    assert_non_null(strstr(json, "\"events\":[]"));
    nrt_sys_trace_buffer_free(json);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &len, NULL), NRT_INVALID);
    nrt_tensor_free(&t1);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* Start a system trace of nc_exec_running events only (of NC 0 alone when
 * nc0). */
static void trace_exec_running_only(bool nc0)
{
    nrt_sys_trace_config_t *c = NULL;
    const char **types = NULL;
    size_t ntypes = 0;
    assert_int_equal(nrt_sys_trace_config_allocate(&c), NRT_SUCCESS);
    assert_int_equal(nrt_sys_trace_get_event_types(&types, &ntypes), NRT_SUCCESS);
    for (size_t k = 0; k < ntypes; k++)
        nrt_sys_trace_config_set_capture_enabled_for_event_type(
            c, types[k], strcmp(types[k], "nc_exec_running") == 0);
    nrt_sys_trace_free_event_types(types, ntypes);
    if (nc0)
        nrt_sys_trace_config_set_capture_enabled_for_nc(c, 0, true);
    assert_int_equal(nrt_sys_trace_start(c), NRT_SUCCESS);
    nrt_sys_trace_config_free(c);
}

/* Device-side timing as a benchmark client reads it (nkipy's spike does):
 * nc_exec_running start/stop pairs by tracking_id, durations from
 * data.nc_timestamp_ns; the core's device clock runs back to back. */
static void test_sys_trace_device_timing(void **state)
{
    (void)state;
    trace_exec_running_only(true);
    nrt_tensor_set_t *in, *out;
    nrt_model_t *m = load_example("softmax.neff", &in, &out);
    char *json = NULL;
    size_t len = 0;
    assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);  /* warm-up, drained */
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &len, NULL), NRT_SUCCESS);
    nrt_sys_trace_buffer_free(json);
    for (int k = 0; k < 4; k++)
        assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &len, NULL), NRT_SUCCESS);
    json_t *root = json_loadb(json, len, 0, NULL), *e;
    nrt_sys_trace_buffer_free(json);
    assert_non_null(root);
    json_int_t start_id = -1, start_nc = 0, last_stop = -1, dur[4];
    int n = 0;
    size_t i;
    json_array_foreach(json_object_get(root, "events"), i, e) {
        const char *type = json_string_value(json_object_get(e, "event_type"));
        const char *phase = json_string_value(json_object_get(e, "phase"));
        if (strcmp(type, "nc_exec_running") != 0)
            continue;
        json_int_t id = json_integer_value(json_object_get(e, "tracking_id"));
        json_int_t ts = json_integer_value(json_object_get(json_object_get(e, "data"),
                                                           "nc_timestamp_ns"));
        if (strcmp(phase, "start") == 0) {
            assert_true(last_stop < 0 || ts == last_stop);
            start_id = id;
            start_nc = ts;
        } else {
            assert_string_equal(phase, "stop");
            assert_true(id == start_id && n < 4);
            dur[n++] = ts - start_nc;
            last_stop = ts;
        }
    }
    assert_int_equal(n, 4);
    for (int k = 0; k < 4; k++)  /* the cost model is deterministic */
        assert_true(dur[k] > 0 && dur[k] == dur[0]);
    json_decref(root);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

/* The device time of one execution of matmul_lnc2 (its nc_exec_running
 * stop minus start) with TRNEMU_THREADS=threads: the runtime is started
 * and closed here. */
static json_int_t lnc2_device_ns(const char *threads)
{
    it_env_clear();
    setenv("TRNEMU_THREADS", threads, 1);
    assert_int_equal(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    unsetenv("TRNEMU_THREADS");
    trace_exec_running_only(false);
    nrt_tensor_set_t *in, *out;
    nrt_model_t *m = load_example("matmul_lnc2.neff", &in, &out);
    assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    char *json = NULL;
    size_t len = 0;
    assert_int_equal(nrt_sys_trace_fetch_events(&json, &len, NULL), NRT_SUCCESS);
    json_t *root = json_loadb(json, len, 0, NULL), *e;
    nrt_sys_trace_buffer_free(json);
    assert_non_null(root);
    json_int_t start = -1, dur = -1;
    size_t i;
    json_array_foreach(json_object_get(root, "events"), i, e) {
        const char *phase = json_string_value(json_object_get(e, "phase"));
        json_int_t ts = json_integer_value(json_object_get(json_object_get(e, "data"),
                                                           "nc_timestamp_ns"));
        if (strcmp(phase, "start") == 0)
            start = ts;
        else if (start >= 0)
            dur = ts - start;
    }
    json_decref(root);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
    nrt_close();
    return dur;
}

/* The two cores of an LNC=2 VNC on one host thread or on two: the same
 * device time (each core's schedule depends on its own instructions). */
static void test_lnc2_device_time(void **state)
{
    (void)state;
    json_int_t one = lnc2_device_ns("1"), two = lnc2_device_ns("2");
    printf("matmul_lnc2 device time: %lld ns (1 thread), %lld ns (2 threads)\n",
           (long long)one, (long long)two);
    assert_true(one > 0);
    assert_int_equal(one, two);
}

/* nrt_trace_*, inspect, continuous profiles: the files appear. */
static void test_trace_and_inspect(void **state)
{
    (void)state;
    char dir[] = "/tmp/trnemu-it-inspect-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[4200];
    snprintf(path, sizeof path, "%s/trace.json", dir);
    nrt_tensor_set_t *in, *out;
    nrt_model_t *m = load_example("softmax.neff", &in, &out);
    assert_int_equal(nrt_trace_start(true), NRT_SUCCESS);
    assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    assert_int_equal(nrt_trace_stop(path), NRT_SUCCESS);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(st.st_size > 20);

    nrt_inspect_config_t *c = NULL;
    assert_int_equal(nrt_inspect_config_allocate(&c), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_config_set_output_dir(c, dir), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_config_set_activity(c, "device_profile", true), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_config_set_activity(c, "bogus", true), NRT_INVALID);
    assert_int_equal(nrt_inspect_begin_with_options(c), NRT_SUCCESS);
    nrt_inspect_config_free(c);
    assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_stop(), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_stop(), NRT_INVALID);
    /* the vendor's layout: <dir>/<instance id>_pid_<pid>/<timestamp>/ */
    glob_t g;
    snprintf(path, sizeof path, "%s/i-*_pid_%d/*/system-trace-0.json", dir, (int)getpid());
    assert_int_equal(glob(path, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    globfree(&g);
    snprintf(path, sizeof path, "%s/i-*_pid_%d/*/device-profile.json", dir, (int)getpid());
    assert_int_equal(glob(path, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    globfree(&g);

    nrt_profile_continuous_options_t *o = NULL;
    assert_int_equal(nrt_profile_continuous_options_allocate(&o), NRT_SUCCESS);
    assert_int_equal(nrt_profile_continuous_options_set_output_dir(o, dir), NRT_SUCCESS);
    assert_int_equal(nrt_profile_continuous_start(o), NRT_SUCCESS);
    assert_int_equal(nrt_execute(m, in, out), NRT_SUCCESS);
    assert_int_equal(nrt_profile_continuous_save(0, o), NRT_SUCCESS);
    assert_int_equal(nrt_profile_continuous_stop(), NRT_SUCCESS);
    assert_int_equal(nrt_profile_continuous_save(0, o), NRT_INVALID);
    nrt_profile_continuous_options_free(o);
    snprintf(path, sizeof path, "%s/profile-vnc0-0.json", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* st from call, and exactly `lines` log lines printed by it. */
#define EXPECT_LINES(call, want_st, lines) do { \
        char log_[4096]; \
        it_log_begin(); \
        NRT_STATUS st_ = (call); \
        int n_ = it_log_end(log_, sizeof log_); \
        assert_int_equal(st_, (want_st)); \
        assert_int_equal(n_, (lines)); \
    } while (0)

/* Sessions that overlap or end twice get the documented status with one
 * line each, and never replace the session that runs: a second inspect
 * begin, continuous profiling during inspect, a second system trace
 * start or stop, a stop without a start; inspect with NULL options is
 * the defaults. */
static void test_session_statuses(void **state)
{
    (void)state;
    char dir[] = "/tmp/trnemu-it-sessions-XXXXXX", path[4200];
    assert_non_null(mkdtemp(dir));
    nrt_inspect_config_t *c = NULL;
    assert_int_equal(nrt_inspect_config_allocate(&c), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_config_set_output_dir(c, dir), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_begin_with_options(c), NRT_SUCCESS);
    nrt_inspect_config_free(c);
    EXPECT_LINES(nrt_inspect_begin(), NRT_INVALID, 1);
    EXPECT_LINES(nrt_inspect_begin_with_options(NULL), NRT_INVALID, 1);
    nrt_profile_continuous_options_t *o = NULL;
    assert_int_equal(nrt_profile_continuous_options_allocate(&o), NRT_SUCCESS);
    EXPECT_LINES(nrt_profile_continuous_start(o), NRT_INVALID, 1);
    assert_int_equal(nrt_inspect_stop(), NRT_SUCCESS);
    /* the first session's trace, in its capture directory (the vendor's layout) */
    snprintf(path, sizeof path, "%s/i-*_pid_%d/*/system-trace-0.json", dir, (int)getpid());
    glob_t g;
    assert_int_equal(glob(path, 0, NULL, &g), 0);
    assert_int_equal(g.gl_pathc, 1);
    globfree(&g);
    nrt_profile_continuous_options_free(o);

    /* NULL: the defaults (the directory is ./output: run it from dir) */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    assert_int_equal(nrt_inspect_begin_with_options(NULL), NRT_SUCCESS);
    assert_int_equal(nrt_inspect_stop(), NRT_SUCCESS);
    assert_int_equal(chdir(cwd), 0);

    EXPECT_LINES(nrt_sys_trace_stop(), NRT_INVALID, 1);
    assert_int_equal(nrt_sys_trace_start(NULL), NRT_SUCCESS);
    EXPECT_LINES(nrt_sys_trace_start(NULL), NRT_INVALID, 1);
    assert_int_equal(nrt_sys_trace_stop(), NRT_SUCCESS);
    EXPECT_LINES(nrt_sys_trace_stop(), NRT_INVALID, 1);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* dma-buf, mapped as libfabric maps it (offset 0 is the tensor's first
 * byte), for a tensor that is not at the start of HBM; the fd and the
 * runtime share one copy of the bytes; absent hardware says so. */
static void test_dmabuf_and_absent_hardware(void **state)
{
    (void)state;
    nrt_tensor_t *t0 = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1 << 16, "d0");
    nrt_tensor_t *t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1 << 20, "d");
    uint8_t pat[4096], pat0[4096], got[4096];
    it_pattern(pat, sizeof pat, 7);
    it_pattern(pat0, sizeof pat0, 3);
    assert_int_equal(nrt_tensor_write(t0, pat0, 0, sizeof pat0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_write(t, pat, 0, sizeof pat), NRT_SUCCESS);
    void *va = nrt_tensor_get_va(t);
    assert_non_null(va);
    void *hbm = NULL;
    size_t hbm_size = 0;
    assert_int_equal(nrt_get_hbm_mmap_va(0, 0, &hbm, &hbm_size), NRT_SUCCESS);
    assert_true((uint8_t *)va > (uint8_t *)hbm);   /* not at the start of HBM */
    int fd = -1;
    assert_int_equal(nrt_get_dmabuf_fd((uint64_t)(uintptr_t)va, 1 << 20, &fd), NRT_SUCCESS);
    assert_true(fd >= 0);
    uint8_t *map = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    assert_true(map != MAP_FAILED);
    assert_memory_equal(map, pat, sizeof pat);
    /* one copy: a write through the fd is the tensor's, and back */
    map[5] ^= 0xff;
    assert_int_equal(nrt_tensor_read(t, got, 0, sizeof got), NRT_SUCCESS);
    assert_int_equal(got[5], (uint8_t)(pat[5] ^ 0xff));
    assert_int_equal(nrt_tensor_write(t, pat, 0, sizeof pat), NRT_SUCCESS);
    assert_memory_equal(map, pat, sizeof pat);
    /* the same start again: another descriptor of the same memory */
    int fd2 = -1;
    assert_int_equal(nrt_get_dmabuf_fd((uint64_t)(uintptr_t)va, 4096, &fd2), NRT_SUCCESS);
    uint8_t *map2 = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, 0);
    assert_true(map2 != MAP_FAILED);
    assert_memory_equal(map2, pat, sizeof pat);
    munmap(map2, 4096);
    close(fd2);
    /* off a page boundary, inside another export, outside HBM: refused */
    assert_int_equal(nrt_get_dmabuf_fd((uint64_t)(uintptr_t)va + 64, 64, &fd2), NRT_INVALID);
    assert_int_equal(nrt_get_dmabuf_fd((uint64_t)(uintptr_t)va + 4096, 4096, &fd2),
                     NRT_INVALID);
    assert_int_equal(nrt_get_dmabuf_fd(12345, 10, &fd), NRT_INVALID);
    /* the first tensor is untouched */
    assert_int_equal(nrt_tensor_read(t0, got, 0, sizeof got), NRT_SUCCESS);
    assert_memory_equal(got, pat0, sizeof pat0);
    munmap(map, 1 << 20);
    close(fd);
    char bdf[64];
    size_t len = sizeof bdf;
    assert_int_equal(nrt_get_attached_efa_bdf(va, bdf, &len), NRT_FAILURE);
    nrt_ucode_info u = {{NULL, 0}, {NULL, 0}};
    assert_int_equal(nrt_set_pool_eng_ucode(&u), NRT_INVALID);  /* after nrt_init */
    nrt_tensor_free(&t);
    /* freed: its HBM is the chip's file again, reusable */
    t = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1 << 20, "d");
    assert_int_equal(nrt_tensor_write(t, pat0, 0, sizeof pat0), NRT_SUCCESS);
    assert_int_equal(nrt_tensor_read(t, got, 0, sizeof got), NRT_SUCCESS);
    assert_memory_equal(got, pat0, sizeof pat0);
    nrt_tensor_free(&t);
    nrt_tensor_free(&t0);
}

/* A failing execution's report arrives on its LNC's debug stream. */
static void test_debug_stream(void **state)
{
    (void)state;
    int fd = -1, fd2 = -1;
    assert_int_equal(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);
    assert_int_equal(nrt_debug_client_connect(0, &fd2), NRT_INVALID);  /* one client */
    assert_int_equal(nrt_debug_client_connect(9999, &fd2), NRT_INVALID);
    trnemu_kernel_t *k = NULL;
    const uint32_t shape[2] = {128, 4};
    assert_int_equal(trnemu_kernel_create("stuck", &k), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_input(k, "x", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_add_output(k, "y", NRT_DTYPE_FLOAT32, shape, 2), NRT_SUCCESS);
    assert_int_equal(trnemu_kernel_append(k, "sp.dma_copy dst=hbm:y[[4,128], 0, [1,4]]:f32 "
                                             "src=sbuf[0:128, 16, [1,4]]:f32 wait=s1>=1"),
                     NRT_SUCCESS);
    void *bytes = NULL;
    size_t size = 0;
    assert_int_equal(trnemu_kernel_write(k, &bytes, &size), NRT_SUCCESS);
    nrt_model_t *m = NULL;
    assert_int_equal(nrt_load(bytes, size, 0, -1, &m), NRT_SUCCESS);
    trnemu_kernel_buffer_free(bytes);
    trnemu_kernel_free(k);
    nrt_tensor_t *x = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2048, "x");
    nrt_tensor_t *y = it_tensor(NRT_TENSOR_PLACEMENT_DEVICE, 0, 2048, "y");
    nrt_tensor_set_t *in, *out;
    assert_int_equal(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
    assert_int_equal(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(in, "x", x), NRT_SUCCESS);
    assert_int_equal(nrt_add_tensor_to_tensor_set(out, "y", y), NRT_SUCCESS);
    ndebug_stream_event_header_t h;
    void *payload = NULL;
    assert_int_equal(nrt_debug_client_read_one_event(fd, &h, &payload), NRT_QUEUE_EMPTY);
    assert_int_equal(nrt_execute(m, in, out), NRT_EXEC_COMPLETED_WITH_ERR);
    struct pollfd p = {fd, POLLIN, 0};
    assert_int_equal(poll(&p, 1, 0), 1);
    assert_int_equal(nrt_debug_client_read_one_event(fd, &h, &payload), NRT_SUCCESS);
    assert_int_equal(h.type, NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ);
    const ndebug_stream_payload_debug_tensor_read_t *ev = payload;
    assert_true(h.data_size == sizeof *ev + ev->tensor_data_size);
    assert_non_null(strstr(ev->prefix, "failed"));
    assert_int_equal(ev->logical_nc_id, 0);
    assert_true(ev->tensor_data_size > 0 && ev->tensor_shape[0] == ev->tensor_data_size);
    free(payload);
    assert_int_equal(poll(&p, 1, 0), 0);  /* nothing left */
    assert_int_equal(nrt_debug_client_read_one_event(fd + 1000, &h, &payload), NRT_INVALID);
    nrt_debug_client_connect_close(fd);
    assert_int_equal(nrt_debug_client_connect(0, &fd), NRT_SUCCESS);  /* free again */
    nrt_debug_client_connect_close(fd);
    nrt_tensor_free(&x);
    nrt_tensor_free(&y);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    assert_int_equal(nrt_unload(m), NRT_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_profiles, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_sys_trace, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_sys_trace_device_timing, it_setup_default,
                                        it_teardown),
        cmocka_unit_test(test_lnc2_device_time),
        cmocka_unit_test_setup_teardown(test_trace_and_inspect, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_session_statuses, it_setup_default, it_teardown),
        cmocka_unit_test_setup_teardown(test_dmabuf_and_absent_hardware, it_setup_default,
                                        it_teardown),
        cmocka_unit_test_setup_teardown(test_debug_stream, it_setup_default, it_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
